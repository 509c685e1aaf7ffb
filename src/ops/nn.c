// The nn family's common file (nn.h): the checks, conversions and window
// geometry that conv.c, pool.c, norm.c and loss.c share. Kernels are
// reference loops that convert to double, accumulate in double and convert
// back once.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn.h"

// ---------------------------------------------------------- small helpers

bool nn_add_i64(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_add_overflow(a, b, out);
}

// Floor division by 2 (total padding may be negative for ConvTranspose).
int64_t nn_floor_half(int64_t v) {
  return v >= 0 ? v / 2 : -((-v + 1) / 2);
}

// Product of dims known to come from an allocated tensor.
size_t nn_prod(const int64_t *dims, int32_t n) {
  size_t p = 1;
  for (int32_t i = 0; i < n; i++) {
    p *= (size_t)dims[i];
  }
  return p;
}

// Product of dims as a double for costs; -1 when any is unknown.
void nn_moments(const double *x, size_t n, double eps, double *out_mean,
                double *out_inv) {
  double s = 0, v = 0;
  for (size_t j = 0; j < n; j++) {
    s += x[j];
  }
  double mean = n ? s / (double)n : 0;
  for (size_t j = 0; j < n; j++) {
    v += (x[j] - mean) * (x[j] - mean);
  }
  *out_mean = mean;
  *out_inv = 1.0 / sqrt((n ? v / (double)n : 0) + eps);
}

double nn_prod_f(const int64_t *dims, int32_t n) {
  double p = 1;
  for (int32_t i = 0; i < n; i++) {
    if (dims[i] < 0) {
      return -1;
    }
    p *= (double)dims[i];
  }
  return p;
}

double nn_numel_f(const wm_shape_t *s) {
  return s->rank < 0 ? -1 : nn_prod_f(s->dims, s->rank);
}

// Requires input |i|, when its dtype is known, to match input 0.
wm_status_t nn_check_same_dtype(const wm_op_ctx_t *ctx, int32_t i) {
  wm_dtype_t a = wm_op_in_dtype(ctx, 0), b = wm_op_in_dtype(ctx, i);
  if (a != WM_DTYPE_UNDEFINED && b != WM_DTYPE_UNDEFINED && a != b) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d has dtype %s, want %s like input 0", i,
                       wm_dtype_name(b), wm_dtype_name(a));
  }
  return NULL;
}

// Requires input |i|, when its dtype is known, to be a float type.
wm_status_t nn_check_float_dtype(const wm_op_ctx_t *ctx, int32_t i) {
  wm_dtype_t d = wm_op_in_dtype(ctx, i);
  if (d != WM_DTYPE_UNDEFINED && !wm_dtype_is_float(d)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d has dtype %s, want a float type", i,
                       wm_dtype_name(d));
  }
  return NULL;
}

// Requires input |i| to have rank within [lo, hi] when its rank is known.
wm_status_t nn_check_rank(const wm_op_ctx_t *ctx, int32_t i, int32_t lo,
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
wm_status_t nn_check_vector(const wm_op_ctx_t *ctx, int32_t i, const char *what,
                            int64_t n) {
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
wm_status_t nn_load_f64(const wm_op_ctx_t *ctx, const wm_tensor_t *t,
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
wm_status_t nn_alloc_f64(const wm_op_ctx_t *ctx, size_t n, double **out) {
  *out = wm_calloc(n ? n : 1, sizeof(double));
  if (!*out) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for %zu elements", n);
  }
  return NULL;
}

void nn_store_f64(wm_tensor_t *t, const double *v) {
  for (size_t i = 0; i < t->count; i++) {
    wm_tensor_set_f64(t, i, v[i]);
  }
}

// Loads input |i| (or NULL when omitted) as doubles.
wm_status_t nn_load_input(const wm_op_ctx_t *ctx, int32_t i, double **out) {
  *out = NULL;
  if (!wm_op_has_input(ctx, i) || !ctx->in[i]) {
    return NULL;
  }
  return nn_load_f64(ctx, ctx->in[i], out);
}

// ------------------------------------------------------- window geometry

wm_status_t nn_parse_auto_pad(const wm_op_ctx_t *ctx, auto_pad_t *out) {
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
wm_status_t nn_window_parse(const wm_op_ctx_t *ctx, int32_t nsp,
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
  WM_RETURN_IF_ERROR(nn_parse_auto_pad(ctx, &w->auto_pad));
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
bool nn_window_extent(const window_t *w, int32_t i, int64_t *out) {
  int64_t e;
  if (!wm_checked_mul_i64(w->kernel[i] - 1, w->dilations[i], &e) ||
      !nn_add_i64(e, 1, out)) {
    return false;
  }
  return true;
}

// The output size and pads of Conv and the pools for input spatial dims
// |in| (-1 = unknown): fills out[] and, for auto_pad, w->pads.
wm_status_t nn_window_forward(const wm_op_ctx_t *ctx, window_t *w,
                              const int64_t *in, int64_t *out) {
  for (int32_t i = 0; i < w->nsp; i++) {
    out[i] = -1;
    if (in[i] < 0 || w->kernel[i] < 0) {
      continue;
    }
    int64_t ext, s = w->strides[i];
    if (!nn_window_extent(w, i, &ext)) {
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
      if (!nn_add_i64((o > 0 ? o - 1 : 0) * s - in[i], ext, &total)) {
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
    if (!nn_add_i64(in[i], w->pads[i], &padded) ||
        !nn_add_i64(padded, w->pads[w->nsp + i], &padded)) {
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
wm_status_t nn_window_params(wm_op_ctx_t *ctx, const window_t *w,
                             wm_op_params_t *out) {
  WM_RETURN_IF_ERROR(
      wm_op_param_ints(ctx, out, "kernel_shape", w->kernel, w->nsp));
  WM_RETURN_IF_ERROR(wm_op_param_ints(ctx, out, "strides", w->strides, w->nsp));
  WM_RETURN_IF_ERROR(
      wm_op_param_ints(ctx, out, "dilations", w->dilations, w->nsp));
  return wm_op_param_ints(ctx, out, "pads", w->pads, 2 * w->nsp);
}

// Offsets of every kernel tap (coordinate times dilation), nsp per tap.
wm_status_t nn_window_taps(const wm_op_ctx_t *ctx, const window_t *w,
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
void nn_odometer_next(int64_t *pos, const int64_t *dims, int32_t n) {
  for (int32_t i = n - 1; i >= 0; i--) {
    if (++pos[i] < dims[i]) {
      return;
    }
    pos[i] = 0;
  }
}

void nn_conv_bufs_free(conv_bufs_t *bf) {
  free(bf->x);
  free(bf->k);
  free(bf->b);
  free(bf->y);
  free(bf->taps);
}

// Loads the inputs of Conv or ConvTranspose and allocates the output;
// release with nn_conv_bufs_free (also on failure).
wm_status_t nn_conv_bufs_load(wm_op_ctx_t *ctx, const window_t *w,
                              conv_bufs_t *out) {
  memset(out, 0, sizeof(*out));
  wm_status_t st = nn_load_f64(ctx, ctx->in[0], &out->x);
  if (!st) {
    st = nn_load_f64(ctx, ctx->in[1], &out->k);
  }
  if (!st) {
    st = nn_load_input(ctx, 2, &out->b);
  }
  if (!st) {
    st = nn_alloc_f64(ctx, ctx->out[0]->count, &out->y);
  }
  if (!st) {
    st = nn_window_taps(ctx, w, &out->taps, &out->nt);
  }
  return st;
}

// Flat offset in spatial dims |sp| that kernel tap |tap| reads (Conv) or
// writes (ConvTranspose) at window position |pos|; false in the padding.
bool nn_tap_offset(const window_t *w, const int64_t *pos, const int64_t *tap,
                   const int64_t *sp, size_t *out) {
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
