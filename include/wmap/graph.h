// wmap IR: dtypes, shapes, host tensors, attributes, values, nodes and
// graphs, with a builder API, a structural verifier and topological order.
// Thread-safety: a graph may be read from several threads; building or
// changing it needs external synchronization.
#ifndef WMAP_GRAPH_H_
#define WMAP_GRAPH_H_

#include "wmap/base.h"

#ifdef __cplusplus
extern "C" {
#endif

WM_API_BEGIN

#define WM_MAX_RANK 8
// Attributes one node may carry (ONNX operators use a few dozen).
#define WM_MAX_NODE_ATTRS 1024

// ----------------------------------------------------------------- dtype

// Element types, numbered as ONNX TensorProto.DataType.
typedef enum wm_dtype {
  WM_DTYPE_UNDEFINED = 0,
  WM_DTYPE_FLOAT = 1,
  WM_DTYPE_UINT8 = 2,
  WM_DTYPE_INT8 = 3,
  WM_DTYPE_UINT16 = 4,
  WM_DTYPE_INT16 = 5,
  WM_DTYPE_INT32 = 6,
  WM_DTYPE_INT64 = 7,
  WM_DTYPE_STRING = 8,
  WM_DTYPE_BOOL = 9,
  WM_DTYPE_FLOAT16 = 10,
  WM_DTYPE_DOUBLE = 11,
  WM_DTYPE_UINT32 = 12,
  WM_DTYPE_UINT64 = 13,
  WM_DTYPE_COMPLEX64 = 14,
  WM_DTYPE_COMPLEX128 = 15,
  WM_DTYPE_BFLOAT16 = 16,
  WM_DTYPE_FLOAT8E4M3FN = 17,    // 4-bit exponent, 3-bit mantissa, NaN, no inf
  WM_DTYPE_FLOAT8E4M3FNUZ = 18,  // like E4M3FN, no -0, NaN is 0x80
  WM_DTYPE_FLOAT8E5M2 = 19,      // IEEE-like: inf and NaN
  WM_DTYPE_FLOAT8E5M2FNUZ = 20,  // no inf, no -0, NaN is 0x80
  WM_DTYPE_UINT4 = 21,           // one byte per element in memory
  WM_DTYPE_INT4 = 22,            // one byte per element in memory
  WM_DTYPE_FLOAT4E2M1 = 23,      // the 4-bit code in one byte
  WM_DTYPE_FLOAT8E8M0 = 24,      // exponent only: 2^(code - 127)
  WM_DTYPE_UINT2 = 25,           // one byte per element in memory
  WM_DTYPE_INT2 = 26,            // one byte per element in memory
  WM_DTYPE_COUNT = 27,           // one past the last known value
} wm_dtype_t;

// The 4- and 2-bit types (UINT4, INT4, FLOAT4E2M1, UINT2, INT2) are held
// unpacked in memory, one byte per element (integers sign- or
// zero-extended, FLOAT4E2M1 as its 4-bit code), so that sizes and offsets
// stay whole bytes; they are packed only in ONNX files.

// Returns the size in bytes of one element in memory (sizeof(char *) for
// STRING, 1 for the 4- and 2-bit types, 0 for UNDEFINED or unknown values).
size_t wm_dtype_size(wm_dtype_t dtype);
// Returns the bits of one element in ONNX files: 4 or 2 for the packed
// types, 8 * wm_dtype_size otherwise (0 for UNDEFINED, STRING, unknown).
size_t wm_dtype_bits(wm_dtype_t dtype);
// Returns the ONNX name, e.g. "float", "int64"; "undefined" if unknown.
const char *wm_dtype_name(wm_dtype_t dtype);
// Returns true for the floating-point types: float, double, float16,
// bfloat16 and the minifloats.
bool wm_dtype_is_float(wm_dtype_t dtype);
// Returns true for the float types of one byte or less (the four FLOAT8
// types, FLOAT8E8M0 and FLOAT4E2M1), held as their bit pattern.
bool wm_dtype_is_minifloat(wm_dtype_t dtype);
// Returns true for the signed and unsigned integer types (not bool),
// the 4- and 2-bit ones included.
bool wm_dtype_is_int(wm_dtype_t dtype);
// Returns true for the unsigned integer types.
bool wm_dtype_is_unsigned(wm_dtype_t dtype);
// Returns true when |dtype| is a value this IR can hold.
bool wm_dtype_is_valid(int64_t dtype);

// Half-precision conversions (round to nearest even).
float wm_f16_to_f32(uint16_t h);
uint16_t wm_f32_to_f16(float f);
float wm_bf16_to_f32(uint16_t h);
uint16_t wm_f32_to_bf16(float f);

// Rounding of a conversion to FLOAT8E8M0 (Cast's "round_mode"). Numbered;
// only ever appended to.
typedef enum wm_round_mode {
  WM_ROUND_UP = 0,       // away from zero (Cast's default)
  WM_ROUND_DOWN = 1,     // toward zero
  WM_ROUND_NEAREST = 2,  // nearest, ties up
} wm_round_mode_t;

// Returns the exact value of |code| of minifloat |dtype| (NaN for NaN
// codes; 0 when |dtype| is not a minifloat).
double wm_minifloat_to_f64(wm_dtype_t dtype, uint8_t code);
// Encodes |v| as minifloat |dtype| the way ONNX Cast does: round to
// nearest even (E8M0: |round|); |saturate| clamps values beyond the
// largest finite one (infinities included) to it, else they give inf or
// NaN as the format allows. FLOAT4E2M1 always saturates and takes NaN to
// 0. Returns 0 when |dtype| is not a minifloat.
uint8_t wm_f64_to_minifloat(wm_dtype_t dtype, double v, bool saturate,
                            wm_round_mode_t round);

// ----------------------------------------------------------------- shape

// A shape; rank -1 means unknown rank, a negative dim means unknown or
// symbolic (see wm_type_t.dim_params).
typedef struct wm_shape {
  int32_t rank;               // -1 = unknown
  int64_t dims[WM_MAX_RANK];  // < 0 = unknown
} wm_shape_t;

// Returns a shape of |rank| dims copied from |dims|.
wm_shape_t wm_shape_make(int32_t rank, const int64_t *dims);
// Returns true when the rank and every dim are known.
bool wm_shape_is_known(const wm_shape_t *shape);
// Sets *out to the element count; false if unknown or it overflows.
bool wm_shape_numel(const wm_shape_t *shape, size_t *out);
// Returns true when ranks and dims are equal.
bool wm_shape_equal(const wm_shape_t *a, const wm_shape_t *b);
// Writes "[2,3,?]" into |buf|; returns |buf|.
char *wm_shape_format(const wm_shape_t *shape, char *buf, size_t size);
// ONNX multidirectional broadcasting of |a| and |b| into *out; unknown
// dims stay unknown.
wm_status_t wm_shape_broadcast(const wm_shape_t *a, const wm_shape_t *b,
                               wm_shape_t *out) WM_MUST_USE_RESULT;

// ---------------------------------------------------------------- tensor

// A dense host tensor in row-major order. STRING tensors hold `char *`
// elements, each a heap string owned by the tensor.
typedef struct wm_tensor {
  wm_dtype_t dtype;  // element type
  wm_shape_t shape;  // fully known
  size_t count;      // number of elements
  size_t nbytes;     // count * wm_dtype_size(dtype)
  void *data;        // element storage, owned unless |borrowed|
  bool borrowed;     // data belongs to someone else
} wm_tensor_t;

// Creates a zero-filled tensor (empty strings for STRING).
wm_status_t wm_tensor_create(wm_dtype_t dtype, const wm_shape_t *shape,
                             wm_tensor_t **out) WM_MUST_USE_RESULT;
// Creates a tensor header over |data|, which the caller keeps owning.
wm_status_t wm_tensor_wrap(wm_dtype_t dtype, const wm_shape_t *shape,
                           void *data, wm_tensor_t **out) WM_MUST_USE_RESULT;
// Creates a deep copy of |src|.
wm_status_t wm_tensor_clone(const wm_tensor_t *src,
                            wm_tensor_t **out) WM_MUST_USE_RESULT;
// Frees |tensor| and, unless borrowed, its data; accepts NULL.
void wm_tensor_destroy(wm_tensor_t *tensor);
// Returns true when dtype, shape and every element are equal bit for bit
// (strings by content).
bool wm_tensor_equal(const wm_tensor_t *a, const wm_tensor_t *b);
// Replaces string element |i| with a copy of |n| bytes at |s|.
wm_status_t wm_tensor_set_string(wm_tensor_t *t, size_t i, const char *s,
                                 size_t n) WM_MUST_USE_RESULT;

// Element access converting through double / int64 (numeric dtypes only).
// Stores to a minifloat saturate (Cast's default); stores of a double to a
// 4- or 2-bit integer round to nearest even and give 0 out of range (NaN
// too); stores of an int64 to any integer type keep its low bits.
double wm_tensor_get_f64(const wm_tensor_t *t, size_t i);
void wm_tensor_set_f64(wm_tensor_t *t, size_t i, double v);
int64_t wm_tensor_get_i64(const wm_tensor_t *t, size_t i);
void wm_tensor_set_i64(wm_tensor_t *t, size_t i, int64_t v);
// The same on raw storage of |dtype|.
double wm_load_f64(wm_dtype_t dtype, const void *data, size_t i);
void wm_store_f64(wm_dtype_t dtype, void *data, size_t i, double v);
int64_t wm_load_i64(wm_dtype_t dtype, const void *data, size_t i);
void wm_store_i64(wm_dtype_t dtype, void *data, size_t i, int64_t v);

// ------------------------------------------------------------ value type

// What a value holds. Numbered; only ever appended to.
typedef enum wm_type_kind {
  WM_TYPE_TENSOR = 0,
  WM_TYPE_SEQUENCE = 1,
  WM_TYPE_OPTIONAL = 2,
  WM_TYPE_MAP = 3,
  WM_TYPE_SPARSE_TENSOR = 4,
} wm_type_kind_t;

// The type of a graph value: element type and (possibly symbolic) shape.
// For sequences and optionals, dtype and shape describe the elements.
typedef struct wm_type {
  wm_type_kind_t kind;                  // tensor, sequence, optional...
  wm_type_kind_t elem_kind;             // for optionals: what they wrap
  wm_dtype_t dtype;                     // UNDEFINED when unknown
  wm_shape_t shape;                     // rank -1 when unknown
  const char *dim_params[WM_MAX_RANK];  // symbolic dim names or NULL
} wm_type_t;

// Returns a tensor type of unknown element type and rank.
wm_type_t wm_type_unknown(void);
// Returns a tensor type with |dtype| and |shape|.
wm_type_t wm_type_tensor(wm_dtype_t dtype, const wm_shape_t *shape);
// Writes "float[N,3,224,224]" into |buf|; returns |buf|.
char *wm_type_format(const wm_type_t *type, char *buf, size_t size);

// ----------------------------------------------------------------- items

// A value a run consumes or produces: a tensor, a sequence of items or an
// optional item (ONNX's TensorProto, SequenceProto and OptionalProto).
// Plain data; what it points to is owned by it, wm_item_deinit frees that.
typedef struct wm_item {
  wm_type_kind_t kind;       // TENSOR, SEQUENCE or OPTIONAL
  wm_tensor_t *tensor;       // TENSOR: the tensor
  struct wm_item *elems;     // SEQUENCE: the elements; OPTIONAL: the value
  size_t count;              // SEQUENCE: elements; OPTIONAL: 0 (none) or 1
  wm_type_kind_t elem_kind;  // SEQUENCE, OPTIONAL: what the elements are
  wm_dtype_t elem_dtype;     // their tensors' dtype, UNDEFINED if unknown
} wm_item_t;

// Returns a tensor item taking ownership of |tensor|.
wm_item_t wm_item_tensor_take(wm_tensor_t *tensor);
// Creates an empty sequence (count 0) or an empty optional (none) of
// elements of |elem_kind| and |elem_dtype| with room for |capacity|
// elements.
wm_status_t wm_item_init(wm_item_t *item, wm_type_kind_t kind,
                         wm_type_kind_t elem_kind, wm_dtype_t elem_dtype,
                         size_t capacity) WM_MUST_USE_RESULT;
// Makes *out an optional holding |value|, which it takes (and clears);
// on failure |value| is freed.
wm_status_t wm_item_optional_take(wm_item_t *value,
                                  wm_item_t *out) WM_MUST_USE_RESULT;
// Returns the dtype of an item's tensors: a tensor's own, else the element
// dtype (UNDEFINED when unknown).
wm_dtype_t wm_item_dtype(const wm_item_t *item);
// Frees what |item| owns and clears it; accepts a cleared item.
void wm_item_deinit(wm_item_t *item);
// Makes *out a deep copy of |src|.
wm_status_t wm_item_clone(const wm_item_t *src,
                          wm_item_t *out) WM_MUST_USE_RESULT;
// Returns true when both have the same kind, element kind and count and
// equal elements (wm_tensor_equal); the element dtype of empty ones is
// not compared.
bool wm_item_equal(const wm_item_t *a, const wm_item_t *b);
// Writes "sequence of 3 float tensors", "optional float tensor (none)",
// "float[2,3]" into |buf|; returns |buf|.
char *wm_item_format(const wm_item_t *item, char *buf, size_t size);

// ------------------------------------------------------------ attributes

// Attribute kinds, numbered as ONNX AttributeProto.AttributeType.
typedef enum wm_attr_type {
  WM_ATTR_UNDEFINED = 0,
  WM_ATTR_FLOAT = 1,
  WM_ATTR_INT = 2,
  WM_ATTR_STRING = 3,
  WM_ATTR_TENSOR = 4,
  WM_ATTR_GRAPH = 5,
  WM_ATTR_FLOATS = 6,
  WM_ATTR_INTS = 7,
  WM_ATTR_STRINGS = 8,
  WM_ATTR_TENSORS = 9,
  WM_ATTR_GRAPHS = 10,
  WM_ATTR_SPARSE_TENSOR = 11,
  WM_ATTR_SPARSE_TENSORS = 12,
  WM_ATTR_TYPE_PROTO = 13,
  WM_ATTR_TYPE_PROTOS = 14,
} wm_attr_type_t;

typedef struct wm_graph wm_graph_t;

// One attribute; which fields are set depends on |type|. Strings are
// byte strings that are also NUL-terminated.
typedef struct wm_attr {
  const char *name;           // attribute name
  wm_attr_type_t type;        // which fields below are meaningful
  float f;                    // FLOAT
  int64_t i;                  // INT
  const char *s;              // STRING
  size_t s_len;               // STRING length in bytes
  wm_tensor_t *t;             // TENSOR, owned by the graph
  wm_graph_t *g;              // GRAPH, owned by the parent graph
  size_t count;               // elements of the list kinds
  float *floats;              // FLOATS
  int64_t *ints;              // INTS
  const char **strings;       // STRINGS
  size_t *string_lens;        // STRINGS lengths
  wm_tensor_t **tensors;      // TENSORS, owned by the graph
  wm_graph_t **graphs;        // GRAPHS, owned by the parent graph
  wm_type_t *types;           // TYPE_PROTO(S)
  const char *ref_attr_name;  // set inside function bodies, else NULL
} wm_attr_t;

// Returns the name of an attribute kind, e.g. "ints".
const char *wm_attr_type_name(wm_attr_type_t type);

// ----------------------------------------------------------------- graph

// A named edge of the graph.
typedef struct wm_value {
  const char *name;          // unique within its graph
  wm_type_t type;            // declared or inferred
  wm_tensor_t *initializer;  // constant data owned by the graph, or NULL
  int32_t producer;          // producing node index, -1 if none
  bool is_input;             // listed in the graph inputs
  bool is_output;            // listed in the graph outputs
  bool is_outer;             // refers to a value of an enclosing graph
} wm_value_t;

// An operator application.
typedef struct wm_node {
  const char *name;      // may be ""
  const char *op_type;   // e.g. "Conv"
  const char *domain;    // "" for the default ai.onnx domain
  int32_t input_count;   // number of input slots
  int32_t *inputs;       // value ids; -1 = omitted optional input
  int32_t output_count;  // number of output slots
  int32_t *outputs;      // value ids; -1 = omitted optional output
  int32_t attr_count;    // number of attributes
  wm_attr_t *attrs;      // attributes
  const char *doc;       // doc_string or NULL
} wm_node_t;

// An opset import: a domain and its version.
typedef struct wm_opset {
  const char *domain;  // "" for ai.onnx
  int64_t version;     // opset version
} wm_opset_t;

// A string key/value pair (model metadata).
typedef struct wm_kv {
  const char *key;    // key
  const char *value;  // value
} wm_kv_t;

// A graph (or subgraph) with the model-level fields of its file. Fields
// are read directly; change them only through the functions below.
struct wm_graph {
  wm_arena_t arena;              // names, attributes, id arrays
  const char *name;              // graph name
  const char *doc;               // doc_string or NULL
  const wm_graph_t *parent;      // enclosing graph of a subgraph, or NULL
  wm_value_t *values;            // every value, indexed by id
  size_t value_count;            // number of values
  size_t value_cap;              // allocated values
  wm_node_t *nodes;              // nodes in file order
  size_t node_count;             // number of nodes
  size_t node_cap;               // allocated nodes
  int32_t *inputs;               // graph input value ids, in order
  size_t input_count;            // number of inputs
  size_t input_cap;              // allocated inputs
  int32_t *outputs;              // graph output value ids, in order
  size_t output_count;           // number of outputs
  size_t output_cap;             // allocated outputs
  wm_opset_t *opsets;            // opset imports (models only)
  size_t opset_count;            // number of opset imports
  size_t opset_cap;              // allocated opset imports
  wm_kv_t *metadata;             // metadata_props
  size_t metadata_count;         // number of metadata entries
  size_t metadata_cap;           // allocated metadata entries
  int64_t ir_version;            // ONNX IR version (0 = unset)
  int64_t model_version;         // model_version
  const char *producer_name;     // or NULL
  const char *producer_version;  // or NULL
  const char *model_domain;      // or NULL
  wm_strmap_t value_ids;         // name -> value id
};

// Creates an empty graph named |name|; |parent| is the enclosing graph
// for subgraphs (borrowed; must outlive the subgraph) or NULL.
wm_status_t wm_graph_create(const char *name, const wm_graph_t *parent,
                            wm_graph_t **out) WM_MUST_USE_RESULT;
// Frees a graph, its subgraphs and its tensors; accepts NULL.
void wm_graph_destroy(wm_graph_t *graph);

// Returns the id of the value named |name|, or -1.
int32_t wm_graph_find_value(const wm_graph_t *graph, const char *name);
// Graph inputs and outputs without reading wm_graph_t's fields (for
// bindings over the shared library): counts, and of input or output |i|
// its name and declared type (borrowed from the graph; NULL when |i| is
// out of range).
size_t wm_graph_input_count(const wm_graph_t *graph);
const char *wm_graph_input_name(const wm_graph_t *graph, size_t i);
const wm_type_t *wm_graph_input_type(const wm_graph_t *graph, size_t i);
// Returns true when graph input |i| is also an initializer: it has a
// default value and a run may leave it out (false out of range).
bool wm_graph_input_is_initializer(const wm_graph_t *graph, size_t i);
size_t wm_graph_output_count(const wm_graph_t *graph);
const char *wm_graph_output_name(const wm_graph_t *graph, size_t i);
const wm_type_t *wm_graph_output_type(const wm_graph_t *graph, size_t i);
// Returns the id of the value |name|, creating it with an unknown type.
wm_status_t wm_graph_value(wm_graph_t *graph, const char *name,
                           int32_t *out_id) WM_MUST_USE_RESULT;
// Adds a graph input of |type| (borrowed dim_params are copied).
wm_status_t wm_graph_add_input(wm_graph_t *graph, const char *name,
                               const wm_type_t *type,
                               int32_t *out_id) WM_MUST_USE_RESULT;
// Marks |name| as a graph output, with |type| if given (may be NULL).
wm_status_t wm_graph_add_output(wm_graph_t *graph, const char *name,
                                const wm_type_t *type,
                                int32_t *out_id) WM_MUST_USE_RESULT;
// Adds an initializer; takes ownership of |tensor| even on failure.
wm_status_t wm_graph_add_initializer(wm_graph_t *graph, const char *name,
                                     wm_tensor_t *tensor_take,
                                     int32_t *out_id) WM_MUST_USE_RESULT;
// Sets the declared type of value |id| (value_info). A value with an
// initializer keeps the initializer's type: a type that contradicts it
// (another dtype, rank or known dim) is INVALID_ARGUMENT naming both.
wm_status_t wm_graph_set_type(wm_graph_t *graph, int32_t id,
                              const wm_type_t *type) WM_MUST_USE_RESULT;
// Adds a node; empty strings in |inputs|/|outputs| are omitted optionals.
wm_status_t wm_graph_add_node(wm_graph_t *graph, const char *op_type,
                              const char *domain, const char *name,
                              const char *const *inputs, int32_t input_count,
                              const char *const *outputs, int32_t output_count,
                              int32_t *out_node) WM_MUST_USE_RESULT;
// Adds an attribute to node |node| (a shallow copy of |attr| whose arrays,
// strings, tensors and graphs are copied; tensors in |attr| stay the
// caller's unless the _take variant is used).
wm_status_t wm_graph_add_attr(wm_graph_t *graph, int32_t node,
                              const wm_attr_t *attr) WM_MUST_USE_RESULT;
// Adds a tensor attribute, taking |tensor_take| even on failure.
wm_status_t wm_graph_add_attr_tensor(wm_graph_t *graph, int32_t node,
                                     const char *name, wm_tensor_t *tensor_take)
    WM_MUST_USE_RESULT;
// Adds a graph attribute, taking |sub_take| even on failure.
wm_status_t wm_graph_add_attr_graph(wm_graph_t *graph, int32_t node,
                                    const char *name,
                                    wm_graph_t *sub_take) WM_MUST_USE_RESULT;
// Adds an attribute holding |count| graphs, taking them even on failure.
wm_status_t wm_graph_add_attr_graphs(wm_graph_t *graph, int32_t node,
                                     const char *name, wm_graph_t **subs_take,
                                     size_t count) WM_MUST_USE_RESULT;
// Adds an attribute holding |count| tensors, taking them even on failure.
wm_status_t wm_graph_add_attr_tensors(wm_graph_t *graph, int32_t node,
                                      const char *name,
                                      wm_tensor_t **tensors_take,
                                      size_t count) WM_MUST_USE_RESULT;
// Convenience setters for scalar and list attributes.
wm_status_t wm_graph_add_attr_int(wm_graph_t *graph, int32_t node,
                                  const char *name,
                                  int64_t v) WM_MUST_USE_RESULT;
wm_status_t wm_graph_add_attr_float(wm_graph_t *graph, int32_t node,
                                    const char *name,
                                    float v) WM_MUST_USE_RESULT;
wm_status_t wm_graph_add_attr_string(wm_graph_t *graph, int32_t node,
                                     const char *name,
                                     const char *v) WM_MUST_USE_RESULT;
wm_status_t wm_graph_add_attr_ints(wm_graph_t *graph, int32_t node,
                                   const char *name, const int64_t *v,
                                   size_t count) WM_MUST_USE_RESULT;
wm_status_t wm_graph_add_attr_floats(wm_graph_t *graph, int32_t node,
                                     const char *name, const float *v,
                                     size_t count) WM_MUST_USE_RESULT;
// Sets the version imported for |domain| ("" or "ai.onnx" = default).
wm_status_t wm_graph_set_opset(wm_graph_t *graph, const char *domain,
                               int64_t version) WM_MUST_USE_RESULT;
// Returns the opset version of |domain| for this graph or its enclosing
// graphs, or 0 when not imported.
int64_t wm_graph_opset(const wm_graph_t *graph, const char *domain);
// Adds a metadata key/value pair.
wm_status_t wm_graph_add_metadata(wm_graph_t *graph, const char *key,
                                  const char *value) WM_MUST_USE_RESULT;
// Makes a deep copy of |src| (values with the same ids, types, flags,
// initializers, nodes with their attributes and subgraphs, opsets,
// metadata) whose enclosing graph is |parent| (may be NULL).
wm_status_t wm_graph_clone(const wm_graph_t *src, const wm_graph_t *parent,
                           wm_graph_t **out) WM_MUST_USE_RESULT;
// Copies every attribute of |src| (a node of another graph) to node |node|
// of |graph|: subgraphs are cloned with |graph| as their enclosing graph.
wm_status_t wm_graph_copy_attrs(wm_graph_t *graph, int32_t node,
                                const wm_node_t *src) WM_MUST_USE_RESULT;
// Copies |s| into the graph's arena (NULL stays NULL; NULL on OOM).
const char *wm_graph_intern(wm_graph_t *graph, const char *s);

// Returns a printable name for node |index|: its name, or "#index".
const char *wm_node_label(const wm_graph_t *graph, size_t index, char *buf,
                          size_t size);
// Returns true for the default ONNX domain ("" or "ai.onnx").
bool wm_domain_is_onnx(const char *domain);

// Attribute lookup on a node; return |def| (or NULL/false) when absent.
const wm_attr_t *wm_node_attr(const wm_node_t *node, const char *name);
int64_t wm_node_attr_int(const wm_node_t *node, const char *name, int64_t def);
float wm_node_attr_float(const wm_node_t *node, const char *name, float def);
const char *wm_node_attr_string(const wm_node_t *node, const char *name,
                                const char *def);
bool wm_node_attr_ints(const wm_node_t *node, const char *name,
                       const int64_t **out_values, size_t *out_count);
bool wm_node_attr_floats(const wm_node_t *node, const char *name,
                         const float **out_values, size_t *out_count);

// Checks structure: every input defined (graph input, initializer,
// producer, or an enclosing graph's value), one producer per value, no
// cycles, outputs produced; recurses into subgraphs.
wm_status_t wm_graph_verify(const wm_graph_t *graph) WM_MUST_USE_RESULT;
// Binds the symbolic dim |name| to |value| (>= 1) in every value type of
// |graph|; INVALID_ARGUMENT naming the model's symbolic dims when none is
// called |name|.
wm_status_t wm_graph_bind_dim(wm_graph_t *graph, const char *name,
                              int64_t value) WM_MUST_USE_RESULT;
// Returns the constant tensor value |id| holds: its initializer, or the
// "value" tensor of the Constant node making it (exporters store weights
// both ways); NULL otherwise. Borrowed from the graph.
const wm_tensor_t *wm_graph_const_value(const wm_graph_t *graph, int32_t id);
// Marks the learnable parameters of |graph|, counted the way frameworks
// do: floating-point constants (wm_graph_const_value) of rank >= 1, except
// BatchNormalization running mean and variance (inputs 3 and 4). *out_mask has
// value_count entries (true = parameter) and must be freed.
wm_status_t wm_graph_param_mask(const wm_graph_t *graph,
                                bool **out_mask) WM_MUST_USE_RESULT;
// Returns the number of parameter elements (0 when out of memory).
uint64_t wm_graph_param_count(const wm_graph_t *graph);
// Computes a topological order of the nodes (stable: file order where
// possible); *out_order (node_count entries) must be freed.
wm_status_t wm_graph_topo_order(const wm_graph_t *graph,
                                int32_t **out_order) WM_MUST_USE_RESULT;
// Returns true when two graphs are equal in everything import and export
// preserve; otherwise writes the first difference into |why|.
bool wm_graph_equal(const wm_graph_t *a, const wm_graph_t *b, char *why,
                    size_t why_size);

WM_API_END

#ifdef __cplusplus
}
#endif

#endif  // WMAP_GRAPH_H_
