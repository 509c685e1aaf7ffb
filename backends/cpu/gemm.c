// The fp32 GEMM engine (gemm.h): packing, cache blocking, the work split
// over the pool, the epilogue, and one micro-kernel per ISA
// (gemm_kernel.inc). Built with -ffp-contract=fast so that the kernels'
// a * b + c become fused multiply-adds.
#include "gemm.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"  // k_expf, k_f8

// ------------------------------------------------------- micro-kernels

typedef float v16 __attribute__((vector_size(64)));
typedef float v8 __attribute__((vector_size(32)));
typedef float v4 __attribute__((vector_size(16)));

// The epilogue a micro-kernel applies to its tile in registers (the
// common one of convolutions): C + Z, plus the row's bias, then nothing,
// ReLU, Clip, HardSigmoid or HardSwish (ke_of decides when a tile's
// epilogue is this).
typedef struct kernel_epi {
  const float *bias;    // per row of the tile, or NULL
  const float *z;       // the residual at the tile's first element, or NULL
  int64_t z_rs;         // its row stride (columns contiguous)
  cpu_act_kind_t kind;  // CPU_ACT_NONE, _RELU, _CLIP, _HARD_SIGMOID or
                        // _HARD_SWISH
  float lo, hi;         // the activation's p0 and p1
} kernel_epi_t;

typedef void (*kernel_fn)(int64_t kc, const float *restrict a,
                          const float *restrict b, int64_t ldb,
                          const int64_t *restrict boff, float *restrict c,
                          int64_t ldc, int load, const kernel_epi_t *ke);

#define KERNEL_CAT_(a, b) a##b
#define KERNEL_CAT(a, b) KERNEL_CAT_(a, b)

// Per ISA: the kernels of every height up to the full tile
// (gemm_heights.inc).
#if defined(__x86_64__)
#define KERNEL_TARGET __attribute__((target("avx512f,avx512vl,fma")))
#define KERNEL_VEC v16
#define KERNEL_VW 16
#define KERNEL_NV 2
#define KERNEL_BASE kernel_avx512_
#define KERNEL_FULL 12
#include "gemm_heights.inc"
#undef KERNEL_TARGET
#undef KERNEL_VEC
#undef KERNEL_VW
#undef KERNEL_NV

#define KERNEL_TARGET __attribute__((target("avx2,fma")))
#define KERNEL_VEC v8
#define KERNEL_VW 8
#define KERNEL_NV 2
#define KERNEL_BASE kernel_avx2_
#define KERNEL_FULL 6
#include "gemm_heights.inc"
#undef KERNEL_TARGET
#undef KERNEL_VEC
#undef KERNEL_VW
#undef KERNEL_NV
#endif

#define KERNEL_TARGET
#define KERNEL_VEC v4
#define KERNEL_VW 4
#define KERNEL_NV 2
#define KERNEL_BASE kernel_portable_
#define KERNEL_FULL 6
#include "gemm_heights.inc"
#undef KERNEL_TARGET
#undef KERNEL_VEC
#undef KERNEL_VW
#undef KERNEL_NV

enum { MAX_MR = 12, MAX_NR = 64 };
// Scratch slots whose tasks are shared out by slot (job_t.shares).
enum { MAX_SHARES = 64 };

// Products of at most this many rows read a strided B with contiguous
// rows in place (mobilenetv2's projections to 16..32 channels: 8% less
// time than packing B first).
enum { IN_PLACE_ROWS = 32 };

// Whether B's rows |rs| floats apart spread over the sets of L1 (their
// offsets modulo 4 KiB take at least 16 values) so that a B panel read in
// place stays in it: a 1x1 convolution's image (56x56: 12544 bytes, 16
// values) but not a MatMul's 768 or 1024 columns (4 and 1): in place,
// resnet50's 1x1 256->64 at 56 231 -> 263 GFLOP/s, MatMul 1024^3 258 ->
// 243.
static bool rows_spread(int64_t rs) {
  int64_t a = (rs * (int64_t)sizeof(float)) % 4096, b = 4096;
  while (a) {
    int64_t t = b % a;
    b = a;
    a = t;
  }
  return b <= 256;
}

// The kernels in use and the cache blocking derived for them.
typedef struct engine {
  kernel_fn by_height[MAX_MR + 1];  // [h]: h x NR micro-kernel, h <= mr
  int mr, nr;                       // the full tile
  const char *name;                 // "avx512 12x32"
  int64_t kc;  // K block: an A micro-panel fills part of L1
  int64_t mc;  // M block: a packed A block stays in L2
  int64_t nc;  // N block: a packed B block stays in L2
} engine_t;

static engine_t g_engine;
static atomic_int g_engine_ready;

// Size in bytes of the cache of |level| holding data ("Data" or
// "Unified"), from sysfs; 0 when unknown.
static int64_t cache_bytes(int level) {
  for (int idx = 0; idx < 8; idx++) {
    char path[96], buf[32];
    int64_t lv = 0, size = 0;
    bool data = false;
    static const char *const files[] = {"level", "type", "size"};
    for (int f = 0; f < 3; f++) {
      snprintf(path, sizeof(path),
               "/sys/devices/system/cpu/cpu0/cache/index%d/%s", idx, files[f]);
      FILE *fp = fopen(path, "r");
      if (!fp) {
        return 0;
      }
      bool ok = fgets(buf, sizeof(buf), fp) != NULL;
      fclose(fp);
      if (!ok) {
        return 0;
      }
      if (f == 0) {
        lv = strtoll(buf, NULL, 10);
      } else if (f == 1) {
        data = strncmp(buf, "Data", 4) == 0 || strncmp(buf, "Unified", 7) == 0;
      } else {
        char *end;
        size = strtoll(buf, &end, 10);
        size *= *end == 'K' ? 1024 : *end == 'M' ? 1024 * 1024 : 1;
      }
    }
    if (lv == level && data && size > 0) {
      return size;
    }
  }
  return 0;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

// Picks the kernel by CPUID and derives the blocking from the cache sizes
// (L1d 32 KiB, L2 512 KiB and L3 8 MiB when sysfs does not say).
static void engine_init(engine_t *e) {
  memset(e, 0, sizeof(*e));
  const kernel_fn *kernels = kernel_portable_by_height;
  bool wide_b = false;  // B micro-panels far wider than A's are high
  e->mr = 6;
  e->nr = 8;
  e->name = "portable 6x8";
#if defined(__x86_64__)
  const cpu_isa_t isa = cpu_isa();
  if (isa == CPU_ISA_AVX512) {
    kernels = kernel_avx512_by_height;
    e->mr = 12;
    e->nr = 32;
    e->name = "avx512 12x32";
    wide_b = true;
  } else if (isa == CPU_ISA_AVX2) {
    kernels = kernel_avx2_by_height;
    e->mr = 6;
    e->nr = 16;
    e->name = "avx2 6x16";
  }
#endif
  for (int h = 1; h <= e->mr; h++) {
    e->by_height[h] = kernels[h];
  }
  int64_t l1 = cache_bytes(1), l2 = cache_bytes(2), l3 = cache_bytes(3);
  l1 = l1 > 0 ? l1 : 32 * 1024;
  l2 = l2 > 0 ? l2 : 512 * 1024;
  l3 = l3 > 0 ? l3 : 8 * 1024 * 1024;
  if (wide_b) {
    // 12x32 (measured on Zen 4): the A micro-panel (MR x KC) takes
    // about a third of L1, leaving room for the B micro-panels that
    // stream through it; the packed B block (KC x NC) half of L2.
    e->kc = clamp64(l1 / 3 / (4 * e->mr) / 16 * 16, 64, 512);
    e->nc = clamp64(l2 / 2 / (4 * e->kc) / e->nr * e->nr, 4 * e->nr, 4096);
  } else {
    // 6x16 and 6x8 (measured on Zen 3): a B micro-panel (KC x NR) takes half of
    // L1 and the B block is as wide as an eighth of L3 holds, so that A is
    // packed again only every NC columns (KC 448 and NC 144 on 32 KiB L1,
    // 512 KiB L2: the 1024^3 product at 0.80 of OpenBLAS, KC 256 and NC
    // 2048: 0.94).
    e->kc = clamp64(l1 / 2 / (4 * e->nr) / 16 * 16, 64, 512);
    e->nc = clamp64(l3 / 8 / (4 * e->kc) / e->nr * e->nr, 4 * e->nr, 2048);
  }
  // The packed A block (MC x KC) a quarter of L2.
  e->mc = clamp64(l2 / 4 / (4 * e->kc) / e->mr * e->mr, 2 * e->mr,
                  1024 / e->mr * e->mr);
#ifdef CPU_GEMM_TUNE
  if (getenv("KC")) {
    e->kc = atoi(getenv("KC"));
  }
  if (getenv("NC")) {
    e->nc = atoi(getenv("NC"));
  }
  if (getenv("MC")) {
    e->mc = atoi(getenv("MC"));
  }
#endif
}

static const engine_t *engine(void) {
  if (!atomic_load_explicit(&g_engine_ready, memory_order_acquire)) {
    engine_t e;
    engine_init(&e);  // every thread computes the same values
    g_engine = e;
    atomic_store_explicit(&g_engine_ready, 1, memory_order_release);
  }
  return &g_engine;
}

const char *cpu_gemm_kernel_name(void) {
  return engine()->name;
}

int cpu_gemm_tile_cols(void) {
  return engine()->nr;
}

// ----------------------------------------------------------- activation

static inline float act_sigmoid(float x) {
  return 1.0f / (1.0f + k_expf(-x));
}

// Sixteen floats at any alignment (one AVX-512 register, two AVX ones):
// the sigmoid runs 16 lanes at a time, as its division costs as much per
// register at either width.
typedef float act_f16 __attribute__((vector_size(64), aligned(4)));
typedef int32_t act_i16 __attribute__((vector_size(64)));
#define ACT_SEL16(m, a, b) \
  ((act_f16)(((m) & (act_i16)(a)) | (~(m) & (act_i16)(b))))

// *io = 1 + e^-x lane by lane, the sigmoid's denominator (through a
// pointer: a vector argument or result would change the ABI of the
// baseline clones): k_expf8's reduction and polynomial on -x clamped to
// [-87.34, 88.72], scaled by 2^n in one step (the clamp keeps n inside the
// exponent range, and 2^128 = inf gives a sigmoid of 0 where e^-x
// overflows), NaN carried through; the sigmoid within 2e-7 of the exact
// value.
static inline __attribute__((always_inline)) void act_sig_den16(act_f16 *io) {
  const act_f16 zero = {0};
  act_f16 u = -*io;
  u = ACT_SEL16(u > 88.72283f, zero + 88.72283f, u);
  u = ACT_SEL16(u < -87.33654f, zero - 87.33654f, u);
  act_f16 tm = u * 1.44269504088896341f + 12582912.0f;  // n in its low bits
  act_f16 n = tm - 12582912.0f;
  act_f16 r = u - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  act_f16 p = zero + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  act_f16 y = p * r * r + r + 1.0f;
  act_i16 scale = ((act_i16)tm - (0x4B400000 - 127)) << 23;  // 2^n
  *io = 1.0f + y * (act_f16)scale;
}

// x[i] = sigmoid(x[i]), or x[i] * sigmoid(x[i]) with |silu|, for i < n:
// 16 lanes at a time, the last few through a padded copy.
static inline __attribute__((always_inline)) void act_sigmoid_row(float *x,
                                                                  size_t n,
                                                                  bool silu) {
  const act_f16 one = {0};
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    act_f16 v, d;
    memcpy(&v, x + i, sizeof(v));
    d = v;
    act_sig_den16(&d);
    v = (silu ? v : one + 1.0f) / d;
    memcpy(x + i, &v, sizeof(v));
  }
  if (i < n) {
    act_f16 v = {0}, d;
    memcpy(&v, x + i, (n - i) * sizeof(float));
    d = v;
    act_sig_den16(&d);
    v = (silu ? v : one + 1.0f) / d;
    memcpy(x + i, &v, (n - i) * sizeof(float));
  }
}

// Phi(x) = 0.5 (1 + erf(x / sqrt 2)) without cancellation on either side:
// erfc by Abramowitz-Stegun 7.1.26 (absolute error 1.5e-7).
static inline float act_phi(float x) {
  float z = (x < 0 ? -x : x) * 0.70710678118654752f;
  float t = 1.0f / (1.0f + 0.3275911f * z);
  float poly =
      t * (0.254829592f +
           t * (-0.284496736f +
                t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  float half_erfc = 0.5f * poly * k_expf(-z * z);
  return x < 0 ? half_erfc : 1.0f - half_erfc;
}

// tanh through e^(-2|x|): (1 - t) / (1 + t) with the sign of x.
static inline float act_tanh(float x) {
  float ax = x < 0 ? -x : x;
  float t = k_expf(-2.0f * ax);
  float r = (1.0f - t) / (1.0f + t);
  return x < 0 ? -r : r;
}

K_CLONES void cpu_act_apply(const cpu_act_t *act, float *x, size_t n) {
  const float p0 = act->p0, p1 = act->p1;
  switch (act->kind) {
    case CPU_ACT_NONE:
      return;
    case CPU_ACT_RELU:
      for (size_t i = 0; i < n; i++) {
        x[i] = x[i] > 0 ? x[i] : 0.0f;
      }
      return;
    case CPU_ACT_CLIP:
      for (size_t i = 0; i < n; i++) {
        float v = x[i] < p0 ? p0 : x[i];
        x[i] = v > p1 ? p1 : v;
      }
      return;
    case CPU_ACT_LEAKY_RELU:
      for (size_t i = 0; i < n; i++) {
        x[i] = x[i] < 0 ? p0 * x[i] : x[i];
      }
      return;
    case CPU_ACT_SIGMOID:
      act_sigmoid_row(x, n, false);
      return;
    case CPU_ACT_HARD_SIGMOID:
      for (size_t i = 0; i < n; i++) {
        float v = p0 * x[i] + p1;
        v = v > 0 ? v : 0.0f;
        x[i] = v < 1 ? v : 1.0f;
      }
      return;
    case CPU_ACT_HARD_SWISH:
      for (size_t i = 0; i < n; i++) {
        float v = x[i] * (1.0f / 6.0f) + 0.5f;
        v = v > 0 ? v : 0.0f;
        v = v < 1 ? v : 1.0f;
        x[i] = x[i] * v;
      }
      return;
    case CPU_ACT_TANH:
      for (size_t i = 0; i < n; i++) {
        x[i] = act_tanh(x[i]);
      }
      return;
    case CPU_ACT_SILU:
      act_sigmoid_row(x, n, true);
      return;
    case CPU_ACT_GELU:
      for (size_t i = 0; i < n; i++) {
        x[i] = x[i] * act_phi(x[i]);
      }
      return;
    case CPU_ACT_GELU_TANH:
      // 0.5 (1 + tanh(u)) = sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3).
      for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float u = 1.5957691216057308f * (v + 0.044715f * v * v * v);
        x[i] = v * act_sigmoid(u);
      }
      return;
  }
}

cpu_gemm_epi_t cpu_gemm_epi_plain(void) {
  cpu_gemm_epi_t e;
  memset(&e, 0, sizeof(e));
  e.alpha = 1.0f;
  e.beta = 1.0f;
  return e;
}

static bool epi_is_plain(const cpu_gemm_epi_t *e) {
  return e->alpha == 1.0f && !e->bias && !e->z && e->act.kind == CPU_ACT_NONE;
}

// The last pass over one epilogue row: v = row + brow, then ACT.
#define EPI_LAST(ACT)                \
  for (int64_t j = 0; j < nr; j++) { \
    float v = row[j] + brow;         \
    row[j] = (ACT);                  \
  }

// The epilogue on rows [i0, i0+mr) x columns [j0, j0+nr) of the product,
// whose element (i0, j0) is at |c|: a few passes per row while the tile
// is in L1, the per-row bias and the common activations in the last one.
static inline __attribute__((always_inline)) void epi_rows(
    const cpu_gemm_epi_t *e, float *c, int64_t ldc, int64_t i0, int64_t mr,
    int64_t j0, int64_t nr) {
  const float alpha = e->alpha, beta = e->beta;
  const float p0 = e->act.p0, p1 = e->act.p1;
  for (int64_t i = 0; i < mr; i++) {
    float *restrict row = c + i * ldc;
    if (alpha != 1.0f) {
      for (int64_t j = 0; j < nr; j++) {
        row[j] *= alpha;
      }
    }
    if (e->bias && !e->bias_rows) {
      const float *restrict b = e->bias + j0;
      for (int64_t j = 0; j < nr; j++) {
        row[j] += b[j];
      }
    }
    float brow = e->bias && e->bias_rows ? e->bias[i0 + i] : 0.0f;
    if (e->z) {
      const float *restrict z = e->z + (i0 + i) * e->z_rs + j0 * e->z_cs;
      if (e->z_cs == 0) {
        brow += beta * z[0];
      } else if (beta == 1.0f) {
        for (int64_t j = 0; j < nr; j++) {
          row[j] += z[j];
        }
      } else {
        for (int64_t j = 0; j < nr; j++) {
          row[j] += beta * z[j];
        }
      }
    }
    switch (e->act.kind) {
      case CPU_ACT_NONE:
        if (brow != 0.0f) {
          EPI_LAST(v);
        }
        break;
      case CPU_ACT_RELU:
        EPI_LAST(v > 0 ? v : 0.0f);
        break;
      case CPU_ACT_CLIP:
        EPI_LAST((v < p0 ? p0 : v) > p1 ? p1 : (v < p0 ? p0 : v));
        break;
      case CPU_ACT_LEAKY_RELU:
        EPI_LAST(v < 0 ? p0 * v : v);
        break;
      default:
        EPI_LAST(v);
        cpu_act_apply(&e->act, row, (size_t)nr);
        break;
    }
  }
}

// epi_rows for a full tile (NR a multiple of 8, a constant): each row in
// whole vectors, every step in registers, one load and store of C.
static inline __attribute__((always_inline)) void epi_rows_vec(
    const cpu_gemm_epi_t *e, float *c, int64_t ldc, int64_t i0, int64_t mr,
    int64_t j0, const int NR) {
  const float alpha = e->alpha, beta = e->beta;
  const k_f8 zero = {0}, p0 = zero + e->act.p0, p1 = zero + e->act.p1;
  const bool col_bias = e->bias && !e->bias_rows;
  const cpu_act_kind_t kind = e->act.kind;
  // The sigmoids run on the stored row, 16 lanes at a time.
  const bool fused = kind == CPU_ACT_NONE || kind == CPU_ACT_RELU ||
                     kind == CPU_ACT_CLIP || kind == CPU_ACT_LEAKY_RELU ||
                     kind == CPU_ACT_HARD_SIGMOID || kind == CPU_ACT_HARD_SWISH;
  for (int64_t i = 0; i < mr; i++) {
    float *row = c + i * ldc;
    float brow = e->bias && e->bias_rows ? e->bias[i0 + i] : 0.0f;
    const float *z = e->z ? e->z + (i0 + i) * e->z_rs + j0 * e->z_cs : NULL;
    if (z && e->z_cs == 0) {
      brow += beta * z[0];
      z = NULL;
    }
    for (int v = 0; v < NR; v += 8) {
      k_f8 x = *(const k_f8 *)(row + v);
      if (alpha != 1.0f) {
        x *= alpha;
      }
      if (col_bias) {
        x += *(const k_f8 *)(e->bias + j0 + v);
      }
      if (z) {
        x += beta * *(const k_f8 *)(z + v);
      }
      x += brow;
      switch (kind) {
        case CPU_ACT_RELU:
          x = K_SEL8(x > zero, x, zero);
          break;
        case CPU_ACT_CLIP:
          x = K_SEL8(x < p0, p0, x);
          x = K_SEL8(x > p1, p1, x);
          break;
        case CPU_ACT_LEAKY_RELU:
          x = K_SEL8(x < zero, p0 * x, x);
          break;
        case CPU_ACT_HARD_SIGMOID:
          x = p0 * x + p1;
          x = K_SEL8(x > zero, x, zero);
          x = K_SEL8(x < 1.0f, x, zero + 1.0f);
          break;
        case CPU_ACT_HARD_SWISH: {
          k_f8 hs = x * (1.0f / 6.0f) + 0.5f;
          hs = K_SEL8(hs > zero, hs, zero);
          hs = K_SEL8(hs < 1.0f, hs, zero + 1.0f);
          x = x * hs;
          break;
        }
        default:
          break;
      }
      *(k_f8 *)(row + v) = x;
    }
    if (!fused) {
      cpu_act_apply(&e->act, row, (size_t)NR);
    }
  }
}

// The convolutions' common epilogue on a full tile: a per-row bias, then
// nothing, ReLU, Clip, Sigmoid or SiLU, each a loop of its own with
// nothing to decide per row or vector (EPI_ROWS_BIAS(ACT): ACT the new
// value of the vector x).
#define EPI_ROWS_BIAS(ACT)                               \
  for (int64_t i = 0; i < mr; i++) {                     \
    float *row = c + i * ldc;                            \
    const float brow = e->bias ? e->bias[i0 + i] : 0.0f; \
    for (int v = 0; v < NR; v += 8) {                    \
      k_f8 x = *(const k_f8 *)(row + v) + brow;          \
      x = (ACT);                                         \
      *(k_f8 *)(row + v) = x;                            \
    }                                                    \
  }

static inline __attribute__((always_inline)) bool epi_rows_bias(
    const cpu_gemm_epi_t *e, float *c, int64_t ldc, int64_t i0, int64_t mr,
    const int NR) {
  if (e->alpha != 1.0f || e->z || (e->bias && !e->bias_rows)) {
    return false;
  }
  const k_f8 zero = {0}, p0 = zero + e->act.p0, p1 = zero + e->act.p1;
  switch (e->act.kind) {
    case CPU_ACT_NONE:
      EPI_ROWS_BIAS(x);
      return true;
    case CPU_ACT_RELU:
      EPI_ROWS_BIAS(K_SEL8(x > zero, x, zero));
      return true;
    case CPU_ACT_CLIP:
      EPI_ROWS_BIAS(
          K_SEL8(K_SEL8(x < p0, p0, x) > p1, p1, K_SEL8(x < p0, p0, x)));
      return true;
    case CPU_ACT_SIGMOID:
    case CPU_ACT_SILU:
      // On the stored rows, 16 lanes at a time.
      EPI_ROWS_BIAS(x);
      for (int64_t i = 0; i < mr; i++) {
        act_sigmoid_row(c + i * ldc, (size_t)NR, e->act.kind == CPU_ACT_SILU);
      }
      return true;
    default:
      return false;
  }
}
#undef EPI_ROWS_BIAS

typedef float epi_f16 __attribute__((vector_size(64), aligned(4)));
typedef int32_t epi_i16 __attribute__((vector_size(64)));
#define EPI_SEL16(m, a, b) \
  ((epi_f16)(((m) & (epi_i16)(a)) | (~(m) & (epi_i16)(b))))

// A bias per column, then nothing, ReLU or Clip (the transposed
// convolutions' epilogue on a block of positions x channels, before it is
// transposed out): one loop per activation over whole rows, 16 lanes at a
// time, the last columns through epi_rows. False (nothing done) for any
// other epilogue. The generic loop decided the activation, alpha and Z
// again for every 8 floats: mobilenetv2 spent 3 % of its time at t1 there.
static inline __attribute__((always_inline)) bool epi_cols_bias(
    const cpu_gemm_epi_t *e, float *c, int64_t ldc, int64_t i0, int64_t mr,
    int64_t j0, int64_t nr) {
  const cpu_act_kind_t kind = e->act.kind;
  if (e->alpha != 1.0f || e->z || !e->bias || e->bias_rows ||
      (kind != CPU_ACT_NONE && kind != CPU_ACT_RELU && kind != CPU_ACT_CLIP)) {
    return false;
  }
  const float *b = e->bias + j0;
  const epi_f16 zero = {0}, lo = zero + e->act.p0, hi = zero + e->act.p1;
  const int64_t n16 = nr / 16 * 16;
#define EPI_COLS(ACT)                                                      \
  for (int64_t i = 0; i < mr; i++) {                                       \
    float *row = c + i * ldc;                                              \
    for (int64_t v = 0; v < n16; v += 16) {                                \
      epi_f16 x = *(const epi_f16 *)(row + v) + *(const epi_f16 *)(b + v); \
      *(epi_f16 *)(row + v) = (ACT);                                       \
    }                                                                      \
  }
  if (kind == CPU_ACT_RELU) {
    EPI_COLS(EPI_SEL16(x > zero, x, zero))
  } else if (kind == CPU_ACT_CLIP) {
    EPI_COLS(
        EPI_SEL16(EPI_SEL16(x < lo, lo, x) > hi, hi, EPI_SEL16(x < lo, lo, x)))
  } else {
    EPI_COLS(x)
  }
#undef EPI_COLS
  if (n16 < nr) {
    epi_rows(e, c + n16, ldc, i0, mr, j0 + n16, nr - n16);
  }
  return true;
}
#undef EPI_SEL16

// The epilogue on a tile: its rows in whole vectors (of a constant count
// for full tiles).
K_CLONES_FMA static void epi_tile(const cpu_gemm_epi_t *e, float *c,
                                  int64_t ldc, int64_t i0, int64_t mr,
                                  int64_t j0, int64_t nr) {
  if (epi_cols_bias(e, c, ldc, i0, mr, j0, nr)) {
    return;
  }
  if (nr == 16) {
    if (!epi_rows_bias(e, c, ldc, i0, mr, 16)) {
      epi_rows_vec(e, c, ldc, i0, mr, j0, 16);
    }
  } else if (nr == 32) {
    if (!epi_rows_bias(e, c, ldc, i0, mr, 32)) {
      epi_rows_vec(e, c, ldc, i0, mr, j0, 32);
    }
  } else {
    // Whole vectors, then the last few columns one by one.
    const int64_t n8 = nr / 8 * 8;
    if (n8 > 0 && !epi_rows_bias(e, c, ldc, i0, mr, (int)n8)) {
      epi_rows_vec(e, c, ldc, i0, mr, j0, (int)n8);
    }
    if (n8 < nr) {
      epi_rows(e, c + n8, ldc, i0, mr, j0 + n8, nr - n8);
    }
  }
}
#undef EPI_LAST

// -------------------------------------------------------------- packing

// dst[p * N + i] = src[p * stride + i] for p < kc and i < N: a full
// panel whose runs along it are contiguous in the source. N is a constant
// at each call, so each run is a few fixed-size moves, not a memcpy call.
static inline __attribute__((always_inline)) void pack_runs(
    float *restrict dst, const float *restrict src, int64_t stride, int64_t kc,
    const int N) {
  for (int64_t p = 0; p < kc; p++) {
    memcpy(dst + p * N, src + p * stride, (size_t)N * sizeof(float));
  }
}

// Packs A rows [i0, i0+mc) x K [p0, p0+kc) of the strided |src| into
// MR-row panels at |dst|, the last one as high as the rows left (its
// kernel is that high; i0 + mc <= m).
K_CLONES_FMA static void pack_a(const float *src, int64_t rs, int64_t cs,
                                int64_t i0, int64_t mc, int64_t p0, int64_t kc,
                                int mr, float *restrict dst) {
  for (int64_t q = 0; q < mc; q += mr) {
    const int64_t rows = mc - q < mr ? mc - q : mr;
    const float *s = src + (i0 + q) * rs + p0 * cs;
    if (rows == 12 && cs == 1) {
      for (int64_t p = 0; p < kc; p++) {
        for (int i = 0; i < 12; i++) {
          dst[p * 12 + i] = s[i * rs + p];
        }
      }
    } else if (rows == 12 && rs == 1) {
      pack_runs(dst, s, cs, kc, 12);
    } else if (rows == 6 && rs == 1) {
      pack_runs(dst, s, cs, kc, 6);
    } else if (rs == 1) {
      for (int64_t p = 0; p < kc; p++) {
        memcpy(dst + p * rows, s + p * cs, (size_t)rows * sizeof(float));
      }
    } else {
      for (int64_t i = 0; i < rows; i++) {
        float *d = dst + i;
        const float *si = s + i * rs;
        for (int64_t p = 0; p < kc; p++) {
          d[p * rows] = si[p * cs];
        }
      }
    }
    dst += rows * kc;
  }
}

// Packs B K [p0, p0+kc) x columns [j0, j0+nc) of the strided |src| (n
// columns in all) into NR-column panels at |dst|; columns past n are zero.
K_CLONES_FMA static void pack_b(const float *src, int64_t rs, int64_t cs,
                                int64_t n, int64_t p0, int64_t kc, int64_t j0,
                                int64_t nc, int nr, float *restrict dst) {
  for (int64_t q = 0; q < nc; q += nr, dst += nr * kc) {
    int64_t c0 = j0 + q;
    int64_t cols = n - c0 < nr ? n - c0 : nr;
    const float *s = src + p0 * rs + c0 * cs;
    if (cs == 1 && cols == nr && (nr == 16 || nr == 32)) {
      if (nr == 16) {
        pack_runs(dst, s, rs, kc, 16);
      } else {
        pack_runs(dst, s, rs, kc, 32);
      }
      continue;
    }
    if (cs == 1) {
      for (int64_t p = 0; p < kc; p++) {
        float *d = dst + p * nr;
        memcpy(d, s + p * rs, (size_t)cols * sizeof(float));
        for (int64_t j = cols; j < nr; j++) {
          d[j] = 0.0f;
        }
      }
      continue;
    }
    for (int64_t j = 0; j < nr; j++) {
      float *d = dst + j;
      if (j >= cols) {
        for (int64_t p = 0; p < kc; p++) {
          d[p * nr] = 0.0f;
        }
        continue;
      }
      const float *sj = s + j * cs;
      for (int64_t p = 0; p < kc; p++) {
        d[p * nr] = sj[p * rs];
      }
    }
  }
}

// Packs B rows [0, kc) at offsets |roff| from |src| (row p's column c at
// src[roff[p] + c]), columns [c0, c0+cols), into one NR-column panel at
// |dst|, zero past |cols|: the last, narrow panel of B read in place.
static void pack_b_roff(const float *src, const int64_t *roff, int64_t kc,
                        int64_t c0, int64_t cols, int nr, float *restrict dst) {
  for (int64_t p = 0; p < kc; p++, dst += nr) {
    memcpy(dst, src + roff[p] + c0, (size_t)cols * sizeof(float));
    memset(dst + cols, 0, (size_t)(nr - cols) * sizeof(float));
  }
}

// Rounds |v| up to a multiple of |to|.
static int64_t round_up(int64_t v, int64_t to) {
  return (v + to - 1) / to * to;
}

static float *alloc_floats(size_t n) {
  size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  return aligned_alloc(64, bytes ? bytes : 64);
}

wm_error *cpu_gemm_pack_alloc(cpu_gemm_side_t side, int64_t rows_or_cols,
                              int64_t k, cpu_gemm_packed_t *out) {
  const engine_t *e = engine();
  memset(out, 0, sizeof(*out));
  out->side = side;
  out->rows_or_cols = rows_or_cols;
  out->k = k;
  out->kc = e->kc;
  // A's last panel is as high as its rows; B's are padded with zeros.
  out->padded =
      side == CPU_GEMM_A ? rows_or_cols : round_up(rows_or_cols, e->nr);
  size_t n = 0;
  if (!wm_checked_mul((size_t)out->padded, (size_t)k, &n) ||
      !(out->data = alloc_floats(n))) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "out of memory packing a %lld x %lld GEMM operand",
                     (long long)rows_or_cols, (long long)k);
  }
  return NULL;
}

void cpu_gemm_pack_fill(cpu_gemm_packed_t *p, const float *src, int64_t rs,
                        int64_t cs) {
  const engine_t *e = engine();
  int w = p->side == CPU_GEMM_A ? e->mr : e->nr;
  for (int64_t pc = 0; pc < p->k; pc += p->kc) {
    int64_t kc = p->k - pc < p->kc ? p->k - pc : p->kc;
    float *dst = p->data + pc * p->padded;
    if (p->side == CPU_GEMM_A) {
      pack_a(src, rs, cs, 0, p->rows_or_cols, pc, kc, w, dst);
    } else {
      pack_b(src, rs, cs, p->rows_or_cols, pc, kc, 0, p->padded, w, dst);
    }
  }
}

wm_error *cpu_gemm_pack(cpu_gemm_side_t side, int64_t rows_or_cols, int64_t k,
                        const float *src, int64_t rs, int64_t cs,
                        cpu_gemm_packed_t *out) {
  wm_error *err = cpu_gemm_pack_alloc(side, rows_or_cols, k, out);
  if (!err) {
    cpu_gemm_pack_fill(out, src, rs, cs);
  }
  return err;
}

void cpu_gemm_packed_deinit(cpu_gemm_packed_t *p) {
  free(p->data);
  memset(p, 0, sizeof(*p));
}

// The panels of packed |p| for K block |pc| starting at row or column |r|
// (a multiple of the panel width).
static const float *packed_at(const cpu_gemm_packed_t *p, int64_t pc,
                              int64_t r) {
  int64_t kc = p->k - pc < p->kc ? p->k - pc : p->kc;
  return p->data + pc * p->padded + r * kc;
}

// ------------------------------------------------------------ the split

// Floats of one thread's buffers: an A block, a B block and an edge tile,
// and for products written through a block a C block.
static size_t slot_floats(const engine_t *e, bool block) {
  return (size_t)(round_up(e->mc * e->kc, 16) + round_up(e->nc * e->kc, 16) +
                  round_up(e->mr * e->nr, 16) +
                  (block ? round_up(e->mc * e->nc, 16) : 0));
}

size_t cpu_gemm_workspace_bytes(int32_t threads) {
  return (size_t)(threads > 1 ? threads : 1) * slot_floats(engine(), false) *
         sizeof(float);
}

size_t cpu_gemm_block_workspace_bytes(int32_t threads) {
  return (size_t)(threads > 1 ? threads : 1) * slot_floats(engine(), true) *
         sizeof(float);
}

size_t cpu_gemm_kernel_workspace(const void *state, int32_t threads) {
  (void)state;
  return cpu_gemm_workspace_bytes(threads);
}

// One run: the shape shared by the batch, how it is cut into tasks and
// where each thread packs.
typedef struct job {
  const engine_t *e;              // kernel and blocking
  bool packed_a;                  // A's prepacked panels are used
  bool direct;                    // one row from strided A and B, unpacked
  bool b_in_place;                // B's rows read where they are (in the
                                  // members whose rows are contiguous)
  int32_t workers;                // threads the split is for
  size_t count;                   // batch members
  cpu_gemm_batch_fn get;          // member t, or NULL for |one|
  const void *ctx;                // get's argument
  const cpu_gemm_problem_t *one;  // the single problem
  int64_t m, n, k;                // shared shape
  int64_t tm, tn;                 // task tile (rows: multiples of MR when
                                  // A is prepacked; columns: of NR)
  int64_t gm, gn;                 // tiles per member along M and N
  size_t tasks;                   // count * gm * gn
  float *scratch;                 // per-thread buffers
  size_t slot_floats;             // floats per thread
  int64_t a_floats;               // offset of the B buffer in a slot
  int64_t b_floats;               // offset of the edge tile in a slot
  int64_t c_floats;               // offset of the C block in a slot
  int32_t n_shares;               // entries of |shares| in use
  // Per scratch slot (up to MAX_SHARES, else all in one): its home share
  // of the tasks, taken first, in order (as wm_pool_for's shares, so that
  // products over the same data follow each other on the same cores).
  // Last, and left out of the job's zeroing: set for the shares in use.
  struct {
    _Alignas(64) _Atomic size_t next;  // next task to take
    size_t end;                        // end of the share
  } shares[MAX_SHARES];
} job_t;

// Whether the micro-kernels apply activation |kind| (kernel_epi_t).
static bool act_in_kernel(cpu_act_kind_t kind) {
  return kind == CPU_ACT_NONE || kind == CPU_ACT_RELU || kind == CPU_ACT_CLIP ||
         kind == CPU_ACT_HARD_SIGMOID || kind == CPU_ACT_HARD_SWISH;
}

bool cpu_gemm_z_in_place(int64_t m, int64_t k, cpu_act_kind_t act) {
  return m > 1 && k > 0 && k <= engine()->kc && act_in_kernel(act);
}

// Whether the epilogue |e| is one the micro-kernels apply (kernel_epi_t),
// and if so *ke with the bias and Z at the product's first element.
static bool ke_of(const cpu_gemm_epi_t *e, kernel_epi_t *ke) {
  memset(ke, 0, sizeof(*ke));
  if (e->alpha != 1.0f || (e->bias && !e->bias_rows) ||
      (e->z && (e->beta != 1.0f || e->z_cs != 1)) ||
      !act_in_kernel(e->act.kind)) {
    return false;
  }
  ke->bias = e->bias;
  ke->z = e->z;
  ke->z_rs = e->z_rs;
  ke->kind = e->act.kind;
  ke->lo = e->act.p0;
  ke->hi = e->act.p1;
  return true;
}

// Where the macro-kernel finds its B block: packed panels (ldb 0 and no
// roff: panel jr at bp + jr * kc), or B read in place (ldb its row stride,
// or row p at roff[p] from bp: panel jr at bp + jr) with a last panel
// narrower than the tile packed at |edge|.
typedef struct b_block {
  const float *bp;
  int64_t ldb;
  const int64_t *roff;
  const float *edge;
} b_block_t;

// One tile of the macro-kernel: C at (i, j) of the product, mr x nr,
// from the A panel |a| and the B panel |b| (next row ldb floats on).
static inline __attribute__((always_inline)) void macro_tile(
    const job_t *job, const cpu_gemm_problem_t *p, const float *a,
    const float *b, int64_t ldb, const int64_t *roff, int64_t kc, int64_t i,
    int64_t mr, int64_t j, int64_t nr, int load, bool last, kernel_epi_t *ke,
    float *tile) {
  const engine_t *e = job->e;
  const kernel_fn kernel = e->by_height[mr];
  float *c = p->c + i * p->ldc + j;
  if (nr == e->nr && ke) {
    if (p->epi.bias) {
      ke->bias = p->epi.bias + i;
    }
    if (p->epi.z) {
      ke->z = p->epi.z + i * ke->z_rs + j;
    }
    kernel(kc, a, b, ldb, roff, c, p->ldc, load, ke);
    return;
  }
  if (nr == e->nr) {
    kernel(kc, a, b, ldb, roff, c, p->ldc, load, NULL);
  } else {
    kernel(kc, a, b, ldb, roff, tile, e->nr, 0, NULL);
    if (!load && last && !epi_is_plain(&p->epi)) {
      // The epilogue on the tile, C written once: C may be Z's memory
      // (cpu_gemm_z_in_place), each element of Z read before C's there.
      epi_tile(&p->epi, tile, e->nr, i, mr, j, nr);
      last = false;
    }
    for (int64_t r = 0; r < mr; r++) {
      float *ci = c + r * p->ldc;
      const float *ti = tile + r * e->nr;
      for (int64_t q = 0; q < nr; q++) {
        ci[q] = load ? ci[q] + ti[q] : ti[q];
      }
    }
  }
  if (last && !epi_is_plain(&p->epi)) {
    epi_tile(&p->epi, c, p->ldc, i, mr, j, nr);
  }
}

// The A panels of an mc-row block: |full| rows in MR-high panels, then
// |tail| panels of heights h[]. A kernel of fewer than PANEL_MIN_ROWS rows
// has too few accumulators to hide the multiply-add latency (on 6x16 a
// 1-row panel takes 4 of a 6-row one's 6 cycles a K step), so a short
// last panel takes rows from the panels before it: 49 rows as 6 x 6 +
// 5 + 4 + 4 rather than 8 x 6 + 1. Prepacked A keeps MR-high panels.
enum { PANEL_MIN_ROWS = 4, PANEL_MAX_TAIL = 4 };

typedef struct panels {
  int64_t full;
  int tail;
  int64_t h[PANEL_MAX_TAIL];
} panels_t;

static panels_t panels_of(const engine_t *e, int64_t mc, bool balance) {
  const int64_t mr = e->mr, rem = mc % mr;
  panels_t pl = {mc - rem, rem > 0, {rem}};
  if (!balance || rem == 0 || rem >= PANEL_MIN_ROWS) {
    return pl;
  }
  int64_t best = rem;
  for (int k = 2; k <= PANEL_MAX_TAIL && (k - 1) * mr + rem <= mc; k++) {
    const int64_t rows = (k - 1) * mr + rem;
    if (rows / k > best) {
      best = rows / k;
      pl.full = mc - rows;
      pl.tail = k;
      for (int t = 0; t < k; t++) {
        pl.h[t] = rows / k + (t < rows % k);
      }
    }
    if (best >= PANEL_MIN_ROWS) {
      break;
    }
  }
  return pl;
}

// The height of the panel of |pl| that starts at row |ir| of its block.
static inline int64_t panel_rows(const panels_t *pl, int mr, int64_t ir) {
  if (ir < pl->full) {
    return mr;
  }
  int64_t q = pl->full;
  int t = 0;
  while (t + 1 < pl->tail && q < ir) {
    q += pl->h[t++];
  }
  return pl->h[t];
}

// The macro-kernel: A block (mc x kc panels) times B block (kc x nc,
// |bb|) into C at (i0, j0) of the product; |last| applies the epilogue
// (in the micro-kernel where ke_of allows). A panel with fewer rows than
// the tile (the last) runs the kernel of its height; a panel with fewer
// columns goes through the edge tile. Packed B: each A micro-panel stays
// in L1 while the B panels stream by; B in place: each B panel, read from
// memory once, stays in L1 while the few A panels pass over it.
static void macro(const job_t *job, const cpu_gemm_problem_t *p,
                  const float *ap, const panels_t *pl, const b_block_t *bb,
                  int64_t mc, int64_t nc, int64_t kc, int64_t i0, int64_t j0,
                  int load, bool last, float *tile) {
  const engine_t *e = job->e;
  const int mr_w = e->mr, nr_w = e->nr;
  kernel_epi_t ke_v;
  kernel_epi_t *ke =
      last && !epi_is_plain(&p->epi) && ke_of(&p->epi, &ke_v) ? &ke_v : NULL;
  if (!bb->ldb && !bb->roff) {
    for (int64_t ir = 0, mr; ir < mc; ir += mr) {
      mr = panel_rows(pl, mr_w, ir);
      for (int64_t jr = 0; jr < nc; jr += nr_w) {
        int64_t nr = nc - jr < nr_w ? nc - jr : nr_w;
        macro_tile(job, p, ap + ir * kc, bb->bp + jr * kc, nr_w, NULL, kc,
                   i0 + ir, mr, j0 + jr, nr, load, last, ke, tile);
      }
    }
    return;
  }
  for (int64_t jr = 0; jr < nc; jr += nr_w) {
    int64_t nr = nc - jr < nr_w ? nc - jr : nr_w;
    const bool full = nr == nr_w;
    const float *b = full ? bb->bp + jr : bb->edge;
    int64_t ldb = full ? bb->ldb : nr_w;
    const int64_t *roff = full ? bb->roff : NULL;
    for (int64_t ir = 0, mr; ir < mc; ir += mr) {
      mr = panel_rows(pl, mr_w, ir);
      macro_tile(job, p, ap + ir * kc, b, ldb, roff, kc, i0 + ir, mr, j0 + jr,
                 nr, load, last, ke, tile);
    }
  }
}

// C[0, j0 .. j1) of a one-row product straight from the strided A and B:
// each element of B is used once, so packing it would only copy it. Rows
// of B contiguous: scaled rows summed; otherwise a dot product per column
// in 16 partial sums.
K_CLONES_FMA static void direct_row(const cpu_gemm_problem_t *p, int64_t j0,
                                    int64_t j1) {
  const float *a = p->a.data;
  const int64_t as = p->a.cs, rs = p->b.rs, cs = p->b.cs, k = p->k;
  float *restrict c = p->c + j0;
  const int64_t nj = j1 - j0;
  if (cs == 1) {
    for (int64_t j = 0; j < nj; j++) {
      c[j] = 0.0f;
    }
    for (int64_t q = 0; q < k; q++) {
      const float aq = a[q * as];
      const float *restrict row = p->b.data + q * rs + j0;
      for (int64_t j = 0; j < nj; j++) {
        c[j] += aq * row[j];
      }
    }
    return;
  }
  for (int64_t j = 0; j < nj; j++) {
    const float *col = p->b.data + (j0 + j) * cs;
    float acc[16] = {0};
    int64_t q = 0;
    if (rs == 1 && as == 1) {
      for (; q + 16 <= k; q += 16) {
        for (int l = 0; l < 16; l++) {
          acc[l] += a[q + l] * col[q + l];
        }
      }
    }
    for (; q < k; q++) {
      acc[q % 16] += a[q * as] * col[q * rs];
    }
    float sum = 0.0f;
    for (int l = 0; l < 16; l++) {
      sum += acc[l];
    }
    c[j] = sum;
  }
}

// B's block K [pc, pc+kc) x columns [jc, jc+nc) for the macro-kernel:
// packed panels, rows read in place (a last narrow panel packed at
// |bbuf|), or packed into |bbuf|.
static b_block_t b_block_at(const job_t *job, const cpu_gemm_problem_t *p,
                            int64_t pc, int64_t kc, int64_t jc, int64_t nc,
                            float *bbuf) {
  const engine_t *e = job->e;
  b_block_t bb = {bbuf, 0, NULL, NULL};
  const int64_t full = nc / e->nr * e->nr;
  if (p->b.packed) {
    bb.bp = packed_at(p->b.packed, pc, jc);
  } else if (p->b.roff) {
    bb.bp = p->b.data + jc;
    bb.roff = p->b.roff + pc;
    bb.edge = bbuf;
    if (full < nc) {
      pack_b_roff(p->b.data, bb.roff, kc, jc + full, nc - full, e->nr, bbuf);
    }
  } else if (p->b.pack) {
    p->b.pack(p->b.pack_ctx, pc, kc, jc, nc, p->n, e->nr, bbuf);
  } else if (job->b_in_place && p->b.cs == 1) {
    bb.bp = p->b.data + pc * p->b.rs + jc;
    bb.ldb = p->b.rs;
    bb.edge = bbuf;
    if (full < nc) {
      pack_b(p->b.data, p->b.rs, 1, p->n, pc, kc, jc + full, nc - full, e->nr,
             bbuf);
    }
  } else {
    pack_b(p->b.data, p->b.rs, p->b.cs, p->n, pc, kc, jc, nc, e->nr, bbuf);
  }
  return bb;
}

// A's panels for K [pc, pc+kc) x rows [ic, ic+mc): prepacked, or packed
// into |abuf| (*pl: their heights).
static const float *a_block_at(const job_t *job, const cpu_gemm_problem_t *p,
                               int64_t pc, int64_t kc, int64_t ic, int64_t mc,
                               float *abuf, panels_t *pl) {
  const engine_t *e = job->e;
  *pl = panels_of(e, mc, !job->packed_a);
  if (job->packed_a) {
    return packed_at(p->a.packed, pc, ic);
  }
  // The MR-high panels in one call, then each of the tail's.
  for (int64_t q = 0, h = pl->full; q < mc; q += h) {
    h = q < pl->full ? pl->full : panel_rows(pl, e->mr, q);
    int w = q < pl->full ? e->mr : (int)h;
    if (p->a.pack) {
      p->a.pack(p->a.pack_ctx, pc, kc, ic + q, h, p->m, w, abuf + q * kc);
    } else {
      pack_a(p->a.data, p->a.rs, p->a.cs, ic + q, h, pc, kc, w, abuf + q * kc);
    }
  }
  return abuf;
}

// Writes the kept columns of a block of a product with virtual columns
// (rows [i0, i0+mc) and product columns [j0, j0+nc) at |blk|, row stride
// |ld|) into C, in runs along its virtual rows; they land side by side in
// C, where the epilogue then runs over all of them at once.
static void write_virtual(const cpu_gemm_problem_t *p, const float *blk,
                          int64_t ld, int64_t i0, int64_t mc, int64_t j0,
                          int64_t nc) {
  const int64_t vrow = p->vrow, vkeep = p->vkeep;
  int64_t first = -1, kept = 0;
  for (int64_t j = j0; j < j0 + nc;) {
    const int64_t col = j % vrow;
    if (col >= vkeep) {
      j += vrow - col;
      continue;
    }
    const int64_t len = vkeep - col < j0 + nc - j ? vkeep - col : j0 + nc - j;
    const int64_t cj = j / vrow * vkeep + col;
    float *c = p->c + i0 * p->ldc + cj;
    for (int64_t i = 0; i < mc; i++) {
      memcpy(c + i * p->ldc, blk + i * ld + (j - j0),
             (size_t)len * sizeof(float));
    }
    first = first < 0 ? cj : first;
    kept += len;
    j += len;
  }
  if (kept > 0 && !epi_is_plain(&p->epi)) {
    epi_tile(&p->epi, p->c + i0 * p->ldc + first, p->ldc, i0, mc, first, kept);
  }
}

// Writes a block of a product (rows [i0, i0+mc) and columns [j0, j0+nc)
// at |blk|, row stride |ld|) transposed into C: 8x8 blocks in vectors,
// the edges one by one; then the epilogue on C's rows [j0, j0+nc). Without
// a Z the epilogue runs on the block before (a bias per row of C is one
// per column of the block): its rows are whole vectors of channels, while
// C's rows hold the block's few positions each (ddddocr_det's 1x1 384->384 at
// 13x13 with SiLU, split in tiles of 12 positions: 282 -> 143 us at t2).
K_CLONES_FMA static void write_transposed(const cpu_gemm_problem_t *p,
                                          float *blk, int64_t ld, int64_t i0,
                                          int64_t mc, int64_t j0, int64_t nc) {
  const bool on_block = !p->epi.z && !epi_is_plain(&p->epi);
  if (on_block) {
    cpu_gemm_epi_t eb = p->epi;
    eb.bias_rows = false;
    epi_tile(&eb, blk, ld, i0, mc, j0, nc);
  }
  float *c = p->c + j0 * p->ldc + i0;
  const int64_t m8 = mc / 8 * 8, n8 = nc / 8 * 8;
  for (int64_t j = 0; j < n8; j += 8) {
    for (int64_t i = 0; i < m8; i += 8) {
      k_t8(blk + i * ld + j, ld, c + j * p->ldc + i, p->ldc);
    }
  }
  for (int64_t j = 0; j < nc; j++) {
    for (int64_t i = j < n8 ? m8 : 0; i < mc; i++) {
      c[j * p->ldc + i] = blk[i * ld + j];
    }
  }
  if (!on_block && !epi_is_plain(&p->epi)) {
    epi_tile(&p->epi, c, p->ldc, j0, nc, i0, mc);
  }
}

// The M block for |rows| rows: MC, or as many MR-high panels as share
// the rows evenly among the blocks MC takes, so that no block is a thin
// remainder streaming all of a B block for a few rows (196 rows as 108 +
// 88, not 192 + 4).
static int64_t m_block(const engine_t *e, int64_t rows) {
  if (rows <= e->mc) {
    return e->mc;
  }
  const int64_t blocks = (rows + e->mc - 1) / e->mc;
  const int64_t per = (rows + blocks - 1) / blocks;
  return (per + e->mr - 1) / e->mr * e->mr;
}

// The tile [i0, i1) x [j0, j1) of a product written through a block: each
// MC x NC block over all of K into the slot's block buffer, then written
// out (B is taken again for each M block: free when read in place).
static void run_blocked(const job_t *job, const cpu_gemm_problem_t *p,
                        int64_t i0, int64_t i1, int64_t j0, int64_t j1,
                        float *slot) {
  const engine_t *e = job->e;
  float *abuf = slot, *bbuf = slot + job->a_floats;
  float *edge = slot + job->b_floats, *blk = slot + job->c_floats;
  cpu_gemm_problem_t pv = *p;
  pv.c = blk;
  pv.ldc = e->nc;
  pv.epi = cpu_gemm_epi_plain();
  for (int64_t jc = j0; jc < j1; jc += e->nc) {
    int64_t nc = j1 - jc < e->nc ? j1 - jc : e->nc;
    const int64_t mcb = m_block(e, i1 - i0);
    for (int64_t ic = i0; ic < i1; ic += mcb) {
      int64_t mc = i1 - ic < mcb ? i1 - ic : mcb;
      if (p->k == 0) {
        for (int64_t i = 0; i < mc; i++) {
          memset(blk + i * e->nc, 0, (size_t)nc * sizeof(float));
        }
      }
      for (int64_t pc = 0; pc < p->k; pc += e->kc) {
        int64_t kc = p->k - pc < e->kc ? p->k - pc : e->kc;
        b_block_t bb = b_block_at(job, p, pc, kc, jc, nc, bbuf);
        panels_t pl;
        const float *ap = a_block_at(job, p, pc, kc, ic, mc, abuf, &pl);
        macro(job, &pv, ap, &pl, &bb, mc, nc, kc, 0, 0, pc > 0, false, edge);
      }
      if (p->ct) {
        write_transposed(p, blk, e->nc, ic, mc, jc, nc);
      } else {
        write_virtual(p, blk, e->nc, ic, mc, jc, nc);
      }
    }
  }
}

// Task |t|: all of K for one tile of one batch member.
static void run_task(const job_t *job, size_t t, float *slot) {
  const engine_t *e = job->e;
  size_t per = (size_t)(job->gm * job->gn);
  size_t member = t / per, tile = t % per;
  cpu_gemm_problem_t mine;
  const cpu_gemm_problem_t *p = job->one;
  if (job->get) {
    job->get(job->ctx, member, &mine);
    p = &mine;
  }
  int64_t i0 = (int64_t)(tile / (size_t)job->gn) * job->tm;
  int64_t j0 = (int64_t)(tile % (size_t)job->gn) * job->tn;
  int64_t i1 = i0 + job->tm < p->m ? i0 + job->tm : p->m;
  int64_t j1 = j0 + job->tn < p->n ? j0 + job->tn : p->n;
  float *abuf = slot, *bbuf = slot + job->a_floats;
  float *edge = slot + job->b_floats;
  if (job->direct && p->k > 0) {
    direct_row(p, j0, j1);
    if (!epi_is_plain(&p->epi)) {
      epi_tile(&p->epi, p->c + j0, p->ldc, 0, 1, j0, j1 - j0);
    }
    return;
  }
  if (p->vrow > 0 || p->ct) {
    run_blocked(job, p, i0, i1, j0, j1, slot);
    return;
  }
  if (p->k == 0) {
    for (int64_t i = i0; i < i1; i++) {
      memset(p->c + i * p->ldc + j0, 0, (size_t)(j1 - j0) * sizeof(float));
    }
    if (!epi_is_plain(&p->epi)) {
      epi_tile(&p->epi, p->c + i0 * p->ldc + j0, p->ldc, i0, i1 - i0, j0,
               j1 - j0);
    }
    return;
  }
  for (int64_t jc = j0; jc < j1; jc += e->nc) {
    int64_t nc = j1 - jc < e->nc ? j1 - jc : e->nc;
    for (int64_t pc = 0; pc < p->k; pc += e->kc) {
      int64_t kc = p->k - pc < e->kc ? p->k - pc : e->kc;
      b_block_t bb = b_block_at(job, p, pc, kc, jc, nc, bbuf);
      const int64_t mcb = m_block(e, i1 - i0);
      for (int64_t ic = i0; ic < i1; ic += mcb) {
        int64_t mc = i1 - ic < mcb ? i1 - ic : mcb;
        panels_t pl;
        const float *ap = a_block_at(job, p, pc, kc, ic, mc, abuf, &pl);
        macro(job, p, ap, &pl, &bb, mc, nc, kc, ic, jc, pc > 0, pc + kc >= p->k,
              edge);
      }
    }
  }
}

// Pool body: invocation |begin| owns scratch slot |begin| and takes tasks
// until none are left.
static void worker(void *ctx, size_t begin, size_t end) {
  job_t *job = ctx;
  for (size_t w = begin; w < end; w++) {
    float *slot = job->scratch + w * job->slot_floats;
    for (int32_t q = 0; q < job->n_shares; q++) {
      size_t r = (w + (size_t)q) % (size_t)job->n_shares;
      for (;;) {
        size_t t = atomic_fetch_add_explicit(&job->shares[r].next, 1,
                                             memory_order_relaxed);
        if (t >= job->shares[r].end) {
          break;
        }
        run_task(job, t, slot);
      }
    }
  }
}

// Whether the product is one row read in place (direct_row), and whether
// A's prepacked panels are used.
static void choose_kernel(job_t *job, const cpu_gemm_problem_t *p) {
  job->packed_a = p->a.packed != NULL;
  job->direct = job->m == 1 && p->a.data && p->b.data && !p->b.packed &&
                !p->b.pack && !p->b.roff && p->vrow == 0 && !p->ct;
  if (job->direct) {
    job->packed_a = false;
  }
  // B's rows contiguous and a few panels high, or spread over L1: packing
  // B would copy each of its floats for only a few micro-kernel passes
  // over it, or to where the kernel reads it no faster.
  job->b_in_place =
      !job->direct && p->b.data && !p->b.packed && !p->b.pack &&
      (p->b.roff ||
       (p->b.cs == 1 && (job->m <= IN_PLACE_ROWS || rows_spread(p->b.rs))));
}

// The split's cost model for one job (choose_split).
typedef struct split_model {
  double k;               // inner dimension
  double pack_a, pack_b;  // multiply-adds a packed float costs
  int32_t threads;        // of the pool
  int64_t un, limit;      // NR-wide column units; most tiles a side
} split_model_t;

// The fixed cost of a task, and that of spreading a run over the pool, in
// multiply-adds (choose_split).
enum { SPLIT_TASK = 20000, SPLIT_SPREAD = 150000 };

// A late thread's wait is bounded by what a spinning pool thread takes
// to join (a microsecond or two): with it unbounded, 2 threads split a
// large product into many thin tiles, each streaming its B panels again
// (resnet50's layer 3 3x3s into 22 tiles of 18 rows, not 2 of 102), 3 %
// slower at t2; bounded at 2e6, mobilenetv2's products ran as 10-14
// tiles, a task's A packed again for each, where halves run 6 % faster
// (2.28 -> 2.13 ms at t2; resnet50, bert and gpt2 unchanged).
static const double split_late_cap = 2e5;

// Tries tiles of |tm| rows (|tiles_m| of them a member) against every
// column split, keeping the cheapest in |job| (*best its cost, < 0: none).
static void split_try_rows(const split_model_t *sm, job_t *job, int64_t tm,
                           int64_t tiles_m, double *best) {
  const int64_t nr = job->e->nr;
  for (int64_t gn = 1; gn <= sm->un && gn <= sm->limit; gn++) {
    int64_t tn_u = (sm->un + gn - 1) / gn;
    if (gn > 1 && (sm->un + tn_u - 1) / tn_u != gn) {
      continue;  // same tiles as a smaller gn
    }
    // The last panel's kernel is as high as its rows.
    double rows = (double)(tm < job->m ? tm : job->m);
    double cols = (double)(tn_u * nr);
    double per_task = rows * cols * sm->k + sm->pack_a * rows * sm->k +
                      sm->pack_b * cols * sm->k + SPLIT_TASK;
    double tasks = (double)job->count * (double)(tiles_m * gn);
    // The calling thread alone runs whole members; the pool shares
    // tiles.
    const int32_t choices[2] = {1, sm->threads};
    for (int c = tiles_m * gn > 1 ? 1 : 0; c < 2; c++) {
      int32_t w = choices[c];
      double rounds = tasks < w ? 1.0 : (tasks + w - 1) / w;
      // On the pool a thread may start late or be slowed by others on
      // its core: a quarter of a task's time, up to late_cap, is the
      // expected wait for the last one, so that tiles the threads take
      // one by one balance where that costs no packing twice.
      double late =
          0.25 * per_task < split_late_cap ? 0.25 * per_task : split_late_cap;
      double cost = (double)(int64_t)rounds * per_task +
                    (w > 1 && tasks > 1 ? SPLIT_SPREAD + late : 0.0);
      if (*best < 0 || cost < *best) {
        *best = cost;
        job->gm = tiles_m;
        job->gn = gn;
        job->tm = tm;
        job->tn = tn_u * nr;
        job->workers = w;
      }
    }
  }
}

// The rows of one of |even| equal shares of the job's rows, in multiples
// of 4 where that stays even; 0 where A's panels are prepacked (tiles
// take whole MR-high panels) or the shares are whole panels already.
static int64_t split_even_rows(const job_t *job, int64_t even) {
  const int64_t mr = job->e->mr;
  if (job->packed_a || job->direct ||
      (job->m % even == 0 && (job->m / even) % mr == 0)) {
    return 0;
  }
  const int64_t tm = (job->m + even - 1) / even, tm4 = (tm + 3) / 4 * 4;
  return job->m - (even - 1) * tm4 >= tm4 - 4 ? tm4 : tm;
}

// Chooses the task tile and the workers: the split of each member into
// gm x gn tiles whose estimated makespan on |threads| (padded
// multiply-adds plus the packing each tile repeats, plus the cost of
// waking the pool) is smallest, or all of it on the calling thread.
static void choose_split(job_t *job, const cpu_gemm_problem_t *p,
                         int32_t threads) {
  const int64_t mr = job->e->mr;
  int64_t um = (job->m + mr - 1) / mr;
  int64_t un = (job->n + job->e->nr - 1) / job->e->nr;
  // Multiply-adds one packed float costs (a packing callback on the A
  // side is the transposed convolution's gather, a few cycles a float:
  // with 10 the 3x3 256->256 at 14x14 split its channels, each thread
  // gathering all of A, at 1.88 ms on 2 threads; with 30 its positions,
  // 1.53 ms; B read in place is not copied, but every task streams its
  // columns of B from L2 or beyond, once for all its rows: at 0 the 3x3
  // 128->128 at 28x28 split into 99 tasks of one A panel each, at 3.0 into
  // 14 of all rows; B packed once, the weights of a transposed
  // convolution, is streamed by every task that takes its columns, from
  // memory where it is large: at 0 resnet50's 3x3 512->512 at 7x7 split
  // its 49 positions, each thread reading all 9 MiB of W, 850 us at t2;
  // at 2 its channels, 640-730 us), the fixed cost of a task, and that of
  // spreading a run over the pool (a few microseconds: below it a small
  // product is faster on one thread).
  const split_model_t sm = {.k = (double)(job->k > 0 ? job->k : 1),
                            .pack_a = job->packed_a || job->direct ? 0.0
                                      : p->a.pack                  ? 30.0
                                                                   : 6.0,
                            .pack_b = job->direct       ? 0.0
                                      : p->b.packed     ? 2.0
                                      : job->b_in_place ? 3.0
                                      : p->b.pack       ? 10.0
                                                        : 6.0,
                            .threads = threads,
                            .un = un > 0 ? un : 1,
                            .limit = 8 * (int64_t)threads};
  um = um > 0 ? um : 1;
  double best = -1;
  // Row tilings: tiles of whole MR-high panels, and, where A is packed by
  // each task (a tile may then take any rows), one even share per thread,
  // in multiples of 4 rows where that stays even: resnet50's 3x3 256->256
  // at 14x14 (196 positions) on 2 threads as 100 + 96 rows rather than
  // 9 + 8 panels of 12 (108 + 88), 400 -> 430-460 GFLOP/s (as 98 + 98
  // rows, mobilenetv2's 1x1 96->576 at 14x14 fell from 390 to 260-400);
  // its 1x1 960->160 at 7x7 as 25 + 24 rows, not 28 + 21, 385 -> 440.
  for (int64_t gm = 1; gm <= um && gm <= sm.limit; gm++) {
    int64_t tm_u = (um + gm - 1) / gm;
    if (gm == 1 || (um + tm_u - 1) / tm_u == gm) {  // else as a smaller gm
      split_try_rows(&sm, job, tm_u * mr, gm, &best);
    }
  }
  for (int64_t even = 2; even <= threads; even++) {
    const int64_t tm = split_even_rows(job, even);
    if (tm > 0) {
      split_try_rows(&sm, job, tm, even, &best);
    }
  }
}

static wm_error *run_job(job_t *job, const cpu_gemm_problem_t *first,
                         wm_pool_t *pool, const cpu_gemm_scratch_t *scratch) {
  const engine_t *e = job->e;
  if (job->count == 0 || job->m == 0 || job->n == 0) {
    return NULL;
  }
  int32_t threads = wm_pool_threads(pool);
  choose_kernel(job, first);
  choose_split(job, first, threads);
  job->tasks = job->count * (size_t)(job->gm * job->gn);
  int32_t workers =
      (size_t)job->workers < job->tasks ? job->workers : (int32_t)job->tasks;
  job->a_floats = round_up(e->mc * e->kc, 16);
  job->b_floats = job->a_floats + round_up(e->nc * e->kc, 16);
  job->c_floats = job->b_floats + round_up(e->mr * e->nr, 16);
  job->slot_floats = slot_floats(e, first->vrow > 0 || first->ct);
  size_t need = job->slot_floats * (size_t)workers;
  float *own = NULL;
  if (scratch && scratch->mem && scratch->floats >= need) {
    job->scratch = scratch->mem;
  } else if (!(job->scratch = own = alloc_floats(need))) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "out of memory for %d GEMM packing buffers of %zu floats",
                     (int)workers, job->slot_floats);
  }
  job->n_shares = workers >= 1 && workers <= MAX_SHARES ? workers : 1;
  for (int32_t r = 0; r < job->n_shares; r++) {
    atomic_init(&job->shares[r].next,
                job->tasks * (size_t)r / (size_t)job->n_shares);
    job->shares[r].end = job->tasks * (size_t)(r + 1) / (size_t)job->n_shares;
  }
  if (workers <= 1) {
    worker(job, 0, 1);
  } else {
    wm_pool_for(pool, (size_t)workers, 1, worker, job);
  }
  free(own);
  return NULL;
}

wm_error *cpu_gemm_run(const cpu_gemm_problem_t *p, wm_pool_t *pool,
                       const cpu_gemm_scratch_t *scratch) {
  job_t job;
  memset(&job, 0, offsetof(job_t, shares));
  job.e = engine();
  job.count = 1;
  job.one = p;
  job.m = p->m;
  job.n = p->n;
  job.k = p->k;
  return run_job(&job, p, pool, scratch);
}

wm_error *cpu_gemm_run_batch(size_t count, cpu_gemm_batch_fn get,
                             const void *ctx, wm_pool_t *pool,
                             const cpu_gemm_scratch_t *scratch) {
  if (count == 0) {
    return NULL;
  }
  cpu_gemm_problem_t first;
  get(ctx, 0, &first);
  job_t job;
  memset(&job, 0, offsetof(job_t, shares));
  job.e = engine();
  job.count = count;
  job.get = get;
  job.ctx = ctx;
  job.m = first.m;
  job.n = first.n;
  job.k = first.k;
  return run_job(&job, &first, pool, scratch);
}
