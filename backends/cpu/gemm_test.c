// The GEMM engine (gemm.h) against a naive triple loop in double: awkward
// sizes crossing the micro-tile and cache blocks, products shorter than a
// tile, strided and transposed operands, prepacked A and B (also packed
// again in place), B from a packing callback, every epilogue and
// activation, batches, on 1 and 2 threads.
#include "gemm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_tier.h"
#include "wm_test.h"

// Deterministic values in [-1, 1).
static float rnd(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static float *rnd_buf(size_t n, uint32_t seed) {
  float *p = malloc((n ? n : 1) * sizeof(float));
  for (size_t i = 0; i < n; i++) {
    p[i] = rnd(&seed);
  }
  return p;
}

static double ref_act(const cpu_act_t *a, double x) {
  switch (a->kind) {
    case CPU_ACT_NONE:
      return x;
    case CPU_ACT_RELU:
      return x > 0 ? x : 0;
    case CPU_ACT_CLIP:
      return x < a->p0 ? a->p0 : x > a->p1 ? a->p1 : x;
    case CPU_ACT_LEAKY_RELU:
      return x < 0 ? a->p0 * x : x;
    case CPU_ACT_SIGMOID:
      return 1 / (1 + exp(-x));
    case CPU_ACT_HARD_SIGMOID: {
      double v = a->p0 * x + a->p1;
      return v < 0 ? 0 : v > 1 ? 1 : v;
    }
    case CPU_ACT_HARD_SWISH: {
      double v = x / 6 + 0.5;
      return x * (v < 0 ? 0 : v > 1 ? 1 : v);
    }
    case CPU_ACT_TANH:
      return tanh(x);
    case CPU_ACT_SILU:
      return x / (1 + exp(-x));
    case CPU_ACT_GELU:
      return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case CPU_ACT_GELU_TANH:
      return 0.5 * x *
             (1 + tanh(sqrt(2 / 3.14159265358979323846) *
                       (x + 0.044715 * x * x * x)));
  }
  return NAN;
}

// A strided matrix of the test.
typedef struct mat {
  const float *d;
  int64_t rs, cs;
} mat_t;

// Checks C (row stride ldc) against the naive product of A and B under
// |epi|; returns the number of mismatches (and prints the first).
static int check_product(int64_t m, int64_t n, int64_t k, mat_t a, mat_t b,
                         const cpu_gemm_epi_t *epi, const float *c,
                         int64_t ldc) {
  int bad = 0;
  for (int64_t i = 0; i < m; i++) {
    for (int64_t j = 0; j < n; j++) {
      double acc = 0, mag = 0;
      for (int64_t p = 0; p < k; p++) {
        double t = (double)a.d[i * a.rs + p * a.cs] * b.d[p * b.rs + j * b.cs];
        acc += t;
        mag += fabs(t);
      }
      double v = epi->alpha * acc;
      if (epi->bias) {
        v += epi->bias[epi->bias_rows ? i : j];
      }
      if (epi->z) {
        v += (double)epi->beta * epi->z[i * epi->z_rs + j * epi->z_cs];
      }
      v = ref_act(&epi->act, v);
      double tol = 1e-5 * (fabs(epi->alpha) * mag + 1) + 1e-5 * fabs(v);
      double got = c[i * ldc + j];
      if (!(fabs(got - v) <= tol)) {
        if (bad == 0) {
          fprintf(stderr,
                  "m=%lld n=%lld k=%lld act=%d: C[%lld,%lld] = %.9g, want "
                  "%.9g\n",
                  (long long)m, (long long)n, (long long)k, (int)epi->act.kind,
                  (long long)i, (long long)j, got, v);
        }
        bad++;
      }
    }
  }
  return bad;
}

// The ways of handing an operand to the engine (A: packed with or without
// its strided form).
// B only: AS_ROWS, rows at offsets (a copy with the rows in reverse order
// and gaps between them).
enum {
  AS_STRIDED = 0,
  AS_PACKED = 1,
  AS_CALLBACK = 2,
  AS_PACKED_ONLY = 3,
  AS_ROWS = 4
};

// B from the packing callback: packs from a strided matrix as the engine
// documents (panel q: kc rows of nr floats, zero past n).
static void pack_from_mat(const void *ctx, int64_t p0, int64_t kc, int64_t j0,
                          int64_t nc, int64_t n, int nr, float *dst) {
  const mat_t *b = ctx;
  for (int64_t q = 0; q < nc; q += nr) {
    for (int64_t p = 0; p < kc; p++) {
      for (int j = 0; j < nr; j++) {
        int64_t col = j0 + q + j;
        *dst++ = col < n ? b->d[(p0 + p) * b->rs + col * b->cs] : 0.0f;
      }
    }
  }
}

// A from the packing callback: rows for columns (panel q: kc groups of
// nr floats, rows j0 + q .. of each k).
static void pack_a_from_mat(const void *ctx, int64_t p0, int64_t kc, int64_t j0,
                            int64_t nc, int64_t m, int nr, float *dst) {
  const mat_t *a = ctx;
  for (int64_t q = 0; q < nc; q += nr) {
    for (int64_t p = 0; p < kc; p++) {
      for (int i = 0; i < nr; i++) {
        int64_t row = j0 + q + i;
        *dst++ = row < m ? a->d[row * a->rs + (p0 + p) * a->cs] : 0.0f;
      }
    }
  }
}

// Runs one product with A and B given as |a_as| and |b_as|, the operands'
// layout transposed when |ta| / |tb|; returns the mismatches (-1 when the
// engine failed).
static int run_one(int64_t m, int64_t n, int64_t k, bool ta, bool tb, int a_as,
                   int b_as, const cpu_gemm_epi_t *epi, wm_pool_t *pool,
                   const cpu_gemm_scratch_t *scratch, uint32_t seed) {
  float *ad = rnd_buf((size_t)(m * k), seed);
  float *bd = rnd_buf((size_t)(k * n), seed + 7);
  mat_t a = {ad, ta ? 1 : k, ta ? m : 1};
  mat_t b = {bd, tb ? 1 : n, tb ? k : 1};
  int64_t ldc = n + 3;
  float *c = malloc((size_t)(m * ldc + 1) * sizeof(float));
  for (int64_t i = 0; i < m * ldc + 1; i++) {
    c[i] = 12345.0f;
  }
  cpu_gemm_packed_t pa, pb;
  memset(&pa, 0, sizeof(pa));
  memset(&pb, 0, sizeof(pb));
  int bad = -1;
  cpu_gemm_problem_t p;
  memset(&p, 0, sizeof(p));
  p.m = m;
  p.n = n;
  p.k = k;
  p.a.data = a.d;
  p.a.rs = a.rs;
  p.a.cs = a.cs;
  p.b.data = b.d;
  p.b.rs = b.rs;
  p.b.cs = b.cs;
  p.c = c;
  p.ldc = ldc;
  p.epi = *epi;
  wm_error *e = NULL;
  if (a_as == AS_PACKED || a_as == AS_PACKED_ONLY) {
    e = cpu_gemm_pack(CPU_GEMM_A, m, k, a.d, a.rs, a.cs, &pa);
    p.a.packed = &pa;
    p.a.data = a_as == AS_PACKED_ONLY ? NULL : a.d;
  }
  if (a_as == AS_CALLBACK) {
    p.a.data = NULL;
    p.a.pack = pack_a_from_mat;
    p.a.pack_ctx = &a;
  }
  if (!e && b_as == AS_PACKED) {
    e = cpu_gemm_pack(CPU_GEMM_B, n, k, b.d, b.rs, b.cs, &pb);
    p.b.packed = &pb;
  }
  if (b_as == AS_CALLBACK) {
    p.b.pack = pack_from_mat;
    p.b.pack_ctx = &b;
  }
  float *rows = NULL;
  int64_t *roff = NULL;
  if (b_as == AS_ROWS) {
    const int64_t gap = n + 5;
    rows = malloc((size_t)(k * gap + 1) * sizeof(float));
    roff = malloc((size_t)(k + 1) * sizeof(int64_t));
    for (int64_t q = 0; q < k; q++) {
      roff[q] = (k - 1 - q) * gap;
      for (int64_t j = 0; j < gap; j++) {
        rows[roff[q] + j] = j < n ? b.d[q * b.rs + j * b.cs] : NAN;
      }
    }
    p.b.data = rows;
    p.b.roff = roff;
    p.b.rs = 0;
    p.b.cs = 1;
  }
  if (!e) {
    e = cpu_gemm_run(&p, pool, scratch);
  }
  if (!e) {
    bad = check_product(m, n, k, a, b, epi, c, ldc);
    for (int64_t i = 0; i < m; i++) {
      for (int64_t j = n; j < ldc; j++) {
        if (c[i * ldc + j] != 12345.0f) {
          bad++;
        }
      }
    }
    if (c[m * ldc] != 12345.0f) {
      bad++;
    }
  } else {
    fprintf(stderr, "engine failed: %s\n", wm_host_error_message(e));
    wm_host_error_destroy(e);
  }
  cpu_gemm_packed_deinit(&pa);
  cpu_gemm_packed_deinit(&pb);
  free(rows);
  free(roff);
  free(c);
  free(ad);
  free(bd);
  return bad;
}

static const int64_t kSizes[] = {1, 2, 3, 4, 7, 13, 31, 64, 129};
enum { N_SIZES = sizeof(kSizes) / sizeof(kSizes[0]) };

// Every combination of the awkward sizes in every layout and operand form.
static void sweep(wm_pool_t *pool) {
  cpu_gemm_scratch_t scratch = {NULL, 0};
  cpu_gemm_epi_t plain = cpu_gemm_epi_plain();
  int fails = 0;
  for (int im = 0; im < N_SIZES; im++) {
    for (int in = 0; in < N_SIZES; in++) {
      for (int ik = 0; ik < N_SIZES; ik++) {
        int form = (im + in + ik) % 6;
        bool ta = form & 1, tb = (form >> 1) & 1;
        int a_as = form % 2 ? AS_PACKED : form == 4 ? AS_CALLBACK : AS_STRIDED;
        int b_as = form % 3;
        int bad = run_one(kSizes[im], kSizes[in], kSizes[ik], ta, tb, a_as,
                          b_as, &plain, pool, &scratch, (uint32_t)form);
        fails += bad != 0;
      }
    }
  }
  WM_CHECK_INT_EQ(fails, 0);
}

WM_TEST(gemm_matches_naive_over_awkward_sizes_one_thread) {
  sweep(NULL);
}

WM_TEST(gemm_matches_naive_over_awkward_sizes_two_threads) {
  wm_pool_t *pool = NULL;
  WM_CHECK_OK(wm_pool_create(2, &pool));
  sweep(pool);
  wm_pool_destroy(pool);
}

// Sizes larger than the K, M and N blocks, every operand form, 1 and 2
// threads.
WM_TEST(gemm_matches_naive_across_cache_blocks) {
  wm_pool_t *pool = NULL;
  WM_CHECK_OK(wm_pool_create(2, &pool));
  cpu_gemm_scratch_t scratch = {NULL, 0};
  cpu_gemm_epi_t epi = cpu_gemm_epi_plain();
  epi.act.kind = CPU_ACT_RELU;
  int fails = 0;
  for (int form = 0; form < 6; form++) {
    wm_pool_t *use = form % 2 ? pool : NULL;
    int a_as = form >= 4 ? AS_CALLBACK : form >= 2 ? AS_PACKED : AS_STRIDED;
    int bad = run_one(301, 613 + 64 * form, 457, form == 1, form == 2, a_as,
                      form % 3, &epi, use, &scratch, 99u + (uint32_t)form);
    fails += bad != 0;
  }
  wm_pool_destroy(pool);
  WM_CHECK_INT_EQ(fails, 0);
}

// B's rows at offsets (the shifted convolution's image): every awkward
// height and width, K in one block and in several, with the micro-kernel's
// epilogue, on 1 and 2 threads; the gaps between the rows hold NaN, so a
// column read past n shows.
WM_TEST(gemm_reads_b_rows_at_offsets) {
  wm_pool_t *pool = NULL;
  WM_CHECK_OK(wm_pool_create(2, &pool));
  cpu_gemm_scratch_t scratch = {NULL, 0};
  cpu_gemm_epi_t plain = cpu_gemm_epi_plain(), epi = plain;
  epi.act.kind = CPU_ACT_RELU;
  static const int64_t ns[] = {1, 31, 32, 33, 97, 613};
  static const int64_t ks[] = {1, 19, 457};
  int fails = 0, runs = 0;
  for (int im = 0; im < N_SIZES; im++) {
    for (size_t in = 0; in < sizeof(ns) / sizeof(ns[0]); in++) {
      for (size_t ik = 0; ik < sizeof(ks) / sizeof(ks[0]); ik++, runs++) {
        int bad = run_one(kSizes[im], ns[in], ks[ik], runs % 2, false,
                          runs % 3 ? AS_PACKED : AS_STRIDED, AS_ROWS,
                          runs % 2 ? &epi : &plain, runs % 4 < 2 ? pool : NULL,
                          &scratch, (uint32_t)runs);
        fails += bad != 0;
      }
    }
  }
  wm_pool_destroy(pool);
  WM_CHECK_INT_EQ(fails, 0);
}

// Virtual columns (the shifted convolution's rows of a virtual width):
// C holds the product's kept columns, packed together, under the
// epilogue (bias, Z and activation indexed by C's columns); the junk ones
// are dropped and nothing past C's columns is written. Heights across M
// blocks, widths across N blocks, K across blocks and K = 0, B in place
// at offsets, strided or packed by a callback, on 1 and 2 threads.
WM_TEST(gemm_virtual_columns_keep_and_drop) {
  wm_pool_t *pool = NULL;
  WM_CHECK_OK(wm_pool_create(2, &pool));
  cpu_gemm_scratch_t scratch = {NULL, 0};
  static const struct {
    int64_t m, vrows, vrow, vkeep, k;
  } cases[] = {{64, 56, 58, 56, 37},   {1, 5, 9, 7, 3},   {13, 3, 33, 31, 457},
               {301, 4, 130, 128, 19}, {20, 30, 3, 1, 5}, {7, 4, 40, 35, 0}};
  int fails = 0;
  for (size_t t = 0; t < sizeof(cases) / sizeof(cases[0]); t++) {
    const int64_t m = cases[t].m, k = cases[t].k, vrow = cases[t].vrow;
    const int64_t vkeep = cases[t].vkeep, vrows = cases[t].vrows;
    const int64_t n = (vrows - 1) * vrow + vkeep, cn = vrows * vkeep;
    const int64_t ldc = cn + 3;
    float *a = rnd_buf((size_t)(m * k + 1), 11u + (uint32_t)t);
    float *b = rnd_buf((size_t)(k * n + 1), 12u + (uint32_t)t);
    float *kept = malloc((size_t)(k * cn + 1) * sizeof(float));
    float *bias = rnd_buf((size_t)m, 13u);
    float *z = rnd_buf((size_t)(m * ldc), 14u);
    int64_t *roff = malloc((size_t)(k + 1) * sizeof(int64_t));
    for (int64_t p = 0; p < k; p++) {
      roff[p] = p * n;
      for (int64_t j = 0; j < cn; j++) {
        kept[p * cn + j] = b[p * n + j / vkeep * vrow + j % vkeep];
      }
    }
    mat_t am = {a, k, 1}, bm = {b, n, 1}, km = {kept, cn, 1};
    for (int form = 0; form < 3; form++) {
      cpu_gemm_epi_t epi = cpu_gemm_epi_plain();
      if (form > 0) {
        epi.bias = bias;
        epi.bias_rows = true;
        epi.z = form == 2 ? z : NULL;
        epi.z_rs = ldc;
        epi.z_cs = 1;
        epi.act.kind = form == 1 ? CPU_ACT_RELU : CPU_ACT_SILU;
      }
      float *c = malloc((size_t)(m * ldc) * sizeof(float));
      for (int64_t i = 0; i < m * ldc; i++) {
        c[i] = 12345.0f;
      }
      cpu_gemm_problem_t p;
      memset(&p, 0, sizeof(p));
      p.m = m;
      p.n = n;
      p.k = k;
      p.a = (cpu_gemm_operand_t){.data = a, .rs = k, .cs = 1};
      if (form == 0) {
        p.b = (cpu_gemm_operand_t){.data = b, .roff = roff, .cs = 1};
      } else if (form == 1) {
        p.b = (cpu_gemm_operand_t){.data = b, .rs = n, .cs = 1};
      } else {
        p.b = (cpu_gemm_operand_t){.pack = pack_from_mat, .pack_ctx = &bm};
      }
      p.c = c;
      p.ldc = ldc;
      p.epi = epi;
      p.vrow = vrow;
      p.vkeep = vkeep;
      wm_error *e =
          cpu_gemm_run(&p, (t + (size_t)form) % 2 ? pool : NULL, &scratch);
      int bad = e ? 1 : check_product(m, cn, k, am, km, &epi, c, ldc);
      for (int64_t i = 0; i < m; i++) {
        for (int64_t j = cn; j < ldc; j++) {
          bad += c[i * ldc + j] != 12345.0f;
        }
      }
      if (e) {
        wm_host_error_destroy(e);
      }
      fails += bad != 0;
      free(c);
    }
    free(a);
    free(b);
    free(kept);
    free(bias);
    free(z);
    free(roff);
  }
  wm_pool_destroy(pool);
  WM_CHECK_INT_EQ(fails, 0);
}

// C holding the product transposed (a convolution computed as Y^T): C =
// (A·B)^T = B^T·A^T under the epilogue in C's own rows and columns, 8x8
// blocks and their edges, heights and widths across blocks, K across
// blocks and K = 0, A packed by a callback or strided, on 1 and 2 threads;
// nothing past C's columns is written.
WM_TEST(gemm_writes_c_transposed) {
  wm_pool_t *pool = NULL;
  WM_CHECK_OK(wm_pool_create(2, &pool));
  cpu_gemm_scratch_t scratch = {NULL, 0};
  static const int64_t ms[] = {1, 7, 49, 196, 301};
  static const int64_t ns[] = {1, 9, 32, 70, 600};
  static const int64_t ks[] = {0, 19, 457};
  int fails = 0, runs = 0;
  for (size_t im = 0; im < sizeof(ms) / sizeof(ms[0]); im++) {
    for (size_t in = 0; in < sizeof(ns) / sizeof(ns[0]); in++, runs++) {
      const int64_t m = ms[im], n = ns[in], k = ks[runs % 3];
      const int64_t ldc = m + 3;
      float *a = rnd_buf((size_t)(m * k + 1), 21u + (uint32_t)runs);
      float *b = rnd_buf((size_t)(k * n + 1), 22u + (uint32_t)runs);
      float *bias = rnd_buf((size_t)n, 23u);
      float *z = rnd_buf((size_t)(n * ldc), 24u);
      float *c = malloc((size_t)(n * ldc) * sizeof(float));
      for (int64_t i = 0; i < n * ldc; i++) {
        c[i] = 12345.0f;
      }
      mat_t am = {a, k, 1};
      cpu_gemm_epi_t epi = cpu_gemm_epi_plain();
      if (runs % 2) {
        epi.bias = bias;
        epi.bias_rows = true;
        epi.z = z;
        epi.z_rs = ldc;
        epi.z_cs = 1;
        epi.act.kind = runs % 4 == 1 ? CPU_ACT_RELU : CPU_ACT_SILU;
      }
      cpu_gemm_problem_t p;
      memset(&p, 0, sizeof(p));
      p.m = m;
      p.n = n;
      p.k = k;
      if (runs % 3 == 1) {
        p.a = (cpu_gemm_operand_t){.pack = pack_a_from_mat, .pack_ctx = &am};
      } else {
        p.a = (cpu_gemm_operand_t){.data = a, .rs = k, .cs = 1};
      }
      p.b = (cpu_gemm_operand_t){.data = b, .rs = n, .cs = 1};
      p.c = c;
      p.ldc = ldc;
      p.epi = epi;
      p.ct = true;
      wm_error *e = cpu_gemm_run(&p, runs % 4 < 2 ? pool : NULL, &scratch);
      // (A·B)^T = B^T·A^T: the product checked in C's layout.
      mat_t bt = {b, 1, n}, at = {a, 1, k};
      int bad = e ? 1 : check_product(n, m, k, bt, at, &epi, c, ldc);
      for (int64_t j = 0; j < n; j++) {
        for (int64_t i = m; i < ldc; i++) {
          bad += c[j * ldc + i] != 12345.0f;
        }
      }
      if (e) {
        wm_host_error_destroy(e);
      }
      fails += bad != 0;
      free(a);
      free(b);
      free(bias);
      free(z);
      free(c);
    }
  }
  wm_pool_destroy(pool);
  WM_CHECK_INT_EQ(fails, 0);
}

// Every activation with alpha, a per-row or per-column bias and a residual
// in each of its stride forms, and in the convolutions' form (row bias,
// residual added as is: the micro-kernel's own epilogue for full tiles)
// with K in one block and in several.
WM_TEST(gemm_epilogue_applies_alpha_bias_residual_and_activation) {
  wm_pool_t *pool = NULL;
  WM_CHECK_OK(wm_pool_create(2, &pool));
  cpu_gemm_scratch_t scratch = {NULL, 0};
  const int64_t m = 37, n = 45, k = 19;
  float *bias = rnd_buf(64, 5);
  float *z = rnd_buf((size_t)(m * (n + 5)), 6);
  int fails = 0;
  for (int kind = CPU_ACT_NONE; kind <= CPU_ACT_GELU_TANH; kind++) {
    for (int form = 0; form < 6; form++) {
      cpu_gemm_epi_t epi = cpu_gemm_epi_plain();
      if (form >= 4) {
        epi.act.kind = (cpu_act_kind_t)kind;
        epi.act.p0 = kind == CPU_ACT_CLIP ? -0.3f : 0.2f;
        epi.act.p1 = kind == CPU_ACT_CLIP ? 0.4f : 0.5f;
        epi.bias = bias;
        epi.bias_rows = true;
        epi.z = form == 4 ? z : NULL;
        epi.z_rs = n + 5;
        epi.z_cs = 1;
        fails += run_one(m, n, form == 4 ? k : 700, false, false, AS_STRIDED,
                         form == 4 ? AS_STRIDED : AS_PACKED, &epi, pool,
                         &scratch, 7u + (uint32_t)kind) != 0;
        continue;
      }
      epi.act.kind = (cpu_act_kind_t)kind;
      epi.act.p0 = kind == CPU_ACT_CLIP ? -0.3f : 0.2f;
      epi.act.p1 = kind == CPU_ACT_CLIP ? 0.4f : 0.5f;
      epi.alpha = form == 0 ? 1.0f : 1.5f;
      epi.bias = form == 3 ? NULL : bias;
      epi.bias_rows = form == 1;
      epi.z = form == 0 ? NULL : z;
      epi.z_rs = form == 2 ? 0 : n + 5;
      epi.z_cs = form == 3 ? 0 : 1;
      epi.beta = form == 2 ? -0.75f : 1.0f;
      int bad = run_one(m, n, k, form == 1, form == 2, AS_STRIDED,
                        form == 3 ? AS_PACKED : AS_STRIDED, &epi,
                        form % 2 ? pool : NULL, &scratch, (uint32_t)kind);
      fails += bad != 0;
    }
  }
  // The epilogue also runs when K is empty: C = act(bias + Z).
  cpu_gemm_epi_t epi = cpu_gemm_epi_plain();
  epi.bias = bias;
  epi.z = z;
  epi.z_rs = n + 5;
  epi.z_cs = 1;
  epi.act.kind = CPU_ACT_SIGMOID;
  fails += run_one(m, n, 0, false, false, AS_STRIDED, AS_STRIDED, &epi, NULL,
                   &scratch, 1) != 0;
  free(bias);
  free(z);
  wm_pool_destroy(pool);
  WM_CHECK_INT_EQ(fails, 0);
}

// The Sigmoid and SiLU epilogues (whole tiles run them in vectors, edge
// tiles one by one) over their whole range: C = act(x + row bias) for x
// from -120 to 120 and the infinities, within 3e-7 of the exact value
// (1e-36 near zero: where sigmoid(x) leaves the normal range, x *
// sigmoid(x) may come out as zero), NaN kept.
WM_TEST(gemm_sigmoid_epilogues_hold_over_the_whole_range) {
  enum { M = 12, N = 2100 };
  float *a = calloc(M, sizeof(float)), *b = calloc(N, sizeof(float));
  float *c = calloc((size_t)M * N, sizeof(float));
  float bias[M];
  for (int i = 0; i < M; i++) {
    a[i] = 1.0f;
    bias[i] = 0.25f * (float)(i % 3);
  }
  for (int j = 0; j < N; j++) {
    b[j] = -120.0f + 240.0f * (float)j / (float)(N - 4);
  }
  b[N - 3] = INFINITY;
  b[N - 2] = -INFINITY;
  b[N - 1] = NAN;
  cpu_gemm_scratch_t scratch = {NULL, 0};
  int bad = 0;
  static const cpu_act_kind_t kinds[] = {CPU_ACT_SIGMOID, CPU_ACT_SILU};
  for (int q = 0; q < 2; q++) {
    const cpu_act_kind_t kind = kinds[q];
    cpu_gemm_problem_t p;
    memset(&p, 0, sizeof(p));
    p.m = M;
    p.n = N;
    p.k = 1;
    p.a.data = a;
    p.a.rs = 1;
    p.a.cs = 1;
    p.b.data = b;
    p.b.rs = N;
    p.b.cs = 1;
    p.c = c;
    p.ldc = N;
    p.epi = cpu_gemm_epi_plain();
    p.epi.bias = bias;
    p.epi.bias_rows = true;
    p.epi.act.kind = kind;
    wm_error *e = cpu_gemm_run(&p, NULL, &scratch);
    if (e) {
      fprintf(stderr, "%s\n", wm_host_error_message(e));
      wm_host_error_destroy(e);
      bad++;
      continue;
    }
    for (int i = 0; i < M; i++) {
      for (int j = 0; j < N; j++) {
        double x = (double)b[j] + bias[i];
        double sg = isinf(x) ? (x > 0 ? 1.0 : 0.0) : 1.0 / (1.0 + exp(-x));
        double want =
            kind == CPU_ACT_SILU ? (isinf(x) && x < 0 ? NAN : x * sg) : sg;
        float got = c[(size_t)i * N + j];
        bool ok = isnan(want) ? isnan(got)
                              : got == want || fabs(got - want) <=
                                                   3e-7 * fabs(want) + 1e-36;
        if (!ok && bad++ < 5) {
          fprintf(stderr, "act %d: x = %g: got %.9g, want %.9g\n", (int)kind, x,
                  (double)got, want);
        }
      }
    }
  }
  free(a);
  free(b);
  free(c);
  WM_CHECK_INT_EQ(bad, 0);
}

// cpu_act_apply agrees with the double-precision definitions over a range
// that reaches every branch and the saturated tails.
WM_TEST(act_apply_matches_definitions) {
  enum { N = 2001 };
  float x[N];
  for (int kind = CPU_ACT_NONE; kind <= CPU_ACT_GELU_TANH; kind++) {
    cpu_act_t act = {(cpu_act_kind_t)kind, 0.2f, 0.5f};
    if (kind == CPU_ACT_CLIP) {
      act.p0 = -1.0f;
      act.p1 = 2.0f;
    }
    for (int i = 0; i < N; i++) {
      x[i] = -20.0f + 0.02f * (float)i;
    }
    cpu_act_apply(&act, x, N);
    for (int i = 0; i < N; i++) {
      double want = ref_act(&act, -20.0 + 0.02 * (float)i);
      WM_CHECK_DBL_NEAR(x[i], want, 2e-6 + 2e-6 * fabs(want));
    }
  }
}

// A batch from a callback: each member its own operands and output.
typedef struct batch_ctx {
  int64_t m, n, k;
  const float *a, *b;
  float *c;
  cpu_gemm_epi_t epi;
} batch_ctx_t;

static void batch_get(const void *ctx, size_t t, cpu_gemm_problem_t *out) {
  const batch_ctx_t *bc = ctx;
  memset(out, 0, sizeof(*out));
  out->m = bc->m;
  out->n = bc->n;
  out->k = bc->k;
  out->a.data = bc->a + t * (size_t)(bc->m * bc->k);
  out->a.rs = bc->k;
  out->a.cs = 1;
  // Member t uses B transposed when odd, broadcast member 0 when even.
  if (t % 2) {
    out->b.data = bc->b + t * (size_t)(bc->k * bc->n);
    out->b.rs = 1;
    out->b.cs = bc->k;
  } else {
    out->b.data = bc->b;
    out->b.rs = bc->n;
    out->b.cs = 1;
  }
  out->c = bc->c + t * (size_t)(bc->m * bc->n);
  out->ldc = bc->n;
  out->epi = bc->epi;
}

WM_TEST(gemm_batch_runs_every_member) {
  wm_pool_t *pool = NULL;
  WM_CHECK_OK(wm_pool_create(2, &pool));
  cpu_gemm_scratch_t scratch = {NULL, 0};
  enum { COUNT = 5 };
  batch_ctx_t bc = {13, 70, 33, NULL, NULL, NULL, cpu_gemm_epi_plain()};
  bc.epi.act.kind = CPU_ACT_TANH;
  float *a = rnd_buf(COUNT * 13 * 33, 1);
  float *b = rnd_buf(COUNT * 33 * 70, 2);
  float *c = calloc(COUNT * 13 * 70, sizeof(float));
  bc.a = a;
  bc.b = b;
  bc.c = c;
  int fails = 0;
  for (int threads = 1; threads <= 2; threads++) {
    wm_error *e = cpu_gemm_run_batch(COUNT, batch_get, &bc,
                                     threads == 2 ? pool : NULL, &scratch);
    if (e) {
      fprintf(stderr, "%s\n", wm_host_error_message(e));
      wm_host_error_destroy(e);
      fails++;
      break;
    }
    for (size_t t = 0; t < COUNT; t++) {
      cpu_gemm_problem_t p;
      batch_get(&bc, t, &p);
      mat_t am = {p.a.data, p.a.rs, p.a.cs}, bm = {p.b.data, p.b.rs, p.b.cs};
      fails += check_product(p.m, p.n, p.k, am, bm, &bc.epi, p.c, p.ldc) != 0;
    }
  }
  free(a);
  free(b);
  free(c);
  wm_pool_destroy(pool);
  WM_CHECK_INT_EQ(fails, 0);
}

// A lent scratch of cpu_gemm_workspace_bytes serves products on one and two
// threads (the engine packs into it); a short one or none makes the engine
// use buffers of its own, with the same results.
WM_TEST(gemm_uses_the_lent_scratch) {
  wm_pool_t *pool = NULL;
  WM_CHECK_OK(wm_pool_create(2, &pool));
  size_t bytes = cpu_gemm_workspace_bytes(2);
  WM_CHECK(bytes >= 2 * cpu_gemm_workspace_bytes(1));
  float *mem = aligned_alloc(64, bytes);
  WM_CHECK(mem != NULL);
  size_t floats = bytes / sizeof(float);
  cpu_gemm_epi_t plain = cpu_gemm_epi_plain();
  for (int threads = 1; threads <= 2; threads++) {
    for (size_t i = 0; i < floats; i++) {
      mem[i] = -12345.0f;
    }
    cpu_gemm_scratch_t lent = {mem, floats};
    // B's rows 1 KiB apart are packed (not read in place): each slot a
    // thread uses gets a B block of 256 x 64 floats, even when one thread
    // runs every task.
    WM_CHECK_INT_EQ(
        run_one(200, 256, 64, false, false, AS_STRIDED, AS_STRIDED, &plain,
                threads == 2 ? pool : NULL, &lent, 5u + (uint32_t)threads),
        0);
    size_t written = 0;
    for (size_t i = 0; i < floats; i++) {
      written += mem[i] != -12345.0f;
    }
    WM_CHECK(written > 64 * 64);
  }
  cpu_gemm_scratch_t shorter = {mem, 16};
  WM_CHECK_INT_EQ(run_one(64, 64, 64, false, false, AS_STRIDED, AS_STRIDED,
                          &plain, pool, &shorter, 3),
                  0);
  WM_CHECK_INT_EQ(run_one(7, 9, 5, false, false, AS_STRIDED, AS_STRIDED, &plain,
                          pool, NULL, 4),
                  0);
  free(mem);
  wm_pool_destroy(pool);
}

// C with fewer rows than the full tile (the shorter kernels) at every
// height up to past one tile, A plain, transposed, prepacked (with and
// without its strided form) or from the callback, each B form, with a bias
// and an activation, on 1 and 2 threads.
WM_TEST(gemm_short_products_match_naive) {
  wm_pool_t *pool = NULL;
  WM_CHECK_OK(wm_pool_create(2, &pool));
  cpu_gemm_scratch_t scratch = {NULL, 0};
  float *bias = rnd_buf(670, 8);
  cpu_gemm_epi_t epi = cpu_gemm_epi_plain();
  epi.bias = bias;
  epi.act.kind = CPU_ACT_TANH;
  int fails = 0;
  for (int64_t m = 1; m <= 13; m++) {
    for (int form = 0; form < 9; form++) {
      // Forms 5 and 8 are large enough to be shared over the pool.
      int64_t n = form == 5 || form == 8 ? 670 : 70;
      int64_t k = form == 5 || form == 8 ? 345 : 45;
      int a_as = form == 3                ? AS_PACKED
                 : form == 6              ? AS_PACKED_ONLY
                 : form == 7 || form == 8 ? AS_CALLBACK
                                          : AS_STRIDED;
      int bad =
          run_one(m, n, k, form & 1, form == 4, a_as, form % 3, &epi,
                  form % 2 ? pool : NULL, &scratch, (uint32_t)(m * 8 + form));
      if (bad) {
        fprintf(stderr, "m=%lld form %d: %d mismatches\n", (long long)m, form,
                bad);
      }
      fails += bad != 0;
    }
  }
  free(bias);
  wm_pool_destroy(pool);
  WM_CHECK_INT_EQ(fails, 0);
}

// An operand allocated once and packed again from other values (weights
// known only at run time, used by many products) gives their products.
WM_TEST(gemm_pack_fill_repacks_an_allocated_operand) {
  const int64_t m = 5, n = 77, k = 600;
  float *a = rnd_buf((size_t)(m * k), 11);
  float *b1 = rnd_buf((size_t)(k * n), 12), *b2 = rnd_buf((size_t)(k * n), 13);
  float *c = malloc((size_t)(m * n) * sizeof(float));
  cpu_gemm_packed_t pb;
  WM_CHECK(cpu_gemm_pack_alloc(CPU_GEMM_B, n, k, &pb) == NULL);
  WM_CHECK(pb.data != NULL);
  cpu_gemm_scratch_t scratch = {NULL, 0};
  cpu_gemm_epi_t plain = cpu_gemm_epi_plain();
  int fails = 0;
  for (int round = 0; round < 2; round++) {
    // B transposed in memory: element (p, j) at b[j * k + p].
    mat_t am = {a, k, 1}, bm = {round ? b2 : b1, 1, k};
    cpu_gemm_pack_fill(&pb, bm.d, bm.rs, bm.cs);
    cpu_gemm_problem_t p;
    memset(&p, 0, sizeof(p));
    p.m = m;
    p.n = n;
    p.k = k;
    p.a.data = a;
    p.a.rs = k;
    p.a.cs = 1;
    p.b.packed = &pb;
    p.c = c;
    p.ldc = n;
    p.epi = plain;
    wm_error *e = cpu_gemm_run(&p, NULL, &scratch);
    if (e) {
      wm_host_error_destroy(e);
      fails++;
      continue;
    }
    fails += check_product(m, n, k, am, bm, &plain, c, n) != 0;
  }
  cpu_gemm_packed_deinit(&pb);
  free(a);
  free(b1);
  free(b2);
  free(c);
  WM_CHECK_INT_EQ(fails, 0);
}

// Row counts whose last MR-high panel would be short (49 = 8 x 6 + 1, the
// 7x7 planes of convolutions in the transposed form): the rows taken from
// the panels before it by a per-run packed A (strided and callback) agree
// with the naive product, with the epilogue, over blocks of K and 2 threads.
WM_TEST(gemm_balanced_tail_panels_match_naive) {
  static const int64_t rows[] = {19, 25, 49, 50, 55, 97};
  wm_pool_t *pool = NULL;
  WM_CHECK_OK(wm_pool_create(2, &pool));
  cpu_gemm_scratch_t scratch = {NULL, 0};
  float *bias = rnd_buf(97, 21);
  cpu_gemm_epi_t epi = cpu_gemm_epi_plain();
  epi.bias = bias;
  epi.bias_rows = true;
  epi.act.kind = CPU_ACT_RELU;
  int fails = 0;
  for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
    for (int form = 0; form < 6; form++) {
      int64_t k = form >= 4 ? 345 : 45;
      int a_as = form % 2 ? AS_CALLBACK : AS_STRIDED;
      int bad = run_one(rows[r], 70 + 300 * (form >= 4), k, form == 2,
                        form == 3, a_as, form % 3, &epi, form % 2 ? pool : NULL,
                        &scratch, (uint32_t)(700 + r * 8 + (size_t)form));
      if (bad) {
        fprintf(stderr, "m=%lld form %d: %d mismatches\n", (long long)rows[r],
                form, bad);
      }
      fails += bad != 0;
    }
  }
  free(bias);
  wm_pool_destroy(pool);
  WM_CHECK_INT_EQ(fails, 0);
}

WM_TEST(gemm_kernel_is_named) {
  const char *name = cpu_gemm_kernel_name();
  WM_CHECK(name != NULL && strlen(name) > 0);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(gemm_matches_naive_over_awkward_sizes_one_thread),
      WM_CASE(gemm_matches_naive_over_awkward_sizes_two_threads),
      WM_CASE(gemm_matches_naive_across_cache_blocks),
      WM_CASE(gemm_reads_b_rows_at_offsets),
      WM_CASE(gemm_virtual_columns_keep_and_drop),
      WM_CASE(gemm_writes_c_transposed),
      WM_CASE(gemm_epilogue_applies_alpha_bias_residual_and_activation),
      WM_CASE(gemm_sigmoid_epilogues_hold_over_the_whole_range),
      WM_CASE(act_apply_matches_definitions),
      WM_CASE(gemm_batch_runs_every_member),
      WM_CASE(gemm_uses_the_lent_scratch),
      WM_CASE(gemm_short_products_match_naive),
      WM_CASE(gemm_pack_fill_repacks_an_allocated_operand),
      WM_CASE(gemm_balanced_tail_panels_match_naive),
      WM_CASE(gemm_kernel_is_named),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
