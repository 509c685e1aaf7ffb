// Sequence and optional operators: SequenceEmpty, SequenceConstruct,
// SequenceInsert, SequenceErase, SequenceAt, SequenceLength,
// SplitToSequence, ConcatFromSequence, SequenceMap, Optional,
// OptionalHasElement and OptionalGetElement. Sequences and optionals live
// in the session's host memory: the shape rules are here, the session runs
// the nodes (src/runtime).
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
    if (!wm_op_has_input(ctx, i)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d is omitted (\"\"): a sequence element "
                         "needs a value",
                         (int)i);
    }
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

// SequenceMap: output j is a sequence of the body's output j.
static wm_status_t map_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(want_seq(ctx, 0));
  const wm_attr_t *a = wm_node_attr(ctx->node, "body");
  if (!a || a->type != WM_ATTR_GRAPH || !a->g) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"body\" (a graph) is required");
  }
  for (int32_t i = 0; i < ctx->n_in; i++) {
    if (!wm_op_has_input(ctx, i)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d is omitted (\"\"), and the body needs "
                         "it",
                         (int)i);
    }
  }
  const wm_graph_t *body = a->g;
  if (body->input_count != (size_t)ctx->n_in ||
      body->output_count != (size_t)ctx->n_out) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "the body has %zu inputs and %zu outputs, the node %d "
                       "and %d",
                       body->input_count, body->output_count, (int)ctx->n_in,
                       (int)ctx->n_out);
  }
  for (int32_t j = 0; j < ctx->n_out; j++) {
    wm_type_t t = body->values[body->outputs[j]].type;
    t.elem_kind = t.kind;
    t.kind = WM_TYPE_SEQUENCE;
    ctx->out_types[j] = t;
  }
  return NULL;
}

// Optional: wraps its input, or is empty of the attribute "type".
static wm_status_t optional_infer(wm_op_ctx_t *ctx) {
  wm_type_t t;
  if (wm_op_has_input(ctx, 0)) {
    t = ctx->in_types[0];
  } else {
    const wm_attr_t *a = wm_node_attr(ctx->node, "type");
    if (!a || a->type != WM_ATTR_TYPE_PROTO || !a->types) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "without an input the attribute \"type\" is "
                         "required");
    }
    t = a->types[0];
  }
  if (t.kind == WM_TYPE_OPTIONAL) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "an optional cannot hold an optional");
  }
  t.elem_kind = t.kind;
  t.kind = WM_TYPE_OPTIONAL;
  ctx->out_types[0] = t;
  return NULL;
}

static wm_status_t has_element_infer(wm_op_ctx_t *ctx) {
  if (ctx->opset < 18 &&
      (!wm_op_has_input(ctx, 0) || ctx->in_types[0].kind != WM_TYPE_OPTIONAL)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 must be an optional before opset 18");
  }
  wm_shape_t scalar = {.rank = 0};
  ctx->out_types[0] = wm_type_tensor(WM_DTYPE_BOOL, &scalar);
  return NULL;
}

// OptionalGetElement: the optional's element; from opset 18 a tensor or
// sequence passes through.
static wm_status_t get_element_infer(wm_op_ctx_t *ctx) {
  wm_type_t t = ctx->in_types[0];
  if (t.kind == WM_TYPE_OPTIONAL) {
    t.kind = t.elem_kind;
    t.elem_kind = WM_TYPE_TENSOR;
  } else if (ctx->opset < 18 && wm_dtype_is_valid(t.dtype)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 must be an optional before opset 18");
  }
  ctx->out_types[0] = t;
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
    {"SequenceMap", "", 17, 1, -1, 1, -1, 0, map_infer, wm_op_run_in_session,
     wm_op_cost_zero},
    {"Optional", "", 15, 0, 1, 1, 1, 0, optional_infer, wm_op_run_in_session,
     wm_op_cost_zero},
    {"OptionalHasElement", "", 15, 0, 1, 1, 1, 0, has_element_infer,
     wm_op_run_in_session, wm_op_cost_zero},
    {"OptionalGetElement", "", 15, 1, 1, 1, 1, 0, get_element_infer,
     wm_op_run_in_session, wm_op_cost_zero},
    WM_OPS_END,
};
