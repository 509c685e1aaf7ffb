// Tests of the IR: dtypes, shapes, tensors, the builder, the verifier,
// topological order and equality.
#include <math.h>
#include <stdlib.h>

#include "wm_test.h"
#include "wmap/graph.h"

WM_TEST(dtype_sizes_and_names_follow_onnx_numbering) {
  WM_CHECK_INT_EQ(WM_DTYPE_BFLOAT16, 16);
  WM_CHECK_INT_EQ(wm_dtype_size(WM_DTYPE_FLOAT16), 2);
  WM_CHECK_INT_EQ(wm_dtype_size(WM_DTYPE_INT64), 8);
  WM_CHECK_STR_EQ(wm_dtype_name(WM_DTYPE_UINT32), "uint32");
  WM_CHECK(!wm_dtype_is_valid(0));
  WM_CHECK(!wm_dtype_is_valid(99));
}

WM_TEST(half_conversions_round_to_nearest_even) {
  WM_CHECK_INT_EQ(wm_f32_to_f16(1.0f), 0x3c00);
  WM_CHECK_INT_EQ(wm_f32_to_f16(65504.0f), 0x7bff);
  WM_CHECK_INT_EQ(wm_f32_to_f16(1e6f), 0x7c00);
  WM_CHECK_DBL_NEAR(wm_f16_to_f32(0x0001), 5.960464477539063e-08, 1e-20);
  WM_CHECK_INT_EQ(wm_f32_to_f16(wm_f16_to_f32(0x0001)), 0x0001);
  WM_CHECK(isnan(wm_f16_to_f32(wm_f32_to_f16(NAN))));
  // 1 + 2^-11 is halfway between 1 and the next half: ties to even (1).
  WM_CHECK_INT_EQ(wm_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
  WM_CHECK_INT_EQ(wm_f32_to_bf16(1.0f), 0x3f80);
  WM_CHECK_DBL_NEAR(wm_bf16_to_f32(0x4049), 3.140625, 0);
}

WM_TEST(shape_broadcast_follows_numpy_rules) {
  int64_t a[] = {8, 1, 6, 1}, b[] = {7, 1, 5};
  wm_shape_t sa = wm_shape_make(4, a), sb = wm_shape_make(3, b), out;
  WM_CHECK_OK(wm_shape_broadcast(&sa, &sb, &out));
  char buf[64];
  WM_CHECK_STR_EQ(wm_shape_format(&out, buf, sizeof(buf)), "[8,7,6,5]");
}

WM_TEST(shape_broadcast_rejects_mismatched_dims) {
  int64_t a[] = {2, 3}, b[] = {4};
  wm_shape_t sa = wm_shape_make(2, a), sb = wm_shape_make(1, b), out;
  WM_CHECK_ERR(wm_shape_broadcast(&sa, &sb, &out), INVALID_ARGUMENT,
               "shapes [2,3] and [4] cannot be broadcast");
}

WM_TEST(tensor_create_rejects_overflowing_shapes) {
  int64_t dims[] = {INT64_MAX / 2, 4};
  wm_shape_t s = wm_shape_make(2, dims);
  wm_tensor_t *t;
  WM_CHECK_ERR(wm_tensor_create(WM_DTYPE_FLOAT, &s, &t), RESOURCE_EXHAUSTED,
               "is too large");
  int64_t neg[] = {-3};
  s = wm_shape_make(1, neg);
  WM_CHECK_ERR(wm_tensor_create(WM_DTYPE_FLOAT, &s, &t), INVALID_ARGUMENT,
               "dim 0 is -3");
}

WM_TEST(tensor_clone_copies_strings_deeply) {
  int64_t dims[] = {2};
  wm_shape_t s = wm_shape_make(1, dims);
  wm_tensor_t *t, *c;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_STRING, &s, &t));
  WM_CHECK_OK(wm_tensor_set_string(t, 1, "monday", 6));
  WM_CHECK_OK(wm_tensor_clone(t, &c));
  WM_CHECK(wm_tensor_equal(t, c));
  WM_CHECK_OK(wm_tensor_set_string(t, 1, "tuesday", 7));
  WM_CHECK_STR_EQ(((char **)c->data)[1], "monday");
  WM_CHECK(!wm_tensor_equal(t, c));
  wm_tensor_destroy(t);
  wm_tensor_destroy(c);
}

WM_TEST(int64_access_stays_exact_beyond_double_precision) {
  int64_t dims[] = {1};
  wm_shape_t s = wm_shape_make(1, dims);
  wm_tensor_t *t;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_INT64, &s, &t));
  wm_tensor_set_i64(t, 0, (INT64_C(1) << 60) + 1);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(t, 0), (INT64_C(1) << 60) + 1);
  wm_tensor_destroy(t);
}

// Builds x -> Relu -> r -> Add(r, w) -> y with an initializer w.
static wm_status_t build_small(wm_graph_t **out) {
  WM_RETURN_IF_ERROR(wm_graph_create("small", NULL, out));
  wm_graph_t *g = *out;
  int64_t dims[] = {2, 3};
  wm_shape_t s = wm_shape_make(2, dims);
  wm_type_t t = wm_type_tensor(WM_DTYPE_FLOAT, &s);
  WM_RETURN_IF_ERROR(wm_graph_set_opset(g, "", 17));
  WM_RETURN_IF_ERROR(wm_graph_add_input(g, "x", &t, NULL));
  wm_tensor_t *w;
  WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_FLOAT, &s, &w));
  WM_RETURN_IF_ERROR(wm_graph_add_initializer(g, "w", w, NULL));
  const char *add_in[] = {"r", "w"}, *add_out[] = {"y"};
  const char *relu_in[] = {"x"}, *relu_out[] = {"r"};
  // Added out of order on purpose: topological order must fix it.
  int32_t n;
  WM_RETURN_IF_ERROR(
      wm_graph_add_node(g, "Add", "", "add", add_in, 2, add_out, 1, &n));
  WM_RETURN_IF_ERROR(wm_graph_add_attr_int(g, n, "unused", 7));
  WM_RETURN_IF_ERROR(
      wm_graph_add_node(g, "Relu", "", "relu", relu_in, 1, relu_out, 1, NULL));
  return wm_graph_add_output(g, "y", NULL, NULL);
}

// A type that contradicts an initializer would make the checks and
// kernels read its data by the wrong shape (found by session_run_fuzz).
WM_TEST(set_type_rejects_a_type_contradicting_the_initializer) {
  wm_graph_t *g;
  WM_CHECK_OK(build_small(&g));
  int32_t w = wm_graph_find_value(g, "w");
  int64_t three[] = {3};
  wm_shape_t s3 = wm_shape_make(1, three);
  wm_type_t t = wm_type_tensor(WM_DTYPE_FLOAT, &s3);
  WM_CHECK_ERR(wm_graph_set_type(g, w, &t), INVALID_ARGUMENT,
               "value \"w\": type float[3] contradicts its initializer "
               "float[2,3]");
  WM_CHECK_ERR(wm_graph_add_input(g, "w", &t, NULL), INVALID_ARGUMENT,
               "contradicts its initializer");
  t = wm_type_tensor(WM_DTYPE_INT64, &g->values[w].type.shape);
  WM_CHECK_ERR(wm_graph_set_type(g, w, &t), INVALID_ARGUMENT,
               "type int64[2,3] contradicts");
  // Saying less keeps the initializer's type.
  t = wm_type_unknown();
  WM_CHECK_OK(wm_graph_set_type(g, w, &t));
  WM_CHECK_INT_EQ(g->values[w].type.dtype, WM_DTYPE_FLOAT);
  WM_CHECK_INT_EQ(g->values[w].type.shape.rank, 2);
  WM_CHECK_INT_EQ(g->values[w].type.shape.dims[1], 3);
  wm_graph_destroy(g);
}

WM_TEST(topo_order_puts_producers_first) {
  wm_graph_t *g;
  WM_CHECK_OK(build_small(&g));
  WM_CHECK_OK(wm_graph_verify(g));
  int32_t *order;
  WM_CHECK_OK(wm_graph_topo_order(g, &order));
  WM_CHECK_STR_EQ(g->nodes[order[0]].op_type, "Relu");
  WM_CHECK_STR_EQ(g->nodes[order[1]].op_type, "Add");
  free(order);
  WM_CHECK_INT_EQ(wm_node_attr_int(&g->nodes[0], "unused", 0), 7);
  WM_CHECK_INT_EQ(wm_node_attr_int(&g->nodes[0], "absent", -5), -5);
  WM_CHECK_INT_EQ(wm_graph_opset(g, "ai.onnx"), 17);
  wm_graph_destroy(g);
}

WM_TEST(verify_names_an_undefined_input) {
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("g", NULL, &g));
  const char *in[] = {"ghost"}, *out[] = {"y"};
  WM_CHECK_OK(wm_graph_add_node(g, "Relu", "", "r1", in, 1, out, 1, NULL));
  WM_CHECK_ERR(wm_graph_verify(g), INVALID_ARGUMENT,
               "node \"r1\" (Relu): input 0 \"ghost\" is not defined");
  wm_graph_destroy(g);
}

WM_TEST(verify_rejects_a_cycle) {
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("g", NULL, &g));
  const char *a_in[] = {"b"}, *a_out[] = {"a"};
  const char *b_in[] = {"a"}, *b_out[] = {"b"};
  WM_CHECK_OK(wm_graph_add_node(g, "Relu", "", "n1", a_in, 1, a_out, 1, NULL));
  WM_CHECK_OK(wm_graph_add_node(g, "Relu", "", "n2", b_in, 1, b_out, 1, NULL));
  WM_CHECK_ERR(wm_graph_verify(g), INVALID_ARGUMENT, "has a cycle");
  wm_graph_destroy(g);
}

WM_TEST(builder_rejects_two_producers_of_one_value) {
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("g", NULL, &g));
  const char *in[] = {"x"}, *out[] = {"y"};
  WM_CHECK_OK(wm_graph_add_node(g, "Relu", "", "n1", in, 1, out, 1, NULL));
  WM_CHECK_ERR(wm_graph_add_node(g, "Neg", "", "n2", in, 1, out, 1, NULL),
               INVALID_ARGUMENT, "output \"y\" is already defined");
  wm_graph_destroy(g);
}

WM_TEST(subgraph_sees_outer_scope_values) {
  wm_graph_t *g, *body;
  WM_CHECK_OK(wm_graph_create("outer", NULL, &g));
  wm_type_t t = wm_type_unknown();
  WM_CHECK_OK(wm_graph_add_input(g, "x", &t, NULL));
  WM_CHECK_OK(wm_graph_add_input(g, "cond", &t, NULL));
  WM_CHECK_OK(wm_graph_create("then", g, &body));
  const char *in[] = {"x"}, *out[] = {"t"};
  WM_CHECK_OK(wm_graph_add_node(body, "Relu", "", "", in, 1, out, 1, NULL));
  WM_CHECK_OK(wm_graph_add_output(body, "t", NULL, NULL));
  const char *if_in[] = {"cond"}, *if_out[] = {"y"};
  int32_t n;
  WM_CHECK_OK(wm_graph_add_node(g, "If", "", "if", if_in, 1, if_out, 1, &n));
  WM_CHECK_OK(wm_graph_add_attr_graph(g, n, "then_branch", body));
  WM_CHECK_OK(wm_graph_verify(g));
  wm_graph_destroy(g);
}

WM_TEST(graph_equal_reports_the_first_difference) {
  wm_graph_t *a, *b;
  WM_CHECK_OK(build_small(&a));
  WM_CHECK_OK(build_small(&b));
  char why[256] = "";
  WM_CHECK(wm_graph_equal(a, b, why, sizeof(why)));
  wm_tensor_set_f64(b->values[wm_graph_find_value(b, "w")].initializer, 0, 1.0);
  WM_CHECK(!wm_graph_equal(a, b, why, sizeof(why)));
  WM_CHECK(strstr(why, "initializer \"w\" differs") != NULL);
  wm_graph_destroy(a);
  wm_graph_destroy(b);
}

// Exporters store weights as initializers or as Constant nodes: both are
// constants, and float ones of rank >= 1 are parameters.
WM_TEST(constant_node_tensors_are_constants_and_parameters) {
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("g", NULL, &g));
  int64_t d[2] = {3, 4};
  wm_shape_t shape = wm_shape_make(2, d);
  wm_tensor_t *w, *init;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_FLOAT, &shape, &w));
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_FLOAT, &shape, &init));
  WM_CHECK_OK(wm_graph_add_initializer(g, "b", init, NULL));
  const char *out = "w";
  int32_t c;
  WM_CHECK_OK(wm_graph_add_node(g, "Constant", "", "c", NULL, 0, &out, 1, &c));
  WM_CHECK_OK(wm_graph_add_attr_tensor(g, c, "value", w));
  const char *ins[2] = {"w", "b"}, *y = "y";
  int32_t n;
  WM_CHECK_OK(wm_graph_add_node(g, "Add", "", "add", ins, 2, &y, 1, &n));
  int32_t wid = wm_graph_find_value(g, "w"), yid = wm_graph_find_value(g, "y");
  WM_CHECK(wm_graph_const_value(g, wid) == w);
  WM_CHECK(wm_graph_const_value(g, wm_graph_find_value(g, "b")) == init);
  WM_CHECK(wm_graph_const_value(g, yid) == NULL);
  WM_CHECK_INT_EQ(wm_graph_param_count(g), 24);
  wm_graph_destroy(g);
}

WM_TEST(clone_copies_values_nodes_and_subgraphs) {
  wm_graph_t *a, *body, *c;
  WM_CHECK_OK(build_small(&a));
  WM_CHECK_OK(wm_graph_create("then", a, &body));
  const char *in[] = {"x"}, *out[] = {"t"};
  WM_CHECK_OK(wm_graph_add_node(body, "Neg", "", "neg", in, 1, out, 1, NULL));
  WM_CHECK_OK(wm_graph_add_output(body, "t", NULL, NULL));
  body->values[wm_graph_find_value(body, "x")].is_outer = true;
  const char *if_in[] = {"y"}, *if_out[] = {"z"};
  int32_t n;
  WM_CHECK_OK(wm_graph_add_node(a, "If", "", "if", if_in, 1, if_out, 1, &n));
  WM_CHECK_OK(wm_graph_add_attr_graph(a, n, "then_branch", body));
  WM_CHECK_OK(wm_graph_clone(a, NULL, &c));
  char why[256] = "";
  WM_CHECK(wm_graph_equal(a, c, why, sizeof(why)));
  const wm_graph_t *sub = wm_node_attr(&c->nodes[n], "then_branch")->g;
  WM_CHECK(sub != body && sub->parent == c);
  WM_CHECK(sub->values[wm_graph_find_value(sub, "x")].is_outer);
  for (size_t v = 0; v < a->value_count; v++) {
    WM_CHECK_STR_EQ(c->values[v].name, a->values[v].name);
  }
  // A deep copy: changing the clone leaves the source alone.
  wm_tensor_set_f64(c->values[wm_graph_find_value(c, "w")].initializer, 0, 1);
  WM_CHECK(!wm_graph_equal(a, c, why, sizeof(why)));
  wm_graph_destroy(a);
  wm_graph_destroy(c);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(constant_node_tensors_are_constants_and_parameters),
      WM_CASE(clone_copies_values_nodes_and_subgraphs),
      WM_CASE(dtype_sizes_and_names_follow_onnx_numbering),
      WM_CASE(half_conversions_round_to_nearest_even),
      WM_CASE(shape_broadcast_follows_numpy_rules),
      WM_CASE(shape_broadcast_rejects_mismatched_dims),
      WM_CASE(tensor_create_rejects_overflowing_shapes),
      WM_CASE(tensor_clone_copies_strings_deeply),
      WM_CASE(int64_access_stays_exact_beyond_double_precision),
      WM_CASE(set_type_rejects_a_type_contradicting_the_initializer),
      WM_CASE(topo_order_puts_producers_first),
      WM_CASE(verify_names_an_undefined_input),
      WM_CASE(verify_rejects_a_cycle),
      WM_CASE(builder_rejects_two_producers_of_one_value),
      WM_CASE(subgraph_sees_outer_scope_values),
      WM_CASE(graph_equal_reports_the_first_difference),
      {NULL, NULL}};
  return wm_test_main(cases);
}
