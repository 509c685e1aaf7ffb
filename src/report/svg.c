// Inline SVG plots: the mapping from data to pixels, axes with ticks and
// labels (log and linear), legends, a palette and the Pareto chart. Every
// value is clamped into its plot, so nothing is drawn outside the frame.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wmap/report.h"

// Plots are drawn at this size (CSS pixels).
#define PLOT_W 720
#define PLOT_H 420
// The Pareto chart shows at most this many bars; the rest become "other".
#define PARETO_MAX_BARS 25

// The fraction |t| clamped to [0, 1]; NaN goes to 0.
static double clamp01(double t) {
  return t >= 0 ? (t <= 1 ? t : 1) : 0;
}

// The fraction of the way |v| lies along the range [lo, hi].
static double frac(double v, double lo, double hi, bool log) {
  if (log) {
    return clamp01((log10(v) - lo) / (hi - lo));  // -inf goes to 0
  }
  return clamp01((v - lo) / (hi - lo));
}

double wm_report_plot_x(const wm_report_plot_t *p, double v) {
  return p->x0 + frac(v, p->lx0, p->lx1, p->xlog) * p->w;
}

double wm_report_plot_y(const wm_report_plot_t *p, double v) {
  return p->y0 + p->h - frac(v, p->ly0, p->ly1, p->ylog) * p->h;
}

double wm_report_nice_step(double max, int n) {
  double raw = max / n;
  double mag = pow(10.0, floor(log10(raw)));
  double f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

void wm_report_decade_label(int e, char *buf, size_t cap) {
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

const char *wm_report_color(size_t i) {
  // Tableau 10: distinct in hue and readable on white.
  static const char *const kPalette[] = {
      "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kPalette[i % (sizeof(kPalette) / sizeof(kPalette[0]))];
}

void wm_report_svg_open(wm_strbuf_t *out, const char *cls, int w, int h,
                        const char *label) {
  wm_strbuf_printf(out,
                   "<svg class=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" "
                   "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                   "role=\"img\" aria-label=\"",
                   cls, w, h, w, h);
  wm_report_html_escape(out, label);
  wm_strbuf_printf(out, "\">\n");
}

void wm_report_svg_close(wm_strbuf_t *out) {
  wm_strbuf_printf(out, "</svg>\n");
}

void wm_report_svg_text(wm_strbuf_t *out, double x, double y,
                        const char *anchor, const char *extra,
                        const char *text) {
  wm_strbuf_printf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s>", x,
                   y, anchor, extra ? extra : "");
  wm_report_html_escape(out, text);
  wm_strbuf_printf(out, "</text>\n");
}

double wm_report_svg_legend_item(wm_strbuf_t *out, double x, double y,
                                 const char *color, const char *label) {
  wm_strbuf_printf(out,
                   "<circle class=\"lg\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" "
                   "fill=\"%s\"/>\n",
                   x + 5, y - 4, color);
  wm_report_svg_text(out, x + 14, y, "start", NULL, label);
  return x + 14 + 7.0 * (double)strlen(label) + 18;
}

// ---------------------------------------------------------------- axes

// One axis of a plot: x runs along the bottom, y along the left.
typedef struct axis {
  const wm_report_plot_t *p;
  bool is_x;
  bool log;
  double lo, hi;  // the range (log10 units on a log axis)
  double step;    // tick step of a linear axis, or 0
  wm_report_fmt_fn fmt;
} axis_t;

static double axis_px(const axis_t *a, double v) {
  return a->is_x ? wm_report_plot_x(a->p, v) : wm_report_plot_y(a->p, v);
}

static void grid_line(wm_strbuf_t *out, const axis_t *a, double px) {
  const wm_report_plot_t *p = a->p;
  if (a->is_x) {
    wm_strbuf_printf(out,
                     "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                     "y2=\"%.1f\"/>\n",
                     px, p->y0, px, p->y0 + p->h);
  } else {
    wm_strbuf_printf(out,
                     "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                     "y2=\"%.1f\"/>\n",
                     p->x0, px, p->x0 + p->w, px);
  }
}

static void minor_tick(wm_strbuf_t *out, const axis_t *a, double px) {
  const wm_report_plot_t *p = a->p;
  if (a->is_x) {
    wm_strbuf_printf(out,
                     "<line class=\"tick\" x1=\"%.1f\" y1=\"%.1f\" "
                     "x2=\"%.1f\" y2=\"%.1f\"/>\n",
                     px, p->y0 + p->h, px, p->y0 + p->h - 4);
  } else {
    wm_strbuf_printf(out,
                     "<line class=\"tick\" x1=\"%.1f\" y1=\"%.1f\" "
                     "x2=\"%.1f\" y2=\"%.1f\"/>\n",
                     p->x0, px, p->x0 + 4, px);
  }
}

static void tick_label(wm_strbuf_t *out, const axis_t *a, double px,
                       const char *text) {
  const wm_report_plot_t *p = a->p;
  if (a->is_x) {
    wm_report_svg_text(out, px, p->y0 + p->h + 16, "middle", NULL, text);
  } else {
    wm_report_svg_text(out, p->x0 - 6, px + 4, "end", NULL, text);
  }
}

// A labelled grid line at value |v|.
static void major_tick(wm_strbuf_t *out, const axis_t *a, double v) {
  char lab[WM_REPORT_FMT_LEN];
  double px = axis_px(a, v);
  grid_line(out, a, px);
  if (a->fmt) {
    a->fmt(v, lab);
  } else {
    snprintf(lab, sizeof(lab), "%g", v);
  }
  tick_label(out, a, px, lab);
}

static bool is_whole(double v) {
  return isfinite(v) && fabs(v - round(v)) < 1e-9;
}

// A log axis over whole decades: a line per decade, minor ticks 2..9.
static void axis_decades(wm_strbuf_t *out, const axis_t *a) {
  char lab[WM_REPORT_FMT_LEN];
  int e0 = (int)lround(a->lo), e1 = (int)lround(a->hi);
  int step = e1 - e0 > (a->is_x ? 10 : 8) ? 2 : 1;
  for (int e = e0; e <= e1; e++) {
    grid_line(out, a, axis_px(a, pow(10.0, e)));
    for (int m = 2; m <= 9 && e < e1; m++) {
      minor_tick(out, a, axis_px(a, m * pow(10.0, e)));
    }
    if ((e - e0) % step == 0) {
      if (a->fmt) {
        a->fmt(pow(10.0, e), lab);
      } else {
        wm_report_decade_label(e, lab, sizeof(lab));
      }
      tick_label(out, a, axis_px(a, pow(10.0, e)), lab);
    }
  }
}

// Round ticks over the linear range [lo, hi]: about |ticks| of them, or
// one every |step| when that is positive and gives at most 200.
static void axis_linear(wm_strbuf_t *out, const axis_t *a, double lo, double hi,
                        double step, int ticks) {
  if (!(hi > lo) || !isfinite(hi - lo)) {
    return;
  }
  if (!(step > 0) || !((hi - lo) / step <= 200)) {
    step = wm_report_nice_step(hi - lo, ticks);
  }
  double first = ceil(lo / step - 1e-9);
  for (int k = 0; k <= 200; k++) {
    double v = (first + k) * step;
    if (v > hi + step * 1e-9) {
      break;
    }
    major_tick(out, a, fabs(v) < step * 1e-9 ? 0.0 : v);
  }
}

// A log axis over a range that is not whole decades: 1-2-5 ticks when it
// spans a decade or more, round linear ticks within it otherwise.
static void axis_log_fine(wm_strbuf_t *out, const axis_t *a) {
  if (!(a->hi > a->lo) || !isfinite(a->hi - a->lo)) {
    return;
  }
  if (a->hi - a->lo < 1) {
    axis_linear(out, a, pow(10.0, a->lo), pow(10.0, a->hi), 0, 7);
    return;
  }
  static const double kMant[] = {1, 2, 5};
  for (int e = (int)floor(a->lo); e <= (int)ceil(a->hi); e++) {
    for (int m = 0; m < 3; m++) {
      double v = kMant[m] * pow(10.0, e), lv = log10(v);
      if (lv >= a->lo - 1e-9 && lv <= a->hi + 1e-9) {
        major_tick(out, a, v);
      }
    }
  }
}

static void draw_axis(wm_strbuf_t *out, const axis_t *a) {
  if (a->log && is_whole(a->lo) && is_whole(a->hi) && a->hi - a->lo >= 2) {
    axis_decades(out, a);
  } else if (a->log) {
    axis_log_fine(out, a);
  } else {
    axis_linear(out, a, a->lo, a->hi, a->step, 5);
  }
}

static void frame(wm_strbuf_t *out, const wm_report_plot_t *p) {
  wm_strbuf_printf(out,
                   "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                   "height=\"%.1f\"/>\n",
                   p->x0, p->y0, p->w, p->h);
}

// A title rotated by |deg| around (x, y).
static void rotated_title(wm_strbuf_t *out, double x, double y, int deg,
                          const char *text) {
  char rot[96];
  snprintf(rot, sizeof(rot),
           " class=\"title\" transform=\"rotate(%d %.1f %.1f)\"", deg, x, y);
  wm_report_svg_text(out, x, y, "middle", rot, text);
}

void wm_report_svg_axes(wm_strbuf_t *out, const wm_report_plot_t *p,
                        wm_report_fmt_fn xfmt, wm_report_fmt_fn yfmt,
                        const char *xtitle, const char *ytitle) {
  wm_strbuf_printf(out, "<g class=\"axes\">\n");
  axis_t x = {p, true, p->xlog, p->lx0, p->lx1, p->xstep, xfmt};
  axis_t y = {p, false, p->ylog, p->ly0, p->ly1, p->ystep, yfmt};
  draw_axis(out, &x);
  draw_axis(out, &y);
  frame(out, p);
  if (xtitle) {
    wm_report_svg_text(out, p->x0 + p->w / 2, p->y0 + p->h + 36, "middle",
                       " class=\"title\"", xtitle);
  }
  if (ytitle) {
    rotated_title(out, 18, p->y0 + p->h / 2, -90, ytitle);
  }
  wm_strbuf_printf(out, "</g>\n");
}

// ---------------------------------------------------------------- Pareto

int wm_report_rank_desc(const void *a, const void *b) {
  const wm_report_rank_t *x = a, *y = b;
  if (x->key != y->key) {
    return x->key < y->key ? 1 : -1;
  }
  return (x->index > y->index) - (x->index < y->index);
}

static void pareto_axes(const wm_report_plot_t *p, double tmax, double step,
                        const char *ytitle, wm_strbuf_t *out) {
  char lab[WM_REPORT_FMT_LEN];
  for (int k = 0; k * step <= tmax * (1 + 1e-9); k++) {
    double y = p->y0 + p->h - k * step / tmax * p->h;
    wm_strbuf_printf(out,
                     "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                     "y2=\"%.1f\"/>\n",
                     p->x0, y, p->x0 + p->w, y);
    wm_report_svg_text(out, p->x0 - 6, y + 4, "end", NULL,
                       wm_report_fmt_time(k * step, lab));
  }
  for (int k = 0; k <= 5; k++) {
    double y = p->y0 + p->h - k / 5.0 * p->h;
    snprintf(lab, sizeof(lab), "%d%%", 20 * k);
    wm_report_svg_text(out, p->x0 + p->w + 6, y + 4, "start",
                       " class=\"small\"", lab);
  }
  frame(out, p);
  rotated_title(out, 16, p->y0 + p->h / 2, -90, ytitle);
  rotated_title(out, p->x0 + p->w + 50, p->y0 + p->h / 2, 90,
                "cumulative share");
}

double wm_report_svg_pareto(wm_strbuf_t *out, const wm_report_bar_t *bars,
                            size_t n_bars, const char *ytitle,
                            const char *other_what, const char *label) {
  char b1[WM_REPORT_FMT_LEN];
  wm_report_rank_t *order = calloc(n_bars ? n_bars : 1, sizeof(*order));
  if (!order) {
    return 0;
  }
  size_t n = 0;
  double total = 0;
  for (size_t i = 0; i < n_bars; i++) {
    double t = bars[i].value;
    if (t > 0 && isfinite(t)) {
      order[n].key = t;
      order[n].index = i;
      total += t;
      n++;
    }
  }
  if (n == 0) {
    free(order);
    return 0;
  }
  qsort(order, n, sizeof(*order), wm_report_rank_desc);
  size_t shown = n > PARETO_MAX_BARS ? PARETO_MAX_BARS - 1 : n;
  double other = 0;
  for (size_t k = shown; k < n; k++) {
    other += order[k].key;
  }
  size_t slots = shown + (n > shown);
  double tmax = fmax(order[0].key, other);
  double step = wm_report_nice_step(tmax, 5);
  tmax = ceil(tmax * 1.04 / step) * step;  // headroom above the tallest bar
  const int height = PLOT_H + 40;
  wm_report_plot_t p = {
      .x0 = 78, .y0 = 16, .w = PLOT_W - 78 - 70, .h = height - 16 - 124};
  wm_report_svg_open(out, "pareto", PLOT_W, height, label);
  pareto_axes(&p, tmax, step, ytitle ? ytitle : "", out);
  double slot = p.w / (double)slots, cum = 0;
  wm_strbuf_printf(out, "<g class=\"bars\">\n");
  for (size_t k = 0; k < slots; k++) {
    bool is_other = k == shown;
    double t = is_other ? other : order[k].key;
    const wm_report_bar_t *bar = is_other ? NULL : &bars[order[k].index];
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
      wm_strbuf_printf(out, "%zu other ", n - shown);
      wm_report_html_escape(out, other_what);
    } else {
      wm_report_html_escape(out, bar->title);
    }
    wm_strbuf_printf(out, ": %s, ", wm_report_fmt_time(t, b1));
    wm_strbuf_printf(out, "%s of the time, cumulative ",
                     wm_report_fmt_pct(t, total, b1));
    wm_strbuf_printf(out, "%s</title></rect>\n",
                     wm_report_fmt_pct(cum, total, b1));
    double ly = p.y0 + p.h + 12;
    wm_strbuf_printf(out,
                     "<text class=\"small\" x=\"%.1f\" y=\"%.1f\" "
                     "text-anchor=\"end\" transform=\"rotate(-45 %.1f %.1f)\">",
                     cx + 4, ly, cx + 4, ly);
    if (is_other) {
      wm_strbuf_printf(out, "other (%zu)", n - shown);
    } else {
      wm_report_html_escape_cut(out, bar->label, 18);
    }
    wm_strbuf_printf(out, "</text>\n");
  }
  wm_strbuf_printf(out, "</g>\n<polyline class=\"cumline\" points=\"");
  cum = 0;
  for (size_t k = 0; k < slots; k++) {
    cum += k == shown ? other : order[k].key;
    wm_strbuf_printf(out, "%s%.1f,%.1f", k ? " " : "", p.x0 + slot * (k + 0.5),
                     p.y0 + p.h - cum / total * p.h);
  }
  wm_strbuf_printf(out, "\"/>\n");
  cum = 0;
  for (size_t k = 0; k < slots; k++) {
    cum += k == shown ? other : order[k].key;
    wm_strbuf_printf(out,
                     "<circle class=\"cum\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" "
                     "fill=\"#c2185b\"><title>cumulative %.1f%%</title>"
                     "</circle>\n",
                     p.x0 + slot * (k + 0.5), p.y0 + p.h - cum / total * p.h,
                     100.0 * cum / total);
  }
  wm_report_svg_close(out);
  free(order);
  return total;
}
