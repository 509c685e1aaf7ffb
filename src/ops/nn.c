// Operators of the nn family: convolution (plain, transposed, deformable),
// Col2Im, pooling, normalization, dropout and the classification losses.
// Kernels are reference loops that convert to double, accumulate in double and
// convert back once.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

// Spatial dims of an N x C x D1 x ... x Dn tensor.
enum { MAX_SPATIAL = WM_MAX_RANK - 2 };

// ------------------------------------------------------------ attributes

// ---------------------------------------------------------- small helpers

static bool add_i64(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_add_overflow(a, b, out);
}

// Floor division by 2 (total padding may be negative for ConvTranspose).
static int64_t floor_half(int64_t v) {
  return v >= 0 ? v / 2 : -((-v + 1) / 2);
}

// Product of dims known to come from an allocated tensor.
static size_t prod(const int64_t *dims, int32_t n) {
  size_t p = 1;
  for (int32_t i = 0; i < n; i++) {
    p *= (size_t)dims[i];
  }
  return p;
}

// Product of dims as a double for costs; -1 when any is unknown.
static double prod_f(const int64_t *dims, int32_t n) {
  double p = 1;
  for (int32_t i = 0; i < n; i++) {
    if (dims[i] < 0) {
      return -1;
    }
    p *= (double)dims[i];
  }
  return p;
}

static double numel_f(const wm_shape_t *s) {
  return s->rank < 0 ? -1 : prod_f(s->dims, s->rank);
}

// Requires input |i|, when its dtype is known, to match input 0.
static wm_status_t check_same_dtype(const wm_op_ctx_t *ctx, int32_t i) {
  wm_dtype_t a = wm_op_in_dtype(ctx, 0), b = wm_op_in_dtype(ctx, i);
  if (a != WM_DTYPE_UNDEFINED && b != WM_DTYPE_UNDEFINED && a != b) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d has dtype %s, want %s like input 0", i,
                       wm_dtype_name(b), wm_dtype_name(a));
  }
  return NULL;
}

// Requires input |i|, when its dtype is known, to be a float type.
static wm_status_t check_float_dtype(const wm_op_ctx_t *ctx, int32_t i) {
  wm_dtype_t d = wm_op_in_dtype(ctx, i);
  if (d != WM_DTYPE_UNDEFINED && !wm_dtype_is_float(d)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d has dtype %s, want a float type", i,
                       wm_dtype_name(d));
  }
  return NULL;
}

// Requires input |i| to have rank within [lo, hi] when its rank is known.
static wm_status_t check_rank(const wm_op_ctx_t *ctx, int32_t i, int32_t lo,
                              int32_t hi) {
  int32_t r = wm_op_in_shape(ctx, i)->rank;
  if (r >= 0 && (r < lo || r > hi)) {
    if (lo == hi) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input %d has rank %d, want %d",
                         i, r, lo);
    }
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d has rank %d, want %d to %d", i, r, lo, hi);
  }
  return NULL;
}

// Requires input |i|, when present with a known shape, to be a vector of
// |n| elements (n < 0: unknown, only the rank is checked).
static wm_status_t check_vector(const wm_op_ctx_t *ctx, int32_t i,
                                const char *what, int64_t n) {
  const wm_shape_t *s = wm_op_in_shape(ctx, i);
  if (!wm_op_has_input(ctx, i) || s->rank < 0) {
    return NULL;
  }
  char buf[160];
  if (s->rank != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (%s) has shape %s, want rank 1", i, what,
                       wm_shape_format(s, buf, sizeof(buf)));
  }
  if (n >= 0 && s->dims[0] >= 0 && s->dims[0] != n) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (%s) has shape %s, want [%lld]", i, what,
                       wm_shape_format(s, buf, sizeof(buf)), (long long)n);
  }
  return NULL;
}

// Copies a tensor into a heap array of doubles.
static wm_status_t load_f64(const wm_op_ctx_t *ctx, const wm_tensor_t *t,
                            double **out) {
  *out = NULL;
  size_t bytes;
  if (!wm_checked_mul(t->count ? t->count : 1, sizeof(double), &bytes)) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "tensor of %zu elements",
                       t->count);
  }
  double *v = wm_malloc(bytes);
  if (!v) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for %zu elements", t->count);
  }
  for (size_t i = 0; i < t->count; i++) {
    v[i] = wm_tensor_get_f64(t, i);
  }
  *out = v;
  return NULL;
}

// Allocates |n| zeroed doubles.
static wm_status_t alloc_f64(const wm_op_ctx_t *ctx, size_t n, double **out) {
  *out = wm_calloc(n ? n : 1, sizeof(double));
  if (!*out) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for %zu elements", n);
  }
  return NULL;
}

static void store_f64(wm_tensor_t *t, const double *v) {
  for (size_t i = 0; i < t->count; i++) {
    wm_tensor_set_f64(t, i, v[i]);
  }
}

// Loads input |i| (or NULL when omitted) as doubles.
static wm_status_t load_input(const wm_op_ctx_t *ctx, int32_t i, double **out) {
  *out = NULL;
  if (!wm_op_has_input(ctx, i) || !ctx->in[i]) {
    return NULL;
  }
  return load_f64(ctx, ctx->in[i], out);
}

// ------------------------------------------------------- window geometry

typedef enum auto_pad {
  AUTO_PAD_NOTSET = 0,
  AUTO_PAD_SAME_UPPER = 1,
  AUTO_PAD_SAME_LOWER = 2,
  AUTO_PAD_VALID = 3,
} auto_pad_t;

// The sliding window shared by Conv, ConvTranspose and the pools.
typedef struct window {
  int32_t nsp;                     // spatial dims
  int64_t kernel[MAX_SPATIAL];     // taps per dim; -1 = unknown
  int64_t strides[MAX_SPATIAL];    // >= 1
  int64_t dilations[MAX_SPATIAL];  // >= 1
  int64_t pads[2 * MAX_SPATIAL];   // begins, then ends
  auto_pad_t auto_pad;             // how pads are derived
  bool ceil_mode;                  // round output size up
} window_t;

static wm_status_t parse_auto_pad(const wm_op_ctx_t *ctx, auto_pad_t *out) {
  const char *s;
  WM_RETURN_IF_ERROR(wm_op_attr_string(ctx, "auto_pad", "NOTSET", &s));
  if (!*s || strcmp(s, "NOTSET") == 0) {
    *out = AUTO_PAD_NOTSET;
  } else if (strcmp(s, "SAME_UPPER") == 0) {
    *out = AUTO_PAD_SAME_UPPER;
  } else if (strcmp(s, "SAME_LOWER") == 0) {
    *out = AUTO_PAD_SAME_LOWER;
  } else if (strcmp(s, "VALID") == 0) {
    *out = AUTO_PAD_VALID;
  } else {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute auto_pad is \"%s\", want NOTSET, "
                       "SAME_UPPER, SAME_LOWER or VALID",
                       s);
  }
  return NULL;
}

// Reads kernel_shape, strides, dilations, pads, auto_pad and ceil_mode
// for |nsp| spatial dims. |wkernel| holds the kernel dims of the weight
// (entries -1 when unknown) or is NULL for pools, where kernel_shape is
// required.
static wm_status_t window_parse(const wm_op_ctx_t *ctx, int32_t nsp,
                                const int64_t *wkernel, window_t *w) {
  memset(w, 0, sizeof(*w));
  if (nsp < 0 || nsp > MAX_SPATIAL) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "%d spatial dims, want 0 to %d",
                       nsp, MAX_SPATIAL);
  }
  w->nsp = nsp;
  bool has_kernel;
  WM_RETURN_IF_ERROR(wm_op_attr_ints_n(ctx, "kernel_shape", nsp, -1, 1,
                                       w->kernel, &has_kernel));
  if (!has_kernel && !wkernel) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute kernel_shape is required");
  }
  if (wkernel) {
    for (int32_t i = 0; i < nsp; i++) {
      if (wkernel[i] == 0) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "weight kernel dim %d is 0, want at least 1", i);
      }
      if (has_kernel && wkernel[i] >= 0 && wkernel[i] != w->kernel[i]) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "attribute kernel_shape[%d] is %lld but the "
                           "weight has %lld",
                           i, (long long)w->kernel[i], (long long)wkernel[i]);
      }
      if (!has_kernel) {
        w->kernel[i] = wkernel[i];
      }
    }
  }
  WM_RETURN_IF_ERROR(
      wm_op_attr_ints_n(ctx, "strides", nsp, 1, 1, w->strides, NULL));
  WM_RETURN_IF_ERROR(
      wm_op_attr_ints_n(ctx, "dilations", nsp, 1, 1, w->dilations, NULL));
  WM_RETURN_IF_ERROR(parse_auto_pad(ctx, &w->auto_pad));
  WM_RETURN_IF_ERROR(
      wm_op_attr_ints_n(ctx, "pads", 2 * nsp, 0, 0, w->pads, NULL));
  if (w->auto_pad != AUTO_PAD_NOTSET) {
    memset(w->pads, 0, sizeof(w->pads));
  }
  int64_t ceil_mode;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "ceil_mode", 0, &ceil_mode));
  w->ceil_mode = ceil_mode != 0;
  return NULL;
}

// Kernel extent (k - 1) * d + 1 of dim |i|; false on overflow.
static bool window_extent(const window_t *w, int32_t i, int64_t *out) {
  int64_t e;
  if (!wm_checked_mul_i64(w->kernel[i] - 1, w->dilations[i], &e) ||
      !add_i64(e, 1, out)) {
    return false;
  }
  return true;
}

// The output size and pads of Conv and the pools for input spatial dims
// |in| (-1 = unknown): fills out[] and, for auto_pad, w->pads.
static wm_status_t window_forward(const wm_op_ctx_t *ctx, window_t *w,
                                  const int64_t *in, int64_t *out) {
  for (int32_t i = 0; i < w->nsp; i++) {
    out[i] = -1;
    if (in[i] < 0 || w->kernel[i] < 0) {
      continue;
    }
    int64_t ext, s = w->strides[i];
    if (!window_extent(w, i, &ext)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "kernel %lld with dilation %lld overflows in "
                         "spatial dim %d",
                         (long long)w->kernel[i], (long long)w->dilations[i],
                         i);
    }
    if (w->auto_pad == AUTO_PAD_SAME_UPPER ||
        w->auto_pad == AUTO_PAD_SAME_LOWER) {
      int64_t o = in[i] / s + (in[i] % s != 0);
      // (o - 1) * s <= in - 1 here, so only ext can overflow the total.
      int64_t total;
      if (!add_i64((o > 0 ? o - 1 : 0) * s - in[i], ext, &total)) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "padding overflows in spatial dim %d", i);
      }
      if (total < 0) {
        total = 0;
      }
      int64_t begin =
          w->auto_pad == AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
      w->pads[i] = begin;
      w->pads[w->nsp + i] = total - begin;
      out[i] = o;
      continue;
    }
    int64_t padded;
    if (!add_i64(in[i], w->pads[i], &padded) ||
        !add_i64(padded, w->pads[w->nsp + i], &padded)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "pads %lld and %lld overflow in spatial dim %d",
                         (long long)w->pads[i], (long long)w->pads[w->nsp + i],
                         i);
    }
    if (padded < ext) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "kernel extent %lld (kernel %lld, dilation %lld) "
                         "is larger than the padded input %lld in spatial "
                         "dim %d",
                         (long long)ext, (long long)w->kernel[i],
                         (long long)w->dilations[i], (long long)padded, i);
    }
    int64_t span = padded - ext;
    int64_t o = span / s + 1;
    if (w->ceil_mode && span % s != 0) {
      // The extra window is kept unless it would start in the end
      // padding.
      int64_t start;
      if (wm_checked_mul_i64(o, s, &start) && start < in[i] + w->pads[i]) {
        o++;
      }
    }
    out[i] = o;
  }
  return NULL;
}

// The resolved window: kernel_shape, strides, dilations and pads (begins,
// then ends) all explicit, auto_pad applied.
static wm_status_t window_params(wm_op_ctx_t *ctx, const window_t *w,
                                 wm_op_params_t *out) {
  WM_RETURN_IF_ERROR(
      wm_op_param_ints(ctx, out, "kernel_shape", w->kernel, w->nsp));
  WM_RETURN_IF_ERROR(wm_op_param_ints(ctx, out, "strides", w->strides, w->nsp));
  WM_RETURN_IF_ERROR(
      wm_op_param_ints(ctx, out, "dilations", w->dilations, w->nsp));
  return wm_op_param_ints(ctx, out, "pads", w->pads, 2 * w->nsp);
}

// Offsets of every kernel tap (coordinate times dilation), nsp per tap.
static wm_status_t window_taps(const wm_op_ctx_t *ctx, const window_t *w,
                               int64_t **out_taps, size_t *out_count) {
  *out_taps = NULL;
  size_t n = 1, bytes;
  for (int32_t i = 0; i < w->nsp; i++) {
    if (!wm_checked_mul(n, (size_t)w->kernel[i], &n)) {
      return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "kernel is too large");
    }
  }
  if (!wm_checked_mul(n, (size_t)(w->nsp ? w->nsp : 1) * sizeof(int64_t),
                      &bytes)) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "kernel is too large");
  }
  int64_t *taps = wm_malloc(bytes ? bytes : 1);
  if (!taps) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for %zu kernel taps", n);
  }
  int64_t pos[MAX_SPATIAL] = {0};
  for (size_t t = 0; t < n; t++) {
    for (int32_t i = 0; i < w->nsp; i++) {
      taps[t * (size_t)w->nsp + (size_t)i] = pos[i] * w->dilations[i];
    }
    for (int32_t i = w->nsp - 1; i >= 0; i--) {
      if (++pos[i] < w->kernel[i]) {
        break;
      }
      pos[i] = 0;
    }
  }
  *out_taps = taps;
  *out_count = n;
  return NULL;
}

// Advances the odometer |pos| over |dims|.
static void odometer_next(int64_t *pos, const int64_t *dims, int32_t n) {
  for (int32_t i = n - 1; i >= 0; i--) {
    if (++pos[i] < dims[i]) {
      return;
    }
    pos[i] = 0;
  }
}

// Buffers of Conv and ConvTranspose: X, W and B (NULL when omitted) as
// doubles, the output and the kernel taps.
typedef struct conv_bufs {
  double *x;      // input 0
  double *k;      // input 1, the weights
  double *b;      // input 2, the bias, or NULL
  double *y;      // output 0
  int64_t *taps;  // kernel tap offsets, nsp per tap
  size_t nt;      // number of taps
} conv_bufs_t;

static void conv_bufs_free(conv_bufs_t *bf) {
  free(bf->x);
  free(bf->k);
  free(bf->b);
  free(bf->y);
  free(bf->taps);
}

// Loads the inputs of Conv or ConvTranspose and allocates the output;
// release with conv_bufs_free (also on failure).
static wm_status_t conv_bufs_load(wm_op_ctx_t *ctx, const window_t *w,
                                  conv_bufs_t *out) {
  memset(out, 0, sizeof(*out));
  wm_status_t st = load_f64(ctx, ctx->in[0], &out->x);
  if (!st) {
    st = load_f64(ctx, ctx->in[1], &out->k);
  }
  if (!st) {
    st = load_input(ctx, 2, &out->b);
  }
  if (!st) {
    st = alloc_f64(ctx, ctx->out[0]->count, &out->y);
  }
  if (!st) {
    st = window_taps(ctx, w, &out->taps, &out->nt);
  }
  return st;
}

// Flat offset in spatial dims |sp| that kernel tap |tap| reads (Conv) or
// writes (ConvTranspose) at window position |pos|; false in the padding.
static bool tap_offset(const window_t *w, const int64_t *pos,
                       const int64_t *tap, const int64_t *sp, size_t *out) {
  size_t off = 0;
  for (int32_t i = 0; i < w->nsp; i++) {
    int64_t q = pos[i] * w->strides[i] - w->pads[i] + tap[i];
    if (q < 0 || q >= sp[i]) {
      return false;
    }
    off = off * (size_t)sp[i] + (size_t)q;
  }
  *out = off;
  return true;
}

// ------------------------------------------------------------------ Conv

// Checks X and W of Conv and ConvTranspose (dtypes, ranks) and parses
// the window over their spatial dims into |w| and |in_sp| (-1 unknown);
// *out_known_rank is false, and nothing parsed, when both ranks are unknown.
static wm_status_t conv_window(wm_op_ctx_t *ctx, window_t *w, int64_t *in_sp,
                               bool *out_known_rank) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ws = wm_op_in_shape(ctx, 1);
  *out_known_rank = false;
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, 1));
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, 2));
  WM_RETURN_IF_ERROR(check_rank(ctx, 0, 3, WM_MAX_RANK));
  WM_RETURN_IF_ERROR(check_rank(ctx, 1, 3, WM_MAX_RANK));
  if (xs->rank >= 0 && ws->rank >= 0 && xs->rank != ws->rank) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has rank %d but weight has rank %d", xs->rank,
                       ws->rank);
  }
  int32_t rank = xs->rank >= 0 ? xs->rank : ws->rank;
  if (rank < 0) {
    return NULL;
  }
  *out_known_rank = true;
  int32_t nsp = rank - 2;
  int64_t wk[MAX_SPATIAL];
  for (int32_t i = 0; i < nsp; i++) {
    wk[i] = ws->rank >= 0 ? ws->dims[2 + i] : -1;
    in_sp[i] = xs->rank >= 0 ? xs->dims[2 + i] : -1;
  }
  WM_RETURN_IF_ERROR(window_parse(ctx, nsp, wk, w));
  return NULL;
}

// Shapes of Conv: X [N, C, D...], W [M, C/group, K...], B [M].
static wm_status_t conv_setup(wm_op_ctx_t *ctx, window_t *w, int64_t *in_sp,
                              int64_t *out_sp, bool *out_known_rank) {
  WM_RETURN_IF_ERROR(conv_window(ctx, w, in_sp, out_known_rank));
  if (!*out_known_rank) {
    return NULL;
  }
  return window_forward(ctx, w, in_sp, out_sp);
}

// Checks a grouped convolution's channels: input 0 has C = weight dim 1
// x |group| channels and the weight's output channels divide by |group|;
// unknown dims pass. *out_c and *out_m get C and M (-1 when unknown).
static wm_status_t check_groups(const wm_op_ctx_t *ctx, const wm_shape_t *xs,
                                const wm_shape_t *ws, int64_t group,
                                int64_t *out_c, int64_t *out_m) {
  int64_t c = xs->rank >= 0 ? xs->dims[1] : -1;
  int64_t m = ws->rank >= 0 ? ws->dims[0] : -1;
  int64_t cg = ws->rank >= 0 ? ws->dims[1] : -1;
  int64_t want;
  *out_c = c;
  *out_m = m;
  if (c >= 0 && cg >= 0 &&
      (!wm_checked_mul_i64(cg, group, &want) || want != c)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has %lld channels but weight has %lld "
                       "channels per group x group %lld",
                       (long long)c, (long long)cg, (long long)group);
  }
  if (m >= 0 && m % group != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "weight has %lld output channels, not a multiple of "
                       "group %lld",
                       (long long)m, (long long)group);
  }
  return NULL;
}

static wm_status_t conv_infer(wm_op_ctx_t *ctx) {
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL];
  bool known;
  WM_RETURN_IF_ERROR(conv_setup(ctx, &w, in_sp, out_sp, &known));
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (!known) {
    wm_op_set_out_unknown(ctx, 0, dt);
    return NULL;
  }
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ws = wm_op_in_shape(ctx, 1);
  int64_t group;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "group", 1, &group));
  if (group < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute group is %lld, want at least 1",
                       (long long)group);
  }
  int64_t c, m;
  WM_RETURN_IF_ERROR(check_groups(ctx, xs, ws, group, &c, &m));
  WM_RETURN_IF_ERROR(check_vector(ctx, 2, "bias", m));
  wm_shape_t os;
  os.rank = w.nsp + 2;
  os.dims[0] = xs->rank >= 0 ? xs->dims[0] : -1;
  os.dims[1] = m;
  for (int32_t i = 0; i < w.nsp; i++) {
    os.dims[2 + i] = out_sp[i];
  }
  return wm_op_set_out_checked(ctx, 0, dt, &os);
}

static wm_status_t conv_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(conv_infer(ctx));
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL];
  bool known;
  WM_RETURN_IF_ERROR(conv_setup(ctx, &w, in_sp, out_sp, &known));
  const wm_tensor_t *xt = ctx->in[0], *wt = ctx->in[1];
  int64_t group;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "group", 1, &group));
  size_t n = (size_t)xt->shape.dims[0], c = (size_t)xt->shape.dims[1];
  size_t m = (size_t)wt->shape.dims[0], cg = (size_t)wt->shape.dims[1];
  size_t mg = m / (size_t)group;
  size_t in_n = prod(in_sp, w.nsp), out_n = prod(out_sp, w.nsp);
  conv_bufs_t bf;
  wm_status_t st = conv_bufs_load(ctx, &w, &bf);
  if (st) {
    goto done;
  }
  const double *x = bf.x, *k = bf.k, *b = bf.b;
  double *y = bf.y;
  size_t nt = bf.nt;
  int32_t nsp = w.nsp;
  for (size_t in = 0; in < n; in++) {
    for (size_t om = 0; om < m; om++) {
      size_t g = om / mg;
      const double *xg = x + (in * c + g * cg) * in_n;
      const double *kg = k + om * cg * nt;
      double *yp = y + (in * m + om) * out_n;
      int64_t pos[MAX_SPATIAL] = {0};
      for (size_t o = 0; o < out_n; o++, odometer_next(pos, out_sp, nsp)) {
        double acc = b ? b[om] : 0.0;
        for (size_t t = 0; t < nt; t++) {
          size_t off;
          if (!tap_offset(&w, pos, bf.taps + t * (size_t)nsp, in_sp, &off)) {
            continue;
          }
          for (size_t ic = 0; ic < cg; ic++) {
            acc += xg[ic * in_n + off] * kg[ic * nt + t];
          }
        }
        yp[o] = acc;
      }
    }
  }
  store_f64(ctx->out[0], y);
done:
  conv_bufs_free(&bf);
  return st;
}

static void conv_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  const wm_shape_t *ys = &ctx->out_types[0].shape;
  const wm_shape_t *ws = wm_op_in_shape(ctx, 1);
  double outs = numel_f(ys);
  double per = ws->rank >= 2 ? prod_f(ws->dims + 1, ws->rank - 1) : -1;
  if (outs < 0 || per < 0) {
    return;
  }
  out->macs = outs * per;
  out->flops = 2 * out->macs + (wm_op_has_input(ctx, 2) ? outs : 0);
}

// The definition of a float convolution: the output seen as
// [N, G, M/G, O...] (its own bytes), X as [N, G, C/G, I...] read at
// o * stride + k * dilation - pad (guarded where padded), W as
// [G, M/G, C/G, K...], the bias in the epilogue. Its columns are the
// output pixels, its depth the channels and taps of a group: the packed
// template's implicit GEMM (depthwise, one row per group, runs as the loop
// nest).
static wm_status_t conv_define(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL], group;
  bool known;
  WM_RETURN_IF_ERROR(conv_setup((wm_op_ctx_t *)ctx, &w, in_sp, out_sp, &known));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "group", 1, &group));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0), *ws = wm_op_in_shape(ctx, 1);
  bool ok =
      known && 4 + 2 * w.nsp <= WM_GEN_MAX_AXES && w.nsp + 3 <= WM_MAX_RANK;
  for (int32_t i = 0; ok && i < ctx->n_in; i++) {
    ok =
        !wm_op_has_input(ctx, i) || (wm_op_in_dtype(ctx, i) == WM_DTYPE_FLOAT &&
                                     wm_shape_is_known(wm_op_in_shape(ctx, i)));
  }
  if (!ok || ctx->out_types[0].dtype != WM_DTYPE_FLOAT) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 of "
                       "known shape, at most 4 spatial dims)");
  }
  int32_t nsp = w.nsp;
  int64_t mg = ws->dims[0] / group, cg = ws->dims[1];
  int64_t yd[WM_MAX_RANK] = {xs->dims[0], group, mg};
  for (int32_t i = 0; i < nsp; i++) {
    yd[3 + i] = out_sp[i];
  }
  WM_RETURN_IF_ERROR(wm_gen_begin(out, "Conv", 3 + nsp, yd, NULL));
  int32_t ac, ak[MAX_SPATIAL];
  WM_RETURN_IF_ERROR(wm_gen_reduce_axis(out, "c", cg, &ac));
  for (int32_t i = 0; i < nsp; i++) {
    char name[8];
    snprintf(name, sizeof(name), "k%d", (int)i);
    WM_RETURN_IF_ERROR(wm_gen_reduce_axis(out, name, ws->dims[2 + i], &ak[i]));
  }
  wm_gen_access_t x;
  memset(&x, 0, sizeof(x));
  int64_t xd[WM_MAX_RANK] = {xs->dims[0], group, cg};
  x.coef[0][0] = 1;
  x.coef[1][1] = 1;
  x.coef[2][ac] = 1;
  for (int32_t i = 0; i < nsp; i++) {
    xd[3 + i] = in_sp[i];
    x.coef[3 + i][3 + i] = w.strides[i];
    x.coef[3 + i][ak[i]] = w.dilations[i];
    x.off[3 + i] = -w.pads[i];
    x.guard |= w.pads[i] != 0 || w.pads[nsp + i] != 0;
  }
  int32_t lx, lw, body, epi = -1;
  WM_RETURN_IF_ERROR(wm_gen_input_access(out, "X", 3 + nsp, xd, NULL, &x, &lx));
  out->tensors[out->n_tensors - 1].operand = 0;
  wm_gen_access_t k;
  memset(&k, 0, sizeof(k));
  int64_t kd[WM_MAX_RANK] = {group, mg, cg};
  k.coef[0][1] = 1;
  k.coef[1][2] = 1;
  k.coef[2][ac] = 1;
  for (int32_t i = 0; i < nsp; i++) {
    kd[3 + i] = ws->dims[2 + i];
    k.coef[3 + i][ak[i]] = 1;
  }
  WM_RETURN_IF_ERROR(wm_gen_input_access(out, "W", 3 + nsp, kd, NULL, &k, &lw));
  out->tensors[out->n_tensors - 1].operand = 1;
  WM_RETURN_IF_ERROR(wm_gen_binary(out, WM_GEN_MUL, lx, lw, &body));
  if (wm_op_has_input(ctx, 2)) {
    wm_gen_access_t b;
    memset(&b, 0, sizeof(b));
    int64_t bd[2] = {group, mg};
    b.coef[0][1] = 1;
    b.coef[1][2] = 1;
    int32_t lb, acc;
    WM_RETURN_IF_ERROR(wm_gen_input_access(out, "B", 2, bd, NULL, &b, &lb));
    out->tensors[out->n_tensors - 1].operand = 2;
    WM_RETURN_IF_ERROR(wm_gen_acc(out, &acc));
    WM_RETURN_IF_ERROR(wm_gen_binary(out, WM_GEN_ADD, acc, lb, &epi));
  }
  return wm_gen_finish_reduce(out, WM_GEN_ADD, 0.0f, body, epi);
}

// Parameters: the window and group.
static wm_status_t conv_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL], group;
  bool known;
  WM_RETURN_IF_ERROR(conv_setup(ctx, &w, in_sp, out_sp, &known));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "group", 1, &group));
  out->pending = !known;
  WM_RETURN_IF_ERROR(window_params(ctx, &w, out));
  return wm_op_param_int(ctx, out, "group", group);
}

// --------------------------------------------------------- ConvTranspose

// Shapes of ConvTranspose: X [N, C, D...], W [C, M/group, K...], B [M].
// Fills the window (pads resolved), output spatial dims and M.
static wm_status_t convt_setup(wm_op_ctx_t *ctx, window_t *w, int64_t *in_sp,
                               int64_t *out_sp, int64_t *out_m,
                               bool *out_known_rank) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ws = wm_op_in_shape(ctx, 1);
  *out_m = -1;
  WM_RETURN_IF_ERROR(conv_window(ctx, w, in_sp, out_known_rank));
  if (!*out_known_rank) {
    return NULL;
  }
  int32_t nsp = w->nsp;
  int64_t group;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "group", 1, &group));
  if (group < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute group is %lld, want at least 1",
                       (long long)group);
  }
  int64_t c = xs->rank >= 0 ? xs->dims[1] : -1;
  int64_t wc = ws->rank >= 0 ? ws->dims[0] : -1;
  if (c >= 0 && wc >= 0 && c != wc) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has %lld channels but weight has %lld",
                       (long long)c, (long long)wc);
  }
  int64_t cc = c >= 0 ? c : wc;
  if (cc >= 0 && cc % group != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "%lld input channels are not a multiple of group %lld",
                       (long long)cc, (long long)group);
  }
  if (ws->rank >= 0 && ws->dims[1] >= 0 &&
      !wm_checked_mul_i64(ws->dims[1], group, out_m)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "output channels %lld x group %lld overflow",
                       (long long)ws->dims[1], (long long)group);
  }
  WM_RETURN_IF_ERROR(check_vector(ctx, 2, "bias", *out_m));

  int64_t outpad[MAX_SPATIAL], oshape[MAX_SPATIAL];
  WM_RETURN_IF_ERROR(
      wm_op_attr_ints_n(ctx, "output_padding", nsp, 0, 0, outpad, NULL));
  const int64_t *osv;
  size_t osn;
  WM_RETURN_IF_ERROR(wm_op_attr_ints(ctx, "output_shape", &osv, &osn));
  if (osv) {
    // Exporters give either the spatial dims or the whole shape.
    if (osn != (size_t)nsp && osn != (size_t)nsp + 2) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute output_shape has %zu values, want %d", osn,
                         nsp);
    }
    for (int32_t i = 0; i < nsp; i++) {
      oshape[i] = osv[osn - (size_t)nsp + (size_t)i];
      if (oshape[i] < 1) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "attribute output_shape[%d] is %lld, want at "
                           "least 1",
                           i, (long long)oshape[i]);
      }
    }
  }
  for (int32_t i = 0; i < nsp; i++) {
    out_sp[i] = -1;
    if (in_sp[i] < 0 || w->kernel[i] < 0) {
      continue;
    }
    if (in_sp[i] < 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 0 spatial dim %d is %lld, want at least 1", i,
                         (long long)in_sp[i]);
    }
    // full = stride * (in - 1) + output_padding + extent
    int64_t ext, full;
    if (!window_extent(w, i, &ext) ||
        !wm_checked_mul_i64(w->strides[i], in_sp[i] - 1, &full) ||
        !add_i64(full, outpad[i], &full) || !add_i64(full, ext, &full)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "output size overflows in spatial dim %d", i);
    }
    bool same = w->auto_pad == AUTO_PAD_SAME_UPPER ||
                w->auto_pad == AUTO_PAD_SAME_LOWER;
    if (osv || same) {
      int64_t o = oshape[i];
      if (!osv && !wm_checked_mul_i64(in_sp[i], w->strides[i], &o)) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "output size overflows in spatial dim %d", i);
      }
      int64_t total = full - o;  // both >= 1: no overflow
      int64_t begin = w->auto_pad == AUTO_PAD_SAME_UPPER
                          ? floor_half(total)
                          : total - floor_half(total);
      w->pads[i] = begin;
      w->pads[nsp + i] = total - begin;
      out_sp[i] = o;
      continue;
    }
    int64_t o;
    if (__builtin_sub_overflow(full, w->pads[i], &o) ||
        __builtin_sub_overflow(o, w->pads[nsp + i], &o) || o < 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "pads %lld and %lld leave output size %lld in "
                         "spatial dim %d",
                         (long long)w->pads[i], (long long)w->pads[nsp + i],
                         (long long)o, i);
    }
    out_sp[i] = o;
  }
  return NULL;
}

static wm_status_t convt_infer(wm_op_ctx_t *ctx) {
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL], m;
  bool known;
  WM_RETURN_IF_ERROR(convt_setup(ctx, &w, in_sp, out_sp, &m, &known));
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (!known) {
    wm_op_set_out_unknown(ctx, 0, dt);
    return NULL;
  }
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  wm_shape_t os;
  os.rank = w.nsp + 2;
  os.dims[0] = xs->rank >= 0 ? xs->dims[0] : -1;
  os.dims[1] = m;
  for (int32_t i = 0; i < w.nsp; i++) {
    os.dims[2 + i] = out_sp[i];
  }
  return wm_op_set_out_checked(ctx, 0, dt, &os);
}

static wm_status_t convt_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(convt_infer(ctx));
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL], mm;
  bool known;
  WM_RETURN_IF_ERROR(convt_setup(ctx, &w, in_sp, out_sp, &mm, &known));
  const wm_tensor_t *xt = ctx->in[0], *wt = ctx->in[1];
  int64_t group;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "group", 1, &group));
  size_t n = (size_t)xt->shape.dims[0], c = (size_t)xt->shape.dims[1];
  size_t m = (size_t)mm, mg = (size_t)wt->shape.dims[1];
  size_t cg = c / (size_t)group;
  size_t in_n = prod(in_sp, w.nsp), out_n = prod(out_sp, w.nsp);
  conv_bufs_t bf;
  wm_status_t st = conv_bufs_load(ctx, &w, &bf);
  if (st) {
    goto done;
  }
  const double *x = bf.x, *k = bf.k, *b = bf.b;
  double *y = bf.y;
  size_t nt = bf.nt;
  int32_t nsp = w.nsp;
  // Each input element scatters x * W into the output window it covers.
  for (size_t in = 0; in < n; in++) {
    for (size_t ic = 0; ic < c; ic++) {
      size_t g = ic / cg;
      const double *xp = x + (in * c + ic) * in_n;
      const double *kp = k + ic * mg * nt;
      double *yg = y + (in * m + g * mg) * out_n;
      int64_t pos[MAX_SPATIAL] = {0};
      for (size_t p = 0; p < in_n; p++, odometer_next(pos, in_sp, nsp)) {
        double xv = xp[p];
        for (size_t t = 0; t < nt; t++) {
          size_t off;
          if (!tap_offset(&w, pos, bf.taps + t * (size_t)nsp, out_sp, &off)) {
            continue;
          }
          for (size_t oc = 0; oc < mg; oc++) {
            yg[oc * out_n + off] += xv * kp[oc * nt + t];
          }
        }
      }
    }
  }
  if (b) {
    for (size_t in = 0; in < n; in++) {
      for (size_t om = 0; om < m; om++) {
        double *yp = y + (in * m + om) * out_n;
        for (size_t o = 0; o < out_n; o++) {
          yp[o] += b[om];
        }
      }
    }
  }
  store_f64(ctx->out[0], y);
done:
  conv_bufs_free(&bf);
  return st;
}

static void convt_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ws = wm_op_in_shape(ctx, 1);
  double ins = numel_f(xs);
  double per = ws->rank >= 2 ? prod_f(ws->dims + 1, ws->rank - 1) : -1;
  double outs = numel_f(&ctx->out_types[0].shape);
  if (ins < 0 || per < 0) {
    return;
  }
  out->macs = ins * per;
  out->flops = 2 * out->macs;
  if (wm_op_has_input(ctx, 2) && outs > 0) {
    out->flops += outs;
  }
}

// Parameters: the window (pads from auto_pad or output_shape, which may
// then be negative where the output is longer than the full result) and
// group.
static wm_status_t convt_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL], m, group;
  bool known;
  WM_RETURN_IF_ERROR(convt_setup(ctx, &w, in_sp, out_sp, &m, &known));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "group", 1, &group));
  out->pending = !known;
  WM_RETURN_IF_ERROR(window_params(ctx, &w, out));
  return wm_op_param_int(ctx, out, "group", group);
}

// --------------------------------------------------------------- pooling

typedef enum pool_kind {
  POOL_MAX = 0,
  POOL_AVG = 1,
  POOL_LP = 2,
} pool_kind_t;

// What a pooling node computes, from its op type and attributes.
typedef struct pool {
  pool_kind_t kind;          // max, average or Lp norm
  bool global;               // window is the whole spatial extent
  bool count_include_pad;    // AveragePool divisor counts padding
  double p;                  // LpPool exponent
  int64_t storage_order;     // MaxPool Indices: 0 row-major, 1 column-major
  window_t w;                // the window (kernel = input dims if global)
  int64_t in[MAX_SPATIAL];   // input spatial dims
  int64_t out[MAX_SPATIAL];  // output spatial dims
  bool known_rank;           // input rank known (else outputs unknown)
} pool_t;

static wm_status_t pool_setup(wm_op_ctx_t *ctx, pool_kind_t kind, bool global,
                              pool_t *pl) {
  memset(pl, 0, sizeof(*pl));
  pl->kind = kind;
  pl->global = global;
  pl->p = 2;
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  WM_RETURN_IF_ERROR(check_rank(ctx, 0, global ? 2 : 3, WM_MAX_RANK));
  if (kind == POOL_LP) {
    const wm_attr_t *a = wm_node_attr(ctx->node, "p");
    if (a && a->type == WM_ATTR_FLOAT) {  // opset 1 had a float p
      pl->p = a->f;
    } else {
      int64_t p;
      WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "p", 2, &p));
      pl->p = (double)p;
    }
    if (!(pl->p > 0) || isinf(pl->p)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute p is %g, want a positive number", pl->p);
    }
  }
  if (xs->rank < 0) {
    return NULL;
  }
  pl->known_rank = true;
  int32_t nsp = xs->rank - 2;
  for (int32_t i = 0; i < nsp; i++) {
    pl->in[i] = xs->dims[2 + i];
  }
  if (global) {
    pl->w.nsp = nsp;
    for (int32_t i = 0; i < nsp; i++) {
      pl->w.kernel[i] = pl->in[i];
      pl->w.strides[i] = 1;
      pl->w.dilations[i] = 1;
      pl->out[i] = 1;
    }
    return NULL;
  }
  WM_RETURN_IF_ERROR(window_parse(ctx, nsp, NULL, &pl->w));
  if (kind == POOL_AVG) {
    int64_t cip;
    WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "count_include_pad", 0, &cip));
    pl->count_include_pad = cip != 0;
  }
  if (kind == POOL_MAX) {
    WM_RETURN_IF_ERROR(
        wm_op_attr_int(ctx, "storage_order", 0, &pl->storage_order));
    if (pl->storage_order != 0 && pl->storage_order != 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute storage_order is %lld, want 0 or 1",
                         (long long)pl->storage_order);
    }
  }
  return window_forward(ctx, &pl->w, pl->in, pl->out);
}

static wm_status_t pool_infer(wm_op_ctx_t *ctx, pool_kind_t kind, bool global) {
  pool_t pl;
  WM_RETURN_IF_ERROR(pool_setup(ctx, kind, global, &pl));
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (!pl.known_rank) {
    wm_op_set_out_unknown(ctx, 0, dt);
    wm_op_set_out_unknown(ctx, 1, WM_DTYPE_INT64);
    return NULL;
  }
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  wm_shape_t os = *xs;
  for (int32_t i = 0; i < pl.w.nsp; i++) {
    os.dims[2 + i] = pl.out[i];
  }
  WM_RETURN_IF_ERROR(wm_op_set_out_checked(ctx, 0, dt, &os));
  return wm_op_set_out_checked(ctx, 1, WM_DTYPE_INT64, &os);
}

// The pooling core shared by the Max, Average, Lp and Global pools.
static wm_status_t pool_run(wm_op_ctx_t *ctx, pool_kind_t kind, bool global) {
  pool_t pl;
  WM_RETURN_IF_ERROR(pool_infer(ctx, kind, global));
  WM_RETURN_IF_ERROR(pool_setup(ctx, kind, global, &pl));
  const window_t *w = &pl.w;
  const wm_tensor_t *xt = ctx->in[0];
  wm_tensor_t *it = wm_op_has_output(ctx, 1) ? ctx->out[1] : NULL;
  int32_t nsp = w->nsp;
  // The max of a window holding only padding (possible with dilations or
  // large pads) is the lowest value of the dtype.
  double lowest = -INFINITY;
  if (wm_dtype_is_int(xt->dtype)) {
    lowest = wm_dtype_is_unsigned(xt->dtype)
                 ? 0.0
                 : -ldexp(1.0, (int)(8 * wm_dtype_size(xt->dtype)) - 1);
  }
  size_t planes = (size_t)xt->shape.dims[0] * (size_t)xt->shape.dims[1];
  size_t in_n = prod(pl.in, nsp), out_n = prod(pl.out, nsp);
  double *x = NULL, *y = NULL;
  int64_t *taps = NULL;
  size_t nt = 0;
  wm_status_t st = load_f64(ctx, xt, &x);
  if (!st) {
    st = alloc_f64(ctx, ctx->out[0]->count, &y);
  }
  if (!st) {
    st = window_taps(ctx, w, &taps, &nt);
  }
  if (st) {
    goto done;
  }
  for (size_t pi = 0; pi < planes; pi++) {
    const double *xp = x + pi * in_n;
    int64_t pos[MAX_SPATIAL] = {0};
    for (size_t o = 0; o < out_n; o++, odometer_next(pos, pl.out, nsp)) {
      double acc = 0, best = -INFINITY;
      int64_t best_idx = -1;
      size_t valid = 0, padded = 0;
      for (size_t t = 0; t < nt; t++) {
        size_t off = 0;
        bool inside = true, in_pad = true;
        int64_t q[MAX_SPATIAL];
        for (int32_t i = 0; i < nsp; i++) {
          q[i] = pos[i] * w->strides[i] - w->pads[i] +
                 taps[t * (size_t)nsp + (size_t)i];
          if (q[i] < 0 || q[i] >= pl.in[i]) {
            inside = false;
            if (q[i] < -w->pads[i] || q[i] >= pl.in[i] + w->pads[nsp + i]) {
              in_pad = false;
            }
          } else {
            off = off * (size_t)pl.in[i] + (size_t)q[i];
          }
        }
        if (!inside) {
          padded += in_pad;
          continue;
        }
        double v = xp[off];
        valid++;
        if (kind == POOL_MAX) {
          if (valid == 1 || v > best || (v != v && best == best)) {
            best = v;
            if (pl.storage_order == 0) {
              best_idx = (int64_t)off;
            } else {
              int64_t cm = 0, stride = 1;
              for (int32_t i = 0; i < nsp; i++) {
                cm += q[i] * stride;
                stride *= pl.in[i];
              }
              best_idx = cm;
            }
          }
        } else if (kind == POOL_AVG) {
          acc += v;
        } else {
          acc += pow(fabs(v), pl.p);
        }
      }
      double r;
      if (kind == POOL_MAX) {
        r = valid ? best : lowest;
      } else if (kind == POOL_AVG) {
        size_t div = valid + (pl.count_include_pad ? padded : 0);
        r = div ? acc / (double)div : NAN;
      } else {
        r = pow(acc, 1.0 / pl.p);
      }
      y[pi * out_n + o] = r;
      if (it) {
        wm_tensor_set_i64(it, pi * out_n + o,
                          best_idx < 0 ? -1 : (int64_t)(pi * in_n) + best_idx);
      }
    }
  }
  store_f64(ctx->out[0], y);
done:
  free(x);
  free(y);
  free(taps);
  return st;
}

static void pool_cost(const wm_op_ctx_t *ctx, pool_kind_t kind, bool global,
                      wm_op_cost_t *out) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  double outs = numel_f(&ctx->out_types[0].shape);
  double win = -1;
  if (global) {
    win = xs->rank >= 2 ? prod_f(xs->dims + 2, xs->rank - 2) : -1;
  } else {
    const int64_t *k;
    size_t n;
    wm_status_t st = wm_op_attr_ints(ctx, "kernel_shape", &k, &n);
    if (st) {
      wm_status_free(st);
    } else if (k) {
      win = prod_f(k, (int32_t)(n < MAX_SPATIAL ? n : MAX_SPATIAL));
    }
  }
  if (outs < 0 || win < 0) {
    return;
  }
  out->flops = outs * win;
  if (kind == POOL_LP) {
    out->flops *= 2;                           // |x| and the sum
    out->transcendentals = outs * win + outs;  // pow per tap, root
  } else if (kind == POOL_AVG) {
    out->flops += outs;  // the division
  }
}

// Parameters of the windowed pools: the window (ceil_mode applied: the
// output dims and end pads say where windows stop), and count_include_pad
// (AveragePool), storage_order (MaxPool) or p (LpPool); GlobalLpPool's p.
static wm_status_t pool_resolve(wm_op_ctx_t *ctx, pool_kind_t kind, bool global,
                                wm_op_params_t *out) {
  pool_t pl;
  WM_RETURN_IF_ERROR(pool_setup(ctx, kind, global, &pl));
  out->pending = !pl.known_rank;
  if (global) {
    return wm_op_param_float(ctx, out, "p", pl.p);
  }
  WM_RETURN_IF_ERROR(window_params(ctx, &pl.w, out));
  if (kind == POOL_AVG) {
    return wm_op_param_int(ctx, out, "count_include_pad", pl.count_include_pad);
  }
  if (kind == POOL_MAX) {
    return wm_op_param_int(ctx, out, "storage_order", pl.storage_order);
  }
  return wm_op_param_float(ctx, out, "p", pl.p);
}
static wm_status_t maxpool_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  return pool_resolve(ctx, POOL_MAX, false, out);
}
static wm_status_t avgpool_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  return pool_resolve(ctx, POOL_AVG, false, out);
}
static wm_status_t lppool_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  return pool_resolve(ctx, POOL_LP, false, out);
}
static wm_status_t glppool_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  return pool_resolve(ctx, POOL_LP, true, out);
}

#define POOL_FNS(NAME, KIND, GLOBAL)                                   \
  static wm_status_t NAME##_infer(wm_op_ctx_t *ctx) {                  \
    return pool_infer(ctx, KIND, GLOBAL);                              \
  }                                                                    \
  static wm_status_t NAME##_run(wm_op_ctx_t *ctx) {                    \
    return pool_run(ctx, KIND, GLOBAL);                                \
  }                                                                    \
  static void NAME##_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) { \
    pool_cost(ctx, KIND, GLOBAL, out);                                 \
  }

POOL_FNS(maxpool, POOL_MAX, false)
POOL_FNS(avgpool, POOL_AVG, false)
POOL_FNS(lppool, POOL_LP, false)
POOL_FNS(gmaxpool, POOL_MAX, true)
POOL_FNS(gavgpool, POOL_AVG, true)
POOL_FNS(glppool, POOL_LP, true)

// ------------------------------------------------------------------- LRN

typedef struct lrn {
  int64_t size;  // channels in the window
  double alpha;  // scale
  double beta;   // exponent
  double bias;   // added before the power
} lrn_t;

static wm_status_t lrn_setup(wm_op_ctx_t *ctx, lrn_t *l) {
  WM_RETURN_IF_ERROR(check_rank(ctx, 0, 2, WM_MAX_RANK));
  const wm_attr_t *a = wm_node_attr(ctx->node, "size");
  if (!a) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "attribute size is required");
  }
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "size", 1, &l->size));
  if (l->size < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute size is %lld, want at least 1",
                       (long long)l->size);
  }
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "alpha", 1e-4, &l->alpha));
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "beta", 0.75, &l->beta));
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "bias", 1.0, &l->bias));
  return NULL;
}

static wm_status_t lrn_infer(wm_op_ctx_t *ctx) {
  lrn_t l = {1, 0, 0, 0};
  WM_RETURN_IF_ERROR(lrn_setup(ctx, &l));
  return wm_op_infer_same(ctx);
}

static wm_status_t lrn_run(wm_op_ctx_t *ctx) {
  lrn_t l = {1, 0, 0, 0};
  WM_RETURN_IF_ERROR(lrn_setup(ctx, &l));
  const wm_tensor_t *xt = ctx->in[0];
  int64_t n = xt->shape.dims[0], c = xt->shape.dims[1];
  size_t inner = prod(xt->shape.dims + 2, xt->shape.rank - 2);
  double *x, *y;
  WM_RETURN_IF_ERROR(load_f64(ctx, xt, &x));
  wm_status_t st = alloc_f64(ctx, xt->count, &y);
  if (st) {
    free(x);
    return st;
  }
  int64_t lo = (l.size - 1) / 2, hi = l.size - 1 - lo;  // floor, ceil
  for (int64_t in = 0; in < n; in++) {
    for (int64_t ic = 0; ic < c; ic++) {
      int64_t c0 = ic - lo < 0 ? 0 : ic - lo;
      int64_t c1 = ic > c - 1 - hi ? c - 1 : ic + hi;
      for (size_t i = 0; i < inner; i++) {
        double sq = 0;
        for (int64_t j = c0; j <= c1; j++) {
          double v = x[((size_t)(in * c + j)) * inner + i];
          sq += v * v;
        }
        size_t at = (size_t)(in * c + ic) * inner + i;
        y[at] = x[at] / pow(l.bias + l.alpha / (double)l.size * sq, l.beta);
      }
    }
  }
  store_f64(ctx->out[0], y);
  free(x);
  free(y);
  return NULL;
}

static void lrn_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  double n = numel_f(wm_op_in_shape(ctx, 0));
  int64_t size = wm_node_attr_int(ctx->node, "size", 1);
  if (n < 0) {
    return;
  }
  out->flops = n * (2 * (double)size + 3);
  out->transcendentals = n;
}

// ---------------------------------------------------- BatchNormalization

// Parameter layout of BatchNormalization: per channel, or (spatial = 0,
// opset < 9) per channel and position.
static wm_status_t bn_setup(wm_op_ctx_t *ctx, bool *out_training,
                            bool *out_spatial) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  WM_RETURN_IF_ERROR(check_rank(ctx, 0, 2, WM_MAX_RANK));
  int64_t spatial = 1, training = 0;
  if (ctx->opset < 9) {
    WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "spatial", 1, &spatial));
  }
  if (ctx->opset >= 14) {
    WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "training_mode", 0, &training));
    if (!training) {
      for (int32_t i = 1; i < ctx->n_out; i++) {
        if (wm_op_has_output(ctx, i)) {
          return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                             "output %d needs training_mode=1", i);
        }
      }
    }
  } else {
    // Before opset 14 the extra outputs select training mode.
    for (int32_t i = 1; i < ctx->n_out; i++) {
      training |= wm_op_has_output(ctx, i);
    }
    if (ctx->opset < 7) {
      int64_t is_test;
      WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "is_test", 0, &is_test));
      if (is_test) {
        training = 0;
      }
    }
  }
  *out_training = training != 0;
  *out_spatial = spatial != 0;
  static const char *const names[] = {"", "scale", "B", "mean", "var"};
  for (int32_t i = 1; i < 5; i++) {
    WM_RETURN_IF_ERROR(check_float_dtype(ctx, i));
    const wm_shape_t *ps = wm_op_in_shape(ctx, i);
    if (ps->rank < 0 || xs->rank < 0) {
      continue;
    }
    wm_shape_t want = {1, {xs->dims[1]}};
    if (!spatial) {
      want = wm_shape_make(xs->rank - 1, xs->dims + 1);
    }
    bool ok = ps->rank == want.rank;
    for (int32_t d = 0; ok && d < want.rank; d++) {
      ok = ps->dims[d] < 0 || want.dims[d] < 0 || ps->dims[d] == want.dims[d];
    }
    if (!ok) {
      char a[160], b[160];
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d (%s) has shape %s, want %s", i, names[i],
                         wm_shape_format(ps, a, sizeof(a)),
                         wm_shape_format(&want, b, sizeof(b)));
    }
  }
  return NULL;
}

// Parameters: training_mode (before opset 14 whether the statistics
// outputs are requested, is_test before 7 applied), spatial (1 from opset
// 9), epsilon and momentum.
static wm_status_t bn_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  bool training, spatial;
  double eps, momentum;
  WM_RETURN_IF_ERROR(bn_setup(ctx, &training, &spatial));
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "momentum", 0.9, &momentum));
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "training_mode", training));
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "spatial", spatial));
  WM_RETURN_IF_ERROR(wm_op_param_float(ctx, out, "epsilon", eps));
  return wm_op_param_float(ctx, out, "momentum", momentum);
}

static wm_status_t bn_infer(wm_op_ctx_t *ctx) {
  bool training = false, spatial = true;
  WM_RETURN_IF_ERROR(bn_setup(ctx, &training, &spatial));
  WM_RETURN_IF_ERROR(wm_op_infer_same(ctx));
  // Statistics outputs take the shape and dtype of the mean input.
  for (int32_t i = 1; i < ctx->n_out; i++) {
    const wm_shape_t *ms = wm_op_in_shape(ctx, 3);
    wm_dtype_t dt =
        ctx->opset >= 15 ? wm_op_in_dtype(ctx, 3) : wm_op_in_dtype(ctx, 0);
    wm_op_set_out(ctx, i, dt, ms);
  }
  return NULL;
}

static wm_status_t bn_run(wm_op_ctx_t *ctx) {
  bool training = false, spatial = true;
  WM_RETURN_IF_ERROR(bn_setup(ctx, &training, &spatial));
  double eps, momentum;
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "momentum", 0.9, &momentum));
  const wm_tensor_t *xt = ctx->in[0];
  size_t n = (size_t)xt->shape.dims[0], c = (size_t)xt->shape.dims[1];
  size_t inner = prod(xt->shape.dims + 2, xt->shape.rank - 2);
  size_t np = spatial ? c : c * inner;  // parameters
  size_t per = spatial ? inner : 1;     // positions per parameter and n
  double *x = NULL, *y = NULL, *prm[5] = {NULL};
  double *bm = NULL, *bv = NULL;
  wm_status_t st = load_f64(ctx, xt, &x);
  for (int32_t i = 1; i < 5 && !st; i++) {
    st = load_f64(ctx, ctx->in[i], &prm[i]);
    if (!st && ctx->in[i]->count != np) {
      st = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d has %zu elements, want %zu", i,
                       ctx->in[i]->count, np);
    }
  }
  if (!st) {
    st = alloc_f64(ctx, xt->count, &y);
  }
  if (!st) {
    st = alloc_f64(ctx, np, &bm);
  }
  if (!st) {
    st = alloc_f64(ctx, np, &bv);
  }
  if (st) {
    goto done;
  }
  // Element (b, ch, i) uses parameter ch (spatial) or ch * inner + i.
  for (size_t p = 0; p < np; p++) {
    size_t ch = spatial ? p : p / inner, i0 = spatial ? 0 : p % inner;
    double mean = prm[3][p], var = prm[4][p];
    if (training) {
      double s = 0, cnt = (double)(n * per);
      for (size_t b = 0; b < n; b++) {
        for (size_t i = 0; i < per; i++) {
          s += x[(b * c + ch) * inner + i0 + i];
        }
      }
      mean = cnt > 0 ? s / cnt : 0;
      double v = 0;
      for (size_t b = 0; b < n; b++) {
        for (size_t i = 0; i < per; i++) {
          double d = x[(b * c + ch) * inner + i0 + i] - mean;
          v += d * d;
        }
      }
      var = cnt > 0 ? v / cnt : 0;
    }
    bm[p] = mean;
    bv[p] = var;
    double inv = 1.0 / sqrt(var + eps);
    for (size_t b = 0; b < n; b++) {
      for (size_t i = 0; i < per; i++) {
        size_t at = (b * c + ch) * inner + i0 + i;
        y[at] = (x[at] - mean) * inv * prm[1][p] + prm[2][p];
      }
    }
  }
  store_f64(ctx->out[0], y);
  if (training) {
    // Outputs 1, 2: running mean and variance; 3, 4 (opset < 14): the
    // batch mean and variance.
    for (int32_t o = 1; o < ctx->n_out && o < 5; o++) {
      wm_tensor_t *t = wm_op_has_output(ctx, o) ? ctx->out[o] : NULL;
      if (!t) {
        continue;
      }
      for (size_t p = 0; p < np && p < t->count; p++) {
        double v = o == 1   ? prm[3][p] * momentum + bm[p] * (1 - momentum)
                   : o == 2 ? prm[4][p] * momentum + bv[p] * (1 - momentum)
                   : o == 3 ? bm[p]
                            : bv[p];
        wm_tensor_set_f64(t, p, v);
      }
    }
  }
done:
  free(x);
  free(y);
  free(bm);
  free(bv);
  for (int32_t i = 1; i < 5; i++) {
    free(prm[i]);
  }
  return st;
}

static void norm_cost(const wm_op_ctx_t *ctx, double per_elem,
                      double per_elem_tr, wm_op_cost_t *out) {
  double n = numel_f(wm_op_in_shape(ctx, 0));
  if (n < 0) {
    return;
  }
  out->flops = n * per_elem;
  out->transcendentals = n * per_elem_tr;
}

static void bn_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  norm_cost(ctx, 4, 0, out);  // sub, mul, mul, add
  const wm_shape_t *ms = wm_op_in_shape(ctx, 3);
  double c = numel_f(ms);
  if (c > 0) {
    out->transcendentals = c;  // one sqrt per channel
  }
}

// ---------------------------------------------------- LayerNormalization

// Normalizes over dims [axis, rank); Scale and B broadcast to them.
static wm_status_t ln_setup(wm_op_ctx_t *ctx, int32_t *out_axis) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  *out_axis = -1;
  int64_t axis, stash;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "axis", -1, &axis));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "stash_type", WM_DTYPE_FLOAT, &stash));
  if (stash < 0 || stash >= WM_DTYPE_COUNT ||
      !wm_dtype_is_float((wm_dtype_t)stash)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute stash_type is %lld, want a float dtype",
                       (long long)stash);
  }
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, 1));
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, 2));
  if (xs->rank < 0) {
    return NULL;
  }
  if (xs->rank == 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 is a scalar, want rank at least 1");
  }
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, axis, xs->rank, "axis", out_axis));
  wm_shape_t norm = wm_shape_make(xs->rank - *out_axis, xs->dims + *out_axis);
  for (int32_t i = 1; i < 3; i++) {
    const wm_shape_t *ps = wm_op_in_shape(ctx, i);
    if (!wm_op_has_input(ctx, i) || ps->rank < 0) {
      continue;
    }
    bool ok = ps->rank <= norm.rank;
    for (int32_t d = 0; ok && d < ps->rank; d++) {
      int64_t pd = ps->dims[d], nd = norm.dims[norm.rank - ps->rank + d];
      ok = pd < 0 || nd < 0 || pd == 1 || pd == nd;
    }
    if (!ok) {
      char a[160], b[160];
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d has shape %s, which does not broadcast "
                         "to the normalized shape %s",
                         i, wm_shape_format(ps, a, sizeof(a)),
                         wm_shape_format(&norm, b, sizeof(b)));
    }
  }
  return NULL;
}

// Parameters: axis normalised, epsilon and stash_type.
static wm_status_t ln_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  int32_t axis;
  int64_t stash;
  double eps;
  WM_RETURN_IF_ERROR(ln_setup(ctx, &axis));
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "stash_type", WM_DTYPE_FLOAT, &stash));
  out->pending = axis < 0;
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "axis", axis));
  WM_RETURN_IF_ERROR(wm_op_param_float(ctx, out, "epsilon", eps));
  return wm_op_param_int(ctx, out, "stash_type", stash);
}

static wm_status_t ln_infer(wm_op_ctx_t *ctx) {
  int32_t axis = 0;
  WM_RETURN_IF_ERROR(ln_setup(ctx, &axis));
  WM_RETURN_IF_ERROR(wm_op_infer_same(ctx));
  wm_dtype_t stash =
      (wm_dtype_t)wm_node_attr_int(ctx->node, "stash_type", WM_DTYPE_FLOAT);
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  if (xs->rank < 0) {
    wm_op_set_out_unknown(ctx, 1, stash);
    wm_op_set_out_unknown(ctx, 2, stash);
    return NULL;
  }
  wm_shape_t ms = *xs;
  for (int32_t d = axis; d < ms.rank; d++) {
    ms.dims[d] = 1;
  }
  wm_op_set_out(ctx, 1, stash, &ms);
  wm_op_set_out(ctx, 2, stash, &ms);
  return NULL;
}

// Loads input |i| broadcast to |norm| (NULL when omitted).
static wm_status_t load_broadcast(const wm_op_ctx_t *ctx, int32_t i,
                                  const wm_shape_t *norm, double **out) {
  *out = NULL;
  if (!wm_op_has_input(ctx, i)) {
    return NULL;
  }
  const wm_tensor_t *t = ctx->in[i];
  size_t n = prod(norm->dims, norm->rank);
  WM_RETURN_IF_ERROR(alloc_f64(ctx, n, out));
  int64_t strides[WM_MAX_RANK];
  wm_broadcast_strides(&t->shape, norm, strides);
  for (size_t j = 0; j < n; j++) {
    (*out)[j] = wm_tensor_get_f64(t, wm_broadcast_offset(norm, strides, j));
  }
  return NULL;
}

static wm_status_t ln_run(wm_op_ctx_t *ctx) {
  int32_t axis = 0;
  WM_RETURN_IF_ERROR(ln_setup(ctx, &axis));
  double eps;
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  const wm_tensor_t *xt = ctx->in[0];
  wm_shape_t norm = wm_shape_make(xt->shape.rank - axis, xt->shape.dims + axis);
  size_t outer = prod(xt->shape.dims, axis);
  size_t inner = prod(norm.dims, norm.rank);
  double *x = NULL, *y = NULL, *sc = NULL, *bi = NULL;
  wm_status_t st = load_f64(ctx, xt, &x);
  if (!st) {
    st = alloc_f64(ctx, xt->count, &y);
  }
  if (!st) {
    st = load_broadcast(ctx, 1, &norm, &sc);
  }
  if (!st) {
    st = load_broadcast(ctx, 2, &norm, &bi);
  }
  if (st) {
    goto done;
  }
  wm_tensor_t *mt = wm_op_has_output(ctx, 1) ? ctx->out[1] : NULL;
  wm_tensor_t *vt = wm_op_has_output(ctx, 2) ? ctx->out[2] : NULL;
  for (size_t o = 0; o < outer; o++) {
    const double *xp = x + o * inner;
    double s = 0, v = 0;
    for (size_t j = 0; j < inner; j++) {
      s += xp[j];
    }
    double mean = inner ? s / (double)inner : 0;
    for (size_t j = 0; j < inner; j++) {
      v += (xp[j] - mean) * (xp[j] - mean);
    }
    double inv = 1.0 / sqrt((inner ? v / (double)inner : 0) + eps);
    for (size_t j = 0; j < inner; j++) {
      y[o * inner + j] = (xp[j] - mean) * inv * sc[j] + (bi ? bi[j] : 0.0);
    }
    if (mt) {
      wm_tensor_set_f64(mt, o, mean);
    }
    if (vt) {
      wm_tensor_set_f64(vt, o, inv);
    }
  }
  store_f64(ctx->out[0], y);
done:
  free(x);
  free(y);
  free(sc);
  free(bi);
  return st;
}

static void ln_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  // sum, sub, square, sum, sub, mul, mul, add
  norm_cost(ctx, 8, 0, out);
  const wm_shape_t *ms = &ctx->out_types[0].shape;
  int64_t axis = wm_node_attr_int(ctx->node, "axis", -1);
  if (ms->rank > 0) {
    int32_t a = (int32_t)(axis < 0 ? axis + ms->rank : axis);
    if (a >= 0 && a <= ms->rank) {
      double outer = prod_f(ms->dims, a);
      out->transcendentals = outer > 0 ? outer : 0;
    }
  }
}

// ------------------------------------------------- InstanceNormalization

// Parameters: epsilon.
static wm_status_t in_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  double eps;
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  return wm_op_param_float(ctx, out, "epsilon", eps);
}

static wm_status_t in_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(check_rank(ctx, 0, 2, WM_MAX_RANK));
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, 1));
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, 2));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  int64_t c = xs->rank >= 2 ? xs->dims[1] : -1;
  WM_RETURN_IF_ERROR(check_vector(ctx, 1, "scale", c));
  WM_RETURN_IF_ERROR(check_vector(ctx, 2, "B", c));
  return wm_op_infer_same(ctx);
}

static wm_status_t in_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(in_infer(ctx));
  double eps;
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  const wm_tensor_t *xt = ctx->in[0];
  size_t n = (size_t)xt->shape.dims[0], c = (size_t)xt->shape.dims[1];
  size_t inner = prod(xt->shape.dims + 2, xt->shape.rank - 2);
  double *x = NULL, *y = NULL, *sc = NULL, *bi = NULL;
  wm_status_t st = load_f64(ctx, xt, &x);
  if (!st) {
    st = alloc_f64(ctx, xt->count, &y);
  }
  if (!st) {
    st = load_f64(ctx, ctx->in[1], &sc);
  }
  if (!st) {
    st = load_f64(ctx, ctx->in[2], &bi);
  }
  if (st) {
    goto done;
  }
  for (size_t b = 0; b < n; b++) {
    for (size_t ch = 0; ch < c; ch++) {
      const double *xp = x + (b * c + ch) * inner;
      double *yp = y + (b * c + ch) * inner;
      double s = 0, v = 0;
      for (size_t j = 0; j < inner; j++) {
        s += xp[j];
      }
      double mean = inner ? s / (double)inner : 0;
      for (size_t j = 0; j < inner; j++) {
        v += (xp[j] - mean) * (xp[j] - mean);
      }
      double inv = 1.0 / sqrt((inner ? v / (double)inner : 0) + eps);
      for (size_t j = 0; j < inner; j++) {
        yp[j] = (xp[j] - mean) * inv * sc[ch] + bi[ch];
      }
    }
  }
  store_f64(ctx->out[0], y);
done:
  free(x);
  free(y);
  free(sc);
  free(bi);
  return st;
}

static void in_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  norm_cost(ctx, 8, 0, out);
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  if (xs->rank >= 2) {
    double planes = prod_f(xs->dims, 2);
    out->transcendentals = planes > 0 ? planes : 0;
  }
}

// ------------------------------------------- MeanVarianceNormalization

// Reduced axes of MVN as a mask over the dims of input 0.
static wm_status_t mvn_axes(const wm_op_ctx_t *ctx, int32_t rank, bool *mask) {
  static const int64_t def[] = {0, 2, 3};
  const int64_t *v;
  size_t n;
  WM_RETURN_IF_ERROR(wm_op_attr_ints(ctx, "axes", &v, &n));
  if (!v) {
    v = def;
    n = 3;
  }
  memset(mask, 0, sizeof(bool) * WM_MAX_RANK);
  for (size_t i = 0; i < n; i++) {
    int32_t a;
    WM_RETURN_IF_ERROR(wm_op_axis(ctx, v[i], rank, "axes entry", &a));
    if (mask[a]) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute axes repeats axis %d", a);
    }
    mask[a] = true;
  }
  return NULL;
}

static wm_status_t mvn_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  if (xs->rank >= 0) {
    bool mask[WM_MAX_RANK];
    WM_RETURN_IF_ERROR(mvn_axes(ctx, xs->rank, mask));
  }
  return wm_op_infer_same(ctx);
}

// Index of the reduction group of element |i|: its coordinates with the
// reduced dims dropped.
static size_t group_of(const wm_shape_t *s, const bool *mask, size_t i) {
  size_t g = 0, scale = 1;
  for (int32_t d = s->rank - 1; d >= 0; d--) {
    size_t dim = (size_t)s->dims[d], q = i % dim;
    i /= dim;
    if (!mask[d]) {
      g += q * scale;
      scale *= dim;
    }
  }
  return g;
}

static wm_status_t mvn_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *xt = ctx->in[0];
  bool mask[WM_MAX_RANK];
  WM_RETURN_IF_ERROR(mvn_axes(ctx, xt->shape.rank, mask));
  size_t groups = 1, cnt = 1;
  for (int32_t d = 0; d < xt->shape.rank; d++) {
    *(mask[d] ? &cnt : &groups) *= (size_t)xt->shape.dims[d];
  }
  double *x = NULL, *y = NULL, *mean = NULL, *var = NULL;
  wm_status_t st = load_f64(ctx, xt, &x);
  if (!st) {
    st = alloc_f64(ctx, xt->count, &y);
  }
  if (!st) {
    st = alloc_f64(ctx, groups, &mean);
  }
  if (!st) {
    st = alloc_f64(ctx, groups, &var);
  }
  if (st) {
    goto done;
  }
  for (size_t i = 0; i < xt->count; i++) {
    mean[group_of(&xt->shape, mask, i)] += x[i];
  }
  for (size_t g = 0; g < groups; g++) {
    mean[g] /= (double)cnt;
  }
  for (size_t i = 0; i < xt->count; i++) {
    size_t g = group_of(&xt->shape, mask, i);
    var[g] += (x[i] - mean[g]) * (x[i] - mean[g]);
  }
  // The ONNX function body: (X - E[X]) / (sqrt(Var[X]) + 1e-9).
  for (size_t i = 0; i < xt->count; i++) {
    size_t g = group_of(&xt->shape, mask, i);
    y[i] = (x[i] - mean[g]) / (sqrt(var[g] / (double)cnt) + 1e-9);
  }
  store_f64(ctx->out[0], y);
done:
  free(x);
  free(y);
  free(mean);
  free(var);
  return st;
}

static void mvn_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  norm_cost(ctx, 6, 0, out);
}

// --------------------------------------------------------------- Dropout

static wm_status_t dropout_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(wm_op_infer_same(ctx));
  if (ctx->opset >= 12) {
    for (int32_t i = 1; i < 3; i++) {
      const wm_shape_t *s = wm_op_in_shape(ctx, i);
      if (wm_op_has_input(ctx, i) && s->rank > 0) {
        char buf[160];
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "input %d (%s) has shape %s, want a scalar", i,
                           i == 1 ? "ratio" : "training_mode",
                           wm_shape_format(s, buf, sizeof(buf)));
      }
    }
    WM_RETURN_IF_ERROR(check_float_dtype(ctx, 1));
    wm_dtype_t tm = wm_op_in_dtype(ctx, 2);
    if (tm != WM_DTYPE_UNDEFINED && tm != WM_DTYPE_BOOL) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 2 (training_mode) has dtype %s, want bool",
                         wm_dtype_name(tm));
    }
  }
  // The mask was of type T before opset 10, bool since.
  wm_op_set_out(ctx, 1,
                ctx->opset >= 10 ? WM_DTYPE_BOOL : wm_op_in_dtype(ctx, 0),
                &ctx->in_types[0].shape);
  return NULL;
}

// Inference is the identity with an all-true mask. Opsets before 12 are
// treated as inference (is_test of opset < 7 is ignored, as runtimes do);
// training mode is supported only for ratio 0, since a random mask cannot
// serve as a reference.
// Training mode: each element is kept with probability 1 - ratio and
// scaled by 1 / (1 - ratio); the mask says which were kept.
static wm_status_t dropout_train(wm_op_ctx_t *ctx, double ratio) {
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  wm_tensor_t *m = wm_op_has_output(ctx, 1) ? ctx->out[1] : NULL;
  wm_op_rng_t r;
  wm_op_rng_seed(&r, ctx);
  double scale = 1.0 / (1.0 - ratio);
  for (size_t i = 0; i < x->count; i++) {
    bool keep = wm_op_rng_uniform(&r) >= ratio;
    wm_tensor_set_f64(y, i, keep ? wm_tensor_get_f64(x, i) * scale : 0.0);
    if (m) {
      wm_tensor_set_f64(m, i, keep ? 1.0 : 0.0);
    }
  }
  return NULL;
}

static wm_status_t dropout_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(dropout_infer(ctx));
  if (ctx->opset >= 12) {
    double ratio = wm_op_input_scalar(ctx, 1, 0.5);
    bool training = false;
    if (wm_op_has_input(ctx, 2) && ctx->in[2] && ctx->in[2]->count) {
      const wm_tensor_t *t = ctx->in[2];
      training = t->dtype == WM_DTYPE_BOOL ? ((const uint8_t *)t->data)[0] != 0
                                           : wm_tensor_get_f64(t, 0) != 0;
    }
    if (!(ratio >= 0 && ratio < 1)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "ratio is %g, want [0, 1)",
                         ratio);
    }
    if (training && ratio != 0) {
      return dropout_train(ctx, ratio);
    }
  }
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  if (y->nbytes != x->nbytes) {
    return WM_OP_ERROR(ctx, INTERNAL, "output has %zu bytes, want %zu",
                       y->nbytes, x->nbytes);
  }
  if (x->nbytes) {
    memcpy(y->data, x->data, x->nbytes);
  }
  wm_tensor_t *m = wm_op_has_output(ctx, 1) ? ctx->out[1] : NULL;
  if (m && m->dtype == WM_DTYPE_BOOL) {
    memset(m->data, 1, m->nbytes);
  } else if (m) {
    for (size_t i = 0; i < m->count; i++) {
      wm_tensor_set_f64(m, i, 1.0);
    }
  }
  return NULL;
}

// ----------------------------------------------------------------- losses

// Shapes of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss:
// input [N, C, D...], target [N, D...] of int32/int64, weight [C].
static wm_status_t loss_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ts = wm_op_in_shape(ctx, 1);
  const char *red;
  WM_RETURN_IF_ERROR(wm_op_attr_string(ctx, "reduction", "mean", &red));
  if (strcmp(red, "none") != 0 && strcmp(red, "sum") != 0 &&
      strcmp(red, "mean") != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute reduction is \"%s\", want none, sum or "
                       "mean",
                       red);
  }
  WM_RETURN_IF_ERROR(check_rank(ctx, 0, 2, WM_MAX_RANK));
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, 2));
  wm_dtype_t tdt = wm_op_in_dtype(ctx, 1);
  if (tdt != WM_DTYPE_UNDEFINED && tdt != WM_DTYPE_INT32 &&
      tdt != WM_DTYPE_INT64) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 1 (target) has dtype %s, want int32 or int64",
                       wm_dtype_name(tdt));
  }
  if (xs->rank >= 0 && ts->rank >= 0) {
    bool ok = ts->rank == xs->rank - 1;
    for (int32_t d = 0; ok && d < ts->rank; d++) {
      int64_t a = ts->dims[d], b = xs->dims[d == 0 ? 0 : d + 1];
      ok = a < 0 || b < 0 || a == b;
    }
    if (!ok) {
      char a[160], b[160];
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 1 (target) has shape %s, want input 0's "
                         "shape %s without dim 1",
                         wm_shape_format(ts, a, sizeof(a)),
                         wm_shape_format(xs, b, sizeof(b)));
    }
  }
  WM_RETURN_IF_ERROR(
      check_vector(ctx, 2, "weight", xs->rank >= 2 ? xs->dims[1] : -1));
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (strcmp(red, "none") == 0) {
    if (ts->rank >= 0) {
      wm_op_set_out(ctx, 0, dt, ts);
    } else if (xs->rank >= 2) {
      wm_shape_t s = *xs;
      s.rank--;
      memmove(s.dims + 1, s.dims + 2, sizeof(int64_t) * (size_t)(s.rank - 1));
      wm_op_set_out(ctx, 0, dt, &s);
    } else {
      wm_op_set_out_unknown(ctx, 0, dt);
    }
  } else {
    wm_shape_t scalar = {0, {0}};
    wm_op_set_out(ctx, 0, dt, &scalar);
  }
  wm_op_set_out(ctx, 1, dt, xs);  // SoftmaxCrossEntropyLoss log_prob
  return NULL;
}

// Negative log-likelihood of log-probabilities |lp| [N, C, D] into output
// 0, honouring weight (input 2), ignore_index and reduction.
static wm_status_t nll(wm_op_ctx_t *ctx, const double *lp) {
  const wm_tensor_t *xt = ctx->in[0], *tt = ctx->in[1];
  size_t n = (size_t)xt->shape.dims[0];
  int64_t c = xt->shape.dims[1];
  size_t d = prod(xt->shape.dims + 2, xt->shape.rank - 2);
  const char *red;
  int64_t ii;
  WM_RETURN_IF_ERROR(wm_op_attr_string(ctx, "reduction", "mean", &red));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "ignore_index", 0, &ii));
  bool has_ii = wm_node_attr(ctx->node, "ignore_index") != NULL;
  if (tt->count != n * d) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "target has %zu elements, want %zu", tt->count, n * d);
  }
  double *wt = NULL, *loss = NULL;
  WM_RETURN_IF_ERROR(load_input(ctx, 2, &wt));
  wm_status_t st = alloc_f64(ctx, n * d, &loss);
  if (st) {
    free(wt);
    return st;
  }
  double sum = 0, wsum = 0;
  for (size_t b = 0; b < n && !st; b++) {
    for (size_t j = 0; j < d; j++) {
      size_t at = b * d + j;
      int64_t t = wm_tensor_get_i64(tt, at);
      if (has_ii && t == ii) {
        continue;
      }
      if (t < 0 || t >= c) {
        st = WM_OP_ERROR(ctx, OUT_OF_RANGE,
                         "target %lld at index %zu is out of range [0, %lld)",
                         (long long)t, at, (long long)c);
        break;
      }
      double w = wt ? wt[t] : 1.0;
      loss[at] = -lp[(b * (size_t)c + (size_t)t) * d + j] * w;
      sum += loss[at];
      wsum += w;
    }
  }
  if (!st) {
    if (strcmp(red, "none") == 0) {
      store_f64(ctx->out[0], loss);
    } else {
      // mean divides by the summed weights of the counted elements.
      wm_tensor_set_f64(ctx->out[0], 0,
                        strcmp(red, "sum") == 0 ? sum : sum / wsum);
    }
  }
  free(wt);
  free(loss);
  return st;
}

static wm_status_t nll_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(loss_infer(ctx));
  double *x;
  WM_RETURN_IF_ERROR(load_f64(ctx, ctx->in[0], &x));
  wm_status_t st = nll(ctx, x);
  free(x);
  return st;
}

static wm_status_t sce_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(loss_infer(ctx));
  const wm_tensor_t *xt = ctx->in[0];
  size_t n = (size_t)xt->shape.dims[0], c = (size_t)xt->shape.dims[1];
  size_t d = prod(xt->shape.dims + 2, xt->shape.rank - 2);
  double *x;
  WM_RETURN_IF_ERROR(load_f64(ctx, xt, &x));
  // log_softmax over dim 1, in place.
  for (size_t b = 0; b < n; b++) {
    for (size_t j = 0; j < d; j++) {
      double *p = x + b * c * d + j;
      double mx = -INFINITY, s = 0;
      for (size_t k = 0; k < c; k++) {
        mx = p[k * d] > mx ? p[k * d] : mx;
      }
      for (size_t k = 0; k < c; k++) {
        s += exp(p[k * d] - mx);
      }
      double lse = mx + log(s);
      for (size_t k = 0; k < c; k++) {
        p[k * d] -= lse;
      }
    }
  }
  wm_status_t st = nll(ctx, x);
  if (!st && wm_op_has_output(ctx, 1)) {
    store_f64(ctx->out[1], x);
  }
  free(x);
  return st;
}

static void nll_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  const wm_shape_t *ts = wm_op_in_shape(ctx, 1);
  double n = numel_f(ts);
  if (n >= 0) {
    out->flops = 2 * n;  // weight multiply and reduction
  }
}

static void sce_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  nll_cost(ctx, out);
  double x = numel_f(wm_op_in_shape(ctx, 0));
  double rows = numel_f(wm_op_in_shape(ctx, 1));
  if (x >= 0 && rows >= 0) {
    out->flops += 4 * x;              // max, sub, sum, sub
    out->transcendentals = x + rows;  // exp per element, log per row
  }
}

// ------------------------------------------------------- LpNormalization

static wm_status_t lpn_setup(const wm_op_ctx_t *ctx, int32_t *out_axis,
                             int64_t *out_p) {
  int64_t axis;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "axis", -1, &axis));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "p", 2, out_p));
  if (*out_p != 1 && *out_p != 2) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute p is %lld, want 1 or 2", (long long)*out_p);
  }
  *out_axis = -1;
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  if (xs->rank < 0) {
    return NULL;
  }
  if (xs->rank == 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 is a scalar, want rank at least 1");
  }
  return wm_op_axis(ctx, axis, xs->rank, "axis", out_axis);
}

static wm_status_t lpn_infer(wm_op_ctx_t *ctx) {
  int32_t axis;
  int64_t p;
  WM_RETURN_IF_ERROR(lpn_setup(ctx, &axis, &p));
  return wm_op_infer_same(ctx);
}

// y = x / ||x||_p along the axis; a zero norm gives zeros, not NaN.
static wm_status_t lpn_run(wm_op_ctx_t *ctx) {
  int32_t axis;
  int64_t p;
  WM_RETURN_IF_ERROR(lpn_setup(ctx, &axis, &p));
  const wm_tensor_t *xt = ctx->in[0];
  const wm_shape_t *s = &xt->shape;
  size_t outer = prod(s->dims, axis), len = (size_t)s->dims[axis];
  size_t inner = prod(s->dims + axis + 1, s->rank - axis - 1);
  double *x = NULL;
  WM_RETURN_IF_ERROR(load_f64(ctx, xt, &x));
  for (size_t o = 0; o < outer; o++) {
    for (size_t in = 0; in < inner; in++) {
      size_t base = o * len * inner + in;
      double acc = 0;
      for (size_t k = 0; k < len; k++) {
        double v = x[base + k * inner];
        acc += p == 1 ? fabs(v) : v * v;
      }
      double norm = p == 1 ? acc : sqrt(acc);
      for (size_t k = 0; k < len; k++) {
        size_t j = base + k * inner;
        x[j] = norm == 0.0 ? 0.0 : x[j] / norm;
      }
    }
  }
  store_f64(ctx->out[0], x);
  free(x);
  return NULL;
}

static void lpn_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  norm_cost(ctx, 3, 0, out);  // square, sum, divide
}

// ---------------------------------------------------- GroupNormalization

// X [N, C, D...] in num_groups groups of channels; scale and bias have
// one entry per channel from opset 21, one per group before.
static wm_status_t gn_setup(const wm_op_ctx_t *ctx, int64_t *out_groups) {
  int64_t g, stash;
  const wm_attr_t *a = wm_node_attr(ctx->node, "num_groups");
  if (!a) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute num_groups is required");
  }
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "num_groups", 1, &g));
  if (g < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute num_groups is %lld, want at least 1",
                       (long long)g);
  }
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "stash_type", WM_DTYPE_FLOAT, &stash));
  if (stash < 0 || stash >= WM_DTYPE_COUNT ||
      !wm_dtype_is_float((wm_dtype_t)stash)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute stash_type is %lld, want a float dtype",
                       (long long)stash);
  }
  WM_RETURN_IF_ERROR(check_rank(ctx, 0, 2, WM_MAX_RANK));
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, 1));
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, 2));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  int64_t c = xs->rank >= 2 ? xs->dims[1] : -1;
  if (c >= 0 && c % g != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has %lld channels, not a multiple of "
                       "num_groups %lld",
                       (long long)c, (long long)g);
  }
  int64_t per = ctx->opset >= 21 ? c : g;
  WM_RETURN_IF_ERROR(check_vector(ctx, 1, "scale", per));
  WM_RETURN_IF_ERROR(check_vector(ctx, 2, "bias", per));
  *out_groups = g;
  return NULL;
}

static wm_status_t gn_infer(wm_op_ctx_t *ctx) {
  int64_t g;
  WM_RETURN_IF_ERROR(gn_setup(ctx, &g));
  return wm_op_infer_same(ctx);
}

static wm_status_t gn_run(wm_op_ctx_t *ctx) {
  int64_t groups;
  WM_RETURN_IF_ERROR(gn_setup(ctx, &groups));
  double eps;
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  const wm_tensor_t *xt = ctx->in[0];
  size_t n = (size_t)xt->shape.dims[0], c = (size_t)xt->shape.dims[1];
  size_t g = (size_t)groups, cg = c / g;
  size_t inner = prod(xt->shape.dims + 2, xt->shape.rank - 2);
  size_t span = cg * inner;
  bool per_channel = ctx->opset >= 21;
  double *x = NULL, *sc = NULL, *bi = NULL;
  wm_status_t st = load_f64(ctx, xt, &x);
  if (!st) {
    st = load_f64(ctx, ctx->in[1], &sc);
  }
  if (!st) {
    st = load_f64(ctx, ctx->in[2], &bi);
  }
  if (st) {
    goto done;
  }
  for (size_t b = 0; b < n; b++) {
    for (size_t gi = 0; gi < g; gi++) {
      double *xp = x + (b * c + gi * cg) * inner;
      double s = 0, v = 0;
      for (size_t j = 0; j < span; j++) {
        s += xp[j];
      }
      double mean = span ? s / (double)span : 0;
      for (size_t j = 0; j < span; j++) {
        v += (xp[j] - mean) * (xp[j] - mean);
      }
      double inv = 1.0 / sqrt((span ? v / (double)span : 0) + eps);
      for (size_t j = 0; j < span; j++) {
        size_t k = per_channel ? gi * cg + j / inner : gi;
        xp[j] = (xp[j] - mean) * inv * sc[k] + bi[k];
      }
    }
  }
  store_f64(ctx->out[0], x);
done:
  free(x);
  free(sc);
  free(bi);
  return st;
}

static void gn_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  norm_cost(ctx, 8, 0, out);
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  int64_t g = wm_node_attr_int(ctx->node, "num_groups", 1);
  if (xs->rank >= 1 && xs->dims[0] >= 0 && g > 0) {
    out->transcendentals = (double)xs->dims[0] * (double)g;
  }
}

// ----------------------------------------------------------------- Col2Im

// Col2Im geometry: the image and block shapes (from inputs 1 and 2) and
// the window over them.
typedef struct col2im {
  int32_t nsp;                  // spatial dims; -1 when unknown
  bool known;                   // image and block shapes are known
  int64_t image[MAX_SPATIAL];   // output spatial dims
  int64_t blocks[MAX_SPATIAL];  // sliding block positions per dim
  window_t w;                   // kernel = block shape, pads, strides...
} col2im_t;

static wm_status_t col2im_setup(const wm_op_ctx_t *ctx, col2im_t *g) {
  memset(g, 0, sizeof(*g));
  g->nsp = -1;
  WM_RETURN_IF_ERROR(check_rank(ctx, 0, 3, 3));
  for (int32_t i = 1; i < 3; i++) {
    wm_dtype_t d = wm_op_in_dtype(ctx, i);
    if (d != WM_DTYPE_UNDEFINED && d != WM_DTYPE_INT64) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d has dtype %s, want int64", i,
                         wm_dtype_name(d));
    }
    WM_RETURN_IF_ERROR(
        check_vector(ctx, i, i == 1 ? "image_shape" : "block_shape", -1));
    const wm_shape_t *s = wm_op_in_shape(ctx, i);
    if (s->rank == 1 && s->dims[0] >= 0) {
      if (s->dims[0] < 1 || s->dims[0] > MAX_SPATIAL) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "input %d has %lld values, want 1 to %d", i,
                           (long long)s->dims[0], MAX_SPATIAL);
      }
      if (g->nsp >= 0 && g->nsp != (int32_t)s->dims[0]) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "image_shape has %d values but block_shape has "
                           "%lld",
                           g->nsp, (long long)s->dims[0]);
      }
      g->nsp = (int32_t)s->dims[0];
    }
  }
  if (g->nsp < 0) {
    return NULL;
  }
  window_t *w = &g->w;
  w->nsp = g->nsp;
  WM_RETURN_IF_ERROR(
      wm_op_attr_ints_n(ctx, "strides", g->nsp, 1, 1, w->strides, NULL));
  WM_RETURN_IF_ERROR(
      wm_op_attr_ints_n(ctx, "dilations", g->nsp, 1, 1, w->dilations, NULL));
  WM_RETURN_IF_ERROR(
      wm_op_attr_ints_n(ctx, "pads", 2 * g->nsp, 0, 0, w->pads, NULL));
  if (!ctx->in[1] || !ctx->in[2]) {
    return NULL;
  }
  for (int32_t i = 0; i < g->nsp; i++) {
    g->image[i] = wm_tensor_get_i64(ctx->in[1], (size_t)i);
    w->kernel[i] = wm_tensor_get_i64(ctx->in[2], (size_t)i);
    if (g->image[i] < 1 || w->kernel[i] < 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "image_shape[%d] is %lld and block_shape[%d] is "
                         "%lld, want both at least 1",
                         i, (long long)g->image[i], i, (long long)w->kernel[i]);
    }
  }
  WM_RETURN_IF_ERROR(window_forward(ctx, w, g->image, g->blocks));
  g->known = true;
  return NULL;
}

static wm_status_t col2im_infer(wm_op_ctx_t *ctx) {
  col2im_t g;
  WM_RETURN_IF_ERROR(col2im_setup(ctx, &g));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (g.nsp < 0) {
    wm_op_set_out_unknown(ctx, 0, dt);
    return NULL;
  }
  wm_shape_t ys;
  ys.rank = g.nsp + 2;
  ys.dims[0] = xs->rank == 3 ? xs->dims[0] : -1;
  ys.dims[1] = -1;
  for (int32_t i = 0; i < g.nsp; i++) {
    ys.dims[2 + i] = g.known ? g.image[i] : -1;
  }
  if (g.known) {
    int64_t k = 1, l = 1;
    for (int32_t i = 0; i < g.nsp; i++) {
      if (!wm_checked_mul_i64(k, g.w.kernel[i], &k) ||
          !wm_checked_mul_i64(l, g.blocks[i], &l)) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "block_shape or block count overflows");
      }
    }
    int64_t ck = xs->rank == 3 ? xs->dims[1] : -1;
    int64_t len = xs->rank == 3 ? xs->dims[2] : -1;
    if (ck >= 0 && ck % k != 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 0 dim 1 is %lld, not a multiple of the "
                         "block size %lld",
                         (long long)ck, (long long)k);
    }
    if (len >= 0 && len != l) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 0 dim 2 is %lld, want %lld sliding blocks",
                         (long long)len, (long long)l);
    }
    ys.dims[1] = ck >= 0 ? ck / k : -1;
  }
  return wm_op_set_out_checked(ctx, 0, dt, &ys);
}

// Adds every block column into the image: each input element lands on at
// most one image element, so the work is linear in the input.
static wm_status_t col2im_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(col2im_infer(ctx));
  col2im_t g;
  WM_RETURN_IF_ERROR(col2im_setup(ctx, &g));
  const wm_tensor_t *xt = ctx->in[0];
  wm_tensor_t *yt = ctx->out[0];
  if (yt->count == 0) {
    return NULL;  // nothing to add; the block shape may be huge
  }
  int32_t nsp = g.nsp;
  size_t nc = (size_t)yt->shape.dims[0] * (size_t)yt->shape.dims[1];
  size_t img = prod(g.image, nsp), nb = prod(g.blocks, nsp);
  int64_t *taps = NULL;
  size_t nt;
  WM_RETURN_IF_ERROR(window_taps(ctx, &g.w, &taps, &nt));
  bool is_int = wm_dtype_is_int(xt->dtype);
  double *acc = NULL;
  int64_t *iacc = NULL;
  wm_status_t st = NULL;
  if (is_int) {
    iacc = wm_calloc(yt->count ? yt->count : 1, sizeof(int64_t));
    if (!iacc) {
      st = WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for %zu elements", yt->count);
    }
  } else {
    st = alloc_f64(ctx, yt->count, &acc);
  }
  if (st) {
    free(taps);
    return st;
  }
  for (size_t plane = 0; plane < nc; plane++) {
    for (size_t t = 0; t < nt; t++) {
      size_t src = (plane * nt + t) * nb;
      int64_t pos[MAX_SPATIAL] = {0};
      for (size_t b = 0; b < nb; b++, odometer_next(pos, g.blocks, nsp)) {
        size_t off;
        if (!tap_offset(&g.w, pos, taps + t * (size_t)nsp, g.image, &off)) {
          continue;
        }
        size_t dst = plane * img + off;
        if (is_int) {
          iacc[dst] += wm_tensor_get_i64(xt, src + b);
        } else {
          acc[dst] += wm_tensor_get_f64(xt, src + b);
        }
      }
    }
  }
  for (size_t i = 0; i < yt->count; i++) {
    if (is_int) {
      wm_tensor_set_i64(yt, i, iacc[i]);
    } else {
      wm_tensor_set_f64(yt, i, acc[i]);
    }
  }
  free(acc);
  free(iacc);
  free(taps);
  return NULL;
}

static void col2im_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  double n = numel_f(wm_op_in_shape(ctx, 0));
  out->flops = n > 0 ? n : 0;  // one add per input element
}

// ------------------------------------------------------------- DeformConv

// DeformConv: X [N, C, D...], W [M, C/group, K...], offset [N,
// offset_group * prod(K) * nsp, O...], B [M], mask [N, offset_group *
// prod(K), O...]. Each tap samples X multilinearly at its deformed
// position, with zeros outside the image.
static wm_status_t dc_setup(wm_op_ctx_t *ctx, window_t *w, int64_t *in_sp,
                            int64_t *out_sp, bool *out_known,
                            int64_t *out_group, int64_t *out_ogroup) {
  WM_RETURN_IF_ERROR(conv_setup(ctx, w, in_sp, out_sp, out_known));
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, 3));
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, 4));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "group", 1, out_group));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "offset_group", 1, out_ogroup));
  if (*out_group < 1 || *out_ogroup < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attributes group %lld and offset_group %lld, want "
                       "both at least 1",
                       (long long)*out_group, (long long)*out_ogroup);
  }
  if (!*out_known) {
    return NULL;
  }
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ws = wm_op_in_shape(ctx, 1);
  int64_t group = *out_group, og = *out_ogroup;
  int64_t c, m;
  WM_RETURN_IF_ERROR(check_groups(ctx, xs, ws, group, &c, &m));
  if (c >= 0 && c % og != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has %lld channels, not a multiple of "
                       "offset_group %lld",
                       (long long)c, (long long)og);
  }
  WM_RETURN_IF_ERROR(check_vector(ctx, 3, "B", m));
  // Channels of offset and mask when the kernel is known.
  int64_t k = 1;
  bool k_known = true;
  for (int32_t i = 0; i < w->nsp; i++) {
    k_known = k_known && w->kernel[i] >= 0;
    if (k_known && !wm_checked_mul_i64(k, w->kernel[i], &k)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "kernel is too large");
    }
  }
  int64_t mask_c = -1, off_c = -1;
  if (k_known && (!wm_checked_mul_i64(k, og, &mask_c) ||
                  !wm_checked_mul_i64(mask_c, w->nsp, &off_c))) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "offset channels overflow");
  }
  for (int32_t i = 2; i < 5; i += 2) {
    const wm_shape_t *s = wm_op_in_shape(ctx, i);
    if (!wm_op_has_input(ctx, i) || s->rank < 0) {
      continue;
    }
    int64_t want_c = i == 2 ? off_c : mask_c;
    bool ok = s->rank == w->nsp + 2;
    for (int32_t d = 0; ok && d < s->rank; d++) {
      int64_t e = d == 0   ? (xs->rank >= 0 ? xs->dims[0] : -1)
                  : d == 1 ? want_c
                           : out_sp[d - 2];
      ok = s->dims[d] < 0 || e < 0 || s->dims[d] == e;
    }
    if (!ok) {
      char buf[160];
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d (%s) has shape %s, want [N, %lld, output "
                         "spatial dims]",
                         i, i == 2 ? "offset" : "mask",
                         wm_shape_format(s, buf, sizeof(buf)),
                         (long long)want_c);
    }
  }
  return NULL;
}

static wm_status_t dc_infer(wm_op_ctx_t *ctx) {
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL], group, og;
  bool known;
  WM_RETURN_IF_ERROR(dc_setup(ctx, &w, in_sp, out_sp, &known, &group, &og));
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (!known) {
    wm_op_set_out_unknown(ctx, 0, dt);
    return NULL;
  }
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ws = wm_op_in_shape(ctx, 1);
  wm_shape_t os;
  os.rank = w.nsp + 2;
  os.dims[0] = xs->rank >= 0 ? xs->dims[0] : -1;
  os.dims[1] = ws->rank >= 0 ? ws->dims[0] : -1;
  for (int32_t i = 0; i < w.nsp; i++) {
    os.dims[2 + i] = out_sp[i];
  }
  return wm_op_set_out_checked(ctx, 0, dt, &os);
}

// Multilinear sample of the |nsp|-dim plane |x| (dims |sp|) at |p|;
// corners outside the plane count as zero.
static double dc_sample(const double *x, const int64_t *sp, int32_t nsp,
                        const double *p) {
  int64_t base[MAX_SPATIAL];
  double frac[MAX_SPATIAL];
  for (int32_t d = 0; d < nsp; d++) {
    // Beyond (-1, size) every corner is outside; also rejects NaN.
    if (!(p[d] > -1.0 && p[d] < (double)sp[d])) {
      return 0.0;
    }
    double f = floor(p[d]);
    base[d] = (int64_t)f;
    frac[d] = p[d] - f;
  }
  double acc = 0;
  for (uint32_t corner = 0; corner < (1u << nsp); corner++) {
    double wgt = 1;
    size_t off = 0;
    bool inside = true;
    for (int32_t d = 0; d < nsp && inside; d++) {
      bool hi = (corner >> d) & 1u;
      int64_t q = base[d] + (hi ? 1 : 0);
      inside = q >= 0 && q < sp[d];
      wgt *= hi ? frac[d] : 1.0 - frac[d];
      off = off * (size_t)sp[d] + (size_t)q;
    }
    if (inside && wgt != 0.0) {
      acc += wgt * x[off];
    }
  }
  return acc;
}

static wm_status_t dc_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(dc_infer(ctx));
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL], group, ogroup;
  bool known;
  WM_RETURN_IF_ERROR(dc_setup(ctx, &w, in_sp, out_sp, &known, &group, &ogroup));
  const wm_tensor_t *xt = ctx->in[0], *wt = ctx->in[1];
  size_t n = (size_t)xt->shape.dims[0], c = (size_t)xt->shape.dims[1];
  size_t m = (size_t)wt->shape.dims[0], cg = (size_t)wt->shape.dims[1];
  size_t mg = m / (size_t)group, cog = c / (size_t)ogroup;
  size_t og_n = (size_t)ogroup;
  int32_t nsp = w.nsp;
  size_t in_n = prod(in_sp, nsp), out_n = prod(out_sp, nsp);
  conv_bufs_t bf;
  double *off = NULL, *mask = NULL;
  wm_status_t st = conv_bufs_load(ctx, &w, &bf);
  if (!st) {
    free(bf.b);  // conv_bufs_load read the offsets as input 2
    bf.b = NULL;
    st = load_f64(ctx, ctx->in[2], &off);
  }
  if (!st) {
    st = load_input(ctx, 3, &bf.b);
  }
  if (!st) {
    st = load_input(ctx, 4, &mask);
  }
  if (st) {
    goto done;
  }
  size_t nt = bf.nt;
  for (size_t in = 0; in < n; in++) {
    for (size_t om = 0; om < m; om++) {
      size_t g = om / mg;
      double *yp = bf.y + (in * m + om) * out_n;
      int64_t pos[MAX_SPATIAL] = {0};
      for (size_t o = 0; o < out_n; o++, odometer_next(pos, out_sp, nsp)) {
        double acc = bf.b ? bf.b[om] : 0.0;
        for (size_t ic = 0; ic < cg; ic++) {
          size_t xc = g * cg + ic, og = xc / cog;
          const double *xp = bf.x + (in * c + xc) * in_n;
          for (size_t t = 0; t < nt; t++) {
            double p[MAX_SPATIAL];
            size_t ch = (og * nt + t) * (size_t)nsp;
            for (int32_t d = 0; d < nsp; d++) {
              double delta =
                  off[((in * og_n * nt * (size_t)nsp) + ch + (size_t)d) *
                          out_n +
                      o];
              p[d] = (double)(pos[d] * w.strides[d] - w.pads[d]) +
                     (double)bf.taps[t * (size_t)nsp + (size_t)d] + delta;
            }
            double v = dc_sample(xp, in_sp, nsp, p);
            if (mask) {
              v *= mask[((in * og_n + og) * nt + t) * out_n + o];
            }
            acc += v * bf.k[(om * cg + ic) * nt + t];
          }
        }
        yp[o] = acc;
      }
    }
  }
  store_f64(ctx->out[0], bf.y);
done:
  conv_bufs_free(&bf);
  free(off);
  free(mask);
  return st;
}

static void dc_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  conv_cost(ctx, out);
  const wm_shape_t *ws = wm_op_in_shape(ctx, 1);
  if (ws->rank >= 3) {
    // Bilinear sampling: about 3 flops per corner per tap.
    out->flops += out->macs * 3.0 * (double)(1u << (ws->rank - 2));
  }
}

// ------------------------------------------------- compute definitions

// Whether input 0 and output 0 are float32 of known shape.
static bool define_float_known(const wm_op_ctx_t *ctx) {
  return wm_op_in_dtype(ctx, 0) == WM_DTYPE_FLOAT &&
         wm_shape_is_known(wm_op_in_shape(ctx, 0)) &&
         ctx->out_types[0].dtype == WM_DTYPE_FLOAT &&
         wm_shape_is_known(&ctx->out_types[0].shape);
}

// Pools as reductions over their window: an axis per output dim, one per
// window dim; X read at o * stride + k * dilation - pad, guarded with -inf
// (max) or 0 (average, whose divisor is then the window's size: with
// count_include_pad, or where no window leaves the input) or LpPool's
// (sum of |x|^p)^(1/p). Global pools reduce every spatial dim. MaxPool's
// indices have none.
static wm_status_t pool_define(const wm_op_ctx_t *ctx, pool_kind_t kind,
                               bool global, wm_gen_compute_t *out) {
  pool_t pl;
  WM_RETURN_IF_ERROR(pool_setup((wm_op_ctx_t *)ctx, kind, global, &pl));
  int32_t nsp = pl.w.nsp;
  bool padded = false;
  for (int32_t i = 0; !global && i < nsp; i++) {
    int64_t last = (pl.out[i] - 1) * pl.w.strides[i] +
                   (pl.w.kernel[i] - 1) * pl.w.dilations[i] - pl.w.pads[i];
    padded |= pl.w.pads[i] != 0 || last >= pl.in[i];
  }
  if (!define_float_known(ctx) || !pl.known_rank || ctx->n_out > 1 ||
      2 + 2 * nsp > WM_GEN_MAX_AXES ||
      (kind == POOL_AVG && padded && !pl.count_include_pad) ||
      (kind == POOL_AVG && pl.w.ceil_mode)) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 of "
                       "known shape; average pools with a constant divisor)");
  }
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0), *ys = &ctx->out_types[0].shape;
  WM_RETURN_IF_ERROR(
      wm_gen_begin(out, ctx->node->op_type, ys->rank, ys->dims, NULL));
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  acc.coef[0][0] = 1;
  acc.coef[1][1] = 1;
  double taps = 1;
  for (int32_t i = 0; i < nsp; i++) {
    char name[8];
    int32_t k;
    snprintf(name, sizeof(name), "k%d", (int)i);
    WM_RETURN_IF_ERROR(wm_gen_reduce_axis(out, name, pl.w.kernel[i], &k));
    acc.coef[2 + i][2 + i] = global ? 0 : pl.w.strides[i];
    acc.coef[2 + i][k] = global ? 1 : pl.w.dilations[i];
    acc.off[2 + i] = global ? 0 : -pl.w.pads[i];
    taps *= (double)pl.w.kernel[i];
  }
  acc.guard = padded;
  acc.fill = kind == POOL_MAX ? -INFINITY : 0.0f;
  int32_t x, epi = -1;
  WM_RETURN_IF_ERROR(
      wm_gen_input_access(out, "X", xs->rank, xs->dims, NULL, &acc, &x));
  out->tensors[out->n_tensors - 1].operand = 0;
  wm_gen_builder_t b = {out, NULL};
  int32_t a = -1;
  if (kind != POOL_MAX) {
    WM_RETURN_IF_ERROR(wm_gen_acc(out, &a));
  }
  if (kind == POOL_AVG) {
    epi = wm_gen_f2(&b, WM_GEN_MUL, a, wm_gen_k(&b, (float)(1.0 / taps)));
  } else if (kind == POOL_LP) {  // (sum of |x|^p)^(1/p)
    x = wm_gen_f2(&b, WM_GEN_POW, wm_gen_f1(&b, WM_GEN_ABS, x),
                  wm_gen_k(&b, (float)pl.p));
    epi = wm_gen_f2(&b, WM_GEN_POW, a, wm_gen_k(&b, (float)(1.0 / pl.p)));
  }
  WM_RETURN_IF_ERROR(b.st);
  return wm_gen_finish_reduce(out, kind == POOL_MAX ? WM_GEN_MAX : WM_GEN_ADD,
                              kind == POOL_MAX ? -INFINITY : 0.0f, x, epi);
}
static wm_status_t maxpool_define(const wm_op_ctx_t *ctx,
                                  wm_gen_compute_t *out) {
  return pool_define(ctx, POOL_MAX, false, out);
}
static wm_status_t avgpool_define(const wm_op_ctx_t *ctx,
                                  wm_gen_compute_t *out) {
  return pool_define(ctx, POOL_AVG, false, out);
}
static wm_status_t gmaxpool_define(const wm_op_ctx_t *ctx,
                                   wm_gen_compute_t *out) {
  return pool_define(ctx, POOL_MAX, true, out);
}
static wm_status_t gavgpool_define(const wm_op_ctx_t *ctx,
                                   wm_gen_compute_t *out) {
  return pool_define(ctx, POOL_AVG, true, out);
}
static wm_status_t lppool_define(const wm_op_ctx_t *ctx,
                                 wm_gen_compute_t *out) {
  return pool_define(ctx, POOL_LP, false, out);
}
static wm_status_t glppool_define(const wm_op_ctx_t *ctx,
                                  wm_gen_compute_t *out) {
  return pool_define(ctx, POOL_LP, true, out);
}

// Dropout in inference (one output, no training mode input or a constant
// false one): the identity.
static wm_status_t dropout_define(const wm_op_ctx_t *ctx,
                                  wm_gen_compute_t *out) {
  const wm_tensor_t *tm = wm_op_has_input(ctx, 2) ? ctx->in[2] : NULL;
  bool training = wm_op_has_input(ctx, 2) &&
                  (!tm || tm->count != 1 || wm_tensor_get_f64(tm, 0) != 0);
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  if (training || ctx->n_out > 1 || xs->rank < 0) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for Dropout in training or "
                       "with its mask");
  }
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  for (int32_t d = 0; d < xs->rank; d++) {
    acc.coef[d][d] = 1;
  }
  return wm_op_define_copy(ctx, out, xs->rank, xs->dims, NULL, &acc);
}

// BatchNormalization in inference: (x - mean) / sqrt(var + epsilon) *
// scale + B, the parameters per channel (dim 1).
static wm_status_t bn_define(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  bool training = false, spatial = true;
  WM_RETURN_IF_ERROR(bn_setup((wm_op_ctx_t *)ctx, &training, &spatial));
  double eps;
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  bool ok = define_float_known(ctx) && !training && spatial &&
            ctx->n_out == 1 && xs->rank >= 2;
  for (int32_t i = 1; ok && i < 5; i++) {
    const wm_shape_t *s = wm_op_in_shape(ctx, i);
    ok = wm_op_in_dtype(ctx, i) == WM_DTYPE_FLOAT && s->rank == 1 &&
         s->dims[0] == xs->dims[1];
  }
  if (!ok) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (inference, "
                       "float32 of known shape, parameters per channel)");
  }
  WM_RETURN_IF_ERROR(
      wm_gen_begin(out, "BatchNormalization", xs->rank, xs->dims, NULL));
  int32_t loads[5];
  static const char *const names[5] = {"X", "scale", "B", "mean", "var"};
  for (int32_t i = 0; i < 5; i++) {
    wm_gen_access_t acc;
    memset(&acc, 0, sizeof(acc));
    const wm_shape_t *s = wm_op_in_shape(ctx, i);
    for (int32_t d = 0; d < s->rank; d++) {
      acc.coef[d][i == 0 ? d : 1] = 1;
    }
    WM_RETURN_IF_ERROR(wm_gen_input_access(out, names[i], s->rank, s->dims,
                                           NULL, &acc, &loads[i]));
    out->tensors[out->n_tensors - 1].operand = i;
  }
  wm_gen_builder_t b = {out, NULL};
  int32_t inv =
      wm_gen_f1(&b, WM_GEN_SQRT,
                wm_gen_f2(&b, WM_GEN_ADD, loads[4], wm_gen_k(&b, (float)eps)));
  int32_t y = wm_gen_f2(
      &b, WM_GEN_ADD,
      wm_gen_f2(&b, WM_GEN_MUL,
                wm_gen_f2(&b, WM_GEN_DIV,
                          wm_gen_f2(&b, WM_GEN_SUB, loads[0], loads[3]), inv),
                loads[1]),
      loads[2]);
  WM_RETURN_IF_ERROR(b.st);
  return wm_gen_finish(out, y);
}

// LRN: x / (bias + alpha / size * sum of x^2 over the channel window)^beta,
// the window a reduce axis reading channels c - floor((size-1)/2) on,
// guarded (0 outside).
static wm_status_t lrn_define(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  lrn_t l = {1, 0, 0, 0};
  WM_RETURN_IF_ERROR(lrn_setup((wm_op_ctx_t *)ctx, &l));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  if (!define_float_known(ctx) || xs->rank < 2 ||
      xs->rank + 1 > WM_GEN_MAX_AXES) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 of "
                       "known shape)");
  }
  WM_RETURN_IF_ERROR(wm_gen_begin(out, "LRN", xs->rank, xs->dims, NULL));
  int32_t j, xw, x;
  WM_RETURN_IF_ERROR(wm_gen_reduce_axis(out, "j", l.size, &j));
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  for (int32_t d = 0; d < xs->rank; d++) {
    acc.coef[d][d] = 1;
  }
  acc.coef[1][j] = 1;
  acc.off[1] = -((l.size - 1) / 2);
  acc.guard = true;
  WM_RETURN_IF_ERROR(
      wm_gen_input_access(out, "X", xs->rank, xs->dims, NULL, &acc, &xw));
  out->tensors[out->n_tensors - 1].operand = 0;
  acc.coef[1][j] = 0;
  acc.off[1] = 0;
  acc.guard = false;
  WM_RETURN_IF_ERROR(
      wm_gen_input_access(out, "X1", xs->rank, xs->dims, NULL, &acc, &x));
  out->tensors[out->n_tensors - 1].operand = 0;
  wm_gen_builder_t b = {out, NULL};
  int32_t body = wm_gen_f2(&b, WM_GEN_MUL, xw, xw), a;
  WM_RETURN_IF_ERROR(b.st);
  WM_RETURN_IF_ERROR(wm_gen_acc(out, &a));
  int32_t den = wm_gen_f2(
      &b, WM_GEN_POW,
      wm_gen_f2(&b, WM_GEN_ADD, wm_gen_k(&b, (float)l.bias),
                wm_gen_f2(&b, WM_GEN_MUL,
                          wm_gen_k(&b, (float)(l.alpha / (double)l.size)), a)),
      wm_gen_k(&b, (float)l.beta));
  int32_t y = wm_gen_f2(&b, WM_GEN_DIV, x, den);
  WM_RETURN_IF_ERROR(b.st);
  return wm_gen_finish_reduce(out, WM_GEN_ADD, 0.0f, body, y);
}

// ------------------------------------------------------------------ table

#define T_MAXPOOL (WM_TYPES_FLOAT | WM_T(INT8) | WM_T(UINT8))

const wm_op_def_t wm_ops_nn[] = {
    {"Conv", "", 1, 2, 3, 1, 1, WM_TYPES_FLOAT, conv_infer, conv_run, conv_cost,
     0, conv_resolve, conv_define},
    {"ConvTranspose", "", 1, 2, 3, 1, 1, WM_TYPES_FLOAT, convt_infer, convt_run,
     convt_cost, 0, convt_resolve},
    {"MaxPool", "", 1, 1, 1, 1, 2, T_MAXPOOL, maxpool_infer, maxpool_run,
     maxpool_cost, 0, maxpool_resolve, maxpool_define},
    {"AveragePool", "", 1, 1, 1, 1, 1, WM_TYPES_FLOAT, avgpool_infer,
     avgpool_run, avgpool_cost, 0, avgpool_resolve, avgpool_define},
    {"LpPool", "", 1, 1, 1, 1, 1, WM_TYPES_FLOAT, lppool_infer, lppool_run,
     lppool_cost, 0, lppool_resolve, lppool_define},
    {"GlobalMaxPool", "", 1, 1, 1, 1, 1, WM_TYPES_FLOAT, gmaxpool_infer,
     gmaxpool_run, gmaxpool_cost, 0, NULL, gmaxpool_define},
    {"GlobalAveragePool", "", 1, 1, 1, 1, 1, WM_TYPES_FLOAT, gavgpool_infer,
     gavgpool_run, gavgpool_cost, 0, NULL, gavgpool_define},
    {"GlobalLpPool", "", 1, 1, 1, 1, 1, WM_TYPES_FLOAT, glppool_infer,
     glppool_run, glppool_cost, 0, glppool_resolve, glppool_define},
    {"LRN", "", 1, 1, 1, 1, 1, WM_TYPES_FLOAT, lrn_infer, lrn_run, lrn_cost, 0,
     NULL, lrn_define},
    {"BatchNormalization", "", 1, 5, 5, 1, 5, WM_TYPES_FLOAT, bn_infer, bn_run,
     bn_cost, 0, bn_resolve, bn_define},
    {"BatchNormalization", "", 14, 5, 5, 1, 3, WM_TYPES_FLOAT, bn_infer, bn_run,
     bn_cost, 0, bn_resolve, bn_define},
    {"LayerNormalization", "", 17, 2, 3, 1, 3, WM_TYPES_FLOAT, ln_infer, ln_run,
     ln_cost, 0, ln_resolve},
    // The same operator at any opset: what the layernorm pass writes for
    // the nodes exporters spell it with before opset 17.
    {"LayerNormalization", "wmap", 1, 2, 3, 1, 3, WM_TYPES_FLOAT, ln_infer,
     ln_run, ln_cost, 0, ln_resolve},
    {"LpNormalization", "", 1, 1, 1, 1, 1, WM_TYPES_FLOAT, lpn_infer, lpn_run,
     lpn_cost},
    {"GroupNormalization", "", 18, 3, 3, 1, 1, WM_TYPES_FLOAT, gn_infer, gn_run,
     gn_cost},
    {"Col2Im", "", 18, 3, 3, 1, 1, WM_TYPES_NUMERIC, col2im_infer, col2im_run,
     col2im_cost},
    {"DeformConv", "", 19, 3, 5, 1, 1, WM_TYPES_FLOAT, dc_infer, dc_run,
     dc_cost},
    {"InstanceNormalization", "", 1, 3, 3, 1, 1, WM_TYPES_FLOAT, in_infer,
     in_run, in_cost, 0, in_resolve},
    {"MeanVarianceNormalization", "", 9, 1, 1, 1, 1, WM_TYPES_FLOAT, mvn_infer,
     mvn_run, mvn_cost},
    {"Dropout", "", 1, 1, 1, 1, 2, WM_TYPES_FLOAT, dropout_infer, dropout_run,
     wm_op_cost_zero, WM_OP_RANDOM_IN_TRAINING, NULL, dropout_define},
    {"Dropout", "", 12, 1, 3, 1, 2, WM_TYPES_FLOAT, dropout_infer, dropout_run,
     wm_op_cost_zero, WM_OP_RANDOM_IN_TRAINING, NULL, dropout_define},
    {"NegativeLogLikelihoodLoss", "", 12, 2, 3, 1, 1, WM_TYPES_FLOAT,
     loss_infer, nll_run, nll_cost},
    {"SoftmaxCrossEntropyLoss", "", 12, 2, 3, 1, 2, WM_TYPES_FLOAT, loss_infer,
     sce_run, sce_cost},
    WM_OPS_END,
};
