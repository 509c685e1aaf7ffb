// The map's text and Markdown reports. Both present the same sections from
// the same tables (rows of cells built once); the text form aligns columns
// within 100 columns (names truncated with "...", free text wrapped) and
// may colour class and cover words, the Markdown form writes pipe tables.
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "wmap/backend.h"
#include "wmap/session.h"

#define TEXT_WIDTH 100
#define T_MAX_COLS 16
#define TOP_LIVE 5
#define TOP_NODES 15
#define TOP_PATH 20
#define MAX_COVER_COLUMNS 3  // more backends: coverage only in its section

// Column flags.
enum {
  T_RIGHT = 1u,   // right-aligned (numbers)
  T_SHRINK = 2u,  // a name: truncated first when the table is too wide
  T_WRAP = 4u,    // free text: wrapped onto continuation lines
  T_WORDS = 8u,   // colour class, cover and verdict words
};

#define C_RESET "\x1b[0m"
#define C_BOLD "\x1b[1m"
#define C_RED "\x1b[31m"
#define C_GREEN "\x1b[32m"
#define C_YELLOW "\x1b[33m"
#define C_BLUE "\x1b[34m"
#define C_MAGENTA "\x1b[35m"
#define C_CYAN "\x1b[36m"

// Short cover names for narrow columns, by wm_map_cover_t.
static const char *const kCoverShort[WM_COVER_COUNT] = {"lib", "nat", "gen",
                                                        "fb", "miss"};
static const char *const kCoverTint[WM_COVER_COUNT] = {
    C_GREEN, C_GREEN, C_GREEN, C_YELLOW, C_RED};

// ------------------------------------------------------------- tables

// A table built once and rendered as text or Markdown.
typedef struct table {
  wm_arena_t arena;              // cell strings
  size_t n_cols;                 // columns in use
  const char *head[T_MAX_COLS];  // header per column
  unsigned flags[T_MAX_COLS];    // T_* per column
  const char *tint[T_MAX_COLS];  // colour of non-zero cells, or NULL
  size_t n_rows;                 // rows added
  size_t cap;                    // rows allocated
  const char **cells;            // n_rows * T_MAX_COLS; NULL = empty
  bool dropped;                  // the last t_row ran out of memory
} table_t;

static void t_init(table_t *t) {
  memset(t, 0, sizeof(*t));
  wm_arena_init(&t->arena);
}

static void t_deinit(table_t *t) {
  wm_arena_deinit(&t->arena);
  free(t->cells);
}

// Replaces control characters so that no data can emit escape codes.
static void sanitize(char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c < 0x20 || c == 0x7f) {
      *s = '?';
    } else if (c == 0xC2 && (unsigned char)s[1] >= 0x80 &&
               (unsigned char)s[1] <= 0x9F) {
      s[0] = '?';  // a C1 control in UTF-8 (U+0080..U+009F)
      s[1] = '?';
      s++;
    }
  }
}

// Formats into a heap string with control characters replaced (NULL when
// out of memory).
static char *vformat(const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) {
    return NULL;
  }
  char *s = wm_malloc((size_t)n + 1);
  if (s) {
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    sanitize(s);
  }
  return s;
}

static void t_col(table_t *t, const char *head, unsigned flags) {
  if (t->n_cols < T_MAX_COLS) {
    t->head[t->n_cols] = head;
    t->flags[t->n_cols] = flags;
    t->n_cols++;
  }
}

// Starts a row; its cells are empty until t_cell sets them.
static void t_row(table_t *t) {
  t->dropped = true;
  if (t->n_rows == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 16;
    size_t bytes;
    if (!wm_checked_mul(cap, T_MAX_COLS * sizeof(char *), &bytes)) {
      return;
    }
    const char **cells = wm_realloc(t->cells, bytes);
    if (!cells) {
      return;  // the row is dropped; the report stays well-formed
    }
    t->cells = cells;
    t->cap = cap;
  }
  memset(&t->cells[t->n_rows * T_MAX_COLS], 0, T_MAX_COLS * sizeof(char *));
  t->n_rows++;
  t->dropped = false;
}

// Sets cell |col| of the last row.
static void t_cell(table_t *t, size_t col, const char *fmt, ...)
    WM_PRINTF(3, 4);
static void t_cell(table_t *t, size_t col, const char *fmt, ...) {
  if (t->dropped || t->n_rows == 0 || col >= t->n_cols) {
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  char *s = vformat(fmt, ap);
  va_end(ap);
  if (s) {
    t->cells[(t->n_rows - 1) * T_MAX_COLS + col] =
        wm_arena_strdup(&t->arena, s);
    free(s);
  }
}

static const char *t_get(const table_t *t, size_t row, size_t col) {
  const char *s = t->cells[row * T_MAX_COLS + col];
  return s ? s : "";
}

// ------------------------------------------------------------- report

typedef struct report {
  wm_strbuf_t *out;
  bool md;      // Markdown, else text
  bool color;   // ANSI colour (text only)
  bool fresh;   // text: the next paragraph needs no blank line before it
  size_t pend;  // spaces owed before the next visible text on this line
} report_t;

// Width of |s| in code points (UTF-8 continuation bytes do not count).
static size_t disp_width(const char *s, size_t n) {
  size_t w = 0;
  for (size_t i = 0; i < n; i++) {
    if (((unsigned char)s[i] & 0xC0) != 0x80) {
      w++;
    }
  }
  return w;
}

// Bytes taken by the first |w| code points of the |n| bytes at |s|.
static size_t prefix_bytes(const char *s, size_t n, size_t w) {
  size_t i = 0, k = 0;
  while (i < n) {
    if (((unsigned char)s[i] & 0xC0) != 0x80) {
      if (k == w) {
        break;
      }
      k++;
    }
    i++;
  }
  return i;
}

// Appends |n| bytes of visible text, first paying the owed spaces.
static void put(report_t *r, const char *s, size_t n) {
  static const char spaces[] = "                                ";
  while (r->pend > 0) {
    size_t k = r->pend < sizeof(spaces) - 1 ? r->pend : sizeof(spaces) - 1;
    wm_strbuf_append(r->out, spaces, k);
    r->pend -= k;
  }
  wm_strbuf_append(r->out, s, n);
}

static void put_str(report_t *r, const char *s) {
  put(r, s, strlen(s));
}

// Appends an escape code. A colour first pays the owed spaces (visible
// text follows); a reset leaves them owed, so padding at the end of a line
// is never written and the text with the codes removed is exactly the text
// without colour.
static void put_color(report_t *r, const char *code) {
  if (r->color && code) {
    if (strcmp(code, C_RESET) != 0) {
      put(r, "", 0);  // a colour starts visible text: pay the spaces first
    }
    wm_strbuf_append(r->out, code, strlen(code));
  }
}

static void newline(report_t *r) {
  r->pend = 0;
  wm_strbuf_append(r->out, "\n", 1);
}

// The colour of a class, cover or verdict word, or NULL.
static const char *word_color(const char *w, size_t n) {
  static const struct {
    const char *word;
    const char *color;
  } kWords[] = {
      {"lib", C_GREEN},
      {"nat", C_GREEN},
      {"gen", C_GREEN},
      {"covered", C_GREEN},
      {"fb", C_YELLOW},
      {"fallback", C_YELLOW},
      {"miss", C_RED},
      {"missing", C_RED},
      {"compute", C_BLUE},
      {"memory", C_MAGENTA},
      {"communication", C_CYAN},
      {"comm", C_CYAN},
      {"good", C_GREEN},
      {"maybe", C_YELLOW},
      {"poor", C_RED},
      {"yes", C_GREEN},
      {"no", C_RED},
  };
  for (size_t i = 0; i < sizeof(kWords) / sizeof(kWords[0]); i++) {
    if (strlen(kWords[i].word) == n && memcmp(kWords[i].word, w, n) == 0) {
      return kWords[i].color;
    }
  }
  return NULL;
}

static bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Appends |n| bytes of a cell, colouring known words when asked.
static void put_words(report_t *r, const char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    if (is_alpha(s[i])) {
      while (j < n && is_alpha(s[j])) {
        j++;
      }
      const char *c = r->color ? word_color(s + i, j - i) : NULL;
      put_color(r, c);
      put(r, s + i, j - i);
      put_color(r, c ? C_RESET : NULL);
    } else {
      while (j < n && !is_alpha(s[j])) {
        j++;
      }
      put(r, s + i, j - i);
    }
    i = j;
  }
}

// Appends the first |w| columns of |s| as cell |col| of |t|, padded to |w|:
// truncated with "..." when longer.
static void put_cell(report_t *r, const table_t *t, size_t col, const char *s,
                     size_t n, size_t w) {
  size_t sw = disp_width(s, n);
  bool cut = sw > w && w > 3;
  if (sw > w) {
    n = prefix_bytes(s, n, cut ? w - 3 : w);
    sw = w;
  }
  bool right = (t->flags[col] & T_RIGHT) != 0;
  if (right) {
    r->pend += w - sw;
  }
  const char *tint = t->tint[col];
  bool zero = n == 0 || (n == 1 && (s[0] == '0' || s[0] == '-'));
  if (n > 0 && tint && !zero && r->color) {
    put_color(r, tint);
    put(r, s, n);
    put_color(r, C_RESET);
  } else if (n > 0 && (t->flags[col] & T_WORDS)) {
    put_words(r, s, n);
  } else if (n > 0) {
    put(r, s, n);
  }
  if (cut) {
    put_str(r, "...");
  }
  if (!right) {
    r->pend += w - sw;
  }
}

// The next piece of at most |w| columns of |*s| (breaking at a space when
// one is there); advances *s past it and the spaces after it.
static size_t wrap_next(const char **s, size_t w) {
  const char *p = *s;
  size_t len = strlen(p);
  size_t n = prefix_bytes(p, len, w > 0 ? w : 1);
  size_t cut = n;
  if (n < len && p[n] != ' ') {
    size_t k = n;
    while (k > 0 && p[k - 1] != ' ') {
      k--;
    }
    if (k > 1) {
      cut = k - 1;
    }
  }
  size_t next = cut;
  while (cut > 0 && p[cut - 1] == ' ') {
    cut--;
  }
  while (p[next] == ' ') {
    next++;
  }
  *s = p + next;
  return cut;
}

static void table_text(report_t *r, const table_t *t) {
  size_t n = t->n_cols, w[T_MAX_COLS];
  if (n == 0) {
    return;
  }
  for (size_t c = 0; c < n; c++) {
    w[c] = disp_width(t->head[c], strlen(t->head[c]));
    for (size_t i = 0; i < t->n_rows; i++) {
      const char *s = t_get(t, i, c);
      size_t sw = disp_width(s, strlen(s));
      w[c] = sw > w[c] ? sw : w[c];
    }
  }
  size_t gap = 2, total = 0;
  for (size_t c = 0; c < n; c++) {
    total += w[c];
  }
  total += gap * (n - 1);
  // Too wide: wrap free text (down to 30 columns), then close the gaps to
  // one space, then truncate names (down to 10), then anything (down to 4).
  for (int pass = 0; pass < 4 && total > TEXT_WIDTH; pass++) {
    if (pass == 1) {
      if (n > 1) {
        gap = 1;
        total -= n - 1;
      }
      continue;
    }
    while (total > TEXT_WIDTH) {
      size_t best = SIZE_MAX;
      for (size_t c = 0; c < n; c++) {
        size_t min = pass == 3                               ? 4
                     : pass == 0 && (t->flags[c] & T_WRAP)   ? 30
                     : pass == 2 && (t->flags[c] & T_SHRINK) ? 10
                     : pass == 2 && (t->flags[c] & T_WRAP)   ? 24
                                                             : SIZE_MAX;
        if (min != SIZE_MAX && w[c] > min &&
            (best == SIZE_MAX || w[c] > w[best])) {
          best = c;
        }
      }
      if (best == SIZE_MAX) {
        break;
      }
      w[best]--;
      total--;
    }
  }
  for (size_t c = 0; c < n; c++) {
    if (c > 0) {
      r->pend += gap;
    }
    put_color(r, *t->head[c] ? C_BOLD : NULL);
    put_cell(r, t, c, t->head[c], strlen(t->head[c]), w[c]);
    put_color(r, *t->head[c] ? C_RESET : NULL);
  }
  newline(r);
  for (size_t c = 0; c < n; c++) {
    if (c > 0) {
      r->pend += gap;
    }
    for (size_t k = 0; k < w[c]; k++) {
      put(r, "-", 1);
    }
  }
  newline(r);
  for (size_t i = 0; i < t->n_rows; i++) {
    const char *rest[T_MAX_COLS];
    bool more = false;
    for (size_t c = 0; c < n; c++) {
      if (c > 0) {
        r->pend += gap;
      }
      const char *s = t_get(t, i, c);
      size_t len = strlen(s);
      rest[c] = "";
      if ((t->flags[c] & T_WRAP) && disp_width(s, len) > w[c]) {
        len = wrap_next(&s, w[c]);
        rest[c] = s;
        more = more || *s;
      }
      put_cell(r, t, c, t_get(t, i, c), len, w[c]);
    }
    newline(r);
    while (more) {
      more = false;
      for (size_t c = 0; c < n; c++) {
        if (c > 0) {
          r->pend += gap;
        }
        const char *s = rest[c];
        size_t len = *s ? wrap_next(&rest[c], w[c]) : 0;
        put_cell(r, t, c, s, len, w[c]);
        more = more || *rest[c];
      }
      newline(r);
    }
  }
}

// Appends |n| bytes of |s| escaped for Markdown (inline text or a cell).
static void md_escape(wm_strbuf_t *out, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    bool word_before =
        i > 0 && (is_alpha(s[i - 1]) || (s[i - 1] >= '0' && s[i - 1] <= '9'));
    bool word_after = i + 1 < n && (is_alpha(s[i + 1]) ||
                                    (s[i + 1] >= '0' && s[i + 1] <= '9'));
    if ((unsigned char)c < 0x20 || c == 0x7f) {
      wm_strbuf_append(out, " ", 1);
    } else if (c == '|' || c == '\\' || c == '*' || c == '`' || c == '<' ||
               c == '>' || c == '[' || c == ']' ||
               (c == '_' && !(word_before && word_after))) {
      wm_strbuf_append(out, "\\", 1);
      wm_strbuf_append(out, &c, 1);
    } else {
      wm_strbuf_append(out, &c, 1);
    }
  }
}

static void md_escape_str(wm_strbuf_t *out, const char *s) {
  md_escape(out, s, strlen(s));
}

static void table_md(report_t *r, const table_t *t) {
  wm_strbuf_t *out = r->out;
  if (t->n_cols == 0) {
    return;
  }
  wm_strbuf_append(out, "|", 1);
  for (size_t c = 0; c < t->n_cols; c++) {
    wm_strbuf_append(out, " ", 1);
    md_escape_str(out, t->head[c]);
    wm_strbuf_append(out, " |", 2);
  }
  wm_strbuf_append(out, "\n|", 2);
  for (size_t c = 0; c < t->n_cols; c++) {
    wm_strbuf_printf(out, "%s|", (t->flags[c] & T_RIGHT) ? "---:" : "---");
  }
  wm_strbuf_append(out, "\n", 1);
  for (size_t i = 0; i < t->n_rows; i++) {
    wm_strbuf_append(out, "|", 1);
    for (size_t c = 0; c < t->n_cols; c++) {
      wm_strbuf_append(out, " ", 1);
      md_escape_str(out, t_get(t, i, c));
      wm_strbuf_append(out, " |", 2);
    }
    wm_strbuf_append(out, "\n", 1);
  }
}

// Emits |t| in the report's form and frees it.
static void emit_table(report_t *r, table_t *t) {
  if (r->md) {
    table_md(r, t);
    wm_strbuf_append(r->out, "\n", 1);
  } else {
    table_text(r, t);
  }
  r->fresh = false;
  t_deinit(t);
}

static void title(report_t *r, const char *fmt, ...) WM_PRINTF(2, 3);
static void title(report_t *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = vformat(fmt, ap);
  va_end(ap);
  if (!s) {
    return;
  }
  if (r->md) {
    wm_strbuf_append(r->out, "## ", 3);
    md_escape_str(r->out, s);
    wm_strbuf_append(r->out, "\n\n", 2);
  } else {
    newline(r);
    put_color(r, C_BOLD);
    put_str(r, "== ");
    put(r, s, prefix_bytes(s, strlen(s), TEXT_WIDTH - 6));
    put_str(r, " ==");
    put_color(r, C_RESET);
    newline(r);
  }
  free(s);
  r->fresh = true;
}

// Writes free text: wrapped at 100 columns in text (continuation lines
// indented by |indent|), a paragraph in Markdown. |lead| (may be "") comes
// first, bold in Markdown and coloured by |lead_color| in text.
static void vpara(report_t *r, const char *lead, const char *lead_color,
                  size_t indent, const char *fmt, va_list ap) {
  char *s = vformat(fmt, ap);
  if (!s) {
    return;
  }
  if (r->md) {
    if (*lead) {
      wm_strbuf_printf(r->out, "> **%s** ", lead);  // a blockquote
    }
    md_escape_str(r->out, s);
    wm_strbuf_append(r->out, "\n\n", 2);
  } else {
    if (!r->fresh) {
      newline(r);
    }
    size_t lw = strlen(lead);
    if (lw) {
      put_color(r, lead_color);
      put_str(r, lead);
      put_color(r, lead_color ? C_RESET : NULL);
      r->pend = 1;
      lw++;
    }
    size_t avail = TEXT_WIDTH - lw;
    const char *p = s;
    bool first = true;
    while (first || *p) {
      const char *start = p;
      size_t n = wrap_next(&p, first ? avail : TEXT_WIDTH - indent);
      if (!first) {
        r->pend = indent;
      }
      put(r, start, n);
      newline(r);
      first = false;
    }
  }
  free(s);
  r->fresh = false;
}

static void para(report_t *r, const char *fmt, ...) WM_PRINTF(2, 3);
static void para(report_t *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vpara(r, "", NULL, 2, fmt, ap);
  va_end(ap);
}

// A paragraph that introduces what follows directly (no blank line after
// it in text).
static void label(report_t *r, const char *fmt, ...) WM_PRINTF(2, 3);
static void label(report_t *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vpara(r, "", NULL, 2, fmt, ap);
  va_end(ap);
  r->fresh = true;
}

static void note(report_t *r, const char *fmt, ...) WM_PRINTF(2, 3);
static void note(report_t *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vpara(r, "note:", C_YELLOW, 6, fmt, ap);
  va_end(ap);
  r->fresh = true;
}

// ------------------------------------------------------------- numbers

static const char *nz(const char *s) {
  return s ? s : "";
}

// |v| with thousands separators: "25,557,032".
static const char *fmt_int(int64_t v, char *buf) {
  char digits[32];
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)u);
  char *p = buf;
  if (v < 0) {
    *p++ = '-';
  }
  for (int i = 0; i < n; i++) {
    if (i > 0 && (n - i) % 3 == 0) {
      *p++ = ',';
    }
    *p++ = digits[i];
  }
  *p = '\0';
  return buf;
}

static const char *fmt_si(double v, char *buf) {
  return wm_map_fmt_si(v, buf);
}

// FLOP per byte, "-" when no bytes move.
static const char *fmt_intensity(double flops, double bytes, char *buf) {
  if (!(bytes > 0)) {
    snprintf(buf, WM_MAP_FMT_LEN, "-");
    return buf;
  }
  return wm_map_fmt_si(flops / bytes, buf);
}

// GFLOP/s or GB/s, "-" when unknown.
static const char *fmt_rate(double v, char *buf) {
  if (!(v > 0)) {
    snprintf(buf, WM_MAP_FMT_LEN, "-");
  } else {
    snprintf(buf, WM_MAP_FMT_LEN, v >= 100 ? "%.0f" : "%.1f", v);
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

static void section_header(report_t *r, const wm_map_t *m) {
  char *model = wm_strdup(nz(m->model));
  if (model) {
    sanitize(model);
    if (r->md) {
      wm_strbuf_append(r->out, "# wmap map: ", 12);
      md_escape_str(r->out, model);
      wm_strbuf_append(r->out, "\n\n", 2);
    } else {
      put_color(r, C_BOLD);
      put_str(r, "wmap map: ");
      put(r, model, prefix_bytes(model, strlen(model), TEXT_WIDTH - 10));
      put_color(r, C_RESET);
      newline(r);
      r->fresh = true;
    }
    free(model);
  }
  label(r, "graph \"%s\", opset %lld, %zu nodes, %zu backend%s",
        nz(m->graph_name), (long long)m->opset, m->n_nodes, m->n_backends,
        m->n_backends == 1 ? "" : "s");
  if (m->n_dims > 0) {
    wm_strbuf_t d;
    wm_strbuf_init(&d);
    for (size_t i = 0; i < m->n_dims; i++) {
      wm_strbuf_printf(&d, "%s%s=%lld", i ? ", " : "", nz(m->dims[i].name),
                       (long long)m->dims[i].value);
    }
    label(r, "dims: %s", wm_strbuf_str(&d));
    wm_strbuf_deinit(&d);
  }
  if (m->have_machine) {
    const wm_machine_t *mc = &m->machine;
    label(r, "machine: %.128s, %d cores, kernel %.80s (fingerprint %.17s)",
          mc->model, (int)mc->cores, mc->kernel, mc->fingerprint);
  }
  for (size_t i = 0; i < m->n_notes; i++) {
    note(r, "%s", nz(m->notes[i]));
  }
  r->fresh = false;
}

static void section_totals(report_t *r, const wm_map_t *m) {
  const wm_map_totals_t *tt = &m->totals;
  const wm_map_memory_t *mem = &m->memory;
  char a[WM_MAP_FMT_LEN], b[WM_MAP_FMT_LEN];
  title(r, "Totals");
  table_t t;
  t_init(&t);
  t_col(&t, "quantity", 0);
  t_col(&t, "value", T_RIGHT);
  t_col(&t, "detail", T_WRAP);
  t_row(&t);
  t_cell(&t, 0, "params");
  t_cell(&t, 1, "%s", fmt_int(tt->params, a));
  t_cell(&t, 2, "%s learnable (BatchNormalization statistics excluded)",
         fmt_si((double)tt->params, b));
  t_row(&t);
  t_cell(&t, 0, "MACs");
  t_cell(&t, 1, "%s", fmt_si(tt->macs, a));
  t_cell(&t, 2, "multiply-accumulates of contractions");
  t_row(&t);
  t_cell(&t, 0, "FLOPs");
  t_cell(&t, 1, "%s", fmt_si(tt->flops, a));
  t_cell(&t, 2, "FLOPs = 2 x MACs for contractions");
  t_row(&t);
  t_cell(&t, 0, "transcendentals");
  t_cell(&t, 1, "%s", fmt_si(tt->transcendentals, a));
  t_cell(&t, 2, "exp, log, tanh, erf, sqrt... evaluations");
  double traffic = 0;  // per node (a shared weight counts at each reader)
  for (size_t i = 0; i < m->n_nodes; i++) {
    traffic += node_bytes(&m->nodes[i]);
  }
  t_row(&t);
  t_cell(&t, 0, "bytes moved");
  t_cell(&t, 1, "%s", wm_map_fmt_bytes(traffic, a));
  t_cell(&t, 2, "every node's inputs, weights and outputs, each once");
  t_row(&t);
  t_cell(&t, 0, "intensity");
  t_cell(&t, 1, "%s", fmt_intensity(tt->flops, traffic, a));
  t_cell(&t, 2, "FLOP per byte moved");
  t_row(&t);
  t_cell(&t, 0, "weight bytes");
  t_cell(&t, 1, "%s", wm_map_fmt_bytes((double)mem->weight_bytes, a));
  t_cell(&t, 2, "every initializer");
  t_row(&t);
  t_cell(&t, 0, "peak activations");
  t_cell(&t, 1, "%s", wm_map_fmt_bytes((double)mem->peak_activation_bytes, a));
  if (mem->peak_node < m->n_nodes && mem->peak_activation_bytes > 0) {
    const wm_map_node_t *pn = &m->nodes[mem->peak_node];
    t_cell(&t, 2, "at node \"%s\" (%s)", nz(pn->name), nz(pn->op_type));
  }
  t_row(&t);
  t_cell(&t, 0, "weights + peak");
  t_cell(
      &t, 1, "%s",
      wm_map_fmt_bytes(
          (double)mem->weight_bytes + (double)mem->peak_activation_bytes, a));
  t_cell(&t, 2, "memory the run needs at least");
  t_row(&t);
  t_cell(&t, 0, "nodes");
  t_cell(&t, 1, "%zu", tt->nodes);
  t_cell(&t, 2, "%zu unmapped", tt->unmapped);
  emit_table(r, &t);
  if (mem->n_live == 0 || !mem->live) {
    return;
  }
  size_t n = mem->n_live < TOP_LIVE ? mem->n_live : TOP_LIVE;
  label(r, "top live tensors at the peak (%zu of %zu):", n, mem->n_live);
  t_init(&t);
  t_col(&t, "tensor", T_SHRINK);
  t_col(&t, "bytes", T_RIGHT);
  t_col(&t, "% of peak", T_RIGHT);
  for (size_t i = 0; i < n; i++) {
    t_row(&t);
    t_cell(&t, 0, "%s", nz(mem->live[i].name));
    t_cell(&t, 1, "%s", wm_map_fmt_bytes((double)mem->live[i].bytes, a));
    t_cell(&t, 2, "%s",
           wm_map_fmt_pct((double)mem->live[i].bytes,
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

static void section_inventory(report_t *r, const wm_map_t *m) {
  char a[WM_MAP_FMT_LEN], lbl[160];
  size_t cb = crit_backend(m);
  title(r, "Operators by type");
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
  table_t t;
  t_init(&t);
  t_col(&t, "op type", T_SHRINK);
  t_col(&t, "count", T_RIGHT);
  t_col(&t, "MACs", T_RIGHT);
  t_col(&t, "FLOPs", T_RIGHT);
  t_col(&t, "%FLOPs", T_RIGHT);
  t_col(&t, "bytes", T_RIGHT);
  t_col(&t, "FLOP/B", T_RIGHT);
  t_col(&t, "params", T_RIGHT);
  if (cb != SIZE_MAX) {
    t_col(&t, "bound", T_WORDS);
  }
  size_t first_cover = t.n_cols;
  for (size_t b = 0; per_backend && b < m->n_backends; b++) {
    t_col(&t, nz(m->backends[b].name), T_WORDS);
  }
  for (size_t k = 0; k < m->n_types; k++) {
    const wm_map_optype_t *ty = &m->types[k];
    double bytes = (double)ty->act_in_bytes + (double)ty->weight_bytes +
                   (double)ty->out_bytes;
    t_row(&t);
    t_cell(&t, 0, "%s", type_label(ty->op_type, ty->domain, lbl, sizeof(lbl)));
    t_cell(&t, 1, "%zu", ty->count);
    t_cell(&t, 2, "%s", fmt_si(ty->macs, a));
    t_cell(&t, 3, "%s", fmt_si(ty->flops, a));
    t_cell(&t, 4, "%s", wm_map_fmt_pct(ty->flops, m->totals.flops, a));
    t_cell(&t, 5, "%s", wm_map_fmt_bytes(bytes, a));
    t_cell(&t, 6, "%s", fmt_intensity(ty->flops, bytes, a));
    t_cell(&t, 7, "%s", fmt_si((double)ty->params, a));
    if (by_bound) {
      int best = 0;
      for (int c = 1; c < 4; c++) {
        if (by_bound[k * 4 + c] > by_bound[k * 4 + best]) {
          best = c;
        }
      }
      t_cell(&t, 8, "%s",
             by_bound[k * 4 + best] > 0
                 ? wm_map_bound_name((wm_map_bound_t)best)
                 : "-");
    } else if (cb != SIZE_MAX) {
      t_cell(&t, 8, "?");
    }
    for (size_t b = 0; per_backend && b < m->n_backends && ty->cells; b++) {
      cover_summary(ty->cells[b].count, lbl, sizeof(lbl));
      t_cell(&t, first_cover + b, "%s", lbl);
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
    para(r,
         "bytes = activations in + weights + outputs; bound: the class "
         "holding most of the type's roofline time on %s; cover per "
         "backend: %s%s",
         nz(m->backends[cb].name), wm_strbuf_str(&legend),
         per_backend ? "" : " (see Coverage: too many backends for columns)");
  }
  wm_strbuf_deinit(&legend);
}

static void section_roofline(report_t *r, const wm_map_t *m) {
  char a[WM_MAP_FMT_LEN];
  if (m->n_backends == 0) {
    return;
  }
  title(r, "Roofline per backend");
  table_t t;
  t_init(&t);
  t_col(&t, "backend", T_SHRINK);
  t_col(&t, "target", T_SHRINK);
  t_col(&t, "GFLOP/s", T_RIGHT);
  t_col(&t, "GB/s", T_RIGHT);
  t_col(&t, "ridge", T_RIGHT);
  t_col(&t, "peaks", 0);
  t_col(&t, "t_roof", T_RIGHT);
  t_col(&t, "compute", T_RIGHT);
  t_col(&t, "memory", T_RIGHT);
  t_col(&t, "comm", T_RIGHT);
  t_col(&t, "unknown", T_RIGHT);
  t.tint[7] = C_BLUE;
  t.tint[8] = C_MAGENTA;
  t.tint[9] = C_CYAN;
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
    t_row(&t);
    t_cell(&t, 0, "%s", nz(be->name));
    t_cell(&t, 1, "%s", nz(be->target));
    t_cell(&t, 2, "%s", fmt_rate(be->peak_gflops, a));
    t_cell(&t, 3, "%s", fmt_rate(be->bandwidth_gbs, a));
    if (be->ridge > 0) {
      t_cell(&t, 4, "%.1f", be->ridge);
    } else {
      t_cell(&t, 4, "-");
    }
    t_cell(&t, 5, "%s", nz(be->peak_source));
    t_cell(&t, 6, "%s", wm_map_fmt_time(be->t_roof, a));
    t_cell(&t, 7, "%s", wm_map_fmt_pct(split[WM_BOUND_COMPUTE], whole, a));
    t_cell(&t, 8, "%s", wm_map_fmt_pct(split[WM_BOUND_MEMORY], whole, a));
    t_cell(&t, 9, "%s",
           wm_map_fmt_pct(split[WM_BOUND_COMMUNICATION], whole, a));
    t_cell(&t, 10, "%s", wm_map_fmt_pct(split[WM_BOUND_UNKNOWN], whole, a));
  }
  emit_table(r, &t);
  para(r,
       "GFLOP/s: fp32 peak; ridge: FLOP per byte where compute and memory "
       "time meet; t_roof: sum over nodes of max(FLOPs / peak, bytes / "
       "bandwidth%s), split by the class that bounds each node",
       m->plan.enabled ? ", communication" : "");
}

static void section_coverage(report_t *r, const wm_map_t *m) {
  char a[WM_MAP_FMT_LEN], b2[WM_MAP_FMT_LEN], lbl[160];
  if (m->n_backends == 0) {
    return;
  }
  title(r, "Coverage per backend");
  table_t t;
  t_init(&t);
  t_col(&t, "backend", T_SHRINK);
  t_col(&t, "covered", T_RIGHT);
  t_col(&t, "%", T_RIGHT);
  for (int k = 0; k < WM_COVER_COUNT; k++) {
    t_col(&t, kCoverShort[k], T_RIGHT);
    t.tint[t.n_cols - 1] = kCoverTint[k];
  }
  t_col(&t, "%FLOPs", T_RIGHT);
  t_col(&t, "%t_roof", T_RIGHT);
  t_col(&t, "parts", T_RIGHT);
  t_col(&t, "copies", T_RIGHT);
  t_col(&t, "copy B", T_RIGHT);
  t_col(&t, "suits", T_WORDS);
  for (size_t b = 0; b < m->n_backends; b++) {
    const wm_map_backend_t *be = &m->backends[b];
    t_row(&t);
    t_cell(&t, 0, "%s%s", nz(be->name), be->fallback ? " (fb)" : "");
    t_cell(&t, 1, "%zu/%zu", be->nodes_covered, m->n_nodes);
    t_cell(&t, 2, "%s",
           wm_map_fmt_pct((double)be->nodes_covered, (double)m->n_nodes, a));
    for (int k = 0; k < WM_COVER_COUNT; k++) {
      t_cell(&t, 3 + (size_t)k, "%zu", be->count[k]);
    }
    t_cell(&t, 8, "%s", wm_map_fmt_pct(be->flops_covered, m->totals.flops, a));
    t_cell(&t, 9, "%s", wm_map_fmt_pct(be->t_roof_covered, be->t_roof, a));
    t_cell(&t, 10, "%zu", be->partitions);
    t_cell(&t, 11, "%zu", be->boundary_copies);
    t_cell(&t, 12, "%s", wm_map_fmt_bytes((double)be->boundary_bytes, a));
    t_cell(&t, 13, "%s", nz(be->suitability));
  }
  emit_table(r, &t);
  bool any_fallback = false;
  for (size_t b = 0; b < m->n_backends; b++) {
    any_fallback = any_fallback || m->backends[b].fallback;
  }
  para(r,
       "covered = lib + nat + gen (the backend runs the node itself); fb: "
       "the fallback runs it; parts: runs of consecutive nodes on one side; "
       "copies: tensors crossing to the fallback; suits: ORT's rule%s",
       any_fallback ? "; (fb) marks the fallback backend" : "");
  for (size_t b = 0; b < m->n_backends; b++) {
    const wm_map_backend_t *be = &m->backends[b];
    if (be->n_todo == 0 || !be->todo) {
      bool all =
          be->count[WM_COVER_FALLBACK] + be->count[WM_COVER_MISSING] == 0;
      para(r, "operators to write for %s: %s", nz(be->name),
           all ? "none: every node is covered"
               : "none listed (the uncovered nodes could not be analysed)");
      continue;
    }
    label(r, "operators to write for %s (%zu):", nz(be->name), be->n_todo);
    t_init(&t);
    t_col(&t, "op type", T_SHRINK);
    t_col(&t, "nodes", T_RIGHT);
    t_col(&t, "FLOPs", T_RIGHT);
    t_col(&t, "%FLOPs", T_RIGHT);
    t_col(&t, "reason", 0);
    t_col(&t, "detail", T_WRAP);
    for (size_t i = 0; i < be->n_todo; i++) {
      const wm_map_todo_t *td = &be->todo[i];
      t_row(&t);
      t_cell(&t, 0, "%s",
             type_label(td->op_type, td->domain, lbl, sizeof(lbl)));
      t_cell(&t, 1, "%zu", td->nodes);
      t_cell(&t, 2, "%s", fmt_si(td->flops, a));
      t_cell(&t, 3, "%s", wm_map_fmt_pct(td->flops, m->totals.flops, b2));
      t_cell(&t, 4, "%s", wm_why_name(td->reason));
      t_cell(&t, 5, "%s", nz(td->detail));
    }
    emit_table(r, &t);
  }
}

// A node position with its roofline time, for sorting.
typedef struct ranked {
  double t;
  size_t pos;
} ranked_t;

static int ranked_cmp(const void *pa, const void *pb) {
  const ranked_t *x = pa, *y = pb;
  if (x->t != y->t) {
    return x->t > y->t ? -1 : 1;
  }
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static void section_top(report_t *r, const wm_map_t *m) {
  char a[WM_MAP_FMT_LEN];
  size_t cb = crit_backend(m);
  if (cb == SIZE_MAX || m->n_nodes == 0) {
    return;
  }
  const wm_map_backend_t *be = &m->backends[cb];
  ranked_t *rk = wm_calloc(m->n_nodes, sizeof(ranked_t));
  if (!rk) {
    return;
  }
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_map_cell_t *c = cell(m, i, cb);
    rk[i].t = c ? c->t_roof : 0;
    rk[i].pos = i;
  }
  qsort(rk, m->n_nodes, sizeof(ranked_t), ranked_cmp);
  size_t n = m->n_nodes < TOP_NODES ? m->n_nodes : TOP_NODES;
  title(r, "Top %zu nodes by roofline time on %s", n, nz(be->name));
  table_t t;
  t_init(&t);
  t_col(&t, "node", T_SHRINK);
  t_col(&t, "op", T_SHRINK);
  t_col(&t, "FLOPs", T_RIGHT);
  t_col(&t, "bytes", T_RIGHT);
  t_col(&t, "FLOP/B", T_RIGHT);
  t_col(&t, "bound", T_WORDS);
  t_col(&t, "t_roof", T_RIGHT);
  t_col(&t, "%", T_RIGHT);
  t_col(&t, "slack", T_RIGHT);
  t_col(&t, "cp", 0);
  for (size_t k = 0; k < n; k++) {
    const wm_map_node_t *nd = &m->nodes[rk[k].pos];
    const wm_map_cell_t *c = cell(m, rk[k].pos, cb);
    double bytes = node_bytes(nd);
    t_row(&t);
    t_cell(&t, 0, "%s", nz(nd->name));
    t_cell(&t, 1, "%s", nz(nd->op_type));
    t_cell(&t, 2, "%s", fmt_si(nd->flops, a));
    t_cell(&t, 3, "%s", wm_map_fmt_bytes(bytes, a));
    t_cell(&t, 4, "%s", fmt_intensity(nd->flops, bytes, a));
    t_cell(&t, 5, "%s", c ? wm_map_bound_name(c->bound) : "-");
    t_cell(&t, 6, "%s", wm_map_fmt_time(rk[k].t, a));
    t_cell(&t, 7, "%s", wm_map_fmt_pct(rk[k].t, be->t_roof, a));
    // Slack below a millionth of the path is rounding, not time.
    double slack = nd->slack > 1e-6 * m->critical.length ? nd->slack : 0;
    t_cell(&t, 8, "%s", wm_map_fmt_time(slack, a));
    t_cell(&t, 9, "%s", nd->critical ? "*" : "");
  }
  free(rk);
  emit_table(r, &t);
  para(r,
       "%%: of the serial t_roof %s; slack: how much later the node could "
       "start without lengthening the path; cp: * on the critical path",
       wm_map_fmt_time(be->t_roof, a));
}

static void section_critical(report_t *r, const wm_map_t *m) {
  char a[WM_MAP_FMT_LEN], b[WM_MAP_FMT_LEN], c2[WM_MAP_FMT_LEN];
  size_t cb = crit_backend(m);
  const wm_map_critical_t *cr = &m->critical;
  if (cb == SIZE_MAX) {
    return;
  }
  title(r, "Critical path on %s", nz(m->backends[cb].name));
  para(r,
       "length %s of %s serial t_roof: %s of the serial time lies on the "
       "path (%zu of %zu nodes); the rest could overlap with it",
       wm_map_fmt_time(cr->length, a), wm_map_fmt_time(cr->total, b),
       wm_map_fmt_pct(cr->length, cr->total, c2), cr->n_nodes, m->n_nodes);
  if (cr->n_nodes == 0 || !cr->nodes) {
    return;
  }
  ranked_t *rk = wm_calloc(cr->n_nodes, sizeof(ranked_t));
  if (!rk) {
    return;
  }
  size_t n = 0;
  for (size_t i = 0; i < cr->n_nodes; i++) {
    if (cr->nodes[i] < m->n_nodes) {
      const wm_map_cell_t *c = cell(m, cr->nodes[i], cb);
      rk[n].t = c ? c->t_roof : 0;
      rk[n].pos = cr->nodes[i];
      n++;
    }
  }
  qsort(rk, n, sizeof(ranked_t), ranked_cmp);
  size_t shown = n < TOP_PATH ? n : TOP_PATH;
  label(r, "path nodes by t_roof%s:", shown < n ? " (largest first)" : "");
  table_t t;
  t_init(&t);
  t_col(&t, "#", T_RIGHT);
  t_col(&t, "node", T_SHRINK);
  t_col(&t, "op", T_SHRINK);
  t_col(&t, "bound", T_WORDS);
  t_col(&t, "t_roof", T_RIGHT);
  t_col(&t, "cumulative", T_RIGHT);
  t_col(&t, "% of path", T_RIGHT);
  double cum = 0;
  for (size_t k = 0; k < shown; k++) {
    const wm_map_node_t *nd = &m->nodes[rk[k].pos];
    const wm_map_cell_t *c = cell(m, rk[k].pos, cb);
    cum += rk[k].t;
    t_row(&t);
    t_cell(&t, 0, "%zu", k + 1);
    t_cell(&t, 1, "%s", nz(nd->name));
    t_cell(&t, 2, "%s", nz(nd->op_type));
    t_cell(&t, 3, "%s", c ? wm_map_bound_name(c->bound) : "-");
    t_cell(&t, 4, "%s", wm_map_fmt_time(rk[k].t, a));
    t_cell(&t, 5, "%s", wm_map_fmt_time(cum, a));
    t_cell(&t, 6, "%s", wm_map_fmt_pct(cum, cr->length, a));
  }
  free(rk);
  emit_table(r, &t);
  if (shown < n) {
    para(r, "... %zu more", n - shown);
  }
}

static bool same_group(const wm_map_collective_t *x,
                       const wm_map_collective_t *y) {
  return x->kind == y->kind && strcmp(nz(x->why), nz(y->why)) == 0 &&
         x->bytes == y->bytes && x->ranks == y->ranks &&
         x->per_forward == y->per_forward && x->per_step == y->per_step;
}

static void section_plan(report_t *r, const wm_map_t *m) {
  char a[WM_MAP_FMT_LEN], b[WM_MAP_FMT_LEN], pc[WM_MAP_FMT_LEN],
      pd[WM_MAP_FMT_LEN];
  const wm_map_plan_t *p = &m->plan;
  if (!p->enabled) {
    return;
  }
  const wm_map_parallel_t *sp = &p->spec;
  title(r, "Parallel plan");
  para(r, "dp=%d tp=%d pp=%d microbatches=%d, %s, link %s GB/s", (int)sp->dp,
       (int)sp->tp, (int)sp->pp, (int)sp->microbatches,
       sp->inference ? "inference (forward only)"
                     : "training (forward and backward)",
       fmt_rate(p->link_gbs, a));
  bool needed[6] = {false, false, false, false, false, false};
  if (p->n_coll > 0 && p->coll) {
    label(r,
          "collectives (identical ones grouped; S as nccl-tests defines "
          "it; wire bytes per rank per step, ring algorithm):");
    table_t t;
    t_init(&t);
    t_col(&t, "kind", 0);
    t_col(&t, "n", T_RIGHT);
    t_col(&t, "ranks", T_RIGHT);
    t_col(&t, "/fwd", T_RIGHT);
    t_col(&t, "/step", T_RIGHT);
    t_col(&t, "S", T_RIGHT);
    t_col(&t, "wire/step", T_RIGHT);
    t_col(&t, "t/call", T_RIGHT);
    t_col(&t, "why (tensor)", T_WRAP);
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
      t_row(&t);
      t_cell(&t, 0, "%s", wm_map_coll_name(c->kind));
      t_cell(&t, 1, "%zu", count);
      t_cell(&t, 2, "%d", (int)c->ranks);
      t_cell(&t, 3, "%g", c->per_forward);
      t_cell(&t, 4, "%g", c->per_step);
      t_cell(&t, 5, "%s", wm_map_fmt_bytes((double)c->bytes, a));
      t_cell(&t, 6, "%s", wm_map_fmt_bytes(wire, a));
      t_cell(&t, 7, "%s", wm_map_fmt_time(c->t_call, a));
      if (c->tensor && *c->tensor && count > 1) {
        t_cell(&t, 8, "%s (%s, first of %zu)", nz(c->why), c->tensor, count);
      } else if (c->tensor && *c->tensor) {
        t_cell(&t, 8, "%s (%s)", nz(c->why), c->tensor);
      } else {
        t_cell(&t, 8, "%s", nz(c->why));
      }
    }
    free(done);
    emit_table(r, &t);
  } else {
    para(r, "no collectives: the plan needs no communication");
  }
  if (sp->pp > 1) {
    para(r,
         "per step: %s on the wire per rank, t_comm %s; pipeline bubble %s "
         "of the step ((p-1)/(m+p-1)), %s over the ideal time ((p-1)/m)",
         wm_map_fmt_bytes(p->wire_bytes, a), wm_map_fmt_time(p->t_comm, b),
         wm_map_fmt_pct(p->bubble, 1.0, pc),
         wm_map_fmt_pct(p->bubble_ideal, 1.0, pd));
  } else {
    para(r,
         "per step: %s on the wire per rank, t_comm %s; one stage: no "
         "pipeline bubble",
         wm_map_fmt_bytes(p->wire_bytes, a), wm_map_fmt_time(p->t_comm, b));
  }
  size_t cb = crit_backend(m);
  if (sp->pp > 1 && p->stage_t_roof && p->stage_flops) {
    label(r, "per stage%s%s:", cb != SIZE_MAX ? " on " : "",
          cb != SIZE_MAX ? nz(m->backends[cb].name) : "");
    double whole = 0;
    for (int32_t s = 0; s < sp->pp; s++) {
      whole += p->stage_flops[s];
    }
    table_t t;
    t_init(&t);
    t_col(&t, "stage", T_RIGHT);
    t_col(&t, "t_roof", T_RIGHT);
    t_col(&t, "FLOPs", T_RIGHT);
    t_col(&t, "%FLOPs", T_RIGHT);
    for (int32_t s = 0; s < sp->pp; s++) {
      t_row(&t);
      t_cell(&t, 0, "%d", (int)s);
      t_cell(&t, 1, "%s", wm_map_fmt_time(p->stage_t_roof[s], a));
      t_cell(&t, 2, "%s", fmt_si(p->stage_flops[s], a));
      t_cell(&t, 3, "%s", wm_map_fmt_pct(p->stage_flops[s], whole, a));
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
  label(r,
        "collective tier per backend (does it implement each kind the plan "
        "needs):");
  table_t t;
  t_init(&t);
  t_col(&t, "backend", T_SHRINK);
  t_col(&t, "tier", T_WORDS);
  for (uint32_t k = 1; k < 6; k++) {
    if (needed[k]) {
      t_col(&t, wm_map_coll_name(k), T_WORDS);
    }
  }
  for (size_t bi = 0; bi < m->n_backends; bi++) {
    const wm_map_backend_t *be = &m->backends[bi];
    t_row(&t);
    t_cell(&t, 0, "%s", nz(be->name));
    t_cell(&t, 1, "%s", be->has_collectives ? "yes" : "no");
    size_t col = 2;
    for (uint32_t k = 1; k < 6; k++) {
      if (!needed[k]) {
        continue;
      }
      if (k == WM_MAP_P2P) {
        t_cell(&t, col, "device copies");
      } else {
        t_cell(&t, col, "%s",
               be->has_collectives && be->coll_level[k] > 0 ? "yes" : "no");
      }
      col++;
    }
  }
  emit_table(r, &t);
}

static void section_unmapped(report_t *r, const wm_map_t *m) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_nodes; i++) {
    n += m->nodes[i].state != WM_MAP_NODE_OK;
  }
  title(r, "Unmapped nodes");
  if (n == 0) {
    para(r, "none: every node was analysed");
    return;
  }
  label(r,
        "%zu node%s could not be fully analysed; the figures above leave "
        "out what is unknown about them:",
        n, n == 1 ? "" : "s");
  table_t t;
  t_init(&t);
  t_col(&t, "node", T_SHRINK);
  t_col(&t, "op type", T_SHRINK);
  t_col(&t, "state", 0);
  t_col(&t, "note", T_WRAP);
  t.tint[2] = C_RED;
  char lbl[160];
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_map_node_t *nd = &m->nodes[i];
    if (nd->state == WM_MAP_NODE_OK) {
      continue;
    }
    t_row(&t);
    t_cell(&t, 0, "%s", nz(nd->name));
    t_cell(&t, 1, "%s", type_label(nd->op_type, nd->domain, lbl, sizeof(lbl)));
    t_cell(&t, 2, "%s", wm_map_state_name(nd->state));
    t_cell(&t, 3, "%s", nz(nd->note));
  }
  emit_table(r, &t);
}

static void render(const wm_map_t *map, bool md, bool color, wm_strbuf_t *out) {
  report_t r = {out, md, color && !md, true, 0};
  section_header(&r, map);
  section_totals(&r, map);
  section_inventory(&r, map);
  section_roofline(&r, map);
  section_coverage(&r, map);
  section_top(&r, map);
  section_critical(&r, map);
  section_plan(&r, map);
  section_unmapped(&r, map);
}

void wm_map_to_text(const wm_map_t *map, bool color, wm_strbuf_t *out) {
  render(map, false, color, out);
}

void wm_map_to_markdown(const wm_map_t *map, wm_strbuf_t *out) {
  render(map, true, false, out);
}
