// The session: prepares a graph on an ordered list of backends, keeps one
// plan per signature of input types (made on first use, at most
// RT_MAX_PLANS, the least recently used evicted), binds inputs, runs the
// plan and hands back outputs.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// Adds to |rn|'s implicit inputs every value of |s|'s graph that |g| or
// its nested subgraphs read from outside (by name).
static wm_status_t collect_implicit(wm_session_t *s, rt_node_t *rn,
                                    const wm_graph_t *g) {
  for (size_t v = 0; v < g->value_count; v++) {
    if (!g->values[v].is_outer) {
      continue;
    }
    int32_t id = wm_graph_find_value(s->graph, g->values[v].name);
    bool dup = id < 0;
    for (size_t k = 0; !dup && k < rn->n_implicit; k++) {
      dup = rn->implicit[k] == id;
    }
    if (dup) {
      continue;
    }
    size_t cap = rn->n_implicit;
    WM_RETURN_IF_ERROR(wm_grow((void **)&rn->implicit, &cap, rn->n_implicit + 1,
                               sizeof(int32_t)));
    rn->implicit[rn->n_implicit++] = id;
  }
  for (size_t i = 0; i < g->node_count; i++) {
    const wm_node_t *n = &g->nodes[i];
    for (int32_t a = 0; a < n->attr_count; a++) {
      if (n->attrs[a].g) {
        WM_RETURN_IF_ERROR(collect_implicit(s, rn, n->attrs[a].g));
      }
      for (size_t k = 0; n->attrs[a].graphs && k < n->attrs[a].count; k++) {
        WM_RETURN_IF_ERROR(collect_implicit(s, rn, n->attrs[a].graphs[k]));
      }
    }
  }
  return NULL;
}

// A node the session runs itself (control flow through nested sessions on
// the same backends, sequences, optionals): its tensor outputs live on

// True for the nodes the session runs itself: operators whose kernel says
// so (control flow, sequences, optionals) and any node reading or writing
// a sequence or optional (Identity passes them through), since backends
// hold tensors only.
bool rt_runs_in_session(const wm_graph_t *g, const wm_node_t *node) {
  if (wm_op_runs_in_session(
          wm_ops_find(node->domain, node->op_type,
                      wm_graph_opset(g, node->domain ? node->domain : "")))) {
    return true;
  }
  for (int32_t i = 0; i < node->input_count + node->output_count; i++) {
    int32_t id = i < node->input_count ? node->inputs[i]
                                       : node->outputs[i - node->input_count];
    if (id >= 0 && (g->values[id].type.kind == WM_TYPE_SEQUENCE ||
                    g->values[id].type.kind == WM_TYPE_OPTIONAL)) {
      return true;
    }
  }
  return false;
}

// Adds |backend| as a slot unless present; returns its slot.
static int32_t add_slot(wm_session_t *s, wm_backend_t *backend) {
  for (size_t k = 0; k < s->n_slots; k++) {
    if (s->slots[k].backend == backend) {
      return (int32_t)k;
    }
  }
  rt_backend_t *b = &s->slots[s->n_slots];
  b->backend = backend;
  b->api = wm_backend_api(backend);
  b->target = wm_backend_target(backend, 0);
  b->mappable = b->api->device->mem_map != NULL;
  b->wraps = b->api->abi_minor >= 2 &&
             WM_HAS(b->api->device, wm_device_tier, mem_wrap_host) &&
             b->api->device->mem_wrap_host != NULL;
  return (int32_t)s->n_slots++;
}

// The user node prepared node |n| mainly stands for: the one it is named
// after, else the first of its kind, else its first origin.
static int32_t primary_of(const wm_session_t *s, size_t n) {
  const rt_origins_t *o = &s->prep.origins[n];
  const wm_node_t *node = &s->graph->nodes[n];
  int32_t kind = -1;
  for (size_t k = 0; k < o->n; k++) {
    const wm_node_t *u = &s->user->nodes[o->ids[k]];
    if (node->name[0] && strcmp(u->name, node->name) == 0) {
      return o->ids[k];
    }
    if (kind < 0 && strcmp(u->op_type, node->op_type) == 0) {
      kind = o->ids[k];
    }
  }
  return kind >= 0 ? kind : o->ids[0];
}

// The labels of the user's nodes (the placement report names them) and
// the user node each prepared node reports as.
static wm_status_t init_user(wm_session_t *s) {
  const wm_graph_t *g = s->user;
  s->user_labels = wm_calloc(g->node_count + 1, sizeof(*s->user_labels));
  s->user_index_labels =
      wm_calloc(g->node_count + 1, sizeof(*s->user_index_labels));
  s->primary = wm_calloc(s->graph->node_count + 1, sizeof(int32_t));
  if (!s->user_labels || !s->user_index_labels || !s->primary) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t n = 0; n < s->graph->node_count; n++) {
    s->primary[n] = primary_of(s, n);
  }
  // The user's graph outlives the session: names are used where they are.
  for (size_t i = 0; i < g->node_count; i++) {
    s->user_labels[i] = wm_node_label(g, i, s->user_index_labels[i],
                                      sizeof(s->user_index_labels[i]));
  }
  return NULL;
}

// The node records: labels, which nodes the session runs itself, and the
// values their subgraphs read.
static wm_status_t init_nodes(wm_session_t *s) {
  const wm_graph_t *g = s->graph;
  for (size_t i = 0; i < g->node_count; i++) {
    rt_node_t *rn = &s->nodes[i];
    const wm_node_t *node = &g->nodes[i];
    rn->label = wm_node_label(g, i, rn->index_label, sizeof(rn->index_label));
    rn->host = rt_runs_in_session(g, node);
    for (int32_t a = 0; rn->host && a < node->attr_count; a++) {
      if (node->attrs[a].g) {
        WM_RETURN_IF_ERROR(collect_implicit(s, rn, node->attrs[a].g));
      }
    }
  }
  return NULL;
}

// The values a run binds: graph inputs, then values read from an
// enclosing graph.
// True when the graph can have one plan only: every bindable value is a
// tensor of fully known shape and no initializer (which a run could
// override), and no node has a subgraph (which reads outer values by name).
static bool one_plan_only(const wm_session_t *s) {
  const wm_graph_t *g = s->graph;
  for (size_t i = 0; i < s->n_bindable; i++) {
    const wm_value_t *v = &g->values[s->bindable[i]];
    if (v->initializer || v->is_outer || v->type.kind != WM_TYPE_TENSOR ||
        !wm_shape_is_known(&v->type.shape)) {
      return false;
    }
  }
  for (size_t n = 0; n < g->node_count; n++) {
    for (int32_t a = 0; a < g->nodes[n].attr_count; a++) {
      wm_attr_type_t t = g->nodes[n].attrs[a].type;
      if (t == WM_ATTR_GRAPH || t == WM_ATTR_GRAPHS) {
        return false;
      }
    }
  }
  return true;
}

// Marks the user's values read by a node whose inputs could all be known
// without running (no input depends on a graph input): shape inference on
// the user's graph may fold that node, so those weights keep their data.
static wm_status_t find_foldable_readers(wm_session_t *s) {
  const wm_graph_t *u = s->user;
  bool *live = wm_calloc(u->value_count + 1, sizeof(bool));
  s->foldable_reader = wm_calloc(u->value_count + 1, sizeof(bool));
  if (!live || !s->foldable_reader) {
    free(live);
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < u->input_count; i++) {
    live[u->inputs[i]] = !u->values[u->inputs[i]].initializer;
  }
  for (size_t k = 0; k < u->node_count; k++) {
    const wm_node_t *n = &u->nodes[s->user_order[k]];
    bool any = false;
    for (int32_t i = 0; i < n->input_count; i++) {
      any = any || (n->inputs[i] >= 0 && live[n->inputs[i]]);
    }
    for (int32_t i = 0; i < n->output_count; i++) {
      if (n->outputs[i] >= 0) {
        live[n->outputs[i]] = any;
      }
    }
    for (int32_t i = 0; !any && i < n->input_count; i++) {
      if (n->inputs[i] >= 0) {
        s->foldable_reader[n->inputs[i]] = true;
      }
    }
  }
  free(live);
  return NULL;
}

static wm_status_t init_bindable(wm_session_t *s) {
  const wm_graph_t *g = s->graph;
  size_t nv = g->value_count;
  s->bind_index = wm_calloc(nv + 1, sizeof(int32_t));
  s->bindable = wm_calloc(nv + 1, sizeof(int32_t));
  if (!s->bind_index || !s->bindable) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t v = 0; v < nv; v++) {
    s->bind_index[v] = -1;
  }
  for (size_t i = 0; i < g->input_count; i++) {
    int32_t v = g->inputs[i];
    if (s->bind_index[v] < 0) {
      s->bind_index[v] = (int32_t)s->n_bindable;
      s->bindable[s->n_bindable++] = v;
    }
  }
  for (size_t v = 0; v < nv; v++) {
    if (g->values[v].is_outer && s->bind_index[v] < 0) {
      s->bind_index[v] = (int32_t)s->n_bindable;
      s->bindable[s->n_bindable++] = (int32_t)v;
    }
  }
  s->key_types = wm_calloc(s->n_bindable + 1, sizeof(wm_type_t));
  s->key_given = wm_calloc(s->n_bindable + 1, sizeof(bool));
  if (!s->key_types || !s->key_given) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  return NULL;
}

// Finds or makes the plan of the signature in s->key_types/key_given.
static wm_status_t plan_for_key(wm_session_t *s, rt_plan_t **out) {
  uint64_t h = rt_key_hash(s->key_types, s->key_given, s->n_bindable);
  for (size_t i = 0; i < s->n_plans; i++) {
    rt_plan_t *p = s->plans[i];
    if (p->hash == h &&
        rt_key_equal(p, s->key_types, s->key_given, s->n_bindable)) {
      p->use_tick = ++s->tick;
      *out = p;
      return NULL;
    }
  }
  rt_plan_t *p;
  WM_RETURN_IF_ERROR(rt_plan_build(s, s->key_types, s->key_given, &p));
  s->stats.plans_made++;
  if (s->n_plans == RT_MAX_PLANS) {
    size_t lru = 0;
    for (size_t i = 1; i < s->n_plans; i++) {
      if (s->plans[i]->use_tick < s->plans[lru]->use_tick) {
        lru = i;
      }
    }
    rt_plan_destroy(s, s->plans[lru]);
    s->plans[lru] = s->plans[--s->n_plans];
  }
  p->use_tick = ++s->tick;
  s->plans[s->n_plans++] = p;
  *out = p;
  return NULL;
}

// Makes |p| the plan the values and views point into (after the arenas
// grew to what it needs).
static wm_status_t use_plan(wm_session_t *s, rt_plan_t *p) {
  for (size_t k = 0; k < s->n_slots; k++) {
    if (p->arena_bytes[k]) {
      WM_RETURN_IF_ERROR(rt_arena_reserve(s, k, p->arena_bytes[k]));
    }
  }
  if (s->active != p || p->bound_generation != s->generation) {
    rt_plan_activate(s, p);
  }
  return NULL;
}

// The plan made at creation, for the declared input types: complete when
// they are fully known, else provisional (dynamic steps for the rest)
// until the first run brings real shapes.
static wm_status_t initial_plan(wm_session_t *s) {
  const wm_graph_t *g = s->graph;
  for (size_t j = 0; j < s->n_bindable; j++) {
    const wm_value_t *v = &g->values[s->bindable[j]];
    s->key_types[j] = v->type;
    s->key_given[j] = !v->initializer;
  }
  rt_plan_t *p;
  WM_RETURN_IF_ERROR(plan_for_key(s, &p));
  s->active = p;
  return NULL;
}

wm_status_t wm_session_create_placed(wm_graph_t *graph,
                                     const wm_session_options_t *options,
                                     wm_session_t **out_session) {
  *out_session = NULL;
  if (options->backend_count == 0 ||
      options->backend_count > WM_SESSION_MAX_BACKENDS) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "a session takes 1 to %d backends, got "
                    "%zu",
                    WM_SESSION_MAX_BACKENDS, options->backend_count);
  }
  if (options->max_iterations < 0 || options->max_sequence_length < 0) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "max_iterations is %lld and max_sequence_length %lld; "
                    "want counts (0: the default)",
                    (long long)options->max_iterations,
                    (long long)options->max_sequence_length);
  }
  WM_RETURN_IF_ERROR(wm_graph_verify(graph));
  WM_RETURN_IF_ERROR(wm_ops_check_graph(graph));
  wm_session_t *s = wm_calloc(1, sizeof(*s));
  if (!s) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  s->user = graph;
  for (size_t k = 0; k < options->backend_count; k++) {
    s->listed[k] = options->backends[k];
  }
  s->options = *options;
  s->options.backends = s->listed;
  if (!s->options.max_iterations) {
    s->options.max_iterations = WM_SESSION_MAX_ITERATIONS_DEFAULT;
  }
  if (!s->options.max_sequence_length) {
    s->options.max_sequence_length = WM_SESSION_MAX_SEQUENCE_LENGTH_DEFAULT;
  }
  wm_status_t st = rt_passes_parse(options->passes, &s->passes);
  if (!st && options->passes) {
    s->passes_text = wm_strdup(options->passes);
    s->options.passes = s->passes_text;
    st = s->passes_text ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  if (!st) {
    st = rt_prepare(graph, s->passes,
                    options->backend_count ? options->backends[0] : NULL,
                    options->kernels, &s->prep);
  }
  if (!st) {
    graph = s->graph = s->prep.graph;
    st = init_user(s);
  }
  for (size_t k = 0; !st && k < options->backend_count; k++) {
    wm_backend_t *b = options->backends[k];
    if (add_slot(s, b) != (int32_t)k) {
      st = WM_ERROR(INVALID_ARGUMENT, "backend \"%s\" is listed twice",
                    wm_backend_name(b));
    } else if (!wm_backend_target(b, 0)) {
      st = WM_ERROR(UNAVAILABLE, "backend \"%s\" has no device",
                    wm_backend_name(b));
    }
  }
  s->n_listed = s->n_slots;
  if (!st && options->mode == WM_PLACEMENT_FALLBACK && options->fallback &&
      wm_backend_target(options->fallback, 0)) {
    int32_t fb = add_slot(s, options->fallback);
    if ((size_t)fb < s->n_listed) {
      s->n_slots = s->n_listed;  // already listed: no separate fallback
    }
  }
  for (size_t k = s->n_slots; k-- > 0;) {
    s->host_slot = s->slots[k].mappable ? (int32_t)k : s->host_slot;
  }
  if (!st) {
    st = wm_graph_topo_order(graph, &s->order);
  }
  if (!st) {
    st = wm_graph_topo_order(s->user, &s->user_order);
  }
  size_t nv = graph->value_count + 1, nn = graph->node_count + 1;
  if (!st) {
    s->nodes = wm_calloc(nn, sizeof(rt_node_t));
    s->vals = wm_calloc(nv, sizeof(rt_val_t));
    s->cloc = wm_calloc(nv * s->n_slots, sizeof(rt_loc_t));
    if (!s->nodes || !s->vals || !s->cloc) {
      st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  for (size_t i = 0; !st && i < graph->value_count; i++) {
    s->vals[i].home = -1;
  }
  if (!st) {
    st = init_nodes(s);
  }
  if (!st) {
    st = init_bindable(s);
  }
  s->in_place = !options->no_in_place;
  s->kernels = options->kernels;
  if (!st && options->release_weights && one_plan_only(s)) {
    st = find_foldable_readers(s);
    s->release_weights = !st;
  }
  if (!st) {
    st = initial_plan(s);
  }
  if (st) {
    wm_session_destroy(s);
    return st;
  }
  *out_session = s;
  return NULL;
}

wm_status_t wm_session_create(wm_graph_t *graph, wm_backend_t *backend,
                              wm_session_t **out_session) {
  wm_session_options_t options = {
      .backends = &backend,
      .backend_count = 1,
      .mode = WM_PLACEMENT_STRICT,
  };
  return wm_session_create_placed(graph, &options, out_session);
}

void wm_session_destroy(wm_session_t *s) {
  if (!s) {
    return;
  }
  if (!s->graph) {
    free(s->passes_text);
    free(s->user_labels);
    free(s->user_index_labels);
    free(s->primary);
    free(s);
    return;
  }
  for (size_t i = 0; s->vals && i < s->graph->value_count; i++) {
    rt_release_value(s, (int32_t)i);
  }
  for (size_t i = 0; i < s->n_plans; i++) {
    rt_plan_destroy(s, s->plans[i]);
  }
  for (size_t v = 0; s->cloc && v < s->graph->value_count; v++) {
    const wm_tensor_t *t = s->graph->values[v].initializer;
    for (size_t k = 0; k < s->n_slots; k++) {
      rt_free_persistent(s, k, &s->cloc[v * s->n_slots + k], t ? t->dtype : 0,
                         t ? t->count : 0);
    }
  }
  for (size_t i = 0; s->nodes && i < s->graph->node_count; i++) {
    rt_node_t *rn = &s->nodes[i];
    wm_session_destroy(rn->sub[0]);
    wm_session_destroy(rn->sub[1]);
    free(rn->implicit);
  }
  for (size_t k = 0; k < s->n_slots; k++) {
    rt_close_slot(&s->slots[k]);
  }
  free(s->nodes);
  free(s->vals);
  free(s->cloc);
  free(s->order);
  free(s->user_order);
  free(s->foldable_reader);
  free(s->node_ns);
  free(s->bindable);
  free(s->bind_index);
  free(s->key_types);
  free(s->key_given);
  free(s->user_labels);
  free(s->user_index_labels);
  free(s->primary);
  free(s->passes_text);
  rt_prep_deinit(&s->prep);
  free(s);
}

// ------------------------------------------------------------- running

static wm_status_t check_input(const wm_value_t *v, const wm_tensor_t *t) {
  const wm_type_t *d = &v->type;
  if (d->dtype != WM_DTYPE_UNDEFINED && d->dtype != t->dtype) {
    return WM_ERROR(INVALID_ARGUMENT, "input \"%s\" has type %s, want %s",
                    v->name, wm_dtype_name(t->dtype), wm_dtype_name(d->dtype));
  }
  if (d->shape.rank >= 0) {
    char got[128], want[160];
    bool ok = d->shape.rank == t->shape.rank;
    for (int32_t i = 0; ok && i < d->shape.rank; i++) {
      ok = d->shape.dims[i] < 0 || d->shape.dims[i] == t->shape.dims[i];
    }
    if (!ok) {
      return WM_ERROR(INVALID_ARGUMENT, "input \"%s\" has shape %s, want %s",
                      v->name, wm_shape_format(&t->shape, got, sizeof(got)),
                      wm_type_format(d, want, sizeof(want)));
    }
  }
  return NULL;
}

// True when |item| binds to an input declared an optional of its kind:
// it is wrapped (ONNX passes a tensor or sequence where an optional of it
// is expected, as a Loop body returning the value it was given optional).
static bool wraps_into_optional(const wm_value_t *v, const wm_item_t *item) {
  return v->type.kind == WM_TYPE_OPTIONAL && item->kind != WM_TYPE_OPTIONAL &&
         item->kind == v->type.elem_kind;
}

// Checks a bound item against the graph input's declared kind; tensors
// also against its element type and shape.
static wm_status_t check_item(const wm_value_t *v, const wm_item_t *item) {
  const wm_type_t *d = &v->type;
  char got[96], want[160];
  bool declared = d->kind != WM_TYPE_TENSOR || d->dtype != WM_DTYPE_UNDEFINED ||
                  d->shape.rank >= 0;
  if (wraps_into_optional(v, item)) {
    return NULL;
  }
  if (item->kind == WM_TYPE_TENSOR && !item->tensor) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "input \"%s\" is a tensor item without "
                    "a tensor",
                    v->name);
  }
  if (declared && item->kind != d->kind) {
    return WM_ERROR(INVALID_ARGUMENT, "input \"%s\" is %s, want %s", v->name,
                    wm_item_format(item, got, sizeof(got)),
                    wm_type_format(d, want, sizeof(want)));
  }
  if (item->kind == WM_TYPE_TENSOR) {
    return check_input(v, item->tensor);
  }
  if (d->dtype != WM_DTYPE_UNDEFINED &&
      item->elem_dtype != WM_DTYPE_UNDEFINED && d->dtype != item->elem_dtype) {
    return WM_ERROR(INVALID_ARGUMENT, "input \"%s\" is %s, want %s elements",
                    v->name, wm_item_format(item, got, sizeof(got)),
                    wm_dtype_name(d->dtype));
  }
  return NULL;
}

// The type a bound item gives the signature.
static wm_type_t item_type(const wm_value_t *v, const wm_item_t *item) {
  if (item->kind == WM_TYPE_TENSOR && !wraps_into_optional(v, item)) {
    return wm_type_tensor(item->tensor->dtype, &item->tensor->shape);
  }
  wm_type_t t = wm_type_unknown();
  t.kind = wraps_into_optional(v, item) ? WM_TYPE_OPTIONAL : item->kind;
  t.elem_kind = item->kind == WM_TYPE_OPTIONAL ? item->elem_kind : item->kind;
  t.dtype = wm_item_dtype(item);
  return t;
}

// Checks the inputs and makes the signature of this run.
static wm_status_t read_signature(wm_session_t *s, const char *const *names,
                                  const wm_item_t *inputs, size_t n_inputs) {
  const wm_graph_t *g = s->graph;
  for (size_t j = 0; j < s->n_bindable; j++) {
    s->key_given[j] = false;
  }
  for (size_t i = 0; i < n_inputs; i++) {
    int32_t id = wm_graph_find_value(g, names[i]);
    int32_t j = id >= 0 ? s->bind_index[id] : -1;
    if (j < 0) {
      return WM_ERROR(INVALID_ARGUMENT, "the model has no input named \"%s\"",
                      names[i]);
    }
    WM_RETURN_IF_ERROR(check_item(&g->values[id], &inputs[i]));
    if (s->key_given[j]) {
      return WM_ERROR(INVALID_ARGUMENT, "input \"%s\" is given twice",
                      names[i]);
    }
    s->key_given[j] = true;
    s->key_types[j] = item_type(&g->values[id], &inputs[i]);
  }
  for (size_t i = 0; i < g->input_count; i++) {
    int32_t id = g->inputs[i];
    if (!s->key_given[s->bind_index[id]] && !g->values[id].initializer) {
      return WM_ERROR(INVALID_ARGUMENT, "input \"%s\" is not given",
                      g->values[id].name);
    }
  }
  return NULL;
}

// Puts the inputs where the plan wants them.
// Input |i| as the session's own item: moved out of |moves| where it
// marks it (left empty there), else copied.
static wm_status_t own_input(const wm_item_t *inputs, rt_sub_inputs_t *moves,
                             size_t i, wm_item_t *out) {
  if (moves && moves->take && i >= moves->take_from && moves->owned[i]) {
    *out = moves->items[i];
    memset(&moves->items[i], 0, sizeof(moves->items[i]));
    return NULL;
  }
  return wm_item_clone(&inputs[i], out);
}

static wm_status_t bind_inputs(wm_session_t *s, const rt_plan_t *p,
                               const char *const *names,
                               const wm_item_t *inputs, size_t n_inputs,
                               rt_sub_inputs_t *moves) {
  const wm_graph_t *g = s->graph;
  for (size_t i = 0; i < n_inputs; i++) {
    int32_t id = wm_graph_find_value(g, names[i]);
    const rt_pv_t *pv = &p->pv[id];
    rt_val_t *v = &s->vals[id];
    v->bound = true;
    if (pv->kind == RT_PV_ITEM) {
      if (wraps_into_optional(&g->values[id], &inputs[i])) {
        wm_item_t value;
        WM_RETURN_IF_ERROR(own_input(inputs, moves, i, &value));
        WM_RETURN_IF_ERROR(wm_item_optional_take(&value, &v->item));
      } else {
        WM_RETURN_IF_ERROR(own_input(inputs, moves, i, &v->item));
      }
      v->is_item = true;
      continue;
    }
    const wm_tensor_t *t = inputs[i].tensor;
    size_t home = (size_t)pv->home;
    if (pv->kind == RT_PV_DYNAMIC) {
      v->desc = wm_tensor_desc_from_type(t->dtype, &t->shape);
      WM_RETURN_IF_ERROR(rt_alloc_dynamic(s, home, &v->desc, &v->loc[home]));
      v->home = (int32_t)home;
    } else if (pv->kind != RT_PV_ARENA) {
      continue;  // nothing reads it
    }
    wm_status_t st = rt_write(s, home, &v->loc[home], t);
    if (st) {
      return wm_status_annotate(st, "binding input \"%s\"", names[i]);
    }
  }
  return NULL;
}

// Output |i| of the last run into |dst| (the caller's tensor of its
// type), or a new item in *out_item when |dst| is NULL.
static wm_status_t read_output(wm_session_t *s, const rt_plan_t *p, size_t i,
                               wm_tensor_t *dst, wm_item_t *out_item) {
  const wm_graph_t *g = s->graph;
  int32_t id = g->outputs[i];
  rt_val_t *v = &s->vals[id];
  const rt_pv_t *pv = &p->pv[id];
  const char *name = g->values[id].name;
  if (v->is_item) {
    if (dst) {
      char what[96];
      return WM_ERROR(UNIMPLEMENTED,
                      "output \"%s\" is a %s; wm_session_run_into takes "
                      "tensors only",
                      name, wm_item_format(&v->item, what, sizeof(what)));
    }
    // Every value is released after the run: the last output naming it
    // takes its item (a sequence is not copied element by element).
    bool last = true;
    for (size_t j = i + 1; last && j < g->output_count; j++) {
      last = g->outputs[j] != id;
    }
    if (!last) {
      return wm_item_clone(&v->item, out_item);
    }
    *out_item = v->item;
    memset(&v->item, 0, sizeof(v->item));
    v->is_item = false;
    return NULL;
  }
  const wm_tensor_t *c = pv->kind == RT_PV_CONST ? pv->value : NULL;
  wm_tensor_desc desc =
      c ? wm_tensor_desc_from_type(c->dtype, &c->shape) : v->desc;
  if (!c && (v->home < 0 || !v->loc[v->home].buf)) {
    return WM_ERROR(INTERNAL, "output \"%s\" was not computed", name);
  }
  wm_shape_t shape = rt_shape_of(&desc);
  wm_tensor_t *t = dst;
  if (dst && (dst->dtype != (wm_dtype_t)desc.dtype ||
              !wm_shape_equal(&dst->shape, &shape))) {
    char got[96], want[96];
    return WM_ERROR(INVALID_ARGUMENT,
                    "output \"%s\" is %s %s, the tensor given for it %s %s",
                    name, wm_dtype_name((wm_dtype_t)desc.dtype),
                    wm_shape_format(&shape, want, sizeof(want)),
                    wm_dtype_name(dst->dtype),
                    wm_shape_format(&dst->shape, got, sizeof(got)));
  }
  if (c && !dst) {
    WM_RETURN_IF_ERROR(wm_tensor_clone(c, &t));
  } else if (c) {
    WM_RETURN_IF_ERROR(wm_op_copy_all(dst, c));
  } else {
    if (!dst) {
      WM_RETURN_IF_ERROR(wm_tensor_create((wm_dtype_t)desc.dtype, &shape, &t));
    }
    wm_status_t st = rt_read(s, (size_t)v->home, &v->loc[v->home], &desc, t);
    if (st) {
      if (!dst) {
        wm_tensor_destroy(t);
      }
      return st;
    }
  }
  if (!dst) {
    *out_item = wm_item_tensor_take(t);
  }
  return NULL;
}

// One run: signature, plan, inputs, steps, outputs (into |dsts| when
// given, else new items in |out_items|); everything the run made is
// released, also when it fails.
static wm_status_t run(wm_session_t *s, const char *const *names,
                       const wm_item_t *inputs, size_t n_inputs,
                       wm_tensor_t *const *dsts, wm_item_t *out_items,
                       rt_sub_inputs_t *moves) {
  const wm_graph_t *g = s->graph;
  s->stats.boundary_copies = 0;
  s->stats.bytes_copied = 0;
  rt_plan_t *p = NULL;
  wm_status_t st = read_signature(s, names, inputs, n_inputs);
  if (!st) {
    st = plan_for_key(s, &p);
  }
  if (!st) {
    st = use_plan(s, p);
  }
  if (!st) {
    st = bind_inputs(s, p, names, inputs, n_inputs, moves);
  }
  if (!st) {
    st = rt_execute(s, p);
  }
  s->profiled_runs += s->profiling && !st;
  for (size_t k = 0; !st && k < s->n_slots; k++) {
    rt_backend_t *b = &s->slots[k];
    if (b->stream) {
      st = rt_slot_error(b, b->api->device->stream_sync(b->stream),
                         "stream_sync");
    }
  }
  for (size_t i = 0; !st && i < g->output_count; i++) {
    st = read_output(s, p, i, dsts ? dsts[i] : NULL,
                     dsts ? NULL : &out_items[i]);
  }
  for (size_t i = 0; i < g->value_count; i++) {
    rt_release_value(s, (int32_t)i);
  }
  return st;
}

// wm_session_run_items, moving the inputs |moves| marks.
static wm_status_t run_items(wm_session_t *s, const char *const *names,
                             const wm_item_t *inputs, size_t n_inputs,
                             wm_item_t *out_outputs, rt_sub_inputs_t *moves) {
  const wm_graph_t *g = s->graph;
  for (size_t i = 0; i < g->output_count; i++) {
    memset(&out_outputs[i], 0, sizeof(out_outputs[i]));
  }
  wm_status_t st = run(s, names, inputs, n_inputs, NULL, out_outputs, moves);
  if (st) {
    for (size_t i = 0; i < g->output_count; i++) {
      wm_item_deinit(&out_outputs[i]);
    }
  }
  return st;
}

wm_status_t wm_session_run_items(wm_session_t *s, const char *const *names,
                                 const wm_item_t *inputs, size_t n_inputs,
                                 wm_item_t *out_outputs) {
  return run_items(s, names, inputs, n_inputs, out_outputs, NULL);
}

wm_status_t rt_session_run_nested(wm_session_t *s, rt_sub_inputs_t *in,
                                  wm_item_t *outs) {
  return run_items(s, in->names, in->items, in->n, outs, in);
}

// Tensor inputs as items (borrowed) in |stack| or on the heap.
enum { STACK_ITEMS = 16 };

wm_status_t wm_session_run(wm_session_t *s, const char *const *names,
                           const wm_tensor_t *const *inputs, size_t n_inputs,
                           wm_tensor_t **out_outputs) {
  const wm_graph_t *g = s->graph;
  for (size_t i = 0; i < g->output_count; i++) {
    out_outputs[i] = NULL;
  }
  wm_item_t *ins = wm_calloc(n_inputs + 1, sizeof(*ins));
  wm_item_t *outs = wm_calloc(g->output_count + 1, sizeof(*outs));
  wm_status_t st =
      ins && outs ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; !st && i < n_inputs; i++) {
    ins[i] = wm_item_tensor_take((wm_tensor_t *)inputs[i]);  // borrowed
  }
  if (!st) {
    st = wm_session_run_items(s, names, ins, n_inputs, outs);
  }
  for (size_t i = 0; !st && i < g->output_count; i++) {
    if (outs[i].kind != WM_TYPE_TENSOR) {
      char what[96];
      st = WM_ERROR(UNIMPLEMENTED,
                    "output \"%s\" is a %s; wm_session_run returns tensors "
                    "only (use wm_session_run_items)",
                    g->values[g->outputs[i]].name,
                    wm_item_format(&outs[i], what, sizeof(what)));
    }
  }
  for (size_t i = 0; outs && i < g->output_count; i++) {
    if (!st) {
      out_outputs[i] = outs[i].tensor;
      outs[i].tensor = NULL;
    }
    wm_item_deinit(&outs[i]);
  }
  free(ins);
  free(outs);
  return st;
}

wm_status_t wm_session_run_into(wm_session_t *s, const char *const *names,
                                const wm_tensor_t *const *inputs,
                                size_t n_inputs, wm_tensor_t *const *outputs) {
  wm_item_t stack[STACK_ITEMS] = {0};
  wm_item_t *ins =
      n_inputs <= STACK_ITEMS ? stack : wm_calloc(n_inputs, sizeof(wm_item_t));
  if (!ins) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < n_inputs; i++) {
    ins[i] = wm_item_tensor_take((wm_tensor_t *)inputs[i]);  // borrowed
  }
  wm_status_t st = run(s, names, ins, n_inputs, outputs, NULL, NULL);
  if (ins != stack) {
    free(ins);
  }
  return st;
}

wm_status_t wm_session_set_profiling(wm_session_t *s, bool on) {
  if (on && !s->node_ns) {
    s->node_ns = wm_calloc(s->user->node_count + 1, sizeof(double));
    if (!s->node_ns) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  s->profiling = on;
  return NULL;
}

const double *wm_session_node_ns(const wm_session_t *s, size_t *out_runs) {
  *out_runs = s->profiled_runs;
  return s->node_ns;
}
