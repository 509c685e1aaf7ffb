// Tests of the generator family: Constant's attribute forms,
// ConstantOfShape, Range, OneHot, Trilu and EyeLike.
#include <math.h>
#include <stdlib.h>

#include "ops/ops.h"
#include "wm_test.h"

// A one-node graph under construction and its results.
typedef struct fixture {
  wm_graph_t *g;        // the graph
  int32_t node;         // the node
  wm_tensor_t *out[2];  // outputs after run_node
} fixture_t;

static wm_status_t fixture_init(fixture_t *f, int64_t opset) {
  memset(f, 0, sizeof(*f));
  WM_RETURN_IF_ERROR(wm_graph_create("test", NULL, &f->g));
  return wm_graph_set_opset(f->g, "", opset);
}

static void fixture_deinit(fixture_t *f) {
  for (int i = 0; i < 2; i++) {
    wm_tensor_destroy(f->out[i]);
  }
  wm_graph_destroy(f->g);
}

// Adds a float initializer |name| of |shape| holding |vals| (or 0..n-1).
static wm_status_t add_const(fixture_t *f, const char *name, wm_dtype_t dtype,
                             int32_t rank, const int64_t *dims,
                             const double *vals) {
  wm_shape_t s = wm_shape_make(rank, dims);
  wm_tensor_t *t;
  WM_RETURN_IF_ERROR(wm_tensor_create(dtype, &s, &t));
  for (size_t i = 0; i < t->count; i++) {
    wm_tensor_set_f64(t, i, vals ? vals[i] : (double)i);
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
  static const char *const outs[2] = {"y0", "y1"};
  return wm_graph_add_node(f->g, op, "", "n", inputs, n_in, outs, n_out,
                           &f->node);
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
  for (int32_t i = 0; i < ctx.n_out && i < 2; i++) {
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

WM_TEST(constant_accepts_each_value_attribute_form) {
  for (int c = 0; c < 4; c++) {
    fixture_t f;
    WM_CHECK_OK(fixture_init(&f, 13));
    WM_CHECK_OK(add_node(&f, "Constant", NULL, 0, 1));
    static const int64_t ints[3] = {4, -5, 6};
    static const float floats[2] = {1.5f, -2.0f};
    wm_status_t s = NULL;
    if (c == 0) {
      s = wm_graph_add_attr_ints(f.g, f.node, "value_ints", ints, 3);
    } else if (c == 1) {
      s = wm_graph_add_attr_float(f.g, f.node, "value_float", 2.5f);
    } else if (c == 2) {
      s = wm_graph_add_attr_string(f.g, f.node, "value_string", "hi");
    } else {
      int64_t d[1] = {2};
      wm_shape_t shape = wm_shape_make(1, d);
      wm_tensor_t *t;
      s = wm_tensor_create(WM_DTYPE_FLOAT, &shape, &t);
      if (!s) {
        memcpy(t->data, floats, sizeof(floats));
        s = wm_graph_add_attr_tensor(f.g, f.node, "value", t);
      }
    }
    if (!s) {
      s = run_node(&f);
    }
    static const double want_ints[3] = {4, -5, 6};
    static const double want_float[1] = {2.5};
    static const double want_tensor[2] = {1.5, -2};
    bool ok = !s;
    if (ok && c == 0) {
      ok = f.out[0]->dtype == WM_DTYPE_INT64 && f.out[0]->shape.rank == 1 &&
           values_are(f.out[0], want_ints, 3);
    } else if (ok && c == 1) {
      ok = f.out[0]->dtype == WM_DTYPE_FLOAT && f.out[0]->shape.rank == 0 &&
           values_are(f.out[0], want_float, 1);
    } else if (ok && c == 2) {
      ok = f.out[0]->dtype == WM_DTYPE_STRING &&
           strcmp(((char **)f.out[0]->data)[0], "hi") == 0;
    } else if (ok) {
      ok = values_are(f.out[0], want_tensor, 2);
    }
    fixture_deinit(&f);
    WM_CHECK_OK(s);
    WM_CHECK(ok);
  }
}

WM_TEST(constant_rejects_two_values_and_sparse_value) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  WM_CHECK_OK(add_node(&f, "Constant", NULL, 0, 1));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "value_int", 1));
  WM_CHECK_OK(wm_graph_add_attr_float(f.g, f.node, "value_float", 1.0f));
  wm_status_t s = run_node(&f);
  fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "has both attributes");

  WM_CHECK_OK(fixture_init(&f, 13));
  WM_CHECK_OK(add_node(&f, "Constant", NULL, 0, 1));
  wm_attr_t a;
  memset(&a, 0, sizeof(a));
  a.name = "sparse_value";
  a.type = WM_ATTR_SPARSE_TENSOR;
  s = wm_graph_add_attr(f.g, f.node, &a);
  if (!s) {
    s = run_node(&f);
  }
  fixture_deinit(&f);
  WM_CHECK_ERR(s, UNIMPLEMENTED, "sparse_value");
}

WM_TEST(constant_of_shape_fills_value_and_infers_rank) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t d[1] = {2};
  static const double shape[2] = {2, 3};
  WM_CHECK_OK(add_const(&f, "s", WM_DTYPE_INT64, 1, d, shape));
  const char *in[1] = {"s"};
  WM_CHECK_OK(add_node(&f, "ConstantOfShape", in, 1, 1));
  wm_shape_t one = wm_shape_make(1, (const int64_t[]){1});
  wm_tensor_t *v;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_INT32, &one, &v));
  wm_tensor_set_i64(v, 0, 7);
  WM_CHECK_OK(wm_graph_add_attr_tensor(f.g, f.node, "value", v));
  wm_status_t s = run_node(&f);
  static const double want[6] = {7, 7, 7, 7, 7, 7};
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_INT32 &&
            f.out[0]->shape.rank == 2 && values_are(f.out[0], want, 6);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);

  // Unknown shape values with a known length: rank known, dims not.
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t n[1] = {3};
  WM_CHECK_OK(add_input(&f, "s", WM_DTYPE_INT64, 1, n));
  WM_CHECK_OK(add_node(&f, "ConstantOfShape", in, 1, 1));
  wm_type_t t;
  s = infer_y0(&f, &t);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_FLOAT);
  WM_CHECK_INT_EQ(t.shape.rank, 3);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
}

// Runs Range(start, limit, delta) on scalars of |dtype|.
static wm_status_t run_range(fixture_t *f, wm_dtype_t dtype, double start,
                             double limit, double delta) {
  WM_RETURN_IF_ERROR(fixture_init(f, 13));
  WM_RETURN_IF_ERROR(add_const(f, "a", dtype, 0, NULL, &start));
  WM_RETURN_IF_ERROR(add_const(f, "b", dtype, 0, NULL, &limit));
  WM_RETURN_IF_ERROR(add_const(f, "c", dtype, 0, NULL, &delta));
  const char *in[3] = {"a", "b", "c"};
  WM_RETURN_IF_ERROR(add_node(f, "Range", in, 3, 1));
  return run_node(f);
}

WM_TEST(range_counts_with_ceil_for_both_signs) {
  fixture_t f;
  wm_status_t s = run_range(&f, WM_DTYPE_INT32, 10, 4, -3);
  static const double down[2] = {10, 7};
  bool ok = !s && values_are(f.out[0], down, 2);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);

  s = run_range(&f, WM_DTYPE_FLOAT, 1, 5.5, 1.5);
  static const double up[3] = {1, 2.5, 4};
  ok = !s && values_are(f.out[0], up, 3);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);

  s = run_range(&f, WM_DTYPE_INT64, 4, 10, -1);
  ok = !s && f.out[0]->count == 0;
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);

  s = run_range(&f, WM_DTYPE_INT64, 0, 10, 0);
  fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "delta is 0");
}

WM_TEST(onehot_wraps_negative_indices_and_ignores_out_of_range) {
  for (int axis = 0; axis < 2; axis++) {
    fixture_t f;
    WM_CHECK_OK(fixture_init(&f, 11));
    int64_t d[1] = {3}, vd[1] = {2};
    static const double ind[3] = {0, -1, 5}, depth[1] = {3}, vals[2] = {-1, 9};
    WM_CHECK_OK(add_const(&f, "i", WM_DTYPE_INT64, 1, d, ind));
    WM_CHECK_OK(add_const(&f, "d", WM_DTYPE_FLOAT, 0, NULL, depth));
    WM_CHECK_OK(add_const(&f, "v", WM_DTYPE_FLOAT, 1, vd, vals));
    const char *in[3] = {"i", "d", "v"};
    WM_CHECK_OK(add_node(&f, "OneHot", in, 3, 1));
    WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "axis", axis - 1));
    wm_status_t s = run_node(&f);
    // Rows per index (axis -1) or per class (axis 0).
    static const double last[9] = {9, -1, -1, -1, -1, 9, -1, -1, -1};
    static const double first[9] = {9, -1, -1, -1, -1, -1, -1, 9, -1};
    bool ok = !s && f.out[0]->shape.rank == 2 &&
              values_are(f.out[0], axis ? first : last, 9);
    fixture_deinit(&f);
    WM_CHECK_OK(s);
    WM_CHECK(ok);
  }
}

WM_TEST(trilu_keeps_upper_or_lower_band) {
  for (int upper = 0; upper < 2; upper++) {
    fixture_t f;
    WM_CHECK_OK(fixture_init(&f, 14));
    int64_t d[2] = {3, 3};
    double kv = upper ? 1 : -1;
    WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_INT64, 2, d, NULL));
    WM_CHECK_OK(add_const(&f, "k", WM_DTYPE_INT64, 0, NULL, &kv));
    const char *in[2] = {"x", "k"};
    WM_CHECK_OK(add_node(&f, "Trilu", in, 2, 1));
    WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "upper", upper));
    wm_status_t s = run_node(&f);
    static const double up[9] = {0, 1, 2, 0, 0, 5, 0, 0, 0};
    static const double low[9] = {0, 0, 0, 3, 0, 0, 6, 7, 0};
    bool ok = !s && values_are(f.out[0], upper ? up : low, 9);
    fixture_deinit(&f);
    WM_CHECK_OK(s);
    WM_CHECK(ok);
  }
}

WM_TEST(eyelike_places_shifted_diagonal_in_requested_dtype) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t d[2] = {2, 3};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, d, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(add_node(&f, "EyeLike", in, 1, 1));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "k", 1));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "dtype", WM_DTYPE_INT32));
  wm_status_t s = run_node(&f);
  static const double want[6] = {0, 1, 0, 0, 0, 1};
  bool ok =
      !s && f.out[0]->dtype == WM_DTYPE_INT32 && values_are(f.out[0], want, 6);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

static const wm_test_case_t cases[] = {
    WM_CASE(constant_accepts_each_value_attribute_form),
    WM_CASE(constant_rejects_two_values_and_sparse_value),
    WM_CASE(constant_of_shape_fills_value_and_infers_rank),
    WM_CASE(range_counts_with_ceil_for_both_signs),
    WM_CASE(onehot_wraps_negative_indices_and_ignores_out_of_range),
    WM_CASE(trilu_keeps_upper_or_lower_band),
    WM_CASE(eyelike_places_shifted_diagonal_in_requested_dtype),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
