// wmap runtime session: runs a graph on a backend, allocating through the
// backend's device tier and executing nodes through its library tier.
// Thread-safety: one thread at a time per session.
#ifndef WMAP_SESSION_H_
#define WMAP_SESSION_H_

#include "wmap/graph.h"
#include "wmap/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

WM_API_BEGIN

typedef struct wm_session wm_session_t;

// The most backends one session places nodes on.
#define WM_SESSION_MAX_BACKENDS 8

// What happens to a node no listed backend takes.
typedef enum wm_placement_mode {
  WM_PLACEMENT_FALLBACK = 0,  // it runs on the fallback backend (ref)
  WM_PLACEMENT_STRICT = 1,    // session creation fails, listing the nodes
} wm_placement_mode_t;

// How a session places nodes.
// Which kernels a backend runs a node with (--impl).
typedef enum wm_kernels {
  // Its library tier's (vendor library or native kernel) where it claims
  // the node, else a kernel the generator makes from the operator's
  // definition when the backend's device tier compiles a format the
  // generator prints (format "c"), else the next backend.
  WM_KERNELS_AUTO = 0,
  // Its library tier's only: nothing is generated.
  WM_KERNELS_LIBRARY = 1,
  // A generated kernel wherever the operator's definition expresses the
  // instance and the backend compiles it; the library tier for the rest.
  WM_KERNELS_GENERATED = 2,
} wm_kernels_t;

// One generated kernel wmap tune measured.
typedef struct wm_tune_result {
  const char *node;     // the first node running it (the session's)
  const char *op_type;  // its operator
  int32_t candidates;   // schedules measured
  double default_us;    // the default schedule's median time
  double best_us;       // the best one's (the default's when none is 3 %
                        // faster)
  char default_schedule[64];
  char best_schedule[64];
} wm_tune_result_t;

// Tunes the generated kernels of the session's current plan (it must have
// run): each kernel's candidate schedules (wm_gen_candidates) built by its
// backend and timed on the plan's buffers (median of 5 rounds), the best
// stored in the tuning records at |records_path| (NULL: tune.txt in the
// generator's cache folder), which plans made afterwards use. Stops
// starting kernels once |budget_s| seconds are spent. *out (heap, free)
// lists what was measured.
wm_status_t wm_session_tune(wm_session_t *session, double budget_s,
                            const char *records_path, wm_tune_result_t **out,
                            size_t *out_count) WM_MUST_USE_RESULT;

// The name of |k| as --impl takes it ("auto", "library", "generated").
const char *wm_kernels_name(wm_kernels_t k);
// Parses --impl's value; false for an unknown name.
bool wm_kernels_parse(const char *name, wm_kernels_t *out);

typedef struct wm_session_options {
  wm_backend_t *const *backends;  // in order of preference (borrowed)
  size_t backend_count;           // 1..WM_SESSION_MAX_BACKENDS
  wm_backend_t *fallback;         // FALLBACK mode's last resort, or NULL
  wm_placement_mode_t mode;       // FALLBACK (default) or STRICT
  const char *passes;  // comma list of passes to apply (wm_pass_name);
                       // NULL = all of them, "" = none
  // The caller gives up the data of |graph|'s weights: an initializer
  // whose every reader's backend plan holds its own form of it (packed
  // weights) has its data freed as soon as the last of them is planned,
  // so the weights are not held twice; its type stays, its data becomes
  // NULL. Taken only when the graph can have one plan (every input of
  // fully known shape and no initializer among them, no subgraphs);
  // otherwise the data stays. For a graph that serves only this session.
  bool release_weights;
  // Outputs never share an input's bytes: where a backend's plan may write
  // an output into the bytes of an input nothing reads after it (a
  // residual added into a convolution's result, an elementwise op), the
  // memory plan gives it its own bytes all the same (to compare).
  bool no_in_place;
  // Which kernels the backends run (AUTO: library, else generated).
  wm_kernels_t kernels;
  // The most iterations one Loop, Scan or SequenceMap node may run in one
  // run (0: WM_SESSION_MAX_ITERATIONS_DEFAULT); a run that reaches it fails
  // naming the node and the count (untrusted models: a trip count of 2^62,
  // a condition that never turns false).
  int64_t max_iterations;
  // The most elements a sequence the session makes may hold (0:
  // WM_SESSION_MAX_SEQUENCE_LENGTH_DEFAULT); past it the run fails naming
  // the node and the length (a SequenceInsert in a loop without end).
  int64_t max_sequence_length;
} wm_session_options_t;

// The defaults of wm_session_options_t.max_iterations and
// .max_sequence_length.
#define WM_SESSION_MAX_ITERATIONS_DEFAULT 10000000
#define WM_SESSION_MAX_SEQUENCE_LENGTH_DEFAULT 100000

// The graph passes a session can apply, in the order they run: returns
// their number, the name of pass |i| (as --passes takes it) and a line
// saying what it does (NULL past the end).
size_t wm_pass_count(void);
const char *wm_pass_name(size_t i);
const char *wm_pass_summary(size_t i);
// Checks a comma list of pass names as wm_session_options_t.passes takes
// it (empty items are skipped); an unknown name is INVALID_ARGUMENT naming
// it and the passes there are.
wm_status_t wm_passes_check(const char *list) WM_MUST_USE_RESULT;

// Why one backend did not get a node.
typedef struct wm_placement_refusal {
  const char *backend;  // backend name
  uint32_t level;       // WM_SUPPORT_* it answered (lower than the winner)
  uint32_t reason;      // WM_WHY_* it gave (NONE answers)
  const char *detail;   // its explanation, or ""
} wm_placement_refusal_t;

// Where one node runs and why (the placement report; the workload map
// uses the same fields).
typedef struct wm_placement {
  const char *node;      // node name or "#index"
  const char *op_type;   // ONNX op_type
  const char *domain;    // "" for ai.onnx
  const char *backend;   // backend that runs it
  uint32_t impl;         // WM_IMPL_* the backend reported
  uint32_t level;        // WM_SUPPORT_* the backend answered
  bool fell_back;        // no listed backend took it: fallback runs it
  size_t refusal_count;  // listed backends that answered lower
  const wm_placement_refusal_t *refusals;
  const char *pass;     // the pass that removed it (backend "-": it does
                        // not run) or fused it into another node, or NULL
  const char *runs_in;  // fused: the node it runs as part of, else NULL
  const char *runs_as;  // fused: that node's op_type, else NULL
  const char *kernel;   // generated by the host (impl "generated"): the
                        // kernel's name and schedule, else NULL
} wm_placement_t;

// Counters of the last run.
typedef struct wm_session_stats {
  size_t partitions;               // maximal runs of nodes on one backend
  size_t boundary_copies;          // tensors copied between backends last run
  uint64_t bytes_copied;           // their bytes
  size_t plans_made;               // plans made since creation (cache misses)
  uint64_t arena_bytes;            // the current plan's arenas, all backends
  size_t in_place_outputs;         // of its values, those written into an
                                   // input's bytes (no_in_place: 0)
  uint64_t constant_bytes;         // constants put on backends (since
                                   // creation)
  uint64_t constant_bytes_copied;  // of those, copied: the rest are used
                                   // in place (backends on host memory)
  size_t generated_kernels;        // distinct kernels the current plan
                                   // generated (all backends)
  double generate_ms;              // printing and building them: compiling
                                   // with a cold cache, loading with a warm
                                   // one
} wm_session_stats_t;

// Checks |graph| (structure, schemas, shape inference: the graph's value
// types are updated) and prepares running it on the backends of
// |options|: the session runs a copy rewritten by the graph passes
// (options->passes). Runs are planned once per signature of input types (dtypes
// and shapes): shape inference on the concrete types, placement of every
// node on its instance, the backends' plans and the memory layout; later
// runs with the same signature only execute. When the graph's inputs all
// have fully known types that plan is made here. The graph and backends
// are borrowed and must outlive the session. In STRICT mode (or without a
// fallback) planning fails listing every node no backend takes, with each
// backend's reason.
wm_status_t wm_session_create_placed(
    wm_graph_t *graph, const wm_session_options_t *options,
    wm_session_t **out_session) WM_MUST_USE_RESULT;
// Like wm_session_create_placed with |backend| alone, STRICT.
wm_status_t wm_session_create(wm_graph_t *graph, wm_backend_t *backend,
                              wm_session_t **out_session) WM_MUST_USE_RESULT;
// Frees a session and its device memory; accepts NULL.
void wm_session_destroy(wm_session_t *session);

// Runs the graph once. |inputs| are bound by name to graph inputs (a
// graph input that is also an initializer may be left out). On success
// out_outputs[i] (graph->output_count slots) receives a new host tensor
// per graph output, owned by the caller. A model with a sequence or
// optional among its outputs runs with wm_session_run_items.
wm_status_t wm_session_run(wm_session_t *session, const char *const *names,
                           const wm_tensor_t *const *inputs, size_t n_inputs,
                           wm_tensor_t **out_outputs) WM_MUST_USE_RESULT;

// Runs the graph once on items: tensors, sequences and optionals. Like
// wm_session_run, with |inputs| (n_inputs) bound by name; on success
// out_outputs[i] (graph->output_count slots) receives an item per graph
// output, owned by the caller (wm_item_deinit).
wm_status_t wm_session_run_items(wm_session_t *session,
                                 const char *const *names,
                                 const wm_item_t *inputs, size_t n_inputs,
                                 wm_item_t *out_outputs) WM_MUST_USE_RESULT;

// Runs the graph once like wm_session_run, writing the outputs into the
// caller's host tensors |outputs| (graph->output_count), each of the
// output's dtype and shape (an output of another shape is an error naming
// both). A run whose plan is made and whose nodes all run on backends
// allocates nothing on the host.
wm_status_t wm_session_run_into(wm_session_t *session, const char *const *names,
                                const wm_tensor_t *const *inputs,
                                size_t n_inputs,
                                wm_tensor_t *const *outputs) WM_MUST_USE_RESULT;

// Returns the number of nodes of the graph the session was made with.
size_t wm_session_node_count(const wm_session_t *session);
// Returns how many of them the current plan runs (alone or fused into
// another node); the others were removed by passes.
size_t wm_session_nodes_run(const wm_session_t *session);
// Returns the placement of node |index| of the graph the session was made
// with (graph order) in the plan of the last run (before any run: the
// plan made at creation), or NULL when no plan is made yet; borrowed until
// the next run.
const wm_placement_t *wm_session_placement(const wm_session_t *session,
                                           size_t index);
// Returns how many nodes of the current plan run on the backend named
// |backend|.
size_t wm_session_nodes_on(const wm_session_t *session, const char *backend);
// Returns the counters of the last run and of the current plan.
wm_session_stats_t wm_session_stats(const wm_session_t *session);
// Profiling: while on, every node of later runs is followed by a sync of
// its backend's stream and its wall time (ns) is added to the node's total.
wm_status_t wm_session_set_profiling(wm_session_t *session,
                                     bool on) WM_MUST_USE_RESULT;
// Total profiled ns per node (index of the graph the session was made
// with; a node fused with others carries their time, the others 0; NULL
// before profiling was first turned on) and the number of runs that added
// to it.
const double *wm_session_node_ns(const wm_session_t *session, size_t *out_runs);
// Returns the name of an implementation kind ("vendor library"...).
const char *wm_impl_name(uint32_t impl);
// Returns the name of a support level ("supported"...).
const char *wm_level_name(uint32_t level);
// Returns the name of a refusal reason ("dtype"...).
const char *wm_why_name(uint32_t reason);
// Appends the placement report as JSON (schema "wmap.placement/1").
void wm_session_placement_json(const wm_session_t *session, wm_strbuf_t *out);
// Appends the placement report as an aligned text table.
void wm_session_placement_text(const wm_session_t *session, wm_strbuf_t *out);

WM_API_END

#ifdef __cplusplus
}
#endif

#endif  // WMAP_SESSION_H_
