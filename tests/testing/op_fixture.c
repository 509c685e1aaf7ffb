#include "op_fixture.h"

#include <stdio.h>
#include <string.h>

static void destroy_outputs(wm_op_fixture_t *f) {
  for (int i = 0; i < WM_OP_FIXTURE_MAX_OUT; i++) {
    wm_tensor_destroy(f->out[i]);
    f->out[i] = NULL;
  }
}

wm_status_t wm_op_fixture_init(wm_op_fixture_t *f, int64_t opset) {
  memset(f, 0, sizeof(*f));
  f->node = -1;
  WM_RETURN_IF_ERROR(wm_graph_create("test", NULL, &f->graph));
  return wm_graph_set_opset(f->graph, "", opset);
}

void wm_op_fixture_deinit(wm_op_fixture_t *f) {
  destroy_outputs(f);
  wm_graph_destroy(f->graph);
  f->graph = NULL;
}

// Creates a tensor of |dtype| and shape |dims| for an initializer.
static wm_status_t make_tensor(wm_dtype_t dtype, int32_t rank,
                               const int64_t *dims, wm_tensor_t **out) {
  wm_shape_t s = wm_shape_make(rank, dims);
  return wm_tensor_create(dtype, &s, out);
}

wm_status_t wm_op_fixture_add_const(wm_op_fixture_t *f, const char *name,
                                    wm_dtype_t dtype, int32_t rank,
                                    const int64_t *dims, const double *vals) {
  wm_tensor_t *t;
  WM_RETURN_IF_ERROR(make_tensor(dtype, rank, dims, &t));
  for (size_t i = 0; i < t->count; i++) {
    wm_tensor_set_f64(t, i, vals ? vals[i] : (double)i);
  }
  return wm_graph_add_initializer(f->graph, name, t, NULL);
}

wm_status_t wm_op_fixture_add_const_i64(wm_op_fixture_t *f, const char *name,
                                        wm_dtype_t dtype, int32_t rank,
                                        const int64_t *dims,
                                        const int64_t *vals) {
  wm_tensor_t *t;
  WM_RETURN_IF_ERROR(make_tensor(dtype, rank, dims, &t));
  for (size_t i = 0; i < t->count; i++) {
    wm_tensor_set_i64(t, i, vals[i]);
  }
  return wm_graph_add_initializer(f->graph, name, t, NULL);
}

wm_status_t wm_op_fixture_add_ints(wm_op_fixture_t *f, const char *name,
                                   size_t n, const int64_t *vals) {
  int64_t dims[1] = {(int64_t)n};
  return wm_op_fixture_add_const_i64(f, name, WM_DTYPE_INT64, 1, dims, vals);
}

wm_status_t wm_op_fixture_add_floats(wm_op_fixture_t *f, const char *name,
                                     size_t n, const double *vals) {
  int64_t dims[1] = {(int64_t)n};
  return wm_op_fixture_add_const(f, name, WM_DTYPE_FLOAT, 1, dims, vals);
}

wm_status_t wm_op_fixture_add_strings(wm_op_fixture_t *f, const char *name,
                                      int32_t rank, const int64_t *dims,
                                      const char *const *vals) {
  wm_tensor_t *t;
  WM_RETURN_IF_ERROR(make_tensor(WM_DTYPE_STRING, rank, dims, &t));
  for (size_t i = 0; i < t->count; i++) {
    wm_status_t s = wm_tensor_set_string(t, i, vals[i], strlen(vals[i]));
    if (s) {
      wm_tensor_destroy(t);
      return s;
    }
  }
  return wm_graph_add_initializer(f->graph, name, t, NULL);
}

wm_status_t wm_op_fixture_add_input(wm_op_fixture_t *f, const char *name,
                                    wm_dtype_t dtype, int32_t rank,
                                    const int64_t *dims) {
  wm_shape_t s = wm_shape_make(rank, dims);
  wm_type_t t = wm_type_tensor(dtype, &s);
  return wm_graph_add_input(f->graph, name, &t, NULL);
}

wm_status_t wm_op_fixture_add_node(wm_op_fixture_t *f, const char *op,
                                   const char *const *inputs, int32_t n_in,
                                   int32_t n_out) {
  static const char *const outs[WM_OP_FIXTURE_MAX_OUT] = {"y0", "y1", "y2"};
  WM_ASSERT(n_out <= WM_OP_FIXTURE_MAX_OUT);
  return wm_graph_add_node(f->graph, op, "", "n", inputs, n_in, outs, n_out,
                           &f->node);
}

wm_status_t wm_op_fixture_attr_int(wm_op_fixture_t *f, const char *name,
                                   int64_t value) {
  return wm_graph_add_attr_int(f->graph, f->node, name, value);
}

wm_status_t wm_op_fixture_attr_ints(wm_op_fixture_t *f, const char *name,
                                    const int64_t *values, size_t n) {
  return wm_graph_add_attr_ints(f->graph, f->node, name, values, n);
}

wm_status_t wm_op_fixture_attr_float(wm_op_fixture_t *f, const char *name,
                                     float value) {
  return wm_graph_add_attr_float(f->graph, f->node, name, value);
}

wm_status_t wm_op_fixture_attr_string(wm_op_fixture_t *f, const char *name,
                                      const char *value) {
  return wm_graph_add_attr_string(f->graph, f->node, name, value);
}

wm_status_t wm_op_fixture_attr_strings(wm_op_fixture_t *f, const char *name,
                                       const char *const *values, size_t n) {
  wm_attr_t a;
  memset(&a, 0, sizeof(a));
  a.name = name;
  a.type = WM_ATTR_STRINGS;
  a.count = n;
  a.strings = (const char **)values;  // copied, lengths by strlen
  return wm_graph_add_attr(f->graph, f->node, &a);
}

wm_status_t wm_op_fixture_run(wm_op_fixture_t *f) {
  destroy_outputs(f);
  wm_op_ctx_t ctx;
  WM_RETURN_IF_ERROR(wm_op_ctx_init(&ctx, f->graph, (size_t)f->node));
  const wm_op_def_t *def;
  wm_status_t s = wm_op_find_def(&ctx, &def);
  if (!s) {
    s = wm_op_execute(def, &ctx);
  }
  for (int32_t i = 0; i < ctx.n_out; i++) {
    if (i < WM_OP_FIXTURE_MAX_OUT) {
      f->out[i] = ctx.out[i];
    } else {
      wm_tensor_destroy(ctx.out[i]);
    }
  }
  wm_op_ctx_deinit(&ctx);
  return s;
}

wm_status_t wm_op_fixture_infer(wm_op_fixture_t *f, wm_type_t *out_type) {
  WM_RETURN_IF_ERROR(wm_ops_check_graph(f->graph));
  int32_t id = wm_graph_find_value(f->graph, "y0");
  if (id < 0) {
    return WM_ERROR(NOT_FOUND, "the graph has no value \"y0\"");
  }
  *out_type = f->graph->values[id].type;
  return NULL;
}

// The node's context with its types inferred (the shape rule alone, no
// graph check) and its definition; release with wm_op_ctx_deinit, also
// after a failure.
static wm_status_t inferred_ctx(wm_op_fixture_t *f, wm_op_ctx_t *ctx,
                                const wm_op_def_t **out_def) {
  WM_RETURN_IF_ERROR(wm_op_ctx_init(ctx, f->graph, (size_t)f->node));
  WM_RETURN_IF_ERROR(wm_op_find_def(ctx, out_def));
  return (*out_def)->infer(ctx);
}

wm_status_t wm_op_fixture_cost(wm_op_fixture_t *f, wm_type_t *out_type,
                               wm_op_cost_t *out_cost) {
  memset(out_cost, 0, sizeof(*out_cost));
  wm_op_ctx_t ctx = {0};
  const wm_op_def_t *def;
  wm_status_t s = inferred_ctx(f, &ctx, &def);
  if (!s) {
    *out_type = ctx.out_types[0];
    wm_op_cost(def, &ctx, out_cost);
  }
  wm_op_ctx_deinit(&ctx);
  return s;
}

wm_status_t wm_op_fixture_resolve(wm_op_fixture_t *f, wm_op_params_t *out) {
  memset(out, 0, sizeof(*out));
  wm_op_ctx_t ctx = {0};
  const wm_op_def_t *def;
  wm_status_t s = inferred_ctx(f, &ctx, &def);
  if (!s) {
    s = wm_op_resolve(def, &ctx, out);
  }
  wm_op_ctx_deinit(&ctx);
  return s;
}

wm_status_t wm_op_fixture_define(wm_op_fixture_t *f, wm_gen_compute_t *out) {
  wm_op_ctx_t ctx = {0};
  const wm_op_def_t *def;
  wm_status_t s = inferred_ctx(f, &ctx, &def);
  if (!s) {
    s = def->define ? def->define(&ctx, out)
                    : WM_ERROR(UNIMPLEMENTED, "%s has no compute definition",
                               def->name);
  }
  wm_op_ctx_deinit(&ctx);
  return s;
}

bool wm_op_fixture_param_ints_are(const wm_op_params_t *p, const char *name,
                                  const int64_t *want, int32_t n) {
  const wm_op_param_t *e = wm_op_param_find(p, name);
  bool ok = e && e->type == WM_ATTR_INTS && e->count == n;
  for (int32_t k = 0; ok && k < n; k++) {
    ok = p->ints[e->at + k] == want[k];
  }
  if (!ok) {
    fprintf(stderr, "parameter %s:", name);
    for (int32_t k = 0; e && e->type == WM_ATTR_INTS && k < e->count; k++) {
      fprintf(stderr, " %lld", (long long)p->ints[e->at + k]);
    }
    fprintf(stderr, "%s, want", e ? "" : " absent");
    for (int32_t k = 0; k < n; k++) {
      fprintf(stderr, " %lld", (long long)want[k]);
    }
    fprintf(stderr, "\n");
  }
  return ok;
}

bool wm_op_fixture_param_int_is(const wm_op_params_t *p, const char *name,
                                int64_t want) {
  const wm_op_param_t *e = wm_op_param_find(p, name);
  if (!e || e->type != WM_ATTR_INT || e->i != want) {
    fprintf(stderr, "parameter %s: %lld%s, want %lld\n", name,
            e ? (long long)e->i : 0LL, e ? "" : " (absent)", (long long)want);
    return false;
  }
  return true;
}

bool wm_op_fixture_values_near(const wm_tensor_t *t, const double *want,
                               size_t n, double tol) {
  if (!t || t->count != n) {
    fprintf(stderr, "got %zu elements, want %zu\n", t ? t->count : 0, n);
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    double got = wm_tensor_get_f64(t, i);
    if (!(got - want[i] <= tol && want[i] - got <= tol)) {
      fprintf(stderr, "element %zu: got %.9g, want %.9g\n", i, got, want[i]);
      return false;
    }
  }
  return true;
}

bool wm_op_fixture_shape_is(const wm_tensor_t *t, int32_t rank,
                            const int64_t *dims) {
  wm_shape_t want = wm_shape_make(rank, dims);
  if (!t || !wm_shape_equal(&t->shape, &want)) {
    char a[128], b[128];
    fprintf(stderr, "shape %s, want %s\n",
            t ? wm_shape_format(&t->shape, a, sizeof(a)) : "none",
            wm_shape_format(&want, b, sizeof(b)));
    return false;
  }
  return true;
}

bool wm_op_fixture_strings_are(const wm_tensor_t *t, const char *const *want,
                               size_t n) {
  if (!t || t->dtype != WM_DTYPE_STRING || t->count != n) {
    fprintf(stderr, "got %zu elements (dtype %d), want %zu strings\n",
            t ? t->count : 0, t ? (int)t->dtype : 0, n);
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    const char *got = ((char *const *)t->data)[i];
    if (strcmp(got, want[i]) != 0) {
      fprintf(stderr, "element %zu: got \"%s\", want \"%s\"\n", i, got,
              want[i]);
      return false;
    }
  }
  return true;
}

bool wm_op_fixture_fails_with(wm_status_t s, const char *part) {
  bool ok = s && strstr(wm_status_message(s), part);
  if (!ok) {
    fprintf(stderr, "status: %s\n", s ? wm_status_message(s) : "ok");
  }
  wm_status_free(s);
  return ok;
}
