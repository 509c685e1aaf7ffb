// Row gathers for packing (gather.h).
#include "gather.h"

#include <stdatomic.h>
#include <string.h>

#include "cpu.h"  // cpu_isa

#if defined(__x86_64__)
#include <immintrin.h>

#define GATHER_TARGET __attribute__((target("avx512f,avx512vl")))

// The rows through one (indices below 16) or two vector loads and a
// permute of the indices, stored under the mask of nr lanes (nr <= 16,
// indices below 32).
GATHER_TARGET static void gather_rows512(const float *src, const int64_t *off,
                                         int64_t kc, const int32_t *idx, int nr,
                                         int32_t span, float *dst) {
  int32_t ix[16] = {0};
  memcpy(ix, idx, (size_t)nr * sizeof(int32_t));
  const __m512i vi = _mm512_loadu_si512(ix);
  const __mmask16 m = (__mmask16)((1u << nr) - 1u);
  if (span < 16) {
    for (int64_t k = 0; k < kc; k++) {
      __m512 v = _mm512_loadu_ps(src + off[k]);
      _mm512_mask_storeu_ps(dst + k * nr, m, _mm512_permutexvar_ps(vi, v));
    }
    return;
  }
  for (int64_t k = 0; k < kc; k++) {
    const float *s = src + off[k];
    __m512 lo = _mm512_loadu_ps(s), hi = _mm512_loadu_ps(s + 16);
    _mm512_mask_storeu_ps(dst + k * nr, m, _mm512_permutex2var_ps(lo, vi, hi));
  }
}
#endif

void cpu_gather_rows(const float *src, const int64_t *off, int64_t kc,
                     const int32_t *idx, int nr, float *dst) {
#if defined(__x86_64__)
  // cpu_isa() + 1, looked up once (every thread finds the same value).
  static atomic_int isa;
  int v = atomic_load_explicit(&isa, memory_order_relaxed);
  if (v == 0) {
    v = (int)cpu_isa() + 1;
    atomic_store_explicit(&isa, v, memory_order_relaxed);
  }
  int32_t span = 0;
  for (int i = 0; i < nr; i++) {
    span = idx[i] > span ? idx[i] : span;
  }
  if (v == (int)CPU_ISA_AVX512 + 1 && nr <= 16 && span < GATHER_SLACK) {
    gather_rows512(src, off, kc, idx, nr, span, dst);
    return;
  }
#endif
  for (int64_t k = 0; k < kc; k++) {
    const float *s = src + off[k];
    float *d = dst + k * nr;
    for (int i = 0; i < nr; i++) {
      d[i] = s[idx[i]];
    }
  }
}
