// The cpu backend plugin: host memory, synchronous streams, a thread pool
// per device, and the library tier dispatching to the kernel tables (the
// GEMM engine for MatMul, Gemm, Conv, ConvTranspose, the recurrent cells
// and Attention; native kernels for the rest). No BLAS library: every
// kernel runs on the device's pool, so no second thread team competes for
// the cores.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu.h"
#include "gemm.h"
#include "comm/comm.h"
#include "host_tier.h"

struct wm_op_plan {
  const cpu_kernel_t *kernel;  // the table entry serving the instance
  void *state;                 // from kernel->plan, or NULL
  wm_pool_t *pool;             // the device's threads
  uint32_t n_in;               // planned inputs
  uint32_t n_out;              // planned outputs
  wm_tensor_desc *descs;       // n_in + n_out planned layouts
  size_t workspace_bytes;      // asked of the host per run
  uint64_t captured;           // inputs the plan holds its own form of
};

// Set once by wm_plugin_query, read-only afterwards.
static const wm_host_api *host_api;  // the host's callbacks
static uint32_t host_threads;        // 0 = all cores
static char cpu_name[160];           // from /proc/cpuinfo
static char gemm_feature[64];        // "gemm=avx512 12x32"
static char threads_feature[32];     // "threads=N"
static const char *features[3];      // the two above and comm=
static wm_target_desc host_target;   // the one target
static const wm_target_desc *const targets[] = {&host_target};
static const char *const formats[] = {"c"};  // compile.c

// Kernel tables in search order.
static const cpu_kernel_t *const tables[] = {
    cpu_kernels_blas, cpu_kernels_eltwise,   cpu_kernels_nn,
    cpu_kernels_data, cpu_kernels_shape,     cpu_kernels_resize,
    cpu_kernels_rnn,  cpu_kernels_attention, cpu_kernels_deconv};

// Bytes of one element of |dtype|; 0 for strings and unknown dtypes.
static size_t dtype_size(uint32_t dtype) {
  static const uint8_t sizes[] = {0, 4, 1, 1, 2, 2, 4,  8, 0,
                                  1, 2, 8, 4, 8, 8, 16, 2};
  return dtype < sizeof(sizes) ? sizes[dtype] : 0;
}

// Logs one line through the host, if it gave a logger.
static void log_line(uint32_t level, const char *message) {
  if (host_api && WM_HAS(host_api, wm_host_api, log) && host_api->log) {
    host_api->log(host_api->ctx, level, __FILE__, __LINE__, message);
  }
}

// ------------------------------------------------------------ metadata

static wm_error *get_info(wm_plugin_info *out) {
  uint32_t size = out->struct_size;
  memset(out, 0, size < sizeof(*out) ? size : sizeof(*out));
  out->struct_size = size;
  out->name = "cpu";
  if (WM_HAS(out, wm_plugin_info, version)) {
    out->vendor = "wmap";
    out->version = "0.1.0";
  }
  if (WM_HAS(out, wm_plugin_info, features)) {
    out->n_features = 3;
    out->features = features;
  }
  if (WM_HAS(out, wm_plugin_info, sanitizer)) {
#if defined(__SANITIZE_ADDRESS__)
    out->sanitizer = WM_SANITIZER_ADDRESS;
#elif defined(__SANITIZE_THREAD__)
    out->sanitizer = WM_SANITIZER_THREAD;
#else
    out->sanitizer = WM_SANITIZER_NONE;
#endif
  }
  return NULL;
}

static uint32_t probe_score(void) {
  return 10;
}

// Copies the "model name" of /proc/cpuinfo into cpu_name.
static void read_cpu_name(void) {
  snprintf(cpu_name, sizeof(cpu_name), "host CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) {
    return;
  }
  char line[256];
  while (fgets(line, sizeof(line), f)) {
    if (strncmp(line, "model name", 10) != 0) {
      continue;
    }
    const char *v = strchr(line, ':');
    if (!v) {
      continue;
    }
    v++;
    while (*v == ' ' || *v == '\t') {
      v++;
    }
    size_t n = strcspn(v, "\n");
    if (n > 0) {
      snprintf(cpu_name, sizeof(cpu_name), "%.*s", (int)n, v);
    }
    break;
  }
  fclose(f);
}

// Fills the target description and feature strings (once per load).
static void describe_host(void) {
  read_cpu_name();
  int32_t cores = wm_cpu_count();
  uint32_t threads = host_threads ? host_threads : (uint32_t)cores;
  snprintf(gemm_feature, sizeof(gemm_feature), "gemm=%s",
           cpu_gemm_kernel_name());
  snprintf(threads_feature, sizeof(threads_feature), "threads=%u", threads);
  features[0] = gemm_feature;
  features[1] = threads_feature;
  features[2] = wm_comm_mpi_built() ? "comm=threads,mpi" : "comm=threads";
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  wm_target_desc t = {
      .struct_size = sizeof(wm_target_desc),
      .name = cpu_name,
      .vendor = "wmap",
      .kind = WM_TARGET_CPU,
      .memory_bytes =
          pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0,
      .compute_units = cores > 0 ? (uint32_t)cores : 1,
      .n_formats = 1,
      .formats = formats,
      .dtype_mask =
          ((uint64_t)1 << 1) | ((uint64_t)1 << 2) | ((uint64_t)1 << 3) |
          ((uint64_t)1 << 4) | ((uint64_t)1 << 5) | ((uint64_t)1 << 6) |
          ((uint64_t)1 << 7) | ((uint64_t)1 << 9) | ((uint64_t)1 << 10) |
          ((uint64_t)1 << 11) | ((uint64_t)1 << 12) | ((uint64_t)1 << 13) |
          ((uint64_t)1 << 16),
  };
  host_target = t;
}

static wm_error *enumerate(const wm_target_desc *const **out_targets,
                           uint32_t *out_count) {
  *out_targets = targets;
  *out_count = 1;
  return NULL;
}

static wm_error *device_open(const wm_target_desc *target, wm_device **out) {
  *out = NULL;
  if (target != &host_target) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "device_open: target is not the cpu backend's host "
                     "target");
  }
  wm_device *d = calloc(1, sizeof(*d));
  if (!d) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory opening %s",
                     target->name);
  }
  d->target = target;
  int32_t threads = host_threads ? (int32_t)host_threads : wm_cpu_count();
  wm_status_t s = wm_pool_create(threads, &d->pool);
  if (s) {
    free(d);
    return cpu_error_from(
        wm_status_annotate(s, "creating a pool of %d threads", (int)threads));
  }
  *out = d;
  return NULL;
}

static void device_close(wm_device *dev) {
  if (dev) {
    wm_pool_destroy(dev->pool);
    free(dev);
  }
}

// --------------------------------------------------------- device tier

static const wm_device_tier device_tier = {
    WM_HOST_DEVICE_TIER_FIELDS,
    .device_close = device_close,
    .format_support = cpu_format_support,
    .compile = cpu_compile,
    .exe_get_kernel = cpu_exe_get_kernel,
    .exe_destroy = cpu_exe_destroy,
    .launch = cpu_launch,
};

// -------------------------------------------------------- library tier

// The entry serving |op|: its op_type in the default domain (the fused
// operators for the "wmap" domain) with the largest since <= opset; NULL when
// none. *out_any tells whether some entry has the op_type at all.
static const cpu_kernel_t *find_kernel(const wm_op_desc *op, bool *out_any) {
  *out_any = false;
  const cpu_kernel_t *const *search = tables;
  size_t n_tables = sizeof(tables) / sizeof(tables[0]);
  static const cpu_kernel_t *const wmap_tables[] = {
      cpu_kernels_wmap, cpu_kernels_program, cpu_kernels_nn_wmap,
      cpu_kernels_attention_wmap};
  if (!op->op_type) {
    return NULL;
  }
  if (op->domain && strcmp(op->domain, "wmap") == 0) {
    search = wmap_tables;
    n_tables = sizeof(wmap_tables) / sizeof(wmap_tables[0]);
  } else if (op->domain && op->domain[0] != '\0' &&
             strcmp(op->domain, "ai.onnx") != 0) {
    return NULL;
  }
  const cpu_kernel_t *best = NULL;
  for (size_t t = 0; t < n_tables; t++) {
    for (const cpu_kernel_t *k = search[t]; k->op_type; k++) {
      if (strcmp(k->op_type, op->op_type) != 0) {
        continue;
      }
      *out_any = true;
      if ((uint64_t)(k->since > 0 ? k->since : 0) <= op->opset &&
          (!best || k->since > best->since)) {
        best = k;
      }
    }
  }
  return best;
}

// True when the descriptions of |op| are dense row-major with known dims.
static bool descs_dense(const wm_tensor_desc *d, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    if (d[i].dtype == 0) {
      continue;
    }
    if (d[i].rank > WM_ABI_MAX_RANK) {
      return false;
    }
    int64_t stride = 1;
    for (int32_t j = (int32_t)d[i].rank - 1; j >= 0; j--) {
      if (d[i].dims[j] < 0) {
        return false;
      }
      if (d[i].strides[j] != 0 && d[i].strides[j] != stride &&
          d[i].dims[j] > 1) {
        return false;
      }
      if (!wm_checked_mul_i64(stride, d[i].dims[j] > 0 ? d[i].dims[j] : 1,
                              &stride)) {
        return false;
      }
    }
  }
  return true;
}

static wm_error *op_query(const wm_target_desc *target, const wm_op_desc *op,
                          wm_op_support *out) {
  (void)target;
  uint32_t size = out->struct_size;
  memset(out, 0, size < sizeof(*out) ? size : sizeof(*out));
  out->struct_size = size;
  out->rel_cost = -1.0f;
  bool any;
  const cpu_kernel_t *k = find_kernel(op, &any);
  if (!k) {
    out->reason = any ? WM_WHY_OPSET : WM_WHY_OP;
    out->detail = any ? "no cpu kernel for this opset version"
                      : "no cpu kernel for this operator";
    return NULL;
  }
  if (op->n_in > 0 && !op->in) {
    out->reason = WM_WHY_OTHER;
    out->detail = "inputs are not described";
    return NULL;
  }
  if (op->n_out > 0 && !op->out) {
    out->reason = WM_WHY_OTHER;
    out->detail = "outputs are not described";
    return NULL;
  }
  if (!descs_dense(op->in, op->n_in) || !descs_dense(op->out, op->n_out)) {
    out->reason = WM_WHY_LAYOUT;
    out->detail = "cpu kernels take dense row-major tensors of known shape";
    return NULL;
  }
  uint32_t why = WM_WHY_OTHER;
  const char *detail = NULL;
  uint32_t level = k->query(op, &why, &detail);
  if (level == WM_SUPPORT_NONE) {
    out->reason = why != WM_WHY_NONE ? why : WM_WHY_OTHER;
    out->detail = detail;
    return NULL;
  }
  out->level = level > WM_SUPPORT_PREFERRED ? WM_SUPPORT_SUPPORTED : level;
  out->impl = k->impl;
  return NULL;
}

static void op_plan_destroy(wm_op_plan *plan) {
  if (!plan) {
    return;
  }
  if (plan->state && plan->kernel->state_destroy) {
    plan->kernel->state_destroy(plan->state);
  }
  free(plan->descs);
  free(plan);
}

static wm_error *op_plan(wm_device *dev, const wm_op_desc *op,
                         wm_op_plan **out_plan, uint64_t *out_ws) {
  *out_plan = NULL;
  *out_ws = 0;
  bool any;
  const cpu_kernel_t *k = find_kernel(op, &any);
  if (!k) {
    return cpu_error(WM_ERR_UNIMPLEMENTED,
                     "node \"%s\": no cpu kernel for %s at opset %llu",
                     op->name ? op->name : "", op->op_type ? op->op_type : "?",
                     (unsigned long long)op->opset);
  }
  if ((op->n_in && !op->in) || (op->n_out && !op->out) ||
      !descs_dense(op->in, op->n_in) || !descs_dense(op->out, op->n_out)) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (%s): tensors are not dense row-major "
                     "with known dims",
                     op->name ? op->name : "", op->op_type);
  }
  uint32_t why = WM_WHY_OTHER;
  const char *detail = NULL;
  if (k->query(op, &why, &detail) == WM_SUPPORT_NONE) {
    // Planning without a claim: the kernel would see what it refused.
    return cpu_error(WM_ERR_UNIMPLEMENTED, "node \"%s\" (%s): %s",
                     op->name ? op->name : "", op->op_type,
                     detail ? detail : "instance not supported");
  }
  wm_op_plan *plan = calloc(1, sizeof(*plan));
  size_t n = (size_t)op->n_in + op->n_out;
  wm_tensor_desc *descs = calloc(n + 1, sizeof(*descs));
  if (!plan || !descs) {
    free(plan);
    free(descs);
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "node \"%s\" (%s): out of memory planning",
                     op->name ? op->name : "", op->op_type);
  }
  if (op->n_in) {
    memcpy(descs, op->in, op->n_in * sizeof(*descs));
  }
  if (op->n_out) {
    memcpy(descs + op->n_in, op->out, op->n_out * sizeof(*descs));
  }
  plan->kernel = k;
  plan->pool = dev->pool;
  plan->n_in = op->n_in;
  plan->n_out = op->n_out;
  plan->descs = descs;
  if (k->plan) {
    wm_error *e = k->plan(op, &plan->state);
    if (e) {
      op_plan_destroy(plan);
      return e;
    }
  }
  if (k->captured && WM_HAS(op, wm_op_desc, captured) && op->captured) {
    uint64_t mask = k->captured(plan->state);
    for (uint32_t i = 0; i < op->n_in && i < 64; i++) {
      if (!op->in_values || !op->in_values[i]) {
        mask &= ~((uint64_t)1 << i);  // only constants can be captured
      }
    }
    plan->captured = mask;
    *op->captured = mask;
  }
  if (k->in_place && WM_HAS(op, wm_op_desc, in_place) && op->in_place) {
    for (uint32_t j = 0; j < op->n_out; j++) {
      int32_t i = k->in_place(plan->state, j);
      if (i >= 0 && (uint32_t)i < op->n_in && op->in[i].dtype != 0 &&
          op->in[i].dtype == op->out[j].dtype &&
          cpu_desc_count(&op->in[i]) == cpu_desc_count(&op->out[j])) {
        op->in_place[j] = i;
      }
    }
  }
  if (k->workspace) {
    plan->workspace_bytes =
        k->workspace(plan->state, wm_pool_threads(dev->pool));
    *out_ws = plan->workspace_bytes;
  }
  *out_plan = plan;
  return NULL;
}

static bool is_input(const char *what) {
  return strcmp(what, "input") == 0;
}

// Turns view |v| into a kernel tensor, checking it against the planned
// layout |want| and its buffer's size.
static wm_error *view_tensor(const wm_op_plan *plan, const wm_buffer_view *v,
                             const wm_tensor_desc *want, const char *what,
                             uint32_t index, cpu_tensor_t *out) {
  memset(out, 0, sizeof(*out));
  if (want->dtype == 0) {
    return NULL;  // omitted when planned
  }
  if (!v->buffer && is_input(what) && index < 64 &&
      ((plan->captured >> index) & 1)) {
    // Captured at plan time: the kernel never reads it.
    out->dtype = want->dtype;
    out->rank = (int32_t)want->rank;
    memcpy(out->dims, want->dims, want->rank * sizeof(int64_t));
    out->count = cpu_desc_count(want);
    return NULL;
  }
  if (!v->buffer) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "%s: %s %u was planned but has no buffer",
                     plan->kernel->op_type, what, index);
  }
  const wm_tensor_desc *d = &v->desc;
  if (d->dtype != want->dtype || d->rank != want->rank ||
      memcmp(d->dims, want->dims, d->rank * sizeof(int64_t)) != 0) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "%s: %s %u differs from the planned layout (dtype %u "
                     "rank %u, planned dtype %u rank %u)",
                     plan->kernel->op_type, what, index, d->dtype, d->rank,
                     want->dtype, want->rank);
  }
  size_t count = cpu_desc_count(d), bytes = 0;
  size_t esize = dtype_size(d->dtype);
  if (d->dtype == 8) {
    esize = sizeof(char *);  // strings: host-owned pointers
  }
  if (!wm_checked_mul(count, esize, &bytes) || v->offset > v->buffer->size ||
      bytes > v->buffer->size - v->offset) {
    return cpu_error(WM_ERR_OUT_OF_RANGE,
                     "%s: %s %u of %zu elements does not fit its buffer of "
                     "%llu bytes at offset %llu",
                     plan->kernel->op_type, what, index, count,
                     (unsigned long long)v->buffer->size,
                     (unsigned long long)v->offset);
  }
  out->dtype = d->dtype;
  out->rank = (int32_t)d->rank;
  memcpy(out->dims, d->dims, d->rank * sizeof(int64_t));
  out->count = count;
  out->data = (char *)v->buffer->data + v->offset;
  return NULL;
}

// Tensors kept on the stack for up to this many inputs plus outputs.
enum { STACK_TENSORS = 16 };

static wm_error *op_run(wm_stream *stream, wm_op_plan *plan,
                        const wm_buffer_view *in, uint32_t n_in,
                        const wm_buffer_view *out, uint32_t n_out,
                        const wm_buffer_view *workspace) {
  (void)stream;
  void *ws = NULL;
  if (plan->workspace_bytes) {
    // Without the workspace (or with less) the GEMM engine allocates its
    // buffers for the run itself.
    uint64_t have = workspace ? (uint64_t)cpu_desc_count(&workspace->desc) *
                                    dtype_size(workspace->desc.dtype)
                              : 0;
    if (workspace && workspace->buffer && have >= plan->workspace_bytes &&
        workspace->offset <= workspace->buffer->size &&
        have <= workspace->buffer->size - workspace->offset) {
      ws = (char *)workspace->buffer->data + workspace->offset;
    }
  }
  if (n_in != plan->n_in || n_out != plan->n_out) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "%s: op_run got %u inputs and %u outputs, planned %u "
                     "and %u",
                     plan->kernel->op_type, n_in, n_out, plan->n_in,
                     plan->n_out);
  }
  cpu_tensor_t stack[STACK_TENSORS];
  size_t n = (size_t)n_in + n_out;
  cpu_tensor_t *t = n <= STACK_TENSORS ? stack : calloc(n, sizeof(*t));
  if (!t) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "%s: out of memory for %zu tensor views",
                     plan->kernel->op_type, n);
  }
  wm_error *e = NULL;
  for (uint32_t i = 0; !e && i < n_in; i++) {
    e = view_tensor(plan, &in[i], &plan->descs[i], "input", i, &t[i]);
  }
  for (uint32_t i = 0; !e && i < n_out; i++) {
    e = view_tensor(plan, &out[i], &plan->descs[n_in + i], "output", i,
                    &t[n_in + i]);
  }
  if (!e) {
    cpu_run_t run = {
        .in = t,
        .n_in = n_in,
        .out = t + n_in,
        .n_out = n_out,
        .pool = plan->pool,
        .workspace = ws,
        .workspace_bytes = ws ? plan->workspace_bytes : 0,
    };
    e = plan->kernel->run(plan->state, &run);
  }
  if (t != stack) {
    free(t);
  }
  return e;
}

static const wm_library_tier library_tier = {
    .struct_size = sizeof(wm_library_tier),
    .op_query = op_query,
    .op_plan = op_plan,
    .op_run = op_run,
    .op_plan_destroy = op_plan_destroy,
};

static wm_plugin_api api_table = {
    .struct_size = sizeof(wm_plugin_api),
    .abi_major = WM_ABI_MAJOR,
    .abi_minor = WM_ABI_MINOR,
    .get_info = get_info,
    .probe_score = probe_score,
    .enumerate = enumerate,
    .device_open = device_open,
    WM_HOST_ERROR_FIELDS,
    .device = &device_tier,
    .library = &library_tier,
    .collective = &cpu_collective_tier,
};

WM_EXPORT wm_error *wm_plugin_query(uint32_t host_major,
                                    uint32_t host_max_minor,
                                    const wm_host_api *host,
                                    const wm_plugin_api **out_api);

WM_EXPORT wm_error *wm_plugin_query(uint32_t host_major,
                                    uint32_t host_max_minor,
                                    const wm_host_api *host,
                                    const wm_plugin_api **out_api) {
  *out_api = &api_table;
  wm_error *e =
      wm_host_negotiate("cpu", host_major, host_max_minor, &api_table);
  if (e) {
    return e;
  }
  host_api = host && host->struct_size >= WM_STRUCT_SIZE(wm_host_api, ctx)
                 ? host
                 : NULL;
  host_threads =
      host && WM_HAS(host, wm_host_api, num_threads) ? host->num_threads : 0;
  describe_host();
  log_line(WM_LOG_LEVEL_DEBUG, "cpu backend loaded");
  return NULL;
}
