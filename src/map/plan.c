// The map's parallel plan: tensor parallelism by Megatron-style pairing,
// the data-parallel gradient AllReduce, pipeline stages with their P2P
// transfers and bubble, and the ring cost of every collective. Formulas:
// nccl-tests S and busbw factors, Megatron/ZeRO/GPipe volumes
// (reference/baselines.md 3.1, 6.1-6.3, R4).
//
// The mapped graph is one micro-batch's forward pass on one data-parallel
// rank. Tensor parallelism is a heuristic pairing over any graph, not a
// partitioner: walking the nodes in execution order, every value is
// replicated (whole on each rank), sharded (split over the tp ranks) or
// constant (an initializer, or computed only from constants). A partial
// sum never outlives its producer: the AllReduce is attached there.
//
// - Weight contraction (MatMul, Gemm, Conv, ConvTranspose whose input 1 is
//   constant and input 0 is not): replicated input -> column-parallel,
//   output sharded; sharded input -> row-parallel, output partial, so an
//   AllReduce of the output (S = its bytes) makes it replicated. Grouped
//   Conv (group > 1) is channel-local: sharded in, sharded out. A weight
//   whose output columns do not divide by tp (GPT-2's 50257-word head
//   over 2 ranks) stays whole, as src/parallel's partition keeps it.
// - Elementwise ops keep sharded values sharded; a replicated operand
//   beside a sharded one (a mask, a residual) is sliced locally, no
//   communication: every rank holds all of it.
// - Layout and per-row ops (Reshape, Transpose, Squeeze, Unsqueeze, Split,
//   Slice, Concat, Flatten, Expand, Softmax, LogSoftmax, MatMul between
//   activations, BatchNormalization, pooling, Pad, Resize) keep sharded
//   values sharded when every activation input is sharded.
// - Shape and Size read only metadata: replicated, no communication.
// - Anything else (LayerNormalization, reductions, Gather of a sharded
//   table, a layout op mixing sharded and replicated inputs, unknown ops)
//   first needs an AllGather of each sharded input (S = the full tensor),
//   attached to its producer; the value is replicated from then on.
// - Graph inputs are replicated; sharded graph outputs get an AllGather.
// The embedding Gather reads a constant table with replicated ids, so it
// stays replicated (Megatron's vocabulary-parallel embedding is not
// modelled). A transformer layer pairs as Megatron does: Q/K/V and the
// first MLP GEMM column-parallel, the attention out-projection and second
// MLP GEMM row-parallel: 2 AllReduces per layer forward. Subgraph bodies
// (If, Loop) are opaque.
//
// Data parallelism: one AllReduce of every rank's gradients per step in
// training (S = the parameters a rank holds x grad_bytes); in inference
// an AllGather of each graph output (S = the whole, dp times the rank's).
// Counts: per forward as found; per step x2 in training (the backward
// runs the conjugate collective), x1 for inference, times micro-batches.
// Pipeline stages are contiguous runs of the execution order balancing
// t_roof on the critical backend (FLOPs when no time is known, else node
// counts). A value produced in stage i and read in stage j > i costs one
// P2P per boundary per micro-batch forward (x2 per step in training);
// graph inputs reach every stage and constants are never sent.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// ------------------------------------------------------------- parsing

enum {
  KEY_DP,
  KEY_TP,
  KEY_PP,
  KEY_MICROBATCHES,
  KEY_INFERENCE,
  KEY_LINK,
  KEY_GRAD_BYTES,
  KEY_COUNT,
};

static const char kKnownKeys[] =
    "dp, tp, pp, microbatches (m), inference, link, grad_bytes";

static int key_index(const char *key, size_t len) {
  static const struct {
    const char *name;
    int key;
  } keys[] = {
      {"dp", KEY_DP},          {"tp", KEY_TP},
      {"pp", KEY_PP},          {"microbatches", KEY_MICROBATCHES},
      {"m", KEY_MICROBATCHES}, {"inference", KEY_INFERENCE},
      {"link", KEY_LINK},      {"grad_bytes", KEY_GRAD_BYTES},
  };
  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
    if (strlen(keys[i].name) == len && memcmp(keys[i].name, key, len) == 0) {
      return keys[i].key;
    }
  }
  return -1;
}

static bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Parses the integer in |v| (NUL-terminated) within [lo, hi].
static wm_status_t parse_int(const char *key, const char *v, int64_t lo,
                             int64_t hi, int64_t *out) {
  char *end = NULL;
  long long x = 0;
  bool digits = v[0] != '\0' &&
                (v[0] == '-' || v[0] == '+' || (v[0] >= '0' && v[0] <= '9'));
  if (digits) {
    x = strtoll(v, &end, 10);
  }
  if (!digits || !end || *end != '\0' || end == v) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "parallel spec: %s=\"%s\" is not an integer", key, v);
  }
  // strtoll saturates at the int64 limits, which are out of range anyway.
  if (x < lo || x > hi) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "parallel spec: %s=%s is out of range (%lld..%lld)", key, v,
                    (long long)lo, (long long)hi);
  }
  *out = (int64_t)x;
  return NULL;
}

static wm_status_t parse_item(const char *item, size_t len, bool *seen,
                              wm_map_parallel_t *out) {
  char buf[256];
  if (len >= sizeof(buf)) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "parallel spec: item \"%.40s...\" is too long (%zu bytes)",
                    item, len);
  }
  memcpy(buf, item, len);
  buf[len] = '\0';
  char *eq = strchr(buf, '=');
  if (!eq) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "parallel spec: \"%s\" has no '=' (want key=value; keys: "
                    "%s)",
                    buf, kKnownKeys);
  }
  *eq = '\0';
  char *key = buf, *val = eq + 1;
  size_t klen = strlen(key);
  while (klen > 0 && is_space(key[klen - 1])) {
    key[--klen] = '\0';
  }
  while (is_space(*val)) {
    val++;
  }
  int k = key_index(key, klen);
  if (k < 0) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "parallel spec: unknown key \"%s\" (known: %s)", key,
                    kKnownKeys);
  }
  if (seen[k]) {
    return WM_ERROR(INVALID_ARGUMENT, "parallel spec: key \"%s\" given twice",
                    key);
  }
  seen[k] = true;
  int64_t x = 0;
  switch (k) {
    case KEY_DP:
    case KEY_TP:
    case KEY_PP:
      WM_RETURN_IF_ERROR(parse_int(key, val, 1, 65536, &x));
      if (k == KEY_DP) {
        out->dp = (int32_t)x;
      } else if (k == KEY_TP) {
        out->tp = (int32_t)x;
      } else {
        out->pp = (int32_t)x;
      }
      return NULL;
    case KEY_MICROBATCHES:
      WM_RETURN_IF_ERROR(parse_int(key, val, 1, INT32_MAX, &x));
      out->microbatches = (int32_t)x;
      return NULL;
    case KEY_INFERENCE:
      WM_RETURN_IF_ERROR(parse_int(key, val, 0, 1, &x));
      out->inference = x == 1;
      return NULL;
    case KEY_GRAD_BYTES:
      WM_RETURN_IF_ERROR(parse_int(key, val, 1, 8, &x));
      out->grad_bytes = (int32_t)x;
      return NULL;
    default: {
      char *end = NULL;
      double d = val[0] ? strtod(val, &end) : 0;
      if (!val[0] || !end || *end != '\0' || isnan(d)) {
        return WM_ERROR(INVALID_ARGUMENT,
                        "parallel spec: %s=\"%s\" is not a number (GB/s)", key,
                        val);
      }
      if (!(d > 0) || !isfinite(d)) {
        return WM_ERROR(INVALID_ARGUMENT,
                        "parallel spec: %s=%s is out of range (want > 0 GB/s)",
                        key, val);
      }
      out->link_gbs = d;
      return NULL;
    }
  }
}

wm_status_t wm_map_parse_parallel(const char *text, wm_map_parallel_t *out) {
  memset(out, 0, sizeof(*out));
  out->dp = out->tp = out->pp = 1;
  out->grad_bytes = 4;
  const char *p = text ? text : "";
  while (is_space(*p)) {
    p++;
  }
  if (*p == '\0') {
    return WM_ERROR(INVALID_ARGUMENT,
                    "parallel spec is empty (want key=value,...; keys: %s)",
                    kKnownKeys);
  }
  bool seen[KEY_COUNT] = {false};
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    size_t b = 0, e = len;
    while (b < e && is_space(p[b])) {
      b++;
    }
    while (e > b && is_space(p[e - 1])) {
      e--;
    }
    if (b == e) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "parallel spec \"%s\": empty item at offset %zu", text,
                      (size_t)(p - text));
    }
    WM_RETURN_IF_ERROR(parse_item(p + b, e - b, seen, out));
    if (!comma) {
      break;
    }
    p = comma + 1;
  }
  if (!seen[KEY_MICROBATCHES]) {
    out->microbatches = out->pp;
  }
  return NULL;
}

// ------------------------------------------------------------ the plan

typedef enum value_state {
  REPLICATED = 0,  // whole on every rank
  SHARDED = 1,     // split over the tp ranks
  CONSTANT = 2,    // an initializer or computed only from them
} value_state_t;

typedef enum op_class {
  OP_OTHER = 0,        // needs whole inputs
  OP_ELEMENTWISE = 1,  // may mix sharded and replicated operands
  OP_LAYOUT = 2,       // sharded when every activation input is
  OP_METADATA = 3,     // reads shapes only
} op_class_t;

static op_class_t op_class(const wm_node_t *n) {
  static const char *const elementwise[] = {
      "Abs",         "Acos",        "Acosh",
      "Add",         "And",         "Asin",
      "Asinh",       "Atan",        "Atanh",
      "BitShift",    "Cast",        "CastLike",
      "Ceil",        "Celu",        "Clip",
      "Cos",         "Cosh",        "Div",
      "Dropout",     "Elu",         "Equal",
      "Erf",         "Exp",         "Floor",
      "Gelu",        "Greater",     "GreaterOrEqual",
      "HardSigmoid", "HardSwish",   "Identity",
      "IsInf",       "IsNaN",       "LeakyRelu",
      "Less",        "LessOrEqual", "Log",
      "Max",         "Mean",        "Min",
      "Mish",        "Mod",         "Mul",
      "Neg",         "Not",         "Or",
      "PRelu",       "Pow",         "Reciprocal",
      "Relu",        "Round",       "Selu",
      "Sigmoid",     "Sign",        "Sin",
      "Sinh",        "Softplus",    "Softsign",
      "Sqrt",        "Sub",         "Sum",
      "Tan",         "Tanh",        "ThresholdedRelu",
      "Where",       "Xor",
  };
  static const char *const layout[] = {
      "AveragePool",   "BatchNormalization",
      "Concat",        "Expand",
      "Flatten",       "GlobalAveragePool",
      "GlobalMaxPool", "LogSoftmax",
      "MatMul",        "MaxPool",
      "Pad",           "Reshape",
      "Resize",        "Slice",
      "Softmax",       "Split",
      "Squeeze",       "Transpose",
      "Unsqueeze",
  };
  if (!wm_domain_is_onnx(n->domain)) {
    return OP_OTHER;
  }
  for (size_t i = 0; i < sizeof(elementwise) / sizeof(elementwise[0]); i++) {
    if (strcmp(n->op_type, elementwise[i]) == 0) {
      return OP_ELEMENTWISE;
    }
  }
  for (size_t i = 0; i < sizeof(layout) / sizeof(layout[0]); i++) {
    if (strcmp(n->op_type, layout[i]) == 0) {
      return OP_LAYOUT;
    }
  }
  if (strcmp(n->op_type, "Shape") == 0 || strcmp(n->op_type, "Size") == 0) {
    return OP_METADATA;
  }
  return OP_OTHER;
}

static bool is_contraction(const wm_node_t *n) {
  return wm_domain_is_onnx(n->domain) &&
         (strcmp(n->op_type, "MatMul") == 0 ||
          strcmp(n->op_type, "Gemm") == 0 || strcmp(n->op_type, "Conv") == 0 ||
          strcmp(n->op_type, "ConvTranspose") == 0);
}

static bool is_conv(const wm_node_t *n) {
  return strcmp(n->op_type, "Conv") == 0 ||
         strcmp(n->op_type, "ConvTranspose") == 0;
}

// Whether weight |w| of contraction |n| splits its output columns (output
// channels) evenly over |tp| ranks; true when its shape is unknown.
static bool columns_divide(const wm_graph_t *g, const wm_node_t *n, int32_t w,
                           int32_t tp) {
  const wm_shape_t *s = &g->values[w].type.shape;
  if (s->rank < 1) {
    return true;
  }
  int64_t cols;
  if (strcmp(n->op_type, "Gemm") == 0 && s->rank == 2) {
    cols = s->dims[wm_node_attr_int(n, "transB", 0) ? 0 : 1];
  } else if (strcmp(n->op_type, "Conv") == 0) {
    cols = s->dims[0];
  } else if (strcmp(n->op_type, "ConvTranspose") == 0 && s->rank >= 2) {
    cols = s->dims[1] * wm_node_attr_int(n, "group", 1);
  } else {
    cols = s->dims[s->rank - 1];
  }
  return cols < 0 || cols % tp == 0;
}

// The nccl-tests bus factor: per-rank wire bytes per call are factor * S.
static double ring_factor(uint32_t kind, int32_t ranks) {
  double n = ranks > 0 ? (double)ranks : 1.0;
  switch (kind) {
    case WM_COLL_ALL_REDUCE:
      return 2.0 * (n - 1.0) / n;
    case WM_COLL_ALL_GATHER:
    case WM_COLL_REDUCE_SCATTER:
      return (n - 1.0) / n;
    default:  // Broadcast, P2P
      return 1.0;
  }
}

// Everything the pass works with.
typedef struct plan_ctx {
  wm_map_t *map;
  const wm_graph_t *graph;
  int32_t tp;
  double step_factor;         // per step per forward: (2 or 1) * m
  int64_t *pos_of;            // graph node index -> map position or -1
  uint8_t *state;             // value_state_t per value
  wm_map_collective_t *coll;  // heap, moved to the arena at the end
  size_t n_coll;
  size_t cap_coll;
} plan_ctx_t;

// Bytes of value |vid|: from its type, else its producer's out_bytes when
// that node has one output; 0 when unknown.
static uint64_t value_bytes(const plan_ctx_t *c, int32_t vid) {
  const wm_value_t *v = &c->graph->values[vid];
  size_t numel = 0, bytes = 0;
  size_t es = wm_dtype_size(v->type.dtype);
  if (es > 0 && wm_shape_numel(&v->type.shape, &numel) &&
      wm_checked_mul(numel, es, &bytes)) {
    return (uint64_t)bytes;
  }
  if (v->producer >= 0 && (size_t)v->producer < c->graph->node_count) {
    const wm_node_t *n = &c->graph->nodes[v->producer];
    int32_t outs = 0;
    for (int32_t k = 0; k < n->output_count; k++) {
      outs += n->outputs[k] >= 0;
    }
    int64_t pos = c->pos_of[v->producer];
    if (outs == 1 && pos >= 0) {
      return c->map->nodes[pos].out_bytes;
    }
  }
  return 0;
}

// Position of the map node producing |vid|, or -1.
static int64_t producer_pos(const plan_ctx_t *c, int32_t vid) {
  int32_t p = c->graph->values[vid].producer;
  if (p < 0 || (size_t)p >= c->graph->node_count) {
    return -1;
  }
  return c->pos_of[p];
}

static wm_status_t add_coll(plan_ctx_t *c, uint32_t kind, const char *why,
                            int32_t vid, int64_t node, int32_t ranks,
                            double per_forward, double per_step,
                            uint64_t bytes) {
  WM_RETURN_IF_ERROR(wm_grow((void **)&c->coll, &c->cap_coll, c->n_coll + 1,
                             sizeof(*c->coll)));
  const char *tensor = vid >= 0 ? c->graph->values[vid].name : "";
  wm_map_collective_t *k = &c->coll[c->n_coll];
  memset(k, 0, sizeof(*k));
  k->kind = kind;
  k->why = wm_arena_strdup(&c->map->arena, why);
  k->tensor = wm_arena_strdup(&c->map->arena, tensor ? tensor : "");
  if (!k->why || !k->tensor) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for the parallel plan");
  }
  k->node = node;
  k->ranks = ranks;
  k->per_forward = per_forward;
  k->per_step = per_step;
  k->bytes = bytes;
  c->n_coll++;
  return NULL;
}

// AllGathers the sharded value |vid|; |why| says who needs it whole. The
// value is whole on every rank from then on.
static wm_status_t gather(plan_ctx_t *c, int32_t vid, const char *why) {
  WM_RETURN_IF_ERROR(add_coll(c, WM_COLL_ALL_GATHER, why, vid,
                              producer_pos(c, vid), c->tp, 1, c->step_factor,
                              value_bytes(c, vid)));
  c->state[vid] = REPLICATED;
  return NULL;
}

static void set_outputs(plan_ctx_t *c, const wm_node_t *n, value_state_t s) {
  for (int32_t k = 0; k < n->output_count; k++) {
    int32_t vid = n->outputs[k];
    if (vid >= 0 && (size_t)vid < c->graph->value_count) {
      c->state[vid] = (uint8_t)s;
    }
  }
}

// One node of the tensor-parallel walk.
static wm_status_t tp_node(plan_ctx_t *c, size_t pos) {
  wm_map_node_t *mn = &c->map->nodes[pos];
  const wm_node_t *n = &c->graph->nodes[mn->index];
  bool any_act = false, any_sharded = false, any_rep = false;
  for (int32_t k = 0; k < n->input_count; k++) {
    int32_t vid = n->inputs[k];
    if (vid < 0) {
      continue;
    }
    if (c->state[vid] == CONSTANT) {
      continue;
    }
    any_act = true;
    any_sharded |= c->state[vid] == SHARDED;
    any_rep |= c->state[vid] == REPLICATED;
  }
  if (!any_act || c->tp <= 1) {
    // Without activations the outputs are constants (folded weights,
    // Constant nodes); without tp only that is tracked.
    set_outputs(c, n, any_act ? REPLICATED : CONSTANT);
    return NULL;
  }
  int32_t x = n->input_count > 0 ? n->inputs[0] : -1;
  int32_t w = n->input_count > 1 ? n->inputs[1] : -1;
  if (is_contraction(n) && x >= 0 && w >= 0 && c->state[w] == CONSTANT &&
      c->state[x] != CONSTANT) {
    bool extra_sharded = false;  // a sharded activation bias or scale
    for (int32_t k = 2; k < n->input_count; k++) {
      int32_t vid = n->inputs[k];
      extra_sharded |= vid >= 0 && c->state[vid] == SHARDED;
    }
    if (!extra_sharded && c->state[x] == REPLICATED &&
        !columns_divide(c->graph, n, w, c->tp)) {
      set_outputs(c, n, REPLICATED);  // stays whole on every rank
      return NULL;
    }
    if (!extra_sharded) {
      mn->sharded = true;
      if (c->state[x] == REPLICATED ||
          (is_conv(n) && wm_node_attr_int(n, "group", 1) > 1)) {
        set_outputs(c, n, SHARDED);  // column-parallel or channel-local
        return NULL;
      }
      // Row-parallel: each rank holds a partial sum of the output.
      char why[160];
      snprintf(why, sizeof(why), "tensor-parallel: row-parallel %s output",
               n->op_type);
      for (int32_t k = 0; k < n->output_count; k++) {
        int32_t vid = n->outputs[k];
        if (vid >= 0) {
          WM_RETURN_IF_ERROR(add_coll(c, WM_COLL_ALL_REDUCE, why, vid,
                                      (int64_t)pos, c->tp, 1, c->step_factor,
                                      value_bytes(c, vid)));
        }
      }
      set_outputs(c, n, REPLICATED);
      return NULL;
    }
  }
  if (!any_sharded) {
    set_outputs(c, n, REPLICATED);
    return NULL;
  }
  op_class_t cls = op_class(n);
  if (cls == OP_METADATA) {
    set_outputs(c, n, REPLICATED);
    return NULL;
  }
  if (cls == OP_ELEMENTWISE || (cls == OP_LAYOUT && !any_rep)) {
    mn->sharded = true;
    set_outputs(c, n, SHARDED);
    return NULL;
  }
  char why[160];
  snprintf(why, sizeof(why), "tensor-parallel: %s %s", n->op_type,
           cls == OP_LAYOUT ? "mixes sharded and replicated inputs"
                            : "needs the whole input");
  for (int32_t k = 0; k < n->input_count; k++) {
    int32_t vid = n->inputs[k];
    if (vid >= 0 && c->state[vid] == SHARDED) {
      WM_RETURN_IF_ERROR(gather(c, vid, why));
    }
  }
  set_outputs(c, n, REPLICATED);
  return NULL;
}

// The tensor-parallel walk over every node, then the graph outputs.
static wm_status_t plan_tp(plan_ctx_t *c) {
  for (size_t i = 0; i < c->map->n_nodes; i++) {
    WM_RETURN_IF_ERROR(tp_node(c, i));
  }
  for (size_t i = 0; c->tp > 1 && i < c->graph->output_count; i++) {
    int32_t vid = c->graph->outputs[i];
    if (vid >= 0 && (size_t)vid < c->graph->value_count &&
        c->state[vid] == SHARDED) {
      WM_RETURN_IF_ERROR(gather(c, vid, "tensor-parallel: graph output"));
    }
  }
  return NULL;
}

// Number of contiguous groups of sums <= |limit| the greedy split needs.
static size_t groups_needed(const double *w, size_t n, double limit) {
  size_t groups = 1, in_group = 0;
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    if (in_group > 0 && sum + w[i] > limit) {
      groups++;
      sum = 0;
      in_group = 0;
    }
    sum += w[i];
    in_group++;
  }
  return groups;
}

// Splits |n| >= |pp| nodes of weights |w| into |pp| contiguous non-empty
// stages minimising the heaviest one; writes each node's stage.
static void split_stages(const double *w, size_t n, int32_t pp,
                         int32_t *out_stage) {
  double lo = 0, hi = 0;
  for (size_t i = 0; i < n; i++) {
    lo = w[i] > lo ? w[i] : lo;
    hi += w[i];
  }
  for (int it = 0; it < 100 && hi > lo; it++) {
    double mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) {
      break;
    }
    if (groups_needed(w, n, mid) <= (size_t)pp) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  // Greedy at the bound, forcing a new stage when only as many nodes are
  // left as stages: every stage gets at least one node.
  int32_t stage = 0;
  size_t in_stage = 0;
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    size_t left = n - i;
    size_t stages_after = (size_t)(pp - 1 - stage);
    if (in_stage > 0 && stage < pp - 1 &&
        (sum + w[i] > hi || left <= stages_after)) {
      stage++;
      sum = 0;
      in_stage = 0;
    }
    out_stage[i] = stage;
    sum += w[i];
    in_stage++;
  }
}

// The time the caller will set as t_roof: max of the three.
static double cell_time(const wm_map_cell_t *cell) {
  double t = cell->t_comp > cell->t_mem ? cell->t_comp : cell->t_mem;
  return cell->t_comm > t ? cell->t_comm : t;
}

static wm_status_t plan_stages(plan_ctx_t *c, size_t cb, bool have_cb) {
  wm_map_t *m = c->map;
  int32_t pp = m->plan.spec.pp;
  if (pp <= 1 || m->n_nodes == 0) {
    return NULL;
  }
  double *w = wm_calloc(m->n_nodes, sizeof(*w));
  int32_t *stage = wm_calloc(m->n_nodes, sizeof(*stage));
  if (!w || !stage) {
    free(w);
    free(stage);
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for %zu pipeline nodes",
                    m->n_nodes);
  }
  double total = 0;
  for (size_t i = 0; have_cb && i < m->n_nodes; i++) {
    w[i] = cell_time(&m->nodes[i].cells[cb]);
    total += w[i];
  }
  if (!(total > 0)) {
    total = 0;
    for (size_t i = 0; i < m->n_nodes; i++) {
      const wm_map_node_t *mn = &m->nodes[i];
      w[i] = mn->flops / (mn->sharded ? c->tp : 1);
      total += w[i];
    }
  }
  if (!(total > 0) || !isfinite(total)) {
    for (size_t i = 0; i < m->n_nodes; i++) {
      w[i] = 1;
    }
  }
  split_stages(w, m->n_nodes, pp, stage);
  for (size_t i = 0; i < m->n_nodes; i++) {
    m->nodes[i].stage = stage[i];
  }
  free(w);
  free(stage);
  return NULL;
}

// One P2P per crossing value per boundary, attached to its producer.
static wm_status_t plan_p2p(plan_ctx_t *c) {
  wm_map_t *m = c->map;
  if (m->plan.spec.pp <= 1) {
    return NULL;
  }
  const wm_graph_t *g = c->graph;
  int32_t *last = wm_calloc(g->value_count + 1, sizeof(*last));
  if (!last) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for %zu values",
                    g->value_count);
  }
  for (size_t v = 0; v < g->value_count; v++) {
    last[v] = -1;
  }
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_node_t *n = &g->nodes[m->nodes[i].index];
    for (int32_t k = 0; k < n->input_count; k++) {
      int32_t vid = n->inputs[k];
      if (vid >= 0 && last[vid] < m->nodes[i].stage) {
        last[vid] = m->nodes[i].stage;
      }
    }
  }
  wm_status_t s = NULL;
  for (size_t i = 0; !s && i < m->n_nodes; i++) {
    const wm_node_t *n = &g->nodes[m->nodes[i].index];
    int32_t from = m->nodes[i].stage;
    for (int32_t k = 0; !s && k < n->output_count; k++) {
      int32_t vid = n->outputs[k];
      if (vid < 0 || c->state[vid] == CONSTANT || last[vid] <= from) {
        continue;
      }
      uint64_t bytes = value_bytes(c, vid);
      if (c->state[vid] == SHARDED) {
        bytes = (bytes + (uint64_t)c->tp - 1) / (uint64_t)c->tp;
      }
      for (int32_t b = from; !s && b < last[vid]; b++) {
        char why[96];
        snprintf(why, sizeof(why), "pipeline: stage %d -> %d", b, b + 1);
        s = add_coll(c, WM_MAP_P2P, why, vid, (int64_t)i, 2, 1, c->step_factor,
                     bytes);
      }
    }
  }
  free(last);
  return s;
}

// Learnable parameters one rank holds: those of the heaviest stage (the
// stages are contiguous), the sharded nodes' divided by tp.
static double rank_params(const plan_ctx_t *c) {
  const wm_map_t *m = c->map;
  if (c->tp <= 1 && m->plan.spec.pp <= 1) {
    return (double)m->totals.params;
  }
  double best = 0, sum = 0;
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_map_node_t *mn = &m->nodes[i];
    if (i > 0 && mn->stage != m->nodes[i - 1].stage) {
      sum = 0;
    }
    sum += mn->sharded ? ceil((double)mn->params / c->tp) : (double)mn->params;
    best = sum > best ? sum : best;
  }
  return best;
}

static wm_status_t plan_dp(plan_ctx_t *c) {
  const wm_map_parallel_t *sp = &c->map->plan.spec;
  if (sp->dp <= 1) {
    return NULL;
  }
  if (sp->inference) {
    // Each rank's share of every output is gathered (S = the whole).
    const wm_graph_t *g = c->graph;
    for (size_t i = 0; i < g->output_count; i++) {
      int32_t vid = g->outputs[i];
      if (vid < 0 || (size_t)vid >= g->value_count ||
          c->state[vid] == CONSTANT) {
        continue;
      }
      WM_RETURN_IF_ERROR(
          add_coll(c, WM_COLL_ALL_GATHER, "data-parallel: output gathered", vid,
                   producer_pos(c, vid), sp->dp, 1, c->step_factor,
                   value_bytes(c, vid) * (uint64_t)sp->dp));
    }
    return NULL;
  }
  double psi = rank_params(c);
  char why[128];
  snprintf(why, sizeof(why), "data-parallel: gradients of %.0f parameters",
           psi);
  return add_coll(c, WM_COLL_ALL_REDUCE, why, -1, -1, sp->dp, 0, 1,
                  (uint64_t)(psi * sp->grad_bytes));
}

static wm_status_t add_note(wm_map_t *m, const char *text) {
  const char **notes =
      wm_arena_alloc(&m->arena, (m->n_notes + 1) * sizeof(*notes));
  const char *copy = wm_arena_strdup(&m->arena, text);
  if (!notes || !copy) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for a map note");
  }
  for (size_t i = 0; i < m->n_notes; i++) {
    notes[i] = m->notes[i];
  }
  notes[m->n_notes++] = copy;
  m->notes = notes;
  return NULL;
}

// Divides the work of sharded nodes by tp on every backend.
static void scale_sharded(plan_ctx_t *c) {
  wm_map_t *m = c->map;
  for (size_t i = 0; i < m->n_nodes; i++) {
    for (size_t b = 0; m->nodes[i].sharded && b < m->n_backends; b++) {
      m->nodes[i].cells[b].t_comp /= c->tp;
      m->nodes[i].cells[b].t_mem /= c->tp;
    }
  }
}

// Sets every cell's t_comm: the collectives attached to its node, per
// forward, at the plan's link or else that backend's bandwidth.
static void set_t_comm(plan_ctx_t *c) {
  wm_map_t *m = c->map;
  const wm_map_parallel_t *sp = &m->plan.spec;
  for (size_t b = 0; b < m->n_backends; b++) {
    double lb = sp->link_gbs > 0 ? sp->link_gbs : m->backends[b].bandwidth_gbs;
    for (size_t i = 0; i < m->n_nodes; i++) {
      m->nodes[i].cells[b].t_comm = 0;
    }
    if (!(lb > 0) || !isfinite(lb)) {
      continue;
    }
    for (size_t i = 0; i < c->n_coll; i++) {
      const wm_map_collective_t *k = &c->coll[i];
      if (k->node >= 0 && (size_t)k->node < m->n_nodes) {
        double wire = ring_factor(k->kind, k->ranks) * (double)k->bytes;
        m->nodes[k->node].cells[b].t_comm += k->per_forward * wire / (lb * 1e9);
      }
    }
  }
}

// Costs every collective at the plan's link and sums the plan totals.
static wm_status_t plan_totals(plan_ctx_t *c, size_t cb, bool have_cb) {
  wm_map_t *m = c->map;
  wm_map_plan_t *plan = &m->plan;
  double link = plan->spec.link_gbs > 0
                    ? plan->spec.link_gbs
                    : (have_cb ? m->backends[cb].bandwidth_gbs : 0);
  if (!(link > 0) || !isfinite(link)) {
    link = 0;
  }
  plan->link_gbs = link;
  plan->wire_bytes = 0;
  plan->t_comm = 0;
  for (size_t i = 0; i < c->n_coll; i++) {
    wm_map_collective_t *k = &c->coll[i];
    double wire = ring_factor(k->kind, k->ranks) * (double)k->bytes;
    k->wire_bytes = wire * k->per_step;
    k->t_call = link > 0 ? wire / (link * 1e9) : 0;
    plan->wire_bytes += k->wire_bytes;
    plan->t_comm += k->per_step * k->t_call;
  }
  if (c->n_coll > 0 && link == 0) {
    return add_note(m, "no link bandwidth: communication time unknown");
  }
  return NULL;
}

static wm_status_t plan_summary(plan_ctx_t *c, size_t cb, bool have_cb) {
  wm_map_t *m = c->map;
  wm_map_plan_t *plan = &m->plan;
  int32_t pp = plan->spec.pp;
  double p = pp, mb = plan->spec.microbatches;
  plan->bubble = pp > 1 ? (p - 1) / (mb + p - 1) : 0;
  plan->bubble_ideal = pp > 1 ? (p - 1) / mb : 0;
  plan->stage_t_roof = wm_arena_alloc(&m->arena, (size_t)pp * sizeof(double));
  plan->stage_flops = wm_arena_alloc(&m->arena, (size_t)pp * sizeof(double));
  if (!plan->stage_t_roof || !plan->stage_flops) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for %d stages", pp);
  }
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_map_node_t *mn = &m->nodes[i];
    int32_t s = mn->stage >= 0 && mn->stage < pp ? mn->stage : 0;
    plan->stage_flops[s] += mn->flops / (mn->sharded ? c->tp : 1);
    if (have_cb) {
      plan->stage_t_roof[s] += cell_time(&mn->cells[cb]);
    }
  }
  if (c->n_coll > 0) {
    plan->coll = wm_arena_alloc(&m->arena, c->n_coll * sizeof(*plan->coll));
    if (!plan->coll) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for %zu collectives",
                      c->n_coll);
    }
    memcpy(plan->coll, c->coll, c->n_coll * sizeof(*plan->coll));
  }
  plan->n_coll = c->n_coll;

  const wm_map_parallel_t *sp = &plan->spec;
  char link[64];
  if (plan->link_gbs > 0) {
    snprintf(link, sizeof(link), "%.4g GB/s%s", plan->link_gbs,
             sp->link_gbs > 0 ? "" : " (the backend's memory bandwidth)");
  } else {
    snprintf(link, sizeof(link), "an unknown link bandwidth");
  }
  char note[640];
  int len = snprintf(note, sizeof(note),
                     "parallel plan dp=%d tp=%d pp=%d microbatches=%d, %s: "
                     "the graph is one micro-batch forward on one "
                     "data-parallel rank",
                     sp->dp, sp->tp, sp->pp, sp->microbatches,
                     sp->inference ? "inference" : "training");
  const char *parts[3] = {
      sp->tp > 1 ? "; tensor parallelism pairs column- and row-parallel "
                   "weight contractions (a Megatron heuristic; the "
                   "embedding Gather stays replicated)"
                 : "",
      sp->dp <= 1     ? ""
      : sp->inference ? "; inference: each data-parallel rank's outputs "
                        "gathered"
                      : "; one data-parallel gradient AllReduce per step",
      sp->pp > 1 ? "; contiguous pipeline stages balance t_roof, graph "
                   "inputs reach every stage"
                 : "",
  };
  for (size_t i = 0; i < 3 && len > 0 && (size_t)len < sizeof(note); i++) {
    len += snprintf(note + len, sizeof(note) - (size_t)len, "%s", parts[i]);
  }
  if (len > 0 && (size_t)len < sizeof(note)) {
    snprintf(note + len, sizeof(note) - (size_t)len, "; ring collectives at %s",
             link);
  }
  return add_note(m, note);
}

wm_status_t wm_map_plan_build(wm_map_t *map, const wm_graph_t *graph) {
  if (!map || !graph) {
    return WM_ERROR(INVALID_ARGUMENT, "parallel plan: no map or graph");
  }
  wm_map_plan_t *plan = &map->plan;
  wm_map_parallel_t *sp = &plan->spec;
  if (sp->dp < 1 || sp->tp < 1 || sp->pp < 1 || sp->dp > 65536 ||
      sp->tp > 65536 || sp->pp > 65536) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "parallel plan: dp=%d tp=%d pp=%d out of range (1..65536)",
                    sp->dp, sp->tp, sp->pp);
  }
  if (sp->microbatches < 1) {
    sp->microbatches = sp->pp;
  }
  if (sp->grad_bytes < 1 || sp->grad_bytes > 8) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "parallel plan: grad_bytes=%d out of range (1..8)",
                    sp->grad_bytes);
  }
  if ((size_t)sp->pp > map->n_nodes) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "parallel plan: pp=%d stages exceed the map's %zu node%s",
                    sp->pp, map->n_nodes, map->n_nodes == 1 ? "" : "s");
  }
  plan->enabled = true;
  size_t cb = map->critical.backend;
  bool have_cb = cb < map->n_backends;

  plan_ctx_t c;
  memset(&c, 0, sizeof(c));
  c.map = map;
  c.graph = graph;
  c.tp = sp->tp;
  c.step_factor = (sp->inference ? 1.0 : 2.0) * sp->microbatches;
  c.pos_of = wm_calloc(graph->node_count + 1, sizeof(*c.pos_of));
  c.state = wm_calloc(graph->value_count + 1, 1);
  wm_status_t s = NULL;
  if (!c.pos_of || !c.state) {
    s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for the parallel plan");
    goto done;
  }
  for (size_t i = 0; i < graph->node_count; i++) {
    c.pos_of[i] = -1;
  }
  for (size_t i = 0; i < map->n_nodes; i++) {
    wm_map_node_t *mn = &map->nodes[i];
    if (mn->index < 0 || (size_t)mn->index >= graph->node_count) {
      s = WM_ERROR(INTERNAL, "map node %zu has graph index %d of %zu", i,
                   mn->index, graph->node_count);
      goto done;
    }
    const wm_node_t *n = &graph->nodes[mn->index];
    for (int32_t k = 0; k < n->input_count; k++) {
      if (n->inputs[k] >= (int32_t)graph->value_count) {
        s = WM_ERROR(INTERNAL, "node \"%s\": input %d has value id %d of %zu",
                     mn->name, k, n->inputs[k], graph->value_count);
        goto done;
      }
    }
    for (int32_t k = 0; k < n->output_count; k++) {
      if (n->outputs[k] >= (int32_t)graph->value_count) {
        s = WM_ERROR(INTERNAL, "node \"%s\": output %d has value id %d of %zu",
                     mn->name, k, n->outputs[k], graph->value_count);
        goto done;
      }
    }
    c.pos_of[mn->index] = (int64_t)i;
    mn->sharded = false;
    mn->stage = 0;
  }
  for (size_t v = 0; v < graph->value_count; v++) {
    c.state[v] = graph->values[v].initializer ? CONSTANT : REPLICATED;
  }
  s = plan_tp(&c);
  if (!s) {
    // Stages balance the times after tensor parallelism: the divided work
    // and the tensor-parallel collectives.
    scale_sharded(&c);
    set_t_comm(&c);
    s = plan_stages(&c, cb, have_cb);
  }
  if (!s) {
    s = plan_p2p(&c);
  }
  if (!s) {
    s = plan_dp(&c);
  }
  if (!s) {
    set_t_comm(&c);
    s = plan_totals(&c, cb, have_cb);
  }
  if (!s) {
    s = plan_summary(&c, cb, have_cb);
  }
done:
  free(c.pos_of);
  free(c.state);
  free(c.coll);
  return s;
}
