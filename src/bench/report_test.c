// Tests of the baseline reports on a baseline built in memory: two
// configurations of one backend at 1 and 2 threads, three blocks each,
// a profile on the first. Text: width, colour, unsupported percentiles,
// sections. HTML: self-contained, the four plots, escaping, the run-order
// plot's downsampling keeps spikes.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wm_test.h"
#include "wmap/bench.h"
#include "wmap/report.h"

#define SMALL_BLOCK 100   // samples per block of cpu@t1: 300 in all
#define LARGE_BLOCK 4000  // of cpu@t2: 12,000 in all
#define SPIKE_NS 9.0e7    // one sample of cpu@t2, block 1

// A deterministic generator (64-bit LCG), uniform in [0, 1).
static double next_uniform(uint64_t *state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(*state >> 11) * (1.0 / 9007199254740992.0);
}

static bool fill_config(wm_arena_t *a, wm_bench_config_t *c, const char *label,
                        uint32_t threads, size_t per_block, double center,
                        uint64_t *rng) {
  c->label = label;
  c->n_backends = 1;
  c->backends = wm_arena_alloc(a, sizeof(char *));
  c->blocks = wm_arena_alloc(a, 3 * sizeof(wm_bench_block_t));
  if (!c->backends || !c->blocks) {
    return false;
  }
  c->backends[0] = "cpu";
  c->threads = threads;
  c->n_blocks = 3;
  for (size_t i = 0; i < 3; i++) {
    wm_bench_block_t *k = &c->blocks[i];
    k->index = (int32_t)i;
    k->order = (int32_t)(2 * i + (threads == 2));
    k->n = per_block;
    k->samples = wm_arena_alloc(a, per_block * sizeof(double));
    if (!k->samples) {
      return false;
    }
    for (size_t j = 0; j < per_block; j++) {
      k->samples[j] = center * (1.0 + 0.05 * next_uniform(rng));
    }
  }
  return true;
}

typedef struct op_spec {
  const char *node, *op_type;
  double mean, roof;
} op_spec_t;

static const op_spec_t kOps[] = {
    {"conv1", "Conv", 300e3, 150e3},
    {"relu1", "Relu", 100e3, 0},
    {"conv2", "Conv", 500e3, 250e3},
    {"add<1>", "<Add>", 100e3, 50e3},
};

static void env_add(wm_env_t *env, const char *key, bool critical,
                    const char *value) {
  wm_env_field_t *f = &env->fields[env->n++];
  snprintf(f->key, sizeof(f->key), "%s", key);
  snprintf(f->value, sizeof(f->value), "%s", value);
  f->critical = critical;
}

// The finished test baseline.
static wm_status_t make_baseline(wm_baseline_t **out) {
  wm_baseline_t *b;
  *out = NULL;
  WM_RETURN_IF_ERROR(wm_baseline_create(&b));
  wm_arena_t *a = &b->arena;
  uint64_t rng = 42;
  b->created_utc = "2026-12-02T15:04:05Z";
  b->tool_version = "0.1.0";
  b->tool_git = "a384dd90c105";
  b->build_type = "Debug";
  b->model_name = "<script>alert(1)</script>";
  b->model_sha256 =
      "00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff";
  b->dims = wm_arena_alloc(a, sizeof(wm_bench_kv_t));
  b->configs = wm_arena_alloc(a, 2 * sizeof(wm_bench_config_t));
  wm_bench_config_t *c = b->configs;
  size_t n_ops = sizeof(kOps) / sizeof(kOps[0]);
  wm_bench_op_t *ops = wm_arena_alloc(a, n_ops * sizeof(wm_bench_op_t));
  if (!b->dims || !c || !ops ||
      !fill_config(a, &c[0], "cpu@t1", 1, SMALL_BLOCK, 2.0e6, &rng) ||
      !fill_config(a, &c[1], "cpu@t2", 2, LARGE_BLOCK, 1.1e6, &rng)) {
    wm_baseline_destroy(b);
    return WM_ERROR(RESOURCE_EXHAUSTED, "test baseline");
  }
  c[1].blocks[1].samples[1234] = SPIKE_NS;
  b->n_configs = 2;
  b->n_dims = 1;
  b->dims[0].key = "batch";
  b->dims[0].value = "1";
  b->model_flops = 3.64e9;
  b->blocks = 3;
  b->min_time_s = 1;
  b->min_iters = 10;
  env_add(&b->env, "cpu.model", true, "Test CPU <fast> & \"cheap\"");
  env_add(&b->env, "cpu.cores", true, "2");
  env_add(&b->env, "load.avg1", false, "0.41");
  wm_sha256_hex("cpu.cores=2\n", 12, b->env.fingerprint);
  for (size_t i = 0; i < n_ops; i++) {
    ops[i].node = kOps[i].node;
    ops[i].op_type = kOps[i].op_type;
    ops[i].backend = "cpu";
    ops[i].mean_ns = kOps[i].mean;
    ops[i].t_roof_ns = kOps[i].roof;
  }
  c[0].ops = ops;
  c[0].n_ops = n_ops;
  wm_status_t s = wm_baseline_finish(b);
  if (s) {
    wm_baseline_destroy(b);
    return s;
  }
  *out = b;
  return NULL;
}

// Returns the first line of |s| (1-based) wider than 100 code points,
// holding a control byte or ending in a space, printing it; 0 if none.
static size_t bad_line(const char *s) {
  size_t line = 1;
  const char *start = s;
  while (*start) {
    const char *end = strchr(start, '\n');
    size_t n = end ? (size_t)(end - start) : strlen(start);
    bool bad =
        wm_report_text_width(start, n) > 100 || (n > 0 && start[n - 1] == ' ');
    for (size_t i = 0; i < n; i++) {
      bad = bad || (unsigned char)start[i] < 0x20;
    }
    if (bad) {
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

// Copies the |k|-th (0-based) blank-separated word of the line of |text|
// that starts with |start| into |word|; false when there is none.
static bool word_of_row(const char *text, const char *start, int k, char *word,
                        size_t cap) {
  const char *p = text;
  size_t n = strlen(start);
  while (p && strncmp(p, start, n) != 0) {
    p = strchr(p, '\n');
    p = p ? p + 1 : NULL;
  }
  if (!p) {
    return false;
  }
  for (int i = 0; i <= k; i++) {
    while (*p == ' ') {
      p++;
    }
    if (*p == '\n' || *p == '\0') {
      return false;
    }
    const char *e = p;
    while (*e && *e != ' ' && *e != '\n') {
      e++;
    }
    if (i == k) {
      snprintf(word, cap, "%.*s", (int)(e - p), p);
      return true;
    }
    p = e;
  }
  return false;
}

static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) {
    n++;
  }
  return n;
}

WM_TEST(text_fits_100_columns_and_colour_only_adds_codes) {
  wm_baseline_t *b;
  WM_CHECK_OK(make_baseline(&b));
  wm_strbuf_t plain, color;
  wm_strbuf_init(&plain);
  wm_strbuf_init(&color);
  wm_baseline_to_text(b, false, &plain);
  wm_baseline_to_text(b, true, &color);
  wm_baseline_destroy(b);
  const char *s = wm_strbuf_str(&plain);
  WM_CHECK_INT_EQ(bad_line(s), 0);
  WM_CHECK(strchr(s, '\x1b') == NULL);
  WM_CHECK(strchr(wm_strbuf_str(&color), '\x1b') != NULL);
  char *stripped = strip_ansi(wm_strbuf_str(&color));
  WM_CHECK(stripped != NULL);
  bool same = strcmp(stripped, s) == 0;
  free(stripped);
  WM_CHECK(same);
  wm_strbuf_deinit(&plain);
  wm_strbuf_deinit(&color);
}

WM_TEST(text_marks_percentiles_the_sample_cannot_support) {
  wm_baseline_t *b;
  WM_CHECK_OK(make_baseline(&b));
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  wm_baseline_to_text(b, false, &out);
  wm_baseline_destroy(b);
  const char *s = wm_strbuf_str(&out);
  if (getenv("WMAP_TEST_DUMP")) {
    fputs(s, stderr);
  }
  const char *table = strstr(s, "== Latency per run (ms) ==");
  WM_CHECK(table != NULL);
  // config n min P50 P90 P95 P99 P99.9: 300 samples support P90 and P95,
  // not P99; 12,000 support all.
  char w[32];
  WM_CHECK(word_of_row(table, "cpu@t1", 1, w, sizeof(w)));
  WM_CHECK_STR_EQ(w, "300");
  WM_CHECK(word_of_row(table, "cpu@t1", 4, w, sizeof(w)));
  WM_CHECK(w[0] != '(');
  WM_CHECK(word_of_row(table, "cpu@t1", 5, w, sizeof(w)));
  WM_CHECK(w[0] != '(');
  WM_CHECK(word_of_row(table, "cpu@t1", 6, w, sizeof(w)));
  WM_CHECK(w[0] == '(' && w[strlen(w) - 1] == ')');
  WM_CHECK(word_of_row(table, "cpu@t1", 7, w, sizeof(w)));
  WM_CHECK(w[0] == '(');
  WM_CHECK(word_of_row(table, "cpu@t2", 6, w, sizeof(w)));
  WM_CHECK(w[0] != '(');
  WM_CHECK(word_of_row(table, "cpu@t2", 7, w, sizeof(w)));
  WM_CHECK(w[0] != '(');
  WM_CHECK(strstr(s, "P99 needs >= 662 samples") != NULL);
  WM_CHECK(strstr(s, "P99.9 needs >= 6,636 samples") != NULL);
  WM_CHECK(strstr(s, "P90 needs") == NULL);  // every config supports it
  wm_strbuf_deinit(&out);
}

WM_TEST(text_has_summary_throughput_scaling_warnings_and_profile) {
  wm_baseline_t *b;
  WM_CHECK_OK(make_baseline(&b));
  double speedup = b->configs[1].speedup;
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  wm_baseline_to_text(b, false, &out);
  wm_baseline_destroy(b);
  const char *s = wm_strbuf_str(&out);
  WM_CHECK(strncmp(s, "wmap bench: <script>", 20) == 0);
  WM_CHECK(
      strstr(s, "model sha256 00ff00ff00ff00ff, dims batch=1, 3.64 GFLOP"));
  WM_CHECK(strstr(s, "method: 3 blocks x >= 1 s and >= 10 iterations") != NULL);
  WM_CHECK(strstr(s, "nearest-rank") != NULL);
  WM_CHECK(strstr(s, "environment: fingerprint ") != NULL);
  WM_CHECK(strstr(s, "cpu.model Test CPU <fast>") != NULL);
  WM_CHECK(strstr(s, "== Throughput ==") != NULL);
  WM_CHECK(strstr(s, "inferences/s") && strstr(s, "GFLOP/s"));
  const char *scaling = strstr(s, "== Scaling ==");
  WM_CHECK(scaling != NULL);
  char w[32], want[32];
  WM_CHECK(word_of_row(scaling, "cpu@t2", 4, w, sizeof(w)));
  snprintf(want, sizeof(want), "%.2f", speedup);
  WM_CHECK_STR_EQ(w, want);
  WM_CHECK(word_of_row(scaling, "cpu@t1", 5, w, sizeof(w)));
  WM_CHECK_STR_EQ(w, "base");
  WM_CHECK(strstr(s, "warning: cpu@t1: few_blocks: 3 blocks") != NULL);
  WM_CHECK(strstr(s, "warning: cpu@t2: few_blocks") != NULL);
  const char *prof = strstr(s, "== Profile of cpu@t1 by op type ==");
  WM_CHECK(prof != NULL);
  // Conv: 800 us of 1 ms, cumulative 80%; t_roof 400 us -> 50 %.
  WM_CHECK(word_of_row(prof, "Conv", 1, w, sizeof(w)));
  WM_CHECK_STR_EQ(w, "2");
  WM_CHECK(word_of_row(prof, "Conv", 4, w, sizeof(w)));
  WM_CHECK_STR_EQ(w, "80.0%");
  WM_CHECK(word_of_row(prof, "Conv", 8, w, sizeof(w)));
  WM_CHECK_STR_EQ(w, "50%");
  const char *top = strstr(s, "== Top 4 nodes of cpu@t1 ==");
  WM_CHECK(top != NULL);
  WM_CHECK(strstr(top, "conv2") < strstr(top, "conv1"));  // slowest first
  WM_CHECK(strstr(s, "Profile of cpu@t2") == NULL);
  wm_strbuf_deinit(&out);
}

WM_TEST(efficiency_above_100_is_a_peak_warning) {
  wm_baseline_t *b;
  WM_CHECK_OK(make_baseline(&b));
  // conv2: 500 us against a roof of 650 us.
  b->configs[0].ops[2].t_roof_ns = 650e3;
  WM_CHECK_OK(wm_baseline_finish(b));
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  wm_baseline_to_text(b, false, &out);
  const char *s = wm_strbuf_str(&out);
  WM_CHECK(strstr(s,
                  "warning: cpu@t1: peak_exceeded: 1 profiled node ran "
                  "faster than the roofline allows") != NULL);
  const char *top = strstr(s, "== Top 4 nodes of cpu@t1 ==");
  WM_CHECK(top != NULL);
  const char *row = top ? strstr(top, "conv2") : NULL;
  WM_CHECK(row != NULL);
  const char *eol = row ? strchr(row, '\n') : NULL;
  WM_CHECK(eol && eol - row > 6 && strncmp(eol - 6, "130% !", 6) == 0);
  WM_CHECK(strstr(s, "50% !") == NULL);
  wm_strbuf_deinit(&out);
  wm_strbuf_init(&out);
  wm_baseline_to_html(b, &out);
  WM_CHECK(strstr(wm_strbuf_str(&out), "peak_exceeded: 1 profiled node") !=
           NULL);
  WM_CHECK(strstr(wm_strbuf_str(&out), "130% !") != NULL);
  wm_strbuf_deinit(&out);
  wm_baseline_destroy(b);
}

// Returns what makes |html| depend on anything outside itself, or NULL.
static const char *outside_reference(const char *html) {
  static const char *const kBad[] = {"<script", "<link",       "<img",
                                     "<iframe", "src=",        "@import",
                                     "url(",    "href=\"http", "https:"};
  for (size_t i = 0; i < sizeof(kBad) / sizeof(kBad[0]); i++) {
    if (strstr(html, kBad[i])) {
      return kBad[i];
    }
  }
  // The only absolute URL is the SVG namespace.
  size_t urls = count(html, "http://");
  size_t ns = count(html, "xmlns=\"http://www.w3.org/2000/svg\"");
  return urls == ns ? NULL : "http://";
}

WM_TEST(html_is_self_contained_with_four_plots_and_escaped_labels) {
  wm_baseline_t *b;
  WM_CHECK_OK(make_baseline(&b));
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  wm_baseline_to_html(b, &out);
  wm_baseline_destroy(b);
  WM_CHECK(!out.failed);
  const char *s = wm_strbuf_str(&out);
  const char *keep = getenv("WMAP_TEST_HTML");  // to look at it
  if (keep) {
    wm_status_free(wm_file_write(keep, s, strlen(s)));
  }
  WM_CHECK(strncmp(s, "<!DOCTYPE html>", 15) == 0);
  WM_CHECK(strcmp(s + strlen(s) - 8, "</html>\n") == 0);
  const char *bad = outside_reference(s);
  if (bad) {
    fprintf(stderr, "outside reference: %s\n", bad);
  }
  WM_CHECK(bad == NULL);
  WM_CHECK_INT_EQ(count(s, "<svg class=\"histogram\""), 1);
  WM_CHECK_INT_EQ(count(s, "<svg class=\"runorder\""), 1);
  WM_CHECK_INT_EQ(count(s, "<svg class=\"pareto\""), 1);
  WM_CHECK_INT_EQ(count(s, "<svg class=\"scaling\""), 1);
  WM_CHECK_INT_EQ(count(s, "<svg"), count(s, "</svg>"));
  WM_CHECK(strstr(s, "&lt;script&gt;alert(1)&lt;/script&gt;") != NULL);
  WM_CHECK(strstr(s, "Test CPU &lt;fast&gt; &amp; &quot;cheap&quot;") != NULL);
  WM_CHECK(strstr(s, "&lt;Add&gt;") != NULL);
  WM_CHECK(strstr(s, "add&lt;1&gt;") != NULL);
  WM_CHECK(strstr(s, "<Add>") == NULL);
  // The histogram marks P50/P90/P99 of each configuration; cpu@t1's P99
  // is in parentheses (unsupported), cpu@t2's is not.
  // Labels of markers closer than 14 px are joined with a middle dot.
  WM_CHECK_INT_EQ(count(s, "class=\"mark\""), 6);
  WM_CHECK_INT_EQ(count(s, ">P50 "), 2);
  WM_CHECK_INT_EQ(count(s, ">P90 ") + count(s, "\u00b7 P90 "), 2);
  WM_CHECK_INT_EQ(count(s, ">(P99 ") + count(s, "\u00b7 (P99 "), 1);
  WM_CHECK_INT_EQ(count(s, ">P99 ") + count(s, "\u00b7 P99 "), 1);
  // The same tables as the text.
  WM_CHECK(strstr(s, "<th>mean \u00b1 sd</th>") != NULL);
  WM_CHECK(strstr(s, "P99 needs &gt;= 662 samples") != NULL);
  WM_CHECK(strstr(s, "<th>efficiency</th>") != NULL);
  wm_strbuf_deinit(&out);
}

// The smallest y of the points of the run-order path of colour |color|,
// and how many points it holds.
static bool path_points(const char *html, const char *color, size_t *n,
                        double *ymin) {
  char head[96];
  snprintf(head, sizeof(head), "<path class=\"pts\" stroke=\"%s\" d=\"", color);
  const char *p = strstr(html, head);
  if (!p) {
    return false;
  }
  p += strlen(head);
  *n = 0;
  *ymin = INFINITY;
  double x, y;
  int used;
  while (sscanf(p, "M%lf %lfh0%n", &x, &y, &used) == 2) {
    *ymin = fmin(*ymin, y);
    (*n)++;
    p += used;
  }
  return *p == '"';
}

WM_TEST(run_order_downsamples_but_keeps_the_spike) {
  wm_baseline_t *b;
  WM_CHECK_OK(make_baseline(&b));
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  wm_baseline_to_html(b, &out);
  wm_baseline_destroy(b);
  const char *s = wm_strbuf_str(&out);
  size_t n1, n2;
  double y1, y2;
  WM_CHECK(path_points(s, wm_report_color(0), &n1, &y1));
  WM_CHECK(path_points(s, wm_report_color(1), &n2, &y2));
  WM_CHECK_INT_EQ(n1, 3 * SMALL_BLOCK);  // few: every sample
  WM_CHECK(n2 <= 5000 && n2 >= 4000);    // 12,000: min and max per bucket
  WM_CHECK(strstr(s, "data-points=\"300\"") != NULL);
  // The spike is the largest sample: drawn near the top of the plot (the
  // plot runs from y = 40 to 370), far above cpu@t1's samples.
  WM_CHECK(y2 < 60);
  WM_CHECK(y1 > 200);
  // Six blocks, each with a strip naming it.
  WM_CHECK_INT_EQ(count(s, " block 0</title>"), 2);
  WM_CHECK_INT_EQ(count(s, "class=\"bmed\""), 6);
  wm_strbuf_deinit(&out);
}

WM_TEST(empty_baseline_still_makes_valid_reports) {
  wm_baseline_t *b;
  WM_CHECK_OK(wm_baseline_create(&b));
  wm_strbuf_t text, html;
  wm_strbuf_init(&text);
  wm_strbuf_init(&html);
  wm_baseline_to_text(b, false, &text);
  wm_baseline_to_html(b, &html);
  wm_baseline_destroy(b);
  WM_CHECK(strstr(wm_strbuf_str(&text), "no configurations") != NULL);
  WM_CHECK_INT_EQ(bad_line(wm_strbuf_str(&text)), 0);
  const char *s = wm_strbuf_str(&html);
  WM_CHECK(strstr(s, "No samples.") != NULL);
  WM_CHECK(strstr(s, "No profile") != NULL);
  WM_CHECK(strcmp(s + strlen(s) - 8, "</html>\n") == 0);
  wm_strbuf_deinit(&text);
  wm_strbuf_deinit(&html);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(text_fits_100_columns_and_colour_only_adds_codes),
      WM_CASE(text_marks_percentiles_the_sample_cannot_support),
      WM_CASE(text_has_summary_throughput_scaling_warnings_and_profile),
      WM_CASE(efficiency_above_100_is_a_peak_warning),
      WM_CASE(html_is_self_contained_with_four_plots_and_escaped_labels),
      WM_CASE(run_order_downsamples_but_keeps_the_spike),
      WM_CASE(empty_baseline_still_makes_valid_reports),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
