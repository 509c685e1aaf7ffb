// Sequence operators: SequenceEmpty, SequenceConstruct, SequenceInsert,
// SequenceErase, SequenceAt, SequenceLength, SplitToSequence and
// ConcatFromSequence. Sequences live in the session's host memory: the
// shape rules are here, the session runs the nodes (src/runtime).
#include "ops/ops.h"

// A sequence type of element |dtype| (element shape unknown).
static wm_type_t seq_of(wm_dtype_t dtype) {
  wm_shape_t unknown = {.rank = -1};
  wm_type_t t = wm_type_tensor(dtype, &unknown);
  t.kind = WM_TYPE_SEQUENCE;
  return t;
}

static wm_status_t want_seq(const wm_op_ctx_t *ctx, int32_t i) {
  if (ctx->in_types[i].kind != WM_TYPE_SEQUENCE &&
      wm_dtype_is_valid(ctx->in_types[i].dtype)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input %d is not a sequence",
                       (int)i);
  }
  return NULL;
}

static wm_status_t empty_infer(wm_op_ctx_t *ctx) {
  int64_t dt = wm_node_attr_int(ctx->node, "dtype", WM_DTYPE_FLOAT);
  if (!wm_dtype_is_valid(dt) || dt == WM_DTYPE_UNDEFINED) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"dtype\" is %lld, not a data type",
                       (long long)dt);
  }
  ctx->out_types[0] = seq_of((wm_dtype_t)dt);
  return NULL;
}

static wm_status_t construct_infer(wm_op_ctx_t *ctx) {
  for (int32_t i = 1; i < ctx->n_in; i++) {
    if (ctx->in_types[i].dtype != ctx->in_types[0].dtype) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d is %s, input 0 %s: a sequence holds one "
                         "type",
                         (int)i, wm_dtype_name(ctx->in_types[i].dtype),
                         wm_dtype_name(ctx->in_types[0].dtype));
    }
  }
  ctx->out_types[0] = seq_of(ctx->in_types[0].dtype);
  return NULL;
}

// SequenceInsert and SequenceErase: the sequence's type.
static wm_status_t same_seq_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(want_seq(ctx, 0));
  ctx->out_types[0] = seq_of(ctx->in_types[0].dtype);
  return NULL;
}

static wm_status_t at_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(want_seq(ctx, 0));
  wm_shape_t unknown = {.rank = -1};
  ctx->out_types[0] = wm_type_tensor(ctx->in_types[0].dtype, &unknown);
  return NULL;
}

static wm_status_t length_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(want_seq(ctx, 0));
  wm_shape_t scalar = {.rank = 0};
  ctx->out_types[0] = wm_type_tensor(WM_DTYPE_INT64, &scalar);
  return NULL;
}

static wm_status_t split_infer(wm_op_ctx_t *ctx) {
  ctx->out_types[0] = seq_of(ctx->in_types[0].dtype);
  return NULL;
}

static wm_status_t concat_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(want_seq(ctx, 0));
  wm_shape_t unknown = {.rank = -1};
  ctx->out_types[0] = wm_type_tensor(ctx->in_types[0].dtype, &unknown);
  return NULL;
}

const wm_op_def_t wm_ops_sequence[] = {
    {"SequenceEmpty", "", 11, 0, 0, 1, 1, 0, empty_infer, wm_op_run_in_session,
     wm_op_cost_zero},
    {"SequenceConstruct", "", 11, 1, -1, 1, 1, 0, construct_infer,
     wm_op_run_in_session, wm_op_cost_zero},
    {"SequenceInsert", "", 11, 2, 3, 1, 1, 0, same_seq_infer,
     wm_op_run_in_session, wm_op_cost_zero},
    {"SequenceErase", "", 11, 1, 2, 1, 1, 0, same_seq_infer,
     wm_op_run_in_session, wm_op_cost_zero},
    {"SequenceAt", "", 11, 2, 2, 1, 1, 0, at_infer, wm_op_run_in_session,
     wm_op_cost_zero},
    {"SequenceLength", "", 11, 1, 1, 1, 1, 0, length_infer,
     wm_op_run_in_session, wm_op_cost_zero},
    {"SplitToSequence", "", 11, 1, 2, 1, 1, 0, split_infer,
     wm_op_run_in_session, wm_op_cost_zero},
    {"ConcatFromSequence", "", 11, 1, 1, 1, 1, 0, concat_infer,
     wm_op_run_in_session, wm_op_cost_zero},
    WM_OPS_END,
};
