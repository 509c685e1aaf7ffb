// Tests of the parallel plan: the --parallel parser, Megatron pairing on
// BERT and ResNet-18, the data-parallel gradient AllReduce, pipeline
// stages with their P2P transfers and bubble, and the ring costs.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"
#include "wm_test.h"
#include "wmap/map.h"
#include "wmap/zoo.h"

// ------------------------------------------------------------- parsing

WM_TEST(parse_fills_defaults) {
  wm_map_parallel_t p;
  WM_CHECK_OK(wm_map_parse_parallel("dp=2,tp=4,pp=3", &p));
  WM_CHECK_INT_EQ(p.dp, 2);
  WM_CHECK_INT_EQ(p.tp, 4);
  WM_CHECK_INT_EQ(p.pp, 3);
  WM_CHECK_INT_EQ(p.microbatches, 3);
  WM_CHECK(!p.inference);
  WM_CHECK_DBL_NEAR(p.link_gbs, 0, 0);
  WM_CHECK_INT_EQ(p.grad_bytes, 4);
  WM_CHECK_OK(wm_map_parse_parallel("tp=2", &p));
  WM_CHECK_INT_EQ(p.dp, 1);
  WM_CHECK_INT_EQ(p.pp, 1);
  WM_CHECK_INT_EQ(p.microbatches, 1);
}

WM_TEST(parse_reads_every_key) {
  wm_map_parallel_t p;
  WM_CHECK_OK(wm_map_parse_parallel(
      " dp=8, tp = 2 ,m=16,inference=1,link=25.5,grad_bytes=2,pp=4", &p));
  WM_CHECK_INT_EQ(p.dp, 8);
  WM_CHECK_INT_EQ(p.tp, 2);
  WM_CHECK_INT_EQ(p.pp, 4);
  WM_CHECK_INT_EQ(p.microbatches, 16);
  WM_CHECK(p.inference);
  WM_CHECK_DBL_NEAR(p.link_gbs, 25.5, 1e-12);
  WM_CHECK_INT_EQ(p.grad_bytes, 2);
  WM_CHECK_OK(wm_map_parse_parallel("microbatches=5,inference=0", &p));
  WM_CHECK_INT_EQ(p.microbatches, 5);
  WM_CHECK(!p.inference);
}

WM_TEST(parse_rejects_bad_specs_naming_key_and_value) {
  static const struct {
    const char *text;
    const char *needle;
  } bad[] = {
      {"", "empty"},
      {"   ", "empty"},
      {"dp=2,,tp=2", "empty item"},
      {"dp=2,", "empty item"},
      {"xx=1", "unknown key \"xx\" (known: dp, tp, pp, microbatches"},
      {"dp", "\"dp\" has no '='"},
      {"dp=two", "dp=\"two\" is not an integer"},
      {"tp=2.5", "tp=\"2.5\" is not an integer"},
      {"pp=", "pp=\"\" is not an integer"},
      {"tp=0", "tp=0 is out of range (1..65536)"},
      {"pp=65537", "pp=65537 is out of range"},
      {"dp=99999999999999999999", "dp=99999999999999999999 is out of range"},
      {"m=0", "m=0 is out of range"},
      {"microbatches=-3", "microbatches=-3 is out of range"},
      {"dp=2,dp=3", "key \"dp\" given twice"},
      {"microbatches=2,m=3", "key \"m\" given twice"},
      {"inference=2", "inference=2 is out of range"},
      {"inference=yes", "inference=\"yes\" is not an integer"},
      {"link=0", "link=0 is out of range"},
      {"link=-5", "link=-5 is out of range"},
      {"link=fast", "link=\"fast\" is not a number"},
      {"link=inf", "link=inf is out of range"},
      {"grad_bytes=9", "grad_bytes=9 is out of range (1..8)"},
      {"grad_bytes=0", "grad_bytes=0 is out of range"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    wm_map_parallel_t p;
    WM_CHECK_ERR(wm_map_parse_parallel(bad[i].text, &p), INVALID_ARGUMENT,
                 bad[i].needle);
  }
  wm_map_parallel_t p;
  WM_CHECK_ERR(wm_map_parse_parallel(NULL, &p), INVALID_ARGUMENT, "empty");
}

// ------------------------------------------------------------ fixtures

// Peaks for the built-in ref backend: 100 GFLOP/s and |bw| GB/s.
static void ref_peaks(wm_peaks_t *p, double bw) {
  memset(p, 0, sizeof(*p));
  wm_machine_get(&p->machine);
  p->threads = 1;
  p->fma_fp32[0] = p->fma_fp32[1] = 100;
  p->triad_gbs[0] = p->triad_gbs[1] = bw;
  p->n_backends = 1;
  snprintf(p->backends[0].name, sizeof(p->backends[0].name), "ref");
  p->backends[0].host = true;
}

// Builds zoo model |spec| and maps it on ref with the plan |parallel|
// (NULL = none) at |bw| GB/s; the caller destroys both.
static wm_status_t map_zoo(const char *spec, const char *parallel, double bw,
                           wm_graph_t **out_graph, wm_map_t **out_map) {
  *out_graph = NULL;
  *out_map = NULL;
  wm_map_parallel_t par;
  if (parallel) {
    WM_RETURN_IF_ERROR(wm_map_parse_parallel(parallel, &par));
  }
  wm_backend_t *be = NULL;
  WM_RETURN_IF_ERROR(wm_backend_create(wm_ref_plugin_query, "built-in", &be));
  wm_status_t s = wm_zoo_build(spec, out_graph);
  if (!s) {
    wm_peaks_t peaks;
    ref_peaks(&peaks, bw);
    wm_map_options_t o;
    memset(&o, 0, sizeof(o));
    o.model = spec;
    o.backends = &be;
    o.backend_count = 1;
    o.peaks = &peaks;
    o.parallel = parallel ? &par : NULL;
    s = wm_map_build(*out_graph, &o, out_map);
  }
  wm_backend_destroy(be);
  if (s) {
    wm_graph_destroy(*out_graph);
    *out_graph = NULL;
  }
  return s;
}

static size_t count_coll(const wm_map_t *m, uint32_t kind, const char *why) {
  size_t n = 0;
  for (size_t i = 0; i < m->plan.n_coll; i++) {
    const wm_map_collective_t *c = &m->plan.coll[i];
    n += c->kind == kind && (!why || strstr(c->why, why));
  }
  return n;
}

static const wm_map_node_t *find_node(const wm_map_t *m, const char *name) {
  for (size_t i = 0; i < m->n_nodes; i++) {
    if (strcmp(m->nodes[i].name, name) == 0) {
      return &m->nodes[i];
    }
  }
  return NULL;
}

static bool has_note(const wm_map_t *m, const char *prefix) {
  for (size_t i = 0; i < m->n_notes; i++) {
    if (strncmp(m->notes[i], prefix, strlen(prefix)) == 0) {
      return true;
    }
  }
  return false;
}

// ----------------------------------------------- tensor parallelism

#define BERT "bert-base:layers=2,seq=32"
#define BERT_S (1 * 32 * 768 * 4)

static void check_bert_tp2_inference(const wm_map_t *m, const wm_map_t *m0) {
  WM_CHECK(m->plan.enabled);
  WM_CHECK_DBL_NEAR(m->plan.link_gbs, 10, 0);
  WM_CHECK_INT_EQ(count_coll(m, WM_COLL_ALL_REDUCE, NULL), 4);
  // The pooler's column-parallel MatMul leaves pooler_output sharded.
  WM_CHECK_INT_EQ(count_coll(m, WM_COLL_ALL_GATHER, NULL), 1);
  WM_CHECK_INT_EQ(m->plan.n_coll, 5);
  double t_ar = 2.0 * 0.5 * BERT_S / 10e9;
  size_t layer = 0;
  for (size_t i = 0; i < m->plan.n_coll; i++) {
    const wm_map_collective_t *c = &m->plan.coll[i];
    WM_CHECK_INT_EQ(c->ranks, 2);
    WM_CHECK_DBL_NEAR(c->per_forward, 1, 0);
    WM_CHECK_DBL_NEAR(c->per_step, 1, 0);
    WM_CHECK(c->node >= 0 && (size_t)c->node < m->n_nodes);
    const wm_map_node_t *n = &m->nodes[c->node];
    if (c->kind == WM_COLL_ALL_GATHER) {
      WM_CHECK_STR_EQ(c->tensor, "pooler_output");
      WM_CHECK_INT_EQ(c->bytes, 768 * 4);
      WM_CHECK_STR_EQ(n->op_type, "Tanh");
      continue;
    }
    WM_CHECK_INT_EQ(c->bytes, BERT_S);
    WM_CHECK_STR_EQ(n->op_type, "MatMul");
    WM_CHECK(n->sharded);
    char want[96];
    snprintf(want, sizeof(want), "encoder.layer.%zu.%s.matmul", layer / 2,
             layer % 2 ? "output.dense" : "attention.output.dense");
    WM_CHECK_STR_EQ(n->name, want);
    WM_CHECK_STR_EQ(c->tensor, want);
    layer++;
    WM_CHECK_DBL_NEAR(c->wire_bytes, BERT_S, 1e-6);
    WM_CHECK_DBL_NEAR(c->t_call, t_ar, 1e-15);
    WM_CHECK_DBL_NEAR(n->cells[0].t_comm, t_ar, 1e-15);
  }
  WM_CHECK_DBL_NEAR(m->plan.wire_bytes, 4.0 * BERT_S + 0.5 * 3072, 1e-6);
  WM_CHECK_DBL_NEAR(m->plan.t_comm, m->plan.wire_bytes / 10e9, 1e-15);
  // Column- and row-parallel projections and the attention between them
  // run on half the work; LayerNorm and the embeddings stay whole.
  WM_CHECK_INT_EQ(m->n_nodes, m0->n_nodes);
  size_t sharded_matmuls = 0;
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_map_node_t *n = &m->nodes[i];
    const wm_map_node_t *n0 = &m0->nodes[i];
    WM_CHECK_STR_EQ(n->name, n0->name);
    if (strcmp(n->op_type, "LayerNormalization") == 0 ||
        strcmp(n->op_type, "Gather") == 0) {
      WM_CHECK(!n->sharded);
    }
    if (n->sharded) {
      sharded_matmuls += strcmp(n->op_type, "MatMul") == 0;
      WM_CHECK_DBL_NEAR(n->cells[0].t_comp, n0->cells[0].t_comp / 2,
                        1e-12 * n0->cells[0].t_comp);
      WM_CHECK_DBL_NEAR(n->cells[0].t_mem, n0->cells[0].t_mem / 2,
                        1e-12 * n0->cells[0].t_mem);
    } else {
      WM_CHECK_DBL_NEAR(n->cells[0].t_comp, n0->cells[0].t_comp, 0);
    }
  }
  // 6 projections and 2 attention MatMuls per layer, plus the pooler.
  WM_CHECK_INT_EQ(sharded_matmuls, 2 * 8 + 1);
  const wm_map_node_t *q =
      find_node(m, "encoder.layer.1.attention.self.query.matmul");
  WM_CHECK(q && q->sharded && q->cells[0].t_comm == 0);
  WM_CHECK(has_note(m, "parallel plan dp=1 tp=2 pp=1"));
}

WM_TEST(bert_tp2_inference_two_allreduces_per_layer) {
  wm_graph_t *g = NULL, *g0 = NULL;
  wm_map_t *m = NULL, *m0 = NULL;
  WM_CHECK_OK(map_zoo(BERT, "tp=2,inference=1,link=10", 20, &g, &m));
  wm_status_t s = map_zoo(BERT, NULL, 20, &g0, &m0);
  if (!s) {
    check_bert_tp2_inference(m, m0);
  }
  wm_map_destroy(m);
  wm_map_destroy(m0);
  wm_graph_destroy(g);
  wm_graph_destroy(g0);
  WM_CHECK_OK(s);
}

// Runs |check| on the map of |spec| under |parallel| at |bw| GB/s.
static void with_map(const char *spec, const char *parallel, double bw,
                     void (*check)(const wm_map_t *m, const wm_graph_t *g)) {
  wm_graph_t *g = NULL;
  wm_map_t *m = NULL;
  WM_CHECK_OK(map_zoo(spec, parallel, bw, &g, &m));
  check(m, g);
  wm_map_destroy(m);
  wm_graph_destroy(g);
}

static void check_bert_tp2_training(const wm_map_t *m, const wm_graph_t *g) {
  (void)g;
  WM_CHECK_INT_EQ(m->plan.n_coll, 5);
  WM_CHECK_INT_EQ(count_coll(m, WM_COLL_ALL_REDUCE, "row-parallel MatMul"), 4);
  WM_CHECK_INT_EQ(count_coll(m, WM_COLL_ALL_GATHER, "graph output"), 1);
  for (size_t i = 0; i < m->plan.n_coll; i++) {
    WM_CHECK_DBL_NEAR(m->plan.coll[i].per_forward, 1, 0);
    WM_CHECK_DBL_NEAR(m->plan.coll[i].per_step, 2, 0);
  }
  WM_CHECK_DBL_NEAR(m->plan.wire_bytes, 2 * (4.0 * BERT_S + 0.5 * 3072), 1e-6);
  WM_CHECK_DBL_NEAR(m->plan.t_comm, m->plan.wire_bytes / 10e9, 1e-15);
  // t_comm of a cell stays per forward.
  const wm_map_node_t *n = find_node(m, "encoder.layer.0.output.dense.matmul");
  WM_CHECK(n != NULL);
  WM_CHECK_DBL_NEAR(n->cells[0].t_comm, BERT_S / 10e9, 1e-15);
}

WM_TEST(bert_tp2_training_doubles_per_step) {
  with_map(BERT, "tp=2,link=10", 20, check_bert_tp2_training);
}

// ResNet-18 at tp=2: the stem conv is column-parallel; in every basic
// block conv1 reads a sharded input (row-parallel, AllReduce) and conv2 a
// replicated one (column-parallel); the three downsample convs read the
// sharded block input (row) and the classifier Gemm the sharded pooled
// features (row). 12 AllReduces, 9 column-parallel convs, no AllGather.
static bool all_reduced(const wm_map_t *m, const wm_map_node_t *n) {
  for (size_t i = 0; n && i < m->plan.n_coll; i++) {
    if (m->plan.coll[i].node == n - m->nodes &&
        m->plan.coll[i].kind == WM_COLL_ALL_REDUCE) {
      return true;
    }
  }
  return false;
}

static void check_resnet18_tp2(const wm_map_t *m, const wm_graph_t *g) {
  (void)g;
  WM_CHECK_INT_EQ(m->plan.n_coll, 12);
  WM_CHECK_INT_EQ(count_coll(m, WM_COLL_ALL_REDUCE, "row-parallel Conv"), 11);
  WM_CHECK_INT_EQ(count_coll(m, WM_COLL_ALL_REDUCE, "row-parallel Gemm"), 1);
  WM_CHECK_INT_EQ(count_coll(m, WM_COLL_ALL_GATHER, NULL), 0);
  size_t column = 0, row = 0;
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_map_node_t *n = &m->nodes[i];
    if (strcmp(n->op_type, "Conv") == 0) {
      WM_CHECK(n->sharded);
      column += !all_reduced(m, n);
      row += all_reduced(m, n);
    }
  }
  WM_CHECK_INT_EQ(column, 9);
  WM_CHECK_INT_EQ(row, 11);
  const wm_map_node_t *stem = find_node(m, "conv1");
  WM_CHECK(stem && stem->sharded && !all_reduced(m, stem));
  WM_CHECK(all_reduced(m, find_node(m, "fc")));
  for (int l = 1; l <= 4; l++) {
    for (int b = 0; b < 2; b++) {
      char name[64];
      snprintf(name, sizeof(name), "layer%d.%d.conv1", l, b);
      const wm_map_node_t *c1 = find_node(m, name);
      snprintf(name, sizeof(name), "layer%d.%d.conv2", l, b);
      const wm_map_node_t *c2 = find_node(m, name);
      WM_CHECK(c1 && c2);
      WM_CHECK(all_reduced(m, c1));
      WM_CHECK(!all_reduced(m, c2));
    }
  }
  // S of layer1's AllReduce: the [1,64,56,56] float output.
  WM_CHECK_INT_EQ(m->plan.coll[0].bytes, 64 * 56 * 56 * 4);
}

WM_TEST(resnet18_tp2_alternates_row_and_column) {
  with_map("resnet18", "tp=2,inference=1", 20, check_resnet18_tp2);
}

// ------------------------------------------------------ data parallel

static void check_mlp_dp4(const wm_map_t *m, const wm_graph_t *g) {
  uint64_t params = wm_graph_param_count(g);
  WM_CHECK_INT_EQ(m->totals.params, (int64_t)params);
  WM_CHECK_INT_EQ(m->plan.n_coll, 1);
  const wm_map_collective_t *c = &m->plan.coll[0];
  WM_CHECK_INT_EQ(c->kind, WM_COLL_ALL_REDUCE);
  WM_CHECK_INT_EQ(c->ranks, 4);
  WM_CHECK_INT_EQ(c->node, -1);
  WM_CHECK_STR_EQ(c->tensor, "");
  WM_CHECK_INT_EQ(c->bytes, params * 4);
  WM_CHECK_DBL_NEAR(c->per_forward, 0, 0);
  WM_CHECK_DBL_NEAR(c->per_step, 1, 0);
  WM_CHECK_DBL_NEAR(c->wire_bytes, 2.0 * 3 / 4 * (double)(params * 4), 1e-6);
  WM_CHECK_DBL_NEAR(m->plan.wire_bytes, c->wire_bytes, 1e-6);
  // No link given: the backend's bandwidth.
  WM_CHECK(m->plan.link_gbs > 0);
  WM_CHECK_DBL_NEAR(m->plan.link_gbs, m->backends[0].bandwidth_gbs, 0);
  WM_CHECK_DBL_NEAR(m->plan.t_comm, c->wire_bytes / (m->plan.link_gbs * 1e9),
                    1e-15);
  // Gradients belong to no node.
  for (size_t i = 0; i < m->n_nodes; i++) {
    WM_CHECK_DBL_NEAR(m->nodes[i].cells[0].t_comm, 0, 0);
    WM_CHECK(!m->nodes[i].sharded);
  }
}

WM_TEST(mlp_dp4_training_allreduces_gradients_once) {
  with_map("mlp", "dp=4", 20, check_mlp_dp4);
}

static void check_gathered_outputs(const wm_map_t *m, const wm_graph_t *g) {
  (void)g;
  WM_CHECK_INT_EQ(m->plan.n_coll, 1);  // no gradients: only the logits
  const wm_map_collective_t *k = &m->plan.coll[0];
  WM_CHECK_INT_EQ(k->kind, WM_COLL_ALL_GATHER);
  WM_CHECK_STR_EQ(k->tensor, "logits");
  WM_CHECK_INT_EQ(k->bytes, 4 * 1 * 10 * 4);  // dp x batch 1 x 10 floats
  WM_CHECK_DBL_NEAR(k->per_forward, 1, 0);
  WM_CHECK(has_note(m, "parallel plan dp=4"));
  WM_CHECK(has_note(m,
                    "parallel plan dp=4 tp=1 pp=1 microbatches=1, "
                    "inference: the graph is one micro-batch forward on "
                    "one data-parallel rank; inference: each "
                    "data-parallel rank's outputs gathered"));
}

WM_TEST(mlp_dp4_inference_gathers_each_ranks_outputs) {
  with_map("mlp", "dp=4,inference=1,grad_bytes=2", 20, check_gathered_outputs);
}

static void check_grad_bytes(const wm_map_t *m, const wm_graph_t *g) {
  uint64_t params = wm_graph_param_count(g);
  WM_CHECK_INT_EQ(m->plan.n_coll, 1);
  WM_CHECK_INT_EQ(m->plan.coll[0].bytes, params * 2);
  WM_CHECK_DBL_NEAR(m->plan.wire_bytes, (double)params * 2, 1e-6);
}

WM_TEST(grad_bytes_scale_the_gradient_buffer) {
  with_map("mlp", "dp=2,grad_bytes=2", 20, check_grad_bytes);
}

static void check_no_bandwidth(const wm_map_t *m, const wm_graph_t *g) {
  (void)g;
  WM_CHECK_INT_EQ(m->plan.n_coll, 1);
  WM_CHECK_DBL_NEAR(m->plan.link_gbs, 0, 0);
  WM_CHECK_DBL_NEAR(m->plan.t_comm, 0, 0);
  WM_CHECK_DBL_NEAR(m->plan.coll[0].t_call, 0, 0);
  WM_CHECK(m->plan.wire_bytes > 0);
  WM_CHECK(has_note(m, "no link bandwidth: communication time unknown"));
}

WM_TEST(no_bandwidth_leaves_time_unknown_with_a_note) {
  with_map("mlp", "dp=2", 0, check_no_bandwidth);
}

// --------------------------------------------------------- pipeline

// Checks stages are contiguous, cover 0..pp-1 and are non-empty; returns
// the P2P transfers the stages imply: one per value per boundary crossed.
static bool stages_ok(const wm_map_t *m, const wm_graph_t *g, int32_t pp,
                      size_t *out_p2p) {
  *out_p2p = 0;
  if (m->n_nodes == 0 || m->nodes[0].stage != 0 ||
      m->nodes[m->n_nodes - 1].stage != pp - 1) {
    return false;
  }
  for (size_t i = 1; i < m->n_nodes; i++) {
    int32_t d = m->nodes[i].stage - m->nodes[i - 1].stage;
    if (d != 0 && d != 1) {
      return false;
    }
  }
  int32_t *last = calloc(g->value_count, sizeof(*last));
  int32_t *first = calloc(g->value_count, sizeof(*first));
  if (!last || !first) {
    free(last);
    free(first);
    return false;
  }
  for (size_t v = 0; v < g->value_count; v++) {
    last[v] = first[v] = -1;
  }
  for (size_t i = 0; i < m->n_nodes; i++) {
    const wm_node_t *n = &g->nodes[m->nodes[i].index];
    for (int32_t k = 0; k < n->input_count; k++) {
      int32_t v = n->inputs[k];
      if (v >= 0 && last[v] < m->nodes[i].stage) {
        last[v] = m->nodes[i].stage;
      }
    }
    for (int32_t k = 0; k < n->output_count; k++) {
      if (n->outputs[k] >= 0) {
        first[n->outputs[k]] = m->nodes[i].stage;
      }
    }
  }
  for (size_t v = 0; v < g->value_count; v++) {
    if (first[v] >= 0 && last[v] > first[v]) {
      *out_p2p += (size_t)(last[v] - first[v]);
    }
  }
  free(last);
  free(first);
  return true;
}

static void check_mlp_pp2(const wm_map_t *m, const wm_graph_t *g) {
  size_t want = 0;
  WM_CHECK(stages_ok(m, g, 2, &want));
  WM_CHECK_INT_EQ(want, 1);
  WM_CHECK_INT_EQ(m->plan.n_coll, 1);
  WM_CHECK_INT_EQ(count_coll(m, WM_MAP_P2P, "pipeline: stage 0 -> 1"), 1);
  WM_CHECK_DBL_NEAR(m->plan.bubble, 1.0 / 5, 1e-12);
  WM_CHECK_DBL_NEAR(m->plan.bubble_ideal, 1.0 / 4, 1e-12);
  const wm_map_collective_t *c = &m->plan.coll[0];
  int32_t v = wm_graph_find_value(g, c->tensor);
  WM_CHECK(v >= 0);
  const wm_shape_t *shape = &g->values[v].type.shape;
  WM_CHECK_INT_EQ(shape->rank, 2);
  uint64_t bytes = (uint64_t)shape->dims[0] * (uint64_t)shape->dims[1] * 4;
  WM_CHECK_INT_EQ(c->kind, WM_MAP_P2P);
  WM_CHECK_INT_EQ(c->ranks, 2);
  WM_CHECK_DBL_NEAR(c->per_forward, 1, 0);
  WM_CHECK_DBL_NEAR(c->per_step, 8, 0);  // 4 micro-batches, fwd + bwd
  WM_CHECK_INT_EQ(c->bytes, bytes);
  WM_CHECK_DBL_NEAR(c->wire_bytes, 8.0 * (double)bytes, 1e-6);
  WM_CHECK_DBL_NEAR(c->t_call, (double)bytes / 10e9, 1e-15);
  WM_CHECK(c->node >= 0 && m->nodes[c->node].stage == 0);
  WM_CHECK_DBL_NEAR(m->nodes[c->node].cells[0].t_comm, (double)bytes / 10e9,
                    1e-15);
  double t_roof = 0;
  for (size_t i = 0; i < m->n_nodes; i++) {
    t_roof += m->nodes[i].cells[0].t_roof;
  }
  const double *sf = m->plan.stage_flops, *st = m->plan.stage_t_roof;
  WM_CHECK(sf && st);
  WM_CHECK(sf[0] > 0 && sf[1] > 0);
  WM_CHECK_DBL_NEAR(sf[0] + sf[1], m->totals.flops, 1e-6 * m->totals.flops);
  WM_CHECK(st[0] > 0 && st[1] > 0);
  WM_CHECK_DBL_NEAR(st[0] + st[1], t_roof, 1e-9 * t_roof);
}

WM_TEST(mlp_pp2_m4_splits_stages_and_sends_one_tensor) {
  with_map("mlp", "pp=2,m=4,link=10", 20, check_mlp_pp2);
}

static void check_bert_pp2(const wm_map_t *m, const wm_graph_t *g) {
  size_t want = 0;
  WM_CHECK(stages_ok(m, g, 2, &want));
  WM_CHECK(want >= 1);
  WM_CHECK_INT_EQ(count_coll(m, WM_MAP_P2P, NULL), want);
  WM_CHECK_INT_EQ(m->plan.n_coll, want);
  for (size_t i = 0; i < m->plan.n_coll; i++) {
    const wm_map_collective_t *c = &m->plan.coll[i];
    WM_CHECK_DBL_NEAR(c->per_step, 8, 0);
    WM_CHECK(c->bytes > 0);
    WM_CHECK(c->node >= 0 && m->nodes[c->node].stage == 0);
  }
  // Balanced: neither stage takes more than 3/4 of the time.
  const double *st = m->plan.stage_t_roof;
  WM_CHECK(st[0] < 3 * st[1] && st[1] < 3 * st[0]);
}

WM_TEST(bert_pp2_sends_every_crossing_tensor) {
  with_map(BERT, "pp=2,m=4", 20, check_bert_pp2);
}

// tp=2 and pp=2 together: a sharded value crossing a stage boundary is
// sent as its 1/tp slice.
static void check_mlp_tp2_pp2(const wm_map_t *m, const wm_graph_t *g) {
  size_t want = 0;
  WM_CHECK(stages_ok(m, g, 2, &want));
  size_t p2p = 0;
  for (size_t i = 0; i < m->plan.n_coll; i++) {
    const wm_map_collective_t *c = &m->plan.coll[i];
    if (c->kind != WM_MAP_P2P) {
      continue;
    }
    p2p++;
    int32_t v = wm_graph_find_value(g, c->tensor);
    WM_CHECK(v >= 0);
    const wm_shape_t *shape = &g->values[v].type.shape;
    uint64_t full = (uint64_t)shape->dims[0] * (uint64_t)shape->dims[1] * 4;
    // fc0 and relu0 are sharded, fc1 is row-parallel, relu1 replicated.
    bool sharded =
        strcmp(c->tensor, "fc0") == 0 || strcmp(c->tensor, "relu0") == 0;
    WM_CHECK_INT_EQ(c->bytes, sharded ? full / 2 : full);
  }
  WM_CHECK_INT_EQ(p2p, want);
}

WM_TEST(tp_and_pp_send_sharded_slices) {
  with_map("mlp", "tp=2,pp=2,m=2", 20, check_mlp_tp2_pp2);
}

WM_TEST(pp_beyond_node_count_is_rejected) {
  wm_graph_t *g = NULL;
  wm_map_t *m = NULL;
  wm_status_t s = map_zoo("mlp:layers=2", "pp=6", 20, &g, &m);
  wm_map_destroy(m);
  wm_graph_destroy(g);
  WM_CHECK(s != NULL);
  bool names = strstr(wm_status_message(s), "pp=6") &&
               strstr(wm_status_message(s), "5 nodes");
  wm_status_code_t code = wm_status_code(s);
  if (!names) {
    fprintf(stderr, "message: %s\n", wm_status_message(s));
  }
  wm_status_free(s);
  WM_CHECK_INT_EQ(code, WM_STATUS_INVALID_ARGUMENT);
  WM_CHECK(names);
}

// Every allocation the build makes may fail: each failure is a status,
// never a crash or a leak, and the build succeeds once none fails.
WM_TEST(allocation_failures_are_statuses) {
  wm_graph_t *g = NULL;
  wm_backend_t *be = NULL;
  wm_map_parallel_t par;
  WM_CHECK_OK(wm_map_parse_parallel("dp=2,tp=2,pp=2,m=4,link=10", &par));
  WM_CHECK_OK(wm_zoo_build("mlp", &g));
  wm_status_t s = wm_backend_create(wm_ref_plugin_query, "built-in", &be);
  wm_peaks_t peaks;
  ref_peaks(&peaks, 20);
  wm_map_options_t o;
  memset(&o, 0, sizeof(o));
  o.backends = &be;
  o.backend_count = 1;
  o.peaks = &peaks;
  o.parallel = &par;
  bool built = false, codes_ok = true;
  for (int64_t n = 1; !s && !built && n < 100000; n++) {
    wm_map_t *m = NULL;
    wm_alloc_fail_after(n);
    wm_status_t e = wm_map_build(g, &o, &m);
    wm_alloc_fail_after(0);
    built = e == NULL;
    codes_ok = codes_ok &&
               (built || wm_status_code(e) == WM_STATUS_RESOURCE_EXHAUSTED);
    built = built && m->plan.n_coll > 0;
    wm_status_free(e);
    wm_map_destroy(m);
  }
  wm_backend_destroy(be);
  wm_graph_destroy(g);
  WM_CHECK_OK(s);
  WM_CHECK(codes_ok);
  WM_CHECK(built);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(parse_fills_defaults),
      WM_CASE(parse_reads_every_key),
      WM_CASE(parse_rejects_bad_specs_naming_key_and_value),
      WM_CASE(bert_tp2_inference_two_allreduces_per_layer),
      WM_CASE(bert_tp2_training_doubles_per_step),
      WM_CASE(resnet18_tp2_alternates_row_and_column),
      WM_CASE(mlp_dp4_training_allreduces_gradients_once),
      WM_CASE(mlp_dp4_inference_gathers_each_ranks_outputs),
      WM_CASE(grad_bytes_scale_the_gradient_buffer),
      WM_CASE(no_bandwidth_leaves_time_unknown_with_a_note),
      WM_CASE(mlp_pp2_m4_splits_stages_and_sends_one_tensor),
      WM_CASE(bert_pp2_sends_every_crossing_tensor),
      WM_CASE(tp_and_pp_send_sharded_slices),
      WM_CASE(pp_beyond_node_count_is_rejected),
      WM_CASE(allocation_failures_are_statuses),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
