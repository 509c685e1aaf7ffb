// Element types and half-precision conversions.
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
};

bool wm_dtype_is_valid(int64_t dtype) {
  return dtype > 0 && dtype < WM_DTYPE_COUNT;
}

size_t wm_dtype_size(wm_dtype_t dtype) {
  return wm_dtype_is_valid(dtype) ? dtype_info[dtype].size : 0;
}

const char *wm_dtype_name(wm_dtype_t dtype) {
  return (dtype >= 0 && dtype < WM_DTYPE_COUNT) ? dtype_info[dtype].name
                                                : "unknown";
}

bool wm_dtype_is_float(wm_dtype_t dtype) {
  return dtype == WM_DTYPE_FLOAT || dtype == WM_DTYPE_DOUBLE ||
         dtype == WM_DTYPE_FLOAT16 || dtype == WM_DTYPE_BFLOAT16;
}

bool wm_dtype_is_unsigned(wm_dtype_t dtype) {
  return dtype == WM_DTYPE_UINT8 || dtype == WM_DTYPE_UINT16 ||
         dtype == WM_DTYPE_UINT32 || dtype == WM_DTYPE_UINT64;
}

bool wm_dtype_is_int(wm_dtype_t dtype) {
  return wm_dtype_is_unsigned(dtype) || dtype == WM_DTYPE_INT8 ||
         dtype == WM_DTYPE_INT16 || dtype == WM_DTYPE_INT32 ||
         dtype == WM_DTYPE_INT64;
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
    default:
      wm_store_f64(dtype, data, i, (double)v);
      break;
  }
}
