// The readable reports of a baseline: text (<= 100 columns) and one
// self-contained HTML page. Both show the same tables (built once with
// src/report); the page adds a latency histogram with the CDF and P50/P90/
// P99 markers, a run-order plot with the blocks, the per-op Pareto chart
// and the scaling curve. docs/baseline-format.md defines the figures.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wmap/bench.h"
#include "wmap/report.h"

// The MLPerf early-stopping minimum (99 % confidence) for P95, by the rule
// that gives WM_STATS_MIN_P90 and WM_STATS_MIN_P99: the smallest n with
// q^n + n (1 - q) q^(n-1) <= 0.01. wm_stats_t has no p95_ok flag.
// Nodes listed in the profile.
#define TOP_NODES 15
// Points a configuration contributes to the run-order plot at most.
#define RUN_MAX_POINTS 5000
// Bins of the latency histogram.
#define HIST_BINS 48
// Plot size (CSS pixels).
#define PLOT_W 720
#define PLOT_H 420

static const char *nz(const char *s) {
  return s ? s : "";
}

// ------------------------------------------------------------- numbers

// A time unit for a table: every latency of the table is divided by |div|.
typedef struct unit {
  double div;
  const char *name;
} unit_t;

// The unit in which |ns| has 1 to 3 digits before the point.
static unit_t unit_for(double ns) {
  if (ns >= 1e9) {
    return (unit_t){1e9, "s"};
  }
  if (ns >= 1e6) {
    return (unit_t){1e6, "ms"};
  }
  if (ns >= 1e3) {
    return (unit_t){1e3, "us"};
  }
  return (unit_t){1, "ns"};
}

// |v| with 3 significant digits and no exponent above 1: "45.1", "123",
// "1234", "0.412"; "-" when not finite.
static const char *fmt3(double v, char *buf) {
  double a = fabs(v);
  if (!isfinite(v)) {
    snprintf(buf, WM_REPORT_FMT_LEN, "-");
  } else if (a >= 99.95) {
    snprintf(buf, WM_REPORT_FMT_LEN, "%.0f", v);
  } else if (a >= 9.995) {
    snprintf(buf, WM_REPORT_FMT_LEN, "%.1f", v);
  } else if (a >= 0.9995 || a == 0) {
    snprintf(buf, WM_REPORT_FMT_LEN, "%.2f", v);
  } else {
    snprintf(buf, WM_REPORT_FMT_LEN, "%.3g", v);
  }
  return buf;
}

// Nanoseconds as "45.1 ms".
static const char *fmt_ns(double ns, char *buf) {
  return wm_report_fmt_time(ns * 1e-9, buf);
}

// A ratio as "87%", "-" when 0 or unknown; above 100 % it is marked
// "130% !" (faster than the roof: the peak is wrong, see peak_exceeded).
static const char *fmt_eff(double e, char *buf) {
  if (!(e > 0) || !isfinite(e)) {
    snprintf(buf, WM_REPORT_FMT_LEN, "-");
  } else {
    snprintf(buf, WM_REPORT_FMT_LEN, "%.0f%%%s", 100.0 * e,
             e > 1.0 ? " !" : "");
  }
  return buf;
}

// ------------------------------------------------------------- figures

// The samples a configuration holds.
static size_t config_samples(const wm_bench_config_t *c) {
  size_t n = 0;
  for (size_t i = 0; i < c->n_blocks; i++) {
    if (c->blocks[i].samples) {
      n += c->blocks[i].n;
    }
  }
  return n;
}

static bool same_backends(const wm_bench_config_t *a,
                          const wm_bench_config_t *b) {
  if (a->n_backends != b->n_backends) {
    return false;
  }
  for (size_t i = 0; i < a->n_backends; i++) {
    if (strcmp(nz(a->backends[i]), nz(b->backends[i])) != 0) {
      return false;
    }
  }
  return true;
}

// Whether configuration |i| has a partner with the same backends at another
// thread count (it belongs in the scaling table), and the fewest threads of
// its group in |*base|.
static bool in_scaling(const wm_baseline_t *b, size_t i, uint32_t *base) {
  const wm_bench_config_t *c = &b->configs[i];
  bool partner = false;
  *base = c->threads;
  for (size_t j = 0; j < b->n_configs; j++) {
    const wm_bench_config_t *o = &b->configs[j];
    if (j != i && same_backends(o, c)) {
      partner = partner || o->threads != c->threads;
      *base = o->threads < *base ? o->threads : *base;
    }
  }
  return partner;
}

static bool any_scaling(const wm_baseline_t *b) {
  uint32_t base;
  for (size_t i = 0; i < b->n_configs; i++) {
    if (in_scaling(b, i, &base)) {
      return true;
    }
  }
  return false;
}

// The unit of the latency tables: the one of the smallest median.
static unit_t table_unit(const wm_baseline_t *b) {
  double least = INFINITY;
  for (size_t i = 0; i < b->n_configs; i++) {
    const wm_stats_t *l = &b->configs[i].latency;
    if (l->n > 0 && l->median > 0 && l->median < least) {
      least = l->median;
    }
  }
  return unit_for(isfinite(least) ? least : 1e6);
}

// A percentile and whether the sample supports it.
typedef struct pct {
  const char *name;
  double q;
  size_t min_n;
} pct_t;

static const pct_t kPcts[] = {
    {"P90", 0.90, WM_STATS_MIN_P90},
    {"P95", 0.95, WM_STATS_MIN_P95},
    {"P99", 0.99, WM_STATS_MIN_P99},
    {"P99.9", 0.999, WM_STATS_MIN_P999},
};
#define N_PCTS (sizeof(kPcts) / sizeof(kPcts[0]))

static double pct_value(const wm_stats_t *l, size_t k) {
  switch (k) {
    case 0:
      return l->p90;
    case 1:
      return l->p95;
    case 2:
      return l->p99;
    default:
      return l->p999;
  }
}

static bool pct_ok(const wm_stats_t *l, size_t k) {
  switch (k) {
    case 0:
      return l->p90_ok;
    case 1:
      return l->p95_ok;
    case 2:
      return l->p99_ok;
    default:
      return l->p999_ok;
  }
}

// -------------------------------------------------------------- tables

static void latency_table(const wm_baseline_t *b, unit_t u,
                          wm_report_table_t *t) {
  char a[WM_REPORT_FMT_LEN], s[WM_REPORT_FMT_LEN];
  wm_report_table_init(t);
  wm_report_table_add_col(t, "config", WM_REPORT_SHRINK);
  wm_report_table_add_col(t, "n", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "min", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "P50", WM_REPORT_RIGHT);
  for (size_t k = 0; k < N_PCTS; k++) {
    wm_report_table_add_col(t, kPcts[k].name, WM_REPORT_RIGHT);
  }
  wm_report_table_add_col(t, "max", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "mean \u00b1 sd", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "CV", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "MAD", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "outliers", WM_REPORT_RIGHT);
  for (size_t i = 0; i < b->n_configs; i++) {
    const wm_bench_config_t *c = &b->configs[i];
    const wm_stats_t *l = &c->latency;
    wm_report_table_add_row(t);
    wm_report_table_set_cell(t, 0, "%s", nz(c->label));
    if (l->n == 0) {
      wm_report_table_set_cell(t, 1, "0");
      continue;
    }
    wm_report_table_set_cell(t, 1, "%zu", l->n);
    wm_report_table_set_cell(t, 2, "%s", fmt3(l->min / u.div, a));
    wm_report_table_set_cell(t, 3, "%s", fmt3(l->p50 / u.div, a));
    for (size_t k = 0; k < N_PCTS; k++) {
      fmt3(pct_value(l, k) / u.div, a);
      if (pct_ok(l, k)) {
        wm_report_table_set_cell(t, 4 + k, "%s", a);
      } else {
        wm_report_table_set_cell(t, 4 + k, "(%s)", a);
      }
    }
    wm_report_table_set_cell(t, 8, "%s", fmt3(l->max / u.div, a));
    wm_report_table_set_cell(t, 9, "%s \u00b1 %s", fmt3(l->mean / u.div, a),
                             fmt3(l->sd / u.div, s));
    wm_report_table_set_cell(t, 10, "%.1f%%", 100.0 * l->cv);
    wm_report_table_set_cell(t, 11, "%s", fmt3(l->mad / u.div, a));
    wm_report_table_set_cell(t, 12, "%zu/%zu", l->outliers_mild,
                             l->outliers_severe);
  }
}

// The footnote of the latency table on unsupported percentiles: for each
// one that some configuration cannot support, the count it needs; false
// (and nothing written) when every percentile is supported.
static bool unsupported_note(const wm_baseline_t *b, wm_strbuf_t *note) {
  bool any = false;
  for (size_t k = 0; k < N_PCTS; k++) {
    bool short_of = false;
    for (size_t i = 0; i < b->n_configs; i++) {
      const wm_stats_t *l = &b->configs[i].latency;
      short_of = short_of || (l->n > 0 && !pct_ok(l, k));
    }
    if (!short_of) {
      continue;
    }
    char need[WM_REPORT_FMT_LEN];
    wm_report_fmt_int((int64_t)kPcts[k].min_n, need);
    wm_strbuf_printf(note, "%s%s needs >= %s samples",
                     any ? ", " : "(x): unsupported: ", kPcts[k].name, need);
    any = true;
  }
  if (any) {
    wm_strbuf_printf(note, " (the nearest-rank value is shown)");
  }
  return any;
}

// What the latency table's columns mean.
static const char kLatencyNote[] =
    "nearest-rank percentiles of all samples of all blocks, wall time per "
    "run; outliers: mild/severe outside Tukey's fences (1.5/3 IQR), counted, "
    "never dropped; MAD unscaled";

static void throughput_table(const wm_baseline_t *b, wm_report_table_t *t) {
  char a[WM_REPORT_FMT_LEN];
  wm_report_table_init(t);
  wm_report_table_add_col(t, "config", WM_REPORT_SHRINK);
  wm_report_table_add_col(t, "median", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "inferences/s", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "GFLOP/s", WM_REPORT_RIGHT);
  for (size_t i = 0; i < b->n_configs; i++) {
    const wm_bench_config_t *c = &b->configs[i];
    wm_report_table_add_row(t);
    wm_report_table_set_cell(t, 0, "%s", nz(c->label));
    if (c->latency.n == 0) {
      continue;
    }
    wm_report_table_set_cell(t, 1, "%s", fmt_ns(c->latency.median, a));
    wm_report_table_set_cell(t, 2, "%s", fmt3(c->inferences_per_s, a));
    if (c->gflops > 0) {
      wm_report_table_set_cell(t, 3, "%s", fmt3(c->gflops, a));
    } else {
      wm_report_table_set_cell(t, 3, "-");
    }
  }
}

static void scaling_table(const wm_baseline_t *b, wm_report_table_t *t) {
  char a[WM_REPORT_FMT_LEN];
  wm_report_table_init(t);
  wm_report_table_add_col(t, "config", WM_REPORT_SHRINK);
  wm_report_table_add_col(t, "threads", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "median", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "speedup", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "efficiency", WM_REPORT_RIGHT);
  for (size_t i = 0; i < b->n_configs; i++) {
    const wm_bench_config_t *c = &b->configs[i];
    uint32_t base;
    if (!in_scaling(b, i, &base)) {
      continue;
    }
    wm_report_table_add_row(t);
    wm_report_table_set_cell(t, 0, "%s", nz(c->label));
    wm_report_table_set_cell(t, 1, "%u", (unsigned)c->threads);
    wm_report_table_set_cell(t, 2, "%s", fmt_ns(c->latency.median, a));
    if (c->has_scaling) {
      wm_report_table_set_cell(t, 3, "%.2f", c->speedup);
      wm_report_table_set_cell(t, 4, "%s", fmt_eff(c->efficiency, a));
    } else if (c->threads == base) {
      wm_report_table_set_cell(t, 3, "1.00");
      wm_report_table_set_cell(t, 4, "base");
    } else {
      wm_report_table_set_cell(t, 3, "-");
      wm_report_table_set_cell(t, 4, "-");
    }
  }
}

static void op_type_table(const wm_bench_config_t *c, wm_report_table_t *t) {
  char a[WM_REPORT_FMT_LEN];
  wm_report_table_init(t);
  wm_report_table_add_col(t, "op type", WM_REPORT_SHRINK);
  wm_report_table_add_col(t, "count", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "mean", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "share", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "cumulative", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "t_roof", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "efficiency", WM_REPORT_RIGHT);
  double cum = 0;
  for (size_t i = 0; i < c->n_op_types; i++) {
    const wm_bench_op_type_t *ty = &c->op_types[i];
    cum += ty->share;
    wm_report_table_add_row(t);
    wm_report_table_set_cell(t, 0, "%s", nz(ty->op_type));
    wm_report_table_set_cell(t, 1, "%zu", ty->count);
    wm_report_table_set_cell(t, 2, "%s", fmt_ns(ty->mean_ns, a));
    wm_report_table_set_cell(t, 3, "%s", wm_report_fmt_pct(ty->share, 1, a));
    wm_report_table_set_cell(t, 4, "%s", wm_report_fmt_pct(cum, 1, a));
    wm_report_table_set_cell(
        t, 5, "%s", ty->t_roof_ns > 0 ? fmt_ns(ty->t_roof_ns, a) : "-");
    wm_report_table_set_cell(t, 6, "%s", fmt_eff(ty->efficiency, a));
  }
}

// The TOP_NODES slowest nodes of |c|; returns how many were listed.
static size_t node_table(const wm_bench_config_t *c, wm_report_table_t *t) {
  char a[WM_REPORT_FMT_LEN];
  wm_report_table_init(t);
  wm_report_table_add_col(t, "node", WM_REPORT_SHRINK);
  wm_report_table_add_col(t, "op type", WM_REPORT_SHRINK);
  wm_report_table_add_col(t, "backend", 0);
  wm_report_table_add_col(t, "mean", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "share", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "t_roof", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "efficiency", WM_REPORT_RIGHT);
  wm_report_rank_t *rk = wm_calloc(c->n_ops ? c->n_ops : 1, sizeof(*rk));
  if (!rk) {
    return 0;
  }
  for (size_t i = 0; i < c->n_ops; i++) {
    rk[i].key = isfinite(c->ops[i].mean_ns) ? c->ops[i].mean_ns : 0;
    rk[i].index = i;
  }
  qsort(rk, c->n_ops, sizeof(*rk), wm_report_rank_desc);
  size_t n = c->n_ops < TOP_NODES ? c->n_ops : TOP_NODES;
  for (size_t k = 0; k < n; k++) {
    const wm_bench_op_t *op = &c->ops[rk[k].index];
    wm_report_table_add_row(t);
    wm_report_table_set_cell(t, 0, "%s", nz(op->node));
    wm_report_table_set_cell(t, 1, "%s", nz(op->op_type));
    wm_report_table_set_cell(t, 2, "%s", nz(op->backend));
    wm_report_table_set_cell(t, 3, "%s", fmt_ns(op->mean_ns, a));
    wm_report_table_set_cell(t, 4, "%s", wm_report_fmt_pct(op->share, 1, a));
    wm_report_table_set_cell(
        t, 5, "%s", op->t_roof_ns > 0 ? fmt_ns(op->t_roof_ns, a) : "-");
    wm_report_table_set_cell(t, 6, "%s", fmt_eff(op->efficiency, a));
  }
  free(rk);
  return n;
}

// ------------------------------------------------------------- summary

// "batch=1, seq=32" (or "none").
static void dims_text(const wm_baseline_t *b, wm_strbuf_t *out) {
  for (size_t i = 0; i < b->n_dims; i++) {
    wm_strbuf_printf(out, "%s%s=%s", i ? ", " : "", nz(b->dims[i].key),
                     nz(b->dims[i].value));
  }
  if (b->n_dims == 0) {
    wm_strbuf_printf(out, "none");
  }
}

static void method_text(const wm_baseline_t *b, wm_strbuf_t *out) {
  wm_strbuf_printf(out,
                   "%d blocks x >= %g s and >= %d iterations per "
                   "configuration, blocks interleaved (A B A B ...), each %s "
                   "after a discarded warm-up; nearest-rank percentiles",
                   (int)b->blocks, b->min_time_s, (int)b->min_iters,
                   b->in_process ? "in the measuring process"
                                 : "a fresh "
                                   "process");
}

// The critical fields worth reading; the rest are in the JSON.
static const char *const kMainFields[] = {
    "cpu.model",  "cpu.cores",    "os.kernel",         "build.compiler",
    "build.type", "lib.openblas", "lib.openblas.core", "cpu.governor",
};

static void env_text(const wm_baseline_t *b, wm_strbuf_t *out) {
  wm_strbuf_printf(out, "fingerprint %.12s", b->env.fingerprint);
  for (size_t i = 0; i < sizeof(kMainFields) / sizeof(kMainFields[0]); i++) {
    const char *v = wm_env_get(&b->env, kMainFields[i]);
    if (v && *v) {
      wm_strbuf_printf(out, "%s%s %s", i ? ", " : "; ", kMainFields[i], v);
    }
  }
}

// |s| unless empty, else the environment's |key|, else "".
static const char *or_env(const char *s, const wm_env_t *env, const char *key) {
  if (s && *s) {
    return s;
  }
  const char *v = wm_env_get(env, key);
  return v ? v : "";
}

// "wmap 0.1.0 (git a384dd90c105, Debug build), created ..."; parts the
// baseline lacks are left out.
static void tool_text(const wm_baseline_t *b, wm_strbuf_t *out) {
  const char *version = or_env(b->tool_version, &b->env, "wmap.version");
  const char *git = or_env(b->tool_git, &b->env, "wmap.git");
  const char *type = or_env(b->build_type, &b->env, "build.type");
  wm_strbuf_printf(out, "wmap%s%s", *version ? " " : "", version);
  if (*git || *type) {
    wm_strbuf_printf(out, " (%s%s%s%s%s)", *git ? "git " : "", git,
                     *git && *type ? ", " : "", type, *type ? " build" : "");
  }
  if (b->created_utc && *b->created_utc) {
    wm_strbuf_printf(out, ", created %s", b->created_utc);
  }
}

// Explains warning |w| of configuration |c| in |out|.
static void warning_text(const wm_bench_config_t *c, const char *w,
                         wm_strbuf_t *out) {
  wm_strbuf_printf(out, "%s: %s: ", nz(c->label), w);
  if (strcmp(w, "cv>10%") == 0) {
    wm_strbuf_printf(out,
                     "the samples vary by %.1f%% (sd / mean); the machine is "
                     "noisy or the run is unstable",
                     100.0 * c->latency.cv);
  } else if (strcmp(w, "first_block_slow") == 0) {
    wm_strbuf_printf(out,
                     "the first block's median is more than 10%% above the "
                     "other blocks' (a warm-up effect)");
  } else if (strcmp(w, "peak_exceeded") == 0) {
    wm_strbuf_printf(out,
                     "%zu profiled node%s ran faster than the roofline allows "
                     "(efficiency up to %.0f%%, node \"%s\"): the peak the "
                     "profile used is too low for %s, so an efficiency above "
                     "100%% (marked !) is a peak problem, not a figure. Data "
                     "in cache beats the memory roof; a compute-bound node "
                     "means a wrong GEMM or FMA peak: measure again with "
                     "`wmap probe --refresh` or check --peaks",
                     c->above_roof, c->above_roof == 1 ? "" : "s",
                     100.0 * c->max_efficiency, nz(c->max_node),
                     c->above_roof == 1 ? "it" : "them");
  } else if (strcmp(w, "few_blocks") == 0) {
    wm_strbuf_printf(out,
                     "%zu block%s, fewer than 5: wmap compare will call it "
                     "insufficient data",
                     c->n_blocks, c->n_blocks == 1 ? "" : "s");
  } else {
    wm_strbuf_printf(out, "see docs/baseline-format.md");
  }
}

// ---------------------------------------------------------------- text

static void text_summary(wm_report_writer_t *w, const wm_baseline_t *b) {
  char a[WM_REPORT_FMT_LEN];
  if (b->model_name && *b->model_name) {
    wm_report_write_heading(w, "wmap bench: %s", b->model_name);
  } else {
    wm_report_write_heading(w, "wmap bench");
  }
  wm_strbuf_t s;
  wm_strbuf_init(&s);
  dims_text(b, &s);
  if (b->model_flops > 0) {
    wm_report_write_label(w, "model sha256 %.16s, dims %s, %sFLOP per run",
                          nz(b->model_sha256), wm_strbuf_str(&s),
                          wm_report_fmt_si(b->model_flops, a));
  } else {
    wm_report_write_label(w, "model sha256 %.16s, dims %s", nz(b->model_sha256),
                          wm_strbuf_str(&s));
  }
  wm_strbuf_deinit(&s);
  wm_strbuf_init(&s);
  method_text(b, &s);
  wm_report_write_label(w, "method: %s", wm_strbuf_str(&s));
  wm_strbuf_deinit(&s);
  wm_strbuf_init(&s);
  env_text(b, &s);
  wm_report_write_label(w, "environment: %s", wm_strbuf_str(&s));
  wm_strbuf_deinit(&s);
  wm_strbuf_init(&s);
  tool_text(b, &s);
  wm_report_write_label(w, "tool: %s", wm_strbuf_str(&s));
  wm_strbuf_deinit(&s);
}

static void emit(wm_report_writer_t *w, wm_report_table_t *t) {
  wm_report_write_table(w, t);
  wm_report_table_deinit(t);
}

static void text_profile(wm_report_writer_t *w, const wm_bench_config_t *c) {
  wm_report_table_t t;
  if (c->n_op_types > 0) {
    wm_report_write_title(w, "Profile of %s by op type", nz(c->label));
    op_type_table(c, &t);
    emit(w, &t);
    wm_report_write_para(w,
                         "mean per run, from extra profiled runs with a sync "
                         "after every node; t_roof: the map's roofline time; "
                         "efficiency = t_roof / mean");
  }
  if (c->n_ops > 0) {
    size_t n = c->n_ops < TOP_NODES ? c->n_ops : TOP_NODES;
    wm_report_write_title(w, "Top %zu nodes of %s", n, nz(c->label));
    node_table(c, &t);
    emit(w, &t);
  }
}

void wm_baseline_to_text(const wm_baseline_t *b, bool color, wm_strbuf_t *out) {
  wm_report_writer_t w;
  wm_report_writer_init(&w, out, false, color);
  text_summary(&w, b);
  if (b->n_configs == 0) {
    wm_report_write_para(&w, "no configurations were measured");
    return;
  }
  unit_t u = table_unit(b);
  wm_report_table_t t;
  wm_report_write_title(&w, "Latency per run (%s)", u.name);
  latency_table(b, u, &t);
  emit(&w, &t);
  wm_strbuf_t s;
  wm_strbuf_init(&s);
  if (unsupported_note(b, &s)) {
    wm_report_write_para(&w, "%s", wm_strbuf_str(&s));
    w.fresh = true;  // the two notes belong together
  }
  wm_strbuf_deinit(&s);
  wm_report_write_para(&w, "%s", kLatencyNote);
  wm_report_write_title(&w, "Throughput");
  throughput_table(b, &t);
  emit(&w, &t);
  char a[WM_REPORT_FMT_LEN];
  if (b->model_flops > 0) {
    wm_report_write_para(&w,
                         "inferences/s = 1 / median; GFLOP/s: the map's %sFLOP "
                         "per run over the median",
                         wm_report_fmt_si(b->model_flops, a));
  }
  if (any_scaling(b)) {
    wm_report_write_title(&w, "Scaling");
    scaling_table(b, &t);
    emit(&w, &t);
    wm_report_write_para(&w,
                         "same backends at more threads: speedup = median at "
                         "the fewest threads / median; efficiency = speedup x "
                         "fewest threads / threads");
  }
  bool warned = false;
  for (size_t i = 0; i < b->n_configs; i++) {
    const wm_bench_config_t *c = &b->configs[i];
    for (size_t k = 0; k < c->n_warnings; k++) {
      if (!warned) {
        wm_report_write_title(&w, "Warnings");
        warned = true;
      }
      wm_strbuf_init(&s);
      warning_text(c, nz(c->warnings[k]), &s);
      wm_report_write_lead(&w, "warning:", WM_ANSI_YELLOW, "%s",
                           wm_strbuf_str(&s));
      wm_strbuf_deinit(&s);
    }
  }
  for (size_t i = 0; i < b->n_configs; i++) {
    text_profile(&w, &b->configs[i]);
  }
}

// ---------------------------------------------------------------- HTML

// Extra rules of the baseline page.
static const char kCss[] =
    "svg .bar{stroke-width:1;fill-opacity:.28}\n"
    "svg .cdf{fill:none;stroke-width:2}\n"
    "svg .mark{stroke-width:1.2;stroke-dasharray:5 3}\n"
    "svg .ideal{fill:none;stroke:#8d99a6;stroke-width:1.5;"
    "stroke-dasharray:6 4}\n"
    "svg .curve{fill:none;stroke-width:2.5}\n"
    "svg .pts{fill:none;stroke-linecap:round;stroke-width:3}\n"
    "svg .blk{fill-opacity:.10}\n"
    "svg .bnd{stroke:#9aa4ae;stroke-width:1;stroke-dasharray:2 2}\n"
    "svg text.mk{paint-order:stroke;stroke:#fff;stroke-width:3px}\n"
    "svg .bmed{stroke-width:2}\n";

static void html_table(wm_strbuf_t *out, wm_report_table_t *t) {
  wm_report_html_table(out, t, NULL);
  wm_report_table_deinit(t);
}

// Every sample of every configuration: the smallest and the largest.
static bool sample_range(const wm_baseline_t *b, double *lo, double *hi) {
  *lo = INFINITY;
  *hi = -INFINITY;
  for (size_t i = 0; i < b->n_configs; i++) {
    const wm_stats_t *l = &b->configs[i].latency;
    if (l->n > 0 && isfinite(l->min) && isfinite(l->max)) {
      *lo = fmin(*lo, l->min);
      *hi = fmax(*hi, l->max);
    }
  }
  return *lo > 0 && isfinite(*hi);
}

// A legend of the configurations' colours across the top of a plot.
static void config_legend(wm_strbuf_t *out, const wm_baseline_t *b, double x,
                          double y) {
  for (size_t i = 0; i < b->n_configs && x < PLOT_W - 60; i++) {
    x = wm_report_svg_legend_item(out, x, y, wm_report_color(i),
                                  nz(b->configs[i].label));
  }
}

static const char *fmt_ns_axis(double v, char *buf) {
  return fmt_ns(v, buf);
}

static const char *fmt_pct_axis(double v, char *buf) {
  snprintf(buf, WM_REPORT_FMT_LEN, "%g%%", v);
  return buf;
}

static const char *fmt_int_axis(double v, char *buf) {
  return wm_report_fmt_int((int64_t)llround(v), buf);
}

// Histogram bins of |c|'s samples over log10 range [l0, l1]: |pct| gets
// the share of samples per bin (percent), |cdf| the share up to each bin's
// right edge (0..1).
static void histogram(const wm_bench_config_t *c, double l0, double l1,
                      double *pct, double *cdf) {
  size_t n = config_samples(c);
  memset(pct, 0, HIST_BINS * sizeof(double));
  for (size_t i = 0; i < c->n_blocks; i++) {
    const wm_bench_block_t *k = &c->blocks[i];
    for (size_t j = 0; k->samples && j < k->n; j++) {
      double v = k->samples[j];
      double f = v > 0 ? (log10(v) - l0) / (l1 - l0) : 0;
      int bin = f >= 1 ? HIST_BINS - 1 : f > 0 ? (int)(f * HIST_BINS) : 0;
      pct[bin] += 1;  // beyond the axis: the end bins (NaN: the first)
    }
  }
  double cum = 0;
  for (int i = 0; i < HIST_BINS; i++) {
    cum += pct[i];
    cdf[i] = n ? cum / (double)n : 0;
    pct[i] = n ? 100.0 * pct[i] / (double)n : 0;
  }
}

// The P50, P90 and P99 markers of |l|: a dashed line each, labelled
// along it from |ly| down; markers closer than 14 px share one label.
static void markers(wm_strbuf_t *out, const wm_report_plot_t *p,
                    const wm_stats_t *l, const char *color, double ly) {
  const struct {
    const char *name;
    double ns;
    bool ok;
  } m[3] = {{"P50", l->p50, true},
            {"P90", l->p90, l->p90_ok},
            {"P99", l->p99, l->p99_ok}};
  char lab[160];
  size_t len = 0;
  double at = 0;
  for (int k = 0; k < 3; k++) {
    double x = wm_report_plot_x(p, m[k].ns);
    wm_strbuf_printf(out,
                     "<line class=\"mark\" x1=\"%.1f\" y1=\"%.1f\" "
                     "x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n",
                     x, p->y0, x, p->y0 + p->h, color);
    char v[WM_REPORT_FMT_LEN];
    fmt_ns(m[k].ns, v);
    if (len > 0 && x - at >= 14) {
      char extra[160];
      snprintf(extra, sizeof(extra),
               " class=\"small mk\" fill=\"%s\" "
               "transform=\"rotate(-90 %.1f %.1f)\"",
               color, at - 4, ly);
      wm_report_svg_text(out, at - 4, ly, "end", extra, lab);
      len = 0;
    }
    if (len == 0) {
      at = x;
    }
    int w = snprintf(lab + len, sizeof(lab) - len,
                     m[k].ok ? "%s%s %s" : "%s(%s %s)", len ? " \u00b7 " : "",
                     m[k].name, v);
    len += w > 0 && (size_t)w < sizeof(lab) - len ? (size_t)w : 0;
  }
  if (len > 0) {
    char extra[160];
    snprintf(extra, sizeof(extra),
             " class=\"small mk\" fill=\"%s\" "
             "transform=\"rotate(-90 %.1f %.1f)\"",
             color, at - 4, ly);
    wm_report_svg_text(out, at - 4, ly, "end", extra, lab);
  }
}

static void html_histogram(wm_strbuf_t *out, const wm_baseline_t *b) {
  double lo, hi;
  if (!sample_range(b, &lo, &hi)) {
    wm_strbuf_printf(out, "<p class=\"muted\">No samples.</p>\n");
    return;
  }
  // The axis ends where the body of each distribution ends: at its P99.9
  // or 1.5 x its P99, whichever is larger; rarer spikes would squeeze the
  // body into a few bins, so they are counted in the last bin.
  double body = 0;
  for (size_t i = 0; i < b->n_configs; i++) {
    const wm_stats_t *l = &b->configs[i].latency;
    if (l->n > 0) {
      body = fmax(body, fmin(l->max, fmax(l->p999, 1.5 * l->p99)));
    }
  }
  size_t beyond = 0;
  if (body > lo && body < hi) {
    hi = body;
    for (size_t i = 0; i < b->n_configs; i++) {
      const wm_bench_config_t *c = &b->configs[i];
      for (size_t k = 0; k < c->n_blocks; k++) {
        for (size_t j = 0; c->blocks[k].samples && j < c->blocks[k].n; j++) {
          beyond += c->blocks[k].samples[j] > hi;
        }
      }
    }
  }
  double l0 = log10(lo), l1 = log10(hi);
  double pad = fmax(0.02 * (l1 - l0), 0.005);
  l0 -= pad;
  l1 += pad;
  double *pct = wm_calloc(2 * HIST_BINS * b->n_configs, sizeof(double));
  if (!pct) {
    wm_strbuf_printf(out, "<p class=\"muted\">Out of memory.</p>\n");
    return;
  }
  double ymax = 0;
  for (size_t i = 0; i < b->n_configs; i++) {
    double *h = pct + 2 * HIST_BINS * i;
    histogram(&b->configs[i], l0, l1, h, h + HIST_BINS);
    for (int k = 0; k < HIST_BINS; k++) {
      ymax = fmax(ymax, h[k]);
    }
  }
  wm_report_plot_t p = {.x0 = 70,
                        .y0 = 40,
                        .w = PLOT_W - 70 - 60,
                        .h = PLOT_H - 40 - 50,
                        .lx0 = l0,
                        .lx1 = l1,
                        .ly0 = 0,
                        .ly1 = ymax > 0 ? ymax * 1.12 : 1,
                        .xlog = true};
  wm_report_svg_open(out, "histogram", PLOT_W, PLOT_H,
                     "latency histogram and CDF per configuration");
  wm_report_svg_axes(out, &p, fmt_ns_axis, fmt_pct_axis,
                     "latency per run (log scale)", "share of samples per bin");
  for (int k = 0; k <= 4; k++) {  // the CDF's axis on the right
    char lab[16];
    snprintf(lab, sizeof(lab), "%d%%", 25 * k);
    wm_report_svg_text(out, p.x0 + p.w + 6, p.y0 + p.h - k / 4.0 * p.h + 4,
                       "start", " class=\"small\"", lab);
  }
  char rot[96];
  snprintf(rot, sizeof(rot),
           " class=\"title\" transform=\"rotate(90 %.1f %.1f)\"",
           p.x0 + p.w + 44, p.y0 + p.h / 2);
  wm_report_svg_text(out, p.x0 + p.w + 44, p.y0 + p.h / 2, "middle", rot,
                     "cumulative share (line)");
  config_legend(out, b, p.x0, 18);
  double bw = p.w / HIST_BINS;
  for (size_t i = 0; i < b->n_configs; i++) {
    const wm_bench_config_t *c = &b->configs[i];
    const double *h = pct + 2 * HIST_BINS * i, *cdf = h + HIST_BINS;
    const char *color = wm_report_color(i);
    if (c->latency.n == 0) {
      continue;
    }
    wm_strbuf_printf(out, "<g class=\"bars\" fill=\"%s\" stroke=\"%s\">\n",
                     color, color);
    for (int k = 0; k < HIST_BINS; k++) {
      if (h[k] <= 0) {
        continue;
      }
      double top = wm_report_plot_y(&p, h[k]);
      wm_strbuf_printf(out,
                       "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" "
                       "width=\"%.1f\" height=\"%.1f\"/>\n",
                       p.x0 + k * bw, top, bw, p.y0 + p.h - top);
    }
    wm_strbuf_printf(out,
                     "</g>\n<polyline class=\"cdf\" stroke=\"%s\" "
                     "points=\"%.1f,%.1f",
                     color, p.x0, p.y0 + p.h);
    for (int k = 0; k < HIST_BINS; k++) {
      wm_strbuf_printf(out, " %.1f,%.1f", p.x0 + (k + 1) * bw,
                       p.y0 + p.h - cdf[k] * p.h);
    }
    wm_strbuf_printf(out, "\"/>\n");
    // Each configuration's labels start lower than the previous one's, so
    // that labels of different configurations at one x do not overlap.
    markers(out, &p, &c->latency, color, p.y0 + 6 + (double)(i % 3) * 110);
  }
  wm_report_svg_close(out);
  free(pct);
  wm_strbuf_printf(out,
                   "<p class=\"muted\">Bars: share of each configuration's "
                   "samples per bin of a log-scale axis; lines: their "
                   "cumulative share (right axis); dashed: P50, P90, P99 "
                   "(in parentheses when there are too few samples to "
                   "support it)");
  if (beyond > 0) {
    wm_strbuf_printf(out,
                     ". %zu sample%s beyond the axis (spikes) %s counted in "
                     "the last bin; the run-order plot shows them",
                     beyond, beyond == 1 ? "" : "s",
                     beyond == 1 ? "is" : "are");
  }
  wm_strbuf_printf(out, ".</p>\n");
}

// A block in run order: its configuration and its first x position.
typedef struct run_block {
  size_t config, block;
  int32_t order;
  size_t x;
} run_block_t;

static int cmp_run_block(const void *pa, const void *pb) {
  const run_block_t *x = pa, *y = pb;
  if (x->order != y->order) {
    return x->order < y->order ? -1 : 1;
  }
  if (x->config != y->config) {
    return x->config < y->config ? -1 : 1;
  }
  return (x->block > y->block) - (x->block < y->block);
}

// Appends a point of the run-order path.
static void run_point(wm_strbuf_t *out, const wm_report_plot_t *p, double x,
                      double v) {
  wm_strbuf_printf(out, "M%.1f %.1fh0", wm_report_plot_x(p, x),
                   wm_report_plot_y(p, v));
}

// The points of configuration |ci|: all of them, or per bucket of
// consecutive samples the smallest and the largest (in run order), so that
// at most RUN_MAX_POINTS are drawn and spikes stay visible.
static size_t run_points(wm_strbuf_t *out, const wm_baseline_t *b,
                         const run_block_t *rb, size_t n_rb, size_t ci,
                         const wm_report_plot_t *p) {
  size_t total = config_samples(&b->configs[ci]);
  size_t buckets = RUN_MAX_POINTS / 2;
  size_t per = total <= RUN_MAX_POINTS ? 1 : (total + buckets - 1) / buckets;
  size_t drawn = 0, in_bucket = 0;
  double vmin = 0, vmax = 0, xmin = 0, xmax = 0;
  for (size_t r = 0; r < n_rb; r++) {
    if (rb[r].config != ci) {
      continue;
    }
    const wm_bench_block_t *k = &b->configs[ci].blocks[rb[r].block];
    for (size_t j = 0; k->samples && j < k->n; j++) {
      double v = k->samples[j], x = (double)(rb[r].x + j);
      if (per == 1) {
        run_point(out, p, x, v);
        drawn++;
        continue;
      }
      if (in_bucket == 0 || v < vmin) {
        vmin = v;
        xmin = x;
      }
      if (in_bucket == 0 || v > vmax) {
        vmax = v;
        xmax = x;
      }
      if (++in_bucket == per) {
        run_point(out, p, xmin < xmax ? xmin : xmax, xmin < xmax ? vmin : vmax);
        run_point(out, p, xmin < xmax ? xmax : xmin, xmin < xmax ? vmax : vmin);
        drawn += 2;
        in_bucket = 0;
      }
    }
  }
  if (in_bucket > 0) {
    run_point(out, p, xmin < xmax ? xmin : xmax, xmin < xmax ? vmin : vmax);
    run_point(out, p, xmin < xmax ? xmax : xmin, xmin < xmax ? vmax : vmin);
    drawn += 2;
  }
  return drawn;
}

static void html_run_order(wm_strbuf_t *out, const wm_baseline_t *b) {
  double lo, hi;
  size_t n_rb = 0;
  for (size_t i = 0; i < b->n_configs; i++) {
    n_rb += b->configs[i].n_blocks;
  }
  run_block_t *rb = wm_calloc(n_rb ? n_rb : 1, sizeof(*rb));
  if (!rb || !sample_range(b, &lo, &hi)) {
    wm_strbuf_printf(out, "<p class=\"muted\">No samples.</p>\n");
    free(rb);
    return;
  }
  n_rb = 0;
  for (size_t i = 0; i < b->n_configs; i++) {
    for (size_t k = 0; k < b->configs[i].n_blocks; k++) {
      rb[n_rb].config = i;
      rb[n_rb].block = k;
      rb[n_rb].order = b->configs[i].blocks[k].order;
      n_rb++;
    }
  }
  qsort(rb, n_rb, sizeof(*rb), cmp_run_block);
  size_t x = 0;
  for (size_t r = 0; r < n_rb; r++) {
    const wm_bench_block_t *k = &b->configs[rb[r].config].blocks[rb[r].block];
    rb[r].x = x;
    x += k->samples ? k->n : 0;
  }
  // A log axis when the samples span more than a factor 3 (spikes), else a
  // linear one with some room.
  bool log_y = hi / lo > 3;
  double pad = log_y ? 0.03 * (log10(hi) - log10(lo)) : 0.06 * (hi - lo);
  pad = pad > 0 ? pad : (log_y ? 0.01 : 0.05 * hi);
  wm_report_plot_t p = {.x0 = 80,
                        .y0 = 40,
                        .w = PLOT_W - 80 - 20,
                        .h = PLOT_H - 40 - 50,
                        .lx0 = 0,
                        .lx1 = x > 1 ? (double)(x - 1) : 1,
                        .ly0 = log_y ? log10(lo) - pad : fmax(lo - pad, 0),
                        .ly1 = log_y ? log10(hi) + pad : hi + pad,
                        .ylog = log_y};
  wm_report_svg_open(out, "runorder", PLOT_W, PLOT_H,
                     "latency in run order with blocks");
  // Blocks: shaded in their configuration's colour, a line where each
  // starts; the title names the block.
  for (size_t r = 0; r < n_rb; r++) {
    const wm_bench_block_t *k = &b->configs[rb[r].config].blocks[rb[r].block];
    if (!k->samples || k->n == 0) {
      continue;
    }
    double x0 = wm_report_plot_x(&p, (double)rb[r].x - 0.5);
    double x1 = wm_report_plot_x(&p, (double)(rb[r].x + k->n) - 0.5);
    wm_strbuf_printf(out,
                     "<rect class=\"blk\" x=\"%.1f\" y=\"%.1f\" "
                     "width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
                     x0, p.y0, x1 - x0, p.h, wm_report_color(rb[r].config));
    wm_report_html_escape(out, b->configs[rb[r].config].label);
    wm_strbuf_printf(out,
                     " block %d</title></rect>\n<line class=\"bnd\" "
                     "x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
                     (int)k->index, x0, p.y0, x0, p.y0 + p.h);
  }
  wm_report_svg_axes(out, &p, fmt_int_axis, fmt_ns_axis,
                     "iteration (all configurations, in run order)",
                     "latency per run");
  config_legend(out, b, p.x0, 18);
  for (size_t i = 0; i < b->n_configs; i++) {
    wm_strbuf_printf(out, "<path class=\"pts\" stroke=\"%s\" d=\"",
                     wm_report_color(i));
    size_t drawn = run_points(out, b, rb, n_rb, i, &p);
    wm_strbuf_printf(out, "\" data-points=\"%zu\"/>\n", drawn);
  }
  for (size_t r = 0; r < n_rb; r++) {
    const wm_bench_block_t *k = &b->configs[rb[r].config].blocks[rb[r].block];
    if (!k->samples || k->n == 0) {
      continue;
    }
    double y = wm_report_plot_y(&p, k->median_ns);
    wm_strbuf_printf(out,
                     "<line class=\"bmed\" x1=\"%.1f\" y1=\"%.1f\" "
                     "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#1d232a\"/>\n",
                     wm_report_plot_x(&p, (double)rb[r].x), y,
                     wm_report_plot_x(&p, (double)(rb[r].x + k->n - 1)), y);
  }
  wm_report_svg_close(out);
  free(rb);
  wm_strbuf_printf(
      out,
      "<p class=\"muted\">Every timed run in the order it ran; "
      "bands shaded in the configuration's colour mark the "
      "blocks (%s), the black line each "
      "block's median. "
      "Above %d points a configuration is drawn as the smallest "
      "and largest sample of each run of consecutive samples, so "
      "spikes stay visible.</p>\n",
      b->in_process ? "all in the measuring process" : "a fresh process each",
      RUN_MAX_POINTS);
}

static void html_pareto(wm_strbuf_t *out, const wm_bench_config_t *c) {
  wm_report_bar_t *bars = wm_calloc(c->n_op_types, sizeof(*bars));
  if (!bars) {
    return;
  }
  wm_arena_t arena;
  wm_arena_init(&arena);
  for (size_t i = 0; i < c->n_op_types; i++) {
    const wm_bench_op_type_t *ty = &c->op_types[i];
    char tip[160];
    snprintf(tip, sizeof(tip), "%.100s (%zu nodes)", nz(ty->op_type),
             ty->count);
    bars[i].label = nz(ty->op_type);
    bars[i].title = wm_arena_strdup(&arena, tip);
    bars[i].value = ty->mean_ns * 1e-9;
  }
  wm_report_svg_pareto(out, bars, c->n_op_types, "measured time per run",
                       "op types", "time by op type");
  wm_arena_deinit(&arena);
  free(bars);
}

static void html_scaling(wm_strbuf_t *out, const wm_baseline_t *b) {
  uint32_t tmax = 1;
  double smax = 1;
  for (size_t i = 0; i < b->n_configs; i++) {
    uint32_t base;
    const wm_bench_config_t *c = &b->configs[i];
    if (in_scaling(b, i, &base)) {
      tmax = c->threads > tmax ? c->threads : tmax;
      smax = fmax(smax, (double)c->threads / (base ? base : 1));
      if (c->has_scaling && isfinite(c->speedup)) {
        smax = fmax(smax, c->speedup);
      }
    }
  }
  wm_report_plot_t p = {.x0 = 70,
                        .y0 = 40,
                        .w = PLOT_W - 70 - 30,
                        .h = PLOT_H - 40 - 60,
                        .lx0 = 0,
                        .lx1 = tmax,
                        .ly0 = 0,
                        .ly1 = smax * 1.1,
                        .xstep = fmax(1.0, wm_report_nice_step(tmax, 6))};
  wm_report_svg_open(out, "scaling", PLOT_W, PLOT_H,
                     "speedup against threads with the ideal line");
  wm_report_svg_axes(out, &p, fmt_int_axis, NULL, "threads", "speedup");
  double lx = p.x0;
  lx = wm_report_svg_legend_item(out, lx, 18, "#8d99a6", "ideal");
  bool *done = wm_calloc(b->n_configs ? b->n_configs : 1, sizeof(bool));
  for (size_t i = 0; done && i < b->n_configs; i++) {
    uint32_t base;
    if (done[i] || !in_scaling(b, i, &base) || base == 0) {
      continue;
    }
    const wm_bench_config_t *c = &b->configs[i];
    const char *color = wm_report_color(i);
    // The group: every configuration with these backends, by threads.
    wm_report_rank_t pts[64];
    size_t n = 0;
    for (size_t j = 0; j < b->n_configs && n < 64; j++) {
      if (!done[j] && same_backends(&b->configs[j], c)) {
        done[j] = true;
        pts[n].key = -(double)b->configs[j].threads;  // ascending threads
        pts[n].index = j;
        n++;
      }
    }
    qsort(pts, n, sizeof(pts[0]), wm_report_rank_desc);
    wm_strbuf_printf(out,
                     "<line class=\"ideal\" x1=\"%.1f\" y1=\"%.1f\" "
                     "x2=\"%.1f\" y2=\"%.1f\"/>\n",
                     wm_report_plot_x(&p, base), wm_report_plot_y(&p, 1.0),
                     wm_report_plot_x(&p, tmax),
                     wm_report_plot_y(&p, (double)tmax / base));
    wm_strbuf_printf(out, "<polyline class=\"curve\" stroke=\"%s\" points=\"",
                     color);
    for (size_t k = 0; k < n; k++) {
      const wm_bench_config_t *o = &b->configs[pts[k].index];
      double s = o->has_scaling ? o->speedup : 1.0;
      wm_strbuf_printf(out, "%s%.1f,%.1f", k ? " " : "",
                       wm_report_plot_x(&p, o->threads),
                       wm_report_plot_y(&p, s));
    }
    wm_strbuf_printf(out, "\"/>\n");
    for (size_t k = 0; k < n; k++) {
      const wm_bench_config_t *o = &b->configs[pts[k].index];
      double s = o->has_scaling ? o->speedup : 1.0;
      double px = wm_report_plot_x(&p, o->threads),
             py = wm_report_plot_y(&p, s);
      wm_strbuf_printf(out,
                       "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" "
                       "fill=\"%s\"><title>",
                       px, py, color);
      wm_report_html_escape(out, o->label);
      wm_strbuf_printf(out,
                       ": speedup %.2f, efficiency %.0f%%</title></circle>\n",
                       s, 100.0 * (o->has_scaling ? o->efficiency : 1.0));
      char lab[48];
      snprintf(lab, sizeof(lab), "%.2fx, %.0f%%", s,
               100.0 * (o->has_scaling ? o->efficiency : 1.0));
      bool right = px > p.x0 + p.w - 90;
      wm_report_svg_text(out, right ? px - 8 : px + 8, py + 16,
                         right ? "end" : "start", " class=\"small mk\"", lab);
    }
    char name[96];
    snprintf(name, sizeof(name), "%.80s", nz(c->label));
    char *at = strrchr(name, '@');
    if (at) {
      *at = '\0';  // the backends, without the thread count
    }
    lx = wm_report_svg_legend_item(out, lx, 18, color, name);
  }
  free(done);
  wm_report_svg_close(out);
  wm_strbuf_printf(out,
                   "<p class=\"muted\">Speedup of the median against the "
                   "same backends at the fewest threads; dashed: ideal "
                   "(linear) scaling; labels: speedup and efficiency.</p>\n");
}

static void html_summary(wm_strbuf_t *out, const wm_baseline_t *b) {
  char a[WM_REPORT_FMT_LEN];
  wm_strbuf_printf(out, "<h1>Baseline: ");
  wm_report_html_escape(out, b->model_name);
  wm_strbuf_printf(out,
                   "</h1>\n<nav><a href=\"#latency\">latency</a>"
                   "<a href=\"#histogram\">distribution</a>"
                   "<a href=\"#runorder\">run order</a>"
                   "<a href=\"#throughput\">throughput</a>"
                   "<a href=\"#scaling\">scaling</a>"
                   "<a href=\"#profile\">profile</a></nav>\n"
                   "<table class=\"kv\">\n");
  wm_report_html_kv_open(out, "model");
  wm_report_html_escape(out, b->model_name);
  wm_strbuf_printf(out, " <span class=\"muted\">(sha256 ");
  wm_report_html_escape(out, b->model_sha256);
  wm_strbuf_printf(out, ")</span>");
  wm_report_html_kv_close(out);
  wm_strbuf_t s;
  wm_strbuf_init(&s);
  dims_text(b, &s);
  wm_report_html_kv_open(out, "dims");
  wm_report_html_escape(out, wm_strbuf_str(&s));
  wm_report_html_kv_close(out);
  wm_strbuf_deinit(&s);
  wm_report_html_kv_open(out, "FLOPs per run");
  if (b->model_flops > 0) {
    wm_strbuf_printf(out, "%s <span class=\"muted\">(the map's count)</span>",
                     wm_report_fmt_si(b->model_flops, a));
  } else {
    wm_strbuf_printf(out, "<span class=\"muted\">unknown</span>");
  }
  wm_report_html_kv_close(out);
  wm_strbuf_init(&s);
  method_text(b, &s);
  wm_report_html_kv_open(out, "method");
  wm_report_html_escape(out, wm_strbuf_str(&s));
  wm_report_html_kv_close(out);
  wm_strbuf_deinit(&s);
  wm_strbuf_init(&s);
  tool_text(b, &s);
  wm_report_html_kv_open(out, "tool");
  wm_report_html_escape(out, wm_strbuf_str(&s));
  wm_report_html_kv_close(out);
  wm_strbuf_deinit(&s);
  wm_report_html_kv_open(out, "environment");
  wm_strbuf_printf(out, "fingerprint <code>");
  wm_report_html_escape(out, b->env.fingerprint);
  wm_strbuf_printf(out, "</code>");
  wm_report_html_kv_close(out);
  for (size_t i = 0; i < sizeof(kMainFields) / sizeof(kMainFields[0]); i++) {
    const char *v = wm_env_get(&b->env, kMainFields[i]);
    if (v && *v) {
      wm_report_html_kv_open(out, kMainFields[i]);
      wm_report_html_escape(out, v);
      wm_report_html_kv_close(out);
    }
  }
  wm_strbuf_printf(out, "</table>\n");
  wm_strbuf_printf(out,
                   "<details><summary>Environment: all %zu fields</summary>\n"
                   "<table>\n<tr><th>field</th><th>value</th><th>kind</th>"
                   "</tr>\n",
                   b->env.n);
  for (size_t i = 0; i < b->env.n && i < WM_ENV_MAX_FIELDS; i++) {
    const wm_env_field_t *f = &b->env.fields[i];
    wm_strbuf_printf(out, "<tr><td>");
    wm_report_html_escape(out, f->key);
    wm_strbuf_printf(out, "</td><td class=\"name\">");
    wm_report_html_escape(out, f->value);
    wm_strbuf_printf(out, "</td><td>%s</td></tr>\n",
                     f->critical ? "critical" : "volatile");
  }
  wm_strbuf_printf(out, "</table>\n</details>\n");
  bool warned = false;
  for (size_t i = 0; i < b->n_configs; i++) {
    const wm_bench_config_t *c = &b->configs[i];
    for (size_t k = 0; k < c->n_warnings; k++) {
      if (!warned) {
        wm_strbuf_printf(
            out, "<div class=\"notes\"><strong>Warnings</strong><ul>\n");
        warned = true;
      }
      wm_strbuf_init(&s);
      warning_text(c, nz(c->warnings[k]), &s);
      wm_strbuf_printf(out, "<li>");
      wm_report_html_escape(out, wm_strbuf_str(&s));
      wm_strbuf_printf(out, "</li>\n");
      wm_strbuf_deinit(&s);
    }
  }
  if (warned) {
    wm_strbuf_printf(out, "</ul></div>\n");
  }
}

static void html_profile(wm_strbuf_t *out, const wm_baseline_t *b) {
  wm_strbuf_printf(out, "<h2 id=\"profile\">Profile</h2>\n");
  bool any = false;
  for (size_t i = 0; i < b->n_configs; i++) {
    const wm_bench_config_t *c = &b->configs[i];
    if (c->n_ops == 0 && c->n_op_types == 0) {
      continue;
    }
    any = true;
    wm_report_table_t t;
    wm_strbuf_printf(out, "<h3>");
    wm_report_html_escape(out, c->label);
    wm_strbuf_printf(out,
                     "</h3>\n<p>Measured time per op type, largest first; "
                     "the line is the cumulative share. From extra profiled "
                     "runs with a sync after every node; efficiency = "
                     "t_roof / mean.</p>\n");
    html_pareto(out, c);
    op_type_table(c, &t);
    html_table(out, &t);
    if (c->n_ops > 0) {
      wm_strbuf_printf(out, "<h3>Top %zu nodes of ",
                       c->n_ops < TOP_NODES ? c->n_ops : TOP_NODES);
      wm_report_html_escape(out, c->label);
      wm_strbuf_printf(out, "</h3>\n");
      node_table(c, &t);
      html_table(out, &t);
    }
  }
  if (!any) {
    wm_strbuf_printf(out,
                     "<p class=\"muted\">No profile: run wmap bench with "
                     "--profile.</p>\n");
  }
}

void wm_baseline_to_html(const wm_baseline_t *b, wm_strbuf_t *out) {
  wm_strbuf_t title;
  wm_strbuf_init(&title);
  wm_strbuf_printf(&title, "baseline: %s", nz(b->model_name));
  wm_report_html_begin(out, "wmap bench (" WM_BASELINE_FORMAT ")",
                       wm_strbuf_str(&title), kCss);
  wm_strbuf_deinit(&title);
  html_summary(out, b);
  wm_report_table_t t;
  unit_t u = table_unit(b);
  wm_strbuf_printf(out, "<h2 id=\"latency\">Latency per run (%s)</h2>\n",
                   u.name);
  latency_table(b, u, &t);
  html_table(out, &t);
  wm_strbuf_t s;
  wm_strbuf_init(&s);
  if (unsupported_note(b, &s)) {
    wm_strbuf_printf(out, "<p>");
    wm_report_html_escape(out, wm_strbuf_str(&s));
    wm_strbuf_printf(out, ".</p>\n");
  }
  wm_strbuf_deinit(&s);
  wm_strbuf_printf(out, "<p class=\"muted\">");
  wm_report_html_escape(out, kLatencyNote);
  wm_strbuf_printf(out, ".</p>\n");
  wm_strbuf_printf(out, "<h2 id=\"histogram\">Latency distribution</h2>\n");
  html_histogram(out, b);
  wm_strbuf_printf(out, "<h2 id=\"runorder\">Run order</h2>\n");
  html_run_order(out, b);
  wm_strbuf_printf(out, "<h2 id=\"throughput\">Throughput</h2>\n");
  throughput_table(b, &t);
  html_table(out, &t);
  wm_strbuf_printf(out, "<h2 id=\"scaling\">Scaling</h2>\n");
  if (any_scaling(b)) {
    scaling_table(b, &t);
    html_table(out, &t);
    html_scaling(out, b);
  } else {
    wm_strbuf_printf(out,
                     "<p class=\"muted\">No scaling: no backends were "
                     "measured at more than one thread count.</p>\n");
  }
  html_profile(out, b);
  wm_strbuf_printf(out, "<p class=\"muted\">" WM_BASELINE_FORMAT
                        " &middot; nearest-rank percentiles &middot; times are "
                        "wall time per run of the model.</p>\n");
  wm_report_html_end(out);
}
