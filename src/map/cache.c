// The peaks cache: "wmap.peaks/1" JSON written with wm_strbuf and read
// with the strict wm_json_parse, one file per machine fingerprint.
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/json.h"
#include "wmap/map.h"

// A peaks file read whole: a few KiB; the cap only stops a wrong file.
#define PEAKS_MAX_BYTES ((size_t)16 << 20)

// ------------------------------------------------------------- write

static void json_num(wm_strbuf_t *b, const char *key, double v) {
  wm_strbuf_printf(b, "\"%s\": %.6g", key, isfinite(v) ? v : 0.0);
}

static void json_pair(wm_strbuf_t *b, const char *key, const double *v) {
  wm_strbuf_printf(b, "\"%s\": {\"1\": %.6g, \"all\": %.6g}", key,
                   isfinite(v[0]) ? v[0] : 0.0, isfinite(v[1]) ? v[1] : 0.0);
}

void wm_peaks_to_json(const wm_peaks_t *p, wm_strbuf_t *b) {
  const wm_machine_t *m = &p->machine;
  wm_strbuf_printf(b, "{\n  \"format\": \"%s\",\n  \"machine\": {\"model\": ",
                   WM_PEAKS_FORMAT);
  wm_strbuf_json_string(b, m->model);
  wm_strbuf_printf(b, ", \"cores\": %d, \"flags_hash\": \"%016llx\", ",
                   (int)m->cores, (unsigned long long)m->flags_hash);
  wm_strbuf_printf(b, "\"kernel\": ");
  wm_strbuf_json_string(b, m->kernel);
  wm_strbuf_printf(b, ", \"fingerprint\": \"%s\"},\n", m->fingerprint);
  wm_strbuf_printf(
      b, "  \"software\": {\"fingerprint\": \"%s\", \"detail\": ", p->software);
  wm_strbuf_json_string(b, p->software_detail);
  wm_strbuf_printf(b, "},\n");
  wm_strbuf_printf(b, "  \"measured_at\": %lld,\n  \"cached\": %s,\n",
                   (long long)p->measured_at, p->from_cache ? "true" : "false");
  wm_strbuf_printf(b,
                   "  \"host\": {\"threads\": %d, \"isa\": ", (int)p->threads);
  wm_strbuf_json_string(b, p->isa);
  wm_strbuf_printf(b, ",\n    ");
  json_pair(b, "fma_gflops_fp32", p->fma_fp32);
  wm_strbuf_printf(b, ",\n    ");
  json_pair(b, "fma_gflops_fp64", p->fma_fp64);
  wm_strbuf_printf(b, ",\n    ");
  json_pair(b, "triad_gbs", p->triad_gbs);
  wm_strbuf_printf(b, "},\n  \"backends\": [");
  for (size_t i = 0; i < p->n_backends; i++) {
    const wm_peaks_backend_t *be = &p->backends[i];
    wm_strbuf_printf(b, "%s\n    {\"name\": ", i ? "," : "");
    wm_strbuf_json_string(b, be->name);
    wm_strbuf_printf(b, ", \"target\": ");
    wm_strbuf_json_string(b, be->target);
    wm_strbuf_printf(b, ", \"host\": %s,\n     ", be->host ? "true" : "false");
    json_pair(b, "gemm_gflops_fp32", be->gemm_fp32);
    wm_strbuf_printf(
        b, ", \"gemm_n\": %lld, \"gemm_note\": ", (long long)be->gemm_n);
    wm_strbuf_json_string(b, be->gemm_note);
    wm_strbuf_printf(b, ",\n     ");
    json_num(b, "declared_gflops_fp32", be->declared_fp32);
    wm_strbuf_printf(b, ", ");
    json_num(b, "declared_gflops_fp16", be->declared_fp16);
    wm_strbuf_printf(b, ", ");
    json_num(b, "declared_bandwidth_gbs", be->declared_bw);
    wm_strbuf_printf(b, ",\n     ");
    json_num(b, "peak_gflops_fp32", wm_peaks_fp32_gflops(p, be->name));
    wm_strbuf_printf(b, ", ");
    json_num(b, "bandwidth_gbs", wm_peaks_bandwidth_gbs(p, be->name));
    wm_strbuf_printf(b, "}");
  }
  wm_strbuf_printf(b, "\n  ]\n}\n");
}

// -------------------------------------------------------------- read

// Where parsing stopped: the field and, for a bad number, its value.
typedef struct reader {
  char why[160];
} reader_t;

static bool get_str(const cJSON *o, const char *key, char *dst, size_t cap) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsString(v) || !v->valuestring) {
    return false;
  }
  snprintf(dst, cap, "%s", v->valuestring);
  return true;
}

// A finite number >= 0; a bad one is described in r->why.
static bool get_num(reader_t *r, const cJSON *o, const char *key, double *dst) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v)) {
    return false;
  }
  if (!isfinite(v->valuedouble) || v->valuedouble < 0) {
    snprintf(r->why, sizeof(r->why), "\"%s\" is %g, want a finite number >= 0",
             key, v->valuedouble);
    return false;
  }
  *dst = v->valuedouble;
  return true;
}

static bool get_pair(reader_t *r, const cJSON *o, const char *key,
                     double *dst) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  bool ok = cJSON_IsObject(v) && get_num(r, v, "1", &dst[0]) &&
            get_num(r, v, "all", &dst[1]);
  if (!ok && r->why[0] == '"') {
    char inner[sizeof(r->why)];
    memcpy(inner, r->why, sizeof(inner));
    snprintf(r->why, sizeof(r->why), "\"%.32s\" %.120s", key, inner);
  }
  return ok;
}

// The optional "software" member (older files have none).
static bool parse_software(const cJSON *root, wm_peaks_t *out) {
  const cJSON *sw = cJSON_GetObjectItemCaseSensitive(root, "software");
  if (!sw) {
    return true;
  }
  return cJSON_IsObject(sw) &&
         get_str(sw, "fingerprint", out->software, sizeof(out->software)) &&
         get_str(sw, "detail", out->software_detail,
                 sizeof(out->software_detail));
}

// Parses one "backends" entry into |be|.
static bool parse_backend(reader_t *r, const cJSON *b, wm_peaks_backend_t *be) {
  if (!cJSON_IsObject(b) || !get_str(b, "name", be->name, sizeof(be->name)) ||
      !get_str(b, "target", be->target, sizeof(be->target)) ||
      !get_pair(r, b, "gemm_gflops_fp32", be->gemm_fp32) ||
      !get_str(b, "gemm_note", be->gemm_note, sizeof(be->gemm_note)) ||
      !get_num(r, b, "declared_gflops_fp32", &be->declared_fp32) ||
      !get_num(r, b, "declared_gflops_fp16", &be->declared_fp16) ||
      !get_num(r, b, "declared_bandwidth_gbs", &be->declared_bw)) {
    return false;
  }
  // "gemm_n" is optional: files from before it timed 1024^3.
  double n = be->gemm_fp32[1] > 0 ? 1024 : 0;
  const cJSON *gn = cJSON_GetObjectItemCaseSensitive(b, "gemm_n");
  if (gn && (!get_num(r, b, "gemm_n", &n) || n > 1e6)) {
    return false;
  }
  be->gemm_n = (int64_t)n;
  be->host = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "host"));
  return true;
}

// Parses the document; returns the first missing or bad field or NULL.
static const char *parse(reader_t *r, const cJSON *root, wm_peaks_t *out) {
  char format[32];
  if (!cJSON_IsObject(root) ||
      !get_str(root, "format", format, sizeof(format))) {
    return "format";
  }
  if (strcmp(format, WM_PEAKS_FORMAT) != 0) {
    return "format (not " WM_PEAKS_FORMAT ")";
  }
  const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "machine");
  wm_machine_t *mm = &out->machine;
  char flags[32];
  double cores, at, threads;
  if (!cJSON_IsObject(m) ||
      !get_str(m, "model", mm->model, sizeof(mm->model)) ||
      !get_num(r, m, "cores", &cores) || cores > 1e6 ||
      !get_str(m, "flags_hash", flags, sizeof(flags)) ||
      !get_str(m, "kernel", mm->kernel, sizeof(mm->kernel)) ||
      !get_str(m, "fingerprint", mm->fingerprint, sizeof(mm->fingerprint))) {
    return "machine";
  }
  mm->cores = (int32_t)cores;
  mm->flags_hash = strtoull(flags, NULL, 16);
  if (!parse_software(root, out)) {
    return "software";
  }
  if (!get_num(r, root, "measured_at", &at) || at > 1e15) {
    return "measured_at";
  }
  out->measured_at = (int64_t)at;
  const cJSON *h = cJSON_GetObjectItemCaseSensitive(root, "host");
  if (!cJSON_IsObject(h) || !get_num(r, h, "threads", &threads) ||
      threads > 1e6 || !get_str(h, "isa", out->isa, sizeof(out->isa)) ||
      !get_pair(r, h, "fma_gflops_fp32", out->fma_fp32) ||
      !get_pair(r, h, "fma_gflops_fp64", out->fma_fp64) ||
      !get_pair(r, h, "triad_gbs", out->triad_gbs)) {
    return "host";
  }
  out->threads = (int32_t)threads;
  const cJSON *bs = cJSON_GetObjectItemCaseSensitive(root, "backends");
  if (!cJSON_IsArray(bs)) {
    return "backends";
  }
  const cJSON *b;
  cJSON_ArrayForEach(b, bs) {
    if (out->n_backends == WM_PEAKS_MAX_BACKENDS) {
      return "backends (too many)";
    }
    if (!parse_backend(r, b, &out->backends[out->n_backends])) {
      return "backends[]";
    }
    out->n_backends++;
  }
  return NULL;
}

// Checks one figure pair: finite and >= 0.
static wm_status_t check_pair(const char *what, const double *v) {
  for (int i = 0; i < 2; i++) {
    if (!isfinite(v[i]) || v[i] < 0) {
      return WM_ERROR(DATA_LOSS, "%s at %s is %g, want a finite number >= 0",
                      what, i ? "all cores" : "1 thread", v[i]);
    }
  }
  return NULL;
}

wm_status_t wm_peaks_check(const wm_peaks_t *p) {
  WM_RETURN_IF_ERROR(check_pair("FMA fp32 GFLOP/s", p->fma_fp32));
  WM_RETURN_IF_ERROR(check_pair("FMA fp64 GFLOP/s", p->fma_fp64));
  WM_RETURN_IF_ERROR(check_pair("triad GB/s", p->triad_gbs));
  for (size_t i = 0; i < p->n_backends; i++) {
    const wm_peaks_backend_t *b = &p->backends[i];
    wm_status_t s = check_pair("GEMM fp32 GFLOP/s", b->gemm_fp32);
    if (s) {
      return wm_status_annotate(s, "backend \"%s\"", b->name);
    }
    for (int k = 0; b->host && k < 2; k++) {
      // 5 %: two separate timings on a busy machine, not a wrong peak.
      if (p->fma_fp32[k] > 0 && b->gemm_fp32[k] > 1.05 * p->fma_fp32[k]) {
        return WM_ERROR(DATA_LOSS,
                        "backend \"%s\": GEMM %.1f GFLOP/s at %s exceeds the "
                        "FMA peak %.1f GFLOP/s of the same CPU; one of the "
                        "two measurements is wrong",
                        b->name, b->gemm_fp32[k], k ? "all cores" : "1 thread",
                        p->fma_fp32[k]);
      }
    }
  }
  return NULL;
}

// Fills |out| from a parsed "wmap.peaks/1" document and checks it;
// deletes |root|.
static wm_status_t from_root(cJSON *root, wm_peaks_t *out) {
  reader_t r = {{0}};
  const char *bad = parse(&r, root, out);
  cJSON_Delete(root);
  wm_status_t s = NULL;
  if (bad && r.why[0]) {
    s = WM_ERROR(DATA_LOSS, "field \"%s\": %s", bad, r.why);
  } else if (bad) {
    s = WM_ERROR(DATA_LOSS, "field \"%s\" is missing or invalid", bad);
  } else {
    s = wm_peaks_check(out);
  }
  if (s) {
    memset(out, 0, sizeof(*out));
  }
  return s;
}

wm_status_t wm_peaks_from_json(const char *text, size_t len, wm_peaks_t *out) {
  memset(out, 0, sizeof(*out));
  cJSON *root = NULL;
  WM_RETURN_IF_ERROR(wm_json_parse(text, len, &root));
  return from_root(root, out);
}

// Reads the peaks at |path|; messages call it |what| ("peaks file" for
// one the user named, "peaks cache" for this machine's cache).
static wm_status_t load_as(const char *path, const char *what,
                           wm_peaks_t *out) {
  memset(out, 0, sizeof(*out));
  cJSON *root = NULL;
  WM_RETURN_IF_ERROR(wm_json_load(path, what, PEAKS_MAX_BYTES, &root));
  return wm_status_annotate(from_root(root, out), "%s \"%s\"", what, path);
}

wm_status_t wm_peaks_load(const char *path, wm_peaks_t *out) {
  return load_as(path, "peaks file", out);
}

wm_status_t wm_peaks_save(const char *path, const wm_peaks_t *p) {
  WM_RETURN_IF_ERROR(wm_make_parents(path));
  wm_peaks_t copy = *p;
  copy.from_cache = false;
  wm_strbuf_t b;
  wm_strbuf_init(&b);
  wm_peaks_to_json(&copy, &b);
  wm_status_t s = b.failed ? WM_ERROR(RESOURCE_EXHAUSTED, "out of memory")
                           : wm_file_write(path, b.data, b.len);
  wm_strbuf_deinit(&b);
  return s;
}

wm_status_t wm_peaks_cache_path(const char *dir, const wm_machine_t *m,
                                char **out_path) {
  *out_path = NULL;
  char name[96];
  snprintf(name, sizeof(name), "peaks-%s.json", m->fingerprint);
  return wm_cache_folder(dir, name, out_path);
}

// True when every backend of |reg| has an entry in |p|.
static bool covers(const wm_peaks_t *p, wm_registry_t *reg) {
  size_t n = reg ? wm_registry_count(reg) : 0;
  for (size_t i = 0; i < n; i++) {
    const char *name = wm_backend_name(wm_registry_backend(reg, i));
    bool found = false;
    for (size_t k = 0; k < p->n_backends && !found; k++) {
      found = strcmp(p->backends[k].name, name) == 0;
    }
    if (!found) {
      return false;
    }
  }
  return true;
}

// Writes into |out| the first "; "-separated item where |a| and |b| differ.
static void first_difference(const char *a, const char *b, char *out,
                             size_t cap) {
  for (;;) {
    size_t na = strcspn(a, ";"), nb = strcspn(b, ";");
    if (na != nb || strncmp(a, b, na) != 0) {
      snprintf(out, cap, "was \"%.*s\", now \"%.*s\"", (int)na, a, (int)nb, b);
      return;
    }
    if (!a[na] || !b[nb]) {
      snprintf(out, cap, "the item lists differ");
      return;
    }
    a += na + (a[na + 1] == ' ' ? 2 : 1);
    b += nb + (b[nb + 1] == ' ' ? 2 : 1);
  }
}

// Whether the cache at |path| (loaded into |p|) can serve |opts|; else
// says why on the log.
static bool cache_serves(const char *path, const wm_peaks_t *p,
                         const wm_machine_t *m, const char *software,
                         const char *detail, wm_registry_t *reg) {
  if (strcmp(p->machine.fingerprint, m->fingerprint) != 0) {
    return false;
  }
  if (strcmp(p->software, software) != 0) {
    char diff[400];
    if (p->software[0]) {
      first_difference(p->software_detail, detail, diff, sizeof(diff));
    } else {
      snprintf(diff, sizeof(diff), "it records none");
    }
    wm_log(WM_LOG_WARN,
           "peaks cache \"%s\" was measured with other software (fingerprint "
           "%s, now %s: %s); measuring again",
           path, p->software[0] ? p->software : "none", software, diff);
    return false;
  }
  return covers(p, reg);
}

wm_status_t wm_peaks_get(const wm_peaks_options_t *opts, wm_peaks_t *out) {
  if (opts->no_cache) {
    return wm_peaks_measure(opts, out);
  }
  wm_machine_t m;
  wm_machine_get(&m);
  char software[17];
  char *detail = wm_malloc(WM_PEAKS_SOFTWARE_CAP);
  if (!detail) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_peaks_software(opts->registry, detail, WM_PEAKS_SOFTWARE_CAP, software);
  char *path = NULL;
  wm_status_t s = wm_peaks_cache_path(opts->cache_dir, &m, &path);
  struct stat st;
  if (!s && !opts->refresh && stat(path, &st) == 0) {
    s = load_as(path, "peaks cache", out);
    out->from_cache = !s;
    if (!s && cache_serves(path, out, &m, software, detail, opts->registry)) {
      free(detail);
      free(path);
      return NULL;
    }
    if (s) {
      wm_log(WM_LOG_WARN, "%s; measuring again", wm_status_message(s));
      wm_status_free(s);
      s = NULL;
    }
  }
  free(detail);
  if (!s) {
    s = wm_peaks_measure(opts, out);
  }
  wm_status_t bad = s ? NULL : wm_peaks_check(out);
  if (bad) {
    wm_log(WM_LOG_WARN, "peaks measured now: %s; not cached",
           wm_status_message(bad));
    wm_status_free(bad);
  } else if (!s) {
    s = wm_peaks_save(path, out);
  }
  free(path);
  return s;
}
