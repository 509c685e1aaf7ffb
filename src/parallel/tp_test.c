// Tests of the tensor-parallel partition: GPT-2's and BERT's partitions
// hold the rank's columns and rows, Megatron's two AllReduces per layer and
// the local head counts, and running every rank's partition on thread
// ranks gives the whole graph's outputs; bad arguments are refused.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "ops/ops.h"
#include "parallel/parallel.h"
#include "ref.h"
#include "wm_test.h"
#include "wmap/bench.h"
#include "wmap/session.h"
#include "wmap/zoo.h"

static wm_graph_t *zoo(const char *spec) {
  wm_graph_t *g = NULL;
  wm_status_t s = wm_zoo_build(spec, &g);
  if (!s) {
    s = wm_ops_check_graph(g);
  }
  if (s) {
    wm_status_free(s);
    wm_graph_destroy(g);
    return NULL;
  }
  return g;
}

// Frees what wm_bench_make_inputs made.
static void free_inputs(char **names, wm_tensor_t **inputs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    wm_tensor_destroy(inputs[i]);
    free(names[i]);
  }
  free(names);
  free(inputs);
}

static size_t count_op(const wm_graph_t *g, const char *op) {
  size_t n = 0;
  for (size_t i = 0; i < g->node_count; i++) {
    n += strcmp(g->nodes[i].op_type, op) == 0;
  }
  return n;
}

static const wm_tensor_t *init_of(const wm_graph_t *g, const char *name) {
  int32_t v = wm_graph_find_value(g, name);
  return v >= 0 ? g->values[v].initializer : NULL;
}

WM_TEST(gpt2_partition_splits_attention_and_mlp_as_megatron_does) {
  wm_graph_t *g = zoo("gpt2:layers=2,seq=16");
  WM_CHECK(g != NULL);
  wm_graph_t *local = NULL;
  wm_tp_summary_t sum;
  wm_status_t s = wm_tp_partition(g, 2, 1, &local, &sum);
  WM_CHECK(s == NULL);
  WM_CHECK_INT_EQ(sum.column_parallel, 4);  // c_attn, c_fc per layer
  WM_CHECK_INT_EQ(sum.row_parallel, 4);     // the two c_proj per layer
  WM_CHECK_INT_EQ(sum.all_reduce_calls, 4);
  WM_CHECK_INT_EQ(sum.all_reduce_bytes, 4 * 16 * 768 * 4);
  WM_CHECK_INT_EQ(sum.all_gather_calls, 0);  // 50257 columns stay whole
  WM_CHECK_INT_EQ(count_op(local, "AllReduce"), 4);
  // The fused QKV weight: of each of q, k and v, this rank's 384 columns.
  const wm_tensor_t *w = init_of(local, "h.0.attn.c_attn.weight@tp1.3");
  const wm_tensor_t *full = init_of(g, "h.0.attn.c_attn.weight");
  WM_CHECK(w && full);
  WM_CHECK_INT_EQ(w->shape.dims[0], 768);
  WM_CHECK_INT_EQ(w->shape.dims[1], 1152);
  const float *a = w->data, *b = full->data;
  WM_CHECK(a[0] == b[384] && a[384] == b[768 + 384] &&
           a[1152 + 5] == b[2304 + 384 + 5]);
  // The row-parallel weight: rows 384..767.
  w = init_of(local, "h.1.mlp.c_proj.weight@tp0.1");
  WM_CHECK(w && w->shape.dims[0] == 1536 && w->shape.dims[1] == 768);
  // Heads per rank: 6.
  const wm_tensor_t *shape =
      init_of(local, "h.0.attn.q_heads.split_heads@tp/shape");
  WM_CHECK(shape != NULL);
  WM_CHECK_INT_EQ(((const int64_t *)shape->data)[2], 6);
  wm_graph_destroy(local);
  wm_graph_destroy(g);
}

typedef struct job {
  const wm_graph_t *g;
  int32_t rank, n;
  const char *id;
  char **names;
  wm_tensor_t **inputs;
  size_t n_inputs;
  wm_tensor_t *out[2];
  wm_status_t status;
} job_t;

static void *rank_main(void *p) {
  job_t *j = p;
  wm_graph_t *local = NULL;
  wm_comm_t *c = NULL;
  wm_backend_t *ref = NULL;
  wm_session_t *sess = NULL;
  j->status = wm_tp_partition(j->g, j->n, j->rank, &local, NULL);
  if (!j->status) {
    j->status = wm_comm_open(j->id, j->rank, j->n, &c);
  }
  if (!j->status) {
    wm_comm_set_current(c);
    j->status = wm_backend_create(wm_ref_plugin_query, "built-in", &ref);
  }
  if (!j->status) {
    j->status = wm_session_create(local, ref, &sess);
  }
  if (!j->status) {
    j->status = wm_session_run(sess, (const char *const *)j->names,
                               (const wm_tensor_t *const *)j->inputs,
                               j->n_inputs, j->out);
  }
  wm_session_destroy(sess);
  wm_backend_destroy(ref);
  if (j->status && c) {
    wm_comm_abort(c);
  }
  wm_comm_destroy(c);
  wm_graph_destroy(local);
  return NULL;
}

WM_TEST(every_ranks_partition_together_give_the_whole_outputs) {
  wm_graph_t *g = zoo("bert-base:layers=1,seq=8");
  WM_CHECK(g != NULL);
  char **names = NULL;
  wm_tensor_t **inputs = NULL;
  size_t n_inputs = 0;
  WM_CHECK(wm_bench_make_inputs(g, &names, &inputs, &n_inputs) == NULL);
  wm_backend_t *ref = NULL;
  wm_session_t *sess = NULL;
  wm_tensor_t *want[2] = {NULL, NULL};
  WM_CHECK(wm_backend_create(wm_ref_plugin_query, "built-in", &ref) == NULL);
  wm_graph_t *copy = NULL;
  WM_CHECK(wm_graph_clone(g, NULL, &copy) == NULL);
  WM_CHECK(wm_session_create(copy, ref, &sess) == NULL);
  WM_CHECK(wm_session_run(sess, (const char *const *)names,
                          (const wm_tensor_t *const *)inputs, n_inputs,
                          want) == NULL);
  char id[WM_COMM_ID_MAX];
  wm_comm_new_id(id);
  job_t jobs[2];
  pthread_t th[2];
  for (int32_t r = 0; r < 2; r++) {
    jobs[r] = (job_t){.g = g,
                      .rank = r,
                      .n = 2,
                      .id = id,
                      .names = names,
                      .inputs = inputs,
                      .n_inputs = n_inputs};
    pthread_create(&th[r], NULL, rank_main, &jobs[r]);
  }
  for (int32_t r = 0; r < 2; r++) {
    pthread_join(th[r], NULL);
  }
  bool ok = true;
  for (int32_t r = 0; r < 2; r++) {
    if (jobs[r].status) {
      wm_test_fail(__FILE__, __LINE__, "rank %d: %s", r,
                   wm_status_message(jobs[r].status));
      ok = false;
    }
    for (int k = 0; ok && k < 2; k++) {
      const wm_tensor_t *x = want[k], *y = jobs[r].out[k];
      ok = y && x->count == y->count;
      for (size_t i = 0; ok && i < x->count; i++) {
        double a = ((const float *)x->data)[i], b = ((const float *)y->data)[i];
        if (!(b - a <= 1e-4 + 1e-3 * (a < 0 ? -a : a) &&
              a - b <= 1e-4 + 1e-3 * (a < 0 ? -a : a))) {
          wm_test_fail(__FILE__, __LINE__,
                       "rank %d output %d element %zu: %g, whole %g", r, k, i,
                       b, a);
          ok = false;
        }
      }
    }
    wm_status_free(jobs[r].status);
    wm_tensor_destroy(jobs[r].out[0]);
    wm_tensor_destroy(jobs[r].out[1]);
  }
  wm_tensor_destroy(want[0]);
  wm_tensor_destroy(want[1]);
  wm_session_destroy(sess);
  wm_backend_destroy(ref);
  wm_graph_destroy(copy);
  free_inputs(names, inputs, n_inputs);
  wm_graph_destroy(g);
}

WM_TEST(bad_arguments_and_unknown_shapes_are_refused) {
  wm_graph_t *g = zoo("gpt2:layers=1,seq=8");
  WM_CHECK(g != NULL);
  wm_graph_t *local = NULL;
  wm_status_t s = wm_tp_partition(g, 2, 2, &local, NULL);
  WM_CHECK(s && strstr(wm_status_message(s), "rank 2 of tp=2"));
  wm_status_free(s);
  s = wm_tp_partition(g, 0, 0, &local, NULL);
  WM_CHECK(s && strstr(wm_status_message(s), "out of range"));
  wm_status_free(s);
  // A value whose shape inference never ran.
  int32_t v = wm_graph_find_value(g, "logits");
  WM_CHECK(v >= 0);
  g->values[v].type.shape.rank = -1;
  s = wm_tp_partition(g, 2, 0, &local, NULL);
  WM_CHECK(s && strstr(wm_status_message(s), "value \"logits\" has none"));
  wm_status_free(s);
  WM_CHECK(local == NULL);
  wm_graph_destroy(g);
}

WM_TEST(a_partition_outside_a_parallel_run_names_its_missing_communicator) {
  wm_graph_t *g = zoo("gpt2:layers=1,seq=8");
  WM_CHECK(g != NULL);
  wm_graph_t *local = NULL;
  WM_CHECK(wm_tp_partition(g, 2, 0, &local, NULL) == NULL);
  char **names = NULL;
  wm_tensor_t **inputs = NULL;
  size_t n_inputs = 0;
  WM_CHECK(wm_bench_make_inputs(g, &names, &inputs, &n_inputs) == NULL);
  wm_backend_t *ref = NULL;
  wm_session_t *sess = NULL;
  wm_tensor_t *out = NULL;
  WM_CHECK(wm_backend_create(wm_ref_plugin_query, "built-in", &ref) == NULL);
  wm_status_t s = wm_session_create(local, ref, &sess);
  if (!s) {
    s = wm_session_run(sess, (const char *const *)names,
                       (const wm_tensor_t *const *)inputs, n_inputs, &out);
  }
  WM_CHECK(s && strstr(wm_status_message(s), "AllReduce") &&
           strstr(wm_status_message(s), "no communicator"));
  wm_status_free(s);
  wm_tensor_destroy(out);
  wm_session_destroy(sess);
  wm_backend_destroy(ref);
  free_inputs(names, inputs, n_inputs);
  wm_graph_destroy(local);
  wm_graph_destroy(g);
}

WM_TEST(pipeline_stages_send_what_crosses_and_recompute_constants) {
  wm_graph_t *g = zoo("gpt2:layers=1,seq=8");
  WM_CHECK(g != NULL);
  int32_t *order = NULL;
  WM_CHECK(wm_graph_topo_order(g, &order) == NULL);
  int32_t *stage = wm_calloc(g->node_count, sizeof(int32_t));
  int32_t logits = -1;
  for (size_t i = 0; i < g->node_count; i++) {
    // The last node (the LM head) alone in stage 1.
    stage[order[i]] = i + 1 == g->node_count ? 1 : 0;
    if (strcmp(g->nodes[order[i]].op_type, "MatMul") == 0) {
      logits = order[i];
    }
  }
  wm_pp_stage_t s0, s1;
  WM_CHECK(wm_pp_partition(g, stage, 2, 0, 1, &s0) == NULL);
  WM_CHECK(wm_pp_partition(g, stage, 2, 1, 1, &s1) == NULL);
  // What stage 0 sends is what stage 1 receives: ln_f's output, not the
  // transposed embedding (a constant stage 1 computes itself).
  WM_CHECK_INT_EQ(s0.n_send, 1);
  WM_CHECK_INT_EQ(s1.n_recv, 1);
  WM_CHECK_STR_EQ(s0.send[0].name, s1.recv[0].name);
  WM_CHECK(!s0.send[0].forwarded);
  WM_CHECK_INT_EQ(s1.n_outputs, 1);
  WM_CHECK_STR_EQ(s1.outputs[0].name, "logits");
  WM_CHECK(count_op(s1.graph, "Transpose") == 1 && logits >= 0);
  wm_pp_stage_deinit(&s0);
  wm_pp_stage_deinit(&s1);
  // Micro-batches that do not divide the batch.
  wm_status_t st = wm_pp_partition(g, stage, 2, 1, 3, &s1);
  WM_CHECK(st && strstr(wm_status_message(st), "does not divide"));
  wm_status_free(st);
  // Stages against the graph's order.
  for (size_t i = 0; i < g->node_count; i++) {
    stage[order[i]] = i == 0 ? 1 : 0;
  }
  st = wm_pp_partition(g, stage, 2, 0, 1, &s0);
  WM_CHECK(st && strstr(wm_status_message(st), "topological order"));
  wm_status_free(st);
  free(stage);
  free(order);
  wm_graph_destroy(g);
}

// AllGather of a value split along axis 1 in 2 segments over 2 ranks:
// rank r holds, of each row, columns [s*4 + r*2, s*4 + r*2 + 2) for s = 0, 1.
typedef struct gather_job {
  const char *id;
  int32_t rank;
  float got[16];
  wm_status_t status;
} gather_job_t;

static void *gather_rank(void *p) {
  gather_job_t *j = p;
  wm_graph_t *g = NULL;
  wm_comm_t *c = NULL;
  wm_backend_t *ref = NULL;
  wm_session_t *sess = NULL;
  wm_tensor_t *x = NULL, *y = NULL;
  int64_t dims[] = {2, 4};
  wm_shape_t sh = wm_shape_make(2, dims);
  wm_type_t t = wm_type_tensor(WM_DTYPE_FLOAT, &sh);
  const char *in[] = {"x"}, *out[] = {"y"};
  int32_t node = -1;
  wm_status_t s = wm_graph_create("gather", NULL, &g);
  if (!s) {
    s = wm_graph_set_opset(g, "", 17);
  }
  if (!s) {
    s = wm_graph_set_opset(g, "wmap", 1);
  }
  if (!s) {
    s = wm_graph_add_input(g, "x", &t, NULL);
  }
  if (!s) {
    s = wm_graph_add_node(g, "AllGather", "wmap", "g", in, 1, out, 1, &node);
  }
  if (!s) {
    s = wm_graph_add_attr_int(g, node, "axis", 1);
  }
  if (!s) {
    s = wm_graph_add_attr_int(g, node, "segments", 2);
  }
  if (!s) {
    s = wm_graph_add_attr_int(g, node, "ranks", 2);
  }
  if (!s) {
    s = wm_graph_add_output(g, "y", NULL, NULL);
  }
  if (!s) {
    s = wm_tensor_create(WM_DTYPE_FLOAT, &sh, &x);
  }
  for (size_t row = 0; !s && row < 2; row++) {
    for (size_t k = 0; k < 4; k++) {  // the global column it stands for
      size_t seg = k / 2, col = seg * 4 + (size_t)j->rank * 2 + k % 2;
      ((float *)x->data)[row * 4 + k] = (float)(row * 8 + col);
    }
  }
  if (!s) {
    s = wm_comm_open(j->id, j->rank, 2, &c);
  }
  if (!s) {
    wm_comm_set_current(c);
    s = wm_backend_create(wm_ref_plugin_query, "built-in", &ref);
  }
  if (!s) {
    s = wm_session_create(g, ref, &sess);
  }
  if (!s) {
    const char *names[] = {"x"};
    const wm_tensor_t *ins[] = {x};
    s = wm_session_run(sess, names, ins, 1, &y);
  }
  if (!s) {
    memcpy(j->got, y->data, sizeof(j->got));
  }
  j->status = s;
  if (s && c) {
    wm_comm_abort(c);
  }
  wm_tensor_destroy(x);
  wm_tensor_destroy(y);
  wm_session_destroy(sess);
  wm_backend_destroy(ref);
  wm_comm_destroy(c);
  wm_graph_destroy(g);
  return NULL;
}

WM_TEST(all_gather_puts_each_ranks_segments_in_place) {
  char id[WM_COMM_ID_MAX];
  wm_comm_new_id(id);
  gather_job_t jobs[2] = {{.id = id, .rank = 0}, {.id = id, .rank = 1}};
  pthread_t th[2];
  for (int r = 0; r < 2; r++) {
    pthread_create(&th[r], NULL, gather_rank, &jobs[r]);
  }
  for (int r = 0; r < 2; r++) {
    pthread_join(th[r], NULL);
  }
  for (int r = 0; r < 2; r++) {
    if (jobs[r].status) {
      wm_test_fail(__FILE__, __LINE__, "rank %d: %s", r,
                   wm_status_message(jobs[r].status));
      wm_status_free(jobs[r].status);
      continue;
    }
    for (int i = 0; i < 16; i++) {
      WM_CHECK_DBL_NEAR(jobs[r].got[i], i, 0);  // row-major 0..15
    }
  }
}

int main(void) {
  wm_log_set_level(WM_LOG_ERROR);
  static const wm_test_case_t cases[] = {
      WM_CASE(gpt2_partition_splits_attention_and_mlp_as_megatron_does),
      WM_CASE(every_ranks_partition_together_give_the_whole_outputs),
      WM_CASE(bad_arguments_and_unknown_shapes_are_refused),
      WM_CASE(
          a_partition_outside_a_parallel_run_names_its_missing_communicator),
      WM_CASE(pipeline_stages_send_what_crosses_and_recompute_constants),
      WM_CASE(all_gather_puts_each_ranks_segments_in_place),
      {NULL, NULL}};
  return wm_test_main(cases);
}
