// The layernorm pass: LayerNormalization as exporters write it in
// opsets before 17 (where the operator does not exist),
//   mean = ReduceMean(x) over the last axis, d = x - mean,
//   var = ReduceMean(d * d or d ^ 2) over the same axis,
//   y = d / Sqrt(var + eps) * gamma + beta,
// becomes one wmap.LayerNormalization (ai.onnx's operator at any opset,
// src/ops/nn.c), which the backends run as one kernel, not nine passes
// over memory. Only where the session's first backend implements it.
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static wm_status_t oom(void) {
  return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory matching layer norms");
}

// The nodes of one match, in the order of the formula.
enum { LN_NODES = 9 };

typedef struct ln {
  int32_t nodes[LN_NODES];  // ReduceMean, Sub, Pow/Mul, ReduceMean, Add,
                            // Sqrt, Div, Mul (gamma), Add (beta)
  int32_t x, gamma, beta;   // inputs
  int32_t out;              // the value it writes
  float eps;                // epsilon
} ln_t;

// Whether node |n| is a ReduceMean of |x| over its last axis keeping it.
static bool mean_last(const wm_graph_t *g, const wm_node_t *n, int32_t x) {
  if (!rt_is_onnx_op(n, "ReduceMean") || n->input_count < 1 ||
      n->inputs[0] != x || n->output_count != 1 ||
      wm_node_attr_int(n, "keepdims", 1) != 1) {
    return false;
  }
  const int64_t *axes = NULL;
  size_t count = 0;
  if (n->input_count > 1 && n->inputs[1] >= 0) {  // opset 18: an input
    const wm_tensor_t *t = rt_constant(g, n->inputs[1], WM_DTYPE_INT64);
    if (!t || t->count != 1) {
      return false;
    }
    axes = t->data;
    count = 1;
  } else if (!wm_node_attr_ints(n, "axes", &axes, &count)) {
    return false;
  }
  const int32_t rank = g->values[x].type.shape.rank;
  return count == 1 && (axes[0] == -1 || (rank > 0 && axes[0] == rank - 1));
}

// Whether value |id| is the float constant |want| (one element).
static bool scalar_is(const wm_graph_t *g, int32_t id, float want) {
  const wm_tensor_t *t = rt_constant(g, id, WM_DTYPE_FLOAT);
  return t && t->count == 1 && ((const float *)t->data)[0] == want;
}

// A float constant of one dim (gamma or beta over the last axis).
static bool row_const(const wm_graph_t *g, int32_t id) {
  const wm_tensor_t *t = rt_constant(g, id, WM_DTYPE_FLOAT);
  return t && t->shape.rank == 1;
}

// Matches the formula from ReduceMean node |r1| into |m|.
static bool match(const rt_rw_t *rw, const int32_t *consumer, int32_t r1,
                  ln_t *m) {
  const wm_graph_t *g = rw->src;
  const wm_node_t *n = &g->nodes[r1];
  int32_t x = n->input_count > 0 ? n->inputs[0] : -1;
  if (x < 0 || g->values[x].type.dtype != WM_DTYPE_FLOAT ||
      !mean_last(g, n, x)) {
    return false;
  }
  m->x = x;
  m->nodes[0] = r1;
  const wm_node_t *sub =
      rt_rw_sole_reader(rw, consumer, n->outputs[0], &m->nodes[1]);
  if (!sub || !rt_is_onnx_op(sub, "Sub") || sub->input_count != 2 ||
      sub->inputs[0] != x || sub->inputs[1] != n->outputs[0]) {
    return false;
  }
  // d is read by the square and by the division, nothing else.
  const int32_t d = sub->outputs[0];
  if (d < 0 || rw->pinned[d]) {
    return false;
  }
  int32_t sq = -1, div = -1, readers = 0;
  for (size_t k = 0; k < g->node_count; k++) {
    const wm_node_t *r = &g->nodes[k];
    bool reads = false;
    for (int32_t i = 0; i < r->input_count; i++) {
      reads = reads || r->inputs[i] == d;
    }
    if (!reads) {
      continue;
    }
    readers++;
    if ((rt_is_onnx_op(r, "Mul") && r->input_count == 2 && r->inputs[0] == d &&
         r->inputs[1] == d) ||
        (rt_is_onnx_op(r, "Pow") && rt_other_input(r, d) >= 0 &&
         r->inputs[0] == d && scalar_is(g, r->inputs[1], 2.0f))) {
      sq = (int32_t)k;
    } else if (rt_is_onnx_op(r, "Div") && r->input_count == 2 &&
               r->inputs[0] == d && r->inputs[1] != d) {
      div = (int32_t)k;
    }
  }
  if (readers != 2 || sq < 0 || div < 0) {
    return false;
  }
  m->nodes[2] = sq;
  const wm_node_t *r2 =
      rt_rw_sole_reader(rw, consumer, g->nodes[sq].outputs[0], &m->nodes[3]);
  if (!r2 || !mean_last(g, r2, g->nodes[sq].outputs[0])) {
    return false;
  }
  const wm_node_t *add =
      rt_rw_sole_reader(rw, consumer, r2->outputs[0], &m->nodes[4]);
  int32_t eps = add && rt_is_onnx_op(add, "Add")
                    ? rt_other_input(add, r2->outputs[0])
                    : -2;
  const wm_tensor_t *et = rt_constant(g, eps, WM_DTYPE_FLOAT);
  if (!et || et->count != 1) {
    return false;
  }
  m->eps = ((const float *)et->data)[0];
  const wm_node_t *sqrt =
      rt_rw_sole_reader(rw, consumer, add->outputs[0], &m->nodes[5]);
  if (!sqrt || !rt_is_onnx_op(sqrt, "Sqrt") || sqrt->output_count != 1 ||
      consumer[sqrt->outputs[0]] != div || rw->pinned[sqrt->outputs[0]] ||
      g->nodes[div].inputs[1] != sqrt->outputs[0]) {
    return false;
  }
  m->nodes[6] = div;
  const wm_node_t *mul =
      rt_rw_sole_reader(rw, consumer, g->nodes[div].outputs[0], &m->nodes[7]);
  m->gamma = mul && rt_is_onnx_op(mul, "Mul")
                 ? rt_other_input(mul, g->nodes[div].outputs[0])
                 : -2;
  if (!row_const(g, m->gamma)) {
    return false;
  }
  const wm_node_t *bias =
      rt_rw_sole_reader(rw, consumer, mul->outputs[0], &m->nodes[8]);
  m->beta = bias && rt_is_onnx_op(bias, "Add")
                ? rt_other_input(bias, mul->outputs[0])
                : -2;
  if (!row_const(g, m->beta)) {
    return false;
  }
  m->out = bias->outputs[0];
  return m->out >= 0;
}

// Whether the session's first backend implements the fused node of |m|.
static wm_status_t implemented(const rt_rw_t *rw, const ln_t *m,
                               const wm_op_attr *attrs, bool *out) {
  const int32_t in[3] = {m->x, m->gamma, m->beta};
  return rt_rw_implements_node(rw, "LayerNormalization",
                               rw->src->nodes[m->nodes[0]].name, in, 3, m->out,
                               attrs, 2, out);
}

wm_status_t rt_pass_layernorm(rt_rw_t *rw) {
  const wm_graph_t *g = rw->src;
  int32_t *consumer;
  WM_RETURN_IF_ERROR(rt_rw_sole_consumers(rw, &consumer));
  bool *done = wm_calloc(g->node_count + 1, sizeof(bool));
  wm_status_t s = done ? NULL : oom();
  for (size_t k = 0; !s && k < g->node_count; k++) {
    const int32_t index = rw->order[k];
    if (done[index]) {
      continue;
    }
    ln_t m;
    if (!match(rw, consumer, index, &m)) {
      s = rt_rw_keep(rw, (size_t)index);
      continue;
    }
    const int64_t axis = -1;
    const wm_op_attr attrs[2] = {
        {.struct_size = sizeof(wm_op_attr),
         .name = "axis",
         .type = 2,
         .i = axis},
        {.struct_size = sizeof(wm_op_attr),
         .name = "epsilon",
         .type = 1,
         .f = m.eps},
    };
    bool ok;
    s = implemented(rw, &m, attrs, &ok);
    if (s || !ok) {
      s = s ? s : rt_rw_keep(rw, (size_t)index);
      continue;
    }
    if (wm_graph_opset(rw->dst, "wmap") < 1) {
      s = wm_graph_set_opset(rw->dst, "wmap", 1);
      if (s) {
        break;
      }
    }
    // Written at the first ReduceMean: its inputs are x and constants.
    for (int i = 1; i < LN_NODES; i++) {
      done[m.nodes[i]] = true;
    }
    const int32_t in[3] = {m.x, m.gamma, m.beta};
    const wm_attr_t extra[2] = {
        {.name = "axis", .type = WM_ATTR_INT, .i = axis},
        {.name = "epsilon", .type = WM_ATTR_FLOAT, .f = m.eps},
    };
    rt_rw_node_t n = {
        .op_type = "LayerNormalization",
        .domain = "wmap",
        .name = g->nodes[m.nodes[8]].name,
        .in = in,
        .n_in = 3,
        .out = &m.out,
        .n_out = 1,
        .extra = extra,
        .n_extra = 2,
        .from = m.nodes,
        .n_from = LN_NODES,
        .fused = true,
    };
    s = rt_rw_node(rw, &n);
  }
  free(done);
  free(consumer);
  return s;
}
