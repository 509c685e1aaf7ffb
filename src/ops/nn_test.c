// Tests of the nn operators: reference kernels against hand-computed
// values, static shape rules, costs, and errors on hostile attributes.
#include <math.h>
#include <stdlib.h>

#include "ops/ops.h"
#include "wm_test.h"

enum { MAX_OUT = 3 };

// A one-node graph under construction and its results.
typedef struct fixture {
  wm_graph_t *g;              // the graph
  int32_t node;               // the node
  wm_tensor_t *out[MAX_OUT];  // outputs after run_node
} fixture_t;

static wm_status_t fixture_init(fixture_t *f, int64_t opset) {
  memset(f, 0, sizeof(*f));
  WM_RETURN_IF_ERROR(wm_graph_create("test", NULL, &f->g));
  return wm_graph_set_opset(f->g, "", opset);
}

static void fixture_deinit(fixture_t *f) {
  for (int i = 0; i < MAX_OUT; i++) {
    wm_tensor_destroy(f->out[i]);
  }
  wm_graph_destroy(f->g);
}

// Adds an initializer |name| of |shape| holding |vals| (or 0..n-1).
static wm_status_t add_const(fixture_t *f, const char *name, wm_dtype_t dtype,
                             int32_t rank, const int64_t *dims,
                             const double *vals) {
  wm_shape_t s = wm_shape_make(rank, dims);
  wm_tensor_t *t;
  WM_RETURN_IF_ERROR(wm_tensor_create(dtype, &s, &t));
  for (size_t i = 0; i < t->count; i++) {
    if (dtype == WM_DTYPE_BOOL) {
      ((uint8_t *)t->data)[i] = vals && vals[i] != 0;
    } else {
      wm_tensor_set_f64(t, i, vals ? vals[i] : (double)i);
    }
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
  static const char *const outs[MAX_OUT] = {"y0", "y1", "y2"};
  return wm_graph_add_node(f->g, op, "", "n", inputs, n_in, outs, n_out,
                           &f->node);
}

static wm_status_t add_ints(fixture_t *f, const char *name, int64_t a,
                            int64_t b, int64_t c, int64_t d, size_t n) {
  int64_t v[4] = {a, b, c, d};
  return wm_graph_add_attr_ints(f->g, f->node, name, v, n);
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
  for (int32_t i = 0; i < ctx.n_out && i < MAX_OUT; i++) {
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
    fprintf(stderr, "got %zu elements, want %zu\n", t ? t->count : 0, n);
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

// ------------------------------------------------------------------ Conv

WM_TEST(conv_2d_matches_hand_computed_in_each_float_dtype) {
  static const wm_dtype_t dtypes[3] = {WM_DTYPE_FLOAT, WM_DTYPE_DOUBLE,
                                       WM_DTYPE_FLOAT16};
  for (int k = 0; k < 3; k++) {
    fixture_t f;
    WM_CHECK_OK(fixture_init(&f, 11));
    int64_t dx[4] = {1, 1, 3, 3}, dw[4] = {1, 1, 2, 2}, db[1] = {1};
    static const double ones[4] = {1, 1, 1, 1}, bias[1] = {10};
    WM_CHECK_OK(add_const(&f, "x", dtypes[k], 4, dx, NULL));
    WM_CHECK_OK(add_const(&f, "w", dtypes[k], 4, dw, ones));
    WM_CHECK_OK(add_const(&f, "b", dtypes[k], 1, db, bias));
    const char *in[3] = {"x", "w", "b"};
    WM_CHECK_OK(add_node(&f, "Conv", in, 3, 1));
    wm_status_t s = run_node(&f);
    // Window sums of [[0,1,2],[3,4,5],[6,7,8]] plus 10.
    static const double want[4] = {18, 22, 30, 34};
    bool ok =
        !s && values_are(f.out[0], want, 4) && f.out[0]->dtype == dtypes[k];
    fixture_deinit(&f);
    WM_CHECK_OK(s);
    WM_CHECK(ok);
  }
}

WM_TEST(conv_rejects_channel_mismatch) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 11));
  int64_t dx[4] = {1, 3, 5, 5}, dw[4] = {2, 2, 3, 3};
  WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(add_input(&f, "w", WM_DTYPE_FLOAT, 4, dw));
  const char *in[2] = {"x", "w"};
  WM_CHECK_OK(add_node(&f, "Conv", in, 2, 1));
  wm_status_t s = wm_ops_check_graph(f.g);
  fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT,
               "input 0 has 3 channels but weight has 2 channels per group "
               "x group 1");
}

WM_TEST(conv_rejects_kernel_larger_than_padded_input) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 11));
  int64_t dx[4] = {1, 1, 2, 2}, dw[4] = {1, 1, 3, 3};
  WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(add_input(&f, "w", WM_DTYPE_FLOAT, 4, dw));
  const char *in[2] = {"x", "w"};
  WM_CHECK_OK(add_node(&f, "Conv", in, 2, 1));
  wm_status_t s = wm_ops_check_graph(f.g);
  fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "is larger than the padded input 2");
}

WM_TEST(conv_rejects_bad_pads_length) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 11));
  int64_t dx[4] = {1, 1, 5, 5}, dw[4] = {1, 1, 3, 3};
  WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(add_input(&f, "w", WM_DTYPE_FLOAT, 4, dw));
  const char *in[2] = {"x", "w"};
  WM_CHECK_OK(add_node(&f, "Conv", in, 2, 1));
  WM_CHECK_OK(add_ints(&f, "pads", 1, 1, 0, 0, 2));
  wm_status_t s = wm_ops_check_graph(f.g);
  fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "attribute pads has 2 values, want 4");
}

WM_TEST(conv_static_shape_keeps_unknown_dims) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 11));
  int64_t dx[4] = {-1, 3, -1, 8}, dw[4] = {4, 3, 3, 3};
  WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(add_input(&f, "w", WM_DTYPE_FLOAT, 4, dw));
  const char *in[2] = {"x", "w"};
  WM_CHECK_OK(add_node(&f, "Conv", in, 2, 1));
  WM_CHECK_OK(add_ints(&f, "strides", 2, 2, 0, 0, 2));
  WM_CHECK_OK(add_ints(&f, "pads", 1, 1, 1, 1, 4));
  wm_type_t t;
  wm_status_t s = infer_y0(&f, &t);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 4);
  WM_CHECK(t.shape.dims[0] < 0);
  WM_CHECK_INT_EQ(t.shape.dims[1], 4);
  WM_CHECK(t.shape.dims[2] < 0);
  WM_CHECK_INT_EQ(t.shape.dims[3], 4);
}

WM_TEST(conv_cost_counts_grouped_macs_and_bias) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 11));
  int64_t dx[4] = {2, 4, 8, 8}, dw[4] = {6, 2, 3, 3}, db[1] = {6};
  WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(add_input(&f, "w", WM_DTYPE_FLOAT, 4, dw));
  WM_CHECK_OK(add_input(&f, "b", WM_DTYPE_FLOAT, 1, db));
  const char *in[3] = {"x", "w", "b"};
  WM_CHECK_OK(add_node(&f, "Conv", in, 3, 1));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "group", 2));
  WM_CHECK_OK(add_ints(&f, "pads", 1, 1, 1, 1, 4));
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
  // N * Cout * out spatial * Cin/group * kernel = 2 * 6 * 64 * 2 * 9.
  WM_CHECK_DBL_NEAR(cost.macs, 13824, 0);
  WM_CHECK_DBL_NEAR(cost.flops, 2 * 13824 + 768, 0);
}

WM_TEST(convtranspose_rejects_huge_output_shape) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 11));
  int64_t dx[4] = {1, 1, 3, 3}, dw[4] = {1, 1, 3, 3};
  WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(add_input(&f, "w", WM_DTYPE_FLOAT, 4, dw));
  const char *in[2] = {"x", "w"};
  WM_CHECK_OK(add_node(&f, "ConvTranspose", in, 2, 1));
  WM_CHECK_OK(add_ints(&f, "output_shape", INT64_C(1) << 40, INT64_C(1) << 40,
                       0, 0, 2));
  wm_status_t s = wm_ops_check_graph(f.g);
  fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "too many elements");
}

WM_TEST(convtranspose_output_padding_extends_the_end) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 11));
  int64_t dx[3] = {1, 1, 2}, dw[3] = {1, 1, 2};
  static const double x[2] = {1, 2}, w[2] = {1, 10};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, x));
  WM_CHECK_OK(add_const(&f, "w", WM_DTYPE_FLOAT, 3, dw, w));
  const char *in[2] = {"x", "w"};
  WM_CHECK_OK(add_node(&f, "ConvTranspose", in, 2, 1));
  WM_CHECK_OK(add_ints(&f, "strides", 3, 0, 0, 0, 1));
  WM_CHECK_OK(add_ints(&f, "output_padding", 1, 0, 0, 0, 1));
  wm_status_t s = run_node(&f);
  // 3 * (2 - 1) + 1 + 2 = 6 outputs: x0*w at 0, x1*w at 3, one pad.
  static const double want[6] = {1, 10, 0, 2, 20, 0};
  bool ok = !s && values_are(f.out[0], want, 6);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

// --------------------------------------------------------------- pooling

WM_TEST(maxpool_indices_follow_storage_order) {
  for (int order = 0; order < 2; order++) {
    fixture_t f;
    WM_CHECK_OK(fixture_init(&f, 12));
    int64_t dx[4] = {1, 1, 2, 3};
    static const double x[6] = {1, 5, 2, 4, 3, 6};
    WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 4, dx, x));
    const char *in[1] = {"x"};
    WM_CHECK_OK(add_node(&f, "MaxPool", in, 1, 2));
    WM_CHECK_OK(add_ints(&f, "kernel_shape", 2, 2, 0, 0, 2));
    WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "storage_order", order));
    wm_status_t s = run_node(&f);
    static const double want[2] = {5, 6};
    // 5 is at (0,1), 6 at (1,2); column-major index is h + w * H.
    static const double idx[2][2] = {{1, 5}, {2, 5}};
    bool ok = !s && values_are(f.out[0], want, 2) &&
              values_are(f.out[1], idx[order], 2);
    fixture_deinit(&f);
    WM_CHECK_OK(s);
    WM_CHECK(ok);
  }
}

WM_TEST(maxpool_rejects_overflowing_pads_and_kernel) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 12));
  int64_t dx[3] = {1, 1, 4};
  WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  const char *in[1] = {"x"};
  WM_CHECK_OK(add_node(&f, "MaxPool", in, 1, 1));
  WM_CHECK_OK(add_ints(&f, "kernel_shape", INT64_MAX, 0, 0, 0, 1));
  WM_CHECK_OK(add_ints(&f, "dilations", 4, 0, 0, 0, 1));
  wm_status_t s = wm_ops_check_graph(f.g);
  fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "overflows in spatial dim 0");

  WM_CHECK_OK(fixture_init(&f, 12));
  WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(add_node(&f, "MaxPool", in, 1, 1));
  WM_CHECK_OK(add_ints(&f, "kernel_shape", 2, 0, 0, 0, 1));
  WM_CHECK_OK(add_ints(&f, "pads", INT64_MAX, INT64_MAX, 0, 0, 2));
  s = wm_ops_check_graph(f.g);
  fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "overflow in spatial dim 0");
}

WM_TEST(pool_requires_kernel_shape) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 11));
  int64_t dx[4] = {1, 1, 4, 4};
  WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  const char *in[1] = {"x"};
  WM_CHECK_OK(add_node(&f, "AveragePool", in, 1, 1));
  wm_status_t s = wm_ops_check_graph(f.g);
  fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "attribute kernel_shape is required");
}

WM_TEST(avgpool_ceil_mode_drops_window_starting_in_end_padding) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 11));
  int64_t dx[3] = {1, 1, 4};
  static const double x[4] = {1, 2, 3, 4};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, x));
  const char *in[1] = {"x"};
  WM_CHECK_OK(add_node(&f, "AveragePool", in, 1, 1));
  WM_CHECK_OK(add_ints(&f, "kernel_shape", 2, 0, 0, 0, 1));
  WM_CHECK_OK(add_ints(&f, "strides", 2, 0, 0, 0, 1));
  WM_CHECK_OK(add_ints(&f, "pads", 0, 1, 0, 0, 2));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "ceil_mode", 1));
  wm_status_t s = run_node(&f);
  static const double want[2] = {1.5, 3.5};
  bool ok = !s && values_are(f.out[0], want, 2);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(avgpool_count_include_pad_divides_by_window) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 11));
  int64_t dx[3] = {1, 1, 2};
  static const double x[2] = {2, 4};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, x));
  const char *in[1] = {"x"};
  WM_CHECK_OK(add_node(&f, "AveragePool", in, 1, 1));
  WM_CHECK_OK(add_ints(&f, "kernel_shape", 2, 0, 0, 0, 1));
  WM_CHECK_OK(add_ints(&f, "pads", 1, 1, 0, 0, 2));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "count_include_pad", 1));
  wm_status_t s = run_node(&f);
  static const double want[3] = {1, 3, 2};
  bool ok = !s && values_are(f.out[0], want, 3);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(lppool_and_global_lppool_take_p_norms) {
  static const char *const ops[2] = {"LpPool", "GlobalLpPool"};
  for (int k = 0; k < 2; k++) {
    fixture_t f;
    WM_CHECK_OK(fixture_init(&f, 11));
    int64_t dx[3] = {1, 1, 2};
    static const double x[2] = {3, -4};
    WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, x));
    const char *in[1] = {"x"};
    WM_CHECK_OK(add_node(&f, ops[k], in, 1, 1));
    if (k == 0) {
      WM_CHECK_OK(add_ints(&f, "kernel_shape", 2, 0, 0, 0, 1));
    }
    wm_status_t s = run_node(&f);
    static const double want[1] = {5};
    bool ok = !s && values_are(f.out[0], want, 1);
    fixture_deinit(&f);
    WM_CHECK_OK(s);
    WM_CHECK(ok);
  }
}

// --------------------------------------------------------- normalization

WM_TEST(layernorm_outputs_mean_and_inv_std_dev) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 17));
  int64_t dx[2] = {2, 2}, ds[1] = {2};
  static const double x[4] = {1, 3, 2, 6}, sc[2] = {1, 2};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, x));
  WM_CHECK_OK(add_const(&f, "s", WM_DTYPE_FLOAT, 1, ds, sc));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(add_node(&f, "LayerNormalization", in, 2, 3));
  WM_CHECK_OK(wm_graph_add_attr_float(f.g, f.node, "epsilon", 0.0f));
  wm_status_t s = run_node(&f);
  static const double y[4] = {-1, 2, -1, 2}, mean[2] = {2, 4},
                      inv[2] = {1, 0.5};
  bool ok = !s && values_are(f.out[0], y, 4) && values_are(f.out[1], mean, 2) &&
            values_are(f.out[2], inv, 2) && f.out[1]->shape.rank == 2 &&
            f.out[1]->shape.dims[1] == 1;
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(layernorm_rejects_scale_that_does_not_broadcast) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 17));
  int64_t dx[2] = {2, 4}, ds[1] = {3};
  WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 2, dx));
  WM_CHECK_OK(add_input(&f, "s", WM_DTYPE_FLOAT, 1, ds));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(add_node(&f, "LayerNormalization", in, 2, 1));
  wm_status_t s = wm_ops_check_graph(f.g);
  fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT,
               "input 1 has shape [3], which does not broadcast to the "
               "normalized shape [4]");
}

WM_TEST(batchnorm_training_mode_updates_running_stats) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 15));
  int64_t dx[2] = {2, 1}, dc[1] = {1};
  static const double x[2] = {1, 3}, one[1] = {1}, zero[1] = {0};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, x));
  WM_CHECK_OK(add_const(&f, "s", WM_DTYPE_FLOAT, 1, dc, one));
  WM_CHECK_OK(add_const(&f, "b", WM_DTYPE_FLOAT, 1, dc, zero));
  WM_CHECK_OK(add_const(&f, "m", WM_DTYPE_FLOAT, 1, dc, zero));
  WM_CHECK_OK(add_const(&f, "v", WM_DTYPE_FLOAT, 1, dc, one));
  const char *in[5] = {"x", "s", "b", "m", "v"};
  WM_CHECK_OK(add_node(&f, "BatchNormalization", in, 5, 3));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "training_mode", 1));
  WM_CHECK_OK(wm_graph_add_attr_float(f.g, f.node, "momentum", 0.5f));
  WM_CHECK_OK(wm_graph_add_attr_float(f.g, f.node, "epsilon", 0.0f));
  wm_status_t s = run_node(&f);
  // Batch mean 2, biased variance 1; running = 0.5 * old + 0.5 * batch.
  static const double y[2] = {-1, 1}, rm[1] = {1}, rv[1] = {1};
  bool ok = !s && values_are(f.out[0], y, 2) && values_are(f.out[1], rm, 1) &&
            values_are(f.out[2], rv, 1);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(batchnorm_rejects_wrong_parameter_shape) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 15));
  int64_t dx[4] = {1, 3, 2, 2}, dc[1] = {3}, dv[1] = {4};
  WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(add_input(&f, "s", WM_DTYPE_FLOAT, 1, dc));
  WM_CHECK_OK(add_input(&f, "b", WM_DTYPE_FLOAT, 1, dc));
  WM_CHECK_OK(add_input(&f, "m", WM_DTYPE_FLOAT, 1, dc));
  WM_CHECK_OK(add_input(&f, "v", WM_DTYPE_FLOAT, 1, dv));
  const char *in[5] = {"x", "s", "b", "m", "v"};
  WM_CHECK_OK(add_node(&f, "BatchNormalization", in, 5, 1));
  wm_status_t s = wm_ops_check_graph(f.g);
  fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "input 4 (var) has shape [4], want [3]");
}

// ---------------------------------------------------------- dropout, loss

WM_TEST(dropout_training_needs_ratio_zero) {
  for (int k = 0; k < 2; k++) {
    fixture_t f;
    WM_CHECK_OK(fixture_init(&f, 13));
    int64_t dx[1] = {3};
    static const double x[3] = {1, 2, 3}, t[1] = {1};
    const double r[1] = {k == 0 ? 0.0 : 0.5};
    WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx, x));
    WM_CHECK_OK(add_const(&f, "r", WM_DTYPE_FLOAT, 0, NULL, r));
    WM_CHECK_OK(add_const(&f, "t", WM_DTYPE_BOOL, 0, NULL, t));
    const char *in[3] = {"x", "r", "t"};
    WM_CHECK_OK(add_node(&f, "Dropout", in, 3, 2));
    wm_status_t s = run_node(&f);
    bool ok = !s && values_are(f.out[0], x, 3) &&
              f.out[1]->dtype == WM_DTYPE_BOOL &&
              memcmp(f.out[1]->data, "\1\1\1", 3) == 0;
    fixture_deinit(&f);
    if (k == 0) {
      WM_CHECK_OK(s);
      WM_CHECK(ok);
    } else {
      WM_CHECK_ERR(s, UNIMPLEMENTED, "ratio 0.5 is random");
    }
  }
}

WM_TEST(nllloss_rejects_out_of_range_target) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[2] = {2, 3}, dt[1] = {2};
  static const double t[2] = {0, 5};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(add_const(&f, "t", WM_DTYPE_INT64, 1, dt, t));
  const char *in[2] = {"x", "t"};
  WM_CHECK_OK(add_node(&f, "NegativeLogLikelihoodLoss", in, 2, 1));
  wm_status_t s = run_node(&f);
  fixture_deinit(&f);
  WM_CHECK_ERR(s, OUT_OF_RANGE, "target 5 at index 1 is out of range [0, 3)");
}

WM_TEST(sce_mean_with_ignore_index_and_log_prob) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[2] = {2, 2}, dt[1] = {2};
  static const double x[4] = {0, 0, 5, 1}, t[2] = {1, 0};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, x));
  WM_CHECK_OK(add_const(&f, "t", WM_DTYPE_INT64, 1, dt, t));
  const char *in[2] = {"x", "t"};
  WM_CHECK_OK(add_node(&f, "SoftmaxCrossEntropyLoss", in, 2, 2));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "ignore_index", 0));
  wm_status_t s = run_node(&f);
  // Row 1 is ignored, so the mean is row 0's loss: log 2.
  double l2 = log(2.0), l = log(1 + exp(-4.0));
  const double loss[1] = {l2}, lp[4] = {-l2, -l2, -l, -4 - l};
  bool ok = !s && values_are(f.out[0], loss, 1) && f.out[0]->shape.rank == 0 &&
            values_are(f.out[1], lp, 4);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
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
    WM_CASE(dropout_training_needs_ratio_zero),
    WM_CASE(nllloss_rejects_out_of_range_target),
    WM_CASE(sce_mean_with_ignore_index_and_log_prob),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
