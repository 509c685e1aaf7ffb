// The passes that remove work: constant folding (a node whose inputs are
// all constants is computed once, by its reference kernel, and its outputs
// become constants) and dead-node removal (nodes nothing reads).
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// The most elements of one output a fold makes (1 GiB of float32); larger
// ones, and nodes whose work passes this times WM_OP_FOLD_WORK_PER_ELEMENT
// (2^32 operations), are computed at run time.
#define FOLD_MAX_ELEMS ((size_t)1 << 28)

// Computes node |index| of |g| from the constants in |known| by the one
// shape-and-fold rule of the plans (wm_op_infer_node), with a larger
// limit; on success ctx->out holds its outputs (the caller's).
static bool try_fold(const wm_graph_t *g, size_t index,
                     const wm_tensor_t *const *known, wm_op_ctx_t *ctx) {
  const wm_node_t *node = &g->nodes[index];
  for (int32_t i = 0; i < node->input_count; i++) {
    if (node->inputs[i] >= 0 && !known[node->inputs[i]]) {
      return false;
    }
  }
  wm_status_t s = wm_op_ctx_init_with(ctx, g, index, NULL, known);
  if (s) {
    wm_status_free(s);
    return false;
  }
  const wm_op_def_t *def = NULL;
  bool folded = false;
  s = wm_op_find_def(ctx, &def);
  if (!s) {
    s = wm_op_infer_node(def, ctx, FOLD_MAX_ELEMS, &folded);
  }
  // Not foldable now: the node runs, and reports what is wrong then.
  wm_status_free(s);
  if (!folded) {
    wm_op_ctx_deinit(ctx);
  }
  return folded;
}

wm_status_t rt_pass_fold(rt_rw_t *rw) {
  const wm_graph_t *g = rw->src;
  const wm_tensor_t **known = wm_calloc(g->value_count + 1, sizeof(void *));
  if (!known) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory folding constants");
  }
  for (size_t v = 0; v < g->value_count; v++) {
    // An initializer that is also an input is a default the caller may
    // replace: not a constant.
    if (g->values[v].initializer && !g->values[v].is_input) {
      known[v] = g->values[v].initializer;
    }
  }
  wm_status_t s = NULL;
  for (size_t k = 0; !s && k < g->node_count; k++) {
    size_t index = (size_t)rw->order[k];
    const wm_node_t *node = &g->nodes[index];
    wm_op_ctx_t ctx;
    if (!try_fold(g, index, known, &ctx)) {
      s = rt_rw_keep(rw, index);
      continue;
    }
    for (int32_t i = 0; i < node->output_count; i++) {
      int32_t id = node->outputs[i];
      wm_tensor_t *t = ctx.out[i];
      ctx.out[i] = NULL;
      if (id < 0) {
        wm_tensor_destroy(t);
      } else if (!s) {
        known[id] = t;
        s = rt_rw_const(rw, id, t);
      } else {
        wm_tensor_destroy(t);
      }
    }
    wm_op_ctx_deinit(&ctx);
    rt_rw_drop(rw, index);
  }
  free(known);
  return s;
}

wm_status_t rt_pass_dead(rt_rw_t *rw) {
  const wm_graph_t *g = rw->src;
  bool *dead = wm_calloc(g->node_count + 1, sizeof(bool));
  if (!dead) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory removing dead nodes");
  }
  // From the outputs back: a node whose outputs nothing reads is dead,
  // and then so may be its producers.
  for (size_t k = g->node_count; k-- > 0;) {
    size_t index = (size_t)rw->order[k];
    const wm_node_t *node = &g->nodes[index];
    bool used = false;
    for (int32_t i = 0; i < node->output_count && !used; i++) {
      int32_t id = node->outputs[i];
      used = id >= 0 && (rw->uses[id] > 0 || rw->pinned[id]);
    }
    if (used) {
      continue;
    }
    dead[index] = true;
    for (int32_t i = 0; i < node->input_count; i++) {
      if (node->inputs[i] >= 0) {
        rw->uses[node->inputs[i]]--;
      }
    }
  }
  wm_status_t s = NULL;
  for (size_t k = 0; !s && k < g->node_count; k++) {
    size_t index = (size_t)rw->order[k];
    if (dead[index]) {
      rt_rw_drop(rw, index);
    } else {
      s = rt_rw_keep(rw, index);
    }
  }
  free(dead);
  return s;
}
