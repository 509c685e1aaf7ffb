// Report building blocks shared by the workload map and the baselines:
// number formatting, tables built once and written as aligned text (within
// 100 columns, optionally with ANSI colour) or as Markdown, and
// self-contained HTML pages with inline SVG plots (log and linear axes, a
// legend, a palette, a Pareto chart). Nothing here fetches or scripts:
// a page opens offline. Every string that reaches a report is made safe
// here: control characters never reach a terminal, Markdown and HTML
// specials are escaped.
// Thread-safety: the functions are reentrant; objects are not shared.
#ifndef WMAP_REPORT_H_
#define WMAP_REPORT_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wmap/base.h"

#ifdef __cplusplus
extern "C" {
#endif

WM_API_BEGIN

// ------------------------------------------------------------- numbers

// Size of the buffers the formatters below write into.
#define WM_REPORT_FMT_LEN 32

// Formats |v| with an SI prefix and 3 significant digits: "4.09 G",
// "812 M", "12.0 k", "7" (integers below 1000 plainly), "-" if not finite.
const char *wm_report_fmt_si(double v, char *buf);
// Bytes as decimal units: "98.0 MB", "1.20 GB", "512 B".
const char *wm_report_fmt_bytes(double bytes, char *buf);
// Seconds as "12.3 ms", "45.6 us", "1.23 s", "0" for zero, "-" for < 0.
const char *wm_report_fmt_time(double seconds, char *buf);
// A percentage of |part| in |whole| as "12.3%" ("-" when whole is 0).
const char *wm_report_fmt_pct(double part, double whole, char *buf);
// |v| with thousands separators: "25,557,032".
const char *wm_report_fmt_int(int64_t v, char *buf);

// A formatter of axis tick labels: writes |v| into |buf|
// (WM_REPORT_FMT_LEN bytes) and returns it.
typedef const char *(*wm_report_fmt_fn)(double v, char *buf);

// --------------------------------------------------------------- text

// Text reports are at most this many columns wide.
#define WM_REPORT_WIDTH 100

// ANSI colours for wm_report_writer_t and wm_report_table_set_tint.
#define WM_ANSI_RESET "\x1b[0m"
#define WM_ANSI_BOLD "\x1b[1m"
#define WM_ANSI_RED "\x1b[31m"
#define WM_ANSI_GREEN "\x1b[32m"
#define WM_ANSI_YELLOW "\x1b[33m"
#define WM_ANSI_BLUE "\x1b[34m"
#define WM_ANSI_MAGENTA "\x1b[35m"
#define WM_ANSI_CYAN "\x1b[36m"

// Replaces control characters (C0, DEL and C1 in UTF-8) by '?' in place, so
// that no data can emit escape codes.
void wm_report_sanitize(char *s);
// Width of the |n| bytes at |s| in code points (UTF-8 continuation bytes do
// not count).
size_t wm_report_text_width(const char *s, size_t n);
// Bytes taken by the first |w| code points of the |n| bytes at |s|.
size_t wm_report_text_prefix(const char *s, size_t n, size_t w);
// Appends |n| bytes of |s| escaped for Markdown (inline text or a table
// cell): | \ * ` < > [ ] and '_' outside a word are backslashed, control
// characters become spaces.
void wm_report_md_escape(wm_strbuf_t *out, const char *s, size_t n);

// Column flags of a table.
enum {
  WM_REPORT_RIGHT = 1u,   // right-aligned (numbers)
  WM_REPORT_SHRINK = 2u,  // a name: truncated with "..." when too wide
  WM_REPORT_WRAP = 4u,    // free text: wrapped onto continuation lines
  WM_REPORT_WORDS = 8u,   // colour the writer's words (wm_report_word_t)
};

// The most columns a table has; further columns are ignored.
#define WM_REPORT_MAX_COLS 16

// A table built once and written as text, Markdown or HTML. Cells are
// formatted strings with control characters replaced. Running out of memory
// drops a row or a cell, never the table's shape.
typedef struct wm_report_table {
  wm_arena_t arena;                      // cell strings
  size_t n_cols;                         // columns in use
  const char *head[WM_REPORT_MAX_COLS];  // header per column (borrowed)
  unsigned flags[WM_REPORT_MAX_COLS];    // WM_REPORT_* per column
  const char *tint[WM_REPORT_MAX_COLS];  // colour of non-zero cells or NULL
  size_t n_rows;                         // rows added
  size_t cap;                            // rows allocated
  const char **cells;                    // n_rows * WM_REPORT_MAX_COLS
  bool dropped;                          // the last row ran out of memory
} wm_report_table_t;

// Initializes an empty table in the caller's storage.
void wm_report_table_init(wm_report_table_t *t);
// Frees the rows and cells; the storage may be initialized again.
void wm_report_table_deinit(wm_report_table_t *t);
// Adds a column headed |head| (borrowed: it must outlive the table) with
// WM_REPORT_* |flags|; returns its index.
size_t wm_report_table_add_col(wm_report_table_t *t, const char *head,
                               unsigned flags);
// Colours the non-empty cells of column |col| other than "0" and "-" with
// the ANSI |color| in coloured text (NULL: none).
void wm_report_table_set_tint(wm_report_table_t *t, size_t col,
                              const char *color);
// Starts a row; its cells are empty until wm_report_table_set_cell.
void wm_report_table_add_row(wm_report_table_t *t);
// Sets cell |col| of the last row from |fmt|.
void wm_report_table_set_cell(wm_report_table_t *t, size_t col, const char *fmt,
                              ...) WM_PRINTF(3, 4);
// The text of a cell ("" when empty).
const char *wm_report_table_cell(const wm_report_table_t *t, size_t row,
                                 size_t col);

// A word that a writer colours in WM_REPORT_WORDS columns.
typedef struct wm_report_word {
  const char *word;   // a run of ASCII letters, matched whole
  const char *color;  // WM_ANSI_*
} wm_report_word_t;

// Writes a report as text or Markdown into |out|: titles, paragraphs and
// tables. Text is wrapped and aligned within WM_REPORT_WIDTH columns; with
// colour, the text with the escape codes removed is exactly the text
// without colour (padding at the end of a line is never written).
typedef struct wm_report_writer {
  wm_strbuf_t *out;               // borrowed
  bool md;                        // Markdown, else text
  bool color;                     // ANSI colour (text only)
  bool fresh;                     // text: no blank line needed before a para
  size_t pend;                    // spaces owed before the next visible text
  const wm_report_word_t *words;  // coloured words, or NULL
  size_t n_words;
} wm_report_writer_t;

// Initializes |w| to append to |out|; |color| is ignored for Markdown.
void wm_report_writer_init(wm_report_writer_t *w, wm_strbuf_t *out, bool md,
                           bool color);
// The document's heading: "# text" in Markdown, a bold line cut to the
// width in text.
void wm_report_write_heading(wm_report_writer_t *w, const char *fmt, ...)
    WM_PRINTF(2, 3);
// A section title: "## text" in Markdown, "== text ==" after a blank line
// in text.
void wm_report_write_title(wm_report_writer_t *w, const char *fmt, ...)
    WM_PRINTF(2, 3);
// A paragraph of free text: wrapped in text (continuation lines indented by
// 2) after a blank line unless the writer is fresh.
void wm_report_write_para(wm_report_writer_t *w, const char *fmt, ...)
    WM_PRINTF(2, 3);
// A paragraph that introduces what follows directly (no blank line after
// it in text).
void wm_report_write_label(wm_report_writer_t *w, const char *fmt, ...)
    WM_PRINTF(2, 3);
// A paragraph led by |lead| ("note:"), coloured |lead_color| in text and
// bold in a Markdown blockquote; continuation lines are indented past the
// lead, and consecutive lead paragraphs have no blank line between them.
void wm_report_write_lead(wm_report_writer_t *w, const char *lead,
                          const char *lead_color, const char *fmt, ...)
    WM_PRINTF(4, 5);
// Writes |t|: aligned text (too wide: free text wrapped, gaps closed, names
// then anything truncated with "...") or a Markdown pipe table followed by
// a blank line. |t| is not changed.
void wm_report_write_table(wm_report_writer_t *w, const wm_report_table_t *t);

// --------------------------------------------------------------- HTML

// Appends |s| with & < > " ' escaped; NULL appends nothing.
void wm_report_html_escape(wm_strbuf_t *out, const char *s);
// Appends at most |max| (>= 4) bytes of |s| escaped, with "..." when cut
// (never inside a UTF-8 sequence; at most 63 bytes are kept).
void wm_report_html_escape_cut(wm_strbuf_t *out, const char *s, size_t max);
// Opens a page: doctype, meta tags naming |generator|, the escaped |title|,
// the shared inline CSS with |extra_css| (may be NULL) inserted before the
// chart rules, then <body><main>.
void wm_report_html_begin(wm_strbuf_t *out, const char *generator,
                          const char *title, const char *extra_css);
// Closes what wm_report_html_begin opened.
void wm_report_html_end(wm_strbuf_t *out);
// Opens a row of a two-column key/value table (class "kv"): |key| is HTML.
void wm_report_html_kv_open(wm_strbuf_t *out, const char *key);
// Closes the row wm_report_html_kv_open opened.
void wm_report_html_kv_close(wm_strbuf_t *out);
// Writes |t| as an HTML table of class |cls| (NULL: none); cells are
// escaped, WM_REPORT_RIGHT columns get class "n", WM_REPORT_SHRINK and
// WM_REPORT_WRAP columns class "name".
void wm_report_html_table(wm_strbuf_t *out, const wm_report_table_t *t,
                          const char *cls);

// ---------------------------------------------------------------- SVG

// A plot area in px and its axis ranges. On a log axis the range is in
// log10 units of the data; values outside the range are drawn on the edge.
typedef struct wm_report_plot {
  double x0, y0, w, h;  // plot area: left, top, width, height
  double lx0, lx1;      // x range (log10 of the data range on log axes)
  double ly0, ly1;      // y range
  bool xlog, ylog;      // logarithmic axes
  double xstep, ystep;  // tick step of a linear axis (0: a round one)
} wm_report_plot_t;

// The x pixel of value |v| on |p|'s x axis (clamped into the plot).
double wm_report_plot_x(const wm_report_plot_t *p, double v);
// The y pixel of value |v| on |p|'s y axis (clamped into the plot).
double wm_report_plot_y(const wm_report_plot_t *p, double v);
// A round step (1, 2 or 5 x 10^k) giving about |n| ticks up to |max| > 0.
double wm_report_nice_step(double max, int n);
// A label for 10^e: "0.01", "1", "100", "10k", "1M", "1e-5".
void wm_report_decade_label(int e, char *buf, size_t cap);
// The |i|-th colour of a categorical palette (cycles after 10).
const char *wm_report_color(size_t i);

// Opens an <svg> of class |cls|, |w| x |h| px, labelled |label| (escaped).
void wm_report_svg_open(wm_strbuf_t *out, const char *cls, int w, int h,
                        const char *label);
// Closes the <svg>.
void wm_report_svg_close(wm_strbuf_t *out);
// A <text> at (x, y) anchored "start", "middle" or "end"; |extra| (may be
// NULL) is appended to the tag as is, |text| is escaped.
void wm_report_svg_text(wm_strbuf_t *out, double x, double y,
                        const char *anchor, const char *extra,
                        const char *text);
// Grid, ticks, labels, frame and titles of |p| in a <g class="axes">. A log
// axis whose range is whole decades gets a line per decade with minor ticks
// at 2..9 (labels on every decade, every other one past 10 decades on x and
// 8 on y); other log axes get 1-2-5 ticks (about 8 round linear ones when
// the range is under a decade); a linear axis gets about 6 round ticks, or
// one every
// xstep / ystep when that is set (at most 200). Labels come from
// |xfmt| / |yfmt| (NULL: wm_report_decade_label on decades, else "%g").
void wm_report_svg_axes(wm_strbuf_t *out, const wm_report_plot_t *p,
                        wm_report_fmt_fn xfmt, wm_report_fmt_fn yfmt,
                        const char *xtitle, const char *ytitle);
// A legend entry (a coloured dot and |label|) from |x| at baseline |y|;
// returns the x after it.
double wm_report_svg_legend_item(wm_strbuf_t *out, double x, double y,
                                 const char *color, const char *label);

// One bar of a Pareto chart.
typedef struct wm_report_bar {
  const char *label;  // under the bar, cut to 18 bytes
  const char *title;  // tooltip prefix, e.g. "Conv (12 nodes)"
  double value;       // seconds; bars <= 0 or not finite are left out
} wm_report_bar_t;

// A Pareto chart: bars sorted largest first (the rest past 24 merged into
// one grey bar "other (k)", its tooltip "k other |other_what|"), a time
// axis on the left titled |ytitle|, and the cumulative share as a line
// with dots against a 0-100 % axis on the right. Draws nothing when no bar
// has a value; returns the sum of the values.
double wm_report_svg_pareto(wm_strbuf_t *out, const wm_report_bar_t *bars,
                            size_t n, const char *ytitle,
                            const char *other_what, const char *label);

// ------------------------------------------------------------- sorting

// An index with the value it is ranked by.
typedef struct wm_report_rank {
  double key;
  size_t index;
} wm_report_rank_t;

// qsort comparator: larger keys first, equal keys by index (deterministic).
int wm_report_rank_desc(const void *a, const void *b);

WM_API_END

#ifdef __cplusplus
}
#endif

#endif  // WMAP_REPORT_H_
