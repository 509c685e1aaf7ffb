// Tests of RNN, GRU and LSTM: kernels against hand-computed values and
// against values onnxruntime 1.32 gives for the same inputs (directions,
// layouts, sequence_lens, peepholes, clip, linear_before_reset), the
// activation parameters, static shape rules, costs, and errors on hostile
// attributes, shapes and sequence lengths.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "op_fixture.h"
#include "wm_test.h"

// Deterministic inputs: v[k] = 0.5 * sin(0.7 * k + seed), the same
// numbers the onnxruntime reference values were computed from.
static void fill(double *v, size_t n, double seed) {
  for (size_t k = 0; k < n; k++) {
    v[k] = 0.5 * sin(0.7 * (double)k + seed);
  }
}

// Adds a float initializer of shape |dims| filled with |seed|'s numbers.
static wm_status_t add_filled(wm_op_fixture_t *f, const char *name,
                              int32_t rank, const int64_t *dims, double seed) {
  double v[64];
  size_t n = 1;
  for (int32_t i = 0; i < rank; i++) {
    n *= (size_t)dims[i];
  }
  WM_ASSERT(n <= 64);
  fill(v, n, seed);
  return wm_op_fixture_add_const(f, name, WM_DTYPE_FLOAT, rank, dims, v);
}

// Like add_filled for a [s0, s1, s2] tensor stored transposed to
// [s1, s0, s2] (the batch-major layout of the same numbers).
static wm_status_t add_filled_swapped(wm_op_fixture_t *f, const char *name,
                                      const int64_t *dims, double seed) {
  double v[64], t[64];
  size_t s0 = (size_t)dims[0], s1 = (size_t)dims[1], s2 = (size_t)dims[2];
  WM_ASSERT(s0 * s1 * s2 <= 64);
  fill(v, s0 * s1 * s2, seed);
  for (size_t a = 0; a < s0; a++) {
    for (size_t b = 0; b < s1; b++) {
      for (size_t c = 0; c < s2; c++) {
        t[(b * s0 + a) * s2 + c] = v[(a * s1 + b) * s2 + c];
      }
    }
  }
  int64_t sw[3] = {dims[1], dims[0], dims[2]};
  return wm_op_fixture_add_const(f, name, WM_DTYPE_FLOAT, 3, sw, t);
}

static wm_status_t attr_floats(wm_op_fixture_t *f, const char *name,
                               const float *values, size_t n) {
  return wm_graph_add_attr_floats(f->graph, f->node, name, values, n);
}

// A one-step, five-entry RNN whose pre-activation is X itself (W = 1,
// R = 0, no bias), for checking activation formulas.
static wm_status_t add_identity_rnn(wm_op_fixture_t *f, const double *x) {
  int64_t dx[3] = {1, 5, 1}, dw[3] = {1, 1, 1};
  static const double one[1] = {1}, zero[1] = {0};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "x", WM_DTYPE_FLOAT, 3, dx, x));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "w", WM_DTYPE_FLOAT, 3, dw, one));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "r", WM_DTYPE_FLOAT, 3, dw, zero));
  const char *in[3] = {"x", "w", "r"};
  return wm_op_fixture_add_node(f, "RNN", in, 3, 2);
}

// ------------------------------------------------------------------- RNN

WM_TEST(rnn_matches_hand_computed_in_each_float_dtype) {
  // bfloat16 needs opset 22.
  static const wm_dtype_t dtypes[4] = {WM_DTYPE_FLOAT, WM_DTYPE_DOUBLE,
                                       WM_DTYPE_FLOAT16, WM_DTYPE_BFLOAT16};
  for (int k = 0; k < 4; k++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, k == 3 ? 22 : 14));
    int64_t dx[3] = {2, 1, 1}, dw[3] = {1, 1, 1}, db[2] = {1, 2};
    static const double x[2] = {1, 2}, half[1] = {0.5}, b[2] = {0.1, 0.2};
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", dtypes[k], 3, dx, x));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "w", dtypes[k], 3, dw, half));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "r", dtypes[k], 3, dw, half));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "b", dtypes[k], 2, db, b));
    const char *in[4] = {"x", "w", "r", "b"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "RNN", in, 4, 2));
    wm_status_t s = wm_op_fixture_run(&f);
    // The half types round the inputs: 0.1 and 0.2 are not exact.
    double tol = k < 2 ? WM_OP_FIXTURE_TOL : (k == 2 ? 2e-3 : 1e-2);
    double h1 = tanh(0.5 + 0.3), h2 = tanh(1.0 + 0.5 * h1 + 0.3);
    double want_y[2] = {h1, h2}, want_h[1] = {h2};
    int64_t ys[4] = {2, 1, 1, 1}, hs[3] = {1, 1, 1};
    bool ok = !s && wm_op_fixture_shape_is(f.out[0], 4, ys) &&
              wm_op_fixture_shape_is(f.out[1], 3, hs) &&
              wm_op_fixture_values_near(f.out[0], want_y, 2, tol) &&
              wm_op_fixture_values_near(f.out[1], want_h, 1, tol) &&
              f.out[0]->dtype == dtypes[k];
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(rnn_each_activation_matches_its_formula) {
  static const double x[5] = {-2, -0.5, 0, 0.5, 2};
  static const char *names[11] = {
      "Relu",       "Tanh",        "Sigmoid",
      "Affine",     "LeakyRelu",   "ThresholdedRelu",
      "ScaledTanh", "HardSigmoid", "Elu",
      "Softsign",   "Softplus"};
  const float alpha = 0.4f, beta = 0.7f;
  for (int k = 0; k < 11; k++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 14));
    WM_CHECK_OK(add_identity_rnn(&f, x));
    WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "activations", &names[k], 1));
    WM_CHECK_OK(attr_floats(&f, "activation_alpha", &alpha, 1));
    WM_CHECK_OK(attr_floats(&f, "activation_beta", &beta, 1));
    wm_status_t s = wm_op_fixture_run(&f);
    double a = (double)alpha, b = (double)beta, want[5];
    for (int i = 0; i < 5; i++) {
      double v = x[i];
      double hs = a * v + b;
      double all[11] = {
          v > 0 ? v : 0,
          tanh(v),
          1 / (1 + exp(-v)),
          a * v + b,
          v >= 0 ? v : a * v,
          v >= a ? v : 0,
          a * tanh(b * v),
          hs < 0 ? 0 : (hs > 1 ? 1 : hs),
          v >= 0 ? v : a * (exp(v) - 1),
          v / (1 + fabs(v)),
          log(1 + exp(v)),
      };
      want[i] = all[k];
    }
    bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 5, 1e-6);
    if (!ok) {
      fprintf(stderr, "activation %s\n", names[k]);
    }
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(rnn_activation_defaults_follow_onnx_operators) {
  // Affine (1, 0), ThresholdedRelu (1, kept at x = 1) and ScaledTanh
  // (1, 1), named in any case.
  static const double x[5] = {-2, -0.5, 0, 1, 2};
  static const char *names[3] = {"affine", "THRESHOLDEDRELU", "ScaledTanh"};
  for (int k = 0; k < 3; k++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 14));
    WM_CHECK_OK(add_identity_rnn(&f, x));
    WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "activations", &names[k], 1));
    wm_status_t s = wm_op_fixture_run(&f);
    double want[5];
    for (int i = 0; i < 5; i++) {
      double v = x[i];
      want[i] = k == 0 ? v : (k == 1 ? (v >= 1 ? v : 0) : tanh(v));
    }
    bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 5, 1e-6);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(rnn_alpha_goes_to_the_next_activation_that_takes_one) {
  // Bidirectional: Sigmoid forward, LeakyRelu reverse; the one alpha
  // belongs to LeakyRelu (Sigmoid takes none).
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  int64_t dx[3] = {1, 1, 1}, dw[3] = {2, 1, 1};
  static const double x[1] = {-2}, one[2] = {1, 1}, zero[2] = {0, 0};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, x));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "w", WM_DTYPE_FLOAT, 3, dw, one));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "r", WM_DTYPE_FLOAT, 3, dw, zero));
  const char *in[3] = {"x", "w", "r"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "RNN", in, 3, 2));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "direction", "bidirectional"));
  const char *acts[2] = {"Sigmoid", "LeakyRelu"};
  WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "activations", acts, 2));
  const float alpha = 0.5f;
  WM_CHECK_OK(attr_floats(&f, "activation_alpha", &alpha, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  double want[2] = {1 / (1 + exp(2.0)), -1.0};
  bool ok = !s && wm_op_fixture_values_near(f.out[1], want, 2, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(rnn_zero_sequence_length_gives_zero_outputs) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  int64_t dx[3] = {2, 2, 1}, dw[3] = {1, 1, 1}, dh[3] = {1, 2, 1};
  static const double x[4] = {1, 2, 3, 4}, half[1] = {0.5}, h0[2] = {0.7, 0.7};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, x));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "w", WM_DTYPE_FLOAT, 3, dw, half));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "r", WM_DTYPE_FLOAT, 3, dw, half));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "lens", WM_DTYPE_INT32, 1,
                                          (const int64_t[]){2},
                                          (const int64_t[]){0, 1}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "h0", WM_DTYPE_FLOAT, 3, dh, h0));
  const char *in[6] = {"x", "w", "r", "", "lens", "h0"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "RNN", in, 6, 2));
  wm_status_t s = wm_op_fixture_run(&f);
  // Entry 1 runs one step from 0.7 on x = 2; entry 0 runs none.
  double h = tanh(0.5 * 2 + 0.5 * 0.7);
  double want_y[4] = {0, h, 0, 0}, want_h[2] = {0, h};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want_y, 4, 1e-6) &&
            wm_op_fixture_values_near(f.out[1], want_h, 2, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// ------------------------------------------------------------ GRU, LSTM

WM_TEST(gru_bidirectional_linear_before_reset_matches_onnxruntime) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  int64_t dx[3] = {3, 2, 2}, dw[3] = {2, 6, 2}, db[2] = {2, 12},
          dh[3] = {2, 2, 2};
  WM_CHECK_OK(add_filled(&f, "x", 3, dx, 0));
  WM_CHECK_OK(add_filled(&f, "w", 3, dw, 1));
  WM_CHECK_OK(add_filled(&f, "r", 3, dw, 2));
  WM_CHECK_OK(add_filled(&f, "b", 2, db, 3));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "lens", WM_DTYPE_INT32, 1,
                                          (const int64_t[]){2},
                                          (const int64_t[]){3, 1}));
  WM_CHECK_OK(add_filled(&f, "h0", 3, dh, 4));
  const char *in[6] = {"x", "w", "r", "b", "lens", "h0"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "GRU", in, 6, 2));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "hidden_size", 2));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "direction", "bidirectional"));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "linear_before_reset", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want_y[24] = {
      -0.39723989, -0.29531509, -0.32067159, 0.058585767,
      0.29380867,  0.19427556,  0.45223492,  -0.038753673,
      -0.46418053, -0.20522988, 0,           0,
      0.2950187,   0.35234791,  0,           0,
      -0.50401336, -0.23361897, 0,           0,
      0.19531485,  0.40296793,  0,           0};
  static const double want_yh[8] = {-0.50401336, -0.23361897, -0.32067159,
                                    0.058585767, 0.29380867,  0.19427556,
                                    0.45223492,  -0.038753673};
  int64_t ys[4] = {3, 2, 2, 2};
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 4, ys) &&
            wm_op_fixture_values_near(f.out[0], want_y, 24, 1e-6) &&
            wm_op_fixture_values_near(f.out[1], want_yh, 8, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(lstm_reverse_batch_major_peepholes_clip_match_onnxruntime) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  int64_t dx[3] = {3, 2, 2}, dw[3] = {1, 8, 2}, db[2] = {1, 16},
          dh[3] = {1, 2, 2}, dp[2] = {1, 6};
  WM_CHECK_OK(add_filled_swapped(&f, "x", dx, 0));
  WM_CHECK_OK(add_filled(&f, "w", 3, dw, 1));
  WM_CHECK_OK(add_filled(&f, "r", 3, dw, 2));
  WM_CHECK_OK(add_filled(&f, "b", 2, db, 3));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "lens", WM_DTYPE_INT32, 1,
                                          (const int64_t[]){2},
                                          (const int64_t[]){2, 3}));
  WM_CHECK_OK(add_filled_swapped(&f, "h0", dh, 4));
  WM_CHECK_OK(add_filled_swapped(&f, "c0", dh, 5));
  WM_CHECK_OK(add_filled(&f, "p", 2, dp, 6));
  const char *in[8] = {"x", "w", "r", "b", "lens", "h0", "c0", "p"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "LSTM", in, 8, 3));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "hidden_size", 2));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "direction", "reverse"));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "clip", 0.3f));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "layout", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want_y[12] = {0.06292741,   0.059380904, -0.018368263,
                                    0.0075660232, 0,           0,
                                    0.10868561,   0.12266146,  0.096645072,
                                    0.11254973,   0.080775678, 0.14137024};
  static const double want_yh[4] = {0.06292741, 0.059380904, 0.10868561,
                                    0.12266146};
  static const double want_yc[4] = {0.14896266, 0.14045309, 0.26117674,
                                    0.29664257};
  int64_t ys[4] = {2, 3, 1, 2}, hs[3] = {2, 1, 2};
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 4, ys) &&
            wm_op_fixture_shape_is(f.out[2], 3, hs) &&
            wm_op_fixture_values_near(f.out[0], want_y, 12, 1e-6) &&
            wm_op_fixture_values_near(f.out[1], want_yh, 4, 1e-6) &&
            wm_op_fixture_values_near(f.out[2], want_yc, 4, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(lstm_input_forget_couples_forget_to_input_gate) {
  // One unit, one step, X = 0, W = R = 0, bias puts input pre-activation
  // at 1 and the others at 0: i = s(1), f = 1 - i (not s(5), the forget
  // bias), c~ = tanh(0) = 0, so C = (1 - i) * c0.
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  int64_t dx[3] = {1, 1, 1}, dw[3] = {1, 4, 1}, db[2] = {1, 8},
          dh[3] = {1, 1, 1};
  static const double zero[4] = {0, 0, 0, 0}, c0[1] = {2};
  static const double b[8] = {1, 0, 5, 0, 0, 0, 0, 0};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, zero));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "w", WM_DTYPE_FLOAT, 3, dw, zero));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "r", WM_DTYPE_FLOAT, 3, dw, zero));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "b", WM_DTYPE_FLOAT, 2, db, b));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "c0", WM_DTYPE_FLOAT, 3, dh, c0));
  const char *in[7] = {"x", "w", "r", "b", "", "", "c0"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "LSTM", in, 7, 3));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "input_forget", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  double i = 1 / (1 + exp(-1.0)), c = (1 - i) * 2;
  double want_c[1] = {c}, want_h[1] = {0.5 * tanh(c)};
  bool ok = !s && wm_op_fixture_values_near(f.out[2], want_c, 1, 1e-6) &&
            wm_op_fixture_values_near(f.out[1], want_h, 1, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// ------------------------------------------------------- shapes, costs

WM_TEST(lstm_static_shape_keeps_unknown_dims) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  int64_t dx[3] = {-1, -1, 3}, dw[3] = {2, 20, 3}, dr[3] = {2, 20, 5};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 3, dw));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "r", WM_DTYPE_FLOAT, 3, dr));
  const char *in[3] = {"x", "w", "r"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "LSTM", in, 3, 3));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "direction", "bidirectional"));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  int32_t id = wm_graph_find_value(f.graph, "y2");
  wm_type_t tc = id >= 0 ? f.graph->values[id].type : wm_type_unknown();
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_FLOAT);
  WM_CHECK_INT_EQ(t.shape.rank, 4);
  WM_CHECK(t.shape.dims[0] < 0);
  WM_CHECK_INT_EQ(t.shape.dims[1], 2);
  WM_CHECK(t.shape.dims[2] < 0);
  WM_CHECK_INT_EQ(t.shape.dims[3], 5);
  WM_CHECK_INT_EQ(tc.shape.rank, 3);
  WM_CHECK_INT_EQ(tc.shape.dims[0], 2);
  WM_CHECK(tc.shape.dims[1] < 0);
  WM_CHECK_INT_EQ(tc.shape.dims[2], 5);
}

WM_TEST(lstm_cost_counts_gate_macs_and_activations) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  int64_t dx[3] = {5, 2, 3}, dw[3] = {1, 16, 3}, dr[3] = {1, 16, 4};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 3, dw));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "r", WM_DTYPE_FLOAT, 3, dr));
  const char *in[3] = {"x", "w", "r"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "LSTM", in, 3, 2));
  wm_type_t t;
  wm_op_cost_t cost;
  wm_status_t s = wm_op_fixture_cost(&f, &t, &cost);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  // seq * batch * 4 gates * H * (I + H) = 5 * 2 * 4 * 4 * 7.
  WM_CHECK_DBL_NEAR(cost.macs, 1120, 0);
  // Three sigmoids and two tanh per unit and step: 5 * 2 * 4 * 5.
  WM_CHECK_DBL_NEAR(cost.transcendentals, 200, 0);
  // 2 * MACs plus f*c + i*c~ and o*h(c) (4 per unit and step).
  WM_CHECK_DBL_NEAR(cost.flops, 2 * 1120 + 40 * 4, 0);
}

WM_TEST(gru_cost_counts_piecewise_activations_as_flops) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  int64_t dx[3] = {1, 1, 2}, dw[3] = {2, 9, 2}, dr[3] = {2, 9, 3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 3, dw));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "r", WM_DTYPE_FLOAT, 3, dr));
  const char *in[3] = {"x", "w", "r"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "GRU", in, 3, 2));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "direction", "bidirectional"));
  const char *acts[4] = {"HardSigmoid", "Relu", "Sigmoid", "Tanh"};
  WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "activations", acts, 4));
  wm_type_t t;
  wm_op_cost_t cost;
  wm_status_t s = wm_op_fixture_cost(&f, &t, &cost);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  // 2 directions * 3 units * 3 gates * (2 + 3).
  WM_CHECK_DBL_NEAR(cost.macs, 90, 0);
  // Only the reverse direction's sigmoid (z, r) and tanh: 3 units * 3.
  WM_CHECK_DBL_NEAR(cost.transcendentals, 9, 0);
  // 2 * MACs + 5 per unit both ways + 3 piecewise evaluations forward.
  WM_CHECK_DBL_NEAR(cost.flops, 180 + 2 * 3 * 5 + 3 * 3, 0);
}

// ---------------------------------------------------------------- errors

// Builds |op| (hidden 2, input 3, batch 2, seq 4, |gates| gate blocks)
// whose inputs are typed graph inputs.
static wm_status_t add_typed_rnn(wm_op_fixture_t *f, const char *op,
                                 int64_t gates) {
  int64_t dx[3] = {4, 2, 3}, dw[3] = {1, 2 * gates, 3},
          dr[3] = {1, 2 * gates, 2};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_input(f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_input(f, "w", WM_DTYPE_FLOAT, 3, dw));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_input(f, "r", WM_DTYPE_FLOAT, 3, dr));
  const char *in[3] = {"x", "w", "r"};
  return wm_op_fixture_add_node(f, op, in, 3, 2);
}

static wm_status_t check_rnn(wm_op_fixture_t *f) {
  wm_status_t s = wm_ops_check_graph(f->graph);
  wm_op_fixture_deinit(f);
  return s;
}

WM_TEST(rnn_rejects_unknown_activation) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  WM_CHECK_OK(add_typed_rnn(&f, "GRU", 3));
  const char *acts[2] = {"Sigmoid", "Swish"};
  WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "activations", acts, 2));
  WM_CHECK_ERR(check_rnn(&f), INVALID_ARGUMENT,
               "attribute activations[1] is \"Swish\", want Relu");
}

WM_TEST(rnn_rejects_wrong_activation_count) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  WM_CHECK_OK(add_typed_rnn(&f, "LSTM", 4));
  const char *acts[2] = {"Sigmoid", "Tanh"};
  WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "activations", acts, 2));
  WM_CHECK_ERR(check_rnn(&f), INVALID_ARGUMENT,
               "attribute activations has 2 values, want 3");
}

WM_TEST(rnn_rejects_bad_direction_and_layout) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  WM_CHECK_OK(add_typed_rnn(&f, "RNN", 1));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "direction", "sideways"));
  WM_CHECK_ERR(check_rnn(&f), INVALID_ARGUMENT,
               "attribute direction is \"sideways\", want forward, reverse "
               "or bidirectional");
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  WM_CHECK_OK(add_typed_rnn(&f, "RNN", 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "layout", 2));
  WM_CHECK_ERR(check_rnn(&f), INVALID_ARGUMENT,
               "attribute layout is 2, want 0 or 1");
  WM_CHECK_OK(wm_op_fixture_init(&f, 7));
  WM_CHECK_OK(add_typed_rnn(&f, "RNN", 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "layout", 1));
  WM_CHECK_ERR(check_rnn(&f), INVALID_ARGUMENT,
               "attribute layout needs opset 14, the node has opset 7");
}

WM_TEST(rnn_rejects_bad_clip_and_attribute_kind) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  WM_CHECK_OK(add_typed_rnn(&f, "RNN", 1));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "clip", -1.0f));
  WM_CHECK_ERR(check_rnn(&f), INVALID_ARGUMENT,
               "attribute clip is -1, want a positive threshold");
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  WM_CHECK_OK(add_typed_rnn(&f, "RNN", 1));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "hidden_size", 2.0f));
  WM_CHECK_ERR(check_rnn(&f), INVALID_ARGUMENT,
               "attribute hidden_size is float, want int");
}

WM_TEST(rnn_rejects_weights_that_disagree_with_hidden_size) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  WM_CHECK_OK(add_typed_rnn(&f, "GRU", 3));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "hidden_size", 3));
  WM_CHECK_ERR(check_rnn(&f), INVALID_ARGUMENT,
               "input 1 (W) has shape [1,6,3], want [1,9,3]");
  // W with 7 rows is no whole number of GRU gates.
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  int64_t dx[3] = {4, 2, 3}, dw[3] = {1, 7, 3}, dr[3] = {1, 6, 2};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 3, dw));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "r", WM_DTYPE_FLOAT, 3, dr));
  const char *in[3] = {"x", "w", "r"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "GRU", in, 3, 2));
  WM_CHECK_ERR(check_rnn(&f), INVALID_ARGUMENT,
               "input 1 (W) has shape [1,7,3], want [1,6,3]");
}

WM_TEST(rnn_rejects_direction_count_mismatch_and_bad_state_shape) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  WM_CHECK_OK(add_typed_rnn(&f, "RNN", 1));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "direction", "bidirectional"));
  WM_CHECK_ERR(check_rnn(&f), INVALID_ARGUMENT,
               "input 1 (W) has shape [1,2,3], want [2,2,3]");
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  int64_t dx[3] = {4, 2, 3}, dw[3] = {1, 2, 3}, dr[3] = {1, 2, 2},
          dh[3] = {1, 3, 2};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 3, dw));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "r", WM_DTYPE_FLOAT, 3, dr));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "h0", WM_DTYPE_FLOAT, 3, dh));
  const char *in[6] = {"x", "w", "r", "", "", "h0"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "RNN", in, 6, 2));
  WM_CHECK_ERR(check_rnn(&f), INVALID_ARGUMENT,
               "input 5 (initial_h) has shape [1,3,2], want [1,2,2]");
}

WM_TEST(rnn_rejects_overflowing_hidden_size) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  int64_t dx[3] = {4, 2, 3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  int64_t dw[3] = {1, -1, 3}, dr[3] = {1, -1, -1};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 3, dw));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "r", WM_DTYPE_FLOAT, 3, dr));
  const char *in[3] = {"x", "w", "r"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "LSTM", in, 3, 2));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "hidden_size", INT64_C(1) << 62));
  WM_CHECK_ERR(check_rnn(&f), INVALID_ARGUMENT,
               "hidden size 4611686018427387904 is too large");
}

WM_TEST(rnn_rejects_out_of_range_sequence_lens_at_run_time) {
  static const int64_t bad[2] = {5, -1};
  for (int k = 0; k < 2; k++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 14));
    int64_t dx[3] = {4, 1, 1}, dw[3] = {1, 1, 1};
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, NULL));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "w", WM_DTYPE_FLOAT, 3, dw, NULL));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "r", WM_DTYPE_FLOAT, 3, dw, NULL));
    WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "lens", WM_DTYPE_INT32, 1,
                                            (const int64_t[]){1}, &bad[k]));
    const char *in[5] = {"x", "w", "r", "", "lens"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "RNN", in, 5, 2));
    wm_status_t s = wm_op_fixture_run(&f);
    wm_op_fixture_deinit(&f);
    WM_CHECK_ERR(s, OUT_OF_RANGE,
                 k == 0 ? "sequence_lens[0] is 5, want 0 to 4"
                        : "sequence_lens[0] is -1, want 0 to 4");
  }
}

WM_TEST(rnn_rejects_missing_weights_and_float_sequence_lens) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  int64_t dx[3] = {4, 2, 3}, dr[3] = {1, 2, 2}, dl[1] = {2};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "r", WM_DTYPE_FLOAT, 3, dr));
  const char *in[3] = {"x", "", "r"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "RNN", in, 3, 2));
  WM_CHECK_ERR(check_rnn(&f), INVALID_ARGUMENT, "required input 1 is omitted");
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  int64_t dw[3] = {1, 2, 3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 3, dw));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "r", WM_DTYPE_FLOAT, 3, dr));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "lens", WM_DTYPE_FLOAT, 1, dl));
  const char *in2[5] = {"x", "w", "r", "", "lens"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "RNN", in2, 5, 2));
  WM_CHECK_ERR(check_rnn(&f), INVALID_ARGUMENT,
               "input 4 (sequence_lens) has dtype float, want int32");
}

// The resolve slot: a bidirectional GRU's activations, given once with one
// alpha, repeat for the second direction with every default explicit.
WM_TEST(gru_resolves_activations_for_every_direction) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  int64_t dx[3] = {2, 1, 3}, dw[3] = {2, 12, 3}, dr[3] = {2, 12, 4};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 3, dw));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "r", WM_DTYPE_FLOAT, 3, dr));
  const char *in[3] = {"x", "w", "r"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "GRU", in, 3, 1));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "direction", "bidirectional"));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "hidden_size", 4));
  static const char *const acts[2] = {"leakyrelu", "Tanh"};
  WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "activations", acts, 2));
  wm_op_params_t p;
  wm_status_t s = wm_op_fixture_resolve(&f, &p);
  const wm_op_param_t *names = s ? NULL : wm_op_param_find(&p, "activations");
  const wm_op_param_t *alpha =
      s ? NULL : wm_op_param_find(&p, "activation_alpha");
  const wm_op_param_t *dir = s ? NULL : wm_op_param_find(&p, "direction");
  bool ok = names && names->count == 4 && alpha && alpha->count == 4 && dir &&
            strcmp(dir->s, "bidirectional") == 0 &&
            strcmp(p.strings[names->at + 2], "LeakyRelu") == 0 &&
            strcmp(p.strings[names->at + 3], "Tanh") == 0 &&
            p.floats[alpha->at + 2] == 0.01f &&
            wm_op_fixture_param_int_is(&p, "linear_before_reset", 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

static const wm_test_case_t cases[] = {
    WM_CASE(gru_resolves_activations_for_every_direction),
    WM_CASE(rnn_matches_hand_computed_in_each_float_dtype),
    WM_CASE(rnn_each_activation_matches_its_formula),
    WM_CASE(rnn_activation_defaults_follow_onnx_operators),
    WM_CASE(rnn_alpha_goes_to_the_next_activation_that_takes_one),
    WM_CASE(rnn_zero_sequence_length_gives_zero_outputs),
    WM_CASE(gru_bidirectional_linear_before_reset_matches_onnxruntime),
    WM_CASE(lstm_reverse_batch_major_peepholes_clip_match_onnxruntime),
    WM_CASE(lstm_input_forget_couples_forget_to_input_gate),
    WM_CASE(lstm_static_shape_keeps_unknown_dims),
    WM_CASE(lstm_cost_counts_gate_macs_and_activations),
    WM_CASE(gru_cost_counts_piecewise_activations_as_flops),
    WM_CASE(rnn_rejects_unknown_activation),
    WM_CASE(rnn_rejects_wrong_activation_count),
    WM_CASE(rnn_rejects_bad_direction_and_layout),
    WM_CASE(rnn_rejects_bad_clip_and_attribute_kind),
    WM_CASE(rnn_rejects_weights_that_disagree_with_hidden_size),
    WM_CASE(rnn_rejects_direction_count_mismatch_and_bad_state_shape),
    WM_CASE(rnn_rejects_overflowing_hidden_size),
    WM_CASE(rnn_rejects_out_of_range_sequence_lens_at_run_time),
    WM_CASE(rnn_rejects_missing_weights_and_float_sequence_lens),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
