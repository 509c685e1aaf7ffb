// HTML pages: escaping, the page skeleton with its inline CSS, key/value
// rows and tables from the table builder. Nothing is fetched or scripted.
#include <stdio.h>
#include <string.h>

#include "wmap/report.h"

void wm_report_html_escape(wm_strbuf_t *out, const char *s) {
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

void wm_report_html_escape_cut(wm_strbuf_t *out, const char *s, size_t max) {
  if (!s || strlen(s) <= max) {
    wm_report_html_escape(out, s);
    return;
  }
  size_t n = max > 3 ? max - 3 : 0;
  while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) {
    n--;
  }
  char buf[64];
  if (n >= sizeof(buf)) {
    n = sizeof(buf) - 1;
  }
  memcpy(buf, s, n);
  buf[n] = '\0';
  wm_report_html_escape(out, buf);
  wm_strbuf_append(out, "...", 3);
}

// The shared style sheet, in two parts: |extra_css| goes between them.
static const char kCssBase[] =
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
    "max-width:100%;height:auto}\n"
    "svg text{font-size:12px;fill:#1d232a}\n"
    "svg text.title{font-size:13px;font-weight:600}\n"
    "svg text.small{font-size:11px;fill:#3b4650}\n"
    "svg .grid{stroke:#e3e7ec;stroke-width:1}\n"
    "svg .tick{stroke:#8d99a6;stroke-width:1}\n"
    "svg .frame{fill:none;stroke:#5b6773;stroke-width:1}\n";
static const char kCssCharts[] =
    "svg .pbar,svg .pbar-other{stroke:#fff;stroke-width:.5}\n"
    "svg .cumline{fill:none;stroke:#c2185b;stroke-width:2}\n"
    "details summary{cursor:pointer;font-weight:600;margin:6px 0}\n";

void wm_report_html_begin(wm_strbuf_t *out, const char *generator,
                          const char *title, const char *extra_css) {
  wm_strbuf_printf(out,
                   "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
                   "<meta charset=\"utf-8\">\n"
                   "<meta name=\"viewport\" content=\"width=device-width, "
                   "initial-scale=1\">\n<meta name=\"generator\" "
                   "content=\"");
  wm_report_html_escape(out, generator);
  wm_strbuf_printf(out, "\">\n<title>");
  wm_report_html_escape(out, title);
  wm_strbuf_printf(out, "</title>\n<style>\n");
  wm_strbuf_append(out, kCssBase, sizeof(kCssBase) - 1);
  if (extra_css) {
    wm_strbuf_append(out, extra_css, strlen(extra_css));
  }
  wm_strbuf_append(out, kCssCharts, sizeof(kCssCharts) - 1);
  wm_strbuf_printf(out, "</style>\n</head>\n<body>\n<main>\n");
}

void wm_report_html_end(wm_strbuf_t *out) {
  wm_strbuf_printf(out, "</main>\n</body>\n</html>\n");
}

void wm_report_html_kv_open(wm_strbuf_t *out, const char *key) {
  wm_strbuf_printf(out, "<tr><th>%s</th><td>", key);
}

void wm_report_html_kv_close(wm_strbuf_t *out) {
  wm_strbuf_printf(out, "</td></tr>\n");
}

void wm_report_html_table(wm_strbuf_t *out, const wm_report_table_t *t,
                          const char *cls) {
  if (t->n_cols == 0) {
    return;
  }
  wm_strbuf_printf(out, "<table");
  if (cls) {
    wm_strbuf_printf(out, " class=\"");
    wm_report_html_escape(out, cls);
    wm_strbuf_printf(out, "\"");
  }
  wm_strbuf_printf(out, ">\n<tr>");
  for (size_t c = 0; c < t->n_cols; c++) {
    wm_strbuf_printf(out, "<th>");
    wm_report_html_escape(out, t->head[c]);
    wm_strbuf_printf(out, "</th>");
  }
  wm_strbuf_printf(out, "</tr>\n");
  for (size_t i = 0; i < t->n_rows; i++) {
    wm_strbuf_printf(out, "<tr>");
    for (size_t c = 0; c < t->n_cols; c++) {
      unsigned f = t->flags[c];
      wm_strbuf_printf(out, "%s",
                       (f & WM_REPORT_RIGHT) ? "<td class=\"n\">"
                       : (f & (WM_REPORT_SHRINK | WM_REPORT_WRAP))
                           ? "<td class=\"name\">"
                           : "<td>");
      wm_report_html_escape(out, wm_report_table_cell(t, i, c));
      wm_strbuf_printf(out, "</td>");
    }
    wm_strbuf_printf(out, "</tr>\n");
  }
  wm_strbuf_printf(out, "</table>\n");
}
