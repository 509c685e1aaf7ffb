// Tests of Resize and Upsample: interpolation against hand-computed
// values, opset differences, static shapes and error messages.
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

// Adds a 1-D float initializer.
static wm_status_t add_floats(fixture_t *f, const char *name, size_t n,
                              const double *vals) {
  int64_t dims[1] = {(int64_t)n};
  return add_const(f, name, WM_DTYPE_FLOAT, 1, dims, vals);
}

WM_TEST(upsample_nearest_repeats_elements) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 9));
  int64_t dx[4] = {1, 1, 2, 2};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_INT64, 4, dx, NULL));
  WM_CHECK_OK(add_floats(&f, "s", 4, (const double[]){1, 1, 2, 1.5}));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(add_node(&f, "Upsample", in, 2, 1));
  wm_status_t s = run_node(&f);
  bool ok =
      !s && shape_is(f.out[0], 4, (const int64_t[]){1, 1, 4, 3}) &&
      values_are(f.out[0], (const double[]){0, 0, 1, 0, 0, 1, 2, 2, 3, 2, 2, 3},
                 12);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(resize_linear_half_pixel_clamps_at_edges) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[1] = {4};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx, NULL));
  WM_CHECK_OK(add_floats(&f, "s", 1, (const double[]){2}));
  const char *in[3] = {"x", "", "s"};
  WM_CHECK_OK(add_node(&f, "Resize", in, 3, 1));
  WM_CHECK_OK(wm_graph_add_attr_string(f.g, f.node, "mode", "linear"));
  wm_status_t s = run_node(&f);
  bool ok =
      !s &&
      values_are(f.out[0],
                 (const double[]){0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3}, 8);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(resize_tf_crop_and_resize_extrapolates) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[1] = {4};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx, NULL));
  WM_CHECK_OK(add_floats(&f, "roi", 2, (const double[]){0.5, 1.5}));
  WM_CHECK_OK(add_ints(&f, "sz", 1, (const int64_t[]){3}));
  const char *in[4] = {"x", "roi", "", "sz"};
  WM_CHECK_OK(add_node(&f, "Resize", in, 4, 1));
  WM_CHECK_OK(wm_graph_add_attr_string(f.g, f.node, "mode", "linear"));
  WM_CHECK_OK(wm_graph_add_attr_string(
      f.g, f.node, "coordinate_transformation_mode", "tf_crop_and_resize"));
  WM_CHECK_OK(wm_graph_add_attr_float(f.g, f.node, "extrapolation_value", 9));
  wm_status_t s = run_node(&f);
  // coordinates 1.5, 3, 4.5: the last lies outside [0, 3]
  bool ok = !s && values_are(f.out[0], (const double[]){1.5, 3, 9}, 3);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(resize_opset18_axes_and_keep_aspect_ratio) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 18));
  int64_t dx[4] = {1, 1, 2, 4};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 4, dx, NULL));
  WM_CHECK_OK(add_ints(&f, "sz", 2, (const int64_t[]){4, 4}));
  const char *in[4] = {"x", "", "", "sz"};
  WM_CHECK_OK(add_node(&f, "Resize", in, 4, 1));
  WM_CHECK_OK(
      wm_graph_add_attr_ints(f.g, f.node, "axes", (const int64_t[]){2, 3}, 2));
  WM_CHECK_OK(wm_graph_add_attr_string(f.g, f.node, "keep_aspect_ratio_policy",
                                       "not_larger"));
  wm_status_t s = run_node(&f);
  bool ok = !s && shape_is(f.out[0], 4, (const int64_t[]){1, 1, 2, 4}) &&
            values_are(f.out[0], (const double[]){0, 1, 2, 3, 4, 5, 6, 7}, 8);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(resize_static_shape_with_unknown_scales) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[2] = {3, 4}, ds[1] = {2};
  WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 2, dx));
  WM_CHECK_OK(add_input(&f, "s", WM_DTYPE_FLOAT, 1, ds));
  const char *in[3] = {"x", "", "s"};
  WM_CHECK_OK(add_node(&f, "Resize", in, 3, 1));
  wm_type_t t;
  wm_status_t s = infer_y0(&f, &t);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 2);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
}

WM_TEST(resize_rejects_scales_and_sizes_together) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[1] = {4};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx, NULL));
  WM_CHECK_OK(add_floats(&f, "s", 1, (const double[]){2}));
  WM_CHECK_OK(add_ints(&f, "sz", 1, (const int64_t[]){3}));
  const char *in[4] = {"x", "", "s", "sz"};
  WM_CHECK_OK(add_node(&f, "Resize", in, 4, 1));
  bool ok =
      fails_with(run_node(&f), "exactly one of scales and sizes must be given");
  fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(resize_rejects_unknown_mode) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[1] = {4};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 1, dx, NULL));
  WM_CHECK_OK(add_floats(&f, "s", 1, (const double[]){2}));
  const char *in[3] = {"x", "", "s"};
  WM_CHECK_OK(add_node(&f, "Resize", in, 3, 1));
  WM_CHECK_OK(wm_graph_add_attr_string(f.g, f.node, "mode", "bicubic"));
  bool ok = fails_with(run_node(&f), "unknown mode \"bicubic\"");
  fixture_deinit(&f);
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
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
