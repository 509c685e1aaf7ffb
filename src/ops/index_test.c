// Tests of the index operators (Slice, Gather*, Scatter*, Compress, Unique,
// NonZero): kernels against hand-computed values, index wrapping, and the
// errors for indices out of range.
#include <math.h>
#include <stdlib.h>

#include "op_fixture.h"
#include "wm_test.h"

WM_TEST(slice_negative_steps_and_clamping) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {3, 4};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "st", 2, (const int64_t[]){100, -1}));
  WM_CHECK_OK(
      wm_op_fixture_add_ints(&f, "en", 2, (const int64_t[]){-100, INT64_MIN}));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "ax", 2, (const int64_t[]){0, 1}));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "sp", 2, (const int64_t[]){-2, -3}));
  const char *in[5] = {"x", "st", "en", "ax", "sp"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Slice", in, 5, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  // rows 2, 0; cols 3, 0
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 2}) &&
            wm_op_fixture_values_near(f.out[0], (const double[]){11, 8, 3, 0},
                                      4, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(slice_before_opset_10_reads_attributes) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 9));
  int64_t dx[2] = {3, 4};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_INT64, 2, dx, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Slice", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "starts", (const int64_t[]){1}, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "ends", (const int64_t[]){1000}, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "axes", (const int64_t[]){-1}, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s && wm_op_fixture_values_near(
                      f.out[0], (const double[]){1, 2, 3, 5, 6, 7, 9, 10, 11},
                      9, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(slice_rejects_zero_step) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[1] = {3};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "st", 1, (const int64_t[]){0}));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "en", 1, (const int64_t[]){3}));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "ax", 1, (const int64_t[]){0}));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "sp", 1, (const int64_t[]){0}));
  const char *in[5] = {"x", "st", "en", "ax", "sp"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Slice", in, 5, 1));
  bool ok =
      wm_op_fixture_fails_with(wm_op_fixture_run(&f), "step on axis 0 is 0");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(gather_wraps_negative_indices_on_strings) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {2, 2};
  WM_CHECK_OK(wm_op_fixture_add_strings(
      &f, "x", 2, dx, (const char *const[]){"a", "b", "c", "d"}));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "i", 3, (const int64_t[]){-1, 0, 1}));
  const char *in[2] = {"x", "i"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Gather", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const char *const want[6] = {"b", "a", "b", "d", "c", "d"};
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 3});
  ok = ok && wm_op_fixture_strings_are(f.out[0], want, 6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(gather_rejects_index_out_of_range) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {2, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "i", 2, (const int64_t[]){0, -3}));
  const char *in[2] = {"x", "i"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Gather", in, 2, 1));
  bool ok = wm_op_fixture_fails_with(
      wm_op_fixture_run(&f),
      "index -3 (element 1 of the indices) is out of range "
      "for axis 0 of size 2");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(gather_elements_and_nd_with_batch_dims) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {2, 2}, di[2] = {2, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "i", WM_DTYPE_INT32, 2, di,
                                      (const double[]){1, 1, -2, 1}));
  const char *in[2] = {"x", "i"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "GatherElements", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok =
      !s && wm_op_fixture_values_near(f.out[0], (const double[]){1, 1, 2, 3}, 4,
                                      WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  // data [2,2,2] = 0..7, indices [[1],[0]] with batch_dims 1 -> [[2,3],[4,5]]
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dd[3] = {2, 2, 2}, dn[2] = {2, 1};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dd, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "i", WM_DTYPE_INT64, 2, dn,
                                      (const double[]){1, 0}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "GatherND", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "batch_dims", 1));
  s = wm_op_fixture_run(&f);
  ok = !s && wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 2}) &&
       wm_op_fixture_values_near(f.out[0], (const double[]){2, 3, 4, 5}, 4,
                                 WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(gather_nd_rejects_index_out_of_range) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dd[2] = {2, 2}, dn[2] = {1, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dd, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "i", WM_DTYPE_INT64, 2, dn,
                                      (const double[]){1, 2}));
  const char *in[2] = {"x", "i"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "GatherND", in, 2, 1));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                     "index 2 (element 1 of the indices) is "
                                     "out of range for axis 1 of size 2");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

// Runs ScatterElements at opset 18 with |reduction| on x = [1,2,3,4].
static void check_scatter(const char *reduction, const double *want) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 18));
  int64_t dx[1] = {4}, di[1] = {3};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_INT32, 1, dx,
                                      (const double[]){1, 2, 3, 4}));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "i", 3, (const int64_t[]){1, -1, 1}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "u", WM_DTYPE_INT32, 1, di,
                                      (const double[]){5, 0, 3}));
  const char *in[3] = {"x", "i", "u"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "ScatterElements", in, 3, 1));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "reduction", reduction));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok =
      !s && wm_op_fixture_values_near(f.out[0], want, 4, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(scatter_elements_reductions) {
  check_scatter("none", (const double[]){1, 3, 3, 0});
  check_scatter("add", (const double[]){1, 10, 3, 4});
  check_scatter("mul", (const double[]){1, 30, 3, 0});
  check_scatter("max", (const double[]){1, 5, 3, 4});
  check_scatter("min", (const double[]){1, 2, 3, 0});
}

WM_TEST(scatter_nd_rejects_index_out_of_range) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[1] = {4}, di[2] = {1, 1}, du[1] = {1};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "i", WM_DTYPE_INT64, 2, di,
                                      (const double[]){4}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "u", WM_DTYPE_FLOAT, 1, du, NULL));
  const char *in[3] = {"x", "i", "u"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "ScatterND", in, 3, 1));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                     "index 4 (element 0 of the indices) is "
                                     "out of range for axis 0 of size 4");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(scatter_elements_rejects_mismatched_updates) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[1] = {4}, di[1] = {2}, du[1] = {3};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "i", WM_DTYPE_INT64, 1, di, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "u", WM_DTYPE_FLOAT, 1, du, NULL));
  const char *in[3] = {"x", "i", "u"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "ScatterElements", in, 3, 1));
  bool ok =
      wm_op_fixture_fails_with(wm_op_fixture_run(&f), "updates [3], want [2]");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(compress_selects_along_axis_and_flattened) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[2] = {2, 3}, dc[1] = {2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "c", WM_DTYPE_BOOL, 1, dc,
                                      (const double[]){0, 1}));
  const char *in[2] = {"x", "c"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Compress", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 1}) &&
            wm_op_fixture_values_near(f.out[0], (const double[]){1, 4}, 2,
                                      WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "c", WM_DTYPE_BOOL, 1, dc,
                                      (const double[]){0, 1}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Compress", in, 2, 1));
  s = wm_op_fixture_run(&f);
  ok = !s && wm_op_fixture_values_near(f.out[0], (const double[]){1}, 1,
                                       WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(static_shapes_with_unknown_index_values) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {5, 4}, di[2] = {2, -1};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 2, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "i", WM_DTYPE_INT64, 2, di));
  const char *in[2] = {"x", "i"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Gather", in, 2, 1));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 3);
  WM_CHECK_INT_EQ(t.shape.dims[0], 2);
  WM_CHECK_INT_EQ(t.shape.dims[1], -1);
  WM_CHECK_INT_EQ(t.shape.dims[2], 4);
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t ds[1] = {1};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 2, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "st", WM_DTYPE_INT64, 1, ds));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "en", 1, (const int64_t[]){3}));
  const char *in2[3] = {"x", "st", "en"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Slice", in2, 3, 1));
  s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 2);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
}

WM_TEST(unique_strings_in_first_occurrence_order) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[1] = {5};
  WM_CHECK_OK(wm_op_fixture_add_strings(
      &f, "x", 1, dx, (const char *const[]){"b", "a", "b", "c", "a"}));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Unique", in, 1, 3));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "sorted", 0));
  wm_status_t s = wm_op_fixture_run(&f);
  static const char *const want[3] = {"b", "a", "c"};
  bool ok =
      !s && wm_op_fixture_strings_are(f.out[0], want, 3) &&
      wm_op_fixture_values_near(f.out[1], (const double[]){0, 1, 3}, 3, 0) &&
      wm_op_fixture_values_near(f.out[2], (const double[]){0, 1, 0, 2, 1}, 5,
                                0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(unique_sorts_nan_last_and_merges_signed_zeros) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[1] = {5};
  WM_CHECK_OK(
      wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx,
                              (const double[]){NAN, 1.0, -0.0, NAN, 0.0}));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Unique", in, 1, 3));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok =
      !s && wm_op_fixture_shape_is(f.out[0], 1, (const int64_t[]){3}) &&
      wm_tensor_get_f64(f.out[0], 0) == 0.0 &&
      wm_tensor_get_f64(f.out[0], 1) == 1.0 &&
      isnan(wm_tensor_get_f64(f.out[0], 2)) &&
      wm_op_fixture_values_near(f.out[1], (const double[]){2, 1, 0}, 3, 0) &&
      wm_op_fixture_values_near(f.out[2], (const double[]){2, 1, 0, 2, 0}, 5,
                                0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(unique_along_axis_compares_whole_slices) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[2] = {2, 3};
  // Columns [1,2], [1,2], [0,5]: sorted unique columns [0,5], [1,2].
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_INT64, 2, dx,
                                      (const double[]){1, 1, 0, 2, 2, 5}));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Unique", in, 1, 3));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", -1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok =
      !s && wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 2}) &&
      wm_op_fixture_values_near(f.out[0], (const double[]){0, 1, 5, 2}, 4, 0) &&
      wm_op_fixture_values_near(f.out[1], (const double[]){2, 0}, 2, 0) &&
      wm_op_fixture_values_near(f.out[2], (const double[]){1, 1, 0}, 3, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(unique_rejects_bad_attributes_and_shapes_statically) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[2] = {2, 3};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Unique", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", 2));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                     "axis 2 is out of range for rank 2");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Unique", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "sorted", 3));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                "sorted is 3, want 0 or 1");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  // Unknown values: the unique count is unknown, the other dims stay.
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 2, dx));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Unique", in, 1, 3));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", 0));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  int32_t inv = wm_graph_find_value(f.graph, "y2");
  int64_t inv_dim = inv >= 0 ? f.graph->values[inv].type.shape.dims[0] : -9;
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 2);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
  WM_CHECK_INT_EQ(t.shape.dims[1], 3);
  WM_CHECK_INT_EQ(inv_dim, 2);
}

WM_TEST(nonzero_lists_coordinates_for_floats_strings_and_scalars) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[3] = {2, 1, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx,
                                      (const double[]){0, NAN, -0.0, 3}));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "NonZero", in, 1, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){3, 2}) &&
            wm_op_fixture_values_near(f.out[0],
                                      (const double[]){0, 1, 0, 0, 1, 1}, 6, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t ds[2] = {2, 2};
  WM_CHECK_OK(wm_op_fixture_add_strings(
      &f, "x", 2, ds, (const char *const[]){"", "x", "y", ""}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "NonZero", in, 1, 1));
  s = wm_op_fixture_run(&f);
  ok = !s && wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 2}) &&
       wm_op_fixture_values_near(f.out[0], (const double[]){0, 1, 1, 0}, 4, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  // A scalar gives shape [0, N].
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_INT32, 0, ds,
                                      (const double[]){5}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "NonZero", in, 1, 1));
  s = wm_op_fixture_run(&f);
  ok = !s && wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){0, 1});
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// The resolve slot: starts and steps on every axis, clamped; bounds the
// graph computes leave the parameters pending.
WM_TEST(slice_resolves_clamped_starts_and_steps) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[3] = {3, 4, 2};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "st", 2, (const int64_t[]){100, -1}));
  WM_CHECK_OK(
      wm_op_fixture_add_ints(&f, "en", 2, (const int64_t[]){-100, INT64_MIN}));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "ax", 2, (const int64_t[]){0, -2}));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "sp", 2, (const int64_t[]){-2, -3}));
  const char *in[5] = {"x", "st", "en", "ax", "sp"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Slice", in, 5, 1));
  wm_op_params_t p;
  wm_status_t s = wm_op_fixture_resolve(&f, &p);
  bool ok = !s && !p.pending &&
            wm_op_fixture_param_ints_are(&p, "starts",
                                         (const int64_t[]){2, 3, 0}, 3) &&
            wm_op_fixture_param_ints_are(&p, "steps",
                                         (const int64_t[]){-2, -3, 1}, 3);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t two = 2;
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "st", WM_DTYPE_INT64, 1, &two));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "en", 2, (const int64_t[]){3, 3}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Slice", in, 3, 1));
  s = wm_op_fixture_resolve(&f, &p);
  ok = !s && p.pending;
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

static const wm_test_case_t cases[] = {
    WM_CASE(slice_resolves_clamped_starts_and_steps),
    WM_CASE(static_shapes_with_unknown_index_values),
    WM_CASE(slice_negative_steps_and_clamping),
    WM_CASE(slice_before_opset_10_reads_attributes),
    WM_CASE(slice_rejects_zero_step),
    WM_CASE(gather_wraps_negative_indices_on_strings),
    WM_CASE(gather_rejects_index_out_of_range),
    WM_CASE(gather_elements_and_nd_with_batch_dims),
    WM_CASE(gather_nd_rejects_index_out_of_range),
    WM_CASE(scatter_elements_reductions),
    WM_CASE(scatter_nd_rejects_index_out_of_range),
    WM_CASE(scatter_elements_rejects_mismatched_updates),
    WM_CASE(compress_selects_along_axis_and_flattened),
    WM_CASE(unique_strings_in_first_occurrence_order),
    WM_CASE(unique_sorts_nan_last_and_merges_signed_zeros),
    WM_CASE(unique_along_axis_compares_whole_slices),
    WM_CASE(unique_rejects_bad_attributes_and_shapes_statically),
    WM_CASE(nonzero_lists_coordinates_for_floats_strings_and_scalars),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
