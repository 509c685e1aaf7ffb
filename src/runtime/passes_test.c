// Graph passes: each rewrite computes what the user's graph computes (the
// same session without passes is the oracle), and the placement report
// says what became of every user node.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tests/testing/wm_test.h"
#include "ref.h"
#include "wmap/onnx.h"
#include "wmap/session.h"

static wm_backend_t *ref;  // every session's backend

// A float tensor of |shape| holding a deterministic pattern from |seed|.
static wm_tensor_t *pattern(int32_t rank, const int64_t *dims, double seed) {
  wm_shape_t shape = {.rank = rank};
  memcpy(shape.dims, dims, (size_t)rank * sizeof(int64_t));
  wm_tensor_t *t = NULL;
  if (wm_tensor_create(WM_DTYPE_FLOAT, &shape, &t)) {
    return NULL;
  }
  for (size_t i = 0; i < t->count; i++) {
    ((float *)t->data)[i] = (float)sin(0.37 * (double)i + seed);
  }
  return t;
}

static wm_graph_t *new_graph(void) {
  wm_graph_t *g = NULL;
  wm_status_t s = wm_graph_create("g", NULL, &g);
  if (!s) {
    s = wm_graph_set_opset(g, "", 17);
  }
  wm_status_free(s);
  return g;
}

static void input(wm_graph_t *g, const char *name, int32_t rank,
                  const int64_t *dims) {
  wm_shape_t shape = {.rank = rank};
  memcpy(shape.dims, dims, (size_t)rank * sizeof(int64_t));
  wm_type_t t = wm_type_tensor(WM_DTYPE_FLOAT, &shape);
  int32_t id;
  WM_CHECK_OK(wm_graph_add_input(g, name, &t, &id));
}

static void weight(wm_graph_t *g, const char *name, int32_t rank,
                   const int64_t *dims, double seed) {
  wm_tensor_t *t = pattern(rank, dims, seed);
  WM_CHECK(t);
  WM_CHECK_OK(wm_graph_add_initializer(g, name, t, NULL));
}

// Adds a node; *out_n is its index (-1 and a test failure when it cannot).
static void node(wm_graph_t *g, const char *op, const char *name,
                 const char *const *ins, int32_t n_in, const char *out,
                 int32_t *out_n) {
  int32_t n = -1;
  if (out_n) {
    *out_n = -1;
  }
  WM_CHECK_OK(wm_graph_add_node(g, op, "", name, ins, n_in, &out, 1, &n));
  if (out_n) {
    *out_n = n;
  }
}

static void output(wm_graph_t *g, const char *name) {
  int32_t id;
  WM_CHECK_OK(wm_graph_add_output(g, name, NULL, &id));
}

// Runs |g| on input "x" (|x|) with |passes| and returns output 0; the
// session is destroyed unless |out_session| takes it.
static void run(wm_graph_t *g, const char *passes, const wm_tensor_t *x,
                wm_tensor_t **out_y, wm_session_t **out_session) {
  wm_session_options_t o = {.backends = &ref,
                            .backend_count = 1,
                            .mode = WM_PLACEMENT_STRICT,
                            .passes = passes};
  wm_session_t *s = NULL;
  *out_y = NULL;
  WM_CHECK_OK(wm_session_create_placed(g, &o, &s));
  const char *names[1] = {"x"};
  wm_status_t st = wm_session_run(s, names, &x, 1, out_y);
  if (out_session) {
    *out_session = s;
  } else {
    wm_session_destroy(s);
  }
  WM_CHECK_OK(st);
}

// Checks |a| and |b| agree elementwise within |tol| (relative to 1).
static void check_close(const wm_tensor_t *a, const wm_tensor_t *b,
                        double tol) {
  WM_CHECK(a && b);
  WM_CHECK_INT_EQ(a->count, b->count);
  double worst = 0.0;
  for (size_t i = 0; i < a->count && i < b->count; i++) {
    double d = fabs(wm_tensor_get_f64(a, i) - wm_tensor_get_f64(b, i));
    worst = d > worst ? d : worst;
  }
  WM_CHECK_DBL_NEAR(worst, 0.0, tol);
}

// The placement of the user node named |name|.
static const wm_placement_t *placed(const wm_session_t *s, const char *name) {
  for (size_t i = 0; i < wm_session_node_count(s); i++) {
    const wm_placement_t *p = wm_session_placement(s, i);
    if (p && strstr(p->node, name)) {
      return p;
    }
  }
  return NULL;
}

WM_TEST(conv_bn_folds_the_normalization_into_the_convolution) {
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  int64_t xd[] = {1, 3, 6, 6}, wd[] = {4, 3, 3, 3}, cd[] = {4};
  input(g, "x", 4, xd);
  weight(g, "w", 4, wd, 0.1);
  weight(g, "b", 1, cd, 0.2);
  weight(g, "gamma", 1, cd, 0.3);
  weight(g, "beta", 1, cd, 0.4);
  weight(g, "mean", 1, cd, 0.5);
  // The variance must be positive.
  wm_tensor_t *var = pattern(1, cd, 0.6);
  WM_CHECK(var);
  for (size_t i = 0; i < var->count; i++) {
    ((float *)var->data)[i] = 0.5f + fabsf(((float *)var->data)[i]);
  }
  WM_CHECK_OK(wm_graph_add_initializer(g, "var", var, NULL));
  const char *conv_in[3] = {"x", "w", "b"};
  int32_t c;
  node(g, "Conv", "conv", conv_in, 3, "c", &c);
  int64_t pads[4] = {1, 1, 1, 1};
  WM_CHECK_OK(wm_graph_add_attr_ints(g, c, "pads", pads, 4));
  const char *bn_in[5] = {"c", "gamma", "beta", "mean", "var"};
  node(g, "BatchNormalization", "bn", bn_in, 5, "y", NULL);
  output(g, "y");
  wm_tensor_t *x = pattern(4, xd, 0.7);
  wm_session_t *s = NULL;
  wm_tensor_t *want = NULL;
  run(g, "", x, &want, NULL);
  WM_CHECK(want);
  wm_tensor_t *got = NULL;
  run(g, NULL, x, &got, &s);
  WM_CHECK(s && got);
  check_close(got, want, 1e-5);
  const wm_placement_t *bn = placed(s, "bn");
  WM_CHECK(bn && bn->pass && strcmp(bn->pass, "conv-bn") == 0);
  WM_CHECK(bn && bn->runs_in && strstr(bn->runs_in, "conv"));
  WM_CHECK(bn && bn->runs_as && strcmp(bn->runs_as, "Conv") == 0);
  WM_CHECK_INT_EQ(wm_session_nodes_run(s), 2);  // the BN runs inside
  wm_strbuf_t text;
  wm_strbuf_init(&text);
  wm_session_placement_text(s, &text);
  WM_CHECK(strstr(wm_strbuf_str(&text), "fused into") != NULL);
  wm_strbuf_deinit(&text);
  wm_session_destroy(s);
  wm_tensor_destroy(x);
  wm_tensor_destroy(want);
  wm_tensor_destroy(got);
  wm_graph_destroy(g);
}

WM_TEST(transposes_that_cancel_are_removed_and_others_merged) {
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  int64_t xd[] = {2, 3, 4}, perm[] = {0, 2, 1}, rot[] = {1, 2, 0};
  input(g, "x", 3, xd);
  const char *in[1] = {"x"};
  int32_t t1;
  node(g, "Transpose", "t1", in, 1, "a", &t1);
  WM_CHECK_OK(wm_graph_add_attr_ints(g, t1, "perm", perm, 3));
  in[0] = "a";
  int32_t t2;
  node(g, "Transpose", "t2", in, 1, "b", &t2);
  WM_CHECK_OK(wm_graph_add_attr_ints(g, t2, "perm", perm, 3));
  in[0] = "b";
  node(g, "Relu", "r", in, 1, "c", NULL);
  in[0] = "c";
  int32_t t3;
  node(g, "Transpose", "t3", in, 1, "d", &t3);
  WM_CHECK_OK(wm_graph_add_attr_ints(g, t3, "perm", perm, 3));
  in[0] = "d";
  int32_t t4;
  node(g, "Transpose", "t4", in, 1, "y", &t4);
  WM_CHECK_OK(wm_graph_add_attr_ints(g, t4, "perm", rot, 3));
  output(g, "y");
  wm_tensor_t *x = pattern(3, xd, 0.0);
  wm_session_t *s = NULL;
  wm_tensor_t *want = NULL;
  run(g, "", x, &want, NULL);
  WM_CHECK(want);
  wm_tensor_t *got = NULL;
  run(g, "transpose", x, &got, &s);
  WM_CHECK(s && got);
  check_close(got, want, 0.0);
  WM_CHECK_INT_EQ(got->shape.dims[0], want->shape.dims[0]);
  WM_CHECK_INT_EQ(got->shape.dims[2], want->shape.dims[2]);
  WM_CHECK(strcmp(placed(s, "t1")->backend, "-") == 0);
  WM_CHECK(strcmp(placed(s, "t2")->backend, "-") == 0);
  WM_CHECK(strcmp(placed(s, "t2")->pass, "transpose") == 0);
  WM_CHECK(placed(s, "t3")->runs_in && strstr(placed(s, "t3")->runs_in, "t4"));
  WM_CHECK(strcmp(placed(s, "t4")->backend, "ref") == 0);
  WM_CHECK_INT_EQ(wm_session_nodes_run(s), 3);  // Relu, t3 inside t4, t4
  wm_session_destroy(s);
  wm_tensor_destroy(x);
  wm_tensor_destroy(want);
  wm_tensor_destroy(got);
  wm_graph_destroy(g);
}

WM_TEST(large_constant_subgraphs_are_folded_and_dead_nodes_removed) {
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  // A weight stored transposed, as exporters leave tied embeddings: far
  // larger than what plans fold, so only the fold pass computes it once.
  int64_t xd[] = {2, 300}, wd[] = {700, 300};
  input(g, "x", 2, xd);
  weight(g, "w", 2, wd, 0.3);
  const char *in[2] = {"w", NULL};
  node(g, "Transpose", "wt", in, 1, "w_t", NULL);
  const char *mm[2] = {"x", "w_t"};
  node(g, "MatMul", "mm", mm, 2, "y", NULL);
  in[0] = "x";
  node(g, "Neg", "unused", in, 1, "nobody_reads", NULL);
  output(g, "y");
  wm_tensor_t *x = pattern(2, xd, 0.9);
  wm_session_t *s = NULL;
  wm_tensor_t *want = NULL;
  run(g, "", x, &want, NULL);
  WM_CHECK(want);
  wm_tensor_t *got = NULL;
  run(g, NULL, x, &got, &s);
  WM_CHECK(s && got);
  check_close(got, want, 1e-4);
  WM_CHECK(strcmp(placed(s, "wt")->pass, "fold") == 0);
  WM_CHECK(strcmp(placed(s, "wt")->backend, "-") == 0);
  WM_CHECK(strcmp(placed(s, "unused")->pass, "dead") == 0);
  WM_CHECK_INT_EQ(wm_session_nodes_run(s), 1);
  wm_session_destroy(s);
  wm_tensor_destroy(x);
  wm_tensor_destroy(want);
  wm_tensor_destroy(got);
  wm_graph_destroy(g);
}

WM_TEST(a_subgraph_still_reads_a_folded_outer_constant) {
  // If's branch reads "k", which folding turns from a node output into an
  // initializer no node of the main graph reads.
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  int64_t xd[] = {3};
  input(g, "x", 1, xd);
  wm_tensor_t *one = pattern(1, xd, 0.0);
  WM_CHECK(one);
  WM_CHECK_OK(wm_graph_add_initializer(g, "one", one, NULL));
  const char *in[2] = {"one", NULL};
  node(g, "Neg", "k_of", in, 1, "k", NULL);
  wm_graph_t *then_g = NULL, *else_g = NULL;
  WM_CHECK_OK(wm_graph_create("then", g, &then_g));
  WM_CHECK_OK(wm_graph_create("else", g, &else_g));
  const char *tin[2] = {"x", "k"};
  node(then_g, "Add", "t", tin, 2, "ty", NULL);
  output(then_g, "ty");
  node(else_g, "Sub", "e", tin, 2, "ey", NULL);
  output(else_g, "ey");
  wm_shape_t sc = {.rank = 0};
  wm_tensor_t *cond = NULL;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_BOOL, &sc, &cond));
  ((uint8_t *)cond->data)[0] = 1;
  WM_CHECK_OK(wm_graph_add_initializer(g, "c", cond, NULL));
  const char *if_in[1] = {"c"};
  int32_t n_if;
  node(g, "If", "if", if_in, 1, "y", &n_if);
  WM_CHECK_OK(wm_graph_add_attr_graph(g, n_if, "then_branch", then_g));
  WM_CHECK_OK(wm_graph_add_attr_graph(g, n_if, "else_branch", else_g));
  output(g, "y");
  // Export and import again: the importer marks outer-scope references.
  uint8_t *data;
  size_t size;
  WM_CHECK_OK(wm_onnx_save_buffer(g, &data, &size));
  wm_graph_destroy(g);
  WM_CHECK_OK(wm_onnx_load_buffer(data, size, NULL, &g));
  free(data);
  wm_tensor_t *x = pattern(1, xd, 1.0);
  wm_tensor_t *want = NULL;
  run(g, "", x, &want, NULL);
  WM_CHECK(want);
  wm_tensor_t *got = NULL;
  run(g, NULL, x, &got, NULL);
  check_close(got, want, 0.0);
  wm_tensor_destroy(x);
  wm_tensor_destroy(want);
  wm_tensor_destroy(got);
  wm_graph_destroy(g);
}

WM_TEST(an_unknown_pass_is_an_error_naming_the_passes) {
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  int64_t xd[] = {2};
  input(g, "x", 1, xd);
  const char *in[1] = {"x"};
  node(g, "Relu", "r", in, 1, "y", NULL);
  output(g, "y");
  wm_session_options_t o = {.backends = &ref,
                            .backend_count = 1,
                            .mode = WM_PLACEMENT_STRICT,
                            .passes = "fold,fuse-everything"};
  wm_session_t *s = NULL;
  wm_status_t st = wm_session_create_placed(g, &o, &s);
  WM_CHECK(st != NULL);
  WM_CHECK(s == NULL);
  WM_CHECK_INT_EQ(wm_status_code(st), WM_STATUS_INVALID_ARGUMENT);
  WM_CHECK(strstr(wm_status_message(st), "\"fuse-everything\"") != NULL);
  WM_CHECK(strstr(wm_status_message(st), "conv-bn") != NULL);
  wm_status_free(st);
  wm_graph_destroy(g);
}

int main(void) {
  wm_status_t s = wm_backend_create(wm_ref_plugin_query, "built-in", &ref);
  if (s) {
    fprintf(stderr, "ref backend: %s\n", wm_status_message(s));
    wm_status_free(s);
    return 1;
  }
  static const wm_test_case_t cases[] = {
      WM_CASE(conv_bn_folds_the_normalization_into_the_convolution),
      WM_CASE(transposes_that_cancel_are_removed_and_others_merged),
      WM_CASE(large_constant_subgraphs_are_folded_and_dead_nodes_removed),
      WM_CASE(a_subgraph_still_reads_a_folded_outer_constant),
      WM_CASE(an_unknown_pass_is_an_error_naming_the_passes),
      {NULL, NULL},
  };
  int rc = wm_test_main(cases);
  wm_backend_destroy(ref);
  return rc;
}
