// wmap run: load a model, place it on backends, run it once, print or save
// the outputs and, on request, the placement report.
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "comm/comm.h"
#include "wmap/bench.h"
#include "wmap/onnx.h"
#include "wmap/session.h"

static const char run_usage[] =
    "usage: wmap run MODEL | --zoo NAME[:key=value,...] [options]\n"
    "       mpirun -np N wmap run ... --parallel tp=N\n"
    "\n"
    "Runs the ONNX model MODEL once and prints each output's type, shape\n"
    "and first values. Without --inputs it runs on generated inputs (as\n"
    "wmap bench makes them) of the shapes --shape and --dim give, every\n"
    "dim they leave unbound being 1.\n"
    "\n"
    "Options:\n"
    "  --zoo SPEC           run a built-in model (see `wmap zoo list`)\n"
    "  --parallel tp=N      split the model over N ranks, Megatron-style\n"
    "                       (column- and row-parallel MatMuls, an AllReduce\n"
    "                       after each row-parallel one, split outputs\n"
    "                       gathered): N threads, or the N processes of an\n"
    "                       MPI job started by mpirun; prints each\n"
    "                       collective's calls and bytes per rank beside the\n"
    "                       map's prediction\n"
    "  --parallel dp=N      split the batch over N ranks instead: outputs\n"
    "                       gathered, or, for a training step (mlp-train),\n"
    "                       its gradients averaged in one AllReduce\n"
    "  --parallel pp=N[,microbatches=M]\n"
    "                       pipeline stages: the map's N stages on N ranks,\n"
    "                       the batch in M micro-batches (default N), values\n"
    "                       crossing stages sent by Send/Recv; the last rank\n"
    "                       holds the outputs\n"
    "  --steps N            run N times, each output NAME.next feeding input\n"
    "                       NAME of the next run (training steps); prints\n"
    "                       the last run's outputs (default 1)\n"
    "  --inputs DIR         read inputs from a test_data_set folder\n"
    "                       (input_K.pb: tensors, sequences, "
    "optionals)\n" WM_CLI_DIM_OPTIONS_USAGE
    "  --backends LIST      backends in order of preference, e.g. cpu,ref\n"
    "                       (default: every loaded backend, ref last);\n"
    "                       --backend NAME is the same with one name\n"
    "  --strict             fail when a node has no place on LIST instead of\n"
    "                       running it on ref\n"
    "  --placement[=FILE]   print where each node runs and why (or write it\n"
    "                       to FILE as JSON)\n"
    "  --save DIR           write the outputs as DIR/output_K.pb\n"
    "  --values N           values printed per output (default "
    "8)\n" WM_CLI_PASS_OPTIONS_USAGE WM_CLI_IN_PLACE_USAGE WM_CLI_IMPL_USAGE
        WM_CLI_LIMIT_OPTIONS_USAGE WM_CLI_BACKEND_OPTIONS_USAGE
    "  -h, --help           show this help\n";

static void print_tensor(const char *name, const wm_tensor_t *t, size_t n) {
  char shape[128];
  printf("%s: %s %s", name, wm_dtype_name(t->dtype),
         wm_shape_format(&t->shape, shape, sizeof(shape)));
  size_t shown = t->count < n ? t->count : n;
  printf(" =");
  for (size_t i = 0; i < shown; i++) {
    if (t->dtype == WM_DTYPE_STRING) {
      printf(" \"%s\"", ((char *const *)t->data)[i]);
    } else if (wm_dtype_is_float(t->dtype)) {
      printf(" %.6g", wm_tensor_get_f64(t, i));
    } else if (t->dtype == WM_DTYPE_UINT64) {
      printf(" %llu", (unsigned long long)wm_tensor_get_i64(t, i));
    } else {
      printf(" %lld", (long long)wm_tensor_get_i64(t, i));
    }
  }
  printf("%s\n", t->count > shown ? " ..." : "");
}

// Prints an item: a tensor on one line, a sequence or optional as a
// header line and its elements indented below it.
static void print_item(const char *name, const wm_item_t *item, size_t n,
                       int depth) {
  if (item->kind == WM_TYPE_TENSOR) {
    printf("%*s", 2 * depth, "");
    print_tensor(name, item->tensor, n);
    return;
  }
  char what[96];
  printf("%*s%s: %s\n", 2 * depth, "", name,
         wm_item_format(item, what, sizeof(what)));
  for (size_t i = 0; i < item->count; i++) {
    char label[32];
    snprintf(label, sizeof(label), "[%zu]", i);
    print_item(label, &item->elems[i], n, depth + 1);
  }
}

// Prints or writes the placement report.
static wm_status_t report_placement(const wm_session_t *session,
                                    const char *file) {
  wm_strbuf_t buf;
  wm_strbuf_init(&buf);
  wm_status_t s = NULL;
  if (file) {
    wm_session_placement_json(session, &buf);
    s = wm_file_write(file, wm_strbuf_str(&buf), buf.len);
  } else {
    wm_session_placement_text(session, &buf);
    wm_session_stats_t st = wm_session_stats(session);
    wm_strbuf_printf(&buf,
                     "%zu tensor%s copied between backends (%llu "
                     "bytes)\n",
                     st.boundary_copies, st.boundary_copies == 1 ? "" : "s",
                     (unsigned long long)st.bytes_copied);
    fputs(wm_strbuf_str(&buf), stdout);
  }
  wm_strbuf_deinit(&buf);
  return s;
}

wm_status_t wm_cli_made_inputs(const wm_graph_t *graph, wm_cli_dataset_t *ds) {
  char **names = NULL;
  wm_tensor_t **tensors = NULL;
  size_t n = 0;
  wm_status_t s = wm_bench_make_inputs(graph, &names, &tensors, &n);
  if (!s) {
    ds->inputs = wm_calloc(n + 1, sizeof(wm_item_t));
    s = ds->inputs ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  if (s) {
    for (size_t i = 0; i < n; i++) {
      wm_tensor_destroy(tensors[i]);
      free(names[i]);
    }
    free(names);
    free(tensors);
    return s;
  }
  for (size_t i = 0; i < n; i++) {
    ds->inputs[i] = wm_item_tensor_take(tensors[i]);
  }
  ds->input_names = names;
  ds->n_inputs = n;
  free(tensors);
  return NULL;
}

wm_status_t wm_cli_generated_inputs(const char *cmd, wm_graph_t *graph,
                                    wm_cli_dims_t *dims, wm_cli_dataset_t *ds) {
  WM_RETURN_IF_ERROR(wm_cli_dims_apply(cmd, graph, dims, true, true));
  return wm_cli_made_inputs(graph, ds);
}

int wm_cli_run(int argc, char **argv) {
  static const struct option opts[] = {
      {"inputs", required_argument, NULL, 'i'},
      {"zoo", required_argument, NULL, 'Z'},
      {"parallel", required_argument, NULL, 'L'},
      {"steps", required_argument, NULL, 'n'},
      {"backends", required_argument, NULL, 'b'},
      {"backend", required_argument, NULL, 'b'},
      {"strict", no_argument, NULL, 'S'},
      {"placement", optional_argument, NULL, 'p'},
      {"save", required_argument, NULL, 's'},
      {"values", required_argument, NULL, 'v'},
      {"backend-path", required_argument, NULL, 'P'},
      {"threads", required_argument, NULL, 'T'},
      {"passes", required_argument, NULL, 'Q'},
      {"no-passes", no_argument, NULL, 'N'},
      {"no-in-place", no_argument, NULL, 'I'},
      {"impl", required_argument, NULL, 'K'},
      {"max-iterations", required_argument, NULL, 'M'},
      {"max-sequence-length", required_argument, NULL, 'E'},
      {"dim", required_argument, NULL, 'd'},
      {"shape", required_argument, NULL, 'z'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *inputs_dir = NULL, *backend_list = NULL, *save_dir = NULL;
  const char *placement_file = NULL, *passes = NULL, *zoo = NULL;
  const char *parallel = NULL;
  bool strict = false, placement = false, no_in_place = false;
  wm_kernels_t kernels = WM_KERNELS_AUTO;
  int64_t max_iterations = 0, max_sequence_length = 0;  // 0: the defaults
  long values = 8;
  int32_t steps = 1;
  wm_cli_backend_options_t bo = {.quiet = true};
  wm_cli_dims_t dims = {0};
  int rc = WM_EXIT_OK;
  optind = 1;
  int c;
  while (rc == WM_EXIT_OK &&
         (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case 'i':
        inputs_dir = optarg;
        break;
      case 'Z':
        zoo = optarg;
        break;
      case 'L':
        parallel = optarg;
        break;
      case 'n':
        rc = wm_cli_count_option("run", "steps", optarg, 1, 1000000, &steps);
        break;
      case 'b':
        backend_list = optarg;
        rc = wm_cli_backends_option("run", "backends", optarg);
        break;
      case 'S':
        strict = true;
        break;
      case 'p':
        placement = true;
        placement_file = optarg;
        break;
      case 's':
        save_dir = optarg;
        break;
      case 'v': {
        char *end;
        values = strtol(optarg, &end, 10);
        if (*end || values < 0) {
          rc = wm_cli_usage_error("run",
                                  "--values wants a count >= 0, got "
                                  "\"%s\"",
                                  optarg);
        }
        break;
      }
      case 'P':
        rc = wm_cli_backend_option("run", "backend-path", optarg, &bo);
        break;
      case 'T':
        rc = wm_cli_backend_option("run", "threads", optarg, &bo);
        break;
      case 'Q':
        rc = wm_cli_passes_option("run", optarg, &passes);
        break;
      case 'N':
        rc = wm_cli_passes_option("run", NULL, &passes);
        break;
      case 'I':
        no_in_place = true;
        break;
      case 'K':
        rc = wm_cli_impl_option("run", optarg, &kernels);
        break;
      case 'M':
        rc = wm_cli_limit_option("run", "max-iterations", optarg,
                                 &max_iterations);
        break;
      case 'E':
        rc = wm_cli_limit_option("run", "max-sequence-length", optarg,
                                 &max_sequence_length);
        break;
      case 'd':
        rc = wm_cli_dim_option("run", optarg, &dims);
        break;
      case 'z':
        rc = wm_cli_shape_option("run", optarg, &dims);
        break;
      case 'h':
        fputs(run_usage, stdout);
        wm_cli_dims_deinit(&dims);
        wm_cli_backend_options_deinit(&bo);
        return WM_EXIT_OK;
      default:
        rc = wm_cli_option_error("run", "h", argv);
    }
  }
  const char *model = NULL;
  if (rc == WM_EXIT_OK) {
    rc = wm_cli_model_operand("run", zoo, argc, argv, optind, &model);
  }
  wm_map_parallel_t par = {0};
  if (rc == WM_EXIT_OK && parallel) {
    wm_status_t ps = wm_map_parse_parallel(parallel, &par);
    if (ps) {
      rc = wm_cli_usage_error("run", "--parallel: %s", wm_status_message(ps));
      wm_status_free(ps);
    } else if (par.tp < 2 && par.dp < 2 && par.pp < 2) {
      rc = wm_cli_usage_error("run",
                              "--parallel \"%s\" splits nothing (want tp=N "
                              "with N >= 2)",
                              parallel);
    } else if (placement) {
      rc = wm_cli_usage_error("run",
                              "--placement describes one session; a "
                              "--parallel run has one per rank");
    }
  }
  if (rc != WM_EXIT_OK) {
    wm_cli_dims_deinit(&dims);
    wm_cli_backend_options_deinit(&bo);
    return rc;
  }
  if (parallel && !bo.threads_set && !getenv("WMAP_NUM_THREADS")) {
    // The ranks share the cores.
    int32_t ranks = par.tp > par.dp ? par.tp : par.dp;
    int32_t per = wm_cpu_count() / (ranks > 1 ? ranks : 1);
    bo.num_threads = (uint32_t)(per > 1 ? per : 1);
  }
  if (!model) {
    model = zoo;
  }
  wm_registry_t *reg = NULL;
  wm_graph_t *graph = NULL;
  wm_session_t *session = NULL;
  wm_cli_dataset_t ds = {0};
  wm_item_t *outs = NULL;
  wm_backend_t *list[WM_SESSION_MAX_BACKENDS];
  wm_session_options_t so = {
      .backends = list,
      .mode = strict ? WM_PLACEMENT_STRICT : WM_PLACEMENT_FALLBACK,
      .passes = passes,
      .release_weights = true,  // the graph serves this session only
      .no_in_place = no_in_place,
      .kernels = kernels,
      .max_iterations = max_iterations,
      .max_sequence_length = max_sequence_length,
  };
  wm_status_t s = wm_cli_registry_open(&bo, &reg);
  if (!s) {
    s = wm_cli_backend_list(reg, backend_list, list, &so.backend_count);
  }
  if (!s) {
    s = wm_registry_find(reg, "ref", &so.fallback);
  }
  if (!s) {
    s = wm_cli_model_load(zoo, zoo ? NULL : model, &graph);
  }
  if (!s && inputs_dir) {
    // The values give the shapes; --dim and --shape must agree with them.
    s = wm_cli_dims_apply("run", graph, &dims, true, false);
    if (!s) {
      s = wm_cli_dataset_load(inputs_dir, graph, &ds);
    }
  } else if (!s) {
    s = wm_cli_generated_inputs("run", graph, &dims, &ds);
  }
  wm_strbuf_t prep;
  wm_strbuf_init(&prep);
  if (!s && parallel) {
    wm_cli_parallel_run_t pr = {
        .spec = par,
        .graph = graph,
        .session = &so,
        .input_names = (const char *const *)ds.input_names,
        .inputs = ds.inputs,
        .n_inputs = ds.n_inputs,
        .steps = steps};
    s = wm_cli_parallel_run(&pr, &outs, &prep);
    if (s) {
      s = wm_status_annotate(s, "running \"%s\"", model);
    }
  }
  if (!s && !parallel) {
    s = wm_session_create_placed(graph, &so, &session);
    if (s) {
      s = wm_status_annotate(s, "preparing \"%s\"", model);
    }
  }
  if (!s && !parallel) {
    outs = wm_calloc(graph->output_count + 1, sizeof(*outs));
    s = outs ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (int32_t step = 0; !s && !parallel && step < steps; step++) {
    s = wm_session_run_items(session, (const char *const *)ds.input_names,
                             ds.inputs, ds.n_inputs, outs);
    if (s) {
      s = wm_status_annotate(s, "running \"%s\"", model);
    }
    if (!s && step + 1 < steps) {
      size_t fed = 0;
      s = wm_cli_feed_next(graph, outs, &ds, &fed);
      for (size_t i = 0; i < graph->output_count; i++) {
        wm_item_deinit(&outs[i]);
        memset(&outs[i], 0, sizeof(outs[i]));
      }
      if (!s && fed == 0) {
        s = WM_ERROR(INVALID_ARGUMENT,
                     "--steps %d: \"%s\" has no output NAME.next for an "
                     "input NAME, so every run would be the same",
                     steps, model);
      }
    }
  }
  if (!s && placement) {
    s = report_placement(session, placement_file);
  }
  if (!s && !placement && session) {
    // What generating kernels cost: compiling them with a cold cache.
    wm_session_stats_t st = wm_session_stats(session);
    if (st.generated_kernels) {
      fprintf(stderr, "wmap run: %zu generated kernel%s, built in %.1f ms\n",
              st.generated_kernels, st.generated_kernels == 1 ? "" : "s",
              st.generate_ms);
    }
  }
  if (!s && save_dir && outs) {
    mkdir(save_dir, 0777);
  }
  if (!s && prep.len) {
    fputs(wm_strbuf_str(&prep), stderr);
  }
  wm_strbuf_deinit(&prep);
  for (size_t i = 0; !s && outs && i < graph->output_count; i++) {
    const char *name = graph->values[graph->outputs[i]].name;
    print_item(name, &outs[i], (size_t)values, 0);
    if (save_dir) {
      char *path = wm_cli_path("%s/output_%zu.pb", save_dir, i);
      s = path ? wm_onnx_item_save(&outs[i], name, path)
               : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
      free(path);
    }
  }
  for (size_t i = 0; outs && i < graph->output_count; i++) {
    wm_item_deinit(&outs[i]);
  }
  free(outs);
  wm_session_destroy(session);
  wm_cli_dataset_deinit(&ds);
  wm_graph_destroy(graph);
  wm_registry_destroy(reg);
  wm_cli_dims_deinit(&dims);
  wm_cli_backend_options_deinit(&bo);
  if (parallel && wm_comm_mpi_launched()) {
    if (s) {
      fprintf(stderr, "wmap: %s\n", wm_status_message(s));
      wm_comm_mpi_abort(WM_EXIT_FAILED);
    }
    wm_comm_mpi_finalize();
  }
  return s ? wm_cli_fail(s) : WM_EXIT_OK;
}
