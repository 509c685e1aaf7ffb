// Tests of the activation family: attribute defaults, integer inputs, the
// legacy PRelu slope, the opset-dependent Softmax axis semantics, Gelu's
// two forms, Swish's alpha and SwiGLU's shape rule.
#include <math.h>
#include <stdlib.h>

#include "op_fixture.h"
#include "wm_test.h"

// Adds the node |op| reading "x" (and "s" when |n_in| is 2), sets integer
// attribute |attr| when not NULL, and runs it.
static wm_status_t run1(wm_op_fixture_t *f, const char *op, int32_t n_in,
                        const char *attr, int64_t attr_value) {
  static const char *const ins[] = {"x", "s"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, op, ins, n_in, 1));
  if (attr) {
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_int(f, attr, attr_value));
  }
  return wm_op_fixture_run(f);
}

WM_TEST(selu_uses_the_onnx_default_constants) {
  int64_t d2[] = {2};
  double x[] = {-1, 2};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 6));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_DOUBLE, 1, d2, x));
  WM_CHECK_OK(run1(&f, "Selu", 1, NULL, 0));
  double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 0), gamma * alpha * expm1(-1.0),
                    1e-15);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 1), 2 * gamma, 1e-15);
  wm_op_fixture_deinit(&f);
}

WM_TEST(relu_keeps_int64_exact) {
  int64_t d2[] = {2}, x[] = {(INT64_C(1) << 60) + 1, -5};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x", WM_DTYPE_INT64, 1, d2, x));
  WM_CHECK_OK(run1(&f, "Relu", 1, NULL, 0));
  WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], 0), (INT64_C(1) << 60) + 1);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], 1), 0);
  wm_op_fixture_deinit(&f);
}

WM_TEST(legacy_prelu_applies_a_1d_slope_along_channels) {
  int64_t dx[] = {1, 2, 3}, ds[] = {2};
  double x[] = {-1, -1, 1, -1, -1, 1}, s[] = {0.5, 0.25};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 6));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, x));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT, 1, ds, s));
  WM_CHECK_OK(run1(&f, "PRelu", 2, NULL, 0));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 0), -0.5, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 2), 1, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 3), -0.25, 0);
  wm_op_fixture_deinit(&f);
}

WM_TEST(prelu_rejects_a_slope_that_does_not_broadcast) {
  int64_t dx[] = {2, 3}, ds[] = {2};
  double x[] = {1, 2, 3, 4, 5, 6}, s[] = {1, 2};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 16));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, x));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT, 1, ds, s));
  WM_CHECK_ERR(run1(&f, "PRelu", 2, NULL, 0), INVALID_ARGUMENT,
               "cannot be broadcast");
  wm_op_fixture_deinit(&f);
}

// Softmax of [[0, 0], [0, 0]] is 1/4 everywhere when coerced to 2-D at
// axis 0 (opset 11) but 1/2 along axis 0 alone (opset 13).
WM_TEST(softmax_axis_semantics_change_at_opset_13) {
  int64_t d22[] = {2, 2};
  double x[] = {0, 0, 0, 0};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, d22, x));
  WM_CHECK_OK(run1(&f, "Softmax", 1, "axis", 0));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 3), 0.25, 1e-7);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, d22, x));
  WM_CHECK_OK(run1(&f, "Softmax", 1, "axis", 0));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 3), 0.5, 1e-7);
  wm_op_fixture_deinit(&f);
}

WM_TEST(hardmax_marks_the_first_maximum) {
  int64_t d4[] = {1, 4};
  double x[] = {3, 7, 7, 1};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, d4, x));
  WM_CHECK_OK(run1(&f, "Hardmax", 1, NULL, 0));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 1), 1, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 2), 0, 0);
  wm_op_fixture_deinit(&f);
}

WM_TEST(logsoftmax_rejects_an_axis_out_of_range) {
  int64_t d4[] = {1, 4};
  double x[] = {3, 7, 7, 1};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, d4, x));
  WM_CHECK_ERR(run1(&f, "LogSoftmax", 1, "axis", 2), INVALID_ARGUMENT,
               "axis 2 is out of range for rank 2");
  wm_op_fixture_deinit(&f);
}

WM_TEST(gelu_exact_and_tanh_approximation_match_their_formulas) {
  int64_t d3[] = {3};
  double x[] = {-1.5, 0.25, 3};
  for (int tanh_mode = 0; tanh_mode < 2; tanh_mode++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 20));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_DOUBLE, 1, d3, x));
    const char *in[1] = {"x"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "Gelu", in, 1, 1));
    if (tanh_mode) {
      WM_CHECK_OK(wm_op_fixture_attr_string(&f, "approximate", "tanh"));
    }
    wm_status_t s = wm_op_fixture_run(&f);
    bool ok = !s;
    for (int i = 0; i < 3 && ok; i++) {
      double v = x[i];
      double want = tanh_mode ? 0.5 * v *
                                    (1 + tanh(sqrt(2 / 3.14159265358979323846) *
                                              (v + 0.044715 * v * v * v)))
                              : 0.5 * v * (1 + erf(v / sqrt(2.0)));
      ok = fabs(wm_tensor_get_f64(f.out[0], (size_t)i) - want) < 1e-15;
    }
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(gelu_rejects_an_unknown_approximation) {
  int64_t d1[] = {1};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 20));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, d1, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Gelu", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "approximate", "erf"));
  bool ok = wm_op_fixture_fails_with(
      wm_op_fixture_run(&f), "approximate \"erf\" is not \"none\" or \"tanh\"");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(gelu_and_swish_are_unknown_before_their_opsets) {
  int64_t d1[] = {1};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 19));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, d1, NULL));
  WM_CHECK_ERR(run1(&f, "Gelu", 1, NULL, 0), UNIMPLEMENTED, "Gelu");
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, d1, NULL));
  WM_CHECK_ERR(run1(&f, "Swish", 1, NULL, 0), UNIMPLEMENTED, "Swish");
  wm_op_fixture_deinit(&f);
}

WM_TEST(swish_scales_the_sigmoid_argument_by_alpha) {
  int64_t d3[] = {3};
  double x[] = {-2, 0.5, 40};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 24));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_DOUBLE, 1, d3, x));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Swish", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "alpha", 0.5f));
  wm_status_t s = wm_op_fixture_run(&f);
  double want[3];
  for (int i = 0; i < 3; i++) {
    want[i] = x[i] / (1 + exp(-0.5 * x[i]));
  }
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 3, 1e-12);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(swiglu_gates_b_by_swish_of_a) {
  int64_t d2[] = {2};
  double a[] = {1, -3}, b[] = {2, 5};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 28));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_DOUBLE, 1, d2, a));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_DOUBLE, 1, d2, b));
  WM_CHECK_OK(run1(&f, "SwiGLU", 2, NULL, 0));
  double want[2] = {2 * 1 / (1 + exp(-1.0)), 5 * -3 / (1 + exp(3.0))};
  bool ok = wm_op_fixture_values_near(f.out[0], want, 2, 1e-12);
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(swiglu_rejects_inputs_of_different_shapes) {
  int64_t d2[] = {2}, d3[] = {3};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 28));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, d2, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT, 1, d3, NULL));
  bool ok =
      wm_op_fixture_fails_with(run1(&f, "SwiGLU", 2, NULL, 0),
                               "A [2] and B [3] must have the same shape");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(wm_op_fixture_init(&f, 28));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, d2, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_DOUBLE, 1, d2, NULL));
  ok = wm_op_fixture_fails_with(run1(&f, "SwiGLU", 2, NULL, 0),
                                "input 1 (B) has type double");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

// 300 zeros: the reference sums the 300 ones in bfloat16, where 256 + 1
// rounds back to 256, so each output is 1/256; float sums to 300.
WM_TEST(softmax_sums_bfloat16_in_bfloat16_like_the_reference) {
  int64_t dims[] = {1, 300};
  static const double want[2] = {1.0 / 256, 1.0 / 300};
  static const wm_dtype_t types[2] = {WM_DTYPE_BFLOAT16, WM_DTYPE_FLOAT};
  double x[300] = {0};
  for (int c = 0; c < 2; c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 13));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", types[c], 2, dims, x));
    WM_CHECK_OK(run1(&f, "Softmax", 1, NULL, 0));
    double got = wm_tensor_get_f64(f.out[0], 299);
    wm_op_fixture_deinit(&f);
    WM_CHECK_DBL_NEAR(got, want[c], 1e-9);
  }
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(selu_uses_the_onnx_default_constants),
      WM_CASE(relu_keeps_int64_exact),
      WM_CASE(legacy_prelu_applies_a_1d_slope_along_channels),
      WM_CASE(prelu_rejects_a_slope_that_does_not_broadcast),
      WM_CASE(softmax_axis_semantics_change_at_opset_13),
      WM_CASE(hardmax_marks_the_first_maximum),
      WM_CASE(logsoftmax_rejects_an_axis_out_of_range),
      WM_CASE(gelu_exact_and_tanh_approximation_match_their_formulas),
      WM_CASE(gelu_rejects_an_unknown_approximation),
      WM_CASE(gelu_and_swish_are_unknown_before_their_opsets),
      WM_CASE(swish_scales_the_sigmoid_argument_by_alpha),
      WM_CASE(swiglu_gates_b_by_swish_of_a),
      WM_CASE(swiglu_rejects_inputs_of_different_shapes),
      WM_CASE(softmax_sums_bfloat16_in_bfloat16_like_the_reference),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
