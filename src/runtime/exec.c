// The executor: walks a plan's steps. Planned steps run as they are (their
// views point into the arenas); dynamic steps, whose shapes depend on
// data, run the shape rule and are placed while running, with pooled
// memory; the session's own steps (control flow, items) go through the
// host value helpers below.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// The constant behind value |id| in the active plan, or NULL.
static const wm_tensor_t *constant_of(const wm_session_t *s, int32_t id) {
  const rt_plan_t *p = s->active;
  return p && p->pv[id].kind == RT_PV_CONST ? p->pv[id].value : NULL;
}

// The persistent copy of constant |id| on |slot| in plan |p|, or NULL.
static const rt_loc_t *constant_loc(const wm_session_t *s, const rt_plan_t *p,
                                    int32_t id, size_t slot) {
  if (!p->folded[id]) {
    const rt_loc_t *loc = &s->cloc[(size_t)id * s->n_slots + slot];
    return loc->buf ? loc : NULL;
  }
  for (size_t i = 0; i < p->n_uploads; i++) {
    if (p->uploads[i].value == id && p->uploads[i].slot == (int32_t)slot) {
      return &p->uploads[i].loc;
    }
  }
  return NULL;
}

// The view of |bytes| of workspace at |offset| of |buf|: uint8 [bytes].
static wm_buffer_view workspace_view(wm_buffer *buf, uint64_t offset,
                                     uint64_t bytes) {
  wm_buffer_view v = {
      .struct_size = sizeof(v), .buffer = buf, .offset = offset};
  v.desc.struct_size = sizeof(v.desc);
  v.desc.dtype = WM_DTYPE_UINT8;
  v.desc.rank = 1;
  v.desc.dims[0] = (int64_t)bytes;
  return v;
}

void rt_plan_activate(wm_session_t *s, rt_plan_t *p) {
  for (size_t v = 0; v < s->graph->value_count; v++) {
    const rt_pv_t *pv = &p->pv[v];
    rt_val_t *val = &s->vals[v];
    val->home = pv->kind == RT_PV_ARENA ? pv->home : -1;
    if (pv->kind == RT_PV_ARENA || pv->kind == RT_PV_CONST) {
      val->desc = wm_tensor_desc_from_type(pv->type.dtype, &pv->type.shape);
    }
    for (size_t k = 0; k < s->n_slots; k++) {
      rt_loc_t *loc = &val->loc[k];
      memset(loc, 0, sizeof(*loc));
      const rt_backend_t *b = &s->slots[k];
      if (pv->kind == RT_PV_ARENA && pv->on[k]) {
        loc->buf = b->arena;
        loc->offset = pv->offset[k];
        loc->host =
            b->arena_host ? (char *)b->arena_host + pv->offset[k] : NULL;
      } else if (pv->kind == RT_PV_CONST && pv->on[k]) {
        const rt_loc_t *c = constant_loc(s, p, (int32_t)v, k);
        if (c) {
          *loc = *c;
        }
      }
    }
  }
  for (size_t i = 0; i < p->n_steps; i++) {
    rt_step_t *st = &p->steps[i];
    for (uint32_t j = 0; st->kind == RT_STEP_OP && j < st->n_in + st->n_out;
         j++) {
      int32_t id = st->io[j];
      if (id < 0) {
        continue;
      }
      const rt_loc_t *loc = &s->vals[id].loc[st->slot];
      st->views[j].buffer = loc->buf;
      st->views[j].offset = loc->offset;
    }
    if (st->kind == RT_STEP_OP && st->ws_bytes) {
      st->ws_view =
          workspace_view(s->slots[st->slot].arena, st->ws_offset, st->ws_bytes);
    }
  }
  p->bound_generation = s->generation;
  s->active = p;
}

void rt_release_value(wm_session_t *s, int32_t id) {
  rt_val_t *v = &s->vals[id];
  uint64_t count = 0;
  if (v->desc.dtype == WM_DTYPE_STRING) {
    wm_shape_t shape = rt_shape_of(&v->desc);
    size_t n;
    count = wm_shape_numel(&shape, &n) ? n : 0;
  }
  bool home_dynamic = v->home >= 0 && v->loc[v->home].dynamic;
  for (size_t k = 0; k < s->n_slots; k++) {
    if (v->loc[k].dynamic) {
      rt_release_loc(s, k, &v->loc[k], v->desc.dtype, count);
    }
  }
  if (home_dynamic) {
    v->home = -1;
  }
  if (v->is_item) {
    wm_item_deinit(&v->item);
    v->is_item = false;
  }
  v->bound = false;
}

bool rt_value_present(const wm_session_t *s, int32_t id) {
  const rt_val_t *v = &s->vals[id];
  return v->is_item || (v->home >= 0 && v->loc[v->home].buf) ||
         constant_of(s, id) || s->graph->values[id].initializer;
}

// ---------------------------------------------------------- host values

wm_status_t rt_host_tensor(wm_session_t *s, int32_t id, wm_tensor_t **out,
                           bool *out_owned) {
  *out = NULL;
  *out_owned = false;
  if (id < 0) {  // callers check omitted inputs first (check_omitted)
    return WM_ERROR(INTERNAL, "an omitted input was read");
  }
  const rt_val_t *v = &s->vals[id];
  const wm_value_t *gv = &s->graph->values[id];
  if (v->is_item) {
    char what[96];
    return WM_ERROR(INVALID_ARGUMENT,
                    "value \"%s\" is a %s where a tensor is needed", gv->name,
                    wm_item_format(&v->item, what, sizeof(what)));
  }
  if (v->home >= 0 && v->loc[v->home].buf) {
    wm_shape_t shape = rt_shape_of(&v->desc);
    WM_RETURN_IF_ERROR(
        wm_tensor_create((wm_dtype_t)v->desc.dtype, &shape, out));
    wm_status_t st =
        rt_read(s, (size_t)v->home, &v->loc[v->home], &v->desc, *out);
    if (st) {
      wm_tensor_destroy(*out);
      *out = NULL;
      return st;
    }
    *out_owned = true;
    return NULL;
  }
  const wm_tensor_t *c = constant_of(s, id);
  if (!c) {
    c = gv->initializer;
  }
  if (c) {
    *out = (wm_tensor_t *)c;  // borrowed: callers never write it
    return NULL;
  }
  return WM_ERROR(INTERNAL, "value \"%s\" has no producer output yet",
                  gv->name);
}

wm_status_t rt_host_item(wm_session_t *s, int32_t id, wm_item_t *out,
                         bool *out_owned) {
  memset(out, 0, sizeof(*out));
  *out_owned = false;
  if (id < 0) {  // callers check omitted inputs first (check_omitted)
    return WM_ERROR(INTERNAL, "an omitted input was read");
  }
  const rt_val_t *v = &s->vals[id];
  if (v->is_item) {
    *out = v->item;
    return NULL;
  }
  wm_tensor_t *t;
  WM_RETURN_IF_ERROR(rt_host_tensor(s, id, &t, out_owned));
  *out = wm_item_tensor_take(t);
  return NULL;
}

wm_status_t rt_own_item(wm_session_t *s, int32_t id, wm_item_t *out) {
  bool owned;
  WM_RETURN_IF_ERROR(rt_host_item(s, id, out, &owned));
  if (owned) {
    return NULL;
  }
  wm_item_t view = *out;
  return wm_item_clone(&view, out);
}

wm_status_t rt_store_item(wm_session_t *s, int32_t id, wm_item_t *item) {
  rt_val_t *v = &s->vals[id];
  rt_release_value(s, id);
  if (item->kind != WM_TYPE_TENSOR) {
    v->item = *item;
    v->is_item = true;
    memset(item, 0, sizeof(*item));
    return NULL;
  }
  wm_status_t st = NULL;
  if (!item->tensor) {
    st = WM_ERROR(INTERNAL, "value \"%s\" was not computed",
                  s->graph->values[id].name);
  }
  if (!st) {
    v->desc =
        wm_tensor_desc_from_type(item->tensor->dtype, &item->tensor->shape);
    st = rt_alloc_dynamic(s, (size_t)s->host_slot, &v->desc,
                          &v->loc[s->host_slot]);
  }
  if (!st) {
    v->home = s->host_slot;
    st = rt_write(s, (size_t)s->host_slot, &v->loc[s->host_slot], item->tensor);
  }
  wm_item_deinit(item);
  return st;
}

// ---------------------------------------------------------- planned steps

// Points the views of values whose memory is decided while running at
// where they are now; outputs of that kind get their memory.
static wm_status_t bind_dynamic(wm_session_t *s, const rt_plan_t *p,
                                rt_step_t *st) {
  const wm_graph_t *g = s->graph;
  for (uint32_t j = 0; j < st->n_in + st->n_out; j++) {
    int32_t id = st->io[j];
    if (id < 0 || p->pv[id].kind != RT_PV_DYNAMIC) {
      continue;
    }
    rt_val_t *v = &s->vals[id];
    wm_buffer_view *view = &st->views[j];
    if (j >= st->n_in) {
      v->desc = view->desc;
      WM_RETURN_IF_ERROR(
          rt_alloc_dynamic(s, (size_t)st->slot, &v->desc, &v->loc[st->slot]));
      v->home = st->slot;
    } else if (!v->loc[st->slot].buf) {
      return WM_ERROR(INTERNAL, "value \"%s\" is not on backend \"%s\"",
                      g->values[id].name,
                      wm_backend_name(s->slots[st->slot].backend));
    } else if (v->desc.dtype != view->desc.dtype ||
               v->desc.rank != view->desc.rank ||
               memcmp(v->desc.dims, view->desc.dims,
                      v->desc.rank * sizeof(int64_t)) != 0) {
      wm_shape_t a = rt_shape_of(&v->desc), b = rt_shape_of(&view->desc);
      char got[96], want[96];
      return WM_ERROR(INVALID_ARGUMENT,
                      "value \"%s\" is %s %s while running, planned %s %s",
                      g->values[id].name,
                      wm_dtype_name((wm_dtype_t)v->desc.dtype),
                      wm_shape_format(&a, got, sizeof(got)),
                      wm_dtype_name((wm_dtype_t)view->desc.dtype),
                      wm_shape_format(&b, want, sizeof(want)));
    }
    view->buffer = v->loc[st->slot].buf;
    view->offset = v->loc[st->slot].offset;
  }
  return NULL;
}

static wm_status_t run_op(wm_session_t *s, const rt_plan_t *p, rt_step_t *st) {
  rt_backend_t *b = &s->slots[st->slot];
  WM_RETURN_IF_ERROR(bind_dynamic(s, p, st));
  wm_status_t e =
      st->gen ? rt_gen_launch(s, st)
              : rt_slot_error(b,
                              b->api->library->op_run(
                                  b->stream, st->plan, st->views, st->n_in,
                                  st->views + st->n_in, st->n_out,
                                  st->ws_bytes ? &st->ws_view : NULL),
                              "op_run");
  if (e) {
    const wm_node_t *node = &s->graph->nodes[st->node];
    e = wm_status_annotate(e, "node \"%s\" (%s)", s->nodes[st->node].label,
                           node->op_type);
  }
  return e;
}

// Copies value |id| from its home to |slot| (dynamic memory unless
// |planned| is true: the arena copy the plan laid out).
static wm_status_t copy_value(wm_session_t *s, int32_t id, size_t slot,
                              bool planned) {
  rt_val_t *v = &s->vals[id];
  const wm_value_t *gv = &s->graph->values[id];
  if (!planned && v->loc[slot].buf) {
    return NULL;  // a dynamic step made it there
  }
  if (v->home < 0 || !v->loc[v->home].buf) {
    return WM_ERROR(INTERNAL, "value \"%s\" has no producer output yet",
                    gv->name);
  }
  size_t from = (size_t)v->home;
  uint64_t bytes;
  if (!rt_desc_bytes(&v->desc, &bytes)) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "value \"%s\" is too large", gv->name);
  }
  wm_status_t st = NULL;
  if (!planned) {
    st = rt_alloc_dynamic(s, slot, &v->desc, &v->loc[slot]);
  }
  if (!st) {
    st = rt_copy(s, from, &v->loc[from], slot, &v->loc[slot], &v->desc, bytes);
  }
  if (!st) {
    s->stats.boundary_copies++;
    s->stats.bytes_copied += bytes;
  }
  return st ? wm_status_annotate(st,
                                 "copying \"%s\" from backend \"%s\" to "
                                 "\"%s\"",
                                 gv->name,
                                 wm_backend_name(s->slots[from].backend),
                                 wm_backend_name(s->slots[slot].backend))
            : NULL;
}

// ---------------------------------------------------------- dynamic steps

// Host views of a dynamic step's inputs for its shape rule.
typedef struct dyn_inputs {
  wm_tensor_t **views;  // per input: created here, or NULL
  bool *owned;          // whether |views| owns its data
} dyn_inputs_t;

// The host tensor of input |id| for a shape rule: the mapped memory, else
// a copy read back.
static wm_status_t dyn_view(wm_session_t *s, int32_t id, wm_tensor_t **out) {
  const rt_val_t *v = &s->vals[id];
  *out = NULL;
  if (v->home < 0 || !v->loc[v->home].buf) {
    return WM_ERROR(INTERNAL, "value \"%s\" has no producer output yet",
                    s->graph->values[id].name);
  }
  const rt_loc_t *loc = &v->loc[v->home];
  wm_shape_t shape = rt_shape_of(&v->desc);
  if (loc->host) {
    rt_backend_t *b = &s->slots[v->home];
    WM_RETURN_IF_ERROR(rt_slot_error(b, b->api->device->stream_sync(b->stream),
                                     "stream_sync"));
    return wm_tensor_wrap((wm_dtype_t)v->desc.dtype, &shape, loc->host, out);
  }
  WM_RETURN_IF_ERROR(wm_tensor_create((wm_dtype_t)v->desc.dtype, &shape, out));
  wm_status_t st = rt_read(s, (size_t)v->home, loc, &v->desc, *out);
  if (st) {
    wm_tensor_destroy(*out);
    *out = NULL;
  }
  return st;
}

static bool descs_equal(const wm_tensor_desc *a, const wm_tensor_desc *b,
                        size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (a[i].dtype != b[i].dtype || a[i].rank != b[i].rank ||
        memcmp(a[i].dims, b[i].dims, a[i].rank * sizeof(int64_t)) != 0) {
      return false;
    }
  }
  return true;
}

// Places and plans the instance of a dynamic step unless the last one
// fits.
static wm_status_t dyn_plan(wm_session_t *s, rt_plan_t *p, rt_step_t *st,
                            const wm_op_desc *op, const wm_tensor_desc *descs,
                            const wm_op_params_t *params) {
  size_t n = op->n_in + op->n_out;
  if (st->dyn_plan && descs_equal(st->dyn_key, descs, n) &&
      memcmp(st->dyn_params, params, sizeof(*params)) == 0) {
    return NULL;
  }
  if (st->dyn_plan) {
    s->slots[st->dyn_slot].api->library->op_plan_destroy(st->dyn_plan);
    st->dyn_plan = NULL;
  }
  int32_t slot;
  wm_placement_t *pl = &p->placement[st->node];
  WM_RETURN_IF_ERROR(rt_place(s, pl, op, NULL, &slot, NULL));
  rt_user_placement_fill(s, p);  // the report shows where it runs now
  if (slot < 0) {
    wm_strbuf_t why;
    wm_strbuf_init(&why);
    for (size_t r = 0; r < pl->refusal_count; r++) {
      const wm_placement_refusal_t *rf = &pl->refusals[r];
      wm_strbuf_printf(&why, "%s %s: %s%s%s", r ? ";" : "", rf->backend,
                       wm_why_name(rf->reason), *rf->detail ? ", " : "",
                       rf->detail);
    }
    wm_status_t e =
        WM_ERROR(UNIMPLEMENTED, "node \"%s\" (%s) cannot be placed:%s",
                 s->nodes[st->node].label, op->op_type, wm_strbuf_str(&why));
    wm_strbuf_deinit(&why);
    return e;
  }
  if (!st->dyn_key) {
    st->dyn_key = wm_calloc(n + 1, sizeof(wm_tensor_desc));
    st->dyn_params = wm_calloc(1, sizeof(wm_op_params_t));
    if (!st->dyn_key || !st->dyn_params) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  WM_RETURN_IF_ERROR(rt_open_slot(s, (size_t)slot));
  rt_backend_t *b = &s->slots[slot];
  uint64_t ws = 0;
  WM_RETURN_IF_ERROR(rt_slot_error(
      b, b->api->library->op_plan(b->dev, op, &st->dyn_plan, &ws), "op_plan"));
  st->dyn_slot = slot;
  st->ws_bytes = ws;
  memcpy(st->dyn_key, descs, n * sizeof(wm_tensor_desc));
  memcpy(st->dyn_params, params, sizeof(*params));
  return NULL;
}

// Runs a node whose shapes are known only now: the shape rule on the
// actual inputs, placement on the instance, outputs in dynamic memory.
static wm_status_t run_dynamic(wm_session_t *s, rt_plan_t *p, rt_step_t *st) {
  const wm_graph_t *g = s->graph;
  size_t index = (size_t)st->node;
  const wm_node_t *node = &g->nodes[index];
  wm_op_ctx_t ctx;
  WM_RETURN_IF_ERROR(wm_op_ctx_init(&ctx, g, index));
  wm_type_t *in_types = (wm_type_t *)ctx.in_types;
  const wm_tensor_t **ins = (const wm_tensor_t **)ctx.in;
  size_t n = (size_t)(ctx.n_in + ctx.n_out) + 1;
  wm_tensor_desc *descs = wm_calloc(n, sizeof(*descs));
  const void **values = wm_calloc(n, sizeof(void *));
  wm_buffer_view *views = wm_calloc(n, sizeof(*views));
  wm_tensor_t **hosted = wm_calloc(n, sizeof(*hosted));
  rt_loc_t *temps = wm_calloc(n, sizeof(*temps));  // constants uploaded now
  wm_node_attrs_t attrs;
  wm_status_t e = wm_node_attrs_init(&attrs, node);
  if (!e && (!descs || !values || !views || !hosted || !temps)) {
    e = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (int32_t i = 0; !e && i < ctx.n_in; i++) {
    int32_t id = node->inputs[i];
    if (id < 0) {
      continue;
    }
    const wm_tensor_t *c = constant_of(s, id);
    if (c) {
      ins[i] = c;
      in_types[i] = wm_type_tensor(c->dtype, &c->shape);
      continue;
    }
    e = dyn_view(s, id, &hosted[i]);
    if (!e) {
      ins[i] = hosted[i];
      in_types[i] = wm_type_tensor(hosted[i]->dtype, &hosted[i]->shape);
    }
  }
  const wm_op_def_t *def = NULL;
  if (!e) {
    e = wm_op_find_def(&ctx, &def);
  }
  if (!e) {
    e = def->infer(&ctx);
  }
  for (int32_t i = 0; !e && i < ctx.n_out; i++) {
    const wm_type_t *t = &ctx.out_types[i];
    if (node->outputs[i] >= 0 &&
        (!wm_shape_is_known(&t->shape) || !wm_dtype_is_valid(t->dtype))) {
      char buf[128];
      e = WM_OP_ERROR(&ctx, INTERNAL,
                      "output %d has type %s with every input known", i,
                      wm_type_format(t, buf, sizeof(buf)));
    }
  }
  wm_op_desc op;
  if (!e) {
    e = wm_node_op_desc(node, def, &ctx, &attrs, descs, values, &op);
  }
  if (!e) {
    // Values computed by the graph were used to resolve the parameters;
    // the plan may keep only constants' (a plan is reused while the
    // shapes and the parameters stay the same).
    for (int32_t i = 0; i < ctx.n_in; i++) {
      if (node->inputs[i] >= 0 && !constant_of(s, node->inputs[i])) {
        values[i] = NULL;
      }
    }
    e = dyn_plan(s, p, st, &op, descs, &attrs.params);
  }
  size_t slot = e ? 0 : (size_t)st->dyn_slot;
  for (int32_t i = 0; !e && i < ctx.n_in; i++) {
    int32_t id = node->inputs[i];
    rt_val_t *v = id >= 0 ? &s->vals[id] : NULL;
    views[i].struct_size = sizeof(views[i]);
    views[i].desc = descs[i];
    if (!v) {
      continue;
    }
    const wm_tensor_t *c = constant_of(s, id);
    if (c) {
      const rt_loc_t *loc = constant_loc(s, p, id, slot);
      if (!loc) {
        e = rt_alloc_dynamic(s, slot, &descs[i], &temps[i]);
        if (!e) {
          e = rt_write(s, slot, &temps[i], c);
        }
        loc = &temps[i];
      }
      views[i].buffer = loc->buf;
      views[i].offset = loc->offset;
      continue;
    }
    if (!v->loc[slot].buf) {
      e = copy_value(s, id, slot, false);
    }
    views[i].buffer = v->loc[slot].buf;
    views[i].offset = v->loc[slot].offset;
  }
  for (int32_t i = 0; !e && i < ctx.n_out; i++) {
    int32_t id = node->outputs[i];
    wm_buffer_view *view = &views[ctx.n_in + i];
    view->struct_size = sizeof(*view);
    view->desc = descs[ctx.n_in + i];
    if (id < 0) {
      continue;
    }
    rt_val_t *v = &s->vals[id];
    rt_release_value(s, id);
    v->desc = view->desc;
    e = rt_alloc_dynamic(s, slot, &v->desc, &v->loc[slot]);
    v->home = e ? -1 : (int32_t)slot;
    view->buffer = v->loc[slot].buf;
    view->offset = v->loc[slot].offset;
  }
  // The workspace comes from the pooled memory, like the outputs.
  rt_loc_t ws = {0};
  wm_buffer_view ws_view = {0};
  if (!e && st->ws_bytes) {
    ws_view = workspace_view(NULL, 0, st->ws_bytes);
    e = rt_alloc_dynamic(s, slot, &ws_view.desc, &ws);
    ws_view.buffer = ws.buf;
  }
  if (!e) {
    rt_backend_t *b = &s->slots[slot];
    e = rt_slot_error(b,
                      b->api->library->op_run(
                          b->stream, st->dyn_plan, views, (uint32_t)ctx.n_in,
                          views + ctx.n_in, (uint32_t)ctx.n_out,
                          st->ws_bytes ? &ws_view : NULL),
                      "op_run");
    if (e) {
      e = wm_status_annotate(e, "node \"%s\" (%s)", ctx.label, node->op_type);
    }
  }
  rt_release_loc(s, slot, &ws, WM_DTYPE_UINT8, 0);
  for (size_t i = 0; temps && i + 1 < n; i++) {
    rt_release_loc(s, slot, &temps[i], descs[i].dtype, 0);
  }
  for (size_t i = 0; hosted && i + 1 < n; i++) {
    wm_tensor_destroy(hosted[i]);
  }
  free(temps);
  free(hosted);
  free(descs);
  free(values);
  free(views);
  wm_node_attrs_deinit(&attrs);
  wm_op_ctx_deinit(&ctx);
  return e;
}

// ---------------------------------------------------------------- steps

bool rt_last_use(const wm_session_t *s, int32_t id) {
  for (size_t r = 0; s->step && r < s->step->n_release; r++) {
    if (s->step->release[r] == id) {
      return true;
    }
  }
  return false;
}

wm_status_t rt_execute(wm_session_t *s, rt_plan_t *p) {
  wm_status_t e = NULL;
  for (size_t i = 0; !e && i < p->n_steps; i++) {
    rt_step_t *st = &p->steps[i];
    uint64_t t0 = s->profiling ? wm_now_ns() : 0;
    switch (st->kind) {
      case RT_STEP_OP:
        e = run_op(s, p, st);
        break;
      case RT_STEP_COPY:
        e = copy_value(s, st->node, (size_t)st->slot,
                       p->pv[st->node].kind == RT_PV_ARENA);
        break;
      case RT_STEP_DYNAMIC:
        e = run_dynamic(s, p, st);
        break;
      case RT_STEP_HOST:
        e = rt_open_slot(s, 0);
        if (!e) {
          s->step = st;
          e = rt_run_host_node(s, (size_t)st->node);
          s->step = NULL;
        }
        break;
      case RT_STEP_VIEW:
        break;
    }
    if (!e && s->profiling && st->kind != RT_STEP_COPY &&
        st->kind != RT_STEP_VIEW) {
      size_t slot =
          st->kind == RT_STEP_DYNAMIC ? (size_t)st->dyn_slot : (size_t)st->slot;
      rt_backend_t *b = &s->slots[slot];
      e = rt_slot_error(b, b->api->device->stream_sync(b->stream),
                        "stream_sync");
      s->node_ns[s->primary[st->node]] += (double)(wm_now_ns() - t0);
    }
    for (size_t r = 0; !e && r < st->n_release; r++) {
      rt_release_value(s, st->release[r]);
    }
  }
  return e;
}
