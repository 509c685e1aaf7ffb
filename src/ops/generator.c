// Operators of the generator family: Constant, ConstantOfShape, Range,
// OneHot, Trilu, EyeLike and the random generators (RandomUniform,
// RandomNormal, their *Like forms, Bernoulli, Multinomial). They make
// tensors from attributes, shapes or scalars.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

// Copies element |si| of |src| to element |di| of |dst| (same dtype).
static wm_status_t copy_elem(wm_tensor_t *dst, size_t di,
                             const wm_tensor_t *src, size_t si) {
  if (dst->dtype == WM_DTYPE_STRING) {
    const char *s = ((char *const *)src->data)[si];
    s = s ? s : "";
    return wm_tensor_set_string(dst, di, s, strlen(s));
  }
  size_t es = wm_dtype_size(dst->dtype);
  memcpy((char *)dst->data + di * es, (const char *)src->data + si * es, es);
  return NULL;
}

// Sets element |i| of |t| to zero (the empty string for STRING).
static wm_status_t zero_elem(wm_tensor_t *t, size_t i) {
  if (t->dtype == WM_DTYPE_STRING) {
    return wm_tensor_set_string(t, i, "", 0);
  }
  size_t es = wm_dtype_size(t->dtype);
  memset((char *)t->data + i * es, 0, es);
  return NULL;
}

// Returns the shape of a host tensor of |count| elements and rank 0 or 1.
static wm_shape_t vector_shape(bool scalar, size_t count) {
  wm_shape_t s = {scalar ? 0 : 1, {(int64_t)count}};
  return s;
}

// -------------------------------------------------------------- Constant

// The attribute names Constant accepts, in the order the spec lists them.
static const char *const constant_attrs[] = {
    "value",      "value_float",  "value_floats",  "value_int",
    "value_ints", "value_string", "value_strings", "sparse_value",
};
enum {
  CONSTANT_ATTR_COUNT = sizeof(constant_attrs) / sizeof(constant_attrs[0]),
};

// Finds Constant's one value attribute and the type it gives the output.
static wm_status_t constant_attr(const wm_op_ctx_t *ctx,
                                 const wm_attr_t **out_attr,
                                 wm_type_t *out_type) {
  const wm_attr_t *found = NULL;
  for (int32_t i = 0; i < CONSTANT_ATTR_COUNT; i++) {
    const wm_attr_t *a = wm_node_attr(ctx->node, constant_attrs[i]);
    if (!a) {
      continue;
    }
    if (found) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "has both attributes \"%s\" and \"%s\", want one",
                         found->name, a->name);
    }
    found = a;
  }
  if (!found) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "has none of the attributes value, value_float(s), "
                       "value_int(s), value_string(s), sparse_value");
  }
  *out_attr = found;
  const char *n = found->name;
  wm_attr_type_t want;
  wm_dtype_t dtype;
  bool scalar = true;
  if (strcmp(n, "sparse_value") == 0) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "attribute \"sparse_value\" (a sparse tensor "
                       "constant) is not supported");
  } else if (strcmp(n, "value") == 0) {
    want = WM_ATTR_TENSOR;
    dtype = WM_DTYPE_UNDEFINED;
  } else if (strcmp(n, "value_float") == 0) {
    want = WM_ATTR_FLOAT;
    dtype = WM_DTYPE_FLOAT;
  } else if (strcmp(n, "value_floats") == 0) {
    want = WM_ATTR_FLOATS;
    dtype = WM_DTYPE_FLOAT;
    scalar = false;
  } else if (strcmp(n, "value_int") == 0) {
    want = WM_ATTR_INT;
    dtype = WM_DTYPE_INT64;
  } else if (strcmp(n, "value_ints") == 0) {
    want = WM_ATTR_INTS;
    dtype = WM_DTYPE_INT64;
    scalar = false;
  } else if (strcmp(n, "value_string") == 0) {
    want = WM_ATTR_STRING;
    dtype = WM_DTYPE_STRING;
  } else {
    want = WM_ATTR_STRINGS;
    dtype = WM_DTYPE_STRING;
    scalar = false;
  }
  if (found->type != want) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"%s\" has kind %s, want %s", n,
                       wm_attr_type_name(found->type), wm_attr_type_name(want));
  }
  if (want == WM_ATTR_TENSOR) {
    if (!found->t) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute \"value\" holds no tensor");
    }
    *out_type = wm_type_tensor(found->t->dtype, &found->t->shape);
    return NULL;
  }
  wm_shape_t shape = vector_shape(scalar, found->count);
  *out_type = wm_type_tensor(dtype, &shape);
  return NULL;
}

static wm_status_t constant_infer(wm_op_ctx_t *ctx) {
  const wm_attr_t *a;
  wm_type_t type;
  WM_RETURN_IF_ERROR(constant_attr(ctx, &a, &type));
  wm_op_set_out(ctx, 0, type.dtype, &type.shape);
  return NULL;
}

static wm_status_t constant_run(wm_op_ctx_t *ctx) {
  const wm_attr_t *a;
  wm_type_t type;
  WM_RETURN_IF_ERROR(constant_attr(ctx, &a, &type));
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  size_t count;
  if (!wm_shape_numel(&type.shape, &count) || y->dtype != type.dtype ||
      y->count != count) {
    return WM_OP_ERROR(ctx, INTERNAL,
                       "output tensor does not match attribute \"%s\"",
                       a->name);
  }
  switch (a->type) {
    case WM_ATTR_TENSOR:
      if (y->dtype != WM_DTYPE_STRING) {
        if (y->nbytes) {
          memcpy(y->data, a->t->data, y->nbytes);
        }
        return NULL;
      }
      for (size_t i = 0; i < count; i++) {
        WM_RETURN_IF_ERROR(copy_elem(y, i, a->t, i));
      }
      return NULL;
    case WM_ATTR_FLOAT:
      wm_tensor_set_f64(y, 0, a->f);
      return NULL;
    case WM_ATTR_INT:
      wm_tensor_set_i64(y, 0, a->i);
      return NULL;
    case WM_ATTR_FLOATS:
      for (size_t i = 0; i < count; i++) {
        wm_tensor_set_f64(y, i, a->floats[i]);
      }
      return NULL;
    case WM_ATTR_INTS:
      for (size_t i = 0; i < count; i++) {
        wm_tensor_set_i64(y, i, a->ints[i]);
      }
      return NULL;
    case WM_ATTR_STRING:
      return wm_tensor_set_string(y, 0, a->s, a->s_len);
    case WM_ATTR_STRINGS:
      for (size_t i = 0; i < count; i++) {
        WM_RETURN_IF_ERROR(
            wm_tensor_set_string(y, i, a->strings[i], a->string_lens[i]));
      }
      return NULL;
    default:
      return WM_OP_ERROR(ctx, INTERNAL, "unexpected attribute kind %s",
                         wm_attr_type_name(a->type));
  }
}

// ------------------------------------------------------- ConstantOfShape

// The fill value tensor of ConstantOfShape, or NULL for float 0.
static wm_status_t cos_value(const wm_op_ctx_t *ctx, const wm_tensor_t **out) {
  *out = NULL;
  const wm_attr_t *a = wm_node_attr(ctx->node, "value");
  if (!a) {
    return NULL;
  }
  if (a->type != WM_ATTR_TENSOR || !a->t) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"value\" has kind %s, want tensor",
                       wm_attr_type_name(a->type));
  }
  if (a->t->count != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"value\" has %zu elements, want 1",
                       a->t->count);
  }
  *out = a->t;
  return NULL;
}

// Reads the output shape of ConstantOfShape; out->rank -1 when unknown.
static wm_status_t cos_shape(const wm_op_ctx_t *ctx, wm_shape_t *out) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  out->rank = -1;
  if (in->rank > 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 (shape) has rank %d, want 1", in->rank);
  }
  int64_t *dims;
  size_t n;
  bool known;
  WM_RETURN_IF_ERROR(wm_op_input_ints(ctx, 0, &dims, &n, &known));
  if (!known) {
    if (in->rank == 1 && in->dims[0] >= 0 && in->dims[0] <= WM_MAX_RANK) {
      out->rank = (int32_t)in->dims[0];
      for (int32_t d = 0; d < out->rank; d++) {
        out->dims[d] = -1;
      }
    }
    return NULL;
  }
  wm_status_t s = NULL;
  if (n > WM_MAX_RANK) {
    s = WM_OP_ERROR(ctx, INVALID_ARGUMENT, "shape has %zu dims, more than %d",
                    n, WM_MAX_RANK);
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    if (dims[i] < 0) {
      s = WM_OP_ERROR(ctx, INVALID_ARGUMENT, "shape dim %zu is %lld, want >= 0",
                      i, (long long)dims[i]);
      goto done;
    }
  }
  *out = wm_shape_make((int32_t)n, dims);
done:
  free(dims);
  return s;
}

static wm_status_t cos_infer(wm_op_ctx_t *ctx) {
  const wm_tensor_t *v;
  WM_RETURN_IF_ERROR(cos_value(ctx, &v));
  wm_shape_t y;
  WM_RETURN_IF_ERROR(cos_shape(ctx, &y));
  wm_op_set_out(ctx, 0, v ? v->dtype : WM_DTYPE_FLOAT, &y);
  return NULL;
}

static wm_status_t cos_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *v;
  WM_RETURN_IF_ERROR(cos_value(ctx, &v));
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  for (size_t i = 0; i < y->count; i++) {
    if (v) {
      WM_RETURN_IF_ERROR(copy_elem(y, i, v, 0));
    } else {
      wm_tensor_set_f64(y, i, 0.0);
    }
  }
  return NULL;
}

// ----------------------------------------------------------------- Range

// The element count of Range from its scalar inputs: max(ceil((limit -
// start) / delta), 0), computed exactly for integer types.
static wm_status_t range_count(const wm_op_ctx_t *ctx, size_t *out) {
  static const char *const names[3] = {"start", "limit", "delta"};
  for (int32_t i = 0; i < 3; i++) {
    if (ctx->in[i]->count != 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d (%s) has %zu elements, want a scalar", i,
                         names[i], ctx->in[i]->count);
    }
  }
  if (wm_dtype_is_int(ctx->in[0]->dtype)) {
    int64_t start = wm_tensor_get_i64(ctx->in[0], 0);
    int64_t limit = wm_tensor_get_i64(ctx->in[1], 0);
    int64_t delta = wm_tensor_get_i64(ctx->in[2], 0);
    if (delta == 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "delta is 0");
    }
    int64_t diff;
    if (__builtin_sub_overflow(limit, start, &diff)) {
      return WM_OP_ERROR(ctx, OUT_OF_RANGE,
                         "limit %lld - start %lld overflows int64",
                         (long long)limit, (long long)start);
    }
    if (diff == 0 || (diff > 0) != (delta > 0)) {
      *out = 0;
      return NULL;
    }
    // Same signs: divide the magnitudes, which cannot overflow.
    uint64_t ad = diff < 0 ? 0 - (uint64_t)diff : (uint64_t)diff;
    uint64_t al = delta < 0 ? 0 - (uint64_t)delta : (uint64_t)delta;
    uint64_t q = ad / al + (ad % al != 0);
    if (q > (uint64_t)SIZE_MAX) {
      return WM_OP_ERROR(ctx, OUT_OF_RANGE, "range has %llu elements",
                         (unsigned long long)q);
    }
    *out = (size_t)q;
    return NULL;
  }
  double start = wm_tensor_get_f64(ctx->in[0], 0);
  double limit = wm_tensor_get_f64(ctx->in[1], 0);
  double delta = wm_tensor_get_f64(ctx->in[2], 0);
  if (delta == 0.0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "delta is 0");
  }
  double n = ceil((limit - start) / delta);
  if (isnan(n) || n > 9007199254740992.0) {
    return WM_OP_ERROR(ctx, OUT_OF_RANGE,
                       "range from %g to %g by %g has no valid element "
                       "count",
                       start, limit, delta);
  }
  *out = n > 0.0 ? (size_t)n : 0;
  return NULL;
}

static wm_status_t range_infer(wm_op_ctx_t *ctx) {
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  for (int32_t i = 0; i < 3; i++) {
    wm_dtype_t d = wm_op_in_dtype(ctx, i);
    const wm_shape_t *s = wm_op_in_shape(ctx, i);
    if (dt != WM_DTYPE_UNDEFINED && d != WM_DTYPE_UNDEFINED && d != dt) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d has type %s, input 0 has %s", i,
                         wm_dtype_name(d), wm_dtype_name(dt));
    }
    if (s->rank > 1 || (s->rank == 1 && s->dims[0] >= 0 && s->dims[0] != 1)) {
      char buf[64];
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d has shape %s, want a scalar", i,
                         wm_shape_format(s, buf, sizeof(buf)));
    }
  }
  wm_shape_t y = {1, {-1}};
  if (ctx->in[0] && ctx->in[1] && ctx->in[2]) {
    size_t n;
    WM_RETURN_IF_ERROR(range_count(ctx, &n));
    y.dims[0] = (int64_t)n;
  }
  wm_op_set_out(ctx, 0, dt, &y);
  return NULL;
}

static wm_status_t range_run(wm_op_ctx_t *ctx) {
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  size_t n;
  WM_RETURN_IF_ERROR(range_count(ctx, &n));
  if (y->count != n) {
    return WM_OP_ERROR(ctx, INTERNAL, "output has %zu elements, want %zu",
                       y->count, n);
  }
  if (wm_dtype_is_int(y->dtype)) {
    int64_t start = wm_tensor_get_i64(ctx->in[0], 0);
    int64_t delta = wm_tensor_get_i64(ctx->in[2], 0);
    for (size_t i = 0; i < n; i++) {
      // Every value lies between start and limit, so no overflow.
      wm_tensor_set_i64(y, i, start + (int64_t)i * delta);
    }
    return NULL;
  }
  double start = wm_tensor_get_f64(ctx->in[0], 0);
  double delta = wm_tensor_get_f64(ctx->in[2], 0);
  for (size_t i = 0; i < n; i++) {
    wm_tensor_set_f64(y, i, start + (double)i * delta);
  }
  return NULL;
}

// ---------------------------------------------------------------- OneHot

// Resolves OneHot: depth (-1 when unknown), the axis in the output and
// the output shape (rank -1 when unknown).
static wm_status_t onehot_plan(const wm_op_ctx_t *ctx, int64_t *out_depth,
                               int32_t *out_axis, wm_shape_t *out) {
  const wm_shape_t *ind = wm_op_in_shape(ctx, 0);
  const wm_shape_t *vs = wm_op_in_shape(ctx, 2);
  *out_depth = -1;
  *out_axis = 0;
  out->rank = -1;
  size_t nv;
  if (wm_shape_numel(vs, &nv) && nv != 2) {
    char buf[64];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 2 (values) has shape %s, want 2 elements",
                       wm_shape_format(vs, buf, sizeof(buf)));
  }
  const wm_tensor_t *dt = ctx->in[1];
  if (dt) {
    if (dt->count != 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 1 (depth) has %zu elements, want 1", dt->count);
    }
    double d = wm_tensor_get_f64(dt, 0);
    if (!(d >= 1.0) || d > 9007199254740992.0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 1 (depth) is %g, want a positive count", d);
    }
    *out_depth =
        wm_dtype_is_int(dt->dtype) ? wm_tensor_get_i64(dt, 0) : (int64_t)d;
  }
  if (ind->rank < 0) {
    return NULL;
  }
  if (ind->rank + 1 > WM_MAX_RANK) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 (indices) has rank %d, output would exceed "
                       "%d",
                       ind->rank, WM_MAX_RANK);
  }
  int64_t axis = wm_node_attr_int(ctx->node, "axis", -1);
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, axis, ind->rank + 1, "axis", out_axis));
  out->rank = ind->rank + 1;
  for (int32_t d = 0, k = 0; d < out->rank; d++) {
    out->dims[d] = d == *out_axis ? *out_depth : ind->dims[k++];
  }
  return NULL;
}

static wm_status_t onehot_infer(wm_op_ctx_t *ctx) {
  int64_t depth;
  int32_t axis;
  wm_shape_t y;
  WM_RETURN_IF_ERROR(onehot_plan(ctx, &depth, &axis, &y));
  wm_op_set_out(ctx, 0, wm_op_in_dtype(ctx, 2), &y);
  return NULL;
}

static wm_status_t onehot_run(wm_op_ctx_t *ctx) {
  int64_t depth;
  int32_t axis;
  wm_shape_t ys;
  WM_RETURN_IF_ERROR(onehot_plan(ctx, &depth, &axis, &ys));
  const wm_tensor_t *ind = ctx->in[0];
  const wm_tensor_t *values = ctx->in[2];
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  for (size_t i = 0; i < y->count; i++) {
    WM_RETURN_IF_ERROR(copy_elem(y, i, values, 0));
  }
  size_t outer = 1, inner = 1;
  for (int32_t d = 0; d < ind->shape.rank; d++) {
    if (d < axis) {
      outer *= (size_t)ind->shape.dims[d];
    } else {
      inner *= (size_t)ind->shape.dims[d];
    }
  }
  bool is_float = wm_dtype_is_float(ind->dtype);
  for (size_t o = 0; o < outer; o++) {
    for (size_t in = 0; in < inner; in++) {
      size_t ii = o * inner + in;
      int64_t k;
      if (is_float) {
        double v = trunc(wm_tensor_get_f64(ind, ii));
        if (!(v >= -(double)depth && v < (double)depth)) {
          continue;
        }
        k = (int64_t)v;
      } else {
        k = wm_tensor_get_i64(ind, ii);
        if (ind->dtype == WM_DTYPE_UINT64 && k < 0) {
          continue;
        }
      }
      if (k < 0 && ctx->opset >= 11) {
        k += depth;
      }
      if (k < 0 || k >= depth) {
        continue;
      }
      size_t yi = (o * (size_t)depth + (size_t)k) * inner + in;
      WM_RETURN_IF_ERROR(copy_elem(y, yi, values, 1));
    }
  }
  return NULL;
}

// ----------------------------------------------------------------- Trilu

static wm_status_t trilu_k(const wm_op_ctx_t *ctx, int64_t *out_k) {
  *out_k = 0;
  if (!wm_op_has_input(ctx, 1) || !ctx->in[1]) {
    return NULL;
  }
  const wm_tensor_t *k = ctx->in[1];
  if (k->count != 1 || !wm_dtype_is_int(k->dtype)) {
    char buf[64];
    return WM_OP_ERROR(
        ctx, INVALID_ARGUMENT, "input 1 (k) must be one integer, got %s%s",
        wm_dtype_name(k->dtype), wm_shape_format(&k->shape, buf, sizeof(buf)));
  }
  *out_k = wm_tensor_get_i64(k, 0);
  return NULL;
}

// Validates Trilu's inputs and reads k (0 when omitted or unknown).
static wm_status_t trilu_check(const wm_op_ctx_t *ctx, int64_t *out_k) {
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  if (x->rank >= 0 && x->rank < 2) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input 0 has rank %d, want >= 2",
                       x->rank);
  }
  return trilu_k(ctx, out_k);
}

static wm_status_t trilu_infer(wm_op_ctx_t *ctx) {
  int64_t k;
  WM_RETURN_IF_ERROR(trilu_check(ctx, &k));
  return wm_op_infer_same(ctx);
}

static wm_status_t trilu_run(wm_op_ctx_t *ctx) {
  int64_t k;
  WM_RETURN_IF_ERROR(trilu_check(ctx, &k));
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  bool upper = wm_node_attr_int(ctx->node, "upper", 1) != 0;
  int32_t r = x->shape.rank;
  size_t rows = (size_t)x->shape.dims[r - 2];
  size_t cols = (size_t)x->shape.dims[r - 1];
  for (size_t i = 0; i < x->count; i++) {
    int64_t col = (int64_t)(i % cols);
    int64_t row = (int64_t)((i / cols) % rows);
    // Keep j - i >= k (upper) or j - i <= k (lower).
    bool keep = upper ? col - row >= k : col - row <= k;
    WM_RETURN_IF_ERROR(keep ? copy_elem(y, i, x, i) : zero_elem(y, i));
  }
  return NULL;
}

// --------------------------------------------------------------- EyeLike

// Validates EyeLike's input and finds the output dtype.
static wm_status_t eyelike_dtype(const wm_op_ctx_t *ctx, wm_dtype_t *out) {
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  if (x->rank >= 0 && x->rank != 2) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input 0 has rank %d, want 2",
                       x->rank);
  }
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  const wm_attr_t *a = wm_node_attr(ctx->node, "dtype");
  if (a) {
    if (a->type != WM_ATTR_INT || !wm_dtype_is_valid(a->i) ||
        a->i == WM_DTYPE_UNDEFINED || a->i == WM_DTYPE_STRING ||
        a->i == WM_DTYPE_COMPLEX64 || a->i == WM_DTYPE_COMPLEX128) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute \"dtype\" is %lld, not a supported "
                         "numeric or bool type",
                         (long long)a->i);
    }
    dt = (wm_dtype_t)a->i;
  }
  *out = dt;
  return NULL;
}

static wm_status_t eyelike_infer(wm_op_ctx_t *ctx) {
  wm_dtype_t dt;
  WM_RETURN_IF_ERROR(eyelike_dtype(ctx, &dt));
  wm_op_set_out(ctx, 0, dt, wm_op_in_shape(ctx, 0));
  return NULL;
}

static wm_status_t eyelike_run(wm_op_ctx_t *ctx) {
  wm_dtype_t dt;
  WM_RETURN_IF_ERROR(eyelike_dtype(ctx, &dt));
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  int64_t k = wm_node_attr_int(ctx->node, "k", 0);
  int64_t rows = y->shape.dims[0], cols = y->shape.dims[1];
  if (y->nbytes) {
    memset(y->data, 0, y->nbytes);
  }
  if (k >= cols || k <= -rows) {
    return NULL;  // the diagonal lies outside: also keeps i + k in range
  }
  for (int64_t i = 0; i < rows; i++) {
    int64_t j = i + k;
    if (j >= 0 && j < cols) {
      wm_tensor_set_f64(y, (size_t)(i * cols + j), 1.0);
    }
  }
  return NULL;
}

// ---------------------------------------------------------------- random
//
// RandomUniform, RandomNormal, their *Like forms, Bernoulli and
// Multinomial. With a "seed" attribute the stream is a deterministic
// function of it (xoshiro256** seeded by splitmix64 of the seed's bits);
// without one each node run draws a fresh seed (wm_op_rng_* in util.c). Values
// cannot match another library's generator: ONNX's test data for these ops is
// listed as such in tests/conform/expected_fail.txt.

// The output dtype: attribute "dtype" (a float type for the ops that draw
// floats), else |def|.
static wm_status_t random_dtype(const wm_op_ctx_t *ctx, wm_dtype_t def,
                                bool floats_only, wm_dtype_t *out) {
  const wm_attr_t *a = wm_node_attr(ctx->node, "dtype");
  wm_dtype_t dt = def;
  if (a) {
    if (a->type != WM_ATTR_INT || !wm_dtype_is_valid(a->i)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute \"dtype\" is not a data type");
    }
    dt = (wm_dtype_t)a->i;
  }
  bool is_float = dt == WM_DTYPE_FLOAT || dt == WM_DTYPE_DOUBLE ||
                  dt == WM_DTYPE_FLOAT16 || dt == WM_DTYPE_BFLOAT16;
  bool ok = floats_only ? is_float
                        : is_float || dt == WM_DTYPE_INT32 ||
                              dt == WM_DTYPE_INT64 || dt == WM_DTYPE_BOOL ||
                              dt == WM_DTYPE_UINT8 || dt == WM_DTYPE_INT8 ||
                              dt == WM_DTYPE_INT16 || dt == WM_DTYPE_UINT16;
  if (!ok) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "output dtype %s is not supported here",
                       wm_dtype_name(dt));
  }
  *out = dt;
  return NULL;
}

static bool is_like(const wm_op_ctx_t *ctx) {
  return strstr(ctx->node->op_type, "Like") != NULL;
}

// RandomUniform(Like) and RandomNormal(Like): the shape comes from the
// "shape" attribute or the input.
static wm_status_t random_infer(wm_op_ctx_t *ctx) {
  wm_dtype_t dt;
  if (is_like(ctx)) {
    WM_RETURN_IF_ERROR(random_dtype(ctx, wm_op_in_dtype(ctx, 0), true, &dt));
    wm_op_set_out(ctx, 0, dt, wm_op_in_shape(ctx, 0));
    return NULL;
  }
  WM_RETURN_IF_ERROR(random_dtype(ctx, WM_DTYPE_FLOAT, true, &dt));
  const int64_t *dims;
  size_t n;
  if (!wm_node_attr_ints(ctx->node, "shape", &dims, &n)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"shape\" is required");
  }
  if (n > WM_MAX_RANK) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"shape\" has %zu dims, at most %d", n,
                       WM_MAX_RANK);
  }
  wm_shape_t shape = {.rank = (int32_t)n};
  for (size_t i = 0; i < n; i++) {
    if (dims[i] < 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute \"shape\" has dim %zu = %lld", i,
                         (long long)dims[i]);
    }
    shape.dims[i] = dims[i];
  }
  wm_op_set_out(ctx, 0, dt, &shape);
  return NULL;
}

static wm_status_t random_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(random_infer(ctx));
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;
  }
  bool normal = strncmp(ctx->node->op_type, "RandomNormal", 12) == 0;
  double a = wm_node_attr_float(ctx->node, normal ? "mean" : "low", 0.0f);
  double b = wm_node_attr_float(ctx->node, normal ? "scale" : "high", 1.0f);
  wm_op_rng_t r;
  wm_op_rng_seed(&r, ctx);
  for (size_t i = 0; i < y->count; i++) {
    double v = normal ? a + b * wm_op_rng_normal(&r)
                      : a + (b - a) * wm_op_rng_uniform(&r);
    wm_tensor_set_f64(y, i, v);
  }
  return NULL;
}

static wm_status_t bernoulli_infer(wm_op_ctx_t *ctx) {
  wm_dtype_t dt;
  WM_RETURN_IF_ERROR(random_dtype(ctx, wm_op_in_dtype(ctx, 0), false, &dt));
  wm_op_set_out(ctx, 0, dt, wm_op_in_shape(ctx, 0));
  return NULL;
}

static wm_status_t bernoulli_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(bernoulli_infer(ctx));
  const wm_tensor_t *p = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;
  }
  wm_op_rng_t r;
  wm_op_rng_seed(&r, ctx);
  for (size_t i = 0; i < y->count; i++) {
    double q = wm_tensor_get_f64(p, i);
    if (!(q >= 0.0 && q <= 1.0)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "probability %zu is %g, want a value in [0, 1]", i, q);
    }
    wm_tensor_set_f64(y, i, wm_op_rng_uniform(&r) < q ? 1.0 : 0.0);
  }
  return NULL;
}

// Multinomial: input [batch, classes] of unnormalized log-probabilities;
// output [batch, sample_size] class indices.
static wm_status_t multinomial_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  if (x->rank >= 0 && x->rank != 2) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input 0 has rank %d, want 2",
                       x->rank);
  }
  int64_t samples = wm_node_attr_int(ctx->node, "sample_size", 1);
  if (samples < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"sample_size\" is %lld, want >= 1",
                       (long long)samples);
  }
  wm_dtype_t dt =
      (wm_dtype_t)wm_node_attr_int(ctx->node, "dtype", WM_DTYPE_INT32);
  if (dt != WM_DTYPE_INT32 && dt != WM_DTYPE_INT64) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"dtype\" is %d, want int32 or int64",
                       (int)dt);
  }
  wm_shape_t y = {.rank = 2, .dims = {x->rank == 2 ? x->dims[0] : -1, samples}};
  wm_op_set_out(ctx, 0, dt, &y);
  return NULL;
}

static wm_status_t multinomial_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(multinomial_infer(ctx));
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;
  }
  size_t batch = (size_t)x->shape.dims[0], classes = (size_t)x->shape.dims[1];
  size_t samples = (size_t)y->shape.dims[1];
  if (classes == 0 && samples > 0 && batch > 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input 0 has no classes");
  }
  double *cdf = wm_calloc(classes + 1, sizeof(double));
  if (!cdf) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_op_rng_t r;
  wm_op_rng_seed(&r, ctx);
  for (size_t b = 0; b < batch; b++) {
    double max = -INFINITY, sum = 0.0;
    for (size_t c = 0; c < classes; c++) {
      max = fmax(max, wm_tensor_get_f64(x, b * classes + c));
    }
    for (size_t c = 0; c < classes; c++) {
      sum += exp(wm_tensor_get_f64(x, b * classes + c) - max);
      cdf[c] = sum;
    }
    for (size_t k = 0; k < samples; k++) {
      double u = wm_op_rng_uniform(&r) * sum;
      size_t lo = 0, hi = classes - 1;  // first c with cdf[c] > u
      while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cdf[mid] > u) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      wm_tensor_set_i64(y, b * samples + k, (int64_t)lo);
    }
  }
  free(cdf);
  return NULL;
}

#define RANGE_TYPES \
  (WM_T(FLOAT) | WM_T(DOUBLE) | WM_T(INT16) | WM_T(INT32) | WM_T(INT64))

const wm_op_def_t wm_ops_generator[] = {
    {"Constant", "", 1, 0, 0, 1, 1, 0, constant_infer, constant_run,
     wm_op_cost_zero},
    {"ConstantOfShape", "", 9, 1, 1, 1, 1, WM_T(INT64), cos_infer, cos_run,
     wm_op_cost_zero},
    {"Range", "", 11, 3, 3, 1, 1, RANGE_TYPES, range_infer, range_run, NULL},
    // Opset 27 adds float16 and bfloat16 (values computed in double and
    // rounded once).
    {"Range", "", 27, 3, 3, 1, 1, RANGE_TYPES | WM_T(FLOAT16) | WM_T(BFLOAT16),
     range_infer, range_run, NULL},
    {"OneHot", "", 9, 3, 3, 1, 1, WM_TYPES_NUMERIC, onehot_infer, onehot_run,
     wm_op_cost_zero},
    {"Trilu", "", 14, 1, 2, 1, 1, WM_TYPES_ALL, trilu_infer, trilu_run,
     wm_op_cost_zero},
    {"EyeLike", "", 9, 1, 1, 1, 1, WM_TYPES_NUMERIC | WM_T(BOOL), eyelike_infer,
     eyelike_run, wm_op_cost_zero},
    {"RandomUniform", "", 1, 0, 0, 1, 1, 0, random_infer, random_run, NULL,
     WM_OP_RANDOM},
    {"RandomNormal", "", 1, 0, 0, 1, 1, 0, random_infer, random_run, NULL,
     WM_OP_RANDOM},
    {"RandomUniformLike", "", 1, 1, 1, 1, 1, WM_TYPES_ALL, random_infer,
     random_run, NULL, WM_OP_RANDOM},
    {"RandomNormalLike", "", 1, 1, 1, 1, 1, WM_TYPES_ALL, random_infer,
     random_run, NULL, WM_OP_RANDOM},
    {"Bernoulli", "", 15, 1, 1, 1, 1, WM_TYPES_FLOAT, bernoulli_infer,
     bernoulli_run, NULL, WM_OP_RANDOM},
    {"Multinomial", "", 7, 1, 1, 1, 1, WM_TYPES_FLOAT, multinomial_infer,
     multinomial_run, NULL, WM_OP_RANDOM},
    WM_OPS_END,
};
