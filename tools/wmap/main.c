// wmap: the command line. One binary, git-style subcommands.
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "wmap/onnx.h"
#include "wmap/zoo.h"
#include "wmap/session.h"
#include "ref.h"

static const char usage[] =
    "usage: wmap <command> [options]\n"
    "\n"
    "Commands:\n"
    "  map MODEL      the workload map: inventory, memory, roofline,\n"
    "                 coverage per backend, critical path, parallel plans\n"
    "  bench MODEL    latency distributions in interleaved blocks; baseline\n"
    "                 JSON for wmap compare\n"
    "  comm-bench     collectives' time and bus bandwidth by size, beside\n"
    "                 MPI's own (nccl-tests' table); under mpirun too\n"
    "  compare A B    two baselines: the change per metric with its\n"
    "                 interval, a U test and a verdict\n"
    "  run MODEL      run an ONNX model and print or save its outputs\n"
    "  tune MODEL     measure schedules for a model's generated kernels and\n"
    "                 keep the best for later runs\n"
    "  conform        run ONNX's backend test suite on a backend\n"
    "  backends       list the backends found and the plugins refused\n"
    "  zoo            list the built-in models or export one as ONNX\n"
    "  probe          measure this machine's peaks (cached per machine)\n"
    "\n"
    "Run 'wmap <command> --help' for the options of a command.\n"
    "Exit status: 0 ok, 1 failed, 2 usage error, 3 a compare --fail-on gate.\n";

int wm_cli_fail(wm_status_t s) {
  fprintf(stderr, "wmap: %s\n", wm_status_message(s));
  wm_status_free(s);
  return WM_EXIT_FAILED;
}

int wm_cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "wmap %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry 'wmap %s --help'.\n", cmd);
  va_end(ap);
  return WM_EXIT_USAGE;
}

int wm_cli_option_error(const char *cmd, const char *optstring, char **argv) {
  // getopt_long has moved optind past the element it refused.
  const char *arg = optind > 0 ? argv[optind - 1] : "";
  if (strncmp(arg, "--", 2) == 0) {
    int n = (int)strcspn(arg, "=");
    if (optopt == 0) {
      return wm_cli_usage_error(cmd, "unknown option \"%.*s\"", n, arg);
    }
    return arg[n] ? wm_cli_usage_error(cmd, "%.*s takes no value", n, arg)
                  : wm_cli_usage_error(cmd, "%s requires an argument", arg);
  }
  const char *at = optopt > 0 ? strchr(optstring, optopt) : NULL;
  if (at && at[1] == ':') {
    return wm_cli_usage_error(cmd, "-%c requires an argument", optopt);
  }
  return wm_cli_usage_error(cmd, "unknown option \"-%c\"",
                            optopt > 0 ? optopt : '?');
}

int wm_cli_backends_option(const char *cmd, const char *option,
                           const char *value) {
  size_t n = strlen(value);
  if (n == 0 || value[0] == ',' || value[n - 1] == ',' || strstr(value, ",,")) {
    return wm_cli_usage_error(cmd,
                              "--%s \"%s\" has an empty name (want "
                              "names separated by commas, e.g. cpu,ref)",
                              option, value);
  }
  return WM_EXIT_OK;
}

char *wm_cli_vformat(const char *fmt, va_list ap) {
  va_list again;
  va_copy(again, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  char *p = n >= 0 ? wm_malloc((size_t)n + 1) : NULL;
  if (p) {
    vsnprintf(p, (size_t)n + 1, fmt, again);
  }
  va_end(again);
  return p;
}

char *wm_cli_path(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *p = wm_cli_vformat(fmt, ap);
  va_end(ap);
  return p;
}

// Parses a thread count (0 = all cores) from |text|.
static bool parse_threads(const char *text, uint32_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (!*text || *end || errno || v < 0 || v > 4096) {
    return false;
  }
  *out = (uint32_t)v;
  return true;
}

int wm_cli_backend_option(const char *cmd, const char *option,
                          const char *value, wm_cli_backend_options_t *opts) {
  if (strcmp(option, "threads") == 0) {
    if (!parse_threads(value, &opts->num_threads)) {
      return wm_cli_usage_error(
          cmd, "--threads wants a count from 0 to 4096, got \"%s\"", value);
    }
    opts->threads_set = true;
    return WM_EXIT_OK;
  }
  if (strcmp(option, "backend-path") == 0) {
    wm_status_t bad = wm_registry_check_path(value);
    if (bad) {
      int rc =
          wm_cli_usage_error(cmd, "--backend-path: %s", wm_status_message(bad));
      wm_status_free(bad);
      return rc;
    }
    size_t cap = opts->n_paths;
    wm_status_t s = wm_grow((void **)&opts->paths, &cap, opts->n_paths + 1,
                            sizeof(*opts->paths));
    if (s) {
      return wm_cli_fail(s);
    }
    opts->paths[opts->n_paths++] = value;
    return WM_EXIT_OK;
  }
  return wm_cli_usage_error(cmd, "unknown option \"--%s\"", option);
}

int wm_cli_passes_option(const char *cmd, const char *list,
                         const char **passes) {
  wm_status_t s = list ? wm_passes_check(list) : NULL;
  if (s) {
    int rc = wm_cli_usage_error(cmd, "--passes: %s", wm_status_message(s));
    wm_status_free(s);
    return rc;
  }
  *passes = list ? list : "";
  return WM_EXIT_OK;
}

int wm_cli_impl_option(const char *cmd, const char *value, wm_kernels_t *out) {
  if (!wm_kernels_parse(value, out)) {
    return wm_cli_usage_error(
        cmd, "--impl wants auto, library or generated, got \"%s\"", value);
  }
  return WM_EXIT_OK;
}

int wm_cli_limit_option(const char *cmd, const char *opt, const char *text,
                        int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (end == text || *end || errno || v < 1 || v > (1LL << 62)) {
    return wm_cli_usage_error(
        cmd, "--%s wants a count from 1 to 4611686018427387904, got \"%s\"",
        opt, text);
  }
  *out = (int64_t)v;
  return WM_EXIT_OK;
}

void wm_cli_backend_options_deinit(wm_cli_backend_options_t *opts) {
  free(opts->paths);
  opts->paths = NULL;
  opts->n_paths = 0;
}

// Whether a quiet command still warns about refusal |i|: a plugin that
// crashed, exited or hung, one whose name another file took, or a path
// the user named. Each path once per process, as commands open several
// registries.
static bool refusal_is_loud(const wm_cli_backend_options_t *opts,
                            const wm_registry_t *reg, size_t i) {
  static char **warned;
  static size_t n_warned, cap_warned;
  const char *path = wm_registry_refused_path(reg, i);
  wm_refusal_kind_t kind = wm_registry_refused_kind(reg, i);
  bool loud = kind == WM_REFUSAL_FAULT || kind == WM_REFUSAL_CONFLICT;
  for (size_t k = 0; !loud && k < opts->n_paths; k++) {
    loud = strcmp(opts->paths[k], path) == 0;
  }
  for (size_t k = 0; loud && k < n_warned; k++) {
    loud = strcmp(warned[k], path) != 0;
  }
  if (loud &&
      !wm_grow((void **)&warned, &cap_warned, n_warned + 1, sizeof(*warned))) {
    warned[n_warned] = wm_strdup(path);
    n_warned += warned[n_warned] != NULL;
  }
  return loud;
}

wm_status_t wm_cli_registry_open(const wm_cli_backend_options_t *opts,
                                 wm_registry_t **out) {
  *out = NULL;
  wm_cli_backend_options_t none = {0};
  if (!opts) {
    opts = &none;
  }
  wm_registry_options_t ro = {0};
  ro.paths = opts->paths;
  ro.n_paths = opts->n_paths;
  ro.num_threads = opts->num_threads;
  ro.quiet = opts->quiet;
  ro.builtin_query = wm_ref_plugin_query;
  const char *env = getenv("WMAP_NUM_THREADS");
  if (!opts->threads_set && env && *env &&
      !parse_threads(env, &ro.num_threads)) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "WMAP_NUM_THREADS wants a count from 0 to 4096, got \"%s\"",
                    env);
  }
  WM_RETURN_IF_ERROR(wm_registry_create(&ro, out));
  // Quiet commands still tell of plugins that are hostile or shadowed.
  for (size_t i = 0; opts->quiet && !opts->lists_refusals &&
                     i < wm_registry_refused_count(*out);
       i++) {
    if (refusal_is_loud(opts, *out, i)) {
      wm_log(WM_LOG_WARN, "loader: refused %s: %s",
             wm_registry_refused_path(*out, i),
             wm_registry_refused_reason(*out, i));
    }
  }
  return NULL;
}

int wm_cli_dim_option(const char *cmd, const char *text, wm_cli_dims_t *d) {
  const char *eq = strchr(text, '=');
  if (!eq || eq == text) {
    return wm_cli_usage_error(cmd, "--dim wants NAME=VALUE, got \"%s\"", text);
  }
  char *end;
  errno = 0;
  long long v = strtoll(eq + 1, &end, 10);
  if (*end || end == eq + 1 || errno || v < 1) {
    return wm_cli_usage_error(
        cmd, "--dim %.*s wants a whole number >= 1, got \"%s\"",
        (int)(eq - text), text, eq + 1);
  }
  if (d->n == WM_CLI_MAX_DIMS) {
    return wm_cli_usage_error(cmd, "at most %d --dim options", WM_CLI_MAX_DIMS);
  }
  for (size_t i = 0; i < d->n; i++) {
    if (strlen(d->names[i]) == (size_t)(eq - text) &&
        strncmp(d->names[i], text, (size_t)(eq - text)) == 0) {
      return wm_cli_usage_error(cmd, "--dim %s is given twice", d->names[i]);
    }
  }
  char *name = wm_strndup(text, (size_t)(eq - text));
  if (!name) {
    return wm_cli_fail(WM_ERROR(RESOURCE_EXHAUSTED, "out of memory"));
  }
  d->names[d->n] = name;
  d->values[d->n++] = v;
  return WM_EXIT_OK;
}

int wm_cli_shape_option(const char *cmd, const char *text, wm_cli_dims_t *d) {
  const char *eq = strrchr(text, '=');
  if (!eq || eq == text || !eq[1]) {
    return wm_cli_usage_error(
        cmd, "--shape wants INPUT=DIMS (e.g. image=1x3x640x640), got \"%s\"",
        text);
  }
  wm_shape_t shape = {.rank = 0};
  const char *p = eq + 1;
  while (*p) {
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || errno || v < 0 || (*end && *end != 'x') ||
        shape.rank == WM_MAX_RANK || (*end == 'x' && !end[1])) {
      return wm_cli_usage_error(
          cmd,
          "--shape %.*s wants dims as whole numbers >= 0 joined by 'x' "
          "(at most %d), got \"%s\"",
          (int)(eq - text), text, WM_MAX_RANK, eq + 1);
    }
    shape.dims[shape.rank++] = v;
    p = *end ? end + 1 : end;
  }
  if (d->n_shapes == WM_CLI_MAX_DIMS) {
    return wm_cli_usage_error(cmd, "at most %d --shape options",
                              WM_CLI_MAX_DIMS);
  }
  for (size_t i = 0; i < d->n_shapes; i++) {
    if (strlen(d->shape_inputs[i]) == (size_t)(eq - text) &&
        strncmp(d->shape_inputs[i], text, (size_t)(eq - text)) == 0) {
      return wm_cli_usage_error(cmd, "--shape %s is given twice",
                                d->shape_inputs[i]);
    }
  }
  char *name = wm_strndup(text, (size_t)(eq - text));
  if (!name) {
    return wm_cli_fail(WM_ERROR(RESOURCE_EXHAUSTED, "out of memory"));
  }
  d->shape_inputs[d->n_shapes] = name;
  d->shapes[d->n_shapes++] = shape;
  return WM_EXIT_OK;
}

// True when |p| names a dim a user can bind (an identifier, not an
// expression such as "2*seq" an exporter derived).
static bool is_dim_name(const char *p) {
  if (!p || !*p || (!isalpha((unsigned char)*p) && *p != '_')) {
    return false;
  }
  for (; *p; p++) {
    if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != '-') {
      return false;
    }
  }
  return true;
}

// The index of binding |name| in |d|, or -1.
static int find_dim(const wm_cli_dims_t *d, const char *name) {
  for (size_t i = 0; i < d->n; i++) {
    if (strcmp(d->names[i], name) == 0) {
      return (int)i;
    }
  }
  return -1;
}

// Adds binding |name|=|value| to |d| (checked against one already there).
static wm_status_t add_dim(wm_cli_dims_t *d, const char *name, int64_t value,
                           const char *why) {
  int at = find_dim(d, name);
  if (at >= 0) {
    return d->values[at] == value
               ? NULL
               : WM_ERROR(INVALID_ARGUMENT,
                          "%s makes dim \"%s\" %lld, but it is bound to %lld",
                          why, name, (long long)value,
                          (long long)d->values[at]);
  }
  if (d->n == WM_CLI_MAX_DIMS) {
    return WM_ERROR(INVALID_ARGUMENT, "more than %d dims to bind",
                    WM_CLI_MAX_DIMS);
  }
  d->names[d->n] = wm_strdup(name);
  if (!d->names[d->n]) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  d->values[d->n++] = value;
  return NULL;
}

wm_status_t wm_cli_dims_apply(const char *cmd, wm_graph_t *g, wm_cli_dims_t *d,
                              bool bind_named, bool defaults) {
  size_t given = d->n;
  // --shape: named dims become bindings, the others are set here.
  for (size_t k = 0; k < d->n_shapes; k++) {
    int32_t id = wm_graph_find_value(g, d->shape_inputs[k]);
    const wm_value_t *v = id >= 0 ? &g->values[id] : NULL;
    if (!v || !v->is_input || v->initializer) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "--shape %s: the model has no input named \"%s\"",
                      d->shape_inputs[k], d->shape_inputs[k]);
    }
    wm_type_t t = v->type;
    char want[128], got[128];
    if (t.kind != WM_TYPE_TENSOR || t.shape.rank != d->shapes[k].rank) {
      return WM_ERROR(INVALID_ARGUMENT, "--shape %s=%s: the input is %s",
                      d->shape_inputs[k],
                      wm_shape_format(&d->shapes[k], got, sizeof(got)),
                      wm_type_format(&t, want, sizeof(want)));
    }
    for (int32_t i = 0; i < t.shape.rank; i++) {
      int64_t to = d->shapes[k].dims[i];
      if (t.shape.dims[i] >= 0 && t.shape.dims[i] != to) {
        return WM_ERROR(INVALID_ARGUMENT,
                        "--shape %s=%s: dim %d of the input is %lld",
                        d->shape_inputs[k],
                        wm_shape_format(&d->shapes[k], got, sizeof(got)), i,
                        (long long)t.shape.dims[i]);
      }
      if (t.shape.dims[i] < 0 && is_dim_name(t.dim_params[i])) {
        char why[160];
        snprintf(why, sizeof(why), "--shape %s", d->shape_inputs[k]);
        if (to < 1) {
          return WM_ERROR(INVALID_ARGUMENT,
                          "%s: dim \"%s\" must be >= 1, got %lld", why,
                          t.dim_params[i], (long long)to);
        }
        WM_RETURN_IF_ERROR(add_dim(d, t.dim_params[i], to, why));
      } else if (t.shape.dims[i] < 0) {
        t.shape.dims[i] = to;
        t.dim_params[i] = NULL;
      }
    }
    WM_RETURN_IF_ERROR(wm_graph_set_type(g, id, &t));
  }
  // Every dim still unknown: 1, listed once.
  wm_strbuf_t note;
  wm_strbuf_init(&note);
  size_t noted = 0;
  wm_status_t s = NULL;
  for (size_t k = 0; defaults && !s && k < g->input_count; k++) {
    int32_t id = g->inputs[k];
    const wm_value_t *v = &g->values[id];
    if (v->initializer || v->type.kind != WM_TYPE_TENSOR) {
      continue;
    }
    wm_type_t t = v->type;
    bool changed = false;
    for (int32_t i = 0; !s && i < t.shape.rank; i++) {
      if (t.shape.dims[i] >= 0) {
        continue;
      }
      const char *p = t.dim_params[i];
      if (is_dim_name(p)) {
        if (find_dim(d, p) < 0) {
          s = add_dim(d, p, 1, "the default");
          wm_strbuf_printf(&note, "%s%s", noted++ ? ", " : "", p);
        }
      } else {
        wm_strbuf_printf(&note, "%sinput \"%s\" dim %d%s%s%s",
                         noted++ ? ", " : "", v->name, i, p ? " (" : "",
                         p ? p : "", p ? ")" : "");
        t.shape.dims[i] = 1;
        t.dim_params[i] = NULL;
        changed = true;
      }
    }
    if (!s && changed) {
      s = wm_graph_set_type(g, id, &t);
    }
  }
  if (!s && noted) {
    fprintf(stderr,
            "wmap %s: note: %zu unbound dim%s set to 1: %s (bind with --dim "
            "NAME=VALUE or --shape INPUT=DIMS)\n",
            cmd, noted, noted == 1 ? "" : "s", wm_strbuf_str(&note));
  }
  wm_strbuf_deinit(&note);
  WM_RETURN_IF_ERROR(s);
  for (size_t i = bind_named ? 0 : d->n; i < d->n; i++) {
    wm_status_t b = wm_graph_bind_dim(g, d->names[i], d->values[i]);
    if (b && i >= given) {
      // Bound through --shape or by default: say so, not "--dim".
      b = wm_status_annotate(b, "dim \"%s\" of an input", d->names[i]);
    }
    WM_RETURN_IF_ERROR(b);
  }
  return NULL;
}

void wm_cli_dims_deinit(wm_cli_dims_t *d) {
  for (size_t i = 0; i < d->n; i++) {
    free(d->names[i]);
  }
  for (size_t i = 0; i < d->n_shapes; i++) {
    free(d->shape_inputs[i]);
  }
  d->n = 0;
  d->n_shapes = 0;
}

int wm_cli_model_operand(const char *cmd, const char *zoo, int argc,
                         char **argv, int first, const char **out_model) {
  int rest = argc - first;
  *out_model = NULL;
  if (zoo && rest != 0) {
    return wm_cli_usage_error(cmd, "--zoo and a MODEL file are exclusive");
  }
  if (!zoo && rest != 1) {
    return wm_cli_usage_error(
        cmd, "want one MODEL file or --zoo NAME, got %d arguments", rest);
  }
  *out_model = zoo ? NULL : argv[first];
  return WM_EXIT_OK;
}

wm_status_t wm_cli_baseline_new(const char *model, const char *sha256,
                                size_t n_configs, wm_baseline_t **out) {
  *out = NULL;
  wm_baseline_t *bl = NULL;
  WM_RETURN_IF_ERROR(wm_baseline_create(&bl));
  wm_arena_t *ar = &bl->arena;
  char when[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
  wm_env_collect(&bl->env);
  const char *v = wm_env_get(&bl->env, "wmap.version");
  const char *git = wm_env_get(&bl->env, "wmap.git");
  const char *type = wm_env_get(&bl->env, "build.type");
  bl->created_utc = wm_arena_strdup(ar, when);
  bl->model_name = wm_arena_strdup(ar, model);
  bl->model_sha256 = wm_arena_strdup(ar, sha256 ? sha256 : "");
  bl->tool_version = wm_arena_strdup(ar, v ? v : "unknown");
  bl->tool_git = wm_arena_strdup(ar, git ? git : "unknown");
  bl->build_type = wm_arena_strdup(ar, type ? type : "unknown");
  bl->configs = wm_arena_alloc(ar, (n_configs + 1) * sizeof(*bl->configs));
  bl->dims = wm_arena_alloc(ar, sizeof(wm_bench_kv_t));
  if (!bl->created_utc || !bl->model_name || !bl->model_sha256 ||
      !bl->tool_version || !bl->tool_git || !bl->build_type || !bl->configs ||
      !bl->dims) {
    wm_baseline_destroy(bl);
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for a baseline");
  }
  *out = bl;
  return NULL;
}

wm_status_t wm_cli_model_load(const char *zoo, const char *path,
                              wm_graph_t **out) {
  return zoo ? wm_zoo_build(zoo, out) : wm_onnx_load(path, out);
}

int wm_cli_number_option(const char *cmd, const char *opt, const char *text,
                         double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (end == text || *end || errno || !(v >= lo && v <= hi)) {
    return wm_cli_usage_error(cmd,
                              "--%s wants a number from %.15g to %.15g, got "
                              "\"%s\"",
                              opt, lo, hi, text);
  }
  *out = v;
  return WM_EXIT_OK;
}

int wm_cli_count_option(const char *cmd, const char *opt, const char *text,
                        int32_t lo, int32_t hi, int32_t *out) {
  double v = 0;
  if (wm_cli_number_option(cmd, opt, text, lo, hi, &v) != WM_EXIT_OK) {
    return WM_EXIT_USAGE;
  }
  if (v != floor(v)) {
    return wm_cli_usage_error(cmd, "--%s wants a whole number, got \"%s\"", opt,
                              text);
  }
  *out = (int32_t)v;
  return WM_EXIT_OK;
}

int wm_cli_color_option(const char *cmd, const char *value, int *out) {
  if (strcmp(value, "auto") == 0) {
    *out = -1;
  } else if (strcmp(value, "always") == 0) {
    *out = 1;
  } else if (strcmp(value, "never") == 0) {
    *out = 0;
  } else {
    return wm_cli_usage_error(
        cmd, "--color wants auto, always or never, got \"%s\"", value);
  }
  return WM_EXIT_OK;
}

bool wm_cli_use_color(int color, bool to_file) {
  if (color >= 0) {
    return color == 1;
  }
  const char *no = getenv("NO_COLOR");
  return !to_file && isatty(STDOUT_FILENO) && !(no && *no);
}

wm_status_t wm_cli_write_report(const char *path, const wm_strbuf_t *report) {
  const char *text = wm_strbuf_str(report);
  if (report->failed) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for the report");
  }
  if (path) {
    return wm_file_write(path, text, strlen(text));
  }
  if (fputs(text, stdout) == EOF || fflush(stdout) != 0) {
    return WM_ERROR(UNAVAILABLE, "cannot write the report to stdout");
  }
  return NULL;
}

wm_status_t wm_cli_peaks_cache(char **out_path, bool *out_exists) {
  wm_machine_t machine;
  wm_machine_get(&machine);
  WM_RETURN_IF_ERROR(wm_peaks_cache_path(NULL, &machine, out_path));
  *out_exists = access(*out_path, R_OK) == 0;
  return NULL;
}

// Opens the registry again with every CPU backend at 1 thread.
static wm_status_t open_one_thread(void *ctx, wm_registry_t **out) {
  wm_cli_backend_options_t one = *(const wm_cli_backend_options_t *)ctx;
  one.num_threads = 1;
  one.threads_set = true;
  return wm_cli_registry_open(&one, out);
}

wm_status_t wm_cli_peaks_get(const wm_cli_backend_options_t *opts,
                             wm_peaks_options_t *po, wm_peaks_t *out) {
  // Always all cores and 1 thread, whatever WMAP_NUM_THREADS says: the
  // cache holds both and is not keyed by a thread setting.
  wm_cli_backend_options_t all = {0};
  if (opts) {
    all = *opts;
  }
  all.quiet = true;
  all.num_threads = 0;
  all.threads_set = true;
  wm_registry_t *reg = NULL;
  wm_status_t s = wm_cli_registry_open(&all, &reg);
  if (!s) {
    po->registry = reg;
    po->open_one = open_one_thread;
    po->open_ctx = &all;
    s = wm_peaks_get(po, out);
    po->registry = NULL;
    po->open_ctx = NULL;
  }
  wm_registry_destroy(reg);
  return s;
}

wm_status_t wm_cli_backend_list(wm_registry_t *reg, const char *list,
                                wm_backend_t **out_backends,
                                size_t *out_count) {
  *out_count = 0;
  if (!list || !*list) {
    wm_backend_t *ref = NULL;
    for (size_t i = 0; i < wm_registry_count(reg); i++) {
      wm_backend_t *b = wm_registry_backend(reg, i);
      if (strcmp(wm_backend_name(b), "ref") == 0) {
        ref = b;
      } else if (*out_count < WM_SESSION_MAX_BACKENDS - 1) {
        out_backends[(*out_count)++] = b;
      }
    }
    if (ref) {
      out_backends[(*out_count)++] = ref;
    }
    return NULL;
  }
  char *copy = wm_strdup(list), *save = NULL;
  if (!copy) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_status_t s = NULL;
  for (char *t = strtok_r(copy, ",", &save); !s && t;
       t = strtok_r(NULL, ",", &save)) {
    if (*out_count == WM_SESSION_MAX_BACKENDS) {
      s = WM_ERROR(INVALID_ARGUMENT, "more than %d backends in \"%s\"",
                   WM_SESSION_MAX_BACKENDS, list);
      break;
    }
    s = wm_registry_find(reg, t, &out_backends[*out_count]);
    for (size_t k = 0; !s && k < *out_count; k++) {
      if (out_backends[k] == out_backends[*out_count]) {
        s = WM_ERROR(INVALID_ARGUMENT,
                     "backend \"%s\" is listed twice in "
                     "\"%s\"",
                     t, list);
      }
    }
    if (!s) {
      (*out_count)++;
    }
  }
  free(copy);
  return s;
}

// Sets the log level from WMAP_LOG (error, warn, info or debug); an
// unknown value is named and ignored.
static void log_level_from_env(void) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  const char *v = getenv("WMAP_LOG");
  if (!v || !*v) {
    return;
  }
  for (int i = 0; i < 4; i++) {
    if (strcmp(v, names[i]) == 0) {
      wm_log_set_level((wm_log_level_t)i);
      return;
    }
  }
  fprintf(stderr,
          "wmap: WMAP_LOG is \"%s\", not one of error, warn, info, debug; "
          "ignored\n",
          v);
}

int main(int argc, char **argv) {
  log_level_from_env();
  // Each command says what is wrong with an option, once
  // (wm_cli_option_error); getopt's own messages would come first.
  opterr = 0;
  if (argc < 2) {
    fputs(usage, stderr);
    return WM_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
      strcmp(cmd, "help") == 0) {
    fputs(usage, stdout);
    return WM_EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("wmap %s\n", WMAP_VERSION);
    return WM_EXIT_OK;
  }
  if (strcmp(cmd, "map") == 0) {
    return wm_cli_map(argc - 1, argv + 1);
  }
  if (strcmp(cmd, "bench") == 0) {
    return wm_cli_bench(argc - 1, argv + 1);
  }
  if (strcmp(cmd, "comm-bench") == 0) {
    return wm_cli_comm_bench(argc - 1, argv + 1);
  }
  if (strcmp(cmd, "compare") == 0) {
    return wm_cli_compare(argc - 1, argv + 1);
  }
  if (strcmp(cmd, "run") == 0) {
    return wm_cli_run(argc - 1, argv + 1);
  }
  if (strcmp(cmd, "tune") == 0) {
    return wm_cli_tune(argc - 1, argv + 1);
  }
  if (strcmp(cmd, "conform") == 0) {
    return wm_cli_conform(argc - 1, argv + 1);
  }
  if (strcmp(cmd, "backends") == 0) {
    return wm_cli_backends(argc - 1, argv + 1);
  }
  if (strcmp(cmd, "zoo") == 0) {
    return wm_cli_zoo(argc - 1, argv + 1);
  }
  if (strcmp(cmd, "probe") == 0) {
    return wm_cli_probe(argc - 1, argv + 1);
  }
  fprintf(stderr, "wmap: unknown command \"%s\"\n\n%s", cmd, usage);
  return WM_EXIT_USAGE;
}
