// The cuda backend's library tier: float32 MatMul, Gemm and Conv on cuBLAS
// (loaded at run time). Row-major products are computed as cuBLAS's
// column-major C^T = B^T A^T; batched MatMuls with broadcast batch dims run
// as strided batched GEMMs over the longest run of batch dims both inputs
// step through evenly; a 2-D Conv is im2col (a kernel of this file, built
// by NVRTC) into the workspace and a GEMM per group, then its bias.
#include <cublas_v2.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda.h"
#include "wmap/base.h"

#ifndef WMAP_CUDA_CUBLAS_SONAME
#define WMAP_CUDA_CUBLAS_SONAME "libcublas.so"
#endif
#ifndef WMAP_CUDA_LIBRARY_DIR
#define WMAP_CUDA_LIBRARY_DIR ""
#endif

// The cuBLAS functions the tier calls.
typedef struct cublas_api {
  __typeof__(cublasCreate_v2) *create;
  __typeof__(cublasDestroy_v2) *destroy;
  __typeof__(cublasSetStream_v2) *set_stream;
  __typeof__(cublasSetWorkspace_v2) *set_workspace;
  __typeof__(cublasSgemm_v2) *sgemm;
  __typeof__(cublasSgemmStridedBatched) *sgemm_strided_batched;
  __typeof__(cublasGetStatusName) *status_name;
} cublas_api_t;

#define CB(name, field) \
  { name, offsetof(cublas_api_t, field) }

static const cuda_symbol_t cublas_symbols[] = {
    CB("cublasCreate_v2", create),
    CB("cublasDestroy_v2", destroy),
    CB("cublasSetStream_v2", set_stream),
    CB("cublasSetWorkspace_v2", set_workspace),
    CB("cublasSgemm_v2", sgemm),
    CB("cublasSgemmStridedBatched", sgemm_strided_batched),
    CB("cublasGetStatusName", status_name),
};

// Set once by load_cublas, read-only afterwards.
static pthread_once_t cublas_once = PTHREAD_ONCE_INIT;
static cublas_api_t cb;
static char cublas_problem[512];  // why cuBLAS is missing; "" when loaded

static void load_cublas(void) {
  char err[384];
  if (!cuda_library_open(WMAP_CUDA_CUBLAS_SONAME, WMAP_CUDA_LIBRARY_DIR,
                         cublas_symbols,
                         sizeof(cublas_symbols) / sizeof(cublas_symbols[0]),
                         &cb, err, sizeof(err))) {
    snprintf(cublas_problem, sizeof(cublas_problem), "no cuBLAS (%s): %s",
             WMAP_CUDA_CUBLAS_SONAME, err);
  }
}

static bool cublas_loaded(void) {
  pthread_once(&cublas_once, load_cublas);
  return cublas_problem[0] == '\0';
}

// A device's cuBLAS handle.
struct cuda_blas {
  cublasHandle_t handle;
  pthread_mutex_t lock;  // a handle serves one stream and workspace at a time
};

// The tier's own kernels: im2col, the bias of a convolution and the
// broadcast of Gemm's C, one grid-stride loop each over 64-bit indices.
const char cuda_blas_kernels_source[] =
    "extern \"C\" __global__ void wm_cuda_im2col(\n"
    "    float *col, const float *x, long long c, long long h, long long w,\n"
    "    long long kh, long long kw, long long oh, long long ow,\n"
    "    long long sh, long long sw, long long dh, long long dw,\n"
    "    long long ph, long long pw) {\n"
    "  long long p = oh * ow, total = c * kh * kw * p;\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "       i < total; i += (long long)gridDim.x * blockDim.x) {\n"
    "    long long q = i % p, r = i / p;\n"
    "    long long kx = r % kw;\n"
    "    r /= kw;\n"
    "    long long ky = r % kh, ch = r / kh;\n"
    "    long long y = q / ow * sh - ph + ky * dh;\n"
    "    long long xx = q % ow * sw - pw + kx * dw;\n"
    "    col[i] = y >= 0 && y < h && xx >= 0 && xx < w\n"
    "                 ? x[(ch * h + y) * w + xx] : 0.0f;\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void wm_cuda_add_bias(\n"
    "    float *y, const float *b, long long m, long long p,\n"
    "    long long total) {\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "       i < total; i += (long long)gridDim.x * blockDim.x) {\n"
    "    y[i] += b[i / p % m];\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void wm_cuda_broadcast(\n"
    "    float *y, const float *c, long long n, long long rows,\n"
    "    long long cols, float scale, long long total) {\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "       i < total; i += (long long)gridDim.x * blockDim.x) {\n"
    "    long long r = rows == 1 ? 0 : i / n, k = cols == 1 ? 0 : i % n;\n"
    "    y[i] = scale * c[r * cols + k];\n"
    "  }\n"
    "}\n";

struct cuda_helpers {
  CUmodule module;
  CUfunction im2col;     // wm_cuda_im2col
  CUfunction add_bias;   // wm_cuda_add_bias
  CUfunction broadcast;  // wm_cuda_broadcast
};

// ------------------------------------------------------------ instances

typedef enum op_kind { OP_MATMUL, OP_GEMM, OP_CONV } op_kind_t;

// What an instance is, from its description alone (op_query and op_plan
// share it, so a claim and its plan cannot disagree).
struct wm_op_plan {
  wm_device *dev;              // where it runs; NULL in op_query
  op_kind_t kind;              // which operator
  uint32_t n_in;               // inputs described
  wm_tensor_desc in[3];        // their planned layouts (dtype 0: omitted)
  wm_tensor_desc out;          // the planned output
  int64_t m, n, k;             // one product: [m, k] x [k, n]
  int32_t outer_rank;          // MatMul: batch dims looped over on the host
  int64_t batch_dims[8];       // MatMul: the output's batch dims
  int64_t a_steps[8];          // MatMul: A's elements per batch step, or 0
  int64_t b_steps[8];          // MatMul: B's elements per batch step, or 0
  int64_t inner;               // products per strided batched call
  int64_t a_stride, b_stride;  // elements between them in A and B
  bool trans_a, trans_b;       // Gemm: transA, transB
  float alpha, beta;           // Gemm: alpha, beta
  int64_t c_rows, c_cols;      // Gemm: C as broadcast to [m, n]; 0 without
  int64_t images, channels;    // Conv: N and C of X
  int64_t height, width;       // Conv: X's spatial dims
  int64_t kernel_h, kernel_w;  // Conv: the window
  int64_t out_h, out_w;        // Conv: Y's spatial dims
  int64_t stride_h, stride_w, dilation_h, dilation_w;  // Conv
  int64_t pad_top, pad_left;                           // Conv: begin pads
  int64_t groups;                                      // Conv: group
  bool direct;          // Conv: 1x1, stride 1, no pads: X is its own im2col
  uint64_t blas_bytes;  // workspace lent to cuBLAS
  uint64_t col_bytes;   // workspace for the im2col columns
};

// The ONNX attribute types the tier reads.
enum { ATTR_FLOAT = 1, ATTR_INT = 2, ATTR_INTS = 7 };
enum { DTYPE_FLOAT = 1 };
// cuBLAS wants its workspace 256-byte aligned; the host lends 64.
enum { WS_ALIGN = 256 };

// Attribute or resolved parameter |name| of |op| of |type|, or NULL.
static const wm_op_attr *find(const wm_op_attr *list, uint32_t n,
                              const char *name, uint32_t type) {
  for (uint32_t i = 0; list && i < n; i++) {
    if (list[i].name && strcmp(list[i].name, name) == 0 &&
        list[i].type == type) {
      return &list[i];
    }
  }
  return NULL;
}

// Checks that |d| is a float32 tensor of known dims in dense row-major
// order; returns WM_WHY_NONE or the reason, with |detail|.
static uint32_t check_tensor(const wm_tensor_desc *d, const char **detail) {
  if (d->dtype != DTYPE_FLOAT) {
    *detail = "cuBLAS serves float32 only";
    return WM_WHY_DTYPE;
  }
  if (d->rank > WM_ABI_MAX_RANK) {
    *detail = "rank above the ABI's limit";
    return WM_WHY_RANK;
  }
  int64_t stride = 1;
  for (int32_t j = (int32_t)d->rank - 1; j >= 0; j--) {
    if (d->dims[j] < 0) {
      *detail = "the shapes are not all known yet";
      return WM_WHY_SHAPE;
    }
    if (d->strides[j] != 0 && d->strides[j] != stride && d->dims[j] > 1) {
      *detail = "cuBLAS calls here take dense row-major tensors";
      return WM_WHY_LAYOUT;
    }
    if (!wm_checked_mul_i64(stride, d->dims[j] > 0 ? d->dims[j] : 1, &stride) ||
        stride > ((int64_t)1 << 48)) {
      *detail = "tensor too large";
      return WM_WHY_SIZE_LIMIT;
    }
  }
  return WM_WHY_NONE;
}

// Elements of |d|.
static int64_t count_of(const wm_tensor_desc *d) {
  int64_t n = 1;
  for (uint32_t j = 0; j < d->rank; j++) {
    n *= d->dims[j];
  }
  return n;
}

// The row-major element strides of |d| into |out|.
static void row_major_strides(const wm_tensor_desc *d, int64_t *out) {
  int64_t step = 1;
  for (int32_t j = (int32_t)d->rank - 1; j >= 0; j--) {
    out[j] = step;
    step *= d->dims[j];
  }
}

// True when every value fits cuBLAS's int arguments.
static bool fits_int(int64_t a, int64_t b, int64_t c, int64_t d) {
  return a <= INT_MAX && b <= INT_MAX && c <= INT_MAX && d <= INT_MAX;
}

// Finds how a MatMul's output batch runs: the innermost batch dims over
// which A and B each advance by one stride make one strided batched call,
// the rest a loop on the host.
static void split_batch(wm_op_plan *p, int32_t rank) {
  p->inner = 1;
  p->a_stride = p->b_stride = 0;
  int32_t s = rank;
  bool first = true;
  for (; s > 0; s--) {
    int32_t i = s - 1;
    if (p->batch_dims[i] == 1) {
      continue;
    }
    if (first) {
      p->a_stride = p->a_steps[i];
      p->b_stride = p->b_steps[i];
      first = false;
    } else if (p->a_steps[i] != p->a_stride * p->inner ||
               p->b_steps[i] != p->b_stride * p->inner) {
      break;
    }
    p->inner *= p->batch_dims[i];
  }
  p->outer_rank = s;
}

static uint32_t analyze_matmul(const wm_op_desc *op, wm_op_plan *p,
                               const char **detail) {
  const wm_tensor_desc *a = &op->in[0], *b = &op->in[1], *y = &op->out[0];
  int32_t ra = (int32_t)a->rank, rb = (int32_t)b->rank;
  if (ra < 1 || rb < 1) {
    *detail = "MatMul of a scalar";
    return WM_WHY_RANK;
  }
  p->m = ra >= 2 ? a->dims[ra - 2] : 1;
  p->k = a->dims[ra - 1];
  p->n = rb >= 2 ? b->dims[rb - 1] : 1;
  int64_t kb = rb >= 2 ? b->dims[rb - 2] : b->dims[0];
  int32_t ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0;
  int32_t br = ba > bb ? ba : bb;
  int32_t ry = br + (ra >= 2) + (rb >= 2);
  if (kb != p->k || (int32_t)y->rank != ry) {
    *detail = "the inputs' inner dims or the output's rank disagree";
    return WM_WHY_SHAPE;
  }
  int64_t sa[WM_ABI_MAX_RANK], sb[WM_ABI_MAX_RANK];
  row_major_strides(a, sa);
  row_major_strides(b, sb);
  for (int32_t i = 0; i < br; i++) {
    int32_t ia = i - (br - ba), ib = i - (br - bb);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      *detail = "the batch dims do not broadcast";
      return WM_WHY_SHAPE;
    }
    p->batch_dims[i] = da != 1 ? da : db;
    p->a_steps[i] = da != 1 ? sa[ia] : 0;
    p->b_steps[i] = db != 1 ? sb[ib] : 0;
    if (y->dims[i] != p->batch_dims[i]) {
      *detail = "the output's batch dims disagree with the inputs'";
      return WM_WHY_SHAPE;
    }
  }
  if ((ra >= 2 && y->dims[br] != p->m) ||
      (rb >= 2 && y->dims[ry - 1] != p->n)) {
    *detail = "the output's dims disagree with the inputs'";
    return WM_WHY_SHAPE;
  }
  split_batch(p, br);
  if (!fits_int(p->m, p->n, p->k, p->inner)) {
    *detail = "a dim above cuBLAS's int range";
    return WM_WHY_SIZE_LIMIT;
  }
  return WM_WHY_NONE;
}

static uint32_t analyze_gemm(const wm_op_desc *op, wm_op_plan *p,
                             const char **detail) {
  const wm_tensor_desc *a = &op->in[0], *b = &op->in[1], *y = &op->out[0];
  if (a->rank != 2 || b->rank != 2 || y->rank != 2) {
    *detail = "Gemm takes matrices";
    return WM_WHY_RANK;
  }
  const wm_op_attr *ta = find(op->attrs, op->n_attr, "transA", ATTR_INT);
  const wm_op_attr *tb = find(op->attrs, op->n_attr, "transB", ATTR_INT);
  const wm_op_attr *al = find(op->attrs, op->n_attr, "alpha", ATTR_FLOAT);
  const wm_op_attr *be = find(op->attrs, op->n_attr, "beta", ATTR_FLOAT);
  p->trans_a = ta && ta->i != 0;
  p->trans_b = tb && tb->i != 0;
  p->alpha = al ? al->f : 1.0f;
  p->beta = be ? be->f : 1.0f;
  p->m = a->dims[p->trans_a ? 1 : 0];
  p->k = a->dims[p->trans_a ? 0 : 1];
  p->n = b->dims[p->trans_b ? 0 : 1];
  if (b->dims[p->trans_b ? 1 : 0] != p->k || y->dims[0] != p->m ||
      y->dims[1] != p->n) {
    *detail = "the matrices' dims disagree";
    return WM_WHY_SHAPE;
  }
  if (p->n_in > 2) {
    const wm_tensor_desc *c = &op->in[2];
    p->c_rows = c->rank == 2 ? c->dims[0] : 1;
    p->c_cols = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
    if (c->rank > 2 || (p->c_rows != 1 && p->c_rows != p->m) ||
        (p->c_cols != 1 && p->c_cols != p->n)) {
      *detail = "C does not broadcast to the product";
      return WM_WHY_SHAPE;
    }
  }
  if (!fits_int(p->m, p->n, p->k, 1)) {
    *detail = "a dim above cuBLAS's int range";
    return WM_WHY_SIZE_LIMIT;
  }
  return WM_WHY_NONE;
}

// Reads resolved INTS parameter |name| with |count| entries into |out|.
static bool param_ints(const wm_op_desc *op, const char *name, uint64_t count,
                       int64_t *out) {
  const wm_op_attr *a = find(op->params, op->n_param, name, ATTR_INTS);
  if (!a || a->count != count || !a->ints) {
    return false;
  }
  memcpy(out, a->ints, count * sizeof(int64_t));
  return true;
}

static uint32_t analyze_conv(const wm_op_desc *op, wm_op_plan *p,
                             const char **detail) {
  const wm_tensor_desc *x = &op->in[0], *w = &op->in[1], *y = &op->out[0];
  if (x->rank != 4 || w->rank != 4 || y->rank != 4) {
    *detail = "2-D convolutions only";
    return WM_WHY_RANK;
  }
  if (!WM_HAS(op, wm_op_desc, params) || op->n_param == 0) {
    *detail = "no resolved parameters (shapes not all known yet)";
    return WM_WHY_SHAPE;
  }
  int64_t kernel[2], strides[2], dilations[2], pads[4];
  const wm_op_attr *group = find(op->params, op->n_param, "group", ATTR_INT);
  if (!group || !param_ints(op, "kernel_shape", 2, kernel) ||
      !param_ints(op, "strides", 2, strides) ||
      !param_ints(op, "dilations", 2, dilations) ||
      !param_ints(op, "pads", 4, pads)) {
    *detail = "resolved parameters incomplete";
    return WM_WHY_ATTR;
  }
  p->images = x->dims[0];
  p->channels = x->dims[1];
  p->height = x->dims[2];
  p->width = x->dims[3];
  p->groups = group->i;
  p->kernel_h = kernel[0];
  p->kernel_w = kernel[1];
  p->stride_h = strides[0];
  p->stride_w = strides[1];
  p->dilation_h = dilations[0];
  p->dilation_w = dilations[1];
  p->pad_top = pads[0];
  p->pad_left = pads[1];
  int64_t m = w->dims[0];
  if (p->groups < 1 || p->groups > INT_MAX || strides[0] < 1 ||
      strides[1] < 1 || dilations[0] < 1 || dilations[1] < 1 || pads[0] < 0 ||
      pads[1] < 0 || pads[2] < 0 || pads[3] < 0 || kernel[0] < 1 ||
      kernel[1] < 1) {
    *detail = "group, strides, dilations or pads out of range";
    return WM_WHY_ATTR;
  }
  if (p->channels % p->groups != 0 || m % p->groups != 0 ||
      w->dims[1] != p->channels / p->groups || w->dims[2] != kernel[0] ||
      w->dims[3] != kernel[1]) {
    *detail = "the weights do not match the input and group";
    return WM_WHY_SHAPE;
  }
  int64_t span_h = p->dilation_h * (kernel[0] - 1) + 1;
  int64_t span_w = p->dilation_w * (kernel[1] - 1) + 1;
  int64_t room_h = p->height + pads[0] + pads[2] - span_h;
  int64_t room_w = p->width + pads[1] + pads[3] - span_w;
  p->out_h = room_h < 0 ? 0 : room_h / p->stride_h + 1;
  p->out_w = room_w < 0 ? 0 : room_w / p->stride_w + 1;
  if (y->dims[0] != p->images || y->dims[1] != m || y->dims[2] != p->out_h ||
      y->dims[3] != p->out_w) {
    *detail = "the output's dims disagree with the convolution's";
    return WM_WHY_SHAPE;
  }
  if (p->n_in > 2 && (op->in[2].rank != 1 || op->in[2].dims[0] != m)) {
    *detail = "the bias is not one value per output channel";
    return WM_WHY_SHAPE;
  }
  p->m = m / p->groups;
  p->k = p->channels / p->groups * kernel[0] * kernel[1];
  p->n = p->out_h * p->out_w;
  if (!fits_int(p->m, p->n, p->k, p->groups)) {
    *detail = "a dim above cuBLAS's int range";
    return WM_WHY_SIZE_LIMIT;
  }
  p->direct = kernel[0] == 1 && kernel[1] == 1 && strides[0] == 1 &&
              strides[1] == 1 && pads[0] == 0 && pads[1] == 0 && pads[2] == 0 &&
              pads[3] == 0;
  size_t col = 0;
  if (!p->direct && !wm_checked_mul((size_t)(p->k * p->groups),
                                    (size_t)p->n * sizeof(float), &col)) {
    *detail = "the im2col columns would be too large";
    return WM_WHY_SIZE_LIMIT;
  }
  p->col_bytes = col;
  return WM_WHY_NONE;
}

// Fills |p| for |op|; WM_WHY_NONE when the tier serves it, else the reason
// with |detail|.
static uint32_t analyze(const wm_op_desc *op, wm_op_plan *p,
                        const char **detail) {
  memset(p, 0, sizeof(*p));
  bool onnx = !op->domain || op->domain[0] == '\0' ||
              strcmp(op->domain, "ai.onnx") == 0;
  const char *t = op->op_type ? op->op_type : "";
  uint32_t min_in = 2, max_in = 2;
  if (onnx && strcmp(t, "MatMul") == 0) {
    p->kind = OP_MATMUL;
  } else if (onnx && strcmp(t, "Gemm") == 0) {
    p->kind = OP_GEMM;
    max_in = 3;
  } else if (onnx && strcmp(t, "Conv") == 0) {
    p->kind = OP_CONV;
    max_in = 3;
  } else {
    *detail = "cuda's library tier has MatMul, Gemm and Conv";
    return WM_WHY_OP;
  }
  if (op->n_in < min_in || op->n_in > max_in || op->n_out != 1 || !op->in ||
      !op->out) {
    *detail = "unexpected inputs or outputs";
    return WM_WHY_OTHER;
  }
  p->n_in = op->n_in;
  // An omitted last input is as if not given.
  if (p->n_in == 3 && op->in[2].dtype == 0) {
    p->n_in = 2;
  }
  for (uint32_t i = 0; i < p->n_in; i++) {
    uint32_t why = check_tensor(&op->in[i], detail);
    if (why != WM_WHY_NONE) {
      return why;
    }
    p->in[i] = op->in[i];
  }
  uint32_t why = check_tensor(&op->out[0], detail);
  if (why != WM_WHY_NONE) {
    return why;
  }
  p->out = op->out[0];
  switch (p->kind) {
    case OP_MATMUL:
      return analyze_matmul(op, p, detail);
    case OP_GEMM:
      return analyze_gemm(op, p, detail);
    default:
      return analyze_conv(op, p, detail);
  }
}

uint32_t cuda_blas_analyze(const wm_op_desc *op, uint64_t *out_calls,
                           const char **out_detail) {
  wm_op_plan p;
  *out_detail = NULL;
  uint32_t why = analyze(op, &p, out_detail);
  uint64_t calls = 0;
  if (why == WM_WHY_NONE && p.kind == OP_MATMUL) {
    calls = 1;
    for (int32_t i = 0; i < p.outer_rank; i++) {
      calls *= (uint64_t)p.batch_dims[i];
    }
  } else if (why == WM_WHY_NONE && p.kind == OP_CONV) {
    calls = p.direct && p.groups == 1 ? 1 : (uint64_t)p.images;
  } else if (why == WM_WHY_NONE) {
    calls = 1;
  }
  if (out_calls) {
    *out_calls = calls;
  }
  return why;
}

// True when the instance needs the tier's own kernels.
static bool needs_helpers(const wm_op_plan *p) {
  return p->kind == OP_CONV || (p->kind == OP_GEMM && p->n_in > 2);
}

// ----------------------------------------------------------- the tier

static wm_error *op_query(const wm_target_desc *target, const wm_op_desc *op,
                          wm_op_support *out) {
  uint32_t size = out->struct_size;
  memset(out, 0, size < sizeof(*out) ? size : sizeof(*out));
  out->struct_size = size;
  out->rel_cost = -1.0f;
  const cuda_target_t *t = cuda_target_of(target);
  wm_op_plan p;
  const char *detail = NULL;
  uint32_t why = t ? analyze(op, &p, &detail) : WM_WHY_OTHER;
  char arch[32];
  if (!t) {
    detail = "not a cuda target";
  } else if (why == WM_WHY_NONE && !cublas_loaded()) {
    why = WM_WHY_OTHER;
    detail = "cuBLAS cannot be loaded";
  } else if (why == WM_WHY_NONE && needs_helpers(&p)) {
    wm_error *e = cuda_nvrtc_arch(t->cc, arch);
    if (e) {
      wm_host_error_destroy(e);
      why = WM_WHY_OTHER;
      detail = "NVRTC cannot build the kernels this operator needs";
    }
  }
  if (why != WM_WHY_NONE) {
    out->reason = why;
    out->detail = detail;
    return NULL;
  }
  out->level = WM_SUPPORT_SUPPORTED;
  out->impl = WM_IMPL_VENDOR_LIBRARY;
  return NULL;
}

// The error for a failed cuBLAS call.
static wm_error *blas_check(cublasStatus_t st, const char *what) {
  if (st == CUBLAS_STATUS_SUCCESS) {
    return NULL;
  }
  int32_t code =
      st == CUBLAS_STATUS_ALLOC_FAILED ? WM_ERR_RESOURCE_EXHAUSTED
      : st == CUBLAS_STATUS_INVALID_VALUE || st == CUBLAS_STATUS_NOT_SUPPORTED
          ? WM_ERR_INVALID_ARGUMENT
          : WM_ERR_INTERNAL;
  return cuda_error(code, "%s: %s", what, cb.status_name(st));
}

// Makes |dev|'s cuBLAS handle and kernels when |p| needs them and they are
// not there yet.
static wm_error *prepare_device(wm_device *dev, const wm_op_plan *p) {
  if (!cublas_loaded()) {
    return cuda_error(WM_ERR_UNAVAILABLE, "%s", cublas_problem);
  }
  pthread_mutex_lock(&dev->lock);
  wm_error *e = NULL;
  if (!dev->blas) {
    cuda_blas_t *blas = calloc(1, sizeof(*blas));
    e = blas ? cuda_enter(dev) : wm_host_error_oom();
    if (!e) {
      e = blas_check(cb.create(&blas->handle), "cublasCreate");
      cuda_leave();
    }
    if (!e) {
      pthread_mutex_init(&blas->lock, NULL);
      dev->blas = blas;
    } else {
      free(blas);
    }
  }
  if (!e && !dev->helpers && needs_helpers(p)) {
    cuda_helpers_t *h = calloc(1, sizeof(*h));
    e = h ? cuda_module_build(dev, cuda_blas_kernels_source,
                              strlen(cuda_blas_kernels_source), NULL,
                              &h->module)
          : wm_host_error_oom();
    if (!e && !(e = cuda_enter(dev))) {
      e = cuda_check(
          cuda_drv.module_get_function(&h->im2col, h->module, "wm_cuda_im2col"),
          "wm_cuda_im2col");
      if (!e) {
        e = cuda_check(cuda_drv.module_get_function(&h->add_bias, h->module,
                                                    "wm_cuda_add_bias"),
                       "wm_cuda_add_bias");
      }
      if (!e) {
        e = cuda_check(cuda_drv.module_get_function(&h->broadcast, h->module,
                                                    "wm_cuda_broadcast"),
                       "wm_cuda_broadcast");
      }
      if (e) {
        cuda_drv.module_unload(h->module);
      }
      cuda_leave();
    }
    if (!e) {
      dev->helpers = h;
    } else {
      free(h);
    }
  }
  pthread_mutex_unlock(&dev->lock);
  return e;
}

void cuda_blas_release(wm_device *dev) {
  if (dev->blas) {
    cublasStatus_t st = cb.destroy(dev->blas->handle);
    if (st != CUBLAS_STATUS_SUCCESS) {
      cuda_log(WM_LOG_LEVEL_WARN, "cublasDestroy: %s", cb.status_name(st));
    }
    pthread_mutex_destroy(&dev->blas->lock);
    free(dev->blas);
    dev->blas = NULL;
  }
  if (dev->helpers) {
    cuda_drv.module_unload(dev->helpers->module);
    free(dev->helpers);
    dev->helpers = NULL;
  }
}

static wm_error *op_plan(wm_device *dev, const wm_op_desc *op,
                         wm_op_plan **out_plan, uint64_t *out_ws) {
  *out_plan = NULL;
  *out_ws = 0;
  wm_op_plan *p = malloc(sizeof(*p));
  if (!p) {
    return wm_host_error_oom();
  }
  const char *detail = NULL;
  if (analyze(op, p, &detail) != WM_WHY_NONE) {
    free(p);
    return cuda_error(WM_ERR_UNIMPLEMENTED, "node \"%s\" (%s): %s",
                      op->name ? op->name : "", op->op_type ? op->op_type : "?",
                      detail);
  }
  wm_error *e = prepare_device(dev, p);
  if (e) {
    free(p);
    return e;
  }
  p->dev = dev;
  // What NVIDIA recommends lending cuBLAS: 32 MiB from Hopper on, else 4.
  p->blas_bytes = (uint64_t)(dev->target->cc >= 90 ? 32 : 4) << 20;
  *out_ws = WS_ALIGN + p->blas_bytes + p->col_bytes;
  *out_plan = p;
  return NULL;
}

static void op_plan_destroy(wm_op_plan *plan) {
  free(plan);
}

// The device address of view |v| after checking it against the planned
// layout |want| and its buffer.
static wm_error *view_ptr(const wm_op_plan *p, const wm_buffer_view *v,
                          const wm_tensor_desc *want, const char *what,
                          uint32_t index, CUdeviceptr *out) {
  *out = 0;
  if (!v->buffer || v->buffer->dev != p->dev) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT,
                      "%s %u has no buffer on this device", what, index);
  }
  const wm_tensor_desc *d = &v->desc;
  if (d->dtype != want->dtype || d->rank != want->rank ||
      memcmp(d->dims, want->dims, d->rank * sizeof(int64_t)) != 0) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT,
                      "%s %u differs from the planned layout", what, index);
  }
  uint64_t bytes = (uint64_t)count_of(d) * sizeof(float);
  if (v->offset > v->buffer->size || bytes > v->buffer->size - v->offset) {
    return cuda_error(WM_ERR_OUT_OF_RANGE,
                      "%s %u of %llu bytes overruns its buffer of %llu at "
                      "offset %llu",
                      what, index, (unsigned long long)bytes,
                      (unsigned long long)v->buffer->size,
                      (unsigned long long)v->offset);
  }
  *out = v->buffer->ptr + v->offset;
  return NULL;
}

// Runs |f| over |total| elements in 256-thread blocks on |s|.
static wm_error *launch_1d(CUfunction f, CUstream s, int64_t total,
                           void **params, const char *what) {
  int64_t blocks = (total + 255) / 256;
  if (blocks > (1 << 20)) {
    blocks = 1 << 20;  // the kernels loop over the rest
  }
  if (blocks == 0) {
    return NULL;
  }
  return cuda_check(cuda_drv.launch_kernel(f, (unsigned)blocks, 1, 1, 256, 1, 1,
                                           0, s, params, NULL),
                    "%s", what);
}

// The device address |ptr| as cuBLAS's float pointer.
static float *fp(CUdeviceptr ptr) {
  return (float *)(uintptr_t)ptr;
}

// Row-major y[m, n] = alpha * op(a)[m, k] op(b)[k, n] + beta * y, |count|
// times with the given element strides, as cuBLAS's column-major
// y^T = op(b)^T op(a)^T.
static wm_error *gemm(cublasHandle_t h, const wm_op_plan *p, bool ta, bool tb,
                      float alpha, CUdeviceptr a, int64_t a_stride,
                      CUdeviceptr b, int64_t b_stride, float beta,
                      CUdeviceptr y, int64_t y_stride, int64_t count) {
  int m = (int)p->m, n = (int)p->n, k = (int)p->k;
  int lda = ta ? m : k, ldb = tb ? k : n;
  cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (count == 1) {
    return blas_check(cb.sgemm(h, ob, oa, n, m, k, &alpha, fp(b), ldb, fp(a),
                               lda, &beta, fp(y), n),
                      "cublasSgemm");
  }
  return blas_check(cb.sgemm_strided_batched(
                        h, ob, oa, n, m, k, &alpha, fp(b), ldb, b_stride, fp(a),
                        lda, a_stride, &beta, fp(y), n, y_stride, (int)count),
                    "cublasSgemmStridedBatched");
}

static wm_error *run_matmul(cublasHandle_t h, CUstream s, const wm_op_plan *p,
                            const CUdeviceptr *in, CUdeviceptr y) {
  int64_t outer = 1;
  for (int32_t i = 0; i < p->outer_rank; i++) {
    outer *= p->batch_dims[i];
  }
  if (p->k == 0) {
    return cuda_check(
        cuda_drv.memset_d8_async(
            y, 0, (size_t)(outer * p->inner * p->m * p->n * sizeof(float)), s),
        "MatMul: zeroing the output");
  }
  wm_error *e = NULL;
  for (int64_t o = 0; !e && o < outer; o++) {
    int64_t a_off = 0, b_off = 0, rest = o;
    for (int32_t i = p->outer_rank - 1; i >= 0; i--) {
      int64_t idx = rest % p->batch_dims[i];
      rest /= p->batch_dims[i];
      a_off += idx * p->a_steps[i];
      b_off += idx * p->b_steps[i];
    }
    int64_t y_off = o * p->inner * p->m * p->n;
    e = gemm(h, p, false, false, 1.0f, in[0] + a_off * sizeof(float),
             p->a_stride, in[1] + b_off * sizeof(float), p->b_stride, 0.0f,
             y + y_off * sizeof(float), p->m * p->n, p->inner);
  }
  return e;
}

static wm_error *run_gemm(cublasHandle_t h, CUstream s, const wm_op_plan *p,
                          const CUdeviceptr *in, CUdeviceptr y) {
  bool with_c = p->n_in > 2 && p->beta != 0.0f;
  int64_t total = p->m * p->n;
  wm_error *e = NULL;
  if (with_c) {
    float scale = p->beta;
    CUdeviceptr c = in[2];
    int64_t n = p->n, rows = p->c_rows, cols = p->c_cols;
    void *params[] = {&y, &c, &n, &rows, &cols, &scale, &total};
    e = launch_1d(p->dev->helpers->broadcast, s, total, params,
                  "Gemm: broadcasting C");
  } else if (p->k == 0) {
    e = cuda_check(
        cuda_drv.memset_d8_async(y, 0, (size_t)total * sizeof(float), s),
        "Gemm: zeroing the output");
  }
  if (e || p->k == 0) {
    return e;
  }
  return gemm(h, p, p->trans_a, p->trans_b, p->alpha, in[0], 0, in[1], 0,
              with_c ? 1.0f : 0.0f, y, 0, 1);
}

static wm_error *run_conv(cublasHandle_t h, CUstream s, const wm_op_plan *p,
                          const CUdeviceptr *in, CUdeviceptr y,
                          CUdeviceptr col) {
  const cuda_helpers_t *hk = p->dev->helpers;
  int64_t plane = p->channels * p->height * p->width;  // X per image
  int64_t m_all = p->m * p->groups, y_plane = m_all * p->n;
  int64_t total = p->images * y_plane;
  wm_error *e = NULL;
  if (p->k == 0) {
    e = cuda_check(
        cuda_drv.memset_d8_async(y, 0, (size_t)total * sizeof(float), s),
        "Conv: zeroing the output");
  } else if (p->direct && p->groups == 1) {
    // Every image at once: Y_i = W X_i.
    e = gemm(h, p, false, false, 1.0f, in[1], 0, in[0], plane, 0.0f, y, y_plane,
             p->images);
  } else {
    for (int64_t i = 0; !e && i < p->images; i++) {
      CUdeviceptr x = in[0] + (uint64_t)(i * plane) * sizeof(float);
      if (!p->direct) {
        int64_t c = p->channels, hh = p->height, ww = p->width;
        int64_t kh = p->kernel_h, kw = p->kernel_w, oh = p->out_h;
        int64_t ow = p->out_w, sh = p->stride_h, sw = p->stride_w;
        int64_t dh = p->dilation_h, dw = p->dilation_w, ph = p->pad_top;
        int64_t pw = p->pad_left;
        void *params[] = {&col, &x,  &c,  &hh, &ww, &kh, &kw, &oh,
                          &ow,  &sh, &sw, &dh, &dw, &ph, &pw};
        e = launch_1d(hk->im2col, s, c * kh * kw * p->n, params,
                      "Conv: im2col");
        x = col;
      }
      // Y_g = W_g col_g for every group g, the groups strided.
      if (!e) {
        e = gemm(h, p, false, false, 1.0f, in[1], p->m * p->k, x, p->k * p->n,
                 0.0f, y + (uint64_t)(i * y_plane) * sizeof(float), p->m * p->n,
                 p->groups);
      }
    }
  }
  if (!e && p->n_in > 2) {
    CUdeviceptr b = in[2];
    int64_t n = p->n;
    void *params[] = {&y, &b, &m_all, &n, &total};
    e = launch_1d(hk->add_bias, s, total, params, "Conv: adding the bias");
  }
  return e;
}

static wm_error *op_run(wm_stream *stream, wm_op_plan *p,
                        const wm_buffer_view *in, uint32_t n_in,
                        const wm_buffer_view *out, uint32_t n_out,
                        const wm_buffer_view *workspace) {
  static const char *const names[] = {"MatMul", "Gemm", "Conv"};
  const char *name = names[p->kind];
  if (stream->dev != p->dev || n_in < p->n_in || n_out != 1 || !in || !out) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT,
                      "%s: op_run on another device, or with %u inputs and "
                      "%u outputs for a plan of %u and 1",
                      name, n_in, n_out, p->n_in);
  }
  CUdeviceptr ptrs[3] = {0}, y = 0;
  wm_error *e = NULL;
  for (uint32_t i = 0; !e && i < p->n_in; i++) {
    e = view_ptr(p, &in[i], &p->in[i], "input", i, &ptrs[i]);
  }
  if (!e) {
    e = view_ptr(p, &out[0], &p->out, "output", 0, &y);
  }
  if (e || count_of(&p->out) == 0) {
    return e;
  }
  // The workspace: cuBLAS's part, then the im2col columns.
  CUdeviceptr ws = 0;
  uint64_t have = 0;
  if (workspace && workspace->buffer && workspace->buffer->dev == p->dev &&
      workspace->offset <= workspace->buffer->size) {
    ws = workspace->buffer->ptr + workspace->offset;
    have = (uint64_t)count_of(&workspace->desc);
    uint64_t room = workspace->buffer->size - workspace->offset;
    have = have < room ? have : room;
    uint64_t skip = (WS_ALIGN - ws % WS_ALIGN) % WS_ALIGN;
    have = have > skip ? have - skip : 0;
    ws += skip;
  }
  bool lend = have >= p->blas_bytes + p->col_bytes;
  if (p->col_bytes && !lend) {
    return cuda_error(
        WM_ERR_FAILED_PRECONDITION,
        "%s: the workspace has %llu usable bytes, the plan "
        "asked for %llu",
        name, (unsigned long long)have,
        (unsigned long long)(WS_ALIGN + p->blas_bytes + p->col_bytes));
  }
  cuda_blas_t *blas = p->dev->blas;
  pthread_mutex_lock(&blas->lock);
  if (!(e = cuda_enter(p->dev))) {
    // Setting the stream puts cuBLAS back on its own workspace; lend ours
    // after it.
    e = blas_check(cb.set_stream(blas->handle, stream->stream),
                   "cublasSetStream");
    if (!e && lend) {
      e = blas_check(
          cb.set_workspace(blas->handle, fp(ws), (size_t)p->blas_bytes),
          "cublasSetWorkspace");
    }
    if (!e) {
      switch (p->kind) {
        case OP_MATMUL:
          e = run_matmul(blas->handle, stream->stream, p, ptrs, y);
          break;
        case OP_GEMM:
          e = run_gemm(blas->handle, stream->stream, p, ptrs, y);
          break;
        default:
          e = run_conv(blas->handle, stream->stream, p, ptrs, y,
                       ws + p->blas_bytes);
          break;
      }
    }
    cuda_leave();
  }
  pthread_mutex_unlock(&blas->lock);
  if (e) {
    wm_error *annotated = cuda_error(wm_host_error_code(e), "%s: %s", name,
                                     wm_host_error_message(e));
    wm_host_error_destroy(e);
    e = annotated;
  }
  return e;
}

const wm_library_tier cuda_library_tier = {
    .struct_size = sizeof(wm_library_tier),
    .op_query = op_query,
    .op_plan = op_plan,
    .op_run = op_run,
    .op_plan_destroy = op_plan_destroy,
};
