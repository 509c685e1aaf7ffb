// Number formatting for reports: SI prefixes, bytes, times, percentages,
// thousands separators.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "wmap/report.h"

const char *wm_report_fmt_si(double v, char *buf) {
  static const char *const prefix[] = {"", " k", " M", " G", " T", " P", " E"};
  double a = fabs(v);
  if (!isfinite(v)) {
    snprintf(buf, WM_REPORT_FMT_LEN, "-");
    return buf;
  }
  if (a < 999.5) {
    if (v == floor(v)) {
      snprintf(buf, WM_REPORT_FMT_LEN, "%.0f", v);
    } else {
      snprintf(buf, WM_REPORT_FMT_LEN, "%.3g", v);
    }
    return buf;
  }
  int k = 0;
  while (a >= 999.5 && k < 6) {
    a /= 1000.0;
    v /= 1000.0;
    k++;
  }
  snprintf(buf, WM_REPORT_FMT_LEN,
           a >= 99.95   ? "%.0f%s"
           : a >= 9.995 ? "%.1f%s"
                        : "%.2f%s",
           v, prefix[k]);
  return buf;
}

const char *wm_report_fmt_bytes(double bytes, char *buf) {
  wm_report_fmt_si(bytes, buf);
  size_t n = strlen(buf);
  snprintf(buf + n, WM_REPORT_FMT_LEN - n, "%sB", bytes < 1000.0 ? " " : "");
  return buf;
}

const char *wm_report_fmt_time(double s, char *buf) {
  if (!(s >= 0.0) || !isfinite(s)) {
    snprintf(buf, WM_REPORT_FMT_LEN, "-");
  } else if (s == 0.0) {
    snprintf(buf, WM_REPORT_FMT_LEN, "0");
  } else if (s >= 1.0) {
    snprintf(buf, WM_REPORT_FMT_LEN, "%.3g s", s);
  } else if (s >= 1e-3) {
    snprintf(buf, WM_REPORT_FMT_LEN, "%.3g ms", s * 1e3);
  } else if (s >= 1e-6) {
    snprintf(buf, WM_REPORT_FMT_LEN, "%.3g us", s * 1e6);
  } else {
    snprintf(buf, WM_REPORT_FMT_LEN, "%.3g ns", s * 1e9);
  }
  return buf;
}

const char *wm_report_fmt_pct(double part, double whole, char *buf) {
  if (!(whole > 0.0)) {
    snprintf(buf, WM_REPORT_FMT_LEN, "-");
  } else {
    snprintf(buf, WM_REPORT_FMT_LEN, "%.1f%%", 100.0 * part / whole);
  }
  return buf;
}

const char *wm_report_fmt_int(int64_t v, char *buf) {
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
