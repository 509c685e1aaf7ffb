// wmap bench: latency distributions of a model on configurations of
// backends and thread counts, measured in interleaved blocks.
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "comm/comm.h"
#include "ref.h"
#include "wmap/bench.h"
#include "wmap/onnx.h"
#include "wmap/session.h"

static const char bench_usage[] =
    "usage: wmap bench MODEL.onnx | --zoo NAME[:key=value,...] [options]\n"
    "\n"
    "Measures the latency of whole runs of a model. Each configuration (a\n"
    "backend list at a thread count) runs --blocks blocks; the blocks of all\n"
    "configurations are interleaved (A B A B ...) and each is a fresh\n"
    "process: open the backends, prepare, warm up, then time iterations for\n"
    "at least --min-time seconds and --min-iters iterations. Prints per\n"
    "configuration n, min, nearest-rank P50/P90/P95/P99/P99.9 (a percentile\n"
    "is marked unsupported below 64/662/6636 samples), max, mean, sd, CV,\n"
    "MAD, outliers (Tukey, counted, never dropped), throughput, GFLOP/s and\n"
    "strong-scaling efficiency, with warnings for CV > 10 % and a slow first\n"
    "block. The baseline JSON (wmap.baseline/1, docs/baseline-format.md)\n"
    "records every sample and the environment; `wmap compare` reads it.\n"
    "\n"
    "Options:\n"
    "  --zoo SPEC           benchmark a built-in model (see `wmap zoo list`)\n"
    "  --backends LIST      one configuration's backends, in order; repeat\n"
    "                       the option to measure several side by side\n"
    "                       (default: every loaded backend, ref last; nodes\n"
    "                       no listed backend takes run on ref)\n"
    "  --threads LIST       thread counts, e.g. 1,2 (0 = all cores; default\n"
    "                       all cores)\n"
    "  --blocks N           blocks per configuration (default 10)\n"
    "  --min-time S         timed seconds per block (default 1)\n"
    "  --min-iters N        timed iterations per block at least (default 10)\n"
    "  --no-profile         skip the per-node profile (by default every node\n"
    "                       is timed in extra runs after each configuration's\n"
    "                       last block, not among the samples, against "
    "t_roof)\n"
    "  --parallel tp=N|dp=N|pp=N\n"
    "                       the model split over N ranks (threads, or the\n"
    "                       processes of mpirun -np N) against the whole\n"
    "                       model on 1 rank, both with --threads threads a\n"
    "                       rank (default: the cores over N): strong-scaling\n"
    "                       speedup and efficiency, and each collective's\n"
    "                       calls and bytes per run beside the map's (blocks\n"
    "                       run in this process; no profile)\n"
    "  --inputs DIR         inputs from a test_data_set folder (default:\n"
    "                       deterministic generated "
    "inputs)\n" WM_CLI_DIM_OPTIONS_USAGE
    "  --peaks FILE         peaks for the profile's roofline times at each\n"
    "                       configuration's thread count; unreadable: an\n"
    "                       error (default: `wmap probe`'s cache if any)\n"
    "  -o, --output FILE    write the baseline JSON to FILE\n"
    "  --html FILE          write the HTML report to FILE\n"
    "  --format FORMAT      stdout: text (default) or json\n"
    "  --color WHEN         auto (default: on a terminal), always, never\n"
    "  --backend-path DIR   also look for backends in DIR "
    "(repeatable)\n" WM_CLI_PASS_OPTIONS_USAGE WM_CLI_IN_PLACE_USAGE
        WM_CLI_IMPL_USAGE WM_CLI_LIMIT_OPTIONS_USAGE
    "  -h, --help           show this help\n";

enum { MAX_LISTS = 16, MAX_THREADS = 16 };

typedef struct bench_args {
  const char *model;
  const char *zoo;
  const char *lists[MAX_LISTS];
  size_t n_lists;
  uint32_t threads[MAX_THREADS];
  size_t n_threads;
  int32_t blocks;
  double min_time;
  int32_t min_iters;
  bool profile;
  const char *inputs_dir;
  const char *peaks_file;
  const char *output;
  const char *html;
  bool json;
  int color;
  wm_cli_dims_t dims;
  wm_cli_backend_options_t bo;
  const char *parallel;         // --parallel SPEC, or NULL
  const char *passes;           // --passes / --no-passes, or NULL: all
  bool no_in_place;             // --no-in-place
  wm_kernels_t kernels;         // --impl
  int64_t max_iterations;       // --max-iterations (0: the default)
  int64_t max_sequence_length;  // --max-sequence-length (0: the default)
} bench_args_t;

static int parse_threads_list(const char *text, bench_args_t *a) {
  const char *p = text;
  a->n_threads = 0;
  while (*p) {
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || errno || v < 0 || v > 4096 || (*end && *end != ',') ||
        a->n_threads == MAX_THREADS) {
      return wm_cli_usage_error(
          "bench",
          "--threads wants up to %d counts from 0 to 4096 like 1,2, got "
          "\"%s\"",
          MAX_THREADS, text);
    }
    for (size_t i = 0; i < a->n_threads; i++) {
      if (a->threads[i] == (uint32_t)v) {
        return wm_cli_usage_error("bench", "--threads lists %ld twice", v);
      }
    }
    a->threads[a->n_threads++] = (uint32_t)v;
    p = *end ? end + 1 : end;
  }
  if (a->n_threads == 0) {
    return wm_cli_usage_error("bench", "--threads wants counts like 1,2");
  }
  return WM_EXIT_OK;
}

static int parse_args(int argc, char **argv, bench_args_t *a) {
  static const struct option long_opts[] = {
      {"zoo", required_argument, NULL, 'z'},
      {"backends", required_argument, NULL, 'b'},
      {"backend", required_argument, NULL, 'b'},
      {"threads", required_argument, NULL, 't'},
      {"blocks", required_argument, NULL, 'k'},
      {"min-time", required_argument, NULL, 'm'},
      {"min-iters", required_argument, NULL, 'i'},
      {"profile", no_argument, NULL, 'p'},
      {"no-profile", no_argument, NULL, 'n'},
      {"inputs", required_argument, NULL, 'I'},
      {"dim", required_argument, NULL, 'd'},
      {"shape", required_argument, NULL, 'D'},
      {"peaks", required_argument, NULL, 'K'},
      {"output", required_argument, NULL, 'o'},
      {"html", required_argument, NULL, 'H'},
      {"format", required_argument, NULL, 'f'},
      {"color", required_argument, NULL, 'C'},
      {"backend-path", required_argument, NULL, 'P'},
      {"passes", required_argument, NULL, 'Q'},
      {"no-passes", no_argument, NULL, 'N'},
      {"no-in-place", no_argument, NULL, 'W'},
      {"impl", required_argument, NULL, 'G'},
      {"max-iterations", required_argument, NULL, 'X'},
      {"max-sequence-length", required_argument, NULL, 'E'},
      {"parallel", required_argument, NULL, 'L'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  a->blocks = 10;
  a->profile = true;
  a->min_time = 1.0;
  a->min_iters = 10;
  a->color = -1;
  int c, rc = WM_EXIT_OK;
  optind = 1;
  while (rc == WM_EXIT_OK &&
         (c = getopt_long(argc, argv, "ho:", long_opts, NULL)) != -1) {
    switch (c) {
      case 'z':
        a->zoo = optarg;
        break;
      case 'b':
        if (a->n_lists == MAX_LISTS) {
          rc = wm_cli_usage_error("bench", "at most %d --backends options",
                                  MAX_LISTS);
        } else {
          rc = wm_cli_backends_option("bench", "backends", optarg);
          a->lists[a->n_lists++] = optarg;
        }
        break;
      case 't':
        rc = parse_threads_list(optarg, a);
        break;
      case 'k':
        rc = wm_cli_count_option("bench", "blocks", optarg, 1, 100000,
                                 &a->blocks);
        break;
      case 'm':
        rc = wm_cli_number_option("bench", "min-time", optarg, 0.001, 3600,
                                  &a->min_time);
        break;
      case 'i':
        rc = wm_cli_count_option("bench", "min-iters", optarg, 1, 1000000,
                                 &a->min_iters);
        break;
      case 'p':
        a->profile = true;
        break;
      case 'n':
        a->profile = false;
        break;
      case 'I':
        a->inputs_dir = optarg;
        break;
      case 'd':
        rc = wm_cli_dim_option("bench", optarg, &a->dims);
        break;
      case 'D':
        rc = wm_cli_shape_option("bench", optarg, &a->dims);
        break;
      case 'K':
        a->peaks_file = optarg;
        break;
      case 'o':
        a->output = optarg;
        break;
      case 'H':
        a->html = optarg;
        break;
      case 'f':
        if (strcmp(optarg, "json") == 0 || strcmp(optarg, "text") == 0) {
          a->json = strcmp(optarg, "json") == 0;
        } else {
          rc = wm_cli_usage_error(
              "bench", "--format wants text or json, got \"%s\"", optarg);
        }
        break;
      case 'C':
        rc = wm_cli_color_option("bench", optarg, &a->color);
        break;
      case 'P':
        rc = wm_cli_backend_option("bench", "backend-path", optarg, &a->bo);
        break;
      case 'Q':
        rc = wm_cli_passes_option("bench", optarg, &a->passes);
        break;
      case 'N':
        rc = wm_cli_passes_option("bench", NULL, &a->passes);
        break;
      case 'L':
        a->parallel = optarg;
        break;
      case 'W':
        a->no_in_place = true;
        break;
      case 'G':
        rc = wm_cli_impl_option("bench", optarg, &a->kernels);
        break;
      case 'X':
        rc = wm_cli_limit_option("bench", "max-iterations", optarg,
                                 &a->max_iterations);
        break;
      case 'E':
        rc = wm_cli_limit_option("bench", "max-sequence-length", optarg,
                                 &a->max_sequence_length);
        break;
      case 'h':
        fputs(bench_usage, stdout);
        return -1;
      default:
        rc = wm_cli_option_error("bench", "ho:", argv);
    }
  }
  if (rc != WM_EXIT_OK) {
    return rc;
  }
  if (a->n_threads == 0) {
    a->threads[a->n_threads++] = 0;
  }
  return wm_cli_model_operand("bench", a->zoo, argc, argv, optind, &a->model);
}

// Opens a configuration's backends in a block's process.
static wm_status_t open_config(void *ctx, const char *list, uint32_t threads,
                               wm_registry_t **out_reg, wm_backend_t **out,
                               size_t *out_count, wm_backend_t **fallback) {
  wm_cli_backend_options_t bo = *(const wm_cli_backend_options_t *)ctx;
  bo.num_threads = threads;
  bo.threads_set = true;
  bo.quiet = true;
  WM_RETURN_IF_ERROR(wm_cli_registry_open(&bo, out_reg));
  wm_status_t s = wm_cli_backend_list(*out_reg, list, out, out_count);
  if (!s) {
    s = wm_registry_find(*out_reg, "ref", fallback);
  }
  if (s) {
    wm_registry_destroy(*out_reg);
    *out_reg = NULL;
  }
  return s;
}

// Writes the default backend list ("every loaded backend, ref last").
static wm_status_t list_backends(void *ctx, wm_strbuf_t *out) {
  wm_cli_backend_options_t quiet = *(const wm_cli_backend_options_t *)ctx;
  quiet.quiet = true;
  wm_registry_t *reg = NULL;
  wm_backend_t *list[WM_SESSION_MAX_BACKENDS];
  size_t n = 0;
  wm_status_t s = wm_cli_registry_open(&quiet, &reg);
  if (!s) {
    s = wm_cli_backend_list(reg, NULL, list, &n);
  }
  for (size_t k = 0; !s && k < n; k++) {
    wm_strbuf_printf(out, "%s%s", k ? "," : "", wm_backend_name(list[k]));
  }
  wm_registry_destroy(reg);
  return s;
}

// The default backend list, found in a child process so that this one
// never loads a plugin (blocks fork from it, and a plugin's threads do not
// survive a fork).
static wm_status_t default_list(const wm_cli_backend_options_t *bo,
                                char **out) {
  int status;
  WM_RETURN_IF_ERROR(
      wm_bench_in_child(list_backends, (void *)bo, out, &status));
  if (strncmp(*out, "error ", 6) == 0 || !**out) {
    const char *why = **out ? *out + 6 : "none found";
    wm_status_t s = WM_ERROR(UNAVAILABLE, "no backend could be opened: %.*s",
                             (int)strcspn(why, "\n"), why);
    free(*out);
    *out = NULL;
    return s;
  }
  return NULL;
}

// SHA-256 of the model: the file's bytes, or the zoo model's ONNX bytes.
static void sha_sink(void *ctx, const uint8_t *data, size_t len) {
  wm_sha256_update(ctx, data, len);
}

// The SHA-256 of the model file (of the exported model for a zoo one),
// read or serialized in pieces: a large model is not held twice.
static wm_status_t model_digest(const bench_args_t *a, const wm_graph_t *g,
                                char hex[65]) {
  wm_sha256_t c;
  wm_sha256_init(&c);
  if (a->zoo) {
    WM_RETURN_IF_ERROR(wm_onnx_save_stream(g, sha_sink, &c));
    wm_sha256_final(&c, hex);
    return NULL;
  }
  FILE *f = fopen(a->model, "rb");
  if (!f) {
    return WM_ERROR(NOT_FOUND, "cannot open \"%s\": %s", a->model,
                    strerror(errno));
  }
  uint8_t chunk[1 << 16];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
    wm_sha256_update(&c, chunk, n);
  }
  bool failed = ferror(f) != 0;
  fclose(f);
  if (failed) {
    return WM_ERROR(DATA_LOSS, "error reading \"%s\"", a->model);
  }
  wm_sha256_final(&c, hex);
  return NULL;
}

// The model's FLOPs from its map on the built-in ref backend (0 when the
// map cannot be made); no plugin is loaded here.
static double model_flops(const bench_args_t *a, wm_graph_t *g) {
  wm_backend_t *ref = NULL;
  wm_map_t *map = NULL;
  wm_status_t s = wm_backend_create(wm_ref_plugin_query, "built-in", &ref);
  if (!s) {
    wm_map_options_t mo = {.model = a->zoo ? a->zoo : a->model,
                           .backends = &ref,
                           .backend_count = 1,
                           .fallback = ref};
    s = wm_map_build(g, &mo, &map);
  }
  double flops = s || map->totals.unmapped ? 0.0 : map->totals.flops;
  wm_status_free(s);
  wm_map_destroy(map);
  wm_backend_destroy(ref);
  return flops;
}

static void progress(void *ctx, size_t done, size_t total, const char *label) {
  (void)ctx;
  int width = 30, filled = (int)(width * done / (total ? total : 1));
  fprintf(stderr, "\r[%.*s%*s] %zu/%zu blocks  %-24.24s", filled,
          "##############################", width - filled, "", done, total,
          label);
  if (done == total) {
    fputc('\n', stderr);
  }
  fflush(stderr);
}

// The probe's peaks as `wmap probe` gets them (a cache measured with other
// software or refused as inconsistent is measured again, with a warning),
// as wmap.peaks/1 JSON: run in a child, so this process loads no plugin.
static wm_status_t peaks_in_child(void *ctx, wm_strbuf_t *out) {
  wm_peaks_t *p = wm_calloc(1, sizeof(*p));
  if (!p) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_peaks_options_t po = {0};
  wm_status_t s = wm_cli_peaks_get(ctx, &po, p);
  if (!s) {
    wm_peaks_to_json(p, out);
  }
  free(p);
  return s;
}

// Peaks for the profile into *out: --peaks FILE (an error when it cannot
// be read: the user asked for it), else the probe's cache if present
// (checked against this software and measured again when stale; NULL with
// a warning when that fails).
static wm_status_t load_peaks(const bench_args_t *a, wm_peaks_t **out) {
  *out = NULL;
  wm_peaks_t *p = wm_calloc(1, sizeof(*p));
  if (!p) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_status_t s = NULL;
  if (a->peaks_file) {
    s = wm_peaks_load(a->peaks_file, p);
    if (s) {
      free(p);
      return s;
    }
  } else {
    char *path = NULL, *text = NULL;
    bool cached = false;
    int status = 0;
    s = wm_cli_peaks_cache(&path, &cached);
    free(path);
    if (!s && !cached) {
      free(p);
      return NULL;
    }
    if (!s) {
      s = wm_bench_in_child(peaks_in_child, (void *)&a->bo, &text, &status);
    }
    if (!s && strncmp(text, "error ", 6) == 0) {
      s = WM_ERROR(UNAVAILABLE, "peaks: %.*s", (int)strcspn(text + 6, "\n"),
                   text + 6);
    } else if (!s) {
      s = wm_peaks_from_json(text, strlen(text), p);
    }
    free(text);
  }
  if (s) {
    fprintf(stderr, "wmap: warning: %s; no roofline times\n",
            wm_status_message(s));
    wm_status_free(s);
    free(p);
    return NULL;
  }
  *out = p;
  return NULL;
}

static wm_status_t write_outputs(const bench_args_t *a,
                                 const wm_baseline_t *b) {
  wm_strbuf_t buf;
  wm_strbuf_init(&buf);
  wm_status_t s = NULL;
  if (a->output) {
    wm_baseline_to_json(b, &buf);
    s = wm_cli_write_report(a->output, &buf);
  }
  if (!s && a->html) {
    wm_strbuf_deinit(&buf);
    wm_strbuf_init(&buf);
    wm_baseline_to_html(b, &buf);
    s = wm_cli_write_report(a->html, &buf);
  }
  if (!s) {
    wm_strbuf_deinit(&buf);
    wm_strbuf_init(&buf);
    if (a->json) {
      wm_baseline_to_json(b, &buf);
    } else {
      wm_baseline_to_text(b, wm_cli_use_color(a->color, false), &buf);
    }
    s = wm_cli_write_report(NULL, &buf);
  }
  wm_strbuf_deinit(&buf);
  return s;
}

// Adds a --shape binding for each tensor of |ds| whose input has none.
static wm_status_t shapes_of_inputs(const wm_cli_dataset_t *ds,
                                    wm_cli_dims_t *dims) {
  for (size_t i = 0; i < ds->n_inputs; i++) {
    const wm_item_t *it = &ds->inputs[i];
    bool given = false;
    for (size_t k = 0; k < dims->n_shapes && !given; k++) {
      given = strcmp(dims->shape_inputs[k], ds->input_names[i]) == 0;
    }
    if (given || it->kind != WM_TYPE_TENSOR) {
      continue;
    }
    if (dims->n_shapes == WM_CLI_MAX_DIMS) {
      return WM_ERROR(INVALID_ARGUMENT, "more than %d inputs to bind",
                      WM_CLI_MAX_DIMS);
    }
    dims->shape_inputs[dims->n_shapes] = wm_strdup(ds->input_names[i]);
    if (!dims->shape_inputs[dims->n_shapes]) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
    dims->shapes[dims->n_shapes++] = it->tensor->shape;
  }
  return NULL;
}

// bench --parallel: the split against 1 rank, in this process.
static wm_status_t bench_parallel(bench_args_t *a, wm_graph_t *graph,
                                  const wm_cli_dataset_t *given,
                                  const char *sha, wm_baseline_t **out) {
  wm_map_parallel_t spec = {0};
  WM_RETURN_IF_ERROR(wm_map_parse_parallel(a->parallel, &spec));
  int32_t ranks = spec.tp > spec.dp ? spec.tp : spec.dp;
  ranks = spec.pp > ranks ? spec.pp : ranks;
  if (ranks < 2) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "--parallel \"%s\" splits nothing (want tp=N, dp=N or "
                    "pp=N, N >= 2)",
                    a->parallel);
  }
  if (a->n_lists > 1 || a->n_threads > 1) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "--parallel measures one backend list at one --threads "
                    "count a rank");
  }
  wm_cli_backend_options_t bo = a->bo;
  bo.quiet = true;
  int32_t per = wm_cpu_count() / ranks;
  // --threads is per rank; 0 or none: the cores shared among the ranks.
  bo.num_threads = a->n_threads && a->threads[0]
                       ? a->threads[0]
                       : (uint32_t)(per > 1 ? per : 1);
  bo.threads_set = true;
  wm_registry_t *reg = NULL;
  wm_backend_t *list[WM_SESSION_MAX_BACKENDS];
  wm_session_options_t so = {.backends = list,
                             .passes = a->passes,
                             .no_in_place = a->no_in_place,
                             .kernels = a->kernels,
                             .max_iterations = a->max_iterations,
                             .max_sequence_length = a->max_sequence_length};
  wm_cli_dataset_t gen = {0};
  const wm_cli_dataset_t *ds = given;
  wm_status_t s = wm_cli_registry_open(&bo, &reg);
  if (!s) {
    s = wm_cli_backend_list(reg, a->n_lists ? a->lists[0] : NULL, list,
                            &so.backend_count);
  }
  if (!s) {
    s = wm_registry_find(reg, "ref", &so.fallback);
  }
  if (!s && !a->inputs_dir) {
    s = wm_cli_made_inputs(graph, &gen);
    ds = &gen;
  }
  wm_strbuf_t rep;
  wm_strbuf_init(&rep);
  if (!s) {
    wm_cli_parallel_bench_t pb = {
        .run = {.spec = spec,
                .graph = graph,
                .session = &so,
                .input_names = (const char *const *)ds->input_names,
                .inputs = ds->inputs,
                .n_inputs = ds->n_inputs,
                .steps = 1},
        .model_name = a->zoo ? a->zoo : a->model,
        .model_sha256 = sha,
        .blocks = a->blocks,
        .min_time = a->min_time,
        .min_iters = a->min_iters,
        .rank_threads = bo.num_threads,
    };
    s = wm_cli_parallel_bench(&pb, out, &rep);
  }
  if (!s && rep.len) {
    fputs(wm_strbuf_str(&rep), stderr);
  }
  wm_strbuf_deinit(&rep);
  wm_cli_dataset_deinit(&gen);
  wm_registry_destroy(reg);
  return s;
}

int wm_cli_bench(int argc, char **argv) {
  bench_args_t a = {0};
  int rc = parse_args(argc, argv, &a);
  if (rc != WM_EXIT_OK) {
    wm_cli_dims_deinit(&a.dims);
    wm_cli_backend_options_deinit(&a.bo);
    return rc < 0 ? WM_EXIT_OK : rc;
  }
  wm_graph_t *graph = NULL;
  wm_baseline_t *baseline = NULL;
  wm_cli_dataset_t ds = {0};
  char *deflist = NULL;
  char sha[65] = "";
  wm_bench_kv_t dims[WM_CLI_MAX_DIMS];
  char values[WM_CLI_MAX_DIMS][24];
  wm_status_t s = wm_cli_model_load(a.zoo, a.model, &graph);
  if (!s && a.inputs_dir) {
    s = wm_cli_dataset_load(a.inputs_dir, graph, &ds);
  }
  if (!s && a.inputs_dir) {
    s = shapes_of_inputs(&ds, &a.dims);
  }
  if (!s) {
    // The inputs' shapes bind the dims (the map's FLOPs count them);
    // dims nothing binds are 1.
    s = wm_cli_dims_apply("bench", graph, &a.dims, true, true);
  }
  for (size_t i = 0; !s && i < a.dims.n; i++) {
    snprintf(values[i], sizeof(values[i]), "%lld", (long long)a.dims.values[i]);
    dims[i].key = a.dims.names[i];
    dims[i].value = values[i];
  }
  if (!s) {
    s = model_digest(&a, graph, sha);
  }
  const wm_tensor_t **ins = NULL;
  if (!s && a.inputs_dir) {
    s = wm_cli_dataset_tensors(&ds, &ins);
  }
  if (!s && a.n_lists == 0) {
    s = default_list(&a.bo, &deflist);
    a.lists[a.n_lists++] = deflist;
  }
  wm_peaks_t *peaks = NULL;
  if (!s && (a.peaks_file || (a.profile && !a.parallel))) {
    s = load_peaks(&a, &peaks);  // a --peaks FILE is read even if unused
  }
  double flops = s || a.parallel ? 0 : model_flops(&a, graph);
  wm_bench_options_t o = {
      .graph = graph,
      .model_name = a.zoo ? a.zoo : a.model,
      .model_sha256 = sha,
      .dims = dims,
      .n_dims = a.dims.n,
      .lists = a.lists,
      .n_lists = a.n_lists,
      .threads = a.threads,
      .n_threads = a.n_threads,
      .blocks = a.blocks,
      .min_time_s = a.min_time,
      .min_iters = a.min_iters,
      .profile = a.profile,
      .passes = a.passes,
      .no_in_place = a.no_in_place,
      .kernels = a.kernels,
      .max_iterations = a.max_iterations,
      .max_sequence_length = a.max_sequence_length,
      .input_names = a.inputs_dir ? (const char *const *)ds.input_names : NULL,
      .inputs = ins,
      .n_inputs = ds.n_inputs,
      .peaks = peaks,
      .model_flops = flops,
      .open = open_config,
      .open_ctx = &a.bo,
      .progress = isatty(STDERR_FILENO) ? progress : NULL,
  };
  if (!s && a.parallel) {
    s = bench_parallel(&a, graph, &ds, sha, &baseline);
  } else if (!s) {
    s = wm_bench_run(&o, &baseline);
  }
  if (!s && baseline) {
    s = write_outputs(&a, baseline);
  }
  wm_baseline_destroy(baseline);
  free(peaks);
  free(deflist);
  free(ins);
  wm_cli_dataset_deinit(&ds);
  wm_graph_destroy(graph);
  wm_cli_dims_deinit(&a.dims);
  wm_cli_backend_options_deinit(&a.bo);
  if (a.parallel && wm_comm_mpi_launched()) {
    if (s) {
      fprintf(stderr, "wmap: %s\n", wm_status_message(s));
      wm_comm_mpi_abort(WM_EXIT_FAILED);
    }
    wm_comm_mpi_finalize();
  }
  return s ? wm_cli_fail(s) : WM_EXIT_OK;
}
