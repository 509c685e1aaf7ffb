// Structured fuzz target for the runtime: a valid seed model is imported,
// edited by a small program the fuzz input carries, checked, planned and
// run on the ref backend. An input is
//
//   u16 LE  L        length of the edit program
//   L bytes          the edit program (one opcode byte, then its operands)
//   the rest         an ONNX model (a seed from tests/fuzz/session_corpus)
//
// The edits change attributes (values, kinds, drop, add), initializers
// (values, shapes, dtypes), graph input shapes and dtypes, op types (any
// registered operator), node inputs (rewire, omit, add, drop), output
// counts, the opset, the input data, and apply inside subgraphs too. The
// fuzzer's mutator (LLVMFuzzerCustomMutator) changes mostly the program,
// now and then the model bytes. Runs are bounded: symbolic dims are bound
// to small values, no value larger than ELEMENT_CAP elements is run,
// loops and sequences are capped by the session options, one thread.
// The edited graph is exported and imported again before it runs, so a
// finding is always a model file the importer accepts (WMAP_FUZZ_SAVE).
// Invariants: no crash, leak or sanitizer report; every error has a
// message and is never INTERNAL; a second run of a model that draws no
// random numbers gives the same outputs, bit for bit.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "ops/ops.h"
#include "wmap/bench.h"
#include "wmap/onnx.h"
#include "wmap/plugin.h"
#include "wmap/session.h"

#define ELEMENT_CAP (1 << 18)  // the most elements of a value that is run
#define WORK_CAP 67108864.0    // the most operations (2^26) of a model run
#define MAX_EDITS 64           // edit operations applied per input
#define MAX_PROGRAM 512        // bytes of edit program the mutator makes
#define MAX_DATA_EDITS 16      // changes to the input data per input
#define SESSION_ITERATIONS 64  // Loop/Scan trip and sequence length caps

// Huge requests fail as NULL (RESOURCE_EXHAUSTED for the runtime) instead
// of ending the run: a model may ask for any size.
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "allocator_may_return_null=1:max_allocation_size_mb=512";
}

typedef struct reader {
  const uint8_t *p;  // the edit program
  size_t n;          // its length
  size_t at;         // next byte
} reader_t;

static uint8_t rd_u8(reader_t *r) {
  return r->at < r->n ? r->p[r->at++] : 0;
}

// Returns an index below |count| (0 when count is 0).
static size_t rd_pick(reader_t *r, size_t count) {
  if (count == 0) {
    return 0;
  }
  size_t v = rd_u8(r);
  if (count > 256) {
    v = (v << 8) | rd_u8(r);
  }
  return v % count;
}

static int64_t rd_int(reader_t *r) {
  static const int64_t table[] = {0,
                                  1,
                                  -1,
                                  2,
                                  3,
                                  -2,
                                  4,
                                  5,
                                  7,
                                  8,
                                  16,
                                  -3,
                                  255,
                                  256,
                                  65535,
                                  1 << 20,
                                  100,
                                  -100,
                                  INT32_MAX,
                                  INT32_MIN,
                                  INT64_MAX,
                                  INT64_MIN,
                                  6,
                                  10,
                                  INT64_MAX - 1,
                                  (int64_t)1 << 32,
                                  -((int64_t)1 << 40),
                                  9,
                                  12,
                                  64,
                                  -8,
                                  1000000};
  uint8_t b = rd_u8(r);
  if (b & 0x80) {  // a raw value, for comparisons the fuzzer learns
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
      v |= (uint64_t)rd_u8(r) << (8 * i);
    }
    return (int64_t)v;
  }
  return table[b % (sizeof(table) / sizeof(table[0]))];
}

// A small non-negative value (dims, ranks, counts).
static int64_t rd_small(reader_t *r, int64_t max) {
  return (int64_t)(rd_u8(r) % (uint8_t)(max + 1));
}

static double rd_real(reader_t *r) {
  static const double table[] = {0.0,   1.0,   -1.0,  0.5,     2.0,
                                 3.0,   -0.5,  1e-7,  1e30,    -1e30,
                                 1e-40, 65504, 1e300, -1e-300, 0.1};
  uint8_t b = rd_u8(r);
  switch (b % 20) {
    case 15:
      return NAN;
    case 16:
      return INFINITY;
    case 17:
      return -INFINITY;
    case 18:
      return -0.0;
    case 19:
      return (double)rd_int(r);
    default:
      return table[b % 15];
  }
}

static const char *rd_string(reader_t *r) {
  static const char *const table[] = {"",
                                      "constant",
                                      "reflect",
                                      "edge",
                                      "wrap",
                                      "NOTSET",
                                      "SAME_UPPER",
                                      "SAME_LOWER",
                                      "VALID",
                                      "linear",
                                      "nearest",
                                      "cubic",
                                      "half_pixel",
                                      "asymmetric",
                                      "align_corners",
                                      "tf_crop_and_resize",
                                      "round_prefer_floor",
                                      "floor",
                                      "ceil",
                                      "Relu",
                                      "Tanh",
                                      "Sigmoid",
                                      "forward",
                                      "reverse",
                                      "bidirectional",
                                      "DCR",
                                      "CRD",
                                      "ij,jk->ik",
                                      "...ii->...i",
                                      "tanh",
                                      "none",
                                      "x"};
  return table[rd_u8(r) % (sizeof(table) / sizeof(table[0]))];
}

static const char *rd_attr_name(reader_t *r) {
  static const char *const table[] = {"axis",
                                      "axes",
                                      "keepdims",
                                      "perm",
                                      "kernel_shape",
                                      "strides",
                                      "pads",
                                      "dilations",
                                      "group",
                                      "transA",
                                      "transB",
                                      "alpha",
                                      "beta",
                                      "epsilon",
                                      "mode",
                                      "to",
                                      "exclusive",
                                      "reverse",
                                      "split",
                                      "num_outputs",
                                      "batch_dims",
                                      "blocksize",
                                      "auto_pad",
                                      "ceil_mode",
                                      "value",
                                      "output_shape",
                                      "output_padding",
                                      "direction",
                                      "hidden_size",
                                      "noop_with_empty_axes",
                                      "select_last_index",
                                      "seed"};
  return table[rd_u8(r) % (sizeof(table) / sizeof(table[0]))];
}

static wm_dtype_t rd_dtype(reader_t *r) {
  static const wm_dtype_t table[] = {
      WM_DTYPE_FLOAT,   WM_DTYPE_INT64,        WM_DTYPE_INT32,
      WM_DTYPE_UINT8,   WM_DTYPE_INT8,         WM_DTYPE_BOOL,
      WM_DTYPE_FLOAT16, WM_DTYPE_DOUBLE,       WM_DTYPE_BFLOAT16,
      WM_DTYPE_UINT16,  WM_DTYPE_INT16,        WM_DTYPE_UINT32,
      WM_DTYPE_UINT64,  WM_DTYPE_FLOAT8E4M3FN, WM_DTYPE_INT4,
      WM_DTYPE_UINT4};
  return table[rd_u8(r) % (sizeof(table) / sizeof(table[0]))];
}

// One change to the input data, applied once inputs are made.
typedef struct data_edit {
  size_t input;    // input index (modulo the count)
  size_t element;  // element index (modulo the count)
  double value;    // what it becomes
} data_edit_t;

typedef struct plan {
  wm_graph_t *root;                        // the imported model
  wm_graph_t *cur;                         // where edits apply
  int64_t dim;                             // what symbolic dims become
  uint32_t flags;                          // session switches
  size_t data_edit_count;                  // entries of data_edits
  data_edit_t data_edits[MAX_DATA_EDITS];  // changes to the input data
} plan_t;

enum {
  FLAG_NO_PASSES = 1u << 0,
  FLAG_NO_IN_PLACE = 1u << 1,
  FLAG_RELEASE_WEIGHTS = 1u << 2,
  FLAG_RUN_TWICE = 1u << 3,
  FLAG_FALLBACK = 1u << 4,
  FLAG_KEEP_TYPES = 1u << 5,
};

// Forgets the declared types of the values nodes make (graph outputs and
// value_info) once the program changed something: else most edits of a
// type end at "output declared float but computes int64" and never run.
static void forget_types(plan_t *p) {
  wm_graph_t *g = p->root;
  for (size_t v = 0; v < g->value_count; v++) {
    if (g->values[v].producer >= 0 && !g->values[v].initializer) {
      g->values[v].type = wm_type_unknown();
    }
  }
}

static bool attr_owns(const wm_attr_t *a) {
  return a->type == WM_ATTR_TENSOR || a->type == WM_ATTR_GRAPH ||
         a->type == WM_ATTR_TENSORS || a->type == WM_ATTR_GRAPHS ||
         a->type == WM_ATTR_SPARSE_TENSOR || a->type == WM_ATTR_SPARSE_TENSORS;
}

// Gives |a| (not owning anything) kind |type| with values from |r|.
static void attr_make(wm_graph_t *g, wm_attr_t *a, wm_attr_type_t type,
                      reader_t *r) {
  a->type = type;
  a->count = 0;
  a->ints = NULL;
  a->floats = NULL;
  a->strings = NULL;
  a->string_lens = NULL;
  a->types = NULL;
  size_t n = (size_t)rd_small(r, 4);
  switch (type) {
    case WM_ATTR_INT:
      a->i = rd_int(r);
      break;
    case WM_ATTR_FLOAT:
      a->f = (float)rd_real(r);
      break;
    case WM_ATTR_STRING:
      a->s = rd_string(r);
      a->s_len = strlen(a->s);
      break;
    case WM_ATTR_INTS:
      a->ints = wm_arena_alloc(&g->arena, (n + 1) * sizeof(int64_t));
      for (size_t i = 0; a->ints && i < n; i++) {
        a->ints[i] = rd_int(r);
      }
      a->count = a->ints ? n : 0;
      break;
    case WM_ATTR_FLOATS:
      a->floats = wm_arena_alloc(&g->arena, (n + 1) * sizeof(float));
      for (size_t i = 0; a->floats && i < n; i++) {
        a->floats[i] = (float)rd_real(r);
      }
      a->count = a->floats ? n : 0;
      break;
    default:
      a->strings = wm_arena_alloc(&g->arena, (n + 1) * sizeof(char *));
      a->string_lens = wm_arena_alloc(&g->arena, (n + 1) * sizeof(size_t));
      if (!a->strings || !a->string_lens) {
        n = 0;
      }
      for (size_t i = 0; i < n; i++) {
        a->strings[i] = rd_string(r);
        a->string_lens[i] = strlen(a->strings[i]);
      }
      a->type = WM_ATTR_STRINGS;
      a->count = n;
      break;
  }
}

static wm_node_t *pick_node(plan_t *p, reader_t *r) {
  if (p->cur->node_count == 0) {
    return NULL;
  }
  return &p->cur->nodes[rd_pick(r, p->cur->node_count)];
}

static void edit_attr_value(plan_t *p, reader_t *r) {
  wm_node_t *node = pick_node(p, r);
  if (!node || node->attr_count == 0) {
    return;
  }
  wm_attr_t *a = &node->attrs[rd_pick(r, (size_t)node->attr_count)];
  switch (a->type) {
    case WM_ATTR_INT:
      a->i = rd_int(r);
      break;
    case WM_ATTR_FLOAT:
      a->f = (float)rd_real(r);
      break;
    case WM_ATTR_STRING:
      a->s = rd_string(r);
      a->s_len = strlen(a->s);
      break;
    case WM_ATTR_INTS:
      if (a->count) {
        a->ints[rd_pick(r, a->count)] = rd_int(r);
      }
      break;
    case WM_ATTR_FLOATS:
      if (a->count) {
        a->floats[rd_pick(r, a->count)] = (float)rd_real(r);
      }
      break;
    case WM_ATTR_TENSOR:
      if (a->t && a->t->count && a->t->dtype != WM_DTYPE_STRING &&
          a->t->dtype != WM_DTYPE_COMPLEX64 &&
          a->t->dtype != WM_DTYPE_COMPLEX128) {
        wm_tensor_set_f64(a->t, rd_pick(r, a->t->count), rd_real(r));
      }
      break;
    default:
      break;
  }
}

static void edit_attr_kind(plan_t *p, reader_t *r) {
  wm_node_t *node = pick_node(p, r);
  if (!node || node->attr_count == 0) {
    return;
  }
  wm_attr_t *a = &node->attrs[rd_pick(r, (size_t)node->attr_count)];
  if (attr_owns(a)) {
    return;
  }
  static const wm_attr_type_t kinds[] = {WM_ATTR_INT,    WM_ATTR_FLOAT,
                                         WM_ATTR_STRING, WM_ATTR_INTS,
                                         WM_ATTR_FLOATS, WM_ATTR_STRINGS};
  attr_make(p->cur, a, kinds[rd_pick(r, 6)], r);
}

static void edit_attr_drop(plan_t *p, reader_t *r) {
  wm_node_t *node = pick_node(p, r);
  if (!node || node->attr_count == 0) {
    return;
  }
  size_t i = rd_pick(r, (size_t)node->attr_count);
  if (attr_owns(&node->attrs[i])) {
    return;
  }
  memmove(&node->attrs[i], &node->attrs[i + 1],
          ((size_t)node->attr_count - i - 1) * sizeof(wm_attr_t));
  node->attr_count--;
}

static void edit_attr_add(plan_t *p, reader_t *r) {
  if (p->cur->node_count == 0) {
    return;
  }
  int32_t n = (int32_t)rd_pick(r, p->cur->node_count);
  static const wm_attr_type_t kinds[] = {WM_ATTR_INT, WM_ATTR_INTS,
                                         WM_ATTR_FLOAT, WM_ATTR_STRING};
  wm_attr_t a = {.name = rd_attr_name(r)};
  attr_make(p->cur, &a, kinds[rd_pick(r, 4)], r);
  wm_status_free(wm_graph_add_attr(p->cur, n, &a));
}

static bool is_numeric(wm_dtype_t d) {
  return d != WM_DTYPE_STRING && d != WM_DTYPE_COMPLEX64 &&
         d != WM_DTYPE_COMPLEX128 && d != WM_DTYPE_UNDEFINED;
}

// Picks a value of the current graph holding an initializer, or -1.
static int32_t pick_initializer(plan_t *p, reader_t *r) {
  size_t count = 0;
  for (size_t v = 0; v < p->cur->value_count; v++) {
    count += p->cur->values[v].initializer != NULL;
  }
  if (count == 0) {
    return -1;
  }
  size_t k = rd_pick(r, count);
  for (size_t v = 0; v < p->cur->value_count; v++) {
    if (p->cur->values[v].initializer && k-- == 0) {
      return (int32_t)v;
    }
  }
  return -1;
}

static void edit_init_value(plan_t *p, reader_t *r) {
  int32_t id = pick_initializer(p, r);
  if (id < 0) {
    return;
  }
  wm_tensor_t *t = p->cur->values[id].initializer;
  if (!is_numeric(t->dtype) || t->count == 0) {
    return;
  }
  size_t i = rd_pick(r, t->count);
  if (rd_u8(r) & 1) {
    wm_tensor_set_i64(t, i, rd_int(r));
  } else {
    wm_tensor_set_f64(t, i, rd_real(r));
  }
}

// Replaces the initializer of |id| by |t|; the declared type follows it
// unless |keep_type| (a stale declaration is an input too).
static void set_initializer(plan_t *p, int32_t id, wm_tensor_t *t,
                            bool keep_type) {
  wm_value_t *v = &p->cur->values[id];
  wm_tensor_destroy(v->initializer);
  v->initializer = t;
  if (!keep_type) {
    v->type = wm_type_tensor(t->dtype, &t->shape);
  }
}

static void edit_init_shape(plan_t *p, reader_t *r) {
  int32_t id = pick_initializer(p, r);
  if (id < 0) {
    return;
  }
  const wm_tensor_t *old = p->cur->values[id].initializer;
  if (!is_numeric(old->dtype)) {
    return;
  }
  wm_shape_t shape = {.rank = (int32_t)rd_small(r, 4)};
  for (int32_t d = 0; d < shape.rank; d++) {
    shape.dims[d] = rd_small(r, 6);
  }
  wm_tensor_t *t = NULL;
  wm_status_t s = wm_tensor_create(old->dtype, &shape, &t);
  if (s) {
    wm_status_free(s);
    return;
  }
  memcpy(t->data, old->data, t->nbytes < old->nbytes ? t->nbytes : old->nbytes);
  set_initializer(p, id, t, rd_u8(r) == 0);
}

static void edit_init_dtype(plan_t *p, reader_t *r) {
  int32_t id = pick_initializer(p, r);
  if (id < 0) {
    return;
  }
  const wm_tensor_t *old = p->cur->values[id].initializer;
  if (!is_numeric(old->dtype)) {
    return;
  }
  wm_tensor_t *t = NULL;
  wm_status_t s = wm_tensor_create(rd_dtype(r), &old->shape, &t);
  if (s) {
    wm_status_free(s);
    return;
  }
  for (size_t i = 0; i < t->count; i++) {
    wm_tensor_set_f64(t, i, wm_tensor_get_f64(old, i));
  }
  set_initializer(p, id, t, rd_u8(r) == 0);
}

// Picks a graph input of the model that is no initializer, or -1.
static int32_t pick_input(plan_t *p, reader_t *r) {
  wm_graph_t *g = p->root;
  if (g->input_count == 0) {
    return -1;
  }
  int32_t id = g->inputs[rd_pick(r, g->input_count)];
  if (id < 0 || g->values[id].initializer) {
    return -1;
  }
  return id;
}

static void edit_input_shape(plan_t *p, reader_t *r) {
  int32_t id = pick_input(p, r);
  if (id < 0) {
    return;
  }
  wm_type_t *t = &p->root->values[id].type;
  if (rd_u8(r) & 1 || t->shape.rank <= 0) {
    int32_t rank = (int32_t)rd_small(r, 5);
    for (int32_t d = 0; d < WM_MAX_RANK; d++) {
      t->dim_params[d] = NULL;
      t->shape.dims[d] = d < rank ? 1 + rd_small(r, 3) : 0;
    }
    t->shape.rank = rank;
    return;
  }
  int32_t d = (int32_t)rd_pick(r, (size_t)t->shape.rank);
  t->shape.dims[d] = rd_small(r, 7);
  t->dim_params[d] = NULL;
}

static void edit_input_dtype(plan_t *p, reader_t *r) {
  int32_t id = pick_input(p, r);
  if (id >= 0) {
    p->root->values[id].type.dtype = rd_dtype(r);
  }
}

static void edit_op_type(plan_t *p, reader_t *r) {
  wm_node_t *node = pick_node(p, r);
  size_t count = wm_ops_count();
  if (!node || count == 0) {
    return;
  }
  const wm_op_def_t *def = wm_ops_at(rd_pick(r, count));
  node->op_type = def->name;
  node->domain = def->domain;
}

// Returns a copy of |node|'s input or output ids in the arena with room
// for one more.
static int32_t *grow_ids(wm_graph_t *g, const int32_t *ids, int32_t count) {
  int32_t *out = wm_arena_alloc(&g->arena, ((size_t)count + 1) * sizeof(*out));
  if (out && count > 0) {
    memcpy(out, ids, (size_t)count * sizeof(*out));
  }
  return out;
}

static void edit_node_input(plan_t *p, reader_t *r) {
  wm_node_t *node = pick_node(p, r);
  if (!node) {
    return;
  }
  size_t values = p->cur->value_count;
  switch (rd_u8(r) % 4) {
    case 0:  // rewire
      if (node->input_count > 0 && values > 0) {
        node->inputs[rd_pick(r, (size_t)node->input_count)] =
            (int32_t)rd_pick(r, values);
      }
      break;
    case 1:  // omit
      if (node->input_count > 0) {
        node->inputs[rd_pick(r, (size_t)node->input_count)] = -1;
      }
      break;
    case 2: {  // one more
      int32_t *ids = grow_ids(p->cur, node->inputs, node->input_count);
      if (ids) {
        ids[node->input_count] = values ? (int32_t)rd_pick(r, values) : -1;
        node->inputs = ids;
        node->input_count++;
      }
      break;
    }
    default:  // one fewer
      if (node->input_count > 0) {
        node->input_count--;
      }
      break;
  }
}

static void edit_node_outputs(plan_t *p, reader_t *r) {
  if (p->cur->node_count == 0) {
    return;
  }
  size_t n = rd_pick(r, p->cur->node_count);
  wm_node_t *node = &p->cur->nodes[n];
  if (rd_u8(r) & 1) {
    if (node->output_count > 0) {
      int32_t id = node->outputs[node->output_count - 1];
      if (id >= 0 && p->cur->values[id].producer == (int32_t)n) {
        p->cur->values[id].producer = -1;
      }
      node->output_count--;
    }
    return;
  }
  char name[48];
  snprintf(name, sizeof(name), "fuzz_out_%zu", p->cur->value_count);
  int32_t id;
  wm_status_t s = wm_graph_value(p->cur, name, &id);
  if (s) {
    wm_status_free(s);
    return;
  }
  node = &p->cur->nodes[n];
  int32_t *ids = grow_ids(p->cur, node->outputs, node->output_count);
  if (ids) {
    ids[node->output_count] = id;
    node->outputs = ids;
    node->output_count++;
    p->cur->values[id].producer = (int32_t)n;
  }
}

// Moves the edits into a subgraph of a node of the current graph, or back
// to the model.
static void edit_scope(plan_t *p, reader_t *r) {
  wm_node_t *node = pick_node(p, r);
  if (!node || (rd_u8(r) & 3) == 0) {
    p->cur = p->root;
    return;
  }
  for (int32_t a = 0; a < node->attr_count; a++) {
    const wm_attr_t *at = &node->attrs[a];
    if (at->type == WM_ATTR_GRAPH && at->g) {
      p->cur = at->g;
      return;
    }
    if (at->type == WM_ATTR_GRAPHS && at->count) {
      p->cur = at->graphs[rd_pick(r, at->count)];
      return;
    }
  }
}

static void edit_opset(plan_t *p, reader_t *r) {
  wm_status_free(wm_graph_set_opset(p->root, "", 1 + rd_small(r, 24)));
}

static void edit_data(plan_t *p, reader_t *r) {
  if (p->data_edit_count < MAX_DATA_EDITS) {
    data_edit_t *e = &p->data_edits[p->data_edit_count++];
    e->input = rd_u8(r);
    e->element = rd_u8(r);
    e->element |= (size_t)rd_u8(r) << 8;
    e->value = rd_real(r);
  }
}

static void edit_session(plan_t *p, reader_t *r) {
  p->flags = rd_u8(r);
  p->dim = 1 + rd_small(r, 4);
}

typedef void (*edit_fn)(plan_t *p, reader_t *r);

static const edit_fn edits[] = {
    edit_attr_value,  edit_attr_kind,  edit_attr_drop,  edit_attr_add,
    edit_init_value,  edit_init_shape, edit_init_dtype, edit_input_shape,
    edit_input_dtype, edit_op_type,    edit_node_input, edit_node_outputs,
    edit_scope,       edit_opset,      edit_data,       edit_session,
};

// Binds every unknown dim of the model's inputs to p->dim; false when an
// input is no tensor or too large to run.
static bool bind_inputs(plan_t *p) {
  wm_graph_t *g = p->root;
  for (size_t i = 0; i < g->input_count; i++) {
    wm_value_t *v = &g->values[g->inputs[i]];
    if (v->initializer) {
      continue;
    }
    if (v->type.kind != WM_TYPE_TENSOR) {
      return false;
    }
    for (int32_t d = 0; d < v->type.shape.rank; d++) {
      const char *name = v->type.dim_params[d];
      if (name && v->type.shape.dims[d] < 0) {
        wm_status_free(wm_graph_bind_dim(g, name, p->dim));
      }
    }
  }
  for (size_t i = 0; i < g->input_count; i++) {
    wm_value_t *v = &g->values[g->inputs[i]];
    if (v->initializer) {
      continue;
    }
    wm_shape_t *sh = &v->type.shape;
    if (sh->rank < 0) {
      sh->rank = 1;
      sh->dims[0] = p->dim;
    }
    for (int32_t d = 0; d < sh->rank; d++) {
      if (sh->dims[d] < 0) {
        sh->dims[d] = p->dim;
        v->type.dim_params[d] = NULL;
      }
    }
    size_t n;
    if (!wm_shape_numel(sh, &n) || n > ELEMENT_CAP) {
      return false;
    }
  }
  return true;
}

// True when no tensor value of |g| whose shape is known is too large.
static bool values_fit(const wm_graph_t *g) {
  size_t total = 0;
  for (size_t v = 0; v < g->value_count; v++) {
    const wm_type_t *t = &g->values[v].type;
    size_t n;
    if (t->kind == WM_TYPE_TENSOR && wm_shape_numel(&t->shape, &n)) {
      if (n > ELEMENT_CAP || !wm_checked_add(total, n, &total) ||
          total > 8 * ELEMENT_CAP) {
        return false;
      }
    }
  }
  return true;
}

// Whether the top-level nodes' estimated work (FLOPs and transcendentals,
// the map's cost rules) is at most WORK_CAP: a RoiAlign with
// sampling_ratio 65535 is valid and runs for minutes, a timeout that says
// nothing about memory or UB. Nodes whose cost is unknown count 0.
static bool work_fits(const wm_graph_t *g) {
  double total = 0;
  for (size_t i = 0; i < g->node_count && total <= WORK_CAP; i++) {
    wm_op_ctx_t ctx;
    const wm_op_def_t *def = NULL;
    wm_status_t s = wm_op_ctx_init(&ctx, g, i);
    if (s) {
      wm_status_free(s);
      continue;
    }
    const wm_node_t *node = &g->nodes[i];
    for (int32_t k = 0; k < ctx.n_out; k++) {
      if (node->outputs[k] >= 0) {
        ctx.out_types[k] = g->values[node->outputs[k]].type;
      }
    }
    s = wm_op_find_def(&ctx, &def);
    if (!s) {
      wm_op_cost_t cost = {0, 0, 0};
      wm_op_cost(def, &ctx, &cost);
      total += cost.flops + cost.transcendentals;
    }
    wm_status_free(s);
    wm_op_ctx_deinit(&ctx);
  }
  return total <= WORK_CAP;
}

// Stops the run when |cond| fails: a finding, not an input error.
static void require(bool cond, const char *what, wm_status_t s) {
  if (!cond) {
    fprintf(stderr, "fuzz invariant broken: %s: %s\n", what,
            wm_status_message(s));
    abort();
  }
}

// WMAP_FUZZ_VERBOSE=1 prints how far each input got (to look at seeds).
static void trace(const char *stage, wm_status_t s) {
  static int verbose = -1;
  if (verbose < 0) {
    verbose = getenv("WMAP_FUZZ_VERBOSE") != NULL;
  }
  if (verbose) {
    fprintf(stderr, "%s: %s\n", stage, s ? wm_status_message(s) : "ok");
  }
}

// An error has a message (a placement failure lists its nodes one a line)
// and is never INTERNAL.
static void check_error(wm_status_t s) {
  if (s) {
    require(*wm_status_message(s) != '\0', "error has a message", s);
    require(wm_status_code(s) != WM_STATUS_INTERNAL, "no internal errors", s);
  }
  wm_status_free(s);
}

// WMAP_FUZZ_SAVE=PATH writes the edited model there (to report a finding
// as an ONNX file).
static void save_model(const uint8_t *buf, size_t n) {
  const char *path = getenv("WMAP_FUZZ_SAVE");
  FILE *f = path ? fopen(path, "wb") : NULL;
  if (f) {
    fwrite(buf, 1, n, f);
    fclose(f);
  }
}

static wm_backend_t *ref_backend(void) {
  static wm_backend_t *ref;
  if (!ref) {
    wm_status_t s =
        wm_backend_create_ex(wm_ref_plugin_query, "built-in", 1, NULL, &ref);
    require(s == NULL, "the ref backend loads", s);
  }
  return ref;
}

// True when a node of |g| or of its subgraphs may draw random numbers
// (two runs may then differ) or is not a registered operator.
static bool may_draw_random(const wm_graph_t *g) {
  for (size_t n = 0; n < g->node_count; n++) {
    const wm_node_t *node = &g->nodes[n];
    const wm_op_def_t *def = wm_ops_find(node->domain, node->op_type,
                                         wm_graph_opset(g, node->domain));
    if (!def || wm_op_draws_random(def, node, NULL)) {
      return true;
    }
    for (int32_t a = 0; a < node->attr_count; a++) {
      const wm_attr_t *at = &node->attrs[a];
      if (at->type == WM_ATTR_GRAPH && at->g && may_draw_random(at->g)) {
        return true;
      }
      for (size_t i = 0; at->type == WM_ATTR_GRAPHS && i < at->count; i++) {
        if (may_draw_random(at->graphs[i])) {
          return true;
        }
      }
    }
  }
  return false;
}

static void apply_data_edits(const plan_t *p, wm_tensor_t **inputs,
                             size_t count) {
  for (size_t i = 0; i < p->data_edit_count && count > 0; i++) {
    const data_edit_t *e = &p->data_edits[i];
    wm_tensor_t *t = inputs[e->input % count];
    if (is_numeric(t->dtype) && t->count > 0) {
      wm_tensor_set_f64(t, e->element % t->count, e->value);
    }
  }
}

static void run_model(plan_t *p) {
  wm_graph_t *g = p->root;
  if (!bind_inputs(p)) {
    trace("bind", NULL);
    return;
  }
  wm_backend_t *ref = ref_backend();
  wm_session_options_t o = {
      .backends = &ref,
      .backend_count = 1,
      .fallback = (p->flags & FLAG_FALLBACK) ? ref : NULL,
      .mode = (p->flags & FLAG_FALLBACK) ? WM_PLACEMENT_FALLBACK
                                         : WM_PLACEMENT_STRICT,
      .passes = (p->flags & FLAG_NO_PASSES) ? "" : NULL,
      .release_weights = (p->flags & FLAG_RELEASE_WEIGHTS) != 0,
      .no_in_place = (p->flags & FLAG_NO_IN_PLACE) != 0,
      .kernels = WM_KERNELS_LIBRARY,
      .max_iterations = SESSION_ITERATIONS,
      .max_sequence_length = SESSION_ITERATIONS,
  };
  // The check first, so that a model with too much work to run is not
  // folded by the session's passes either.
  wm_status_t s = wm_ops_check_graph(g);
  trace("check", s);
  if (s) {
    check_error(s);
    return;
  }
  if (!work_fits(g)) {
    trace("too much work", NULL);
    return;
  }
  wm_session_t *session = NULL;
  s = wm_session_create_placed(g, &o, &session);
  trace("session", s);
  if (s) {
    require(session == NULL, "no session on failure", s);
    check_error(s);
    return;
  }
  char **names = NULL;
  wm_tensor_t **inputs = NULL;
  size_t count = 0;
  if (!values_fit(g)) {
    trace("too large", NULL);
    goto done;
  }
  s = wm_bench_make_inputs(g, &names, &inputs, &count);
  trace("inputs", s);
  if (s) {
    wm_status_free(s);  // inputs the bench cannot make (sequences...)
    goto done;
  }
  apply_data_edits(p, inputs, count);
  // A second run takes the planned path; it must give the same bits.
  int runs = (p->flags & FLAG_RUN_TWICE) ? 2 : 1;
  size_t n_out = g->output_count;
  wm_item_t *first = calloc(n_out + 1, sizeof(*first));
  require(first != NULL, "memory for the run", NULL);
  bool have_first = false;
  for (int k = 0; k < runs; k++) {
    wm_item_t *items = calloc(count + 1, sizeof(*items));
    wm_item_t *outs = calloc(n_out + 1, sizeof(*outs));
    require(items && outs, "memory for the run", NULL);
    for (size_t i = 0; i < count; i++) {
      wm_tensor_t *copy = NULL;
      s = wm_tensor_clone(inputs[i], &copy);
      require(s == NULL, "inputs clone", s);
      items[i] = wm_item_tensor_take(copy);
    }
    s = wm_session_run_items(session, (const char *const *)names, items, count,
                             outs);
    trace("run", s);
    bool ok = s == NULL;
    check_error(s);
    if (ok && k == 0) {
      memcpy(first, outs, n_out * sizeof(*outs));
      memset(outs, 0, n_out * sizeof(*outs));
      have_first = true;
    } else if (ok && have_first && !may_draw_random(g)) {
      for (size_t i = 0; i < n_out; i++) {
        if (!wm_item_equal(&first[i], &outs[i])) {
          fprintf(stderr,
                  "fuzz invariant broken: output %zu (\"%s\") of "
                  "a second run differs\n",
                  i, g->values[g->outputs[i]].name);
          abort();
        }
      }
    }
    for (size_t i = 0; i < n_out; i++) {
      wm_item_deinit(&outs[i]);
    }
    for (size_t i = 0; i < count; i++) {
      wm_item_deinit(&items[i]);
    }
    free(items);
    free(outs);
  }
  for (size_t i = 0; i < n_out; i++) {
    wm_item_deinit(&first[i]);
  }
  free(first);
done:
  for (size_t i = 0; i < count; i++) {
    free(names[i]);
    wm_tensor_destroy(inputs[i]);
  }
  free(names);
  free(inputs);
  wm_session_destroy(session);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) {
    return 0;
  }
  size_t len = (size_t)data[0] | (size_t)data[1] << 8;
  if (len > size - 2) {
    len = size - 2;
  }
  wm_graph_t *g = NULL;
  wm_status_t s = wm_onnx_load_buffer(data + 2 + len, size - 2 - len, NULL, &g);
  trace("import", s);
  if (s) {
    check_error(s);
    return 0;
  }
  plan_t p = {.root = g, .cur = g, .dim = 2};
  reader_t r = {.p = data + 2, .n = len};
  for (int i = 0; i < MAX_EDITS && r.at < r.n; i++) {
    edits[rd_u8(&r) % (sizeof(edits) / sizeof(edits[0]))](&p, &r);
  }
  if (len > 0 && !(p.flags & FLAG_KEEP_TYPES)) {
    forget_types(&p);
  }
  // The edited graph goes through an ONNX file: what runs is a model the
  // importer accepts, and every finding is such a file.
  uint8_t *buf = NULL;
  size_t n = 0;
  s = wm_onnx_save_buffer(g, &buf, &n);
  wm_graph_destroy(g);
  trace("export", s);
  if (s) {
    check_error(s);
    return 0;
  }
  save_model(buf, n);
  p.root = p.cur = NULL;
  s = wm_onnx_load_buffer(buf, n, NULL, &p.root);
  free(buf);
  trace("reimport", s);
  if (s) {
    check_error(s);
    return 0;
  }
  run_model(&p);
  wm_graph_destroy(p.root);
  return 0;
}

#ifdef WM_FUZZ_MUTATOR
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                               unsigned int seed);
size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1,
                                 const uint8_t *data2, size_t size2,
                                 uint8_t *out, size_t max_out_size,
                                 unsigned int seed);

// Splits an input into its program and its model.
static void split(const uint8_t *data, size_t size, size_t *out_len,
                  size_t *out_model) {
  size_t len = size < 2 ? 0 : ((size_t)data[0] | (size_t)data[1] << 8);
  if (size < 2 || len > size - 2) {
    len = size < 2 ? 0 : size - 2;
  }
  *out_len = len;
  *out_model = size < 2 ? 0 : size - 2 - len;
}

// Writes program |prog| (len) and model |model| (n) into |out|.
static size_t join(const uint8_t *prog, size_t len, const uint8_t *model,
                   size_t n, uint8_t *out, size_t max_size) {
  if (2 + len + n > max_size) {
    return 0;
  }
  uint8_t *tmp = malloc(2 + len + n);
  if (!tmp) {
    return 0;
  }
  tmp[0] = (uint8_t)len;
  tmp[1] = (uint8_t)(len >> 8);
  memcpy(tmp + 2, prog, len);
  memcpy(tmp + 2 + len, model, n);
  memcpy(out, tmp, 2 + len + n);
  free(tmp);
  return 2 + len + n;
}

// Mostly mutates the edit program; one time in eight the model's bytes.
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                               unsigned int seed) {
  if (size < 2) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  size_t len, n;
  split(data, size, &len, &n);
  if (seed % 8 == 0) {
    uint8_t *model = data + 2 + len;
    return 2 + len + LLVMFuzzerMutate(model, n, max_size - 2 - len);
  }
  if (2 + n >= max_size) {
    return size;
  }
  size_t cap = max_size - 2 - n;
  if (cap > MAX_PROGRAM) {
    cap = MAX_PROGRAM;
  }
  uint8_t prog[MAX_PROGRAM];
  if (len > cap) {
    len = cap;
  }
  memcpy(prog, data + 2, len);
  if (len == 0) {
    prog[0] = (uint8_t)seed;
    len = 1;
  }
  len = LLVMFuzzerMutate(prog, len, cap);
  size_t out = join(prog, len, data + size - n, n, data, max_size);
  return out ? out : size;
}

// The program of one input (both programs, one after the other, half the
// time) on the model of the other.
size_t LLVMFuzzerCustomCrossOver(const uint8_t *data1, size_t size1,
                                 const uint8_t *data2, size_t size2,
                                 uint8_t *out, size_t max_out_size,
                                 unsigned int seed) {
  size_t len1, n1, len2, n2;
  split(data1, size1, &len1, &n1);
  split(data2, size2, &len2, &n2);
  uint8_t prog[2 * MAX_PROGRAM];
  size_t len = 0;
  if (len1 > MAX_PROGRAM) {
    len1 = MAX_PROGRAM;
  }
  if (len2 > MAX_PROGRAM) {
    len2 = MAX_PROGRAM;
  }
  memcpy(prog, data1 + 2, len1);
  len = len1;
  if (seed & 1) {
    memcpy(prog + len, data2 + 2, len2);
    len += len2;
  }
  return join(prog, len, data2 + size2 - n2, n2, out, max_out_size);
}
#endif
