// Structural verification, topological order and graph equality.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wmap/graph.h"

// Returns true when |name| is defined in an enclosing graph of |graph|.
static bool defined_outside(const wm_graph_t *graph, const char *name) {
  for (const wm_graph_t *g = graph->parent; g; g = g->parent) {
    int32_t id = wm_graph_find_value(g, name);
    if (id >= 0) {
      const wm_value_t *v = &g->values[id];
      if (v->producer >= 0 || v->initializer || v->is_input || v->is_outer) {
        return true;
      }
    }
  }
  return false;
}

static bool value_is_source(const wm_value_t *v) {
  return v->is_input || v->initializer != NULL;
}

// Appends to out[*n] (while *n < cap; counts beyond) the values of
// |graph| that subgraph |sub| (and its subgraphs) reads from outside.
static void outer_deps(const wm_graph_t *graph, const wm_graph_t *sub,
                       int32_t *out, size_t cap, size_t *n) {
  for (size_t v = 0; v < sub->value_count; v++) {
    if (!sub->values[v].is_outer) {
      continue;
    }
    int32_t id = wm_graph_find_value(graph, sub->values[v].name);
    if (id >= 0 && graph->values[id].producer >= 0) {
      if (out && *n < cap) {
        out[*n] = id;
      }
      (*n)++;
    }
  }
  for (size_t i = 0; i < sub->node_count; i++) {
    const wm_node_t *node = &sub->nodes[i];
    for (int32_t a = 0; a < node->attr_count; a++) {
      if (node->attrs[a].g) {
        outer_deps(graph, node->attrs[a].g, out, cap, n);
      }
      for (size_t k = 0; node->attrs[a].graphs && k < node->attrs[a].count;
           k++) {
        outer_deps(graph, node->attrs[a].graphs[k], out, cap, n);
      }
    }
  }
}

// The values produced in |graph| that |node| needs before it runs: its
// inputs and what its subgraphs read from this graph (implicit inputs).
// Writes up to |cap| ids to |out| (NULL: count only); returns the count.
static size_t node_deps(const wm_graph_t *graph, const wm_node_t *node,
                        int32_t *out, size_t cap) {
  size_t n = 0;
  for (int32_t k = 0; k < node->input_count; k++) {
    int32_t v = node->inputs[k];
    if (v >= 0 && graph->values[v].producer >= 0) {
      if (out && n < cap) {
        out[n] = v;
      }
      n++;
    }
  }
  for (int32_t a = 0; a < node->attr_count; a++) {
    if (node->attrs[a].g) {
      outer_deps(graph, node->attrs[a].g, out, cap, &n);
    }
    for (size_t k = 0; node->attrs[a].graphs && k < node->attrs[a].count; k++) {
      outer_deps(graph, node->attrs[a].graphs[k], out, cap, &n);
    }
  }
  return n;
}

wm_status_t wm_graph_topo_order(const wm_graph_t *graph, int32_t **out_order) {
  *out_order = NULL;
  size_t n = graph->node_count, nv = graph->value_count;
  size_t edges = 0;
  for (size_t i = 0; i < n; i++) {
    edges += node_deps(graph, &graph->nodes[i], NULL, 0);
  }
  // Consumers of each value as (value -> node) edges in CSR form: the
  // users of value v are users[first[v] .. first[v + 1]).
  int32_t *order = wm_malloc((n + 1) * sizeof(int32_t));
  int32_t *pending = wm_calloc(n + 1, sizeof(int32_t));
  int32_t *ready = wm_malloc((n + 1) * sizeof(int32_t));
  int32_t *users = wm_malloc((edges + 1) * sizeof(int32_t));
  size_t *first = wm_calloc(nv + 1, sizeof(size_t));
  size_t *fill = wm_calloc(nv + 1, sizeof(size_t));
  wm_status_t s = NULL;
  if (!order || !pending || !ready || !users || !first || !fill) {
    s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory ordering the graph");
    goto done;
  }
  int32_t *deps = wm_malloc((edges + 1) * sizeof(int32_t));
  if (!deps) {
    s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory ordering the graph");
    goto done;
  }
  for (size_t i = 0; i < n; i++) {
    size_t nd = node_deps(graph, &graph->nodes[i], deps, edges);
    for (size_t k = 0; k < nd; k++) {
      first[deps[k] + 1]++;
      pending[i]++;
    }
  }
  for (size_t v = 0; v < nv; v++) {
    first[v + 1] += first[v];
  }
  for (size_t i = 0; i < n; i++) {
    size_t nd = node_deps(graph, &graph->nodes[i], deps, edges);
    for (size_t k = 0; k < nd; k++) {
      users[first[deps[k]] + fill[deps[k]]++] = (int32_t)i;
    }
  }
  free(deps);
  // Kahn's algorithm; a FIFO of ready nodes seeded in file order keeps
  // graphs that are already ordered in their order.
  size_t ready_count = 0, done = 0;
  for (size_t i = 0; i < n; i++) {
    if (pending[i] == 0) {
      ready[ready_count++] = (int32_t)i;
    }
  }
  for (size_t head = 0; head < ready_count; head++) {
    int32_t i = ready[head];
    order[done++] = i;
    const wm_node_t *node = &graph->nodes[i];
    for (int32_t k = 0; k < node->output_count; k++) {
      int32_t v = node->outputs[k];
      for (size_t e = v < 0 ? 0 : first[v]; v >= 0 && e < first[v + 1]; e++) {
        if (--pending[users[e]] == 0) {
          ready[ready_count++] = users[e];
        }
      }
    }
  }
  if (done != n) {
    char buf[32];
    size_t stuck = 0;
    while (stuck < n && pending[stuck] == 0) {
      stuck++;
    }
    s = WM_ERROR(INVALID_ARGUMENT,
                 "graph \"%s\" has a cycle through node \"%s\" (%s)",
                 graph->name, wm_node_label(graph, stuck, buf, sizeof(buf)),
                 graph->nodes[stuck].op_type);
  }
done:
  if (!s) {
    *out_order = order;
    order = NULL;
  }
  free(order);
  free(pending);
  free(ready);
  free(users);
  free(first);
  free(fill);
  return s;
}

wm_status_t wm_graph_verify(const wm_graph_t *graph) {
  char buf[32];
  for (size_t i = 0; i < graph->node_count; i++) {
    const wm_node_t *node = &graph->nodes[i];
    for (int32_t k = 0; k < node->input_count; k++) {
      int32_t id = node->inputs[k];
      if (id < 0) {
        continue;
      }
      const wm_value_t *v = &graph->values[id];
      if (v->producer < 0 && !value_is_source(v) &&
          !defined_outside(graph, v->name)) {
        return WM_ERROR(INVALID_ARGUMENT,
                        "graph \"%s\": node \"%s\" (%s): input %d \"%s\" is "
                        "not defined by any node, input or initializer",
                        graph->name, wm_node_label(graph, i, buf, sizeof(buf)),
                        node->op_type, k, v->name);
      }
    }
    for (int32_t a = 0; a < node->attr_count; a++) {
      const wm_attr_t *attr = &node->attrs[a];
      if (attr->g) {
        wm_status_t s = wm_graph_verify(attr->g);
        if (s) {
          return wm_status_annotate(s, "node \"%s\" (%s): attribute \"%s\"",
                                    wm_node_label(graph, i, buf, sizeof(buf)),
                                    node->op_type, attr->name);
        }
      }
      for (size_t g = 0; attr->graphs && g < attr->count; g++) {
        wm_status_t s = wm_graph_verify(attr->graphs[g]);
        if (s) {
          return wm_status_annotate(s, "node \"%s\" (%s): attribute \"%s\"",
                                    wm_node_label(graph, i, buf, sizeof(buf)),
                                    node->op_type, attr->name);
        }
      }
    }
  }
  for (size_t k = 0; k < graph->output_count; k++) {
    const wm_value_t *v = &graph->values[graph->outputs[k]];
    if (v->producer < 0 && !value_is_source(v) &&
        !defined_outside(graph, v->name)) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "graph \"%s\": output \"%s\" is not produced by any "
                      "node",
                      graph->name, v->name);
    }
  }
  int32_t *order;
  WM_RETURN_IF_ERROR(wm_graph_topo_order(graph, &order));
  free(order);
  return NULL;
}

// ------------------------------------------------------------ equality

#define DIFF(...)                         \
  do {                                    \
    snprintf(why, why_size, __VA_ARGS__); \
    return false;                         \
  } while (0)

static bool str_eq(const char *a, const char *b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

static bool type_equal(const wm_type_t *a, const wm_type_t *b) {
  if (a->kind != b->kind || a->dtype != b->dtype ||
      !wm_shape_equal(&a->shape, &b->shape)) {
    return false;
  }
  for (int32_t i = 0; i < a->shape.rank; i++) {
    if (!str_eq(a->dim_params[i], b->dim_params[i])) {
      return false;
    }
  }
  return true;
}

static bool attr_equal(const wm_attr_t *a, const wm_attr_t *b, char *why,
                       size_t why_size) {
  if (!str_eq(a->name, b->name) || a->type != b->type || a->count != b->count) {
    DIFF("attribute \"%s\": name, kind or length differs", a->name);
  }
  switch (a->type) {
    case WM_ATTR_FLOAT:
      if (memcmp(&a->f, &b->f, sizeof(float)) != 0) {
        DIFF("attribute \"%s\": %g vs %g", a->name, a->f, b->f);
      }
      break;
    case WM_ATTR_INT:
      if (a->i != b->i) {
        DIFF("attribute \"%s\": %lld vs %lld", a->name, (long long)a->i,
             (long long)b->i);
      }
      break;
    case WM_ATTR_STRING:
      if (a->s_len != b->s_len || memcmp(a->s, b->s, a->s_len) != 0) {
        DIFF("attribute \"%s\": strings differ", a->name);
      }
      break;
    case WM_ATTR_TENSOR:
      if (!wm_tensor_equal(a->t, b->t)) {
        DIFF("attribute \"%s\": tensors differ", a->name);
      }
      break;
    case WM_ATTR_GRAPH:
      return wm_graph_equal(a->g, b->g, why, why_size);
    case WM_ATTR_FLOATS:
      if (a->count && memcmp(a->floats, b->floats, a->count * 4) != 0) {
        DIFF("attribute \"%s\": floats differ", a->name);
      }
      break;
    case WM_ATTR_INTS:
      if (a->count && memcmp(a->ints, b->ints, a->count * 8) != 0) {
        DIFF("attribute \"%s\": ints differ", a->name);
      }
      break;
    case WM_ATTR_STRINGS:
      for (size_t i = 0; i < a->count; i++) {
        if (a->string_lens[i] != b->string_lens[i] ||
            memcmp(a->strings[i], b->strings[i], a->string_lens[i]) != 0) {
          DIFF("attribute \"%s\": string %zu differs", a->name, i);
        }
      }
      break;
    case WM_ATTR_TENSORS:
      for (size_t i = 0; i < a->count; i++) {
        if (!wm_tensor_equal(a->tensors[i], b->tensors[i])) {
          DIFF("attribute \"%s\": tensor %zu differs", a->name, i);
        }
      }
      break;
    case WM_ATTR_GRAPHS:
      for (size_t i = 0; i < a->count; i++) {
        if (!wm_graph_equal(a->graphs[i], b->graphs[i], why, why_size)) {
          return false;
        }
      }
      break;
    default:
      break;
  }
  return true;
}

static bool ids_equal(const wm_graph_t *a, const int32_t *ia,
                      const wm_graph_t *b, const int32_t *ib, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if ((ia[i] < 0) != (ib[i] < 0)) {
      return false;
    }
    if (ia[i] >= 0 && !str_eq(a->values[ia[i]].name, b->values[ib[i]].name)) {
      return false;
    }
  }
  return true;
}

bool wm_graph_equal(const wm_graph_t *a, const wm_graph_t *b, char *why,
                    size_t why_size) {
  if (!str_eq(a->name, b->name)) {
    DIFF("graph names \"%s\" vs \"%s\"", a->name, b->name);
  }
  if (a->node_count != b->node_count || a->input_count != b->input_count ||
      a->output_count != b->output_count) {
    DIFF("graph \"%s\": node/input/output counts differ", a->name);
  }
  if (!ids_equal(a, a->inputs, b, b->inputs, a->input_count) ||
      !ids_equal(a, a->outputs, b, b->outputs, a->output_count)) {
    DIFF("graph \"%s\": inputs or outputs differ", a->name);
  }
  if (a->ir_version != b->ir_version || a->model_version != b->model_version ||
      !str_eq(a->producer_name, b->producer_name) ||
      !str_eq(a->producer_version, b->producer_version) ||
      !str_eq(a->model_domain, b->model_domain) ||
      a->opset_count != b->opset_count ||
      a->metadata_count != b->metadata_count) {
    DIFF("graph \"%s\": model fields differ", a->name);
  }
  for (size_t i = 0; i < a->opset_count; i++) {
    if (a->opsets[i].version != wm_graph_opset(b, a->opsets[i].domain)) {
      DIFF("opset of domain \"%s\" differs", a->opsets[i].domain);
    }
  }
  for (size_t i = 0; i < a->metadata_count; i++) {
    if (!str_eq(a->metadata[i].key, b->metadata[i].key) ||
        !str_eq(a->metadata[i].value, b->metadata[i].value)) {
      DIFF("metadata \"%s\" differs", a->metadata[i].key);
    }
  }
  for (size_t i = 0; i < a->value_count; i++) {
    const wm_value_t *va = &a->values[i];
    int32_t j = wm_graph_find_value(b, va->name);
    if (j < 0) {
      if (va->producer < 0 && !va->initializer && !va->is_input) {
        continue;  // an unreferenced name does not survive export
      }
      DIFF("value \"%s\" is missing", va->name);
    }
    const wm_value_t *vb = &b->values[j];
    if ((va->initializer == NULL) != (vb->initializer == NULL) ||
        (va->initializer &&
         !wm_tensor_equal(va->initializer, vb->initializer))) {
      DIFF("initializer \"%s\" differs", va->name);
    }
    if (!type_equal(&va->type, &vb->type)) {
      char ta[128], tb[128];
      DIFF("value \"%s\": type %s vs %s", va->name,
           wm_type_format(&va->type, ta, sizeof(ta)),
           wm_type_format(&vb->type, tb, sizeof(tb)));
    }
  }
  for (size_t n = 0; n < a->node_count; n++) {
    const wm_node_t *na = &a->nodes[n], *nb = &b->nodes[n];
    if (!str_eq(na->name, nb->name) || !str_eq(na->op_type, nb->op_type) ||
        !wm_domain_is_onnx(na->domain) != !wm_domain_is_onnx(nb->domain) ||
        na->input_count != nb->input_count ||
        na->output_count != nb->output_count ||
        na->attr_count != nb->attr_count ||
        !ids_equal(a, na->inputs, b, nb->inputs, (size_t)na->input_count) ||
        !ids_equal(a, na->outputs, b, nb->outputs, (size_t)na->output_count)) {
      DIFF("graph \"%s\": node %zu (%s) differs", a->name, n, na->op_type);
    }
    for (int32_t k = 0; k < na->attr_count; k++) {
      const wm_attr_t *attr_b = wm_node_attr(nb, na->attrs[k].name);
      if (!attr_b) {
        DIFF("node %zu (%s): attribute \"%s\" missing", n, na->op_type,
             na->attrs[k].name);
      }
      if (!attr_equal(&na->attrs[k], attr_b, why, why_size)) {
        return false;
      }
    }
  }
  return true;
}
