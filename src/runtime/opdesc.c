// The ABI view of one graph node and the op_query call.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opdesc.h"

wm_tensor_desc wm_tensor_desc_from_type(wm_dtype_t dtype,
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
    // A shape too large to allocate still gets a description (saturated
    // strides); allocation refuses it later with a message.
    if (__builtin_mul_overflow(stride, shape->dims[i] > 0 ? shape->dims[i] : 1,
                               &stride)) {
      stride = INT64_MAX;
    }
  }
  return d;
}

wm_status_t wm_node_attrs_init(wm_node_attrs_t *out, const wm_node_t *node) {
  memset(out, 0, sizeof(*out));
  out->n_attr = (uint32_t)node->attr_count;
  size_t n = (size_t)node->attr_count;
  out->attrs = wm_calloc(n + 1, sizeof(wm_op_attr));
  out->attr_descs = wm_calloc(n + 1, sizeof(wm_tensor_desc));
  out->string_lens = wm_calloc(n + 1, sizeof(uint64_t *));
  if (!out->attrs || !out->attr_descs || !out->string_lens) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    const wm_attr_t *a = &node->attrs[i];
    wm_op_attr *o = &out->attrs[i];
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
      out->string_lens[i] = wm_calloc(a->count + 1, sizeof(uint64_t));
      if (!out->string_lens[i]) {
        return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
      }
      for (size_t k = 0; k < a->count; k++) {
        out->string_lens[i][k] = a->string_lens[k];
      }
      o->string_lens = out->string_lens[i];
    }
    if (a->t) {
      out->attr_descs[i] = wm_tensor_desc_from_type(a->t->dtype, &a->t->shape);
      o->tensor = &out->attr_descs[i];
      o->tensor_data = a->t->data;
    }
    o->graph = a->g ? (const void *)a->g : (const void *)a->graphs;
  }
  return NULL;
}

void wm_node_attrs_deinit(wm_node_attrs_t *attrs) {
  for (uint32_t a = 0; attrs->string_lens && a < attrs->n_attr; a++) {
    free(attrs->string_lens[a]);
  }
  free(attrs->string_lens);
  free(attrs->attrs);
  free(attrs->attr_descs);
  memset(attrs, 0, sizeof(*attrs));
}

bool wm_type_is_concrete(const wm_type_t *t) {
  return t->kind == WM_TYPE_TENSOR && wm_dtype_is_valid(t->dtype) &&
         t->dtype != WM_DTYPE_UNDEFINED && wm_shape_is_known(&t->shape);
}

bool wm_op_ctx_is_concrete(const wm_op_ctx_t *ctx) {
  for (int32_t i = 0; i < ctx->n_in; i++) {
    if (wm_op_has_input(ctx, i) && !wm_type_is_concrete(&ctx->in_types[i])) {
      return false;
    }
  }
  for (int32_t i = 0; i < ctx->n_out; i++) {
    if (wm_op_has_output(ctx, i) && !wm_type_is_concrete(&ctx->out_types[i])) {
      return false;
    }
  }
  return true;
}

// The ABI view of the resolved parameters in |attrs|.
static void params_view(wm_node_attrs_t *attrs) {
  const wm_op_params_t *p = &attrs->params;
  for (int32_t k = 0; k < p->count; k++) {
    const wm_op_param_t *e = &p->p[k];
    wm_op_attr *o = &attrs->param_attrs[k];
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->name = e->name;
    o->type = (uint32_t)e->type;
    o->i = e->i;
    o->f = e->f;
    o->s = e->s;
    o->s_len = e->s ? strlen(e->s) : 0;
    if (e->type == WM_ATTR_INTS) {
      o->count = (uint64_t)e->count;
      o->ints = p->ints + e->at;
    } else if (e->type == WM_ATTR_FLOATS) {
      o->count = (uint64_t)e->count;
      o->floats = p->floats + e->at;
    } else if (e->type == WM_ATTR_STRINGS) {
      o->count = (uint64_t)e->count;
      o->strings = p->strings + e->at;
      o->string_lens = attrs->param_lens + e->at;
      for (int32_t i = 0; i < e->count; i++) {
        attrs->param_lens[e->at + i] = strlen(p->strings[e->at + i]);
      }
    } else if (e->type == WM_ATTR_TENSOR) {
      wm_shape_t shape = {.rank = 1, .dims = {e->count}};
      attrs->param_descs[k] = wm_tensor_desc_from_type(WM_DTYPE_DOUBLE, &shape);
      o->tensor = &attrs->param_descs[k];
      o->tensor_data = p->reals + e->at;
    }
  }
}

wm_status_t wm_node_op_desc(const wm_node_t *node, const wm_op_def_t *def,
                            wm_op_ctx_t *ctx, wm_node_attrs_t *attrs,
                            wm_tensor_desc *descs, const void **values,
                            wm_op_desc *op) {
  for (int32_t i = 0; i < ctx->n_in; i++) {
    memset(&descs[i], 0, sizeof(descs[i]));
    descs[i].struct_size = sizeof(descs[i]);
    values[i] = NULL;
    if (wm_op_has_input(ctx, i)) {
      descs[i] = wm_tensor_desc_from_type(ctx->in_types[i].dtype,
                                          &ctx->in_types[i].shape);
      values[i] = ctx->in[i] ? ctx->in[i]->data : NULL;
    }
  }
  for (int32_t i = 0; i < ctx->n_out; i++) {
    wm_tensor_desc *d = &descs[ctx->n_in + i];
    memset(d, 0, sizeof(*d));
    d->struct_size = sizeof(*d);
    if (wm_op_has_output(ctx, i)) {
      *d = wm_tensor_desc_from_type(ctx->out_types[i].dtype,
                                    &ctx->out_types[i].shape);
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
  op->n_attr = attrs->n_attr;
  op->attrs = attrs->attrs;
  memset(&attrs->params, 0, sizeof(attrs->params));
  if (!wm_op_ctx_is_concrete(ctx)) {
    return NULL;
  }
  if (!def) {
    WM_RETURN_IF_ERROR(wm_op_find_def(ctx, &def));
  }
  WM_RETURN_IF_ERROR(wm_op_resolve(def, ctx, &attrs->params));
  if (!attrs->params.pending) {
    params_view(attrs);
    op->n_param = (uint32_t)attrs->params.count;
    op->params = attrs->param_attrs;
  }
  return NULL;
}

wm_status_t wm_backend_op_query(const wm_backend_t *backend,
                                const wm_op_desc *op, wm_op_support *out) {
  const wm_plugin_api *api = wm_backend_api(backend);
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  if (!api->library) {
    out->reason = WM_WHY_OP;
    out->detail = "the backend has no library tier";
    return NULL;
  }
  WM_RETURN_IF_ERROR(wm_backend_error(
      backend, api->library->op_query(wm_backend_target(backend, 0), op, out),
      "op_query"));
  if (out->level > WM_SUPPORT_PREFERRED) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "backend \"%s\": op_query answered level %u for %s",
                    wm_backend_name(backend), out->level, op->op_type);
  }
  return NULL;
}
