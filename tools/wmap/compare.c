// wmap compare: two baselines side by side, with a verdict per metric and
// an exit code usable as a CI gate.
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "wmap/bench.h"

// Exit status when --fail-on trips.
enum { EXIT_GATE = 3 };

static const char compare_usage[] =
    "usage: wmap compare BASE.json NEW.json [options]\n"
    "\n"
    "Compares two baselines written by `wmap bench -o FILE.json`.\n"
    "Configurations pair by label (when the labels differ, the ones left\n"
    "pair in order if both files have as many). Per pair the metrics are\n"
    "p50 and, when both sides hold at least 662 samples, p99: the ratio\n"
    "new/base, a 95% bootstrap interval of the change (resampling blocks),\n"
    "a two-sided Mann-Whitney U test on per-block medians (p99: per-block\n"
    "P99s), exact up to 20 blocks a side, with Holm's correction across the\n"
    "metrics, and a verdict with the noise threshold tau:\n"
    "  regressed          significant and the interval lies above +tau\n"
    "  improved           significant and the interval lies below -tau\n"
    "  inconclusive       not significant, but the interval reaches past\n"
    "                     -tau or +tau (more blocks can tell)\n"
    "  within_noise       significant but the interval overlaps [-tau, tau]\n"
    "  no_change          not significant and the interval within\n"
    "                     [-tau, tau]\n"
    "  insufficient_data  a side has fewer than 5 blocks\n"
    "The overall verdict is the first of these that a metric has. When a\n"
    "critical environment field differs (CPU, kernel, compiler, build\n"
    "type, libraries, model) the comparison is incomparable: the report is\n"
    "still written, and wmap exits 1 naming the fields unless --force.\n"
    "\n"
    "Options:\n"
    "  --noise TAU          noise threshold as a fraction or a percentage:\n"
    "                       0.05 or 5% (default 0.05)\n"
    "  --alpha A            significance level, 0 < A < 1 (default 0.05)\n"
    "  --resamples N        bootstrap resamples, 100 to 10000000 (default\n"
    "                       10000)\n"
    "  --seed S             bootstrap seed (default 1)\n"
    "  --force              compare despite critical environment differences\n"
    "  --format FORMAT      text (default), json or html\n"
    "  -o, --output FILE    write the report to FILE instead of stdout\n"
    "  --fail-on WHAT       exit 3 when the overall verdict is regressed\n"
    "                       (WHAT = regressed) or regressed or improved\n"
    "                       (WHAT = changed)\n"
    "  --color WHEN         auto (default: on a terminal), always, never\n"
    "  -h, --help           show this help\n"
    "\n"
    "Exit status: 0 ok, 1 failed (a file missing or not a baseline, or\n"
    "incomparable without --force), 2 usage error, 3 --fail-on tripped.\n";

typedef enum { FMT_TEXT, FMT_JSON, FMT_HTML } compare_format_t;
typedef enum { FAIL_NEVER, FAIL_REGRESSED, FAIL_CHANGED } fail_on_t;

typedef struct compare_args {
  const char *base;
  const char *new_path;
  const char *output;
  wm_compare_options_t opts;
  compare_format_t format;
  fail_on_t fail_on;
  int color;  // -1 auto, 0 never, 1 always
} compare_args_t;

// Parses a finite number that fills |text|; with |percent|, a trailing '%'
// divides it by 100.
static bool parse_number(const char *text, bool percent, double *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || errno || !isfinite(v)) {
    return false;
  }
  if (percent && *end == '%') {
    v /= 100.0;
    end++;
  }
  if (*end) {
    return false;
  }
  *out = v;
  return true;
}

// Parses a whole number in [lo, hi] that fills |text|.
static bool parse_count(const char *text, unsigned long long lo,
                        unsigned long long hi, unsigned long long *out) {
  char *end;
  errno = 0;
  if (!*text || *text == '-' || *text == '+') {
    return false;
  }
  unsigned long long v = strtoull(text, &end, 10);
  if (*end || errno || v < lo || v > hi) {
    return false;
  }
  *out = v;
  return true;
}

static int parse_args(int argc, char **argv, compare_args_t *a) {
  static const struct option long_opts[] = {
      {"noise", required_argument, NULL, 'n'},
      {"alpha", required_argument, NULL, 'a'},
      {"resamples", required_argument, NULL, 'r'},
      {"seed", required_argument, NULL, 's'},
      {"force", no_argument, NULL, 'F'},
      {"format", required_argument, NULL, 'f'},
      {"output", required_argument, NULL, 'o'},
      {"fail-on", required_argument, NULL, 'x'},
      {"color", required_argument, NULL, 'C'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  a->opts = (wm_compare_options_t){
      .noise = 0.05, .alpha = 0.05, .resamples = 10000, .seed = 1};
  a->color = -1;
  int c, rc = WM_EXIT_OK;
  unsigned long long v;
  optind = 1;
  while (rc == WM_EXIT_OK &&
         (c = getopt_long(argc, argv, "ho:", long_opts, NULL)) != -1) {
    switch (c) {
      case 'n':
        if (!parse_number(optarg, true, &a->opts.noise) ||
            a->opts.noise < 0.0 || a->opts.noise >= 10.0) {
          rc = wm_cli_usage_error(
              "compare",
              "--noise wants a fraction from 0 to 10 or a percentage (5%%), "
              "got \"%s\"",
              optarg);
        }
        break;
      case 'a':
        if (!parse_number(optarg, false, &a->opts.alpha) ||
            !(a->opts.alpha > 0.0 && a->opts.alpha < 1.0)) {
          rc = wm_cli_usage_error(
              "compare", "--alpha wants a number between 0 and 1, got \"%s\"",
              optarg);
        }
        break;
      case 'r':
        if (!parse_count(optarg, 100, 10000000, &v)) {
          rc = wm_cli_usage_error(
              "compare",
              "--resamples wants a count from 100 to 10000000, got "
              "\"%s\"",
              optarg);
        }
        a->opts.resamples = (size_t)v;
        break;
      case 's':
        if (!parse_count(optarg, 0, UINT64_MAX, &v)) {
          rc = wm_cli_usage_error(
              "compare", "--seed wants a whole number >= 0, got \"%s\"",
              optarg);
        }
        a->opts.seed = (uint64_t)v;
        break;
      case 'F':
        a->opts.force = true;
        break;
      case 'f':
        if (strcmp(optarg, "text") == 0) {
          a->format = FMT_TEXT;
        } else if (strcmp(optarg, "json") == 0) {
          a->format = FMT_JSON;
        } else if (strcmp(optarg, "html") == 0) {
          a->format = FMT_HTML;
        } else {
          rc = wm_cli_usage_error(
              "compare", "--format wants text, json or html, got \"%s\"",
              optarg);
        }
        break;
      case 'o':
        a->output = optarg;
        break;
      case 'x':
        if (strcmp(optarg, "regressed") == 0) {
          a->fail_on = FAIL_REGRESSED;
        } else if (strcmp(optarg, "changed") == 0) {
          a->fail_on = FAIL_CHANGED;
        } else {
          rc = wm_cli_usage_error(
              "compare", "--fail-on wants regressed or changed, got \"%s\"",
              optarg);
        }
        break;
      case 'C':
        rc = wm_cli_color_option("compare", optarg, &a->color);
        break;
      case 'h':
        fputs(compare_usage, stdout);
        return -1;
      default:
        rc = wm_cli_option_error("compare", "ho:", argv);
    }
  }
  if (rc != WM_EXIT_OK) {
    return rc;
  }
  int rest = argc - optind;
  if (rest != 2) {
    return wm_cli_usage_error(
        "compare", "want two baseline files, BASE.json and NEW.json, got %d",
        rest);
  }
  a->base = argv[optind];
  a->new_path = argv[optind + 1];
  return WM_EXIT_OK;
}

static wm_status_t write_report(const compare_args_t *a,
                                const wm_compare_t *c) {
  bool color =
      a->format == FMT_TEXT && wm_cli_use_color(a->color, a->output != NULL);
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  switch (a->format) {
    case FMT_TEXT:
      wm_compare_to_text(c, color, &out);
      break;
    case FMT_JSON:
      wm_compare_to_json(c, &out);
      break;
    case FMT_HTML:
      wm_compare_to_html(c, &out);
      break;
  }
  wm_status_t s = wm_cli_write_report(a->output, &out);
  wm_strbuf_deinit(&out);
  return s;
}

// Writes |s| to stderr with control characters as '?': values come from
// the files and must not reach the terminal as escape codes.
static void put_safe(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, stderr);
  }
}

// The message for an incomparable result: the critical fields that differ.
static void print_incomparable(const wm_compare_t *c) {
  fprintf(stderr, "wmap: incomparable: critical fields differ:");
  bool first = true;
  for (size_t i = 0; i < c->n_diff; i++) {
    const wm_env_diff_t *d = &c->diff[i];
    if (d->critical) {
      fprintf(stderr, "%s ", first ? "" : ",");
      put_safe(d->field);
      fprintf(stderr, " (base \"");
      put_safe(d->base);
      fprintf(stderr, "\", new \"");
      put_safe(d->new_value);
      fprintf(stderr, "\")");
      first = false;
    }
  }
  fprintf(stderr, " (use --force)\n");
}

int wm_cli_compare(int argc, char **argv) {
  compare_args_t a = {0};
  int rc = parse_args(argc, argv, &a);
  if (rc != WM_EXIT_OK) {
    return rc < 0 ? WM_EXIT_OK : rc;
  }
  wm_baseline_t *base = NULL, *nb = NULL;
  wm_compare_t *c = NULL;
  wm_status_t s = wm_baseline_load(a.base, &base);
  if (!s) {
    s = wm_baseline_load(a.new_path, &nb);
  }
  if (!s) {
    s = wm_compare_baselines(base, nb, a.base, a.new_path, &a.opts, &c);
  }
  if (!s) {
    s = write_report(&a, c);
  }
  rc = WM_EXIT_OK;
  if (s) {
    rc = wm_cli_fail(s);
  } else if (c->overall == WM_VERDICT_INCOMPARABLE) {
    print_incomparable(c);
    rc = WM_EXIT_FAILED;
  } else if ((a.fail_on == FAIL_REGRESSED &&
              c->overall == WM_VERDICT_REGRESSED) ||
             (a.fail_on == FAIL_CHANGED &&
              (c->overall == WM_VERDICT_REGRESSED ||
               c->overall == WM_VERDICT_IMPROVED))) {
    fprintf(stderr, "wmap: compare: overall verdict %s (--fail-on %s)\n",
            wm_verdict_name(c->overall),
            a.fail_on == FAIL_REGRESSED ? "regressed" : "changed");
    rc = EXIT_GATE;
  }
  wm_compare_destroy(c);
  wm_baseline_destroy(base);
  wm_baseline_destroy(nb);
  return rc;
}
