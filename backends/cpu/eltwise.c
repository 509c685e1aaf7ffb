// Elementwise kernels of the cpu backend: binary arithmetic with ONNX
// multidirectional broadcasting, unary math and activations, and Clip.
//
// Broadcasting is planned once: operand dims are right-aligned to the
// output, dims of size 1 in the output are dropped, and neighbouring dims
// where each operand is either fully present or broadcast alike are merged.
// What is left is a short list of dims whose innermost one is a contiguous
// run (vector-vector, vector-scalar or scalar-vector); runs are walked by
// an odometer over the outer dims, and threads split the flat output range.

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

// ------------------------------------------------------- transcendentals

// Gelu 0.5 x (1 + erf(x / sqrt 2)); for x < 0 through erfc, so the tail
// keeps its relative accuracy.
static inline float k_gelu_erf(float x) {
  float u = x * 0.70710678118654752440f;
  float au = fabsf(u);
  float c = k_erfcf_big(au > 0.5f ? au : 0.5f);  // erfc(|u|)
  float one_plus = x < 0 ? c : 2.0f - c;         // 1 + erf(u)
  one_plus = au < 0.5f ? 1.0f + u * k_erf_small(u) : one_plus;
  return 0.5f * x * one_plus;
}

// Gelu's tanh form 0.5 x (1 + tanh(y)) written as x / (1 + e^-2y), the
// same function without the cancellation for negative x.
static inline float k_gelu_tanh(float x) {
  float y = 0.79788456080286535588f * (x + 0.044715f * x * x * x);
  return x / (1.0f + k_expf(-2.0f * y));
}

// ------------------------------------------------------------- binary

enum { MODE_VV = 0, MODE_VS = 1, MODE_SV = 2 };

// A loop over |n| elements: a and b per |mode|, y contiguous.
typedef void (*bin_fn)(const void *a, const void *b, void *y, size_t n,
                       int mode);

// A loop over |n| elements of T into elements of TY: a and b per |mode|,
// y contiguous.
#define BIN_LOOP_TY(NAME, T, TY, EXPR)                                \
  K_CLONES static void NAME(const void *va, const void *vb, void *vy, \
                            size_t n, int mode) {                     \
    const T *restrict a = va;                                         \
    const T *restrict b = vb;                                         \
    TY *restrict y = vy;                                              \
    if (mode == MODE_VV) {                                            \
      for (size_t i = 0; i < n; i++) {                                \
        T x = a[i], z = b[i];                                         \
        y[i] = (TY)(EXPR);                                            \
      }                                                               \
    } else if (mode == MODE_VS) {                                     \
      T z = b[0];                                                     \
      for (size_t i = 0; i < n; i++) {                                \
        T x = a[i];                                                   \
        y[i] = (TY)(EXPR);                                            \
      }                                                               \
    } else {                                                          \
      T x = a[0];                                                     \
      for (size_t i = 0; i < n; i++) {                                \
        T z = b[i];                                                   \
        y[i] = (TY)(EXPR);                                            \
      }                                                               \
    }                                                                 \
  }

#define BIN_LOOP(NAME, T, EXPR) BIN_LOOP_TY(NAME, T, T, EXPR)

BIN_LOOP(f32_add, float, x + z)
BIN_LOOP(f32_sub, float, x - z)
BIN_LOOP(f32_mul, float, x *z)
BIN_LOOP(f32_div, float, x / z)
BIN_LOOP(f32_pow_any, float, powf(x, z))

// x^z; a scalar exponent of 2, 3, 1, 0.5 or -1 (x^3 in GELU's tanh form,
// squares in norms) by multiplication, a square root or a division:
// within an ulp or two of powf and tens of times faster.
static void f32_pow(const void *va, const void *vb, void *vy, size_t n,
                    int mode) {
  const float *restrict a = va;
  float *restrict y = vy;
  float z = mode == MODE_VS ? ((const float *)vb)[0] : 0.0f;
  if (mode != MODE_VS ||
      (z != 2.0f && z != 3.0f && z != 1.0f && z != 0.5f && z != -1.0f)) {
    f32_pow_any(va, vb, vy, n, mode);
  } else if (z == 2.0f) {
    for (size_t i = 0; i < n; i++) {
      y[i] = a[i] * a[i];
    }
  } else if (z == 3.0f) {
    for (size_t i = 0; i < n; i++) {
      y[i] = a[i] * a[i] * a[i];
    }
  } else if (z == 1.0f) {
    for (size_t i = 0; i < n; i++) {
      y[i] = a[i];
    }
  } else if (z == 0.5f) {
    // powf(-0, 0.5) is +0 and powf(-inf, 0.5) is +inf; sqrtf gives -0 and
    // NaN there.
    for (size_t i = 0; i < n; i++) {
      float x = a[i];
      y[i] = x == 0.0f ? 0.0f : x == -INFINITY ? INFINITY : sqrtf(x);
    }
  } else {
    for (size_t i = 0; i < n; i++) {
      y[i] = 1.0f / a[i];
    }
  }
}
BIN_LOOP(f32_max, float, (x > z || x != x) ? x : z)
BIN_LOOP(f32_min, float, (x < z || x != x) ? x : z)
BIN_LOOP(f64_add, double, x + z)
BIN_LOOP(f64_sub, double, x - z)
BIN_LOOP(f64_mul, double, x *z)
BIN_LOOP(f64_div, double, x / z)
BIN_LOOP(f64_pow, double, pow(x, z))
BIN_LOOP(f64_max, double, (x > z || x != x) ? x : z)
BIN_LOOP(f64_min, double, (x < z || x != x) ? x : z)

// Integers wrap like the reference: arithmetic on an unsigned type |U| at
// least as wide, truncated back to |T|.
#define INT_LOOPS(S, T, U)               \
  BIN_LOOP(S##_add, T, (T)((U)x + (U)z)) \
  BIN_LOOP(S##_sub, T, (T)((U)x - (U)z)) \
  BIN_LOOP(S##_mul, T, (T)((U)x * (U)z)) \
  BIN_LOOP(S##_max, T, x > z ? x : z)    \
  BIN_LOOP(S##_min, T, x < z ? x : z)

INT_LOOPS(i8, int8_t, uint32_t)
INT_LOOPS(u8, uint8_t, uint32_t)
INT_LOOPS(i16, int16_t, uint32_t)
INT_LOOPS(u16, uint16_t, uint32_t)
INT_LOOPS(i32, int32_t, uint32_t)
INT_LOOPS(u32, uint32_t, uint32_t)
INT_LOOPS(i64, int64_t, uint64_t)
INT_LOOPS(u64, uint64_t, uint64_t)

// Comparisons into bool (one byte, 0 or 1): a NaN compares false to
// everything, as the reference's double compare does.
#define CMP_LOOPS(S, T)                   \
  BIN_LOOP_TY(S##_eq, T, uint8_t, x == z) \
  BIN_LOOP_TY(S##_lt, T, uint8_t, x < z)  \
  BIN_LOOP_TY(S##_gt, T, uint8_t, x > z)  \
  BIN_LOOP_TY(S##_le, T, uint8_t, x <= z) \
  BIN_LOOP_TY(S##_ge, T, uint8_t, x >= z)

CMP_LOOPS(f32, float)
CMP_LOOPS(f64, double)
CMP_LOOPS(i8, int8_t)
CMP_LOOPS(u8, uint8_t)
CMP_LOOPS(i16, int16_t)
CMP_LOOPS(u16, uint16_t)
CMP_LOOPS(i32, int32_t)
CMP_LOOPS(u32, uint32_t)
CMP_LOOPS(i64, int64_t)
CMP_LOOPS(u64, uint64_t)

// PRelu: the slope multiplies negative values (integers wrap, unsigned
// values are never negative).
BIN_LOOP(f32_prelu, float, x < 0 ? x * z : x)
BIN_LOOP(f64_prelu, double, x < 0 ? x * z : x)
BIN_LOOP(i32_prelu, int32_t, x < 0 ? (int32_t)((uint32_t)x * (uint32_t)z) : x)
BIN_LOOP(i64_prelu, int64_t, x < 0 ? (int64_t)((uint64_t)x * (uint64_t)z) : x)
BIN_LOOP(u_prelu32, uint32_t, z ? x : x)
BIN_LOOP(u_prelu64, uint64_t, z ? x : x)

// Mod. Floats: fmod=1 is C's fmod (exact in float as in double); fmod=0
// (opset 28) takes the divisor's sign like Python's %, a zero result as a
// zero of the divisor's sign. Integers: the remainder truncated (fmod=1)
// or floored (fmod=0); zero divisors are rejected before the loop and -1
// gives 0 (no INT_MIN % -1).
static inline float f32_pymod(float a, float b) {
  float r = fmodf(a, b);
  return r == 0 ? copysignf(0.0f, b) : ((r < 0) != (b < 0) ? r + b : r);
}
static inline double f64_pymod(double a, double b) {
  double r = fmod(a, b);
  return r == 0 ? copysign(0.0, b) : ((r < 0) != (b < 0) ? r + b : r);
}
BIN_LOOP(f32_fmod, float, fmodf(x, z))
BIN_LOOP(f64_fmod, double, fmod(x, z))
BIN_LOOP(f32_mod, float, f32_pymod(x, z))
BIN_LOOP(f64_mod, double, f64_pymod(x, z))

#define INT_MOD_LOOPS(S, T)                            \
  BIN_LOOP(S##_fmod, T, z == -1 || z == 0 ? 0 : x % z) \
  BIN_LOOP(S##_mod, T,                                 \
           z == -1 || z == 0                           \
               ? 0                                     \
               : (x % z != 0 && ((x % z < 0) != (z < 0)) ? x % z + z : x % z))
#define UINT_MOD_LOOPS(S, T)                \
  BIN_LOOP(S##_fmod, T, z == 0 ? 0 : x % z) \
  BIN_LOOP(S##_mod, T, z == 0 ? 0 : x % z)

INT_MOD_LOOPS(i8, int8_t)
UINT_MOD_LOOPS(u8, uint8_t)
INT_MOD_LOOPS(i16, int16_t)
UINT_MOD_LOOPS(u16, uint16_t)
INT_MOD_LOOPS(i32, int32_t)
UINT_MOD_LOOPS(u32, uint32_t)
INT_MOD_LOOPS(i64, int64_t)
UINT_MOD_LOOPS(u64, uint64_t)

// Logic on bool bytes; any nonzero byte reads as true.
BIN_LOOP(b_eq, uint8_t, (x != 0) == (z != 0))
BIN_LOOP(b_and, uint8_t, (x != 0) & (z != 0))
BIN_LOOP(b_or, uint8_t, (x != 0) | (z != 0))
BIN_LOOP(b_xor, uint8_t, (x != 0) ^ (z != 0))

// In-place folds y = y op b for the variadic Sum, Mean, Max and Min: a is
// y itself (the output, never broadcast), so mode is VV or VS.
#define ACC_LOOP(NAME, T, EXPR)                                        \
  static void NAME(const void *va, const void *vb, void *vy, size_t n, \
                   int mode) {                                         \
    (void)va;                                                          \
    const T *restrict b = vb;                                          \
    T *y = vy;                                                         \
    if (mode == MODE_VV) {                                             \
      for (size_t i = 0; i < n; i++) {                                 \
        T x = y[i], z = b[i];                                          \
        y[i] = (EXPR);                                                 \
      }                                                                \
    } else {                                                           \
      T z = b[0];                                                      \
      for (size_t i = 0; i < n; i++) {                                 \
        T x = y[i];                                                    \
        y[i] = (EXPR);                                                 \
      }                                                                \
    }                                                                  \
  }

ACC_LOOP(f32_acc_add, float, x + z)
ACC_LOOP(f64_acc_add, double, x + z)
ACC_LOOP(f32_acc_max, float, (x > z || x != x) ? x : z)
ACC_LOOP(f32_acc_min, float, (x < z || x != x) ? x : z)
ACC_LOOP(f64_acc_max, double, (x > z || x != x) ? x : z)
ACC_LOOP(f64_acc_min, double, (x < z || x != x) ? x : z)

#define INT_ACC_LOOPS(S, T)               \
  ACC_LOOP(S##_acc_max, T, x > z ? x : z) \
  ACC_LOOP(S##_acc_min, T, x < z ? x : z)

INT_ACC_LOOPS(i8, int8_t)
INT_ACC_LOOPS(u8, uint8_t)
INT_ACC_LOOPS(i16, int16_t)
INT_ACC_LOOPS(u16, uint16_t)
INT_ACC_LOOPS(i32, int32_t)
INT_ACC_LOOPS(u32, uint32_t)
INT_ACC_LOOPS(i64, int64_t)
INT_ACC_LOOPS(u64, uint64_t)

// Pow with a float32 base and an integer exponent (opset 12 and later),
// computed like the reference: in double, rounded once.
#define POW_INT_LOOP(NAME, E)                                          \
  static void NAME(const void *va, const void *vb, void *vy, size_t n, \
                   int mode) {                                         \
    const float *restrict a = va;                                      \
    const E *restrict b = vb;                                          \
    float *restrict y = vy;                                            \
    for (size_t i = 0; i < n; i++) {                                   \
      double x = a[mode == MODE_SV ? 0 : i];                           \
      double z = (double)b[mode == MODE_VS ? 0 : i];                   \
      y[i] = (float)pow(x, z);                                         \
    }                                                                  \
  }

POW_INT_LOOP(f32_pow_i32, int32_t)
POW_INT_LOOP(f32_pow_i64, int64_t)

// Integer Pow like the reference: by squaring, wrapping; a negative
// exponent truncates 1 / a^-b toward zero.
static int64_t int_pow(int64_t a, int64_t b) {
  if (b < 0) {
    return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  }
  uint64_t r = 1, x = (uint64_t)a;
  for (uint64_t e = (uint64_t)b; e; e >>= 1, x *= x) {
    if (e & 1) {
      r *= x;
    }
  }
  return (int64_t)r;
}

#define POW_II_LOOP(NAME, TA, TB)                                      \
  static void NAME(const void *va, const void *vb, void *vy, size_t n, \
                   int mode) {                                         \
    const TA *restrict a = va;                                         \
    const TB *restrict b = vb;                                         \
    TA *restrict y = vy;                                               \
    for (size_t i = 0; i < n; i++) {                                   \
      int64_t x = a[mode == MODE_SV ? 0 : i];                          \
      int64_t z = b[mode == MODE_VS ? 0 : i];                          \
      y[i] = (TA)int_pow(x, z);                                        \
    }                                                                  \
  }

POW_II_LOOP(i32_pow_i32, int32_t, int32_t)
POW_II_LOOP(i32_pow_i64, int32_t, int64_t)
POW_II_LOOP(i64_pow_i32, int64_t, int32_t)
POW_II_LOOP(i64_pow_i64, int64_t, int64_t)

// One loop of a binary operator: op_type, dtype of input 0 and input 1,
// output dtype (0: that of input 0), and for the variadic operators the
// in-place fold used past the second input (NULL: none).
typedef struct bin_op {
  const char *name;
  uint32_t a, b, y;
  bin_fn fn;
  bin_fn acc;
} bin_op_t;

#define BIN_INTS(NAME, S)                           \
  {NAME, K_INT8, K_INT8, 0, i8_##S, NULL},          \
      {NAME, K_UINT8, K_UINT8, 0, u8_##S, NULL},    \
      {NAME, K_INT16, K_INT16, 0, i16_##S, NULL},   \
      {NAME, K_UINT16, K_UINT16, 0, u16_##S, NULL}, \
      {NAME, K_INT32, K_INT32, 0, i32_##S, NULL},   \
      {NAME, K_UINT32, K_UINT32, 0, u32_##S, NULL}, \
      {NAME, K_INT64, K_INT64, 0, i64_##S, NULL}, { \
    NAME, K_UINT64, K_UINT64, 0, u64_##S, NULL      \
  }

#define BIN_INT_FOLDS(NAME, S)                             \
  {NAME, K_INT8, K_INT8, 0, i8_##S, i8_acc_##S},           \
      {NAME, K_UINT8, K_UINT8, 0, u8_##S, u8_acc_##S},     \
      {NAME, K_INT16, K_INT16, 0, i16_##S, i16_acc_##S},   \
      {NAME, K_UINT16, K_UINT16, 0, u16_##S, u16_acc_##S}, \
      {NAME, K_INT32, K_INT32, 0, i32_##S, i32_acc_##S},   \
      {NAME, K_UINT32, K_UINT32, 0, u32_##S, u32_acc_##S}, \
      {NAME, K_INT64, K_INT64, 0, i64_##S, i64_acc_##S}, { \
    NAME, K_UINT64, K_UINT64, 0, u64_##S, u64_acc_##S      \
  }

#define BIN_CMPS(NAME, S)                                \
  {NAME, K_FLOAT, K_FLOAT, K_BOOL, f32_##S, NULL},       \
      {NAME, K_DOUBLE, K_DOUBLE, K_BOOL, f64_##S, NULL}, \
      {NAME, K_INT8, K_INT8, K_BOOL, i8_##S, NULL},      \
      {NAME, K_UINT8, K_UINT8, K_BOOL, u8_##S, NULL},    \
      {NAME, K_INT16, K_INT16, K_BOOL, i16_##S, NULL},   \
      {NAME, K_UINT16, K_UINT16, K_BOOL, u16_##S, NULL}, \
      {NAME, K_INT32, K_INT32, K_BOOL, i32_##S, NULL},   \
      {NAME, K_UINT32, K_UINT32, K_BOOL, u32_##S, NULL}, \
      {NAME, K_INT64, K_INT64, K_BOOL, i64_##S, NULL}, { \
    NAME, K_UINT64, K_UINT64, K_BOOL, u64_##S, NULL      \
  }

static const bin_op_t bin_ops[] = {
    {"Add", K_FLOAT, K_FLOAT, 0, f32_add, NULL},
    {"Sub", K_FLOAT, K_FLOAT, 0, f32_sub, NULL},
    {"Mul", K_FLOAT, K_FLOAT, 0, f32_mul, NULL},
    {"Div", K_FLOAT, K_FLOAT, 0, f32_div, NULL},
    {"Pow", K_FLOAT, K_FLOAT, 0, f32_pow, NULL},
    {"Max", K_FLOAT, K_FLOAT, 0, f32_max, f32_acc_max},
    {"Min", K_FLOAT, K_FLOAT, 0, f32_min, f32_acc_min},
    {"Sum", K_FLOAT, K_FLOAT, 0, f32_add, f32_acc_add},
    {"Mean", K_FLOAT, K_FLOAT, 0, f32_add, f32_acc_add},
    {"Add", K_DOUBLE, K_DOUBLE, 0, f64_add, NULL},
    {"Sub", K_DOUBLE, K_DOUBLE, 0, f64_sub, NULL},
    {"Mul", K_DOUBLE, K_DOUBLE, 0, f64_mul, NULL},
    {"Div", K_DOUBLE, K_DOUBLE, 0, f64_div, NULL},
    {"Pow", K_DOUBLE, K_DOUBLE, 0, f64_pow, NULL},
    {"Max", K_DOUBLE, K_DOUBLE, 0, f64_max, f64_acc_max},
    {"Min", K_DOUBLE, K_DOUBLE, 0, f64_min, f64_acc_min},
    {"Sum", K_DOUBLE, K_DOUBLE, 0, f64_add, f64_acc_add},
    {"Mean", K_DOUBLE, K_DOUBLE, 0, f64_add, f64_acc_add},
    {"Pow", K_FLOAT, K_INT32, 0, f32_pow_i32, NULL},
    {"Pow", K_FLOAT, K_INT64, 0, f32_pow_i64, NULL},
    {"Pow", K_INT32, K_INT32, 0, i32_pow_i32, NULL},
    {"Pow", K_INT32, K_INT64, 0, i32_pow_i64, NULL},
    {"Pow", K_INT64, K_INT32, 0, i64_pow_i32, NULL},
    {"Pow", K_INT64, K_INT64, 0, i64_pow_i64, NULL},
    BIN_INTS("Add", add),
    BIN_INTS("Sub", sub),
    BIN_INTS("Mul", mul),
    BIN_INT_FOLDS("Max", max),
    BIN_INT_FOLDS("Min", min),
    BIN_CMPS("Equal", eq),
    BIN_CMPS("Less", lt),
    BIN_CMPS("Greater", gt),
    BIN_CMPS("LessOrEqual", le),
    BIN_CMPS("GreaterOrEqual", ge),
    {"Mod", K_FLOAT, K_FLOAT, 0, f32_mod, NULL},
    {"Mod", K_DOUBLE, K_DOUBLE, 0, f64_mod, NULL},
    {"FMod", K_FLOAT, K_FLOAT, 0, f32_fmod, NULL},
    {"FMod", K_DOUBLE, K_DOUBLE, 0, f64_fmod, NULL},
    BIN_INTS("Mod", mod),
    BIN_INTS("FMod", fmod),
    {"PRelu", K_FLOAT, K_FLOAT, 0, f32_prelu, NULL},
    {"PRelu", K_DOUBLE, K_DOUBLE, 0, f64_prelu, NULL},
    {"PRelu", K_INT32, K_INT32, 0, i32_prelu, NULL},
    {"PRelu", K_INT64, K_INT64, 0, i64_prelu, NULL},
    {"PRelu", K_UINT32, K_UINT32, 0, u_prelu32, NULL},
    {"PRelu", K_UINT64, K_UINT64, 0, u_prelu64, NULL},
    {"Equal", K_BOOL, K_BOOL, K_BOOL, b_eq, NULL},
    {"And", K_BOOL, K_BOOL, K_BOOL, b_and, NULL},
    {"Or", K_BOOL, K_BOOL, K_BOOL, b_or, NULL},
    {"Xor", K_BOOL, K_BOOL, K_BOOL, b_xor, NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};

static const bin_op_t *bin_find(const char *name, uint32_t a, uint32_t b) {
  for (const bin_op_t *o = bin_ops; o->name; o++) {
    if (o->a == a && o->b == b && strcmp(o->name, name) == 0) {
      return o;
    }
  }
  return NULL;
}

typedef struct bin_plan {
  bin_fn fn;                   // the loop
  size_t esize;                // bytes per element of a
  size_t bsize;                // bytes per element of b
  size_t ysize;                // bytes per element of y
  bool nonzero_b;              // b must hold no zero (integer Mod)
  bool heavy;                  // a transcendental loop (Pow)
  int32_t rank;                // collapsed dims (>= 1)
  int64_t dims[CPU_MAX_RANK];  // collapsed sizes
  int64_t sa[CPU_MAX_RANK];    // element strides of a (0 = broadcast)
  int64_t sb[CPU_MAX_RANK];    // element strides of b
  int mode;                    // MODE_* of the innermost dim
  size_t count;                // output elements
  size_t a_count, b_count;     // operand elements
} bin_plan_t;

// The table name of |op|'s loop: Mod with fmod=1 is "FMod".
static const char *bin_name(const wm_op_desc *op) {
  if (strcmp(op->op_type, "Mod") == 0 && cpu_attr_int(op, "fmod", 0) == 1) {
    return "FMod";
  }
  return op->op_type;
}

static uint32_t bin_query(const wm_op_desc *op, uint32_t *why,
                          const char **detail) {
  if (op->opset < 7 && cpu_attr_int(op, "broadcast", 0) != 0 &&
      cpu_attr(op, "axis")) {
    int64_t ra = op->n_in > 0 ? op->in[0].rank : 0;
    int64_t rb = op->n_in > 1 ? op->in[1].rank : 0;
    int64_t axis = cpu_attr_int(op, "axis", 0);
    axis = axis < 0 ? axis + ra : axis;
    if (axis < 0 || axis + rb > ra) {
      return k_none(why, detail, WM_WHY_ATTR,
                    "legacy broadcast axis does not fit");
    }
  }
  if (op->n_in != 2 || op->in[0].dtype == 0 || op->in[1].dtype == 0) {
    return k_none(why, detail, WM_WHY_OTHER, "only two present inputs");
  }
  uint32_t dt = op->in[0].dtype;
  if (op->in[1].dtype != dt && (op->opset < 12 || strcmp(op->op_type, "Pow"))) {
    return k_none(why, detail, WM_WHY_DTYPE, "mixed input dtypes");
  }
  const bin_op_t *o = bin_find(bin_name(op), dt, op->in[1].dtype);
  if (strcmp(op->op_type, "Mod") == 0) {
    int64_t f = cpu_attr_int(op, "fmod", 0);
    if ((f != 0 && f != 1) ||
        (f == 0 && (dt == K_FLOAT || dt == K_DOUBLE) && op->opset < 28)) {
      return k_none(why, detail, WM_WHY_ATTR,
                    "fmod must be 0 or 1, and 1 for floats before opset 28");
    }
  }
  if (!o) {
    return k_none(why, detail, WM_WHY_DTYPE,
                  "float, double and integer dtypes (Div: float and double; "
                  "Pow: also int32/int64; logic: bool)");
  }
  if (!k_has_output(op, 0) || op->out[0].dtype != (o->y ? o->y : dt)) {
    return k_none(why, detail, WM_WHY_DTYPE, "output dtype differs");
  }
  if (op->in[0].rank > CPU_MAX_RANK || op->in[1].rank > CPU_MAX_RANK ||
      op->out[0].rank > CPU_MAX_RANK) {
    return k_none(why, detail, WM_WHY_RANK, "rank above 8");
  }
  return WM_SUPPORT_SUPPORTED;
}

// Builds the collapsed broadcast geometry of |a| and |b| onto |y|.
static wm_error *bin_geometry_of(const wm_op_desc *op, const wm_tensor_desc *a,
                                 const wm_tensor_desc *b,
                                 const wm_tensor_desc *y, bin_plan_t *p) {
  int32_t r = (int32_t)y->rank;
  int64_t sizes[CPU_MAX_RANK];
  bool af[CPU_MAX_RANK], bf[CPU_MAX_RANK];
  int32_t n = 0;
  if (!k_dims_known(a) || !k_dims_known(b) || !k_dims_known(y) ||
      (int32_t)a->rank > r || (int32_t)b->rank > r) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (%s): input ranks %u and %u do not fit "
                     "output rank %d with known dims",
                     op->name, op->op_type, a->rank, b->rank, r);
  }
  p->a_count = cpu_desc_count(a);
  p->b_count = cpu_desc_count(b);  // the legacy view keeps B's count
  p->count = cpu_desc_count(y);
  for (int32_t d = 0; d < r; d++) {
    int64_t od = y->dims[d];
    int32_t ia = d - (r - (int32_t)a->rank), ib = d - (r - (int32_t)b->rank);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if ((da != od && da != 1) || (db != od && db != 1) ||
        (da != od && db != od)) {
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "node \"%s\" (%s): dims %lld and %lld do not "
                       "broadcast to %lld in output dim %d",
                       op->name, op->op_type, (long long)da, (long long)db,
                       (long long)od, d);
    }
    if (od == 1) {
      continue;
    }
    bool fa = da == od, fb = db == od;
    if (n > 0 && af[n - 1] == fa && bf[n - 1] == fb) {
      sizes[n - 1] *= od;
    } else {
      sizes[n] = od;
      af[n] = fa;
      bf[n] = fb;
      n++;
    }
  }
  if (n == 0) {
    sizes[0] = 1;
    af[0] = bf[0] = true;
    n = 1;
  }
  int64_t acc_a = 1, acc_b = 1;
  for (int32_t k = n - 1; k >= 0; k--) {
    p->dims[k] = sizes[k];
    p->sa[k] = af[k] ? acc_a : 0;
    p->sb[k] = bf[k] ? acc_b : 0;
    acc_a *= af[k] ? sizes[k] : 1;
    acc_b *= bf[k] ? sizes[k] : 1;
  }
  p->rank = n;
  p->mode = af[n - 1] && bf[n - 1] ? MODE_VV : af[n - 1] ? MODE_VS : MODE_SV;
  return NULL;
}

// Builds the geometry of inputs 0 and 1 of |op| onto output 0, with the
// legacy (opset < 7) axis alignment.
static wm_error *bin_geometry(const wm_op_desc *op, bin_plan_t *p) {
  const wm_tensor_desc *a = &op->in[0], *b = &op->in[1], *y = &op->out[0];
  wm_tensor_desc legacy;
  if (op->opset < 7 && cpu_attr_int(op, "broadcast", 0) != 0 &&
      cpu_attr(op, "axis")) {
    // Before opset 7, B lines up with A's dims from |axis| on.
    int64_t axis = cpu_attr_int(op, "axis", 0);
    axis = axis < 0 ? axis + (int64_t)a->rank : axis;
    if (axis < 0 || axis + (int64_t)b->rank > (int64_t)a->rank) {
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "node \"%s\" (%s): broadcast axis %lld does not fit",
                       op->name, op->op_type, (long long)axis);
    }
    legacy = *b;
    legacy.rank = a->rank;
    for (int64_t d = 0; d < (int64_t)a->rank; d++) {
      int64_t j = d - axis;
      legacy.dims[d] = j >= 0 && j < (int64_t)b->rank ? b->dims[j] : 1;
    }
    b = &legacy;
  }
  return bin_geometry_of(op, a, b, y, p);
}

static wm_error *bin_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  bin_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  const bin_op_t *o = bin_find(bin_name(op), op->in[0].dtype, op->in[1].dtype);
  p->fn = o ? o->fn : NULL;
  // Loops are compared by name: with one clone per ISA, a function's
  // address is not unique.
  p->heavy = o && strcmp(o->name, "Pow") == 0;
  p->nonzero_b = strcmp(op->op_type, "Mod") == 0 && k_is_int(op->in[1].dtype);
  p->esize = k_dtype_size(op->in[0].dtype);
  p->bsize = k_dtype_size(op->in[1].dtype);
  p->ysize = k_dtype_size(op->out[0].dtype);
  wm_error *e = p->fn ? bin_geometry(op, p)
                      : cpu_error(WM_ERR_INVALID_ARGUMENT,
                                  "node \"%s\" (%s): unsupported dtype %u",
                                  op->name, op->op_type, op->in[0].dtype);
  if (e) {
    free(p);
    return e;
  }
  *out_state = p;
  return NULL;
}

typedef struct bin_job {
  const bin_plan_t *p;
  const char *a, *b;
  char *y;
} bin_job_t;

static void bin_chunk(void *ctx, size_t begin, size_t end) {
  const bin_job_t *j = ctx;
  const bin_plan_t *p = j->p;
  size_t inner = (size_t)p->dims[p->rank - 1], es = p->esize;
  size_t row = begin / inner, col = begin % inner;
  int64_t idx[CPU_MAX_RANK] = {0};
  int64_t oa = 0, ob = 0;
  for (int32_t k = p->rank - 2; k >= 0; k--) {
    idx[k] = (int64_t)(row % (size_t)p->dims[k]);
    row /= (size_t)p->dims[k];
    oa += idx[k] * p->sa[k];
    ob += idx[k] * p->sb[k];
  }
  int64_t ia = p->sa[p->rank - 1], ib = p->sb[p->rank - 1];
  for (size_t pos = begin; pos < end;) {
    size_t len = inner - col < end - pos ? inner - col : end - pos;
    const char *a = j->a + (size_t)(oa + (int64_t)col * ia) * es;
    const char *b = j->b + (size_t)(ob + (int64_t)col * ib) * p->bsize;
    p->fn(a, b, j->y + pos * p->ysize, len, p->mode);
    pos += len;
    col = 0;
    for (int32_t k = p->rank - 2; k >= 0; k--) {
      oa += p->sa[k];
      ob += p->sb[k];
      if (++idx[k] < p->dims[k]) {
        break;
      }
      oa -= p->sa[k] * p->dims[k];
      ob -= p->sb[k] * p->dims[k];
      idx[k] = 0;
    }
  }
}

static wm_error *bin_run(void *state, const cpu_run_t *run) {
  const bin_plan_t *p = state;
  if (run->n_in < 2 || run->n_out < 1 || run->in[0].count != p->a_count ||
      run->in[1].count != p->b_count || run->out[0].count != p->count) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "binary kernel: tensors do not match the plan");
  }
  if (p->nonzero_b) {
    const unsigned char *b = run->in[1].data;
    unsigned char zero[8] = {0};
    for (size_t i = 0; i < p->b_count; i++) {
      if (memcmp(b + i * p->bsize, zero, p->bsize) == 0) {
        return cpu_error(WM_ERR_INVALID_ARGUMENT,
                         "Mod: input 1 element %zu is 0 (integer division "
                         "by zero)",
                         i);
      }
    }
  }
  if (p->count == 0) {
    return NULL;
  }
  bin_job_t j = {p, run->in[0].data, run->in[1].data, run->out[0].data};
  k_for(run->pool, p->count, p->heavy ? K_GRAIN_HEAVY : K_GRAIN, bin_chunk, &j);
  return NULL;
}

// ------------------------------------------------------------ variadic

// Sum, Mean, Max and Min over one or more inputs, all broadcast to the
// output: the first two combine like a binary operator, each further
// input folds into the output in place, and Mean divides at the end.
typedef struct var_plan {
  uint32_t n;         // inputs
  bool mean;          // divide by n at the end
  size_t es;          // element size
  size_t count;       // output elements
  size_t *in_count;   // elements of each input
  bin_plan_t *steps;  // n - 1 steps: inputs 0 and 1, then y and input k
} var_plan_t;

static void var_destroy(void *state) {
  var_plan_t *p = state;
  if (p) {
    free(p->in_count);
    free(p->steps);
    free(p);
  }
}

static uint32_t var_query(const wm_op_desc *op, uint32_t *why,
                          const char **detail) {
  if (op->n_in < 1) {
    return k_none(why, detail, WM_WHY_OTHER, "at least one input");
  }
  uint32_t dt = op->in[0].dtype;
  for (uint32_t i = 0; i < op->n_in; i++) {
    if (op->in[i].dtype != dt) {
      return k_none(why, detail, WM_WHY_DTYPE,
                    "inputs must all be present with one dtype");
    }
    if (op->in[i].rank > CPU_MAX_RANK) {
      return k_none(why, detail, WM_WHY_RANK, "rank above 8");
    }
  }
  const bin_op_t *o = bin_find(op->op_type, dt, dt);
  if (!o || !k_has_output(op, 0) || op->out[0].dtype != dt) {
    return k_none(why, detail, WM_WHY_DTYPE,
                  "float and double (Max, Min: also integers)");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *var_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  const bin_op_t *o = bin_find(op->op_type, op->in[0].dtype, op->in[0].dtype);
  var_plan_t *p = calloc(1, sizeof(*p));
  if (!o || !p) {
    free(p);
    return o ? cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory")
             : cpu_error(WM_ERR_INVALID_ARGUMENT,
                         "node \"%s\" (%s): unsupported dtype %u", op->name,
                         op->op_type, op->in[0].dtype);
  }
  p->n = op->n_in;
  p->mean = strcmp(op->op_type, "Mean") == 0;
  p->es = k_dtype_size(op->in[0].dtype);
  p->count = cpu_desc_count(&op->out[0]);
  p->in_count = calloc(p->n, sizeof(size_t));
  p->steps = calloc(p->n, sizeof(bin_plan_t));
  if (!p->in_count || !p->steps) {
    var_destroy(p);
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  const wm_tensor_desc *y = &op->out[0];
  wm_error *e = NULL;
  for (uint32_t i = 0; i < p->n; i++) {
    p->in_count[i] = cpu_desc_count(&op->in[i]);
  }
  if (p->n == 1) {
    bool same = op->in[0].rank == y->rank &&
                memcmp(op->in[0].dims, y->dims, y->rank * sizeof(int64_t)) == 0;
    if (!same) {
      e = cpu_error(WM_ERR_INVALID_ARGUMENT,
                    "node \"%s\" (%s): the one input's shape differs from "
                    "the output's",
                    op->name, op->op_type);
    }
  }
  for (uint32_t k = 1; !e && k < p->n; k++) {
    bin_plan_t *s = &p->steps[k - 1];
    s->fn = k == 1 ? o->fn : o->acc;
    s->esize = s->bsize = s->ysize = p->es;
    e = bin_geometry_of(op, k == 1 ? &op->in[0] : y, &op->in[k], y, s);
  }
  if (e) {
    var_destroy(p);
    return e;
  }
  *out_state = p;
  return NULL;
}

typedef struct mean_job {
  uint32_t dtype;
  void *y;
  double n;
} mean_job_t;

static void mean_chunk(void *ctx, size_t begin, size_t end) {
  const mean_job_t *j = ctx;
  if (j->dtype == K_FLOAT) {
    float *y = j->y, n = (float)j->n;
    for (size_t i = begin; i < end; i++) {
      y[i] /= n;
    }
  } else {
    double *y = j->y;
    for (size_t i = begin; i < end; i++) {
      y[i] /= j->n;
    }
  }
}

static wm_error *var_run(void *state, const cpu_run_t *run) {
  const var_plan_t *p = state;
  bool ok =
      run->n_in == p->n && run->n_out >= 1 && run->out[0].count == p->count;
  for (uint32_t i = 0; ok && i < p->n; i++) {
    ok = run->in[i].count == p->in_count[i];
  }
  if (!ok) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "variadic kernel: tensors do not match the plan");
  }
  if (p->count == 0) {
    return NULL;
  }
  char *y = run->out[0].data;
  if (p->n == 1) {
    if (y != run->in[0].data) {
      memcpy(y, run->in[0].data, p->count * p->es);
    }
    return NULL;
  }
  for (uint32_t k = 1; k < p->n; k++) {
    const bin_plan_t *s = &p->steps[k - 1];
    bin_job_t j = {s, k == 1 ? run->in[0].data : y, run->in[k].data, y};
    k_for(run->pool, p->count, K_GRAIN, bin_chunk, &j);
  }
  if (p->mean) {
    mean_job_t j = {run->out[0].dtype, y, (double)p->n};
    k_for(run->pool, p->count, K_GRAIN, mean_chunk, &j);
  }
  return NULL;
}

// -------------------------------------------------------------- unary

// A float32 loop with up to two parameters.
typedef void (*un_fn)(const float *restrict x, float *restrict y, size_t n,
                      float p0, float p1);

#define UN_LOOP(NAME, EXPR)                                             \
  K_CLONES static void NAME(const float *restrict x, float *restrict y, \
                            size_t n, float p0, float p1) {             \
    (void)p0;                                                           \
    (void)p1;                                                           \
    for (size_t i = 0; i < n; i++) {                                    \
      float v = x[i];                                                   \
      y[i] = (EXPR);                                                    \
    }                                                                   \
  }

UN_LOOP(un_neg, -v)
UN_LOOP(un_abs, fabsf(v))
UN_LOOP(un_sqrt, sqrtf(v))
UN_LOOP(un_exp, k_expf(v))
UN_LOOP(un_log, logf(v))
UN_LOOP(un_recip, 1.0f / v)
UN_LOOP(un_floor, floorf(v))
UN_LOOP(un_ceil, ceilf(v))
UN_LOOP(un_relu, v > 0 ? v : 0.0f)
UN_LOOP(un_leaky, v < 0 ? p0 * v : v)
UN_LOOP(un_sigmoid, 1.0f / (1.0f + k_expf(-v)))
UN_LOOP(un_tanh, k_tanhf(v))
UN_LOOP(un_elu, v < 0 ? p0 * expm1f(v) : v)
UN_LOOP(un_selu, v > 0 ? p1 * v : p1 * p0 * expm1f(v))
// Clamps to [0, 1] the way fmax(0, fmin(1, t)) does: NaN gives 1.
static inline float unit_clamp(float t) {
  t = t < 1.0f ? t : 1.0f;
  return t > 0.0f ? t : 0.0f;
}

UN_LOOP(un_hsig, unit_clamp(p0 *v + p1))
UN_LOOP(un_hswish, v *unit_clamp(v / 6.0f + 0.5f))
UN_LOOP(un_softplus, v > 0 ? v + log1pf(k_expf(-v)) : log1pf(k_expf(v)))
UN_LOOP(un_softsign, v / (1.0f + fabsf(v)))
UN_LOOP(un_erf, k_erff(v))
UN_LOOP(un_sign, v > 0 ? 1.0f : v < 0 ? -1.0f : v)
UN_LOOP(un_round, nearbyintf(v))
UN_LOOP(un_sin, sinf(v))
UN_LOOP(un_cos, cosf(v))
UN_LOOP(un_gelu, k_gelu_erf(v))
UN_LOOP(un_gelu_tanh, k_gelu_tanh(v))
UN_LOOP(un_clip, (v < p0 ? p0 : v) > p1 ? p1 : (v < p0 ? p0 : v))

// Integer loops: Neg, Abs and Relu on signed types (wrapping like the
// reference), Clip on every integer type with bounds |lo| and |hi|.
typedef void (*int_un_fn)(const void *x, void *y, size_t n, const void *lo,
                          const void *hi);

#define INT_UN_SIGNED(S, T, U)                                             \
  static void S##_neg(const void *vx, void *vy, size_t n, const void *lo,  \
                      const void *hi) {                                    \
    (void)lo;                                                              \
    (void)hi;                                                              \
    const T *restrict x = vx;                                              \
    T *restrict y = vy;                                                    \
    for (size_t i = 0; i < n; i++) {                                       \
      y[i] = (T)(0 - (U)x[i]);                                             \
    }                                                                      \
  }                                                                        \
  static void S##_abs(const void *vx, void *vy, size_t n, const void *lo,  \
                      const void *hi) {                                    \
    (void)lo;                                                              \
    (void)hi;                                                              \
    const T *restrict x = vx;                                              \
    T *restrict y = vy;                                                    \
    for (size_t i = 0; i < n; i++) {                                       \
      y[i] = x[i] < 0 ? (T)(0 - (U)x[i]) : x[i];                           \
    }                                                                      \
  }                                                                        \
  static void S##_relu(const void *vx, void *vy, size_t n, const void *lo, \
                       const void *hi) {                                   \
    (void)lo;                                                              \
    (void)hi;                                                              \
    const T *restrict x = vx;                                              \
    T *restrict y = vy;                                                    \
    for (size_t i = 0; i < n; i++) {                                       \
      y[i] = x[i] > 0 ? x[i] : 0;                                          \
    }                                                                      \
  }

#define INT_UN_CLIP(S, T)                                                  \
  static void S##_clip(const void *vx, void *vy, size_t n, const void *lo, \
                       const void *hi) {                                   \
    const T *restrict x = vx;                                              \
    T *restrict y = vy;                                                    \
    T l, h;                                                                \
    memcpy(&l, lo, sizeof(T));                                             \
    memcpy(&h, hi, sizeof(T));                                             \
    for (size_t i = 0; i < n; i++) {                                       \
      T v = x[i] < l ? l : x[i];                                           \
      y[i] = h < v ? h : v;                                                \
    }                                                                      \
  }

INT_UN_SIGNED(i8, int8_t, uint32_t)
INT_UN_SIGNED(i16, int16_t, uint32_t)
INT_UN_SIGNED(i32, int32_t, uint32_t)
INT_UN_SIGNED(i64, int64_t, uint64_t)
INT_UN_CLIP(i8, int8_t)
INT_UN_CLIP(u8, uint8_t)
INT_UN_CLIP(i16, int16_t)
INT_UN_CLIP(u16, uint16_t)
INT_UN_CLIP(i32, int32_t)
INT_UN_CLIP(u32, uint32_t)
INT_UN_CLIP(i64, int64_t)
INT_UN_CLIP(u64, uint64_t)

static void bool_not(const void *vx, void *vy, size_t n, const void *lo,
                     const void *hi) {
  (void)lo;
  (void)hi;
  const uint8_t *restrict x = vx;
  uint8_t *restrict y = vy;
  for (size_t i = 0; i < n; i++) {
    y[i] = x[i] == 0;
  }
}

typedef struct int_un_op {
  const char *name;
  uint32_t dtype;
  int_un_fn fn;
} int_un_op_t;

static const int_un_op_t int_un_ops[] = {
    {"Neg", K_INT8, i8_neg},     {"Neg", K_INT16, i16_neg},
    {"Neg", K_INT32, i32_neg},   {"Neg", K_INT64, i64_neg},
    {"Abs", K_INT8, i8_abs},     {"Abs", K_INT16, i16_abs},
    {"Abs", K_INT32, i32_abs},   {"Abs", K_INT64, i64_abs},
    {"Relu", K_INT8, i8_relu},   {"Relu", K_INT16, i16_relu},
    {"Relu", K_INT32, i32_relu}, {"Relu", K_INT64, i64_relu},
    {"Clip", K_INT8, i8_clip},   {"Clip", K_UINT8, u8_clip},
    {"Clip", K_INT16, i16_clip}, {"Clip", K_UINT16, u16_clip},
    {"Clip", K_INT32, i32_clip}, {"Clip", K_UINT32, u32_clip},
    {"Clip", K_INT64, i64_clip}, {"Clip", K_UINT64, u64_clip},
    {"Not", K_BOOL, bool_not},   {NULL, 0, NULL},
};

static int_un_fn int_un_find(const char *name, uint32_t dtype) {
  for (const int_un_op_t *o = int_un_ops; o->name; o++) {
    if (o->dtype == dtype && strcmp(o->name, name) == 0) {
      return o->fn;
    }
  }
  return NULL;
}

#define LIMITS(T, LO, HI)      \
  do {                         \
    T l = (LO), h = (HI);      \
    memcpy(lo, &l, sizeof(T)); \
    memcpy(hi, &h, sizeof(T)); \
  } while (0)

// Writes the lowest and highest values of integer |dtype| as its bytes.
static void int_limits(uint32_t dtype, unsigned char *lo, unsigned char *hi) {
  switch (dtype) {
    case K_INT8:
      LIMITS(int8_t, INT8_MIN, INT8_MAX);
      break;
    case K_UINT8:
      LIMITS(uint8_t, 0, UINT8_MAX);
      break;
    case K_INT16:
      LIMITS(int16_t, INT16_MIN, INT16_MAX);
      break;
    case K_UINT16:
      LIMITS(uint16_t, 0, UINT16_MAX);
      break;
    case K_INT32:
      LIMITS(int32_t, INT32_MIN, INT32_MAX);
      break;
    case K_UINT32:
      LIMITS(uint32_t, 0, UINT32_MAX);
      break;
    case K_INT64:
      LIMITS(int64_t, INT64_MIN, INT64_MAX);
      break;
    default:
      LIMITS(uint64_t, 0, UINT64_MAX);
      break;
  }
}

// One unary operator: loop, the resolved parameters read into p0/p1, and
// whether its loop is heavy (transcendental).
typedef struct un_op {
  const char *name;
  un_fn fn;
  const char *params[2];
  bool heavy;
} un_op_t;

static const un_op_t un_ops[] = {
    {"Neg", un_neg, {NULL, NULL}, false},
    {"Abs", un_abs, {NULL, NULL}, false},
    {"Sqrt", un_sqrt, {NULL, NULL}, false},
    {"Exp", un_exp, {NULL, NULL}, true},
    {"Log", un_log, {NULL, NULL}, true},
    {"Reciprocal", un_recip, {NULL, NULL}, false},
    {"Floor", un_floor, {NULL, NULL}, false},
    {"Ceil", un_ceil, {NULL, NULL}, false},
    {"Relu", un_relu, {NULL, NULL}, false},
    {"LeakyRelu", un_leaky, {"alpha", NULL}, false},
    {"Sigmoid", un_sigmoid, {NULL, NULL}, true},
    {"Tanh", un_tanh, {NULL, NULL}, true},
    {"Elu", un_elu, {"alpha", NULL}, true},
    {"Selu", un_selu, {"alpha", "gamma"}, true},
    {"HardSigmoid", un_hsig, {"alpha", "beta"}, false},
    {"HardSwish", un_hswish, {NULL, NULL}, false},
    {"Softplus", un_softplus, {NULL, NULL}, true},
    {"Softsign", un_softsign, {NULL, NULL}, false},
    {"Erf", un_erf, {NULL, NULL}, true},
    {"Gelu", un_gelu, {NULL, NULL}, true},
    {"Sign", un_sign, {NULL, NULL}, false},
    {"Round", un_round, {NULL, NULL}, false},
    {"Sin", un_sin, {NULL, NULL}, true},
    {"Cos", un_cos, {NULL, NULL}, true},
    {"Not", NULL, {NULL, NULL}, false},
    {"Clip", un_clip, {"min", "max"}, false},
    {NULL, NULL, {NULL, NULL}, false},
};

static const un_op_t *un_find(const char *name) {
  for (const un_op_t *u = un_ops; u->name; u++) {
    if (strcmp(u->name, name) == 0) {
      return u;
    }
  }
  return NULL;
}

typedef struct un_plan {
  const un_op_t *op;           // the operator
  un_fn fn;                    // float32 loop
  int_un_fn ifn;               // integer loop (NULL for float32)
  size_t es;                   // element size
  unsigned char lo[8], hi[8];  // integer Clip bounds
  float p0, p1;      // attribute values (Clip: bounds before opset 11)
  bool clip_inputs;  // Clip reads its bounds from inputs 1 and 2
  size_t count;      // elements
} un_plan_t;

// Reads the resolved parameters |u| takes into p[0], p[1] (Clip's bounds
// only before opset 11, where they are attributes) and whether Gelu
// approximates with tanh; false when the host resolved none.
static bool un_params(const wm_op_desc *op, const un_op_t *u, float *p,
                      bool *out_tanh) {
  bool clip_inputs = strcmp(u->name, "Clip") == 0 && op->opset >= 11;
  for (int k = 0; k < 2; k++) {
    const wm_op_attr *a =
        u->params[k] && !clip_inputs ? cpu_param(op, u->params[k]) : NULL;
    if (u->params[k] && !clip_inputs && (!a || a->type != 1)) {
      return false;
    }
    p[k] = a ? a->f : 0.0f;
  }
  *out_tanh = false;
  if (strcmp(u->name, "Gelu") == 0) {
    const wm_op_attr *a = cpu_param(op, "approximate");
    if (!a || a->type != 3 || !a->s) {
      return false;
    }
    *out_tanh = strcmp(a->s, "tanh") == 0;
  }
  return true;
}

static uint32_t un_query(const wm_op_desc *op, uint32_t *why,
                         const char **detail) {
  if (!un_find(op->op_type)) {
    return k_none(why, detail, WM_WHY_OP, "no cpu kernel");
  }
  uint32_t dt = op->n_in >= 1 ? op->in[0].dtype : 0;
  bool clip = strcmp(op->op_type, "Clip") == 0;
  if (!un_find(op->op_type)->fn && dt == K_FLOAT) {
    return k_none(why, detail, WM_WHY_DTYPE, "bool only");
  }
  float params[2];
  bool gelu_tanh;
  if (!un_params(op, un_find(op->op_type), params, &gelu_tanh)) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "the parameters are resolved by the host for known shapes");
  }
  if ((dt != K_FLOAT &&
       !(int_un_find(op->op_type, dt) && (!clip || op->opset >= 12))) ||
      !k_has_output(op, 0) || op->out[0].dtype != dt) {
    return k_none(why, detail, WM_WHY_DTYPE,
                  "float32 (integers for Neg, Abs, Relu, Clip; bool for Not)");
  }
  if (clip && op->opset >= 11) {
    for (uint32_t k = 1; k < op->n_in; k++) {
      if (op->in[k].dtype != 0 && op->in[k].dtype != dt) {
        return k_none(why, detail, WM_WHY_DTYPE,
                      "bounds must have the input's dtype");
      }
    }
  } else if (op->n_in != 1) {
    return k_none(why, detail, WM_WHY_OTHER, "one input expected");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *un_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  un_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  p->op = un_find(op->op_type);
  if (!p->op || !k_dims_known(&op->in[0])) {
    free(p);
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (%s): no kernel for this instance", op->name,
                     op->op_type);
  }
  float params[2];
  bool gelu_tanh;
  if (!un_params(op, p->op, params, &gelu_tanh)) {
    free(p);
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (%s): no resolved parameters", op->name,
                     op->op_type);
  }
  p->fn = gelu_tanh ? un_gelu_tanh : p->op->fn;
  p->p0 = params[0];
  p->p1 = params[1];
  p->es = k_dtype_size(op->in[0].dtype);
  if (op->in[0].dtype != K_FLOAT) {
    p->ifn = int_un_find(op->op_type, op->in[0].dtype);
    if (!p->ifn) {
      free(p);
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "node \"%s\" (%s): no kernel for dtype %u", op->name,
                       op->op_type, op->in[0].dtype);
    }
    int_limits(op->in[0].dtype, p->lo, p->hi);
  }
  p->clip_inputs = strcmp(p->op->name, "Clip") == 0 && op->opset >= 11;
  if (p->clip_inputs) {
    p->p0 = -INFINITY;
    p->p1 = INFINITY;
  }
  p->count = cpu_desc_count(&op->in[0]);
  *out_state = p;
  return NULL;
}

typedef struct un_job {
  un_fn fn;
  int_un_fn ifn;
  size_t es;
  const float *x;
  float *y;
  float p0, p1;
  unsigned char lo[8], hi[8];
} un_job_t;

static void un_chunk(void *ctx, size_t begin, size_t end) {
  const un_job_t *j = ctx;
  if (j->ifn) {
    j->ifn((const char *)j->x + begin * j->es, (char *)j->y + begin * j->es,
           end - begin, j->lo, j->hi);
    return;
  }
  j->fn(j->x + begin, j->y + begin, end - begin, j->p0, j->p1);
}

static wm_error *un_run(void *state, const cpu_run_t *run) {
  const un_plan_t *p = state;
  if (run->n_in < 1 || run->n_out < 1 || run->in[0].count != p->count ||
      run->out[0].count != p->count) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "%s kernel: tensors do not match the plan", p->op->name);
  }
  un_job_t j = {p->fn, p->ifn, p->es, run->in[0].data, run->out[0].data, p->p0,
                p->p1, {0},    {0}};
  memcpy(j.lo, p->lo, sizeof(j.lo));
  memcpy(j.hi, p->hi, sizeof(j.hi));
  for (uint32_t k = 1; p->clip_inputs && k <= 2 && k < run->n_in; k++) {
    const cpu_tensor_t *t = &run->in[k];
    if (!t->data || t->dtype == 0) {
      continue;
    }
    if (t->count != 1 || t->dtype != run->in[0].dtype) {
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "Clip: input %u (%s) has %zu elements of dtype %u, "
                       "want one of dtype %u",
                       k, k == 1 ? "min" : "max", t->count, t->dtype,
                       run->in[0].dtype);
    }
    if (p->ifn) {
      memcpy(k == 1 ? j.lo : j.hi, t->data, p->es);
    } else {
      memcpy(k == 1 ? &j.p0 : &j.p1, t->data, sizeof(float));
    }
  }
  k_for(run->pool, p->count, p->op->heavy ? K_GRAIN_HEAVY : K_GRAIN, un_chunk,
        &j);
  return NULL;
}

// --------------------------------------------------------------- table

#define BIN(name, since)                                                    \
  {                                                                         \
    name, since, WM_IMPL_NATIVE_KERNEL, bin_query, bin_plan, bin_run, free, \
        NULL, NULL, NULL                                                    \
  }
#define UN(name, since)                                                        \
  {                                                                            \
    name, since, WM_IMPL_NATIVE_KERNEL, un_query, un_plan, un_run, free, NULL, \
        NULL, NULL                                                             \
  }
#define VAR(name, since)                                              \
  {                                                                   \
    name, since, WM_IMPL_NATIVE_KERNEL, var_query, var_plan, var_run, \
        var_destroy, NULL, NULL, NULL                                 \
  }

const cpu_kernel_t cpu_kernels_eltwise[] = {
    BIN("Add", 1),
    BIN("Sub", 1),
    BIN("Mul", 1),
    BIN("Div", 1),
    BIN("Pow", 1),
    BIN("Mod", 10),
    VAR("Max", 1),
    VAR("Min", 1),
    VAR("Sum", 1),
    VAR("Mean", 1),
    BIN("Equal", 1),
    BIN("Less", 1),
    BIN("Greater", 1),
    BIN("LessOrEqual", 12),
    BIN("GreaterOrEqual", 12),
    BIN("And", 1),
    BIN("Or", 1),
    BIN("Xor", 1),
    UN("Not", 1),
    UN("Gelu", 20),
    BIN("PRelu", 7),
    UN("Sign", 9),
    UN("Round", 11),
    UN("Sin", 7),
    UN("Cos", 7),
    UN("Neg", 6),
    UN("Abs", 6),
    UN("Sqrt", 6),
    UN("Exp", 6),
    UN("Log", 6),
    UN("Reciprocal", 6),
    UN("Floor", 6),
    UN("Ceil", 6),
    UN("Relu", 6),
    UN("LeakyRelu", 6),
    UN("Sigmoid", 6),
    UN("Tanh", 6),
    UN("Elu", 6),
    UN("Selu", 6),
    UN("HardSigmoid", 6),
    UN("HardSwish", 14),
    UN("Softplus", 1),
    UN("Softsign", 1),
    UN("Erf", 9),
    UN("Clip", 6),
    {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
