// Tests of the index operators (Slice, Gather*, Scatter*, Compress):
// kernels against hand-computed values, index wrapping, and the errors for
// indices out of range.
#include <stdlib.h>

#include "ops/ops.h"
#include "wm_test.h"

// A one-node graph under construction and its results.
typedef struct fixture {
  wm_graph_t *g;        // the graph
  int32_t node;         // the node
  wm_tensor_t *out[3];  // outputs after run_node
} fixture_t;

static wm_status_t fixture_init(fixture_t *f, int64_t opset) {
  memset(f, 0, sizeof(*f));
  WM_RETURN_IF_ERROR(wm_graph_create("test", NULL, &f->g));
  return wm_graph_set_opset(f->g, "", opset);
}

static void fixture_deinit(fixture_t *f) {
  for (int i = 0; i < 3; i++) {
    wm_tensor_destroy(f->out[i]);
  }
  wm_graph_destroy(f->g);
}

// Adds an initializer of |dtype| holding |vals| (or 0..n-1).
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

// Adds a 1-D int64 initializer.
static wm_status_t add_ints(fixture_t *f, const char *name, size_t n,
                            const int64_t *vals) {
  int64_t dims[1] = {(int64_t)n};
  wm_shape_t s = wm_shape_make(1, dims);
  wm_tensor_t *t;
  WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_INT64, &s, &t));
  for (size_t i = 0; i < n; i++) {
    wm_tensor_set_i64(t, i, vals[i]);
  }
  int32_t id;
  return wm_graph_add_initializer(f->g, name, t, &id);
}

// Adds a string initializer of |shape| holding |vals|.
static wm_status_t add_strings(fixture_t *f, const char *name, int32_t rank,
                               const int64_t *dims, const char *const *vals) {
  wm_shape_t s = wm_shape_make(rank, dims);
  wm_tensor_t *t;
  WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_STRING, &s, &t));
  for (size_t i = 0; i < t->count; i++) {
    wm_status_t st = wm_tensor_set_string(t, i, vals[i], strlen(vals[i]));
    if (st) {
      wm_tensor_destroy(t);
      return st;
    }
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
  static const char *const outs[3] = {"y0", "y1", "y2"};
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
  for (int32_t i = 0; i < ctx.n_out && i < 3; i++) {
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
    fprintf(stderr, "count %zu, want %zu\n", t ? t->count : 0, n);
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

static bool shape_is(const wm_tensor_t *t, int32_t rank, const int64_t *dims) {
  wm_shape_t want = wm_shape_make(rank, dims);
  if (!t || !wm_shape_equal(&t->shape, &want)) {
    char a[128], b[128];
    fprintf(stderr, "shape %s, want %s\n",
            t ? wm_shape_format(&t->shape, a, sizeof(a)) : "none",
            wm_shape_format(&want, b, sizeof(b)));
    return false;
  }
  return true;
}

// Checks that |s| failed and its message contains |part|; frees it.
static bool fails_with(wm_status_t s, const char *part) {
  bool ok = s && strstr(wm_status_message(s), part);
  if (!ok) {
    fprintf(stderr, "status: %s\n", s ? wm_status_message(s) : "ok");
  }
  wm_status_free(s);
  return ok;
}

WM_TEST(slice_negative_steps_and_clamping) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[2] = {3, 4};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(add_ints(&f, "st", 2, (const int64_t[]){100, -1}));
  WM_CHECK_OK(add_ints(&f, "en", 2, (const int64_t[]){-100, INT64_MIN}));
  WM_CHECK_OK(add_ints(&f, "ax", 2, (const int64_t[]){0, 1}));
  WM_CHECK_OK(add_ints(&f, "sp", 2, (const int64_t[]){-2, -3}));
  const char *in[5] = {"x", "st", "en", "ax", "sp"};
  WM_CHECK_OK(add_node(&f, "Slice", in, 5, 1));
  wm_status_t s = run_node(&f);
  // rows 2, 0; cols 3, 0
  bool ok = !s && shape_is(f.out[0], 2, (const int64_t[]){2, 2}) &&
            values_are(f.out[0], (const double[]){11, 8, 3, 0}, 4);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(slice_before_opset_10_reads_attributes) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 9));
  int64_t dx[2] = {3, 4};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_INT64, 2, dx, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(add_node(&f, "Slice", in, 1, 1));
  WM_CHECK_OK(
      wm_graph_add_attr_ints(f.g, f.node, "starts", (const int64_t[]){1}, 1));
  WM_CHECK_OK(
      wm_graph_add_attr_ints(f.g, f.node, "ends", (const int64_t[]){1000}, 1));
  WM_CHECK_OK(
      wm_graph_add_attr_ints(f.g, f.node, "axes", (const int64_t[]){-1}, 1));
  wm_status_t s = run_node(&f);
  bool ok = !s && values_are(f.out[0],
                             (const double[]){1, 2, 3, 5, 6, 7, 9, 10, 11}, 9);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(slice_rejects_zero_step) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[1] = {3};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx, NULL));
  WM_CHECK_OK(add_ints(&f, "st", 1, (const int64_t[]){0}));
  WM_CHECK_OK(add_ints(&f, "en", 1, (const int64_t[]){3}));
  WM_CHECK_OK(add_ints(&f, "ax", 1, (const int64_t[]){0}));
  WM_CHECK_OK(add_ints(&f, "sp", 1, (const int64_t[]){0}));
  const char *in[5] = {"x", "st", "en", "ax", "sp"};
  WM_CHECK_OK(add_node(&f, "Slice", in, 5, 1));
  bool ok = fails_with(run_node(&f), "step on axis 0 is 0");
  fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(gather_wraps_negative_indices_on_strings) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[2] = {2, 2};
  WM_CHECK_OK(
      add_strings(&f, "x", 2, dx, (const char *const[]){"a", "b", "c", "d"}));
  WM_CHECK_OK(add_ints(&f, "i", 3, (const int64_t[]){-1, 0, 1}));
  const char *in[2] = {"x", "i"};
  WM_CHECK_OK(add_node(&f, "Gather", in, 2, 1));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "axis", 1));
  wm_status_t s = run_node(&f);
  static const char *const want[6] = {"b", "a", "b", "d", "c", "d"};
  bool ok = !s && shape_is(f.out[0], 2, (const int64_t[]){2, 3});
  for (int i = 0; ok && i < 6; i++) {
    ok = strcmp(((char **)f.out[0]->data)[i], want[i]) == 0;
  }
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(gather_rejects_index_out_of_range) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[2] = {2, 2};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(add_ints(&f, "i", 2, (const int64_t[]){0, -3}));
  const char *in[2] = {"x", "i"};
  WM_CHECK_OK(add_node(&f, "Gather", in, 2, 1));
  bool ok = fails_with(run_node(&f),
                       "index -3 (element 1 of the indices) is out of range "
                       "for axis 0 of size 2");
  fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(gather_elements_and_nd_with_batch_dims) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[2] = {2, 2}, di[2] = {2, 2};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(
      add_const(&f, "i", WM_DTYPE_INT32, 2, di, (const double[]){1, 1, -2, 1}));
  const char *in[2] = {"x", "i"};
  WM_CHECK_OK(add_node(&f, "GatherElements", in, 2, 1));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "axis", 1));
  wm_status_t s = run_node(&f);
  bool ok = !s && values_are(f.out[0], (const double[]){1, 1, 2, 3}, 4);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
  // data [2,2,2] = 0..7, indices [[1],[0]] with batch_dims 1 -> [[2,3],[4,5]]
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dd[3] = {2, 2, 2}, dn[2] = {2, 1};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 3, dd, NULL));
  WM_CHECK_OK(
      add_const(&f, "i", WM_DTYPE_INT64, 2, dn, (const double[]){1, 0}));
  WM_CHECK_OK(add_node(&f, "GatherND", in, 2, 1));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "batch_dims", 1));
  s = run_node(&f);
  ok = !s && shape_is(f.out[0], 2, (const int64_t[]){2, 2}) &&
       values_are(f.out[0], (const double[]){2, 3, 4, 5}, 4);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(gather_nd_rejects_index_out_of_range) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dd[2] = {2, 2}, dn[2] = {1, 2};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dd, NULL));
  WM_CHECK_OK(
      add_const(&f, "i", WM_DTYPE_INT64, 2, dn, (const double[]){1, 2}));
  const char *in[2] = {"x", "i"};
  WM_CHECK_OK(add_node(&f, "GatherND", in, 2, 1));
  bool ok = fails_with(run_node(&f),
                       "index 2 (element 1 of the indices) is "
                       "out of range for axis 1 of size 2");
  fixture_deinit(&f);
  WM_CHECK(ok);
}

// Runs ScatterElements at opset 18 with |reduction| on x = [1,2,3,4].
static void check_scatter(const char *reduction, const double *want) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 18));
  int64_t dx[1] = {4}, di[1] = {3};
  WM_CHECK_OK(
      add_const(&f, "x", WM_DTYPE_INT32, 1, dx, (const double[]){1, 2, 3, 4}));
  WM_CHECK_OK(add_ints(&f, "i", 3, (const int64_t[]){1, -1, 1}));
  WM_CHECK_OK(
      add_const(&f, "u", WM_DTYPE_INT32, 1, di, (const double[]){5, 0, 3}));
  const char *in[3] = {"x", "i", "u"};
  WM_CHECK_OK(add_node(&f, "ScatterElements", in, 3, 1));
  WM_CHECK_OK(wm_graph_add_attr_string(f.g, f.node, "reduction", reduction));
  wm_status_t s = run_node(&f);
  bool ok = !s && values_are(f.out[0], want, 4);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(scatter_elements_reductions) {
  check_scatter("none", (const double[]){1, 3, 3, 0});
  check_scatter("add", (const double[]){1, 10, 3, 4});
  check_scatter("mul", (const double[]){1, 30, 3, 0});
  check_scatter("max", (const double[]){1, 5, 3, 4});
  check_scatter("min", (const double[]){1, 2, 3, 0});
}

WM_TEST(scatter_nd_rejects_index_out_of_range) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[1] = {4}, di[2] = {1, 1}, du[1] = {1};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx, NULL));
  WM_CHECK_OK(add_const(&f, "i", WM_DTYPE_INT64, 2, di, (const double[]){4}));
  WM_CHECK_OK(add_const(&f, "u", WM_DTYPE_FLOAT, 1, du, NULL));
  const char *in[3] = {"x", "i", "u"};
  WM_CHECK_OK(add_node(&f, "ScatterND", in, 3, 1));
  bool ok = fails_with(run_node(&f),
                       "index 4 (element 0 of the indices) is "
                       "out of range for axis 0 of size 4");
  fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(scatter_elements_rejects_mismatched_updates) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[1] = {4}, di[1] = {2}, du[1] = {3};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx, NULL));
  WM_CHECK_OK(add_const(&f, "i", WM_DTYPE_INT64, 1, di, NULL));
  WM_CHECK_OK(add_const(&f, "u", WM_DTYPE_FLOAT, 1, du, NULL));
  const char *in[3] = {"x", "i", "u"};
  WM_CHECK_OK(add_node(&f, "ScatterElements", in, 3, 1));
  bool ok = fails_with(run_node(&f), "updates [3], want [2]");
  fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(compress_selects_along_axis_and_flattened) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 11));
  int64_t dx[2] = {2, 3}, dc[1] = {2};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(add_const(&f, "c", WM_DTYPE_BOOL, 1, dc, (const double[]){0, 1}));
  const char *in[2] = {"x", "c"};
  WM_CHECK_OK(add_node(&f, "Compress", in, 2, 1));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "axis", 1));
  wm_status_t s = run_node(&f);
  bool ok = !s && shape_is(f.out[0], 2, (const int64_t[]){2, 1}) &&
            values_are(f.out[0], (const double[]){1, 4}, 2);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
  WM_CHECK_OK(fixture_init(&f, 11));
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(add_const(&f, "c", WM_DTYPE_BOOL, 1, dc, (const double[]){0, 1}));
  WM_CHECK_OK(add_node(&f, "Compress", in, 2, 1));
  s = run_node(&f);
  ok = !s && values_are(f.out[0], (const double[]){1}, 1);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(static_shapes_with_unknown_index_values) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[2] = {5, 4}, di[2] = {2, -1};
  WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 2, dx));
  WM_CHECK_OK(add_input(&f, "i", WM_DTYPE_INT64, 2, di));
  const char *in[2] = {"x", "i"};
  WM_CHECK_OK(add_node(&f, "Gather", in, 2, 1));
  wm_type_t t;
  wm_status_t s = infer_y0(&f, &t);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 3);
  WM_CHECK_INT_EQ(t.shape.dims[0], 2);
  WM_CHECK_INT_EQ(t.shape.dims[1], -1);
  WM_CHECK_INT_EQ(t.shape.dims[2], 4);
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t ds[1] = {1};
  WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 2, dx));
  WM_CHECK_OK(add_input(&f, "st", WM_DTYPE_INT64, 1, ds));
  WM_CHECK_OK(add_ints(&f, "en", 1, (const int64_t[]){3}));
  const char *in2[3] = {"x", "st", "en"};
  WM_CHECK_OK(add_node(&f, "Slice", in2, 3, 1));
  s = infer_y0(&f, &t);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 2);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
}

static const wm_test_case_t cases[] = {
    WM_CASE(static_shapes_with_unknown_index_values),
    WM_CASE(slice_negative_steps_and_clamping),
    WM_CASE(slice_before_opset_10_reads_attributes),
    WM_CASE(slice_rejects_zero_step),
    WM_CASE(gather_wraps_negative_indices_on_strings),
    WM_CASE(gather_rejects_index_out_of_range),
    WM_CASE(gather_elements_and_nd_with_batch_dims),
    WM_CASE(gather_nd_rejects_index_out_of_range),
    WM_CASE(scatter_elements_reductions),
    WM_CASE(scatter_nd_rejects_index_out_of_range),
    WM_CASE(scatter_elements_rejects_mismatched_updates),
    WM_CASE(compress_selects_along_axis_and_flattened),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
