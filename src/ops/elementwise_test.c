// Tests of wmap.Elementwise (elementwise.c): a program's values with
// broadcast inputs and constants, its shape rule, and the errors of bad
// programs.
#include <math.h>
#include <string.h>

#include "op_fixture.h"
#include "wm_test.h"

// A fixture with x [2,3] = 0..5 and c [3] = 0..2, and an Elementwise node
// reading them with |ops| / |args| (n steps) and constants 0.5, 2.
static wm_status_t program(wm_op_fixture_t *f, const char *const *ops,
                           const int64_t *args, size_t n) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 17));
  WM_RETURN_IF_ERROR(wm_graph_set_opset(f->graph, "wmap", 1));
  int64_t xd[2] = {2, 3}, cd[1] = {3};
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "x", WM_DTYPE_FLOAT, 2, xd, NULL));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "c", WM_DTYPE_FLOAT, 1, cd, NULL));
  static const char *const in[2] = {"x", "c"};
  static const char *const outs[1] = {"y0"};
  WM_RETURN_IF_ERROR(wm_graph_add_node(f->graph, "Elementwise", "wmap", "n", in,
                                       2, outs, 1, &f->node));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_strings(f, "ops", ops, n));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_ints(f, "args", args, 2 * n));
  float k[2] = {0.5f, 2.0f};
  return wm_graph_add_attr_floats(f->graph, f->node, "constants", k, 2);
}

WM_TEST(a_program_computes_its_steps_with_broadcasting) {
  // y = sqrt((x * 0.5 + c) * 2): operands 0 x, 1 c, 2.. steps, -1 0.5,
  // -2 2.
  static const char *const ops[] = {"Mul", "Add", "Mul", "Sqrt"};
  static const int64_t args[] = {0, -1, 2, 1, 3, -2, 4, 0};
  wm_op_fixture_t f;
  WM_CHECK_OK(program(&f, ops, args, 4));
  WM_CHECK_OK(wm_op_fixture_run(&f));
  double want[6];
  for (int i = 0; i < 6; i++) {
    want[i] = sqrt((i * 0.5 + i % 3) * 2);
  }
  int64_t yd[2] = {2, 3};
  WM_CHECK(wm_op_fixture_shape_is(f.out[0], 2, yd));
  WM_CHECK(wm_op_fixture_values_near(f.out[0], want, 6, 1e-6));
  wm_op_fixture_deinit(&f);
}

WM_TEST(bad_programs_are_errors_naming_the_step) {
  static const char *const unknown[] = {"Mish"};
  static const int64_t a1[] = {0, 0};
  static const char *const later[] = {"Add", "Neg"};
  static const int64_t a2[] = {0, 3, 2, 0};  // step 0 reads step 1
  static const char *const ok[] = {"Neg"};
  static const int64_t a3[] = {-3, 0};  // constant 2 of 0..1
  wm_op_fixture_t f;
  WM_CHECK_OK(program(&f, unknown, a1, 1));
  WM_CHECK(wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                    "\"Mish\" is not an elementwise step"));
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(program(&f, later, a2, 2));
  WM_CHECK(wm_op_fixture_fails_with(wm_op_fixture_run(&f),
                                    "step 0 (Add): operand 3 names no input"));
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(program(&f, ok, a3, 1));
  WM_CHECK(wm_op_fixture_fails_with(wm_op_fixture_run(&f), "operand -3"));
  wm_op_fixture_deinit(&f);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(a_program_computes_its_steps_with_broadcasting),
      WM_CASE(bad_programs_are_errors_naming_the_step),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
