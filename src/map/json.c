// The map as JSON, format "wmap.map/1" (docs/map-format.md).
#include <math.h>
#include <stdio.h>

#include "internal.h"
#include "wmap/session.h"

// A number: integers exactly, others with 6 significant digits; null when
// not finite.
static void num(wm_strbuf_t *o, double v) {
  if (!isfinite(v)) {
    wm_strbuf_printf(o, "null");
  } else if (v == floor(v) && fabs(v) < 9007199254740992.0) {
    wm_strbuf_printf(o, "%.0f", v);
  } else {
    wm_strbuf_printf(o, "%.6g", v);
  }
}

static void key(wm_strbuf_t *o, bool *first, const char *name) {
  wm_strbuf_printf(o, "%s", *first ? "" : ",");
  *first = false;
  wm_strbuf_json_string(o, name);
  wm_strbuf_printf(o, ":");
}

static void knum(wm_strbuf_t *o, bool *first, const char *name, double v) {
  key(o, first, name);
  num(o, v);
}

static void kstr(wm_strbuf_t *o, bool *first, const char *name, const char *v) {
  key(o, first, name);
  wm_strbuf_json_string(o, v ? v : "");
}

static void kbool(wm_strbuf_t *o, bool *first, const char *name, bool v) {
  key(o, first, name);
  wm_strbuf_printf(o, "%s", v ? "true" : "false");
}

static void cover_counts(wm_strbuf_t *o, const size_t *count) {
  bool f = true;
  wm_strbuf_printf(o, "{");
  for (int c = 0; c < WM_COVER_COUNT; c++) {
    knum(o, &f, wm_map_cover_key((wm_map_cover_t)c), (double)count[c]);
  }
  wm_strbuf_printf(o, "}");
}

static void header(const wm_map_t *m, wm_strbuf_t *o, bool *f) {
  kstr(o, f, "format", WM_MAP_FORMAT);
  kstr(o, f, "model", m->model);
  kstr(o, f, "graph", m->graph_name);
  knum(o, f, "opset", (double)m->opset);
  key(o, f, "dims");
  bool g = true;
  wm_strbuf_printf(o, "{");
  for (size_t i = 0; i < m->n_dims; i++) {
    knum(o, &g, m->dims[i].name, (double)m->dims[i].value);
  }
  wm_strbuf_printf(o, "}");
  key(o, f, "machine");
  if (m->have_machine) {
    g = true;
    wm_strbuf_printf(o, "{");
    kstr(o, &g, "fingerprint", m->machine.fingerprint);
    kstr(o, &g, "cpu", m->machine.model);
    knum(o, &g, "cores", m->machine.cores);
    kstr(o, &g, "kernel", m->machine.kernel);
    wm_strbuf_printf(o, "}");
  } else {
    wm_strbuf_printf(o, "null");
  }
  key(o, f, "conventions");
  g = true;
  wm_strbuf_printf(o, "{");
  kstr(o, &g, "macs", "multiply-accumulates of contractions");
  kstr(o, &g, "flops",
       "2 per multiply-accumulate; 1 per elementwise arithmetic operation; "
       "transcendentals counted apart");
  kstr(o, &g, "bytes", "each input and output tensor once per node (unfused)");
  kstr(o, &g, "params",
       "elements of floating-point initializers of rank >= 1, except "
       "BatchNormalization running statistics");
  kstr(o, &g, "t_roof",
       "seconds: max(t_comp, t_mem, t_comm), t_comp = (flops + "
       "transcendentals) / fp32 peak, t_mem = bytes / bandwidth");
  wm_strbuf_printf(o, "}");
}

static void totals(const wm_map_t *m, wm_strbuf_t *o, bool *f) {
  const wm_map_totals_t *t = &m->totals;
  key(o, f, "totals");
  bool g = true;
  wm_strbuf_printf(o, "{");
  knum(o, &g, "nodes", (double)t->nodes);
  knum(o, &g, "unmapped", (double)t->unmapped);
  knum(o, &g, "params", (double)t->params);
  knum(o, &g, "macs", t->macs);
  knum(o, &g, "flops", t->flops);
  knum(o, &g, "transcendentals", t->transcendentals);
  knum(o, &g, "weight_bytes", (double)t->weight_bytes);
  knum(o, &g, "act_in_bytes", (double)t->act_in_bytes);
  knum(o, &g, "out_bytes", (double)t->out_bytes);
  knum(o, &g, "peak_activation_bytes", (double)t->peak_activation_bytes);
  wm_strbuf_printf(o, "}");
  const wm_map_memory_t *mem = &m->memory;
  key(o, f, "memory");
  g = true;
  wm_strbuf_printf(o, "{");
  knum(o, &g, "weight_bytes", (double)mem->weight_bytes);
  knum(o, &g, "peak_activation_bytes", (double)mem->peak_activation_bytes);
  knum(o, &g, "total_bytes",
       (double)mem->weight_bytes + (double)mem->peak_activation_bytes);
  kstr(o, &g, "peak_node", m->n_nodes ? m->nodes[mem->peak_node].name : "");
  key(o, &g, "live_at_peak");
  wm_strbuf_printf(o, "[");
  for (size_t i = 0; i < mem->n_live; i++) {
    bool h = true;
    wm_strbuf_printf(o, "%s{", i ? "," : "");
    kstr(o, &h, "name", mem->live[i].name);
    knum(o, &h, "bytes", (double)mem->live[i].bytes);
    wm_strbuf_printf(o, "}");
  }
  wm_strbuf_printf(o, "]}");
}

static void backends(const wm_map_t *m, wm_strbuf_t *o, bool *f) {
  key(o, f, "backends");
  wm_strbuf_printf(o, "[");
  for (size_t k = 0; k < m->n_backends; k++) {
    const wm_map_backend_t *b = &m->backends[k];
    bool g = true;
    wm_strbuf_printf(o, "%s{", k ? "," : "");
    kstr(o, &g, "name", b->name);
    kstr(o, &g, "version", b->version);
    kstr(o, &g, "target", b->target);
    kbool(o, &g, "fallback", b->fallback);
    knum(o, &g, "peak_gflops", b->peak_gflops);
    knum(o, &g, "bandwidth_gbs", b->bandwidth_gbs);
    knum(o, &g, "ridge_flop_per_byte", b->ridge);
    kstr(o, &g, "peak_source", b->peak_source);
    knum(o, &g, "peak_threads", b->peak_threads);
    knum(o, &g, "nodes", (double)m->n_nodes);
    knum(o, &g, "nodes_covered", (double)b->nodes_covered);
    key(o, &g, "coverage");
    cover_counts(o, b->count);
    knum(o, &g, "flops_covered", b->flops_covered);
    knum(o, &g, "t_roof_s", b->t_roof);
    knum(o, &g, "t_roof_covered_s", b->t_roof_covered);
    knum(o, &g, "partitions", (double)b->partitions);
    knum(o, &g, "boundary_copies", (double)b->boundary_copies);
    knum(o, &g, "boundary_bytes", (double)b->boundary_bytes);
    kstr(o, &g, "suitability", b->suitability);
    key(o, &g, "to_write");
    wm_strbuf_printf(o, "[");
    for (size_t i = 0; i < b->n_todo; i++) {
      const wm_map_todo_t *t = &b->todo[i];
      bool h = true;
      wm_strbuf_printf(o, "%s{", i ? "," : "");
      kstr(o, &h, "op_type", t->op_type);
      kstr(o, &h, "domain", t->domain);
      knum(o, &h, "nodes", (double)t->nodes);
      knum(o, &h, "flops", t->flops);
      kstr(o, &h, "reason", wm_why_name(t->reason));
      kstr(o, &h, "detail", t->detail);
      wm_strbuf_printf(o, "}");
    }
    wm_strbuf_printf(o, "]");
    key(o, &g, "collectives");
    bool h = true;
    wm_strbuf_printf(o, "{");
    kbool(o, &h, "tier", b->has_collectives);
    for (uint32_t kind = WM_COLL_ALL_REDUCE; kind <= WM_COLL_BROADCAST;
         kind++) {
      kstr(o, &h, wm_map_coll_name(kind), wm_level_name(b->coll_level[kind]));
    }
    wm_strbuf_printf(o, "}}");
  }
  wm_strbuf_printf(o, "]");
}

static void op_types(const wm_map_t *m, wm_strbuf_t *o, bool *f) {
  key(o, f, "op_types");
  wm_strbuf_printf(o, "[");
  for (size_t i = 0; i < m->n_types; i++) {
    const wm_map_optype_t *t = &m->types[i];
    bool g = true;
    wm_strbuf_printf(o, "%s{", i ? "," : "");
    kstr(o, &g, "op_type", t->op_type);
    kstr(o, &g, "domain", t->domain);
    knum(o, &g, "count", (double)t->count);
    knum(o, &g, "macs", t->macs);
    knum(o, &g, "flops", t->flops);
    knum(o, &g, "transcendentals", t->transcendentals);
    knum(o, &g, "act_in_bytes", (double)t->act_in_bytes);
    knum(o, &g, "weight_bytes", (double)t->weight_bytes);
    knum(o, &g, "out_bytes", (double)t->out_bytes);
    knum(o, &g, "params", (double)t->params);
    key(o, &g, "backends");
    wm_strbuf_printf(o, "[");
    for (size_t k = 0; k < m->n_backends; k++) {
      bool h = true;
      wm_strbuf_printf(o, "%s{", k ? "," : "");
      kstr(o, &h, "backend", m->backends[k].name);
      key(o, &h, "coverage");
      cover_counts(o, t->cells[k].count);
      knum(o, &h, "t_roof_s", t->cells[k].t_roof);
      wm_strbuf_printf(o, "}");
    }
    wm_strbuf_printf(o, "]}");
  }
  wm_strbuf_printf(o, "]");
}

static void nodes(const wm_map_t *m, wm_strbuf_t *o, bool *f) {
  key(o, f, "nodes");
  wm_strbuf_printf(o, "[");
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_map_node_t *n = &m->nodes[i];
    bool g = true;
    wm_strbuf_printf(o, "%s\n{", i ? "," : "");
    kstr(o, &g, "name", n->name);
    kstr(o, &g, "op_type", n->op_type);
    kstr(o, &g, "domain", n->domain);
    knum(o, &g, "index", n->index);
    kstr(o, &g, "state", wm_map_state_name(n->state));
    kstr(o, &g, "note", n->note);
    kstr(o, &g, "inputs", n->inputs);
    kstr(o, &g, "outputs", n->outputs);
    knum(o, &g, "macs", n->macs);
    knum(o, &g, "flops", n->flops);
    knum(o, &g, "transcendentals", n->transcendentals);
    knum(o, &g, "act_in_bytes", (double)n->act_in_bytes);
    knum(o, &g, "weight_bytes", (double)n->weight_bytes);
    knum(o, &g, "out_bytes", (double)n->out_bytes);
    knum(o, &g, "intensity", n->intensity);
    knum(o, &g, "params", (double)n->params);
    knum(o, &g, "weight_s", n->weight);
    knum(o, &g, "start_s", n->start);
    knum(o, &g, "slack_s", n->slack);
    kbool(o, &g, "critical", n->critical);
    if (m->measured.enabled) {
      knum(o, &g, "measured_s", n->measured_s);
      kstr(o, &g, "measured_backend",
           m->n_backends ? m->backends[n->measured_backend].name : "");
      knum(o, &g, "achieved_gflops", n->achieved_gflops);
      knum(o, &g, "roof_pct", n->roof_pct);
    }
    if (m->plan.enabled) {
      knum(o, &g, "stage", n->stage);
      kbool(o, &g, "sharded", n->sharded);
    }
    key(o, &g, "backends");
    wm_strbuf_printf(o, "[");
    for (size_t k = 0; k < m->n_backends; k++) {
      const wm_map_cell_t *c = &n->cells[k];
      bool h = true;
      wm_strbuf_printf(o, "%s{", k ? "," : "");
      kstr(o, &h, "backend", m->backends[k].name);
      kstr(o, &h, "cover", wm_map_cover_key(c->cover));
      kstr(o, &h, "level", wm_level_name(c->level));
      kstr(o, &h, "impl", wm_impl_name(c->impl));
      if (c->cover == WM_COVER_FALLBACK || c->cover == WM_COVER_MISSING) {
        kstr(o, &h, "reason", wm_why_name(c->reason));
        kstr(o, &h, "detail", c->detail);
      }
      knum(o, &h, "t_comp_s", c->t_comp);
      knum(o, &h, "t_mem_s", c->t_mem);
      knum(o, &h, "t_comm_s", c->t_comm);
      knum(o, &h, "t_roof_s", c->t_roof);
      kstr(o, &h, "bound", wm_map_bound_name(c->bound));
      wm_strbuf_printf(o, "}");
    }
    wm_strbuf_printf(o, "]}");
  }
  wm_strbuf_printf(o, "]");
}

static void critical(const wm_map_t *m, wm_strbuf_t *o, bool *f) {
  const wm_map_critical_t *c = &m->critical;
  key(o, f, "critical_path");
  bool g = true;
  wm_strbuf_printf(o, "{");
  kstr(o, &g, "backend", m->n_backends ? m->backends[c->backend].name : "");
  kstr(o, &g, "weights", c->weights);
  knum(o, &g, "length_s", c->length);
  knum(o, &g, "total_s", c->total);
  key(o, &g, "nodes");
  wm_strbuf_printf(o, "[");
  for (size_t i = 0; i < c->n_nodes; i++) {
    wm_strbuf_printf(o, "%s", i ? "," : "");
    wm_strbuf_json_string(o, m->nodes[c->nodes[i]].name);
  }
  wm_strbuf_printf(o, "]}");
}

static void measured(const wm_map_t *m, wm_strbuf_t *o, bool *f) {
  const wm_map_measured_t *ms = &m->measured;
  key(o, f, "measured");
  if (!ms->enabled) {
    wm_strbuf_printf(o, "null");
    return;
  }
  bool g = true;
  wm_strbuf_printf(o, "{");
  kstr(o, &g, "source", ms->source);
  knum(o, &g, "nodes", (double)ms->nodes);
  knum(o, &g, "measured_s", ms->t_measured);
  knum(o, &g, "t_roof_s", ms->t_roof);
  knum(o, &g, "roof_pct", ms->roof_pct);
  knum(o, &g, "median_roof_pct", ms->median_pct);
  knum(o, &g, "above_roof", (double)ms->above_roof);
  knum(o, &g, "max_roof_pct", ms->max_pct);
  kstr(o, &g, "max_node", ms->max_node);
  kbool(o, &g, "peak_too_low", ms->above_roof > 0);
  wm_strbuf_printf(o, "}");
}

static void plan(const wm_map_t *m, wm_strbuf_t *o, bool *f) {
  const wm_map_plan_t *p = &m->plan;
  key(o, f, "parallel");
  if (!p->enabled) {
    wm_strbuf_printf(o, "null");
    return;
  }
  bool g = true;
  wm_strbuf_printf(o, "{");
  knum(o, &g, "dp", p->spec.dp);
  knum(o, &g, "tp", p->spec.tp);
  knum(o, &g, "pp", p->spec.pp);
  knum(o, &g, "microbatches", p->spec.microbatches);
  kbool(o, &g, "training", !p->spec.inference);
  knum(o, &g, "grad_bytes", p->spec.grad_bytes);
  knum(o, &g, "link_gbs", p->link_gbs);
  knum(o, &g, "wire_bytes_per_step", p->wire_bytes);
  knum(o, &g, "t_comm_per_step_s", p->t_comm);
  knum(o, &g, "bubble", p->bubble);
  knum(o, &g, "bubble_ideal", p->bubble_ideal);
  key(o, &g, "collectives");
  wm_strbuf_printf(o, "[");
  for (size_t i = 0; i < p->n_coll; i++) {
    const wm_map_collective_t *c = &p->coll[i];
    bool h = true;
    wm_strbuf_printf(o, "%s{", i ? "," : "");
    kstr(o, &h, "kind", wm_map_coll_name(c->kind));
    kstr(o, &h, "why", c->why);
    kstr(o, &h, "tensor", c->tensor);
    kstr(o, &h, "node",
         c->node >= 0 && (size_t)c->node < m->n_nodes ? m->nodes[c->node].name
                                                      : "");
    knum(o, &h, "ranks", c->ranks);
    knum(o, &h, "per_forward", c->per_forward);
    knum(o, &h, "per_step", c->per_step);
    knum(o, &h, "bytes", (double)c->bytes);
    knum(o, &h, "wire_bytes_per_step", c->wire_bytes);
    knum(o, &h, "t_call_s", c->t_call);
    wm_strbuf_printf(o, "}");
  }
  wm_strbuf_printf(o, "]");
  key(o, &g, "stages");
  wm_strbuf_printf(o, "[");
  for (int32_t s = 0; p->stage_t_roof && s < p->spec.pp; s++) {
    bool h = true;
    wm_strbuf_printf(o, "%s{", s ? "," : "");
    knum(o, &h, "t_roof_s", p->stage_t_roof[s]);
    knum(o, &h, "flops", p->stage_flops ? p->stage_flops[s] : 0.0);
    wm_strbuf_printf(o, "}");
  }
  wm_strbuf_printf(o, "]}");
}

void wm_map_to_json(const wm_map_t *m, wm_strbuf_t *o) {
  bool f = true;
  wm_strbuf_printf(o, "{");
  header(m, o, &f);
  totals(m, o, &f);
  key(o, &f, "notes");
  wm_strbuf_printf(o, "[");
  for (size_t i = 0; i < m->n_notes; i++) {
    wm_strbuf_printf(o, "%s", i ? "," : "");
    wm_strbuf_json_string(o, m->notes[i]);
  }
  wm_strbuf_printf(o, "]");
  backends(m, o, &f);
  critical(m, o, &f);
  measured(m, o, &f);
  plan(m, o, &f);
  op_types(m, o, &f);
  nodes(m, o, &f);
  wm_strbuf_printf(o, "}\n");
}
