// Control flow run by the session: If, Loop and Scan (both forms) through
// nested sessions over their subgraphs on the same backends, fed the
// outer values their bodies read, and the nested-run helpers SequenceMap
// and FlexAttention share.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// True when value |id| of |g| is defined there (not read from outside).
static bool defined_in(const wm_graph_t *g, int32_t id) {
  const wm_value_t *v = &g->values[id];
  return v->producer >= 0 || v->initializer || v->is_input;
}

wm_status_t rt_sub_add(rt_sub_inputs_t *in, const char *name, wm_item_t item,
                       bool owned) {
  if (in->n == in->cap) {
    size_t cap = in->cap ? 2 * in->cap : 8;
    const char **names = wm_realloc(in->names, cap * sizeof(*names));
    if (names) {
      in->names = names;
    }
    wm_item_t *items = wm_realloc(in->items, cap * sizeof(*items));
    if (items) {
      in->items = items;
    }
    bool *ow = wm_realloc(in->owned, cap * sizeof(*ow));
    if (ow) {
      in->owned = ow;
    }
    if (!names || !items || !ow) {
      if (owned) {
        wm_item_deinit(&item);
      }
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
    in->cap = cap;
  }
  in->names[in->n] = name;
  in->items[in->n] = item;
  in->owned[in->n++] = owned;
  return NULL;
}

wm_status_t rt_sub_add_tensor(rt_sub_inputs_t *in, const char *name,
                              wm_tensor_t *t, bool owned) {
  return rt_sub_add(in, name, wm_item_tensor_take(t), owned);
}

void rt_sub_truncate(rt_sub_inputs_t *in, size_t n) {
  while (in->n > n) {
    in->n--;
    if (in->owned[in->n]) {
      wm_item_deinit(&in->items[in->n]);
    }
  }
}

void rt_sub_deinit(rt_sub_inputs_t *in) {
  rt_sub_truncate(in, 0);
  free(in->names);
  free(in->items);
  free(in->owned);
}

// Adds the values |g| reads from this session's graph.
wm_status_t rt_sub_add_outer(wm_session_t *s, const wm_graph_t *g,
                             rt_sub_inputs_t *in) {
  for (size_t v = 0; v < g->value_count; v++) {
    if (!g->values[v].is_outer) {
      continue;
    }
    // Defined here, or (a subgraph nested deeper) in an enclosing run.
    wm_session_t *at = s;
    int32_t id = wm_graph_find_value(at->graph, g->values[v].name);
    while (at->outer && (id < 0 || !defined_in(at->graph, id))) {
      at = at->outer;
      id = wm_graph_find_value(at->graph, g->values[v].name);
    }
    if (id < 0) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "subgraph \"%s\" reads \"%s\", which no enclosing "
                      "graph defines",
                      g->name ? g->name : "", g->values[v].name);
    }
    wm_item_t item;
    bool owned;
    WM_RETURN_IF_ERROR(rt_host_item(at, id, &item, &owned));
    WM_RETURN_IF_ERROR(rt_sub_add(in, g->values[v].name, item, owned));
  }
  return NULL;
}

// The nested session of subgraph attribute |name| (created on first use
// with this session's backends), cached in rn->sub[k].
wm_status_t rt_sub_session(wm_session_t *s, rt_node_t *rn,
                           const wm_node_t *node, const char *name, int k,
                           wm_session_t **out) {
  const wm_attr_t *a = wm_node_attr(node, name);
  if (!a || !a->g) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (%s): attribute \"%s\" (a graph) is "
                    "required",
                    rn->label, node->op_type, name);
  }
  if (!rn->sub[k]) {
    wm_status_t st = wm_session_create_placed(a->g, &s->options, &rn->sub[k]);
    if (st) {
      return wm_status_annotate(st, "node \"%s\" (%s), subgraph %s", rn->label,
                                node->op_type, name);
    }
  }
  *out = rn->sub[k];
  return NULL;
}

// Runs |sub| on |in|; its outputs go to |outs| (graph output count).
wm_status_t rt_sub_run(wm_session_t *s, wm_session_t *sub, rt_sub_inputs_t *in,
                       wm_item_t *outs) {
  sub->outer = s;
  wm_status_t st = rt_session_run_nested(sub, in, outs);
  sub->outer = NULL;
  return st;
}

// Takes the tensor of body output |item| (a sequence or optional is an
// error naming |what|).
wm_status_t rt_take_tensor(const rt_node_t *rn, const char *op,
                           const char *what, size_t i, wm_item_t *item,
                           wm_tensor_t **out) {
  *out = NULL;
  if (item->kind != WM_TYPE_TENSOR || !item->tensor) {
    char buf[96];
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (%s): %s %zu is a %s, want "
                    "a tensor",
                    rn->label, op, what, i,
                    wm_item_format(item, buf, sizeof(buf)));
  }
  *out = item->tensor;
  item->tensor = NULL;
  return NULL;
}

// A scalar tensor item of |dtype| holding |v|.
wm_status_t rt_scalar_item(wm_dtype_t dtype, int64_t v, wm_item_t *out) {
  wm_shape_t scalar = {.rank = 0};
  wm_tensor_t *t;
  WM_RETURN_IF_ERROR(wm_tensor_create(dtype, &scalar, &t));
  wm_tensor_set_i64(t, 0, v);
  *out = wm_item_tensor_take(t);
  return NULL;
}

static bool truthy(const wm_tensor_t *t) {
  return t && t->count > 0 && wm_tensor_get_f64(t, 0) != 0.0;
}

// Stacks |n| tensors of one type along a new first axis into *out.
static wm_status_t stack(wm_tensor_t *const *items, size_t n,
                         const wm_type_t *elem, wm_tensor_t **out) {
  wm_shape_t shape = {.rank = 1, .dims = {(int64_t)n}};
  wm_dtype_t dtype = n ? items[0]->dtype : elem->dtype;
  const wm_shape_t *es = n ? &items[0]->shape : &elem->shape;
  if (es->rank >= 0 && es->rank < WM_MAX_RANK && (n || wm_shape_is_known(es))) {
    shape.rank = es->rank + 1;
    for (int32_t d = 0; d < es->rank; d++) {
      shape.dims[d + 1] = es->dims[d];
    }
  }
  if (!wm_dtype_is_valid(dtype)) {
    dtype = WM_DTYPE_FLOAT;
  }
  for (size_t i = 1; i < n; i++) {
    if (items[i]->dtype != dtype || items[i]->nbytes != items[0]->nbytes ||
        !wm_shape_equal(&items[i]->shape, &items[0]->shape)) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "scan output of iteration %zu has another type or "
                      "shape than iteration 0",
                      i);
    }
  }
  WM_RETURN_IF_ERROR(wm_tensor_create(dtype, &shape, out));
  for (size_t i = 0; i < n; i++) {
    if (dtype == WM_DTYPE_STRING) {
      for (size_t e = 0; e < items[i]->count; e++) {
        const char *str = ((char *const *)items[i]->data)[e];
        WM_RETURN_IF_ERROR(wm_tensor_set_string(*out, i * items[i]->count + e,
                                                str ? str : "",
                                                str ? strlen(str) : 0));
      }
    } else if (items[i]->nbytes) {
      memcpy((char *)(*out)->data + i * items[i]->nbytes, items[i]->data,
             items[i]->nbytes);
    }
  }
  return NULL;
}

wm_status_t rt_run_if(wm_session_t *s, size_t index, rt_sub_inputs_t *in,
                      wm_item_t *results) {
  const wm_node_t *node = &s->graph->nodes[index];
  rt_node_t *rn = &s->nodes[index];
  wm_tensor_t *cond;
  bool owned;
  WM_RETURN_IF_ERROR(rt_host_tensor(s, node->inputs[0], &cond, &owned));
  bool take = truthy(cond);
  if (owned) {
    wm_tensor_destroy(cond);
  }
  wm_session_t *sub;
  WM_RETURN_IF_ERROR(rt_sub_session(
      s, rn, node, take ? "then_branch" : "else_branch", take ? 0 : 1, &sub));
  WM_RETURN_IF_ERROR(rt_sub_add_outer(s, sub->graph, in));
  if (sub->graph->output_count != (size_t)node->output_count) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (If): the branch has %zu outputs, the node "
                    "%d",
                    rn->label, sub->graph->output_count,
                    (int)node->output_count);
  }
  return rt_sub_run(s, sub, in, results);
}

// Loop: the carried values (tensors, sequences or optionals) are items
// replaced every iteration; scan outputs are tensors stacked at the end.
wm_status_t rt_run_loop(wm_session_t *s, size_t index, rt_sub_inputs_t *in,
                        wm_item_t *results) {
  const wm_node_t *node = &s->graph->nodes[index];
  rt_node_t *rn = &s->nodes[index];
  wm_session_t *sub;
  WM_RETURN_IF_ERROR(rt_sub_session(s, rn, node, "body", 0, &sub));
  const wm_graph_t *body = sub->graph;
  size_t n_carried = (size_t)node->input_count - 2;
  size_t n_scan = (size_t)node->output_count - n_carried;
  int64_t max_iter = INT64_MAX;
  bool cond = true;
  wm_tensor_t *t;
  bool owned;
  if (node->inputs[0] >= 0) {
    WM_RETURN_IF_ERROR(rt_host_tensor(s, node->inputs[0], &t, &owned));
    max_iter = t->count ? wm_tensor_get_i64(t, 0) : 0;
    if (owned) {
      wm_tensor_destroy(t);
    }
  }
  if (node->inputs[1] >= 0) {
    WM_RETURN_IF_ERROR(rt_host_tensor(s, node->inputs[1], &t, &owned));
    cond = truthy(t);
    if (owned) {
      wm_tensor_destroy(t);
    }
  }
  size_t n_body_out = body->output_count;
  wm_item_t *carried = wm_calloc(n_carried + 1, sizeof(*carried));
  wm_item_t *outs = wm_calloc(n_body_out + 1, sizeof(*outs));
  wm_tensor_t ***scans = wm_calloc(n_scan + 1, sizeof(*scans));
  size_t iters = 0, scan_cap = 0;
  wm_status_t st = carried && outs && scans
                       ? NULL
                       : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; !st && i < n_carried; i++) {
    st = rt_own_item(s, node->inputs[i + 2], &carried[i]);
  }
  // The values the body reads from this graph, read once for every
  // iteration; then per iteration: iteration_num, cond, the carried values.
  if (!st) {
    st = rt_sub_add_outer(s, body, in);
  }
  size_t n_outer = in->n;
  // The carried values (added after the outer ones each iteration) move
  // into the body, which gives them back as outputs: a sequence growing by
  // one element an iteration is not copied whole every iteration.
  in->take = true;
  in->take_from = n_outer;
  while (!st && (int64_t)iters < max_iter && cond) {
    if ((int64_t)iters >= s->options.max_iterations) {
      char trip[32] = "none";
      if (node->inputs[0] >= 0) {
        snprintf(trip, sizeof(trip), "%lld", (long long)max_iter);
      }
      st = WM_ERROR(RESOURCE_EXHAUSTED,
                    "reached the limit of %lld iterations with the condition "
                    "still true (trip count %s); --max-iterations raises it",
                    (long long)s->options.max_iterations, trip);
      break;
    }
    rt_sub_truncate(in, n_outer);
    wm_item_t it, c;
    st = rt_scalar_item(WM_DTYPE_INT64, (int64_t)iters, &it);
    if (!st) {
      st = rt_sub_add(in, body->values[body->inputs[0]].name, it, true);
    }
    if (!st) {
      st = rt_scalar_item(WM_DTYPE_BOOL, 1, &c);
    }
    if (!st) {
      st = rt_sub_add(in, body->values[body->inputs[1]].name, c, true);
    }
    for (size_t i = 0; !st && i < n_carried; i++) {
      st = rt_sub_add(in, body->values[body->inputs[i + 2]].name, carried[i],
                      true);
      memset(&carried[i], 0, sizeof(carried[i]));  // |in| owns it now
    }
    if (!st) {
      st = rt_sub_run(s, sub, in, outs);
    }
    if (!st) {
      cond = outs[0].kind == WM_TYPE_TENSOR && truthy(outs[0].tensor);
      for (size_t i = 0; i < n_carried; i++) {
        carried[i] = outs[i + 1];
        memset(&outs[i + 1], 0, sizeof(outs[i + 1]));
      }
      if (iters == scan_cap) {
        size_t cap = scan_cap ? 2 * scan_cap : 16;
        for (size_t k = 0; !st && k < n_scan; k++) {
          wm_tensor_t **grown = wm_realloc(scans[k], cap * sizeof(*grown));
          st = grown ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
          if (grown) {
            scans[k] = grown;
          }
        }
        scan_cap = cap;
      }
      for (size_t k = 0; !st && k < n_scan; k++) {
        st = rt_take_tensor(rn, "Loop", "scan output", k,
                            &outs[n_carried + 1 + k], &scans[k][iters]);
        if (st) {
          for (size_t j = 0; j < k; j++) {
            wm_tensor_destroy(scans[j][iters]);
          }
        }
      }
      iters += !st;
    }
    for (size_t i = 0; outs && i < n_body_out; i++) {
      wm_item_deinit(&outs[i]);
    }
  }
  for (size_t i = 0; carried && i < n_carried; i++) {
    if (st) {
      wm_item_deinit(&carried[i]);
    } else {
      results[i] = carried[i];
    }
  }
  for (size_t k = 0; k < n_scan; k++) {
    const wm_type_t *elem =
        &body->values[body->outputs[n_carried + 1 + k]].type;
    wm_tensor_t *stacked = NULL;
    if (!st) {
      st = stack(scans ? scans[k] : NULL, iters, elem, &stacked);
      results[n_carried + k] = wm_item_tensor_take(stacked);
    }
    for (size_t i = 0; scans && scans[k] && i < iters; i++) {
      wm_tensor_destroy(scans[k][i]);
    }
    if (scans) {
      free(scans[k]);
    }
  }
  free(outs);
  free(carried);
  free(scans);
  if (st) {
    st = wm_status_annotate(st, "node \"%s\" (Loop), iteration %zu", rn->label,
                            iters);
  }
  return st;
}

// Axis |a| (negative from the end) of a rank |rank| tensor, or -1.
static int32_t norm_axis(int64_t a, int32_t rank) {
  if (a < 0) {
    a += rank;
  }
  return a >= 0 && a < rank ? (int32_t)a : -1;
}

// Bytes per step along |axis| of |shape| (inner) and the steps before it
// (outer).
void rt_axis_blocks(const wm_shape_t *shape, int32_t axis, size_t esize,
                    size_t *outer, size_t *inner) {
  *outer = 1;
  *inner = esize;
  for (int32_t d = 0; d < axis; d++) {
    *outer *= (size_t)shape->dims[d];
  }
  for (int32_t d = axis + 1; d < shape->rank; d++) {
    *inner *= (size_t)shape->dims[d];
  }
}

// Copies slice |t| along axis |axis| of |x| into |slice| (the axis
// removed), or back when |into| is set: |x| then receives |slice|.
static void scan_slice(wm_tensor_t *x, int32_t axis, int64_t t,
                       wm_tensor_t *slice, bool into) {
  size_t outer, inner;
  rt_axis_blocks(&x->shape, axis, wm_dtype_size(x->dtype), &outer, &inner);
  size_t len = (size_t)x->shape.dims[axis];
  for (size_t o = 0; o < outer; o++) {
    char *big = (char *)x->data + (o * len + (size_t)t) * inner;
    char *small = (char *)slice->data + o * inner;
    memcpy(into ? big : small, into ? small : big, inner);
  }
}

// Slice |t| of |x| along |axis| as a new tensor.
static wm_status_t slice_of(wm_tensor_t *x, int32_t axis, int64_t t,
                            wm_tensor_t **out) {
  wm_shape_t shape = x->shape;
  memmove(&shape.dims[axis], &shape.dims[axis + 1],
          (size_t)(shape.rank - axis - 1) * sizeof(shape.dims[0]));
  shape.rank--;
  WM_RETURN_IF_ERROR(wm_tensor_create(x->dtype, &shape, out));
  scan_slice(x, axis, t, *out, false);
  return NULL;
}

// How one Scan iterates: scan input j is sliced along in_axes[j], read
// backwards when in_dirs[j] is set; scan output k is stacked along
// out_axes[k] (in [-r-1, r]), written backwards when out_dirs[k] is set.
typedef struct scan_spec {
  const rt_node_t *rn;     // the node (messages)
  size_t n_state;          // state variables
  size_t m;                // scan inputs
  size_t k;                // scan outputs
  const int32_t *in_axes;  // per scan input, normalized
  const int64_t *in_dirs;  // per scan input (n_in_dirs of them)
  size_t n_in_dirs;
  const int64_t *out_axes;  // per scan output (n_out_axes of them)
  size_t n_out_axes;
  const int64_t *out_dirs;  // per scan output (n_out_dirs of them)
  size_t n_out_dirs;
} scan_spec_t;

// Makes scan output |k| of a scan with no steps: empty along its axis, of
// the body output's declared element type (which must be known).
static wm_status_t scan_empty_output(const wm_graph_t *body,
                                     const scan_spec_t *sp, size_t k,
                                     wm_tensor_t **out) {
  const wm_type_t *et = &body->values[body->outputs[sp->n_state + k]].type;
  int64_t a = k < sp->n_out_axes ? sp->out_axes[k] : 0;
  int32_t ax = wm_shape_is_known(&et->shape) && et->shape.rank < WM_MAX_RANK
                   ? norm_axis(a, et->shape.rank + 1)
                   : -1;
  if (ax < 0 || !wm_dtype_is_valid(et->dtype) || et->dtype == WM_DTYPE_STRING) {
    char buf[96];
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (Scan): no iterations, and scan output %zu "
                    "(axis %lld) has no known element type to be empty of: %s",
                    sp->rn->label, k, (long long)a,
                    wm_type_format(et, buf, sizeof(buf)));
  }
  wm_shape_t shape = et->shape;
  memmove(&shape.dims[ax + 1], &shape.dims[ax],
          (size_t)(shape.rank - ax) * sizeof(shape.dims[0]));
  shape.dims[ax] = 0;
  shape.rank++;
  return wm_tensor_create(et->dtype, &shape, out);
}

// Runs |len| steps of the body |sub| on |in| (outer values already added,
// n_outer of them): states (owned) are replaced every step, xs are the scan
// inputs, ys receive the scan outputs (created at the first step).
static wm_status_t scan_steps(wm_session_t *s, wm_session_t *sub,
                              rt_sub_inputs_t *in, size_t n_outer,
                              const scan_spec_t *sp, int64_t len,
                              wm_tensor_t **states, wm_tensor_t *const *xs,
                              wm_tensor_t **ys) {
  const wm_graph_t *body = sub->graph;
  const char *label = sp->rn->label;
  wm_item_t *outs = wm_calloc(body->output_count + 1, sizeof(*outs));
  wm_status_t st = outs ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  for (int64_t t = 0; !st && t < len; t++) {
    rt_sub_truncate(in, n_outer);
    for (size_t i = 0; !st && i < sp->n_state; i++) {
      st = rt_sub_add_tensor(in, body->values[body->inputs[i]].name, states[i],
                             false);
    }
    for (size_t j = 0; !st && j < sp->m; j++) {
      int64_t at = j < sp->n_in_dirs && sp->in_dirs[j] ? len - 1 - t : t;
      wm_tensor_t *slice = NULL;
      st = slice_of(xs[j], sp->in_axes[j], at, &slice);
      if (!st) {
        st = rt_sub_add_tensor(
            in, body->values[body->inputs[sp->n_state + j]].name, slice, true);
      }
    }
    if (!st) {
      st = rt_sub_run(s, sub, in, outs);
    }
    for (size_t i = 0; !st && i < sp->n_state; i++) {
      wm_tensor_t *next;
      st = rt_take_tensor(sp->rn, "Scan", "state", i, &outs[i], &next);
      if (!st) {
        wm_tensor_destroy(states[i]);
        states[i] = next;
      }
    }
    for (size_t k = 0; !st && k < sp->k; k++) {
      wm_tensor_t *y;
      st = rt_take_tensor(sp->rn, "Scan", "scan output", k,
                          &outs[sp->n_state + k], &y);
      int64_t a = k < sp->n_out_axes ? sp->out_axes[k] : 0;
      int32_t ax = st ? -1 : norm_axis(a, y->shape.rank + 1);
      if (!st && (ax < 0 || y->dtype == WM_DTYPE_STRING)) {
        st = WM_ERROR(INVALID_ARGUMENT,
                      "node \"%s\" (Scan): scan output %zu has axis %lld for "
                      "rank %d, or strings",
                      label, k, (long long)a, (int)y->shape.rank + 1);
      }
      if (!st && !ys[k]) {  // first slice: allocate the output
        wm_shape_t shape = y->shape;
        memmove(&shape.dims[ax + 1], &shape.dims[ax],
                (size_t)(shape.rank - ax) * sizeof(shape.dims[0]));
        shape.dims[ax] = len;
        shape.rank++;
        st = wm_tensor_create(y->dtype, &shape, &ys[k]);
      }
      if (!st && (y->dtype != ys[k]->dtype ||
                  y->count * (size_t)len != ys[k]->count)) {
        st = WM_ERROR(INVALID_ARGUMENT,
                      "node \"%s\" (Scan): scan output %zu changes type or "
                      "size at iteration %lld",
                      label, k, (long long)t);
      }
      if (!st) {
        int64_t at = k < sp->n_out_dirs && sp->out_dirs[k] ? len - 1 - t : t;
        scan_slice(ys[k], ax, at, y, true);
      }
      wm_tensor_destroy(y);
    }
    for (size_t i = 0; outs && i < body->output_count; i++) {
      wm_item_deinit(&outs[i]);
    }
  }
  free(outs);
  // No step ran: each scan output is empty along its axis.
  for (size_t k = 0; !st && len == 0 && k < sp->k; k++) {
    st = scan_empty_output(body, sp, k, &ys[k]);
  }
  return st;
}

// Host tensors of inputs [first, first + n) of Scan |node| into |vals|
// (|owned| says which to destroy); an omitted one is an error.
static wm_status_t scan_inputs(wm_session_t *s, const wm_node_t *node,
                               const rt_node_t *rn, size_t first, size_t n,
                               wm_tensor_t **vals, bool *owned) {
  for (size_t i = 0; i < n; i++) {
    int32_t id = node->inputs[first + i];
    if (id < 0) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "node \"%s\" (Scan): input %zu is omitted", rn->label,
                      first + i);
    }
    WM_RETURN_IF_ERROR(rt_host_tensor(s, id, &vals[i], &owned[i]));
  }
  return NULL;
}

// Scan 9+: inputs are N states then M scan inputs, each sliced along its
// own axis.
wm_status_t rt_run_scan(wm_session_t *s, size_t index, rt_sub_inputs_t *in,
                        wm_item_t *results) {
  const wm_node_t *node = &s->graph->nodes[index];
  rt_node_t *rn = &s->nodes[index];
  wm_session_t *sub;
  WM_RETURN_IF_ERROR(rt_sub_session(s, rn, node, "body", 0, &sub));
  int64_t m = wm_node_attr_int(node, "num_scan_inputs", -1);
  size_t n_in = (size_t)node->input_count, n_out = (size_t)node->output_count;
  if (m < 1 || (size_t)m > n_in || n_out < n_in - (size_t)m) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (Scan): num_scan_inputs is %lld with %zu "
                    "inputs",
                    rn->label, (long long)m, n_in);
  }
  scan_spec_t sp = {.rn = rn, .n_state = n_in - (size_t)m, .m = (size_t)m};
  sp.k = n_out - sp.n_state;
  const int64_t *in_axes = NULL;
  size_t n_ia = 0;
  wm_node_attr_ints(node, "scan_input_axes", &in_axes, &n_ia);
  wm_node_attr_ints(node, "scan_input_directions", &sp.in_dirs, &sp.n_in_dirs);
  wm_node_attr_ints(node, "scan_output_axes", &sp.out_axes, &sp.n_out_axes);
  wm_node_attr_ints(node, "scan_output_directions", &sp.out_dirs,
                    &sp.n_out_dirs);
  wm_tensor_t **vals = wm_calloc(n_in + 1, sizeof(*vals));
  bool *owned = wm_calloc(n_in + 1, sizeof(bool));
  wm_tensor_t **ys = wm_calloc(sp.k + 1, sizeof(*ys));
  int32_t *axes = wm_calloc((size_t)m + 1, sizeof(int32_t));
  wm_status_t st = vals && owned && ys && axes
                       ? NULL
                       : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  if (!st) {
    st = scan_inputs(s, node, rn, 0, n_in, vals, owned);
  }
  // The sequence length, the same along every scan input's axis.
  int64_t len = -1;
  for (size_t j = 0; !st && j < (size_t)m; j++) {
    wm_tensor_t *x = vals[sp.n_state + j];
    axes[j] = norm_axis(j < n_ia ? in_axes[j] : 0, x->shape.rank);
    if (axes[j] < 0 || x->dtype == WM_DTYPE_STRING ||
        (len >= 0 && x->shape.dims[axes[j]] != len)) {
      st = WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (Scan): scan input %zu has type %s with "
                    "its axis out of range, strings, or another length than "
                    "%lld",
                    rn->label, j, wm_dtype_name(x->dtype), (long long)len);
    } else {
      len = x->shape.dims[axes[j]];
    }
  }
  sp.in_axes = axes;
  if (!st && len > s->options.max_iterations) {
    st = WM_ERROR(RESOURCE_EXHAUSTED,
                  "node \"%s\" (Scan): %lld iterations (the scan length) "
                  "are past the limit of %lld; --max-iterations raises it",
                  rn->label, (long long)len,
                  (long long)s->options.max_iterations);
  }
  // States: owned copies replaced every iteration.
  for (size_t i = 0; !st && i < sp.n_state; i++) {
    if (!owned[i]) {
      st = wm_tensor_clone(vals[i], &vals[i]);
      owned[i] = !st;
    }
  }
  if (!st) {
    st = rt_sub_add_outer(s, sub->graph, in);
  }
  if (!st) {
    st = scan_steps(s, sub, in, in->n, &sp, len, vals, vals + sp.n_state, ys);
  }
  for (size_t i = 0; !st && i < sp.n_state; i++) {
    results[i] = wm_item_tensor_take(vals[i]);
    owned[i] = false;
  }
  for (size_t k = 0; ys && k < sp.k; k++) {
    if (st) {
      wm_tensor_destroy(ys[k]);
    } else {
      results[sp.n_state + k] = wm_item_tensor_take(ys[k]);
    }
  }
  for (size_t i = 0; vals && i < n_in; i++) {
    if (owned[i]) {
      wm_tensor_destroy(vals[i]);
    }
  }
  free(vals);
  free(owned);
  free(ys);
  free(axes);
  return st;
}

// Places entry |b| of Scan 8 output |o|: |part| is a final state, or a
// scan output [len, ...] filling the first len of max_len steps (the rest
// stay zero). Creates |*out| ([batch, ...], scan outputs [batch, max_len,
// ...]) at the first entry; later entries must match it.
static wm_status_t scan8_place(const rt_node_t *rn, size_t o,
                               const wm_tensor_t *part, bool state, int64_t b,
                               int64_t batch, int64_t max_len,
                               wm_tensor_t **out) {
  if (part->shape.rank >= WM_MAX_RANK || part->dtype == WM_DTYPE_STRING) {
    return WM_ERROR(UNIMPLEMENTED,
                    "node \"%s\" (Scan): output %zu is %s of rank %d; a "
                    "batched Scan takes numeric outputs below rank %d",
                    rn->label, o, wm_dtype_name(part->dtype),
                    (int)part->shape.rank, WM_MAX_RANK);
  }
  wm_shape_t shape = part->shape;
  memmove(&shape.dims[1], &shape.dims[0],
          (size_t)shape.rank * sizeof(shape.dims[0]));
  shape.dims[0] = batch;
  shape.rank++;
  if (!state) {
    shape.dims[1] = max_len;
  }
  if (!*out) {
    WM_RETURN_IF_ERROR(wm_tensor_create(part->dtype, &shape, out));
  } else if ((*out)->dtype != part->dtype ||
             !wm_shape_equal(&(*out)->shape, &shape)) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (Scan): output %zu changes type or shape "
                    "at batch entry %lld",
                    rn->label, o, (long long)b);
  }
  size_t stride = (*out)->nbytes / (size_t)batch;
  memcpy((char *)(*out)->data + (size_t)b * stride, part->data, part->nbytes);
  return NULL;
}

// Scan 8 (the batched form): input 0 is the optional sequence_lens
// [batch], then N states [batch, ...] and M scan inputs [batch, seq, ...];
// each batch entry is scanned on its own for its length, and scan outputs
// [batch, max_len, ...] are zero past an entry's length.
wm_status_t rt_run_scan8(wm_session_t *s, size_t index, rt_sub_inputs_t *in,
                         wm_item_t *results) {
  const wm_node_t *node = &s->graph->nodes[index];
  rt_node_t *rn = &s->nodes[index];
  wm_session_t *sub;
  WM_RETURN_IF_ERROR(rt_sub_session(s, rn, node, "body", 0, &sub));
  int64_t m = wm_node_attr_int(node, "num_scan_inputs", -1);
  size_t n_in = (size_t)node->input_count - 1;
  size_t n_out = (size_t)node->output_count;
  if (node->input_count < 2 || m < 1 || (size_t)m > n_in ||
      n_out < n_in - (size_t)m) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (Scan): num_scan_inputs is %lld with %zu "
                    "inputs after sequence_lens",
                    rn->label, (long long)m, n_in);
  }
  scan_spec_t sp = {.rn = rn, .n_state = n_in - (size_t)m, .m = (size_t)m};
  sp.k = n_out - sp.n_state;
  wm_node_attr_ints(node, "directions", &sp.in_dirs, &sp.n_in_dirs);
  wm_tensor_t *lens = NULL;
  bool lens_owned = false;
  wm_tensor_t **vals = wm_calloc(n_in + 1, sizeof(*vals));
  bool *owned = wm_calloc(n_in + 1, sizeof(bool));
  wm_tensor_t **bvals = wm_calloc(n_in + 1, sizeof(*bvals));  // one entry
  wm_tensor_t **ys = wm_calloc(sp.k + 1, sizeof(*ys));        // one entry
  wm_tensor_t **outs = wm_calloc(n_out + 1, sizeof(*outs));   // batched
  int32_t *axes = wm_calloc((size_t)m + 1, sizeof(int32_t));  // all 0
  wm_status_t st = vals && owned && bvals && ys && outs && axes
                       ? NULL
                       : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  sp.in_axes = axes;
  if (!st && node->inputs[0] >= 0) {
    st = rt_host_tensor(s, node->inputs[0], &lens, &lens_owned);
  }
  if (!st) {
    st = scan_inputs(s, node, rn, 1, n_in, vals, owned);
  }
  int64_t batch = -1, max_len = -1;
  for (size_t i = 0; !st && i < n_in; i++) {
    const wm_tensor_t *x = vals[i];
    bool scan = i >= sp.n_state;
    if (x->shape.rank < (scan ? 2 : 1) || x->dtype == WM_DTYPE_STRING ||
        (batch >= 0 && x->shape.dims[0] != batch) ||
        (scan && max_len >= 0 && x->shape.dims[1] != max_len)) {
      st = WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (Scan): input %zu is %s of rank %d; want "
                    "[batch%s, ...] with one batch size (%lld)%s",
                    rn->label, i + 1, wm_dtype_name(x->dtype),
                    (int)x->shape.rank, scan ? ", sequence" : "",
                    (long long)batch, scan ? " and one sequence length" : "");
      break;
    }
    batch = x->shape.dims[0];
    if (scan) {
      max_len = x->shape.dims[1];
    }
  }
  if (!st && lens && (int64_t)lens->count != batch) {
    st = WM_ERROR(INVALID_ARGUMENT,
                  "node \"%s\" (Scan): sequence_lens has %zu entries for a "
                  "batch of %lld",
                  rn->label, lens->count, (long long)batch);
  }
  int64_t total = 0;
  if (!st && batch > 0 && max_len > 0 &&
      (!wm_checked_mul_i64(batch, max_len, &total) ||
       total > s->options.max_iterations)) {
    st = WM_ERROR(RESOURCE_EXHAUSTED,
                  "node \"%s\" (Scan): a batch of %lld sequences of %lld "
                  "steps is past the limit of %lld iterations; "
                  "--max-iterations raises it",
                  rn->label, (long long)batch, (long long)max_len,
                  (long long)s->options.max_iterations);
  }
  if (!st) {
    st = rt_sub_add_outer(s, sub->graph, in);
  }
  size_t n_outer = in->n;
  for (int64_t b = 0; !st && b < batch; b++) {
    int64_t len = lens ? wm_tensor_get_i64(lens, (size_t)b) : max_len;
    if (len < 0 || len > max_len) {
      st =
          WM_ERROR(OUT_OF_RANGE,
                   "node \"%s\" (Scan): sequence_lens[%lld] is %lld, outside "
                   "[0, %lld]",
                   rn->label, (long long)b, (long long)len, (long long)max_len);
      break;
    }
    for (size_t i = 0; !st && i < n_in; i++) {
      st = slice_of(vals[i], 0, b, &bvals[i]);
    }
    if (!st) {
      st = scan_steps(s, sub, in, n_outer, &sp, len, bvals, bvals + sp.n_state,
                      ys);
    }
    for (size_t o = 0; !st && o < n_out; o++) {
      bool state = o < sp.n_state;
      st = scan8_place(rn, o, state ? bvals[o] : ys[o - sp.n_state], state, b,
                       batch, max_len, &outs[o]);
    }
    for (size_t i = 0; i < n_in; i++) {
      wm_tensor_destroy(bvals[i]);
      bvals[i] = NULL;
    }
    for (size_t k = 0; ys && k < sp.k; k++) {
      wm_tensor_destroy(ys[k]);
      ys[k] = NULL;
    }
  }
  // An empty batch: each state is its (empty) initial value, each scan
  // output [0, max_len, ...] of the body output's element type.
  for (size_t o = 0; !st && batch == 0 && o < n_out; o++) {
    if (o < sp.n_state) {
      st = wm_tensor_create(vals[o]->dtype, &vals[o]->shape, &outs[o]);
      continue;
    }
    wm_tensor_t *e = NULL;
    st = scan_empty_output(sub->graph, &sp, o - sp.n_state, &e);
    if (!st && e->shape.rank >= WM_MAX_RANK) {
      st = WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (Scan): output %zu has rank %d; batched, it "
                    "passes the maximum rank %d",
                    rn->label, o, (int)e->shape.rank - 1, WM_MAX_RANK);
    }
    if (!st) {
      wm_shape_t shape = e->shape;  // [0, ...]: add the batch in front
      memmove(&shape.dims[1], &shape.dims[0],
              (size_t)shape.rank * sizeof(shape.dims[0]));
      shape.dims[1] = max_len;
      shape.rank++;
      st = wm_tensor_create(e->dtype, &shape, &outs[o]);
    }
    wm_tensor_destroy(e);
  }
  for (size_t o = 0; outs && o < n_out; o++) {
    if (st) {
      wm_tensor_destroy(outs[o]);
    } else {
      results[o] = wm_item_tensor_take(outs[o]);
    }
  }
  for (size_t i = 0; vals && i < n_in; i++) {
    if (owned[i]) {
      wm_tensor_destroy(vals[i]);
    }
  }
  if (lens_owned) {
    wm_tensor_destroy(lens);
  }
  free(vals);
  free(owned);
  free(bvals);
  free(ys);
  free(outs);
  free(axes);
  return st;
}
