// Operators of the activation family: elementwise activations (Gelu and
// Swish among them) driven by one table (a function per op, with its
// attributes and their defaults), PRelu, SwiGLU, and the
// Softmax/LogSoftmax/Hardmax reductions along an axis.
#include <math.h>
#include <string.h>

#include "ops/ops.h"

// ---------------------------------------------------------- elementwise

// An activation: |f| on doubles with attribute values p[0], p[1]; |i| for
// integer dtypes where the op allows them (exact, not through double).
typedef struct act_op {
  const char *name;                          // op_type
  double (*f)(double x, const double *p);    // float dtypes
  int64_t (*i)(int64_t x, const double *p);  // integer dtypes or NULL
  const char *attrs[2];                      // attributes read into p
  float defs[2];                             // their ONNX defaults
  uint8_t flops;                             // cost per element
  uint8_t transc;                            // transcendentals per element
} act_op_t;

// log(1 + e^x) without overflow for large x.
static double softplus(double x) {
  return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}

static double f_relu(double x, const double *p) {
  (void)p;
  return x > 0 ? x : 0.0;
}
static double f_leaky(double x, const double *p) {
  return x < 0 ? p[0] * x : x;
}
static double f_elu(double x, const double *p) {
  return x < 0 ? p[0] * expm1(x) : x;
}
static double f_selu(double x, const double *p) {
  return x > 0 ? p[1] * x : p[1] * p[0] * expm1(x);
}
static double f_celu(double x, const double *p) {
  return x > 0 ? x : p[0] * expm1(x / p[0]);
}
static double f_sigmoid(double x, const double *p) {
  (void)p;
  return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}
static double f_hard_sigmoid(double x, const double *p) {
  return fmax(0.0, fmin(1.0, p[0] * x + p[1]));
}
static double f_hard_swish(double x, const double *p) {
  (void)p;
  return x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5));
}
static double f_softplus(double x, const double *p) {
  (void)p;
  return softplus(x);
}
static double f_softsign(double x, const double *p) {
  (void)p;
  return x / (1.0 + fabs(x));
}
static double f_thresholded(double x, const double *p) {
  return x > p[0] ? x : 0.0;
}
static double f_shrink(double x, const double *p) {
  return x < -p[1] ? x + p[0] : x > p[1] ? x - p[0] : 0.0;
}
static double f_mish(double x, const double *p) {
  (void)p;
  return x * tanh(softplus(x));
}
static double f_swish(double x, const double *p) {
  return x * f_sigmoid(p[0] * x, NULL);
}
// p[0] is 1 for the tanh approximation (see act_params), else 0.
static double f_gelu(double x, const double *p) {
  if (p[0] != 0) {
    double k = 0.79788456080286535588;  // sqrt(2 / pi)
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440));
}
static int64_t i_relu(int64_t x, const double *p) {
  (void)p;
  return x > 0 ? x : 0;
}
// Shrink on integers: the float attributes compare against the value and
// the bias is applied truncated, as a cast of the float result would.
static int64_t i_shrink(int64_t x, const double *p) {
  double v = (double)x;
  int64_t bias = (int64_t)p[0];
  if (v < -p[1]) {
    return (int64_t)((uint64_t)x + (uint64_t)bias);
  }
  return v > p[1] ? (int64_t)((uint64_t)x - (uint64_t)bias) : 0;
}

// Defaults are the float32 values ONNX specifies (Selu's are exact).
static const act_op_t act_ops[] = {
    {"Relu", f_relu, i_relu, {NULL, NULL}, {0, 0}, 1, 0},
    {"LeakyRelu", f_leaky, NULL, {"alpha", NULL}, {0.01f, 0}, 2, 0},
    {"Elu", f_elu, NULL, {"alpha", NULL}, {1.0f, 0}, 2, 1},
    {"Selu",
     f_selu,
     NULL,
     {"alpha", "gamma"},
     {1.67326319217681884765625f, 1.05070102214813232421875f},
     3,
     1},
    {"Celu", f_celu, NULL, {"alpha", NULL}, {1.0f, 0}, 3, 1},
    {"Sigmoid", f_sigmoid, NULL, {NULL, NULL}, {0, 0}, 2, 1},
    {"HardSigmoid",
     f_hard_sigmoid,
     NULL,
     {"alpha", "beta"},
     {0.2f, 0.5f},
     4,
     0},
    {"HardSwish", f_hard_swish, NULL, {NULL, NULL}, {0, 0}, 5, 0},
    {"Softplus", f_softplus, NULL, {NULL, NULL}, {0, 0}, 1, 2},
    {"Softsign", f_softsign, NULL, {NULL, NULL}, {0, 0}, 3, 0},
    {"ThresholdedRelu", f_thresholded, NULL, {"alpha", NULL}, {1.0f, 0}, 1, 0},
    {"Shrink", f_shrink, i_shrink, {"bias", "lambd"}, {0.0f, 0.5f}, 2, 0},
    {"Mish", f_mish, NULL, {NULL, NULL}, {0, 0}, 2, 3},
    {"Swish", f_swish, NULL, {"alpha", NULL}, {1.0f, 0}, 4, 1},
    // Gelu's string attribute "approximate" is read by act_params.
    {"Gelu", f_gelu, NULL, {NULL, NULL}, {0, 0}, 4, 1},
    {NULL, NULL, NULL, {NULL, NULL}, {0, 0}, 0, 0},
};

static const act_op_t *find_act(const char *name) {
  for (const act_op_t *a = act_ops; a->name; a++) {
    if (strcmp(a->name, name) == 0) {
      return a;
    }
  }
  return NULL;
}

// Input 0 must be a float dtype, or an integer one when |ints| is set.
static wm_status_t check_input(const wm_op_ctx_t *ctx, bool ints) {
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (dt == WM_DTYPE_UNDEFINED || wm_dtype_is_float(dt) ||
      (ints && wm_dtype_is_int(dt))) {
    return NULL;
  }
  return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input 0 has unsupported type %s",
                     wm_dtype_name(dt));
}

// Reads the attributes of |op| into p[0], p[1]: its float attributes,
// and for Gelu the approximation ("none" 0 or "tanh" 1).
static wm_status_t act_params(const wm_op_ctx_t *ctx, const act_op_t *op,
                              double p[2]) {
  for (int k = 0; k < 2; k++) {
    p[k] = op->attrs[k]
               ? wm_node_attr_float(ctx->node, op->attrs[k], op->defs[k])
               : 0.0;
  }
  if (strcmp(op->name, "Gelu") == 0) {
    const char *a = wm_node_attr_string(ctx->node, "approximate", "none");
    if (strcmp(a, "none") != 0 && strcmp(a, "tanh") != 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "approximate \"%s\" is not \"none\" or \"tanh\"", a);
    }
    p[0] = strcmp(a, "tanh") == 0;
  }
  return NULL;
}

// Parameters: the operator's float attributes by name, defaults applied;
// Gelu's approximate ("none" or "tanh").
static wm_status_t resolve_act(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  const act_op_t *op = find_act(ctx->node->op_type);
  if (!op) {
    return WM_OP_ERROR(ctx, INTERNAL, "no activation kernel");
  }
  double p[2];
  WM_RETURN_IF_ERROR(act_params(ctx, op, p));
  for (int k = 0; k < 2; k++) {
    if (op->attrs[k]) {
      WM_RETURN_IF_ERROR(wm_op_param_float(ctx, out, op->attrs[k], p[k]));
    }
  }
  if (strcmp(op->name, "Gelu") == 0) {
    return wm_op_param_string(ctx, out, "approximate", p[0] ? "tanh" : "none");
  }
  return NULL;
}

static wm_status_t infer_act(wm_op_ctx_t *ctx) {
  const act_op_t *op = find_act(ctx->node->op_type);
  if (!op) {
    return WM_OP_ERROR(ctx, INTERNAL, "no activation kernel");
  }
  WM_RETURN_IF_ERROR(check_input(ctx, op->i != NULL));
  double p[2];
  WM_RETURN_IF_ERROR(act_params(ctx, op, p));
  return wm_op_infer_same(ctx);
}

static wm_status_t run_act(wm_op_ctx_t *ctx) {
  if (!ctx->out[0]) {
    return NULL;  // output omitted: nothing to compute
  }
  const act_op_t *op = find_act(ctx->node->op_type);
  if (!op) {
    return WM_OP_ERROR(ctx, INTERNAL, "no activation kernel");
  }
  WM_RETURN_IF_ERROR(check_input(ctx, op->i != NULL));
  double p[2];
  WM_RETURN_IF_ERROR(act_params(ctx, op, p));
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  bool ints = wm_dtype_is_int(x->dtype);
  for (size_t i = 0; i < y->count; i++) {
    if (ints) {
      wm_tensor_set_i64(y, i, op->i(wm_tensor_get_i64(x, i), p));
    } else {
      wm_tensor_set_f64(y, i, op->f(wm_tensor_get_f64(x, i), p));
    }
  }
  return NULL;
}

static void cost_act(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  const act_op_t *op = find_act(ctx->node->op_type);
  double n = (double)wm_op_out_numel(ctx);
  out->flops = op ? n * op->flops : n;
  out->transcendentals = op ? n * op->transc : 0;
}

// ---------------------------------------------------------------- PRelu

// The shape the slope broadcasts with. Before opset 7 a 1-D slope of C
// values applies along axis 1 (the channels) of X.
static wm_shape_t slope_shape(const wm_op_ctx_t *ctx) {
  wm_shape_t s = *wm_op_in_shape(ctx, 1);
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  if (ctx->opset < 7 && s.rank == 1 && x->rank >= 2 && s.dims[0] != 1 &&
      s.dims[0] == x->dims[1]) {
    s.rank = x->rank - 1;
    for (int32_t d = 1; d < s.rank; d++) {
      s.dims[d] = 1;
    }
  }
  return s;
}

// PRelu broadcasts the slope to X (unidirectionally): Y has X's shape.
static wm_status_t infer_prelu(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(check_input(ctx, true));
  wm_dtype_t a = wm_op_in_dtype(ctx, 0), b = wm_op_in_dtype(ctx, 1);
  if (a != WM_DTYPE_UNDEFINED && b != WM_DTYPE_UNDEFINED && a != b) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "slope has type %s, want %s like input 0",
                       wm_dtype_name(b), wm_dtype_name(a));
  }
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  wm_shape_t s = slope_shape(ctx), out;
  wm_status_t st = wm_shape_broadcast(x, &s, &out);
  if (st) {
    return wm_status_annotate(st, "node \"%s\" (PRelu): slope", ctx->label);
  }
  if (x->rank >= 0 && out.rank >= 0 && !wm_shape_equal(&out, x) &&
      wm_shape_is_known(x) && wm_shape_is_known(&out)) {
    char xs[96], ss[96];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "slope %s does not broadcast to input %s",
                       wm_shape_format(&s, ss, sizeof(ss)),
                       wm_shape_format(x, xs, sizeof(xs)));
  }
  wm_op_set_out(ctx, 0, a, x);
  return NULL;
}

static wm_status_t run_prelu(wm_op_ctx_t *ctx) {
  if (!ctx->out[0]) {
    return NULL;  // output omitted: nothing to compute
  }
  const wm_tensor_t *x = ctx->in[0], *slope = ctx->in[1];
  wm_tensor_t *y = ctx->out[0];
  wm_shape_t s = slope_shape(ctx);
  int64_t strides[WM_MAX_RANK];
  wm_broadcast_strides(&s, &y->shape, strides);
  bool ints = wm_dtype_is_int(x->dtype);
  bool is_unsigned = wm_dtype_is_unsigned(x->dtype);
  for (size_t i = 0; i < y->count; i++) {
    size_t k = wm_broadcast_offset(&y->shape, strides, i);
    if (ints) {
      int64_t v = wm_tensor_get_i64(x, i);
      if (!is_unsigned && v < 0) {
        v = (int64_t)((uint64_t)v * (uint64_t)wm_tensor_get_i64(slope, k));
      }
      wm_tensor_set_i64(y, i, v);
    } else {
      double v = wm_tensor_get_f64(x, i);
      wm_tensor_set_f64(y, i, v < 0 ? v * wm_tensor_get_f64(slope, k) : v);
    }
  }
  return NULL;
}

// --------------------------------------------------------------- SwiGLU

// SwiGLU(A, B) = Swish_alpha(A) * B; A and B have one shape (no
// broadcasting) and one dtype.
static wm_status_t infer_swiglu(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(check_input(ctx, false));
  wm_dtype_t a = wm_op_in_dtype(ctx, 0), b = wm_op_in_dtype(ctx, 1);
  if (a != WM_DTYPE_UNDEFINED && b != WM_DTYPE_UNDEFINED && a != b) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 1 (B) has type %s, want %s like input 0 (A)",
                       wm_dtype_name(b), wm_dtype_name(a));
  }
  const wm_shape_t *sa = wm_op_in_shape(ctx, 0), *sb = wm_op_in_shape(ctx, 1);
  bool differ = sa->rank >= 0 && sb->rank >= 0 && sa->rank != sb->rank;
  for (int32_t d = 0; !differ && sa->rank >= 0 && d < sa->rank; d++) {
    differ = sa->dims[d] >= 0 && sb->dims[d] >= 0 && sa->dims[d] != sb->dims[d];
  }
  if (differ) {
    char ba[96], bb[96];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "A %s and B %s must have the same shape",
                       wm_shape_format(sa, ba, sizeof(ba)),
                       wm_shape_format(sb, bb, sizeof(bb)));
  }
  wm_shape_t s = sa->rank >= 0 ? *sa : *sb;
  for (int32_t d = 0; sa->rank >= 0 && sb->rank >= 0 && d < s.rank; d++) {
    s.dims[d] = sa->dims[d] >= 0 ? sa->dims[d] : sb->dims[d];
  }
  wm_op_set_out(ctx, 0, a != WM_DTYPE_UNDEFINED ? a : b, &s);
  return NULL;
}

static wm_status_t run_swiglu(wm_op_ctx_t *ctx) {
  if (!ctx->out[0]) {
    return NULL;  // output omitted: nothing to compute
  }
  double p[2] = {wm_node_attr_float(ctx->node, "alpha", 1.0f), 0};
  const wm_tensor_t *a = ctx->in[0], *b = ctx->in[1];
  wm_tensor_t *y = ctx->out[0];
  for (size_t i = 0; i < y->count; i++) {
    wm_tensor_set_f64(
        y, i, f_swish(wm_tensor_get_f64(a, i), p) * wm_tensor_get_f64(b, i));
  }
  return NULL;
}

static void cost_swiglu(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  double n = (double)wm_op_out_numel(ctx);
  out->flops = 5 * n;
  out->transcendentals = n;
}

// ------------------------------------------------------- Softmax family

// The rows a Softmax-like op normalizes: |outer| x |n| x |inner| elements,
// the |n| of a row |inner| apart. Before opset 13 the input is coerced to
// 2-D at axis (default 1); since, one axis (default -1) is reduced.
typedef struct rows {
  size_t outer;  // rows before the axis
  size_t n;      // elements per row
  size_t inner;  // stride between a row's elements
} rows_t;

static wm_status_t softmax_rows(const wm_op_ctx_t *ctx, const wm_shape_t *s,
                                rows_t *out) {
  bool legacy = ctx->opset < 13;
  int32_t axis;
  WM_RETURN_IF_ERROR(
      wm_op_axis(ctx, wm_node_attr_int(ctx->node, "axis", legacy ? 1 : -1),
                 s->rank, "axis", &axis));
  out->outer = out->n = out->inner = 1;
  for (int32_t d = 0; d < s->rank; d++) {
    size_t dim = s->dims[d] > 0 ? (size_t)s->dims[d] : 0;
    size_t *part = d < axis              ? &out->outer
                   : d == axis || legacy ? &out->n
                                         : &out->inner;
    *part *= dim;
  }
  return NULL;
}

// Parameters: axis (default 1 before opset 13, -1 since) normalised, and
// flatten: 1 before opset 13, where a row is every dim from axis on.
static wm_status_t resolve_softmax(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  const wm_shape_t *s = wm_op_in_shape(ctx, 0);
  bool legacy = ctx->opset < 13;
  int32_t axis;
  out->pending = s->rank < 0;
  if (out->pending) {
    return NULL;
  }
  WM_RETURN_IF_ERROR(
      wm_op_axis(ctx, wm_node_attr_int(ctx->node, "axis", legacy ? 1 : -1),
                 s->rank, "axis", &axis));
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "axis", axis));
  return wm_op_param_int(ctx, out, "flatten", legacy);
}

static wm_status_t infer_softmax(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(check_input(ctx, false));
  const wm_shape_t *s = wm_op_in_shape(ctx, 0);
  if (s->rank >= 0) {
    rows_t r;
    WM_RETURN_IF_ERROR(softmax_rows(ctx, s, &r));
  }
  return wm_op_infer_same(ctx);
}

// |v| rounded to |dtype| (a floating type).
static double round_to(wm_dtype_t dtype, double v) {
  if (dtype == WM_DTYPE_DOUBLE) {
    return v;
  }
  uint64_t tmp = 0;
  wm_store_f64(dtype, &tmp, 0, v);
  return wm_load_f64(dtype, &tmp, 0);
}

// Adds |e| to the running Softmax sum |acc| in the precision numpy uses
// for a sum of |dtype|: bfloat16 rounds every addition, float16 and float
// accumulate in float.
static double softmax_add(wm_dtype_t dtype, double acc, double e) {
  switch (dtype) {
    case WM_DTYPE_BFLOAT16:
      return round_to(dtype, acc + e);
    case WM_DTYPE_FLOAT16:
    case WM_DTYPE_FLOAT:
      return (double)(float)(acc + e);
    default:
      return acc + e;
  }
}

// Softmax, LogSoftmax and Hardmax shifted by the row maximum; Hardmax
// marks the first maximum. LogSoftmax works in double. Softmax rounds its
// intermediates (shifted value, exp, sum) to the input type as the ONNX
// reference does: in bfloat16 the difference reaches one unit in the last
// place, above the conformance tolerance.
static wm_status_t run_softmax(wm_op_ctx_t *ctx) {
  if (!ctx->out[0]) {
    return NULL;  // output omitted: nothing to compute
  }
  WM_RETURN_IF_ERROR(check_input(ctx, false));
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  rows_t r;
  WM_RETURN_IF_ERROR(softmax_rows(ctx, &x->shape, &r));
  char kind = ctx->node->op_type[0];  // 'S'oftmax, 'L'ogSoftmax, 'H'ardmax
  wm_dtype_t dt = x->dtype;
  for (size_t o = 0; o < r.outer; o++) {
    for (size_t j = 0; j < r.inner; j++) {
      size_t base = o * r.n * r.inner + j;
      size_t arg = 0;
      double max = -INFINITY, sum = 0;
      for (size_t k = 0; k < r.n; k++) {
        double v = wm_tensor_get_f64(x, base + k * r.inner);
        if (v > max || k == 0) {
          max = v;
          arg = k;
        }
      }
      for (size_t k = 0; k < r.n && kind == 'L'; k++) {
        sum += exp(wm_tensor_get_f64(x, base + k * r.inner) - max);
      }
      for (size_t k = 0; k < r.n && kind == 'S'; k++) {
        double v = wm_tensor_get_f64(x, base + k * r.inner) - max;
        sum = softmax_add(dt, sum, round_to(dt, exp(round_to(dt, v))));
      }
      sum = kind == 'S' ? round_to(dt, sum) : sum;
      for (size_t k = 0; k < r.n; k++) {
        size_t at = base + k * r.inner;
        double v = wm_tensor_get_f64(x, at) - max;
        wm_tensor_set_f64(y, at,
                          kind == 'H' ? (double)(k == arg)
                          : kind == 'L'
                              ? v - log(sum)
                              : round_to(dt, exp(round_to(dt, v))) / sum);
      }
    }
  }
  return NULL;
}

// The compute definition of Softmax and LogSoftmax in three stages over x
// viewed as [outer, n, inner]: a row's max m, then its sum s of exp(x - m)
// (LogSoftmax: log of it), then exp(x - m) / s (LogSoftmax: x - m - s).
static wm_status_t define_softmax(const wm_op_ctx_t *ctx, wm_gen_program_t *p) {
  char kind = ctx->node->op_type[0];
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  rows_t r;
  if (kind == 'H' || !wm_op_define_float(ctx)) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (Softmax "
                       "and LogSoftmax of float32 of known shape)");
  }
  WM_RETURN_IF_ERROR(softmax_rows(ctx, xs, &r));
  const int64_t x3[3] = {(int64_t)r.outer, (int64_t)r.n, (int64_t)r.inner};
  const int64_t rows[2] = {x3[0], x3[2]};
  int32_t temp[2];
  for (int32_t t = 0; t < 2; t++) {
    WM_RETURN_IF_ERROR(wm_gen_program_temp(p, rows[0] * rows[1], &temp[t]));
  }
  for (int32_t stage = 0; stage < 3; stage++) {
    wm_gen_compute_t *c;
    WM_RETURN_IF_ERROR(wm_gen_program_stage(p, &c));
    static const char *const names[3][2] = {{"o", "q"}, {"o", "q"}, {0}};
    WM_RETURN_IF_ERROR(wm_gen_begin(c, ctx->node->op_type, stage < 2 ? 2 : 3,
                                    stage < 2 ? rows : x3,
                                    stage < 2 ? names[stage] : NULL));
    // x[o, k, q] with k the reduce axis (stages 0, 1) or axis 1.
    wm_gen_access_t ax;
    memset(&ax, 0, sizeof(ax));
    int32_t k = 1, q = 2, x, m = -1, s = -1;
    if (stage < 2) {
      WM_RETURN_IF_ERROR(wm_gen_reduce_axis(c, "k", x3[1], &k));
      q = 1;
    }
    ax.coef[0][0] = ax.coef[1][k] = ax.coef[2][q] = 1;
    WM_RETURN_IF_ERROR(wm_gen_input_access(c, "X", 3, x3, NULL, &ax, &x));
    c->tensors[c->n_tensors - 1].operand = 0;
    if (stage > 0) {  // m[o, q] (and s[o, q] in the last stage)
      wm_gen_access_t am;
      memset(&am, 0, sizeof(am));
      am.coef[0][0] = am.coef[1][q] = 1;
      for (int32_t t = 0; t < (stage == 2 ? 2 : 1); t++) {
        int32_t *load = t == 0 ? &m : &s;
        WM_RETURN_IF_ERROR(wm_gen_input_access(c, t == 0 ? "M" : "S", 2, rows,
                                               NULL, &am, load));
        WM_RETURN_IF_ERROR(wm_gen_bind_temp(p, c, c->n_tensors - 1, temp[t]));
      }
    }
    if (stage < 2) {
      WM_RETURN_IF_ERROR(wm_gen_bind_temp(p, c, 0, temp[stage]));
    }
    wm_gen_builder_t b = {c, NULL};
    if (stage == 0) {
      WM_RETURN_IF_ERROR(wm_gen_finish_reduce(c, WM_GEN_MAX, -INFINITY, x, -1));
      continue;
    }
    int32_t shifted = wm_gen_f2(&b, WM_GEN_SUB, x, m);
    if (stage == 1) {
      int32_t body = wm_gen_f1(&b, WM_GEN_EXP, shifted), acc = -1;
      if (!b.st && kind == 'L') {
        b.st = wm_gen_acc(c, &acc);
      }
      int32_t epi = kind == 'L' ? wm_gen_f1(&b, WM_GEN_LOG, acc) : -1;
      WM_RETURN_IF_ERROR(b.st);
      WM_RETURN_IF_ERROR(wm_gen_finish_reduce(c, WM_GEN_ADD, 0.0f, body, epi));
      continue;
    }
    int32_t y = kind == 'L' ? wm_gen_f2(&b, WM_GEN_SUB, shifted, s)
                            : wm_gen_f2(&b, WM_GEN_DIV,
                                        wm_gen_f1(&b, WM_GEN_EXP, shifted), s);
    WM_RETURN_IF_ERROR(b.st);
    WM_RETURN_IF_ERROR(wm_gen_finish(c, y));
  }
  return NULL;
}

// Softmax: per element a compare, a subtraction, an add and a division
// around one exp; LogSoftmax adds a log per row; Hardmax only compares.
static void cost_softmax(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  double n = (double)wm_op_out_numel(ctx);
  if (ctx->node->op_type[0] == 'H') {
    out->flops = n;
    return;
  }
  out->flops = 4 * n;
  out->transcendentals = n;
  rows_t r;
  const wm_shape_t *s = &ctx->out_types[0].shape;
  wm_status_t st = s->rank >= 0 ? softmax_rows(ctx, s, &r) : NULL;
  if (ctx->node->op_type[0] == 'L' && s->rank >= 0 && !st) {
    out->transcendentals += (double)(r.outer * r.inner);
  }
  wm_status_free(st);
}

// ---------------------------------------------------------------- table

#define RELU_TYPES \
  (WM_TYPES_FLOAT | WM_T(INT8) | WM_T(INT16) | WM_T(INT32) | WM_T(INT64))
#define PRELU_TYPES \
  (WM_TYPES_FLOAT | WM_T(INT32) | WM_T(INT64) | WM_T(UINT32) | WM_T(UINT64))
// Shrink allows every numeric type in ONNX; uint64 is left out because
// its integer path works on int64 values.
#define SHRINK_TYPES (WM_TYPES_NUMERIC & ~WM_T(UINT64))

// The activation of x as a generator expression, with the operator's
// parameters |p| (act_params), as the f_* kernels above compute it.
int32_t wm_op_act_expr(wm_gen_builder_t *b, const char *name, const double *p,
                       int32_t x) {
  const float p0 = (float)p[0], p1 = (float)p[1];
  int32_t zero = wm_gen_k(b, 0.0f), one = wm_gen_k(b, 1.0f);
  // e^v - 1 and log(1 + e^x)
#define EXPM1(v) wm_gen_f2(b, WM_GEN_SUB, wm_gen_f1(b, WM_GEN_EXP, (v)), one)
#define SOFTPLUS           \
  wm_gen_f1(b, WM_GEN_LOG, \
            wm_gen_f2(b, WM_GEN_ADD, one, wm_gen_f1(b, WM_GEN_EXP, x)))
  // x < 0 and x > 0, made where a branch asks (the body keeps only what
  // it uses).
#define NEG wm_gen_f2(b, WM_GEN_LT, x, zero)
#define POS wm_gen_f2(b, WM_GEN_GT, x, zero)
  if (strcmp(name, "Relu") == 0) {
    return wm_gen_f1(b, WM_GEN_RELU, x);
  }
  if (strcmp(name, "Sigmoid") == 0) {
    return wm_gen_f1(b, WM_GEN_SIGMOID, x);
  }
  if (strcmp(name, "LeakyRelu") == 0) {
    return wm_gen_sel(b, NEG, wm_gen_f2(b, WM_GEN_MUL, wm_gen_k(b, p0), x), x);
  }
  if (strcmp(name, "Elu") == 0) {
    return wm_gen_sel(b, NEG,
                      wm_gen_f2(b, WM_GEN_MUL, wm_gen_k(b, p0), EXPM1(x)), x);
  }
  if (strcmp(name, "Selu") == 0) {
    int32_t g = wm_gen_k(b, p1);
    return wm_gen_sel(
        b, POS, wm_gen_f2(b, WM_GEN_MUL, g, x),
        wm_gen_f2(b, WM_GEN_MUL, wm_gen_k(b, (float)(p[1] * p[0])), EXPM1(x)));
  }
  if (strcmp(name, "Celu") == 0) {
    int32_t a = wm_gen_k(b, p0);
    return wm_gen_sel(
        b, POS, x,
        wm_gen_f2(b, WM_GEN_MUL, a, EXPM1(wm_gen_f2(b, WM_GEN_DIV, x, a))));
  }
  if (strcmp(name, "HardSigmoid") == 0 || strcmp(name, "HardSwish") == 0) {
    bool swish = name[4] == 'S' && name[5] == 'w';
    int32_t lin = wm_gen_f2(
        b, WM_GEN_ADD,
        wm_gen_f2(b, WM_GEN_MUL, wm_gen_k(b, swish ? 1.0f / 6.0f : p0), x),
        wm_gen_k(b, swish ? 0.5f : p1));
    int32_t h =
        wm_gen_f2(b, WM_GEN_MAX, zero, wm_gen_f2(b, WM_GEN_MIN, one, lin));
    return swish ? wm_gen_f2(b, WM_GEN_MUL, x, h) : h;
  }
  if (strcmp(name, "Softplus") == 0) {
    return SOFTPLUS;
  }
  if (strcmp(name, "Softsign") == 0) {
    return wm_gen_f2(
        b, WM_GEN_DIV, x,
        wm_gen_f2(b, WM_GEN_ADD, one, wm_gen_f1(b, WM_GEN_ABS, x)));
  }
  if (strcmp(name, "ThresholdedRelu") == 0) {
    return wm_gen_sel(b, wm_gen_f2(b, WM_GEN_GT, x, wm_gen_k(b, p0)), x, zero);
  }
  if (strcmp(name, "Shrink") == 0) {
    int32_t l = wm_gen_k(b, p1), bias = wm_gen_k(b, p0);
    return wm_gen_sel(b,
                      wm_gen_f2(b, WM_GEN_LT, x, wm_gen_f1(b, WM_GEN_NEG, l)),
                      wm_gen_f2(b, WM_GEN_ADD, x, bias),
                      wm_gen_sel(b, wm_gen_f2(b, WM_GEN_GT, x, l),
                                 wm_gen_f2(b, WM_GEN_SUB, x, bias), zero));
  }
  if (strcmp(name, "Mish") == 0) {
    return wm_gen_f2(b, WM_GEN_MUL, x, wm_gen_f1(b, WM_GEN_TANH, SOFTPLUS));
  }
  if (strcmp(name, "Swish") == 0) {
    return wm_gen_f2(b, WM_GEN_MUL, x,
                     wm_gen_f1(b, WM_GEN_SIGMOID,
                               wm_gen_f2(b, WM_GEN_MUL, wm_gen_k(b, p0), x)));
  }
  // Gelu: 0.5 x (1 + erf(x / sqrt 2)), or with tanh of the cubic.
  int32_t inner;
  if (p[0] != 0) {
    int32_t x3 = wm_gen_f2(b, WM_GEN_MUL, x, wm_gen_f2(b, WM_GEN_MUL, x, x));
    int32_t poly = wm_gen_f2(
        b, WM_GEN_ADD, x, wm_gen_f2(b, WM_GEN_MUL, wm_gen_k(b, 0.044715f), x3));
    inner = wm_gen_f1(
        b, WM_GEN_TANH,
        wm_gen_f2(b, WM_GEN_MUL, wm_gen_k(b, 0.79788456080286535588f), poly));
  } else {
    inner = wm_gen_f1(
        b, WM_GEN_ERF,
        wm_gen_f2(b, WM_GEN_MUL, x, wm_gen_k(b, 0.70710678118654752440f)));
  }
  return wm_gen_f2(b, WM_GEN_MUL,
                   wm_gen_f2(b, WM_GEN_MUL, wm_gen_k(b, 0.5f), x),
                   wm_gen_f2(b, WM_GEN_ADD, one, inner));
#undef EXPM1
#undef SOFTPLUS
#undef NEG
#undef POS
}

static wm_status_t define_act(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  const act_op_t *op = find_act(ctx->node->op_type);
  if (!op) {
    return WM_OP_ERROR(ctx, INTERNAL, "no activation kernel");
  }
  double p[2];
  int32_t loads[WM_GEN_MAX_TENSORS];
  WM_RETURN_IF_ERROR(act_params(ctx, op, p));
  WM_RETURN_IF_ERROR(wm_op_define_inputs(ctx, out, loads));
  wm_gen_builder_t b = {out, NULL};
  int32_t y = wm_op_act_expr(&b, op->name, p, loads[0]);
  WM_RETURN_IF_ERROR(b.st);
  return wm_gen_finish(out, y);
}

// PRelu from opset 7 (numpy broadcasting of the slope): x < 0 ? slope * x
// : x.
static wm_status_t define_prelu(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  wm_shape_t s = slope_shape(ctx);
  if (ctx->opset < 7 || !wm_shape_equal(&s, wm_op_in_shape(ctx, 1))) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for PRelu's legacy slope");
  }
  int32_t loads[WM_GEN_MAX_TENSORS];
  WM_RETURN_IF_ERROR(wm_op_define_inputs(ctx, out, loads));
  wm_gen_builder_t b = {out, NULL};
  int32_t y =
      wm_gen_sel(&b, wm_gen_f2(&b, WM_GEN_LT, loads[0], wm_gen_k(&b, 0.0f)),
                 wm_gen_f2(&b, WM_GEN_MUL, loads[1], loads[0]), loads[0]);
  WM_RETURN_IF_ERROR(b.st);
  return wm_gen_finish(out, y);
}

#define ACT_D(name, since, types)                                        \
  {                                                                      \
    name, "", since, 1, 1, 1, 1, types, infer_act, run_act, cost_act, 0, \
        resolve_act, define_act                                          \
  }
#define ACT(name, since, types)                                          \
  {                                                                      \
    name, "", since, 1, 1, 1, 1, types, infer_act, run_act, cost_act, 0, \
        resolve_act                                                      \
  }
#define SOFTMAX(name)                                                    \
  {                                                                      \
    name, "", 1, 1, 1, 1, 1, WM_TYPES_FLOAT, infer_softmax, run_softmax, \
        cost_softmax, 0, resolve_softmax, NULL, define_softmax           \
  }

const wm_op_def_t wm_ops_activation[] = {
    ACT_D("Relu", 1, RELU_TYPES),
    ACT_D("LeakyRelu", 1, WM_TYPES_FLOAT),
    ACT_D("Elu", 1, WM_TYPES_FLOAT),
    ACT_D("Selu", 1, WM_TYPES_FLOAT),
    ACT_D("Celu", 12, WM_TYPES_FLOAT),
    ACT_D("Sigmoid", 1, WM_TYPES_FLOAT),
    ACT_D("HardSigmoid", 1, WM_TYPES_FLOAT),
    ACT_D("HardSwish", 14, WM_TYPES_FLOAT),
    ACT_D("Softplus", 1, WM_TYPES_FLOAT),
    ACT_D("Softsign", 1, WM_TYPES_FLOAT),
    ACT_D("ThresholdedRelu", 10, WM_TYPES_FLOAT),
    ACT_D("Shrink", 9, SHRINK_TYPES),
    ACT_D("Mish", 18, WM_TYPES_FLOAT),
    ACT_D("Swish", 24, WM_TYPES_FLOAT),
    ACT_D("Gelu", 20, WM_TYPES_FLOAT),
    {"PRelu", "", 1, 2, 2, 1, 1, PRELU_TYPES, infer_prelu, run_prelu, NULL, 0,
     NULL, define_prelu},
    {"SwiGLU", "", 28, 2, 2, 1, 1, WM_TYPES_FLOAT, infer_swiglu, run_swiglu,
     cost_swiglu},
    SOFTMAX("Softmax"),
    SOFTMAX("LogSoftmax"),
    SOFTMAX("Hardmax"),
    WM_OPS_END,
};
