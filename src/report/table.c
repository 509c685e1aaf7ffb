// Tables built once and written as aligned text or Markdown, and the text
// writer around them: titles, wrapped paragraphs, colour. Padding is owed
// rather than written (w->pend) so that no line ends in spaces and colour
// codes never change the text that remains when they are removed.
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wmap/report.h"

#define MAX_COLS WM_REPORT_MAX_COLS
#define WIDTH WM_REPORT_WIDTH

// ------------------------------------------------------------- strings

void wm_report_sanitize(char *s) {
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
    wm_report_sanitize(s);
  }
  return s;
}

size_t wm_report_text_width(const char *s, size_t n) {
  size_t w = 0;
  for (size_t i = 0; i < n; i++) {
    if (((unsigned char)s[i] & 0xC0) != 0x80) {
      w++;
    }
  }
  return w;
}

size_t wm_report_text_prefix(const char *s, size_t n, size_t w) {
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

static bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_alnum(char c) {
  return is_alpha(c) || (c >= '0' && c <= '9');
}

void wm_report_md_escape(wm_strbuf_t *out, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    bool word_before = i > 0 && is_alnum(s[i - 1]);
    bool word_after = i + 1 < n && is_alnum(s[i + 1]);
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
  wm_report_md_escape(out, s, strlen(s));
}

// -------------------------------------------------------------- tables

void wm_report_table_init(wm_report_table_t *t) {
  memset(t, 0, sizeof(*t));
  wm_arena_init(&t->arena);
}

void wm_report_table_deinit(wm_report_table_t *t) {
  wm_arena_deinit(&t->arena);
  free(t->cells);
  t->cells = NULL;
  t->n_rows = 0;
  t->cap = 0;
}

size_t wm_report_table_add_col(wm_report_table_t *t, const char *head,
                               unsigned flags) {
  if (t->n_cols < MAX_COLS) {
    t->head[t->n_cols] = head ? head : "";
    t->flags[t->n_cols] = flags;
    t->n_cols++;
  }
  return t->n_cols - 1;
}

void wm_report_table_set_tint(wm_report_table_t *t, size_t col,
                              const char *color) {
  if (col < MAX_COLS) {
    t->tint[col] = color;
  }
}

void wm_report_table_add_row(wm_report_table_t *t) {
  t->dropped = true;
  if (t->n_rows == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 16;
    size_t bytes;
    if (!wm_checked_mul(cap, MAX_COLS * sizeof(char *), &bytes)) {
      return;
    }
    const char **cells = wm_realloc(t->cells, bytes);
    if (!cells) {
      return;  // the row is dropped; the report stays well-formed
    }
    t->cells = cells;
    t->cap = cap;
  }
  memset(&t->cells[t->n_rows * MAX_COLS], 0, MAX_COLS * sizeof(char *));
  t->n_rows++;
  t->dropped = false;
}

void wm_report_table_set_cell(wm_report_table_t *t, size_t col, const char *fmt,
                              ...) {
  if (t->dropped || t->n_rows == 0 || col >= t->n_cols) {
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  char *s = vformat(fmt, ap);
  va_end(ap);
  if (s) {
    t->cells[(t->n_rows - 1) * MAX_COLS + col] = wm_arena_strdup(&t->arena, s);
    free(s);
  }
}

const char *wm_report_table_cell(const wm_report_table_t *t, size_t row,
                                 size_t col) {
  if (row >= t->n_rows || col >= MAX_COLS) {
    return "";
  }
  const char *s = t->cells[row * MAX_COLS + col];
  return s ? s : "";
}

// -------------------------------------------------------------- writer

void wm_report_writer_init(wm_report_writer_t *w, wm_strbuf_t *out, bool md,
                           bool color) {
  memset(w, 0, sizeof(*w));
  w->out = out;
  w->md = md;
  w->color = color && !md;
  w->fresh = true;
}

// Appends |n| bytes of visible text, first paying the owed spaces.
static void put(wm_report_writer_t *w, const char *s, size_t n) {
  static const char spaces[] = "                                ";
  while (w->pend > 0) {
    size_t k = w->pend < sizeof(spaces) - 1 ? w->pend : sizeof(spaces) - 1;
    wm_strbuf_append(w->out, spaces, k);
    w->pend -= k;
  }
  wm_strbuf_append(w->out, s, n);
}

static void put_str(wm_report_writer_t *w, const char *s) {
  put(w, s, strlen(s));
}

// Appends an escape code. A colour first pays the owed spaces (visible
// text follows); a reset leaves them owed, so padding at the end of a line
// is never written and the text with the codes removed is exactly the text
// without colour.
static void put_color(wm_report_writer_t *w, const char *code) {
  if (w->color && code) {
    if (strcmp(code, WM_ANSI_RESET) != 0) {
      put(w, "", 0);  // a colour starts visible text: pay the spaces first
    }
    wm_strbuf_append(w->out, code, strlen(code));
  }
}

static void newline(wm_report_writer_t *w) {
  w->pend = 0;
  wm_strbuf_append(w->out, "\n", 1);
}

// The colour of a word of the writer's list, or NULL.
static const char *word_color(const wm_report_writer_t *w, const char *s,
                              size_t n) {
  for (size_t i = 0; i < w->n_words && w->words; i++) {
    const char *word = w->words[i].word;
    if (word && strlen(word) == n && memcmp(word, s, n) == 0) {
      return w->words[i].color;
    }
  }
  return NULL;
}

// Appends |n| bytes of a cell, colouring known words when asked.
static void put_words(wm_report_writer_t *w, const char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    if (is_alpha(s[i])) {
      while (j < n && is_alpha(s[j])) {
        j++;
      }
      const char *c = w->color ? word_color(w, s + i, j - i) : NULL;
      put_color(w, c);
      put(w, s + i, j - i);
      put_color(w, c ? WM_ANSI_RESET : NULL);
    } else {
      while (j < n && !is_alpha(s[j])) {
        j++;
      }
      put(w, s + i, j - i);
    }
    i = j;
  }
}

// Appends |n| bytes of |s| as cell |col| of |t|, padded to |cw| columns:
// truncated with "..." when longer.
static void put_cell(wm_report_writer_t *w, const wm_report_table_t *t,
                     size_t col, const char *s, size_t n, size_t cw) {
  size_t sw = wm_report_text_width(s, n);
  bool cut = sw > cw && cw > 3;
  if (sw > cw) {
    n = wm_report_text_prefix(s, n, cut ? cw - 3 : cw);
    sw = cw;
  }
  bool right = (t->flags[col] & WM_REPORT_RIGHT) != 0;
  if (right) {
    w->pend += cw - sw;
  }
  const char *tint = t->tint[col];
  bool zero = n == 0 || (n == 1 && (s[0] == '0' || s[0] == '-'));
  if (n > 0 && tint && !zero && w->color) {
    put_color(w, tint);
    put(w, s, n);
    put_color(w, WM_ANSI_RESET);
  } else if (n > 0 && (t->flags[col] & WM_REPORT_WORDS)) {
    put_words(w, s, n);
  } else if (n > 0) {
    put(w, s, n);
  }
  if (cut) {
    put_str(w, "...");
  }
  if (!right) {
    w->pend += cw - sw;
  }
}

// The next piece of at most |cw| columns of |*s| (breaking at a space when
// one is there); advances *s past it and the spaces after it.
static size_t wrap_next(const char **s, size_t cw) {
  const char *p = *s;
  size_t len = strlen(p);
  size_t n = wm_report_text_prefix(p, len, cw > 0 ? cw : 1);
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

// Column widths of |t| within WIDTH: the widest cell, then narrowed.
static size_t fit_widths(const wm_report_table_t *t, size_t *w) {
  size_t n = t->n_cols;
  for (size_t c = 0; c < n; c++) {
    w[c] = wm_report_text_width(t->head[c], strlen(t->head[c]));
    for (size_t i = 0; i < t->n_rows; i++) {
      const char *s = wm_report_table_cell(t, i, c);
      size_t sw = wm_report_text_width(s, strlen(s));
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
  for (int pass = 0; pass < 4 && total > WIDTH; pass++) {
    if (pass == 1) {
      if (n > 1) {
        gap = 1;
        total -= n - 1;
      }
      continue;
    }
    while (total > WIDTH) {
      size_t best = SIZE_MAX;
      for (size_t c = 0; c < n; c++) {
        unsigned f = t->flags[c];
        size_t min = pass == 3                             ? 4
                     : pass == 0 && (f & WM_REPORT_WRAP)   ? 30
                     : pass == 2 && (f & WM_REPORT_SHRINK) ? 10
                     : pass == 2 && (f & WM_REPORT_WRAP)   ? 24
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
  return gap;
}

static void table_text(wm_report_writer_t *wr, const wm_report_table_t *t) {
  size_t n = t->n_cols, w[MAX_COLS];
  if (n == 0) {
    return;
  }
  size_t gap = fit_widths(t, w);
  for (size_t c = 0; c < n; c++) {
    if (c > 0) {
      wr->pend += gap;
    }
    put_color(wr, *t->head[c] ? WM_ANSI_BOLD : NULL);
    put_cell(wr, t, c, t->head[c], strlen(t->head[c]), w[c]);
    put_color(wr, *t->head[c] ? WM_ANSI_RESET : NULL);
  }
  newline(wr);
  for (size_t c = 0; c < n; c++) {
    if (c > 0) {
      wr->pend += gap;
    }
    for (size_t k = 0; k < w[c]; k++) {
      put(wr, "-", 1);
    }
  }
  newline(wr);
  for (size_t i = 0; i < t->n_rows; i++) {
    const char *rest[MAX_COLS];
    bool more = false;
    for (size_t c = 0; c < n; c++) {
      if (c > 0) {
        wr->pend += gap;
      }
      const char *s = wm_report_table_cell(t, i, c);
      size_t len = strlen(s);
      rest[c] = "";
      if ((t->flags[c] & WM_REPORT_WRAP) &&
          wm_report_text_width(s, len) > w[c]) {
        len = wrap_next(&s, w[c]);
        rest[c] = s;
        more = more || *s;
      }
      put_cell(wr, t, c, wm_report_table_cell(t, i, c), len, w[c]);
    }
    newline(wr);
    while (more) {
      more = false;
      for (size_t c = 0; c < n; c++) {
        if (c > 0) {
          wr->pend += gap;
        }
        const char *s = rest[c];
        size_t len = *s ? wrap_next(&rest[c], w[c]) : 0;
        put_cell(wr, t, c, s, len, w[c]);
        more = more || *rest[c];
      }
      newline(wr);
    }
  }
}

static void table_md(wm_strbuf_t *out, const wm_report_table_t *t) {
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
    wm_strbuf_printf(out, "%s|",
                     (t->flags[c] & WM_REPORT_RIGHT) ? "---:" : "---");
  }
  wm_strbuf_append(out, "\n", 1);
  for (size_t i = 0; i < t->n_rows; i++) {
    wm_strbuf_append(out, "|", 1);
    for (size_t c = 0; c < t->n_cols; c++) {
      wm_strbuf_append(out, " ", 1);
      md_escape_str(out, wm_report_table_cell(t, i, c));
      wm_strbuf_append(out, " |", 2);
    }
    wm_strbuf_append(out, "\n", 1);
  }
}

void wm_report_write_table(wm_report_writer_t *w, const wm_report_table_t *t) {
  if (w->md) {
    table_md(w->out, t);
    wm_strbuf_append(w->out, "\n", 1);
  } else {
    table_text(w, t);
  }
  w->fresh = false;
}

void wm_report_write_heading(wm_report_writer_t *w, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = vformat(fmt, ap);
  va_end(ap);
  if (!s) {
    return;
  }
  if (w->md) {
    wm_strbuf_append(w->out, "# ", 2);
    md_escape_str(w->out, s);
    wm_strbuf_append(w->out, "\n\n", 2);
  } else {
    put_color(w, WM_ANSI_BOLD);
    put(w, s, wm_report_text_prefix(s, strlen(s), WIDTH));
    put_color(w, WM_ANSI_RESET);
    newline(w);
  }
  free(s);
  w->fresh = true;
}

void wm_report_write_title(wm_report_writer_t *w, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = vformat(fmt, ap);
  va_end(ap);
  if (!s) {
    return;
  }
  if (w->md) {
    wm_strbuf_append(w->out, "## ", 3);
    md_escape_str(w->out, s);
    wm_strbuf_append(w->out, "\n\n", 2);
  } else {
    newline(w);
    put_color(w, WM_ANSI_BOLD);
    put_str(w, "== ");
    put(w, s, wm_report_text_prefix(s, strlen(s), WIDTH - 6));
    put_str(w, " ==");
    put_color(w, WM_ANSI_RESET);
    newline(w);
  }
  free(s);
  w->fresh = true;
}

// Writes free text: wrapped at WIDTH in text (continuation lines indented
// by |indent|), a paragraph in Markdown. |lead| (may be "") comes first,
// bold in Markdown and coloured by |lead_color| in text.
static void vpara(wm_report_writer_t *w, const char *lead,
                  const char *lead_color, size_t indent, const char *fmt,
                  va_list ap) {
  char *s = vformat(fmt, ap);
  if (!s) {
    return;
  }
  if (w->md) {
    if (*lead) {
      wm_strbuf_append(w->out, "> **", 4);  // a blockquote
      md_escape_str(w->out, lead);
      wm_strbuf_append(w->out, "** ", 3);
    }
    md_escape_str(w->out, s);
    wm_strbuf_append(w->out, "\n\n", 2);
  } else {
    if (!w->fresh) {
      newline(w);
    }
    size_t lw = wm_report_text_width(lead, strlen(lead));
    if (lw) {
      put_color(w, lead_color);
      put_str(w, lead);
      put_color(w, lead_color ? WM_ANSI_RESET : NULL);
      w->pend = 1;
      lw++;
    }
    size_t avail = lw < WIDTH / 2 ? WIDTH - lw : WIDTH / 2;
    indent = indent < WIDTH / 2 ? indent : WIDTH / 2;
    const char *p = s;
    bool first = true;
    while (first || *p) {
      const char *start = p;
      size_t n = wrap_next(&p, first ? avail : WIDTH - indent);
      if (!first) {
        w->pend = indent;
      }
      put(w, start, n);
      newline(w);
      first = false;
    }
  }
  free(s);
  w->fresh = false;
}

void wm_report_write_para(wm_report_writer_t *w, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vpara(w, "", NULL, 2, fmt, ap);
  va_end(ap);
}

void wm_report_write_label(wm_report_writer_t *w, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vpara(w, "", NULL, 2, fmt, ap);
  va_end(ap);
  w->fresh = true;
}

void wm_report_write_lead(wm_report_writer_t *w, const char *lead,
                          const char *lead_color, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const char *l = lead ? lead : "";
  vpara(w, l, lead_color, wm_report_text_width(l, strlen(l)) + 1, fmt, ap);
  va_end(ap);
  w->fresh = true;
}
