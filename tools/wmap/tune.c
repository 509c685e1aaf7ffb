// wmap tune: measures candidate schedules for the generated kernels of a
// model's plan on a backend and keeps the best in the tuning records that
// later runs use (wm_session_tune).
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "wmap/onnx.h"
#include "wmap/session.h"

static const char tune_usage[] =
    "usage: wmap tune MODEL.onnx [options]\n"
    "\n"
    "Plans MODEL with --impl generated on the backend, runs it once on\n"
    "generated inputs, then for each distinct generated kernel builds its\n"
    "candidate schedules (register tiles and blocks of the packed template,\n"
    "vector widths and unrolls of loop nests), times each on the plan's\n"
    "buffers (median of 5 rounds) and keeps the best, or the default unless\n"
    "another is 3 % faster, in the tuning records (tune.txt in the\n"
    "generator's cache folder, format wmap.tune/1), which plans made\n"
    "afterwards use: their placement names the schedule, marked (tuned).\n"
    "Tuning is opt-in; no other command tunes.\n"
    "\n"
    "Options:\n"
    "  --backend NAME       the backend whose kernels to tune (default cpu)\n"
    "  --budget S           stop starting kernels after S seconds (default\n"
    "                       60)\n"
    "  --dim NAME=VALUE     a symbolic input dim (repeatable)\n"
    "  --shape INPUT=DIMS   an input's shape, e.g. "
    "x=1,3,224,224\n" WM_CLI_PASS_OPTIONS_USAGE WM_CLI_LIMIT_OPTIONS_USAGE
        WM_CLI_BACKEND_OPTIONS_USAGE "  -h, --help           this help\n";

int wm_cli_tune(int argc, char **argv) {
  static const struct option opts[] = {
      {"backend", required_argument, NULL, 'b'},
      {"budget", required_argument, NULL, 'B'},
      {"backend-path", required_argument, NULL, 'P'},
      {"threads", required_argument, NULL, 'T'},
      {"passes", required_argument, NULL, 'Q'},
      {"no-passes", no_argument, NULL, 'N'},
      {"max-iterations", required_argument, NULL, 'M'},
      {"max-sequence-length", required_argument, NULL, 'E'},
      {"dim", required_argument, NULL, 'd'},
      {"shape", required_argument, NULL, 'z'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  const char *backend_name = "cpu", *passes = NULL;
  double budget = 60;
  int64_t so_limits[2] = {0, 0};  // --max-iterations, --max-sequence-length
  wm_cli_backend_options_t bo = {.quiet = true};
  wm_cli_dims_t dims = {0};
  int rc = WM_EXIT_OK;
  optind = 1;
  int c;
  while (rc == WM_EXIT_OK &&
         (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case 'b':
        backend_name = optarg;
        rc = wm_cli_backends_option("tune", "backend", optarg);
        break;
      case 'B': {
        char *end;
        budget = strtod(optarg, &end);
        if (*end || !(budget > 0)) {
          rc = wm_cli_usage_error("tune",
                                  "--budget wants seconds > 0, got "
                                  "\"%s\"",
                                  optarg);
        }
        break;
      }
      case 'P':
        rc = wm_cli_backend_option("tune", "backend-path", optarg, &bo);
        break;
      case 'T':
        rc = wm_cli_backend_option("tune", "threads", optarg, &bo);
        break;
      case 'Q':
        rc = wm_cli_passes_option("tune", optarg, &passes);
        break;
      case 'N':
        rc = wm_cli_passes_option("tune", NULL, &passes);
        break;
      case 'M':
        rc = wm_cli_limit_option("tune", "max-iterations", optarg,
                                 &so_limits[0]);
        break;
      case 'E':
        rc = wm_cli_limit_option("tune", "max-sequence-length", optarg,
                                 &so_limits[1]);
        break;
      case 'd':
        rc = wm_cli_dim_option("tune", optarg, &dims);
        break;
      case 'z':
        rc = wm_cli_shape_option("tune", optarg, &dims);
        break;
      case 'h':
        fputs(tune_usage, stdout);
        wm_cli_dims_deinit(&dims);
        wm_cli_backend_options_deinit(&bo);
        return WM_EXIT_OK;
      default:
        rc = wm_cli_option_error("tune", "h", argv);
    }
  }
  if (rc == WM_EXIT_OK && optind != argc - 1) {
    rc = wm_cli_usage_error("tune", "want exactly one MODEL, got %d",
                            argc - optind);
  }
  if (rc != WM_EXIT_OK) {
    wm_cli_dims_deinit(&dims);
    wm_cli_backend_options_deinit(&bo);
    return rc;
  }
  const char *model = argv[optind];
  wm_registry_t *reg = NULL;
  wm_graph_t *graph = NULL;
  wm_session_t *session = NULL;
  wm_cli_dataset_t ds = {0};
  wm_item_t *outs = NULL;
  wm_tune_result_t *res = NULL;
  size_t n = 0;
  wm_backend_t *list[WM_SESSION_MAX_BACKENDS];
  wm_session_options_t so = {.backends = list,
                             .mode = WM_PLACEMENT_FALLBACK,
                             .passes = passes,
                             .kernels = WM_KERNELS_GENERATED,
                             .max_iterations = so_limits[0],
                             .max_sequence_length = so_limits[1]};
  wm_status_t s = wm_cli_registry_open(&bo, &reg);
  if (!s) {
    s = wm_cli_backend_list(reg, backend_name, list, &so.backend_count);
  }
  if (!s) {
    s = wm_registry_find(reg, "ref", &so.fallback);
  }
  if (!s) {
    s = wm_onnx_load(model, &graph);
  }
  if (!s) {
    s = wm_cli_generated_inputs("tune", graph, &dims, &ds);
  }
  if (!s) {
    s = wm_session_create_placed(graph, &so, &session);
  }
  if (!s) {
    outs = wm_calloc(graph->output_count + 1, sizeof(*outs));
    s = outs ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  if (!s) {
    s = wm_session_run_items(session, (const char *const *)ds.input_names,
                             ds.inputs, ds.n_inputs, outs);
  }
  if (!s) {
    s = wm_session_tune(session, budget, NULL, &res, &n);
  }
  if (!s) {
    printf("%-24s %-16s %5s %10s %10s %7s  %s -> %s\n", "node", "op", "cands",
           "default us", "best us", "speedup", "default schedule", "best");
    for (size_t i = 0; i < n; i++) {
      const wm_tune_result_t *r = &res[i];
      printf("%-24.24s %-16.16s %5d %10.1f %10.1f %6.2fx  %s -> %s\n", r->node,
             r->op_type, (int)r->candidates, r->default_us, r->best_us,
             r->default_us / r->best_us, r->default_schedule, r->best_schedule);
    }
    printf(
        "%zu generated kernel%s tuned; the records are used by later "
        "plans\n",
        n, n == 1 ? "" : "s");
  }
  for (size_t i = 0; outs && i < graph->output_count; i++) {
    wm_item_deinit(&outs[i]);
  }
  free(outs);
  free(res);
  wm_session_destroy(session);
  wm_cli_dataset_deinit(&ds);
  wm_graph_destroy(graph);
  wm_registry_destroy(reg);
  wm_cli_dims_deinit(&dims);
  wm_cli_backend_options_deinit(&bo);
  return s ? wm_cli_fail(s) : WM_EXIT_OK;
}
