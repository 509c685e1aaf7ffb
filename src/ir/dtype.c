// Element types and conversions of the half-precision and narrower floats.
#include <math.h>
#include <string.h>

#include "wmap/graph.h"

static const struct {
  const char *name;  // ONNX name
  size_t size;       // bytes per element
} dtype_info[WM_DTYPE_COUNT] = {
    [WM_DTYPE_UNDEFINED] = {"undefined", 0},
    [WM_DTYPE_FLOAT] = {"float", 4},
    [WM_DTYPE_UINT8] = {"uint8", 1},
    [WM_DTYPE_INT8] = {"int8", 1},
    [WM_DTYPE_UINT16] = {"uint16", 2},
    [WM_DTYPE_INT16] = {"int16", 2},
    [WM_DTYPE_INT32] = {"int32", 4},
    [WM_DTYPE_INT64] = {"int64", 8},
    [WM_DTYPE_STRING] = {"string", sizeof(char *)},
    [WM_DTYPE_BOOL] = {"bool", 1},
    [WM_DTYPE_FLOAT16] = {"float16", 2},
    [WM_DTYPE_DOUBLE] = {"double", 8},
    [WM_DTYPE_UINT32] = {"uint32", 4},
    [WM_DTYPE_UINT64] = {"uint64", 8},
    [WM_DTYPE_COMPLEX64] = {"complex64", 8},
    [WM_DTYPE_COMPLEX128] = {"complex128", 16},
    [WM_DTYPE_BFLOAT16] = {"bfloat16", 2},
    [WM_DTYPE_FLOAT8E4M3FN] = {"float8e4m3fn", 1},
    [WM_DTYPE_FLOAT8E4M3FNUZ] = {"float8e4m3fnuz", 1},
    [WM_DTYPE_FLOAT8E5M2] = {"float8e5m2", 1},
    [WM_DTYPE_FLOAT8E5M2FNUZ] = {"float8e5m2fnuz", 1},
    [WM_DTYPE_UINT4] = {"uint4", 1},
    [WM_DTYPE_INT4] = {"int4", 1},
    [WM_DTYPE_FLOAT4E2M1] = {"float4e2m1", 1},
    [WM_DTYPE_FLOAT8E8M0] = {"float8e8m0", 1},
    [WM_DTYPE_UINT2] = {"uint2", 1},
    [WM_DTYPE_INT2] = {"int2", 1},
};

bool wm_dtype_is_valid(int64_t dtype) {
  return dtype > 0 && dtype < WM_DTYPE_COUNT;
}

size_t wm_dtype_size(wm_dtype_t dtype) {
  return wm_dtype_is_valid(dtype) ? dtype_info[dtype].size : 0;
}

size_t wm_dtype_bits(wm_dtype_t dtype) {
  switch (dtype) {
    case WM_DTYPE_UINT4:
    case WM_DTYPE_INT4:
    case WM_DTYPE_FLOAT4E2M1:
      return 4;
    case WM_DTYPE_UINT2:
    case WM_DTYPE_INT2:
      return 2;
    case WM_DTYPE_STRING:
      return 0;
    default:
      return 8 * wm_dtype_size(dtype);
  }
}

const char *wm_dtype_name(wm_dtype_t dtype) {
  return (dtype >= 0 && dtype < WM_DTYPE_COUNT) ? dtype_info[dtype].name
                                                : "unknown";
}

bool wm_dtype_is_minifloat(wm_dtype_t dtype) {
  return (dtype >= WM_DTYPE_FLOAT8E4M3FN && dtype <= WM_DTYPE_FLOAT8E5M2FNUZ) ||
         dtype == WM_DTYPE_FLOAT4E2M1 || dtype == WM_DTYPE_FLOAT8E8M0;
}

bool wm_dtype_is_float(wm_dtype_t dtype) {
  return dtype == WM_DTYPE_FLOAT || dtype == WM_DTYPE_DOUBLE ||
         dtype == WM_DTYPE_FLOAT16 || dtype == WM_DTYPE_BFLOAT16 ||
         wm_dtype_is_minifloat(dtype);
}

bool wm_dtype_is_unsigned(wm_dtype_t dtype) {
  return dtype == WM_DTYPE_UINT8 || dtype == WM_DTYPE_UINT16 ||
         dtype == WM_DTYPE_UINT32 || dtype == WM_DTYPE_UINT64 ||
         dtype == WM_DTYPE_UINT4 || dtype == WM_DTYPE_UINT2;
}

bool wm_dtype_is_int(wm_dtype_t dtype) {
  return wm_dtype_is_unsigned(dtype) || dtype == WM_DTYPE_INT8 ||
         dtype == WM_DTYPE_INT16 || dtype == WM_DTYPE_INT32 ||
         dtype == WM_DTYPE_INT64 || dtype == WM_DTYPE_INT4 ||
         dtype == WM_DTYPE_INT2;
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

float wm_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  if (exp == 0x1f) {
    return bits_f32(sign | 0x7f800000u | (man << 13));
  }
  if (exp == 0) {
    float v = ldexpf((float)man, -24);
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t wm_f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return (uint16_t)(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
  }
  if (abs >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
    return (uint16_t)(sign | 0x7c00);
  }
  if (abs < 0x38800000u) {  // subnormal or zero in half
    float a = bits_f32(abs);
    float scaled = a * 16777216.0f;  // 2^24: units of the smallest subnormal
    uint32_t m = (uint32_t)nearbyintf(scaled);
    return (uint16_t)(sign | m);
  }
  uint32_t exp = ((abs >> 23) - 112) << 10;
  uint32_t man = (abs >> 13) & 0x3ff;
  uint32_t rest = abs & 0x1fff;
  uint32_t h = exp | man;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) {
    h++;
  }
  return (uint16_t)(sign | h);
}

float wm_bf16_to_f32(uint16_t h) {
  return bits_f32((uint32_t)h << 16);
}

uint16_t wm_f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return (uint16_t)((u >> 16) | 0x40);
  }
  uint32_t lsb = (u >> 16) & 1;
  u += 0x7fff + lsb;
  return (uint16_t)(u >> 16);
}

// ------------------------------------------------------------ minifloats

// Layout of a sign-magnitude minifloat. E8M0 has its own code below.
typedef struct minifloat {
  int ebits;        // exponent bits
  int mbits;        // mantissa bits
  int bias;         // exponent bias
  uint8_t max;      // code of the largest finite value
  uint8_t nan;      // code of the NaN produced (sign added unless |uz|)
  bool ieee;        // all-ones exponent is inf (mantissa 0) or NaN
  bool fn;          // only the all-ones code (either sign) is NaN
  bool uz;          // no -0: 0x80 is the NaN
  bool always_sat;  // no inf nor NaN: out of range always saturates
} minifloat_t;

static bool minifloat_layout(wm_dtype_t dtype, minifloat_t *out) {
  static const minifloat_t e4m3fn = {4, 3, 7, 0x7e, 0x7f, 0, 1, 0, 0};
  static const minifloat_t e4m3fnuz = {4, 3, 8, 0x7f, 0x80, 0, 0, 1, 0};
  static const minifloat_t e5m2 = {5, 2, 15, 0x7b, 0x7e, 1, 0, 0, 0};
  static const minifloat_t e5m2fnuz = {5, 2, 16, 0x7f, 0x80, 0, 0, 1, 0};
  static const minifloat_t e2m1 = {2, 1, 1, 0x7, 0x0, 0, 0, 0, 1};
  switch (dtype) {
    case WM_DTYPE_FLOAT8E4M3FN:
      *out = e4m3fn;
      return true;
    case WM_DTYPE_FLOAT8E4M3FNUZ:
      *out = e4m3fnuz;
      return true;
    case WM_DTYPE_FLOAT8E5M2:
      *out = e5m2;
      return true;
    case WM_DTYPE_FLOAT8E5M2FNUZ:
      *out = e5m2fnuz;
      return true;
    case WM_DTYPE_FLOAT4E2M1:
      *out = e2m1;
      return true;
    default:
      return false;
  }
}

double wm_minifloat_to_f64(wm_dtype_t dtype, uint8_t code) {
  if (dtype == WM_DTYPE_FLOAT8E8M0) {
    return code == 0xff ? (double)NAN : ldexp(1.0, (int)code - 127);
  }
  minifloat_t f;
  if (!minifloat_layout(dtype, &f)) {
    return 0.0;
  }
  int width = 1 + f.ebits + f.mbits;
  code &= (uint8_t)((1u << width) - 1);
  uint8_t sign = (uint8_t)(1u << (width - 1));
  uint8_t mag = code & (uint8_t)(sign - 1);
  uint32_t exp = (uint32_t)mag >> f.mbits;
  uint32_t man = mag & ((1u << f.mbits) - 1);
  uint32_t exp_ones = (1u << f.ebits) - 1;
  if ((f.uz && code == 0x80) || (f.fn && mag == (sign - 1))) {
    return (double)NAN;
  }
  double v;
  if (f.ieee && exp == exp_ones) {
    v = man ? (double)NAN : (double)INFINITY;
  } else if (exp == 0) {
    v = ldexp((double)man, 1 - f.bias - f.mbits);
  } else {
    v = ldexp((double)(man | (1u << f.mbits)), (int)exp - f.bias - f.mbits);
  }
  return (code & sign) ? -v : v;
}

// Rounds |x| (>= 0) to the nearest integer, ties to even.
static double round_half_even(double x) {
  double fl = floor(x);
  double d = x - fl;
  if (d > 0.5 || (d == 0.5 && fmod(fl, 2.0) != 0.0)) {
    return fl + 1.0;
  }
  return fl;
}

// E8M0 follows the bit-level rules of the ONNX reference (onnx.numpy_helper
// to_float8e8m0) on the float32 value, with two exceptions: infinities
// saturate like other out-of-range values, as the Cast specification's
// table says, and float32 subnormals round by their value (the reference
// reads their exponent field 0 as 2^-127), so every code converts back to
// itself.
static uint8_t f64_to_e8m0(double v, bool saturate, wm_round_mode_t round) {
  uint32_t bits = f32_bits((float)v);
  uint32_t exp = (bits >> 23) & 0xff;
  if (exp == 0xff) {
    return (bits & 0x7fffff) || !saturate ? 0xff : 0xfe;
  }
  if (exp == 0 && (bits & 0x7fffff)) {
    // |v| = m * 2^k, m in [0.5, 1): below 2^-127 is below the smallest
    // code; in [2^-127, 2^-126) it rounds between codes 0 and 1.
    int k = 0;
    double m = frexp(fabs((double)bits_f32(bits)), &k);
    if (k - 1 < -127) {
      return 0;
    }
    bool up = round == WM_ROUND_UP        ? m > 0.5
              : round == WM_ROUND_NEAREST ? m >= 0.75
                                          : false;
    return up ? 1 : 0;
  }
  bool up = false;
  if (round == WM_ROUND_UP) {
    up = (bits & 0x7fffff) != 0;
  } else if (round == WM_ROUND_NEAREST) {
    bool g = bits & 0x400000, r = bits & 0x200000, s = bits & 0x1fffff;
    up = g && (r || s || exp > 0);
  }
  if (up && !(saturate && exp == 0xfe)) {
    exp++;
  }
  return (uint8_t)exp;
}

uint8_t wm_f64_to_minifloat(wm_dtype_t dtype, double v, bool saturate,
                            wm_round_mode_t round) {
  if (dtype == WM_DTYPE_FLOAT8E8M0) {
    return f64_to_e8m0(v, saturate, round);
  }
  minifloat_t f;
  if (!minifloat_layout(dtype, &f)) {
    return 0;
  }
  int width = 1 + f.ebits + f.mbits;
  uint8_t sign = signbit(v) ? (uint8_t)(1u << (width - 1)) : 0;
  uint8_t nan = f.uz ? f.nan : (uint8_t)(sign | f.nan);
  uint8_t overflow = f.always_sat || saturate ? (uint8_t)(sign | f.max)
                     : f.ieee                 ? (uint8_t)(sign | 0x7c)
                                              : nan;
  if (isnan(v)) {
    return f.always_sat ? 0 : nan;
  }
  double a = fabs(v);
  if (isinf(a)) {
    return overflow;
  }
  int emin = 1 - f.bias;
  int k = 0;
  frexp(a, &k);  // a = m * 2^k with m in [0.5, 1)
  int e = a == 0.0 || k - 1 < emin ? emin : k - 1;
  double r = round_half_even(ldexp(a, f.mbits - e));
  double q = ldexp(r, e - f.mbits);
  if (q > wm_minifloat_to_f64(dtype, f.max)) {
    return overflow;
  }
  if (q == 0.0) {
    return f.uz ? 0 : sign;
  }
  uint32_t code;
  if (q < ldexp(1.0, emin)) {
    code = (uint32_t)r;  // subnormal: exponent field 0
  } else {
    frexp(q, &k);
    e = k - 1;
    uint32_t man = (uint32_t)ldexp(q, f.mbits - e) - (1u << f.mbits);
    code = ((uint32_t)(e + f.bias) << f.mbits) | man;
  }
  return (uint8_t)(sign | code);
}

// ------------------------------------------------------- element access

// Sign-extends the low |bits| of |byte|.
static int64_t low_signed(unsigned byte, int bits) {
  unsigned m = (1u << bits) - 1, s = 1u << (bits - 1);
  unsigned x = byte & m;
  return (int64_t)(x & s ? (int)x - (int)(m + 1) : (int)x);
}

// Stores a double to a 4- or 2-bit integer: round to nearest even; NaN
// and values out of range give 0, like the ONNX reference (ml_dtypes).
static uint8_t f64_to_narrow_int(wm_dtype_t dtype, double v) {
  bool is_signed = dtype == WM_DTYPE_INT4 || dtype == WM_DTYPE_INT2;
  int bits = dtype == WM_DTYPE_INT4 || dtype == WM_DTYPE_UINT4 ? 4 : 2;
  double lo = is_signed ? -ldexp(1.0, bits - 1) : 0.0;
  double hi = is_signed ? ldexp(1.0, bits - 1) - 1.0 : ldexp(1.0, bits) - 1.0;
  if (!(v >= lo - 1.0 && v <= hi + 1.0)) {
    return 0;
  }
  double r = v < 0 ? -round_half_even(-v) : round_half_even(v);
  if (r < lo || r > hi) {
    return 0;
  }
  return (uint8_t)(int8_t)r;
}

// Keeps the low bits of |v| for a 4- or 2-bit integer, sign- or
// zero-extended to the byte held in memory.
static uint8_t i64_to_narrow_int(wm_dtype_t dtype, int64_t v) {
  switch (dtype) {
    case WM_DTYPE_INT4:
      return (uint8_t)low_signed((unsigned)v & 0xfu, 4);
    case WM_DTYPE_UINT4:
      return (uint8_t)((unsigned)v & 0xfu);
    case WM_DTYPE_INT2:
      return (uint8_t)low_signed((unsigned)v & 0x3u, 2);
    default:
      return (uint8_t)((unsigned)v & 0x3u);
  }
}

double wm_load_f64(wm_dtype_t dtype, const void *data, size_t i) {
  switch (dtype) {
    case WM_DTYPE_FLOAT:
      return ((const float *)data)[i];
    case WM_DTYPE_DOUBLE:
      return ((const double *)data)[i];
    case WM_DTYPE_FLOAT16:
      return wm_f16_to_f32(((const uint16_t *)data)[i]);
    case WM_DTYPE_BFLOAT16:
      return wm_bf16_to_f32(((const uint16_t *)data)[i]);
    case WM_DTYPE_UINT8:
      return ((const uint8_t *)data)[i];
    case WM_DTYPE_INT8:
      return ((const int8_t *)data)[i];
    case WM_DTYPE_UINT16:
      return ((const uint16_t *)data)[i];
    case WM_DTYPE_INT16:
      return ((const int16_t *)data)[i];
    case WM_DTYPE_INT32:
      return ((const int32_t *)data)[i];
    case WM_DTYPE_INT64:
      return (double)((const int64_t *)data)[i];
    case WM_DTYPE_UINT32:
      return ((const uint32_t *)data)[i];
    case WM_DTYPE_UINT64:
      return (double)((const uint64_t *)data)[i];
    case WM_DTYPE_BOOL:
      return ((const uint8_t *)data)[i] ? 1.0 : 0.0;
    case WM_DTYPE_FLOAT8E4M3FN:
    case WM_DTYPE_FLOAT8E4M3FNUZ:
    case WM_DTYPE_FLOAT8E5M2:
    case WM_DTYPE_FLOAT8E5M2FNUZ:
    case WM_DTYPE_FLOAT4E2M1:
    case WM_DTYPE_FLOAT8E8M0:
      return wm_minifloat_to_f64(dtype, ((const uint8_t *)data)[i]);
    case WM_DTYPE_UINT4:
    case WM_DTYPE_INT4:
    case WM_DTYPE_UINT2:
    case WM_DTYPE_INT2:
      return (double)wm_load_i64(dtype, data, i);
    default:
      return 0.0;
  }
}

// Converts a double to an integer type with C semantics made defined:
// NaN gives 0 and out-of-range values saturate.
static int64_t f64_to_i64(double v) {
  if (v != v) {
    return 0;
  }
  if (v >= 9223372036854775807.0) {
    return INT64_MAX;
  }
  if (v <= -9223372036854775808.0) {
    return INT64_MIN;
  }
  return (int64_t)v;
}

static uint64_t f64_to_u64(double v) {
  if (v != v || v <= -1.0) {
    return (uint64_t)f64_to_i64(v);  // negative values wrap like C casts
  }
  if (v >= 18446744073709551615.0) {
    return UINT64_MAX;
  }
  return (uint64_t)v;
}

void wm_store_f64(wm_dtype_t dtype, void *data, size_t i, double v) {
  switch (dtype) {
    case WM_DTYPE_FLOAT:
      ((float *)data)[i] = (float)v;
      break;
    case WM_DTYPE_DOUBLE:
      ((double *)data)[i] = v;
      break;
    case WM_DTYPE_FLOAT16:
      ((uint16_t *)data)[i] = wm_f32_to_f16((float)v);
      break;
    case WM_DTYPE_BFLOAT16:
      ((uint16_t *)data)[i] = wm_f32_to_bf16((float)v);
      break;
    case WM_DTYPE_UINT8:
      ((uint8_t *)data)[i] = (uint8_t)f64_to_i64(v);
      break;
    case WM_DTYPE_INT8:
      ((int8_t *)data)[i] = (int8_t)f64_to_i64(v);
      break;
    case WM_DTYPE_UINT16:
      ((uint16_t *)data)[i] = (uint16_t)f64_to_i64(v);
      break;
    case WM_DTYPE_INT16:
      ((int16_t *)data)[i] = (int16_t)f64_to_i64(v);
      break;
    case WM_DTYPE_INT32:
      ((int32_t *)data)[i] = (int32_t)f64_to_i64(v);
      break;
    case WM_DTYPE_INT64:
      ((int64_t *)data)[i] = f64_to_i64(v);
      break;
    case WM_DTYPE_UINT32:
      ((uint32_t *)data)[i] = (uint32_t)f64_to_i64(v);
      break;
    case WM_DTYPE_UINT64:
      ((uint64_t *)data)[i] = f64_to_u64(v);
      break;
    case WM_DTYPE_BOOL:
      ((uint8_t *)data)[i] = v != 0.0;
      break;
    case WM_DTYPE_FLOAT8E4M3FN:
    case WM_DTYPE_FLOAT8E4M3FNUZ:
    case WM_DTYPE_FLOAT8E5M2:
    case WM_DTYPE_FLOAT8E5M2FNUZ:
    case WM_DTYPE_FLOAT4E2M1:
    case WM_DTYPE_FLOAT8E8M0:
      ((uint8_t *)data)[i] = wm_f64_to_minifloat(dtype, v, true, WM_ROUND_UP);
      break;
    case WM_DTYPE_UINT4:
    case WM_DTYPE_INT4:
    case WM_DTYPE_UINT2:
    case WM_DTYPE_INT2:
      ((uint8_t *)data)[i] = f64_to_narrow_int(dtype, v);
      break;
    default:
      break;
  }
}

int64_t wm_load_i64(wm_dtype_t dtype, const void *data, size_t i) {
  switch (dtype) {
    case WM_DTYPE_INT64:
      return ((const int64_t *)data)[i];
    case WM_DTYPE_UINT64:
      return (int64_t)((const uint64_t *)data)[i];
    case WM_DTYPE_INT32:
      return ((const int32_t *)data)[i];
    case WM_DTYPE_UINT32:
      return ((const uint32_t *)data)[i];
    case WM_DTYPE_INT16:
      return ((const int16_t *)data)[i];
    case WM_DTYPE_UINT16:
      return ((const uint16_t *)data)[i];
    case WM_DTYPE_INT8:
      return ((const int8_t *)data)[i];
    case WM_DTYPE_UINT8:
      return ((const uint8_t *)data)[i];
    case WM_DTYPE_BOOL:
      return ((const uint8_t *)data)[i] != 0;
    case WM_DTYPE_UINT4:
      return ((const uint8_t *)data)[i] & 0xf;
    case WM_DTYPE_INT4:
      return low_signed(((const uint8_t *)data)[i], 4);
    case WM_DTYPE_UINT2:
      return ((const uint8_t *)data)[i] & 0x3;
    case WM_DTYPE_INT2:
      return low_signed(((const uint8_t *)data)[i], 2);
    default:
      return f64_to_i64(wm_load_f64(dtype, data, i));
  }
}

void wm_store_i64(wm_dtype_t dtype, void *data, size_t i, int64_t v) {
  switch (dtype) {
    case WM_DTYPE_INT64:
      ((int64_t *)data)[i] = v;
      break;
    case WM_DTYPE_UINT64:
      ((uint64_t *)data)[i] = (uint64_t)v;
      break;
    case WM_DTYPE_INT32:
      ((int32_t *)data)[i] = (int32_t)v;
      break;
    case WM_DTYPE_UINT32:
      ((uint32_t *)data)[i] = (uint32_t)v;
      break;
    case WM_DTYPE_INT16:
      ((int16_t *)data)[i] = (int16_t)v;
      break;
    case WM_DTYPE_UINT16:
      ((uint16_t *)data)[i] = (uint16_t)v;
      break;
    case WM_DTYPE_INT8:
      ((int8_t *)data)[i] = (int8_t)v;
      break;
    case WM_DTYPE_UINT8:
      ((uint8_t *)data)[i] = (uint8_t)v;
      break;
    case WM_DTYPE_BOOL:
      ((uint8_t *)data)[i] = v != 0;
      break;
    case WM_DTYPE_UINT4:
    case WM_DTYPE_INT4:
    case WM_DTYPE_UINT2:
    case WM_DTYPE_INT2:
      ((uint8_t *)data)[i] = i64_to_narrow_int(dtype, v);
      break;
    default:
      wm_store_f64(dtype, data, i, (double)v);
      break;
  }
}
