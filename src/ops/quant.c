// Quantized operators: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// QLinearConv, QLinearMatMul, MatMulInteger, ConvInteger.
//
// Quantization follows the ONNX reference: x / scale is computed in the
// precision numpy would use (float32 for float32 operands), rounded half to
// even and saturated to the output type; NaN quantizes to the zero point.
// The convolutions and matrix products are delegated to the registered
// Conv and MatMul definitions (shape rule, kernel and cost) over tensors
// with the zero points already subtracted, so their geometry lives in one
// place; the integer results are exact (Conv accumulates in double, MatMul
// in wrapping int64).
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

#define T_Q8 (WM_T(UINT8) | WM_T(INT8))
#define T_Q16 (WM_T(UINT16) | WM_T(INT16))
#define T_F8                                                      \
  (WM_T(FLOAT8E4M3FN) | WM_T(FLOAT8E4M3FNUZ) | WM_T(FLOAT8E5M2) | \
   WM_T(FLOAT8E5M2FNUZ))

// Quantized types of Quantize- and DequantizeLinear at |opset|.
static uint32_t qtypes(int64_t opset) {
  uint32_t m = T_Q8;
  m |= opset >= 19 ? T_F8 : 0;
  m |= opset >= 21 ? T_Q16 | WM_T(UINT4) | WM_T(INT4) : 0;
  m |= opset >= 23 ? WM_T(FLOAT4E2M1) : 0;
  m |= opset >= 25 ? WM_T(UINT2) | WM_T(INT2) : 0;
  return m;
}
#define T_SCALE WM_TYPES_FLOAT

// ---------------------------------------------------------- small helpers

// Writes the names of the dtypes in |mask| as "a, b or c" into |buf|.
static const char *mask_names(uint32_t mask, char *buf, size_t size) {
  size_t len = 0;
  int32_t n = 0, total = 0;
  buf[0] = '\0';
  for (int32_t d = 1; d < WM_DTYPE_COUNT; d++) {
    total += (mask >> d) & 1u;
  }
  for (int32_t d = 1; d < WM_DTYPE_COUNT && len < size; d++) {
    if (!((mask >> d) & 1u)) {
      continue;
    }
    const char *sep = n == 0 ? "" : (n == total - 1 ? " or " : ", ");
    int k = snprintf(buf + len, size - len, "%s%s", sep,
                     wm_dtype_name((wm_dtype_t)d));
    if (k < 0) {
      break;
    }
    len += (size_t)k;
    n++;
  }
  return buf;
}

// Requires input |i| (named |what|), when present with a known dtype, to
// have a dtype in |mask|.
static wm_status_t check_dtype(const wm_op_ctx_t *ctx, int32_t i,
                               const char *what, uint32_t mask) {
  wm_dtype_t d = wm_op_in_dtype(ctx, i);
  if (d == WM_DTYPE_UNDEFINED || (d < WM_DTYPE_COUNT && (mask >> d) & 1u)) {
    return NULL;
  }
  char buf[160];
  return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                     "input %d (%s) has dtype %s, want %s", i, what,
                     wm_dtype_name(d), mask_names(mask, buf, sizeof(buf)));
}

// Requires input |i| (a zero point) to have the dtype of input |j| when
// both are known.
static wm_status_t check_same_dtype(const wm_op_ctx_t *ctx, int32_t i,
                                    const char *what, int32_t j) {
  wm_dtype_t a = wm_op_in_dtype(ctx, i), b = wm_op_in_dtype(ctx, j);
  if (a != WM_DTYPE_UNDEFINED && b != WM_DTYPE_UNDEFINED && a != b) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (%s) has dtype %s, want %s like input %d", i,
                       what, wm_dtype_name(a), wm_dtype_name(b), j);
  }
  return NULL;
}

// True when every known dim of |s| is 1 (a scalar or one element).
static bool is_single(const wm_shape_t *s) {
  for (int32_t d = 0; d < s->rank; d++) {
    if (s->dims[d] != 1 && s->dims[d] >= 0) {
      return false;
    }
  }
  return s->rank >= 0;
}

// True when |s| is known to hold exactly one element.
static bool is_one(const wm_shape_t *s) {
  size_t n;
  return wm_shape_numel(s, &n) && n == 1;
}

// Requires input |i|, when present with a known shape, to hold one element.
static wm_status_t check_single(const wm_op_ctx_t *ctx, int32_t i,
                                const char *what) {
  const wm_shape_t *s = wm_op_in_shape(ctx, i);
  if (s->rank < 0 || is_single(s)) {
    return NULL;
  }
  char buf[160];
  return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                     "input %d (%s) has shape %s, want a scalar", i, what,
                     wm_shape_format(s, buf, sizeof(buf)));
}

// Saturation bounds of a quantized type.
static void qrange(wm_dtype_t d, double *lo, double *hi) {
  switch (d) {
    case WM_DTYPE_INT8:
      *lo = -128, *hi = 127;
      break;
    case WM_DTYPE_UINT16:
      *lo = 0, *hi = 65535;
      break;
    case WM_DTYPE_INT16:
      *lo = -32768, *hi = 32767;
      break;
    case WM_DTYPE_INT32:
      *lo = -2147483648.0, *hi = 2147483647.0;
      break;
    case WM_DTYPE_UINT4:
      *lo = 0, *hi = 15;
      break;
    case WM_DTYPE_INT4:
      *lo = -8, *hi = 7;
      break;
    case WM_DTYPE_UINT2:
      *lo = 0, *hi = 3;
      break;
    case WM_DTYPE_INT2:
      *lo = -2, *hi = 1;
      break;
    default:
      *lo = 0, *hi = 255;
      break;
  }
}

// a / b with IEEE results for b == 0 (no floating division by zero).
static double qdiv(double a, double b) {
  if (b != 0) {
    return a / b;
  }
  if (a == 0 || isnan(a)) {
    return NAN;
  }
  return (signbit(a) != signbit(b)) ? -INFINITY : INFINITY;
}

// Rounds |v| to the precision of the float type |prec| (double: as is).
static double round_to(wm_dtype_t prec, double v) {
  if (prec == WM_DTYPE_DOUBLE || isnan(v) || fabs(v) > FLT_MAX) {
    return v;
  }
  float f = (float)v;
  if (prec == WM_DTYPE_FLOAT16) {
    f = wm_f16_to_f32(wm_f32_to_f16(f));
  } else if (prec == WM_DTYPE_BFLOAT16) {
    f = wm_bf16_to_f32(wm_f32_to_bf16(f));
  }
  return (double)f;
}

// The quantized value of |v| (already divided by the scale): rounded half
// to even, offset by |zp| and saturated to [lo, hi]; NaN gives |zp|.
static int64_t quantize_one(double v, double zp, double lo, double hi) {
  double r = (isnan(v) ? 0.0 : rint(v)) + zp;
  if (r < lo) {
    r = lo;
  }
  if (r > hi) {
    r = hi;
  }
  return (int64_t)r;
}

// Precision numpy uses for x / scale: float64 for integer x, else the
// wider of the two float types.
static wm_dtype_t div_precision(wm_dtype_t x, wm_dtype_t s) {
  if (!wm_dtype_is_float(x) || x == WM_DTYPE_DOUBLE || s == WM_DTYPE_DOUBLE) {
    return WM_DTYPE_DOUBLE;
  }
  if (x == s) {
    return x;
  }
  return WM_DTYPE_FLOAT;
}

// Creates a tensor of |dtype| and |shape| for an intermediate result.
static wm_status_t make_tensor(const wm_op_ctx_t *ctx, wm_dtype_t dtype,
                               const wm_shape_t *shape, wm_tensor_t **out) {
  wm_status_t s = wm_tensor_create(dtype, shape, out);
  if (s) {
    return wm_status_annotate(s, "node \"%s\" (%s): intermediate", ctx->label,
                              ctx->node->op_type);
  }
  return NULL;
}

// ------------------------------------------- Quantize/DequantizeLinear

// How scale and zero point map onto x.
typedef enum gran {
  GRAN_UNKNOWN = 0,  // scale shape unknown (static inference)
  GRAN_TENSOR = 1,   // one scale
  GRAN_AXIS = 2,     // one scale per index of |axis|
  GRAN_BLOCK = 3,    // one scale per |block| indices of |axis|
} gran_t;

typedef struct qlayout {
  gran_t gran;    // granularity
  int32_t axis;   // quantized axis of x (AXIS, BLOCK)
  int64_t block;  // block_size (BLOCK)
} qlayout_t;

// Validates the scale (input 1) and zero point (input 2) of Quantize- and
// DequantizeLinear against x (input 0) and derives the granularity.
static wm_status_t qdq_layout(const wm_op_ctx_t *ctx, const char *sname,
                              const char *zname, qlayout_t *out) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ss = wm_op_in_shape(ctx, 1);
  const wm_shape_t *zs = wm_op_in_shape(ctx, 2);
  char b1[160], b2[160];
  memset(out, 0, sizeof(*out));
  int64_t axis = 1, block = 0;
  if (ctx->opset >= 13) {
    WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "axis", 1, &axis));
  }
  if (ctx->opset >= 21) {
    WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "block_size", 0, &block));
    if (block < 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute block_size is %lld, want at least 0",
                         (long long)block);
    }
  }
  if (ss->rank >= 0 && zs->rank >= 0 && !(is_one(ss) && is_one(zs))) {
    bool same = ss->rank == zs->rank;
    for (int32_t d = 0; same && d < ss->rank; d++) {
      same = ss->dims[d] < 0 || zs->dims[d] < 0 || ss->dims[d] == zs->dims[d];
    }
    if (!same) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 2 (%s) has shape %s but input 1 (%s) has "
                         "shape %s, want the same",
                         zname, wm_shape_format(zs, b1, sizeof(b1)), sname,
                         wm_shape_format(ss, b2, sizeof(b2)));
    }
  }
  if (ss->rank < 0) {
    return NULL;
  }
  if (block > 0) {
    if (xs->rank < 0) {
      return NULL;
    }
    if (ss->rank != xs->rank) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 1 (%s) has rank %d, want %d like x for "
                         "block_size %lld",
                         sname, ss->rank, xs->rank, (long long)block);
    }
    WM_RETURN_IF_ERROR(
        wm_op_axis(ctx, axis, xs->rank, "attribute axis", &out->axis));
    for (int32_t d = 0; d < xs->rank; d++) {
      int64_t x = xs->dims[d], want = x;
      if (x >= 0 && d == out->axis) {
        want = x / block + (x % block != 0);
      }
      if (want >= 0 && ss->dims[d] >= 0 && ss->dims[d] != want) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "input 1 (%s) has shape %s, want dim %d to be %lld "
                           "for x %s, axis %d and block_size %lld",
                           sname, wm_shape_format(ss, b1, sizeof(b1)), d,
                           (long long)want, wm_shape_format(xs, b2, sizeof(b2)),
                           out->axis, (long long)block);
      }
    }
    out->gran = GRAN_BLOCK;
    out->block = block;
    return NULL;
  }
  if (ss->rank == 0 || (ss->rank == 1 && ss->dims[0] == 1)) {
    out->gran = GRAN_TENSOR;
    return NULL;
  }
  if (ss->rank != 1 || ctx->opset < 13) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 1 (%s) has shape %s, want a scalar%s", sname,
                       wm_shape_format(ss, b1, sizeof(b1)),
                       ctx->opset < 13 ? "" : " or a 1-D tensor (per axis)");
  }
  if (xs->rank < 0) {
    return NULL;
  }
  WM_RETURN_IF_ERROR(
      wm_op_axis(ctx, axis, xs->rank, "attribute axis", &out->axis));
  int64_t n = xs->dims[out->axis];
  if (n >= 0 && ss->dims[0] >= 0 && ss->dims[0] != n) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 1 (%s) has %lld elements, want %lld (dim %d of "
                       "x %s)",
                       sname, (long long)ss->dims[0], (long long)n, out->axis,
                       wm_shape_format(xs, b2, sizeof(b2)));
  }
  out->gran = GRAN_AXIS;
  return NULL;
}

// Maps element indices of x to indices of its scale and zero point.
typedef struct qindex {
  gran_t gran;   // granularity
  size_t inner;  // elements after the axis
  size_t dim;    // size of the axis
  size_t block;  // axis indices per scale (BLOCK)
  size_t nb;     // scales along the axis (BLOCK)
} qindex_t;

static void qindex_init(const qlayout_t *l, const wm_shape_t *x, qindex_t *q) {
  memset(q, 0, sizeof(*q));
  q->gran = l->gran;
  if (l->gran != GRAN_AXIS && l->gran != GRAN_BLOCK) {
    return;
  }
  q->inner = 1;
  for (int32_t d = l->axis + 1; d < x->rank; d++) {
    q->inner *= (size_t)x->dims[d];
  }
  q->dim = (size_t)x->dims[l->axis];
  q->block = l->gran == GRAN_BLOCK ? (size_t)l->block : 1;
  q->nb = q->dim / q->block + (q->dim % q->block != 0);
}

// Index of the scale of element |i| (x is not empty).
static size_t qindex_of(const qindex_t *q, size_t i) {
  if (q->gran == GRAN_AXIS) {
    return (i / q->inner) % q->dim;
  }
  if (q->gran == GRAN_BLOCK) {
    size_t outer = i / (q->inner * q->dim);
    size_t a = (i / q->inner) % q->dim;
    return (outer * q->nb + a / q->block) * q->inner + i % q->inner;
  }
  return 0;
}

// The dtype QuantizeLinear produces (UNDEFINED when not yet known).
static wm_status_t quant_out_dtype(const wm_op_ctx_t *ctx, wm_dtype_t *out) {
  uint32_t qmask = qtypes(ctx->opset);
  *out = WM_DTYPE_UNDEFINED;
  WM_RETURN_IF_ERROR(check_dtype(ctx, 2, "y_zero_point", qmask));
  wm_dtype_t zd = wm_op_in_dtype(ctx, 2);
  int64_t od = 0;
  if (ctx->opset >= 21) {
    WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "output_dtype", 0, &od));
  }
  if (od != 0) {
    char buf[160];
    if (od < 0 || od >= WM_DTYPE_COUNT || !((qmask >> od) & 1u)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute output_dtype is %lld, want %s",
                         (long long)od, mask_names(qmask, buf, sizeof(buf)));
    }
    if (zd != WM_DTYPE_UNDEFINED && zd != (wm_dtype_t)od) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute output_dtype is %s but input 2 "
                         "(y_zero_point) has dtype %s",
                         wm_dtype_name((wm_dtype_t)od), wm_dtype_name(zd));
    }
    *out = (wm_dtype_t)od;
    return NULL;
  }
  *out = zd != WM_DTYPE_UNDEFINED  ? zd
         : wm_op_has_input(ctx, 2) ? WM_DTYPE_UNDEFINED
                                   : WM_DTYPE_UINT8;
  return NULL;
}

static wm_status_t quant_infer(wm_op_ctx_t *ctx) {
  uint32_t xmask = WM_T(FLOAT) | WM_T(INT32);
  uint32_t smask = WM_T(FLOAT);
  if (ctx->opset >= 19) {
    xmask |= WM_T(FLOAT16) | WM_T(BFLOAT16);
    smask = T_SCALE;
  }
  WM_RETURN_IF_ERROR(check_dtype(ctx, 0, "x", xmask));
  WM_RETURN_IF_ERROR(check_dtype(ctx, 1, "y_scale", smask));
  wm_dtype_t dt = WM_DTYPE_UNDEFINED;
  WM_RETURN_IF_ERROR(quant_out_dtype(ctx, &dt));
  qlayout_t l;
  WM_RETURN_IF_ERROR(qdq_layout(ctx, "y_scale", "y_zero_point", &l));
  wm_op_set_out(ctx, 0, dt, wm_op_in_shape(ctx, 0));
  return NULL;
}

static wm_status_t quant_run(wm_op_ctx_t *ctx) {
  qlayout_t l;
  WM_RETURN_IF_ERROR(qdq_layout(ctx, "y_scale", "y_zero_point", &l));
  const wm_tensor_t *x = ctx->in[0], *s = ctx->in[1];
  const wm_tensor_t *z = wm_op_has_input(ctx, 2) ? ctx->in[2] : NULL;
  wm_tensor_t *y = ctx->out[0];
  qindex_t q;
  qindex_init(&l, &x->shape, &q);
  wm_dtype_t prec = div_precision(x->dtype, s->dtype);
  double lo, hi;
  qrange(y->dtype, &lo, &hi);
  int64_t saturate = 1;
  if (ctx->opset >= 19) {
    WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "saturate", 1, &saturate));
  }
  bool mini = wm_dtype_is_minifloat(y->dtype);
  for (size_t i = 0; i < x->count; i++) {
    size_t k = qindex_of(&q, i);
    double v =
        round_to(prec, qdiv(wm_tensor_get_f64(x, i), wm_tensor_get_f64(s, k)));
    double zp = z ? wm_tensor_get_f64(z, k) : 0.0;
    if (mini) {
      // Float targets take x / scale converted like Cast (the float8
      // zero point must be 0; FLOAT4E2M1 adds it, as the reference does).
      double w = y->dtype == WM_DTYPE_FLOAT4E2M1 ? v + zp : v;
      ((uint8_t *)y->data)[i] =
          wm_f64_to_minifloat(y->dtype, w, saturate != 0, WM_ROUND_UP);
      continue;
    }
    wm_tensor_set_i64(y, i, quantize_one(v, zp, lo, hi));
  }
  return NULL;
}

// Divide, round and add the zero point per element.
static void quant_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  out->flops = 3.0 * (double)wm_op_out_numel(ctx);
}

static wm_status_t dequant_infer(wm_op_ctx_t *ctx) {
  uint32_t xmask = qtypes(ctx->opset) | WM_T(INT32);
  WM_RETURN_IF_ERROR(check_dtype(ctx, 0, "x", xmask));
  WM_RETURN_IF_ERROR(
      check_dtype(ctx, 1, "x_scale", ctx->opset >= 19 ? T_SCALE : WM_T(FLOAT)));
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, 2, "x_zero_point", 0));
  wm_dtype_t dt = WM_DTYPE_FLOAT;
  if (ctx->opset >= 19) {
    dt = wm_op_in_dtype(ctx, 1);
  }
  if (ctx->opset >= 23) {
    int64_t od = 0;
    WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "output_dtype", 0, &od));
    if (od != 0) {
      char buf[160];
      if (od < 0 || od >= WM_DTYPE_COUNT || !((T_SCALE >> od) & 1u)) {
        return WM_OP_ERROR(
            ctx, INVALID_ARGUMENT, "attribute output_dtype is %lld, want %s",
            (long long)od, mask_names(T_SCALE, buf, sizeof(buf)));
      }
      dt = (wm_dtype_t)od;
    }
  }
  qlayout_t l;
  WM_RETURN_IF_ERROR(qdq_layout(ctx, "x_scale", "x_zero_point", &l));
  wm_op_set_out(ctx, 0, dt, wm_op_in_shape(ctx, 0));
  return NULL;
}

static wm_status_t dequant_run(wm_op_ctx_t *ctx) {
  qlayout_t l;
  WM_RETURN_IF_ERROR(qdq_layout(ctx, "x_scale", "x_zero_point", &l));
  const wm_tensor_t *x = ctx->in[0], *s = ctx->in[1];
  const wm_tensor_t *z = wm_op_has_input(ctx, 2) ? ctx->in[2] : NULL;
  wm_tensor_t *y = ctx->out[0];
  qindex_t q;
  qindex_init(&l, &x->shape, &q);
  for (size_t i = 0; i < x->count; i++) {
    size_t k = qindex_of(&q, i);
    // (float32(x) - float32(zp)) in float32, times the scale: the product
    // of two floats is exact in double, so storing rounds once.
    double d = (double)(float)wm_tensor_get_f64(x, i);
    if (z) {
      d = round_to(WM_DTYPE_FLOAT, d - (double)(float)wm_tensor_get_f64(z, k));
    }
    wm_tensor_set_f64(y, i, d * wm_tensor_get_f64(s, k));
  }
  return NULL;
}

// Subtract the zero point and multiply per element.
static void dequant_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  out->flops = 2.0 * (double)wm_op_out_numel(ctx);
}

// ---------------------------------------------------- DynamicQuantizeLinear

static wm_status_t dynq_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(check_dtype(ctx, 0, "x", WM_T(FLOAT)));
  wm_shape_t scalar = {0, {0}};
  wm_op_set_out(ctx, 0, WM_DTYPE_UINT8, wm_op_in_shape(ctx, 0));
  wm_op_set_out(ctx, 1, WM_DTYPE_FLOAT, &scalar);
  wm_op_set_out(ctx, 2, WM_DTYPE_UINT8, &scalar);
  return NULL;
}

// Quantizes x to uint8 over [min(0, min x), max(0, max x)] in float32
// arithmetic, like the ONNX reference; NaNs are ignored by the range.
static wm_status_t dynq_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *x = ctx->in[0];
  float mn = 0.0f, mx = 0.0f;
  for (size_t i = 0; i < x->count; i++) {
    float v = (float)wm_tensor_get_f64(x, i);
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
  }
  float range = mx - mn;
  float scale = range / 255.0f;
  double zp = 0.0;
  if (scale > 0.0f) {
    float zf = 0.0f - mn / scale;
    zp = quantize_one(zf, 0.0, 0.0, 255.0);
  }
  for (size_t i = 0; i < x->count; i++) {
    double v = round_to(WM_DTYPE_FLOAT,
                        qdiv((double)(float)wm_tensor_get_f64(x, i), scale));
    if (ctx->out[0]) {
      wm_tensor_set_i64(ctx->out[0], i, quantize_one(v, zp, 0.0, 255.0));
    }
  }
  if (wm_op_has_output(ctx, 1) && ctx->out[1]) {
    wm_tensor_set_f64(ctx->out[1], 0, scale);
  }
  if (wm_op_has_output(ctx, 2) && ctx->out[2]) {
    wm_tensor_set_i64(ctx->out[2], 0, (int64_t)zp);
  }
  return NULL;
}

// Min and max, then divide, round and add per element.
static void dynq_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  size_t n;
  if (wm_shape_numel(wm_op_in_shape(ctx, 0), &n)) {
    out->flops = 5.0 * (double)n;
  }
}

// ------------------------------------------------- the float counterparts

// The node seen as its float counterpart (Conv or MatMul) over two of its
// inputs, so the counterpart's shape rule, kernel and cost serve it. The
// context points into the struct: do not move it after proxy_init.
typedef struct proxy {
  const wm_op_def_t *def;    // Conv or MatMul
  wm_node_t node;            // the node with only the two inputs
  int32_t ids[2];            // value ids of those inputs
  wm_type_t in_types[2];     // their types, dtype replaced
  const wm_tensor_t *in[2];  // their values, set by the caller
  wm_type_t out_type;        // the type the counterpart infers
  wm_tensor_t *out;          // the tensor it fills (borrowed)
  wm_op_ctx_t ctx;           // the counterpart's view
} proxy_t;

// Views inputs |a| and |b| of the node as inputs 0 and 1 of |op|, both of
// |dtype|; then runs the counterpart's shape rule.
static wm_status_t proxy_init(const wm_op_ctx_t *ctx, const char *op, int32_t a,
                              int32_t b, wm_dtype_t dtype, proxy_t *p) {
  memset(p, 0, sizeof(*p));
  p->def = wm_ops_find("", op, ctx->opset);
  if (!p->def || !p->def->infer || !p->def->run) {
    return WM_OP_ERROR(ctx, INTERNAL,
                       "operator %s is not registered at "
                       "opset %lld",
                       op, (long long)ctx->opset);
  }
  p->node = *ctx->node;
  p->ids[0] = ctx->node->inputs[a];
  p->ids[1] = ctx->node->inputs[b];
  p->node.inputs = p->ids;
  p->node.input_count = 2;
  p->node.output_count = 1;
  p->in_types[0] = ctx->in_types[a];
  p->in_types[1] = ctx->in_types[b];
  p->in_types[0].dtype = p->in_types[1].dtype = dtype;
  p->out_type = wm_type_unknown();
  p->ctx.graph = ctx->graph;
  p->ctx.node = &p->node;
  p->ctx.label = ctx->label;
  p->ctx.opset = ctx->opset;
  p->ctx.n_in = 2;
  p->ctx.n_out = 1;
  p->ctx.in_types = p->in_types;
  p->ctx.in = p->in;
  p->ctx.out_types = &p->out_type;
  p->ctx.out = &p->out;
  return p->def->infer(&p->ctx);
}

// Cost of the counterpart plus |per_out| operations per output element.
static void proxy_cost(const wm_op_ctx_t *ctx, const char *op, int32_t a,
                       int32_t b, double per_out, wm_op_cost_t *out) {
  proxy_t p;
  wm_status_t s = proxy_init(ctx, op, a, b, WM_DTYPE_DOUBLE, &p);
  if (s) {
    wm_status_free(s);
    return;
  }
  wm_op_cost(p.def, &p.ctx, out);
  size_t n;
  if (wm_shape_numel(&p.out_type.shape, &n)) {
    out->flops += per_out * (double)n;
  }
}

// Requires input |i| (the weight of a convolution), when its rank is known,
// to have rank 3 to WM_MAX_RANK.
static wm_status_t check_conv_weight(const wm_op_ctx_t *ctx, int32_t i) {
  int32_t r = wm_op_in_shape(ctx, i)->rank;
  if (r >= 0 && (r < 3 || r > WM_MAX_RANK)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (w) has rank %d, want 3 to %d", i, r,
                       WM_MAX_RANK);
  }
  return NULL;
}

// Requires input |i| (a per-output-channel value of a convolution whose
// weight is input |wi|), when known, to be a scalar or hold M values.
static wm_status_t check_per_channel(const wm_op_ctx_t *ctx, int32_t i,
                                     const char *what, int32_t wi) {
  const wm_shape_t *s = wm_op_in_shape(ctx, i);
  const wm_shape_t *ws = wm_op_in_shape(ctx, wi);
  if (s->rank < 0 || is_single(s)) {
    return NULL;
  }
  int64_t m = ws->rank >= 1 ? ws->dims[0] : -1;
  if (s->rank == 1 && (m < 0 || s->dims[0] < 0 || s->dims[0] == m)) {
    return NULL;
  }
  char b1[160], b2[160];
  return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                     "input %d (%s) has shape %s, want a scalar or one value "
                     "per output channel of w %s",
                     i, what, wm_shape_format(s, b1, sizeof(b1)),
                     wm_shape_format(ws, b2, sizeof(b2)));
}

// Copies input |i| (integers) into a new |dtype| tensor minus the zero
// point input |zi| (omitted: 0) taken per block of |inner| elements from
// |nz| values (nz 1: per tensor). Strides |zstr| over the shape of input
// |i| are used instead when not NULL.
static wm_status_t sub_zero_point(const wm_op_ctx_t *ctx, int32_t i, int32_t zi,
                                  size_t inner, const int64_t *zstr,
                                  wm_dtype_t dtype, wm_tensor_t **out) {
  const wm_tensor_t *x = ctx->in[i];
  const wm_tensor_t *z = wm_op_has_input(ctx, zi) ? ctx->in[zi] : NULL;
  WM_RETURN_IF_ERROR(make_tensor(ctx, dtype, &x->shape, out));
  size_t nz = z ? z->count : 1;
  for (size_t k = 0; k < x->count; k++) {
    int64_t zp = 0;
    if (z && zstr) {
      zp = wm_tensor_get_i64(z, wm_broadcast_offset(&x->shape, zstr, k));
    } else if (z) {
      zp = wm_tensor_get_i64(z, nz == 1 ? 0 : (k / inner) % nz);
    }
    int64_t v = wm_tensor_get_i64(x, k) - zp;
    if (dtype == WM_DTYPE_DOUBLE) {
      wm_tensor_set_f64(*out, k, (double)v);
    } else {
      wm_tensor_set_i64(*out, k, v);
    }
  }
  return NULL;
}

// ---------------------------------------------- ConvInteger, QLinearConv

// Shape rule shared by the two: x is input 0, w input |wi|, x's zero
// point |xz|, w's zero point |wz|.
static wm_status_t qconv_check(wm_op_ctx_t *ctx, int32_t wi, int32_t xz,
                               int32_t wz, proxy_t *p) {
  WM_RETURN_IF_ERROR(check_dtype(ctx, 0, "x", T_Q8));
  WM_RETURN_IF_ERROR(check_dtype(ctx, wi, "w", T_Q8));
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, xz, "x_zero_point", 0));
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, wz, "w_zero_point", wi));
  WM_RETURN_IF_ERROR(check_single(ctx, xz, "x_zero_point"));
  WM_RETURN_IF_ERROR(check_per_channel(ctx, wz, "w_zero_point", wi));
  WM_RETURN_IF_ERROR(check_conv_weight(ctx, wi));
  return proxy_init(ctx, "Conv", 0, wi, WM_DTYPE_DOUBLE, p);
}

// Runs the Conv over x and w (input |wi|) minus their zero points into
// |y| (a DOUBLE or INT32 tensor of the proxy's output shape).
static wm_status_t qconv_accumulate(wm_op_ctx_t *ctx, proxy_t *p, int32_t wi,
                                    int32_t xz, int32_t wz, wm_tensor_t *y) {
  const wm_tensor_t *w = ctx->in[wi];
  size_t per_m = w->shape.dims[0] > 0 ? w->count / (size_t)w->shape.dims[0] : 1;
  wm_tensor_t *xd = NULL, *wd = NULL;
  wm_status_t s = sub_zero_point(ctx, 0, xz, 1, NULL, WM_DTYPE_DOUBLE, &xd);
  if (!s) {
    s = sub_zero_point(ctx, wi, wz, per_m, NULL, WM_DTYPE_DOUBLE, &wd);
  }
  if (!s) {
    p->in[0] = xd;
    p->in[1] = wd;
    p->out = y;
    s = p->def->run(&p->ctx);
  }
  wm_tensor_destroy(xd);
  wm_tensor_destroy(wd);
  return s;
}

static wm_status_t convint_infer(wm_op_ctx_t *ctx) {
  proxy_t p;
  WM_RETURN_IF_ERROR(qconv_check(ctx, 1, 2, 3, &p));
  wm_op_set_out(ctx, 0, WM_DTYPE_INT32, &p.out_type.shape);
  return NULL;
}

// Conv accumulates exactly in double; storing wraps to int32 like an
// int32 accumulator.
static wm_status_t convint_run(wm_op_ctx_t *ctx) {
  proxy_t p;
  WM_RETURN_IF_ERROR(qconv_check(ctx, 1, 2, 3, &p));
  return qconv_accumulate(ctx, &p, 1, 2, 3, ctx->out[0]);
}

static void convint_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  proxy_cost(ctx, "Conv", 0, 1, 0.0, out);
}

enum {
  QC_X = 0,
  QC_XS = 1,
  QC_XZ = 2,
  QC_W = 3,
  QC_WS = 4,
  QC_WZ = 5,
  QC_YS = 6,
  QC_YZ = 7,
  QC_B = 8,
};

// Output dtype of the QLinear ops: y_zero_point's, else that of input 0.
static wm_dtype_t qlinear_out_dtype(const wm_op_ctx_t *ctx, int32_t yz) {
  return wm_op_has_input(ctx, yz) ? wm_op_in_dtype(ctx, yz)
                                  : wm_op_in_dtype(ctx, 0);
}

static wm_status_t qlconv_check(wm_op_ctx_t *ctx, proxy_t *p) {
  WM_RETURN_IF_ERROR(check_dtype(ctx, QC_XS, "x_scale", T_SCALE));
  WM_RETURN_IF_ERROR(check_dtype(ctx, QC_WS, "w_scale", T_SCALE));
  WM_RETURN_IF_ERROR(check_dtype(ctx, QC_YS, "y_scale", T_SCALE));
  WM_RETURN_IF_ERROR(check_dtype(ctx, QC_YZ, "y_zero_point", T_Q8));
  WM_RETURN_IF_ERROR(check_dtype(ctx, QC_B, "B", WM_T(INT32)));
  WM_RETURN_IF_ERROR(check_single(ctx, QC_XS, "x_scale"));
  WM_RETURN_IF_ERROR(check_single(ctx, QC_YS, "y_scale"));
  WM_RETURN_IF_ERROR(check_single(ctx, QC_YZ, "y_zero_point"));
  WM_RETURN_IF_ERROR(check_per_channel(ctx, QC_WS, "w_scale", QC_W));
  WM_RETURN_IF_ERROR(qconv_check(ctx, QC_W, QC_XZ, QC_WZ, p));
  const wm_shape_t *bs = wm_op_in_shape(ctx, QC_B);
  const wm_shape_t *ws = wm_op_in_shape(ctx, QC_W);
  int64_t m = ws->rank >= 1 ? ws->dims[0] : -1;
  if (bs->rank >= 0 &&
      (bs->rank != 1 || (m >= 0 && bs->dims[0] >= 0 && bs->dims[0] != m))) {
    char b1[160];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 8 (B) has shape %s, want [%lld]",
                       wm_shape_format(bs, b1, sizeof(b1)), (long long)m);
  }
  return NULL;
}

static wm_status_t qlconv_infer(wm_op_ctx_t *ctx) {
  proxy_t p;
  WM_RETURN_IF_ERROR(qlconv_check(ctx, &p));
  wm_op_set_out(ctx, 0, qlinear_out_dtype(ctx, QC_YZ), &p.out_type.shape);
  return NULL;
}

// Value |k| of optional input |i| as a double (|def| when omitted).
static double in_f64(const wm_op_ctx_t *ctx, int32_t i, size_t k, double def) {
  if (!wm_op_has_input(ctx, i) || !ctx->in[i]) {
    return def;
  }
  const wm_tensor_t *t = ctx->in[i];
  return wm_tensor_get_f64(t, t->count == 1 ? 0 : k);
}

// The requantization multiplier a_scale * b_scale / y_scale in float32.
static double requant_mult(double as, double bs, double ys) {
  return round_to(WM_DTYPE_FLOAT, qdiv(round_to(WM_DTYPE_FLOAT, as * bs), ys));
}

static wm_status_t qlconv_run(wm_op_ctx_t *ctx) {
  proxy_t p;
  WM_RETURN_IF_ERROR(qlconv_check(ctx, &p));
  wm_tensor_t *acc;
  WM_RETURN_IF_ERROR(
      make_tensor(ctx, WM_DTYPE_DOUBLE, &p.out_type.shape, &acc));
  wm_status_t s = qconv_accumulate(ctx, &p, QC_W, QC_XZ, QC_WZ, acc);
  if (s) {
    wm_tensor_destroy(acc);
    return s;
  }
  wm_tensor_t *y = ctx->out[0];
  size_t m = (size_t)acc->shape.dims[1];
  size_t sp = 1;
  for (int32_t d = 2; d < acc->shape.rank; d++) {
    sp *= (size_t)acc->shape.dims[d];
  }
  double lo, hi;
  qrange(y->dtype, &lo, &hi);
  double xs = in_f64(ctx, QC_XS, 0, 1.0), ys = in_f64(ctx, QC_YS, 0, 1.0);
  double yz = in_f64(ctx, QC_YZ, 0, 0.0);
  for (size_t i = 0; i < acc->count; i++) {
    size_t oc = (i / sp) % m;
    double mult = requant_mult(xs, in_f64(ctx, QC_WS, oc, 1.0), ys);
    double a = wm_tensor_get_f64(acc, i) + in_f64(ctx, QC_B, oc, 0.0);
    wm_tensor_set_i64(y, i, quantize_one(a * mult, yz, lo, hi));
  }
  wm_tensor_destroy(acc);
  return NULL;
}

// Conv's work plus the bias and the requantization (scale, add zero point).
static void qlconv_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  proxy_cost(ctx, "Conv", QC_X, QC_W,
             2.0 + (wm_op_has_input(ctx, QC_B) ? 1.0 : 0.0), out);
}

// ------------------------------------------ MatMulInteger, QLinearMatMul

// Resolves the shape of a zero point or scale (input |pi|) of matmul
// operand |oi| into *out: one element becomes a scalar, a vector holds one
// value per row of A ([M] -> [M, 1]) or per column of B ([N] -> [1, N]),
// and an N-D tensor must broadcast to the operand with a 1 along K.
// *out_known is false when a shape is unknown.
static wm_status_t mm_param(const wm_op_ctx_t *ctx, int32_t pi,
                            const char *what, int32_t oi, bool rows,
                            wm_shape_t *out, bool *out_known) {
  const wm_shape_t *ps = wm_op_in_shape(ctx, pi);
  const wm_shape_t *os = wm_op_in_shape(ctx, oi);
  *out_known = false;
  memset(out, 0, sizeof(*out));
  if (!wm_op_has_input(ctx, pi)) {
    *out_known = true;
    return NULL;
  }
  if (ps->rank < 0) {
    return NULL;
  }
  if (is_one(ps)) {
    *out_known = true;
    return NULL;
  }
  if (os->rank < 0) {
    return NULL;
  }
  char b1[160], b2[160];
  const char *dir = rows ? "row of" : "column of";
  if (os->rank < 2 && !is_single(ps)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (%s) has shape %s, want a scalar for the 1-D "
                       "input %d",
                       pi, what, wm_shape_format(ps, b1, sizeof(b1)), oi);
  }
  if (os->rank < 2) {
    return NULL;  // one element once known
  }
  wm_shape_t s = *ps;
  if (s.rank == 1) {
    s.rank = 2;
    s.dims[rows ? 0 : 1] = ps->dims[0];
    s.dims[rows ? 1 : 0] = 1;
  }
  bool ok = s.rank <= os->rank;
  int32_t lead = os->rank - s.rank;
  for (int32_t d = 0; ok && d < s.rank; d++) {
    int64_t pd = s.dims[d], od = os->dims[d + lead];
    bool k_dim = d + lead == os->rank - (rows ? 1 : 2);
    ok = pd < 0 || (k_dim ? pd == 1 : (pd == 1 || od < 0 || pd == od));
  }
  if (!ok) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (%s) has shape %s, want a scalar or one "
                       "value per %s input %d %s",
                       pi, what, wm_shape_format(ps, b1, sizeof(b1)), dir, oi,
                       wm_shape_format(os, b2, sizeof(b2)));
  }
  *out = s;
  *out_known = true;
  return NULL;
}

// Shape rule shared by MatMulInteger and QLinearMatMul: a is input 0,
// b input |bi|, with zero points |az| and |bz|.
static wm_status_t qmm_check(wm_op_ctx_t *ctx, int32_t bi, int32_t az,
                             int32_t bz, proxy_t *p) {
  WM_RETURN_IF_ERROR(check_dtype(ctx, 0, "a", T_Q8));
  WM_RETURN_IF_ERROR(check_dtype(ctx, bi, "b", T_Q8));
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, az, "a_zero_point", 0));
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, bz, "b_zero_point", bi));
  int32_t r = wm_op_in_shape(ctx, bi)->rank;
  if (r == 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (b) is a scalar (rank 0), want rank >= 1", bi);
  }
  wm_shape_t s;
  bool known;
  WM_RETURN_IF_ERROR(mm_param(ctx, az, "a_zero_point", 0, true, &s, &known));
  WM_RETURN_IF_ERROR(mm_param(ctx, bz, "b_zero_point", bi, false, &s, &known));
  return proxy_init(ctx, "MatMul", 0, bi, WM_DTYPE_INT32, p);
}

// Runs MatMul over a and b (input |bi|) minus their zero points into |y|
// (an integer tensor of the proxy's output shape).
static wm_status_t qmm_accumulate(wm_op_ctx_t *ctx, proxy_t *p, int32_t bi,
                                  int32_t az, int32_t bz, wm_tensor_t *y) {
  wm_shape_t as, bs;
  bool known;
  int64_t astr[WM_MAX_RANK], bstr[WM_MAX_RANK];
  WM_RETURN_IF_ERROR(mm_param(ctx, az, "a_zero_point", 0, true, &as, &known));
  WM_RETURN_IF_ERROR(mm_param(ctx, bz, "b_zero_point", bi, false, &bs, &known));
  wm_broadcast_strides(&as, &ctx->in[0]->shape, astr);
  wm_broadcast_strides(&bs, &ctx->in[bi]->shape, bstr);
  wm_tensor_t *ad = NULL, *bd = NULL;
  wm_status_t s = sub_zero_point(ctx, 0, az, 1, astr, WM_DTYPE_INT32, &ad);
  if (!s) {
    s = sub_zero_point(ctx, bi, bz, 1, bstr, WM_DTYPE_INT32, &bd);
  }
  if (!s) {
    p->in[0] = ad;
    p->in[1] = bd;
    p->out = y;
    s = p->def->run(&p->ctx);
  }
  wm_tensor_destroy(ad);
  wm_tensor_destroy(bd);
  return s;
}

static wm_status_t mmint_infer(wm_op_ctx_t *ctx) {
  proxy_t p;
  WM_RETURN_IF_ERROR(qmm_check(ctx, 1, 2, 3, &p));
  wm_op_set_out(ctx, 0, WM_DTYPE_INT32, &p.out_type.shape);
  return NULL;
}

// MatMul accumulates in wrapping int64; storing wraps to int32.
static wm_status_t mmint_run(wm_op_ctx_t *ctx) {
  proxy_t p;
  WM_RETURN_IF_ERROR(qmm_check(ctx, 1, 2, 3, &p));
  return qmm_accumulate(ctx, &p, 1, 2, 3, ctx->out[0]);
}

static void mmint_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  proxy_cost(ctx, "MatMul", 0, 1, 0.0, out);
}

enum {
  QM_A = 0,
  QM_AS = 1,
  QM_AZ = 2,
  QM_B = 3,
  QM_BS = 4,
  QM_BZ = 5,
  QM_YS = 6,
  QM_YZ = 7,
};

static wm_status_t qlmm_check(wm_op_ctx_t *ctx, proxy_t *p) {
  WM_RETURN_IF_ERROR(check_dtype(ctx, QM_AS, "a_scale", T_SCALE));
  WM_RETURN_IF_ERROR(check_dtype(ctx, QM_BS, "b_scale", T_SCALE));
  WM_RETURN_IF_ERROR(check_dtype(ctx, QM_YS, "y_scale", T_SCALE));
  WM_RETURN_IF_ERROR(check_dtype(ctx, QM_YZ, "y_zero_point", T_Q8));
  wm_shape_t s;
  bool known;
  WM_RETURN_IF_ERROR(mm_param(ctx, QM_AS, "a_scale", QM_A, true, &s, &known));
  WM_RETURN_IF_ERROR(mm_param(ctx, QM_BS, "b_scale", QM_B, false, &s, &known));
  WM_RETURN_IF_ERROR(mm_param(ctx, QM_YS, "y_scale", QM_A, true, &s, &known));
  WM_RETURN_IF_ERROR(
      mm_param(ctx, QM_YZ, "y_zero_point", QM_A, true, &s, &known));
  return qmm_check(ctx, QM_B, QM_AZ, QM_BZ, p);
}

static wm_status_t qlmm_infer(wm_op_ctx_t *ctx) {
  proxy_t p;
  WM_RETURN_IF_ERROR(qlmm_check(ctx, &p));
  wm_op_set_out(ctx, 0, qlinear_out_dtype(ctx, QM_YZ), &p.out_type.shape);
  return NULL;
}

// Strides of input |pi| (resolved by mm_param) over the unsqueezed output
// shape |full| (batch, M, N); all zero when omitted.
static wm_status_t qlmm_strides(const wm_op_ctx_t *ctx, int32_t pi,
                                const char *what, int32_t oi, bool rows,
                                const wm_shape_t *full, int64_t *strides) {
  wm_shape_t s;
  bool known;
  WM_RETURN_IF_ERROR(mm_param(ctx, pi, what, oi, rows, &s, &known));
  wm_broadcast_strides(&s, full, strides);
  return NULL;
}

// Value of input |pi| at output element |i|, or |def| when omitted.
static double qlmm_param(const wm_op_ctx_t *ctx, int32_t pi,
                         const wm_shape_t *full, const int64_t *strides,
                         size_t i, double def) {
  if (!wm_op_has_input(ctx, pi) || !ctx->in[pi]) {
    return def;
  }
  const wm_tensor_t *t = ctx->in[pi];
  if (t->count == 1) {
    return wm_tensor_get_f64(t, 0);
  }
  return wm_tensor_get_f64(t, wm_broadcast_offset(full, strides, i));
}

static wm_status_t qlmm_run(wm_op_ctx_t *ctx) {
  proxy_t p;
  WM_RETURN_IF_ERROR(qlmm_check(ctx, &p));
  // The output with the dims MatMul squeezes for 1-D operands restored.
  const wm_shape_t *sa = &ctx->in[QM_A]->shape, *sb = &ctx->in[QM_B]->shape;
  const wm_shape_t *ys = &p.out_type.shape;
  wm_shape_t full = *ys;
  full.rank = ys->rank - (sa->rank >= 2) - (sb->rank >= 2);
  full.dims[full.rank++] = sa->rank >= 2 ? sa->dims[sa->rank - 2] : 1;
  full.dims[full.rank++] = sb->rank >= 2 ? sb->dims[sb->rank - 1] : 1;
  int64_t str_as[WM_MAX_RANK], str_bs[WM_MAX_RANK];
  int64_t str_ys[WM_MAX_RANK], str_yz[WM_MAX_RANK];
  WM_RETURN_IF_ERROR(
      qlmm_strides(ctx, QM_AS, "a_scale", QM_A, true, &full, str_as));
  WM_RETURN_IF_ERROR(
      qlmm_strides(ctx, QM_BS, "b_scale", QM_B, false, &full, str_bs));
  WM_RETURN_IF_ERROR(
      qlmm_strides(ctx, QM_YS, "y_scale", QM_A, true, &full, str_ys));
  WM_RETURN_IF_ERROR(
      qlmm_strides(ctx, QM_YZ, "y_zero_point", QM_A, true, &full, str_yz));
  wm_tensor_t *acc;
  WM_RETURN_IF_ERROR(make_tensor(ctx, WM_DTYPE_INT64, ys, &acc));
  wm_status_t s = qmm_accumulate(ctx, &p, QM_B, QM_AZ, QM_BZ, acc);
  if (s) {
    wm_tensor_destroy(acc);
    return s;
  }
  wm_tensor_t *y = ctx->out[0];
  double lo, hi;
  qrange(y->dtype, &lo, &hi);
  for (size_t i = 0; i < acc->count; i++) {
    double mult = requant_mult(qlmm_param(ctx, QM_AS, &full, str_as, i, 1.0),
                               qlmm_param(ctx, QM_BS, &full, str_bs, i, 1.0),
                               qlmm_param(ctx, QM_YS, &full, str_ys, i, 1.0));
    double yz = qlmm_param(ctx, QM_YZ, &full, str_yz, i, 0.0);
    double a = (double)wm_tensor_get_i64(acc, i);
    wm_tensor_set_i64(y, i, quantize_one(a * mult, yz, lo, hi));
  }
  wm_tensor_destroy(acc);
  return NULL;
}

// MatMul's work plus the requantization (scale, add zero point).
static void qlmm_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  proxy_cost(ctx, "MatMul", QM_A, QM_B, 2.0, out);
}

const wm_op_def_t wm_ops_quant[] = {
    {"QuantizeLinear", "", 10, 2, 3, 1, 1, WM_T(FLOAT) | WM_T(INT32),
     quant_infer, quant_run, quant_cost},
    {"QuantizeLinear", "", 19, 2, 3, 1, 1,
     WM_T(FLOAT) | WM_T(FLOAT16) | WM_T(BFLOAT16) | WM_T(INT32), quant_infer,
     quant_run, quant_cost},
    {"DequantizeLinear", "", 10, 2, 3, 1, 1, T_Q8 | WM_T(INT32), dequant_infer,
     dequant_run, dequant_cost},
    {"DequantizeLinear", "", 19, 2, 3, 1, 1, T_Q8 | T_F8 | WM_T(INT32),
     dequant_infer, dequant_run, dequant_cost},
    {"DequantizeLinear", "", 21, 2, 3, 1, 1,
     T_Q8 | T_Q16 | T_F8 | WM_T(INT32) | WM_T(UINT4) | WM_T(INT4) |
         WM_T(FLOAT4E2M1) | WM_T(UINT2) | WM_T(INT2),
     dequant_infer, dequant_run, dequant_cost},
    {"DynamicQuantizeLinear", "", 11, 1, 1, 1, 3, WM_T(FLOAT), dynq_infer,
     dynq_run, dynq_cost},
    {"QLinearConv", "", 10, 8, 9, 1, 1, T_Q8, qlconv_infer, qlconv_run,
     qlconv_cost},
    {"QLinearMatMul", "", 10, 8, 8, 1, 1, T_Q8, qlmm_infer, qlmm_run,
     qlmm_cost},
    {"MatMulInteger", "", 10, 2, 4, 1, 1, T_Q8, mmint_infer, mmint_run,
     mmint_cost},
    {"ConvInteger", "", 10, 2, 4, 1, 1, T_Q8, convint_infer, convint_run,
     convint_cost},
    WM_OPS_END,
};
