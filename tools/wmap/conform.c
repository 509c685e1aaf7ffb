// wmap conform: runs ONNX's backend test data on a backend and compares
// every output with the expected values.
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ops/ops.h"
#include "wmap/onnx.h"
#include "wmap/report.h"
#include "wmap/session.h"

#define DEFAULT_DATA "/usr/share/libonnx-testdata/data"

static const char conform_usage[] =
    "usage: wmap conform [options]\n"
    "\n"
    "Runs ONNX's backend test suite: each case's model on the backend with\n"
    "every test_data_set, outputs compared with rtol 1e-3 and atol 1e-7\n"
    "(floats; NaN equals NaN), exactly otherwise. A case whose model draws\n"
    "random values without a seed is \"random\": its output types and\n"
    "shapes are checked, its values cannot be.\n"
    "\n"
    "Options:\n"
    "  --backend NAME       backend to test first (default: ref); nodes it\n"
    "                       does not take run on ref, and a case that fails\n"
    "                       where ref alone passes is claimed_but_failed\n"
    "  --strict             no fallback: cases the backend cannot run whole\n"
    "                       are unsupported\n"
    "  --data DIR           test data root (default: $WMAP_ONNX_TESTDATA or\n"
    "                       " DEFAULT_DATA
    ")\n"
    "  --suite LIST         comma-separated suites (default: node,\n"
    "                       pytorch-converted,pytorch-operator,simple,real)\n"
    "  --filter REGEX       only cases whose name or suite/name matches\n"
    "  --quiet              print only cases that do not pass\n"
    "  --json FILE          write one record per case as JSON\n"
    "  --expect FILE        the cases expected NOT to pass, one per line as\n"
    "                       `suite/name: reason`; fail (exit 1) on any\n"
    "                       unexpected failure (a case not listed that does\n"
    "                       not pass) or unexpected pass (a listed case that\n"
    "                       passes)\n"
    "  --write-expect FILE  write the cases that did not pass, with their\n"
    "                       reasons, in that "
    "format\n" WM_CLI_PASS_OPTIONS_USAGE WM_CLI_IMPL_USAGE
        WM_CLI_LIMIT_OPTIONS_USAGE WM_CLI_BACKEND_OPTIONS_USAGE
    "  -h, --help           show this help\n"
    "\n"
    "On a terminal, case and summary lines longer than it wrap at spaces,\n"
    "continuation lines indented (the operator table is as wide as its\n"
    "longest name); COLUMNS, when set, gives the width even off a terminal.\n"
    "While stderr is a terminal, a progress line (\"conform: 120/1580 cases,\n"
    "3 failed: suite/case\") is redrawn there in place and cleared at the\n"
    "end; off a terminal there is none, so logs stay clean.\n"
    "\n"
    "Gating CI on conformance: keep the cases known not to pass in a file\n"
    "(start from --write-expect) and run with --expect; the job fails on a\n"
    "new failure and on a case that starts passing (take it out of the file):\n"
    "  wmap conform --quiet --expect tests/conform/expected_fail.txt\n"
    "\n"
    "Exit status: 0 when no case failed (unsupported and random cases are\n"
    "not failures) or, with --expect, every case did as the file expects and\n"
    "none was claimed but failed; 1 otherwise (also when the test data or\n"
    "the --expect file cannot be read, or that file has a malformed line,\n"
    "or no case is there to run: a folder without cases, a --filter that\n"
    "matches none);\n"
    "2 on a usage error (an unknown option or suite, a bad --filter).\n";

static const char *const all_suites[] = {"node", "pytorch-converted",
                                         "pytorch-operator", "simple", "real"};
enum { SUITE_COUNT = 5 };

typedef enum {
  ST_PASS,
  ST_FAIL,
  ST_UNSUPPORTED,
  ST_SKIPPED,
  ST_CLAIMED_FAILED,  // fails where the backend ran nodes, passes on ref
  ST_RANDOM,          // types and shapes match; values drawn without a seed
  ST_COUNT,
} case_status_t;
static const char *const status_names[] = {
    "pass", "fail", "unsupported", "skipped", "claimed_but_failed", "random"};

typedef struct case_result {
  char *suite;           // suite name
  char *name;            // case folder name
  case_status_t status;  // outcome
  char *reason;          // why not pass, or NULL
  char **ops;            // distinct op types in the model
  size_t n_ops;          // number of op types
  double max_abs_err;    // worst absolute float error seen
  double time_us;        // wall time of the case
  size_t nodes;          // nodes in the model's main graph
  size_t nodes_on;       // of those, placed on the tested backend
  size_t nodes_gen;      // of those, run as kernels the host generated
  char **ops_on;         // distinct op types run on the tested backend
  size_t n_ops_on;
  const char *unseeded;  // a node drawing values without a seed, or NULL
} case_result_t;

typedef struct op_stat {
  const char *op;  // borrowed from a result
  int cases, passed, failed, unsupported;
} op_stat_t;

// Whether |node| of |g| draws random values from a fresh seed on each run
// (a random operator, per its definition, without a "seed" attribute):
// its values differ from run to run, so no stored expectation can match
// them.
static bool draws_unseeded(const wm_graph_t *g, const wm_node_t *node) {
  const wm_op_def_t *def =
      wm_ops_find(node->domain, node->op_type, wm_graph_opset(g, node->domain));
  const wm_tensor_t *training = node->input_count > 2 && node->inputs[2] >= 0
                                    ? g->values[node->inputs[2]].initializer
                                    : NULL;
  return def && !wm_node_attr(node, "seed") &&
         wm_op_draws_random(def, node, training);
}

// Adds |op| to the distinct names (*list, *n) unless there already.
static void add_distinct(char ***list, size_t *n, const char *op) {
  for (size_t k = 0; k < *n; k++) {
    if (strcmp((*list)[k], op) == 0) {
      return;
    }
  }
  char **grown = realloc(*list, (*n + 1) * sizeof(char *));
  char *copy = wm_strdup(op);
  if (grown) {
    *list = grown;
  }
  if (grown && copy) {
    (*list)[(*n)++] = copy;
  } else {
    free(copy);
  }
}

// Collects the distinct op types of |g| and its subgraphs into |r|, and
// the first node drawing unseeded random values.
static void collect_ops(const wm_graph_t *g, case_result_t *r) {
  for (size_t i = 0; i < g->node_count; i++) {
    const wm_node_t *node = &g->nodes[i];
    if (!r->unseeded && draws_unseeded(g, node)) {
      r->unseeded = node->op_type;
    }
    add_distinct(&r->ops, &r->n_ops, node->op_type);
    for (int32_t a = 0; a < node->attr_count; a++) {
      const wm_attr_t *attr = &node->attrs[a];
      if (attr->g) {
        collect_ops(attr->g, r);
      }
      for (size_t k = 0; attr->graphs && k < attr->count; k++) {
        collect_ops(attr->graphs[k], r);
      }
    }
  }
}

static void format_index(const wm_shape_t *shape, size_t i, char *buf,
                         size_t size) {
  int64_t idx[WM_MAX_RANK];
  for (int32_t d = shape->rank - 1; d >= 0; d--) {
    idx[d] = shape->dims[d] ? (int64_t)(i % (size_t)shape->dims[d]) : 0;
    i = shape->dims[d] ? i / (size_t)shape->dims[d] : 0;
  }
  size_t n = (size_t)snprintf(buf, size, "[");
  for (int32_t d = 0; d < shape->rank && n < size; d++) {
    n += (size_t)snprintf(buf + n, size - n, "%s%lld", d ? "," : "",
                          (long long)idx[d]);
  }
  if (n < size) {
    snprintf(buf + n, size - n, "]");
  }
}

// Compares |got| with |want| (types and shapes, then values when |values|);
// returns NULL or a heap message naming the worst element. Updates *max_err
// with the largest float error.
static char *compare(const char *name, const wm_tensor_t *got,
                     const wm_tensor_t *want, bool values, double *max_err) {
  char sg[128], sw[128];
  if (got->dtype != want->dtype) {
    return wm_cli_path("output \"%s\": type %s, want %s", name,
                       wm_dtype_name(got->dtype), wm_dtype_name(want->dtype));
  }
  if (!wm_shape_equal(&got->shape, &want->shape)) {
    return wm_cli_path("output \"%s\": shape %s, want %s", name,
                       wm_shape_format(&got->shape, sg, sizeof(sg)),
                       wm_shape_format(&want->shape, sw, sizeof(sw)));
  }
  if (!values) {
    return NULL;
  }
  const double rtol = 1e-3, atol = 1e-7;
  size_t worst = 0, bad = 0;
  double worst_excess = 0.0;
  for (size_t i = 0; i < got->count; i++) {
    if (got->dtype == WM_DTYPE_STRING) {
      if (strcmp(((char *const *)got->data)[i],
                 ((char *const *)want->data)[i]) != 0) {
        return wm_cli_path("output \"%s\": element %zu is \"%s\", want \"%s\"",
                           name, i, ((char *const *)got->data)[i],
                           ((char *const *)want->data)[i]);
      }
      continue;
    }
    if (!wm_dtype_is_float(got->dtype)) {
      if (wm_tensor_get_i64(got, i) != wm_tensor_get_i64(want, i)) {
        char idx[96];
        format_index(&got->shape, i, idx, sizeof(idx));
        return wm_cli_path("output \"%s\": element %s is %lld, want %lld", name,
                           idx, (long long)wm_tensor_get_i64(got, i),
                           (long long)wm_tensor_get_i64(want, i));
      }
      continue;
    }
    double g = wm_tensor_get_f64(got, i), w = wm_tensor_get_f64(want, i);
    double excess;
    if (isnan(g) || isnan(w)) {
      excess = isnan(g) && isnan(w) ? 0.0 : INFINITY;
    } else if (isinf(g) || isinf(w)) {
      excess = g == w ? 0.0 : INFINITY;
    } else {
      double err = fabs(g - w);
      if (err > *max_err) {
        *max_err = err;
      }
      excess = err - (atol + rtol * fabs(w));
    }
    if (excess > 0.0) {
      bad++;
      if (excess > worst_excess || bad == 1) {
        worst_excess = excess;
        worst = i;
      }
    }
  }
  if (bad) {
    char idx[96];
    format_index(&got->shape, worst, idx, sizeof(idx));
    return wm_cli_path(
        "output \"%s\": %zu of %zu elements differ; worst at %s: "
        "got %.9g, want %.9g",
        name, bad, got->count, idx, wm_tensor_get_f64(got, worst),
        wm_tensor_get_f64(want, worst));
  }
  return NULL;
}

// Compares two items: kinds, then sequences element by element and
// optionals by presence and value, tensors with compare(). An optional
// holding a value matches that value (ONNX 1.12's test data stores the
// values of optional outputs bare).
static char *compare_item(const char *name, const wm_item_t *got,
                          const wm_item_t *want, bool values, double *max_err) {
  char sg[96], sw[96];
  if (got->kind == WM_TYPE_OPTIONAL && want->kind != WM_TYPE_OPTIONAL &&
      got->count == 1) {
    return compare_item(name, &got->elems[0], want, values, max_err);
  }
  if (got->kind != want->kind ||
      (got->kind != WM_TYPE_TENSOR && got->count != want->count)) {
    return wm_cli_path("output \"%s\" is %s, want %s", name,
                       wm_item_format(got, sg, sizeof(sg)),
                       wm_item_format(want, sw, sizeof(sw)));
  }
  if (got->kind == WM_TYPE_TENSOR) {
    return compare(name, got->tensor, want->tensor, values, max_err);
  }
  for (size_t i = 0; i < got->count; i++) {
    char *elem = wm_cli_path("%s[%zu]", name, i);
    char *why = elem ? compare_item(elem, &got->elems[i], &want->elems[i],
                                    values, max_err)
                     : wm_strdup("out of memory");
    free(elem);
    if (why) {
      return why;
    }
  }
  return NULL;
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

// Lists the subfolders of |dir| starting with |prefix|, sorted.
static char **list_dirs(const char *dir, const char *prefix, size_t *out_n) {
  *out_n = 0;
  DIR *d = opendir(dir);
  if (!d) {
    return NULL;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) {
      continue;
    }
    char *path = wm_cli_path("%s/%s", dir, e->d_name);
    bool dir_entry = path && is_dir(path);
    free(path);
    if (!dir_entry) {
      continue;
    }
    wm_status_t s = wm_grow((void **)&names, &cap, n + 1, sizeof(char *));
    char *copy = s ? NULL : wm_strdup(e->d_name);
    if (!copy) {
      wm_status_free(s);
      break;
    }
    names[n++] = copy;
  }
  closedir(d);
  if (n) {
    qsort(names, n, sizeof(char *), cmp_str);
  }
  *out_n = n;
  return names;
}

static void free_list(char **names, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(names[i]);
  }
  free(names);
}

// Runs one case folder; fills |r| (suite and name already set).
static void run_case(const char *dir, const wm_session_options_t *opts,
                     case_result_t *r) {
  char *path = wm_cli_path("%s/model.onnx", dir);
  char *json = wm_cli_path("%s/data.json", dir);
  struct stat st;
  if (!path || !json || stat(path, &st) != 0) {
    r->status = ST_SKIPPED;
    r->reason = wm_strdup(json && stat(json, &st) == 0
                              ? "the model is not shipped with the test data "
                                "(data.json names a download)"
                              : "no model.onnx in the case folder");
    free(path);
    free(json);
    return;
  }
  free(json);
  wm_graph_t *graph = NULL;
  wm_session_t *session = NULL;
  wm_status_t s = wm_onnx_load(path, &graph);
  free(path);
  if (!s) {
    collect_ops(graph, r);
    s = wm_session_create_placed(graph, opts, &session);
  }
  if (s) {
    wm_status_code_t code = wm_status_code(s);
    r->status = code == WM_STATUS_UNIMPLEMENTED ? ST_UNSUPPORTED : ST_FAIL;
    r->reason = wm_strdup(wm_status_message(s));
    wm_status_free(s);
    wm_graph_destroy(graph);
    r->unseeded = NULL;
    return;
  }
  size_t n_sets;
  char **sets = list_dirs(dir, "test_data_set_", &n_sets);
  r->status = ST_PASS;
  for (size_t k = 0; k < n_sets && r->status == ST_PASS; k++) {
    char *set_dir = wm_cli_path("%s/%s", dir, sets[k]);
    wm_cli_dataset_t ds = {0};
    s = set_dir ? wm_cli_dataset_load(set_dir, graph, &ds)
                : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    free(set_dir);
    wm_item_t *outs = NULL;
    if (!s) {
      outs = calloc(graph->output_count + 1, sizeof(*outs));
      if (!outs) {
        s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
      }
    }
    if (!s) {
      s = wm_session_run_items(session, (const char *const *)ds.input_names,
                               ds.inputs, ds.n_inputs, outs);
    }
    if (!s && ds.n_outputs != graph->output_count) {
      r->status = ST_FAIL;
      r->reason = wm_cli_path("%s: %zu expected outputs, the model has %zu",
                              sets[k], ds.n_outputs, graph->output_count);
    }
    for (size_t i = 0; !s && r->status == ST_PASS && i < ds.n_outputs; i++) {
      const char *name = graph->values[graph->outputs[i]].name;
      char *why = compare_item(name, &outs[i], &ds.outputs[i], !r->unseeded,
                               &r->max_abs_err);
      if (why) {
        r->status = ST_FAIL;
        r->reason = wm_cli_path("%s: %s", sets[k], why);
        free(why);
      }
    }
    if (s) {
      wm_status_code_t code = wm_status_code(s);
      r->status = code == WM_STATUS_UNIMPLEMENTED ? ST_UNSUPPORTED : ST_FAIL;
      r->reason = wm_cli_path("%s: %s", sets[k], wm_status_message(s));
      wm_status_free(s);
    }
    for (size_t i = 0; outs && i < graph->output_count; i++) {
      wm_item_deinit(&outs[i]);
    }
    free(outs);
    wm_cli_dataset_deinit(&ds);
  }
  // Where the nodes ran: the plan of the last run (of the creation when
  // no run planned).
  r->nodes = wm_session_nodes_run(session);
  r->nodes_on =
      wm_session_nodes_on(session, wm_backend_name(opts->backends[0]));
  const char *tested = wm_backend_name(opts->backends[0]);
  for (size_t i = 0; i < wm_session_node_count(session); i++) {
    const wm_placement_t *p = wm_session_placement(session, i);
    r->nodes_gen += p && p->kernel && !p->runs_in;
    if (p && p->domain[0] == '\0' && strcmp(p->backend, tested) == 0) {
      add_distinct(&r->ops_on, &r->n_ops_on, p->op_type);
    }
  }
  if (n_sets == 0 && r->status == ST_PASS) {
    r->status = ST_SKIPPED;
    r->reason = wm_strdup("no test_data_set folders");
  } else if (r->unseeded && r->status == ST_PASS) {
    r->status = ST_RANDOM;
    r->reason = wm_cli_path(
        "types and shapes match; values not compared: %s draws them "
        "without a seed, so they differ from run to run",
        r->unseeded);
  }
  r->unseeded = NULL;  // borrowed from the graph
  free_list(sets, n_sets);
  wm_session_destroy(session);
  wm_graph_destroy(graph);
}

// ----------------------------------------------------------- terminal

// Where case lines and the progress line go. On a terminal, lines longer
// than its width wrap at spaces with indented continuation lines (COLUMNS,
// when set, gives the width even off a terminal), and stderr carries a
// progress line redrawn in place. Off a terminal nothing is wrapped and no
// progress is drawn, so logs stay as they were.
typedef struct conform_term {
  size_t width;     // wrap stdout lines at this many columns; 0: never
  bool progress;    // stderr is a terminal: draw the progress line
  size_t bar_cols;  // the progress line's most columns
  size_t drawn;     // columns of the progress line on screen now (0: none)
} conform_term_t;

// Narrower widths are taken as this one (room for the indent and a word).
#define TERM_MIN_WIDTH 20
#define TERM_MAX_WIDTH 10000

// The columns of the terminal on |fd|, or 0 when it is none or unknown.
static size_t term_columns(int fd) {
  struct winsize ws;
  if (!isatty(fd) || ioctl(fd, TIOCGWINSZ, &ws) != 0) {
    return 0;
  }
  return ws.ws_col;
}

// Sets up |t|: COLUMNS when it is a number of columns (a warning when it
// is set but not one), else stdout's terminal width; progress when stderr
// is a terminal.
static void term_init(conform_term_t *t) {
  memset(t, 0, sizeof(*t));
  const char *env = getenv("COLUMNS");
  if (env && *env) {
    char *end;
    errno = 0;
    long v = strtol(env, &end, 10);
    if (errno || *end || v <= 0 || v > TERM_MAX_WIDTH) {
      fprintf(stderr,
              "wmap conform: ignoring COLUMNS=\"%s\": not a number of "
              "columns from 1 to %d\n",
              env, TERM_MAX_WIDTH);
    } else {
      t->width = (size_t)v;
    }
  }
  if (t->width == 0) {
    t->width = term_columns(STDOUT_FILENO);
  }
  if (t->width > 0 && t->width < TERM_MIN_WIDTH) {
    t->width = TERM_MIN_WIDTH;
  }
  t->progress = isatty(STDERR_FILENO);
  size_t cols = term_columns(STDERR_FILENO);
  t->bar_cols = cols ? cols : t->width ? t->width : 80;
  if (t->width && t->width < t->bar_cols) {
    t->bar_cols = t->width;
  }
}

// Blanks the progress line, if one is drawn, and returns to its start.
static void term_clear(conform_term_t *t) {
  if (t->drawn == 0) {
    return;
  }
  fprintf(stderr, "\r%*s\r", (int)t->drawn, "");
  fflush(stderr);
  t->drawn = 0;
}

// Draws "conform: DONE/TOTAL cases, F failed: CASE" in place, cut to the
// line's width (a line that wrapped could not be redrawn).
static void term_progress(conform_term_t *t, size_t done, size_t total,
                          int failed, const char *running) {
  if (!t->progress) {
    return;
  }
  char line[512];
  snprintf(line, sizeof(line), "conform: %zu/%zu cases, %d failed%s%s", done,
           total, failed, running ? ": " : "", running ? running : "");
  wm_report_sanitize(line);
  size_t len = strlen(line), room = t->bar_cols > 1 ? t->bar_cols - 1 : 1;
  size_t bytes = wm_report_text_prefix(line, len, room);
  size_t cols = wm_report_text_width(line, bytes);
  fprintf(stderr, "\r%.*s", (int)bytes, line);
  if (cols < t->drawn) {  // blank what is left of a longer line
    fprintf(stderr, "%*s\r%.*s", (int)(t->drawn - cols), "", (int)bytes, line);
  }
  fflush(stderr);
  t->drawn = cols ? cols : 1;
}

// Prints |text| and a newline on stdout, each of its lines wrapped to the
// terminal's width at spaces (a word longer than the line is cut), the
// continuation lines indented by |indent| columns.
static void term_print(conform_term_t *t, size_t indent, const char *text) {
  term_clear(t);
  if (t->width == 0) {
    printf("%s\n", text);
    fflush(stdout);
    return;
  }
  if (indent + TERM_MIN_WIDTH > t->width) {
    indent = 2;
  }
  for (const char *line = text; line;) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) : strlen(line);
    bool first = line == text;
    while (true) {
      size_t room = first ? t->width : t->width - indent;
      printf("%*s", first ? 0 : (int)indent, "");
      if (wm_report_text_width(line, len) <= room) {
        printf("%.*s\n", (int)len, line);
        break;
      }
      size_t cut = wm_report_text_prefix(line, len, room), at = cut;
      while (at > 0 && line[at] != ' ') {
        at--;
      }
      size_t end = at > 0 ? at : cut;  // no space: cut the word
      while (end > 0 && line[end - 1] == ' ') {
        end--;
      }
      printf("%.*s\n", (int)end, line);
      size_t skip = at > 0 ? at : cut;
      while (skip < len && line[skip] == ' ') {
        skip++;
      }
      line += skip;
      len -= skip;
      first = false;
      if (len == 0) {
        break;
      }
    }
    line = nl ? nl + 1 : NULL;
  }
  fflush(stdout);
}

// term_print of the formatted text.
static void term_printf(conform_term_t *t, size_t indent, const char *fmt, ...)
    WM_PRINTF(3, 4);
static void term_printf(conform_term_t *t, size_t indent, const char *fmt,
                        ...) {
  va_list ap;
  va_start(ap, fmt);
  char *text = wm_cli_vformat(fmt, ap);
  va_end(ap);
  term_print(t, indent, text ? text : "(out of memory)");
  free(text);
}

static void write_json(FILE *f, const char *backend, const case_result_t *rs,
                       size_t n, const int counts[ST_COUNT]) {
  wm_strbuf_t b;
  wm_strbuf_init(&b);
  wm_strbuf_printf(&b, "{\"schema\": \"wmap.conform/1\", \"backend\": ");
  wm_strbuf_json_string(&b, backend);
  wm_strbuf_printf(&b,
                   ",\n \"summary\": {\"passed\": %d, \"failed\": %d, "
                   "\"claimed_but_failed\": %d, \"unsupported\": %d, "
                   "\"skipped\": %d, \"random\": %d},\n \"cases\": [\n",
                   counts[ST_PASS], counts[ST_FAIL], counts[ST_CLAIMED_FAILED],
                   counts[ST_UNSUPPORTED], counts[ST_SKIPPED],
                   counts[ST_RANDOM]);
  for (size_t i = 0; i < n; i++) {
    const case_result_t *r = &rs[i];
    wm_strbuf_printf(&b, "  {\"name\": ");
    wm_strbuf_json_string(&b, r->name);
    wm_strbuf_printf(&b, ", \"suite\": ");
    wm_strbuf_json_string(&b, r->suite);
    wm_strbuf_printf(
        &b, ", \"status\": \"%s\", \"reason\": ", status_names[r->status]);
    if (r->reason) {
      wm_strbuf_json_string(&b, r->reason);
    } else {
      wm_strbuf_printf(&b, "null");
    }
    wm_strbuf_printf(&b, ", \"ops\": [");
    for (size_t k = 0; k < r->n_ops; k++) {
      if (k) {
        wm_strbuf_printf(&b, ", ");
      }
      wm_strbuf_json_string(&b, r->ops[k]);
    }
    wm_strbuf_printf(&b,
                     "], \"nodes\": %zu, \"nodes_on_backend\": %zu, "
                     "\"nodes_generated\": %zu, "
                     "\"max_abs_err\": %.9g, \"time_us\": %.1f}%s\n",
                     r->nodes, r->nodes_on, r->nodes_gen, r->max_abs_err,
                     r->time_us, i + 1 < n ? "," : "");
  }
  wm_strbuf_printf(&b, " ]}\n");
  fputs(wm_strbuf_str(&b), f);
  wm_strbuf_deinit(&b);
}

static int cmp_stat(const void *a, const void *b) {
  return strcmp(((const op_stat_t *)a)->op, ((const op_stat_t *)b)->op);
}

static void print_coverage(const case_result_t *rs, size_t n) {
  op_stat_t *stats = NULL;
  size_t n_stats = 0, cap = 0;
  for (size_t i = 0; i < n; i++) {
    for (size_t k = 0; k < rs[i].n_ops; k++) {
      size_t j = 0;
      while (j < n_stats && strcmp(stats[j].op, rs[i].ops[k]) != 0) {
        j++;
      }
      if (j == n_stats) {
        wm_status_t s =
            wm_grow((void **)&stats, &cap, n_stats + 1, sizeof(op_stat_t));
        if (s) {
          wm_status_free(s);
          free(stats);
          return;
        }
        memset(&stats[n_stats], 0, sizeof(op_stat_t));
        stats[n_stats++].op = rs[i].ops[k];
      }
      stats[j].cases++;
      stats[j].passed += rs[i].status == ST_PASS;
      stats[j].failed +=
          rs[i].status == ST_FAIL || rs[i].status == ST_CLAIMED_FAILED;
      stats[j].unsupported += rs[i].status == ST_UNSUPPORTED;
    }
  }
  if (n_stats) {
    qsort(stats, n_stats, sizeof(op_stat_t), cmp_stat);
  }
  // The name column is as wide as the longest name, so the table is no
  // wider than it needs to be.
  int name_w = (int)strlen("operator");
  for (size_t j = 0; j < n_stats; j++) {
    size_t len = strlen(stats[j].op);
    name_w = len > (size_t)name_w ? (int)(len < 64 ? len : 64) : name_w;
  }
  printf("\nPer-operator coverage (cases using the operator):\n");
  printf("%-*s %6s %6s %6s %6s\n", name_w, "operator", "cases", "pass", "fail",
         "unsup");
  for (size_t j = 0; j < n_stats; j++) {
    printf("%-*s %6d %6d %6d %6d\n", name_w, stats[j].op, stats[j].cases,
           stats[j].passed, stats[j].failed, stats[j].unsupported);
  }
  printf("\n");
  free(stats);
}

// An expectations file read whole: a line per case of a few thousand.
#define EXPECTATIONS_MAX_BYTES ((size_t)16 << 20)

// The cases an expectations file lists as not passing.
typedef struct expectations {
  uint8_t *data;       // the file's text, cut into the keys
  wm_strmap_t listed;  // "suite/name" -> 1
} expectations_t;

static void expectations_deinit(expectations_t *e) {
  wm_strmap_deinit(&e->listed);
  free(e->data);
}

// Reads the expectations |file| (cases expected not to pass, `suite/name:
// reason` per line; blank lines and # comments ignored) into |e|, before
// any case runs, so a missing or malformed file fails at once; false after
// saying why on stderr.
static bool expectations_load(const char *file, expectations_t *e) {
  memset(e, 0, sizeof(*e));
  wm_strmap_init(&e->listed);
  size_t size = 0;
  wm_status_t s =
      wm_file_read_capped(file, EXPECTATIONS_MAX_BYTES, &e->data, &size);
  if (s) {
    fprintf(stderr, "wmap: expectations: %s\n", wm_status_message(s));
    wm_status_free(s);
    return false;
  }
  int lineno = 0;
  for (char *save = NULL, *line = strtok_r((char *)e->data, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    lineno++;
    line[strcspn(line, "\r")] = '\0';
    if (!line[0] || line[0] == '#') {
      continue;
    }
    char *colon = strstr(line, ": ");
    if (!colon || colon == line || !colon[2] || !strchr(line, '/')) {
      fprintf(stderr,
              "wmap: expectations \"%s\" line %d: want \"suite/name: "
              "reason\", got \"%s\"\n",
              file, lineno, line);
      return false;
    }
    *colon = '\0';
    s = wm_strmap_put(&e->listed, line, 1);
    if (s) {
      fprintf(stderr, "wmap: expectations \"%s\": %s\n", file,
              wm_status_message(s));
      wm_status_free(s);
      return false;
    }
  }
  return true;
}

// Compares the run with the expectations |e| read from |file|; prints
// every unexpected failure and unexpected pass and returns their number.
// Listed cases the run did not include (filtered out) are not counted.
static int check_expectations(conform_term_t *term, const char *file,
                              const expectations_t *e, const case_result_t *rs,
                              size_t n) {
  int unexpected = 0;
  for (size_t i = 0; i < n; i++) {
    char key[1024];
    snprintf(key, sizeof(key), "%s/%s", rs[i].suite, rs[i].name);
    int64_t v;
    bool is_listed = wm_strmap_get(&e->listed, key, &v);
    bool ok = rs[i].status == ST_PASS || rs[i].status == ST_RANDOM;
    char *line = NULL;
    if (ok && is_listed) {
      line = wm_cli_path(
          "UNEXPECTED %s %s: listed in %s as not passing; "
          "remove it",
          rs[i].status == ST_PASS ? "PASS" : "random", key, file);
    } else if (!ok && !is_listed) {
      line = wm_cli_path("UNEXPECTED %s %s: %s", status_names[rs[i].status],
                         key, rs[i].reason ? rs[i].reason : "");
    }
    if (ok == is_listed) {
      term_print(term, 11, line ? line : "UNEXPECTED: out of memory");
      unexpected++;
    }
    free(line);
  }
  return unexpected;
}

// The error for a test data folder |data| without a case in the suites
// |want|, naming where cases were looked for.
static wm_status_t no_cases(const char *data, const bool *want) {
  wm_strbuf_t where;
  wm_strbuf_init(&where);
  for (int k = 0; k < SUITE_COUNT; k++) {
    if (want[k]) {
      wm_strbuf_printf(&where, "%s%s/test_*", where.len ? ", " : "",
                       all_suites[k]);
    }
  }
  wm_status_t s = WM_ERROR(NOT_FOUND,
                           "test data folder \"%s\" holds no test cases (none "
                           "of %s); install libonnx-testdata or pass --data "
                           "DIR",
                           data, wm_strbuf_str(&where));
  wm_strbuf_deinit(&where);
  return s;
}

// The error for a --filter |filter| that keeps none of the |found| cases.
static wm_status_t no_match(const char *data, const char *filter,
                            size_t found) {
  return WM_ERROR(NOT_FOUND,
                  "--filter \"%s\" matches none of the %zu cases in \"%s\"",
                  filter ? filter : "", found, data);
}

int wm_cli_conform(int argc, char **argv) {
  static const struct option opts[] = {
      {"backend", required_argument, NULL, 'b'},
      {"data", required_argument, NULL, 'd'},
      {"suite", required_argument, NULL, 's'},
      {"filter", required_argument, NULL, 'f'},
      {"quiet", no_argument, NULL, 'q'},
      {"json", required_argument, NULL, 'j'},
      {"expect", required_argument, NULL, 'e'},
      {"write-expect", required_argument, NULL, 'w'},
      {"strict", no_argument, NULL, 'S'},
      {"backend-path", required_argument, NULL, 'P'},
      {"threads", required_argument, NULL, 'T'},
      {"passes", required_argument, NULL, 'Q'},
      {"no-passes", no_argument, NULL, 'N'},
      {"impl", required_argument, NULL, 'K'},
      {"max-iterations", required_argument, NULL, 'M'},
      {"max-sequence-length", required_argument, NULL, 'E'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *backend_name = "ref", *data = getenv("WMAP_ONNX_TESTDATA");
  const char *passes = NULL;
  const char *suites_arg = NULL, *filter = NULL, *json = NULL;
  const char *expect = NULL, *write_expect = NULL;
  bool quiet = false, strict = false;
  wm_kernels_t kernels = WM_KERNELS_AUTO;
  int64_t limits[2] = {0, 0};  // --max-iterations, --max-sequence-length
  wm_cli_backend_options_t bo = {.quiet = true};
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "hq", opts, NULL)) != -1) {
    switch (c) {
      case 'b':
        backend_name = optarg;
        break;
      case 'd':
        data = optarg;
        break;
      case 's':
        suites_arg = optarg;
        break;
      case 'f':
        filter = optarg;
        break;
      case 'q':
        quiet = true;
        break;
      case 'j':
        json = optarg;
        break;
      case 'e':
        expect = optarg;
        break;
      case 'w':
        write_expect = optarg;
        break;
      case 'S':
        strict = true;
        break;
      case 'Q':
      case 'N':
      case 'K':
      case 'M':
      case 'E':
      case 'P':
      case 'T': {
        int rc = c == 'Q'   ? wm_cli_passes_option("conform", optarg, &passes)
                 : c == 'N' ? wm_cli_passes_option("conform", NULL, &passes)
                 : c == 'K' ? wm_cli_impl_option("conform", optarg, &kernels)
                 : c == 'M' || c == 'E'
                     ? wm_cli_limit_option(
                           "conform",
                           c == 'M' ? "max-iterations" : "max-sequence-length",
                           optarg, &limits[c == 'E'])
                     : wm_cli_backend_option(
                           "conform", c == 'P' ? "backend-path" : "threads",
                           optarg, &bo);
        if (rc != WM_EXIT_OK) {
          wm_cli_backend_options_deinit(&bo);
          return rc;
        }
        break;
      }
      case 'h':
        fputs(conform_usage, stdout);
        return WM_EXIT_OK;
      default:
        return wm_cli_option_error("conform", "hq", argv);
    }
  }
  if (optind != argc) {
    return wm_cli_usage_error("conform", "unexpected argument \"%s\"",
                              argv[optind]);
  }
  if (!data || !*data) {
    data = DEFAULT_DATA;
  }
  bool want[SUITE_COUNT] = {0};
  if (suites_arg) {
    char *copy = wm_strdup(suites_arg), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
      int k = 0;
      while (k < SUITE_COUNT && strcmp(all_suites[k], t) != 0) {
        k++;
      }
      if (k == SUITE_COUNT) {
        int rc = wm_cli_usage_error("conform",
                                    "unknown suite \"%s\" (want "
                                    "node, pytorch-converted, "
                                    "pytorch-operator, simple or real)",
                                    t);
        free(copy);
        return rc;
      }
      want[k] = true;
    }
    free(copy);
  } else {
    for (int k = 0; k < SUITE_COUNT; k++) {
      want[k] = true;
    }
  }
  regex_t re;
  if (filter && regcomp(&re, filter, REG_EXTENDED | REG_NOSUB) != 0) {
    return wm_cli_usage_error("conform",
                              "--filter \"%s\" is not a valid "
                              "extended regular expression",
                              filter);
  }
  if (!is_dir(data)) {
    if (filter) {
      regfree(&re);
    }
    wm_cli_backend_options_deinit(&bo);
    return wm_cli_fail(WM_ERROR(NOT_FOUND,
                                "test data folder \"%s\" does not "
                                "exist (install libonnx-testdata or pass "
                                "--data DIR)",
                                data));
  }
  // The expectations are read first: a bad file fails before the run.
  expectations_t expected = {0};
  if (expect && !expectations_load(expect, &expected)) {
    expectations_deinit(&expected);
    wm_cli_backend_options_deinit(&bo);
    if (filter) {
      regfree(&re);
    }
    return WM_EXIT_FAILED;
  }
  wm_backend_t *backend = NULL, *ref = NULL;
  wm_registry_t *reg = NULL;
  wm_status_t s = wm_cli_registry_open(&bo, &reg);
  if (!s) {
    s = wm_registry_find(reg, backend_name, &backend);
  }
  if (!s) {
    s = wm_registry_find(reg, "ref", &ref);
  }
  wm_cli_backend_options_deinit(&bo);
  if (s) {
    if (filter) {
      regfree(&re);
    }
    expectations_deinit(&expected);
    wm_registry_destroy(reg);
    return wm_cli_fail(s);
  }
  // The tested backend first; in FALLBACK mode ref takes what it leaves.
  wm_session_options_t tested = {
      .backends = &backend,
      .backend_count = 1,
      .fallback = ref,
      .mode = strict ? WM_PLACEMENT_STRICT : WM_PLACEMENT_FALLBACK,
      .passes = passes,
      .kernels = kernels,
      .max_iterations = limits[0],
      .max_sequence_length = limits[1],
  };
  wm_session_options_t oracle = {.backends = &ref,
                                 .backend_count = 1,
                                 .mode = WM_PLACEMENT_STRICT,
                                 .passes = passes,
                                 .max_iterations = limits[0],
                                 .max_sequence_length = limits[1]};
  bool is_ref = strcmp(wm_backend_name(backend), "ref") == 0;
  case_result_t *rs = NULL;
  size_t n = 0, cap = 0, whole = 0, gen_cases = 0, gen_nodes = 0, found = 0;
  char **types_on = NULL;  // ONNX op types the backend ran in passing cases
  size_t n_types_on = 0;
  int counts[ST_COUNT] = {0};
  conform_term_t term;
  term_init(&term);
  // Every case first, so that the progress line can say how many there are.
  for (int k = 0; k < SUITE_COUNT; k++) {
    if (!want[k]) {
      continue;
    }
    char *suite_dir = wm_cli_path("%s/%s", data, all_suites[k]);
    size_t n_cases = 0;
    char **cases = suite_dir ? list_dirs(suite_dir, "test_", &n_cases) : NULL;
    found += n_cases;
    for (size_t i = 0; i < n_cases; i++) {
      char *key = wm_cli_path("%s/%s", all_suites[k], cases[i]);
      bool skip = !key || (filter && regexec(&re, cases[i], 0, NULL, 0) != 0 &&
                           regexec(&re, key, 0, NULL, 0) != 0);
      free(key);
      if (skip) {
        continue;
      }
      s = wm_grow((void **)&rs, &cap, n + 1, sizeof(case_result_t));
      if (s) {
        wm_status_free(s);
        break;
      }
      case_result_t *r = &rs[n++];
      memset(r, 0, sizeof(*r));
      r->suite = wm_strdup(all_suites[k]);
      r->name = wm_strdup(cases[i]);
    }
    free_list(cases, n_cases);
    free(suite_dir);
  }
  if (filter) {
    regfree(&re);
  }
  if (n == 0) {
    // Nothing to run is not a green run: a wrong --data, --suite or
    // --filter would otherwise pass a CI gate.
    s = found ? no_match(data, filter, found) : no_cases(data, want);
    expectations_deinit(&expected);
    free(rs);
    wm_registry_destroy(reg);
    return wm_cli_fail(s);
  }
  for (size_t i = 0; i < n; i++) {
    case_result_t *r = &rs[i];
    char *key =
        r->suite && r->name ? wm_cli_path("%s/%s", r->suite, r->name) : NULL;
    term_progress(&term, i, n, counts[ST_FAIL] + counts[ST_CLAIMED_FAILED],
                  key);
    char *dir = key ? wm_cli_path("%s/%s", data, key) : NULL;
    uint64_t t0 = wm_now_ns();
    if (dir) {
      run_case(dir, &tested, r);
      if (!is_ref && r->nodes_on > 0 && r->status != ST_PASS &&
          r->status != ST_SKIPPED && r->status != ST_RANDOM &&
          !(strict && r->status == ST_UNSUPPORTED)) {
        // The backend ran nodes and the case failed: if ref alone
        // passes, the backend claimed a node it then got wrong. (In
        // strict mode a node nothing takes while running is
        // unsupported, not a wrong claim.)
        case_result_t again = {0};
        run_case(dir, &oracle, &again);
        if (again.status == ST_PASS) {
          char *why = wm_cli_path("claimed by %s: %s", wm_backend_name(backend),
                                  r->reason ? r->reason : "");
          free(r->reason);
          r->reason = why;
          r->status = ST_CLAIMED_FAILED;
        }
        free(again.reason);
        free_list(again.ops, again.n_ops);
        free_list(again.ops_on, again.n_ops_on);
      }
      whole += r->status == ST_PASS && r->nodes_on == r->nodes;
      for (size_t t = 0; r->status == ST_PASS && t < r->n_ops_on; t++) {
        add_distinct(&types_on, &n_types_on, r->ops_on[t]);
      }
      gen_cases += r->status == ST_PASS && r->nodes_gen > 0;
      gen_nodes += r->status == ST_PASS ? r->nodes_gen : 0;
    } else {
      r->status = ST_FAIL;
      r->reason = wm_strdup("out of memory");
    }
    free(dir);
    r->time_us = (double)(wm_now_ns() - t0) / 1e3;
    counts[r->status]++;
    if (!quiet || r->status == ST_FAIL || r->status == ST_UNSUPPORTED ||
        r->status == ST_CLAIMED_FAILED) {
      wm_strbuf_t line;
      wm_strbuf_init(&line);
      wm_strbuf_printf(&line, "%-11s %s", status_names[r->status],
                       key ? key : "(out of memory)");
      if (!is_ref && r->nodes) {
        wm_strbuf_printf(&line, " [%s %zu/%zu]", wm_backend_name(backend),
                         r->nodes_on, r->nodes);
      }
      if (r->reason) {
        wm_strbuf_printf(&line, ": %s", r->reason);
      }
      term_print(&term, 12, wm_strbuf_str(&line));
      wm_strbuf_deinit(&line);
    }
    free(key);
  }
  term_clear(&term);
  print_coverage(rs, n);
  if (!is_ref) {
    term_printf(&term, 2,
                "backend %s: %zu passing case%s ran entirely on it%s; %d "
                "claimed but failed",
                wm_backend_name(backend), whole, whole == 1 ? "" : "s",
                strict ? " (strict)" : "", counts[ST_CLAIMED_FAILED]);
    term_printf(&term, 2,
                "backend %s: %zu passing case%s ran %zu node%s as generated "
                "kernels",
                wm_backend_name(backend), gen_cases, gen_cases == 1 ? "" : "s",
                gen_nodes, gen_nodes == 1 ? "" : "s");
    term_printf(&term, 2,
                "backend %s: %zu ONNX operator type%s ran on it in passing "
                "cases",
                wm_backend_name(backend), n_types_on,
                n_types_on == 1 ? "" : "s");
  }
  free_list(types_on, n_types_on);
  int rc = counts[ST_FAIL] || counts[ST_CLAIMED_FAILED] ? WM_EXIT_FAILED
                                                        : WM_EXIT_OK;
  if (json) {
    FILE *f = fopen(json, "w");
    if (!f) {
      fprintf(stderr, "wmap: cannot write \"%s\"\n", json);
      rc = WM_EXIT_FAILED;
    } else {
      write_json(f, backend_name, rs, n, counts);
      fclose(f);
    }
  }
  if (write_expect) {
    FILE *f = fopen(write_expect, "w");
    if (!f) {
      fprintf(stderr, "wmap: cannot write \"%s\"\n", write_expect);
      rc = WM_EXIT_FAILED;
    } else {
      fprintf(f,
              "# Cases expected not to pass on %s, as `suite/name: reason`.\n",
              backend_name);
      for (size_t i = 0; i < n; i++) {
        if (rs[i].status != ST_PASS && rs[i].status != ST_RANDOM) {
          const char *r =
              rs[i].reason ? rs[i].reason : status_names[rs[i].status];
          fprintf(f, "%s/%s: %.*s\n", rs[i].suite, rs[i].name,
                  (int)strcspn(r, "\n"), r);
        }
      }
      fclose(f);
    }
  }
  if (expect) {
    int unexpected = check_expectations(&term, expect, &expected, rs, n);
    expectations_deinit(&expected);
    if (unexpected > 0) {
      rc = WM_EXIT_FAILED;
      term_printf(&term, 2, "%d case(s) did not do what %s expects", unexpected,
                  expect);
    } else if (!counts[ST_CLAIMED_FAILED]) {
      rc = WM_EXIT_OK;  // every failure is an expected one
    }
  }
  char random[96] = "";
  if (counts[ST_RANDOM]) {
    snprintf(random, sizeof(random),
             ", %d random (types and shapes checked, values drawn unseeded)",
             counts[ST_RANDOM]);
  }
  term_printf(&term, 2, "%d passed, %d failed, %d skipped%s", counts[ST_PASS],
              counts[ST_FAIL] + counts[ST_CLAIMED_FAILED],
              counts[ST_UNSUPPORTED] + counts[ST_SKIPPED], random);
  for (size_t i = 0; i < n; i++) {
    free(rs[i].suite);
    free(rs[i].name);
    free(rs[i].reason);
    free_list(rs[i].ops, rs[i].n_ops);
    free_list(rs[i].ops_on, rs[i].n_ops_on);
  }
  free(rs);
  wm_registry_destroy(reg);
  return rc;
}
