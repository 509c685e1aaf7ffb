// wmap run: load a model, run it on a backend, print or save the outputs.
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "wmap/onnx.h"
#include "wmap/session.h"

static const char run_usage[] =
    "usage: wmap run MODEL [options]\n"
    "\n"
    "Runs the ONNX model MODEL once and prints each output's type, shape\n"
    "and first values.\n"
    "\n"
    "Options:\n"
    "  --inputs DIR     read inputs from a test_data_set folder (input_K.pb)\n"
    "  --backend NAME   backend to run on (default: ref)\n"
    "  --save DIR       write the outputs as DIR/output_K.pb\n"
    "  --values N       values printed per output (default 8)\n"
    "  -h, --help       show this help\n";

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

int wm_cli_run(int argc, char **argv) {
  static const struct option opts[] = {
      {"inputs", required_argument, NULL, 'i'},
      {"backend", required_argument, NULL, 'b'},
      {"save", required_argument, NULL, 's'},
      {"values", required_argument, NULL, 'v'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *inputs_dir = NULL, *backend_name = "ref", *save_dir = NULL;
  long values = 8;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case 'i':
        inputs_dir = optarg;
        break;
      case 'b':
        backend_name = optarg;
        break;
      case 's':
        save_dir = optarg;
        break;
      case 'v': {
        char *end;
        values = strtol(optarg, &end, 10);
        if (*end || values < 0) {
          return wm_cli_usage_error("run",
                                    "--values wants a count >= 0, "
                                    "got \"%s\"",
                                    optarg);
        }
        break;
      }
      case 'h':
        fputs(run_usage, stdout);
        return WM_EXIT_OK;
      default:
        return wm_cli_usage_error("run", "unknown option");
    }
  }
  if (optind != argc - 1) {
    return wm_cli_usage_error("run", "want exactly one MODEL, got %d",
                              argc - optind);
  }
  const char *model = argv[optind];
  wm_graph_t *graph = NULL;
  wm_backend_t *backend = NULL;
  wm_session_t *session = NULL;
  wm_cli_dataset_t ds = {0};
  wm_tensor_t **outs = NULL;
  wm_status_t s = wm_cli_backend_open(backend_name, &backend);
  if (!s) {
    s = wm_onnx_load(model, &graph);
  }
  if (!s && inputs_dir) {
    s = wm_cli_dataset_load(inputs_dir, graph, &ds);
  }
  if (!s) {
    s = wm_session_create(graph, backend, &session);
    if (s) {
      s = wm_status_annotate(s, "preparing \"%s\"", model);
    }
  }
  if (!s) {
    outs = wm_calloc(graph->output_count + 1, sizeof(void *));
    s = outs ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  if (!s) {
    s = wm_session_run(session, (const char *const *)ds.input_names,
                       (const wm_tensor_t *const *)ds.inputs, ds.n_inputs,
                       outs);
    if (s) {
      s = wm_status_annotate(s, "running \"%s\"", model);
    }
  }
  if (!s && save_dir) {
    mkdir(save_dir, 0777);
  }
  for (size_t i = 0; !s && i < graph->output_count; i++) {
    const char *name = graph->values[graph->outputs[i]].name;
    print_tensor(name, outs[i], (size_t)values);
    if (save_dir) {
      char *path = wm_cli_path("%s/output_%zu.pb", save_dir, i);
      s = path ? wm_onnx_tensor_save(outs[i], name, path)
               : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
      free(path);
    }
  }
  for (size_t i = 0; outs && i < graph->output_count; i++) {
    wm_tensor_destroy(outs[i]);
  }
  free(outs);
  wm_session_destroy(session);
  wm_backend_destroy(backend);
  wm_cli_dataset_deinit(&ds);
  wm_graph_destroy(graph);
  return s ? wm_cli_fail(s) : WM_EXIT_OK;
}
