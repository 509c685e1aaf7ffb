// The max pool kernel for AVX-512 (maxpool.h).
#include "maxpool.h"

#include <math.h>

#include "cpu.h"  // cpu_isa

#if defined(__x86_64__)
#include <immintrin.h>

#define MP_TARGET __attribute__((target("avx512f,avx512vl")))

// Input columns a row may have: the padded row lives on the stack.
enum { MP_MAX_COLS = 4096 };

// max(a, b), NaN where either is NaN (vmaxps alone would return its
// second operand).
MP_TARGET static inline __m512 mp_max(__m512 a, __m512 b) {
  const __mmask16 nan = _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q);
  return _mm512_mask_blend_ps(nan, _mm512_max_ps(a, b), _mm512_set1_ps(NAN));
}

// One output row: the maximum of input rows [h0, h1) into the padded
// row t (t[pl + c] for input column c, -inf around), then of each
// window's columns: output column c takes t[2c .. 2c + k).
MP_TARGET static void mp_row(const cpu_mp_plane_t *g, const float *x,
                             int64_t h0, int64_t h1, float *restrict t,
                             float *restrict y) {
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  const int64_t iw = g->iw, pl = g->pl;
  t[0] = -INFINITY;  // the left pad, if any (else input column 0)
  for (int64_t c = 0; c < iw; c += 16) {
    const __mmask16 m =
        iw - c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (iw - c)) - 1u);
    __m512 v = _mm512_mask_loadu_ps(ninf, m, x + h0 * iw + c);
    for (int64_t h = h0 + 1; h < h1; h++) {
      v = mp_max(v, _mm512_mask_loadu_ps(ninf, m, x + h * iw + c));
    }
    _mm512_mask_storeu_ps(t + pl + c, m, v);
  }
  // -inf past the row, as far as the last vectors read.
  for (int64_t c = pl + iw; c < 2 * g->ow + g->k + 32; c += 16) {
    _mm512_storeu_ps(t + c, ninf);
  }
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20,
                                         22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (int64_t c = 0; c < g->ow; c += 16) {
    const float *s = t + 2 * c;
    const __m512 a = _mm512_loadu_ps(s), b = _mm512_loadu_ps(s + 16);
    __m512 v = mp_max(_mm512_permutex2var_ps(a, even, b),
                      _mm512_permutex2var_ps(a, odd, b));
    if (g->k == 3) {
      const __m512 a2 = _mm512_loadu_ps(s + 2), b2 = _mm512_loadu_ps(s + 18);
      v = mp_max(v, _mm512_permutex2var_ps(a2, even, b2));
    }
    const int64_t left = g->ow - c;
    _mm512_mask_storeu_ps(
        y + c, left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u),
        v);
  }
}

bool cpu_mp512_takes(const cpu_mp_plane_t *g) {
  // The last window of a row starts at 2 (ow - 1) - pl and must touch the
  // input; the padded row and what the last vectors read fit the stack.
  return cpu_isa() == CPU_ISA_AVX512 && (g->k == 2 || g->k == 3) &&
         (g->pt == 0 || g->pt == 1) && (g->pl == 0 || g->pl == 1) &&
         g->pt < g->k && g->pl < g->k && g->oh > 0 && g->ow > 0 && g->iw > 0 &&
         g->ih > 0 && 2 * (g->ow - 1) - g->pl < g->iw &&
         2 * (g->oh - 1) - g->pt < g->ih && g->iw <= MP_MAX_COLS &&
         2 * g->ow + g->k + 32 <= MP_MAX_COLS + 64;
}

MP_TARGET void cpu_mp512_rows(const cpu_mp_plane_t *g, const float *x, float *y,
                              int64_t r0, int64_t r1) {
  _Alignas(64) float t[MP_MAX_COLS + 64 + 32];
  for (int64_t r = r0 < 0 ? 0 : r0; r < r1 && r < g->oh; r++) {
    int64_t h0 = 2 * r - g->pt, h1 = h0 + g->k;
    h0 = h0 < 0 ? 0 : h0;
    h1 = h1 > g->ih ? g->ih : h1;
    mp_row(g, x, h0, h1, t, y + r * g->ow);
  }
}

#else  // no AVX-512 kernel on this architecture

bool cpu_mp512_takes(const cpu_mp_plane_t *g) {
  (void)g;
  return false;
}

void cpu_mp512_rows(const cpu_mp_plane_t *g, const float *x, float *y,
                    int64_t r0, int64_t r1) {
  (void)g, (void)x, (void)y, (void)r0, (void)r1;
}

#endif
