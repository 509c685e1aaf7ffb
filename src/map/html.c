// The workload map as one self-contained HTML5 page: inline CSS and inline
// SVG plots (roofline, Pareto of op types, stage bars) drawn with
// src/report and a picture of the node DAG, no script and nothing fetched,
// so it opens offline and can be mailed as one file. Every string that
// comes from the model or a plugin is escaped.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "wmap/report.h"
#include "wmap/session.h"

// Plots are drawn at this size (CSS pixels).
#define PLOT_W 720
#define PLOT_H 420
// The critical-path table lists at most this many nodes.
#define CRITICAL_MAX_ROWS 30
// Tensors listed as live at the activation peak.
#define LIVE_MAX_ROWS 8
// Dot radii on the roofline (px): area is proportional to the share.
#define DOT_R_MIN 2.5
#define DOT_R_MAX 28.0
// The most decades a roofline axis spans.
#define ROOF_MAX_DECADES 12

// ------------------------------------------------------------- text

// Appends an op type, prefixed by its domain when not the default one.
static void esc_op(wm_strbuf_t *out, const char *domain, const char *op) {
  if (domain && domain[0] && strcmp(domain, "ai.onnx") != 0) {
    wm_report_html_escape(out, domain);
    wm_strbuf_printf(out, "::");
  }
  wm_report_html_escape(out, op);
}

static void put_si(wm_strbuf_t *out, double v) {
  char b[WM_REPORT_FMT_LEN];
  wm_strbuf_printf(out, "%s", wm_report_fmt_si(v, b));
}

static void put_bytes(wm_strbuf_t *out, double v) {
  char b[WM_REPORT_FMT_LEN];
  wm_strbuf_printf(out, "%s", wm_report_fmt_bytes(v, b));
}

static void put_time(wm_strbuf_t *out, double v) {
  char b[WM_REPORT_FMT_LEN];
  wm_strbuf_printf(out, "%s", wm_report_fmt_time(v, b));
}

static void put_pct(wm_strbuf_t *out, double part, double whole) {
  char b[WM_REPORT_FMT_LEN];
  wm_strbuf_printf(out, "%s", wm_report_fmt_pct(part, whole, b));
}

// A table cell holding a number (right-aligned).
static void td_si(wm_strbuf_t *out, double v) {
  wm_strbuf_printf(out, "<td class=\"n\">");
  put_si(out, v);
  wm_strbuf_printf(out, "</td>");
}

static void td_bytes(wm_strbuf_t *out, double v) {
  wm_strbuf_printf(out, "<td class=\"n\">");
  put_bytes(out, v);
  wm_strbuf_printf(out, "</td>");
}

static void td_time(wm_strbuf_t *out, double v) {
  wm_strbuf_printf(out, "<td class=\"n\">");
  put_time(out, v);
  wm_strbuf_printf(out, "</td>");
}

static void td_pct(wm_strbuf_t *out, double part, double whole) {
  wm_strbuf_printf(out, "<td class=\"n\">");
  put_pct(out, part, whole);
  wm_strbuf_printf(out, "</td>");
}

// ----------------------------------------------------------- colours

static const char *const kCoverShort[WM_COVER_COUNT] = {"lib", "native", "gen",
                                                        "fb", "missing"};
static const char *const kCoverAlone[WM_COVER_COUNT] = {
    "library", "native", "generated", "fallback", "missing"};

#define BOUND_KINDS 4
static const char *const kBoundColor[BOUND_KINDS] = {
    "#8d99a6",  // unknown
    "#e4572e",  // compute
    "#2e86de",  // memory
    "#2ca02c",  // communication
};

static size_t bound_index(wm_map_bound_t b) {
  return (size_t)b < BOUND_KINDS ? (size_t)b : 0;
}

static const char *bound_name(wm_map_bound_t b) {
  return wm_map_bound_name((wm_map_bound_t)bound_index(b));
}

// The cover kind with the most nodes (ties: the better kind), or -1.
static int dominant_cover(const size_t *count) {
  int best = -1;
  for (int k = 0; k < WM_COVER_COUNT; k++) {
    if (count[k] > 0 && (best < 0 || count[k] > count[best])) {
      best = k;
    }
  }
  return best;
}

// "12 native" or "10 lib + 2 fb".
static void cover_counts(wm_strbuf_t *out, const size_t *count) {
  int kinds = 0;
  for (int k = 0; k < WM_COVER_COUNT; k++) {
    kinds += count[k] > 0;
  }
  if (kinds == 0) {
    wm_strbuf_printf(out, "-");
    return;
  }
  bool first = true;
  for (int k = 0; k < WM_COVER_COUNT; k++) {
    if (count[k] > 0) {
      wm_strbuf_printf(out, "%s%zu %s", first ? "" : " + ", count[k],
                       kinds == 1 ? kCoverAlone[k] : kCoverShort[k]);
      first = false;
    }
  }
}

// ---------------------------------------------------------- sorting

// ----------------------------------------------------------- header

// Map-only chart rules of the shared style sheet.
static const char kMapCss[] =
    "svg .roof{fill:none;stroke:#1d232a;stroke-width:2.5}\n"
    "svg .ridge{stroke:#5b6773;stroke-width:1;stroke-dasharray:4 3}\n"
    "svg .dot{fill-opacity:.55;stroke-width:1}\n"
    ".graphbox{overflow:auto;max-height:760px;border:1px solid #d5dae0;"
    "margin:6px 0 4px}\n"
    ".graphbox svg.graph{max-width:none;height:auto;margin:0}\n"
    "svg.graph .gn rect{stroke:#8d99a6;stroke-width:1}\n"
    "svg.graph .gn.bad rect{stroke:#b3261e;stroke-dasharray:3 2}\n"
    "svg.graph .gn.cr rect{stroke:#d62728;stroke-width:2.5}\n"
    "svg.graph text{font-size:10px;text-anchor:middle}\n"
    "svg.graph .ge path{fill:none;stroke:#9aa4ae;stroke-width:1}\n"
    "svg.graph .ge path.cr{stroke:#d62728;stroke-width:2}\n";

static void section_head(const wm_map_t *map, wm_strbuf_t *out) {
  wm_strbuf_t title;
  wm_strbuf_init(&title);
  wm_strbuf_printf(&title, "workload map: %s",
                   map->model        ? map->model
                   : map->graph_name ? map->graph_name
                                     : "");
  wm_report_html_begin(out, "wmap map (" WM_MAP_FORMAT ")",
                       wm_strbuf_str(&title), kMapCss);
  wm_strbuf_deinit(&title);
}

static void section_header(const wm_map_t *map, wm_strbuf_t *out) {
  wm_strbuf_printf(out, "<h1>Workload map: ");
  wm_report_html_escape(out, map->model ? map->model : map->graph_name);
  wm_strbuf_printf(out,
                   "</h1>\n<nav><a href=\"#totals\">totals</a>"
                   "<a href=\"#roofline\">roofline</a>"
                   "<a href=\"#pareto\">time by op type</a>"
                   "<a href=\"#coverage\">coverage</a>"
                   "<a href=\"#critical\">critical path</a>"
                   "<a href=\"#graph\">graph</a>"
                   "<a href=\"#nodes\">nodes</a>");
  if (map->plan.enabled) {
    wm_strbuf_printf(out, "<a href=\"#plan\">parallel plan</a>");
  }
  wm_strbuf_printf(out, "</nav>\n<table class=\"kv\">\n");
  wm_report_html_kv_open(out, "graph");
  wm_report_html_escape(out, map->graph_name);
  wm_report_html_kv_close(out);
  wm_report_html_kv_open(out, "opset");
  wm_strbuf_printf(out, "%lld", (long long)map->opset);
  wm_report_html_kv_close(out);
  wm_report_html_kv_open(out, "dims");
  if (map->n_dims == 0) {
    wm_strbuf_printf(out, "<span class=\"muted\">none bound</span>");
  }
  for (size_t i = 0; i < map->n_dims; i++) {
    wm_strbuf_printf(out, "%s<code>", i ? ", " : "");
    wm_report_html_escape(out, map->dims[i].name);
    wm_strbuf_printf(out, "=%lld</code>", (long long)map->dims[i].value);
  }
  wm_report_html_kv_close(out);
  if (map->have_machine) {
    const wm_machine_t *m = &map->machine;
    wm_report_html_kv_open(out, "machine");
    wm_report_html_escape(out, m->model);
    wm_strbuf_printf(out, ", %d cores, kernel ", (int)m->cores);
    wm_report_html_escape(out, m->kernel);
    wm_strbuf_printf(out, " <span class=\"muted\">(fingerprint ");
    wm_report_html_escape(out, m->fingerprint);
    wm_strbuf_printf(out, ")</span>");
    wm_report_html_kv_close(out);
  }
  wm_report_html_kv_open(out, "backends");
  for (size_t b = 0; b < map->n_backends; b++) {
    wm_strbuf_printf(out, "%s", b ? ", " : "");
    wm_report_html_escape(out, map->backends[b].name);
  }
  if (map->n_backends == 0) {
    wm_strbuf_printf(out, "<span class=\"muted\">none</span>");
  }
  wm_report_html_kv_close(out);
  wm_strbuf_printf(out, "</table>\n");
  if (map->n_notes > 0) {
    wm_strbuf_printf(out, "<div class=\"notes\"><strong>Notes</strong><ul>\n");
    for (size_t i = 0; i < map->n_notes; i++) {
      wm_strbuf_printf(out, "<li>");
      wm_report_html_escape(out, map->notes[i]);
      wm_strbuf_printf(out, "</li>\n");
    }
    wm_strbuf_printf(out, "</ul></div>\n");
  }
}

// ----------------------------------------------------------- totals

static void section_totals(const wm_map_t *map, wm_strbuf_t *out) {
  const wm_map_totals_t *t = &map->totals;
  const wm_map_memory_t *m = &map->memory;
  wm_strbuf_printf(out,
                   "<h2 id=\"totals\">Totals</h2>\n<table class=\"kv\">\n");
  wm_report_html_kv_open(out, "nodes");
  wm_strbuf_printf(out, "%zu", t->nodes);
  if (t->unmapped > 0) {
    wm_strbuf_printf(out, " (<strong>%zu not analysed</strong>)", t->unmapped);
  }
  wm_report_html_kv_close(out);
  wm_report_html_kv_open(out, "parameters");
  put_si(out, (double)t->params);
  wm_report_html_kv_close(out);
  wm_report_html_kv_open(out, "MACs");
  put_si(out, t->macs);
  wm_report_html_kv_close(out);
  wm_report_html_kv_open(out, "FLOPs");
  put_si(out, t->flops);
  wm_report_html_kv_close(out);
  wm_report_html_kv_open(out, "transcendentals");
  put_si(out, t->transcendentals);
  wm_report_html_kv_close(out);
  wm_report_html_kv_open(out, "weight bytes");
  put_bytes(out, (double)t->weight_bytes);
  wm_report_html_kv_close(out);
  wm_report_html_kv_open(out, "activation bytes read / written");
  put_bytes(out, (double)t->act_in_bytes);
  wm_strbuf_printf(out, " / ");
  put_bytes(out, (double)t->out_bytes);
  wm_strbuf_printf(out,
                   " <span class=\"muted\">(each tensor once, "
                   "unfused)</span>");
  wm_report_html_kv_close(out);
  wm_report_html_kv_open(out, "peak activation bytes");
  put_bytes(out, (double)m->peak_activation_bytes);
  if (m->peak_node < map->n_nodes) {
    const wm_map_node_t *n = &map->nodes[m->peak_node];
    wm_strbuf_printf(out, " at node <code>");
    wm_report_html_escape(out, n->name);
    wm_strbuf_printf(out, "</code> (");
    esc_op(out, n->domain, n->op_type);
    wm_strbuf_printf(out, ")");
  }
  wm_report_html_kv_close(out);
  wm_strbuf_printf(out, "</table>\n");
  if (m->n_live > 0) {
    size_t rows = m->n_live < LIVE_MAX_ROWS ? m->n_live : LIVE_MAX_ROWS;
    wm_strbuf_printf(out,
                     "<h3>Live at the activation peak</h3>\n<table>\n"
                     "<tr><th>tensor</th><th>bytes</th><th>share</th></tr>\n");
    for (size_t i = 0; i < rows; i++) {
      wm_strbuf_printf(out, "<tr><td class=\"name\">");
      wm_report_html_escape(out, m->live[i].name);
      wm_strbuf_printf(out, "</td>");
      td_bytes(out, (double)m->live[i].bytes);
      td_pct(out, (double)m->live[i].bytes, (double)m->peak_activation_bytes);
      wm_strbuf_printf(out, "</tr>\n");
    }
    wm_strbuf_printf(out, "</table>\n");
    if (m->n_live > rows) {
      wm_strbuf_printf(out, "<p class=\"muted\">and %zu smaller tensors</p>\n",
                       m->n_live - rows);
    }
  }
}

// --------------------------------------------------------- roofline

static bool has_peaks(const wm_map_backend_t *be) {
  return be->peak_gflops > 0 && be->bandwidth_gbs > 0 &&
         isfinite(be->peak_gflops) && isfinite(be->bandwidth_gbs);
}

static double node_bytes(const wm_map_node_t *n) {
  return (double)n->act_in_bytes + (double)n->weight_bytes +
         (double)n->out_bytes;
}

// Whether node |n| has a place on a log-log roofline.
static bool is_plotted(const wm_map_node_t *n) {
  return n->flops > 0 && isfinite(n->flops) && node_bytes(n) > 0;
}

// The node's arithmetic intensity (FLOP/byte).
static double node_intensity(const wm_map_node_t *n) {
  return n->intensity > 0 ? n->intensity : n->flops / node_bytes(n);
}

// GFLOP/s the node attains on backend |be|: the roof min(peak, bw * I),
// or below it when the plan adds communication to the node's time.
static double node_perf(const wm_map_node_t *n, const wm_map_cell_t *c,
                        const wm_map_backend_t *be) {
  double roof = fmin(be->peak_gflops, be->bandwidth_gbs * node_intensity(n));
  if (c->t_comm > 0 && c->t_roof > 0) {
    double got = n->flops / c->t_roof * 1e-9;
    if (got > 0 && got < roof) {
      return got;
    }
  }
  return roof;
}

// Axis ranges in whole decades holding every dot and the ridge point.
static void roofline_ranges(const wm_map_t *map, size_t b,
                            wm_report_plot_t *p) {
  const wm_map_backend_t *be = &map->backends[b];
  double ridge = be->peak_gflops / be->bandwidth_gbs;
  double imin = ridge, imax = ridge, pmin = be->peak_gflops;
  for (size_t i = 0; i < map->n_nodes; i++) {
    const wm_map_node_t *n = &map->nodes[i];
    if (!is_plotted(n)) {
      continue;
    }
    double in = node_intensity(n);
    double perf = node_perf(n, &n->cells[b], be);
    if (isfinite(in) && in > 0) {
      imin = fmin(imin, in);
      imax = fmax(imax, in);
    }
    if (isfinite(perf) && perf > 0) {
      pmin = fmin(pmin, perf);
    }
  }
  p->lx0 = floor(log10(imin) - 0.15);
  p->lx1 = ceil(log10(imax) + 0.15);
  while (p->lx1 - p->lx0 < 3) {
    p->lx1 += 1;
    if (p->lx1 - p->lx0 < 3) {
      p->lx0 -= 1;
    }
  }
  // Beyond ROOF_MAX_DECADES the plot is unreadable: clamp the far end
  // (its dots are drawn on the edge).
  if (p->lx1 - p->lx0 > ROOF_MAX_DECADES) {
    double mid = floor(log10(ridge));
    p->lx0 = fmax(p->lx0, mid - ROOF_MAX_DECADES / 2);
    p->lx1 = p->lx0 + ROOF_MAX_DECADES;
  }
  pmin = fmin(pmin, be->bandwidth_gbs * pow(10.0, p->lx0));
  pmin = fmin(pmin, wm_map_measured_min_gflops(map, b));
  p->ly1 = ceil(log10(be->peak_gflops) + 0.3);
  p->ly0 = fmax(floor(log10(pmin) - 0.15), p->ly1 - ROOF_MAX_DECADES);
  if (p->ly1 - p->ly0 < 2) {
    p->ly0 = p->ly1 - 2;
  }
}

// The roof polyline, the ridge point and their labels.
static void roofline_roof(const wm_map_backend_t *be, const wm_report_plot_t *p,
                          wm_strbuf_t *out) {
  double peak = be->peak_gflops, bw = be->bandwidth_gbs, ridge = peak / bw;
  // The slope starts where it enters the plot: the left or the bottom edge.
  double xa = fmax(pow(10.0, p->lx0), pow(10.0, p->ly0) / bw);
  double xb = pow(10.0, p->lx1);
  wm_strbuf_printf(out, "<polyline class=\"roof\" points=\"%.1f,%.1f",
                   wm_report_plot_x(p, xa),
                   wm_report_plot_y(p, fmin(peak, bw * xa)));
  if (ridge > xa && ridge < xb) {
    wm_strbuf_printf(out, " %.1f,%.1f", wm_report_plot_x(p, ridge),
                     wm_report_plot_y(p, peak));
  }
  wm_strbuf_printf(out, " %.1f,%.1f\"/>\n", wm_report_plot_x(p, xb),
                   wm_report_plot_y(p, fmin(peak, bw * xb)));
  char lab[96], b1[WM_REPORT_FMT_LEN];
  snprintf(lab, sizeof(lab), "peak %sFLOP/s", wm_report_fmt_si(peak * 1e9, b1));
  bool inside = ridge > xa && ridge < xb;
  double ry = wm_report_plot_y(p, peak);
  if (inside && wm_report_plot_x(p, ridge) - p->x0 > 150) {
    // Above the slope, left of the ridge, no dot can sit: label the peak
    // on a faint extension of the flat roof there.
    wm_strbuf_printf(out,
                     "<line class=\"ridge\" x1=\"%.1f\" y1=\"%.1f\" "
                     "x2=\"%.1f\" y2=\"%.1f\"/>\n",
                     p->x0, ry, wm_report_plot_x(p, ridge), ry);
    bool room = ry - p->y0 > 18;  // else below the line
    wm_report_svg_text(out, p->x0 + 6, room ? ry - 7 : ry + 16, "start", NULL,
                       lab);
  } else {
    wm_report_svg_text(out, p->x0 + p->w - 6, ry + 18, "end", NULL, lab);
  }
  if (!inside) {
    return;
  }
  double rx = wm_report_plot_x(p, ridge);
  wm_strbuf_printf(out,
                   "<line class=\"ridge\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                   "y2=\"%.1f\"/>\n<circle class=\"ridgept\" cx=\"%.1f\" "
                   "cy=\"%.1f\" r=\"4\" fill=\"#fff\" stroke=\"#1d232a\" "
                   "stroke-width=\"2\"/>\n",
                   rx, ry, rx, p->y0 + p->h, rx, ry);
  snprintf(lab, sizeof(lab), "ridge %.3g FLOP/B", ridge);
  bool right = rx > p->x0 + p->w * 0.75;
  wm_report_svg_text(out, right ? rx - 5 : rx + 5, p->y0 + p->h - 8,
                     right ? "end" : "start", NULL, lab);
  // The bandwidth label runs along the slope, just under it.
  double xm = sqrt(fmax(xa, ridge / 1000.0) * ridge);
  double dx = p->w / (p->lx1 - p->lx0), dy = p->h / (p->ly1 - p->ly0);
  double ang = -atan2(dy, dx) * 57.29577951308232;  // degrees
  double tx = wm_report_plot_x(p, xm), ty = wm_report_plot_y(p, bw * xm);
  snprintf(lab, sizeof(lab), "%sB/s", wm_report_fmt_si(bw * 1e9, b1));
  char rot[96];
  snprintf(rot, sizeof(rot), " transform=\"rotate(%.1f %.1f %.1f)\"", ang, tx,
           ty);
  wm_report_svg_text(out, tx + 6, ty + 16, "middle", rot, lab);
}

// One dot per node with FLOPs; larger dots first so small ones stay on top.
static void roofline_dots(const wm_map_t *map, size_t b,
                          const wm_report_plot_t *p, wm_strbuf_t *out) {
  const wm_map_backend_t *be = &map->backends[b];
  wm_report_rank_t *order =
      calloc(map->n_nodes ? map->n_nodes : 1, sizeof(*order));
  if (!order) {
    wm_report_svg_text(out, p->x0 + 10, p->y0 + 20, "start", NULL,
                       "out of memory");
    return;
  }
  size_t n_dots = 0;
  for (size_t i = 0; i < map->n_nodes; i++) {
    if (is_plotted(&map->nodes[i])) {
      order[n_dots].key = map->nodes[i].cells[b].t_roof;
      order[n_dots].index = i;
      n_dots++;
    }
  }
  qsort(order, n_dots, sizeof(*order), wm_report_rank_desc);
  wm_strbuf_printf(out, "<g class=\"dots\">\n");
  for (size_t k = 0; k < n_dots; k++) {
    const wm_map_node_t *n = &map->nodes[order[k].index];
    const wm_map_cell_t *c = &n->cells[b];
    double in = node_intensity(n), perf = node_perf(n, c, be);
    double share = be->t_roof > 0 ? c->t_roof / be->t_roof : 0;
    double r = DOT_R_MAX * sqrt(fmax(share, 0.0));
    r = r < DOT_R_MIN || !isfinite(r) ? DOT_R_MIN : r;
    const char *color = kBoundColor[bound_index(c->bound)];
    wm_strbuf_printf(out,
                     "<circle class=\"dot\" cx=\"%.1f\" cy=\"%.1f\" "
                     "r=\"%.1f\" fill=\"%s\" stroke=\"%s\"><title>",
                     wm_report_plot_x(p, in), wm_report_plot_y(p, perf), r,
                     color, color);
    wm_report_html_escape(out, n->name);
    wm_strbuf_printf(out, " (");
    esc_op(out, n->domain, n->op_type);
    wm_strbuf_printf(out, ")\nFLOPs ");
    put_si(out, n->flops);
    wm_strbuf_printf(out, ", bytes ");
    put_bytes(out, node_bytes(n));
    wm_strbuf_printf(out, ", %.3g FLOP/B\nt_roof ", in);
    put_time(out, c->t_roof);
    wm_strbuf_printf(out, " (");
    put_pct(out, c->t_roof, be->t_roof);
    wm_strbuf_printf(out, "), %s-bound</title></circle>\n",
                     bound_name(c->bound));
  }
  wm_strbuf_printf(out, "</g>\n");
  free(order);
}

static void roofline_plot(const wm_map_t *map, size_t b, wm_strbuf_t *out) {
  const wm_map_backend_t *be = &map->backends[b];
  wm_report_plot_t p = {.x0 = 74,
                        .y0 = 36,
                        .w = PLOT_W - 74 - 20,
                        .h = PLOT_H - 36 - 50,
                        .xlog = true,
                        .ylog = true};
  roofline_ranges(map, b, &p);
  wm_strbuf_printf(out, "<h3>");
  wm_report_html_escape(out, be->name);
  wm_strbuf_printf(out, " <span class=\"muted\">(");
  wm_report_html_escape(out, be->target);
  wm_strbuf_printf(out, "; peaks ");
  wm_report_html_escape(out, be->peak_source);
  wm_strbuf_printf(out, ")</span></h3>\n");
  char label[160];
  snprintf(label, sizeof(label), "roofline of %.100s", be->name);
  wm_report_svg_open(out, "roofline", PLOT_W, PLOT_H, label);
  wm_report_svg_axes(out, &p, NULL, NULL, "arithmetic intensity (FLOP/byte)",
                     "attainable GFLOP/s");
  // The legend names compute and memory always, the others when present.
  bool present[BOUND_KINDS] = {false, true, true, false};
  for (size_t i = 0; i < map->n_nodes; i++) {
    if (is_plotted(&map->nodes[i])) {
      present[bound_index(map->nodes[i].cells[b].bound)] = true;
    }
  }
  double x = p.x0;
  static const wm_map_bound_t kinds[] = {WM_BOUND_COMPUTE, WM_BOUND_MEMORY,
                                         WM_BOUND_COMMUNICATION,
                                         WM_BOUND_UNKNOWN};
  for (size_t k = 0; k < 4; k++) {
    if (!present[kinds[k]]) {
      continue;
    }
    char lab[48];
    snprintf(lab, sizeof(lab), "%s-bound", wm_map_bound_name(kinds[k]));
    x = wm_report_svg_legend_item(out, x, 20, kBoundColor[kinds[k]], lab);
  }
  roofline_roof(be, &p, out);
  roofline_dots(map, b, &p, out);
  wm_map_html_measured_dots(map, b, &p, out);
  wm_strbuf_printf(out, "</svg>\n");
  size_t zero = 0, bad = 0;
  for (size_t i = 0; i < map->n_nodes; i++) {
    const wm_map_node_t *n = &map->nodes[i];
    if (is_plotted(n)) {
      continue;
    }
    if (n->state != WM_MAP_NODE_OK) {
      bad++;
    } else {
      zero++;
    }
  }
  wm_strbuf_printf(out,
                   "<p class=\"muted\">One dot per node, its area "
                   "proportional to the node's share of the backend's "
                   "roofline time (hover for details). Dots sit on the roof "
                   "min(peak, bandwidth &times; intensity)");
  if (map->plan.enabled) {
    wm_strbuf_printf(out, ", or below it when communication adds time");
  }
  wm_strbuf_printf(out,
                   ". Left out: %zu without FLOPs (data movement has no "
                   "place on a log axis)",
                   zero);
  if (bad > 0) {
    wm_strbuf_printf(out, ", %zu not analysed", bad);
  }
  wm_strbuf_printf(out, ".");
  wm_map_html_measured_caption(map, b, out);
  wm_strbuf_printf(out, "</p>\n");
}

static void section_roofline(const wm_map_t *map, wm_strbuf_t *out) {
  wm_strbuf_printf(out, "<h2 id=\"roofline\">Roofline</h2>\n");
  for (size_t b = 0; b < map->n_backends; b++) {
    if (has_peaks(&map->backends[b])) {
      roofline_plot(map, b, out);
    }
  }
  for (size_t b = 0; b < map->n_backends; b++) {
    if (!has_peaks(&map->backends[b])) {
      wm_strbuf_printf(out, "<p class=\"muted\">No roofline for ");
      wm_report_html_escape(out, map->backends[b].name);
      wm_strbuf_printf(out, ": its peak FLOP/s or bandwidth is unknown.</p>\n");
    }
  }
  if (map->n_backends == 0) {
    wm_strbuf_printf(out, "<p class=\"muted\">No backends were mapped.</p>\n");
  }
}

// ----------------------------------------------------------- Pareto

// The backend whose times the Pareto chart and critical path use.
static size_t critical_backend(const wm_map_t *map) {
  return map->critical.backend < map->n_backends ? map->critical.backend : 0;
}

static void section_pareto(const wm_map_t *map, wm_strbuf_t *out) {
  wm_strbuf_printf(out, "<h2 id=\"pareto\">Time by op type</h2>\n");
  if (map->n_backends == 0 || map->n_types == 0) {
    wm_strbuf_printf(out, "<p class=\"muted\">Nothing to show.</p>\n");
    return;
  }
  size_t b = critical_backend(map);
  wm_report_bar_t *bars = calloc(map->n_types, sizeof(*bars));
  if (!bars) {
    wm_strbuf_printf(out, "<p class=\"muted\">Out of memory.</p>\n");
    return;
  }
  wm_arena_t arena;  // tooltips
  wm_arena_init(&arena);
  double total = 0;
  for (size_t i = 0; i < map->n_types; i++) {
    const wm_map_optype_t *ty = &map->types[i];
    double t = ty->cells[b].t_roof;
    wm_strbuf_t tip;
    wm_strbuf_init(&tip);
    if (ty->domain && ty->domain[0] && strcmp(ty->domain, "ai.onnx") != 0) {
      wm_strbuf_printf(&tip, "%s::", ty->domain);
    }
    wm_strbuf_printf(&tip, "%s (%zu nodes)", ty->op_type ? ty->op_type : "",
                     ty->count);
    bars[i].value = t;
    bars[i].label = ty->op_type;
    bars[i].title = wm_arena_strdup(&arena, wm_strbuf_str(&tip));
    wm_strbuf_deinit(&tip);
    if (t > 0 && isfinite(t)) {
      total += t;
    }
  }
  if (total > 0) {
    wm_strbuf_printf(out, "<p>Sum of roofline times per op type on <strong>");
    wm_report_html_escape(out, map->backends[b].name);
    wm_strbuf_printf(out,
                     "</strong>, largest first; the line is the "
                     "cumulative share of ");
    put_time(out, total);
    wm_strbuf_printf(out, ".</p>\n");
    wm_report_svg_pareto(out, bars, map->n_types, "roofline time (t_roof)",
                         "op types", "time by op type");
  } else {
    wm_strbuf_printf(out, "<p class=\"muted\">No roofline times on ");
    wm_report_html_escape(out, map->backends[b].name);
    wm_strbuf_printf(out, " (its peaks are unknown).</p>\n");
  }
  wm_arena_deinit(&arena);
  free(bars);
}

// --------------------------------------------------------- coverage

static void coverage_legend(wm_strbuf_t *out) {
  wm_strbuf_printf(out, "<p class=\"legend\">");
  for (int k = 0; k < WM_COVER_COUNT; k++) {
    wm_strbuf_printf(out, "<span class=\"sw\" style=\"background:%s\"></span>",
                     wm_map_cover_fill((wm_map_cover_t)k));
    const char *name = wm_map_cover_name((wm_map_cover_t)k);
    wm_report_html_escape(out, name);
    if (strcmp(name, kCoverShort[k]) != 0) {
      wm_strbuf_printf(out, " (%s)", kCoverShort[k]);
    }
  }
  wm_strbuf_printf(out, "</p>\n");
}

static void coverage_matrix(const wm_map_t *map, wm_strbuf_t *out) {
  wm_strbuf_printf(out,
                   "<table class=\"cov\">\n<tr><th>op type</th>"
                   "<th>nodes</th><th>FLOPs</th>");
  for (size_t b = 0; b < map->n_backends; b++) {
    wm_strbuf_printf(out, "<th>");
    wm_report_html_escape(out, map->backends[b].name);
    wm_strbuf_printf(out, "</th>");
  }
  wm_strbuf_printf(out, "</tr>\n");
  for (size_t i = 0; i < map->n_types; i++) {
    const wm_map_optype_t *ty = &map->types[i];
    wm_strbuf_printf(out, "<tr><td>");
    esc_op(out, ty->domain, ty->op_type);
    wm_strbuf_printf(out, "</td><td class=\"n\">%zu</td>", ty->count);
    td_si(out, ty->flops);
    for (size_t b = 0; b < map->n_backends; b++) {
      const size_t *count = ty->cells[b].count;
      int d = dominant_cover(count);
      if (d >= 0) {
        wm_strbuf_printf(out, "<td style=\"background:%s\">",
                         wm_map_cover_fill((wm_map_cover_t)d));
      } else {
        wm_strbuf_printf(out, "<td>");
      }
      cover_counts(out, count);
      wm_strbuf_printf(out, "</td>");
    }
    wm_strbuf_printf(out, "</tr>\n");
  }
  wm_strbuf_printf(out, "</table>\n");
}

static void backend_summary(const wm_map_t *map, wm_strbuf_t *out) {
  wm_strbuf_printf(out,
                   "<h3>Per backend</h3>\n<table>\n<tr><th>backend</th>"
                   "<th>nodes covered</th><th>FLOPs covered</th>"
                   "<th>t_roof</th><th>t_roof covered</th>"
                   "<th>partitions</th><th>boundary copies</th>"
                   "<th>boundary bytes</th><th>suitability</th>"
                   "<th>peak</th><th>bandwidth</th><th>ridge</th>"
                   "<th>peak source</th></tr>\n");
  double nodes = (double)map->n_nodes;
  for (size_t b = 0; b < map->n_backends; b++) {
    const wm_map_backend_t *be = &map->backends[b];
    wm_strbuf_printf(out, "<tr><td><strong>");
    wm_report_html_escape(out, be->name);
    wm_strbuf_printf(out, "</strong> ");
    wm_report_html_escape(out, be->version);
    if (be->fallback) {
      wm_strbuf_printf(out, " <span class=\"muted\">(fallback)</span>");
    }
    wm_strbuf_printf(out, "<br><span class=\"muted\">");
    wm_report_html_escape(out, be->target);
    wm_strbuf_printf(out, "</span></td><td class=\"n\">%zu (",
                     be->nodes_covered);
    put_pct(out, (double)be->nodes_covered, nodes);
    wm_strbuf_printf(out, ")</td>");
    td_pct(out, be->flops_covered, map->totals.flops);
    td_time(out, be->t_roof);
    td_time(out, be->t_roof_covered);
    wm_strbuf_printf(out, "<td class=\"n\">%zu</td><td class=\"n\">%zu</td>",
                     be->partitions, be->boundary_copies);
    td_bytes(out, (double)be->boundary_bytes);
    const char *suit = be->suitability ? be->suitability : "";
    bool known = strcmp(suit, "good") == 0 || strcmp(suit, "maybe") == 0 ||
                 strcmp(suit, "poor") == 0;
    wm_strbuf_printf(out, "<td class=\"%s\">", known ? suit : "");
    wm_report_html_escape(out, suit);
    wm_strbuf_printf(out, "</td><td class=\"n\">");
    if (be->peak_gflops > 0) {
      put_si(out, be->peak_gflops * 1e9);
      wm_strbuf_printf(out, "FLOP/s");
    } else {
      wm_strbuf_printf(out, "-");
    }
    wm_strbuf_printf(out, "</td><td class=\"n\">");
    if (be->bandwidth_gbs > 0) {
      put_si(out, be->bandwidth_gbs * 1e9);
      wm_strbuf_printf(out, "B/s");
    } else {
      wm_strbuf_printf(out, "-");
    }
    wm_strbuf_printf(out, "</td><td class=\"n\">");
    if (be->ridge > 0) {
      wm_strbuf_printf(out, "%.3g FLOP/B", be->ridge);
    } else {
      wm_strbuf_printf(out, "-");
    }
    wm_strbuf_printf(out, "</td><td>");
    wm_report_html_escape(out, be->peak_source);
    wm_strbuf_printf(out, "</td></tr>\n");
  }
  wm_strbuf_printf(out, "</table>\n");
}

static void backend_todo(const wm_map_backend_t *be, wm_strbuf_t *out) {
  wm_strbuf_printf(out, "<h3>Operators to write for ");
  wm_report_html_escape(out, be->name);
  wm_strbuf_printf(out, "</h3>\n");
  if (be->n_todo == 0) {
    wm_strbuf_printf(out,
                     "<p class=\"muted\">None: it takes every node "
                     "itself.</p>\n");
    return;
  }
  wm_strbuf_printf(out,
                   "<table>\n<tr><th>op type</th><th>nodes</th>"
                   "<th>FLOPs</th><th>reason</th><th>detail</th></tr>\n");
  for (size_t i = 0; i < be->n_todo; i++) {
    const wm_map_todo_t *t = &be->todo[i];
    wm_strbuf_printf(out, "<tr><td>");
    esc_op(out, t->domain, t->op_type);
    wm_strbuf_printf(out, "</td><td class=\"n\">%zu</td>", t->nodes);
    td_si(out, t->flops);
    wm_strbuf_printf(out, "<td>");
    wm_report_html_escape(out, wm_why_name(t->reason));
    wm_strbuf_printf(out, "</td><td class=\"name\">");
    wm_report_html_escape(out, t->detail);
    wm_strbuf_printf(out, "</td></tr>\n");
  }
  wm_strbuf_printf(out, "</table>\n");
}

static void section_coverage(const wm_map_t *map, wm_strbuf_t *out) {
  wm_strbuf_printf(out, "<h2 id=\"coverage\">Coverage</h2>\n");
  if (map->n_backends == 0) {
    wm_strbuf_printf(out, "<p class=\"muted\">No backends were mapped.</p>\n");
    return;
  }
  coverage_legend(out);
  coverage_matrix(map, out);
  backend_summary(map, out);
  for (size_t b = 0; b < map->n_backends; b++) {
    backend_todo(&map->backends[b], out);
  }
}

// ---------------------------------------------------- critical path

static void section_critical(const wm_map_t *map, wm_strbuf_t *out) {
  const wm_map_critical_t *c = &map->critical;
  wm_strbuf_printf(out, "<h2 id=\"critical\">Critical path</h2>\n");
  if (c->n_nodes == 0 || c->backend >= map->n_backends) {
    wm_strbuf_printf(out,
                     "<p class=\"muted\">No critical path: no backend "
                     "has roofline times.</p>\n");
    return;
  }
  wm_strbuf_printf(out, "<p>On <strong>");
  wm_report_html_escape(out, map->backends[c->backend].name);
  wm_strbuf_printf(out, "</strong>: %zu nodes, ", c->n_nodes);
  put_time(out, c->length);
  wm_strbuf_printf(out, " of ");
  put_time(out, c->total);
  wm_strbuf_printf(
      out, " total %s (",
      strcmp(c->weights, "t_roof") == 0 ? "roofline time" : "measured time");
  put_pct(out, c->length, c->total);
  wm_strbuf_printf(out, "); the rest could overlap with it.</p>\n");
  // Rows shown: every node, or the longest CRITICAL_MAX_ROWS in path order.
  bool *shown = calloc(c->n_nodes, sizeof(*shown));
  if (!shown) {
    return;
  }
  if (c->n_nodes > CRITICAL_MAX_ROWS) {
    wm_report_rank_t *order = calloc(c->n_nodes, sizeof(*order));
    if (!order) {
      free(shown);
      return;
    }
    for (size_t k = 0; k < c->n_nodes; k++) {
      size_t i = c->nodes[k];
      order[k].key = i < map->n_nodes ? map->nodes[i].weight : 0;
      order[k].index = k;
    }
    qsort(order, c->n_nodes, sizeof(*order), wm_report_rank_desc);
    for (size_t k = 0; k < CRITICAL_MAX_ROWS; k++) {
      shown[order[k].index] = true;
    }
    free(order);
    wm_strbuf_printf(out,
                     "<p class=\"muted\">The %d longest of its %zu nodes, in "
                     "path order; the cumulative time counts every node on "
                     "the path.</p>\n",
                     CRITICAL_MAX_ROWS, c->n_nodes);
  } else {
    for (size_t k = 0; k < c->n_nodes; k++) {
      shown[k] = true;
    }
  }
  wm_strbuf_printf(out,
                   "<table>\n<tr><th>step</th><th>node</th>"
                   "<th>op type</th><th>%s</th><th>share of path</th>"
                   "<th>cumulative</th></tr>\n",
                   strcmp(c->weights, "t_roof") == 0 ? "t_roof" : "time");
  double cum = 0;
  for (size_t k = 0; k < c->n_nodes; k++) {
    size_t i = c->nodes[k];
    if (i >= map->n_nodes) {
      continue;
    }
    const wm_map_node_t *n = &map->nodes[i];
    double t = n->weight;
    cum += t;
    if (!shown[k]) {
      continue;
    }
    wm_strbuf_printf(out, "<tr><td class=\"n\">%zu</td><td class=\"name\">",
                     k + 1);
    wm_report_html_escape(out, n->name);
    wm_strbuf_printf(out, "</td><td>");
    esc_op(out, n->domain, n->op_type);
    wm_strbuf_printf(out, "</td>");
    td_time(out, t);
    td_pct(out, t, c->length);
    td_time(out, cum);
    wm_strbuf_printf(out, "</tr>\n");
  }
  wm_strbuf_printf(out, "</table>\n");
  free(shown);
}

// ------------------------------------------------------------ graph
//
// The DAG as boxes in layers, top to bottom. A node's layer is the longest
// path to it from the graph's inputs; a node with no producer among the
// nodes (it reads only graph inputs and weights) sits just above its first
// consumer instead of far up in layer 0. Within a layer, nodes are ordered
// by the mean column of their producers and each takes the free column
// nearest that mean, so chains run straight down. A layer wider than
// GRAPH_MAX_COLS wraps onto further rows. Everything is O(nodes + edges)
// but the sort within each layer.

// Box size, gaps and margin of the graph picture (px).
#define GRAPH_BOX_W 84
#define GRAPH_BOX_H 22
#define GRAPH_GAP_X 14
#define GRAPH_GAP_Y 22
#define GRAPH_PAD 8
// The most boxes side by side; a wider layer wraps onto further rows.
#define GRAPH_MAX_COLS 16
// Larger graphs are not drawn (`--format dot` writes them for Graphviz).
#define GRAPH_MAX_NODES 5000
// Bytes of the op type shown in a box (all of it on hover).
#define GRAPH_LABEL_MAX 13

// Where each node's box goes: a row and a column of the grid.
typedef struct graph_layout {
  size_t *row;    // per node
  size_t *col;    // per node
  size_t n_rows;  // rows of boxes
  size_t n_cols;  // columns of boxes
  size_t n_layers;
} graph_layout_t;

typedef struct graph_slot {
  double key;    // mean column of the node's producers
  size_t index;  // node position
} graph_slot_t;

static int graph_slot_cmp(const void *a, const void *b) {
  const graph_slot_t *x = a, *y = b;
  if (x->key != y->key) {
    return x->key < y->key ? -1 : 1;
  }
  return x->index < y->index ? -1 : x->index > y->index;
}

static void graph_layout_deinit(graph_layout_t *l) {
  free(l->row);
  free(l->col);
}

// Lays out |map|'s nodes; false when out of memory.
static bool graph_layout(const wm_map_t *map, graph_layout_t *l) {
  size_t n = map->n_nodes;
  memset(l, 0, sizeof(*l));
  l->row = calloc(n, sizeof(size_t));
  l->col = calloc(n, sizeof(size_t));
  size_t *layer = calloc(n, sizeof(size_t));
  size_t *first_use = calloc(n, sizeof(size_t));  // min consumer layer
  size_t *start = calloc(n + 2, sizeof(size_t));  // bucket starts per layer
  size_t *order = calloc(n, sizeof(size_t));      // nodes by layer
  graph_slot_t *slots = calloc(n, sizeof(graph_slot_t));
  bool ok = l->row && l->col && layer && first_use && start && order && slots;
  if (!ok) {
    goto done;
  }
  // Longest path from the inputs; nodes come in execution order, so every
  // producer is laid out before its consumers.
  for (size_t i = 0; i < n; i++) {
    const wm_map_node_t *nd = &map->nodes[i];
    first_use[i] = SIZE_MAX;
    for (size_t k = 0; k < nd->n_preds; k++) {
      size_t p = nd->preds[k];
      if (p < i && layer[p] + 1 > layer[i]) {
        layer[i] = layer[p] + 1;
      }
    }
  }
  for (size_t i = 0; i < n; i++) {
    const wm_map_node_t *nd = &map->nodes[i];
    for (size_t k = 0; k < nd->n_preds; k++) {
      size_t p = nd->preds[k];
      if (p < i && layer[i] < first_use[p]) {
        first_use[p] = layer[i];
      }
    }
  }
  // Sources move down next to their first consumer; then empty layers go.
  size_t n_layers = 0;
  for (size_t i = 0; i < n; i++) {
    if (map->nodes[i].n_preds == 0 && first_use[i] != SIZE_MAX &&
        first_use[i] > 0) {
      layer[i] = first_use[i] - 1;
    }
    start[layer[i] + 1]++;
    n_layers = layer[i] + 1 > n_layers ? layer[i] + 1 : n_layers;
  }
  size_t used = 0;
  for (size_t y = 0; y < n_layers; y++) {
    size_t count = start[y + 1];
    start[y + 1] = used;  // the new index of layer y, for now
    used += count > 0;
  }
  for (size_t i = 0; i < n; i++) {
    layer[i] = start[layer[i] + 1];
  }
  l->n_layers = used;
  memset(start, 0, (n + 2) * sizeof(size_t));
  size_t widest = 0;
  for (size_t i = 0; i < n; i++) {
    start[layer[i] + 1]++;
  }
  for (size_t y = 0; y < l->n_layers; y++) {
    widest = start[y + 1] > widest ? start[y + 1] : widest;
    start[y + 1] += start[y];
  }
  for (size_t i = 0; i < n; i++) {
    order[start[layer[i]]++] = i;  // start[y] ends as layer y + 1's start
  }
  l->n_cols = widest < GRAPH_MAX_COLS ? widest : GRAPH_MAX_COLS;
  l->n_cols = l->n_cols ? l->n_cols : 1;
  size_t cols = l->n_cols, row = 0;
  for (size_t y = 0, from = 0; y < l->n_layers; y++) {
    size_t to = start[y], k = to - from;
    for (size_t j = 0; j < k; j++) {
      const wm_map_node_t *nd = &map->nodes[order[from + j]];
      double sum = 0;
      size_t placed = 0;
      for (size_t e = 0; e < nd->n_preds; e++) {
        if (nd->preds[e] < order[from + j]) {
          sum += (double)l->col[nd->preds[e]];
          placed++;
        }
      }
      slots[j].key = placed ? sum / (double)placed : (double)(cols - 1) / 2;
      slots[j].index = order[from + j];
    }
    qsort(slots, k, sizeof(*slots), graph_slot_cmp);
    // Rows of at most |cols| boxes, each box at the free column nearest
    // its key, left to right, then pushed left where the row runs out.
    for (size_t r0 = 0; r0 < k; r0 += cols, row++) {
      size_t m = k - r0 < cols ? k - r0 : cols;
      graph_slot_t *s = &slots[r0];
      for (size_t j = 0; j < m; j++) {
        double want = floor(s[j].key + 0.5);
        size_t c = want > 0 ? (size_t)want : 0;
        if (j > 0 && c <= l->col[s[j - 1].index]) {
          c = l->col[s[j - 1].index] + 1;
        }
        l->col[s[j].index] = c;
      }
      size_t limit = cols;
      for (size_t j = m; j-- > 0;) {
        if (l->col[s[j].index] >= limit) {
          l->col[s[j].index] = limit - 1;
        }
        limit = l->col[s[j].index];
        l->row[s[j].index] = row;
      }
    }
    from = to;
  }
  l->n_rows = row;
done:
  free(layer);
  free(first_use);
  free(start);
  free(order);
  free(slots);
  if (!ok) {
    graph_layout_deinit(l);
    memset(l, 0, sizeof(*l));
  }
  return ok;
}

static long graph_x(size_t col) {
  return GRAPH_PAD + (long)col * (GRAPH_BOX_W + GRAPH_GAP_X);
}

static long graph_y(size_t row) {
  return GRAPH_PAD + (long)row * (GRAPH_BOX_H + GRAPH_GAP_Y);
}

// The edge from node |p| to node |c|: an S-curve to the next row; past
// boxes in between, down the gap right of the further-right column (and
// along the gaps between rows), so it never crosses a box.
static void graph_edge(const graph_layout_t *l, size_t p, size_t c,
                       bool critical, wm_strbuf_t *out) {
  long x1 = graph_x(l->col[p]) + GRAPH_BOX_W / 2;
  long y1 = graph_y(l->row[p]) + GRAPH_BOX_H;
  long x2 = graph_x(l->col[c]) + GRAPH_BOX_W / 2;
  long y2 = graph_y(l->row[c]);
  const char *cls = critical ? " class=\"cr\"" : "";
  if (l->row[c] == l->row[p] + 1) {
    long ym = (y1 + y2) / 2;
    if (x1 == x2) {
      wm_strbuf_printf(out, "<path%s d=\"M%ld,%ldV%ld\"/>\n", cls, x1, y1, y2);
    } else {
      wm_strbuf_printf(out,
                       "<path%s d=\"M%ld,%ldC%ld,%ld %ld,%ld %ld,%ld\"/>\n",
                       cls, x1, y1, x1, ym, x2, ym, x2, y2);
    }
    return;
  }
  size_t gc = l->col[p] > l->col[c] ? l->col[p] : l->col[c];
  long xg = graph_x(gc) + GRAPH_BOX_W + GRAPH_GAP_X / 2;
  long ya = y1 + GRAPH_GAP_Y / 2, yb = y2 - GRAPH_GAP_Y / 2;
  wm_strbuf_printf(out, "<path%s d=\"M%ld,%ldV%ldH%ldV%ldH%ldV%ld\"/>\n", cls,
                   x1, y1, ya, xg, yb, x2, y2);
}

// A node's box: its fill is how backend |b| covers it; the tooltip names
// it and says how every backend covers it.
static void graph_box(const wm_map_t *map, const graph_layout_t *l, size_t i,
                      size_t b, wm_strbuf_t *out) {
  const wm_map_node_t *n = &map->nodes[i];
  const char *fill = "#ffffff";
  if (b < map->n_backends && n->cells) {
    fill = wm_map_cover_fill(n->cells[b].cover);
  }
  wm_strbuf_printf(out, "<g class=\"gn%s%s\" data-i=\"%zu\"><title>",
                   n->critical ? " cr" : "",
                   n->state != WM_MAP_NODE_OK ? " bad" : "", i);
  wm_report_html_escape(out, n->name);
  wm_strbuf_printf(out, " (");
  esc_op(out, n->domain, n->op_type);
  wm_strbuf_printf(out, ")");
  if (n->state != WM_MAP_NODE_OK) {
    wm_strbuf_printf(out, "\nnot analysed: ");
    wm_report_html_escape(out, wm_map_state_name(n->state));
  }
  for (size_t k = 0; n->cells && k < map->n_backends; k++) {
    const wm_map_cell_t *c = &n->cells[k];
    wm_strbuf_printf(out, "\n");
    wm_report_html_escape(out, map->backends[k].name);
    wm_strbuf_printf(out, ": ");
    wm_report_html_escape(out, wm_map_cover_name(c->cover));
    if (c->t_roof > 0) {
      wm_strbuf_printf(out, ", t_roof ");
      put_time(out, c->t_roof);
    }
  }
  if (n->critical) {
    wm_strbuf_printf(out, "\non the critical path");
  }
  long x = graph_x(l->col[i]), y = graph_y(l->row[i]);
  wm_strbuf_printf(out,
                   "</title><rect x=\"%ld\" y=\"%ld\" width=\"%d\" "
                   "height=\"%d\" fill=\"%s\"/><text x=\"%ld\" y=\"%ld\">",
                   x, y, GRAPH_BOX_W, GRAPH_BOX_H, fill, x + GRAPH_BOX_W / 2,
                   y + GRAPH_BOX_H / 2 + 4);
  wm_report_html_escape_cut(out, n->op_type ? n->op_type : "", GRAPH_LABEL_MAX);
  wm_strbuf_printf(out, "</text></g>\n");
}

// A legend swatch: |style| is the swatch's CSS, |label| is HTML.
static void legend_swatch(wm_strbuf_t *out, const char *style,
                          const char *label) {
  wm_strbuf_printf(out, "<span class=\"sw\" style=\"%s\"></span>%s", style,
                   label);
}

static void graph_legend(const wm_map_t *map, size_t b, wm_strbuf_t *out) {
  wm_strbuf_printf(out, "<p class=\"legend\">");
  if (b < map->n_backends) {
    for (int k = 0; k < WM_COVER_COUNT; k++) {
      char style[48];
      snprintf(style, sizeof(style), "background:%s",
               wm_map_cover_fill((wm_map_cover_t)k));
      legend_swatch(out, style, wm_map_cover_name((wm_map_cover_t)k));
    }
  }
  legend_swatch(out, "border:2px solid #d62728", "critical path");
  legend_swatch(out, "border:1px dashed #b3261e", "not analysed");
  wm_strbuf_printf(out, "</p>\n");
}

static void section_graph(const wm_map_t *map, wm_strbuf_t *out) {
  wm_strbuf_printf(out, "<h2 id=\"graph\">Graph</h2>\n");
  size_t n = map->n_nodes, b = critical_backend(map);
  if (n == 0) {
    wm_strbuf_printf(out, "<p class=\"muted\">No nodes.</p>\n");
    return;
  }
  if (n > GRAPH_MAX_NODES) {
    wm_strbuf_printf(out,
                     "<p class=\"muted\">Not drawn: %zu nodes are more than "
                     "the %d this page draws; <code>wmap map --format "
                     "dot</code> writes the graph for Graphviz.</p>\n",
                     n, GRAPH_MAX_NODES);
    return;
  }
  graph_layout_t l;
  size_t *next = wm_map_path_next(map);  // successor on the path
  if (!next || !graph_layout(map, &l)) {
    free(next);
    wm_strbuf_printf(out, "<p class=\"muted\">Out of memory.</p>\n");
    return;
  }
  size_t edges = 0;
  for (size_t i = 0; i < n; i++) {
    for (size_t k = 0; k < map->nodes[i].n_preds; k++) {
      edges += map->nodes[i].preds[k] < n;
    }
  }
  wm_strbuf_printf(out,
                   "<p>%zu nodes and %zu edges in %zu layers, top to "
                   "bottom: a node's layer is the longest path to it from "
                   "the graph's inputs (a node reading only inputs and "
                   "weights sits just above its first consumer; layers wider "
                   "than %d boxes wrap). ",
                   n, edges, l.n_layers, GRAPH_MAX_COLS);
  if (b < map->n_backends) {
    wm_strbuf_printf(out, "Boxes are filled by how <strong>");
    wm_report_html_escape(out, map->backends[b].name);
    wm_strbuf_printf(out, "</strong> covers each node");
  } else {
    wm_strbuf_printf(out, "No backend was mapped, so boxes are not filled");
  }
  wm_strbuf_printf(out,
                   "; the critical path is outlined in red. Hover a box "
                   "for its name and how each backend covers it.</p>\n");
  graph_legend(map, b, out);
  int w = (int)(2 * GRAPH_PAD + l.n_cols * (GRAPH_BOX_W + GRAPH_GAP_X));
  int h = (int)(2 * GRAPH_PAD + l.n_rows * (GRAPH_BOX_H + GRAPH_GAP_Y) -
                GRAPH_GAP_Y);
  char label[160];
  snprintf(label, sizeof(label), "the graph of %.100s",
           map->model        ? map->model
           : map->graph_name ? map->graph_name
                             : "");
  wm_strbuf_printf(out, "<div class=\"graphbox\">\n");
  wm_report_svg_open(out, "graph", w, h, label);
  // Edges under the boxes; the critical ones last, on top of the others.
  for (int pass = 0; pass < 2; pass++) {
    wm_strbuf_printf(out, "<g class=\"ge\">\n");
    for (size_t i = 0; i < n; i++) {
      const wm_map_node_t *nd = &map->nodes[i];
      for (size_t k = 0; k < nd->n_preds; k++) {
        size_t p = nd->preds[k];
        bool hot = p < n && next[p] == i;
        if (p < n && hot == (pass == 1)) {
          graph_edge(&l, p, i, hot, out);
        }
      }
    }
    wm_strbuf_printf(out, "</g>\n");
  }
  for (size_t i = 0; i < n; i++) {
    graph_box(map, &l, i, b, out);
  }
  wm_strbuf_printf(out, "</svg>\n</div>\n");
  graph_layout_deinit(&l);
  free(next);
}

// ------------------------------------------------------------ nodes

static void node_row(const wm_map_t *map, const wm_map_node_t *n,
                     wm_strbuf_t *out) {
  const char *cls = n->state != WM_MAP_NODE_OK ? " class=\"bad\""
                    : n->critical              ? " class=\"crit\""
                                               : "";
  wm_strbuf_printf(out, "<tr%s><td class=\"n\">%d</td><td class=\"name\">", cls,
                   (int)n->index);
  wm_report_html_escape(out, n->name);
  wm_strbuf_printf(out, "</td><td>");
  esc_op(out, n->domain, n->op_type);
  wm_strbuf_printf(out, "</td><td>");
  wm_report_html_escape(out, wm_map_state_name(n->state));
  if (n->note && n->note[0]) {
    wm_strbuf_printf(out, ": ");
    wm_report_html_escape(out, n->note);
  }
  wm_strbuf_printf(out, "</td>");
  td_si(out, n->macs);
  td_si(out, n->flops);
  td_bytes(out, (double)n->act_in_bytes);
  td_bytes(out, (double)n->weight_bytes);
  td_bytes(out, (double)n->out_bytes);
  wm_strbuf_printf(out, "<td class=\"n\">%.3g</td>", n->intensity);
  for (size_t b = 0; b < map->n_backends; b++) {
    const wm_map_cell_t *c = &n->cells[b];
    size_t k =
        (size_t)c->cover < WM_COVER_COUNT ? (size_t)c->cover : WM_COVER_MISSING;
    wm_strbuf_printf(out, "<td class=\"n\" style=\"background:%s\"",
                     wm_map_cover_fill((wm_map_cover_t)k));
    if (c->detail && c->detail[0]) {
      wm_strbuf_printf(out, " title=\"");
      wm_report_html_escape(out, c->detail);
      wm_strbuf_printf(out, "\"");
    }
    wm_strbuf_printf(out, ">%s &middot; %s &middot; ", kCoverShort[k],
                     bound_name(c->bound));
    put_time(out, c->t_roof);
    wm_strbuf_printf(out, "</td>");
  }
  td_time(out, n->critical ? 0.0 : n->slack);  // hides rounding noise
  wm_strbuf_printf(out, "</tr>\n");
}

static void section_nodes(const wm_map_t *map, wm_strbuf_t *out) {
  wm_strbuf_printf(out, "<h2 id=\"nodes\">Nodes</h2>\n");
  wm_strbuf_printf(out,
                   "<details%s><summary>All %zu nodes in execution order "
                   "(bytes: activations in, weights, outputs; per backend: "
                   "cover &middot; bound &middot; t_roof; slack on the "
                   "critical-path backend)</summary>\n",
                   map->n_nodes <= 40 ? " open" : "", map->n_nodes);
  wm_strbuf_printf(out,
                   "<table class=\"nodes\">\n<tr><th>#</th><th>node</th>"
                   "<th>op type</th><th>state</th><th>MACs</th>"
                   "<th>FLOPs</th><th>in</th><th>weights</th>"
                   "<th>out</th><th>FLOP/B</th>");
  for (size_t b = 0; b < map->n_backends; b++) {
    wm_strbuf_printf(out, "<th>");
    wm_report_html_escape(out, map->backends[b].name);
    wm_strbuf_printf(out, "</th>");
  }
  wm_strbuf_printf(out, "<th>slack</th></tr>\n");
  for (size_t i = 0; i < map->n_nodes; i++) {
    node_row(map, &map->nodes[i], out);
  }
  wm_strbuf_printf(out, "</table>\n</details>\n");
}

// ------------------------------------------------------------- plan

static void plan_collectives(const wm_map_plan_t *pl, wm_strbuf_t *out) {
  if (pl->n_coll == 0) {
    wm_strbuf_printf(out,
                     "<p class=\"muted\">The plan needs no "
                     "collectives.</p>\n");
    return;
  }
  wm_strbuf_printf(out,
                   "<table>\n<tr><th>collective</th><th>why</th>"
                   "<th>tensor</th><th>ranks</th><th>per forward</th>"
                   "<th>per step</th><th>bytes per call</th>"
                   "<th>wire bytes per step</th><th>t per call</th></tr>\n");
  for (size_t i = 0; i < pl->n_coll; i++) {
    const wm_map_collective_t *c = &pl->coll[i];
    wm_strbuf_printf(out, "<tr><td>");
    wm_report_html_escape(out, wm_map_coll_name(c->kind));
    wm_strbuf_printf(out, "</td><td>");
    wm_report_html_escape(out, c->why);
    wm_strbuf_printf(out, "</td><td class=\"name\">");
    if (c->tensor && c->tensor[0]) {
      wm_report_html_escape(out, c->tensor);
    } else {
      wm_strbuf_printf(out, "<span class=\"muted\">gradients</span>");
    }
    wm_strbuf_printf(out, "</td><td class=\"n\">%d</td>", (int)c->ranks);
    td_si(out, c->per_forward);
    td_si(out, c->per_step);
    td_bytes(out, (double)c->bytes);
    td_bytes(out, c->wire_bytes);
    td_time(out, c->t_call);
    wm_strbuf_printf(out, "</tr>\n");
  }
  wm_strbuf_printf(out, "</table>\n");
}

// Horizontal bars of t_roof per pipeline stage.
static void plan_stage_bars(const wm_map_plan_t *pl, wm_strbuf_t *out) {
  int stages = pl->spec.pp;
  if (stages <= 0 || !pl->stage_t_roof) {
    return;
  }
  int shown = stages > 64 ? 64 : stages;
  double tmax = 0;
  for (int s = 0; s < shown; s++) {
    tmax = fmax(tmax, pl->stage_t_roof[s]);
  }
  if (!(tmax > 0) || !isfinite(tmax)) {
    return;
  }
  const double row = 24, x0 = 80, w = PLOT_W - 80 - 170;
  int height = (int)(row * shown + 12);
  wm_report_svg_open(out, "stages", PLOT_W, height,
                     "t_roof per pipeline stage");
  for (int s = 0; s < shown; s++) {
    double y = 6 + row * s, bw = pl->stage_t_roof[s] / tmax * w;
    char lab[64], b1[WM_REPORT_FMT_LEN], b2[WM_REPORT_FMT_LEN];
    snprintf(lab, sizeof(lab), "stage %d", s);
    wm_report_svg_text(out, x0 - 8, y + 15, "end", NULL, lab);
    wm_strbuf_printf(out,
                     "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                     "height=\"%.1f\" fill=\"#4e79a7\"/>\n",
                     x0, y + 2, bw, row - 6);
    snprintf(lab, sizeof(lab), "%s, %sFLOP",
             wm_report_fmt_time(pl->stage_t_roof[s], b1),
             wm_report_fmt_si(pl->stage_flops ? pl->stage_flops[s] : 0, b2));
    wm_report_svg_text(out, x0 + bw + 6, y + 15, "start", NULL, lab);
  }
  wm_strbuf_printf(out, "</svg>\n");
  if (shown < stages) {
    wm_strbuf_printf(out, "<p class=\"muted\">First %d of %d stages.</p>\n",
                     shown, stages);
  }
}

static void section_plan(const wm_map_t *map, wm_strbuf_t *out) {
  const wm_map_plan_t *pl = &map->plan;
  if (!pl->enabled) {
    return;
  }
  const wm_map_parallel_t *sp = &pl->spec;
  wm_strbuf_printf(out,
                   "<h2 id=\"plan\">Parallel plan</h2>\n<p>dp=%d, tp=%d, "
                   "pp=%d, %d microbatches, %s, link ",
                   (int)sp->dp, (int)sp->tp, (int)sp->pp, (int)sp->microbatches,
                   sp->inference ? "inference" : "training");
  put_si(out, pl->link_gbs * 1e9);
  wm_strbuf_printf(out, "B/s per rank.</p>\n");
  plan_collectives(pl, out);
  wm_strbuf_printf(out, "<table class=\"kv\">\n");
  wm_report_html_kv_open(out, "wire bytes per rank per step");
  put_bytes(out, pl->wire_bytes);
  wm_report_html_kv_close(out);
  wm_report_html_kv_open(out, "communication per step");
  put_time(out, pl->t_comm);
  wm_report_html_kv_close(out);
  wm_report_html_kv_open(out, "pipeline bubble");
  put_pct(out, pl->bubble, 1.0);
  wm_strbuf_printf(out,
                   " of the step <span class=\"muted\">((p-1)/(m+p-1)); "
                   "");
  put_pct(out, pl->bubble_ideal, 1.0);
  wm_strbuf_printf(out, " of the ideal time ((p-1)/m)</span>");
  wm_report_html_kv_close(out);
  wm_strbuf_printf(out, "</table>\n");
  if (sp->pp > 1 || pl->stage_t_roof) {
    wm_strbuf_printf(out, "<h3>Roofline time per stage");
    if (map->n_backends > 0) {
      wm_strbuf_printf(out, " on ");
      wm_report_html_escape(out, map->backends[critical_backend(map)].name);
    }
    wm_strbuf_printf(out, "</h3>\n");
    plan_stage_bars(pl, out);
  }
}

// ------------------------------------------------------------- page

void wm_map_to_html(const wm_map_t *map, wm_strbuf_t *out) {
  section_head(map, out);
  section_header(map, out);
  section_totals(map, out);
  section_roofline(map, out);
  section_pareto(map, out);
  section_coverage(map, out);
  section_critical(map, out);
  section_graph(map, out);
  section_nodes(map, out);
  section_plan(map, out);
  wm_strbuf_printf(out, "<p class=\"muted\">" WM_MAP_FORMAT
                        " &middot; times are roofline estimates from peak "
                        "FLOP/s and bandwidth, not measurements.</p>\n"
                        "</main>\n</body>\n</html>\n");
}
