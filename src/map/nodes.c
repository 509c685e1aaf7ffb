// The map's nodes as a table (CSV, RFC 4180) and as a graph (Graphviz dot):
// one row per node in execution order with its work, traffic, path figures
// and, per backend, how it is covered and its roofline time; one box per
// node coloured by how the first backend covers it, the critical path in
// red.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// A CSV field: quoted when it holds a comma, a quote or a line break.
static void csv_field(wm_strbuf_t *out, const char *s) {
  s = s ? s : "";
  if (!strpbrk(s, ",\"\r\n")) {
    wm_strbuf_append(out, s, strlen(s));
    return;
  }
  wm_strbuf_append(out, "\"", 1);
  for (const char *p = s; *p; p++) {
    wm_strbuf_append(out, p, 1);
    if (*p == '"') {
      wm_strbuf_append(out, "\"", 1);
    }
  }
  wm_strbuf_append(out, "\"", 1);
}

// A number as CSV reads it: empty when unknown (not finite).
static void csv_number(wm_strbuf_t *out, double v) {
  if (isfinite(v)) {
    wm_strbuf_printf(out, "%.9g", v);
  }
}

void wm_map_to_csv(const wm_map_t *m, wm_strbuf_t *out) {
  wm_strbuf_printf(out,
                   "position,index,name,op_type,domain,state,inputs,outputs,"
                   "macs,flops,transcendentals,act_in_bytes,weight_bytes,"
                   "out_bytes,intensity,params,critical,start_s,slack_s,"
                   "stage");
  for (size_t b = 0; b < m->n_backends; b++) {
    const char *n = m->backends[b].name;
    wm_strbuf_printf(out, ",%s.cover,%s.t_roof_s,%s.bound", n, n, n);
  }
  wm_strbuf_printf(out, "\r\n");
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_map_node_t *n = &m->nodes[i];
    wm_strbuf_printf(out, "%zu,%d,", i, (int)n->index);
    csv_field(out, n->name);
    wm_strbuf_append(out, ",", 1);
    csv_field(out, n->op_type);
    wm_strbuf_append(out, ",", 1);
    csv_field(out, n->domain);
    wm_strbuf_append(out, ",", 1);
    csv_field(out, wm_map_state_name(n->state));
    wm_strbuf_append(out, ",", 1);
    csv_field(out, n->inputs);
    wm_strbuf_append(out, ",", 1);
    csv_field(out, n->outputs);
    wm_strbuf_append(out, ",", 1);
    csv_number(out, n->macs);
    wm_strbuf_append(out, ",", 1);
    csv_number(out, n->flops);
    wm_strbuf_append(out, ",", 1);
    csv_number(out, n->transcendentals);
    wm_strbuf_printf(
        out, ",%llu,%llu,%llu,", (unsigned long long)n->act_in_bytes,
        (unsigned long long)n->weight_bytes, (unsigned long long)n->out_bytes);
    csv_number(out, n->intensity);
    wm_strbuf_printf(out, ",%lld,%s,", (long long)n->params,
                     n->critical ? "true" : "false");
    csv_number(out, n->start);
    wm_strbuf_append(out, ",", 1);
    csv_number(out, n->slack);
    wm_strbuf_printf(out, ",%d", (int)n->stage);
    for (size_t b = 0; b < m->n_backends; b++) {
      const wm_map_cell_t *c = &n->cells[b];
      wm_strbuf_printf(out, ",%s,", wm_map_cover_key(c->cover));
      if (c->t_roof > 0) {
        csv_number(out, c->t_roof);
      }
      wm_strbuf_printf(out, ",%s", wm_map_bound_name(c->bound));
    }
    wm_strbuf_printf(out, "\r\n");
  }
}

// A dot string: quotes and backslashes escaped, line breaks as \n.
static void dot_string(wm_strbuf_t *out, const char *s) {
  wm_strbuf_append(out, "\"", 1);
  for (const char *p = s ? s : ""; *p; p++) {
    if (*p == '"' || *p == '\\') {
      wm_strbuf_append(out, "\\", 1);
      wm_strbuf_append(out, p, 1);
    } else if (*p == '\n') {
      wm_strbuf_append(out, "\\n", 2);
    } else if ((unsigned char)*p >= 0x20) {
      wm_strbuf_append(out, p, 1);
    }
  }
  wm_strbuf_append(out, "\"", 1);
}

size_t *wm_map_path_next(const wm_map_t *map) {
  size_t *next = malloc((map->n_nodes ? map->n_nodes : 1) * sizeof(size_t));
  if (!next) {
    return NULL;
  }
  for (size_t i = 0; i < map->n_nodes; i++) {
    next[i] = SIZE_MAX;
  }
  const wm_map_critical_t *cp = &map->critical;
  for (size_t k = 0; k + 1 < cp->n_nodes; k++) {
    if (cp->nodes[k] < map->n_nodes) {
      next[cp->nodes[k]] = cp->nodes[k + 1];
    }
  }
  return next;
}

void wm_map_to_dot(const wm_map_t *m, wm_strbuf_t *out) {
  size_t *next = wm_map_path_next(m);
  if (!next) {
    out->failed = true;
    return;
  }
  const char *first = m->n_backends ? m->backends[0].name : "";
  wm_strbuf_printf(out, "digraph ");
  dot_string(out, m->model ? m->model : "model");
  wm_strbuf_printf(out, " {\n  // wmap map: nodes coloured by how backend ");
  dot_string(out, first);
  wm_strbuf_printf(out,
                   " covers them (blue: vendor library, green: native, "
                   "purple: generated, orange: fallback, red: missing); the "
                   "critical path in red\n"
                   "  rankdir=TB;\n"
                   "  node [shape=box, style=\"rounded,filled\", "
                   "fontname=\"Helvetica\", fontsize=10];\n");
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_map_node_t *n = &m->nodes[i];
    char label[512];
    snprintf(label, sizeof(label), "%s\n%s", n->name ? n->name : "",
             n->op_type ? n->op_type : "");
    wm_strbuf_printf(out, "  n%zu [label=", i);
    dot_string(out, label);
    wm_map_cover_t cover = m->n_backends ? n->cells[0].cover : WM_COVER_MISSING;
    wm_strbuf_printf(out, ", fillcolor=\"%s\"%s];\n", wm_map_cover_fill(cover),
                     n->critical ? ", color=\"#d62728\", penwidth=2.5" : "");
  }
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_map_node_t *n = &m->nodes[i];
    for (size_t k = 0; k < n->n_preds; k++) {
      size_t p = n->preds[k];
      bool hot = next[p] == i;
      wm_strbuf_printf(out, "  n%zu -> n%zu%s;\n", p, i,
                       hot ? " [color=\"#d62728\", penwidth=2]" : "");
    }
  }
  wm_strbuf_printf(out, "}\n");
  free(next);
}
