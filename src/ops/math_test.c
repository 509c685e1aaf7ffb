// Tests of the math family: broadcasting, exact integer arithmetic, opset
// differences, Cast to and from strings, and the errors users can hit.
#include <math.h>
#include <stdlib.h>

#include "op_fixture.h"
#include "wm_test.h"

// Input names of the one-node graphs.
static const char *const names[] = {"x0", "x1", "x2"};

WM_TEST(add_broadcasts_a_row_over_a_matrix) {
  int64_t d23[] = {2, 3}, d3[] = {3};
  double a[] = {1, 2, 3, 4, 5, 6}, b[] = {10, 20, 30};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x0", WM_DTYPE_FLOAT, 2, d23, a));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x1", WM_DTYPE_FLOAT, 1, d3, b));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Add", names, 2, 1));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  WM_CHECK_INT_EQ(f.out[0]->shape.rank, 2);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 5), 36, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 3), 14, 0);
  wm_op_fixture_deinit(&f);
}

WM_TEST(legacy_add_aligns_input_1_at_axis) {
  int64_t d23[] = {2, 3}, d2[] = {2};
  double a[] = {1, 2, 3, 4, 5, 6}, b[] = {10, 20};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 6));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x0", WM_DTYPE_DOUBLE, 2, d23, a));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x1", WM_DTYPE_DOUBLE, 1, d2, b));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Add", names, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "broadcast", 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", 0));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 2), 13, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 3), 24, 0);
  wm_op_fixture_deinit(&f);
}

WM_TEST(int64_and_uint64_arithmetic_stays_exact) {
  int64_t d1[] = {1};
  int64_t a[] = {(INT64_C(1) << 62) + 1}, b[] = {(INT64_C(1) << 62) - 3};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x0", WM_DTYPE_INT64, 1, d1, a));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x1", WM_DTYPE_INT64, 1, d1, b));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Sub", names, 2, 1));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], 0), 4);
  wm_op_fixture_deinit(&f);
  // UINT64_MAX > 1 must hold although the bits read as int64 are -1.
  int64_t ua[] = {-1}, ub[] = {1};
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(
      wm_op_fixture_add_const_i64(&f, "x0", WM_DTYPE_UINT64, 1, d1, ua));
  WM_CHECK_OK(
      wm_op_fixture_add_const_i64(&f, "x1", WM_DTYPE_UINT64, 1, d1, ub));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Greater", names, 2, 1));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  WM_CHECK_INT_EQ(f.out[0]->dtype, WM_DTYPE_BOOL);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], 0), 1);
  wm_op_fixture_deinit(&f);
}

WM_TEST(mod_takes_the_divisor_sign_unless_fmod) {
  int64_t d4[] = {4};
  int64_t a[] = {-4, 7, 5, -7}, b[] = {3, -3, 8, 3};
  int64_t want_mod[] = {2, -2, 5, 2}, want_fmod[] = {-1, 1, 5, -1};
  for (int fm = 0; fm < 2; fm++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 13));
    WM_CHECK_OK(
        wm_op_fixture_add_const_i64(&f, "x0", WM_DTYPE_INT32, 1, d4, a));
    WM_CHECK_OK(
        wm_op_fixture_add_const_i64(&f, "x1", WM_DTYPE_INT32, 1, d4, b));
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "Mod", names, 2, 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "fmod", fm));
    WM_CHECK_OK(wm_op_fixture_run(&f));
    for (size_t i = 0; i < 4; i++) {
      WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], i),
                      fm ? want_fmod[i] : want_mod[i]);
    }
    wm_op_fixture_deinit(&f);
  }
}

WM_TEST(integer_division_by_zero_is_an_error) {
  int64_t d2[] = {2};
  int64_t a[] = {1, 2}, b[] = {1, 0};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x0", WM_DTYPE_INT32, 1, d2, a));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x1", WM_DTYPE_INT32, 1, d2, b));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Div", names, 2, 1));
  WM_CHECK_ERR(wm_op_fixture_run(&f), INVALID_ARGUMENT,
               "input 1 element 1 is 0 (integer division by zero)");
  wm_op_fixture_deinit(&f);
}

WM_TEST(mean_of_three_inputs_broadcasts) {
  int64_t d2[] = {2}, d1[] = {1};
  double a[] = {1, 2}, b[] = {3}, c[] = {5, 7};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x0", WM_DTYPE_FLOAT, 1, d2, a));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x1", WM_DTYPE_FLOAT, 1, d1, b));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x2", WM_DTYPE_FLOAT, 1, d2, c));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Mean", names, 3, 1));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 0), 3, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 1), 4, 0);
  wm_op_fixture_deinit(&f);
}

WM_TEST(round_ties_to_even) {
  int64_t d4[] = {4};
  double a[] = {0.5, 1.5, 2.5, -2.5};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x0", WM_DTYPE_FLOAT, 1, d4, a));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Round", names, 1, 1));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  bool ok =
      wm_op_fixture_values_near(f.out[0], (const double[]){0, 2, 2, -2}, 4, 0);
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(clip_reads_attributes_before_opset_11_and_inputs_since) {
  int64_t d3[] = {3};
  double a[] = {-2, 0.25, 2};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 6));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x0", WM_DTYPE_FLOAT, 1, d3, a));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Clip", names, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "min", -0.5f));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 0), -0.5, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 2), 2, 0);
  wm_op_fixture_deinit(&f);
  int64_t v[] = {-2, 5, 100}, hi[] = {50};
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x0", WM_DTYPE_INT8, 1, d3, v));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x2", WM_DTYPE_INT8, 0, d3, hi));
  const char *ins[] = {"x0", "", "x2"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Clip", ins, 3, 1));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], 0), -2);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], 2), 50);
  wm_op_fixture_deinit(&f);
}

WM_TEST(cast_float_to_string_prints_like_numpy) {
  int64_t d6[] = {6};
  double a[] = {0.039187793f, 1.0, 1e-5f, 100.0, 1.5e16, -0.5};
  const char *want[] = {"0.039187793", "1.0",     "1e-05",
                        "100.0",       "1.5e+16", "-0.5"};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x0", WM_DTYPE_FLOAT, 1, d6, a));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Cast", names, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "to", WM_DTYPE_STRING));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  bool ok = wm_op_fixture_strings_are(f.out[0], want, 6);
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(cast_string_to_float_parses_inf_and_rejects_words) {
  int64_t d3[] = {3};
  const char *text[] = {"+INF", "NaN", "1e-7"};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_strings(&f, "x0", 1, d3, text));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Cast", names, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "to", WM_DTYPE_FLOAT));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  WM_CHECK(isinf(wm_tensor_get_f64(f.out[0], 0)));
  WM_CHECK(isnan(wm_tensor_get_f64(f.out[0], 1)));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 2), 1e-7f, 0);
  wm_tensor_t *x =
      f.graph->values[wm_graph_find_value(f.graph, "x0")].initializer;
  WM_CHECK_OK(wm_tensor_set_string(x, 1, "abc", 3));
  WM_CHECK_ERR(wm_op_fixture_run(&f), INVALID_ARGUMENT,
               "element 1 \"abc\" is not a valid float");
  wm_op_fixture_deinit(&f);
}

WM_TEST(cast_float_to_int_saturates_and_maps_nan_to_zero) {
  int64_t d3[] = {3};
  double a[] = {1e30, NAN, -3.7};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x0", WM_DTYPE_DOUBLE, 1, d3, a));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Cast", names, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "to", WM_DTYPE_INT64));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], 0), INT64_MAX);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], 1), 0);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], 2), -3);
  wm_op_fixture_deinit(&f);
}

WM_TEST(cast_opset_1_reads_the_type_name) {
  int64_t d1[] = {1};
  double a[] = {2.75};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 1));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x0", WM_DTYPE_FLOAT, 1, d1, a));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Cast", names, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "to", "INT32"));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  WM_CHECK_INT_EQ(f.out[0]->dtype, WM_DTYPE_INT32);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], 0), 2);
  wm_op_fixture_deinit(&f);
}

WM_TEST(bitshift_rejects_an_unknown_direction) {
  int64_t d1[] = {1}, a[] = {1};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x0", WM_DTYPE_UINT8, 1, d1, a));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x1", WM_DTYPE_UINT8, 1, d1, a));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "BitShift", names, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "direction", "UP"));
  WM_CHECK_ERR(wm_op_fixture_run(&f), INVALID_ARGUMENT,
               "direction is \"UP\", want \"LEFT\" or \"RIGHT\"");
  wm_op_fixture_deinit(&f);
}

WM_TEST(static_inference_broadcasts_unknown_dims) {
  int64_t da[] = {-1, 3}, db[] = {4, 1, 1};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 14));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x0", WM_DTYPE_FLOAT, 2, da));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x1", WM_DTYPE_FLOAT, 3, db));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Mul", names, 2, 1));
  wm_type_t t;
  wm_op_cost_t cost;
  wm_status_t s = wm_op_fixture_cost(&f, &t, &cost);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  char buf[64];
  WM_CHECK_STR_EQ(wm_shape_format(&t.shape, buf, sizeof(buf)), "[4,?,3]");
  WM_CHECK_DBL_NEAR(cost.flops, 0, 0);  // unknown size: no work claimed
}

// Runs Cast of |n| doubles (as float) to |to| at |opset| with the given
// saturate (-1: absent) and round_mode (NULL: absent) attributes.
static wm_status_t run_cast_to(wm_op_fixture_t *f, int64_t opset, wm_dtype_t to,
                               const double *vals, int64_t n, int64_t saturate,
                               const char *round_mode) {
  int64_t dims[1] = {n};
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, opset));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "x0", WM_DTYPE_FLOAT, 1, dims, vals));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "Cast", names, 1, 1));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_int(f, "to", to));
  if (saturate >= 0) {
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_int(f, "saturate", saturate));
  }
  if (round_mode) {
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_string(f, "round_mode", round_mode));
  }
  return wm_op_fixture_run(f);
}

WM_TEST(cast_to_float8_saturates_unless_told_not_to) {
  double a[] = {1e6, -INFINITY, NAN, 0.47892547, -1e-7};
  wm_op_fixture_t f;
  WM_CHECK_OK(run_cast_to(&f, 19, WM_DTYPE_FLOAT8E4M3FN, a, 5, -1, NULL));
  const uint8_t *y = f.out[0]->data;
  WM_CHECK_INT_EQ(f.out[0]->dtype, WM_DTYPE_FLOAT8E4M3FN);
  WM_CHECK_INT_EQ(y[0], 0x7e);
  WM_CHECK_INT_EQ(y[1], 0xfe);
  WM_CHECK_INT_EQ(y[2], 0x7f);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], 3), 0.46875, 0);
  WM_CHECK_INT_EQ(y[4], 0x80);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(run_cast_to(&f, 19, WM_DTYPE_FLOAT8E5M2, a, 5, 0, NULL));
  y = f.out[0]->data;
  WM_CHECK_INT_EQ(y[0], 0x7c);  // inf
  WM_CHECK_INT_EQ(y[1], 0xfc);  // -inf
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(run_cast_to(&f, 19, WM_DTYPE_FLOAT8E4M3FNUZ, a, 5, 0, NULL));
  y = f.out[0]->data;
  WM_CHECK_INT_EQ(y[0], 0x80);  // the one NaN
  WM_CHECK_INT_EQ(y[4], 0x00);  // no -0
  wm_op_fixture_deinit(&f);
}

WM_TEST(cast_to_e8m0_follows_round_mode) {
  double a[] = {1.1, 1.6, 0.124};
  wm_op_fixture_t f;
  static const struct {
    const char *mode;
    double want[3];
  } cases[] = {
      {NULL, {2, 2, 0.125}},
      {"down", {1, 1, 0.0625}},
      {"nearest", {1, 2, 0.125}},
  };
  for (size_t c = 0; c < 3; c++) {
    WM_CHECK_OK(
        run_cast_to(&f, 24, WM_DTYPE_FLOAT8E8M0, a, 3, -1, cases[c].mode));
    for (size_t i = 0; i < 3; i++) {
      WM_CHECK_DBL_NEAR(wm_tensor_get_f64(f.out[0], i), cases[c].want[i], 0);
    }
    wm_op_fixture_deinit(&f);
  }
  WM_CHECK_ERR(run_cast_to(&f, 24, WM_DTYPE_FLOAT8E8M0, a, 3, -1, "sideways"),
               INVALID_ARGUMENT,
               "attribute \"round_mode\" is \"sideways\", want \"up\"");
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(run_cast_to(&f, 19, WM_DTYPE_FLOAT8E5M2, a, 3, 2, NULL),
               INVALID_ARGUMENT,
               "attribute \"saturate\" must be the int 0 or 1");
  wm_op_fixture_deinit(&f);
}

WM_TEST(cast_to_4_and_2_bit_ints_wraps_ints_and_zeroes_out_of_range_floats) {
  int64_t d4[] = {4}, a[] = {9, -9, 7, 300};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 21));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x0", WM_DTYPE_INT32, 1, d4, a));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Cast", names, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "to", WM_DTYPE_INT4));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  int64_t want[] = {-7, 7, 7, -4};
  for (size_t i = 0; i < 4; i++) {
    WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], i), want[i]);
  }
  wm_op_fixture_deinit(&f);
  double b[] = {-3, 1.5, 2.5, 4};
  WM_CHECK_OK(run_cast_to(&f, 25, WM_DTYPE_UINT2, b, 4, -1, NULL));
  int64_t want2[] = {0, 2, 2, 0};
  for (size_t i = 0; i < 4; i++) {
    WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], i), want2[i]);
  }
  wm_op_fixture_deinit(&f);
}

WM_TEST(cast_from_float4_and_int2_reads_exact_values) {
  double a[] = {-6, 0.5, 5, NAN};
  wm_op_fixture_t f;
  WM_CHECK_OK(run_cast_to(&f, 23, WM_DTYPE_FLOAT4E2M1, a, 4, -1, NULL));
  wm_tensor_t *q;
  WM_CHECK_OK(wm_tensor_clone(f.out[0], &q));
  wm_op_fixture_deinit(&f);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(q, 0), -6, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(q, 1), 0.5, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(q, 2), 4, 0);  // ties to even
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(q, 3), 0, 0);
  wm_tensor_destroy(q);
  // int2 to string prints the sign-extended value.
  int64_t d2[] = {2}, v[] = {-2, 1};
  WM_CHECK_OK(wm_op_fixture_init(&f, 25));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x0", WM_DTYPE_INT2, 1, d2, v));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Cast", names, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "to", WM_DTYPE_STRING));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  WM_CHECK_STR_EQ(((char **)f.out[0]->data)[0], "-2");
  WM_CHECK_STR_EQ(((char **)f.out[0]->data)[1], "1");
  wm_op_fixture_deinit(&f);
}

// Runs BitShift on int8 |x| and |n| in |direction| at |opset|.
static wm_status_t run_shift(wm_op_fixture_t *f, int64_t opset,
                             const char *direction, const int64_t *x,
                             const int64_t *n) {
  int64_t d4[] = {4};
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, opset));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const_i64(f, "x0", WM_DTYPE_INT8, 1, d4, x));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const_i64(f, "x1", WM_DTYPE_INT8, 1, d4, n));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "BitShift", names, 2, 1));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_string(f, "direction", direction));
  return wm_op_fixture_run(f);
}

WM_TEST(bitshift_on_signed_ints_is_arithmetic_from_opset_28) {
  int64_t x[] = {-8, -8, 64, -1}, n[] = {1, 8, 1, -1};
  wm_op_fixture_t f;
  WM_CHECK_OK(run_shift(&f, 28, "RIGHT", x, n));
  int64_t want_r[] = {-4, -1, 32, -1};
  for (size_t i = 0; i < 4; i++) {
    WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], i), want_r[i]);
  }
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(run_shift(&f, 28, "LEFT", x, n));
  int64_t want_l[] = {-16, 0, -128, 0};
  for (size_t i = 0; i < 4; i++) {
    WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], i), want_l[i]);
  }
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(run_shift(&f, 27, "LEFT", x, n), INVALID_ARGUMENT,
               "input 0 has type int8");
  wm_op_fixture_deinit(&f);
}

WM_TEST(bitshift_unsigned_counts_past_the_width_give_zero) {
  int64_t d3[] = {3}, x[] = {-1, 255, 1}, n[] = {-1, 8, 63};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 11));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x0", WM_DTYPE_UINT64, 1, d3, x));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x1", WM_DTYPE_UINT64, 1, d3, n));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "BitShift", names, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "direction", "LEFT"));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], 0), 0);  // count 2^64 - 1
  WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], 1), 255 << 8);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], 2), INT64_MIN);
  wm_op_fixture_deinit(&f);
}

WM_TEST(mod_fmod_0_on_floats_takes_the_divisor_sign_from_opset_28) {
  int64_t d6[] = {6};
  double a[] = {-4.5, 0, -3, 3, INFINITY, 1};
  double b[] = {2, -2, INFINITY, -INFINITY, 2, 0};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 27));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x0", WM_DTYPE_DOUBLE, 1, d6, a));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x1", WM_DTYPE_DOUBLE, 1, d6, b));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Mod", names, 2, 1));
  WM_CHECK_ERR(wm_op_fixture_run(&f), INVALID_ARGUMENT,
               "fmod must be 1 for double inputs before opset 28");
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(wm_op_fixture_init(&f, 28));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x0", WM_DTYPE_DOUBLE, 1, d6, a));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x1", WM_DTYPE_DOUBLE, 1, d6, b));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Mod", names, 2, 1));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  const double *y = f.out[0]->data;
  WM_CHECK_DBL_NEAR(y[0], 1.5, 0);
  WM_CHECK(y[1] == 0 && signbit(y[1]));  // zero of the divisor's sign
  WM_CHECK(isinf(y[2]) && y[2] > 0);     // signs differ: the divisor
  WM_CHECK(isinf(y[3]) && y[3] < 0);
  WM_CHECK(isnan(y[4]) && isnan(y[5]));
  wm_op_fixture_deinit(&f);
}

WM_TEST(equal_compares_strings_from_opset_19) {
  int64_t d2[] = {2}, d1[] = {1};
  const char *a[] = {"x", "y"}, *b[] = {"y"};
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 19));
  WM_CHECK_OK(wm_op_fixture_add_strings(&f, "x0", 1, d2, a));
  WM_CHECK_OK(wm_op_fixture_add_strings(&f, "x1", 1, d1, b));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Equal", names, 2, 1));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  WM_CHECK_INT_EQ(f.out[0]->dtype, WM_DTYPE_BOOL);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], 0), 0);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(f.out[0], 1), 1);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(wm_op_fixture_init(&f, 18));
  WM_CHECK_OK(wm_op_fixture_add_strings(&f, "x0", 1, d2, a));
  WM_CHECK_OK(wm_op_fixture_add_strings(&f, "x1", 1, d1, b));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Equal", names, 2, 1));
  WM_CHECK_ERR(wm_op_fixture_run(&f), INVALID_ARGUMENT,
               "input 0 has type string");
  wm_op_fixture_deinit(&f);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(add_broadcasts_a_row_over_a_matrix),
      WM_CASE(legacy_add_aligns_input_1_at_axis),
      WM_CASE(int64_and_uint64_arithmetic_stays_exact),
      WM_CASE(mod_takes_the_divisor_sign_unless_fmod),
      WM_CASE(integer_division_by_zero_is_an_error),
      WM_CASE(mean_of_three_inputs_broadcasts),
      WM_CASE(round_ties_to_even),
      WM_CASE(clip_reads_attributes_before_opset_11_and_inputs_since),
      WM_CASE(cast_float_to_string_prints_like_numpy),
      WM_CASE(cast_string_to_float_parses_inf_and_rejects_words),
      WM_CASE(cast_float_to_int_saturates_and_maps_nan_to_zero),
      WM_CASE(cast_opset_1_reads_the_type_name),
      WM_CASE(bitshift_rejects_an_unknown_direction),
      WM_CASE(static_inference_broadcasts_unknown_dims),
      WM_CASE(cast_to_float8_saturates_unless_told_not_to),
      WM_CASE(cast_to_e8m0_follows_round_mode),
      WM_CASE(
          cast_to_4_and_2_bit_ints_wraps_ints_and_zeroes_out_of_range_floats),
      WM_CASE(cast_from_float4_and_int2_reads_exact_values),
      WM_CASE(bitshift_on_signed_ints_is_arithmetic_from_opset_28),
      WM_CASE(bitshift_unsigned_counts_past_the_width_give_zero),
      WM_CASE(mod_fmod_0_on_floats_takes_the_divisor_sign_from_opset_28),
      WM_CASE(equal_compares_strings_from_opset_19),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
