// Tests of the activation family: attribute defaults, integer inputs, the
// legacy PRelu slope, and the opset-dependent Softmax axis semantics.
#include <math.h>
#include <stdlib.h>

#include "ops/ops.h"
#include "wm_test.h"

// Runs one |op| node at |opset| on a float tensor |x| (with |slope| as
// input 1 when not NULL, and integer attribute |attr| when not NULL);
// *out receives output 0.
static wm_status_t run1(const char *op, int64_t opset, wm_tensor_t *x_take,
                        wm_tensor_t *slope_take, const char *attr,
                        int64_t attr_value, wm_tensor_t **out) {
  *out = NULL;
  int32_t n_in = slope_take ? 2 : 1;
  const char *ins[] = {"x", "s"}, *outs[] = {"y"};
  wm_graph_t *g = NULL;
  wm_status_t st = wm_graph_create("t", NULL, &g);
  if (st) {
    wm_tensor_destroy(x_take);
    wm_tensor_destroy(slope_take);
    return st;
  }
  st = wm_graph_set_opset(g, "", opset);
  if (st) {
    wm_tensor_destroy(x_take);
  } else {
    st = wm_graph_add_initializer(g, "x", x_take, NULL);
  }
  if (slope_take && st) {
    wm_tensor_destroy(slope_take);
  } else if (slope_take) {
    st = wm_graph_add_initializer(g, "s", slope_take, NULL);
  }
  st = st ? st : wm_graph_add_node(g, op, "", "n", ins, n_in, outs, 1, NULL);
  if (!st && attr) {
    st = wm_graph_add_attr_int(g, 0, attr, attr_value);
  }
  wm_op_ctx_t ctx;
  st = st ? st : wm_op_ctx_init(&ctx, g, 0);
  if (!st) {
    const wm_op_def_t *def;
    st = wm_op_find_def(&ctx, &def);
    st = st ? st : wm_op_execute(def, &ctx);
    *out = ctx.out[0];
    wm_op_ctx_deinit(&ctx);
  }
  wm_graph_destroy(g);
  return st;
}

static wm_tensor_t *tensor(wm_dtype_t dtype, int32_t rank, const int64_t *dims,
                           const double *v) {
  wm_shape_t s = wm_shape_make(rank, dims);
  wm_tensor_t *t = NULL;
  wm_status_t st = wm_tensor_create(dtype, &s, &t);
  if (st) {
    wm_status_free(st);
    return NULL;
  }
  for (size_t i = 0; i < t->count; i++) {
    wm_tensor_set_f64(t, i, v[i]);
  }
  return t;
}

WM_TEST(selu_uses_the_onnx_default_constants) {
  int64_t d2[] = {2};
  double x[] = {-1, 2};
  wm_tensor_t *y;
  WM_CHECK_OK(
      run1("Selu", 6, tensor(WM_DTYPE_DOUBLE, 1, d2, x), NULL, NULL, 0, &y));
  double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 0), gamma * alpha * expm1(-1.0),
                    1e-15);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 1), 2 * gamma, 1e-15);
  wm_tensor_destroy(y);
}

WM_TEST(relu_keeps_int64_exact) {
  int64_t d2[] = {2};
  wm_shape_t s = wm_shape_make(1, d2);
  wm_tensor_t *x, *y;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_INT64, &s, &x));
  wm_tensor_set_i64(x, 0, (INT64_C(1) << 60) + 1);
  wm_tensor_set_i64(x, 1, -5);
  WM_CHECK_OK(run1("Relu", 14, x, NULL, NULL, 0, &y));
  WM_CHECK_INT_EQ(wm_tensor_get_i64(y, 0), (INT64_C(1) << 60) + 1);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(y, 1), 0);
  wm_tensor_destroy(y);
}

WM_TEST(legacy_prelu_applies_a_1d_slope_along_channels) {
  int64_t dx[] = {1, 2, 3}, ds[] = {2};
  double x[] = {-1, -1, 1, -1, -1, 1}, s[] = {0.5, 0.25};
  wm_tensor_t *y;
  WM_CHECK_OK(run1("PRelu", 6, tensor(WM_DTYPE_FLOAT, 3, dx, x),
                   tensor(WM_DTYPE_FLOAT, 1, ds, s), NULL, 0, &y));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 0), -0.5, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 2), 1, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 3), -0.25, 0);
  wm_tensor_destroy(y);
}

WM_TEST(prelu_rejects_a_slope_that_does_not_broadcast) {
  int64_t dx[] = {2, 3}, ds[] = {2};
  double x[] = {1, 2, 3, 4, 5, 6}, s[] = {1, 2};
  wm_tensor_t *y;
  WM_CHECK_ERR(run1("PRelu", 16, tensor(WM_DTYPE_FLOAT, 2, dx, x),
                    tensor(WM_DTYPE_FLOAT, 1, ds, s), NULL, 0, &y),
               INVALID_ARGUMENT, "cannot be broadcast");
  wm_tensor_destroy(y);
}

// Softmax of [[0, 0], [0, 0]] is 1/4 everywhere when coerced to 2-D at
// axis 0 (opset 11) but 1/2 along axis 0 alone (opset 13).
WM_TEST(softmax_axis_semantics_change_at_opset_13) {
  int64_t d22[] = {2, 2};
  double x[] = {0, 0, 0, 0};
  wm_tensor_t *y;
  WM_CHECK_OK(run1("Softmax", 11, tensor(WM_DTYPE_FLOAT, 2, d22, x), NULL,
                   "axis", 0, &y));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 3), 0.25, 1e-7);
  wm_tensor_destroy(y);
  WM_CHECK_OK(run1("Softmax", 13, tensor(WM_DTYPE_FLOAT, 2, d22, x), NULL,
                   "axis", 0, &y));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 3), 0.5, 1e-7);
  wm_tensor_destroy(y);
}

WM_TEST(hardmax_marks_the_first_maximum) {
  int64_t d4[] = {1, 4};
  double x[] = {3, 7, 7, 1};
  wm_tensor_t *y;
  WM_CHECK_OK(
      run1("Hardmax", 13, tensor(WM_DTYPE_FLOAT, 2, d4, x), NULL, NULL, 0, &y));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 1), 1, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 2), 0, 0);
  wm_tensor_destroy(y);
}

WM_TEST(logsoftmax_rejects_an_axis_out_of_range) {
  int64_t d4[] = {1, 4};
  double x[] = {3, 7, 7, 1};
  wm_tensor_t *y;
  WM_CHECK_ERR(run1("LogSoftmax", 13, tensor(WM_DTYPE_FLOAT, 2, d4, x), NULL,
                    "axis", 2, &y),
               INVALID_ARGUMENT, "axis 2 is out of range for rank 2");
  wm_tensor_destroy(y);
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
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
