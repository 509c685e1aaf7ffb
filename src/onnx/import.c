// ModelProto -> wm_graph_t: graphs, subgraphs, attributes, types, opsets
// and model fields. Everything read here is untrusted.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx_internal.h"
#include "wmap/onnx.h"

// Context of one import.
typedef struct importer {
  const char *base_dir;  // folder for external data, or NULL
} importer_t;

static wm_status_t oom(void) {
  return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory importing the model");
}

// Copies |s| into the graph's arena; *out stays NULL for NULL.
static wm_status_t intern(wm_graph_t *g, const char *s, const char **out) {
  *out = NULL;
  if (!s) {
    return NULL;
  }
  *out = wm_graph_intern(g, s);
  return *out ? NULL : oom();
}

// --------------------------------------------------------------- types

static wm_status_t import_tensor_type(wm_graph_t *g, int32_t elem_type,
                                      bool has_elem_type,
                                      const Onnx__TensorShapeProto *shape,
                                      wm_type_t *out) {
  if (has_elem_type && elem_type != 0 && !wm_dtype_is_valid(elem_type)) {
    return WM_ERROR(INVALID_ARGUMENT, "unknown elem_type %d", (int)elem_type);
  }
  out->dtype = has_elem_type ? (wm_dtype_t)elem_type : WM_DTYPE_UNDEFINED;
  if (!shape) {
    return NULL;  // rank unknown
  }
  if (shape->n_dim > WM_MAX_RANK) {
    return WM_ERROR(INVALID_ARGUMENT, "rank %zu exceeds the maximum %d",
                    shape->n_dim, WM_MAX_RANK);
  }
  out->shape.rank = (int32_t)shape->n_dim;
  for (size_t i = 0; i < shape->n_dim; i++) {
    const Onnx__TensorShapeProto__Dimension *d = shape->dim[i];
    out->shape.dims[i] = -1;
    // -1 is unknown, as exporters (paddle2onnx) write it and onnxruntime
    // takes it; any other negative value is refused.
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
        d->dim_value < -1) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "dim %zu has dim_value %lld; a dim is at least 0 (or "
                      "-1 or a dim_param: unknown)",
                      i, (long long)d->dim_value);
    }
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
        d->dim_value >= 0) {
      out->shape.dims[i] = d->dim_value;
    } else if (d->value_case ==
                   ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
               d->dim_param && *d->dim_param) {
      WM_RETURN_IF_ERROR(intern(g, d->dim_param, &out->dim_params[i]));
    }
  }
  return NULL;
}

// Converts a TypeProto; sequences, optionals and maps keep their kind, the
// kind they wrap and the element type and shape of the innermost tensor.
static wm_status_t import_type(wm_graph_t *g, const Onnx__TypeProto *tp,
                               wm_type_t *out) {
  *out = wm_type_unknown();
  if (!tp) {
    return NULL;
  }
  const Onnx__TypeProto *inner = NULL;
  switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
      return import_tensor_type(g, tp->tensor_type->elem_type,
                                tp->tensor_type->has_elem_type,
                                tp->tensor_type->shape, out);
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
      out->kind = WM_TYPE_SPARSE_TENSOR;
      return import_tensor_type(g, tp->sparse_tensor_type->elem_type,
                                tp->sparse_tensor_type->has_elem_type,
                                tp->sparse_tensor_type->shape, out);
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
      inner = tp->sequence_type->elem_type;
      break;
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
      inner = tp->optional_type->elem_type;
      break;
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
      inner = tp->map_type->value_type;
      break;
    default:
      return NULL;  // no type given
  }
  wm_type_t elem;
  WM_RETURN_IF_ERROR(import_type(g, inner, &elem));
  *out = elem;
  out->elem_kind = elem.kind;
  out->kind = tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE
                  ? WM_TYPE_SEQUENCE
              : tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE
                  ? WM_TYPE_OPTIONAL
                  : WM_TYPE_MAP;
  return NULL;
}

// ---------------------------------------------------------- attributes

static wm_status_t import_graph(importer_t *im, const Onnx__GraphProto *gp,
                                const wm_graph_t *parent,
                                wm_graph_t **out_graph);

// Infers the kind of an attribute written before IR version 2.
static wm_attr_type_t guess_attr_type(const Onnx__AttributeProto *a) {
  if (a->has_f) {
    return WM_ATTR_FLOAT;
  }
  if (a->has_i) {
    return WM_ATTR_INT;
  }
  if (a->has_s) {
    return WM_ATTR_STRING;
  }
  if (a->t) {
    return WM_ATTR_TENSOR;
  }
  if (a->g) {
    return WM_ATTR_GRAPH;
  }
  if (a->sparse_tensor) {
    return WM_ATTR_SPARSE_TENSOR;
  }
  if (a->tp) {
    return WM_ATTR_TYPE_PROTO;
  }
  if (a->n_floats) {
    return WM_ATTR_FLOATS;
  }
  if (a->n_ints) {
    return WM_ATTR_INTS;
  }
  if (a->n_strings) {
    return WM_ATTR_STRINGS;
  }
  if (a->n_tensors) {
    return WM_ATTR_TENSORS;
  }
  if (a->n_graphs) {
    return WM_ATTR_GRAPHS;
  }
  if (a->n_sparse_tensors) {
    return WM_ATTR_SPARSE_TENSORS;
  }
  if (a->n_type_protos) {
    return WM_ATTR_TYPE_PROTOS;
  }
  return WM_ATTR_UNDEFINED;
}

static wm_status_t import_tensors_attr(importer_t *im, wm_graph_t *g,
                                       int32_t node, const char *name,
                                       const Onnx__AttributeProto *a) {
  wm_tensor_t **list = wm_calloc(a->n_tensors, sizeof(*list));
  if (!list) {
    return oom();
  }
  wm_status_t s = NULL;
  for (size_t i = 0; !s && i < a->n_tensors; i++) {
    s = wm_onnx_tensor_from_proto(a->tensors[i], im->base_dir, &list[i]);
    if (s) {
      s = wm_status_annotate(s, "tensor %zu", i);
    }
  }
  if (s) {
    for (size_t i = 0; i < a->n_tensors; i++) {
      wm_tensor_destroy(list[i]);
    }
  } else {
    s = wm_graph_add_attr_tensors(g, node, name, list, a->n_tensors);
  }
  free(list);
  return s;
}

static wm_status_t import_graphs_attr(importer_t *im, wm_graph_t *g,
                                      int32_t node, const char *name,
                                      const Onnx__AttributeProto *a) {
  wm_graph_t **list = wm_calloc(a->n_graphs, sizeof(*list));
  if (!list) {
    return oom();
  }
  wm_status_t s = NULL;
  for (size_t i = 0; !s && i < a->n_graphs; i++) {
    s = import_graph(im, a->graphs[i], g, &list[i]);
    if (s) {
      s = wm_status_annotate(s, "graph %zu", i);
    }
  }
  if (s) {
    for (size_t i = 0; i < a->n_graphs; i++) {
      wm_graph_destroy(list[i]);
    }
  } else {
    s = wm_graph_add_attr_graphs(g, node, name, list, a->n_graphs);
  }
  free(list);
  return s;
}

static wm_status_t import_strings_attr(wm_graph_t *g, int32_t node,
                                       const char *name,
                                       const Onnx__AttributeProto *a) {
  size_t n = a->n_strings;
  const char **strs = wm_calloc(n, sizeof(*strs));
  size_t *lens = wm_calloc(n, sizeof(*lens));
  wm_status_t s = NULL;
  if (!strs || !lens) {
    s = oom();
  }
  for (size_t i = 0; !s && i < n; i++) {
    strs[i] = a->strings[i].data ? (const char *)a->strings[i].data : "";
    lens[i] = a->strings[i].data ? a->strings[i].len : 0;
  }
  if (!s) {
    wm_attr_t at = {.name = name,
                    .type = WM_ATTR_STRINGS,
                    .count = n,
                    .strings = strs,
                    .string_lens = lens};
    s = wm_graph_add_attr(g, node, &at);
  }
  free(strs);
  free(lens);
  return s;
}

static wm_status_t import_types_attr(wm_graph_t *g, int32_t node,
                                     const char *name,
                                     const Onnx__AttributeProto *a,
                                     bool single) {
  size_t n = single ? 1 : a->n_type_protos;
  wm_type_t *types = wm_calloc(n, sizeof(*types));
  if (!types) {
    return oom();
  }
  wm_status_t s = NULL;
  for (size_t i = 0; !s && i < n; i++) {
    s = import_type(g, single ? a->tp : a->type_protos[i], &types[i]);
  }
  if (!s) {
    wm_attr_t at = {.name = name,
                    .type = single ? WM_ATTR_TYPE_PROTO : WM_ATTR_TYPE_PROTOS,
                    .count = n,
                    .types = n ? types : NULL};
    s = wm_graph_add_attr(g, node, &at);
  }
  free(types);
  return s;
}

// Attribute types every operator of the default domain that has the
// attribute gives it (onnx/defs); a model giving another type is refused
// at import (Conv's strides as a float would otherwise be skipped as
// absent by the kernels' typed lookups).
static const struct {
  const char *name;     // attribute name
  wm_attr_type_t type;  // its type in every ai.onnx schema
} kAttrTypes[] = {
    {"strides", WM_ATTR_INTS},
    {"pads", WM_ATTR_INTS},
    {"dilations", WM_ATTR_INTS},
    {"kernel_shape", WM_ATTR_INTS},
    {"output_padding", WM_ATTR_INTS},
    {"output_shape", WM_ATTR_INTS},
    {"perm", WM_ATTR_INTS},
    {"axes", WM_ATTR_INTS},
    {"axis", WM_ATTR_INT},
    {"group", WM_ATTR_INT},
    {"keepdims", WM_ATTR_INT},
    {"transA", WM_ATTR_INT},
    {"transB", WM_ATTR_INT},
    {"ceil_mode", WM_ATTR_INT},
    {"count_include_pad", WM_ATTR_INT},
    {"storage_order", WM_ATTR_INT},
    {"epsilon", WM_ATTR_FLOAT},
    {"alpha", WM_ATTR_FLOAT},
    {"beta", WM_ATTR_FLOAT},
    {"momentum", WM_ATTR_FLOAT},
    {"spatial_scale", WM_ATTR_FLOAT},
    {"auto_pad", WM_ATTR_STRING},
    {"mode", WM_ATTR_STRING},
    {"body", WM_ATTR_GRAPH},
    {"then_branch", WM_ATTR_GRAPH},
    {"else_branch", WM_ATTR_GRAPH},
};

// Formats the value of attribute |a| of type |type| for a message.
static const char *attr_value_text(const Onnx__AttributeProto *a,
                                   wm_attr_type_t type, char *buf,
                                   size_t size) {
  char sb[64];
  switch (type) {
    case WM_ATTR_FLOAT:
      snprintf(buf, size, "%g", (double)a->f);
      break;
    case WM_ATTR_INT:
      snprintf(buf, size, "%lld", (long long)a->i);
      break;
    case WM_ATTR_STRING: {
      char raw[48];
      size_t n = a->s.len < sizeof(raw) - 1 ? a->s.len : sizeof(raw) - 1;
      memcpy(raw, a->s.data ? (const char *)a->s.data : "", a->s.data ? n : 0);
      raw[a->s.data ? n : 0] = '\0';
      snprintf(buf, size, "\"%s\"", wm_onnx_safe(raw, sb, sizeof(sb)));
      break;
    }
    case WM_ATTR_FLOATS:
      if (a->n_floats) {
        snprintf(buf, size, "%zu values, the first %g", a->n_floats,
                 (double)a->floats[0]);
      } else {
        snprintf(buf, size, "no values");
      }
      break;
    case WM_ATTR_INTS:
      snprintf(buf, size, "%zu values", a->n_ints);
      break;
    default:
      snprintf(buf, size, "not shown");
  }
  return buf;
}

// Refuses attribute |a| (|type|) of a default-domain node when its
// schema gives it another type; an int where a float is wanted is taken
// (the kernels read it as that float).
static wm_status_t check_attr_type(const wm_node_t *node, const char *nb,
                                   const Onnx__AttributeProto *a,
                                   wm_attr_type_t type) {
  if (!wm_domain_is_onnx(node->domain)) {
    return NULL;
  }
  for (size_t k = 0; k < sizeof(kAttrTypes) / sizeof(kAttrTypes[0]); k++) {
    wm_attr_type_t want = kAttrTypes[k].type;
    if (strcmp(kAttrTypes[k].name, a->name) != 0 || type == want ||
        (want == WM_ATTR_FLOAT && type == WM_ATTR_INT)) {
      continue;
    }
    char vb[96];
    return WM_ERROR(
        INVALID_ARGUMENT, "attribute \"%s\" is %s (%s); the operator wants %s",
        nb, wm_attr_type_name(type), attr_value_text(a, type, vb, sizeof(vb)),
        wm_attr_type_name(want));
  }
  return NULL;
}

// Imports attribute |a| of node |node|; errors name the attribute.
static wm_status_t import_attr(importer_t *im, wm_graph_t *g, int32_t node,
                               const Onnx__AttributeProto *a, size_t index) {
  char nb[96];
  if (!a->name || !*a->name) {
    return WM_ERROR(INVALID_ARGUMENT, "attribute %zu has no name", index);
  }
  const char *name = a->name;
  wm_onnx_safe(name, nb, sizeof(nb));
  if (a->ref_attr_name && *a->ref_attr_name) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "attribute \"%s\" refers to a function attribute "
                    "(ref_attr_name) outside a function",
                    nb);
  }
  wm_attr_type_t type =
      a->has_type ? (wm_attr_type_t)a->type : guess_attr_type(a);
  bool missing = false;
  switch (type) {
    case WM_ATTR_TENSOR:
      missing = !a->t;
      break;
    case WM_ATTR_GRAPH:
      missing = !a->g;
      break;
    case WM_ATTR_TYPE_PROTO:
      missing = !a->tp;
      break;
    case WM_ATTR_SPARSE_TENSOR:
      missing = !a->sparse_tensor;
      break;
    default:
      break;  // scalars default to zero; lists may be empty
  }
  if (missing) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "attribute \"%s\" has type %s but no value", nb,
                    wm_attr_type_name(type));
  }
  WM_RETURN_IF_ERROR(check_attr_type(&g->nodes[node], nb, a, type));
  wm_status_t s = NULL;
  switch (type) {
    case WM_ATTR_FLOAT:
      s = wm_graph_add_attr_float(g, node, name, a->f);
      break;
    case WM_ATTR_INT:
      s = wm_graph_add_attr_int(g, node, name, a->i);
      break;
    case WM_ATTR_STRING: {
      wm_attr_t at = {.name = name,
                      .type = WM_ATTR_STRING,
                      .s = a->s.data ? (const char *)a->s.data : "",
                      .s_len = a->s.data ? a->s.len : 0};
      s = wm_graph_add_attr(g, node, &at);
      break;
    }
    case WM_ATTR_TENSOR: {
      wm_tensor_t *t;
      s = wm_onnx_tensor_from_proto(a->t, im->base_dir, &t);
      if (!s) {
        s = wm_graph_add_attr_tensor(g, node, name, t);
      }
      break;
    }
    case WM_ATTR_GRAPH: {
      wm_graph_t *sub;
      s = import_graph(im, a->g, g, &sub);
      if (!s) {
        s = wm_graph_add_attr_graph(g, node, name, sub);
      }
      break;
    }
    case WM_ATTR_FLOATS:
      s = wm_graph_add_attr_floats(g, node, name, a->floats, a->n_floats);
      break;
    case WM_ATTR_INTS:
      s = wm_graph_add_attr_ints(g, node, name, a->ints, a->n_ints);
      break;
    case WM_ATTR_STRINGS:
      s = import_strings_attr(g, node, name, a);
      break;
    case WM_ATTR_TENSORS:
      s = import_tensors_attr(im, g, node, name, a);
      break;
    case WM_ATTR_GRAPHS:
      s = import_graphs_attr(im, g, node, name, a);
      break;
    case WM_ATTR_TYPE_PROTO:
    case WM_ATTR_TYPE_PROTOS:
      s = import_types_attr(g, node, name, a, type == WM_ATTR_TYPE_PROTO);
      break;
    case WM_ATTR_SPARSE_TENSOR:
    case WM_ATTR_SPARSE_TENSORS:
      return WM_ERROR(UNIMPLEMENTED,
                      "attribute \"%s\": sparse tensors (%s) are not "
                      "supported",
                      nb, wm_attr_type_name(type));
    case WM_ATTR_UNDEFINED:
      return WM_ERROR(INVALID_ARGUMENT,
                      "attribute \"%s\" has no type and no value", nb);
    default:
      return WM_ERROR(INVALID_ARGUMENT, "attribute \"%s\" has unknown type %d",
                      nb, (int)type);
  }
  if (s) {
    s = wm_status_annotate(s, "attribute \"%s\"", nb);
  }
  return s;
}

// --------------------------------------------------------------- nodes

static wm_status_t import_node(importer_t *im, wm_graph_t *g,
                               const Onnx__NodeProto *n, size_t index) {
  char nb[96];
  const char *label = n->name && *n->name ? n->name : NULL;
  if (!label) {
    snprintf(nb, sizeof(nb), "#%zu", index);
  } else {
    wm_onnx_safe(label, nb, sizeof(nb));
  }
  if (!n->op_type || !*n->op_type) {
    return WM_ERROR(INVALID_ARGUMENT, "node \"%s\" has an empty op_type", nb);
  }
  char ob[64];
  wm_onnx_safe(n->op_type, ob, sizeof(ob));
  if (n->n_input > INT32_MAX || n->n_output > INT32_MAX) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (%s) has too many inputs "
                    "or outputs",
                    nb, ob);
  }
  int32_t id;
  wm_status_t s = wm_graph_add_node(
      g, n->op_type, n->domain ? n->domain : "", n->name ? n->name : "",
      (const char *const *)n->input, (int32_t)n->n_input,
      (const char *const *)n->output, (int32_t)n->n_output, &id);
  if (s) {
    return s;  // the IR names the graph and the node
  }
  if (n->doc_string) {
    s = intern(g, n->doc_string, &g->nodes[id].doc);
  }
  for (size_t i = 0; !s && i < n->n_attribute; i++) {
    s = import_attr(im, g, id, n->attribute[i], i);
  }
  if (s) {
    s = wm_status_annotate(s, "node \"%s\" (%s)", nb, ob);
  }
  return s;
}

// -------------------------------------------------------------- graphs

// Checks that a ValueInfoProto has a name; the error names |what|.
static wm_status_t value_info_name(const Onnx__ValueInfoProto *vi,
                                   const char *what, size_t index) {
  if (!vi->name || !*vi->name) {
    return WM_ERROR(INVALID_ARGUMENT, "%s %zu has no name", what, index);
  }
  return NULL;
}

static wm_status_t import_value_type(wm_graph_t *g,
                                     const Onnx__ValueInfoProto *vi,
                                     const char *what, wm_type_t *out) {
  wm_status_t s = import_type(g, vi->type, out);
  if (s) {
    char nb[96];
    s = wm_status_annotate(s, "%s \"%s\"", what,
                           wm_onnx_safe(vi->name, nb, sizeof(nb)));
  }
  return s;
}

static wm_status_t fill_graph(importer_t *im, wm_graph_t *g,
                              const Onnx__GraphProto *gp) {
  WM_RETURN_IF_ERROR(intern(g, gp->doc_string, &g->doc));
  if (gp->n_sparse_initializer) {
    char nb[96];
    const Onnx__SparseTensorProto *sp = gp->sparse_initializer[0];
    const char *name = sp->values && sp->values->name ? sp->values->name : "";
    return WM_ERROR(UNIMPLEMENTED,
                    "sparse initializer \"%s\": sparse tensors are not "
                    "supported",
                    wm_onnx_safe(name, nb, sizeof(nb)));
  }
  // Types first, then initializers (whose own type wins), then nodes so
  // that a node redefining an initializer is caught.
  for (size_t i = 0; i < gp->n_input; i++) {
    const Onnx__ValueInfoProto *vi = gp->input[i];
    WM_RETURN_IF_ERROR(value_info_name(vi, "input", i));
    wm_type_t t;
    WM_RETURN_IF_ERROR(import_value_type(g, vi, "input", &t));
    WM_RETURN_IF_ERROR(
        wm_graph_add_input(g, vi->name, vi->type ? &t : NULL, NULL));
  }
  for (size_t i = 0; i < gp->n_value_info; i++) {
    const Onnx__ValueInfoProto *vi = gp->value_info[i];
    WM_RETURN_IF_ERROR(value_info_name(vi, "value_info", i));
    wm_type_t t;
    WM_RETURN_IF_ERROR(import_value_type(g, vi, "value_info", &t));
    int32_t id;
    WM_RETURN_IF_ERROR(wm_graph_value(g, vi->name, &id));
    if (vi->type) {
      WM_RETURN_IF_ERROR(wm_graph_set_type(g, id, &t));
    }
  }
  for (size_t i = 0; i < gp->n_output; i++) {
    const Onnx__ValueInfoProto *vi = gp->output[i];
    WM_RETURN_IF_ERROR(value_info_name(vi, "output", i));
    for (size_t j = 0; j < i; j++) {
      if (strcmp(gp->output[j]->name, vi->name) == 0) {
        char nb[96];
        return WM_ERROR(INVALID_ARGUMENT,
                        "outputs %zu and %zu are both named \"%s\"; graph "
                        "outputs have distinct names",
                        j, i, wm_onnx_safe(vi->name, nb, sizeof(nb)));
      }
    }
    wm_type_t t;
    WM_RETURN_IF_ERROR(import_value_type(g, vi, "output", &t));
    WM_RETURN_IF_ERROR(
        wm_graph_add_output(g, vi->name, vi->type ? &t : NULL, NULL));
  }
  for (size_t i = 0; i < gp->n_initializer; i++) {
    Onnx__TensorProto *tp = gp->initializer[i];
    if (!tp->name || !*tp->name) {
      return WM_ERROR(INVALID_ARGUMENT, "initializer %zu has no name", i);
    }
    wm_tensor_t *t;
    wm_status_t s = wm_onnx_tensor_from_proto(tp, im->base_dir, &t);
    if (s) {
      return wm_status_annotate(s, "initializer %zu", i);
    }
    WM_RETURN_IF_ERROR(wm_graph_add_initializer(g, tp->name, t, NULL));
  }
  for (size_t i = 0; i < gp->n_node; i++) {
    WM_RETURN_IF_ERROR(import_node(im, g, gp->node[i], i));
  }
  return NULL;
}

static wm_status_t import_graph(importer_t *im, const Onnx__GraphProto *gp,
                                const wm_graph_t *parent,
                                wm_graph_t **out_graph) {
  *out_graph = NULL;
  wm_graph_t *g;
  WM_RETURN_IF_ERROR(wm_graph_create(gp->name ? gp->name : "", parent, &g));
  wm_status_t s = fill_graph(im, g, gp);
  if (s) {
    // Errors from the IR's builder already start with the graph.
    char nb[96], prefix[112];
    snprintf(prefix, sizeof(prefix), "graph \"%s\"",
             wm_onnx_safe(gp->name, nb, sizeof(nb)));
    if (strncmp(wm_status_message(s), prefix, strlen(prefix)) != 0) {
      s = wm_status_annotate(s, "%s", prefix);
    }
    wm_graph_destroy(g);
    return s;
  }
  *out_graph = g;
  return NULL;
}

// Returns true when |name| is defined in a graph enclosing |g|.
static bool defined_outside(const wm_graph_t *g, const char *name) {
  for (const wm_graph_t *p = g->parent; p; p = p->parent) {
    int32_t id = wm_graph_find_value(p, name);
    if (id >= 0) {
      const wm_value_t *v = &p->values[id];
      if (v->producer >= 0 || v->is_input || v->initializer || v->is_outer) {
        return true;
      }
    }
  }
  return false;
}

// Marks the values of subgraphs that name a value of an enclosing graph;
// enclosing graphs are marked first.
static void mark_outer(wm_graph_t *g) {
  for (size_t i = 0; g->parent && i < g->value_count; i++) {
    wm_value_t *v = &g->values[i];
    if (v->producer < 0 && !v->is_input && !v->initializer &&
        defined_outside(g, v->name)) {
      v->is_outer = true;
    }
  }
  for (size_t n = 0; n < g->node_count; n++) {
    const wm_node_t *node = &g->nodes[n];
    for (int32_t a = 0; a < node->attr_count; a++) {
      const wm_attr_t *attr = &node->attrs[a];
      if (attr->type == WM_ATTR_GRAPH && attr->g) {
        mark_outer(attr->g);
      }
      for (size_t k = 0; attr->type == WM_ATTR_GRAPHS && k < attr->count; k++) {
        mark_outer(attr->graphs[k]);
      }
    }
  }
}

// ---------------------------------------------------------------- model

// The newest opsets wmap's operators know (src/ops: the highest
// since_version of each domain).
#define OPSET_MAX_ONNX 28
#define OPSET_MAX_ML 5

// Refuses an opset_import of a domain wmap implements at a version it
// does not know (negative, or newer than its operators).
static wm_status_t check_opset(const Onnx__OperatorSetIdProto *op) {
  const char *domain = op->domain ? op->domain : "";
  int64_t v = op->has_version ? op->version : 0;
  bool onnx = wm_domain_is_onnx(domain);
  if (!onnx && strcmp(domain, "ai.onnx.ml") != 0) {
    return NULL;  // another domain: its nodes are judged one by one
  }
  int64_t max = onnx ? OPSET_MAX_ONNX : OPSET_MAX_ML;
  if (v < 0) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "opset_import of domain \"%s\" has version %lld",
                    onnx ? "ai.onnx" : domain, (long long)v);
  }
  if (v > max) {
    return WM_ERROR(UNIMPLEMENTED,
                    "opset_import of domain \"%s\" is version %lld; wmap "
                    "knows up to %lld",
                    onnx ? "ai.onnx" : domain, (long long)v, (long long)max);
  }
  return NULL;
}

static wm_status_t import_model(importer_t *im, const Onnx__ModelProto *m,
                                wm_graph_t **out_graph) {
  if (!m->graph) {
    return WM_ERROR(INVALID_ARGUMENT, "model has no graph");
  }
  if (!m->has_ir_version || m->ir_version <= 0) {
    return WM_ERROR(INVALID_ARGUMENT, "model has no ir_version");
  }
  wm_graph_t *g;
  WM_RETURN_IF_ERROR(import_graph(im, m->graph, NULL, &g));
  wm_status_t s = NULL;
  g->ir_version = m->ir_version;
  g->model_version = m->has_model_version ? m->model_version : 0;
  if (!s) {
    s = intern(g, m->producer_name, &g->producer_name);
  }
  if (!s) {
    s = intern(g, m->producer_version, &g->producer_version);
  }
  if (!s) {
    s = intern(g, m->domain, &g->model_domain);
  }
  if (!s && !g->doc) {
    s = intern(g, m->doc_string, &g->doc);
  }
  for (size_t i = 0; !s && i < m->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *op = m->opset_import[i];
    s = check_opset(op);
    if (!s) {
      s = wm_graph_set_opset(g, op->domain ? op->domain : "",
                             op->has_version ? op->version : 0);
    }
  }
  for (size_t i = 0; !s && i < m->n_metadata_props; i++) {
    const Onnx__StringStringEntryProto *kv = m->metadata_props[i];
    s = wm_graph_add_metadata(g, kv->key ? kv->key : "",
                              kv->value ? kv->value : "");
  }
  if (!s && m->n_functions) {
    wm_log(WM_LOG_INFO, "model-local functions (%zu) are not imported",
           m->n_functions);
  }
  if (!s) {
    mark_outer(g);
    s = wm_graph_verify(g);
  }
  if (s) {
    wm_graph_destroy(g);
    return s;
  }
  *out_graph = g;
  return NULL;
}

// Imports from |data|; frees |data_take| (which may be |data| or NULL) as
// soon as it is decoded so that the file and the weights are not all in
// memory at once.
static wm_status_t load_buffer(const uint8_t *data, size_t size,
                               uint8_t *data_take, const char *base_dir,
                               wm_graph_t **out_graph) {
  *out_graph = NULL;
  ProtobufCMessage *msg = NULL;
  wm_status_t unpacked =
      wm_onnx_unpack(&onnx__model_proto__descriptor, data, size, &msg);
  free(data_take);
  WM_RETURN_IF_ERROR(unpacked);
  importer_t im = {base_dir};
  wm_status_t s = import_model(&im, (Onnx__ModelProto *)msg, out_graph);
  wm_onnx_unpacked_free(msg);
  return s;
}

wm_status_t wm_onnx_load_buffer(const uint8_t *data, size_t size,
                                const char *base_dir, wm_graph_t **out_graph) {
  return wm_onnx_one_line(load_buffer(data, size, NULL, base_dir, out_graph));
}

// Weights of at least this many bytes go from the file straight to their
// tensors.
enum { LIFT_MIN = 4096, LIFT_FILE_MIN = 1 << 20 };

// Drops the pages of map[from, to) from this process (the file keeps them).
static void drop_pages(const uint8_t *map, size_t from, size_t to) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t a = from / page * page, b = (to + page - 1) / page * page;
  if (b > a) {
    madvise((void *)(map + a), b - a, MADV_DONTNEED);
  }
}

// Loads a large model file through a read-only mapping: the model is
// re-encoded without its weights, unpacked, and each weight is copied from
// the mapping into its tensor (those pages dropped right after), so at no
// point are the whole file and all the weights in memory at once. False
// when the file is not a large regular file or is malformed (the caller
// reads it whole and reports what is wrong).
static bool load_mapped(const char *path, const char *dir, wm_status_t *out_s,
                        wm_graph_t **out_graph) {
  // O_NONBLOCK: a FIFO must not hang the open; it and a file over
  // protobuf's 2 GiB limit are refused by wm_file_read in the caller.
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size < LIFT_FILE_MIN || (uint64_t)st.st_size > WM_FILE_MAX_BYTES) {
    if (fd >= 0) {
      close(fd);
    }
    return false;
  }
  size_t size = (size_t)st.st_size;
  const uint8_t *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    return false;
  }
  uint8_t *small = NULL;
  size_t small_size = 0, n = 0;
  wm_onnx_lifted_t *lifted = NULL;
  bool ok =
      wm_onnx_lift_raw(map, size, LIFT_MIN, &small, &small_size, &lifted, &n);
  drop_pages(map, 0, size);
  ProtobufCMessage *msg = NULL;
  if (ok) {
    wm_status_t s =
        wm_onnx_unpack(&onnx__model_proto__descriptor, small, small_size, &msg);
    ok = !s;
    wm_status_free(s);
  }
  free(small);
  Onnx__ModelProto *m = (Onnx__ModelProto *)msg;
  for (size_t i = 0; ok && i < n; i++) {
    const wm_onnx_lifted_t *w = &lifted[i];
    Onnx__TensorProto *t = m->graph && w->index < m->graph->n_initializer
                               ? m->graph->initializer[w->index]
                               : NULL;
    uint8_t *copy = t && !t->has_raw_data ? wm_malloc(w->len) : NULL;
    if (!copy) {
      ok = false;
      break;
    }
    memcpy(copy, map + w->offset, w->len);
    drop_pages(map, w->offset, w->offset + w->len);
    t->raw_data.data = copy;
    t->raw_data.len = w->len;
    t->has_raw_data = true;
  }
  free(lifted);
  munmap((void *)map, size);
  if (!ok) {
    wm_onnx_unpacked_free(msg);
    return false;
  }
  importer_t im = {dir};
  *out_s = import_model(&im, m, out_graph);
  wm_onnx_unpacked_free(msg);
  return true;
}

wm_status_t wm_onnx_load(const char *path, wm_graph_t **out_graph) {
  *out_graph = NULL;
  char *mdir = wm_onnx_dirname(path);
  if (!mdir) {
    return oom();
  }
  wm_status_t ms = NULL;
  if (load_mapped(path, mdir, &ms, out_graph)) {
    free(mdir);
    if (ms) {
      char pb[160];
      ms = wm_status_annotate(ms, "importing \"%s\"",
                              wm_onnx_safe(path, pb, sizeof(pb)));
    }
    return wm_onnx_one_line(ms);
  }
  free(mdir);
  uint8_t *data;
  size_t size;
  WM_RETURN_IF_ERROR(wm_onnx_one_line(wm_file_read(path, &data, &size)));
  char *dir = wm_onnx_dirname(path);
  wm_status_t s = NULL;
  if (dir) {
    s = load_buffer(data, size, data, dir, out_graph);
  } else {
    free(data);
    s = oom();
  }
  free(dir);
  if (s) {
    char pb[160];
    s = wm_status_annotate(s, "importing \"%s\"",
                           wm_onnx_safe(path, pb, sizeof(pb)));
  }
  return wm_onnx_one_line(s);
}
