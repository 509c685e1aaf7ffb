// The map's text and Markdown reports. Both present the same sections from
// the same tables (src/report: rows of cells built once); the text form
// aligns columns within 100 columns (names truncated with "...", free text
// wrapped) and may colour class and cover words, the Markdown form writes
// pipe tables.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "wmap/backend.h"
#include "wmap/report.h"
#include "wmap/session.h"

#define TOP_LIVE 5
#define TOP_NODES 15
#define TOP_PATH 20
#define MAX_COVER_COLUMNS 3  // more backends: coverage only in its section

// Short cover names for narrow columns, by wm_map_cover_t.
static const char *const kCoverShort[WM_COVER_COUNT] = {"lib", "nat", "gen",
                                                        "fb", "miss"};
static const char *const kCoverTint[WM_COVER_COUNT] = {
    WM_ANSI_GREEN, WM_ANSI_GREEN, WM_ANSI_GREEN, WM_ANSI_YELLOW, WM_ANSI_RED};

// Words coloured in WM_REPORT_WORDS columns: class, cover and verdict.
static const wm_report_word_t kWords[] = {
    {"lib", WM_ANSI_GREEN},
    {"nat", WM_ANSI_GREEN},
    {"gen", WM_ANSI_GREEN},
    {"covered", WM_ANSI_GREEN},
    {"fb", WM_ANSI_YELLOW},
    {"fallback", WM_ANSI_YELLOW},
    {"miss", WM_ANSI_RED},
    {"missing", WM_ANSI_RED},
    {"compute", WM_ANSI_BLUE},
    {"memory", WM_ANSI_MAGENTA},
    {"communication", WM_ANSI_CYAN},
    {"comm", WM_ANSI_CYAN},
    {"good", WM_ANSI_GREEN},
    {"maybe", WM_ANSI_YELLOW},
    {"poor", WM_ANSI_RED},
    {"yes", WM_ANSI_GREEN},
    {"no", WM_ANSI_RED},
};

// Writes |t| in the report's form and frees it.
static void emit_table(wm_report_writer_t *r, wm_report_table_t *t) {
  wm_report_write_table(r, t);
  wm_report_table_deinit(t);
}

// ------------------------------------------------------------- numbers

static const char *nz(const char *s) {
  return s ? s : "";
}

static const char *fmt_si(double v, char *buf) {
  return wm_report_fmt_si(v, buf);
}

// FLOP per byte, "-" when no bytes move.
static const char *fmt_intensity(double flops, double bytes, char *buf) {
  if (!(bytes > 0)) {
    snprintf(buf, WM_REPORT_FMT_LEN, "-");
    return buf;
  }
  return wm_report_fmt_si(flops / bytes, buf);
}

// GFLOP/s or GB/s, "-" when unknown.
static const char *fmt_rate(double v, char *buf) {
  if (!(v > 0)) {
    snprintf(buf, WM_REPORT_FMT_LEN, "-");
  } else {
    snprintf(buf, WM_REPORT_FMT_LEN, v >= 100 ? "%.0f" : "%.1f", v);
  }
  return buf;
}

// ------------------------------------------------------------- the map

// The critical-path backend, or SIZE_MAX when there is none.
static size_t crit_backend(const wm_map_t *m) {
  if (m->n_backends == 0) {
    return SIZE_MAX;
  }
  return m->critical.backend < m->n_backends ? m->critical.backend : 0;
}

static const wm_map_cell_t *cell(const wm_map_t *m, size_t node, size_t b) {
  if (b >= m->n_backends || !m->nodes[node].cells) {
    return NULL;
  }
  return &m->nodes[node].cells[b];
}

static double node_bytes(const wm_map_node_t *n) {
  return (double)n->act_in_bytes + (double)n->weight_bytes +
         (double)n->out_bytes;
}

static void section_header(wm_report_writer_t *r, const wm_map_t *m) {
  wm_report_write_heading(r, "wmap map: %s", nz(m->model));
  wm_report_write_label(r, "graph \"%s\", opset %lld, %zu nodes, %zu backend%s",
                        nz(m->graph_name), (long long)m->opset, m->n_nodes,
                        m->n_backends, m->n_backends == 1 ? "" : "s");
  if (m->n_dims > 0) {
    wm_strbuf_t d;
    wm_strbuf_init(&d);
    for (size_t i = 0; i < m->n_dims; i++) {
      wm_strbuf_printf(&d, "%s%s=%lld", i ? ", " : "", nz(m->dims[i].name),
                       (long long)m->dims[i].value);
    }
    wm_report_write_label(r, "dims: %s", wm_strbuf_str(&d));
    wm_strbuf_deinit(&d);
  }
  if (m->have_machine) {
    const wm_machine_t *mc = &m->machine;
    wm_report_write_label(
        r, "machine: %.128s, %d cores, kernel %.80s (fingerprint %.17s)",
        mc->model, (int)mc->cores, mc->kernel, mc->fingerprint);
  }
  for (size_t i = 0; i < m->n_notes; i++) {
    wm_report_write_lead(r, "note:", WM_ANSI_YELLOW, "%s", nz(m->notes[i]));
  }
  r->fresh = false;
}

static void section_totals(wm_report_writer_t *r, const wm_map_t *m) {
  const wm_map_totals_t *tt = &m->totals;
  const wm_map_memory_t *mem = &m->memory;
  char a[WM_REPORT_FMT_LEN], b[WM_REPORT_FMT_LEN];
  wm_report_write_title(r, "Totals");
  wm_report_table_t t;
  wm_report_table_init(&t);
  wm_report_table_add_col(&t, "quantity", 0);
  wm_report_table_add_col(&t, "value", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "detail", WM_REPORT_WRAP);
  wm_report_table_add_row(&t);
  wm_report_table_set_cell(&t, 0, "params");
  wm_report_table_set_cell(&t, 1, "%s", wm_report_fmt_int(tt->params, a));
  wm_report_table_set_cell(
      &t, 2, "%s learnable (BatchNormalization statistics excluded)",
      fmt_si((double)tt->params, b));
  wm_report_table_add_row(&t);
  wm_report_table_set_cell(&t, 0, "MACs");
  wm_report_table_set_cell(&t, 1, "%s", fmt_si(tt->macs, a));
  wm_report_table_set_cell(&t, 2, "multiply-accumulates of contractions");
  wm_report_table_add_row(&t);
  wm_report_table_set_cell(&t, 0, "FLOPs");
  wm_report_table_set_cell(&t, 1, "%s", fmt_si(tt->flops, a));
  wm_report_table_set_cell(&t, 2, "FLOPs = 2 x MACs for contractions");
  wm_report_table_add_row(&t);
  wm_report_table_set_cell(&t, 0, "transcendentals");
  wm_report_table_set_cell(&t, 1, "%s", fmt_si(tt->transcendentals, a));
  wm_report_table_set_cell(&t, 2, "exp, log, tanh, erf, sqrt... evaluations");
  double traffic = 0;  // per node (a shared weight counts at each reader)
  for (size_t i = 0; i < m->n_nodes; i++) {
    traffic += node_bytes(&m->nodes[i]);
  }
  wm_report_table_add_row(&t);
  wm_report_table_set_cell(&t, 0, "bytes moved");
  wm_report_table_set_cell(&t, 1, "%s", wm_report_fmt_bytes(traffic, a));
  wm_report_table_set_cell(
      &t, 2, "every node's inputs, weights and outputs, each once");
  wm_report_table_add_row(&t);
  wm_report_table_set_cell(&t, 0, "intensity");
  wm_report_table_set_cell(&t, 1, "%s", fmt_intensity(tt->flops, traffic, a));
  wm_report_table_set_cell(&t, 2, "FLOP per byte moved");
  wm_report_table_add_row(&t);
  wm_report_table_set_cell(&t, 0, "weight bytes");
  wm_report_table_set_cell(&t, 1, "%s",
                           wm_report_fmt_bytes((double)mem->weight_bytes, a));
  wm_report_table_set_cell(&t, 2, "every initializer and Constant tensor");
  wm_report_table_add_row(&t);
  wm_report_table_set_cell(&t, 0, "peak activations");
  wm_report_table_set_cell(
      &t, 1, "%s", wm_report_fmt_bytes((double)mem->peak_activation_bytes, a));
  if (mem->peak_node < m->n_nodes && mem->peak_activation_bytes > 0) {
    const wm_map_node_t *pn = &m->nodes[mem->peak_node];
    wm_report_table_set_cell(&t, 2, "at node \"%s\" (%s)", nz(pn->name),
                             nz(pn->op_type));
  }
  wm_report_table_add_row(&t);
  wm_report_table_set_cell(&t, 0, "weights + peak");
  wm_report_table_set_cell(
      &t, 1, "%s",
      wm_report_fmt_bytes(
          (double)mem->weight_bytes + (double)mem->peak_activation_bytes, a));
  wm_report_table_set_cell(&t, 2, "memory the run needs at least");
  wm_report_table_add_row(&t);
  wm_report_table_set_cell(&t, 0, "nodes");
  wm_report_table_set_cell(&t, 1, "%zu", tt->nodes);
  wm_report_table_set_cell(&t, 2, "%zu unmapped", tt->unmapped);
  emit_table(r, &t);
  if (mem->n_live == 0 || !mem->live) {
    return;
  }
  size_t n = mem->n_live < TOP_LIVE ? mem->n_live : TOP_LIVE;
  wm_report_write_label(r, "top live tensors at the peak (%zu of %zu):", n,
                        mem->n_live);
  wm_report_table_init(&t);
  wm_report_table_add_col(&t, "tensor", WM_REPORT_SHRINK);
  wm_report_table_add_col(&t, "bytes", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "% of peak", WM_REPORT_RIGHT);
  for (size_t i = 0; i < n; i++) {
    wm_report_table_add_row(&t);
    wm_report_table_set_cell(&t, 0, "%s", nz(mem->live[i].name));
    wm_report_table_set_cell(
        &t, 1, "%s", wm_report_fmt_bytes((double)mem->live[i].bytes, a));
    wm_report_table_set_cell(
        &t, 2, "%s",
        wm_report_fmt_pct((double)mem->live[i].bytes,
                          (double)mem->peak_activation_bytes, b));
  }
  emit_table(r, &t);
}

// Index of the type of node |n| in m->types, or SIZE_MAX.
static size_t type_of(const wm_map_t *m, const wm_map_node_t *n) {
  for (size_t k = 0; k < m->n_types; k++) {
    if (strcmp(nz(m->types[k].op_type), nz(n->op_type)) == 0 &&
        strcmp(nz(m->types[k].domain), nz(n->domain)) == 0) {
      return k;
    }
  }
  return SIZE_MAX;
}

// "lib", or "lib 10/fb 2" when mixed; "-" for no nodes.
static void cover_summary(const size_t count[WM_COVER_COUNT], char *buf,
                          size_t cap) {
  size_t kinds = 0, len = 0;
  buf[0] = '\0';
  for (int k = 0; k < WM_COVER_COUNT; k++) {
    kinds += count[k] > 0;
  }
  for (int k = 0; k < WM_COVER_COUNT && len < cap; k++) {
    if (count[k] == 0) {
      continue;
    }
    int w = kinds == 1 ? snprintf(buf + len, cap - len, "%s", kCoverShort[k])
                       : snprintf(buf + len, cap - len, "%s%s %zu",
                                  len ? "/" : "", kCoverShort[k], count[k]);
    len += w > 0 ? (size_t)w : 0;
  }
  if (kinds == 0) {
    snprintf(buf, cap, "-");
  }
}

static const char *type_label(const char *op, const char *domain, char *buf,
                              size_t cap) {
  if (domain && *domain) {
    snprintf(buf, cap, "%s:%s", domain, nz(op));
  } else {
    snprintf(buf, cap, "%s", nz(op));
  }
  return buf;
}

static void section_inventory(wm_report_writer_t *r, const wm_map_t *m) {
  char a[WM_REPORT_FMT_LEN], lbl[160];
  size_t cb = crit_backend(m);
  wm_report_write_title(r, "Operators by type");
  // Roofline time per bound class of each type on the critical backend.
  double *by_bound = NULL;
  if (cb != SIZE_MAX && m->n_types > 0) {
    by_bound = wm_calloc(m->n_types * 4, sizeof(double));
  }
  for (size_t i = 0; by_bound && i < m->n_nodes; i++) {
    size_t k = type_of(m, &m->nodes[i]);
    const wm_map_cell_t *c = cell(m, i, cb);
    if (k != SIZE_MAX && c && (unsigned)c->bound < 4) {
      by_bound[k * 4 + (unsigned)c->bound] += c->t_roof;
    }
  }
  bool per_backend = m->n_backends <= MAX_COVER_COLUMNS;
  wm_report_table_t t;
  wm_report_table_init(&t);
  wm_report_table_add_col(&t, "op type", WM_REPORT_SHRINK);
  wm_report_table_add_col(&t, "count", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "MACs", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "FLOPs", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "%FLOPs", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "bytes", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "FLOP/B", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "params", WM_REPORT_RIGHT);
  if (cb != SIZE_MAX) {
    wm_report_table_add_col(&t, "bound", WM_REPORT_WORDS);
  }
  size_t first_cover = t.n_cols;
  for (size_t b = 0; per_backend && b < m->n_backends; b++) {
    wm_report_table_add_col(&t, nz(m->backends[b].name), WM_REPORT_WORDS);
  }
  for (size_t k = 0; k < m->n_types; k++) {
    const wm_map_optype_t *ty = &m->types[k];
    double bytes = (double)ty->act_in_bytes + (double)ty->weight_bytes +
                   (double)ty->out_bytes;
    wm_report_table_add_row(&t);
    wm_report_table_set_cell(
        &t, 0, "%s", type_label(ty->op_type, ty->domain, lbl, sizeof(lbl)));
    wm_report_table_set_cell(&t, 1, "%zu", ty->count);
    wm_report_table_set_cell(&t, 2, "%s", fmt_si(ty->macs, a));
    wm_report_table_set_cell(&t, 3, "%s", fmt_si(ty->flops, a));
    wm_report_table_set_cell(&t, 4, "%s",
                             wm_report_fmt_pct(ty->flops, m->totals.flops, a));
    wm_report_table_set_cell(&t, 5, "%s", wm_report_fmt_bytes(bytes, a));
    wm_report_table_set_cell(&t, 6, "%s", fmt_intensity(ty->flops, bytes, a));
    wm_report_table_set_cell(&t, 7, "%s", fmt_si((double)ty->params, a));
    if (by_bound) {
      int best = 0;
      for (int c = 1; c < 4; c++) {
        if (by_bound[k * 4 + c] > by_bound[k * 4 + best]) {
          best = c;
        }
      }
      wm_report_table_set_cell(&t, 8, "%s",
                               by_bound[k * 4 + best] > 0
                                   ? wm_map_bound_name((wm_map_bound_t)best)
                                   : "-");
    } else if (cb != SIZE_MAX) {
      wm_report_table_set_cell(&t, 8, "?");
    }
    for (size_t b = 0; per_backend && b < m->n_backends && ty->cells; b++) {
      cover_summary(ty->cells[b].count, lbl, sizeof(lbl));
      wm_report_table_set_cell(&t, first_cover + b, "%s", lbl);
    }
  }
  free(by_bound);
  emit_table(r, &t);
  wm_strbuf_t legend;
  wm_strbuf_init(&legend);
  for (int k = 0; k < WM_COVER_COUNT; k++) {
    wm_strbuf_printf(&legend, "%s%s = %s", k ? ", " : "", kCoverShort[k],
                     wm_map_cover_name((wm_map_cover_t)k));
  }
  if (cb != SIZE_MAX) {
    wm_report_write_para(
        r,
        "bytes = activations in + weights + outputs; bound: the class "
        "holding most of the type's roofline time on %s; cover per "
        "backend: %s%s",
        nz(m->backends[cb].name), wm_strbuf_str(&legend),
        per_backend ? "" : " (see Coverage: too many backends for columns)");
  }
  wm_strbuf_deinit(&legend);
}

static void section_roofline(wm_report_writer_t *r, const wm_map_t *m) {
  char a[WM_REPORT_FMT_LEN];
  if (m->n_backends == 0) {
    return;
  }
  wm_report_write_title(r, "Roofline per backend");
  wm_report_table_t t;
  wm_report_table_init(&t);
  wm_report_table_add_col(&t, "backend", WM_REPORT_SHRINK);
  wm_report_table_add_col(&t, "target", WM_REPORT_SHRINK);
  wm_report_table_add_col(&t, "GFLOP/s", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "GB/s", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "ridge", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "peaks", 0);
  wm_report_table_add_col(&t, "t_roof", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "compute", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "memory", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "comm", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "unknown", WM_REPORT_RIGHT);
  wm_report_table_set_tint(&t, 7, WM_ANSI_BLUE);
  wm_report_table_set_tint(&t, 8, WM_ANSI_MAGENTA);
  wm_report_table_set_tint(&t, 9, WM_ANSI_CYAN);
  for (size_t b = 0; b < m->n_backends; b++) {
    const wm_map_backend_t *be = &m->backends[b];
    double split[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < m->n_nodes; i++) {
      const wm_map_cell_t *c = cell(m, i, b);
      if (c && (unsigned)c->bound < 4) {
        split[(unsigned)c->bound] += c->t_roof;
      }
    }
    double whole = split[0] + split[1] + split[2] + split[3];
    wm_report_table_add_row(&t);
    wm_report_table_set_cell(&t, 0, "%s", nz(be->name));
    wm_report_table_set_cell(&t, 1, "%s", nz(be->target));
    wm_report_table_set_cell(&t, 2, "%s", fmt_rate(be->peak_gflops, a));
    wm_report_table_set_cell(&t, 3, "%s", fmt_rate(be->bandwidth_gbs, a));
    if (be->ridge > 0) {
      wm_report_table_set_cell(&t, 4, "%.1f", be->ridge);
    } else {
      wm_report_table_set_cell(&t, 4, "-");
    }
    wm_report_table_set_cell(&t, 5, "%s", nz(be->peak_source));
    wm_report_table_set_cell(&t, 6, "%s", wm_report_fmt_time(be->t_roof, a));
    wm_report_table_set_cell(
        &t, 7, "%s", wm_report_fmt_pct(split[WM_BOUND_COMPUTE], whole, a));
    wm_report_table_set_cell(
        &t, 8, "%s", wm_report_fmt_pct(split[WM_BOUND_MEMORY], whole, a));
    wm_report_table_set_cell(
        &t, 9, "%s",
        wm_report_fmt_pct(split[WM_BOUND_COMMUNICATION], whole, a));
    wm_report_table_set_cell(
        &t, 10, "%s", wm_report_fmt_pct(split[WM_BOUND_UNKNOWN], whole, a));
  }
  emit_table(r, &t);
  wm_report_write_para(
      r,
      "GFLOP/s: fp32 peak; ridge: FLOP per byte where compute and memory "
      "time meet; t_roof: sum over nodes of max(FLOPs / peak, bytes / "
      "bandwidth%s), split by the class that bounds each node",
      m->plan.enabled ? ", communication" : "");
}

static void section_coverage(wm_report_writer_t *r, const wm_map_t *m) {
  char a[WM_REPORT_FMT_LEN], b2[WM_REPORT_FMT_LEN], lbl[160];
  if (m->n_backends == 0) {
    return;
  }
  wm_report_write_title(r, "Coverage per backend");
  wm_report_table_t t;
  wm_report_table_init(&t);
  wm_report_table_add_col(&t, "backend", WM_REPORT_SHRINK);
  wm_report_table_add_col(&t, "covered", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "%", WM_REPORT_RIGHT);
  for (int k = 0; k < WM_COVER_COUNT; k++) {
    size_t col = wm_report_table_add_col(&t, kCoverShort[k], WM_REPORT_RIGHT);
    wm_report_table_set_tint(&t, col, kCoverTint[k]);
  }
  wm_report_table_add_col(&t, "%FLOPs", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "%t_roof", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "parts", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "copies", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "copy B", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "suits", WM_REPORT_WORDS);
  for (size_t b = 0; b < m->n_backends; b++) {
    const wm_map_backend_t *be = &m->backends[b];
    wm_report_table_add_row(&t);
    wm_report_table_set_cell(&t, 0, "%s%s", nz(be->name),
                             be->fallback ? " (fb)" : "");
    wm_report_table_set_cell(&t, 1, "%zu/%zu", be->nodes_covered, m->n_nodes);
    wm_report_table_set_cell(
        &t, 2, "%s",
        wm_report_fmt_pct((double)be->nodes_covered, (double)m->n_nodes, a));
    for (int k = 0; k < WM_COVER_COUNT; k++) {
      wm_report_table_set_cell(&t, 3 + (size_t)k, "%zu", be->count[k]);
    }
    wm_report_table_set_cell(
        &t, 8, "%s", wm_report_fmt_pct(be->flops_covered, m->totals.flops, a));
    wm_report_table_set_cell(
        &t, 9, "%s", wm_report_fmt_pct(be->t_roof_covered, be->t_roof, a));
    wm_report_table_set_cell(&t, 10, "%zu", be->partitions);
    wm_report_table_set_cell(&t, 11, "%zu", be->boundary_copies);
    wm_report_table_set_cell(
        &t, 12, "%s", wm_report_fmt_bytes((double)be->boundary_bytes, a));
    wm_report_table_set_cell(&t, 13, "%s", nz(be->suitability));
  }
  emit_table(r, &t);
  bool any_fallback = false;
  for (size_t b = 0; b < m->n_backends; b++) {
    any_fallback = any_fallback || m->backends[b].fallback;
  }
  wm_report_write_para(
      r,
      "covered = lib + nat + gen (the backend runs the node itself); fb: "
      "the fallback runs it; parts: runs of consecutive nodes on one side; "
      "copies: tensors crossing to the fallback; suits: ORT's rule%s",
      any_fallback ? "; (fb) marks the fallback backend" : "");
  for (size_t b = 0; b < m->n_backends; b++) {
    const wm_map_backend_t *be = &m->backends[b];
    if (be->n_todo == 0 || !be->todo) {
      bool all =
          be->count[WM_COVER_FALLBACK] + be->count[WM_COVER_MISSING] == 0;
      wm_report_write_para(
          r, "operators to write for %s: %s", nz(be->name),
          all ? "none: every node is covered"
              : "none listed (the uncovered nodes could not be analysed)");
      continue;
    }
    wm_report_write_label(r, "operators to write for %s (%zu):", nz(be->name),
                          be->n_todo);
    wm_report_table_init(&t);
    wm_report_table_add_col(&t, "op type", WM_REPORT_SHRINK);
    wm_report_table_add_col(&t, "nodes", WM_REPORT_RIGHT);
    wm_report_table_add_col(&t, "FLOPs", WM_REPORT_RIGHT);
    wm_report_table_add_col(&t, "%FLOPs", WM_REPORT_RIGHT);
    wm_report_table_add_col(&t, "reason", 0);
    wm_report_table_add_col(&t, "detail", WM_REPORT_WRAP);
    for (size_t i = 0; i < be->n_todo; i++) {
      const wm_map_todo_t *td = &be->todo[i];
      wm_report_table_add_row(&t);
      wm_report_table_set_cell(
          &t, 0, "%s", type_label(td->op_type, td->domain, lbl, sizeof(lbl)));
      wm_report_table_set_cell(&t, 1, "%zu", td->nodes);
      wm_report_table_set_cell(&t, 2, "%s", fmt_si(td->flops, a));
      wm_report_table_set_cell(
          &t, 3, "%s", wm_report_fmt_pct(td->flops, m->totals.flops, b2));
      wm_report_table_set_cell(&t, 4, "%s", wm_why_name(td->reason));
      wm_report_table_set_cell(&t, 5, "%s", nz(td->detail));
    }
    emit_table(r, &t);
  }
}

static void section_top(wm_report_writer_t *r, const wm_map_t *m) {
  char a[WM_REPORT_FMT_LEN];
  size_t cb = crit_backend(m);
  if (cb == SIZE_MAX || m->n_nodes == 0) {
    return;
  }
  const wm_map_backend_t *be = &m->backends[cb];
  wm_report_rank_t *rk = wm_calloc(m->n_nodes, sizeof(wm_report_rank_t));
  if (!rk) {
    return;
  }
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_map_cell_t *c = cell(m, i, cb);
    rk[i].key = c ? c->t_roof : 0;
    rk[i].index = i;
  }
  qsort(rk, m->n_nodes, sizeof(wm_report_rank_t), wm_report_rank_desc);
  size_t n = m->n_nodes < TOP_NODES ? m->n_nodes : TOP_NODES;
  wm_report_write_title(r, "Top %zu nodes by roofline time on %s", n,
                        nz(be->name));
  wm_report_table_t t;
  wm_report_table_init(&t);
  wm_report_table_add_col(&t, "node", WM_REPORT_SHRINK);
  wm_report_table_add_col(&t, "op", WM_REPORT_SHRINK);
  wm_report_table_add_col(&t, "FLOPs", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "bytes", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "FLOP/B", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "bound", WM_REPORT_WORDS);
  wm_report_table_add_col(&t, "t_roof", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "%", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "slack", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "cp", 0);
  for (size_t k = 0; k < n; k++) {
    const wm_map_node_t *nd = &m->nodes[rk[k].index];
    const wm_map_cell_t *c = cell(m, rk[k].index, cb);
    double bytes = node_bytes(nd);
    wm_report_table_add_row(&t);
    wm_report_table_set_cell(&t, 0, "%s", nz(nd->name));
    wm_report_table_set_cell(&t, 1, "%s", nz(nd->op_type));
    wm_report_table_set_cell(&t, 2, "%s", fmt_si(nd->flops, a));
    wm_report_table_set_cell(&t, 3, "%s", wm_report_fmt_bytes(bytes, a));
    wm_report_table_set_cell(&t, 4, "%s", fmt_intensity(nd->flops, bytes, a));
    wm_report_table_set_cell(&t, 5, "%s",
                             c ? wm_map_bound_name(c->bound) : "-");
    wm_report_table_set_cell(&t, 6, "%s", wm_report_fmt_time(rk[k].key, a));
    wm_report_table_set_cell(&t, 7, "%s",
                             wm_report_fmt_pct(rk[k].key, be->t_roof, a));
    // Slack below a millionth of the path is rounding, not time.
    double slack = nd->slack > 1e-6 * m->critical.length ? nd->slack : 0;
    wm_report_table_set_cell(&t, 8, "%s", wm_report_fmt_time(slack, a));
    wm_report_table_set_cell(&t, 9, "%s", nd->critical ? "*" : "");
  }
  free(rk);
  emit_table(r, &t);
  wm_report_write_para(
      r,
      "%%: of the serial t_roof %s; slack: how much later the node could "
      "start without lengthening the path; cp: * on the critical path",
      wm_report_fmt_time(be->t_roof, a));
}

static void section_critical(wm_report_writer_t *r, const wm_map_t *m) {
  char a[WM_REPORT_FMT_LEN], b[WM_REPORT_FMT_LEN], c2[WM_REPORT_FMT_LEN];
  size_t cb = crit_backend(m);
  const wm_map_critical_t *cr = &m->critical;
  if (cb == SIZE_MAX) {
    return;
  }
  bool measured = cr->weights && strcmp(cr->weights, "t_roof") != 0;
  if (measured) {
    wm_report_write_title(r, "Critical path (%s)", cr->weights);
  } else {
    wm_report_write_title(r, "Critical path on %s", nz(m->backends[cb].name));
  }
  wm_report_write_para(
      r,
      "length %s of %s serial %s: %s of the serial time lies on the "
      "path (%zu of %zu nodes); the rest could overlap with it",
      wm_report_fmt_time(cr->length, a), wm_report_fmt_time(cr->total, b),
      measured ? "time" : "t_roof",
      wm_report_fmt_pct(cr->length, cr->total, c2), cr->n_nodes, m->n_nodes);
  if (cr->n_nodes == 0 || !cr->nodes) {
    return;
  }
  wm_report_rank_t *rk = wm_calloc(cr->n_nodes, sizeof(wm_report_rank_t));
  if (!rk) {
    return;
  }
  size_t n = 0;
  for (size_t i = 0; i < cr->n_nodes; i++) {
    if (cr->nodes[i] < m->n_nodes) {
      rk[n].key = m->nodes[cr->nodes[i]].weight;
      rk[n].index = cr->nodes[i];
      n++;
    }
  }
  qsort(rk, n, sizeof(wm_report_rank_t), wm_report_rank_desc);
  size_t shown = n < TOP_PATH ? n : TOP_PATH;
  wm_report_write_label(
      r, "path nodes by %s%s:", measured ? "measured time" : "t_roof",
      shown < n ? " (largest first)" : "");
  wm_report_table_t t;
  wm_report_table_init(&t);
  wm_report_table_add_col(&t, "#", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "node", WM_REPORT_SHRINK);
  wm_report_table_add_col(&t, "op", WM_REPORT_SHRINK);
  wm_report_table_add_col(&t, "bound", WM_REPORT_WORDS);
  wm_report_table_add_col(&t, measured ? "time" : "t_roof", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "cumulative", WM_REPORT_RIGHT);
  wm_report_table_add_col(&t, "% of path", WM_REPORT_RIGHT);
  double cum = 0;
  for (size_t k = 0; k < shown; k++) {
    const wm_map_node_t *nd = &m->nodes[rk[k].index];
    const wm_map_cell_t *c = cell(m, rk[k].index, cb);
    cum += rk[k].key;
    wm_report_table_add_row(&t);
    wm_report_table_set_cell(&t, 0, "%zu", k + 1);
    wm_report_table_set_cell(&t, 1, "%s", nz(nd->name));
    wm_report_table_set_cell(&t, 2, "%s", nz(nd->op_type));
    wm_report_table_set_cell(&t, 3, "%s",
                             c ? wm_map_bound_name(c->bound) : "-");
    wm_report_table_set_cell(&t, 4, "%s", wm_report_fmt_time(rk[k].key, a));
    wm_report_table_set_cell(&t, 5, "%s", wm_report_fmt_time(cum, a));
    wm_report_table_set_cell(&t, 6, "%s",
                             wm_report_fmt_pct(cum, cr->length, a));
  }
  free(rk);
  emit_table(r, &t);
  if (shown < n) {
    wm_report_write_para(r, "... %zu more", n - shown);
  }
}

static bool same_group(const wm_map_collective_t *x,
                       const wm_map_collective_t *y) {
  return x->kind == y->kind && strcmp(nz(x->why), nz(y->why)) == 0 &&
         x->bytes == y->bytes && x->ranks == y->ranks &&
         x->per_forward == y->per_forward && x->per_step == y->per_step;
}

static void section_plan(wm_report_writer_t *r, const wm_map_t *m) {
  char a[WM_REPORT_FMT_LEN], b[WM_REPORT_FMT_LEN], pc[WM_REPORT_FMT_LEN],
      pd[WM_REPORT_FMT_LEN];
  const wm_map_plan_t *p = &m->plan;
  if (!p->enabled) {
    return;
  }
  const wm_map_parallel_t *sp = &p->spec;
  wm_report_write_title(r, "Parallel plan");
  wm_report_write_para(r, "dp=%d tp=%d pp=%d microbatches=%d, %s, link %s GB/s",
                       (int)sp->dp, (int)sp->tp, (int)sp->pp,
                       (int)sp->microbatches,
                       sp->inference ? "inference (forward only)"
                                     : "training (forward and backward)",
                       fmt_rate(p->link_gbs, a));
  bool needed[6] = {false, false, false, false, false, false};
  if (p->n_coll > 0 && p->coll) {
    wm_report_write_label(
        r,
        "collectives (identical ones grouped; S as nccl-tests defines "
        "it; wire bytes per rank per step, ring algorithm):");
    wm_report_table_t t;
    wm_report_table_init(&t);
    wm_report_table_add_col(&t, "kind", 0);
    wm_report_table_add_col(&t, "n", WM_REPORT_RIGHT);
    wm_report_table_add_col(&t, "ranks", WM_REPORT_RIGHT);
    wm_report_table_add_col(&t, "/fwd", WM_REPORT_RIGHT);
    wm_report_table_add_col(&t, "/step", WM_REPORT_RIGHT);
    wm_report_table_add_col(&t, "S", WM_REPORT_RIGHT);
    wm_report_table_add_col(&t, "wire/step", WM_REPORT_RIGHT);
    wm_report_table_add_col(&t, "t/call", WM_REPORT_RIGHT);
    wm_report_table_add_col(&t, "why (tensor)", WM_REPORT_WRAP);
    bool *done = wm_calloc(p->n_coll, sizeof(bool));
    for (size_t i = 0; done && i < p->n_coll; i++) {
      if (done[i]) {
        continue;
      }
      const wm_map_collective_t *c = &p->coll[i];
      size_t count = 0;
      double wire = 0;
      for (size_t j = i; j < p->n_coll; j++) {
        if (!done[j] && same_group(c, &p->coll[j])) {
          done[j] = true;
          count++;
          wire += p->coll[j].wire_bytes;
        }
      }
      if (c->kind < 6) {
        needed[c->kind] = true;
      }
      wm_report_table_add_row(&t);
      wm_report_table_set_cell(&t, 0, "%s", wm_map_coll_name(c->kind));
      wm_report_table_set_cell(&t, 1, "%zu", count);
      wm_report_table_set_cell(&t, 2, "%d", (int)c->ranks);
      wm_report_table_set_cell(&t, 3, "%g", c->per_forward);
      wm_report_table_set_cell(&t, 4, "%g", c->per_step);
      wm_report_table_set_cell(&t, 5, "%s",
                               wm_report_fmt_bytes((double)c->bytes, a));
      wm_report_table_set_cell(&t, 6, "%s", wm_report_fmt_bytes(wire, a));
      wm_report_table_set_cell(&t, 7, "%s", wm_report_fmt_time(c->t_call, a));
      if (c->tensor && *c->tensor && count > 1) {
        wm_report_table_set_cell(&t, 8, "%s (%s, first of %zu)", nz(c->why),
                                 c->tensor, count);
      } else if (c->tensor && *c->tensor) {
        wm_report_table_set_cell(&t, 8, "%s (%s)", nz(c->why), c->tensor);
      } else {
        wm_report_table_set_cell(&t, 8, "%s", nz(c->why));
      }
    }
    free(done);
    emit_table(r, &t);
  } else {
    wm_report_write_para(r, "no collectives: the plan needs no communication");
  }
  if (sp->pp > 1) {
    wm_report_write_para(
        r,
        "per step: %s on the wire per rank, t_comm %s; pipeline bubble %s "
        "of the step ((p-1)/(m+p-1)), %s over the ideal time ((p-1)/m)",
        wm_report_fmt_bytes(p->wire_bytes, a), wm_report_fmt_time(p->t_comm, b),
        wm_report_fmt_pct(p->bubble, 1.0, pc),
        wm_report_fmt_pct(p->bubble_ideal, 1.0, pd));
  } else {
    wm_report_write_para(
        r,
        "per step: %s on the wire per rank, t_comm %s; one stage: no "
        "pipeline bubble",
        wm_report_fmt_bytes(p->wire_bytes, a),
        wm_report_fmt_time(p->t_comm, b));
  }
  size_t cb = crit_backend(m);
  if (sp->pp > 1 && p->stage_t_roof && p->stage_flops) {
    wm_report_write_label(r, "per stage%s%s:", cb != SIZE_MAX ? " on " : "",
                          cb != SIZE_MAX ? nz(m->backends[cb].name) : "");
    double whole = 0;
    for (int32_t s = 0; s < sp->pp; s++) {
      whole += p->stage_flops[s];
    }
    wm_report_table_t t;
    wm_report_table_init(&t);
    wm_report_table_add_col(&t, "stage", WM_REPORT_RIGHT);
    wm_report_table_add_col(&t, "t_roof", WM_REPORT_RIGHT);
    wm_report_table_add_col(&t, "FLOPs", WM_REPORT_RIGHT);
    wm_report_table_add_col(&t, "%FLOPs", WM_REPORT_RIGHT);
    for (int32_t s = 0; s < sp->pp; s++) {
      wm_report_table_add_row(&t);
      wm_report_table_set_cell(&t, 0, "%d", (int)s);
      wm_report_table_set_cell(&t, 1, "%s",
                               wm_report_fmt_time(p->stage_t_roof[s], a));
      wm_report_table_set_cell(&t, 2, "%s", fmt_si(p->stage_flops[s], a));
      wm_report_table_set_cell(&t, 3, "%s",
                               wm_report_fmt_pct(p->stage_flops[s], whole, a));
    }
    emit_table(r, &t);
  }
  size_t n_needed = 0;
  for (uint32_t k = 1; k < 6; k++) {
    n_needed += needed[k];
  }
  if (n_needed == 0 || m->n_backends == 0) {
    return;
  }
  wm_report_write_label(
      r,
      "collective tier per backend (does it implement each kind the plan "
      "needs):");
  wm_report_table_t t;
  wm_report_table_init(&t);
  wm_report_table_add_col(&t, "backend", WM_REPORT_SHRINK);
  wm_report_table_add_col(&t, "tier", WM_REPORT_WORDS);
  for (uint32_t k = 1; k < 6; k++) {
    if (needed[k]) {
      wm_report_table_add_col(&t, wm_map_coll_name(k), WM_REPORT_WORDS);
    }
  }
  for (size_t bi = 0; bi < m->n_backends; bi++) {
    const wm_map_backend_t *be = &m->backends[bi];
    wm_report_table_add_row(&t);
    wm_report_table_set_cell(&t, 0, "%s", nz(be->name));
    wm_report_table_set_cell(&t, 1, "%s", be->has_collectives ? "yes" : "no");
    size_t col = 2;
    for (uint32_t k = 1; k < 6; k++) {
      if (!needed[k]) {
        continue;
      }
      if (k == WM_MAP_P2P) {
        wm_report_table_set_cell(&t, col, "device copies");
      } else {
        wm_report_table_set_cell(
            &t, col, "%s",
            be->has_collectives && be->coll_level[k] > 0 ? "yes" : "no");
      }
      col++;
    }
  }
  emit_table(r, &t);
}

static void section_unmapped(wm_report_writer_t *r, const wm_map_t *m) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_nodes; i++) {
    n += m->nodes[i].state != WM_MAP_NODE_OK;
  }
  wm_report_write_title(r, "Unmapped nodes");
  if (n == 0) {
    wm_report_write_para(r, "none: every node was analysed");
    return;
  }
  wm_report_write_label(
      r,
      "%zu node%s could not be fully analysed; the figures above leave "
      "out what is unknown about them:",
      n, n == 1 ? "" : "s");
  wm_report_table_t t;
  wm_report_table_init(&t);
  wm_report_table_add_col(&t, "node", WM_REPORT_SHRINK);
  wm_report_table_add_col(&t, "op type", WM_REPORT_SHRINK);
  wm_report_table_add_col(&t, "state", 0);
  wm_report_table_add_col(&t, "note", WM_REPORT_WRAP);
  wm_report_table_set_tint(&t, 2, WM_ANSI_RED);
  char lbl[160];
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_map_node_t *nd = &m->nodes[i];
    if (nd->state == WM_MAP_NODE_OK) {
      continue;
    }
    wm_report_table_add_row(&t);
    wm_report_table_set_cell(&t, 0, "%s", nz(nd->name));
    wm_report_table_set_cell(
        &t, 1, "%s", type_label(nd->op_type, nd->domain, lbl, sizeof(lbl)));
    wm_report_table_set_cell(&t, 2, "%s", wm_map_state_name(nd->state));
    wm_report_table_set_cell(&t, 3, "%s", nz(nd->note));
  }
  emit_table(r, &t);
}

// One paragraph: how far from their roofs the measured nodes ran.
static void section_measured(wm_report_writer_t *r, const wm_map_t *m) {
  const wm_map_measured_t *ms = &m->measured;
  if (!ms->enabled) {
    return;
  }
  char a[WM_REPORT_FMT_LEN], b[WM_REPORT_FMT_LEN];
  wm_report_write_title(r, "Measured against the roof (%s)", ms->source);
  if (ms->nodes == 0) {
    wm_report_write_para(r,
                         "no measured node has a roofline time (peaks "
                         "unknown): nothing to compare");
    return;
  }
  wm_report_write_para(
      r,
      "%zu measured nodes ran at %.0f %% of their roof overall (roofline "
      "time %s / measured %s), the median node at %.0f %%",
      ms->nodes, ms->roof_pct, wm_report_fmt_time(ms->t_roof, a),
      wm_report_fmt_time(ms->t_measured, b), ms->median_pct);
  if (ms->above_roof > 0) {
    wm_report_write_para(
        r,
        "warning: %zu node%s ran faster than the roof (up to %.0f %%, \"%s\"): "
        "the peak is too low for %s; data in cache beats the memory roof, a "
        "compute-bound one means a wrong peak (wmap probe --refresh)",
        ms->above_roof, ms->above_roof == 1 ? "" : "s", ms->max_pct,
        nz(ms->max_node), ms->above_roof == 1 ? "it" : "them");
  }
}

static void render(const wm_map_t *map, bool md, bool color, wm_strbuf_t *out) {
  wm_report_writer_t r;
  wm_report_writer_init(&r, out, md, color);
  r.words = kWords;
  r.n_words = sizeof(kWords) / sizeof(kWords[0]);
  section_header(&r, map);
  section_totals(&r, map);
  section_inventory(&r, map);
  section_roofline(&r, map);
  section_coverage(&r, map);
  section_top(&r, map);
  section_critical(&r, map);
  section_measured(&r, map);
  section_plan(&r, map);
  section_unmapped(&r, map);
}

void wm_map_to_text(const wm_map_t *map, bool color, wm_strbuf_t *out) {
  render(map, false, color, out);
}

void wm_map_to_markdown(const wm_map_t *map, wm_strbuf_t *out) {
  render(map, true, false, out);
}
