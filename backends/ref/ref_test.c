// Tests of the reference backend through the plugin host and a session:
// negotiation, running a graph, and the errors users can hit.
#include <stdlib.h>
#include <string.h>

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

// A plugin message that starts with the function's name gets the backend
// prefix only: "backend \"ref\": mem_alloc: ...", never "mem_alloc:" twice.
WM_TEST(plugin_errors_name_the_function_once) {
  wm_backend_t *b;
  WM_CHECK_OK(open_ref(&b));
  const wm_plugin_api *api = wm_backend_api(b);
  wm_device *dev = NULL;
  WM_CHECK_OK(wm_backend_error(
      b, api->device_open(wm_backend_target(b, 0), &dev), "device_open"));
  wm_buffer *buf = NULL;
  wm_status_t s = wm_backend_error(
      b, api->device->mem_alloc(dev, 64, 48, 0, &buf), "mem_alloc");
  WM_CHECK(s != NULL);
  if (s) {
    const char *m = wm_status_message(s);
    WM_CHECK(strstr(m, "backend \"ref\": mem_alloc: alignment 48") != NULL);
    WM_CHECK(strstr(m, "mem_alloc: mem_alloc") == NULL);
    wm_status_free(s);
  }
  api->device->device_close(dev);
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

// A second backend for placement tests: ref's tables under the name
// "half", claiming only Relu.
static wm_plugin_api half_api;
static wm_library_tier half_library;
static const wm_plugin_api *ref_api;

static wm_error *half_get_info(wm_plugin_info *out) {
  wm_error *e = ref_api->get_info(out);
  out->name = "half";
  return e;
}

static wm_error *half_op_query(const wm_target_desc *t, const wm_op_desc *op,
                               wm_op_support *out) {
  wm_error *e = ref_api->library->op_query(t, op, out);
  if (!e && strcmp(op->op_type, "Relu") != 0) {
    out->level = WM_SUPPORT_NONE;
    out->reason = WM_WHY_OP;
    out->detail = "only Relu";
  }
  return e;
}

static wm_error *half_query(uint32_t major, uint32_t minor,
                            const wm_host_api *host,
                            const wm_plugin_api **out) {
  wm_error *e = wm_ref_plugin_query(major, minor, host, &ref_api);
  half_api = *ref_api;
  half_library = *ref_api->library;
  half_api.get_info = half_get_info;
  half_library.op_query = half_op_query;
  half_api.library = &half_library;
  *out = &half_api;
  return e;
}

WM_TEST(fallback_places_unclaimed_nodes_on_ref_and_copies_across) {
  wm_backend_t *ref, *half;
  WM_CHECK_OK(open_ref(&ref));
  WM_CHECK_OK(wm_backend_create(half_query, "test", &half));
  wm_graph_t *g;
  WM_CHECK_OK(build(&g, "Relu"));
  wm_session_options_t opts = {.backends = &half,
                               .backend_count = 1,
                               .fallback = ref,
                               .mode = WM_PLACEMENT_FALLBACK};
  wm_session_t *s;
  WM_CHECK_OK(wm_session_create_placed(g, &opts, &s));
  const wm_placement_t *act = wm_session_placement(s, 0);
  const wm_placement_t *add = wm_session_placement(s, 1);
  WM_CHECK_STR_EQ(act->backend, "half");
  WM_CHECK(!act->fell_back);
  WM_CHECK_STR_EQ(add->backend, "ref");
  WM_CHECK(add->fell_back);
  WM_CHECK_INT_EQ(add->refusal_count, 1);
  WM_CHECK_STR_EQ(add->refusals[0].detail, "only Relu");
  WM_CHECK_INT_EQ(wm_session_nodes_on(s, "half"), 1);
  WM_CHECK_INT_EQ(wm_session_stats(s).partitions, 2);
  wm_tensor_t *x, *y = NULL;
  WM_CHECK_OK(make_input(&x));
  const char *names[] = {"x"};
  WM_CHECK_OK(wm_session_run(s, names, (const wm_tensor_t *const *)&x, 1, &y));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 5), 2.5 + 50.0, 0);
  WM_CHECK_INT_EQ(wm_session_stats(s).boundary_copies, 1);
  WM_CHECK_INT_EQ(wm_session_stats(s).bytes_copied, 24);
  wm_strbuf_t json;
  wm_strbuf_init(&json);
  wm_session_placement_json(s, &json);
  WM_CHECK(strstr(wm_strbuf_str(&json), "\"fell_back\": true") != NULL);
  wm_strbuf_deinit(&json);
  wm_tensor_destroy(x);
  wm_tensor_destroy(y);
  wm_session_destroy(s);
  opts.mode = WM_PLACEMENT_STRICT;
  WM_CHECK_ERR(wm_session_create_placed(g, &opts, &s), UNIMPLEMENTED,
               "node \"add\" (Add): half: operator, only Relu");
  wm_graph_destroy(g);
  wm_backend_destroy(half);
  wm_backend_destroy(ref);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(ref_negotiates_and_describes_the_host),
      WM_CASE(plugin_errors_name_the_function_once),
      WM_CASE(host_refuses_a_plugin_of_another_major),
      WM_CASE(session_runs_a_graph_twice_with_the_same_answer),
      WM_CASE(session_names_a_missing_input),
      WM_CASE(session_create_names_an_unknown_operator),
      WM_CASE(session_create_survives_every_failing_allocation),
      WM_CASE(fallback_places_unclaimed_nodes_on_ref_and_copies_across),
      {NULL, NULL}};
  return wm_test_main(cases);
}
