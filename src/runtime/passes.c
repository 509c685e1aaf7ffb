// Graph compilation passes: the session runs a copy of the user's graph
// rewritten by the enabled passes, one after the other; each pass reads
// one version and writes the next through the rewriter below, which also
// tracks which of the user's nodes every node stands for, and why the
// others are gone. The passes themselves live in fold.c and fuse.c.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static wm_status_t oom(void) {
  return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory preparing the graph");
}

// The passes in the order they run.
static const rt_pass_t passes[] = {
    {"fold", "computes nodes whose inputs are all constants", rt_pass_fold},
    {"dead", "removes nodes whose outputs nothing reads", rt_pass_dead},
    {"conv-bn",
     "folds a BatchNormalization, or a Mul or Div by a per-channel "
     "constant, into the Conv before it",
     rt_pass_conv_bn},
    {"transpose", "merges Transpose pairs, removing those that cancel",
     rt_pass_transpose},
    {"layernorm",
     "runs LayerNormalization written as ReduceMean, Sub, Pow, Sqrt, Div, "
     "Mul and Add as one node",
     rt_pass_layernorm},
    {"attention",
     "runs scaled dot-product attention written as Reshape, Transpose, "
     "MatMul, Div, Add or a causal Where, Softmax and MatMul as one node",
     rt_pass_attention},
    {"epilogue",
     "fuses the bias, residual and activation after a Conv, Gemm or MatMul "
     "into it",
     rt_pass_epilogue},
    {"eltwise",
     "runs chains of elementwise nodes as one pass over memory "
     "(Elementwise)",
     rt_pass_eltwise},
};
enum { N_PASSES = sizeof(passes) / sizeof(passes[0]) };

size_t wm_pass_count(void) {
  return N_PASSES;
}

const char *wm_pass_name(size_t i) {
  return i < N_PASSES ? passes[i].name : NULL;
}

const char *wm_pass_summary(size_t i) {
  return i < N_PASSES ? passes[i].what : NULL;
}

wm_status_t rt_passes_parse(const char *list, uint32_t *out_mask) {
  *out_mask = 0;
  if (!list) {
    *out_mask = (1u << wm_pass_count()) - 1;
    return NULL;
  }
  const char *p = list;
  while (*p) {
    size_t n = strcspn(p, ",");
    bool found = false;
    for (size_t i = 0; i < wm_pass_count(); i++) {
      const char *name = wm_pass_name(i);
      if (n > 0 && strlen(name) == n && strncmp(name, p, n) == 0) {
        *out_mask |= 1u << i;
        found = true;
      }
    }
    if (!found && n > 0) {
      wm_strbuf_t names;
      wm_strbuf_init(&names);
      for (size_t i = 0; i < wm_pass_count(); i++) {
        wm_strbuf_printf(&names, "%s%s", i ? ", " : "", wm_pass_name(i));
      }
      wm_status_t s =
          WM_ERROR(INVALID_ARGUMENT,
                   "unknown pass \"%.*s\" in \"%s\"; the passes are %s", (int)n,
                   p, list, wm_strbuf_str(&names));
      wm_strbuf_deinit(&names);
      return s;
    }
    p += n;
    p += *p == ',';
  }
  return NULL;
}

wm_status_t wm_passes_check(const char *list) {
  uint32_t mask;
  return rt_passes_parse(list, &mask);
}

bool rt_pass_enabled(uint32_t mask, const char *name) {
  for (size_t i = 0; i < wm_pass_count(); i++) {
    if (strcmp(wm_pass_name(i), name) == 0) {
      return (mask >> i) & 1u;
    }
  }
  return false;
}

// ------------------------------------------------------------- rewriter

static wm_status_t keep_const(rt_prep_t *prep, wm_tensor_t *take);

// Marks every name |g| or its subgraphs read from an enclosing graph.
static void mark_outer_reads(const wm_graph_t *top, const wm_graph_t *g,
                             bool *pinned) {
  for (size_t v = 0; g != top && v < g->value_count; v++) {
    if (g->values[v].is_outer) {
      int32_t id = wm_graph_find_value(top, g->values[v].name);
      if (id >= 0) {
        pinned[id] = true;
      }
    }
  }
  for (size_t n = 0; n < g->node_count; n++) {
    const wm_node_t *node = &g->nodes[n];
    for (int32_t a = 0; a < node->attr_count; a++) {
      const wm_attr_t *attr = &node->attrs[a];
      if (attr->g) {
        mark_outer_reads(top, attr->g, pinned);
      }
      for (size_t k = 0; attr->graphs && k < attr->count; k++) {
        mark_outer_reads(top, attr->graphs[k], pinned);
      }
    }
  }
}

static wm_status_t copy_value(rt_rw_t *rw, int32_t id);

// Starts a pass over |src| (origins |origins|, per node).
static wm_status_t rw_begin(rt_rw_t *rw, rt_prep_t *prep, const char *pass,
                            const wm_backend_t *target, wm_kernels_t kernels,
                            const wm_graph_t *src, rt_origins_t *origins) {
  memset(rw, 0, sizeof(*rw));
  rw->prep = prep;
  rw->pass = pass;
  rw->target = target;
  rw->kernels = kernels;
  rw->src = src;
  rw->src_origins = origins;
  size_t nv = src->value_count + 1;
  rw->subst = wm_calloc(nv, sizeof(int32_t));
  rw->pinned = wm_calloc(nv, sizeof(bool));
  rw->uses = wm_calloc(nv, sizeof(int32_t));
  rw->copied = wm_calloc(nv, sizeof(bool));
  if (!rw->subst || !rw->pinned || !rw->uses || !rw->copied) {
    return oom();
  }
  for (size_t v = 0; v < src->value_count; v++) {
    rw->subst[v] = -1;
    rw->pinned[v] = src->values[v].is_output;
  }
  mark_outer_reads(src, src, rw->pinned);
  for (size_t n = 0; n < src->node_count; n++) {
    const wm_node_t *node = &src->nodes[n];
    for (int32_t i = 0; i < node->input_count; i++) {
      if (node->inputs[i] >= 0) {
        rw->uses[node->inputs[i]]++;
      }
    }
  }
  WM_RETURN_IF_ERROR(wm_graph_topo_order(src, &rw->order));
  WM_RETURN_IF_ERROR(wm_graph_create(src->name, src->parent, &rw->dst));
  wm_graph_t *d = rw->dst;
  d->ir_version = src->ir_version;
  for (size_t i = 0; i < src->opset_count; i++) {
    WM_RETURN_IF_ERROR(
        wm_graph_set_opset(d, src->opsets[i].domain, src->opsets[i].version));
  }
  for (size_t i = 0; i < src->input_count; i++) {
    const wm_value_t *v = &src->values[src->inputs[i]];
    WM_RETURN_IF_ERROR(wm_graph_add_input(d, v->name, &v->type, NULL));
    if (v->initializer) {
      // Its default comes along even when no node reads it: else a run
      // would have to give the input (found by session_run_fuzz).
      WM_RETURN_IF_ERROR(copy_value(rw, src->inputs[i]));
    }
  }
  return NULL;
}

// The value of |src| id |id| after substitutions.
static int32_t resolved(const rt_rw_t *rw, int32_t id) {
  while (id >= 0 && rw->subst[id] >= 0) {
    id = rw->subst[id];
  }
  return id;
}

// Ensures src value |id| exists in the new graph (type, initializer).
static wm_status_t copy_value(rt_rw_t *rw, int32_t id) {
  if (rw->copied[id]) {
    return NULL;
  }
  rw->copied[id] = true;
  const wm_value_t *v = &rw->src->values[id];
  int32_t nid;
  WM_RETURN_IF_ERROR(wm_graph_value(rw->dst, v->name, &nid));
  WM_RETURN_IF_ERROR(wm_graph_set_type(rw->dst, nid, &v->type));
  rw->dst->values[nid].is_outer = v->is_outer;
  if (v->initializer && !rw->dst->values[nid].initializer) {
    // The data stays where it is (the user's graph or the session's
    // constants): every version of the graph borrows it.
    wm_tensor_t *view;
    WM_RETURN_IF_ERROR(wm_tensor_wrap(v->initializer->dtype,
                                      &v->initializer->shape,
                                      v->initializer->data, &view));
    WM_RETURN_IF_ERROR(wm_graph_add_initializer(rw->dst, v->name, view, NULL));
  }
  return NULL;
}

// Appends node |index|'s origins to a new node's (|origins|, |n|).
static wm_status_t merge_origins(const rt_origins_t *from, rt_origins_t *to) {
  size_t cap = to->n;
  WM_RETURN_IF_ERROR(
      wm_grow((void **)&to->ids, &cap, to->n + from->n + 1, sizeof(int32_t)));
  memcpy(to->ids + to->n, from->ids, from->n * sizeof(int32_t));
  to->n += from->n;
  return NULL;
}

// Records that the user nodes of src node |index| were changed by the
// running pass.
static void note_fate(rt_rw_t *rw, size_t index) {
  const rt_origins_t *o = &rw->src_origins[index];
  for (size_t k = 0; k < o->n; k++) {
    rw->prep->pass_of[o->ids[k]] = rw->pass;
  }
}

wm_status_t rt_rw_node(rt_rw_t *rw, const rt_rw_node_t *n) {
  const wm_graph_t *src = rw->src;
  const char *names[2 * RT_RW_MAX_IO];
  WM_ASSERT(n->n_in <= RT_RW_MAX_IO && n->n_out <= RT_RW_MAX_IO);
  for (int32_t i = 0; i < n->n_in; i++) {
    if (n->in_names && n->in_names[i]) {
      names[i] = n->in_names[i];
      continue;
    }
    int32_t id = resolved(rw, n->in[i]);
    names[i] = id >= 0 ? src->values[id].name : "";
    if (id >= 0) {
      WM_RETURN_IF_ERROR(copy_value(rw, id));
    }
  }
  for (int32_t i = 0; i < n->n_out; i++) {
    names[n->n_in + i] = n->out[i] >= 0 ? src->values[n->out[i]].name : "";
    if (n->out[i] >= 0) {
      rw->copied[n->out[i]] = true;
      int32_t nid;
      WM_RETURN_IF_ERROR(
          wm_graph_value(rw->dst, src->values[n->out[i]].name, &nid));
      WM_RETURN_IF_ERROR(
          wm_graph_set_type(rw->dst, nid, &src->values[n->out[i]].type));
    }
  }
  int32_t index;
  WM_RETURN_IF_ERROR(wm_graph_add_node(rw->dst, n->op_type, n->domain, n->name,
                                       names, n->n_in, names + n->n_in,
                                       n->n_out, &index));
  if (n->attrs_of) {
    WM_RETURN_IF_ERROR(wm_graph_copy_attrs(rw->dst, index, n->attrs_of));
  }
  for (size_t a = 0; a < n->n_extra; a++) {
    WM_RETURN_IF_ERROR(wm_graph_add_attr(rw->dst, index, &n->extra[a]));
  }
  // Origins: every src node it stands for.
  size_t need = rw->dst->node_count;
  WM_RETURN_IF_ERROR(wm_grow((void **)&rw->dst_origins, &rw->dst_cap, need,
                             sizeof(rt_origins_t)));
  rt_origins_t *o = &rw->dst_origins[index];
  memset(o, 0, sizeof(*o));
  for (size_t k = 0; k < n->n_from; k++) {
    WM_RETURN_IF_ERROR(merge_origins(&rw->src_origins[n->from[k]], o));
    if (n->fused) {
      note_fate(rw, (size_t)n->from[k]);
    }
  }
  return NULL;
}

wm_status_t rt_rw_keep(rt_rw_t *rw, size_t index) {
  const wm_node_t *node = &rw->src->nodes[index];
  rt_rw_node_t n = {
      .op_type = node->op_type,
      .domain = node->domain,
      .name = node->name,
      .n_in = node->input_count,
      .n_out = node->output_count,
      .attrs_of = node,
      .n_from = 1,
  };
  int32_t from = (int32_t)index;
  n.from = &from;
  if (node->input_count > RT_RW_MAX_IO || node->output_count > RT_RW_MAX_IO) {
    // Wide nodes (Concat of many, Loop with many carried values) are
    // copied through heap arrays.
    int32_t *io = wm_calloc(
        (size_t)(node->input_count + node->output_count) + 1, sizeof(int32_t));
    const char **names = wm_calloc(
        (size_t)(node->input_count + node->output_count) + 1, sizeof(char *));
    wm_status_t s = io && names ? NULL : oom();
    for (int32_t i = 0; !s && i < node->input_count; i++) {
      int32_t id = resolved(rw, node->inputs[i]);
      names[i] = id >= 0 ? rw->src->values[id].name : "";
      if (id >= 0) {
        s = copy_value(rw, id);
      }
    }
    for (int32_t i = 0; !s && i < node->output_count; i++) {
      int32_t id = node->outputs[i];
      names[node->input_count + i] = id >= 0 ? rw->src->values[id].name : "";
      if (id >= 0) {
        rw->copied[id] = true;
        int32_t nid;
        s = wm_graph_value(rw->dst, rw->src->values[id].name, &nid);
        if (!s) {
          s = wm_graph_set_type(rw->dst, nid, &rw->src->values[id].type);
        }
      }
    }
    int32_t at = 0;
    if (!s) {
      s = wm_graph_add_node(rw->dst, node->op_type, node->domain, node->name,
                            names, node->input_count, names + node->input_count,
                            node->output_count, &at);
    }
    if (!s) {
      s = wm_graph_copy_attrs(rw->dst, at, node);
    }
    if (!s) {
      s = wm_grow((void **)&rw->dst_origins, &rw->dst_cap, rw->dst->node_count,
                  sizeof(rt_origins_t));
    }
    if (!s) {
      rt_origins_t *o = &rw->dst_origins[at];
      memset(o, 0, sizeof(*o));
      s = merge_origins(&rw->src_origins[index], o);
    }
    free(io);
    free(names);
    return s;
  }
  n.in = node->inputs;
  n.out = node->outputs;
  return rt_rw_node(rw, &n);
}

void rt_rw_drop(rt_rw_t *rw, size_t index) {
  note_fate(rw, index);
}

void rt_rw_replace(rt_rw_t *rw, int32_t value, int32_t with) {
  rw->subst[value] = with;
}

wm_status_t rt_rw_const(rt_rw_t *rw, int32_t value, wm_tensor_t *take) {
  WM_RETURN_IF_ERROR(keep_const(rw->prep, take));
  rw->copied[value] = true;
  wm_tensor_t *view;
  WM_RETURN_IF_ERROR(
      wm_tensor_wrap(take->dtype, &take->shape, take->data, &view));
  return wm_graph_add_initializer(rw->dst, rw->src->values[value].name, view,
                                  NULL);
}

// Keeps |take| among the session's constants.
// ------------------------------------------- helpers of the passes

wm_status_t rt_rw_sole_consumers(const rt_rw_t *rw, int32_t **out) {
  const wm_graph_t *g = rw->src;
  int32_t *c = wm_calloc(g->value_count + 1, sizeof(int32_t));
  if (!c) {
    return oom();
  }
  for (size_t v = 0; v < g->value_count; v++) {
    c[v] = -1;
  }
  for (size_t n = 0; n < g->node_count; n++) {
    const wm_node_t *node = &g->nodes[n];
    for (int32_t i = 0; i < node->input_count; i++) {
      int32_t id = node->inputs[i];
      if (id >= 0 && rw->uses[id] == 1) {
        c[id] = (int32_t)n;
      }
    }
  }
  *out = c;
  return NULL;
}

bool rt_is_onnx_op(const wm_node_t *node, const char *op) {
  return wm_domain_is_onnx(node->domain) && strcmp(node->op_type, op) == 0;
}

int32_t rt_other_input(const wm_node_t *node, int32_t x) {
  if (node->input_count != 2 || node->output_count != 1) {
    return -2;
  }
  if (node->inputs[0] == x && node->inputs[1] != x) {
    return node->inputs[1];
  }
  if (node->inputs[1] == x && node->inputs[0] != x) {
    return node->inputs[0];
  }
  return -2;
}

const wm_tensor_t *rt_constant(const wm_graph_t *g, int32_t id,
                               wm_dtype_t dtype) {
  if (id < 0) {
    return NULL;
  }
  const wm_value_t *v = &g->values[id];
  return v->initializer && !v->is_input && v->initializer->dtype == dtype
             ? v->initializer
             : NULL;
}

wm_status_t rt_rw_target_implements(const rt_rw_t *rw, const wm_op_desc *op,
                                    bool *out) {
  *out = true;
  if (!rw->target) {
    return NULL;
  }
  wm_op_support sup;
  WM_RETURN_IF_ERROR(wm_backend_op_query(rw->target, op, &sup));
  // Refusals for the shapes known now are not final: plans see the
  // concrete ones.
  *out = sup.level > WM_SUPPORT_NONE ||
         (sup.reason != WM_WHY_OP && sup.reason != WM_WHY_OPSET &&
          sup.reason != WM_WHY_ATTR && sup.reason != WM_WHY_DTYPE);
  // A fused operator with a compute definition runs as a generated kernel
  // where the target compiles what the generator prints.
  const wm_op_def_t *def =
      *out || rw->kernels == WM_KERNELS_LIBRARY
          ? NULL
          : wm_ops_find(op->domain, op->op_type, (int64_t)op->opset);
  *out = *out || (def && def->define && rt_gen_compiles(rw->target));
  return NULL;
}

wm_status_t rt_rw_implements_node(const rt_rw_t *rw, const char *op_type,
                                  const char *name, const int32_t *in,
                                  int32_t n_in, int32_t out_value,
                                  const wm_op_attr *attrs, uint32_t n_attr,
                                  bool *out) {
  const wm_graph_t *g = rw->src;
  wm_tensor_desc descs[RT_RW_MAX_IO + 1];
  const void *values[RT_RW_MAX_IO] = {NULL};
  if (n_in > RT_RW_MAX_IO) {
    *out = false;
    return NULL;
  }
  for (int32_t i = 0; i < n_in; i++) {
    if (in[i] < 0) {  // omitted
      descs[i] = (wm_tensor_desc){.struct_size = sizeof(descs[i])};
      continue;
    }
    const wm_value_t *v = &g->values[in[i]];
    descs[i] = wm_tensor_desc_from_type(v->type.dtype, &v->type.shape);
    values[i] = v->initializer && !v->is_input ? v->initializer->data : NULL;
  }
  const wm_type_t *yt = &g->values[out_value].type;
  descs[n_in] = wm_tensor_desc_from_type(yt->dtype, &yt->shape);
  wm_op_desc op = {.struct_size = sizeof(op),
                   .domain = "wmap",
                   .op_type = op_type,
                   .opset = 1,
                   .name = name,
                   .n_in = (uint32_t)n_in,
                   .n_out = 1,
                   .in = descs,
                   .out = descs + n_in,
                   .in_values = values,
                   .n_attr = n_attr,
                   .attrs = attrs};
  return rt_rw_target_implements(rw, &op, out);
}

bool rt_rw_params(const wm_graph_t *g, int32_t n, wm_op_params_t *out) {
  wm_op_ctx_t ctx;
  wm_status_t s = wm_op_ctx_init(&ctx, g, (size_t)n);
  if (s) {
    wm_status_free(s);
    return false;
  }
  const wm_op_def_t *def;
  s = wm_op_find_def(&ctx, &def);
  if (!s) {
    s = wm_op_resolve(def, &ctx, out);
  }
  bool ok = !s && !out->pending;
  wm_status_free(s);
  wm_op_ctx_deinit(&ctx);
  return ok;
}

const wm_node_t *rt_rw_sole_reader(const rt_rw_t *rw, const int32_t *consumer,
                                   int32_t v, int32_t *out_index) {
  *out_index = v >= 0 && !rw->pinned[v] ? consumer[v] : -1;
  return *out_index >= 0 ? &rw->src->nodes[*out_index] : NULL;
}

bool rt_rw_only_first_output(const rt_rw_t *rw, const wm_node_t *node) {
  for (int32_t i = 1; i < node->output_count; i++) {
    int32_t id = node->outputs[i];
    if (id >= 0 && (rw->uses[id] > 0 || rw->pinned[id])) {
      return false;
    }
  }
  return true;
}

static wm_status_t keep_const(rt_prep_t *prep, wm_tensor_t *take) {
  wm_status_t s = wm_grow((void **)&prep->consts, &prep->consts_cap,
                          prep->n_consts + 1, sizeof(wm_tensor_t *));
  if (s) {
    wm_tensor_destroy(take);
    return s;
  }
  prep->consts[prep->n_consts++] = take;
  return NULL;
}

wm_status_t rt_rw_new_const(rt_rw_t *rw, const char *hint, wm_tensor_t *take,
                            const char **out_name) {
  *out_name = NULL;
  WM_RETURN_IF_ERROR(keep_const(rw->prep, take));
  char name[192];
  for (int k = 0;; k++) {
    snprintf(name, sizeof(name), "%.150s__%s%d", hint, rw->pass, k);
    if (wm_graph_find_value(rw->src, name) < 0 &&
        wm_graph_find_value(rw->dst, name) < 0) {
      break;
    }
  }
  wm_tensor_t *view;
  WM_RETURN_IF_ERROR(
      wm_tensor_wrap(take->dtype, &take->shape, take->data, &view));
  int32_t id;
  WM_RETURN_IF_ERROR(wm_graph_add_initializer(rw->dst, name, view, &id));
  *out_name = rw->dst->values[id].name;
  return NULL;
}

// Ends the pass: the new graph's outputs; the rewriter's tables are freed.
static wm_status_t rw_end(rt_rw_t *rw, wm_graph_t **out_graph,
                          rt_origins_t **out_origins) {
  wm_status_t s = NULL;
  // Constants only subgraphs read are read by no node of this graph.
  for (size_t v = 0; !s && v < rw->src->value_count; v++) {
    if (rw->pinned[v] && rw->src->values[v].initializer) {
      s = copy_value(rw, (int32_t)v);
    }
  }
  for (size_t i = 0; !s && i < rw->src->output_count; i++) {
    int32_t id = rw->src->outputs[i];
    s = copy_value(rw, id);
    if (!s) {
      s = wm_graph_add_output(rw->dst, rw->src->values[id].name, NULL, NULL);
    }
  }
  if (!s) {
    s = wm_grow((void **)&rw->dst_origins, &rw->dst_cap,
                rw->dst->node_count + 1, sizeof(rt_origins_t));
  }
  if (!s) {
    *out_graph = rw->dst;
    *out_origins = rw->dst_origins;
    rw->dst = NULL;
    rw->dst_origins = NULL;
  }
  return s;
}

static void free_origins(rt_origins_t *o, size_t n) {
  for (size_t i = 0; o && i < n; i++) {
    free(o[i].ids);
  }
  free(o);
}

static void rw_deinit(rt_rw_t *rw) {
  if (rw->dst) {
    free_origins(rw->dst_origins, rw->dst->node_count);
  }
  wm_graph_destroy(rw->dst);
  free(rw->subst);
  free(rw->pinned);
  free(rw->uses);
  free(rw->copied);
  free(rw->order);
}

// ------------------------------------------------------------ pipeline

// Copies every node (the session's graph when no pass is enabled).
static wm_status_t copy_all(rt_rw_t *rw) {
  for (size_t k = 0; k < rw->src->node_count; k++) {
    WM_RETURN_IF_ERROR(rt_rw_keep(rw, (size_t)rw->order[k]));
  }
  return NULL;
}

static const rt_pass_t copy_pass = {"copy", "copies the graph", copy_all};

wm_status_t rt_prepare(const wm_graph_t *graph, uint32_t mask,
                       const wm_backend_t *target, wm_kernels_t kernels,
                       rt_prep_t *out) {
  memset(out, 0, sizeof(*out));
  size_t nn = graph->node_count + 1;
  out->user_nodes = graph->node_count;
  out->pass_of = wm_calloc(nn, sizeof(char *));
  out->node_of = wm_calloc(nn, sizeof(int32_t));
  rt_origins_t *origins = wm_calloc(nn, sizeof(rt_origins_t));
  wm_status_t s = out->pass_of && out->node_of && origins ? NULL : oom();
  // Every version borrows the initializers of the one before, the first
  // those of the user's graph; with no pass enabled one copy is made.
  const wm_graph_t *cur = graph;
  if (!(mask & ((1u << N_PASSES) - 1))) {
    mask = 1u << N_PASSES;
  }
  for (size_t i = 0; !s && i < graph->node_count; i++) {
    origins[i].ids = wm_calloc(1, sizeof(int32_t));
    if (!origins[i].ids) {
      s = oom();
      break;
    }
    origins[i].ids[0] = (int32_t)i;
    origins[i].n = 1;
  }
  for (size_t k = 0; !s && k <= N_PASSES; k++) {
    if (!((mask >> k) & 1u)) {
      continue;
    }
    const rt_pass_t *pass = k < N_PASSES ? &passes[k] : &copy_pass;
    rt_rw_t rw;
    s = rw_begin(&rw, out, pass->name, target, kernels, cur, origins);
    if (!s) {
      s = pass->run(&rw);
    }
    wm_graph_t *next = NULL;
    rt_origins_t *next_origins = NULL;
    if (!s) {
      s = rw_end(&rw, &next, &next_origins);
    }
    rw_deinit(&rw);
    if (!s) {
      free_origins(origins, cur->node_count);
      if (cur != graph) {
        wm_graph_destroy((wm_graph_t *)cur);
      }
      cur = next;
      origins = next_origins;
      s = wm_ops_check_graph(next);
    }
    if (s) {
      s = wm_status_annotate(s, "pass \"%s\"", pass->name);
    }
  }
  if (s) {
    free_origins(origins, cur->node_count);
    if (cur != graph) {
      wm_graph_destroy((wm_graph_t *)cur);
    }
    rt_prep_deinit(out);
    return s;
  }
  for (size_t u = 0; u < graph->node_count; u++) {
    out->node_of[u] = -1;
  }
  for (size_t n = 0; n < cur->node_count; n++) {
    for (size_t k = 0; k < origins[n].n; k++) {
      out->node_of[origins[n].ids[k]] = (int32_t)n;
    }
  }
  out->graph = (wm_graph_t *)cur;
  out->origins = origins;
  return NULL;
}

void rt_prep_deinit(rt_prep_t *prep) {
  if (prep->graph) {
    free_origins(prep->origins, prep->graph->node_count);
  }
  wm_graph_destroy(prep->graph);
  for (size_t i = 0; i < prep->n_consts; i++) {
    wm_tensor_destroy(prep->consts[i]);
  }
  free(prep->consts);
  free(prep->pass_of);
  free(prep->node_of);
  memset(prep, 0, sizeof(*prep));
}
