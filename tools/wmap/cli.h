// Shared pieces of the wmap command line: subcommand entry points, exit
// codes and helpers for loading models and backends.
#ifndef WMAP_TOOLS_CLI_H_
#define WMAP_TOOLS_CLI_H_

#include "wmap/bench.h"
#include "wmap/graph.h"
#include "wmap/map.h"
#include "wmap/plugin.h"
#include "wmap/session.h"

enum { WM_EXIT_OK = 0, WM_EXIT_FAILED = 1, WM_EXIT_USAGE = 2 };

// Subcommands: each parses its own options and returns an exit code.
int wm_cli_run(int argc, char **argv);
int wm_cli_tune(int argc, char **argv);
int wm_cli_conform(int argc, char **argv);
int wm_cli_backends(int argc, char **argv);
int wm_cli_zoo(int argc, char **argv);
int wm_cli_probe(int argc, char **argv);
int wm_cli_map(int argc, char **argv);
int wm_cli_bench(int argc, char **argv);
int wm_cli_compare(int argc, char **argv);
int wm_cli_comm_bench(int argc, char **argv);

// Prints "wmap: <status message>" on stderr, frees |s|; returns
// WM_EXIT_FAILED.
int wm_cli_fail(wm_status_t s);
// Prints a usage error and a hint to use --help; returns WM_EXIT_USAGE.
int wm_cli_usage_error(const char *cmd, const char *fmt, ...) WM_PRINTF(2, 3);

// Prints the one usage error for the option getopt_long(..., |optstring|,
// ...) of |cmd| just refused ('?'): unknown, missing its argument or given
// a value it does not take, naming it; returns WM_EXIT_USAGE. main() sets
// opterr = 0, so getopt prints nothing itself.
int wm_cli_option_error(const char *cmd, const char *optstring, char **argv);
// Checks the backend list |value| of |option| ("backends"): names
// separated by single commas, none empty ("," and ",,cpu," are refused);
// returns WM_EXIT_OK or prints a usage error for |cmd| and returns
// WM_EXIT_USAGE.
int wm_cli_backends_option(const char *cmd, const char *option,
                           const char *value);

// Returns a heap string formatted like printf (a path, a key), or NULL
// when out of memory; wm_cli_vformat takes a va_list.
char *wm_cli_path(const char *fmt, ...) WM_PRINTF(1, 2);
char *wm_cli_vformat(const char *fmt, va_list ap) WM_PRINTF(1, 0);

// Where the command line looks for backends: the options every command
// that opens a backend shares (--backend-path DIR, --threads N).
typedef struct wm_cli_backend_options {
  const char **paths;    // --backend-path values, in order (borrowed)
  size_t n_paths;        // number of |paths|
  uint32_t num_threads;  // --threads (0 = all cores)
  bool threads_set;      // --threads given; else WMAP_NUM_THREADS is read
  bool quiet;            // warn only of plugins that crashed, exited, hung
                         //   or are shadowed, and of --backend-path ones
  bool lists_refusals;   // no warning at all: the command lists them
} wm_cli_backend_options_t;

// Usage text of the shared backend options, for a command's --help.
#define WM_CLI_BACKEND_OPTIONS_USAGE                                          \
  "  --backend-path DIR   also look for backends in DIR (a folder or a .so\n" \
  "                       file; repeatable; before WMAP_BACKEND_PATH)\n"      \
  "  --threads N          threads for CPU backends (0 = all cores; default\n" \
  "                       WMAP_NUM_THREADS or 0)\n"

// Usage text of the graph-pass options of commands that run models.
#define WM_CLI_PASS_OPTIONS_USAGE                                             \
  "  --passes LIST        graph passes to apply, comma-separated (default:\n" \
  "                       all: fold,dead,conv-bn,transpose,layernorm,\n"      \
  "                       attention,epilogue,eltwise)\n"                      \
  "  --no-passes          run the graph exactly as written\n"
// Usage text of --no-in-place (wm_session_options_t.no_in_place).
#define WM_CLI_IN_PLACE_USAGE                                                \
  "  --no-in-place        never write an output into an input's bytes (as\n" \
  "                       backends may where nothing reads the input\n"      \
  "                       after), to compare\n"

// Usage text of --impl (wm_session_options_t.kernels).
#define WM_CLI_IMPL_USAGE                                                   \
  "  --impl WHICH         kernels backends run: auto (default: a library\n" \
  "                       or native kernel, else one generated from the\n"  \
  "                       operator's definition), library (never\n"         \
  "                       generated) or generated (wherever one exists)\n"
// Takes --impl's value into *out; returns WM_EXIT_OK, or prints a usage
// error for |cmd| and returns WM_EXIT_USAGE.
int wm_cli_impl_option(const char *cmd, const char *value, wm_kernels_t *out);

// Usage text of --max-iterations and --max-sequence-length
// (wm_session_options_t.max_iterations and .max_sequence_length).
#define WM_CLI_LIMIT_OPTIONS_USAGE                                           \
  "  --max-iterations N   stop a run whose Loop, Scan or SequenceMap node\n" \
  "                       reaches N iterations (default 10000000)\n"         \
  "  --max-sequence-length N\n"                                              \
  "                       stop a run that makes a sequence of more than N\n" \
  "                       elements (default 100000)\n"
// Takes the value of --max-iterations or --max-sequence-length (|opt|,
// as getopt_long names it) into *out; returns WM_EXIT_OK, or prints a
// usage error for |cmd| and returns WM_EXIT_USAGE.
int wm_cli_limit_option(const char *cmd, const char *opt, const char *text,
                        int64_t *out);

// Takes --passes LIST (checked against the passes there are) or, with
// |list| NULL, --no-passes into *passes (NULL: all, "": none); returns
// WM_EXIT_OK, or prints a usage error for |cmd| and returns WM_EXIT_USAGE.
int wm_cli_passes_option(const char *cmd, const char *list,
                         const char **passes);

// Takes the value of the shared option |option| ("backend-path" or
// "threads", as getopt_long names it) into |opts|; returns WM_EXIT_OK, or
// prints a usage error for |cmd| and returns WM_EXIT_USAGE (also for a
// --backend-path that does not exist, is a folder without plugins or a
// file that is not a shared library).
int wm_cli_backend_option(const char *cmd, const char *option,
                          const char *value, wm_cli_backend_options_t *opts);
// Frees what wm_cli_backend_option allocated; accepts zeroed options.
void wm_cli_backend_options_deinit(wm_cli_backend_options_t *opts);
// Opens the registry of backends: the built-in "ref" plus the plugins on
// the search path; |opts| may be NULL (defaults).
wm_status_t wm_cli_registry_open(const wm_cli_backend_options_t *opts,
                                 wm_registry_t **out) WM_MUST_USE_RESULT;
// Resolves a comma-separated list of backend names (NULL or "": every
// loaded backend, ref last) into out_backends (room for
// WM_SESSION_MAX_BACKENDS, borrowed from |reg|).
wm_status_t wm_cli_backend_list(wm_registry_t *reg, const char *list,
                                wm_backend_t **out_backends,
                                size_t *out_count) WM_MUST_USE_RESULT;

// This machine's peaks for the backends on |opts|'s search path, as
// `wmap probe` gets them (cache or measurement at all cores and 1 thread);
// |po| gives refresh/no_cache/quick (its registry fields are set here).
wm_status_t wm_cli_peaks_get(const wm_cli_backend_options_t *opts,
                             wm_peaks_options_t *po,
                             wm_peaks_t *out) WM_MUST_USE_RESULT;

// --dim NAME=VALUE and --shape INPUT=DIMS bindings shared by the commands
// that take them.
#define WM_CLI_MAX_DIMS 64
typedef struct wm_cli_dims {
  size_t n;
  char *names[WM_CLI_MAX_DIMS];  // owned
  int64_t values[WM_CLI_MAX_DIMS];
  size_t n_shapes;
  char *shape_inputs[WM_CLI_MAX_DIMS];  // --shape inputs (owned)
  wm_shape_t shapes[WM_CLI_MAX_DIMS];   // their shapes
} wm_cli_dims_t;
// Usage lines of --dim and --shape.
#define WM_CLI_DIM_OPTIONS_USAGE                                               \
  "  --dim NAME=VALUE     bind a symbolic dim of the model (repeatable)\n"     \
  "  --shape INPUT=DIMS   give input INPUT the shape DIMS, e.g. 1x3x640x640\n" \
  "                       (repeatable); dims nothing binds are 1, noted\n"
// Parses one --dim value into |dims|; returns WM_EXIT_OK or prints a usage
// error for |cmd| and returns WM_EXIT_USAGE.
int wm_cli_dim_option(const char *cmd, const char *text, wm_cli_dims_t *dims);
// Parses one --shape value into |dims|, like wm_cli_dim_option.
int wm_cli_shape_option(const char *cmd, const char *text, wm_cli_dims_t *dims);
// Makes every dim of |graph|'s inputs known: --shape sets an input's dims
// (a named dim becomes a --dim binding, checked against the others), and,
// when |defaults|, every dim still unbound is 1, listed in one note on
// stderr. Named bindings end up in |dims| (bound on |graph| too when
// |bind_named|); the others are set on the input directly.
wm_status_t wm_cli_dims_apply(const char *cmd, wm_graph_t *graph,
                              wm_cli_dims_t *dims, bool bind_named,
                              bool defaults) WM_MUST_USE_RESULT;
void wm_cli_dims_deinit(wm_cli_dims_t *dims);

// Checks the operands after the options: none with --zoo, else exactly one
// MODEL file (*out_model; NULL with --zoo). Returns WM_EXIT_OK or prints a
// usage error for |cmd| and returns WM_EXIT_USAGE.
int wm_cli_model_operand(const char *cmd, const char *zoo, int argc,
                         char **argv, int first, const char **out_model);
// Loads a model: the zoo spec |zoo| when not NULL, else the file |path|.
wm_status_t wm_cli_model_load(const char *zoo, const char *path,
                              wm_graph_t **out) WM_MUST_USE_RESULT;

// A numeric option --|opt| of |cmd| in [lo, hi] into *out; returns
// WM_EXIT_OK, or prints a usage error naming the range and returns
// WM_EXIT_USAGE.
int wm_cli_number_option(const char *cmd, const char *opt, const char *text,
                         double lo, double hi, double *out);
// The same for a whole number.
int wm_cli_count_option(const char *cmd, const char *opt, const char *text,
                        int32_t lo, int32_t hi, int32_t *out);

// --color WHEN: sets *out to -1 (auto), 0 (never) or 1 (always); returns
// WM_EXIT_OK or prints a usage error for |cmd| and returns WM_EXIT_USAGE.
int wm_cli_color_option(const char *cmd, const char *value, int *out);
// Whether a text report goes out coloured: always/never as asked; auto
// only to a terminal (stdout, not a file) and when NO_COLOR is unset.
bool wm_cli_use_color(int color, bool to_file);
// Writes a report to |path|, or to stdout when |path| is NULL; fails when
// the buffer ran out of memory while it was built.
wm_status_t wm_cli_write_report(const char *path,
                                const wm_strbuf_t *report) WM_MUST_USE_RESULT;

// The peaks cache file of this machine (caller frees) and whether it
// exists yet.
wm_status_t wm_cli_peaks_cache(char **out_path,
                               bool *out_exists) WM_MUST_USE_RESULT;

// One test_data_set folder: inputs bound to graph input names, expected
// outputs in graph output order; each a tensor, sequence or optional.
typedef struct wm_cli_dataset {
  size_t n_inputs;     // values found as input_K.pb
  char **input_names;  // graph input each binds to
  wm_item_t *inputs;   // owned
  size_t n_outputs;    // values found as output_K.pb
  wm_item_t *outputs;  // owned
} wm_cli_dataset_t;
// A baseline to fill by hand (comm-bench, bench --parallel): created now,
// |model| and |sha256| recorded, this machine's environment collected
// (the caller adds its own facts, then wm_env_finish), the tool's version,
// git revision and build type taken from it, and room for |n_configs|
// zeroed configurations (n_configs left 0: the caller counts them).
wm_status_t wm_cli_baseline_new(const char *model, const char *sha256,
                                size_t n_configs,
                                wm_baseline_t **out) WM_MUST_USE_RESULT;

// Moves each output NAME.next of |graph| whose NAME is a graph input into
// |ds| as that input's value (replacing or adding it), for the next step
// of a run of several (--steps); |outs| has graph->output_count items,
// the moved ones left empty. *out_fed counts them (may be NULL).
wm_status_t wm_cli_feed_next(const wm_graph_t *graph, wm_item_t *outs,
                             wm_cli_dataset_t *ds,
                             size_t *out_fed) WM_MUST_USE_RESULT;

// A run split over ranks (--parallel; tools/wmap/parallel.c).
typedef struct wm_cli_parallel_run {
  wm_map_parallel_t spec;               // tp > 1 or dp > 1 (not both; pp
                                        //   refused so far)
  wm_graph_t *graph;                    // dims bound; types are inferred
  const wm_session_options_t *session;  // each rank's session's
  const char *const *input_names;       // the whole inputs
  const wm_item_t *inputs;
  size_t n_inputs;
  int32_t steps;  // runs, each fed its NAME.next outputs (>= 1)
} wm_cli_parallel_run_t;
// Runs |p->graph| split over spec.tp (tensor) or spec.dp (data) ranks:
// threads of this process, or the processes of the MPI job when started
// by mpirun (-np must be the rank count). Data-parallel ranks take equal
// shares of the batch inputs (src/parallel/parallel.h).
// Rank 0 gets the whole outputs in *out_outputs (graph->output_count
// items, caller deinits and frees) and appends to |report| (may be NULL)
// each collective's calls and bytes per rank beside the map's prediction;
// other MPI ranks get NULL.
wm_status_t wm_cli_parallel_run(const wm_cli_parallel_run_t *p,
                                wm_item_t **out_outputs,
                                wm_strbuf_t *report) WM_MUST_USE_RESULT;

// A benchmark of a split run (bench --parallel).
typedef struct wm_cli_parallel_bench {
  wm_cli_parallel_run_t run;  // the split (run.steps unused)
  const char *model_name;     // for the baseline
  const char *model_sha256;
  int32_t blocks;         // per configuration
  double min_time;        // timed seconds per block at least
  int32_t min_iters;      // timed runs per block at least
  uint32_t rank_threads;  // CPU threads each rank's backends use
} wm_cli_parallel_bench_t;
// Measures run.graph split as run.spec says against the whole model on
// one rank with the same threads, in interleaved blocks of warmed-up,
// timed runs (a run's time: the slowest rank's), in this process: a
// baseline of two configurations ("1 rank" and the split, whose threads
// count the cores in use, so that its scaling is strong scaling against
// 1 rank). Rank 0 gets the baseline and, in |report|, the collectives'
// calls and bytes beside the map's and the scaling; other MPI ranks get
// NULL.
wm_status_t wm_cli_parallel_bench(const wm_cli_parallel_bench_t *o,
                                  wm_baseline_t **out,
                                  wm_strbuf_t *report) WM_MUST_USE_RESULT;

// Inputs for a run without --inputs: |dims| applied to |graph| (dims
// nothing binds are 1, in one note from |cmd|), then the values
// wm_bench_make_inputs makes.
wm_status_t wm_cli_generated_inputs(const char *cmd, wm_graph_t *graph,
                                    wm_cli_dims_t *dims,
                                    wm_cli_dataset_t *ds) WM_MUST_USE_RESULT;
// The same values for |graph| whose dims are bound already.
wm_status_t wm_cli_made_inputs(const wm_graph_t *graph,
                               wm_cli_dataset_t *ds) WM_MUST_USE_RESULT;

// Loads input_K.pb (and output_K.pb) from |dir| for |graph|: a value
// named like a graph input binds to it, others bind by position to the
// inputs that are not initializers. Each file is read as the kind (tensor,
// sequence, optional) its graph value declares.
wm_status_t wm_cli_dataset_load(const char *dir, const wm_graph_t *graph,
                                wm_cli_dataset_t *out) WM_MUST_USE_RESULT;
// The dataset's inputs as tensors (*out_tensors borrowed from |ds|, to be
// freed), or an error naming the first input that is not a tensor.
wm_status_t wm_cli_dataset_tensors(const wm_cli_dataset_t *ds,
                                   const wm_tensor_t ***out_tensors)
    WM_MUST_USE_RESULT;
// Frees a dataset's tensors and names.
void wm_cli_dataset_deinit(wm_cli_dataset_t *ds);
#endif  // WMAP_TOOLS_CLI_H_
