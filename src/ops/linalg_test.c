// Tests of the linalg operators (Gemm, MatMul, Einsum): reference kernels
// against hand-computed values, static shape rules, and error messages.
#include <stdlib.h>

#include "ops/ops.h"
#include "wm_test.h"

// A one-node graph under construction and its results.
typedef struct fixture {
  wm_graph_t *g;        // the graph
  int32_t node;         // the node
  wm_tensor_t *out[2];  // outputs after run_node
} fixture_t;

static wm_status_t fixture_init(fixture_t *f, int64_t opset) {
  memset(f, 0, sizeof(*f));
  WM_RETURN_IF_ERROR(wm_graph_create("test", NULL, &f->g));
  return wm_graph_set_opset(f->g, "", opset);
}

static void fixture_deinit(fixture_t *f) {
  for (int i = 0; i < 2; i++) {
    wm_tensor_destroy(f->out[i]);
  }
  wm_graph_destroy(f->g);
}

// Adds a float initializer |name| of |shape| holding |vals| (or 0..n-1).
static wm_status_t add_const(fixture_t *f, const char *name, wm_dtype_t dtype,
                             int32_t rank, const int64_t *dims,
                             const double *vals) {
  wm_shape_t s = wm_shape_make(rank, dims);
  wm_tensor_t *t;
  WM_RETURN_IF_ERROR(wm_tensor_create(dtype, &s, &t));
  for (size_t i = 0; i < t->count; i++) {
    wm_tensor_set_f64(t, i, vals ? vals[i] : (double)i);
  }
  int32_t id;
  return wm_graph_add_initializer(f->g, name, t, &id);
}

// Adds a graph input of |dtype| and |shape| (dims < 0 unknown).
static wm_status_t add_input(fixture_t *f, const char *name, wm_dtype_t dtype,
                             int32_t rank, const int64_t *dims) {
  wm_shape_t s = wm_shape_make(rank, dims);
  wm_type_t t = wm_type_tensor(dtype, &s);
  int32_t id;
  return wm_graph_add_input(f->g, name, &t, &id);
}

static wm_status_t add_node(fixture_t *f, const char *op,
                            const char *const *inputs, int32_t n_in,
                            int32_t n_out) {
  static const char *const outs[2] = {"y0", "y1"};
  return wm_graph_add_node(f->g, op, "", "n", inputs, n_in, outs, n_out,
                           &f->node);
}

// Runs the node on its constant inputs; outputs land in f->out.
static wm_status_t run_node(fixture_t *f) {
  wm_op_ctx_t ctx;
  WM_RETURN_IF_ERROR(wm_op_ctx_init(&ctx, f->g, (size_t)f->node));
  const wm_op_def_t *def;
  wm_status_t s = wm_op_find_def(&ctx, &def);
  if (!s) {
    s = wm_op_execute(def, &ctx);
  }
  for (int32_t i = 0; i < ctx.n_out && i < 2; i++) {
    f->out[i] = ctx.out[i];
  }
  wm_op_ctx_deinit(&ctx);
  return s;
}

// Runs static inference over the graph and returns the type of "y0".
static wm_status_t infer_y0(fixture_t *f, wm_type_t *out) {
  WM_RETURN_IF_ERROR(wm_ops_check_graph(f->g));
  *out = f->g->values[wm_graph_find_value(f->g, "y0")].type;
  return NULL;
}

static bool values_are(const wm_tensor_t *t, const double *want, size_t n) {
  if (!t || t->count != n) {
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    double d = wm_tensor_get_f64(t, i) - want[i];
    if (d > 1e-5 || d < -1e-5) {
      fprintf(stderr, "element %zu: got %g, want %g\n", i,
              wm_tensor_get_f64(t, i), want[i]);
      return false;
    }
  }
  return true;
}

WM_TEST(matmul_2d_matches_hand_computed) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t da[2] = {2, 3}, db[2] = {3, 2};
  WM_CHECK_OK(add_const(&f, "a", WM_DTYPE_FLOAT, 2, da, NULL));
  WM_CHECK_OK(add_const(&f, "b", WM_DTYPE_FLOAT, 2, db, NULL));
  const char *in[2] = {"a", "b"};
  WM_CHECK_OK(add_node(&f, "MatMul", in, 2, 1));
  wm_status_t s = run_node(&f);
  // [[0,1,2],[3,4,5]] x [[0,1],[2,3],[4,5]]
  static const double want[4] = {10, 13, 28, 40};
  bool ok = !s && values_are(f.out[0], want, 4) && f.out[0]->shape.rank == 2 &&
            f.out[0]->shape.dims[0] == 2;
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(matmul_promotes_vector_and_broadcasts_batch) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t da[1] = {2}, db[3] = {3, 2, 2};
  WM_CHECK_OK(add_const(&f, "a", WM_DTYPE_INT64, 1, da, NULL));
  WM_CHECK_OK(add_const(&f, "b", WM_DTYPE_INT64, 3, db, NULL));
  const char *in[2] = {"a", "b"};
  WM_CHECK_OK(add_node(&f, "MatMul", in, 2, 1));
  wm_status_t s = run_node(&f);
  // [0,1] x b[t] = row 1 of each 2x2 batch: [2,3],[6,7],[10,11].
  static const double want[6] = {2, 3, 6, 7, 10, 11};
  bool ok = !s && values_are(f.out[0], want, 6) && f.out[0]->shape.rank == 2 &&
            f.out[0]->shape.dims[0] == 3 && f.out[0]->dtype == WM_DTYPE_INT64;
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(matmul_rejects_mismatched_inner_dims) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t da[2] = {2, 3}, db[2] = {4, 2};
  WM_CHECK_OK(add_input(&f, "a", WM_DTYPE_FLOAT, 2, da));
  WM_CHECK_OK(add_input(&f, "b", WM_DTYPE_FLOAT, 2, db));
  const char *in[2] = {"a", "b"};
  WM_CHECK_OK(add_node(&f, "MatMul", in, 2, 1));
  wm_status_t s = wm_ops_check_graph(f.g);
  fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "inner dims 3 vs 4");
}

WM_TEST(matmul_static_shape_keeps_unknown_batch) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t da[3] = {-1, 5, 3}, db[2] = {3, 7};
  WM_CHECK_OK(add_input(&f, "a", WM_DTYPE_FLOAT, 3, da));
  WM_CHECK_OK(add_input(&f, "b", WM_DTYPE_FLOAT, 2, db));
  const char *in[2] = {"a", "b"};
  WM_CHECK_OK(add_node(&f, "MatMul", in, 2, 1));
  wm_type_t t;
  wm_status_t s = infer_y0(&f, &t);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 3);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
  WM_CHECK_INT_EQ(t.shape.dims[1], 5);
  WM_CHECK_INT_EQ(t.shape.dims[2], 7);
}

WM_TEST(gemm_applies_transposes_scales_and_broadcast_bias) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t da[2] = {3, 2}, db[2] = {2, 3}, dc[1] = {2};
  WM_CHECK_OK(add_const(&f, "a", WM_DTYPE_DOUBLE, 2, da, NULL));
  WM_CHECK_OK(add_const(&f, "b", WM_DTYPE_DOUBLE, 2, db, NULL));
  static const double c[2] = {100, 200};
  WM_CHECK_OK(add_const(&f, "c", WM_DTYPE_DOUBLE, 1, dc, c));
  const char *in[3] = {"a", "b", "c"};
  WM_CHECK_OK(add_node(&f, "Gemm", in, 3, 1));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "transA", 1));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "transB", 1));
  WM_CHECK_OK(wm_graph_add_attr_float(f.g, f.node, "alpha", 2.0f));
  WM_CHECK_OK(wm_graph_add_attr_float(f.g, f.node, "beta", 0.5f));
  wm_status_t s = run_node(&f);
  // A' = [[0,2,4],[1,3,5]], B' = [[0,3],[1,4],[2,5]];
  // A'B' = [[10,28],[13,40]]; 2*A'B' + 0.5*[100,200].
  static const double want[4] = {70, 156, 76, 180};
  bool ok = !s && values_are(f.out[0], want, 4);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(gemm_rejects_bias_that_does_not_broadcast) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t da[2] = {2, 3}, db[2] = {3, 4}, dc[1] = {3};
  WM_CHECK_OK(add_input(&f, "a", WM_DTYPE_FLOAT, 2, da));
  WM_CHECK_OK(add_input(&f, "b", WM_DTYPE_FLOAT, 2, db));
  WM_CHECK_OK(add_input(&f, "c", WM_DTYPE_FLOAT, 1, dc));
  const char *in[3] = {"a", "b", "c"};
  WM_CHECK_OK(add_node(&f, "Gemm", in, 3, 1));
  wm_status_t s = wm_ops_check_graph(f.g);
  fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "does not broadcast to [2,4]");
}

WM_TEST(gemm_cost_counts_macs_and_bias) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t da[2] = {2, 3}, db[2] = {3, 4}, dc[1] = {4};
  WM_CHECK_OK(add_input(&f, "a", WM_DTYPE_FLOAT, 2, da));
  WM_CHECK_OK(add_input(&f, "b", WM_DTYPE_FLOAT, 2, db));
  WM_CHECK_OK(add_input(&f, "c", WM_DTYPE_FLOAT, 1, dc));
  const char *in[3] = {"a", "b", "c"};
  WM_CHECK_OK(add_node(&f, "Gemm", in, 3, 1));
  wm_op_ctx_t ctx;
  WM_CHECK_OK(wm_op_ctx_init(&ctx, f.g, 0));
  const wm_op_def_t *def;
  wm_status_t s = wm_op_find_def(&ctx, &def);
  if (!s) {
    s = def->infer(&ctx);
  }
  wm_op_cost_t cost = {0, 0, 0};
  if (!s) {
    wm_op_cost(def, &ctx, &cost);
  }
  wm_op_ctx_deinit(&ctx);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_DBL_NEAR(cost.macs, 24, 0);
  WM_CHECK_DBL_NEAR(cost.flops, 48 + 8, 0);
}

// Runs Einsum |eq| on float inputs of the given shapes (values 0..n-1).
static wm_status_t run_einsum(fixture_t *f, const char *eq, int32_t n_in,
                              const int32_t *ranks,
                              const int64_t (*dims)[WM_MAX_RANK]) {
  WM_RETURN_IF_ERROR(fixture_init(f, 13));
  static const char *const names[3] = {"x0", "x1", "x2"};
  for (int32_t i = 0; i < n_in; i++) {
    WM_RETURN_IF_ERROR(
        add_const(f, names[i], WM_DTYPE_FLOAT, ranks[i], dims[i], NULL));
  }
  WM_RETURN_IF_ERROR(add_node(f, "Einsum", names, n_in, 1));
  WM_RETURN_IF_ERROR(wm_graph_add_attr_string(f->g, f->node, "equation", eq));
  return run_node(f);
}

WM_TEST(einsum_matches_matmul_transpose_trace_and_outer) {
  static const struct {
    const char *eq;
    int32_t n_in;
    int32_t ranks[2];
    int64_t dims[2][WM_MAX_RANK];
    int32_t out_rank;
    size_t n;
    double want[12];
  } cases[] = {
      {"ij,jk->ik", 2, {2, 2}, {{2, 3}, {3, 2}}, 2, 4, {10, 13, 28, 40}},
      {"ij,jk", 2, {2, 2}, {{2, 3}, {3, 2}}, 2, 4, {10, 13, 28, 40}},
      {"ij->ji", 1, {2, 0}, {{2, 3}}, 2, 6, {0, 3, 1, 4, 2, 5}},
      {"ii->", 1, {2, 0}, {{3, 3}}, 0, 1, {12}},
      {"ii->i", 1, {2, 0}, {{3, 3}}, 1, 3, {0, 4, 8}},
      {"i,j->ij", 2, {1, 1}, {{2}, {3}}, 2, 6, {0, 0, 0, 0, 1, 2}},
      {"...ij->...ji", 1, {3, 0}, {{2, 1, 2}}, 3, 4, {0, 1, 2, 3}},
      {"bij,bjk->bik", 2, {3, 3}, {{2, 1, 2}, {2, 2, 1}}, 3, 2, {1, 13}},
      {"ij->", 1, {2, 0}, {{2, 3}}, 0, 1, {15}},
      {"i j -> j", 1, {2, 0}, {{2, 3}}, 1, 3, {3, 5, 7}},
      {"...ii->...i", 1, {3, 0}, {{2, 2, 2}}, 2, 4, {0, 3, 4, 7}},
      {"bA,Ab", 2, {2, 2}, {{2, 3}, {3, 2}}, 0, 1, {10 + 40}},
      {"ab,Ab", 2, {2, 2}, {{2, 3}, {1, 3}}, 2, 2, {5, 14}},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    fixture_t f;
    wm_status_t s = run_einsum(&f, cases[c].eq, cases[c].n_in, cases[c].ranks,
                               cases[c].dims);
    bool ok = !s && f.out[0]->shape.rank == cases[c].out_rank &&
              values_are(f.out[0], cases[c].want, cases[c].n);
    fixture_deinit(&f);
    if (!ok) {
      fprintf(stderr, "equation \"%s\"\n", cases[c].eq);
    }
    WM_CHECK_OK(s);
    WM_CHECK(ok);
  }
}

WM_TEST(einsum_rejects_implicit_output_above_max_rank) {
  fixture_t f;
  int32_t ranks[2] = {8, 8};
  static const int64_t dims[2][WM_MAX_RANK] = {{1, 1, 1, 1, 1, 1, 1, 1},
                                               {1, 1, 1, 1, 1, 1, 1, 1}};
  wm_status_t s = run_einsum(&f, "abcdefgh,ABCDEFGH", 2, ranks, dims);
  fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "implicit output has more than 8 dims");
}

WM_TEST(einsum_rejects_malformed_equations) {
  static const struct {
    const char *eq;
    const char *needle;
  } cases[] = {
      {"ij,jk->iz", "'z' does not appear"},
      {"ij,jk->ii", "appears twice"},
      {"ij->i->j", "more than one"},
      {"i.j,jk->ik", "not part of '...'"},
      {"ij,jk,kl->il", "3 operand terms but the node has 2"},
      {"ijk,jk->ik", "3 subscripts but input 0 has rank 2"},
      {"i1,jk->ik", "invalid character '1'"},
      {"ij,ik->jk", "label 'i' has extent 3 in input 1 but 2"},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    fixture_t f;
    int32_t ranks[2] = {2, 2};
    static const int64_t dims[2][WM_MAX_RANK] = {{2, 3}, {3, 2}};
    wm_status_t s = run_einsum(&f, cases[c].eq, 2, ranks, dims);
    fixture_deinit(&f);
    WM_CHECK_ERR(s, INVALID_ARGUMENT, cases[c].needle);
  }
}

static const wm_test_case_t cases[] = {
    WM_CASE(matmul_2d_matches_hand_computed),
    WM_CASE(matmul_promotes_vector_and_broadcasts_batch),
    WM_CASE(matmul_rejects_mismatched_inner_dims),
    WM_CASE(matmul_static_shape_keeps_unknown_batch),
    WM_CASE(gemm_applies_transposes_scales_and_broadcast_bias),
    WM_CASE(gemm_rejects_bias_that_does_not_broadcast),
    WM_CASE(gemm_cost_counts_macs_and_bias),
    WM_CASE(einsum_matches_matmul_transpose_trace_and_outer),
    WM_CASE(einsum_rejects_implicit_output_above_max_rank),
    WM_CASE(einsum_rejects_malformed_equations),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
