// wmap bench and compare: latency distributions measured in interleaved
// blocks, their statistics, the environment they were measured in, the
// baseline JSON ("wmap.baseline/1") and the comparison of two baselines
// ("wmap.compare/1"). Conventions: docs/baseline-format.md.
// Thread-safety: the functions are reentrant; objects are not shared.
#ifndef WMAP_BENCH_H_
#define WMAP_BENCH_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wmap/base.h"
#include "wmap/graph.h"
#include "wmap/map.h"
#include "wmap/plugin.h"
#include "wmap/session.h"

#ifdef __cplusplus
extern "C" {
#endif

WM_API_BEGIN

// ---------------------------------------------------------- statistics

// Sample counts a percentile needs before it is reported (MLPerf's
// early-stopping minimums at 99 % confidence).
#define WM_STATS_MIN_P90 64
#define WM_STATS_MIN_P95 130  // the same rule at q = 0.95
#define WM_STATS_MIN_P99 662
#define WM_STATS_MIN_P999 6636

// Summary of one sample. Percentiles are nearest-rank: P_q = x_(ceil(q*n))
// of the sorted sample (1-based); a percentile below its minimum count is
// still computed but its *_ok flag is false ("unsupported").
typedef struct wm_stats {
  size_t n;
  double min, max, mean;
  double sd;      // sample standard deviation (n - 1)
  double cv;      // sd / mean
  double median;  // P50 by nearest rank
  double mad;     // median absolute deviation from the median (unscaled)
  double q1, q3;  // P25, P75 by nearest rank
  double iqr;     // q3 - q1
  double p50, p90, p95, p99, p999;
  bool p90_ok, p95_ok, p99_ok, p999_ok;
  size_t outliers_mild;    // outside [q1 - 1.5 iqr, q3 + 1.5 iqr]
  size_t outliers_severe;  // outside [q1 - 3 iqr, q3 + 3 iqr]
} wm_stats_t;

// Computes the summary of |x| (n >= 1; not modified). INVALID_ARGUMENT for
// n = 0 or a value that is not finite.
wm_status_t wm_stats_compute(const double *x, size_t n,
                             wm_stats_t *out) WM_MUST_USE_RESULT;
// The 1-based nearest rank ceil(q*n) of a percentile, within [1, n]
// (n >= 1), robust to rounding in q*n (0.07 * 100 gives rank 7).
size_t wm_stats_rank(size_t n, double q);
// Nearest-rank percentile of an ascending |sorted| sample: x_(ceil(q*n)),
// q in [0, 1]; q = 0 gives the minimum.
double wm_stats_percentile(const double *sorted, size_t n, double q);

// Two-sided Mann-Whitney U test of samples |a| and |b|. U is the statistic
// of |a| (pairs with a > b, ties counting one half). The p-value is exact
// (the permutation distribution of the mid-rank sum, ties included) when
// both sizes are <= 20, else from the normal approximation with tie and
// continuity correction. p = 1 when every value is equal.
typedef struct wm_mwu {
  double u;
  double p;
  bool exact;
} wm_mwu_t;
wm_status_t wm_stats_mann_whitney(const double *a, size_t na, const double *b,
                                  size_t nb, wm_mwu_t *out) WM_MUST_USE_RESULT;

// Holm's step-down adjustment of |n| p-values (in place order kept).
void wm_stats_holm(const double *p, size_t n, double *adjusted);

// Percentile bootstrap confidence interval of median(b) / median(a),
// resampling each side's values (block medians) with replacement
// |resamples| times from a generator seeded with |seed|; |level| e.g. 0.95.
wm_status_t wm_stats_bootstrap_ratio(const double *a, size_t na,
                                     const double *b, size_t nb,
                                     size_t resamples, double level,
                                     uint64_t seed, double *out_lo,
                                     double *out_hi) WM_MUST_USE_RESULT;

// --------------------------------------------------------- environment

// One fact about where a baseline was measured. Critical facts are hashed
// into the fingerprint; two baselines whose critical facts differ are
// incomparable. Volatile ones are listed when they differ.
typedef struct wm_env_field {
  char key[48];     // e.g. "cpu.model", "lib.openblas.core"
  char value[208];  // text
  bool critical;
} wm_env_field_t;

#define WM_ENV_MAX_FIELDS 96

typedef struct wm_env {
  size_t n;
  wm_env_field_t fields[WM_ENV_MAX_FIELDS];
  char fingerprint[65];  // SHA-256 hex of the sorted critical key=value lines
} wm_env_t;

// Adds or replaces |key| (truncating the value to the field size).
void wm_env_set(wm_env_t *env, const char *key, bool critical, const char *fmt,
                ...) WM_PRINTF(4, 5);
// Returns the value of |key| or NULL.
const char *wm_env_get(const wm_env_t *env, const char *key);
// Collects this machine and build: CPU model, flags hash, cores, kernel,
// governor and frequency where readable, compiler and build type, wmap
// version and git revision, protobuf-c and OpenBLAS versions and core type
// (when the library is present), load average, and the environment
// variables that change behaviour (OPENBLAS_*, OMP_*, WMAP_*). The caller
// adds the model, backends and threads.
void wm_env_collect(wm_env_t *env);
// Recomputes env->fingerprint from the critical fields.
void wm_env_finish(wm_env_t *env);

// ------------------------------------------------------------ baseline

#define WM_BASELINE_FORMAT "wmap.baseline/1"
#define WM_COMPARE_FORMAT "wmap.compare/1"

// One block: a fresh process's timed iterations, in run order.
typedef struct wm_bench_block {
  int32_t index;     // block number within its configuration (0-based)
  int32_t order;     // position among all blocks of the run (0-based)
  size_t n;          // samples
  double *samples;   // ns per iteration, in run order
  double median_ns;  // nearest rank
  double mean_ns;
  double min_ns;
  double max_ns;
} wm_bench_block_t;

// Time of one node in the profile (--profile).
typedef struct wm_bench_op {
  const char *node;
  const char *op_type;
  const char *backend;  // where it ran
  double mean_ns;       // per iteration
  double share;         // of the sum over nodes
  double t_roof_ns;     // the map's roofline time on that backend (0 unknown)
  double efficiency;    // t_roof / mean (0 unknown)
} wm_bench_op_t;

typedef struct wm_bench_op_type {
  const char *op_type;
  size_t count;
  double mean_ns;  // sum over its nodes, per iteration
  double share;
  double t_roof_ns;
  double efficiency;
} wm_bench_op_type_t;

// A "key": "value" pair (backend versions, dims).
typedef struct wm_bench_kv {
  const char *key;
  const char *value;
} wm_bench_kv_t;

// One configuration: backends at a thread count.
typedef struct wm_bench_config {
  const char *label;  // "cpu,ref@t2"
  size_t n_backends;
  const char **backends;  // in order of preference
  uint32_t threads;
  size_t n_versions;
  wm_bench_kv_t *versions;  // backend name -> version
  size_t n_blocks;
  wm_bench_block_t *blocks;
  wm_stats_t latency;       // over every sample of every block
  double inferences_per_s;  // 1e9 / median_ns (per run of the model)
  double gflops;            // model FLOPs / median (0 when unknown)
  bool has_scaling;         // another configuration with the same backends
  uint32_t base_threads;    // ... at the fewest threads
  double speedup;           // base median / this median
  double efficiency;        // speedup * base_threads / threads
  size_t n_warnings;
  const char **warnings;  // "cv>10%", "first_block_slow", "few_blocks",
                          // "peak_exceeded"
  size_t n_ops;
  wm_bench_op_t *ops;  // profile per node, or none
  size_t n_op_types;
  wm_bench_op_type_t *op_types;  // by mean_ns, largest first
  size_t above_roof;             // profiled nodes with efficiency > 1: faster
                      // than the roofline allows, so the peak is wrong
  double max_efficiency;  // the largest node efficiency (0 unknown)
  const char *max_node;   // the node with it (borrowed), or NULL
} wm_bench_config_t;

typedef struct wm_baseline {
  wm_arena_t arena;         // owns every pointer below
  const char *created_utc;  // "2026-12-02T15:04:05Z"
  const char *tool_version;
  const char *tool_git;
  const char *build_type;
  const char *model_name;
  const char *model_sha256;
  size_t n_dims;
  wm_bench_kv_t *dims;  // dim bindings ("batch" -> "1")
  double model_flops;   // the map's totals.flops (0 unknown)
  int32_t blocks;       // method
  double min_time_s;
  int32_t min_iters;
  bool in_process;  // blocks ran in the measuring process (comm-bench,
                    // bench --parallel), not each in a fresh one
  wm_env_t env;
  size_t n_configs;
  wm_bench_config_t *configs;
} wm_baseline_t;

// An empty baseline (arena initialized); free with wm_baseline_destroy.
wm_status_t wm_baseline_create(wm_baseline_t **out) WM_MUST_USE_RESULT;
void wm_baseline_destroy(wm_baseline_t *baseline);
// Fills each configuration's latency, block statistics, throughput,
// scaling and warnings from its blocks' samples.
wm_status_t wm_baseline_finish(wm_baseline_t *baseline) WM_MUST_USE_RESULT;
// Appends the "wmap.baseline/1" JSON of |b|.
void wm_baseline_to_json(const wm_baseline_t *b, wm_strbuf_t *out);
// Reads a "wmap.baseline/1" file; DATA_LOSS naming the file and the member
// when it is not one.
wm_status_t wm_baseline_load(const char *path,
                             wm_baseline_t **out) WM_MUST_USE_RESULT;
// The readable summary (text, <= 100 columns; colour only if |color|).
void wm_baseline_to_text(const wm_baseline_t *b, bool color, wm_strbuf_t *out);
// One self-contained HTML page: latency histogram and CDF with P50/P90/P99,
// run-order plot with blocks, per-op Pareto chart, scaling curve.
void wm_baseline_to_html(const wm_baseline_t *b, wm_strbuf_t *out);

// --------------------------------------------------------------- runner

// Opens the backends of one configuration inside a block's process:
// |list| is the comma-separated backend list, |threads| the thread count;
// fills the registry (destroyed by the runner), the backends in order
// (borrowed from it, at most 8) and the fallback (ref, or NULL).
typedef wm_status_t (*wm_bench_open_fn)(void *ctx, const char *list,
                                        uint32_t threads,
                                        wm_registry_t **out_registry,
                                        wm_backend_t **out_backends,
                                        size_t *out_count,
                                        wm_backend_t **out_fallback);

typedef struct wm_bench_options {
  wm_graph_t *graph;          // the model, dims bound (read in children)
  const char *model_name;     // as given on the command line
  const char *model_sha256;   // of the file, or of the exported zoo model
  const wm_bench_kv_t *dims;  // bindings, for the record
  size_t n_dims;
  const char *const *lists;  // backend lists, one per configuration
  size_t n_lists;            //   group (each runs at every thread count)
  const uint32_t *threads;   // thread counts (0 = all cores)
  size_t n_threads;
  int32_t blocks;                  // per configuration (>= 1)
  double min_time_s;               // per block
  int32_t min_iters;               // per block
  bool profile;                    // time every node in each config's last
                                   //   block (extra runs, not samples)
  const char *passes;              // graph passes (wm_session_options_t)
  bool no_in_place;                // outputs never share an input's bytes
  wm_kernels_t kernels;            // which kernels backends run (--impl)
                                   //   (wm_session_options_t)
  const char *const *input_names;  // inputs, or NULL: generated
  const wm_tensor_t *const *inputs;
  size_t n_inputs;
  const wm_peaks_t *peaks;  // for t_roof in the profile, or NULL; taken
                            // at each configuration's thread count
                            // (wm_peaks_fp32_gflops_at)
  double model_flops;       // the map's totals.flops (0 = unknown)
  wm_bench_open_fn open;
  void *open_ctx;
  // Called in the parent after each block (done of total), or NULL.
  void (*progress)(void *ctx, size_t done, size_t total, const char *label);
  void *progress_ctx;
  int64_t max_iterations;       // wm_session_options_t's (0: the default)
  int64_t max_sequence_length;  // wm_session_options_t's (0: the default)
} wm_bench_options_t;

// Runs every configuration's blocks interleaved, each block in a fresh
// child process, and returns the finished baseline (environment collected,
// model recorded). A block that fails fails the run with its message.
wm_status_t wm_bench_run(const wm_bench_options_t *opts,
                         wm_baseline_t **out) WM_MUST_USE_RESULT;

// Work for a child process: appends its report to |out|.
typedef wm_status_t (*wm_bench_child_fn)(void *ctx, wm_strbuf_t *out);
// Runs |fn| in a forked child process and returns what it wrote (or, when
// it failed, "error <message>\n") in *out_text (caller frees) and its wait
// status in *out_status. Blocks and anything that loads plugins run this
// way, so the calling process never holds a plugin's threads across fork.
wm_status_t wm_bench_in_child(wm_bench_child_fn fn, void *ctx, char **out_text,
                              int *out_status) WM_MUST_USE_RESULT;

// Deterministic inputs for every graph input that is not an initializer:
// floats from a fixed sine pattern in [-1, 1]; integer inputs feeding a
// Gather's indices stay below that table's size (token ids), inputs named
// like "*mask*" are ones, other integers 0. Shapes must be known (bind
// dims first). The caller destroys the tensors and frees the arrays.
wm_status_t wm_bench_make_inputs(const wm_graph_t *graph, char ***out_names,
                                 wm_tensor_t ***out_inputs,
                                 size_t *out_count) WM_MUST_USE_RESULT;

// ----------------------------------------------------------- comparison

typedef enum wm_verdict {
  WM_VERDICT_NO_CHANGE = 0,
  WM_VERDICT_WITHIN_NOISE = 1,
  WM_VERDICT_IMPROVED = 2,
  WM_VERDICT_REGRESSED = 3,
  WM_VERDICT_INSUFFICIENT = 4,
  WM_VERDICT_INCOMPARABLE = 5,
  // Not significant, but the interval reaches past +-tau: the data cannot
  // tell a change above the threshold from none (more blocks can).
  WM_VERDICT_INCONCLUSIVE = 6,
} wm_verdict_t;

// "no_change", "within_noise", "improved", "regressed",
// "insufficient_data", "incomparable", "inconclusive".
const char *wm_verdict_name(wm_verdict_t v);

typedef struct wm_compare_options {
  double noise;      // tau (default 0.05)
  double alpha;      // default 0.05
  size_t resamples;  // default 10000
  uint64_t seed;     // default 1
  bool force;        // compare despite critical differences
} wm_compare_options_t;

typedef struct wm_env_diff {
  const char *field;
  const char *base;  // "" when absent
  const char *new_value;
  bool critical;
} wm_env_diff_t;

typedef struct wm_compare_metric {
  const char *name;  // "cpu@t1 vs cpu@t1: p50"
  const char *base_label;
  const char *new_label;
  const char *stat;  // "p50" or "p99"
  double base_ns, new_ns;
  double ratio, rel_change, ci_lo, ci_hi;  // ci of rel_change
  double p_value, p_adjusted, u;
  bool exact;
  size_t n_base, n_new;  // blocks
  wm_verdict_t verdict;
} wm_compare_metric_t;

typedef struct wm_compare {
  wm_arena_t arena;
  const char *base_path, *new_path;
  wm_compare_options_t opts;
  size_t n_diff;
  wm_env_diff_t *diff;
  size_t n_metrics;
  wm_compare_metric_t *metrics;
  double geomean_ratio;
  wm_verdict_t overall;
} wm_compare_t;

wm_status_t wm_compare_baselines(const wm_baseline_t *base,
                                 const wm_baseline_t *new_b,
                                 const char *base_path, const char *new_path,
                                 const wm_compare_options_t *opts,
                                 wm_compare_t **out) WM_MUST_USE_RESULT;
void wm_compare_destroy(wm_compare_t *c);
void wm_compare_to_text(const wm_compare_t *c, bool color, wm_strbuf_t *out);
void wm_compare_to_json(const wm_compare_t *c, wm_strbuf_t *out);
// A forest plot of the changes with their intervals and the +-tau band.
void wm_compare_to_html(const wm_compare_t *c, wm_strbuf_t *out);

WM_API_END

#ifdef __cplusplus
}
#endif

#endif  // WMAP_BENCH_H_
