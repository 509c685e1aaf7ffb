// Statistics of latency samples: nearest-rank summaries, the Mann-Whitney U
// test (exact for small samples), Holm's adjustment and a percentile
// bootstrap of a ratio of medians. Conventions: docs/baseline-format.md.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wmap/bench.h"

// ------------------------------------------------------------ sorting

static int compare_double(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a > b) - (a < b);
}

// Maps a finite double to a key whose unsigned order is the numeric order.
static uint64_t double_key(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof(u));
  return (u >> 63) ? ~u : u | (UINT64_C(1) << 63);
}

static double key_double(uint64_t k) {
  uint64_t u = (k >> 63) ? k & ~(UINT64_C(1) << 63) : ~k;
  double d;
  memcpy(&d, &u, sizeof(d));
  return d;
}

// Samples reach 1e5-1e6 values: qsort takes about 0.25 s for 1e6 of them,
// an LSD radix sort (8 passes of 8 bits, constant bytes skipped) 0.03 s.
#define RADIX_MIN_N 4096

// Sorts the |n| finite values of |x| ascending into |out|.
static wm_status_t sort_copy(const double *x, size_t n, double *out) {
  if (n < RADIX_MIN_N) {
    memcpy(out, x, n * sizeof(double));
    qsort(out, n, sizeof(double), compare_double);
    return NULL;
  }
  size_t bytes;
  if (!wm_checked_mul(n, 2 * sizeof(uint64_t), &bytes)) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "sorting %zu values: size overflow", n);
  }
  uint64_t *keys = wm_malloc(bytes);
  if (!keys) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "sorting %zu values: out of memory", n);
  }
  uint64_t *tmp = keys + n;
  size_t count[8][256];
  memset(count, 0, sizeof(count));
  for (size_t i = 0; i < n; i++) {
    uint64_t k = double_key(x[i]);
    keys[i] = k;
    for (int b = 0; b < 8; b++) {
      count[b][(k >> (8 * b)) & 0xff]++;
    }
  }
  uint64_t *src = keys, *dst = tmp;
  for (int b = 0; b < 8; b++) {
    size_t *c = count[b];
    if (c[(src[0] >> (8 * b)) & 0xff] == n) {
      continue;  // every key has this byte: the pass would not move any
    }
    size_t pos = 0;
    for (int v = 0; v < 256; v++) {
      size_t cv = c[v];
      c[v] = pos;
      pos += cv;
    }
    for (size_t i = 0; i < n; i++) {
      dst[c[(src[i] >> (8 * b)) & 0xff]++] = src[i];
    }
    uint64_t *t = src;
    src = dst;
    dst = t;
  }
  for (size_t i = 0; i < n; i++) {
    out[i] = key_double(src[i]);
  }
  free(keys);
  return NULL;
}

// ------------------------------------------------------------ summary

// Quantiles that are multiples of 1e-6 (0.5, 0.999, (1 - 0.95) / 2, ...)
// use integer maths, so that a product such as 0.07 * 100 =
// 7.000000000000001 stays at rank 7; other quantiles allow a relative
// error of 1e-9 in q * n.
size_t wm_stats_rank(size_t n, double q) {
  if (!(q > 0)) {  // q <= 0 or NaN
    return 1;
  }
  if (q >= 1) {
    return n;
  }
  double micro = q * 1e6;
  double k = floor(micro + 0.5);
  size_t rank;
  if (fabs(micro - k) < 1e-6 && n <= (SIZE_MAX - 999999) / 1000000) {
    rank = ((size_t)k * n + 999999) / 1000000;
  } else {
    double t = q * (double)n;
    double r = ceil(t - 1e-9 * t);
    rank = r >= (double)n ? n : (size_t)r;
  }
  return rank < 1 ? 1 : (rank > n ? n : rank);
}

double wm_stats_percentile(const double *sorted, size_t n, double q) {
  if (n == 0 || !sorted) {
    return NAN;
  }
  return sorted[wm_stats_rank(n, q) - 1];
}

// INVALID_ARGUMENT naming the first value of |x| that is not finite.
static wm_status_t check_finite(const char *what, const double *x, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(x[i])) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "%s value %zu is %g, want a finite number", what, i,
                      x[i]);
    }
  }
  return NULL;
}

// Allocates |n| doubles and sorts a copy of |x| into them.
static wm_status_t sorted_copy(const char *what, const double *x, size_t n,
                               double **out) {
  *out = NULL;
  size_t bytes;
  if (!wm_checked_mul(n, sizeof(double), &bytes)) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "%s of %zu values: size overflow", what,
                    n);
  }
  double *s = wm_malloc(bytes > 0 ? bytes : 1);
  if (!s) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "%s of %zu values: out of memory", what,
                    n);
  }
  wm_status_t status = sort_copy(x, n, s);
  if (status) {
    free(s);
    return wm_status_annotate(status, "%s", what);
  }
  *out = s;
  return NULL;
}

// The median absolute deviation of ascending |s| from its median |med|,
// by nearest rank. The deviations of the values at or below the median,
// read downwards, and of those above it, read upwards, are both ascending,
// so walking the merge of the two finds the k-th smallest without sorting.
static double mad_sorted(const double *s, size_t n, double med) {
  size_t k = wm_stats_rank(n, 0.5);
  size_t lo = 0;
  while (lo < n && s[lo] <= med) {
    lo++;
  }
  size_t hi = lo;  // next below-or-at candidate s[lo - 1], above s[hi]
  double d = 0;
  for (size_t i = 0; i < k; i++) {
    double dl = lo > 0 ? med - s[lo - 1] : INFINITY;
    double dh = hi < n ? s[hi] - med : INFINITY;
    if (dl <= dh) {
      d = dl;
      lo--;
    } else {
      d = dh;
      hi++;
    }
  }
  return d;
}

static void summarize(const double *s, size_t n, wm_stats_t *out) {
  out->n = n;
  out->min = s[0];
  out->max = s[n - 1];
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    sum += s[i];
  }
  out->mean = sum / (double)n;
  double ss = 0;
  for (size_t i = 0; i < n; i++) {
    double d = s[i] - out->mean;
    ss += d * d;
  }
  out->sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
  out->cv = out->mean != 0 ? out->sd / out->mean : 0;
  out->p50 = out->median = wm_stats_percentile(s, n, 0.5);
  out->mad = mad_sorted(s, n, out->median);
  out->q1 = wm_stats_percentile(s, n, 0.25);
  out->q3 = wm_stats_percentile(s, n, 0.75);
  out->iqr = out->q3 - out->q1;
  out->p90 = wm_stats_percentile(s, n, 0.90);
  out->p95 = wm_stats_percentile(s, n, 0.95);
  out->p99 = wm_stats_percentile(s, n, 0.99);
  out->p999 = wm_stats_percentile(s, n, 0.999);
  out->p90_ok = n >= WM_STATS_MIN_P90;
  out->p95_ok = n >= WM_STATS_MIN_P95;
  out->p99_ok = n >= WM_STATS_MIN_P99;
  out->p999_ok = n >= WM_STATS_MIN_P999;
  double mild_lo = out->q1 - 1.5 * out->iqr, mild_hi = out->q3 + 1.5 * out->iqr;
  double severe_lo = out->q1 - 3 * out->iqr, severe_hi = out->q3 + 3 * out->iqr;
  for (size_t i = 0; i < n; i++) {
    out->outliers_mild += s[i] < mild_lo || s[i] > mild_hi;
    out->outliers_severe += s[i] < severe_lo || s[i] > severe_hi;
  }
}

wm_status_t wm_stats_compute(const double *x, size_t n, wm_stats_t *out) {
  WM_ASSERT(out);
  memset(out, 0, sizeof(*out));
  if (n == 0) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "statistics of 0 sample values, want at least 1");
  }
  WM_ASSERT(x);
  WM_RETURN_IF_ERROR(check_finite("sample", x, n));
  double *s;
  WM_RETURN_IF_ERROR(sorted_copy("statistics", x, n, &s));
  summarize(s, n, out);
  free(s);
  return NULL;
}

// ----------------------------------------------------- Mann-Whitney U

// Both sizes at or below this get the exact distribution: at most
// C(40, 20) = 1.4e11 splits, counted in 64 bits.
#define MWU_EXACT_MAX 20

typedef struct mwu_item {
  double v;
  bool in_a;
} mwu_item_t;

static int compare_item(const void *pa, const void *pb) {
  const mwu_item_t *a = pa, *b = pb;
  return (a->v > b->v) - (a->v < b->v);
}

// The exact two-sided p-value: the share of the C(N, na) ways to pick
// |na| of the pooled values whose doubled mid-rank sum lies at least as
// far from its mean na * (N + 1) as |r2_obs|. Doubled mid-ranks are
// integers, so the comparison is exact.
static wm_status_t mwu_exact_p(const uint32_t *rank2, size_t total, size_t na,
                               uint64_t r2_obs, double *out_p) {
  size_t smax = total * (total + 1);  // sum of every doubled rank
  uint64_t *ways = wm_calloc((na + 1) * (smax + 1), sizeof(uint64_t));
  if (!ways) {
    return WM_ERROR(RESOURCE_EXHAUSTED,
                    "mann-whitney u: exact distribution: out of memory");
  }
  // ways[k * (smax + 1) + s]: subsets of the values seen so far with k
  // members and doubled rank sum s.
  ways[0] = 1;
  size_t reach = 0;  // largest sum reachable so far
  for (size_t m = 0; m < total; m++) {
    size_t d = rank2[m];
    reach += d;
    for (size_t k = (m + 1 < na ? m + 1 : na); k >= 1; k--) {
      uint64_t *row = ways + k * (smax + 1);
      const uint64_t *prev = ways + (k - 1) * (smax + 1);
      for (size_t s = reach; s >= d; s--) {
        row[s] += prev[s - d];
      }
    }
  }
  uint64_t mean2 = (uint64_t)na * (total + 1);
  uint64_t dev = r2_obs > mean2 ? r2_obs - mean2 : mean2 - r2_obs;
  uint64_t all = 0, tail = 0;
  const uint64_t *last = ways + na * (smax + 1);
  for (size_t s = 0; s <= smax; s++) {
    uint64_t sd = s > mean2 ? s - mean2 : mean2 - s;
    all += last[s];
    if (sd >= dev) {
      tail += last[s];
    }
  }
  free(ways);
  *out_p = (double)tail / (double)all;
  return NULL;
}

wm_status_t wm_stats_mann_whitney(const double *a, size_t na, const double *b,
                                  size_t nb, wm_mwu_t *out) {
  WM_ASSERT(out);
  memset(out, 0, sizeof(*out));
  if (na == 0 || nb == 0) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "mann-whitney u: sample %s has 0 values, want at least 1",
                    na == 0 ? "a" : "b");
  }
  WM_ASSERT(a && b);
  WM_RETURN_IF_ERROR(check_finite("mann-whitney u: sample a", a, na));
  WM_RETURN_IF_ERROR(check_finite("mann-whitney u: sample b", b, nb));
  size_t total, bytes;
  if (!wm_checked_add(na, nb, &total) ||
      !wm_checked_mul(total, sizeof(mwu_item_t), &bytes)) {
    return WM_ERROR(RESOURCE_EXHAUSTED,
                    "mann-whitney u: %zu + %zu values: size overflow", na, nb);
  }
  mwu_item_t *items = wm_malloc(bytes);
  if (!items) {
    return WM_ERROR(RESOURCE_EXHAUSTED,
                    "mann-whitney u: %zu + %zu values: out of memory", na, nb);
  }
  for (size_t i = 0; i < na; i++) {
    items[i] = (mwu_item_t){a[i], true};
  }
  for (size_t i = 0; i < nb; i++) {
    items[na + i] = (mwu_item_t){b[i], false};
  }
  qsort(items, total, sizeof(mwu_item_t), compare_item);

  bool exact = na <= MWU_EXACT_MAX && nb <= MWU_EXACT_MAX;
  uint32_t rank2[2 * MWU_EXACT_MAX];  // doubled mid-ranks, exact case only
  double r2_a = 0;                    // doubled rank sum of a
  double ties = 0;                    // sum of t^3 - t over tie groups
  size_t groups = 0;                  // distinct values
  for (size_t i = 0; i < total;) {
    size_t j = i + 1;
    while (j < total && items[j].v == items[i].v) {
      j++;
    }
    // Positions i..j-1 hold ranks i+1..j; their mid-rank doubled is i+1+j.
    double t = (double)(j - i);
    ties += t * t * t - t;
    groups++;
    for (size_t m = i; m < j; m++) {
      if (items[m].in_a) {
        r2_a += (double)(i + 1 + j);
      }
      if (exact) {
        rank2[m] = (uint32_t)(i + 1 + j);
      }
    }
    i = j;
  }
  free(items);
  double dna = (double)na, dnb = (double)nb, dn = (double)total;
  out->u = r2_a / 2 - dna * (dna + 1) / 2;
  out->exact = exact;
  if (groups == 1) {  // every value equal
    out->p = 1;
    return NULL;
  }
  if (exact) {
    wm_status_t status = mwu_exact_p(rank2, total, na, (uint64_t)r2_a, &out->p);
    if (status) {
      memset(out, 0, sizeof(*out));
    }
    return status;
  }
  double mu = dna * dnb / 2;
  double var = dna * dnb / 12 * ((dn + 1) - ties / (dn * (dn - 1)));
  double z = (fabs(out->u - mu) - 0.5) / sqrt(var);
  double p = z > 0 ? erfc(z / sqrt(2.0)) : 1;
  out->p = p < 0 ? 0 : (p > 1 ? 1 : p);
  return NULL;
}

// ---------------------------------------------------------------- Holm

typedef struct ranked_p {
  double p;
  size_t index;
} ranked_p_t;

// Ascending p (NaN last), then by position, so equal p-values keep their
// order and the result does not depend on the sort.
static int compare_ranked(const void *pa, const void *pb) {
  const ranked_p_t *a = pa, *b = pb;
  bool a_nan = isnan(a->p), b_nan = isnan(b->p);
  if (a_nan != b_nan) {
    return a_nan ? 1 : -1;
  }
  if (!a_nan && a->p != b->p) {
    return a->p < b->p ? -1 : 1;
  }
  return (a->index > b->index) - (a->index < b->index);
}

#define HOLM_STACK_N 256

void wm_stats_holm(const double *p, size_t n, double *adjusted) {
  if (n == 0) {
    return;
  }
  WM_ASSERT(p && adjusted);
  ranked_p_t stack[HOLM_STACK_N];
  ranked_p_t *r = stack;
  if (n > HOLM_STACK_N) {
    r = wm_calloc(n, sizeof(ranked_p_t));
    if (!r) {
      // No way to report the failure: claim nothing is significant.
      wm_log(WM_LOG_WARN, "holm adjustment of %zu p-values: out of memory", n);
      for (size_t i = 0; i < n; i++) {
        adjusted[i] = 1;
      }
      return;
    }
  }
  for (size_t i = 0; i < n; i++) {
    r[i] = (ranked_p_t){p[i], i};
  }
  qsort(r, n, sizeof(ranked_p_t), compare_ranked);
  // |adjusted| may be |p|: every p-value was copied into |r| above.
  double running = 0;
  for (size_t j = 0; j < n; j++) {
    double v = (double)(n - j) * r[j].p;
    if (!(v < 1)) {  // also NaN
      v = 1;
    }
    if (v > running) {
      running = v;
    }
    adjusted[r[j].index] = running;
  }
  if (r != stack) {
    free(r);
  }
}

// ----------------------------------------------------------- bootstrap

// xoshiro256** seeded by splitmix64 (Blackman and Vigna): the same seed
// gives the same stream on every platform, so an interval is reproducible.
typedef struct rng {
  uint64_t s[4];
} rng_t;

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static void rng_seed(rng_t *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) {
    r->s[i] = splitmix64(&seed);
  }
}

static uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(rng_t *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

// A uniform integer in [0, n), n >= 1, without modulo bias: draws at or
// above the largest multiple of n below 2^64 are redrawn.
static size_t rng_below(rng_t *r, size_t n) {
  uint64_t m = (uint64_t)n;
  uint64_t rem = (UINT64_MAX % m + 1) % m;  // 2^64 mod n
  uint64_t x;
  do {
    x = rng_next(r);
  } while (rem != 0 && x > UINT64_MAX - rem);
  return (size_t)(x % m);
}

// The nearest-rank median of |n| draws with replacement from ascending
// |sorted|: the draws are counted per position, and the median is the
// value where the running count reaches rank ceil(n / 2).
static double resample_median(rng_t *r, const double *sorted, size_t n,
                              size_t *counts) {
  memset(counts, 0, n * sizeof(size_t));
  for (size_t i = 0; i < n; i++) {
    counts[rng_below(r, n)]++;
  }
  size_t k = wm_stats_rank(n, 0.5), seen = 0;
  for (size_t i = 0; i < n; i++) {
    seen += counts[i];
    if (seen >= k) {
      return sorted[i];
    }
  }
  return sorted[n - 1];
}

wm_status_t wm_stats_bootstrap_ratio(const double *a, size_t na,
                                     const double *b, size_t nb,
                                     size_t resamples, double level,
                                     uint64_t seed, double *out_lo,
                                     double *out_hi) {
  WM_ASSERT(out_lo && out_hi);
  *out_lo = *out_hi = 0;
  if (na == 0 || nb == 0) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "bootstrap: sample %s has 0 values, want at least 1",
                    na == 0 ? "a" : "b");
  }
  if (resamples == 0) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "bootstrap: 0 resamples, want at least 1");
  }
  if (!(level > 0 && level < 1)) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "bootstrap: confidence level %g is outside (0, 1)", level);
  }
  WM_ASSERT(a && b);
  for (size_t i = 0; i < na; i++) {
    if (!(isfinite(a[i]) && a[i] > 0)) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "bootstrap: sample a value %zu is %g, want a finite "
                      "number > 0 (it divides)",
                      i, a[i]);
    }
  }
  WM_RETURN_IF_ERROR(check_finite("bootstrap: sample b", b, nb));

  wm_status_t status = NULL;
  double *sa = NULL, *sb = NULL, *ratios = NULL;
  size_t *counts = NULL;
  status = sorted_copy("bootstrap: sample a", a, na, &sa);
  if (status) {
    goto done;
  }
  status = sorted_copy("bootstrap: sample b", b, nb, &sb);
  if (status) {
    goto done;
  }
  counts = wm_calloc(na > nb ? na : nb, sizeof(size_t));
  ratios = wm_calloc(resamples, sizeof(double));
  if (!counts || !ratios) {
    status = WM_ERROR(RESOURCE_EXHAUSTED,
                      "bootstrap: %zu resamples of %zu and %zu values: out "
                      "of memory",
                      resamples, na, nb);
    goto done;
  }
  rng_t rng;
  rng_seed(&rng, seed);
  for (size_t i = 0; i < resamples; i++) {
    double ma = resample_median(&rng, sa, na, counts);
    double mb = resample_median(&rng, sb, nb, counts);
    ratios[i] = mb / ma;
  }
  qsort(ratios, resamples, sizeof(double), compare_double);
  *out_lo = wm_stats_percentile(ratios, resamples, (1 - level) / 2);
  *out_hi = wm_stats_percentile(ratios, resamples, (1 + level) / 2);
done:
  free(ratios);
  free(counts);
  free(sb);
  free(sa);
  return status;
}
