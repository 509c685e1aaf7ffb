// The session: places a graph's nodes on one backend and executes them in
// topological order through the backend's device and library tiers.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "wmap/session.h"

// Values at most this large get a host copy on backends whose memory is
// not host-visible, so shape rules can read them (shape tensors).
enum { HOST_COPY_LIMIT = 1 << 16 };

typedef struct rt_value {
  wm_buffer *buf;       // device memory, NULL when not materialized
  wm_tensor_desc desc;  // layout of the tensor in |buf|
  wm_tensor_t *host;    // host view (mapped) or host copy, or NULL
  int32_t uses;         // consumers left in this run
  bool persistent;      // an initializer: kept across runs
} rt_value;

typedef struct rt_node {
  const wm_op_def_t *def;      // registry entry (shape rules)
  wm_op_attr *attrs;           // ABI view of the node's attributes
  uint32_t n_attr;             // number of attributes
  wm_tensor_desc *attr_descs;  // layouts of tensor attributes
  uint64_t **string_lens;      // per attribute, lengths of STRINGS
  wm_op_plan *plan;            // current plan or NULL
  wm_tensor_desc *planned;     // descs (inputs then outputs) of |plan|
} rt_node;

struct wm_session {
  wm_graph_t *graph;         // borrowed
  wm_backend_t *backend;     // borrowed
  const wm_plugin_api *api;  // backend table
  const wm_target_desc *target;
  wm_device *dev;
  wm_stream *stream;
  bool mappable;       // device buffers are host-visible
  int32_t *order;      // topological order
  rt_node *nodes;      // per node
  rt_value *values;    // per value id
  int32_t *use_count;  // consumers per value (+1 for outputs)
};

static wm_status_t backend_error(wm_session_t *s, wm_error *e,
                                 const char *what) {
  return wm_backend_error(s->backend, e, what);
}

static wm_tensor_desc desc_from_type(wm_dtype_t dtype,
                                     const wm_shape_t *shape) {
  wm_tensor_desc d;
  memset(&d, 0, sizeof(d));
  d.struct_size = sizeof(d);
  d.dtype = (uint32_t)dtype;
  d.rank = shape->rank < 0 ? 0 : (uint32_t)shape->rank;
  int64_t stride = 1;
  for (int32_t i = (int32_t)d.rank - 1; i >= 0; i--) {
    d.dims[i] = shape->dims[i];
    d.strides[i] = stride;
    stride *= shape->dims[i] > 0 ? shape->dims[i] : 1;
  }
  return d;
}

static wm_shape_t shape_from_desc(const wm_tensor_desc *d) {
  wm_shape_t s;
  memset(&s, 0, sizeof(s));
  s.rank = (int32_t)d->rank;
  for (uint32_t i = 0; i < d->rank; i++) {
    s.dims[i] = d->dims[i];
  }
  return s;
}

// ------------------------------------------------------------- values

static void release_value(wm_session_t *s, rt_value *v) {
  if (!v->buf) {
    return;
  }
  if (v->desc.dtype == WM_DTYPE_STRING && v->host) {
    char **items = v->host->data;
    for (size_t i = 0; i < v->host->count; i++) {
      free(items[i]);
      items[i] = NULL;
    }
  }
  wm_tensor_destroy(v->host);
  v->host = NULL;
  if (s->mappable && s->api->device->mem_unmap) {
    s->api->device->mem_unmap(v->buf);
  }
  s->api->device->mem_free(v->buf);
  v->buf = NULL;
}

// Allocates device memory for |v| of |dtype|/|shape| and its host view.
static wm_status_t alloc_value(wm_session_t *s, rt_value *v, wm_dtype_t dtype,
                               const wm_shape_t *shape) {
  v->desc = desc_from_type(dtype, shape);
  size_t count, bytes;
  if (!wm_shape_numel(shape, &count) ||
      !wm_checked_mul(count, wm_dtype_size(dtype), &bytes)) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "tensor is too large");
  }
  if (dtype == WM_DTYPE_STRING && !s->mappable) {
    return WM_ERROR(UNIMPLEMENTED,
                    "backend \"%s\" cannot hold string "
                    "tensors (its memory is not host-visible)",
                    wm_backend_name(s->backend));
  }
  WM_RETURN_IF_ERROR(
      backend_error(s,
                    s->api->device->mem_alloc(s->dev, bytes, 64,
                                              WM_MEM_DEVICE_LOCAL, &v->buf),
                    "mem_alloc"));
  if (s->mappable) {
    void *ptr;
    wm_status_t st =
        backend_error(s, s->api->device->mem_map(v->buf, &ptr), "mem_map");
    if (!st) {
      st = wm_tensor_wrap(dtype, shape, ptr, &v->host);
    }
    if (st) {
      release_value(s, v);
      return st;
    }
  }
  return NULL;
}

// Copies host tensor |t| into a new device value |v|.
static wm_status_t upload(wm_session_t *s, rt_value *v, const wm_tensor_t *t) {
  WM_RETURN_IF_ERROR(alloc_value(s, v, t->dtype, &t->shape));
  wm_status_t st = NULL;
  if (t->dtype == WM_DTYPE_STRING) {
    for (size_t i = 0; !st && i < t->count; i++) {
      const char *str = ((char *const *)t->data)[i];
      st = wm_tensor_set_string(v->host, i, str, strlen(str));
    }
  } else {
    st = backend_error(
        s, s->api->device->copy_h2d(s->stream, t->data, v->buf, 0, t->nbytes),
        "copy_h2d");
    if (!st && !s->mappable && t->nbytes <= HOST_COPY_LIMIT) {
      st = wm_tensor_clone(t, &v->host);
    }
  }
  if (st) {
    release_value(s, v);
  }
  return st;
}

// Copies device value |v| into a new host tensor.
static wm_status_t download(wm_session_t *s, const rt_value *v,
                            wm_tensor_t **out) {
  wm_shape_t shape = shape_from_desc(&v->desc);
  if (v->desc.dtype == WM_DTYPE_STRING) {
    WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_STRING, &shape, out));
    for (size_t i = 0; i < (*out)->count; i++) {
      const char *str = ((char *const *)v->host->data)[i];
      wm_status_t st =
          wm_tensor_set_string(*out, i, str ? str : "", str ? strlen(str) : 0);
      if (st) {
        wm_tensor_destroy(*out);
        *out = NULL;
        return st;
      }
    }
    return NULL;
  }
  WM_RETURN_IF_ERROR(wm_tensor_create((wm_dtype_t)v->desc.dtype, &shape, out));
  WM_RETURN_IF_ERROR(
      backend_error(s, s->api->device->stream_sync(s->stream), "stream_sync"));
  wm_status_t st =
      backend_error(s,
                    s->api->device->copy_d2h(s->stream, v->buf, 0, (*out)->data,
                                             (*out)->nbytes),
                    "copy_d2h");
  if (st) {
    wm_tensor_destroy(*out);
    *out = NULL;
  }
  return st;
}

// ---------------------------------------------------------- placement

// Builds the ABI view of node |n|'s attributes.
static wm_status_t convert_attrs(rt_node *rn, const wm_node_t *node) {
  rn->n_attr = (uint32_t)node->attr_count;
  size_t n = (size_t)node->attr_count;
  rn->attrs = wm_calloc(n + 1, sizeof(wm_op_attr));
  rn->attr_descs = wm_calloc(n + 1, sizeof(wm_tensor_desc));
  rn->string_lens = wm_calloc(n + 1, sizeof(uint64_t *));
  if (!rn->attrs || !rn->attr_descs || !rn->string_lens) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    const wm_attr_t *a = &node->attrs[i];
    wm_op_attr *o = &rn->attrs[i];
    o->struct_size = sizeof(*o);
    o->name = a->name;
    o->type = (uint32_t)a->type;
    o->i = a->i;
    o->f = a->f;
    o->s = a->s;
    o->s_len = a->s_len;
    o->count = a->count;
    o->ints = a->ints;
    o->floats = a->floats;
    o->strings = a->strings;
    if (a->strings) {
      rn->string_lens[i] = wm_calloc(a->count + 1, sizeof(uint64_t));
      if (!rn->string_lens[i]) {
        return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
      }
      for (size_t k = 0; k < a->count; k++) {
        rn->string_lens[i][k] = a->string_lens[k];
      }
      o->string_lens = rn->string_lens[i];
    }
    if (a->t) {
      rn->attr_descs[i] = desc_from_type(a->t->dtype, &a->t->shape);
      o->tensor = &rn->attr_descs[i];
      o->tensor_data = a->t->data;
    }
    o->graph = a->g ? (const void *)a->g : (const void *)a->graphs;
  }
  return NULL;
}

// Fills |op| (with descs in |descs|: inputs then outputs) for node |index|
// from |ctx|'s types.
static void make_op_desc(const wm_session_t *s, size_t index,
                         const wm_op_ctx_t *ctx, wm_tensor_desc *descs,
                         const void **values, wm_op_desc *op) {
  const wm_node_t *node = &s->graph->nodes[index];
  const rt_node *rn = &s->nodes[index];
  for (int32_t i = 0; i < ctx->n_in; i++) {
    memset(&descs[i], 0, sizeof(descs[i]));
    descs[i].struct_size = sizeof(descs[i]);
    values[i] = NULL;
    if (wm_op_has_input(ctx, i)) {
      descs[i] =
          desc_from_type(ctx->in_types[i].dtype, &ctx->in_types[i].shape);
      values[i] = ctx->in[i] ? ctx->in[i]->data : NULL;
    }
  }
  for (int32_t i = 0; i < ctx->n_out; i++) {
    wm_tensor_desc *d = &descs[ctx->n_in + i];
    memset(d, 0, sizeof(*d));
    d->struct_size = sizeof(*d);
    if (wm_op_has_output(ctx, i)) {
      *d = desc_from_type(ctx->out_types[i].dtype, &ctx->out_types[i].shape);
    }
  }
  memset(op, 0, sizeof(*op));
  op->struct_size = sizeof(*op);
  op->domain = node->domain;
  op->op_type = node->op_type;
  op->opset = (uint64_t)ctx->opset;
  op->name = ctx->label;
  op->n_in = (uint32_t)ctx->n_in;
  op->n_out = (uint32_t)ctx->n_out;
  op->in = descs;
  op->out = descs + ctx->n_in;
  op->in_values = values;
  op->n_attr = rn->n_attr;
  op->attrs = rn->attrs;
}

static const char *why_name(uint32_t reason) {
  static const char *const names[] = {
      "unspecified", "operator",   "opset",  "dtype",    "rank", "shape",
      "attribute",   "size limit", "layout", "subgraph", "other"};
  return reason < sizeof(names) / sizeof(names[0]) ? names[reason] : "other";
}

// Asks the backend about every node; fails listing those it cannot run.
static wm_status_t place_nodes(wm_session_t *s) {
  wm_strbuf_t refused;
  wm_strbuf_init(&refused);
  size_t n_refused = 0;
  wm_status_t st = NULL;
  const wm_library_tier *lib = s->api->library;
  for (size_t k = 0; !st && k < s->graph->node_count; k++) {
    size_t index = (size_t)s->order[k];
    wm_op_ctx_t ctx;
    st = wm_op_ctx_init(&ctx, s->graph, index);
    if (st) {
      break;
    }
    st = wm_op_find_def(&ctx, &s->nodes[index].def);
    if (!st) {
      st = convert_attrs(&s->nodes[index], &s->graph->nodes[index]);
    }
    for (int32_t i = 0; !st && i < ctx.n_out; i++) {
      int32_t id = s->graph->nodes[index].outputs[i];
      if (id >= 0) {
        ctx.out_types[i] = s->graph->values[id].type;
      }
    }
    wm_op_support sup = {.struct_size = sizeof(sup)};
    if (!st && lib) {
      size_t n = (size_t)(ctx.n_in + ctx.n_out) + 1;
      wm_tensor_desc *descs = wm_calloc(n, sizeof(*descs));
      const void **values = wm_calloc(n, sizeof(void *));
      if (!descs || !values) {
        st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
      } else {
        wm_op_desc op;
        make_op_desc(s, index, &ctx, descs, values, &op);
        st = backend_error(s, lib->op_query(s->target, &op, &sup), "op_query");
      }
      free(descs);
      free(values);
    }
    if (!st && sup.level == WM_SUPPORT_NONE) {
      if (n_refused++ < 8) {
        wm_strbuf_printf(&refused, "%snode \"%s\" (%s): %s%s%s",
                         n_refused > 1 ? "; " : "", ctx.label,
                         ctx.node->op_type,
                         lib ? why_name(sup.reason) : "no library tier",
                         sup.detail ? ": " : "", sup.detail ? sup.detail : "");
      }
    }
    wm_op_ctx_deinit(&ctx);
  }
  if (!st && n_refused) {
    st = WM_ERROR(UNIMPLEMENTED, "backend \"%s\" cannot run %zu node%s: %s%s",
                  wm_backend_name(s->backend), n_refused,
                  n_refused == 1 ? "" : "s", wm_strbuf_str(&refused),
                  n_refused > 8 ? "; ..." : "");
  }
  wm_strbuf_deinit(&refused);
  return st;
}

wm_status_t wm_session_create(wm_graph_t *graph, wm_backend_t *backend,
                              wm_session_t **out_session) {
  *out_session = NULL;
  WM_RETURN_IF_ERROR(wm_graph_verify(graph));
  WM_RETURN_IF_ERROR(wm_ops_check_graph(graph));
  wm_session_t *s = wm_calloc(1, sizeof(*s));
  if (!s) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  s->graph = graph;
  s->backend = backend;
  s->api = wm_backend_api(backend);
  s->target = wm_backend_target(backend, 0);
  s->mappable = s->api->device->mem_map != NULL;
  wm_status_t st = NULL;
  if (!s->target) {
    st = WM_ERROR(UNAVAILABLE, "backend \"%s\" has no device",
                  wm_backend_name(backend));
  }
  if (!st) {
    st = wm_graph_topo_order(graph, &s->order);
  }
  size_t nv = graph->value_count + 1, nn = graph->node_count + 1;
  if (!st) {
    s->nodes = wm_calloc(nn, sizeof(rt_node));
    s->values = wm_calloc(nv, sizeof(rt_value));
    s->use_count = wm_calloc(nv, sizeof(int32_t));
    if (!s->nodes || !s->values || !s->use_count) {
      st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  for (size_t i = 0; !st && i < graph->node_count; i++) {
    const wm_node_t *node = &graph->nodes[i];
    for (int32_t k = 0; k < node->input_count; k++) {
      if (node->inputs[k] >= 0) {
        s->use_count[node->inputs[k]]++;
      }
    }
  }
  for (size_t i = 0; !st && i < graph->output_count; i++) {
    s->use_count[graph->outputs[i]]++;
  }
  if (!st) {
    st = place_nodes(s);
  }
  if (!st) {
    st = backend_error(s, s->api->device_open(s->target, &s->dev),
                       "device_open");
  }
  if (!st) {
    st = backend_error(s, s->api->device->stream_create(s->dev, &s->stream),
                       "stream_create");
  }
  for (size_t i = 0; !st && i < graph->value_count; i++) {
    const wm_value_t *v = &graph->values[i];
    if (v->initializer) {
      st = upload(s, &s->values[i], v->initializer);
      s->values[i].persistent = true;
      if (st) {
        st = wm_status_annotate(st, "uploading initializer \"%s\"", v->name);
      }
    }
  }
  if (st) {
    wm_session_destroy(s);
    return st;
  }
  *out_session = s;
  return NULL;
}

void wm_session_destroy(wm_session_t *s) {
  if (!s) {
    return;
  }
  for (size_t i = 0; s->values && i < s->graph->value_count; i++) {
    release_value(s, &s->values[i]);
  }
  for (size_t i = 0; s->nodes && i < s->graph->node_count; i++) {
    rt_node *rn = &s->nodes[i];
    if (rn->plan) {
      s->api->library->op_plan_destroy(rn->plan);
    }
    for (uint32_t a = 0; rn->string_lens && a < rn->n_attr; a++) {
      free(rn->string_lens[a]);
    }
    free(rn->string_lens);
    free(rn->attrs);
    free(rn->attr_descs);
    free(rn->planned);
  }
  if (s->stream) {
    s->api->device->stream_destroy(s->stream);
  }
  if (s->dev) {
    s->api->device->device_close(s->dev);
  }
  free(s->nodes);
  free(s->values);
  free(s->use_count);
  free(s->order);
  free(s);
}

size_t wm_session_node_count(const wm_session_t *session) {
  return session->graph->node_count;
}

// ------------------------------------------------------------- running

static bool descs_equal(const wm_tensor_desc *a, const wm_tensor_desc *b,
                        size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (a[i].dtype != b[i].dtype || a[i].rank != b[i].rank ||
        memcmp(a[i].dims, b[i].dims, a[i].rank * sizeof(int64_t)) != 0) {
      return false;
    }
  }
  return true;
}

// Plans node |index| for the instance in |op| unless its plan fits.
static wm_status_t ensure_plan(wm_session_t *s, size_t index,
                               const wm_op_desc *op,
                               const wm_tensor_desc *descs) {
  rt_node *rn = &s->nodes[index];
  size_t n = op->n_in + op->n_out;
  if (rn->plan && descs_equal(rn->planned, descs, n)) {
    return NULL;
  }
  if (rn->plan) {
    s->api->library->op_plan_destroy(rn->plan);
    rn->plan = NULL;
  }
  if (!rn->planned) {
    rn->planned = wm_calloc(n + 1, sizeof(wm_tensor_desc));
    if (!rn->planned) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  uint64_t ws = 0;
  WM_RETURN_IF_ERROR(backend_error(
      s, s->api->library->op_plan(s->dev, op, &rn->plan, &ws), "op_plan"));
  if (ws > 0) {
    s->api->library->op_plan_destroy(rn->plan);
    rn->plan = NULL;
    return WM_ERROR(UNIMPLEMENTED,
                    "backend \"%s\" asked for %llu bytes of "
                    "workspace, which sessions do not provide yet",
                    wm_backend_name(s->backend), (unsigned long long)ws);
  }
  memcpy(rn->planned, descs, n * sizeof(wm_tensor_desc));
  return NULL;
}

static void drop_use(wm_session_t *s, int32_t id) {
  rt_value *v = &s->values[id];
  if (--v->uses <= 0 && !v->persistent) {
    release_value(s, v);
  }
}

static wm_status_t run_node(wm_session_t *s, size_t index) {
  const wm_node_t *node = &s->graph->nodes[index];
  rt_node *rn = &s->nodes[index];
  wm_op_ctx_t ctx;
  WM_RETURN_IF_ERROR(wm_op_ctx_init(&ctx, s->graph, index));
  wm_type_t *in_types = (wm_type_t *)ctx.in_types;
  const wm_tensor_t **ins = (const wm_tensor_t **)ctx.in;
  size_t n = (size_t)(ctx.n_in + ctx.n_out) + 1;
  wm_tensor_desc *descs = wm_calloc(n, sizeof(*descs));
  const void **values = wm_calloc(n, sizeof(void *));
  wm_buffer_view *views = wm_calloc(n, sizeof(*views));
  wm_status_t st = NULL;
  if (!descs || !values || !views) {
    st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (int32_t i = 0; !st && i < ctx.n_in; i++) {
    int32_t id = node->inputs[i];
    if (id < 0) {
      continue;
    }
    rt_value *v = &s->values[id];
    if (!v->buf) {
      st = WM_OP_ERROR(&ctx, INTERNAL, "input %d \"%s\" has no value", i,
                       s->graph->values[id].name);
      break;
    }
    wm_shape_t shape = shape_from_desc(&v->desc);
    in_types[i] = wm_type_tensor((wm_dtype_t)v->desc.dtype, &shape);
    ins[i] = v->host;
  }
  if (!st) {
    st = rn->def->infer(&ctx);
  }
  wm_op_desc op;
  if (!st) {
    make_op_desc(s, index, &ctx, descs, values, &op);
    st = ensure_plan(s, index, &op, descs);
  }
  for (int32_t i = 0; !st && i < ctx.n_out; i++) {
    int32_t id = node->outputs[i];
    if (id < 0) {
      continue;
    }
    const wm_type_t *t = &ctx.out_types[i];
    if (!wm_shape_is_known(&t->shape) || !wm_dtype_is_valid(t->dtype)) {
      char buf[128];
      st = WM_OP_ERROR(&ctx, INTERNAL,
                       "output %d has type %s with every input known", i,
                       wm_type_format(t, buf, sizeof(buf)));
      break;
    }
    st = alloc_value(s, &s->values[id], t->dtype, &t->shape);
    s->values[id].uses = s->use_count[id];
  }
  for (int32_t i = 0; !st && i < ctx.n_in + ctx.n_out; i++) {
    bool is_in = i < ctx.n_in;
    int32_t id = is_in ? node->inputs[i] : node->outputs[i - ctx.n_in];
    views[i].struct_size = sizeof(views[i]);
    views[i].desc = descs[i];
    views[i].buffer = id >= 0 ? s->values[id].buf : NULL;
  }
  if (!st) {
    st = backend_error(
        s,
        s->api->library->op_run(s->stream, rn->plan, views, (uint32_t)ctx.n_in,
                                views + ctx.n_in, (uint32_t)ctx.n_out, NULL),
        "op_run");
  }
  for (int32_t i = 0; !st && !s->mappable && i < ctx.n_out; i++) {
    int32_t id = node->outputs[i];
    rt_value *v = &s->values[id];
    size_t bytes = 0;
    if (id >= 0 && wm_shape_numel(&ctx.out_types[i].shape, &bytes) &&
        bytes * wm_dtype_size(ctx.out_types[i].dtype) <= HOST_COPY_LIMIT) {
      st = download(s, v, &v->host);
    }
  }
  for (int32_t i = 0; i < ctx.n_in; i++) {
    if (node->inputs[i] >= 0) {
      drop_use(s, node->inputs[i]);
    }
  }
  for (int32_t i = 0; !st && i < ctx.n_out; i++) {
    int32_t id = node->outputs[i];
    if (id >= 0 && s->values[id].uses <= 0) {
      release_value(s, &s->values[id]);  // produced but never used
    }
  }
  free(descs);
  free(values);
  free(views);
  wm_op_ctx_deinit(&ctx);
  return st;
}

// Checks a bound input against the graph input's declared type.
static wm_status_t check_input(const wm_value_t *v, const wm_tensor_t *t) {
  const wm_type_t *d = &v->type;
  if (d->dtype != WM_DTYPE_UNDEFINED && d->dtype != t->dtype) {
    return WM_ERROR(INVALID_ARGUMENT, "input \"%s\" has type %s, want %s",
                    v->name, wm_dtype_name(t->dtype), wm_dtype_name(d->dtype));
  }
  if (d->shape.rank >= 0) {
    char got[128], want[160];
    bool ok = d->shape.rank == t->shape.rank;
    for (int32_t i = 0; ok && i < d->shape.rank; i++) {
      ok = d->shape.dims[i] < 0 || d->shape.dims[i] == t->shape.dims[i];
    }
    if (!ok) {
      return WM_ERROR(INVALID_ARGUMENT, "input \"%s\" has shape %s, want %s",
                      v->name, wm_shape_format(&t->shape, got, sizeof(got)),
                      wm_type_format(d, want, sizeof(want)));
    }
  }
  return NULL;
}

wm_status_t wm_session_run(wm_session_t *s, const char *const *names,
                           const wm_tensor_t *const *inputs, size_t n_inputs,
                           wm_tensor_t **out_outputs) {
  wm_graph_t *g = s->graph;
  for (size_t i = 0; i < g->output_count; i++) {
    out_outputs[i] = NULL;
  }
  for (size_t i = 0; i < g->value_count; i++) {
    s->values[i].uses = s->use_count[i];
  }
  wm_status_t st = NULL;
  for (size_t i = 0; !st && i < n_inputs; i++) {
    int32_t id = wm_graph_find_value(g, names[i]);
    if (id < 0 || !g->values[id].is_input) {
      st = WM_ERROR(INVALID_ARGUMENT, "the model has no input named \"%s\"",
                    names[i]);
      break;
    }
    rt_value *v = &s->values[id];
    st = check_input(&g->values[id], inputs[i]);
    if (!st && v->persistent) {
      release_value(s, v);  // the caller overrides a default initializer
      v->persistent = false;
    }
    if (!st && v->buf) {
      st = WM_ERROR(INVALID_ARGUMENT, "input \"%s\" is given twice", names[i]);
    }
    if (!st) {
      st = upload(s, v, inputs[i]);
    }
  }
  for (size_t i = 0; !st && i < g->input_count; i++) {
    int32_t id = g->inputs[i];
    if (!s->values[id].buf) {
      st = WM_ERROR(INVALID_ARGUMENT, "input \"%s\" is not given",
                    g->values[id].name);
    }
  }
  for (size_t k = 0; !st && k < g->node_count; k++) {
    st = run_node(s, (size_t)s->order[k]);
  }
  if (!st) {
    st =
        backend_error(s, s->api->device->stream_sync(s->stream), "stream_sync");
  }
  for (size_t i = 0; !st && i < g->output_count; i++) {
    const rt_value *v = &s->values[g->outputs[i]];
    if (!v->buf) {
      st = WM_ERROR(INTERNAL, "output \"%s\" was not computed",
                    g->values[g->outputs[i]].name);
      break;
    }
    st = download(s, v, &out_outputs[i]);
  }
  // Free everything but initializers, whatever happened, and restore
  // initializers that a caller's input replaced for this run.
  for (size_t i = 0; i < g->value_count; i++) {
    rt_value *v = &s->values[i];
    if (v->persistent) {
      continue;
    }
    release_value(s, v);
    if (g->values[i].initializer) {
      wm_status_t us = upload(s, v, g->values[i].initializer);
      v->persistent = us == NULL;
      if (us && !st) {
        st = us;
      } else {
        wm_status_free(us);
      }
    }
  }
  if (st) {
    for (size_t i = 0; i < g->output_count; i++) {
      wm_tensor_destroy(out_outputs[i]);
      out_outputs[i] = NULL;
    }
  }
  return st;
}
