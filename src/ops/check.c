// Graph-level use of the registry: node contexts, schema checks, shape
// inference with constant propagation, and host execution of one node.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

enum { LABEL_SIZE = 32 };

// Finds the type of value |id| of |graph|, looking through to enclosing
// graphs for outer-scope references.
static const wm_value_t *resolve_value(const wm_graph_t *graph, int32_t id) {
  const wm_value_t *v = &graph->values[id];
  if (v->producer >= 0 || v->initializer || v->is_input) {
    return v;
  }
  for (const wm_graph_t *g = graph->parent; g; g = g->parent) {
    int32_t oid = wm_graph_find_value(g, v->name);
    if (oid >= 0) {
      const wm_value_t *ov = &g->values[oid];
      if (ov->producer >= 0 || ov->initializer || ov->is_input) {
        return ov;
      }
    }
  }
  return v;
}

wm_status_t wm_op_ctx_init(wm_op_ctx_t *ctx, const wm_graph_t *graph,
                           size_t index) {
  return wm_op_ctx_init_with(ctx, graph, index, NULL, NULL);
}

wm_status_t wm_op_ctx_init_with(wm_op_ctx_t *ctx, const wm_graph_t *graph,
                                size_t index, const wm_type_t *types,
                                const wm_tensor_t *const *values) {
  memset(ctx, 0, sizeof(*ctx));
  const wm_node_t *node = &graph->nodes[index];
  size_t n_in = (size_t)node->input_count, n_out = (size_t)node->output_count;
  size_t bytes = LABEL_SIZE + n_in * (sizeof(wm_type_t) + sizeof(void *)) +
                 n_out * (sizeof(wm_type_t) + sizeof(void *));
  char *block = wm_calloc(1, bytes);
  if (!block) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_type_t *in_types = (wm_type_t *)block;
  wm_type_t *out_types = in_types + n_in;
  const wm_tensor_t **in = (const wm_tensor_t **)(out_types + n_out);
  wm_tensor_t **out = (wm_tensor_t **)(in + n_in);
  char *label = (char *)(out + n_out);
  ctx->graph = graph;
  ctx->node = node;
  ctx->label = wm_node_label(graph, index, label, LABEL_SIZE);
  if (ctx->label != label) {
    label[0] = '\0';
  }
  ctx->opset = wm_graph_opset(graph, node->domain);
  ctx->n_in = node->input_count;
  ctx->n_out = node->output_count;
  for (size_t i = 0; i < n_in; i++) {
    in_types[i] = wm_type_unknown();
    int32_t id = node->inputs[i];
    if (id < 0) {
      continue;
    }
    const wm_value_t *v = resolve_value(graph, id);
    in_types[i] = types ? types[id] : v->type;
    in[i] = values ? values[id] : v->initializer;
  }
  for (size_t i = 0; i < n_out; i++) {
    out_types[i] = wm_type_unknown();
  }
  ctx->in_types = in_types;
  ctx->in = in;
  ctx->out_types = out_types;
  ctx->out = out;
  return NULL;
}

void wm_op_ctx_deinit(wm_op_ctx_t *ctx) {
  free((void *)ctx->in_types);
  memset(ctx, 0, sizeof(*ctx));
}

// Checks the node's arity and input dtype against |def|.
static wm_status_t check_schema(const wm_op_def_t *def,
                                const wm_op_ctx_t *ctx) {
  int32_t n_in = ctx->n_in;
  while (n_in > 0 && !wm_op_has_input(ctx, n_in - 1)) {
    n_in--;  // trailing omitted optionals do not count
  }
  if (n_in < def->min_inputs ||
      (def->max_inputs >= 0 && n_in > def->max_inputs)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "has %d inputs, want %d to %d",
                       n_in, def->min_inputs, def->max_inputs);
  }
  for (int32_t i = 0; i < def->min_inputs; i++) {
    if (!wm_op_has_input(ctx, i)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "required input %d is omitted",
                         i);
    }
  }
  if (ctx->n_out < def->min_outputs ||
      (def->max_outputs >= 0 && ctx->n_out > def->max_outputs)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "has %d outputs, want %d to %d",
                       ctx->n_out, def->min_outputs, def->max_outputs);
  }
  for (int32_t i = 0; i < def->min_outputs; i++) {
    if (!wm_op_has_output(ctx, i)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "required output %d is omitted",
                         i);
    }
  }
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (def->types && dt != WM_DTYPE_UNDEFINED &&
      ctx->in_types[0].kind == WM_TYPE_TENSOR && !(def->types & (1u << dt))) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has type %s, which the operator does not "
                       "accept",
                       wm_dtype_name(dt));
  }
  return NULL;
}

wm_status_t wm_op_find_def(const wm_op_ctx_t *ctx,
                           const wm_op_def_t **out_def) {
  *out_def = wm_ops_find(ctx->node->domain, ctx->node->op_type, ctx->opset);
  if (!*out_def) {
    const char *domain = ctx->node->domain;
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "operator %s%s%s at opset %lld is not implemented",
                       *domain ? domain : "", *domain ? "." : "",
                       ctx->node->op_type, (long long)ctx->opset);
  }
  return check_schema(*out_def, ctx);
}

wm_status_t wm_op_alloc_outputs(wm_op_ctx_t *ctx) {
  for (int32_t i = 0; i < ctx->n_out; i++) {
    if (!wm_op_has_output(ctx, i)) {
      continue;
    }
    const wm_type_t *t = &ctx->out_types[i];
    if (t->kind != WM_TYPE_TENSOR || !wm_shape_is_known(&t->shape) ||
        !wm_dtype_is_valid(t->dtype)) {
      char buf[160];
      return WM_OP_ERROR(ctx, INTERNAL,
                         "output %d has type %s after shape inference with "
                         "every input known",
                         i, wm_type_format(t, buf, sizeof(buf)));
    }
    wm_status_t s = wm_tensor_create(t->dtype, &t->shape, &ctx->out[i]);
    if (s) {
      return wm_status_annotate(s, "node \"%s\" (%s): output %d", ctx->label,
                                ctx->node->op_type, i);
    }
  }
  return NULL;
}

wm_status_t wm_op_execute(const wm_op_def_t *def, wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(def->infer(ctx));
  WM_RETURN_IF_ERROR(wm_op_alloc_outputs(ctx));
  return def->run(ctx);
}

// Merges an inferred type into the value's declared type: inferred facts
// win, declared dims fill what inference left unknown.
static wm_status_t merge_type(wm_graph_t *graph, int32_t id,
                              const wm_type_t *inferred,
                              const wm_op_ctx_t *ctx) {
  wm_value_t *v = &graph->values[id];
  wm_type_t t = *inferred;
  const wm_type_t *d = &v->type;
  if (t.dtype == WM_DTYPE_UNDEFINED) {
    t.dtype = d->dtype;
  } else if (d->dtype != WM_DTYPE_UNDEFINED && d->dtype != t.dtype &&
             d->kind == t.kind) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "output \"%s\" is declared %s but computes %s", v->name,
                       wm_dtype_name(d->dtype), wm_dtype_name(t.dtype));
  }
  if (t.shape.rank < 0) {
    t.shape = d->shape;
    memcpy(t.dim_params, d->dim_params, sizeof(t.dim_params));
  } else if (d->shape.rank == t.shape.rank) {
    for (int32_t i = 0; i < t.shape.rank; i++) {
      if (t.shape.dims[i] < 0) {
        t.shape.dims[i] = d->shape.dims[i];
        t.dim_params[i] = d->dim_params[i];
      } else {
        t.dim_params[i] = NULL;
      }
    }
  }
  return wm_graph_set_type(graph, id, &t);
}

static bool small_outputs(const wm_op_ctx_t *ctx, size_t limit) {
  for (int32_t i = 0; i < ctx->n_out; i++) {
    size_t n;
    if (wm_op_has_output(ctx, i) &&
        (!wm_shape_numel(&ctx->out_types[i].shape, &n) || n > limit)) {
      return false;
    }
  }
  return true;
}

static bool work_fits(const wm_op_def_t *def, const wm_op_ctx_t *ctx,
                      size_t limit) {
  wm_op_cost_t cost = {0, 0, 0};
  wm_op_cost(def, ctx, &cost);
  return cost.flops + cost.transcendentals <=
         (double)limit * WM_OP_FOLD_WORK_PER_ELEMENT;
}

static bool all_inputs_known(const wm_op_ctx_t *ctx) {
  for (int32_t i = 0; i < ctx->n_in; i++) {
    if (wm_op_has_input(ctx, i) && !ctx->in[i]) {
      return false;
    }
  }
  return true;
}

// Shape and Size read only their input's type, so they fold as soon as
// that shape is known: `Reshape(x, Shape(y))` then gets static dims.
static bool reads_only_shape(const wm_op_def_t *def) {
  return wm_domain_is_onnx(def->domain) &&
         (strcmp(def->name, "Shape") == 0 || strcmp(def->name, "Size") == 0);
}

// Gives input 0 of a shape-only node a data-less tensor when its type is
// fully known; *out_header receives it (to be destroyed by the caller).
static wm_status_t shape_header(const wm_op_def_t *def, wm_op_ctx_t *ctx,
                                wm_tensor_t **out_header) {
  *out_header = NULL;
  const wm_type_t *t = &ctx->in_types[0];
  if (!reads_only_shape(def) || ctx->n_in < 1 || ctx->in[0] ||
      t->kind != WM_TYPE_TENSOR || !wm_dtype_is_valid(t->dtype) ||
      !wm_shape_is_known(&t->shape)) {
    return NULL;
  }
  WM_RETURN_IF_ERROR(wm_tensor_wrap(t->dtype, &t->shape, NULL, out_header));
  ((const wm_tensor_t **)ctx->in)[0] = *out_header;
  return NULL;
}

static bool has_subgraph(const wm_node_t *node) {
  for (int32_t a = 0; a < node->attr_count; a++) {
    if (node->attrs[a].g || node->attrs[a].graphs) {
      return true;
    }
  }
  return false;
}

wm_status_t wm_op_infer_node(const wm_op_def_t *def, wm_op_ctx_t *ctx,
                             size_t fold_limit, bool *out_folded) {
  *out_folded = false;
  wm_tensor_t *header = NULL;
  wm_status_t s = shape_header(def, ctx, &header);
  if (!s) {
    s = def->infer(ctx);
  }
  if (!s && all_inputs_known(ctx) && small_outputs(ctx, fold_limit) &&
      !has_subgraph(ctx->node) &&
      !wm_op_draws_random(def, ctx->node,
                          ctx->n_in > 2 && ctx->in ? ctx->in[2] : NULL) &&
      !wm_op_runs_in_session(def) && work_fits(def, ctx, fold_limit)) {
    // Fold: run the reference kernel so later shape rules see values.
    wm_status_t fs = wm_op_alloc_outputs(ctx);
    if (!fs) {
      fs = def->run(ctx);
    }
    if (fs) {
      for (int32_t i = 0; i < ctx->n_out; i++) {
        wm_tensor_destroy(ctx->out[i]);
        ctx->out[i] = NULL;
      }
    }
    *out_folded = !fs;
    wm_status_free(fs);  // folding is an optimization; run reports later
  }
  if (header) {
    ((const wm_tensor_t **)ctx->in)[0] = NULL;
  }
  wm_tensor_destroy(header);
  return s;
}

// Checks |graph|; with |node_status| a node's failure is stored there (by
// node index) and the check goes on, else the first failure is returned.
static wm_status_t check_graph(wm_graph_t *graph, wm_status_t *node_status) {
  int32_t *order;
  WM_RETURN_IF_ERROR(wm_graph_topo_order(graph, &order));
  // Constant values found by folding, per value id (borrowed from
  // initializers or owned here).
  wm_tensor_t **known = wm_calloc(graph->value_count + 1, sizeof(void *));
  bool *owned = wm_calloc(graph->value_count + 1, sizeof(bool));
  wm_status_t s = NULL;
  if (!known || !owned) {
    s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory checking the graph");
  }
  for (size_t k = 0; !s && k < graph->node_count; k++) {
    size_t index = (size_t)order[k];
    wm_node_t *node = &graph->nodes[index];
    for (int32_t a = 0; !s && a < node->attr_count; a++) {
      wm_attr_t *attr = &node->attrs[a];
      if (attr->g) {
        s = wm_ops_check_graph(attr->g);
      }
      for (size_t g = 0; !s && attr->graphs && g < attr->count; g++) {
        s = wm_ops_check_graph(attr->graphs[g]);
      }
    }
    if (s && node_status) {
      node_status[index] = s;
      s = NULL;
      continue;
    }
    if (s) {
      break;
    }
    wm_op_ctx_t ctx;
    s = wm_op_ctx_init(&ctx, graph, index);
    if (s) {
      break;
    }
    for (int32_t i = 0; i < ctx.n_in; i++) {
      int32_t id = node->inputs[i];
      if (id >= 0 && known[id]) {
        ((const wm_tensor_t **)ctx.in)[i] = known[id];
      }
    }
    const wm_op_def_t *def;
    bool folded = false;
    s = wm_op_find_def(&ctx, &def);
    if (!s) {
      s = wm_op_infer_node(def, &ctx, WM_OP_FOLD_LIMIT, &folded);
    }
    for (int32_t i = 0; folded && i < ctx.n_out; i++) {
      int32_t id = node->outputs[i];
      if (id >= 0 && ctx.out[i]) {
        known[id] = ctx.out[i];
        owned[id] = true;
      } else {
        wm_tensor_destroy(ctx.out[i]);
      }
      ctx.out[i] = NULL;
    }
    for (int32_t i = 0; !s && i < ctx.n_out; i++) {
      if (node->outputs[i] >= 0) {
        s = merge_type(graph, node->outputs[i], &ctx.out_types[i], &ctx);
      }
    }
    wm_op_ctx_deinit(&ctx);
    if (s && node_status) {
      node_status[index] = s;
      s = NULL;
    }
  }
  for (size_t v = 0; known && owned && v < graph->value_count; v++) {
    if (owned[v]) {
      wm_tensor_destroy(known[v]);
    }
  }
  free(known);
  free(owned);
  free(order);
  return s;
}

wm_status_t wm_ops_check_graph(wm_graph_t *graph) {
  return check_graph(graph, NULL);
}

wm_status_t wm_ops_check_graph_each(wm_graph_t *graph,
                                    wm_status_t *node_status) {
  return check_graph(graph, node_status);
}
