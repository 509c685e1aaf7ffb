// Tests of the nn operators: reference kernels against hand-computed
// values, static shape rules, costs, and errors on hostile attributes.
#include <math.h>
#include <stdlib.h>

#include "op_fixture.h"
#include "wm_test.h"

// ------------------------------------------------------------------ Conv

WM_TEST(conv_2d_matches_hand_computed_in_each_float_dtype) {
  static const wm_dtype_t dtypes[3] = {WM_DTYPE_FLOAT, WM_DTYPE_DOUBLE,
                                       WM_DTYPE_FLOAT16};
  for (int k = 0; k < 3; k++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 11));
    int64_t dx[4] = {1, 1, 3, 3}, dw[4] = {1, 1, 2, 2}, db[1] = {1};
    static const double ones[4] = {1, 1, 1, 1}, bias[1] = {10};
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", dtypes[k], 4, dx, NULL));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "w", dtypes[k], 4, dw, ones));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "b", dtypes[k], 1, db, bias));
    const char *in[3] = {"x", "w", "b"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "Conv", in, 3, 1));
    wm_status_t s = wm_op_fixture_run(&f);
    // Window sums of [[0,1,2],[3,4,5],[6,7,8]] plus 10.
    static const double want[4] = {18, 22, 30, 34};
    bool ok = !s &&
              wm_op_fixture_values_near(f.out[0], want, 4, WM_OP_FIXTURE_TOL) &&
              f.out[0]->dtype == dtypes[k];
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(conv_rejects_channel_mismatch) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[4] = {1, 3, 5, 5}, dw[4] = {2, 2, 3, 3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 4, dw));
  const char *in[2] = {"x", "w"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Conv", in, 2, 1));
  wm_status_t s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT,
               "input 0 has 3 channels but weight has 2 channels per group "
               "x group 1");
}

WM_TEST(conv_rejects_kernel_larger_than_padded_input) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[4] = {1, 1, 2, 2}, dw[4] = {1, 1, 3, 3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 4, dw));
  const char *in[2] = {"x", "w"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Conv", in, 2, 1));
  wm_status_t s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "is larger than the padded input 2");
}

WM_TEST(conv_rejects_bad_pads_length) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[4] = {1, 1, 5, 5}, dw[4] = {1, 1, 3, 3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 4, dw));
  const char *in[2] = {"x", "w"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Conv", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "pads", (const int64_t[]){1, 1}, 2));
  wm_status_t s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "attribute pads has 2 values, want 4");
}

WM_TEST(conv_static_shape_keeps_unknown_dims) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[4] = {-1, 3, -1, 8}, dw[4] = {4, 3, 3, 3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 4, dw));
  const char *in[2] = {"x", "w"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Conv", in, 2, 1));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "strides", (const int64_t[]){2, 2}, 2));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "pads", (const int64_t[]){1, 1, 1, 1}, 4));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 4);
  WM_CHECK(t.shape.dims[0] < 0);
  WM_CHECK_INT_EQ(t.shape.dims[1], 4);
  WM_CHECK(t.shape.dims[2] < 0);
  WM_CHECK_INT_EQ(t.shape.dims[3], 4);
}

WM_TEST(conv_cost_counts_grouped_macs_and_bias) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[4] = {2, 4, 8, 8}, dw[4] = {6, 2, 3, 3}, db[1] = {6};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 4, dw));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_FLOAT, 1, db));
  const char *in[3] = {"x", "w", "b"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Conv", in, 3, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "group", 2));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "pads", (const int64_t[]){1, 1, 1, 1}, 4));
  wm_type_t t;
  wm_op_cost_t cost;
  wm_status_t s = wm_op_fixture_cost(&f, &t, &cost);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  // N * Cout * out spatial * Cin/group * kernel = 2 * 6 * 64 * 2 * 9.
  WM_CHECK_DBL_NEAR(cost.macs, 13824, 0);
  WM_CHECK_DBL_NEAR(cost.flops, 2 * 13824 + 768, 0);
}

WM_TEST(convtranspose_rejects_huge_output_shape) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[4] = {1, 1, 3, 3}, dw[4] = {1, 1, 3, 3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 4, dw));
  const char *in[2] = {"x", "w"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "ConvTranspose", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(
      &f, "output_shape", (const int64_t[]){INT64_C(1) << 40, INT64_C(1) << 40},
      2));
  wm_status_t s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "too many elements");
}

WM_TEST(convtranspose_output_padding_extends_the_end) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[3] = {1, 1, 2}, dw[3] = {1, 1, 2};
  static const double x[2] = {1, 2}, w[2] = {1, 10};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, x));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "w", WM_DTYPE_FLOAT, 3, dw, w));
  const char *in[2] = {"x", "w"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "ConvTranspose", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "strides", (const int64_t[]){3}, 1));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "output_padding", (const int64_t[]){1}, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  // 3 * (2 - 1) + 1 + 2 = 6 outputs: x0*w at 0, x1*w at 3, one pad.
  static const double want[6] = {1, 10, 0, 2, 20, 0};
  bool ok =
      !s && wm_op_fixture_values_near(f.out[0], want, 6, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// --------------------------------------------------------------- pooling

WM_TEST(maxpool_indices_follow_storage_order) {
  for (int order = 0; order < 2; order++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 12));
    int64_t dx[4] = {1, 1, 2, 3};
    static const double x[6] = {1, 5, 2, 4, 3, 6};
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 4, dx, x));
    const char *in[1] = {"x"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "MaxPool", in, 1, 2));
    WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "kernel_shape",
                                        (const int64_t[]){2, 2}, 2));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "storage_order", order));
    wm_status_t s = wm_op_fixture_run(&f);
    static const double want[2] = {5, 6};
    // 5 is at (0,1), 6 at (1,2); column-major index is h + w * H.
    static const double idx[2][2] = {{1, 5}, {2, 5}};
    bool ok =
        !s && wm_op_fixture_values_near(f.out[0], want, 2, WM_OP_FIXTURE_TOL) &&
        wm_op_fixture_values_near(f.out[1], idx[order], 2, WM_OP_FIXTURE_TOL);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(maxpool_rejects_overflowing_pads_and_kernel) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 12));
  int64_t dx[3] = {1, 1, 4};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "MaxPool", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "kernel_shape",
                                      (const int64_t[]){INT64_MAX}, 1));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "dilations", (const int64_t[]){4}, 1));
  wm_status_t s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "overflows in spatial dim 0");

  WM_CHECK_OK(wm_op_fixture_init(&f, 12));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "MaxPool", in, 1, 1));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "kernel_shape", (const int64_t[]){2}, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(
      &f, "pads", (const int64_t[]){INT64_MAX, INT64_MAX}, 2));
  s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "overflow in spatial dim 0");
}

WM_TEST(pool_requires_kernel_shape) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[4] = {1, 1, 4, 4};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "AveragePool", in, 1, 1));
  wm_status_t s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "attribute kernel_shape is required");
}

WM_TEST(avgpool_ceil_mode_drops_window_starting_in_end_padding) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[3] = {1, 1, 4};
  static const double x[4] = {1, 2, 3, 4};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, x));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "AveragePool", in, 1, 1));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "kernel_shape", (const int64_t[]){2}, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "strides", (const int64_t[]){2}, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "pads", (const int64_t[]){0, 1}, 2));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "ceil_mode", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[2] = {1.5, 3.5};
  bool ok =
      !s && wm_op_fixture_values_near(f.out[0], want, 2, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(avgpool_count_include_pad_divides_by_window) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[3] = {1, 1, 2};
  static const double x[2] = {2, 4};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, x));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "AveragePool", in, 1, 1));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "kernel_shape", (const int64_t[]){2}, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "pads", (const int64_t[]){1, 1}, 2));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "count_include_pad", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[3] = {1, 3, 2};
  bool ok =
      !s && wm_op_fixture_values_near(f.out[0], want, 3, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(lppool_and_global_lppool_take_p_norms) {
  static const char *const ops[2] = {"LpPool", "GlobalLpPool"};
  for (int k = 0; k < 2; k++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 11));
    int64_t dx[3] = {1, 1, 2};
    static const double x[2] = {3, -4};
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, x));
    const char *in[1] = {"x"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, ops[k], in, 1, 1));
    if (k == 0) {
      WM_CHECK_OK(
          wm_op_fixture_attr_ints(&f, "kernel_shape", (const int64_t[]){2}, 1));
    }
    wm_status_t s = wm_op_fixture_run(&f);
    static const double want[1] = {5};
    bool ok =
        !s && wm_op_fixture_values_near(f.out[0], want, 1, WM_OP_FIXTURE_TOL);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

// --------------------------------------------------------- normalization

WM_TEST(layernorm_outputs_mean_and_inv_std_dev) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 17));
  int64_t dx[2] = {2, 2}, ds[1] = {2};
  static const double x[4] = {1, 3, 2, 6}, sc[2] = {1, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, x));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT, 1, ds, sc));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "LayerNormalization", in, 2, 3));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "epsilon", 0.0f));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double y[4] = {-1, 2, -1, 2}, mean[2] = {2, 4},
                      inv[2] = {1, 0.5};
  bool ok = !s &&
            wm_op_fixture_values_near(f.out[0], y, 4, WM_OP_FIXTURE_TOL) &&
            wm_op_fixture_values_near(f.out[1], mean, 2, WM_OP_FIXTURE_TOL) &&
            wm_op_fixture_values_near(f.out[2], inv, 2, WM_OP_FIXTURE_TOL) &&
            f.out[1]->shape.rank == 2 && f.out[1]->shape.dims[1] == 1;
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(layernorm_rejects_scale_that_does_not_broadcast) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 17));
  int64_t dx[2] = {2, 4}, ds[1] = {3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 2, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "s", WM_DTYPE_FLOAT, 1, ds));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "LayerNormalization", in, 2, 1));
  wm_status_t s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT,
               "input 1 has shape [3], which does not broadcast to the "
               "normalized shape [4]");
}

WM_TEST(batchnorm_training_mode_updates_running_stats) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 15));
  int64_t dx[2] = {2, 1}, dc[1] = {1};
  static const double x[2] = {1, 3}, one[1] = {1}, zero[1] = {0};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, x));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT, 1, dc, one));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "b", WM_DTYPE_FLOAT, 1, dc, zero));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "m", WM_DTYPE_FLOAT, 1, dc, zero));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "v", WM_DTYPE_FLOAT, 1, dc, one));
  const char *in[5] = {"x", "s", "b", "m", "v"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "BatchNormalization", in, 5, 3));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "training_mode", 1));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "momentum", 0.5f));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "epsilon", 0.0f));
  wm_status_t s = wm_op_fixture_run(&f);
  // Batch mean 2, biased variance 1; running = 0.5 * old + 0.5 * batch.
  static const double y[2] = {-1, 1}, rm[1] = {1}, rv[1] = {1};
  bool ok = !s &&
            wm_op_fixture_values_near(f.out[0], y, 2, WM_OP_FIXTURE_TOL) &&
            wm_op_fixture_values_near(f.out[1], rm, 1, WM_OP_FIXTURE_TOL) &&
            wm_op_fixture_values_near(f.out[2], rv, 1, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(batchnorm_rejects_wrong_parameter_shape) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 15));
  int64_t dx[4] = {1, 3, 2, 2}, dc[1] = {3}, dv[1] = {4};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "s", WM_DTYPE_FLOAT, 1, dc));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_FLOAT, 1, dc));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "m", WM_DTYPE_FLOAT, 1, dc));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "v", WM_DTYPE_FLOAT, 1, dv));
  const char *in[5] = {"x", "s", "b", "m", "v"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "BatchNormalization", in, 5, 1));
  wm_status_t s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "input 4 (var) has shape [4], want [3]");
}

// ---------------------------------------------------------- dropout, loss

// Training mode keeps each element with probability 1 - ratio, scaled by
// 1 / (1 - ratio); ratio 0 keeps everything.
WM_TEST(dropout_training_keeps_and_scales_by_the_mask) {
  for (int k = 0; k < 2; k++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 13));
    enum { N = 4000 };
    int64_t dx[1] = {N};
    static double x[N];
    for (int i = 0; i < N; i++) {
      x[i] = 1 + i % 7;
    }
    static const double t[1] = {1};
    const double r[1] = {k == 0 ? 0.0 : 0.25};
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx, x));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "r", WM_DTYPE_FLOAT, 0, NULL, r));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "t", WM_DTYPE_BOOL, 0, NULL, t));
    const char *in[3] = {"x", "r", "t"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "Dropout", in, 3, 2));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "seed", 3));
    wm_status_t s = wm_op_fixture_run(&f);
    size_t kept = 0;
    bool ok = !s && f.out[1]->dtype == WM_DTYPE_BOOL;
    for (size_t i = 0; ok && i < N; i++) {
      bool keep = ((const uint8_t *)f.out[1]->data)[i] != 0;
      double want = keep ? x[i] / (1.0 - r[0]) : 0.0;
      ok = fabs(wm_tensor_get_f64(f.out[0], i) - want) < 1e-5;
      kept += keep;
    }
    wm_op_fixture_deinit(&f);
    WM_CHECK_OK(s);
    WM_CHECK(ok);
    if (k == 0) {
      WM_CHECK_INT_EQ(kept, N);
    } else {
      WM_CHECK(kept > N * 0.72 && kept < N * 0.78);  // 3000 expected
    }
  }
}

WM_TEST(nllloss_rejects_out_of_range_target) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {2, 3}, dt[1] = {2};
  static const double t[2] = {0, 5};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "t", WM_DTYPE_INT64, 1, dt, t));
  const char *in[2] = {"x", "t"};
  WM_CHECK_OK(
      wm_op_fixture_add_node(&f, "NegativeLogLikelihoodLoss", in, 2, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, OUT_OF_RANGE, "target 5 at index 1 is out of range [0, 3)");
}

WM_TEST(sce_mean_with_ignore_index_and_log_prob) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {2, 2}, dt[1] = {2};
  static const double x[4] = {0, 0, 5, 1}, t[2] = {1, 0};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, x));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "t", WM_DTYPE_INT64, 1, dt, t));
  const char *in[2] = {"x", "t"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "SoftmaxCrossEntropyLoss", in, 2, 2));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "ignore_index", 0));
  wm_status_t s = wm_op_fixture_run(&f);
  // Row 1 is ignored, so the mean is row 0's loss: log 2.
  double l2 = log(2.0), l = log(1 + exp(-4.0));
  const double loss[1] = {l2}, lp[4] = {-l2, -l2, -l, -4 - l};
  bool ok = !s &&
            wm_op_fixture_values_near(f.out[0], loss, 1, WM_OP_FIXTURE_TOL) &&
            f.out[0]->shape.rank == 0 &&
            wm_op_fixture_values_near(f.out[1], lp, 4, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// ------------------------------------------------------- LpNormalization

WM_TEST(lpnorm_takes_l1_along_axis_and_keeps_zero_vectors_zero) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 22));
  static const double x[6] = {3, 0, -1, 0, 1, 0};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2,
                                      (const int64_t[]){2, 3}, x));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "LpNormalization", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", 0));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "p", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  // Columns (3, 0), (0, 1), (-1, 0): the middle one and |-1| = 1.
  static const double want[6] = {1, 0, -1, 0, 1, 0};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 6, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  static const double z[2] = {0, 0};
  WM_CHECK_OK(wm_op_fixture_init(&f, 22));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1,
                                      (const int64_t[]){2}, z));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "LpNormalization", in, 1, 1));
  s = wm_op_fixture_run(&f);
  ok = !s && wm_op_fixture_values_near(f.out[0], z, 2, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(lpnorm_rejects_p_other_than_1_or_2) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 22));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 1,
                                      (const int64_t[]){4}));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "LpNormalization", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "p", 3));
  wm_status_t s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "attribute p is 3, want 1 or 2");
}

// ---------------------------------------------------- GroupNormalization

// Runs GroupNormalization at |opset| on x [1, 4, 2] in 2 groups with
// scale and bias of |n_param| values.
static wm_status_t gn_run_with(wm_op_fixture_t *f, int64_t opset,
                               const double *scale, const double *bias,
                               int64_t n_param) {
  static const double x[8] = {0, 2, 0, 2, 1, 1, 5, 5};
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, opset));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "x", WM_DTYPE_FLOAT, 3,
                                             (const int64_t[]){1, 4, 2}, x));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_floats(f, "s", (size_t)n_param, scale));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_floats(f, "b", (size_t)n_param, bias));
  const char *in[3] = {"x", "s", "b"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "GroupNormalization", in, 3, 1));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_int(f, "num_groups", 2));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_float(f, "epsilon", 0.0f));
  return wm_op_fixture_run(f);
}

WM_TEST(groupnorm_scales_per_channel_from_opset_21_and_per_group_before) {
  // Group 0 = {0, 2, 0, 2}: mean 1, std 1. Group 1 = {1, 1, 5, 5}: mean
  // 3, std 2. Both normalize to -1, 1, -1, 1.
  static const double s4[4] = {1, 2, 3, 4}, b4[4] = {0, 10, 20, 30};
  wm_op_fixture_t f;
  wm_status_t s = gn_run_with(&f, 21, s4, b4, 4);
  static const double want21[8] = {-1, 1, 8, 12, 17, 17, 34, 34};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want21, 8, 1e-5);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  static const double s2[2] = {2, 3}, b2[2] = {1, -1};
  s = gn_run_with(&f, 18, s2, b2, 2);
  static const double want18[8] = {-1, 3, -1, 3, -4, -4, 2, 2};
  ok = !s && wm_op_fixture_values_near(f.out[0], want18, 8, 1e-5);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  // Per-group parameters are refused at opset 21.
  s = gn_run_with(&f, 21, s2, b2, 2);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "input 1 (scale) has shape [2], want [4]");
}

WM_TEST(groupnorm_rejects_groups_not_dividing_channels) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 21));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4,
                                      (const int64_t[]){1, 6, 2, 2}));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "s", WM_DTYPE_FLOAT, 1,
                                      (const int64_t[]){6}));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_FLOAT, 1,
                                      (const int64_t[]){6}));
  const char *in[3] = {"x", "s", "b"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "GroupNormalization", in, 3, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "num_groups", 4));
  wm_status_t s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT,
               "input 0 has 6 channels, not a multiple of num_groups 4");

  WM_CHECK_OK(wm_op_fixture_init(&f, 21));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4,
                                      (const int64_t[]){1, 6, 2, 2}));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "s", WM_DTYPE_FLOAT, 1,
                                      (const int64_t[]){6}));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_FLOAT, 1,
                                      (const int64_t[]){6}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "GroupNormalization", in, 3, 1));
  s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "attribute num_groups is required");
}

// ----------------------------------------------------------------- Col2Im

// Builds Col2Im over x [1, C*K, L] (values 1..n) with |image| and |block|.
static wm_status_t col2im_node(wm_op_fixture_t *f, const int64_t *xd,
                               const double *x, const int64_t *image,
                               const int64_t *block, size_t nsp) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 18));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "x", WM_DTYPE_FLOAT, 3, xd, x));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_ints(f, "image", nsp, image));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_ints(f, "block", nsp, block));
  const char *in[3] = {"x", "image", "block"};
  return wm_op_fixture_add_node(f, "Col2Im", in, 3, 1);
}

WM_TEST(col2im_adds_overlapping_blocks_with_stride_and_pads) {
  // 1-D image of 4, block 2, stride 1: blocks at 0, 1, 2; tap 0 row is
  // {1, 2, 3}, tap 1 row {10, 20, 30}.
  static const double x[6] = {1, 2, 3, 10, 20, 30};
  wm_op_fixture_t f;
  WM_CHECK_OK(col2im_node(&f, (const int64_t[]){1, 2, 3}, x,
                          (const int64_t[]){4}, (const int64_t[]){2}, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[4] = {1, 12, 23, 30};
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 3, (const int64_t[]){1, 1, 4}) &&
            wm_op_fixture_values_near(f.out[0], want, 4, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  // Padding 1 on both sides, stride 2: blocks start at -1, 1, 3.
  WM_CHECK_OK(col2im_node(&f, (const int64_t[]){1, 2, 3}, x,
                          (const int64_t[]){4}, (const int64_t[]){2}, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "pads", (const int64_t[]){1, 1}, 2));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "strides", (const int64_t[]){2}, 1));
  s = wm_op_fixture_run(&f);
  static const double want_p[4] = {10, 2, 20, 3};
  ok = !s && wm_op_fixture_values_near(f.out[0], want_p, 4, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(col2im_rejects_wrong_block_count_and_hostile_shapes) {
  wm_op_fixture_t f;
  WM_CHECK_OK(col2im_node(&f, (const int64_t[]){1, 2, 2}, NULL,
                          (const int64_t[]){4}, (const int64_t[]){2}, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "input 0 dim 2 is 2, want 3 sliding");

  WM_CHECK_OK(col2im_node(&f, (const int64_t[]){1, 2, 3}, NULL,
                          (const int64_t[]){4}, (const int64_t[]){0}, 1));
  s = wm_op_fixture_run(&f);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "block_shape[0] is 0");

  WM_CHECK_OK(col2im_node(&f, (const int64_t[]){1, 3, 1}, NULL,
                          (const int64_t[]){4}, (const int64_t[]){2}, 1));
  s = wm_op_fixture_run(&f);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "not a multiple of the block size 2");

  // A block larger than the padded image; a dilation that overflows.
  WM_CHECK_OK(col2im_node(&f, (const int64_t[]){1, 9, 1}, NULL,
                          (const int64_t[]){2}, (const int64_t[]){9}, 1));
  s = wm_op_fixture_run(&f);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "larger than the padded input");
  WM_CHECK_OK(col2im_node(&f, (const int64_t[]){1, 2, 1}, NULL,
                          (const int64_t[]){2}, (const int64_t[]){2}, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "dilations",
                                      (const int64_t[]){INT64_MAX}, 1));
  s = wm_op_fixture_run(&f);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "overflows");
}

// ------------------------------------------------------------- DeformConv

// Runs DeformConv on x [1, 1, 3, 3] = 0..8 with a 2x2 kernel of ones and
// every offset set to (|dy|, |dx|), with an optional mask of |m|.
static wm_status_t dc_run_with(wm_op_fixture_t *f, double dy, double dx,
                               const double *m) {
  static const double ones[4] = {1, 1, 1, 1};
  double off[32];
  for (int i = 0; i < 32; i++) {
    off[i] = (i / 4) % 2 == 0 ? dy : dx;
  }
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 19));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(
      f, "x", WM_DTYPE_FLOAT, 4, (const int64_t[]){1, 1, 3, 3}, NULL));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(
      f, "w", WM_DTYPE_FLOAT, 4, (const int64_t[]){1, 1, 2, 2}, ones));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(
      f, "off", WM_DTYPE_FLOAT, 4, (const int64_t[]){1, 8, 2, 2}, off));
  if (m) {
    WM_RETURN_IF_ERROR(wm_op_fixture_add_const(
        f, "m", WM_DTYPE_FLOAT, 4, (const int64_t[]){1, 4, 2, 2}, m));
  }
  const char *in[5] = {"x", "w", "off", "", "m"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "DeformConv", in, m ? 5 : 3, 1));
  return wm_op_fixture_run(f);
}

WM_TEST(deformconv_samples_bilinearly_with_zeros_outside) {
  wm_op_fixture_t f;
  // Zero offsets: plain convolution, window sums of 0..8.
  wm_status_t s = dc_run_with(&f, 0, 0, NULL);
  static const double conv[4] = {8, 12, 20, 24};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], conv, 4, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  // Half a pixel right: each tap reads the mean of two neighbours; taps
  // of the right column in windows (0, 1) and (1, 1) read half zeros.
  s = dc_run_with(&f, 0, 0.5, NULL);
  static const double half[4] = {10, 9.5, 22, 18.5};
  ok = !s && wm_op_fixture_values_near(f.out[0], half, 4, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  // Offsets far outside (or NaN) read zeros; a mask scales each tap.
  s = dc_run_with(&f, 1e300, 0, NULL);
  static const double zero[4] = {0, 0, 0, 0};
  ok = !s && wm_op_fixture_values_near(f.out[0], zero, 4, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  s = dc_run_with(&f, NAN, 0, NULL);
  ok = !s && wm_op_fixture_values_near(f.out[0], zero, 4, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  double m[16];
  for (int i = 0; i < 16; i++) {
    m[i] = i < 4 ? 1 : 0;  // keep only tap (0, 0)
  }
  s = dc_run_with(&f, 0, 0, m);
  static const double tap0[4] = {0, 1, 3, 4};
  ok = !s && wm_op_fixture_values_near(f.out[0], tap0, 4, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(deformconv_rejects_offset_of_the_wrong_shape) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 19));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4,
                                      (const int64_t[]){1, 4, 5, 5}));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 4,
                                      (const int64_t[]){2, 4, 3, 3}));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "off", WM_DTYPE_FLOAT, 4,
                                      (const int64_t[]){1, 18, 3, 3}));
  const char *in[3] = {"x", "w", "off"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "DeformConv", in, 3, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "offset_group", 2));
  wm_status_t s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT,
               "input 2 (offset) has shape [1,18,3,3], want [N, 36,");
}

// The resolve slot: SAME padding (UPPER puts the odd pad at the end,
// LOWER at the begin), the kernel taken from the weight, every default
// explicit.
WM_TEST(conv_resolves_same_padding_and_defaults) {
  static const char *const modes[2] = {"SAME_UPPER", "SAME_LOWER"};
  static const int64_t want[2][4] = {{1, 1, 2, 2}, {2, 2, 1, 1}};
  for (int k = 0; k < 2; k++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 11));
    int64_t dx[4] = {1, 1, 5, 5}, dw[4] = {1, 1, 4, 4};
    WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
    WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 4, dw));
    const char *in[2] = {"x", "w"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "Conv", in, 2, 1));
    WM_CHECK_OK(wm_op_fixture_attr_string(&f, "auto_pad", modes[k]));
    WM_CHECK_OK(
        wm_op_fixture_attr_ints(&f, "strides", (const int64_t[]){2, 2}, 2));
    wm_op_params_t p;
    wm_status_t s = wm_op_fixture_resolve(&f, &p);
    bool ok = !s && !p.pending &&
              wm_op_fixture_param_ints_are(&p, "kernel_shape",
                                           (const int64_t[]){4, 4}, 2) &&
              wm_op_fixture_param_ints_are(&p, "strides",
                                           (const int64_t[]){2, 2}, 2) &&
              wm_op_fixture_param_ints_are(&p, "dilations",
                                           (const int64_t[]){1, 1}, 2) &&
              wm_op_fixture_param_ints_are(&p, "pads", want[k], 4) &&
              wm_op_fixture_param_int_is(&p, "group", 1);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

// ConvTranspose with output_shape: the total padding goes to the begin
// (NOTSET takes the larger half first); AveragePool's SAME pads and its
// count_include_pad default.
WM_TEST(convtranspose_and_pools_resolve_their_pads) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[4] = {1, 1, 4, 4}, dw[4] = {1, 1, 3, 3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 4, dw));
  const char *in[2] = {"x", "w"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "ConvTranspose", in, 2, 1));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "strides", (const int64_t[]){2, 2}, 2));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "output_shape", (const int64_t[]){8, 7}, 2));
  wm_op_params_t p;
  wm_status_t s = wm_op_fixture_resolve(&f, &p);
  bool ok = !s && wm_op_fixture_param_ints_are(
                      &p, "pads", (const int64_t[]){1, 1, 0, 1}, 4);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t d5[4] = {1, 1, 5, 5};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, d5));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "AveragePool", in, 1, 1));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "kernel_shape", (const int64_t[]){3, 3}, 2));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "strides", (const int64_t[]){2, 2}, 2));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "auto_pad", "SAME_UPPER"));
  s = wm_op_fixture_resolve(&f, &p);
  ok = !s &&
       wm_op_fixture_param_ints_are(&p, "pads", (const int64_t[]){1, 1, 1, 1},
                                    4) &&
       wm_op_fixture_param_int_is(&p, "count_include_pad", 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

static const wm_test_case_t cases[] = {
    WM_CASE(conv_2d_matches_hand_computed_in_each_float_dtype),
    WM_CASE(conv_rejects_channel_mismatch),
    WM_CASE(conv_rejects_kernel_larger_than_padded_input),
    WM_CASE(conv_rejects_bad_pads_length),
    WM_CASE(conv_static_shape_keeps_unknown_dims),
    WM_CASE(conv_cost_counts_grouped_macs_and_bias),
    WM_CASE(conv_resolves_same_padding_and_defaults),
    WM_CASE(convtranspose_and_pools_resolve_their_pads),
    WM_CASE(convtranspose_rejects_huge_output_shape),
    WM_CASE(convtranspose_output_padding_extends_the_end),
    WM_CASE(maxpool_indices_follow_storage_order),
    WM_CASE(maxpool_rejects_overflowing_pads_and_kernel),
    WM_CASE(pool_requires_kernel_shape),
    WM_CASE(avgpool_ceil_mode_drops_window_starting_in_end_padding),
    WM_CASE(avgpool_count_include_pad_divides_by_window),
    WM_CASE(lppool_and_global_lppool_take_p_norms),
    WM_CASE(layernorm_outputs_mean_and_inv_std_dev),
    WM_CASE(layernorm_rejects_scale_that_does_not_broadcast),
    WM_CASE(batchnorm_training_mode_updates_running_stats),
    WM_CASE(batchnorm_rejects_wrong_parameter_shape),
    WM_CASE(dropout_training_keeps_and_scales_by_the_mask),
    WM_CASE(nllloss_rejects_out_of_range_target),
    WM_CASE(sce_mean_with_ignore_index_and_log_prob),
    WM_CASE(lpnorm_takes_l1_along_axis_and_keeps_zero_vectors_zero),
    WM_CASE(lpnorm_rejects_p_other_than_1_or_2),
    WM_CASE(groupnorm_scales_per_channel_from_opset_21_and_per_group_before),
    WM_CASE(groupnorm_rejects_groups_not_dividing_channels),
    WM_CASE(col2im_adds_overlapping_blocks_with_stride_and_pads),
    WM_CASE(col2im_rejects_wrong_block_count_and_hostile_shapes),
    WM_CASE(deformconv_samples_bilinearly_with_zeros_outside),
    WM_CASE(deformconv_rejects_offset_of_the_wrong_shape),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
