// The reference backend: host memory, synchronous streams, and the
// library tier over the operator registry's reference kernels.
#include "ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host_tier.h"
#include "ops/ops.h"

struct wm_device {
  const wm_target_desc *target;  // the one host target
};

struct wm_op_plan {
  wm_graph_t *graph;       // one node with typed inputs and attributes
  const wm_op_def_t *def;  // registry entry serving it
};

// Converts (and frees) a host status into a plugin error.
static wm_error *from_status(wm_status_t s) {
  if (!s) {
    return NULL;
  }
  wm_error *e = wm_host_error_create((int32_t)wm_status_code(s), "%s",
                                     wm_status_message(s));
  wm_status_free(s);
  return e;
}

// ------------------------------------------------------------ metadata

static wm_error *get_info(wm_plugin_info *out) {
  uint32_t size = out->struct_size;
  memset(out, 0, size < sizeof(*out) ? size : sizeof(*out));
  out->struct_size = size;
  out->name = "ref";
  if (WM_HAS(out, wm_plugin_info, sanitizer)) {
    out->vendor = "wmap";
    out->version = "0.1.0";
    out->sanitizer = WM_SANITIZER_NONE;
  }
  return NULL;
}

static uint32_t probe_score(void) {
  return 1;
}

static wm_target_desc host_target;
static const wm_target_desc *const targets[] = {&host_target};

static wm_error *enumerate(const wm_target_desc *const **out_targets,
                           uint32_t *out_count) {
  if (!host_target.struct_size) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    wm_target_desc t = {
        .struct_size = sizeof(wm_target_desc),
        .name = "host CPU (reference loops)",
        .vendor = "wmap",
        .kind = WM_TARGET_CPU,
        .compute_units = cores > 0 ? (uint32_t)cores : 1,
        .dtype_mask = ((uint64_t)1 << WM_DTYPE_COUNT) - 2,
    };
    host_target = t;
  }
  *out_targets = targets;
  *out_count = 1;
  return NULL;
}

static wm_error *device_open(const wm_target_desc *target, wm_device **out) {
  wm_device *d = malloc(sizeof(*d));
  if (!d) {
    return wm_host_error_oom();
  }
  d->target = target;
  *out = d;
  return NULL;
}

static void device_close(wm_device *dev) {
  free(dev);
}

// --------------------------------------------------------- device tier

static const wm_device_tier device_tier = {WM_HOST_DEVICE_TIER_FIELDS,
                                           .device_close = device_close};

// -------------------------------------------------------- library tier

static wm_shape_t desc_shape(const wm_tensor_desc *d) {
  wm_shape_t s;
  memset(&s, 0, sizeof(s));
  s.rank = (int32_t)(d->rank <= WM_MAX_RANK ? d->rank : WM_MAX_RANK);
  for (int32_t i = 0; i < s.rank; i++) {
    s.dims[i] = d->dims[i];
  }
  return s;
}

static bool has_graph_attr(const wm_op_desc *op) {
  for (uint32_t i = 0; i < op->n_attr; i++) {
    if (op->attrs[i].type == WM_ATTR_GRAPH ||
        op->attrs[i].type == WM_ATTR_GRAPHS) {
      return true;
    }
  }
  return false;
}

static wm_error *op_query(const wm_target_desc *target, const wm_op_desc *op,
                          wm_op_support *out) {
  (void)target;
  uint32_t size = out->struct_size;
  memset(out, 0, size < sizeof(*out) ? size : sizeof(*out));
  out->struct_size = size;
  out->rel_cost = -1.0f;
  const wm_op_def_t *def =
      wm_ops_find(op->domain, op->op_type, (int64_t)op->opset);
  if (!def) {
    bool any = wm_ops_find(op->domain, op->op_type, INT64_MAX) != NULL;
    out->reason = any ? WM_WHY_OPSET : WM_WHY_OP;
    out->detail = any ? "no reference kernel for this opset version"
                      : "no reference kernel for this operator";
    return NULL;
  }
  if (has_graph_attr(op) || wm_op_runs_in_session(def)) {
    out->reason = WM_WHY_SUBGRAPH;
    out->detail = "control flow and sequences are run by the session";
    return NULL;
  }
  if (op->n_in > 0 && op->in[0].dtype != 0 && def->types &&
      (op->in[0].dtype >= 32 || !(def->types & (1u << op->in[0].dtype)))) {
    out->reason = WM_WHY_DTYPE;
    out->detail = "input 0 has a dtype the operator does not accept";
    return NULL;
  }
  out->level = WM_SUPPORT_SUPPORTED;
  out->impl = WM_IMPL_NATIVE_KERNEL;
  return NULL;
}

// Copies one ABI attribute into node |node| of |g|.
static wm_status_t add_attr(wm_graph_t *g, int32_t node, const wm_op_attr *a) {
  if (a->type == WM_ATTR_TENSOR) {
    if (!a->tensor || (!a->tensor_data && a->tensor->dtype != 0)) {
      return WM_ERROR(INVALID_ARGUMENT, "attribute \"%s\" has no tensor",
                      a->name);
    }
    wm_shape_t shape = desc_shape(a->tensor);
    wm_tensor_t *view, *copy;
    WM_RETURN_IF_ERROR(wm_tensor_wrap((wm_dtype_t)a->tensor->dtype, &shape,
                                      (void *)a->tensor_data, &view));
    wm_status_t s = wm_tensor_clone(view, &copy);
    wm_tensor_destroy(view);
    WM_RETURN_IF_ERROR(s);
    return wm_graph_add_attr_tensor(g, node, a->name, copy);
  }
  wm_attr_t attr = {
      .name = a->name,
      .type = (wm_attr_type_t)a->type,
      .f = a->f,
      .i = a->i,
      .s = a->s,
      .s_len = (size_t)a->s_len,
      .count = (size_t)a->count,
      .floats = (float *)a->floats,
      .ints = (int64_t *)a->ints,
      .strings = (const char **)a->strings,
      .string_lens = (size_t *)a->string_lens,
  };
  if (a->type == WM_ATTR_TENSORS) {
    return WM_ERROR(UNIMPLEMENTED,
                    "attribute \"%s\": tensor lists are not "
                    "passed to the reference backend",
                    a->name);
  }
  return wm_graph_add_attr(g, node, &attr);
}

static wm_status_t build_plan(const wm_op_desc *op, wm_op_plan *plan) {
  WM_RETURN_IF_ERROR(wm_graph_create("op", NULL, &plan->graph));
  wm_graph_t *g = plan->graph;
  WM_RETURN_IF_ERROR(wm_graph_set_opset(g, op->domain, (int64_t)op->opset));
  const char **in = wm_calloc(op->n_in + 1, sizeof(char *));
  const char **out = wm_calloc(op->n_out + 1, sizeof(char *));
  char *store = wm_calloc((size_t)(op->n_in + op->n_out) + 1, 16);
  wm_status_t s = NULL;
  if (!in || !out || !store) {
    s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory planning");
  }
  for (uint32_t i = 0; !s && i < op->n_in; i++) {
    char *name = store + 16 * i;
    in[i] = "";
    if (op->in[i].dtype == 0) {
      continue;
    }
    snprintf(name, 16, "in%u", i);
    wm_shape_t shape = desc_shape(&op->in[i]);
    wm_type_t t = wm_type_tensor((wm_dtype_t)op->in[i].dtype, &shape);
    in[i] = name;
    s = wm_graph_add_input(g, name, &t, NULL);
  }
  for (uint32_t i = 0; !s && i < op->n_out; i++) {
    char *name = store + 16 * (op->n_in + i);
    out[i] = "";
    if (op->out[i].dtype != 0) {
      snprintf(name, 16, "out%u", i);
      out[i] = name;
    }
  }
  int32_t node = 0;
  if (!s) {
    s = wm_graph_add_node(g, op->op_type, op->domain, op->name, in,
                          (int32_t)op->n_in, out, (int32_t)op->n_out, &node);
  }
  for (uint32_t i = 0; !s && i < op->n_attr; i++) {
    s = add_attr(g, node, &op->attrs[i]);
  }
  free(in);
  free(out);
  free(store);
  return s;
}

static wm_error *op_plan(wm_device *dev, const wm_op_desc *op,
                         wm_op_plan **out_plan, uint64_t *out_ws) {
  (void)dev;
  *out_plan = NULL;
  *out_ws = 0;
  wm_op_plan *plan = calloc(1, sizeof(*plan));
  if (!plan) {
    return wm_host_error_oom();
  }
  plan->def = wm_ops_find(op->domain, op->op_type, (int64_t)op->opset);
  if (!plan->def) {
    free(plan);
    return wm_host_error_create(WM_ERR_UNIMPLEMENTED,
                                "no reference kernel for %s at opset %llu",
                                op->op_type, (unsigned long long)op->opset);
  }
  wm_status_t s = build_plan(op, plan);
  if (s) {
    wm_graph_destroy(plan->graph);
    free(plan);
    return from_status(s);
  }
  *out_plan = plan;
  return NULL;
}

static void op_plan_destroy(wm_op_plan *plan) {
  if (plan) {
    wm_graph_destroy(plan->graph);
    free(plan);
  }
}

// Wraps a buffer view as a borrowed host tensor (NULL view -> NULL).
static wm_status_t wrap_view(const wm_buffer_view *v, wm_tensor_t **out) {
  *out = NULL;
  if (!v->buffer || v->desc.dtype == 0) {
    return NULL;
  }
  wm_shape_t shape = desc_shape(&v->desc);
  WM_RETURN_IF_ERROR(wm_tensor_wrap((wm_dtype_t)v->desc.dtype, &shape,
                                    (char *)v->buffer->data + v->offset, out));
  if (v->offset > v->buffer->size ||
      (*out)->nbytes > v->buffer->size - v->offset) {
    wm_tensor_destroy(*out);
    *out = NULL;
    return WM_ERROR(OUT_OF_RANGE,
                    "tensor of %zu bytes does not fit its "
                    "buffer",
                    (size_t)v->buffer->size);
  }
  return NULL;
}

static wm_error *op_run(wm_stream *stream, wm_op_plan *plan,
                        const wm_buffer_view *in, uint32_t n_in,
                        const wm_buffer_view *out, uint32_t n_out,
                        const wm_buffer_view *workspace) {
  (void)stream;
  (void)workspace;
  const wm_node_t *node = &plan->graph->nodes[0];
  if ((int32_t)n_in != node->input_count ||
      (int32_t)n_out != node->output_count) {
    return wm_host_error_create(
        WM_ERR_INVALID_ARGUMENT,
        "op_run got %u inputs and %u outputs, planned %d and "
        "%d",
        n_in, n_out, node->input_count, node->output_count);
  }
  wm_op_ctx_t ctx;
  wm_status_t s = wm_op_ctx_init(&ctx, plan->graph, 0);
  if (s) {
    return from_status(s);
  }
  wm_type_t *in_types = (wm_type_t *)ctx.in_types;
  const wm_tensor_t **ins = (const wm_tensor_t **)ctx.in;
  for (uint32_t i = 0; !s && i < n_in; i++) {
    wm_tensor_t *t;
    s = wrap_view(&in[i], &t);
    ins[i] = t;
    if (t) {
      in_types[i] = wm_type_tensor(t->dtype, &t->shape);
    }
  }
  for (uint32_t i = 0; !s && i < n_out; i++) {
    s = wrap_view(&out[i], &ctx.out[i]);
    if (ctx.out[i]) {
      ctx.out_types[i] = wm_type_tensor(ctx.out[i]->dtype, &ctx.out[i]->shape);
    }
  }
  if (!s) {
    s = plan->def->run(&ctx);
  }
  for (uint32_t i = 0; i < n_in; i++) {
    wm_tensor_destroy((wm_tensor_t *)ins[i]);
  }
  for (uint32_t i = 0; i < n_out; i++) {
    wm_tensor_destroy(ctx.out[i]);
  }
  wm_op_ctx_deinit(&ctx);
  return from_status(s);
}

static const wm_library_tier library_tier = {
    .struct_size = sizeof(wm_library_tier),
    .op_query = op_query,
    .op_plan = op_plan,
    .op_run = op_run,
    .op_plan_destroy = op_plan_destroy,
};

static wm_plugin_api api_table = {
    .struct_size = sizeof(wm_plugin_api),
    .abi_major = WM_ABI_MAJOR,
    .abi_minor = WM_ABI_MINOR,
    .get_info = get_info,
    .probe_score = probe_score,
    .enumerate = enumerate,
    .device_open = device_open,
    WM_HOST_ERROR_FIELDS,
    .device = &device_tier,
    .library = &library_tier,
};

wm_error *wm_ref_plugin_query(uint32_t host_major, uint32_t host_max_minor,
                              const wm_host_api *host,
                              const wm_plugin_api **out_api) {
  (void)host;
  *out_api = &api_table;
  // The table is static: negotiation answers the lower minor.
  return wm_host_negotiate("ref", host_major, host_max_minor, &api_table);
}
