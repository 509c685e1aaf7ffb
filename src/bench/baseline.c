// The baseline: its figures from the samples (finish), its JSON
// ("wmap.baseline/1", written with wm_strbuf, read with cJSON) and its
// lifetime. docs/baseline-format.md is the contract.
#include <cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "wmap/bench.h"

// Sanity bounds on what a file may hold; the JSON text bounds every
// allocation anyway, these keep a hostile file from taking absurd sizes.
#define MAX_SAMPLES 100000000.0  // over all configurations
#define MAX_CONFIGS 4096.0
#define MAX_BLOCKS 1000000.0  // per configuration
#define MAX_BACKENDS 256.0
#define MAX_WARNINGS 256.0
#define MAX_OPS 10000000.0
#define MAX_I32 2147483647.0
#define MAX_U32 4294967295.0
// Integers beyond 2^53 are not exact in a double.
#define MAX_EXACT 9007199254740992.0
// The longest time a file may state: 2^53 ns (104 days); a larger one
// (1e308 ns) is a broken or forged file, never a measurement.
#define MAX_NS MAX_EXACT
// A baseline file read whole; 1e8 samples fit below it.
#define BASELINE_MAX_BYTES ((size_t)1 << 30)

// What "method.warmup" says; the runner's rule (docs/baseline-format.md).
#define WARMUP_RULE "at least 1 iteration and at least 10% of min_time_s"

// ----------------------------------------------------------- lifetime

wm_status_t wm_baseline_create(wm_baseline_t **out) {
  *out = NULL;
  wm_baseline_t *b = wm_calloc(1, sizeof(*b));
  if (!b) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for a baseline");
  }
  wm_arena_init(&b->arena);
  *out = b;
  return NULL;
}

void wm_baseline_destroy(wm_baseline_t *baseline) {
  if (!baseline) {
    return;
  }
  wm_arena_deinit(&baseline->arena);
  free(baseline);
}

// ------------------------------------------------------------- finish

static wm_status_t oom(void) {
  return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
}

// Returns |n| zeroed elements of |elem| bytes from |arena| (NULL on
// overflow or failure; a valid pointer for n = 0 is not needed).
static void *arena_array(wm_arena_t *arena, size_t n, size_t elem) {
  size_t bytes;
  if (!wm_checked_mul(n, elem, &bytes)) {
    return NULL;
  }
  return wm_arena_alloc(arena, bytes);
}

// Returns |n| doubles from the heap (NULL on overflow or failure).
static double *heap_doubles(size_t n) {
  size_t bytes;
  if (!wm_checked_mul(n, sizeof(double), &bytes)) {
    return NULL;
  }
  return wm_malloc(bytes);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// Block figures from |blk|'s samples; |scratch| holds blk->n doubles and
// is left holding them sorted.
static wm_status_t finish_block(wm_bench_block_t *blk, double *scratch) {
  if (blk->n == 0 || !blk->samples) {
    return WM_ERROR(INVALID_ARGUMENT, "block %d has no samples",
                    (int)blk->index);
  }
  double sum = 0;
  for (size_t i = 0; i < blk->n; i++) {
    double v = blk->samples[i];
    if (!isfinite(v)) {
      return WM_ERROR(INVALID_ARGUMENT, "block %d: sample %zu is %g",
                      (int)blk->index, i, v);
    }
    sum += v;
    scratch[i] = v;
  }
  qsort(scratch, blk->n, sizeof(double), cmp_double);
  blk->median_ns = wm_stats_percentile(scratch, blk->n, 0.5);
  blk->mean_ns = sum / (double)blk->n;
  blk->min_ns = scratch[0];
  blk->max_ns = scratch[blk->n - 1];
  return NULL;
}

// True when block 0's median is more than 10 % above the median of the
// other blocks' medians (|tmp| holds n_blocks doubles).
static bool first_block_slow(const wm_bench_config_t *c, double *tmp) {
  if (c->n_blocks < 2) {
    return false;
  }
  const wm_bench_block_t *first = NULL;
  size_t n = 0;
  for (size_t i = 0; i < c->n_blocks; i++) {
    if (c->blocks[i].index == 0 && !first) {
      first = &c->blocks[i];
    } else {
      tmp[n++] = c->blocks[i].median_ns;
    }
  }
  if (!first || n == 0) {
    return false;
  }
  qsort(tmp, n, sizeof(double), cmp_double);
  return first->median_ns > 1.10 * wm_stats_percentile(tmp, n, 0.5);
}

static wm_status_t set_warnings(wm_arena_t *arena, wm_bench_config_t *c,
                                double *tmp) {
  const char *w[4];
  size_t n = 0;
  if (c->latency.cv > 0.10) {
    w[n++] = "cv>10%";
  }
  if (first_block_slow(c, tmp)) {
    w[n++] = "first_block_slow";
  }
  if (c->n_blocks < 5) {
    w[n++] = "few_blocks";
  }
  if (c->above_roof > 0) {
    w[n++] = "peak_exceeded";
  }
  c->n_warnings = 0;
  c->warnings = NULL;
  if (n == 0) {
    return NULL;
  }
  const char **list = arena_array(arena, n, sizeof(*list));
  if (!list) {
    return oom();
  }
  for (size_t i = 0; i < n; i++) {
    if (!(list[i] = wm_arena_strdup(arena, w[i]))) {
      return oom();
    }
  }
  c->warnings = list;
  c->n_warnings = n;
  return NULL;
}

static double ratio_or_zero(double num, double den) {
  return num > 0 && den > 0 ? num / den : 0.0;
}

// The nodes that ran faster than their roofline time allows: an
// efficiency above 1 says the peak the profile used is too low.
static void peak_check(wm_bench_config_t *c) {
  c->above_roof = 0;
  c->max_efficiency = 0;
  c->max_node = NULL;
  for (size_t i = 0; i < c->n_ops; i++) {
    const wm_bench_op_t *op = &c->ops[i];
    if (!isfinite(op->efficiency)) {
      continue;
    }
    c->above_roof += op->efficiency > 1.0;
    if (op->efficiency > c->max_efficiency) {
      c->max_efficiency = op->efficiency;
      c->max_node = op->node;
    }
  }
}

// Shares and efficiencies of the profile; op types aggregated from the
// ops when the runner gave none.
static wm_status_t finish_profile(wm_arena_t *arena, wm_bench_config_t *c) {
  if (c->n_ops == 0) {
    return NULL;
  }
  double total = 0;
  for (size_t i = 0; i < c->n_ops; i++) {
    if (c->ops[i].mean_ns > 0) {
      total += c->ops[i].mean_ns;
    }
  }
  for (size_t i = 0; i < c->n_ops; i++) {
    wm_bench_op_t *op = &c->ops[i];
    op->share = ratio_or_zero(op->mean_ns, total);
    op->efficiency = ratio_or_zero(op->t_roof_ns, op->mean_ns);
  }
  peak_check(c);
  if (c->n_op_types > 0) {
    return NULL;
  }
  wm_bench_op_type_t *types = arena_array(arena, c->n_ops, sizeof(*types));
  if (!types) {
    return oom();
  }
  wm_strmap_t index;
  wm_strmap_init(&index);
  size_t n = 0;
  for (size_t i = 0; i < c->n_ops; i++) {
    const wm_bench_op_t *op = &c->ops[i];
    const char *name = op->op_type ? op->op_type : "";
    int64_t at;
    if (!wm_strmap_get(&index, name, &at)) {
      wm_status_t s = wm_strmap_put(&index, name, (int64_t)n);
      if (s) {
        wm_strmap_deinit(&index);
        return s;
      }
      at = (int64_t)n;
      types[n++].op_type = name;
    }
    wm_bench_op_type_t *t = &types[at];
    t->count++;
    t->mean_ns += op->mean_ns;
    t->t_roof_ns += op->t_roof_ns;
  }
  wm_strmap_deinit(&index);
  for (size_t i = 0; i < n; i++) {
    types[i].share = ratio_or_zero(types[i].mean_ns, total);
    types[i].efficiency = ratio_or_zero(types[i].t_roof_ns, types[i].mean_ns);
  }
  // Insertion sort: largest time first, ties in order of appearance.
  for (size_t i = 1; i < n; i++) {
    wm_bench_op_type_t t = types[i];
    size_t j = i;
    for (; j > 0 && types[j - 1].mean_ns < t.mean_ns; j--) {
      types[j] = types[j - 1];
    }
    types[j] = t;
  }
  c->op_types = types;
  c->n_op_types = n;
  return NULL;
}

static wm_status_t finish_config(wm_baseline_t *b, wm_bench_config_t *c) {
  size_t total = 0;
  for (size_t i = 0; i < c->n_blocks; i++) {
    if (!wm_checked_add(total, c->blocks[i].n, &total)) {
      return WM_ERROR(INVALID_ARGUMENT, "too many samples");
    }
  }
  if (total == 0) {
    return WM_ERROR(INVALID_ARGUMENT, "no samples");
  }
  double *all = heap_doubles(total);
  double *tmp = heap_doubles(c->n_blocks);
  wm_status_t s = NULL;
  if (!all || !tmp) {
    s = oom();
    goto done;
  }
  size_t at = 0;
  for (size_t i = 0; i < c->n_blocks && !s; i++) {
    s = finish_block(&c->blocks[i], all + at);
    at += c->blocks[i].n;
  }
  if (s) {
    goto done;
  }
  if ((s = wm_stats_compute(all, total, &c->latency)) != NULL) {
    goto done;
  }
  c->inferences_per_s = 1e9 / c->latency.median;
  c->gflops = b->model_flops > 0 ? b->model_flops / c->latency.median : 0.0;
  if ((s = finish_profile(&b->arena, c)) != NULL) {
    goto done;
  }
  s = set_warnings(&b->arena, c, tmp);
done:
  free(all);
  free(tmp);
  return s;
}

static bool same_backends(const wm_bench_config_t *a,
                          const wm_bench_config_t *b) {
  if (a->n_backends != b->n_backends) {
    return false;
  }
  for (size_t i = 0; i < a->n_backends; i++) {
    const char *x = a->backends[i] ? a->backends[i] : "";
    const char *y = b->backends[i] ? b->backends[i] : "";
    if (strcmp(x, y) != 0) {
      return false;
    }
  }
  return true;
}

// Strong scaling against the configuration with the same backends at the
// fewest threads (the first of those on a tie).
static void finish_scaling(wm_baseline_t *b) {
  for (size_t i = 0; i < b->n_configs; i++) {
    wm_bench_config_t *c = &b->configs[i];
    const wm_bench_config_t *base = c;
    for (size_t j = 0; j < b->n_configs; j++) {
      const wm_bench_config_t *o = &b->configs[j];
      if (o->threads < base->threads && same_backends(o, c)) {
        base = o;
      }
    }
    c->has_scaling = base->threads < c->threads;
    c->base_threads = c->has_scaling ? base->threads : 0;
    c->speedup = 0;
    c->efficiency = 0;
    if (c->has_scaling) {
      c->speedup = base->latency.median / c->latency.median;
      c->efficiency = c->speedup * base->threads / c->threads;
    }
  }
}

wm_status_t wm_baseline_finish(wm_baseline_t *b) {
  for (size_t i = 0; i < b->n_configs; i++) {
    wm_bench_config_t *c = &b->configs[i];
    wm_status_t s = finish_config(b, c);
    if (s) {
      return wm_status_annotate(s, "configuration \"%s\"",
                                c->label ? c->label : "");
    }
  }
  finish_scaling(b);
  return NULL;
}

// --------------------------------------------------------------- JSON

// A number: integers exactly, others with 6 significant digits, null when
// not finite. A value whose 6 digits make an integer is written as that
// integer, so that writing what was read gives the same text.
static void num(wm_strbuf_t *o, double v) {
  if (!isfinite(v)) {
    wm_strbuf_printf(o, "null");
    return;
  }
  if (v != floor(v)) {
    char text[32];
    snprintf(text, sizeof(text), "%.6g", v);
    double r = strtod(text, NULL);
    if (r != floor(r)) {
      wm_strbuf_printf(o, "%s", text);
      return;
    }
    v = r;
  }
  if (fabs(v) < MAX_EXACT) {
    wm_strbuf_printf(o, "%.0f", v);
  } else {
    wm_strbuf_printf(o, "%.6g", v);
  }
}

static void str(wm_strbuf_t *o, const char *s) {
  wm_strbuf_json_string(o, s ? s : "");
}

static void key(wm_strbuf_t *o, const char *name) {
  wm_strbuf_json_string(o, name ? name : "");
  wm_strbuf_append(o, ": ", 2);
}

static void knum(wm_strbuf_t *o, const char *name, double v) {
  key(o, name);
  num(o, v);
}

static void kstr(wm_strbuf_t *o, const char *name, const char *v) {
  key(o, name);
  str(o, v);
}

static void kbool(wm_strbuf_t *o, const char *name, bool v) {
  key(o, name);
  wm_strbuf_printf(o, "%s", v ? "true" : "false");
}

static void sep(wm_strbuf_t *o) {
  wm_strbuf_append(o, ", ", 2);
}

// A newline and |depth| levels of indentation.
static void nl(wm_strbuf_t *o, int depth) {
  wm_strbuf_printf(o, "\n%*s", 2 * depth, "");
}

// True when |s| is a decimal integer that a JSON number keeps exactly.
static bool is_exact_integer(const char *s) {
  if (!s || !*s) {
    return false;
  }
  char *end;
  long long v = strtoll(s, &end, 10);
  if (*end || v <= -(long long)MAX_EXACT || v >= (long long)MAX_EXACT) {
    return false;
  }
  char back[32];
  snprintf(back, sizeof(back), "%lld", v);
  return strcmp(back, s) == 0;
}

// {"k": "v", ...}; dims as numbers when they are integers.
static void kv_object(wm_strbuf_t *o, const wm_bench_kv_t *kv, size_t n,
                      bool numbers) {
  wm_strbuf_printf(o, "{");
  for (size_t i = 0; i < n; i++) {
    if (i) {
      sep(o);
    }
    key(o, kv[i].key);
    if (numbers && is_exact_integer(kv[i].value)) {
      wm_strbuf_printf(o, "%s", kv[i].value);
    } else {
      str(o, kv[i].value);
    }
  }
  wm_strbuf_printf(o, "}");
}

static void env_object(wm_strbuf_t *o, const wm_env_t *env, bool critical,
                       int depth) {
  wm_strbuf_printf(o, "{");
  bool any = false;
  for (size_t i = 0; i < env->n && i < WM_ENV_MAX_FIELDS; i++) {
    const wm_env_field_t *f = &env->fields[i];
    if (f->critical != critical) {
      continue;
    }
    wm_strbuf_printf(o, "%s", any ? "," : "");
    any = true;
    nl(o, depth + 1);
    key(o, f->key);
    str(o, f->value);
  }
  if (any) {
    nl(o, depth);
  }
  wm_strbuf_printf(o, "}");
}

static void latency_json(wm_strbuf_t *o, const wm_stats_t *l) {
  wm_strbuf_printf(o, "{\"n\": %zu, ", l->n);
  knum(o, "min_ns", l->min);
  sep(o);
  knum(o, "max_ns", l->max);
  sep(o);
  knum(o, "mean_ns", l->mean);
  sep(o);
  knum(o, "sd_ns", l->sd);
  sep(o);
  knum(o, "cv", l->cv);
  sep(o);
  knum(o, "median_ns", l->median);
  sep(o);
  knum(o, "mad_ns", l->mad);
  sep(o);
  knum(o, "iqr_ns", l->iqr);
  sep(o);
  knum(o, "p50_ns", l->p50);
  sep(o);
  knum(o, "p90_ns", l->p90);
  sep(o);
  knum(o, "p95_ns", l->p95);
  sep(o);
  knum(o, "p99_ns", l->p99);
  sep(o);
  knum(o, "p999_ns", l->p999);
  wm_strbuf_printf(o, ", \"supported\": {");
  kbool(o, "p90", l->p90_ok);
  sep(o);
  kbool(o, "p95", l->p95_ok);
  sep(o);
  kbool(o, "p99", l->p99_ok);
  sep(o);
  kbool(o, "p999", l->p999_ok);
  wm_strbuf_printf(o, "}, \"outliers\": {\"mild\": %zu, \"severe\": %zu}}",
                   l->outliers_mild, l->outliers_severe);
}

static void block_json(wm_strbuf_t *o, const wm_bench_block_t *k) {
  wm_strbuf_printf(o, "{\"index\": %d, \"order\": %d, \"n\": %zu, ",
                   (int)k->index, (int)k->order, k->n);
  knum(o, "median_ns", k->median_ns);
  sep(o);
  knum(o, "mean_ns", k->mean_ns);
  sep(o);
  knum(o, "min_ns", k->min_ns);
  sep(o);
  knum(o, "max_ns", k->max_ns);
  wm_strbuf_printf(o, "}");
}

static void samples_json(wm_strbuf_t *o, const wm_bench_block_t *k) {
  wm_strbuf_printf(o, "[");
  for (size_t i = 0; i < k->n; i++) {
    double v = k->samples[i];
    if (isfinite(v)) {
      wm_strbuf_printf(o, i ? ", %.0f" : "%.0f", v);
    } else {
      wm_strbuf_printf(o, i ? ", null" : "null");
    }
  }
  wm_strbuf_printf(o, "]");
}

static void op_json(wm_strbuf_t *o, const wm_bench_op_t *op) {
  wm_strbuf_printf(o, "{");
  kstr(o, "node", op->node);
  sep(o);
  kstr(o, "op_type", op->op_type);
  sep(o);
  kstr(o, "backend", op->backend);
  sep(o);
  knum(o, "mean_ns", op->mean_ns);
  sep(o);
  knum(o, "share", op->share);
  sep(o);
  knum(o, "t_roof_ns", op->t_roof_ns);
  sep(o);
  knum(o, "efficiency", op->efficiency);
  wm_strbuf_printf(o, ", \"above_roof\": %s}",
                   op->efficiency > 1.0 ? "true" : "false");
}

static void op_type_json(wm_strbuf_t *o, const wm_bench_op_type_t *t) {
  wm_strbuf_printf(o, "{");
  kstr(o, "op_type", t->op_type);
  wm_strbuf_printf(o, ", \"count\": %zu, ", t->count);
  knum(o, "mean_ns", t->mean_ns);
  sep(o);
  knum(o, "share", t->share);
  sep(o);
  knum(o, "t_roof_ns", t->t_roof_ns);
  sep(o);
  knum(o, "efficiency", t->efficiency);
  wm_strbuf_printf(o, "}");
}

// The "results" object of |c|; its members at |depth| + 1.
static void results_json(wm_strbuf_t *o, const wm_bench_config_t *c,
                         int depth) {
  int d = depth + 1;
  wm_strbuf_printf(o, "{");
  nl(o, d);
  key(o, "latency");
  latency_json(o, &c->latency);
  wm_strbuf_printf(o, ",");
  nl(o, d);
  key(o, "blocks");
  wm_strbuf_printf(o, "[");
  for (size_t i = 0; i < c->n_blocks; i++) {
    wm_strbuf_printf(o, "%s", i ? "," : "");
    nl(o, d + 1);
    block_json(o, &c->blocks[i]);
  }
  if (c->n_blocks) {
    nl(o, d);
  }
  wm_strbuf_printf(o, "],");
  nl(o, d);
  key(o, "samples_ns");
  wm_strbuf_printf(o, "[");
  for (size_t i = 0; i < c->n_blocks; i++) {
    wm_strbuf_printf(o, "%s", i ? "," : "");
    nl(o, d + 1);
    samples_json(o, &c->blocks[i]);
  }
  if (c->n_blocks) {
    nl(o, d);
  }
  wm_strbuf_printf(o, "],");
  nl(o, d);
  key(o, "throughput");
  wm_strbuf_printf(o, "{");
  knum(o, "inferences_per_s", c->inferences_per_s);
  sep(o);
  knum(o, "gflops", c->gflops);
  wm_strbuf_printf(o, "},");
  nl(o, d);
  key(o, "scaling");
  if (c->has_scaling) {
    wm_strbuf_printf(o, "{\"base_threads\": %u, ", (unsigned)c->base_threads);
    knum(o, "speedup", c->speedup);
    sep(o);
    knum(o, "efficiency", c->efficiency);
    wm_strbuf_printf(o, "},");
  } else {
    wm_strbuf_printf(o, "null,");
  }
  nl(o, d);
  key(o, "warnings");
  wm_strbuf_printf(o, "[");
  for (size_t i = 0; i < c->n_warnings; i++) {
    if (i) {
      sep(o);
    }
    str(o, c->warnings[i]);
  }
  wm_strbuf_printf(o, "],");
  nl(o, d);
  key(o, "peak_check");
  if (c->n_ops) {
    wm_strbuf_printf(o, "{\"above_roof\": %zu, ", c->above_roof);
    knum(o, "max_efficiency", c->max_efficiency);
    wm_strbuf_printf(o, ", ");
    kstr(o, "max_node", c->max_node ? c->max_node : "");
    wm_strbuf_printf(o, ", \"peak_too_low\": %s},",
                     c->above_roof ? "true" : "false");
  } else {
    wm_strbuf_printf(o, "null,");
  }
  nl(o, d);
  key(o, "profile");
  if (c->n_ops) {
    wm_strbuf_printf(o, "[");
    for (size_t i = 0; i < c->n_ops; i++) {
      wm_strbuf_printf(o, "%s", i ? "," : "");
      nl(o, d + 1);
      op_json(o, &c->ops[i]);
    }
    nl(o, d);
    wm_strbuf_printf(o, "],");
  } else {
    wm_strbuf_printf(o, "null,");
  }
  nl(o, d);
  key(o, "profile_by_type");
  if (c->n_op_types) {
    wm_strbuf_printf(o, "[");
    for (size_t i = 0; i < c->n_op_types; i++) {
      wm_strbuf_printf(o, "%s", i ? "," : "");
      nl(o, d + 1);
      op_type_json(o, &c->op_types[i]);
    }
    nl(o, d);
    wm_strbuf_printf(o, "]");
  } else {
    wm_strbuf_printf(o, "null");
  }
  nl(o, depth);
  wm_strbuf_printf(o, "}");
}

static void config_json(wm_strbuf_t *o, const wm_bench_config_t *c, int depth) {
  int d = depth + 1;
  wm_strbuf_printf(o, "{");
  nl(o, d);
  kstr(o, "label", c->label);
  wm_strbuf_printf(o, ",");
  nl(o, d);
  key(o, "backends");
  wm_strbuf_printf(o, "[");
  for (size_t i = 0; i < c->n_backends; i++) {
    if (i) {
      sep(o);
    }
    str(o, c->backends[i]);
  }
  wm_strbuf_printf(o, "],");
  nl(o, d);
  wm_strbuf_printf(o, "\"threads\": %u,", (unsigned)c->threads);
  nl(o, d);
  key(o, "backend_versions");
  kv_object(o, c->versions, c->n_versions, false);
  wm_strbuf_printf(o, ",");
  nl(o, d);
  key(o, "results");
  results_json(o, c, d);
  nl(o, depth);
  wm_strbuf_printf(o, "}");
}

void wm_baseline_to_json(const wm_baseline_t *b, wm_strbuf_t *o) {
  wm_strbuf_printf(o, "{");
  nl(o, 1);
  kstr(o, "format", WM_BASELINE_FORMAT);
  wm_strbuf_printf(o, ",");
  nl(o, 1);
  kstr(o, "created_utc", b->created_utc);
  wm_strbuf_printf(o, ",");
  nl(o, 1);
  wm_strbuf_printf(o, "\"tool\": {\"name\": \"wmap\", ");
  kstr(o, "version", b->tool_version);
  sep(o);
  kstr(o, "git", b->tool_git);
  sep(o);
  kstr(o, "build_type", b->build_type);
  wm_strbuf_printf(o, "},");
  nl(o, 1);
  wm_strbuf_printf(o, "\"model\": {");
  kstr(o, "name", b->model_name);
  sep(o);
  kstr(o, "sha256", b->model_sha256);
  sep(o);
  key(o, "dims");
  kv_object(o, b->dims, b->n_dims, true);
  sep(o);
  knum(o, "flops", b->model_flops);
  wm_strbuf_printf(o, "},");
  nl(o, 1);
  wm_strbuf_printf(o, "\"method\": {\"blocks\": %d, ", (int)b->blocks);
  knum(o, "min_time_s", b->min_time_s);
  wm_strbuf_printf(o, ", \"min_iters\": %d, ", (int)b->min_iters);
  kstr(o, "warmup", WARMUP_RULE);
  wm_strbuf_printf(o,
                   ", \"percentile\": \"nearest_rank\", "
                   "\"interleaved\": true, \"blocks_in\": \"%s\", \"unit\": "
                   "\"ns\"},",
                   b->in_process ? "this_process" : "fresh_process");
  nl(o, 1);
  wm_strbuf_printf(o, "\"environment\": {");
  nl(o, 2);
  kstr(o, "fingerprint", b->env.fingerprint);
  wm_strbuf_printf(o, ",");
  nl(o, 2);
  key(o, "critical");
  env_object(o, &b->env, true, 2);
  wm_strbuf_printf(o, ",");
  nl(o, 2);
  key(o, "volatile");
  env_object(o, &b->env, false, 2);
  nl(o, 1);
  wm_strbuf_printf(o, "},");
  nl(o, 1);
  key(o, "configurations");
  wm_strbuf_printf(o, "[");
  for (size_t i = 0; i < b->n_configs; i++) {
    wm_strbuf_printf(o, "%s", i ? "," : "");
    nl(o, 2);
    config_json(o, &b->configs[i], 2);
  }
  if (b->n_configs) {
    nl(o, 1);
  }
  wm_strbuf_printf(o, "],");
  nl(o, 1);
  key(o, "results");
  if (b->n_configs) {
    results_json(o, &b->configs[0], 1);
  } else {
    wm_strbuf_printf(o, "null");
  }
  wm_strbuf_printf(o, "\n}\n");
}

// --------------------------------------------------------------- load

// Every reader names the member by its path from the document's root,
// e.g. configurations[1].results.blocks[0].n.

// Writes a member path; a path too long for |cap| is cut (it only names
// the member in a message).
static void path_fmt(char *dst, size_t cap, const char *fmt, ...)
    WM_PRINTF(3, 4);
static void path_fmt(char *dst, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(dst, cap, fmt, ap);
  va_end(ap);
}

static void join(char *dst, size_t cap, const char *where, const char *name) {
  if (*where) {
    path_fmt(dst, cap, "%s.%s", where, name);
  } else {
    path_fmt(dst, cap, "%s", name);
  }
}

static void join_index(char *dst, size_t cap, const char *where, size_t i) {
  path_fmt(dst, cap, "%s[%zu]", where, i);
}

static wm_status_t item(const cJSON *obj, const char *where, const char *name,
                        const cJSON **out) {
  *out = cJSON_GetObjectItemCaseSensitive(obj, name);
  if (!*out) {
    char path[256];
    join(path, sizeof(path), where, name);
    return WM_ERROR(DATA_LOSS, "%s is missing", path);
  }
  return NULL;
}

static wm_status_t typed(const char *path, bool ok, const char *what) {
  return ok ? NULL : WM_ERROR(DATA_LOSS, "%s is not %s", path, what);
}

// obj[name] as an object (or NULL when |nullable| and it is null).
static wm_status_t get_object(const cJSON *obj, const char *where,
                              const char *name, bool nullable,
                              const cJSON **out) {
  WM_RETURN_IF_ERROR(item(obj, where, name, out));
  if (nullable && cJSON_IsNull(*out)) {
    *out = NULL;
    return NULL;
  }
  char path[256];
  join(path, sizeof(path), where, name);
  return typed(path, cJSON_IsObject(*out), "an object");
}

// obj[name] as an array of at most |max| items (NULL when |nullable| and
// null).
static wm_status_t get_array(const cJSON *obj, const char *where,
                             const char *name, bool nullable, double max,
                             const cJSON **out, size_t *out_n) {
  *out_n = 0;
  WM_RETURN_IF_ERROR(item(obj, where, name, out));
  if (nullable && cJSON_IsNull(*out)) {
    *out = NULL;
    return NULL;
  }
  char path[256];
  join(path, sizeof(path), where, name);
  WM_RETURN_IF_ERROR(typed(path, cJSON_IsArray(*out), "an array"));
  int n = cJSON_GetArraySize(*out);
  if ((double)n > max) {
    return WM_ERROR(DATA_LOSS, "%s has %d items, at most %.0f allowed", path, n,
                    max);
  }
  *out_n = (size_t)n;
  return NULL;
}

// A string value at |path| copied into |arena|.
static wm_status_t string_value(wm_arena_t *arena, const cJSON *v,
                                const char *path, const char **out) {
  WM_RETURN_IF_ERROR(
      typed(path, cJSON_IsString(v) && v->valuestring, "a string"));
  if (!(*out = wm_arena_strdup(arena, v->valuestring))) {
    return oom();
  }
  return NULL;
}

static wm_status_t get_string(wm_arena_t *arena, const cJSON *obj,
                              const char *where, const char *name,
                              const char **out) {
  const cJSON *v;
  WM_RETURN_IF_ERROR(item(obj, where, name, &v));
  char path[256];
  join(path, sizeof(path), where, name);
  return string_value(arena, v, path, out);
}

// A number at |path|; null reads as NaN when |nullable| (non-finite
// figures are written as null).
static wm_status_t number_value(const cJSON *v, const char *path, bool nullable,
                                double *out) {
  if (nullable && cJSON_IsNull(v)) {
    *out = NAN;
    return NULL;
  }
  WM_RETURN_IF_ERROR(typed(path, cJSON_IsNumber(v), "a number"));
  if (!isfinite(v->valuedouble)) {
    return WM_ERROR(DATA_LOSS, "%s is not finite", path);
  }
  *out = v->valuedouble;
  return NULL;
}

static wm_status_t get_number(const cJSON *obj, const char *where,
                              const char *name, bool nullable, double *out) {
  const cJSON *v;
  WM_RETURN_IF_ERROR(item(obj, where, name, &v));
  char path[256];
  join(path, sizeof(path), where, name);
  return number_value(v, path, nullable, out);
}

// A time in ns in [0, MAX_NS] at |path| (null reads as NaN when
// |nullable|).
static wm_status_t ns_value(const cJSON *v, const char *path, bool nullable,
                            double *out) {
  WM_RETURN_IF_ERROR(number_value(v, path, nullable, out));
  if (*out < 0) {
    return WM_ERROR(DATA_LOSS, "%s is %g, want a time >= 0", path, *out);
  }
  if (*out > MAX_NS) {
    return WM_ERROR(DATA_LOSS,
                    "%s is %g, want at most %.0f (2^53 ns, 104 days)", path,
                    *out, MAX_NS);
  }
  return NULL;
}

static wm_status_t get_ns(const cJSON *obj, const char *where, const char *name,
                          bool nullable, double *out) {
  const cJSON *v;
  WM_RETURN_IF_ERROR(item(obj, where, name, &v));
  char path[256];
  join(path, sizeof(path), where, name);
  return ns_value(v, path, nullable, out);
}

// An integer in [lo, hi] at |path|.
static wm_status_t count_value(const cJSON *v, const char *path, double lo,
                               double hi, double *out) {
  WM_RETURN_IF_ERROR(number_value(v, path, false, out));
  if (*out != floor(*out)) {
    return WM_ERROR(DATA_LOSS, "%s is %g, want an integer", path, *out);
  }
  if (*out < lo) {
    return WM_ERROR(DATA_LOSS, "%s is %.0f, want at least %.0f", path, *out,
                    lo);
  }
  if (*out > hi) {
    return WM_ERROR(DATA_LOSS, "%s is %.0f, want at most %.0f", path, *out, hi);
  }
  return NULL;
}

static wm_status_t get_count(const cJSON *obj, const char *where,
                             const char *name, double lo, double hi,
                             double *out) {
  const cJSON *v;
  WM_RETURN_IF_ERROR(item(obj, where, name, &v));
  char path[256];
  join(path, sizeof(path), where, name);
  return count_value(v, path, lo, hi, out);
}

static wm_status_t get_size(const cJSON *obj, const char *where,
                            const char *name, double hi, size_t *out) {
  double v;
  WM_RETURN_IF_ERROR(get_count(obj, where, name, 0, hi, &v));
  *out = (size_t)v;
  return NULL;
}

static wm_status_t get_bool(const cJSON *obj, const char *where,
                            const char *name, bool *out) {
  const cJSON *v;
  WM_RETURN_IF_ERROR(item(obj, where, name, &v));
  char path[256];
  join(path, sizeof(path), where, name);
  WM_RETURN_IF_ERROR(typed(path, cJSON_IsBool(v), "a boolean"));
  *out = cJSON_IsTrue(v);
  return NULL;
}

// When obj[name] is present it must be the string |want|.
static wm_status_t check_constant(const cJSON *obj, const char *where,
                                  const char *name, const char *want) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
  if (!v) {
    return NULL;
  }
  char path[256];
  join(path, sizeof(path), where, name);
  WM_RETURN_IF_ERROR(
      typed(path, cJSON_IsString(v) && v->valuestring, "a string"));
  if (strcmp(v->valuestring, want) != 0) {
    return WM_ERROR(DATA_LOSS, "%s is \"%s\", want \"%s\"", path,
                    v->valuestring, want);
  }
  return NULL;
}

// An object of strings (or, with |numbers|, integers) into key-value
// pairs.
static wm_status_t get_kv(wm_arena_t *arena, const cJSON *obj,
                          const char *where, const char *name, bool numbers,
                          wm_bench_kv_t **out, size_t *out_n) {
  const cJSON *o;
  WM_RETURN_IF_ERROR(get_object(obj, where, name, false, &o));
  char path[256];
  join(path, sizeof(path), where, name);
  size_t n = (size_t)cJSON_GetArraySize(o);
  wm_bench_kv_t *kv = arena_array(arena, n, sizeof(*kv));
  if (n && !kv) {
    return oom();
  }
  size_t i = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, o) {
    char vpath[400];
    path_fmt(vpath, sizeof(vpath), "%s[\"%s\"]", path, v->string);
    if (!(kv[i].key = wm_arena_strdup(arena, v->string))) {
      return oom();
    }
    if (numbers && cJSON_IsNumber(v)) {
      double d = 0;
      WM_RETURN_IF_ERROR(count_value(v, vpath, -MAX_EXACT, MAX_EXACT, &d));
      char text[32];
      snprintf(text, sizeof(text), "%.0f", d);
      if (!(kv[i].value = wm_arena_strdup(arena, text))) {
        return oom();
      }
    } else {
      WM_RETURN_IF_ERROR(string_value(arena, v, vpath, &kv[i].value));
    }
    i++;
  }
  *out = kv;
  *out_n = i;
  return NULL;
}

static bool is_hex64(const char *s) {
  size_t n = 0;
  for (; s[n]; n++) {
    if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) {
      return false;
    }
  }
  return n == 64;
}

// One of "critical" and "volatile" into |env|.
static wm_status_t parse_env_fields(const cJSON *env_obj, const char *name,
                                    bool critical, wm_env_t *env) {
  const cJSON *o;
  WM_RETURN_IF_ERROR(get_object(env_obj, "environment", name, false, &o));
  const cJSON *v;
  cJSON_ArrayForEach(v, o) {
    char path[400];
    path_fmt(path, sizeof(path), "environment.%s[\"%s\"]", name, v->string);
    WM_RETURN_IF_ERROR(
        typed(path, cJSON_IsString(v) && v->valuestring, "a string"));
    if (strlen(v->string) >= sizeof(env->fields[0].key)) {
      return WM_ERROR(DATA_LOSS, "%s: the key is longer than %zu bytes", path,
                      sizeof(env->fields[0].key) - 1);
    }
    if (strlen(v->valuestring) >= sizeof(env->fields[0].value)) {
      return WM_ERROR(DATA_LOSS, "%s is longer than %zu bytes", path,
                      sizeof(env->fields[0].value) - 1);
    }
    for (size_t i = 0; i < env->n; i++) {
      if (strcmp(env->fields[i].key, v->string) == 0) {
        return WM_ERROR(DATA_LOSS, "%s: the field appears twice", path);
      }
    }
    if (env->n == WM_ENV_MAX_FIELDS) {
      return WM_ERROR(DATA_LOSS, "environment has more than %d fields",
                      WM_ENV_MAX_FIELDS);
    }
    wm_env_field_t *f = &env->fields[env->n++];
    snprintf(f->key, sizeof(f->key), "%s", v->string);
    snprintf(f->value, sizeof(f->value), "%s", v->valuestring);
    f->critical = critical;
  }
  return NULL;
}

static wm_status_t parse_env(const cJSON *root, wm_env_t *env) {
  const cJSON *e, *fp;
  WM_RETURN_IF_ERROR(get_object(root, "", "environment", false, &e));
  WM_RETURN_IF_ERROR(item(e, "environment", "fingerprint", &fp));
  WM_RETURN_IF_ERROR(typed("environment.fingerprint",
                           cJSON_IsString(fp) && fp->valuestring, "a string"));
  if (!is_hex64(fp->valuestring)) {
    return WM_ERROR(DATA_LOSS,
                    "environment.fingerprint is \"%.80s\", want 64 lowercase "
                    "hex digits",
                    fp->valuestring);
  }
  snprintf(env->fingerprint, sizeof(env->fingerprint), "%s", fp->valuestring);
  WM_RETURN_IF_ERROR(parse_env_fields(e, "critical", true, env));
  return parse_env_fields(e, "volatile", false, env);
}

static wm_status_t parse_latency(const cJSON *res, const char *where,
                                 wm_stats_t *l) {
  const cJSON *o, *sup, *out;
  WM_RETURN_IF_ERROR(get_object(res, where, "latency", false, &o));
  char p[256];
  join(p, sizeof(p), where, "latency");
  WM_RETURN_IF_ERROR(get_size(o, p, "n", MAX_SAMPLES, &l->n));
  static const char *const names[] = {
      "min_ns", "max_ns", "mean_ns", "sd_ns",  "cv",     "median_ns", "mad_ns",
      "iqr_ns", "p50_ns", "p90_ns",  "p95_ns", "p99_ns", "p999_ns"};
  double *const dst[] = {&l->min,    &l->max, &l->mean, &l->sd,  &l->cv,
                         &l->median, &l->mad, &l->iqr,  &l->p50, &l->p90,
                         &l->p95,    &l->p99, &l->p999};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    if (strcmp(names[i], "cv") == 0) {
      WM_RETURN_IF_ERROR(get_number(o, p, names[i], true, dst[i]));
    } else {
      WM_RETURN_IF_ERROR(get_ns(o, p, names[i], true, dst[i]));
    }
  }
  WM_RETURN_IF_ERROR(get_object(o, p, "supported", false, &sup));
  char q[300];
  join(q, sizeof(q), p, "supported");
  WM_RETURN_IF_ERROR(get_bool(sup, q, "p90", &l->p90_ok));
  // p95 came after the first files of this version: optional.
  l->p95_ok = l->n >= WM_STATS_MIN_P95;
  if (cJSON_GetObjectItemCaseSensitive(sup, "p95")) {
    WM_RETURN_IF_ERROR(get_bool(sup, q, "p95", &l->p95_ok));
  }
  WM_RETURN_IF_ERROR(get_bool(sup, q, "p99", &l->p99_ok));
  WM_RETURN_IF_ERROR(get_bool(sup, q, "p999", &l->p999_ok));
  WM_RETURN_IF_ERROR(get_object(o, p, "outliers", false, &out));
  join(q, sizeof(q), p, "outliers");
  WM_RETURN_IF_ERROR(get_size(out, q, "mild", MAX_SAMPLES, &l->outliers_mild));
  return get_size(out, q, "severe", MAX_SAMPLES, &l->outliers_severe);
}

// Whether |stored| is |computed| as the file writes it (6 significant
// digits; 1e-5 leaves room for another writer's rounding).
static bool same_figure(double stored, double computed) {
  return fabs(stored - computed) <= 1e-5 * fabs(computed);
}

// Refuses block |k| (at |path|, of configuration |label|) whose stated
// median, mean, min or max is not what its samples give: comparisons use
// the block figures, so a file cannot claim other ones.
static wm_status_t check_block(const char *label, const char *path,
                               const wm_bench_block_t *k) {
  wm_bench_block_t c = *k;
  double *scratch = heap_doubles(k->n);
  if (!scratch) {
    return oom();
  }
  wm_status_t s = finish_block(&c, scratch);
  free(scratch);
  WM_RETURN_IF_ERROR(s);
  static const char *const names[] = {"median_ns", "mean_ns", "min_ns",
                                      "max_ns"};
  const double stored[] = {k->median_ns, k->mean_ns, k->min_ns, k->max_ns};
  const double computed[] = {c.median_ns, c.mean_ns, c.min_ns, c.max_ns};
  for (size_t i = 0; i < 4; i++) {
    if (!same_figure(stored[i], computed[i])) {
      return WM_ERROR(DATA_LOSS,
                      "configuration \"%s\" block %d: %s is %.17g but its %zu "
                      "samples give %.17g (%s.%s)",
                      label, (int)k->index, names[i], stored[i], k->n,
                      computed[i], path, names[i]);
    }
  }
  return NULL;
}

// One block's figures and samples, checked against each other; |budget|
// is how many samples the file may still hold.
static wm_status_t parse_block(wm_arena_t *arena, const cJSON *bo,
                               const cJSON *so, const char *where,
                               const char *label, size_t i, size_t *budget,
                               wm_bench_block_t *k) {
  char p[256], sp[256];
  path_fmt(p, sizeof(p), "%s.blocks[%zu]", where, i);
  path_fmt(sp, sizeof(sp), "%s.samples_ns[%zu]", where, i);
  WM_RETURN_IF_ERROR(typed(p, cJSON_IsObject(bo), "an object"));
  double d = 0;
  WM_RETURN_IF_ERROR(get_count(bo, p, "index", 0, MAX_I32, &d));
  k->index = (int32_t)d;
  WM_RETURN_IF_ERROR(get_count(bo, p, "order", 0, MAX_I32, &d));
  k->order = (int32_t)d;
  WM_RETURN_IF_ERROR(get_count(bo, p, "n", 1, MAX_SAMPLES, &d));
  k->n = (size_t)d;
  WM_RETURN_IF_ERROR(get_ns(bo, p, "median_ns", false, &k->median_ns));
  WM_RETURN_IF_ERROR(get_ns(bo, p, "mean_ns", false, &k->mean_ns));
  WM_RETURN_IF_ERROR(get_ns(bo, p, "min_ns", false, &k->min_ns));
  WM_RETURN_IF_ERROR(get_ns(bo, p, "max_ns", false, &k->max_ns));
  WM_RETURN_IF_ERROR(typed(sp, cJSON_IsArray(so), "an array"));
  size_t n = (size_t)cJSON_GetArraySize(so);
  if (n != k->n) {
    return WM_ERROR(DATA_LOSS, "%s has %zu samples, %s.n is %zu", sp, n, p,
                    k->n);
  }
  if (n > *budget) {
    return WM_ERROR(DATA_LOSS, "%s: more than %.0f samples in the file", sp,
                    MAX_SAMPLES);
  }
  *budget -= n;
  if (!(k->samples = arena_array(arena, n, sizeof(double)))) {
    return oom();
  }
  size_t j = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, so) {
    char vp[300];
    join_index(vp, sizeof(vp), sp, j);
    WM_RETURN_IF_ERROR(ns_value(v, vp, false, &k->samples[j]));
    j++;
  }
  return check_block(label, p, k);
}

// The quartiles, which the file leaves out, from the samples.
static wm_status_t quartiles(const char *where, wm_bench_config_t *c) {
  size_t total = 0;
  for (size_t i = 0; i < c->n_blocks; i++) {
    total += c->blocks[i].n;
  }
  if (total != c->latency.n) {
    return WM_ERROR(DATA_LOSS,
                    "%s.latency.n is %zu, the blocks hold %zu samples", where,
                    c->latency.n, total);
  }
  double *all = heap_doubles(total);
  if (!all) {
    return oom();
  }
  size_t at = 0;
  for (size_t i = 0; i < c->n_blocks; i++) {
    memcpy(all + at, c->blocks[i].samples, c->blocks[i].n * sizeof(double));
    at += c->blocks[i].n;
  }
  qsort(all, total, sizeof(double), cmp_double);
  c->latency.q1 = wm_stats_percentile(all, total, 0.25);
  c->latency.q3 = wm_stats_percentile(all, total, 0.75);
  free(all);
  return NULL;
}

static wm_status_t parse_profile(wm_arena_t *arena, const cJSON *res,
                                 const char *where, wm_bench_config_t *c) {
  const cJSON *a, *v;
  size_t n;
  WM_RETURN_IF_ERROR(get_array(res, where, "profile", true, MAX_OPS, &a, &n));
  if (a && n) {
    if (!(c->ops = arena_array(arena, n, sizeof(*c->ops)))) {
      return oom();
    }
    cJSON_ArrayForEach(v, a) {
      wm_bench_op_t *op = &c->ops[c->n_ops];
      char p[256];
      path_fmt(p, sizeof(p), "%s.profile[%zu]", where, c->n_ops);
      WM_RETURN_IF_ERROR(typed(p, cJSON_IsObject(v), "an object"));
      WM_RETURN_IF_ERROR(get_string(arena, v, p, "node", &op->node));
      WM_RETURN_IF_ERROR(get_string(arena, v, p, "op_type", &op->op_type));
      WM_RETURN_IF_ERROR(get_string(arena, v, p, "backend", &op->backend));
      WM_RETURN_IF_ERROR(get_ns(v, p, "mean_ns", true, &op->mean_ns));
      WM_RETURN_IF_ERROR(get_number(v, p, "share", true, &op->share));
      WM_RETURN_IF_ERROR(get_ns(v, p, "t_roof_ns", true, &op->t_roof_ns));
      WM_RETURN_IF_ERROR(get_number(v, p, "efficiency", true, &op->efficiency));
      c->n_ops++;
    }
  }
  WM_RETURN_IF_ERROR(
      get_array(res, where, "profile_by_type", true, MAX_OPS, &a, &n));
  if (a && n) {
    if (!(c->op_types = arena_array(arena, n, sizeof(*c->op_types)))) {
      return oom();
    }
    cJSON_ArrayForEach(v, a) {
      wm_bench_op_type_t *t = &c->op_types[c->n_op_types];
      char p[256];
      path_fmt(p, sizeof(p), "%s.profile_by_type[%zu]", where, c->n_op_types);
      WM_RETURN_IF_ERROR(typed(p, cJSON_IsObject(v), "an object"));
      WM_RETURN_IF_ERROR(get_string(arena, v, p, "op_type", &t->op_type));
      WM_RETURN_IF_ERROR(get_size(v, p, "count", MAX_OPS, &t->count));
      WM_RETURN_IF_ERROR(get_ns(v, p, "mean_ns", true, &t->mean_ns));
      WM_RETURN_IF_ERROR(get_number(v, p, "share", true, &t->share));
      WM_RETURN_IF_ERROR(get_ns(v, p, "t_roof_ns", true, &t->t_roof_ns));
      WM_RETURN_IF_ERROR(get_number(v, p, "efficiency", true, &t->efficiency));
      c->n_op_types++;
    }
  }
  return NULL;
}

static wm_status_t parse_results(wm_arena_t *arena, const cJSON *res,
                                 const char *where, size_t *budget,
                                 wm_bench_config_t *c) {
  WM_RETURN_IF_ERROR(parse_latency(res, where, &c->latency));
  const cJSON *blocks, *samples;
  size_t nb, ns;
  WM_RETURN_IF_ERROR(
      get_array(res, where, "blocks", false, MAX_BLOCKS, &blocks, &nb));
  WM_RETURN_IF_ERROR(
      get_array(res, where, "samples_ns", false, MAX_BLOCKS, &samples, &ns));
  if (nb == 0) {
    return WM_ERROR(DATA_LOSS, "%s.blocks is empty", where);
  }
  if (nb != ns) {
    return WM_ERROR(DATA_LOSS, "%s.samples_ns has %zu blocks, blocks has %zu",
                    where, ns, nb);
  }
  if (!(c->blocks = arena_array(arena, nb, sizeof(*c->blocks)))) {
    return oom();
  }
  const cJSON *bo = blocks->child, *so = samples->child;
  for (size_t i = 0; i < nb; i++, bo = bo->next, so = so->next) {
    WM_RETURN_IF_ERROR(
        parse_block(arena, bo, so, where, c->label, i, budget, &c->blocks[i]));
    c->n_blocks++;
  }
  WM_RETURN_IF_ERROR(quartiles(where, c));
  const cJSON *o;
  char p[256];
  WM_RETURN_IF_ERROR(get_object(res, where, "throughput", false, &o));
  join(p, sizeof(p), where, "throughput");
  WM_RETURN_IF_ERROR(
      get_number(o, p, "inferences_per_s", true, &c->inferences_per_s));
  WM_RETURN_IF_ERROR(get_number(o, p, "gflops", true, &c->gflops));
  WM_RETURN_IF_ERROR(get_object(res, where, "scaling", true, &o));
  if (o) {
    double d = 0;
    join(p, sizeof(p), where, "scaling");
    WM_RETURN_IF_ERROR(get_count(o, p, "base_threads", 1, MAX_U32, &d));
    c->has_scaling = true;
    c->base_threads = (uint32_t)d;
    WM_RETURN_IF_ERROR(get_number(o, p, "speedup", true, &c->speedup));
    WM_RETURN_IF_ERROR(get_number(o, p, "efficiency", true, &c->efficiency));
  }
  const cJSON *w;
  size_t nw;
  WM_RETURN_IF_ERROR(
      get_array(res, where, "warnings", false, MAX_WARNINGS, &w, &nw));
  if (nw) {
    if (!(c->warnings = arena_array(arena, nw, sizeof(*c->warnings)))) {
      return oom();
    }
    const cJSON *v;
    cJSON_ArrayForEach(v, w) {
      join(p, sizeof(p), where, "warnings");
      char vp[300];
      join_index(vp, sizeof(vp), p, c->n_warnings);
      WM_RETURN_IF_ERROR(
          string_value(arena, v, vp, &c->warnings[c->n_warnings]));
      c->n_warnings++;
    }
  }
  WM_RETURN_IF_ERROR(parse_profile(arena, res, where, c));
  // Derived from the profile, not read: a file cannot claim otherwise.
  peak_check(c);
  return NULL;
}

static wm_status_t parse_config(wm_arena_t *arena, const cJSON *co,
                                const char *where, size_t *budget,
                                wm_bench_config_t *c) {
  WM_RETURN_IF_ERROR(typed(where, cJSON_IsObject(co), "an object"));
  WM_RETURN_IF_ERROR(get_string(arena, co, where, "label", &c->label));
  const cJSON *a, *v;
  size_t n;
  WM_RETURN_IF_ERROR(
      get_array(co, where, "backends", false, MAX_BACKENDS, &a, &n));
  if (n == 0) {
    return WM_ERROR(DATA_LOSS, "%s.backends is empty", where);
  }
  if (!(c->backends = arena_array(arena, n, sizeof(*c->backends)))) {
    return oom();
  }
  cJSON_ArrayForEach(v, a) {
    char p[300];
    path_fmt(p, sizeof(p), "%s.backends[%zu]", where, c->n_backends);
    WM_RETURN_IF_ERROR(string_value(arena, v, p, &c->backends[c->n_backends]));
    c->n_backends++;
  }
  double d = 0;
  WM_RETURN_IF_ERROR(get_count(co, where, "threads", 1, MAX_U32, &d));
  c->threads = (uint32_t)d;
  WM_RETURN_IF_ERROR(get_kv(arena, co, where, "backend_versions", false,
                            &c->versions, &c->n_versions));
  const cJSON *res;
  WM_RETURN_IF_ERROR(get_object(co, where, "results", false, &res));
  char p[256];
  join(p, sizeof(p), where, "results");
  return parse_results(arena, res, p, budget, c);
}

static wm_status_t parse_root(const cJSON *root, wm_baseline_t *b) {
  wm_arena_t *arena = &b->arena;
  if (!cJSON_IsObject(root)) {
    return WM_ERROR(DATA_LOSS, "the top level is not an object");
  }
  const cJSON *v;
  WM_RETURN_IF_ERROR(item(root, "", "format", &v));
  WM_RETURN_IF_ERROR(
      typed("format", cJSON_IsString(v) && v->valuestring, "a string"));
  if (strcmp(v->valuestring, WM_BASELINE_FORMAT) != 0) {
    return WM_ERROR(DATA_LOSS, "format is \"%.80s\", want \"%s\"",
                    v->valuestring, WM_BASELINE_FORMAT);
  }
  WM_RETURN_IF_ERROR(
      get_string(arena, root, "", "created_utc", &b->created_utc));
  const cJSON *o;
  const char *ignored;
  WM_RETURN_IF_ERROR(get_object(root, "", "tool", false, &o));
  WM_RETURN_IF_ERROR(get_string(arena, o, "tool", "name", &ignored));
  WM_RETURN_IF_ERROR(get_string(arena, o, "tool", "version", &b->tool_version));
  WM_RETURN_IF_ERROR(get_string(arena, o, "tool", "git", &b->tool_git));
  WM_RETURN_IF_ERROR(
      get_string(arena, o, "tool", "build_type", &b->build_type));
  WM_RETURN_IF_ERROR(get_object(root, "", "model", false, &o));
  WM_RETURN_IF_ERROR(get_string(arena, o, "model", "name", &b->model_name));
  WM_RETURN_IF_ERROR(get_string(arena, o, "model", "sha256", &b->model_sha256));
  WM_RETURN_IF_ERROR(
      get_kv(arena, o, "model", "dims", true, &b->dims, &b->n_dims));
  WM_RETURN_IF_ERROR(get_number(o, "model", "flops", false, &b->model_flops));
  if (b->model_flops < 0) {
    return WM_ERROR(DATA_LOSS, "model.flops is %g, want >= 0", b->model_flops);
  }
  double d = 0;
  WM_RETURN_IF_ERROR(get_object(root, "", "method", false, &o));
  WM_RETURN_IF_ERROR(get_count(o, "method", "blocks", 0, MAX_I32, &d));
  b->blocks = (int32_t)d;
  WM_RETURN_IF_ERROR(
      get_number(o, "method", "min_time_s", false, &b->min_time_s));
  WM_RETURN_IF_ERROR(get_count(o, "method", "min_iters", 0, MAX_I32, &d));
  b->min_iters = (int32_t)d;
  WM_RETURN_IF_ERROR(check_constant(o, "method", "percentile", "nearest_rank"));
  const cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "blocks_in");
  if (in && (!cJSON_IsString(in) ||
             (strcmp(in->valuestring, "this_process") != 0 &&
              strcmp(in->valuestring, "fresh_process") != 0))) {
    return WM_ERROR(DATA_LOSS,
                    "method.blocks_in must be \"fresh_process\" or "
                    "\"this_process\"");
  }
  b->in_process = in && strcmp(in->valuestring, "this_process") == 0;
  WM_RETURN_IF_ERROR(check_constant(o, "method", "unit", "ns"));
  WM_RETURN_IF_ERROR(parse_env(root, &b->env));
  const cJSON *a;
  size_t n;
  WM_RETURN_IF_ERROR(
      get_array(root, "", "configurations", false, MAX_CONFIGS, &a, &n));
  if (n == 0) {
    return WM_ERROR(DATA_LOSS, "configurations is empty");
  }
  if (!(b->configs = arena_array(arena, n, sizeof(*b->configs)))) {
    return oom();
  }
  size_t budget = (size_t)MAX_SAMPLES;
  cJSON_ArrayForEach(v, a) {
    char p[64];
    join_index(p, sizeof(p), "configurations", b->n_configs);
    WM_RETURN_IF_ERROR(
        parse_config(arena, v, p, &budget, &b->configs[b->n_configs]));
    b->n_configs++;
  }
  WM_RETURN_IF_ERROR(get_object(root, "", "results", false, &o));
  const cJSON *first = cJSON_GetObjectItemCaseSensitive(a->child, "results");
  if (!cJSON_Compare(o, first, true)) {
    return WM_ERROR(DATA_LOSS,
                    "results differs from configurations[0].results");
  }
  return NULL;
}

wm_status_t wm_baseline_load(const char *path, wm_baseline_t **out) {
  *out = NULL;
  cJSON *root = NULL;
  WM_RETURN_IF_ERROR(wm_json_load(path, "baseline", BASELINE_MAX_BYTES, &root));
  wm_baseline_t *b = NULL;
  wm_status_t s = wm_baseline_create(&b);
  if (!s) {
    s = parse_root(root, b);
  }
  cJSON_Delete(root);
  if (s) {
    wm_baseline_destroy(b);
    return wm_status_annotate(s, "baseline \"%s\"", path);
  }
  *out = b;
  return NULL;
}
