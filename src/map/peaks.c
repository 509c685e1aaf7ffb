// Machine peaks: the machine and software fingerprints, the host
// measurements and GEMM through each backend's library tier.
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>

#include "map/kernels.h"
#include "wmap/graph.h"
#include "wmap/map.h"

// ------------------------------------------------------------ machine

static uint64_t fnv1a(uint64_t h, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    h ^= (uint8_t)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

#define WM_FNV_SEED 14695981039346656037ull

void wm_machine_get(wm_machine_t *out) {
  memset(out, 0, sizeof(*out));
  out->cores = wm_cpu_count();
  out->flags_hash = WM_FNV_SEED;
  if (!wm_cpuinfo_get("model name", out->model, sizeof(out->model)) ||
      !out->model[0]) {
    snprintf(out->model, sizeof(out->model), "unknown");
  }
  char *flags = wm_malloc(16384);
  if (flags && wm_cpuinfo_get("flags", flags, 16384)) {
    out->flags_hash = fnv1a(WM_FNV_SEED, flags, strlen(flags));
  }
  free(flags);
  struct utsname u;
  snprintf(out->kernel, sizeof(out->kernel), "%s",
           uname(&u) == 0 ? u.release : "unknown");
  char key[512];
  int n = snprintf(key, sizeof(key), "%s|%d|%016llx|%s", out->model,
                   (int)out->cores, (unsigned long long)out->flags_hash,
                   out->kernel);
  size_t len = n < 0                     ? 0
               : (size_t)n < sizeof(key) ? (size_t)n
                                         : sizeof(key) - 1;
  snprintf(out->fingerprint, sizeof(out->fingerprint), "%016llx",
           (unsigned long long)fnv1a(WM_FNV_SEED, key, len));
}

// ----------------------------------------------------------- software

#ifndef WMAP_VERSION
#define WMAP_VERSION "unknown"
#endif

typedef const char *(*text_fn)(void);

// A function of |lib| returning a string, or NULL; dlsym's object pointer
// goes through memcpy because ISO C has no object-to-function conversion.
static text_fn find_text_fn(void *lib, const char *name) {
  void *sym = dlsym(lib, name);
  text_fn fn = NULL;
  if (sym) {
    memcpy(&fn, &sym, sizeof(fn));
  }
  return fn;
}

// Appends "; " (unless first) and the formatted item to |out|.
static void add_item(char *out, size_t cap, const char *fmt, ...)
    WM_PRINTF(3, 4);
static void add_item(char *out, size_t cap, const char *fmt, ...) {
  size_t len = strlen(out);
  if (len > 0 && len + 2 < cap) {
    memcpy(out + len, "; ", 3);
    len += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out + len, cap - len, fmt, ap);
  va_end(ap);
}

void wm_peaks_software(wm_registry_t *registry, char *out, size_t cap,
                       char *out_fingerprint) {
  out[0] = '\0';
  add_item(out, cap, "wmap %s", WMAP_VERSION);
  size_t n = registry ? wm_registry_count(registry) : 0;
  for (size_t i = 0; i < n; i++) {
    wm_backend_t *be = wm_registry_backend(registry, i);
    const char *origin = wm_backend_origin(be);
    struct stat st;
    if (origin && stat(origin, &st) == 0) {
      add_item(out, cap, "%s %s %s %lld bytes mtime %lld", wm_backend_name(be),
               wm_backend_version(be), origin, (long long)st.st_size,
               (long long)st.st_mtime);
    } else {
      add_item(out, cap, "%s %s %s", wm_backend_name(be),
               wm_backend_version(be), origin ? origin : "?");
    }
  }
  // Only when a backend has loaded it: loading it here would start its
  // threads in a process that may fork.
  void *lib = dlopen("libopenblas.so.0", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (lib) {
    text_fn config = find_text_fn(lib, "openblas_get_config");
    text_fn core = find_text_fn(lib, "openblas_get_corename");
    add_item(out, cap, "openblas %s core %s", config ? config() : "?",
             core ? core() : "?");
    dlclose(lib);
  }
  snprintf(out_fingerprint, 17, "%016llx",
           (unsigned long long)fnv1a(WM_FNV_SEED, out, strlen(out)));
}

// ------------------------------------------------------------ timing

// How long each run lasts and how many runs give the median.
typedef struct plan {
  double run_s;
  int runs;
  size_t triad_n;      // float elements per array
  int64_t gemm_n;      // square MatMul size: the largest
  int64_t gemm_first;  // the first size tried
} plan_t;

// A MatMul size grows (doubling) while one call takes less than this (s):
// the largest size a call still finishes well under a second at, so the
// naive reference loops are timed at a size they get through.
#define GEMM_GROW_BELOW_S 0.010

static double now_s(void) {
  return (double)wm_now_ns() * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// --------------------------------------------------------------- FMA

typedef struct fma_job {
  bool fp64;
  uint64_t iters;   // per thread
  double sink[64];  // one slot per thread, keeps results alive
  uint64_t flops[64];
} fma_job_t;

static void fma_chunk(void *ctx, size_t begin, size_t end) {
  fma_job_t *j = ctx;
  for (size_t t = begin; t < end && t < 64; t++) {
    j->sink[t] = wm_map_fma(j->fp64, j->iters, 1.0 + (double)t, &j->flops[t]);
  }
}

// GFLOP/s of the FMA loop on |threads| threads (pool NULL = 1 thread).
static double measure_fma(const plan_t *p, wm_pool_t *pool, bool fp64) {
  size_t threads = (size_t)wm_pool_threads(pool);
  if (threads > 64) {
    threads = 64;
  }
  fma_job_t j;
  memset(&j, 0, sizeof(j));
  j.fp64 = fp64;
  // Calibrate on one thread: grow until a call takes >= 1/8 of a run.
  j.iters = 1024;
  for (;;) {
    double t0 = now_s();
    fma_chunk(&j, 0, 1);
    double dt = now_s() - t0;
    if (dt >= p->run_s / 8 || j.iters > (1ull << 40)) {
      break;
    }
    j.iters *= 2;
  }
  double rates[16];
  for (int r = 0; r < p->runs; r++) {
    double t0 = now_s(), dt;
    uint64_t flops = 0;
    do {
      wm_pool_for(pool, threads, 1, fma_chunk, &j);
      for (size_t t = 0; t < threads; t++) {
        flops += j.flops[t];
      }
      dt = now_s() - t0;
    } while (dt < p->run_s);
    rates[r] = (double)flops / dt * 1e-9;
  }
  return median(rates, p->runs);
}

// ------------------------------------------------------------- triad

typedef struct triad_job {
  float *a, *b, *c;
  size_t n;
  size_t parts;
  bool init;
} triad_job_t;

static void triad_chunk(void *ctx, size_t begin, size_t end) {
  triad_job_t *j = ctx;
  for (size_t t = begin; t < end; t++) {
    size_t lo = j->n * t / j->parts, hi = j->n * (t + 1) / j->parts;
    if (j->init) {  // first touch on the thread that will stream it
      for (size_t i = lo; i < hi; i++) {
        j->a[i] = 0.0f;
        j->b[i] = 1.0f;
        j->c[i] = 2.0f;
      }
    } else {
      wm_map_triad(j->a + lo, j->b + lo, j->c + lo, 3.0f, hi - lo);
    }
  }
}

// GB/s of the triad (12 bytes per element: read b and c, write a; the
// write-allocate read of a is not counted, as in STREAM).
static wm_status_t measure_triad(const plan_t *p, wm_pool_t *pool,
                                 double *out) {
  triad_job_t j;
  memset(&j, 0, sizeof(j));
  j.n = p->triad_n;
  j.parts = (size_t)wm_pool_threads(pool);
  size_t bytes = j.n * sizeof(float);
  j.a = aligned_alloc(64, bytes);
  j.b = aligned_alloc(64, bytes);
  j.c = aligned_alloc(64, bytes);
  if (!j.a || !j.b || !j.c) {
    free(j.a);
    free(j.b);
    free(j.c);
    return WM_ERROR(RESOURCE_EXHAUSTED,
                    "triad: out of memory for 3 x %zu bytes", bytes);
  }
  j.init = true;
  wm_pool_for(pool, j.parts, 1, triad_chunk, &j);
  j.init = false;
  wm_pool_for(pool, j.parts, 1, triad_chunk, &j);  // warm-up
  double rates[16];
  for (int r = 0; r < p->runs; r++) {
    double t0 = now_s(), dt;
    size_t passes = 0;
    do {
      wm_pool_for(pool, j.parts, 1, triad_chunk, &j);
      passes++;
      dt = now_s() - t0;
    } while (dt < p->run_s);
    rates[r] = (double)passes * 3.0 * (double)bytes / dt * 1e-9;
  }
  *out = median(rates, p->runs);
  free(j.a);
  free(j.b);
  free(j.c);
  return NULL;
}

// -------------------------------------------------------------- GEMM

static wm_tensor_desc square_desc(int64_t n) {
  wm_tensor_desc d;
  memset(&d, 0, sizeof(d));
  d.struct_size = sizeof(d);
  d.dtype = WM_DTYPE_FLOAT;
  d.rank = 2;
  d.dims[0] = n;
  d.dims[1] = n;
  return d;
}

static wm_op_desc matmul_desc(wm_tensor_desc *in, wm_tensor_desc *out,
                              int64_t n) {
  in[0] = square_desc(n);
  in[1] = square_desc(n);
  *out = square_desc(n);
  wm_op_desc op;
  memset(&op, 0, sizeof(op));
  op.struct_size = sizeof(op);
  op.domain = "";
  op.op_type = "MatMul";
  op.opset = 13;
  op.name = "probe_matmul";
  op.n_in = 2;
  op.n_out = 1;
  op.in = in;
  op.out = out;
  return op;
}

// Whether |be| should be timed on MatMul; else writes why into |note|.
static bool gemm_claimed(wm_backend_t *be, int64_t n, char *note, size_t cap) {
  const wm_plugin_api *api = wm_backend_api(be);
  if (!api->library || !api->library->op_query) {
    snprintf(note, cap, "no library tier");
    return false;
  }
  if (wm_backend_target_count(be) == 0) {
    snprintf(note, cap, "no device");
    return false;
  }
  wm_tensor_desc in[2], out;
  wm_op_desc op = matmul_desc(in, &out, n);
  wm_op_support sup;
  memset(&sup, 0, sizeof(sup));
  sup.struct_size = sizeof(sup);
  wm_status_t s = wm_backend_error(
      be, api->library->op_query(wm_backend_target(be, 0), &op, &sup),
      "op_query");
  if (s) {
    snprintf(note, cap, "op_query failed: %s", wm_status_message(s));
    wm_status_free(s);
    return false;
  }
  if (sup.level < WM_SUPPORT_SUPPORTED) {
    snprintf(note, cap, "MatMul support level %u (below supported)", sup.level);
    return false;
  }
  return true;
}

typedef struct gemm_env {
  wm_backend_t *be;
  const wm_plugin_api *api;
  wm_device *dev;
  wm_stream *stream;
  wm_op_plan *plan;
  wm_buffer *bufs[4];  // A, B, C, workspace
  wm_buffer_view views[4];
} gemm_env_t;

static void gemm_close(gemm_env_t *e) {
  if (e->plan) {
    e->api->library->op_plan_destroy(e->plan);
  }
  for (int i = 0; i < 4; i++) {
    if (e->bufs[i]) {
      e->api->device->mem_free(e->bufs[i]);
    }
  }
  if (e->stream) {
    e->api->device->stream_destroy(e->stream);
  }
  if (e->dev) {
    e->api->device->device_close(e->dev);
  }
}

static wm_status_t gemm_alloc(gemm_env_t *e, int i, uint64_t bytes,
                              const wm_tensor_desc *d) {
  WM_RETURN_IF_ERROR(
      wm_backend_error(e->be,
                       e->api->device->mem_alloc(
                           e->dev, bytes, 64, WM_MEM_DEVICE_LOCAL, &e->bufs[i]),
                       "mem_alloc"));
  memset(&e->views[i], 0, sizeof(e->views[i]));
  e->views[i].struct_size = sizeof(e->views[i]);
  e->views[i].buffer = e->bufs[i];
  e->views[i].desc = *d;
  return NULL;
}

static wm_status_t gemm_run(gemm_env_t *e) {
  WM_RETURN_IF_ERROR(wm_backend_error(
      e->be,
      e->api->library->op_run(e->stream, e->plan, e->views, 2, e->views + 2, 1,
                              e->bufs[3] ? &e->views[3] : NULL),
      "op_run"));
  return wm_backend_error(e->be, e->api->device->stream_sync(e->stream),
                          "stream_sync");
}

static wm_status_t gemm_body(gemm_env_t *e, const plan_t *p, int64_t n,
                             double *out) {
  const wm_plugin_api *api = e->api;
  WM_RETURN_IF_ERROR(wm_backend_error(
      e->be, api->device_open(wm_backend_target(e->be, 0), &e->dev),
      "device_open"));
  WM_RETURN_IF_ERROR(wm_backend_error(
      e->be, api->device->stream_create(e->dev, &e->stream), "stream_create"));
  wm_tensor_desc in[2], outd;
  wm_op_desc op = matmul_desc(in, &outd, n);
  uint64_t ws = 0;
  WM_RETURN_IF_ERROR(wm_backend_error(
      e->be, api->library->op_plan(e->dev, &op, &e->plan, &ws), "op_plan"));
  uint64_t bytes = (uint64_t)(n * n) * sizeof(float);
  float *host = malloc(bytes);
  if (!host) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "gemm: out of memory");
  }
  for (int64_t i = 0; i < n * n; i++) {
    host[i] = (float)((i % 7) - 3) * 0.125f;
  }
  wm_status_t s = NULL;
  for (int i = 0; !s && i < 3; i++) {
    s = gemm_alloc(e, i, bytes, i < 2 ? &in[i] : &outd);
    if (!s && i < 2) {
      s = wm_backend_error(
          e->be, api->device->copy_h2d(e->stream, host, e->bufs[i], 0, bytes),
          "copy_h2d");
    }
  }
  free(host);
  WM_RETURN_IF_ERROR(s);
  if (ws > 0) {
    wm_tensor_desc wd;
    memset(&wd, 0, sizeof(wd));
    wd.struct_size = sizeof(wd);
    wd.dtype = WM_DTYPE_UINT8;
    wd.rank = 1;
    wd.dims[0] = (int64_t)ws;
    WM_RETURN_IF_ERROR(gemm_alloc(e, 3, ws, &wd));
  }
  WM_RETURN_IF_ERROR(gemm_run(e));  // warm-up
  double flop = 2.0 * (double)n * (double)n * (double)n;
  double rates[16];
  for (int r = 0; r < p->runs; r++) {
    double t0 = now_s(), dt;
    int reps = 0;
    do {
      WM_RETURN_IF_ERROR(gemm_run(e));
      reps++;
      dt = now_s() - t0;
    } while (dt < p->run_s);
    rates[r] = flop * reps / dt * 1e-9;
  }
  *out = median(rates, p->runs);
  return NULL;
}

// GFLOP/s of the n^3 MatMul of |be| (the median of p->runs runs).
static wm_status_t measure_gemm(wm_backend_t *be, const plan_t *p, int64_t n,
                                double *out) {
  gemm_env_t e;
  memset(&e, 0, sizeof(e));
  e.be = be;
  e.api = wm_backend_api(be);
  wm_status_t s = gemm_body(&e, p, n, out);
  gemm_close(&e);
  return wm_status_annotate(s, "backend \"%s\": %lldx%lld MatMul",
                            wm_backend_name(be), (long long)n, (long long)n);
}

// The MatMul size to time |be| at: from p->gemm_first, doubled while one
// call takes under GEMM_GROW_BELOW_S, at most p->gemm_n.
static wm_status_t gemm_size(wm_backend_t *be, const plan_t *p, int64_t *out) {
  plan_t once = *p;
  once.run_s = 0;
  once.runs = 1;
  int64_t n = p->gemm_first;
  while (n < p->gemm_n) {
    double rate = 0;
    WM_RETURN_IF_ERROR(measure_gemm(be, &once, n, &rate));
    double call_s = rate > 0 ? 2.0 * (double)n * n * n / (rate * 1e9) : 1e9;
    if (call_s >= GEMM_GROW_BELOW_S) {
      break;
    }
    n *= 2;
  }
  *out = n < p->gemm_n ? n : p->gemm_n;
  return NULL;
}

// ----------------------------------------------------------- backends

static wm_status_t measure_backend(const plan_t *p, wm_backend_t *be,
                                   wm_peaks_backend_t *out) {
  memset(out, 0, sizeof(*out));
  snprintf(out->name, sizeof(out->name), "%s", wm_backend_name(be));
  if (wm_backend_target_count(be) > 0) {
    const wm_target_desc *t = wm_backend_target(be, 0);
    snprintf(out->target, sizeof(out->target), "%s",
             WM_HAS(t, wm_target_desc, name) && t->name ? t->name : "");
    out->host = WM_HAS(t, wm_target_desc, kind) && t->kind == WM_TARGET_CPU;
    if (WM_HAS(t, wm_target_desc, mem_bandwidth_gbs)) {
      out->declared_fp32 = t->peak_gflops_fp32;
      out->declared_fp16 = t->peak_gflops_fp16;
      out->declared_bw = t->mem_bandwidth_gbs;
    }
  }
  if (!gemm_claimed(be, p->gemm_n, out->gemm_note, sizeof(out->gemm_note))) {
    return NULL;
  }
  WM_RETURN_IF_ERROR(gemm_size(be, p, &out->gemm_n));
  return measure_gemm(be, p, out->gemm_n, &out->gemm_fp32[1]);
}

// The 1-thread GEMM of every backend measured at all cores.
static wm_status_t measure_one_thread(const wm_peaks_options_t *opts,
                                      const plan_t *p, wm_peaks_t *out) {
  if (!opts->open_one) {
    return NULL;
  }
  wm_registry_t *one = NULL;
  WM_RETURN_IF_ERROR(opts->open_one(opts->open_ctx, &one));
  wm_status_t s = NULL;
  for (size_t i = 0; !s && i < out->n_backends; i++) {
    wm_peaks_backend_t *b = &out->backends[i];
    wm_backend_t *be = NULL;
    if (b->gemm_fp32[1] > 0) {
      wm_status_free(wm_registry_find(one, b->name, &be));
    }
    if (be) {
      s = measure_gemm(be, p, b->gemm_n, &b->gemm_fp32[0]);
    }
  }
  wm_registry_destroy(one);
  return s;
}

wm_status_t wm_peaks_measure(const wm_peaks_options_t *opts, wm_peaks_t *out) {
  memset(out, 0, sizeof(*out));
  wm_machine_get(&out->machine);
  out->measured_at = (int64_t)time(NULL);
  snprintf(out->isa, sizeof(out->isa), "%s", wm_map_isa());
  wm_peaks_software(opts->registry, out->software_detail,
                    sizeof(out->software_detail), out->software);
  plan_t p = {.run_s = 0.2,
              .runs = 5,
              .triad_n = (size_t)32 << 20,
              .gemm_n = 1024,
              .gemm_first = 256};
  if (opts->quick) {
    p = (plan_t){.run_s = 0.002,
                 .runs = 1,
                 .triad_n = (size_t)1 << 16,
                 .gemm_n = 64,
                 .gemm_first = 64};
  }
  wm_pool_t *pool = NULL;
  WM_RETURN_IF_ERROR(wm_pool_create(0, &pool));
  out->threads = wm_pool_threads(pool);
  out->fma_fp32[0] = measure_fma(&p, NULL, false);
  out->fma_fp32[1] = measure_fma(&p, pool, false);
  out->fma_fp64[0] = measure_fma(&p, NULL, true);
  out->fma_fp64[1] = measure_fma(&p, pool, true);
  wm_status_t s = measure_triad(&p, NULL, &out->triad_gbs[0]);
  if (!s) {
    s = measure_triad(&p, pool, &out->triad_gbs[1]);
  }
  wm_pool_destroy(pool);
  WM_RETURN_IF_ERROR(s);
  size_t n = opts->registry ? wm_registry_count(opts->registry) : 0;
  for (size_t i = 0; i < n && out->n_backends < WM_PEAKS_MAX_BACKENDS; i++) {
    WM_RETURN_IF_ERROR(measure_backend(&p,
                                       wm_registry_backend(opts->registry, i),
                                       &out->backends[out->n_backends]));
    out->n_backends++;
  }
  return measure_one_thread(opts, &p, out);
}

// ------------------------------------------------------------ lookups

static const wm_peaks_backend_t *find_backend(const wm_peaks_t *p,
                                              const char *name) {
  for (size_t i = 0; i < p->n_backends; i++) {
    if (strcmp(p->backends[i].name, name) == 0) {
      return &p->backends[i];
    }
  }
  return NULL;
}

// The figure at |threads| threads from the 1-thread and all-core ones
// (see wm_peaks_fp32_gflops_at).
static double at_threads(const double *v, int32_t all, int32_t threads) {
  if (threads == 0 || threads >= all || v[0] <= 0) {
    return v[1];
  }
  if (threads <= 1) {
    return v[0];
  }
  return fmin((double)threads * v[0], v[1]);
}

double wm_peaks_fp32_gflops_at(const wm_peaks_t *p, const char *name,
                               int32_t threads) {
  const wm_peaks_backend_t *b = find_backend(p, name);
  if (!b) {
    return 0;
  }
  if (b->gemm_fp32[1] > 0) {
    return b->host ? at_threads(b->gemm_fp32, p->threads, threads)
                   : b->gemm_fp32[1];
  }
  // A host backend without a GEMM of its own: the FMA units are its roof.
  if (b->host && p->fma_fp32[1] > 0) {
    return at_threads(p->fma_fp32, p->threads, threads);
  }
  return b->declared_fp32 > 0 ? b->declared_fp32 : 0;
}

double wm_peaks_bandwidth_gbs_at(const wm_peaks_t *p, const char *name,
                                 int32_t threads) {
  const wm_peaks_backend_t *b = find_backend(p, name);
  if (!b) {
    return 0;
  }
  if (b->host && p->triad_gbs[1] > 0) {
    return at_threads(p->triad_gbs, p->threads, threads);
  }
  return b->declared_bw > 0 ? b->declared_bw : 0;
}

double wm_peaks_fp32_gflops(const wm_peaks_t *p, const char *name) {
  return wm_peaks_fp32_gflops_at(p, name, 0);
}

double wm_peaks_bandwidth_gbs(const wm_peaks_t *p, const char *name) {
  return wm_peaks_bandwidth_gbs_at(p, name, 0);
}
