// Tests of the fused operators (fused.c): each one against the unfused
// ONNX operators run one after the other on the reference kernels, for
// every activation; shape rules and the errors of bad attributes.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "op_fixture.h"
#include "wm_test.h"

enum { MAX_VALS = 4096 };

// A float tensor kept between fixtures.
typedef struct vals {
  int32_t rank;
  int64_t dims[4];
  size_t n;
  double v[MAX_VALS];
} vals_t;

static void vals_fill(vals_t *t, int32_t rank, const int64_t *dims,
                      uint32_t seed) {
  t->rank = rank;
  t->n = 1;
  for (int32_t i = 0; i < rank; i++) {
    t->dims[i] = dims[i];
    t->n *= (size_t)dims[i];
  }
  for (size_t i = 0; i < t->n; i++) {
    seed = seed * 1664525u + 1013904223u;
    t->v[i] = (double)((seed >> 8) & 0xffff) / 16384.0 - 2.0;
  }
}

static void vals_from(vals_t *t, const wm_tensor_t *x) {
  t->rank = x->shape.rank;
  memcpy(t->dims, x->shape.dims, sizeof(int64_t) * (size_t)x->shape.rank);
  t->n = x->count;
  for (size_t i = 0; i < x->count && i < MAX_VALS; i++) {
    t->v[i] = ((const float *)x->data)[i];
  }
}

static wm_status_t add_vals(wm_op_fixture_t *f, const char *name,
                            const vals_t *t) {
  return wm_op_fixture_add_const(f, name, WM_DTYPE_FLOAT, t->rank, t->dims,
                                 t->v);
}

// The activations, as the fused operators name them.
static const char *const kActs[] = {
    "",          "Relu", "Clip", "LeakyRelu", "Sigmoid",  "HardSigmoid",
    "HardSwish", "Tanh", "Silu", "Gelu",      "GeluTanh",
};
enum { N_ACTS = sizeof(kActs) / sizeof(kActs[0]) };

// Parameters the tests give each activation (count 0: the defaults).
static size_t act_params(const char *act, float *p) {
  if (!strcmp(act, "Clip")) {
    p[0] = -0.5f;
    p[1] = 0.75f;
    return 2;
  }
  if (!strcmp(act, "LeakyRelu")) {
    p[0] = 0.3f;
    return 1;
  }
  if (!strcmp(act, "HardSigmoid")) {
    p[0] = 0.25f;
    p[1] = 0.4f;
    return 2;
  }
  return 0;
}

// One node of the default domain at opset 20 on constant inputs; *out
// gets output 0.
static wm_status_t run_plain(const char *op, const vals_t *const *ins,
                             int32_t n_in, const char *attr_s,
                             const char *attr_s_val, const float *fl,
                             const char *const *fl_names, size_t n_fl,
                             vals_t *out) {
  static const char *const names[] = {"i0", "i1", "i2", "i3"};
  wm_op_fixture_t f;
  WM_RETURN_IF_ERROR(wm_op_fixture_init(&f, 20));
  wm_status_t s = NULL;
  for (int32_t i = 0; i < n_in && !s; i++) {
    s = add_vals(&f, names[i], ins[i]);
  }
  if (!s) {
    s = wm_op_fixture_add_node(&f, op, names, n_in, 1);
  }
  if (!s && attr_s) {
    s = wm_op_fixture_attr_string(&f, attr_s, attr_s_val);
  }
  for (size_t i = 0; i < n_fl && !s; i++) {
    s = wm_op_fixture_attr_float(&f, fl_names[i], fl[i]);
  }
  if (!s) {
    s = wm_op_fixture_run(&f);
  }
  if (!s) {
    vals_from(out, f.out[0]);
  }
  wm_op_fixture_deinit(&f);
  return s;
}

// The unfused activation |act| on |x| in place, by ONNX operators.
static wm_status_t run_act(const char *act, vals_t *x) {
  static vals_t tmp, lo, hi;
  const vals_t *in1[1] = {x};
  float p[2];
  act_params(act, p);
  if (!act[0]) {
    return NULL;
  }
  if (!strcmp(act, "Silu")) {
    WM_RETURN_IF_ERROR(
        run_plain("Sigmoid", in1, 1, NULL, NULL, NULL, NULL, 0, &tmp));
    const vals_t *in2[2] = {x, &tmp};
    return run_plain("Mul", in2, 2, NULL, NULL, NULL, NULL, 0, x);
  }
  if (!strcmp(act, "Clip")) {
    int64_t none[1] = {0};
    vals_fill(&lo, 0, none, 0);
    vals_fill(&hi, 0, none, 0);
    lo.v[0] = p[0];
    hi.v[0] = p[1];
    const vals_t *in3[3] = {x, &lo, &hi};
    return run_plain("Clip", in3, 3, NULL, NULL, NULL, NULL, 0, x);
  }
  if (!strcmp(act, "Gelu") || !strcmp(act, "GeluTanh")) {
    return run_plain("Gelu", in1, 1, "approximate",
                     strcmp(act, "Gelu") ? "tanh" : "none", NULL, NULL, 0, x);
  }
  static const char *const ab[2] = {"alpha", "beta"};
  size_t n = !strcmp(act, "LeakyRelu")     ? 1
             : !strcmp(act, "HardSigmoid") ? 2
                                           : 0;
  return run_plain(act, in1, 1, NULL, NULL, p, ab, n, x);
}

// The fused node |op| of domain "wmap" on |ins| ("" omitted when NULL)
// with integer attributes |ik|/|iv| and the activation |act|.
static wm_status_t run_fused(const char *op, const vals_t *const *ins,
                             int32_t n_in, const char *const *ik,
                             const int64_t *iv, size_t n_i, const char *act,
                             const char *fk, float fv, vals_t *out) {
  static const char *const names[] = {"i0", "i1", "i2", "i3"};
  const char *inputs[4];
  wm_op_fixture_t f;
  WM_RETURN_IF_ERROR(wm_op_fixture_init(&f, 20));
  wm_status_t s = wm_graph_set_opset(f.graph, "wmap", 1);
  for (int32_t i = 0; i < n_in && !s; i++) {
    inputs[i] = ins[i] ? names[i] : "";
    if (ins[i]) {
      s = add_vals(&f, names[i], ins[i]);
    }
  }
  static const char *const outs[1] = {"y0"};
  if (!s) {
    s = wm_graph_add_node(f.graph, op, "wmap", "n", inputs, n_in, outs, 1,
                          &f.node);
  }
  for (size_t i = 0; i < n_i && !s; i++) {
    s = wm_op_fixture_attr_int(&f, ik[i], iv[i]);
  }
  if (!s && fk) {
    s = wm_op_fixture_attr_float(&f, fk, fv);
  }
  if (!s) {
    s = wm_op_fixture_attr_string(&f, "activation", act);
  }
  float p[2];
  size_t np = act_params(act, p);
  if (!s && np) {
    s = wm_graph_add_attr_floats(f.graph, f.node, "activation_params", p, np);
  }
  if (!s) {
    s = wm_op_fixture_run(&f);
  }
  if (!s) {
    vals_from(out, f.out[0]);
  }
  wm_op_fixture_deinit(&f);
  return s;
}

// True when |a| and |b| agree in shape and values.
static bool vals_agree(const char *what, const char *act, const vals_t *a,
                       const vals_t *b) {
  if (a->rank != b->rank || a->n != b->n) {
    fprintf(stderr, "%s %s: rank %d / %zu elements, want %d / %zu\n", what, act,
            a->rank, a->n, b->rank, b->n);
    return false;
  }
  for (size_t i = 0; i < a->n; i++) {
    if (fabs(a->v[i] - b->v[i]) > 1e-4 + 1e-4 * fabs(b->v[i])) {
      fprintf(stderr, "%s %s: element %zu is %.9g, want %.9g\n", what, act, i,
              a->v[i], b->v[i]);
      return false;
    }
  }
  return true;
}

static vals_t g_x, g_w, g_b, g_z, g_got, g_want;

WM_TEST(fused_conv_matches_conv_add_and_activation) {
  int64_t xd[4] = {1, 4, 6, 5}, wd[4] = {6, 2, 3, 3}, bd[1] = {6};
  int64_t zd[4] = {1, 6, 3, 3};
  vals_fill(&g_x, 4, xd, 1);
  vals_fill(&g_w, 4, wd, 2);
  vals_fill(&g_b, 1, bd, 3);
  vals_fill(&g_z, 4, zd, 4);
  static const char *const ik[3] = {"group", "strides", "pads"};
  int bad = 0;
  for (int a = 0; a < N_ACTS; a++) {
    // group 2, stride 2 (as ints below), pads 1.
    const vals_t *fin[4] = {&g_x, &g_w, &g_b, &g_z};
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 20));
    WM_CHECK_OK(wm_graph_set_opset(f.graph, "wmap", 1));
    static const char *const names[4] = {"i0", "i1", "i2", "i3"};
    for (int i = 0; i < 4; i++) {
      WM_CHECK_OK(add_vals(&f, names[i], fin[i]));
    }
    static const char *const outs[1] = {"y0"};
    WM_CHECK_OK(wm_graph_add_node(f.graph, "FusedConv", "wmap", "n", names, 4,
                                  outs, 1, &f.node));
    int64_t two[2] = {2, 2}, one4[4] = {1, 1, 1, 1};
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, ik[0], 2));
    WM_CHECK_OK(wm_op_fixture_attr_ints(&f, ik[1], two, 2));
    WM_CHECK_OK(wm_op_fixture_attr_ints(&f, ik[2], one4, 4));
    WM_CHECK_OK(wm_op_fixture_attr_string(&f, "activation", kActs[a]));
    float p[2];
    size_t np = act_params(kActs[a], p);
    if (np) {
      WM_CHECK_OK(wm_graph_add_attr_floats(f.graph, f.node, "activation_params",
                                           p, np));
    }
    wm_status_t s = wm_op_fixture_run(&f);
    if (!s) {
      vals_from(&g_got, f.out[0]);
    }
    wm_op_fixture_deinit(&f);
    WM_CHECK_OK(s);
    // Unfused: Conv, Add Z, activation.
    WM_CHECK_OK(wm_op_fixture_init(&f, 20));
    for (int i = 0; i < 3; i++) {
      WM_CHECK_OK(add_vals(&f, names[i], fin[i]));
    }
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "Conv", names, 3, 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, ik[0], 2));
    WM_CHECK_OK(wm_op_fixture_attr_ints(&f, ik[1], two, 2));
    WM_CHECK_OK(wm_op_fixture_attr_ints(&f, ik[2], one4, 4));
    s = wm_op_fixture_run(&f);
    if (!s) {
      vals_from(&g_want, f.out[0]);
    }
    wm_op_fixture_deinit(&f);
    WM_CHECK_OK(s);
    const vals_t *add[2] = {&g_want, &g_z};
    WM_CHECK_OK(run_plain("Add", add, 2, NULL, NULL, NULL, NULL, 0, &g_want));
    WM_CHECK_OK(run_act(kActs[a], &g_want));
    bad += !vals_agree("FusedConv", kActs[a], &g_got, &g_want);
  }
  WM_CHECK_INT_EQ(bad, 0);
}

WM_TEST(fused_gemm_matches_gemm_and_activation) {
  int64_t ad[2] = {5, 7}, bd[2] = {9, 7}, cd[1] = {9};
  vals_fill(&g_x, 2, ad, 5);
  vals_fill(&g_w, 2, bd, 6);
  vals_fill(&g_b, 1, cd, 7);
  static const char *const ik[1] = {"transB"};
  const int64_t iv[1] = {1};
  int bad = 0;
  for (int a = 0; a < N_ACTS; a++) {
    const vals_t *in[3] = {&g_x, &g_w, &g_b};
    WM_CHECK_OK(run_fused("FusedGemm", in, 3, ik, iv, 1, kActs[a], "alpha",
                          0.5f, &g_got));
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 20));
    static const char *const names[3] = {"i0", "i1", "i2"};
    for (int i = 0; i < 3; i++) {
      WM_CHECK_OK(add_vals(&f, names[i], in[i]));
    }
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "Gemm", names, 3, 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "transB", 1));
    WM_CHECK_OK(wm_op_fixture_attr_float(&f, "alpha", 0.5f));
    wm_status_t s = wm_op_fixture_run(&f);
    if (!s) {
      vals_from(&g_want, f.out[0]);
    }
    wm_op_fixture_deinit(&f);
    WM_CHECK_OK(s);
    WM_CHECK_OK(run_act(kActs[a], &g_want));
    bad += !vals_agree("FusedGemm", kActs[a], &g_got, &g_want);
  }
  WM_CHECK_INT_EQ(bad, 0);
}

WM_TEST(fused_matmul_matches_matmul_bias_and_activation) {
  int64_t ad[3] = {2, 3, 6}, bd[2] = {6, 4}, biasd[1] = {4};
  vals_fill(&g_x, 3, ad, 8);
  vals_fill(&g_w, 2, bd, 9);
  vals_fill(&g_b, 1, biasd, 10);
  int bad = 0;
  for (int a = 0; a < N_ACTS; a++) {
    const vals_t *in[3] = {&g_x, &g_w, &g_b};
    WM_CHECK_OK(run_fused("FusedMatMul", in, 3, NULL, NULL, 0, kActs[a], NULL,
                          0, &g_got));
    WM_CHECK_OK(run_plain("MatMul", in, 2, NULL, NULL, NULL, NULL, 0, &g_want));
    const vals_t *add[2] = {&g_want, &g_b};
    WM_CHECK_OK(run_plain("Add", add, 2, NULL, NULL, NULL, NULL, 0, &g_want));
    WM_CHECK_OK(run_act(kActs[a], &g_want));
    bad += !vals_agree("FusedMatMul", kActs[a], &g_got, &g_want);
  }
  WM_CHECK_INT_EQ(bad, 0);
}

WM_TEST(fused_matmul_without_bias_is_matmul) {
  int64_t ad[2] = {3, 5}, bd[2] = {5, 2};
  vals_fill(&g_x, 2, ad, 11);
  vals_fill(&g_w, 2, bd, 12);
  const vals_t *in[2] = {&g_x, &g_w};
  WM_CHECK_OK(
      run_fused("FusedMatMul", in, 2, NULL, NULL, 0, "", NULL, 0, &g_got));
  WM_CHECK_OK(run_plain("MatMul", in, 2, NULL, NULL, NULL, NULL, 0, &g_want));
  WM_CHECK(vals_agree("FusedMatMul", "", &g_got, &g_want));
}

WM_TEST(fused_ops_reject_bad_activation_and_shapes) {
  int64_t ad[2] = {3, 5}, bd[2] = {5, 2}, biasd[1] = {3};
  vals_fill(&g_x, 2, ad, 13);
  vals_fill(&g_w, 2, bd, 14);
  vals_fill(&g_b, 1, biasd, 15);
  const vals_t *in[3] = {&g_x, &g_w, &g_b};
  WM_CHECK(wm_op_fixture_fails_with(
      run_fused("FusedMatMul", in, 2, NULL, NULL, 0, "Swish", NULL, 0, &g_got),
      "activation"));
  WM_CHECK(wm_op_fixture_fails_with(
      run_fused("FusedMatMul", in, 3, NULL, NULL, 0, "", NULL, 0, &g_got),
      "bias has shape [3], want [2]"));
  // Z of another shape than the output.
  int64_t xd[4] = {1, 2, 4, 4}, wd[4] = {3, 2, 1, 1}, zd[4] = {1, 3, 4, 5};
  vals_fill(&g_x, 4, xd, 16);
  vals_fill(&g_w, 4, wd, 17);
  vals_fill(&g_z, 4, zd, 18);
  const vals_t *cin[4] = {&g_x, &g_w, NULL, &g_z};
  WM_CHECK(wm_op_fixture_fails_with(
      run_fused("FusedConv", cin, 4, NULL, NULL, 0, "Relu", NULL, 0, &g_got),
      "Z has shape"));
}

WM_TEST(fused_op_rejects_wrong_parameter_count) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 20));
  WM_CHECK_OK(wm_graph_set_opset(f.graph, "wmap", 1));
  int64_t ad[2] = {2, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "a", WM_DTYPE_FLOAT, 2, ad, NULL));
  static const char *const in[2] = {"a", "a"};
  static const char *const outs[1] = {"y0"};
  WM_CHECK_OK(wm_graph_add_node(f.graph, "FusedGemm", "wmap", "n", in, 2, outs,
                                1, &f.node));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "activation", "Clip"));
  float p[1] = {0.5f};
  WM_CHECK_OK(
      wm_graph_add_attr_floats(f.graph, f.node, "activation_params", p, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  bool ok = wm_op_fixture_fails_with(s, "takes 2 activation_params, got 1");
  wm_op_fixture_deinit(&f);
  WM_CHECK(ok);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(fused_conv_matches_conv_add_and_activation),
      WM_CASE(fused_gemm_matches_gemm_and_activation),
      WM_CASE(fused_matmul_matches_matmul_bias_and_activation),
      WM_CASE(fused_matmul_without_bias_is_matmul),
      WM_CASE(fused_ops_reject_bad_activation_and_shapes),
      WM_CASE(fused_op_rejects_wrong_parameter_count),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
