// Placement: the rule that puts a node on a backend (shared with the
// workload map through include/wmap/plan.h), the query of one node
// instance, and the placement report of a session's current plan.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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

int32_t wm_place_choose(const wm_op_support *answers, size_t n) {
  int32_t chosen = -1;
  uint32_t best = WM_SUPPORT_NONE;
  for (size_t k = 0; k < n; k++) {
    if (answers[k].level > best) {
      best = answers[k].level;
      chosen = (int32_t)k;
    }
  }
  return chosen;
}

// What a description's reader sees: the ABI view of the node, and the
// context it came from.
typedef wm_status_t (*describe_fn)(void *env, const wm_op_desc *op,
                                   const wm_op_ctx_t *ctx);

// wm_node_describe, handing |fn| the context too.
static wm_status_t describe(const wm_graph_t *graph, size_t index,
                            const wm_type_t *types,
                            const wm_tensor_t *const *values, describe_fn fn,
                            void *env) {
  const wm_node_t *node = &graph->nodes[index];
  wm_op_ctx_t ctx;
  WM_RETURN_IF_ERROR(wm_op_ctx_init_with(&ctx, graph, index, types, values));
  const wm_tensor_t **ins = (const wm_tensor_t **)ctx.in;
  for (int32_t i = 0; !values && i < ctx.n_in; i++) {
    if (!ins[i] && node->inputs[i] >= 0) {  // a Constant node's tensor
      ins[i] = wm_graph_const_value(graph, node->inputs[i]);
    }
  }
  for (int32_t i = 0; i < ctx.n_out; i++) {
    int32_t id = node->outputs[i];
    if (id >= 0) {
      ctx.out_types[i] = types ? types[id] : graph->values[id].type;
    }
  }
  wm_node_attrs_t attrs;
  wm_status_t st = wm_node_attrs_init(&attrs, node);
  size_t n = (size_t)(ctx.n_in + ctx.n_out) + 1;
  wm_tensor_desc *descs = st ? NULL : wm_calloc(n, sizeof(*descs));
  const void **vals = st ? NULL : wm_calloc(n, sizeof(void *));
  if (!st && (!descs || !vals)) {
    st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_op_desc op;
  if (!st) {
    st = wm_node_op_desc(node, NULL, &ctx, &attrs, descs, vals, &op);
  }
  if (!st) {
    st = fn(env, &op, &ctx);
  }
  free(descs);
  free(vals);
  wm_node_attrs_deinit(&attrs);
  wm_op_ctx_deinit(&ctx);
  return st;
}

typedef struct public_env {
  wm_node_desc_fn fn;
  void *env;
} public_env_t;

static wm_status_t public_desc(void *env, const wm_op_desc *op,
                               const wm_op_ctx_t *ctx) {
  (void)ctx;
  const public_env_t *e = env;
  return e->fn(e->env, op);
}

wm_status_t wm_node_describe(const wm_graph_t *graph, size_t index,
                             const wm_type_t *types,
                             const wm_tensor_t *const *values,
                             wm_node_desc_fn fn, void *env) {
  public_env_t e = {fn, env};
  return describe(graph, index, types, values, public_desc, &e);
}

typedef struct query_env {
  const wm_backend_t *backend;
  wm_op_support *out;
} query_env_t;

// The library tier's answer, or a generated kernel's where the rule gives
// one (the session's default, WM_KERNELS_AUTO).
static wm_status_t query_desc(void *env, const wm_op_desc *op,
                              const wm_op_ctx_t *ctx) {
  const query_env_t *q = env;
  WM_RETURN_IF_ERROR(wm_backend_op_query(q->backend, op, q->out));
  if (q->out->level != WM_SUPPORT_NONE || !wm_op_ctx_is_concrete(ctx)) {
    return NULL;
  }
  const wm_op_def_t *def = NULL;
  wm_status_free(wm_op_find_def(ctx, &def));
  wm_gen_program_t *gen = NULL;
  WM_RETURN_IF_ERROR(rt_gen_define(def, ctx, &gen));
  rt_gen_answer(q->backend, WM_KERNELS_AUTO, gen, q->out);
  rt_gen_free(gen);
  return NULL;
}

wm_status_t wm_node_query(const wm_graph_t *graph, size_t index,
                          const wm_type_t *types,
                          const wm_tensor_t *const *values,
                          const wm_backend_t *backend, wm_op_support *out) {
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  query_env_t q = {backend, out};
  return describe(graph, index, types, values, query_desc, &q);
}

// ------------------------------------------------------------- report

// The placement of the user's nodes in the session's current plan (NULL
// before any).
static const wm_placement_t *placements(const wm_session_t *s) {
  return s->active ? s->active->user_placement : NULL;
}

// True when the plan does not run |p|'s node (a pass removed it).
static bool is_removed(const wm_placement_t *p) {
  return strcmp(p->backend, "-") == 0;
}

size_t wm_session_node_count(const wm_session_t *session) {
  return session->user->node_count;
}

const wm_placement_t *wm_session_placement(const wm_session_t *session,
                                           size_t index) {
  const wm_placement_t *p = placements(session);
  return p && index < session->user->node_count ? &p[index] : NULL;
}

size_t wm_session_nodes_on(const wm_session_t *session, const char *backend) {
  const wm_placement_t *p = placements(session);
  size_t n = 0;
  for (size_t i = 0; p && i < session->user->node_count; i++) {
    n += !is_removed(&p[i]) && strcmp(p[i].backend, backend) == 0;
  }
  return n;
}

size_t wm_session_nodes_run(const wm_session_t *session) {
  const wm_placement_t *p = placements(session);
  size_t n = 0;
  for (size_t i = 0; p && i < session->user->node_count; i++) {
    n += !is_removed(&p[i]);
  }
  return n;
}

// Appends |text| as a JSON string, or null.
static void json_string_or_null(wm_strbuf_t *out, const char *text) {
  if (text) {
    wm_strbuf_json_string(out, text);
  } else {
    wm_strbuf_printf(out, "null");
  }
}

wm_session_stats_t wm_session_stats(const wm_session_t *session) {
  wm_session_stats_t st = session->stats;
  if (session->active) {
    st.partitions = session->active->stats.partitions;
    st.in_place_outputs = session->active->stats.in_place_outputs;
    st.generated_kernels = session->active->stats.generated_kernels;
    st.generate_ms = session->active->stats.generate_ms;
    st.arena_bytes = 0;
    for (size_t k = 0; k < session->n_slots; k++) {
      st.arena_bytes += session->active->arena_bytes[k];
    }
  }
  return st;
}

void wm_session_placement_json(const wm_session_t *s, wm_strbuf_t *out) {
  const wm_placement_t *pl = placements(s);
  wm_session_stats_t stats = wm_session_stats(s);
  wm_strbuf_printf(out, "{\"schema\": \"wmap.placement/1\", \"backends\": [");
  for (size_t k = 0; k < s->n_slots; k++) {
    wm_strbuf_printf(out, "%s", k ? ", " : "");
    wm_strbuf_json_string(out, wm_backend_name(s->slots[k].backend));
  }
  wm_strbuf_printf(out,
                   "],\n \"partitions\": %zu, \"boundary_copies\": %zu, "
                   "\"bytes_copied\": %llu,\n \"nodes\": [\n",
                   stats.partitions, stats.boundary_copies,
                   (unsigned long long)stats.bytes_copied);
  size_t nn = s->user->node_count;
  for (size_t k = 0; pl && k < nn; k++) {
    const wm_placement_t *p = &pl[s->user_order[k]];
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
                     "\"fell_back\": %s, \"pass\": ",
                     wm_impl_name(p->impl), wm_level_name(p->level),
                     p->fell_back ? "true" : "false");
    json_string_or_null(out, p->pass);
    wm_strbuf_printf(out, ", \"runs_in\": ");
    json_string_or_null(out, p->runs_in);
    wm_strbuf_printf(out, ", \"runs_as\": ");
    json_string_or_null(out, p->runs_as);
    wm_strbuf_printf(out, ", \"kernel\": ");
    json_string_or_null(out, p->kernel);
    wm_strbuf_printf(out, ", \"refusals\": [");
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
    wm_strbuf_printf(out, "]}%s\n", k + 1 < nn ? "," : "");
  }
  wm_strbuf_printf(out, " ]}\n");
}

void wm_session_placement_text(const wm_session_t *s, wm_strbuf_t *out) {
  const wm_placement_t *pl = placements(s);
  wm_session_stats_t stats = wm_session_stats(s);
  wm_strbuf_printf(out, "%-24s %-20s %-8s %-15s %-9s %s\n", "node", "op",
                   "backend", "impl", "level", "why not earlier backends");
  size_t nn = s->user->node_count, fused = 0;
  for (size_t k = 0; pl && k < nn; k++) {
    const wm_placement_t *p = &pl[s->user_order[k]];
    if (is_removed(p)) {
      wm_strbuf_printf(out, "%-24.24s %-20.20s %-8.8s removed by pass %s\n",
                       p->node, p->op_type, "-", p->pass);
      continue;
    }
    if (p->runs_in) {
      fused++;
      wm_strbuf_printf(out,
                       "%-24.24s %-20.20s %-8.8s fused into %s (%s) by "
                       "pass %s\n",
                       p->node, p->op_type, p->backend, p->runs_in, p->runs_as,
                       p->pass);
      continue;
    }
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
    if (p->runs_as) {
      wm_strbuf_printf(out, "%s runs as %s (pass %s)",
                       p->refusal_count ? ";" : "", p->runs_as, p->pass);
    }
    if (p->kernel) {
      wm_strbuf_printf(out, "%s kernel %s",
                       p->refusal_count || p->runs_as ? ";" : "", p->kernel);
    }
    wm_strbuf_printf(out, "\n");
  }
  size_t run = wm_session_nodes_run(s);
  wm_strbuf_printf(out, "%zu nodes", nn);
  if (run != nn || fused) {
    wm_strbuf_printf(out,
                     " (%zu run, %zu of them fused into others; %zu "
                     "removed by passes)",
                     run, fused, nn - run);
  }
  wm_strbuf_printf(out, ", %zu partition%s\n", stats.partitions,
                   stats.partitions == 1 ? "" : "s");
  if (stats.generated_kernels) {
    wm_strbuf_printf(out, "%zu generated kernel%s, built in %.1f ms\n",
                     stats.generated_kernels,
                     stats.generated_kernels == 1 ? "" : "s",
                     stats.generate_ms);
  }
}
