// wmap operators: one definition per operator carrying its schema, shape
// rule, cost and reference kernel; the registry that finds them; and the
// graph-level schema check and shape inference driven by it.
// Thread-safety: the registry is immutable; contexts are per call.
#ifndef WMAP_OPS_H_
#define WMAP_OPS_H_

#include "gen/gen.h"
#include "wmap/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

// The view of one node that shape rules, costs and kernels work on.
//
// During static shape inference |in| entries are NULL unless the value is
// a constant (initializer or folded); a shape rule that needs a value it
// does not have leaves that part of the output unknown (rank -1 or dim
// -1) and returns OK. During execution every present input has a value
// and the shape rule runs first with them, so it must produce fully known
// output types; the runtime then allocates |out| from |out_types| and
// calls the kernel.
typedef struct wm_op_ctx {
  const wm_graph_t *graph;       // graph holding |node|
  const wm_node_t *node;         // the node
  const char *label;             // printable node name
  int64_t opset;                 // imported opset of the node's domain
  int32_t n_in;                  // input slots (node->input_count)
  int32_t n_out;                 // output slots (node->output_count)
  const wm_type_t *in_types;     // per input; dtype 0 when omitted
  const wm_tensor_t *const *in;  // per input; NULL when unknown/omitted
  wm_type_t *out_types;          // per output; set by the shape rule
  wm_tensor_t **out;             // per output; NULL when omitted
} wm_op_ctx_t;

// Work of one node, following ARCHITECTURE.md decision 8: FLOPs = 2*MACs
// for contractions; elementwise ops count one FLOP per output element and
// basic operation; transcendentals (exp, log, tanh, erf, sqrt, pow...)
// are counted separately and not in FLOPs.
typedef struct wm_op_cost {
  double macs;             // multiply-accumulates
  double flops;            // floating-point (or integer) operations
  double transcendentals;  // exp/log/trig/sqrt... evaluations
} wm_op_cost_t;

// The resolved parameters of one instance (wm_op_def_t.resolve): the
// node's attributes with ONNX's rules applied for its concrete input types
// and input values, so that no backend re-derives them: every default
// given explicitly, axes normalised to [0, rank), padding derived from
// auto_pad or output_shape, Slice bounds clamped. Entries are named like
// the attributes they stand for (docs/abi.md lists them per operator).
// Storage is inline: filling one allocates nothing.
#define WM_OP_MAX_PARAMS 16     // entries
#define WM_OP_PARAM_VALUES 128  // list values of each kind, all entries
typedef struct wm_op_param {
  const char *name;     // static storage
  wm_attr_type_t type;  // INT, FLOAT, STRING, INTS, FLOATS, STRINGS, TENSOR
  int64_t i;            // INT
  float f;              // FLOAT
  const char *s;        // STRING: static or the node's storage
  int32_t at, count;    // lists: values [at, at + count) of their kind
} wm_op_param_t;
typedef struct wm_op_params {
  int32_t count;                                 // entries in p
  bool pending;                                  // needs input values not known
  wm_op_param_t p[WM_OP_MAX_PARAMS];             // the entries
  int32_t n_ints, n_floats, n_reals, n_strings;  // list values used
  int64_t ints[WM_OP_PARAM_VALUES];              // INTS values
  float floats[WM_OP_PARAM_VALUES];              // FLOATS values
  double reals[WM_OP_PARAM_VALUES];              // TENSOR values: 1-D double
  const char *strings[WM_OP_PARAM_VALUES];       // STRINGS values (static)
} wm_op_params_t;

// An operator definition. An entry serves opsets [since_version, the next
// entry's since_version) of its domain; most operators have one entry and
// branch on ctx->opset for version differences.
typedef struct wm_op_def {
  const char *name;       // ONNX op_type
  const char *domain;     // "" for ai.onnx
  int32_t since_version;  // first opset served
  int16_t min_inputs;     // required input slots
  int16_t max_inputs;     // -1 = variadic
  int16_t min_outputs;    // required output slots
  int16_t max_outputs;    // -1 = variadic
  uint32_t types;         // allowed dtypes of input 0 (bit 1<<dtype), 0 = any
  // Sets ctx->out_types from the inputs and attributes; validates them.
  wm_status_t (*infer)(wm_op_ctx_t *ctx);
  // Reference kernel: fills ctx->out (already allocated) from ctx->in.
  wm_status_t (*run)(wm_op_ctx_t *ctx);
  // Work of the node from its (known) input and output types; NULL means
  // one FLOP per output element.
  void (*cost)(const wm_op_ctx_t *ctx, wm_op_cost_t *out);
  uint32_t flags;  // WM_OP_* properties
  // Resolves the instance's parameters into |out| (zeroed) from concrete
  // input types, output types and whatever input values ctx->in holds;
  // sets out->pending when one it needs is not known (the instance then
  // depends on data). NULL: the operator has nothing to resolve.
  wm_status_t (*resolve)(wm_op_ctx_t *ctx, wm_op_params_t *out);
  // The operator's compute definition for the kernel generator (src/gen)
  // at a concrete instance: builds |out| from ctx's types and attributes;
  // UNIMPLEMENTED for an instance the definition does not express (a
  // dtype other than float32, a legacy broadcast). NULL: none yet.
  wm_status_t (*define)(const wm_op_ctx_t *ctx, wm_gen_compute_t *out);
  // The same in stages, for an operator one statement does not express
  // (Softmax, LayerNormalization): builds |out| (zeroed; the caller frees
  // it with wm_gen_program_free). An operator has define or this.
  wm_status_t (*define_program)(const wm_op_ctx_t *ctx, wm_gen_program_t *out);
} wm_op_def_t;

// Properties of an operator (wm_op_def_t.flags).
enum {
  // Its outputs are drawn at random: never computed ahead of a run.
  WM_OP_RANDOM = 1u << 0,
  // Drawn at random only in training mode: when its training_mode input
  // (input 2) is given and not false (Dropout).
  WM_OP_RANDOM_IN_TRAINING = 1u << 1,
};

// dtype masks for wm_op_def_t.types.
#define WM_T(d) (1u << WM_DTYPE_##d)
#define WM_TYPES_FLOAT \
  (WM_T(FLOAT) | WM_T(DOUBLE) | WM_T(FLOAT16) | WM_T(BFLOAT16))
#define WM_TYPES_INT                                                    \
  (WM_T(INT8) | WM_T(INT16) | WM_T(INT32) | WM_T(INT64) | WM_T(UINT8) | \
   WM_T(UINT16) | WM_T(UINT32) | WM_T(UINT64))
#define WM_TYPES_NUMERIC (WM_TYPES_FLOAT | WM_TYPES_INT)
#define WM_TYPES_ALL (WM_TYPES_NUMERIC | WM_T(BOOL) | WM_T(STRING))

// A family file (src/ops/<family>.c) exports one table ending with an
// entry whose name is NULL.
#define WM_OPS_END \
  { NULL, NULL, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, 0, NULL, NULL }

// ------------------------------------------------------------- registry

// Returns the definition serving |op_type| of |domain| at |opset|, or
// NULL. |domain| "" and "ai.onnx" are the same.
const wm_op_def_t *wm_ops_find(const char *domain, const char *op_type,
                               int64_t opset);
// True when |node| (served by |def|) draws its outputs at random (see
// WM_OP_RANDOM*); |training| is the value of its training_mode input, or
// NULL when that is not known.
bool wm_op_draws_random(const wm_op_def_t *def, const wm_node_t *node,
                        const wm_tensor_t *training);
// Returns the number of definitions in the registry.
size_t wm_ops_count(void);
// Returns definition |i| (0 <= i < wm_ops_count()).
const wm_op_def_t *wm_ops_at(size_t i);

// ------------------------------------------------------ graph-level use

// Checks every node of |graph| against its schema (known operator at the
// imported opset, arity, dtypes) and infers the types of all values,
// merging with declared types; recurses into subgraph attributes.
wm_status_t wm_ops_check_graph(wm_graph_t *graph) WM_MUST_USE_RESULT;
// Like wm_ops_check_graph, but a node's failure (unknown operator, schema
// or shape rule) is stored in node_status[node index] (caller frees) and
// the check goes on with that node's outputs left as declared. Returns
// only failures of the graph as a whole (cycles, allocation).
wm_status_t wm_ops_check_graph_each(wm_graph_t *graph, wm_status_t *node_status)
    WM_MUST_USE_RESULT;

// Builds a context for node |index| with types from the graph's values
// and constant inputs from initializers. Arrays are allocated in one
// block; release with wm_op_ctx_deinit.
wm_status_t wm_op_ctx_init(wm_op_ctx_t *ctx, const wm_graph_t *graph,
                           size_t index) WM_MUST_USE_RESULT;
// Like wm_op_ctx_init with input types from |types| (per value id) and
// constant inputs from |values| (per value id, NULL entries unknown);
// either may be NULL for the graph's own.
wm_status_t wm_op_ctx_init_with(wm_op_ctx_t *ctx, const wm_graph_t *graph,
                                size_t index, const wm_type_t *types,
                                const wm_tensor_t *const *values)
    WM_MUST_USE_RESULT;
// Elements above which a node whose inputs are all constant is not
// computed ahead of a run (folding is for shape computations).
#define WM_OP_FOLD_LIMIT ((size_t)1 << 16)
// Operations a fold may take per element of its limit: a node whose
// estimated work (wm_op_cost: FLOPs and transcendentals) is above
// fold_limit * this is left to the run, on its backend (a RoiAlign with
// sampling_ratio 255 over a constant map has a small output but costs
// 2^27 operations).
#define WM_OP_FOLD_WORK_PER_ELEMENT 16.0
// Shape inference of one node: runs |def|'s shape rule on |ctx| (input
// types and known values filled in; Shape and Size see their input's type
// alone) and, when every input value is known, no output has more than
// |fold_limit| elements, the work fits (WM_OP_FOLD_WORK_PER_ELEMENT), the
// node has no subgraph and does not draw at random, computes its outputs
// into ctx->out (*out_folded true; the caller owns them). A failure to
// compute is not an error: the outputs are then left unknown in value.
wm_status_t wm_op_infer_node(const wm_op_def_t *def, wm_op_ctx_t *ctx,
                             size_t fold_limit,
                             bool *out_folded) WM_MUST_USE_RESULT;
// Frees the arrays of a context made by wm_op_ctx_init (not its tensors).
void wm_op_ctx_deinit(wm_op_ctx_t *ctx);
// Finds the definition for the context's node and checks its arity and
// input dtype; UNIMPLEMENTED names the operator and opset when unknown.
wm_status_t wm_op_find_def(const wm_op_ctx_t *ctx,
                           const wm_op_def_t **out_def) WM_MUST_USE_RESULT;
// Allocates host tensors for every requested output from ctx->out_types,
// which must be fully known.
wm_status_t wm_op_alloc_outputs(wm_op_ctx_t *ctx) WM_MUST_USE_RESULT;
// Runs one node on the host: shape rule, output allocation, kernel. The
// caller owns ctx->out afterwards (also on failure).
wm_status_t wm_op_execute(const wm_op_def_t *def,
                          wm_op_ctx_t *ctx) WM_MUST_USE_RESULT;

// Computes the cost of a node whose ctx has known types (default rule
// when the definition has no cost function).
void wm_op_cost(const wm_op_def_t *def, const wm_op_ctx_t *ctx,
                wm_op_cost_t *out);

// Resolves the parameters of a node whose ctx has concrete types (see
// wm_op_params_t): *out is zeroed, then filled by |def|'s resolve slot
// when it has one (count 0 otherwise).
wm_status_t wm_op_resolve(const wm_op_def_t *def, wm_op_ctx_t *ctx,
                          wm_op_params_t *out) WM_MUST_USE_RESULT;
// Entry |name| of |params|, or NULL.
const wm_op_param_t *wm_op_param_find(const wm_op_params_t *params,
                                      const char *name);
// The INT or FLOAT entry |name| of |params| into *out: false when absent or
// of another kind.
bool wm_op_param_int_of(const wm_op_params_t *params, const char *name,
                        int64_t *out);
bool wm_op_param_float_of(const wm_op_params_t *params, const char *name,
                          float *out);

// ------------------------------------------------- helpers for op files

// Starts the compute definition of an elementwise instance: the output
// (float32, its inferred shape) over one axis per dim, every present input
// (float32) read with numpy broadcasting; loads[i] (WM_GEN_MAX_TENSORS of
// them) is input i's LOAD, -1 when omitted or past the node's inputs.
// UNIMPLEMENTED for other dtypes, unknown shapes, or the legacy broadcast
// attribute (before opset 7).
wm_status_t wm_op_define_inputs(const wm_op_ctx_t *ctx, wm_gen_compute_t *out,
                                int32_t *loads) WM_MUST_USE_RESULT;
// Activation |name| (an ONNX activation operator's op_type) of expression
// |x| with its parameters |p| (as its resolved alpha, beta...), as that
// operator's reference kernel computes it; -1 once |b| failed.
int32_t wm_op_act_expr(wm_gen_builder_t *b, const char *name, const double *p,
                       int32_t x);
// Whether every present input and output 0 are float32 of known shape
// (what most definitions express).
bool wm_op_define_float(const wm_op_ctx_t *ctx);
// The definition of a data movement: the output (float32, its inferred
// shape) over one axis per dim, equal to input 0 read as a tensor of
// |rank| dims |dims| with |strides| (elements; NULL: row-major) through
// |acc|. UNIMPLEMENTED for other dtypes or unknown shapes.
wm_status_t wm_op_define_copy(const wm_op_ctx_t *ctx, wm_gen_compute_t *out,
                              int32_t rank, const int64_t *dims,
                              const int64_t *strides,
                              const wm_gen_access_t *acc) WM_MUST_USE_RESULT;
// The definition of an elementwise |op| folded over every present input:
// op(x) for a unary one, op(op(x0, x1), x2)... for a binary one.
wm_status_t wm_op_define_fold(const wm_op_ctx_t *ctx, wm_gen_op_t op,
                              wm_gen_compute_t *out) WM_MUST_USE_RESULT;
// The same fold left open: *out_body is its expression, *out_count the
// inputs it read; the caller goes on and finishes |out|.
wm_status_t wm_op_define_fold_body(const wm_op_ctx_t *ctx, wm_gen_op_t op,
                                   wm_gen_compute_t *out, int32_t *out_body,
                                   int32_t *out_count) WM_MUST_USE_RESULT;

// Appends one resolved parameter to |out| (|name| in static storage); a
// full |out| is an INTERNAL error naming the node.
wm_status_t wm_op_param_int(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                            const char *name, int64_t v) WM_MUST_USE_RESULT;
wm_status_t wm_op_param_float(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                              const char *name, double v) WM_MUST_USE_RESULT;
wm_status_t wm_op_param_string(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                               const char *name,
                               const char *v) WM_MUST_USE_RESULT;
wm_status_t wm_op_param_ints(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                             const char *name, const int64_t *v,
                             int32_t n) WM_MUST_USE_RESULT;
wm_status_t wm_op_param_floats(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                               const char *name, const double *v,
                               int32_t n) WM_MUST_USE_RESULT;
// |axis| of input 0 normalised to [0, rank) as entry "axis" (out of
// range is an error naming it); out->pending while the rank is unknown.
wm_status_t wm_op_param_axis(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                             int64_t axis) WM_MUST_USE_RESULT;
wm_status_t wm_op_param_strings(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                                const char *name, const char *const *v,
                                int32_t n) WM_MUST_USE_RESULT;
// Values that float would round (ratios of sizes): a 1-D double TENSOR.
wm_status_t wm_op_param_reals(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                              const char *name, const double *v,
                              int32_t n) WM_MUST_USE_RESULT;

// Cost function for pure data movement (Reshape, Transpose...): no work.
void wm_op_cost_zero(const wm_op_ctx_t *ctx, wm_op_cost_t *out);

// A random stream for the ops that draw (Random*, Bernoulli, Multinomial,
// training-mode Dropout): xoshiro256** seeded by splitmix64 of the node's
// "seed" attribute when it has one, else of the clock and a counter.
typedef struct wm_op_rng {
  uint64_t s[4];
} wm_op_rng_t;
void wm_op_rng_seed(wm_op_rng_t *r, const wm_op_ctx_t *ctx);
// A double in [0, 1) with 53 random bits.
double wm_op_rng_uniform(wm_op_rng_t *r);
// A standard normal value (Box-Muller).
double wm_op_rng_normal(wm_op_rng_t *r);

// Typed attribute readers: an absent attribute gives |def|, one of the
// wrong kind is an error naming it.
wm_status_t wm_op_attr_int(const wm_op_ctx_t *ctx, const char *name,
                           int64_t def, int64_t *out) WM_MUST_USE_RESULT;
wm_status_t wm_op_attr_float(const wm_op_ctx_t *ctx, const char *name,
                             double def, double *out) WM_MUST_USE_RESULT;
wm_status_t wm_op_attr_string(const wm_op_ctx_t *ctx, const char *name,
                              const char *def,
                              const char **out) WM_MUST_USE_RESULT;
// INTS: *out_values NULL and *out_count 0 when absent.
wm_status_t wm_op_attr_ints(const wm_op_ctx_t *ctx, const char *name,
                            const int64_t **out_values,
                            size_t *out_count) WM_MUST_USE_RESULT;
// Reads the ints attribute |name| into out[0..n): absent gives |def| for
// every entry (*out_present false; it may be NULL); present must have |n|
// values, each at least |min|.
wm_status_t wm_op_attr_ints_n(const wm_op_ctx_t *ctx, const char *name,
                              int32_t n, int64_t def, int64_t min, int64_t *out,
                              bool *out_present) WM_MUST_USE_RESULT;
// Finds attribute |name| of kind |want|: *out NULL when absent (an error
// when |required|); another kind is an error naming both.
wm_status_t wm_op_attr_find(const wm_op_ctx_t *ctx, const char *name,
                            wm_attr_type_t want, bool required,
                            const wm_attr_t **out) WM_MUST_USE_RESULT;
// Requires input |i|, when present with a known dtype, to have the dtype
// of input |ref| (one type parameter shared by both).
wm_status_t wm_op_check_dtype_as(const wm_op_ctx_t *ctx, int32_t i,
                                 int32_t ref) WM_MUST_USE_RESULT;
// |v| rounded to the nearest value of the float type |dtype| (ties to
// even; through float for float16 and bfloat16; double as is).
double wm_op_round_to(wm_dtype_t dtype, double v);
// A string attribute that must be one of |choices| (NULL-terminated, at
// least two); *out is the index of the match.
wm_status_t wm_op_attr_choice(const wm_op_ctx_t *ctx, const char *name,
                              const char *def, const char *const *choices,
                              int *out) WM_MUST_USE_RESULT;

// The kernel of operators the session runs itself (control flow,
// sequences): calling it is an error; wm_op_runs_in_session tells them
// apart.
wm_status_t wm_op_run_in_session(wm_op_ctx_t *ctx);
bool wm_op_runs_in_session(const wm_op_def_t *def);

// Makes an error prefixed with the node: `node "x" (Conv): ...`.
wm_status_t wm_op_error(const wm_op_ctx_t *ctx, wm_status_code_t code,
                        const char *fmt, ...) WM_PRINTF(3, 4);
#define WM_OP_ERROR(ctx, code, ...) \
  wm_op_error((ctx), WM_STATUS_##code, __VA_ARGS__)

// Returns true when input |i| is present (not omitted).
bool wm_op_has_input(const wm_op_ctx_t *ctx, int32_t i);
// Returns true when output |i| is requested.
bool wm_op_has_output(const wm_op_ctx_t *ctx, int32_t i);
// Returns the shape of input |i| (rank -1 if omitted or unknown).
const wm_shape_t *wm_op_in_shape(const wm_op_ctx_t *ctx, int32_t i);
// Returns the dtype of input |i| (UNDEFINED if omitted or unknown).
wm_dtype_t wm_op_in_dtype(const wm_op_ctx_t *ctx, int32_t i);
// Sets output |i| to a tensor of |dtype| and |shape| (ignored if omitted).
void wm_op_set_out(wm_op_ctx_t *ctx, int32_t i, wm_dtype_t dtype,
                   const wm_shape_t *shape);
// wm_op_set_out for shapes from attributes or input values: a known shape
// whose element count overflows is an error naming output |i|.
wm_status_t wm_op_set_out_checked(wm_op_ctx_t *ctx, int32_t i, wm_dtype_t dtype,
                                  const wm_shape_t *shape) WM_MUST_USE_RESULT;
// Sets output |i| to |dtype| with unknown rank.
void wm_op_set_out_unknown(wm_op_ctx_t *ctx, int32_t i, wm_dtype_t dtype);

// Normalizes |axis| in [-rank, rank) to [0, rank); error names |what|.
wm_status_t wm_op_axis(const wm_op_ctx_t *ctx, int64_t axis, int32_t rank,
                       const char *what, int32_t *out_axis) WM_MUST_USE_RESULT;
// Reads the integer tensor input |i| (any int dtype) into a heap array;
// *out_values is NULL and *out_known false when the value is unknown.
wm_status_t wm_op_input_ints(const wm_op_ctx_t *ctx, int32_t i,
                             int64_t **out_values, size_t *out_count,
                             bool *out_known) WM_MUST_USE_RESULT;
// Returns input |i| as a scalar double (first element); |def| if omitted.
double wm_op_input_scalar(const wm_op_ctx_t *ctx, int32_t i, double def);

// Broadcast strides: for |in| broadcast to |out|, sets strides[d] (in
// elements of |in|, 0 on broadcast dims) for each of out's dims.
void wm_broadcast_strides(const wm_shape_t *in, const wm_shape_t *out,
                          int64_t strides[WM_MAX_RANK]);
// Row-major strides of |shape| (those of an empty shape whose dims'
// product overflows are 0 past the overflow).
void wm_shape_strides(const wm_shape_t *shape, int64_t strides[WM_MAX_RANK]);
// Maps linear index |i| of |out| to an offset through |strides|.
size_t wm_broadcast_offset(const wm_shape_t *out,
                           const int64_t strides[WM_MAX_RANK], size_t i);

// Copies the view (|dims|, |src_strides| from element |src_off|) of |src|
// into the view (|dims|, |dst_strides| from |dst_off|) of |dst|; strides
// are in elements and may be zero (broadcast) or negative (reversed).
// Any dtype, strings included. Used by the data-movement operators.
wm_status_t wm_op_copy_strided(wm_tensor_t *dst, int64_t dst_off,
                               const int64_t *dst_strides,
                               const wm_tensor_t *src, int64_t src_off,
                               const int64_t *src_strides, int32_t rank,
                               const int64_t *dims) WM_MUST_USE_RESULT;

// Elements of output 0 when its shape is known, else 0.
size_t wm_op_out_numel(const wm_op_ctx_t *ctx);
// Copies every element of |src| into |dst| (same dtype and count).
wm_status_t wm_op_copy_all(wm_tensor_t *dst,
                           const wm_tensor_t *src) WM_MUST_USE_RESULT;
// Writes "[a,b,c]" for |n| integers into |buf|; returns |buf|.
char *wm_op_format_ints(const int64_t *v, size_t n, char *buf, size_t size);
// Heap copy of int list attribute |attr| before |since|, else input |input|.
wm_status_t wm_op_read_list(const wm_op_ctx_t *ctx, const char *attr,
                            int32_t input, int64_t since, int64_t **out_values,
                            size_t *out_count, bool *out_present,
                            bool *out_known) WM_MUST_USE_RESULT;

// Shape rule shared by elementwise ops: broadcasts every present input
// and gives output 0 the dtype of input 0 (or |dtype| if not UNDEFINED).
wm_status_t wm_op_infer_broadcast(wm_op_ctx_t *ctx,
                                  wm_dtype_t dtype) WM_MUST_USE_RESULT;
// Shape rule: output 0 has the type of input 0.
wm_status_t wm_op_infer_same(wm_op_ctx_t *ctx) WM_MUST_USE_RESULT;

// Runs subgraph attribute |attr| of the node on |in|, returning its one
// output (new, owned by the caller).
typedef wm_status_t (*wm_op_subgraph_fn)(void *env, const char *attr,
                                         const wm_tensor_t *in,
                                         wm_tensor_t **out);
// FlexAttention's kernel: fills ctx->out (allocated from the shape rule's
// out_types) from ctx->in (host tensors), applying score_mod / prob_mod
// (when the node has them) through |run_graph|, which may be NULL for a
// node without them. A result of another dtype or shape than its input
// is an error naming the node and the attribute.
wm_status_t wm_op_flex_attention_run(wm_op_ctx_t *ctx,
                                     wm_op_subgraph_fn run_graph,
                                     void *env) WM_MUST_USE_RESULT;

#ifdef __cplusplus
}
#endif

#endif  // WMAP_OPS_H_
