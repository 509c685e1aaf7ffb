// Tests of the generator family: Constant's attribute forms,
// ConstantOfShape, Range, OneHot, Trilu, EyeLike and the random generators.
#include <math.h>
#include <stdlib.h>

#include "op_fixture.h"
#include "wm_test.h"

WM_TEST(constant_accepts_each_value_attribute_form) {
  for (int c = 0; c < 4; c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 13));
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "Constant", NULL, 0, 1));
    static const int64_t ints[3] = {4, -5, 6};
    static const float floats[2] = {1.5f, -2.0f};
    wm_status_t s = NULL;
    if (c == 0) {
      s = wm_op_fixture_attr_ints(&f, "value_ints", ints, 3);
    } else if (c == 1) {
      s = wm_op_fixture_attr_float(&f, "value_float", 2.5f);
    } else if (c == 2) {
      s = wm_op_fixture_attr_string(&f, "value_string", "hi");
    } else {
      int64_t d[1] = {2};
      wm_shape_t shape = wm_shape_make(1, d);
      wm_tensor_t *t;
      s = wm_tensor_create(WM_DTYPE_FLOAT, &shape, &t);
      if (!s) {
        memcpy(t->data, floats, sizeof(floats));
        s = wm_graph_add_attr_tensor(f.graph, f.node, "value", t);
      }
    }
    if (!s) {
      s = wm_op_fixture_run(&f);
    }
    static const double want_ints[3] = {4, -5, 6};
    static const double want_float[1] = {2.5};
    static const double want_tensor[2] = {1.5, -2};
    bool ok = !s;
    if (ok && c == 0) {
      ok = f.out[0]->dtype == WM_DTYPE_INT64 && f.out[0]->shape.rank == 1 &&
           wm_op_fixture_values_near(f.out[0], want_ints, 3, WM_OP_FIXTURE_TOL);
    } else if (ok && c == 1) {
      ok =
          f.out[0]->dtype == WM_DTYPE_FLOAT && f.out[0]->shape.rank == 0 &&
          wm_op_fixture_values_near(f.out[0], want_float, 1, WM_OP_FIXTURE_TOL);
    } else if (ok && c == 2) {
      ok = f.out[0]->dtype == WM_DTYPE_STRING &&
           strcmp(((char **)f.out[0]->data)[0], "hi") == 0;
    } else if (ok) {
      ok = wm_op_fixture_values_near(f.out[0], want_tensor, 2,
                                     WM_OP_FIXTURE_TOL);
    }
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(constant_rejects_two_values_and_sparse_value) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Constant", NULL, 0, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "value_int", 1));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "value_float", 1.0f));
  wm_status_t s = wm_op_fixture_run(&f);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "has both attributes");

  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Constant", NULL, 0, 1));
  wm_attr_t a;
  memset(&a, 0, sizeof(a));
  a.name = "sparse_value";
  a.type = WM_ATTR_SPARSE_TENSOR;
  s = wm_graph_add_attr(f.graph, f.node, &a);
  if (!s) {
    s = wm_op_fixture_run(&f);
  }
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, UNIMPLEMENTED, "sparse_value");
}

WM_TEST(constant_of_shape_fills_value_and_infers_rank) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t d[1] = {2};
  static const double shape[2] = {2, 3};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_INT64, 1, d, shape));
  const char *in[1] = {"s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "ConstantOfShape", in, 1, 1));
  wm_shape_t one = wm_shape_make(1, (const int64_t[]){1});
  wm_tensor_t *v;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_INT32, &one, &v));
  wm_tensor_set_i64(v, 0, 7);
  WM_CHECK_OK(wm_graph_add_attr_tensor(f.graph, f.node, "value", v));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[6] = {7, 7, 7, 7, 7, 7};
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_INT32 &&
            f.out[0]->shape.rank == 2 &&
            wm_op_fixture_values_near(f.out[0], want, 6, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  // Unknown shape values with a known length: rank known, dims not.
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t n[1] = {3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "s", WM_DTYPE_INT64, 1, n));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "ConstantOfShape", in, 1, 1));
  wm_type_t t;
  s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_FLOAT);
  WM_CHECK_INT_EQ(t.shape.rank, 3);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
}

// Runs Range(start, limit, delta) on scalars of |dtype|.
static wm_status_t run_range(wm_op_fixture_t *f, wm_dtype_t dtype, double start,
                             double limit, double delta) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 13));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "a", dtype, 0, NULL, &start));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "b", dtype, 0, NULL, &limit));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "c", dtype, 0, NULL, &delta));
  const char *in[3] = {"a", "b", "c"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "Range", in, 3, 1));
  return wm_op_fixture_run(f);
}

WM_TEST(range_counts_with_ceil_for_both_signs) {
  wm_op_fixture_t f;
  wm_status_t s = run_range(&f, WM_DTYPE_INT32, 10, 4, -3);
  static const double down[2] = {10, 7};
  bool ok =
      !s && wm_op_fixture_values_near(f.out[0], down, 2, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  s = run_range(&f, WM_DTYPE_FLOAT, 1, 5.5, 1.5);
  static const double up[3] = {1, 2.5, 4};
  ok = !s && wm_op_fixture_values_near(f.out[0], up, 3, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  s = run_range(&f, WM_DTYPE_INT64, 4, 10, -1);
  ok = !s && f.out[0]->count == 0;
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  s = run_range(&f, WM_DTYPE_INT64, 0, 10, 0);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "delta is 0");
}

WM_TEST(onehot_wraps_negative_indices_and_ignores_out_of_range) {
  for (int axis = 0; axis < 2; axis++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 11));
    int64_t d[1] = {3}, vd[1] = {2};
    static const double ind[3] = {0, -1, 5}, depth[1] = {3}, vals[2] = {-1, 9};
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "i", WM_DTYPE_INT64, 1, d, ind));
    WM_CHECK_OK(
        wm_op_fixture_add_const(&f, "d", WM_DTYPE_FLOAT, 0, NULL, depth));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "v", WM_DTYPE_FLOAT, 1, vd, vals));
    const char *in[3] = {"i", "d", "v"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "OneHot", in, 3, 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", axis - 1));
    wm_status_t s = wm_op_fixture_run(&f);
    // Rows per index (axis -1) or per class (axis 0).
    static const double last[9] = {9, -1, -1, -1, -1, 9, -1, -1, -1};
    static const double first[9] = {9, -1, -1, -1, -1, -1, -1, 9, -1};
    bool ok = !s && f.out[0]->shape.rank == 2 &&
              wm_op_fixture_values_near(f.out[0], axis ? first : last, 9,
                                        WM_OP_FIXTURE_TOL);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(trilu_keeps_upper_or_lower_band) {
  for (int upper = 0; upper < 2; upper++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 14));
    int64_t d[2] = {3, 3};
    double kv = upper ? 1 : -1;
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_INT64, 2, d, NULL));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "k", WM_DTYPE_INT64, 0, NULL, &kv));
    const char *in[2] = {"x", "k"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "Trilu", in, 2, 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "upper", upper));
    wm_status_t s = wm_op_fixture_run(&f);
    static const double up[9] = {0, 1, 2, 0, 0, 5, 0, 0, 0};
    static const double low[9] = {0, 0, 0, 3, 0, 0, 6, 7, 0};
    bool ok = !s && wm_op_fixture_values_near(f.out[0], upper ? up : low, 9,
                                              WM_OP_FIXTURE_TOL);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(eyelike_places_shifted_diagonal_in_requested_dtype) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t d[2] = {2, 3};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, d, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "EyeLike", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "k", 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "dtype", WM_DTYPE_INT32));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[6] = {0, 1, 0, 0, 0, 1};
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_INT32 &&
            wm_op_fixture_values_near(f.out[0], want, 6, WM_OP_FIXTURE_TOL);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// Runs RandomUniform of |n| values with |seed| into *out (caller frees).
static wm_status_t uniform(double seed, int64_t n, wm_tensor_t **out) {
  wm_op_fixture_t f;
  WM_RETURN_IF_ERROR(wm_op_fixture_init(&f, 13));
  wm_status_t s = wm_op_fixture_add_node(&f, "RandomUniform", NULL, 0, 1);
  if (!s) {
    s = wm_op_fixture_attr_ints(&f, "shape", &n, 1);
  }
  if (!s) {
    s = wm_op_fixture_attr_float(&f, "seed", (float)seed);
  }
  if (!s) {
    s = wm_op_fixture_attr_float(&f, "low", -2.0f);
  }
  if (!s) {
    s = wm_op_fixture_attr_float(&f, "high", 3.0f);
  }
  if (!s) {
    s = wm_op_fixture_run(&f);
  }
  if (!s) {
    s = wm_tensor_clone(f.out[0], out);
  }
  wm_op_fixture_deinit(&f);
  return s;
}

WM_TEST(random_uniform_is_seeded_and_in_range) {
  wm_tensor_t *a = NULL, *b = NULL, *c = NULL;
  WM_CHECK_OK(uniform(7, 10000, &a));
  WM_CHECK_OK(uniform(7, 10000, &b));
  WM_CHECK_OK(uniform(8, 10000, &c));
  double sum = 0;
  size_t same_c = 0;
  for (size_t i = 0; i < a->count; i++) {
    double v = wm_tensor_get_f64(a, i);
    WM_CHECK(v >= -2.0 && v < 3.0);
    WM_CHECK(v == wm_tensor_get_f64(b, i));  // same seed, same stream
    same_c += v == wm_tensor_get_f64(c, i);
    sum += v;
  }
  WM_CHECK(same_c < 10);                      // another seed differs
  WM_CHECK_DBL_NEAR(sum / 10000, 0.5, 0.05);  // mean of U(-2, 3)
  wm_tensor_destroy(a);
  wm_tensor_destroy(b);
  wm_tensor_destroy(c);
}

WM_TEST(random_normal_like_has_the_moments_asked) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  int64_t d[1] = {20000};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_DOUBLE, 1, d, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "RandomNormalLike", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "mean", 4.0f));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "scale", 0.5f));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "seed", 1.0f));
  wm_status_t s = wm_op_fixture_run(&f);
  double m = 0, v = 0;
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_DOUBLE;
  for (size_t i = 0; ok && i < f.out[0]->count; i++) {
    m += wm_tensor_get_f64(f.out[0], i);
  }
  m /= 20000;
  for (size_t i = 0; ok && i < f.out[0]->count; i++) {
    double e = wm_tensor_get_f64(f.out[0], i) - m;
    v += e * e;
  }
  ok = ok && fabs(m - 4.0) < 0.02 && fabs(sqrt(v / 19999) - 0.5) < 0.02;
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(bernoulli_follows_its_probabilities_and_checks_them) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 15));
  static const double p[4] = {0, 1, 1, 0};
  int64_t d[1] = {4};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "p", WM_DTYPE_FLOAT, 1, d, p));
  const char *in[1] = {"p"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Bernoulli", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "dtype", WM_DTYPE_INT64));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_INT64 &&
            wm_op_fixture_values_near(f.out[0], p, 4, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  WM_CHECK_OK(wm_op_fixture_init(&f, 15));
  static const double bad[2] = {0.5, 1.5};
  d[0] = 2;
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "p", WM_DTYPE_FLOAT, 1, d, bad));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Bernoulli", in, 1, 1));
  ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                "probability 1 is 1.5, want a value in [0, 1]");
  WM_OP_FIXTURE_CHECK_DONE(&f, NULL, ok);
}

WM_TEST(multinomial_samples_the_classes_that_have_mass) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  // Row 0: all mass on class 2; row 1: on class 0.
  static const double logp[6] = {-1e30, -1e30, 0, 0, -1e30, -1e30};
  int64_t d[2] = {2, 3};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, d, logp));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Multinomial", in, 1, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "sample_size", 4));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "dtype", WM_DTYPE_INT64));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[8] = {2, 2, 2, 2, 0, 0, 0, 0};
  int64_t shape[2] = {2, 4};
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 2, shape) &&
            wm_op_fixture_values_near(f.out[0], want, 8, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(random_uniform_needs_a_shape) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 13));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "RandomUniform", NULL, 0, 1));
  bool ok = wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                     "attribute \"shape\" is required");
  WM_OP_FIXTURE_CHECK_DONE(&f, NULL, ok);
}

WM_TEST(range_takes_float16_and_bfloat16_from_opset_27_only) {
  static const wm_dtype_t dtypes[2] = {WM_DTYPE_FLOAT16, WM_DTYPE_BFLOAT16};
  for (int k = 0; k < 2; k++) {
    for (int64_t opset = 13; opset <= 27; opset += 14) {
      wm_op_fixture_t f;
      WM_CHECK_OK(wm_op_fixture_init(&f, opset));
      static const double a = 1, b = 4, c = 1.5;
      WM_CHECK_OK(wm_op_fixture_add_const(&f, "a", dtypes[k], 0, NULL, &a));
      WM_CHECK_OK(wm_op_fixture_add_const(&f, "b", dtypes[k], 0, NULL, &b));
      WM_CHECK_OK(wm_op_fixture_add_const(&f, "c", dtypes[k], 0, NULL, &c));
      const char *in[3] = {"a", "b", "c"};
      WM_CHECK_OK(wm_op_fixture_add_node(&f, "Range", in, 3, 1));
      wm_status_t s = wm_op_fixture_run(&f);
      if (opset < 27) {
        wm_op_fixture_deinit(&f);
        WM_CHECK_ERR(s, INVALID_ARGUMENT, "which the operator does not accept");
        continue;
      }
      static const double want[2] = {1, 2.5};
      bool ok = !s && f.out[0]->dtype == dtypes[k] &&
                wm_op_fixture_values_near(f.out[0], want, 2, 0);
      WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
    }
  }
}

static const wm_test_case_t cases[] = {
    WM_CASE(constant_accepts_each_value_attribute_form),
    WM_CASE(constant_rejects_two_values_and_sparse_value),
    WM_CASE(constant_of_shape_fills_value_and_infers_rank),
    WM_CASE(range_counts_with_ceil_for_both_signs),
    WM_CASE(onehot_wraps_negative_indices_and_ignores_out_of_range),
    WM_CASE(trilu_keeps_upper_or_lower_band),
    WM_CASE(eyelike_places_shifted_diagonal_in_requested_dtype),
    WM_CASE(random_uniform_is_seeded_and_in_range),
    WM_CASE(random_normal_like_has_the_moments_asked),
    WM_CASE(bernoulli_follows_its_probabilities_and_checks_them),
    WM_CASE(multinomial_samples_the_classes_that_have_mass),
    WM_CASE(random_uniform_needs_a_shape),
    WM_CASE(range_takes_float16_and_bfloat16_from_opset_27_only),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
