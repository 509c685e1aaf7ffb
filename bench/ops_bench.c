// Operator benchmark: the cpu backend plugin against its peers in one run,
// and the generator's kernels against theirs (sgemm against cblas_sgemm,
// convolutions against the cpu backend's, a fused chain against a triad).
// GEMM (MatMul) and ResNet-50 convolutions against cblas_sgemm on the same
// GEMM sizes; depthwise convolutions, Add and Softmax against a
// STREAM-style triad. Each case is
// measured two ways on the cpu backend:
//   op:   op_run through the plugin ABI on buffers filled once beforehand,
//         then stream_sync: only the kernel runs (the ratio uses this);
//   sess: wm_session_run of a one-node graph whose inputs are initializers
//         (uploaded on the first run and kept on the device): the op plus
//         the output's device allocation, its download into a new host
//         tensor and the frees, which the session API always does.
// Variants of a case run interleaved (op, sess, peer, op, ...) in blocks of
// at least --min-time seconds; the figure is the median over the blocks.
#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wmap/backend.h"
#include "wmap/base.h"
#include "wmap/graph.h"
#include "gen/gen.h"
#include "ops/ops.h"
#include "wmap/plan.h"
#include "wmap/plugin.h"
#include "wmap/session.h"

#define MAX_BLOCKS 32
#define MAX_IN 3
#define MAX_ATTR 6
#define MAX_VARIANTS 3
#define MAX_ROWS 64

// One measured thing: a function run repeatedly.
typedef struct variant {
  const char *name;                 // "op", "sess" or "peer"
  wm_status_t (*fn)(void *ctx);     // one iteration
  void *ctx;                        // its argument
  double sec_per_iter[MAX_BLOCKS];  // per block
  long iters[MAX_BLOCKS];           // iterations per block
} variant_t;

// An operator instance, for both the graph and the ABI descriptor.
typedef struct op_spec {
  const char *op;                  // ONNX op_type
  int64_t opset;                   // ai.onnx opset
  uint32_t n_in;                   // inputs
  wm_shape_t in_shape[MAX_IN];     // input shapes
  const float *in_data[MAX_IN];    // input values (borrowed)
  wm_shape_t out_shape;            // the one output's shape
  uint32_t n_attr;                 // attributes
  wm_op_attr attrs[MAX_ATTR];      // INT or INTS only
  int64_t attr_ints[MAX_ATTR][4];  // storage of INTS attributes
} op_spec_t;

// The cpu backend's op run directly through the ABI.
typedef struct direct {
  wm_backend_t *be;                  // borrowed
  const wm_plugin_api *api;          // borrowed
  wm_stream *stream;                 // borrowed (the bench's stream)
  wm_op_plan *plan;                  // owned
  uint32_t n_in;                     // inputs
  wm_buffer *bufs[MAX_IN + 1];       // inputs then output, owned
  wm_buffer_view views[MAX_IN + 1];  // views of |bufs|
  wm_buffer *ws;                     // workspace or NULL, owned
  wm_buffer_view ws_view;            // its view
} direct_t;

// A one-node graph in a session on the cpu backend alone (STRICT).
typedef struct sess {
  wm_graph_t *graph;      // owned
  wm_session_t *session;  // owned
} sess_t;

// One line of the result table.
typedef struct row {
  char name[64];          // case
  int threads;            // thread count
  const char *unit;       // "GFLOP/s" or "GB/s"
  double op;              // cpu backend, op only
  double sess;            // cpu backend, whole session run (< 0: not measured)
  double peer;            // the peer
  const char *peer_name;  // what the peer is
  long op_iters;          // median iterations per block, op
  long peer_iters;        // median iterations per block, peer
  double max_err;         // max |op - peer| / (1 + |peer|), < 0 = not checked
  double op_spread;       // spread_pct of op
  double peer_spread;     // spread_pct of the peer
} row_t;

static const char *g_only;  // --only: run cases whose name has this
static int g_blocks = 5;
static double g_min_time = 0.5;
static row_t g_rows[MAX_ROWS];
static size_t g_n_rows;

// Prints /proc/loadavg: other processes on the cores skew every figure.
static void print_load(const char *when) {
  char buf[128] = "";
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (!fgets(buf, sizeof(buf), f)) {
      buf[0] = 0;
    }
    fclose(f);
  }
  buf[strcspn(buf, "\n")] = 0;
  printf("load average %s: %s\n", when, buf[0] ? buf : "unknown");
}

static double now_sec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int cmp_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return x < y ? -1 : x > y;
}

static double median_sec(const variant_t *v) {
  double t[MAX_BLOCKS];
  memcpy(t, v->sec_per_iter, sizeof(double) * (size_t)g_blocks);
  qsort(t, (size_t)g_blocks, sizeof(double), cmp_double);
  return g_blocks % 2 ? t[g_blocks / 2]
                      : 0.5 * (t[g_blocks / 2 - 1] + t[g_blocks / 2]);
}

// (slowest - fastest block) / median, in percent: how noisy the blocks were.
static double spread_pct(const variant_t *v) {
  double lo = v->sec_per_iter[0], hi = lo;
  for (int b = 1; b < g_blocks; b++) {
    lo = v->sec_per_iter[b] < lo ? v->sec_per_iter[b] : lo;
    hi = v->sec_per_iter[b] > hi ? v->sec_per_iter[b] : hi;
  }
  return 100.0 * (hi - lo) / median_sec(v);
}

static long median_iters(const variant_t *v) {
  long t[MAX_BLOCKS];
  memcpy(t, v->iters, sizeof(long) * (size_t)g_blocks);
  qsort(t, (size_t)g_blocks, sizeof(long), cmp_long);
  return t[g_blocks / 2];
}

// Runs every variant once (warm-up), then |g_blocks| interleaved blocks.
static wm_status_t measure(variant_t *vs, size_t n) {
  for (size_t k = 0; k < n; k++) {
    WM_RETURN_IF_ERROR(vs[k].fn(vs[k].ctx));
  }
  for (int b = 0; b < g_blocks; b++) {
    for (size_t k = 0; k < n; k++) {
      long it = 0;
      double t0 = now_sec(), t1 = t0;
      while (t1 - t0 < g_min_time) {
        WM_RETURN_IF_ERROR(vs[k].fn(vs[k].ctx));
        it++;
        t1 = now_sec();
      }
      vs[k].sec_per_iter[b] = (t1 - t0) / (double)it;
      vs[k].iters[b] = it;
    }
  }
  return NULL;
}

// Allocates |n| floats aligned to 64 bytes, as the backend's buffers are,
// so that alignment favours neither side.
static float *alloc_floats(size_t n) {
  size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  return aligned_alloc(64, bytes ? bytes : 64);
}

// Deterministic values in [-1, 1).
static float *random_floats(size_t n, uint32_t seed) {
  float *p = alloc_floats(n);
  if (!p) {
    return NULL;
  }
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    p[i] = (float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
  return p;
}

static size_t numel(const wm_shape_t *s) {
  size_t n = 1;
  for (int32_t i = 0; i < s->rank; i++) {
    n *= (size_t)s->dims[i];
  }
  return n;
}

static wm_tensor_desc desc_of(const wm_shape_t *s) {
  wm_tensor_desc d;
  memset(&d, 0, sizeof(d));
  d.struct_size = sizeof(d);
  d.dtype = WM_DTYPE_FLOAT;
  d.rank = (uint32_t)s->rank;
  for (int32_t i = 0; i < s->rank; i++) {
    d.dims[i] = s->dims[i];
  }
  return d;
}

static void spec_attr_int(op_spec_t *sp, const char *name, int64_t v) {
  wm_op_attr *a = &sp->attrs[sp->n_attr++];
  memset(a, 0, sizeof(*a));
  a->struct_size = sizeof(*a);
  a->name = name;
  a->type = WM_ATTR_INT;
  a->i = v;
}

static void spec_attr_ints(op_spec_t *sp, const char *name, const int64_t *v,
                           size_t n) {
  size_t k = sp->n_attr++;
  wm_op_attr *a = &sp->attrs[k];
  memset(a, 0, sizeof(*a));
  a->struct_size = sizeof(*a);
  a->name = name;
  a->type = WM_ATTR_INTS;
  memcpy(sp->attr_ints[k], v, n * sizeof(int64_t));
  a->ints = sp->attr_ints[k];
  a->count = n;
}

// ------------------------------------------------------------ direct

static void direct_deinit(direct_t *d) {
  if (!d->api) {
    return;
  }
  if (d->plan) {
    d->api->library->op_plan_destroy(d->plan);
  }
  for (uint32_t i = 0; i <= MAX_IN; i++) {
    if (d->bufs[i]) {
      d->api->device->mem_free(d->bufs[i]);
    }
  }
  if (d->ws) {
    d->api->device->mem_free(d->ws);
  }
  memset(d, 0, sizeof(*d));
}

static wm_status_t alloc_view(direct_t *d, wm_device *dev,
                              const wm_shape_t *shape, wm_buffer **buf,
                              wm_buffer_view *view) {
  uint64_t bytes = (uint64_t)numel(shape) * sizeof(float);
  WM_RETURN_IF_ERROR(wm_backend_error(
      d->be,
      d->api->device->mem_alloc(dev, bytes, 64, WM_MEM_DEVICE_LOCAL, buf),
      "mem_alloc"));
  memset(view, 0, sizeof(*view));
  view->struct_size = sizeof(*view);
  view->buffer = *buf;
  view->desc = desc_of(shape);
  return NULL;
}

// Queries, plans and uploads |sp| on |dev|; the output is allocated and
// touched once by the warm-up run.
typedef struct plan_env {
  direct_t *d;
  wm_device *dev;
  const char *op;
  uint64_t ws;
} plan_env_t;

// Queries and plans the node described by |op| (as the session would).
static wm_status_t plan_desc(void *env, const wm_op_desc *op) {
  plan_env_t *e = env;
  direct_t *d = e->d;
  wm_op_support sup;
  memset(&sup, 0, sizeof(sup));
  sup.struct_size = sizeof(sup);
  WM_RETURN_IF_ERROR(wm_backend_error(
      d->be, d->api->library->op_query(wm_backend_target(d->be, 0), op, &sup),
      "op_query"));
  if (sup.level == WM_SUPPORT_NONE) {
    return WM_ERROR(UNIMPLEMENTED, "backend \"%s\" refuses %s: %s",
                    wm_backend_name(d->be), e->op,
                    sup.detail ? sup.detail : wm_why_name(sup.reason));
  }
  return wm_backend_error(
      d->be, d->api->library->op_plan(e->dev, op, &d->plan, &e->ws), "op_plan");
}

// Plans node 0 of |g| (the checked one-node graph of |sp|) through the ABI
// with input 1 (B of MatMul, W of Conv) a constant, as weights are in
// models: the plugin may pack it when the plan is made; its inputs and
// output are buffers of the device, filled here.
static wm_status_t direct_init(direct_t *d, wm_backend_t *be, wm_device *dev,
                               wm_stream *stream, const op_spec_t *sp,
                               const wm_graph_t *g) {
  memset(d, 0, sizeof(*d));
  d->be = be;
  d->api = wm_backend_api(be);
  d->stream = stream;
  d->n_in = sp->n_in;
  if (!d->api->library) {
    return WM_ERROR(UNIMPLEMENTED, "backend \"%s\" has no library tier",
                    wm_backend_name(be));
  }
  const wm_tensor_t **values = calloc(g->value_count + 1, sizeof(*values));
  if (!values) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  int32_t w = sp->n_in > 1 ? g->nodes[0].inputs[1] : -1;
  if (w >= 0) {
    values[w] = g->values[w].initializer;
  }
  plan_env_t env = {d, dev, sp->op, 0};
  wm_status_t st = wm_node_describe(g, 0, NULL, values, plan_desc, &env);
  free(values);
  WM_RETURN_IF_ERROR(st);
  uint64_t ws = env.ws;
  for (uint32_t i = 0; i < sp->n_in; i++) {
    WM_RETURN_IF_ERROR(
        alloc_view(d, dev, &sp->in_shape[i], &d->bufs[i], &d->views[i]));
    WM_RETURN_IF_ERROR(wm_backend_error(
        be,
        d->api->device->copy_h2d(stream, sp->in_data[i], d->bufs[i], 0,
                                 numel(&sp->in_shape[i]) * sizeof(float)),
        "copy_h2d"));
  }
  WM_RETURN_IF_ERROR(alloc_view(d, dev, &sp->out_shape, &d->bufs[sp->n_in],
                                &d->views[sp->n_in]));
  if (ws > 0) {
    wm_shape_t s = wm_shape_make(1, (const int64_t[]){(int64_t)(ws / 4 + 1)});
    WM_RETURN_IF_ERROR(alloc_view(d, dev, &s, &d->ws, &d->ws_view));
  }
  return wm_backend_error(be, d->api->device->stream_sync(stream),
                          "stream_sync");
}

static wm_status_t direct_run(void *ctx) {
  direct_t *d = ctx;
  WM_RETURN_IF_ERROR(
      wm_backend_error(d->be,
                       d->api->library->op_run(d->stream, d->plan, d->views,
                                               d->n_in, d->views + d->n_in, 1,
                                               d->ws ? &d->ws_view : NULL),
                       "op_run"));
  return wm_backend_error(d->be, d->api->device->stream_sync(d->stream),
                          "stream_sync");
}

// Reads the direct output back into |dst|.
static wm_status_t direct_read(direct_t *d, float *dst, size_t n) {
  return wm_backend_error(d->be,
                          d->api->device->copy_d2h(d->stream, d->bufs[d->n_in],
                                                   0, dst, n * sizeof(float)),
                          "copy_d2h");
}

// ----------------------------------------------------------- session

static void sess_deinit(sess_t *s) {
  wm_session_destroy(s->session);
  wm_graph_destroy(s->graph);
  memset(s, 0, sizeof(*s));
}

static wm_status_t sess_init(sess_t *s, wm_backend_t *be, const op_spec_t *sp,
                             wm_kernels_t kernels) {
  static const char *const names[MAX_IN] = {"x0", "x1", "x2"};
  memset(s, 0, sizeof(*s));
  WM_RETURN_IF_ERROR(wm_graph_create("bench", NULL, &s->graph));
  wm_graph_t *g = s->graph;
  WM_RETURN_IF_ERROR(wm_graph_set_opset(g, "", sp->opset));
  for (uint32_t i = 0; i < sp->n_in; i++) {
    wm_tensor_t *t;
    WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_FLOAT, &sp->in_shape[i], &t));
    memcpy(t->data, sp->in_data[i], t->nbytes);
    WM_RETURN_IF_ERROR(wm_graph_add_initializer(g, names[i], t, NULL));
  }
  const char *outs[1] = {"y"};
  int32_t node = 0;
  WM_RETURN_IF_ERROR(wm_graph_add_node(g, sp->op, "", "bench", names,
                                       (int32_t)sp->n_in, outs, 1, &node));
  for (uint32_t i = 0; i < sp->n_attr; i++) {
    const wm_op_attr *a = &sp->attrs[i];
    if (a->type == WM_ATTR_INT) {
      WM_RETURN_IF_ERROR(wm_graph_add_attr_int(g, node, a->name, a->i));
    } else {
      WM_RETURN_IF_ERROR(
          wm_graph_add_attr_ints(g, node, a->name, a->ints, a->count));
    }
  }
  WM_RETURN_IF_ERROR(wm_graph_add_output(g, "y", NULL, NULL));
  // No graph passes: the node's inputs are all initializers, so the fold
  // pass would compute it once at creation and leave nothing to time.
  wm_backend_t *const list[1] = {be};
  wm_session_options_t opt = {.backends = list,
                              .backend_count = 1,
                              .mode = WM_PLACEMENT_STRICT,
                              .passes = "",
                              .kernels = kernels};
  WM_RETURN_IF_ERROR(wm_session_create_placed(g, &opt, &s->session));
  if (wm_session_nodes_on(s->session, "cpu") != 1) {
    return WM_ERROR(INTERNAL, "%s is not placed on the cpu backend", sp->op);
  }
  return NULL;
}

static wm_status_t sess_run(void *ctx) {
  sess_t *s = ctx;
  wm_tensor_t *out = NULL;
  WM_RETURN_IF_ERROR(wm_session_run(s->session, NULL, NULL, 0, &out));
  wm_tensor_destroy(out);
  return NULL;
}

typedef struct bench_env {
  wm_backend_t *be;   // the cpu backend, borrowed
  wm_device *dev;     // for the direct runs, owned by the caller
  wm_stream *stream;  // on |dev|
  wm_pool_t *pool;    // the triad's threads
  int threads;        // thread count of this pass
} bench_env_t;

// ------------------------------------------- generated kernels, direct

// A generated kernel through the cpu backend's device tier, as a session
// with --impl generated runs it: the node's compute definition (src/ops)
// under the default schedule, printed as C, compiled by the plugin
// (compile), launched over the device's threads one range per core.
typedef struct gen_direct {
  wm_backend_t *be;          // borrowed
  const wm_plugin_api *api;  // borrowed
  wm_stream *stream;         // borrowed
  wm_executable *exe;        // owned
  wm_kernel *kernel;         // of |exe|
  wm_kernel_arg args[MAX_IN + 1];
  wm_buffer *bufs[MAX_IN + 1];  // owned: the output, then the inputs
  uint32_t n_args;
  wm_launch_args launch;
  char schedule[96];  // wm_gen_schedule_text
} gen_direct_t;

static void gen_direct_deinit(gen_direct_t *d) {
  for (uint32_t i = 0; d->api && i <= MAX_IN; i++) {
    if (d->bufs[i]) {
      d->api->device->mem_free(d->bufs[i]);
    }
  }
  if (d->exe) {
    d->api->device->exe_destroy(d->exe);
  }
  memset(d, 0, sizeof(*d));
}

// Generates, compiles and binds the kernel of node 0 of |g| (|sp|'s).
static wm_status_t gen_direct_init(gen_direct_t *d, const bench_env_t *env,
                                   const op_spec_t *sp, const wm_graph_t *g) {
  memset(d, 0, sizeof(*d));
  d->be = env->be;
  d->api = wm_backend_api(env->be);
  d->stream = env->stream;
  wm_op_ctx_t ctx;
  WM_RETURN_IF_ERROR(wm_op_ctx_init(&ctx, g, 0));
  const wm_op_def_t *def = NULL;
  wm_gen_compute_t *c = malloc(sizeof(*c));
  wm_status_t st = c ? wm_op_find_def(&ctx, &def)
                     : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  if (!st) {
    st = def->infer(&ctx);
  }
  if (!st) {
    st = def->define ? def->define(&ctx, c)
                     : WM_ERROR(UNIMPLEMENTED, "%s has no definition", sp->op);
  }
  wm_gen_nest_t nest;
  wm_strbuf_t src;
  wm_strbuf_init(&src);
  if (!st) {
    wm_gen_schedule_t sch = wm_gen_default_schedule(c, 64);
    wm_gen_schedule_text(&sch, d->schedule, sizeof(d->schedule));
    st = wm_gen_lower(c, &sch, &nest);
  }
  if (!st) {
    st = wm_gen_print(&nest, WM_GEN_C, &src);
  }
  double t0 = now_sec();
  if (!st) {
    st = wm_backend_error(
        d->be,
        d->api->device->compile(env->dev, "c", wm_strbuf_str(&src), src.len,
                                NULL, &d->exe),
        "compile");
  }
  if (!st) {
    fprintf(stderr, "  %s: generated kernel (%s) built in %.3f s\n", sp->op,
            d->schedule, now_sec() - t0);
    st = wm_backend_error(
        d->be, d->api->device->exe_get_kernel(d->exe, c->name, &d->kernel),
        "exe_get_kernel");
  }
  // Buffers: the compute's tensors, each the operand it names.
  for (int32_t t = 0; !st && c && t < c->n_tensors; t++) {
    int32_t op = c->tensors[t].operand;
    const wm_shape_t *shape = op >= 0 ? &sp->in_shape[op] : &sp->out_shape;
    uint64_t bytes = (uint64_t)numel(shape) * sizeof(float);
    st = wm_backend_error(
        d->be,
        d->api->device->mem_alloc(env->dev, bytes, 64, WM_MEM_DEVICE_LOCAL,
                                  &d->bufs[t]),
        "mem_alloc");
    if (!st && op >= 0) {
      st = wm_backend_error(d->be,
                            d->api->device->copy_h2d(d->stream, sp->in_data[op],
                                                     d->bufs[t], 0, bytes),
                            "copy_h2d");
    }
    d->args[t] = (wm_kernel_arg){.struct_size = sizeof(wm_kernel_arg),
                                 .kind = WM_ARG_BUFFER,
                                 .buffer = d->bufs[t]};
    d->n_args = (uint32_t)t + 1;
  }
  if (!st) {
    uint32_t grid = (uint32_t)nest.grid;
    uint32_t cores = (uint32_t)env->threads;
    d->launch = (wm_launch_args){
        .struct_size = sizeof(wm_launch_args),
        .kernel = d->kernel,
        .grid = {grid, 1, 1},
        .block = {nest.whole_ranges ? (grid + cores - 1) / cores
                                    : (uint32_t)nest.grain,
                  1, 1},
        .n_args = d->n_args,
        .args = d->args};
  }
  wm_strbuf_deinit(&src);
  free(c);
  wm_op_ctx_deinit(&ctx);
  return st;
}

static wm_status_t gen_direct_run(void *ctx) {
  gen_direct_t *d = ctx;
  WM_RETURN_IF_ERROR(wm_backend_error(
      d->be, d->api->device->launch(d->stream, &d->launch), "launch"));
  return wm_backend_error(d->be, d->api->device->stream_sync(d->stream),
                          "stream_sync");
}

// -------------------------------------------------------------- peers

// cblas_sgemm C[M,N] = A[M,K] * B[K,N], row-major, on preloaded matrices.
typedef struct gemm_peer {
  int m, n, k;     // sizes
  const float *a;  // [m, k], borrowed
  const float *b;  // [k, n], borrowed
  float *c;        // [m, n], owned
} gemm_peer_t;

static wm_status_t gemm_run(void *ctx) {
  gemm_peer_t *g = ctx;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->m, g->n, g->k, 1.0f,
              g->a, g->k, g->b, g->n, 0.0f, g->c, g->n);
  return NULL;
}

// a[i] = b[i] + s * c[i] over the pool's threads.
typedef struct triad {
  wm_pool_t *pool;  // borrowed
  float *a;         // output, owned
  float *b, *c;     // inputs, owned
  size_t n;         // elements
  float s;          // scalar
} triad_t;

static void triad_range(void *ctx, size_t begin, size_t end) {
  triad_t *t = ctx;
  float *restrict a = t->a;
  const float *restrict b = t->b;
  const float *restrict c = t->c;
  float s = t->s;
  for (size_t i = begin; i < end; i++) {
    a[i] = b[i] + s * c[i];
  }
}

static wm_status_t triad_run(void *ctx) {
  triad_t *t = ctx;
  wm_pool_for(t->pool, t->n, 1 << 16, triad_range, t);
  return NULL;
}

// Max |x - y| / (1 + |y|).
static double max_rel_err(const float *x, const float *y, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)x[i] - (double)y[i]) / (1.0 + fabs((double)y[i]));
    m = e > m ? e : m;
  }
  return m;
}

static void add_row(const char *name, int threads, const char *unit,
                    double work, const variant_t *op, const variant_t *sess,
                    const variant_t *peer, double peer_work,
                    const char *peer_name, double err) {
  if (g_n_rows >= MAX_ROWS) {
    return;
  }
  row_t *r = &g_rows[g_n_rows++];
  snprintf(r->name, sizeof(r->name), "%s", name);
  r->threads = threads;
  r->unit = unit;
  r->op = work / median_sec(op) * 1e-9;
  r->sess = sess ? work / median_sec(sess) * 1e-9 : -1;
  r->peer = peer_work / median_sec(peer) * 1e-9;
  r->peer_name = peer_name;
  r->op_iters = median_iters(op);
  r->peer_iters = median_iters(peer);
  r->max_err = err;
  r->op_spread = spread_pct(op);
  r->peer_spread = spread_pct(peer);
  fprintf(stderr, "  %-30s %d thr  op %8.2f  sess %8.2f  peer %8.2f %s\n", name,
          threads, r->op, r->sess, r->peer, unit);
}

// ------------------------------------------------------------- cases

// Measures |sp| (op and, if |with_sess|, session) against |peer|.
static wm_status_t run_case(const bench_env_t *env, const char *name,
                            const op_spec_t *sp, bool with_sess,
                            variant_t *peer, double work, double peer_work,
                            const char *unit, const char *peer_name,
                            const float *check, size_t check_n) {
  if (g_only && !strstr(name, g_only)) {
    return NULL;
  }
  direct_t d;
  sess_t s;
  memset(&s, 0, sizeof(s));
  memset(&d, 0, sizeof(d));
  // The session checks the one-node graph (types inferred) that the
  // direct variant is planned from.
  wm_status_t st = sess_init(&s, env->be, sp, WM_KERNELS_AUTO);
  if (!st) {
    st = direct_init(&d, env->be, env->dev, env->stream, sp, s.graph);
  }
  variant_t vs[MAX_VARIANTS];
  size_t n = 0;
  memset(vs, 0, sizeof(vs));
  vs[n++] = (variant_t){.name = "op", .fn = direct_run, .ctx = &d};
  if (with_sess) {
    vs[n++] = (variant_t){.name = "sess", .fn = sess_run, .ctx = &s};
  }
  vs[n++] = *peer;
  if (!st) {
    st = measure(vs, n);
  }
  double err = -1;
  if (!st && check) {
    float *got = malloc(check_n * sizeof(float));
    st = got ? direct_read(&d, got, check_n)
             : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    if (!st) {
      err = max_rel_err(got, check, check_n);
    }
    free(got);
  }
  if (!st) {
    add_row(name, env->threads, unit, work, &vs[0], with_sess ? &vs[1] : NULL,
            &vs[n - 1], peer_work, peer_name, err);
  }
  sess_deinit(&s);
  direct_deinit(&d);
  return st ? wm_status_annotate(st, "case %s", name) : NULL;
}

static wm_status_t bench_gemm(const bench_env_t *env, int m, int n, int k) {
  size_t nn = (size_t)m * (size_t)n;
  float *a = random_floats((size_t)m * (size_t)k, 1);
  float *b = random_floats((size_t)k * (size_t)n, 2);
  float *c = alloc_floats(nn);
  wm_status_t st = NULL;
  if (!a || !b || !c) {
    st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  op_spec_t sp;
  memset(&sp, 0, sizeof(sp));
  sp.op = "MatMul";
  sp.opset = 13;
  sp.n_in = 2;
  sp.in_shape[0] = wm_shape_make(2, (const int64_t[]){m, k});
  sp.in_shape[1] = wm_shape_make(2, (const int64_t[]){k, n});
  sp.out_shape = wm_shape_make(2, (const int64_t[]){m, n});
  sp.in_data[0] = a;
  sp.in_data[1] = b;
  gemm_peer_t g = {m, n, k, a, b, c};
  variant_t peer = {.name = "peer", .fn = gemm_run, .ctx = &g};
  char name[64];
  snprintf(name, sizeof(name), "MatMul %dx%dx%d", m, n, k);
  if (!st) {
    st = run_case(env, name, &sp, true, &peer,
                  2.0 * (double)m * (double)n * (double)k,
                  2.0 * (double)m * (double)n * (double)k, "GFLOP/s",
                  "cblas_sgemm", c, nn);
  }
  free(a);
  free(b);
  free(c);
  return st;
}

// One convolution shape (batch 1, no bias).
typedef struct conv_shape {
  const char *name;  // what it is in ResNet-50 or MobileNetV2
  int cin, hw, cout, k, stride, pad;
  int group;  // 1, or cin for depthwise
} conv_shape_t;

// y[cout, ho, ho] of grouped |c| computed directly in double (the check
// of convolutions that have no GEMM peer).
static void conv_direct(const conv_shape_t *c, int ho, const float *x,
                        const float *w, float *y) {
  int g = c->group, cg = c->cin / g, mg = c->cout / g;
  for (int m = 0; m < c->cout; m++) {
    int g0 = m / mg * cg;
    for (int oy = 0; oy < ho; oy++) {
      for (int ox = 0; ox < ho; ox++) {
        double acc = 0;
        for (int ci = 0; ci < cg; ci++) {
          for (int ky = 0; ky < c->k; ky++) {
            for (int kx = 0; kx < c->k; kx++) {
              int iy = oy * c->stride - c->pad + ky;
              int ix = ox * c->stride - c->pad + kx;
              if (iy < 0 || iy >= c->hw || ix < 0 || ix >= c->hw) {
                continue;
              }
              acc +=
                  (double)w[((m * cg + ci) * c->k + ky) * c->k + kx] *
                  (double)x[((size_t)(g0 + ci) * (size_t)c->hw + (size_t)iy) *
                                (size_t)c->hw +
                            (size_t)ix];
            }
          }
        }
        y[((size_t)m * (size_t)ho + (size_t)oy) * (size_t)ho + (size_t)ox] =
            (float)acc;
      }
    }
  }
}

// The one-node Conv of |c| (batch 1, output |ho| x |ho|) on |x| and |w|.
static void conv_spec(const conv_shape_t *c, int ho, const float *x,
                      const float *w, op_spec_t *sp) {
  memset(sp, 0, sizeof(*sp));
  sp->op = "Conv";
  sp->opset = 11;
  sp->n_in = 2;
  sp->in_shape[0] =
      wm_shape_make(4, (const int64_t[]){1, c->cin, c->hw, c->hw});
  sp->in_shape[1] = wm_shape_make(
      4, (const int64_t[]){c->cout, c->cin / c->group, c->k, c->k});
  sp->out_shape = wm_shape_make(4, (const int64_t[]){1, c->cout, ho, ho});
  sp->in_data[0] = x;
  sp->in_data[1] = w;
  spec_attr_ints(sp, "kernel_shape", (const int64_t[]){c->k, c->k}, 2);
  spec_attr_ints(sp, "strides", (const int64_t[]){c->stride, c->stride}, 2);
  spec_attr_ints(sp, "pads", (const int64_t[]){c->pad, c->pad, c->pad, c->pad},
                 4);
  spec_attr_int(sp, "group", c->group);
}

// A grouped convolution: no GEMM does its work, so it is measured in GB/s
// of its compulsory traffic (X, W and Y once) against a triad moving the
// same bytes (so that both see the same cache level).
static wm_status_t bench_conv_grouped(const bench_env_t *env,
                                      const conv_shape_t *c) {
  char name[64];
  snprintf(name, sizeof(name), "Conv %s", c->name);
  if (g_only && !strstr(name, g_only)) {
    return NULL;
  }
  int ho = (c->hw + 2 * c->pad - c->k) / c->stride + 1;
  size_t nx = (size_t)c->cin * (size_t)c->hw * (size_t)c->hw;
  size_t nw = (size_t)c->cout * (size_t)(c->cin / c->group) * (size_t)c->k *
              (size_t)c->k;
  size_t ny = (size_t)c->cout * (size_t)ho * (size_t)ho;
  double bytes = 4.0 * (double)(nx + nw + ny);
  size_t nt = (size_t)(bytes / 12.0);
  float *x = random_floats(nx, 3);
  float *w = random_floats(nw, 4);
  float *y = alloc_floats(ny);
  triad_t t = {env->pool,
               alloc_floats(nt),
               random_floats(nt, 5),
               random_floats(nt, 6),
               nt,
               3.0f};
  wm_status_t st = NULL;
  if (!x || !w || !y || !t.a || !t.b || !t.c) {
    st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  } else {
    conv_direct(c, ho, x, w, y);
  }
  op_spec_t sp;
  conv_spec(c, ho, x, w, &sp);
  variant_t peer = {.name = "peer", .fn = triad_run, .ctx = &t};
  if (!st) {
    st = run_case(env, name, &sp, false, &peer, bytes, 12.0 * (double)nt,
                  "GB/s", "triad same B", y, ny);
  }
  free(x);
  free(w);
  free(y);
  free(t.a);
  free(t.b);
  free(t.c);
  return st;
}

// Lowers x[cin, h, w] to col[cin*k*k, ho*wo] (what an im2col GEMM reads).
static void im2col(const conv_shape_t *c, int ho, const float *x, float *col) {
  size_t n = (size_t)ho * (size_t)ho, r = 0;
  for (int ci = 0; ci < c->cin; ci++) {
    for (int ky = 0; ky < c->k; ky++) {
      for (int kx = 0; kx < c->k; kx++, r++) {
        for (int oy = 0; oy < ho; oy++) {
          for (int ox = 0; ox < ho; ox++) {
            int iy = oy * c->stride - c->pad + ky;
            int ix = ox * c->stride - c->pad + kx;
            bool in = iy >= 0 && iy < c->hw && ix >= 0 && ix < c->hw;
            col[r * n + (size_t)oy * (size_t)ho + (size_t)ox] =
                in ? x[((size_t)ci * (size_t)c->hw + (size_t)iy) *
                           (size_t)c->hw +
                       (size_t)ix]
                   : 0.0f;
          }
        }
      }
    }
  }
}

static wm_status_t bench_conv(const bench_env_t *env, const conv_shape_t *c) {
  if (c->group > 1) {
    return bench_conv_grouped(env, c);
  }
  int ho = (c->hw + 2 * c->pad - c->k) / c->stride + 1;
  size_t kk = (size_t)c->cin * (size_t)c->k * (size_t)c->k;
  size_t n = (size_t)ho * (size_t)ho;
  float *x = random_floats((size_t)c->cin * (size_t)c->hw * (size_t)c->hw, 3);
  float *w = random_floats((size_t)c->cout * kk, 4);
  float *col = alloc_floats(kk * n);
  float *y = alloc_floats((size_t)c->cout * n);
  wm_status_t st = NULL;
  if (!x || !w || !col || !y) {
    st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  } else {
    im2col(c, ho, x, col);
  }
  op_spec_t sp;
  conv_spec(c, ho, x, w, &sp);
  gemm_peer_t g = {c->cout, (int)n, (int)kk, w, col, y};
  variant_t peer = {.name = "peer", .fn = gemm_run, .ctx = &g};
  char name[64];
  snprintf(name, sizeof(name), "Conv %s", c->name);
  if (!st) {
    st = run_case(env, name, &sp, false, &peer,
                  2.0 * (double)c->cout * (double)n * (double)kk,
                  2.0 * (double)c->cout * (double)n * (double)kk, "GFLOP/s",
                  "sgemm M,N,K", y, (size_t)c->cout * n);
  }
  free(x);
  free(w);
  free(col);
  free(y);
  return st;
}

#define BW_ROWS 16384
#define BW_COLS 1024
#define BW_N ((size_t)BW_ROWS * BW_COLS)

static wm_status_t bench_bandwidth(const bench_env_t *env) {
  if (g_only && !strstr("Add 16384x1024", g_only) &&
      !strstr("Softmax 16384x1024 axis -1", g_only)) {
    return NULL;  // no case selected: skip the 200 MB of setup
  }
  triad_t t = {env->pool,
               alloc_floats(BW_N),
               random_floats(BW_N, 5),
               random_floats(BW_N, 6),
               BW_N,
               3.0f};
  wm_status_t st = NULL;
  if (!t.a || !t.b || !t.c) {
    st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  // Add and triad move the same bytes: 2 reads and 1 write of 4 B each.
  variant_t peer = {.name = "peer", .fn = triad_run, .ctx = &t};
  op_spec_t sp;
  memset(&sp, 0, sizeof(sp));
  wm_shape_t shape = wm_shape_make(2, (const int64_t[]){BW_ROWS, BW_COLS});
  sp.op = "Add";
  sp.opset = 14;
  sp.n_in = 2;
  sp.in_shape[0] = sp.in_shape[1] = sp.out_shape = shape;
  sp.in_data[0] = t.b;
  sp.in_data[1] = t.c;
  if (!st) {
    st = run_case(env, "Add 16384x1024", &sp, true, &peer, 12.0 * BW_N,
                  12.0 * BW_N, "GB/s", "triad 12 B/elt", NULL, 0);
  }
  memset(&sp, 0, sizeof(sp));
  sp.op = "Softmax";
  sp.opset = 13;
  sp.n_in = 1;
  sp.in_shape[0] = sp.out_shape = shape;
  sp.in_data[0] = t.b;
  spec_attr_int(&sp, "axis", -1);
  if (!st) {
    st = run_case(env, "Softmax 16384x1024 axis -1", &sp, true, &peer,
                  8.0 * BW_N, 12.0 * BW_N, "GB/s", "triad 12 B/elt", NULL, 0);
  }
  free(t.a);
  free(t.b);
  free(t.c);
  return st;
}

// ------------------------------------------------- generated kernels

// One generated kernel of the chain: y = f(x[0..n_in)) over rows
// [begin, end) of [BW_ROWS, BW_COLS].
typedef struct chain_step {
  void *fn;  // the symbol
  int n_in;  // of x
  float *y;
  const float *x[3];
} chain_step_t;

typedef struct chain_run {
  wm_pool_t *pool;
  chain_step_t steps[4];
  int n;
  int at;  // the step a range belongs to
} chain_run_t;

static void chain_range(void *ctx, size_t begin, size_t end) {
  const chain_run_t *r = ctx;
  const chain_step_t *s = &r->steps[r->at];
  void *args[4] = {s->y, (void *)s->x[0], (void *)s->x[1], (void *)s->x[2]};
  wm_gen_call(s->fn, args, (int64_t)begin, (int64_t)end);
}

// Each step over the pool's threads in turn.
static wm_status_t chain_go(void *ctx) {
  chain_run_t *r = ctx;
  for (r->at = 0; r->at < r->n; r->at++) {
    wm_pool_for(r->pool, BW_ROWS, 256, chain_range, r);
  }
  return NULL;
}

// One generated compute over [BW_ROWS, BW_COLS] of |n_in| inputs and
// body |op|(x0, x1) (or op(x0) for a unary one, x0 * 0.5 for MUL with one
// input), printed into |src| as |name|; |full| when |op| is the whole
// chain y = relu(x0 * x1 + x2) * 0.5.
static wm_status_t chain_compute(const char *name, int n_in, wm_gen_op_t op,
                                 bool full, wm_strbuf_t *src) {
  static const int64_t dims[2] = {BW_ROWS, BW_COLS};
  wm_gen_compute_t c;
  int32_t x[3], y;
  WM_RETURN_IF_ERROR(wm_gen_begin(&c, name, 2, dims, NULL));
  for (int i = 0; i < n_in; i++) {
    char tn[4] = {'X', (char)('0' + i), 0, 0};
    WM_RETURN_IF_ERROR(wm_gen_input(&c, tn, 2, dims, &x[i]));
  }
  wm_gen_builder_t b = {&c, NULL};
  if (full) {
    y = wm_gen_f2(&b, WM_GEN_MUL, x[0], x[1]);
    y = wm_gen_f2(&b, WM_GEN_ADD, y, x[2]);
    y = wm_gen_f1(&b, WM_GEN_RELU, y);
    y = wm_gen_f2(&b, WM_GEN_MUL, y, wm_gen_k(&b, 0.5f));
  } else if (wm_gen_op_arity(op) == 1) {
    y = wm_gen_f1(&b, op, x[0]);
  } else {
    y = wm_gen_f2(&b, op, x[0], n_in > 1 ? x[1] : wm_gen_k(&b, 0.5f));
  }
  WM_RETURN_IF_ERROR(b.st);
  WM_RETURN_IF_ERROR(wm_gen_finish(&c, y));
  wm_gen_schedule_t sc = wm_gen_default_schedule(&c, 64);
  wm_gen_nest_t nest;
  WM_RETURN_IF_ERROR(wm_gen_lower(&c, &sc, &nest));
  return wm_gen_print(&nest, WM_GEN_C, src);
}

// y = relu(a * b + c) * 0.5 over 16 M floats: four elementwise ops as one
// generated kernel (16 B of compulsory traffic per element) and as four
// (t = a * b; t = t + c; t = relu(t); y = t * 0.5), against the triad.
static wm_status_t bench_gen_chain(const bench_env_t *env) {
  const char *name = "Gen chain4 fused";
  const char *name_unfused = "Gen chain4 unfused";
  if (g_only && !strstr(name, g_only) && !strstr(name_unfused, g_only)) {
    return NULL;
  }
  wm_strbuf_t src;
  wm_strbuf_init(&src);
  wm_status_t st = chain_compute("chain4", 3, WM_GEN_ADD, true, &src);
  static const wm_gen_op_t ops[4] = {WM_GEN_MUL, WM_GEN_ADD, WM_GEN_RELU,
                                     WM_GEN_MUL};
  static const int ins[4] = {2, 2, 1, 1};
  static const char *const names[4] = {"step0", "step1", "step2", "step3"};
  for (int i = 0; !st && i < 4; i++) {
    st = chain_compute(names[i], ins[i], ops[i], false, &src);
  }
  wm_cc_lib_t *lib = NULL;
  bool compiled = false;
  double t0 = now_sec();
  if (!st) {
    st = wm_cc_build(wm_strbuf_str(&src), NULL, &lib, &compiled);
  }
  if (!st) {
    fprintf(stderr, "  generated kernels %s in %.3f s\n",
            compiled ? "compiled" : "loaded from the cache", now_sec() - t0);
  }
  wm_strbuf_deinit(&src);
  float *a = random_floats(BW_N, 7), *b = random_floats(BW_N, 8),
        *c = random_floats(BW_N, 9), *y = alloc_floats(BW_N),
        *t = alloc_floats(BW_N);
  triad_t tr = {env->pool,
                alloc_floats(BW_N),
                random_floats(BW_N, 5),
                random_floats(BW_N, 6),
                BW_N,
                3.0f};
  if (!st && (!a || !b || !c || !y || !t || !tr.a || !tr.b || !tr.c)) {
    st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  chain_run_t fused = {.pool = env->pool, .n = 1};
  chain_run_t unfused = {.pool = env->pool, .n = 4};
  void *sym[5] = {NULL};
  for (int i = 0; !st && i < 5; i++) {
    sym[i] = wm_cc_symbol(lib, i == 0 ? "chain4" : names[i - 1]);
    if (!sym[i]) {
      st = WM_ERROR(INTERNAL, "generated kernel %d not found", i);
    }
  }
  if (!st) {
    fused.steps[0] = (chain_step_t){sym[0], 3, y, {a, b, c}};
    const float *x0[4] = {a, t, t, t}, *x1[4] = {b, c, NULL, NULL};
    for (int i = 0; i < 4; i++) {
      unfused.steps[i] =
          (chain_step_t){sym[i + 1], ins[i], i == 3 ? y : t, {x0[i], x1[i]}};
    }
  }
  variant_t vs[3] = {
      {.name = "fused", .fn = chain_go, .ctx = &fused},
      {.name = "unfused", .fn = chain_go, .ctx = &unfused},
      {.name = "peer", .fn = triad_run, .ctx = &tr},
  };
  if (!st) {
    st = measure(vs, 3);
  }
  if (!st) {
    // Both are checked against the chain computed here.
    double err = 0;
    for (int v = 0; v < 2 && !st; v++) {
      memset(y, 0xff, BW_N * sizeof(float));  // NaN: what is not written
      st = chain_go(v ? (void *)&unfused : (void *)&fused);
      for (size_t i = 0; i < BW_N; i += 4099) {
        float want = a[i] * b[i] + c[i];
        want = (want > 0 ? want : 0.0f) * 0.5f;
        double e = fabs((double)y[i] - want) / (1.0 + fabs((double)want));
        err = e > err || e != e ? e : err;
      }
    }
    add_row(name, env->threads, "GB/s", 16.0 * BW_N, &vs[0], NULL, &vs[2],
            12.0 * BW_N, "triad 12 B/elt", err);
    add_row(name_unfused, env->threads, "GB/s", 16.0 * BW_N, &vs[1], NULL,
            &vs[2], 12.0 * BW_N, "triad 12 B/elt", err);
  }
  wm_cc_close(lib);
  free(a);
  free(b);
  free(c);
  free(y);
  free(t);
  free(tr.a);
  free(tr.b);
  free(tr.c);
  return st ? wm_status_annotate(st, "case %s", name) : NULL;
}

// Generated sgemm: the MatMul definition's kernel (the packed template)
// through the device tier against cblas_sgemm on the same matrices.
static wm_status_t bench_gen_gemm(const bench_env_t *env, int n) {
  char name[64];
  snprintf(name, sizeof(name), "Gen sgemm %d", n);
  if (g_only && !strstr(name, g_only)) {
    return NULL;
  }
  size_t nn = (size_t)n * (size_t)n;
  float *a = random_floats(nn, 1), *b = random_floats(nn, 2);
  float *c = alloc_floats(nn), *got = alloc_floats(nn);
  wm_status_t st =
      a && b && c && got ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  op_spec_t sp;
  memset(&sp, 0, sizeof(sp));
  sp.op = "MatMul";
  sp.opset = 13;
  sp.n_in = 2;
  sp.in_shape[0] = sp.in_shape[1] = sp.out_shape =
      wm_shape_make(2, (const int64_t[]){n, n});
  sp.in_data[0] = a;
  sp.in_data[1] = b;
  sess_t s;
  gen_direct_t d;
  memset(&s, 0, sizeof(s));
  memset(&d, 0, sizeof(d));
  if (!st) {
    st = sess_init(&s, env->be, &sp, WM_KERNELS_AUTO);  // the checked graph
  }
  if (!st) {
    st = gen_direct_init(&d, env, &sp, s.graph);
  }
  gemm_peer_t g = {n, n, n, a, b, c};
  variant_t vs[2] = {{.name = "op", .fn = gen_direct_run, .ctx = &d},
                     {.name = "peer", .fn = gemm_run, .ctx = &g}};
  if (!st) {
    st = measure(vs, 2);
  }
  if (!st) {
    st = wm_backend_error(d.be,
                          d.api->device->copy_d2h(d.stream, d.bufs[0], 0, got,
                                                  nn * sizeof(float)),
                          "copy_d2h");
  }
  if (!st) {
    double work = 2.0 * (double)n * (double)n * (double)n;
    add_row(name, env->threads, "GFLOP/s", work, &vs[0], NULL, &vs[1], work,
            "cblas_sgemm", max_rel_err(got, c, nn));
  }
  gen_direct_deinit(&d);
  sess_deinit(&s);
  free(a);
  free(b);
  free(c);
  free(got);
  return st ? wm_status_annotate(st, "case %s", name) : NULL;
}

// A convolution run as its generated kernel (a session with --impl
// generated) against the cpu backend's own kernel (the same session with
// the default kernels); both include the session's per-run work.
static wm_status_t bench_gen_conv(const bench_env_t *env,
                                  const conv_shape_t *c) {
  char name[64];
  snprintf(name, sizeof(name), "Gen Conv %s", c->name);
  if (g_only && !strstr(name, g_only)) {
    return NULL;
  }
  int ho = (c->hw + 2 * c->pad - c->k) / c->stride + 1;
  size_t nx = (size_t)c->cin * (size_t)c->hw * (size_t)c->hw;
  size_t nw = (size_t)c->cout * (size_t)(c->cin / c->group) * (size_t)c->k *
              (size_t)c->k;
  float *x = random_floats(nx, 3), *w = random_floats(nw, 4);
  wm_status_t st =
      x && w ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  op_spec_t sp;
  conv_spec(c, ho, x, w, &sp);
  sess_t gen, cpu;
  memset(&gen, 0, sizeof(gen));
  memset(&cpu, 0, sizeof(cpu));
  if (!st) {
    st = sess_init(&gen, env->be, &sp, WM_KERNELS_GENERATED);
  }
  if (!st) {
    st = sess_init(&cpu, env->be, &sp, WM_KERNELS_AUTO);
  }
  if (!st) {
    const wm_placement_t *p = wm_session_placement(gen.session, 0);
    if (!p || !p->kernel) {
      st = WM_ERROR(INTERNAL, "%s did not run generated", name);
    } else {
      fprintf(stderr, "  %s: kernel %s\n", name, p->kernel);
    }
  }
  variant_t vs[2] = {{.name = "op", .fn = sess_run, .ctx = &gen},
                     {.name = "peer", .fn = sess_run, .ctx = &cpu}};
  if (!st) {
    st = measure(vs, 2);
  }
  double err = -1;
  wm_tensor_t *yg = NULL, *yc = NULL;
  if (!st) {
    st = wm_session_run(gen.session, NULL, NULL, 0, &yg);
  }
  if (!st) {
    st = wm_session_run(cpu.session, NULL, NULL, 0, &yc);
  }
  if (!st) {
    err = max_rel_err(yg->data, yc->data, yc->count);
    double work = 2.0 * (double)nw * (double)ho * (double)ho;
    add_row(name, env->threads, "GFLOP/s", work, &vs[0], NULL, &vs[1], work,
            "cpu backend", err);
  }
  wm_tensor_destroy(yg);
  wm_tensor_destroy(yc);
  sess_deinit(&gen);
  sess_deinit(&cpu);
  free(x);
  free(w);
  return st ? wm_status_annotate(st, "case %s", name) : NULL;
}

static const conv_shape_t conv_shapes[] = {
    {"conv1 7x7/2 3->64 224", 3, 224, 64, 7, 2, 3, 1},
    {"3x3 64->64 56", 64, 56, 64, 3, 1, 1, 1},
    {"1x1 256->64 56", 256, 56, 64, 1, 1, 0, 1},
    {"1x1 64->256 56", 64, 56, 256, 1, 1, 0, 1},
    {"3x3/2 128->128 56", 128, 56, 128, 3, 2, 1, 1},
    {"3x3 128->128 28", 128, 28, 128, 3, 1, 1, 1},
    {"3x3 256->256 14", 256, 14, 256, 3, 1, 1, 1},
    {"3x3 512->512 7", 512, 7, 512, 3, 1, 1, 1},
    {"1x1 1024->256 14", 1024, 14, 256, 1, 1, 0, 1},
    {"1x1/2 1024->2048 14", 1024, 14, 2048, 1, 2, 0, 1},
    {"mnv2 1x1 24->144 56", 24, 56, 144, 1, 1, 0, 1},
    {"mnv2 1x1 144->24 56", 144, 56, 24, 1, 1, 0, 1},
    {"mnv2 1x1 96->576 14", 96, 14, 576, 1, 1, 0, 1},
    {"mnv2 1x1 960->320 7", 960, 7, 320, 1, 1, 0, 1},
    {"mnv2 1x1 960->160 7", 960, 7, 160, 1, 1, 0, 1},
    {"mnv2 1x1 384->64 14", 384, 14, 64, 1, 1, 0, 1},
    {"mnv2 dw3x3 32 112", 32, 112, 32, 3, 1, 1, 32},
    {"mnv2 dw3x3 144 56", 144, 56, 144, 3, 1, 1, 144},
    {"mnv2 dw3x3/2 96 112", 96, 112, 96, 3, 2, 1, 96},
    {"mnv2 dw3x3 576 14", 576, 14, 576, 3, 1, 1, 576},
    {"mnv2 dw3x3 960 7", 960, 7, 960, 3, 1, 1, 960},
    {"dw5x5 240 28", 240, 28, 240, 5, 1, 2, 240},
};

static wm_status_t bench_pass(const char *plugin, int threads) {
  void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    return WM_ERROR(UNAVAILABLE, "dlopen \"%s\": %s", plugin,
                    why ? why : "unknown error");
  }
  wm_plugin_query_fn query;
  *(void **)&query = dlsym(h, WM_PLUGIN_QUERY_SYMBOL);
  if (!query) {
    dlclose(h);
    return WM_ERROR(NOT_FOUND, "\"%s\" exports no %s", plugin,
                    WM_PLUGIN_QUERY_SYMBOL);
  }
  bench_env_t env;
  memset(&env, 0, sizeof(env));
  env.threads = threads;
  WM_RETURN_IF_ERROR(
      wm_backend_create_ex(query, plugin, (uint32_t)threads, h, &env.be));
  const wm_plugin_api *api = wm_backend_api(env.be);
  wm_status_t st = wm_backend_error(
      env.be, api->device_open(wm_backend_target(env.be, 0), &env.dev),
      "device_open");
  if (!st) {
    st = wm_backend_error(env.be,
                          api->device->stream_create(env.dev, &env.stream),
                          "stream_create");
  }
  if (!st) {
    st = wm_pool_create(threads, &env.pool);
  }
  // The plugin and this program share one OpenBLAS: same thread count.
  openblas_set_num_threads(threads);
  // M x N x K: square ones, then the projections and the vocabulary
  // head of bert-base / gpt2 at 128 tokens.
  static const int sizes[][3] = {
      {256, 256, 256}, {512, 512, 512},  {1024, 1024, 1024}, {2048, 2048, 2048},
      {128, 768, 768}, {128, 3072, 768}, {128, 768, 3072},   {128, 50257, 768},
  };
  for (size_t i = 0; !st && i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    st = bench_gemm(&env, sizes[i][0], sizes[i][1], sizes[i][2]);
  }
  for (size_t i = 0; !st && i < sizeof(conv_shapes) / sizeof(conv_shapes[0]);
       i++) {
    st = bench_conv(&env, &conv_shapes[i]);
  }
  if (!st) {
    st = bench_bandwidth(&env);
  }
  if (!st) {
    st = bench_gen_chain(&env);
  }
  static const int gen_sizes[] = {512, 1024, 2048};
  for (size_t i = 0; !st && i < 3; i++) {
    st = bench_gen_gemm(&env, gen_sizes[i]);
  }
  // Generated convolutions against the cpu backend's: ResNet-50's 3x3s,
  // MobileNetV2's depthwise.
  static const conv_shape_t gen_convs[] = {
      {"3x3 64->64 56", 64, 56, 64, 3, 1, 1, 1},
      {"3x3 256->256 14", 256, 14, 256, 3, 1, 1, 1},
      {"1x1 256->64 56", 256, 56, 64, 1, 1, 0, 1},
      {"dw3x3 144 56", 144, 56, 144, 3, 1, 1, 144},
      {"dw3x3 576 14", 576, 14, 576, 3, 1, 1, 576},
  };
  for (size_t i = 0; !st && i < sizeof(gen_convs) / sizeof(gen_convs[0]); i++) {
    st = bench_gen_conv(&env, &gen_convs[i]);
  }
  wm_pool_destroy(env.pool);
  if (env.stream) {
    api->device->stream_destroy(env.stream);
  }
  if (env.dev) {
    api->device->device_close(env.dev);
  }
  wm_backend_destroy(env.be);
  return st;
}

static void print_table(void) {
  printf("%-30s %3s %8s %9s %9s %9s  %-15s %7s %7s %6s %8s %8s\n", "case",
         "thr", "unit", "cpu op", "cpu sess", "peer", "peer is", "op/peer",
         "ses/pr", "iters", "max err", "spread%");
  for (size_t i = 0; i < g_n_rows; i++) {
    const row_t *r = &g_rows[i];
    char sess[16], ratio2[16], err[16];
    snprintf(sess, sizeof(sess), r->sess < 0 ? "-" : "%.2f", r->sess);
    snprintf(ratio2, sizeof(ratio2), r->sess < 0 ? "-" : "%.3f",
             r->sess / r->peer);
    snprintf(err, sizeof(err), r->max_err < 0 ? "-" : "%.1e", r->max_err);
    char spread[24];
    snprintf(spread, sizeof(spread), "%.0f/%.0f", r->op_spread, r->peer_spread);
    printf("%-30s %3d %8s %9.2f %9s %9.2f  %-15s %7.3f %7s %6ld %8s %8s\n",
           r->name, r->threads, r->unit, r->op, sess, r->peer, r->peer_name,
           r->op / r->peer, ratio2, r->op_iters, err, spread);
  }
}

int main(int argc, char **argv) {
  const char *plugin = WMAP_CPU_PLUGIN;
  int max_threads = 2;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--plugin") && i + 1 < argc) {
      plugin = argv[++i];
    } else if (!strcmp(argv[i], "--blocks") && i + 1 < argc) {
      g_blocks = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--min-time") && i + 1 < argc) {
      g_min_time = atof(argv[++i]);
    } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
      g_only = argv[++i];
    } else if (!strcmp(argv[i], "--max-threads") && i + 1 < argc) {
      max_threads = atoi(argv[++i]);
    } else {
      fprintf(stderr,
              "usage: %s [--plugin FILE] [--blocks N (1..%d, default 5)] "
              "[--min-time SEC (default 0.5)] [--max-threads N (default "
              "2)] [--only SUBSTRING-OF-CASE]\n",
              argv[0], MAX_BLOCKS);
      return 2;
    }
  }
  if (g_blocks < 1 || g_blocks > MAX_BLOCKS || !(g_min_time > 0) ||
      max_threads < 1) {
    fprintf(stderr, "bad --blocks, --min-time or --max-threads\n");
    return 2;
  }
  printf("wmap operator benchmark: cpu backend %s\n", plugin);
  printf("OpenBLAS core: %s; config: %s\n", openblas_get_corename(),
         openblas_get_config());
  printf(
      "median of %d blocks of >= %.2f s each, variants interleaved "
      "(op, sess, peer) block by block after one warm-up run each\n",
      g_blocks, g_min_time);
  print_load("at start");
  wm_status_t st = NULL;
  for (int t = 1; !st && t <= max_threads; t *= 2) {
    fprintf(stderr, "pass with %d thread(s)\n", t);
    st = bench_pass(plugin, t);
  }
  if (st) {
    fprintf(stderr, "wmap_ops_bench: %s\n", wm_status_message(st));
    wm_status_free(st);
  }
  print_load("at end");
  print_table();
  fputs(
      "cpu op: op_run + stream_sync through the plugin ABI on inputs and "
      "output allocated and filled beforehand (kernel only).\n"
      "cpu sess: wm_session_run of a one-node graph, inputs as initializers "
      "kept on the device: kernel + output alloc + download into a new host "
      "tensor + frees.\n"
      "peers: cblas_sgemm on the same M,N,K (Conv: M=Cout, N=Ho*Wo, "
      "K=Cin*kh*kw on a prebuilt im2col matrix, im2col not timed); "
      "depthwise Conv: GB/s of X + W + Y against a triad moving as many "
      "bytes; triad a=b+s*c over 16 M floats at 12 B/elt (the Add's "
      "traffic), same threads (wm_pool).\n"
      "Gen chain4: y = relu(a*b + c) * 0.5 over 16 M floats printed by "
      "src/gen and built with cc, one kernel (fused) or four writing a "
      "temporary (unfused), GB/s of the 16 B/elt the chain must move "
      "(3 reads, 1 write), on the same pool.\n"
      "GB/s counts Add 12 B/elt, Softmax 8 B/elt; iters = median "
      "iterations per block of cpu op; max err = max |op-peer|/(1+|peer|) "
      "on GEMM and Conv outputs; spread% = (slowest - fastest block) / "
      "median, cpu op / peer.\n",
      stdout);
  return st ? 1 : 0;
}
