// Graph passes: each rewrite computes what the user's graph computes (the
// same session without passes is the oracle), and the placement report
// says what became of every user node.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tests/plugins/plugin_common.h"
#include "../../tests/testing/wm_test.h"
#include "ref.h"
#include "wmap/onnx.h"
#include "wmap/session.h"

static wm_backend_t *ref;   // every session's backend (or fallback)
static wm_backend_t *bare;  // memory and no operators

// "bare": a device tier on host memory and no library tier, as a device
// plugin starts out; it implements no operator, fused ones included.
static wm_error *bare_info(wm_plugin_info *out) {
  return tp_info(out, "bare");
}
static const wm_device_tier bare_device = {TP_DEVICE_TIER_FIELDS};
static wm_plugin_api bare_api = {
    .get_info = bare_info,
    .enumerate = tp_enumerate,
    .device = &bare_device,
    TP_API_FIELDS,
};
static wm_error *bare_query(uint32_t major, uint32_t max_minor,
                            const wm_host_api *host,
                            const wm_plugin_api **out_api) {
  (void)host;
  return tp_hand_out(&bare_api, major, max_minor, out_api);
}

// A float tensor of |shape| holding a deterministic pattern from |seed|.
static wm_tensor_t *pattern(int32_t rank, const int64_t *dims, double seed) {
  wm_shape_t shape = {.rank = rank};
  memcpy(shape.dims, dims, (size_t)rank * sizeof(int64_t));
  wm_tensor_t *t = NULL;
  if (wm_tensor_create(WM_DTYPE_FLOAT, &shape, &t)) {
    return NULL;
  }
  for (size_t i = 0; i < t->count; i++) {
    ((float *)t->data)[i] = (float)sin(0.37 * (double)i + seed);
  }
  return t;
}

static wm_graph_t *new_graph(void) {
  wm_graph_t *g = NULL;
  wm_status_t s = wm_graph_create("g", NULL, &g);
  if (!s) {
    s = wm_graph_set_opset(g, "", 17);
  }
  wm_status_free(s);
  return g;
}

static void input(wm_graph_t *g, const char *name, int32_t rank,
                  const int64_t *dims) {
  wm_shape_t shape = {.rank = rank};
  memcpy(shape.dims, dims, (size_t)rank * sizeof(int64_t));
  wm_type_t t = wm_type_tensor(WM_DTYPE_FLOAT, &shape);
  int32_t id;
  WM_CHECK_OK(wm_graph_add_input(g, name, &t, &id));
}

static void weight(wm_graph_t *g, const char *name, int32_t rank,
                   const int64_t *dims, double seed) {
  wm_tensor_t *t = pattern(rank, dims, seed);
  WM_CHECK(t);
  WM_CHECK_OK(wm_graph_add_initializer(g, name, t, NULL));
}

// Adds a node; *out_n is its index (-1 and a test failure when it cannot).
static void node(wm_graph_t *g, const char *op, const char *name,
                 const char *const *ins, int32_t n_in, const char *out,
                 int32_t *out_n) {
  int32_t n = -1;
  if (out_n) {
    *out_n = -1;
  }
  WM_CHECK_OK(wm_graph_add_node(g, op, "", name, ins, n_in, &out, 1, &n));
  if (out_n) {
    *out_n = n;
  }
}

static void output(wm_graph_t *g, const char *name) {
  int32_t id;
  WM_CHECK_OK(wm_graph_add_output(g, name, NULL, &id));
}

// Adds the float scalar constant |name|.
static void scalar(wm_graph_t *g, const char *name, double v) {
  wm_shape_t shape = {.rank = 0};
  wm_tensor_t *t = NULL;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_FLOAT, &shape, &t));
  if (t) {
    ((float *)t->data)[0] = (float)v;
    WM_CHECK_OK(wm_graph_add_initializer(g, name, t, NULL));
  }
}

// Adds the binary node |op| out = a op b.
static void binary(wm_graph_t *g, const char *op, const char *a, const char *b,
                   const char *out) {
  const char *in[2] = {a, b};
  node(g, op, out, in, 2, out, NULL);
}

static void unary(wm_graph_t *g, const char *op, const char *a,
                  const char *out) {
  node(g, op, out, &a, 1, out, NULL);
}

// Runs |g| on input "x" (|x|) with |passes| on |backend| (then ref, when
// it is not ref) and returns output 0; the session is destroyed unless
// |out_session| takes it.
static void run_on(wm_backend_t *backend, wm_graph_t *g, const char *passes,
                   const wm_tensor_t *x, wm_tensor_t **out_y,
                   wm_session_t **out_session) {
  wm_session_options_t o = {
      .backends = &backend,
      .backend_count = 1,
      .mode = backend == ref ? WM_PLACEMENT_STRICT : WM_PLACEMENT_FALLBACK,
      .fallback = backend == ref ? NULL : ref,
      .passes = passes};
  wm_session_t *s = NULL;
  *out_y = NULL;
  WM_CHECK_OK(wm_session_create_placed(g, &o, &s));
  const char *names[1] = {"x"};
  wm_status_t st = wm_session_run(s, names, &x, 1, out_y);
  if (out_session) {
    *out_session = s;
  } else {
    wm_session_destroy(s);
  }
  WM_CHECK_OK(st);
}

static void run(wm_graph_t *g, const char *passes, const wm_tensor_t *x,
                wm_tensor_t **out_y, wm_session_t **out_session) {
  run_on(ref, g, passes, x, out_y, out_session);
}

// Checks |a| and |b| agree elementwise within |tol| (relative to 1).
static void check_close(const wm_tensor_t *a, const wm_tensor_t *b,
                        double tol) {
  WM_CHECK(a && b);
  WM_CHECK_INT_EQ(a->count, b->count);
  double worst = 0.0;
  for (size_t i = 0; i < a->count && i < b->count; i++) {
    double d = fabs(wm_tensor_get_f64(a, i) - wm_tensor_get_f64(b, i));
    worst = d > worst ? d : worst;
  }
  WM_CHECK_DBL_NEAR(worst, 0.0, tol);
}

// The placement of the user node named |name|.
static const wm_placement_t *placed(const wm_session_t *s, const char *name) {
  for (size_t i = 0; i < wm_session_node_count(s); i++) {
    const wm_placement_t *p = wm_session_placement(s, i);
    if (p && strstr(p->node, name)) {
      return p;
    }
  }
  return NULL;
}

WM_TEST(conv_bn_folds_the_normalization_into_the_convolution) {
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  int64_t xd[] = {1, 3, 6, 6}, wd[] = {4, 3, 3, 3}, cd[] = {4};
  input(g, "x", 4, xd);
  weight(g, "w", 4, wd, 0.1);
  weight(g, "b", 1, cd, 0.2);
  weight(g, "gamma", 1, cd, 0.3);
  weight(g, "beta", 1, cd, 0.4);
  weight(g, "mean", 1, cd, 0.5);
  // The variance must be positive.
  wm_tensor_t *var = pattern(1, cd, 0.6);
  WM_CHECK(var);
  for (size_t i = 0; i < var->count; i++) {
    ((float *)var->data)[i] = 0.5f + fabsf(((float *)var->data)[i]);
  }
  WM_CHECK_OK(wm_graph_add_initializer(g, "var", var, NULL));
  const char *conv_in[3] = {"x", "w", "b"};
  int32_t c;
  node(g, "Conv", "conv", conv_in, 3, "c", &c);
  int64_t pads[4] = {1, 1, 1, 1};
  WM_CHECK_OK(wm_graph_add_attr_ints(g, c, "pads", pads, 4));
  const char *bn_in[5] = {"c", "gamma", "beta", "mean", "var"};
  node(g, "BatchNormalization", "bn", bn_in, 5, "y", NULL);
  output(g, "y");
  wm_tensor_t *x = pattern(4, xd, 0.7);
  wm_session_t *s = NULL;
  wm_tensor_t *want = NULL;
  run(g, "", x, &want, NULL);
  WM_CHECK(want);
  wm_tensor_t *got = NULL;
  run(g, NULL, x, &got, &s);
  WM_CHECK(s && got);
  check_close(got, want, 1e-5);
  const wm_placement_t *bn = placed(s, "bn");
  WM_CHECK(bn && bn->pass && strcmp(bn->pass, "conv-bn") == 0);
  WM_CHECK(bn && bn->runs_in && strstr(bn->runs_in, "conv"));
  WM_CHECK(bn && bn->runs_as && strcmp(bn->runs_as, "Conv") == 0);
  WM_CHECK_INT_EQ(wm_session_nodes_run(s), 2);  // the BN runs inside
  wm_strbuf_t text;
  wm_strbuf_init(&text);
  wm_session_placement_text(s, &text);
  WM_CHECK(strstr(wm_strbuf_str(&text), "fused into") != NULL);
  wm_strbuf_deinit(&text);
  wm_session_destroy(s);
  wm_tensor_destroy(x);
  wm_tensor_destroy(want);
  wm_tensor_destroy(got);
  wm_graph_destroy(g);
}

WM_TEST(transposes_that_cancel_are_removed_and_others_merged) {
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  int64_t xd[] = {2, 3, 4}, perm[] = {0, 2, 1}, rot[] = {1, 2, 0};
  input(g, "x", 3, xd);
  const char *in[1] = {"x"};
  int32_t t1;
  node(g, "Transpose", "t1", in, 1, "a", &t1);
  WM_CHECK_OK(wm_graph_add_attr_ints(g, t1, "perm", perm, 3));
  in[0] = "a";
  int32_t t2;
  node(g, "Transpose", "t2", in, 1, "b", &t2);
  WM_CHECK_OK(wm_graph_add_attr_ints(g, t2, "perm", perm, 3));
  in[0] = "b";
  node(g, "Relu", "r", in, 1, "c", NULL);
  in[0] = "c";
  int32_t t3;
  node(g, "Transpose", "t3", in, 1, "d", &t3);
  WM_CHECK_OK(wm_graph_add_attr_ints(g, t3, "perm", perm, 3));
  in[0] = "d";
  int32_t t4;
  node(g, "Transpose", "t4", in, 1, "y", &t4);
  WM_CHECK_OK(wm_graph_add_attr_ints(g, t4, "perm", rot, 3));
  output(g, "y");
  wm_tensor_t *x = pattern(3, xd, 0.0);
  wm_session_t *s = NULL;
  wm_tensor_t *want = NULL;
  run(g, "", x, &want, NULL);
  WM_CHECK(want);
  wm_tensor_t *got = NULL;
  run(g, "transpose", x, &got, &s);
  WM_CHECK(s && got);
  check_close(got, want, 0.0);
  WM_CHECK_INT_EQ(got->shape.dims[0], want->shape.dims[0]);
  WM_CHECK_INT_EQ(got->shape.dims[2], want->shape.dims[2]);
  WM_CHECK(strcmp(placed(s, "t1")->backend, "-") == 0);
  WM_CHECK(strcmp(placed(s, "t2")->backend, "-") == 0);
  WM_CHECK(strcmp(placed(s, "t2")->pass, "transpose") == 0);
  WM_CHECK(placed(s, "t3")->runs_in && strstr(placed(s, "t3")->runs_in, "t4"));
  WM_CHECK(strcmp(placed(s, "t4")->backend, "ref") == 0);
  WM_CHECK_INT_EQ(wm_session_nodes_run(s), 3);  // Relu, t3 inside t4, t4
  wm_session_destroy(s);
  wm_tensor_destroy(x);
  wm_tensor_destroy(want);
  wm_tensor_destroy(got);
  wm_graph_destroy(g);
}

WM_TEST(large_constant_subgraphs_are_folded_and_dead_nodes_removed) {
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  // A weight stored transposed, as exporters leave tied embeddings: far
  // larger than what plans fold, so only the fold pass computes it once.
  int64_t xd[] = {2, 300}, wd[] = {700, 300};
  input(g, "x", 2, xd);
  weight(g, "w", 2, wd, 0.3);
  const char *in[2] = {"w", NULL};
  node(g, "Transpose", "wt", in, 1, "w_t", NULL);
  const char *mm[2] = {"x", "w_t"};
  node(g, "MatMul", "mm", mm, 2, "y", NULL);
  in[0] = "x";
  node(g, "Neg", "unused", in, 1, "nobody_reads", NULL);
  output(g, "y");
  wm_tensor_t *x = pattern(2, xd, 0.9);
  wm_session_t *s = NULL;
  wm_tensor_t *want = NULL;
  run(g, "", x, &want, NULL);
  WM_CHECK(want);
  wm_tensor_t *got = NULL;
  run(g, NULL, x, &got, &s);
  WM_CHECK(s && got);
  check_close(got, want, 1e-4);
  WM_CHECK(strcmp(placed(s, "wt")->pass, "fold") == 0);
  WM_CHECK(strcmp(placed(s, "wt")->backend, "-") == 0);
  WM_CHECK(strcmp(placed(s, "unused")->pass, "dead") == 0);
  WM_CHECK_INT_EQ(wm_session_nodes_run(s), 1);
  wm_session_destroy(s);
  wm_tensor_destroy(x);
  wm_tensor_destroy(want);
  wm_tensor_destroy(got);
  wm_graph_destroy(g);
}

WM_TEST(a_subgraph_still_reads_a_folded_outer_constant) {
  // If's branch reads "k", which folding turns from a node output into an
  // initializer no node of the main graph reads.
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  int64_t xd[] = {3};
  input(g, "x", 1, xd);
  wm_tensor_t *one = pattern(1, xd, 0.0);
  WM_CHECK(one);
  WM_CHECK_OK(wm_graph_add_initializer(g, "one", one, NULL));
  const char *in[2] = {"one", NULL};
  node(g, "Neg", "k_of", in, 1, "k", NULL);
  wm_graph_t *then_g = NULL, *else_g = NULL;
  WM_CHECK_OK(wm_graph_create("then", g, &then_g));
  WM_CHECK_OK(wm_graph_create("else", g, &else_g));
  const char *tin[2] = {"x", "k"};
  node(then_g, "Add", "t", tin, 2, "ty", NULL);
  output(then_g, "ty");
  node(else_g, "Sub", "e", tin, 2, "ey", NULL);
  output(else_g, "ey");
  wm_shape_t sc = {.rank = 0};
  wm_tensor_t *cond = NULL;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_BOOL, &sc, &cond));
  ((uint8_t *)cond->data)[0] = 1;
  WM_CHECK_OK(wm_graph_add_initializer(g, "c", cond, NULL));
  const char *if_in[1] = {"c"};
  int32_t n_if;
  node(g, "If", "if", if_in, 1, "y", &n_if);
  WM_CHECK_OK(wm_graph_add_attr_graph(g, n_if, "then_branch", then_g));
  WM_CHECK_OK(wm_graph_add_attr_graph(g, n_if, "else_branch", else_g));
  output(g, "y");
  // Export and import again: the importer marks outer-scope references.
  uint8_t *data;
  size_t size;
  WM_CHECK_OK(wm_onnx_save_buffer(g, &data, &size));
  wm_graph_destroy(g);
  WM_CHECK_OK(wm_onnx_load_buffer(data, size, NULL, &g));
  free(data);
  wm_tensor_t *x = pattern(1, xd, 1.0);
  wm_tensor_t *want = NULL;
  run(g, "", x, &want, NULL);
  WM_CHECK(want);
  wm_tensor_t *got = NULL;
  run(g, NULL, x, &got, NULL);
  check_close(got, want, 0.0);
  wm_tensor_destroy(x);
  wm_tensor_destroy(want);
  wm_tensor_destroy(got);
  wm_graph_destroy(g);
}

WM_TEST(an_unknown_pass_is_an_error_naming_the_passes) {
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  int64_t xd[] = {2};
  input(g, "x", 1, xd);
  const char *in[1] = {"x"};
  node(g, "Relu", "r", in, 1, "y", NULL);
  output(g, "y");
  wm_session_options_t o = {.backends = &ref,
                            .backend_count = 1,
                            .mode = WM_PLACEMENT_STRICT,
                            .passes = "fold,fuse-everything"};
  wm_session_t *s = NULL;
  wm_status_t st = wm_session_create_placed(g, &o, &s);
  WM_CHECK(st != NULL);
  WM_CHECK(s == NULL);
  WM_CHECK_INT_EQ(wm_status_code(st), WM_STATUS_INVALID_ARGUMENT);
  WM_CHECK(strstr(wm_status_message(st), "\"fuse-everything\"") != NULL);
  WM_CHECK(strstr(wm_status_message(st), "conv-bn") != NULL);
  wm_status_free(st);
  wm_graph_destroy(g);
}

// The user nodes a pass fused into another.
static size_t fused_by(const wm_session_t *s, const char *pass) {
  size_t n = 0;
  for (size_t i = 0; i < wm_session_node_count(s); i++) {
    const wm_placement_t *p = wm_session_placement(s, i);
    n += p && p->pass && strcmp(p->pass, pass) == 0 && p->runs_in;
  }
  return n;
}

// Runs |g| with every pass and with none on |backend|: the results agree
// within |tol|; *out_s is the session with passes.
static void agree(wm_backend_t *backend, wm_graph_t *g, const wm_tensor_t *x,
                  double tol, wm_session_t **out_s) {
  wm_tensor_t *want = NULL, *got = NULL;
  run_on(backend, g, "", x, &want, NULL);
  run_on(backend, g, NULL, x, &got, out_s);
  if (want && got) {
    check_close(got, want, tol);
  }
  wm_tensor_destroy(want);
  wm_tensor_destroy(got);
}

WM_TEST(per_channel_scales_after_a_conv_fold_into_its_weights) {
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  int64_t xd[] = {1, 3, 5, 5}, wd[] = {4, 3, 3, 3}, cd[] = {4},
          sd[] = {4, 1, 1};
  input(g, "x", 4, xd);
  weight(g, "w", 4, wd, 0.1);
  weight(g, "gamma", 1, cd, 0.3);
  weight(g, "beta", 1, cd, 0.4);
  weight(g, "mean", 1, cd, 0.5);
  weight(g, "scale", 3, sd, 0.8);
  scalar(g, "two", 2.0);
  wm_tensor_t *var = pattern(1, cd, 0.6);
  WM_CHECK(var);
  for (size_t i = 0; var && i < var->count; i++) {
    ((float *)var->data)[i] = 0.5f + fabsf(((float *)var->data)[i]);
  }
  WM_CHECK_OK(wm_graph_add_initializer(g, "var", var, NULL));
  const char *conv_in[2] = {"x", "w"};
  node(g, "Conv", "conv", conv_in, 2, "c", NULL);
  const char *bn_in[5] = {"c", "gamma", "beta", "mean", "var"};
  node(g, "BatchNormalization", "bn", bn_in, 5, "n", NULL);
  binary(g, "Mul", "scale", "n", "scaled");  // per channel, constant first
  binary(g, "Div", "scaled", "two", "y");    // a scalar divisor
  output(g, "y");
  wm_tensor_t *x = pattern(4, xd, 0.2);
  wm_session_t *s = NULL;
  agree(ref, g, x, 1e-5, &s);
  WM_CHECK(s);
  const char *folded[] = {"bn", "scaled", "y"};
  for (size_t i = 0; s && i < 3; i++) {
    const wm_placement_t *p = placed(s, folded[i]);
    WM_CHECK(p && p->pass && strcmp(p->pass, "conv-bn") == 0);
    WM_CHECK(p && p->runs_in && strcmp(p->runs_in, "conv") == 0);
  }
  wm_session_destroy(s);
  wm_tensor_destroy(x);
  wm_graph_destroy(g);
}

WM_TEST(conv_bias_residual_and_relu_run_as_one_fused_conv) {
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  int64_t xd[] = {1, 4, 5, 5}, wd[] = {4, 4, 3, 3}, bd[] = {1, 4, 1, 1};
  input(g, "x", 4, xd);
  weight(g, "w", 4, wd, 0.1);
  weight(g, "b", 4, bd, 0.2);
  const char *in[2] = {"x", "w"};
  int32_t c;
  node(g, "Conv", "conv", in, 2, "c", &c);
  int64_t pads[4] = {1, 1, 1, 1};
  WM_CHECK_OK(wm_graph_add_attr_ints(g, c, "pads", pads, 4));
  binary(g, "Add", "c", "b", "biased");    // a bias as exporters write it
  binary(g, "Add", "biased", "x", "sum");  // the residual
  unary(g, "Relu", "sum", "y");
  output(g, "y");
  wm_tensor_t *x = pattern(4, xd, 0.7);
  wm_session_t *s = NULL;
  agree(ref, g, x, 1e-5, &s);
  WM_CHECK(s);
  WM_CHECK_INT_EQ(fused_by(s, "epilogue"), 3);
  const wm_placement_t *relu = placed(s, "y");
  WM_CHECK(relu && relu->runs_as && strcmp(relu->runs_as, "FusedConv") == 0);
  WM_CHECK(relu && relu->runs_in && strcmp(relu->runs_in, "conv") == 0);
  wm_session_destroy(s);
  wm_tensor_destroy(x);
  wm_graph_destroy(g);
}

WM_TEST(silu_and_hard_swish_forms_fuse_into_the_conv_before_them) {
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  int64_t xd[] = {1, 3, 4, 4}, wd[] = {3, 3, 1, 1};
  input(g, "x", 4, xd);
  weight(g, "w1", 4, wd, 0.1);
  weight(g, "w2", 4, wd, 0.2);
  weight(g, "w3", 4, wd, 0.3);
  scalar(g, "three", 3.0);
  scalar(g, "zero", 0.0);
  scalar(g, "six", 6.0);
  const char *in[3] = {"x", "w1", NULL};
  node(g, "Conv", "conv1", in, 2, "c1", NULL);
  // x * sigmoid(x)
  unary(g, "Sigmoid", "c1", "sig");
  binary(g, "Mul", "sig", "c1", "silu");
  // x * relu6(x + 3) / 6
  in[0] = "silu";
  in[1] = "w2";
  node(g, "Conv", "conv2", in, 2, "c2", NULL);
  binary(g, "Add", "c2", "three", "plus3");
  const char *clip_in[3] = {"plus3", "zero", "six"};
  node(g, "Clip", "relu6", clip_in, 3, "relu6", NULL);
  binary(g, "Mul", "c2", "relu6", "gated");
  binary(g, "Div", "gated", "six", "hswish");
  // x * hardsigmoid(x) with alpha 1/6
  in[0] = "hswish";
  in[1] = "w3";
  node(g, "Conv", "conv3", in, 2, "c3", NULL);
  int32_t hs;
  node(g, "HardSigmoid", "hsig", (const char *[]){"c3"}, 1, "hsig", &hs);
  WM_CHECK_OK(wm_graph_add_attr_float(g, hs, "alpha", 1.0f / 6.0f));
  binary(g, "Mul", "c3", "hsig", "y");
  output(g, "y");
  wm_tensor_t *x = pattern(4, xd, 0.4);
  wm_session_t *s = NULL;
  agree(ref, g, x, 1e-5, &s);
  WM_CHECK(s);
  WM_CHECK_INT_EQ(fused_by(s, "epilogue"), 8);
  WM_CHECK(strcmp(placed(s, "silu")->runs_in, "conv1") == 0);
  WM_CHECK(strcmp(placed(s, "hswish")->runs_in, "conv2") == 0);
  WM_CHECK(strcmp(placed(s, "hsig")->runs_in, "conv3") == 0);
  wm_session_destroy(s);
  wm_tensor_destroy(x);
  wm_graph_destroy(g);
}

WM_TEST(gelu_forms_fuse_into_the_matmul_and_bias_before_them) {
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  int64_t xd[] = {2, 3, 8}, wd[] = {8, 8}, bd[] = {8};
  input(g, "x", 3, xd);
  weight(g, "w1", 2, wd, 0.1);
  weight(g, "b1", 1, bd, 0.2);
  weight(g, "w2", 2, wd, 0.3);
  weight(g, "b2", 1, bd, 0.4);
  scalar(g, "sqrt2", sqrt(2.0));
  scalar(g, "one", 1.0);
  scalar(g, "half", 0.5);
  scalar(g, "three", 3.0);
  scalar(g, "coeff", 0.044715);
  scalar(g, "k", sqrt(2.0 / 3.14159265358979323846));
  // Erf form, (t * x) * 0.5.
  binary(g, "MatMul", "x", "w1", "m1");
  binary(g, "Add", "b1", "m1", "h1");
  binary(g, "Div", "h1", "sqrt2", "u1");
  unary(g, "Erf", "u1", "e1");
  binary(g, "Add", "e1", "one", "t1");
  binary(g, "Mul", "t1", "h1", "p1");
  binary(g, "Mul", "p1", "half", "gelu1");
  // Tanh form, t * (x * 0.5).
  binary(g, "MatMul", "gelu1", "w2", "m2");
  binary(g, "Add", "m2", "b2", "h2");
  binary(g, "Pow", "h2", "three", "cube");
  binary(g, "Mul", "cube", "coeff", "cube_s");
  binary(g, "Add", "h2", "cube_s", "inner");
  binary(g, "Mul", "inner", "k", "inner_s");
  unary(g, "Tanh", "inner_s", "th");
  binary(g, "Add", "th", "one", "t2");
  binary(g, "Mul", "h2", "half", "halfx");
  binary(g, "Mul", "t2", "halfx", "y");
  output(g, "y");
  wm_tensor_t *x = pattern(3, xd, 0.6);
  wm_session_t *s = NULL;
  agree(ref, g, x, 1e-5, &s);
  WM_CHECK(s);
  WM_CHECK_INT_EQ(fused_by(s, "epilogue"), 6 + 9);
  WM_CHECK(strcmp(placed(s, "gelu1")->runs_as, "FusedMatMul") == 0);
  WM_CHECK(strcmp(placed(s, "halfx")->runs_in, "m2") == 0);
  wm_session_destroy(s);
  wm_tensor_destroy(x);
  wm_graph_destroy(g);
}

WM_TEST(a_value_read_elsewhere_or_a_backend_without_fused_ops_stops_fusing) {
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  int64_t xd[] = {2, 4}, wd[] = {4, 4}, bd[] = {4};
  input(g, "x", 2, xd);
  weight(g, "w", 2, wd, 0.1);
  weight(g, "b", 1, bd, 0.2);
  binary(g, "MatMul", "x", "w", "m");
  binary(g, "Add", "m", "b", "h");
  unary(g, "Relu", "h", "r");
  unary(g, "Sigmoid", "m", "m_too");  // a second reader of m
  binary(g, "Add", "r", "m_too", "y");
  output(g, "y");
  wm_tensor_t *x = pattern(2, xd, 0.6);
  wm_session_t *s = NULL;
  agree(ref, g, x, 0.0, &s);
  WM_CHECK(s);
  WM_CHECK_INT_EQ(fused_by(s, "epilogue"), 0);
  wm_session_destroy(s);
  wm_graph_destroy(g);
  // A chain that fuses on ref stays as written on a backend implementing
  // no fused operator (its nodes fall back to ref one by one).
  g = new_graph();
  WM_CHECK(g);
  input(g, "x", 2, xd);
  weight(g, "w", 2, wd, 0.1);
  weight(g, "b", 1, bd, 0.2);
  binary(g, "MatMul", "x", "w", "m");
  binary(g, "Add", "m", "b", "h");
  unary(g, "Relu", "h", "y");
  output(g, "y");
  s = NULL;
  agree(ref, g, x, 1e-6, &s);
  WM_CHECK(s);
  WM_CHECK_INT_EQ(fused_by(s, "epilogue"), 2);
  wm_session_destroy(s);
  s = NULL;
  agree(bare, g, x, 0.0, &s);
  WM_CHECK(s);
  WM_CHECK_INT_EQ(fused_by(s, "epilogue"), 0);
  WM_CHECK_INT_EQ(wm_session_nodes_on(s, "ref"), 3);
  wm_session_destroy(s);
  wm_tensor_destroy(x);
  wm_graph_destroy(g);
}

WM_TEST(elementwise_chains_run_as_one_node) {
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  int64_t xd[] = {2, 3, 4, 5}, cd[] = {1, 3, 1, 1};
  input(g, "x", 4, xd);
  weight(g, "c", 4, cd, 0.3);
  scalar(g, "half", 0.5);
  scalar(g, "one", 1.0);
  // y = tanh(sigmoid(x * 0.5 + c) - x) / 1 + sqrt(|x| + 1); "mid" is also
  // read by Neg, so the chain ends there and Neg's group starts.
  binary(g, "Mul", "x", "half", "scaled");
  binary(g, "Add", "scaled", "c", "shifted");
  unary(g, "Sigmoid", "shifted", "sig");
  binary(g, "Sub", "sig", "x", "mid");
  unary(g, "Tanh", "mid", "th");
  unary(g, "Neg", "mid", "neg");
  binary(g, "Div", "th", "one", "q");
  unary(g, "Abs", "x", "ax");
  binary(g, "Add", "ax", "one", "ax1");
  unary(g, "Sqrt", "ax1", "root");
  binary(g, "Add", "q", "root", "sum");
  binary(g, "Mul", "sum", "neg", "y");
  output(g, "y");
  wm_tensor_t *x = pattern(4, xd, 0.2);
  wm_session_t *s = NULL;
  agree(ref, g, x, 1e-6, &s);
  WM_CHECK(s);
  // Two groups: scaled..mid (4 nodes, run as mid) and the other 8 (run as
  // y): 3 + 7 run inside another.
  WM_CHECK_INT_EQ(fused_by(s, "eltwise"), 10);
  WM_CHECK(strcmp(placed(s, "scaled")->runs_in, "mid") == 0);
  WM_CHECK(strcmp(placed(s, "neg")->runs_in, "y") == 0);
  WM_CHECK(strcmp(placed(s, "y")->runs_as, "Elementwise") == 0);
  wm_session_destroy(s);
  // Not on a backend without an Elementwise kernel.
  s = NULL;
  agree(bare, g, x, 0.0, &s);
  WM_CHECK(s);
  WM_CHECK_INT_EQ(wm_session_nodes_on(s, "ref"), 12);
  wm_session_destroy(s);
  wm_tensor_destroy(x);
  wm_graph_destroy(g);
}

// y = ReduceMean(x) ... Sqrt ... Div ... * gamma + beta over the last
// axis of |x| (as exporters write LayerNormalization before opset 17):
// the square as Pow(d, 2) or Mul(d, d), the axis as -1 or as rank - 1,
// the constants on either side. Names are prefixed by |p|.
static void layer_norm(wm_graph_t *g, const char *p, const char *x,
                       int64_t axis, bool pow, bool swap, const char *y) {
  char n[9][32];
  static const char *const parts[9] = {"mu", "d",  "sq", "var", "ve",
                                       "sd", "nr", "sc", "y"};
  for (int i = 0; i < 9; i++) {
    snprintf(n[i], sizeof(n[i]), "%s_%s", p, parts[i]);
  }
  int32_t r1 = -1, r2 = -1;
  node(g, "ReduceMean", n[0], &x, 1, n[0], &r1);
  binary(g, "Sub", x, n[0], n[1]);
  if (pow) {
    binary(g, "Pow", n[1], "two", n[2]);
  } else {
    binary(g, "Mul", n[1], n[1], n[2]);
  }
  const char *sq = n[2];
  node(g, "ReduceMean", n[3], &sq, 1, n[3], &r2);
  if (r1 >= 0 && r2 >= 0) {
    WM_CHECK_OK(wm_graph_add_attr_ints(g, r1, "axes", &axis, 1));
    WM_CHECK_OK(wm_graph_add_attr_ints(g, r2, "axes", &axis, 1));
  }
  binary(g, "Add", swap ? "eps" : n[3], swap ? n[3] : "eps", n[4]);
  unary(g, "Sqrt", n[4], n[5]);
  binary(g, "Div", n[1], n[5], n[6]);
  binary(g, "Mul", swap ? "gamma" : n[6], swap ? n[6] : "gamma", n[7]);
  binary(g, "Add", swap ? "beta" : n[7], swap ? n[7] : "beta", y);
}

WM_TEST(layer_norm_forms_run_as_one_node) {
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  int64_t xd[] = {2, 3, 8}, cd[] = {8};
  input(g, "x", 3, xd);
  weight(g, "gamma", 1, cd, 0.3);
  weight(g, "beta", 1, cd, 0.4);
  scalar(g, "eps", 1e-5);
  scalar(g, "two", 2.0);
  layer_norm(g, "a", "x", -1, true, false, "ln1");
  layer_norm(g, "b", "ln1", 2, false, true, "y");
  output(g, "y");
  wm_tensor_t *x = pattern(3, xd, 0.6);
  wm_session_t *s = NULL;
  agree(ref, g, x, 1e-5, &s);
  WM_CHECK(s);
  WM_CHECK_INT_EQ(fused_by(s, "layernorm"), 2 * 8);
  WM_CHECK(strcmp(placed(s, "ln1")->runs_as, "LayerNormalization") == 0);
  WM_CHECK(strcmp(placed(s, "b_sd")->runs_in, "y") == 0);
  wm_session_destroy(s);
  // Not on a backend without the operator.
  s = NULL;
  agree(bare, g, x, 0.0, &s);
  WM_CHECK(s);
  WM_CHECK_INT_EQ(fused_by(s, "layernorm"), 0);
  wm_session_destroy(s);
  wm_graph_destroy(g);
  // Not over another axis, nor where d is read elsewhere.
  g = new_graph();
  WM_CHECK(g);
  input(g, "x", 3, xd);
  weight(g, "gamma", 1, cd, 0.3);
  weight(g, "beta", 1, cd, 0.4);
  scalar(g, "eps", 1e-5);
  scalar(g, "two", 2.0);
  layer_norm(g, "a", "x", 1, true, false, "ln1");
  layer_norm(g, "b", "ln1", -1, true, false, "ln2");
  binary(g, "Add", "ln2", "b_d", "y");  // a third reader of b's d
  output(g, "y");
  s = NULL;
  agree(ref, g, x, 1e-5, &s);
  WM_CHECK(s);
  WM_CHECK_INT_EQ(fused_by(s, "layernorm"), 0);
  wm_session_destroy(s);
  wm_tensor_destroy(x);
  wm_graph_destroy(g);
}

// Adds the int64 constant |name| of one dim holding |v|.
static void ints(wm_graph_t *g, const char *name, size_t n, const int64_t *v) {
  wm_shape_t shape = {.rank = 1, .dims = {(int64_t)n}};
  wm_tensor_t *t = NULL;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_INT64, &shape, &t));
  if (t) {
    memcpy(t->data, v, n * sizeof(int64_t));
    WM_CHECK_OK(wm_graph_add_initializer(g, name, t, NULL));
  }
}

// Transpose |in| into |out| with |perm| (rank 4).
static void transpose4(wm_graph_t *g, const char *in, const int64_t *perm,
                       const char *out) {
  int32_t n = -1;
  node(g, "Transpose", out, &in, 1, out, &n);
  if (n >= 0) {
    WM_CHECK_OK(wm_graph_add_attr_ints(g, n, "perm", perm, 4));
  }
}

// Multi-head attention over x [2, 5, 8] as PyTorch exports it (2 heads of
// 4): Q, K and V projections, their heads split by Reshape and Transpose
// (K's straight to K^T), the scores divided by a constant, a padding
// mask added (|mask| 1: [2, 1, 1, 5]; 2: one per query row, [1, 1, 5, 5];
// 0: none), Softmax, the context merged back into y.
// The attention pattern on x [2, 5, 8]: |mask| 0 none, 1 a padding mask
// added, 2 an added mask that is not a padding mask, 3 GPT-2's causal
// Where (a bool [5, 5] and -1e4), 4 a Where whose other choice is -1.
static void attention_graph(wm_graph_t *g, int mask) {
  static const int64_t heads[4] = {0, 2, 1, 3}, keys[4] = {0, 2, 3, 1};
  static const int64_t split[4] = {0, 0, 2, 4}, merge[3] = {0, 0, 8};
  int64_t xd[] = {2, 5, 8}, wd[] = {8, 8}, md[] = {2, 1, 1, 5};
  if (mask == 2) {
    md[0] = 1;
    md[2] = 5;
  }
  input(g, "x", 3, xd);
  weight(g, "wq", 2, wd, 0.1);
  weight(g, "wk", 2, wd, 0.2);
  weight(g, "wv", 2, wd, 0.3);
  ints(g, "split", 4, split);
  ints(g, "merge", 3, merge);
  scalar(g, "c", 2.0);
  wm_tensor_t *m = pattern(4, md, 0.7);
  WM_CHECK(m);
  for (size_t i = 0; i < m->count; i++) {  // keys 3 and 4 of image 1 out
    ((float *)m->data)[i] = i >= 8 ? -1e9f : 0.0f;
  }
  WM_CHECK_OK(wm_graph_add_initializer(g, "mask", m, NULL));
  static const char *const p[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; i++) {
    char w[4], r[8], h[8];
    snprintf(w, sizeof(w), "w%s", p[i]);
    snprintf(r, sizeof(r), "%s4", p[i]);
    snprintf(h, sizeof(h), "%sh", p[i]);
    binary(g, "MatMul", "x", w, p[i]);
    binary(g, "Reshape", p[i], "split", r);
    transpose4(g, r, i == 1 ? keys : heads, h);
  }
  binary(g, "MatMul", "qh", "kh", "scores");
  binary(g, "Div", "scores", "c", "scaled");
  if (mask == 1 || mask == 2) {
    binary(g, "Add", "scaled", "mask", "masked");
  } else if (mask >= 3) {
    int64_t cd[2] = {5, 5};
    wm_shape_t cs = wm_shape_make(2, cd);
    wm_tensor_t *c = NULL;
    WM_CHECK_OK(wm_tensor_create(WM_DTYPE_BOOL, &cs, &c));
    for (int64_t i = 0; c && i < 25; i++) {
      ((uint8_t *)c->data)[i] = i % 5 <= i / 5;
    }
    WM_CHECK_OK(wm_graph_add_initializer(g, "causal", c, NULL));
    scalar(g, "fill", mask == 3 ? -1e4 : -1.0);
    const char *w[3] = {"causal", "scaled", "fill"};
    node(g, "Where", "masked", w, 3, "masked", NULL);
  }
  const char *in = mask ? "masked" : "scaled";
  int32_t sm = -1;
  node(g, "Softmax", "probs", &in, 1, "probs", &sm);
  if (sm >= 0) {
    WM_CHECK_OK(wm_graph_add_attr_int(g, sm, "axis", -1));
  }
  binary(g, "MatMul", "probs", "vh", "context");
  transpose4(g, "context", heads, "merged4");
  binary(g, "Reshape", "merged4", "merge", "y");
  output(g, "y");
}

WM_TEST(attention_runs_as_one_node) {
  int64_t xd[] = {2, 5, 8};
  wm_tensor_t *x = pattern(3, xd, 0.4);
  // Per mask form (attention_graph): the nodes fused. Reshape and Transpose
  // of Q, K and V, the two MatMuls, Div, the mask's Add or Where, Softmax
  // (the fused node's head), Transpose and Reshape; none for an added mask
  // that is not a padding mask (its broadcast as Attention's attn_mask is
  // left to the unfused nodes) nor for a Where whose other choice does not
  // vanish after the softmax.
  static const int fused[5] = {11, 12, 0, 12, 0};
  for (int mask = 0; mask < 5; mask++) {
    wm_graph_t *g = new_graph();
    WM_CHECK(g);
    attention_graph(g, mask);
    wm_session_t *s = NULL;
    agree(ref, g, x, 1e-5, &s);
    WM_CHECK(s);
    WM_CHECK_INT_EQ(fused_by(s, "attention"), fused[mask]);
    const wm_placement_t *pl = placed(s, "probs");
    WM_CHECK(pl && (pl->runs_as && strcmp(pl->runs_as, "Attention") == 0) ==
                       (fused[mask] > 0));
    wm_session_destroy(s);
    // Not on a backend without the operator.
    s = NULL;
    agree(bare, g, x, 0.0, &s);
    WM_CHECK(s);
    WM_CHECK_INT_EQ(fused_by(s, "attention"), 0);
    wm_session_destroy(s);
    wm_graph_destroy(g);
  }
  wm_tensor_destroy(x);
}

WM_TEST(long_node_names_are_reported_whole) {
  wm_graph_t *g = new_graph();
  WM_CHECK(g);
  int64_t xd[] = {2, 3};
  input(g, "x", 2, xd);
  const char *name =
      "encoder/layer_11/attention/self/output/dense/Relu_and_more_words";
  unary(g, "Relu", "x", name);
  binary(g, "Add", name, "x", "y");
  output(g, "y");
  wm_tensor_t *x = pattern(2, xd, 0.1), *y = NULL;
  wm_session_t *s = NULL;
  run(g, "", x, &y, &s);
  const wm_placement_t *p = s ? placed(s, "encoder/") : NULL;
  WM_CHECK(p != NULL);
  WM_CHECK(p && strcmp(p->node, name) == 0);
  wm_session_destroy(s);
  wm_tensor_destroy(y);
  wm_tensor_destroy(x);
  wm_graph_destroy(g);
}

// A graph input with a default (an initializer) that no node reads may
// still be left out of a run (found by session_run_fuzz).
WM_TEST(an_unread_input_with_a_default_need_not_be_given) {
  wm_graph_t *g = new_graph();
  int64_t xd[] = {2, 3}, dd[] = {3};
  input(g, "x", 2, xd);
  input(g, "unread", 1, dd);
  weight(g, "unread", 1, dd, 0.5);
  unary(g, "Relu", "x", "y");
  output(g, "y");
  wm_tensor_t *x = pattern(2, xd, 0.1);
  const char *const passes[] = {NULL, ""};
  for (size_t i = 0; i < 2; i++) {
    wm_tensor_t *y = NULL;
    run(g, passes[i], x, &y, NULL);
    WM_CHECK(y && y->count == 6);
    wm_tensor_destroy(y);
  }
  wm_tensor_destroy(x);
  wm_graph_destroy(g);
}

int main(void) {
  wm_status_t s = wm_backend_create(wm_ref_plugin_query, "built-in", &ref);
  if (s) {
    fprintf(stderr, "ref backend: %s\n", wm_status_message(s));
    wm_status_free(s);
    return 1;
  }
  s = wm_backend_create(bare_query, "built-in", &bare);
  if (s) {
    fprintf(stderr, "bare backend: %s\n", wm_status_message(s));
    wm_status_free(s);
    wm_backend_destroy(ref);
    return 1;
  }
  static const wm_test_case_t cases[] = {
      WM_CASE(conv_bn_folds_the_normalization_into_the_convolution),
      WM_CASE(transposes_that_cancel_are_removed_and_others_merged),
      WM_CASE(large_constant_subgraphs_are_folded_and_dead_nodes_removed),
      WM_CASE(a_subgraph_still_reads_a_folded_outer_constant),
      WM_CASE(an_unknown_pass_is_an_error_naming_the_passes),
      WM_CASE(per_channel_scales_after_a_conv_fold_into_its_weights),
      WM_CASE(conv_bias_residual_and_relu_run_as_one_fused_conv),
      WM_CASE(silu_and_hard_swish_forms_fuse_into_the_conv_before_them),
      WM_CASE(gelu_forms_fuse_into_the_matmul_and_bias_before_them),
      WM_CASE(
          a_value_read_elsewhere_or_a_backend_without_fused_ops_stops_fusing),
      WM_CASE(elementwise_chains_run_as_one_node),
      WM_CASE(layer_norm_forms_run_as_one_node),
      WM_CASE(attention_runs_as_one_node),
      WM_CASE(long_node_names_are_reported_whole),
      WM_CASE(an_unread_input_with_a_default_need_not_be_given),
      {NULL, NULL},
  };
  int rc = wm_test_main(cases);
  wm_backend_destroy(bare);
  wm_backend_destroy(ref);
  return rc;
}
