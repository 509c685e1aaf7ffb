// The session: places a graph's nodes on an ordered list of backends
// (best support level wins, ties to the earlier backend, leftovers to the
// fallback), copies tensors across backend boundaries, and executes nodes
// in topological order through each backend's device and library tiers.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "opdesc.h"
#include "wmap/session.h"

// Values at most this large get a host copy on backends whose memory is
// not host-visible, so shape rules can read them (shape tensors).
enum { HOST_COPY_LIMIT = 1 << 16 };
enum { MAX_SLOTS = WM_SESSION_MAX_BACKENDS + 1 };  // listed + fallback
enum { LABEL_SIZE = 32 };

// A device buffer kept for reuse: later runs allocate the same sizes, and
// fresh memory costs page faults (host) or allocator calls (devices).
typedef struct rt_free {
  wm_buffer *buf;  // the buffer
  void *host;      // its mapping when the backend maps, else NULL
  uint64_t bytes;  // its size class
} rt_free_t;

typedef struct rt_backend {
  wm_backend_t *backend;         // borrowed
  const wm_plugin_api *api;      // its table
  const wm_target_desc *target;  // device 0
  wm_device *dev;                // opened lazily when a node runs here
  wm_stream *stream;             // one stream per backend
  bool mappable;                 // buffers are host-visible
  rt_free_t *pool;               // freed buffers kept for reuse
  size_t n_pool;                 // entries in |pool|
  size_t pool_cap;               // allocated entries
  uint64_t pool_bytes;           // bytes held by |pool|
} rt_backend_t;

typedef struct rt_copy {
  wm_buffer *buf;     // device memory on one backend, or NULL
  uint64_t bytes;     // its size (a size class)
  wm_tensor_t *host;  // host view (mapped) or small host copy, or NULL
} rt_copy_t;

typedef struct rt_value {
  rt_copy_t copy[MAX_SLOTS];  // per backend slot
  int32_t home;               // slot of the authoritative copy, -1 = none
  wm_tensor_desc desc;        // layout (same on every slot)
  int32_t uses;               // consumers left in this run
  bool overridden;            // a caller's input replaces the initializer
  bool is_item;               // a sequence or optional held in |item|
  wm_item_t item;             // it (owned), on the host
} rt_value_t;

typedef struct rt_node {
  const wm_op_def_t *def;    // registry entry (shape rules)
  int32_t slot;              // backend slot that runs it
  wm_node_attrs_t attrs;     // ABI view of the node's attributes
  wm_op_plan *plan;          // current plan or NULL
  wm_tensor_desc *planned;   // descs (inputs then outputs) of |plan|
  wm_placement_t placement;  // the report entry
  wm_placement_refusal_t refusals[MAX_SLOTS];  // lower answers
  char label[LABEL_SIZE];                      // "#index" for unnamed nodes
  bool host;             // control flow: the session runs it
  wm_session_t *sub[2];  // nested sessions (If: then, else; Loop: body)
  int32_t *implicit;     // values its subgraphs read from this graph
  size_t n_implicit;
} rt_node_t;

struct wm_session {
  wm_graph_t *graph;              // borrowed
  rt_backend_t slots[MAX_SLOTS];  // listed backends, then the fallback
  size_t n_slots;                 // slots in use
  size_t n_listed;                // listed backends (the rest: fallback)
  int32_t *order;                 // topological order
  rt_node_t *nodes;               // per node
  rt_value_t *values;             // per value id
  int32_t *use_count;             // consumers per value (+1 for outputs)
  wm_session_stats_t stats;       // counters
  uint64_t live_bytes;            // device bytes in use (not pooled)
  uint64_t peak_live_bytes;       // the most |live_bytes| has been
  bool profiling;                 // time every node (stream sync after it)
  double *node_ns;                // per node: profiled time
  size_t profiled_runs;           // runs that added to |node_ns|
  wm_backend_t *listed[WM_SESSION_MAX_BACKENDS];  // for nested sessions
  wm_session_options_t options;  // as created (backends -> |listed|)
  wm_session_t *outer;           // while nested: the session running it
};

// The pool keeps at most this many bytes per backend, or twice the peak of
// live bytes when that is more.
enum { POOL_FLOOR_BYTES = 256 << 20 };

static wm_status_t slot_error(const rt_backend_t *b, wm_error *e,
                              const char *what) {
  return wm_backend_error(b->backend, e, what);
}

static wm_shape_t shape_from_desc(const wm_tensor_desc *d) {
  wm_shape_t s;
  memset(&s, 0, sizeof(s));
  s.rank = (int32_t)d->rank;
  for (uint32_t i = 0; i < d->rank; i++) {
    s.dims[i] = d->dims[i];
  }
  return s;
}

// ------------------------------------------------------------- values

static void free_buffer(rt_backend_t *b, wm_buffer *buf) {
  if (b->mappable && b->api->device->mem_unmap) {
    b->api->device->mem_unmap(buf);
  }
  b->api->device->mem_free(buf);
}

// Rounds |bytes| up to its size class: 8 classes per power of two (at
// most 12.5 % slack), so tensors of nearby sizes share pooled buffers.
static uint64_t size_class(uint64_t bytes) {
  if (bytes <= 256) {
    return 256;
  }
  int top = 63 - __builtin_clzll(bytes - 1);  // 2^top < bytes <= 2^(top+1)
  uint64_t step = (uint64_t)1 << (top - 2);
  return (bytes + step - 1) / step * step;
}

static void release_copy(wm_session_t *s, size_t slot, rt_copy_t *c,
                         uint32_t dtype) {
  rt_backend_t *b = &s->slots[slot];
  if (dtype == WM_DTYPE_STRING && c->host && c->buf) {
    char **items = c->host->data;
    for (size_t i = 0; i < c->host->count; i++) {
      free(items[i]);
      items[i] = NULL;
    }
  }
  void *mapped = b->mappable && c->host ? c->host->data : NULL;
  wm_tensor_destroy(c->host);
  c->host = NULL;
  if (!c->buf) {
    return;
  }
  s->live_bytes -= c->bytes;
  uint64_t cap = 2 * s->peak_live_bytes;
  if (cap < POOL_FLOOR_BYTES) {
    cap = POOL_FLOOR_BYTES;
  }
  if (dtype != WM_DTYPE_STRING && (mapped || !b->mappable) &&
      b->pool_bytes + c->bytes <= cap &&
      !wm_grow((void **)&b->pool, &b->pool_cap, b->n_pool + 1,
               sizeof(rt_free_t))) {
    b->pool[b->n_pool++] = (rt_free_t){c->buf, mapped, c->bytes};
    b->pool_bytes += c->bytes;
  } else {
    free_buffer(b, c->buf);
  }
  c->buf = NULL;
  c->bytes = 0;
}

static void release_value(wm_session_t *s, rt_value_t *v) {
  for (size_t k = 0; k < s->n_slots; k++) {
    release_copy(s, k, &v->copy[k], v->desc.dtype);
  }
  v->home = -1;
  wm_item_deinit(&v->item);
  v->is_item = false;
}

// Opens the device and stream of |slot| on first use.
static wm_status_t open_slot(wm_session_t *s, size_t slot) {
  rt_backend_t *b = &s->slots[slot];
  if (b->stream) {
    return NULL;
  }
  if (!b->dev) {
    WM_RETURN_IF_ERROR(
        slot_error(b, b->api->device_open(b->target, &b->dev), "device_open"));
  }
  return slot_error(b, b->api->device->stream_create(b->dev, &b->stream),
                    "stream_create");
}

// Allocates a tensor of |desc| on |slot| with its host view.
static wm_status_t alloc_copy(wm_session_t *s, size_t slot,
                              const wm_tensor_desc *desc, rt_copy_t *c) {
  rt_backend_t *b = &s->slots[slot];
  WM_RETURN_IF_ERROR(open_slot(s, slot));
  wm_shape_t shape = shape_from_desc(desc);
  wm_dtype_t dtype = (wm_dtype_t)desc->dtype;
  size_t count, bytes;
  if (!wm_shape_numel(&shape, &count) ||
      !wm_checked_mul(count, wm_dtype_size(dtype), &bytes)) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "tensor is too large");
  }
  if (dtype == WM_DTYPE_STRING && !b->mappable) {
    return WM_ERROR(UNIMPLEMENTED,
                    "backend \"%s\" cannot hold string tensors (its memory "
                    "is not host-visible)",
                    wm_backend_name(b->backend));
  }
  uint64_t want = dtype == WM_DTYPE_STRING ? bytes : size_class(bytes);
  void *ptr = NULL;
  c->buf = NULL;
  for (size_t k = b->n_pool; dtype != WM_DTYPE_STRING && k-- > 0;) {
    if (b->pool[k].bytes == want) {
      c->buf = b->pool[k].buf;
      ptr = b->pool[k].host;
      b->pool_bytes -= want;
      b->pool[k] = b->pool[--b->n_pool];
      break;
    }
  }
  if (!c->buf) {
    WM_RETURN_IF_ERROR(
        slot_error(b,
                   b->api->device->mem_alloc(b->dev, want ? want : 1, 64,
                                             WM_MEM_DEVICE_LOCAL, &c->buf),
                   "mem_alloc"));
  }
  c->bytes = want;
  s->live_bytes += want;
  if (s->live_bytes > s->peak_live_bytes) {
    s->peak_live_bytes = s->live_bytes;
  }
  if (b->mappable) {
    wm_status_t st =
        ptr ? NULL
            : slot_error(b, b->api->device->mem_map(c->buf, &ptr), "mem_map");
    if (!st) {
      st = wm_tensor_wrap(dtype, &shape, ptr, &c->host);
    }
    if (st) {
      s->live_bytes -= want;
      free_buffer(b, c->buf);
      c->buf = NULL;
      c->bytes = 0;
      return st;
    }
  }
  return NULL;
}

// Copies host tensor |t| into copy |c| (allocated) on |slot|.
static wm_status_t fill_from_host(wm_session_t *s, size_t slot, rt_copy_t *c,
                                  const wm_tensor_t *t) {
  rt_backend_t *b = &s->slots[slot];
  if (t->dtype == WM_DTYPE_STRING) {
    for (size_t i = 0; i < t->count; i++) {
      const char *str = ((char *const *)t->data)[i];
      WM_RETURN_IF_ERROR(wm_tensor_set_string(c->host, i, str ? str : "",
                                              str ? strlen(str) : 0));
    }
    return NULL;
  }
  WM_RETURN_IF_ERROR(slot_error(
      b, b->api->device->copy_h2d(b->stream, t->data, c->buf, 0, t->nbytes),
      "copy_h2d"));
  if (!b->mappable && t->nbytes <= HOST_COPY_LIMIT) {
    return wm_tensor_clone(t, &c->host);
  }
  return NULL;
}

// Makes value |v| live on |slot| from host tensor |t|.
static wm_status_t upload(wm_session_t *s, size_t slot, rt_value_t *v,
                          const wm_tensor_t *t) {
  v->desc = wm_tensor_desc_from_type(t->dtype, &t->shape);
  rt_copy_t *c = &v->copy[slot];
  wm_status_t st = alloc_copy(s, slot, &v->desc, c);
  if (!st) {
    st = fill_from_host(s, slot, c, t);
  }
  if (st) {
    release_copy(s, slot, c, v->desc.dtype);
  }
  return st;
}

// Reads copy |c| on |slot| (of layout |desc|) into a new host tensor.
static wm_status_t read_copy(wm_session_t *s, size_t slot, const rt_copy_t *c,
                             const wm_tensor_desc *desc, wm_tensor_t **out) {
  rt_backend_t *b = &s->slots[slot];
  wm_shape_t shape = shape_from_desc(desc);
  if (c->host && desc->dtype == WM_DTYPE_STRING) {
    WM_RETURN_IF_ERROR(
        slot_error(b, b->api->device->stream_sync(b->stream), "stream_sync"));
    wm_tensor_t view = *c->host;
    view.borrowed = true;
    for (size_t i = 0; i < view.count; i++) {
      if (!((char **)view.data)[i]) {
        ((char **)view.data)[i] = wm_strdup("");
      }
    }
    return wm_tensor_clone(&view, out);
  }
  WM_RETURN_IF_ERROR(wm_tensor_create((wm_dtype_t)desc->dtype, &shape, out));
  wm_status_t st =
      slot_error(b, b->api->device->stream_sync(b->stream), "stream_sync");
  if (!st) {
    st = slot_error(b,
                    b->api->device->copy_d2h(b->stream, c->buf, 0, (*out)->data,
                                             (*out)->nbytes),
                    "copy_d2h");
  }
  if (st) {
    wm_tensor_destroy(*out);
    *out = NULL;
  }
  return st;
}

// Makes value |id| available on |slot|: uploads an initializer there, or
// copies it across the boundary from its home backend.
static wm_status_t value_on(wm_session_t *s, int32_t id, size_t slot) {
  rt_value_t *v = &s->values[id];
  if (v->copy[slot].buf) {
    return NULL;
  }
  const wm_value_t *gv = &s->graph->values[id];
  if (v->home < 0) {
    if (!gv->initializer) {
      return WM_ERROR(INTERNAL, "value \"%s\" has no producer output yet",
                      gv->name);
    }
    wm_status_t st = upload(s, slot, v, gv->initializer);
    return st ? wm_status_annotate(st, "uploading initializer \"%s\"", gv->name)
              : NULL;
  }
  size_t from = (size_t)v->home;
  wm_tensor_t *staged = NULL;
  wm_status_t st = read_copy(s, from, &v->copy[from], &v->desc, &staged);
  if (!st) {
    st = upload(s, slot, v, staged);
  }
  if (!st) {
    s->stats.boundary_copies++;
    s->stats.bytes_copied += staged->nbytes;
  }
  wm_tensor_destroy(staged);
  return st ? wm_status_annotate(st,
                                 "copying \"%s\" from backend \"%s\" to "
                                 "\"%s\"",
                                 gv->name,
                                 wm_backend_name(s->slots[from].backend),
                                 wm_backend_name(s->slots[slot].backend))
            : NULL;
}

// Returns a host view of value |id| if any copy has one.
static const wm_tensor_t *host_view(const wm_session_t *s, int32_t id) {
  const rt_value_t *v = &s->values[id];
  for (size_t k = 0; k < s->n_slots; k++) {
    if (v->copy[k].host) {
      return v->copy[k].host;
    }
  }
  return NULL;
}
// ---------------------------------------------------------- placement

const char *wm_impl_name(uint32_t impl) {
  static const char *const names[] = {"none", "native kernel", "vendor library",
                                      "generated"};
  return impl < sizeof(names) / sizeof(names[0]) ? names[impl] : "unknown";
}

const char *wm_level_name(uint32_t level) {
  static const char *const names[] = {"none", "emulated", "supported",
                                      "preferred"};
  return level < sizeof(names) / sizeof(names[0]) ? names[level] : "unknown";
}

const char *wm_why_name(uint32_t reason) {
  static const char *const names[] = {
      "unspecified", "operator",   "opset",  "dtype",    "rank", "shape",
      "attribute",   "size limit", "layout", "subgraph", "other"};
  return reason < sizeof(names) / sizeof(names[0]) ? names[reason] : "other";
}

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
    s->use_count[id]++;
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
// slot 0, its sequences and optionals on the host.
static wm_status_t place_host_node(wm_session_t *s, size_t index) {
  rt_node_t *rn = &s->nodes[index];
  const wm_node_t *node = &s->graph->nodes[index];
  wm_node_label(s->graph, index, rn->label, sizeof(rn->label));
  rn->host = true;
  rn->slot = 0;
  wm_placement_t *p = &rn->placement;
  p->node = rn->label;
  p->op_type = node->op_type;
  p->domain = node->domain;
  p->backend = "session";
  p->level = WM_SUPPORT_SUPPORTED;
  p->refusals = rn->refusals;
  for (int32_t a = 0; a < node->attr_count; a++) {
    if (node->attrs[a].g) {
      WM_RETURN_IF_ERROR(collect_implicit(s, rn, node->attrs[a].g));
    }
  }
  return NULL;
}

// True for the nodes the session runs itself: operators whose kernel says
// so (control flow, sequences, optionals) and any node reading or writing
// a sequence or optional (Identity passes them through), since backends
// hold tensors only.
static bool runs_in_session(const wm_graph_t *g, const wm_node_t *node) {
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

// Places node |index|; appends a line to |unplaced| when nothing takes it.
static wm_status_t place_node(wm_session_t *s, size_t index,
                              wm_strbuf_t *unplaced, size_t *n_unplaced) {
  rt_node_t *rn = &s->nodes[index];
  const wm_node_t *node = &s->graph->nodes[index];
  if (runs_in_session(s->graph, node)) {
    return place_host_node(s, index);
  }
  wm_op_ctx_t ctx;
  WM_RETURN_IF_ERROR(wm_op_ctx_init(&ctx, s->graph, index));
  snprintf(rn->label, sizeof(rn->label), "%s", ctx.label);
  wm_status_t st = wm_op_find_def(&ctx, &rn->def);
  if (!st) {
    st = wm_node_attrs_init(&rn->attrs, node);
  }
  for (int32_t i = 0; !st && i < ctx.n_out; i++) {
    if (node->outputs[i] >= 0) {
      ctx.out_types[i] = s->graph->values[node->outputs[i]].type;
    }
  }
  size_t n = (size_t)(ctx.n_in + ctx.n_out) + 1;
  wm_tensor_desc *descs = NULL;
  const void **values = NULL;
  if (!st) {
    descs = wm_calloc(n, sizeof(*descs));
    values = wm_calloc(n, sizeof(void *));
    if (!descs || !values) {
      st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  wm_op_desc op;
  wm_op_support best = {0};
  int32_t chosen = -1;
  wm_op_support answers[MAX_SLOTS];
  if (!st) {
    wm_node_op_desc(node, &ctx, &rn->attrs, descs, values, &op);
    for (size_t k = 0; !st && k < s->n_listed; k++) {
      st = wm_backend_op_query(s->slots[k].backend, &op, &answers[k]);
      if (!st && answers[k].level > best.level) {
        best = answers[k];
        chosen = (int32_t)k;
      }
    }
  }
  wm_placement_t *p = &rn->placement;
  p->node = rn->label;
  p->op_type = node->op_type;
  p->domain = node->domain;
  if (!st && chosen < 0 && s->n_slots > s->n_listed) {
    size_t fb = s->n_listed;
    st = wm_backend_op_query(s->slots[fb].backend, &op, &answers[fb]);
    if (!st && answers[fb].level > WM_SUPPORT_NONE) {
      best = answers[fb];
      chosen = (int32_t)fb;
      p->fell_back = true;
    }
  }
  if (!st) {
    // Backends before the chosen one (all listed ones when nothing or the
    // fallback took it) explain why they did not get the node.
    for (size_t k = 0; k < s->n_listed && (chosen < 0 || (int32_t)k < chosen);
         k++) {
      wm_placement_refusal_t *r = &rn->refusals[p->refusal_count++];
      r->backend = wm_backend_name(s->slots[k].backend);
      r->level = answers[k].level;
      r->reason = answers[k].reason;
      r->detail = answers[k].detail ? answers[k].detail : "";
    }
    p->refusals = rn->refusals;
  }
  if (!st && chosen < 0) {
    if ((*n_unplaced)++ < 16) {
      wm_strbuf_printf(unplaced, "\n  node \"%s\" (%s):", rn->label,
                       node->op_type);
      for (size_t r = 0; r < p->refusal_count; r++) {
        wm_strbuf_printf(
            unplaced, "%s %s: %s%s%s", r ? ";" : "", p->refusals[r].backend,
            wm_why_name(p->refusals[r].reason),
            *p->refusals[r].detail ? ", " : "", p->refusals[r].detail);
      }
    }
  } else if (!st) {
    rn->slot = chosen;
    p->backend = wm_backend_name(s->slots[chosen].backend);
    p->impl = best.impl;
    p->level = best.level;
  }
  free(descs);
  free(values);
  wm_op_ctx_deinit(&ctx);
  return st;
}

static wm_status_t place_nodes(wm_session_t *s) {
  wm_strbuf_t unplaced;
  wm_strbuf_init(&unplaced);
  size_t n_unplaced = 0;
  wm_status_t st = NULL;
  for (size_t k = 0; !st && k < s->graph->node_count; k++) {
    st = place_node(s, (size_t)s->order[k], &unplaced, &n_unplaced);
  }
  if (!st && n_unplaced) {
    wm_strbuf_t names;
    wm_strbuf_init(&names);
    for (size_t k = 0; k < s->n_listed; k++) {
      wm_strbuf_printf(&names, "%s%s", k ? "," : "",
                       wm_backend_name(s->slots[k].backend));
    }
    st = WM_ERROR(UNIMPLEMENTED, "%zu node%s cannot be placed on %s%s:%s%s",
                  n_unplaced, n_unplaced == 1 ? "" : "s", wm_strbuf_str(&names),
                  s->n_slots > s->n_listed ? " or the fallback" : "",
                  wm_strbuf_str(&unplaced), n_unplaced > 16 ? "\n  ..." : "");
    wm_strbuf_deinit(&names);
  }
  wm_strbuf_deinit(&unplaced);
  if (!st) {
    int32_t last = -1;
    for (size_t k = 0; k < s->graph->node_count; k++) {
      int32_t slot = s->nodes[s->order[k]].slot;
      s->stats.partitions += slot != last;
      last = slot;
    }
  }
  return st;
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
  return (int32_t)s->n_slots++;
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
  WM_RETURN_IF_ERROR(wm_graph_verify(graph));
  WM_RETURN_IF_ERROR(wm_ops_check_graph(graph));
  wm_session_t *s = wm_calloc(1, sizeof(*s));
  if (!s) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  s->graph = graph;
  for (size_t k = 0; k < options->backend_count; k++) {
    s->listed[k] = options->backends[k];
  }
  s->options = *options;
  s->options.backends = s->listed;
  wm_status_t st = NULL;
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
  if (!st) {
    st = wm_graph_topo_order(graph, &s->order);
  }
  size_t nv = graph->value_count + 1, nn = graph->node_count + 1;
  if (!st) {
    s->nodes = wm_calloc(nn, sizeof(rt_node_t));
    s->values = wm_calloc(nv, sizeof(rt_value_t));
    s->use_count = wm_calloc(nv, sizeof(int32_t));
    if (!s->nodes || !s->values || !s->use_count) {
      st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  for (size_t i = 0; !st && i < graph->value_count; i++) {
    s->values[i].home = -1;
  }
  for (size_t i = 0; !st && i < graph->node_count; i++) {
    const wm_node_t *node = &graph->nodes[i];
    for (int32_t k = 0; k < node->input_count; k++) {
      if (node->inputs[k] >= 0) {
        s->use_count[node->inputs[k]]++;
      }
    }
  }
  for (size_t i = 0; !st && i < graph->output_count; i++) {
    s->use_count[graph->outputs[i]]++;
  }
  if (!st) {
    st = place_nodes(s);
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
  for (size_t i = 0; s->values && i < s->graph->value_count; i++) {
    release_value(s, &s->values[i]);
  }
  for (size_t i = 0; s->nodes && i < s->graph->node_count; i++) {
    rt_node_t *rn = &s->nodes[i];
    if (rn->plan) {
      s->slots[rn->slot].api->library->op_plan_destroy(rn->plan);
    }
    wm_node_attrs_deinit(&rn->attrs);
    wm_session_destroy(rn->sub[0]);
    wm_session_destroy(rn->sub[1]);
    free(rn->implicit);
    free(rn->planned);
  }
  for (size_t k = 0; k < s->n_slots; k++) {
    rt_backend_t *b = &s->slots[k];
    for (size_t i = 0; i < b->n_pool; i++) {
      free_buffer(b, b->pool[i].buf);
    }
    free(b->pool);
    if (b->stream) {
      b->api->device->stream_destroy(b->stream);
    }
    if (b->dev) {
      b->api->device->device_close(b->dev);
    }
  }
  free(s->nodes);
  free(s->values);
  free(s->use_count);
  free(s->order);
  free(s->node_ns);
  free(s);
}

size_t wm_session_node_count(const wm_session_t *session) {
  return session->graph->node_count;
}

const wm_placement_t *wm_session_placement(const wm_session_t *session,
                                           size_t index) {
  return index < session->graph->node_count ? &session->nodes[index].placement
                                            : NULL;
}

size_t wm_session_nodes_on(const wm_session_t *session, const char *backend) {
  size_t n = 0;
  for (size_t i = 0; i < session->graph->node_count; i++) {
    n += strcmp(session->nodes[i].placement.backend, backend) == 0;
  }
  return n;
}

wm_session_stats_t wm_session_stats(const wm_session_t *session) {
  return session->stats;
}

void wm_session_placement_json(const wm_session_t *s, wm_strbuf_t *out) {
  wm_strbuf_printf(out, "{\"schema\": \"wmap.placement/1\", \"backends\": [");
  for (size_t k = 0; k < s->n_slots; k++) {
    wm_strbuf_printf(out, "%s", k ? ", " : "");
    wm_strbuf_json_string(out, wm_backend_name(s->slots[k].backend));
  }
  wm_strbuf_printf(out,
                   "],\n \"partitions\": %zu, \"boundary_copies\": %zu, "
                   "\"bytes_copied\": %llu,\n \"nodes\": [\n",
                   s->stats.partitions, s->stats.boundary_copies,
                   (unsigned long long)s->stats.bytes_copied);
  for (size_t k = 0; k < s->graph->node_count; k++) {
    const wm_placement_t *p = &s->nodes[s->order[k]].placement;
    wm_strbuf_printf(out, "  {\"name\": ");
    wm_strbuf_json_string(out, p->node);
    wm_strbuf_printf(out, ", \"op\": ");
    wm_strbuf_json_string(out, p->op_type);
    wm_strbuf_printf(out, ", \"domain\": ");
    wm_strbuf_json_string(out, p->domain);
    wm_strbuf_printf(out, ", \"backend\": ");
    wm_strbuf_json_string(out, p->backend);
    wm_strbuf_printf(out,
                     ", \"impl\": \"%s\", \"level\": \"%s\", "
                     "\"fell_back\": %s, \"refusals\": [",
                     wm_impl_name(p->impl), wm_level_name(p->level),
                     p->fell_back ? "true" : "false");
    for (size_t r = 0; r < p->refusal_count; r++) {
      const wm_placement_refusal_t *rf = &p->refusals[r];
      wm_strbuf_printf(out, "%s{\"backend\": ", r ? ", " : "");
      wm_strbuf_json_string(out, rf->backend);
      wm_strbuf_printf(out,
                       ", \"level\": \"%s\", \"reason\": \"%s\", "
                       "\"detail\": ",
                       wm_level_name(rf->level), wm_why_name(rf->reason));
      wm_strbuf_json_string(out, rf->detail);
      wm_strbuf_printf(out, "}");
    }
    wm_strbuf_printf(out, "]}%s\n", k + 1 < s->graph->node_count ? "," : "");
  }
  wm_strbuf_printf(out, " ]}\n");
}

void wm_session_placement_text(const wm_session_t *s, wm_strbuf_t *out) {
  wm_strbuf_printf(out, "%-24s %-20s %-8s %-15s %-9s %s\n", "node", "op",
                   "backend", "impl", "level", "why not earlier backends");
  for (size_t k = 0; k < s->graph->node_count; k++) {
    const wm_placement_t *p = &s->nodes[s->order[k]].placement;
    wm_strbuf_printf(out, "%-24.24s %-20.20s %-8.8s %-15s %-9s", p->node,
                     p->op_type, p->backend, wm_impl_name(p->impl),
                     wm_level_name(p->level));
    for (size_t r = 0; r < p->refusal_count; r++) {
      const wm_placement_refusal_t *rf = &p->refusals[r];
      wm_strbuf_printf(
          out, "%s %s: %s%s%s", r ? ";" : "", rf->backend,
          rf->level ? wm_level_name(rf->level) : wm_why_name(rf->reason),
          *rf->detail ? " (" : "", rf->detail);
      wm_strbuf_printf(out, "%s", *rf->detail ? ")" : "");
    }
    wm_strbuf_printf(out, "\n");
  }
  wm_strbuf_printf(out, "%zu nodes, %zu partition%s\n", s->graph->node_count,
                   s->stats.partitions, s->stats.partitions == 1 ? "" : "s");
}

// ------------------------------------------------------------- running

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

// Plans node |index| for the instance in |op| unless its plan fits.
static wm_status_t ensure_plan(wm_session_t *s, size_t index,
                               const wm_op_desc *op,
                               const wm_tensor_desc *descs) {
  rt_node_t *rn = &s->nodes[index];
  rt_backend_t *b = &s->slots[rn->slot];
  size_t n = op->n_in + op->n_out;
  if (rn->plan && descs_equal(rn->planned, descs, n)) {
    return NULL;
  }
  if (rn->plan) {
    b->api->library->op_plan_destroy(rn->plan);
    rn->plan = NULL;
  }
  if (!rn->planned) {
    rn->planned = wm_calloc(n + 1, sizeof(wm_tensor_desc));
    if (!rn->planned) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  uint64_t ws = 0;
  WM_RETURN_IF_ERROR(slot_error(
      b, b->api->library->op_plan(b->dev, op, &rn->plan, &ws), "op_plan"));
  if (ws > 0) {
    b->api->library->op_plan_destroy(rn->plan);
    rn->plan = NULL;
    return WM_ERROR(UNIMPLEMENTED,
                    "backend \"%s\" asked for %llu bytes of workspace, which "
                    "sessions do not provide yet",
                    wm_backend_name(b->backend), (unsigned long long)ws);
  }
  memcpy(rn->planned, descs, n * sizeof(wm_tensor_desc));
  return NULL;
}

static bool value_is_persistent(const wm_session_t *s, int32_t id) {
  return s->graph->values[id].initializer && !s->values[id].overridden;
}

static void drop_use(wm_session_t *s, int32_t id) {
  rt_value_t *v = &s->values[id];
  if (--v->uses <= 0 && !value_is_persistent(s, id)) {
    release_value(s, v);
  }
}

static wm_status_t run_host_node(wm_session_t *s, size_t index);

static wm_status_t run_node(wm_session_t *s, size_t index) {
  const wm_node_t *node = &s->graph->nodes[index];
  rt_node_t *rn = &s->nodes[index];
  if (rn->host) {
    return run_host_node(s, index);
  }
  size_t slot = (size_t)rn->slot;
  rt_backend_t *b = &s->slots[slot];
  wm_op_ctx_t ctx;
  WM_RETURN_IF_ERROR(open_slot(s, slot));
  WM_RETURN_IF_ERROR(wm_op_ctx_init(&ctx, s->graph, index));
  wm_type_t *in_types = (wm_type_t *)ctx.in_types;
  const wm_tensor_t **ins = (const wm_tensor_t **)ctx.in;
  size_t n = (size_t)(ctx.n_in + ctx.n_out) + 1;
  wm_tensor_desc *descs = wm_calloc(n, sizeof(*descs));
  const void **values = wm_calloc(n, sizeof(void *));
  wm_buffer_view *views = wm_calloc(n, sizeof(*views));
  wm_status_t st = NULL;
  if (!descs || !values || !views) {
    st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (int32_t i = 0; !st && i < ctx.n_in; i++) {
    int32_t id = node->inputs[i];
    if (id < 0) {
      continue;
    }
    st = value_on(s, id, slot);
    if (st) {
      break;
    }
    rt_value_t *v = &s->values[id];
    wm_shape_t shape = shape_from_desc(&v->desc);
    in_types[i] = wm_type_tensor((wm_dtype_t)v->desc.dtype, &shape);
    ins[i] = host_view(s, id);
  }
  if (!st) {
    st = rn->def->infer(&ctx);
  }
  wm_op_desc op;
  if (!st) {
    wm_node_op_desc(node, &ctx, &rn->attrs, descs, values, &op);
    st = ensure_plan(s, index, &op, descs);
  }
  for (int32_t i = 0; !st && i < ctx.n_out; i++) {
    int32_t id = node->outputs[i];
    if (id < 0) {
      continue;
    }
    const wm_type_t *t = &ctx.out_types[i];
    if (!wm_shape_is_known(&t->shape) || !wm_dtype_is_valid(t->dtype)) {
      char buf[128];
      st = WM_OP_ERROR(&ctx, INTERNAL,
                       "output %d has type %s with every input known", i,
                       wm_type_format(t, buf, sizeof(buf)));
      break;
    }
    rt_value_t *v = &s->values[id];
    v->desc = wm_tensor_desc_from_type(t->dtype, &t->shape);
    st = alloc_copy(s, slot, &v->desc, &v->copy[slot]);
    v->home = (int32_t)slot;
    v->uses = s->use_count[id];
  }
  for (int32_t i = 0; !st && i < ctx.n_in + ctx.n_out; i++) {
    bool is_in = i < ctx.n_in;
    int32_t id = is_in ? node->inputs[i] : node->outputs[i - ctx.n_in];
    views[i].struct_size = sizeof(views[i]);
    views[i].desc = descs[i];
    views[i].buffer = id >= 0 ? s->values[id].copy[slot].buf : NULL;
  }
  if (!st) {
    st = slot_error(
        b,
        b->api->library->op_run(b->stream, rn->plan, views, (uint32_t)ctx.n_in,
                                views + ctx.n_in, (uint32_t)ctx.n_out, NULL),
        "op_run");
    if (st) {
      st = wm_status_annotate(st, "node \"%s\" (%s)", ctx.label, node->op_type);
    }
  }
  for (int32_t i = 0; !st && !b->mappable && i < ctx.n_out; i++) {
    int32_t id = node->outputs[i];
    size_t count = 0;
    if (id >= 0 && wm_shape_numel(&ctx.out_types[i].shape, &count) &&
        count * wm_dtype_size(ctx.out_types[i].dtype) <= HOST_COPY_LIMIT) {
      rt_value_t *v = &s->values[id];
      st = read_copy(s, slot, &v->copy[slot], &v->desc, &v->copy[slot].host);
    }
  }
  for (int32_t i = 0; i < ctx.n_in; i++) {
    if (node->inputs[i] >= 0) {
      drop_use(s, node->inputs[i]);
    }
  }
  for (int32_t i = 0; !st && i < ctx.n_out; i++) {
    int32_t id = node->outputs[i];
    if (id >= 0 && s->values[id].uses <= 0) {
      release_value(s, &s->values[id]);  // produced but never used
    }
  }
  free(descs);
  free(values);
  free(views);
  wm_op_ctx_deinit(&ctx);
  return st;
}

// -------------------------------------------------------- host values

// A host tensor holding value |id| (an initializer itself, else a copy
// read from its home backend); *out_owned says whether to destroy it.
static wm_status_t host_tensor(wm_session_t *s, int32_t id, wm_tensor_t **out,
                               bool *out_owned) {
  const rt_value_t *v = &s->values[id];
  const wm_value_t *gv = &s->graph->values[id];
  *out = NULL;
  *out_owned = false;
  if (v->is_item) {
    char what[96];
    return WM_ERROR(INVALID_ARGUMENT,
                    "value \"%s\" is a %s where a tensor is needed", gv->name,
                    wm_item_format(&v->item, what, sizeof(what)));
  }
  if (v->home >= 0) {
    *out_owned = true;
    return read_copy(s, (size_t)v->home, &v->copy[v->home], &v->desc, out);
  }
  if (gv->initializer) {
    *out = gv->initializer;
    return NULL;
  }
  return WM_ERROR(INTERNAL, "value \"%s\" has no producer output yet",
                  gv->name);
}

// Value |id| as an item: a sequence or optional the session holds
// (borrowed), else a host tensor; *out_owned says whether to deinit it.
static wm_status_t host_item(wm_session_t *s, int32_t id, wm_item_t *out,
                             bool *out_owned) {
  const rt_value_t *v = &s->values[id];
  memset(out, 0, sizeof(*out));
  *out_owned = false;
  if (v->is_item) {
    *out = v->item;
    return NULL;
  }
  wm_tensor_t *t;
  WM_RETURN_IF_ERROR(host_tensor(s, id, &t, out_owned));
  *out = wm_item_tensor_take(t);
  return NULL;
}

// Value |id| as an item of the caller's own: a deep copy unless it was
// already one.
static wm_status_t own_item(wm_session_t *s, int32_t id, wm_item_t *out) {
  bool owned;
  WM_RETURN_IF_ERROR(host_item(s, id, out, &owned));
  if (owned) {
    return NULL;
  }
  wm_item_t view = *out;
  return wm_item_clone(&view, out);
}

// Stores |item| (taken and cleared) as value |id|: a tensor is uploaded
// to slot 0, a sequence or optional kept on the host.
static wm_status_t store_item(wm_session_t *s, int32_t id, wm_item_t *item) {
  rt_value_t *v = &s->values[id];
  release_value(s, v);
  if (item->kind != WM_TYPE_TENSOR) {
    v->item = *item;
    v->is_item = true;
    memset(item, 0, sizeof(*item));
    return NULL;
  }
  wm_status_t st = item->tensor ? upload(s, 0, v, item->tensor)
                                : WM_ERROR(INTERNAL,
                                           "value \"%s\" was not "
                                           "computed",
                                           s->graph->values[id].name);
  if (!st) {
    v->home = 0;
  }
  wm_item_deinit(item);
  return st;
}

// -------------------------------------------------------- control flow

// The named inputs of one nested run: formal inputs then outer values.
typedef struct sub_inputs {
  size_t n, cap;
  const char **names;
  wm_item_t *items;
  bool *owned;
} sub_inputs_t;

static wm_status_t sub_add(sub_inputs_t *in, const char *name, wm_item_t item,
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

static wm_status_t sub_add_tensor(sub_inputs_t *in, const char *name,
                                  wm_tensor_t *t, bool owned) {
  return sub_add(in, name, wm_item_tensor_take(t), owned);
}

static void sub_truncate(sub_inputs_t *in, size_t n) {
  while (in->n > n) {
    in->n--;
    if (in->owned[in->n]) {
      wm_item_deinit(&in->items[in->n]);
    }
  }
}

static void sub_deinit(sub_inputs_t *in) {
  sub_truncate(in, 0);
  free(in->names);
  free(in->items);
  free(in->owned);
}

// Adds the values |g| reads from this session's graph.
static wm_status_t sub_add_outer(wm_session_t *s, const wm_graph_t *g,
                                 sub_inputs_t *in) {
  for (size_t v = 0; v < g->value_count; v++) {
    if (!g->values[v].is_outer) {
      continue;
    }
    // Defined here, or (a subgraph nested deeper) in an enclosing run.
    wm_session_t *at = s;
    int32_t id = wm_graph_find_value(at->graph, g->values[v].name);
    while (at->outer &&
           (id < 0 || (at->values[id].home < 0 && !at->values[id].is_item &&
                       !at->graph->values[id].initializer))) {
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
    WM_RETURN_IF_ERROR(host_item(at, id, &item, &owned));
    WM_RETURN_IF_ERROR(sub_add(in, g->values[v].name, item, owned));
  }
  return NULL;
}

// The nested session of subgraph attribute |name| (created on first use
// with this session's backends), cached in rn->sub[k].
static wm_status_t sub_session(wm_session_t *s, rt_node_t *rn,
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
static wm_status_t sub_run(wm_session_t *s, wm_session_t *sub,
                           const sub_inputs_t *in, wm_item_t *outs) {
  sub->outer = s;
  wm_status_t st = wm_session_run_items(sub, in->names, in->items, in->n, outs);
  sub->outer = NULL;
  return st;
}

// Takes the tensor of body output |item| (a sequence or optional is an
// error naming |what|).
static wm_status_t take_tensor(const rt_node_t *rn, const char *op,
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
static wm_status_t scalar_item(wm_dtype_t dtype, int64_t v, wm_item_t *out) {
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

static wm_status_t run_if(wm_session_t *s, size_t index, sub_inputs_t *in,
                          wm_item_t *results) {
  const wm_node_t *node = &s->graph->nodes[index];
  rt_node_t *rn = &s->nodes[index];
  wm_tensor_t *cond;
  bool owned;
  WM_RETURN_IF_ERROR(host_tensor(s, node->inputs[0], &cond, &owned));
  bool take = truthy(cond);
  if (owned) {
    wm_tensor_destroy(cond);
  }
  wm_session_t *sub;
  WM_RETURN_IF_ERROR(sub_session(
      s, rn, node, take ? "then_branch" : "else_branch", take ? 0 : 1, &sub));
  WM_RETURN_IF_ERROR(sub_add_outer(s, sub->graph, in));
  if (sub->graph->output_count != (size_t)node->output_count) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (If): the branch has %zu outputs, the node "
                    "%d",
                    rn->label, sub->graph->output_count,
                    (int)node->output_count);
  }
  return sub_run(s, sub, in, results);
}

// Loop: the carried values (tensors, sequences or optionals) are items
// replaced every iteration; scan outputs are tensors stacked at the end.
static wm_status_t run_loop(wm_session_t *s, size_t index, sub_inputs_t *in,
                            wm_item_t *results) {
  const wm_node_t *node = &s->graph->nodes[index];
  rt_node_t *rn = &s->nodes[index];
  wm_session_t *sub;
  WM_RETURN_IF_ERROR(sub_session(s, rn, node, "body", 0, &sub));
  const wm_graph_t *body = sub->graph;
  size_t n_carried = (size_t)node->input_count - 2;
  size_t n_scan = (size_t)node->output_count - n_carried;
  int64_t max_iter = INT64_MAX;
  bool cond = true;
  wm_tensor_t *t;
  bool owned;
  if (node->inputs[0] >= 0) {
    WM_RETURN_IF_ERROR(host_tensor(s, node->inputs[0], &t, &owned));
    max_iter = t->count ? wm_tensor_get_i64(t, 0) : 0;
    if (owned) {
      wm_tensor_destroy(t);
    }
  }
  if (node->inputs[1] >= 0) {
    WM_RETURN_IF_ERROR(host_tensor(s, node->inputs[1], &t, &owned));
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
    st = own_item(s, node->inputs[i + 2], &carried[i]);
  }
  // The values the body reads from this graph, read once for every
  // iteration; then per iteration: iteration_num, cond, the carried values.
  if (!st) {
    st = sub_add_outer(s, body, in);
  }
  size_t n_outer = in->n;
  while (!st && (int64_t)iters < max_iter && cond) {
    sub_truncate(in, n_outer);
    wm_item_t it, c;
    st = scalar_item(WM_DTYPE_INT64, (int64_t)iters, &it);
    if (!st) {
      st = sub_add(in, body->values[body->inputs[0]].name, it, true);
    }
    if (!st) {
      st = scalar_item(WM_DTYPE_BOOL, 1, &c);
    }
    if (!st) {
      st = sub_add(in, body->values[body->inputs[1]].name, c, true);
    }
    for (size_t i = 0; !st && i < n_carried; i++) {
      st = sub_add(in, body->values[body->inputs[i + 2]].name, carried[i],
                   false);
    }
    if (!st) {
      st = sub_run(s, sub, in, outs);
    }
    if (!st) {
      cond = outs[0].kind == WM_TYPE_TENSOR && truthy(outs[0].tensor);
      for (size_t i = 0; i < n_carried; i++) {
        wm_item_deinit(&carried[i]);
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
        st = take_tensor(rn, "Loop", "scan output", k, &outs[n_carried + 1 + k],
                         &scans[k][iters]);
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
static void axis_blocks(const wm_shape_t *shape, int32_t axis, size_t esize,
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
  axis_blocks(&x->shape, axis, wm_dtype_size(x->dtype), &outer, &inner);
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

// Runs |len| steps of the body |sub| on |in| (outer values already added,
// n_outer of them): states (owned) are replaced every step, xs are the scan
// inputs, ys receive the scan outputs (created at the first step).
static wm_status_t scan_steps(wm_session_t *s, wm_session_t *sub,
                              sub_inputs_t *in, size_t n_outer,
                              const scan_spec_t *sp, int64_t len,
                              wm_tensor_t **states, wm_tensor_t *const *xs,
                              wm_tensor_t **ys) {
  const wm_graph_t *body = sub->graph;
  const char *label = sp->rn->label;
  wm_item_t *outs = wm_calloc(body->output_count + 1, sizeof(*outs));
  wm_status_t st = outs ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  for (int64_t t = 0; !st && t < len; t++) {
    sub_truncate(in, n_outer);
    for (size_t i = 0; !st && i < sp->n_state; i++) {
      st = sub_add_tensor(in, body->values[body->inputs[i]].name, states[i],
                          false);
    }
    for (size_t j = 0; !st && j < sp->m; j++) {
      int64_t at = j < sp->n_in_dirs && sp->in_dirs[j] ? len - 1 - t : t;
      wm_tensor_t *slice = NULL;
      st = slice_of(xs[j], sp->in_axes[j], at, &slice);
      if (!st) {
        st = sub_add_tensor(
            in, body->values[body->inputs[sp->n_state + j]].name, slice, true);
      }
    }
    if (!st) {
      st = sub_run(s, sub, in, outs);
    }
    for (size_t i = 0; !st && i < sp->n_state; i++) {
      wm_tensor_t *next;
      st = take_tensor(sp->rn, "Scan", "state", i, &outs[i], &next);
      if (!st) {
        wm_tensor_destroy(states[i]);
        states[i] = next;
      }
    }
    for (size_t k = 0; !st && k < sp->k; k++) {
      wm_tensor_t *y;
      st = take_tensor(sp->rn, "Scan", "scan output", k, &outs[sp->n_state + k],
                       &y);
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
    WM_RETURN_IF_ERROR(host_tensor(s, id, &vals[i], &owned[i]));
  }
  return NULL;
}

// Scan 9+: inputs are N states then M scan inputs, each sliced along its
// own axis.
static wm_status_t run_scan(wm_session_t *s, size_t index, sub_inputs_t *in,
                            wm_item_t *results) {
  const wm_node_t *node = &s->graph->nodes[index];
  rt_node_t *rn = &s->nodes[index];
  wm_session_t *sub;
  WM_RETURN_IF_ERROR(sub_session(s, rn, node, "body", 0, &sub));
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
  // States: owned copies replaced every iteration.
  for (size_t i = 0; !st && i < sp.n_state; i++) {
    if (!owned[i]) {
      st = wm_tensor_clone(vals[i], &vals[i]);
      owned[i] = !st;
    }
  }
  if (!st) {
    st = sub_add_outer(s, sub->graph, in);
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

// Scan 8 (the batched form): input 0 is the optional sequence_lens
// [batch], then N states [batch, ...] and M scan inputs [batch, seq, ...];
// each batch entry is scanned on its own for its length, and scan outputs
// [batch, max_len, ...] are zero past an entry's length.
static wm_status_t run_scan8(wm_session_t *s, size_t index, sub_inputs_t *in,
                             wm_item_t *results) {
  const wm_node_t *node = &s->graph->nodes[index];
  rt_node_t *rn = &s->nodes[index];
  wm_session_t *sub;
  WM_RETURN_IF_ERROR(sub_session(s, rn, node, "body", 0, &sub));
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
    st = host_tensor(s, node->inputs[0], &lens, &lens_owned);
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
  if (!st) {
    st = sub_add_outer(s, sub->graph, in);
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
    // Entry b of each output: a state, or a scan output padded with zeros.
    for (size_t o = 0; !st && o < n_out; o++) {
      wm_tensor_t *part = o < sp.n_state ? bvals[o] : ys[o - sp.n_state];
      if (!part) {
        st = WM_ERROR(UNIMPLEMENTED,
                      "node \"%s\" (Scan): batch entry %lld has length 0, so "
                      "scan output %zu has no element shape",
                      rn->label, (long long)b, o - sp.n_state);
        break;
      }
      size_t stride = o < sp.n_state ? part->nbytes
                                     : part->nbytes / (size_t)(len ? len : 1) *
                                           (size_t)max_len;
      if (!outs[o]) {
        wm_shape_t shape = part->shape;
        memmove(&shape.dims[1], &shape.dims[0],
                (size_t)shape.rank * sizeof(shape.dims[0]));
        shape.dims[0] = batch;
        shape.rank++;
        if (o >= sp.n_state) {
          shape.dims[1] = max_len;
        }
        st = wm_tensor_create(part->dtype, &shape, &outs[o]);
      }
      if (!st && (outs[o]->dtype != part->dtype ||
                  outs[o]->nbytes != stride * (size_t)batch)) {
        st = WM_ERROR(INVALID_ARGUMENT,
                      "node \"%s\" (Scan): output %zu changes type or size at "
                      "batch entry %lld",
                      rn->label, o, (long long)b);
      }
      if (!st) {
        memcpy((char *)outs[o]->data + (size_t)b * stride, part->data,
               part->nbytes);
      }
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

// ------------------------------------------------------------- sequences

// Input |i| of |node| as an int64 scalar, or |def| when omitted.
static wm_status_t int_input(wm_session_t *s, const wm_node_t *node, int32_t i,
                             int64_t def, int64_t *out) {
  *out = def;
  if (i >= node->input_count || node->inputs[i] < 0) {
    return NULL;
  }
  wm_tensor_t *t;
  bool owned;
  WM_RETURN_IF_ERROR(host_tensor(s, node->inputs[i], &t, &owned));
  wm_status_t st = t->count == 1 ? NULL
                                 : WM_ERROR(INVALID_ARGUMENT,
                                            "input %d has %zu elements, want "
                                            "a scalar",
                                            (int)i, t->count);
  if (!st) {
    *out = wm_tensor_get_i64(t, 0);
  }
  if (owned) {
    wm_tensor_destroy(t);
  }
  return st;
}

// A position in [-n, n + extra - 1] made non-negative, or an error.
static wm_status_t seq_position(const rt_node_t *rn, int64_t pos, size_t n,
                                size_t extra, size_t *out) {
  int64_t len = (int64_t)n;
  if (pos < -len || pos > len - 1 + (int64_t)extra) {
    return WM_ERROR(OUT_OF_RANGE,
                    "node \"%s\": position %lld is outside [%lld, %lld]",
                    rn->label, (long long)pos, (long long)-len,
                    (long long)(len - 1 + (int64_t)extra));
  }
  *out = (size_t)(pos < 0 ? pos + len : pos);
  return NULL;
}

static wm_status_t split_to_sequence(wm_session_t *s, const wm_node_t *node,
                                     const rt_node_t *rn, wm_tensor_t ***out,
                                     size_t *out_n) {
  wm_tensor_t *x;
  bool owned;
  WM_RETURN_IF_ERROR(host_tensor(s, node->inputs[0], &x, &owned));
  wm_tensor_t *split = NULL;
  bool split_owned = false;
  wm_status_t st = NULL;
  if (node->input_count > 1 && node->inputs[1] >= 0) {
    st = host_tensor(s, node->inputs[1], &split, &split_owned);
  }
  int32_t axis = -1;
  int64_t a = wm_node_attr_int(node, "axis", 0);
  if (!st) {
    axis = (int32_t)(a < 0 ? a + x->shape.rank : a);
    if (axis < 0 || axis >= x->shape.rank || x->dtype == WM_DTYPE_STRING) {
      st = WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (SplitToSequence): axis %lld for rank %d, "
                    "or string input",
                    rn->label, (long long)a, (int)x->shape.rank);
    }
  }
  size_t len = st ? 0 : (size_t)x->shape.dims[axis];
  bool keep = split || wm_node_attr_int(node, "keepdims", 1) != 0;
  // Chunk sizes.
  size_t n = 0;
  size_t cap = split && split->count > len ? split->count : len;
  int64_t *sizes = wm_calloc(cap + 2, sizeof(int64_t));
  if (!st && !sizes) {
    st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  if (!st && !split) {
    for (size_t i = 0; i < len; i++) {
      sizes[n++] = 1;
    }
  } else if (!st && split->shape.rank == 0) {
    int64_t k = wm_tensor_get_i64(split, 0);
    if (k < 1) {
      st = WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (SplitToSequence): split is %lld, want >= 1",
                    rn->label, (long long)k);
    }
    for (size_t at = 0; !st && at < len; at += (size_t)k) {
      sizes[n++] = (int64_t)(len - at < (size_t)k ? len - at : (size_t)k);
    }
  } else if (!st) {
    int64_t sum = 0;
    for (size_t i = 0; !st && i < split->count; i++) {
      int64_t k = wm_tensor_get_i64(split, i);
      if (k < 0) {
        st = WM_ERROR(INVALID_ARGUMENT,
                      "node \"%s\" (SplitToSequence): split[%zu] is %lld",
                      rn->label, i, (long long)k);
        break;
      }
      sizes[n++] = k;
      sum += k;
    }
    if (!st && sum != (int64_t)len) {
      st = WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (SplitToSequence): the splits sum to %lld, "
                    "the axis has %zu",
                    rn->label, (long long)sum, len);
    }
  }
  wm_tensor_t **items = st ? NULL : wm_calloc(n + 1, sizeof(*items));
  if (!st && !items) {
    st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  size_t esize = st ? 0 : wm_dtype_size(x->dtype), outer = 0, inner = 0;
  if (!st) {
    axis_blocks(&x->shape, axis, esize, &outer, &inner);
  }
  size_t start = 0;
  for (size_t c = 0; !st && c < n; c++) {
    wm_shape_t shape = x->shape;
    shape.dims[axis] = sizes[c];
    if (!keep) {
      memmove(&shape.dims[axis], &shape.dims[axis + 1],
              (size_t)(shape.rank - axis - 1) * sizeof(shape.dims[0]));
      shape.rank--;
    }
    st = wm_tensor_create(x->dtype, &shape, &items[c]);
    for (size_t o = 0; !st && o < outer; o++) {
      memcpy((char *)items[c]->data + o * (size_t)sizes[c] * inner,
             (const char *)x->data + (o * len + start) * inner,
             (size_t)sizes[c] * inner);
    }
    start += (size_t)sizes[c];
  }
  if (st) {
    for (size_t c = 0; items && c < n; c++) {
      wm_tensor_destroy(items[c]);
    }
    free(items);
  } else {
    *out = items;
    *out_n = n;
  }
  free(sizes);
  if (owned) {
    wm_tensor_destroy(x);
  }
  if (split_owned) {
    wm_tensor_destroy(split);
  }
  return st;
}

// The sequence value |id| (borrowed).
static wm_status_t seq_in(wm_session_t *s, int32_t id, const wm_item_t **out) {
  const rt_value_t *v = &s->values[id];
  if (!v->is_item || v->item.kind != WM_TYPE_SEQUENCE) {
    return WM_ERROR(INVALID_ARGUMENT, "value \"%s\" is not a sequence",
                    s->graph->values[id].name);
  }
  *out = &v->item;
  return NULL;
}

static wm_status_t concat_from_sequence(wm_session_t *s, const wm_node_t *node,
                                        const rt_node_t *rn,
                                        wm_tensor_t **out) {
  const wm_item_t *seq;
  WM_RETURN_IF_ERROR(seq_in(s, node->inputs[0], &seq));
  size_t n = seq->count;
  if (n == 0) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (ConcatFromSequence): the sequence is empty",
                    rn->label);
  }
  for (size_t i = 0; i < n; i++) {
    if (seq->elems[i].kind != WM_TYPE_TENSOR) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "node \"%s\" (ConcatFromSequence): element %zu is not "
                      "a tensor",
                      rn->label, i);
    }
  }
  bool stack = wm_node_attr_int(node, "new_axis", 0) != 0;
  int64_t a = wm_node_attr_int(node, "axis", 0);
  const wm_tensor_t *first = seq->elems[0].tensor;
  int32_t rank = first->shape.rank + (stack ? 1 : 0);
  int32_t axis = (int32_t)(a < 0 ? a + rank : a);
  if (axis < 0 || axis >= rank || first->dtype == WM_DTYPE_STRING) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (ConcatFromSequence): axis %lld for rank "
                    "%d, or strings",
                    rn->label, (long long)a, (int)rank);
  }
  // Each element viewed with a dim of 1 at |axis| when stacking.
  wm_shape_t shape = first->shape;
  if (stack) {
    memmove(&shape.dims[axis + 1], &shape.dims[axis],
            (size_t)(shape.rank - axis) * sizeof(shape.dims[0]));
    shape.dims[axis] = 1;
    shape.rank++;
  }
  int64_t total = 0;
  for (size_t i = 0; i < n; i++) {
    const wm_tensor_t *t = seq->elems[i].tensor;
    bool ok = t->dtype == first->dtype && t->shape.rank == first->shape.rank;
    for (int32_t d = 0, e = 0; ok && d < shape.rank; d++) {
      if (stack && d == axis) {
        continue;
      }
      int64_t dim = t->shape.dims[e++];
      ok = d == axis || dim == shape.dims[d];
      if (d == axis) {
        total += dim;
      }
    }
    if (!ok) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "node \"%s\" (ConcatFromSequence): element %zu does "
                      "not match element 0's type or shape",
                      rn->label, i);
    }
    if (stack) {
      total += 1;
    }
  }
  shape.dims[axis] = total;
  WM_RETURN_IF_ERROR(wm_tensor_create(first->dtype, &shape, out));
  size_t esize = wm_dtype_size(first->dtype), outer, inner;
  axis_blocks(&shape, axis, esize, &outer, &inner);
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    const wm_tensor_t *t = seq->elems[i].tensor;
    size_t steps = stack ? 1 : (size_t)t->shape.dims[axis];
    for (size_t o = 0; o < outer; o++) {
      memcpy((char *)(*out)->data + (o * (size_t)total + at) * inner,
             (const char *)t->data + o * steps * inner, steps * inner);
    }
    at += steps;
  }
  return NULL;
}

// Runs sequence node |index| into results[0].
static wm_status_t run_sequence(wm_session_t *s, size_t index,
                                wm_item_t *results) {
  const wm_node_t *node = &s->graph->nodes[index];
  const rt_node_t *rn = &s->nodes[index];
  const char *op = node->op_type;
  wm_item_t *r = &results[0];
  const wm_item_t *src = NULL;
  size_t pos = 0;
  int64_t p = 0;
  wm_status_t st = NULL;
  if (strcmp(op, "SequenceEmpty") == 0) {
    int64_t dt = wm_node_attr_int(node, "dtype", WM_DTYPE_FLOAT);
    return wm_item_init(r, WM_TYPE_SEQUENCE, WM_TYPE_TENSOR, (wm_dtype_t)dt, 0);
  }
  if (strcmp(op, "SequenceConstruct") == 0) {
    st = wm_item_init(r, WM_TYPE_SEQUENCE, WM_TYPE_TENSOR, WM_DTYPE_UNDEFINED,
                      (size_t)node->input_count);
    for (int32_t i = 0; !st && i < node->input_count; i++) {
      st = own_item(s, node->inputs[i], &r->elems[r->count]);
      r->count += !st;
    }
    if (!st && r->count) {
      r->elem_kind = r->elems[0].kind;
      r->elem_dtype = wm_item_dtype(&r->elems[0]);
    }
    return st;
  }
  if (strcmp(op, "SequenceInsert") == 0 || strcmp(op, "SequenceErase") == 0) {
    bool insert = op[8] == 'I';
    WM_RETURN_IF_ERROR(seq_in(s, node->inputs[0], &src));
    WM_RETURN_IF_ERROR(int_input(s, node, insert ? 2 : 1,
                                 insert ? (int64_t)src->count : -1, &p));
    WM_RETURN_IF_ERROR(seq_position(rn, p, src->count, insert ? 1 : 0, &pos));
    st = wm_item_init(r, WM_TYPE_SEQUENCE, src->elem_kind, src->elem_dtype,
                      src->count + 1);
    for (size_t i = 0; !st && i <= src->count; i++) {
      if (insert && i == pos) {
        st = own_item(s, node->inputs[1], &r->elems[r->count]);
        r->count += !st;
        if (!st && r->elem_dtype == WM_DTYPE_UNDEFINED) {
          r->elem_dtype = wm_item_dtype(&r->elems[r->count - 1]);
        }
      }
      if (!st && i < src->count && (insert || i != pos)) {
        st = wm_item_clone(&src->elems[i], &r->elems[r->count]);
        r->count += !st;
      }
    }
    return st;
  }
  if (strcmp(op, "SequenceAt") == 0) {
    WM_RETURN_IF_ERROR(seq_in(s, node->inputs[0], &src));
    WM_RETURN_IF_ERROR(int_input(s, node, 1, 0, &p));
    WM_RETURN_IF_ERROR(seq_position(rn, p, src->count, 0, &pos));
    return wm_item_clone(&src->elems[pos], r);
  }
  if (strcmp(op, "SequenceLength") == 0) {
    WM_RETURN_IF_ERROR(seq_in(s, node->inputs[0], &src));
    return scalar_item(WM_DTYPE_INT64, (int64_t)src->count, r);
  }
  if (strcmp(op, "SplitToSequence") == 0) {
    wm_tensor_t **parts = NULL;
    size_t n = 0;
    WM_RETURN_IF_ERROR(split_to_sequence(s, node, rn, &parts, &n));
    st = wm_item_init(r, WM_TYPE_SEQUENCE, WM_TYPE_TENSOR,
                      n ? parts[0]->dtype : WM_DTYPE_UNDEFINED, n);
    for (size_t i = 0; i < n; i++) {
      if (st) {
        wm_tensor_destroy(parts[i]);
      } else {
        r->elems[r->count++] = wm_item_tensor_take(parts[i]);
      }
    }
    free(parts);
    return st;
  }
  wm_tensor_t *t = NULL;
  st = concat_from_sequence(s, node, rn, &t);
  *r = wm_item_tensor_take(t);
  return st;
}

// ----------------------------------------------------- optionals and co

// SequenceMap: the body runs once per position of the input sequence; a
// sequence among the additional inputs gives its element at that
// position, a tensor is passed whole; output j collects the body's
// output j.
static wm_status_t run_sequence_map(wm_session_t *s, size_t index,
                                    sub_inputs_t *in, wm_item_t *results) {
  const wm_node_t *node = &s->graph->nodes[index];
  rt_node_t *rn = &s->nodes[index];
  wm_session_t *sub;
  WM_RETURN_IF_ERROR(sub_session(s, rn, node, "body", 0, &sub));
  const wm_graph_t *body = sub->graph;
  size_t n_in = (size_t)node->input_count, n_out = (size_t)node->output_count;
  if (body->input_count != n_in || body->output_count != n_out) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (SequenceMap): the body has %zu inputs and "
                    "%zu outputs, the node %zu and %zu",
                    rn->label, body->input_count, body->output_count, n_in,
                    n_out);
  }
  wm_item_t *args = wm_calloc(n_in + 1, sizeof(*args));
  bool *owned = wm_calloc(n_in + 1, sizeof(bool));
  wm_item_t *outs = wm_calloc(n_out + 1, sizeof(*outs));
  wm_status_t st = args && owned && outs
                       ? NULL
                       : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  size_t len = 0;
  for (size_t i = 0; !st && i < n_in; i++) {
    st = host_item(s, node->inputs[i], &args[i], &owned[i]);
    if (!st && i == 0 && args[0].kind != WM_TYPE_SEQUENCE) {
      st = WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (SequenceMap): input 0 is not a sequence",
                    rn->label);
    }
    if (!st && i == 0) {
      len = args[0].count;
    } else if (!st && args[i].kind == WM_TYPE_SEQUENCE &&
               args[i].count != len) {
      st = WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (SequenceMap): input %zu has %zu elements, "
                    "input 0 %zu",
                    rn->label, i, args[i].count, len);
    }
  }
  for (size_t j = 0; !st && j < n_out; j++) {
    const wm_type_t *t = &body->values[body->outputs[j]].type;
    st = wm_item_init(&results[j], WM_TYPE_SEQUENCE, t->kind, t->dtype, len);
  }
  if (!st) {
    st = sub_add_outer(s, body, in);
  }
  size_t n_outer = in->n;
  for (size_t e = 0; !st && e < len; e++) {
    sub_truncate(in, n_outer);
    for (size_t i = 0; !st && i < n_in; i++) {
      st = sub_add(
          in, body->values[body->inputs[i]].name,
          args[i].kind == WM_TYPE_SEQUENCE ? args[i].elems[e] : args[i], false);
    }
    if (!st) {
      st = sub_run(s, sub, in, outs);
    }
    for (size_t j = 0; !st && j < n_out; j++) {
      wm_item_t *seq = &results[j];
      seq->elems[seq->count++] = outs[j];
      if (seq->elem_dtype == WM_DTYPE_UNDEFINED) {
        seq->elem_kind = outs[j].kind;
        seq->elem_dtype = wm_item_dtype(&outs[j]);
      }
      memset(&outs[j], 0, sizeof(outs[j]));
    }
  }
  for (size_t i = 0; args && i < n_in; i++) {
    if (owned[i]) {
      wm_item_deinit(&args[i]);
    }
  }
  free(args);
  free(owned);
  free(outs);
  return st;
}

// Optional, OptionalHasElement and OptionalGetElement; Identity of a
// sequence or optional.
static wm_status_t run_optional(wm_session_t *s, size_t index,
                                wm_item_t *results) {
  const wm_node_t *node = &s->graph->nodes[index];
  const rt_node_t *rn = &s->nodes[index];
  const char *op = node->op_type;
  int32_t in = node->input_count > 0 ? node->inputs[0] : -1;
  wm_item_t *r = &results[0];
  if (strcmp(op, "Optional") == 0) {
    if (in < 0) {
      const wm_attr_t *a = wm_node_attr(node, "type");
      if (!a || a->type != WM_ATTR_TYPE_PROTO || !a->types) {
        return WM_ERROR(INVALID_ARGUMENT,
                        "node \"%s\" (Optional): without an input the "
                        "attribute \"type\" is required",
                        rn->label);
      }
      return wm_item_init(r, WM_TYPE_OPTIONAL, a->types[0].kind,
                          a->types[0].dtype, 0);
    }
    wm_item_t content;
    WM_RETURN_IF_ERROR(own_item(s, in, &content));
    return wm_item_optional_take(&content, r);
  }
  if (strcmp(op, "OptionalHasElement") == 0) {
    const rt_value_t *v = in >= 0 ? &s->values[in] : NULL;
    bool has = v && (!v->is_item || v->item.kind != WM_TYPE_OPTIONAL ||
                     v->item.count > 0);
    return scalar_item(WM_DTYPE_BOOL, has, r);
  }
  if (strcmp(op, "OptionalGetElement") == 0 || strcmp(op, "Identity") == 0) {
    if (in < 0) {
      return WM_ERROR(INVALID_ARGUMENT, "node \"%s\" (%s): input 0 is omitted",
                      rn->label, op);
    }
    const rt_value_t *v = &s->values[in];
    if (op[0] == 'O' && v->is_item && v->item.kind == WM_TYPE_OPTIONAL) {
      if (v->item.count == 0) {
        return WM_ERROR(INVALID_ARGUMENT,
                        "node \"%s\" (OptionalGetElement): the optional "
                        "\"%s\" is empty",
                        rn->label, s->graph->values[in].name);
      }
      return wm_item_clone(&v->item.elems[0], r);
    }
    return own_item(s, in, r);
  }
  return WM_ERROR(UNIMPLEMENTED,
                  "node \"%s\" (%s): the operator does not take sequences or "
                  "optionals",
                  rn->label, op);
}

// ------------------------------------------------------ FlexAttention

// What FlexAttention's mod callback needs: the node and a nested input
// list.
typedef struct flex_env {
  wm_session_t *s;
  rt_node_t *rn;
  const wm_node_t *node;
  sub_inputs_t *in;
} flex_env_t;

// Runs the node's score_mod or prob_mod subgraph on |x|.
static wm_status_t flex_mod(void *env, const char *attr, const wm_tensor_t *x,
                            wm_tensor_t **out) {
  flex_env_t *e = env;
  *out = NULL;
  wm_session_t *sub;
  WM_RETURN_IF_ERROR(sub_session(e->s, e->rn, e->node, attr,
                                 strcmp(attr, "score_mod") == 0 ? 0 : 1, &sub));
  const wm_graph_t *g = sub->graph;
  size_t formal = 0;
  while (formal < g->input_count && g->values[g->inputs[formal]].initializer) {
    formal++;
  }
  if (formal == g->input_count || g->output_count != 1) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (FlexAttention): subgraph %s has no input "
                    "or %zu outputs, want 1",
                    e->rn->label, attr, g->output_count);
  }
  sub_truncate(e->in, 0);
  WM_RETURN_IF_ERROR(sub_add_tensor(e->in, g->values[g->inputs[formal]].name,
                                    (wm_tensor_t *)x, false));
  WM_RETURN_IF_ERROR(sub_add_outer(e->s, g, e->in));
  wm_item_t result;
  WM_RETURN_IF_ERROR(sub_run(e->s, sub, e->in, &result));
  wm_status_t st = take_tensor(e->rn, "FlexAttention", attr, 0, &result, out);
  wm_item_deinit(&result);
  return st;
}

// FlexAttention: the kernel in src/ops on host copies of Q, K and V, its
// mods run as nested sessions.
static wm_status_t run_flex(wm_session_t *s, size_t index, sub_inputs_t *in,
                            wm_item_t *results) {
  const wm_node_t *node = &s->graph->nodes[index];
  wm_op_ctx_t ctx;
  WM_RETURN_IF_ERROR(wm_op_ctx_init(&ctx, s->graph, index));
  wm_tensor_t **ins = (wm_tensor_t **)ctx.in;
  bool owned[4] = {false, false, false, false};
  const wm_op_def_t *def = NULL;
  wm_status_t st = ctx.n_in <= 4 ? NULL
                                 : WM_ERROR(INVALID_ARGUMENT,
                                            "node \"%s\" (FlexAttention): %d "
                                            "inputs",
                                            ctx.label, (int)ctx.n_in);
  for (int32_t i = 0; !st && i < ctx.n_in; i++) {
    if (node->inputs[i] >= 0) {
      st = host_tensor(s, node->inputs[i], &ins[i], &owned[i]);
    }
    if (!st && ins[i]) {
      ((wm_type_t *)ctx.in_types)[i] =
          wm_type_tensor(ins[i]->dtype, &ins[i]->shape);
    }
  }
  if (!st) {
    st = wm_op_find_def(&ctx, &def);
  }
  if (!st) {
    st = def->infer(&ctx);
  }
  if (!st) {
    st = wm_op_alloc_outputs(&ctx);
  }
  if (!st) {
    flex_env_t env = {s, &s->nodes[index], node, in};
    st = wm_op_flex_attention_run(&ctx, flex_mod, &env);
  }
  for (int32_t i = 0; i < ctx.n_out; i++) {
    if (!st && i == 0) {
      results[0] = wm_item_tensor_take(ctx.out[0]);
    } else {
      wm_tensor_destroy(ctx.out[i]);
    }
    ctx.out[i] = NULL;
  }
  for (int32_t i = 0; i < ctx.n_in && i < 4; i++) {
    if (owned[i]) {
      wm_tensor_destroy(ins[i]);
    }
  }
  wm_op_ctx_deinit(&ctx);
  return st;
}

// Runs node |index| on the host: control flow with nested sessions, the
// operators of sequences and optionals, and FlexAttention (its mods are
// subgraphs). Tensor outputs are uploaded
// to slot 0, sequences and optionals stay on the host.
static wm_status_t run_host_node(wm_session_t *s, size_t index) {
  const wm_node_t *node = &s->graph->nodes[index];
  rt_node_t *rn = &s->nodes[index];
  const char *op = node->op_type;
  size_t n_out = (size_t)node->output_count;
  wm_item_t *results = wm_calloc(n_out + 1, sizeof(*results));
  if (!results) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  sub_inputs_t in = {0};
  wm_status_t st = open_slot(s, 0);
  if (!st) {
    int64_t opset = wm_graph_opset(s->graph, node->domain ? node->domain : "");
    st = strcmp(op, "If") == 0     ? run_if(s, index, &in, results)
         : strcmp(op, "Loop") == 0 ? run_loop(s, index, &in, results)
         : strcmp(op, "Scan") == 0
             ? (opset < 9 ? run_scan8(s, index, &in, results)
                          : run_scan(s, index, &in, results))
         : strcmp(op, "SequenceMap") == 0
             ? run_sequence_map(s, index, &in, results)
         : strcmp(op, "FlexAttention") == 0 ? run_flex(s, index, &in, results)
         : strncmp(op, "Sequence", 8) == 0 ||
                 strcmp(op, "SplitToSequence") == 0 ||
                 strcmp(op, "ConcatFromSequence") == 0
             ? run_sequence(s, index, results)
             : run_optional(s, index, results);
  }
  sub_deinit(&in);
  for (size_t i = 0; !st && i < n_out; i++) {
    int32_t id = node->outputs[i];
    if (id >= 0) {
      st = store_item(s, id, &results[i]);
    }
  }
  for (size_t i = 0; i < n_out; i++) {
    wm_item_deinit(&results[i]);
  }
  free(results);
  for (int32_t i = 0; i < node->input_count; i++) {
    if (node->inputs[i] >= 0) {
      drop_use(s, node->inputs[i]);
    }
  }
  for (size_t k = 0; k < rn->n_implicit; k++) {
    drop_use(s, rn->implicit[k]);
  }
  for (size_t i = 0; !st && i < n_out; i++) {
    int32_t id = node->outputs[i];
    if (id >= 0 && s->values[id].uses <= 0) {
      release_value(s, &s->values[id]);
    }
  }
  return st;
}

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

// Returns the slot of the first node consuming value |id| (0 if none).
static size_t first_consumer_slot(const wm_session_t *s, int32_t id) {
  for (size_t k = 0; k < s->graph->node_count; k++) {
    const wm_node_t *node = &s->graph->nodes[s->order[k]];
    for (int32_t i = 0; i < node->input_count; i++) {
      if (node->inputs[i] == id) {
        return (size_t)s->nodes[s->order[k]].slot;
      }
    }
  }
  return 0;
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

wm_status_t wm_session_run_items(wm_session_t *s, const char *const *names,
                                 const wm_item_t *inputs, size_t n_inputs,
                                 wm_item_t *out_outputs) {
  wm_graph_t *g = s->graph;
  for (size_t i = 0; i < g->output_count; i++) {
    memset(&out_outputs[i], 0, sizeof(out_outputs[i]));
  }
  for (size_t i = 0; i < g->value_count; i++) {
    s->values[i].uses = s->use_count[i];
  }
  s->stats.boundary_copies = 0;
  s->stats.bytes_copied = 0;
  wm_status_t st = NULL;
  for (size_t i = 0; !st && i < n_inputs; i++) {
    int32_t id = wm_graph_find_value(g, names[i]);
    if (id < 0 || !(g->values[id].is_input || g->values[id].is_outer)) {
      st = WM_ERROR(INVALID_ARGUMENT, "the model has no input named \"%s\"",
                    names[i]);
      break;
    }
    rt_value_t *v = &s->values[id];
    st = check_item(&g->values[id], &inputs[i]);
    if (!st && (v->overridden || v->is_item ||
                (v->home >= 0 && !g->values[id].initializer))) {
      st = WM_ERROR(INVALID_ARGUMENT, "input \"%s\" is given twice", names[i]);
    }
    if (st) {
      break;
    }
    release_value(s, v);  // drops a default initializer's copies
    if (wraps_into_optional(&g->values[id], &inputs[i])) {
      wm_item_t value;
      st = wm_item_clone(&inputs[i], &value);
      if (!st) {
        st = wm_item_optional_take(&value, &v->item);
      }
      v->is_item = !st;
      continue;
    }
    if (inputs[i].kind != WM_TYPE_TENSOR) {
      st = wm_item_clone(&inputs[i], &v->item);
      v->is_item = !st;
      continue;
    }
    size_t slot = first_consumer_slot(s, id);
    st = upload(s, slot, v, inputs[i].tensor);
    v->home = st ? -1 : (int32_t)slot;
    v->overridden = g->values[id].initializer != NULL;
  }
  for (size_t i = 0; !st && i < g->input_count; i++) {
    int32_t id = g->inputs[i];
    if (s->values[id].home < 0 && !s->values[id].is_item &&
        !g->values[id].initializer) {
      st = WM_ERROR(INVALID_ARGUMENT, "input \"%s\" is not given",
                    g->values[id].name);
    }
  }
  for (size_t k = 0; !st && k < g->node_count; k++) {
    size_t index = (size_t)s->order[k];
    uint64_t t0 = s->profiling ? wm_now_ns() : 0;
    st = run_node(s, index);
    if (!st && s->profiling) {
      rt_backend_t *b = &s->slots[s->nodes[index].slot];
      st = slot_error(b, b->api->device->stream_sync(b->stream), "stream_sync");
      s->node_ns[index] += (double)(wm_now_ns() - t0);
    }
  }
  s->profiled_runs += s->profiling && !st;
  for (size_t k = 0; !st && k < s->n_slots; k++) {
    rt_backend_t *b = &s->slots[k];
    if (b->stream) {
      st = slot_error(b, b->api->device->stream_sync(b->stream), "stream_sync");
    }
  }
  for (size_t i = 0; !st && i < g->output_count; i++) {
    int32_t id = g->outputs[i];
    const rt_value_t *v = &s->values[id];
    wm_tensor_t *t = NULL;
    if (v->home >= 0) {
      st = read_copy(s, (size_t)v->home, &v->copy[v->home], &v->desc, &t);
    } else if (v->is_item) {
      st = wm_item_clone(&v->item, &out_outputs[i]);
      continue;
    } else if (g->values[id].initializer) {
      st = wm_tensor_clone(g->values[id].initializer, &t);
    } else {
      st = WM_ERROR(INTERNAL, "output \"%s\" was not computed",
                    g->values[id].name);
    }
    out_outputs[i] = wm_item_tensor_take(t);
  }
  // Free everything but initializers, whatever happened; an initializer a
  // caller replaced is uploaded again when next needed.
  for (size_t i = 0; i < g->value_count; i++) {
    if (!value_is_persistent(s, (int32_t)i)) {
      release_value(s, &s->values[i]);
      s->values[i].overridden = false;
    }
  }
  if (st) {
    for (size_t i = 0; i < g->output_count; i++) {
      wm_item_deinit(&out_outputs[i]);
    }
  }
  return st;
}

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

wm_status_t wm_session_set_profiling(wm_session_t *s, bool on) {
  if (on && !s->node_ns) {
    s->node_ns = wm_calloc(s->graph->node_count + 1, sizeof(double));
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
