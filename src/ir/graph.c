// Graph construction, lookup and destruction.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wmap/graph.h"

static wm_status_t oom(void) {
  return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory building the graph");
}

wm_status_t wm_graph_create(const char *name, const wm_graph_t *parent,
                            wm_graph_t **out) {
  *out = NULL;
  wm_graph_t *g = wm_calloc(1, sizeof(*g));
  if (!g) {
    return oom();
  }
  wm_arena_init(&g->arena);
  wm_strmap_init(&g->value_ids);
  g->parent = parent;
  g->name = wm_arena_strdup(&g->arena, name ? name : "");
  if (!g->name) {
    wm_graph_destroy(g);
    return oom();
  }
  *out = g;
  return NULL;
}

static void destroy_attr(wm_attr_t *a) {
  wm_tensor_destroy(a->t);
  wm_graph_destroy(a->g);
  for (size_t i = 0; a->tensors && i < a->count; i++) {
    wm_tensor_destroy(a->tensors[i]);
  }
  for (size_t i = 0; a->graphs && i < a->count; i++) {
    wm_graph_destroy(a->graphs[i]);
  }
}

void wm_graph_destroy(wm_graph_t *graph) {
  if (!graph) {
    return;
  }
  for (size_t n = 0; n < graph->node_count; n++) {
    wm_node_t *node = &graph->nodes[n];
    for (int32_t a = 0; a < node->attr_count; a++) {
      destroy_attr(&node->attrs[a]);
    }
  }
  for (size_t v = 0; v < graph->value_count; v++) {
    wm_tensor_destroy(graph->values[v].initializer);
  }
  free(graph->values);
  free(graph->nodes);
  free(graph->inputs);
  free(graph->outputs);
  free(graph->opsets);
  free(graph->metadata);
  wm_strmap_deinit(&graph->value_ids);
  wm_arena_deinit(&graph->arena);
  free(graph);
}

const char *wm_graph_intern(wm_graph_t *graph, const char *s) {
  return wm_arena_strdup(&graph->arena, s);
}

int32_t wm_graph_find_value(const wm_graph_t *graph, const char *name) {
  int64_t id;
  return wm_strmap_get(&graph->value_ids, name, &id) ? (int32_t)id : -1;
}

wm_status_t wm_graph_value(wm_graph_t *graph, const char *name,
                           int32_t *out_id) {
  int32_t id = wm_graph_find_value(graph, name);
  if (id >= 0) {
    *out_id = id;
    return NULL;
  }
  if (graph->value_count >= INT32_MAX) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "too many values in graph \"%s\"",
                    graph->name);
  }
  WM_RETURN_IF_ERROR(wm_grow((void **)&graph->values, &graph->value_cap,
                             graph->value_count + 1, sizeof(wm_value_t)));
  const char *copy = wm_arena_strdup(&graph->arena, name);
  if (!copy) {
    return oom();
  }
  id = (int32_t)graph->value_count;
  WM_RETURN_IF_ERROR(wm_strmap_put(&graph->value_ids, copy, id));
  wm_value_t *v = &graph->values[graph->value_count++];
  memset(v, 0, sizeof(*v));
  v->name = copy;
  v->type = wm_type_unknown();
  v->producer = -1;
  *out_id = id;
  return NULL;
}

// True when |type| fits the tensor |init|: a tensor type whose dtype,
// rank and dims are each unknown or equal to the tensor's.
static bool type_admits(const wm_type_t *type, const wm_tensor_t *init) {
  if (type->kind != WM_TYPE_TENSOR ||
      (type->dtype != WM_DTYPE_UNDEFINED && type->dtype != init->dtype)) {
    return false;
  }
  if (type->shape.rank < 0) {
    return true;
  }
  if (type->shape.rank != init->shape.rank) {
    return false;
  }
  for (int32_t i = 0; i < type->shape.rank; i++) {
    if (type->shape.dims[i] >= 0 &&
        type->shape.dims[i] != init->shape.dims[i]) {
      return false;
    }
  }
  return true;
}

wm_status_t wm_graph_set_type(wm_graph_t *graph, int32_t id,
                              const wm_type_t *type) {
  WM_ASSERT(id >= 0 && (size_t)id < graph->value_count);
  if (type->shape.rank > WM_MAX_RANK) {
    return WM_ERROR(INVALID_ARGUMENT, "value \"%s\": rank %d exceeds %d",
                    graph->values[id].name, type->shape.rank, WM_MAX_RANK);
  }
  const wm_tensor_t *init = graph->values[id].initializer;
  if (init) {
    // The initializer's own type wins (as on import): a declaration may
    // say less about it, never something else, or the checks and kernels
    // would read the data by the wrong type.
    if (!type_admits(type, init)) {
      char want[96], got[96];
      wm_type_t own = wm_type_tensor(init->dtype, &init->shape);
      return WM_ERROR(INVALID_ARGUMENT,
                      "value \"%s\": type %s contradicts its initializer %s",
                      graph->values[id].name,
                      wm_type_format(type, want, sizeof(want)),
                      wm_type_format(&own, got, sizeof(got)));
    }
    return NULL;
  }
  wm_type_t t = *type;
  for (int32_t i = 0; i < WM_MAX_RANK; i++) {
    if (i < t.shape.rank && t.dim_params[i]) {
      t.dim_params[i] = wm_arena_strdup(&graph->arena, t.dim_params[i]);
      if (!t.dim_params[i]) {
        return oom();
      }
    } else {
      t.dim_params[i] = NULL;
    }
  }
  graph->values[id].type = t;
  return NULL;
}

static wm_status_t push_id(int32_t **items, size_t *count, size_t *cap,
                           int32_t id) {
  WM_RETURN_IF_ERROR(wm_grow((void **)items, cap, *count + 1, sizeof(int32_t)));
  (*items)[(*count)++] = id;
  return NULL;
}

wm_status_t wm_graph_add_input(wm_graph_t *graph, const char *name,
                               const wm_type_t *type, int32_t *out_id) {
  int32_t id = -1;
  WM_RETURN_IF_ERROR(wm_graph_value(graph, name, &id));
  if (graph->values[id].is_input) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "graph \"%s\": input \"%s\" is listed "
                    "twice",
                    graph->name, name);
  }
  if (type) {
    WM_RETURN_IF_ERROR(wm_graph_set_type(graph, id, type));
  }
  WM_RETURN_IF_ERROR(
      push_id(&graph->inputs, &graph->input_count, &graph->input_cap, id));
  graph->values[id].is_input = true;
  if (out_id) {
    *out_id = id;
  }
  return NULL;
}

wm_status_t wm_graph_add_output(wm_graph_t *graph, const char *name,
                                const wm_type_t *type, int32_t *out_id) {
  int32_t id = -1;
  WM_RETURN_IF_ERROR(wm_graph_value(graph, name, &id));
  if (type) {
    WM_RETURN_IF_ERROR(wm_graph_set_type(graph, id, type));
  }
  WM_RETURN_IF_ERROR(
      push_id(&graph->outputs, &graph->output_count, &graph->output_cap, id));
  graph->values[id].is_output = true;
  if (out_id) {
    *out_id = id;
  }
  return NULL;
}

wm_status_t wm_graph_add_initializer(wm_graph_t *graph, const char *name,
                                     wm_tensor_t *tensor_take,
                                     int32_t *out_id) {
  int32_t id = -1;
  wm_status_t s = wm_graph_value(graph, name, &id);
  if (!s && graph->values[id].initializer) {
    s = WM_ERROR(INVALID_ARGUMENT,
                 "graph \"%s\": initializer \"%s\" is "
                 "defined twice",
                 graph->name, name);
  }
  if (s) {
    wm_tensor_destroy(tensor_take);
    return s;
  }
  wm_value_t *v = &graph->values[id];
  v->initializer = tensor_take;
  wm_type_t declared = v->type;
  v->type = wm_type_tensor(tensor_take->dtype, &tensor_take->shape);
  for (int32_t i = 0; i < WM_MAX_RANK; i++) {
    v->type.dim_params[i] = NULL;
  }
  (void)declared;
  if (out_id) {
    *out_id = id;
  }
  return NULL;
}

wm_status_t wm_graph_add_node(wm_graph_t *graph, const char *op_type,
                              const char *domain, const char *name,
                              const char *const *inputs, int32_t input_count,
                              const char *const *outputs, int32_t output_count,
                              int32_t *out_node) {
  if (!op_type || !*op_type) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "graph \"%s\": node \"%s\" has no "
                    "op_type",
                    graph->name, name ? name : "");
  }
  if (input_count < 0 || output_count < 0 || graph->node_count >= INT32_MAX) {
    return WM_ERROR(INVALID_ARGUMENT, "graph \"%s\": bad node \"%s\"",
                    graph->name, name ? name : "");
  }
  WM_RETURN_IF_ERROR(wm_grow((void **)&graph->nodes, &graph->node_cap,
                             graph->node_count + 1, sizeof(wm_node_t)));
  wm_node_t node;
  memset(&node, 0, sizeof(node));
  node.op_type = wm_arena_strdup(&graph->arena, op_type);
  node.domain = wm_arena_strdup(&graph->arena, domain ? domain : "");
  node.name = wm_arena_strdup(&graph->arena, name ? name : "");
  node.inputs =
      wm_arena_alloc(&graph->arena, sizeof(int32_t) * (size_t)input_count);
  node.outputs =
      wm_arena_alloc(&graph->arena, sizeof(int32_t) * (size_t)output_count);
  if (!node.op_type || !node.domain || !node.name || !node.inputs ||
      !node.outputs) {
    return oom();
  }
  int32_t index = (int32_t)graph->node_count;
  for (int32_t i = 0; i < input_count; i++) {
    node.inputs[i] = -1;
    if (inputs[i] && *inputs[i]) {
      WM_RETURN_IF_ERROR(wm_graph_value(graph, inputs[i], &node.inputs[i]));
    }
  }
  for (int32_t i = 0; i < output_count; i++) {
    node.outputs[i] = -1;
    if (!outputs[i] || !*outputs[i]) {
      continue;
    }
    int32_t id = -1;
    WM_RETURN_IF_ERROR(wm_graph_value(graph, outputs[i], &id));
    wm_value_t *v = &graph->values[id];
    if (v->producer >= 0 || v->initializer || v->is_input) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "graph \"%s\": node \"%s\" (%s): output \"%s\" is "
                      "already defined",
                      graph->name, node.name, op_type, outputs[i]);
    }
    v->producer = index;
    node.outputs[i] = id;
  }
  node.input_count = input_count;
  node.output_count = output_count;
  graph->nodes[graph->node_count++] = node;
  if (out_node) {
    *out_node = index;
  }
  return NULL;
}

// Returns a slot for one more attribute of |node| (arrays double in the
// arena when the count reaches a power of two).
static wm_status_t attr_slot(wm_graph_t *graph, int32_t node_index,
                             const char *name, wm_attr_t **out) {
  WM_ASSERT(node_index >= 0 && (size_t)node_index < graph->node_count);
  wm_node_t *node = &graph->nodes[node_index];
  // ONNX operators have a few dozen attributes at most; the cap keeps the
  // duplicate check below linear in practice on hostile files.
  if (node->attr_count >= WM_MAX_NODE_ATTRS) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (%s): more than %d attributes", node->name,
                    node->op_type, WM_MAX_NODE_ATTRS);
  }
  if (wm_node_attr(node, name)) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (%s): attribute \"%s\" is given twice",
                    node->name, node->op_type, name);
  }
  int32_t n = node->attr_count;
  if (n == 0 || (n & (n - 1)) == 0) {
    size_t cap = n ? (size_t)n * 2 : 1;
    wm_attr_t *attrs = wm_arena_alloc(&graph->arena, cap * sizeof(wm_attr_t));
    if (!attrs) {
      return oom();
    }
    if (n) {
      memcpy(attrs, node->attrs, (size_t)n * sizeof(wm_attr_t));
    }
    node->attrs = attrs;
  }
  wm_attr_t *a = &node->attrs[n];
  memset(a, 0, sizeof(*a));
  a->name = wm_arena_strdup(&graph->arena, name);
  if (!a->name) {
    return oom();
  }
  node->attr_count = n + 1;
  *out = a;
  return NULL;
}

static void *arena_copy(wm_arena_t *arena, const void *src, size_t bytes) {
  void *p = wm_arena_alloc(arena, bytes);
  if (p && bytes) {
    memcpy(p, src, bytes);
  }
  return p;
}

// Copies the list fields of |src| into |a| (already holding name/type).
static wm_status_t copy_attr_payload(wm_graph_t *graph, wm_attr_t *a,
                                     const wm_attr_t *src) {
  wm_arena_t *ar = &graph->arena;
  size_t n = src->count, bytes;
  a->f = src->f;
  a->i = src->i;
  a->count = n;
  if (src->s) {
    a->s = wm_arena_strndup(ar, src->s, src->s_len);
    a->s_len = src->s_len;
    if (!a->s) {
      return oom();
    }
  }
  if (!wm_checked_mul(n, sizeof(int64_t) + sizeof(wm_type_t), &bytes)) {
    return oom();
  }
  if (src->floats &&
      !(a->floats = arena_copy(ar, src->floats, n * sizeof(float)))) {
    return oom();
  }
  if (src->ints &&
      !(a->ints = arena_copy(ar, src->ints, n * sizeof(int64_t)))) {
    return oom();
  }
  if (src->types &&
      !(a->types = arena_copy(
            ar, src->types,
            (a->type == WM_ATTR_TYPE_PROTO ? 1 : n) * sizeof(wm_type_t)))) {
    return oom();
  }
  if (src->strings) {
    a->strings = wm_arena_alloc(ar, n * sizeof(char *));
    a->string_lens = wm_arena_alloc(ar, n * sizeof(size_t));
    if (!a->strings || !a->string_lens) {
      return oom();
    }
    for (size_t i = 0; i < n; i++) {
      size_t len =
          src->string_lens ? src->string_lens[i] : strlen(src->strings[i]);
      a->string_lens[i] = len;
      if (!(a->strings[i] = wm_arena_strndup(ar, src->strings[i], len))) {
        return oom();
      }
    }
  }
  if (src->ref_attr_name &&
      !(a->ref_attr_name = wm_arena_strdup(ar, src->ref_attr_name))) {
    return oom();
  }
  return NULL;
}

wm_status_t wm_graph_add_attr(wm_graph_t *graph, int32_t node,
                              const wm_attr_t *attr) {
  if (attr->type == WM_ATTR_GRAPH || attr->type == WM_ATTR_GRAPHS) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "attribute \"%s\": add graphs with "
                    "wm_graph_add_attr_graph(s)",
                    attr->name);
  }
  wm_attr_t *a;
  WM_RETURN_IF_ERROR(attr_slot(graph, node, attr->name, &a));
  a->type = attr->type;
  wm_status_t s = copy_attr_payload(graph, a, attr);
  if (!s && attr->t) {
    s = wm_tensor_clone(attr->t, &a->t);
  }
  if (!s && attr->tensors) {
    a->tensors = wm_arena_alloc(&graph->arena, attr->count * sizeof(void *));
    if (!a->tensors) {
      s = oom();
    }
    for (size_t i = 0; !s && i < attr->count; i++) {
      s = wm_tensor_clone(attr->tensors[i], &a->tensors[i]);
    }
  }
  return s;
}

wm_status_t wm_graph_add_attr_tensor(wm_graph_t *graph, int32_t node,
                                     const char *name,
                                     wm_tensor_t *tensor_take) {
  wm_attr_t *a;
  wm_status_t s = attr_slot(graph, node, name, &a);
  if (s) {
    wm_tensor_destroy(tensor_take);
    return s;
  }
  a->type = WM_ATTR_TENSOR;
  a->t = tensor_take;
  return NULL;
}

wm_status_t wm_graph_add_attr_tensors(wm_graph_t *graph, int32_t node,
                                      const char *name,
                                      wm_tensor_t **tensors_take,
                                      size_t count) {
  wm_attr_t *a = NULL;
  wm_status_t s = attr_slot(graph, node, name, &a);
  wm_tensor_t **list = NULL;
  if (!s) {
    list = wm_arena_alloc(&graph->arena, count * sizeof(void *));
    s = list ? NULL : oom();
  }
  if (s) {
    for (size_t i = 0; i < count; i++) {
      wm_tensor_destroy(tensors_take[i]);
    }
    return s;
  }
  memcpy(list, tensors_take, count * sizeof(void *));
  a->type = WM_ATTR_TENSORS;
  a->tensors = list;
  a->count = count;
  return NULL;
}

wm_status_t wm_graph_add_attr_graph(wm_graph_t *graph, int32_t node,
                                    const char *name, wm_graph_t *sub_take) {
  wm_attr_t *a;
  wm_status_t s = attr_slot(graph, node, name, &a);
  if (s) {
    wm_graph_destroy(sub_take);
    return s;
  }
  a->type = WM_ATTR_GRAPH;
  a->g = sub_take;
  return NULL;
}

wm_status_t wm_graph_add_attr_graphs(wm_graph_t *graph, int32_t node,
                                     const char *name, wm_graph_t **subs_take,
                                     size_t count) {
  wm_attr_t *a = NULL;
  wm_status_t s = attr_slot(graph, node, name, &a);
  wm_graph_t **list = NULL;
  if (!s) {
    list = wm_arena_alloc(&graph->arena, count * sizeof(void *));
    s = list ? NULL : oom();
  }
  if (s) {
    for (size_t i = 0; i < count; i++) {
      wm_graph_destroy(subs_take[i]);
    }
    return s;
  }
  memcpy(list, subs_take, count * sizeof(void *));
  a->type = WM_ATTR_GRAPHS;
  a->graphs = list;
  a->count = count;
  return NULL;
}

wm_status_t wm_graph_add_attr_int(wm_graph_t *graph, int32_t node,
                                  const char *name, int64_t v) {
  wm_attr_t a = {.name = name, .type = WM_ATTR_INT, .i = v};
  return wm_graph_add_attr(graph, node, &a);
}

wm_status_t wm_graph_add_attr_float(wm_graph_t *graph, int32_t node,
                                    const char *name, float v) {
  wm_attr_t a = {.name = name, .type = WM_ATTR_FLOAT, .f = v};
  return wm_graph_add_attr(graph, node, &a);
}

wm_status_t wm_graph_add_attr_string(wm_graph_t *graph, int32_t node,
                                     const char *name, const char *v) {
  wm_attr_t a = {
      .name = name, .type = WM_ATTR_STRING, .s = v, .s_len = strlen(v)};
  return wm_graph_add_attr(graph, node, &a);
}

wm_status_t wm_graph_add_attr_ints(wm_graph_t *graph, int32_t node,
                                   const char *name, const int64_t *v,
                                   size_t count) {
  wm_attr_t a = {
      .name = name, .type = WM_ATTR_INTS, .ints = (int64_t *)v, .count = count};
  static int64_t none;
  if (!v) {
    a.ints = &none;
  }
  return wm_graph_add_attr(graph, node, &a);
}

wm_status_t wm_graph_add_attr_floats(wm_graph_t *graph, int32_t node,
                                     const char *name, const float *v,
                                     size_t count) {
  wm_attr_t a = {.name = name,
                 .type = WM_ATTR_FLOATS,
                 .floats = (float *)v,
                 .count = count};
  static float none;
  if (!v) {
    a.floats = &none;
  }
  return wm_graph_add_attr(graph, node, &a);
}

wm_status_t wm_graph_set_opset(wm_graph_t *graph, const char *domain,
                               int64_t version) {
  for (size_t i = 0; i < graph->opset_count; i++) {
    const char *d = graph->opsets[i].domain;
    bool same = wm_domain_is_onnx(d) ? wm_domain_is_onnx(domain)
                                     : (domain && strcmp(d, domain) == 0);
    if (same) {
      graph->opsets[i].version = version;
      return NULL;
    }
  }
  WM_RETURN_IF_ERROR(wm_grow((void **)&graph->opsets, &graph->opset_cap,
                             graph->opset_count + 1, sizeof(wm_opset_t)));
  const char *copy = wm_arena_strdup(&graph->arena, domain ? domain : "");
  if (!copy) {
    return oom();
  }
  graph->opsets[graph->opset_count].domain = copy;
  graph->opsets[graph->opset_count].version = version;
  graph->opset_count++;
  return NULL;
}

int64_t wm_graph_opset(const wm_graph_t *graph, const char *domain) {
  for (const wm_graph_t *g = graph; g; g = g->parent) {
    for (size_t i = 0; i < g->opset_count; i++) {
      const char *d = g->opsets[i].domain;
      bool same = wm_domain_is_onnx(d) ? wm_domain_is_onnx(domain)
                                       : (domain && strcmp(d, domain) == 0);
      if (same) {
        return g->opsets[i].version;
      }
    }
  }
  return 0;
}

wm_status_t wm_graph_add_metadata(wm_graph_t *graph, const char *key,
                                  const char *value) {
  WM_RETURN_IF_ERROR(wm_grow((void **)&graph->metadata, &graph->metadata_cap,
                             graph->metadata_count + 1, sizeof(wm_kv_t)));
  wm_kv_t kv = {wm_arena_strdup(&graph->arena, key),
                wm_arena_strdup(&graph->arena, value)};
  if (!kv.key || !kv.value) {
    return oom();
  }
  graph->metadata[graph->metadata_count++] = kv;
  return NULL;
}

const char *wm_node_label(const wm_graph_t *graph, size_t index, char *buf,
                          size_t size) {
  const wm_node_t *node = &graph->nodes[index];
  if (node->name && *node->name) {
    return node->name;
  }
  snprintf(buf, size, "#%zu", index);
  return buf;
}

const char *wm_attr_type_name(wm_attr_type_t type) {
  static const char *const names[] = {
      "undefined",      "float",      "int",        "string",
      "tensor",         "graph",      "floats",     "ints",
      "strings",        "tensors",    "graphs",     "sparse_tensor",
      "sparse_tensors", "type_proto", "type_protos"};
  return (unsigned)type < sizeof(names) / sizeof(names[0]) ? names[type]
                                                           : "unknown";
}

bool wm_domain_is_onnx(const char *domain) {
  return !domain || !*domain || strcmp(domain, "ai.onnx") == 0;
}

const wm_attr_t *wm_node_attr(const wm_node_t *node, const char *name) {
  for (int32_t i = 0; i < node->attr_count; i++) {
    if (strcmp(node->attrs[i].name, name) == 0) {
      return &node->attrs[i];
    }
  }
  return NULL;
}

int64_t wm_node_attr_int(const wm_node_t *node, const char *name, int64_t def) {
  const wm_attr_t *a = wm_node_attr(node, name);
  return a && a->type == WM_ATTR_INT ? a->i : def;
}

float wm_node_attr_float(const wm_node_t *node, const char *name, float def) {
  const wm_attr_t *a = wm_node_attr(node, name);
  if (a && a->type == WM_ATTR_FLOAT) {
    return a->f;
  }
  return a && a->type == WM_ATTR_INT ? (float)a->i : def;
}

const char *wm_node_attr_string(const wm_node_t *node, const char *name,
                                const char *def) {
  const wm_attr_t *a = wm_node_attr(node, name);
  return a && a->type == WM_ATTR_STRING ? a->s : def;
}

bool wm_node_attr_ints(const wm_node_t *node, const char *name,
                       const int64_t **out_values, size_t *out_count) {
  const wm_attr_t *a = wm_node_attr(node, name);
  if (!a || a->type != WM_ATTR_INTS) {
    *out_values = NULL;
    *out_count = 0;
    return false;
  }
  *out_values = a->ints;
  *out_count = a->count;
  return true;
}

bool wm_node_attr_floats(const wm_node_t *node, const char *name,
                         const float **out_values, size_t *out_count) {
  const wm_attr_t *a = wm_node_attr(node, name);
  if (!a || a->type != WM_ATTR_FLOATS) {
    *out_values = NULL;
    *out_count = 0;
    return false;
  }
  *out_values = a->floats;
  *out_count = a->count;
  return true;
}

const wm_tensor_t *wm_graph_const_value(const wm_graph_t *graph, int32_t id) {
  const wm_value_t *v = &graph->values[id];
  if (v->initializer) {
    return v->initializer;
  }
  if (v->producer < 0) {
    return NULL;
  }
  const wm_node_t *n = &graph->nodes[v->producer];
  if (strcmp(n->op_type, "Constant") != 0 || !wm_domain_is_onnx(n->domain)) {
    return NULL;
  }
  const wm_attr_t *a = wm_node_attr(n, "value");
  return a && a->type == WM_ATTR_TENSOR ? a->t : NULL;
}

wm_status_t wm_graph_param_mask(const wm_graph_t *graph, bool **out_mask) {
  bool *mask = wm_calloc(graph->value_count + 1, sizeof(bool));
  if (!mask) {
    *out_mask = NULL;
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < graph->value_count; i++) {
    const wm_tensor_t *t = wm_graph_const_value(graph, (int32_t)i);
    mask[i] = t && wm_dtype_is_float(t->dtype) && t->shape.rank >= 1;
  }
  for (size_t i = 0; i < graph->node_count; i++) {
    const wm_node_t *n = &graph->nodes[i];
    if (strcmp(n->op_type, "BatchNormalization") == 0 &&
        wm_domain_is_onnx(n->domain)) {
      for (int32_t k = 3; k < 5 && k < n->input_count; k++) {
        if (n->inputs[k] >= 0) {
          mask[n->inputs[k]] = false;
        }
      }
    }
  }
  *out_mask = mask;
  return NULL;
}

uint64_t wm_graph_param_count(const wm_graph_t *graph) {
  bool *mask;
  wm_status_t s = wm_graph_param_mask(graph, &mask);
  if (s) {
    wm_status_free(s);
    return 0;
  }
  uint64_t count = 0;
  for (size_t i = 0; i < graph->value_count; i++) {
    if (mask[i]) {
      count += wm_graph_const_value(graph, (int32_t)i)->count;
    }
  }
  free(mask);
  return count;
}

wm_status_t wm_graph_bind_dim(wm_graph_t *graph, const char *name,
                              int64_t value) {
  if (value < 1) {
    return WM_ERROR(INVALID_ARGUMENT, "--dim %s=%lld: the value must be >= 1",
                    name, (long long)value);
  }
  size_t hits = 0;
  for (size_t v = 0; v < graph->value_count; v++) {
    wm_type_t t = graph->values[v].type;
    bool changed = false;
    for (int32_t i = 0; i < t.shape.rank; i++) {
      if (t.dim_params[i] && strcmp(t.dim_params[i], name) == 0) {
        t.shape.dims[i] = value;
        t.dim_params[i] = NULL;
        changed = true;
      }
    }
    if (changed) {
      hits++;
      WM_RETURN_IF_ERROR(wm_graph_set_type(graph, (int32_t)v, &t));
    }
  }
  if (hits > 0) {
    return NULL;
  }
  wm_strbuf_t names;
  wm_strbuf_init(&names);
  size_t listed = 0;
  for (size_t v = 0; v < graph->value_count; v++) {
    const wm_type_t *t = &graph->values[v].type;
    for (int32_t i = 0; i < t->shape.rank; i++) {
      const char *p = t->dim_params[i];
      if (p && !strstr(wm_strbuf_str(&names), p) && listed < 8) {
        wm_strbuf_printf(&names, "%s%s", listed++ ? ", " : "", p);
      }
    }
  }
  wm_status_t s = WM_ERROR(
      INVALID_ARGUMENT, "--dim %s: the model has no dim named \"%s\" (%s%s)",
      name, name, listed ? "its symbolic dims: " : "it has none",
      wm_strbuf_str(&names));
  wm_strbuf_deinit(&names);
  return s;
}

wm_status_t wm_graph_copy_attrs(wm_graph_t *graph, int32_t node,
                                const wm_node_t *src) {
  for (int32_t a = 0; a < src->attr_count; a++) {
    const wm_attr_t *attr = &src->attrs[a];
    if (attr->type == WM_ATTR_GRAPH) {
      wm_graph_t *sub = NULL;
      WM_RETURN_IF_ERROR(wm_graph_clone(attr->g, graph, &sub));
      WM_RETURN_IF_ERROR(wm_graph_add_attr_graph(graph, node, attr->name, sub));
    } else if (attr->type == WM_ATTR_GRAPHS) {
      wm_graph_t **subs = wm_calloc(attr->count + 1, sizeof(*subs));
      if (!subs) {
        return oom();
      }
      wm_status_t s = NULL;
      for (size_t k = 0; !s && k < attr->count; k++) {
        s = wm_graph_clone(attr->graphs[k], graph, &subs[k]);
      }
      if (s) {
        for (size_t k = 0; k < attr->count; k++) {
          wm_graph_destroy(subs[k]);
        }
        free(subs);
        return s;
      }
      s = wm_graph_add_attr_graphs(graph, node, attr->name, subs, attr->count);
      free(subs);
      WM_RETURN_IF_ERROR(s);
    } else {
      WM_RETURN_IF_ERROR(wm_graph_add_attr(graph, node, attr));
    }
  }
  return NULL;
}

static wm_status_t clone_into(const wm_graph_t *src, wm_graph_t *g) {
  g->doc = wm_graph_intern(g, src->doc);
  g->ir_version = src->ir_version;
  g->model_version = src->model_version;
  g->producer_name = wm_graph_intern(g, src->producer_name);
  g->producer_version = wm_graph_intern(g, src->producer_version);
  g->model_domain = wm_graph_intern(g, src->model_domain);
  for (size_t i = 0; i < src->opset_count; i++) {
    WM_RETURN_IF_ERROR(
        wm_graph_set_opset(g, src->opsets[i].domain, src->opsets[i].version));
  }
  for (size_t i = 0; i < src->metadata_count; i++) {
    WM_RETURN_IF_ERROR(
        wm_graph_add_metadata(g, src->metadata[i].key, src->metadata[i].value));
  }
  for (size_t v = 0; v < src->value_count; v++) {
    int32_t id;
    WM_RETURN_IF_ERROR(wm_graph_value(g, src->values[v].name, &id));
    WM_RETURN_IF_ERROR(wm_graph_set_type(g, id, &src->values[v].type));
    g->values[id].is_outer = src->values[v].is_outer;
    if (src->values[v].initializer) {
      wm_tensor_t *t;
      WM_RETURN_IF_ERROR(wm_tensor_clone(src->values[v].initializer, &t));
      g->values[id].initializer = t;
    }
  }
  for (size_t i = 0; i < src->input_count; i++) {
    WM_RETURN_IF_ERROR(
        wm_graph_add_input(g, src->values[src->inputs[i]].name, NULL, NULL));
  }
  for (size_t n = 0; n < src->node_count; n++) {
    const wm_node_t *node = &src->nodes[n];
    const char **names = wm_calloc(
        (size_t)(node->input_count + node->output_count) + 1, sizeof(char *));
    if (!names) {
      return oom();
    }
    for (int32_t i = 0; i < node->input_count + node->output_count; i++) {
      int32_t id = i < node->input_count ? node->inputs[i]
                                         : node->outputs[i - node->input_count];
      names[i] = id >= 0 ? src->values[id].name : "";
    }
    int32_t index;
    wm_status_t s = wm_graph_add_node(
        g, node->op_type, node->domain, node->name, names, node->input_count,
        names + node->input_count, node->output_count, &index);
    free(names);
    WM_RETURN_IF_ERROR(s);
    g->nodes[index].doc = wm_graph_intern(g, node->doc);
    WM_RETURN_IF_ERROR(wm_graph_copy_attrs(g, index, node));
  }
  for (size_t i = 0; i < src->output_count; i++) {
    WM_RETURN_IF_ERROR(
        wm_graph_add_output(g, src->values[src->outputs[i]].name, NULL, NULL));
  }
  return NULL;
}

wm_status_t wm_graph_clone(const wm_graph_t *src, const wm_graph_t *parent,
                           wm_graph_t **out) {
  *out = NULL;
  wm_graph_t *g;
  WM_RETURN_IF_ERROR(wm_graph_create(src->name, parent, &g));
  wm_status_t s = clone_into(src, g);
  if (s) {
    wm_graph_destroy(g);
    return s;
  }
  *out = g;
  return NULL;
}
