// Operators of the index family: Slice, Gather, GatherElements, GatherND,
// ScatterElements (and its deprecated alias Scatter), ScatterND, Compress,
// Unique and NonZero. Indices that come from data wrap when negative and
// are checked against their bound before any element is read or written.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

// ------------------------------------------------------------- helpers

// Copies |n| consecutive elements from |src| at |si| to |dst| at |di|.
static wm_status_t copy_block(wm_tensor_t *dst, size_t di,
                              const wm_tensor_t *src, size_t si, size_t n) {
  if (dst->dtype == WM_DTYPE_STRING) {
    for (size_t k = 0; k < n; k++) {
      const char *s = ((char *const *)src->data)[si + k];
      WM_RETURN_IF_ERROR(wm_tensor_set_string(dst, di + k, s, strlen(s)));
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

// Product of dims [from, to) of a known shape.
static size_t dims_count(const wm_shape_t *s, int32_t from, int32_t to) {
  size_t n = 1;
  for (int32_t d = from; d < to; d++) {
    n *= (size_t)s->dims[d];
  }
  return n;
}

// Checks that input |i| (when its dtype is known) holds int32 or int64.
static wm_status_t check_indices_dtype(const wm_op_ctx_t *ctx, int32_t i) {
  wm_dtype_t dt = wm_op_in_dtype(ctx, i);
  if (dt != WM_DTYPE_UNDEFINED && dt != WM_DTYPE_INT32 &&
      dt != WM_DTYPE_INT64) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (indices) is %s, want int32 or int64", i,
                       wm_dtype_name(dt));
  }
  return NULL;
}

// Reads index |i| of |indices|, wraps it when negative and checks it
// against |bound|; |axis| names the dimension in the error.
static wm_status_t read_index(const wm_op_ctx_t *ctx,
                              const wm_tensor_t *indices, size_t i,
                              int64_t bound, int32_t axis, int64_t *out) {
  int64_t v = wm_tensor_get_i64(indices, i);
  int64_t w = v < 0 ? v + bound : v;
  if (w < 0 || w >= bound) {
    return WM_OP_ERROR(ctx, OUT_OF_RANGE,
                       "index %lld (element %zu of the indices) is out of "
                       "range for axis %d of size %lld",
                       (long long)v, i, axis, (long long)bound);
  }
  *out = w;
  return NULL;
}

// Sets |s| to |rank| unknown dims.
static wm_shape_t unknown_dims(int32_t rank) {
  wm_shape_t s = {rank, {0}};
  for (int32_t d = 0; d < rank; d++) {
    s.dims[d] = -1;
  }
  return s;
}

// ----------------------------------------------------------------- Slice

// The resolved view of a Slice node.
typedef struct slice_view {
  int64_t start[WM_MAX_RANK];  // first element taken, per dim
  int64_t step[WM_MAX_RANK];   // stride between taken elements
  int64_t len[WM_MAX_RANK];    // elements taken (-1 when unknown)
} slice_view_t;

// Reads list |k| of Slice (starts, ends, axes, steps): attributes before
// opset 10, inputs 1..4 from then on. *out_values is a heap copy.
static wm_status_t slice_list(const wm_op_ctx_t *ctx, int32_t k,
                              int64_t **out_values, size_t *out_count,
                              bool *out_present, bool *out_known) {
  // steps (k == 3) has no attribute form.
  static const char *const names[] = {"starts", "ends", "axes", NULL};
  return wm_op_read_list(ctx, names[k], k + 1, 10, out_values, out_count,
                         out_present, out_known);
}

// Clamps |v| to [lo, hi].
static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

// Resolves one sliced dim of length |dim| per the ONNX clamping rules.
static void slice_dim(int64_t start, int64_t end, int64_t step, int64_t dim,
                      int64_t *out_start, int64_t *out_len) {
  if (dim == 0) {
    *out_start = 0;
    *out_len = 0;
    return;
  }
  start = start < 0 ? start + dim : start;
  end = end < 0 ? end + dim : end;
  uint64_t mag;
  uint64_t span = 0;
  if (step > 0) {
    start = clamp64(start, 0, dim);
    end = clamp64(end, 0, dim);
    mag = (uint64_t)step;
    span = end > start ? (uint64_t)(end - start) : 0;
  } else {
    start = clamp64(start, 0, dim - 1);
    end = clamp64(end, -1, dim - 1);
    mag = (uint64_t)(-(step + 1)) + 1;
    span = start > end ? (uint64_t)(start - end) : 0;
  }
  *out_start = start;
  *out_len = span ? (int64_t)((span - 1) / mag + 1) : 0;
}

// Resolves the view of |in|; *out_known is false when a list is unknown.
static wm_status_t slice_resolve(const wm_op_ctx_t *ctx, const wm_shape_t *in,
                                 slice_view_t *view, bool *out_known) {
  int64_t *lists[4] = {NULL, NULL, NULL, NULL};
  size_t counts[4] = {0, 0, 0, 0};
  bool present[4] = {false}, known[4] = {false};
  wm_status_t st = NULL;
  *out_known = false;
  for (int32_t k = 0; k < 4 && !st; k++) {
    st = slice_list(ctx, k, &lists[k], &counts[k], &present[k], &known[k]);
  }
  bool all_known = true;
  for (int32_t k = 0; k < 4; k++) {
    all_known &= !present[k] || known[k];
  }
  if (!st && (!present[0] || !present[1])) {
    st = WM_OP_ERROR(ctx, INVALID_ARGUMENT, "starts and ends are required");
  }
  if (st || !all_known) {
    goto done;
  }
  char b1[256], b2[256];
  size_t n = counts[0];
  if (counts[1] != n || (present[2] && counts[2] != n) ||
      (present[3] && counts[3] != n) || n > (size_t)in->rank) {
    st = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                     "starts %s and ends %s (with %zu axes and %zu steps) do "
                     "not fit rank %d",
                     wm_op_format_ints(lists[0], counts[0], b1, sizeof(b1)),
                     wm_op_format_ints(lists[1], counts[1], b2, sizeof(b2)),
                     present[2] ? counts[2] : n, present[3] ? counts[3] : n,
                     in->rank);
    goto done;
  }
  bool seen[WM_MAX_RANK] = {false};
  for (int32_t d = 0; d < in->rank; d++) {
    view->start[d] = 0;
    view->step[d] = 1;
    view->len[d] = in->dims[d];
  }
  for (size_t i = 0; i < n && !st; i++) {
    int32_t a = (int32_t)i;
    if (present[2]) {
      st = wm_op_axis(ctx, lists[2][i], in->rank, "axis", &a);
      if (st) {
        break;
      }
    }
    int64_t step = present[3] ? lists[3][i] : 1;
    if (seen[a]) {
      st = WM_OP_ERROR(ctx, INVALID_ARGUMENT, "axis %d is sliced twice", a);
    } else if (step == 0) {
      st = WM_OP_ERROR(ctx, INVALID_ARGUMENT, "step on axis %d is 0", a);
    } else {
      seen[a] = true;
      view->step[a] = step;
      if (in->dims[a] < 0) {
        view->len[a] = -1;
      } else {
        slice_dim(lists[0][i], lists[1][i], step, in->dims[a], &view->start[a],
                  &view->len[a]);
      }
    }
  }
  *out_known = !st;
done:
  for (int32_t k = 0; k < 4; k++) {
    free(lists[k]);
  }
  return st;
}

static wm_status_t slice_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  if (in->rank < 0) {
    wm_op_set_out_unknown(ctx, 0, dtype);
    return NULL;
  }
  slice_view_t view;
  bool known = false;
  WM_RETURN_IF_ERROR(slice_resolve(ctx, in, &view, &known));
  wm_shape_t out = unknown_dims(in->rank);
  for (int32_t d = 0; d < in->rank && known; d++) {
    out.dims[d] = view.len[d];
  }
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

// Slice: output element o of dim d reads input element start + o * step
// (the steps of dims with one element taken are never applied).
static wm_status_t slice_define(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  slice_view_t view;
  bool known = false;
  if (in->rank >= 0) {
    WM_RETURN_IF_ERROR(slice_resolve(ctx, in, &view, &known));
  }
  if (!known) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition: the slice is not known");
  }
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  for (int32_t d = 0; d < in->rank; d++) {
    acc.coef[d][d] = view.len[d] > 1 ? view.step[d] : 0;
    acc.off[d] = view.start[d];
  }
  return wm_op_define_copy(ctx, out, in->rank, in->dims, NULL, &acc);
}

static wm_status_t slice_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *in = ctx->in[0];
  wm_tensor_t *out = ctx->out[0];
  slice_view_t view;
  bool known = false;
  WM_RETURN_IF_ERROR(slice_resolve(ctx, &in->shape, &view, &known));
  int64_t in_strides[WM_MAX_RANK], src[WM_MAX_RANK], dst[WM_MAX_RANK];
  wm_shape_strides(&in->shape, in_strides);
  wm_shape_strides(&out->shape, dst);
  int64_t offset = 0;
  for (int32_t d = 0; d < in->shape.rank; d++) {
    offset += view.start[d] * in_strides[d];
    // With one element taken the step may be huge; it is never used.
    src[d] = view.len[d] > 1 ? view.step[d] * in_strides[d] : 0;
  }
  return wm_op_copy_strided(out, 0, dst, in, offset, src, out->shape.rank,
                            out->shape.dims);
}

// Parameters: per input axis, the first element taken (starts) and the
// step between taken elements (steps), the ONNX clamping applied: axes
// not sliced start at 0 with step 1; the output's dims are the counts.
static wm_status_t slice_params(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  slice_view_t view;
  bool known = false;
  if (in->rank >= 0) {
    WM_RETURN_IF_ERROR(slice_resolve(ctx, in, &view, &known));
  }
  out->pending = !known;
  if (!known) {
    return NULL;
  }
  WM_RETURN_IF_ERROR(
      wm_op_param_ints(ctx, out, "starts", view.start, in->rank));
  return wm_op_param_ints(ctx, out, "steps", view.step, in->rank);
}

// ---------------------------------------------------------------- Gather

// Parameters: axis normalised.
static wm_status_t gather_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  return wm_op_param_axis(ctx, out, wm_node_attr_int(ctx->node, "axis", 0));
}

static wm_status_t gather_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *data = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ind = wm_op_in_shape(ctx, 1);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  WM_RETURN_IF_ERROR(check_indices_dtype(ctx, 1));
  if (data->rank < 0 || ind->rank < 0) {
    wm_op_set_out_unknown(ctx, 0, dtype);
    return NULL;
  }
  int32_t a;
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, wm_node_attr_int(ctx->node, "axis", 0),
                                data->rank, "axis", &a));
  int32_t rank = data->rank - 1 + ind->rank;
  if (rank > WM_MAX_RANK) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "output rank %d exceeds the maximum %d", rank,
                       WM_MAX_RANK);
  }
  wm_shape_t out = {rank, {0}};
  int32_t k = 0;
  for (int32_t d = 0; d < a; d++) {
    out.dims[k++] = data->dims[d];
  }
  for (int32_t d = 0; d < ind->rank; d++) {
    out.dims[k++] = ind->dims[d];
  }
  for (int32_t d = a + 1; d < data->rank; d++) {
    out.dims[k++] = data->dims[d];
  }
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

// The compute definition of Gather on float32 data: the output's axes are
// data's before |axis|, the indices', then data's after; data's dim |axis|
// is gathered through the indices (a negative one counts from the end; one
// out of range reads 0 — run_gather refuses it, a kernel cannot).
static wm_status_t gather_define(const wm_op_ctx_t *ctx,
                                 wm_gen_compute_t *out) {
  const wm_shape_t *data = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ind = wm_op_in_shape(ctx, 1);
  const wm_type_t *yt = &ctx->out_types[0];
  wm_dtype_t it = wm_op_in_dtype(ctx, 1);
  if (wm_op_in_dtype(ctx, 0) != WM_DTYPE_FLOAT || !wm_shape_is_known(data) ||
      !wm_shape_is_known(ind) || !wm_shape_is_known(&yt->shape) ||
      (it != WM_DTYPE_INT64 && it != WM_DTYPE_INT32) || data->rank < 1) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 "
                       "data and int32 or int64 indices of known shapes)");
  }
  int32_t a;
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, wm_node_attr_int(ctx->node, "axis", 0),
                                data->rank, "axis", &a));
  WM_RETURN_IF_ERROR(
      wm_gen_begin(out, "Gather", yt->shape.rank, yt->shape.dims, NULL));
  wm_gen_access_t ai, ad;
  memset(&ai, 0, sizeof(ai));
  memset(&ad, 0, sizeof(ad));
  for (int32_t d = 0; d < ind->rank; d++) {
    ai.coef[d][a + d] = 1;
  }
  int32_t gather;
  WM_RETURN_IF_ERROR(
      wm_gen_index(out, "I", it, ind->rank, ind->dims, &ai, &gather));
  out->tensors[out->n_tensors - 1].operand = 1;
  for (int32_t d = 0; d < data->rank; d++) {
    if (d < a) {
      ad.coef[d][d] = 1;
    } else if (d > a) {
      ad.coef[d][d - 1 + ind->rank] = 1;
    }
  }
  ad.gather[a] = gather;
  ad.guard = true;
  int32_t x;
  WM_RETURN_IF_ERROR(
      wm_gen_input_access(out, "X", data->rank, data->dims, NULL, &ad, &x));
  out->tensors[out->n_tensors - 1].operand = 0;
  return wm_gen_finish(out, x);
}

static wm_status_t gather_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *data = ctx->in[0];
  const wm_tensor_t *ind = ctx->in[1];
  wm_tensor_t *out = ctx->out[0];
  int32_t a;
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, wm_node_attr_int(ctx->node, "axis", 0),
                                data->shape.rank, "axis", &a));
  size_t outer = dims_count(&data->shape, 0, a);
  size_t inner = dims_count(&data->shape, a + 1, data->shape.rank);
  int64_t len = data->shape.dims[a];
  size_t o = 0;
  for (size_t i = 0; i < outer; i++) {
    for (size_t j = 0; j < ind->count; j++) {
      int64_t idx = 0;
      WM_RETURN_IF_ERROR(read_index(ctx, ind, j, len, a, &idx));
      WM_RETURN_IF_ERROR(copy_block(
          out, o, data, (i * (size_t)len + (size_t)idx) * inner, inner));
      o += inner;
    }
  }
  return NULL;
}

// -------------------------------------------------------- GatherElements

// Checks that |ind| has the rank of |data| and fits it off the axis |a|.
static wm_status_t check_elements_shapes(const wm_op_ctx_t *ctx,
                                         const wm_shape_t *data,
                                         const wm_shape_t *ind, int32_t a,
                                         const char *what) {
  char b1[128], b2[128];
  if (ind->rank != data->rank) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "%s %s must have the rank of the data %s", what,
                       wm_shape_format(ind, b1, sizeof(b1)),
                       wm_shape_format(data, b2, sizeof(b2)));
  }
  for (int32_t d = 0; d < data->rank; d++) {
    if (d != a && ind->dims[d] >= 0 && data->dims[d] >= 0 &&
        ind->dims[d] > data->dims[d]) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "%s %s exceeds the data %s on dim %d", what,
                         wm_shape_format(ind, b1, sizeof(b1)),
                         wm_shape_format(data, b2, sizeof(b2)), d);
    }
  }
  return NULL;
}

static wm_status_t gather_elements_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *data = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ind = wm_op_in_shape(ctx, 1);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  WM_RETURN_IF_ERROR(check_indices_dtype(ctx, 1));
  if (data->rank >= 0 && ind->rank >= 0) {
    int32_t a;
    WM_RETURN_IF_ERROR(wm_op_axis(ctx, wm_node_attr_int(ctx->node, "axis", 0),
                                  data->rank, "axis", &a));
    WM_RETURN_IF_ERROR(check_elements_shapes(ctx, data, ind, a, "indices"));
  }
  wm_op_set_out(ctx, 0, dtype, ind);
  return NULL;
}

// Offset in |data| of element |i| of a tensor of |shape|, with the
// coordinate on axis |a| replaced by |idx|.
static size_t elements_offset(const wm_shape_t *shape,
                              const int64_t *data_strides, int32_t a, size_t i,
                              int64_t idx) {
  size_t off = 0;
  for (int32_t d = shape->rank - 1; d >= 0; d--) {
    size_t dim = (size_t)shape->dims[d];
    size_t c = i % dim;
    i /= dim;
    off += (d == a ? (size_t)idx : c) * (size_t)data_strides[d];
  }
  return off;
}

static wm_status_t gather_elements_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *data = ctx->in[0];
  const wm_tensor_t *ind = ctx->in[1];
  wm_tensor_t *out = ctx->out[0];
  int32_t a;
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, wm_node_attr_int(ctx->node, "axis", 0),
                                data->shape.rank, "axis", &a));
  WM_RETURN_IF_ERROR(
      check_elements_shapes(ctx, &data->shape, &ind->shape, a, "indices"));
  int64_t strides[WM_MAX_RANK];
  wm_shape_strides(&data->shape, strides);
  for (size_t i = 0; i < ind->count; i++) {
    int64_t idx = 0;
    WM_RETURN_IF_ERROR(read_index(ctx, ind, i, data->shape.dims[a], a, &idx));
    WM_RETURN_IF_ERROR(copy_block(
        out, i, data, elements_offset(&ind->shape, strides, a, i, idx), 1));
  }
  return NULL;
}

// -------------------------------------------------------------- GatherND

// Checks data and indices of GatherND / ScatterND; sets the last indices
// dim (*out_k). Unknown dims pass.
static wm_status_t nd_check(const wm_op_ctx_t *ctx, const wm_shape_t *data,
                            const wm_shape_t *ind, int64_t batch,
                            int64_t *out_k) {
  char b1[128], b2[128];
  *out_k = -1;
  if (data->rank < 1 || ind->rank < 1 || batch < 0 || batch >= ind->rank ||
      batch >= data->rank) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "data %s and indices %s do not fit batch_dims %lld",
                       wm_shape_format(data, b1, sizeof(b1)),
                       wm_shape_format(ind, b2, sizeof(b2)), (long long)batch);
  }
  for (int32_t d = 0; d < batch; d++) {
    if (data->dims[d] >= 0 && ind->dims[d] >= 0 &&
        data->dims[d] != ind->dims[d]) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "batch dim %d differs: data %s, indices %s", d,
                         wm_shape_format(data, b1, sizeof(b1)),
                         wm_shape_format(ind, b2, sizeof(b2)));
    }
  }
  int64_t k = ind->dims[ind->rank - 1];
  if (k >= 0 && (k < 1 || batch + k > data->rank)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "indices %s address %lld dims of data %s after %lld "
                       "batch dims",
                       wm_shape_format(ind, b2, sizeof(b2)), (long long)k,
                       wm_shape_format(data, b1, sizeof(b1)), (long long)batch);
  }
  *out_k = k;
  return NULL;
}

// Shape of a GatherND result (or ScatterND updates); rank -1 if unknown.
static wm_status_t nd_result_shape(const wm_op_ctx_t *ctx,
                                   const wm_shape_t *data,
                                   const wm_shape_t *ind, int64_t batch,
                                   int64_t k, wm_shape_t *out) {
  out->rank = -1;
  if (k < 0) {
    return NULL;
  }
  int64_t rank = ind->rank - 1 + data->rank - batch - k;
  if (rank > WM_MAX_RANK) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "result rank %lld exceeds the maximum %d",
                       (long long)rank, WM_MAX_RANK);
  }
  out->rank = (int32_t)rank;
  int32_t j = 0;
  for (int32_t d = 0; d < ind->rank - 1; d++) {
    out->dims[j++] =
        d < batch && ind->dims[d] < 0 ? data->dims[d] : ind->dims[d];
  }
  for (int32_t d = (int32_t)(batch + k); d < data->rank; d++) {
    out->dims[j++] = data->dims[d];
  }
  return NULL;
}

// Computes the offset in |data| addressed by tuple |t| (k indices at
// element t*k of |ind|) within batch item |b|.
static wm_status_t nd_offset(const wm_op_ctx_t *ctx, const wm_tensor_t *data,
                             const int64_t *strides, const wm_tensor_t *ind,
                             int32_t batch, int32_t k, size_t b, size_t t,
                             size_t *out) {
  size_t off = batch > 0 ? b * (size_t)strides[batch - 1] : 0;
  for (int32_t j = 0; j < k; j++) {
    int64_t idx = 0;
    int32_t d = batch + j;
    WM_RETURN_IF_ERROR(read_index(ctx, ind, t * (size_t)k + (size_t)j,
                                  data->shape.dims[d], d, &idx));
    off += (size_t)idx * (size_t)strides[d];
  }
  *out = off;
  return NULL;
}

static wm_status_t gather_nd_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *data = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ind = wm_op_in_shape(ctx, 1);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  WM_RETURN_IF_ERROR(check_indices_dtype(ctx, 1));
  if (data->rank < 0 || ind->rank < 0) {
    wm_op_set_out_unknown(ctx, 0, dtype);
    return NULL;
  }
  int64_t batch = wm_node_attr_int(ctx->node, "batch_dims", 0), k;
  WM_RETURN_IF_ERROR(nd_check(ctx, data, ind, batch, &k));
  wm_shape_t out;
  WM_RETURN_IF_ERROR(nd_result_shape(ctx, data, ind, batch, k, &out));
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

static wm_status_t gather_nd_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *data = ctx->in[0];
  const wm_tensor_t *ind = ctx->in[1];
  wm_tensor_t *out = ctx->out[0];
  int64_t batch = wm_node_attr_int(ctx->node, "batch_dims", 0), k;
  WM_RETURN_IF_ERROR(nd_check(ctx, &data->shape, &ind->shape, batch, &k));
  int32_t b = (int32_t)batch, q = ind->shape.rank;
  int64_t strides[WM_MAX_RANK];
  wm_shape_strides(&data->shape, strides);
  size_t n_batch = dims_count(&data->shape, 0, b);
  size_t n_tuples = dims_count(&ind->shape, b, q - 1);
  size_t slice = dims_count(&data->shape, b + (int32_t)k, data->shape.rank);
  for (size_t bi = 0; bi < n_batch; bi++) {
    for (size_t t = 0; t < n_tuples; t++) {
      size_t tuple = bi * n_tuples + t, off;
      WM_RETURN_IF_ERROR(
          nd_offset(ctx, data, strides, ind, b, (int32_t)k, bi, tuple, &off));
      WM_RETURN_IF_ERROR(copy_block(out, tuple * slice, data, off, slice));
    }
  }
  return NULL;
}

// --------------------------------------------------- ScatterElements, ND

enum reduction { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

// Reads the reduction attribute (opset 16: add, mul; 18: max, min).
static wm_status_t scatter_reduction(const wm_op_ctx_t *ctx,
                                     enum reduction *out) {
  *out = RED_NONE;
  if (ctx->opset < 16) {
    return NULL;
  }
  const char *r = wm_node_attr_string(ctx->node, "reduction", "none");
  if (strcmp(r, "none") == 0) {
    return NULL;
  }
  if (strcmp(r, "add") == 0) {
    *out = RED_ADD;
  } else if (strcmp(r, "mul") == 0) {
    *out = RED_MUL;
  } else if (strcmp(r, "max") == 0 && ctx->opset >= 18) {
    *out = RED_MAX;
  } else if (strcmp(r, "min") == 0 && ctx->opset >= 18) {
    *out = RED_MIN;
  } else {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "unknown reduction \"%s\" at opset %lld", r,
                       (long long)ctx->opset);
  }
  if (wm_op_in_dtype(ctx, 0) == WM_DTYPE_STRING) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "reduction \"%s\" does not apply to strings", r);
  }
  return NULL;
}

// Combines update element |ui| into output element |oi|.
static wm_status_t scatter_apply(wm_tensor_t *out, size_t oi,
                                 const wm_tensor_t *upd, size_t ui,
                                 enum reduction red) {
  if (red == RED_NONE) {
    return copy_block(out, oi, upd, ui, 1);
  }
  if (wm_dtype_is_float(out->dtype)) {
    double a = wm_tensor_get_f64(out, oi), b = wm_tensor_get_f64(upd, ui);
    double r = red == RED_ADD   ? a + b
               : red == RED_MUL ? a * b
               : red == RED_MAX ? (b > a ? b : a)
                                : (b < a ? b : a);
    wm_tensor_set_f64(out, oi, r);
    return NULL;
  }
  int64_t a = wm_tensor_get_i64(out, oi), b = wm_tensor_get_i64(upd, ui);
  bool less =
      wm_dtype_is_unsigned(out->dtype) ? (uint64_t)b < (uint64_t)a : b < a;
  int64_t r = red == RED_ADD   ? (int64_t)((uint64_t)a + (uint64_t)b)
              : red == RED_MUL ? (int64_t)((uint64_t)a * (uint64_t)b)
              : red == RED_MAX ? (less ? a : b)
                               : (less ? b : a);
  wm_tensor_set_i64(out, oi, r);
  return NULL;
}

// Checks that input |i| (updates) matches |want| where both are known.
static wm_status_t check_updates(const wm_op_ctx_t *ctx, int32_t i,
                                 const wm_shape_t *want) {
  const wm_shape_t *upd = wm_op_in_shape(ctx, i);
  if (upd->rank < 0 || want->rank < 0) {
    return NULL;
  }
  bool ok = upd->rank == want->rank;
  for (int32_t d = 0; d < upd->rank && ok; d++) {
    ok = upd->dims[d] < 0 || want->dims[d] < 0 || upd->dims[d] == want->dims[d];
  }
  if (!ok) {
    char b1[128], b2[128];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "updates %s, want %s",
                       wm_shape_format(upd, b1, sizeof(b1)),
                       wm_shape_format(want, b2, sizeof(b2)));
  }
  if (wm_op_in_dtype(ctx, i) != WM_DTYPE_UNDEFINED &&
      wm_op_in_dtype(ctx, 0) != WM_DTYPE_UNDEFINED &&
      wm_op_in_dtype(ctx, i) != wm_op_in_dtype(ctx, 0)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "updates are %s, data is %s",
                       wm_dtype_name(wm_op_in_dtype(ctx, i)),
                       wm_dtype_name(wm_op_in_dtype(ctx, 0)));
  }
  return NULL;
}

static wm_status_t scatter_elements_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *data = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ind = wm_op_in_shape(ctx, 1);
  enum reduction red;
  WM_RETURN_IF_ERROR(check_indices_dtype(ctx, 1));
  WM_RETURN_IF_ERROR(scatter_reduction(ctx, &red));
  WM_RETURN_IF_ERROR(check_updates(ctx, 2, ind));
  if (data->rank >= 0 && ind->rank >= 0) {
    int32_t a;
    WM_RETURN_IF_ERROR(wm_op_axis(ctx, wm_node_attr_int(ctx->node, "axis", 0),
                                  data->rank, "axis", &a));
    WM_RETURN_IF_ERROR(check_elements_shapes(ctx, data, ind, a, "indices"));
  }
  wm_op_set_out(ctx, 0, wm_op_in_dtype(ctx, 0), data);
  return NULL;
}

static wm_status_t scatter_elements_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *data = ctx->in[0];
  const wm_tensor_t *ind = ctx->in[1];
  const wm_tensor_t *upd = ctx->in[2];
  wm_tensor_t *out = ctx->out[0];
  enum reduction red;
  int32_t a;
  WM_RETURN_IF_ERROR(scatter_reduction(ctx, &red));
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, wm_node_attr_int(ctx->node, "axis", 0),
                                data->shape.rank, "axis", &a));
  WM_RETURN_IF_ERROR(
      check_elements_shapes(ctx, &data->shape, &ind->shape, a, "indices"));
  if (!wm_shape_equal(&ind->shape, &upd->shape)) {
    return WM_OP_ERROR(ctx, INTERNAL, "updates do not match the indices");
  }
  WM_RETURN_IF_ERROR(wm_op_copy_all(out, data));
  int64_t strides[WM_MAX_RANK];
  wm_shape_strides(&data->shape, strides);
  for (size_t i = 0; i < ind->count; i++) {
    int64_t idx = 0;
    WM_RETURN_IF_ERROR(read_index(ctx, ind, i, data->shape.dims[a], a, &idx));
    WM_RETURN_IF_ERROR(scatter_apply(
        out, elements_offset(&ind->shape, strides, a, i, idx), upd, i, red));
  }
  return NULL;
}

static wm_status_t scatter_nd_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *data = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ind = wm_op_in_shape(ctx, 1);
  enum reduction red;
  WM_RETURN_IF_ERROR(check_indices_dtype(ctx, 1));
  WM_RETURN_IF_ERROR(scatter_reduction(ctx, &red));
  if (data->rank >= 0 && ind->rank >= 0) {
    int64_t k;
    wm_shape_t want;
    WM_RETURN_IF_ERROR(nd_check(ctx, data, ind, 0, &k));
    WM_RETURN_IF_ERROR(nd_result_shape(ctx, data, ind, 0, k, &want));
    WM_RETURN_IF_ERROR(check_updates(ctx, 2, &want));
  }
  wm_op_set_out(ctx, 0, wm_op_in_dtype(ctx, 0), data);
  return NULL;
}

static wm_status_t scatter_nd_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *data = ctx->in[0];
  const wm_tensor_t *ind = ctx->in[1];
  const wm_tensor_t *upd = ctx->in[2];
  wm_tensor_t *out = ctx->out[0];
  enum reduction red;
  int64_t k;
  wm_shape_t want;
  WM_RETURN_IF_ERROR(scatter_reduction(ctx, &red));
  WM_RETURN_IF_ERROR(nd_check(ctx, &data->shape, &ind->shape, 0, &k));
  WM_RETURN_IF_ERROR(
      nd_result_shape(ctx, &data->shape, &ind->shape, 0, k, &want));
  if (!wm_shape_equal(&want, &upd->shape)) {
    return WM_OP_ERROR(ctx, INTERNAL, "updates do not match the indices");
  }
  WM_RETURN_IF_ERROR(wm_op_copy_all(out, data));
  int64_t strides[WM_MAX_RANK];
  wm_shape_strides(&data->shape, strides);
  size_t n_tuples = dims_count(&ind->shape, 0, ind->shape.rank - 1);
  size_t slice = dims_count(&data->shape, (int32_t)k, data->shape.rank);
  for (size_t t = 0; t < n_tuples; t++) {
    size_t off;
    WM_RETURN_IF_ERROR(
        nd_offset(ctx, data, strides, ind, 0, (int32_t)k, 0, t, &off));
    for (size_t e = 0; e < slice; e++) {
      WM_RETURN_IF_ERROR(scatter_apply(out, off + e, upd, t * slice + e, red));
    }
  }
  return NULL;
}

// -------------------------------------------------------------- Compress

// Counts the true entries of |cond| that select along a dim of |len|;
// errors when one lies beyond it.
static wm_status_t compress_count(const wm_op_ctx_t *ctx,
                                  const wm_tensor_t *cond, int64_t len,
                                  int64_t *out) {
  int64_t n = 0;
  for (size_t i = 0; i < cond->count; i++) {
    if (wm_tensor_get_i64(cond, i) == 0) {
      continue;
    }
    if ((int64_t)i >= len) {
      return WM_OP_ERROR(ctx, OUT_OF_RANGE,
                         "condition selects element %zu of an axis of size "
                         "%lld",
                         i, (long long)len);
    }
    n++;
  }
  *out = n;
  return NULL;
}

static wm_status_t compress_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  wm_dtype_t cdt = wm_op_in_dtype(ctx, 1);
  if (cdt != WM_DTYPE_UNDEFINED && cdt != WM_DTYPE_BOOL) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "condition is %s, want bool",
                       wm_dtype_name(cdt));
  }
  const wm_shape_t *cs = wm_op_in_shape(ctx, 1);
  if (cs->rank >= 0 && cs->rank != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "condition has rank %d, want 1",
                       cs->rank);
  }
  const wm_tensor_t *cond = ctx->in[1];
  const wm_attr_t *axis = wm_node_attr(ctx->node, "axis");
  wm_shape_t out = {1, {-1}};
  int32_t a = 0;
  int64_t len = -1;
  if (axis) {
    if (in->rank < 0) {
      wm_op_set_out_unknown(ctx, 0, dtype);
      return NULL;
    }
    WM_RETURN_IF_ERROR(wm_op_axis(ctx, axis->i, in->rank, "axis", &a));
    out = *in;
    len = in->dims[a];
  } else if (in->rank >= 0) {
    size_t n;
    len = wm_shape_numel(in, &n) ? (int64_t)n : -1;
  }
  out.dims[a] = -1;
  if (cond && len >= 0) {
    WM_RETURN_IF_ERROR(compress_count(ctx, cond, len, &out.dims[a]));
  }
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

static wm_status_t compress_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *in = ctx->in[0];
  const wm_tensor_t *cond = ctx->in[1];
  wm_tensor_t *out = ctx->out[0];
  const wm_attr_t *axis = wm_node_attr(ctx->node, "axis");
  size_t outer = 1, inner = 1;
  int64_t len = (int64_t)in->count;
  if (axis) {
    int32_t a;
    WM_RETURN_IF_ERROR(wm_op_axis(ctx, axis->i, in->shape.rank, "axis", &a));
    outer = dims_count(&in->shape, 0, a);
    inner = dims_count(&in->shape, a + 1, in->shape.rank);
    len = in->shape.dims[a];
  }
  int64_t n;
  WM_RETURN_IF_ERROR(compress_count(ctx, cond, len, &n));
  size_t o = 0;
  for (size_t i = 0; i < outer; i++) {
    for (size_t j = 0; j < cond->count && (int64_t)j < len; j++) {
      if (wm_tensor_get_i64(cond, j) != 0) {
        WM_RETURN_IF_ERROR(
            copy_block(out, o, in, (i * (size_t)len + j) * inner, inner));
        o += inner;
      }
    }
  }
  return NULL;
}

// ---------------------------------------------------------------- Unique

// Compares two doubles with NaN after every number and equal to NaN.
static int cmp_f64(double a, double b) {
  bool na = a != a, nb = b != b;
  if (na || nb) {
    return (int)na - (int)nb;
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

// Compares elements |i| and |j| of |t| in ascending order.
static int elem_cmp(const wm_tensor_t *t, size_t i, size_t j) {
  switch (t->dtype) {
    case WM_DTYPE_STRING: {
      int c = strcmp(((char *const *)t->data)[i], ((char *const *)t->data)[j]);
      return (c > 0) - (c < 0);
    }
    case WM_DTYPE_COMPLEX64: {
      const float *v = t->data;
      int c = cmp_f64(v[2 * i], v[2 * j]);
      return c ? c : cmp_f64(v[2 * i + 1], v[2 * j + 1]);
    }
    case WM_DTYPE_COMPLEX128: {
      const double *v = t->data;
      int c = cmp_f64(v[2 * i], v[2 * j]);
      return c ? c : cmp_f64(v[2 * i + 1], v[2 * j + 1]);
    }
    case WM_DTYPE_UINT64: {
      uint64_t a = ((const uint64_t *)t->data)[i];
      uint64_t b = ((const uint64_t *)t->data)[j];
      return (a > b) - (a < b);
    }
    default:
      break;
  }
  if (wm_dtype_is_float(t->dtype)) {
    return cmp_f64(wm_tensor_get_f64(t, i), wm_tensor_get_f64(t, j));
  }
  int64_t a = wm_tensor_get_i64(t, i), b = wm_tensor_get_i64(t, j);
  return (a > b) - (a < b);
}

// The items Unique compares: item k (< count) is the slice made of the
// elements (o * count + k) * inner + i for o < outer and i < inner, in
// that order, compared lexicographically.
typedef struct unique_items {
  const wm_tensor_t *x;  // input
  size_t outer;          // elements before the axis (1 when flattened)
  size_t count;          // items: axis length, or every element
  size_t inner;          // elements after the axis (1 when flattened)
} unique_items_t;

static int item_cmp(const unique_items_t *it, size_t a, size_t b) {
  for (size_t o = 0; o < it->outer; o++) {
    size_t base = o * it->count;
    for (size_t i = 0; i < it->inner; i++) {
      int c = elem_cmp(it->x, (base + a) * it->inner + i,
                       (base + b) * it->inner + i);
      if (c) {
        return c;
      }
    }
  }
  return 0;
}

// Stable bottom-up merge sort of the |n| item indices in |v| (|tmp| is
// scratch of the same size): O(n log n) item comparisons.
static void item_sort(const unique_items_t *it, size_t *v, size_t *tmp,
                      size_t n) {
  size_t *src = v, *dst = tmp;
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      size_t mid = n - lo > width ? lo + width : n;
      size_t hi = n - mid > width ? mid + width : n;
      size_t a = lo, b = mid, o = lo;
      while (a < mid && b < hi) {
        dst[o++] = item_cmp(it, src[b], src[a]) < 0 ? src[b++] : src[a++];
      }
      while (a < mid) {
        dst[o++] = src[a++];
      }
      while (b < hi) {
        dst[o++] = src[b++];
      }
    }
    size_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != v && n) {
    memcpy(v, src, n * sizeof(size_t));
  }
}

// The answer of Unique: output position p holds item first[p], seen
// counts[p] times; item k is at output position inverse[k].
typedef struct unique_result {
  size_t groups;    // unique items
  size_t *first;    // per output position: first occurrence
  size_t *counts;   // per output position: occurrences
  size_t *inverse;  // per item: output position
} unique_result_t;

static void unique_result_deinit(unique_result_t *r) {
  free(r->first);
  free(r->counts);
  free(r->inverse);
  memset(r, 0, sizeof(*r));
}

// Finds the unique items of |it|, in ascending order or, unless |sorted|,
// in the order of their first occurrence.
static wm_status_t unique_compute(const wm_op_ctx_t *ctx,
                                  const unique_items_t *it, bool sorted,
                                  unique_result_t *r) {
  memset(r, 0, sizeof(*r));
  size_t n = it->count, bytes;
  if (!wm_checked_mul(n ? n : 1, sizeof(size_t), &bytes)) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "%zu items do not fit", n);
  }
  size_t *order = wm_malloc(bytes), *rank = wm_malloc(bytes);
  size_t *group_of = wm_malloc(bytes), *gfirst = wm_malloc(bytes);
  size_t *gcount = wm_malloc(bytes);
  r->first = wm_malloc(bytes);
  r->counts = wm_malloc(bytes);
  r->inverse = wm_malloc(bytes);
  wm_status_t st = NULL;
  if (!order || !rank || !group_of || !gfirst || !gcount || !r->first ||
      !r->counts || !r->inverse) {
    st = WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory sorting %zu items",
                     n);
    unique_result_deinit(r);
    goto done;
  }
  for (size_t k = 0; k < n; k++) {
    order[k] = k;
  }
  item_sort(it, order, rank, n);
  // Groups in ascending order; the sort is stable, so the first entry of
  // a group is its first occurrence.
  size_t g = 0;
  for (size_t p = 0; p < n; p++) {
    if (p == 0 || item_cmp(it, order[p - 1], order[p]) != 0) {
      gfirst[g] = order[p];
      gcount[g] = 0;
      g++;
    }
    gcount[g - 1]++;
    group_of[order[p]] = g - 1;
  }
  r->groups = g;
  if (sorted) {
    for (size_t k = 0; k < g; k++) {
      rank[k] = k;
    }
  } else {
    size_t next = 0;
    for (size_t k = 0; k < n; k++) {
      if (gfirst[group_of[k]] == k) {
        rank[group_of[k]] = next++;
      }
    }
  }
  for (size_t k = 0; k < g; k++) {
    r->first[rank[k]] = gfirst[k];
    r->counts[rank[k]] = gcount[k];
  }
  for (size_t k = 0; k < n; k++) {
    r->inverse[k] = rank[group_of[k]];
  }
done:
  free(order);
  free(rank);
  free(group_of);
  free(gfirst);
  free(gcount);
  return st;
}

// Reads Unique's attributes against input shape |x| (rank known): sets
// *out_axis (-1 when flattened) and *out_sorted.
static wm_status_t unique_attrs(const wm_op_ctx_t *ctx, const wm_shape_t *x,
                                int32_t *out_axis, bool *out_sorted) {
  int64_t sorted = wm_node_attr_int(ctx->node, "sorted", 1);
  if (sorted != 0 && sorted != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "sorted is %lld, want 0 or 1",
                       (long long)sorted);
  }
  *out_sorted = sorted == 1;
  *out_axis = -1;
  const wm_attr_t *axis = wm_node_attr(ctx->node, "axis");
  if (axis && x->rank >= 0) {
    return wm_op_axis(ctx, axis->i, x->rank, "axis", out_axis);
  }
  return NULL;
}

// Describes the items of |x| along |axis| (-1: every element).
static unique_items_t unique_items(const wm_tensor_t *x, int32_t axis) {
  unique_items_t it = {x, 1, x->count, 1};
  if (axis >= 0) {
    it.outer = dims_count(&x->shape, 0, axis);
    it.count = (size_t)x->shape.dims[axis];
    it.inner = dims_count(&x->shape, axis + 1, x->shape.rank);
  }
  return it;
}

static wm_status_t unique_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  bool has_axis = wm_node_attr(ctx->node, "axis") != NULL;
  int32_t a = -1;
  bool sorted = true;
  WM_RETURN_IF_ERROR(unique_attrs(ctx, x, &a, &sorted));
  int64_t items = -1, groups = -1;
  if (a >= 0) {
    items = x->dims[a];
  } else if (!has_axis && x->rank >= 0) {
    size_t n;
    items = wm_shape_numel(x, &n) ? (int64_t)n : -1;
  }
  if (ctx->in[0]) {
    unique_items_t it = unique_items(ctx->in[0], a);
    unique_result_t r;
    WM_RETURN_IF_ERROR(unique_compute(ctx, &it, sorted, &r));
    groups = (int64_t)r.groups;
    unique_result_deinit(&r);
  }
  if (has_axis && x->rank < 0) {
    wm_op_set_out_unknown(ctx, 0, dtype);
  } else {
    wm_shape_t y = {1, {groups}};
    if (has_axis) {
      y = *x;
      y.dims[a] = groups;
    }
    wm_op_set_out(ctx, 0, dtype, &y);
  }
  wm_shape_t g = {1, {groups}}, n = {1, {items}};
  wm_op_set_out(ctx, 1, WM_DTYPE_INT64, &g);
  wm_op_set_out(ctx, 2, WM_DTYPE_INT64, &n);
  wm_op_set_out(ctx, 3, WM_DTYPE_INT64, &g);
  return NULL;
}

static wm_status_t unique_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *x = ctx->in[0];
  int32_t a = -1;
  bool sorted = true;
  WM_RETURN_IF_ERROR(unique_attrs(ctx, &x->shape, &a, &sorted));
  unique_items_t it = unique_items(x, a);
  unique_result_t r;
  WM_RETURN_IF_ERROR(unique_compute(ctx, &it, sorted, &r));
  wm_status_t st = NULL;
  wm_tensor_t *y = ctx->out[0];
  for (size_t o = 0; y && o < it.outer && !st; o++) {
    for (size_t p = 0; p < r.groups && !st; p++) {
      st = copy_block(y, (o * r.groups + p) * it.inner, x,
                      (o * it.count + r.first[p]) * it.inner, it.inner);
    }
  }
  for (size_t p = 0; p < r.groups; p++) {
    if (wm_op_has_output(ctx, 1) && ctx->out[1]) {
      wm_tensor_set_i64(ctx->out[1], p, (int64_t)r.first[p]);
    }
    if (wm_op_has_output(ctx, 3) && ctx->out[3]) {
      wm_tensor_set_i64(ctx->out[3], p, (int64_t)r.counts[p]);
    }
  }
  for (size_t k = 0; k < it.count && wm_op_has_output(ctx, 2) && ctx->out[2];
       k++) {
    wm_tensor_set_i64(ctx->out[2], k, (int64_t)r.inverse[k]);
  }
  unique_result_deinit(&r);
  return st;
}

static void unique_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  size_t n;
  if (wm_shape_numel(wm_op_in_shape(ctx, 0), &n) && n > 1) {
    out->flops = (double)n * log2((double)n);  // comparisons of the sort
  }
}

// --------------------------------------------------------------- NonZero

// Returns true when element |i| of |t| is not zero (not empty for
// strings; either part for complex numbers; NaN counts as non-zero).
static bool elem_nonzero(const wm_tensor_t *t, size_t i) {
  switch (t->dtype) {
    case WM_DTYPE_STRING:
      return ((char *const *)t->data)[i][0] != '\0';
    case WM_DTYPE_COMPLEX64: {
      const float *v = t->data;
      return v[2 * i] != 0.0f || v[2 * i + 1] != 0.0f;
    }
    case WM_DTYPE_COMPLEX128: {
      const double *v = t->data;
      return v[2 * i] != 0.0 || v[2 * i + 1] != 0.0;
    }
    default:
      break;
  }
  if (wm_dtype_is_float(t->dtype)) {
    return wm_tensor_get_f64(t, i) != 0.0;
  }
  return wm_tensor_get_i64(t, i) != 0;
}

static wm_status_t nonzero_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  wm_shape_t y = {2, {x->rank >= 0 ? x->rank : -1, -1}};
  const wm_tensor_t *t = ctx->in[0];
  if (t) {
    int64_t n = 0;
    for (size_t i = 0; i < t->count; i++) {
      n += elem_nonzero(t, i);
    }
    y.dims[1] = n;
  }
  wm_op_set_out(ctx, 0, WM_DTYPE_INT64, &y);
  return NULL;
}

static wm_status_t nonzero_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  int32_t rank = x->shape.rank;
  size_t nnz = y->shape.dims[1] >= 0 ? (size_t)y->shape.dims[1] : 0, j = 0;
  int64_t coord[WM_MAX_RANK] = {0};
  for (size_t i = 0; i < x->count; i++) {
    if (elem_nonzero(x, i)) {
      if (j >= nnz) {
        return WM_OP_ERROR(ctx, INTERNAL,
                           "more non-zero elements than the %zu counted", nnz);
      }
      for (int32_t d = 0; d < rank; d++) {
        wm_tensor_set_i64(y, (size_t)d * nnz + j, coord[d]);
      }
      j++;
    }
    // Advance the row-major coordinate of element i + 1.
    for (int32_t d = rank - 1; d >= 0; d--) {
      if (++coord[d] < x->shape.dims[d]) {
        break;
      }
      coord[d] = 0;
    }
  }
  return NULL;
}

// ------------------------------------------------------------------ table

#define INDEX_OP(name, since, min_in, max_in, infer, run) \
  { name, "", since, min_in, max_in, 1, 1, 0, infer, run, wm_op_cost_zero }

const wm_op_def_t wm_ops_index[] = {
    {"Slice", "", 1, 1, 5, 1, 1, 0, slice_infer, slice_run, wm_op_cost_zero, 0,
     slice_params, slice_define},
    {"Gather", "", 1, 2, 2, 1, 1, 0, gather_infer, gather_run, wm_op_cost_zero,
     0, gather_resolve, gather_define},
    INDEX_OP("GatherElements", 11, 2, 2, gather_elements_infer,
             gather_elements_run),
    INDEX_OP("GatherND", 11, 2, 2, gather_nd_infer, gather_nd_run),
    INDEX_OP("Scatter", 9, 3, 3, scatter_elements_infer, scatter_elements_run),
    INDEX_OP("ScatterElements", 11, 3, 3, scatter_elements_infer,
             scatter_elements_run),
    INDEX_OP("ScatterND", 11, 3, 3, scatter_nd_infer, scatter_nd_run),
    INDEX_OP("Compress", 9, 2, 2, compress_infer, compress_run),
    {"Unique", "", 11, 1, 1, 1, 4, 0, unique_infer, unique_run, unique_cost},
    INDEX_OP("NonZero", 9, 1, 1, nonzero_infer, nonzero_run),
    WM_OPS_END,
};
