// Operators of the math family: elementwise arithmetic, comparison, logic
// and transcendental functions, Cast, Clip and Where. Kernels are driven by
// tables holding one function per op and value domain, so each loop exists
// once.
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ops/ops.h"

// ------------------------------------------------------------ domains

// Kernels compute in one domain picked from the dtype: floats in double,
// signed integers and bool in int64, unsigned integers in uint64, so that
// 64-bit integers stay exact.
typedef enum dom { DOM_F, DOM_I, DOM_U } dom_t;

typedef union num {
  double f;    // DOM_F
  int64_t i;   // DOM_I
  uint64_t u;  // DOM_U
} num_t;

static dom_t dom_of(wm_dtype_t dtype) {
  if (wm_dtype_is_float(dtype)) {
    return DOM_F;
  }
  return wm_dtype_is_unsigned(dtype) ? DOM_U : DOM_I;
}

static num_t load(const wm_tensor_t *t, dom_t dom, size_t i) {
  num_t v;
  if (dom == DOM_F) {
    v.f = wm_tensor_get_f64(t, i);
  } else {
    v.i = wm_tensor_get_i64(t, i);
  }
  return v;
}

// Stores |v| of domain |dom| into element |i| of |t|, converting to the
// dtype of |t|: doubles go to integers truncated and saturated (NaN gives
// 0) by wm_tensor_set_f64, integers wrap to narrower ones, bool takes
// "nonzero".
static void store(wm_tensor_t *t, dom_t dom, size_t i, num_t v) {
  if (dom == DOM_F) {
    wm_tensor_set_f64(t, i, v.f);
  } else if (wm_dtype_is_float(t->dtype)) {
    wm_tensor_set_f64(t, i, dom == DOM_U ? (double)v.u : (double)v.i);
  } else {
    wm_tensor_set_i64(t, i, v.i);
  }
}

static bool num_lt(dom_t dom, num_t a, num_t b) {
  return dom == DOM_F ? a.f < b.f : dom == DOM_U ? a.u < b.u : a.i < b.i;
}

// ------------------------------------------------------- broadcasting

// Maps output indices to the offsets of one broadcast input.
typedef struct bcast {
  const wm_shape_t *out;         // output shape
  int64_t strides[WM_MAX_RANK];  // input strides per output dim
  bool direct;                   // same shape: offset = index
} bcast_t;

static void bcast_init(bcast_t *b, const wm_shape_t *in,
                       const wm_shape_t *out) {
  b->out = out;
  b->direct = wm_shape_equal(in, out);
  wm_broadcast_strides(in, out, b->strides);
}

static size_t bcast_at(const bcast_t *b, size_t i) {
  return b->direct ? i : wm_broadcast_offset(b->out, b->strides, i);
}

// The shape input |k| broadcasts with. Before opset 7, binary ops with
// broadcast=1 and an axis attribute align input 1 with input 0 at |axis|
// (without axis the alignment is the trailing one numpy uses too).
static wm_status_t operand_shape(const wm_op_ctx_t *ctx, int32_t k,
                                 wm_shape_t *out) {
  *out = *wm_op_in_shape(ctx, k);
  const wm_attr_t *axis_attr = wm_node_attr(ctx->node, "axis");
  if (ctx->opset >= 7 || k != 1 || !axis_attr ||
      wm_node_attr_int(ctx->node, "broadcast", 0) == 0) {
    return NULL;
  }
  const wm_shape_t *a = wm_op_in_shape(ctx, 0);
  if (a->rank < 0 || out->rank < 0) {
    out->rank = -1;
    return NULL;
  }
  int32_t axis;
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, axis_attr->i, a->rank, "axis", &axis));
  if (axis + out->rank > a->rank) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 1 of rank %d does not fit input 0 of rank %d "
                       "at axis %d",
                       out->rank, a->rank, axis);
  }
  wm_shape_t s = {a->rank, {0}};
  for (int32_t d = 0; d < a->rank; d++) {
    int32_t j = d - axis;
    s.dims[d] = j >= 0 && j < out->rank ? out->dims[j] : 1;
  }
  *out = s;
  return NULL;
}

// Broadcast shape of every present input.
static wm_status_t broadcast_inputs(const wm_op_ctx_t *ctx, wm_shape_t *out) {
  bool first = true;
  out->rank = 0;
  for (int32_t k = 0; k < ctx->n_in; k++) {
    if (!wm_op_has_input(ctx, k)) {
      continue;
    }
    wm_shape_t s;
    WM_RETURN_IF_ERROR(operand_shape(ctx, k, &s));
    if (first) {
      *out = s;
      first = false;
      continue;
    }
    wm_status_t st = wm_shape_broadcast(out, &s, out);
    if (st) {
      return wm_status_annotate(st, "node \"%s\" (%s): input %d", ctx->label,
                                ctx->node->op_type, k);
    }
  }
  return NULL;
}

// Input |k| must have the dtype of input |ref| (when both are known).
static wm_status_t check_same_dtype(const wm_op_ctx_t *ctx, int32_t ref,
                                    int32_t k) {
  wm_dtype_t a = wm_op_in_dtype(ctx, ref), b = wm_op_in_dtype(ctx, k);
  if (a != WM_DTYPE_UNDEFINED && b != WM_DTYPE_UNDEFINED && a != b) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d has type %s, want %s like input %d", k,
                       wm_dtype_name(b), wm_dtype_name(a), ref);
  }
  return NULL;
}

size_t wm_op_out_numel(const wm_op_ctx_t *ctx) {
  size_t n = 0;
  if (ctx->n_out < 1 || !wm_shape_numel(&ctx->out_types[0].shape, &n)) {
    return 0;
  }
  return n;
}

// ------------------------------------------------------- binary table

enum {
  BIN_BOOL = 1,     // output is bool (comparisons and logic)
  BIN_DIVISOR = 2,  // integer input 1 must not contain zero
  BIN_TRANSC = 4,   // counted as a transcendental, not a FLOP
  BIN_MIXED = 8,    // inputs may differ in dtype (Pow)
  BIN_MEAN = 16,    // divide the sum by the input count
};

// One binary (or variadic, folded left to right) op. Integer domains use
// |i| or |u|; when one is NULL the other runs on the same bits, which is
// right for wrapping arithmetic and bitwise ops.
typedef struct binary_op {
  const char *name;                   // op_type
  int variant;                        // see find_binary()
  double (*f)(double, double);        // DOM_F
  int64_t (*i)(int64_t, int64_t);     // DOM_I
  uint64_t (*u)(uint64_t, uint64_t);  // DOM_U
  unsigned flags;                     // BIN_*
} binary_op_t;

#define DEF_F(name, expr) \
  static double f_##name(double a, double b) { return (expr); }
#define DEF_I(name, expr) \
  static int64_t i_##name(int64_t a, int64_t b) { return (expr); }
#define DEF_U(name, expr) \
  static uint64_t u_##name(uint64_t a, uint64_t b) { return (expr); }
#define DEF_FIU(name, expr) \
  DEF_F(name, expr) DEF_I(name, expr) DEF_U(name, expr)

DEF_F(add, a + b)
DEF_U(add, a + b)
DEF_F(sub, a - b)
DEF_U(sub, a - b)
DEF_F(mul, (a * b))
DEF_U(mul, (a * b))
DEF_F(div, a / b)
// Zero divisors are rejected before the loop; -1 is special because
// INT64_MIN / -1 overflows.
DEF_I(div, b == -1 ? (int64_t)(0 - (uint64_t)a) : b ? a / b : 0)
DEF_U(div, b ? a / b : 0)
DEF_I(fmod, b == -1 || b == 0 ? 0 : a % b)
DEF_U(mod, b ? a % b : 0)
DEF_F(fmod, fmod(a, b))

// Mod with fmod=0 takes the sign of the divisor, like Python's %: a zero
// result is a zero of b's sign, and a finite a of the other sign than an
// infinite b gives b (opset 28's special cases).
static double f_mod(double a, double b) {
  double r = fmod(a, b);
  if (r == 0) {
    return copysign(0.0, b);
  }
  return (r < 0) != (b < 0) ? r + b : r;
}

static int64_t i_mod(int64_t a, int64_t b) {
  int64_t r = i_fmod(a, b);
  return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

DEF_F(min, isnan(a) || a < b ? a : b)
DEF_F(max, isnan(a) || a > b ? a : b)
DEF_I(min, a < b ? a : b)
DEF_I(max, a > b ? a : b)
DEF_U(min, a < b ? a : b)
DEF_U(max, a > b ? a : b)
DEF_FIU(eq, a == b)
DEF_FIU(lt, a < b)
DEF_FIU(gt, a > b)
DEF_FIU(le, a <= b)
DEF_FIU(ge, a >= b)
DEF_I(and, a != 0 && b != 0)
DEF_I(or, a || b)
DEF_I(xor, !a != !b)
DEF_U(band, (a & b))
DEF_U(bor, a | b)
DEF_U(bxor, a ^ b)
DEF_U(shl, b < 64 ? a << b : 0)
DEF_U(shr, b < 64 ? a >> b : 0)
DEF_F(pow, pow(a, b))

// Integer power by squaring, wrapping like the other integer ops; a
// negative exponent truncates 1 / a^-b toward zero.
static uint64_t u_pow(uint64_t a, uint64_t b) {
  uint64_t r = 1;
  for (; b; b >>= 1, a *= a) {
    if (b & 1) {
      r *= a;
    }
  }
  return r;
}

static int64_t i_pow(int64_t a, int64_t b) {
  if (b < 0) {
    return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  }
  return (int64_t)u_pow((uint64_t)a, (uint64_t)b);
}

static const binary_op_t binary_ops[] = {
    {"Add", 0, f_add, NULL, u_add, 0},
    {"Sub", 0, f_sub, NULL, u_sub, 0},
    {"Mul", 0, f_mul, NULL, u_mul, 0},
    {"Div", 0, f_div, i_div, u_div, BIN_DIVISOR},
    {"Pow", 0, f_pow, i_pow, u_pow, BIN_TRANSC | BIN_MIXED},
    {"Mod", 0, f_mod, i_mod, u_mod, BIN_DIVISOR},
    {"Mod", 1, f_fmod, i_fmod, u_mod, BIN_DIVISOR},
    {"Min", 0, f_min, i_min, u_min, 0},
    {"Max", 0, f_max, i_max, u_max, 0},
    {"Sum", 0, f_add, NULL, u_add, 0},
    {"Mean", 0, f_add, NULL, u_add, BIN_MEAN},
    {"Equal", 0, f_eq, i_eq, u_eq, BIN_BOOL},
    {"Less", 0, f_lt, i_lt, u_lt, BIN_BOOL},
    {"Greater", 0, f_gt, i_gt, u_gt, BIN_BOOL},
    {"LessOrEqual", 0, f_le, i_le, u_le, BIN_BOOL},
    {"GreaterOrEqual", 0, f_ge, i_ge, u_ge, BIN_BOOL},
    {"And", 0, NULL, i_and, NULL, BIN_BOOL},
    {"Or", 0, NULL, i_or, NULL, BIN_BOOL},
    {"Xor", 0, NULL, i_xor, NULL, BIN_BOOL},
    {"BitwiseAnd", 0, NULL, NULL, u_band, 0},
    {"BitwiseOr", 0, NULL, NULL, u_bor, 0},
    {"BitwiseXor", 0, NULL, NULL, u_bxor, 0},
    {"BitShift", 0, NULL, NULL, u_shl, 0},
    {"BitShift", 1, NULL, NULL, u_shr, 0},
    {NULL, 0, NULL, NULL, NULL, 0},
};

// Picks the table entry of the node: Mod by fmod, BitShift by direction.
static wm_status_t find_binary(const wm_op_ctx_t *ctx,
                               const binary_op_t **out) {
  const char *op = ctx->node->op_type;
  int variant = 0;
  if (strcmp(op, "Mod") == 0) {
    int64_t fmod_attr = wm_node_attr_int(ctx->node, "fmod", 0);
    if (fmod_attr != 0 && fmod_attr != 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "fmod is %lld, want 0 or 1",
                         (long long)fmod_attr);
    }
    variant = (int)fmod_attr;
  } else if (strcmp(op, "BitShift") == 0) {
    const char *dir = wm_node_attr_string(ctx->node, "direction", "");
    if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "direction is \"%s\", want \"LEFT\" or \"RIGHT\"",
                         dir);
    }
    variant = strcmp(dir, "RIGHT") == 0;
  }
  for (const binary_op_t *b = binary_ops; b->name; b++) {
    if (strcmp(b->name, op) == 0 && b->variant == variant) {
      *out = b;
      return NULL;
    }
  }
  return WM_OP_ERROR(ctx, INTERNAL, "no binary kernel");
}

// The domain of a binary node: that of input 0, or double when Pow mixes
// in a float exponent.
static dom_t binary_dom(const binary_op_t *op, wm_dtype_t a, wm_dtype_t b) {
  if ((op->flags & BIN_MIXED) && wm_dtype_is_float(b)) {
    return DOM_F;
  }
  return dom_of(a);
}

static bool binary_has_fn(const binary_op_t *op, dom_t dom) {
  return dom == DOM_F ? op->f != NULL : (op->i || op->u);
}

static num_t binary_apply(const binary_op_t *op, dom_t dom, num_t a, num_t b) {
  num_t r;
  if (dom == DOM_F) {
    r.f = op->f(a.f, b.f);
  } else if ((dom == DOM_I && op->i) || !op->u) {
    r.i = op->i(a.i, b.i);
  } else {
    r.u = op->u(a.u, b.u);
  }
  return r;
}

static wm_status_t infer_binary(wm_op_ctx_t *ctx) {
  const binary_op_t *op;
  WM_RETURN_IF_ERROR(find_binary(ctx, &op));
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  for (int32_t k = 1; k < ctx->n_in && !(op->flags & BIN_MIXED); k++) {
    WM_RETURN_IF_ERROR(check_same_dtype(ctx, 0, k));
  }
  // Strings only reach here where the definition accepts them (Equal
  // from opset 19).
  bool strings = dt == WM_DTYPE_STRING && strcmp(op->name, "Equal") == 0;
  if (dt != WM_DTYPE_UNDEFINED && !strings) {
    dom_t dom = binary_dom(op, dt, wm_op_in_dtype(ctx, 1));
    if (!binary_has_fn(op, dom) || dt == WM_DTYPE_STRING) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 0 has unsupported type %s", wm_dtype_name(dt));
    }
    if (strcmp(op->name, "Mod") == 0 && op->variant == 0 &&
        wm_dtype_is_float(dt) && ctx->opset < 28) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "fmod must be 1 for %s inputs before opset 28 (this "
                         "node has opset %lld)",
                         wm_dtype_name(dt), (long long)ctx->opset);
    }
  }
  wm_shape_t shape;
  WM_RETURN_IF_ERROR(broadcast_inputs(ctx, &shape));
  wm_op_set_out(ctx, 0, (op->flags & BIN_BOOL) ? WM_DTYPE_BOOL : dt, &shape);
  return NULL;
}

// Equal on two string tensors (broadcast), by content.
static wm_status_t run_equal_strings(wm_op_ctx_t *ctx) {
  const wm_tensor_t *a = ctx->in[0], *b = ctx->in[1];
  wm_tensor_t *y = ctx->out[0];
  if (b->dtype != WM_DTYPE_STRING || strcmp(ctx->node->op_type, "Equal")) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has unsupported type string");
  }
  bcast_t ba, bb;
  bcast_init(&ba, &a->shape, &y->shape);
  bcast_init(&bb, &b->shape, &y->shape);
  for (size_t i = 0; i < y->count; i++) {
    const char *sa = ((char *const *)a->data)[bcast_at(&ba, i)];
    const char *sb = ((char *const *)b->data)[bcast_at(&bb, i)];
    wm_tensor_set_i64(y, i, strcmp(sa ? sa : "", sb ? sb : "") == 0);
  }
  return NULL;
}

// Folds every input into a per-element accumulator, so Add and a
// variadic Sum share the loop; floats accumulate in double.
static wm_status_t run_binary(wm_op_ctx_t *ctx) {
  if (!ctx->out[0]) {
    return NULL;  // output omitted: nothing to compute
  }
  const binary_op_t *op;
  WM_RETURN_IF_ERROR(find_binary(ctx, &op));
  wm_tensor_t *y = ctx->out[0];
  wm_dtype_t dt = ctx->in[0]->dtype;
  if (dt == WM_DTYPE_STRING) {
    return run_equal_strings(ctx);
  }
  dom_t dom =
      binary_dom(op, dt, wm_op_has_input(ctx, 1) ? ctx->in[1]->dtype : dt);
  if (!binary_has_fn(op, dom)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input 0 has unsupported type %s",
                       wm_dtype_name(ctx->in[0]->dtype));
  }
  if ((op->flags & BIN_DIVISOR) && dom != DOM_F) {
    for (size_t i = 0; i < ctx->in[1]->count; i++) {
      if (wm_tensor_get_i64(ctx->in[1], i) == 0) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "input 1 element %zu is 0 (integer division by "
                           "zero)",
                           i);
      }
    }
  }
  num_t *acc = wm_calloc(y->count, sizeof(num_t));
  if (!acc) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for %zu elements", y->count);
  }
  int32_t n = 0;
  for (int32_t k = 0; k < ctx->n_in; k++) {
    if (!wm_op_has_input(ctx, k)) {
      continue;
    }
    wm_shape_t s;
    wm_status_t st = operand_shape(ctx, k, &s);
    if (st) {
      free(acc);
      return st;
    }
    bcast_t b;
    bcast_init(&b, &s, &y->shape);
    for (size_t i = 0; i < y->count; i++) {
      num_t v = load(ctx->in[k], dom, bcast_at(&b, i));
      acc[i] = n == 0 ? v : binary_apply(op, dom, acc[i], v);
    }
    n++;
  }
  for (size_t i = 0; i < y->count; i++) {
    if (op->flags & BIN_MEAN) {
      acc[i].f /= n;
    }
    store(y, dom, i, acc[i]);
  }
  free(acc);
  return NULL;
}

// BitShift on any integer type (signed ones from opset 28): right shifts
// of signed values are arithmetic, left shifts drop the bits pushed past
// the width, and a shift count that is negative or not below the width
// leaves only the sign fill (-1 for a negative value shifted right, else
// 0).
static wm_status_t run_bitshift(wm_op_ctx_t *ctx) {
  if (!ctx->out[0]) {
    return NULL;  // output omitted: nothing to compute
  }
  const binary_op_t *op;
  WM_RETURN_IF_ERROR(find_binary(ctx, &op));
  bool right = op->variant == 1;
  const wm_tensor_t *x = ctx->in[0], *n = ctx->in[1];
  wm_tensor_t *y = ctx->out[0];
  bool is_signed = !wm_dtype_is_unsigned(x->dtype);
  uint64_t width = wm_dtype_bits(x->dtype);
  bcast_t bx, bn;
  bcast_init(&bx, &x->shape, &y->shape);
  bcast_init(&bn, &n->shape, &y->shape);
  for (size_t i = 0; i < y->count; i++) {
    int64_t a = wm_tensor_get_i64(x, bcast_at(&bx, i));
    int64_t k = wm_tensor_get_i64(n, bcast_at(&bn, i));
    // Unsigned counts are compared as unsigned (uint64 may look negative).
    bool out_of_range =
        is_signed ? k < 0 || (uint64_t)k >= width : (uint64_t)k >= width;
    int64_t r;
    if (out_of_range) {
      r = right && is_signed && a < 0 ? -1 : 0;
    } else if (!right) {
      r = (int64_t)((uint64_t)a << k);  // the store keeps the low bits
    } else if (is_signed) {
      r = a < 0 ? ~(~a >> k) : a >> k;  // arithmetic without UB
    } else {
      r = (int64_t)((uint64_t)a >> k);
    }
    wm_tensor_set_i64(y, i, r);
  }
  return NULL;
}

// One FLOP per output element and fold step (Mean adds its division);
// Pow counts one transcendental per element instead.
static void cost_binary(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  const binary_op_t *op = binary_ops;
  while (op->name && strcmp(op->name, ctx->node->op_type) != 0) {
    op++;
  }
  double n = (double)wm_op_out_numel(ctx);
  if (op->flags & BIN_TRANSC) {
    out->transcendentals = n;
    return;
  }
  int32_t steps = ctx->n_in - 1 + ((op->flags & BIN_MEAN) ? 1 : 0);
  out->flops = n * (steps > 0 ? steps : 0);
}

// -------------------------------------------------------- unary table

// One unary op; integers use |i| (or |u| for unsigned dtypes, falling back
// to |i| on the same bits) and otherwise go through |f| in double.
typedef struct unary_op {
  const char *name;         // op_type
  double (*f)(double);      // DOM_F
  int64_t (*i)(int64_t);    // DOM_I
  uint64_t (*u)(uint64_t);  // DOM_U
  uint8_t flops;            // cost per element
  uint8_t transc;           // transcendentals per element
} unary_op_t;

static double f_neg(double x) {
  return -x;
}
static double f_recip(double x) {
  return 1.0 / x;
}
static double f_sign(double x) {
  return x > 0 ? 1.0 : x < 0 ? -1.0 : x;
}
static double f_isnan(double x) {
  return isnan(x) ? 1.0 : 0.0;
}
static int64_t i_neg(int64_t x) {
  return (int64_t)(0 - (uint64_t)x);
}
static int64_t i_abs(int64_t x) {
  return x < 0 ? i_neg(x) : x;
}
static int64_t i_sign(int64_t x) {
  return (x > 0) - (x < 0);
}
static int64_t i_not(int64_t x) {
  return !x;
}
static uint64_t u_same(uint64_t x) {
  return x;
}
static uint64_t u_sign(uint64_t x) {
  return x != 0;
}
static uint64_t u_bnot(uint64_t x) {
  return ~x;
}

static const unary_op_t unary_ops[] = {
    {"Neg", f_neg, i_neg, NULL, 1, 0},
    {"Abs", fabs, i_abs, u_same, 1, 0},
    {"Sign", f_sign, i_sign, u_sign, 1, 0},
    {"Reciprocal", f_recip, NULL, NULL, 1, 0},
    {"Floor", floor, NULL, NULL, 1, 0},
    {"Ceil", ceil, NULL, NULL, 1, 0},
    {"Round", nearbyint, NULL, NULL, 1, 0},  // ties to even by default
    {"Not", NULL, i_not, NULL, 1, 0},
    {"BitwiseNot", NULL, NULL, u_bnot, 1, 0},
    {"IsNaN", f_isnan, NULL, NULL, 1, 0},
    {"Sqrt", sqrt, NULL, NULL, 0, 1},
    {"Exp", exp, NULL, NULL, 0, 1},
    {"Log", log, NULL, NULL, 0, 1},
    {"Sin", sin, NULL, NULL, 0, 1},
    {"Cos", cos, NULL, NULL, 0, 1},
    {"Tan", tan, NULL, NULL, 0, 1},
    {"Asin", asin, NULL, NULL, 0, 1},
    {"Acos", acos, NULL, NULL, 0, 1},
    {"Atan", atan, NULL, NULL, 0, 1},
    {"Sinh", sinh, NULL, NULL, 0, 1},
    {"Cosh", cosh, NULL, NULL, 0, 1},
    {"Tanh", tanh, NULL, NULL, 0, 1},
    {"Asinh", asinh, NULL, NULL, 0, 1},
    {"Acosh", acosh, NULL, NULL, 0, 1},
    {"Atanh", atanh, NULL, NULL, 0, 1},
    {"Erf", erf, NULL, NULL, 0, 1},
    {NULL, NULL, NULL, NULL, 0, 0},
};

static const unary_op_t *find_unary(const char *name) {
  for (const unary_op_t *u = unary_ops; u->name; u++) {
    if (strcmp(u->name, name) == 0) {
      return u;
    }
  }
  return NULL;
}

// The domain a unary op computes |dtype| in; false if it cannot.
static bool unary_dom(const unary_op_t *op, wm_dtype_t dtype, dom_t *out) {
  *out = dom_of(dtype);
  if (*out != DOM_F && !op->i && !op->u) {
    *out = DOM_F;  // e.g. Erf on integers: computed in double
  }
  return dtype != WM_DTYPE_STRING && (*out == DOM_F ? op->f != NULL : true);
}

// Output 0 has the shape of input 0 and |dtype| (UNDEFINED: input's).
static wm_status_t infer_unary_as(wm_op_ctx_t *ctx, wm_dtype_t dtype) {
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  const unary_op_t *op = find_unary(ctx->node->op_type);
  dom_t dom;
  if (op && dt != WM_DTYPE_UNDEFINED && !unary_dom(op, dt, &dom)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input 0 has unsupported type %s",
                       wm_dtype_name(dt));
  }
  wm_op_set_out(ctx, 0, dtype != WM_DTYPE_UNDEFINED ? dtype : dt,
                wm_op_in_shape(ctx, 0));
  return NULL;
}

static wm_status_t infer_unary(wm_op_ctx_t *ctx) {
  return infer_unary_as(ctx, WM_DTYPE_UNDEFINED);
}

static wm_status_t infer_to_bool(wm_op_ctx_t *ctx) {
  return infer_unary_as(ctx, WM_DTYPE_BOOL);
}

static wm_status_t run_unary(wm_op_ctx_t *ctx) {
  if (!ctx->out[0]) {
    return NULL;  // output omitted: nothing to compute
  }
  const unary_op_t *op = find_unary(ctx->node->op_type);
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  dom_t dom;
  if (!op || !unary_dom(op, x->dtype, &dom)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input 0 has unsupported type %s",
                       wm_dtype_name(x->dtype));
  }
  for (size_t i = 0; i < y->count; i++) {
    num_t v = load(x, dom, i);
    if (dom == DOM_F) {
      v.f = op->f(v.f);
    } else if ((dom == DOM_I && op->i) || !op->u) {
      v.i = op->i(v.i);
    } else {
      v.u = op->u(v.u);
    }
    store(y, dom, i, v);
  }
  return NULL;
}

static void cost_unary(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  const unary_op_t *op = find_unary(ctx->node->op_type);
  double n = (double)wm_op_out_numel(ctx);
  out->flops = op ? n * op->flops : n;
  out->transcendentals = op ? n * op->transc : 0;
}

// IsInf: detect_negative and detect_positive select the signs reported.
static wm_status_t run_isinf(wm_op_ctx_t *ctx) {
  if (!ctx->out[0]) {
    return NULL;  // output omitted: nothing to compute
  }
  bool neg = wm_node_attr_int(ctx->node, "detect_negative", 1) != 0;
  bool pos = wm_node_attr_int(ctx->node, "detect_positive", 1) != 0;
  wm_tensor_t *y = ctx->out[0];
  for (size_t i = 0; i < y->count; i++) {
    double v = wm_tensor_get_f64(ctx->in[0], i);
    wm_tensor_set_i64(y, i, isinf(v) && (v > 0 ? pos : neg));
  }
  return NULL;
}

// ------------------------------------------------------------- Where

static wm_status_t infer_where(wm_op_ctx_t *ctx) {
  wm_dtype_t c = wm_op_in_dtype(ctx, 0);
  if (c != WM_DTYPE_UNDEFINED && c != WM_DTYPE_BOOL) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "condition has type %s, want bool", wm_dtype_name(c));
  }
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, 1, 2));
  wm_shape_t shape;
  WM_RETURN_IF_ERROR(broadcast_inputs(ctx, &shape));
  wm_op_set_out(ctx, 0, wm_op_in_dtype(ctx, 1), &shape);
  return NULL;
}

// Copies elements bytewise, so every dtype works; strings are copied.
static wm_status_t run_where(wm_op_ctx_t *ctx) {
  if (!ctx->out[0]) {
    return NULL;  // output omitted: nothing to compute
  }
  wm_tensor_t *y = ctx->out[0];
  bcast_t b[3];
  for (int32_t k = 0; k < 3; k++) {
    bcast_init(&b[k], &ctx->in[k]->shape, &y->shape);
  }
  size_t es = wm_dtype_size(y->dtype);
  for (size_t i = 0; i < y->count; i++) {
    int32_t k = wm_tensor_get_i64(ctx->in[0], bcast_at(&b[0], i)) ? 1 : 2;
    size_t off = bcast_at(&b[k], i);
    if (y->dtype == WM_DTYPE_STRING) {
      const char *s = ((char *const *)ctx->in[k]->data)[off];
      WM_RETURN_IF_ERROR(
          wm_tensor_set_string(y, i, s ? s : "", s ? strlen(s) : 0));
    } else {
      memcpy((char *)y->data + i * es,
             (const char *)ctx->in[k]->data + off * es, es);
    }
  }
  return NULL;
}

// -------------------------------------------------------------- Clip

// Clip bounds come from attributes min/max before opset 11 and from the
// optional scalar inputs 1 and 2 since.
static wm_status_t clip_bounds(const wm_op_ctx_t *ctx, dom_t dom, num_t *lo,
                               num_t *hi) {
  if (dom == DOM_F) {
    lo->f = -INFINITY;
    hi->f = INFINITY;
  } else if (dom == DOM_U) {
    lo->u = 0;
    hi->u = UINT64_MAX;
  } else {
    lo->i = INT64_MIN;
    hi->i = INT64_MAX;
  }
  if (ctx->opset < 11) {
    lo->f = wm_node_attr_float(ctx->node, "min", (float)lo->f);
    hi->f = wm_node_attr_float(ctx->node, "max", (float)hi->f);
    return NULL;
  }
  for (int32_t k = 1; k <= 2; k++) {
    if (!wm_op_has_input(ctx, k) || !ctx->in[k]) {
      continue;
    }
    if (ctx->in[k]->count != 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d (%s) has %zu elements, want a scalar", k,
                         k == 1 ? "min" : "max", ctx->in[k]->count);
    }
    *(k == 1 ? lo : hi) = load(ctx->in[k], dom, 0);
  }
  return NULL;
}

// Parameters before opset 11, where the bounds are attributes: min and
// max (the float range when absent); from 11 they are inputs 1 and 2.
static wm_status_t resolve_clip(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  if (ctx->opset >= 11) {
    return NULL;
  }
  WM_RETURN_IF_ERROR(wm_op_param_float(
      ctx, out, "min", wm_node_attr_float(ctx->node, "min", -INFINITY)));
  return wm_op_param_float(ctx, out, "max",
                           wm_node_attr_float(ctx->node, "max", INFINITY));
}

static wm_status_t infer_clip(wm_op_ctx_t *ctx) {
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (ctx->opset < 11 && dt != WM_DTYPE_UNDEFINED && !wm_dtype_is_float(dt)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has type %s, want a float type before "
                       "opset 11",
                       wm_dtype_name(dt));
  }
  for (int32_t k = 1; k < ctx->n_in; k++) {
    WM_RETURN_IF_ERROR(check_same_dtype(ctx, 0, k));
  }
  for (int32_t k = 1; k < ctx->n_in; k++) {
    if (wm_op_has_input(ctx, k) && ctx->in[k] && ctx->in[k]->count != 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d (%s) has %zu elements, want a scalar", k,
                         k == 1 ? "min" : "max", ctx->in[k]->count);
    }
  }
  return wm_op_infer_same(ctx);
}

static wm_status_t run_clip(wm_op_ctx_t *ctx) {
  if (!ctx->out[0]) {
    return NULL;  // output omitted: nothing to compute
  }
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  dom_t dom = dom_of(x->dtype);
  num_t lo, hi;
  WM_RETURN_IF_ERROR(clip_bounds(ctx, dom, &lo, &hi));
  for (size_t i = 0; i < y->count; i++) {
    num_t v = load(x, dom, i);
    if (num_lt(dom, v, lo)) {
      v = lo;
    }
    if (num_lt(dom, hi, v)) {
      v = hi;
    }
    store(y, dom, i, v);
  }
  return NULL;
}

// -------------------------------------------------------------- Cast

// The target dtype: attribute "to" (a name such as "FLOAT" in opset 1),
// or the dtype of input 1 for CastLike (UNDEFINED while unknown).
static wm_status_t cast_target(const wm_op_ctx_t *ctx, wm_dtype_t *out) {
  *out = WM_DTYPE_UNDEFINED;
  if (strcmp(ctx->node->op_type, "CastLike") == 0) {
    *out = wm_op_in_dtype(ctx, 1);
    return NULL;
  }
  const wm_attr_t *to = wm_node_attr(ctx->node, "to");
  if (to && to->type == WM_ATTR_STRING) {  // opset 1 names the type
    for (int32_t d = 1; d < WM_DTYPE_COUNT; d++) {
      if (strcasecmp(to->s, wm_dtype_name((wm_dtype_t)d)) == 0) {
        *out = (wm_dtype_t)d;
        return NULL;
      }
    }
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"to\" is \"%s\", not a known dtype", to->s);
  }
  if (!to || to->type != WM_ATTR_INT) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"to\" is missing or not an int");
  }
  int64_t v = to->i;
  if (v <= 0 || !wm_dtype_is_valid(v)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"to\" is %lld, not a known dtype",
                       (long long)v);
  }
  *out = (wm_dtype_t)v;
  return NULL;
}

// The compute definition of a Cast to float32 from float32, double, the
// integers up to 32 bits, int64 and bool: a load converted (through
// double, as run_cast converts).
static wm_status_t define_cast(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  wm_dtype_t to;
  WM_RETURN_IF_ERROR(cast_target(ctx, &to));
  const wm_type_t *yt = &ctx->out_types[0];
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  if (to != WM_DTYPE_FLOAT || yt->dtype != WM_DTYPE_FLOAT ||
      !wm_shape_is_known(xs)) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (a cast to "
                       "float32 of known shape)");
  }
  WM_RETURN_IF_ERROR(
      wm_gen_begin(out, ctx->node->op_type, xs->rank, xs->dims, NULL));
  int32_t x;
  WM_RETURN_IF_ERROR(wm_gen_input(out, "X", xs->rank, xs->dims, &x));
  wm_status_t st = wm_gen_input_dtype(out, x, wm_op_in_dtype(ctx, 0));
  if (st) {  // a dtype the generator does not read (strings, minifloats)
    wm_status_free(st);
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for a cast from %s",
                       wm_dtype_name(wm_op_in_dtype(ctx, 0)));
  }
  out->tensors[out->n_tensors - 1].operand = 0;
  return wm_gen_finish(out, x);
}

// The compute definition of Where on float32: select(condition, X, Y),
// the three broadcast to the output.
static wm_status_t define_where(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  const wm_type_t *yt = &ctx->out_types[0];
  bool ok = yt->dtype == WM_DTYPE_FLOAT && wm_shape_is_known(&yt->shape);
  for (int32_t i = 0; i < 3; i++) {
    ok &= wm_shape_is_known(wm_op_in_shape(ctx, i)) &&
          wm_op_in_dtype(ctx, i) == (i ? WM_DTYPE_FLOAT : WM_DTYPE_BOOL);
  }
  if (!ok) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 "
                       "values of known shape)");
  }
  WM_RETURN_IF_ERROR(
      wm_gen_begin(out, "Where", yt->shape.rank, yt->shape.dims, NULL));
  int32_t v[3];
  static const char *const names[3] = {"C", "A", "B"};
  for (int32_t i = 0; i < 3; i++) {
    const wm_shape_t *s = wm_op_in_shape(ctx, i);
    WM_RETURN_IF_ERROR(wm_gen_input(out, names[i], s->rank, s->dims, &v[i]));
  }
  WM_RETURN_IF_ERROR(wm_gen_input_dtype(out, v[0], WM_DTYPE_BOOL));
  int32_t y;
  WM_RETURN_IF_ERROR(wm_gen_select(out, v[0], v[1], v[2], &y));
  return wm_gen_finish(out, y);
}

// How values convert to the minifloats: attributes "saturate" (opset 19)
// and "round_mode" (opset 24), which only matter for those targets.
typedef struct cast_mode {
  bool saturate;          // clamp out-of-range values to the largest finite
  wm_round_mode_t round;  // FLOAT8E8M0 rounding
} cast_mode_t;

static wm_status_t cast_mode(const wm_op_ctx_t *ctx, cast_mode_t *out) {
  out->saturate = true;
  out->round = WM_ROUND_UP;
  const wm_attr_t *sat = wm_node_attr(ctx->node, "saturate");
  if (sat) {
    if (sat->type != WM_ATTR_INT || (sat->i != 0 && sat->i != 1)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute \"saturate\" must be the int 0 or 1");
    }
    out->saturate = sat->i != 0;
  }
  const wm_attr_t *round = wm_node_attr(ctx->node, "round_mode");
  if (round) {
    static const char *const names[] = {"up", "down", "nearest"};
    const char *name = round->type == WM_ATTR_STRING ? round->s : NULL;
    size_t k = 0;
    while (name && k < 3 && strcmp(name, names[k]) != 0) {
      k++;
    }
    if (!name || k == 3) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute \"round_mode\" is %s%s%s, want \"up\", "
                         "\"down\" or \"nearest\"",
                         name ? "\"" : "", name ? name : "not a string",
                         name ? "\"" : "");
    }
    out->round = (wm_round_mode_t)k;
  }
  return NULL;
}

static wm_status_t infer_cast(wm_op_ctx_t *ctx) {
  wm_dtype_t to;
  WM_RETURN_IF_ERROR(cast_target(ctx, &to));
  cast_mode_t mode;
  WM_RETURN_IF_ERROR(cast_mode(ctx, &mode));
  wm_dtype_t from = wm_op_in_dtype(ctx, 0);
  if (to == WM_DTYPE_COMPLEX64 || to == WM_DTYPE_COMPLEX128 ||
      from == WM_DTYPE_COMPLEX64 || from == WM_DTYPE_COMPLEX128) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED, "cast from %s to %s",
                       wm_dtype_name(from), wm_dtype_name(to));
  }
  wm_op_set_out(ctx, 0, to, wm_op_in_shape(ctx, 0));
  return NULL;
}

// Shortest decimal that reads back as |v| in |dtype|, written the way
// numpy prints (positional for 1e-4 <= |v| < 1e16, else scientific).
static void format_float(double v, wm_dtype_t dtype, char *buf, size_t n) {
  if (isnan(v) || isinf(v)) {
    snprintf(buf, n, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
    return;
  }
  char e[40];
  for (int p = 1; p <= 17; p++) {
    snprintf(e, sizeof(e), "%.*e", p - 1, v);
    uint64_t tmp = 0;
    wm_store_f64(dtype, &tmp, 0, strtod(e, NULL));
    if (wm_load_f64(dtype, &tmp, 0) == v) {
      break;
    }
  }
  // e is "[-]d[.ddd]e[+-]XX": collect the digits and the exponent.
  char digits[24];
  int nd = 0;
  const char *c = e + (e[0] == '-');
  for (; *c && *c != 'e' && nd < 23; c++) {
    if (*c != '.') {
      digits[nd++] = *c;
    }
  }
  digits[nd] = '\0';
  int x10 = *c == 'e' ? atoi(c + 1) : 0;
  char out[64];
  size_t k = 0;
  if (signbit(v)) {
    out[k++] = '-';
  }
  if (x10 < -4 || x10 >= 16) {
    out[k++] = digits[0];
    if (nd > 1) {
      out[k++] = '.';
      memcpy(out + k, digits + 1, (size_t)nd - 1);
      k += (size_t)nd - 1;
    }
    snprintf(out + k, sizeof(out) - k, "e%c%02d", x10 < 0 ? '-' : '+',
             abs(x10));
  } else {
    // Digit j has power x10 - j; write powers from the integer part (at
    // least "0") down past the point (at least one fraction digit).
    int lo = x10 - (nd - 1) < -1 ? x10 - (nd - 1) : -1;
    for (int pw = x10 > 0 ? x10 : 0; pw >= lo; pw--) {
      int j = x10 - pw;
      out[k++] = j >= 0 && j < nd ? digits[j] : '0';
      if (pw == 0) {
        out[k++] = '.';
      }
    }
    out[k] = '\0';
  }
  snprintf(buf, n, "%s", out);
}

// Parses string element |i| as a number for |dtype|; sets |*dom|.
static wm_status_t parse_number(const wm_op_ctx_t *ctx, size_t i, const char *s,
                                wm_dtype_t dtype, num_t *out, dom_t *dom) {
  char *end = NULL;
  errno = 0;
  *dom = dtype == WM_DTYPE_BOOL ? DOM_F : dom_of(dtype);
  if (*dom == DOM_F) {
    out->f = dtype == WM_DTYPE_FLOAT ? strtof(s, &end) : strtod(s, &end);
    errno = 0;  // overflow to inf and underflow are fine for floats
  } else if (*dom == DOM_U) {
    out->u = strtoull(s, &end, 10);
  } else {
    out->i = strtoll(s, &end, 10);
  }
  while (end && *end == ' ') {
    end++;
  }
  if (!end || end == s || *end || errno) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "element %zu \"%s\" is not a valid %s", i, s,
                       wm_dtype_name(dtype));
  }
  return NULL;
}

// Stores |v| of domain |dom| into element |i| of |t| like store(), with
// Cast's saturation and rounding for the minifloats.
static void cast_store(wm_tensor_t *t, dom_t dom, size_t i, num_t v,
                       const cast_mode_t *mode) {
  if (!wm_dtype_is_minifloat(t->dtype)) {
    store(t, dom, i, v);
    return;
  }
  double f = dom == DOM_F ? v.f : dom == DOM_U ? (double)v.u : (double)v.i;
  ((uint8_t *)t->data)[i] =
      wm_f64_to_minifloat(t->dtype, f, mode->saturate, mode->round);
}

// Conversions to and from strings.
static wm_status_t cast_string(wm_op_ctx_t *ctx, const cast_mode_t *mode) {
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  dom_t dom = dom_of(x->dtype);
  for (size_t i = 0; i < y->count; i++) {
    if (x->dtype == WM_DTYPE_STRING) {
      const char *s = ((char *const *)x->data)[i];
      s = s ? s : "";
      if (y->dtype == WM_DTYPE_STRING) {
        WM_RETURN_IF_ERROR(wm_tensor_set_string(y, i, s, strlen(s)));
        continue;
      }
      num_t v;
      dom_t d;
      WM_RETURN_IF_ERROR(parse_number(ctx, i, s, y->dtype, &v, &d));
      cast_store(y, d, i, v, mode);
      continue;
    }
    char buf[64];
    num_t v = load(x, dom, i);
    if (x->dtype == WM_DTYPE_BOOL) {
      snprintf(buf, sizeof(buf), "%s", v.i ? "True" : "False");
    } else if (dom == DOM_F) {
      format_float(v.f, x->dtype, buf, sizeof(buf));
    } else if (dom == DOM_U) {
      snprintf(buf, sizeof(buf), "%" PRIu64, v.u);
    } else {
      snprintf(buf, sizeof(buf), "%" PRId64, v.i);
    }
    WM_RETURN_IF_ERROR(wm_tensor_set_string(y, i, buf, strlen(buf)));
  }
  return NULL;
}

static wm_status_t run_cast(wm_op_ctx_t *ctx) {
  if (!ctx->out[0]) {
    return NULL;  // output omitted: nothing to compute
  }
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  cast_mode_t mode;
  WM_RETURN_IF_ERROR(cast_mode(ctx, &mode));
  if (x->dtype == WM_DTYPE_STRING || y->dtype == WM_DTYPE_STRING) {
    return cast_string(ctx, &mode);
  }
  dom_t dom = dom_of(x->dtype);
  for (size_t i = 0; i < y->count; i++) {
    cast_store(y, dom, i, load(x, dom, i), &mode);
  }
  return NULL;
}

// ------------------------------------------------------------- table

#define SIGNED_OR_FLOAT \
  (WM_TYPES_FLOAT | WM_T(INT8) | WM_T(INT16) | WM_T(INT32) | WM_T(INT64))
#define UNSIGNED (WM_T(UINT8) | WM_T(UINT16) | WM_T(UINT32) | WM_T(UINT64))
#define COMPARABLE (WM_TYPES_NUMERIC | WM_T(BOOL))
#define CASTABLE                                                \
  (WM_TYPES_ALL | WM_T(FLOAT8E4M3FN) | WM_T(FLOAT8E4M3FNUZ) |   \
   WM_T(FLOAT8E5M2) | WM_T(FLOAT8E5M2FNUZ) | WM_T(FLOAT8E8M0) | \
   WM_T(FLOAT4E2M1) | WM_T(UINT4) | WM_T(INT4) | WM_T(UINT2) | WM_T(INT2))

// ------------------------------------------------- compute definitions

// The generator's operation for each operator defined by a fold of one
// operation over its inputs (src/gen).
static const struct {
  const char *name;
  wm_gen_op_t op;
} kFolds[] = {
    {"Add", WM_GEN_ADD},     {"Sub", WM_GEN_SUB},     {"Mul", WM_GEN_MUL},
    {"Div", WM_GEN_DIV},     {"Min", WM_GEN_MIN},     {"Max", WM_GEN_MAX},
    {"Sum", WM_GEN_ADD},     {"Neg", WM_GEN_NEG},     {"Abs", WM_GEN_ABS},
    {"Sqrt", WM_GEN_SQRT},   {"Exp", WM_GEN_EXP},     {"Log", WM_GEN_LOG},
    {"Tanh", WM_GEN_TANH},   {"Pow", WM_GEN_POW},     {"Floor", WM_GEN_FLOOR},
    {"Ceil", WM_GEN_CEIL},   {"Sin", WM_GEN_SIN},     {"Cos", WM_GEN_COS},
    {"Erf", WM_GEN_ERF},     {"Sign", WM_GEN_SIGN},   {"Round", WM_GEN_ROUND},
    {"Tan", WM_GEN_TAN},     {"Asin", WM_GEN_ASIN},   {"Acos", WM_GEN_ACOS},
    {"Atan", WM_GEN_ATAN},   {"Sinh", WM_GEN_SINH},   {"Cosh", WM_GEN_COSH},
    {"Asinh", WM_GEN_ASINH}, {"Acosh", WM_GEN_ACOSH}, {"Atanh", WM_GEN_ATANH},
};

static wm_status_t define_fold(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  for (size_t i = 0; i < sizeof(kFolds) / sizeof(kFolds[0]); i++) {
    if (strcmp(ctx->node->op_type, kFolds[i].name) == 0) {
      return wm_op_define_fold(ctx, kFolds[i].op, out);
    }
  }
  return WM_OP_ERROR(ctx, INTERNAL, "no compute definition");
}

// Mod with fmod 1 on floats: C's fmod (the integer Mod and fmod 0 are
// not defined).
static wm_status_t define_mod(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  if (wm_node_attr_int(ctx->node, "fmod", 0) != 1) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for Mod with fmod 0");
  }
  return wm_op_define_fold(ctx, WM_GEN_FMOD, out);
}

// Clip from opset 11: x raised to min, then lowered to max (a NaN stays),
// the bounds scalar inputs (absent: none).
static wm_status_t define_clip(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  if (ctx->opset < 11) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for Clip before opset 11");
  }
  int32_t loads[WM_GEN_MAX_TENSORS];
  WM_RETURN_IF_ERROR(wm_op_define_inputs(ctx, out, loads));
  wm_gen_builder_t b = {out, NULL};
  int32_t y = loads[0];  // raised to min, then lowered to max
  if (loads[1] >= 0) {
    y = wm_gen_sel(&b, wm_gen_f2(&b, WM_GEN_LT, y, loads[1]), loads[1], y);
  }
  if (loads[2] >= 0) {
    y = wm_gen_sel(&b, wm_gen_f2(&b, WM_GEN_GT, y, loads[2]), loads[2], y);
  }
  WM_RETURN_IF_ERROR(b.st);
  return wm_gen_finish(out, y);
}

// Mean: the inputs' sum over their count.
static wm_status_t define_mean(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  int32_t body, n, count;
  WM_RETURN_IF_ERROR(wm_op_define_fold_body(ctx, WM_GEN_ADD, out, &body, &n));
  WM_RETURN_IF_ERROR(wm_gen_const(out, (float)n, &count));
  WM_RETURN_IF_ERROR(wm_gen_binary(out, WM_GEN_DIV, body, count, &body));
  return wm_gen_finish(out, body);
}

// Reciprocal: 1 / x.
static wm_status_t define_reciprocal(const wm_op_ctx_t *ctx,
                                     wm_gen_compute_t *out) {
  int32_t loads[WM_GEN_MAX_TENSORS], one, body;
  WM_RETURN_IF_ERROR(wm_op_define_inputs(ctx, out, loads));
  WM_RETURN_IF_ERROR(wm_gen_const(out, 1.0f, &one));
  WM_RETURN_IF_ERROR(wm_gen_binary(out, WM_GEN_DIV, one, loads[0], &body));
  return wm_gen_finish(out, body);
}

// ---------------------------------------------------------------- table

#define BINARY(name, since, types) \
  { name, "", since, 2, 2, 1, 1, types, infer_binary, run_binary, cost_binary }
#define VARIADIC(name, types) \
  { name, "", 1, 1, -1, 1, 1, types, infer_binary, run_binary, cost_binary }
#define UNARY(name, since, types) \
  { name, "", since, 1, 1, 1, 1, types, infer_unary, run_unary, cost_unary }
// The same with a compute definition |define|.
#define BINARY_D(name, since, types, define)                                   \
  {                                                                            \
    name, "", since, 2, 2, 1, 1, types, infer_binary, run_binary, cost_binary, \
        0, NULL, define                                                        \
  }
#define VARIADIC_D(name, types, define)                                        \
  {                                                                            \
    name, "", 1, 1, -1, 1, 1, types, infer_binary, run_binary, cost_binary, 0, \
        NULL, define                                                           \
  }
#define UNARY_D(name, since, types, define)                                    \
  {                                                                            \
    name, "", since, 1, 1, 1, 1, types, infer_unary, run_unary, cost_unary, 0, \
        NULL, define                                                           \
  }

// Cast, CastLike and Where move data: no arithmetic is counted.
// Comparisons, logic and Clip count one operation per output element.
const wm_op_def_t wm_ops_math[] = {
    BINARY_D("Add", 1, WM_TYPES_NUMERIC, define_fold),
    BINARY_D("Sub", 1, WM_TYPES_NUMERIC, define_fold),
    BINARY_D("Mul", 1, WM_TYPES_NUMERIC, define_fold),
    BINARY_D("Div", 1, WM_TYPES_NUMERIC, define_fold),
    BINARY_D("Pow", 1, WM_TYPES_FLOAT | WM_T(INT32) | WM_T(INT64), define_fold),
    BINARY_D("Mod", 10, WM_TYPES_NUMERIC, define_mod),
    BINARY("Equal", 1, COMPARABLE),
    BINARY("Equal", 19, COMPARABLE | WM_T(STRING)),
    BINARY("Less", 1, WM_TYPES_NUMERIC),
    BINARY("Greater", 1, WM_TYPES_NUMERIC),
    BINARY("LessOrEqual", 12, WM_TYPES_NUMERIC),
    BINARY("GreaterOrEqual", 12, WM_TYPES_NUMERIC),
    BINARY("And", 1, WM_T(BOOL)),
    BINARY("Or", 1, WM_T(BOOL)),
    BINARY("Xor", 1, WM_T(BOOL)),
    {"BitShift", "", 11, 2, 2, 1, 1, UNSIGNED, infer_binary, run_bitshift,
     cost_binary},
    {"BitShift", "", 28, 2, 2, 1, 1, WM_TYPES_INT, infer_binary, run_bitshift,
     cost_binary},
    BINARY("BitwiseAnd", 18, WM_TYPES_INT),
    BINARY("BitwiseOr", 18, WM_TYPES_INT),
    BINARY("BitwiseXor", 18, WM_TYPES_INT),
    VARIADIC_D("Min", WM_TYPES_NUMERIC, define_fold),
    VARIADIC_D("Max", WM_TYPES_NUMERIC, define_fold),
    VARIADIC_D("Sum", WM_TYPES_FLOAT, define_fold),
    VARIADIC_D("Mean", WM_TYPES_FLOAT, define_mean),
    UNARY_D("Neg", 1, SIGNED_OR_FLOAT, define_fold),
    UNARY_D("Abs", 1, WM_TYPES_NUMERIC, define_fold),
    UNARY_D("Sign", 9, WM_TYPES_NUMERIC, define_fold),
    UNARY_D("Reciprocal", 1, WM_TYPES_FLOAT, define_reciprocal),
    UNARY_D("Floor", 1, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Ceil", 1, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Round", 11, WM_TYPES_FLOAT, define_fold),
    UNARY("Not", 1, WM_T(BOOL)),
    UNARY("BitwiseNot", 18, WM_TYPES_INT),
    UNARY_D("Sqrt", 1, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Exp", 1, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Log", 1, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Sin", 7, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Cos", 7, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Tan", 7, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Asin", 7, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Acos", 7, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Atan", 7, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Sinh", 9, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Cosh", 9, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Tanh", 1, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Asinh", 9, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Acosh", 9, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Atanh", 9, WM_TYPES_FLOAT, define_fold),
    UNARY_D("Erf", 9, WM_TYPES_NUMERIC, define_fold),
    {"IsNaN", "", 9, 1, 1, 1, 1, WM_TYPES_FLOAT, infer_to_bool, run_unary,
     cost_unary},
    {"IsInf", "", 10, 1, 1, 1, 1, WM_TYPES_FLOAT, infer_to_bool, run_isinf,
     NULL},
    {"Where", "", 9, 3, 3, 1, 1, WM_T(BOOL), infer_where, run_where,
     wm_op_cost_zero, 0, NULL, define_where},
    {"Clip", "", 1, 1, 3, 1, 1, WM_TYPES_NUMERIC, infer_clip, run_clip, NULL, 0,
     resolve_clip, define_clip},
    {"Cast", "", 1, 1, 1, 1, 1, CASTABLE, infer_cast, run_cast, wm_op_cost_zero,
     0, NULL, define_cast},
    {"CastLike", "", 15, 2, 2, 1, 1, CASTABLE, infer_cast, run_cast,
     wm_op_cost_zero, 0, NULL, define_cast},
    WM_OPS_END,
};
