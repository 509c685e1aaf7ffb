// Tests of the training family (ai.onnx.preview.training): the update
// rules of Adagrad, Adam and Momentum against values from ONNX's
// reference implementation, several tensors at once, and the checks of
// arity, attributes and shapes.
#include <stdlib.h>

#include "op_fixture.h"
#include "wm_test.h"

#define DOMAIN "ai.onnx.preview.training"
#define MAX_OUT 8

static const double x_vals[3] = {1.5, -2.0, 0.25};
static const double g_vals[3] = {0.5, 1.0, -3.0};
static const double v_vals[3] = {0.1, 0.2, 0.3};
static const double h_vals[3] = {1.0, 2.0, 0.5};

// Starts a graph importing the training domain with R = |r| and T = |t|.
static wm_status_t optim_init(wm_op_fixture_t *f, wm_dtype_t dtype, double r,
                              int64_t t) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 17));
  WM_RETURN_IF_ERROR(wm_graph_set_opset(f->graph, DOMAIN, 1));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "R", dtype, 0, NULL, &r));
  return wm_op_fixture_add_const_i64(f, "T", WM_DTYPE_INT64, 0, NULL, &t);
}

// Adds the node |op| of the training domain with outputs y0, y1, ...
static wm_status_t optim_node(wm_op_fixture_t *f, const char *op,
                              const char *const *inputs, int32_t n_in,
                              int32_t n_out) {
  static const char *const outs[MAX_OUT] = {"y0", "y1", "y2", "y3",
                                            "y4", "y5", "y6", "y7"};
  WM_ASSERT(n_out <= MAX_OUT);
  return wm_graph_add_node(f->graph, op, DOMAIN, "n", inputs, n_in, outs, n_out,
                           &f->node);
}

// Runs the node keeping every output in |out| (the caller destroys them).
static wm_status_t run_all(wm_op_fixture_t *f, wm_tensor_t **out) {
  wm_op_ctx_t ctx;
  WM_RETURN_IF_ERROR(wm_op_ctx_init(&ctx, f->graph, (size_t)f->node));
  const wm_op_def_t *def;
  wm_status_t s = wm_op_find_def(&ctx, &def);
  if (!s) {
    s = wm_op_execute(def, &ctx);
  }
  for (int32_t i = 0; i < ctx.n_out; i++) {
    if (i < MAX_OUT) {
      out[i] = ctx.out[i];
    } else {
      wm_tensor_destroy(ctx.out[i]);
    }
  }
  wm_op_ctx_deinit(&ctx);
  return s;
}

// Adds 1-D constants |name| of |dtype| holding |n| values.
static wm_status_t add_vec(wm_op_fixture_t *f, const char *name,
                           wm_dtype_t dtype, size_t n, const double *v) {
  int64_t d[1] = {(int64_t)n};
  return wm_op_fixture_add_const(f, name, dtype, 1, d, v);
}

WM_TEST(adam_applies_bias_correction_and_post_norm_in_double) {
  wm_op_fixture_t f;
  WM_CHECK_OK(optim_init(&f, WM_DTYPE_DOUBLE, 0.01, 3));
  WM_CHECK_OK(add_vec(&f, "X", WM_DTYPE_DOUBLE, 3, x_vals));
  WM_CHECK_OK(add_vec(&f, "G", WM_DTYPE_DOUBLE, 3, g_vals));
  WM_CHECK_OK(add_vec(&f, "V", WM_DTYPE_DOUBLE, 3, v_vals));
  WM_CHECK_OK(add_vec(&f, "H", WM_DTYPE_DOUBLE, 3, h_vals));
  const char *in[6] = {"R", "T", "X", "G", "V", "H"};
  WM_CHECK_OK(optim_node(&f, "Adam", in, 6, 3));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "norm_coefficient", 0.1f));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "norm_coefficient_post", 0.05f));
  wm_status_t s = wm_op_fixture_run(&f);
  // From onnx.reference's _apply_adam with alpha 0.9, beta 0.999 and
  // epsilon 1e-6 (the defaults).
  static const double want_x[3] = {1.42470245, -1.90035294, 0.23757402};
  static const double want_v[3] = {0.155, 0.26, -0.0275};
  static const double want_h[3] = {0.9994225, 1.99864, 0.50835063};
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_DOUBLE &&
            wm_op_fixture_values_near(f.out[0], want_x, 3, 1e-6) &&
            wm_op_fixture_values_near(f.out[1], want_v, 3, 1e-6) &&
            wm_op_fixture_values_near(f.out[2], want_h, 3, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(adagrad_decays_the_rate_with_the_update_count) {
  wm_op_fixture_t f;
  WM_CHECK_OK(optim_init(&f, WM_DTYPE_FLOAT, 0.1, 2));
  WM_CHECK_OK(add_vec(&f, "X", WM_DTYPE_FLOAT, 3, x_vals));
  WM_CHECK_OK(add_vec(&f, "G", WM_DTYPE_FLOAT, 3, g_vals));
  WM_CHECK_OK(add_vec(&f, "H", WM_DTYPE_FLOAT, 3, h_vals));
  const char *in[5] = {"R", "T", "X", "G", "H"};
  WM_CHECK_OK(optim_node(&f, "Adagrad", in, 5, 2));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "norm_coefficient", 0.01f));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "decay_factor", 0.5f));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want_x[3] = {1.47710751, -2.02847873, 0.29866427};
  static const double want_h[3] = {1.265225, 2.9604, 9.48500625};
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_FLOAT &&
            wm_op_fixture_values_near(f.out[0], want_x, 3, 1e-5) &&
            wm_op_fixture_values_near(f.out[1], want_h, 3, 1e-5);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(momentum_scales_gradient_by_beta_after_first_step_and_nesterov) {
  static const struct {
    int64_t t;
    const char *mode;
    double want_x[3];
    double want_v[3];
  } cases[] = {
      {0, "standard", {1.4395, -2.116, 0.52275}, {0.605, 1.16, -2.7275}},
      {5, "standard", {1.46525, -2.067, 0.372875}, {0.3475, 0.67, -1.22875}},
      {5, "nesterov", {1.417225, -2.1583, 0.6603375}, {0.3475, 0.67, -1.22875}},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(optim_init(&f, WM_DTYPE_FLOAT, 0.1, cases[c].t));
    WM_CHECK_OK(add_vec(&f, "X", WM_DTYPE_FLOAT, 3, x_vals));
    WM_CHECK_OK(add_vec(&f, "G", WM_DTYPE_FLOAT, 3, g_vals));
    WM_CHECK_OK(add_vec(&f, "V", WM_DTYPE_FLOAT, 3, v_vals));
    const char *in[5] = {"R", "T", "X", "G", "V"};
    WM_CHECK_OK(optim_node(&f, "Momentum", in, 5, 2));
    WM_CHECK_OK(wm_op_fixture_attr_float(&f, "alpha", 0.9f));
    WM_CHECK_OK(wm_op_fixture_attr_float(&f, "beta", 0.5f));
    WM_CHECK_OK(wm_op_fixture_attr_float(&f, "norm_coefficient", 0.01f));
    WM_CHECK_OK(wm_op_fixture_attr_string(&f, "mode", cases[c].mode));
    wm_status_t s = wm_op_fixture_run(&f);
    bool ok = !s &&
              wm_op_fixture_values_near(f.out[0], cases[c].want_x, 3, 1e-5) &&
              wm_op_fixture_values_near(f.out[1], cases[c].want_v, 3, 1e-5);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(adagrad_updates_several_tensors_in_output_order) {
  // Two tensors: outputs are X1', X2', H1', H2'; the second tensor is
  // the first two elements of the vectors above.
  wm_op_fixture_t f;
  WM_CHECK_OK(optim_init(&f, WM_DTYPE_FLOAT, 0.1, 2));
  WM_CHECK_OK(add_vec(&f, "X1", WM_DTYPE_FLOAT, 1, x_vals + 2));
  WM_CHECK_OK(add_vec(&f, "X2", WM_DTYPE_FLOAT, 2, x_vals));
  WM_CHECK_OK(add_vec(&f, "G1", WM_DTYPE_FLOAT, 1, g_vals + 2));
  WM_CHECK_OK(add_vec(&f, "G2", WM_DTYPE_FLOAT, 2, g_vals));
  WM_CHECK_OK(add_vec(&f, "H1", WM_DTYPE_FLOAT, 1, h_vals + 2));
  WM_CHECK_OK(add_vec(&f, "H2", WM_DTYPE_FLOAT, 2, h_vals));
  const char *in[8] = {"R", "T", "X1", "X2", "G1", "G2", "H1", "H2"};
  WM_CHECK_OK(optim_node(&f, "Adagrad", in, 8, 4));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "norm_coefficient", 0.01f));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "decay_factor", 0.5f));
  wm_tensor_t *out[MAX_OUT] = {NULL};
  wm_status_t s = run_all(&f, out);
  static const double x1[1] = {0.29866427}, x2[2] = {1.47710751, -2.02847873};
  static const double h1[1] = {9.48500625}, h2[2] = {1.265225, 2.9604};
  bool ok = !s && wm_op_fixture_values_near(out[0], x1, 1, 1e-5) &&
            wm_op_fixture_values_near(out[1], x2, 2, 1e-5) &&
            wm_op_fixture_values_near(out[2], h1, 1, 1e-5) &&
            wm_op_fixture_values_near(out[3], h2, 2, 1e-5);
  for (int i = 0; i < MAX_OUT; i++) {
    wm_tensor_destroy(out[i]);
  }
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// Runs |op| on inputs named from R, T, X (3 floats) and X2 (2 floats)
// with the attributes Momentum needs plus |mode| (NULL: none).
static wm_status_t run_bad(const char *op, const char *const *in, int32_t n_in,
                           int32_t n_out, const char *mode) {
  wm_op_fixture_t f;
  wm_status_t s = optim_init(&f, WM_DTYPE_FLOAT, 0.1, 0);
  if (!s) {
    s = add_vec(&f, "X", WM_DTYPE_FLOAT, 3, x_vals);
  }
  if (!s) {
    s = add_vec(&f, "X2", WM_DTYPE_FLOAT, 2, x_vals);
  }
  if (!s) {
    s = optim_node(&f, op, in, n_in, n_out);
  }
  if (!s) {
    s = wm_op_fixture_attr_float(&f, "alpha", 0.9f);
  }
  if (!s) {
    s = wm_op_fixture_attr_float(&f, "beta", 0.5f);
  }
  if (!s) {
    s = wm_op_fixture_attr_float(&f, "norm_coefficient", 0.0f);
  }
  if (!s && mode) {
    s = wm_op_fixture_attr_string(&f, "mode", mode);
  }
  wm_tensor_t *out[MAX_OUT] = {NULL};
  if (!s) {
    s = run_all(&f, out);
  }
  for (int i = 0; i < MAX_OUT; i++) {
    wm_tensor_destroy(out[i]);
  }
  wm_op_fixture_deinit(&f);
  return s;
}

WM_TEST(optimizers_reject_bad_arity_shapes_scalars_and_mode) {
  // Adagrad with 7 inputs: 5 tensors do not split into X, G, H groups.
  const char *in7[7] = {"R", "T", "X", "X", "X", "X", "X"};
  WM_CHECK_ERR(run_bad("Adagrad", in7, 7, 2, NULL), INVALID_ARGUMENT,
               "has 7 inputs, want 2 + 3 * k");
  // A gradient shaped unlike its tensor.
  const char *bad_g[5] = {"R", "T", "X", "X2", "X"};
  WM_CHECK_ERR(run_bad("Adagrad", bad_g, 5, 2, NULL), INVALID_ARGUMENT,
               "input 3 has shape [2]");
  // R with two elements; T of the wrong type.
  const char *bad_r[5] = {"X2", "T", "X", "X", "X"};
  WM_CHECK_ERR(run_bad("Adagrad", bad_r, 5, 2, NULL), INVALID_ARGUMENT,
               "input 0 (R) has shape [2], want a scalar");
  const char *bad_t[5] = {"R", "R", "X", "X", "X"};
  WM_CHECK_ERR(run_bad("Adagrad", bad_t, 5, 2, NULL), INVALID_ARGUMENT,
               "input 1 (T) is float, want int64");
  // Momentum without mode, then with an unknown one.
  const char *in5[5] = {"R", "T", "X", "X", "X"};
  WM_CHECK_ERR(run_bad("Momentum", in5, 5, 2, NULL), INVALID_ARGUMENT,
               "attribute \"mode\" is required");
  WM_CHECK_ERR(run_bad("Momentum", in5, 5, 2, "heavy_ball"), INVALID_ARGUMENT,
               "\"heavy_ball\", want \"standard\"");
  // Adam with too many outputs for one tensor.
  const char *in6[6] = {"R", "T", "X", "X", "X", "X"};
  WM_CHECK_ERR(run_bad("Adam", in6, 6, 4, NULL), INVALID_ARGUMENT,
               "has 4 outputs, want at most 3");
  // An omitted state input.
  const char *omit[5] = {"R", "T", "X", "", "X"};
  WM_CHECK_ERR(run_bad("Adagrad", omit, 5, 2, NULL), INVALID_ARGUMENT,
               "input 3 is omitted");
}

WM_TEST(optimizer_outputs_take_shapes_statically) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 17));
  WM_CHECK_OK(wm_graph_set_opset(f.graph, DOMAIN, 1));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "R", WM_DTYPE_FLOAT, 0, NULL));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "T", WM_DTYPE_INT64, 0, NULL));
  int64_t d[2] = {-1, 4};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "X", WM_DTYPE_FLOAT, 2, d));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "G", WM_DTYPE_FLOAT, 2, d));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "V", WM_DTYPE_FLOAT, 2, d));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "H", WM_DTYPE_FLOAT, 2, d));
  const char *in[6] = {"R", "T", "X", "G", "V", "H"};
  WM_CHECK_OK(optim_node(&f, "Adam", in, 6, 3));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  int32_t h = wm_graph_find_value(f.graph, "y2");
  wm_type_t th = h >= 0 ? f.graph->values[h].type : wm_type_unknown();
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_FLOAT);
  WM_CHECK_INT_EQ(t.shape.rank, 2);
  WM_CHECK_INT_EQ(t.shape.dims[1], 4);
  WM_CHECK_INT_EQ(th.shape.rank, 2);
  WM_CHECK_INT_EQ(th.shape.dims[1], 4);
}

static const wm_test_case_t cases[] = {
    WM_CASE(adam_applies_bias_correction_and_post_norm_in_double),
    WM_CASE(adagrad_decays_the_rate_with_the_update_count),
    WM_CASE(momentum_scales_gradient_by_beta_after_first_step_and_nesterov),
    WM_CASE(adagrad_updates_several_tensors_in_output_order),
    WM_CASE(optimizers_reject_bad_arity_shapes_scalars_and_mode),
    WM_CASE(optimizer_outputs_take_shapes_statically),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
