// Measured times on the map (wmap map --times): each node's achieved
// GFLOP/s and how close it ran to its roof, their summary, and the rings
// they add to the HTML roofline.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// The roof time of node |n| on backend |k| without communication: a
// measured run is one device's.
static double roof_time(const wm_map_node_t *n, size_t k) {
  return fmax(n->cells[k].t_comp, n->cells[k].t_mem);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// The position in map->backends of the backend named |name|, else |dflt|.
static size_t backend_index(const wm_map_t *m, const char *name, size_t dflt) {
  for (size_t k = 0; name && k < m->n_backends; k++) {
    if (strcmp(m->backends[k].name, name) == 0) {
      return k;
    }
  }
  return dflt;
}

wm_status_t wm_map_measured_pass(wm_map_t *m, const wm_map_options_t *o) {
  wm_map_measured_t *ms = &m->measured;
  memset(ms, 0, sizeof(*ms));
  ms->max_node = "";
  if (!o->node_seconds || m->n_backends == 0) {
    return NULL;
  }
  ms->enabled = true;
  ms->source =
      wm_arena_strdup(&m->arena, o->times_source ? o->times_source : "given");
  double *pcts = wm_calloc(m->n_nodes + 1, sizeof(double));
  if (!ms->source || !pcts) {
    free(pcts);
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for the map");
  }
  size_t cb = m->critical.backend < m->n_backends ? m->critical.backend : 0;
  for (size_t i = 0; i < m->n_nodes; i++) {
    wm_map_node_t *n = &m->nodes[i];
    double t = o->node_seconds[n->index];
    n->measured_s = isfinite(t) && t > 0 ? t : 0;
    n->measured_backend = backend_index(
        m, o->node_backends ? o->node_backends[n->index] : NULL, cb);
    if (n->measured_s <= 0 || n->state != WM_MAP_NODE_OK) {
      continue;
    }
    n->achieved_gflops = n->flops > 0 ? n->flops / n->measured_s * 1e-9 : 0;
    double roof = roof_time(n, n->measured_backend);
    if (!(roof > 0) || !isfinite(roof)) {
      continue;
    }
    n->roof_pct = 100.0 * roof / n->measured_s;
    pcts[ms->nodes++] = n->roof_pct;
    ms->t_measured += n->measured_s;
    ms->t_roof += roof;
    if (n->roof_pct > 100.0) {
      ms->above_roof++;
    }
    if (n->roof_pct > ms->max_pct) {
      ms->max_pct = n->roof_pct;
      ms->max_node = n->name;
    }
  }
  if (ms->nodes > 0) {
    qsort(pcts, ms->nodes, sizeof(double), cmp_double);
    size_t h = ms->nodes / 2;
    ms->median_pct = ms->nodes % 2 ? pcts[h] : 0.5 * (pcts[h - 1] + pcts[h]);
    ms->roof_pct = 100.0 * ms->t_roof / ms->t_measured;
  }
  free(pcts);
  return NULL;
}

// Whether node |n| gets a ring on backend |b|'s roofline.
static bool has_ring(const wm_map_node_t *n, size_t b) {
  return n->measured_backend == b && n->achieved_gflops > 0 &&
         isfinite(n->achieved_gflops) && n->intensity > 0 &&
         isfinite(n->intensity);
}

double wm_map_measured_min_gflops(const wm_map_t *map, size_t b) {
  double lo = INFINITY;
  for (size_t i = 0; map->measured.enabled && i < map->n_nodes; i++) {
    if (has_ring(&map->nodes[i], b)) {
      lo = fmin(lo, map->nodes[i].achieved_gflops);
    }
  }
  return lo;
}

// Rings above their roof are drawn in red: the peak is too low for them.
#define RING_COLOR "#1d232a"
#define RING_ABOVE_COLOR "#d7263d"

void wm_map_html_measured_dots(const wm_map_t *map, size_t b,
                               const wm_report_plot_t *p, wm_strbuf_t *out) {
  if (!map->measured.enabled) {
    return;
  }
  size_t rings = 0;
  wm_strbuf_printf(out, "<g class=\"measured\">\n");
  for (size_t i = 0; i < map->n_nodes; i++) {
    const wm_map_node_t *n = &map->nodes[i];
    if (!has_ring(n, b)) {
      continue;
    }
    rings++;
    char t[WM_REPORT_FMT_LEN], r[WM_REPORT_FMT_LEN];
    const char *color = n->roof_pct > 100.0 ? RING_ABOVE_COLOR : RING_COLOR;
    wm_strbuf_printf(out,
                     "<circle class=\"ring\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
                     "fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\">"
                     "<title>",
                     wm_report_plot_x(p, n->intensity),
                     wm_report_plot_y(p, n->achieved_gflops), color);
    wm_report_html_escape(out, n->name);
    wm_strbuf_printf(out, " (");
    wm_report_html_escape(out, n->op_type);
    wm_strbuf_printf(out,
                     ")\nmeasured %s, %.3g GFLOP/s, %.0f %% of the roof "
                     "(t_roof %s)%s</title></circle>\n",
                     wm_report_fmt_time(n->measured_s, t), n->achieved_gflops,
                     n->roof_pct, wm_report_fmt_time(roof_time(n, b), r),
                     n->roof_pct > 100.0
                         ? "\nfaster than its roof: the peak is too low"
                         : "");
  }
  if (rings > 0) {
    double x = p->x0 + p->w - 150;
    x = wm_report_svg_legend_item(out, x, 20, RING_COLOR, "measured");
    wm_report_svg_legend_item(out, x, 20, RING_ABOVE_COLOR, "above roof");
  }
  wm_strbuf_printf(out, "</g>\n");
}

void wm_map_html_measured_caption(const wm_map_t *map, size_t b,
                                  wm_strbuf_t *out) {
  const wm_map_measured_t *ms = &map->measured;
  if (!ms->enabled) {
    return;
  }
  size_t rings = 0, above = 0;
  for (size_t i = 0; i < map->n_nodes; i++) {
    if (has_ring(&map->nodes[i], b)) {
      rings++;
      above += map->nodes[i].roof_pct > 100.0;
    }
  }
  wm_strbuf_printf(out, " Rings: %zu nodes measured on this backend (", rings);
  wm_report_html_escape(out, ms->source);
  wm_strbuf_printf(out,
                   ") at their achieved GFLOP/s = FLOPs / measured time; "
                   "the gap down from the roof is the time lost");
  if (above > 0) {
    wm_strbuf_printf(out,
                     "; <strong>%zu ran faster than the roof (red): the "
                     "peak is too low for them</strong> (data in cache beats "
                     "the memory roof; a compute-bound one means a wrong "
                     "peak: <code>wmap probe --refresh</code>)",
                     above);
  }
  wm_strbuf_printf(out, ".");
}
