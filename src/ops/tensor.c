// Operators of the tensor family: shape manipulation and data movement
// (Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Concat, Split, Expand,
// Tile, Pad, Shape, Size, Identity, DepthToSpace, SpaceToDepth,
// ReverseSequence, CenterCropPad, TensorScatter, BitCast). Every kernel
// works on any dtype by copying whole elements; strings are copied with
// wm_tensor_set_string.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

// Views of up to twice the tensor rank (Tile splits every dim in two).
#define COPY_MAX_RANK (2 * WM_MAX_RANK)

// ------------------------------------------------------------- helpers

// Copies element |si| of |src| to element |di| of |dst| (same dtype).
static wm_status_t copy_elem(wm_tensor_t *dst, size_t di,
                             const wm_tensor_t *src, size_t si) {
  if (dst->dtype == WM_DTYPE_STRING) {
    const char *s = ((char *const *)src->data)[si];
    return wm_tensor_set_string(dst, di, s, strlen(s));
  }
  size_t es = wm_dtype_size(dst->dtype);
  memcpy((char *)dst->data + di * es, (const char *)src->data + si * es, es);
  return NULL;
}

// Returns the lowest and one past the highest offset a view touches.
static void view_extent(int64_t off, const int64_t *strides, int32_t rank,
                        const int64_t *dims, int64_t *out_lo, int64_t *out_hi) {
  int64_t lo = off, hi = off;
  for (int32_t d = 0; d < rank; d++) {
    int64_t span = strides[d] * (dims[d] - 1);
    if (span < 0) {
      lo += span;
    } else {
      hi += span;
    }
  }
  *out_lo = lo;
  *out_hi = hi + 1;
}

// Copies the view (|dims|, |src_strides| from |src_off|) of |src| into the
// view (|dims|, |dst_strides| from |dst_off|) of |dst|; strides are in
// elements and may be zero (broadcast) or negative (reversed).
wm_status_t wm_op_copy_strided(wm_tensor_t *dst, int64_t dst_off,
                               const int64_t *dst_strides,
                               const wm_tensor_t *src, int64_t src_off,
                               const int64_t *src_strides, int32_t rank,
                               const int64_t *dims) {
  if (rank < 0 || rank > COPY_MAX_RANK || dst->dtype != src->dtype) {
    return WM_ERROR(INTERNAL, "strided copy of rank %d from %s to %s", rank,
                    wm_dtype_name(src->dtype), wm_dtype_name(dst->dtype));
  }
  for (int32_t d = 0; d < rank; d++) {
    if (dims[d] <= 0) {
      return NULL;
    }
  }
  // The callers compute the views; this check keeps a mistake there from
  // ever touching memory outside the tensors.
  int64_t lo, hi;
  view_extent(src_off, src_strides, rank, dims, &lo, &hi);
  if (lo < 0 || (uint64_t)hi > src->count) {
    return WM_ERROR(INTERNAL, "strided copy reads [%lld, %lld) of %zu",
                    (long long)lo, (long long)hi, src->count);
  }
  view_extent(dst_off, dst_strides, rank, dims, &lo, &hi);
  if (lo < 0 || (uint64_t)hi > dst->count) {
    return WM_ERROR(INTERNAL, "strided copy writes [%lld, %lld) of %zu",
                    (long long)lo, (long long)hi, dst->count);
  }
  if (rank == 0) {
    return copy_elem(dst, (size_t)dst_off, src, (size_t)src_off);
  }
  bool strings = dst->dtype == WM_DTYPE_STRING;
  size_t es = wm_dtype_size(dst->dtype);
  int32_t last = rank - 1;
  int64_t n = dims[last], ds = dst_strides[last], ss = src_strides[last];
  int64_t idx[COPY_MAX_RANK] = {0};
  int64_t so = src_off, dof = dst_off;
  for (;;) {
    if (!strings && ds == 1 && ss == 1) {
      memcpy((char *)dst->data + (size_t)dof * es,
             (const char *)src->data + (size_t)so * es, (size_t)n * es);
    } else {
      for (int64_t k = 0; k < n; k++) {
        WM_RETURN_IF_ERROR(
            copy_elem(dst, (size_t)(dof + k * ds), src, (size_t)(so + k * ss)));
      }
    }
    int32_t d = last - 1;
    for (; d >= 0; d--) {
      idx[d]++;
      so += src_strides[d];
      dof += dst_strides[d];
      if (idx[d] < dims[d]) {
        break;
      }
      so -= src_strides[d] * dims[d];
      dof -= dst_strides[d] * dims[d];
      idx[d] = 0;
    }
    if (d < 0) {
      return NULL;
    }
  }
}

wm_status_t wm_op_copy_all(wm_tensor_t *dst, const wm_tensor_t *src) {
  if (dst->count != src->count || dst->dtype != src->dtype) {
    return WM_ERROR(INTERNAL, "copy of %zu %s elements into %zu %s", src->count,
                    wm_dtype_name(src->dtype), dst->count,
                    wm_dtype_name(dst->dtype));
  }
  if (dst->dtype != WM_DTYPE_STRING) {
    if (src->nbytes) {
      memcpy(dst->data, src->data, src->nbytes);
    }
    return NULL;
  }
  for (size_t i = 0; i < src->count; i++) {
    WM_RETURN_IF_ERROR(copy_elem(dst, i, src, i));
  }
  return NULL;
}

char *wm_op_format_ints(const int64_t *v, size_t n, char *buf, size_t size) {
  size_t len = (size_t)snprintf(buf, size, "[");
  for (size_t i = 0; i < n && len < size; i++) {
    len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? "," : "",
                            (long long)v[i]);
  }
  if (len < size) {
    snprintf(buf + len, size - len, "]");
  }
  return buf;
}

// Product of two dims where a negative dim means unknown; false on
// overflow.
static bool dim_mul(int64_t a, int64_t b, int64_t *out) {
  if (a < 0 || b < 0) {
    *out = -1;
    return true;
  }
  return wm_checked_mul_i64(a, b, out);
}

// Product of dims [from, to) of |s|, -1 when one is unknown.
static wm_status_t dims_product(const wm_op_ctx_t *ctx, const wm_shape_t *s,
                                int32_t from, int32_t to, int64_t *out) {
  int64_t p = 1;
  for (int32_t d = from; d < to; d++) {
    if (!dim_mul(p, s->dims[d], &p)) {
      char buf[128];
      return WM_OP_ERROR(ctx, OUT_OF_RANGE, "element count of %s overflows",
                         wm_shape_format(s, buf, sizeof(buf)));
    }
  }
  *out = p;
  return NULL;
}

// Reads an integer list given as attribute |attr| before opset |since|
// and as input |input| from then on. *out_present is false when neither
// is given (|attr| NULL: the list has no attribute form); *out_known false
// when the input's value is unknown. The list is a heap copy in both cases.
wm_status_t wm_op_read_list(const wm_op_ctx_t *ctx, const char *attr,
                            int32_t input, int64_t since, int64_t **out_values,
                            size_t *out_count, bool *out_present,
                            bool *out_known) {
  *out_values = NULL;
  *out_count = 0;
  *out_present = false;
  *out_known = false;
  if (ctx->opset < since) {
    const int64_t *v;
    size_t n;
    if (!attr || !wm_node_attr_ints(ctx->node, attr, &v, &n)) {
      return NULL;
    }
    int64_t *copy = wm_malloc((n ? n : 1) * sizeof(int64_t));
    if (!copy) {
      return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
    }
    if (n) {
      memcpy(copy, v, n * sizeof(int64_t));
    }
    *out_values = copy;
    *out_count = n;
    *out_present = true;
    *out_known = true;
    return NULL;
  }
  if (!wm_op_has_input(ctx, input)) {
    return NULL;
  }
  *out_present = true;
  return wm_op_input_ints(ctx, input, out_values, out_count, out_known);
}

// Length of the 1-D input |i| when its shape says so, else -1.
static int64_t input_length(const wm_op_ctx_t *ctx, int32_t i) {
  const wm_shape_t *s = wm_op_in_shape(ctx, i);
  return s->rank == 1 ? s->dims[0] : -1;
}

// Normalizes |n| axes against |rank| into |out| (each set once).
static wm_status_t normalize_axes(const wm_op_ctx_t *ctx, const int64_t *axes,
                                  size_t n, int32_t rank, int32_t *out) {
  bool seen[WM_MAX_RANK] = {false};
  if (n > (size_t)rank) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "%zu axes for rank %d", n, rank);
  }
  for (size_t i = 0; i < n; i++) {
    WM_RETURN_IF_ERROR(wm_op_axis(ctx, axes[i], rank, "axis", &out[i]));
    if (seen[out[i]]) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "axis %lld is repeated",
                         (long long)axes[i]);
    }
    seen[out[i]] = true;
  }
  return NULL;
}

static wm_status_t run_copy(wm_op_ctx_t *ctx) {
  return wm_op_copy_all(ctx->out[0], ctx->in[0]);
}

// --------------------------------------------------------------- Reshape

// Resolves a Reshape target |spec| against the input shape |in|.
static wm_status_t reshape_resolve(const wm_op_ctx_t *ctx, const wm_shape_t *in,
                                   const int64_t *spec, size_t n,
                                   bool allowzero, wm_shape_t *out) {
  char sbuf[256], ibuf[128];
  if (n > WM_MAX_RANK) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "target shape %s has %zu dims; at most %d supported",
                       wm_op_format_ints(spec, n, sbuf, sizeof(sbuf)), n,
                       WM_MAX_RANK);
  }
  out->rank = (int32_t)n;
  int32_t infer_at = -1;
  bool has_zero = false;
  for (size_t i = 0; i < n; i++) {
    int64_t v = spec[i];
    if (v == 0 && !allowzero) {
      if (in->rank >= 0 && (int32_t)i >= in->rank) {
        return WM_OP_ERROR(
            ctx, INVALID_ARGUMENT,
            "target shape %s copies dim %zu but the input %s has rank %d",
            wm_op_format_ints(spec, n, sbuf, sizeof(sbuf)), i,
            wm_shape_format(in, ibuf, sizeof(ibuf)), in->rank);
      }
      out->dims[i] = in->rank >= 0 ? in->dims[i] : -1;
    } else if (v == -1) {
      if (infer_at >= 0) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "target shape %s has more than one -1",
                           wm_op_format_ints(spec, n, sbuf, sizeof(sbuf)));
      }
      infer_at = (int32_t)i;
      out->dims[i] = -1;
    } else if (v < 0) {
      return WM_OP_ERROR(
          ctx, INVALID_ARGUMENT, "target shape %s has invalid dim %lld",
          wm_op_format_ints(spec, n, sbuf, sizeof(sbuf)), (long long)v);
    } else {
      has_zero |= v == 0;
      out->dims[i] = v;
    }
  }
  if (allowzero && has_zero && infer_at >= 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "target shape %s has both 0 and -1 with allowzero=1",
                       wm_op_format_ints(spec, n, sbuf, sizeof(sbuf)));
  }
  int64_t total = -1, known = 1;
  if (in->rank >= 0) {
    WM_RETURN_IF_ERROR(dims_product(ctx, in, 0, in->rank, &total));
  }
  for (size_t i = 0; i < n; i++) {
    if ((int32_t)i != infer_at && !dim_mul(known, out->dims[i], &known)) {
      return WM_OP_ERROR(ctx, OUT_OF_RANGE,
                         "element count of target shape %s overflows",
                         wm_op_format_ints(spec, n, sbuf, sizeof(sbuf)));
    }
  }
  if (total < 0 || known < 0) {
    return NULL;
  }
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0) {
      return WM_OP_ERROR(
          ctx, INVALID_ARGUMENT, "cannot reshape %lld elements of %s into %s",
          (long long)total, wm_shape_format(in, ibuf, sizeof(ibuf)),
          wm_op_format_ints(spec, n, sbuf, sizeof(sbuf)));
    }
    out->dims[infer_at] = total / known;
  } else if (known != total) {
    return WM_OP_ERROR(
        ctx, INVALID_ARGUMENT, "cannot reshape %lld elements of %s into %s",
        (long long)total, wm_shape_format(in, ibuf, sizeof(ibuf)),
        wm_op_format_ints(spec, n, sbuf, sizeof(sbuf)));
  }
  return NULL;
}

static wm_status_t reshape_infer(wm_op_ctx_t *ctx) {
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  if (ctx->opset >= 5 && !wm_op_has_input(ctx, 1)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 1 (shape) is required since opset 5");
  }
  int64_t *spec;
  size_t n;
  bool present, known;
  WM_RETURN_IF_ERROR(
      wm_op_read_list(ctx, "shape", 1, 5, &spec, &n, &present, &known));
  if (!present) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"shape\" is required before opset 5");
  }
  if (!known && input_length(ctx, 1) == 0) {
    // An empty target shape has no values to wait for: it is [] now, and
    // the element count is checked here (a plan would take [] as known).
    static const int64_t none[1] = {0};
    wm_shape_t out;
    WM_RETURN_IF_ERROR(
        reshape_resolve(ctx, wm_op_in_shape(ctx, 0), none, 0, false, &out));
    wm_op_set_out(ctx, 0, dtype, &out);
    return NULL;
  }
  if (!known) {
    int64_t len = input_length(ctx, 1);
    if (len < 0 || len > WM_MAX_RANK) {
      wm_op_set_out_unknown(ctx, 0, dtype);
      return NULL;
    }
    wm_shape_t s = {(int32_t)len, {0}};
    for (int32_t d = 0; d < s.rank; d++) {
      s.dims[d] = -1;
    }
    wm_op_set_out(ctx, 0, dtype, &s);
    return NULL;
  }
  bool allowzero =
      ctx->opset >= 14 && wm_node_attr_int(ctx->node, "allowzero", 0) != 0;
  wm_shape_t out;
  wm_status_t st =
      reshape_resolve(ctx, wm_op_in_shape(ctx, 0), spec, n, allowzero, &out);
  free(spec);
  WM_RETURN_IF_ERROR(st);
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

// --------------------------------------------------------------- Flatten

static wm_status_t flatten_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  wm_shape_t out = {2, {-1, -1}};
  if (in->rank < 0) {
    wm_op_set_out(ctx, 0, dtype, &out);
    return NULL;
  }
  int64_t axis = wm_node_attr_int(ctx->node, "axis", 1);
  if (axis < -(int64_t)in->rank || axis > in->rank) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "axis %lld is out of range for rank %d", (long long)axis,
                       in->rank);
  }
  int32_t a = (int32_t)(axis < 0 ? axis + in->rank : axis);
  WM_RETURN_IF_ERROR(dims_product(ctx, in, 0, a, &out.dims[0]));
  WM_RETURN_IF_ERROR(dims_product(ctx, in, a, in->rank, &out.dims[1]));
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

// ------------------------------------------------------------- Transpose

// Reads and validates the permutation for |rank|.
static wm_status_t transpose_perm(const wm_op_ctx_t *ctx, int32_t rank,
                                  int32_t perm[WM_MAX_RANK]) {
  const int64_t *p;
  size_t n;
  if (!wm_node_attr_ints(ctx->node, "perm", &p, &n)) {
    for (int32_t d = 0; d < rank; d++) {
      perm[d] = rank - 1 - d;
    }
    return NULL;
  }
  char buf[256];
  if (n != (size_t)rank) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "perm %s has %zu entries for rank %d",
                       wm_op_format_ints(p, n, buf, sizeof(buf)), n, rank);
  }
  bool seen[WM_MAX_RANK] = {false};
  for (int32_t d = 0; d < rank; d++) {
    if (p[d] < 0 || p[d] >= rank || seen[p[d]]) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "perm %s is not a permutation of [0, %d)",
                         wm_op_format_ints(p, n, buf, sizeof(buf)), rank);
    }
    seen[p[d]] = true;
    perm[d] = (int32_t)p[d];
  }
  return NULL;
}

// Parameters: perm (the reversed dims when absent).
static wm_status_t transpose_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  int32_t perm[WM_MAX_RANK];
  int64_t p[WM_MAX_RANK];
  out->pending = in->rank < 0;
  if (out->pending) {
    return NULL;
  }
  WM_RETURN_IF_ERROR(transpose_perm(ctx, in->rank, perm));
  for (int32_t d = 0; d < in->rank; d++) {
    p[d] = perm[d];
  }
  return wm_op_param_ints(ctx, out, "perm", p, in->rank);
}

static wm_status_t transpose_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  if (in->rank < 0) {
    wm_op_set_out_unknown(ctx, 0, dtype);
    return NULL;
  }
  int32_t perm[WM_MAX_RANK];
  WM_RETURN_IF_ERROR(transpose_perm(ctx, in->rank, perm));
  wm_shape_t out = {in->rank, {0}};
  for (int32_t d = 0; d < in->rank; d++) {
    out.dims[d] = in->dims[perm[d]];
  }
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

static wm_status_t transpose_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *in = ctx->in[0];
  wm_tensor_t *out = ctx->out[0];
  int32_t perm[WM_MAX_RANK];
  WM_RETURN_IF_ERROR(transpose_perm(ctx, in->shape.rank, perm));
  int64_t in_strides[WM_MAX_RANK], src[WM_MAX_RANK], dst[WM_MAX_RANK];
  wm_shape_strides(&in->shape, in_strides);
  wm_shape_strides(&out->shape, dst);
  for (int32_t d = 0; d < in->shape.rank; d++) {
    src[d] = in_strides[perm[d]];
  }
  return wm_op_copy_strided(out, 0, dst, in, 0, src, out->shape.rank,
                            out->shape.dims);
}

// --------------------------------------------------- Squeeze / Unsqueeze

static wm_status_t squeeze_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  int64_t *axes;
  size_t n;
  bool present, known;
  WM_RETURN_IF_ERROR(
      wm_op_read_list(ctx, "axes", 1, 13, &axes, &n, &present, &known));
  if (in->rank < 0 || (present && !known)) {
    int64_t len = !present ? -1 : known ? (int64_t)n : input_length(ctx, 1);
    free(axes);
    // Squeezing every dim gives [], a shape with no dim left to wait for:
    // it stays unknown, so the run checks the axes' values (a plan would
    // take [] as known and copy [3,3,3] into one element).
    if (in->rank < 0 || len < 0 || len >= in->rank) {
      wm_op_set_out_unknown(ctx, 0, dtype);
      return NULL;
    }
    wm_shape_t s = {in->rank - (int32_t)len, {0}};
    for (int32_t d = 0; d < s.rank; d++) {
      s.dims[d] = -1;
    }
    wm_op_set_out(ctx, 0, dtype, &s);
    return NULL;
  }
  bool drop[WM_MAX_RANK] = {false};
  if (present && n == 0) {
    // An empty axes list squeezes every unit dim, as onnxruntime does.
    free(axes);
    axes = NULL;
    present = false;
  }
  if (present) {
    int32_t norm[WM_MAX_RANK];
    wm_status_t st = normalize_axes(ctx, axes, n, in->rank, norm);
    free(axes);
    WM_RETURN_IF_ERROR(st);
    for (size_t i = 0; i < n; i++) {
      int64_t dim = in->dims[norm[i]];
      if (dim >= 0 && dim != 1) {
        char buf[128];
        return WM_OP_ERROR(
            ctx, INVALID_ARGUMENT, "cannot squeeze axis %d of size %lld in %s",
            norm[i], (long long)dim, wm_shape_format(in, buf, sizeof(buf)));
      }
      drop[norm[i]] = true;
    }
  } else {
    for (int32_t d = 0; d < in->rank; d++) {
      if (in->dims[d] < 0) {
        wm_op_set_out_unknown(ctx, 0, dtype);
        return NULL;
      }
      drop[d] = in->dims[d] == 1;
    }
  }
  wm_shape_t out = {0, {0}};
  for (int32_t d = 0; d < in->rank; d++) {
    if (!drop[d]) {
      out.dims[out.rank++] = in->dims[d];
    }
  }
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

static wm_status_t unsqueeze_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  int64_t *axes;
  size_t n;
  bool present, known;
  WM_RETURN_IF_ERROR(
      wm_op_read_list(ctx, "axes", 1, 13, &axes, &n, &present, &known));
  if (!present) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "%s \"axes\" is required",
                       ctx->opset < 13 ? "attribute" : "input 1");
  }
  if (in->rank < 0 || !known) {
    int64_t len = known ? (int64_t)n : input_length(ctx, 1);
    free(axes);
    if (in->rank < 0 || len < 0 || in->rank + len > WM_MAX_RANK) {
      wm_op_set_out_unknown(ctx, 0, dtype);
      return NULL;
    }
    wm_shape_t s = {in->rank + (int32_t)len, {0}};
    for (int32_t d = 0; d < s.rank; d++) {
      s.dims[d] = -1;
    }
    wm_op_set_out(ctx, 0, dtype, &s);
    return NULL;
  }
  if (in->rank + n > WM_MAX_RANK) {
    free(axes);
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "rank %d plus %zu axes exceeds the maximum rank %d",
                       in->rank, n, WM_MAX_RANK);
  }
  wm_shape_t out = {in->rank + (int32_t)n, {0}};
  int32_t norm[WM_MAX_RANK];
  wm_status_t st = normalize_axes(ctx, axes, n, out.rank, norm);
  free(axes);
  WM_RETURN_IF_ERROR(st);
  bool added[WM_MAX_RANK] = {false};
  for (size_t i = 0; i < n; i++) {
    added[norm[i]] = true;
  }
  for (int32_t d = 0, k = 0; d < out.rank; d++) {
    out.dims[d] = added[d] ? 1 : in->dims[k++];
  }
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

// ---------------------------------------------------------------- Concat

// Returns the concatenation axis (attribute, default 1 before opset 4).
static wm_status_t concat_axis(const wm_op_ctx_t *ctx, int64_t *out) {
  const wm_attr_t *a = wm_node_attr(ctx->node, "axis");
  if (!a) {
    if (ctx->opset >= 4) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute \"axis\" is required");
    }
    *out = 1;
    return NULL;
  }
  *out = a->i;
  return NULL;
}

// Parameters: axis (default 1 before opset 4) normalised.
static wm_status_t concat_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  int64_t axis = 0;
  WM_RETURN_IF_ERROR(concat_axis(ctx, &axis));
  return wm_op_param_axis(ctx, out, axis);
}

static wm_status_t concat_infer(wm_op_ctx_t *ctx) {
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  int64_t axis = 0;
  WM_RETURN_IF_ERROR(concat_axis(ctx, &axis));
  const wm_shape_t *first = NULL;
  for (int32_t i = 0; i < ctx->n_in; i++) {
    wm_dtype_t dt = wm_op_in_dtype(ctx, i);
    if (dtype == WM_DTYPE_UNDEFINED) {
      dtype = dt;
    } else if (dt != WM_DTYPE_UNDEFINED && dt != dtype) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d is %s but input 0 is %s", i,
                         wm_dtype_name(dt), wm_dtype_name(dtype));
    }
    if (!first && wm_op_in_shape(ctx, i)->rank >= 0) {
      first = wm_op_in_shape(ctx, i);
    }
  }
  if (!first) {
    wm_op_set_out_unknown(ctx, 0, dtype);
    return NULL;
  }
  int32_t a;
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, axis, first->rank, "axis", &a));
  wm_shape_t out = *first;
  out.dims[a] = 0;
  for (int32_t i = 0; i < ctx->n_in; i++) {
    const wm_shape_t *s = wm_op_in_shape(ctx, i);
    if (!wm_op_has_input(ctx, i)) {
      continue;
    }
    if (s->rank < 0) {
      out.dims[a] = -1;
      continue;
    }
    if (s->rank != first->rank) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input %d has rank %d, want %d",
                         i, s->rank, first->rank);
    }
    for (int32_t d = 0; d < s->rank; d++) {
      if (d == a) {
        continue;
      }
      if (s->dims[d] >= 0 && out.dims[d] >= 0 && s->dims[d] != out.dims[d]) {
        char b1[128], b2[128];
        return WM_OP_ERROR(
            ctx, INVALID_ARGUMENT,
            "input %d %s does not match %s outside axis %d at dim %d", i,
            wm_shape_format(s, b1, sizeof(b1)),
            wm_shape_format(first, b2, sizeof(b2)), a, d);
      }
      if (out.dims[d] < 0) {
        out.dims[d] = s->dims[d];
      }
    }
    if (out.dims[a] >= 0) {
      out.dims[a] = s->dims[a] < 0 ? -1 : out.dims[a] + s->dims[a];
    }
  }
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

static wm_status_t concat_run(wm_op_ctx_t *ctx) {
  wm_tensor_t *out = ctx->out[0];
  int64_t axis = 0;
  int32_t a;
  WM_RETURN_IF_ERROR(concat_axis(ctx, &axis));
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, axis, out->shape.rank, "axis", &a));
  int64_t dst[WM_MAX_RANK], src[WM_MAX_RANK];
  wm_shape_strides(&out->shape, dst);
  int64_t offset = 0;
  for (int32_t i = 0; i < ctx->n_in; i++) {
    const wm_tensor_t *in = ctx->in[i];
    if (!in) {
      continue;
    }
    wm_shape_strides(&in->shape, src);
    WM_RETURN_IF_ERROR(wm_op_copy_strided(out, offset * dst[a], dst, in, 0, src,
                                          in->shape.rank, in->shape.dims));
    offset += in->shape.dims[a];
  }
  return NULL;
}

// ----------------------------------------------------------------- Split

// Computes the size of each output along the axis of length |dim| (may be
// unknown); sizes stay -1 when unknown.
static wm_status_t split_sizes(const wm_op_ctx_t *ctx, int64_t dim,
                               int64_t *sizes) {
  int32_t n_out = ctx->n_out;
  for (int32_t i = 0; i < n_out; i++) {
    sizes[i] = -1;
  }
  int64_t *split;
  size_t n;
  bool present, known;
  WM_RETURN_IF_ERROR(
      wm_op_read_list(ctx, "split", 1, 13, &split, &n, &present, &known));
  if (present && !known) {
    return NULL;
  }
  if (present) {
    char buf[256];
    int64_t sum = 0;
    bool bad = n != (size_t)n_out;
    for (size_t i = 0; i < n && !bad; i++) {
      bad = split[i] < 0 || __builtin_add_overflow(sum, split[i], &sum);
      sizes[i] = split[i];
    }
    if (bad || (dim >= 0 && sum != dim)) {
      wm_status_t st = WM_OP_ERROR(
          ctx, INVALID_ARGUMENT,
          "split %s does not divide an axis of %lld into %d outputs",
          wm_op_format_ints(split, n, buf, sizeof(buf)), (long long)dim, n_out);
      free(split);
      return st;
    }
    free(split);
    return NULL;
  }
  const wm_attr_t *num = wm_node_attr(ctx->node, "num_outputs");
  if (num && num->i != n_out) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "num_outputs is %lld but the node has %d outputs",
                       (long long)num->i, n_out);
  }
  if (dim < 0) {
    return NULL;
  }
  if (ctx->opset < 18 && dim % n_out != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "axis of %lld does not split evenly into %d outputs",
                       (long long)dim, n_out);
  }
  int64_t chunk = (dim + n_out - 1) / n_out, left = dim;
  for (int32_t i = 0; i < n_out; i++) {
    sizes[i] = left < chunk ? left : chunk;
    left -= sizes[i];
  }
  return NULL;
}

// Parameters: axis normalised (the outputs' dims there are the split).
static wm_status_t split_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  return wm_op_param_axis(ctx, out, wm_node_attr_int(ctx->node, "axis", 0));
}

static wm_status_t split_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  if (in->rank < 0) {
    for (int32_t i = 0; i < ctx->n_out; i++) {
      wm_op_set_out_unknown(ctx, i, dtype);
    }
    return NULL;
  }
  int32_t a;
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, wm_node_attr_int(ctx->node, "axis", 0),
                                in->rank, "axis", &a));
  int64_t *sizes = wm_malloc((size_t)ctx->n_out * sizeof(int64_t));
  if (!sizes) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_status_t st = split_sizes(ctx, in->dims[a], sizes);
  for (int32_t i = 0; i < ctx->n_out && !st; i++) {
    wm_shape_t s = *in;
    s.dims[a] = sizes[i];
    wm_op_set_out(ctx, i, dtype, &s);
  }
  free(sizes);
  return st;
}

static wm_status_t split_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *in = ctx->in[0];
  int32_t a;
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, wm_node_attr_int(ctx->node, "axis", 0),
                                in->shape.rank, "axis", &a));
  int64_t *sizes = wm_malloc((size_t)ctx->n_out * sizeof(int64_t));
  if (!sizes) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_status_t st = split_sizes(ctx, in->shape.dims[a], sizes);
  int64_t src[WM_MAX_RANK], dst[WM_MAX_RANK];
  wm_shape_strides(&in->shape, src);
  int64_t offset = 0;
  for (int32_t i = 0; i < ctx->n_out && !st; i++) {
    wm_tensor_t *out = ctx->out[i];
    if (out) {
      wm_shape_strides(&out->shape, dst);
      st = wm_op_copy_strided(out, 0, dst, in, offset * src[a], src,
                              out->shape.rank, out->shape.dims);
    }
    offset += sizes[i];
  }
  free(sizes);
  return st;
}

// The compute definition of Split on float32: one stage per output
// present, each a copy of its slice of the input along the axis.
static wm_status_t split_define(const wm_op_ctx_t *ctx, wm_gen_program_t *p) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  bool ok = wm_op_in_dtype(ctx, 0) == WM_DTYPE_FLOAT && wm_shape_is_known(in) &&
            ctx->n_out <= WM_GEN_MAX_STAGES && in->rank > 0;
  for (int32_t i = 0; ok && i < ctx->n_out; i++) {
    ok = wm_shape_is_known(&ctx->out_types[i].shape);
  }
  if (!ok) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 of "
                       "known shapes, at most %d outputs)",
                       WM_GEN_MAX_STAGES);
  }
  int32_t a;
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, wm_node_attr_int(ctx->node, "axis", 0),
                                in->rank, "axis", &a));
  int64_t offset = 0;
  for (int32_t i = 0; i < ctx->n_out; i++) {
    const wm_shape_t *os = &ctx->out_types[i].shape;
    if (wm_op_has_output(ctx, i)) {
      wm_gen_compute_t *c;
      WM_RETURN_IF_ERROR(wm_gen_program_stage(p, &c));
      WM_RETURN_IF_ERROR(wm_gen_begin(c, "Split", os->rank, os->dims, NULL));
      c->tensors[0].operand = -1 - i;
      wm_gen_access_t acc;
      memset(&acc, 0, sizeof(acc));
      for (int32_t d = 0; d < in->rank; d++) {
        acc.coef[d][d] = 1;
      }
      acc.off[a] = offset;
      int32_t x;
      WM_RETURN_IF_ERROR(
          wm_gen_input_access(c, "X", in->rank, in->dims, NULL, &acc, &x));
      c->tensors[c->n_tensors - 1].operand = 0;
      WM_RETURN_IF_ERROR(wm_gen_finish(c, x));
    }
    offset += os->dims[a];
  }
  return NULL;
}

// ---------------------------------------------------------------- Expand

static wm_status_t expand_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  int64_t *v;
  size_t n;
  bool known = false;
  WM_RETURN_IF_ERROR(wm_op_input_ints(ctx, 1, &v, &n, &known));
  if (!known) {
    int64_t len = input_length(ctx, 1);
    if (in->rank < 0 || len < 0 || len > WM_MAX_RANK) {
      wm_op_set_out_unknown(ctx, 0, dtype);
      return NULL;
    }
    wm_shape_t s = {in->rank > len ? in->rank : (int32_t)len, {0}};
    for (int32_t d = 0; d < s.rank; d++) {
      s.dims[d] = -1;
    }
    wm_op_set_out(ctx, 0, dtype, &s);
    return NULL;
  }
  char buf[256];
  if (n > WM_MAX_RANK) {
    wm_status_t st =
        WM_OP_ERROR(ctx, INVALID_ARGUMENT, "shape %s has more than %d dims",
                    wm_op_format_ints(v, n, buf, sizeof(buf)), WM_MAX_RANK);
    free(v);
    return st;
  }
  wm_shape_t target = {(int32_t)n, {0}};
  for (size_t i = 0; i < n; i++) {
    if (v[i] < 0) {
      wm_status_t st =
          WM_OP_ERROR(ctx, INVALID_ARGUMENT, "shape %s has a negative dim",
                      wm_op_format_ints(v, n, buf, sizeof(buf)));
      free(v);
      return st;
    }
    target.dims[i] = v[i];
  }
  free(v);
  if (in->rank < 0) {
    wm_op_set_out_unknown(ctx, 0, dtype);
    return NULL;
  }
  wm_shape_t out;
  wm_status_t st = wm_shape_broadcast(in, &target, &out);
  if (st) {
    return wm_status_annotate(st, "node \"%s\" (%s)", ctx->label,
                              ctx->node->op_type);
  }
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

static wm_status_t expand_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *in = ctx->in[0];
  wm_tensor_t *out = ctx->out[0];
  int64_t src[WM_MAX_RANK], dst[WM_MAX_RANK];
  wm_broadcast_strides(&in->shape, &out->shape, src);
  wm_shape_strides(&out->shape, dst);
  return wm_op_copy_strided(out, 0, dst, in, 0, src, out->shape.rank,
                            out->shape.dims);
}

// ------------------------------------------------------------------ Tile

static wm_status_t tile_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  if (in->rank < 0) {
    wm_op_set_out_unknown(ctx, 0, dtype);
    return NULL;
  }
  int64_t *reps;
  size_t n;
  bool known = false;
  WM_RETURN_IF_ERROR(wm_op_input_ints(ctx, 1, &reps, &n, &known));
  wm_shape_t out = *in;
  if (!known) {
    for (int32_t d = 0; d < out.rank; d++) {
      out.dims[d] = -1;
    }
    wm_op_set_out(ctx, 0, dtype, &out);
    return NULL;
  }
  char buf[256];
  wm_status_t st = NULL;
  if (n != (size_t)in->rank) {
    st = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                     "repeats %s has %zu entries for rank %d",
                     wm_op_format_ints(reps, n, buf, sizeof(buf)), n, in->rank);
  }
  for (int32_t d = 0; d < in->rank && !st; d++) {
    if (reps[d] < 0) {
      st = WM_OP_ERROR(ctx, INVALID_ARGUMENT, "repeats %s has a negative entry",
                       wm_op_format_ints(reps, n, buf, sizeof(buf)));
    } else if (!dim_mul(in->dims[d], reps[d], &out.dims[d])) {
      st = WM_OP_ERROR(ctx, OUT_OF_RANGE,
                       "dim %d of %lld tiled %lld times "
                       "overflows",
                       d, (long long)in->dims[d], (long long)reps[d]);
    }
  }
  free(reps);
  WM_RETURN_IF_ERROR(st);
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

static wm_status_t tile_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *in = ctx->in[0];
  wm_tensor_t *out = ctx->out[0];
  if (out->count == 0) {
    return NULL;  // its dims may be huge: no strides to work out
  }
  int32_t rank = in->shape.rank;
  int64_t in_strides[WM_MAX_RANK], out_strides[WM_MAX_RANK];
  wm_shape_strides(&in->shape, in_strides);
  wm_shape_strides(&out->shape, out_strides);
  // Output dim d is (repeat, position) with position running fastest.
  int64_t dims[COPY_MAX_RANK], src[COPY_MAX_RANK], dst[COPY_MAX_RANK];
  for (int32_t d = 0; d < rank; d++) {
    int64_t len = in->shape.dims[d];
    dims[2 * d] = len ? out->shape.dims[d] / len : 0;
    src[2 * d] = 0;
    dst[2 * d] = len * out_strides[d];
    dims[2 * d + 1] = len;
    src[2 * d + 1] = in_strides[d];
    dst[2 * d + 1] = out_strides[d];
  }
  return wm_op_copy_strided(out, 0, dst, in, 0, src, 2 * rank, dims);
}

// ------------------------------------------------------------------- Pad

enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

// The resolved parameters of a Pad node.
typedef struct pad_params {
  enum pad_mode mode;          // how outside elements are filled
  int64_t begin[WM_MAX_RANK];  // elements added before, per dim
  int64_t end[WM_MAX_RANK];    // elements added after, per dim
} pad_params_t;

// The largest pad magnitude (2^62).
#define PAD_MAX ((int64_t)1 << 62)

// Reads mode and pads for |rank|; *out_known is false when the pads (or
// axes) are not known yet.
static wm_status_t pad_params(const wm_op_ctx_t *ctx, int32_t rank,
                              pad_params_t *p, bool *out_known) {
  *out_known = false;
  memset(p, 0, sizeof(*p));
  const char *mode = wm_node_attr_string(ctx->node, "mode", "constant");
  if (strcmp(mode, "constant") == 0) {
    p->mode = PAD_CONSTANT;
  } else if (strcmp(mode, "reflect") == 0) {
    p->mode = PAD_REFLECT;
  } else if (strcmp(mode, "edge") == 0) {
    p->mode = PAD_EDGE;
  } else if (strcmp(mode, "wrap") == 0) {
    p->mode = PAD_WRAP;
  } else {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "unknown mode \"%s\"", mode);
  }
  int64_t *pads = NULL, *axes = NULL;
  size_t n = 0, n_axes = 0;
  bool present, known = true, axes_known = true;
  if (ctx->opset < 11) {
    const char *name = ctx->opset < 2 ? "paddings" : "pads";
    WM_RETURN_IF_ERROR(
        wm_op_read_list(ctx, name, 1, 11, &pads, &n, &present, &known));
  } else {
    WM_RETURN_IF_ERROR(
        wm_op_read_list(ctx, "pads", 1, 11, &pads, &n, &present, &known));
    if (ctx->opset >= 18 && wm_op_has_input(ctx, 3)) {
      wm_status_t st = wm_op_input_ints(ctx, 3, &axes, &n_axes, &axes_known);
      if (st) {
        free(pads);
        return st;
      }
    }
  }
  if (!present) {
    free(axes);
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "pads are required");
  }
  wm_status_t st = NULL;
  if (known && axes_known) {
    int32_t norm[WM_MAX_RANK];
    size_t count = (size_t)rank;
    if (axes) {
      st = normalize_axes(ctx, axes, n_axes, rank, norm);
      count = n_axes;
    } else {
      for (int32_t d = 0; d < rank; d++) {
        norm[d] = d;
      }
    }
    if (!st && n != 2 * count) {
      char buf[256];
      st = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "pads %s has %zu entries, want %zu for %zu axes",
                       wm_op_format_ints(pads, n, buf, sizeof(buf)), n,
                       2 * count, count);
    }
    for (size_t i = 0; i < count && !st; i++) {
      p->begin[norm[i]] = pads[i];
      p->end[norm[i]] = pads[count + i];
      // Source coordinates are output coordinates less the begin pad:
      // pads beyond +-2^62 could overflow them.
      int64_t b = pads[i], e = pads[count + i];
      if (b < -PAD_MAX || b > PAD_MAX || e < -PAD_MAX || e > PAD_MAX) {
        st = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "pads %lld and %lld on dim %d are beyond +-2^62",
                         (long long)b, (long long)e, norm[i]);
      }
    }
    *out_known = !st;
  }
  free(pads);
  free(axes);
  return st;
}

static wm_status_t pad_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  if (in->rank < 0) {
    wm_op_set_out_unknown(ctx, 0, dtype);
    return NULL;
  }
  pad_params_t p;
  bool known = false;
  WM_RETURN_IF_ERROR(pad_params(ctx, in->rank, &p, &known));
  wm_shape_t out = *in;
  for (int32_t d = 0; d < in->rank; d++) {
    if (!known || in->dims[d] < 0) {
      out.dims[d] = -1;
      continue;
    }
    int64_t len = in->dims[d];
    if (__builtin_add_overflow(len, p.begin[d], &out.dims[d]) ||
        __builtin_add_overflow(out.dims[d], p.end[d], &out.dims[d]) ||
        out.dims[d] < 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "pads %lld and %lld on dim %d of size %lld give a "
                         "negative or too large size",
                         (long long)p.begin[d], (long long)p.end[d], d,
                         (long long)len);
    }
    if (p.mode != PAD_CONSTANT && len == 0 && out.dims[d] > 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "cannot pad empty dim %d in a non-constant mode", d);
    }
  }
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

// Parameters: mode, pads (begins, then ends, for every dim: axes
// applied) and, before opset 11 where it is an attribute, the constant
// value (from opset 11 it is input 2).
static wm_status_t pad_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  static const char *const kModes[] = {"constant", "reflect", "edge", "wrap"};
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  pad_params_t p;
  bool known = false;
  if (in->rank >= 0) {
    WM_RETURN_IF_ERROR(pad_params(ctx, in->rank, &p, &known));
  }
  out->pending = !known;
  if (!known) {
    return NULL;
  }
  int64_t pads[2 * WM_MAX_RANK];
  for (int32_t d = 0; d < in->rank; d++) {
    pads[d] = p.begin[d];
    pads[in->rank + d] = p.end[d];
  }
  WM_RETURN_IF_ERROR(wm_op_param_string(ctx, out, "mode", kModes[p.mode]));
  WM_RETURN_IF_ERROR(wm_op_param_ints(ctx, out, "pads", pads, 2 * in->rank));
  if (ctx->opset >= 11) {
    return NULL;
  }
  return wm_op_param_float(ctx, out, "value",
                           wm_node_attr_float(ctx->node, "value", 0));
}

// Maps coordinate |c| outside [0, len) back inside for |mode|.
static int64_t pad_source(enum pad_mode mode, int64_t c, int64_t len) {
  if (c >= 0 && c < len) {
    return c;
  }
  switch (mode) {
    case PAD_EDGE:
      return c < 0 ? 0 : len - 1;
    case PAD_WRAP:
      return ((c % len) + len) % len;
    case PAD_REFLECT: {
      if (len == 1) {
        return 0;
      }
      int64_t period = 2 * (len - 1);
      c = ((c % period) + period) % period;
      return c < len ? c : period - c;
    }
    case PAD_CONSTANT:
      break;
  }
  return -1;
}

// Makes the one-element tensor holding the constant pad value.
static wm_status_t pad_fill(const wm_op_ctx_t *ctx, wm_dtype_t dtype,
                            wm_tensor_t **out) {
  wm_shape_t scalar = {0, {0}};
  WM_RETURN_IF_ERROR(wm_tensor_create(dtype, &scalar, out));
  if (ctx->opset < 11) {
    if (dtype != WM_DTYPE_STRING) {
      wm_tensor_set_f64(*out, 0, wm_node_attr_float(ctx->node, "value", 0));
    }
    return NULL;
  }
  const wm_tensor_t *v = wm_op_has_input(ctx, 2) ? ctx->in[2] : NULL;
  if (!v || v->count == 0) {
    return NULL;
  }
  if (v->dtype != dtype) {
    wm_tensor_destroy(*out);
    *out = NULL;
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "constant_value is %s but the data is %s",
                       wm_dtype_name(v->dtype), wm_dtype_name(dtype));
  }
  return copy_elem(*out, 0, v, 0);
}

static wm_status_t pad_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *in = ctx->in[0];
  wm_tensor_t *out = ctx->out[0];
  int32_t rank = in->shape.rank;
  pad_params_t p;
  bool known = false;
  WM_RETURN_IF_ERROR(pad_params(ctx, rank, &p, &known));
  wm_tensor_t *fill = NULL;
  if (p.mode == PAD_CONSTANT) {
    WM_RETURN_IF_ERROR(pad_fill(ctx, in->dtype, &fill));
  }
  int64_t in_strides[WM_MAX_RANK];
  wm_shape_strides(&in->shape, in_strides);
  int64_t coord[WM_MAX_RANK] = {0};
  wm_status_t st = NULL;
  for (size_t i = 0; i < out->count && !st; i++) {
    int64_t off = 0;
    bool outside = false;
    for (int32_t d = 0; d < rank && !outside; d++) {
      int64_t c = pad_source(p.mode, coord[d] - p.begin[d], in->shape.dims[d]);
      outside = c < 0;
      off += c * in_strides[d];
    }
    st = outside ? copy_elem(out, i, fill, 0)
                 : copy_elem(out, i, in, (size_t)off);
    for (int32_t d = rank - 1; d >= 0; d--) {
      if (++coord[d] < out->shape.dims[d]) {
        break;
      }
      coord[d] = 0;
    }
  }
  wm_tensor_destroy(fill);
  return st;
}

// ----------------------------------------------------------- Shape, Size

// Resolves Shape's [start, end) for |rank|.
static void shape_range(const wm_op_ctx_t *ctx, int32_t rank,
                        int64_t *out_start, int64_t *out_end) {
  int64_t start = 0, end = rank;
  if (ctx->opset >= 15) {
    start = wm_node_attr_int(ctx->node, "start", 0);
    end = wm_node_attr_int(ctx->node, "end", rank);
  }
  start = start < 0 ? start + rank : start;
  end = end < 0 ? end + rank : end;
  start = start < 0 ? 0 : start > rank ? rank : start;
  end = end < 0 ? 0 : end > rank ? rank : end;
  *out_start = start;
  *out_end = end < start ? start : end;
}

static wm_status_t shape_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  wm_shape_t out = {1, {-1}};
  if (in->rank >= 0) {
    int64_t start, end;
    shape_range(ctx, in->rank, &start, &end);
    out.dims[0] = end - start;
  }
  wm_op_set_out(ctx, 0, WM_DTYPE_INT64, &out);
  return NULL;
}

static wm_status_t shape_run(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = &ctx->in[0]->shape;
  int64_t start, end;
  shape_range(ctx, in->rank, &start, &end);
  for (int64_t d = start; d < end; d++) {
    wm_tensor_set_i64(ctx->out[0], (size_t)(d - start), in->dims[d]);
  }
  return NULL;
}

static wm_status_t size_infer(wm_op_ctx_t *ctx) {
  wm_shape_t out = {0, {0}};
  wm_op_set_out(ctx, 0, WM_DTYPE_INT64, &out);
  return NULL;
}

static wm_status_t size_run(wm_op_ctx_t *ctx) {
  wm_tensor_set_i64(ctx->out[0], 0, (int64_t)ctx->in[0]->count);
  return NULL;
}

// --------------------------------------------- DepthToSpace, SpaceToDepth

// Reads the block size and checks the NCHW input |in| for it.
static wm_status_t block_size(const wm_op_ctx_t *ctx, const wm_shape_t *in,
                              bool to_space, int64_t *out) {
  int64_t b = wm_node_attr_int(ctx->node, "blocksize", 0);
  if (b <= 0 || b > ((int64_t)1 << 20)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "blocksize %lld must be in [1, 2^20]", (long long)b);
  }
  *out = b;
  if (in->rank < 0) {
    return NULL;
  }
  if (in->rank != 4) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input has rank %d, want 4",
                       in->rank);
  }
  char buf[128];
  if (to_space && in->dims[1] >= 0 && in->dims[1] % (b * b) != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "channels of %s are not a multiple of blocksize^2 = "
                       "%lld",
                       wm_shape_format(in, buf, sizeof(buf)),
                       (long long)(b * b));
  }
  for (int32_t d = 2; d < 4 && !to_space; d++) {
    if (in->dims[d] >= 0 && in->dims[d] % b != 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "dim %d of %s is not a multiple of blocksize %lld", d,
                         wm_shape_format(in, buf, sizeof(buf)), (long long)b);
    }
  }
  return NULL;
}

// The DCR / CRD choice of DepthToSpace (attribute since opset 11) and
// SpaceToDepth (since opset 28); true for CRD.
static wm_status_t depth_to_space_crd(const wm_op_ctx_t *ctx, bool *out) {
  int64_t since = strcmp(ctx->node->op_type, "SpaceToDepth") == 0 ? 28 : 11;
  const char *mode = ctx->opset >= since
                         ? wm_node_attr_string(ctx->node, "mode", "DCR")
                         : "DCR";
  if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "mode \"%s\" is not DCR or CRD",
                       mode);
  }
  *out = strcmp(mode, "CRD") == 0;
  return NULL;
}

static wm_status_t depth_to_space_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  int64_t b = 1;
  bool crd = false;
  WM_RETURN_IF_ERROR(block_size(ctx, in, true, &b));
  WM_RETURN_IF_ERROR(depth_to_space_crd(ctx, &crd));
  if (in->rank < 0) {
    wm_shape_t s = {4, {-1, -1, -1, -1}};
    wm_op_set_out(ctx, 0, dtype, &s);
    return NULL;
  }
  wm_shape_t out = *in;
  out.dims[1] = in->dims[1] < 0 ? -1 : in->dims[1] / (b * b);
  for (int32_t d = 2; d < 4; d++) {
    if (!dim_mul(in->dims[d], b, &out.dims[d])) {
      return WM_OP_ERROR(ctx, OUT_OF_RANGE, "dim %d overflows", d);
    }
  }
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

static wm_status_t depth_to_space_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *in = ctx->in[0];
  wm_tensor_t *out = ctx->out[0];
  int64_t b = 1;
  bool crd = false;
  WM_RETURN_IF_ERROR(block_size(ctx, &in->shape, true, &b));
  WM_RETURN_IF_ERROR(depth_to_space_crd(ctx, &crd));
  int64_t n = in->shape.dims[0], c = in->shape.dims[1] / (b * b);
  int64_t h = in->shape.dims[2], w = in->shape.dims[3];
  // The output is [n, c, h, b1, w, b2]; the input holds the channel as
  // [b1, b2, c] (DCR) or [c, b1, b2] (CRD).
  wm_shape_t view = wm_shape_make(6, (const int64_t[]){n, c, h, b, w, b});
  int64_t dst[WM_MAX_RANK];
  wm_shape_strides(&view, dst);
  int64_t hw = h * w, chw = in->shape.dims[1] * hw;
  int64_t src[6] = {chw, hw, w, 0, 1, 0};
  if (crd) {
    src[1] = b * b * hw;
    src[3] = b * hw;
    src[5] = hw;
  } else {
    src[3] = b * c * hw;
    src[5] = c * hw;
  }
  return wm_op_copy_strided(out, 0, dst, in, 0, src, 6, view.dims);
}

static wm_status_t space_to_depth_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  int64_t b = 1;
  bool crd = false;
  WM_RETURN_IF_ERROR(block_size(ctx, in, false, &b));
  WM_RETURN_IF_ERROR(depth_to_space_crd(ctx, &crd));
  if (in->rank < 0) {
    wm_shape_t s = {4, {-1, -1, -1, -1}};
    wm_op_set_out(ctx, 0, dtype, &s);
    return NULL;
  }
  wm_shape_t out = *in;
  if (!dim_mul(in->dims[1], b * b, &out.dims[1])) {
    return WM_OP_ERROR(ctx, OUT_OF_RANGE, "channels overflow");
  }
  for (int32_t d = 2; d < 4; d++) {
    out.dims[d] = in->dims[d] < 0 ? -1 : in->dims[d] / b;
  }
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

static wm_status_t space_to_depth_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *in = ctx->in[0];
  wm_tensor_t *out = ctx->out[0];
  int64_t b = 1;
  bool crd = false;
  WM_RETURN_IF_ERROR(block_size(ctx, &in->shape, false, &b));
  WM_RETURN_IF_ERROR(depth_to_space_crd(ctx, &crd));
  int64_t n = in->shape.dims[0], c = in->shape.dims[1];
  int64_t h = in->shape.dims[2], w = in->shape.dims[3];
  // The output is [n, b1, b2, c, h/b, w/b] (DCR) or [n, c, b1, b2, h/b,
  // w/b] (CRD); the input is [n, c, h/b, b1, w/b, b2].
  int64_t hw = h * w;
  wm_shape_t view =
      crd ? wm_shape_make(6, (const int64_t[]){n, c, b, b, h / b, w / b})
          : wm_shape_make(6, (const int64_t[]){n, b, b, c, h / b, w / b});
  int64_t dst[WM_MAX_RANK];
  wm_shape_strides(&view, dst);
  int64_t src_dcr[6] = {c * hw, w, 1, hw, b * w, b};
  int64_t src_crd[6] = {c * hw, hw, w, 1, b * w, b};
  return wm_op_copy_strided(out, 0, dst, in, 0, crd ? src_crd : src_dcr, 6,
                            view.dims);
}

// ------------------------------------------------------- ReverseSequence

// Reads and checks the batch and time axes against |in| (rank known).
static wm_status_t reverse_sequence_axes(const wm_op_ctx_t *ctx,
                                         const wm_shape_t *in,
                                         int32_t *out_batch,
                                         int32_t *out_time) {
  int64_t batch = wm_node_attr_int(ctx->node, "batch_axis", 1);
  int64_t time = wm_node_attr_int(ctx->node, "time_axis", 0);
  if ((batch != 0 && batch != 1) || (time != 0 && time != 1) || batch == time) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "batch_axis %lld and time_axis %lld must be 0 and 1 "
                       "in some order",
                       (long long)batch, (long long)time);
  }
  if (in->rank >= 0 && in->rank < 2) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input has rank %d, want at least 2", in->rank);
  }
  *out_batch = (int32_t)batch;
  *out_time = (int32_t)time;
  return NULL;
}

static wm_status_t reverse_sequence_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  const wm_shape_t *lens = wm_op_in_shape(ctx, 1);
  wm_dtype_t ldt = wm_op_in_dtype(ctx, 1);
  int32_t batch = 1, time = 0;
  WM_RETURN_IF_ERROR(reverse_sequence_axes(ctx, in, &batch, &time));
  if (ldt != WM_DTYPE_UNDEFINED && ldt != WM_DTYPE_INT64 &&
      ldt != WM_DTYPE_INT32) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "sequence_lens is %s, want int64",
                       wm_dtype_name(ldt));
  }
  char b1[128], b2[128];
  if (lens->rank >= 0 &&
      (lens->rank != 1 ||
       (in->rank >= 2 && lens->dims[0] >= 0 && in->dims[batch] >= 0 &&
        lens->dims[0] != in->dims[batch]))) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "sequence_lens %s does not match batch axis %d of "
                       "input %s",
                       wm_shape_format(lens, b1, sizeof(b1)), batch,
                       wm_shape_format(in, b2, sizeof(b2)));
  }
  return wm_op_infer_same(ctx);
}

// Copies the |n| elements at |si| of |src| to |di| of |dst|.
static wm_status_t copy_run(wm_tensor_t *dst, size_t di, const wm_tensor_t *src,
                            size_t si, size_t n) {
  if (dst->dtype == WM_DTYPE_STRING) {
    for (size_t k = 0; k < n; k++) {
      WM_RETURN_IF_ERROR(copy_elem(dst, di + k, src, si + k));
    }
    return NULL;
  }
  size_t es = wm_dtype_size(dst->dtype);
  if (n) {
    memcpy((char *)dst->data + di * es, (const char *)src->data + si * es,
           n * es);
  }
  return NULL;
}

static wm_status_t reverse_sequence_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *in = ctx->in[0];
  const wm_tensor_t *lens = ctx->in[1];
  wm_tensor_t *out = ctx->out[0];
  if (!out) {
    return NULL;  // output omitted: nothing to compute
  }
  int32_t batch = 1, time = 0;
  WM_RETURN_IF_ERROR(reverse_sequence_axes(ctx, &in->shape, &batch, &time));
  int64_t nb = in->shape.dims[batch], nt = in->shape.dims[time];
  if (lens->shape.rank != 1 || lens->shape.dims[0] != nb) {
    char b1[128], b2[128];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "sequence_lens %s does not match batch axis %d of "
                       "input %s",
                       wm_shape_format(&lens->shape, b1, sizeof(b1)), batch,
                       wm_shape_format(&in->shape, b2, sizeof(b2)));
  }
  WM_RETURN_IF_ERROR(wm_op_copy_all(out, in));
  size_t inner = 1;
  for (int32_t d = 2; d < in->shape.rank; d++) {
    inner *= (size_t)in->shape.dims[d];
  }
  // Offset of (b, t) in elements: axes 0 and 1 are batch and time in
  // either order.
  size_t sb = (size_t)(batch == 0 ? nt : 1) * inner;
  size_t st = (size_t)(time == 0 ? nb : 1) * inner;
  for (int64_t b = 0; b < nb; b++) {
    int64_t len = wm_tensor_get_i64(lens, (size_t)b);
    if (len < 0 || len > nt) {
      return WM_OP_ERROR(ctx, OUT_OF_RANGE,
                         "sequence_lens[%lld] is %lld, outside [0, %lld] "
                         "(the time axis %d)",
                         (long long)b, (long long)len, (long long)nt, time);
    }
    for (int64_t t = 0; t < len; t++) {
      size_t di = (size_t)b * sb + (size_t)t * st;
      size_t si = (size_t)b * sb + (size_t)(len - 1 - t) * st;
      WM_RETURN_IF_ERROR(copy_run(out, di, in, si, inner));
    }
  }
  return NULL;
}

// --------------------------------------------------------- CenterCropPad

// Reads CenterCropPad's axes (attribute, default every axis) against
// |rank| into |out_axes|; *out_n is their count.
static wm_status_t crop_pad_axes(const wm_op_ctx_t *ctx, int32_t rank,
                                 int32_t out_axes[WM_MAX_RANK], size_t *out_n) {
  const int64_t *axes;
  size_t n;
  if (!wm_node_attr_ints(ctx->node, "axes", &axes, &n)) {
    for (int32_t d = 0; d < rank; d++) {
      out_axes[d] = d;
    }
    *out_n = (size_t)rank;
    return NULL;
  }
  *out_n = n;
  return normalize_axes(ctx, axes, n, rank, out_axes);
}

// Resolves the output shape of CenterCropPad from the input shape |in|
// (rank known) and the target lengths |shape| (NULL when unknown).
static wm_status_t crop_pad_shape(const wm_op_ctx_t *ctx, const wm_shape_t *in,
                                  const int64_t *shape, size_t n_shape,
                                  bool known, wm_shape_t *out) {
  int32_t axes[WM_MAX_RANK];
  size_t n;
  WM_RETURN_IF_ERROR(crop_pad_axes(ctx, in->rank, axes, &n));
  int64_t len = known ? (int64_t)n_shape : input_length(ctx, 1);
  if (len >= 0 && len != (int64_t)n) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "shape has %lld values for %zu axes", (long long)len, n);
  }
  *out = *in;
  for (size_t i = 0; i < n; i++) {
    int64_t v = known ? shape[i] : -1;
    if (known && v < 0) {
      char buf[256];
      return WM_OP_ERROR(
          ctx, INVALID_ARGUMENT, "shape %s has negative length %lld",
          wm_op_format_ints(shape, n_shape, buf, sizeof(buf)), (long long)v);
    }
    out->dims[axes[i]] = v;
  }
  int64_t total;
  return dims_product(ctx, out, 0, out->rank, &total);
}

static wm_status_t center_crop_pad_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  if (in->rank < 0) {
    wm_op_set_out_unknown(ctx, 0, dtype);
    return NULL;
  }
  int64_t *shape;
  size_t n;
  bool known;
  WM_RETURN_IF_ERROR(wm_op_input_ints(ctx, 1, &shape, &n, &known));
  wm_shape_t out;
  wm_status_t st = crop_pad_shape(ctx, in, shape, n, known, &out);
  free(shape);
  WM_RETURN_IF_ERROR(st);
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

// Copies the centered window common to input and output: along each dim
// the shorter of the two lengths, started (d/2 rounded down) into the
// longer one; the rest of the output is zero.
static wm_status_t center_crop_pad_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *in = ctx->in[0];
  wm_tensor_t *out = ctx->out[0];
  if (!out) {
    return NULL;  // output omitted: nothing to compute
  }
  if (out->dtype != WM_DTYPE_STRING && out->nbytes) {
    memset(out->data, 0, out->nbytes);  // strings start as ""
  }
  int32_t rank = in->shape.rank;
  int64_t in_strides[WM_MAX_RANK], out_strides[WM_MAX_RANK];
  int64_t len[WM_MAX_RANK];
  wm_shape_strides(&in->shape, in_strides);
  wm_shape_strides(&out->shape, out_strides);
  int64_t src_off = 0, dst_off = 0;
  for (int32_t d = 0; d < rank; d++) {
    int64_t i = in->shape.dims[d], o = out->shape.dims[d];
    len[d] = i < o ? i : o;
    if (i > o) {
      src_off += (i - o) / 2 * in_strides[d];
    } else {
      dst_off += (o - i) / 2 * out_strides[d];
    }
  }
  return wm_op_copy_strided(out, dst_off, out_strides, in, src_off, in_strides,
                            rank, len);
}

// --------------------------------------------------------- TensorScatter

// TensorScatter's sequence axis (never the batch axis 0) and mode.
typedef struct scatter_plan {
  int32_t axis;   // the sequence axis
  bool circular;  // write indices wrap around max_sequence_length
} scatter_plan_t;

static wm_status_t tensor_scatter_plan(const wm_op_ctx_t *ctx, int32_t rank,
                                       scatter_plan_t *out) {
  const char *mode = wm_node_attr_string(ctx->node, "mode", "linear");
  if (strcmp(mode, "linear") != 0 && strcmp(mode, "circular") != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "mode \"%s\" is not \"linear\" or \"circular\"", mode);
  }
  out->circular = strcmp(mode, "circular") == 0;
  out->axis = -1;
  if (rank < 0) {
    return NULL;
  }
  if (rank < 2) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "past_cache has rank %d, want at least 2", rank);
  }
  int64_t axis = wm_node_attr_int(ctx->node, "axis", -2);
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, axis, rank, "axis", &out->axis));
  if (out->axis == 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "axis %lld is the batch axis 0",
                       (long long)axis);
  }
  return NULL;
}

// Checks update (input 1) and write_indices (input 2) against the cache
// shape |past| (rank known); unknown dims pass.
static wm_status_t tensor_scatter_check(const wm_op_ctx_t *ctx,
                                        const wm_shape_t *past, int32_t axis) {
  const wm_shape_t *up = wm_op_in_shape(ctx, 1);
  wm_dtype_t pt = wm_op_in_dtype(ctx, 0), ut = wm_op_in_dtype(ctx, 1);
  if (pt != WM_DTYPE_UNDEFINED && ut != WM_DTYPE_UNDEFINED && pt != ut) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "update is %s but past_cache is %s", wm_dtype_name(ut),
                       wm_dtype_name(pt));
  }
  char b1[128], b2[128];
  if (up->rank >= 0) {
    bool bad = up->rank != past->rank;
    for (int32_t d = 0; d < up->rank && !bad; d++) {
      int64_t u = up->dims[d], p = past->dims[d];
      bad = u >= 0 && p >= 0 && (d == axis ? u > p : u != p);
    }
    if (bad) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "update %s does not fit past_cache %s along axis %d",
                         wm_shape_format(up, b1, sizeof(b1)),
                         wm_shape_format(past, b2, sizeof(b2)), axis);
    }
  }
  const wm_shape_t *wi = wm_op_in_shape(ctx, 2);
  wm_dtype_t wt = wm_op_in_dtype(ctx, 2);
  if (wt != WM_DTYPE_UNDEFINED && !wm_dtype_is_int(wt)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "write_indices is %s, want int64",
                       wm_dtype_name(wt));
  }
  if (wi->rank >= 0 &&
      (wi->rank != 1 || (wi->dims[0] >= 0 && past->dims[0] >= 0 &&
                         wi->dims[0] != past->dims[0]))) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "write_indices %s does not match the batch of "
                       "past_cache %s",
                       wm_shape_format(wi, b1, sizeof(b1)),
                       wm_shape_format(past, b2, sizeof(b2)));
  }
  return NULL;
}

static wm_status_t tensor_scatter_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *past = wm_op_in_shape(ctx, 0);
  scatter_plan_t p;
  WM_RETURN_IF_ERROR(tensor_scatter_plan(ctx, past->rank, &p));
  if (past->rank >= 0) {
    WM_RETURN_IF_ERROR(tensor_scatter_check(ctx, past, p.axis));
  }
  return wm_op_infer_same(ctx);
}

// present = past, then row s of each update slice goes to row
// write_indices[b] + s (modulo the cache length when circular).
static wm_status_t tensor_scatter_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *past = ctx->in[0], *update = ctx->in[1];
  const wm_tensor_t *wi = wm_op_has_input(ctx, 2) ? ctx->in[2] : NULL;
  wm_tensor_t *out = ctx->out[0];
  if (!out) {
    return NULL;  // output omitted: nothing to compute
  }
  scatter_plan_t p;
  WM_RETURN_IF_ERROR(tensor_scatter_plan(ctx, past->shape.rank, &p));
  WM_RETURN_IF_ERROR(tensor_scatter_check(ctx, &past->shape, p.axis));
  WM_RETURN_IF_ERROR(wm_op_copy_all(out, past));
  size_t batch = (size_t)past->shape.dims[0], prefix = 1, inner = 1;
  for (int32_t d = 0; d < p.axis; d++) {
    prefix *= (size_t)past->shape.dims[d];
  }
  for (int32_t d = p.axis + 1; d < past->shape.rank; d++) {
    inner *= (size_t)past->shape.dims[d];
  }
  int64_t max_len = past->shape.dims[p.axis];
  int64_t seq = update->shape.dims[p.axis];
  if (prefix == 0 || seq == 0 || inner == 0) {
    return NULL;
  }
  size_t per_batch = prefix / batch;
  for (size_t b = 0; b < batch; b++) {
    int64_t start = wi ? wm_tensor_get_i64(wi, b) : 0;
    if (p.circular) {
      start = ((start % max_len) + max_len) % max_len;
    } else if (start < 0 || start > max_len - seq) {
      return WM_OP_ERROR(ctx, OUT_OF_RANGE,
                         "write_indices[%zu] is %lld: %lld rows from there "
                         "leave [0, %lld) of axis %d",
                         b, (long long)start, (long long)seq,
                         (long long)max_len, p.axis);
    }
    for (size_t q = b * per_batch; q < (b + 1) * per_batch; q++) {
      for (int64_t s = 0; s < seq; s++) {
        int64_t row = (start + s) % max_len;
        size_t di = (q * (size_t)max_len + (size_t)row) * inner;
        size_t si = (q * (size_t)seq + (size_t)s) * inner;
        WM_RETURN_IF_ERROR(copy_run(out, di, update, si, inner));
      }
    }
  }
  return NULL;
}

// ---------------------------------------------------------------- BitCast

// Whether BitCast handles |dtype| by copying bytes: the types held in
// memory exactly as their ONNX bits (the 4- and 2-bit types are held
// unpacked, so copying their bytes would not reinterpret the bits).
static bool bit_cast_plain(wm_dtype_t dtype) {
  switch (dtype) {
    case WM_DTYPE_FLOAT:
    case WM_DTYPE_UINT8:
    case WM_DTYPE_INT8:
    case WM_DTYPE_UINT16:
    case WM_DTYPE_INT16:
    case WM_DTYPE_INT32:
    case WM_DTYPE_INT64:
    case WM_DTYPE_BOOL:
    case WM_DTYPE_FLOAT16:
    case WM_DTYPE_DOUBLE:
    case WM_DTYPE_UINT32:
    case WM_DTYPE_UINT64:
    case WM_DTYPE_COMPLEX64:
    case WM_DTYPE_COMPLEX128:
    case WM_DTYPE_BFLOAT16:
      return true;
    default:
      return false;
  }
}

// Reads BitCast's target type: a non-string dtype with the input's
// element size.
static wm_status_t bit_cast_target(const wm_op_ctx_t *ctx, wm_dtype_t *out) {
  const wm_attr_t *a = wm_node_attr(ctx->node, "to");
  if (!a || a->type != WM_ATTR_INT) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "missing integer attribute \"to\"");
  }
  if (!wm_dtype_is_valid(a->i) || a->i == WM_DTYPE_UNDEFINED ||
      a->i == WM_DTYPE_STRING) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "to %lld is not a supported non-string data type",
                       (long long)a->i);
  }
  wm_dtype_t to = (wm_dtype_t)a->i, from = wm_op_in_dtype(ctx, 0);
  if (from == WM_DTYPE_STRING || (from != WM_DTYPE_UNDEFINED &&
                                  wm_dtype_size(from) != wm_dtype_size(to))) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "cannot reinterpret %s as %s: element sizes differ",
                       wm_dtype_name(from), wm_dtype_name(to));
  }
  if (!bit_cast_plain(to) ||
      (from != WM_DTYPE_UNDEFINED && !bit_cast_plain(from))) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED, "bitcast from %s to %s",
                       wm_dtype_name(from), wm_dtype_name(to));
  }
  *out = to;
  return NULL;
}

static wm_status_t bit_cast_infer(wm_op_ctx_t *ctx) {
  wm_dtype_t to;
  WM_RETURN_IF_ERROR(bit_cast_target(ctx, &to));
  wm_op_set_out(ctx, 0, to, wm_op_in_shape(ctx, 0));
  return NULL;
}

// The bytes are copied as they are (the host is little endian, as the
// spec's byte order); a bool result is normalized to 0 or 1.
static wm_status_t bit_cast_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *in = ctx->in[0];
  wm_tensor_t *out = ctx->out[0];
  wm_dtype_t to;
  WM_RETURN_IF_ERROR(bit_cast_target(ctx, &to));
  if (!out) {
    return NULL;  // output omitted: nothing to compute
  }
  if (out->nbytes != in->nbytes) {
    return WM_OP_ERROR(ctx, INTERNAL, "bitcast of %zu bytes into %zu",
                       in->nbytes, out->nbytes);
  }
  if (in->nbytes) {
    memcpy(out->data, in->data, in->nbytes);
  }
  if (to == WM_DTYPE_BOOL) {
    uint8_t *b = out->data;
    for (size_t i = 0; i < out->count; i++) {
      b[i] = b[i] != 0;
    }
  }
  return NULL;
}

// ------------------------------------------------------------------ table

// ------------------------------------------------- compute definitions

// Reshape, Flatten, Squeeze, Unsqueeze, Identity: the same bytes, the
// input read as a tensor of the output's dims.
static wm_status_t define_same_bytes(const wm_op_ctx_t *ctx,
                                     wm_gen_compute_t *out) {
  const wm_shape_t *y = &ctx->out_types[0].shape;
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  for (int32_t d = 0; d < y->rank; d++) {
    acc.coef[d][d] = 1;
  }
  return wm_op_define_copy(ctx, out, y->rank, y->dims, NULL, &acc);
}

// Transpose: output dim d reads input dim perm[d].
static wm_status_t define_transpose(const wm_op_ctx_t *ctx,
                                    wm_gen_compute_t *out) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  int32_t perm[WM_MAX_RANK];
  if (in->rank < 0) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition: rank unknown");
  }
  WM_RETURN_IF_ERROR(transpose_perm(ctx, in->rank, perm));
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  for (int32_t d = 0; d < in->rank; d++) {
    acc.coef[perm[d]][d] = 1;
  }
  return wm_op_define_copy(ctx, out, in->rank, in->dims, NULL, &acc);
}

// Expand: the input broadcast to the output (numpy).
static wm_status_t define_expand(const wm_op_ctx_t *ctx,
                                 wm_gen_compute_t *out) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0), *y = &ctx->out_types[0].shape;
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  for (int32_t d = 0; d < in->rank && d < y->rank; d++) {
    acc.coef[d][y->rank - in->rank + d] = in->dims[d] == 1 ? 0 : 1;
  }
  return wm_op_define_copy(ctx, out, in->rank, in->dims, NULL, &acc);
}

// Concat: the sum of every input read at its offset along the axis,
// guarded (each reads 0 outside its own range, so one term is the value).
static wm_status_t define_concat(const wm_op_ctx_t *ctx,
                                 wm_gen_compute_t *out) {
  const wm_type_t *yt = &ctx->out_types[0];
  int64_t axis = 0;
  WM_RETURN_IF_ERROR(concat_axis(ctx, &axis));
  int32_t rank = yt->shape.rank;
  bool ok = yt->dtype == WM_DTYPE_FLOAT && wm_shape_is_known(&yt->shape) &&
            ctx->n_in < WM_GEN_MAX_TENSORS && rank > 0;
  for (int32_t i = 0; ok && i < ctx->n_in; i++) {
    ok = wm_op_in_dtype(ctx, i) == WM_DTYPE_FLOAT &&
         wm_shape_is_known(wm_op_in_shape(ctx, i));
  }
  if (!ok) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 of "
                       "known shape, at most %d inputs)",
                       WM_GEN_MAX_TENSORS - 1);
  }
  axis = axis < 0 ? axis + rank : axis;
  WM_RETURN_IF_ERROR(wm_gen_begin(out, "Concat", rank, yt->shape.dims, NULL));
  int32_t sum = -1;
  int64_t at = 0;
  for (int32_t i = 0; i < ctx->n_in; i++) {
    const wm_shape_t *s = wm_op_in_shape(ctx, i);
    wm_gen_access_t acc;
    memset(&acc, 0, sizeof(acc));
    for (int32_t d = 0; d < rank; d++) {
      acc.coef[d][d] = 1;
    }
    acc.off[axis] = -at;
    acc.guard = true;
    at += s->dims[axis];
    char name[16];
    snprintf(name, sizeof(name), "X%d", (int)i);
    int32_t x;
    WM_RETURN_IF_ERROR(
        wm_gen_input_access(out, name, rank, s->dims, NULL, &acc, &x));
    out->tensors[out->n_tensors - 1].operand = i;
    if (sum < 0) {
      sum = x;
    } else {
      WM_RETURN_IF_ERROR(wm_gen_binary(out, WM_GEN_ADD, sum, x, &sum));
    }
  }
  return wm_gen_finish(out, sum);
}

// Pad in constant mode with a value known when planning: the input read
// at o - begin, guarded with the value as its fill.
static wm_status_t define_pad(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  pad_params_t p;
  bool known = false;
  if (in->rank >= 0) {
    WM_RETURN_IF_ERROR(pad_params(ctx, in->rank, &p, &known));
  }
  if (!known || p.mode != PAD_CONSTANT ||
      (ctx->opset >= 11 && wm_op_has_input(ctx, 2) && !ctx->in[2]) ||
      wm_op_in_dtype(ctx, 0) != WM_DTYPE_FLOAT) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (constant "
                       "mode, float32, pads and value known)");
  }
  wm_tensor_t *fill = NULL;
  WM_RETURN_IF_ERROR(pad_fill(ctx, WM_DTYPE_FLOAT, &fill));
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  for (int32_t d = 0; d < in->rank; d++) {
    acc.coef[d][d] = 1;
    acc.off[d] = -p.begin[d];
  }
  acc.guard = true;
  acc.fill = ((const float *)fill->data)[0];
  wm_tensor_destroy(fill);
  return wm_op_define_copy(ctx, out, in->rank, in->dims, NULL, &acc);
}

// DepthToSpace and SpaceToDepth: the output seen as the 6-D view their
// reference kernels copy into, the input read through the same element
// strides.
static wm_status_t define_depth_space(const wm_op_ctx_t *ctx,
                                      wm_gen_compute_t *out) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  bool to_space = strcmp(ctx->node->op_type, "DepthToSpace") == 0;
  int64_t b = 1;
  bool crd = false;
  if (!wm_shape_is_known(in) || in->rank != 4 ||
      wm_op_in_dtype(ctx, 0) != WM_DTYPE_FLOAT) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 of "
                       "known shape)");
  }
  WM_RETURN_IF_ERROR(block_size(ctx, in, to_space, &b));
  WM_RETURN_IF_ERROR(depth_to_space_crd(ctx, &crd));
  int64_t n = in->dims[0], c = in->dims[1], h = in->dims[2], w = in->dims[3];
  int64_t hw = h * w, view[6], src[6];
  if (to_space) {
    int64_t co = c / (b * b);
    int64_t v[6] = {n, co, h, b, w, b};
    int64_t s_crd[6] = {c * hw, b * b * hw, w, b * hw, 1, hw};
    int64_t s_dcr[6] = {c * hw, hw, w, b * co * hw, 1, co * hw};
    memcpy(view, v, sizeof(view));
    memcpy(src, crd ? s_crd : s_dcr, sizeof(src));
  } else {
    int64_t v_crd[6] = {n, c, b, b, h / b, w / b};
    int64_t v_dcr[6] = {n, b, b, c, h / b, w / b};
    int64_t s_dcr[6] = {c * hw, w, 1, hw, b * w, b};
    int64_t s_crd[6] = {c * hw, hw, w, 1, b * w, b};
    memcpy(view, crd ? v_crd : v_dcr, sizeof(view));
    memcpy(src, crd ? s_crd : s_dcr, sizeof(src));
  }
  const wm_type_t *yt = &ctx->out_types[0];
  if (yt->dtype != WM_DTYPE_FLOAT || !wm_shape_is_known(&yt->shape)) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED, "no compute definition");
  }
  WM_RETURN_IF_ERROR(wm_gen_begin(out, ctx->node->op_type, 6, view, NULL));
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  for (int32_t d = 0; d < 6; d++) {
    acc.coef[d][d] = 1;
  }
  int32_t x;
  WM_RETURN_IF_ERROR(wm_gen_input_access(out, "X", 6, view, src, &acc, &x));
  out->tensors[out->n_tensors - 1].operand = 0;
  return wm_gen_finish(out, x);
}

#define MOVE(name, since, min_in, max_in, min_out, max_out, infer, run) \
  {                                                                     \
    name, "", since, min_in, max_in, min_out, max_out, 0, infer, run,   \
        wm_op_cost_zero                                                 \
  }

// The same with a compute definition |define|.
#define MOVE_D(name, since, min_in, max_in, min_out, max_out, infer, run, \
               define)                                                    \
  {                                                                       \
    name, "", since, min_in, max_in, min_out, max_out, 0, infer, run,     \
        wm_op_cost_zero, 0, NULL, define                                  \
  }

const wm_op_def_t wm_ops_tensor[] = {
    MOVE_D("Reshape", 1, 1, 2, 1, 1, reshape_infer, run_copy,
           define_same_bytes),
    MOVE_D("Flatten", 1, 1, 1, 1, 1, flatten_infer, run_copy,
           define_same_bytes),
    {"Transpose", "", 1, 1, 1, 1, 1, 0, transpose_infer, transpose_run,
     wm_op_cost_zero, 0, transpose_resolve, define_transpose},
    MOVE_D("Squeeze", 1, 1, 2, 1, 1, squeeze_infer, run_copy,
           define_same_bytes),
    MOVE_D("Unsqueeze", 1, 1, 2, 1, 1, unsqueeze_infer, run_copy,
           define_same_bytes),
    {"Concat", "", 1, 1, -1, 1, 1, 0, concat_infer, concat_run, wm_op_cost_zero,
     0, concat_resolve, define_concat},
    {"Split", "", 1, 1, 2, 1, -1, 0, split_infer, split_run, wm_op_cost_zero, 0,
     split_resolve, NULL, split_define},
    MOVE_D("Expand", 8, 2, 2, 1, 1, expand_infer, expand_run, define_expand),
    MOVE("Tile", 6, 2, 2, 1, 1, tile_infer, tile_run),
    {"Pad", "", 1, 1, 4, 1, 1, 0, pad_infer, pad_run, wm_op_cost_zero, 0,
     pad_resolve, define_pad},
    MOVE("Shape", 1, 1, 1, 1, 1, shape_infer, shape_run),
    MOVE("Size", 1, 1, 1, 1, 1, size_infer, size_run),
    MOVE_D("Identity", 1, 1, 1, 1, 1, wm_op_infer_same, run_copy,
           define_same_bytes),
    MOVE_D("DepthToSpace", 1, 1, 1, 1, 1, depth_to_space_infer,
           depth_to_space_run, define_depth_space),
    MOVE_D("SpaceToDepth", 1, 1, 1, 1, 1, space_to_depth_infer,
           space_to_depth_run, define_depth_space),
    MOVE("ReverseSequence", 10, 2, 2, 1, 1, reverse_sequence_infer,
         reverse_sequence_run),
    MOVE("CenterCropPad", 18, 2, 2, 1, 1, center_crop_pad_infer,
         center_crop_pad_run),
    MOVE("TensorScatter", 24, 2, 3, 1, 1, tensor_scatter_infer,
         tensor_scatter_run),
    MOVE("BitCast", 26, 1, 1, 1, 1, bit_cast_infer, bit_cast_run),
    WM_OPS_END,
};
