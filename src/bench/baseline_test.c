// The baseline: figures from hand-checkable samples, the JSON round trip
// and every way a file can fail to be a "wmap.baseline/1".
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../tests/testing/wm_test.h"
#include "wmap/bench.h"

// ------------------------------------------------------------ helpers

// Samples of the two configurations, block by block (0 ends a block).
static const double kT1[3][5] = {
    {130, 120, 125, 0},
    {100, 104, 102, 101, 0},
    {99, 103, 100, 0},
};
static const double kT2[3][6] = {
    {52, 50, 51, 0},
    {51, 50, 53, 0},
    {49, 51, 52, 50, 55, 0},
};

typedef struct op_spec {
  const char *node, *op_type;
  double mean, roof;
} op_spec_t;

static const op_spec_t kOps[] = {
    {"conv1", "Conv", 300, 150},
    {"relu1", "Relu", 100, 0},
    {"conv2", "Conv", 500, 250},
    {"add1", "Add", 100, 50},
};

static void env_add(wm_env_t *env, const char *key, bool critical,
                    const char *value) {
  wm_env_field_t *f = &env->fields[env->n++];
  snprintf(f->key, sizeof(f->key), "%s", key);
  snprintf(f->value, sizeof(f->value), "%s", value);
  f->critical = critical;
}

static bool fill_config(wm_arena_t *a, wm_bench_config_t *c, const char *label,
                        uint32_t threads, const double *rows, size_t stride,
                        int32_t order0) {
  c->label = label;
  c->n_backends = 1;
  c->backends = wm_arena_alloc(a, sizeof(char *));
  c->versions = wm_arena_alloc(a, sizeof(wm_bench_kv_t));
  c->blocks = wm_arena_alloc(a, 3 * sizeof(wm_bench_block_t));
  if (!c->backends || !c->versions || !c->blocks) {
    return false;
  }
  c->backends[0] = "cpu";
  c->n_versions = 1;
  c->versions[0].key = "cpu";
  c->versions[0].value = "0.1.0";
  c->threads = threads;
  c->n_blocks = 3;
  for (size_t i = 0; i < 3; i++) {
    const double *row = rows + i * stride;
    wm_bench_block_t *k = &c->blocks[i];
    k->index = (int32_t)i;
    k->order = order0 + 2 * (int32_t)i;
    while (row[k->n] != 0) {
      k->n++;
    }
    k->samples = wm_arena_alloc(a, k->n * sizeof(double));
    if (!k->samples) {
      return false;
    }
    memcpy(k->samples, row, k->n * sizeof(double));
  }
  return true;
}

// Two configurations of the same backend at 1 and 2 threads, three
// blocks each, a profile on the first; not finished.
static wm_status_t make_baseline(wm_baseline_t **out) {
  wm_baseline_t *b;
  WM_RETURN_IF_ERROR(wm_baseline_create(&b));
  wm_arena_t *a = &b->arena;
  b->created_utc = "2026-12-02T15:04:05Z";
  b->tool_version = "0.1.0";
  b->tool_git = "a384dd90c105";
  b->build_type = "Debug";
  b->model_name = "res\"net\\18\n";
  b->model_sha256 = "00ff";
  b->n_dims = 2;
  b->dims = wm_arena_alloc(a, 2 * sizeof(wm_bench_kv_t));
  b->configs = wm_arena_alloc(a, 2 * sizeof(wm_bench_config_t));
  wm_bench_config_t *c = b->configs;
  if (!b->dims || !c || !fill_config(a, &c[0], "cpu@t1", 1, &kT1[0][0], 5, 0) ||
      !fill_config(a, &c[1], "cpu@t2", 2, &kT2[0][0], 6, 1)) {
    wm_baseline_destroy(b);
    return WM_ERROR(RESOURCE_EXHAUSTED, "test baseline");
  }
  b->n_configs = 2;
  b->dims[0].key = "batch";
  b->dims[0].value = "1";
  b->dims[1].key = "seq";
  b->dims[1].value = "n/a";
  b->model_flops = 2.04e6;
  b->blocks = 3;
  b->min_time_s = 0.5;
  b->min_iters = 3;
  env_add(&b->env, "cpu.model", true, "Test \"CPU\" \\ 2 GHz");
  env_add(&b->env, "load.avg1", false, "0.41");
  env_add(&b->env, "cpu.cores", true, "2");
  env_add(&b->env, "env.OMP_NUM_THREADS", false, "1");
  wm_sha256_hex("cpu.cores=2\n", 12, b->env.fingerprint);
  size_t n_ops = sizeof(kOps) / sizeof(kOps[0]);
  c[0].ops = wm_arena_alloc(a, n_ops * sizeof(wm_bench_op_t));
  if (!c[0].ops) {
    wm_baseline_destroy(b);
    return WM_ERROR(RESOURCE_EXHAUSTED, "test baseline");
  }
  c[0].n_ops = n_ops;
  for (size_t i = 0; i < n_ops; i++) {
    c[0].ops[i].node = kOps[i].node;
    c[0].ops[i].op_type = kOps[i].op_type;
    c[0].ops[i].backend = "cpu";
    c[0].ops[i].mean_ns = kOps[i].mean;
    c[0].ops[i].t_roof_ns = kOps[i].roof;
  }
  *out = b;
  return NULL;
}

static char *to_json(const wm_baseline_t *b) {
  wm_strbuf_t s;
  wm_strbuf_init(&s);
  wm_baseline_to_json(b, &s);
  if (s.failed) {
    wm_strbuf_deinit(&s);
    return NULL;
  }
  return s.data;
}

// Writes |text| to a fresh temporary file; its path into |path|.
static bool write_temp(const char *text, char path[64]) {
  snprintf(path, 64, "/tmp/wm_baseline_test_XXXXXX");
  int fd = mkstemp(path);
  if (fd < 0) {
    return false;
  }
  close(fd);
  wm_status_t s = wm_file_write(path, text, strlen(text));
  wm_status_free(s);
  return s == NULL;
}

// Loads |text| through a temporary file.
static wm_status_t load_text(const char *text, wm_baseline_t **out) {
  char path[64];
  *out = NULL;
  if (!write_temp(text, path)) {
    return WM_ERROR(INTERNAL, "cannot write a temporary file");
  }
  wm_status_t s = wm_baseline_load(path, out);
  remove(path);
  return s;
}

// A heap copy of |text| with the |nth| (0-based) occurrence of |from|
// replaced by |to| (NULL when there is no such occurrence).
static char *replace_nth(const char *text, const char *from, const char *to,
                         int nth) {
  const char *at = text;
  for (int i = 0;; i++) {
    at = strstr(at, from);
    if (!at) {
      return NULL;
    }
    if (i == nth) {
      break;
    }
    at += strlen(from);
  }
  size_t head = (size_t)(at - text), nf = strlen(from), nt = strlen(to);
  size_t tail = strlen(at + nf);
  char *out = malloc(head + nt + tail + 1);
  if (!out) {
    return NULL;
  }
  memcpy(out, text, head);
  memcpy(out + head, to, nt);
  memcpy(out + head + nt, at + nf, tail + 1);
  return out;
}

// The JSON of the finished test baseline.
static char *finished_json(void) {
  wm_baseline_t *b;
  wm_status_t s = make_baseline(&b);
  if (s) {
    wm_status_free(s);
    return NULL;
  }
  s = wm_baseline_finish(b);
  char *json = s ? NULL : to_json(b);
  wm_status_free(s);
  wm_baseline_destroy(b);
  return json;
}

// ------------------------------------------------------------- finish

WM_TEST(finish_computes_block_figures_by_nearest_rank) {
  wm_baseline_t *b;
  WM_CHECK_OK(make_baseline(&b));
  wm_status_t s = wm_baseline_finish(b);
  const wm_bench_config_t *c = b->configs;
  bool ok = s == NULL;
  wm_status_free(s);
  if (ok) {
    // 120 125 130 | 100 101 102 104 (rank ceil(2) = 2) | 99 100 103
    const double want[3][4] = {{125, 125, 120, 130},
                               {101, 101.75, 100, 104},
                               {100, 302.0 / 3, 99, 103}};
    for (size_t i = 0; i < 3 && ok; i++) {
      const wm_bench_block_t *k = &c[0].blocks[i];
      ok = k->median_ns == want[i][0] && fabs(k->mean_ns - want[i][1]) < 1e-9 &&
           k->min_ns == want[i][2] && k->max_ns == want[i][3];
      if (!ok) {
        wm_test_fail(__FILE__, __LINE__,
                     "block %zu: median %g mean %g min %g max %g", i,
                     k->median_ns, k->mean_ns, k->min_ns, k->max_ns);
      }
    }
    WM_CHECK_INT_EQ(c[0].blocks[1].n, 4);
    WM_CHECK_INT_EQ(c[1].blocks[2].n, 5);
    WM_CHECK_DBL_NEAR(c[1].blocks[2].median_ns, 51, 0);
    WM_CHECK_DBL_NEAR(c[1].blocks[2].mean_ns, 51.4, 1e-9);
  } else {
    wm_test_fail(__FILE__, __LINE__, "finish failed");
  }
  wm_baseline_destroy(b);
}

WM_TEST(finish_computes_latency_throughput_and_warnings) {
  wm_baseline_t *b;
  WM_CHECK_OK(make_baseline(&b));
  wm_status_t s = wm_baseline_finish(b);
  const wm_bench_config_t *c = b->configs;
  // Pooled t1: 99 100 100 101 102 103 104 120 125 130; sum 1084; squared
  // deviations sum to 1250.4.
  bool ok = !s && c[0].latency.n == 10 && c[0].latency.median == 102 &&
            c[0].latency.min == 99 && c[0].latency.max == 130 &&
            fabs(c[0].latency.mean - 108.4) < 1e-9 &&
            fabs(c[0].latency.cv - sqrt(1250.4 / 9) / 108.4) < 1e-9 &&
            fabs(c[0].inferences_per_s - 1e9 / 102) < 1e-6 &&
            fabs(c[0].gflops - 20000) < 1e-9 && c[1].latency.n == 11 &&
            c[1].latency.median == 51 && fabs(c[1].gflops - 40000) < 1e-9;
  if (!ok) {
    wm_test_fail(__FILE__, __LINE__,
                 "%s: n %zu median %g mean %g cv %g ips %g gflops %g",
                 wm_status_message(s), c[0].latency.n, c[0].latency.median,
                 c[0].latency.mean, c[0].latency.cv, c[0].inferences_per_s,
                 c[0].gflops);
  }
  wm_status_free(s);
  // t1: cv 0.109 > 10 %, block 0's median 125 > 1.1 x 100, 3 blocks.
  if (ok && (c[0].n_warnings != 3 || strcmp(c[0].warnings[0], "cv>10%") ||
             strcmp(c[0].warnings[1], "first_block_slow") ||
             strcmp(c[0].warnings[2], "few_blocks"))) {
    wm_test_fail(__FILE__, __LINE__, "t1 warnings: %zu", c[0].n_warnings);
    ok = false;
  }
  if (ok && (c[1].n_warnings != 1 || strcmp(c[1].warnings[0], "few_blocks"))) {
    wm_test_fail(__FILE__, __LINE__, "t2 warnings: %zu", c[1].n_warnings);
  }
  wm_baseline_destroy(b);
}

WM_TEST(finish_scales_against_the_fewest_threads) {
  wm_baseline_t *b;
  WM_CHECK_OK(make_baseline(&b));
  wm_status_t s = wm_baseline_finish(b);
  const wm_bench_config_t *c = b->configs;
  // Medians 102 at 1 thread, 51 at 2: speedup 2, efficiency 2 * 1 / 2.
  bool ok = !s && !c[0].has_scaling && c[1].has_scaling &&
            c[1].base_threads == 1 && fabs(c[1].speedup - 2) < 1e-12 &&
            fabs(c[1].efficiency - 1) < 1e-12;
  if (!ok) {
    wm_test_fail(__FILE__, __LINE__, "%s: %d %d base %u speedup %g eff %g",
                 wm_status_message(s), c[0].has_scaling, c[1].has_scaling,
                 c[1].base_threads, c[1].speedup, c[1].efficiency);
  }
  wm_status_free(s);
  wm_baseline_destroy(b);
}

// One-sample blocks of |medians|, block i holding index idx[i].
static bool one_sample_blocks(wm_arena_t *a, wm_bench_config_t *c,
                              const double *medians, const int32_t *idx,
                              size_t n) {
  c->blocks = wm_arena_alloc(a, n * sizeof(wm_bench_block_t));
  if (!c->blocks) {
    return false;
  }
  c->n_blocks = n;
  for (size_t i = 0; i < n; i++) {
    c->blocks[i].index = idx ? idx[i] : (int32_t)i;
    c->blocks[i].n = 1;
    c->blocks[i].samples = wm_arena_alloc(a, sizeof(double));
    if (!c->blocks[i].samples) {
      return false;
    }
    c->blocks[i].samples[0] = medians[i];
  }
  return true;
}

WM_TEST(scaling_pairs_the_same_backend_list_in_order) {
  wm_baseline_t *b;
  WM_CHECK_OK(wm_baseline_create(&b));
  wm_arena_t *a = &b->arena;
  static const char *cpu[] = {"cpu"};
  static const char *cpu_ref[] = {"cpu", "ref"};
  static const char *ref_cpu[] = {"ref", "cpu"};
  static const double m100[] = {100}, m50[] = {50}, m80[] = {80}, m40[] = {40};
  b->configs = wm_arena_alloc(a, 5 * sizeof(wm_bench_config_t));
  WM_CHECK(b->configs);
  b->n_configs = 5;
  wm_bench_config_t *c = b->configs;
  const struct {
    const char **be;
    size_t nb;
    uint32_t threads;
    const double *m;
  } spec[] = {{cpu, 1, 4, m50},
              {cpu, 1, 2, m100},
              {cpu_ref, 2, 1, m80},
              {ref_cpu, 2, 2, m40},
              {cpu_ref, 2, 1, m40}};
  for (size_t i = 0; i < 5; i++) {
    c[i].label = "x";
    c[i].backends = spec[i].be;
    c[i].n_backends = spec[i].nb;
    c[i].threads = spec[i].threads;
    if (!one_sample_blocks(a, &c[i], spec[i].m, NULL, 1)) {
      wm_baseline_destroy(b);
      WM_CHECK(false);
    }
  }
  wm_status_t s = wm_baseline_finish(b);
  // cpu@t4 against cpu@t2: 100 / 50 = 2, efficiency 2 * 2 / 4. The others
  // are bases or alone; ref,cpu is not cpu,ref; equal threads never scale.
  bool ok = !s && c[0].has_scaling && c[0].base_threads == 2 &&
            fabs(c[0].speedup - 2) < 1e-12 &&
            fabs(c[0].efficiency - 1) < 1e-12 && !c[1].has_scaling &&
            !c[2].has_scaling && !c[3].has_scaling && !c[4].has_scaling;
  if (!ok) {
    wm_test_fail(__FILE__, __LINE__, "%s: %d base %u speedup %g eff %g",
                 wm_status_message(s), c[0].has_scaling, c[0].base_threads,
                 c[0].speedup, c[0].efficiency);
  }
  wm_status_free(s);
  wm_baseline_destroy(b);
}

WM_TEST(first_block_slow_compares_index_0_with_the_median_of_the_others) {
  wm_baseline_t *b;
  WM_CHECK_OK(wm_baseline_create(&b));
  wm_arena_t *a = &b->arena;
  static const char *cpu[] = {"cpu"};
  // Index 0 comes second in the array. Others: 100 100 120 130, whose
  // nearest-rank median is 100; 111 > 110 is slow, 110 is not.
  static const double slow[] = {130, 111, 100, 120, 100};
  static const double fine[] = {130, 110, 100, 120, 100};
  static const double two[] = {200, 100};
  static const int32_t idx[] = {3, 0, 1, 4, 2};
  b->configs = wm_arena_alloc(a, 3 * sizeof(wm_bench_config_t));
  WM_CHECK(b->configs);
  b->n_configs = 3;
  wm_bench_config_t *c = b->configs;
  for (size_t i = 0; i < 3; i++) {
    c[i].label = "x";
    c[i].backends = cpu;
    c[i].n_backends = 1;
    c[i].threads = 1;
  }
  if (!one_sample_blocks(a, &c[0], slow, idx, 5) ||
      !one_sample_blocks(a, &c[1], fine, idx, 5) ||
      !one_sample_blocks(a, &c[2], two, NULL, 2)) {
    wm_baseline_destroy(b);
    WM_CHECK(false);
  }
  wm_status_t s = wm_baseline_finish(b);
  bool has[3] = {false, false, false};
  for (size_t i = 0; i < 3 && !s; i++) {
    for (size_t j = 0; j < c[i].n_warnings; j++) {
      has[i] |= strcmp(c[i].warnings[j], "first_block_slow") == 0;
    }
  }
  bool ok = !s && has[0] && !has[1] && has[2] && c[0].n_warnings == 2;
  if (!ok) {
    wm_test_fail(__FILE__, __LINE__, "%s: %d %d %d (%zu warnings)",
                 wm_status_message(s), has[0], has[1], has[2], c[0].n_warnings);
  }
  wm_status_free(s);
  wm_baseline_destroy(b);
}

WM_TEST(finish_aggregates_the_profile_by_op_type) {
  wm_baseline_t *b;
  WM_CHECK_OK(make_baseline(&b));
  wm_status_t s = wm_baseline_finish(b);
  const wm_bench_config_t *c = &b->configs[0];
  bool ok = !s && c->n_op_types == 3 && b->configs[1].n_op_types == 0;
  if (ok) {
    // Node times 300 100 500 100 of 1000; Conv 800 with roof 400.
    static const double share[] = {0.3, 0.1, 0.5, 0.1};
    static const double eff[] = {0.5, 0, 0.5, 0.5};
    for (size_t i = 0; i < 4; i++) {
      ok = ok && fabs(c->ops[i].share - share[i]) < 1e-12 &&
           fabs(c->ops[i].efficiency - eff[i]) < 1e-12;
    }
    const wm_bench_op_type_t *t = c->op_types;
    ok = ok && strcmp(t[0].op_type, "Conv") == 0 && t[0].count == 2 &&
         t[0].mean_ns == 800 && fabs(t[0].share - 0.8) < 1e-12 &&
         t[0].t_roof_ns == 400 && fabs(t[0].efficiency - 0.5) < 1e-12 &&
         strcmp(t[1].op_type, "Relu") == 0 && t[1].count == 1 &&
         t[1].efficiency == 0 && strcmp(t[2].op_type, "Add") == 0 &&
         fabs(t[2].share - 0.1) < 1e-12 && fabs(t[2].efficiency - 0.5) < 1e-12;
  }
  if (!ok) {
    wm_test_fail(__FILE__, __LINE__, "%s: %zu op types", wm_status_message(s),
                 c->n_op_types);
  }
  wm_status_free(s);
  wm_baseline_destroy(b);
}

WM_TEST(profile_faster_than_its_roof_flags_the_peak) {
  wm_baseline_t *b, *l = NULL;
  WM_CHECK_OK(make_baseline(&b));
  // add1 runs in 100 ns against a roof of 130 ns: 130 %, impossible.
  b->configs[0].ops[3].t_roof_ns = 130;
  WM_CHECK_OK(wm_baseline_finish(b));
  const wm_bench_config_t *c = &b->configs[0];
  WM_CHECK_INT_EQ(c->above_roof, 1);
  WM_CHECK_DBL_NEAR(c->max_efficiency, 1.3, 1e-12);
  WM_CHECK_STR_EQ(c->max_node, "add1");
  WM_CHECK_INT_EQ(c->n_warnings, 4);
  WM_CHECK_STR_EQ(c->warnings[3], "peak_exceeded");
  WM_CHECK_INT_EQ(b->configs[1].above_roof, 0);  // no profile, no flag
  char *json = to_json(b);
  WM_CHECK(json != NULL);
  WM_CHECK(strstr(json, "\"efficiency\": 1.3, \"above_roof\": true}") != NULL);
  WM_CHECK(strstr(json,
                  "\"peak_check\": {\"above_roof\": 1, "
                  "\"max_efficiency\": 1.3, \"max_node\": \"add1\", "
                  "\"peak_too_low\": true}") != NULL);
  WM_CHECK(strstr(json, "\"peak_exceeded\"]") != NULL);
  // Loaded back, the flag is derived from the profile again.
  WM_CHECK_OK(load_text(json, &l));
  WM_CHECK_INT_EQ(l->configs[0].above_roof, 1);
  WM_CHECK_STR_EQ(l->configs[0].max_node, "add1");
  free(json);
  wm_baseline_destroy(l);
  wm_baseline_destroy(b);
}

WM_TEST(finish_rejects_empty_blocks_and_non_finite_samples) {
  wm_baseline_t *b;
  WM_CHECK_OK(make_baseline(&b));
  b->configs[1].blocks[1].n = 0;
  WM_CHECK_ERR(wm_baseline_finish(b), INVALID_ARGUMENT,
               "configuration \"cpu@t2\": block 1 has no samples");
  b->configs[1].blocks[1].n = 3;
  b->configs[0].blocks[2].samples[1] = NAN;
  WM_CHECK_ERR(wm_baseline_finish(b), INVALID_ARGUMENT,
               "configuration \"cpu@t1\": block 2: sample 1 is nan");
  wm_baseline_destroy(b);
}

WM_TEST(finish_reports_allocation_failure) {
  int failures = 0;
  for (int64_t k = 1; k < 1000; k++) {
    wm_baseline_t *b;
    WM_CHECK_OK(make_baseline(&b));
    wm_alloc_fail_after(k);
    wm_status_t s = wm_baseline_finish(b);
    wm_alloc_fail_after(0);
    wm_baseline_destroy(b);
    if (!s) {
      break;
    }
    failures++;
    WM_CHECK_ERR(s, RESOURCE_EXHAUSTED, "");
  }
  WM_CHECK(failures > 0);
}

// --------------------------------------------------------------- JSON

WM_TEST(json_follows_the_documented_layout) {
  char *json = finished_json();
  WM_CHECK(json);
  static const char *const want[] = {
      "{\n  \"format\": \"wmap.baseline/1\",\n  \"created_utc\": "
      "\"2026-12-02T15:04:05Z\",\n",
      "\"tool\": {\"name\": \"wmap\", \"version\": \"0.1.0\", \"git\": "
      "\"a384dd90c105\", \"build_type\": \"Debug\"}",
      "\"model\": {\"name\": \"res\\\"net\\\\18\\n\", \"sha256\": \"00ff\", "
      "\"dims\": {\"batch\": 1, \"seq\": \"n/a\"}, \"flops\": 2040000}",
      "\"method\": {\"blocks\": 3, \"min_time_s\": 0.5, \"min_iters\": 3, ",
      "\"percentile\": \"nearest_rank\", \"interleaved\": true, "
      "\"blocks_in\": \"fresh_process\", \"unit\": "
      "\"ns\"}",
      "\"critical\": {\n      \"cpu.model\": \"Test \\\"CPU\\\" \\\\ 2 GHz\",\n"
      "      \"cpu.cores\": \"2\"\n    },",
      "\"volatile\": {\n      \"load.avg1\": \"0.41\",\n      "
      "\"env.OMP_NUM_THREADS\": \"1\"\n    }",
      "\"label\": \"cpu@t1\",\n      \"backends\": [\"cpu\"],\n      "
      "\"threads\": 1,\n      \"backend_versions\": {\"cpu\": \"0.1.0\"},",
      "\"latency\": {\"n\": 10, \"min_ns\": 99, \"max_ns\": 130, "
      "\"mean_ns\": 108.4, ",
      "\"median_ns\": 102, ",
      "\"p50_ns\": 102, ",
      "\"supported\": {\"p90\": false, \"p95\": false, \"p99\": false, "
      "\"p999\": false}, "
      "\"outliers\": {",
      "{\"index\": 1, \"order\": 2, \"n\": 4, \"median_ns\": 101, "
      "\"mean_ns\": 101.75, \"min_ns\": 100, \"max_ns\": 104}",
      "\"samples_ns\": [\n          [130, 120, 125],\n          [100, 104, "
      "102, "
      "101],\n          [99, 103, 100]\n        ],",
      "\"throughput\": {\"inferences_per_s\": 9803920, \"gflops\": "
      "20000},\n        \"scaling\": null,\n        \"warnings\": "
      "[\"cv>10%\", \"first_block_slow\", \"few_blocks\"],",
      "{\"node\": \"conv2\", \"op_type\": \"Conv\", \"backend\": \"cpu\", "
      "\"mean_ns\": 500, \"share\": 0.5, \"t_roof_ns\": 250, \"efficiency\": "
      "0.5, \"above_roof\": false}",
      "\"peak_check\": {\"above_roof\": 0, \"max_efficiency\": 0.5, "
      "\"max_node\": \"conv1\", \"peak_too_low\": false},",
      "{\"op_type\": \"Conv\", \"count\": 2, \"mean_ns\": 800, \"share\": "
      "0.8, \"t_roof_ns\": 400, \"efficiency\": 0.5}",
      "\"scaling\": {\"base_threads\": 1, \"speedup\": 2, \"efficiency\": 1}",
      "\"peak_check\": null,\n        \"profile\": null,\n        "
      "\"profile_by_type\": null\n      }",
      "\n  ],\n  \"results\": {\n    \"latency\": {\"n\": 10, ",
      "\n  }\n}\n",
  };
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    if (!strstr(json, want[i])) {
      wm_test_fail(__FILE__, __LINE__, "want\n%s\nin\n%s", want[i], json);
      break;
    }
  }
  free(json);
}

WM_TEST(json_round_trips_byte_for_byte) {
  wm_baseline_t *b, *l = NULL, *l2 = NULL;
  WM_CHECK_OK(make_baseline(&b));
  wm_status_t s = wm_baseline_finish(b);
  if (!s) {
    // A figure that is not finite, and one whose 6 digits are an integer.
    b->configs[1].latency.cv = NAN;
    b->configs[1].latency.mean = 1234567.5;
    b->in_process = true;  // blocks in the measuring process
  }
  char *first = s ? NULL : to_json(b);
  char *second = NULL;
  if (first) {
    s = load_text(first, &l);
  }
  if (!s && l) {
    second = to_json(l);
  }
  bool same = first && second && strcmp(first, second) == 0;
  if (s) {
    wm_test_fail(__FILE__, __LINE__, "%s", wm_status_message(s));
  } else if (!same) {
    wm_test_fail(__FILE__, __LINE__, "differs:\n%s\n---\n%s",
                 first ? first : "", second ? second : "");
  }
  wm_status_free(s);
  s = NULL;
  // The loaded baseline keeps what the JSON does not show directly.
  if (same) {
    const wm_bench_config_t *c = &l->configs[0];
    same = l->in_process && l->env.n == 4 && l->env.fields[0].critical &&
           l->env.fields[1].critical && !l->env.fields[2].critical &&
           strcmp(l->env.fields[1].key, "cpu.cores") == 0 &&
           strcmp(l->env.fingerprint, b->env.fingerprint) == 0 &&
           c->latency.q1 == b->configs[0].latency.q1 &&
           c->latency.q3 == b->configs[0].latency.q3 &&
           isnan(l->configs[1].latency.cv) && l->configs[1].has_scaling &&
           l->configs[1].base_threads == 1 && c->blocks[1].samples[3] == 101 &&
           c->blocks[1].order == 2 && strcmp(l->dims[0].value, "1") == 0 &&
           strcmp(l->model_name, "res\"net\\18\n") == 0 &&
           l->model_flops == 2.04e6 && l->min_time_s == 0.5;
    if (!same) {
      wm_test_fail(__FILE__, __LINE__, "loaded fields differ");
    }
  }
  // The loaded samples give the same figures again.
  free(first);
  free(second);
  first = second = NULL;
  char *json = same ? finished_json() : NULL;
  if (json) {
    s = load_text(json, &l2);
    if (!s) {
      s = wm_baseline_finish(l2);
    }
    second = s ? NULL : to_json(l2);
    if (s || !second || strcmp(json, second) != 0) {
      wm_test_fail(__FILE__, __LINE__, "refinished: %s", wm_status_message(s));
    }
  }
  wm_status_free(s);
  free(json);
  free(second);
  wm_baseline_destroy(l2);
  wm_baseline_destroy(l);
  wm_baseline_destroy(b);
}

// ---------------------------------------------------------- load errors

WM_TEST(load_names_a_missing_file) {
  wm_baseline_t *b = NULL;
  WM_CHECK_ERR(wm_baseline_load("/nonexistent/base.json", &b), NOT_FOUND,
               "/nonexistent/base.json");
  WM_CHECK(b == NULL);
}

WM_TEST(load_rejects_text_that_is_not_json) {
  wm_baseline_t *b = NULL;
  WM_CHECK_ERR(load_text("{\"format\": \n  \"wmap", &b), DATA_LOSS,
               "not valid JSON (line 2");
  WM_CHECK_ERR(load_text("", &b), DATA_LOSS, "not valid JSON");
  WM_CHECK_ERR(load_text("{} x", &b), DATA_LOSS,
               "text after the JSON value (line 1, column 4)");
  WM_CHECK_ERR(load_text("[]", &b), DATA_LOSS, "top level is not an object");
  WM_CHECK(b == NULL);
}

// Loads |json| with one edit; checks DATA_LOSS with |needle|.
static bool edited_fails(const char *json, const char *from, const char *to,
                         int nth, const char *needle) {
  char *text = replace_nth(json, from, to, nth);
  if (!text) {
    wm_test_fail(__FILE__, __LINE__, "no \"%s\" #%d in the JSON", from, nth);
    return false;
  }
  wm_baseline_t *b = NULL;
  wm_status_t s = load_text(text, &b);
  free(text);
  bool ok = s && wm_status_code(s) == WM_STATUS_DATA_LOSS &&
            strstr(wm_status_message(s), needle) &&
            strstr(wm_status_message(s), "baseline \"/tmp/wm_baseline_test_");
  if (!ok) {
    wm_test_fail(__FILE__, __LINE__, "%s -> %s: got %s \"%s\", want \"%s\"",
                 from, to, wm_status_code_name(wm_status_code(s)),
                 wm_status_message(s), needle);
  }
  wm_status_free(s);
  wm_baseline_destroy(b);
  return ok;
}

WM_TEST(load_names_the_bad_member) {
  char *json = finished_json();
  WM_CHECK(json);
  static const struct {
    const char *from, *to;
    int nth;
    const char *needle;
  } cases[] = {
      {"wmap.baseline/1", "wmap.baseline/9", 0,
       "format is \"wmap.baseline/9\", want \"wmap.baseline/1\""},
      {"\"format\"", "\"formats\"", 0, "format is missing"},
      {"\"threads\": ", "\"threadz\": ", 1,
       "configurations[1].threads is missing"},
      {"\"p50_ns\": ", "\"p5_ns\": ", 1,
       "configurations[1].results.latency.p50_ns is missing"},
      {"\"order\": 0, \"n\": 3", "\"order\": 0, \"n\": -3", 0,
       "configurations[0].results.blocks[0].n is -3, want at least 1"},
      {"\"order\": 0, \"n\": 3", "\"order\": 0, \"n\": \"3\"", 0,
       "configurations[0].results.blocks[0].n is not a number"},
      {"\"order\": 0, \"n\": 3", "\"order\": 0, \"n\": 4", 0,
       "configurations[0].results.samples_ns[0] has 3 samples, "
       "configurations[0].results.blocks[0].n is 4"},
      {"\"order\": 0, \"n\": 3", "\"order\": 0, \"n\": 3.5", 0,
       "blocks[0].n is 3.5, want an integer"},
      {"[130, 120, 125],\n", "", 0,
       "configurations[0].results.samples_ns has 2 blocks, blocks has 3"},
      {"[130, 120, 125]", "[130, \"x\", 125]", 0,
       "configurations[0].results.samples_ns[0][1] is not a number"},
      {"[130, 120, 125]", "[130, -120, 125]", 0,
       "samples_ns[0][1] is -120, want a time >= 0"},
      {"[130, 120, 125]", "[130, 1e308, 125]", 0,
       "configurations[0].results.samples_ns[0][1] is 1e+308, want at most "
       "9007199254740992 (2^53 ns, 104 days)"},
      {"\"p90_ns\": ", "\"p90_ns\": -", 0,
       "configurations[0].results.latency.p90_ns is -"},
      {"\"median_ns\": 101, ", "\"median_ns\": 1e308, ", 0,
       "configurations[0].results.blocks[1].median_ns is 1e+308, want at most"},
      {"\"median_ns\": 101, ", "\"median_ns\": 5000, ", 0,
       "configuration \"cpu@t1\" block 1: median_ns is 5000 but its 4 samples "
       "give 101 (configurations[0].results.blocks[1].median_ns)"},
      {"\"mean_ns\": 101.75, ", "\"mean_ns\": 102.75, ", 0,
       "configuration \"cpu@t1\" block 1: mean_ns is 102.75 but its 4 samples "
       "give 101.75"},
      {"\"max_ns\": 104}", "\"max_ns\": 105}", 0,
       "block 1: max_ns is 105 but its 4 samples give 104"},
      {"\"cpu.model\": ", "\"cpu.cores\": \"3\", \"cpu.model\": ", 0,
       "key \"cpu.cores\" appears twice in environment.critical"},
      {"\"cpu.cores\": \"2\"", "\"cpu.cores\": 2", 0,
       "environment.critical[\"cpu.cores\"] is not a string"},
      {"\"load.avg1\"", "\"cpu.cores\"", 0,
       "environment.volatile[\"cpu.cores\"]: the field appears twice"},
      {"\"fingerprint\": \"", "\"fingerprint\": \"Z", 0,
       "environment.fingerprint is \"Z"},
      {"\"latency\": {", "\"latency\": [], \"x\": {", 0,
       "configurations[0].results.latency is not an object"},
      {"\"backends\": [\"cpu\"]", "\"backends\": []", 1,
       "configurations[1].backends is empty"},
      {"\"threads\": 2", "\"threads\": 0", 0,
       "configurations[1].threads is 0, want at least 1"},
      {"\"p90\": false", "\"p90\": 0", 0,
       "configurations[0].results.latency.supported.p90 is not a boolean"},
      {"\"base_threads\": 1", "\"base_threads\": 1e999", 0,
       "configurations[1].results.scaling.base_threads is not finite"},
      {"\"warnings\": [\"cv>10%\"", "\"warnings\": [7", 0,
       "configurations[0].results.warnings[0] is not a string"},
      {"{\"node\": \"relu1\"", "{\"nodes\": \"relu1\"", 0,
       "configurations[0].results.profile[1].node is missing"},
      {"\"count\": 1", "\"count\": -1", 0,
       "configurations[0].results.profile_by_type[1].count is -1"},
      {"\"dims\": {\"batch\": 1", "\"dims\": {\"batch\": 1.5", 0,
       "model.dims[\"batch\"] is 1.5, want an integer"},
      {"\"latency\": {\"n\": 11", "\"latency\": {\"n\": 12", 0,
       "configurations[1].results.latency.n is 12, the blocks hold 11 "
       "samples"},
      {"\"p50_ns\": 102", "\"p50_ns\": 103", 1,
       "results differs from configurations[0].results"},
      {"\"unit\": \"ns\"", "\"unit\": \"us\"", 0,
       "method.unit is \"us\", want \"ns\""},
      {"\"configurations\": [", "\"configurations\": [], \"x\": [", 0,
       "configurations is empty"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    if (!edited_fails(json, cases[i].from, cases[i].to, cases[i].nth,
                      cases[i].needle)) {
      break;
    }
  }
  free(json);
}

WM_TEST(load_reports_allocation_failure) {
  char *json = finished_json();
  WM_CHECK(json);
  char path[64];
  bool written = write_temp(json, path);
  free(json);
  WM_CHECK(written);
  int failures = 0;
  for (int64_t k = 1; k < 10000; k++) {
    wm_baseline_t *b = NULL;
    wm_alloc_fail_after(k);
    wm_status_t s = wm_baseline_load(path, &b);
    wm_alloc_fail_after(0);
    if (!s) {
      wm_baseline_destroy(b);
      break;
    }
    failures++;
    bool ok = wm_status_code(s) == WM_STATUS_RESOURCE_EXHAUSTED && !b;
    if (!ok) {
      wm_test_fail(__FILE__, __LINE__, "failing allocation %lld: %s \"%s\"",
                   (long long)k, wm_status_code_name(wm_status_code(s)),
                   wm_status_message(s));
    }
    wm_status_free(s);
    if (!ok) {
      break;
    }
  }
  remove(path);
  WM_CHECK(failures > 1);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(finish_computes_block_figures_by_nearest_rank),
      WM_CASE(finish_computes_latency_throughput_and_warnings),
      WM_CASE(finish_scales_against_the_fewest_threads),
      WM_CASE(scaling_pairs_the_same_backend_list_in_order),
      WM_CASE(first_block_slow_compares_index_0_with_the_median_of_the_others),
      WM_CASE(finish_aggregates_the_profile_by_op_type),
      WM_CASE(profile_faster_than_its_roof_flags_the_peak),
      WM_CASE(finish_rejects_empty_blocks_and_non_finite_samples),
      WM_CASE(finish_reports_allocation_failure),
      WM_CASE(json_follows_the_documented_layout),
      WM_CASE(json_round_trips_byte_for_byte),
      WM_CASE(load_names_a_missing_file),
      WM_CASE(load_rejects_text_that_is_not_json),
      WM_CASE(load_names_the_bad_member),
      WM_CASE(load_reports_allocation_failure),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
