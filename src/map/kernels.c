// The host measurement loops: FMA chains per ISA (chosen at run time by
// CPUID) and the STREAM triad body. Compiled with -O3 in every build type
// so that the chains are unrolled into registers.
#include "map/kernels.h"

#include <immintrin.h>
#include <string.h>

// Ten independent accumulators hide the FMA latency (4 cycles) times two
// pipes; with the two constants that is 12 vector registers, fitting the
// 16 of AVX2 without spills.
#define WM_FMA_CHAINS 10

__attribute__((target("avx512f"))) static double fma32_avx512(uint64_t iters,
                                                              float seed) {
  __m512 acc[WM_FMA_CHAINS];
  for (int k = 0; k < WM_FMA_CHAINS; k++) {
    acc[k] = _mm512_set1_ps(seed + (float)k);
  }
  __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
  for (uint64_t i = 0; i < iters; i++) {
    for (int k = 0; k < WM_FMA_CHAINS; k++) {
      acc[k] = _mm512_fmadd_ps(acc[k], m, c);
    }
  }
  float out[16];
  __m512 s = acc[0];
  for (int k = 1; k < WM_FMA_CHAINS; k++) {
    s = _mm512_add_ps(s, acc[k]);
  }
  _mm512_storeu_ps(out, s);
  return out[0];
}

__attribute__((target("avx512f"))) static double fma64_avx512(uint64_t iters,
                                                              double seed) {
  __m512d acc[WM_FMA_CHAINS];
  for (int k = 0; k < WM_FMA_CHAINS; k++) {
    acc[k] = _mm512_set1_pd(seed + k);
  }
  __m512d m = _mm512_set1_pd(0.9999999), c = _mm512_set1_pd(1e-7);
  for (uint64_t i = 0; i < iters; i++) {
    for (int k = 0; k < WM_FMA_CHAINS; k++) {
      acc[k] = _mm512_fmadd_pd(acc[k], m, c);
    }
  }
  double out[8];
  __m512d s = acc[0];
  for (int k = 1; k < WM_FMA_CHAINS; k++) {
    s = _mm512_add_pd(s, acc[k]);
  }
  _mm512_storeu_pd(out, s);
  return out[0];
}

__attribute__((target("avx2,fma"))) static double fma32_avx2(uint64_t iters,
                                                             float seed) {
  __m256 acc[WM_FMA_CHAINS];
  for (int k = 0; k < WM_FMA_CHAINS; k++) {
    acc[k] = _mm256_set1_ps(seed + (float)k);
  }
  __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
  for (uint64_t i = 0; i < iters; i++) {
    for (int k = 0; k < WM_FMA_CHAINS; k++) {
      acc[k] = _mm256_fmadd_ps(acc[k], m, c);
    }
  }
  float out[8];
  __m256 s = acc[0];
  for (int k = 1; k < WM_FMA_CHAINS; k++) {
    s = _mm256_add_ps(s, acc[k]);
  }
  _mm256_storeu_ps(out, s);
  return out[0];
}

__attribute__((target("avx2,fma"))) static double fma64_avx2(uint64_t iters,
                                                             double seed) {
  __m256d acc[WM_FMA_CHAINS];
  for (int k = 0; k < WM_FMA_CHAINS; k++) {
    acc[k] = _mm256_set1_pd(seed + k);
  }
  __m256d m = _mm256_set1_pd(0.9999999), c = _mm256_set1_pd(1e-7);
  for (uint64_t i = 0; i < iters; i++) {
    for (int k = 0; k < WM_FMA_CHAINS; k++) {
      acc[k] = _mm256_fmadd_pd(acc[k], m, c);
    }
  }
  double out[4];
  __m256d s = acc[0];
  for (int k = 1; k < WM_FMA_CHAINS; k++) {
    s = _mm256_add_pd(s, acc[k]);
  }
  _mm256_storeu_pd(out, s);
  return out[0];
}

// Baseline x86-64 (SSE2, no FMA): a multiply and an add per lane, which
// counts as the same 2 FLOP.
static double fma32_default(uint64_t iters, float seed) {
  __m128 acc[WM_FMA_CHAINS];
  for (int k = 0; k < WM_FMA_CHAINS; k++) {
    acc[k] = _mm_set1_ps(seed + (float)k);
  }
  __m128 m = _mm_set1_ps(0.9999999f), c = _mm_set1_ps(1e-7f);
  for (uint64_t i = 0; i < iters; i++) {
    for (int k = 0; k < WM_FMA_CHAINS; k++) {
      acc[k] = _mm_add_ps(_mm_mul_ps(acc[k], m), c);
    }
  }
  float out[4];
  __m128 s = acc[0];
  for (int k = 1; k < WM_FMA_CHAINS; k++) {
    s = _mm_add_ps(s, acc[k]);
  }
  _mm_storeu_ps(out, s);
  return out[0];
}

static double fma64_default(uint64_t iters, double seed) {
  __m128d acc[WM_FMA_CHAINS];
  for (int k = 0; k < WM_FMA_CHAINS; k++) {
    acc[k] = _mm_set1_pd(seed + k);
  }
  __m128d m = _mm_set1_pd(0.9999999), c = _mm_set1_pd(1e-7);
  for (uint64_t i = 0; i < iters; i++) {
    for (int k = 0; k < WM_FMA_CHAINS; k++) {
      acc[k] = _mm_add_pd(_mm_mul_pd(acc[k], m), c);
    }
  }
  double out[2];
  __m128d s = acc[0];
  for (int k = 1; k < WM_FMA_CHAINS; k++) {
    s = _mm_add_pd(s, acc[k]);
  }
  _mm_storeu_pd(out, s);
  return out[0];
}

const char *wm_map_isa(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    return "avx512f";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return "avx2";
  }
  return "default";
}

double wm_map_fma(bool fp64, uint64_t iters, double seed, uint64_t *out_flops) {
  const char *isa = wm_map_isa();
  uint64_t lanes;
  double r;
  if (strcmp(isa, "avx512f") == 0) {
    lanes = fp64 ? 8 : 16;
    r = fp64 ? fma64_avx512(iters, seed) : fma32_avx512(iters, (float)seed);
  } else if (strcmp(isa, "avx2") == 0) {
    lanes = fp64 ? 4 : 8;
    r = fp64 ? fma64_avx2(iters, seed) : fma32_avx2(iters, (float)seed);
  } else {
    lanes = fp64 ? 2 : 4;
    r = fp64 ? fma64_default(iters, seed) : fma32_default(iters, (float)seed);
  }
  *out_flops = iters * WM_FMA_CHAINS * lanes * 2;
  return r;
}

void wm_map_triad(float *a, const float *b, const float *c, float s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    a[i] = b[i] + s * c[i];
  }
}
