// wmap map, part 1: machine peaks. Measures what the host CPU can do (an
// FMA loop per dtype, a STREAM-style triad) and what each loaded backend
// reaches on its own square float MatMul through the plugin ABI (n^3, n
// doubled from 256 while one call takes under 10 ms, at most 1024), at one
// thread and at all cores; caches the result as JSON ("wmap.peaks/1")
// under $XDG_CACHE_HOME/wmap (or ~/.cache/wmap) in a file named after the
// machine fingerprint, with the software fingerprint inside. Backends may
// also declare peaks in their target description; the map uses those when
// it cannot measure.
// Thread-safety: the functions here are not reentrant on one wm_peaks_t.
#ifndef WMAP_MAP_H_
#define WMAP_MAP_H_

#include <stdbool.h>
#include <stdint.h>

#include "wmap/base.h"
#include "wmap/graph.h"
#include "wmap/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

WM_API_BEGIN

#define WM_PEAKS_FORMAT "wmap.peaks/1"
#define WM_PEAKS_MAX_BACKENDS 16
#define WM_PEAKS_SOFTWARE_CAP 1536

// The machine a cache file belongs to. The fingerprint is the FNV-1a 64
// hash (16 hex digits) of "model|cores|flags_hash|kernel".
typedef struct wm_machine {
  char model[128];       // /proc/cpuinfo "model name" ("unknown" if absent)
  int32_t cores;         // wm_cpu_count()
  uint64_t flags_hash;   // FNV-1a 64 of the first /proc/cpuinfo "flags" line
  char kernel[80];       // uname -r
  char fingerprint[17];  // hex
} wm_machine_t;

// What one backend reaches (GFLOP/s and GB/s; 0 = not measured/unknown).
typedef struct wm_peaks_backend {
  char name[64];         // the backend's short name
  char target[128];      // its target 0's name
  bool host;             // target 0 is a CPU: host figures apply
  double gemm_fp32[2];   // n^3 float MatMul: [0] 1 thread, [1] all
  int64_t gemm_n;        // the n timed (0 = not measured)
  char gemm_note[160];   // why GEMM was not measured, or ""
  double declared_fp32;  // target description peak_gflops_fp32
  double declared_fp16;  // target description peak_gflops_fp16
  double declared_bw;    // target description mem_bandwidth_gbs
} wm_peaks_backend_t;

// Peaks of this machine. Index [0] is one thread, [1] all |threads|.
typedef struct wm_peaks {
  wm_machine_t machine;
  int64_t measured_at;  // Unix seconds
  bool from_cache;      // read from the cache file, not measured now
  int32_t threads;      // "all cores" thread count used
  double fma_fp32[2];   // FMA loop GFLOP/s (2 FLOP per FMA lane)
  double fma_fp64[2];   // same for double
  double triad_gbs[2];  // a[i] = b[i] + s*c[i], 12 B per float element
  char isa[16];         // the FMA loop's variant: avx512f, avx2, default
  char software[17];    // FNV-1a 64 hex of |software_detail| ("" unknown)
  char software_detail[WM_PEAKS_SOFTWARE_CAP];  // wm_peaks_software's text
  size_t n_backends;
  wm_peaks_backend_t backends[WM_PEAKS_MAX_BACKENDS];
} wm_peaks_t;

typedef struct wm_peaks_options {
  wm_registry_t *registry;  // backends at all cores (NULL = none)
  // Opens the same backends again at 1 thread into *out (NULL = no
  // 1-thread GEMM). Called once, after every all-core GEMM: a plugin loaded
  // twice is one shared library image whose globals the later load sets.
  wm_status_t (*open_one)(void *ctx, wm_registry_t **out);
  void *open_ctx;         // passed to open_one
  bool refresh;           // measure even if a cache file exists
  bool no_cache;          // neither read nor write the cache
  bool quick;             // tiny sizes and durations (tests): numbers are rough
  const char *cache_dir;  // NULL = $XDG_CACHE_HOME/wmap or ~/.cache/wmap
} wm_peaks_options_t;

// Fills |out| with this machine's identity.
void wm_machine_get(wm_machine_t *out);
// Returns the cache file path for |m| under |dir| (NULL = default folder);
// the caller frees it.
wm_status_t wm_peaks_cache_path(const char *dir, const wm_machine_t *m,
                                char **out_path) WM_MUST_USE_RESULT;
// Measures everything now (several seconds; quick: well under one).
wm_status_t wm_peaks_measure(const wm_peaks_options_t *opts,
                             wm_peaks_t *out) WM_MUST_USE_RESULT;
// Appends |p| as a "wmap.peaks/1" JSON object to |buf|.
void wm_peaks_to_json(const wm_peaks_t *p, wm_strbuf_t *buf);
// Writes into |out| (|cap| bytes) what the peaks depend on besides the
// machine, as "; "-separated items: "wmap <version>", each backend of
// |registry| (NULL = none) as "<name> <version> <origin>" with the origin
// file's size and modification time, and the OpenBLAS config and core
// type when this process has OpenBLAS loaded; *out_fingerprint (17 bytes)
// gets its FNV-1a 64 hash in hex.
void wm_peaks_software(wm_registry_t *registry, char *out, size_t cap,
                       char *out_fingerprint);
// Checks that |p| can be believed: every figure finite and >= 0, and no
// host backend's GEMM more than 5 % above the host FMA peak at the same
// thread count (a GEMM cannot beat the FMA units; one that does means one
// of the two measurements is wrong). DATA_LOSS naming the backend and
// both values otherwise.
wm_status_t wm_peaks_check(const wm_peaks_t *p) WM_MUST_USE_RESULT;
// Parses a "wmap.peaks/1" document and checks it (wm_peaks_check);
// DATA_LOSS naming the field and value when it is not one or is refused.
wm_status_t wm_peaks_from_json(const char *text, size_t len,
                               wm_peaks_t *out) WM_MUST_USE_RESULT;
// Reads the peaks file |path| into |out|; messages call it a peaks file
// (not the cache: from_cache stays false, wm_peaks_get sets it).
wm_status_t wm_peaks_load(const char *path, wm_peaks_t *out) WM_MUST_USE_RESULT;
// Writes |p| to |path| (creating its folder).
wm_status_t wm_peaks_save(const char *path,
                          const wm_peaks_t *p) WM_MUST_USE_RESULT;
// The cached peaks when the cache matches this machine and this software
// (wm_peaks_software of |opts->registry|) and holds every loaded backend,
// else measures (and writes the cache unless no_cache). A corrupt or
// refused cache file (wm_peaks_check) or one measured with other software
// gets a warning on the log naming the file and why, and is measured
// again. A fresh measurement wm_peaks_check refuses is returned with a
// warning but not cached.
wm_status_t wm_peaks_get(const wm_peaks_options_t *opts,
                         wm_peaks_t *out) WM_MUST_USE_RESULT;
// The fp32 GFLOP/s the map should assume for backend |name| at all cores:
// the backend's own measured GEMM (ref's naive loops have their own, far
// lower roof than an optimised host backend on the same CPU), else for a
// host (CPU) backend the host FMA peak, else the declared peak; 0 when
// unknown.
double wm_peaks_fp32_gflops(const wm_peaks_t *p, const char *name);
// Memory bandwidth GB/s for backend |name|: the host triad for a CPU
// backend, else declared; 0 when unknown.
double wm_peaks_bandwidth_gbs(const wm_peaks_t *p, const char *name);
// wm_peaks_fp32_gflops at |threads| threads (0 = all cores). Host figures
// are measured at 1 thread ([0]) and at all p->threads cores ([1]); 1
// thread takes [0], p->threads or more (or 0) take [1], and a count t in
// between min(t x [0], [1]): each thread adds one thread's peak until the
// all-core figure caps it. Without a 1-thread figure [1] is used. Other
// backends' figures do not depend on host threads.
double wm_peaks_fp32_gflops_at(const wm_peaks_t *p, const char *name,
                               int32_t threads);
// wm_peaks_bandwidth_gbs at |threads| threads, interpolated the same way.
double wm_peaks_bandwidth_gbs_at(const wm_peaks_t *p, const char *name,
                                 int32_t threads);

// ------------------------------------------------------------- the map
//
// wm_map_build analyses a graph without running it: an inventory per node
// and op type (MACs, FLOPs, transcendentals, bytes split into activations
// in, weights and outputs, arithmetic intensity, parameters), the memory
// (weights plus the peak of live activations), a roofline time and class
// per node on each backend's peaks, coverage per node and backend from
// op_query on the backend's target description, the critical path, and
// the collectives of a parallel plan. Conventions: ARCHITECTURE.md
// decision 8 and docs/map-format.md. A node that cannot be analysed
// (unknown operator, invalid, unbound dim) is kept and marked; the map of
// the rest is still built.

#define WM_MAP_FORMAT "wmap.map/1"

// Why a node could not be fully analysed.
typedef enum wm_map_state {
  WM_MAP_NODE_OK = 0,
  WM_MAP_NODE_UNKNOWN_OP = 1,     // no definition for the op at its opset
  WM_MAP_NODE_INVALID = 2,        // its schema or shape rule refused it
  WM_MAP_NODE_UNKNOWN_SHAPE = 3,  // an input or output shape is not known
} wm_map_state_t;

// How one backend would run one node.
typedef enum wm_map_cover {
  WM_COVER_VENDOR_LIBRARY = 0,  // reused: the vendor's operator library
  WM_COVER_NATIVE = 1,          // the backend's own hand-written kernel
  WM_COVER_GENERATED = 2,       // a kernel generated from the op definition
  WM_COVER_FALLBACK = 3,        // the backend refuses; the fallback runs it
  WM_COVER_MISSING = 4,         // nothing here can run it
  WM_COVER_COUNT = 5,
} wm_map_cover_t;

// What limits a node's roofline time.
typedef enum wm_map_bound {
  WM_BOUND_UNKNOWN = 0,  // no peak known, or the node's work is unknown
  WM_BOUND_COMPUTE = 1,
  WM_BOUND_MEMORY = 2,
  WM_BOUND_COMMUNICATION = 3,  // only under a parallel plan
} wm_map_bound_t;

// One node on one backend. Times are seconds; 0 when unknown.
typedef struct wm_map_cell {
  wm_map_cover_t cover;
  uint32_t level;      // WM_SUPPORT_* the backend answered
  uint32_t impl;       // WM_IMPL_* it reported
  uint32_t reason;     // WM_WHY_* when it refused
  const char *detail;  // its explanation, or ""
  double t_comp;       // flops / peak FLOP/s
  double t_mem;        // bytes / bandwidth
  double t_comm;       // communication the plan puts after it
  double t_roof;       // max of the three
  wm_map_bound_t bound;
} wm_map_cell_t;

// One node, in execution order. Bytes count each input and output tensor
// once (unfused, compulsory traffic).
typedef struct wm_map_node {
  int32_t index;         // node index in the graph
  const char *name;      // node name or "#index"
  const char *op_type;   // ONNX op_type
  const char *domain;    // "" for ai.onnx
  wm_map_state_t state;  // OK or why not
  const char *note;      // what went wrong ("" when OK)
  const char *inputs;    // input types, e.g. "f32[1,3,224,224], f32[64,3,7,7]"
  const char *outputs;   // output types
  double macs;
  double flops;
  double transcendentals;
  uint64_t act_in_bytes;  // inputs that are not initializers
  uint64_t weight_bytes;  // inputs that are initializers
  uint64_t out_bytes;     // outputs
  double intensity;       // flops / (act_in + weight + out bytes); 0 if none
  int64_t params;         // learnable elements of initializers first read here
  size_t n_preds;         // producers among the map's nodes
  const size_t *preds;    // their positions in wm_map_t.nodes
  double weight;          // critical-path weight: t_roof on the critical-path
                          // backend, or the measured time (s)
  double start;           // earliest start on the critical-path backend (s)
  double slack;           // latest start - earliest start (s)
  bool critical;          // on the critical path
  double measured_s;      // measured time (options' node_seconds), or 0
  size_t measured_backend;  // index into wm_map_t.backends of the backend
                            // that ran it (the critical-path one if unnamed)
  double achieved_gflops;   // flops / measured_s (0 when either is 0)
  double roof_pct;          // 100 x max(t_comp, t_mem) on that backend /
                    // measured_s: how close it ran to its roof (0 unknown;
                    // above 100 the peak is too low for it)
  int32_t stage;         // pipeline stage under a plan (0 without)
  bool sharded;          // tensor-parallel: runs on 1/tp of the work
  wm_map_cell_t *cells;  // one per wm_map_t.backends entry
} wm_map_node_t;

// Aggregate of one op type on one backend.
typedef struct wm_map_type_cell {
  size_t count[WM_COVER_COUNT];  // nodes per cover kind
  double t_roof;                 // sum over the type's nodes (s)
} wm_map_type_cell_t;

// Aggregate of one op type (sorted by FLOPs, then count, then name).
typedef struct wm_map_optype {
  const char *op_type;
  const char *domain;
  size_t count;
  double macs;
  double flops;
  double transcendentals;
  uint64_t act_in_bytes;
  uint64_t weight_bytes;
  uint64_t out_bytes;
  int64_t params;
  wm_map_type_cell_t *cells;  // one per backend
} wm_map_optype_t;

// An operator a backend still lacks (the "write" half of reuse vs write).
typedef struct wm_map_todo {
  const char *op_type;
  const char *domain;
  size_t nodes;        // nodes of this type the backend refuses
  double flops;        // their FLOPs
  uint32_t reason;     // WM_WHY_* of the first refusal
  const char *detail;  // its explanation
} wm_map_todo_t;

// The backend summary (coverage, peaks, collective tier).
typedef struct wm_map_backend {
  const char *name;
  const char *version;
  const char *target;            // target 0's name
  bool fallback;                 // the fallback backend (ref) itself
  double peak_gflops;            // fp32 GFLOP/s the roofline uses (0 unknown)
  double bandwidth_gbs;          // GB/s the roofline uses (0 unknown)
  const char *peak_source;       // "measured", "declared" or "unknown"
  int32_t peak_threads;          // host threads the peaks are taken at
                                 // (0 = all cores)
  double ridge;                  // FLOP per byte: peak / bandwidth (0 unknown)
  size_t count[WM_COVER_COUNT];  // nodes per cover kind
  size_t nodes_covered;          // vendor + native + generated
  double flops_covered;          // FLOPs of those nodes
  double t_roof;                 // sum over all nodes (s)
  double t_roof_covered;         // over covered nodes (s)
  size_t partitions;             // runs of consecutive nodes on one side
  size_t boundary_copies;        // tensors crossing between it and the fallback
  uint64_t boundary_bytes;
  const char *suitability;  // "good", "maybe" or "poor" (ORT's rule)
  size_t n_todo;
  wm_map_todo_t *todo;     // sorted by FLOPs, then nodes
  bool has_collectives;    // the plugin has a collective tier
  uint32_t coll_level[5];  // WM_SUPPORT_* per WM_COLL_* kind (index 1..4)
} wm_map_backend_t;

// A tensor live at the activation peak.
typedef struct wm_map_live {
  const char *name;
  uint64_t bytes;
} wm_map_live_t;

typedef struct wm_map_memory {
  uint64_t weight_bytes;           // every initializer (deduplicated)
  uint64_t peak_activation_bytes;  // graph inputs and intermediates
  size_t peak_node;                // position of the node at the peak
  size_t n_live;
  wm_map_live_t *live;  // tensors live at the peak, largest first
} wm_map_memory_t;

typedef struct wm_map_totals {
  size_t nodes;
  size_t unmapped;  // nodes whose state is not OK
  int64_t params;   // learnable parameters (not BN running statistics)
  double macs;
  double flops;
  double transcendentals;
  uint64_t weight_bytes;  // every initializer
  uint64_t act_in_bytes;  // sums over nodes
  uint64_t out_bytes;
  uint64_t peak_activation_bytes;
} wm_map_totals_t;

// The longest path through the node DAG, weighted by one backend's
// t_roof or by measured times.
typedef struct wm_map_critical {
  size_t backend;       // index into wm_map_t.backends
  const char *weights;  // "t_roof" or "measured: <source>"
  double length;        // seconds
  double total;         // sum of every node's weight (s)
  size_t n_nodes;
  size_t *nodes;  // positions along the path, in order
} wm_map_critical_t;

// How far the measured nodes (options' node_seconds) ran from their roofs.
typedef struct wm_map_measured {
  bool enabled;          // measured times were given
  const char *source;    // where they come from
  size_t nodes;          // nodes with a measured time and a roofline time
  double t_measured;     // sum of their measured times (s)
  double t_roof;         // sum of their max(t_comp, t_mem) (s)
  double roof_pct;       // 100 x t_roof / t_measured: the whole at its roof
  double median_pct;     // median of the nodes' roof_pct
  size_t above_roof;     // nodes whose roof_pct is above 100 (peak too low)
  double max_pct;        // the largest roof_pct
  const char *max_node;  // the node with it ("" when none)
} wm_map_measured_t;

// A parallel strategy: --parallel dp=N,tp=M,pp=K[,microbatches=m]...
typedef struct wm_map_parallel {
  int32_t dp;            // data-parallel degree (>= 1)
  int32_t tp;            // tensor-parallel degree (>= 1)
  int32_t pp;            // pipeline stages (>= 1)
  int32_t microbatches;  // per step (>= 1; default pp)
  bool inference;        // forward only (no gradients); default: training
  double link_gbs;       // per-rank link bandwidth; 0 = the backend's
  int32_t grad_bytes;    // bytes per gradient element (default 4)
} wm_map_parallel_t;

enum { WM_MAP_P2P = 5 };  // a send/recv pair (kind beside WM_COLL_*)

// One collective the plan needs. |bytes| is S as nccl-tests defines it
// (AllReduce: the buffer per rank; AllGather: the full output).
typedef struct wm_map_collective {
  uint32_t kind;       // WM_COLL_* or WM_MAP_P2P
  const char *why;     // e.g. "tensor-parallel: row-parallel MatMul output"
  const char *tensor;  // value name, or "" for gradients
  int64_t node;        // position of the producing node, or -1
  int32_t ranks;       // group size
  double per_forward;  // calls per forward pass
  double per_step;     // calls per step (training: with backward)
  uint64_t bytes;      // S per call
  double wire_bytes;   // per rank per step, ring algorithm
  double t_call;       // seconds per call at the link bandwidth
} wm_map_collective_t;

typedef struct wm_map_plan {
  bool enabled;
  wm_map_parallel_t spec;
  double link_gbs;  // link bandwidth used (GB/s)
  size_t n_coll;
  wm_map_collective_t *coll;
  double wire_bytes;     // per rank per step, all collectives
  double t_comm;         // per step (s)
  double bubble;         // (p-1)/(m+p-1): idle fraction of the step
  double bubble_ideal;   // (p-1)/m: relative to the ideal time
  double *stage_t_roof;  // pp entries: t_roof per stage on the
                         // critical-path backend (s)
  double *stage_flops;   // pp entries
} wm_map_plan_t;

// A --dim binding.
typedef struct wm_map_dim {
  const char *name;
  int64_t value;
} wm_map_dim_t;

typedef struct wm_map_options {
  const char *model;              // name shown in reports
  wm_backend_t *const *backends;  // to map onto, in order (borrowed)
  size_t backend_count;
  const wm_backend_t *fallback;  // takes what the others refuse, or NULL
  const wm_peaks_t *peaks;       // measured peaks, or NULL (declared only)
  const wm_map_dim_t *dims;      // symbolic dim bindings
  size_t n_dims;
  const wm_map_parallel_t *parallel;  // NULL = single device
  size_t critical_backend;            // index into |backends| for the path
  const double *node_seconds;  // per graph node index: measured times that
                               // weigh the path instead, or NULL
  const char *const *node_backends;  // per graph node index: the backend
                                     // each ran on (NULL entries or array:
                                     // the critical-path backend)
  const char *times_source;          // where they come from, for the record
  int32_t threads;  // host threads the peaks are taken at (0 = all cores;
                    // wm_peaks_fp32_gflops_at)
} wm_map_options_t;

typedef struct wm_map {
  wm_arena_t arena;  // owns everything below
  const char *model;
  const char *graph_name;
  int64_t opset;
  size_t n_dims;
  wm_map_dim_t *dims;  // as applied
  size_t n_nodes;
  wm_map_node_t *nodes;
  size_t n_types;
  wm_map_optype_t *types;
  size_t n_backends;
  wm_map_backend_t *backends;
  wm_map_totals_t totals;
  wm_map_memory_t memory;
  wm_map_critical_t critical;
  wm_map_measured_t measured;
  wm_map_plan_t plan;
  size_t n_notes;
  const char **notes;  // things the reader must know (unmapped nodes...)
  bool have_machine;
  wm_machine_t machine;  // from the peaks
} wm_map_t;

// Binds |dims| in |graph|'s inputs, infers what it can and builds the map.
// Fails only on a graph that cannot be read at all (cycles, allocation);
// an unmappable node is marked instead.
wm_status_t wm_map_build(wm_graph_t *graph, const wm_map_options_t *opts,
                         wm_map_t **out_map) WM_MUST_USE_RESULT;
void wm_map_destroy(wm_map_t *map);

// Parses "dp=2,tp=4,pp=1,microbatches=8,inference=1,link=25" into |out|.
wm_status_t wm_map_parse_parallel(const char *text,
                                  wm_map_parallel_t *out) WM_MUST_USE_RESULT;

const char *wm_map_cover_name(wm_map_cover_t cover);  // "vendor library"...
const char *wm_map_cover_key(wm_map_cover_t cover);   // "vendor_library"...
const char *wm_map_bound_name(wm_map_bound_t bound);  // "compute"...
const char *wm_map_state_name(wm_map_state_t state);  // "ok", "unknown op"...
const char *wm_map_coll_name(uint32_t kind);          // "AllReduce"...

// Renderers; each appends to |out|.
void wm_map_to_json(const wm_map_t *map, wm_strbuf_t *out);
void wm_map_to_text(const wm_map_t *map, bool color, wm_strbuf_t *out);
void wm_map_to_markdown(const wm_map_t *map, wm_strbuf_t *out);
void wm_map_to_html(const wm_map_t *map, wm_strbuf_t *out);
// One row per node in execution order (CSV, RFC 4180, CRLF line ends): its
// work, traffic, path figures and per backend cover, t_roof and bound.
void wm_map_to_csv(const wm_map_t *map, wm_strbuf_t *out);
// The DAG as Graphviz dot: nodes coloured by how the first backend covers
// them, the critical path in red.
void wm_map_to_dot(const wm_map_t *map, wm_strbuf_t *out);

WM_API_END

#ifdef __cplusplus
}
#endif

#endif  // WMAP_MAP_H_
