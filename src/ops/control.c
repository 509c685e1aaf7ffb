// Control flow: If, Loop and Scan (opset 8's batched form and 9+). Their shape
// rules read the subgraphs' output types (the check infers subgraphs first);
// the session executes them with nested sessions over the subgraphs, so they
// have no kernel here.
#include <string.h>

#include "ops/ops.h"

// The subgraph attribute |name| of the node, or an error naming it.
static wm_status_t subgraph(const wm_op_ctx_t *ctx, const char *name,
                            const wm_graph_t **out) {
  const wm_attr_t *a = wm_node_attr(ctx->node, name);
  if (!a || a->type != WM_ATTR_GRAPH || !a->g) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"%s\" (a graph) is required", name);
  }
  *out = a->g;
  return NULL;
}

// The declared or inferred type of output |i| of |g|.
static const wm_type_t *graph_output_type(const wm_graph_t *g, size_t i) {
  return &g->values[g->outputs[i]].type;
}

// Merges two branch types: equal facts stay, differing dims become unknown.
static wm_type_t merge(const wm_type_t *a, const wm_type_t *b) {
  wm_type_t t = *a;
  if (a->shape.rank != b->shape.rank) {
    t.shape.rank = -1;
  } else {
    for (int32_t d = 0; d < t.shape.rank; d++) {
      if (a->shape.dims[d] != b->shape.dims[d]) {
        t.shape.dims[d] = -1;
        t.dim_params[d] = NULL;
      }
    }
  }
  if (a->dtype != b->dtype) {
    t.dtype = WM_DTYPE_UNDEFINED;
  }
  return t;
}

// |t| with a new dim of size |len| (-1 unknown) inserted at |ax| (in
// [0, rank]); unknown rank stays unknown.
static wm_type_t with_axis(const wm_type_t *t, int64_t ax, int64_t len) {
  wm_type_t r = *t;
  if (r.shape.rank < 0 || r.shape.rank >= WM_MAX_RANK) {
    r.shape.rank = -1;
    return r;
  }
  memmove(&r.shape.dims[ax + 1], &r.shape.dims[ax],
          (size_t)(r.shape.rank - ax) * sizeof(r.shape.dims[0]));
  memmove(&r.dim_params[ax + 1], &r.dim_params[ax],
          (size_t)(r.shape.rank - ax) * sizeof(r.dim_params[0]));
  r.shape.dims[ax] = len;
  r.dim_params[ax] = NULL;
  r.shape.rank++;
  return r;
}

static wm_status_t if_infer(wm_op_ctx_t *ctx) {
  const wm_graph_t *then_g = NULL, *else_g = NULL;
  WM_RETURN_IF_ERROR(subgraph(ctx, "then_branch", &then_g));
  WM_RETURN_IF_ERROR(subgraph(ctx, "else_branch", &else_g));
  if (then_g->output_count != (size_t)ctx->n_out ||
      else_g->output_count != (size_t)ctx->n_out) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "the branches have %zu and %zu outputs, the node %d",
                       then_g->output_count, else_g->output_count,
                       (int)ctx->n_out);
  }
  for (int32_t i = 0; i < ctx->n_out; i++) {
    ctx->out_types[i] = merge(graph_output_type(then_g, (size_t)i),
                              graph_output_type(else_g, (size_t)i));
  }
  return NULL;
}

// Loop: inputs M, cond, v_initial...; body inputs iteration_num, cond,
// v...; body outputs cond, v..., scan outputs...; node outputs v_final...,
// then each scan output stacked along a new first axis.
static wm_status_t loop_infer(wm_op_ctx_t *ctx) {
  const wm_graph_t *body = NULL;
  WM_RETURN_IF_ERROR(subgraph(ctx, "body", &body));
  // M and cond (inputs 0 and 1) may be omitted, but their slots exist.
  int32_t n_carried = ctx->n_in - 2;
  if (n_carried < 0 || body->input_count != (size_t)n_carried + 2 ||
      body->output_count < (size_t)n_carried + 1 ||
      (size_t)ctx->n_out != body->output_count - 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "the body has %zu inputs and %zu outputs; with %d "
                       "loop-carried values it needs %d inputs and the node "
                       "one output fewer than the body (%d)",
                       body->input_count, body->output_count, (int)n_carried,
                       (int)n_carried + 2, (int)ctx->n_out);
  }
  for (int32_t i = 0; i < n_carried; i++) {
    if (!wm_op_has_input(ctx, i + 2)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d is omitted (\"\"): loop-carried value %d "
                         "needs its initial value",
                         (int)i + 2, (int)i);
    }
  }
  for (int32_t i = 0; i < ctx->n_out; i++) {
    const wm_type_t *t = graph_output_type(body, (size_t)i + 1);
    if (i < n_carried) {
      ctx->out_types[i] = merge(&ctx->in_types[i + 2], t);
      continue;
    }
    ctx->out_types[i] = with_axis(t, 0, -1);  // a scan output: leading dim
  }
  return NULL;
}

// Scan (opset 9+): inputs N states then M scan inputs (num_scan_inputs);
// the body gets the states and one slice of each scan input (its scan
// axis removed) and returns the states and K slices; the node returns the
// final states and the K slices stacked along each scan output axis.
static wm_status_t scan_infer(wm_op_ctx_t *ctx) {
  const wm_graph_t *body = NULL;
  WM_RETURN_IF_ERROR(subgraph(ctx, "body", &body));
  int64_t m = wm_node_attr_int(ctx->node, "num_scan_inputs", -1);
  int64_t n = m >= 1 && m <= ctx->n_in ? ctx->n_in - m : -1;  // any int64 m
  if (m < 1 || n < 0 || body->input_count != (size_t)ctx->n_in ||
      body->output_count != (size_t)ctx->n_out || ctx->n_out < n) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "num_scan_inputs is %lld with %d inputs, %d outputs; "
                       "the body has %zu inputs and %zu outputs",
                       (long long)m, (int)ctx->n_in, (int)ctx->n_out,
                       body->input_count, body->output_count);
  }
  // The sequence length: the scan axis of the first scan input.
  const int64_t *in_axes = NULL, *out_axes = NULL;
  size_t n_in_axes = 0, n_out_axes = 0;
  wm_node_attr_ints(ctx->node, "scan_input_axes", &in_axes, &n_in_axes);
  wm_node_attr_ints(ctx->node, "scan_output_axes", &out_axes, &n_out_axes);
  const wm_shape_t *x0 = &ctx->in_types[n].shape;
  int64_t a0 = n_in_axes ? in_axes[0] : 0;
  if (x0->rank > 0 && a0 < 0) {
    a0 += x0->rank;
  }
  int64_t len = x0->rank > 0 && a0 >= 0 && a0 < x0->rank ? x0->dims[a0] : -1;
  for (int32_t i = 0; i < ctx->n_out; i++) {
    const wm_type_t *t = graph_output_type(body, (size_t)i);
    if (i < n) {
      ctx->out_types[i] = merge(&ctx->in_types[i], t);
      continue;
    }
    int64_t ax = (size_t)(i - n) < n_out_axes ? out_axes[i - n] : 0;
    if (t->shape.rank >= 0 && ax < 0) {
      ax += t->shape.rank + 1;
    }
    if (t->shape.rank >= 0 && (ax < 0 || ax > t->shape.rank)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "scan_output_axes[%d] is out of range for rank %d",
                         (int)(i - n), (int)t->shape.rank + 1);
    }
    wm_type_t st = with_axis(t, ax, len);
    ctx->out_types[i] = st;
  }
  return NULL;
}

// Scan 8 (batched): inputs sequence_lens (optional), N states [batch,
// ...] and M scan inputs [batch, seq, ...]; the body sees one batch entry
// and one step; outputs are the final states [batch, ...] and the scan
// outputs [batch, seq, ...].
static wm_status_t scan8_infer(wm_op_ctx_t *ctx) {
  const wm_graph_t *body = NULL;
  WM_RETURN_IF_ERROR(subgraph(ctx, "body", &body));
  int64_t m = wm_node_attr_int(ctx->node, "num_scan_inputs", -1);
  // sequence_lens (input 0) may be omitted; an m past the inputs is refused
  // below (n = -1), never subtracted (m may be any int64).
  int64_t n = m >= 1 && m <= ctx->n_in - 1 ? ctx->n_in - 1 - m : -1;
  if (m < 1 || n < 0 || body->input_count != (size_t)ctx->n_in - 1 ||
      body->output_count != (size_t)ctx->n_out || ctx->n_out < n) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "num_scan_inputs is %lld with %d inputs (sequence_lens "
                       "first), %d outputs; the body has %zu inputs and %zu "
                       "outputs",
                       (long long)m, (int)ctx->n_in, (int)ctx->n_out,
                       body->input_count, body->output_count);
  }
  const wm_shape_t *x0 = &ctx->in_types[1 + n].shape;
  int64_t batch = x0->rank >= 2 ? x0->dims[0] : -1;
  int64_t len = x0->rank >= 2 ? x0->dims[1] : -1;
  for (int32_t i = 0; i < ctx->n_out; i++) {
    wm_type_t t = with_axis(graph_output_type(body, (size_t)i), 0, batch);
    if (i >= n) {
      t = with_axis(&t, 1, len);
    }
    ctx->out_types[i] = i < n ? merge(&ctx->in_types[1 + i], &t) : t;
  }
  return NULL;
}

const wm_op_def_t wm_ops_control[] = {
    {"If", "", 1, 1, 1, 1, -1, WM_T(BOOL), if_infer, wm_op_run_in_session,
     wm_op_cost_zero},
    {"Loop", "", 1, 0, -1, 1, -1, 0, loop_infer, wm_op_run_in_session,
     wm_op_cost_zero},
    {"Scan", "", 8, 0, -1, 1, -1, 0, scan8_infer, wm_op_run_in_session,
     wm_op_cost_zero},
    {"Scan", "", 9, 1, -1, 1, -1, 0, scan_infer, wm_op_run_in_session,
     wm_op_cost_zero},
    WM_OPS_END,
};
