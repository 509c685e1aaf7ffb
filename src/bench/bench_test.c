// Tests of the runner: generated inputs, and interleaved blocks in child
// processes on the built-in ref backend.
#include <stdlib.h>
#include <string.h>

#include "../../tests/testing/wm_test.h"
#include "ref.h"
#include "wmap/bench.h"
#include "wmap/zoo.h"

// Opens a registry holding only the built-in ref backend.
static wm_status_t open_ref(void *ctx, const char *list, uint32_t threads,
                            wm_registry_t **reg, wm_backend_t **out,
                            size_t *count, wm_backend_t **fallback) {
  (void)ctx;
  wm_registry_options_t ro = {.num_threads = threads,
                              .no_env = true,
                              .quiet = true,
                              .install_dir = "",
                              .builtin_query = wm_ref_plugin_query};
  WM_RETURN_IF_ERROR(wm_registry_create(&ro, reg));
  *count = 0;
  wm_status_t s = wm_registry_find(*reg, list, &out[0]);
  if (!s) {
    *count = 1;
    s = wm_registry_find(*reg, "ref", fallback);
  }
  return s;
}

WM_TEST(inputs_are_deterministic_and_token_ids_in_range) {
  wm_graph_t *g = NULL;
  WM_CHECK_OK(wm_zoo_build("bert-base:layers=1,seq=16", &g));
  char **names;
  wm_tensor_t **ins;
  size_t n;
  WM_CHECK_OK(wm_bench_make_inputs(g, &names, &ins, &n));
  WM_CHECK_INT_EQ(n, 3);
  for (size_t i = 0; i < n; i++) {
    for (size_t k = 0; k < ins[i]->count; k++) {
      int64_t v = wm_tensor_get_i64(ins[i], k);
      if (strcmp(names[i], "input_ids") == 0) {
        WM_CHECK(v >= 0 && v < 30522);
      } else if (strcmp(names[i], "attention_mask") == 0) {
        WM_CHECK_INT_EQ(v, 1);
      } else {
        WM_CHECK(v >= 0 && v < 2);  // token types: a table of 2
      }
    }
    free(names[i]);
    wm_tensor_destroy(ins[i]);
  }
  free(names);
  free(ins);
  wm_graph_destroy(g);
}

WM_TEST(blocks_are_interleaved_in_children) {
  wm_graph_t *g = NULL;
  WM_CHECK_OK(wm_zoo_build("mlp:hidden=64", &g));
  const char *lists[] = {"ref"};
  uint32_t threads[] = {1, 2};
  wm_bench_options_t o = {
      .graph = g,
      .model_name = "mlp",
      .model_sha256 = "00",
      .lists = lists,
      .n_lists = 1,
      .threads = threads,
      .n_threads = 2,
      .blocks = 3,
      .min_time_s = 0.02,
      .min_iters = 5,
      .profile = true,
      .open = open_ref,
  };
  wm_baseline_t *b = NULL;
  WM_CHECK_OK(wm_bench_run(&o, &b));
  WM_CHECK_INT_EQ(b->n_configs, 2);
  WM_CHECK_STR_EQ(b->configs[0].label, "ref@t1");
  WM_CHECK_STR_EQ(b->configs[1].label, "ref@t2");
  for (size_t c = 0; c < 2; c++) {
    const wm_bench_config_t *cfg = &b->configs[c];
    WM_CHECK_INT_EQ(cfg->n_blocks, 3);
    size_t total = 0;
    for (size_t k = 0; k < 3; k++) {
      WM_CHECK_INT_EQ(cfg->blocks[k].index, (int64_t)k);
      WM_CHECK_INT_EQ(cfg->blocks[k].order, (int64_t)(2 * k + c));
      WM_CHECK(cfg->blocks[k].n >= 5);
      total += cfg->blocks[k].n;
    }
    WM_CHECK_INT_EQ(cfg->latency.n, total);
    WM_CHECK(cfg->latency.median > 0);
    // The last block was profiled: one entry per node, with times; each
    // Relu runs inside the Gemm before it (the epilogue pass), taking
    // no time of its own.
    WM_CHECK_INT_EQ(cfg->n_ops, g->node_count);
    for (size_t i = 0; i < cfg->n_ops; i++) {
      WM_CHECK_STR_EQ(cfg->ops[i].backend, "ref");
      if (strcmp(cfg->ops[i].op_type, "Relu") == 0) {
        WM_CHECK(cfg->ops[i].mean_ns == 0);
      } else {
        WM_CHECK(cfg->ops[i].mean_ns > 0);
      }
    }
    WM_CHECK(cfg->n_versions >= 1);
  }
  WM_CHECK(b->configs[1].has_scaling);
  WM_CHECK(b->model_flops > 0);
  WM_CHECK_INT_EQ(strlen(b->env.fingerprint), 64);
  WM_CHECK_STR_EQ(wm_env_get(&b->env, "model.sha256"), "00");
  wm_baseline_destroy(b);
  wm_graph_destroy(g);
}

WM_TEST(a_failing_block_fails_the_run_with_its_message) {
  wm_graph_t *g = NULL;
  WM_CHECK_OK(wm_zoo_build("mlp:hidden=16", &g));
  const char *lists[] = {"nosuch"};
  uint32_t threads[] = {1};
  wm_bench_options_t o = {.graph = g,
                          .lists = lists,
                          .n_lists = 1,
                          .threads = threads,
                          .n_threads = 1,
                          .blocks = 1,
                          .min_time_s = 0.01,
                          .min_iters = 1,
                          .open = open_ref};
  wm_baseline_t *b = NULL;
  WM_CHECK_ERR(wm_bench_run(&o, &b), UNAVAILABLE, "nosuch@t1: ");
  WM_CHECK(b == NULL);
  o.blocks = 0;
  WM_CHECK_ERR(wm_bench_run(&o, &b), INVALID_ARGUMENT, "--blocks");
  wm_graph_destroy(g);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(inputs_are_deterministic_and_token_ids_in_range),
      WM_CASE(blocks_are_interleaved_in_children),
      WM_CASE(a_failing_block_fails_the_run_with_its_message),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
