// The eltwise pass: a connected group of elementwise nodes (Add, Sub,
// Mul, Div, Neg, Abs, Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Reciprocal,
// Erf on float) whose inner values nothing else reads becomes one
// wmap.Elementwise node (src/ops/elementwise.c): one pass over memory
// instead of one per node, the inner values never stored. Scalar float
// constants become the node's constants; other values it reads are its
// inputs (at most 8). Made only when the session's first backend
// implements Elementwise.
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static wm_status_t oom(void) {
  return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory fusing elementwise nodes");
}

enum { MAX_GROUP = 32, MAX_INPUTS = 8, MAX_CONSTS = 32 };

static const char *const kBinary[] = {"Add", "Sub", "Mul", "Div"};
static const char *const kUnary[] = {"Neg", "Abs", "Relu", "Sigmoid",    "Tanh",
                                     "Exp", "Log", "Sqrt", "Reciprocal", "Erf"};

// 2 or 1 for an elementwise node the pass takes, else 0.
static int arity(const wm_graph_t *g, const wm_node_t *n) {
  if (!wm_domain_is_onnx(n->domain) || n->output_count != 1 ||
      n->outputs[0] < 0 ||
      g->values[n->outputs[0]].type.dtype != WM_DTYPE_FLOAT) {
    return 0;
  }
  int k = 0;
  for (size_t i = 0; i < 4 && !k; i++) {
    k = strcmp(n->op_type, kBinary[i]) == 0 ? 2 : 0;
  }
  for (size_t i = 0; i < 10 && !k; i++) {
    k = strcmp(n->op_type, kUnary[i]) == 0 ? 1 : 0;
  }
  // Before opset 7 the binary ones broadcast only with an attribute.
  if (!k || n->input_count != k || (k == 2 && wm_graph_opset(g, "") < 7)) {
    return 0;
  }
  for (int32_t i = 0; i < k; i++) {
    if (n->inputs[i] < 0 ||
        g->values[n->inputs[i]].type.dtype != WM_DTYPE_FLOAT) {
      return 0;
    }
  }
  return k;
}

// One group: its nodes in topological order, what they read.
typedef struct group {
  int32_t nodes[MAX_GROUP];
  size_t n;
  int32_t inputs[MAX_INPUTS];  // src values read from outside
  size_t n_inputs;
  float consts[MAX_CONSTS];  // scalar constants read
  size_t n_consts;
} group_t;

// The constant index of scalar float constant |v|, adding it; -1 when |v|
// is not one or there is no room.
static int32_t const_of(const wm_graph_t *g, group_t *gr, int32_t v) {
  const wm_tensor_t *t = rt_constant(g, v, WM_DTYPE_FLOAT);
  if (!t || t->count != 1) {
    return -1;
  }
  float c = ((const float *)t->data)[0];
  for (size_t i = 0; i < gr->n_consts; i++) {
    if (memcmp(&gr->consts[i], &c, sizeof(c)) == 0) {
      return (int32_t)i;
    }
  }
  if (gr->n_consts == MAX_CONSTS) {
    return -1;
  }
  gr->consts[gr->n_consts] = c;
  return (int32_t)gr->n_consts++;
}

// The input index of outside value |v|, adding it; -1 when full.
static int32_t input_of(group_t *gr, int32_t v) {
  for (size_t i = 0; i < gr->n_inputs; i++) {
    if (gr->inputs[i] == v) {
      return (int32_t)i;
    }
  }
  if (gr->n_inputs == MAX_INPUTS) {
    return -1;
  }
  gr->inputs[gr->n_inputs] = v;
  return (int32_t)gr->n_inputs++;
}

// Grows the group ending at |root| backwards through producers whose
// output only the group reads; |producer| maps values to nodes.
static void grow(const rt_rw_t *rw, const int32_t *producer,
                 const bool *claimed, int32_t root, int32_t *members,
                 size_t *n) {
  const wm_graph_t *g = rw->src;
  members[0] = root;
  *n = 1;
  for (size_t i = 0; i < *n; i++) {
    const wm_node_t *node = &g->nodes[members[i]];
    for (int32_t k = 0; k < node->input_count && *n < MAX_GROUP; k++) {
      int32_t v = node->inputs[k], p = v >= 0 ? producer[v] : -1;
      if (p < 0 || claimed[p] || rw->pinned[v] || rw->uses[v] != 1 ||
          !arity(g, &g->nodes[p])) {
        continue;
      }
      bool dup = false;
      for (size_t j = 0; j < *n && !dup; j++) {
        dup = members[j] == p;
      }
      if (!dup) {
        members[(*n)++] = p;
      }
    }
  }
}

// Orders |members| topologically (by |pos|) into |gr| and collects what
// they read; false when the inputs or constants do not fit.
static bool settle(const wm_graph_t *g, const int32_t *pos,
                   const int32_t *members, size_t n, group_t *gr) {
  memset(gr, 0, sizeof(*gr));
  memcpy(gr->nodes, members, n * sizeof(int32_t));
  gr->n = n;
  for (size_t i = 1; i < n; i++) {  // insertion sort: groups are small
    int32_t x = gr->nodes[i];
    size_t j = i;
    for (; j > 0 && pos[gr->nodes[j - 1]] > pos[x]; j--) {
      gr->nodes[j] = gr->nodes[j - 1];
    }
    gr->nodes[j] = x;
  }
  for (size_t i = 0; i < n; i++) {
    const wm_node_t *node = &g->nodes[gr->nodes[i]];
    for (int32_t k = 0; k < node->input_count; k++) {
      int32_t v = node->inputs[k];
      bool inner = false;
      for (size_t j = 0; j < i && !inner; j++) {
        inner = g->nodes[gr->nodes[j]].outputs[0] == v;
      }
      if (!inner && const_of(g, gr, v) < 0 && input_of(gr, v) < 0) {
        return false;
      }
    }
  }
  return gr->n_inputs > 0;
}

// The program of |gr|: op names and operands (see src/ops/elementwise.c).
static void program(const wm_graph_t *g, const group_t *gr, const char **ops,
                    int64_t *args) {
  int64_t n_in = (int64_t)gr->n_inputs;
  for (size_t i = 0; i < gr->n; i++) {
    const wm_node_t *node = &g->nodes[gr->nodes[i]];
    ops[i] = node->op_type;
    args[2 * i + 1] = 0;
    for (int32_t k = 0; k < node->input_count; k++) {
      int32_t v = node->inputs[k];
      int64_t a = -1;
      for (size_t j = 0; j < i && a < 0; j++) {
        a = g->nodes[gr->nodes[j]].outputs[0] == v ? n_in + (int64_t)j : -1;
      }
      for (size_t j = 0; j < gr->n_inputs && a < 0; j++) {
        a = gr->inputs[j] == v ? (int64_t)j : -1;
      }
      if (a < 0) {  // a scalar constant settle() collected
        const wm_tensor_t *t = rt_constant(g, v, WM_DTYPE_FLOAT);
        float c = ((const float *)t->data)[0];
        for (size_t j = 0; j < gr->n_consts && a < 0; j++) {
          if (memcmp(&gr->consts[j], &c, sizeof(c)) == 0) {
            a = -1 - (int64_t)j;
          }
        }
      }
      args[2 * i + (size_t)k] = a;
    }
  }
}

// Writes |gr| as one Elementwise node at its last node, when the target
// implements it; *done says whether it did.
static wm_status_t write_group(rt_rw_t *rw, const group_t *gr, bool *done) {
  const wm_graph_t *g = rw->src;
  const char *ops[MAX_GROUP];
  int64_t args[2 * MAX_GROUP];
  program(g, gr, ops, args);
  const wm_node_t *last = &g->nodes[gr->nodes[gr->n - 1]];
  wm_attr_t attrs[3] = {
      {.name = "ops", .type = WM_ATTR_STRINGS, .strings = ops, .count = gr->n},
      {.name = "args", .type = WM_ATTR_INTS, .ints = args, .count = 2 * gr->n},
      {.name = "constants",
       .type = WM_ATTR_FLOATS,
       .floats = (float *)gr->consts,
       .count = gr->n_consts},
  };
  size_t lens[MAX_GROUP];
  for (size_t i = 0; i < gr->n; i++) {
    lens[i] = strlen(ops[i]);
  }
  attrs[0].string_lens = lens;
  // The node as the target's op_query sees it.
  wm_op_attr abi[3] = {
      {.struct_size = sizeof(wm_op_attr),
       .name = "ops",
       .type = 8,
       .count = gr->n,
       .strings = ops,
       .string_lens = (const uint64_t *)NULL},
      {.struct_size = sizeof(wm_op_attr),
       .name = "args",
       .type = 7,
       .count = 2 * gr->n,
       .ints = args},
      {.struct_size = sizeof(wm_op_attr),
       .name = "constants",
       .type = 6,
       .count = gr->n_consts,
       .floats = gr->consts},
  };
  uint64_t lens64[MAX_GROUP];
  for (size_t i = 0; i < gr->n; i++) {
    lens64[i] = lens[i];
  }
  abi[0].string_lens = lens64;
  wm_tensor_desc descs[MAX_INPUTS + 1];
  const void *values[MAX_INPUTS];
  for (size_t i = 0; i < gr->n_inputs; i++) {
    const wm_value_t *v = &g->values[gr->inputs[i]];
    descs[i] = wm_tensor_desc_from_type(v->type.dtype, &v->type.shape);
    values[i] = v->initializer && !v->is_input ? v->initializer->data : NULL;
  }
  const wm_type_t *yt = &g->values[last->outputs[0]].type;
  descs[gr->n_inputs] = wm_tensor_desc_from_type(yt->dtype, &yt->shape);
  wm_op_desc op = {.struct_size = sizeof(op),
                   .domain = "wmap",
                   .op_type = "Elementwise",
                   .opset = 1,
                   .name = last->name,
                   .n_in = (uint32_t)gr->n_inputs,
                   .n_out = 1,
                   .in = descs,
                   .out = descs + gr->n_inputs,
                   .in_values = values,
                   .n_attr = gr->n_consts ? 3 : 2,
                   .attrs = abi};
  WM_RETURN_IF_ERROR(rt_rw_target_implements(rw, &op, done));
  if (!*done) {
    return NULL;
  }
  if (wm_graph_opset(rw->dst, "wmap") < 1) {
    WM_RETURN_IF_ERROR(wm_graph_set_opset(rw->dst, "wmap", 1));
  }
  rt_rw_node_t n = {
      .op_type = "Elementwise",
      .domain = "wmap",
      .name = last->name,
      .in = gr->inputs,
      .n_in = (int32_t)gr->n_inputs,
      .out = last->outputs,
      .n_out = 1,
      .extra = attrs,
      .n_extra = gr->n_consts ? 3 : 2,
      .from = gr->nodes,
      .n_from = gr->n,
      .fused = true,
  };
  return rt_rw_node(rw, &n);
}

wm_status_t rt_pass_eltwise(rt_rw_t *rw) {
  const wm_graph_t *g = rw->src;
  size_t nn = g->node_count + 1;
  int32_t *producer = wm_calloc(g->value_count + 1, sizeof(int32_t));
  int32_t *pos = wm_calloc(nn, sizeof(int32_t));
  int32_t *emit = wm_calloc(nn, sizeof(int32_t));  // group + 1 at its root
  bool *claimed = wm_calloc(nn, sizeof(bool));
  group_t *groups = wm_calloc(nn, sizeof(group_t));
  wm_status_t s = producer && pos && emit && claimed && groups ? NULL : oom();
  for (size_t v = 0; !s && v < g->value_count; v++) {
    producer[v] = -1;
  }
  for (size_t k = 0; !s && k < g->node_count; k++) {
    const wm_node_t *node = &g->nodes[rw->order[k]];
    pos[rw->order[k]] = (int32_t)k;
    for (int32_t i = 0; i < node->output_count; i++) {
      if (node->outputs[i] >= 0) {
        producer[node->outputs[i]] = rw->order[k];
      }
    }
  }
  // Roots last to first: each takes the producers only it reads.
  size_t n_groups = 0;
  for (size_t k = g->node_count; !s && k-- > 0;) {
    int32_t root = rw->order[k];
    if (claimed[root] || !arity(g, &g->nodes[root])) {
      continue;
    }
    int32_t members[MAX_GROUP];
    size_t n;
    grow(rw, producer, claimed, root, members, &n);
    group_t *gr = &groups[n_groups];
    if (n < 2 || !settle(g, pos, members, n, gr)) {
      continue;
    }
    for (size_t i = 0; i < n; i++) {
      claimed[members[i]] = true;
    }
    emit[root] = (int32_t)++n_groups;
  }
  for (size_t k = 0; !s && k < g->node_count; k++) {
    int32_t n = rw->order[k];
    if (emit[n]) {
      const group_t *gr = &groups[emit[n] - 1];
      bool done;
      s = write_group(rw, gr, &done);
      for (size_t i = 0; !s && !done && i < gr->n; i++) {
        s = rt_rw_keep(rw, (size_t)gr->nodes[i]);
      }
    } else if (!claimed[n]) {
      s = rt_rw_keep(rw, (size_t)n);
    }
  }
  free(producer);
  free(pos);
  free(emit);
  free(claimed);
  free(groups);
  return s;
}
