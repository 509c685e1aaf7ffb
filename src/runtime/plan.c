// Plans: what one input-shape signature needs, decided once. Shape
// inference on the concrete input types (shape computations folded into
// constants), placement of every node by the one rule on its concrete
// instance, the backends' op plans, copies across backend boundaries as
// steps, value lifetimes and their offsets in each backend's arena.
// Nodes whose shapes depend on data are left for the executor to place
// while running (dynamic steps).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// The most unplaceable nodes a STRICT failure lists.
enum { MAX_LISTED = 16 };

typedef struct builder {
  wm_session_t *s;
  rt_plan_t *p;
  const wm_graph_t *g;
  wm_type_t *types;            // per value (contiguous, for contexts)
  const wm_tensor_t **values;  // per value: known constant or NULL
  size_t cap;                  // allocated steps
  wm_strbuf_t unplaced;        // STRICT: nodes nothing takes
  size_t n_unplaced;
  uint32_t *readers;   // release_weights: per value, input slots and
                       // graph outputs reading it
  uint32_t *captured;  // per value: readers whose plan captured it
} builder_t;

static wm_status_t oom(void) {
  return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory planning");
}

uint64_t rt_key_hash(const wm_type_t *key, const bool *given, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    uint64_t parts[3] = {(uint64_t)given[i], (uint64_t)key[i].kind,
                         (uint64_t)key[i].dtype};
    for (int k = 0; k < 3; k++) {
      h = (h ^ parts[k]) * 1099511628211ull;
    }
    h = (h ^ (uint64_t)(int64_t)key[i].shape.rank) * 1099511628211ull;
    for (int32_t d = 0; d < key[i].shape.rank; d++) {
      h = (h ^ (uint64_t)key[i].shape.dims[d]) * 1099511628211ull;
    }
  }
  return h;
}

bool rt_key_equal(const rt_plan_t *p, const wm_type_t *key, const bool *given,
                  size_t n) {
  if (p->n_key != n) {
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    if (p->key_given[i] != given[i] || p->key[i].kind != key[i].kind ||
        p->key[i].dtype != key[i].dtype ||
        !wm_shape_equal(&p->key[i].shape, &key[i].shape)) {
      return false;
    }
  }
  return true;
}

// Appends a zeroed step; *out points at it.
static wm_status_t add_step(builder_t *b, rt_step_kind_t kind, int32_t node,
                            int32_t slot, rt_step_t **out) {
  rt_plan_t *p = b->p;
  WM_RETURN_IF_ERROR(
      wm_grow((void **)&p->steps, &b->cap, p->n_steps + 1, sizeof(rt_step_t)));
  rt_step_t *st = &p->steps[p->n_steps++];
  memset(st, 0, sizeof(*st));
  st->kind = kind;
  st->node = node;
  st->slot = slot;
  st->from = -1;
  st->dyn_slot = -1;
  *out = st;
  return NULL;
}

// Notes a use of value |id| by the step being added.
static void use(builder_t *b, int32_t id) {
  rt_pv_t *pv = &b->p->pv[id];
  int32_t step = (int32_t)b->p->n_steps + 1;  // the next step, from 1
  if (pv->last < step) {
    pv->last = step;
  }
}

// Makes value |id| available on |slot| for a step: a constant is marked
// for upload there, a computed value gets a copy step from its home.
static wm_status_t need_on(builder_t *b, int32_t id, int32_t slot) {
  rt_pv_t *pv = &b->p->pv[id];
  if (pv->on[slot]) {
    return NULL;
  }
  if (pv->home < 0 && pv->first == 0 &&
      (pv->kind == RT_PV_ARENA || pv->kind == RT_PV_DYNAMIC)) {
    // A bound input lives where its first reader runs.
    pv->home = slot;
    pv->on[slot] = true;
    return NULL;
  }
  if (pv->kind == RT_PV_CONST) {
    pv->on[slot] = true;
    return NULL;
  }
  if (pv->kind == RT_PV_ITEM || pv->kind == RT_PV_NONE ||
      (pv->kind == RT_PV_ARENA && pv->home < 0)) {
    return WM_ERROR(INTERNAL, "value \"%s\" has no tensor to copy",
                    b->g->values[id].name);
  }
  use(b, id);
  rt_step_t *st;
  WM_RETURN_IF_ERROR(add_step(b, RT_STEP_COPY, id, slot, &st));
  st->from = pv->home;  // -1: where a dynamic step put it
  uint64_t bytes = 0;
  if (pv->kind == RT_PV_ARENA) {
    wm_tensor_desc d =
        wm_tensor_desc_from_type(pv->type.dtype, &pv->type.shape);
    if (!rt_desc_bytes(&d, &bytes)) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "value \"%s\" is too large",
                      b->g->values[id].name);
    }
  }
  st->copy_bytes = bytes;
  pv->on[slot] = true;
  return NULL;
}

// The placement entry of node |index| (refusal storage attached).
static wm_placement_t *entry(builder_t *b, size_t index) {
  wm_placement_t *pl = &b->p->placement[index];
  const wm_node_t *node = &b->g->nodes[index];
  pl->node = b->s->nodes[index].label;
  pl->op_type = node->op_type;
  pl->domain = node->domain;
  pl->refusals = &b->p->refusals[index * RT_MAX_SLOTS];
  return pl;
}

// Backend |k|'s answer for |op|: its library tier's, or a generated
// kernel's when |gen| defines the instance (rt_gen_answer).
static wm_status_t answer(wm_session_t *s, size_t k, const wm_op_desc *op,
                          const wm_gen_program_t *gen, wm_op_support *out,
                          bool *out_generated) {
  WM_RETURN_IF_ERROR(wm_backend_op_query(s->slots[k].backend, op, out));
  *out_generated = rt_gen_answer(s->slots[k].backend, s->kernels, gen, out);
  return NULL;
}

wm_status_t rt_place(wm_session_t *s, wm_placement_t *pl, const wm_op_desc *op,
                     const wm_gen_program_t *gen, int32_t *out_slot,
                     bool *out_generated) {
  wm_op_support answers[RT_MAX_SLOTS];
  bool generated[RT_MAX_SLOTS] = {false};
  *out_slot = -1;
  for (size_t k = 0; k < s->n_listed; k++) {
    WM_RETURN_IF_ERROR(answer(s, k, op, gen, &answers[k], &generated[k]));
  }
  int32_t chosen = wm_place_choose(answers, s->n_listed);
  pl->fell_back = false;
  if (chosen < 0 && s->n_slots > s->n_listed) {
    size_t fb = s->n_listed;
    WM_RETURN_IF_ERROR(answer(s, fb, op, gen, &answers[fb], &generated[fb]));
    if (answers[fb].level > WM_SUPPORT_NONE) {
      chosen = (int32_t)fb;
      pl->fell_back = true;
    }
  }
  // Backends before the chosen one (all listed ones when nothing or the
  // fallback took it) explain why they did not get the node.
  pl->refusal_count = 0;
  wm_placement_refusal_t *refusals = (wm_placement_refusal_t *)pl->refusals;
  for (size_t k = 0; k < s->n_listed && (chosen < 0 || (int32_t)k < chosen);
       k++) {
    wm_placement_refusal_t *r = &refusals[pl->refusal_count++];
    r->backend = wm_backend_name(s->slots[k].backend);
    r->level = answers[k].level;
    r->reason = answers[k].reason;
    r->detail = answers[k].detail ? answers[k].detail : "";
  }
  pl->kernel = NULL;
  if (out_generated) {
    *out_generated = chosen >= 0 && generated[chosen];
  }
  if (chosen >= 0) {
    pl->backend = wm_backend_name(s->slots[chosen].backend);
    pl->impl = answers[chosen].impl;
    pl->level = answers[chosen].level;
  } else {
    pl->backend = "none";
    pl->impl = WM_IMPL_NONE;
    pl->level = WM_SUPPORT_NONE;
  }
  *out_slot = chosen;
  return NULL;
}

// Lists node |index| among those nothing takes.
static void note_unplaced(builder_t *b, size_t index) {
  const wm_placement_t *pl = &b->p->placement[index];
  if (b->n_unplaced++ >= MAX_LISTED) {
    return;
  }
  wm_strbuf_printf(&b->unplaced, "\n  node \"%s\" (%s):", pl->node,
                   pl->op_type);
  for (size_t r = 0; r < pl->refusal_count; r++) {
    const wm_placement_refusal_t *rf = &pl->refusals[r];
    wm_strbuf_printf(&b->unplaced, "%s %s: %s%s%s", r ? ";" : "", rf->backend,
                     wm_why_name(rf->reason), *rf->detail ? ", " : "",
                     rf->detail);
  }
}

// A node the session runs itself: its outputs are items or tensors the
// run stores (dynamic memory on slot 0).
static wm_status_t plan_host(builder_t *b, size_t index) {
  const wm_node_t *node = &b->g->nodes[index];
  const rt_node_t *rn = &b->s->nodes[index];
  wm_placement_t *pl = entry(b, index);
  pl->backend = "session";
  pl->level = WM_SUPPORT_SUPPORTED;
  pl->impl = WM_IMPL_NATIVE_KERNEL;
  for (int32_t i = 0; i < node->input_count; i++) {
    if (node->inputs[i] >= 0) {
      use(b, node->inputs[i]);
    }
  }
  for (size_t k = 0; k < rn->n_implicit; k++) {
    use(b, rn->implicit[k]);
  }
  rt_step_t *st;
  WM_RETURN_IF_ERROR(
      add_step(b, RT_STEP_HOST, (int32_t)index, b->s->host_slot, &st));
  int32_t step = (int32_t)b->p->n_steps;
  for (int32_t i = 0; i < node->output_count; i++) {
    int32_t id = node->outputs[i];
    if (id < 0) {
      continue;
    }
    rt_pv_t *pv = &b->p->pv[id];
    pv->type = b->g->values[id].type;
    b->types[id] = pv->type;
    pv->kind = pv->type.kind == WM_TYPE_TENSOR ? RT_PV_DYNAMIC : RT_PV_ITEM;
    pv->home = b->s->host_slot;
    pv->on[pv->home] = pv->kind == RT_PV_DYNAMIC;
    pv->first = step;
  }
  return NULL;
}

// Frees the data of weight |v| (release_weights): every reader's plan
// holds its own form of it. Its owner is a tensor of the passes or an
// initializer of the user's graph; the prepared graph borrows it.
static void release_weight(builder_t *b, int32_t v) {
  wm_session_t *s = b->s;
  wm_tensor_t *t = b->g->values[v].initializer;
  if (!t || !t->data || b->p->folded[v]) {
    return;
  }
  wm_tensor_t *owner = NULL;
  for (size_t i = 0; i < s->prep.n_consts && !owner; i++) {
    if (s->prep.consts[i]->data == t->data && !s->prep.consts[i]->borrowed) {
      owner = s->prep.consts[i];
    }
  }
  int32_t u = wm_graph_find_value(s->user, b->g->values[v].name);
  if (u >= 0 && s->foldable_reader[u]) {
    return;
  }
  wm_tensor_t *mine = u >= 0 ? s->user->values[u].initializer : NULL;
  if (!owner && mine && mine->data == t->data && !mine->borrowed) {
    owner = mine;
  }
  if (!owner) {
    return;  // borrowed from elsewhere (external data the caller holds)
  }
  free(owner->data);
  owner->data = NULL;
  t->data = NULL;
  memset(b->p->pv[v].on, 0, sizeof(b->p->pv[v].on));
}

// Counts the inputs of |node| whose plan captured them and frees the
// weights every reader has now captured.
static void release_captured(builder_t *b, const wm_node_t *node,
                             uint64_t captured) {
  if (!b->readers) {
    return;
  }
  for (int32_t i = 0; i < node->input_count && i < 64; i++) {
    int32_t v = node->inputs[i];
    if (v >= 0 && ((captured >> i) & 1) && ++b->captured[v] == b->readers[v]) {
      release_weight(b, v);
    }
  }
}

// A node on a backend: placed now when its instance is concrete, else
// placed while running.
static wm_status_t plan_node(builder_t *b, size_t index, const wm_op_def_t *def,
                             wm_op_ctx_t *ctx) {
  wm_session_t *s = b->s;
  const wm_node_t *node = &b->g->nodes[index];
  wm_node_attrs_t attrs;
  wm_status_t st = wm_node_attrs_init(&attrs, node);
  size_t n = (size_t)(ctx->n_in + ctx->n_out) + 1;
  wm_tensor_desc *descs = st ? NULL : wm_calloc(n, sizeof(*descs));
  const void **vals = st ? NULL : wm_calloc(n, sizeof(void *));
  if (!st && (!descs || !vals)) {
    st = oom();
  }
  wm_op_desc op;
  int32_t slot = -1;
  if (!st) {
    st = wm_node_op_desc(node, def, ctx, &attrs, descs, vals, &op);
  }
  // An instance whose parameters need values known only while running
  // (a Slice's bounds computed by the graph) is planned then.
  bool concrete = wm_op_ctx_is_concrete(ctx) && !attrs.params.pending;
  wm_gen_program_t *gen = NULL;
  bool generated = false;
  if (!st && concrete && s->kernels != WM_KERNELS_LIBRARY) {
    st = rt_gen_define(def, ctx, &gen);
  }
  if (!st) {
    st = rt_place(s, entry(b, index), &op, gen, &slot, &generated);
  }
  if (!st && slot < 0 && concrete) {
    note_unplaced(b, index);
  }
  rt_step_t *step = NULL;
  if (!st && concrete && slot >= 0) {
    for (int32_t i = 0; !st && i < ctx->n_in; i++) {
      if (node->inputs[i] >= 0) {
        st = need_on(b, node->inputs[i], slot);
      }
    }
    for (int32_t i = 0; !st && i < ctx->n_in; i++) {
      if (node->inputs[i] >= 0) {
        use(b, node->inputs[i]);
      }
    }
    if (!st) {
      st = add_step(b, RT_STEP_OP, (int32_t)index, slot, &step);
    }
    if (!st) {
      st = rt_open_slot(s, (size_t)slot);
    }
    uint64_t ws = 0, captured = 0;
    int32_t *in_place = NULL;
    if (!st && ctx->n_out > 0) {
      in_place = wm_calloc((size_t)ctx->n_out, sizeof(int32_t));
      st = in_place ? NULL : oom();
      for (int32_t i = 0; !st && i < ctx->n_out; i++) {
        in_place[i] = -1;
      }
    }
    if (!st && generated) {
      step->gen = gen;  // compiled with the plan's other kernels
      gen = NULL;
      ws = rt_gen_workspace(step->gen, step->temp_offsets);
    } else if (!st) {
      rt_backend_t *be = &s->slots[slot];
      op.captured = &captured;
      op.in_place = in_place;
      st = rt_slot_error(
          be, be->api->library->op_plan(be->dev, &op, &step->plan, &ws),
          "op_plan");
      op.captured = NULL;
      op.in_place = NULL;
      if (st) {
        st = wm_status_annotate(st, "node \"%s\" (%s)", ctx->label,
                                node->op_type);
      }
    }
    if (!st) {
      step->ws_bytes = ws;
      step->captured = captured;
      release_captured(b, node, captured);
      for (int32_t i = 0; in_place && i < ctx->n_out; i++) {
        if (in_place[i] >= 0 && in_place[i] < ctx->n_in) {
          step->in_place = in_place;  // some output may share an input
          in_place = NULL;
        }
      }
    }
    free(in_place);
    if (!st) {
      step->n_in = (uint32_t)ctx->n_in;
      step->n_out = (uint32_t)ctx->n_out;
      step->views = wm_calloc(n, sizeof(wm_buffer_view));
      step->io = wm_calloc(n, sizeof(int32_t));
      st = step->views && step->io ? NULL : oom();
    }
    for (size_t i = 0; !st && i + 1 < n; i++) {
      bool is_in = i < (size_t)ctx->n_in;
      int32_t id = is_in ? node->inputs[i] : node->outputs[i - ctx->n_in];
      step->io[i] = id;
      step->views[i].struct_size = sizeof(wm_buffer_view);
      step->views[i].desc = descs[i];
    }
  } else if (!st) {
    // Shapes known only while running: placed then (the entry above is
    // provisional), on whatever the instance turns out to be.
    for (int32_t i = 0; i < ctx->n_in; i++) {
      if (node->inputs[i] >= 0) {
        use(b, node->inputs[i]);
      }
    }
    st = add_step(b, RT_STEP_DYNAMIC, (int32_t)index, slot, &step);
  }
  int32_t at = (int32_t)b->p->n_steps;
  for (int32_t i = 0; !st && i < ctx->n_out; i++) {
    int32_t id = node->outputs[i];
    if (id < 0) {
      continue;
    }
    rt_pv_t *pv = &b->p->pv[id];
    pv->type = ctx->out_types[i];
    b->types[id] = pv->type;
    pv->first = at;
    if (step->kind == RT_STEP_OP) {
      pv->kind =
          pv->type.dtype == WM_DTYPE_STRING ? RT_PV_DYNAMIC : RT_PV_ARENA;
      pv->home = slot;
      pv->on[slot] = true;
    } else {
      pv->kind = RT_PV_DYNAMIC;
      pv->home = -1;
    }
  }
  rt_gen_free(gen);
  free(descs);
  free(vals);
  wm_node_attrs_deinit(&attrs);
  return st;
}

// Plans node |index|: folded into constants, run by the session, or on a
// backend.
static wm_status_t plan_one(builder_t *b, size_t index) {
  const wm_node_t *node = &b->g->nodes[index];
  if (b->s->nodes[index].host) {
    return plan_host(b, index);
  }
  // A node set at session creation to run on a backend reads tensors: a
  // value whose type the graph left open (a loop body's input) may turn
  // out to be a sequence or optional only now.
  for (int32_t i = 0; i < node->input_count; i++) {
    int32_t id = node->inputs[i];
    if (id >= 0 && b->types[id].kind != WM_TYPE_TENSOR) {
      char buf[96];
      return WM_ERROR(INVALID_ARGUMENT,
                      "node \"%s\" (%s): input %d (\"%s\") is %s, but the "
                      "graph gives it no such type, so the node was set to "
                      "run on tensors",
                      b->s->nodes[index].label, node->op_type, i,
                      b->g->values[id].name,
                      wm_type_format(&b->types[id], buf, sizeof(buf)));
    }
  }
  wm_op_ctx_t ctx;
  WM_RETURN_IF_ERROR(
      wm_op_ctx_init_with(&ctx, b->g, index, b->types, b->values));
  const wm_op_def_t *def = NULL;
  bool folded = false;
  wm_status_t st = wm_op_find_def(&ctx, &def);
  if (!st) {
    // Without the fold pass nothing is computed ahead (every node runs).
    size_t limit = rt_pass_enabled(b->s->passes, "fold") ? WM_OP_FOLD_LIMIT : 0;
    st = wm_op_infer_node(def, &ctx, limit, &folded);
  }
  if (!st && folded) {
    // Computed here from constants: its outputs are constants of the plan
    // and the node does not run.
    for (int32_t i = 0; i < ctx.n_out; i++) {
      int32_t id = node->outputs[i];
      if (id < 0) {
        wm_tensor_destroy(ctx.out[i]);
      } else {
        rt_pv_t *pv = &b->p->pv[id];
        pv->type = wm_type_tensor(ctx.out[i]->dtype, &ctx.out[i]->shape);
        b->types[id] = pv->type;
        pv->kind = RT_PV_CONST;
        pv->home = -1;
        b->p->folded[id] = ctx.out[i];
        pv->value = ctx.out[i];
        b->values[id] = ctx.out[i];
      }
      ctx.out[i] = NULL;
    }
    wm_placement_t *pl = entry(b, index);
    pl->backend = "-";
    pl->pass = "fold";
  } else if (!st) {
    st = plan_node(b, index, def, &ctx);
  }
  if (st && !wm_status_message(st)[0]) {
    st = wm_status_annotate(st, "node \"%s\" (%s)", ctx.label, node->op_type);
  }
  wm_op_ctx_deinit(&ctx);
  return st;
}

// Uploads the constants the plan's steps read on each slot: initializers
// once per session, folded constants once per plan.
static wm_status_t upload_constants(builder_t *b) {
  wm_session_t *s = b->s;
  rt_plan_t *p = b->p;
  for (size_t v = 0; v < b->g->value_count; v++) {
    rt_pv_t *pv = &p->pv[v];
    if (pv->kind != RT_PV_CONST) {
      continue;
    }
    for (size_t k = 0; k < s->n_slots; k++) {
      if (!pv->on[k]) {
        continue;
      }
      bool init = p->folded[v] == NULL;
      rt_loc_t *loc = init ? &s->cloc[v * s->n_slots + k] : NULL;
      if (loc && loc->buf) {
        continue;
      }
      rt_upload_t *u = NULL;
      if (!init) {
        WM_RETURN_IF_ERROR(wm_grow((void **)&p->uploads, &p->uploads_cap,
                                   p->n_uploads + 1, sizeof(rt_upload_t)));
        u = &p->uploads[p->n_uploads++];
        memset(u, 0, sizeof(*u));
        u->value = (int32_t)v;
        u->slot = (int32_t)k;
        loc = &u->loc;
      }
      const wm_tensor_t *t = pv->value;
      wm_status_t st = rt_put_constant(s, k, t, loc);
      if (st) {
        return wm_status_annotate(st, "uploading constant \"%s\"",
                                  b->g->values[v].name);
      }
    }
  }
  return NULL;
}

// True when node |n| only reinterprets its input's bytes.
static bool is_view_op(const wm_node_t *n) {
  static const char *const ops[] = {"Reshape", "Flatten", "Squeeze",
                                    "Unsqueeze", "Identity"};
  for (size_t i = 0; wm_domain_is_onnx(n->domain) && i < 5; i++) {
    if (strcmp(n->op_type, ops[i]) == 0) {
      return n->input_count >= 1 && n->output_count == 1;
    }
  }
  return false;
}

// Zero-copy views: the output of a Reshape, Flatten, Squeeze, Unsqueeze
// or Identity whose input lives in the same slot's arena shares the
// input's bytes (the region of the value it views, whose lifetime grows
// to cover the view's), and its step runs nothing.
static void plan_views(builder_t *b) {
  rt_plan_t *p = b->p;
  for (size_t i = 0; i < p->n_steps; i++) {
    rt_step_t *st = &p->steps[i];
    if (st->kind != RT_STEP_OP || !is_view_op(&b->g->nodes[st->node])) {
      continue;
    }
    const wm_node_t *n = &b->g->nodes[st->node];
    int32_t x = n->inputs[0], y = n->outputs[0];
    if (x < 0 || y < 0) {
      continue;
    }
    rt_pv_t *px = &p->pv[x], *py = &p->pv[y];
    if (px->kind != RT_PV_ARENA || py->kind != RT_PV_ARENA ||
        !px->on[st->slot] || py->home != st->slot ||
        px->type.dtype != py->type.dtype) {
      continue;
    }
    wm_tensor_desc dx =
        wm_tensor_desc_from_type(px->type.dtype, &px->type.shape);
    wm_tensor_desc dy =
        wm_tensor_desc_from_type(py->type.dtype, &py->type.shape);
    uint64_t bx, by;
    if (!rt_desc_bytes(&dx, &bx) || !rt_desc_bytes(&dy, &by) || bx != by) {
      continue;
    }
    int32_t root = px->view_slot == st->slot ? px->view_of : x;
    rt_pv_t *pr = &p->pv[root];
    pr->last = pr->last > py->last ? pr->last : py->last;
    py->view_of = root;
    py->view_slot = st->slot;
    st->kind = RT_STEP_VIEW;
    if (st->plan) {
      b->s->slots[st->slot].api->library->op_plan_destroy(st->plan);
      st->plan = NULL;
    }
  }
}

// The value whose region holds |v|'s bytes on slot |k|: |v|, or the value
// it is a view of.
static int32_t region_of(const rt_plan_t *p, int32_t v, int32_t k) {
  return p->pv[v].view_slot == k ? p->pv[v].view_of : v;
}

// In-place outputs: where a step's plan may write output j into input
// i's bytes (rt_step_t.in_place) and nothing reads that input after the
// step (nor any view of its bytes), the output shares the input's region,
// as a view does, and the step still runs. Bound inputs (the caller's
// values) and inputs the step reads twice keep their bytes.
static void plan_in_place(builder_t *b) {
  rt_plan_t *p = b->p;
  for (size_t i = 0; i < p->n_steps; i++) {
    rt_step_t *st = &p->steps[i];
    if (st->kind != RT_STEP_OP || !st->in_place) {
      continue;
    }
    const int32_t k = st->slot, now = (int32_t)i + 1;
    for (uint32_t j = 0; j < st->n_out; j++) {
      const int32_t in = st->in_place[j];
      if (in < 0 || (uint32_t)in >= st->n_in) {
        continue;
      }
      const int32_t x = st->io[in], y = st->io[st->n_in + j];
      if (x < 0 || y < 0) {
        continue;
      }
      const int32_t root = region_of(p, x, k);
      rt_pv_t *pr = &p->pv[root], *px = &p->pv[x], *py = &p->pv[y];
      bool ok = pr->kind == RT_PV_ARENA && py->kind == RT_PV_ARENA &&
                px->on[k] && pr->on[k] && py->home == k && py->view_slot < 0 &&
                pr->first > 0 && pr->last == now &&
                px->type.dtype == py->type.dtype;
      for (uint32_t q = 0; ok && q < st->n_in; q++) {
        ok = q == (uint32_t)in || st->io[q] < 0 ||
             region_of(p, st->io[q], k) != root;
      }
      wm_tensor_desc dx, dy;
      uint64_t bx, by;
      if (ok) {
        dx = wm_tensor_desc_from_type(px->type.dtype, &px->type.shape);
        dy = wm_tensor_desc_from_type(py->type.dtype, &py->type.shape);
        ok = rt_desc_bytes(&dx, &bx) && rt_desc_bytes(&dy, &by) && bx == by;
      }
      if (!ok) {
        continue;
      }
      p->stats.in_place_outputs++;
      pr->last = py->last > pr->last ? py->last : pr->last;
      py->view_of = root;
      py->view_slot = k;
      for (size_t v = 0; v < b->g->value_count; v++) {
        if (p->pv[v].view_slot == k && p->pv[v].view_of == y) {
          p->pv[v].view_of = root;  // views of the output view the input
        }
      }
    }
  }
}

// Lays the arena values of every slot out by their lifetimes.
static wm_status_t plan_memory(builder_t *b) {
  wm_session_t *s = b->s;
  rt_plan_t *p = b->p;
  size_t nv = b->g->value_count;
  rt_region_t *regions = wm_calloc(nv + p->n_steps + 1, sizeof(rt_region_t));
  int32_t *ids = wm_calloc(nv + p->n_steps + 1, sizeof(int32_t));
  wm_status_t st = regions && ids ? NULL : oom();
  for (size_t k = 0; !st && k < s->n_slots; k++) {
    size_t n = 0;
    for (size_t v = 0; v < nv; v++) {
      rt_pv_t *pv = &p->pv[v];
      if (pv->kind != RT_PV_ARENA || !pv->on[k] ||
          pv->view_slot == (int32_t)k) {
        continue;
      }
      wm_tensor_desc d =
          wm_tensor_desc_from_type(pv->type.dtype, &pv->type.shape);
      uint64_t bytes;
      if (!rt_desc_bytes(&d, &bytes)) {
        st = WM_ERROR(RESOURCE_EXHAUSTED, "value \"%s\" is too large",
                      b->g->values[v].name);
        break;
      }
      regions[n] =
          (rt_region_t){.bytes = bytes,
                        .first = pv->first,
                        .last = pv->last < pv->first ? pv->first : pv->last};
      ids[n++] = (int32_t)v;
    }
    size_t n_values = n;
    for (size_t i = 0; !st && i < p->n_steps; i++) {
      // A workspace lives during its step only (steps count from 1).
      const rt_step_t *step = &p->steps[i];
      if (step->kind == RT_STEP_OP && step->slot == (int32_t)k &&
          step->ws_bytes) {
        regions[n] = (rt_region_t){.bytes = step->ws_bytes,
                                   .first = (int32_t)i + 1,
                                   .last = (int32_t)i + 1};
        ids[n++] = (int32_t)i;
      }
    }
    if (!st) {
      st = rt_assign_offsets(regions, n, &p->arena_bytes[k]);
    }
    for (size_t i = n_values; !st && i < n; i++) {
      p->steps[ids[i]].ws_offset = regions[i].offset;
    }
    n = n_values;
    if (!st && n > 0 && p->arena_bytes[k] == 0) {
      p->arena_bytes[k] = 64;  // empty tensors still need a buffer
    }
    for (size_t i = 0; !st && i < n; i++) {
      p->pv[ids[i]].offset[k] = regions[i].offset;
    }
    for (size_t v = 0; !st && v < nv; v++) {
      rt_pv_t *pv = &p->pv[v];
      if (pv->view_slot == (int32_t)k) {
        pv->offset[k] = p->pv[pv->view_of].offset[k];
      }
    }
  }
  free(regions);
  free(ids);
  return st;
}

// Release lists: dynamic values and items go at their last use (right
// after their producer when nothing reads them); graph outputs stay.
static wm_status_t plan_releases(builder_t *b) {
  rt_plan_t *p = b->p;
  for (size_t v = 0; v < b->g->value_count; v++) {
    rt_pv_t *pv = &p->pv[v];
    if ((pv->kind != RT_PV_DYNAMIC && pv->kind != RT_PV_ITEM) ||
        pv->last == INT32_MAX) {
      continue;
    }
    int32_t at = pv->last > pv->first ? pv->last : pv->first;
    if (at < 1 || (size_t)at > p->n_steps) {
      continue;  // a bound input nothing reads: released after the run
    }
    rt_step_t *st = &p->steps[at - 1];
    size_t cap = st->n_release;
    WM_RETURN_IF_ERROR(wm_grow((void **)&st->release, &cap, st->n_release + 1,
                               sizeof(int32_t)));
    st->release[st->n_release++] = (int32_t)v;
  }
  return NULL;
}

// Sets the plan's starting values: bound inputs from the signature,
// initializers as constants.
static void plan_inputs(builder_t *b, const wm_type_t *key, const bool *given) {
  wm_session_t *s = b->s;
  rt_plan_t *p = b->p;
  for (size_t v = 0; v < b->g->value_count; v++) {
    const wm_value_t *gv = &b->g->values[v];
    rt_pv_t *pv = &p->pv[v];
    pv->home = -1;
    pv->view_of = -1;
    pv->view_slot = -1;
    pv->type = gv->type;
    if (gv->initializer) {
      pv->kind = RT_PV_CONST;
      pv->value = gv->initializer;
      pv->type =
          wm_type_tensor(gv->initializer->dtype, &gv->initializer->shape);
      b->values[v] = gv->initializer;
    }
    b->types[v] = pv->type;
  }
  for (size_t j = 0; j < s->n_bindable; j++) {
    int32_t v = s->bindable[j];
    rt_pv_t *pv = &p->pv[v];
    if (!given[j]) {
      continue;
    }
    pv->value = NULL;
    b->values[v] = NULL;
    pv->type = key[j];
    b->types[v] = key[j];
    pv->first = 0;
    if (key[j].kind != WM_TYPE_TENSOR) {
      pv->kind = RT_PV_ITEM;
      continue;
    }
    pv->kind = key[j].dtype == WM_DTYPE_STRING || !wm_type_is_concrete(&key[j])
                   ? RT_PV_DYNAMIC
                   : RT_PV_ARENA;
  }
}

// Bound inputs that no backend step reads live on the host slot (the
// session's own steps read them from there).
static void plan_homeless_inputs(builder_t *b) {
  for (size_t j = 0; j < b->s->n_bindable; j++) {
    rt_pv_t *pv = &b->p->pv[b->s->bindable[j]];
    if (pv->first == 0 && pv->home < 0 &&
        (pv->kind == RT_PV_ARENA || pv->kind == RT_PV_DYNAMIC)) {
      pv->home = b->s->host_slot;
      pv->on[pv->home] = true;
    }
  }
}

void rt_user_placement_fill(const wm_session_t *s, rt_plan_t *p) {
  const wm_graph_t *user = s->user;
  for (size_t u = 0; u < user->node_count; u++) {
    wm_placement_t *up = &p->user_placement[u];
    const wm_node_t *node = &user->nodes[u];
    int32_t n = s->prep.node_of[u];
    if (n >= 0) {
      *up = p->placement[n];
      const wm_node_t *runs = &s->graph->nodes[n];
      int32_t primary = s->primary[n];
      if (!up->pass && primary != (int32_t)u) {
        up->runs_in = s->user_labels[primary];
      }
      if (!up->pass &&
          (up->runs_in || strcmp(runs->op_type, node->op_type) != 0)) {
        up->runs_as = runs->op_type;
      }
      if (!up->pass) {
        up->pass = s->prep.pass_of[u];
      }
    } else {
      up->backend = "-";
      up->pass = s->prep.pass_of[u] ? s->prep.pass_of[u] : "dead";
    }
    up->node = s->user_labels[u];
    up->op_type = node->op_type;
    up->domain = node->domain;
  }
}

// The placement report in terms of the user's nodes.
static wm_status_t user_placement(wm_session_t *s, rt_plan_t *p) {
  p->user_placement =
      wm_calloc(s->user->node_count + 1, sizeof(wm_placement_t));
  if (!p->user_placement) {
    return oom();
  }
  rt_user_placement_fill(s, p);
  return NULL;
}

wm_status_t rt_plan_build(wm_session_t *s, const wm_type_t *key,
                          const bool *given, rt_plan_t **out_plan) {
  *out_plan = NULL;
  const wm_graph_t *g = s->graph;
  size_t nv = g->value_count + 1, nn = g->node_count + 1;
  rt_plan_t *p = wm_calloc(1, sizeof(*p));
  builder_t b = {.s = s, .p = p, .g = g};
  wm_strbuf_init(&b.unplaced);
  wm_status_t st = p ? NULL : oom();
  if (!st) {
    p->n_key = s->n_bindable;
    p->key = wm_calloc(p->n_key + 1, sizeof(wm_type_t));
    p->key_given = wm_calloc(p->n_key + 1, sizeof(bool));
    p->pv = wm_calloc(nv, sizeof(rt_pv_t));
    p->folded = wm_calloc(nv, sizeof(wm_tensor_t *));
    p->placement = wm_calloc(nn, sizeof(wm_placement_t));
    p->refusals = wm_calloc(nn * RT_MAX_SLOTS, sizeof(wm_placement_refusal_t));
    b.types = wm_calloc(nv, sizeof(wm_type_t));
    b.values = wm_calloc(nv, sizeof(wm_tensor_t *));
    if (!p->key || !p->key_given || !p->pv || !p->folded || !p->placement ||
        !p->refusals || !b.types || !b.values) {
      st = oom();
    }
  }
  if (!st) {
    memcpy(p->key, key, p->n_key * sizeof(wm_type_t));
    memcpy(p->key_given, given, p->n_key * sizeof(bool));
    p->hash = rt_key_hash(key, given, p->n_key);
    p->bound_generation = UINT64_MAX;  // never activated
    plan_inputs(&b, key, given);
  }
  if (!st && s->release_weights) {
    b.readers = wm_calloc(nv, sizeof(uint32_t));
    b.captured = wm_calloc(nv, sizeof(uint32_t));
    st = b.readers && b.captured ? NULL : oom();
    for (size_t n = 0; !st && n < g->node_count; n++) {
      for (int32_t i = 0; i < g->nodes[n].input_count; i++) {
        if (g->nodes[n].inputs[i] >= 0) {
          b.readers[g->nodes[n].inputs[i]]++;
        }
      }
    }
    for (size_t i = 0; !st && i < g->output_count; i++) {
      b.readers[g->outputs[i]]++;  // never captured: kept
    }
  }
  for (size_t k = 0; !st && k < g->node_count; k++) {
    st = plan_one(&b, (size_t)s->order[k]);
  }
  if (!st) {
    st = rt_gen_build(s, p);
  }
  if (!st && b.n_unplaced) {
    wm_strbuf_t names;
    wm_strbuf_init(&names);
    for (size_t k = 0; k < s->n_listed; k++) {
      wm_strbuf_printf(&names, "%s%s", k ? "," : "",
                       wm_backend_name(s->slots[k].backend));
    }
    st = WM_ERROR(
        UNIMPLEMENTED, "%zu node%s cannot be placed on %s%s:%s%s", b.n_unplaced,
        b.n_unplaced == 1 ? "" : "s", wm_strbuf_str(&names),
        s->n_slots > s->n_listed ? " or the fallback" : "",
        wm_strbuf_str(&b.unplaced), b.n_unplaced > MAX_LISTED ? "\n  ..." : "");
    wm_strbuf_deinit(&names);
  }
  for (size_t i = 0; !st && i < g->output_count; i++) {
    rt_pv_t *pv = &p->pv[g->outputs[i]];
    pv->last = INT32_MAX;
    if (pv->kind == RT_PV_NONE) {
      st = WM_ERROR(INTERNAL, "output \"%s\" is not computed",
                    g->values[g->outputs[i]].name);
    }
  }
  if (!st) {
    plan_homeless_inputs(&b);
    st = plan_releases(&b);
  }
  if (!st) {
    plan_views(&b);
    if (s->in_place) {
      plan_in_place(&b);
    }
    st = plan_memory(&b);
  }
  if (!st) {
    st = upload_constants(&b);
  }
  if (!st) {
    int32_t last = -2;
    for (size_t k = 0; k < g->node_count; k++) {
      const wm_placement_t *pl = &p->placement[s->order[k]];
      if (pl->pass) {
        continue;
      }
      int32_t slot = -1;
      for (size_t j = 0; j < s->n_slots; j++) {
        if (strcmp(pl->backend, wm_backend_name(s->slots[j].backend)) == 0) {
          slot = (int32_t)j;
        }
      }
      slot = strcmp(pl->backend, "session") == 0 ? 0 : slot;
      p->stats.partitions += slot != last;
      last = slot;
    }
  }
  if (!st) {
    st = user_placement(s, p);
  }
  wm_strbuf_deinit(&b.unplaced);
  free(b.readers);
  free(b.captured);
  free(b.types);
  free((void *)b.values);
  if (st) {
    rt_plan_destroy(s, p);
    return st;
  }
  *out_plan = p;
  return NULL;
}

void rt_plan_destroy(wm_session_t *s, rt_plan_t *p) {
  if (!p) {
    return;
  }
  if (s->active == p) {
    s->active = NULL;
  }
  for (size_t i = 0; i < p->n_steps; i++) {
    rt_step_t *st = &p->steps[i];
    if (st->plan) {
      s->slots[st->slot].api->library->op_plan_destroy(st->plan);
    }
    if (st->dyn_plan) {
      s->slots[st->dyn_slot].api->library->op_plan_destroy(st->dyn_plan);
    }
    free(st->dyn_key);
    free(st->dyn_params);
    rt_gen_free(st->gen);
    free(st->stages);
    free(st->views);
    free(st->io);
    free(st->in_place);
    free(st->release);
  }
  for (size_t i = 0; i < p->n_uploads; i++) {
    rt_upload_t *u = &p->uploads[i];
    const wm_tensor_t *t = p->pv[u->value].value;
    rt_free_persistent(s, (size_t)u->slot, &u->loc, t ? t->dtype : 0,
                       t ? t->count : 0);
  }
  for (size_t v = 0; p->folded && v < s->graph->value_count; v++) {
    wm_tensor_destroy(p->folded[v]);
  }
  for (size_t k = 0; k < RT_MAX_SLOTS; k++) {
    if (p->exes[k]) {
      s->slots[k].api->device->exe_destroy(p->exes[k]);
    }
  }
  free(p->kernel_text);
  free(p->uploads);
  free(p->steps);
  free(p->folded);
  free(p->pv);
  free(p->placement);
  free(p->user_placement);
  free(p->refusals);
  free(p->key);
  free(p->key_given);
  free(p);
}
