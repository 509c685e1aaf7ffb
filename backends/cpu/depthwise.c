// The direct depthwise kernel for AVX-512 (depthwise.h): each output row
// 16 columns at a time, each input row's tap columns taken once from two
// loads and lane shifts (stride 1, dw_taps1) or three loads and permutes
// of their even and odd floats (stride 2, dw_taps2), masked at the row's
// borders, one fused multiply-add per tap, then Z, the bias-carrying
// accumulator's activation and a masked store.
#include "depthwise.h"

#include <math.h>
#include <stddef.h>

#include "kernels.h"  // k_lanes16

#if defined(__x86_64__)
#include <immintrin.h>

#define DW_TARGET __attribute__((target("avx512f,avx512vl,fma")))

// Blocks of 16 output columns a row may have (wider rows go elsewhere),
// and the fewest output columns the kernel takes.
enum { DW_MAX_BLOCKS = 64, DW_MIN_COLS = 48 };
// Load masks kept per block of output columns (dw_plane).
enum { DW_MK = 12 };

// A row of zeros as long as any load of a padding row reaches.
static const float dw_zero_row[DW_MAX_BLOCKS * 32 + 64]
    __attribute__((aligned(64))) = {0};

// Whether the activation runs in registers, as min(max(x * sa + sb, lo),
// hi), times x for HardSwish (the rest over the plane after).
static bool dw_act_in_registers(cpu_act_kind_t kind) {
  return kind == CPU_ACT_NONE || kind == CPU_ACT_RELU || kind == CPU_ACT_CLIP ||
         kind == CPU_ACT_HARD_SIGMOID || kind == CPU_ACT_HARD_SWISH;
}

// The activation in registers (dw_act_in_registers).
typedef struct dw_act {
  __m512 sa, sb, lo, hi;  // min(max(x * sa + sb, lo), hi)
  bool times_x;           // HardSwish: then times x
} dw_act_t;

DW_TARGET static dw_act_t dw_act_of(const cpu_act_t *act) {
  dw_act_t a = {_mm512_set1_ps(1.0f), _mm512_setzero_ps(),
                _mm512_set1_ps(-INFINITY), _mm512_set1_ps(INFINITY), false};
  switch (act->kind) {
    case CPU_ACT_RELU:
      a.lo = _mm512_setzero_ps();
      break;
    case CPU_ACT_CLIP:
      a.lo = _mm512_set1_ps(act->p0);
      a.hi = _mm512_set1_ps(act->p1);
      break;
    case CPU_ACT_HARD_SIGMOID:
    case CPU_ACT_HARD_SWISH:
      a.sa = _mm512_set1_ps(act->kind == CPU_ACT_HARD_SWISH ? 1.0f / 6.0f
                                                            : act->p0);
      a.sb = _mm512_set1_ps(act->kind == CPU_ACT_HARD_SWISH ? 0.5f : act->p1);
      a.lo = _mm512_setzero_ps();
      a.hi = _mm512_set1_ps(1.0f);
      a.times_x = act->kind == CPU_ACT_HARD_SWISH;
      break;
    default:
      break;
  }
  return a;
}

// The K tap columns of a stride-2 row from its floats at |r| (the first
// tap's): three loads, the even and odd floats of the first 32 (taps 0 and
// 1), and those shifted on into the third vector for taps 2 to 4 (tap 2m
// + p: lane i holds r[2 (i + m) + p]); zero outside the row where |mk|
// (dw_plane's masks) says.
DW_TARGET static inline __attribute__((always_inline)) void dw_taps2(
    const float *r, const uint16_t *mk, bool masked, __m512 *taps,
    const int K) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20,
                                         22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  __m512 a, b;
  if (masked) {
    a = _mm512_maskz_loadu_ps((__mmask16)mk[0], r);
    b = _mm512_maskz_loadu_ps((__mmask16)mk[1], r + 16);
  } else {
    a = _mm512_loadu_ps(r);
    b = _mm512_loadu_ps(r + 16);
  }
  taps[0] = _mm512_permutex2var_ps(a, even, b);
  taps[1] = _mm512_permutex2var_ps(a, odd, b);
  if (K > 2) {
    const __m512 c = _mm512_maskz_loadu_ps((__mmask16)mk[10], r + 32);
    _Pragma("GCC unroll 3") for (int kw = 2; kw < K; kw++) {
      const int m = kw / 2, p = kw % 2;
      int32_t ix[16];
      for (int i = 0; i < 16; i++) {
        ix[i] = i + m < 16 ? i + m : 16 + 2 * (i + m - 16) + p;
      }
      taps[kw] = _mm512_permutex2var_ps(taps[p], _mm512_loadu_si512(ix), c);
    }
  }
}

// The K tap columns of a stride-1 row from its floats at |r| (the first
// tap's): a load of the 16 and one of the K - 1 after them, tap kw their
// concatenation shifted by kw lanes (two loads a row, not K misaligned
// ones: the 3x3 kernel over 16 planes of 56x56 in L2, 3.5 -> 2.6 ns an
// output vector); zero outside the row where |mk| (dw_plane's masks)
// says.
DW_TARGET static inline __attribute__((always_inline)) void dw_taps1(
    const float *r, const uint16_t *mk, bool masked, __m512 *taps,
    const int K) {
  const __mmask16 tail = (__mmask16)((1u << (K - 1)) - 1u);
  const __m512i a = _mm512_castps_si512(
      masked ? _mm512_maskz_loadu_ps((__mmask16)mk[0], r) : _mm512_loadu_ps(r));
  const __m512i b = _mm512_castps_si512(
      _mm512_maskz_loadu_ps(masked ? (__mmask16)(mk[1] & tail) : tail, r + 16));
  taps[0] = _mm512_castsi512_ps(a);
  _Pragma("GCC unroll 4") for (int kw = 1; kw < K; kw++) {
    taps[kw] = _mm512_castsi512_ps(_mm512_alignr_epi32(b, a, kw));
  }
}

// Output columns [j0, j0 + 16) of R consecutive output rows (masked
// stores past ow) from their (R - 1) * S + K input rows |in| (a zero row
// in the padding): each input row's K tap columns loaded once and
// multiplied into every output row it feeds; |masked| where a tap may lie
// outside the row, with mk[2 kw], mk[2 kw + 1] the masks of tap column
// kw's loads. R, K
// and S constants at each call.
DW_TARGET static inline __attribute__((always_inline)) void dw_block(
    const cpu_dw_plane_t *g, const float *const *in, const __m512 *wv,
    __m512 vb, const dw_act_t *act, const float *z, float *y, int64_t j0,
    bool masked, const uint16_t *mk, __mmask16 om, const int R, const int K,
    const int S) {
  __m512 acc[4];
  _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
    acc[i] = vb;
  }
  _Pragma("GCC unroll 16") for (int q = 0; q < (R - 1) * S + K; q++) {
    __m512 taps[5];
    if (S == 2) {
      dw_taps2(in[q] + j0 * 2 - g->pl, mk, masked, taps, K);
    } else {
      dw_taps1(in[q] + j0 - g->pl, mk, masked, taps, K);
    }
    _Pragma("GCC unroll 5") for (int kw = 0; kw < K; kw++) {
      const __m512 v = taps[kw];
      _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
        const int kh = q - i * S;
        if (kh >= 0 && kh < K) {
          acc[i] = _mm512_fmadd_ps(wv[kh * K + kw], v, acc[i]);
        }
      }
    }
  }
  _Pragma("GCC unroll 4") for (int i = 0; i < R; i++) {
    __m512 a = acc[i];
    if (z) {
      a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(om, z + i * g->ow + j0));
    }
    __m512 t = _mm512_fmadd_ps(a, act->sa, act->sb);
    t = _mm512_min_ps(_mm512_max_ps(t, act->lo), act->hi);
    a = act->times_x ? _mm512_mul_ps(a, t) : t;
    _mm512_mask_storeu_ps(y + i * g->ow + j0, om, a);
  }
}

// Blocks of output columns of R output rows from oh (see dw_block).
DW_TARGET static inline __attribute__((always_inline)) void dw_rows(
    const cpu_dw_plane_t *g, const float *x, const float *zero,
    const __m512 *wv, __m512 vb, const dw_act_t *act, const float *z, float *y,
    int64_t oh, int64_t nb, const bool *inside, const uint16_t *mk,
    const __mmask16 *om, const int R, const int K, const int S) {
  const float *in[4 * 2 + 5];
  for (int q = 0; q < (R - 1) * S + K; q++) {
    const int64_t ih = oh * S - g->pt + q;
    in[q] = ih >= 0 && ih < g->ih ? x + ih * g->iw : zero;
  }
  const float *zr = z ? z + oh * g->ow : NULL;
  float *yr = y + oh * g->ow;
  for (int64_t b = 0; b < nb; b++) {
    if (inside[b]) {
      dw_block(g, in, wv, vb, act, zr, yr, b * 16, false, mk + DW_MK * b, om[b],
               R, K, S);
    } else {
      dw_block(g, in, wv, vb, act, zr, yr, b * 16, true, mk + DW_MK * b, om[b],
               R, K, S);
    }
  }
}

// The plane, K and S constants at each call: per block of 16 output
// columns, whether its taps all lie inside the row (plain loads), the
// masks of its loads and of its store (the same for every row); then
// four output rows at a time, the last ones one by one.
DW_TARGET static inline __attribute__((always_inline)) void dw_plane(
    const cpu_dw_plane_t *g, const float *x, const float *w, float bias,
    const float *z, float *y, int64_t r0, int64_t r1, const int K,
    const int S) {
  __m512 wv[25];
  for (int t = 0; t < K * K; t++) {
    wv[t] = _mm512_set1_ps(w[t]);
  }
  const __m512 vb = _mm512_set1_ps(bias);
  const dw_act_t act = dw_act_of(&g->act);
  bool inside[DW_MAX_BLOCKS];
  // Block b's masks: tap column kw's two loads at DW_MK b + 2 kw, then
  // (stride 2) the third vector of its row at DW_MK b + 10.
  uint16_t mk[DW_MAX_BLOCKS * DW_MK];
  __mmask16 om[DW_MAX_BLOCKS];
  const int64_t nb = (g->ow + 15) / 16;
  for (int64_t b = 0; b < nb; b++) {
    // The last float block b reads: column first + 16 * S - 1 + K - 1.
    const int64_t first = b * 16 * S - g->pl;
    inside[b] = first >= 0 && first + 16 * S + K - 2 < g->iw;
    for (int kw = 0; kw < K; kw++) {
      mk[DW_MK * b + 2 * kw] = (uint16_t)k_lanes16(first + kw, g->iw);
      mk[DW_MK * b + 2 * kw + 1] = (uint16_t)k_lanes16(first + kw + 16, g->iw);
    }
    // What a row's third vector holds for the taps past the first two:
    // its first K - 2 floats.
    mk[DW_MK * b + 10] = (uint16_t)(k_lanes16(first + 32, g->iw) &
                                    ((1u << (K > 2 ? K - 2 : 0)) - 1u));
    om[b] = (__mmask16)k_lanes16(b * 16, g->ow);
  }
  // The padding rows: masked loads from them read nothing past the row.
  // Shared and read-only: zeroing 8 KiB on the stack per call cost the
  // stride-2 96-channel plane at 112 a quarter of its time once planes
  // came in two bands of rows.
  const float *zero = dw_zero_row;
  int64_t oh = r0;
  for (; oh + 4 <= r1; oh += 4) {
    dw_rows(g, x, zero, wv, vb, &act, z, y, oh, nb, inside, mk, om, 4, K, S);
  }
  for (; oh < r1; oh++) {
    dw_rows(g, x, zero, wv, vb, &act, z, y, oh, nb, inside, mk, om, 1, K, S);
  }
}

// The plane function of each kernel size and stride the kernel takes.
#define DW_PLANE_FN(K, S)                                                  \
  DW_TARGET static void dw_plane_##K##_##S(                                \
      const cpu_dw_plane_t *g, const float *x, const float *w, float bias, \
      const float *z, float *y, int64_t r0, int64_t r1) {                  \
    dw_plane(g, x, w, bias, z, y, r0, r1, K, S);                           \
  }
DW_PLANE_FN(3, 1)
DW_PLANE_FN(3, 2)
DW_PLANE_FN(5, 1)
DW_PLANE_FN(5, 2)
#undef DW_PLANE_FN

bool cpu_dw512_takes(const cpu_dw_plane_t *g) {
  // Rows of at least DW_MIN_COLS outputs: narrower ones leave most lanes
  // of their blocks idle or masked, and run faster with the channels in
  // the lanes (blas.c's depthwise_blocks8): 28 columns at 0.83 against
  // 0.45 ns an output, 56 at 0.26 against 0.33.
  return cpu_isa() == CPU_ISA_AVX512 && (g->k == 3 || g->k == 5) &&
         (g->s == 1 || g->s == 2) && g->oh > 0 && g->ow >= DW_MIN_COLS &&
         g->ow <= 16 * DW_MAX_BLOCKS && g->iw <= 16 * DW_MAX_BLOCKS;
}

void cpu_dw512_rows(const cpu_dw_plane_t *g, const float *x, const float *w,
                    float bias, const float *z, float *y, int64_t r0,
                    int64_t r1) {
  r0 = r0 < 0 ? 0 : r0;
  r1 = r1 > g->oh ? g->oh : r1;
  if (r1 <= r0) {
    return;
  }
  if (g->k == 3) {
    (g->s == 1 ? dw_plane_3_1 : dw_plane_3_2)(g, x, w, bias, z, y, r0, r1);
  } else {
    (g->s == 1 ? dw_plane_5_1 : dw_plane_5_2)(g, x, w, bias, z, y, r0, r1);
  }
  if (!dw_act_in_registers(g->act.kind)) {
    cpu_act_apply(&g->act, y + r0 * g->ow, (size_t)((r1 - r0) * g->ow));
  }
}

#else  // no AVX-512 kernel on this architecture

bool cpu_dw512_takes(const cpu_dw_plane_t *g) {
  (void)g;
  return false;
}

void cpu_dw512_rows(const cpu_dw_plane_t *g, const float *x, const float *w,
                    float bias, const float *z, float *y, int64_t r0,
                    int64_t r1) {
  (void)g, (void)x, (void)w, (void)bias, (void)z, (void)y, (void)r0, (void)r1;
}

#endif
