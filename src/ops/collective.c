// Collective operators of the "wmap" domain, inserted by the tensor-
// parallel partitioner (src/parallel) into each rank's graph. They run on
// the communicator of the calling thread (wm_comm_current), which the code
// running a rank's partition sets; without one they fail naming the node.
// - AllReduce(X) -> Y: the sum of X over the `ranks` ranks (every rank
//   holds a partial sum of Y, as a row-parallel MatMul leaves it), or
//   their mean with reduction="mean" (data-parallel gradients).
// - AllGather(X) -> Y: the whole of a tensor sharded along `axis` in
//   `segments` equal segments, each split evenly over `ranks` ranks: rank
//   r holds, of each segment, the r-th of `ranks` equal blocks.
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "ops/ops.h"

// The calling rank's communicator, checked against the node's `ranks`.
static wm_status_t node_comm(wm_op_ctx_t *ctx, int64_t ranks, wm_comm_t **out) {
  wm_comm_t *c = wm_comm_current();
  if (!c) {
    return WM_OP_ERROR(ctx, FAILED_PRECONDITION,
                       "no communicator: this graph is one of %lld ranks' "
                       "partitions and runs only as one (wmap run "
                       "--parallel)",
                       (long long)ranks);
  }
  if (wm_comm_size(c) != ranks) {
    return WM_OP_ERROR(ctx, FAILED_PRECONDITION,
                       "partitioned for %lld ranks, but communicator %s has "
                       "%d",
                       (long long)ranks, wm_comm_id(c), wm_comm_size(c));
  }
  *out = c;
  return NULL;
}

static wm_status_t ranks_attr(const wm_op_ctx_t *ctx, int64_t *out) {
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "ranks", 0, out));
  if (*out < 1 || *out > 4096) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "ranks=%lld is out of range (1..4096)", (long long)*out);
  }
  return NULL;
}

// The reduction attribute: "sum" (default) or "mean".
static wm_status_t reduction(const wm_op_ctx_t *ctx, uint32_t *out) {
  static const char *const kinds[] = {"sum", "mean", NULL};
  int k = 0;
  WM_RETURN_IF_ERROR(wm_op_attr_choice(ctx, "reduction", "sum", kinds, &k));
  *out = k == 1 ? WM_COMM_AVG : WM_COMM_SUM;
  return NULL;
}

static wm_status_t all_reduce_infer(wm_op_ctx_t *ctx) {
  int64_t ranks;
  uint32_t redop;
  WM_RETURN_IF_ERROR(ranks_attr(ctx, &ranks));
  WM_RETURN_IF_ERROR(reduction(ctx, &redop));
  if (redop == WM_COMM_AVG && !wm_dtype_is_float(wm_op_in_dtype(ctx, 0))) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "reduction=\"mean\" needs a floating type, not %s",
                       wm_dtype_name(wm_op_in_dtype(ctx, 0)));
  }
  return wm_op_infer_same(ctx);
}

static wm_status_t all_reduce_run(wm_op_ctx_t *ctx) {
  int64_t ranks;
  uint32_t redop;
  WM_RETURN_IF_ERROR(ranks_attr(ctx, &ranks));
  WM_RETURN_IF_ERROR(reduction(ctx, &redop));
  wm_comm_t *c = NULL;
  WM_RETURN_IF_ERROR(node_comm(ctx, ranks, &c));
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  if (y->data != x->data && x->nbytes) {
    memcpy(y->data, x->data, x->nbytes);
  }
  wm_status_t s =
      wm_comm_all_reduce(c, y->data, y->data, y->count, x->dtype, redop);
  return s ? wm_status_annotate(s, "node \"%s\" (AllReduce)", ctx->label) : s;
}

// Reads axis (normalized to x's rank), segments and ranks; checks that
// the gathered dim fits.
static wm_status_t gather_attrs(const wm_op_ctx_t *ctx, int32_t *axis,
                                int64_t *segments, int64_t *ranks) {
  WM_RETURN_IF_ERROR(ranks_attr(ctx, ranks));
  int64_t a, g;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "axis", 0, &a));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "segments", 1, &g));
  wm_shape_t xs = *wm_op_in_shape(ctx, 0);
  if (xs.rank < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input must have a known rank of at least 1");
  }
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, a, xs.rank, "axis", axis));
  int64_t d = xs.dims[*axis];
  if (g < 1 || (d >= 0 && d % g != 0)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "segments=%lld does not divide dim %d (%lld)",
                       (long long)g, *axis, (long long)d);
  }
  *segments = g;
  return NULL;
}

static wm_status_t all_gather_infer(wm_op_ctx_t *ctx) {
  int32_t axis;
  int64_t g, ranks;
  WM_RETURN_IF_ERROR(gather_attrs(ctx, &axis, &g, &ranks));
  wm_shape_t s = *wm_op_in_shape(ctx, 0);
  if (s.dims[axis] >= 0) {
    s.dims[axis] *= ranks;
  }
  return wm_op_set_out_checked(ctx, 0, wm_op_in_dtype(ctx, 0), &s);
}

static wm_status_t all_gather_run(wm_op_ctx_t *ctx) {
  int32_t axis;
  int64_t g, ranks;
  WM_RETURN_IF_ERROR(gather_attrs(ctx, &axis, &g, &ranks));
  wm_comm_t *c = NULL;
  WM_RETURN_IF_ERROR(node_comm(ctx, ranks, &c));
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  char *all = malloc(y->nbytes ? y->nbytes : 1);
  if (!all) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory (%zu bytes)",
                       y->nbytes);
  }
  wm_status_t s = wm_comm_all_gather(c, x->data, all, x->count, x->dtype);
  if (s) {
    free(all);
    return wm_status_annotate(s, "node \"%s\" (AllGather)", ctx->label);
  }
  // |all| is [ranks][outer][segments][block][inner]: put each rank's
  // blocks in place along the axis.
  size_t es = wm_dtype_size(x->dtype), outer = 1, inner = es;
  for (int32_t d = 0; d < axis; d++) {
    outer *= (size_t)x->shape.dims[d];
  }
  for (int32_t d = axis + 1; d < x->shape.rank; d++) {
    inner *= (size_t)x->shape.dims[d];
  }
  size_t local = (size_t)x->shape.dims[axis], block = local / (size_t)g;
  size_t run = block * inner;  // bytes of one block row
  char *out = y->data;
  for (size_t r = 0; r < (size_t)ranks; r++) {
    const char *src = all + r * x->nbytes;
    for (size_t o = 0; o < outer; o++) {
      for (size_t k = 0; k < (size_t)g; k++) {
        size_t at = ((o * (size_t)g + k) * (size_t)ranks + r) * run;
        memcpy(out + at, src + (o * (size_t)g + k) * run, run);
      }
    }
  }
  free(all);
  return NULL;
}

// Moves its bytes; no arithmetic.
static void collective_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  (void)ctx;
  memset(out, 0, sizeof(*out));
}

const wm_op_def_t wm_ops_collective[] = {
    {"AllReduce", "wmap", 1, 1, 1, 1, 1, WM_TYPES_NUMERIC, all_reduce_infer,
     all_reduce_run, collective_cost, 0},
    {"AllGather", "wmap", 1, 1, 1, 1, 1, WM_TYPES_NUMERIC, all_gather_infer,
     all_gather_run, collective_cost, 0},
    WM_OPS_END,
};
