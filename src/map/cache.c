// The peaks cache: "wmap.peaks/1" JSON written with wm_strbuf and read
// with cJSON, one file per machine fingerprint.
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "wmap/map.h"

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
    wm_strbuf_printf(b, ", \"gemm_note\": ");
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

static bool get_str(const cJSON *o, const char *key, char *dst, size_t cap) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsString(v) || !v->valuestring) {
    return false;
  }
  snprintf(dst, cap, "%s", v->valuestring);
  return true;
}

static bool get_num(const cJSON *o, const char *key, double *dst) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0) {
    return false;
  }
  *dst = v->valuedouble;
  return true;
}

static bool get_pair(const cJSON *o, const char *key, double *dst) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsObject(v) && get_num(v, "1", &dst[0]) &&
         get_num(v, "all", &dst[1]);
}

// Parses the document; returns the first missing or bad field or NULL.
static const char *parse(const cJSON *root, wm_peaks_t *out) {
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
      !get_num(m, "cores", &cores) || cores > 1e6 ||
      !get_str(m, "flags_hash", flags, sizeof(flags)) ||
      !get_str(m, "kernel", mm->kernel, sizeof(mm->kernel)) ||
      !get_str(m, "fingerprint", mm->fingerprint, sizeof(mm->fingerprint))) {
    return "machine";
  }
  mm->cores = (int32_t)cores;
  mm->flags_hash = strtoull(flags, NULL, 16);
  if (!get_num(root, "measured_at", &at) || at > 1e15) {
    return "measured_at";
  }
  out->measured_at = (int64_t)at;
  const cJSON *h = cJSON_GetObjectItemCaseSensitive(root, "host");
  if (!cJSON_IsObject(h) || !get_num(h, "threads", &threads) || threads > 1e6 ||
      !get_str(h, "isa", out->isa, sizeof(out->isa)) ||
      !get_pair(h, "fma_gflops_fp32", out->fma_fp32) ||
      !get_pair(h, "fma_gflops_fp64", out->fma_fp64) ||
      !get_pair(h, "triad_gbs", out->triad_gbs)) {
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
    wm_peaks_backend_t *be = &out->backends[out->n_backends];
    if (!cJSON_IsObject(b) || !get_str(b, "name", be->name, sizeof(be->name)) ||
        !get_str(b, "target", be->target, sizeof(be->target)) ||
        !get_pair(b, "gemm_gflops_fp32", be->gemm_fp32) ||
        !get_str(b, "gemm_note", be->gemm_note, sizeof(be->gemm_note)) ||
        !get_num(b, "declared_gflops_fp32", &be->declared_fp32) ||
        !get_num(b, "declared_gflops_fp16", &be->declared_fp16) ||
        !get_num(b, "declared_bandwidth_gbs", &be->declared_bw)) {
      return "backends[]";
    }
    be->host = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "host"));
    out->n_backends++;
  }
  return NULL;
}

wm_status_t wm_peaks_from_json(const char *text, size_t len, wm_peaks_t *out) {
  memset(out, 0, sizeof(*out));
  cJSON *root = cJSON_ParseWithLength(text, len);
  if (!root) {
    return WM_ERROR(DATA_LOSS, "not valid JSON");
  }
  const char *bad = parse(root, out);
  cJSON_Delete(root);
  if (bad) {
    memset(out, 0, sizeof(*out));
    return WM_ERROR(DATA_LOSS, "field \"%s\" is missing or invalid", bad);
  }
  return NULL;
}

wm_status_t wm_peaks_load(const char *path, wm_peaks_t *out) {
  uint8_t *data = NULL;
  size_t size = 0;
  WM_RETURN_IF_ERROR(wm_file_read(path, &data, &size));
  wm_status_t s = wm_peaks_from_json((const char *)data, size, out);
  free(data);
  if (s) {
    return wm_status_annotate(s, "peaks cache \"%s\"", path);
  }
  out->from_cache = true;
  return NULL;
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

wm_status_t wm_peaks_get(const wm_peaks_options_t *opts, wm_peaks_t *out) {
  if (opts->no_cache) {
    return wm_peaks_measure(opts, out);
  }
  wm_machine_t m;
  wm_machine_get(&m);
  char *path = NULL;
  WM_RETURN_IF_ERROR(wm_peaks_cache_path(opts->cache_dir, &m, &path));
  struct stat st;
  if (!opts->refresh && stat(path, &st) == 0) {
    wm_status_t s = wm_peaks_load(path, out);
    if (!s && strcmp(out->machine.fingerprint, m.fingerprint) == 0 &&
        covers(out, opts->registry)) {
      free(path);
      return NULL;
    }
    if (s) {
      wm_log(WM_LOG_WARN, "%s; measuring again", wm_status_message(s));
      wm_status_free(s);
    }
  }
  wm_status_t s = wm_peaks_measure(opts, out);
  if (!s) {
    s = wm_peaks_save(path, out);
  }
  free(path);
  return s;
}
