// Tests of the positional accessors of graph inputs and outputs.
#include "wm_test.h"
#include "wmap/graph.h"

// A graph y = x + w with w an initializer also listed as an input (the
// IR < 4 way of giving an input a default), x of shape [N,3].
static wm_graph_t *make_graph(void) {
  wm_graph_t *g = NULL;
  if (wm_graph_create("g", NULL, &g)) {
    return NULL;
  }
  int64_t dims[] = {-1, 3};
  wm_shape_t shape = wm_shape_make(2, dims);
  wm_type_t x = wm_type_tensor(WM_DTYPE_FLOAT, &shape);
  x.dim_params[0] = "N";
  int64_t wdims[] = {3};
  wm_shape_t wshape = wm_shape_make(1, wdims);
  wm_type_t wt = wm_type_tensor(WM_DTYPE_FLOAT, &wshape);
  wm_tensor_t *w = NULL;
  const char *ins[] = {"x", "w"}, *outs[] = {"y"};
  wm_status_t s = wm_graph_add_input(g, "x", &x, NULL);
  if (!s) {
    s = wm_tensor_create(WM_DTYPE_FLOAT, &wshape, &w);
  }
  if (!s) {
    s = wm_graph_add_initializer(g, "w", w, NULL);
  }
  if (!s) {
    s = wm_graph_add_input(g, "w", &wt, NULL);
  }
  if (!s) {
    s = wm_graph_add_node(g, "Add", "", "add", ins, 2, outs, 1, NULL);
  }
  if (!s) {
    s = wm_graph_add_output(g, "y", &x, NULL);
  }
  if (s) {
    wm_status_free(s);
    wm_graph_destroy(g);
    return NULL;
  }
  return g;
}

WM_TEST(graph_io_lists_inputs_with_types_and_initializers) {
  wm_graph_t *g = make_graph();
  WM_CHECK(g != NULL);
  WM_CHECK_INT_EQ(wm_graph_input_count(g), 2);
  WM_CHECK_STR_EQ(wm_graph_input_name(g, 0), "x");
  WM_CHECK_STR_EQ(wm_graph_input_name(g, 1), "w");
  const wm_type_t *t = wm_graph_input_type(g, 0);
  WM_CHECK(t != NULL);
  WM_CHECK_INT_EQ(t->kind, WM_TYPE_TENSOR);
  WM_CHECK_INT_EQ(t->dtype, WM_DTYPE_FLOAT);
  WM_CHECK_INT_EQ(t->shape.rank, 2);
  WM_CHECK_INT_EQ(t->shape.dims[1], 3);
  WM_CHECK_STR_EQ(t->dim_params[0], "N");
  WM_CHECK(t->dim_params[1] == NULL);
  WM_CHECK(!wm_graph_input_is_initializer(g, 0));
  WM_CHECK(wm_graph_input_is_initializer(g, 1));
  wm_graph_destroy(g);
}

WM_TEST(graph_io_lists_outputs) {
  wm_graph_t *g = make_graph();
  WM_CHECK(g != NULL);
  WM_CHECK_INT_EQ(wm_graph_output_count(g), 1);
  WM_CHECK_STR_EQ(wm_graph_output_name(g, 0), "y");
  WM_CHECK_INT_EQ(wm_graph_output_type(g, 0)->dtype, WM_DTYPE_FLOAT);
  WM_CHECK_STR_EQ(wm_graph_output_type(g, 0)->dim_params[0], "N");
  wm_graph_destroy(g);
}

WM_TEST(graph_io_answers_null_past_the_end) {
  wm_graph_t *g = make_graph();
  WM_CHECK(g != NULL);
  WM_CHECK(wm_graph_input_name(g, 2) == NULL);
  WM_CHECK(wm_graph_input_type(g, 2) == NULL);
  WM_CHECK(!wm_graph_input_is_initializer(g, 2));
  WM_CHECK(wm_graph_output_name(g, 1) == NULL);
  WM_CHECK(wm_graph_output_type(g, 1) == NULL);
  WM_CHECK_INT_EQ(wm_graph_input_count(NULL), 0);
  WM_CHECK_INT_EQ(wm_graph_output_count(NULL), 0);
  WM_CHECK(wm_graph_input_name(NULL, 0) == NULL);
  wm_graph_destroy(g);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(graph_io_lists_inputs_with_types_and_initializers),
      WM_CASE(graph_io_lists_outputs),
      WM_CASE(graph_io_answers_null_past_the_end),
      {NULL, NULL}};
  return wm_test_main(cases);
}
