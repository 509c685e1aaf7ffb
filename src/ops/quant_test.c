// Tests of the quantized operators: rounding half to even, saturation,
// per-axis, blocked, per-row and per-column parameters, the integer
// convolutions and products against hand-computed values, static types,
// costs, and the errors for mismatched scales and zero points.
#include <math.h>

#include "op_fixture.h"
#include "wm_test.h"

static const int64_t kScalar[1] = {0};

WM_TEST(quantize_rounds_half_to_even_and_saturates) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[1] = {8};
  WM_CHECK_OK(wm_op_fixture_add_const(
      &f, "x", WM_DTYPE_FLOAT, 1, dx,
      (const double[]){0.5, 1.5, 2.5, -0.5, -1.5, 300, -300, NAN}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT, 0, kScalar,
                                      (const double[]){1}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "z", WM_DTYPE_INT8, 0, kScalar,
                                      (const double[]){-1}));
  const char *in[3] = {"x", "s", "z"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "QuantizeLinear", in, 3, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok =
      !s && f.out[0]->dtype == WM_DTYPE_INT8 &&
      wm_op_fixture_values_near(
          f.out[0], (const double[]){-1, 1, 1, -1, -3, 127, -128, -1}, 8, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(quantize_per_axis_with_negative_axis) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {2, 3}, ds[1] = {3};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT, 1, ds,
                                      (const double[]){1, 2, 4}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "z", WM_DTYPE_UINT8, 1, ds,
                                      (const double[]){10, 20, 30}));
  const char *in[3] = {"x", "s", "z"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "QuantizeLinear", in, 3, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", -1));
  wm_status_t s = wm_op_fixture_run(&f);
  // 0/1, 1/2=0.5->0, 2/4=0.5->0, 3/1, 4/2, 5/4=1.25->1
  bool ok = !s && wm_op_fixture_values_near(
                      f.out[0], (const double[]){10, 20, 30, 13, 22, 31}, 6, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(quantize_blocked_at_opset_21) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 21));
  int64_t dx[2] = {2, 4}, ds[2] = {2, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT, 2, ds,
                                      (const double[]){1, 2, 4, 8}));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "QuantizeLinear", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "block_size", 2));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "output_dtype", WM_DTYPE_INT16));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_INT16 &&
            wm_op_fixture_values_near(
                f.out[0], (const double[]){0, 1, 1, 2, 1, 1, 1, 1}, 8, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// Builds QuantizeLinear at |opset| over x [2,3] with a scale of |ns|
// values and a zero point of |nz| values (0: omitted).
static wm_status_t quantize_fixture(wm_op_fixture_t *f, int64_t opset,
                                    int64_t ns, int64_t nz) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, opset));
  int64_t dx[2] = {2, 3}, ds[1] = {ns}, dz[1] = {nz};
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "s", WM_DTYPE_FLOAT, 1, ds, NULL));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "z", WM_DTYPE_UINT8, 1, dz, NULL));
  const char *in[3] = {"x", "s", "z"};
  return wm_op_fixture_add_node(f, "QuantizeLinear", in, nz ? 3 : 2, 1);
}

WM_TEST(quantize_rejects_mismatched_scales) {
  wm_op_fixture_t f;
  WM_CHECK_OK(quantize_fixture(&f, 13, 2, 0));
  bool ok = wm_op_fixture_fails_with(
      wm_op_fixture_run(&f),
      "input 1 (y_scale) has 2 elements, want 3 (dim 1 of x [2,3])");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(quantize_fixture(&f, 10, 3, 0));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                "input 1 (y_scale) has shape [3], want a "
                                "scalar");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(quantize_fixture(&f, 13, 3, 2));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                "input 2 (y_zero_point) has shape [2] but "
                                "input 1 (y_scale) has shape [3]");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(quantize_fixture(&f, 13, 3, 3));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", 2));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                "attribute axis 2 is out of range for rank 2");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(quantize_fixture(&f, 21, 3, 0));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "block_size", -1));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                "attribute block_size is -1, want at least 0");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(quantize_fixture(&f, 21, 3, 0));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "block_size", 2));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                "input 1 (y_scale) has rank 1, want 2 like x "
                                "for block_size 2");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(quantize_fixture(&f, 21, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "output_dtype", WM_DTYPE_INT8));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                "attribute output_dtype is int8 but input 2 "
                                "(y_zero_point) has dtype uint8");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(dequantize_int32_per_axis) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {2, 2}, ds[1] = {2};
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x", WM_DTYPE_INT32, 2, dx,
                                          (const int64_t[]){-3, 100000, 7, 8}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT, 1, ds,
                                      (const double[]){0.5, 2}));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "DequantizeLinear", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", 0));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_FLOAT &&
            wm_op_fixture_values_near(
                f.out[0], (const double[]){-1.5, 50000, 14, 16}, 4, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(dequantize_output_takes_scale_dtype_from_opset_19) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 19));
  int64_t dx[1] = {3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_INT8, 1, dx));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT16, 0, kScalar,
                                      (const double[]){0.5}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "z", WM_DTYPE_INT8, 0, kScalar,
                                      (const double[]){-2}));
  const char *in[3] = {"x", "s", "z"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "DequantizeLinear", in, 3, 1));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_FLOAT16);
  WM_CHECK_INT_EQ(t.shape.rank, 1);
  WM_CHECK_INT_EQ(t.shape.dims[0], 3);
  // The same at opset 13 is float.
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_INT8, 1, dx));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT16, 0, kScalar,
                                      (const double[]){0.5}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "DequantizeLinear", in, 2, 1));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_infer(&f, &t),
                                     "input 1 (x_scale) has dtype float16, "
                                     "want float");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(dynamic_quantize_ignores_nan_and_handles_zero_range) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[1] = {3};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx,
                                      (const double[]){NAN, 1, -1}));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "DynamicQuantizeLinear", in, 1, 3));
  wm_status_t s = wm_op_fixture_run(&f);
  // scale = float32(2 / 255); 1 / scale = 127.49999 in float32.
  bool ok = !s &&
            wm_op_fixture_values_near(f.out[0], (const double[]){127, 254, 0},
                                      3, 0) &&
            wm_op_fixture_values_near(f.out[1], (const double[]){2.0 / 255}, 1,
                                      1e-9) &&
            wm_op_fixture_values_near(f.out[2], (const double[]){127}, 1, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx,
                                      (const double[]){0, 0, 0}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "DynamicQuantizeLinear", in, 1, 3));
  s = wm_op_fixture_run(&f);
  ok = !s &&
       wm_op_fixture_values_near(f.out[0], (const double[]){0, 0, 0}, 3, 0) &&
       wm_op_fixture_values_near(f.out[1], (const double[]){0}, 1, 0) &&
       wm_op_fixture_values_near(f.out[2], (const double[]){0}, 1, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// Builds MatMulInteger over int8 A [2,3] and B [3,2] with zero points of
// |naz| and |nbz| values.
static wm_status_t matmul_integer_fixture(wm_op_fixture_t *f, int64_t naz,
                                          int64_t nbz) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 10));
  int64_t da[2] = {2, 3}, db[2] = {3, 2}, dz[1] = {naz}, dw[1] = {nbz};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(
      f, "a", WM_DTYPE_INT8, 2, da, (const double[]){1, 2, 3, 4, 5, 6}));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(
      f, "b", WM_DTYPE_INT8, 2, db, (const double[]){1, 0, 0, 1, 1, 1}));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "az", WM_DTYPE_INT8, 1, dz,
                                             (const double[]){1, -1, 0}));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "bz", WM_DTYPE_INT8, 1, dw,
                                             (const double[]){0, 1, 0}));
  const char *in[4] = {"a", "b", "az", "bz"};
  return wm_op_fixture_add_node(f, "MatMulInteger", in, 4, 1);
}

WM_TEST(matmul_integer_per_row_and_per_column_zero_points) {
  wm_op_fixture_t f;
  WM_CHECK_OK(matmul_integer_fixture(&f, 2, 2));
  wm_status_t s = wm_op_fixture_run(&f);
  // A - [1,-1] per row = [[0,1,2],[5,6,7]]; B - [0,1] per column =
  // [[1,-1],[0,0],[1,0]].
  bool ok =
      !s && f.out[0]->dtype == WM_DTYPE_INT32 &&
      wm_op_fixture_values_near(f.out[0], (const double[]){2, 0, 12, -5}, 4, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(matmul_integer_rejects_zero_point_of_wrong_length) {
  wm_op_fixture_t f;
  WM_CHECK_OK(matmul_integer_fixture(&f, 3, 1));
  bool ok = wm_op_fixture_fails_with(
      wm_op_fixture_run(&f),
      "input 2 (a_zero_point) has shape [3], want a scalar or one value per "
      "row of input 0 [2,3]");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(matmul_integer_fixture(&f, 1, 3));
  ok = wm_op_fixture_fails_with(
      wm_op_fixture_run(&f),
      "input 3 (b_zero_point) has shape [3], want a scalar or one value per "
      "column of input 1 [3,2]");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(qlinear_matmul_per_column_scale_saturates) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 10));
  int64_t da[2] = {1, 2}, db[2] = {2, 2}, dn[1] = {2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "a", WM_DTYPE_UINT8, 2, da,
                                      (const double[]){10, 20}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "as", WM_DTYPE_FLOAT, 0, kScalar,
                                      (const double[]){1}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "az", WM_DTYPE_UINT8, 0, kScalar,
                                      (const double[]){0}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "b", WM_DTYPE_UINT8, 2, db,
                                      (const double[]){1, 2, 3, 4}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "bs", WM_DTYPE_FLOAT, 1, dn,
                                      (const double[]){1, 0.5}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "bz", WM_DTYPE_UINT8, 1, dn,
                                      (const double[]){0, 0}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "ys", WM_DTYPE_FLOAT, 0, kScalar,
                                      (const double[]){0.5}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "yz", WM_DTYPE_INT8, 0, kScalar,
                                      (const double[]){0}));
  const char *in[8] = {"a", "as", "az", "b", "bs", "bz", "ys", "yz"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "QLinearMatMul", in, 8, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  // acc = [70, 100]; multipliers [2, 1] -> [140 saturated to 127, 100].
  bool ok =
      !s && f.out[0]->dtype == WM_DTYPE_INT8 &&
      wm_op_fixture_values_near(f.out[0], (const double[]){127, 100}, 2, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(conv_integer_grouped_with_per_channel_zero_point) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 10));
  int64_t dx[4] = {1, 2, 2, 2}, dw[4] = {2, 1, 1, 1}, dz[1] = {2};
  WM_CHECK_OK(
      wm_op_fixture_add_const(&f, "x", WM_DTYPE_UINT8, 4, dx,
                              (const double[]){1, 2, 3, 4, 5, 6, 7, 8}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "w", WM_DTYPE_UINT8, 4, dw,
                                      (const double[]){3, 4}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "xz", WM_DTYPE_UINT8, 0, kScalar,
                                      (const double[]){1}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "wz", WM_DTYPE_UINT8, 1, dz,
                                      (const double[]){1, 2}));
  const char *in[4] = {"x", "w", "xz", "wz"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "ConvInteger", in, 4, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "group", 2));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok =
      !s && f.out[0]->dtype == WM_DTYPE_INT32 &&
      wm_op_fixture_shape_is(f.out[0], 4, (const int64_t[]){1, 2, 2, 2}) &&
      wm_op_fixture_values_near(
          f.out[0], (const double[]){0, 2, 4, 6, 8, 10, 12, 14}, 8, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// Builds QLinearConv over x uint8 [1,1,2,2] and w int8 [2,1,1,1] with a
// w_scale of |nws| values and a bias.
static wm_status_t qlinear_conv_fixture(wm_op_fixture_t *f, int64_t nws,
                                        wm_dtype_t wdtype) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 10));
  int64_t dx[4] = {1, 1, 2, 2}, dw[4] = {2, 1, 1, 1}, ds[1] = {nws},
          dm[1] = {2};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "x", WM_DTYPE_UINT8, 4, dx,
                                             (const double[]){0, 1, 2, 3}));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "xs", WM_DTYPE_FLOAT, 0,
                                             kScalar, (const double[]){1}));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "xz", WM_DTYPE_UINT8, 0,
                                             kScalar, (const double[]){0}));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "w", wdtype, 4, dw, (const double[]){1, -2}));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "ws", WM_DTYPE_FLOAT, 1, ds,
                                             (const double[]){0.5, 0.25, 1}));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "wz", wdtype, 1, dm, (const double[]){0, 0}));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "ys", WM_DTYPE_FLOAT, 0,
                                             kScalar, (const double[]){0.5}));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "yz", WM_DTYPE_UINT8, 0,
                                             kScalar, (const double[]){10}));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "b", WM_DTYPE_INT32, 1, dm,
                                             (const double[]){4, -7}));
  const char *in[9] = {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"};
  return wm_op_fixture_add_node(f, "QLinearConv", in, 9, 1);
}

WM_TEST(qlinear_conv_bias_and_per_channel_scale_round_half_even) {
  wm_op_fixture_t f;
  WM_CHECK_OK(qlinear_conv_fixture(&f, 2, WM_DTYPE_INT8));
  wm_status_t s = wm_op_fixture_run(&f);
  // Channel 0: x + 4 times 0.5 / 0.5, plus 10. Channel 1: -2x - 7 =
  // [-7,-9,-11,-13] times 0.25 / 0.5 -> [-3.5,-4.5,-5.5,-6.5] -> [-4,-4,
  // -6,-6], plus 10.
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_UINT8 &&
            wm_op_fixture_values_near(
                f.out[0], (const double[]){14, 15, 16, 17, 6, 6, 4, 4}, 8, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(qlinear_conv_rejects_bad_scale_and_dtype) {
  wm_op_fixture_t f;
  WM_CHECK_OK(qlinear_conv_fixture(&f, 3, WM_DTYPE_INT8));
  bool ok = wm_op_fixture_fails_with(
      wm_op_fixture_run(&f),
      "input 4 (w_scale) has shape [3], want a scalar or one value per "
      "output channel of w [2,1,1,1]");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(qlinear_conv_fixture(&f, 2, WM_DTYPE_INT16));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                "input 3 (w) has dtype int16, want uint8 or "
                                "int8");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(qlinear_conv_static_shape_and_cost_follow_conv) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 10));
  int64_t dx[4] = {-1, 1, 4, 4}, dw[4] = {2, 1, 3, 3}, dm[1] = {2};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_UINT8, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "xs", WM_DTYPE_FLOAT, 0, kScalar));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "xz", WM_DTYPE_UINT8, 0, kScalar));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_UINT8, 4, dw));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "ws", WM_DTYPE_FLOAT, 1, dm));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "wz", WM_DTYPE_UINT8, 1, dm));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "ys", WM_DTYPE_FLOAT, 0, kScalar));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "yz", WM_DTYPE_INT8, 0, kScalar));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_INT32, 1, dm));
  const char *in[9] = {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "QLinearConv", in, 9, 1));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "pads", (const int64_t[]){1, 1, 0, 0}, 4));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_INT8);
  WM_CHECK_INT_EQ(t.shape.rank, 4);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
  WM_CHECK_INT_EQ(t.shape.dims[1], 2);
  WM_CHECK_INT_EQ(t.shape.dims[2], 3);
  WM_CHECK_INT_EQ(t.shape.dims[3], 3);
  // Known batch: 2 x 3 x 3 outputs of 9 MACs; FLOPs add the bias and the
  // requantization per output.
  dx[0] = 1;
  WM_CHECK_OK(wm_op_fixture_init(&f, 10));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_UINT8, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "xs", WM_DTYPE_FLOAT, 0, kScalar));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "xz", WM_DTYPE_UINT8, 0, kScalar));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_UINT8, 4, dw));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "ws", WM_DTYPE_FLOAT, 1, dm));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "wz", WM_DTYPE_UINT8, 1, dm));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "ys", WM_DTYPE_FLOAT, 0, kScalar));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "yz", WM_DTYPE_INT8, 0, kScalar));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_INT32, 1, dm));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "QLinearConv", in, 9, 1));
  wm_op_cost_t c;
  s = wm_op_fixture_cost(&f, &t, &c);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_DBL_NEAR(c.macs, 8 * 9, 0);
  WM_CHECK_DBL_NEAR(c.flops, 2 * 8 * 9 + 8 * 3, 0);
}

WM_TEST(matmul_integer_unknown_shapes_and_inner_mismatch) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 10));
  int64_t da[3] = {-1, 2, 3}, db[2] = {3, 5};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "a", WM_DTYPE_UINT8, 3, da));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_INT8, 2, db));
  const char *in[2] = {"a", "b"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "MatMulInteger", in, 2, 1));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_INT32);
  WM_CHECK_INT_EQ(t.shape.rank, 3);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
  WM_CHECK_INT_EQ(t.shape.dims[2], 5);
  WM_CHECK_OK(wm_op_fixture_init(&f, 10));
  db[0] = 4;
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "a", WM_DTYPE_UINT8, 3, da));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_INT8, 2, db));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "MatMulInteger", in, 2, 1));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_infer(&f, &t),
                                     "inner dims 3 vs 4 differ");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(empty_inputs_quantize_to_empty_outputs) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {2, 0}, ds[1] = {0};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT, 1, ds, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "z", WM_DTYPE_INT8, 1, ds, NULL));
  const char *in[3] = {"x", "s", "z"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "QuantizeLinear", in, 3, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 2, dx);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "DynamicQuantizeLinear", in, 1, 3));
  s = wm_op_fixture_run(&f);
  ok = !s && wm_op_fixture_shape_is(f.out[0], 2, dx) &&
       wm_op_fixture_values_near(f.out[1], (const double[]){0}, 1, 0) &&
       wm_op_fixture_values_near(f.out[2], (const double[]){0}, 1, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

static const wm_test_case_t cases[] = {
    WM_CASE(quantize_rounds_half_to_even_and_saturates),
    WM_CASE(quantize_per_axis_with_negative_axis),
    WM_CASE(quantize_blocked_at_opset_21),
    WM_CASE(quantize_rejects_mismatched_scales),
    WM_CASE(dequantize_int32_per_axis),
    WM_CASE(dequantize_output_takes_scale_dtype_from_opset_19),
    WM_CASE(dynamic_quantize_ignores_nan_and_handles_zero_range),
    WM_CASE(matmul_integer_per_row_and_per_column_zero_points),
    WM_CASE(matmul_integer_rejects_zero_point_of_wrong_length),
    WM_CASE(qlinear_matmul_per_column_scale_saturates),
    WM_CASE(conv_integer_grouped_with_per_channel_zero_point),
    WM_CASE(qlinear_conv_bias_and_per_channel_scale_round_half_even),
    WM_CASE(qlinear_conv_rejects_bad_scale_and_dtype),
    WM_CASE(qlinear_conv_static_shape_and_cost_follow_conv),
    WM_CASE(matmul_integer_unknown_shapes_and_inner_mismatch),
    WM_CASE(empty_inputs_quantize_to_empty_outputs),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
