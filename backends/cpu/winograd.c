// Winograd F(2x2, 3x3) convolutions on AVX-512 (winograd.h).
//
// With d a 4x4 tile of the padded image, g a 3x3 filter and
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],
//   G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1],
//   A^T = [1 1 1 0; 0 1 -1 -1],
// the tile's 2x2 outputs are A^T [(G g G^T) . (B^T d B)] A. Value xi =
// 4 i + j of the transforms is one product over the channels:
// M_xi (m x tiles) = U_xi (m x c) V_xi (c x tiles). The tiles of an image
// row are the products' consecutive columns, so both transforms run 16
// tiles to a vector.
#include "winograd.h"

#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "kernels.h"

// The widest image and output rows (the input transform keeps the masks
// of each vector of tiles on the stack).
enum { WINO_MAX_COLS = 2048 };

static int64_t wino_round(int64_t v, int64_t to) {
  return (v + to - 1) / to * to;
}

// Whether the products run transposed, the tiles as their rows: where
// the tiles fill the GEMM's NR-wide panels worse than the channels do.
static bool wino_tr(int64_t tiles, int64_t m) {
  const int64_t nr = cpu_gemm_tile_cols();
  return (double)wino_round(tiles, nr) / (double)tiles >
         1.05 * (double)wino_round(m, nr) / (double)m;
}

// The products' multiply-adds per pair of channels (wino_tr).
static double wino_macs(int64_t tiles, int64_t m) {
  const int64_t nr = cpu_gemm_tile_cols();
  return wino_tr(tiles, m)
             ? 16.0 * (double)tiles * (double)wino_round(m, nr) / (double)m
             : 16.0 * (double)wino_round(tiles, nr);
}

bool cpu_wino_takes(const cpu_wino_t *wg) {
#if defined(__x86_64__)
  const int64_t n = wg->n, c = wg->c, m = wg->m, oh = wg->oh, ow = wg->ow;
  if (cpu_isa() != CPU_ISA_AVX512 || n < 1 || c < 16 || m < 16 || oh < 2 ||
      ow < 2 || wg->ih < 1 || wg->iw < 1 || wg->pt < 0 || wg->pl < 0 ||
      wg->pt > 2 || wg->pl > 2 || wg->iw > WINO_MAX_COLS ||
      ow > WINO_MAX_COLS) {
    return false;
  }
  const int64_t th = (oh + 1) / 2, tw = (ow + 1) / 2;
  int64_t tiles, vals;
  if (!wm_checked_mul_i64(n, th * tw, &tiles) ||
      !wm_checked_mul_i64(wino_round(tiles, 16), 16 * (c > m ? c : m), &vals) ||
      vals > ((int64_t)1 << 28)) {
    return false;
  }
  // Per pair of channels: multiply-adds (16 per tile against 9 per
  // output) plus the filter's floats (16 against 9), each streamed from
  // memory in about 25 multiply-adds' time. The transforms' passes over
  // memory want a gain beyond 0.7: resnet50's 3x3s at 56x56, 28x28 and
  // 14x14 take it (0.45 to 0.6), those at 7x7 over 512 channels, with
  // 16 MiB of transformed filters, do not.
  const double wino = wino_macs(tiles, m) + 16.0 * 25.0;
  const double direct = 9.0 * ((double)(n * oh * ow) + 25.0);
  return wino < 0.7 * direct;
#else
  (void)wg;
  return false;
#endif
}

wm_error *cpu_wino_plan(cpu_wino_t *wg, const float *w) {
  wg->th = (wg->oh + 1) / 2;
  wg->tw = (wg->ow + 1) / 2;
  wg->tiles = wg->n * wg->th * wg->tw;
  wg->ld = wino_round(wg->tiles, 16);
  wg->tr = wino_tr(wg->tiles, wg->m);
  const int64_t m = wg->m, c = wg->c;
  float *ut = malloc((size_t)(CPU_WINO_VALUES * m * c) * sizeof(float));
  if (!ut) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "Conv: out of memory for Winograd filters of %lld x %lld",
                     (long long)m, (long long)c);
  }
  for (int64_t k = 0; k < m; k++) {
    for (int64_t ci = 0; ci < c; ci++) {
      const float *g = w + (size_t)((k * c + ci) * 9);
      float gg[4][3], u[4][4];
      for (int j = 0; j < 3; j++) {  // G g
        gg[0][j] = g[j];
        gg[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
        gg[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
        gg[3][j] = g[6 + j];
      }
      for (int i = 0; i < 4; i++) {  // (G g) G^T
        u[i][0] = gg[i][0];
        u[i][1] = 0.5f * (gg[i][0] + gg[i][1] + gg[i][2]);
        u[i][2] = 0.5f * (gg[i][0] - gg[i][1] + gg[i][2]);
        u[i][3] = gg[i][2];
      }
      for (int xi = 0; xi < CPU_WINO_VALUES; xi++) {
        ut[(size_t)((xi * m + k) * c + ci)] = u[xi / 4][xi % 4];
      }
    }
  }
  wm_error *e = NULL;
  for (int xi = 0; xi < CPU_WINO_VALUES && !e; xi++) {
    const float *u = ut + (size_t)(xi * m * c);
    e = wg->tr ? cpu_gemm_pack(CPU_GEMM_B, m, c, u, 1, c, &wg->u[xi])
               : cpu_gemm_pack(CPU_GEMM_A, m, c, u, c, 1, &wg->u[xi]);
  }
  free(ut);
  return e;
}

void cpu_wino_deinit(cpu_wino_t *wg) {
  for (int xi = 0; xi < CPU_WINO_VALUES; xi++) {
    cpu_gemm_packed_deinit(&wg->u[xi]);
  }
}

// Floats of the transformed tiles and of the products.
static size_t wino_floats(const cpu_wino_t *wg) {
  return (size_t)(CPU_WINO_VALUES * (wg->c + wg->m) * wg->ld);
}

size_t cpu_wino_workspace(const cpu_wino_t *wg, int32_t threads) {
  return wino_floats(wg) * sizeof(float) +
         (wg->tr ? cpu_gemm_block_workspace_bytes(threads)
                 : cpu_gemm_workspace_bytes(threads));
}

// One run's buffers and operands.
typedef struct wino_job {
  const cpu_wino_t *wg;
  const float *x, *bias, *z;
  cpu_act_t act;
  float *v;   // V_xi at v + xi * c * ld, a row of ld floats per channel
  float *mm;  // M_xi at mm + xi * m * ld, a row per output channel
  float *y;
} wino_job_t;

// Batch member xi: M_xi = U_xi V_xi, V read in place; transposed, M_xi^T
// = V_xi^T U_xi^T written transposed, so M_xi is laid out alike.
static void wino_member(const void *ctx, size_t xi, cpu_gemm_problem_t *out) {
  const wino_job_t *j = ctx;
  const cpu_wino_t *wg = j->wg;
  const float *v = j->v + xi * (size_t)(wg->c * wg->ld);
  memset(out, 0, sizeof(*out));
  out->k = wg->c;
  if (wg->tr) {
    out->m = wg->tiles;
    out->n = wg->m;
    out->a.data = v;
    out->a.rs = 1;
    out->a.cs = wg->ld;
    out->b.packed = &wg->u[xi];
    out->ct = true;
  } else {
    out->m = wg->m;
    out->n = wg->tiles;
    out->a.packed = &wg->u[xi];
    out->b.data = v;
    out->b.rs = wg->ld;
    out->b.cs = 1;
  }
  out->c = j->mm + xi * (size_t)(wg->m * wg->ld);
  out->ldc = wg->ld;
  out->epi = cpu_gemm_epi_plain();
}

#if defined(__x86_64__)
#include <immintrin.h>

#define WINO_TARGET __attribute__((target("avx512f,avx512vl,fma")))

// Input transform of channels (image * c + channel) [begin, end): per row
// of tiles and 16 tiles at a time, V = B^T d B, the tiles' columns 2 tx
// .. 2 tx + 3 of each of their four image rows taken from the even and
// odd floats of three masked loads (zero in the padding).
WINO_TARGET static void wino_in(void *ctx, size_t begin, size_t end) {
  const wino_job_t *j = ctx;
  const cpu_wino_t *wg = j->wg;
  const size_t vs = (size_t)(wg->c * wg->ld);
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20,
                                         22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i next =
      _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
  const __m512i next1 =
      _mm512_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17);
  // Per vector of tiles: the masks of its three loads of a row.
  __mmask16 mk[WINO_MAX_COLS / 32][3];
  const int64_t nq = (wg->tw + 15) / 16;
  for (int64_t q = 0; q < nq; q++) {
    for (int h = 0; h < 3; h++) {
      mk[q][h] = (__mmask16)k_lanes16(32 * q - wg->pl + 16 * h, wg->iw);
    }
  }
  for (size_t u = begin; u < end; u++) {
    const int64_t img = (int64_t)u / wg->c, ci = (int64_t)u % wg->c;
    const float *xc = j->x + (size_t)(u * (size_t)(wg->ih * wg->iw));
    float *vc = j->v + (size_t)(ci * wg->ld + img * wg->th * wg->tw);
    for (int64_t ty = 0; ty < wg->th; ty++) {
      const float *row[4];  // NULL: a padding row
      for (int r = 0; r < 4; r++) {
        const int64_t ih = 2 * ty - wg->pt + r;
        row[r] = ih >= 0 && ih < wg->ih ? xc + ih * wg->iw - wg->pl : NULL;
      }
      float *dst = vc + ty * wg->tw;
      for (int64_t q = 0; q < nq; q++) {
        __m512 t[4][4];
        for (int r = 0; r < 4; r++) {
          if (!row[r]) {
            t[r][0] = t[r][1] = t[r][2] = t[r][3] = _mm512_setzero_ps();
            continue;
          }
          // Lanes outside the row are masked off (and do not fault).
          const float *p = row[r] + 32 * q;
          const __m512 a = _mm512_maskz_loadu_ps(mk[q][0], p);
          const __m512 b = _mm512_maskz_loadu_ps(mk[q][1], p + 16);
          const __m512 cv = _mm512_maskz_loadu_ps(mk[q][2], p + 32);
          const __m512 d0 = _mm512_permutex2var_ps(a, even, b);
          const __m512 d1 = _mm512_permutex2var_ps(a, odd, b);
          const __m512 d2 = _mm512_permutex2var_ps(d0, next, cv);
          const __m512 d3 = _mm512_permutex2var_ps(d1, next1, cv);
          t[r][0] = _mm512_sub_ps(d0, d2);  // d B
          t[r][1] = _mm512_add_ps(d1, d2);
          t[r][2] = _mm512_sub_ps(d2, d1);
          t[r][3] = _mm512_sub_ps(d1, d3);
        }
        // Whole vectors where the lanes past the row land within the next
        // row of the image, written after; else only the row's tiles (no
        // write past the image, which another thread may be filling).
        const __mmask16 k = ty + 1 < wg->th && 16 * (q + 1) <= 2 * wg->tw
                                ? (__mmask16)0xffff
                                : (__mmask16)k_lanes16(16 * q, wg->tw);
        float *o = dst + 16 * q;
        for (int c4 = 0; c4 < 4; c4++) {  // B^T (d B)
          _mm512_mask_storeu_ps(o + (size_t)c4 * vs, k,
                                _mm512_sub_ps(t[0][c4], t[2][c4]));
          _mm512_mask_storeu_ps(o + (size_t)(4 + c4) * vs, k,
                                _mm512_add_ps(t[1][c4], t[2][c4]));
          _mm512_mask_storeu_ps(o + (size_t)(8 + c4) * vs, k,
                                _mm512_sub_ps(t[2][c4], t[1][c4]));
          _mm512_mask_storeu_ps(o + (size_t)(12 + c4) * vs, k,
                                _mm512_sub_ps(t[1][c4], t[3][c4]));
        }
      }
    }
  }
}

// The activations applied in registers (wino_store_row).
static bool wino_act_in_registers(cpu_act_kind_t kind) {
  return kind == CPU_ACT_NONE || kind == CPU_ACT_RELU || kind == CPU_ACT_CLIP;
}

// Stores row |y| of 2 n outputs interleaved from the columns |e| (even)
// and |o| (odd) of n tiles, plus the bias and Z, then |kind|'s clamp as
// the engine's epilogue does it (ReLU: x > 0 ? x : 0, NaN to 0; Clip:
// below lo to lo, above hi to hi, NaN kept).
WINO_TARGET static inline void wino_store_row(__m512 e, __m512 o, __m512 bias,
                                              const float *z, float *y,
                                              int64_t n, cpu_act_kind_t kind,
                                              __m512 lo, __m512 hi) {
  const __m512i first =
      _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i second = _mm512_add_epi32(first, _mm512_set1_epi32(8));
  const __mmask16 k0 = (__mmask16)k_lanes16(0, n),
                  k1 = (__mmask16)k_lanes16(16, n);
  __m512 v[2] = {_mm512_add_ps(_mm512_permutex2var_ps(e, first, o), bias),
                 _mm512_add_ps(_mm512_permutex2var_ps(e, second, o), bias)};
  for (int h = 0; h < 2; h++) {
    if (z) {
      v[h] =
          _mm512_add_ps(v[h], _mm512_maskz_loadu_ps(h ? k1 : k0, z + 16 * h));
    }
    if (kind == CPU_ACT_RELU) {
      v[h] = _mm512_max_ps(v[h], lo);  // the second operand where NaN
    } else if (kind == CPU_ACT_CLIP) {
      v[h] = _mm512_min_ps(hi, _mm512_max_ps(lo, v[h]));
    }
    _mm512_mask_storeu_ps(y + 16 * h, h ? k1 : k0, v[h]);
  }
}

// Output transform of planes (image * m + channel) [begin, end): the 2x2
// outputs A^T M A of 16 tiles at a time, written as two rows of 32.
WINO_TARGET static void wino_out(void *ctx, size_t begin, size_t end) {
  const wino_job_t *j = ctx;
  const cpu_wino_t *wg = j->wg;
  const size_t ms = (size_t)(wg->m * wg->ld);
  const bool in_regs = wino_act_in_registers(j->act.kind);
  const cpu_act_kind_t kind = in_regs ? j->act.kind : CPU_ACT_NONE;
  const __m512 lo = _mm512_set1_ps(kind == CPU_ACT_CLIP ? j->act.p0 : 0.0f);
  const __m512 hi = _mm512_set1_ps(kind == CPU_ACT_CLIP ? j->act.p1 : 0.0f);
  for (size_t u = begin; u < end; u++) {
    const int64_t img = (int64_t)u / wg->m, k = (int64_t)u % wg->m;
    const float *mk = j->mm + (size_t)(k * wg->ld + img * wg->th * wg->tw);
    const size_t plane = (size_t)(wg->oh * wg->ow);
    float *yk = j->y + u * plane;
    const float *zk = j->z ? j->z + u * plane : NULL;
    const __m512 bias = _mm512_set1_ps(j->bias ? j->bias[k] : 0.0f);
    for (int64_t ty = 0; ty < wg->th; ty++) {
      for (int64_t tx = 0; tx < wg->tw; tx += 16) {
        const __mmask16 lanes = (__mmask16)k_lanes16(tx, wg->tw);
        const float *src = mk + ty * wg->tw + tx;
        __m512 s[2][4];
        for (int q = 0; q < 4; q++) {  // A^T M
          const __m512 m0 = _mm512_maskz_loadu_ps(lanes, src + (size_t)q * ms);
          const __m512 m1 =
              _mm512_maskz_loadu_ps(lanes, src + (size_t)(4 + q) * ms);
          const __m512 m2 =
              _mm512_maskz_loadu_ps(lanes, src + (size_t)(8 + q) * ms);
          const __m512 m3 =
              _mm512_maskz_loadu_ps(lanes, src + (size_t)(12 + q) * ms);
          s[0][q] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
          s[1][q] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
        }
        const int64_t col = 2 * tx, n = wg->ow - col;
        for (int r = 0; r < 2 && 2 * ty + r < wg->oh; r++) {  // (A^T M) A
          const __m512 e =
              _mm512_add_ps(_mm512_add_ps(s[r][0], s[r][1]), s[r][2]);
          const __m512 o =
              _mm512_sub_ps(_mm512_sub_ps(s[r][1], s[r][2]), s[r][3]);
          const size_t at = (size_t)((2 * ty + r) * wg->ow + col);
          wino_store_row(e, o, bias, zk ? zk + at : NULL, yk + at, n, kind, lo,
                         hi);
        }
      }
    }
    if (!in_regs) {
      cpu_act_apply(&j->act, yk, plane);
    }
  }
}

wm_error *cpu_wino_run(const cpu_wino_t *wg, const float *x, const float *bias,
                       const float *z, const cpu_act_t *act, float *y,
                       wm_pool_t *pool, const cpu_gemm_scratch_t *ws) {
  const size_t floats = wino_floats(wg);
  float *own = NULL, *buf;
  cpu_gemm_scratch_t gs = {NULL, 0};
  if (ws && ws->mem && ws->floats >= floats) {
    buf = ws->mem;
    gs.mem = ws->mem + floats;
    gs.floats = ws->floats - floats;
  } else if (!(buf = own = aligned_alloc(64, floats * sizeof(float)))) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "Conv: out of memory for %zu bytes of Winograd tiles",
                     floats * sizeof(float));
  }
  wino_job_t job = {.wg = wg,
                    .x = x,
                    .bias = bias,
                    .z = z,
                    .act = *act,
                    .v = buf,
                    .mm = buf + (size_t)(CPU_WINO_VALUES * wg->c * wg->ld),
                    .y = y};
  const size_t in_grain = k_row_grain((size_t)(wg->ih * wg->iw), 8192);
  const size_t out_grain = k_row_grain((size_t)(wg->oh * wg->ow), 8192);
  k_for(pool, (size_t)(wg->n * wg->c), in_grain, wino_in, &job);
  wm_error *e = cpu_gemm_run_batch(CPU_WINO_VALUES, wino_member, &job, pool,
                                   gs.mem ? &gs : NULL);
  if (!e) {
    k_for(pool, (size_t)(wg->n * wg->m), out_grain, wino_out, &job);
  }
  free(own);
  return e;
}

#else  // no AVX-512 kernels on this architecture

wm_error *cpu_wino_run(const cpu_wino_t *wg, const float *x, const float *bias,
                       const float *z, const cpu_act_t *act, float *y,
                       wm_pool_t *pool, const cpu_gemm_scratch_t *ws) {
  (void)wg, (void)x, (void)bias, (void)z, (void)act, (void)y, (void)pool,
      (void)ws;
  return cpu_error(WM_ERR_INTERNAL, "Conv: no Winograd kernels here");
}

#endif
