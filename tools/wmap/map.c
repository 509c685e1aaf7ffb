// wmap map: the workload map of a model file or a zoo model.
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "wmap/bench.h"
#include "wmap/session.h"

static const char map_usage[] =
    "usage: wmap map MODEL.onnx | --zoo NAME[:key=value,...] [options]\n"
    "\n"
    "Maps a model onto the backends without running it: an inventory per\n"
    "node and op type (MACs, FLOPs = 2 x MACs for contractions,\n"
    "transcendentals, bytes in/weights/out, arithmetic intensity,\n"
    "parameters), memory (weights + peak live activations), a roofline time\n"
    "and class per node on each backend's peaks, coverage per node and\n"
    "backend (vendor library, native kernel, generated, fallback, missing,\n"
    "with the reason) from each backend's target description, the critical\n"
    "path and, with --parallel, the collectives a strategy needs. A node\n"
    "that cannot be mapped (unknown operator, unbound dim) is marked with a\n"
    "note; the rest is still mapped. Peaks come from `wmap probe`'s cache\n"
    "(measured on first use, ~15 s) unless --peaks or --no-probe; each\n"
    "backend's roof is its own measured GEMM, at --threads threads when\n"
    "given (interpolated between the 1-thread and all-core figures).\n"
    "\n"
    "Options:\n"
    "  --zoo SPEC           map a built-in model (see `wmap zoo list`)\n"
    "  --backends LIST      backends to map onto, in order (default: every\n"
    "                       loaded backend, ref last); ref is the fallback\n"
    "  --critical NAME      backend whose roofline times weigh the critical\n"
    "                       path (default: the first listed)\n"
    "  --times FILE         measured times: the per-node profile of a\n"
    "                       baseline (`wmap bench -o FILE`), its first\n"
    "                       profiled configuration; they weigh the critical\n"
    "                       path, each node gets its achieved GFLOP/s and %\n"
    "                       of its roof (rings on the HTML roofline), and the\n"
    "                       roofs are taken at that configuration's thread\n"
    "                       count\n" WM_CLI_DIM_OPTIONS_USAGE
    "  --parallel SPEC      dp=N,tp=M,pp=K[,microbatches=m][,inference=1]\n"
    "                       [,link=GB/s][,grad_bytes=B]: collectives per "
    "step,\n"
    "                       bytes per rank, pipeline bubble\n"
    "  --peaks FILE         peaks from a wmap.peaks/1 JSON file\n"
    "                       (`wmap probe --format json`)\n"
    "  --no-probe           never measure: declared peaks only\n"
    "  --format FORMAT      text (default), json, md, html, csv (one row per\n"
    "                       node: work, traffic, path, per-backend cover and\n"
    "                       t_roof) or dot (the graph for Graphviz, coloured\n"
    "                       by cover, the critical path in red)\n"
    "  -o, --output FILE    write the report to FILE instead of stdout\n"
    "  --html FILE          also write the HTML report to FILE\n"
    "  --color WHEN         auto (default: on a terminal), always, "
    "never\n" WM_CLI_BACKEND_OPTIONS_USAGE
    "  -h, --help           show this help\n";

typedef enum {
  FMT_TEXT,
  FMT_JSON,
  FMT_MD,
  FMT_HTML,
  FMT_CSV,
  FMT_DOT
} map_format_t;

typedef struct map_args {
  const char *model;
  const char *zoo;
  const char *backends;
  const char *critical;
  const char *parallel;
  const char *peaks_file;
  const char *times_file;
  const char *output;
  const char *html;
  bool no_probe;
  int color;  // -1 auto, 0 never, 1 always
  map_format_t format;
  wm_cli_dims_t dims;
  wm_cli_backend_options_t bo;
} map_args_t;

static void args_deinit(map_args_t *a) {
  wm_cli_dims_deinit(&a->dims);
  wm_cli_backend_options_deinit(&a->bo);
}

static int parse_args(int argc, char **argv, map_args_t *a) {
  static const struct option long_opts[] = {
      {"zoo", required_argument, NULL, 'z'},
      {"backends", required_argument, NULL, 'b'},
      {"backend", required_argument, NULL, 'b'},
      {"critical", required_argument, NULL, 'c'},
      {"dim", required_argument, NULL, 'd'},
      {"shape", required_argument, NULL, 'D'},
      {"parallel", required_argument, NULL, 'p'},
      {"peaks", required_argument, NULL, 'k'},
      {"times", required_argument, NULL, 'M'},
      {"no-probe", no_argument, NULL, 'n'},
      {"format", required_argument, NULL, 'f'},
      {"output", required_argument, NULL, 'o'},
      {"html", required_argument, NULL, 'H'},
      {"color", required_argument, NULL, 'C'},
      {"backend-path", required_argument, NULL, 'P'},
      {"threads", required_argument, NULL, 'T'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int c, rc = WM_EXIT_OK;
  a->color = -1;
  optind = 1;
  while (rc == WM_EXIT_OK &&
         (c = getopt_long(argc, argv, "ho:", long_opts, NULL)) != -1) {
    switch (c) {
      case 'z':
        a->zoo = optarg;
        break;
      case 'b':
        a->backends = optarg;
        rc = wm_cli_backends_option("map", "backends", optarg);
        break;
      case 'c':
        a->critical = optarg;
        break;
      case 'd':
        rc = wm_cli_dim_option("map", optarg, &a->dims);
        break;
      case 'D':
        rc = wm_cli_shape_option("map", optarg, &a->dims);
        break;
      case 'p':
        a->parallel = optarg;
        break;
      case 'k':
        a->peaks_file = optarg;
        break;
      case 'M':
        a->times_file = optarg;
        break;
      case 'n':
        a->no_probe = true;
        break;
      case 'f':
        if (strcmp(optarg, "text") == 0) {
          a->format = FMT_TEXT;
        } else if (strcmp(optarg, "json") == 0) {
          a->format = FMT_JSON;
        } else if (strcmp(optarg, "md") == 0 ||
                   strcmp(optarg, "markdown") == 0) {
          a->format = FMT_MD;
        } else if (strcmp(optarg, "html") == 0) {
          a->format = FMT_HTML;
        } else if (strcmp(optarg, "csv") == 0) {
          a->format = FMT_CSV;
        } else if (strcmp(optarg, "dot") == 0) {
          a->format = FMT_DOT;
        } else {
          rc = wm_cli_usage_error(
              "map",
              "--format wants text, json, md, html, csv or dot, got \"%s\"",
              optarg);
        }
        break;
      case 'o':
        a->output = optarg;
        break;
      case 'H':
        a->html = optarg;
        break;
      case 'C':
        rc = wm_cli_color_option("map", optarg, &a->color);
        break;
      case 'P':
        rc = wm_cli_backend_option("map", "backend-path", optarg, &a->bo);
        break;
      case 'T':
        rc = wm_cli_backend_option("map", "threads", optarg, &a->bo);
        break;
      case 'h':
        fputs(map_usage, stdout);
        return -1;
      default:
        rc = wm_cli_option_error("map", "ho:", argv);
    }
  }
  if (rc != WM_EXIT_OK) {
    return rc;
  }
  if (a->no_probe && a->peaks_file) {
    return wm_cli_usage_error("map", "--no-probe and --peaks are exclusive");
  }
  return wm_cli_model_operand("map", a->zoo, argc, argv, optind, &a->model);
}

// The peaks the map uses: --peaks FILE, the probe cache (measuring on
// first use), or none with --no-probe.
static wm_status_t get_peaks(const map_args_t *a, wm_peaks_t **out) {
  *out = NULL;
  if (a->no_probe) {
    return NULL;
  }
  wm_peaks_t *p = wm_calloc(1, sizeof(*p));
  if (!p) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_status_t s;
  if (a->peaks_file) {
    s = wm_peaks_load(a->peaks_file, p);
  } else {
    char *path = NULL;
    bool cached = false;
    s = wm_cli_peaks_cache(&path, &cached);
    if (!s && !cached) {
      fprintf(stderr,
              "wmap: measuring this machine's peaks once (~15 s); cached in "
              "%s\n",
              path);
    }
    free(path);
    wm_peaks_options_t po = {0};
    if (!s) {
      s = wm_cli_peaks_get(&a->bo, &po, p);
    }
  }
  if (s) {
    free(p);
    return s;
  }
  *out = p;
  return NULL;
}

// Measured times of the graph's nodes, from a baseline's profile.
typedef struct node_times {
  double *seconds;        // per graph node index
  const char **backends;  // per graph node index, into |names|
  char *names[WM_SESSION_MAX_BACKENDS * 2];  // the distinct backends (owned)
  size_t n_names;
  char *source;      // "FILE, LABEL"
  uint32_t threads;  // the profiled configuration's thread count
} node_times_t;

static void node_times_deinit(node_times_t *t) {
  free(t->seconds);
  free(t->backends);
  for (size_t i = 0; i < t->n_names; i++) {
    free(t->names[i]);
  }
  free(t->source);
  memset(t, 0, sizeof(*t));
}

// The owned copy of backend name |name| in |t| (NULL: out of room).
static const char *times_name(node_times_t *t, const char *name) {
  for (size_t i = 0; i < t->n_names; i++) {
    if (strcmp(t->names[i], name) == 0) {
      return t->names[i];
    }
  }
  if (t->n_names == sizeof(t->names) / sizeof(t->names[0])) {
    return NULL;
  }
  t->names[t->n_names] = wm_strdup(name);
  return t->names[t->n_names] ? t->names[t->n_names++] : NULL;
}

// Per-node times (s, by graph node index) and the backend each ran on,
// from the first profiled configuration of the baseline |path|.
static wm_status_t load_times(const char *path, const wm_graph_t *g,
                              node_times_t *out) {
  memset(out, 0, sizeof(*out));
  wm_baseline_t *b = NULL;
  WM_RETURN_IF_ERROR(wm_baseline_load(path, &b));
  const wm_bench_config_t *cfg = NULL;
  for (size_t c = 0; c < b->n_configs && !cfg; c++) {
    if (b->configs[c].n_ops > 0) {
      cfg = &b->configs[c];
    }
  }
  wm_status_t s = NULL;
  out->seconds = wm_calloc(g->node_count + 1, sizeof(double));
  out->backends = wm_calloc(g->node_count + 1, sizeof(char *));
  if (!cfg) {
    s = WM_ERROR(INVALID_ARGUMENT,
                 "--times %s: the baseline has no per-node profile (measure "
                 "it with wmap bench, without --no-profile)",
                 path);
  } else if (!out->seconds || !out->backends) {
    s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_strmap_t by_name;
  wm_strmap_init(&by_name);
  for (size_t i = 0; !s && i < cfg->n_ops; i++) {
    s = wm_strmap_put(&by_name, cfg->ops[i].node, (int64_t)i);
  }
  for (size_t i = 0; !s && i < g->node_count; i++) {
    char label[64];
    const char *name = wm_node_label(g, i, label, sizeof(label));
    int64_t k;
    if (!wm_strmap_get(&by_name, name, &k)) {
      s = WM_ERROR(INVALID_ARGUMENT,
                   "--times %s: the profile of %s has no node \"%s\"; was it "
                   "measured on this model?",
                   path, cfg->label, name);
      break;
    }
    out->seconds[i] = cfg->ops[k].mean_ns * 1e-9;
    const char *be = cfg->ops[k].backend;
    if (be && *be) {
      out->backends[i] = times_name(out, be);
    }
  }
  wm_strmap_deinit(&by_name);
  if (!s) {
    out->threads = cfg->threads;
    out->source = wm_cli_path("%s, %s", path, cfg->label);
    s = out->source ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_baseline_destroy(b);
  if (s) {
    node_times_deinit(out);
  }
  return s;
}

static wm_status_t write_report(const map_args_t *a, const wm_map_t *m) {
  bool color =
      a->format == FMT_TEXT && wm_cli_use_color(a->color, a->output != NULL);
  wm_strbuf_t out;
  wm_strbuf_init(&out);
  switch (a->format) {
    case FMT_TEXT:
      wm_map_to_text(m, color, &out);
      break;
    case FMT_JSON:
      wm_map_to_json(m, &out);
      break;
    case FMT_MD:
      wm_map_to_markdown(m, &out);
      break;
    case FMT_HTML:
      wm_map_to_html(m, &out);
      break;
    case FMT_CSV:
      wm_map_to_csv(m, &out);
      break;
    case FMT_DOT:
      wm_map_to_dot(m, &out);
      break;
  }
  wm_status_t s = wm_cli_write_report(a->output, &out);
  wm_strbuf_deinit(&out);
  return s;
}

int wm_cli_map(int argc, char **argv) {
  map_args_t a = {0};
  int rc = parse_args(argc, argv, &a);
  if (rc != WM_EXIT_OK) {
    args_deinit(&a);
    return rc < 0 ? WM_EXIT_OK : rc;
  }
  wm_map_parallel_t par;
  wm_status_t s = NULL;
  if (a.parallel) {
    s = wm_map_parse_parallel(a.parallel, &par);
    if (s) {
      rc = wm_cli_usage_error("map", "--parallel: %s", wm_status_message(s));
      wm_status_free(s);
      args_deinit(&a);
      return rc;
    }
  }
  wm_map_dim_t dims[WM_CLI_MAX_DIMS];
  wm_peaks_t *peaks = NULL;
  wm_registry_t *reg = NULL;
  wm_graph_t *graph = NULL;
  wm_map_t *map = NULL;
  wm_backend_t *list[WM_SESSION_MAX_BACKENDS];
  wm_map_options_t mo = {
      .model = a.zoo ? a.zoo : a.model,
      .backends = list,
      .dims = dims,
      .n_dims = a.dims.n,
      .parallel = a.parallel ? &par : NULL,
  };
  wm_backend_t *fallback = NULL;
  s = wm_cli_model_load(a.zoo, a.model, &graph);
  if (!s) {
    // The map binds the named dims itself (and records them).
    s = wm_cli_dims_apply("map", graph, &a.dims, false, true);
  }
  for (size_t i = 0; !s && i < a.dims.n; i++) {
    dims[i].name = a.dims.names[i];
    dims[i].value = a.dims.values[i];
  }
  mo.n_dims = a.dims.n;
  if (!s) {
    s = get_peaks(&a, &peaks);
  }
  if (!s) {
    a.bo.quiet = true;
    s = wm_cli_registry_open(&a.bo, &reg);
  }
  if (!s) {
    s = wm_cli_backend_list(reg, a.backends, list, &mo.backend_count);
  }
  if (!s) {
    s = wm_registry_find(reg, "ref", &fallback);
    mo.fallback = fallback;
  }
  if (!s && a.critical) {
    bool found = false;
    for (size_t k = 0; k < mo.backend_count && !found; k++) {
      if (strcmp(wm_backend_name(list[k]), a.critical) == 0) {
        mo.critical_backend = k;
        found = true;
      }
    }
    if (!found) {
      s = WM_ERROR(INVALID_ARGUMENT,
                   "--critical %s: not among the mapped backends", a.critical);
    }
  }
  mo.peaks = peaks;
  node_times_t times = {0};
  if (!s && a.times_file) {
    s = load_times(a.times_file, graph, &times);
    mo.node_seconds = times.seconds;
    mo.node_backends = times.backends;
    mo.times_source = times.source;
  }
  // The roofs at the thread count the backends run at: --threads, else
  // the measured profile's.
  mo.threads =
      a.bo.threads_set ? (int32_t)a.bo.num_threads : (int32_t)times.threads;
  if (!s) {
    s = wm_map_build(graph, &mo, &map);
    if (s) {
      s = wm_status_annotate(s, "mapping \"%s\"", mo.model);
    }
  }
  if (!s) {
    s = write_report(&a, map);
  }
  if (!s && a.html) {
    wm_strbuf_t page;
    wm_strbuf_init(&page);
    wm_map_to_html(map, &page);
    s = wm_cli_write_report(a.html, &page);
    wm_strbuf_deinit(&page);
  }
  wm_map_destroy(map);
  node_times_deinit(&times);
  wm_graph_destroy(graph);
  wm_registry_destroy(reg);
  free(peaks);
  args_deinit(&a);
  return s ? wm_cli_fail(s) : WM_EXIT_OK;
}
