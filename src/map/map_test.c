// Tests of wm_map_build: published figures of the zoo, unmappable nodes,
// dim bindings, memory liveness and the critical path on hand-checked
// graphs.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../tests/testing/wm_test.h"
#include "internal.h"
#include "ref.h"
#include "wmap/plugin.h"
#include "wmap/zoo.h"

// Peaks with round numbers: ref is a host backend without a measured
// GEMM, so the map uses the host FMA peak and triad at all cores.
static void round_peaks(wm_peaks_t *p, double gflops, double gbs) {
  memset(p, 0, sizeof(*p));
  snprintf(p->machine.model, sizeof(p->machine.model), "test machine");
  snprintf(p->machine.fingerprint, sizeof(p->machine.fingerprint), "0");
  p->threads = 2;
  p->fma_fp32[0] = p->fma_fp32[1] = gflops;
  p->triad_gbs[0] = p->triad_gbs[1] = gbs;
  p->n_backends = 1;
  snprintf(p->backends[0].name, sizeof(p->backends[0].name), "ref");
  p->backends[0].host = true;
}

typedef struct fixture {
  wm_backend_t *ref;
  wm_peaks_t peaks;
  wm_map_options_t opts;
} fixture_t;

static void fixture_init(fixture_t *f, double gflops, double gbs) {
  memset(f, 0, sizeof(*f));
  WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &f->ref));
  round_peaks(&f->peaks, gflops, gbs);
  f->opts.model = "test";
  f->opts.backends = &f->ref;
  f->opts.backend_count = 1;
  f->opts.fallback = f->ref;
  f->opts.peaks = &f->peaks;
}

static const wm_map_node_t *find_node(const wm_map_t *m, const char *name) {
  for (size_t i = 0; i < m->n_nodes; i++) {
    if (strcmp(m->nodes[i].name, name) == 0) {
      return &m->nodes[i];
    }
  }
  return NULL;
}

static void check_zoo(const char *spec, int64_t params, double gmacs,
                      double tol) {
  fixture_t f;
  fixture_init(&f, 100, 10);
  wm_graph_t *g = NULL;
  wm_map_t *m = NULL;
  WM_CHECK_OK(wm_zoo_build(spec, &g));
  WM_CHECK_OK(wm_map_build(g, &f.opts, &m));
  WM_CHECK_INT_EQ(m->totals.params, params);
  WM_CHECK_DBL_NEAR(m->totals.macs / 1e9, gmacs, gmacs * tol);
  WM_CHECK_INT_EQ(m->totals.unmapped, 0);
  WM_CHECK_INT_EQ(m->n_notes, 0);
  WM_CHECK_INT_EQ(m->backends[0].nodes_covered, m->n_nodes);
  WM_CHECK(m->memory.peak_activation_bytes > 0);
  WM_CHECK(m->critical.length > 0 &&
           m->critical.length <= m->critical.total * (1 + 1e-12));
  // FLOPs are twice the MACs plus the elementwise work.
  WM_CHECK(m->totals.flops >= 2 * m->totals.macs);
  wm_map_destroy(m);
  wm_graph_destroy(g);
  wm_backend_destroy(f.ref);
}

// torchvision's published figures.
WM_TEST(zoo_matches_published_params_and_macs) {
  check_zoo("resnet50", 25557032, 4.09, 0.01);
  check_zoo("resnet18", 11689512, 1.81, 0.01);
  check_zoo("mobilenetv2", 3504872, 0.30, 0.02);
}

static void new_graph(wm_graph_t **g) {
  WM_CHECK_OK(wm_graph_create("g", NULL, g));
  WM_CHECK_OK(wm_graph_set_opset(*g, "", 17));
}

static void add_input(wm_graph_t *g, const char *name, int64_t d0,
                      const char *param, int64_t d1) {
  wm_shape_t shape = {.rank = 2, .dims = {d0, d1}};
  wm_type_t t = wm_type_tensor(WM_DTYPE_FLOAT, &shape);
  t.dim_params[0] = param;
  int32_t id;
  WM_CHECK_OK(wm_graph_add_input(g, name, &t, &id));
}

static void add_node(wm_graph_t *g, const char *op, const char *domain,
                     const char *name, const char *a, const char *b,
                     const char *out) {
  const char *ins[2] = {a, b};
  int32_t node;
  WM_CHECK_OK(
      wm_graph_add_node(g, op, domain, name, ins, b ? 2 : 1, &out, 1, &node));
}

WM_TEST(unknown_op_is_marked_and_the_rest_mapped) {
  fixture_t f;
  fixture_init(&f, 1, 1);
  wm_graph_t *g;
  new_graph(&g);
  WM_CHECK_OK(wm_graph_set_opset(g, "com.example", 1));
  add_input(g, "x", 1, NULL, 8);
  add_node(g, "Relu", "", "first", "x", NULL, "a");
  add_node(g, "FancyOp", "com.example", "fancy", "a", NULL, "b");
  add_node(g, "Relu", "", "after", "b", NULL, "c");
  int32_t id;
  WM_CHECK_OK(wm_graph_add_output(g, "c", NULL, &id));
  wm_map_t *m = NULL;
  WM_CHECK_OK(wm_map_build(g, &f.opts, &m));
  const wm_map_node_t *first = find_node(m, "first");
  const wm_map_node_t *fancy = find_node(m, "fancy");
  const wm_map_node_t *after = find_node(m, "after");
  WM_CHECK(first && fancy && after);
  WM_CHECK_INT_EQ(first->state, WM_MAP_NODE_OK);
  WM_CHECK_DBL_NEAR(first->flops, 8, 0);
  WM_CHECK_INT_EQ(first->cells[0].cover, WM_COVER_NATIVE);
  WM_CHECK_INT_EQ(fancy->state, WM_MAP_NODE_UNKNOWN_OP);
  WM_CHECK(strstr(fancy->note, "FancyOp") != NULL);
  WM_CHECK_INT_EQ(fancy->cells[0].cover, WM_COVER_MISSING);
  WM_CHECK_INT_EQ(fancy->cells[0].reason, WM_WHY_OP);
  // Its output type is unknown, so the reader cannot be costed.
  WM_CHECK_INT_EQ(after->state, WM_MAP_NODE_UNKNOWN_SHAPE);
  WM_CHECK(strstr(after->note, "\"b\"") != NULL);
  WM_CHECK_INT_EQ(m->totals.unmapped, 2);
  WM_CHECK(m->n_notes >= 1 && strstr(m->notes[0], "2 of 3 nodes") != NULL);
  WM_CHECK(strstr(m->notes[0], "fancy") != NULL);
  // The refused operator is the one left to write.
  WM_CHECK(m->backends[0].n_todo >= 1);
  WM_CHECK_STR_EQ(m->backends[0].todo[0].op_type, "FancyOp");
  WM_CHECK_INT_EQ(m->backends[0].count[WM_COVER_MISSING], 2);
  WM_CHECK_INT_EQ(m->backends[0].partitions, 2);
  wm_strbuf_t json;
  wm_strbuf_init(&json);
  wm_map_to_json(m, &json);
  WM_CHECK(strstr(wm_strbuf_str(&json), "\"state\":\"unknown op\"") != NULL);
  wm_strbuf_deinit(&json);
  wm_map_destroy(m);
  wm_graph_destroy(g);
  wm_backend_destroy(f.ref);
}

static void batch_graph(wm_graph_t **out) {
  wm_graph_t *g;
  new_graph(&g);
  *out = g;
  add_input(g, "x", -1, "batch", 8);
  add_node(g, "Relu", "", "r", "x", NULL, "y");
  int32_t id;
  WM_CHECK_OK(wm_graph_add_output(g, "y", NULL, &id));
}

WM_TEST(unbound_dim_is_marked_and_binding_it_maps) {
  fixture_t f;
  fixture_init(&f, 1, 1);
  wm_graph_t *g;
  batch_graph(&g);
  wm_map_t *m = NULL;
  WM_CHECK_OK(wm_map_build(g, &f.opts, &m));
  WM_CHECK_INT_EQ(m->nodes[0].state, WM_MAP_NODE_UNKNOWN_SHAPE);
  WM_CHECK(strstr(m->nodes[0].note, "--dim batch=N") != NULL);
  WM_CHECK_INT_EQ(m->nodes[0].cells[0].cover, WM_COVER_MISSING);
  WM_CHECK_INT_EQ(m->nodes[0].cells[0].reason, WM_WHY_SHAPE);
  wm_map_destroy(m);
  wm_graph_destroy(g);

  batch_graph(&g);
  wm_map_dim_t dim = {"batch", 4};
  f.opts.dims = &dim;
  f.opts.n_dims = 1;
  WM_CHECK_OK(wm_map_build(g, &f.opts, &m));
  WM_CHECK_INT_EQ(m->nodes[0].state, WM_MAP_NODE_OK);
  WM_CHECK_DBL_NEAR(m->nodes[0].flops, 32, 0);
  WM_CHECK_INT_EQ(m->n_dims, 1);
  WM_CHECK_STR_EQ(m->dims[0].name, "batch");
  WM_CHECK_INT_EQ(m->dims[0].value, 4);
  wm_map_destroy(m);
  wm_graph_destroy(g);

  batch_graph(&g);
  wm_map_dim_t wrong = {"seq", 4};
  f.opts.dims = &wrong;
  WM_CHECK_ERR(wm_map_build(g, &f.opts, &m), INVALID_ARGUMENT,
               "no dim named \"seq\" (its symbolic dims: batch)");
  WM_CHECK(m == NULL);
  wm_graph_destroy(g);
  wm_backend_destroy(f.ref);
}

// x -> A=Relu -> B=Relu --------> D=Add(B, C) -> y
//        \-----> C=Add(A, A) --/
// 1000 floats; at 1 GFLOP/s and 1 GB/s every node is memory-bound:
// Relu 8 kB = 8 us, Add 12 kB = 12 us.
WM_TEST(memory_peak_and_critical_path_by_hand) {
  fixture_t f;
  fixture_init(&f, 1, 1);
  wm_graph_t *g;
  new_graph(&g);
  add_input(g, "x", 1, NULL, 1000);
  add_node(g, "Relu", "", "A", "x", NULL, "a");
  add_node(g, "Relu", "", "B", "a", NULL, "b");
  add_node(g, "Add", "", "C", "a", "a", "c");
  add_node(g, "Add", "", "D", "b", "c", "y");
  int32_t id;
  WM_CHECK_OK(wm_graph_add_output(g, "y", NULL, &id));
  wm_map_t *m = NULL;
  WM_CHECK_OK(wm_map_build(g, &f.opts, &m));
  const wm_map_node_t *a = find_node(m, "A"), *b = find_node(m, "B");
  const wm_map_node_t *c = find_node(m, "C"), *d = find_node(m, "D");
  WM_CHECK_DBL_NEAR(a->cells[0].t_roof, 8e-6, 1e-12);
  WM_CHECK_DBL_NEAR(c->cells[0].t_roof, 12e-6, 1e-12);
  WM_CHECK_INT_EQ(a->cells[0].bound, WM_BOUND_MEMORY);
  WM_CHECK_DBL_NEAR(c->act_in_bytes, 8000, 0);  // "a" twice
  WM_CHECK_DBL_NEAR(m->backends[0].ridge, 1.0, 1e-12);
  WM_CHECK_DBL_NEAR(m->critical.length, 32e-6, 1e-12);
  WM_CHECK_DBL_NEAR(m->critical.total, 40e-6, 1e-12);
  WM_CHECK_INT_EQ(m->critical.n_nodes, 3);
  WM_CHECK_STR_EQ(m->nodes[m->critical.nodes[0]].name, "A");
  WM_CHECK_STR_EQ(m->nodes[m->critical.nodes[1]].name, "C");
  WM_CHECK_STR_EQ(m->nodes[m->critical.nodes[2]].name, "D");
  WM_CHECK(!b->critical && a->critical && c->critical && d->critical);
  WM_CHECK_DBL_NEAR(b->slack, 4e-6, 1e-12);
  WM_CHECK_DBL_NEAR(c->slack, 0, 1e-12);
  WM_CHECK_DBL_NEAR(d->start, 20e-6, 1e-12);
  // While C runs, a, b and c are live: 12 kB, the peak.
  WM_CHECK_INT_EQ(m->memory.peak_activation_bytes, 12000);
  WM_CHECK_STR_EQ(m->nodes[m->memory.peak_node].name, "C");
  WM_CHECK_INT_EQ(m->memory.n_live, 3);
  WM_CHECK_INT_EQ(m->totals.weight_bytes, 0);
  // Op types sorted by FLOPs: Add (2000) before Relu (2000)? equal FLOPs,
  // then by count (2 each), then by name.
  WM_CHECK_INT_EQ(m->n_types, 2);
  WM_CHECK_STR_EQ(m->types[0].op_type, "Add");
  wm_map_destroy(m);
  wm_graph_destroy(g);
  wm_backend_destroy(f.ref);
}

WM_TEST(missing_peaks_are_noted_not_guessed) {
  fixture_t f;
  fixture_init(&f, 1, 1);
  f.opts.peaks = NULL;
  wm_graph_t *g = NULL;
  wm_map_t *m = NULL;
  WM_CHECK_OK(wm_zoo_build("mlp", &g));
  WM_CHECK_OK(wm_map_build(g, &f.opts, &m));
  WM_CHECK_STR_EQ(m->backends[0].peak_source, "unknown");
  WM_CHECK(m->n_notes == 1 && strstr(m->notes[0], "\"ref\"") != NULL);
  for (size_t i = 0; i < m->n_nodes; i++) {
    WM_CHECK_INT_EQ(m->nodes[i].cells[0].bound, WM_BOUND_UNKNOWN);
    WM_CHECK_DBL_NEAR(m->nodes[i].cells[0].t_roof, 0, 0);
  }
  WM_CHECK(!m->have_machine);
  wm_map_destroy(m);
  wm_graph_destroy(g);
  wm_backend_destroy(f.ref);
}

WM_TEST(sub_byte_tensors_count_packed_bytes) {
  fixture_t f;
  fixture_init(&f, 1, 1);
  wm_graph_t *g;
  new_graph(&g);
  WM_CHECK_OK(wm_graph_set_opset(g, "", 21));
  wm_shape_t shape = {.rank = 2, .dims = {1, 9}};
  wm_type_t t = wm_type_tensor(WM_DTYPE_INT4, &shape);
  int32_t id;
  WM_CHECK_OK(wm_graph_add_input(g, "x", &t, &id));
  add_node(g, "Identity", "", "copy", "x", NULL, "y");
  WM_CHECK_OK(wm_graph_add_output(g, "y", NULL, &id));
  wm_map_t *m = NULL;
  WM_CHECK_OK(wm_map_build(g, &f.opts, &m));
  WM_CHECK_INT_EQ(m->nodes[0].state, WM_MAP_NODE_OK);
  WM_CHECK_INT_EQ(m->nodes[0].act_in_bytes, 5);  // 9 nibbles, packed
  WM_CHECK_INT_EQ(m->nodes[0].out_bytes, 5);
  wm_map_destroy(m);
  wm_graph_destroy(g);
  wm_backend_destroy(f.ref);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(zoo_matches_published_params_and_macs),
      WM_CASE(unknown_op_is_marked_and_the_rest_mapped),
      WM_CASE(unbound_dim_is_marked_and_binding_it_maps),
      WM_CASE(memory_peak_and_critical_path_by_hand),
      WM_CASE(missing_peaks_are_noted_not_guessed),
      WM_CASE(sub_byte_tensors_count_packed_bytes),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
