// Tests of the linalg operators (Gemm, MatMul, Einsum, Det): reference kernels
// against hand-computed values, static shape rules, and error messages.
#include <stdlib.h>

#include "op_fixture.h"
#include "wm_test.h"

WM_TEST(matmul_2d_matches_hand_computed) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t da[2] = {2, 3}, db[2] = {3, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "a", WM_DTYPE_FLOAT, 2, da, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "b", WM_DTYPE_FLOAT, 2, db, NULL));
  const char *in[2] = {"a", "b"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "MatMul", in, 2, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  // [[0,1,2],[3,4,5]] x [[0,1],[2,3],[4,5]]
  static const double want[4] = {10, 13, 28, 40};
  bool ok = !s &&
            wm_op_fixture_values_near(f.out[0], want, 4, WM_OP_FIXTURE_TOL) &&
            f.out[0]->shape.rank == 2 && f.out[0]->shape.dims[0] == 2;
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(matmul_promotes_vector_and_broadcasts_batch) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t da[1] = {2}, db[3] = {3, 2, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "a", WM_DTYPE_INT64, 1, da, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "b", WM_DTYPE_INT64, 3, db, NULL));
  const char *in[2] = {"a", "b"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "MatMul", in, 2, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  // [0,1] x b[t] = row 1 of each 2x2 batch: [2,3],[6,7],[10,11].
  static const double want[6] = {2, 3, 6, 7, 10, 11};
  bool ok = !s &&
            wm_op_fixture_values_near(f.out[0], want, 6, WM_OP_FIXTURE_TOL) &&
            f.out[0]->shape.rank == 2 && f.out[0]->shape.dims[0] == 3 &&
            f.out[0]->dtype == WM_DTYPE_INT64;
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(matmul_rejects_mismatched_inner_dims) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t da[2] = {2, 3}, db[2] = {4, 2};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "a", WM_DTYPE_FLOAT, 2, da));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_FLOAT, 2, db));
  const char *in[2] = {"a", "b"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "MatMul", in, 2, 1));
  wm_status_t s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "inner dims 3 vs 4");
}

WM_TEST(matmul_static_shape_keeps_unknown_batch) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t da[3] = {-1, 5, 3}, db[2] = {3, 7};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "a", WM_DTYPE_FLOAT, 3, da));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_FLOAT, 2, db));
  const char *in[2] = {"a", "b"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "MatMul", in, 2, 1));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 3);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
  WM_CHECK_INT_EQ(t.shape.dims[1], 5);
  WM_CHECK_INT_EQ(t.shape.dims[2], 7);
}

WM_TEST(gemm_applies_transposes_scales_and_broadcast_bias) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t da[2] = {3, 2}, db[2] = {2, 3}, dc[1] = {2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "a", WM_DTYPE_DOUBLE, 2, da, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "b", WM_DTYPE_DOUBLE, 2, db, NULL));
  static const double c[2] = {100, 200};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "c", WM_DTYPE_DOUBLE, 1, dc, c));
  const char *in[3] = {"a", "b", "c"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Gemm", in, 3, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "transA", 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "transB", 1));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "alpha", 2.0f));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "beta", 0.5f));
  wm_status_t s = wm_op_fixture_run(&f);
  // A' = [[0,2,4],[1,3,5]], B' = [[0,3],[1,4],[2,5]];
  // A'B' = [[10,28],[13,40]]; 2*A'B' + 0.5*[100,200].
  static const double want[4] = {70, 156, 76, 180};
  bool ok =
      !s && wm_op_fixture_values_near(f.out[0], want, 4, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(gemm_rejects_bias_that_does_not_broadcast) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t da[2] = {2, 3}, db[2] = {3, 4}, dc[1] = {3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "a", WM_DTYPE_FLOAT, 2, da));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_FLOAT, 2, db));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "c", WM_DTYPE_FLOAT, 1, dc));
  const char *in[3] = {"a", "b", "c"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Gemm", in, 3, 1));
  wm_status_t s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "does not broadcast to [2,4]");
}

WM_TEST(gemm_cost_counts_macs_and_bias) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t da[2] = {2, 3}, db[2] = {3, 4}, dc[1] = {4};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "a", WM_DTYPE_FLOAT, 2, da));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_FLOAT, 2, db));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "c", WM_DTYPE_FLOAT, 1, dc));
  const char *in[3] = {"a", "b", "c"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Gemm", in, 3, 1));
  wm_type_t t;
  wm_op_cost_t cost;
  wm_status_t s = wm_op_fixture_cost(&f, &t, &cost);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_DBL_NEAR(cost.macs, 24, 0);
  WM_CHECK_DBL_NEAR(cost.flops, 48 + 8, 0);
}

// Runs Einsum |eq| on float inputs of the given shapes (values 0..n-1).
static wm_status_t run_einsum(wm_op_fixture_t *f, const char *eq, int32_t n_in,
                              const int32_t *ranks,
                              const int64_t (*dims)[WM_MAX_RANK]) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 13));
  static const char *const names[3] = {"x0", "x1", "x2"};
  for (int32_t i = 0; i < n_in; i++) {
    WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, names[i], WM_DTYPE_FLOAT,
                                               ranks[i], dims[i], NULL));
  }
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "Einsum", names, n_in, 1));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_string(f, "equation", eq));
  return wm_op_fixture_run(f);
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
    wm_op_fixture_t f;
    wm_status_t s = run_einsum(&f, cases[c].eq, cases[c].n_in, cases[c].ranks,
                               cases[c].dims);
    bool ok = !s && f.out[0]->shape.rank == cases[c].out_rank &&
              wm_op_fixture_values_near(f.out[0], cases[c].want, cases[c].n,
                                        WM_OP_FIXTURE_TOL);
    wm_op_fixture_deinit(&f);
    if (!ok) {
      fprintf(stderr, "equation \"%s\"\n", cases[c].eq);
    }
    WM_CHECK_OK(s);
    WM_CHECK(ok);
  }
}

WM_TEST(einsum_rejects_implicit_output_above_max_rank) {
  wm_op_fixture_t f;
  int32_t ranks[2] = {8, 8};
  static const int64_t dims[2][WM_MAX_RANK] = {{1, 1, 1, 1, 1, 1, 1, 1},
                                               {1, 1, 1, 1, 1, 1, 1, 1}};
  wm_status_t s = run_einsum(&f, "abcdefgh,ABCDEFGH", 2, ranks, dims);
  wm_op_fixture_deinit(&f);
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
    wm_op_fixture_t f;
    int32_t ranks[2] = {2, 2};
    static const int64_t dims[2][WM_MAX_RANK] = {{2, 3}, {3, 2}};
    wm_status_t s = run_einsum(&f, cases[c].eq, 2, ranks, dims);
    wm_op_fixture_deinit(&f);
    WM_CHECK_ERR(s, INVALID_ARGUMENT, cases[c].needle);
  }
}

WM_TEST(det_batched_with_pivoting_singular_and_empty_matrices) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[3] = {3, 3, 3};
  static const double x[27] = {0, 2, 1, 1, 0, 0, 0, 0, 3,   // needs a swap
                               1, 2, 3, 2, 4, 6, 1, 1, 1,   // singular
                               2, 0, 0, 0, 3, 0, 0, 0, 4};  // diagonal
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_DOUBLE, 3, dx, x));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Det", in, 1, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 1, (const int64_t[]){3}) &&
            wm_op_fixture_values_near(f.out[0], (const double[]){-6, 0, 24}, 3,
                                      1e-12);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  // A batch of 0x0 matrices: each determinant is 1.
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t de[3] = {2, 0, 0};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, de, NULL));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Det", in, 1, 1));
  s = wm_op_fixture_run(&f);
  ok = !s && wm_op_fixture_values_near(f.out[0], (const double[]){1, 1}, 2,
                                       WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(det_rejects_non_square_and_keeps_unknown_batch) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[2] = {2, 3};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Det", in, 1, 1));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                     "holds 2x3 matrices, want square ones");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t du[4] = {-1, 5, 4, 4};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, du));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Det", in, 1, 1));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 2);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
  WM_CHECK_INT_EQ(t.shape.dims[1], 5);
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
    WM_CASE(det_batched_with_pivoting_singular_and_empty_matrices),
    WM_CASE(det_rejects_non_square_and_keeps_unknown_batch),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
