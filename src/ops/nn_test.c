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

static const wm_test_case_t cases[] = {
    WM_CASE(conv_2d_matches_hand_computed_in_each_float_dtype),
    WM_CASE(conv_rejects_channel_mismatch),
    WM_CASE(conv_rejects_kernel_larger_than_padded_input),
    WM_CASE(conv_rejects_bad_pads_length),
    WM_CASE(conv_static_shape_keeps_unknown_dims),
    WM_CASE(conv_cost_counts_grouped_macs_and_bias),
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
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
