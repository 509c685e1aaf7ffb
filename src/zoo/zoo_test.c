// Tests of the zoo: every model builds, verifies and infers fully known
// output shapes; parameter counts match the published ones; specs are
// parsed strictly; builds are deterministic; small models run on ref.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ref.h"
#include "wm_test.h"
#include "wmap/session.h"
#include "wmap/zoo.h"

// Builds |spec|, verifies it and infers every value's type.
static wm_status_t build_checked(const char *spec, wm_graph_t **out_graph) {
  WM_RETURN_IF_ERROR(wm_zoo_build(spec, out_graph));
  wm_status_t s = wm_graph_verify(*out_graph);
  if (!s) {
    s = wm_ops_check_graph(*out_graph);
  }
  if (s) {
    wm_graph_destroy(*out_graph);
    *out_graph = NULL;
  }
  return s;
}

static const wm_value_t *output(const wm_graph_t *g, size_t i) {
  return &g->values[g->outputs[i]];
}

static bool shape_is(const wm_value_t *v, int32_t rank, const int64_t *dims) {
  wm_shape_t want = wm_shape_make(rank, dims);
  return wm_shape_is_known(&v->type.shape) &&
         wm_shape_equal(&v->type.shape, &want);
}

static size_t count_op(const wm_graph_t *g, const char *op) {
  size_t n = 0;
  for (size_t i = 0; i < g->node_count; i++) {
    n += strcmp(g->nodes[i].op_type, op) == 0;
  }
  return n;
}

// Every value of |g| has a fully known type.
static bool all_known(const wm_graph_t *g) {
  for (size_t i = 0; i < g->value_count; i++) {
    if (g->values[i].type.dtype == WM_DTYPE_UNDEFINED ||
        !wm_shape_is_known(&g->values[i].type.shape)) {
      return false;
    }
  }
  return true;
}

WM_TEST(resnet18_has_published_parameters_and_logits) {
  wm_graph_t *g;
  WM_CHECK_OK(build_checked("resnet18", &g));
  int64_t dims[] = {1, 1000};
  WM_CHECK(shape_is(output(g, 0), 2, dims));
  WM_CHECK(all_known(g));
  WM_CHECK_INT_EQ(wm_graph_param_count(g), 11689512);
  WM_CHECK_INT_EQ(count_op(g, "Conv"), 20);
  WM_CHECK_INT_EQ(count_op(g, "BatchNormalization"), 20);
  wm_graph_destroy(g);
}

WM_TEST(resnet50_has_published_parameters_and_53_convs) {
  wm_graph_t *g;
  WM_CHECK_OK(build_checked("resnet50:batch=2", &g));
  int64_t dims[] = {2, 1000};
  WM_CHECK(shape_is(output(g, 0), 2, dims));
  WM_CHECK(all_known(g));
  WM_CHECK_INT_EQ(wm_graph_param_count(g), 25557032);
  WM_CHECK_INT_EQ(count_op(g, "Conv"), 53);
  // v1.5: the stride sits in the 3x3 of the first bottleneck of layer2.
  int32_t v = wm_graph_find_value(g, "layer2.0.conv2");
  WM_CHECK(v >= 0);
  const wm_node_t *n = &g->nodes[g->values[v].producer];
  const int64_t *strides;
  size_t count;
  WM_CHECK(wm_node_attr_ints(n, "strides", &strides, &count));
  WM_CHECK_INT_EQ(strides[0], 2);
  wm_graph_destroy(g);
}

WM_TEST(mobilenetv2_has_published_parameters) {
  wm_graph_t *g;
  WM_CHECK_OK(build_checked("mobilenetv2", &g));
  int64_t dims[] = {1, 1000};
  WM_CHECK(shape_is(output(g, 0), 2, dims));
  WM_CHECK(all_known(g));
  WM_CHECK_INT_EQ(wm_graph_param_count(g), 3504872);
  WM_CHECK_INT_EQ(count_op(g, "Conv"), 52);
  WM_CHECK_INT_EQ(count_op(g, "Clip"), 35);
  wm_graph_destroy(g);
}

WM_TEST(bert_base_has_published_parameters) {
  wm_graph_t *g;
  WM_CHECK_OK(build_checked("bert-base", &g));
  int64_t last[] = {1, 128, 768}, pooled[] = {1, 768};
  WM_CHECK_STR_EQ(output(g, 0)->name, "last_hidden_state");
  WM_CHECK(shape_is(output(g, 0), 3, last));
  WM_CHECK(shape_is(output(g, 1), 2, pooled));
  WM_CHECK(all_known(g));
  WM_CHECK_INT_EQ(wm_graph_param_count(g), 109482240);
  WM_CHECK_INT_EQ(count_op(g, "LayerNormalization"), 25);
  WM_CHECK_INT_EQ(count_op(g, "Softmax"), 12);
  WM_CHECK_INT_EQ(count_op(g, "Erf"), 12);
  wm_graph_destroy(g);
}

WM_TEST(gpt2_has_published_parameters_with_tied_head) {
  wm_graph_t *g;
  WM_CHECK_OK(build_checked("gpt2:seq=64", &g));
  int64_t dims[] = {1, 64, 50257};
  WM_CHECK(shape_is(output(g, 0), 3, dims));
  WM_CHECK(all_known(g));
  WM_CHECK_INT_EQ(wm_graph_param_count(g), 124439808);
  WM_CHECK_INT_EQ(count_op(g, "Tanh"), 12);
  WM_CHECK_INT_EQ(count_op(g, "Where"), 12);
  wm_graph_destroy(g);
}

WM_TEST(mlp_keys_shape_the_model) {
  wm_graph_t *g;
  WM_CHECK_OK(build_checked("mlp:batch=4,in=8,hidden=16,layers=3,out=5", &g));
  int64_t dims[] = {4, 5};
  WM_CHECK(shape_is(output(g, 0), 2, dims));
  WM_CHECK_INT_EQ(count_op(g, "Gemm"), 4);
  WM_CHECK_INT_EQ(wm_graph_param_count(g),
                  8 * 16 + 16 + 2 * (16 * 16 + 16) + 16 * 5 + 5);
  wm_graph_destroy(g);
}

WM_TEST(bert_keys_shape_the_model) {
  wm_graph_t *g;
  WM_CHECK_OK(build_checked("bert-base:layers=2,seq=64,batch=3", &g));
  int64_t dims[] = {3, 64, 768};
  WM_CHECK(shape_is(output(g, 0), 3, dims));
  WM_CHECK_INT_EQ(count_op(g, "Softmax"), 2);
  wm_graph_destroy(g);
}

WM_TEST(spec_errors_name_the_problem) {
  wm_graph_t *g;
  WM_CHECK_ERR(wm_zoo_build("resnet34", &g), INVALID_ARGUMENT,
               "unknown model \"resnet34\"; models: resnet18, resnet50");
  WM_CHECK(g == NULL);
  WM_CHECK_ERR(wm_zoo_build("bert-base:layer=2", &g), INVALID_ARGUMENT,
               "unknown key \"layer\"; keys: layers, seq, batch");
  WM_CHECK_ERR(wm_zoo_build("bert-base:seq=513", &g), INVALID_ARGUMENT,
               "key \"seq\" wants an integer from 1 to 512, got \"513\"");
  WM_CHECK_ERR(wm_zoo_build("mlp:hidden=abc", &g), INVALID_ARGUMENT,
               "got \"abc\"");
  WM_CHECK_ERR(wm_zoo_build("mlp:hidden=", &g), INVALID_ARGUMENT, "got \"\"");
  WM_CHECK_ERR(wm_zoo_build("mlp:hidden", &g), INVALID_ARGUMENT,
               "want key=value, got \"hidden\"");
  WM_CHECK_ERR(wm_zoo_build("mlp:batch=2,", &g), INVALID_ARGUMENT,
               "want key=value");
  WM_CHECK_ERR(wm_zoo_build("", &g), INVALID_ARGUMENT, "unknown model \"\"");
  WM_CHECK_ERR(wm_zoo_build("gpt2:seq=99999999999999999999", &g),
               INVALID_ARGUMENT, "from 1 to 1024");
}

WM_TEST(listing_describes_every_model) {
  WM_CHECK_INT_EQ(wm_zoo_count(), 7);
  for (size_t i = 0; i < wm_zoo_count(); i++) {
    const wm_zoo_model_t *m = wm_zoo_at(i);
    WM_CHECK(m && m->description && m->key_count > 0);
    WM_CHECK(wm_zoo_find(m->name) == m);
  }
  WM_CHECK(wm_zoo_at(wm_zoo_count()) == NULL);
  WM_CHECK(wm_zoo_find("nope") == NULL);
  const wm_zoo_model_t *bert = wm_zoo_find("bert-base");
  WM_CHECK_STR_EQ(bert->keys[0].name, "layers");
  WM_CHECK_INT_EQ(bert->keys[0].def, 12);
  WM_CHECK_INT_EQ(bert->keys[1].def, 128);
}

WM_TEST(builds_are_deterministic) {
  static const char *const specs[] = {
      "mlp", "resnet18", "bert-base:layers=1,seq=8", "gpt2:layers=1,seq=4"};
  for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
    wm_graph_t *a, *b;
    WM_CHECK_OK(wm_zoo_build(specs[i], &a));
    WM_CHECK_OK(wm_zoo_build(specs[i], &b));
    char why[256] = "";
    bool same = wm_graph_equal(a, b, why, sizeof(why));
    wm_graph_destroy(a);
    wm_graph_destroy(b);
    if (!same) {
      wm_test_fail(__FILE__, __LINE__, "%s differs: %s", specs[i], why);
      return;
    }
  }
}

WM_TEST(weights_are_seeded_by_name_not_build_order) {
  wm_graph_t *a, *b;
  WM_CHECK_OK(wm_zoo_build("bert-base:layers=1,seq=8", &a));
  WM_CHECK_OK(wm_zoo_build("bert-base:layers=2,seq=16", &b));
  const char *name = "encoder.layer.0.attention.self.query.weight";
  const wm_tensor_t *ta = a->values[wm_graph_find_value(a, name)].initializer;
  const wm_tensor_t *tb = b->values[wm_graph_find_value(b, name)].initializer;
  bool equal = wm_tensor_equal(ta, tb);
  double v = wm_tensor_get_f64(ta, 0);
  wm_graph_destroy(a);
  wm_graph_destroy(b);
  WM_CHECK(equal);
  WM_CHECK(v != 0.0 && fabs(v) < 0.05);
}

// Builds |spec| and runs it on ref with deterministic inputs; checks that
// every output is finite.
static void run_on_ref(const char *spec) {
  wm_backend_t *be = NULL;
  wm_graph_t *g = NULL;
  wm_session_t *s = NULL;
  wm_tensor_t *in[3] = {NULL, NULL, NULL}, *out[2] = {NULL, NULL};
  const char *names[3];
  WM_CHECK_OK(wm_zoo_build(spec, &g));
  WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &be));
  WM_CHECK_OK(wm_session_create(g, be, &s));
  size_t n = g->input_count;
  for (size_t i = 0; i < n && i < 3; i++) {
    const wm_value_t *v = &g->values[g->inputs[i]];
    names[i] = v->name;
    WM_CHECK_OK(wm_tensor_create(v->type.dtype, &v->type.shape, &in[i]));
    for (size_t k = 0; k < in[i]->count; k++) {
      if (v->type.dtype == WM_DTYPE_FLOAT) {
        wm_tensor_set_f64(in[i], k, sin((double)k * 0.37));
      } else if (strcmp(v->name, "input_ids") == 0) {
        wm_tensor_set_i64(in[i], k, (int64_t)((k * 7919) % 30000));
      } else if (strcmp(v->name, "attention_mask") == 0) {
        wm_tensor_set_i64(in[i], k, k % 8 < 6);
      } else {
        wm_tensor_set_i64(in[i], k, (int64_t)(k % 2));
      }
    }
  }
  wm_status_t st =
      wm_session_run(s, names, (const wm_tensor_t *const *)in, n, out);
  bool finite = true;
  size_t total = 0;
  for (size_t o = 0; !st && o < g->output_count; o++) {
    for (size_t k = 0; k < out[o]->count; k++) {
      finite = finite && isfinite(wm_tensor_get_f64(out[o], k));
    }
    total += out[o]->count;
  }
  for (size_t i = 0; i < 3; i++) {
    wm_tensor_destroy(in[i]);
  }
  for (size_t o = 0; o < 2; o++) {
    wm_tensor_destroy(out[o]);
  }
  wm_session_destroy(s);
  wm_graph_destroy(g);
  wm_backend_destroy(be);
  WM_CHECK_OK(st);
  WM_CHECK(finite);
  WM_CHECK(total > 0);
}

WM_TEST(mlp_runs_on_ref_with_finite_outputs) {
  run_on_ref("mlp:batch=2");
}

WM_TEST(small_bert_runs_on_ref_with_finite_outputs) {
  run_on_ref("bert-base:layers=1,seq=8");
}

WM_TEST(small_gpt2_runs_on_ref_with_finite_outputs) {
  run_on_ref("gpt2:layers=1,seq=4");
}

// One step of mlp-train on ref with |x| and |t| as input and target and
// fc0.weight given (or its default when NULL): the loss and the updated
// fc0.weight.
static wm_status_t train_step(wm_graph_t *g, wm_backend_t *be, wm_tensor_t *x,
                              wm_tensor_t *t, const wm_tensor_t *w,
                              double *loss, wm_tensor_t **w_next) {
  wm_session_t *s = NULL;
  wm_graph_t *copy = NULL;
  WM_RETURN_IF_ERROR(wm_graph_clone(g, NULL, &copy));
  wm_status_t st = wm_session_create(copy, be, &s);
  const char *names[] = {"input", "target", "fc0.weight"};
  const wm_tensor_t *in[] = {x, t, w};
  wm_tensor_t *out[16] = {NULL};
  if (!st) {
    st = wm_session_run(s, names, in, w ? 3 : 2, out);
  }
  if (!st) {
    *loss = wm_tensor_get_f64(out[0], 0);
    *w_next = out[1];  // outputs: loss, fc0.weight.next, ...
    out[1] = NULL;
  }
  for (size_t i = 0; i < 16; i++) {
    wm_tensor_destroy(out[i]);
  }
  wm_session_destroy(s);
  wm_graph_destroy(copy);
  return st;
}

WM_TEST(mlp_train_gradients_match_finite_differences) {
  wm_graph_t *g = NULL;
  WM_CHECK_OK(wm_zoo_build(
      "mlp-train:batch=4,in=3,hidden=5,layers=1,out=2,lr=100", &g));
  WM_CHECK(g->output_count == 5);
  wm_backend_t *be = NULL;
  WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &be));
  int64_t xd[] = {4, 3}, td[] = {4, 2};
  wm_shape_t xs = wm_shape_make(2, xd), ts = wm_shape_make(2, td);
  wm_tensor_t *x = NULL, *t = NULL, *w = NULL, *next = NULL;
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_FLOAT, &xs, &x));
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_FLOAT, &ts, &t));
  for (size_t k = 0; k < x->count; k++) {
    wm_tensor_set_f64(x, k, sin((double)k * 0.7) + 0.3);
  }
  for (size_t k = 0; k < t->count; k++) {
    wm_tensor_set_f64(t, k, cos((double)k * 0.9));
  }
  const wm_tensor_t *w0 =
      g->values[wm_graph_find_value(g, "fc0.weight")].initializer;
  double loss = 0, lp = 0, lm = 0;
  wm_status_t st = train_step(g, be, x, t, NULL, &loss, &next);
  // The gradient the step used: (w - w.next) / lr; against
  // (L(w + e) - L(w - e)) / 2e for a few elements.
  for (size_t k = 0; !st && k < w0->count; k += 4) {
    double grad = (wm_tensor_get_f64(w0, k) - wm_tensor_get_f64(next, k)) / 0.1;
    const double e = 1e-2;
    wm_tensor_t *dummy = NULL;
    st = wm_tensor_clone(w0, &w);
    if (!st) {
      wm_tensor_set_f64(w, k, wm_tensor_get_f64(w0, k) + e);
      st = train_step(g, be, x, t, w, &lp, &dummy);
      wm_tensor_destroy(dummy);
      dummy = NULL;
    }
    if (!st) {
      wm_tensor_set_f64(w, k, wm_tensor_get_f64(w0, k) - e);
      st = train_step(g, be, x, t, w, &lm, &dummy);
      wm_tensor_destroy(dummy);
    }
    wm_tensor_destroy(w);
    w = NULL;
    double fd = (lp - lm) / (2 * e);
    if (!st && !(fabs(fd - grad) <= 2e-3 + 2e-2 * fabs(fd))) {
      st = WM_ERROR(DATA_LOSS, "element %zu: gradient %g, finite difference %g",
                    k, grad, fd);
    }
  }
  // A step downhill lowers the loss.
  double after = 0;
  wm_tensor_t *next2 = NULL;
  if (!st) {
    st = train_step(g, be, x, t, next, &after, &next2);
  }
  wm_tensor_destroy(next2);
  wm_tensor_destroy(next);
  wm_tensor_destroy(x);
  wm_tensor_destroy(t);
  wm_backend_destroy(be);
  wm_graph_destroy(g);
  WM_CHECK_OK(st);
  WM_CHECK(after < loss);
}

WM_TEST(param_count_skips_batchnorm_statistics_and_constants) {
  wm_graph_t *g;
  WM_CHECK_OK(wm_zoo_build("mobilenetv2", &g));
  uint64_t with_stats = 0;
  for (size_t i = 0; i < g->value_count; i++) {
    const wm_tensor_t *t = g->values[i].initializer;
    if (t && t->dtype == WM_DTYPE_FLOAT && t->shape.rank >= 1) {
      with_stats += t->count;
    }
  }
  uint64_t params = wm_graph_param_count(g);
  wm_graph_destroy(g);
  WM_CHECK_INT_EQ(with_stats - params, 2 * 17056);
}

WM_TEST(allocation_failures_give_a_status_and_leak_nothing) {
  bool built = false;
  for (int64_t n = 1; n < 100000 && !built; n++) {
    wm_graph_t *g = NULL;
    wm_alloc_fail_after(n);
    wm_status_t s = wm_zoo_build("mlp:in=4,hidden=4,layers=2,out=2", &g);
    wm_alloc_fail_after(0);
    if (s) {
      wm_status_code_t code = wm_status_code(s);
      wm_status_free(s);
      WM_CHECK(g == NULL);
      WM_CHECK_INT_EQ(code, WM_STATUS_RESOURCE_EXHAUSTED);
    } else {
      built = true;
      wm_graph_destroy(g);
    }
  }
  WM_CHECK(built);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(resnet18_has_published_parameters_and_logits),
      WM_CASE(resnet50_has_published_parameters_and_53_convs),
      WM_CASE(mobilenetv2_has_published_parameters),
      WM_CASE(bert_base_has_published_parameters),
      WM_CASE(gpt2_has_published_parameters_with_tied_head),
      WM_CASE(mlp_keys_shape_the_model),
      WM_CASE(mlp_train_gradients_match_finite_differences),
      WM_CASE(bert_keys_shape_the_model),
      WM_CASE(spec_errors_name_the_problem),
      WM_CASE(listing_describes_every_model),
      WM_CASE(builds_are_deterministic),
      WM_CASE(weights_are_seeded_by_name_not_build_order),
      WM_CASE(mlp_runs_on_ref_with_finite_outputs),
      WM_CASE(small_bert_runs_on_ref_with_finite_outputs),
      WM_CASE(small_gpt2_runs_on_ref_with_finite_outputs),
      WM_CASE(param_count_skips_batchnorm_statistics_and_constants),
      WM_CASE(allocation_failures_give_a_status_and_leak_nothing),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
