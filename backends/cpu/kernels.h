// Helpers shared by the cpu backend's elementwise, nn and data kernel
// files: dtype sizes, support answers and parallel loops. Private to
// eltwise.c, nn.c and data.c (blas.c takes K_CLONES); everything here is
// static inline.
#ifndef WMAP_BACKENDS_CPU_KERNELS_H_
#define WMAP_BACKENDS_CPU_KERNELS_H_

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cpu.h"

// ONNX dtype numbers the kernels name.
enum {
  K_FLOAT = 1,
  K_UINT8 = 2,
  K_INT8 = 3,
  K_UINT16 = 4,
  K_INT16 = 5,
  K_INT32 = 6,
  K_INT64 = 7,
  K_STRING = 8,
  K_BOOL = 9,
  K_FLOAT16 = 10,
  K_DOUBLE = 11,
  K_UINT32 = 12,
  K_UINT64 = 13,
  K_COMPLEX64 = 14,
  K_COMPLEX128 = 15,
  K_BFLOAT16 = 16,
};

// Builds a hot function for AVX-512, AVX2 and baseline x86-64, picked at
// load time (the library itself targets baseline x86-64). Only ISAs whose
// arithmetic is the same: no FMA, so every clone gives the same bits.
// Defining K_CLONES empty (-DK_CLONES=) builds the plain code only.
#if !defined(K_CLONES) && defined(__x86_64__) && defined(__ELF__) && \
    defined(__has_attribute)
#if __has_attribute(target_clones)
#define K_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef K_CLONES
#define K_CLONES
#endif
// The same for kernels whose a * b + c may be fused (files built with
// -ffp-contract=fast: the GEMM engine and the convolutions): x86-64-v4
// (AVX-512) and v3 (AVX2 with FMA) clones, whose bits may differ from the
// baseline one's.
#if !defined(K_CLONES_FMA) && defined(__x86_64__) && defined(__ELF__) && \
    defined(__has_attribute)
#if __has_attribute(target_clones)
#define K_CLONES_FMA \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#endif
#ifndef K_CLONES_FMA
#define K_CLONES_FMA
#endif

// Elements per parallel chunk: cheap elementwise work, transcendental
// work, and rows of a row-wise kernel (scaled by the row length).
enum { K_GRAIN = 1 << 15, K_GRAIN_HEAVY = 1 << 12 };

// Bytes per element of a plain-data dtype; 0 for strings and unknowns.
static inline size_t k_dtype_size(uint32_t dtype) {
  switch (dtype) {
    case K_UINT8:
    case K_INT8:
    case K_BOOL:
      return 1;
    case K_UINT16:
    case K_INT16:
    case K_FLOAT16:
    case K_BFLOAT16:
      return 2;
    case K_FLOAT:
    case K_INT32:
    case K_UINT32:
      return 4;
    case K_INT64:
    case K_DOUBLE:
    case K_UINT64:
    case K_COMPLEX64:
      return 8;
    case K_COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

// Answers NONE with |reason| and |text|.
static inline uint32_t k_none(uint32_t *why, const char **detail,
                              uint32_t reason, const char *text) {
  *why = reason;
  *detail = text;
  return WM_SUPPORT_NONE;
}

// True when every dim of |d| is known (>= 0).
static inline bool k_dims_known(const wm_tensor_desc *d) {
  for (uint32_t i = 0; i < d->rank && i < WM_ABI_MAX_RANK; i++) {
    if (d->dims[i] < 0) {
      return false;
    }
  }
  return d->rank <= WM_ABI_MAX_RANK;
}

// True when |op| has output |i| requested.
static inline bool k_has_output(const wm_op_desc *op, uint32_t i) {
  return i < op->n_out && op->out[i].dtype != 0;
}

// Product of dims [from, to) of |t|.
static inline size_t k_span(const cpu_tensor_t *t, int32_t from, int32_t to) {
  size_t n = 1;
  for (int32_t d = from; d < to; d++) {
    n *= (size_t)t->dims[d];
  }
  return n;
}

// Product of dims [from, to) of a description (dims known).
static inline size_t k_desc_span(const wm_tensor_desc *d, int32_t from,
                                 int32_t to) {
  size_t n = 1;
  for (int32_t i = from; i < to; i++) {
    n *= (size_t)d->dims[i];
  }
  return n;
}

// The lanes t of 16 floats from column |lo| whose column lo + t lies in
// [0, n): the load and store masks of vector kernels at a row's borders.
static inline uint32_t k_lanes16(int64_t lo, int64_t n) {
  const int64_t start = lo < 0 ? -lo : 0, end = n - lo > 16 ? 16 : n - lo;
  if (end <= start) {
    return 0;
  }
  return ((1u << end) - 1u) & ~((1u << start) - 1u);
}

// Runs fn over [0, n) on the pool with chunks of at least |grain|; small
// ranges run inline on the caller.
static inline void k_for(wm_pool_t *pool, size_t n, size_t grain,
                         void (*fn)(void *ctx, size_t begin, size_t end),
                         void *ctx) {
  if (n == 0) {
    return;
  }
  if (grain == 0) {
    grain = 1;
  }
  if (n <= grain) {
    fn(ctx, 0, n);
    return;
  }
  wm_pool_for(pool, n, grain, fn, ctx);
}

// Bands of rows per plane for kernels run band-major over planes of
// |rows| output rows: one per thread of |pool| (thread t's share of the
// bands is then about the rows its share of a pointwise product split
// along the positions wrote), none under 4 rows.
static inline int64_t k_row_bands(const wm_pool_t *pool, int64_t rows) {
  const int64_t threads = wm_pool_threads(pool);
  const int64_t bands = threads < rows / 4 ? threads : rows / 4;
  return bands > 1 ? bands : 1;
}

// Grain in rows for row-wise kernels whose rows hold |row| elements.
static inline size_t k_row_grain(size_t row, size_t elems) {
  size_t g = row ? elems / row : elems;
  return g ? g : 1;
}

// Normalizes an axis in [-rank, rank) to [0, rank); false when outside.
static inline bool k_axis(int64_t axis, int32_t rank, int32_t *out) {
  if (axis < -(int64_t)rank || axis >= (int64_t)rank) {
    return false;
  }
  *out = (int32_t)(axis < 0 ? axis + rank : axis);
  return true;
}

// Reads element |i| of an int32 or int64 tensor's data.
static inline int64_t k_load_index(const void *data, uint32_t dtype, size_t i) {
  if (dtype == K_INT32) {
    int32_t v;
    memcpy(&v, (const char *)data + i * 4, 4);
    return v;
  }
  int64_t v;
  memcpy(&v, (const char *)data + i * 8, 8);
  return v;
}

// True when |dtype| is one of the eight integer dtypes.
static inline bool k_is_int(uint32_t dtype) {
  switch (dtype) {
    case K_UINT8:
    case K_INT8:
    case K_UINT16:
    case K_INT16:
    case K_INT32:
    case K_INT64:
    case K_UINT32:
    case K_UINT64:
      return true;
    default:
      return false;
  }
}

// Reads element |i| of integer data of |dtype| (any of the eight, uint64
// as its int64 bits, like the reference reads index lists).
static inline int64_t k_load_int(const void *data, uint32_t dtype, size_t i) {
  const char *p = (const char *)data;
  switch (dtype) {
    case K_UINT8:
      return ((const uint8_t *)data)[i];
    case K_INT8:
      return ((const int8_t *)data)[i];
    case K_UINT16: {
      uint16_t v;
      memcpy(&v, p + 2 * i, 2);
      return v;
    }
    case K_INT16: {
      int16_t v;
      memcpy(&v, p + 2 * i, 2);
      return v;
    }
    case K_UINT32: {
      uint32_t v;
      memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case K_INT32:
    case K_INT64:
      return k_load_index(data, dtype, i);
    default: {
      uint64_t v;
      memcpy(&v, p + 8 * i, 8);
      return (int64_t)v;
    }
  }
}

// The constant value of input |i| of |op| (NULL when the input is absent
// or its value is not known at plan time).
static inline const void *k_const_input(const wm_op_desc *op, uint32_t i) {
  if (i >= op->n_in || op->in[i].dtype == 0 || !op->in_values) {
    return NULL;
  }
  return op->in_values[i];
}

enum { K_LANES = 8 };

// Sum of |n| floats in double, over K_LANES partial sums that vectorize.
static inline double k_row_sum(const float *restrict x, size_t n) {
  double s[K_LANES] = {0};
  size_t i = 0;
  for (; i + K_LANES <= n; i += K_LANES) {
    for (int l = 0; l < K_LANES; l++) {
      s[l] += (double)x[i + (size_t)l];
    }
  }
  double r = 0;
  for (; i < n; i++) {
    r += (double)x[i];
  }
  for (int l = 0; l < K_LANES; l++) {
    r += s[l];
  }
  return r;
}

// The larger of |m| and |v| where a NaN in either wins (and sticks).
static inline float k_max_nan(float m, float v) {
  float r = v > m ? v : m;  // keeps a NaN m: v > NaN is false
  return v != v ? v : r;
}

// Maximum of |n| floats (-inf when empty); NaN when any is NaN.
static inline float k_row_max(const float *restrict x, size_t n) {
  float m[K_LANES];
  for (int l = 0; l < K_LANES; l++) {
    m[l] = -INFINITY;
  }
  size_t i = 0;
  for (; i + K_LANES <= n; i += K_LANES) {
    for (int l = 0; l < K_LANES; l++) {
      m[l] = k_max_nan(m[l], x[i + (size_t)l]);
    }
  }
  float r = -INFINITY;
  for (; i < n; i++) {
    r = k_max_nan(r, x[i]);
  }
  for (int l = 0; l < K_LANES; l++) {
    r = k_max_nan(r, m[l]);
  }
  return r;
}

// ------------------------------------------------------- transcendentals

// Reinterprets the bits of |i| as a float.
static inline float k_bits_to_float(int32_t i) {
  union {
    int32_t i;
    float f;
  } u;
  u.i = i;
  return u.f;
}

// e^x to about 1 ulp, branch-free so loops around it vectorize: Cody-Waite
// reduction by ln 2 and a degree-6 polynomial; 2^n is applied in two
// halves so results near the overflow and underflow limits stay exact.
static inline float k_expf(float x) {
  float xc = x >= -104.0f ? x : -104.0f;  // a NaN x too: n stays in range
  xc = xc > 88.72283f ? 88.72283f : xc;
  float t = xc * 1.44269504088896341f;
  float n = (t + 12582912.0f) - 12582912.0f;  // round to nearest
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float y = p * r * r + r + 1.0f;
  int32_t ni = (int32_t)n;
  int32_t n1 = ni / 2;
  int32_t n2 = ni - n1;
  float res = y * k_bits_to_float((n1 + 127) * (1 << 23)) *
              k_bits_to_float((n2 + 127) * (1 << 23));
  res = x > 88.72283f ? INFINITY : res;
  res = x < -104.0f ? 0.0f : res;
  return x != x ? x : res;
}

// Eight floats at any alignment (one AVX register where there is one)
// and the lane masks of comparing them.
typedef float k_f8 __attribute__((vector_size(32), aligned(4)));
typedef int32_t k_i8 __attribute__((vector_size(32)));

// m ? a : b lane by lane (a macro: a function taking or returning vectors
// would change the ABI of the baseline clones).
#define K_SEL8(m, a, b) ((k_f8)(((m) & (k_i8)(a)) | (~(m) & (k_i8)(b))))

// dst[c * ds + r] = src[r * ss + c] for an 8x8 block, in vectors (the
// unpack, shuffle and 128-bit permute sequence).
static inline __attribute__((always_inline)) void k_t8(
    const float *restrict src, int64_t ss, float *restrict dst, int64_t ds) {
  k_f8 r[8], t[8], u[8];
  for (int k = 0; k < 8; k++) {
    r[k] = *(const k_f8 *)(src + k * ss);
  }
  for (int k = 0; k < 8; k += 2) {
    t[k] = __builtin_shufflevector(r[k], r[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[k + 1] =
        __builtin_shufflevector(r[k], r[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int k = 0; k < 8; k += 4) {
    u[k] = __builtin_shufflevector(t[k], t[k + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    u[k + 1] =
        __builtin_shufflevector(t[k], t[k + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    u[k + 2] =
        __builtin_shufflevector(t[k + 1], t[k + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    u[k + 3] =
        __builtin_shufflevector(t[k + 1], t[k + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int k = 0; k < 4; k++) {
    *(k_f8 *)(dst + k * ds) =
        __builtin_shufflevector(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    *(k_f8 *)(dst + (k + 4) * ds) =
        __builtin_shufflevector(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

// *io = k_expf(*io) lane by lane: the same operations in the same order,
// so the same bits as k_expf in a file built without contraction. With
// |nonpos| (a constant: every lane <= 0 and none NaN, as in a softmax)
// the selects only larger or NaN arguments need are left out.
static inline __attribute__((always_inline)) void k_expf8(k_f8 *io,
                                                          const bool nonpos) {
  const k_f8 zero = {0}, x = *io;
  k_f8 xc = K_SEL8(x >= -104.0f, x, zero - 104.0f);  // a NaN x too
  if (!nonpos) {
    xc = K_SEL8(xc > 88.72283f, zero + 88.72283f, xc);
  }
  k_f8 t = xc * 1.44269504088896341f;
  k_f8 n = (t + 12582912.0f) - 12582912.0f;  // round to nearest
  k_f8 r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  k_f8 p = zero + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  k_f8 y = p * r * r + r + 1.0f;
  k_i8 ni = __builtin_convertvector(n, k_i8);
  k_i8 n1 = ni / 2;
  k_f8 res =
      y * (k_f8)((n1 + 127) * (1 << 23)) * (k_f8)((ni - n1 + 127) * (1 << 23));
  res = K_SEL8(x < -104.0f, zero, res);
  if (!nonpos) {
    res = K_SEL8(x > 88.72283f, zero + INFINITY, res);
    res = K_SEL8(x != x, x, res);
  }
  *io = res;
}

// tanh: an odd polynomial near 0, 1 - 2 / (e^2|x| + 1) elsewhere.
static inline float k_tanhf(float x) {
  float ax = fabsf(x);
  float z = x * x;
  float small =
      ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) *
            z +
        1.33314422036e-1f) *
           z -
       3.33332819422e-1f) *
          z * x +
      x;
  float e = k_expf(2.0f * (ax > 9.0f ? 9.0f : ax));
  float big = 1.0f - 2.0f / (e + 1.0f);
  big = ax > 9.0f ? 1.0f : big;
  big = x < 0 ? -big : big;
  float res = ax < 0.625f ? small : big;
  return x != x ? x : res;
}

// erfc(a) for a >= 0.5 with the Chebyshev fit of Numerical Recipes
// (fractional error < 1.2e-7), which stays accurate where it is tiny.
static inline float k_erfcf_big(float a) {
  float z = a * a;
  float t = 1.0f / (1.0f + 0.5f * a);
  float q = -0.82215223f + t * 0.17087277f;
  q = 1.48851587f + t * q;
  q = -1.13520398f + t * q;
  q = 0.27886807f + t * q;
  q = -0.18628806f + t * q;
  q = 0.09678418f + t * q;
  q = 0.37409196f + t * q;
  q = 1.00002368f + t * q;
  q = -1.26551223f + t * q;
  return t * k_expf(q - z);
}

// erf(x) / x by its odd Taylor series, for |x| < 0.5.
static inline float k_erf_small(float x) {
  float z = x * x;
  return 1.12837916709551257f *
         (1.0f +
          z * (-1.0f / 3 +
               z * (1.0f / 10 +
                    z * (-1.0f / 42 +
                         z * (1.0f / 216 + z * (-1.0f / 1320 + z / 9360))))));
}

// erf: its odd Taylor series below 0.5; above, 1 - erfc with the
// Chebyshev-fitted erfc of Numerical Recipes (fractional error < 1.2e-7).
static inline float k_erff(float x) {
  float ax = fabsf(x);
  float big = 1.0f - k_erfcf_big(ax > 0.5f ? ax : 0.5f);
  big = x < 0 ? -big : big;
  return ax < 0.5f ? x * k_erf_small(x) : big;
}

#endif  // WMAP_BACKENDS_CPU_KERNELS_H_
