// Tests of the reduce family: every Reduce* against hand-computed values,
// empty-set results, axes handling across opsets, ArgMax/ArgMin, TopK and
// CumSum.
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

// Adds a node with |axes| as attribute (opset before |since|) or input.
static wm_status_t add_reduce(fixture_t *f, const char *op, int64_t opset,
                              int64_t since, const int64_t *axes, size_t n_axes,
                              int64_t keepdims) {
  if (opset >= since) {
    int64_t d[1] = {(int64_t)n_axes};
    double v[WM_MAX_RANK];
    for (size_t i = 0; i < n_axes; i++) {
      v[i] = (double)axes[i];
    }
    WM_RETURN_IF_ERROR(add_const(f, "axes", WM_DTYPE_INT64, 1, d, v));
    const char *in[2] = {"x", "axes"};
    WM_RETURN_IF_ERROR(add_node(f, op, in, 2, 1));
  } else {
    const char *in[1] = {"x"};
    WM_RETURN_IF_ERROR(add_node(f, op, in, 1, 1));
    WM_RETURN_IF_ERROR(
        wm_graph_add_attr_ints(f->g, f->node, "axes", axes, n_axes));
  }
  return wm_graph_add_attr_int(f->g, f->node, "keepdims", keepdims);
}

WM_TEST(reduce_family_matches_hand_computed_values) {
  static const struct {
    const char *op;
    int64_t since;
    double want[2];
  } cases[] = {
      {"ReduceSum", 13, {3, 12}},
      {"ReduceMean", 18, {1, 4}},
      {"ReduceMax", 18, {2, 5}},
      {"ReduceMin", 18, {0, 3}},
      {"ReduceProd", 18, {0, 60}},
      {"ReduceL1", 18, {3, 12}},
      {"ReduceL2", 18, {2.2360680, 7.0710678}},
      {"ReduceLogSum", 18, {1.0986123, 2.4849066}},
      {"ReduceLogSumExp", 18, {2.4076060, 5.4076060}},
      {"ReduceSumSquare", 18, {5, 50}},
  };
  static const int64_t opsets[2] = {13, 18};
  for (size_t o = 0; o < 2; o++) {
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
      fixture_t f;
      WM_CHECK_OK(fixture_init(&f, opsets[o]));
      int64_t dims[2] = {2, 3}, axes[1] = {-1};
      WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dims, NULL));
      WM_CHECK_OK(
          add_reduce(&f, cases[c].op, opsets[o], cases[c].since, axes, 1, 0));
      wm_status_t s = run_node(&f);
      bool ok = !s && f.out[0]->shape.rank == 1 &&
                values_are(f.out[0], cases[c].want, 2);
      fixture_deinit(&f);
      if (!ok) {
        fprintf(stderr, "%s at opset %lld\n", cases[c].op,
                (long long)opsets[o]);
      }
      WM_CHECK_OK(s);
      WM_CHECK(ok);
    }
  }
}

WM_TEST(reduce_over_empty_set_gives_identity_values) {
  static const struct {
    const char *op;
    double want;
  } cases[] = {
      {"ReduceSum", 0},
      {"ReduceProd", 1},
      {"ReduceMax", -INFINITY},
      {"ReduceMin", INFINITY},
      {"ReduceLogSum", -INFINITY},
      {"ReduceLogSumExp", -INFINITY},
      {"ReduceL2", 0},
      {"ReduceSumSquare", 0},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    fixture_t f;
    WM_CHECK_OK(fixture_init(&f, 11));
    int64_t dims[2] = {2, 0}, axes[1] = {1};
    WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dims, NULL));
    WM_CHECK_OK(add_reduce(&f, cases[c].op, 11, 13, axes, 1, 1));
    wm_status_t s = run_node(&f);
    bool ok = !s && f.out[0]->count == 2 &&
              wm_tensor_get_f64(f.out[0], 1) == cases[c].want;
    fixture_deinit(&f);
    if (!ok) {
      fprintf(stderr, "%s\n", cases[c].op);
    }
    WM_CHECK_OK(s);
    WM_CHECK(ok);
  }
}

WM_TEST(reduce_sum_of_int64_is_exact) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dims[1] = {3};
  wm_shape_t shape = wm_shape_make(1, dims);
  wm_tensor_t *t;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_INT64, &shape, &t));
  wm_tensor_set_i64(t, 0, (INT64_C(1) << 53) + 1);
  wm_tensor_set_i64(t, 1, 1);
  wm_tensor_set_i64(t, 2, -3);
  int32_t id;
  WM_CHECK_OK(wm_graph_add_initializer(f.g, "x", t, &id));
  const char *in[1] = {"x"};
  WM_CHECK_OK(add_node(&f, "ReduceSum", in, 1, 1));
  wm_status_t s = run_node(&f);
  int64_t got = s ? 0 : wm_tensor_get_i64(f.out[0], 0);
  int32_t rank = s ? -2 : f.out[0]->shape.rank;
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(got, (INT64_C(1) << 53) - 1);
  WM_CHECK_INT_EQ(rank, 1);
}

WM_TEST(reduce_sum_with_empty_axes_is_noop_only_when_asked) {
  for (int noop = 0; noop < 2; noop++) {
    fixture_t f;
    WM_CHECK_OK(fixture_init(&f, 13));
    int64_t dims[2] = {2, 3};
    WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dims, NULL));
    WM_CHECK_OK(add_reduce(&f, "ReduceSum", 13, 13, NULL, 0, 1));
    WM_CHECK_OK(
        wm_graph_add_attr_int(f.g, f.node, "noop_with_empty_axes", noop));
    wm_status_t s = run_node(&f);
    static const double all[1] = {15};
    static const double same[6] = {0, 1, 2, 3, 4, 5};
    bool ok =
        !s && f.out[0]->shape.rank == 2 &&
        (noop ? values_are(f.out[0], same, 6) : values_are(f.out[0], all, 1));
    fixture_deinit(&f);
    WM_CHECK_OK(s);
    WM_CHECK(ok);
  }
}

WM_TEST(reduce_with_unknown_axes_keeps_rank_only_with_keepdims) {
  for (int keep = 0; keep < 2; keep++) {
    fixture_t f;
    WM_CHECK_OK(fixture_init(&f, 13));
    int64_t dims[2] = {2, 3}, ad[1] = {1};
    WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 2, dims));
    WM_CHECK_OK(add_input(&f, "axes", WM_DTYPE_INT64, 1, ad));
    const char *in[2] = {"x", "axes"};
    WM_CHECK_OK(add_node(&f, "ReduceSum", in, 2, 1));
    WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "keepdims", keep));
    wm_type_t t;
    wm_status_t s = infer_y0(&f, &t);
    fixture_deinit(&f);
    WM_CHECK_OK(s);
    WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_FLOAT);
    WM_CHECK_INT_EQ(t.shape.rank, keep ? 2 : -1);
  }
}

WM_TEST(reduce_rejects_repeated_and_out_of_range_axes) {
  static const int64_t twice[2] = {1, -1}, far[1] = {2};
  for (int c = 0; c < 2; c++) {
    fixture_t f;
    WM_CHECK_OK(fixture_init(&f, 13));
    int64_t dims[2] = {2, 3};
    WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dims, NULL));
    WM_CHECK_OK(
        add_reduce(&f, "ReduceMax", 13, 18, c ? far : twice, c ? 1 : 2, 1));
    wm_status_t s = run_node(&f);
    fixture_deinit(&f);
    WM_CHECK_ERR(s, INVALID_ARGUMENT,
                 c ? "axis 2 is out of range for rank 2" : "listed twice");
  }
}

WM_TEST(argmax_and_argmin_pick_first_or_last_ties) {
  static const struct {
    const char *op;
    int64_t last;
    double want[2];
  } cases[] = {
      {"ArgMax", 0, {1, 0}},
      {"ArgMax", 1, {2, 2}},
      {"ArgMin", 0, {0, 1}},
      {"ArgMin", 1, {0, 1}},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    fixture_t f;
    WM_CHECK_OK(fixture_init(&f, 13));
    int64_t dims[2] = {2, 3};
    static const double x[6] = {2, 5, 5, 7, 1, 7};
    WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dims, x));
    const char *in[1] = {"x"};
    WM_CHECK_OK(add_node(&f, cases[c].op, in, 1, 1));
    WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "axis", -1));
    WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "keepdims", 0));
    WM_CHECK_OK(
        wm_graph_add_attr_int(f.g, f.node, "select_last_index", cases[c].last));
    wm_status_t s = run_node(&f);
    bool ok = !s && f.out[0]->dtype == WM_DTYPE_INT64 &&
              f.out[0]->shape.rank == 1 &&
              values_are(f.out[0], cases[c].want, 2);
    fixture_deinit(&f);
    WM_CHECK_OK(s);
    WM_CHECK(ok);
  }
}

WM_TEST(topk_orders_ties_by_index) {
  for (int largest = 0; largest < 2; largest++) {
    fixture_t f;
    WM_CHECK_OK(fixture_init(&f, 13));
    int64_t dims[1] = {5}, kd[1] = {1};
    static const double x[5] = {3, 1, 3, 2, 1};
    static const double k[1] = {3};
    WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_INT32, 1, dims, x));
    WM_CHECK_OK(add_const(&f, "k", WM_DTYPE_INT64, 1, kd, k));
    const char *in[2] = {"x", "k"};
    WM_CHECK_OK(add_node(&f, "TopK", in, 2, 2));
    WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "largest", largest));
    wm_status_t s = run_node(&f);
    static const double big_v[3] = {3, 3, 2}, big_i[3] = {0, 2, 3};
    static const double small_v[3] = {1, 1, 2}, small_i[3] = {1, 4, 3};
    bool ok = !s && values_are(f.out[0], largest ? big_v : small_v, 3) &&
              values_are(f.out[1], largest ? big_i : small_i, 3);
    fixture_deinit(&f);
    WM_CHECK_OK(s);
    WM_CHECK(ok);
  }
}

WM_TEST(topk_rejects_k_larger_than_axis) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dims[1] = {2}, kd[1] = {1};
  static const double k[1] = {3};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 1, dims, NULL));
  WM_CHECK_OK(add_const(&f, "k", WM_DTYPE_INT64, 1, kd, k));
  const char *in[2] = {"x", "k"};
  WM_CHECK_OK(add_node(&f, "TopK", in, 2, 2));
  wm_status_t s = run_node(&f);
  fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "k 3 exceeds dim 2 of axis 0");
}

WM_TEST(cumsum_supports_exclusive_and_reverse) {
  static const double want[4][4] = {
      {1, 3, 6, 10}, {0, 1, 3, 6}, {10, 9, 7, 4}, {9, 7, 4, 0}};
  for (int c = 0; c < 4; c++) {
    fixture_t f;
    WM_CHECK_OK(fixture_init(&f, 14));
    int64_t dims[1] = {4};
    static const double x[4] = {1, 2, 3, 4};
    static const double axis[1] = {-1};
    WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_DOUBLE, 1, dims, x));
    WM_CHECK_OK(add_const(&f, "axis", WM_DTYPE_INT32, 0, NULL, axis));
    const char *in[2] = {"x", "axis"};
    WM_CHECK_OK(add_node(&f, "CumSum", in, 2, 1));
    WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "exclusive", c & 1));
    WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "reverse", c >> 1));
    wm_status_t s = run_node(&f);
    bool ok = !s && values_are(f.out[0], want[c], 4);
    fixture_deinit(&f);
    WM_CHECK_OK(s);
    WM_CHECK(ok);
  }
}

static const wm_test_case_t cases[] = {
    WM_CASE(reduce_family_matches_hand_computed_values),
    WM_CASE(reduce_over_empty_set_gives_identity_values),
    WM_CASE(reduce_sum_of_int64_is_exact),
    WM_CASE(reduce_sum_with_empty_axes_is_noop_only_when_asked),
    WM_CASE(reduce_with_unknown_axes_keeps_rank_only_with_keepdims),
    WM_CASE(reduce_rejects_repeated_and_out_of_range_axes),
    WM_CASE(argmax_and_argmin_pick_first_or_last_ties),
    WM_CASE(topk_orders_ties_by_index),
    WM_CASE(topk_rejects_k_larger_than_axis),
    WM_CASE(cumsum_supports_exclusive_and_reverse),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
