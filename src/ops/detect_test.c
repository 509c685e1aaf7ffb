// Tests of the detection and sampling operators (NonMaxSuppression,
// RoiAlign, GridSample, AffineGrid, MaxUnpool): hand-computed values,
// data-dependent and static shapes, costs, and the errors for hostile indices,
// boxes, grids and attributes.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "op_fixture.h"
#include "wm_test.h"

// ----------------------------------------------------- NonMaxSuppression

// Adds boxes [1, 3, 4] (corner format) and scores [1, 1, 3]: box 1 nearly
// covers box 0 (IoU 0.9), box 2 lies apart; scores 0.9, 0.8, |s2|.
static wm_status_t nms_inputs(wm_op_fixture_t *f, double s2) {
  int64_t db[3] = {1, 3, 4}, ds[3] = {1, 1, 3};
  const double boxes[12] = {0, 0, 1, 1, 0, 0.1, 1, 1, 5, 5, 6, 6};
  const double scores[3] = {0.9, 0.8, s2};
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "b", WM_DTYPE_FLOAT, 3, db, boxes));
  return wm_op_fixture_add_const(f, "s", WM_DTYPE_FLOAT, 3, ds, scores);
}

// Runs NonMaxSuppression on nms_inputs with max_output |max_out| and IoU
// threshold 0.5.
static wm_status_t nms_run_with(wm_op_fixture_t *f, double s2,
                                int64_t max_out) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 11));
  WM_RETURN_IF_ERROR(nms_inputs(f, s2));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_ints(f, "m", 1, &max_out));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_floats(f, "iou", 1, (double[]){0.5}));
  const char *in[4] = {"b", "s", "m", "iou"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "NonMaxSuppression", in, 4, 1));
  return wm_op_fixture_run(f);
}

WM_TEST(nms_suppresses_overlaps_and_sizes_output_at_run_time) {
  wm_op_fixture_t f;
  wm_status_t s = nms_run_with(&f, 0.7, 10);
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 3}) &&
            wm_op_fixture_values_near(f.out[0],
                                      (const double[]){0, 0, 0, 0, 0, 2}, 6, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(nms_clamps_huge_max_output_to_the_box_count) {
  wm_op_fixture_t f;
  wm_status_t s = nms_run_with(&f, 0.7, INT64_MAX);
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 3});
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(nms_negative_max_output_selects_nothing) {
  wm_op_fixture_t f;
  wm_status_t s = nms_run_with(&f, 0.7, -5);
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){0, 3});
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(nms_ranks_nan_scores_last) {
  wm_op_fixture_t f;
  wm_status_t s = nms_run_with(&f, NAN, 10);
  // box 2 (NaN score) comes after box 0; box 1 is suppressed by box 0
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 3}) &&
            wm_op_fixture_values_near(f.out[0],
                                      (const double[]){0, 0, 0, 0, 0, 2}, 6, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(nms_without_max_output_selects_nothing) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 10));
  WM_CHECK_OK(nms_inputs(&f, 0.7));
  const char *in[2] = {"b", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "NonMaxSuppression", in, 2, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){0, 3});
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(nms_center_format_and_score_threshold) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t db[3] = {1, 3, 4}, ds[3] = {2, 1, 3};
  // centers (0.5, 0.5), (0.5, 0.6), (10.5, 10.5), all 1 x 1
  const double boxes[12] = {0.5, 0.5, 1, 1, 0.5, 0.6, 1, 1, 10.5, 10.5, 1, 1};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "b", WM_DTYPE_FLOAT, 3, db, boxes));
  // batch dims differ: 2 score batches for 1 box batch
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT, 3, ds, NULL));
  const char *in[2] = {"b", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "NonMaxSuppression", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "center_point_box", 1));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f), "disagree");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);

  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  ds[0] = 1;
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "b", WM_DTYPE_FLOAT, 3, db, boxes));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT, 3, ds,
                                      (const double[]){0.9, 0.95, 0.2}));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "m", 1, (const int64_t[]){5}));
  WM_CHECK_OK(wm_op_fixture_add_floats(&f, "iou", 1, (double[]){0.5}));
  WM_CHECK_OK(wm_op_fixture_add_floats(&f, "st", 1, (double[]){0.3}));
  const char *in5[5] = {"b", "s", "m", "iou", "st"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "NonMaxSuppression", in5, 5, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "center_point_box", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  // box 1 wins, box 0 overlaps it (IoU 0.82), box 2 is under the threshold
  ok = !s && wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){1, 3}) &&
       wm_op_fixture_values_near(f.out[0], (const double[]){0, 0, 1}, 3, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(nms_nan_boxes_never_suppress) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t db[3] = {1, 2, 4}, ds[3] = {1, 1, 2};
  const double boxes[8] = {NAN, 0, 1, 1, 0, 0, 1, 1};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "b", WM_DTYPE_FLOAT, 3, db, boxes));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT, 3, ds, NULL));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "m", 1, (const int64_t[]){5}));
  const char *in[3] = {"b", "s", "m"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "NonMaxSuppression", in, 3, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 3}) &&
            wm_op_fixture_values_near(f.out[0],
                                      (const double[]){0, 0, 1, 0, 0, 0}, 6, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(nms_static_shape_has_unknown_rows) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t db[3] = {-1, 7, 4}, ds[3] = {-1, 2, 7};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_FLOAT, 3, db));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "s", WM_DTYPE_FLOAT, 3, ds));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "m", 1, (const int64_t[]){3}));
  const char *in[3] = {"b", "s", "m"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "NonMaxSuppression", in, 3, 1));
  wm_type_t t;
  wm_op_cost_t c;
  wm_status_t s = wm_op_fixture_cost(&f, &t, &c);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_INT64);
  WM_CHECK_INT_EQ(t.shape.rank, 2);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
  WM_CHECK_INT_EQ(t.shape.dims[1], 3);
  // the batch is unknown: no cost
  WM_CHECK_DBL_NEAR(c.flops, 0, 0);
}

WM_TEST(nms_cost_bounds_the_iou_tests) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t db[3] = {1, 8, 4}, ds[3] = {1, 2, 8};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_FLOAT, 3, db));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "s", WM_DTYPE_FLOAT, 3, ds));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "m", 1, (const int64_t[]){2}));
  const char *in[3] = {"b", "s", "m"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "NonMaxSuppression", in, 3, 1));
  wm_type_t t;
  wm_op_cost_t c;
  wm_status_t s = wm_op_fixture_cost(&f, &t, &c);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  // 2 classes x (8 + 8 * 3 + 8 * 2 * 20)
  WM_CHECK_DBL_NEAR(c.flops, 2 * (8 + 24 + 320), 1e-9);
}

WM_TEST(nms_rejects_bad_shapes_and_attributes) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t db[3] = {1, 3, 5}, ds[3] = {1, 1, 3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_FLOAT, 3, db));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "s", WM_DTYPE_FLOAT, 3, ds));
  const char *in[2] = {"b", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "NonMaxSuppression", in, 2, 1));
  wm_type_t t;
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_infer(&f, &t),
                                     "want [batches, boxes, 4]");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);

  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  db[2] = 4;
  ds[2] = 4;
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "b", WM_DTYPE_FLOAT, 3, db));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "s", WM_DTYPE_FLOAT, 3, ds));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "NonMaxSuppression", in, 2, 1));
  ok = wm_op_fixture_fails_with(wm_op_fixture_infer(&f, &t),
                                "dim 1 is 3 but dim 2 is 4");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);

  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  WM_CHECK_OK(nms_inputs(&f, 0.5));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "m", 2, (const int64_t[]){1, 2}));
  const char *in3[3] = {"b", "s", "m"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "NonMaxSuppression", in3, 3, 1));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f), "want a scalar");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);

  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  WM_CHECK_OK(nms_inputs(&f, 0.5));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "NonMaxSuppression", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "center_point_box", 2));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                "center_point_box is 2, want 0 or 1");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

// -------------------------------------------------------------- RoiAlign

// Runs RoiAlign at |opset| on X = [[0, 1], [2, 3]] with one ROI |roi| of
// batch |batch|, a 1x1 output and sampling_ratio |sr|.
static wm_status_t roi_run_with(wm_op_fixture_t *f, int64_t opset,
                                const double *roi, int64_t batch, int64_t sr,
                                const char *mode, const char *ctm) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, opset));
  int64_t dx[4] = {1, 1, 2, 2}, dr[2] = {1, 4};
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "x", WM_DTYPE_FLOAT, 4, dx, NULL));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "r", WM_DTYPE_FLOAT, 2, dr, roi));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_ints(f, "bi", 1, &batch));
  const char *in[3] = {"x", "r", "bi"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "RoiAlign", in, 3, 1));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_int(f, "sampling_ratio", sr));
  if (mode) {
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_string(f, "mode", mode));
  }
  if (ctm) {
    WM_RETURN_IF_ERROR(
        wm_op_fixture_attr_string(f, "coordinate_transformation_mode", ctm));
  }
  return wm_op_fixture_run(f);
}

static const double unit_roi[4] = {0, 0, 1, 1};

WM_TEST(roialign_output_half_pixel_samples_the_bin_center) {
  wm_op_fixture_t f;
  // the sample lies at (0.5, 0.5): the mean of the four pixels
  wm_status_t s =
      roi_run_with(&f, 16, unit_roi, 0, 1, NULL, "output_half_pixel");
  bool ok =
      !s &&
      wm_op_fixture_shape_is(f.out[0], 4, (const int64_t[]){1, 1, 1, 1}) &&
      wm_op_fixture_values_near(f.out[0], (const double[]){1.5}, 1,
                                WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(roialign_opset10_has_no_half_pixel_shift) {
  wm_op_fixture_t f;
  wm_status_t s = roi_run_with(&f, 10, unit_roi, 0, 1, NULL, NULL);
  bool ok = !s && wm_op_fixture_values_near(f.out[0], (const double[]){1.5}, 1,
                                            WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(roialign_opset16_defaults_to_half_pixel) {
  wm_op_fixture_t f;
  // the ROI becomes [-0.5, 0.5]: the sample lies at (0, 0)
  wm_status_t s = roi_run_with(&f, 16, unit_roi, 0, 1, NULL, NULL);
  bool ok = !s && wm_op_fixture_values_near(f.out[0], (const double[]){0}, 1,
                                            WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(roialign_max_takes_the_largest_weighted_corner) {
  wm_op_fixture_t f;
  // the ONNX reference: max(0.25 * 0, 0.25 * 1, 0.25 * 2, 0.25 * 3)
  wm_status_t s =
      roi_run_with(&f, 16, unit_roi, 0, 1, "max", "output_half_pixel");
  bool ok = !s && wm_op_fixture_values_near(f.out[0], (const double[]){0.75}, 1,
                                            WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(roialign_inverted_roi_in_half_pixel_mode_is_zero) {
  wm_op_fixture_t f;
  wm_status_t s =
      roi_run_with(&f, 16, (const double[]){1, 1, 0, 0}, 0, 0, NULL, NULL);
  bool ok =
      !s && wm_op_fixture_values_near(f.out[0], (const double[]){0}, 1, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(roialign_reads_only_the_samples_over_the_map) {
  wm_op_fixture_t f;
  // A 2^21-pixel ROI samples a 2^21 x 2^21 grid (2^42 taps, past the
  // limit): only the 4 samples at (0.5 | 1.5, 0.5 | 1.5) lie over the map,
  // worth 1.5 + 2 + 2.5 + 3; the rest are 0. avg divides by the whole grid.
  const double big[4] = {0, 0, 2097152, 2097152};
  wm_status_t s = roi_run_with(&f, 16, big, 0, 0, NULL, "output_half_pixel");
  bool ok = !s && wm_op_fixture_values_near(
                      f.out[0], (const double[]){9.0 / 4398046511104.0}, 1, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  // max: the largest weighted corner, 1 * 3 at (1.5, 1.5)
  s = roi_run_with(&f, 16, big, 0, 0, "max", "output_half_pixel");
  ok = !s && wm_op_fixture_values_near(f.out[0], (const double[]){3}, 1, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(roialign_rejects_hostile_rois_and_indices) {
  wm_op_fixture_t f;
  bool ok = wm_op_fixture_fails_with(
      roi_run_with(&f, 16, unit_roi, 1, 1, NULL, NULL),
      "batch index 1 of roi 0 is out of range for 1 batches");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  ok = wm_op_fixture_fails_with(
      roi_run_with(&f, 16, unit_roi, -1, 1, NULL, NULL), "batch index -1");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  ok = wm_op_fixture_fails_with(
      roi_run_with(&f, 16, (const double[]){0, NAN, 1, 1}, 0, 1, NULL, NULL),
      "does not have finite coordinates");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
  // an adaptive grid for a 1e30-pixel ROI cannot be sampled
  wm_status_t s = roi_run_with(&f, 16, (const double[]){0, 0, 1e30, 1e30}, 0, 0,
                               NULL, NULL);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, RESOURCE_EXHAUSTED, "sampling grid per bin");
  s = roi_run_with(&f, 16, unit_roi, 0, 2000000, NULL, NULL);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, RESOURCE_EXHAUSTED, "more than the limit");
  s = roi_run_with(&f, 16, unit_roi, 0, -1, NULL, NULL);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "sampling_ratio is -1");
  s = roi_run_with(&f, 16, unit_roi, 0, 1, "median", NULL);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "mode is \"median\"");
  s = roi_run_with(&f, 16, unit_roi, 0, 1, NULL, "asymmetric");
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "coordinate_transformation_mode");
}

WM_TEST(roialign_static_shape_and_cost) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 16));
  int64_t dx[4] = {2, 3, 10, 10}, dr[2] = {-1, 4}, db[1] = {-1};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "r", WM_DTYPE_FLOAT, 2, dr));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "bi", WM_DTYPE_INT64, 1, db));
  const char *in[3] = {"x", "r", "bi"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "RoiAlign", in, 3, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "output_height", 5));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "output_width", 4));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "sampling_ratio", 2));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 4);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
  WM_CHECK_INT_EQ(t.shape.dims[1], 3);
  WM_CHECK_INT_EQ(t.shape.dims[2], 5);
  WM_CHECK_INT_EQ(t.shape.dims[3], 4);

  WM_CHECK_OK(wm_op_fixture_init(&f, 16));
  dr[0] = 7;
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "r", WM_DTYPE_FLOAT, 2, dr));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "bi", WM_DTYPE_INT64, 1, db));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "RoiAlign", in, 3, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "sampling_ratio", 2));
  wm_op_cost_t c;
  s = wm_op_fixture_cost(&f, &t, &c);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  // 7 rois x 3 channels x 1 bin, 4 samples of 4 taps
  WM_CHECK_DBL_NEAR(c.macs, 21 * 16, 1e-9);
  WM_CHECK_DBL_NEAR(c.flops, 2 * 21 * 16 + 21, 1e-9);
}

// ------------------------------------------------------------ GridSample

// Runs GridSample at |opset| on X [1, 1, 1, 3] = [10, 20, 30] with a grid
// of |n| points (x, y pairs) and the given modes.
static wm_status_t gs_run_with(wm_op_fixture_t *f, int64_t opset,
                               const double *grid, int64_t n, const char *mode,
                               const char *pad, int64_t align) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, opset));
  int64_t dx[4] = {1, 1, 1, 3}, dg[4] = {1, 1, n, 2};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "x", WM_DTYPE_FLOAT, 4, dx,
                                             (const double[]){10, 20, 30}));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "g", WM_DTYPE_FLOAT, 4, dg, grid));
  const char *in[2] = {"x", "g"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "GridSample", in, 2, 1));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_string(f, "mode", mode));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_string(f, "padding_mode", pad));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_int(f, "align_corners", align));
  return wm_op_fixture_run(f);
}

WM_TEST(gridsample_bilinear_align_corners) {
  wm_op_fixture_t f;
  // x = (v + 1) / 2 * 2: 0, 1.5, 2; the single row is always y = 0
  wm_status_t s = gs_run_with(&f, 16, (const double[]){-1, 0, 0.5, 1, 1, -1}, 3,
                              "bilinear", "zeros", 1);
  bool ok =
      !s &&
      wm_op_fixture_shape_is(f.out[0], 4, (const int64_t[]){1, 1, 1, 3}) &&
      wm_op_fixture_values_near(f.out[0], (const double[]){10, 25, 30}, 3,
                                WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(gridsample_nearest_rounds_half_to_even) {
  wm_op_fixture_t f;
  // align_corners 1: x = v + 1; 0.5 -> 0 and 1.5 -> 2
  wm_status_t s = gs_run_with(&f, 16, (const double[]){-0.5, 0, 0.5, 0}, 2,
                              "nearest", "zeros", 1);
  bool ok = !s && wm_op_fixture_values_near(f.out[0], (const double[]){10, 30},
                                            2, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(gridsample_reflection_and_border_far_outside) {
  wm_op_fixture_t f;
  // align_corners 1 reflects about 0 and 2: x = 2.5 * 2 + 2 = 7 -> 1
  // (7 - 2 = 5, 2 full ranges, remainder 1, even -> 2 - 1)
  wm_status_t s = gs_run_with(&f, 16, (const double[]){6, 0, -1e30, 0}, 2,
                              "bilinear", "reflection", 1);
  bool ok = !s && fabs(wm_tensor_get_f64(f.out[0], 0) - 20) < 1e-4;
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
  s = gs_run_with(&f, 16, (const double[]){1e30, 0, -INFINITY, 0}, 2, "bicubic",
                  "border", 0);
  ok = !s && wm_op_fixture_values_near(f.out[0], (const double[]){30, 10}, 2,
                                       WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(gridsample_hostile_coordinates) {
  wm_op_fixture_t f;
  wm_status_t s =
      gs_run_with(&f, 16, (const double[]){NAN, 0, 1e300, 0, -INFINITY, 0}, 3,
                  "bicubic", "zeros", 0);
  bool ok = !s && isnan(wm_tensor_get_f64(f.out[0], 0)) &&
            wm_tensor_get_f64(f.out[0], 1) == 0 &&
            wm_tensor_get_f64(f.out[0], 2) == 0;
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
  s = gs_run_with(&f, 16, (const double[]){INFINITY, 0, 0, NAN}, 2, "nearest",
                  "reflection", 0);
  ok = !s && isnan(wm_tensor_get_f64(f.out[0], 0)) &&
       isnan(wm_tensor_get_f64(f.out[0], 1));
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(gridsample_single_pixel_reflection_has_no_range) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 16));
  int64_t dx[4] = {1, 1, 1, 1}, dg[4] = {1, 1, 2, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 4, dx,
                                      (const double[]){7}));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "g", WM_DTYPE_FLOAT, 4, dg,
                                      (const double[]){5, -5, 0.3, 123}));
  const char *in[2] = {"x", "g"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "GridSample", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "padding_mode", "reflection"));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "align_corners", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s && wm_op_fixture_values_near(f.out[0], (const double[]){7, 7}, 2,
                                            WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(gridsample_empty_input_gives_zeros) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 16));
  int64_t dx[4] = {1, 2, 0, 3}, dg[4] = {1, 1, 2, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 4, dx, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "g", WM_DTYPE_FLOAT, 4, dg,
                                      (const double[]){0, 0, 0.5, -2}));
  const char *in[2] = {"x", "g"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "GridSample", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "mode", "bicubic"));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "padding_mode", "border"));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok =
      !s &&
      wm_op_fixture_shape_is(f.out[0], 4, (const int64_t[]){1, 2, 1, 2}) &&
      wm_op_fixture_values_near(f.out[0], (const double[]){0, 0, 0, 0}, 4, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(gridsample_opset20_volumetric_linear) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 20));
  int64_t dx[5] = {1, 2, 2, 2, 2}, dg[5] = {1, 1, 1, 1, 3};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_DOUBLE, 5, dx, NULL));
  // (x, y, z) = (1, -1, 0): the last dim at 1, the middle at 0, the first
  // halfway
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "g", WM_DTYPE_DOUBLE, 5, dg,
                                      (const double[]){1, -1, 0}));
  const char *in[2] = {"x", "g"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "GridSample", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "align_corners", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  // channel 0: (x[0,0,1] + x[1,0,1]) / 2 = (1 + 5) / 2; channel 1: + 8
  bool ok =
      !s &&
      wm_op_fixture_shape_is(f.out[0], 5, (const int64_t[]){1, 2, 1, 1, 1}) &&
      wm_op_fixture_values_near(f.out[0], (const double[]){3, 11}, 2, 1e-12);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(gridsample_mode_names_follow_the_opset) {
  wm_op_fixture_t f;
  const double g[2] = {0, 0};
  wm_status_t s = gs_run_with(&f, 16, g, 1, "linear", "zeros", 0);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "mode is \"linear\"");
  s = gs_run_with(&f, 20, g, 1, "bicubic", "zeros", 0);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "mode is \"bicubic\"");
  s = gs_run_with(&f, 20, g, 1, "cubic", "zeros", 0);
  bool ok = !s && wm_op_fixture_values_near(f.out[0], (const double[]){20}, 1,
                                            WM_OP_FIXTURE_TOL);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
  s = gs_run_with(&f, 16, g, 1, "nearest", "mirror", 0);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "padding_mode is \"mirror\"");
  s = gs_run_with(&f, 16, g, 1, "nearest", "zeros", 2);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "align_corners is 2");
}

WM_TEST(gridsample_static_shape_cost_and_bad_grids) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 16));
  int64_t dx[4] = {-1, 3, -1, -1}, dg[4] = {2, 5, 6, 2};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "g", WM_DTYPE_FLOAT, 4, dg));
  const char *in[2] = {"x", "g"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "GridSample", in, 2, 1));
  wm_type_t t;
  wm_op_cost_t c;
  wm_status_t s = wm_op_fixture_cost(&f, &t, &c);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 4);
  WM_CHECK_INT_EQ(t.shape.dims[0], 2);
  WM_CHECK_INT_EQ(t.shape.dims[1], 3);
  WM_CHECK_INT_EQ(t.shape.dims[2], 5);
  WM_CHECK_INT_EQ(t.shape.dims[3], 6);
  // 180 outputs x 4 taps; 60 grid points x 2 coordinates x 8
  WM_CHECK_DBL_NEAR(c.macs, 720, 1e-9);
  WM_CHECK_DBL_NEAR(c.flops, 1440 + 960, 1e-9);

  WM_CHECK_OK(wm_op_fixture_init(&f, 16));
  dg[3] = 3;
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "g", WM_DTYPE_FLOAT, 4, dg));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "GridSample", in, 2, 1));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_infer(&f, &t),
                                     "must end with dim 2");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);

  // opset 16 is 2-D only
  WM_CHECK_OK(wm_op_fixture_init(&f, 16));
  int64_t dx5[5] = {1, 1, 2, 2, 2}, dg5[5] = {1, 1, 1, 1, 3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 5, dx5));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "g", WM_DTYPE_FLOAT, 5, dg5));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "GridSample", in, 2, 1));
  ok = wm_op_fixture_fails_with(wm_op_fixture_infer(&f, &t), "want rank 4");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

// ------------------------------------------------------------- MaxUnpool

// Runs MaxUnpool (kernel 2, stride 2) on X [1, 2, 1, 2] = 1..4 with
// |indices| and, when |oshape| is not NULL, output_shape.
static wm_status_t unpool_run_with(wm_op_fixture_t *f, const int64_t *indices,
                                   const int64_t *oshape) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 11));
  int64_t dx[4] = {1, 2, 1, 2};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "x", WM_DTYPE_FLOAT, 4, dx,
                                             (const double[]){1, 2, 3, 4}));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const_i64(f, "i", WM_DTYPE_INT64, 4, dx, indices));
  const char *in[3] = {"x", "i", "os"};
  if (oshape) {
    WM_RETURN_IF_ERROR(wm_op_fixture_add_ints(f, "os", 4, oshape));
  }
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_node(f, "MaxUnpool", in, oshape ? 3 : 2, 1));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_attr_ints(f, "kernel_shape", (const int64_t[]){2, 2}, 2));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_attr_ints(f, "strides", (const int64_t[]){2, 2}, 2));
  return wm_op_fixture_run(f);
}

WM_TEST(maxunpool_scatters_flat_indices_over_batch_and_channels) {
  wm_op_fixture_t f;
  // unpooled [1, 2, 2, 4]: channel 0 holds flat 0..7, channel 1 8..15
  wm_status_t s = unpool_run_with(&f, (const int64_t[]){5, 2, 8, 15}, NULL);
  bool ok =
      !s &&
      wm_op_fixture_shape_is(f.out[0], 4, (const int64_t[]){1, 2, 2, 4}) &&
      wm_op_fixture_values_near(
          f.out[0],
          (const double[]){0, 0, 2, 0, 0, 1, 0, 0, 3, 0, 0, 0, 0, 0, 0, 4}, 16,
          0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(maxunpool_output_shape_pads_each_dim) {
  wm_op_fixture_t f;
  wm_status_t s = unpool_run_with(&f, (const int64_t[]){5, 2, 8, 15},
                                  (const int64_t[]){1, 2, 3, 4});
  bool ok =
      !s &&
      wm_op_fixture_shape_is(f.out[0], 4, (const int64_t[]){1, 2, 3, 4}) &&
      wm_op_fixture_values_near(
          f.out[0], (const double[]){0, 0, 2, 0, 0, 1, 0, 0, 0, 0, 0, 0,
                                     3, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0},
          24, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(maxunpool_rejects_hostile_indices_and_shapes) {
  wm_op_fixture_t f;
  wm_status_t s = unpool_run_with(&f, (const int64_t[]){0, 1, 16, 2}, NULL);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, OUT_OF_RANGE, "index 16 (element 2 of the indices)");
  s = unpool_run_with(&f, (const int64_t[]){0, INT64_MIN, 1, 2}, NULL);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, OUT_OF_RANGE, "is out of range for the unpooled shape");
  s = unpool_run_with(&f, (const int64_t[]){0, 1, 2, 3},
                      (const int64_t[]){1, 2, 1, 4});
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "does not hold the unpooled shape");
  s = unpool_run_with(&f, (const int64_t[]){0, 1, 2, 3},
                      (const int64_t[]){1, 2, 2, INT64_MAX});
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "too many elements");

  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[4] = {1, 1, 2, 2};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "i", WM_DTYPE_INT64, 4, dx));
  const char *in[2] = {"x", "i"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "MaxUnpool", in, 2, 1));
  wm_type_t t;
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_infer(&f, &t),
                                     "kernel_shape is required");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);

  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "i", WM_DTYPE_INT64, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "MaxUnpool", in, 2, 1));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "kernel_shape", (const int64_t[]){1, 1}, 2));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "pads", (const int64_t[]){0, 5, 0, 5}, 4));
  ok = wm_op_fixture_fails_with(wm_op_fixture_infer(&f, &t),
                                "gives no valid output size");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(maxunpool_static_shapes) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  int64_t dx[4] = {-1, 3, 4, -1}, dos[1] = {4};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "i", WM_DTYPE_INT64, 4, dx));
  const char *in[2] = {"x", "i"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "MaxUnpool", in, 2, 1));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "kernel_shape", (const int64_t[]){3, 3}, 2));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "strides", (const int64_t[]){2, 2}, 2));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "pads", (const int64_t[]){1, 1, 0, 0}, 4));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  // (4 - 1) * 2 - 1 + 3 = 8
  WM_CHECK_INT_EQ(t.shape.rank, 4);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
  WM_CHECK_INT_EQ(t.shape.dims[1], 3);
  WM_CHECK_INT_EQ(t.shape.dims[2], 8);
  WM_CHECK_INT_EQ(t.shape.dims[3], -1);

  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "i", WM_DTYPE_INT64, 4, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "os", WM_DTYPE_INT64, 1, dos));
  const char *in3[3] = {"x", "i", "os"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "MaxUnpool", in3, 3, 1));
  WM_CHECK_OK(
      wm_op_fixture_attr_ints(&f, "kernel_shape", (const int64_t[]){2, 2}, 2));
  wm_op_cost_t c;
  s = wm_op_fixture_cost(&f, &t, &c);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 4);
  WM_CHECK_INT_EQ(t.shape.dims[2], -1);
  WM_CHECK_DBL_NEAR(c.flops, 0, 0);
}

// ------------------------------------------------------------ AffineGrid

// Runs AffineGrid with |theta| ([N, r, r + 1]) and |size| (r + 2 values).
static wm_status_t ag_run_with(wm_op_fixture_t *f, const int64_t *td,
                               const double *theta, const int64_t *size,
                               size_t n_size, int64_t align) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 20));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "theta", WM_DTYPE_FLOAT, 3, td, theta));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_ints(f, "size", n_size, size));
  const char *in[2] = {"theta", "size"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "AffineGrid", in, 2, 1));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_int(f, "align_corners", align));
  return wm_op_fixture_run(f);
}

WM_TEST(affinegrid_maps_pixel_centers_or_corners) {
  // Identity theta, H = 1, W = 2: x at pixel centers -0.5 and 0.5, y 0;
  // with align_corners x is -1 and 1 and a single row sits at y = -1.
  static const double id[6] = {1, 0, 0, 0, 1, 0};
  wm_op_fixture_t f;
  wm_status_t s = ag_run_with(&f, (const int64_t[]){1, 2, 3}, id,
                              (const int64_t[]){1, 3, 1, 2}, 4, 0);
  static const double centers[4] = {-0.5, 0, 0.5, 0};
  bool ok =
      !s &&
      wm_op_fixture_shape_is(f.out[0], 4, (const int64_t[]){1, 1, 2, 2}) &&
      wm_op_fixture_values_near(f.out[0], centers, 4, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  s = ag_run_with(&f, (const int64_t[]){1, 2, 3}, id,
                  (const int64_t[]){1, 3, 1, 2}, 4, 1);
  static const double corners[4] = {-1, -1, 1, -1};
  ok = !s && wm_op_fixture_values_near(f.out[0], corners, 4, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  // 3-D: theta swaps x and z and translates y by 2; D = 2, H = W = 1.
  static const double t3[12] = {0, 0, 1, 0, 0, 1, 0, 2, 1, 0, 0, 0};
  s = ag_run_with(&f, (const int64_t[]){1, 3, 4}, t3,
                  (const int64_t[]){1, 1, 2, 1, 1}, 5, 0);
  static const double want3[6] = {-0.5, 2, 0, 0.5, 2, 0};
  ok = !s &&
       wm_op_fixture_shape_is(f.out[0], 5, (const int64_t[]){1, 2, 1, 1, 3}) &&
       wm_op_fixture_values_near(f.out[0], want3, 6, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(affinegrid_rejects_mismatched_theta_and_size) {
  static const double id[6] = {1, 0, 0, 0, 1, 0};
  wm_op_fixture_t f;
  wm_status_t s = ag_run_with(&f, (const int64_t[]){1, 2, 3}, id,
                              (const int64_t[]){1, 3, 1, 2, 2}, 5, 0);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "size has 5 values, want 4 for a 2-D");
  s = ag_run_with(&f, (const int64_t[]){1, 2, 3}, id,
                  (const int64_t[]){2, 3, 1, 2}, 4, 0);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "size[0] is 2 but theta has 1 batches");
  s = ag_run_with(&f, (const int64_t[]){1, 2, 3}, id,
                  (const int64_t[]){1, 3, -4, 2}, 4, 0);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "size[2] is -4, want at least 0");
  s = ag_run_with(&f, (const int64_t[]){1, 2, 3}, id,
                  (const int64_t[]){1, 3, INT64_C(1) << 40, INT64_C(1) << 40},
                  4, 0);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "too many elements");
  s = ag_run_with(&f, (const int64_t[]){1, 3, 3}, NULL,
                  (const int64_t[]){1, 3, 1, 2}, 4, 0);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "want [N, 2, 3] or [N, 3, 4]");
}

static const wm_test_case_t cases[] = {
    WM_CASE(nms_suppresses_overlaps_and_sizes_output_at_run_time),
    WM_CASE(nms_clamps_huge_max_output_to_the_box_count),
    WM_CASE(nms_negative_max_output_selects_nothing),
    WM_CASE(nms_ranks_nan_scores_last),
    WM_CASE(nms_without_max_output_selects_nothing),
    WM_CASE(nms_center_format_and_score_threshold),
    WM_CASE(nms_nan_boxes_never_suppress),
    WM_CASE(nms_static_shape_has_unknown_rows),
    WM_CASE(nms_cost_bounds_the_iou_tests),
    WM_CASE(nms_rejects_bad_shapes_and_attributes),
    WM_CASE(roialign_output_half_pixel_samples_the_bin_center),
    WM_CASE(roialign_opset10_has_no_half_pixel_shift),
    WM_CASE(roialign_opset16_defaults_to_half_pixel),
    WM_CASE(roialign_max_takes_the_largest_weighted_corner),
    WM_CASE(roialign_inverted_roi_in_half_pixel_mode_is_zero),
    WM_CASE(roialign_reads_only_the_samples_over_the_map),
    WM_CASE(roialign_rejects_hostile_rois_and_indices),
    WM_CASE(roialign_static_shape_and_cost),
    WM_CASE(gridsample_bilinear_align_corners),
    WM_CASE(gridsample_nearest_rounds_half_to_even),
    WM_CASE(gridsample_reflection_and_border_far_outside),
    WM_CASE(gridsample_hostile_coordinates),
    WM_CASE(gridsample_single_pixel_reflection_has_no_range),
    WM_CASE(gridsample_empty_input_gives_zeros),
    WM_CASE(gridsample_opset20_volumetric_linear),
    WM_CASE(gridsample_mode_names_follow_the_opset),
    WM_CASE(gridsample_static_shape_cost_and_bad_grids),
    WM_CASE(maxunpool_scatters_flat_indices_over_batch_and_channels),
    WM_CASE(maxunpool_output_shape_pads_each_dim),
    WM_CASE(maxunpool_rejects_hostile_indices_and_shapes),
    WM_CASE(maxunpool_static_shapes),
    WM_CASE(affinegrid_maps_pixel_centers_or_corners),
    WM_CASE(affinegrid_rejects_mismatched_theta_and_size),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
