// Tests of the reduce family: every Reduce* against hand-computed values,
// empty-set results, axes handling across opsets, bool extrema, ArgMax/ArgMin,
// TopK, CumSum and CumProd.
#include <math.h>
#include <stdlib.h>

#include "op_fixture.h"
#include "wm_test.h"

// Adds a node with |axes| as attribute (opset before |since|) or input.
static wm_status_t add_reduce(wm_op_fixture_t *f, const char *op, int64_t opset,
                              int64_t since, const int64_t *axes, size_t n_axes,
                              int64_t keepdims) {
  if (opset >= since) {
    WM_RETURN_IF_ERROR(wm_op_fixture_add_ints(f, "axes", n_axes, axes));
    const char *in[2] = {"x", "axes"};
    WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, op, in, 2, 1));
  } else {
    const char *in[1] = {"x"};
    WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, op, in, 1, 1));
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_ints(f, "axes", axes, n_axes));
  }
  return wm_op_fixture_attr_int(f, "keepdims", keepdims);
}

WM_TEST(reduce_family_matches_hand_computed_values) {
  static const struct {
    const char *op;
    int64_t since;
    double want[2];
  } cases[] = {
      {"ReduceSum", 13, {3, 12}},
      {"ReduceMean", 18, {1, 4}},
      {"ReduceMax", 18, {2, 5}},
      {"ReduceMin", 18, {0, 3}},
      {"ReduceProd", 18, {0, 60}},
      {"ReduceL1", 18, {3, 12}},
      {"ReduceL2", 18, {2.2360680, 7.0710678}},
      {"ReduceLogSum", 18, {1.0986123, 2.4849066}},
      {"ReduceLogSumExp", 18, {2.4076060, 5.4076060}},
      {"ReduceSumSquare", 18, {5, 50}},
  };
  static const int64_t opsets[2] = {13, 18};
  for (size_t o = 0; o < 2; o++) {
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
      wm_op_fixture_t f;
      WM_CHECK_OK(wm_op_fixture_init(&f, opsets[o]));
      int64_t dims[2] = {2, 3}, axes[1] = {-1};
      WM_CHECK_OK(
          wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dims, NULL));
      WM_CHECK_OK(
          add_reduce(&f, cases[c].op, opsets[o], cases[c].since, axes, 1, 0));
      wm_status_t s = wm_op_fixture_run(&f);
      bool ok = !s && f.out[0]->shape.rank == 1 &&
                wm_op_fixture_values_near(f.out[0], cases[c].want, 2,
                                          WM_OP_FIXTURE_TOL);
      wm_op_fixture_deinit(&f);
      if (!ok) {
        fprintf(stderr, "%s at opset %lld\n", cases[c].op,
                (long long)opsets[o]);
      }
      WM_CHECK_OK(s);
      WM_CHECK(ok);
    }
  }
}

WM_TEST(reduce_over_empty_set_gives_identity_values) {
  static const struct {
    const char *op;
    double want;
  } cases[] = {
      {"ReduceSum", 0},
      {"ReduceProd", 1},
      {"ReduceMax", -INFINITY},
      {"ReduceMin", INFINITY},
      {"ReduceLogSum", -INFINITY},
      {"ReduceLogSumExp", -INFINITY},
      {"ReduceL2", 0},
      {"ReduceSumSquare", 0},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 11));
    int64_t dims[2] = {2, 0}, axes[1] = {1};
    WM_CHECK_OK(
        wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dims, NULL));
    WM_CHECK_OK(add_reduce(&f, cases[c].op, 11, 13, axes, 1, 1));
    wm_status_t s = wm_op_fixture_run(&f);
    bool ok = !s && f.out[0]->count == 2 &&
              wm_tensor_get_f64(f.out[0], 1) == cases[c].want;
    wm_op_fixture_deinit(&f);
    if (!ok) {
      fprintf(stderr, "%s\n", cases[c].op);
    }
    WM_CHECK_OK(s);
    WM_CHECK(ok);
  }
}

WM_TEST(reduce_sum_of_int64_is_exact) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dims[1] = {3};
  wm_shape_t shape = wm_shape_make(1, dims);
  wm_tensor_t *t;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_INT64, &shape, &t));
  wm_tensor_set_i64(t, 0, (INT64_C(1) << 53) + 1);
  wm_tensor_set_i64(t, 1, 1);
  wm_tensor_set_i64(t, 2, -3);
  int32_t id;
  WM_CHECK_OK(wm_graph_add_initializer(f.graph, "x", t, &id));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "ReduceSum", in, 1, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  int64_t got = s ? 0 : wm_tensor_get_i64(f.out[0], 0);
  int32_t rank = s ? -2 : f.out[0]->shape.rank;
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(got, (INT64_C(1) << 53) - 1);
  WM_CHECK_INT_EQ(rank, 1);
}

WM_TEST(reduce_sum_with_empty_axes_is_noop_only_when_asked) {
  for (int noop = 0; noop < 2; noop++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 13));
    int64_t dims[2] = {2, 3};
    WM_CHECK_OK(
        wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dims, NULL));
    WM_CHECK_OK(add_reduce(&f, "ReduceSum", 13, 13, NULL, 0, 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "noop_with_empty_axes", noop));
    wm_status_t s = wm_op_fixture_run(&f);
    static const double all[1] = {15};
    static const double same[6] = {0, 1, 2, 3, 4, 5};
    bool ok =
        !s && f.out[0]->shape.rank == 2 &&
        (noop ? wm_op_fixture_values_near(f.out[0], same, 6, WM_OP_FIXTURE_TOL)
              : wm_op_fixture_values_near(f.out[0], all, 1, WM_OP_FIXTURE_TOL));
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(reduce_with_unknown_axes_keeps_rank_only_with_keepdims) {
  for (int keep = 0; keep < 2; keep++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 13));
    int64_t dims[2] = {2, 3}, ad[1] = {1};
    WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 2, dims));
    WM_CHECK_OK(wm_op_fixture_add_input(&f, "axes", WM_DTYPE_INT64, 1, ad));
    const char *in[2] = {"x", "axes"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "ReduceSum", in, 2, 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "keepdims", keep));
    wm_type_t t;
    wm_status_t s = wm_op_fixture_infer(&f, &t);
    wm_op_fixture_deinit(&f);
    WM_CHECK_OK(s);
    WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_FLOAT);
    WM_CHECK_INT_EQ(t.shape.rank, keep ? 2 : -1);
  }
}

WM_TEST(reduce_rejects_repeated_and_out_of_range_axes) {
  static const int64_t twice[2] = {1, -1}, far[1] = {2};
  for (int c = 0; c < 2; c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 13));
    int64_t dims[2] = {2, 3};
    WM_CHECK_OK(
        wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dims, NULL));
    WM_CHECK_OK(
        add_reduce(&f, "ReduceMax", 13, 18, c ? far : twice, c ? 1 : 2, 1));
    wm_status_t s = wm_op_fixture_run(&f);
    wm_op_fixture_deinit(&f);
    WM_CHECK_ERR(s, INVALID_ARGUMENT,
                 c ? "axis 2 is out of range for rank 2" : "listed twice");
  }
}

WM_TEST(argmax_and_argmin_pick_first_or_last_ties) {
  static const struct {
    const char *op;
    int64_t last;
    double want[2];
  } cases[] = {
      {"ArgMax", 0, {1, 0}},
      {"ArgMax", 1, {2, 2}},
      {"ArgMin", 0, {0, 1}},
      {"ArgMin", 1, {0, 1}},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 13));
    int64_t dims[2] = {2, 3};
    static const double x[6] = {2, 5, 5, 7, 1, 7};
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dims, x));
    const char *in[1] = {"x"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, cases[c].op, in, 1, 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", -1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "keepdims", 0));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "select_last_index", cases[c].last));
    wm_status_t s = wm_op_fixture_run(&f);
    bool ok = !s && f.out[0]->dtype == WM_DTYPE_INT64 &&
              f.out[0]->shape.rank == 1 &&
              wm_op_fixture_values_near(f.out[0], cases[c].want, 2,
                                        WM_OP_FIXTURE_TOL);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(topk_orders_ties_by_index) {
  for (int largest = 0; largest < 2; largest++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 13));
    int64_t dims[1] = {5}, kd[1] = {1};
    static const double x[5] = {3, 1, 3, 2, 1};
    static const double k[1] = {3};
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_INT32, 1, dims, x));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "k", WM_DTYPE_INT64, 1, kd, k));
    const char *in[2] = {"x", "k"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "TopK", in, 2, 2));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "largest", largest));
    wm_status_t s = wm_op_fixture_run(&f);
    static const double big_v[3] = {3, 3, 2}, big_i[3] = {0, 2, 3};
    static const double small_v[3] = {1, 1, 2}, small_i[3] = {1, 4, 3};
    bool ok = !s &&
              wm_op_fixture_values_near(f.out[0], largest ? big_v : small_v, 3,
                                        WM_OP_FIXTURE_TOL) &&
              wm_op_fixture_values_near(f.out[1], largest ? big_i : small_i, 3,
                                        WM_OP_FIXTURE_TOL);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(topk_rejects_k_larger_than_axis) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dims[1] = {2}, kd[1] = {1};
  static const double k[1] = {3};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, dims, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "k", WM_DTYPE_INT64, 1, kd, k));
  const char *in[2] = {"x", "k"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "TopK", in, 2, 2));
  wm_status_t s = wm_op_fixture_run(&f);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "k 3 exceeds dim 2 of axis 0");
}

WM_TEST(cumsum_supports_exclusive_and_reverse) {
  static const double want[4][4] = {
      {1, 3, 6, 10}, {0, 1, 3, 6}, {10, 9, 7, 4}, {9, 7, 4, 0}};
  for (int c = 0; c < 4; c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 14));
    int64_t dims[1] = {4};
    static const double x[4] = {1, 2, 3, 4};
    static const double axis[1] = {-1};
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_DOUBLE, 1, dims, x));
    WM_CHECK_OK(
        wm_op_fixture_add_const(&f, "axis", WM_DTYPE_INT32, 0, NULL, axis));
    const char *in[2] = {"x", "axis"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "CumSum", in, 2, 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "exclusive", c & 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "reverse", c >> 1));
    wm_status_t s = wm_op_fixture_run(&f);
    bool ok = !s && wm_op_fixture_values_near(f.out[0], want[c], 4,
                                              WM_OP_FIXTURE_TOL);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(cumprod_supports_exclusive_and_reverse) {
  static const double want[4][4] = {
      {1, 2, 6, 24}, {1, 1, 2, 6}, {24, 24, 12, 4}, {24, 12, 4, 1}};
  for (int c = 0; c < 4; c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 26));
    int64_t dims[1] = {4};
    static const double x[4] = {1, 2, 3, 4};
    static const double axis[1] = {0};
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, dims, x));
    WM_CHECK_OK(
        wm_op_fixture_add_const(&f, "axis", WM_DTYPE_INT64, 0, NULL, axis));
    const char *in[2] = {"x", "axis"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "CumProd", in, 2, 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "exclusive", c & 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "reverse", c >> 1));
    wm_status_t s = wm_op_fixture_run(&f);
    bool ok = !s && wm_op_fixture_values_near(f.out[0], want[c], 4,
                                              WM_OP_FIXTURE_TOL);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

// 2^32 * 2^32 wraps to 0 in int64, as numpy's cumprod does; the middle
// axis of [2,2,2] runs within each outer block.
WM_TEST(cumprod_of_int64_is_exact_and_wraps) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 26));
  int64_t dims[3] = {2, 2, 2};
  int64_t big = INT64_C(1) << 32;
  const int64_t x[8] = {3, big, 5, big, 7, 11, 13, 17};
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x", WM_DTYPE_INT64, 3, dims, x));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "axis", WM_DTYPE_INT32, 0, NULL,
                                          (const int64_t[]){1}));
  const char *in[2] = {"x", "axis"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "CumProd", in, 2, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const int64_t want[8] = {3, INT64_C(1) << 32, 15, 0, 7, 11, 91, 187};
  bool ok = !s;
  for (size_t i = 0; i < 8 && ok; i++) {
    ok = wm_tensor_get_i64(f.out[0], i) == want[i];
  }
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(cumprod_rejects_a_bad_axis_and_is_unknown_before_opset_26) {
  wm_op_fixture_t f;
  int64_t dims[1] = {3};
  const char *in[2] = {"x", "axis"};
  WM_CHECK_OK(wm_op_fixture_init(&f, 26));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, dims, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "axis", 2, (const int64_t[]){0, 0}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "CumProd", in, 2, 1));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                     "input 1 (axis) must be one integer");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 26));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, dims, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "axis", 1, (const int64_t[]){-2}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "CumProd", in, 2, 1));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                "axis -2 is out of range for rank 1");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 25));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, dims, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "axis", 1, (const int64_t[]){0}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "CumProd", in, 2, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, UNIMPLEMENTED, "CumProd");
}

// Max and min of bool rows; an empty row gives false (max) or true (min),
// the identities of or and and. Bool is accepted from opset 20 only.
WM_TEST(reduce_max_and_min_take_bool_from_opset_20) {
  static const int64_t x[6] = {1, 0, 0, 1, 1, 1};
  static const struct {
    const char *op;
    int64_t dim1;
    int64_t want[2];
  } cases[] = {
      {"ReduceMax", 3, {1, 1}},
      {"ReduceMin", 3, {0, 1}},
      {"ReduceMax", 0, {0, 0}},
      {"ReduceMin", 0, {1, 1}},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 20));
    int64_t dims[2] = {2, cases[c].dim1}, axes[1] = {1};
    WM_CHECK_OK(
        wm_op_fixture_add_const_i64(&f, "x", WM_DTYPE_BOOL, 2, dims, x));
    WM_CHECK_OK(add_reduce(&f, cases[c].op, 20, 18, axes, 1, 0));
    wm_status_t s = wm_op_fixture_run(&f);
    bool ok = !s && f.out[0]->dtype == WM_DTYPE_BOOL &&
              wm_tensor_get_i64(f.out[0], 0) == cases[c].want[0] &&
              wm_tensor_get_i64(f.out[0], 1) == cases[c].want[1];
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 18));
  int64_t dims[2] = {2, 3}, axes[1] = {1};
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x", WM_DTYPE_BOOL, 2, dims, x));
  WM_CHECK_OK(add_reduce(&f, "ReduceMax", 18, 18, axes, 1, 0));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f), "type bool");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 20));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x", WM_DTYPE_BOOL, 2, dims, x));
  WM_CHECK_OK(add_reduce(&f, "ReduceSum", 20, 13, axes, 1, 0));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f), "type bool");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

// The resolve slot: the reduced dims in ascending order (negative axes
// normalised, every dim when none is listed, none with
// noop_with_empty_axes) and keepdims.
WM_TEST(reduce_resolves_the_reduced_dims) {
  static const int64_t all[3] = {0, 1, 2};
  for (int k = 0; k < 3; k++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 13));
    int64_t dx[3] = {2, 3, 4};
    WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
    WM_CHECK_OK(wm_op_fixture_add_ints(&f, "ax", 2, (const int64_t[]){-1, 0}));
    const char *in[2] = {"x", "ax"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "ReduceSum", in, k == 0 ? 2 : 1, 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "keepdims", 0));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "noop_with_empty_axes", k == 2));
    wm_op_params_t p;
    wm_status_t s = wm_op_fixture_resolve(&f, &p);
    const int64_t *want = k == 0 ? (const int64_t[]){0, 2} : all;
    int32_t n = k == 0 ? 2 : k == 1 ? 3 : 0;
    bool ok = !s && wm_op_fixture_param_ints_are(&p, "axes", want, n) &&
              wm_op_fixture_param_int_is(&p, "keepdims", 0);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

static const wm_test_case_t cases[] = {
    WM_CASE(reduce_resolves_the_reduced_dims),
    WM_CASE(reduce_family_matches_hand_computed_values),
    WM_CASE(reduce_over_empty_set_gives_identity_values),
    WM_CASE(reduce_sum_of_int64_is_exact),
    WM_CASE(reduce_sum_with_empty_axes_is_noop_only_when_asked),
    WM_CASE(reduce_with_unknown_axes_keeps_rank_only_with_keepdims),
    WM_CASE(reduce_rejects_repeated_and_out_of_range_axes),
    WM_CASE(argmax_and_argmin_pick_first_or_last_ties),
    WM_CASE(topk_orders_ties_by_index),
    WM_CASE(topk_rejects_k_larger_than_axis),
    WM_CASE(cumsum_supports_exclusive_and_reverse),
    WM_CASE(cumprod_supports_exclusive_and_reverse),
    WM_CASE(cumprod_of_int64_is_exact_and_wraps),
    WM_CASE(cumprod_rejects_a_bad_axis_and_is_unknown_before_opset_26),
    WM_CASE(reduce_max_and_min_take_bool_from_opset_20),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
