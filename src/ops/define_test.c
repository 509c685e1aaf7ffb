// Every operator's compute definition against its reference kernel: random
// float32 instances (ranks 0 to 4, sizes 1 and odd, broadcast inputs) run
// on the reference kernel and as the kernel the generator prints from the
// definition, built with the system compiler; every element must agree.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_fixture.h"
#include "wm_test.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static int32_t pick(int32_t n) {
  return wm_test_pick(&rng, n);
}

enum { PER_OP = 6, MAX_CASES = 512 };

// One instance: its compute, input data (float) and the reference output.
typedef struct inst {
  wm_gen_compute_t c;
  int32_t n_in;
  float *in[WM_GEN_MAX_TENSORS];
  float *want;
  size_t count;
  const char *op;
} inst_t;

// The attributes of |def|'s node that its definition reads: for
// wmap.Elementwise a random program over its |n_in| inputs and two
// constants.
static wm_status_t random_attrs(const wm_op_def_t *def, int32_t n_in,
                                wm_op_fixture_t *f) {
  if (strcmp(def->name, "Elementwise") != 0) {
    return NULL;
  }
  static const char *const steps[] = {
      "Add",     "Sub",  "Mul", "Div", "Neg",  "Abs",        "Relu",
      "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Erf"};
  const char *ops[6];
  int64_t args[12];
  int32_t n = 1 + pick(6);
  for (int32_t i = 0; i < n; i++) {
    ops[i] = steps[pick(14)];
    for (int k = 0; k < 2; k++) {
      // The last step's first operand is the step before, so every step
      // counts; the rest any input, earlier step or constant.
      int32_t v = pick(n_in + i + 2) - 2;
      args[2 * i + k] = i > 0 && k == 0 ? n_in + i - 1 : v;
    }
  }
  const float consts[2] = {0.5f, -1.25f};
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_strings(f, "ops", ops, (size_t)n));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_ints(f, "args", args, (size_t)(2 * n)));
  return wm_graph_add_attr_floats(f->graph, f->node, "constants", consts, 2);
}

// Builds instance |k| of |def| into |out|; false (nothing kept) when the
// random shapes do not make a valid instance.
static bool make_inst(const wm_op_def_t *def, int k, inst_t *out) {
  memset(out, 0, sizeof(*out));
  int32_t rank = pick(5), n_in = def->min_inputs;
  if (def->max_inputs < 0 || def->max_inputs > def->min_inputs) {
    n_in = def->min_inputs + pick(3);
  }
  int64_t dims[WM_MAX_RANK];
  for (int32_t d = 0; d < rank; d++) {
    dims[d] = 1 + pick(d == rank - 1 ? 37 : 5);
  }
  wm_op_fixture_t f;
  if (wm_op_fixture_init(&f,
                         def->since_version > 13 ? def->since_version : 13)) {
    return false;
  }
  const char *names[4] = {"a", "b", "c", "d"};
  n_in = n_in > 4 ? 4 : n_in;
  bool ok = true;
  for (int32_t i = 0; ok && i < n_in; i++) {
    int32_t r = i == 0 ? rank : pick(rank + 1);  // input 0 sets the shape
    int64_t id[WM_MAX_RANK];
    size_t n = 1;
    for (int32_t d = 0; d < r; d++) {
      id[d] = i > 0 && pick(3) == 0 ? 1 : dims[rank - r + d];
      n *= (size_t)id[d];
    }
    double *vals = malloc(n * sizeof(double));
    ok = vals != NULL;
    for (size_t e = 0; ok && e < n; e++) {
      vals[e] = (double)(pick(4001) - 2000) / 800.0;
    }
    wm_status_t s =
        ok ? wm_op_fixture_add_const(&f, names[i], WM_DTYPE_FLOAT, r, id, vals)
           : NULL;
    ok = ok && !s;
    wm_status_free(s);
    free(vals);
  }
  static const char *const outs[1] = {"y0"};
  wm_status_t s =
      ok && def->domain[0]
          ? wm_graph_set_opset(f.graph, def->domain, def->since_version)
          : NULL;
  s = ok && !s ? wm_graph_add_node(f.graph, def->name, def->domain, "n", names,
                                   n_in, outs, 1, &f.node)
               : s;
  s = ok && !s ? random_attrs(def, n_in, &f) : s;
  ok = ok && !s;
  wm_status_free(s);
  s = ok ? wm_op_fixture_run(&f) : NULL;
  ok = ok && !s;
  wm_status_free(s);
  s = ok ? wm_op_fixture_define(&f, &out->c) : NULL;
  ok = ok && !s;
  if (s) {
    printf("  %s: %s\n", def->name, wm_status_message(s));
  }
  wm_status_free(s);
  if (ok) {
    snprintf(out->c.name, sizeof(out->c.name), "k%d", k);
    out->op = def->name;
    out->n_in = n_in;
    out->count = f.out[0]->count;
    out->want = malloc((out->count + 1) * sizeof(float));
    ok = out->want != NULL;
    for (size_t e = 0; ok && e < out->count; e++) {
      out->want[e] = ((const float *)f.out[0]->data)[e];
    }
    for (int32_t i = 0; ok && i < n_in; i++) {
      const wm_tensor_t *t =
          f.graph->values[f.graph->nodes[f.node].inputs[i]].initializer;
      out->in[i] = malloc((t->count + 1) * sizeof(float));
      ok = out->in[i] != NULL;
      if (ok && t->count) {
        memcpy(out->in[i], t->data, t->count * sizeof(float));
      }
    }
  }
  wm_op_fixture_deinit(&f);
  return ok;
}

static void free_inst(inst_t *in) {
  for (int32_t i = 0; i < WM_GEN_MAX_TENSORS; i++) {
    free(in->in[i]);
  }
  free(in->want);
}

static bool agree(float got, float want) {
  if (want != want || got != got) {
    return want != want && got != got;
  }
  if (isinf(want) || isinf(got)) {
    return got == want;
  }
  return fabsf(got - want) <= 1e-5f * fabsf(want) + 1e-6f;
}

WM_TEST(definitions_agree_with_the_reference_kernels) {
  if (!wm_cc_available()) {
    wm_test_skip("no system C compiler (cc) to build generated kernels");
    return;
  }
  static inst_t insts[MAX_CASES];
  int n = 0, n_defs = 0;
  wm_strbuf_t src;
  wm_strbuf_init(&src);
  for (size_t i = 0; i < wm_ops_count(); i++) {
    const wm_op_def_t *def = wm_ops_at(i);
    if (!def->define) {
      continue;
    }
    n_defs++;
    int made = 0;
    for (int k = 0; k < PER_OP * 3 && made < PER_OP && n < MAX_CASES; k++) {
      if (!make_inst(def, n, &insts[n])) {
        free_inst(&insts[n]);
        continue;
      }
      wm_gen_schedule_t s = wm_gen_default_schedule(&insts[n].c, 64);
      wm_gen_nest_t nest;
      WM_CHECK_OK(wm_gen_lower(&insts[n].c, &s, &nest));
      WM_CHECK_OK(wm_gen_print(&nest, WM_GEN_C, &src));
      made++;
      n++;
    }
    if (made < PER_OP) {
      printf("  %s: %d instances made\n", def->name, made);
    }
    WM_CHECK(made == PER_OP);
  }
  char dir[] = "/tmp/wmap_define_XXXXXX";
  WM_CHECK(mkdtemp(dir) != NULL);
  wm_cc_lib_t *lib = NULL;
  WM_CHECK_OK(wm_cc_build(wm_strbuf_str(&src), dir, &lib, NULL));
  int bad = 0;
  for (int k = 0; lib && k < n; k++) {
    void *fn = wm_cc_symbol(lib, insts[k].c.name);
    WM_CHECK(fn != NULL);
    float *y = calloc(insts[k].count + 1, sizeof(float));
    WM_CHECK(y != NULL);
    if (!fn || !y) {
      free(y);
      continue;
    }
    int64_t end = insts[k].c.n_axes ? insts[k].c.extents[0] : 1;
    void *args[WM_GEN_MAX_TENSORS] = {y};
    memcpy(args + 1, insts[k].in, (size_t)insts[k].n_in * sizeof(float *));
    wm_gen_call(fn, args, 0, end);
    for (size_t e = 0; e < insts[k].count; e++) {
      if (!agree(y[e], insts[k].want[e])) {
        printf("  %s (%s) element %zu: generated %.9g, reference %.9g\n",
               insts[k].op, insts[k].c.name, e, (double)y[e],
               (double)insts[k].want[e]);
        bad++;
        break;
      }
    }
    free(y);
  }
  printf("  %d operators with a definition, %d instances, %d wrong\n", n_defs,
         n, bad);
  WM_CHECK(n_defs >= 15);
  WM_CHECK_INT_EQ(bad, 0);
  wm_cc_close(lib);
  wm_strbuf_deinit(&src);
  for (int k = 0; k < n; k++) {
    free_inst(&insts[k]);
  }
  char rm[128];
  snprintf(rm, sizeof(rm), "rm -rf %s", dir);
  WM_CHECK_INT_EQ(system(rm), 0);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(definitions_agree_with_the_reference_kernels),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
