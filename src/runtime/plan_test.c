// Plans: one per signature of input shapes, made on first use and reused;
// shape computations folded; data-dependent shapes handled while running;
// memory laid out by value lifetimes; outputs into the caller's tensors.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tests/plugins/plugin_common.h"
#include "../../tests/testing/wm_test.h"
#include "ref.h"
#include "wmap/session.h"

static void node(wm_graph_t *g, const char *op, const char *a, const char *b,
                 const char *out) {
  const char *ins[2] = {a, b};
  int32_t n;
  WM_CHECK_OK(wm_graph_add_node(g, op, "", NULL, ins, b ? 2 : 1, &out, 1, &n));
}

static void output(wm_graph_t *g, const char *name) {
  int32_t id;
  WM_CHECK_OK(wm_graph_add_output(g, name, NULL, &id));
}

static wm_tensor_t *ramp(int64_t rows, int64_t cols) {
  wm_shape_t shape = {.rank = 2, .dims = {rows, cols}};
  wm_tensor_t *t = NULL;
  if (wm_tensor_create(WM_DTYPE_FLOAT, &shape, &t)) {
    return NULL;
  }
  for (size_t i = 0; i < t->count; i++) {
    ((float *)t->data)[i] = (float)i - 3.0f;
  }
  return t;
}

static wm_backend_t *ref_backend(void) {
  wm_backend_t *ref = NULL;
  wm_status_t s = wm_backend_create(wm_ref_plugin_query, "built-in", &ref);
  wm_status_free(s);
  return ref;
}

// y = relu(x + x) with x float [N, 3].
static wm_graph_t *add_relu(void) {
  wm_graph_t *g = NULL;
  wm_shape_t shape = {.rank = 2, .dims = {-1, 3}};
  wm_type_t t = wm_type_tensor(WM_DTYPE_FLOAT, &shape);
  t.dim_params[0] = "N";
  const char *add_in[2] = {"x", "x"}, *add_out = "a", *relu_out = "y";
  int32_t id;
  wm_status_t s = wm_graph_create("g", NULL, &g);
  if (!s) {
    s = wm_graph_set_opset(g, "", 17);
  }
  if (!s) {
    s = wm_graph_add_input(g, "x", &t, &id);
  }
  if (!s) {
    s = wm_graph_add_node(g, "Add", "", NULL, add_in, 2, &add_out, 1, &id);
  }
  if (!s) {
    s = wm_graph_add_node(g, "Relu", "", NULL, &add_out, 1, &relu_out, 1, &id);
  }
  if (!s) {
    s = wm_graph_add_output(g, "y", NULL, &id);
  }
  if (s) {
    wm_status_free(s);
    wm_graph_destroy(g);
    return NULL;
  }
  return g;
}

// Runs |s| on x = ramp(rows, cols) and checks y = relu(x + x).
static void run_and_check(wm_session_t *s, int64_t rows, int64_t cols) {
  wm_tensor_t *x = ramp(rows, cols), *y = NULL;
  WM_CHECK(x);
  const char *names[1] = {"x"};
  WM_CHECK_OK(wm_session_run(s, names, (const wm_tensor_t *const *)&x, 1, &y));
  WM_CHECK_INT_EQ(y->shape.dims[0], rows);
  for (size_t i = 0; i < y->count; i++) {
    float v = 2 * ((float *)x->data)[i];
    WM_CHECK_DBL_NEAR(((float *)y->data)[i], v > 0 ? v : 0, 0);
  }
  wm_tensor_destroy(x);
  wm_tensor_destroy(y);
}

WM_TEST(a_plan_is_made_once_per_input_shape_and_reused) {
  wm_graph_t *g = add_relu();
  WM_CHECK(g);
  wm_backend_t *ref = ref_backend();
  wm_session_t *s;
  WM_CHECK_OK(wm_session_create(g, ref, &s));
  // The declared shapes are not known: creation made a provisional plan.
  size_t made = wm_session_stats(s).plans_made;
  WM_CHECK_INT_EQ(made, 1);
  run_and_check(s, 2, 3);
  WM_CHECK_INT_EQ(wm_session_stats(s).plans_made, made + 1);
  run_and_check(s, 2, 3);
  WM_CHECK_INT_EQ(wm_session_stats(s).plans_made, made + 1);
  run_and_check(s, 5, 3);
  WM_CHECK_INT_EQ(wm_session_stats(s).plans_made, made + 2);
  run_and_check(s, 2, 3);
  WM_CHECK_INT_EQ(wm_session_stats(s).plans_made, made + 2);
  // More signatures than the cache holds: the least recent are remade.
  for (int64_t n = 1; n <= 12; n++) {
    run_and_check(s, n, 3);
  }
  run_and_check(s, 12, 3);
  size_t after = wm_session_stats(s).plans_made;
  run_and_check(s, 1, 3);  // evicted long ago
  WM_CHECK_INT_EQ(wm_session_stats(s).plans_made, after + 1);
  wm_session_destroy(s);
  wm_backend_destroy(ref);
  wm_graph_destroy(g);
}

WM_TEST(shape_computations_are_folded_into_the_plan) {
  // y = Reshape(x, Concat(Gather(Shape(x), 0), [-1])): with x known, the
  // shape chain is computed when planning and only Reshape runs.
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("g", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
  wm_shape_t xs = {.rank = 3, .dims = {-1, 2, 3}};
  wm_type_t xt = wm_type_tensor(WM_DTYPE_FLOAT, &xs);
  int32_t id;
  WM_CHECK_OK(wm_graph_add_input(g, "x", &xt, &id));
  wm_shape_t one = {.rank = 1, .dims = {1}};
  wm_shape_t scalar = {.rank = 0};
  wm_tensor_t *zero, *minus;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_INT64, &scalar, &zero));
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_INT64, &one, &minus));
  wm_tensor_set_i64(minus, 0, -1);
  WM_CHECK_OK(wm_graph_add_initializer(g, "zero", zero, &id));
  WM_CHECK_OK(wm_graph_add_initializer(g, "minus", minus, &id));
  node(g, "Shape", "x", NULL, "shape");
  node(g, "Gather", "shape", "zero", "n");
  node(g, "Unsqueeze", "n", "zero", "n1");
  const char *cat_in[2] = {"n1", "minus"}, *cat_out = "dims";
  int32_t n_cat;
  WM_CHECK_OK(
      wm_graph_add_node(g, "Concat", "", NULL, cat_in, 2, &cat_out, 1, &n_cat));
  WM_CHECK_OK(wm_graph_add_attr_int(g, n_cat, "axis", 0));
  node(g, "Reshape", "x", "dims", "y");
  output(g, "y");
  wm_backend_t *ref = ref_backend();
  wm_session_t *s;
  WM_CHECK_OK(wm_session_create(g, ref, &s));
  wm_shape_t in_shape = {.rank = 3, .dims = {4, 2, 3}};
  wm_tensor_t *x, *y = NULL;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_FLOAT, &in_shape, &x));
  for (size_t i = 0; i < x->count; i++) {
    ((float *)x->data)[i] = (float)i;
  }
  const char *names[1] = {"x"};
  WM_CHECK_OK(wm_session_run(s, names, (const wm_tensor_t *const *)&x, 1, &y));
  WM_CHECK_INT_EQ(y->shape.rank, 2);
  WM_CHECK_INT_EQ(y->shape.dims[0], 4);
  WM_CHECK_INT_EQ(y->shape.dims[1], 6);
  WM_CHECK_DBL_NEAR(((float *)y->data)[23], 23, 0);
  WM_CHECK_INT_EQ(wm_session_nodes_run(s), 1);
  size_t folded = 0;
  for (size_t i = 0; i < wm_session_node_count(s); i++) {
    const wm_placement_t *p = wm_session_placement(s, i);
    folded += p->pass && strcmp(p->pass, "fold") == 0;
  }
  WM_CHECK_INT_EQ(folded, 4);
  wm_tensor_destroy(x);
  wm_tensor_destroy(y);
  wm_session_destroy(s);
  wm_backend_destroy(ref);
  wm_graph_destroy(g);
}

WM_TEST(data_dependent_shapes_are_placed_while_running) {
  // y = Transpose(NonZero(x)): the shape of NonZero's output depends on
  // the values of x, so it and its consumer run as dynamic steps.
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("g", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
  wm_shape_t xs = {.rank = 1, .dims = {6}};
  wm_type_t xt = wm_type_tensor(WM_DTYPE_FLOAT, &xs);
  int32_t id;
  WM_CHECK_OK(wm_graph_add_input(g, "x", &xt, &id));
  node(g, "NonZero", "x", NULL, "nz");
  node(g, "Transpose", "nz", NULL, "y");
  output(g, "y");
  wm_backend_t *ref = ref_backend();
  wm_session_t *s;
  WM_CHECK_OK(wm_session_create(g, ref, &s));
  const char *names[1] = {"x"};
  static const float a[6] = {0, 1, 0, 2, 3, 0}, b[6] = {1, 0, 0, 0, 0, 5};
  for (int k = 0; k < 3; k++) {
    const float *v = k == 1 ? b : a;
    wm_tensor_t *x, *y = NULL;
    WM_CHECK_OK(wm_tensor_create(WM_DTYPE_FLOAT, &xs, &x));
    memcpy(x->data, v, sizeof(a));
    WM_CHECK_OK(
        wm_session_run(s, names, (const wm_tensor_t *const *)&x, 1, &y));
    WM_CHECK_INT_EQ(y->shape.rank, 2);
    WM_CHECK_INT_EQ(y->shape.dims[0], k == 1 ? 2 : 3);
    WM_CHECK_INT_EQ(y->shape.dims[1], 1);
    WM_CHECK_INT_EQ(((int64_t *)y->data)[0], k == 1 ? 0 : 1);
    WM_CHECK_INT_EQ(((int64_t *)y->data)[y->count - 1], k == 1 ? 5 : 4);
    wm_tensor_destroy(x);
    wm_tensor_destroy(y);
  }
  // One signature: the plan was reused while the data shapes changed.
  WM_CHECK_INT_EQ(wm_session_stats(s).plans_made, 1);
  wm_session_destroy(s);
  wm_backend_destroy(ref);
  wm_graph_destroy(g);
}

WM_TEST(values_share_arena_memory_when_their_lifetimes_do_not_overlap) {
  // A chain of 8 Neg over 1,000 floats: each value lives for two steps,
  // so two regions serve all nine values (output included).
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("g", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
  wm_shape_t xs = {.rank = 1, .dims = {1000}};
  wm_type_t xt = wm_type_tensor(WM_DTYPE_FLOAT, &xs);
  int32_t id;
  WM_CHECK_OK(wm_graph_add_input(g, "v0", &xt, &id));
  char names[9][4];
  for (int i = 0; i < 9; i++) {
    snprintf(names[i], sizeof(names[i]), "v%d", i);
  }
  for (int i = 0; i < 8; i++) {
    node(g, "Neg", names[i], NULL, names[i + 1]);
  }
  output(g, "v8");
  wm_backend_t *ref = ref_backend();
  wm_session_t *s;
  WM_CHECK_OK(wm_session_create(g, ref, &s));
  uint64_t arena = wm_session_stats(s).arena_bytes;
  WM_CHECK(arena >= 2 * 4000);
  WM_CHECK(arena <= 2 * 4032);
  wm_tensor_t *x, *y = NULL;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_FLOAT, &xs, &x));
  ((float *)x->data)[7] = 2.5f;
  const char *in[1] = {"v0"};
  WM_CHECK_OK(wm_session_run(s, in, (const wm_tensor_t *const *)&x, 1, &y));
  WM_CHECK_DBL_NEAR(((float *)y->data)[7], 2.5, 0);  // an even count of Neg
  wm_tensor_destroy(x);
  wm_tensor_destroy(y);
  wm_session_destroy(s);
  wm_backend_destroy(ref);
  wm_graph_destroy(g);
}

WM_TEST(a_reshape_is_a_view_of_its_input_and_copies_nothing) {
  // x -> Neg -> a; b = Reshape(a) and c = Neg(a) are outputs. A copying
  // Reshape needs three regions at once (a, b, c); as a view b is a's
  // bytes, and c takes x's region: two.
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("g", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
  wm_shape_t xs = {.rank = 1, .dims = {1000}};
  wm_type_t xt = wm_type_tensor(WM_DTYPE_FLOAT, &xs);
  int32_t id;
  WM_CHECK_OK(wm_graph_add_input(g, "x", &xt, &id));
  wm_shape_t ss = {.rank = 1, .dims = {2}};
  wm_tensor_t *shape;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_INT64, &ss, &shape));
  ((int64_t *)shape->data)[0] = 10;
  ((int64_t *)shape->data)[1] = 100;
  WM_CHECK_OK(wm_graph_add_initializer(g, "shape", shape, NULL));
  node(g, "Neg", "x", NULL, "a");
  node(g, "Reshape", "a", "shape", "b");
  node(g, "Neg", "a", NULL, "c");
  output(g, "b");
  output(g, "c");
  wm_backend_t *ref = ref_backend();
  wm_session_t *s;
  WM_CHECK_OK(wm_session_create(g, ref, &s));
  uint64_t arena = wm_session_stats(s).arena_bytes;
  WM_CHECK(arena >= 2 * 4000);
  WM_CHECK(arena <= 2 * 4032);
  wm_tensor_t *x, *y[2] = {NULL, NULL};
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_FLOAT, &xs, &x));
  for (int i = 0; i < 1000; i++) {
    ((float *)x->data)[i] = (float)i;
  }
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_session_run(s, in, (const wm_tensor_t *const *)&x, 1, y));
  WM_CHECK(y[0] && y[1]);
  if (y[0] && y[1]) {
    WM_CHECK_INT_EQ(y[0]->shape.rank, 2);
    WM_CHECK_INT_EQ(y[0]->shape.dims[1], 100);
    WM_CHECK_DBL_NEAR(((float *)y[0]->data)[999], -999.0, 0);
    WM_CHECK_DBL_NEAR(((float *)y[1]->data)[999], 999.0, 0);
  }
  wm_tensor_destroy(x);
  wm_tensor_destroy(y[0]);
  wm_tensor_destroy(y[1]);
  wm_session_destroy(s);
  wm_backend_destroy(ref);
  wm_graph_destroy(g);
}

WM_TEST(weights_are_used_in_place_on_host_memory_backends) {
  // y = x + w with w a 1,000-float initializer. ref's memory is host
  // memory (mem_wrap_host): w is used where it is, not copied; a w whose
  // data is not 16-byte aligned is refused by the backend and copied.
  for (int misaligned = 0; misaligned <= 1; misaligned++) {
    wm_graph_t *g;
    WM_CHECK_OK(wm_graph_create("g", NULL, &g));
    WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
    wm_shape_t xs = {.rank = 1, .dims = {1000}};
    wm_type_t xt = wm_type_tensor(WM_DTYPE_FLOAT, &xs);
    int32_t id;
    WM_CHECK_OK(wm_graph_add_input(g, "x", &xt, &id));
    float *store = aligned_alloc(64, 1024 * sizeof(float));
    WM_CHECK(store != NULL);
    float *data = store + misaligned;
    for (int i = 0; i < 1000; i++) {
      data[i] = (float)i;
    }
    wm_tensor_t *w;
    WM_CHECK_OK(wm_tensor_wrap(WM_DTYPE_FLOAT, &xs, data, &w));
    WM_CHECK_OK(wm_graph_add_initializer(g, "w", w, NULL));
    node(g, "Add", "x", "w", "y");
    output(g, "y");
    wm_backend_t *ref = ref_backend();
    wm_session_t *s;
    WM_CHECK_OK(wm_session_create(g, ref, &s));
    wm_session_stats_t st = wm_session_stats(s);
    WM_CHECK_INT_EQ(st.constant_bytes, 4000);
    WM_CHECK_INT_EQ(st.constant_bytes_copied, misaligned ? 4000 : 0);
    wm_tensor_t *x, *y = NULL;
    WM_CHECK_OK(wm_tensor_create(WM_DTYPE_FLOAT, &xs, &x));
    ((float *)x->data)[999] = 0.5f;
    const char *in[1] = {"x"};
    WM_CHECK_OK(wm_session_run(s, in, (const wm_tensor_t *const *)&x, 1, &y));
    WM_CHECK(y != NULL);
    if (y) {
      WM_CHECK_DBL_NEAR(((float *)y->data)[999], 999.5, 0);
      WM_CHECK_DBL_NEAR(((float *)y->data)[3], 3.0, 0);
    }
    wm_tensor_destroy(x);
    wm_tensor_destroy(y);
    wm_session_destroy(s);
    wm_backend_destroy(ref);
    wm_graph_destroy(g);
    free(store);
  }
}

WM_TEST(run_into_writes_the_callers_tensors_and_checks_their_shape) {
  wm_graph_t *g = add_relu();
  WM_CHECK(g);
  wm_backend_t *ref = ref_backend();
  wm_session_t *s;
  WM_CHECK_OK(wm_session_create(g, ref, &s));
  wm_tensor_t *x = ramp(2, 3), *y = ramp(2, 3), *wrong = ramp(3, 3);
  const char *names[1] = {"x"};
  WM_CHECK_OK(
      wm_session_run_into(s, names, (const wm_tensor_t *const *)&x, 1, &y));
  WM_CHECK_DBL_NEAR(((float *)y->data)[5], 4, 0);  // relu(2 * 2)
  WM_CHECK_DBL_NEAR(((float *)y->data)[0], 0, 0);
  WM_CHECK_ERR(
      wm_session_run_into(s, names, (const wm_tensor_t *const *)&x, 1, &wrong),
      INVALID_ARGUMENT, "output \"y\" is float [2,3]");
  wm_tensor_destroy(x);
  wm_tensor_destroy(y);
  wm_tensor_destroy(wrong);
  wm_session_destroy(s);
  wm_backend_destroy(ref);
  wm_graph_destroy(g);
}

// "inplace": a backend on host memory that runs Relu and Neg on floats
// element by element, and says Relu's output may be written into its
// input's bytes (wm_op_desc.in_place).
struct wm_op_plan {
  bool relu;
};

static wm_error *ip_info(wm_plugin_info *out) {
  return tp_info(out, "inplace");
}

static bool ip_takes(const wm_op_desc *op) {
  return (!op->domain || !*op->domain) && op->n_in == 1 && op->n_out == 1 &&
         op->in[0].dtype == WM_DTYPE_FLOAT &&
         (strcmp(op->op_type, "Relu") == 0 || strcmp(op->op_type, "Neg") == 0);
}

static wm_error *ip_query(const wm_target_desc *target, const wm_op_desc *op,
                          wm_op_support *out) {
  (void)target;
  bool yes = ip_takes(op);
  out->level = yes ? WM_SUPPORT_SUPPORTED : WM_SUPPORT_NONE;
  out->impl = yes ? WM_IMPL_NATIVE_KERNEL : WM_IMPL_NONE;
  out->reason = yes ? WM_WHY_NONE : WM_WHY_OP;
  out->rel_cost = -1.0f;
  out->detail = yes ? NULL : "inplace runs float Relu and Neg only";
  return NULL;
}

static wm_error *ip_plan(wm_device *dev, const wm_op_desc *op,
                         wm_op_plan **out_plan, uint64_t *out_ws) {
  (void)dev;
  *out_ws = 0;
  *out_plan = malloc(sizeof(**out_plan));
  if (!*out_plan) {
    return wm_host_error_oom();
  }
  (*out_plan)->relu = strcmp(op->op_type, "Relu") == 0;
  if ((*out_plan)->relu && WM_HAS(op, wm_op_desc, in_place) && op->in_place) {
    op->in_place[0] = 0;
  }
  return NULL;
}

static wm_error *ip_run(wm_stream *stream, wm_op_plan *plan,
                        const wm_buffer_view *in, uint32_t n_in,
                        const wm_buffer_view *out, uint32_t n_out,
                        const wm_buffer_view *workspace) {
  (void)stream, (void)n_in, (void)n_out, (void)workspace;
  void *xp = NULL, *yp = NULL;
  wm_error *e = wm_host_mem_map(in[0].buffer, &xp);
  if (!e) {
    e = wm_host_mem_map(out[0].buffer, &yp);
  }
  if (e) {
    return e;
  }
  const float *x = (const float *)((char *)xp + in[0].offset);
  float *y = (float *)((char *)yp + out[0].offset);
  uint64_t n = 1;
  for (uint32_t d = 0; d < out[0].desc.rank; d++) {
    n *= (uint64_t)out[0].desc.dims[d];
  }
  for (uint64_t i = 0; i < n; i++) {
    float v = x[i];
    y[i] = plan->relu ? (v > 0 ? v : 0) : -v;
  }
  return NULL;
}

static void ip_destroy(wm_op_plan *plan) {
  free(plan);
}

static const wm_device_tier ip_device = {TP_DEVICE_TIER_FIELDS};
static const wm_library_tier ip_library = {
    .struct_size = sizeof(wm_library_tier),
    .op_query = ip_query,
    .op_plan = ip_plan,
    .op_run = ip_run,
    .op_plan_destroy = ip_destroy,
};
static wm_plugin_api ip_api = {
    .get_info = ip_info,
    .enumerate = tp_enumerate,
    .device = &ip_device,
    .library = &ip_library,
    TP_API_FIELDS,
};
static wm_error *ip_query_api(uint32_t major, uint32_t max_minor,
                              const wm_host_api *host,
                              const wm_plugin_api **out_api) {
  (void)host;
  return tp_hand_out(&ip_api, major, max_minor, out_api);
}

// a = -x, b = relu(a), c = relu(b), y = relu(c), f = -b: Relu's output
// takes its input's bytes where nothing reads the input after it (b into
// a's, y into c's), not where something does (c: f reads b after); the
// results are those of the same plan without in-place outputs. Nor is
// z = relu(x), x's last reader, written into the caller's x.
WM_TEST(an_output_takes_its_inputs_bytes_where_the_backend_allows) {
  wm_backend_t *ip = NULL;
  WM_CHECK_OK(wm_backend_create(ip_query_api, "built-in", &ip));
  wm_graph_t *g = NULL;
  WM_CHECK_OK(wm_graph_create("g", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
  wm_shape_t shape = {.rank = 2, .dims = {4, 1000}};
  wm_type_t t = wm_type_tensor(WM_DTYPE_FLOAT, &shape);
  int32_t id;
  WM_CHECK_OK(wm_graph_add_input(g, "x", &t, &id));
  node(g, "Neg", "x", NULL, "a");
  node(g, "Relu", "a", NULL, "b");
  node(g, "Relu", "b", NULL, "c");
  node(g, "Relu", "c", NULL, "y");
  node(g, "Neg", "b", NULL, "f");
  node(g, "Relu", "x", NULL, "z");
  output(g, "y");
  output(g, "f");
  output(g, "z");
  wm_tensor_t *x = ramp(4, 1000);
  WM_CHECK(x);
  const char *names[1] = {"x"};
  uint64_t arena[2] = {0, 0};
  size_t shared[2] = {9, 9};
  wm_tensor_t *out[2][3] = {{NULL, NULL, NULL}, {NULL, NULL, NULL}};
  for (int k = 0; k < 2; k++) {
    wm_session_options_t o = {.backends = &ip,
                              .backend_count = 1,
                              .mode = WM_PLACEMENT_STRICT,
                              .passes = "",
                              .no_in_place = k == 1};
    wm_session_t *s = NULL;
    WM_CHECK_OK(wm_session_create_placed(g, &o, &s));
    WM_CHECK_OK(
        wm_session_run(s, names, (const wm_tensor_t *const *)&x, 1, out[k]));
    arena[k] = wm_session_stats(s).arena_bytes;
    shared[k] = wm_session_stats(s).in_place_outputs;
    wm_session_destroy(s);
  }
  WM_CHECK_INT_EQ(shared[0], 2);
  WM_CHECK_INT_EQ(shared[1], 0);
  WM_CHECK(arena[0] <= arena[1]);
  for (int k = 0; k < 2; k++) {
    WM_CHECK(out[k][0] && out[k][1] && out[k][2]);
    for (size_t i = 0; out[k][0] && out[k][1] && out[k][2] && i < x->count;
         i++) {
      float v = ((float *)x->data)[i], b = v < 0 ? -v : 0;
      WM_CHECK_DBL_NEAR(((float *)out[k][0]->data)[i], b, 0);
      WM_CHECK_DBL_NEAR(((float *)out[k][1]->data)[i], -b, 0);
      WM_CHECK_DBL_NEAR(((float *)out[k][2]->data)[i], v > 0 ? v : 0, 0);
    }
    for (int j = 0; j < 3; j++) {
      wm_tensor_destroy(out[k][j]);
    }
  }
  wm_tensor_destroy(x);
  wm_graph_destroy(g);
  wm_backend_destroy(ip);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(a_plan_is_made_once_per_input_shape_and_reused),
      WM_CASE(shape_computations_are_folded_into_the_plan),
      WM_CASE(data_dependent_shapes_are_placed_while_running),
      WM_CASE(values_share_arena_memory_when_their_lifetimes_do_not_overlap),
      WM_CASE(a_reshape_is_a_view_of_its_input_and_copies_nothing),
      WM_CASE(weights_are_used_in_place_on_host_memory_backends),
      WM_CASE(run_into_writes_the_callers_tensors_and_checks_their_shape),
      WM_CASE(an_output_takes_its_inputs_bytes_where_the_backend_allows),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
