// Tests of graph-level checking: schema errors, inference through folded
// shape computations, and declared types.
#include <stdint.h>
#include <stdlib.h>

#include "ops/ops.h"
#include "wm_test.h"

// x: float[2,3] (value unknown) -> Shape -> s; z: float[6]; Reshape(z, s).
static wm_status_t build_reshape_by_shape(wm_graph_t **out) {
  WM_RETURN_IF_ERROR(wm_graph_create("g", NULL, out));
  wm_graph_t *g = *out;
  WM_RETURN_IF_ERROR(wm_graph_set_opset(g, "", 17));
  int64_t dx[] = {2, 3}, dz[] = {6};
  wm_shape_t sx = wm_shape_make(2, dx), sz = wm_shape_make(1, dz);
  wm_type_t tx = wm_type_tensor(WM_DTYPE_FLOAT, &sx);
  wm_type_t tz = wm_type_tensor(WM_DTYPE_FLOAT, &sz);
  WM_RETURN_IF_ERROR(wm_graph_add_input(g, "x", &tx, NULL));
  WM_RETURN_IF_ERROR(wm_graph_add_input(g, "z", &tz, NULL));
  const char *shape_in[] = {"x"}, *shape_out[] = {"s"};
  const char *reshape_in[] = {"z", "s"}, *reshape_out[] = {"y"};
  WM_RETURN_IF_ERROR(wm_graph_add_node(g, "Shape", "", "shape", shape_in, 1,
                                       shape_out, 1, NULL));
  WM_RETURN_IF_ERROR(wm_graph_add_node(g, "Reshape", "", "reshape", reshape_in,
                                       2, reshape_out, 1, NULL));
  return wm_graph_add_output(g, "y", NULL, NULL);
}

WM_TEST(shape_of_a_known_shape_folds_into_reshape) {
  wm_graph_t *g;
  WM_CHECK_OK(build_reshape_by_shape(&g));
  WM_CHECK_OK(wm_ops_check_graph(g));
  const wm_type_t *y = &g->values[wm_graph_find_value(g, "y")].type;
  char buf[64];
  WM_CHECK_STR_EQ(wm_type_format(y, buf, sizeof(buf)), "float[2,3]");
  wm_graph_destroy(g);
}

// MatMul of constants a [1, 4096] and b [4096, n] -> y.
static wm_status_t build_constant_matmul(int64_t n, wm_graph_t **out) {
  WM_RETURN_IF_ERROR(wm_graph_create("g", NULL, out));
  wm_graph_t *g = *out;
  WM_RETURN_IF_ERROR(wm_graph_set_opset(g, "", 17));
  int64_t da[] = {1, 4096}, db[] = {4096, n};
  wm_shape_t sa = wm_shape_make(2, da), sb = wm_shape_make(2, db);
  wm_tensor_t *a, *b;
  WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_FLOAT, &sa, &a));
  WM_RETURN_IF_ERROR(wm_graph_add_initializer(g, "a", a, NULL));
  WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_FLOAT, &sb, &b));
  WM_RETURN_IF_ERROR(wm_graph_add_initializer(g, "b", b, NULL));
  const char *in[] = {"a", "b"}, *outs[] = {"y"};
  WM_RETURN_IF_ERROR(
      wm_graph_add_node(g, "MatMul", "", "mm", in, 2, outs, 1, NULL));
  return wm_graph_add_output(g, "y", NULL, NULL);
}

// Whether node 0 of a constant MatMul of |n| columns folds under
// |fold_limit|.
static wm_status_t matmul_folds(int64_t n, size_t fold_limit, bool *folded) {
  wm_graph_t *g;
  WM_RETURN_IF_ERROR(build_constant_matmul(n, &g));
  wm_op_ctx_t ctx;
  const wm_op_def_t *def = NULL;
  wm_status_t s = wm_op_ctx_init(&ctx, g, 0);
  if (!s) {
    s = wm_op_find_def(&ctx, &def);
    if (!s) {
      s = wm_op_infer_node(def, &ctx, fold_limit, folded);
    }
    for (int32_t i = 0; *folded && i < ctx.n_out; i++) {
      wm_tensor_destroy(ctx.out[i]);
    }
    wm_op_ctx_deinit(&ctx);
  }
  wm_graph_destroy(g);
  return s;
}

// A fold is bounded by work as well as by its output's size: 2 * 4096 * 64
// operations fit the check's 2^16 * 16, 2 * 4096 * 256 do not (the node is
// left to the run) but fit the fold pass's larger limit.
WM_TEST(folding_is_bounded_by_the_nodes_work) {
  bool folded = false;
  WM_CHECK_OK(matmul_folds(64, WM_OP_FOLD_LIMIT, &folded));
  WM_CHECK(folded);
  folded = true;
  WM_CHECK_OK(matmul_folds(256, WM_OP_FOLD_LIMIT, &folded));
  WM_CHECK(!folded);
  WM_CHECK_OK(matmul_folds(256, (size_t)1 << 20, &folded));
  WM_CHECK(folded);
}

WM_TEST(check_names_an_operator_missing_from_the_registry) {
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("g", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
  wm_type_t t = wm_type_unknown();
  WM_CHECK_OK(wm_graph_add_input(g, "x", &t, NULL));
  const char *in[] = {"x"}, *out[] = {"y"};
  WM_CHECK_OK(
      wm_graph_add_node(g, "Relu", "com.example", "r", in, 1, out, 1, NULL));
  WM_CHECK_ERR(wm_ops_check_graph(g), UNIMPLEMENTED,
               "node \"r\" (Relu): operator com.example.Relu at opset 0 is "
               "not implemented");
  wm_graph_destroy(g);
}

WM_TEST(check_rejects_wrong_arity) {
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("g", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
  wm_type_t t = wm_type_unknown();
  WM_CHECK_OK(wm_graph_add_input(g, "x", &t, NULL));
  const char *in[] = {"x", "x", "x"}, *out[] = {"y"};
  WM_CHECK_OK(wm_graph_add_node(g, "Relu", "", "r", in, 3, out, 1, NULL));
  WM_CHECK_ERR(wm_ops_check_graph(g), INVALID_ARGUMENT,
               "node \"r\" (Relu): has 3 inputs, want 1 to 1");
  wm_graph_destroy(g);
}

// Dropout's output 0 given as "" (only the mask kept): refused at check,
// never run with no tensor for it.
WM_TEST(check_rejects_an_omitted_required_output) {
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("g", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 16));
  int64_t d[] = {2};
  wm_shape_t sh = wm_shape_make(1, d);
  wm_type_t t = wm_type_tensor(WM_DTYPE_FLOAT, &sh);
  WM_CHECK_OK(wm_graph_add_input(g, "x", &t, NULL));
  const char *in[] = {"x"}, *out[] = {"", "mask"};
  WM_CHECK_OK(wm_graph_add_node(g, "Dropout", "", "d", in, 1, out, 2, NULL));
  WM_CHECK_OK(wm_graph_add_output(g, "mask", NULL, NULL));
  WM_CHECK_ERR(wm_ops_check_graph(g), INVALID_ARGUMENT,
               "node \"d\" (Dropout): required output 0 is omitted");
  wm_graph_destroy(g);
}

// Scan (opset 8 and 9+) with num_scan_inputs at INT64_MIN: refused naming
// it, with no signed overflow working out the state count.
WM_TEST(check_rejects_any_num_scan_inputs_without_overflow) {
  for (int64_t opset = 8; opset <= 9; opset++) {
    wm_graph_t *g, *body;
    WM_CHECK_OK(wm_graph_create("g", NULL, &g));
    WM_CHECK_OK(wm_graph_set_opset(g, "", opset));
    int64_t d[] = {1, 2};
    wm_shape_t sh = wm_shape_make(2, d);
    wm_type_t t = wm_type_tensor(WM_DTYPE_FLOAT, &sh);
    WM_CHECK_OK(wm_graph_add_input(g, "x", &t, NULL));
    const char *in8[] = {"", "x"}, *in9[] = {"x"}, *out[] = {"y"};
    int32_t n;
    WM_CHECK_OK(wm_graph_add_node(g, "Scan", "", "scan", opset == 8 ? in8 : in9,
                                  opset == 8 ? 2 : 1, out, 1, &n));
    WM_CHECK_OK(wm_graph_add_output(g, "y", NULL, NULL));
    WM_CHECK_OK(wm_graph_create("body", g, &body));
    WM_CHECK_OK(wm_graph_add_input(body, "b", &t, NULL));
    WM_CHECK_OK(wm_graph_add_output(body, "b", NULL, NULL));
    WM_CHECK_OK(wm_graph_add_attr_graph(g, n, "body", body));
    WM_CHECK_OK(wm_graph_add_attr_int(g, n, "num_scan_inputs", INT64_MIN));
    WM_CHECK_ERR(wm_ops_check_graph(g), INVALID_ARGUMENT,
                 "num_scan_inputs is -9223372036854775808");
    wm_graph_destroy(g);
  }
}

WM_TEST(check_rejects_a_declared_type_that_contradicts_inference) {
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("g", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
  int64_t d[] = {4};
  wm_shape_t s = wm_shape_make(1, d);
  wm_type_t tf = wm_type_tensor(WM_DTYPE_FLOAT, &s);
  wm_type_t ti = wm_type_tensor(WM_DTYPE_INT64, &s);
  WM_CHECK_OK(wm_graph_add_input(g, "x", &tf, NULL));
  const char *in[] = {"x"}, *out[] = {"y"};
  WM_CHECK_OK(wm_graph_add_node(g, "Relu", "", "r", in, 1, out, 1, NULL));
  WM_CHECK_OK(wm_graph_add_output(g, "y", &ti, NULL));
  WM_CHECK_ERR(wm_ops_check_graph(g), INVALID_ARGUMENT,
               "output \"y\" is declared int64 but computes float");
  wm_graph_destroy(g);
}

WM_TEST(every_registered_operator_has_a_shape_rule_and_kernel) {
  size_t n = wm_ops_count();
  WM_CHECK(n >= 140);
  for (size_t i = 0; i < n; i++) {
    const wm_op_def_t *d = wm_ops_at(i);
    WM_CHECK(d->name && d->infer && d->run);
    WM_CHECK(d->since_version >= 1);
    WM_CHECK(wm_ops_find(d->domain, d->name, d->since_version) == d);
  }
  WM_CHECK(wm_ops_at(n) == NULL);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(shape_of_a_known_shape_folds_into_reshape),
      WM_CASE(folding_is_bounded_by_the_nodes_work),
      WM_CASE(check_names_an_operator_missing_from_the_registry),
      WM_CASE(check_rejects_wrong_arity),
      WM_CASE(check_rejects_an_omitted_required_output),
      WM_CASE(check_rejects_any_num_scan_inputs_without_overflow),
      WM_CASE(check_rejects_a_declared_type_that_contradicts_inference),
      WM_CASE(every_registered_operator_has_a_shape_rule_and_kernel),
      {NULL, NULL}};
  return wm_test_main(cases);
}
