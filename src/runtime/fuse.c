// The passes that merge nodes: BatchNormalization folded into the Conv
// before it (new weights and bias, computed once), and Transpose pairs
// merged into one (or removed when they cancel).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static wm_status_t oom(void) {
  return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory fusing nodes");
}

// ------------------------------------------------------------ conv-bn

// The BatchNormalization that Conv |conv| can absorb, or -1.
static int32_t bn_after(const rt_rw_t *rw, const int32_t *consumer,
                        size_t conv) {
  const wm_graph_t *g = rw->src;
  const wm_node_t *c = &g->nodes[conv];
  if (!rt_is_onnx_op(c, "Conv") || c->input_count < 2 || c->output_count != 1) {
    return -1;
  }
  int32_t y = c->outputs[0];
  if (y < 0 || rw->pinned[y] || consumer[y] < 0) {
    return -1;
  }
  const wm_node_t *bn = &g->nodes[consumer[y]];
  if (!rt_is_onnx_op(bn, "BatchNormalization") || bn->input_count != 5 ||
      bn->inputs[0] != y || !rt_rw_only_first_output(rw, bn) ||
      wm_node_attr_int(bn, "training_mode", 0) != 0 ||
      wm_graph_opset(g, "") < 9) {
    return -1;  // before opset 9 the spatial attribute changes the meaning
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
  for (int32_t i = 1; i < 5; i++) {
    const wm_tensor_t *p = rt_constant(g, bn->inputs[i], WM_DTYPE_FLOAT);
    if (!p || p->shape.rank != 1 || p->count != (size_t)m) {
      return -1;
    }
  }
  return consumer[y];
}

// Writes Conv |conv| with |bn| folded into its weights and bias.
static wm_status_t fold_bn(rt_rw_t *rw, size_t conv, size_t bn_index) {
  const wm_graph_t *g = rw->src;
  const wm_node_t *c = &g->nodes[conv], *bn = &g->nodes[bn_index];
  const wm_tensor_t *w = rt_constant(g, c->inputs[1], WM_DTYPE_FLOAT);
  const wm_tensor_t *b = c->input_count > 2 && c->inputs[2] >= 0
                             ? rt_constant(g, c->inputs[2], WM_DTYPE_FLOAT)
                             : NULL;
  const float *gamma = rt_constant(g, bn->inputs[1], WM_DTYPE_FLOAT)->data;
  const float *beta = rt_constant(g, bn->inputs[2], WM_DTYPE_FLOAT)->data;
  const float *mean = rt_constant(g, bn->inputs[3], WM_DTYPE_FLOAT)->data;
  const float *var = rt_constant(g, bn->inputs[4], WM_DTYPE_FLOAT)->data;
  double eps = wm_node_attr_float(bn, "epsilon", 1e-5f);
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
  for (size_t o = 0; o < m; o++) {
    double scale = (double)gamma[o] / sqrt((double)var[o] + eps);
    for (size_t k = 0; k < per; k++) {
      nwv[o * per + k] = (float)((double)wv[o * per + k] * scale);
    }
    double bias = bv ? (double)bv[o] : 0.0;
    nbv[o] = (float)((bias - (double)mean[o]) * scale + (double)beta[o]);
  }
  const char *wname, *bname;
  s = rt_rw_new_const(rw, g->values[c->inputs[1]].name, nw, &wname);
  if (s) {
    wm_tensor_destroy(nb);
    return s;
  }
  WM_RETURN_IF_ERROR(
      rt_rw_new_const(rw, g->values[bn->outputs[0]].name, nb, &bname));
  int32_t in[3] = {c->inputs[0], -1, -1};
  const char *names[3] = {NULL, wname, bname};
  int32_t from[2] = {(int32_t)conv, (int32_t)bn_index};
  rt_rw_node_t n = {
      .op_type = "Conv",
      .domain = "",
      .name = c->name,
      .in = in,
      .in_names = names,
      .n_in = 3,
      .out = bn->outputs,
      .n_out = 1,
      .attrs_of = c,
      .from = from,
      .n_from = 2,
      .fused = true,
  };
  return rt_rw_node(rw, &n);
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
    int32_t bn = bn_after(rw, consumer, index);
    if (bn < 0) {
      s = rt_rw_keep(rw, index);
      continue;
    }
    done[bn] = true;
    s = fold_bn(rw, index, (size_t)bn);
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
