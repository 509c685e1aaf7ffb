// Operators of the reduce family: the ten Reduce* operators (one shared,
// table-driven core; ReduceMax/ReduceMin also on bool since opset 20),
// ArgMax/ArgMin, TopK, and CumSum with CumProd (one kernel). Floating-point
// types accumulate in double; integer sums, products and extrema are
// exact in wrapping int64.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

// Wrapping integer arithmetic (signed overflow is undefined in C).
static int64_t wrap_add(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t wrap_mul(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}

static int64_t wrap_abs(int64_t a) {
  return a < 0 ? (int64_t)(0 - (uint64_t)a) : a;
}

// Orders elements |i| and |j| of |t|: negative, zero or positive. NaN
// compares above every number when |nan_big|, else below; NaNs are equal.
static int elem_cmp(const wm_tensor_t *t, size_t i, size_t j, bool nan_big) {
  if (wm_dtype_is_float(t->dtype)) {
    double a = wm_tensor_get_f64(t, i), b = wm_tensor_get_f64(t, j);
    bool na = isnan(a), nb = isnan(b);
    if (na || nb) {
      int c = (int)na - (int)nb;
      return nan_big ? c : -c;
    }
    return (a > b) - (a < b);
  }
  if (t->dtype == WM_DTYPE_UINT64) {
    uint64_t a = (uint64_t)wm_tensor_get_i64(t, i);
    uint64_t b = (uint64_t)wm_tensor_get_i64(t, j);
    return (a > b) - (a < b);
  }
  int64_t a = wm_tensor_get_i64(t, i), b = wm_tensor_get_i64(t, j);
  return (a > b) - (a < b);
}

// Smallest and largest values of an integer |dtype| as int64 (UINT64's
// maximum wraps to -1, which stores back as UINT64_MAX).
static int64_t int_lowest(wm_dtype_t dtype) {
  switch (dtype) {
    case WM_DTYPE_INT8:
      return INT8_MIN;
    case WM_DTYPE_INT16:
      return INT16_MIN;
    case WM_DTYPE_INT32:
      return INT32_MIN;
    case WM_DTYPE_INT64:
      return INT64_MIN;
    default:
      return 0;
  }
}

static int64_t int_highest(wm_dtype_t dtype) {
  switch (dtype) {
    case WM_DTYPE_INT8:
      return INT8_MAX;
    case WM_DTYPE_UINT8:
      return UINT8_MAX;
    case WM_DTYPE_INT16:
      return INT16_MAX;
    case WM_DTYPE_UINT16:
      return UINT16_MAX;
    case WM_DTYPE_INT32:
      return INT32_MAX;
    case WM_DTYPE_UINT32:
      return UINT32_MAX;
    case WM_DTYPE_UINT64:
      return -1;
    case WM_DTYPE_BOOL:
      return 1;
    default:
      return INT64_MAX;
  }
}

// Splits |shape| around |axis| into outer * n * inner elements.
static void split_axis(const wm_shape_t *shape, int32_t axis, size_t *outer,
                       size_t *n, size_t *inner) {
  *outer = 1;
  *inner = 1;
  for (int32_t d = 0; d < axis; d++) {
    *outer *= (size_t)shape->dims[d];
  }
  *n = (size_t)shape->dims[axis];
  for (int32_t d = axis + 1; d < shape->rank; d++) {
    *inner *= (size_t)shape->dims[d];
  }
}

// --------------------------------------------------------------- Reduce*

typedef enum reduce_kind {
  RK_SUM,
  RK_MEAN,
  RK_MAX,
  RK_MIN,
  RK_PROD,
  RK_L1,
  RK_L2,
  RK_LOG_SUM,
  RK_LOG_SUM_EXP,
  RK_SUM_SQUARE,
} reduce_kind_t;

// One Reduce* operator: what it computes and when axes became an input.
typedef struct reduce_op {
  const char *name;          // ONNX op_type
  reduce_kind_t kind;        // the reduction
  int32_t axes_input_since;  // opset where the axes attribute became input 1
  double empty;              // value over an empty set (floating types)
  int32_t transcend;         // transcendentals: 1 per output, 2 per input
} reduce_op_t;

static const reduce_op_t reduce_ops[] = {
    {"ReduceSum", RK_SUM, 13, 0.0, 0},
    {"ReduceMean", RK_MEAN, 18, 0.0, 0},
    {"ReduceMax", RK_MAX, 18, -INFINITY, 0},
    {"ReduceMin", RK_MIN, 18, INFINITY, 0},
    {"ReduceProd", RK_PROD, 18, 1.0, 0},
    {"ReduceL1", RK_L1, 18, 0.0, 0},
    {"ReduceL2", RK_L2, 18, 0.0, 1},
    {"ReduceLogSum", RK_LOG_SUM, 18, 0.0, 1},
    {"ReduceLogSumExp", RK_LOG_SUM_EXP, 18, 0.0, 2},
    {"ReduceSumSquare", RK_SUM_SQUARE, 18, 0.0, 0},
};
enum { REDUCE_OP_COUNT = sizeof(reduce_ops) / sizeof(reduce_ops[0]) };

static const reduce_op_t *reduce_op_of(const wm_op_ctx_t *ctx) {
  for (size_t i = 0; i < REDUCE_OP_COUNT; i++) {
    if (strcmp(ctx->node->op_type, reduce_ops[i].name) == 0) {
      return &reduce_ops[i];
    }
  }
  return NULL;
}

// Which dims a node reduces, resolved against the input shape.
typedef struct reduce_plan {
  bool rank_known;            // input rank known
  bool axes_known;            // the axes are known
  bool keepdims;              // keep reduced dims as 1
  bool reduced[WM_MAX_RANK];  // dim d is reduced (when axes_known)
  wm_shape_t out;             // output shape (rank -1 when unknown)
} reduce_plan_t;

// Finds the node's reduction (*out_op) and resolves |p| for it.
static wm_status_t reduce_plan(const wm_op_ctx_t *ctx,
                               const reduce_op_t **out_op, reduce_plan_t *p) {
  memset(p, 0, sizeof(*p));
  const reduce_op_t *op = reduce_op_of(ctx);
  *out_op = op;
  if (!op) {
    return WM_OP_ERROR(ctx, INTERNAL, "no reduction named %s",
                       ctx->node->op_type);
  }
  p->out.rank = -1;
  p->keepdims = wm_node_attr_int(ctx->node, "keepdims", 1) != 0;
  bool noop = wm_node_attr_int(ctx->node, "noop_with_empty_axes", 0) != 0;
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  p->rank_known = x->rank >= 0;

  int64_t *axes = NULL;
  size_t n_axes = 0;
  p->axes_known = true;
  if (ctx->opset >= op->axes_input_since) {
    if (wm_op_has_input(ctx, 1)) {
      WM_RETURN_IF_ERROR(
          wm_op_input_ints(ctx, 1, &axes, &n_axes, &p->axes_known));
      const wm_shape_t *as = wm_op_in_shape(ctx, 1);
      if (!p->axes_known && as->rank == 1 && as->dims[0] == 0) {
        p->axes_known = true;  // an empty axes tensor needs no value
      }
    }
  } else {
    const int64_t *attr = NULL;
    if (wm_node_attr_ints(ctx->node, "axes", &attr, &n_axes) && n_axes) {
      axes = wm_malloc(n_axes * sizeof(int64_t));
      if (!axes) {
        return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
      }
      memcpy(axes, attr, n_axes * sizeof(int64_t));
    }
  }
  if (!p->rank_known) {
    free(axes);
    return NULL;
  }
  if (!p->axes_known) {
    // Any dim may be reduced: the rank survives only with keepdims.
    if (p->keepdims) {
      p->out = *x;
      for (int32_t d = 0; d < x->rank; d++) {
        if (x->dims[d] != 1) {
          p->out.dims[d] = -1;
        }
      }
    }
    return NULL;
  }
  wm_status_t s = NULL;
  if (n_axes == 0) {
    for (int32_t d = 0; d < x->rank; d++) {
      p->reduced[d] = !noop;
    }
  }
  for (size_t i = 0; i < n_axes; i++) {
    int32_t a;
    s = wm_op_axis(ctx, axes[i], x->rank, "axis", &a);
    if (s) {
      goto done;
    }
    if (p->reduced[a]) {
      s = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                      "axis %lld (dim %d) is listed twice in axes",
                      (long long)axes[i], a);
      goto done;
    }
    p->reduced[a] = true;
  }
  p->out.rank = 0;
  for (int32_t d = 0; d < x->rank; d++) {
    if (!p->reduced[d]) {
      p->out.dims[p->out.rank++] = x->dims[d];
    } else if (p->keepdims) {
      p->out.dims[p->out.rank++] = 1;
    }
  }
done:
  free(axes);
  return s;
}

// Parameters: axes, the dims reduced in ascending order (every dim when
// none is listed, none with noop_with_empty_axes), and keepdims.
static wm_status_t reduce_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  const reduce_op_t *op;
  reduce_plan_t p;
  WM_RETURN_IF_ERROR(reduce_plan(ctx, &op, &p));
  out->pending = !p.rank_known || !p.axes_known;
  if (out->pending) {
    return NULL;
  }
  int64_t axes[WM_MAX_RANK];
  int32_t n = 0;
  for (int32_t d = 0; d < wm_op_in_shape(ctx, 0)->rank; d++) {
    if (p.reduced[d]) {
      axes[n++] = d;
    }
  }
  WM_RETURN_IF_ERROR(wm_op_param_ints(ctx, out, "axes", axes, n));
  return wm_op_param_int(ctx, out, "keepdims", p.keepdims);
}

static wm_status_t reduce_infer(wm_op_ctx_t *ctx) {
  const reduce_op_t *op;
  reduce_plan_t p;
  WM_RETURN_IF_ERROR(reduce_plan(ctx, &op, &p));
  wm_op_set_out(ctx, 0, wm_op_in_dtype(ctx, 0), &p.out);
  return NULL;
}

// Exact int64 path for the integer reductions that stay integers.
static void reduce_int(const reduce_op_t *op, const wm_tensor_t *x,
                       const wm_shape_t *xs, const int64_t *ostr, int64_t *acc,
                       size_t n_out, wm_tensor_t *y) {
  bool is_u64 = x->dtype == WM_DTYPE_UINT64;
  int64_t init = 0;
  switch (op->kind) {
    case RK_PROD:
      init = 1;
      break;
    case RK_MAX:
      init = int_lowest(x->dtype);
      break;
    case RK_MIN:
      init = int_highest(x->dtype);
      break;
    default:
      break;
  }
  for (size_t o = 0; o < n_out; o++) {
    acc[o] = init;
  }
  for (size_t i = 0; i < x->count; i++) {
    size_t o = wm_broadcast_offset(xs, ostr, i);
    int64_t v = wm_tensor_get_i64(x, i);
    int64_t *a = &acc[o];
    switch (op->kind) {
      case RK_SUM:
        *a = wrap_add(*a, v);
        break;
      case RK_PROD:
        *a = wrap_mul(*a, v);
        break;
      case RK_L1:
        *a = wrap_add(*a, wrap_abs(v));
        break;
      case RK_SUM_SQUARE:
        *a = wrap_add(*a, wrap_mul(v, v));
        break;
      case RK_MAX:
        if (is_u64 ? (uint64_t)v > (uint64_t)*a : v > *a) {
          *a = v;
        }
        break;
      case RK_MIN:
        if (is_u64 ? (uint64_t)v < (uint64_t)*a : v < *a) {
          *a = v;
        }
        break;
      default:
        break;
    }
  }
  for (size_t o = 0; o < n_out; o++) {
    wm_tensor_set_i64(y, o, acc[o]);
  }
}

// Double path: every floating-point reduction, and the integer ones
// whose result is not an integer operation (mean, L2, logs).
static void reduce_f64(const reduce_op_t *op, const wm_tensor_t *x,
                       const wm_shape_t *xs, const int64_t *ostr, double *acc,
                       double *peak, size_t n_out, size_t group,
                       wm_tensor_t *y) {
  double init = 0.0;
  switch (op->kind) {
    case RK_PROD:
      init = 1.0;
      break;
    case RK_MAX:
      init = -INFINITY;
      break;
    case RK_MIN:
      init = INFINITY;
      break;
    default:
      break;
  }
  for (size_t o = 0; o < n_out; o++) {
    acc[o] = init;
    peak[o] = -INFINITY;
  }
  if (op->kind == RK_LOG_SUM_EXP) {
    // Shift by the group maximum so exp cannot overflow.
    for (size_t i = 0; i < x->count; i++) {
      size_t o = wm_broadcast_offset(xs, ostr, i);
      double v = wm_tensor_get_f64(x, i);
      if (v > peak[o] || isnan(v)) {
        peak[o] = isnan(peak[o]) ? peak[o] : v;
      }
    }
  }
  for (size_t i = 0; i < x->count; i++) {
    size_t o = wm_broadcast_offset(xs, ostr, i);
    double v = wm_tensor_get_f64(x, i);
    double *a = &acc[o];
    switch (op->kind) {
      case RK_SUM:
      case RK_MEAN:
      case RK_LOG_SUM:
        *a += v;
        break;
      case RK_PROD:
        *a *= v;
        break;
      case RK_L1:
        *a += fabs(v);
        break;
      case RK_L2:
      case RK_SUM_SQUARE:
        *a += v * v;
        break;
      case RK_MAX:
        if (isnan(v) || v > *a) {
          *a = isnan(*a) ? *a : v;
        }
        break;
      case RK_MIN:
        if (isnan(v) || v < *a) {
          *a = isnan(*a) ? *a : v;
        }
        break;
      case RK_LOG_SUM_EXP:
        if (isfinite(peak[o])) {
          *a += exp(v - peak[o]);
        }
        break;
    }
  }
  for (size_t o = 0; o < n_out; o++) {
    double r = acc[o];
    switch (op->kind) {
      case RK_MEAN:
        r = group ? r / (double)group : NAN;
        break;
      case RK_L2:
        r = sqrt(r);
        break;
      case RK_LOG_SUM:
        r = log(r);
        break;
      case RK_LOG_SUM_EXP:
        // An infinite or NaN maximum is the answer itself (also -inf for
        // an empty group).
        r = isfinite(peak[o]) ? peak[o] + log(r) : peak[o];
        break;
      default:
        break;
    }
    wm_tensor_set_f64(y, o, r);
  }
}

static wm_status_t reduce_run(wm_op_ctx_t *ctx) {
  const reduce_op_t *op;
  reduce_plan_t p;
  WM_RETURN_IF_ERROR(reduce_plan(ctx, &op, &p));
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  // Strides that map an input index to its output element: the output
  // laid out with keepdims, reduced dims moving nothing.
  wm_shape_t kept = x->shape;
  size_t group = 1;
  for (int32_t d = 0; d < kept.rank; d++) {
    if (p.reduced[d]) {
      group *= (size_t)kept.dims[d];
      kept.dims[d] = 1;
    }
  }
  int64_t ostr[WM_MAX_RANK];
  wm_shape_strides(&kept, ostr);
  for (int32_t d = 0; d < kept.rank; d++) {
    if (p.reduced[d]) {
      ostr[d] = 0;
    }
  }
  size_t n_out = y->count;
  bool exact_int =
      (wm_dtype_is_int(x->dtype) || x->dtype == WM_DTYPE_BOOL) &&
      (op->kind == RK_SUM || op->kind == RK_PROD || op->kind == RK_L1 ||
       op->kind == RK_SUM_SQUARE || op->kind == RK_MAX || op->kind == RK_MIN);
  if (exact_int) {
    int64_t *acc = wm_calloc(n_out ? n_out : 1, sizeof(int64_t));
    if (!acc) {
      return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
    }
    reduce_int(op, x, &x->shape, ostr, acc, n_out, y);
    free(acc);
    return NULL;
  }
  double *acc = wm_calloc(n_out ? 2 * n_out : 1, sizeof(double));
  if (!acc) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
  }
  reduce_f64(op, x, &x->shape, ostr, acc, acc + n_out, n_out, group, y);
  free(acc);
  return NULL;
}

// The definition of a float reduction: one spatial axis per output dim,
// one reduce axis per reduced input dim, the body the term each kind sums
// (|x|, x*x) or folds, the epilogue the mean's scale, L2's root or
// LogSum's log.
static wm_status_t reduce_define(const wm_op_ctx_t *ctx,
                                 wm_gen_compute_t *out) {
  const reduce_op_t *op;
  reduce_plan_t p;
  WM_RETURN_IF_ERROR(reduce_plan(ctx, &op, &p));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  int32_t n_red = 0;
  for (int32_t d = 0; d < xs->rank; d++) {
    n_red += p.axes_known && p.reduced[d];
  }
  if (wm_op_in_dtype(ctx, 0) != WM_DTYPE_FLOAT || !p.rank_known ||
      !p.axes_known || !wm_shape_is_known(xs) ||
      p.out.rank + n_red > WM_GEN_MAX_AXES) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 of "
                       "known shape and axes)");
  }
  WM_RETURN_IF_ERROR(
      wm_gen_begin(out, ctx->node->op_type, p.out.rank, p.out.dims, NULL));
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  int32_t spatial = 0;
  double group = 1;
  for (int32_t d = 0; d < xs->rank; d++) {
    if (p.reduced[d]) {
      char name[16];
      int32_t axis;
      snprintf(name, sizeof(name), "r%d", (int)d);
      WM_RETURN_IF_ERROR(wm_gen_reduce_axis(out, name, xs->dims[d], &axis));
      acc.coef[d][axis] = 1;
      group *= (double)xs->dims[d];
      spatial += p.keepdims;
    } else {
      acc.coef[d][spatial++] = 1;
    }
  }
  int32_t x;
  WM_RETURN_IF_ERROR(
      wm_gen_input_access(out, "X", xs->rank, xs->dims, NULL, &acc, &x));
  wm_gen_builder_t b = {out, NULL};
  int32_t body = x, epi = -1, a = -1;
  wm_gen_op_t combine = WM_GEN_ADD;
  float init = 0.0f;
  switch (op->kind) {
    case RK_L1:
      body = wm_gen_f1(&b, WM_GEN_ABS, x);
      break;
    case RK_L2:
    case RK_SUM_SQUARE:
      body = wm_gen_f2(&b, WM_GEN_MUL, x, x);
      break;
    case RK_MAX:
    case RK_MIN:
      combine = op->kind == RK_MAX ? WM_GEN_MAX : WM_GEN_MIN;
      init = op->kind == RK_MAX ? -INFINITY : INFINITY;
      break;
    case RK_PROD:
      combine = WM_GEN_MUL;
      init = 1.0f;
      break;
    default:
      break;
  }
  if (op->kind == RK_MEAN || op->kind == RK_L2 || op->kind == RK_LOG_SUM) {
    WM_RETURN_IF_ERROR(wm_gen_acc(out, &a));
  }
  if (op->kind == RK_MEAN) {  // an empty group's mean is NaN (0 * inf)
    epi = wm_gen_f2(&b, WM_GEN_MUL, a, wm_gen_k(&b, (float)(1.0 / group)));
  } else if (op->kind == RK_L2) {
    epi = wm_gen_f1(&b, WM_GEN_SQRT, a);
  } else if (op->kind == RK_LOG_SUM) {
    epi = wm_gen_f1(&b, WM_GEN_LOG, a);
  }
  WM_RETURN_IF_ERROR(b.st);
  return wm_gen_finish_reduce(out, combine, init, body, epi);
}

static void reduce_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  const reduce_op_t *op = reduce_op_of(ctx);
  size_t n_in, n_out;
  if (!op || !wm_shape_numel(wm_op_in_shape(ctx, 0), &n_in)) {
    return;
  }
  out->flops = (double)n_in;
  if (ctx->n_out > 0 && wm_shape_numel(&ctx->out_types[0].shape, &n_out)) {
    out->transcendentals = op->transcend == 0   ? 0.0
                           : op->transcend == 1 ? (double)n_out
                                                : (double)(n_in + n_out);
  }
}

// ------------------------------------------------------- ArgMax, ArgMin

// Resolves axis and keepdims of ArgMax/ArgMin; out->rank -1 if unknown.
static wm_status_t arg_plan(const wm_op_ctx_t *ctx, int32_t *out_axis,
                            wm_shape_t *out) {
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  out->rank = -1;
  *out_axis = 0;
  if (x->rank < 0) {
    return NULL;
  }
  int64_t axis = wm_node_attr_int(ctx->node, "axis", 0);
  bool keepdims = wm_node_attr_int(ctx->node, "keepdims", 1) != 0;
  if (x->rank == 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 is a scalar, want rank >= 1");
  }
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, axis, x->rank, "axis", out_axis));
  if (x->dims[*out_axis] == 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "axis %lld has extent 0: no element to select",
                       (long long)axis);
  }
  out->rank = 0;
  for (int32_t d = 0; d < x->rank; d++) {
    if (d != *out_axis) {
      out->dims[out->rank++] = x->dims[d];
    } else if (keepdims) {
      out->dims[out->rank++] = 1;
    }
  }
  return NULL;
}

// Parameters: axis normalised, keepdims and select_last_index (0 before
// opset 12).
static wm_status_t arg_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  int32_t axis;
  wm_shape_t y;
  WM_RETURN_IF_ERROR(arg_plan(ctx, &axis, &y));
  out->pending = y.rank < 0;
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "axis", axis));
  WM_RETURN_IF_ERROR(wm_op_param_int(
      ctx, out, "keepdims", wm_node_attr_int(ctx->node, "keepdims", 1) != 0));
  return wm_op_param_int(
      ctx, out, "select_last_index",
      ctx->opset >= 12 &&
          wm_node_attr_int(ctx->node, "select_last_index", 0) != 0);
}

static wm_status_t arg_infer(wm_op_ctx_t *ctx) {
  int32_t axis;
  wm_shape_t y;
  WM_RETURN_IF_ERROR(arg_plan(ctx, &axis, &y));
  wm_op_set_out(ctx, 0, WM_DTYPE_INT64, &y);
  return NULL;
}

static wm_status_t arg_run(wm_op_ctx_t *ctx) {
  int32_t axis;
  wm_shape_t ys;
  WM_RETURN_IF_ERROR(arg_plan(ctx, &axis, &ys));
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  bool is_max = strcmp(ctx->node->op_type, "ArgMax") == 0;
  bool last = ctx->opset >= 12 &&
              wm_node_attr_int(ctx->node, "select_last_index", 0) != 0;
  size_t outer, n, inner;
  split_axis(&x->shape, axis, &outer, &n, &inner);
  for (size_t o = 0; o < outer; o++) {
    for (size_t in = 0; in < inner; in++) {
      size_t base = o * n * inner + in;
      size_t best = 0;
      for (size_t k = 1; k < n; k++) {
        // NaN wins either way, as in numpy.
        int c = elem_cmp(x, base + k * inner, base + best * inner, is_max);
        if (!is_max) {
          c = -c;
        }
        if (c > 0 || (c == 0 && last)) {
          best = k;
        }
      }
      wm_tensor_set_i64(y, o * inner + in, (int64_t)best);
    }
  }
  return NULL;
}

static void arg_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  size_t n;
  if (wm_shape_numel(wm_op_in_shape(ctx, 0), &n)) {
    out->flops = (double)n;
  }
}

// ------------------------------------------------------------------ TopK

// Resolves TopK's axis and k (k -1 when unknown).
static wm_status_t topk_plan(const wm_op_ctx_t *ctx, int32_t *out_axis,
                             int64_t *out_k) {
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  *out_axis = -1;
  *out_k = -1;
  if (ctx->opset < 10) {
    const wm_attr_t *a = wm_node_attr(ctx->node, "k");
    if (!a) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "missing attribute \"k\"");
    }
    *out_k = a->i;
  } else if (ctx->in[1]) {
    const wm_tensor_t *kt = ctx->in[1];
    if (kt->count != 1 || kt->shape.rank > 1 || !wm_dtype_is_int(kt->dtype)) {
      char buf[64];
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 1 (K) must be one integer, got %s%s",
                         wm_dtype_name(kt->dtype),
                         wm_shape_format(&kt->shape, buf, sizeof(buf)));
    }
    *out_k = wm_tensor_get_i64(kt, 0);
  }
  if ((ctx->opset < 10 || ctx->in[1]) && *out_k < 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "k is %lld, want >= 0",
                       (long long)*out_k);
  }
  if (x->rank < 0) {
    return NULL;
  }
  if (x->rank == 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 is a scalar, want rank >= 1");
  }
  int64_t axis = wm_node_attr_int(ctx->node, "axis", -1);
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, axis, x->rank, "axis", out_axis));
  int64_t dim = x->dims[*out_axis];
  if (*out_k >= 0 && dim >= 0 && *out_k > dim) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "k %lld exceeds dim %lld of axis %d", (long long)*out_k,
                       (long long)dim, *out_axis);
  }
  return NULL;
}

static wm_status_t topk_infer(wm_op_ctx_t *ctx) {
  int32_t axis;
  int64_t k;
  WM_RETURN_IF_ERROR(topk_plan(ctx, &axis, &k));
  wm_shape_t y = *wm_op_in_shape(ctx, 0);
  if (y.rank >= 0) {
    y.dims[axis] = k;
  }
  wm_op_set_out(ctx, 0, wm_op_in_dtype(ctx, 0), &y);
  wm_op_set_out(ctx, 1, WM_DTYPE_INT64, &y);
  return NULL;
}

// One slice being sorted: element |k| of it is x[base + k * stride].
typedef struct topk_slice {
  const wm_tensor_t *x;  // the input
  size_t base;           // offset of element 0
  size_t stride;         // distance between elements
  bool largest;          // descending order
} topk_slice_t;

// Whether slice element |a| goes before |b|: by value, then by index, so
// the order is total and ties keep the lower index first.
static bool topk_before(const topk_slice_t *s, int64_t a, int64_t b) {
  int c = elem_cmp(s->x, s->base + (size_t)a * s->stride,
                   s->base + (size_t)b * s->stride, true);
  if (c != 0) {
    return s->largest ? c > 0 : c < 0;
  }
  return a < b;
}

// Bottom-up merge sort of |idx| (n entries) using |tmp| as scratch.
static void topk_sort(const topk_slice_t *s, int64_t *idx, int64_t *tmp,
                      size_t n) {
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      size_t mid = lo + width < n ? lo + width : n;
      size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        tmp[k++] = topk_before(s, idx[j], idx[i]) ? idx[j++] : idx[i++];
      }
      while (i < mid) {
        tmp[k++] = idx[i++];
      }
      while (j < hi) {
        tmp[k++] = idx[j++];
      }
    }
    memcpy(idx, tmp, n * sizeof(int64_t));
  }
}

static wm_status_t topk_run(wm_op_ctx_t *ctx) {
  int32_t axis;
  int64_t k;
  WM_RETURN_IF_ERROR(topk_plan(ctx, &axis, &k));
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *values = ctx->out[0];
  wm_tensor_t *indices = wm_op_has_output(ctx, 1) ? ctx->out[1] : NULL;
  bool largest =
      ctx->opset < 11 || wm_node_attr_int(ctx->node, "largest", 1) != 0;
  size_t outer, n, inner;
  split_axis(&x->shape, axis, &outer, &n, &inner);
  size_t esize = wm_dtype_size(x->dtype);
  int64_t *idx = wm_calloc(n ? 2 * n : 1, sizeof(int64_t));
  if (!idx) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
  }
  size_t kk = (size_t)k;
  for (size_t o = 0; o < outer; o++) {
    for (size_t in = 0; in < inner; in++) {
      topk_slice_t s = {x, o * n * inner + in, inner, largest};
      for (size_t j = 0; j < n; j++) {
        idx[j] = (int64_t)j;
      }
      topk_sort(&s, idx, idx + n, n);
      for (size_t j = 0; j < kk; j++) {
        size_t dst = (o * kk + j) * inner + in;
        size_t src = s.base + (size_t)idx[j] * inner;
        if (values) {
          memcpy((char *)values->data + dst * esize,
                 (const char *)x->data + src * esize, esize);
        }
        if (indices) {
          wm_tensor_set_i64(indices, dst, idx[j]);
        }
      }
    }
  }
  free(idx);
  return NULL;
}

static void topk_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  size_t n;
  if (!wm_shape_numel(x, &n) || x->rank <= 0) {
    return;
  }
  // About n log2(len) comparisons for sorting each slice.
  int32_t axis;
  wm_status_t s = wm_op_axis(ctx, wm_node_attr_int(ctx->node, "axis", -1),
                             x->rank, "axis", &axis);
  if (s) {
    wm_status_free(s);
    return;
  }
  double len = (double)x->dims[axis];
  out->flops = (double)n * (len > 1.0 ? log2(len) : 1.0);
}

// ---------------------------------------------------------------- CumSum

static wm_status_t cumsum_axis(const wm_op_ctx_t *ctx, int32_t rank,
                               int32_t *out_axis, bool *out_known) {
  *out_known = false;
  const wm_tensor_t *a = ctx->in[1];
  if (!a) {
    return NULL;
  }
  if (a->count != 1 || a->shape.rank > 1 || !wm_dtype_is_int(a->dtype)) {
    char buf[64];
    return WM_OP_ERROR(
        ctx, INVALID_ARGUMENT, "input 1 (axis) must be one integer, got %s%s",
        wm_dtype_name(a->dtype), wm_shape_format(&a->shape, buf, sizeof(buf)));
  }
  if (rank < 0) {
    return NULL;
  }
  if (rank == 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 is a scalar, want rank >= 1");
  }
  WM_RETURN_IF_ERROR(
      wm_op_axis(ctx, wm_tensor_get_i64(a, 0), rank, "axis", out_axis));
  *out_known = true;
  return NULL;
}

static wm_status_t cumsum_infer(wm_op_ctx_t *ctx) {
  int32_t axis;
  bool known;
  WM_RETURN_IF_ERROR(
      cumsum_axis(ctx, wm_op_in_shape(ctx, 0)->rank, &axis, &known));
  return wm_op_infer_same(ctx);
}

// CumSum and CumProd: one running sum or product along the axis, exact
// in wrapping int64 for integers and in double for floating types.
static wm_status_t cumsum_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  int32_t axis;
  bool known;
  WM_RETURN_IF_ERROR(cumsum_axis(ctx, x->shape.rank, &axis, &known));
  if (!known) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input 1 (axis) is missing");
  }
  bool prod = strcmp(ctx->node->op_type, "CumProd") == 0;
  bool exclusive = wm_node_attr_int(ctx->node, "exclusive", 0) != 0;
  bool reverse = wm_node_attr_int(ctx->node, "reverse", 0) != 0;
  bool is_int = wm_dtype_is_int(x->dtype);
  size_t outer, n, inner;
  split_axis(&x->shape, axis, &outer, &n, &inner);
  for (size_t o = 0; o < outer; o++) {
    for (size_t in = 0; in < inner; in++) {
      double acc = prod ? 1.0 : 0.0;
      int64_t iacc = prod ? 1 : 0;
      for (size_t j = 0; j < n; j++) {
        size_t k = reverse ? n - 1 - j : j;
        size_t i = (o * n + k) * inner + in;
        if (is_int) {
          int64_t v = wm_tensor_get_i64(x, i);
          int64_t next = prod ? wrap_mul(iacc, v) : wrap_add(iacc, v);
          wm_tensor_set_i64(y, i, exclusive ? iacc : next);
          iacc = next;
        } else {
          double v = wm_tensor_get_f64(x, i);
          double next = prod ? acc * v : acc + v;
          wm_tensor_set_f64(y, i, exclusive ? acc : next);
          acc = next;
        }
      }
    }
  }
  return NULL;
}

#define REDUCE_TYPES WM_TYPES_NUMERIC
#define CUMPROD_TYPES \
  (WM_TYPES_FLOAT | WM_T(INT32) | WM_T(INT64) | WM_T(UINT32) | WM_T(UINT64))
#define REDUCE(name, axes_since)                                              \
  {name,                                                                      \
   "",                                                                        \
   1,                                                                         \
   1,                                                                         \
   1,                                                                         \
   1,                                                                         \
   1,                                                                         \
   REDUCE_TYPES,                                                              \
   reduce_infer,                                                              \
   reduce_run,                                                                \
   reduce_cost,                                                               \
   0,                                                                         \
   reduce_resolve,                                                            \
   reduce_define},                                                            \
  {                                                                           \
    name, "", axes_since, 1, 2, 1, 1, REDUCE_TYPES, reduce_infer, reduce_run, \
        reduce_cost, 0, reduce_resolve, reduce_define                         \
  }

const wm_op_def_t wm_ops_reduce[] = {
    REDUCE("ReduceSum", 13),
    REDUCE("ReduceMean", 18),
    REDUCE("ReduceMax", 18),
    {"ReduceMax", "", 20, 1, 2, 1, 1, REDUCE_TYPES | WM_T(BOOL), reduce_infer,
     reduce_run, reduce_cost, 0, reduce_resolve, reduce_define},
    REDUCE("ReduceMin", 18),
    {"ReduceMin", "", 20, 1, 2, 1, 1, REDUCE_TYPES | WM_T(BOOL), reduce_infer,
     reduce_run, reduce_cost, 0, reduce_resolve, reduce_define},
    REDUCE("ReduceProd", 18),
    REDUCE("ReduceL1", 18),
    REDUCE("ReduceL2", 18),
    REDUCE("ReduceLogSum", 18),
    // No definition: its two passes (the maximum, then the shifted sum)
    // are not one reduction yet.
    {"ReduceLogSumExp", "", 1, 1, 1, 1, 1, REDUCE_TYPES, reduce_infer,
     reduce_run, reduce_cost, 0, reduce_resolve},
    {"ReduceLogSumExp", "", 18, 1, 2, 1, 1, REDUCE_TYPES, reduce_infer,
     reduce_run, reduce_cost, 0, reduce_resolve},
    REDUCE("ReduceSumSquare", 18),
    {"ArgMax", "", 1, 1, 1, 1, 1, WM_TYPES_NUMERIC, arg_infer, arg_run,
     arg_cost, 0, arg_resolve},
    {"ArgMin", "", 1, 1, 1, 1, 1, WM_TYPES_NUMERIC, arg_infer, arg_run,
     arg_cost, 0, arg_resolve},
    {"TopK", "", 1, 1, 1, 2, 2, WM_TYPES_NUMERIC, topk_infer, topk_run,
     topk_cost},
    {"TopK", "", 10, 2, 2, 2, 2, WM_TYPES_NUMERIC, topk_infer, topk_run,
     topk_cost},
    {"CumSum", "", 11, 2, 2, 1, 1, WM_TYPES_NUMERIC, cumsum_infer, cumsum_run,
     NULL},
    {"CumProd", "", 26, 2, 2, 1, 1, CUMPROD_TYPES, cumsum_infer, cumsum_run,
     NULL},
    WM_OPS_END,
};
