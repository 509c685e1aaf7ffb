// Comparison of two baselines built in memory: verdicts for equal, slower,
// faster and too short runs, the environment diff and --force, pairing of
// configurations, the p99 metric's sample minimum, Holm's adjustment, and
// the text and JSON reports.
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../tests/testing/wm_test.h"
#include "wmap/bench.h"

// One configuration of a synthetic baseline.
typedef struct spec {
  const char *label;
  size_t blocks;
  size_t per_block;  // samples per block
  double scale;      // typical latency in ns
  uint64_t seed;
} spec_t;

// The range of the block-to-block factor add_config draws (2 %).
static double block_spread = 0.02;

static uint64_t next_u64(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static double unif(uint64_t *s) {
  return (double)(next_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}

// Latencies around |scale|: a block factor of +-1 %, up to 4 % per sample
// and 2 % of samples 1.5x slower (a tail).
static wm_status_t add_config(wm_baseline_t *b, size_t at, const spec_t *sp) {
  wm_bench_config_t *c = &b->configs[at];
  c->label = wm_arena_strdup(&b->arena, sp->label);
  c->threads = 1;
  c->n_blocks = sp->blocks;
  c->blocks = wm_arena_alloc(
      &b->arena, (sp->blocks ? sp->blocks : 1) * sizeof(*c->blocks));
  if (!c->label || !c->blocks) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  uint64_t s = sp->seed;
  for (size_t k = 0; k < sp->blocks; k++) {
    wm_bench_block_t *blk = &c->blocks[k];
    blk->index = (int32_t)k;
    blk->order = (int32_t)k;
    blk->n = sp->per_block;
    blk->samples = wm_arena_alloc(&b->arena, sp->per_block * sizeof(double));
    if (!blk->samples) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
    double factor = 1.0 + block_spread * (unif(&s) - 0.5);
    for (size_t i = 0; i < sp->per_block; i++) {
      double tail = unif(&s) < 0.02 ? 1.5 : 1.0;
      blk->samples[i] =
          floor(sp->scale * factor * tail * (1.0 + 0.04 * unif(&s)));
    }
  }
  return NULL;
}

// A finished baseline of |n| configurations measured on |cpu|.
static wm_status_t make_baseline(const spec_t *specs, size_t n, const char *cpu,
                                 wm_baseline_t **out) {
  WM_RETURN_IF_ERROR(wm_baseline_create(out));
  wm_baseline_t *b = *out;
  b->n_configs = n;
  b->configs = wm_arena_alloc(&b->arena, n * sizeof(*b->configs));
  if (!b->configs) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    WM_RETURN_IF_ERROR(add_config(b, i, &specs[i]));
  }
  wm_env_set(&b->env, "cpu.model", true, "%s", cpu);
  wm_env_set(&b->env, "os.kernel", true, "6.1.0");
  wm_env_set(&b->env, "load.avg1", false, "%.2f",
             0.1 * (double)(specs[0].seed % 10));
  wm_env_finish(&b->env);
  return wm_baseline_finish(b);
}

// Compares one configuration against one, with default options.
typedef struct pair_run {
  wm_baseline_t *base, *new_b;
  wm_compare_t *c;
} pair_run_t;

static wm_status_t run_pair(const spec_t *a, size_t na, const spec_t *b,
                            size_t nb, const wm_compare_options_t *o,
                            pair_run_t *r) {
  memset(r, 0, sizeof(*r));
  WM_RETURN_IF_ERROR(make_baseline(a, na, "Test CPU", &r->base));
  WM_RETURN_IF_ERROR(make_baseline(b, nb, "Test CPU", &r->new_b));
  return wm_compare_baselines(r->base, r->new_b, "base.json", "new.json", o,
                              &r->c);
}

static void pair_free(pair_run_t *r) {
  wm_compare_destroy(r->c);
  wm_baseline_destroy(r->base);
  wm_baseline_destroy(r->new_b);
  memset(r, 0, sizeof(*r));
}

static const wm_compare_metric_t *find_metric(const wm_compare_t *c,
                                              const char *name) {
  for (size_t i = 0; i < c->n_metrics; i++) {
    if (strcmp(c->metrics[i].name, name) == 0) {
      return &c->metrics[i];
    }
  }
  return NULL;
}

WM_TEST(verdict_names_are_the_documented_ones) {
  WM_CHECK_STR_EQ(wm_verdict_name(WM_VERDICT_NO_CHANGE), "no_change");
  WM_CHECK_STR_EQ(wm_verdict_name(WM_VERDICT_WITHIN_NOISE), "within_noise");
  WM_CHECK_STR_EQ(wm_verdict_name(WM_VERDICT_IMPROVED), "improved");
  WM_CHECK_STR_EQ(wm_verdict_name(WM_VERDICT_REGRESSED), "regressed");
  WM_CHECK_STR_EQ(wm_verdict_name(WM_VERDICT_INSUFFICIENT),
                  "insufficient_data");
  WM_CHECK_STR_EQ(wm_verdict_name(WM_VERDICT_INCOMPARABLE), "incomparable");
  WM_CHECK_STR_EQ(wm_verdict_name(WM_VERDICT_INCONCLUSIVE), "inconclusive");
}

WM_TEST(a_wide_interval_is_inconclusive_never_no_change) {
  // Blocks that differ by up to 60 % from one another: no significant
  // change, but an interval far wider than +-5 %.
  wm_verdict_t got[5];
  bool wide[5], significant[5], made = true;
  block_spread = 0.6;
  for (uint64_t k = 0; k < 5 && made; k++) {
    spec_t a = {"cpu@t1", 6, 20, 1e6, 300 + k};
    spec_t b = {"cpu@t1", 6, 20, 1e6, 400 + k};
    pair_run_t r;
    wm_status_t s = run_pair(&a, 1, &b, 1, NULL, &r);
    made = s == NULL;
    wm_status_free(s);
    if (made) {
      const wm_compare_metric_t *m = &r.c->metrics[0];
      got[k] = m->verdict;
      wide[k] = m->ci_lo < -0.05 || m->ci_hi > 0.05;
      significant[k] = m->p_adjusted < 0.05;
      pair_free(&r);
    }
  }
  block_spread = 0.02;
  WM_CHECK(made);
  size_t inconclusive = 0;
  for (int k = 0; k < 5; k++) {
    if (!significant[k]) {
      WM_CHECK_INT_EQ(got[k],
                      wide[k] ? WM_VERDICT_INCONCLUSIVE : WM_VERDICT_NO_CHANGE);
    }
    WM_CHECK(got[k] != WM_VERDICT_NO_CHANGE || !wide[k]);
    inconclusive += got[k] == WM_VERDICT_INCONCLUSIVE;
  }
  WM_CHECK(inconclusive >= 3);
}

WM_TEST(same_distribution_is_no_change_or_within_noise) {
  // Ten A/A comparisons: different seeds of the same noise.
  for (uint64_t k = 0; k < 10; k++) {
    spec_t a = {"cpu@t1", 10, 50, 1e6, 100 + k};
    spec_t b = {"cpu@t1", 10, 50, 1e6, 200 + k};
    pair_run_t r;
    WM_CHECK_OK(run_pair(&a, 1, &b, 1, NULL, &r));
    WM_CHECK_INT_EQ(r.c->n_metrics, 1);
    const wm_compare_metric_t *m = &r.c->metrics[0];
    WM_CHECK_STR_EQ(m->name, "cpu@t1 vs cpu@t1: p50");
    bool quiet = m->verdict == WM_VERDICT_NO_CHANGE ||
                 m->verdict == WM_VERDICT_WITHIN_NOISE;
    if (!quiet) {
      wm_test_fail(__FILE__, __LINE__, "seed %d: verdict %s", (int)k,
                   wm_verdict_name(m->verdict));
    }
    WM_CHECK(m->ci_lo < 0.05 && m->ci_hi > -0.05);
    WM_CHECK(m->ci_lo <= m->rel_change && m->rel_change <= m->ci_hi);
    WM_CHECK_INT_EQ(r.c->overall, m->verdict);
    WM_CHECK_INT_EQ(r.c->n_diff, 0);  // load.avg1 follows seed % 10
    pair_free(&r);
  }
}

WM_TEST(thirty_percent_slower_is_regressed) {
  spec_t a = {"cpu@t1", 10, 50, 1e6, 1};
  spec_t b = {"cpu@t1", 10, 50, 1.3e6, 2};
  pair_run_t r;
  WM_CHECK_OK(run_pair(&a, 1, &b, 1, NULL, &r));
  const wm_compare_metric_t *m = &r.c->metrics[0];
  WM_CHECK_INT_EQ(m->verdict, WM_VERDICT_REGRESSED);
  WM_CHECK(m->ci_lo > 0.05);
  WM_CHECK_DBL_NEAR(m->rel_change, 0.3, 0.03);
  WM_CHECK_DBL_NEAR(m->ratio, m->new_ns / m->base_ns, 1e-12);
  // Every new block median is above every base one: U of base = 0 and the
  // exact two-sided p = 2 / C(20, 10).
  WM_CHECK_DBL_NEAR(m->u, 0, 0);
  WM_CHECK(m->exact);
  WM_CHECK_DBL_NEAR(m->p_value, 2.0 / 184756.0, 1e-12);
  WM_CHECK_DBL_NEAR(m->p_adjusted, m->p_value, 1e-15);
  WM_CHECK_INT_EQ(m->n_base, 10);
  WM_CHECK_INT_EQ(m->n_new, 10);
  WM_CHECK_INT_EQ(r.c->overall, WM_VERDICT_REGRESSED);
  WM_CHECK_DBL_NEAR(r.c->geomean_ratio, m->ratio, 1e-12);
  pair_free(&r);
}

WM_TEST(thirty_percent_faster_is_improved) {
  spec_t a = {"cpu@t1", 10, 50, 1e6, 1};
  spec_t b = {"cpu@t1", 10, 50, 0.7e6, 2};
  pair_run_t r;
  WM_CHECK_OK(run_pair(&a, 1, &b, 1, NULL, &r));
  const wm_compare_metric_t *m = &r.c->metrics[0];
  WM_CHECK_INT_EQ(m->verdict, WM_VERDICT_IMPROVED);
  WM_CHECK(m->ci_hi < -0.05);
  WM_CHECK_DBL_NEAR(m->rel_change, -0.3, 0.03);
  WM_CHECK_DBL_NEAR(m->u, 100, 0);  // every base block above every new one
  WM_CHECK_INT_EQ(r.c->overall, WM_VERDICT_IMPROVED);
  pair_free(&r);
}

WM_TEST(five_blocks_a_side_is_enough_and_exact) {
  spec_t a = {"cpu@t1", 5, 20, 1e6, 1};
  spec_t b = {"cpu@t1", 5, 20, 1.5e6, 2};
  pair_run_t r;
  WM_CHECK_OK(run_pair(&a, 1, &b, 1, NULL, &r));
  const wm_compare_metric_t *m = &r.c->metrics[0];
  WM_CHECK_DBL_NEAR(m->p_value, 2.0 / 252.0, 1e-12);  // 2 / C(10, 5)
  WM_CHECK_INT_EQ(m->verdict, WM_VERDICT_REGRESSED);
  pair_free(&r);
}

WM_TEST(three_blocks_is_insufficient_data) {
  spec_t a = {"cpu@t1", 3, 50, 1e6, 1};
  spec_t b = {"cpu@t1", 3, 50, 1.3e6, 2};
  pair_run_t r;
  WM_CHECK_OK(run_pair(&a, 1, &b, 1, NULL, &r));
  const wm_compare_metric_t *m = &r.c->metrics[0];
  WM_CHECK_INT_EQ(m->verdict, WM_VERDICT_INSUFFICIENT);
  WM_CHECK(isfinite(m->p_value));  // still computed and shown
  WM_CHECK(isnan(m->p_adjusted));  // but not part of the Holm family
  WM_CHECK_DBL_NEAR(m->rel_change, 0.3, 0.03);
  WM_CHECK_INT_EQ(r.c->overall, WM_VERDICT_INSUFFICIENT);
  pair_free(&r);
  // One short side is enough.
  spec_t c = {"cpu@t1", 10, 50, 1.3e6, 2};
  WM_CHECK_OK(run_pair(&a, 1, &c, 1, NULL, &r));
  WM_CHECK_INT_EQ(r.c->metrics[0].verdict, WM_VERDICT_INSUFFICIENT);
  pair_free(&r);
}

WM_TEST(critical_difference_is_incomparable_unless_forced) {
  spec_t a = {"cpu@t1", 10, 50, 1e6, 1};
  spec_t b = {"cpu@t1", 10, 50, 1.3e6, 1};
  wm_baseline_t *base = NULL, *nb = NULL;
  WM_CHECK_OK(make_baseline(&a, 1, "Intel Xeon", &base));
  WM_CHECK_OK(make_baseline(&b, 1, "AMD EPYC", &nb));
  wm_compare_t *c = NULL;
  WM_CHECK_OK(wm_compare_baselines(base, nb, "a.json", "b.json", NULL, &c));
  WM_CHECK_INT_EQ(c->overall, WM_VERDICT_INCOMPARABLE);
  WM_CHECK_INT_EQ(c->metrics[0].verdict, WM_VERDICT_INCOMPARABLE);
  WM_CHECK_DBL_NEAR(c->metrics[0].rel_change, 0.3, 0.03);  // still computed
  WM_CHECK_INT_EQ(c->n_diff, 1);
  WM_CHECK_STR_EQ(c->diff[0].field, "cpu.model");
  WM_CHECK_STR_EQ(c->diff[0].base, "Intel Xeon");
  WM_CHECK_STR_EQ(c->diff[0].new_value, "AMD EPYC");
  WM_CHECK(c->diff[0].critical);
  wm_compare_destroy(c);
  wm_compare_options_t o = {.noise = 0.05,
                            .alpha = 0.05,
                            .resamples = 2000,
                            .seed = 1,
                            .force = true};
  WM_CHECK_OK(wm_compare_baselines(base, nb, "a.json", "b.json", &o, &c));
  WM_CHECK_INT_EQ(c->overall, WM_VERDICT_REGRESSED);
  WM_CHECK_INT_EQ(c->metrics[0].verdict, WM_VERDICT_REGRESSED);
  WM_CHECK_INT_EQ(c->n_diff, 1);  // still listed
  wm_compare_destroy(c);
  wm_baseline_destroy(base);
  wm_baseline_destroy(nb);
}

WM_TEST(env_diff_lists_volatile_and_absent_fields_critical_first) {
  spec_t a = {"cpu@t1", 10, 20, 1e6, 1};
  spec_t b = {"cpu@t1", 10, 20, 1e6, 2};
  wm_baseline_t *base = NULL, *nb = NULL;
  WM_CHECK_OK(make_baseline(&a, 1, "X", &base));
  WM_CHECK_OK(make_baseline(&b, 1, "X", &nb));
  wm_env_set(&base->env, "env.OMP_NUM_THREADS", false, "4");
  wm_env_set(&nb->env, "lib.openblas.core", true, "Haswell");
  wm_env_finish(&base->env);
  wm_env_finish(&nb->env);
  wm_compare_t *c = NULL;
  WM_CHECK_OK(wm_compare_baselines(base, nb, "a.json", "b.json", NULL, &c));
  WM_CHECK_INT_EQ(c->n_diff, 3);
  WM_CHECK_STR_EQ(c->diff[0].field, "lib.openblas.core");
  WM_CHECK(c->diff[0].critical);
  WM_CHECK_STR_EQ(c->diff[0].base, "");
  WM_CHECK_STR_EQ(c->diff[0].new_value, "Haswell");
  WM_CHECK_STR_EQ(c->diff[1].field, "env.OMP_NUM_THREADS");
  WM_CHECK(!c->diff[1].critical);
  WM_CHECK_STR_EQ(c->diff[1].base, "4");
  WM_CHECK_STR_EQ(c->diff[1].new_value, "");
  WM_CHECK_STR_EQ(c->diff[2].field, "load.avg1");
  WM_CHECK_STR_EQ(c->diff[2].base, "0.10");
  WM_CHECK_STR_EQ(c->diff[2].new_value, "0.20");
  WM_CHECK_INT_EQ(c->overall, WM_VERDICT_INCOMPARABLE);
  wm_compare_destroy(c);
  wm_baseline_destroy(base);
  wm_baseline_destroy(nb);
}

WM_TEST(differing_fingerprint_alone_is_a_critical_pseudo_field) {
  spec_t a = {"cpu@t1", 10, 20, 1e6, 1};
  spec_t b = {"cpu@t1", 10, 20, 1e6, 1};
  pair_run_t r;
  WM_CHECK_OK(make_baseline(&a, 1, "X", &r.base));
  WM_CHECK_OK(make_baseline(&b, 1, "X", &r.new_b));
  memset(r.new_b->env.fingerprint, 'f', 64);
  r.c = NULL;
  WM_CHECK_OK(wm_compare_baselines(r.base, r.new_b, "a", "b", NULL, &r.c));
  WM_CHECK_INT_EQ(r.c->n_diff, 1);
  WM_CHECK_STR_EQ(r.c->diff[0].field, "fingerprint");
  WM_CHECK(r.c->diff[0].critical);
  WM_CHECK_STR_EQ(r.c->diff[0].base, r.base->env.fingerprint);
  WM_CHECK_INT_EQ(r.c->overall, WM_VERDICT_INCOMPARABLE);
  pair_free(&r);
}

WM_TEST(configurations_pair_by_label_in_any_order) {
  spec_t a[] = {{"cpu@t1", 10, 20, 1e6, 1}, {"cpu@t2", 10, 20, 0.6e6, 2}};
  spec_t b[] = {{"cpu@t2", 10, 20, 0.9e6, 3}, {"cpu@t1", 10, 20, 1e6, 4}};
  pair_run_t r;
  WM_CHECK_OK(run_pair(a, 2, b, 2, NULL, &r));
  WM_CHECK_INT_EQ(r.c->n_metrics, 2);
  WM_CHECK_STR_EQ(r.c->metrics[0].name, "cpu@t1 vs cpu@t1: p50");
  WM_CHECK_STR_EQ(r.c->metrics[1].name, "cpu@t2 vs cpu@t2: p50");
  WM_CHECK_STR_EQ(r.c->metrics[1].base_label, "cpu@t2");
  WM_CHECK_STR_EQ(r.c->metrics[1].new_label, "cpu@t2");
  WM_CHECK_STR_EQ(r.c->metrics[1].stat, "p50");
  WM_CHECK_DBL_NEAR(r.c->metrics[1].rel_change, 0.5, 0.04);
  WM_CHECK_INT_EQ(r.c->metrics[1].verdict, WM_VERDICT_REGRESSED);
  WM_CHECK(r.c->metrics[0].verdict == WM_VERDICT_NO_CHANGE ||
           r.c->metrics[0].verdict == WM_VERDICT_WITHIN_NOISE);
  WM_CHECK_INT_EQ(r.c->overall, WM_VERDICT_REGRESSED);
  // The geometric mean of the two p50 ratios.
  double g = sqrt(r.c->metrics[0].ratio * r.c->metrics[1].ratio);
  WM_CHECK_DBL_NEAR(r.c->geomean_ratio, g, 1e-12);
  pair_free(&r);
}

WM_TEST(configurations_pair_by_position_when_labels_differ) {
  spec_t a[] = {{"ref@t1", 10, 20, 10e6, 1}, {"ref@t2", 10, 20, 6e6, 2}};
  spec_t b[] = {{"cpu@t1", 10, 20, 1e6, 3}, {"cpu@t2", 10, 20, 0.6e6, 4}};
  pair_run_t r;
  WM_CHECK_OK(run_pair(a, 2, b, 2, NULL, &r));
  WM_CHECK_INT_EQ(r.c->n_metrics, 2);
  WM_CHECK_STR_EQ(r.c->metrics[0].name, "ref@t1 vs cpu@t1: p50");
  WM_CHECK_STR_EQ(r.c->metrics[1].name, "ref@t2 vs cpu@t2: p50");
  WM_CHECK_INT_EQ(r.c->metrics[0].verdict, WM_VERDICT_IMPROVED);
  WM_CHECK_INT_EQ(r.c->overall, WM_VERDICT_IMPROVED);
  pair_free(&r);
  // Labels that match pair first; the rest pair in order.
  spec_t c[] = {{"cpu@t2", 10, 20, 1e6, 1}, {"ref@t1", 10, 20, 2e6, 2}};
  spec_t d[] = {{"cpu@t1", 10, 20, 1e6, 3}, {"cpu@t2", 10, 20, 1e6, 4}};
  WM_CHECK_OK(run_pair(c, 2, d, 2, NULL, &r));
  WM_CHECK_STR_EQ(r.c->metrics[0].name, "cpu@t2 vs cpu@t2: p50");
  WM_CHECK_STR_EQ(r.c->metrics[1].name, "ref@t1 vs cpu@t1: p50");
  pair_free(&r);
}

WM_TEST(unpaired_configurations_are_insufficient_data) {
  spec_t a[] = {{"cpu@t1", 10, 20, 1e6, 1}, {"cpu@t2", 10, 20, 0.6e6, 2}};
  spec_t b[] = {{"cpu@t1", 10, 20, 1e6, 3}};
  pair_run_t r;
  WM_CHECK_OK(run_pair(a, 2, b, 1, NULL, &r));
  WM_CHECK_INT_EQ(r.c->n_metrics, 2);
  const wm_compare_metric_t *m = find_metric(r.c, "cpu@t2 vs (none): p50");
  WM_CHECK(m != NULL);
  WM_CHECK_INT_EQ(m->verdict, WM_VERDICT_INSUFFICIENT);
  WM_CHECK_INT_EQ(m->n_new, 0);
  WM_CHECK(isfinite(m->base_ns) && isnan(m->new_ns));
  WM_CHECK(r.c->overall != WM_VERDICT_INSUFFICIENT);  // cpu@t1 decides
  pair_free(&r);
}

WM_TEST(p99_needs_662_samples_on_both_sides) {
  spec_t a = {"cpu@t1", 10, 70, 1e6, 1};
  spec_t b = {"cpu@t1", 10, 70, 1.3e6, 2};
  spec_t short_b = {"cpu@t1", 10, 66, 1.3e6, 2};  // 660 samples
  pair_run_t r;
  WM_CHECK_OK(run_pair(&a, 1, &b, 1, NULL, &r));
  WM_CHECK_INT_EQ(r.c->n_metrics, 2);
  const wm_compare_metric_t *m = find_metric(r.c, "cpu@t1 vs cpu@t1: p99");
  WM_CHECK(m != NULL);
  WM_CHECK_STR_EQ(m->stat, "p99");
  WM_CHECK_DBL_NEAR(m->base_ns, r.base->configs[0].latency.p99, 0);
  WM_CHECK_DBL_NEAR(m->new_ns, r.new_b->configs[0].latency.p99, 0);
  WM_CHECK(m->ci_lo <= m->rel_change && m->rel_change <= m->ci_hi);
  WM_CHECK_DBL_NEAR(m->rel_change, 0.3, 0.05);
  // 700 samples hold about 14 of the 1.5x tail: a resample of blocks moves
  // P99 between the tail and the body, so the interval is wide.
  WM_CHECK(m->verdict == WM_VERDICT_REGRESSED ||
           m->verdict == WM_VERDICT_WITHIN_NOISE);
  pair_free(&r);
  WM_CHECK_OK(run_pair(&a, 1, &short_b, 1, NULL, &r));
  WM_CHECK_INT_EQ(r.c->n_metrics, 1);
  WM_CHECK_STR_EQ(r.c->metrics[0].stat, "p50");
  pair_free(&r);
  WM_CHECK_OK(run_pair(&short_b, 1, &a, 1, NULL, &r));
  WM_CHECK_INT_EQ(r.c->n_metrics, 1);
  pair_free(&r);
}

WM_TEST(scaled_samples_give_the_exact_ratio) {
  // New = base x 1.25 sample by sample: both statistics scale exactly.
  spec_t a = {"cpu@t1", 10, 70, 1024, 7};
  pair_run_t r;
  WM_CHECK_OK(make_baseline(&a, 1, "X", &r.base));
  WM_CHECK_OK(make_baseline(&a, 1, "X", &r.new_b));
  wm_bench_config_t *c = &r.new_b->configs[0];
  for (size_t k = 0; k < c->n_blocks; k++) {
    for (size_t i = 0; i < c->blocks[k].n; i++) {
      c->blocks[k].samples[i] *= 1.25;
    }
  }
  WM_CHECK_OK(wm_baseline_finish(r.new_b));
  r.c = NULL;
  WM_CHECK_OK(wm_compare_baselines(r.base, r.new_b, "a", "b", NULL, &r.c));
  WM_CHECK_INT_EQ(r.c->n_metrics, 2);
  WM_CHECK_DBL_NEAR(r.c->metrics[0].ratio, 1.25, 1e-12);
  WM_CHECK_DBL_NEAR(r.c->metrics[1].ratio, 1.25, 1e-12);
  pair_free(&r);
}

WM_TEST(holm_adjusts_across_the_metrics) {
  spec_t a[] = {{"cpu@t1", 10, 70, 1e6, 1}, {"cpu@t2", 6, 120, 0.6e6, 2}};
  spec_t b[] = {{"cpu@t1", 10, 70, 1.02e6, 3}, {"cpu@t2", 6, 120, 0.9e6, 4}};
  pair_run_t r;
  WM_CHECK_OK(run_pair(a, 2, b, 2, NULL, &r));
  WM_CHECK_INT_EQ(r.c->n_metrics, 4);
  double pmin = 1;
  for (size_t i = 0; i < 4; i++) {
    const wm_compare_metric_t *m = &r.c->metrics[i];
    WM_CHECK(m->p_adjusted >= m->p_value);
    WM_CHECK(m->p_adjusted <= 1);
    pmin = m->p_value < pmin ? m->p_value : pmin;
  }
  // The smallest p-value is multiplied by the number of metrics.
  bool found = false;
  for (size_t i = 0; i < 4; i++) {
    const wm_compare_metric_t *m = &r.c->metrics[i];
    if (m->p_value == pmin) {
      WM_CHECK_DBL_NEAR(m->p_adjusted, fmin(1.0, 4 * pmin), 1e-15);
      found = true;
    }
  }
  WM_CHECK(found);
  pair_free(&r);
}

WM_TEST(same_seed_gives_the_same_interval) {
  spec_t a = {"cpu@t1", 10, 70, 1e6, 1};
  spec_t b = {"cpu@t1", 10, 70, 1.1e6, 2};
  wm_compare_options_t o = {
      .noise = 0.05, .alpha = 0.05, .resamples = 1000, .seed = 42};
  pair_run_t r1, r2;
  WM_CHECK_OK(run_pair(&a, 1, &b, 1, &o, &r1));
  WM_CHECK_OK(run_pair(&a, 1, &b, 1, &o, &r2));
  for (size_t i = 0; i < r1.c->n_metrics; i++) {
    WM_CHECK_DBL_NEAR(r1.c->metrics[i].ci_lo, r2.c->metrics[i].ci_lo, 0);
    WM_CHECK_DBL_NEAR(r1.c->metrics[i].ci_hi, r2.c->metrics[i].ci_hi, 0);
  }
  WM_CHECK_INT_EQ(r1.c->opts.resamples, 1000);
  WM_CHECK_INT_EQ(r1.c->opts.seed, 42);
  pair_free(&r1);
  pair_free(&r2);
}

WM_TEST(noise_threshold_turns_a_small_change_into_within_noise) {
  spec_t a = {"cpu@t1", 10, 50, 1e6, 1};
  spec_t b = {"cpu@t1", 10, 50, 1.08e6, 2};
  wm_compare_options_t o = {
      .noise = 0.05, .alpha = 0.05, .resamples = 10000, .seed = 1};
  pair_run_t r;
  WM_CHECK_OK(run_pair(&a, 1, &b, 1, &o, &r));
  WM_CHECK_INT_EQ(r.c->metrics[0].verdict, WM_VERDICT_REGRESSED);
  pair_free(&r);
  o.noise = 0.20;
  WM_CHECK_OK(run_pair(&a, 1, &b, 1, &o, &r));
  WM_CHECK_INT_EQ(r.c->metrics[0].verdict, WM_VERDICT_WITHIN_NOISE);
  WM_CHECK_INT_EQ(r.c->overall, WM_VERDICT_WITHIN_NOISE);
  pair_free(&r);
}

WM_TEST(bad_options_and_data_are_rejected_with_names) {
  spec_t a = {"cpu@t1", 10, 20, 1e6, 1};
  wm_baseline_t *base = NULL;
  WM_CHECK_OK(make_baseline(&a, 1, "X", &base));
  wm_compare_t *c = NULL;
  wm_compare_options_t o = {.noise = 0.05, .alpha = 0, .resamples = 1000};
  WM_CHECK_ERR(wm_compare_baselines(base, base, "a", "b", &o, &c),
               INVALID_ARGUMENT, "alpha 0 is outside (0, 1)");
  o.alpha = 0.05;
  o.noise = -0.1;
  WM_CHECK_ERR(wm_compare_baselines(base, base, "a", "b", &o, &c),
               INVALID_ARGUMENT, "noise threshold -0.1");
  o.noise = 0.05;
  o.resamples = 10;
  WM_CHECK_ERR(wm_compare_baselines(base, base, "a", "b", &o, &c),
               INVALID_ARGUMENT, "10 bootstrap resamples");
  WM_CHECK(c == NULL);
  base->configs[0].blocks[3].median_ns = NAN;
  WM_CHECK_ERR(wm_compare_baselines(base, base, "a.json", "b.json", NULL, &c),
               INVALID_ARGUMENT,
               "base \"a.json\": configuration \"cpu@t1\" block 3: median nan");
  base->configs[0].blocks[3].median_ns = 1e6;
  base->configs[0].blocks[2].samples[5] = -1;
  WM_CHECK_ERR(wm_compare_baselines(base, base, "a.json", "b.json", NULL, &c),
               INVALID_ARGUMENT, "block 2 sample 5: -1 ns");
  base->n_configs = 0;
  WM_CHECK_ERR(wm_compare_baselines(base, base, "a.json", "b.json", NULL, &c),
               INVALID_ARGUMENT, "base \"a.json\" has no configurations");
  wm_baseline_destroy(base);
}

WM_TEST(out_of_memory_at_any_allocation_is_a_status) {
  spec_t a = {"cpu@t1", 6, 120, 1e6, 1};  // 720 samples: p99 as well
  spec_t b = {"cpu@t1", 6, 120, 1.3e6, 2};
  wm_compare_options_t o = {
      .noise = 0.05, .alpha = 0.05, .resamples = 200, .seed = 1};
  pair_run_t r;
  WM_CHECK_OK(run_pair(&a, 1, &b, 1, &o, &r));
  WM_CHECK_INT_EQ(r.c->n_metrics, 2);
  int failures = 0;
  bool done = false;
  for (int64_t n = 1; n < 1000 && !done; n++) {
    wm_compare_t *c = NULL;
    wm_alloc_fail_after(n);
    wm_status_t s =
        wm_compare_baselines(r.base, r.new_b, "a.json", "b.json", &o, &c);
    wm_alloc_fail_after(0);
    if (s) {
      bool oom = wm_status_code(s) == WM_STATUS_RESOURCE_EXHAUSTED;
      wm_status_free(s);
      WM_CHECK(oom);
      WM_CHECK(c == NULL);
      failures++;
    } else {
      WM_CHECK_INT_EQ(c->n_metrics, 2);
      wm_compare_destroy(c);
      done = true;
    }
  }
  WM_CHECK(done);
  WM_CHECK(failures >= 10);
  pair_free(&r);
}

// True when no line of |s| is wider than |cols| code points.
static bool fits(const char *s, size_t cols) {
  size_t w = 0;
  for (; *s; s++) {
    if (((unsigned char)*s & 0xC0) == 0x80) {
      continue;  // a UTF-8 continuation byte
    }
    w = *s == '\n' ? 0 : w + 1;
    if (w > cols) {
      return false;
    }
  }
  return true;
}

WM_TEST(text_report_fits_and_colours_only_on_request) {
  spec_t a[] = {{"cpu,ref@t1", 10, 70, 1e6, 1},
                {"cpu,ref@t2", 3, 20, 0.6e6, 2}};
  spec_t b[] = {{"cpu,ref@t1", 10, 70, 1.3e6, 3},
                {"cpu,ref@t2", 3, 20, 0.6e6, 4}};
  pair_run_t r;
  WM_CHECK_OK(run_pair(a, 2, b, 2, NULL, &r));
  wm_strbuf_t t;
  wm_strbuf_init(&t);
  wm_compare_to_text(r.c, false, &t);
  const char *s = wm_strbuf_str(&t);
  WM_CHECK(fits(s, 100));
  WM_CHECK(strchr(s, '\x1b') == NULL);
  WM_CHECK(strstr(s, "base.json") != NULL);
  WM_CHECK(strstr(s, "Mann-Whitney U") != NULL);
  WM_CHECK(strstr(s, "change [95% CI]") != NULL);
  WM_CHECK(strstr(s, "cpu,ref@t1 p99") != NULL);
  WM_CHECK(strstr(s, "regressed") != NULL);
  WM_CHECK(strstr(s, "insufficient_data") != NULL);
  WM_CHECK(strstr(s, "\noverall: regressed (geomean") != NULL);
  WM_CHECK(strstr(s, " ms ") != NULL || strstr(s, " ms\n") != NULL);
  wm_strbuf_deinit(&t);
  wm_strbuf_init(&t);
  wm_compare_to_text(r.c, true, &t);
  WM_CHECK(strstr(wm_strbuf_str(&t), "\x1b[31mregressed") != NULL);
  wm_strbuf_deinit(&t);
  pair_free(&r);
}

WM_TEST(text_report_cuts_long_and_wide_labels_within_100_columns) {
  char longl[160];
  memset(longl, 'x', sizeof(longl) - 1);
  longl[sizeof(longl) - 1] = '\0';
  spec_t a[] = {{longl, 10, 20, 1e6, 1},
                {"\xc3\xa9t\xc3\xa9@t1", 10, 20, 1e6, 2}};
  spec_t b[] = {{"cpu@t1", 10, 20, 1e6, 3},
                {"\xc3\xa9t\xc3\xa9@t2", 10, 20, 1e6, 4}};
  pair_run_t r;
  WM_CHECK_OK(run_pair(a, 2, b, 2, NULL, &r));
  wm_strbuf_t t;
  wm_strbuf_init(&t);
  wm_compare_to_text(r.c, false, &t);
  const char *s = wm_strbuf_str(&t);
  WM_CHECK(fits(s, 100));
  WM_CHECK(strstr(s, ".. p50") != NULL);  // the statistic survives the cut
  WM_CHECK(strstr(s, "\xc3\xa9t\xc3\xa9@t1 -> \xc3\xa9t\xc3\xa9@t2 p50") !=
           NULL);
  wm_strbuf_deinit(&t);
  pair_free(&r);
}

WM_TEST(text_report_names_critical_differences) {
  spec_t a = {"cpu@t1", 10, 20, 1e6, 1};
  wm_baseline_t *base = NULL, *nb = NULL;
  WM_CHECK_OK(make_baseline(&a, 1, "Intel Xeon", &base));
  WM_CHECK_OK(make_baseline(&a, 1, "AMD EPYC", &nb));
  wm_env_set(&nb->env, "load.avg1", false, "\x1b[2Jjunk");
  wm_compare_t *c = NULL;
  WM_CHECK_OK(wm_compare_baselines(base, nb, "a.json", "b.json", NULL, &c));
  wm_strbuf_t t;
  wm_strbuf_init(&t);
  wm_compare_to_text(c, false, &t);
  const char *s = wm_strbuf_str(&t);
  WM_CHECK(strstr(s, "! cpu.model") != NULL);
  WM_CHECK(strstr(s, "Intel Xeon") != NULL && strstr(s, "AMD EPYC") != NULL);
  WM_CHECK(strstr(s,
                  "overall: incomparable: critical fields differ: "
                  "cpu.model (use --force)") != NULL);
  WM_CHECK(strchr(s, '\x1b') == NULL);  // data cannot emit escape codes
  WM_CHECK(fits(s, 100));
  wm_strbuf_deinit(&t);
  wm_compare_destroy(c);
  wm_baseline_destroy(base);
  wm_baseline_destroy(nb);
}

WM_TEST(json_report_has_the_documented_layout) {
  spec_t a[] = {{"cpu@t1", 10, 70, 1e6, 1}, {"cpu@t2", 3, 20, 1e6, 2}};
  spec_t b[] = {{"cpu@t1", 10, 70, 1.3e6, 3}, {"cpu@t2", 3, 20, 1e6, 4}};
  pair_run_t r;
  WM_CHECK_OK(run_pair(a, 2, b, 2, NULL, &r));
  wm_strbuf_t t;
  wm_strbuf_init(&t);
  wm_compare_to_json(r.c, &t);
  cJSON *j = cJSON_Parse(wm_strbuf_str(&t));
  wm_strbuf_deinit(&t);
  WM_CHECK(j != NULL);
  WM_CHECK_STR_EQ(cJSON_GetObjectItem(j, "format")->valuestring,
                  "wmap.compare/1");
  WM_CHECK_STR_EQ(cJSON_GetObjectItem(j, "base")->valuestring, "base.json");
  WM_CHECK_STR_EQ(cJSON_GetObjectItem(j, "new")->valuestring, "new.json");
  WM_CHECK(cJSON_IsArray(cJSON_GetObjectItem(j, "env_diff")));
  const cJSON *meth = cJSON_GetObjectItem(j, "method");
  WM_CHECK_STR_EQ(cJSON_GetObjectItem(meth, "test")->valuestring,
                  "mann_whitney_u");
  WM_CHECK_STR_EQ(cJSON_GetObjectItem(meth, "unit")->valuestring,
                  "block_median");
  WM_CHECK_STR_EQ(cJSON_GetObjectItem(meth, "correction")->valuestring, "holm");
  WM_CHECK_STR_EQ(cJSON_GetObjectItem(meth, "ci")->valuestring,
                  "bootstrap_percentile");
  WM_CHECK_DBL_NEAR(cJSON_GetObjectItem(meth, "ci_level")->valuedouble, 0.95,
                    0);
  WM_CHECK_DBL_NEAR(cJSON_GetObjectItem(meth, "alpha")->valuedouble, 0.05, 0);
  WM_CHECK_DBL_NEAR(cJSON_GetObjectItem(meth, "resamples")->valuedouble, 10000,
                    0);
  WM_CHECK_DBL_NEAR(cJSON_GetObjectItem(meth, "seed")->valuedouble, 1, 0);
  WM_CHECK_DBL_NEAR(cJSON_GetObjectItem(meth, "noise_threshold")->valuedouble,
                    0.05, 0);
  const cJSON *ms = cJSON_GetObjectItem(j, "metrics");
  WM_CHECK_INT_EQ(cJSON_GetArraySize(ms), 3);
  static const char *const keys[] = {
      "name",  "base_ns", "new_ns",  "ratio",      "rel_change",
      "ci_lo", "ci_hi",   "p_value", "p_adjusted", "u",
      "exact", "n_base",  "n_new",   "verdict"};
  for (int i = 0; i < 3; i++) {
    const cJSON *m = cJSON_GetArrayItem(ms, i);
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
      if (!cJSON_GetObjectItem(m, keys[k])) {
        wm_test_fail(__FILE__, __LINE__, "metric %d lacks \"%s\"", i, keys[k]);
      }
    }
  }
  const cJSON *m0 = cJSON_GetArrayItem(ms, 0);
  WM_CHECK_STR_EQ(cJSON_GetObjectItem(m0, "name")->valuestring,
                  "cpu@t1 vs cpu@t1: p50");
  WM_CHECK_STR_EQ(cJSON_GetObjectItem(m0, "verdict")->valuestring, "regressed");
  WM_CHECK_DBL_NEAR(cJSON_GetObjectItem(m0, "base_ns")->valuedouble,
                    r.c->metrics[0].base_ns, 0.5);
  WM_CHECK_INT_EQ(cJSON_GetObjectItem(m0, "n_base")->valuedouble, 10);
  WM_CHECK(cJSON_IsTrue(cJSON_GetObjectItem(m0, "exact")));
  const cJSON *m2 = cJSON_GetArrayItem(ms, 2);
  WM_CHECK_STR_EQ(cJSON_GetObjectItem(m2, "verdict")->valuestring,
                  "insufficient_data");
  WM_CHECK(cJSON_IsNull(cJSON_GetObjectItem(m2, "p_adjusted")));
  const cJSON *ov = cJSON_GetObjectItem(j, "overall");
  WM_CHECK_STR_EQ(cJSON_GetObjectItem(ov, "verdict")->valuestring, "regressed");
  WM_CHECK_DBL_NEAR(cJSON_GetObjectItem(ov, "geomean_ratio")->valuedouble,
                    r.c->geomean_ratio, 1e-5);  // 6 digits
  cJSON_Delete(j);
  pair_free(&r);
}

// Occurrences of |needle| in |s|.
static size_t count_of(const char *s, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) {
    n++;
  }
  return n;
}

WM_TEST(html_report_has_a_forest_plot_and_escapes_labels) {
  spec_t a[] = {{"cpu@t1", 10, 20, 1e6, 1}, {"<b>&x", 10, 20, 1e6, 2}};
  spec_t b[] = {{"cpu@t1", 10, 20, 1.3e6, 3}, {"<b>&x", 10, 20, 1e6, 4}};
  pair_run_t r;
  WM_CHECK_OK(run_pair(a, 2, b, 2, NULL, &r));
  wm_strbuf_t t;
  wm_strbuf_init(&t);
  wm_compare_to_html(r.c, &t);
  const char *s = wm_strbuf_str(&t);
  WM_CHECK(strncmp(s, "<!DOCTYPE html>", 15) == 0);
  WM_CHECK(strstr(s, "<svg class=\"forest\"") != NULL);
  WM_CHECK_INT_EQ(count_of(s, "<circle class=\"pt\""), 2);  // a point a row
  WM_CHECK_INT_EQ(count_of(s, "<line class=\"ci\""), 2);    // an interval
  WM_CHECK_INT_EQ(count_of(s, "<rect class=\"band\""), 1);  // +-tau
  WM_CHECK(strstr(s, "<line class=\"zero\"") != NULL);
  WM_CHECK(strstr(s, ">+50%<") != NULL || strstr(s, ">+20%<") != NULL ||
           strstr(s, ">+10%<") != NULL);  // axis in percent
  WM_CHECK(strstr(s, "&lt;b&gt;&amp;x p50") != NULL);
  WM_CHECK(strstr(s, "<b>&x") == NULL);
  WM_CHECK(strstr(s, "regressed") != NULL);
  WM_CHECK(strstr(s, "</html>") != NULL);
  wm_strbuf_deinit(&t);
  pair_free(&r);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(verdict_names_are_the_documented_ones),
      WM_CASE(a_wide_interval_is_inconclusive_never_no_change),
      WM_CASE(same_distribution_is_no_change_or_within_noise),
      WM_CASE(thirty_percent_slower_is_regressed),
      WM_CASE(thirty_percent_faster_is_improved),
      WM_CASE(five_blocks_a_side_is_enough_and_exact),
      WM_CASE(three_blocks_is_insufficient_data),
      WM_CASE(critical_difference_is_incomparable_unless_forced),
      WM_CASE(env_diff_lists_volatile_and_absent_fields_critical_first),
      WM_CASE(differing_fingerprint_alone_is_a_critical_pseudo_field),
      WM_CASE(configurations_pair_by_label_in_any_order),
      WM_CASE(configurations_pair_by_position_when_labels_differ),
      WM_CASE(unpaired_configurations_are_insufficient_data),
      WM_CASE(p99_needs_662_samples_on_both_sides),
      WM_CASE(scaled_samples_give_the_exact_ratio),
      WM_CASE(holm_adjusts_across_the_metrics),
      WM_CASE(same_seed_gives_the_same_interval),
      WM_CASE(noise_threshold_turns_a_small_change_into_within_noise),
      WM_CASE(bad_options_and_data_are_rejected_with_names),
      WM_CASE(out_of_memory_at_any_allocation_is_a_status),
      WM_CASE(text_report_fits_and_colours_only_on_request),
      WM_CASE(text_report_cuts_long_and_wide_labels_within_100_columns),
      WM_CASE(text_report_names_critical_differences),
      WM_CASE(json_report_has_the_documented_layout),
      WM_CASE(html_report_has_a_forest_plot_and_escapes_labels),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
