// Tests of the signal operators: DFT and STFT against a direct O(n^2)
// transform for radix-2 and Bluestein lengths, IRFFT round trips, the
// window functions, MelWeightMatrix, static shapes and the errors on bad
// axes, lengths and shapes.
#include <math.h>
#include <stdlib.h>

#include "op_fixture.h"
#include "wm_test.h"

#define PI 3.14159265358979323846

// Direct DFT of |n| complex values (interleaved re, im) from |x| into |y|;
// |sign| is -1 forward, +1 inverse (then divided by n).
static void naive_dft(const double *x, double *y, size_t n, int sign) {
  for (size_t k = 0; k < n; k++) {
    double re = 0.0, im = 0.0;
    for (size_t j = 0; j < n; j++) {
      double a = sign * 2.0 * PI * (double)((k * j) % n) / (double)n;
      re += x[2 * j] * cos(a) - x[2 * j + 1] * sin(a);
      im += x[2 * j] * sin(a) + x[2 * j + 1] * cos(a);
    }
    y[2 * k] = sign > 0 ? re / (double)n : re;
    y[2 * k + 1] = sign > 0 ? im / (double)n : im;
  }
}

// A deterministic test signal value.
static double signal_at(size_t i) {
  return sin(0.37 * (double)i) + 0.25 * cos(1.3 * (double)i * (double)i);
}

// Runs a complex DFT of length n (forward and inverse) in double and
// compares it with the direct transform.
static bool dft_matches(size_t n, bool inverse) {
  double *x = malloc(2 * n * sizeof(double));
  double *want = malloc(2 * n * sizeof(double));
  bool ok = x && want;
  for (size_t i = 0; ok && i < 2 * n; i++) {
    x[i] = signal_at(i);
  }
  if (ok) {
    naive_dft(x, want, n, inverse ? 1 : -1);
  }
  wm_op_fixture_t f;
  ok = ok && !wm_op_fixture_init(&f, 17);
  if (ok) {
    int64_t dims[3] = {1, (int64_t)n, 2};
    const char *in[1] = {"x"};
    ok = !wm_op_fixture_add_const(&f, "x", WM_DTYPE_DOUBLE, 3, dims, x) &&
         !wm_op_fixture_add_node(&f, "DFT", in, 1, 1) &&
         !wm_op_fixture_attr_int(&f, "inverse", inverse);
    wm_status_t s = ok ? wm_op_fixture_run(&f) : NULL;
    ok = ok && !s && wm_op_fixture_shape_is(f.out[0], 3, dims) &&
         wm_op_fixture_values_near(f.out[0], want, 2 * n,
                                   1e-9 * (double)n + 1e-9);
    if (s) {
      fprintf(stderr, "n=%zu: %s\n", n, wm_status_message(s));
      wm_status_free(s);
    }
    wm_op_fixture_deinit(&f);
  }
  if (!ok) {
    fprintf(stderr, "DFT of length %zu (inverse %d) differs\n", n, inverse);
  }
  free(x);
  free(want);
  return ok;
}

WM_TEST(dft_matches_direct_transform_for_radix2_and_other_lengths) {
  static const size_t lengths[] = {1,  2,  3,  4,  5,  6,  7,   8,   9,
                                   12, 16, 17, 30, 64, 97, 128, 243, 1000};
  for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
    WM_CHECK(dft_matches(lengths[i], false));
    WM_CHECK(dft_matches(lengths[i], true));
  }
}

WM_TEST(dft_onesided_pads_and_plain_dft_truncates) {
  // Real input [2, 5, 1] along axis 1, padded to 8 then halved: 5 bins.
  double x[10], want[20], full[16], buf[16];
  for (size_t i = 0; i < 10; i++) {
    x[i] = signal_at(i);
  }
  for (size_t b = 0; b < 2; b++) {
    for (size_t k = 0; k < 8; k++) {
      buf[2 * k] = k < 5 ? x[b * 5 + k] : 0.0;
      buf[2 * k + 1] = 0.0;
    }
    naive_dft(buf, full, 8, -1);
    for (size_t k = 0; k < 10; k++) {
      want[b * 10 + k] = full[k];
    }
  }
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 17));
  int64_t dx[3] = {2, 5, 1};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, x));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "n", 1, (const int64_t[]){8}));
  const char *in[2] = {"x", "n"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "DFT", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "onesided", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 3, (const int64_t[]){2, 5, 2}) &&
            wm_op_fixture_values_near(f.out[0], want, 20, 1e-5);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  // dft_length 3 keeps the first 3 samples.
  for (size_t b = 0; b < 2; b++) {
    for (size_t k = 0; k < 3; k++) {
      buf[2 * k] = x[b * 5 + k];
      buf[2 * k + 1] = 0.0;
    }
    naive_dft(buf, full, 3, -1);
    for (size_t k = 0; k < 6; k++) {
      want[b * 6 + k] = full[k];
    }
  }
  WM_CHECK_OK(wm_op_fixture_init(&f, 17));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, x));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "n", WM_DTYPE_INT32, 0, dx,
                                          (const int64_t[]){3}));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "DFT", in, 2, 1));
  s = wm_op_fixture_run(&f);
  ok = !s && wm_op_fixture_shape_is(f.out[0], 3, (const int64_t[]){2, 3, 2}) &&
       wm_op_fixture_values_near(f.out[0], want, 12, 1e-5);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// Checks that IRFFT (inverse, onesided) of the first n/2+1 bins of a real
// signal of length n gives the signal back; |pass_length| gives
// dft_length explicitly.
static bool irfft_round_trip(size_t n, bool pass_length) {
  double x[64], c[128], spec[128];
  for (size_t i = 0; i < n; i++) {
    x[i] = signal_at(i);
    c[2 * i] = x[i];
    c[2 * i + 1] = 0.0;
  }
  naive_dft(c, spec, n, -1);
  size_t bins = n / 2 + 1;
  wm_op_fixture_t f;
  if (wm_op_fixture_init(&f, 20)) {
    return false;
  }
  int64_t dims[3] = {1, (int64_t)bins, 2};
  const char *in[3] = {"x", pass_length ? "n" : "", "axis"};
  bool ok =
      !wm_op_fixture_add_const(&f, "x", WM_DTYPE_DOUBLE, 3, dims, spec) &&
      !wm_op_fixture_add_ints(&f, "n", 1, (const int64_t[]){(int64_t)n}) &&
      !wm_op_fixture_add_const_i64(&f, "axis", WM_DTYPE_INT64, 0, dims,
                                   (const int64_t[]){1}) &&
      !wm_op_fixture_add_node(&f, "DFT", in, 3, 1) &&
      !wm_op_fixture_attr_int(&f, "inverse", 1) &&
      !wm_op_fixture_attr_int(&f, "onesided", 1);
  wm_status_t s = ok ? wm_op_fixture_run(&f) : NULL;
  int64_t want_dims[3] = {1, (int64_t)n, 1};
  ok = ok && !s && wm_op_fixture_shape_is(f.out[0], 3, want_dims) &&
       wm_op_fixture_values_near(f.out[0], x, n, 1e-9);
  if (s) {
    fprintf(stderr, "%s\n", wm_status_message(s));
    wm_status_free(s);
  }
  wm_op_fixture_deinit(&f);
  return ok;
}

WM_TEST(dft_irfft_restores_real_signals) {
  WM_CHECK(irfft_round_trip(8, false));
  WM_CHECK(irfft_round_trip(8, true));
  WM_CHECK(irfft_round_trip(7, true));
  WM_CHECK(irfft_round_trip(12, true));
  WM_CHECK(irfft_round_trip(1, true));
}

WM_TEST(dft_opset20_reads_axis_input_with_default_last_signal_axis) {
  // x [3, 4, 1]: axis 0 transforms columns of length 3.
  double x[12], want[24], buf[8], out[8];
  for (size_t i = 0; i < 12; i++) {
    x[i] = signal_at(i);
  }
  for (size_t col = 0; col < 4; col++) {
    for (size_t k = 0; k < 3; k++) {
      buf[2 * k] = x[k * 4 + col];
      buf[2 * k + 1] = 0.0;
    }
    naive_dft(buf, out, 3, -1);
    for (size_t k = 0; k < 3; k++) {
      want[(k * 4 + col) * 2] = out[2 * k];
      want[(k * 4 + col) * 2 + 1] = out[2 * k + 1];
    }
  }
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 20));
  int64_t dx[3] = {3, 4, 1};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, x));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "axis", WM_DTYPE_INT64, 0, dx,
                                          (const int64_t[]){-3}));
  const char *in[3] = {"x", "", "axis"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "DFT", in, 3, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 3, (const int64_t[]){3, 4, 2}) &&
            wm_op_fixture_values_near(f.out[0], want, 24, 1e-5);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  // Without the axis input, rows of length 4 (axis -2) are transformed.
  for (size_t row = 0; row < 3; row++) {
    for (size_t k = 0; k < 4; k++) {
      buf[2 * k] = x[row * 4 + k];
      buf[2 * k + 1] = 0.0;
    }
    naive_dft(buf, out, 4, -1);
    for (size_t k = 0; k < 8; k++) {
      want[row * 8 + k] = out[k];
    }
  }
  WM_CHECK_OK(wm_op_fixture_init(&f, 20));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, x));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "DFT", in, 1, 1));
  s = wm_op_fixture_run(&f);
  ok = !s && wm_op_fixture_values_near(f.out[0], want, 24, 1e-5);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// Runs a DFT at |opset| on a zero tensor of shape |dims| with attribute
// |attr| = |value| (NULL for none) and |n| as dft_length (0: omitted);
// returns the status.
static wm_status_t dft_try(int64_t opset, int32_t rank, const int64_t *dims,
                           const char *attr, int64_t value, int64_t n) {
  wm_op_fixture_t f;
  WM_RETURN_IF_ERROR(wm_op_fixture_init(&f, opset));
  wm_status_t s =
      wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, rank, dims, NULL);
  if (!s && n) {
    s = wm_op_fixture_add_ints(&f, "n", 1, (const int64_t[]){n});
  }
  const char *in[2] = {"x", "n"};
  if (!s) {
    s = wm_op_fixture_add_node(&f, "DFT", in, n ? 2 : 1, 1);
  }
  if (!s && attr) {
    s = wm_op_fixture_attr_int(&f, attr, value);
  }
  if (!s) {
    s = wm_op_fixture_run(&f);
  }
  wm_op_fixture_deinit(&f);
  return s;
}

WM_TEST(dft_rejects_bad_axes_lengths_and_shapes) {
  int64_t real[3] = {1, 4, 1}, cplx[3] = {1, 4, 2}, bad[3] = {1, 4, 3};
  WM_CHECK(wm_op_fixture_fails_with(dft_try(17, 3, real, "axis", 2, 0),
                                    "axis 2 is out of range"));
  WM_CHECK(wm_op_fixture_fails_with(dft_try(17, 3, real, "axis", -1, 0),
                                    "axis -1 is out of range"));
  WM_CHECK(wm_op_fixture_fails_with(dft_try(17, 3, bad, NULL, 0, 0),
                                    "has last dim 3, want 1 (real) or 2"));
  WM_CHECK(wm_op_fixture_fails_with(dft_try(17, 3, cplx, "onesided", 1, 0),
                                    "onesided DFT needs real input"));
  WM_CHECK(wm_op_fixture_fails_with(dft_try(17, 3, real, "onesided", 2, 0),
                                    "onesided is 2, want 0 or 1"));
  WM_CHECK(wm_op_fixture_fails_with(dft_try(17, 3, real, NULL, 0, -4),
                                    "dft_length -4 is out of range"));
  int64_t flat[2] = {4, 1};
  WM_CHECK(wm_op_fixture_fails_with(dft_try(17, 2, flat, NULL, 0, 0),
                                    "axis 1 is out of range"));
  WM_CHECK(wm_op_fixture_fails_with(dft_try(17, 1, real, NULL, 0, 0),
                                    "want at least 2"));
  int64_t empty[3] = {1, 0, 1};
  WM_CHECK(wm_op_fixture_fails_with(dft_try(17, 3, empty, NULL, 0, 0),
                                    "gives a transform of length 0"));
  // IRFFT of one bin has no default length.
  int64_t one[3] = {1, 1, 2};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 17));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, one, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "DFT", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "inverse", 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "onesided", 1));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                     "gives a transform of length 0");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(dft_static_shape_leaves_unknown_length_unknown) {
  wm_op_fixture_t f;
  wm_type_t t;
  WM_CHECK_OK(wm_op_fixture_init(&f, 17));
  int64_t dx[3] = {2, 6, 1};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "n", WM_DTYPE_INT64, 0, dx));
  const char *in[2] = {"x", "n"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "DFT", in, 2, 1));
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 3);
  WM_CHECK_INT_EQ(t.shape.dims[0], 2);
  WM_CHECK_INT_EQ(t.shape.dims[1], -1);
  WM_CHECK_INT_EQ(t.shape.dims[2], 2);
  // Onesided with the length known from the shape: 6 / 2 + 1 bins.
  WM_CHECK_OK(wm_op_fixture_init(&f, 17));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "DFT", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "onesided", 1));
  s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.dims[1], 4);
  WM_CHECK_INT_EQ(t.shape.dims[2], 2);
}

WM_TEST(stft_complex_signal_two_sided_with_window) {
  // signal [1, 10, 2], step 3, frame 4: 3 frames of 4 bins.
  double sig[20], win[4] = {0.5, 1.0, 0.75, 0.25}, want[24], buf[8], out[8];
  for (size_t i = 0; i < 20; i++) {
    sig[i] = signal_at(i);
  }
  for (size_t fr = 0; fr < 3; fr++) {
    for (size_t k = 0; k < 4; k++) {
      buf[2 * k] = sig[(fr * 3 + k) * 2] * win[k];
      buf[2 * k + 1] = sig[(fr * 3 + k) * 2 + 1] * win[k];
    }
    naive_dft(buf, out, 4, -1);
    for (size_t k = 0; k < 8; k++) {
      want[fr * 8 + k] = out[k];
    }
  }
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 17));
  int64_t ds[3] = {1, 10, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT, 3, ds, sig));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "step", WM_DTYPE_INT64, 0, ds,
                                          (const int64_t[]){3}));
  WM_CHECK_OK(wm_op_fixture_add_floats(&f, "w", 4, win));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "len", WM_DTYPE_INT32, 0, ds,
                                          (const int64_t[]){4}));
  const char *in[4] = {"s", "step", "w", "len"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "STFT", in, 4, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "onesided", 0));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok =
      !s &&
      wm_op_fixture_shape_is(f.out[0], 4, (const int64_t[]){1, 3, 4, 2}) &&
      wm_op_fixture_values_near(f.out[0], want, 24, 1e-5);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// Runs STFT on a real [1, 10, 1] signal with |step|, a window of
// |window| ones (0: none) and |length| (0: omitted); returns the status.
static wm_status_t stft_try(int64_t step, int64_t window, int64_t length) {
  wm_op_fixture_t f;
  WM_RETURN_IF_ERROR(wm_op_fixture_init(&f, 17));
  int64_t ds[3] = {1, 10, 1}, dw[1] = {window};
  static const double ones[16] = {1, 1, 1, 1, 1, 1, 1, 1,
                                  1, 1, 1, 1, 1, 1, 1, 1};
  wm_status_t s = wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT, 3, ds, NULL);
  if (!s) {
    s = wm_op_fixture_add_const_i64(&f, "step", WM_DTYPE_INT64, 0, ds, &step);
  }
  if (!s && window) {
    s = wm_op_fixture_add_const(&f, "w", WM_DTYPE_FLOAT, 1, dw, ones);
  }
  if (!s && length) {
    s = wm_op_fixture_add_const_i64(&f, "len", WM_DTYPE_INT64, 0, ds, &length);
  }
  const char *in[4] = {"s", "step", window ? "w" : "", length ? "len" : ""};
  if (!s) {
    s = wm_op_fixture_add_node(&f, "STFT", in, 4, 1);
  }
  if (!s) {
    s = wm_op_fixture_run(&f);
  }
  wm_op_fixture_deinit(&f);
  return s;
}

WM_TEST(stft_rejects_bad_steps_and_frame_lengths) {
  WM_CHECK(wm_op_fixture_fails_with(stft_try(0, 4, 0),
                                    "frame_step is 0, want >= 1"));
  WM_CHECK(wm_op_fixture_fails_with(
      stft_try(2, 5, 4), "window has 5 elements but frame_length is 4"));
  WM_CHECK(wm_op_fixture_fails_with(
      stft_try(2, 0, 11), "frame length 11 exceeds the signal length 10"));
  WM_CHECK(wm_op_fixture_fails_with(stft_try(2, 0, -1),
                                    "frame_length -1 is out of range"));
  // Without window and frame_length the whole signal is one frame.
  WM_CHECK_OK(stft_try(2, 0, 0));
}

// Runs window |op| of |size| with |periodic| and output |dtype| and
// compares it with |want|.
static bool window_is(const char *op, int64_t size, int64_t periodic,
                      wm_dtype_t dtype, const double *want) {
  wm_op_fixture_t f;
  int64_t d[1] = {0};
  if (wm_op_fixture_init(&f, 17)) {
    return false;
  }
  const char *in[1] = {"n"};
  bool ok =
      !wm_op_fixture_add_const_i64(&f, "n", WM_DTYPE_INT64, 0, d, &size) &&
      !wm_op_fixture_add_node(&f, op, in, 1, 1) &&
      !wm_op_fixture_attr_int(&f, "periodic", periodic) &&
      !wm_op_fixture_attr_int(&f, "output_datatype", dtype);
  wm_status_t s = ok ? wm_op_fixture_run(&f) : NULL;
  d[0] = size;
  ok = ok && !s && f.out[0]->dtype == dtype &&
       wm_op_fixture_shape_is(f.out[0], 1, d) &&
       wm_op_fixture_values_near(f.out[0], want, (size_t)size, 1e-6);
  if (s) {
    fprintf(stderr, "%s: %s\n", op, wm_status_message(s));
    wm_status_free(s);
  }
  wm_op_fixture_deinit(&f);
  return ok;
}

WM_TEST(windows_follow_periodic_and_output_datatype) {
  WM_CHECK(window_is("HannWindow", 4, 1, WM_DTYPE_FLOAT,
                     (const double[]){0, 0.5, 1, 0.5}));
  WM_CHECK(window_is("HannWindow", 5, 0, WM_DTYPE_DOUBLE,
                     (const double[]){0, 0.5, 1, 0.5, 0}));
  WM_CHECK(window_is("HannWindow", 1, 0, WM_DTYPE_FLOAT, (const double[]){1}));
  WM_CHECK(window_is("HannWindow", 0, 1, WM_DTYPE_FLOAT, NULL));
  WM_CHECK(window_is("HammingWindow", 3, 0, WM_DTYPE_DOUBLE,
                     (const double[]){4.0 / 46.0, 1.0, 4.0 / 46.0}));
  WM_CHECK(window_is("BlackmanWindow", 4, 1, WM_DTYPE_FLOAT,
                     (const double[]){0, 0.34, 1, 0.34}));
  WM_CHECK(window_is("HannWindow", 4, 1, WM_DTYPE_INT32,
                     (const double[]){0, 0, 1, 0}));
}

WM_TEST(windows_reject_negative_size_and_non_numeric_output) {
  wm_op_fixture_t f;
  int64_t d[1] = {0}, size = -3;
  WM_CHECK_OK(wm_op_fixture_init(&f, 17));
  WM_CHECK_OK(
      wm_op_fixture_add_const_i64(&f, "n", WM_DTYPE_INT32, 0, d, &size));
  const char *in[1] = {"n"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "HammingWindow", in, 1, 1));
  bool ok =
      wm_op_fixture_fails_with(wm_op_fixture_run(&f), "size is -3, want >= 0");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  size = 4;
  WM_CHECK_OK(wm_op_fixture_init(&f, 17));
  WM_CHECK_OK(
      wm_op_fixture_add_const_i64(&f, "n", WM_DTYPE_INT64, 0, d, &size));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "BlackmanWindow", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "output_datatype", WM_DTYPE_STRING));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                "output_datatype 8 is not a numeric type");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

// Runs MelWeightMatrix; returns the status (the output stays in |f|).
static wm_status_t mel_run(wm_op_fixture_t *f, int64_t bins, int64_t dft,
                           int64_t rate, double lo, double hi) {
  int64_t d[1] = {0};
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 17));
  const char *in[5] = {"b", "n", "r", "lo", "hi"};
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const_i64(f, "b", WM_DTYPE_INT64, 0, d, &bins));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const_i64(f, "n", WM_DTYPE_INT64, 0, d, &dft));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const_i64(f, "r", WM_DTYPE_INT32, 0, d, &rate));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "lo", WM_DTYPE_FLOAT, 0, d, &lo));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "hi", WM_DTYPE_FLOAT, 0, d, &hi));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "MelWeightMatrix", in, 5, 1));
  return wm_op_fixture_run(f);
}

WM_TEST(mel_weight_matrix_builds_triangles_and_checks_edges) {
  wm_op_fixture_t f;
  wm_status_t s = mel_run(&f, 2, 16, 100, 0.0, 50.0);
  static const double want[18] = {0, 0, 0.5, 0, 1, 0, 0.5, 0.5, 0,
                                  1, 0, 0.5, 0, 0, 0, 0,   0,   0};
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){9, 2}) &&
            wm_op_fixture_values_near(f.out[0], want, 18, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  s = mel_run(&f, 2, 16, 100, 0.0, 100.0);
  ok = wm_op_fixture_fails_with(s, "outside the 9 bins of dft_length 16");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  s = mel_run(&f, 2, 16, 100, 40.0, 10.0);
  ok = wm_op_fixture_fails_with(s, "edges [40, 10] Hz");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  s = mel_run(&f, 2, 0, 100, 0.0, 10.0);
  ok = wm_op_fixture_fails_with(s, "dft_length is 0, want >= 1");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

static const wm_test_case_t cases[] = {
    WM_CASE(dft_matches_direct_transform_for_radix2_and_other_lengths),
    WM_CASE(dft_onesided_pads_and_plain_dft_truncates),
    WM_CASE(dft_irfft_restores_real_signals),
    WM_CASE(dft_opset20_reads_axis_input_with_default_last_signal_axis),
    WM_CASE(dft_rejects_bad_axes_lengths_and_shapes),
    WM_CASE(dft_static_shape_leaves_unknown_length_unknown),
    WM_CASE(stft_complex_signal_two_sided_with_window),
    WM_CASE(stft_rejects_bad_steps_and_frame_lengths),
    WM_CASE(windows_follow_periodic_and_output_datatype),
    WM_CASE(windows_reject_negative_size_and_non_numeric_output),
    WM_CASE(mel_weight_matrix_builds_triangles_and_checks_edges),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
