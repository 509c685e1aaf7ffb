// Tests of Resize and Upsample: interpolation against hand-computed
// values, opset differences, static shapes and error messages.
#include <stdlib.h>

#include "op_fixture.h"
#include "wm_test.h"

// Runs Resize at opset 13 with |mode| and scale 2 on x = [0, 1, 2, 3].
static wm_status_t resize_x2(wm_op_fixture_t *f, const char *mode) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 13));
  int64_t dx[1] = {4};
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "x", WM_DTYPE_FLOAT, 1, dx, NULL));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_floats(f, "s", 1, (const double[]){2}));
  const char *in[3] = {"x", "", "s"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "Resize", in, 3, 1));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_string(f, "mode", mode));
  return wm_op_fixture_run(f);
}

// Runs Resize-18 with |mode|, antialias=1 and scale |scale| on x = [0, 1,
// 2, 3].
static wm_status_t resize_antialias(wm_op_fixture_t *f, const char *mode,
                                    double scale) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 18));
  int64_t dx[1] = {4};
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "x", WM_DTYPE_FLOAT, 1, dx, NULL));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_floats(f, "s", 1, (const double[]){scale}));
  const char *in[3] = {"x", "", "s"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "Resize", in, 3, 1));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_string(f, "mode", mode));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_int(f, "antialias", 1));
  return wm_op_fixture_run(f);
}

WM_TEST(resize_antialias_linear_widens_the_triangle_when_halving) {
  // Sample points 0.5 and 2.5; the triangle stretched to radius 2 puts
  // weights 1/8, 3/8, 3/8, 1/8 on inputs f-1..f+2 (clamped at the edges):
  // 3/8 * 1 + 1/8 * 2 and 1/8 * 1 + 3/8 * 2 + 3/8 * 3 + 1/8 * 3.
  wm_op_fixture_t f;
  wm_status_t s = resize_antialias(&f, "linear", 0.5);
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 1, (const int64_t[]){2}) &&
            wm_op_fixture_values_near(f.out[0], (const double[]){0.625, 2.375},
                                      2, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(resize_antialias_cubic_uses_eight_normalized_taps_when_halving) {
  // Kernel (a = -0.75) at distances +-0.25, 0.75, 1.25, 1.75 gives
  // 0.87890625, 0.26171875, -0.10546875, -0.03515625, summing to 2 over
  // the eight taps; the first output sees inputs 0, 0, 0, 0, 1, 2, 3, 3.
  wm_op_fixture_t f;
  wm_status_t s = resize_antialias(&f, "cubic", 0.5);
  bool ok = !s && wm_op_fixture_values_near(
                      f.out[0], (const double[]){0.490234375, 2.509765625}, 2,
                      WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(resize_antialias_leaves_upsampling_unchanged) {
  wm_op_fixture_t f;
  wm_status_t s = resize_antialias(&f, "linear", 2);
  bool ok =
      !s &&
      wm_op_fixture_values_near(
          f.out[0], (const double[]){0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3},
          8, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(resize_antialias_is_ignored_by_nearest) {
  wm_op_fixture_t f;
  wm_status_t s = resize_antialias(&f, "nearest", 0.5);
  // half_pixel sample points 0.5 and 2.5 round down to inputs 0 and 2.
  bool ok = !s && wm_op_fixture_values_near(f.out[0], (const double[]){0, 2}, 2,
                                            WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(resize_antialias_cost_counts_the_wider_taps) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 18));
  int64_t dx[1] = {8};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_floats(&f, "s", 1, (const double[]){0.25}));
  const char *in[3] = {"x", "", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Resize", in, 3, 1));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "mode", "linear"));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "antialias", 1));
  wm_type_t t;
  wm_op_cost_t c;
  wm_status_t s = wm_op_fixture_cost(&f, &t, &c);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  // Two outputs, each a multiply-add over 2 - 2 * (floor(-4) + 1) = 8 taps.
  WM_CHECK_INT_EQ(t.shape.dims[0], 2);
  WM_CHECK_DBL_NEAR(c.flops, 2 * 2 * 8, 0);
}

WM_TEST(upsample_nearest_repeats_elements) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 9));
  int64_t dx[4] = {1, 1, 2, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_INT64, 4, dx, NULL));
  WM_CHECK_OK(
      wm_op_fixture_add_floats(&f, "s", 4, (const double[]){1, 1, 2, 1.5}));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Upsample", in, 2, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok =
      !s &&
      wm_op_fixture_shape_is(f.out[0], 4, (const int64_t[]){1, 1, 4, 3}) &&
      wm_op_fixture_values_near(
          f.out[0], (const double[]){0, 0, 1, 0, 0, 1, 2, 2, 3, 2, 2, 3}, 12,
          WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(resize_linear_half_pixel_clamps_at_edges) {
  wm_op_fixture_t f;
  wm_status_t s = resize_x2(&f, "linear");
  bool ok =
      !s &&
      wm_op_fixture_values_near(
          f.out[0], (const double[]){0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3},
          8, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(resize_tf_crop_and_resize_extrapolates) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[1] = {4};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx, NULL));
  WM_CHECK_OK(
      wm_op_fixture_add_floats(&f, "roi", 2, (const double[]){0.5, 1.5}));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "sz", 1, (const int64_t[]){3}));
  const char *in[4] = {"x", "roi", "", "sz"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Resize", in, 4, 1));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "mode", "linear"));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "coordinate_transformation_mode",
                                        "tf_crop_and_resize"));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "extrapolation_value", 9));
  wm_status_t s = wm_op_fixture_run(&f);
  // coordinates 1.5, 3, 4.5: the last lies outside [0, 3]
  bool ok =
      !s && wm_op_fixture_values_near(f.out[0], (const double[]){1.5, 3, 9}, 3,
                                      WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(resize_opset18_axes_and_keep_aspect_ratio) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 18));
  int64_t dx[4] = {1, 1, 2, 4};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 4, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "sz", 2, (const int64_t[]){4, 4}));
  const char *in[4] = {"x", "", "", "sz"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Resize", in, 4, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "axes", (const int64_t[]){2, 3}, 2));
  WM_CHECK_OK(
      wm_op_fixture_attr_string(&f, "keep_aspect_ratio_policy", "not_larger"));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok =
      !s &&
      wm_op_fixture_shape_is(f.out[0], 4, (const int64_t[]){1, 1, 2, 4}) &&
      wm_op_fixture_values_near(f.out[0],
                                (const double[]){0, 1, 2, 3, 4, 5, 6, 7}, 8,
                                WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(resize_static_shape_with_unknown_scales) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[2] = {3, 4}, ds[1] = {2};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 2, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "s", WM_DTYPE_FLOAT, 1, ds));
  const char *in[3] = {"x", "", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Resize", in, 3, 1));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 2);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
}

WM_TEST(resize_rejects_scales_and_sizes_together) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t dx[1] = {4};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_floats(&f, "s", 1, (const double[]){2}));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "sz", 1, (const int64_t[]){3}));
  const char *in[4] = {"x", "", "s", "sz"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Resize", in, 4, 1));
  bool ok = wm_op_fixture_fails_with(
      wm_op_fixture_run(&f), "exactly one of scales and sizes must be given");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(resize_rejects_unknown_mode) {
  wm_op_fixture_t f;
  bool ok = wm_op_fixture_fails_with(resize_x2(&f, "bicubic"),
                                     "unknown mode \"bicubic\"");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

static const wm_test_case_t cases[] = {
    WM_CASE(upsample_nearest_repeats_elements),
    WM_CASE(resize_linear_half_pixel_clamps_at_edges),
    WM_CASE(resize_tf_crop_and_resize_extrapolates),
    WM_CASE(resize_opset18_axes_and_keep_aspect_ratio),
    WM_CASE(resize_static_shape_with_unknown_scales),
    WM_CASE(resize_rejects_scales_and_sizes_together),
    WM_CASE(resize_rejects_unknown_mode),
    WM_CASE(resize_antialias_linear_widens_the_triangle_when_halving),
    WM_CASE(resize_antialias_cubic_uses_eight_normalized_taps_when_halving),
    WM_CASE(resize_antialias_leaves_upsampling_unchanged),
    WM_CASE(resize_antialias_is_ignored_by_nearest),
    WM_CASE(resize_antialias_cost_counts_the_wider_taps),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
