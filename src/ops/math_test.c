// Tests of the math family: broadcasting, exact integer arithmetic, opset
// differences, Cast to and from strings, and the errors users can hit.
#include <math.h>
#include <stdlib.h>

#include "ops/ops.h"
#include "wm_test.h"

// Makes a tensor of |dtype| from doubles, or NULL on failure.
static wm_tensor_t *tensor_f(wm_dtype_t dtype, int32_t rank,
                             const int64_t *dims, const double *v) {
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

// Makes an integer tensor of |dtype| from int64 values.
static wm_tensor_t *tensor_i(wm_dtype_t dtype, int32_t rank,
                             const int64_t *dims, const int64_t *v) {
  wm_shape_t s = wm_shape_make(rank, dims);
  wm_tensor_t *t = NULL;
  wm_status_t st = wm_tensor_create(dtype, &s, &t);
  if (st) {
    wm_status_free(st);
    return NULL;
  }
  for (size_t i = 0; i < t->count; i++) {
    wm_tensor_set_i64(t, i, v[i]);
  }
  return t;
}

// Builds a graph with one |op| node at |opset| whose inputs are the
// initializers |ins| (taken; NULL entries are omitted inputs).
static wm_status_t build(const char *op, int64_t opset, wm_tensor_t **ins,
                         int32_t n, wm_graph_t **out) {
  static const char *const names[] = {"x0", "x1", "x2", "x3"};
  const char *inputs[4];
  const char *outputs[] = {"y"};
  WM_RETURN_IF_ERROR(wm_graph_create("t", NULL, out));
  WM_RETURN_IF_ERROR(wm_graph_set_opset(*out, "", opset));
  for (int32_t k = 0; k < n; k++) {
    inputs[k] = ins[k] ? names[k] : "";
    if (ins[k]) {
      WM_RETURN_IF_ERROR(
          wm_graph_add_initializer(*out, names[k], ins[k], NULL));
    }
  }
  return wm_graph_add_node(*out, op, "", "n", inputs, n, outputs, 1, NULL);
}

// Runs node 0 of |g| on the host; *out receives output 0.
static wm_status_t execute(wm_graph_t *g, wm_tensor_t **out) {
  *out = NULL;
  wm_op_ctx_t ctx;
  WM_RETURN_IF_ERROR(wm_op_ctx_init(&ctx, g, 0));
  const wm_op_def_t *def;
  wm_status_t st = wm_op_find_def(&ctx, &def);
  if (!st) {
    st = wm_op_execute(def, &ctx);
  }
  *out = ctx.out[0];
  wm_op_ctx_deinit(&ctx);
  return st;
}

WM_TEST(add_broadcasts_a_row_over_a_matrix) {
  int64_t d23[] = {2, 3}, d3[] = {3};
  double a[] = {1, 2, 3, 4, 5, 6}, b[] = {10, 20, 30};
  wm_tensor_t *ins[] = {tensor_f(WM_DTYPE_FLOAT, 2, d23, a),
                        tensor_f(WM_DTYPE_FLOAT, 1, d3, b)};
  wm_graph_t *g;
  wm_tensor_t *y;
  WM_CHECK_OK(build("Add", 14, ins, 2, &g));
  WM_CHECK_OK(execute(g, &y));
  WM_CHECK_INT_EQ(y->shape.rank, 2);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 5), 36, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 3), 14, 0);
  wm_tensor_destroy(y);
  wm_graph_destroy(g);
}

WM_TEST(legacy_add_aligns_input_1_at_axis) {
  int64_t d23[] = {2, 3}, d2[] = {2};
  double a[] = {1, 2, 3, 4, 5, 6}, b[] = {10, 20};
  wm_tensor_t *ins[] = {tensor_f(WM_DTYPE_DOUBLE, 2, d23, a),
                        tensor_f(WM_DTYPE_DOUBLE, 1, d2, b)};
  wm_graph_t *g;
  wm_tensor_t *y;
  WM_CHECK_OK(build("Add", 6, ins, 2, &g));
  WM_CHECK_OK(wm_graph_add_attr_int(g, 0, "broadcast", 1));
  WM_CHECK_OK(wm_graph_add_attr_int(g, 0, "axis", 0));
  WM_CHECK_OK(execute(g, &y));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 2), 13, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 3), 24, 0);
  wm_tensor_destroy(y);
  wm_graph_destroy(g);
}

WM_TEST(int64_and_uint64_arithmetic_stays_exact) {
  int64_t d1[] = {1};
  int64_t a[] = {(INT64_C(1) << 62) + 1}, b[] = {(INT64_C(1) << 62) - 3};
  wm_tensor_t *ins[] = {tensor_i(WM_DTYPE_INT64, 1, d1, a),
                        tensor_i(WM_DTYPE_INT64, 1, d1, b)};
  wm_graph_t *g;
  wm_tensor_t *y;
  WM_CHECK_OK(build("Sub", 14, ins, 2, &g));
  WM_CHECK_OK(execute(g, &y));
  WM_CHECK_INT_EQ(wm_tensor_get_i64(y, 0), 4);
  wm_tensor_destroy(y);
  wm_graph_destroy(g);
  // UINT64_MAX > 1 must hold although the bits read as int64 are -1.
  int64_t ua[] = {-1}, ub[] = {1};
  wm_tensor_t *uins[] = {tensor_i(WM_DTYPE_UINT64, 1, d1, ua),
                         tensor_i(WM_DTYPE_UINT64, 1, d1, ub)};
  WM_CHECK_OK(build("Greater", 13, uins, 2, &g));
  WM_CHECK_OK(execute(g, &y));
  WM_CHECK_INT_EQ(y->dtype, WM_DTYPE_BOOL);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(y, 0), 1);
  wm_tensor_destroy(y);
  wm_graph_destroy(g);
}

WM_TEST(mod_takes_the_divisor_sign_unless_fmod) {
  int64_t d4[] = {4};
  int64_t a[] = {-4, 7, 5, -7}, b[] = {3, -3, 8, 3};
  int64_t want_mod[] = {2, -2, 5, 2}, want_fmod[] = {-1, 1, 5, -1};
  for (int fm = 0; fm < 2; fm++) {
    wm_tensor_t *ins[] = {tensor_i(WM_DTYPE_INT32, 1, d4, a),
                          tensor_i(WM_DTYPE_INT32, 1, d4, b)};
    wm_graph_t *g;
    wm_tensor_t *y;
    WM_CHECK_OK(build("Mod", 13, ins, 2, &g));
    WM_CHECK_OK(wm_graph_add_attr_int(g, 0, "fmod", fm));
    WM_CHECK_OK(execute(g, &y));
    for (size_t i = 0; i < 4; i++) {
      WM_CHECK_INT_EQ(wm_tensor_get_i64(y, i), fm ? want_fmod[i] : want_mod[i]);
    }
    wm_tensor_destroy(y);
    wm_graph_destroy(g);
  }
}

WM_TEST(integer_division_by_zero_is_an_error) {
  int64_t d2[] = {2};
  int64_t a[] = {1, 2}, b[] = {1, 0};
  wm_tensor_t *ins[] = {tensor_i(WM_DTYPE_INT32, 1, d2, a),
                        tensor_i(WM_DTYPE_INT32, 1, d2, b)};
  wm_graph_t *g;
  wm_tensor_t *y;
  WM_CHECK_OK(build("Div", 14, ins, 2, &g));
  WM_CHECK_ERR(execute(g, &y), INVALID_ARGUMENT,
               "input 1 element 1 is 0 (integer division by zero)");
  wm_tensor_destroy(y);
  wm_graph_destroy(g);
}

WM_TEST(mean_of_three_inputs_broadcasts) {
  int64_t d2[] = {2}, d1[] = {1};
  double a[] = {1, 2}, b[] = {3}, c[] = {5, 7};
  wm_tensor_t *ins[] = {tensor_f(WM_DTYPE_FLOAT, 1, d2, a),
                        tensor_f(WM_DTYPE_FLOAT, 1, d1, b),
                        tensor_f(WM_DTYPE_FLOAT, 1, d2, c)};
  wm_graph_t *g;
  wm_tensor_t *y;
  WM_CHECK_OK(build("Mean", 13, ins, 3, &g));
  WM_CHECK_OK(execute(g, &y));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 0), 3, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 1), 4, 0);
  wm_tensor_destroy(y);
  wm_graph_destroy(g);
}

WM_TEST(round_ties_to_even) {
  int64_t d4[] = {4};
  double a[] = {0.5, 1.5, 2.5, -2.5};
  wm_tensor_t *ins[] = {tensor_f(WM_DTYPE_FLOAT, 1, d4, a)};
  wm_graph_t *g;
  wm_tensor_t *y;
  WM_CHECK_OK(build("Round", 11, ins, 1, &g));
  WM_CHECK_OK(execute(g, &y));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 0), 0, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 1), 2, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 2), 2, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 3), -2, 0);
  wm_tensor_destroy(y);
  wm_graph_destroy(g);
}

WM_TEST(clip_reads_attributes_before_opset_11_and_inputs_since) {
  int64_t d3[] = {3};
  double a[] = {-2, 0.25, 2};
  wm_tensor_t *ins[] = {tensor_f(WM_DTYPE_FLOAT, 1, d3, a)};
  wm_graph_t *g;
  wm_tensor_t *y;
  WM_CHECK_OK(build("Clip", 6, ins, 1, &g));
  WM_CHECK_OK(wm_graph_add_attr_float(g, 0, "min", -0.5f));
  WM_CHECK_OK(execute(g, &y));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 0), -0.5, 0);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 2), 2, 0);
  wm_tensor_destroy(y);
  wm_graph_destroy(g);
  int64_t v[] = {-2, 5, 100}, hi[] = {50};
  wm_tensor_t *ins13[] = {tensor_i(WM_DTYPE_INT8, 1, d3, v), NULL,
                          tensor_i(WM_DTYPE_INT8, 0, d3, hi)};
  WM_CHECK_OK(build("Clip", 13, ins13, 3, &g));
  WM_CHECK_OK(execute(g, &y));
  WM_CHECK_INT_EQ(wm_tensor_get_i64(y, 0), -2);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(y, 2), 50);
  wm_tensor_destroy(y);
  wm_graph_destroy(g);
}

WM_TEST(cast_float_to_string_prints_like_numpy) {
  int64_t d6[] = {6};
  double a[] = {0.039187793f, 1.0, 1e-5f, 100.0, 1.5e16, -0.5};
  const char *want[] = {"0.039187793", "1.0",     "1e-05",
                        "100.0",       "1.5e+16", "-0.5"};
  wm_tensor_t *ins[] = {tensor_f(WM_DTYPE_FLOAT, 1, d6, a)};
  wm_graph_t *g;
  wm_tensor_t *y;
  WM_CHECK_OK(build("Cast", 13, ins, 1, &g));
  WM_CHECK_OK(wm_graph_add_attr_int(g, 0, "to", WM_DTYPE_STRING));
  WM_CHECK_OK(execute(g, &y));
  for (size_t i = 0; i < 6; i++) {
    WM_CHECK_STR_EQ(((char **)y->data)[i], want[i]);
  }
  wm_tensor_destroy(y);
  wm_graph_destroy(g);
}

WM_TEST(cast_string_to_float_parses_inf_and_rejects_words) {
  int64_t d3[] = {3};
  wm_shape_t s = wm_shape_make(1, d3);
  const char *text[] = {"+INF", "NaN", "1e-7"};
  wm_tensor_t *x;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_STRING, &s, &x));
  for (size_t i = 0; i < 3; i++) {
    WM_CHECK_OK(wm_tensor_set_string(x, i, text[i], strlen(text[i])));
  }
  wm_tensor_t *ins[] = {x};
  wm_graph_t *g;
  wm_tensor_t *y;
  WM_CHECK_OK(build("Cast", 13, ins, 1, &g));
  WM_CHECK_OK(wm_graph_add_attr_int(g, 0, "to", WM_DTYPE_FLOAT));
  WM_CHECK_OK(execute(g, &y));
  WM_CHECK(isinf(wm_tensor_get_f64(y, 0)));
  WM_CHECK(isnan(wm_tensor_get_f64(y, 1)));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 2), 1e-7f, 0);
  wm_tensor_destroy(y);
  WM_CHECK_OK(wm_tensor_set_string(x, 1, "abc", 3));
  WM_CHECK_ERR(execute(g, &y), INVALID_ARGUMENT,
               "element 1 \"abc\" is not a valid float");
  wm_tensor_destroy(y);
  wm_graph_destroy(g);
}

WM_TEST(cast_float_to_int_saturates_and_maps_nan_to_zero) {
  int64_t d3[] = {3};
  double a[] = {1e30, NAN, -3.7};
  wm_tensor_t *ins[] = {tensor_f(WM_DTYPE_DOUBLE, 1, d3, a)};
  wm_graph_t *g;
  wm_tensor_t *y;
  WM_CHECK_OK(build("Cast", 13, ins, 1, &g));
  WM_CHECK_OK(wm_graph_add_attr_int(g, 0, "to", WM_DTYPE_INT64));
  WM_CHECK_OK(execute(g, &y));
  WM_CHECK_INT_EQ(wm_tensor_get_i64(y, 0), INT64_MAX);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(y, 1), 0);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(y, 2), -3);
  wm_tensor_destroy(y);
  wm_graph_destroy(g);
}

WM_TEST(cast_opset_1_reads_the_type_name) {
  int64_t d1[] = {1};
  double a[] = {2.75};
  wm_tensor_t *ins[] = {tensor_f(WM_DTYPE_FLOAT, 1, d1, a)};
  wm_graph_t *g;
  wm_tensor_t *y;
  WM_CHECK_OK(build("Cast", 1, ins, 1, &g));
  WM_CHECK_OK(wm_graph_add_attr_string(g, 0, "to", "INT32"));
  WM_CHECK_OK(execute(g, &y));
  WM_CHECK_INT_EQ(y->dtype, WM_DTYPE_INT32);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(y, 0), 2);
  wm_tensor_destroy(y);
  wm_graph_destroy(g);
}

WM_TEST(bitshift_rejects_an_unknown_direction) {
  int64_t d1[] = {1}, a[] = {1};
  wm_tensor_t *ins[] = {tensor_i(WM_DTYPE_UINT8, 1, d1, a),
                        tensor_i(WM_DTYPE_UINT8, 1, d1, a)};
  wm_graph_t *g;
  wm_tensor_t *y;
  WM_CHECK_OK(build("BitShift", 11, ins, 2, &g));
  WM_CHECK_OK(wm_graph_add_attr_string(g, 0, "direction", "UP"));
  WM_CHECK_ERR(execute(g, &y), INVALID_ARGUMENT,
               "direction is \"UP\", want \"LEFT\" or \"RIGHT\"");
  wm_tensor_destroy(y);
  wm_graph_destroy(g);
}

WM_TEST(static_inference_broadcasts_unknown_dims) {
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("t", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 14));
  int64_t da[] = {-1, 3}, db[] = {4, 1, 1};
  wm_shape_t sa = wm_shape_make(2, da), sb = wm_shape_make(3, db);
  wm_type_t ta = wm_type_tensor(WM_DTYPE_FLOAT, &sa);
  wm_type_t tb = wm_type_tensor(WM_DTYPE_FLOAT, &sb);
  WM_CHECK_OK(wm_graph_add_input(g, "a", &ta, NULL));
  WM_CHECK_OK(wm_graph_add_input(g, "b", &tb, NULL));
  const char *ins[] = {"a", "b"}, *outs[] = {"y"};
  WM_CHECK_OK(wm_graph_add_node(g, "Mul", "", "m", ins, 2, outs, 1, NULL));
  wm_op_ctx_t ctx;
  WM_CHECK_OK(wm_op_ctx_init(&ctx, g, 0));
  const wm_op_def_t *def = wm_ops_find("", "Mul", 14);
  WM_CHECK(def != NULL);
  WM_CHECK_OK(def->infer(&ctx));
  char buf[64];
  WM_CHECK_STR_EQ(wm_shape_format(&ctx.out_types[0].shape, buf, sizeof(buf)),
                  "[4,?,3]");
  wm_op_cost_t cost;
  wm_op_cost(def, &ctx, &cost);
  WM_CHECK_DBL_NEAR(cost.flops, 0, 0);  // unknown size: no work claimed
  wm_op_ctx_deinit(&ctx);
  wm_graph_destroy(g);
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
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
