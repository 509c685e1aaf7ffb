// wm_map_build: the workload map of a graph, computed without running it.
// Passes, in order: bind --dim values, infer types node by node (a node
// that fails is marked and the rest goes on), inventory per node, coverage
// per node and backend from op_query, roofline cells, the parallel plan
// (plan.c), aggregates per op type and backend, memory liveness, and the
// critical path.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ops/ops.h"
#include "wmap/plan.h"
#include "wmap/session.h"

// ------------------------------------------------------------- names

const char *wm_map_cover_name(wm_map_cover_t cover) {
  static const char *const names[] = {"vendor library", "native kernel",
                                      "generated", "fallback", "missing"};
  return (unsigned)cover < WM_COVER_COUNT ? names[cover] : "unknown";
}

const char *wm_map_cover_key(wm_map_cover_t cover) {
  static const char *const keys[] = {"vendor_library", "native", "generated",
                                     "fallback", "missing"};
  return (unsigned)cover < WM_COVER_COUNT ? keys[cover] : "unknown";
}

const char *wm_map_cover_fill(wm_map_cover_t cover) {
  static const char *const fill[] = {"#cfe2f3", "#d9ead3", "#e6dbf5", "#fce5cd",
                                     "#f4cccc"};
  return (unsigned)cover < WM_COVER_COUNT ? fill[cover]
                                          : fill[WM_COVER_MISSING];
}

const char *wm_map_bound_name(wm_map_bound_t bound) {
  static const char *const names[] = {"unknown", "compute", "memory",
                                      "communication"};
  return (unsigned)bound <= WM_BOUND_COMMUNICATION ? names[bound] : "unknown";
}

const char *wm_map_state_name(wm_map_state_t state) {
  static const char *const names[] = {"ok", "unknown op", "invalid",
                                      "unknown shape"};
  return (unsigned)state <= WM_MAP_NODE_UNKNOWN_SHAPE ? names[state]
                                                      : "unknown";
}

const char *wm_map_coll_name(uint32_t kind) {
  switch (kind) {
    case WM_COLL_ALL_REDUCE:
      return "AllReduce";
    case WM_COLL_ALL_GATHER:
      return "AllGather";
    case WM_COLL_REDUCE_SCATTER:
      return "ReduceScatter";
    case WM_COLL_BROADCAST:
      return "Broadcast";
    case WM_MAP_P2P:
      return "SendRecv";
    default:
      return "unknown";
  }
}

// ------------------------------------------------------------ helpers

typedef struct build {
  wm_map_t *map;
  wm_graph_t *graph;
  const wm_map_options_t *opts;
  wm_status_t *node_status;  // per graph node, from the tolerant check
  int32_t *order;            // topological order
  int32_t *pos_of;           // graph node index -> map position
  bool *param;               // per value: a learnable parameter
  bool *param_seen;          // per value: counted at an earlier node
} build_t;

static void *arena_array(wm_map_t *m, size_t count, size_t elem) {
  size_t bytes;
  if (!wm_checked_mul(count ? count : 1, elem, &bytes)) {
    return NULL;
  }
  return wm_arena_alloc(&m->arena, bytes);
}

static wm_status_t oom(void) {
  return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory building the map");
}

static wm_status_t add_note(wm_map_t *m, const char *fmt, ...) WM_PRINTF(2, 3);
static wm_status_t add_note(wm_map_t *m, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  const char **notes = arena_array(m, m->n_notes + 1, sizeof(char *));
  char *copy = wm_arena_strdup(&m->arena, text);
  if (!notes || !copy) {
    return oom();
  }
  if (m->n_notes) {
    memcpy(notes, m->notes, m->n_notes * sizeof(char *));
  }
  notes[m->n_notes++] = copy;
  m->notes = notes;
  return NULL;
}

// Bytes of a value's tensor as the hardware moves it (4- and 2-bit types
// packed, though memory holds them one per byte); false when its type is
// not fully known.
static bool value_bytes(const wm_graph_t *g, int32_t id, uint64_t *out) {
  const wm_type_t *t = &g->values[id].type;
  size_t n, bits;
  if (t->kind != WM_TYPE_TENSOR || !wm_dtype_is_valid(t->dtype) ||
      !wm_shape_numel(&t->shape, &n) ||
      !wm_checked_mul(n, wm_dtype_bits(t->dtype), &bits)) {
    *out = 0;
    return false;
  }
  *out = (bits + 7) / 8;
  return true;
}

// ------------------------------------------------------------ dims

// Binds the --dim values in every value type of the graph.
static wm_status_t bind_dims(build_t *b) {
  const wm_map_options_t *o = b->opts;
  wm_map_t *m = b->map;
  wm_graph_t *g = b->graph;
  m->dims = arena_array(m, o->n_dims, sizeof(wm_map_dim_t));
  if (!m->dims) {
    return oom();
  }
  for (size_t d = 0; d < o->n_dims; d++) {
    const wm_map_dim_t *dim = &o->dims[d];
    WM_RETURN_IF_ERROR(wm_graph_bind_dim(g, dim->name, dim->value));
    m->dims[m->n_dims].name = wm_arena_strdup(&m->arena, dim->name);
    m->dims[m->n_dims++].value = dim->value;
  }
  return NULL;
}

// ---------------------------------------------------------- inventory

// "f32[1,3,224,224], f32[64]" for the present slots of |ids|.
static const char *types_text(build_t *b, const int32_t *ids, int32_t n) {
  wm_strbuf_t buf;
  wm_strbuf_init(&buf);
  for (int32_t i = 0; i < n; i++) {
    if (ids[i] < 0) {
      continue;
    }
    char t[160];
    wm_type_format(&b->graph->values[ids[i]].type, t, sizeof(t));
    wm_strbuf_printf(&buf, "%s%s", wm_strbuf_str(&buf)[0] ? ", " : "", t);
  }
  const char *s = wm_arena_strdup(&b->map->arena, wm_strbuf_str(&buf));
  wm_strbuf_deinit(&buf);
  return s;
}

// The first symbolic or unknown dim among the node's values, as a note.
static void unknown_shape_note(build_t *b, const wm_node_t *node, char *out,
                               size_t size) {
  const wm_graph_t *g = b->graph;
  for (int pass = 0; pass < 2; pass++) {
    const int32_t *ids = pass ? node->outputs : node->inputs;
    int32_t n = pass ? node->output_count : node->input_count;
    for (int32_t i = 0; i < n; i++) {
      if (ids[i] < 0) {
        continue;
      }
      const wm_value_t *v = &g->values[ids[i]];
      const wm_type_t *t = &v->type;
      if (t->shape.rank < 0) {
        snprintf(out, size, "the rank of %s \"%s\" is not known",
                 pass ? "output" : "input", v->name);
        return;
      }
      for (int32_t d = 0; d < t->shape.rank; d++) {
        if (t->shape.dims[d] >= 0) {
          continue;
        }
        if (t->dim_params[d]) {
          snprintf(out, size,
                   "dim \"%s\" of %s \"%s\" is not bound (use --dim %s=N)",
                   t->dim_params[d], pass ? "output" : "input", v->name,
                   t->dim_params[d]);
        } else {
          snprintf(out, size, "dim %d of %s \"%s\" is not known", (int)d,
                   pass ? "output" : "input", v->name);
        }
        return;
      }
      if (t->kind == WM_TYPE_TENSOR && !wm_dtype_is_valid(t->dtype)) {
        snprintf(out, size, "the element type of %s \"%s\" is not known",
                 pass ? "output" : "input", v->name);
        return;
      }
    }
  }
  snprintf(out, size, "a shape is not known");
}

static bool node_types_known(const wm_graph_t *g, const wm_node_t *node) {
  for (int pass = 0; pass < 2; pass++) {
    const int32_t *ids = pass ? node->outputs : node->inputs;
    int32_t n = pass ? node->output_count : node->input_count;
    for (int32_t i = 0; i < n; i++) {
      if (ids[i] < 0) {
        continue;
      }
      const wm_type_t *t = &g->values[ids[i]].type;
      if (t->kind == WM_TYPE_TENSOR &&
          (!wm_dtype_is_valid(t->dtype) || !wm_shape_is_known(&t->shape))) {
        return false;
      }
    }
  }
  return true;
}

// Gather-like ops and Slice touch only the elements they select.
static bool reads_what_it_indexes(const wm_node_t *node) {
  static const char *const ops[] = {"Gather", "GatherElements", "GatherND",
                                    "Slice"};
  if (!wm_domain_is_onnx(node->domain)) {
    return false;
  }
  for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
    if (strcmp(node->op_type, ops[i]) == 0) {
      return true;
    }
  }
  return false;
}

// Fills the inventory of map node |pos| (graph node |index|).
static wm_status_t inventory_node(build_t *b, size_t pos, size_t index,
                                  const wm_op_ctx_t *ctx,
                                  const wm_op_def_t *def) {
  wm_map_t *m = b->map;
  const wm_graph_t *g = b->graph;
  const wm_node_t *node = &g->nodes[index];
  wm_map_node_t *n = &m->nodes[pos];
  n->index = (int32_t)index;
  n->name = wm_arena_strdup(&m->arena, ctx->label);
  n->op_type = wm_arena_strdup(&m->arena, node->op_type);
  n->domain = wm_arena_strdup(&m->arena, node->domain ? node->domain : "");
  n->inputs = types_text(b, node->inputs, node->input_count);
  n->outputs = types_text(b, node->outputs, node->output_count);
  if (!n->name || !n->op_type || !n->domain || !n->inputs || !n->outputs) {
    return oom();
  }
  char note[400] = "";
  wm_status_t s = b->node_status[index];
  if (s) {
    n->state = def ? WM_MAP_NODE_INVALID : WM_MAP_NODE_UNKNOWN_OP;
    // Without the `node "x" (Op): ` prefix: the note sits by the node.
    const char *msg = wm_status_message(s);
    char prefix[300];
    snprintf(prefix, sizeof(prefix), "node \"%s\" (%s): ", ctx->label,
             node->op_type);
    if (strncmp(msg, prefix, strlen(prefix)) == 0) {
      msg += strlen(prefix);
    }
    snprintf(note, sizeof(note), "%s", msg);
  } else if (!node_types_known(g, node)) {
    n->state = WM_MAP_NODE_UNKNOWN_SHAPE;
    unknown_shape_note(b, node, note, sizeof(note));
  }
  n->note = wm_arena_strdup(&m->arena, note);
  if (!n->note) {
    return oom();
  }
  // Bytes: each present input and output once; an op that reads only
  // what it indexes (an embedding Gather, a Slice) reads at most its
  // output's size of input 0.
  uint64_t out_total = 0;
  for (int32_t i = 0; i < node->output_count; i++) {
    uint64_t bytes;
    if (node->outputs[i] >= 0 && value_bytes(g, node->outputs[i], &bytes)) {
      out_total += bytes;
    }
  }
  bool indexed = reads_what_it_indexes(node);
  for (int32_t i = 0; i < node->input_count; i++) {
    int32_t id = node->inputs[i];
    uint64_t bytes;
    if (id < 0) {
      continue;
    }
    value_bytes(g, id, &bytes);
    if (i == 0 && indexed && bytes > out_total) {
      bytes = out_total;
    }
    const wm_tensor_t *w = wm_graph_const_value(g, id);
    if (w) {
      n->weight_bytes += bytes;
      if (b->param[id] && !b->param_seen[id]) {
        b->param_seen[id] = true;
        n->params += (int64_t)w->count;
      }
    } else {
      n->act_in_bytes += bytes;
    }
  }
  n->out_bytes = out_total;
  if (n->state == WM_MAP_NODE_OK) {
    wm_op_cost_t cost;
    wm_op_cost(def, ctx, &cost);
    n->macs = cost.macs;
    n->flops = cost.flops;
    n->transcendentals = cost.transcendentals;
  }
  double bytes =
      (double)n->act_in_bytes + (double)n->weight_bytes + (double)n->out_bytes;
  n->intensity = bytes > 0 ? n->flops / bytes : 0.0;
  return NULL;
}

// Producers of |index|'s inputs among the map's nodes, deduplicated.
static wm_status_t link_preds(build_t *b, size_t pos) {
  wm_map_t *m = b->map;
  const wm_graph_t *g = b->graph;
  const wm_node_t *node = &g->nodes[m->nodes[pos].index];
  size_t *preds = arena_array(m, (size_t)node->input_count, sizeof(size_t));
  if (!preds) {
    return oom();
  }
  size_t n = 0;
  for (int32_t i = 0; i < node->input_count; i++) {
    int32_t id = node->inputs[i];
    if (id < 0 || g->values[id].producer < 0) {
      continue;
    }
    size_t p = (size_t)b->pos_of[g->values[id].producer];
    bool dup = false;
    for (size_t k = 0; k < n; k++) {
      dup |= preds[k] == p;
    }
    if (!dup) {
      preds[n++] = p;
    }
  }
  m->nodes[pos].preds = preds;
  m->nodes[pos].n_preds = n;
  return NULL;
}

// ----------------------------------------------------------- coverage

static wm_map_cover_t cover_of_impl(uint32_t impl) {
  switch (impl) {
    case WM_IMPL_VENDOR_LIBRARY:
      return WM_COVER_VENDOR_LIBRARY;
    case WM_IMPL_GENERATED:
      return WM_COVER_GENERATED;
    default:
      return WM_COVER_NATIVE;
  }
}

// Asks every backend (and the fallback) about map node |pos|.
static wm_status_t cover_node(build_t *b, size_t pos, const wm_op_ctx_t *ctx) {
  wm_map_t *m = b->map;
  const wm_map_options_t *o = b->opts;
  wm_map_node_t *n = &m->nodes[pos];
  n->cells = arena_array(m, m->n_backends, sizeof(wm_map_cell_t));
  if (!n->cells) {
    return oom();
  }
  const wm_op_def_t *def = NULL;
  wm_status_free(wm_op_find_def(ctx, &def));
  if (n->state == WM_MAP_NODE_OK && wm_op_runs_in_session(def)) {
    // Control flow and sequences run in the session on every backend
    // (control flow through nested sessions; their nodes are not listed).
    for (size_t k = 0; k < m->n_backends; k++) {
      n->cells[k].cover = WM_COVER_NATIVE;
      n->cells[k].level = WM_SUPPORT_SUPPORTED;
      n->cells[k].detail =
          "the session runs it (control flow, sequences, optionals, subgraph "
          "mods)";
    }
    return NULL;
  }
  if (n->state == WM_MAP_NODE_UNKNOWN_SHAPE ||
      n->state == WM_MAP_NODE_INVALID) {
    // Backends are asked about concrete instances only.
    for (size_t k = 0; k < m->n_backends; k++) {
      n->cells[k].cover = WM_COVER_MISSING;
      n->cells[k].reason =
          n->state == WM_MAP_NODE_INVALID ? WM_WHY_OTHER : WM_WHY_SHAPE;
      n->cells[k].detail = n->note;
    }
    return NULL;
  }
  wm_op_support fb = {0};
  bool fb_asked = false;
  wm_status_t s = NULL;
  for (size_t k = 0; !s && k < m->n_backends; k++) {
    wm_map_cell_t *c = &n->cells[k];
    wm_op_support a;
    s = wm_node_query(b->graph, n->index, NULL, NULL, o->backends[k], &a);
    if (s) {
      break;
    }
    c->level = a.level;
    c->impl = a.impl;
    c->reason = a.level > WM_SUPPORT_NONE ? WM_WHY_NONE : a.reason;
    c->detail = wm_arena_strdup(&m->arena, a.detail ? a.detail : "");
    if (!c->detail) {
      s = oom();
      break;
    }
    if (a.level > WM_SUPPORT_NONE) {
      c->cover = cover_of_impl(a.impl);
      continue;
    }
    c->cover = WM_COVER_MISSING;
    if (o->fallback && o->fallback != o->backends[k]) {
      if (!fb_asked) {
        s = wm_node_query(b->graph, n->index, NULL, NULL, o->fallback, &fb);
        fb_asked = true;
      }
      if (!s && fb.level > WM_SUPPORT_NONE) {
        c->cover = WM_COVER_FALLBACK;
      }
    }
  }
  return s;
}

// ---------------------------------------------------------- roofline

static void backend_peaks(build_t *b, size_t k) {
  wm_map_backend_t *mb = &b->map->backends[k];
  const wm_target_desc *t = wm_backend_target(b->opts->backends[k], 0);
  const wm_peaks_t *p = b->opts->peaks;
  int32_t threads = b->opts->threads;
  double peak = p ? wm_peaks_fp32_gflops_at(p, mb->name, threads) : 0.0;
  double bw = p ? wm_peaks_bandwidth_gbs_at(p, mb->name, threads) : 0.0;
  mb->peak_threads = threads;
  mb->peak_source = peak > 0 && bw > 0 ? "measured" : "unknown";
  if (t && (peak <= 0 || bw <= 0)) {
    if (peak <= 0 && t->peak_gflops_fp32 > 0) {
      peak = t->peak_gflops_fp32;
      mb->peak_source = "declared";
    }
    if (bw <= 0 && t->mem_bandwidth_gbs > 0) {
      bw = t->mem_bandwidth_gbs;
      mb->peak_source = "declared";
    }
  }
  mb->peak_gflops = peak;
  mb->bandwidth_gbs = bw;
  mb->ridge = peak > 0 && bw > 0 ? peak / bw : 0.0;
}

// t_comp and t_mem of every cell (t_roof their max for the plan pass).
static void roofline_cells(wm_map_t *m) {
  for (size_t i = 0; i < m->n_nodes; i++) {
    wm_map_node_t *n = &m->nodes[i];
    double bytes = (double)n->act_in_bytes + (double)n->weight_bytes +
                   (double)n->out_bytes;
    for (size_t k = 0; k < m->n_backends; k++) {
      const wm_map_backend_t *mb = &m->backends[k];
      wm_map_cell_t *c = &n->cells[k];
      if (n->state != WM_MAP_NODE_OK) {
        continue;
      }
      if (mb->peak_gflops > 0) {
        c->t_comp = (n->flops + n->transcendentals) / (mb->peak_gflops * 1e9);
      }
      if (mb->bandwidth_gbs > 0) {
        c->t_mem = bytes / (mb->bandwidth_gbs * 1e9);
      }
      c->t_roof = fmax(c->t_comp, c->t_mem);
    }
  }
}

static void classify_cells(wm_map_t *m) {
  for (size_t i = 0; i < m->n_nodes; i++) {
    wm_map_node_t *n = &m->nodes[i];
    for (size_t k = 0; k < m->n_backends; k++) {
      const wm_map_backend_t *mb = &m->backends[k];
      wm_map_cell_t *c = &n->cells[k];
      c->t_roof = fmax(fmax(c->t_comp, c->t_mem), c->t_comm);
      if (n->state != WM_MAP_NODE_OK || mb->peak_gflops <= 0 ||
          mb->bandwidth_gbs <= 0 || c->t_roof <= 0) {
        c->bound = WM_BOUND_UNKNOWN;
      } else if (c->t_comm >= c->t_comp && c->t_comm >= c->t_mem) {
        c->bound = WM_BOUND_COMMUNICATION;
      } else if (c->t_comp >= c->t_mem) {
        c->bound = WM_BOUND_COMPUTE;
      } else {
        c->bound = WM_BOUND_MEMORY;
      }
    }
  }
}

// --------------------------------------------------------- aggregates

static int compare_types(const void *pa, const void *pb) {
  const wm_map_optype_t *a = pa, *b = pb;
  if (a->flops != b->flops) {
    return a->flops > b->flops ? -1 : 1;
  }
  if (a->count != b->count) {
    return a->count > b->count ? -1 : 1;
  }
  return strcmp(a->op_type, b->op_type);
}

static wm_status_t aggregate_types(wm_map_t *m) {
  wm_map_optype_t *types = arena_array(m, m->n_nodes, sizeof(*types));
  if (!types) {
    return oom();
  }
  size_t n_types = 0;
  wm_strmap_t index;
  wm_strmap_init(&index);
  wm_status_t s = NULL;
  for (size_t i = 0; !s && i < m->n_nodes; i++) {
    const wm_map_node_t *n = &m->nodes[i];
    char key[256];
    snprintf(key, sizeof(key), "%s:%s", n->domain, n->op_type);
    int64_t t;
    if (!wm_strmap_get(&index, key, &t)) {
      t = (int64_t)n_types++;
      char *k = wm_arena_strdup(&m->arena, key);
      types[t].op_type = n->op_type;
      types[t].domain = n->domain;
      types[t].cells =
          arena_array(m, m->n_backends, sizeof(wm_map_type_cell_t));
      if (!k || !types[t].cells) {
        s = oom();
        break;
      }
      s = wm_strmap_put(&index, k, t);
      if (s) {
        break;
      }
    }
    wm_map_optype_t *ty = &types[t];
    ty->count++;
    ty->macs += n->macs;
    ty->flops += n->flops;
    ty->transcendentals += n->transcendentals;
    ty->act_in_bytes += n->act_in_bytes;
    ty->weight_bytes += n->weight_bytes;
    ty->out_bytes += n->out_bytes;
    ty->params += n->params;
    for (size_t k = 0; k < m->n_backends; k++) {
      ty->cells[k].count[n->cells[k].cover]++;
      ty->cells[k].t_roof += n->cells[k].t_roof;
    }
  }
  wm_strmap_deinit(&index);
  if (!s) {
    qsort(types, n_types, sizeof(*types), compare_types);
    m->types = types;
    m->n_types = n_types;
  }
  return s;
}

static bool covered(wm_map_cover_t c) {
  return c == WM_COVER_VENDOR_LIBRARY || c == WM_COVER_NATIVE ||
         c == WM_COVER_GENERATED;
}

static int compare_todo(const void *pa, const void *pb) {
  const wm_map_todo_t *a = pa, *b = pb;
  if (a->flops != b->flops) {
    return a->flops > b->flops ? -1 : 1;
  }
  if (a->nodes != b->nodes) {
    return a->nodes > b->nodes ? -1 : 1;
  }
  return strcmp(a->op_type, b->op_type);
}

// Coverage summary of backend |k|: counts, partitions, boundary copies,
// suitability and the operators still to write.
static wm_status_t summarize_backend(build_t *b, size_t k) {
  wm_map_t *m = b->map;
  const wm_graph_t *g = b->graph;
  wm_map_backend_t *mb = &m->backends[k];
  size_t runs_on = 0;
  int last = -1;
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_map_node_t *n = &m->nodes[i];
    const wm_map_cell_t *c = &n->cells[k];
    int side = covered(c->cover);
    mb->count[c->cover]++;
    mb->t_roof += c->t_roof;
    if (side) {
      mb->nodes_covered++;
      mb->flops_covered += n->flops;
      mb->t_roof_covered += c->t_roof;
    }
    if (side != last) {
      mb->partitions++;
      runs_on += side;
      last = side;
    }
  }
  // A tensor produced on one side and read on the other is copied once.
  bool *crosses = wm_calloc(g->value_count + 1, sizeof(bool));
  if (!crosses) {
    return oom();
  }
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_node_t *node = &g->nodes[m->nodes[i].index];
    bool side = covered(m->nodes[i].cells[k].cover);
    for (int32_t j = 0; j < node->input_count; j++) {
      int32_t v = node->inputs[j];
      int32_t prod = v >= 0 ? g->values[v].producer : -1;
      if (prod >= 0 && !crosses[v] &&
          covered(m->nodes[b->pos_of[prod]].cells[k].cover) != side) {
        uint64_t bytes;
        value_bytes(g, v, &bytes);
        crosses[v] = true;
        mb->boundary_copies++;
        mb->boundary_bytes += bytes;
      }
    }
  }
  free(crosses);
  double share =
      m->n_nodes ? (double)mb->nodes_covered / (double)m->n_nodes : 1.0;
  if (runs_on <= 1 && share > 0.75) {
    mb->suitability = "good";
  } else if ((runs_on <= 1 && share > 0.5) || (runs_on == 2 && share > 0.75)) {
    mb->suitability = "maybe";
  } else {
    mb->suitability = "poor";
  }
  // Operators to write: per type, the nodes this backend refuses.
  wm_map_todo_t *todo = arena_array(m, m->n_types, sizeof(*todo));
  if (!todo) {
    return oom();
  }
  size_t n_todo = 0;
  for (size_t t = 0; t < m->n_types; t++) {
    const wm_map_optype_t *ty = &m->types[t];
    wm_map_todo_t *td = &todo[n_todo];
    for (size_t i = 0; i < m->n_nodes; i++) {
      const wm_map_node_t *n = &m->nodes[i];
      const wm_map_cell_t *c = &n->cells[k];
      if (covered(c->cover) || strcmp(n->op_type, ty->op_type) != 0 ||
          strcmp(n->domain, ty->domain) != 0) {
        continue;
      }
      if (td->nodes++ == 0) {
        td->op_type = ty->op_type;
        td->domain = ty->domain;
        td->reason = c->reason;
        td->detail = c->detail;
      }
      td->flops += n->flops;
    }
    n_todo += td->nodes > 0;
  }
  qsort(todo, n_todo, sizeof(*todo), compare_todo);
  mb->todo = todo;
  mb->n_todo = n_todo;
  return NULL;
}

static wm_status_t describe_backends(build_t *b) {
  wm_map_t *m = b->map;
  const wm_map_options_t *o = b->opts;
  m->n_backends = o->backend_count;
  m->backends = arena_array(m, m->n_backends, sizeof(wm_map_backend_t));
  if (!m->backends) {
    return oom();
  }
  for (size_t k = 0; k < m->n_backends; k++) {
    wm_backend_t *be = o->backends[k];
    wm_map_backend_t *mb = &m->backends[k];
    const wm_target_desc *t = wm_backend_target(be, 0);
    const wm_plugin_api *api = wm_backend_api(be);
    mb->name = wm_arena_strdup(&m->arena, wm_backend_name(be));
    mb->version = wm_arena_strdup(&m->arena, wm_backend_version(be));
    mb->target = wm_arena_strdup(&m->arena, t && t->name ? t->name : "none");
    if (!mb->name || !mb->version || !mb->target) {
      return oom();
    }
    mb->fallback = o->fallback == be;
    backend_peaks(b, k);
    mb->has_collectives = api->collective != NULL;
    for (uint32_t kind = WM_COLL_ALL_REDUCE;
         t && mb->has_collectives && api->collective->coll_query &&
         kind <= WM_COLL_BROADCAST;
         kind++) {
      uint32_t level = 0;
      wm_error *e = api->collective->coll_query(t, kind, WM_DTYPE_FLOAT,
                                                WM_REDOP_SUM, &level);
      if (e) {
        wm_status_free(wm_backend_error(be, e, "coll_query"));
        level = 0;
      }
      mb->coll_level[kind] = level;
    }
    if (mb->peak_gflops <= 0 || mb->bandwidth_gbs <= 0) {
      WM_RETURN_IF_ERROR(add_note(
          m,
          "backend \"%s\": no %s known (neither measured nor declared): its "
          "roofline times are unknown",
          mb->name,
          mb->peak_gflops <= 0 && mb->bandwidth_gbs <= 0 ? "peaks"
          : mb->peak_gflops <= 0                         ? "FLOP/s peak"
                                                         : "bandwidth"));
    }
  }
  return NULL;
}

// ------------------------------------------------------------- memory

static int compare_live(const void *pa, const void *pb) {
  const wm_map_live_t *a = pa, *b = pb;
  if (a->bytes != b->bytes) {
    return a->bytes > b->bytes ? -1 : 1;
  }
  return strcmp(a->name, b->name);
}

// Liveness over the execution order: a graph input lives from the start,
// an intermediate from its producer; each until its last reader (graph
// outputs until the end). The peak is taken while a node runs: its inputs
// and outputs are live together.
static wm_status_t memory_pass(build_t *b) {
  wm_map_t *m = b->map;
  const wm_graph_t *g = b->graph;
  size_t nv = g->value_count, nn = m->n_nodes;
  int64_t *birth = wm_calloc(nv + 1, sizeof(int64_t));
  int64_t *death = wm_calloc(nv + 1, sizeof(int64_t));
  uint64_t *bytes = wm_calloc(nv + 1, sizeof(uint64_t));
  int64_t *delta_in = wm_calloc(nn + 2, sizeof(int64_t));
  if (!birth || !death || !bytes || !delta_in) {
    free(birth);
    free(death);
    free(bytes);
    free(delta_in);
    return oom();
  }
  size_t unknown = 0;
  for (size_t v = 0; v < nv; v++) {
    const wm_value_t *val = &g->values[v];
    birth[v] = -1;
    death[v] = -2;
    const wm_tensor_t *w = wm_graph_const_value(g, (int32_t)v);
    if (w) {
      // Constant nodes' tensors are weights too, not activations.
      m->memory.weight_bytes += w->nbytes;
      continue;
    }
    if (val->producer >= 0) {
      birth[v] = b->pos_of[val->producer];
      death[v] = birth[v];
    }
  }
  for (size_t i = 0; i < g->input_count; i++) {
    int32_t v = g->inputs[i];
    if (!g->values[v].initializer) {
      birth[v] = 0;
      death[v] = 0;
    }
  }
  for (size_t i = 0; i < nn; i++) {
    const wm_node_t *node = &g->nodes[m->nodes[i].index];
    for (int32_t j = 0; j < node->input_count; j++) {
      int32_t v = node->inputs[j];
      if (v >= 0 && birth[v] >= 0 && death[v] < (int64_t)i) {
        death[v] = (int64_t)i;
      }
    }
  }
  for (size_t i = 0; i < g->output_count; i++) {
    int32_t v = g->outputs[i];
    if (birth[v] >= 0) {
      death[v] = (int64_t)(nn ? nn - 1 : 0);
    }
  }
  for (size_t v = 0; v < nv; v++) {
    if (birth[v] < 0) {
      continue;
    }
    if (!value_bytes(g, (int32_t)v, &bytes[v])) {
      unknown++;
    }
    delta_in[birth[v]] += (int64_t)bytes[v];
    delta_in[death[v] + 1] -= (int64_t)bytes[v];
  }
  int64_t live = 0, peak = 0;
  size_t peak_at = 0;
  for (size_t i = 0; i < nn; i++) {
    live += delta_in[i];
    if (live > peak) {
      peak = live;
      peak_at = i;
    }
  }
  m->memory.peak_activation_bytes = (uint64_t)peak;
  m->memory.peak_node = peak_at;
  size_t n_live = 0;
  for (size_t v = 0; v < nv; v++) {
    n_live += birth[v] >= 0 && birth[v] <= (int64_t)peak_at &&
              death[v] >= (int64_t)peak_at && bytes[v] > 0;
  }
  m->memory.live = arena_array(m, n_live, sizeof(wm_map_live_t));
  wm_status_t s = m->memory.live ? NULL : oom();
  for (size_t v = 0; !s && v < nv; v++) {
    if (birth[v] >= 0 && birth[v] <= (int64_t)peak_at &&
        death[v] >= (int64_t)peak_at && bytes[v] > 0) {
      wm_map_live_t *l = &m->memory.live[m->memory.n_live++];
      l->name = wm_arena_strdup(&m->arena, g->values[v].name);
      l->bytes = bytes[v];
      s = l->name ? NULL : oom();
    }
  }
  if (!s) {
    qsort(m->memory.live, m->memory.n_live, sizeof(wm_map_live_t),
          compare_live);
  }
  if (!s && unknown) {
    s = add_note(m,
                 "%zu activation tensor%s of unknown size %s not counted in "
                 "the memory peak",
                 unknown, unknown == 1 ? "" : "s", unknown == 1 ? "is" : "are");
  }
  free(birth);
  free(death);
  free(bytes);
  free(delta_in);
  return s;
}

// ------------------------------------------------------ critical path

// Longest path on the t_roof of backend map->critical.backend; each node's
// earliest start and slack (latest start - earliest start).
static wm_status_t critical_pass(wm_map_t *m, const wm_map_options_t *o) {
  size_t nn = m->n_nodes, cb = m->critical.backend;
  char weights[300];
  snprintf(weights, sizeof(weights), "measured: %s",
           o->times_source ? o->times_source : "given times");
  m->critical.weights =
      wm_arena_strdup(&m->arena, o->node_seconds ? weights : "t_roof");
  if (!m->critical.weights) {
    return oom();
  }
  for (size_t i = 0; i < nn; i++) {
    wm_map_node_t *n = &m->nodes[i];
    n->weight =
        o->node_seconds ? o->node_seconds[n->index] : n->cells[cb].t_roof;
  }
  double *finish = wm_calloc(nn + 1, sizeof(double));
  double *latest = wm_calloc(nn + 1, sizeof(double));
  if (!finish || !latest) {
    free(finish);
    free(latest);
    return oom();
  }
  double length = 0.0;
  for (size_t i = 0; i < nn; i++) {
    wm_map_node_t *n = &m->nodes[i];
    double start = 0.0;
    for (size_t p = 0; p < n->n_preds; p++) {
      start = fmax(start, finish[n->preds[p]]);
    }
    n->start = start;
    finish[i] = start + n->weight;
    length = fmax(length, finish[i]);
    m->critical.total += n->weight;
  }
  // Latest finish: a node must end before its readers' latest start.
  for (size_t i = 0; i < nn; i++) {
    latest[i] = length;
  }
  for (size_t i = nn; i-- > 0;) {
    wm_map_node_t *n = &m->nodes[i];
    double latest_start = latest[i] - n->weight;
    n->slack = latest_start - n->start;
    for (size_t p = 0; p < n->n_preds; p++) {
      latest[n->preds[p]] = fmin(latest[n->preds[p]], latest_start);
    }
  }
  m->critical.length = length;
  double eps = 1e-9 * (length > 0 ? length : 1.0);
  for (size_t i = 0; i < nn; i++) {
    if (m->nodes[i].slack < eps) {
      m->nodes[i].slack = 0.0;  // rounding of the sums
    }
  }
  // Walk back from the node that finishes last.
  size_t at = 0;
  bool found = false;
  for (size_t i = 0; i < nn; i++) {
    if (!found || finish[i] > finish[at] + eps) {
      at = i;
      found = true;
    }
  }
  size_t *path = arena_array(m, nn, sizeof(size_t));
  wm_status_t s = path ? NULL : oom();
  size_t count = 0;
  while (!s && found) {
    path[count++] = at;
    m->nodes[at].critical = true;
    const wm_map_node_t *n = &m->nodes[at];
    found = false;
    for (size_t p = 0; p < n->n_preds; p++) {
      if (fabs(finish[n->preds[p]] - n->start) <= eps &&
          (!found || n->preds[p] > at)) {
        at = n->preds[p];
        found = true;
        break;
      }
    }
  }
  for (size_t i = 0; !s && i < count / 2; i++) {
    size_t t = path[i];
    path[i] = path[count - 1 - i];
    path[count - 1 - i] = t;
  }
  m->critical.nodes = path;
  m->critical.n_nodes = count;
  free(finish);
  free(latest);
  return s;
}

// -------------------------------------------------------------- build

static wm_status_t nodes_pass(build_t *b) {
  wm_map_t *m = b->map;
  wm_status_t s = NULL;
  for (size_t pos = 0; !s && pos < m->n_nodes; pos++) {
    size_t index = (size_t)b->order[pos];
    wm_op_ctx_t ctx;
    s = wm_op_ctx_init(&ctx, b->graph, index);
    if (s) {
      break;
    }
    const wm_node_t *node = &b->graph->nodes[index];
    for (int32_t i = 0; i < ctx.n_out; i++) {
      if (node->outputs[i] >= 0) {
        ctx.out_types[i] = b->graph->values[node->outputs[i]].type;
      }
    }
    const wm_op_def_t *def = NULL;
    wm_status_free(wm_op_find_def(&ctx, &def));
    s = inventory_node(b, pos, index, &ctx, def);
    if (!s) {
      s = link_preds(b, pos);
    }
    if (!s) {
      s = cover_node(b, pos, &ctx);
    }
    wm_op_ctx_deinit(&ctx);
  }
  return s;
}

static wm_status_t totals_pass(build_t *b) {
  wm_map_t *m = b->map;
  wm_map_totals_t *t = &m->totals;
  t->nodes = m->n_nodes;
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_map_node_t *n = &m->nodes[i];
    t->unmapped += n->state != WM_MAP_NODE_OK;
    t->params += n->params;
    t->macs += n->macs;
    t->flops += n->flops;
    t->transcendentals += n->transcendentals;
    t->act_in_bytes += n->act_in_bytes;
    t->out_bytes += n->out_bytes;
  }
  if (t->unmapped) {
    wm_strbuf_t list;
    wm_strbuf_init(&list);
    size_t shown = 0;
    for (size_t i = 0; i < m->n_nodes && shown < 3; i++) {
      const wm_map_node_t *n = &m->nodes[i];
      if (n->state != WM_MAP_NODE_OK) {
        wm_strbuf_printf(&list, "%s\"%s\" (%s): %s", shown++ ? "; " : "",
                         n->name, n->op_type, n->note);
      }
    }
    wm_status_t s = add_note(
        m,
        "%zu of %zu nodes could not be mapped; their work is not counted: "
        "%s%s",
        t->unmapped, t->nodes, wm_strbuf_str(&list),
        t->unmapped > shown ? "; ..." : "");
    wm_strbuf_deinit(&list);
    WM_RETURN_IF_ERROR(s);
  }
  return NULL;
}

static wm_status_t build_map(build_t *b) {
  wm_map_t *m = b->map;
  wm_graph_t *g = b->graph;
  const wm_map_options_t *o = b->opts;
  m->model = wm_arena_strdup(&m->arena, o->model ? o->model : "model");
  m->graph_name = wm_arena_strdup(&m->arena, g->name ? g->name : "");
  if (!m->model || !m->graph_name) {
    return oom();
  }
  for (size_t i = 0; i < g->opset_count; i++) {
    if (wm_domain_is_onnx(g->opsets[i].domain)) {
      m->opset = g->opsets[i].version;
    }
  }
  if (o->peaks) {
    m->have_machine = true;
    m->machine = o->peaks->machine;
  }
  WM_RETURN_IF_ERROR(bind_dims(b));
  WM_RETURN_IF_ERROR(wm_graph_verify(g));
  b->node_status = wm_calloc(g->node_count + 1, sizeof(wm_status_t));
  b->pos_of = wm_calloc(g->node_count + 1, sizeof(int32_t));
  b->param_seen = wm_calloc(g->value_count + 1, sizeof(bool));
  if (!b->node_status || !b->pos_of || !b->param_seen) {
    return oom();
  }
  WM_RETURN_IF_ERROR(wm_graph_param_mask(g, &b->param));
  WM_RETURN_IF_ERROR(wm_ops_check_graph_each(g, b->node_status));
  WM_RETURN_IF_ERROR(wm_graph_topo_order(g, &b->order));
  m->n_nodes = g->node_count;
  m->nodes = arena_array(m, m->n_nodes, sizeof(wm_map_node_t));
  if (!m->nodes) {
    return oom();
  }
  for (size_t pos = 0; pos < m->n_nodes; pos++) {
    b->pos_of[b->order[pos]] = (int32_t)pos;
  }
  WM_RETURN_IF_ERROR(describe_backends(b));
  WM_RETURN_IF_ERROR(nodes_pass(b));
  WM_RETURN_IF_ERROR(totals_pass(b));
  roofline_cells(m);
  m->critical.backend = o->critical_backend;
  if (o->parallel) {
    m->plan.enabled = true;
    m->plan.spec = *o->parallel;
    WM_RETURN_IF_ERROR(wm_map_plan_build(m, g));
  }
  classify_cells(m);
  WM_RETURN_IF_ERROR(aggregate_types(m));
  for (size_t k = 0; k < m->n_backends; k++) {
    WM_RETURN_IF_ERROR(summarize_backend(b, k));
  }
  WM_RETURN_IF_ERROR(memory_pass(b));
  m->totals.weight_bytes = m->memory.weight_bytes;
  m->totals.peak_activation_bytes = m->memory.peak_activation_bytes;
  WM_RETURN_IF_ERROR(critical_pass(m, o));
  return wm_map_measured_pass(m, o);
}

wm_status_t wm_map_build(wm_graph_t *graph, const wm_map_options_t *opts,
                         wm_map_t **out_map) {
  *out_map = NULL;
  if (opts->backend_count == 0) {
    return WM_ERROR(INVALID_ARGUMENT, "the map needs at least one backend");
  }
  if (opts->critical_backend >= opts->backend_count) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "critical-path backend %zu is not among the %zu backends",
                    opts->critical_backend, opts->backend_count);
  }
  for (size_t k = 0; k < opts->backend_count; k++) {
    if (!wm_backend_target(opts->backends[k], 0)) {
      return WM_ERROR(UNAVAILABLE, "backend \"%s\" describes no target",
                      wm_backend_name(opts->backends[k]));
    }
  }
  wm_map_t *m = wm_calloc(1, sizeof(*m));
  if (!m) {
    return oom();
  }
  wm_arena_init(&m->arena);
  build_t b = {.map = m, .graph = graph, .opts = opts};
  wm_status_t s = build_map(&b);
  if (b.node_status) {
    for (size_t i = 0; i < graph->node_count; i++) {
      wm_status_free(b.node_status[i]);
    }
  }
  free(b.node_status);
  free(b.order);
  free(b.pos_of);
  free(b.param);
  free(b.param_seen);
  if (s) {
    wm_map_destroy(m);
    return s;
  }
  *out_map = m;
  return NULL;
}

void wm_map_destroy(wm_map_t *map) {
  if (!map) {
    return;
  }
  wm_arena_deinit(&map->arena);
  free(map);
}
