// Tests of the tensor operators (Reshape ... SpaceToDepth, ReverseSequence,
// CenterCropPad, TensorScatter, BitCast): kernels against hand-computed
// values on several dtypes, static shape rules with unknown inputs, and
// error messages.
#include <stdlib.h>
#include <string.h>

#include "op_fixture.h"
#include "wm_test.h"

WM_TEST(reshape_copies_zero_dims_and_infers_minus_one) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[3] = {2, 3, 4};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "s", 2, (const int64_t[]){0, -1}));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Reshape", in, 2, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 12}) &&
            wm_tensor_get_f64(f.out[0], 23) == 23;
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(reshape_rejects_wrong_element_count) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {2, 3};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "s", 2, (const int64_t[]){4, 2}));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Reshape", in, 2, 1));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                     "cannot reshape 6 elements of [2,3] "
                                     "into [4,2]");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(reshape_allowzero_keeps_zero_dims) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  int64_t dx[2] = {0, 3};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "s", 2, (const int64_t[]){3, 0}));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Reshape", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "allowzero", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){3, 0});
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(reshape_with_unknown_shape_value_infers_rank_only) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {2, 3}, ds[1] = {3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 2, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "s", WM_DTYPE_INT64, 1, ds));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Reshape", in, 2, 1));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 3);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
}

// An empty shape input has no values to wait for: the count is checked at
// inference, where a plan takes [] as known (found by session_run_fuzz:
// the run failed INTERNAL copying 24 elements into 1).
WM_TEST(reshape_to_an_empty_shape_input_checks_the_count) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[3] = {6, 2, 2}, ds[1] = {0};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "s", WM_DTYPE_INT64, 1, ds));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Reshape", in, 2, 1));
  wm_type_t t;
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_infer(&f, &t),
                                     "cannot reshape 24 elements of [6,2,2] "
                                     "into []");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  int64_t d1[2] = {1, 1};
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 2, d1));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "s", WM_DTYPE_INT64, 1, ds));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Reshape", in, 2, 1));
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 0);
}

// Infers Squeeze (opset 13) of x |dx| (rank 3) by a non-constant axes
// input of |n_axes| values into |t|.
static wm_status_t squeeze_by_input(const int64_t dx[3], int64_t n_axes,
                                    wm_type_t *t) {
  wm_op_fixture_t f;
  wm_status_t s = wm_op_fixture_init(&f, 13);
  const char *in[2] = {"x", "a"};
  if (!s) {
    s = wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx);
  }
  if (!s) {
    s = wm_op_fixture_add_input(&f, "a", WM_DTYPE_INT64, 1, &n_axes);
  }
  if (!s) {
    s = wm_op_fixture_add_node(&f, "Squeeze", in, 2, 1);
  }
  if (!s) {
    s = wm_op_fixture_infer(&f, t);
  }
  wm_op_fixture_deinit(&f);
  return s;
}

// Squeeze by axes the graph computes, as many as the input's dims: the
// output is not taken as [] before the run has checked the values (found
// by session_run_fuzz: the plan copied [3,3,3] into one element). Fewer
// axes than dims leave their dims unknown, the rank known.
WM_TEST(squeeze_of_every_dim_by_unknown_axes_waits_for_the_values) {
  wm_type_t t;
  WM_CHECK_OK(squeeze_by_input((const int64_t[]){3, 3, 3}, 3, &t));
  WM_CHECK_INT_EQ(t.shape.rank, -1);
  WM_CHECK_OK(squeeze_by_input((const int64_t[]){1, 1, 1}, 3, &t));
  WM_CHECK_INT_EQ(t.shape.rank, -1);
  WM_CHECK_OK(squeeze_by_input((const int64_t[]){1, 1, 1}, 2, &t));
  WM_CHECK_INT_EQ(t.shape.rank, 1);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
}

// An empty result may have dims whose product overflows int64: its
// strides must not overflow (found by session_run_fuzz, UBSan in
// wm_shape_strides from Expand's constant folding).
WM_TEST(expand_to_an_empty_shape_with_huge_dims_gives_an_empty_tensor) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_INT32, 0, NULL, NULL));
  const int64_t shape[4] = {0, INT64_C(1) << 40, INT64_C(1) << 40, 1};
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "s", 4, shape));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Expand", in, 2, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s && f.out[0]->count == 0 && f.out[0]->shape.rank == 4 &&
            f.out[0]->shape.dims[1] == INT64_C(1) << 40;
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// Tile of an empty [0, 1, 5, 6] by 1.37e18 on the last dim: the output is
// empty, and its strides (5 * 8.2e18) are not worked out (found by
// session_run_fuzz: UBSan signed overflow in tile_run).
WM_TEST(tile_to_an_empty_output_with_huge_dims_copies_nothing) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  const int64_t dx[4] = {0, 1, 5, 6};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 4, dx, NULL));
  const int64_t reps[4] = {1, 1, 1, INT64_C(1374723781959876860)};
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "r", 4, reps));
  const char *in[2] = {"x", "r"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Tile", in, 2, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s && f.out[0]->count == 0 &&
            f.out[0]->shape.dims[3] == INT64_C(8248342691759261160);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(reshape_by_shape_of_graph_input_keeps_rank) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 15));
  int64_t dx[3] = {2, 3, 4}, dy[1] = {12};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "y", WM_DTYPE_FLOAT, 1, dy));
  const char *in1[1] = {"x"};
  const char *out1[1] = {"xs"};
  int32_t n1;
  WM_CHECK_OK(
      wm_graph_add_node(f.graph, "Shape", "", "shape", in1, 1, out1, 1, &n1));
  WM_CHECK_OK(wm_graph_add_attr_int(f.graph, n1, "start", 1));
  const char *in2[2] = {"y", "xs"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Reshape", in2, 2, 1));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_type_t xs = f.graph->values[wm_graph_find_value(f.graph, "xs")].type;
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(xs.dtype, WM_DTYPE_INT64);
  WM_CHECK_INT_EQ(xs.shape.rank, 1);
  WM_CHECK_INT_EQ(xs.shape.dims[0], 2);
  WM_CHECK_INT_EQ(t.shape.rank, 2);
}

WM_TEST(transpose_default_reverses_and_perm_permutes) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[3] = {2, 3, 4};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_INT32, 3, dx, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Transpose", in, 1, 1));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "perm", (const int64_t[]){1, 0, 2}, 3));
  wm_status_t s = wm_op_fixture_run(&f);
  // out[j][i][k] = x[i][j][k] = 12 i + 4 j + k
  bool ok =
      !s && wm_op_fixture_shape_is(f.out[0], 3, (const int64_t[]){3, 2, 4});
  for (int j = 0; ok && j < 3; j++) {
    for (int i = 0; ok && i < 2; i++) {
      for (int k = 0; ok && k < 4; k++) {
        ok = wm_tensor_get_i64(f.out[0], (size_t)(j * 8 + i * 4 + k)) ==
             12 * i + 4 * j + k;
      }
    }
  }
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(transpose_rejects_bad_perm) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {2, 3};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Transpose", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "perm", (const int64_t[]){1, 1}, 2));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                     "perm [1,1] is not a permutation");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(concat_copies_strings) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t da[2] = {2, 1}, db[2] = {2, 2};
  WM_CHECK_OK(wm_op_fixture_add_strings(&f, "a", 2, da,
                                        (const char *const[]){"a", "b"}));
  WM_CHECK_OK(wm_op_fixture_add_strings(
      &f, "b", 2, db, (const char *const[]){"c", "d", "e", "f"}));
  const char *in[2] = {"a", "b"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Concat", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", -1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const char *const want[6] = {"a", "c", "d", "b", "e", "f"};
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 3});
  ok = ok && wm_op_fixture_strings_are(f.out[0], want, 6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(concat_rejects_mismatched_dims) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t da[2] = {2, 1}, db[2] = {3, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "a", WM_DTYPE_FLOAT, 2, da, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "b", WM_DTYPE_FLOAT, 2, db, NULL));
  const char *in[2] = {"a", "b"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Concat", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", 1));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                     "input 1 [3,2] does not match [2,1]");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(split_by_input_and_evenly) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {2, 6};
  WM_CHECK_OK(wm_op_fixture_add_const(
      &f, "x", WM_DTYPE_BOOL, 2, dx,
      (const double[]){1, 0, 1, 1, 0, 0, 0, 1, 1, 0, 1, 0}));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "sp", 2, (const int64_t[]){2, 4}));
  const char *in[2] = {"x", "sp"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Split", in, 2, 2));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s &&
            wm_op_fixture_values_near(f.out[0], (const double[]){1, 0, 0, 1}, 4,
                                      WM_OP_FIXTURE_TOL) &&
            wm_op_fixture_values_near(f.out[1],
                                      (const double[]){1, 1, 0, 0, 1, 0, 1, 0},
                                      8, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  const char *in1[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Split", in1, 1, 3));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", 1));
  s = wm_op_fixture_run(&f);
  ok = !s && wm_op_fixture_values_near(f.out[2], (const double[]){4, 5, 10, 11},
                                       4, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(squeeze_and_unsqueeze_read_axes_by_opset) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[3] = {1, 3, 1};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Squeeze", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "axes", (const int64_t[]){-1}, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){1, 3});
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "ax", 2, (const int64_t[]){0, -1}));
  const char *in2[2] = {"x", "ax"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Unsqueeze", in2, 2, 1));
  s = wm_op_fixture_run(&f);
  ok = !s &&
       wm_op_fixture_shape_is(f.out[0], 5, (const int64_t[]){1, 1, 3, 1, 1});
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "ax", 1, (const int64_t[]){1}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Squeeze", in2, 2, 1));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                "cannot squeeze axis 1 of size 3");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(expand_and_tile_repeat_data) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {2, 1};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_INT64, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "s", 3, (const int64_t[]){2, 1, 3}));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Expand", in, 2, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 3, (const int64_t[]){2, 2, 3}) &&
            wm_op_fixture_values_near(
                f.out[0], (const double[]){0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1},
                12, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dt[2] = {2, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dt, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "r", 2, (const int64_t[]){2, 2}));
  const char *in2[2] = {"x", "r"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Tile", in2, 2, 1));
  s = wm_op_fixture_run(&f);
  ok = !s && wm_op_fixture_values_near(f.out[0],
                                       (const double[]){0, 1, 0, 1, 2, 3, 2, 3,
                                                        0, 1, 0, 1, 2, 3, 2, 3},
                                       16, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// Runs Pad on [[0,1,2],[3,4,5]] with |pads| in |mode|.
static void check_pad(const char *mode, const int64_t *pads,
                      const int64_t *dims, const double *want, size_t n) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {2, 3};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "p", 4, pads));
  WM_CHECK_OK(wm_op_fixture_add_const(
      &f, "v", WM_DTYPE_FLOAT, 0, (const int64_t[]){1}, (const double[]){9}));
  const char *in[3] = {"x", "p", "v"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Pad", in, 3, 1));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "mode", mode));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 2, dims) &&
            wm_op_fixture_values_near(f.out[0], want, n, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(pad_constant_reflect_edge_and_crop) {
  check_pad("constant", (const int64_t[]){0, 1, 0, 0}, (const int64_t[]){2, 4},
            (const double[]){9, 0, 1, 2, 9, 3, 4, 5}, 8);
  check_pad("reflect", (const int64_t[]){0, 2, 0, 1}, (const int64_t[]){2, 6},
            (const double[]){2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4}, 12);
  check_pad("edge", (const int64_t[]){1, 0, 0, 1}, (const int64_t[]){3, 4},
            (const double[]){0, 1, 2, 2, 0, 1, 2, 2, 3, 4, 5, 5}, 12);
  check_pad("constant", (const int64_t[]){0, -1, -1, 0},
            (const int64_t[]){1, 2}, (const double[]){1, 2}, 2);
}

WM_TEST(pad_before_opset_11_reads_attributes) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 2));
  int64_t dx[1] = {2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_INT32, 1, dx, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Pad", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "pads", (const int64_t[]){1, 2}, 2));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "value", 7));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok =
      !s && wm_op_fixture_values_near(f.out[0], (const double[]){7, 0, 1, 7, 7},
                                      5, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(shape_honours_start_and_end_and_size_counts) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 15));
  int64_t dx[4] = {2, 3, 4, 5};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_UINT8, 4, dx, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Shape", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "start", -3));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "end", -1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_INT64 &&
            wm_op_fixture_values_near(f.out[0], (const double[]){3, 4}, 2,
                                      WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_UINT8, 4, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Size", in, 1, 1));
  s = wm_op_fixture_run(&f);
  ok = !s && f.out[0]->shape.rank == 0 && wm_tensor_get_i64(f.out[0], 0) == 120;
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// Runs DepthToSpace (mode |mode|, or SpaceToDepth when NULL) with
// blocksize 2 on 0..n-1 of |dims|.
static wm_status_t run_block(wm_op_fixture_t *f, const char *mode,
                             const int64_t *dims) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 13));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "x", WM_DTYPE_FLOAT, 4, dims, NULL));
  const char *in[1] = {"x"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(
      f, mode ? "DepthToSpace" : "SpaceToDepth", in, 1, 1));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_int(f, "blocksize", 2));
  if (mode) {
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_string(f, "mode", mode));
  }
  return wm_op_fixture_run(f);
}

WM_TEST(depth_to_space_dcr_crd_and_space_to_depth) {
  // x = 0..15 as [1,4,2,2].
  int64_t dx[4] = {1, 4, 2, 2};
  wm_op_fixture_t f;
  wm_status_t s = run_block(&f, "DCR", dx);
  bool ok = !s && wm_op_fixture_values_near(
                      f.out[0],
                      (const double[]){0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7, 10,
                                       14, 11, 15},
                      16, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  s = run_block(&f, "CRD", dx);
  ok = !s &&
       wm_op_fixture_values_near(f.out[0],
                                 (const double[]){0, 4, 1, 5, 8, 12, 9, 13, 2,
                                                  6, 3, 7, 10, 14, 11, 15},
                                 16, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  // SpaceToDepth of [1,1,4,4] 0..15: channel (i,j) holds x[2h+i][2w+j].
  int64_t ds[4] = {1, 1, 4, 4};
  s = run_block(&f, NULL, ds);
  ok = !s &&
       wm_op_fixture_shape_is(f.out[0], 4, (const int64_t[]){1, 4, 2, 2}) &&
       wm_op_fixture_values_near(f.out[0],
                                 (const double[]){0, 2, 8, 10, 1, 3, 9, 11, 4,
                                                  6, 12, 14, 5, 7, 13, 15},
                                 16, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(depth_to_space_crd_differs_with_more_channels) {
  // x = 0..7 as [1,8,1,1]: DCR takes channel b1*4+b2*2+c, CRD c*4+b1*2+b2.
  int64_t dx[4] = {1, 8, 1, 1};
  wm_op_fixture_t f;
  wm_status_t s = run_block(&f, "DCR", dx);
  bool ok = !s && wm_op_fixture_values_near(
                      f.out[0], (const double[]){0, 2, 4, 6, 1, 3, 5, 7}, 8,
                      WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  s = run_block(&f, "CRD", dx);
  ok = !s && wm_op_fixture_values_near(f.out[0],
                                       (const double[]){0, 1, 2, 3, 4, 5, 6, 7},
                                       8, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(tile_and_pad_reject_impossible_sizes) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {2, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "r", 2,
                                     (const int64_t[]){INT64_C(1) << 62, 4}));
  const char *in[2] = {"x", "r"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Tile", in, 2, 1));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                     "tiled 4611686018427387904 times");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(
      &f, "r", 2, (const int64_t[]){INT64_C(1) << 40, INT64_C(1) << 40}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Tile", in, 2, 1));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f), "too large");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(
      wm_op_fixture_add_ints(&f, "p", 4, (const int64_t[]){0, -3, 0, 0}));
  const char *in2[2] = {"x", "p"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Pad", in2, 2, 1));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                "pads -3 and 0 on dim 1 of size 2");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "s", 2, (const int64_t[]){3, 2}));
  const char *in3[2] = {"x", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Expand", in3, 2, 1));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f), "node \"n\" (Expand)");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(reverse_sequence_reverses_prefixes_on_either_axis) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 10));
  int64_t dx[3] = {2, 3, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "l", 2, (const int64_t[]){3, 0}));
  const char *in[2] = {"x", "l"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "ReverseSequence", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "batch_axis", 0));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "time_axis", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[12] = {4, 5, 2, 3, 0, 1, 6, 7, 8, 9, 10, 11};
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 3, dx) &&
            wm_op_fixture_values_near(f.out[0], want, 12, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  // Strings, time axis 0 (the defaults): columns are the sequences.
  WM_CHECK_OK(wm_op_fixture_init(&f, 10));
  int64_t ds[2] = {3, 2};
  WM_CHECK_OK(wm_op_fixture_add_strings(
      &f, "x", 2, ds, (const char *const[]){"a", "b", "c", "d", "e", "f"}));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "l", 2, (const int64_t[]){2, 3}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "ReverseSequence", in, 2, 1));
  s = wm_op_fixture_run(&f);
  static const char *const want_s[6] = {"c", "f", "a", "d", "e", "b"};
  ok = !s && wm_op_fixture_strings_are(f.out[0], want_s, 6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// Runs ReverseSequence on a [3, 2] input with |lens| (2 values) and the
// given axes; returns the status.
static wm_status_t reverse_sequence_try(const int64_t *lens, size_t n_lens,
                                        int64_t batch_axis, int64_t time_axis) {
  wm_op_fixture_t f;
  WM_RETURN_IF_ERROR(wm_op_fixture_init(&f, 10));
  int64_t dx[2] = {3, 2};
  const char *in[2] = {"x", "l"};
  wm_status_t s = wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL);
  if (!s) {
    s = wm_op_fixture_add_ints(&f, "l", n_lens, lens);
  }
  if (!s) {
    s = wm_op_fixture_add_node(&f, "ReverseSequence", in, 2, 1);
  }
  if (!s) {
    s = wm_op_fixture_attr_int(&f, "batch_axis", batch_axis);
  }
  if (!s) {
    s = wm_op_fixture_attr_int(&f, "time_axis", time_axis);
  }
  if (!s) {
    s = wm_op_fixture_run(&f);
  }
  wm_op_fixture_deinit(&f);
  return s;
}

WM_TEST(reverse_sequence_rejects_bad_lengths_and_axes) {
  WM_CHECK(wm_op_fixture_fails_with(
      reverse_sequence_try((const int64_t[]){1, 4}, 2, 1, 0),
      "sequence_lens[1] is 4, outside [0, 3]"));
  WM_CHECK(wm_op_fixture_fails_with(
      reverse_sequence_try((const int64_t[]){-1, 1}, 2, 1, 0),
      "sequence_lens[0] is -1"));
  WM_CHECK(wm_op_fixture_fails_with(
      reverse_sequence_try((const int64_t[]){1, 1}, 2, 1, 1),
      "batch_axis 1 and time_axis 1 must be 0 and 1"));
  WM_CHECK(wm_op_fixture_fails_with(
      reverse_sequence_try((const int64_t[]){1, 1, 1}, 3, 1, 0),
      "sequence_lens [3] does not match batch axis 1"));
}

// SpaceToDepth of [1,2,2,2] 0..7 (one 2x2 block per channel): DCR puts
// channel c of block offset (i,j) at (i*2+j)*2+c, CRD at c*4+i*2+j. The
// mode attribute exists from opset 28.
WM_TEST(space_to_depth_takes_crd_mode_from_opset_28) {
  int64_t dx[4] = {1, 2, 2, 2};
  static const double dcr[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  static const double crd[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  static const struct {
    int64_t opset;
    const char *mode;
    const double *want;
  } cases[] = {{28, "CRD", crd}, {28, "DCR", dcr}, {28, NULL, dcr}};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, cases[c].opset));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 4, dx, NULL));
    const char *in[1] = {"x"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "SpaceToDepth", in, 1, 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "blocksize", 2));
    if (cases[c].mode) {
      WM_CHECK_OK(wm_op_fixture_attr_string(&f, "mode", cases[c].mode));
    }
    wm_status_t s = wm_op_fixture_run(&f);
    bool ok =
        !s &&
        wm_op_fixture_shape_is(f.out[0], 4, (const int64_t[]){1, 8, 1, 1}) &&
        wm_op_fixture_values_near(f.out[0], cases[c].want, 8, 0);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 28));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 4, dx, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "SpaceToDepth", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "blocksize", 2));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "mode", "RCD"));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                     "mode \"RCD\" is not DCR or CRD");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

// Runs CenterCropPad on |x| (float 0..n-1 of |dims|) to |shape|, with
// |axes| when |n_axes| > 0.
static wm_status_t run_crop_pad(wm_op_fixture_t *f, int32_t rank,
                                const int64_t *dims, const int64_t *shape,
                                size_t n_shape, const int64_t *axes,
                                size_t n_axes) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 18));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "x", WM_DTYPE_FLOAT, rank, dims, NULL));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_ints(f, "s", n_shape, shape));
  const char *in[2] = {"x", "s"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "CenterCropPad", in, 2, 1));
  if (n_axes) {
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_ints(f, "axes", axes, n_axes));
  }
  return wm_op_fixture_run(f);
}

// x = 0..9 as [2,5]. To [4,3]: rows padded by 1 on each side, columns
// cropped from 1. To 2 columns (axes [-1]): cropped from 1. To [5,8]: the
// odd differences 3 start at 1, the extra row and column at the end.
WM_TEST(center_crop_pad_centers_the_window_and_zero_fills) {
  int64_t dx[2] = {2, 5};
  wm_op_fixture_t f;
  wm_status_t s = run_crop_pad(&f, 2, dx, (const int64_t[]){4, 3}, 2, NULL, 0);
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){4, 3}) &&
            wm_op_fixture_values_near(
                f.out[0], (const double[]){0, 0, 0, 1, 2, 3, 6, 7, 8, 0, 0, 0},
                12, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  s = run_crop_pad(&f, 2, dx, (const int64_t[]){2}, 1, (const int64_t[]){-1},
                   1);
  ok = !s && wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 2}) &&
       wm_op_fixture_values_near(f.out[0], (const double[]){1, 2, 6, 7}, 4, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  double want[40];
  for (int r = 0; r < 5; r++) {
    for (int c = 0; c < 8; c++) {
      bool inside = r >= 1 && r <= 2 && c >= 1 && c <= 5;
      want[r * 8 + c] = inside ? (r - 1) * 5 + (c - 1) : 0;
    }
  }
  s = run_crop_pad(&f, 2, dx, (const int64_t[]){5, 8}, 2, NULL, 0);
  ok = !s && wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){5, 8}) &&
       wm_op_fixture_values_near(f.out[0], want, 40, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(center_crop_pad_pads_strings_with_empty_strings) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 18));
  int64_t dx[1] = {2};
  const char *x[2] = {"a", "b"};
  WM_CHECK_OK(wm_op_fixture_add_strings(&f, "x", 1, dx, x));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "s", 1, (const int64_t[]){4}));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "CenterCropPad", in, 2, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  const char *want[4] = {"", "a", "b", ""};
  bool ok = !s && wm_op_fixture_strings_are(f.out[0], want, 4);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(center_crop_pad_rejects_bad_shapes_and_axes) {
  int64_t dx[2] = {2, 5};
  wm_op_fixture_t f;
  bool ok = wm_op_fixture_fails_with(
      run_crop_pad(&f, 2, dx, (const int64_t[]){4}, 1, NULL, 0),
      "shape has 1 values for 2 axes");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  ok = wm_op_fixture_fails_with(
      run_crop_pad(&f, 2, dx, (const int64_t[]){4, -1}, 2, NULL, 0),
      "shape [4,-1] has negative length -1");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  ok = wm_op_fixture_fails_with(
      run_crop_pad(&f, 2, dx, (const int64_t[]){4}, 1, (const int64_t[]){2}, 1),
      "axis 2 is out of range for rank 2");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  ok = wm_op_fixture_fails_with(
      run_crop_pad(&f, 2, dx,
                   (const int64_t[]){INT64_C(1) << 40, INT64_C(1) << 40}, 2,
                   NULL, 0),
      "element count of [1099511627776,1099511627776] overflows");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(center_crop_pad_with_unknown_shape_value_keeps_other_dims) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 18));
  int64_t dx[3] = {2, 5, 7}, ds[1] = {1};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "s", WM_DTYPE_INT64, 1, ds));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "CenterCropPad", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "axes", (const int64_t[]){1}, 1));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  bool ok = !s && t.shape.rank == 3 && t.shape.dims[0] == 2 &&
            t.shape.dims[1] == -1 && t.shape.dims[2] == 7;
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// Runs TensorScatter on past = 0..7 as [2,4,1] and update = 100..103 as
// [2,|seq|,1] with |write| (NULL: input omitted) in |mode|.
static wm_status_t run_scatter(wm_op_fixture_t *f, const char *mode,
                               int64_t seq, const int64_t *write,
                               size_t n_write, int64_t axis) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 24));
  int64_t dp[3] = {2, 4, 1}, du[3] = {2, seq, 1};
  double u[10];
  for (int i = 0; i < 10; i++) {
    u[i] = 100 + i;
  }
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "p", WM_DTYPE_FLOAT, 3, dp, NULL));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "u", WM_DTYPE_FLOAT, 3, du, u));
  if (write) {
    WM_RETURN_IF_ERROR(wm_op_fixture_add_ints(f, "w", n_write, write));
  }
  const char *in[3] = {"p", "u", "w"};
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_node(f, "TensorScatter", in, write ? 3 : 2, 1));
  if (mode) {
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_string(f, "mode", mode));
  }
  if (axis != -2) {
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_int(f, "axis", axis));
  }
  return wm_op_fixture_run(f);
}

WM_TEST(tensor_scatter_writes_rows_linearly_or_circularly) {
  wm_op_fixture_t f;
  wm_status_t s = run_scatter(&f, "linear", 2, (const int64_t[]){1, 2}, 2, -2);
  bool ok = !s && wm_op_fixture_values_near(
                      f.out[0],
                      (const double[]){0, 100, 101, 3, 4, 5, 102, 103}, 8, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  // Circular: 3 wraps to rows 3, 0; -1 counts from the end like 3.
  s = run_scatter(&f, "circular", 2, (const int64_t[]){3, -1}, 2, 1);
  ok = !s &&
       wm_op_fixture_values_near(
           f.out[0], (const double[]){101, 1, 2, 100, 103, 5, 6, 102}, 8, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  // No write_indices: every batch writes from row 0.
  s = run_scatter(&f, NULL, 1, NULL, 0, -2);
  ok = !s && wm_op_fixture_values_near(
                 f.out[0], (const double[]){100, 1, 2, 3, 101, 5, 6, 7}, 8, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(tensor_scatter_rejects_hostile_indices_and_shapes) {
  static const struct {
    const char *mode;
    int64_t seq;
    int64_t write[3];
    size_t n_write;
    int64_t axis;
    const char *want;
  } cases[] = {
      {"linear",
       2,
       {3, 0},
       2,
       -2,
       "write_indices[0] is 3: 2 rows from there leave [0, 4) of axis 1"},
      {"linear", 1, {0, -1}, 2, -2, "write_indices[1] is -1"},
      {"linear", 1, {INT64_MAX, 0}, 2, -2, "write_indices[0] is"},
      {"linear",
       1,
       {0, 0, 0},
       3,
       -2,
       "write_indices [3] does not match the batch of past_cache [2,4,1]"},
      {"linear",
       5,
       {0, 0},
       2,
       -2,
       "update [2,5,1] does not fit past_cache [2,4,1] along axis 1"},
      {"linear", 1, {0, 0}, 2, 0, "axis 0 is the batch axis 0"},
      {"linear", 1, {0, 0}, 2, 3, "axis 3 is out of range for rank 3"},
      {"ring", 1, {0, 0}, 2, -2, "mode \"ring\" is not"},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    wm_op_fixture_t f;
    bool ok = wm_op_fixture_fails_with(
        run_scatter(&f, cases[c].mode, cases[c].seq, cases[c].write,
                    cases[c].n_write, cases[c].axis),
        cases[c].want);
    wm_op_fixture_deinit(&f);
    WM_CHECK(ok);
  }
}

WM_TEST(bit_cast_reinterprets_bytes_of_the_same_size) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 26));
  int64_t d2[1] = {2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, d2,
                                      (const double[]){1.0, -2.0}));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "BitCast", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "to", WM_DTYPE_INT32));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_INT32 &&
            wm_tensor_get_i64(f.out[0], 0) == 0x3f800000 &&
            wm_tensor_get_i64(f.out[0], 1) == -0x40000000;
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  // Bytes other than 0 and 1 read as bool true.
  WM_CHECK_OK(wm_op_fixture_init(&f, 26));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x", WM_DTYPE_UINT8, 1, d2,
                                          (const int64_t[]){0, 2}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "BitCast", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "to", WM_DTYPE_BOOL));
  s = wm_op_fixture_run(&f);
  ok = !s && ((const uint8_t *)f.out[0]->data)[0] == 0 &&
       ((const uint8_t *)f.out[0]->data)[1] == 1;
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(bit_cast_rejects_other_sizes_strings_and_unknown_types) {
  static const struct {
    int64_t to;
    const char *want;
  } cases[] = {
      {WM_DTYPE_INT64, "cannot reinterpret float as int64: element sizes"},
      {WM_DTYPE_STRING, "to 8 is not a supported non-string data type"},
      {99, "to 99 is not a supported non-string data type"},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 26));
    int64_t d2[1] = {2};
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, d2, NULL));
    const char *in[1] = {"x"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "BitCast", in, 1, 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "to", cases[c].to));
    bool ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f), cases[c].want);
    wm_op_fixture_deinit(&f);
    WM_CHECK(ok);
  }
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 26));
  int64_t d1[1] = {1};
  const char *x[1] = {"a"};
  WM_CHECK_OK(wm_op_fixture_add_strings(&f, "x", 1, d1, x));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "BitCast", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "to", WM_DTYPE_INT64));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f), "string");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

// Builds Pad (opset 18) on x [2, 3] with axes [-1] and |pads| for that
// axis (NULL: the pads input omitted).
static wm_status_t pad_on_last_dim(wm_op_fixture_t *f, const int64_t *pads) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 18));
  int64_t dx[2] = {2, 3};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_input(f, "x", WM_DTYPE_FLOAT, 2, dx));
  if (pads) {
    WM_RETURN_IF_ERROR(wm_op_fixture_add_ints(f, "pads", 2, pads));
  }
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_ints(f, "axes", 1, (const int64_t[]){-1}));
  const char *in[4] = {"x", pads ? "pads" : "", "", "axes"};
  return wm_op_fixture_add_node(f, "Pad", in, 4, 1);
}

// Refused at inference: pads that keep the size in range but whose
// magnitude would overflow a source coordinate (UBSan signed overflow in
// pad_run for INT64_MIN and INT64_MAX), and omitted pads with axes given,
// whose axes must be freed (LeakSanitizer in pad_params). Both found by
// session_run_fuzz.
WM_TEST(pad_rejects_extreme_or_omitted_pads) {
  wm_op_fixture_t f;
  wm_type_t t;
  WM_CHECK_OK(pad_on_last_dim(&f, (const int64_t[]){INT64_MIN, INT64_MAX}));
  bool ok = wm_op_fixture_fails_with(
      wm_op_fixture_infer(&f, &t),
      "pads -9223372036854775808 and 9223372036854775807 on dim 1 are beyond "
      "+-2^62");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(pad_on_last_dim(&f, NULL));
  ok = wm_op_fixture_fails_with(wm_op_fixture_infer(&f, &t),
                                "pads are required");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

// The resolve slot: Pad's pads on every dim with axes applied, its mode.
WM_TEST(pad_resolves_pads_on_every_dim) {
  wm_op_fixture_t f;
  WM_CHECK_OK(pad_on_last_dim(&f, (const int64_t[]){1, 2}));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "mode", "reflect"));
  wm_op_params_t p;
  wm_status_t s = wm_op_fixture_resolve(&f, &p);
  const wm_op_param_t *mode = s ? NULL : wm_op_param_find(&p, "mode");
  bool ok = !s && mode && strcmp(mode->s, "reflect") == 0 &&
            !wm_op_param_find(&p, "value") &&
            wm_op_fixture_param_ints_are(&p, "pads",
                                         (const int64_t[]){0, 1, 0, 2}, 4);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// The resolve slot: Transpose's default perm reverses the dims; Concat's
// and Split's axes are normalised.
WM_TEST(transpose_concat_and_split_resolve_perm_and_axis) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[3] = {2, 3, 4};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  const char *in[2] = {"x", "x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Transpose", in, 1, 1));
  wm_op_params_t p;
  wm_status_t s = wm_op_fixture_resolve(&f, &p);
  bool ok = !s && wm_op_fixture_param_ints_are(&p, "perm",
                                               (const int64_t[]){2, 1, 0}, 3);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  static const char *const ops[2] = {"Concat", "Split"};
  for (int k = 0; k < 2; k++) {
    WM_CHECK_OK(wm_op_fixture_init(&f, 13));
    WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
    WM_CHECK_OK(wm_op_fixture_add_node(&f, ops[k], in, k ? 1 : 2, k ? 2 : 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", -1));
    s = wm_op_fixture_resolve(&f, &p);
    ok = !s && wm_op_fixture_param_int_is(&p, "axis", 2);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

static const wm_test_case_t cases[] = {
    WM_CASE(transpose_concat_and_split_resolve_perm_and_axis),
    WM_CASE(pad_rejects_extreme_or_omitted_pads),
    WM_CASE(pad_resolves_pads_on_every_dim),
    WM_CASE(tile_and_pad_reject_impossible_sizes),
    WM_CASE(reshape_copies_zero_dims_and_infers_minus_one),
    WM_CASE(reshape_rejects_wrong_element_count),
    WM_CASE(reshape_allowzero_keeps_zero_dims),
    WM_CASE(reshape_with_unknown_shape_value_infers_rank_only),
    WM_CASE(reshape_to_an_empty_shape_input_checks_the_count),
    WM_CASE(squeeze_of_every_dim_by_unknown_axes_waits_for_the_values),
    WM_CASE(expand_to_an_empty_shape_with_huge_dims_gives_an_empty_tensor),
    WM_CASE(tile_to_an_empty_output_with_huge_dims_copies_nothing),
    WM_CASE(reshape_by_shape_of_graph_input_keeps_rank),
    WM_CASE(transpose_default_reverses_and_perm_permutes),
    WM_CASE(transpose_rejects_bad_perm),
    WM_CASE(concat_copies_strings),
    WM_CASE(concat_rejects_mismatched_dims),
    WM_CASE(split_by_input_and_evenly),
    WM_CASE(squeeze_and_unsqueeze_read_axes_by_opset),
    WM_CASE(expand_and_tile_repeat_data),
    WM_CASE(pad_constant_reflect_edge_and_crop),
    WM_CASE(pad_before_opset_11_reads_attributes),
    WM_CASE(shape_honours_start_and_end_and_size_counts),
    WM_CASE(depth_to_space_dcr_crd_and_space_to_depth),
    WM_CASE(depth_to_space_crd_differs_with_more_channels),
    WM_CASE(reverse_sequence_reverses_prefixes_on_either_axis),
    WM_CASE(reverse_sequence_rejects_bad_lengths_and_axes),
    WM_CASE(space_to_depth_takes_crd_mode_from_opset_28),
    WM_CASE(center_crop_pad_centers_the_window_and_zero_fills),
    WM_CASE(center_crop_pad_pads_strings_with_empty_strings),
    WM_CASE(center_crop_pad_rejects_bad_shapes_and_axes),
    WM_CASE(center_crop_pad_with_unknown_shape_value_keeps_other_dims),
    WM_CASE(tensor_scatter_writes_rows_linearly_or_circularly),
    WM_CASE(tensor_scatter_rejects_hostile_indices_and_shapes),
    WM_CASE(bit_cast_reinterprets_bytes_of_the_same_size),
    WM_CASE(bit_cast_rejects_other_sizes_strings_and_unknown_types),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
