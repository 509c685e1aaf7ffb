// Tests of the reference backend through the plugin host and a session:
// negotiation, running a graph, and the errors users can hit.
#include <stdlib.h>

#include "ref.h"
#include "wm_test.h"
#include "wmap/session.h"

static wm_status_t open_ref(wm_backend_t **out) {
  return wm_backend_create(wm_ref_plugin_query, "built-in", out);
}

WM_TEST(ref_negotiates_and_describes_the_host) {
  wm_backend_t *b;
  WM_CHECK_OK(open_ref(&b));
  WM_CHECK_STR_EQ(wm_backend_name(b), "ref");
  WM_CHECK_INT_EQ(wm_backend_api(b)->abi_major, WM_ABI_MAJOR);
  WM_CHECK_INT_EQ(wm_backend_target_count(b), 1);
  WM_CHECK_INT_EQ(wm_backend_target(b, 0)->kind, WM_TARGET_CPU);
  wm_backend_destroy(b);
}

static wm_error *wrong_major(uint32_t major, uint32_t minor,
                             const wm_host_api *host,
                             const wm_plugin_api **out) {
  return wm_ref_plugin_query(major + 1, minor, host, out);
}

WM_TEST(host_refuses_a_plugin_of_another_major) {
  wm_backend_t *b;
  WM_CHECK_ERR(wm_backend_create(wrong_major, "libwrong.so", &b), INCOMPATIBLE,
               "plugin \"libwrong.so\": refused host ABI");
  WM_CHECK(b == NULL);
}

// y = Relu(x) + w, with x of shape [2,3] and w an initializer.
static wm_status_t build(wm_graph_t **out, const char *op) {
  WM_RETURN_IF_ERROR(wm_graph_create("g", NULL, out));
  wm_graph_t *g = *out;
  int64_t dims[] = {2, 3};
  wm_shape_t s = wm_shape_make(2, dims);
  wm_type_t t = wm_type_tensor(WM_DTYPE_FLOAT, &s);
  WM_RETURN_IF_ERROR(wm_graph_set_opset(g, "", 17));
  WM_RETURN_IF_ERROR(wm_graph_add_input(g, "x", &t, NULL));
  wm_tensor_t *w;
  WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_FLOAT, &s, &w));
  for (size_t i = 0; i < 6; i++) {
    wm_tensor_set_f64(w, i, 10.0 * (double)i);
  }
  WM_RETURN_IF_ERROR(wm_graph_add_initializer(g, "w", w, NULL));
  const char *relu_in[] = {"x"}, *relu_out[] = {"r"};
  const char *add_in[] = {"r", "w"}, *add_out[] = {"y"};
  WM_RETURN_IF_ERROR(
      wm_graph_add_node(g, op, "", "act", relu_in, 1, relu_out, 1, NULL));
  WM_RETURN_IF_ERROR(
      wm_graph_add_node(g, "Add", "", "add", add_in, 2, add_out, 1, NULL));
  return wm_graph_add_output(g, "y", NULL, NULL);
}

static wm_status_t make_input(wm_tensor_t **out) {
  int64_t dims[] = {2, 3};
  wm_shape_t s = wm_shape_make(2, dims);
  WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_FLOAT, &s, out));
  for (size_t i = 0; i < 6; i++) {
    wm_tensor_set_f64(*out, i, (double)i - 2.5);
  }
  return NULL;
}

WM_TEST(session_runs_a_graph_twice_with_the_same_answer) {
  wm_backend_t *b;
  wm_graph_t *g;
  wm_session_t *s;
  wm_tensor_t *x, *y = NULL;
  WM_CHECK_OK(open_ref(&b));
  WM_CHECK_OK(build(&g, "Relu"));
  WM_CHECK_OK(wm_session_create(g, b, &s));
  WM_CHECK_OK(make_input(&x));
  const char *names[] = {"x"};
  for (int run = 0; run < 2; run++) {
    WM_CHECK_OK(
        wm_session_run(s, names, (const wm_tensor_t *const *)&x, 1, &y));
    WM_CHECK_INT_EQ(y->shape.rank, 2);
    for (size_t i = 0; i < 6; i++) {
      double xi = (double)i - 2.5;
      WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, i),
                        (xi > 0 ? xi : 0) + 10.0 * (double)i, 0);
    }
    wm_tensor_destroy(y);
  }
  wm_tensor_destroy(x);
  wm_session_destroy(s);
  wm_graph_destroy(g);
  wm_backend_destroy(b);
}

WM_TEST(session_names_a_missing_input) {
  wm_backend_t *b;
  wm_graph_t *g;
  wm_session_t *s;
  wm_tensor_t *y = NULL;
  WM_CHECK_OK(open_ref(&b));
  WM_CHECK_OK(build(&g, "Relu"));
  WM_CHECK_OK(wm_session_create(g, b, &s));
  WM_CHECK_ERR(wm_session_run(s, NULL, NULL, 0, &y), INVALID_ARGUMENT,
               "input \"x\" is not given");
  wm_session_destroy(s);
  wm_graph_destroy(g);
  wm_backend_destroy(b);
}

WM_TEST(session_create_names_an_unknown_operator) {
  wm_backend_t *b;
  wm_graph_t *g;
  wm_session_t *s;
  WM_CHECK_OK(open_ref(&b));
  WM_CHECK_OK(build(&g, "Frobnicate"));
  WM_CHECK_ERR(wm_session_create(g, b, &s), UNIMPLEMENTED,
               "node \"act\" (Frobnicate): operator Frobnicate at opset 17 "
               "is not implemented");
  wm_graph_destroy(g);
  wm_backend_destroy(b);
}

WM_TEST(session_create_survives_every_failing_allocation) {
  wm_backend_t *b;
  WM_CHECK_OK(open_ref(&b));
  int failures = 0;
  for (int64_t n = 1; n < 400; n++) {
    wm_graph_t *g;
    WM_CHECK_OK(build(&g, "Relu"));
    wm_session_t *s = NULL;
    wm_alloc_fail_after(n);
    wm_status_t st = wm_session_create(g, b, &s);
    wm_alloc_fail_after(0);
    if (st) {
      failures++;
      WM_CHECK(s == NULL);
      wm_status_free(st);
    }
    wm_session_destroy(s);
    wm_graph_destroy(g);
  }
  WM_CHECK(failures > 0);
  wm_backend_destroy(b);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(ref_negotiates_and_describes_the_host),
      WM_CASE(host_refuses_a_plugin_of_another_major),
      WM_CASE(session_runs_a_graph_twice_with_the_same_answer),
      WM_CASE(session_names_a_missing_input),
      WM_CASE(session_create_names_an_unknown_operator),
      WM_CASE(session_create_survives_every_failing_allocation),
      {NULL, NULL}};
  return wm_test_main(cases);
}
