// The epilogue pass: a Conv, Gemm or MatMul and the nodes after it that
// only add a bias, add a residual or apply an activation become one
// FusedConv, FusedGemm or FusedMatMul (src/ops/fused.c), whose kernels
// apply them to each output tile while it is still in cache. Activations
// are recognised as single nodes (Relu, Clip, LeakyRelu, Sigmoid,
// HardSigmoid, HardSwish, Tanh, Gelu) and in the forms exporters write
// them: x·sigmoid(x), x·relu6(x + 3)/6, x·hardsigmoid(x), and GELU through
// Erf or through Tanh. A chain is fused only when the session's first
// backend implements the fused operator (its op_query does not answer
// "operator, opset, attribute or type not implemented"), so a backend
// without fused kernels keeps the nodes as written.
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static wm_status_t oom(void) {
  return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory fusing epilogues");
}

enum { EPI_MAX_NODES = 12 };

// One chain to fuse.
typedef struct epi {
  const char *fused;             // "FusedConv", "FusedGemm", "FusedMatMul"
  int32_t anchor;                // the Conv, Gemm or MatMul (src node)
  int32_t nodes[EPI_MAX_NODES];  // the nodes absorbed after it
  size_t n_nodes;
  int32_t out;         // src value the fused node writes
  int32_t bias_value;  // constant added per channel / column, or -1
  int32_t z;           // FusedConv's residual, or -1
  const char *act;     // activation name ("" = none)
  float params[2];     // its activation_params
  size_t n_params;
} epi_t;

// What matching reads: the graph, who reads each value, which nodes a
// chain already took.
typedef struct match {
  const rt_rw_t *rw;
  const wm_graph_t *g;
  const int32_t *first;  // per value: start of its readers in |readers|
  const int32_t *readers;
  const bool *claimed;  // per src node
} match_t;

static bool near(double v, double want) {
  return fabs(v - want) <= 1e-4 * fabs(want) + 1e-7;
}

// The value of a constant float scalar (one element, any rank).
static bool scalar(const wm_graph_t *g, int32_t id, float *out) {
  const wm_tensor_t *t = rt_constant(g, id, WM_DTYPE_FLOAT);
  if (!t || t->count != 1) {
    return false;
  }
  *out = ((const float *)t->data)[0];
  return true;
}

static bool scalar_is(const wm_graph_t *g, int32_t id, double want) {
  float v;
  return scalar(g, id, &v) && near(v, want);
}

// The node that alone reads |v| (not a graph output, not yet taken), or
// -1.
static int32_t next(const match_t *m, int32_t v) {
  if (v < 0 || m->rw->pinned[v] || m->rw->uses[v] != 1) {
    return -1;
  }
  int32_t n = m->readers[m->first[v]];
  return m->claimed[n] ? -1 : n;
}

// The |k|-th node reading |v| (each reading node once), or -1.
static int32_t reader(const match_t *m, int32_t v, int32_t k) {
  int32_t n = m->first[v] + k;
  return n < m->first[v + 1] && !m->claimed[m->readers[n]] ? m->readers[n] : -1;
}

static const wm_node_t *node(const match_t *m, int32_t n) {
  return n >= 0 ? &m->g->nodes[n] : NULL;
}

static bool is(const match_t *m, int32_t n, const char *op) {
  return n >= 0 && rt_is_onnx_op(node(m, n), op) &&
         node(m, n)->output_count == 1;
}

static bool add_node(epi_t *e, int32_t n) {
  if (e->n_nodes >= EPI_MAX_NODES) {
    return false;
  }
  e->nodes[e->n_nodes++] = n;
  return true;
}

// x·c where c is the scalar |want|, as Mul(x, c) or Div(x, 1/c): the
// node's output, or -1.
static int32_t times(const match_t *m, int32_t n, int32_t x, double want) {
  int32_t c =
      is(m, n, "Mul") || is(m, n, "Div") ? rt_other_input(node(m, n), x) : -2;
  if (c < 0) {
    return -1;
  }
  bool div = rt_is_onnx_op(node(m, n), "Div");
  if (div && node(m, n)->inputs[0] != x) {
    return -1;  // c / x
  }
  return scalar_is(m->g, c, div ? 1.0 / want : want) ? node(m, n)->outputs[0]
                                                     : -1;
}

// The end of 0.5·x·t from t = 1 + erf(..) or 1 + tanh(..) at |t|:
// (t·x)·0.5, (t·0.5)·x or t·(x·0.5), with |half| the node computing
// x·0.5 when x has one. Appends the nodes; the output, or -1.
static int32_t gelu_tail(const match_t *m, epi_t *e, int32_t t, int32_t x,
                         int32_t half) {
  int32_t m1 = next(m, t);
  if (!is(m, m1, "Mul")) {
    return -1;
  }
  int32_t o = rt_other_input(node(m, m1), t);
  int32_t y1 = node(m, m1)->outputs[0];
  if (half >= 0) {
    if (o != node(m, half)->outputs[0] || !add_node(e, half) ||
        !add_node(e, m1)) {
      return -1;
    }
    return y1;
  }
  int32_t m2 = next(m, y1);
  if (o == x) {
    int32_t y2 = times(m, m2, y1, 0.5);
    return y2 >= 0 && add_node(e, m1) && add_node(e, m2) ? y2 : -1;
  }
  if (o >= 0 && scalar_is(m->g, o, 0.5) && is(m, m2, "Mul") &&
      rt_other_input(node(m, m2), y1) == x) {
    return add_node(e, m1) && add_node(e, m2) ? node(m, m2)->outputs[0] : -1;
  }
  return -1;
}

// Among the readers of |x|, the node computing x·0.5 (for gelu_tail).
static int32_t half_of(const match_t *m, int32_t x) {
  for (int32_t k = 0; reader(m, x, k) >= 0; k++) {
    int32_t n = reader(m, x, k);
    if (times(m, n, x, 0.5) >= 0 && next(m, node(m, n)->outputs[0]) >= 0) {
      return n;
    }
  }
  return -1;
}

// GELU through Erf: 0.5·x·(1 + erf(x / sqrt 2)); |d| is the reader of x
// that divides it.
static int32_t gelu_erf(const match_t *m, epi_t *e, int32_t x, int32_t d) {
  int32_t u = times(m, d, x, 0.70710678118654752);
  int32_t erf = next(m, u);
  if (u < 0 || !is(m, erf, "Erf")) {
    return -1;
  }
  int32_t a = next(m, node(m, erf)->outputs[0]);
  if (!is(m, a, "Add") ||
      !scalar_is(m->g, rt_other_input(node(m, a), node(m, erf)->outputs[0]),
                 1.0)) {
    return -1;
  }
  if (!add_node(e, d) || !add_node(e, erf) || !add_node(e, a)) {
    return -1;
  }
  return gelu_tail(m, e, node(m, a)->outputs[0], x, half_of(m, x));
}

// GELU through Tanh: 0.5·x·(1 + tanh(sqrt(2/pi)·(x + 0.044715·x^3)));
// |p| is the reader of x that cubes it.
static int32_t gelu_tanh(const match_t *m, epi_t *e, int32_t x, int32_t p) {
  if (!is(m, p, "Pow") || node(m, p)->inputs[0] != x ||
      !scalar_is(m->g, node(m, p)->inputs[1], 3.0)) {
    return -1;
  }
  int32_t c = next(m, node(m, p)->outputs[0]);
  int32_t cy = times(m, c, node(m, p)->outputs[0], 0.044715);
  int32_t i = next(m, cy);
  if (cy < 0 || !is(m, i, "Add") || rt_other_input(node(m, i), cy) != x) {
    return -1;
  }
  int32_t s = next(m, node(m, i)->outputs[0]);
  int32_t sy = times(m, s, node(m, i)->outputs[0], 0.79788456080286536);
  int32_t th = next(m, sy);
  if (sy < 0 || !is(m, th, "Tanh")) {
    return -1;
  }
  int32_t a = next(m, node(m, th)->outputs[0]);
  if (!is(m, a, "Add") ||
      !scalar_is(m->g, rt_other_input(node(m, a), node(m, th)->outputs[0]),
                 1.0)) {
    return -1;
  }
  if (!add_node(e, p) || !add_node(e, c) || !add_node(e, i) ||
      !add_node(e, s) || !add_node(e, th) || !add_node(e, a)) {
    return -1;
  }
  return gelu_tail(m, e, node(m, a)->outputs[0], x, half_of(m, x));
}

// The FLOAT parameters |a| and |b| (b NULL: one) of node |n| as its
// definition resolves them into *out_a, *out_b.
static bool resolved_floats(const match_t *m, int32_t n, const char *a,
                            const char *b, float *out_a, float *out_b) {
  wm_op_params_t p;
  return rt_rw_params(m->g, n, &p) && wm_op_param_float_of(&p, a, out_a) &&
         (!b || wm_op_param_float_of(&p, b, out_b));
}

// x·relu6(x + 3)/6 (|a| adds 3), or x·hardsigmoid(x) with alpha 1/6 and
// beta 1/2 (|a| is the HardSigmoid).
static int32_t hard_swish(const match_t *m, epi_t *e, int32_t x, int32_t a) {
  int32_t gate;
  if (is(m, a, "HardSigmoid") && node(m, a)->inputs[0] == x) {
    float alpha, beta;
    if (!resolved_floats(m, a, "alpha", "beta", &alpha, &beta) ||
        !near(alpha, 1.0 / 6) || !near(beta, 0.5) || !add_node(e, a)) {
      return -1;
    }
    gate = node(m, a)->outputs[0];
  } else {
    if (!is(m, a, "Add") ||
        !scalar_is(m->g, rt_other_input(node(m, a), x), 3.0)) {
      return -1;
    }
    int32_t clip = next(m, node(m, a)->outputs[0]);
    const wm_node_t *c = node(m, clip);
    if (!is(m, clip, "Clip") || wm_graph_opset(m->g, "") < 11 ||
        c->input_count != 3 || !scalar_is(m->g, c->inputs[1], 0.0) ||
        !scalar_is(m->g, c->inputs[2], 6.0) || !add_node(e, a) ||
        !add_node(e, clip)) {
      return -1;
    }
    gate = c->outputs[0];
  }
  int32_t mul = next(m, gate);
  if (!is(m, mul, "Mul") || rt_other_input(node(m, mul), gate) != x ||
      !add_node(e, mul)) {
    return -1;
  }
  if (rt_is_onnx_op(node(m, a), "HardSigmoid")) {
    return node(m, mul)->outputs[0];
  }
  int32_t d = next(m, node(m, mul)->outputs[0]);
  int32_t y = times(m, d, node(m, mul)->outputs[0], 1.0 / 6);
  return y >= 0 && add_node(e, d) ? y : -1;
}

// x·sigmoid(x): |s| is the Sigmoid reading x.
static int32_t silu(const match_t *m, epi_t *e, int32_t x, int32_t s) {
  if (!is(m, s, "Sigmoid")) {
    return -1;
  }
  int32_t sy = node(m, s)->outputs[0];
  int32_t mul = next(m, sy);
  if (!is(m, mul, "Mul") || rt_other_input(node(m, mul), sy) != x ||
      !add_node(e, s) || !add_node(e, mul)) {
    return -1;
  }
  return node(m, mul)->outputs[0];
}

// A one-node activation of |x|: its name and parameters into |e|.
static bool single_act(const match_t *m, int32_t n, epi_t *e) {
  const wm_node_t *a = node(m, n);
  if (!a || !wm_domain_is_onnx(a->domain) || a->output_count != 1) {
    return false;
  }
  const char *op = a->op_type;
  e->n_params = 0;
  if (strcmp(op, "Relu") == 0 || strcmp(op, "Sigmoid") == 0 ||
      strcmp(op, "HardSwish") == 0 || strcmp(op, "Tanh") == 0) {
    e->act = op;
  } else if (strcmp(op, "LeakyRelu") == 0) {
    e->act = op;
    e->n_params = 1;
    if (!resolved_floats(m, n, "alpha", NULL, &e->params[0], NULL)) {
      return false;
    }
  } else if (strcmp(op, "HardSigmoid") == 0) {
    e->act = op;
    e->n_params = 2;
    if (!resolved_floats(m, n, "alpha", "beta", &e->params[0], &e->params[1])) {
      return false;
    }
  } else if (strcmp(op, "Clip") == 0) {
    float lo = -FLT_MAX, hi = FLT_MAX;
    if (wm_graph_opset(m->g, "") < 11) {
      if (!resolved_floats(m, n, "min", "max", &lo, &hi)) {
        return false;
      }
    } else {
      int32_t lo_id = a->input_count > 1 ? a->inputs[1] : -1;
      int32_t hi_id = a->input_count > 2 ? a->inputs[2] : -1;
      if ((lo_id >= 0 && !scalar(m->g, lo_id, &lo)) ||
          (hi_id >= 0 && !scalar(m->g, hi_id, &hi))) {
        return false;
      }
    }
    e->act = op;
    e->params[0] = lo;
    e->params[1] = hi;
    e->n_params = 2;
  } else if (strcmp(op, "Gelu") == 0) {
    wm_op_params_t p;
    const wm_op_param_t *approx =
        rt_rw_params(m->g, n, &p) ? wm_op_param_find(&p, "approximate") : NULL;
    if (!approx || approx->type != WM_ATTR_STRING) {
      return false;
    }
    e->act = strcmp(approx->s, "tanh") == 0 ? "GeluTanh" : "Gelu";
  } else {
    return false;
  }
  return add_node(e, n);
}

// The activation applied to |x| (the chain's value so far): appends its
// nodes and returns its output, or -1 (|e| unchanged).
static int32_t activation(const match_t *m, epi_t *e, int32_t x) {
  if (x < 0 || m->rw->pinned[x]) {
    return -1;
  }
  epi_t try = *e;
  int32_t n = next(m, x);
  if (n >= 0 && single_act(m, n, &try) && node(m, n)->inputs[0] == x) {
    *e = try;
    return node(m, n)->outputs[0];
  }
  // The two-reader forms; every reader of x must be in the pattern.
  int32_t readers = m->first[x + 1] - m->first[x];
  for (int32_t k = 0; k < readers; k++) {
    int32_t r = reader(m, x, k);
    struct {
      const char *name;
      int32_t (*fn)(const match_t *, epi_t *, int32_t, int32_t);
      int32_t uses;  // input slots reading x
    } const forms[] = {
        {"Silu", silu, 2},
        {"HardSwish", hard_swish, 2},
        {"Gelu", gelu_erf, 2},
        {"GeluTanh", gelu_tanh, 3},
    };
    for (size_t f = 0; r >= 0 && f < sizeof(forms) / sizeof(forms[0]); f++) {
      if (m->rw->uses[x] != forms[f].uses) {
        continue;
      }
      try = *e;
      int32_t y = forms[f].fn(m, &try, x, r);
      if (y < 0) {
        continue;
      }
      // The pattern's nodes read x exactly as often as x is read.
      int32_t seen = 0;
      for (size_t i = e->n_nodes; i < try.n_nodes; i++) {
        const wm_node_t *p = node(m, try.nodes[i]);
        for (int32_t j = 0; j < p->input_count; j++) {
          seen += p->inputs[j] == x;
        }
      }
      if (seen == m->rw->uses[x]) {
        try.act = forms[f].name;
        try.n_params = 0;
        *e = try;
        return y;
      }
    }
  }
  return -1;
}

// True when value types |a| and |b| have the same shape for every input
// (known equal dims, or the same symbolic dim).
static bool same_shape(const wm_type_t *a, const wm_type_t *b) {
  if (a->shape.rank < 0 || a->shape.rank != b->shape.rank) {
    return false;
  }
  for (int32_t d = 0; d < a->shape.rank; d++) {
    int64_t x = a->shape.dims[d], y = b->shape.dims[d];
    if (x >= 0 || y >= 0) {
      if (x != y) {
        return false;
      }
    } else if (!a->dim_params[d] || !b->dim_params[d] ||
               strcmp(a->dim_params[d], b->dim_params[d]) != 0) {
      return false;
    }
  }
  return true;
}

// True when constant |c| added to an output of |rank| dims broadcasts only
// along dim |axis| (of length |len|, or unknown when < 0) and leaves the
// output's shape as it is.
static bool bias_shape(const wm_tensor_t *c, int32_t rank, int32_t axis,
                       int64_t len) {
  if (c->shape.rank > rank || rank < 1) {
    return false;
  }
  for (int32_t d = 0; d < c->shape.rank; d++) {
    int32_t od = rank - c->shape.rank + d;
    int64_t n = c->shape.dims[d];
    if (n != 1 && (od != axis || n != len)) {
      return false;
    }
  }
  return true;
}

// A bias Add after the anchor's output |y|: records it, returns the Add's
// output or -1.
static int32_t bias_add(const match_t *m, epi_t *e, int32_t y) {
  int32_t n = next(m, y);
  if (!is(m, n, "Add")) {
    return -1;
  }
  int32_t c = rt_other_input(node(m, n), y);
  const wm_tensor_t *t = rt_constant(m->g, c, WM_DTYPE_FLOAT);
  const wm_node_t *a = node(m, e->anchor);
  const wm_type_t *yt = &m->g->values[y].type;
  if (!t) {
    return -1;
  }
  bool ok = false;
  if (strcmp(e->fused, "FusedConv") == 0) {
    const wm_tensor_t *w = rt_constant(m->g, a->inputs[1], WM_DTYPE_FLOAT);
    bool const_bias = a->input_count < 3 || a->inputs[2] < 0 ||
                      rt_constant(m->g, a->inputs[2], WM_DTYPE_FLOAT);
    ok = w && const_bias && bias_shape(t, w->shape.rank, 1, w->shape.dims[0]);
  } else if (strcmp(e->fused, "FusedMatMul") == 0) {
    const wm_type_t *bt = &m->g->values[a->inputs[1]].type;
    int64_t len = bt->shape.rank >= 1 ? bt->shape.dims[bt->shape.rank - 1] : -1;
    int32_t rank = yt->shape.rank >= 1 ? yt->shape.rank : 1;
    ok = len >= 1 && (yt->shape.rank >= 1 || t->shape.rank <= 1) &&
         bias_shape(t, rank, rank - 1, len);
  }
  if (!ok || !add_node(e, n)) {
    return -1;
  }
  e->bias_value = c;
  return node(m, n)->outputs[0];
}

// A residual Add of the Conv's output |y| (FusedConv's Z).
static int32_t residual(const match_t *m, epi_t *e, int32_t y) {
  int32_t n = next(m, y);
  if (!is(m, n, "Add")) {
    return -1;
  }
  int32_t z = rt_other_input(node(m, n), y);
  const wm_value_t *v = m->g->values;
  if (z < 0 || v[z].type.dtype != WM_DTYPE_FLOAT ||
      !same_shape(&v[z].type, &v[y].type) ||
      !same_shape(&v[node(m, n)->outputs[0]].type, &v[y].type) ||
      !add_node(e, n)) {
    return -1;
  }
  e->z = z;
  return node(m, n)->outputs[0];
}

// The chain after anchor |a|, or false when nothing follows it.
static bool chain(const match_t *m, int32_t a, epi_t *e) {
  const wm_node_t *n = node(m, a);
  memset(e, 0, sizeof(*e));
  e->anchor = a;
  e->bias_value = -1;
  e->z = -1;
  e->act = "";
  if (n->output_count != 1 || n->outputs[0] < 0 ||
      m->g->values[n->outputs[0]].type.dtype != WM_DTYPE_FLOAT) {
    return false;
  }
  if (rt_is_onnx_op(n, "Conv") && n->input_count >= 2) {
    e->fused = "FusedConv";
  } else if (rt_is_onnx_op(n, "Gemm") && wm_graph_opset(m->g, "") >= 7) {
    e->fused = "FusedGemm";
  } else if (rt_is_onnx_op(n, "MatMul") && n->input_count == 2) {
    e->fused = "FusedMatMul";
  } else {
    return false;
  }
  int32_t y = n->outputs[0], v;
  if (strcmp(e->fused, "FusedGemm") != 0 && (v = bias_add(m, e, y)) >= 0) {
    y = v;
  }
  if (strcmp(e->fused, "FusedConv") == 0 && (v = residual(m, e, y)) >= 0) {
    y = v;
  }
  if ((v = activation(m, e, y)) >= 0) {
    y = v;
  }
  e->out = y;
  return e->n_nodes > 0;
}

// The fused node's attributes beyond the anchor's.
static size_t act_attrs(const epi_t *e, wm_attr_t *out) {
  size_t n = 0;
  if (e->act[0]) {
    out[n++] = (wm_attr_t){.name = "activation",
                           .type = WM_ATTR_STRING,
                           .s = e->act,
                           .s_len = strlen(e->act)};
  }
  if (e->n_params) {
    out[n++] = (wm_attr_t){.name = "activation_params",
                           .type = WM_ATTR_FLOATS,
                           .floats = (float *)e->params,
                           .count = e->n_params};
  }
  return n;
}

// True when the session's first backend implements the fused node with
// inputs |in| (n_in of them) writing |e|->out.
static wm_status_t implemented(const rt_rw_t *rw, const epi_t *e,
                               const int32_t *in, int32_t n_in, bool *out) {
  *out = true;
  if (!rw->target) {
    return NULL;
  }
  const wm_graph_t *g = rw->src;
  const wm_node_t *a = &g->nodes[e->anchor];
  wm_node_attrs_t attrs;
  WM_RETURN_IF_ERROR(wm_node_attrs_init(&attrs, a));
  wm_op_attr *all = wm_calloc(attrs.n_attr + 2, sizeof(*all));
  if (!all) {
    wm_node_attrs_deinit(&attrs);
    return oom();
  }
  memcpy(all, attrs.attrs, attrs.n_attr * sizeof(*all));
  uint32_t n_attr = attrs.n_attr;
  if (e->act[0]) {
    all[n_attr++] = (wm_op_attr){.struct_size = sizeof(wm_op_attr),
                                 .name = "activation",
                                 .type = 3,
                                 .s = e->act,
                                 .s_len = strlen(e->act)};
  }
  if (e->n_params) {
    all[n_attr++] = (wm_op_attr){.struct_size = sizeof(wm_op_attr),
                                 .name = "activation_params",
                                 .type = 6,
                                 .count = e->n_params,
                                 .floats = e->params};
  }
  wm_status_t s = rt_rw_implements_node(rw, e->fused, a->name, in, n_in, e->out,
                                        all, n_attr, out);
  free(all);
  wm_node_attrs_deinit(&attrs);
  return s;
}

// The bias input of the fused node: the Conv's bias plus the added
// constant (one per output channel), or the MatMul's [N] bias. Sets
// in[2] or names[2].
static wm_status_t bias_input(rt_rw_t *rw, const epi_t *e, int32_t *in,
                              const char **names) {
  const wm_graph_t *g = rw->src;
  const wm_node_t *a = &g->nodes[e->anchor];
  const wm_tensor_t *c = rt_constant(g, e->bias_value, WM_DTYPE_FLOAT);
  bool conv = strcmp(e->fused, "FusedConv") == 0;
  int64_t len;
  const wm_tensor_t *old = NULL;
  if (conv) {
    len = rt_constant(g, a->inputs[1], WM_DTYPE_FLOAT)->shape.dims[0];
    old = a->input_count > 2 ? rt_constant(g, a->inputs[2], WM_DTYPE_FLOAT)
                             : NULL;
  } else {
    const wm_type_t *bt = &g->values[a->inputs[1]].type;
    len = bt->shape.dims[bt->shape.rank - 1];
    if (c->shape.rank == 1 && c->shape.dims[0] == len) {
      in[2] = e->bias_value;  // already [N]
      return NULL;
    }
  }
  wm_shape_t shape = {.rank = 1, .dims = {len}};
  wm_tensor_t *t;
  WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_FLOAT, &shape, &t));
  float *v = t->data;
  const float *cv = c->data;
  for (int64_t i = 0; i < len; i++) {
    v[i] = cv[c->count == 1 ? 0 : i] +
           (old ? ((const float *)old->data)[i] : 0.0f);
  }
  in[2] = -1;
  return rt_rw_new_const(rw, g->values[e->bias_value].name, t, &names[2]);
}

// The fused node's inputs before the bias is merged: the anchor's, then
// Z; returns their number.
static int32_t inputs_of(const wm_graph_t *g, const epi_t *e, int32_t *in) {
  const wm_node_t *a = &g->nodes[e->anchor];
  int32_t n_in = a->input_count < 3 ? a->input_count : 3;
  for (int32_t i = 0; i < 4; i++) {
    in[i] = i < n_in ? a->inputs[i] : -1;
  }
  if (strcmp(e->fused, "FusedMatMul") == 0) {
    n_in = e->bias_value >= 0 ? 3 : 2;
  }
  if (e->z >= 0) {
    in[3] = e->z;
    n_in = 4;
  }
  return n_in;
}

// Writes chain |e| as one node.
static wm_status_t write_fused(rt_rw_t *rw, const epi_t *e) {
  const wm_graph_t *g = rw->src;
  const wm_node_t *a = &g->nodes[e->anchor];
  int32_t in[4];
  const char *names[4] = {NULL, NULL, NULL, NULL};
  int32_t n_in = inputs_of(g, e, in);
  if (e->bias_value >= 0) {
    WM_RETURN_IF_ERROR(bias_input(rw, e, in, names));
    n_in = n_in > 3 ? n_in : 3;
  }
  if (wm_graph_opset(rw->dst, "wmap") < 1) {
    WM_RETURN_IF_ERROR(wm_graph_set_opset(rw->dst, "wmap", 1));
  }
  int32_t from[EPI_MAX_NODES + 1];
  from[0] = e->anchor;
  memcpy(from + 1, e->nodes, e->n_nodes * sizeof(int32_t));
  wm_attr_t extra[2];
  rt_rw_node_t n = {
      .op_type = e->fused,
      .domain = "wmap",
      .name = a->name,
      .in = in,
      .in_names = names,
      .n_in = n_in,
      .out = &e->out,
      .n_out = 1,
      .attrs_of = a,
      .extra = extra,
      .n_extra = act_attrs(e, extra),
      .from = from,
      .n_from = e->n_nodes + 1,
      .fused = true,
  };
  return rt_rw_node(rw, &n);
}

// Readers of every value, each reading node once: |first| (value_count
// + 1 offsets) into |readers|.
static wm_status_t index_readers(const wm_graph_t *g, int32_t **first,
                                 int32_t **readers) {
  size_t nv = g->value_count, slots = 0;
  int32_t *f = wm_calloc(nv + 2, sizeof(int32_t));
  for (size_t n = 0; f && n < g->node_count; n++) {
    slots += (size_t)g->nodes[n].input_count;
  }
  int32_t *r = f ? wm_calloc(slots + 1, sizeof(int32_t)) : NULL;
  if (!f || !r) {
    free(f);
    free(r);
    return oom();
  }
  // Count, prefix-sum, fill (a node reading a value twice counts once).
  for (int pass = 0; pass < 2; pass++) {
    int32_t *fill = pass ? wm_calloc(nv + 1, sizeof(int32_t)) : NULL;
    if (pass && !fill) {
      free(f);
      free(r);
      return oom();
    }
    for (size_t n = 0; n < g->node_count; n++) {
      const wm_node_t *node = &g->nodes[n];
      for (int32_t i = 0; i < node->input_count; i++) {
        int32_t id = node->inputs[i];
        bool dup = false;
        for (int32_t j = 0; j < i && !dup; j++) {
          dup = node->inputs[j] == id;
        }
        if (id < 0 || dup) {
          continue;
        }
        if (pass) {
          r[f[id] + fill[id]++] = (int32_t)n;
        } else {
          f[id + 1]++;
        }
      }
    }
    if (!pass) {
      for (size_t v = 0; v < nv; v++) {
        f[v + 1] += f[v];
      }
    }
    free(fill);
  }
  *first = f;
  *readers = r;
  return NULL;
}

wm_status_t rt_pass_epilogue(rt_rw_t *rw) {
  const wm_graph_t *g = rw->src;
  size_t nn = g->node_count + 1;
  int32_t *first = NULL, *readers = NULL;
  WM_RETURN_IF_ERROR(index_readers(g, &first, &readers));
  bool *claimed = wm_calloc(nn, sizeof(bool));
  int32_t *pos = wm_calloc(nn, sizeof(int32_t));
  int32_t *emit = wm_calloc(nn, sizeof(int32_t));  // chain + 1 at its last
  epi_t *chains = wm_calloc(nn, sizeof(epi_t));
  wm_status_t s = claimed && pos && emit && chains ? NULL : oom();
  match_t m = {
      .rw = rw, .g = g, .first = first, .readers = readers, .claimed = claimed};
  size_t n_chains = 0;
  for (size_t k = 0; !s && k < g->node_count; k++) {
    pos[rw->order[k]] = (int32_t)k;
  }
  for (size_t k = 0; !s && k < g->node_count; k++) {
    int32_t a = rw->order[k];
    epi_t *e = &chains[n_chains];
    if (claimed[a] || !chain(&m, a, e)) {
      continue;
    }
    int32_t in[4];
    bool ok;
    s = implemented(rw, e, in, inputs_of(g, e, in), &ok);
    if (s || !ok) {
      continue;
    }
    int32_t last = a;
    claimed[a] = true;
    for (size_t i = 0; i < e->n_nodes; i++) {
      claimed[e->nodes[i]] = true;
      last = pos[e->nodes[i]] > pos[last] ? e->nodes[i] : last;
    }
    emit[last] = (int32_t)++n_chains;
  }
  // Nodes of a chain are written as one at the chain's last node (every
  // input of the chain is computed by then), the others as they were.
  for (size_t k = 0; !s && k < g->node_count; k++) {
    int32_t n = rw->order[k];
    if (emit[n]) {
      s = write_fused(rw, &chains[emit[n] - 1]);
    } else if (!claimed[n]) {
      s = rt_rw_keep(rw, (size_t)n);
    }
  }
  free(first);
  free(readers);
  free(claimed);
  free(pos);
  free(emit);
  free(chains);
  return s;
}
