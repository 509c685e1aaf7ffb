// wm_graph_t -> ModelProto. The protobuf-c structs are built in an arena
// and point into the graph; packing copies everything out.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx_internal.h"
#include "wmap/onnx.h"

// The IR version written when the graph does not carry one (the version
// of the onnx.proto this file is built against).
#define WM_ONNX_DEFAULT_IR_VERSION 8

typedef struct exporter {
  wm_arena_t arena;  // every protobuf-c struct of this export
} exporter_t;

static wm_status_t oom(void) {
  return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory exporting the model");
}

// Allocates |count| zeroed items of |size| in the arena (NULL for none).
static wm_status_t alloc_items(exporter_t *ex, size_t count, size_t size,
                               void *out) {
  void **p = out;
  *p = NULL;
  if (count == 0) {
    return NULL;
  }
  size_t bytes;
  if (!wm_checked_mul(count, size, &bytes)) {
    return oom();
  }
  *p = wm_arena_alloc(&ex->arena, bytes);
  return *p ? NULL : oom();
}

// Allocates one message and runs its INIT.
#define NEW_MSG(ex, type, init, out)                       \
  do {                                                     \
    type *m_ = wm_arena_alloc(&(ex)->arena, sizeof(type)); \
    if (!m_) {                                             \
      return oom();                                        \
    }                                                      \
    type i_ = init;                                        \
    *m_ = i_;                                              \
    *(out) = m_;                                           \
  } while (0)

static char *str(const char *s) {
  return (char *)s;
}

// ---------------------------------------------------------------- types

static bool type_is_unknown(const wm_type_t *t) {
  return t->kind == WM_TYPE_TENSOR && t->dtype == WM_DTYPE_UNDEFINED &&
         t->shape.rank < 0;
}

static wm_status_t export_shape(exporter_t *ex, const wm_type_t *t,
                                Onnx__TensorShapeProto **out) {
  *out = NULL;
  if (t->shape.rank < 0) {
    return NULL;
  }
  Onnx__TensorShapeProto *sp;
  NEW_MSG(ex, Onnx__TensorShapeProto, ONNX__TENSOR_SHAPE_PROTO__INIT, &sp);
  size_t rank = (size_t)t->shape.rank;
  WM_RETURN_IF_ERROR(alloc_items(ex, rank, sizeof(void *), &sp->dim));
  sp->n_dim = rank;
  for (size_t i = 0; i < rank; i++) {
    Onnx__TensorShapeProto__Dimension *d;
    NEW_MSG(ex, Onnx__TensorShapeProto__Dimension,
            ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT, &d);
    if (t->dim_params[i]) {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      d->dim_param = str(t->dim_params[i]);
    } else if (t->shape.dims[i] >= 0) {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      d->dim_value = t->shape.dims[i];
    }
    sp->dim[i] = d;
  }
  *out = sp;
  return NULL;
}

// Writes a TypeProto of |kind| whose innermost tensor is |t|'s.
static wm_status_t export_type_kind(exporter_t *ex, const wm_type_t *t,
                                    wm_type_kind_t kind, wm_type_kind_t elem,
                                    Onnx__TypeProto **out) {
  Onnx__TypeProto *tp;
  NEW_MSG(ex, Onnx__TypeProto, ONNX__TYPE_PROTO__INIT, &tp);
  *out = tp;
  switch (kind) {
    case WM_TYPE_SEQUENCE:
    case WM_TYPE_OPTIONAL:
    case WM_TYPE_MAP: {
      Onnx__TypeProto *inner;
      WM_RETURN_IF_ERROR(export_type_kind(ex, t, elem, WM_TYPE_TENSOR, &inner));
      if (kind == WM_TYPE_SEQUENCE) {
        tp->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
        NEW_MSG(ex, Onnx__TypeProto__Sequence, ONNX__TYPE_PROTO__SEQUENCE__INIT,
                &tp->sequence_type);
        tp->sequence_type->elem_type = inner;
      } else if (kind == WM_TYPE_OPTIONAL) {
        tp->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
        NEW_MSG(ex, Onnx__TypeProto__Optional, ONNX__TYPE_PROTO__OPTIONAL__INIT,
                &tp->optional_type);
        tp->optional_type->elem_type = inner;
      } else {
        // The IR keeps no key type; it is written as undefined.
        tp->value_case = ONNX__TYPE_PROTO__VALUE_MAP_TYPE;
        NEW_MSG(ex, Onnx__TypeProto__Map, ONNX__TYPE_PROTO__MAP__INIT,
                &tp->map_type);
        tp->map_type->value_type = inner;
      }
      return NULL;
    }
    case WM_TYPE_SPARSE_TENSOR: {
      tp->value_case = ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE;
      Onnx__TypeProto__SparseTensor *st;
      NEW_MSG(ex, Onnx__TypeProto__SparseTensor,
              ONNX__TYPE_PROTO__SPARSE_TENSOR__INIT, &st);
      tp->sparse_tensor_type = st;
      st->has_elem_type = t->dtype != WM_DTYPE_UNDEFINED;
      st->elem_type = (int32_t)t->dtype;
      return export_shape(ex, t, &st->shape);
    }
    default: {
      tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
      Onnx__TypeProto__Tensor *tt;
      NEW_MSG(ex, Onnx__TypeProto__Tensor, ONNX__TYPE_PROTO__TENSOR__INIT, &tt);
      tp->tensor_type = tt;
      tt->has_elem_type = t->dtype != WM_DTYPE_UNDEFINED;
      tt->elem_type = (int32_t)t->dtype;
      return export_shape(ex, t, &tt->shape);
    }
  }
}

static wm_status_t export_type(exporter_t *ex, const wm_type_t *t,
                               Onnx__TypeProto **out) {
  return export_type_kind(ex, t, t->kind, t->elem_kind, out);
}

static wm_status_t export_value_info(exporter_t *ex, const wm_value_t *v,
                                     Onnx__ValueInfoProto **out) {
  Onnx__ValueInfoProto *vi;
  NEW_MSG(ex, Onnx__ValueInfoProto, ONNX__VALUE_INFO_PROTO__INIT, &vi);
  vi->name = str(v->name);
  if (!type_is_unknown(&v->type)) {
    WM_RETURN_IF_ERROR(export_type(ex, &v->type, &vi->type));
  }
  *out = vi;
  return NULL;
}

// -------------------------------------------------------------- tensors

static wm_status_t export_tensor(exporter_t *ex, const wm_tensor_t *t,
                                 const char *name, Onnx__TensorProto **out) {
  Onnx__TensorProto *tp;
  NEW_MSG(ex, Onnx__TensorProto, ONNX__TENSOR_PROTO__INIT, &tp);
  *out = tp;
  return wm_onnx_tensor_to_proto(t, name, &ex->arena, tp);
}

// --------------------------------------------------------------- graphs

static wm_status_t export_graph(exporter_t *ex, const wm_graph_t *g,
                                Onnx__GraphProto **out);

static wm_status_t export_attr(exporter_t *ex, const wm_attr_t *a,
                               Onnx__AttributeProto **out) {
  Onnx__AttributeProto *ap;
  NEW_MSG(ex, Onnx__AttributeProto, ONNX__ATTRIBUTE_PROTO__INIT, &ap);
  *out = ap;
  ap->name = str(a->name);
  ap->ref_attr_name = str(a->ref_attr_name);
  ap->has_type = true;
  ap->type = (Onnx__AttributeProto__AttributeType)a->type;
  size_t n = a->count;
  switch (a->type) {
    case WM_ATTR_FLOAT:
      ap->has_f = true;
      ap->f = a->f;
      return NULL;
    case WM_ATTR_INT:
      ap->has_i = true;
      ap->i = a->i;
      return NULL;
    case WM_ATTR_STRING:
      ap->has_s = true;
      ap->s.data = (uint8_t *)str(a->s);
      ap->s.len = a->s ? a->s_len : 0;
      return NULL;
    case WM_ATTR_TENSOR:
      return a->t ? export_tensor(ex, a->t, "", &ap->t) : NULL;
    case WM_ATTR_GRAPH:
      return a->g ? export_graph(ex, a->g, &ap->g) : NULL;
    case WM_ATTR_FLOATS:
      ap->n_floats = a->floats ? n : 0;
      ap->floats = a->floats;
      return NULL;
    case WM_ATTR_INTS:
      ap->n_ints = a->ints ? n : 0;
      ap->ints = a->ints;
      return NULL;
    case WM_ATTR_STRINGS:
      if (!a->strings) {
        return NULL;
      }
      WM_RETURN_IF_ERROR(
          alloc_items(ex, n, sizeof(ProtobufCBinaryData), &ap->strings));
      ap->n_strings = n;
      for (size_t i = 0; i < n; i++) {
        ap->strings[i].data = (uint8_t *)str(a->strings[i]);
        ap->strings[i].len =
            a->string_lens ? a->string_lens[i] : strlen(a->strings[i]);
      }
      return NULL;
    case WM_ATTR_TENSORS:
      if (!a->tensors) {
        return NULL;
      }
      WM_RETURN_IF_ERROR(alloc_items(ex, n, sizeof(void *), &ap->tensors));
      ap->n_tensors = n;
      for (size_t i = 0; i < n; i++) {
        WM_RETURN_IF_ERROR(
            export_tensor(ex, a->tensors[i], "", &ap->tensors[i]));
      }
      return NULL;
    case WM_ATTR_GRAPHS:
      if (!a->graphs) {
        return NULL;
      }
      WM_RETURN_IF_ERROR(alloc_items(ex, n, sizeof(void *), &ap->graphs));
      ap->n_graphs = n;
      for (size_t i = 0; i < n; i++) {
        WM_RETURN_IF_ERROR(export_graph(ex, a->graphs[i], &ap->graphs[i]));
      }
      return NULL;
    case WM_ATTR_TYPE_PROTO:
      return a->types ? export_type(ex, &a->types[0], &ap->tp) : NULL;
    case WM_ATTR_TYPE_PROTOS:
      if (!a->types) {
        return NULL;
      }
      WM_RETURN_IF_ERROR(alloc_items(ex, n, sizeof(void *), &ap->type_protos));
      ap->n_type_protos = n;
      for (size_t i = 0; i < n; i++) {
        WM_RETURN_IF_ERROR(export_type(ex, &a->types[i], &ap->type_protos[i]));
      }
      return NULL;
    default:
      return WM_ERROR(UNIMPLEMENTED, "attribute \"%s\": cannot export kind %s",
                      a->name, wm_attr_type_name(a->type));
  }
}

// Returns the value name for slot id |id| ("" for omitted).
static char *slot_name(const wm_graph_t *g, int32_t id) {
  return id >= 0 ? str(g->values[id].name) : str("");
}

static wm_status_t export_node(exporter_t *ex, const wm_graph_t *g,
                               const wm_node_t *n, Onnx__NodeProto **out) {
  Onnx__NodeProto *np;
  NEW_MSG(ex, Onnx__NodeProto, ONNX__NODE_PROTO__INIT, &np);
  *out = np;
  np->name = n->name && *n->name ? str(n->name) : NULL;
  np->op_type = str(n->op_type);
  np->domain = n->domain && *n->domain ? str(n->domain) : NULL;
  np->doc_string = str(n->doc);
  size_t ni = (size_t)n->input_count, no = (size_t)n->output_count;
  WM_RETURN_IF_ERROR(alloc_items(ex, ni, sizeof(char *), &np->input));
  WM_RETURN_IF_ERROR(alloc_items(ex, no, sizeof(char *), &np->output));
  np->n_input = ni;
  np->n_output = no;
  for (size_t i = 0; i < ni; i++) {
    np->input[i] = slot_name(g, n->inputs[i]);
  }
  for (size_t i = 0; i < no; i++) {
    np->output[i] = slot_name(g, n->outputs[i]);
  }
  size_t na = (size_t)n->attr_count;
  WM_RETURN_IF_ERROR(alloc_items(ex, na, sizeof(void *), &np->attribute));
  np->n_attribute = na;
  for (size_t i = 0; i < na; i++) {
    WM_RETURN_IF_ERROR(export_attr(ex, &n->attrs[i], &np->attribute[i]));
  }
  return NULL;
}

static wm_status_t export_graph(exporter_t *ex, const wm_graph_t *g,
                                Onnx__GraphProto **out) {
  Onnx__GraphProto *gp;
  NEW_MSG(ex, Onnx__GraphProto, ONNX__GRAPH_PROTO__INIT, &gp);
  *out = gp;
  gp->name = str(g->name);
  gp->doc_string = str(g->doc);
  WM_RETURN_IF_ERROR(alloc_items(ex, g->node_count, sizeof(void *), &gp->node));
  gp->n_node = g->node_count;
  for (size_t i = 0; i < g->node_count; i++) {
    WM_RETURN_IF_ERROR(export_node(ex, g, &g->nodes[i], &gp->node[i]));
  }
  WM_RETURN_IF_ERROR(
      alloc_items(ex, g->input_count, sizeof(void *), &gp->input));
  gp->n_input = g->input_count;
  for (size_t i = 0; i < g->input_count; i++) {
    WM_RETURN_IF_ERROR(
        export_value_info(ex, &g->values[g->inputs[i]], &gp->input[i]));
  }
  WM_RETURN_IF_ERROR(
      alloc_items(ex, g->output_count, sizeof(void *), &gp->output));
  gp->n_output = g->output_count;
  for (size_t i = 0; i < g->output_count; i++) {
    WM_RETURN_IF_ERROR(
        export_value_info(ex, &g->values[g->outputs[i]], &gp->output[i]));
  }
  size_t inits = 0, infos = 0;
  for (size_t i = 0; i < g->value_count; i++) {
    const wm_value_t *v = &g->values[i];
    if (v->initializer) {
      inits++;
    } else if (!v->is_input && !v->is_output && !type_is_unknown(&v->type)) {
      infos++;
    }
  }
  WM_RETURN_IF_ERROR(alloc_items(ex, inits, sizeof(void *), &gp->initializer));
  WM_RETURN_IF_ERROR(alloc_items(ex, infos, sizeof(void *), &gp->value_info));
  for (size_t i = 0; i < g->value_count; i++) {
    const wm_value_t *v = &g->values[i];
    if (v->initializer) {
      WM_RETURN_IF_ERROR(export_tensor(ex, v->initializer, v->name,
                                       &gp->initializer[gp->n_initializer]));
      gp->n_initializer++;
    } else if (!v->is_input && !v->is_output && !type_is_unknown(&v->type)) {
      WM_RETURN_IF_ERROR(
          export_value_info(ex, v, &gp->value_info[gp->n_value_info]));
      gp->n_value_info++;
    }
  }
  return NULL;
}

// ---------------------------------------------------------------- model

static wm_status_t export_model(exporter_t *ex, const wm_graph_t *g,
                                Onnx__ModelProto *m) {
  m->has_ir_version = true;
  m->ir_version = g->ir_version ? g->ir_version : WM_ONNX_DEFAULT_IR_VERSION;
  m->producer_name = str(g->producer_name);
  m->producer_version = str(g->producer_version);
  m->domain = str(g->model_domain);
  m->has_model_version = g->model_version != 0;
  m->model_version = g->model_version;
  WM_RETURN_IF_ERROR(
      alloc_items(ex, g->opset_count, sizeof(void *), &m->opset_import));
  m->n_opset_import = g->opset_count;
  for (size_t i = 0; i < g->opset_count; i++) {
    Onnx__OperatorSetIdProto *op;
    NEW_MSG(ex, Onnx__OperatorSetIdProto, ONNX__OPERATOR_SET_ID_PROTO__INIT,
            &op);
    op->domain = str(g->opsets[i].domain);
    op->has_version = true;
    op->version = g->opsets[i].version;
    m->opset_import[i] = op;
  }
  WM_RETURN_IF_ERROR(
      alloc_items(ex, g->metadata_count, sizeof(void *), &m->metadata_props));
  m->n_metadata_props = g->metadata_count;
  for (size_t i = 0; i < g->metadata_count; i++) {
    Onnx__StringStringEntryProto *kv;
    NEW_MSG(ex, Onnx__StringStringEntryProto,
            ONNX__STRING_STRING_ENTRY_PROTO__INIT, &kv);
    kv->key = str(g->metadata[i].key);
    kv->value = str(g->metadata[i].value);
    m->metadata_props[i] = kv;
  }
  return export_graph(ex, g, &m->graph);
}

// Exports |graph| into a ModelProto built in an arena and hands it to
// |use|; the arena is freed after.
static wm_status_t with_model(const wm_graph_t *graph,
                              wm_status_t (*use)(Onnx__ModelProto *, void *),
                              void *ctx) {
  exporter_t ex;
  wm_arena_init(&ex.arena);
  Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
  wm_status_t s = export_model(&ex, graph, &model);
  if (!s) {
    s = use(&model, ctx);
  }
  wm_arena_deinit(&ex.arena);
  return s;
}

typedef struct {
  uint8_t *data;
  size_t size;
} packed_t;

static wm_status_t pack_into_buffer(Onnx__ModelProto *model, void *ctx) {
  packed_t *out = ctx;
  size_t n = onnx__model_proto__get_packed_size(model);
  uint8_t *buf = wm_malloc(n);
  if (!buf) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for a %zu-byte model",
                    n);
  }
  onnx__model_proto__pack(model, buf);
  out->data = buf;
  out->size = n;
  return NULL;
}

wm_status_t wm_onnx_save_buffer(const wm_graph_t *graph, uint8_t **out_data,
                                size_t *out_size) {
  packed_t out = {NULL, 0};
  wm_status_t s = with_model(graph, pack_into_buffer, &out);
  *out_data = out.data;
  *out_size = out.size;
  return s;
}

typedef struct {
  ProtobufCBuffer base;  // first: protobuf-c calls base.append
  wm_onnx_sink_fn sink;
  void *ctx;
} sink_buffer_t;

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data) {
  sink_buffer_t *sb = (sink_buffer_t *)b;
  sb->sink(sb->ctx, data, len);
}

static wm_status_t pack_into_sink(Onnx__ModelProto *model, void *ctx) {
  onnx__model_proto__pack_to_buffer(model, ctx);
  return NULL;
}

wm_status_t wm_onnx_save_stream(const wm_graph_t *graph, wm_onnx_sink_fn sink,
                                void *ctx) {
  sink_buffer_t sb = {
      .base = {.append = sink_append}, .sink = sink, .ctx = ctx};
  return with_model(graph, pack_into_sink, &sb.base);
}

static void file_sink(void *ctx, const uint8_t *data, size_t len) {
  FILE *f = ctx;
  if (!ferror(f)) {
    (void)fwrite(data, 1, len, f);
  }
}

wm_status_t wm_onnx_save(const wm_graph_t *graph, const char *path) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    return WM_ERROR(NOT_FOUND, "cannot create \"%s\": %s", path,
                    strerror(errno));
  }
  wm_status_t s = wm_onnx_save_stream(graph, file_sink, f);
  bool failed = ferror(f) != 0;
  if (fclose(f) != 0) {
    failed = true;
  }
  if (!s && failed) {
    s = WM_ERROR(DATA_LOSS, "error writing \"%s\"", path);
  }
  struct stat sb;
  if (s && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
    unlink(path);  // no partial model left behind
  }
  return s;
}
