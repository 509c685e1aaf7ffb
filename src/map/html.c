// The workload map as one self-contained HTML5 page: inline CSS and inline
// SVG plots (roofline, Pareto of op types, stage bars), no script and
// nothing fetched, so it opens offline and can be mailed as one file. Every
// string that comes from the model or a plugin is escaped.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "wmap/session.h"

// Plots are drawn at this size (CSS pixels).
#define PLOT_W 720
#define PLOT_H 420
// The Pareto chart shows at most this many bars; the rest become "other".
#define PARETO_MAX_BARS 25
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

// Appends |s| with & < > " ' escaped; NULL appends nothing.
static void esc(wm_strbuf_t *out, const char *s) {
  if (!s) {
    return;
  }
  const char *run = s;
  for (const char *p = s; *p; p++) {
    const char *rep = NULL;
    switch (*p) {
      case '&':
        rep = "&amp;";
        break;
      case '<':
        rep = "&lt;";
        break;
      case '>':
        rep = "&gt;";
        break;
      case '"':
        rep = "&quot;";
        break;
      case '\'':
        rep = "&#39;";
        break;
      default:
        break;
    }
    if (rep) {
      wm_strbuf_append(out, run, (size_t)(p - run));
      wm_strbuf_append(out, rep, strlen(rep));
      run = p + 1;
    }
  }
  wm_strbuf_append(out, run, strlen(run));
}

// Appends at most |max| bytes of |s| escaped, with "..." when cut (never
// inside a UTF-8 sequence).
static void esc_cut(wm_strbuf_t *out, const char *s, size_t max) {
  if (!s || strlen(s) <= max) {
    esc(out, s);
    return;
  }
  size_t n = max - 3;
  while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) {
    n--;
  }
  char buf[64];
  if (n >= sizeof(buf)) {
    n = sizeof(buf) - 1;
  }
  memcpy(buf, s, n);
  buf[n] = '\0';
  esc(out, buf);
  wm_strbuf_printf(out, "...");
}

// Appends an op type, prefixed by its domain when not the default one.
static void esc_op(wm_strbuf_t *out, const char *domain, const char *op) {
  if (domain && domain[0] && strcmp(domain, "ai.onnx") != 0) {
    esc(out, domain);
    wm_strbuf_printf(out, "::");
  }
  esc(out, op);
}

static void put_si(wm_strbuf_t *out, double v) {
  char b[WM_MAP_FMT_LEN];
  wm_strbuf_printf(out, "%s", wm_map_fmt_si(v, b));
}

static void put_bytes(wm_strbuf_t *out, double v) {
  char b[WM_MAP_FMT_LEN];
  wm_strbuf_printf(out, "%s", wm_map_fmt_bytes(v, b));
}

static void put_time(wm_strbuf_t *out, double v) {
  char b[WM_MAP_FMT_LEN];
  wm_strbuf_printf(out, "%s", wm_map_fmt_time(v, b));
}

static void put_pct(wm_strbuf_t *out, double part, double whole) {
  char b[WM_MAP_FMT_LEN];
  wm_strbuf_printf(out, "%s", wm_map_fmt_pct(part, whole, b));
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

// A key/value row of a two-column table; |value| is already HTML.
static void kv_open(wm_strbuf_t *out, const char *key) {
  wm_strbuf_printf(out, "<tr><th>%s</th><td>", key);
}

static void kv_close(wm_strbuf_t *out) {
  wm_strbuf_printf(out, "</td></tr>\n");
}

// ----------------------------------------------------------- colours

static const char *const kCoverFill[WM_COVER_COUNT] = {
    "#cfe2f3",  // vendor library: blue
    "#d9ead3",  // native: green
    "#e6dbf5",  // generated: purple
    "#fce5cd",  // fallback: orange
    "#f4cccc",  // missing: red
};
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

// An index with the value it is sorted by.
typedef struct ranked {
  double key;
  size_t index;
} ranked_t;

// Larger keys first; equal keys in index order (deterministic).
static int cmp_ranked_desc(const void *a, const void *b) {
  const ranked_t *x = a, *y = b;
  if (x->key != y->key) {
    return x->key < y->key ? 1 : -1;
  }
  return (x->index > y->index) - (x->index < y->index);
}

// ------------------------------------------------------ SVG helpers

// A plot area in px and its axis ranges (log10 units on log axes).
typedef struct plot {
  double x0, y0, w, h;  // plot area: left, top, width, height
  double lx0, lx1;      // x range (log10 of the data range on log axes)
  double ly0, ly1;      // y range
} plot_t;

// The fraction of the way |v| lies from 10^lo to 10^hi, clamped to [0, 1]
// so that nothing is ever drawn outside the plot.
static double log_frac(double v, double lo, double hi) {
  double t = (log10(v) - lo) / (hi - lo);
  return t >= 0 ? (t <= 1 ? t : 1) : 0;  // NaN and -inf go to 0
}

static double log_x(const plot_t *p, double v) {
  return p->x0 + log_frac(v, p->lx0, p->lx1) * p->w;
}

static double log_y(const plot_t *p, double v) {
  return p->y0 + p->h - log_frac(v, p->ly0, p->ly1) * p->h;
}

static void svg_open(wm_strbuf_t *out, const char *cls, int w, int h,
                     const char *label) {
  wm_strbuf_printf(out,
                   "<svg class=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" "
                   "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                   "role=\"img\" aria-label=\"",
                   cls, w, h, w, h);
  esc(out, label);
  wm_strbuf_printf(out, "\">\n");
}

// A label for 10^e: "0.01", "1", "100", "10k", "1M", "1e-5".
static void decade_label(int e, char *buf, size_t cap) {
  static const char *const big[] = {"", "k", "M", "G", "T", "P", "E"};
  if (e >= 0 && e < 21) {
    static const char *const mant[] = {"1", "10", "100"};
    snprintf(buf, cap, "%s%s", mant[e % 3], big[e / 3]);
  } else if (e < 0 && e >= -3) {
    snprintf(buf, cap, "%.*f", -e, pow(10.0, e));
  } else {
    snprintf(buf, cap, "1e%d", e);
  }
}

static void svg_text(wm_strbuf_t *out, double x, double y, const char *anchor,
                     const char *extra, const char *text) {
  wm_strbuf_printf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s>", x,
                   y, anchor, extra ? extra : "");
  esc(out, text);
  wm_strbuf_printf(out, "</text>\n");
}

// Frame, decade grid, minor ticks, decade labels and titles of a log-log
// plot whose ranges are whole decades.
static void svg_log_axes(wm_strbuf_t *out, const plot_t *p, const char *xtitle,
                         const char *ytitle) {
  char lab[32];
  wm_strbuf_printf(out, "<g class=\"axes\">\n");
  int ex0 = (int)lround(p->lx0), ex1 = (int)lround(p->lx1);
  int ey0 = (int)lround(p->ly0), ey1 = (int)lround(p->ly1);
  int xstep = ex1 - ex0 > 10 ? 2 : 1, ystep = ey1 - ey0 > 8 ? 2 : 1;
  for (int e = ex0; e <= ex1; e++) {
    double x = log_x(p, pow(10.0, e));
    wm_strbuf_printf(out,
                     "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                     "y2=\"%.1f\"/>\n",
                     x, p->y0, x, p->y0 + p->h);
    for (int m = 2; m <= 9 && e < ex1; m++) {
      double xm = log_x(p, m * pow(10.0, e));
      wm_strbuf_printf(out,
                       "<line class=\"tick\" x1=\"%.1f\" y1=\"%.1f\" "
                       "x2=\"%.1f\" y2=\"%.1f\"/>\n",
                       xm, p->y0 + p->h, xm, p->y0 + p->h - 4);
    }
    if ((e - ex0) % xstep == 0) {
      decade_label(e, lab, sizeof(lab));
      svg_text(out, x, p->y0 + p->h + 16, "middle", NULL, lab);
    }
  }
  for (int e = ey0; e <= ey1; e++) {
    double y = log_y(p, pow(10.0, e));
    wm_strbuf_printf(out,
                     "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                     "y2=\"%.1f\"/>\n",
                     p->x0, y, p->x0 + p->w, y);
    for (int m = 2; m <= 9 && e < ey1; m++) {
      double ym = log_y(p, m * pow(10.0, e));
      wm_strbuf_printf(out,
                       "<line class=\"tick\" x1=\"%.1f\" y1=\"%.1f\" "
                       "x2=\"%.1f\" y2=\"%.1f\"/>\n",
                       p->x0, ym, p->x0 + 4, ym);
    }
    if ((e - ey0) % ystep == 0) {
      decade_label(e, lab, sizeof(lab));
      svg_text(out, p->x0 - 6, y + 4, "end", NULL, lab);
    }
  }
  wm_strbuf_printf(out,
                   "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                   "height=\"%.1f\"/>\n",
                   p->x0, p->y0, p->w, p->h);
  svg_text(out, p->x0 + p->w / 2, p->y0 + p->h + 36, "middle",
           " class=\"title\"", xtitle);
  char rot[96];
  snprintf(rot, sizeof(rot),
           " class=\"title\" transform=\"rotate(-90 %.1f %.1f)\"", 18.0,
           p->y0 + p->h / 2);
  svg_text(out, 18, p->y0 + p->h / 2, "middle", rot, ytitle);
  wm_strbuf_printf(out, "</g>\n");
}

// A legend row of coloured dots from |x| at |y|; returns the x after it.
static double svg_legend_item(wm_strbuf_t *out, double x, double y,
                              const char *color, const char *label) {
  wm_strbuf_printf(out,
                   "<circle class=\"lg\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" "
                   "fill=\"%s\"/>\n",
                   x + 5, y - 4, color);
  svg_text(out, x + 14, y, "start", NULL, label);
  return x + 14 + 7.0 * (double)strlen(label) + 18;
}

// A round step (1, 2 or 5 x 10^k) giving about |n| ticks up to |max| > 0.
static double nice_step(double max, int n) {
  double raw = max / n;
  double mag = pow(10.0, floor(log10(raw)));
  double f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

// ----------------------------------------------------------- header

static void section_head(const wm_map_t *map, wm_strbuf_t *out) {
  wm_strbuf_printf(out,
                   "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
                   "<meta charset=\"utf-8\">\n"
                   "<meta name=\"viewport\" content=\"width=device-width, "
                   "initial-scale=1\">\n<meta name=\"generator\" "
                   "content=\"wmap map (" WM_MAP_FORMAT ")\">\n<title>");
  wm_strbuf_printf(out, "workload map: ");
  esc(out, map->model ? map->model : map->graph_name);
  wm_strbuf_printf(out, "</title>\n");
  wm_strbuf_printf(
      out,
      "<style>\n"
      "body{margin:0;background:#fff;color:#1d232a;font:14px/1.45 "
      "system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\","
      "Arial,sans-serif}\n"
      "main{max-width:1200px;margin:0 auto;padding:12px 24px 48px}\n"
      "h1{font-size:24px;margin:12px 0 4px}\n"
      "h2{font-size:19px;margin:32px 0 8px;padding-bottom:4px;"
      "border-bottom:1px solid #d5dae0}\n"
      "h3{font-size:15px;margin:18px 0 6px}\n"
      "nav a{margin-right:14px;color:#1f5fa8;text-decoration:none}\n"
      "table{border-collapse:collapse;margin:6px 0 14px;font-size:13px}\n"
      "th,td{border:1px solid #d5dae0;padding:3px 8px;text-align:left;"
      "vertical-align:top}\n"
      "th{background:#f2f4f7;font-weight:600}\n"
      "td.n{text-align:right;white-space:nowrap;"
      "font-variant-numeric:tabular-nums}\n"
      "table.kv th{min-width:190px}\n"
      "td.name{max-width:340px;overflow-wrap:anywhere}\n"
      "tr.bad td{background:#fdecea}\n"
      "tr.crit td:first-child{border-left:4px solid #e4572e}\n"
      ".notes{background:#fff8e1;border:1px solid #f0c36d;"
      "border-left:6px solid #e0a800;padding:6px 16px;margin:14px 0}\n"
      ".notes li{margin:2px 0}\n"
      ".muted{color:#5b6773}\n"
      ".sw{display:inline-block;width:12px;height:12px;margin:0 4px 0 14px;"
      "border:1px solid #9aa4ae;vertical-align:-1px}\n"
      ".good{color:#1e7b34;font-weight:600}.maybe{color:#a86b00;"
      "font-weight:600}.poor{color:#b3261e;font-weight:600}\n"
      "svg{display:block;margin:6px 0 4px;background:#fff;"
      "max-width:100%%;height:auto}\n"
      "svg text{font-size:12px;fill:#1d232a}\n"
      "svg text.title{font-size:13px;font-weight:600}\n"
      "svg text.small{font-size:11px;fill:#3b4650}\n"
      "svg .grid{stroke:#e3e7ec;stroke-width:1}\n"
      "svg .tick{stroke:#8d99a6;stroke-width:1}\n"
      "svg .frame{fill:none;stroke:#5b6773;stroke-width:1}\n"
      "svg .roof{fill:none;stroke:#1d232a;stroke-width:2.5}\n"
      "svg .ridge{stroke:#5b6773;stroke-width:1;stroke-dasharray:4 3}\n"
      "svg .dot{fill-opacity:.55;stroke-width:1}\n"
      "svg .pbar,svg .pbar-other{stroke:#fff;stroke-width:.5}\n"
      "svg .cumline{fill:none;stroke:#c2185b;stroke-width:2}\n"
      "details summary{cursor:pointer;font-weight:600;margin:6px 0}\n"
      "</style>\n</head>\n<body>\n<main>\n");
}

static void section_header(const wm_map_t *map, wm_strbuf_t *out) {
  wm_strbuf_printf(out, "<h1>Workload map: ");
  esc(out, map->model ? map->model : map->graph_name);
  wm_strbuf_printf(out,
                   "</h1>\n<nav><a href=\"#totals\">totals</a>"
                   "<a href=\"#roofline\">roofline</a>"
                   "<a href=\"#pareto\">time by op type</a>"
                   "<a href=\"#coverage\">coverage</a>"
                   "<a href=\"#critical\">critical path</a>"
                   "<a href=\"#nodes\">nodes</a>");
  if (map->plan.enabled) {
    wm_strbuf_printf(out, "<a href=\"#plan\">parallel plan</a>");
  }
  wm_strbuf_printf(out, "</nav>\n<table class=\"kv\">\n");
  kv_open(out, "graph");
  esc(out, map->graph_name);
  kv_close(out);
  kv_open(out, "opset");
  wm_strbuf_printf(out, "%lld", (long long)map->opset);
  kv_close(out);
  kv_open(out, "dims");
  if (map->n_dims == 0) {
    wm_strbuf_printf(out, "<span class=\"muted\">none bound</span>");
  }
  for (size_t i = 0; i < map->n_dims; i++) {
    wm_strbuf_printf(out, "%s<code>", i ? ", " : "");
    esc(out, map->dims[i].name);
    wm_strbuf_printf(out, "=%lld</code>", (long long)map->dims[i].value);
  }
  kv_close(out);
  if (map->have_machine) {
    const wm_machine_t *m = &map->machine;
    kv_open(out, "machine");
    esc(out, m->model);
    wm_strbuf_printf(out, ", %d cores, kernel ", (int)m->cores);
    esc(out, m->kernel);
    wm_strbuf_printf(out, " <span class=\"muted\">(fingerprint ");
    esc(out, m->fingerprint);
    wm_strbuf_printf(out, ")</span>");
    kv_close(out);
  }
  kv_open(out, "backends");
  for (size_t b = 0; b < map->n_backends; b++) {
    wm_strbuf_printf(out, "%s", b ? ", " : "");
    esc(out, map->backends[b].name);
  }
  if (map->n_backends == 0) {
    wm_strbuf_printf(out, "<span class=\"muted\">none</span>");
  }
  kv_close(out);
  wm_strbuf_printf(out, "</table>\n");
  if (map->n_notes > 0) {
    wm_strbuf_printf(out, "<div class=\"notes\"><strong>Notes</strong><ul>\n");
    for (size_t i = 0; i < map->n_notes; i++) {
      wm_strbuf_printf(out, "<li>");
      esc(out, map->notes[i]);
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
  kv_open(out, "nodes");
  wm_strbuf_printf(out, "%zu", t->nodes);
  if (t->unmapped > 0) {
    wm_strbuf_printf(out, " (<strong>%zu not analysed</strong>)", t->unmapped);
  }
  kv_close(out);
  kv_open(out, "parameters");
  put_si(out, (double)t->params);
  kv_close(out);
  kv_open(out, "MACs");
  put_si(out, t->macs);
  kv_close(out);
  kv_open(out, "FLOPs");
  put_si(out, t->flops);
  kv_close(out);
  kv_open(out, "transcendentals");
  put_si(out, t->transcendentals);
  kv_close(out);
  kv_open(out, "weight bytes");
  put_bytes(out, (double)t->weight_bytes);
  kv_close(out);
  kv_open(out, "activation bytes read / written");
  put_bytes(out, (double)t->act_in_bytes);
  wm_strbuf_printf(out, " / ");
  put_bytes(out, (double)t->out_bytes);
  wm_strbuf_printf(out,
                   " <span class=\"muted\">(each tensor once, "
                   "unfused)</span>");
  kv_close(out);
  kv_open(out, "peak activation bytes");
  put_bytes(out, (double)m->peak_activation_bytes);
  if (m->peak_node < map->n_nodes) {
    const wm_map_node_t *n = &map->nodes[m->peak_node];
    wm_strbuf_printf(out, " at node <code>");
    esc(out, n->name);
    wm_strbuf_printf(out, "</code> (");
    esc_op(out, n->domain, n->op_type);
    wm_strbuf_printf(out, ")");
  }
  kv_close(out);
  wm_strbuf_printf(out, "</table>\n");
  if (m->n_live > 0) {
    size_t rows = m->n_live < LIVE_MAX_ROWS ? m->n_live : LIVE_MAX_ROWS;
    wm_strbuf_printf(out,
                     "<h3>Live at the activation peak</h3>\n<table>\n"
                     "<tr><th>tensor</th><th>bytes</th><th>share</th></tr>\n");
    for (size_t i = 0; i < rows; i++) {
      wm_strbuf_printf(out, "<tr><td class=\"name\">");
      esc(out, m->live[i].name);
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
static void roofline_ranges(const wm_map_t *map, size_t b, plot_t *p) {
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
  p->ly1 = ceil(log10(be->peak_gflops) + 0.3);
  p->ly0 = fmax(floor(log10(pmin) - 0.15), p->ly1 - ROOF_MAX_DECADES);
  if (p->ly1 - p->ly0 < 2) {
    p->ly0 = p->ly1 - 2;
  }
}

// The roof polyline, the ridge point and their labels.
static void roofline_roof(const wm_map_backend_t *be, const plot_t *p,
                          wm_strbuf_t *out) {
  double peak = be->peak_gflops, bw = be->bandwidth_gbs, ridge = peak / bw;
  // The slope starts where it enters the plot: the left or the bottom edge.
  double xa = fmax(pow(10.0, p->lx0), pow(10.0, p->ly0) / bw);
  double xb = pow(10.0, p->lx1);
  wm_strbuf_printf(out, "<polyline class=\"roof\" points=\"%.1f,%.1f",
                   log_x(p, xa), log_y(p, fmin(peak, bw * xa)));
  if (ridge > xa && ridge < xb) {
    wm_strbuf_printf(out, " %.1f,%.1f", log_x(p, ridge), log_y(p, peak));
  }
  wm_strbuf_printf(out, " %.1f,%.1f\"/>\n", log_x(p, xb),
                   log_y(p, fmin(peak, bw * xb)));
  char lab[96], b1[WM_MAP_FMT_LEN];
  snprintf(lab, sizeof(lab), "peak %sFLOP/s", wm_map_fmt_si(peak * 1e9, b1));
  bool inside = ridge > xa && ridge < xb;
  double ry = log_y(p, peak);
  if (inside && log_x(p, ridge) - p->x0 > 150) {
    // Above the slope, left of the ridge, no dot can sit: label the peak
    // on a faint extension of the flat roof there.
    wm_strbuf_printf(out,
                     "<line class=\"ridge\" x1=\"%.1f\" y1=\"%.1f\" "
                     "x2=\"%.1f\" y2=\"%.1f\"/>\n",
                     p->x0, ry, log_x(p, ridge), ry);
    bool room = ry - p->y0 > 18;  // else below the line
    svg_text(out, p->x0 + 6, room ? ry - 7 : ry + 16, "start", NULL, lab);
  } else {
    svg_text(out, p->x0 + p->w - 6, ry + 18, "end", NULL, lab);
  }
  if (!inside) {
    return;
  }
  double rx = log_x(p, ridge);
  wm_strbuf_printf(out,
                   "<line class=\"ridge\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                   "y2=\"%.1f\"/>\n<circle class=\"ridgept\" cx=\"%.1f\" "
                   "cy=\"%.1f\" r=\"4\" fill=\"#fff\" stroke=\"#1d232a\" "
                   "stroke-width=\"2\"/>\n",
                   rx, ry, rx, p->y0 + p->h, rx, ry);
  snprintf(lab, sizeof(lab), "ridge %.3g FLOP/B", ridge);
  bool right = rx > p->x0 + p->w * 0.75;
  svg_text(out, right ? rx - 5 : rx + 5, p->y0 + p->h - 8,
           right ? "end" : "start", NULL, lab);
  // The bandwidth label runs along the slope, just under it.
  double xm = sqrt(fmax(xa, ridge / 1000.0) * ridge);
  double dx = p->w / (p->lx1 - p->lx0), dy = p->h / (p->ly1 - p->ly0);
  double ang = -atan2(dy, dx) * 57.29577951308232;  // degrees
  double tx = log_x(p, xm), ty = log_y(p, bw * xm);
  snprintf(lab, sizeof(lab), "%sB/s", wm_map_fmt_si(bw * 1e9, b1));
  char rot[96];
  snprintf(rot, sizeof(rot), " transform=\"rotate(%.1f %.1f %.1f)\"", ang, tx,
           ty);
  svg_text(out, tx + 6, ty + 16, "middle", rot, lab);
}

// One dot per node with FLOPs; larger dots first so small ones stay on top.
static void roofline_dots(const wm_map_t *map, size_t b, const plot_t *p,
                          wm_strbuf_t *out) {
  const wm_map_backend_t *be = &map->backends[b];
  ranked_t *order = calloc(map->n_nodes ? map->n_nodes : 1, sizeof(*order));
  if (!order) {
    svg_text(out, p->x0 + 10, p->y0 + 20, "start", NULL, "out of memory");
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
  qsort(order, n_dots, sizeof(*order), cmp_ranked_desc);
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
                     log_x(p, in), log_y(p, perf), r, color, color);
    esc(out, n->name);
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
  plot_t p = {.x0 = 74, .y0 = 36, .w = PLOT_W - 74 - 20, .h = PLOT_H - 36 - 50};
  roofline_ranges(map, b, &p);
  wm_strbuf_printf(out, "<h3>");
  esc(out, be->name);
  wm_strbuf_printf(out, " <span class=\"muted\">(");
  esc(out, be->target);
  wm_strbuf_printf(out, "; peaks ");
  esc(out, be->peak_source);
  wm_strbuf_printf(out, ")</span></h3>\n");
  char label[160];
  snprintf(label, sizeof(label), "roofline of %.100s", be->name);
  svg_open(out, "roofline", PLOT_W, PLOT_H, label);
  svg_log_axes(out, &p, "arithmetic intensity (FLOP/byte)",
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
    x = svg_legend_item(out, x, 20, kBoundColor[kinds[k]], lab);
  }
  roofline_roof(be, &p, out);
  roofline_dots(map, b, &p, out);
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
  wm_strbuf_printf(out, ".</p>\n");
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
      esc(out, map->backends[b].name);
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

static void pareto_axes(const plot_t *p, double tmax, double step,
                        wm_strbuf_t *out) {
  char lab[WM_MAP_FMT_LEN];
  for (int k = 0; k * step <= tmax * (1 + 1e-9); k++) {
    double y = p->y0 + p->h - k * step / tmax * p->h;
    wm_strbuf_printf(out,
                     "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                     "y2=\"%.1f\"/>\n",
                     p->x0, y, p->x0 + p->w, y);
    svg_text(out, p->x0 - 6, y + 4, "end", NULL,
             wm_map_fmt_time(k * step, lab));
  }
  for (int k = 0; k <= 5; k++) {
    double y = p->y0 + p->h - k / 5.0 * p->h;
    snprintf(lab, sizeof(lab), "%d%%", 20 * k);
    svg_text(out, p->x0 + p->w + 6, y + 4, "start", " class=\"small\"", lab);
  }
  wm_strbuf_printf(out,
                   "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                   "height=\"%.1f\"/>\n",
                   p->x0, p->y0, p->w, p->h);
  char rot[96];
  snprintf(rot, sizeof(rot),
           " class=\"title\" transform=\"rotate(-90 %.1f %.1f)\"", 16.0,
           p->y0 + p->h / 2);
  svg_text(out, 16, p->y0 + p->h / 2, "middle", rot, "roofline time (t_roof)");
  double xr = p->x0 + p->w + 50;
  snprintf(rot, sizeof(rot),
           " class=\"title\" transform=\"rotate(90 %.1f %.1f)\"", xr,
           p->y0 + p->h / 2);
  svg_text(out, xr, p->y0 + p->h / 2, "middle", rot, "cumulative share");
}

static void section_pareto(const wm_map_t *map, wm_strbuf_t *out) {
  wm_strbuf_printf(out, "<h2 id=\"pareto\">Time by op type</h2>\n");
  if (map->n_backends == 0 || map->n_types == 0) {
    wm_strbuf_printf(out, "<p class=\"muted\">Nothing to show.</p>\n");
    return;
  }
  size_t b = critical_backend(map);
  ranked_t *order = calloc(map->n_types, sizeof(*order));
  if (!order) {
    wm_strbuf_printf(out, "<p class=\"muted\">Out of memory.</p>\n");
    return;
  }
  size_t n = 0;
  double total = 0;
  for (size_t i = 0; i < map->n_types; i++) {
    double t = map->types[i].cells[b].t_roof;
    if (t > 0 && isfinite(t)) {
      order[n].key = t;
      order[n].index = i;
      total += t;
      n++;
    }
  }
  if (n == 0) {
    wm_strbuf_printf(out, "<p class=\"muted\">No roofline times on ");
    esc(out, map->backends[b].name);
    wm_strbuf_printf(out, " (its peaks are unknown).</p>\n");
    free(order);
    return;
  }
  qsort(order, n, sizeof(*order), cmp_ranked_desc);
  size_t bars = n > PARETO_MAX_BARS ? PARETO_MAX_BARS - 1 : n;
  double other = 0;
  for (size_t k = bars; k < n; k++) {
    other += order[k].key;
  }
  size_t slots = bars + (n > bars);
  double tmax = fmax(order[0].key, other);
  double step = nice_step(tmax, 5);
  tmax = ceil(tmax * 1.04 / step) * step;  // headroom above the tallest bar
  wm_strbuf_printf(out, "<p>Sum of roofline times per op type on <strong>");
  esc(out, map->backends[b].name);
  wm_strbuf_printf(out,
                   "</strong>, largest first; the line is the "
                   "cumulative share of ");
  put_time(out, total);
  wm_strbuf_printf(out, ".</p>\n");
  const int height = PLOT_H + 40;
  plot_t p = {
      .x0 = 78, .y0 = 16, .w = PLOT_W - 78 - 70, .h = height - 16 - 124};
  svg_open(out, "pareto", PLOT_W, height, "time by op type");
  pareto_axes(&p, tmax, step, out);
  double slot = p.w / (double)slots, cum = 0;
  wm_strbuf_printf(out, "<g class=\"bars\">\n");
  for (size_t k = 0; k < slots; k++) {
    bool is_other = k == bars;
    double t = is_other ? other : order[k].key;
    const wm_map_optype_t *ty = is_other ? NULL : &map->types[order[k].index];
    double bh = t / tmax * p.h, cx = p.x0 + slot * (k + 0.5);
    cum += t;
    wm_strbuf_printf(out,
                     "<rect class=\"%s\" data-t=\"%.6e\" x=\"%.1f\" "
                     "y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                     "fill=\"%s\"><title>",
                     is_other ? "pbar-other" : "pbar", t, cx - slot * 0.36,
                     p.y0 + p.h - bh, slot * 0.72, bh,
                     is_other ? "#a9b3bd" : "#4e79a7");
    if (is_other) {
      wm_strbuf_printf(out, "%zu other op types", n - bars);
    } else {
      esc_op(out, ty->domain, ty->op_type);
      wm_strbuf_printf(out, " (%zu nodes)", ty->count);
    }
    wm_strbuf_printf(out, ": ");
    put_time(out, t);
    wm_strbuf_printf(out, ", ");
    put_pct(out, t, total);
    wm_strbuf_printf(out, " of the time, cumulative ");
    put_pct(out, cum, total);
    wm_strbuf_printf(out, "</title></rect>\n");
    double ly = p.y0 + p.h + 12;
    wm_strbuf_printf(out,
                     "<text class=\"small\" x=\"%.1f\" y=\"%.1f\" "
                     "text-anchor=\"end\" transform=\"rotate(-45 %.1f %.1f)\">",
                     cx + 4, ly, cx + 4, ly);
    if (is_other) {
      wm_strbuf_printf(out, "other (%zu)", n - bars);
    } else {
      esc_cut(out, ty->op_type, 18);
    }
    wm_strbuf_printf(out, "</text>\n");
  }
  wm_strbuf_printf(out, "</g>\n<polyline class=\"cumline\" points=\"");
  cum = 0;
  for (size_t k = 0; k < slots; k++) {
    cum += k == bars ? other : order[k].key;
    wm_strbuf_printf(out, "%s%.1f,%.1f", k ? " " : "", p.x0 + slot * (k + 0.5),
                     p.y0 + p.h - cum / total * p.h);
  }
  wm_strbuf_printf(out, "\"/>\n");
  cum = 0;
  for (size_t k = 0; k < slots; k++) {
    cum += k == bars ? other : order[k].key;
    wm_strbuf_printf(out,
                     "<circle class=\"cum\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" "
                     "fill=\"#c2185b\"><title>cumulative %.1f%%</title>"
                     "</circle>\n",
                     p.x0 + slot * (k + 0.5), p.y0 + p.h - cum / total * p.h,
                     100.0 * cum / total);
  }
  wm_strbuf_printf(out, "</svg>\n");
  free(order);
}

// --------------------------------------------------------- coverage

static void coverage_legend(wm_strbuf_t *out) {
  wm_strbuf_printf(out, "<p class=\"legend\">");
  for (int k = 0; k < WM_COVER_COUNT; k++) {
    wm_strbuf_printf(out, "<span class=\"sw\" style=\"background:%s\"></span>",
                     kCoverFill[k]);
    const char *name = wm_map_cover_name((wm_map_cover_t)k);
    esc(out, name);
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
    esc(out, map->backends[b].name);
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
        wm_strbuf_printf(out, "<td style=\"background:%s\">", kCoverFill[d]);
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
    esc(out, be->name);
    wm_strbuf_printf(out, "</strong> ");
    esc(out, be->version);
    if (be->fallback) {
      wm_strbuf_printf(out, " <span class=\"muted\">(fallback)</span>");
    }
    wm_strbuf_printf(out, "<br><span class=\"muted\">");
    esc(out, be->target);
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
    esc(out, suit);
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
    esc(out, be->peak_source);
    wm_strbuf_printf(out, "</td></tr>\n");
  }
  wm_strbuf_printf(out, "</table>\n");
}

static void backend_todo(const wm_map_backend_t *be, wm_strbuf_t *out) {
  wm_strbuf_printf(out, "<h3>Operators to write for ");
  esc(out, be->name);
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
    esc(out, wm_why_name(t->reason));
    wm_strbuf_printf(out, "</td><td class=\"name\">");
    esc(out, t->detail);
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
  esc(out, map->backends[c->backend].name);
  wm_strbuf_printf(out, "</strong>: %zu nodes, ", c->n_nodes);
  put_time(out, c->length);
  wm_strbuf_printf(out, " of ");
  put_time(out, c->total);
  wm_strbuf_printf(out, " total roofline time (");
  put_pct(out, c->length, c->total);
  wm_strbuf_printf(out, "); the rest could overlap with it.</p>\n");
  // Rows shown: every node, or the longest CRITICAL_MAX_ROWS in path order.
  bool *shown = calloc(c->n_nodes, sizeof(*shown));
  if (!shown) {
    return;
  }
  if (c->n_nodes > CRITICAL_MAX_ROWS) {
    ranked_t *order = calloc(c->n_nodes, sizeof(*order));
    if (!order) {
      free(shown);
      return;
    }
    for (size_t k = 0; k < c->n_nodes; k++) {
      size_t i = c->nodes[k];
      order[k].key =
          i < map->n_nodes ? map->nodes[i].cells[c->backend].t_roof : 0;
      order[k].index = k;
    }
    qsort(order, c->n_nodes, sizeof(*order), cmp_ranked_desc);
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
                   "<th>op type</th><th>t_roof</th><th>share of path</th>"
                   "<th>cumulative</th></tr>\n");
  double cum = 0;
  for (size_t k = 0; k < c->n_nodes; k++) {
    size_t i = c->nodes[k];
    if (i >= map->n_nodes) {
      continue;
    }
    const wm_map_node_t *n = &map->nodes[i];
    double t = n->cells[c->backend].t_roof;
    cum += t;
    if (!shown[k]) {
      continue;
    }
    wm_strbuf_printf(out, "<tr><td class=\"n\">%zu</td><td class=\"name\">",
                     k + 1);
    esc(out, n->name);
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

// ------------------------------------------------------------ nodes

static void node_row(const wm_map_t *map, const wm_map_node_t *n,
                     wm_strbuf_t *out) {
  const char *cls = n->state != WM_MAP_NODE_OK ? " class=\"bad\""
                    : n->critical              ? " class=\"crit\""
                                               : "";
  wm_strbuf_printf(out, "<tr%s><td class=\"n\">%d</td><td class=\"name\">", cls,
                   (int)n->index);
  esc(out, n->name);
  wm_strbuf_printf(out, "</td><td>");
  esc_op(out, n->domain, n->op_type);
  wm_strbuf_printf(out, "</td><td>");
  esc(out, wm_map_state_name(n->state));
  if (n->note && n->note[0]) {
    wm_strbuf_printf(out, ": ");
    esc(out, n->note);
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
                     kCoverFill[k]);
    if (c->detail && c->detail[0]) {
      wm_strbuf_printf(out, " title=\"");
      esc(out, c->detail);
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
    esc(out, map->backends[b].name);
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
    esc(out, wm_map_coll_name(c->kind));
    wm_strbuf_printf(out, "</td><td>");
    esc(out, c->why);
    wm_strbuf_printf(out, "</td><td class=\"name\">");
    if (c->tensor && c->tensor[0]) {
      esc(out, c->tensor);
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
  svg_open(out, "stages", PLOT_W, height, "t_roof per pipeline stage");
  for (int s = 0; s < shown; s++) {
    double y = 6 + row * s, bw = pl->stage_t_roof[s] / tmax * w;
    char lab[64], b1[WM_MAP_FMT_LEN], b2[WM_MAP_FMT_LEN];
    snprintf(lab, sizeof(lab), "stage %d", s);
    svg_text(out, x0 - 8, y + 15, "end", NULL, lab);
    wm_strbuf_printf(out,
                     "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                     "height=\"%.1f\" fill=\"#4e79a7\"/>\n",
                     x0, y + 2, bw, row - 6);
    snprintf(lab, sizeof(lab), "%s, %sFLOP",
             wm_map_fmt_time(pl->stage_t_roof[s], b1),
             wm_map_fmt_si(pl->stage_flops ? pl->stage_flops[s] : 0, b2));
    svg_text(out, x0 + bw + 6, y + 15, "start", NULL, lab);
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
  kv_open(out, "wire bytes per rank per step");
  put_bytes(out, pl->wire_bytes);
  kv_close(out);
  kv_open(out, "communication per step");
  put_time(out, pl->t_comm);
  kv_close(out);
  kv_open(out, "pipeline bubble");
  put_pct(out, pl->bubble, 1.0);
  wm_strbuf_printf(out,
                   " of the step <span class=\"muted\">((p-1)/(m+p-1)); "
                   "");
  put_pct(out, pl->bubble_ideal, 1.0);
  wm_strbuf_printf(out, " of the ideal time ((p-1)/m)</span>");
  kv_close(out);
  wm_strbuf_printf(out, "</table>\n");
  if (sp->pp > 1 || pl->stage_t_roof) {
    wm_strbuf_printf(out, "<h3>Roofline time per stage");
    if (map->n_backends > 0) {
      wm_strbuf_printf(out, " on ");
      esc(out, map->backends[critical_backend(map)].name);
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
  section_nodes(map, out);
  section_plan(map, out);
  wm_strbuf_printf(out, "<p class=\"muted\">" WM_MAP_FORMAT
                        " &middot; times are roofline estimates from peak "
                        "FLOP/s and bandwidth, not measurements.</p>\n"
                        "</main>\n</body>\n</html>\n");
}
