// Tests of the tensor operators (Reshape ... SpaceToDepth): kernels
// against hand-computed values on several dtypes, static shape rules with
// unknown inputs, and error messages.
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

WM_TEST(reshape_copies_zero_dims_and_infers_minus_one) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[3] = {2, 3, 4};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, NULL));
  WM_CHECK_OK(add_ints(&f, "s", 2, (const int64_t[]){0, -1}));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(add_node(&f, "Reshape", in, 2, 1));
  wm_status_t s = run_node(&f);
  bool ok = !s && shape_is(f.out[0], 2, (const int64_t[]){2, 12}) &&
            wm_tensor_get_f64(f.out[0], 23) == 23;
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(reshape_rejects_wrong_element_count) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[2] = {2, 3};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(add_ints(&f, "s", 2, (const int64_t[]){4, 2}));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(add_node(&f, "Reshape", in, 2, 1));
  bool ok = fails_with(run_node(&f),
                       "cannot reshape 6 elements of [2,3] "
                       "into [4,2]");
  fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(reshape_allowzero_keeps_zero_dims) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 14));
  int64_t dx[2] = {0, 3};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(add_ints(&f, "s", 2, (const int64_t[]){3, 0}));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(add_node(&f, "Reshape", in, 2, 1));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "allowzero", 1));
  wm_status_t s = run_node(&f);
  bool ok = !s && shape_is(f.out[0], 2, (const int64_t[]){3, 0});
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(reshape_with_unknown_shape_value_infers_rank_only) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[2] = {2, 3}, ds[1] = {3};
  WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 2, dx));
  WM_CHECK_OK(add_input(&f, "s", WM_DTYPE_INT64, 1, ds));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(add_node(&f, "Reshape", in, 2, 1));
  wm_type_t t;
  wm_status_t s = infer_y0(&f, &t);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 3);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
}

WM_TEST(reshape_by_shape_of_graph_input_keeps_rank) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 15));
  int64_t dx[3] = {2, 3, 4}, dy[1] = {12};
  WM_CHECK_OK(add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(add_input(&f, "y", WM_DTYPE_FLOAT, 1, dy));
  const char *in1[1] = {"x"};
  const char *out1[1] = {"xs"};
  int32_t n1;
  WM_CHECK_OK(
      wm_graph_add_node(f.g, "Shape", "", "shape", in1, 1, out1, 1, &n1));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, n1, "start", 1));
  const char *in2[2] = {"y", "xs"};
  WM_CHECK_OK(add_node(&f, "Reshape", in2, 2, 1));
  wm_type_t t;
  wm_status_t s = infer_y0(&f, &t);
  wm_type_t xs = f.g->values[wm_graph_find_value(f.g, "xs")].type;
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(xs.dtype, WM_DTYPE_INT64);
  WM_CHECK_INT_EQ(xs.shape.rank, 1);
  WM_CHECK_INT_EQ(xs.shape.dims[0], 2);
  WM_CHECK_INT_EQ(t.shape.rank, 2);
}

WM_TEST(transpose_default_reverses_and_perm_permutes) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[3] = {2, 3, 4};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_INT32, 3, dx, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(add_node(&f, "Transpose", in, 1, 1));
  WM_CHECK_OK(wm_graph_add_attr_ints(f.g, f.node, "perm",
                                     (const int64_t[]){1, 0, 2}, 3));
  wm_status_t s = run_node(&f);
  // out[j][i][k] = x[i][j][k] = 12 i + 4 j + k
  bool ok = !s && shape_is(f.out[0], 3, (const int64_t[]){3, 2, 4});
  for (int j = 0; ok && j < 3; j++) {
    for (int i = 0; ok && i < 2; i++) {
      for (int k = 0; ok && k < 4; k++) {
        ok = wm_tensor_get_i64(f.out[0], (size_t)(j * 8 + i * 4 + k)) ==
             12 * i + 4 * j + k;
      }
    }
  }
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(transpose_rejects_bad_perm) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[2] = {2, 3};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(add_node(&f, "Transpose", in, 1, 1));
  WM_CHECK_OK(
      wm_graph_add_attr_ints(f.g, f.node, "perm", (const int64_t[]){1, 1}, 2));
  bool ok = fails_with(run_node(&f), "perm [1,1] is not a permutation");
  fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(concat_copies_strings) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t da[2] = {2, 1}, db[2] = {2, 2};
  WM_CHECK_OK(add_strings(&f, "a", 2, da, (const char *const[]){"a", "b"}));
  WM_CHECK_OK(
      add_strings(&f, "b", 2, db, (const char *const[]){"c", "d", "e", "f"}));
  const char *in[2] = {"a", "b"};
  WM_CHECK_OK(add_node(&f, "Concat", in, 2, 1));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "axis", -1));
  wm_status_t s = run_node(&f);
  static const char *const want[6] = {"a", "c", "d", "b", "e", "f"};
  bool ok = !s && shape_is(f.out[0], 2, (const int64_t[]){2, 3});
  for (int i = 0; ok && i < 6; i++) {
    ok = strcmp(((char **)f.out[0]->data)[i], want[i]) == 0;
  }
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(concat_rejects_mismatched_dims) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t da[2] = {2, 1}, db[2] = {3, 2};
  WM_CHECK_OK(add_const(&f, "a", WM_DTYPE_FLOAT, 2, da, NULL));
  WM_CHECK_OK(add_const(&f, "b", WM_DTYPE_FLOAT, 2, db, NULL));
  const char *in[2] = {"a", "b"};
  WM_CHECK_OK(add_node(&f, "Concat", in, 2, 1));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "axis", 1));
  bool ok = fails_with(run_node(&f), "input 1 [3,2] does not match [2,1]");
  fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(split_by_input_and_evenly) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[2] = {2, 6};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_BOOL, 2, dx,
                        (const double[]){1, 0, 1, 1, 0, 0, 0, 1, 1, 0, 1, 0}));
  WM_CHECK_OK(add_ints(&f, "sp", 2, (const int64_t[]){2, 4}));
  const char *in[2] = {"x", "sp"};
  WM_CHECK_OK(add_node(&f, "Split", in, 2, 2));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "axis", 1));
  wm_status_t s = run_node(&f);
  bool ok = !s && values_are(f.out[0], (const double[]){1, 0, 0, 1}, 4) &&
            values_are(f.out[1], (const double[]){1, 1, 0, 0, 1, 0, 1, 0}, 8);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
  WM_CHECK_OK(fixture_init(&f, 11));
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  const char *in1[1] = {"x"};
  WM_CHECK_OK(add_node(&f, "Split", in1, 1, 3));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "axis", 1));
  s = run_node(&f);
  ok = !s && values_are(f.out[2], (const double[]){4, 5, 10, 11}, 4);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(squeeze_and_unsqueeze_read_axes_by_opset) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 11));
  int64_t dx[3] = {1, 3, 1};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(add_node(&f, "Squeeze", in, 1, 1));
  WM_CHECK_OK(
      wm_graph_add_attr_ints(f.g, f.node, "axes", (const int64_t[]){-1}, 1));
  wm_status_t s = run_node(&f);
  bool ok = !s && shape_is(f.out[0], 2, (const int64_t[]){1, 3});
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
  WM_CHECK_OK(fixture_init(&f, 13));
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, NULL));
  WM_CHECK_OK(add_ints(&f, "ax", 2, (const int64_t[]){0, -1}));
  const char *in2[2] = {"x", "ax"};
  WM_CHECK_OK(add_node(&f, "Unsqueeze", in2, 2, 1));
  s = run_node(&f);
  ok = !s && shape_is(f.out[0], 5, (const int64_t[]){1, 1, 3, 1, 1});
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
  WM_CHECK_OK(fixture_init(&f, 13));
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, NULL));
  WM_CHECK_OK(add_ints(&f, "ax", 1, (const int64_t[]){1}));
  WM_CHECK_OK(add_node(&f, "Squeeze", in2, 2, 1));
  ok = fails_with(run_node(&f), "cannot squeeze axis 1 of size 3");
  fixture_deinit(&f);
  WM_CHECK(ok);
}

WM_TEST(expand_and_tile_repeat_data) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[2] = {2, 1};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_INT64, 2, dx, NULL));
  WM_CHECK_OK(add_ints(&f, "s", 3, (const int64_t[]){2, 1, 3}));
  const char *in[2] = {"x", "s"};
  WM_CHECK_OK(add_node(&f, "Expand", in, 2, 1));
  wm_status_t s = run_node(&f);
  bool ok =
      !s && shape_is(f.out[0], 3, (const int64_t[]){2, 2, 3}) &&
      values_are(f.out[0], (const double[]){0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1},
                 12);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dt[2] = {2, 2};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dt, NULL));
  WM_CHECK_OK(add_ints(&f, "r", 2, (const int64_t[]){2, 2}));
  const char *in2[2] = {"x", "r"};
  WM_CHECK_OK(add_node(&f, "Tile", in2, 2, 1));
  s = run_node(&f);
  ok = !s && values_are(f.out[0],
                        (const double[]){0, 1, 0, 1, 2, 3, 2, 3, 0, 1, 0, 1, 2,
                                         3, 2, 3},
                        16);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

// Runs Pad on [[0,1,2],[3,4,5]] with |pads| in |mode|.
static void check_pad(const char *mode, const int64_t *pads,
                      const int64_t *dims, const double *want, size_t n) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[2] = {2, 3};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(add_ints(&f, "p", 4, pads));
  WM_CHECK_OK(add_const(&f, "v", WM_DTYPE_FLOAT, 0, (const int64_t[]){1},
                        (const double[]){9}));
  const char *in[3] = {"x", "p", "v"};
  WM_CHECK_OK(add_node(&f, "Pad", in, 3, 1));
  WM_CHECK_OK(wm_graph_add_attr_string(f.g, f.node, "mode", mode));
  wm_status_t s = run_node(&f);
  bool ok = !s && shape_is(f.out[0], 2, dims) && values_are(f.out[0], want, n);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(pad_constant_reflect_edge_and_crop) {
  check_pad("constant", (const int64_t[]){0, 1, 0, 0}, (const int64_t[]){2, 4},
            (const double[]){9, 0, 1, 2, 9, 3, 4, 5}, 8);
  check_pad("reflect", (const int64_t[]){0, 2, 0, 1}, (const int64_t[]){2, 6},
            (const double[]){2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4}, 12);
  check_pad("edge", (const int64_t[]){1, 0, 0, 1}, (const int64_t[]){3, 4},
            (const double[]){0, 1, 2, 2, 0, 1, 2, 2, 3, 4, 5, 5}, 12);
  check_pad("constant", (const int64_t[]){0, -1, -1, 0},
            (const int64_t[]){1, 2}, (const double[]){1, 2}, 2);
}

WM_TEST(pad_before_opset_11_reads_attributes) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 2));
  int64_t dx[1] = {2};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_INT32, 1, dx, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(add_node(&f, "Pad", in, 1, 1));
  WM_CHECK_OK(
      wm_graph_add_attr_ints(f.g, f.node, "pads", (const int64_t[]){1, 2}, 2));
  WM_CHECK_OK(wm_graph_add_attr_float(f.g, f.node, "value", 7));
  wm_status_t s = run_node(&f);
  bool ok = !s && values_are(f.out[0], (const double[]){7, 0, 1, 7, 7}, 5);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(shape_honours_start_and_end_and_size_counts) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 15));
  int64_t dx[4] = {2, 3, 4, 5};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_UINT8, 4, dx, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(add_node(&f, "Shape", in, 1, 1));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "start", -3));
  WM_CHECK_OK(wm_graph_add_attr_int(f.g, f.node, "end", -1));
  wm_status_t s = run_node(&f);
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_INT64 &&
            values_are(f.out[0], (const double[]){3, 4}, 2);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
  WM_CHECK_OK(fixture_init(&f, 13));
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_UINT8, 4, dx, NULL));
  WM_CHECK_OK(add_node(&f, "Size", in, 1, 1));
  s = run_node(&f);
  ok = !s && f.out[0]->shape.rank == 0 && wm_tensor_get_i64(f.out[0], 0) == 120;
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

// Runs DepthToSpace (mode |mode|, or SpaceToDepth when NULL) with
// blocksize 2 on 0..n-1 of |dims|.
static wm_status_t run_block(fixture_t *f, const char *mode,
                             const int64_t *dims) {
  WM_RETURN_IF_ERROR(fixture_init(f, 13));
  WM_RETURN_IF_ERROR(add_const(f, "x", WM_DTYPE_FLOAT, 4, dims, NULL));
  const char *in[1] = {"x"};
  WM_RETURN_IF_ERROR(
      add_node(f, mode ? "DepthToSpace" : "SpaceToDepth", in, 1, 1));
  WM_RETURN_IF_ERROR(wm_graph_add_attr_int(f->g, f->node, "blocksize", 2));
  if (mode) {
    WM_RETURN_IF_ERROR(wm_graph_add_attr_string(f->g, f->node, "mode", mode));
  }
  return run_node(f);
}

WM_TEST(depth_to_space_dcr_crd_and_space_to_depth) {
  // x = 0..15 as [1,4,2,2].
  int64_t dx[4] = {1, 4, 2, 2};
  fixture_t f;
  wm_status_t s = run_block(&f, "DCR", dx);
  bool ok = !s && values_are(f.out[0],
                             (const double[]){0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3,
                                              7, 10, 14, 11, 15},
                             16);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
  s = run_block(&f, "CRD", dx);
  ok = !s && values_are(f.out[0],
                        (const double[]){0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7,
                                         10, 14, 11, 15},
                        16);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
  // SpaceToDepth of [1,1,4,4] 0..15: channel (i,j) holds x[2h+i][2w+j].
  int64_t ds[4] = {1, 1, 4, 4};
  s = run_block(&f, NULL, ds);
  ok = !s && shape_is(f.out[0], 4, (const int64_t[]){1, 4, 2, 2}) &&
       values_are(f.out[0],
                  (const double[]){0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7,
                                   13, 15},
                  16);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(depth_to_space_crd_differs_with_more_channels) {
  // x = 0..7 as [1,8,1,1]: DCR takes channel b1*4+b2*2+c, CRD c*4+b1*2+b2.
  int64_t dx[4] = {1, 8, 1, 1};
  fixture_t f;
  wm_status_t s = run_block(&f, "DCR", dx);
  bool ok =
      !s && values_are(f.out[0], (const double[]){0, 2, 4, 6, 1, 3, 5, 7}, 8);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
  s = run_block(&f, "CRD", dx);
  ok = !s && values_are(f.out[0], (const double[]){0, 1, 2, 3, 4, 5, 6, 7}, 8);
  fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK(ok);
}

WM_TEST(tile_and_pad_reject_impossible_sizes) {
  fixture_t f;
  WM_CHECK_OK(fixture_init(&f, 13));
  int64_t dx[2] = {2, 2};
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(add_ints(&f, "r", 2, (const int64_t[]){INT64_C(1) << 62, 4}));
  const char *in[2] = {"x", "r"};
  WM_CHECK_OK(add_node(&f, "Tile", in, 2, 1));
  bool ok = fails_with(run_node(&f), "tiled 4611686018427387904 times");
  fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(fixture_init(&f, 13));
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(add_ints(&f, "r", 2,
                       (const int64_t[]){INT64_C(1) << 40, INT64_C(1) << 40}));
  WM_CHECK_OK(add_node(&f, "Tile", in, 2, 1));
  ok = fails_with(run_node(&f), "too large");
  fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(fixture_init(&f, 13));
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(add_ints(&f, "p", 4, (const int64_t[]){0, -3, 0, 0}));
  const char *in2[2] = {"x", "p"};
  WM_CHECK_OK(add_node(&f, "Pad", in2, 2, 1));
  ok = fails_with(run_node(&f), "pads -3 and 0 on dim 1 of size 2");
  fixture_deinit(&f);
  WM_CHECK(ok);
  WM_CHECK_OK(fixture_init(&f, 13));
  WM_CHECK_OK(add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, NULL));
  WM_CHECK_OK(add_ints(&f, "s", 2, (const int64_t[]){3, 2}));
  const char *in3[2] = {"x", "s"};
  WM_CHECK_OK(add_node(&f, "Expand", in3, 2, 1));
  ok = fails_with(run_node(&f), "node \"n\" (Expand)");
  fixture_deinit(&f);
  WM_CHECK(ok);
}

static const wm_test_case_t cases[] = {
    WM_CASE(tile_and_pad_reject_impossible_sizes),
    WM_CASE(reshape_copies_zero_dims_and_infers_minus_one),
    WM_CASE(reshape_rejects_wrong_element_count),
    WM_CASE(reshape_allowzero_keeps_zero_dims),
    WM_CASE(reshape_with_unknown_shape_value_infers_rank_only),
    WM_CASE(reshape_by_shape_of_graph_input_keeps_rank),
    WM_CASE(transpose_default_reverses_and_perm_permutes),
    WM_CASE(transpose_rejects_bad_perm),
    WM_CASE(concat_copies_strings),
    WM_CASE(concat_rejects_mismatched_dims),
    WM_CASE(split_by_input_and_evenly),
    WM_CASE(squeeze_and_unsqueeze_read_axes_by_opset),
    WM_CASE(expand_and_tile_repeat_data),
    WM_CASE(pad_constant_reflect_edge_and_crop),
    WM_CASE(pad_before_opset_11_reads_attributes),
    WM_CASE(shape_honours_start_and_end_and_size_counts),
    WM_CASE(depth_to_space_dcr_crd_and_space_to_depth),
    WM_CASE(depth_to_space_crd_differs_with_more_channels),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
