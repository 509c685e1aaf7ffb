// map_and_bench: the workload map and a latency baseline of a model from
// C, through libwmap.
//
//   map_and_bench MODEL.onnx BASELINE.json [BACKEND ...]  (default: cpu)
//
// Prints the map (inventory, coverage per backend, roofline on declared
// peaks, critical path) as text, then measures the model's latency on the
// backends (3 interleaved blocks, each in a fresh process) and writes the
// "wmap.baseline/1" JSON that `wmap compare` reads.
#include <stdio.h>
#include <string.h>

#include "wmap/bench.h"
#include "wmap/map.h"
#include "wmap/onnx.h"

static int failed(wm_status_t s, const char *what) {
  if (!s) {
    return 0;
  }
  fprintf(stderr, "map_and_bench: %s: %s\n", what, wm_status_message(s));
  wm_status_free(s);
  return 1;
}

// Opens the backends of one configuration inside a block's process: the
// comma-separated |list|, at |threads| threads, ref as the fallback.
static wm_status_t open_backends(void *ctx, const char *list, uint32_t threads,
                                 wm_registry_t **out_registry,
                                 wm_backend_t **out_backends, size_t *out_count,
                                 wm_backend_t **out_fallback) {
  (void)ctx;
  wm_registry_options_t ro = {.num_threads = threads,
                              .builtin_query = wm_ref_plugin_query};
  WM_RETURN_IF_ERROR(wm_registry_create(&ro, out_registry));
  *out_count = 0;
  char name[64];
  for (const char *p = list; *p;) {
    size_t n = strcspn(p, ",");
    if (n == 0 || n >= sizeof(name) || *out_count == WM_SESSION_MAX_BACKENDS) {
      return WM_ERROR(INVALID_ARGUMENT, "bad backend list \"%s\"", list);
    }
    memcpy(name, p, n);
    name[n] = '\0';
    WM_RETURN_IF_ERROR(
        wm_registry_find(*out_registry, name, &out_backends[*out_count]));
    (*out_count)++;
    p += n + (p[n] == ',');
  }
  return wm_registry_find(*out_registry, "ref", out_fallback);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: map_and_bench MODEL.onnx BASELINE.json "
            "[BACKEND ...]\n");
    return 2;
  }
  const char *list = argc > 3 ? argv[3] : "cpu";
  wm_graph_t *graph = NULL;
  wm_registry_t *registry = NULL;
  wm_map_t *map = NULL;
  wm_baseline_t *baseline = NULL;
  wm_strbuf_t text;
  wm_strbuf_init(&text);
  int rc = 1;

  if (failed(wm_onnx_load(argv[1], &graph), argv[1])) {
    goto done;
  }
  // The map: the listed backend, ref as the fallback; declared peaks.
  wm_registry_options_t ro = {.builtin_query = wm_ref_plugin_query};
  wm_backend_t *backend = NULL, *ref = NULL;
  if (failed(wm_registry_create(&ro, &registry), "registry") ||
      failed(wm_registry_find(registry, list, &backend), list) ||
      failed(wm_registry_find(registry, "ref", &ref), "ref")) {
    goto done;
  }
  wm_backend_t *const backends[] = {backend};
  wm_map_options_t mo = {.model = argv[1],
                         .backends = backends,
                         .backend_count = 1,
                         .fallback = ref};
  if (failed(wm_map_build(graph, &mo, &map), "map")) {
    goto done;
  }
  wm_map_to_text(map, false, &text);
  fputs(text.data ? text.data : "", stdout);

  // The baseline: blocks of timed runs, each in a fresh process.
  const char *const lists[] = {list};
  const uint32_t threads[] = {0};  // all cores
  wm_bench_options_t bo = {.graph = graph,
                           .model_name = argv[1],
                           .lists = lists,
                           .n_lists = 1,
                           .threads = threads,
                           .n_threads = 1,
                           .blocks = 3,
                           .min_time_s = 0.05,
                           .min_iters = 5,
                           .open = open_backends};
  if (failed(wm_bench_run(&bo, &baseline), "bench")) {
    goto done;
  }
  text.len = 0;
  wm_baseline_to_json(baseline, &text);
  FILE *f = fopen(argv[2], "w");
  if (!f || fputs(text.data, f) < 0 || fclose(f) != 0) {
    fprintf(stderr, "map_and_bench: cannot write %s\n", argv[2]);
    goto done;
  }
  const wm_bench_config_t *c = &baseline->configs[0];
  printf("baseline %s: %s P50 %.3f ms over %zu samples\n", argv[2], c->label,
         c->latency.p50 / 1e6, c->latency.n);
  rc = 0;

done:
  wm_strbuf_deinit(&text);
  wm_baseline_destroy(baseline);
  wm_map_destroy(map);
  wm_registry_destroy(registry);
  wm_graph_destroy(graph);
  return rc;
}
