// The passes that merge nodes: a BatchNormalization, or a Mul or Div by a
// per-channel constant, folded into the Conv before it (new weights and
// bias, computed once), and Transpose pairs merged into one (or removed
// when they cancel).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static wm_status_t oom(void) {
  return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory fusing nodes");
}

// ------------------------------------------------------------ conv-bn

// A per-channel scale (and shift) the Conv before it can absorb.
typedef enum affine_kind { AFFINE_BN, AFFINE_MUL, AFFINE_DIV } affine_kind_t;

// True when constant |t| multiplies an output of |rank| dims with |m|
// channels (dim 1) per channel or as a scalar, leaving its shape as is.
static bool per_channel(const wm_tensor_t *t, int32_t rank, int64_t m) {
  if (t->shape.rank > rank) {
    return false;
  }
  for (int32_t d = 0; d < t->shape.rank; d++) {
    int32_t od = rank - t->shape.rank + d;
    int64_t n = t->shape.dims[d];
    if (n != 1 && (od != 1 || n != m)) {
      return false;
    }
  }
  return true;
}

// The channels of Conv |conv| whose weights (and bias) are constants a
// pass may rewrite, or -1.
static int64_t conv_channels(const wm_graph_t *g, const wm_node_t *c) {
  if (!rt_is_onnx_op(c, "Conv") || c->input_count < 2 || c->output_count != 1 ||
      c->outputs[0] < 0) {
    return -1;
  }
  const wm_tensor_t *w = rt_constant(g, c->inputs[1], WM_DTYPE_FLOAT);
  if (!w || w->shape.rank < 3) {
    return -1;
  }
  int64_t m = w->shape.dims[0];
  if (c->input_count > 2 && c->inputs[2] >= 0) {
    const wm_tensor_t *b = rt_constant(g, c->inputs[2], WM_DTYPE_FLOAT);
    if (!b || b->count != (size_t)m) {
      return -1;
    }
  }
  return m;
}

// The node reading the Conv's (|rank| dims, |m| channels) output |y|
// alone that it can absorb: a BatchNormalization, or a Mul or Div by a
// per-channel constant; or -1.
static int32_t affine_after(const rt_rw_t *rw, const int32_t *consumer,
                            int32_t y, int32_t rank, int64_t m,
                            affine_kind_t *kind) {
  const wm_graph_t *g = rw->src;
  if (y < 0 || rw->pinned[y] || consumer[y] < 0) {
    return -1;
  }
  const wm_node_t *n = &g->nodes[consumer[y]];
  if (n->output_count == 1 && n->input_count == 2 &&
      (rt_is_onnx_op(n, "Mul") || rt_is_onnx_op(n, "Div"))) {
    bool div = rt_is_onnx_op(n, "Div");
    if (div && n->inputs[0] != y) {
      return -1;  // k / y
    }
    int32_t k = n->inputs[0] == y ? n->inputs[1] : n->inputs[0];
    const wm_tensor_t *t = rt_constant(g, k, WM_DTYPE_FLOAT);
    if (k == y || !t || !per_channel(t, rank, m)) {
      return -1;
    }
    *kind = div ? AFFINE_DIV : AFFINE_MUL;
    return consumer[y];
  }
  wm_op_params_t bn;
  int64_t training, spatial;
  float eps;
  if (!rt_is_onnx_op(n, "BatchNormalization") || n->input_count != 5 ||
      n->inputs[0] != y || !rt_rw_only_first_output(rw, n) ||
      !rt_rw_params(g, consumer[y], &bn) ||
      !wm_op_param_int_of(&bn, "training_mode", &training) ||
      !wm_op_param_int_of(&bn, "spatial", &spatial) ||
      !wm_op_param_float_of(&bn, "epsilon", &eps) || training != 0 ||
      spatial != 1) {
    return -1;
  }
  for (int32_t i = 1; i < 5; i++) {
    const wm_tensor_t *p = rt_constant(g, n->inputs[i], WM_DTYPE_FLOAT);
    if (!p || p->shape.rank != 1 || p->count != (size_t)m) {
      return -1;
    }
  }
  *kind = AFFINE_BN;
  return consumer[y];
}

// Channel |o|'s scale and shift of affine node |n| of |kind| (|eps|: a
// BatchNormalization's resolved epsilon).
static void affine_of(const wm_graph_t *g, const wm_node_t *n,
                      affine_kind_t kind, double eps, int32_t y, size_t o,
                      double *scale, double *shift) {
  *shift = 0;
  if (kind == AFFINE_BN) {
    const float *gamma = rt_constant(g, n->inputs[1], WM_DTYPE_FLOAT)->data;
    const float *beta = rt_constant(g, n->inputs[2], WM_DTYPE_FLOAT)->data;
    const float *mean = rt_constant(g, n->inputs[3], WM_DTYPE_FLOAT)->data;
    const float *var = rt_constant(g, n->inputs[4], WM_DTYPE_FLOAT)->data;
    *scale = (double)gamma[o] / sqrt((double)var[o] + eps);
    *shift = (double)beta[o] - (double)mean[o] * *scale;
    return;
  }
  int32_t k = n->inputs[0] == y ? n->inputs[1] : n->inputs[0];
  const wm_tensor_t *t = rt_constant(g, k, WM_DTYPE_FLOAT);
  double v = ((const float *)t->data)[t->count == 1 ? 0 : o];
  *scale = kind == AFFINE_DIV ? 1.0 / v : v;
}

enum { AFFINE_MAX = 4 };

// Writes Conv |conv| with the |n| affine nodes |chain| (each reading the
// one before) folded into its weights and bias.
static wm_status_t fold_affine(rt_rw_t *rw, size_t conv, const int32_t *chain,
                               const affine_kind_t *kinds, size_t n) {
  const wm_graph_t *g = rw->src;
  const wm_node_t *c = &g->nodes[conv];
  const wm_node_t *last = &g->nodes[chain[n - 1]];
  const wm_tensor_t *w = rt_constant(g, c->inputs[1], WM_DTYPE_FLOAT);
  const wm_tensor_t *b = c->input_count > 2 && c->inputs[2] >= 0
                             ? rt_constant(g, c->inputs[2], WM_DTYPE_FLOAT)
                             : NULL;
  size_t m = (size_t)w->shape.dims[0], per = w->count / (m ? m : 1);
  wm_shape_t bshape = {.rank = 1, .dims = {(int64_t)m}};
  wm_tensor_t *nw = NULL, *nb = NULL;
  WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_FLOAT, &w->shape, &nw));
  wm_status_t s = wm_tensor_create(WM_DTYPE_FLOAT, &bshape, &nb);
  if (s) {
    wm_tensor_destroy(nw);
    return s;
  }
  const float *wv = w->data, *bv = b ? b->data : NULL;
  float *nwv = nw->data, *nbv = nb->data;
  double eps[AFFINE_MAX];
  for (size_t i = 0; i < n; i++) {
    wm_op_params_t p;  // affine_after saw a BatchNormalization's resolve
    float e = 0;
    if (kinds[i] == AFFINE_BN && rt_rw_params(g, chain[i], &p)) {
      (void)wm_op_param_float_of(&p, "epsilon", &e);
    }
    eps[i] = e;
  }
  for (size_t o = 0; o < m; o++) {
    // y = scale * conv + shift, composed node by node.
    double scale = 1.0, shift = 0.0;
    int32_t y = c->outputs[0];
    for (size_t i = 0; i < n; i++) {
      const wm_node_t *a = &g->nodes[chain[i]];
      double sc, sh;
      affine_of(g, a, kinds[i], eps[i], y, o, &sc, &sh);
      scale *= sc;
      shift = shift * sc + sh;
      y = a->outputs[0];
    }
    for (size_t k = 0; k < per; k++) {
      nwv[o * per + k] = (float)((double)wv[o * per + k] * scale);
    }
    double bias = bv ? (double)bv[o] : 0.0;
    nbv[o] = (float)(bias * scale + shift);
  }
  const char *wname, *bname;
  s = rt_rw_new_const(rw, g->values[c->inputs[1]].name, nw, &wname);
  if (s) {
    wm_tensor_destroy(nb);
    return s;
  }
  WM_RETURN_IF_ERROR(
      rt_rw_new_const(rw, g->values[last->outputs[0]].name, nb, &bname));
  int32_t in[3] = {c->inputs[0], -1, -1};
  const char *names[3] = {NULL, wname, bname};
  int32_t from[AFFINE_MAX + 1];
  from[0] = (int32_t)conv;
  memcpy(from + 1, chain, n * sizeof(int32_t));
  rt_rw_node_t fused = {
      .op_type = "Conv",
      .domain = "",
      .name = c->name,
      .in = in,
      .in_names = names,
      .n_in = 3,
      .out = last->outputs,
      .n_out = 1,
      .attrs_of = c,
      .from = from,
      .n_from = n + 1,
      .fused = true,
  };
  return rt_rw_node(rw, &fused);
}

wm_status_t rt_pass_conv_bn(rt_rw_t *rw) {
  const wm_graph_t *g = rw->src;
  int32_t *consumer;
  WM_RETURN_IF_ERROR(rt_rw_sole_consumers(rw, &consumer));
  bool *done = wm_calloc(g->node_count + 1, sizeof(bool));
  wm_status_t s = done ? NULL : oom();
  for (size_t k = 0; !s && k < g->node_count; k++) {
    size_t index = (size_t)rw->order[k];
    if (done[index]) {
      continue;
    }
    const wm_node_t *c = &g->nodes[index];
    int64_t m = conv_channels(g, c);
    int32_t chain[AFFINE_MAX];
    affine_kind_t kinds[AFFINE_MAX];
    size_t n = 0;
    int32_t y = m >= 0 ? c->outputs[0] : -1;
    int32_t rank =
        m >= 0 ? rt_constant(g, c->inputs[1], WM_DTYPE_FLOAT)->shape.rank : 0;
    while (m >= 0 && n < AFFINE_MAX) {
      int32_t a = affine_after(rw, consumer, y, rank, m, &kinds[n]);
      if (a < 0) {
        break;
      }
      chain[n++] = a;
      y = g->nodes[a].outputs[0];
    }
    if (n == 0) {
      s = rt_rw_keep(rw, index);
      continue;
    }
    for (size_t i = 0; i < n; i++) {
      done[chain[i]] = true;
    }
    s = fold_affine(rw, index, chain, kinds, n);
  }
  free(done);
  free(consumer);
  return s;
}

// ---------------------------------------------------------- transpose

// The permutation of Transpose |node| for an input of |rank| into |perm|;
// false when it is not known.
static bool perm_of(const wm_node_t *node, int32_t rank, int64_t *perm) {
  const int64_t *p = NULL;
  size_t n = 0;
  if (rank < 1 || rank > WM_MAX_RANK) {
    return false;
  }
  if (!wm_node_attr_ints(node, "perm", &p, &n)) {
    for (int32_t i = 0; i < rank; i++) {
      perm[i] = rank - 1 - i;
    }
    return true;
  }
  if (n != (size_t)rank) {
    return false;
  }
  bool seen[WM_MAX_RANK] = {false};
  for (int32_t i = 0; i < rank; i++) {
    if (p[i] < 0 || p[i] >= rank || seen[p[i]]) {
      return false;
    }
    seen[p[i]] = true;
    perm[i] = p[i];
  }
  return true;
}

wm_status_t rt_pass_transpose(rt_rw_t *rw) {
  const wm_graph_t *g = rw->src;
  int32_t *consumer;
  WM_RETURN_IF_ERROR(rt_rw_sole_consumers(rw, &consumer));
  bool *done = wm_calloc(g->node_count + 1, sizeof(bool));
  wm_status_t s = done ? NULL : oom();
  for (size_t k = 0; !s && k < g->node_count; k++) {
    size_t index = (size_t)rw->order[k];
    const wm_node_t *t1 = &g->nodes[index];
    if (done[index]) {
      continue;
    }
    int32_t mid = t1->output_count == 1 ? t1->outputs[0] : -1;
    int32_t x = t1->input_count == 1 ? t1->inputs[0] : -1;
    int32_t second = mid >= 0 && !rw->pinned[mid] ? consumer[mid] : -1;
    const wm_node_t *t2 = second >= 0 ? &g->nodes[second] : NULL;
    int32_t rank = x >= 0 ? g->values[x].type.shape.rank : -1;
    int64_t p[WM_MAX_RANK], q[WM_MAX_RANK], r[WM_MAX_RANK];
    if (!rt_is_onnx_op(t1, "Transpose") || !t2 ||
        !rt_is_onnx_op(t2, "Transpose") || t2->output_count != 1 ||
        !perm_of(t1, rank, p) || !perm_of(t2, rank, q)) {
      s = rt_rw_keep(rw, index);
      continue;
    }
    // y[i] = mid[q[i]] = x[p[q[i]]].
    bool identity = true;
    for (int32_t i = 0; i < rank; i++) {
      r[i] = p[q[i]];
      identity = identity && r[i] == i;
    }
    done[second] = true;
    int32_t y = t2->outputs[0];
    if (identity && !rw->pinned[y]) {
      rt_rw_replace(rw, y, x);
      rt_rw_drop(rw, index);
      rt_rw_drop(rw, (size_t)second);
      continue;
    }
    wm_attr_t perm = {
        .name = "perm", .type = WM_ATTR_INTS, .ints = r, .count = (size_t)rank};
    int32_t from[2] = {(int32_t)index, second};
    rt_rw_node_t n = {
        .op_type = identity ? "Identity" : "Transpose",
        .domain = "",
        .name = t2->name,
        .in = &t1->inputs[0],
        .n_in = 1,
        .out = &t2->outputs[0],
        .n_out = 1,
        .extra = identity ? NULL : &perm,
        .n_extra = identity ? 0 : 1,
        .from = from,
        .n_from = 2,
        .fused = true,
    };
    s = rt_rw_node(rw, &n);
  }
  free(done);
  free(consumer);
  return s;
}
