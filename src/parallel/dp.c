// The data-parallel partition (parallel.h): the batch inputs' shapes
// divided, the gradients of a training step averaged in one bucket, the
// outputs of an inference gathered. Nodes keep their order and names.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/parallel.h"

static const char *metadata(const wm_graph_t *g, const char *key) {
  for (size_t i = 0; i < g->metadata_count; i++) {
    if (strcmp(g->metadata[i].key, key) == 0) {
      return g->metadata[i].value;
    }
  }
  return NULL;
}

bool wm_dp_is_training(const wm_graph_t *graph) {
  return metadata(graph, "wmap.training.gradients") != NULL;
}

typedef struct dp {
  const wm_graph_t *g;
  wm_graph_t *out;
  int32_t n, r;
  bool *is_grad;  // per value of g
  wm_tp_summary_t sum;
} dp_t;

static const char *local_name(dp_t *d, int32_t v, char *buf, size_t cap) {
  const char *name = d->g->values[v].name;
  if (d->is_grad[v]) {
    snprintf(buf, cap, "%s@mean", name);
    return wm_graph_intern(d->out, buf);
  }
  return name;
}

static wm_status_t add_ints(dp_t *d, const char *name, size_t count,
                            const int64_t *v) {
  int64_t dims[1] = {(int64_t)count};
  wm_shape_t s = wm_shape_make(1, dims);
  wm_tensor_t *x = NULL;
  WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_INT64, &s, &x));
  memcpy(x->data, v, count * sizeof(int64_t));
  return wm_graph_add_initializer(d->out, name, x, NULL);
}

// Marks the gradients the metadata lists; NOT_FOUND names one that is not
// a value of the graph.
static wm_status_t find_grads(dp_t *d, int32_t *ids, size_t *count) {
  const char *list = metadata(d->g, "wmap.training.gradients");
  *count = 0;
  if (!list) {
    return NULL;
  }
  char buf[256];
  for (const char *p = list; *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == 0 || len >= sizeof(buf)) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "metadata wmap.training.gradients: a bad entry in "
                      "\"%.80s\"",
                      list);
    }
    memcpy(buf, p, len);
    buf[len] = '\0';
    int32_t v = wm_graph_find_value(d->g, buf);
    if (v < 0) {
      return WM_ERROR(NOT_FOUND,
                      "metadata wmap.training.gradients names \"%s\", which "
                      "is not a value of the graph",
                      buf);
    }
    if (!d->is_grad[v] && *count < d->g->value_count) {
      d->is_grad[v] = true;
      ids[(*count)++] = v;
    }
    p = end ? end + 1 : p + len;
  }
  return NULL;
}

// Flatten, concatenate, average, split, reshape back: <g>@mean.
static wm_status_t bucket(dp_t *d, const int32_t *ids, size_t count) {
  if (count == 0) {
    return NULL;
  }
  const wm_graph_t *g = d->g;
  const char **flat = wm_calloc(count, sizeof(*flat));
  const char **back = wm_calloc(count, sizeof(*back));
  int64_t *sizes = wm_calloc(count, sizeof(*sizes));
  wm_status_t s = flat && back && sizes
                      ? NULL
                      : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  static const int64_t minus_one[] = {-1};
  if (!s) {
    s = add_ints(d, "train.bucket/flat", 1, minus_one);
  }
  char buf[512];
  uint64_t total = 0;
  for (size_t i = 0; !s && i < count; i++) {
    const wm_value_t *x = &g->values[ids[i]];
    size_t numel = 0;
    if (!wm_shape_numel(&x->type.shape, &numel) ||
        x->type.dtype != WM_DTYPE_FLOAT) {
      s = WM_ERROR(FAILED_PRECONDITION,
                   "gradient \"%s\" needs a known shape and float32 to be "
                   "averaged",
                   x->name);
      break;
    }
    sizes[i] = (int64_t)numel;
    total += numel;
    snprintf(buf, sizeof(buf), "%s@flat", x->name);
    flat[i] = wm_graph_intern(d->out, buf);
    const char *in[] = {x->name, "train.bucket/flat"};
    s = wm_graph_add_node(d->out, "Reshape", "", flat[i], in, 2, &flat[i], 1,
                          NULL);
  }
  int32_t id = -1;
  const char *cat = "train.bucket", *avg = "train.bucket@mean";
  if (!s) {
    s = wm_graph_add_node(d->out, "Concat", "", cat, flat, (int32_t)count, &cat,
                          1, &id);
  }
  if (!s) {
    s = wm_graph_add_attr_int(d->out, id, "axis", 0);
  }
  if (!s) {
    s = wm_graph_add_node(d->out, "AllReduce", "wmap", "train.bucket/allreduce",
                          &cat, 1, &avg, 1, &id);
  }
  if (!s) {
    s = wm_graph_add_attr_int(d->out, id, "ranks", d->n);
  }
  if (!s) {
    s = wm_graph_add_attr_string(d->out, id, "reduction", "mean");
  }
  if (!s) {
    s = add_ints(d, "train.bucket/sizes", count, sizes);
  }
  for (size_t i = 0; !s && i < count; i++) {
    snprintf(buf, sizeof(buf), "%s@flatmean", g->values[ids[i]].name);
    back[i] = wm_graph_intern(d->out, buf);
  }
  if (!s) {
    const char *in[] = {avg, "train.bucket/sizes"};
    s = wm_graph_add_node(d->out, "Split", "", "train.bucket/split", in, 2,
                          back, (int32_t)count, &id);
  }
  if (!s) {
    s = wm_graph_add_attr_int(d->out, id, "axis", 0);
  }
  for (size_t i = 0; !s && i < count; i++) {
    const wm_value_t *x = &g->values[ids[i]];
    snprintf(buf, sizeof(buf), "%s@shape", x->name);
    const char *shape = wm_graph_intern(d->out, buf);
    s = add_ints(d, shape, (size_t)x->type.shape.rank, x->type.shape.dims);
    char nb[512];
    const char *out = local_name(d, ids[i], nb, sizeof(nb));
    const char *in[] = {back[i], shape};
    if (!s) {
      s = wm_graph_add_node(d->out, "Reshape", "", out, in, 2, &out, 1, NULL);
    }
  }
  free(flat);
  free(back);
  free(sizes);
  if (!s) {
    d->sum.all_reduce_calls++;
    d->sum.all_reduce_bytes += total * sizeof(float);
  }
  return s;
}

static wm_status_t partition(dp_t *d) {
  const wm_graph_t *g = d->g;
  bool training = wm_dp_is_training(g);
  for (size_t i = 0; i < g->opset_count; i++) {
    WM_RETURN_IF_ERROR(
        wm_graph_set_opset(d->out, g->opsets[i].domain, g->opsets[i].version));
  }
  WM_RETURN_IF_ERROR(wm_graph_set_opset(d->out, "wmap", 1));
  WM_RETURN_IF_ERROR(wm_graph_add_metadata(d->out, "wmap.parallel", "dp"));
  for (size_t i = 0; i < g->metadata_count; i++) {
    WM_RETURN_IF_ERROR(wm_graph_add_metadata(d->out, g->metadata[i].key,
                                             g->metadata[i].value));
  }
  // Inputs: the batch ones with their share of dim 0.
  for (size_t i = 0; i < g->input_count; i++) {
    const wm_value_t *x = &g->values[g->inputs[i]];
    wm_type_t type = x->type;
    if (!x->initializer) {
      int64_t b = type.shape.rank >= 1 ? type.shape.dims[0] : -1;
      if (type.shape.rank < 1 || (b >= 0 && b % d->n != 0)) {
        return WM_ERROR(INVALID_ARGUMENT,
                        "data parallelism over %d ranks: input \"%s\" has "
                        "batch dim %lld (rank %d), which does not divide",
                        d->n, x->name, (long long)b, type.shape.rank);
      }
      if (b >= 0) {
        type.shape.dims[0] = b / d->n;
      }
    }
    WM_RETURN_IF_ERROR(wm_graph_add_input(d->out, x->name, &type, NULL));
  }
  for (size_t v = 0; v < g->value_count; v++) {
    const wm_value_t *x = &g->values[v];
    if (x->initializer) {
      wm_tensor_t *copy = NULL;
      WM_RETURN_IF_ERROR(wm_tensor_clone(x->initializer, &copy));
      WM_RETURN_IF_ERROR(wm_graph_add_initializer(d->out, x->name, copy, NULL));
    }
  }
  int32_t *grads = wm_calloc(g->value_count + 1, sizeof(int32_t));
  if (!grads) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  size_t n_grads = 0;
  wm_status_t s = find_grads(d, grads, &n_grads);
  // Nodes as they are, reading the averaged gradients.
  for (size_t i = 0; !s && i < g->node_count; i++) {
    const wm_node_t *n = &g->nodes[i];
    const char *ins[64], *outs[64];
    char bufs[64][160];
    if (n->input_count > 64 || n->output_count > 64) {
      s = WM_ERROR(UNIMPLEMENTED, "node \"%s\" has over 64 inputs or outputs",
                   n->name);
      break;
    }
    for (int32_t k = 0; k < n->input_count; k++) {
      ins[k] = n->inputs[k] >= 0
                   ? local_name(d, n->inputs[k], bufs[k], sizeof(bufs[k]))
                   : "";
    }
    for (int32_t k = 0; k < n->output_count; k++) {
      int32_t v = n->outputs[k];
      bool gathered = !training && v >= 0 && g->values[v].is_output;
      if (gathered) {
        snprintf(bufs[k], sizeof(bufs[k]), "%s@dp", g->values[v].name);
      }
      outs[k] = v < 0      ? ""
                : gathered ? wm_graph_intern(d->out, bufs[k])
                           : g->values[v].name;
    }
    int32_t id = -1;
    s = wm_graph_add_node(d->out, n->op_type, n->domain, n->name, ins,
                          n->input_count, outs, n->output_count, &id);
    if (!s) {
      s = wm_graph_copy_attrs(d->out, id, n);
    }
  }
  if (!s) {
    s = bucket(d, grads, n_grads);
  }
  free(grads);
  // Outputs: an inference's gathered along the batch axis.
  for (size_t i = 0; !s && i < g->output_count; i++) {
    const wm_value_t *x = &g->values[g->outputs[i]];
    if (!training && x->producer >= 0) {
      char buf[512];
      snprintf(buf, sizeof(buf), "%s@dp", x->name);
      const char *in = wm_graph_intern(d->out, buf);
      snprintf(buf, sizeof(buf), "%s/allgather", x->name);
      int32_t id = -1;
      s = wm_graph_add_node(d->out, "AllGather", "wmap", buf, &in, 1, &x->name,
                            1, &id);
      if (!s) {
        s = wm_graph_add_attr_int(d->out, id, "axis", 0);
      }
      if (!s) {
        s = wm_graph_add_attr_int(d->out, id, "ranks", d->n);
      }
      size_t numel = 0;
      if (!s && wm_shape_numel(&x->type.shape, &numel)) {
        d->sum.all_gather_bytes +=
            (uint64_t)numel * wm_dtype_size(x->type.dtype);
      }
      d->sum.all_gather_calls++;
    }
    if (!s) {
      s = wm_graph_add_output(d->out, x->name, NULL, NULL);
    }
  }
  return s;
}

wm_status_t wm_dp_partition(const wm_graph_t *graph, int32_t dp, int32_t rank,
                            wm_graph_t **out_local,
                            wm_tp_summary_t *out_summary) {
  *out_local = NULL;
  if (dp < 1 || dp > 4096 || rank < 0 || rank >= dp) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "data parallelism: rank %d of dp=%d is out of range (dp "
                    "1..4096)",
                    rank, dp);
  }
  dp_t d = {.g = graph, .n = dp, .r = rank};
  d.is_grad = wm_calloc(graph->value_count + 1, sizeof(bool));
  wm_status_t s =
      d.is_grad ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  if (!s) {
    s = wm_graph_create(graph->name ? graph->name : "partition", NULL, &d.out);
  }
  if (!s) {
    s = partition(&d);
  }
  free(d.is_grad);
  if (s) {
    wm_graph_destroy(d.out);
    return wm_status_annotate(s, "data-parallel partition (rank %d of %d)",
                              rank, dp);
  }
  *out_local = d.out;
  if (out_summary) {
    *out_summary = d.sum;
  }
  return NULL;
}
