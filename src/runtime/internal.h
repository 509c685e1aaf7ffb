// The runtime's private types, shared by its files: backend slots and
// their memory (memory.c), plans (plan.c), the executor (exec.c), the
// nodes the session runs itself (control.c, items.c) and the session
// (session.c). Nothing outside src/runtime includes it.
#ifndef WMAP_SRC_RUNTIME_INTERNAL_H_
#define WMAP_SRC_RUNTIME_INTERNAL_H_

#include "gen/gen.h"
#include "ops/ops.h"
#include "opdesc.h"
#include "wmap/plan.h"
#include "wmap/session.h"

enum { RT_MAX_SLOTS = WM_SESSION_MAX_BACKENDS + 1 };  // listed + fallback
enum { RT_LABEL_SIZE = 32 };
// Bytes of a generated kernel's name and schedule in a placement.
enum { RT_KERNEL_TEXT = 96 };
// The most plans a session keeps (one per input-shape signature).
enum { RT_MAX_PLANS = 8 };

// A device buffer kept for reuse by the values whose shape is known only
// while running: later runs allocate the same sizes, and fresh memory
// costs page faults (host) or allocator calls (devices).
typedef struct rt_free {
  wm_buffer *buf;  // the buffer
  void *host;      // its mapping when the backend maps, else NULL
  uint64_t bytes;  // its size class
} rt_free_t;

// A stage of a generated step: its kernel launched over [0, grid) in
// ranges of at least |block| (format c) or as work items in groups of
// |block| with start and end after the tensors (|points|: opencl-c,
// cuda-c), its arguments kargs[0..n_kargs) (the output first): a view of
// the step, or -1 - k for the program's temporary k.
typedef struct rt_gen_stage {
  wm_kernel *kernel;
  uint32_t grid, block;
  bool points;
  int32_t kargs[WM_GEN_MAX_TENSORS];
  uint32_t n_kargs;
} rt_gen_stage_t;

// One backend the session places nodes on.
typedef struct rt_backend {
  wm_backend_t *backend;         // borrowed
  const wm_plugin_api *api;      // its table
  const wm_target_desc *target;  // device 0
  wm_device *dev;                // opened when a plan first needs it
  wm_stream *stream;             // one stream per backend
  bool mappable;                 // buffers are host-visible
  bool wraps;                    // it wraps host memory (mem_wrap_host)
  rt_free_t *pool;               // freed dynamic buffers kept for reuse
  size_t n_pool;                 // entries in |pool|
  size_t pool_cap;               // allocated entries
  uint64_t pool_bytes;           // bytes held by |pool|
  wm_buffer *arena;              // the plans' arena (one plan runs at once)
  void *arena_host;              // its mapping, or NULL
  uint64_t arena_bytes;          // its size
} rt_backend_t;

// Where a tensor lives on one backend.
typedef struct rt_loc {
  wm_buffer *buf;   // NULL = not there
  uint64_t offset;  // bytes into |buf|
  void *host;       // its host address when the backend maps, else NULL
  uint64_t bytes;   // bytes owned (dynamic: its size class; else 0)
  bool dynamic;     // a pool buffer of this run (released at last use)
} rt_loc_t;

// A value while running: its copies, its layout, or the item it holds.
typedef struct rt_val {
  rt_loc_t loc[RT_MAX_SLOTS];  // per backend slot
  int32_t home;                // slot of the authoritative copy, -1 = none
  wm_tensor_desc desc;         // layout (same on every slot)
  bool is_item;                // a sequence or optional held in |item|
  wm_item_t item;              // it (owned), on the host
  bool bound;                  // a caller's input this run
} rt_val_t;

// What the session keeps of one node, whatever the shapes.
typedef struct rt_node {
  const char *label;                // its name (in the session's graph), or
                                    // index_label
  char index_label[RT_LABEL_SIZE];  // "#index" for an unnamed node
  bool host;                        // the session runs it (control flow, items)
  wm_session_t *sub[2];  // nested sessions (If: then, else; else body)
  int32_t *implicit;     // values its subgraphs read from this graph
  size_t n_implicit;
} rt_node_t;

typedef enum rt_step_kind {
  RT_STEP_OP = 0,       // op_run of a planned instance
  RT_STEP_COPY = 1,     // a tensor copied to another backend
  RT_STEP_DYNAMIC = 2,  // shapes known only while running: placed then
  RT_STEP_HOST = 3,     // run by the session (control flow, items)
  RT_STEP_VIEW = 4,     // nothing runs: the output shares the input's bytes
} rt_step_kind_t;

// The user's nodes one node of a prepared graph stands for.
typedef struct rt_origins {
  int32_t *ids;  // user node indices
  size_t n;
} rt_origins_t;

// What the passes made of the user's graph.
typedef struct rt_prep {
  wm_graph_t *graph;      // the graph sessions run (owned)
  rt_origins_t *origins;  // per prepared node
  size_t user_nodes;      // nodes of the user's graph
  int32_t *node_of;       // per user node: prepared node, or -1 (removed)
  const char **pass_of;   // per user node: the pass that changed it or NULL
  wm_tensor_t **consts;   // tensors the passes made (owned)
  size_t n_consts, consts_cap;
} rt_prep_t;

// One step of a plan.
typedef struct rt_step {
  rt_step_kind_t kind;
  int32_t node;            // graph node (OP, DYNAMIC, HOST); COPY: value
  int32_t slot;            // backend slot (OP, COPY: destination)
  int32_t from;            // COPY: source slot
  wm_op_plan *plan;        // OP: the backend's plan
  uint32_t n_in, n_out;    // OP: io slots
  wm_buffer_view *views;   // OP: n_in + n_out views, patched per run
  int32_t *io;             // OP: value ids per view (-1 = omitted)
  uint64_t copy_bytes;     // COPY: bytes
  uint64_t ws_bytes;       // OP, DYNAMIC: workspace the backend's plan asked
  uint64_t ws_offset;      // OP: its place in the slot's arena
  wm_buffer_view ws_view;  // OP: the workspace, patched per run
  uint64_t captured;       // OP: inputs its plan holds its own form of
  int32_t *in_place;       // OP: per output, the input whose bytes its plan
                           // may write it into, or -1 (NULL: none)
  int32_t *release;        // values whose last use is this step
  size_t n_release;
  // DYNAMIC: the instance last planned (reused while shapes repeat).
  int32_t dyn_slot;            // slot it ran on, -1 before the first run
  wm_op_plan *dyn_plan;        // its plan
  wm_tensor_desc *dyn_key;     // the descriptions it was planned for
  wm_op_params_t *dyn_params;  // and the resolved parameters
  // OP generated by the host (no |plan|): the compute definition, its
  // stages' kernels once the plan has compiled its backend's, and the
  // temporaries' places in the workspace.
  wm_gen_program_t *gen;
  rt_gen_stage_t *stages;  // gen->n_stages
  uint64_t temp_offsets[WM_GEN_MAX_TEMPS];
} rt_step_t;

// How a value is held while a plan runs.
typedef enum rt_pv_kind {
  RT_PV_NONE = 0,     // not used by the plan
  RT_PV_CONST = 1,    // an initializer or folded constant, uploaded once
  RT_PV_ARENA = 2,    // computed or bound: a planned arena offset
  RT_PV_DYNAMIC = 3,  // shape known while running: pool memory
  RT_PV_ITEM = 4,     // a sequence or optional on the host
} rt_pv_kind_t;

// A value as one plan sees it.
typedef struct rt_pv {
  rt_pv_kind_t kind;
  wm_type_t type;                 // concrete where the plan knows it
  const wm_tensor_t *value;       // CONST: host data (borrowed or folded)
  int32_t home;                   // slot it is produced on (or bound to)
  uint64_t offset[RT_MAX_SLOTS];  // ARENA: bytes into the slot's arena
  bool on[RT_MAX_SLOTS];          // has a copy on the slot
  int32_t view_of;                // a view of this value's bytes on slot
  int32_t view_slot;              // |view_slot| (-1 = none)
  int32_t first;                  // step writing it (from 1; 0: bound)
  int32_t last;                   // step of its last read (INT32_MAX: out)
} rt_pv_t;

// A constant folded by a plan, uploaded to one slot.
typedef struct rt_upload {
  int32_t value;  // the value
  int32_t slot;   // where
  rt_loc_t loc;   // its persistent copy
} rt_upload_t;

// A plan: everything one input-shape signature needs, decided once.
typedef struct rt_plan {
  uint64_t hash;         // of |key|
  wm_type_t *key;        // the bound inputs' types (n_key)
  bool *key_given;       // whether each bindable value was bound
  size_t n_key;          // bindable values (graph inputs, outer values)
  rt_pv_t *pv;           // per value
  wm_tensor_t **folded;  // per value: constants folded here (owned)
  rt_step_t *steps;      // in execution order
  size_t n_steps;
  uint64_t arena_bytes[RT_MAX_SLOTS];  // per slot
  wm_placement_t *placement;           // per node
  wm_placement_refusal_t *refusals;    // RT_MAX_SLOTS per node
  wm_placement_t *user_placement;      // per node of the user's graph
  wm_session_stats_t stats;            // partitions
  rt_upload_t *uploads;                // folded constants uploaded
  size_t n_uploads, uploads_cap;
  uint64_t use_tick;                    // for eviction
  uint64_t bound_generation;            // arenas the views point into
  wm_executable *exes[RT_MAX_SLOTS];    // the generated kernels per slot
  char (*kernel_text)[RT_KERNEL_TEXT];  // per node: placement's kernel
} rt_plan_t;

struct wm_session {
  wm_graph_t *user;          // the caller's graph (borrowed)
  wm_graph_t *graph;         // the prepared graph the plans run
  rt_prep_t prep;            // how |graph| came from |user|
  uint32_t passes;           // enabled passes (bit i: wm_pass_name(i))
  const char **user_labels;  // per user node: its name, or an index label
  char (*user_index_labels)[RT_LABEL_SIZE];  // "#index" per user node
  int32_t *primary;   // per node of |graph|: the user node it reports as
  char *passes_text;  // options.passes (owned copy)
  rt_backend_t slots[RT_MAX_SLOTS];  // listed backends, then the fallback
  size_t n_slots;                    // slots in use
  size_t n_listed;                   // listed backends (the rest: fallback)
  // The slot of the values the session itself computes or holds for no
  // backend step (its host nodes' outputs, inputs nothing reads): the
  // first whose memory the host maps, else 0.
  int32_t host_slot;
  int32_t *order;                  // topological order
  int32_t *user_order;             // topological order of |user|
  rt_node_t *nodes;                // per node
  rt_val_t *vals;                  // per value id
  rt_loc_t *cloc;                  // initializer copies: value * n_slots
  int32_t *bindable;               // graph inputs and outer values
  size_t n_bindable;               // entries of |bindable|
  int32_t *bind_index;             // per value: index in |bindable| or -1
  wm_type_t *key_types;            // this run's signature (n_bindable)
  bool *key_given;                 // which bindable values this run binds
  rt_plan_t *plans[RT_MAX_PLANS];  // cached plans
  size_t n_plans;
  bool release_weights;      // options.release_weights, and it is safe
  bool in_place;             // !options.no_in_place
  wm_kernels_t kernels;      // options.kernels
  bool *foldable_reader;     // per user value: a reader of it could be
                             // folded (all inputs constant): kept
  rt_plan_t *active;         // the plan of the last run
  uint64_t tick;             // plan uses
  uint64_t generation;       // bumped when an arena moves
  wm_session_stats_t stats;  // counters of the last run
  uint64_t live_bytes;       // dynamic bytes in use (not pooled)
  uint64_t peak_live_bytes;  // the most |live_bytes| has been
  bool profiling;            // time every node (stream sync after it)
  double *node_ns;           // per user node: profiled time
  size_t profiled_runs;      // runs that added to |node_ns|
  wm_backend_t *listed[WM_SESSION_MAX_BACKENDS];  // for nested sessions
  wm_session_options_t options;  // as created (backends -> |listed|;
                                 // limits 0 replaced by their defaults)
  wm_session_t *outer;           // while nested: the session running it
  const rt_step_t *step;         // the step running now (rt_execute)
};

// --------------------------------------------------------- memory.c

// Converts a plugin error of slot |b| into a status naming |what|.
wm_status_t rt_slot_error(const rt_backend_t *b, wm_error *e, const char *what);
// Opens the device and stream of |slot| on first use.
wm_status_t rt_open_slot(wm_session_t *s, size_t slot) WM_MUST_USE_RESULT;
// Grows the arena of |slot| to at least |bytes| (the session's generation
// moves when it does).
wm_status_t rt_arena_reserve(wm_session_t *s, size_t slot,
                             uint64_t bytes) WM_MUST_USE_RESULT;
// Allocates dynamic memory for a tensor of |desc| on |slot| into |loc|.
wm_status_t rt_alloc_dynamic(wm_session_t *s, size_t slot,
                             const wm_tensor_desc *desc,
                             rt_loc_t *loc) WM_MUST_USE_RESULT;
// Frees what |loc| owns (dynamic memory goes to the pool) and clears it;
// string elements of |dtype| STRING are freed first.
void rt_release_loc(wm_session_t *s, size_t slot, rt_loc_t *loc, uint32_t dtype,
                    uint64_t count);
// Puts constant |t| (an initializer or a folded constant, which outlives
// |loc|) on |slot| into |loc|: used in place when the backend wraps host
// memory (mem_wrap_host), else copied into persistent memory.
wm_status_t rt_put_constant(wm_session_t *s, size_t slot, const wm_tensor_t *t,
                            rt_loc_t *loc) WM_MUST_USE_RESULT;
// Frees persistent memory of |slot| and clears |loc|.
void rt_free_persistent(wm_session_t *s, size_t slot, rt_loc_t *loc,
                        uint32_t dtype, uint64_t count);
// Copies host tensor |t| into |loc| on |slot| (strings element by element
// into host-visible memory).
wm_status_t rt_write(wm_session_t *s, size_t slot, const rt_loc_t *loc,
                     const wm_tensor_t *t) WM_MUST_USE_RESULT;
// Reads the tensor of |desc| at |loc| on |slot| into |dst| (its data,
// of |desc|'s size; strings are copied).
wm_status_t rt_read(wm_session_t *s, size_t slot, const rt_loc_t *loc,
                    const wm_tensor_desc *desc,
                    wm_tensor_t *dst) WM_MUST_USE_RESULT;
// Copies |bytes| at |src| on slot |from| to |dst| on slot |to|.
wm_status_t rt_copy(wm_session_t *s, size_t from, const rt_loc_t *src,
                    size_t to, const rt_loc_t *dst, const wm_tensor_desc *desc,
                    uint64_t bytes) WM_MUST_USE_RESULT;
// Frees every buffer of |slot| (pool, arena) and closes it.
void rt_close_slot(rt_backend_t *b);
// The shape of a description.
wm_shape_t rt_shape_of(const wm_tensor_desc *d);
// Bytes of a tensor of |desc|; false when it overflows.
bool rt_desc_bytes(const wm_tensor_desc *d, uint64_t *out);

// One arena region: a value's bytes over steps [first, last].
typedef struct rt_region {
  uint64_t bytes;   // size (rounded up to the alignment)
  int32_t first;    // step that writes it
  int32_t last;     // step of its last read (INT32_MAX: until the end)
  uint64_t offset;  // assigned
} rt_region_t;
// Assigns offsets to |n| regions so that regions alive at the same step
// never overlap (greedy best fit in step order, like ggml-alloc);
// *out_bytes receives the arena size needed.
wm_status_t rt_assign_offsets(rt_region_t *regions, size_t n,
                              uint64_t *out_bytes) WM_MUST_USE_RESULT;

// ----------------------------------------------------------- plan.c

// Builds the plan for the inputs' types in |key| (per bindable value;
// |given| says which were bound). On failure nothing is kept.
wm_status_t rt_plan_build(wm_session_t *s, const wm_type_t *key,
                          const bool *given,
                          rt_plan_t **out_plan) WM_MUST_USE_RESULT;
// Fills |p|'s placement report in terms of the user's nodes from its
// placement of the prepared graph's: a node the passes removed has backend
// "-" and the pass; one fused into another carries that node's placement,
// the pass, and what it runs in and as. Called again when a node placed
// while running moves.
void rt_user_placement_fill(const wm_session_t *s, rt_plan_t *p);
// Places |op| by the rule (listed backends, then the fallback), filling
// |pl| (its refusals storage holds RT_MAX_SLOTS entries); *out_slot is -1
// when nothing takes it. |gen| is the instance's compute definition, or
// NULL when it has none: a backend that compiles what the generator prints
// then answers for a generated kernel (rt_gen_answer); *out_generated (may
// be NULL) tells whether the chosen one does.
wm_status_t rt_place(wm_session_t *s, wm_placement_t *pl, const wm_op_desc *op,
                     const wm_gen_program_t *gen, int32_t *out_slot,
                     bool *out_generated) WM_MUST_USE_RESULT;
// Frees a plan and what it uploaded; accepts NULL.
void rt_plan_destroy(wm_session_t *s, rt_plan_t *plan);
// The hash of a signature.
uint64_t rt_key_hash(const wm_type_t *key, const bool *given, size_t n);
// True when a plan was built for this signature.
bool rt_key_equal(const rt_plan_t *p, const wm_type_t *key, const bool *given,
                  size_t n);

// ------------------------------------------------------- generate.c

// The compute definition of the concrete instance |ctx| of |def| into
// *out (heap, freed with rt_gen_free; NULL when the operator has none for
// it, or an iteration space does not fit a launch), in one stage or more.
wm_status_t rt_gen_define(const wm_op_def_t *def, const wm_op_ctx_t *ctx,
                          wm_gen_program_t **out) WM_MUST_USE_RESULT;
// Frees a program of rt_gen_define; accepts NULL.
void rt_gen_free(wm_gen_program_t *p);
// The workspace bytes of program |p|'s temporaries, their offsets into
// |offsets| (64-byte aligned).
uint64_t rt_gen_workspace(const wm_gen_program_t *p, uint64_t *offsets);
// The placement rule's generated kernels: turns |inout|, |backend|'s
// library answer for an instance the generator defines, into a generated
// kernel's (SUPPORTED, impl GENERATED) when |kernels| allows it (AUTO:
// where the library refused; GENERATED: always) and the backend's device
// tier compiles a format the generator prints. Returns whether it did.
// |gen| is the instance's definition (NULL: none; the refusal of a
// backend with the device tier alone then says so); its tensors' dtypes
// must be ones the target declares (dtype_mask).
bool rt_gen_answer(const wm_backend_t *backend, wm_kernels_t kernels,
                   const wm_gen_program_t *gen, wm_op_support *inout);
// Whether |backend|'s device tier compiles a format the generator prints.
bool rt_gen_compiles(const wm_backend_t *backend);
// Compiles the generated steps of |p| (one source and one compile per
// backend, identical kernels once, each under its tuning record's
// schedule or the default), gets their kernels and fills the placement's
// kernel text; the steps keep their computes.
wm_status_t rt_gen_build(wm_session_t *s, rt_plan_t *p) WM_MUST_USE_RESULT;
// The vector register bytes of the machine compiling format c, and the
// target string tuning records are keyed by.
int32_t rt_gen_vector_bytes(void);
void rt_gen_target(char *out, size_t cap);
// The tuning records' file: |path| when given, else tune.txt in the
// generator's cache folder; *out is heap.
wm_status_t rt_gen_records_path(const char *path,
                                char **out) WM_MUST_USE_RESULT;
// The fewest indices of a launch range of |nest| on |slot|: its grain, or
// one range per core for a kernel that shares work across its range.
uint32_t rt_gen_block(const wm_session_t *s, size_t slot,
                      const wm_gen_nest_t *nest);
// Whether a kernel named |name| belongs to a stage of the same slot before
// stage |g| of step |i| of |p| (printed, or tuned, already).
bool rt_gen_before(const rt_plan_t *p, size_t i, int32_t g, const char *name);
// Launches stage |g| of generated step |st| on its slot.
wm_status_t rt_gen_launch_stage(wm_session_t *s, const rt_step_t *st,
                                const rt_gen_stage_t *g) WM_MUST_USE_RESULT;
// Launches the stages of generated step |st| in order.
wm_status_t rt_gen_launch(wm_session_t *s,
                          const rt_step_t *st) WM_MUST_USE_RESULT;

// ----------------------------------------------------------- exec.c

// Runs the steps of |plan|: values must be bound; everything dynamic is
// released at its last use, the outputs' copies stay.
wm_status_t rt_execute(wm_session_t *s, rt_plan_t *plan) WM_MUST_USE_RESULT;
// Whether the step running now is the last use of value |id|: it is
// released right after, so the step may take its item instead of copying.
bool rt_last_use(const wm_session_t *s, int32_t id);
// Points the plan's values and views at the current arenas.
void rt_plan_activate(wm_session_t *s, rt_plan_t *plan);
// Releases value |id|'s run-time copies and item (not constants).
void rt_release_value(wm_session_t *s, int32_t id);

// A host tensor holding value |id| (a constant itself, else a copy read
// from its home backend); *out_owned says whether to destroy it.
wm_status_t rt_host_tensor(wm_session_t *s, int32_t id, wm_tensor_t **out,
                           bool *out_owned) WM_MUST_USE_RESULT;
// Value |id| as an item: a sequence or optional the session holds
// (borrowed), else a host tensor; *out_owned says whether to deinit it.
wm_status_t rt_host_item(wm_session_t *s, int32_t id, wm_item_t *out,
                         bool *out_owned) WM_MUST_USE_RESULT;
// Value |id| as an item of the caller's own: a deep copy unless it was
// already one.
wm_status_t rt_own_item(wm_session_t *s, int32_t id,
                        wm_item_t *out) WM_MUST_USE_RESULT;
// Stores |item| (taken and cleared) as value |id|: a tensor goes to slot 0
// (dynamic memory), a sequence or optional stays on the host.
wm_status_t rt_store_item(wm_session_t *s, int32_t id,
                          wm_item_t *item) WM_MUST_USE_RESULT;
// True when value |id| holds something this run (a copy, an item or a
// constant).
bool rt_value_present(const wm_session_t *s, int32_t id);

// -------------------------------------------------- control.c, items.c

// Runs node |index| on the host: control flow with nested sessions, the
// operators of sequences and optionals, and FlexAttention.
wm_status_t rt_run_host_node(wm_session_t *s, size_t index) WM_MUST_USE_RESULT;

// The named inputs of one nested run: formal inputs then outer values.
typedef struct rt_sub_inputs {
  size_t n, cap;
  const char **names;
  wm_item_t *items;
  bool *owned;
  // With |take|, the items from |take_from| on that it owns are moved
  // into the nested session instead of copied, and left empty (a Loop's
  // carried values: each iteration's are the last one's outputs).
  bool take;
  size_t take_from;
} rt_sub_inputs_t;

// wm_session_run_items of a nested session on |in| (moving the items
// in->take marks), its outputs into |outs|.
wm_status_t rt_session_run_nested(wm_session_t *s, rt_sub_inputs_t *in,
                                  wm_item_t *outs) WM_MUST_USE_RESULT;
wm_status_t rt_sub_add(rt_sub_inputs_t *in, const char *name, wm_item_t item,
                       bool owned) WM_MUST_USE_RESULT;
// rt_sub_add of a tensor item taking |t| (when |owned|).
wm_status_t rt_sub_add_tensor(rt_sub_inputs_t *in, const char *name,
                              wm_tensor_t *t, bool owned) WM_MUST_USE_RESULT;
void rt_sub_truncate(rt_sub_inputs_t *in, size_t n);
void rt_sub_deinit(rt_sub_inputs_t *in);
// Adds the values |g| reads from this session's graph.
wm_status_t rt_sub_add_outer(wm_session_t *s, const wm_graph_t *g,
                             rt_sub_inputs_t *in) WM_MUST_USE_RESULT;
// The nested session of subgraph attribute |name| of node |node|, created
// on first use with this session's backends (cached in rn->sub[k]).
wm_status_t rt_sub_session(wm_session_t *s, rt_node_t *rn,
                           const wm_node_t *node, const char *name, int k,
                           wm_session_t **out) WM_MUST_USE_RESULT;
// Runs |sub| on |in|; its outputs go to |outs| (graph output count).
wm_status_t rt_sub_run(wm_session_t *s, wm_session_t *sub, rt_sub_inputs_t *in,
                       wm_item_t *outs) WM_MUST_USE_RESULT;
// Takes the tensor of |item| (a sequence or optional is an error naming
// |what| |i| of node |rn|).
wm_status_t rt_take_tensor(const rt_node_t *rn, const char *op,
                           const char *what, size_t i, wm_item_t *item,
                           wm_tensor_t **out) WM_MUST_USE_RESULT;

// A scalar tensor item of |dtype| holding |v|.
wm_status_t rt_scalar_item(wm_dtype_t dtype, int64_t v,
                           wm_item_t *out) WM_MUST_USE_RESULT;

// Bytes per step along |axis| of |shape| (inner) and the steps before it
// (outer).
void rt_axis_blocks(const wm_shape_t *shape, int32_t axis, size_t esize,
                    size_t *outer, size_t *inner);

// control.c: If, Loop, Scan (9+) and Scan 8 into |results|.
wm_status_t rt_run_if(wm_session_t *s, size_t index, rt_sub_inputs_t *in,
                      wm_item_t *results) WM_MUST_USE_RESULT;
wm_status_t rt_run_loop(wm_session_t *s, size_t index, rt_sub_inputs_t *in,
                        wm_item_t *results) WM_MUST_USE_RESULT;
wm_status_t rt_run_scan(wm_session_t *s, size_t index, rt_sub_inputs_t *in,
                        wm_item_t *results) WM_MUST_USE_RESULT;
wm_status_t rt_run_scan8(wm_session_t *s, size_t index, rt_sub_inputs_t *in,
                         wm_item_t *results) WM_MUST_USE_RESULT;

// True for the nodes the session runs itself: operators whose kernel says
// so and any node reading or writing a sequence or optional.
bool rt_runs_in_session(const wm_graph_t *g, const wm_node_t *node);

// --------------------------------------------------------- passes.c

// The most inputs or outputs of a node a pass makes.
enum { RT_RW_MAX_IO = 16 };

// One pass from one version of the graph to the next.
typedef struct rt_rw {
  rt_prep_t *prep;             // where new constants go
  const char *pass;            // its name
  const wm_backend_t *target;  // the session's first backend, or NULL
  wm_kernels_t kernels;        // the session's (generated kernels count)
  const wm_graph_t *src;       // the version read
  rt_origins_t *src_origins;   // per src node
  wm_graph_t *dst;             // the version written
  rt_origins_t *dst_origins;   // per dst node
  size_t dst_cap;              // allocated |dst_origins|
  int32_t *order;              // topological order of |src|
  int32_t *subst;              // per src value: the value replacing it or -1
  bool *pinned;                // per src value: a graph output or read by a
                               // subgraph (its name must stay)
  int32_t *uses;               // per src value: consumer slots
  bool *copied;                // per src value: already in |dst|
} rt_rw_t;

// A node a pass writes.
typedef struct rt_rw_node {
  const char *op_type, *domain, *name;
  const int32_t *in;            // src value ids (-1 omitted), n_in
  const char *const *in_names;  // per input, a value the pass made (or
                                // NULL: in[i]); NULL for none
  int32_t n_in;
  const int32_t *out;  // src value ids, n_out
  int32_t n_out;
  const wm_node_t *attrs_of;  // a node whose attributes it copies, or NULL
  const wm_attr_t *extra;     // further attributes
  size_t n_extra;
  const int32_t *from;  // src nodes it stands for
  size_t n_from;
  bool fused;  // the pass fused them (their fate is noted)
} rt_rw_node_t;

typedef struct rt_pass {
  const char *name;  // for --passes and the placement report
  const char *what;  // one line
  wm_status_t (*run)(rt_rw_t *rw);
} rt_pass_t;

// Writes a node into the next version.
wm_status_t rt_rw_node(rt_rw_t *rw, const rt_rw_node_t *n) WM_MUST_USE_RESULT;
// Copies src node |index| unchanged (inputs substituted).
wm_status_t rt_rw_keep(rt_rw_t *rw, size_t index) WM_MUST_USE_RESULT;
// Leaves src node |index| out (its user nodes are noted as removed).
void rt_rw_drop(rt_rw_t *rw, size_t index);
// Readers of src value |value| read |with| instead.
void rt_rw_replace(rt_rw_t *rw, int32_t value, int32_t with);
// Makes src value |value| a constant of the next version holding |take|.
wm_status_t rt_rw_const(rt_rw_t *rw, int32_t value,
                        wm_tensor_t *take) WM_MUST_USE_RESULT;
// Adds a new constant holding |take| to the next version, named after
// |hint| (made unique); *out_name is its name (in the new graph's arena).
wm_status_t rt_rw_new_const(rt_rw_t *rw, const char *hint, wm_tensor_t *take,
                            const char **out_name) WM_MUST_USE_RESULT;

// Per src value: the one node reading it (uses == 1), else -1; a calloc'd
// array of src->value_count entries.
wm_status_t rt_rw_sole_consumers(const rt_rw_t *rw,
                                 int32_t **out) WM_MUST_USE_RESULT;
// True when |node| is the ai.onnx operator |op|.
bool rt_is_onnx_op(const wm_node_t *node, const char *op);
// Node |node|'s input other than |x| when it is a two-input, one-output
// node reading |x| once; else -2.
int32_t rt_other_input(const wm_node_t *node, int32_t x);
// The constant tensor of |dtype| at value |id| of |g| that a pass may read
// (an initializer that is not an input), or NULL.
const wm_tensor_t *rt_constant(const wm_graph_t *g, int32_t id,
                               wm_dtype_t dtype);
// Whether the session's first backend implements |op| (a node a pass
// would write): true unless it answers that the operator, its opset, an
// attribute or a type is not implemented (shapes may change per plan);
// true without a target.
wm_status_t rt_rw_target_implements(const rt_rw_t *rw, const wm_op_desc *op,
                                    bool *out) WM_MUST_USE_RESULT;
// Whether the session's first backend implements the one-output node
// |op_type| of the "wmap" domain (opset 1) named |name| over src values
// |in| (n_in of them, -1 omitted) writing |out_value|, with |attrs|
// (rt_rw_target_implements).
wm_status_t rt_rw_implements_node(const rt_rw_t *rw, const char *op_type,
                                  const char *name, const int32_t *in,
                                  int32_t n_in, int32_t out_value,
                                  const wm_op_attr *attrs, uint32_t n_attr,
                                  bool *out) WM_MUST_USE_RESULT;
// The parameters of node |n| of |g| as its definition's resolve slot
// gives them (ONNX's defaults and rules applied, for the types |g| knows);
// false when they cannot be resolved. A STRING entry points at static
// storage or the node's.
bool rt_rw_params(const wm_graph_t *g, int32_t n, wm_op_params_t *out);
// The single reader of src value |v| (not a graph output) given the
// rt_rw_sole_consumers array, or NULL; *out_index its index or -1.
const wm_node_t *rt_rw_sole_reader(const rt_rw_t *rw, const int32_t *consumer,
                                   int32_t v, int32_t *out_index);
// True when only output 0 of src node |node| is read.
bool rt_rw_only_first_output(const rt_rw_t *rw, const wm_node_t *node);

// Parses a comma list of pass names (NULL: all) into a mask.
wm_status_t rt_passes_parse(const char *list,
                            uint32_t *out_mask) WM_MUST_USE_RESULT;
// True when pass |name| is in |mask|.
bool rt_pass_enabled(uint32_t mask, const char *name);
// Runs the passes of |mask| over a copy of |graph| (typed) for a session
// whose first backend is |target| (fusions it does not implement are not
// made; NULL: all are).
wm_status_t rt_prepare(const wm_graph_t *graph, uint32_t mask,
                       const wm_backend_t *target, wm_kernels_t kernels,
                       rt_prep_t *out) WM_MUST_USE_RESULT;
void rt_prep_deinit(rt_prep_t *prep);

// fold.c, fuse.c, layernorm.c, attention.c, epilogue.c and eltwise.c: the
// passes.
wm_status_t rt_pass_fold(rt_rw_t *rw) WM_MUST_USE_RESULT;
wm_status_t rt_pass_dead(rt_rw_t *rw) WM_MUST_USE_RESULT;
wm_status_t rt_pass_conv_bn(rt_rw_t *rw) WM_MUST_USE_RESULT;
wm_status_t rt_pass_transpose(rt_rw_t *rw) WM_MUST_USE_RESULT;
wm_status_t rt_pass_layernorm(rt_rw_t *rw) WM_MUST_USE_RESULT;
wm_status_t rt_pass_attention(rt_rw_t *rw) WM_MUST_USE_RESULT;
wm_status_t rt_pass_epilogue(rt_rw_t *rw) WM_MUST_USE_RESULT;
wm_status_t rt_pass_eltwise(rt_rw_t *rw) WM_MUST_USE_RESULT;

#endif  // WMAP_SRC_RUNTIME_INTERNAL_H_
