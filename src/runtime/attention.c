// The attention pass: scaled dot-product attention as PyTorch exports it
// for multi-head layers,
//   Qh = Transpose(Reshape(Q, [b, s, H, D]), [0, 2, 1, 3]),
//   Kt = Transpose(Reshape(K, [b, s, H, D]), [0, 2, 3, 1]),
//   Vh = Transpose(Reshape(V, [b, s, H, D]), [0, 2, 1, 3]),
//   P = Softmax(masked(MatMul(Qh, Kt) / c (or * c)), axis -1),
//   Y = Reshape(Transpose(MatMul(P, Vh), [0, 2, 1, 3]), [b, s, H * D]),
// with Q, K and V of shape [B, S, H * D] (Q, K and V may come from one
// Split), where masked(x) is x, x + M for a float padding mask M of
// [B or 1, 1, 1, S] (BERT), or Where(C, x, f) for a bool mask C whose
// leading dims are 1 and a constant f <= -1e4 (GPT-2's causal mask: f adds
// nothing after the softmax, whose terms e^(f - max) underflow to zero),
// becomes one wmap.Attention (ai.onnx's Attention of opset 23 at any
// opset, src/ops/attention.c) on the 3-D Q, K and V with q_num_heads =
// kv_num_heads = H, scale 1 / c (or c) and M or C as its attn_mask: the
// scores never leave the kernel's blocks. Only where the session's first
// backend implements it. (Attention gives a row whose mask is -inf
// throughout zeros, where Softmax gives NaN.)
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static wm_status_t oom(void) {
  return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory matching attention");
}

// The nodes of one match: Reshape and Transpose of Q, K and V, the scores'
// MatMul, the scaling, the mask's Add or Where (or -1), Softmax, the
// context's MatMul, Transpose and Reshape.
enum { AT_NODES = 13, AT_ADD = 8 };

typedef struct at {
  int32_t nodes[AT_NODES];
  int32_t q, k, v, mask;  // inputs (mask -1: none)
  int32_t out;            // the value it writes
  int64_t heads;          // H
  float scale;            // of the scores
} at_t;

// The node writing value |v| (its only output read), or NULL.
static const wm_node_t *producer(const rt_rw_t *rw, const int32_t *writer,
                                 int32_t v, int32_t *out_index) {
  *out_index = v >= 0 ? writer[v] : -1;
  return *out_index >= 0 ? &rw->src->nodes[*out_index] : NULL;
}

// Whether |n| is a Transpose with permutation |perm| (rank 4).
static bool transpose_is(const wm_node_t *n, const int64_t *perm) {
  const int64_t *p = NULL;
  size_t count = 0;
  return rt_is_onnx_op(n, "Transpose") && n->input_count == 1 &&
         n->output_count == 1 && wm_node_attr_ints(n, "perm", &p, &count) &&
         count == 4 && memcmp(p, perm, 4 * sizeof(int64_t)) == 0;
}

// Whether dim |i| of |a| and dim |j| of |b| are the same: known and
// equal, or the same symbol.
static bool dim_same(const wm_type_t *a, int i, const wm_type_t *b, int j) {
  if (a->shape.dims[i] >= 0 || b->shape.dims[j] >= 0) {
    return a->shape.dims[i] == b->shape.dims[j];
  }
  return a->dim_params[i] && b->dim_params[j] &&
         strcmp(a->dim_params[i], b->dim_params[j]) == 0;
}

// The head count of a Reshape of a [B, S, H * D] float value into
// [B, S, H, D] (a constant shape whose first two entries copy the dims:
// 0 where allowzero is unset, one -1, or the dim itself), else 0; *x its
// input.
static int64_t split_heads(const wm_graph_t *g, const wm_node_t *n,
                           int32_t *x) {
  if (!rt_is_onnx_op(n, "Reshape") || n->input_count != 2 ||
      n->output_count != 1 || wm_node_attr_int(n, "allowzero", 0) != 0) {
    return 0;
  }
  const wm_tensor_t *t = rt_constant(g, n->inputs[1], WM_DTYPE_INT64);
  const wm_type_t *in = &g->values[n->inputs[0]].type;
  const wm_type_t *out = &g->values[n->outputs[0]].type;
  if (!t || t->count != 4 || in->dtype != WM_DTYPE_FLOAT ||
      in->shape.rank != 3 || out->shape.rank != 4) {
    return 0;
  }
  const int64_t *d = t->data;
  const int64_t heads = d[2], size = d[3];
  for (int i = 0; i < 2; i++) {
    if (d[i] != 0 && d[i] != -1 && d[i] != in->shape.dims[i]) {
      return 0;
    }
  }
  if (heads <= 0 || size <= 0 || (d[0] == -1 && d[1] == -1) ||
      in->shape.dims[2] != heads * size) {
    return 0;
  }
  *x = n->inputs[0];
  return heads;
}

// Whether Where node |n| masks the scaled scores (its input 1, rank 4) as
// Attention's bool attn_mask does: its condition is bool, of rank 2 to 4
// with leading dims 1, the query dim 1 or the scores', the key dim the
// scores'; its other choice a constant scalar at most -1e4.
static bool masks_as_attention(const wm_graph_t *g, const wm_node_t *n) {
  const wm_type_t *ct = &g->values[n->inputs[0]].type;
  const wm_type_t *st = &g->values[n->inputs[1]].type;
  const wm_tensor_t *f = rt_constant(g, n->inputs[2], WM_DTYPE_FLOAT);
  const int32_t r = ct->shape.rank;
  if (ct->dtype != WM_DTYPE_BOOL || r < 2 || r > 4 || st->shape.rank != 4 ||
      !f || f->count != 1 || !(((const float *)f->data)[0] <= -1e4f)) {
    return false;
  }
  for (int32_t d = 0; d + 2 < r; d++) {
    if (ct->shape.dims[d] != 1) {
      return false;
    }
  }
  return (ct->shape.dims[r - 2] == 1 || dim_same(ct, r - 2, st, 2)) &&
         dim_same(ct, r - 1, st, 3);
}

// Matches the pattern from Softmax node |sm| into |m|.
static bool match(const rt_rw_t *rw, const int32_t *consumer,
                  const int32_t *writer, int32_t sm, at_t *m) {
  static const int64_t heads_perm[4] = {0, 2, 1, 3};
  static const int64_t keys_perm[4] = {0, 2, 3, 1};
  const wm_graph_t *g = rw->src;
  const wm_node_t *soft = &g->nodes[sm];
  const int32_t probs = soft->output_count == 1 ? soft->outputs[0] : -1;
  if (!rt_is_onnx_op(soft, "Softmax") || soft->input_count != 1 || probs < 0 ||
      g->values[probs].type.shape.rank != 4 ||
      g->values[probs].type.dtype != WM_DTYPE_FLOAT) {
    return false;
  }
  // Over the last dim (before opset 13 the axis defaults to 1, over the
  // flattened trailing dims).
  wm_op_params_t p;
  int64_t axis;
  if (!rt_rw_params(g, sm, &p) || !wm_op_param_int_of(&p, "axis", &axis) ||
      axis != 3) {
    return false;
  }
  m->nodes[9] = sm;
  // Forward: P V, its Transpose and Reshape.
  const wm_node_t *pv = rt_rw_sole_reader(rw, consumer, probs, &m->nodes[10]);
  if (!pv || !rt_is_onnx_op(pv, "MatMul") || pv->input_count != 2 ||
      pv->inputs[0] != probs || pv->output_count != 1) {
    return false;
  }
  const wm_node_t *merge =
      rt_rw_sole_reader(rw, consumer, pv->outputs[0], &m->nodes[11]);
  if (!merge || !transpose_is(merge, heads_perm)) {
    return false;
  }
  const wm_node_t *flat =
      rt_rw_sole_reader(rw, consumer, merge->outputs[0], &m->nodes[12]);
  if (!flat || !rt_is_onnx_op(flat, "Reshape") || flat->output_count != 1 ||
      g->values[flat->outputs[0]].type.shape.rank != 3) {
    return false;
  }
  m->out = flat->outputs[0];
  // Backward: the mask's Add, the scaling, the scores' MatMul.
  int32_t at = soft->inputs[0];
  const wm_node_t *n = producer(rw, writer, at, &m->nodes[AT_ADD]);
  m->mask = -1;
  if (n && rt_is_onnx_op(n, "Add") && n->input_count == 2) {
    if (consumer[at] != sm || rw->pinned[at]) {
      return false;
    }
    // The scaled scores are the input a Div or Mul writes.
    for (int i = 0; i < 2; i++) {
      int32_t w = -1;
      const wm_node_t *s = producer(rw, writer, n->inputs[i], &w);
      if (s && (rt_is_onnx_op(s, "Div") || rt_is_onnx_op(s, "Mul")) &&
          n->inputs[1 - i] != n->inputs[i]) {
        m->mask = n->inputs[1 - i];
        at = n->inputs[i];
        break;
      }
    }
    // The mask as a padding mask: [B, 1, 1, S] (or 1 for B) against
    // the scores' [B, H, S, S], so that it broadcasts as Attention's
    // attn_mask whatever the dims turn out to be.
    const wm_type_t *mt = m->mask >= 0 ? &g->values[m->mask].type : NULL;
    const wm_type_t *st = &g->values[at].type;
    if (!mt || mt->dtype != WM_DTYPE_FLOAT || mt->shape.rank != 4 ||
        st->shape.rank != 4 || mt->shape.dims[1] != 1 ||
        mt->shape.dims[2] != 1 ||
        (mt->shape.dims[0] != 1 && !dim_same(mt, 0, st, 0)) ||
        !dim_same(mt, 3, st, 3)) {
      return false;
    }
  } else if (n && rt_is_onnx_op(n, "Where") && n->input_count == 3 &&
             n->output_count == 1) {
    if (consumer[at] != sm || rw->pinned[at] || !masks_as_attention(g, n)) {
      return false;
    }
    m->mask = n->inputs[0];
    at = n->inputs[1];
  } else {
    m->nodes[AT_ADD] = -1;
  }
  const wm_node_t *scale = producer(rw, writer, at, &m->nodes[7]);
  if (!scale || consumer[at] != (m->mask >= 0 ? m->nodes[AT_ADD] : sm) ||
      rw->pinned[at] || scale->input_count != 2 ||
      (!rt_is_onnx_op(scale, "Div") && !rt_is_onnx_op(scale, "Mul"))) {
    return false;
  }
  const bool div = rt_is_onnx_op(scale, "Div");
  const wm_tensor_t *c = rt_constant(g, scale->inputs[1], WM_DTYPE_FLOAT);
  if (!c || c->count != 1 || ((const float *)c->data)[0] == 0.0f) {
    return false;
  }
  const float cv = ((const float *)c->data)[0];
  m->scale = div ? 1.0f / cv : cv;
  const int32_t scores = scale->inputs[0];
  const wm_node_t *qk = producer(rw, writer, scores, &m->nodes[6]);
  if (!qk || !rt_is_onnx_op(qk, "MatMul") || qk->input_count != 2 ||
      consumer[scores] != m->nodes[7] || rw->pinned[scores]) {
    return false;
  }
  // Q, K and V through their Reshape and Transpose, each read only here.
  const int32_t heads_in[3] = {qk->inputs[0], qk->inputs[1], pv->inputs[1]};
  const int32_t readers[3] = {m->nodes[6], m->nodes[6], m->nodes[10]};
  int32_t *x[3] = {&m->q, &m->k, &m->v};
  for (int i = 0; i < 3; i++) {
    const int32_t h = heads_in[i];
    const wm_node_t *t = producer(rw, writer, h, &m->nodes[2 * i + 1]);
    if (!t || consumer[h] != readers[i] || rw->pinned[h] ||
        !transpose_is(t, i == 1 ? keys_perm : heads_perm)) {
      return false;
    }
    const int32_t split = t->inputs[0];
    const wm_node_t *r = producer(rw, writer, split, &m->nodes[2 * i]);
    if (!r || consumer[split] != m->nodes[2 * i + 1] || rw->pinned[split]) {
      return false;
    }
    const int64_t heads = split_heads(g, r, x[i]);
    if (heads == 0 || (i > 0 && heads != m->heads)) {
      return false;
    }
    m->heads = heads;
  }
  // Y is [B, S, H * D] as Q is, and V's heads are as wide.
  const wm_type_t *yt = &g->values[m->out].type, *qt = &g->values[m->q].type;
  const wm_type_t *vt = &g->values[m->v].type;
  return dim_same(yt, 0, qt, 0) && dim_same(yt, 1, qt, 1) &&
         dim_same(yt, 2, qt, 2) && dim_same(vt, 2, qt, 2);
}

// The fused node's attributes.
static void attrs_of(const at_t *m, wm_op_attr out[3], wm_attr_t extra[3]) {
  static const char *const names[3] = {"q_num_heads", "kv_num_heads", "scale"};
  for (int i = 0; i < 3; i++) {
    out[i] = (wm_op_attr){.struct_size = sizeof(wm_op_attr),
                          .name = names[i],
                          .type = i < 2 ? 2 : 1,
                          .i = i < 2 ? m->heads : 0,
                          .f = i < 2 ? 0.0f : m->scale};
    extra[i] = (wm_attr_t){.name = names[i],
                           .type = i < 2 ? WM_ATTR_INT : WM_ATTR_FLOAT,
                           .i = i < 2 ? m->heads : 0,
                           .f = i < 2 ? 0.0f : m->scale};
  }
}

// Whether the session's first backend implements the fused node of |m|.
static wm_status_t implemented(const rt_rw_t *rw, const at_t *m,
                               const wm_op_attr *attrs, bool *out) {
  const int32_t in[4] = {m->q, m->k, m->v, m->mask};
  return rt_rw_implements_node(rw, "Attention",
                               rw->src->nodes[m->nodes[9]].name, in,
                               m->mask >= 0 ? 4 : 3, m->out, attrs, 3, out);
}

wm_status_t rt_pass_attention(rt_rw_t *rw) {
  const wm_graph_t *g = rw->src;
  int32_t *consumer;
  WM_RETURN_IF_ERROR(rt_rw_sole_consumers(rw, &consumer));
  // Per value: the node writing it.
  int32_t *writer = malloc((g->value_count + 1) * sizeof(int32_t));
  bool *skip = wm_calloc(g->node_count + 1, sizeof(bool));
  wm_status_t s = writer && skip ? NULL : oom();
  at_t *found = s ? NULL : wm_calloc(g->node_count + 1, sizeof(at_t));
  s = s ? s : found ? NULL : oom();
  for (size_t v = 0; !s && v < g->value_count; v++) {
    writer[v] = -1;
  }
  for (size_t k = 0; !s && k < g->node_count; k++) {
    const wm_node_t *n = &g->nodes[k];
    for (int32_t o = 0; o < n->output_count; o++) {
      if (n->outputs[o] >= 0) {
        writer[n->outputs[o]] = (int32_t)k;
      }
    }
  }
  // Find every match first: the fused node is written where the first of
  // its nodes (in the order) was, after Q, K and V are all written.
  int32_t *at_node = s ? NULL : malloc((g->node_count + 1) * sizeof(int32_t));
  s = s ? s : at_node ? NULL : oom();
  for (size_t k = 0; !s && k < g->node_count; k++) {
    at_node[k] = -1;
  }
  size_t n_found = 0;
  for (size_t k = 0; !s && k < g->node_count; k++) {
    const int32_t index = rw->order[k];
    at_t m;
    if (skip[index] || !match(rw, consumer, writer, index, &m)) {
      continue;
    }
    wm_op_attr attrs[3];
    wm_attr_t extra[3];
    attrs_of(&m, attrs, extra);
    bool ok;
    s = implemented(rw, &m, attrs, &ok);
    if (s || !ok) {
      continue;
    }
    for (int i = 0; i < AT_NODES; i++) {
      if (m.nodes[i] >= 0) {
        skip[m.nodes[i]] = true;
      }
    }
    // The fused node goes where the context's MatMul was: Q, K, V and the
    // mask are all written by then.
    at_node[m.nodes[10]] = (int32_t)n_found;
    found[n_found++] = m;
  }
  if (!s && n_found > 0 && wm_graph_opset(rw->dst, "wmap") < 1) {
    s = wm_graph_set_opset(rw->dst, "wmap", 1);
  }
  for (size_t k = 0; !s && k < g->node_count; k++) {
    const int32_t index = rw->order[k];
    if (at_node[index] < 0) {
      if (!skip[index]) {  // else the fused node stands for it
        s = rt_rw_keep(rw, (size_t)index);
      }
      continue;
    }
    const at_t *m = &found[at_node[index]];
    wm_op_attr attrs[3];
    wm_attr_t extra[3];
    attrs_of(m, attrs, extra);
    const int32_t in[4] = {m->q, m->k, m->v, m->mask};
    int32_t from[AT_NODES], n_from = 0;
    for (int i = 0; i < AT_NODES; i++) {
      if (m->nodes[i] >= 0) {
        from[n_from++] = m->nodes[i];
      }
    }
    rt_rw_node_t node = {
        .op_type = "Attention",
        .domain = "wmap",
        .name = g->nodes[m->nodes[9]].name,
        .in = in,
        .n_in = m->mask >= 0 ? 4 : 3,
        .out = &m->out,
        .n_out = 1,
        .extra = extra,
        .n_extra = 3,
        .from = from,
        .n_from = (size_t)n_from,
        .fused = true,
    };
    s = rt_rw_node(rw, &node);
  }
  free(at_node);
  free(found);
  free(skip);
  free(writer);
  free(consumer);
  return s;
}
