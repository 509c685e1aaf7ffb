// Tuning: the schedules worth measuring for a compute, and the records of
// the best one measured per kernel instance and target, kept in a
// versioned text file that later plans read.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen/gen.h"

void wm_gen_record_key(const wm_gen_compute_t *c, const char *target,
                       char key[65]) {
  wm_strbuf_t text;
  wm_strbuf_init(&text);
  wm_gen_canonical(c, &text);
  wm_strbuf_printf(&text, "|%s|%s", WM_GEN_RECORDS_FORMAT, target);
  wm_sha256_hex(wm_strbuf_str(&text), text.len, key);
  wm_strbuf_deinit(&text);
}

// Appends |s| to |out| unless already there or |c| cannot be lowered
// under it.
static void add(const wm_gen_compute_t *c, const wm_gen_schedule_t *s,
                wm_gen_schedule_t *out, int32_t cap, int32_t *n) {
  if (*n >= cap) {
    return;
  }
  for (int32_t i = 0; i < *n; i++) {
    if (wm_gen_schedule_equal(&out[i], s)) {
      return;
    }
  }
  wm_gen_nest_t nest;
  wm_status_t st = wm_gen_lower(c, s, &nest);
  if (st) {
    wm_status_free(st);
    return;
  }
  out[(*n)++] = *s;
}

int32_t wm_gen_candidates(const wm_gen_compute_t *c, int32_t vector_bytes,
                          wm_gen_schedule_t *out, int32_t cap) {
  wm_gen_schedule_t d = wm_gen_default_schedule(c, vector_bytes);
  int32_t n = 0;
  add(c, &d, out, cap, &n);
  if (d.mr > 0) {
    // The template's knobs around the default (kernel-gen.md §3.3: the
    // register tile first, then the blocks).
    static const int32_t mrs[] = {4, 6, 8, 12};
    static const int32_t nvs[] = {1, 2, 4};
    static const int32_t kcs[] = {128, 256, 384, 512};
    static const int32_t mcs[] = {2, 8, 16, 24};  // in register tiles
    for (size_t a = 0; a < 4; a++) {
      for (size_t b = 0; b < 3; b++) {
        wm_gen_schedule_t s = d;
        s.mr = mrs[a];
        s.nr = d.vector_width * nvs[b];
        s.mc = s.mr * 16;
        add(c, &s, out, cap, &n);
      }
    }
    for (size_t a = 0; a < 4; a++) {
      for (size_t b = 0; b < 4; b++) {
        wm_gen_schedule_t s = d;
        s.kc = kcs[a];
        s.mc = s.mr * mcs[b];
        add(c, &s, out, cap, &n);
      }
    }
    wm_gen_schedule_t nest = {.vector_width = 1, .unroll = 1};
    add(c, &nest, out, cap, &n);  // the loop nest, for small ones
    return n;
  }
  for (int32_t w = 4; w <= 16; w *= 2) {
    for (int32_t u = 1; u <= 4; u *= 2) {
      for (int32_t r = 0; r < 2; r++) {
        wm_gen_schedule_t s = {
            .vector_width = w, .unroll = u, .vector_reduce = r == 1};
        add(c, &s, out, cap, &n);
      }
    }
  }
  wm_gen_schedule_t scalar = {.vector_width = 1, .unroll = 1};
  add(c, &scalar, out, cap, &n);
  return n;
}

void wm_gen_records_free(wm_gen_records_t *r) {
  free(r->r);
  memset(r, 0, sizeof(*r));
}

const wm_gen_record_t *wm_gen_records_find(const wm_gen_records_t *r,
                                           const char *key) {
  for (size_t i = 0; i < r->n; i++) {
    if (strcmp(r->r[i].key, key) == 0) {
      return &r->r[i];
    }
  }
  return NULL;
}

wm_status_t wm_gen_records_put(wm_gen_records_t *r,
                               const wm_gen_record_t *rec) {
  wm_gen_record_t *old = (wm_gen_record_t *)wm_gen_records_find(r, rec->key);
  if (old) {
    *old = *rec;
    return NULL;
  }
  WM_RETURN_IF_ERROR(
      wm_grow((void **)&r->r, &r->cap, r->n + 1, sizeof(wm_gen_record_t)));
  r->r[r->n++] = *rec;
  return NULL;
}

wm_status_t wm_gen_records_load(const char *path, wm_gen_records_t *out) {
  memset(out, 0, sizeof(*out));
  FILE *f = fopen(path, "r");
  if (!f) {
    return errno == ENOENT ? NULL
                           : WM_ERROR(UNAVAILABLE, "tuning records \"%s\": %s",
                                      path, strerror(errno));
  }
  char line[512];
  wm_status_t st = NULL;
  bool ours =
      fgets(line, sizeof(line), f) &&
      strncmp(line, WM_GEN_RECORDS_FORMAT, strlen(WM_GEN_RECORDS_FORMAT)) == 0;
  // Records of another version are another generator's: none apply.
  while (!st && ours && fgets(line, sizeof(line), f)) {
    wm_gen_record_t rec;
    memset(&rec, 0, sizeof(rec));
    int vr = 0;
    int got =
        sscanf(line, "%64s %d %d %d %d %d %d %d %d %lf %lf", rec.key,
               &rec.s.vector_width, &rec.s.unroll, &vr, &rec.s.mr, &rec.s.nr,
               &rec.s.kc, &rec.s.mc, &rec.s.nc, &rec.default_ns, &rec.best_ns);
    rec.s.vector_reduce = vr != 0;
    if (got != 11 || strlen(rec.key) != 64) {
      st = WM_ERROR(DATA_LOSS,
                    "tuning records \"%s\": a line is not a record: %.80s",
                    path, line);
      break;
    }
    st = wm_gen_records_put(out, &rec);
  }
  fclose(f);
  if (st) {
    wm_gen_records_free(out);
  }
  return st;
}

wm_status_t wm_gen_records_save(const wm_gen_records_t *r, const char *path) {
  wm_strbuf_t text;
  wm_strbuf_init(&text);
  wm_strbuf_printf(&text,
                   "%s key vector unroll vector_reduce mr nr kc mc nc "
                   "default_ns best_ns\n",
                   WM_GEN_RECORDS_FORMAT);
  for (size_t i = 0; i < r->n; i++) {
    const wm_gen_record_t *x = &r->r[i];
    wm_strbuf_printf(&text, "%s %d %d %d %d %d %d %d %d %.0f %.0f\n", x->key,
                     (int)x->s.vector_width, (int)x->s.unroll,
                     (int)x->s.vector_reduce, (int)x->s.mr, (int)x->s.nr,
                     (int)x->s.kc, (int)x->s.mc, (int)x->s.nc, x->default_ns,
                     x->best_ns);
  }
  // Written beside it, then renamed: a reader never sees half a file.
  char *tmp = wm_malloc(strlen(path) + 32);
  wm_status_t st = tmp && !text.failed
                       ? NULL
                       : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  if (!st) {
    snprintf(tmp, strlen(path) + 32, "%s.%d.tmp", path, (int)getpid());
    st = wm_make_parents(path);
  }
  if (!st) {
    st = wm_file_write(tmp, wm_strbuf_str(&text), text.len);
  }
  if (!st && rename(tmp, path) != 0) {
    st = WM_ERROR(UNAVAILABLE, "tuning records \"%s\": %s", path,
                  strerror(errno));
    remove(tmp);
  }
  free(tmp);
  wm_strbuf_deinit(&text);
  return st;
}
