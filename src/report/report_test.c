// Tests of the report building blocks: number formats, table widths and
// wrapping within 100 columns, colour that leaves the plain text intact,
// Markdown pipes and escaping, HTML escaping, axis ticks and the Pareto
// chart.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wm_test.h"
#include "wmap/report.h"

// Returns the first line of |s| (1-based) wider than 100 code points or
// holding a control byte, printing it; 0 when every line is fine.
static size_t bad_line(const char *s) {
  size_t line = 1;
  const char *start = s;
  while (*start) {
    const char *end = strchr(start, '\n');
    size_t n = end ? (size_t)(end - start) : strlen(start);
    bool bad = wm_report_text_width(start, n) > WM_REPORT_WIDTH;
    for (size_t i = 0; i < n; i++) {
      bad = bad || (unsigned char)start[i] < 0x20;
    }
    if (bad || (n > 0 && start[n - 1] == ' ')) {
      fprintf(stderr, "line %zu: [%.*s]\n", line, (int)n, start);
      return line;
    }
    if (!end) {
      break;
    }
    start = end + 1;
    line++;
  }
  return 0;
}

// Returns |s| with every ANSI escape sequence removed (caller frees).
static char *strip_ansi(const char *s) {
  char *out = malloc(strlen(s) + 1), *q = out;
  if (!out) {
    return NULL;
  }
  while (*s) {
    if (*s == '\x1b' && s[1] == '[') {
      s += 2;
      while (*s && *s != 'm') {
        s++;
      }
      s += *s == 'm';
      continue;
    }
    *q++ = *s++;
  }
  *q = '\0';
  return out;
}

// Unescaped '|' in the line starting at |s|.
static size_t count_pipes(const char *s) {
  size_t n = 0;
  for (const char *p = s; *p && *p != '\n'; p++) {
    if (*p == '\\' && p[1]) {
      p++;
    } else if (*p == '|') {
      n++;
    }
  }
  return n;
}

static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) {
    n++;
  }
  return n;
}

// A table far wider than 100 columns: long names, long free text, numbers.
static void wide_table(wm_report_table_t *t) {
  wm_report_table_init(t);
  wm_report_table_add_col(t, "name", WM_REPORT_SHRINK);
  wm_report_table_add_col(t, "value", WM_REPORT_RIGHT);
  wm_report_table_add_col(t, "class", WM_REPORT_WORDS);
  wm_report_table_add_col(t, "detail", WM_REPORT_WRAP);
  size_t tinted = wm_report_table_add_col(t, "bad", WM_REPORT_RIGHT);
  wm_report_table_set_tint(t, tinted, WM_ANSI_RED);
  for (int i = 0; i < 6; i++) {
    wm_report_table_add_row(t);
    wm_report_table_set_cell(t, 0,
                             "very/long/node/name/number_%d/that/goes/on/"
                             "and/on/forever/Conv_%d",
                             i, i);
    wm_report_table_set_cell(t, 1, "%d", 1000 * i);
    wm_report_table_set_cell(t, 2, "%s", i % 2 ? "good" : "poor");
    wm_report_table_set_cell(t, 3,
                             "a long explanation in plain words that must "
                             "wrap onto several lines because it is much "
                             "wider than what is left, row %d",
                             i);
    wm_report_table_set_cell(t, 4, "%d", i % 3);
  }
}

WM_TEST(numbers_are_formatted_with_units) {
  char b[WM_REPORT_FMT_LEN];
  WM_CHECK_STR_EQ(wm_report_fmt_si(4.0919e9, b), "4.09 G");
  WM_CHECK_STR_EQ(wm_report_fmt_si(7, b), "7");
  WM_CHECK_STR_EQ(wm_report_fmt_si(NAN, b), "-");
  WM_CHECK_STR_EQ(wm_report_fmt_si(812e6, b), "812 M");
  WM_CHECK_STR_EQ(wm_report_fmt_si(12000, b), "12.0 k");
  WM_CHECK_STR_EQ(wm_report_fmt_si(999.6, b), "1.00 k");  // rounds up a prefix
  WM_CHECK_STR_EQ(wm_report_fmt_bytes(512, b), "512 B");
  WM_CHECK_STR_EQ(wm_report_fmt_bytes(98.0e6, b), "98.0 MB");
  WM_CHECK_STR_EQ(wm_report_fmt_time(0.0123, b), "12.3 ms");
  WM_CHECK_STR_EQ(wm_report_fmt_time(45.6e-6, b), "45.6 us");
  WM_CHECK_STR_EQ(wm_report_fmt_time(0, b), "0");
  WM_CHECK_STR_EQ(wm_report_fmt_time(-1, b), "-");
  WM_CHECK_STR_EQ(wm_report_fmt_pct(1, 8, b), "12.5%");
  WM_CHECK_STR_EQ(wm_report_fmt_pct(1, 0, b), "-");
  WM_CHECK_STR_EQ(wm_report_fmt_int(25557032, b), "25,557,032");
  WM_CHECK_STR_EQ(wm_report_fmt_int(-1000, b), "-1,000");
  WM_CHECK_STR_EQ(wm_report_fmt_int(INT64_MIN, b),
                  "-9,223,372,036,854,775,808");
}

WM_TEST(sanitize_replaces_c0_del_and_c1_controls) {
  char s[] =
      "a\x1b[31mb\x7f\xc2\x9b"
      "c\xc3\xa9";
  wm_report_sanitize(s);
  WM_CHECK_STR_EQ(s, "a?[31mb???c\xc3\xa9");
  WM_CHECK_INT_EQ(wm_report_text_width("\xc3\xa9t\xc3\xa9", 5), 3);
  WM_CHECK_INT_EQ(wm_report_text_prefix("\xc3\xa9t\xc3\xa9", 5, 2), 3);
}

WM_TEST(wide_table_fits_100_columns_and_wraps_free_text) {
  wm_report_table_t t;
  wide_table(&t);
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  wm_report_writer_t w;
  wm_report_writer_init(&w, &out, false, false);
  wm_report_write_title(&w, "A title that is very long %s",
                        "and goes on and on and on and on and on and on and "
                        "on and on and on and on and on past the width");
  wm_report_write_table(&w, &t);
  wm_report_write_para(&w, "%s",
                       "a paragraph of free text that is long enough to be "
                       "wrapped at one hundred columns, with the rest "
                       "indented by two spaces on the following lines");
  const char *s = wm_strbuf_str(&out);
  WM_CHECK_INT_EQ(bad_line(s), 0);
  WM_CHECK(strstr(s, "...") != NULL);    // names were truncated
  WM_CHECK(strstr(s, "row 5") != NULL);  // wrapped text is all there
  WM_CHECK(strstr(s, "\n  indented by two spaces") != NULL);
  WM_CHECK(strstr(s, "== A title") != NULL);
  WM_CHECK(strchr(s, '\x1b') == NULL);
  wm_strbuf_deinit(&out);
  wm_report_table_deinit(&t);
}

WM_TEST(colour_only_adds_escape_codes) {
  static const wm_report_word_t words[] = {{"good", WM_ANSI_GREEN},
                                           {"poor", WM_ANSI_RED}};
  wm_report_table_t t;
  wide_table(&t);
  wm_strbuf_t plain, color;
  wm_strbuf_init(&plain);
  wm_strbuf_init(&color);
  wm_report_writer_t w;
  wm_report_writer_init(&w, &plain, false, false);
  wm_report_write_heading(&w, "heading");
  wm_report_write_lead(&w, "note:", WM_ANSI_YELLOW, "careful");
  wm_report_write_table(&w, &t);
  wm_report_writer_init(&w, &color, false, true);
  w.words = words;
  w.n_words = 2;
  wm_report_write_heading(&w, "heading");
  wm_report_write_lead(&w, "note:", WM_ANSI_YELLOW, "careful");
  wm_report_write_table(&w, &t);
  const char *c = wm_strbuf_str(&color);
  WM_CHECK(strstr(c, WM_ANSI_GREEN "good" WM_ANSI_RESET) != NULL);
  WM_CHECK(strstr(c, WM_ANSI_RED "poor" WM_ANSI_RESET) != NULL);
  WM_CHECK(strstr(c, WM_ANSI_RED "1" WM_ANSI_RESET) != NULL);  // tint
  WM_CHECK(strstr(c, WM_ANSI_RED "0" WM_ANSI_RESET) == NULL);  // not zero
  WM_CHECK(strstr(c, WM_ANSI_YELLOW "note:" WM_ANSI_RESET) != NULL);
  char *stripped = strip_ansi(c);
  WM_CHECK(stripped != NULL);
  bool same = strcmp(stripped, wm_strbuf_str(&plain)) == 0;
  free(stripped);
  WM_CHECK(same);
  wm_strbuf_deinit(&plain);
  wm_strbuf_deinit(&color);
  wm_report_table_deinit(&t);
}

WM_TEST(markdown_tables_keep_their_pipes) {
  wm_report_table_t t;
  wm_report_table_init(&t);
  wm_report_table_add_col(&t, "a|b", 0);
  wm_report_table_add_col(&t, "n", WM_REPORT_RIGHT);
  wm_report_table_add_row(&t);
  wm_report_table_set_cell(&t, 0, "x|y\\z*[l](u)<b>`c` snake_case _lead");
  wm_report_table_set_cell(&t, 1, "1");
  wm_report_table_add_row(&t);
  wm_report_table_set_cell(&t, 0, "tab\there\nnewline");
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  wm_report_writer_t w;
  wm_report_writer_init(&w, &out, true, true);
  WM_CHECK(!w.color);  // never colour in Markdown
  wm_report_write_heading(&w, "map of %s", "a_b|c");
  wm_report_write_lead(&w, "note:", WM_ANSI_YELLOW, "x");
  wm_report_write_table(&w, &t);
  const char *s = wm_strbuf_str(&out);
  const char *head = "# map of a_b\\|c\n\n";
  WM_CHECK(strncmp(s, head, strlen(head)) == 0);
  WM_CHECK(strstr(s, "> **note:** x\n\n") != NULL);
  WM_CHECK(strstr(s, "| a\\|b | n |\n|---|---:|\n") != NULL);
  WM_CHECK(
      strstr(s, "x\\|y\\\\z\\*\\[l\\](u)\\<b\\>\\`c\\` snake_case \\_lead") !=
      NULL);
  // Every row of the table has the same count of unescaped pipes.
  const char *row = strstr(s, "| a");
  WM_CHECK(row != NULL);
  size_t want = count_pipes(row), rows = 0;
  for (; row && *row == '|';
       row = strchr(row, '\n'), row = row ? row + 1 : NULL) {
    WM_CHECK_INT_EQ(count_pipes(row), want);
    rows++;
  }
  WM_CHECK_INT_EQ(rows, 4);
  wm_strbuf_deinit(&out);
  wm_report_table_deinit(&t);
}

WM_TEST(table_survives_more_columns_than_it_holds) {
  wm_report_table_t t;
  wm_report_table_init(&t);
  for (int i = 0; i < WM_REPORT_MAX_COLS + 4; i++) {
    wm_report_table_add_col(&t, "c", 0);
  }
  WM_CHECK_INT_EQ(t.n_cols, WM_REPORT_MAX_COLS);
  wm_report_table_set_cell(&t, 0, "no row yet");  // ignored
  wm_report_table_add_row(&t);
  wm_report_table_set_cell(&t, WM_REPORT_MAX_COLS + 2, "out of range");
  WM_CHECK_STR_EQ(wm_report_table_cell(&t, 0, 0), "");
  WM_CHECK_STR_EQ(wm_report_table_cell(&t, 7, 0), "");
  wm_report_table_deinit(&t);
}

WM_TEST(html_escapes_every_special) {
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  wm_report_html_escape(&out, "<a href=\"x\">'&'</a>");
  wm_report_html_escape(&out, NULL);
  WM_CHECK_STR_EQ(wm_strbuf_str(&out),
                  "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  wm_strbuf_deinit(&out);
  wm_strbuf_init(&out);
  wm_report_html_escape_cut(&out, "abcdefgh\xc3\xa9xyz<>", 10);
  WM_CHECK_STR_EQ(wm_strbuf_str(&out), "abcdefg...");
  wm_strbuf_deinit(&out);
  wm_strbuf_init(&out);
  wm_report_html_escape_cut(&out, "abcdef\xc3\xa9xyz", 10);  // é at 6..7
  WM_CHECK_STR_EQ(wm_strbuf_str(&out), "abcdef...");
  wm_strbuf_deinit(&out);
}

WM_TEST(html_page_is_self_contained_and_escaped) {
  wm_report_table_t t;
  wm_report_table_init(&t);
  wm_report_table_add_col(&t, "name<", WM_REPORT_SHRINK);
  wm_report_table_add_col(&t, "n", WM_REPORT_RIGHT);
  wm_report_table_add_row(&t);
  wm_report_table_set_cell(&t, 0, "<script>alert(1)</script>");
  wm_report_table_set_cell(&t, 1, "42");
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  wm_report_html_begin(&out, "gen \"x\"", "title <b>", ".x{}\n");
  wm_report_html_table(&out, &t, "kv");
  wm_report_html_end(&out);
  const char *s = wm_strbuf_str(&out);
  WM_CHECK(strncmp(s, "<!DOCTYPE html>", 15) == 0);
  WM_CHECK(strstr(s, "<title>title &lt;b&gt;</title>") != NULL);
  WM_CHECK(strstr(s, "content=\"gen &quot;x&quot;\"") != NULL);
  WM_CHECK(strstr(s, "svg .frame{") < strstr(s, ".x{}"));
  WM_CHECK(strstr(s, ".x{}") < strstr(s, "svg .pbar"));
  WM_CHECK(strstr(s, "<script") == NULL);
  WM_CHECK(strstr(s, "http://") == NULL && strstr(s, "https://") == NULL);
  WM_CHECK(strstr(s, "<table class=\"kv\">\n<tr><th>name&lt;</th>") != NULL);
  WM_CHECK(strstr(s, "<td class=\"name\">&lt;script&gt;") != NULL);
  WM_CHECK(strstr(s, "<td class=\"n\">42</td>") != NULL);
  WM_CHECK(strstr(s, "</main>\n</body>\n</html>\n") != NULL);
  wm_strbuf_deinit(&out);
  wm_report_table_deinit(&t);
}

WM_TEST(plot_maps_values_and_clamps_into_the_frame) {
  wm_report_plot_t p = {.x0 = 10,
                        .y0 = 20,
                        .w = 100,
                        .h = 50,
                        .lx0 = 0,
                        .lx1 = 2,
                        .ly0 = 0,
                        .ly1 = 10,
                        .xlog = true};
  WM_CHECK_DBL_NEAR(wm_report_plot_x(&p, 10), 60, 1e-9);
  WM_CHECK_DBL_NEAR(wm_report_plot_x(&p, 1e6), 110, 1e-9);
  WM_CHECK_DBL_NEAR(wm_report_plot_x(&p, 0), 10, 1e-9);    // log of 0
  WM_CHECK_DBL_NEAR(wm_report_plot_x(&p, NAN), 10, 1e-9);  // NaN
  WM_CHECK_DBL_NEAR(wm_report_plot_y(&p, 5), 45, 1e-9);    // linear
  WM_CHECK_DBL_NEAR(wm_report_plot_y(&p, -3), 70, 1e-9);   // bottom
  WM_CHECK_DBL_NEAR(wm_report_plot_y(&p, 1e9), 20, 1e-9);  // top
  WM_CHECK_DBL_NEAR(wm_report_nice_step(100, 5), 20, 1e-12);
  WM_CHECK_DBL_NEAR(wm_report_nice_step(7, 5), 2, 1e-12);
  WM_CHECK_DBL_NEAR(wm_report_nice_step(0.3, 6), 0.05, 1e-12);
  char b[16];
  wm_report_decade_label(4, b, sizeof(b));
  WM_CHECK_STR_EQ(b, "10k");
  wm_report_decade_label(-2, b, sizeof(b));
  WM_CHECK_STR_EQ(b, "0.01");
  wm_report_decade_label(-5, b, sizeof(b));
  WM_CHECK_STR_EQ(b, "1e-5");
  WM_CHECK_STR_EQ(wm_report_color(0), wm_report_color(10));
  WM_CHECK(strcmp(wm_report_color(0), wm_report_color(1)) != 0);
}

static const char *fmt_ms(double v, char *buf) {
  snprintf(buf, WM_REPORT_FMT_LEN, "%g ms", v);
  return buf;
}

WM_TEST(decade_axes_have_a_line_per_decade_and_minor_ticks) {
  wm_report_plot_t p = {.x0 = 74,
                        .y0 = 36,
                        .w = 626,
                        .h = 334,
                        .lx0 = -1,
                        .lx1 = 3,
                        .ly0 = 0,
                        .ly1 = 2,
                        .xlog = true,
                        .ylog = true};
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  wm_report_svg_axes(&out, &p, NULL, NULL, "x <title>", "y");
  const char *s = wm_strbuf_str(&out);
  // 5 x decades + 3 y decades; 8 minor ticks per decade step (4 + 2).
  WM_CHECK_INT_EQ(count(s, "class=\"grid\""), 8);
  WM_CHECK_INT_EQ(count(s, "class=\"tick\""), 48);
  WM_CHECK(strstr(s, ">0.1</text>") && strstr(s, ">1k</text>"));
  WM_CHECK(strstr(s, ">100</text>") != NULL);
  WM_CHECK(strstr(s, ">x &lt;title&gt;</text>") != NULL);
  WM_CHECK(strstr(s, "rotate(-90 18.0 203.0)") != NULL);
  WM_CHECK(strstr(s, "<rect class=\"frame\"") != NULL);
  wm_strbuf_deinit(&out);
}

WM_TEST(linear_and_narrow_log_axes_get_round_ticks) {
  // Linear 0..10 on x: 0, 2, 4, 6, 8, 10; a log y axis over 44..62 (less
  // than a decade): round linear values 45, 50, 55, 60 with the formatter.
  wm_report_plot_t p = {.x0 = 50,
                        .y0 = 10,
                        .w = 500,
                        .h = 300,
                        .lx0 = 0,
                        .lx1 = 10,
                        .ly0 = log10(44),
                        .ly1 = log10(62),
                        .ylog = true};
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  wm_report_svg_axes(&out, &p, NULL, fmt_ms, NULL, NULL);
  const char *s = wm_strbuf_str(&out);
  WM_CHECK(strstr(s, ">0</text>") && strstr(s, ">10</text>"));
  WM_CHECK_INT_EQ(count(s, "class=\"grid\""), 10);
  WM_CHECK(strstr(s, ">45 ms</text>") && strstr(s, ">60 ms</text>"));
  WM_CHECK(strstr(s, ">40 ms</text>") == NULL);  // outside the range
  wm_strbuf_deinit(&out);
  // A log axis over 1.5 decades: 1-2-5 ticks.
  wm_report_plot_t q = {.x0 = 50,
                        .y0 = 10,
                        .w = 500,
                        .h = 300,
                        .lx0 = 0.1,
                        .lx1 = 1.6,
                        .ly0 = 0,
                        .ly1 = 100,
                        .xlog = true};
  wm_strbuf_init(&out);
  wm_report_svg_axes(&out, &q, NULL, NULL, NULL, NULL);
  s = wm_strbuf_str(&out);
  WM_CHECK(strstr(s, ">2</text>") && strstr(s, ">5</text>"));
  WM_CHECK(strstr(s, ">10</text>") && strstr(s, ">20</text>"));
  WM_CHECK(strstr(s, ">1</text>") == NULL);  // below 10^0.1
  wm_strbuf_deinit(&out);
}

WM_TEST(pareto_sorts_bars_and_merges_the_tail) {
  wm_report_bar_t bars[30];
  char labels[30][16];
  for (int i = 0; i < 30; i++) {
    snprintf(labels[i], sizeof(labels[i]), "op%d", i);
    bars[i].label = labels[i];
    bars[i].title = i == 20 ? "<b>" : labels[i];
    bars[i].value = i == 7 ? 0.0 : 1e-3 * (i + 1);  // op7 left out
  }
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  double total =
      wm_report_svg_pareto(&out, bars, 30, "time", "op types", "pareto <x>");
  const char *s = wm_strbuf_str(&out);
  WM_CHECK_DBL_NEAR(total, 1e-3 * (465 - 8), 1e-12);
  WM_CHECK_INT_EQ(count(s, "class=\"pbar\""), 24);
  WM_CHECK_INT_EQ(count(s, "class=\"pbar-other\""), 1);
  WM_CHECK(strstr(s, ">other (5)</text>") != NULL);  // 29 bars - 24 shown
  WM_CHECK(strstr(s, "5 other op types") != NULL);
  WM_CHECK(strstr(s, "<title>&lt;b&gt;: ") != NULL);
  WM_CHECK(strstr(s, "aria-label=\"pareto &lt;x&gt;\"") != NULL);
  WM_CHECK(strstr(s, "<title>cumulative 100.0%</title>") != NULL);
  // Largest first: op29 comes before op28.
  WM_CHECK(strstr(s, ">op29<") < strstr(s, ">op28<"));
  WM_CHECK(strstr(s, ">op7<") == NULL);
  wm_strbuf_deinit(&out);
  wm_strbuf_init(&out);
  bars[0].value = NAN;
  WM_CHECK_DBL_NEAR(wm_report_svg_pareto(&out, bars, 1, "t", "x", "y"), 0, 0);
  WM_CHECK_INT_EQ(out.len, 0);
  wm_strbuf_deinit(&out);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(numbers_are_formatted_with_units),
      WM_CASE(sanitize_replaces_c0_del_and_c1_controls),
      WM_CASE(wide_table_fits_100_columns_and_wraps_free_text),
      WM_CASE(colour_only_adds_escape_codes),
      WM_CASE(markdown_tables_keep_their_pipes),
      WM_CASE(table_survives_more_columns_than_it_holds),
      WM_CASE(html_escapes_every_special),
      WM_CASE(html_page_is_self_contained_and_escaped),
      WM_CASE(plot_maps_values_and_clamps_into_the_frame),
      WM_CASE(decade_axes_have_a_line_per_decade_and_minor_ticks),
      WM_CASE(linear_and_narrow_log_axes_get_round_ticks),
      WM_CASE(pareto_sorts_bars_and_merges_the_tail),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
