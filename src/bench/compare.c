// wmap compare: two baselines side by side (docs/baseline-format.md,
// "wmap.compare/1"). Configurations are paired; each pair gets a p50 metric
// on block medians (and a p99 one when both sides hold enough samples), a
// Mann-Whitney U test with Holm's correction across the metrics, a
// bootstrap interval of the change from resampled blocks and a verdict
// against the noise threshold tau.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wmap/bench.h"
#include "wmap/report.h"

// A side with fewer blocks than this gets insufficient_data.
#define MIN_BLOCKS 5
// Level of the bootstrap interval.
#define CI_LEVEL 0.95
// The most bootstrap resamples an option may ask for.
#define MAX_RESAMPLES 10000000
// Text reports fit this many columns.
#define TEXT_COLS 100

// ----------------------------------------------------------- verdicts

const char *wm_verdict_name(wm_verdict_t v) {
  switch (v) {
    case WM_VERDICT_NO_CHANGE:
      return "no_change";
    case WM_VERDICT_WITHIN_NOISE:
      return "within_noise";
    case WM_VERDICT_IMPROVED:
      return "improved";
    case WM_VERDICT_REGRESSED:
      return "regressed";
    case WM_VERDICT_INSUFFICIENT:
      return "insufficient_data";
    case WM_VERDICT_INCOMPARABLE:
      return "incomparable";
    case WM_VERDICT_INCONCLUSIVE:
      return "inconclusive";
  }
  return "unknown";
}

// Rank of a metric verdict in the overall verdict: the highest wins.
static int verdict_rank(wm_verdict_t v) {
  switch (v) {
    case WM_VERDICT_REGRESSED:
      return 5;
    case WM_VERDICT_IMPROVED:
      return 4;
    case WM_VERDICT_INCONCLUSIVE:
      return 3;
    case WM_VERDICT_WITHIN_NOISE:
      return 2;
    case WM_VERDICT_NO_CHANGE:
      return 1;
    default:
      return 0;
  }
}

// ------------------------------------------------------------ helpers

static int cmp_double(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a > b) - (a < b);
}

// Nearest-rank percentile of |n| >= 1 values (copied and sorted in |tmp|).
static double percentile_of(const double *x, size_t n, double q, double *tmp) {
  memcpy(tmp, x, n * sizeof(*x));
  qsort(tmp, n, sizeof(*tmp), cmp_double);
  return wm_stats_percentile(tmp, n, q);
}

// A splitmix64 stream for the block bootstrap of P99.
static uint64_t rng_next(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

// A uniform index below |n| (> 0).
static size_t rng_index(uint64_t *state, size_t n) {
  double u = (double)(rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
  size_t i = (size_t)(u * (double)n);
  return i < n ? i : n - 1;
}

static void *arena_array(wm_arena_t *a, size_t n, size_t elem) {
  size_t bytes;
  if (!wm_checked_mul(n ? n : 1, elem, &bytes)) {
    return NULL;
  }
  return wm_arena_alloc(a, bytes);
}

static wm_status_t oom(const char *what) {
  return WM_ERROR(RESOURCE_EXHAUSTED, "comparing baselines: out of memory (%s)",
                  what);
}

// ---------------------------------------------------- one side's data

// What one side of a pair offers: its block medians and, when every block
// holds samples, the samples per block sorted, all samples sorted and the
// per-block P99s.
typedef struct side {
  const wm_bench_config_t *cfg;  // NULL: nothing paired on this side
  size_t n_blocks;               // blocks
  double *medians;               // per block
  double median;                 // nearest-rank median of |medians|
  bool has_samples;              // every block holds samples
  size_t total;                  // samples over all blocks
  size_t *n;                     // samples per block
  double **sorted;               // per block, ascending (into |buf|)
  double *buf;                   // |total| values
  double *all;                   // every sample, ascending
  double *block_p99;             // per block
  double p99;                    // of the pooled samples
} side_t;

static void side_deinit(side_t *s) {
  free(s->medians);
  free(s->n);
  free(s->sorted);
  free(s->buf);
  free(s->all);
  free(s->block_p99);
  memset(s, 0, sizeof(*s));
}

// Samples in the pooled multiset (block j taken count[j] times, or once
// each when |count| is NULL) that are <= v.
static size_t pooled_count_le(const side_t *s, const size_t *count, double v) {
  size_t total = 0;
  for (size_t j = 0; j < s->n_blocks; j++) {
    size_t c = count ? count[j] : 1;
    if (c == 0) {
      continue;
    }
    const double *x = s->sorted[j];
    size_t lo = 0, hi = s->n[j];  // first index with x > v
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (x[mid] <= v) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    total += c * lo;
  }
  return total;
}

// Nearest-rank percentile |q| of the pooled multiset (see pooled_count_le):
// the smallest sample v with at least ceil(q * n) samples <= v.
static double pooled_percentile(const side_t *s, const size_t *count,
                                double q) {
  size_t n = 0;
  for (size_t j = 0; j < s->n_blocks; j++) {
    n += (count ? count[j] : 1) * s->n[j];
  }
  size_t r = wm_stats_rank(n, q);
  size_t lo = 0, hi = s->total - 1;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (pooled_count_le(s, count, s->all[mid]) >= r) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return s->all[lo];
}

// Loads one side: |who| names it in messages ("base \"a.json\"").
static wm_status_t side_init(const wm_bench_config_t *cfg, const char *who,
                             side_t *s) {
  memset(s, 0, sizeof(*s));
  s->cfg = cfg;
  s->median = NAN;
  s->p99 = NAN;
  if (!cfg || cfg->n_blocks == 0) {
    return NULL;
  }
  const char *label = cfg->label ? cfg->label : "";
  if (!cfg->blocks) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "%s: configuration \"%s\" has %zu blocks but no block data",
                    who, label, cfg->n_blocks);
  }
  size_t nb = cfg->n_blocks;
  s->n_blocks = nb;
  s->medians = wm_calloc(nb, sizeof(double));
  double *tmp = wm_calloc(nb, sizeof(double));
  if (!s->medians || !tmp) {
    free(tmp);
    return oom("block medians");
  }
  bool samples = true;
  size_t total = 0;
  for (size_t j = 0; j < nb; j++) {
    const wm_bench_block_t *b = &cfg->blocks[j];
    if (!(isfinite(b->median_ns) && b->median_ns > 0.0)) {
      free(tmp);
      return WM_ERROR(INVALID_ARGUMENT,
                      "%s: configuration \"%s\" block %zu: median %g ns, want "
                      "a finite time > 0",
                      who, label, j, b->median_ns);
    }
    s->medians[j] = b->median_ns;
    if (b->n == 0 || !b->samples || !wm_checked_add(total, b->n, &total)) {
      samples = false;
    }
  }
  s->median = percentile_of(s->medians, nb, 0.5, tmp);
  free(tmp);
  if (!samples) {
    return NULL;
  }
  s->total = total;
  s->n = wm_calloc(nb, sizeof(size_t));
  s->sorted = wm_calloc(nb, sizeof(double *));
  s->buf = wm_calloc(total, sizeof(double));
  s->all = wm_calloc(total, sizeof(double));
  s->block_p99 = wm_calloc(nb, sizeof(double));
  if (!s->n || !s->sorted || !s->buf || !s->all || !s->block_p99) {
    return oom("samples");
  }
  size_t at = 0;
  for (size_t j = 0; j < nb; j++) {
    const wm_bench_block_t *b = &cfg->blocks[j];
    for (size_t i = 0; i < b->n; i++) {
      if (!(isfinite(b->samples[i]) && b->samples[i] > 0.0)) {
        return WM_ERROR(INVALID_ARGUMENT,
                        "%s: configuration \"%s\" block %zu sample %zu: %g ns, "
                        "want a finite time > 0",
                        who, label, j, i, b->samples[i]);
      }
    }
    s->n[j] = b->n;
    s->sorted[j] = s->buf + at;
    memcpy(s->sorted[j], b->samples, b->n * sizeof(double));
    qsort(s->sorted[j], b->n, sizeof(double), cmp_double);
    s->block_p99[j] = wm_stats_percentile(s->sorted[j], b->n, 0.99);
    at += b->n;
  }
  memcpy(s->all, s->buf, total * sizeof(double));
  qsort(s->all, total, sizeof(double), cmp_double);
  s->has_samples = true;
  s->p99 = pooled_percentile(s, NULL, 0.99);
  return NULL;
}

// Percentile bootstrap interval of P99(new) / P99(base) of the pooled
// samples, resampling whole blocks of each side with replacement.
static wm_status_t p99_bootstrap(const side_t *a, const side_t *b,
                                 size_t resamples, uint64_t seed,
                                 double *out_lo, double *out_hi) {
  size_t *ca = wm_calloc(a->n_blocks, sizeof(size_t));
  size_t *cb = wm_calloc(b->n_blocks, sizeof(size_t));
  double *ratios = wm_calloc(resamples, sizeof(double));
  if (!ca || !cb || !ratios) {
    free(ca);
    free(cb);
    free(ratios);
    return oom("bootstrap");
  }
  uint64_t state = seed;
  for (size_t r = 0; r < resamples; r++) {
    memset(ca, 0, a->n_blocks * sizeof(size_t));
    memset(cb, 0, b->n_blocks * sizeof(size_t));
    for (size_t j = 0; j < a->n_blocks; j++) {
      ca[rng_index(&state, a->n_blocks)]++;
    }
    for (size_t j = 0; j < b->n_blocks; j++) {
      cb[rng_index(&state, b->n_blocks)]++;
    }
    ratios[r] = pooled_percentile(b, cb, 0.99) / pooled_percentile(a, ca, 0.99);
  }
  qsort(ratios, resamples, sizeof(double), cmp_double);
  *out_lo = wm_stats_percentile(ratios, resamples, (1.0 - CI_LEVEL) / 2.0);
  *out_hi = wm_stats_percentile(ratios, resamples, (1.0 + CI_LEVEL) / 2.0);
  free(ca);
  free(cb);
  free(ratios);
  return NULL;
}

// ------------------------------------------------------------ metrics

// Fills the statistics of |m| from its two sides; p50 on block medians,
// p99 on pooled samples and per-block P99s.
static wm_status_t metric_compute(wm_compare_metric_t *m, const side_t *a,
                                  const side_t *b, bool p99,
                                  const wm_compare_options_t *o) {
  m->n_base = a->n_blocks;
  m->n_new = b->n_blocks;
  m->base_ns = p99 ? a->p99 : a->median;
  m->new_ns = p99 ? b->p99 : b->median;
  m->ratio = m->new_ns / m->base_ns;
  m->rel_change = m->ratio - 1.0;
  m->ci_lo = m->ci_hi = NAN;
  m->p_value = m->p_adjusted = m->u = NAN;
  if (a->n_blocks == 0 || b->n_blocks == 0) {
    return NULL;
  }
  const double *xa = p99 ? a->block_p99 : a->medians;
  const double *xb = p99 ? b->block_p99 : b->medians;
  wm_mwu_t t;
  WM_RETURN_IF_ERROR(
      wm_stats_mann_whitney(xa, a->n_blocks, xb, b->n_blocks, &t));
  m->u = t.u;
  m->p_value = t.p;
  m->exact = t.exact;
  double lo, hi;
  if (p99) {
    WM_RETURN_IF_ERROR(p99_bootstrap(a, b, o->resamples, o->seed, &lo, &hi));
  } else {
    WM_RETURN_IF_ERROR(wm_stats_bootstrap_ratio(xa, a->n_blocks, xb,
                                                b->n_blocks, o->resamples,
                                                CI_LEVEL, o->seed, &lo, &hi));
  }
  m->ci_lo = lo - 1.0;
  m->ci_hi = hi - 1.0;
  return NULL;
}

// A metric's verdict once p_adjusted is known.
static wm_verdict_t metric_verdict(const wm_compare_metric_t *m,
                                   const wm_compare_options_t *o) {
  if (m->n_base < MIN_BLOCKS || m->n_new < MIN_BLOCKS ||
      !isfinite(m->p_adjusted)) {
    return WM_VERDICT_INSUFFICIENT;
  }
  if (m->p_adjusted >= o->alpha) {
    // No change only where the interval rules out one beyond the
    // threshold.
    bool inside = isfinite(m->ci_lo) && isfinite(m->ci_hi) &&
                  m->ci_lo >= -o->noise && m->ci_hi <= o->noise;
    return inside ? WM_VERDICT_NO_CHANGE : WM_VERDICT_INCONCLUSIVE;
  }
  if (m->ci_lo > o->noise) {
    return WM_VERDICT_REGRESSED;
  }
  if (m->ci_hi < -o->noise) {
    return WM_VERDICT_IMPROVED;
  }
  return WM_VERDICT_WITHIN_NOISE;
}

// One pair of configurations (either side may be missing).
typedef struct pair {
  const wm_bench_config_t *base;
  const wm_bench_config_t *new_c;
} pair_t;

// Pairs by label first; the configurations left then pair in order when
// both sides have as many left, else stay unpaired. Writes at most
// nb + nn pairs into |pairs|.
static size_t pair_configs(const wm_baseline_t *base, const wm_baseline_t *nw,
                           pair_t *pairs, size_t *slot, bool *used) {
  size_t nb = base->n_configs, nn = nw->n_configs, count = 0;
  for (size_t i = 0; i < nb; i++) {
    slot[i] = SIZE_MAX;
    const char *li = base->configs[i].label;
    for (size_t j = 0; li && j < nn; j++) {
      const char *lj = nw->configs[j].label;
      if (!used[j] && lj && strcmp(li, lj) == 0) {
        used[j] = true;
        slot[i] = j;
        break;
      }
    }
  }
  size_t left_b = 0, left_n = 0;
  for (size_t i = 0; i < nb; i++) {
    left_b += slot[i] == SIZE_MAX;
  }
  for (size_t j = 0; j < nn; j++) {
    left_n += !used[j];
  }
  if (left_b == left_n) {
    size_t j = 0;
    for (size_t i = 0; i < nb; i++) {
      if (slot[i] != SIZE_MAX) {
        continue;
      }
      while (used[j]) {
        j++;
      }
      used[j] = true;
      slot[i] = j;
    }
  }
  for (size_t i = 0; i < nb; i++) {
    pairs[count].base = &base->configs[i];
    pairs[count++].new_c = slot[i] == SIZE_MAX ? NULL : &nw->configs[slot[i]];
  }
  for (size_t j = 0; j < nn; j++) {
    if (!used[j]) {
      pairs[count].base = NULL;
      pairs[count++].new_c = &nw->configs[j];
    }
  }
  return count;
}

// ------------------------------------------------------- environment

// A bounded copy of a fixed-size field (a loaded file may fill it fully).
static char *field_dup(wm_arena_t *a, const char *s, size_t cap) {
  return wm_arena_strndup(a, s, strnlen(s, cap));
}

static const wm_env_field_t *env_find(const wm_env_t *env, const char *key,
                                      size_t cap) {
  size_t n = env->n < WM_ENV_MAX_FIELDS ? env->n : WM_ENV_MAX_FIELDS;
  for (size_t i = 0; i < n; i++) {
    if (strncmp(env->fields[i].key, key, cap) == 0) {
      return &env->fields[i];
    }
  }
  return NULL;
}

static int cmp_diff(const void *pa, const void *pb) {
  const wm_env_diff_t *a = pa, *b = pb;
  if (a->critical != b->critical) {
    return a->critical ? -1 : 1;
  }
  return strcmp(a->field, b->field);
}

// Every key present in either environment whose values differ, critical
// ones first, then by key.
static wm_status_t env_diff(wm_compare_t *c, const wm_env_t *eb,
                            const wm_env_t *en) {
  const size_t kcap = sizeof(eb->fields[0].key);
  const size_t vcap = sizeof(eb->fields[0].value);
  size_t nb = eb->n < WM_ENV_MAX_FIELDS ? eb->n : WM_ENV_MAX_FIELDS;
  size_t nn = en->n < WM_ENV_MAX_FIELDS ? en->n : WM_ENV_MAX_FIELDS;
  // + 1 for the fingerprint pseudo-field.
  c->diff = arena_array(&c->arena, nb + nn + 1, sizeof(wm_env_diff_t));
  if (!c->diff) {
    return oom("environment diff");
  }
  for (int pass = 0; pass < 2; pass++) {
    const wm_env_t *from = pass == 0 ? eb : en;
    const wm_env_t *other = pass == 0 ? en : eb;
    size_t n = pass == 0 ? nb : nn;
    for (size_t i = 0; i < n; i++) {
      const wm_env_field_t *f = &from->fields[i];
      const wm_env_field_t *g = env_find(other, f->key, kcap);
      if (pass == 1 && g) {
        continue;  // listed in the first pass
      }
      if (g && strncmp(f->value, g->value, vcap) == 0) {
        continue;
      }
      const wm_env_field_t *fb = pass == 0 ? f : g;
      const wm_env_field_t *fn = pass == 0 ? g : f;
      wm_env_diff_t *d = &c->diff[c->n_diff++];
      d->field = field_dup(&c->arena, f->key, kcap);
      d->base = fb ? field_dup(&c->arena, fb->value, vcap) : "";
      d->new_value = fn ? field_dup(&c->arena, fn->value, vcap) : "";
      d->critical = f->critical || (g && g->critical);
      if (!d->field || !d->base || !d->new_value) {
        return oom("environment diff");
      }
    }
  }
  bool critical = false;
  for (size_t i = 0; i < c->n_diff; i++) {
    critical |= c->diff[i].critical;
  }
  const size_t fcap = sizeof(eb->fingerprint);
  if (!critical && eb->fingerprint[0] && en->fingerprint[0] &&
      strncmp(eb->fingerprint, en->fingerprint, fcap) != 0) {
    wm_env_diff_t *d = &c->diff[c->n_diff++];
    d->field = "fingerprint";
    d->base = field_dup(&c->arena, eb->fingerprint, fcap);
    d->new_value = field_dup(&c->arena, en->fingerprint, fcap);
    d->critical = true;
    if (!d->base || !d->new_value) {
      return oom("environment diff");
    }
  }
  qsort(c->diff, c->n_diff, sizeof(*c->diff), cmp_diff);
  return NULL;
}

// ---------------------------------------------------------- compare

static wm_status_t check_options(const wm_compare_options_t *in,
                                 wm_compare_options_t *out) {
  wm_compare_options_t o = {
      .noise = 0.05, .alpha = 0.05, .resamples = 10000, .seed = 1};
  if (in) {
    o = *in;
  }
  if (!(o.noise >= 0.0 && o.noise < 10.0)) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "noise threshold %g is outside [0, 10) (a fraction: 0.05 "
                    "is 5%%)",
                    o.noise);
  }
  if (!(o.alpha > 0.0 && o.alpha < 1.0)) {
    return WM_ERROR(INVALID_ARGUMENT, "alpha %g is outside (0, 1)", o.alpha);
  }
  if (o.resamples < 100 || o.resamples > MAX_RESAMPLES) {
    return WM_ERROR(INVALID_ARGUMENT, "%zu bootstrap resamples, want 100 to %d",
                    o.resamples, MAX_RESAMPLES);
  }
  *out = o;
  return NULL;
}

// Computes the metrics of one pair into c->metrics.
static wm_status_t compare_pair(wm_compare_t *c, const pair_t *p,
                                const char *base_who, const char *new_who) {
  side_t a, b;
  wm_status_t s = side_init(p->base, base_who, &a);
  if (!s) {
    s = side_init(p->new_c, new_who, &b);
  } else {
    memset(&b, 0, sizeof(b));
  }
  const char *lb = p->base && p->base->label ? p->base->label : "";
  const char *ln = p->new_c && p->new_c->label ? p->new_c->label : "";
  bool with_p99 = a.has_samples && b.has_samples &&
                  a.total >= WM_STATS_MIN_P99 && b.total >= WM_STATS_MIN_P99;
  for (int k = 0; !s && k < (with_p99 ? 2 : 1); k++) {
    wm_compare_metric_t *m = &c->metrics[c->n_metrics];
    const char *stat = k == 0 ? "p50" : "p99";
    size_t len = strlen(lb) + strlen(ln) + 32;
    char *name = wm_arena_alloc(&c->arena, len);
    if (!name) {
      s = oom("metric names");
      break;
    }
    snprintf(name, len, "%s vs %s: %s", p->base ? lb : "(none)",
             p->new_c ? ln : "(none)", stat);
    m->name = name;
    m->base_label = wm_arena_strdup(&c->arena, lb);
    m->new_label = wm_arena_strdup(&c->arena, ln);
    m->stat = stat;
    if (!m->base_label || !m->new_label) {
      s = oom("metric names");
      break;
    }
    s = metric_compute(m, &a, &b, k == 1, &c->opts);
    if (s) {
      s = wm_status_annotate(s, "metric \"%s\"", name);
    } else {
      c->n_metrics++;
    }
  }
  side_deinit(&a);
  side_deinit(&b);
  return s;
}

// Holm across the metrics that can have a verdict, then the verdicts, the
// overall verdict and the geometric mean of the p50 ratios.
static wm_status_t decide(wm_compare_t *c) {
  size_t cap = c->n_metrics ? c->n_metrics : 1;
  double *p = wm_calloc(cap, sizeof(double));
  double *adj = wm_calloc(cap, sizeof(double));
  size_t *which = wm_calloc(cap, sizeof(size_t));
  if (!p || !adj || !which) {
    free(p);
    free(adj);
    free(which);
    return oom("p-values");
  }
  size_t k = 0;
  for (size_t i = 0; i < c->n_metrics; i++) {
    const wm_compare_metric_t *m = &c->metrics[i];
    if (m->n_base >= MIN_BLOCKS && m->n_new >= MIN_BLOCKS &&
        isfinite(m->p_value)) {
      p[k] = m->p_value;
      which[k++] = i;
    }
  }
  if (k > 0) {
    wm_stats_holm(p, k, adj);
  }
  for (size_t i = 0; i < k; i++) {
    c->metrics[which[i]].p_adjusted = adj[i];
  }
  free(p);
  free(adj);
  free(which);
  bool incomparable = false;
  for (size_t i = 0; i < c->n_diff; i++) {
    incomparable |= c->diff[i].critical && !c->opts.force;
  }
  int worst = 0;
  double log_sum = 0.0;
  size_t n_log = 0;
  for (size_t i = 0; i < c->n_metrics; i++) {
    wm_compare_metric_t *m = &c->metrics[i];
    wm_verdict_t v = metric_verdict(m, &c->opts);
    worst = verdict_rank(v) > worst ? verdict_rank(v) : worst;
    m->verdict = incomparable ? WM_VERDICT_INCOMPARABLE : v;
    if (strcmp(m->stat, "p50") == 0 && isfinite(m->ratio) && m->ratio > 0.0) {
      log_sum += log(m->ratio);
      n_log++;
    }
  }
  static const wm_verdict_t by_rank[] = {
      WM_VERDICT_INSUFFICIENT, WM_VERDICT_NO_CHANGE, WM_VERDICT_WITHIN_NOISE,
      WM_VERDICT_INCONCLUSIVE, WM_VERDICT_IMPROVED,  WM_VERDICT_REGRESSED};
  c->overall = incomparable ? WM_VERDICT_INCOMPARABLE : by_rank[worst];
  c->geomean_ratio = n_log ? exp(log_sum / (double)n_log) : NAN;
  return NULL;
}

wm_status_t wm_compare_baselines(const wm_baseline_t *base,
                                 const wm_baseline_t *new_b,
                                 const char *base_path, const char *new_path,
                                 const wm_compare_options_t *opts,
                                 wm_compare_t **out) {
  *out = NULL;
  if (!base || !new_b) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "comparing baselines: a baseline is NULL");
  }
  base_path = base_path ? base_path : "base";
  new_path = new_path ? new_path : "new";
  wm_compare_options_t o;
  WM_RETURN_IF_ERROR(check_options(opts, &o));
  if (base->n_configs == 0 || !base->configs) {
    return WM_ERROR(INVALID_ARGUMENT, "base \"%s\" has no configurations",
                    base_path);
  }
  if (new_b->n_configs == 0 || !new_b->configs) {
    return WM_ERROR(INVALID_ARGUMENT, "new \"%s\" has no configurations",
                    new_path);
  }
  wm_compare_t *c = wm_calloc(1, sizeof(*c));
  if (!c) {
    return oom("comparison");
  }
  wm_arena_init(&c->arena);
  c->opts = o;
  c->geomean_ratio = NAN;
  wm_status_t s = NULL;
  size_t nb = base->n_configs, nn = new_b->n_configs, max_pairs;
  pair_t *pairs = NULL;
  size_t *slot = NULL;
  bool *used = NULL;
  char *base_who = NULL, *new_who = NULL;
  size_t max_metrics;
  if (!wm_checked_add(nb, nn, &max_pairs) ||
      !wm_checked_mul(max_pairs, 2, &max_metrics)) {
    s = WM_ERROR(INVALID_ARGUMENT, "%zu + %zu configurations: too many", nb,
                 nn);
    goto fail;
  }
  c->base_path = wm_arena_strdup(&c->arena, base_path);
  c->new_path = wm_arena_strdup(&c->arena, new_path);
  pairs = wm_calloc(max_pairs, sizeof(*pairs));
  slot = wm_calloc(nb, sizeof(*slot));
  used = wm_calloc(nn, sizeof(*used));
  c->metrics = arena_array(&c->arena, max_metrics, sizeof(*c->metrics));
  size_t wlen = strlen(base_path) + strlen(new_path) + 16;
  base_who = wm_malloc(wlen);
  new_who = wm_malloc(wlen);
  if (!c->base_path || !c->new_path || !pairs || !slot || !used ||
      !c->metrics || !base_who || !new_who) {
    s = oom("pairs");
    goto fail;
  }
  snprintf(base_who, wlen, "base \"%s\"", base_path);
  snprintf(new_who, wlen, "new \"%s\"", new_path);
  s = env_diff(c, &base->env, &new_b->env);
  size_t n_pairs = pair_configs(base, new_b, pairs, slot, used);
  for (size_t i = 0; !s && i < n_pairs; i++) {
    s = compare_pair(c, &pairs[i], base_who, new_who);
  }
  if (!s) {
    s = decide(c);
  }
fail:
  free(pairs);
  free(slot);
  free(used);
  free(base_who);
  free(new_who);
  if (s) {
    wm_compare_destroy(c);
    return s;
  }
  *out = c;
  return NULL;
}

void wm_compare_destroy(wm_compare_t *c) {
  if (!c) {
    return;
  }
  wm_arena_deinit(&c->arena);
  free(c);
}

// --------------------------------------------------------------- text

#define C_RESET "\x1b[0m"
#define C_BOLD "\x1b[1m"
#define C_RED "\x1b[31m"
#define C_GREEN "\x1b[32m"
#define C_YELLOW "\x1b[33m"
#define C_MAGENTA "\x1b[35m"

// Cells are cut to this many bytes.
#define CELL_CAP 512

static const char *verdict_color(wm_verdict_t v) {
  switch (v) {
    case WM_VERDICT_REGRESSED:
      return C_RED;
    case WM_VERDICT_IMPROVED:
      return C_GREEN;
    case WM_VERDICT_WITHIN_NOISE:
    case WM_VERDICT_INCONCLUSIVE:
      return C_YELLOW;
    case WM_VERDICT_INCOMPARABLE:
      return C_MAGENTA;
    default:
      return NULL;
  }
}

// Width of |s| in columns (code points).
static size_t text_width(const char *s) {
  return wm_report_text_width(s, strlen(s));
}

// Copies |s| into |buf| (CELL_CAP bytes) with control characters replaced,
// cut to |width| columns (at most TEXT_COLS): the end is replaced by ".."
// (or, with |left|, the start, for paths).
static const char *cell_fit(const char *s, size_t width, bool left, char *buf) {
  size_t n = strlen(s), w = wm_report_text_width(s, n);
  width = width < TEXT_COLS ? width : TEXT_COLS;
  size_t from = 0, len = n;
  const char *dots = "";
  if (w > width && width < 3) {
    len = wm_report_text_prefix(s, n, width);
  } else if (w > width && left) {
    from = wm_report_text_prefix(s, n, w - (width - 2));
    len = n - from;
    dots = "..";
  } else if (w > width) {
    len = wm_report_text_prefix(s, n, width - 2);
  }
  // TEXT_COLS code points of at most 4 bytes fit in CELL_CAP.
  snprintf(buf, CELL_CAP, "%s%.*s%s", left ? dots : "", (int)len, s + from,
           left || w <= width || width < 3 ? "" : "..");
  wm_report_sanitize(buf);
  return buf;
}

// Appends |s| padded to |width| columns (right-aligned when |right|),
// coloured.
static void put_cell(wm_strbuf_t *out, const char *s, size_t width, bool right,
                     const char *color) {
  size_t n = strlen(s), w = wm_report_text_width(s, n);
  size_t pad = width > w ? width - w : 0;
  if (right) {
    wm_strbuf_printf(out, "%*s", (int)pad, "");
  }
  if (color) {
    wm_strbuf_printf(out, "%s%s%s", color, s, C_RESET);
  } else {
    wm_strbuf_append(out, s, n);
  }
  if (!right) {
    wm_strbuf_printf(out, "%*s", (int)pad, "");
  }
}

// Removes the spaces at the end of |out| (padding of a last cell).
static void trim_line(wm_strbuf_t *out) {
  while (out->len > 0 && out->data[out->len - 1] == ' ') {
    out->data[--out->len] = '\0';
  }
  wm_strbuf_append(out, "\n", 1);
}

// A time in ns, human-readable: "850 ns", "12.3 us", "1.23 ms", "2.50 s".
static const char *fmt_ns(double ns, char *buf, size_t cap) {
  static const char *const unit[] = {"ns", "us", "ms", "s"};
  if (!isfinite(ns)) {
    snprintf(buf, cap, "-");
    return buf;
  }
  double v = ns;
  int k = 0;
  while (fabs(v) >= 999.5 && k < 3) {
    v /= 1000.0;
    k++;
  }
  double a = fabs(v);
  if (k == 0 || a >= 99.95) {
    snprintf(buf, cap, "%.0f %s", v, unit[k]);
  } else if (a >= 9.995) {
    snprintf(buf, cap, "%.1f %s", v, unit[k]);
  } else {
    snprintf(buf, cap, "%.2f %s", v, unit[k]);
  }
  return buf;
}

// A fraction as a signed percentage: "+30.1%", "-" when not finite.
static const char *fmt_pct(double x, char *buf, size_t cap) {
  if (!isfinite(x)) {
    snprintf(buf, cap, "-");
  } else if (fabs(x) >= 9.9995) {
    snprintf(buf, cap, "%+.0f%%", 100.0 * x);
  } else {
    snprintf(buf, cap, "%+.1f%%", 100.0 * x);
  }
  return buf;
}

static const char *fmt_p(double p, char *buf, size_t cap) {
  if (!isfinite(p)) {
    snprintf(buf, cap, "-");
  } else if (p >= 0.001) {
    snprintf(buf, cap, "%.3f", p);
  } else {
    snprintf(buf, cap, "%.1e", p);
  }
  return buf;
}

// The metric as the reports show it: "cpu@t1 p50" when both labels agree,
// else "ref@t1 -> cpu@t1 p50"; a label is cut at 200 bytes so that the
// statistic always ends the text (|cap| >= 512).
static void metric_label(const wm_compare_metric_t *m, char *buf, size_t cap) {
  if (strcmp(m->base_label, m->new_label) == 0) {
    snprintf(buf, cap, "%.200s %s", m->base_label, m->stat);
  } else {
    snprintf(buf, cap, "%.200s -> %.200s %s",
             *m->base_label ? m->base_label : "-",
             *m->new_label ? m->new_label : "-", m->stat);
  }
}

enum { COL_NAME, COL_BASE, COL_NEW, COL_CHANGE, COL_P, COL_VERDICT, N_COLS };

typedef struct row {
  char cell[N_COLS][CELL_CAP];
} row_t;

static void fill_row(const wm_compare_metric_t *m, row_t *r) {
  char raw[CELL_CAP], lo[24], hi[24], mid[24], p[24], pa[24];
  metric_label(m, raw, sizeof(raw));
  snprintf(r->cell[COL_NAME], CELL_CAP, "%s", raw);
  wm_report_sanitize(r->cell[COL_NAME]);
  fmt_ns(m->base_ns, r->cell[COL_BASE], CELL_CAP);
  fmt_ns(m->new_ns, r->cell[COL_NEW], CELL_CAP);
  fmt_pct(m->rel_change, mid, sizeof(mid));
  if (isfinite(m->ci_lo) && isfinite(m->ci_hi)) {
    snprintf(r->cell[COL_CHANGE], CELL_CAP, "%s [%s, %s]", mid,
             fmt_pct(m->ci_lo, lo, sizeof(lo)),
             fmt_pct(m->ci_hi, hi, sizeof(hi)));
  } else {
    snprintf(r->cell[COL_CHANGE], CELL_CAP, "%s", mid);
  }
  snprintf(r->cell[COL_P], CELL_CAP, "%s (%s)", fmt_p(m->p_value, p, sizeof(p)),
           fmt_p(m->p_adjusted, pa, sizeof(pa)));
  snprintf(r->cell[COL_VERDICT], CELL_CAP, "%s", wm_verdict_name(m->verdict));
}

// Appends "label   item, item, ..." wrapped within TEXT_COLS, the items
// from column 8 on every line.
static void put_list(wm_strbuf_t *out, const char *label, const char **items,
                     size_t n) {
  size_t indent = 8, col = indent;
  wm_strbuf_printf(out, "%-8s", label);
  for (size_t i = 0; i < n; i++) {
    char buf[CELL_CAP];
    cell_fit(items[i], TEXT_COLS - indent - 1, false, buf);
    size_t w = text_width(buf) + (i + 1 < n ? 1 : 0);
    if (i > 0 && col + 1 + w > TEXT_COLS) {
      wm_strbuf_printf(out, "\n%*s", (int)indent, "");
      col = indent;
    } else if (i > 0) {
      wm_strbuf_append(out, " ", 1);
      col++;
    }
    wm_strbuf_printf(out, "%s%s", buf, i + 1 < n ? "," : "");
    col += w;
  }
  wm_strbuf_append(out, "\n", 1);
}

static void text_header(const wm_compare_t *c, wm_strbuf_t *out) {
  char buf[CELL_CAP];
  wm_strbuf_printf(out, "base    %s\n",
                   cell_fit(c->base_path, TEXT_COLS - 8, true, buf));
  wm_strbuf_printf(out, "new     %s\n",
                   cell_fit(c->new_path, TEXT_COLS - 8, true, buf));
  // The pairs of configurations, once each.
  const char **items =
      wm_calloc(c->n_metrics ? c->n_metrics : 1, sizeof(char *));
  size_t n = 0;
  for (size_t i = 0; items && i < c->n_metrics; i++) {
    if (strcmp(c->metrics[i].stat, "p50") == 0) {
      const wm_compare_metric_t *m = &c->metrics[i];
      char *s = strcmp(m->base_label, m->new_label) == 0
                    ? wm_strdup(m->base_label)
                    : NULL;
      if (!s) {
        size_t len = strlen(m->base_label) + strlen(m->new_label) + 8;
        s = wm_malloc(len);
        if (s) {
          snprintf(s, len, "%s -> %s", *m->base_label ? m->base_label : "-",
                   *m->new_label ? m->new_label : "-");
        }
      }
      if (s) {
        items[n++] = s;
      }
    }
  }
  if (items) {
    put_list(out, "configs", items, n);
    for (size_t i = 0; i < n; i++) {
      free((char *)items[i]);
    }
    free(items);
  }
  size_t tested = 0;
  for (size_t i = 0; i < c->n_metrics; i++) {
    tested += isfinite(c->metrics[i].p_adjusted);
  }
  wm_strbuf_printf(out,
                   "method  two-sided Mann-Whitney U test on block medians "
                   "(p99: on per-block P99s),\n"
                   "        Holm across %zu metric%s, alpha %g; bootstrap "
                   "95%% CI of the change (%zu\n"
                   "        resamples of blocks, seed %llu); noise threshold "
                   "tau %g%%%s\n",
                   tested, tested == 1 ? "" : "s", c->opts.alpha,
                   c->opts.resamples, (unsigned long long)c->opts.seed,
                   100.0 * c->opts.noise, c->opts.force ? "; --force" : "");
}

static void text_env(const wm_compare_t *c, bool color, wm_strbuf_t *out) {
  size_t n_crit = 0;
  for (size_t i = 0; i < c->n_diff; i++) {
    n_crit += c->diff[i].critical;
  }
  if (c->n_diff == 0) {
    wm_strbuf_printf(out, "\nenvironment: no differences\n");
    return;
  }
  wm_strbuf_printf(out, "\nenvironment: %zu difference%s, %zu critical%s\n",
                   c->n_diff, c->n_diff == 1 ? "" : "s", n_crit,
                   n_crit ? " (marked !)" : "");
  size_t fw = strlen("field"), bw = strlen("base"), nw = strlen("new");
  for (size_t i = 0; i < c->n_diff; i++) {
    size_t f = text_width(c->diff[i].field), b = text_width(c->diff[i].base),
           n = text_width(c->diff[i].new_value);
    fw = f > fw ? f : fw;
    bw = b > bw ? b : bw;
    nw = n > nw ? n : nw;
  }
  fw = fw > 24 ? 24 : fw;
  // "  ! " + field + 2 + base + 2 + new within TEXT_COLS.
  size_t room = TEXT_COLS - 4 - fw - 4;
  if (bw + nw > room) {
    size_t half = room / 2;
    if (bw <= half) {
      nw = room - bw;
    } else if (nw <= half) {
      bw = room - nw;
    } else {
      bw = half;
      nw = room - half;
    }
  }
  wm_strbuf_append(out, "    ", 4);
  put_cell(out, "field", fw + 2, false, color ? C_BOLD : NULL);
  put_cell(out, "base", bw + 2, false, color ? C_BOLD : NULL);
  put_cell(out, "new", nw, false, color ? C_BOLD : NULL);
  trim_line(out);
  for (size_t i = 0; i < c->n_diff; i++) {
    const wm_env_diff_t *d = &c->diff[i];
    char buf[CELL_CAP];
    bool crit = d->critical;
    wm_strbuf_append(out, "  ", 2);
    put_cell(out, crit ? "!" : " ", 2, false, crit && color ? C_RED : NULL);
    put_cell(out, cell_fit(d->field, fw, false, buf), fw + 2, false,
             crit && color ? C_RED : NULL);
    put_cell(out, cell_fit(*d->base ? d->base : "-", bw, false, buf), bw + 2,
             false, NULL);
    put_cell(out, cell_fit(*d->new_value ? d->new_value : "-", nw, false, buf),
             nw, false, NULL);
    trim_line(out);
  }
}

static void text_metrics(const wm_compare_t *c, bool color, wm_strbuf_t *out) {
  static const char *const head[N_COLS] = {
      "metric", "base", "new", "change [95% CI]", "p (adj)", "verdict"};
  static const bool right[N_COLS] = {false, true, true, false, false, false};
  row_t *rows = wm_calloc(c->n_metrics ? c->n_metrics : 1, sizeof(row_t));
  if (!rows) {
    out->failed = true;
    return;
  }
  size_t w[N_COLS];
  for (int k = 0; k < N_COLS; k++) {
    w[k] = strlen(head[k]);
  }
  for (size_t i = 0; i < c->n_metrics; i++) {
    fill_row(&c->metrics[i], &rows[i]);
    for (int k = 0; k < N_COLS; k++) {
      size_t n = text_width(rows[i].cell[k]);
      w[k] = n > w[k] ? n : w[k];
    }
  }
  // Two spaces between columns; the name column gives way.
  size_t rest = 2 * (N_COLS - 1);
  for (int k = 1; k < N_COLS; k++) {
    rest += w[k];
  }
  size_t name_max = rest + 12 < TEXT_COLS ? TEXT_COLS - rest : 12;
  w[COL_NAME] = w[COL_NAME] > name_max ? name_max : w[COL_NAME];
  wm_strbuf_printf(out, "\n");
  for (int k = 0; k < N_COLS; k++) {
    put_cell(out, head[k], w[k], right[k], color ? C_BOLD : NULL);
    if (k + 1 < N_COLS) {
      wm_strbuf_append(out, "  ", 2);
    }
  }
  trim_line(out);
  for (size_t i = 0; i < c->n_metrics; i++) {
    char buf[CELL_CAP];
    for (int k = 0; k < N_COLS; k++) {
      const char *s = rows[i].cell[k];
      if (k == COL_NAME && text_width(s) > w[k] && w[k] >= 10) {
        // Cut the labels, keep the statistic (" p50").
        size_t n = strlen(s);
        size_t keep = wm_report_text_prefix(s, n, w[k] - 6);
        snprintf(buf, sizeof(buf), "%.*s..%s", (int)keep, s, s + n - 4);
        s = buf;
      } else if (k == COL_NAME) {
        s = cell_fit(s, w[k], false, buf);
      }
      const char *tint = color && k == COL_VERDICT
                             ? verdict_color(c->metrics[i].verdict)
                             : NULL;
      put_cell(out, s, w[k], right[k], tint);
      if (k + 1 < N_COLS) {
        wm_strbuf_append(out, "  ", 2);
      }
    }
    trim_line(out);
  }
  free(rows);
}

void wm_compare_to_text(const wm_compare_t *c, bool color, wm_strbuf_t *out) {
  text_header(c, out);
  text_env(c, color, out);
  text_metrics(c, color, out);
  bool few = false;
  for (size_t i = 0; i < c->n_metrics; i++) {
    few |=
        c->metrics[i].n_base < MIN_BLOCKS || c->metrics[i].n_new < MIN_BLOCKS;
  }
  wm_strbuf_printf(out,
                   "\nsignificant: p (adj) < %g; regressed / improved: "
                   "significant and the CI beyond +/-%g%%;\n"
                   "within_noise: significant, the CI overlaps "
                   "[-%g%%, +%g%%]%s\n",
                   c->opts.alpha, 100.0 * c->opts.noise, 100.0 * c->opts.noise,
                   100.0 * c->opts.noise,
                   few ? "; insufficient_data: a side has < 5 blocks" : "");
  char g[24];
  const char *vc = color ? verdict_color(c->overall) : NULL;
  wm_strbuf_printf(out, "\n%soverall:%s ", color ? C_BOLD : "",
                   color ? C_RESET : "");
  put_cell(out, wm_verdict_name(c->overall), 0, false, vc);
  if (c->overall == WM_VERDICT_INCOMPARABLE) {
    wm_strbuf_printf(out, ": critical fields differ:");
    char buf[CELL_CAP];
    size_t col = strlen("overall: incomparable: critical fields differ:");
    bool first = true;
    for (size_t i = 0; i < c->n_diff; i++) {
      if (!c->diff[i].critical) {
        continue;
      }
      cell_fit(c->diff[i].field, 40, false, buf);
      if (!first) {
        wm_strbuf_append(out, ",", 1);
        col++;
      }
      if (col + text_width(buf) + 2 > TEXT_COLS) {
        wm_strbuf_printf(out, "\n ");
        col = 1;
      }
      wm_strbuf_printf(out, " %s", buf);
      col += text_width(buf) + 1;
      first = false;
    }
    wm_strbuf_printf(out, "%s(use --force)\n",
                     col + 15 > TEXT_COLS ? "\n  " : " ");
  } else if (isfinite(c->geomean_ratio)) {
    wm_strbuf_printf(out, " (geomean of the p50 ratios %.3f, %s)\n",
                     c->geomean_ratio,
                     fmt_pct(c->geomean_ratio - 1.0, g, sizeof(g)));
  } else {
    wm_strbuf_append(out, "\n", 1);
  }
}

// --------------------------------------------------------------- JSON

// A member with a number: null when not finite; times (|integer|) rounded
// to whole ns; others with 6 significant digits, written as an integer
// when that rounding gives one (docs/baseline-format.md).
static void json_num(wm_strbuf_t *out, const char *key, double v, bool integer,
                     bool comma) {
  wm_strbuf_printf(out, "\"%s\": ", key);
  char text[32];
  if (!isfinite(v)) {
    snprintf(text, sizeof(text), "null");
  } else {
    if (integer) {
      v = round(v);
    } else if (v != floor(v)) {
      snprintf(text, sizeof(text), "%.6g", v);
      v = strtod(text, NULL);
    }
    snprintf(text, sizeof(text),
             v == floor(v) && fabs(v) < 1e15 ? "%.0f" : "%.6g", v);
  }
  wm_strbuf_printf(out, "%s%s", text, comma ? ", " : "");
}

static void json_str(wm_strbuf_t *out, const char *key, const char *v,
                     bool comma) {
  wm_strbuf_printf(out, "\"%s\": ", key);
  wm_strbuf_json_string(out, v);
  if (comma) {
    wm_strbuf_append(out, ", ", 2);
  }
}

// Ends the line (without the space after a comma) and indents the next.
static void json_nl(wm_strbuf_t *out, const char *indent) {
  while (out->len > 0 && out->data[out->len - 1] == ' ') {
    out->data[--out->len] = '\0';
  }
  wm_strbuf_printf(out, "\n%s", indent);
}

void wm_compare_to_json(const wm_compare_t *c, wm_strbuf_t *out) {
  wm_strbuf_printf(out, "{\n  ");
  json_str(out, "format", WM_COMPARE_FORMAT, true);
  json_nl(out, "  ");
  json_str(out, "base", c->base_path, true);
  json_str(out, "new", c->new_path, true);
  json_nl(out, "  ");
  wm_strbuf_printf(out, "\"env_diff\": [");
  for (size_t i = 0; i < c->n_diff; i++) {
    const wm_env_diff_t *d = &c->diff[i];
    wm_strbuf_printf(out, "%s\n    {", i ? "," : "");
    json_str(out, "field", d->field, true);
    json_str(out, "base", d->base, true);
    json_str(out, "new", d->new_value, true);
    json_str(out, "severity", d->critical ? "critical" : "volatile", false);
    wm_strbuf_printf(out, "}");
  }
  wm_strbuf_printf(out, "%s],\n", c->n_diff ? "\n  " : "");
  wm_strbuf_printf(
      out,
      "  \"method\": {\"test\": \"mann_whitney_u\", \"unit\": "
      "\"block_median\", \"alpha\": %.6g, \"correction\": \"holm\", \"ci\": "
      "\"bootstrap_percentile\", \"ci_level\": %g, \"resamples\": %zu, "
      "\"seed\": %llu, \"noise_threshold\": %.6g, \"force\": %s},\n",
      c->opts.alpha, CI_LEVEL, c->opts.resamples,
      (unsigned long long)c->opts.seed, c->opts.noise,
      c->opts.force ? "true" : "false");
  wm_strbuf_printf(out, "  \"metrics\": [");
  for (size_t i = 0; i < c->n_metrics; i++) {
    const wm_compare_metric_t *m = &c->metrics[i];
    wm_strbuf_printf(out, "%s\n    {", i ? "," : "");
    json_str(out, "name", m->name, true);
    json_str(out, "base_label", m->base_label, true);
    json_str(out, "new_label", m->new_label, true);
    json_str(out, "stat", m->stat, true);
    json_nl(out, "     ");
    json_num(out, "base_ns", m->base_ns, true, true);
    json_num(out, "new_ns", m->new_ns, true, true);
    json_num(out, "ratio", m->ratio, false, true);
    json_num(out, "rel_change", m->rel_change, false, true);
    json_nl(out, "     ");
    json_num(out, "ci_lo", m->ci_lo, false, true);
    json_num(out, "ci_hi", m->ci_hi, false, true);
    json_num(out, "p_value", m->p_value, false, true);
    json_num(out, "p_adjusted", m->p_adjusted, false, true);
    json_nl(out, "     ");
    json_num(out, "u", m->u, false, true);
    wm_strbuf_printf(out, "\"exact\": %s, ", m->exact ? "true" : "false");
    wm_strbuf_printf(out, "\"n_base\": %zu, \"n_new\": %zu, ", m->n_base,
                     m->n_new);
    json_str(out, "verdict", wm_verdict_name(m->verdict), false);
    wm_strbuf_printf(out, "}");
  }
  wm_strbuf_printf(out, "%s],\n  \"overall\": {", c->n_metrics ? "\n  " : "");
  json_num(out, "geomean_ratio", c->geomean_ratio, false, true);
  json_str(out, "verdict", wm_verdict_name(c->overall), false);
  wm_strbuf_printf(out, "}\n}\n");
}

// --------------------------------------------------------------- HTML

// The forest plot's geometry (px).
#define FOREST_W 900
#define FOREST_LEFT 240   // room for the metric names
#define FOREST_RIGHT 130  // room for the verdicts
#define FOREST_TOP 28
#define FOREST_BOTTOM 52
#define FOREST_ROW 30

static const char *verdict_html_color(wm_verdict_t v) {
  switch (v) {
    case WM_VERDICT_REGRESSED:
      return "#b3261e";
    case WM_VERDICT_IMPROVED:
      return "#1e7b34";
    case WM_VERDICT_WITHIN_NOISE:
      return "#a86b00";
    case WM_VERDICT_NO_CHANGE:
      return "#4e79a7";
    case WM_VERDICT_INCOMPARABLE:
      return "#7b1fa2";
    case WM_VERDICT_INCONCLUSIVE:
      return "#c77d00";
    default:
      return "#8d99a6";
  }
}

// Axis labels of the forest plot: the change in percent.
static const char *fmt_axis_pct(double v, char *buf) {
  if (fabs(v) < 1e-9) {
    snprintf(buf, WM_REPORT_FMT_LEN, "0%%");
  } else {
    snprintf(buf, WM_REPORT_FMT_LEN, "%+g%%", v);
  }
  return buf;
}

static void html_verdict(wm_strbuf_t *out, wm_verdict_t v) {
  wm_strbuf_printf(out, "<span style=\"color:%s;font-weight:600\">%s</span>",
                   verdict_html_color(v), wm_verdict_name(v));
}

// One row per metric: the point at the change, the bar its interval, the
// +-tau band shaded and the zero line; the x axis in percent.
static void html_forest(const wm_compare_t *c, wm_strbuf_t *out) {
  double tau = 100.0 * c->opts.noise;
  double lo = -tau, hi = tau;
  for (size_t i = 0; i < c->n_metrics; i++) {
    const wm_compare_metric_t *m = &c->metrics[i];
    double v[3] = {m->rel_change, m->ci_lo, m->ci_hi};
    for (int k = 0; k < 3; k++) {
      if (isfinite(v[k])) {
        lo = fmin(lo, 100.0 * v[k]);
        hi = fmax(hi, 100.0 * v[k]);
      }
    }
  }
  double pad = 0.08 * (hi - lo);
  pad = pad > 0.5 ? pad : 0.5;
  lo -= pad;
  hi += pad;
  size_t rows = c->n_metrics ? c->n_metrics : 1;
  int h = FOREST_TOP + (int)rows * FOREST_ROW + FOREST_BOTTOM;
  // An empty y range: the axes draw no y ticks; rows are placed here.
  wm_report_plot_t p = {
      .x0 = FOREST_LEFT,
      .y0 = FOREST_TOP,
      .w = FOREST_W - FOREST_LEFT - FOREST_RIGHT,
      .h = (double)rows * FOREST_ROW,
      .lx0 = lo,
      .lx1 = hi,
  };
  wm_report_svg_open(out, "forest", FOREST_W, h,
                     "forest plot: change of each metric with its 95% "
                     "interval and the noise band");
  double bx0 = wm_report_plot_x(&p, -tau), bx1 = wm_report_plot_x(&p, tau);
  wm_strbuf_printf(out,
                   "<rect class=\"band\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                   "height=\"%.1f\" fill=\"#e8eef5\"/>\n",
                   bx0, p.y0, bx1 - bx0, p.h);
  wm_report_svg_axes(out, &p, fmt_axis_pct, NULL,
                     "change of new against base (95% bootstrap interval)",
                     NULL);
  char lab[64];
  snprintf(lab, sizeof(lab), "noise band \xc2\xb1%g%%", tau);
  wm_report_svg_text(out, (bx0 + bx1) / 2, p.y0 - 8, "middle",
                     " class=\"small\"", lab);
  double zx = wm_report_plot_x(&p, 0.0);
  wm_strbuf_printf(
      out,
      "<line class=\"zero\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
      "y2=\"%.1f\" stroke=\"#1d232a\" stroke-dasharray=\"4 3\"/>\n",
      zx, p.y0, zx, p.y0 + p.h);
  for (size_t i = 0; i < c->n_metrics; i++) {
    const wm_compare_metric_t *m = &c->metrics[i];
    const char *col = verdict_html_color(m->verdict);
    double y = p.y0 + ((double)i + 0.5) * FOREST_ROW;
    char name[CELL_CAP], a[24], b[24], d[24];
    metric_label(m, name, sizeof(name));
    wm_strbuf_printf(out, "<g class=\"row\">\n<title>");
    wm_report_html_escape(out, name);
    wm_strbuf_printf(
        out, ": %s [%s, %s], p (adj) ", fmt_pct(m->rel_change, a, sizeof(a)),
        fmt_pct(m->ci_lo, b, sizeof(b)), fmt_pct(m->ci_hi, d, sizeof(d)));
    wm_strbuf_printf(out, "%s, %s</title>\n",
                     fmt_p(m->p_adjusted, a, sizeof(a)),
                     wm_verdict_name(m->verdict));
    wm_strbuf_printf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">",
                     p.x0 - 8, y + 4);
    wm_report_html_escape_cut(out, name, 34);
    wm_strbuf_printf(out, "</text>\n");
    if (isfinite(m->ci_lo) && isfinite(m->ci_hi)) {
      double x0 = wm_report_plot_x(&p, 100.0 * m->ci_lo);
      double x1 = wm_report_plot_x(&p, 100.0 * m->ci_hi);
      wm_strbuf_printf(out,
                       "<line class=\"ci\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                       "y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>\n"
                       "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                       "stroke=\"%s\" stroke-width=\"2\"/>\n"
                       "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                       "stroke=\"%s\" stroke-width=\"2\"/>\n",
                       x0, y, x1, y, col, x0, y - 6, x0, y + 6, col, x1, y - 6,
                       x1, y + 6, col);
    }
    if (isfinite(m->rel_change)) {
      wm_strbuf_printf(out,
                       "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" "
                       "fill=\"%s\"/>\n",
                       wm_report_plot_x(&p, 100.0 * m->rel_change), y, col);
    }
    wm_strbuf_printf(out,
                     "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"start\" "
                     "style=\"fill:%s;font-weight:600\">%s</text>\n</g>\n",
                     p.x0 + p.w + 8, y + 4, col, wm_verdict_name(m->verdict));
  }
  wm_report_svg_close(out);
}

static void html_metrics(const wm_compare_t *c, wm_strbuf_t *out) {
  wm_strbuf_printf(out,
                   "<table class=\"metrics\">\n<tr><th>metric</th><th>base</th>"
                   "<th>new</th><th>change</th><th>95%% CI</th><th>p</th>"
                   "<th>p (adj)</th><th>U</th><th>blocks</th><th>verdict</th>"
                   "</tr>\n");
  for (size_t i = 0; i < c->n_metrics; i++) {
    const wm_compare_metric_t *m = &c->metrics[i];
    char name[CELL_CAP], a[24], b[24], d[24];
    metric_label(m, name, sizeof(name));
    wm_strbuf_printf(out, "<tr><td class=\"name\">");
    wm_report_html_escape(out, name);
    wm_strbuf_printf(out, "</td><td class=\"n\">%s</td>",
                     fmt_ns(m->base_ns, a, sizeof(a)));
    wm_strbuf_printf(out, "<td class=\"n\">%s</td>",
                     fmt_ns(m->new_ns, a, sizeof(a)));
    wm_strbuf_printf(out, "<td class=\"n\">%s</td>",
                     fmt_pct(m->rel_change, a, sizeof(a)));
    wm_strbuf_printf(out, "<td class=\"n\">[%s, %s]</td>",
                     fmt_pct(m->ci_lo, b, sizeof(b)),
                     fmt_pct(m->ci_hi, d, sizeof(d)));
    wm_strbuf_printf(out, "<td class=\"n\">%s%s</td>",
                     fmt_p(m->p_value, a, sizeof(a)),
                     isfinite(m->p_value) && !m->exact ? " (normal)" : "");
    wm_strbuf_printf(out, "<td class=\"n\">%s</td>",
                     fmt_p(m->p_adjusted, a, sizeof(a)));
    if (isfinite(m->u)) {
      wm_strbuf_printf(out, "<td class=\"n\">%g</td>", m->u);
    } else {
      wm_strbuf_printf(out, "<td class=\"n\">-</td>");
    }
    wm_strbuf_printf(out, "<td class=\"n\">%zu / %zu</td><td>", m->n_base,
                     m->n_new);
    html_verdict(out, m->verdict);
    wm_strbuf_printf(out, "</td></tr>\n");
  }
  wm_strbuf_printf(out, "</table>\n");
}

static void html_env(const wm_compare_t *c, wm_strbuf_t *out) {
  if (c->n_diff == 0) {
    wm_strbuf_printf(out, "<p class=\"muted\">No differences.</p>\n");
    return;
  }
  wm_strbuf_printf(out,
                   "<table class=\"env\">\n<tr><th>field</th><th>base</th>"
                   "<th>new</th><th>severity</th></tr>\n");
  for (size_t i = 0; i < c->n_diff; i++) {
    const wm_env_diff_t *d = &c->diff[i];
    wm_strbuf_printf(out, "<tr%s><td>", d->critical ? " class=\"crit\"" : "");
    wm_report_html_escape(out, d->field);
    wm_strbuf_printf(out, "</td><td class=\"name\">");
    wm_report_html_escape(out, *d->base ? d->base : "-");
    wm_strbuf_printf(out, "</td><td class=\"name\">");
    wm_report_html_escape(out, *d->new_value ? d->new_value : "-");
    wm_strbuf_printf(
        out, "</td><td>%s</td></tr>\n",
        d->critical ? "<span class=\"poor\">critical</span>" : "volatile");
  }
  wm_strbuf_printf(out, "</table>\n");
}

void wm_compare_to_html(const wm_compare_t *c, wm_strbuf_t *out) {
  wm_report_html_begin(out, "wmap compare", "wmap compare", NULL);
  wm_strbuf_printf(out, "<h1>wmap compare</h1>\n<table class=\"kv\">\n");
  wm_report_html_kv_open(out, "base");
  wm_report_html_escape(out, c->base_path);
  wm_report_html_kv_close(out);
  wm_report_html_kv_open(out, "new");
  wm_report_html_escape(out, c->new_path);
  wm_report_html_kv_close(out);
  wm_report_html_kv_open(out, "overall");
  html_verdict(out, c->overall);
  if (c->overall == WM_VERDICT_INCOMPARABLE) {
    wm_strbuf_printf(out, " (critical fields differ; compare with --force)");
  } else if (isfinite(c->geomean_ratio)) {
    char g[24];
    wm_strbuf_printf(out, " &mdash; geomean of the p50 ratios %.3f (%s)",
                     c->geomean_ratio,
                     fmt_pct(c->geomean_ratio - 1.0, g, sizeof(g)));
  }
  wm_report_html_kv_close(out);
  wm_report_html_kv_open(out, "method");
  wm_strbuf_printf(
      out,
      "two-sided Mann&ndash;Whitney U test on block medians (p99: per-block "
      "P99s), Holm&rsquo;s correction across the metrics, alpha %g; "
      "percentile bootstrap 95%% interval of the change (%zu resamples of "
      "blocks, seed %llu); noise threshold &tau; = %g%%%s",
      c->opts.alpha, c->opts.resamples, (unsigned long long)c->opts.seed,
      100.0 * c->opts.noise, c->opts.force ? "; --force" : "");
  wm_report_html_kv_close(out);
  wm_strbuf_printf(out, "</table>\n<h2>Changes</h2>\n");
  if (c->n_metrics > 0) {
    html_forest(c, out);
  }
  wm_strbuf_printf(
      out,
      "<p class=\"muted\">Significant: p (adj) &lt; %g. regressed / improved: "
      "significant and the interval beyond &plusmn;%g%%; within_noise: "
      "significant but the interval overlaps the band; insufficient_data: a "
      "side has fewer than %d blocks.</p>\n",
      c->opts.alpha, 100.0 * c->opts.noise, MIN_BLOCKS);
  html_metrics(c, out);
  wm_strbuf_printf(out, "<h2>Environment differences</h2>\n");
  html_env(c, out);
  wm_report_html_end(out);
}
