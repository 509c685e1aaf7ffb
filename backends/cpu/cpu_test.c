// Differential test of the cpu backend plugin against the reference
// backend: the plugin is dlopened as the host would, generated one-node
// graphs run on both through sessions, and every instance the cpu backend
// claims must compute what ref computes (float: rtol 1e-4, atol 1e-5).
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "ops/ops.h"
#include "ref.h"
#include "wm_test.h"
#include "wmap/plan.h"
#include "wmap/session.h"

#ifndef WMAP_CPU_PLUGIN
#error "WMAP_CPU_PLUGIN must name the built plugin"
#endif

enum { MAX_IO = 8, MAX_ATTR = 12, MAX_INTS = 32 };

// One attribute of a generated instance.
typedef struct gen_attr {
  const char *name;               // attribute name
  wm_attr_type_t type;            // INT, FLOAT, STRING or INTS
  int64_t i;                      // INT
  float f;                        // FLOAT
  const char *s;                  // STRING
  int64_t ints[MAX_INTS];         // INTS
  float floats[MAX_INTS];         // FLOATS
  const char *strings[MAX_INTS];  // STRINGS
  size_t count;                   // list length
} gen_attr_t;

// One operator instance: a one-node graph's inputs and attributes.
typedef struct inst {
  const char *op;                  // op_type
  const char *domain;              // its domain: NULL = default, or "wmap"
  int64_t opset;                   // imported opset of the default domain
  int32_t n_in, n_out;             // node inputs and outputs
  wm_dtype_t dtype[MAX_IO];        // per input; UNDEFINED = omitted
  wm_shape_t shape[MAX_IO];        // per input
  size_t n_attr;                   // attributes
  gen_attr_t attr[MAX_ATTR];       // attributes
  bool is_const[MAX_IO];           // input is an initializer: of |cvals|,
  bool is_weight[MAX_IO];          // or of seeded values (any size)
  double scale[MAX_IO];            // those values' bound
  double cvals[MAX_IO][MAX_INTS];  // initializer values (converted)
  bool nans;                       // every 37th float input value NaN
} inst_t;

typedef enum outcome {
  OUT_AGREES = 0,   // claimed and equal to ref
  OUT_REFUSED = 1,  // the cpu backend does not take it
  OUT_INVALID = 2,  // ref does not take it either: not an instance
  OUT_FAILED = 3,   // claimed but failed or differs
} outcome_t;

static void *plugin_handle;          // dlopen handle, kept until the end
static wm_backend_t *cpu_be;         // the plugin under test
static wm_backend_t *ref_be;         // the oracle
static size_t counts[4];             // instances per outcome
static uint64_t rng_state = 42;      // data generator
static const char *agreed_ops[256];  // op_types with an agreeing instance
static size_t n_agreed_ops;          // entries of agreed_ops

// Remembers that an instance of |op| was claimed and agreed.
static void note_agreed(const char *op) {
  for (size_t i = 0; i < n_agreed_ops; i++) {
    if (strcmp(agreed_ops[i], op) == 0) {
      return;
    }
  }
  if (n_agreed_ops < sizeof(agreed_ops) / sizeof(agreed_ops[0])) {
    agreed_ops[n_agreed_ops++] = op;
  }
}

static bool was_agreed(const char *op) {
  for (size_t i = 0; i < n_agreed_ops; i++) {
    if (strcmp(agreed_ops[i], op) == 0) {
      return true;
    }
  }
  return false;
}

static uint64_t rng_next(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return rng_state >> 33;
}

// ------------------------------------------------------------ instances

static inst_t inst_make(const char *op, int64_t opset) {
  inst_t in;
  memset(&in, 0, sizeof(in));
  in.op = op;
  in.opset = opset;
  in.n_out = 1;
  return in;
}

// Appends an input of |dtype| and |rank| dims (UNDEFINED = omitted).
static void inst_input(inst_t *in, wm_dtype_t dtype, int32_t rank,
                       const int64_t *dims) {
  if (in->n_in >= MAX_IO) {
    return;
  }
  in->dtype[in->n_in] = dtype;
  in->shape[in->n_in] = wm_shape_make(rank, dims);
  in->n_in++;
}

// Appends an initializer input of |dtype| holding |values| (as many as
// the dims say, at most MAX_INTS).
static void inst_const(inst_t *in, wm_dtype_t dtype, int32_t rank,
                       const int64_t *dims, const double *values) {
  int32_t i = in->n_in;
  inst_input(in, dtype, rank, dims);
  if (i < in->n_in) {
    size_t n = 1;
    for (int32_t d = 0; d < rank; d++) {
      n *= (size_t)dims[d];
    }
    in->is_const[i] = n <= MAX_INTS;
    memcpy(in->cvals[i], values, (n <= MAX_INTS ? n : 0) * sizeof(double));
  }
}

// Appends an initializer input of |dtype| and |rank| dims holding seeded
// values in [-scale, scale] (the same in every graph built from |in|): a
// constant weight that kernels may prepare at plan time.
static void inst_weight(inst_t *in, wm_dtype_t dtype, int32_t rank,
                        const int64_t *dims, double scale) {
  int32_t i = in->n_in;
  inst_input(in, dtype, rank, dims);
  if (i < in->n_in) {
    in->is_const[i] = true;
    in->is_weight[i] = true;
    in->scale[i] = scale;
  }
}

static gen_attr_t *inst_attr(inst_t *in, const char *name,
                             wm_attr_type_t type) {
  if (in->n_attr >= MAX_ATTR) {
    return NULL;
  }
  gen_attr_t *a = &in->attr[in->n_attr++];
  memset(a, 0, sizeof(*a));
  a->name = name;
  a->type = type;
  return a;
}

static void attr_int(inst_t *in, const char *name, int64_t v) {
  gen_attr_t *a = inst_attr(in, name, WM_ATTR_INT);
  if (a) {
    a->i = v;
  }
}

static void attr_float(inst_t *in, const char *name, float v) {
  gen_attr_t *a = inst_attr(in, name, WM_ATTR_FLOAT);
  if (a) {
    a->f = v;
  }
}

static void attr_string(inst_t *in, const char *name, const char *v) {
  gen_attr_t *a = inst_attr(in, name, WM_ATTR_STRING);
  if (a) {
    a->s = v;
  }
}

static void attr_ints(inst_t *in, const char *name, size_t n,
                      const int64_t *v) {
  gen_attr_t *a = inst_attr(in, name, WM_ATTR_INTS);
  if (a && n <= MAX_INTS) {
    a->count = n;
    memcpy(a->ints, v, n * sizeof(int64_t));
  }
}

static void attr_floats(inst_t *in, const char *name, size_t n,
                        const float *v) {
  gen_attr_t *a = inst_attr(in, name, WM_ATTR_FLOATS);
  if (a && n <= MAX_INTS) {
    a->count = n;
    memcpy(a->floats, v, n * sizeof(float));
  }
}

static void attr_strings(inst_t *in, const char *name, size_t n,
                         const char *const *v) {
  gen_attr_t *a = inst_attr(in, name, WM_ATTR_STRINGS);
  if (a && n <= MAX_INTS) {
    a->count = n;
    memcpy(a->strings, v, n * sizeof(char *));
  }
}

// Writes "Conv@11(float[1,2,3], const float[...], ...) group=2
// pads=[1,1]" into |buf|.
static const char *inst_text(const inst_t *in, char *buf, size_t size) {
  size_t n =
      (size_t)snprintf(buf, size, "%s@%lld(", in->op, (long long)in->opset);
  for (int32_t i = 0; i < in->n_in && n < size; i++) {
    char t[96];
    wm_type_t ty = wm_type_tensor(in->dtype[i], &in->shape[i]);
    n += (size_t)snprintf(
        buf + n, size - n, "%s%s%s", i ? ", " : "",
        in->dtype[i] && in->is_const[i] ? "const " : "",
        in->dtype[i] ? wm_type_format(&ty, t, sizeof(t)) : "-");
  }
  if (n < size) {
    n += (size_t)snprintf(buf + n, size - n, ")");
  }
  for (size_t i = 0; i < in->n_attr && n < size; i++) {
    const gen_attr_t *a = &in->attr[i];
    n += (size_t)snprintf(buf + n, size - n, " %s=", a->name);
    if (a->type == WM_ATTR_INT && n < size) {
      n += (size_t)snprintf(buf + n, size - n, "%lld", (long long)a->i);
    } else if (a->type == WM_ATTR_FLOAT && n < size) {
      n += (size_t)snprintf(buf + n, size - n, "%g", (double)a->f);
    } else if (a->type == WM_ATTR_STRING && n < size) {
      n += (size_t)snprintf(buf + n, size - n, "%s", a->s);
    } else if (a->type == WM_ATTR_FLOATS) {
      for (size_t j = 0; j < a->count && n < size; j++) {
        n += (size_t)snprintf(buf + n, size - n, "%s%g", j ? "," : "[",
                              (double)a->floats[j]);
      }
      if (n < size) {
        n += (size_t)snprintf(buf + n, size - n, "]");
      }
    } else if (a->type == WM_ATTR_STRINGS) {
      for (size_t j = 0; j < a->count && n < size; j++) {
        n += (size_t)snprintf(buf + n, size - n, "%s%s", j ? "," : "[",
                              a->strings[j]);
      }
      if (n < size) {
        n += (size_t)snprintf(buf + n, size - n, "]");
      }
    } else {
      for (size_t j = 0; j < a->count && n < size; j++) {
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", j ? "," : "[",
                              (long long)a->ints[j]);
      }
      if (n < size) {
        n += (size_t)snprintf(buf + n, size - n, "]");
      }
    }
  }
  return buf;
}

static wm_status_t build_graph(const inst_t *in, wm_graph_t **out) {
  *out = NULL;
  wm_graph_t *g;
  WM_RETURN_IF_ERROR(wm_graph_create("g", NULL, &g));
  static const char *const in_names[MAX_IO] = {"x0", "x1", "x2", "x3",
                                               "x4", "x5", "x6", "x7"};
  static const char *const out_names[MAX_IO] = {"y0", "y1", "y2", "y3",
                                                "y4", "y5", "y6", "y7"};
  const char *ins[MAX_IO], *outs[MAX_IO];
  wm_status_t s = wm_graph_set_opset(g, "", in->opset);
  if (!s && in->domain) {
    s = wm_graph_set_opset(g, in->domain, 1);
  }
  for (int32_t i = 0; !s && i < in->n_in; i++) {
    ins[i] = in->dtype[i] ? in_names[i] : "";
    if (in->dtype[i] && in->is_const[i]) {
      wm_tensor_t *t;
      s = wm_tensor_create(in->dtype[i], &in->shape[i], &t);
      uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
      for (size_t j = 0; !s && in->is_weight[i] && j < t->count; j++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)((seed >> 33) % 4001) / 2000.0 - 1.0;
        wm_tensor_set_f64(t, j, u * in->scale[i]);
      }
      for (size_t j = 0;
           !s && !in->is_weight[i] && j < t->count && j < MAX_INTS; j++) {
        wm_tensor_set_f64(t, j, in->cvals[i][j]);
      }
      if (!s) {
        s = wm_graph_add_initializer(g, in_names[i], t, NULL);
      }
    } else if (in->dtype[i]) {
      wm_type_t t = wm_type_tensor(in->dtype[i], &in->shape[i]);
      s = wm_graph_add_input(g, in_names[i], &t, NULL);
    }
  }
  for (int32_t i = 0; i < in->n_out; i++) {
    outs[i] = out_names[i];
  }
  int32_t node = 0;
  if (!s) {
    s = wm_graph_add_node(g, in->op, in->domain ? in->domain : "", "n", ins,
                          in->n_in, outs, in->n_out, &node);
  }
  for (size_t i = 0; !s && i < in->n_attr; i++) {
    const gen_attr_t *a = &in->attr[i];
    switch (a->type) {
      case WM_ATTR_INT:
        s = wm_graph_add_attr_int(g, node, a->name, a->i);
        break;
      case WM_ATTR_FLOAT:
        s = wm_graph_add_attr_float(g, node, a->name, a->f);
        break;
      case WM_ATTR_STRING:
        s = wm_graph_add_attr_string(g, node, a->name, a->s);
        break;
      case WM_ATTR_FLOATS:
        s = wm_graph_add_attr_floats(g, node, a->name, a->floats, a->count);
        break;
      case WM_ATTR_STRINGS: {
        size_t lens[MAX_INTS];
        for (size_t j = 0; j < a->count; j++) {
          lens[j] = strlen(a->strings[j]);
        }
        wm_attr_t at;
        memset(&at, 0, sizeof(at));
        at.name = a->name;
        at.type = WM_ATTR_STRINGS;
        at.count = a->count;
        at.strings = (const char **)a->strings;
        at.string_lens = lens;
        s = wm_graph_add_attr(g, node, &at);
        break;
      }
      default:
        s = wm_graph_add_attr_ints(g, node, a->name, a->ints, a->count);
        break;
    }
  }
  for (int32_t i = 0; !s && i < in->n_out; i++) {
    s = wm_graph_add_output(g, out_names[i], NULL, NULL);
  }
  if (s) {
    wm_graph_destroy(g);
    return s;
  }
  *out = g;
  return NULL;
}

// Fills |t| with values that keep integer kernels away from undefined
// behaviour (no zero divisors) and floats in [-2, 2].
static void fill_random(wm_tensor_t *t) {
  for (size_t i = 0; i < t->count; i++) {
    uint64_t r = rng_next();
    if (t->dtype == WM_DTYPE_BOOL) {
      wm_tensor_set_i64(t, i, (int64_t)(r & 1));
    } else if (wm_dtype_is_float(t->dtype)) {
      wm_tensor_set_f64(t, i, (double)(r % 4001) / 1000.0 - 2.0);
    } else if (wm_dtype_is_unsigned(t->dtype)) {
      wm_tensor_set_i64(t, i, (int64_t)(r % 5) + 1);
    } else {
      int64_t v = (int64_t)(r % 6) - 3;
      wm_tensor_set_i64(t, i, v >= 0 ? v + 1 : v);
    }
  }
}

// True when |a| (cpu) matches |b| (ref); *where gets the first mismatch.
static bool outputs_match(const wm_tensor_t *a, const wm_tensor_t *b, char *why,
                          size_t size) {
  char sa[64], sb[64];
  if (a->dtype != b->dtype || !wm_shape_equal(&a->shape, &b->shape)) {
    snprintf(why, size, "cpu gave %s %s, ref %s %s", wm_dtype_name(a->dtype),
             wm_shape_format(&a->shape, sa, sizeof(sa)),
             wm_dtype_name(b->dtype),
             wm_shape_format(&b->shape, sb, sizeof(sb)));
    return false;
  }
  if (a->dtype == WM_DTYPE_STRING) {
    snprintf(why, size, "string tensors differ");
    return wm_tensor_equal(a, b);
  }
  bool is_float = wm_dtype_is_float(a->dtype);
  bool half = a->dtype == WM_DTYPE_FLOAT16 || a->dtype == WM_DTYPE_BFLOAT16;
  double rtol = half ? 1e-2 : 1e-4, atol = half ? 1e-3 : 1e-5;
  for (size_t i = 0; i < a->count; i++) {
    if (!is_float) {
      int64_t x = wm_tensor_get_i64(a, i), y = wm_tensor_get_i64(b, i);
      if (x != y) {
        snprintf(why, size, "element %zu: cpu %lld, ref %lld", i, (long long)x,
                 (long long)y);
        return false;
      }
      continue;
    }
    double x = wm_tensor_get_f64(a, i), y = wm_tensor_get_f64(b, i);
    if (isnan(x) && isnan(y)) {
      continue;
    }
    if (x == y) {
      continue;  // also equal infinities
    }
    if (!(fabs(x - y) <= atol + rtol * fabs(y))) {
      snprintf(why, size, "element %zu: cpu %.9g, ref %.9g", i, x, y);
      return false;
    }
  }
  return true;
}

// Runs |in| on both backends; prints the instance when cpu claims it and
// fails or differs. *out_impl gets the implementation cpu reported.
static outcome_t run_instance(const inst_t *in, uint32_t *out_impl) {
  char text[512], why[256];
  inst_text(in, text, sizeof(text));
  if (out_impl) {
    *out_impl = WM_IMPL_NONE;
  }
  wm_graph_t *gc = NULL, *gr = NULL;
  wm_session_t *sc = NULL, *sr = NULL;
  wm_tensor_t *xs[MAX_IO] = {NULL};
  wm_tensor_t *yc[MAX_IO] = {NULL}, *yr[MAX_IO] = {NULL};
  const char *names[MAX_IO];
  static const char *const in_names[MAX_IO] = {"x0", "x1", "x2", "x3",
                                               "x4", "x5", "x6", "x7"};
  size_t n_given = 0;
  outcome_t result = OUT_INVALID;
  wm_status_t s = build_graph(in, &gc);
  if (!s) {
    s = build_graph(in, &gr);
  }
  if (s) {
    printf("  cannot build %s: %s\n", text, wm_status_message(s));
    wm_status_free(s);
    result = OUT_FAILED;
    goto done;
  }
  // No graph passes: the node itself runs (folding would compute a node
  // with constant inputs ahead of time, on the reference kernel).
  wm_session_options_t ro = {.backends = &ref_be,
                             .backend_count = 1,
                             .mode = WM_PLACEMENT_STRICT,
                             .passes = ""};
  wm_session_options_t co = ro;
  co.backends = &cpu_be;
  s = wm_session_create_placed(gr, &ro, &sr);
  if (s) {
    wm_status_free(s);
    goto done;  // not a valid instance
  }
  s = wm_session_create_placed(gc, &co, &sc);
  if (s) {
    wm_status_free(s);
    result = OUT_REFUSED;
    goto done;
  }
  for (int32_t i = 0; i < in->n_in; i++) {
    if (!in->dtype[i] || in->is_const[i]) {
      continue;
    }
    s = wm_tensor_create(in->dtype[i], &in->shape[i], &xs[n_given]);
    if (s) {
      printf("  cannot make inputs of %s: %s\n", text, wm_status_message(s));
      wm_status_free(s);
      result = OUT_FAILED;
      goto done;
    }
    fill_random(xs[n_given]);
    for (size_t e = 5; in->nans && wm_dtype_is_float(xs[n_given]->dtype) &&
                       e < xs[n_given]->count;
         e += 37) {
      wm_tensor_set_f64(xs[n_given], e, NAN);
    }
    names[n_given++] = in_names[i];
  }
  s = wm_session_run(sr, names, (const wm_tensor_t *const *)xs, n_given, yr);
  if (s) {
    wm_status_free(s);
    goto done;  // ref rejects these values: not an instance
  }
  s = wm_session_run(sc, names, (const wm_tensor_t *const *)xs, n_given, yc);
  if (s && strcmp(wm_session_placement(sc, 0)->backend, "cpu") != 0) {
    // Shapes known only while running: placed then, and refused.
    wm_status_free(s);
    result = OUT_REFUSED;
    goto done;
  }
  if (s) {
    printf("  FAIL %s: cpu claimed it but run failed: %s\n", text,
           wm_status_message(s));
    wm_status_free(s);
    result = OUT_FAILED;
    goto done;
  }
  if (out_impl) {
    *out_impl = wm_session_placement(sc, 0)->impl;
  }
  result = OUT_AGREES;
  for (int32_t i = 0; i < in->n_out; i++) {
    if (!yc[i] || !yr[i]) {
      if (yc[i] != yr[i]) {
        printf("  FAIL %s: output %d is missing on one side\n", text, i);
        result = OUT_FAILED;
      }
      continue;
    }
    if (!outputs_match(yc[i], yr[i], why, sizeof(why))) {
      printf("  FAIL %s: output %d: %s\n", text, i, why);
      result = OUT_FAILED;
    }
  }
  if (result == OUT_AGREES) {
    note_agreed(in->op);
  }
done:
  for (size_t i = 0; i < MAX_IO; i++) {
    wm_tensor_destroy(xs[i]);
    wm_tensor_destroy(yc[i]);
    wm_tensor_destroy(yr[i]);
  }
  wm_session_destroy(sc);
  wm_session_destroy(sr);
  wm_graph_destroy(gc);
  wm_graph_destroy(gr);
  counts[result]++;
  return result;
}

// ----------------------------------------------------------- the plugin

static wm_status_t open_backends(void) {
  plugin_handle = dlopen(WMAP_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  if (!plugin_handle) {
    return WM_ERROR(UNAVAILABLE, "dlopen \"%s\": %s", WMAP_CPU_PLUGIN,
                    dlerror());
  }
  void *sym = dlsym(plugin_handle, WM_PLUGIN_QUERY_SYMBOL);
  if (!sym) {
    return WM_ERROR(NOT_FOUND, "\"%s\" exports no %s", WMAP_CPU_PLUGIN,
                    WM_PLUGIN_QUERY_SYMBOL);
  }
  wm_plugin_query_fn query;
  memcpy(&query, &sym, sizeof(query));
  WM_RETURN_IF_ERROR(wm_backend_create(query, WMAP_CPU_PLUGIN, &cpu_be));
  return wm_backend_create(wm_ref_plugin_query, "built-in", &ref_be);
}

WM_TEST(plugin_describes_itself_and_the_host) {
  WM_CHECK(cpu_be != NULL);
  WM_CHECK_STR_EQ(wm_backend_name(cpu_be), "cpu");
  const wm_plugin_api *api = wm_backend_api(cpu_be);
  WM_CHECK(api->library != NULL);
  WM_CHECK_INT_EQ(api->probe_score(), 10);
  wm_plugin_info info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  WM_CHECK(api->get_info(&info) == NULL);
  WM_CHECK_INT_EQ(info.n_features, 3);
  WM_CHECK(strncmp(info.features[0], "gemm=", 5) == 0);
  WM_CHECK(strncmp(info.features[1], "threads=", 8) == 0);
  WM_CHECK(strncmp(info.features[2], "comm=threads", 12) == 0);
  WM_CHECK_INT_EQ(wm_backend_target_count(cpu_be), 1);
  const wm_target_desc *t = wm_backend_target(cpu_be, 0);
  WM_CHECK_INT_EQ(t->kind, WM_TARGET_CPU);
  WM_CHECK(t->compute_units >= 1);
  WM_CHECK(t->memory_bytes > 0);
  WM_CHECK(t->dtype_mask & (1u << WM_DTYPE_FLOAT));
  WM_CHECK(t->name && t->name[0]);
}

// The collective tier through the ABI: its answers, a one-rank
// communicator's AllReduce on device buffers, and the refusals.
WM_TEST(collective_tier_runs_on_device_buffers_and_checks_views) {
  const wm_plugin_api *api = wm_backend_api(cpu_be);
  const wm_collective_tier *ct = api->collective;
  WM_CHECK(ct != NULL && ct->send && ct->recv && ct->barrier);
  const wm_target_desc *t = wm_backend_target(cpu_be, 0);
  uint32_t level = 9;
  WM_CHECK(ct->coll_query(t, WM_COLL_ALL_REDUCE, WM_DTYPE_BFLOAT16,
                          WM_REDOP_AVG, &level) == NULL);
  WM_CHECK_INT_EQ(level, WM_SUPPORT_SUPPORTED);
  WM_CHECK(ct->coll_query(t, WM_COLL_ALL_REDUCE, WM_DTYPE_INT32, WM_REDOP_AVG,
                          &level) == NULL);
  WM_CHECK_INT_EQ(level, WM_SUPPORT_NONE);
  wm_device *dev = NULL;
  WM_CHECK(api->device_open(t, &dev) == NULL);
  wm_comm *comm = NULL;
  wm_error *e = ct->comm_create(&dev, 1, 0, 1, "tcp:x", 5, &comm);
  WM_CHECK(e != NULL);
  WM_CHECK_INT_EQ(api->error_code(e), WM_ERR_INVALID_ARGUMENT);
  WM_CHECK(strstr(api->error_message(e), "\"tcp:x\"") != NULL);
  api->error_destroy(e);
  const char id[] = "threads:cpu_test";
  WM_CHECK(ct->comm_create(&dev, 1, 0, 1, id, strlen(id), &comm) == NULL);
  wm_buffer *buf = NULL;
  WM_CHECK(api->device->mem_alloc(dev, 64, 64, 0, &buf) == NULL);
  void *p = NULL;
  WM_CHECK(api->device->mem_map(buf, &p) == NULL);
  float *x = p;
  for (int i = 0; i < 16; i++) {
    x[i] = (float)i;
  }
  wm_buffer_view v = {.struct_size = sizeof(v), .buffer = buf, .offset = 8};
  WM_CHECK(ct->all_reduce(comm, NULL, &v, &v, 14, WM_DTYPE_FLOAT,
                          WM_REDOP_SUM) == NULL);
  WM_CHECK_DBL_NEAR(x[2], 2.0, 0);
  WM_CHECK(ct->barrier(comm, NULL) == NULL);
  e = ct->all_reduce(comm, NULL, &v, &v, 15, WM_DTYPE_FLOAT, WM_REDOP_SUM);
  WM_CHECK(e != NULL);
  WM_CHECK_INT_EQ(api->error_code(e), WM_ERR_OUT_OF_RANGE);
  WM_CHECK(strstr(api->error_message(e), "15 elements at offset 8") != NULL);
  api->error_destroy(e);
  api->device->mem_unmap(buf);
  api->device->mem_free(buf);
  ct->comm_destroy(comm);
  api->device->device_close(dev);
}

// Asks op_query directly about a hand-made description.
static wm_op_support query_desc(const char *op_type, uint32_t n_in,
                                const wm_tensor_desc *in,
                                const wm_tensor_desc *out, uint32_t n_attr,
                                const wm_op_attr *attrs, uint32_t n_param,
                                const wm_op_attr *params) {
  wm_op_desc op;
  memset(&op, 0, sizeof(op));
  op.struct_size = sizeof(op);
  op.domain = "";
  op.op_type = op_type;
  op.opset = 17;
  op.name = "q";
  op.n_in = n_in;
  op.n_out = 1;
  op.in = in;
  op.out = out;
  op.n_attr = n_attr;
  op.attrs = attrs;
  op.n_param = n_param;
  op.params = params;
  wm_op_support sup;
  memset(&sup, 0, sizeof(sup));
  sup.struct_size = sizeof(sup);
  const wm_plugin_api *api = wm_backend_api(cpu_be);
  wm_error *e = api->library->op_query(wm_backend_target(cpu_be, 0), &op, &sup);
  if (e) {
    api->error_destroy(e);
    sup.level = 99;
  }
  return sup;
}

static wm_tensor_desc desc(uint32_t dtype, uint32_t rank, const int64_t *dims) {
  wm_tensor_desc d;
  memset(&d, 0, sizeof(d));
  d.struct_size = sizeof(d);
  d.dtype = dtype;
  d.rank = rank;
  memcpy(d.dims, dims, rank * sizeof(int64_t));
  return d;
}

WM_TEST(query_refuses_with_reasons) {
  WM_CHECK(cpu_be != NULL);
  int64_t d34[] = {3, 4}, d45[] = {4, 5}, d35[] = {3, 5}, d55[] = {5, 5};
  wm_tensor_desc mm[2] = {desc(WM_DTYPE_DOUBLE, 2, d34),
                          desc(WM_DTYPE_DOUBLE, 2, d45)};
  wm_tensor_desc mo = desc(WM_DTYPE_DOUBLE, 2, d35);
  wm_op_support s = query_desc("MatMul", 2, mm, &mo, 0, NULL, 0, NULL);
  WM_CHECK_INT_EQ(s.level, WM_SUPPORT_NONE);
  WM_CHECK_INT_EQ(s.reason, WM_WHY_DTYPE);
  mm[0] = desc(WM_DTYPE_INT32, 2, d34);
  mm[1] = desc(WM_DTYPE_INT32, 2, d45);
  mo = desc(WM_DTYPE_INT32, 2, d35);
  s = query_desc("Gemm", 2, mm, &mo, 0, NULL, 0, NULL);
  WM_CHECK_INT_EQ(s.reason, WM_WHY_DTYPE);
  mm[0] = desc(WM_DTYPE_FLOAT, 2, d34);
  mm[1] = desc(WM_DTYPE_FLOAT, 2, d55);
  mo = desc(WM_DTYPE_FLOAT, 2, d35);
  s = query_desc("MatMul", 2, mm, &mo, 0, NULL, 0, NULL);
  WM_CHECK_INT_EQ(s.level, WM_SUPPORT_NONE);
  WM_CHECK_INT_EQ(s.reason, WM_WHY_SHAPE);
  mm[1] = desc(WM_DTYPE_FLOAT, 2, d45);
  s = query_desc("MatMul", 2, mm, &mo, 0, NULL, 0, NULL);
  WM_CHECK_INT_EQ(s.level, WM_SUPPORT_SUPPORTED);
  WM_CHECK_INT_EQ(s.impl, WM_IMPL_NATIVE_KERNEL);
  s = query_desc("Frobnicate", 2, mm, &mo, 0, NULL, 0, NULL);
  WM_CHECK_INT_EQ(s.reason, WM_WHY_OP);
  int64_t xd[] = {1, 2, 5, 5}, wd[] = {3, 2, 3, 3}, yd[] = {1, 3, 3, 3};
  wm_tensor_desc cv[2] = {desc(WM_DTYPE_FLOAT, 4, xd),
                          desc(WM_DTYPE_FLOAT, 4, wd)};
  wm_tensor_desc co = desc(WM_DTYPE_FLOAT, 4, yd);
  // The window comes from the host's resolved parameters: without them
  // (shapes partly known) the refusal is WM_WHY_SHAPE, which is not final.
  s = query_desc("Conv", 2, cv, &co, 0, NULL, 0, NULL);
  WM_CHECK_INT_EQ(s.level, WM_SUPPORT_NONE);
  WM_CHECK_INT_EQ(s.reason, WM_WHY_SHAPE);
  static const int64_t k33[2] = {3, 3}, ones[2] = {1, 1},
                       zeros[4] = {0, 0, 0, 0}, neg[4] = {-1, 0, 0, 0};
  wm_op_attr win[5];
  memset(win, 0, sizeof(win));
  const char *names[4] = {"kernel_shape", "strides", "dilations", "pads"};
  const int64_t *lists[4] = {k33, ones, ones, zeros};
  for (int k = 0; k < 5; k++) {
    win[k].struct_size = sizeof(win[k]);
    win[k].name = k < 4 ? names[k] : "group";
    win[k].type = k < 4 ? WM_ATTR_INTS : WM_ATTR_INT;
    win[k].count = k < 4 ? (k == 3 ? 4 : 2) : 0;
    win[k].ints = k < 4 ? lists[k] : NULL;
    win[k].i = 1;
  }
  s = query_desc("Conv", 2, cv, &co, 0, NULL, 5, win);
  WM_CHECK_INT_EQ(s.level, WM_SUPPORT_SUPPORTED);
  win[3].ints = neg;  // negative pads: not this kernel's
  s = query_desc("Conv", 2, cv, &co, 0, NULL, 5, win);
  WM_CHECK_INT_EQ(s.level, WM_SUPPORT_NONE);
  WM_CHECK_INT_EQ(s.reason, WM_WHY_ATTR);
  int64_t x6[] = {1, 1, 2, 2, 2, 2}, w6[] = {1, 1, 1, 1, 1, 1};
  cv[0] = desc(WM_DTYPE_FLOAT, 6, x6);
  cv[1] = desc(WM_DTYPE_FLOAT, 6, w6);
  co = desc(WM_DTYPE_FLOAT, 6, x6);
  s = query_desc("Conv", 2, cv, &co, 0, NULL, 0, NULL);
  WM_CHECK_INT_EQ(s.reason, WM_WHY_RANK);
}

// Runs MatMul [2,3] x [3,2] through the library tier by hand.
WM_TEST(op_run_checks_views_against_the_plan) {
  WM_CHECK(cpu_be != NULL);
  const wm_plugin_api *api = wm_backend_api(cpu_be);
  wm_device *dev = NULL;
  wm_stream *stream = NULL;
  WM_CHECK(api->device_open(wm_backend_target(cpu_be, 0), &dev) == NULL);
  WM_CHECK(api->device->stream_create(dev, &stream) == NULL);
  int64_t da[] = {2, 3}, db[] = {3, 2}, dy[] = {2, 2};
  wm_tensor_desc in[2] = {desc(WM_DTYPE_FLOAT, 2, da),
                          desc(WM_DTYPE_FLOAT, 2, db)};
  wm_tensor_desc out = desc(WM_DTYPE_FLOAT, 2, dy);
  wm_op_desc op;
  memset(&op, 0, sizeof(op));
  op.struct_size = sizeof(op);
  op.domain = "";
  op.op_type = "MatMul";
  op.opset = 13;
  op.name = "mm";
  op.n_in = 2;
  op.n_out = 1;
  op.in = in;
  op.out = &out;
  wm_op_plan *plan = NULL;
  uint64_t ws = 1;
  WM_CHECK(api->library->op_plan(dev, &op, &plan, &ws) == NULL);
  WM_CHECK(ws > 0);  // the GEMM engine's packing buffers
  wm_buffer *wbuf;
  WM_CHECK(api->device->mem_alloc(dev, ws, 64, WM_MEM_HOST_VISIBLE, &wbuf) ==
           NULL);
  wm_buffer_view wv;
  memset(&wv, 0, sizeof(wv));
  wv.struct_size = sizeof(wv);
  wv.buffer = wbuf;
  int64_t dw[] = {(int64_t)ws};
  wv.desc = desc(WM_DTYPE_UINT8, 1, dw);
  wm_buffer *buf[3];
  uint64_t bytes[3] = {24, 24, 16};
  wm_buffer_view v[3];
  for (int i = 0; i < 3; i++) {
    WM_CHECK(api->device->mem_alloc(dev, bytes[i], 64, WM_MEM_HOST_VISIBLE,
                                    &buf[i]) == NULL);
    float *p;
    WM_CHECK(api->device->mem_map(buf[i], (void **)&p) == NULL);
    WM_CHECK(((uintptr_t)p & 63) == 0);
    for (uint64_t j = 0; j < bytes[i] / 4; j++) {
      p[j] = (float)j;
    }
    memset(&v[i], 0, sizeof(v[i]));
    v[i].struct_size = sizeof(v[i]);
    v[i].buffer = buf[i];
    v[i].desc = i < 2 ? in[i] : out;
  }
  // With the workspace, and without it (the engine allocates its own).
  for (int with = 1; with >= 0; with--) {
    WM_CHECK(api->library->op_run(stream, plan, v, 2, v + 2, 1,
                                  with ? &wv : NULL) == NULL);
    float y[4];
    WM_CHECK(api->device->copy_d2h(stream, buf[2], 0, y, 16) == NULL);
    // [[0,1,2],[3,4,5]] x [[0,1],[2,3],[4,5]] = [[10,13],[28,40]]
    WM_CHECK_DBL_NEAR(y[0], 10, 0);
    WM_CHECK_DBL_NEAR(y[3], 40, 0);
  }
  api->device->mem_free(wbuf);
  wm_error *e = api->library->op_run(stream, plan, v, 1, v + 2, 1, NULL);
  WM_CHECK(e != NULL);
  WM_CHECK(strstr(api->error_message(e), "got 1 inputs") != NULL);
  api->error_destroy(e);
  v[1].desc.dims[1] = 5;
  e = api->library->op_run(stream, plan, v, 2, v + 2, 1, NULL);
  WM_CHECK(e != NULL);
  WM_CHECK_INT_EQ(api->error_code(e), WM_ERR_INVALID_ARGUMENT);
  api->error_destroy(e);
  v[1].desc.dims[1] = 2;
  v[1].offset = 8;
  e = api->library->op_run(stream, plan, v, 2, v + 2, 1, NULL);
  WM_CHECK(e != NULL);
  WM_CHECK_INT_EQ(api->error_code(e), WM_ERR_OUT_OF_RANGE);
  api->error_destroy(e);
  api->library->op_plan_destroy(plan);
  for (int i = 0; i < 3; i++) {
    api->device->mem_free(buf[i]);
  }
  api->device->stream_destroy(stream);
  api->device->device_close(dev);
}

// Runs |in|, which the cpu backend must claim (with |impl|) and agree on.
static bool expect_claimed(const inst_t *in, uint32_t impl) {
  uint32_t got;
  outcome_t o = run_instance(in, &got);
  if (o == OUT_AGREES && got == impl) {
    return true;
  }
  char text[512];
  printf("  FAIL %s: %s (impl %u)\n", inst_text(in, text, sizeof(text)),
         o == OUT_REFUSED   ? "not claimed"
         : o == OUT_INVALID ? "ref rejects it"
         : o == OUT_FAILED  ? "differs or fails"
                            : "wrong impl",
         got);
  return false;
}

// Plans |op| on a fresh device and runs it on host copies of |data| (one
// per input, then one per output, |bytes| each); returns the run's error
// code (WM_ERR_OK on success; the plan's code when planning fails).
static int32_t run_by_hand(const wm_op_desc *op, void *const *data,
                           const uint64_t *bytes) {
  const wm_plugin_api *api = wm_backend_api(cpu_be);
  wm_device *dev = NULL;
  wm_stream *stream = NULL;
  wm_op_plan *plan = NULL;
  uint64_t ws = 0;
  int32_t code = WM_ERR_INTERNAL;
  if (api->device_open(wm_backend_target(cpu_be, 0), &dev) ||
      api->device->stream_create(dev, &stream)) {
    return code;
  }
  wm_error *e = api->library->op_plan(dev, op, &plan, &ws);
  uint32_t n = op->n_in + op->n_out;
  wm_buffer *buf[8] = {NULL};
  wm_buffer_view v[8];
  for (uint32_t i = 0; !e && i < n && i < 8; i++) {
    e = api->device->mem_alloc(dev, bytes[i] ? bytes[i] : 1, 64,
                               WM_MEM_HOST_VISIBLE, &buf[i]);
    void *ptr = NULL;
    if (!e) {
      e = api->device->mem_map(buf[i], &ptr);
    }
    if (!e && bytes[i]) {
      memcpy(ptr, data[i], bytes[i]);
    }
    memset(&v[i], 0, sizeof(v[i]));
    v[i].struct_size = sizeof(v[i]);
    v[i].buffer = buf[i];
    v[i].desc = i < op->n_in ? op->in[i] : op->out[i - op->n_in];
  }
  if (!e) {
    e = api->library->op_run(stream, plan, v, op->n_in, v + op->n_in, op->n_out,
                             NULL);
  }
  code = e ? api->error_code(e) : WM_ERR_OK;
  if (e) {
    api->error_destroy(e);
  }
  api->library->op_plan_destroy(plan);
  for (uint32_t i = 0; i < n && i < 8; i++) {
    if (buf[i]) {
      api->device->mem_free(buf[i]);
    }
  }
  api->device->stream_destroy(stream);
  api->device->device_close(dev);
  return code;
}

// The device tier compiles format c and launches its kernels over the
// device's threads; bad sources, formats and launches are errors.
WM_TEST(compile_and_launch_run_format_c) {
  WM_CHECK(cpu_be != NULL);
  if (!cpu_be) {
    return;
  }
  const wm_plugin_api *api = wm_backend_api(cpu_be);
  const wm_device_tier *dt = api->device;
  const wm_target_desc *t = wm_backend_target(cpu_be, 0);
  uint32_t level = 9;
  WM_CHECK(dt->format_support(t, "opencl-c", &level) == NULL);
  WM_CHECK_INT_EQ(level, WM_SUPPORT_NONE);
  WM_CHECK(dt->format_support(t, "c", &level) == NULL);
  if (level == WM_SUPPORT_NONE) {
    printf("  no C compiler runs here; compile not exercised\n");
    return;
  }
  WM_CHECK_INT_EQ(t->n_formats, 1);
  WM_CHECK_STR_EQ(t->formats[0], "c");
  wm_device *dev = NULL;
  wm_stream *stream = NULL;
  WM_CHECK(api->device_open(t, &dev) == NULL);
  WM_CHECK(dt->stream_create(dev, &stream) == NULL);
  // y[i] = a * x[i] + i, with |a| a scalar argument.
  static const char src[] =
      "#include <stdint.h>\n"
      "void axpi(void *const *args, int64_t start, int64_t end) {\n"
      "  float *y = args[0];\n"
      "  const float *x = args[1];\n"
      "  float a = *(const float *)args[2];\n"
      "  for (int64_t i = start; i < end; i++) y[i] = a * x[i] + (float)i;\n"
      "}\n";
  wm_executable *exe = NULL;
  WM_CHECK(dt->compile(dev, "c", src, sizeof(src) - 1, NULL, &exe) == NULL);
  wm_kernel *k = NULL;
  WM_CHECK(dt->exe_get_kernel(exe, "axpi", &k) == NULL);
  enum { N = 10007 };
  wm_buffer *y = NULL, *x = NULL;
  WM_CHECK(dt->mem_alloc(dev, 4 * (N + 1), 64, WM_MEM_HOST_VISIBLE, &y) ==
           NULL);
  WM_CHECK(dt->mem_alloc(dev, 4 * N, 64, WM_MEM_HOST_VISIBLE, &x) == NULL);
  float *yp = NULL, *xp = NULL;
  WM_CHECK(dt->mem_map(y, (void **)&yp) == NULL);
  WM_CHECK(dt->mem_map(x, (void **)&xp) == NULL);
  for (int i = 0; i < N; i++) {
    xp[i] = (float)(i % 7);
    yp[i + 1] = -1.0f;
  }
  float a = 2.0f;
  wm_kernel_arg args[3] = {
      {.struct_size = sizeof(wm_kernel_arg),
       .kind = WM_ARG_BUFFER,
       .buffer = y,
       .offset = 4},
      {.struct_size = sizeof(wm_kernel_arg),
       .kind = WM_ARG_BUFFER,
       .buffer = x},
      {.struct_size = sizeof(wm_kernel_arg),
       .kind = WM_ARG_SCALAR,
       .value = &a,
       .size = sizeof(a)},
  };
  wm_launch_args la = {.struct_size = sizeof(la),
                       .kernel = k,
                       .grid = {N, 1, 1},
                       .block = {64, 1, 1},
                       .n_args = 3,
                       .args = args};
  WM_CHECK(dt->launch(stream, &la) == NULL);
  int bad = 0;
  for (int i = 0; i < N; i++) {
    bad += yp[i + 1] != 2.0f * (float)(i % 7) + (float)i;
  }
  WM_CHECK_INT_EQ(bad, 0);
  // Errors: a grid in two dimensions, an argument without a buffer.
  la.grid[1] = 2;
  wm_error *e = dt->launch(stream, &la);
  WM_CHECK(e != NULL && strstr(api->error_message(e), "grid[0] only"));
  api->error_destroy(e);
  la.grid[1] = 1;
  args[1].buffer = NULL;
  e = dt->launch(stream, &la);
  WM_CHECK(e != NULL && strstr(api->error_message(e), "argument 1"));
  api->error_destroy(e);
  wm_kernel *none = NULL;
  e = dt->exe_get_kernel(exe, "missing", &none);
  WM_CHECK(e != NULL && api->error_code(e) == WM_ERR_NOT_FOUND &&
           strstr(api->error_message(e), "\"missing\""));
  api->error_destroy(e);
  dt->exe_destroy(exe);
  // Bad sources, formats and options.
  wm_executable *bad_exe = NULL;
  e = dt->compile(dev, "c", "void broken(", 12, NULL, &bad_exe);
  WM_CHECK(e != NULL && strstr(api->error_message(e), "broken"));
  WM_CHECK(bad_exe == NULL);
  api->error_destroy(e);
  e = dt->compile(dev, "ptx", src, sizeof(src) - 1, NULL, &bad_exe);
  WM_CHECK(e != NULL && strstr(api->error_message(e), "\"ptx\""));
  api->error_destroy(e);
  e = dt->compile(dev, "c", src, sizeof(src) - 1, "-O0", &bad_exe);
  WM_CHECK(e != NULL && strstr(api->error_message(e), "-O0"));
  api->error_destroy(e);
  e = dt->compile(dev, "c", src, sizeof(src), NULL, &bad_exe);  // the NUL
  WM_CHECK(e != NULL && strstr(api->error_message(e), "NUL"));
  api->error_destroy(e);
  dt->mem_free(y);
  dt->mem_free(x);
  dt->stream_destroy(stream);
  dt->device_close(dev);
}

static wm_op_desc op_make(const char *op_type, uint64_t opset, uint32_t n_in,
                          const wm_tensor_desc *in, uint32_t n_out,
                          const wm_tensor_desc *out) {
  wm_op_desc op;
  memset(&op, 0, sizeof(op));
  op.struct_size = sizeof(op);
  op.domain = "";
  op.op_type = op_type;
  op.opset = opset;
  op.name = "hand";
  op.n_in = n_in;
  op.n_out = n_out;
  op.in = in;
  op.out = out;
  return op;
}

// Values read from tensors are checked: bad ones are errors, not crashes.
WM_TEST(bad_values_in_tensors_are_errors) {
  WM_CHECK(cpu_be != NULL);
  // Integer Mod by zero.
  int64_t d4[] = {4};
  wm_tensor_desc mi[2] = {desc(WM_DTYPE_INT32, 1, d4),
                          desc(WM_DTYPE_INT32, 1, d4)};
  wm_tensor_desc mo = desc(WM_DTYPE_INT32, 1, d4);
  int32_t a[4] = {7, -7, 5, 1}, b[4] = {2, 3, 0, -1}, y[4];
  void *md[3] = {a, b, y};
  uint64_t mb[3] = {16, 16, 16};
  wm_op_desc mod = op_make("Mod", 13, 2, mi, 1, &mo);
  WM_CHECK_INT_EQ(run_by_hand(&mod, md, mb), WM_ERR_INVALID_ARGUMENT);
  b[2] = 4;
  WM_CHECK_INT_EQ(run_by_hand(&mod, md, mb), WM_ERR_OK);
  // LSTM sequence_lens outside [0, seq].
  int64_t dx[] = {2, 1, 1}, dw[] = {1, 4, 1}, dr[] = {1, 4, 1}, db[] = {1};
  int64_t dy[] = {2, 1, 1, 1};
  wm_tensor_desc li[5] = {
      desc(WM_DTYPE_FLOAT, 3, dx), desc(WM_DTYPE_FLOAT, 3, dw),
      desc(WM_DTYPE_FLOAT, 3, dr), desc(0, 0, db), desc(WM_DTYPE_INT32, 1, db)};
  wm_tensor_desc lo = desc(WM_DTYPE_FLOAT, 4, dy);
  float x[2] = {1, 2}, w[4] = {0}, r[4] = {0}, yl[2];
  int32_t lens[1] = {3};
  void *ld[6] = {x, w, r, NULL, lens, yl};
  uint64_t lb[6] = {8, 16, 16, 0, 4, 8};
  wm_op_desc lstm = op_make("LSTM", 14, 5, li, 1, &lo);
  // The parameters the host resolves for it: ONNX's defaults.
  static const char *const acts[3] = {"Sigmoid", "Tanh", "Tanh"};
  static const uint64_t act_lens[3] = {7, 4, 4};
  static const float zeros[3] = {0, 0, 0};
  const wm_op_attr lp[8] = {{.struct_size = sizeof(wm_op_attr),
                             .name = "direction",
                             .type = WM_ATTR_STRING,
                             .s = "forward",
                             .s_len = 7},
                            {.struct_size = sizeof(wm_op_attr),
                             .name = "layout",
                             .type = WM_ATTR_INT},
                            {.struct_size = sizeof(wm_op_attr),
                             .name = "clip",
                             .type = WM_ATTR_FLOAT},
                            {.struct_size = sizeof(wm_op_attr),
                             .name = "input_forget",
                             .type = WM_ATTR_INT},
                            {.struct_size = sizeof(wm_op_attr),
                             .name = "linear_before_reset",
                             .type = WM_ATTR_INT},
                            {.struct_size = sizeof(wm_op_attr),
                             .name = "activations",
                             .type = WM_ATTR_STRINGS,
                             .count = 3,
                             .strings = acts,
                             .string_lens = act_lens},
                            {.struct_size = sizeof(wm_op_attr),
                             .name = "activation_alpha",
                             .type = WM_ATTR_FLOATS,
                             .count = 3,
                             .floats = zeros},
                            {.struct_size = sizeof(wm_op_attr),
                             .name = "activation_beta",
                             .type = WM_ATTR_FLOATS,
                             .count = 3,
                             .floats = zeros}};
  lstm.n_param = 8;
  lstm.params = lp;
  WM_CHECK_INT_EQ(run_by_hand(&lstm, ld, lb), WM_ERR_OUT_OF_RANGE);
  lens[0] = -1;
  WM_CHECK_INT_EQ(run_by_hand(&lstm, ld, lb), WM_ERR_OUT_OF_RANGE);
  lens[0] = 1;
  WM_CHECK_INT_EQ(run_by_hand(&lstm, ld, lb), WM_ERR_OK);
  // Dropout's ratio outside [0, 1).
  wm_tensor_desc di[2] = {desc(WM_DTYPE_FLOAT, 1, d4),
                          desc(WM_DTYPE_FLOAT, 0, d4)};
  wm_tensor_desc dout = desc(WM_DTYPE_FLOAT, 1, d4);
  float dxv[4] = {1, 2, 3, 4}, ratio = 1.5f, dyv[4];
  void *dd[3] = {dxv, &ratio, dyv};
  uint64_t dbb[3] = {16, 4, 16};
  wm_op_desc drop = op_make("Dropout", 13, 2, di, 1, &dout);
  WM_CHECK_INT_EQ(run_by_hand(&drop, dd, dbb), WM_ERR_INVALID_ARGUMENT);
}

WM_TEST(matmul_agrees_with_ref) {
  WM_CHECK(cpu_be != NULL);
  static const struct {
    int32_t ra, rb;
    int64_t a[4], b[4];
  } cases[] = {
      {2, 2, {3, 4}, {4, 5}},
      {1, 2, {4}, {4, 5}},
      {2, 1, {3, 4}, {4}},
      {1, 1, {7}, {7}},
      {3, 2, {2, 3, 4}, {4, 5}},
      {3, 3, {2, 3, 4}, {2, 4, 5}},
      {2, 3, {3, 4}, {2, 4, 5}},
      {1, 3, {4}, {2, 4, 5}},
      {3, 1, {2, 3, 4}, {4}},
      {4, 3, {2, 1, 3, 4}, {5, 4, 6}},
      {3, 4, {1, 3, 4}, {2, 3, 4, 6}},
      {2, 2, {64, 128}, {128, 96}},
      {3, 2, {8, 33, 65}, {65, 17}},
      {3, 3, {4, 1, 40}, {1, 40, 70}},
      {2, 2, {3, 0}, {0, 5}},
      {3, 2, {0, 3, 4}, {4, 5}},
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    for (int64_t opset = 9; opset <= 13; opset += 4) {
      inst_t in = inst_make("MatMul", opset);
      inst_input(&in, WM_DTYPE_FLOAT, cases[i].ra, cases[i].a);
      inst_input(&in, WM_DTYPE_FLOAT, cases[i].rb, cases[i].b);
      bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
    }
  }
  inst_t in = inst_make("MatMul", 13);
  int64_t a[] = {3, 4}, b[] = {4, 5};
  inst_input(&in, WM_DTYPE_DOUBLE, 2, a);
  inst_input(&in, WM_DTYPE_DOUBLE, 2, b);
  WM_CHECK_INT_EQ(run_instance(&in, NULL), OUT_REFUSED);
  WM_CHECK_INT_EQ(bad, 0);
}

WM_TEST(gemm_agrees_with_ref_for_every_flag_combination) {
  WM_CHECK(cpu_be != NULL);
  static const struct {
    int32_t rank;
    int64_t dims[2];  // -1 = M, -2 = N
  } cshapes[] = {{0, {0, 0}},  {1, {-2, 0}}, {1, {1, 0}}, {2, {-1, -2}},
                 {2, {-1, 1}}, {2, {1, -2}}, {2, {1, 1}}, {-1, {0, 0}}};
  static const float ab[][2] = {{1.0f, 1.0f}, {0.5f, 2.0f}, {-1.5f, 0.0f}};
  static const int64_t mkn[][3] = {{3, 5, 4}, {33, 17, 29}, {1, 7, 1}};
  int bad = 0;
  for (size_t s = 0; s < 3; s++) {
    int64_t m = mkn[s][0], k = mkn[s][1], n = mkn[s][2];
    for (int ta = 0; ta < 2; ta++) {
      for (int tb = 0; tb < 2; tb++) {
        for (size_t c = 0; c < sizeof(cshapes) / sizeof(cshapes[0]); c++) {
          const float *f = ab[(size_t)(ta + 2 * tb + (int)c) % 3];
          inst_t in = inst_make("Gemm", 13);
          int64_t a[2] = {ta ? k : m, ta ? m : k};
          int64_t b[2] = {tb ? n : k, tb ? k : n};
          inst_input(&in, WM_DTYPE_FLOAT, 2, a);
          inst_input(&in, WM_DTYPE_FLOAT, 2, b);
          if (cshapes[c].rank >= 0) {
            int64_t cd[2];
            for (int d = 0; d < cshapes[c].rank; d++) {
              int64_t v = cshapes[c].dims[d];
              cd[d] = v == -1 ? m : v == -2 ? n : v;
            }
            inst_input(&in, WM_DTYPE_FLOAT, cshapes[c].rank, cd);
          }
          attr_int(&in, "transA", ta);
          attr_int(&in, "transB", tb);
          attr_float(&in, "alpha", f[0]);
          attr_float(&in, "beta", f[1]);
          bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
        }
      }
    }
  }
  // Old opsets: C required (opset 6 with the broadcast attribute).
  inst_t in = inst_make("Gemm", 6);
  int64_t a[] = {3, 4}, b[] = {4, 5}, c[] = {5};
  inst_input(&in, WM_DTYPE_FLOAT, 2, a);
  inst_input(&in, WM_DTYPE_FLOAT, 2, b);
  inst_input(&in, WM_DTYPE_FLOAT, 1, c);
  attr_int(&in, "broadcast", 1);
  bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
  WM_CHECK_INT_EQ(bad, 0);
}

// A Conv case: X and W dims, attributes, bias.
typedef struct conv_case {
  int32_t rank;                               // of X and W
  int64_t x[5], w[5];                         // dims
  int64_t group;                              // 1 when 0
  int64_t strides[3], dilations[3], pads[6];  // 0 = attribute absent
  const char *auto_pad;                       // NULL = absent
  bool bias;                                  // with input B
} conv_case_t;

WM_TEST(conv_agrees_with_ref) {
  WM_CHECK(cpu_be != NULL);
  static const conv_case_t cases[] = {
      // 1x1 as one GEMM, with and without groups; 1x1 stride 2.
      {4, {2, 8, 5, 6}, {6, 8, 1, 1}, 0, {0}, {0}, {0}, NULL, true},
      {4, {1, 8, 4, 4}, {6, 4, 1, 1}, 2, {0}, {0}, {0}, NULL, false},
      {4, {2, 8, 7, 7}, {4, 8, 1, 1}, 0, {2, 2}, {0}, {0}, NULL, true},
      // Implicit GEMM: padding, strides, asymmetric pads, dilations, groups.
      {4, {2, 3, 7, 9}, {4, 3, 3, 3}, 0, {0}, {0}, {1, 1, 1, 1}, NULL, true},
      {4,
       {1, 3, 8, 9},
       {5, 3, 3, 2},
       0,
       {2, 2},
       {0},
       {0, 1, 2, 1},
       NULL,
       false},
      {4,
       {1, 2, 9, 9},
       {3, 2, 3, 3},
       0,
       {1, 2},
       {2, 2},
       {2, 1, 0, 2},
       NULL,
       true},
      {4, {2, 6, 6, 7}, {4, 3, 3, 3}, 2, {0}, {0}, {1, 1, 1, 1}, NULL, true},
      {4,
       {1, 32, 14, 14},
       {16, 32, 3, 3},
       0,
       {0},
       {0},
       {1, 1, 1, 1},
       NULL,
       true},
      {4,
       {1, 3, 23, 23},
       {8, 3, 7, 7},
       0,
       {2, 2},
       {0},
       {3, 3, 3, 3},
       NULL,
       true},
      // Implicit GEMM over rows wider than a B panel: strides 1 to 3,
      // dilation, odd widths (the row ends of the strided copies).
      {4,
       {1, 5, 9, 61},
       {6, 5, 3, 3},
       0,
       {2, 2},
       {0},
       {1, 1, 1, 1},
       NULL,
       true},
      {4,
       {1, 3, 20, 45},
       {8, 3, 7, 7},
       0,
       {2, 2},
       {0},
       {3, 3, 3, 3},
       NULL,
       true},
      {4, {2, 4, 13, 40}, {5, 4, 3, 3}, 0, {0}, {0}, {1, 1, 1, 1}, NULL, false},
      {4,
       {1, 2, 9, 50},
       {3, 2, 3, 3},
       0,
       {2, 2},
       {2, 2},
       {2, 2, 2, 2},
       NULL,
       true},
      {4,
       {1, 2, 8, 47},
       {3, 2, 3, 3},
       0,
       {3, 3},
       {0},
       {1, 1, 1, 1},
       NULL,
       true},
      {4,
       {1, 4, 7, 70},
       {4, 2, 5, 5},
       2,
       {2, 2},
       {0},
       {2, 1, 2, 3},
       NULL,
       true},
      // auto_pad with an even kernel so that UPPER and LOWER differ.
      {4, {1, 2, 7, 8}, {3, 2, 4, 3}, 0, {2, 2}, {0}, {0}, "SAME_UPPER", true},
      {4, {1, 2, 7, 8}, {3, 2, 4, 3}, 0, {2, 2}, {0}, {0}, "SAME_LOWER", false},
      {4, {1, 2, 7, 8}, {3, 2, 4, 3}, 0, {2, 1}, {0}, {0}, "VALID", true},
      {4, {1, 2, 7, 8}, {3, 2, 3, 3}, 0, {0}, {0}, {0}, "NOTSET", true},
      // Depthwise: direct kernel.
      {4, {2, 6, 9, 8}, {6, 1, 3, 3}, 6, {0}, {0}, {1, 1, 1, 1}, NULL, true},
      {4,
       {1, 6, 9, 8},
       {6, 1, 3, 3},
       6,
       {2, 2},
       {0},
       {1, 1, 1, 1},
       NULL,
       false},
      {4,
       {1, 4, 10, 9},
       {4, 1, 3, 3},
       4,
       {0},
       {2, 2},
       {2, 2, 2, 2},
       NULL,
       true},
      {4,
       {1, 5, 11, 12},
       {5, 1, 5, 5},
       5,
       {2, 2},
       {0},
       {0},
       "SAME_UPPER",
       true},
      {4, {1, 3, 6, 7}, {3, 1, 2, 3}, 3, {1, 3}, {0}, {0, 2, 1, 0}, NULL, true},
      {4, {1, 2, 5, 2}, {2, 1, 3, 3}, 2, {0}, {0}, {2, 2, 2, 2}, NULL, true},
      {4,
       {1, 2, 6, 3},
       {2, 1, 5, 5},
       2,
       {1, 2},
       {0},
       {2, 1, 2, 3},
       NULL,
       false},
      {4, {1, 3, 8, 9}, {3, 1, 7, 7}, 3, {0}, {0}, {3, 3, 3, 3}, NULL, true},
      {4, {1, 3, 8, 9}, {3, 1, 3, 4}, 3, {0}, {1, 2}, {1, 3, 1, 2}, NULL, true},
      // Depthwise with a multiplier: implicit GEMM.
      {4, {1, 3, 6, 6}, {6, 1, 3, 3}, 3, {0}, {0}, {1, 1, 1, 1}, NULL, true},
      // 1-D.
      {3, {2, 4, 11}, {5, 4, 3}, 0, {2}, {0}, {1, 2}, NULL, true},
      {3, {2, 4, 11}, {4, 1, 3}, 4, {0}, {2}, {1, 1}, NULL, true},
      {3, {1, 4, 9}, {6, 4, 1}, 0, {0}, {0}, {0}, NULL, false},
      // 3-D.
      {5,
       {1, 2, 5, 6, 4},
       {3, 2, 2, 3, 2},
       0,
       {1, 2, 1},
       {0},
       {1, 0, 1, 0, 1, 1},
       NULL,
       true},
      {5,
       {1, 4, 4, 5, 3},
       {4, 1, 3, 3, 3},
       4,
       {0},
       {0},
       {1, 1, 1, 1, 1, 1},
       NULL,
       true},
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const conv_case_t *c = &cases[i];
    int32_t nsp = c->rank - 2;
    for (int64_t opset = 1; opset <= 11; opset += 10) {
      inst_t in = inst_make("Conv", opset);
      inst_input(&in, WM_DTYPE_FLOAT, c->rank, c->x);
      inst_input(&in, WM_DTYPE_FLOAT, c->rank, c->w);
      if (c->bias) {
        int64_t m = c->w[0];
        inst_input(&in, WM_DTYPE_FLOAT, 1, &m);
      }
      if (c->group) {
        attr_int(&in, "group", c->group);
      }
      if (c->strides[0]) {
        attr_ints(&in, "strides", (size_t)nsp, c->strides);
      }
      if (c->dilations[0]) {
        attr_ints(&in, "dilations", (size_t)nsp, c->dilations);
      }
      bool any_pad = false;
      for (int32_t j = 0; j < 2 * nsp; j++) {
        any_pad = any_pad || c->pads[j] != 0;
      }
      if (any_pad) {
        attr_ints(&in, "pads", 2 * (size_t)nsp, c->pads);
      }
      if (c->auto_pad) {
        attr_string(&in, "auto_pad", c->auto_pad);
      }
      if (i % 3 == 0) {
        attr_ints(&in, "kernel_shape", (size_t)nsp, c->w + 2);
      }
      bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
    }
  }
  WM_CHECK_INT_EQ(bad, 0);
}

// Depthwise convolutions on the band kernel and, for wide 3x3 rows, the
// in-place one: kernels 3 and 5, strides 1 and 2, pads 0 to 2 (one side
// more than the other too), odd and even widths, as Conv and as FusedConv
// with bias, Z and an activation; stride or dilation 2 down wide rows;
// and rows too wide for the band buffer.
// The instances of depthwise_bands_agree_with_ref for |c| channels;
// returns the mismatches, *n counts the instances.
static int depthwise_sweep(int64_t c, int *n_out) {
  static const int64_t widths[] = {7, 13, 14, 57, 70};
  static const char *const acts[] = {"", "Relu", "Clip", "HardSwish"};
  static const float clip[2] = {-0.3f, 0.4f};
  int bad = 0, n = 0;
  for (int64_t k = 3; k <= 5; k += 2) {
    for (int64_t s = 1; s <= 2; s++) {
      for (int64_t pad = 0; pad <= 2; pad++) {
        for (size_t wi = 0; wi < sizeof(widths) / sizeof(widths[0]); wi++) {
          const int64_t iw = widths[wi], ih = 5 + (int64_t)wi * 2;
          const int64_t pads[4] = {pad, pad, pad, pad + (int64_t)(wi % 2)};
          const int64_t oh = (ih + 2 * pad - k) / s + 1;
          const int64_t ow = (iw + pads[1] + pads[3] - k) / s + 1;
          if (oh < 1 || ow < 1) {
            continue;
          }
          for (int fused = 0; fused < 2; fused++, n++) {
            inst_t in = inst_make(fused ? "FusedConv" : "Conv", 13);
            if (fused) {
              in.domain = "wmap";
            }
            int64_t x[4] = {1 + (int64_t)(wi % 2), c, ih, iw};
            int64_t w[4] = {c, 1, k, k}, b[1] = {c};
            int64_t z[4] = {x[0], c, oh, ow};
            int64_t strides[2] = {s, s};
            inst_input(&in, WM_DTYPE_FLOAT, 4, x);
            inst_input(&in, WM_DTYPE_FLOAT, 4, w);
            if (fused || pad % 2) {
              inst_input(&in, WM_DTYPE_FLOAT, 1, b);
            }
            if (fused) {
              inst_input(&in, WM_DTYPE_FLOAT, 4, z);
            }
            attr_int(&in, "group", c);
            attr_ints(&in, "strides", 2, strides);
            attr_ints(&in, "pads", 4, pads);
            if (fused) {
              const char *act = acts[(size_t)n % 4];
              attr_string(&in, "activation", act);
              if (strcmp(act, "Clip") == 0) {
                attr_floats(&in, "activation_params", 2, clip);
              }
            }
            bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
          }
        }
      }
    }
  }
  *n_out = n;
  return bad;
}

WM_TEST(depthwise_bands_agree_with_ref) {
  WM_CHECK(cpu_be != NULL);
  int n = 0, bad = depthwise_sweep(3, &n);
  // Stride or dilation 2 down the plane only, over wide rows; odd height.
  for (int64_t v = 0; v < 2; v++) {
    inst_t in = inst_make("Conv", 11);
    int64_t x[4] = {1, 3, 9, 81}, w[4] = {3, 1, 3, 3}, b[1] = {3};
    int64_t two[2] = {2, 1}, pads[4] = {1, 1, 1, 0};
    inst_input(&in, WM_DTYPE_FLOAT, 4, x);
    inst_input(&in, WM_DTYPE_FLOAT, 4, w);
    inst_input(&in, WM_DTYPE_FLOAT, 1, b);
    attr_int(&in, "group", 3);
    attr_ints(&in, v ? "dilations" : "strides", 2, two);
    attr_ints(&in, "pads", 4, pads);
    bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
  }
  // Rows wider than the band buffer: the general kernel.
  for (int64_t s = 1; s <= 2; s++) {
    inst_t in = inst_make("Conv", 11);
    int64_t x[4] = {1, 2, 4, 9000}, w[4] = {2, 1, 3, 3}, b[1] = {2};
    int64_t strides[2] = {s, s}, pads[4] = {1, 1, 1, 1};
    inst_input(&in, WM_DTYPE_FLOAT, 4, x);
    inst_input(&in, WM_DTYPE_FLOAT, 4, w);
    inst_input(&in, WM_DTYPE_FLOAT, 1, b);
    attr_int(&in, "group", 2);
    attr_ints(&in, "strides", 2, strides);
    attr_ints(&in, "pads", 4, pads);
    bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
  }
  printf("  %d depthwise instances\n", n + 4);
  WM_CHECK_INT_EQ(bad, 0);
}

// Depthwise convolutions over rows of 48 outputs and more (the AVX-512
// kernel where the machine has it): 3x3 and 5x5, stride 1 and 2, even and
// odd widths, uneven pads, batches, with Z and the activations in its
// registers and after it.
WM_TEST(wide_depthwise_agree_with_ref) {
  WM_CHECK(cpu_be != NULL);
  static const struct {
    int64_t n, c, h, w, k, s, pt, pl, pb, pr;
  } cases[] = {
      {1, 3, 9, 50, 3, 1, 1, 1, 1, 1},  {2, 2, 11, 97, 3, 2, 1, 1, 1, 1},
      {1, 2, 10, 70, 5, 1, 2, 2, 2, 2}, {1, 3, 13, 101, 5, 2, 2, 2, 2, 2},
      {1, 2, 7, 64, 3, 1, 0, 1, 2, 0},  {1, 2, 6, 1000, 3, 1, 1, 1, 1, 1},
      {1, 1, 5, 130, 3, 2, 0, 0, 0, 0},
  };
  static const char *const acts[] = {"Relu", "Clip", "HardSwish", "Sigmoid",
                                     "LeakyRelu"};
  int bad = 0;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const int64_t k = cases[i].k, s = cases[i].s, c = cases[i].c;
    const int64_t oh = (cases[i].h + cases[i].pt + cases[i].pb - k) / s + 1;
    const int64_t ow = (cases[i].w + cases[i].pl + cases[i].pr - k) / s + 1;
    for (int form = 0; form < 2; form++) {
      inst_t in = inst_make(form ? "FusedConv" : "Conv", form ? 1 : 11);
      if (form) {
        in.domain = "wmap";
      }
      int64_t x[4] = {cases[i].n, c, cases[i].h, cases[i].w};
      int64_t w[4] = {c, 1, k, k}, b[1] = {c}, z[4] = {cases[i].n, c, oh, ow};
      int64_t strides[2] = {s, s};
      int64_t pads[4] = {cases[i].pt, cases[i].pl, cases[i].pb, cases[i].pr};
      inst_input(&in, WM_DTYPE_FLOAT, 4, x);
      inst_weight(&in, WM_DTYPE_FLOAT, 4, w, 1.0);
      inst_input(&in, WM_DTYPE_FLOAT, 1, b);
      if (form) {
        inst_input(&in, WM_DTYPE_FLOAT, 4, z);
        attr_string(&in, "activation", acts[i % 5]);
        if (strcmp(acts[i % 5], "Clip") == 0) {
          static const float range[2] = {-0.5f, 0.75f};
          attr_floats(&in, "activation_params", 2, range);
        }
      }
      attr_int(&in, "group", c);
      attr_ints(&in, "strides", 2, strides);
      attr_ints(&in, "pads", 4, pads);
      bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
    }
  }
  WM_CHECK_INT_EQ(bad, 0);
}

// The sweep of depthwise_bands_agree_with_ref over 16 channels, and tall
// planes cut into bands: 8 channels at a time in vector lanes
// (depthwise_blocks8). Last in the list, so that the values the other
// cases draw stay as they were.
WM_TEST(depthwise_channel_blocks_agree_with_ref) {
  WM_CHECK(cpu_be != NULL);
  int n = 0, bad = depthwise_sweep(16, &n);
  // Tall planes (bands) of rows too short for the in-place kernel, as
  // FusedConv: stride 1 with HardSwish (in the vectors), stride 2 with Z
  // and Sigmoid (per plane after).
  for (int64_t s = 1; s <= 2; s++, n++) {
    inst_t in = inst_make("FusedConv", 1);
    in.domain = "wmap";
    const int64_t o = (61 + 2 - 3) / s + 1;
    int64_t x[4] = {1, 16, 61, 40}, w[4] = {16, 1, 3, 3}, b[1] = {16};
    int64_t z[4] = {1, 16, o, (40 + 2 - 3) / s + 1};
    int64_t strides[2] = {s, s}, pads[4] = {1, 1, 1, 1};
    inst_input(&in, WM_DTYPE_FLOAT, 4, x);
    inst_input(&in, WM_DTYPE_FLOAT, 4, w);
    inst_input(&in, WM_DTYPE_FLOAT, 1, b);
    if (s == 2) {
      inst_input(&in, WM_DTYPE_FLOAT, 4, z);
    }
    attr_int(&in, "group", 16);
    attr_ints(&in, "strides", 2, strides);
    attr_ints(&in, "pads", 4, pads);
    attr_string(&in, "activation", s == 2 ? "Sigmoid" : "HardSwish");
    bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
  }
  printf("  %d depthwise instances of 16 channels\n", n);
  WM_CHECK_INT_EQ(bad, 0);
}

// Convolutions with few output positions and channels a multiple of the
// GEMM tile (7x7 and 14x14 outputs of 32 or 64 channels), which the cpu
// backend computes transposed (positions as the product's rows):
// pointwise, implicit (3x3 padded, 1x1 and 3x3 stride 2; 5x5 padded,
// whose panels of positions span more than 16 floats of the image's
// copy), grouped, two images, W constant or not, as Conv and as FusedConv
// with bias, Z and an activation.
WM_TEST(transposed_convs_agree_with_ref) {
  WM_CHECK(cpu_be != NULL);
  static const struct {
    int64_t n, c, hw, m, k, s, pad, group;
  } cases[] = {
      {1, 48, 7, 64, 1, 1, 0, 1},  {2, 40, 7, 32, 3, 1, 1, 1},
      {1, 64, 14, 64, 1, 2, 0, 1}, {1, 24, 14, 32, 3, 2, 1, 1},
      {1, 32, 14, 64, 3, 1, 1, 2}, {2, 16, 14, 32, 1, 1, 0, 1},
      {1, 32, 7, 64, 5, 1, 2, 1},
  };
  static const char *const acts[] = {"Relu", "", "HardSwish"};
  int bad = 0;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    for (int form = 0; form < 4; form++) {
      const bool fused = form >= 2, weight = form % 2;
      inst_t in = inst_make(fused ? "FusedConv" : "Conv", fused ? 1 : 11);
      if (fused) {
        in.domain = "wmap";
      }
      const int64_t oh =
          (cases[i].hw + 2 * cases[i].pad - cases[i].k) / cases[i].s + 1;
      int64_t x[4] = {cases[i].n, cases[i].c, cases[i].hw, cases[i].hw};
      int64_t w[4] = {cases[i].m, cases[i].c / cases[i].group, cases[i].k,
                      cases[i].k};
      int64_t b[1] = {cases[i].m}, z[4] = {cases[i].n, cases[i].m, oh, oh};
      int64_t strides[2] = {cases[i].s, cases[i].s};
      int64_t pads[4] = {cases[i].pad, cases[i].pad, cases[i].pad,
                         cases[i].pad};
      inst_input(&in, WM_DTYPE_FLOAT, 4, x);
      // Sums of more than 128 products of values in [-2, 2]: W constant
      // and small (as in shifted_convs_agree_with_ref), as the rounding
      // of a float sum of 216 of them in one order or another can exceed
      // ref's atol.
      const bool long_k =
          cases[i].c / cases[i].group * cases[i].k * cases[i].k > 128;
      if (weight || long_k) {
        inst_weight(&in, WM_DTYPE_FLOAT, 4, w, long_k ? 0.0625 : 1.0);
      } else {
        inst_input(&in, WM_DTYPE_FLOAT, 4, w);
      }
      inst_input(&in, WM_DTYPE_FLOAT, 1, b);
      if (fused) {
        inst_input(&in, WM_DTYPE_FLOAT, 4, z);
        attr_string(&in, "activation", acts[i % 3]);
      }
      attr_int(&in, "group", cases[i].group);
      attr_ints(&in, "strides", 2, strides);
      attr_ints(&in, "pads", 4, pads);
      bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
    }
  }
  WM_CHECK_INT_EQ(bad, 0);
}

// Convolutions over wide rows, run in the shifted form (B read in place
// from a padded, phase-split copy of the image, or from the image itself
// without padding; junk columns of the virtual rows dropped): strides,
// dilations, uneven pads, groups, batches, K beyond one block, 1-D, with
// Z and an activation, W constant or not (constant and small where K is
// long, so that rounding stays within the tolerance).
WM_TEST(shifted_convs_agree_with_ref) {
  WM_CHECK(cpu_be != NULL);
  static const struct {
    int64_t n, c, h, w, m, kh, kw, s1, s2, d, pt, pl, pb, pr, group;
  } cases[] = {
      {1, 48, 30, 30, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
      {2, 16, 20, 37, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
      {1, 8, 25, 50, 16, 7, 7, 2, 2, 1, 3, 3, 3, 3, 1},
      {1, 12, 16, 40, 12, 3, 3, 1, 1, 2, 2, 2, 2, 2, 1},
      {1, 16, 12, 60, 32, 1, 1, 2, 2, 1, 0, 0, 0, 0, 1},
      {1, 32, 40, 1, 24, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1},
      {1, 16, 20, 30, 16, 3, 3, 1, 1, 1, 0, 0, 0, 0, 2},
      {2, 6, 18, 45, 10, 3, 5, 1, 3, 1, 0, 2, 1, 1, 1},
      {1, 16, 1, 100, 20, 1, 3, 1, 1, 1, 0, 1, 0, 1, 1},
  };
  static const char *const acts[] = {"Relu", "", "HardSwish", "Sigmoid"};
  int bad = 0;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const bool one_d = cases[i].h == 1 && cases[i].kh == 1;
    const int32_t rank = one_d ? 3 : 4, nsp = rank - 2;
    const int64_t oh = (cases[i].h + cases[i].pt + cases[i].pb -
                        (cases[i].kh - 1) * cases[i].d - 1) /
                           cases[i].s1 +
                       1;
    const int64_t ow = (cases[i].w + cases[i].pl + cases[i].pr -
                        (cases[i].kw - 1) * cases[i].d - 1) /
                           cases[i].s2 +
                       1;
    for (int form = 0; form < 4; form++) {
      const bool fused = form >= 2, weight = form % 2;
      inst_t in = inst_make(fused ? "FusedConv" : "Conv", fused ? 1 : 11);
      if (fused) {
        in.domain = "wmap";
      }
      int64_t x[4] = {cases[i].n, cases[i].c, cases[i].h, cases[i].w};
      int64_t w[4] = {cases[i].m, cases[i].c / cases[i].group, cases[i].kh,
                      cases[i].kw};
      int64_t b[1] = {cases[i].m}, z[4] = {cases[i].n, cases[i].m, oh, ow};
      int64_t strides[2] = {cases[i].s1, cases[i].s2};
      int64_t dil[2] = {cases[i].d, cases[i].d};
      int64_t pads[4] = {cases[i].pt, cases[i].pl, cases[i].pb, cases[i].pr};
      if (one_d) {  // the last dim only
        x[2] = x[3];
        w[2] = w[3];
        z[2] = z[3];
        strides[0] = strides[1];
        pads[0] = pads[1];
        pads[1] = pads[3];
      }
      inst_input(&in, WM_DTYPE_FLOAT, rank, x);
      const bool long_k =
          cases[i].c / cases[i].group * cases[i].kh * cases[i].kw > 128;
      if (weight || long_k) {
        inst_weight(&in, WM_DTYPE_FLOAT, rank, w, long_k ? 0.0625 : 1.0);
      } else {
        inst_input(&in, WM_DTYPE_FLOAT, rank, w);
      }
      inst_input(&in, WM_DTYPE_FLOAT, 1, b);
      if (fused) {
        inst_input(&in, WM_DTYPE_FLOAT, rank, z);
        attr_string(&in, "activation", acts[i % 4]);
      }
      attr_int(&in, "group", cases[i].group);
      attr_ints(&in, "strides", (size_t)nsp, strides);
      attr_ints(&in, "dilations", (size_t)nsp, dil);
      attr_ints(&in, "pads", 2 * (size_t)nsp, pads);
      bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
    }
  }
  WM_CHECK_INT_EQ(bad, 0);
}

// 3x3 convolutions of stride 1 with constant weights, which the cpu
// backend runs as Winograd products on AVX-512 (winograd.h), transposed
// where the tiles are few (14x14 into 64 channels): odd and even output
// sizes, pads 0 to 2 and uneven, rows of more than 16 tiles and of fewer
// than 8 (whose vectors of tiles span rows), two and three images,
// as Conv and as FusedConv with Z and each kind of activation (those
// clamped in registers and one applied after), NaNs among the inputs.
WM_TEST(winograd_convs_agree_with_ref) {
  WM_CHECK(cpu_be != NULL);
  static const struct {
    int64_t n, c, h, w, m, pt, pl, pb, pr;
  } cases[] = {
      {1, 16, 56, 56, 16, 1, 1, 1, 1}, {2, 24, 15, 37, 32, 1, 1, 1, 1},
      {1, 32, 14, 14, 48, 1, 1, 1, 1}, {1, 16, 20, 70, 24, 0, 0, 0, 0},
      {1, 20, 9, 40, 16, 2, 2, 2, 2},  {1, 16, 17, 33, 16, 1, 0, 2, 1},
      {1, 48, 30, 30, 40, 1, 1, 1, 1}, {1, 32, 14, 14, 64, 1, 1, 1, 1},
      {2, 32, 14, 14, 32, 1, 1, 1, 1}, {3, 16, 12, 10, 16, 1, 1, 1, 1},
  };
  static const char *const acts[] = {"Relu", "", "Sigmoid", "Clip"};
  int bad = 0;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const int64_t oh = cases[i].h + cases[i].pt + cases[i].pb - 2;
    const int64_t ow = cases[i].w + cases[i].pl + cases[i].pr - 2;
    for (int form = 0; form < 3; form++) {
      const bool fused = form >= 1;
      inst_t in = inst_make(fused ? "FusedConv" : "Conv", fused ? 1 : 11);
      if (fused) {
        in.domain = "wmap";
      }
      in.nans = form == 2;
      int64_t x[4] = {cases[i].n, cases[i].c, cases[i].h, cases[i].w};
      int64_t w[4] = {cases[i].m, cases[i].c, 3, 3};
      int64_t b[1] = {cases[i].m}, z[4] = {cases[i].n, cases[i].m, oh, ow};
      int64_t pads[4] = {cases[i].pt, cases[i].pl, cases[i].pb, cases[i].pr};
      inst_input(&in, WM_DTYPE_FLOAT, 4, x);
      // Small weights: sums of up to 432 products stay within ref's atol
      // in any order of summation.
      inst_weight(&in, WM_DTYPE_FLOAT, 4, w, 0.0625);
      inst_input(&in, WM_DTYPE_FLOAT, 1, b);
      if (fused) {
        inst_input(&in, WM_DTYPE_FLOAT, 4, z);
        attr_string(&in, "activation", acts[(i + (size_t)form) % 4]);
        if (!strcmp(acts[(i + (size_t)form) % 4], "Clip")) {
          static const float clip[2] = {-0.5f, 0.75f};
          attr_floats(&in, "activation_params", 2, clip);
        }
      }
      attr_ints(&in, "pads", 4, pads);
      bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
    }
  }
  WM_CHECK_INT_EQ(bad, 0);
}

// 3-D convolutions of one input plane whose depth padding makes more
// than one output plane (those outside it read only padding): not the
// shifted form, which takes one plane in and out, whatever the width.
WM_TEST(depth_padded_convs_agree_with_ref) {
  WM_CHECK(cpu_be != NULL);
  static const struct {
    int64_t c, h, w, m, pd, sd;
  } cases[] = {{8, 6, 40, 16, 1, 1}, {4, 5, 14, 64, 2, 2}, {1, 5, 2, 1, 1, 2}};
  int bad = 0;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    inst_t in = inst_make("Conv", 11);
    int64_t x[5] = {1, cases[i].c, 1, cases[i].h, cases[i].w};
    int64_t w[5] = {cases[i].m, cases[i].c, 1, 3, 3};
    int64_t b[1] = {cases[i].m};
    int64_t strides[3] = {cases[i].sd, 1, 1};
    int64_t pads[6] = {cases[i].pd, 1, 1, cases[i].pd, 1, 1};
    inst_input(&in, WM_DTYPE_FLOAT, 5, x);
    inst_weight(&in, WM_DTYPE_FLOAT, 5, w, 0.0625);
    inst_input(&in, WM_DTYPE_FLOAT, 1, b);
    attr_ints(&in, "strides", 3, strides);
    attr_ints(&in, "pads", 6, pads);
    bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
  }
  WM_CHECK_INT_EQ(bad, 0);
}

// Max pools over wide rows (their stride-2 rows split into even and odd
// floats in vectors, odd widths and kernels of 2 and 3 included; 2x2 and
// 3x3 at stride 2 on the AVX-512 kernel where there is one) and stride 1,
// with and without padding, without and with NaNs among the values.
WM_TEST(wide_max_pools_agree_with_ref) {
  WM_CHECK(cpu_be != NULL);
  static const struct {
    int64_t h, w, k, s, pad;
  } cases[] = {{40, 75, 3, 2, 1}, {9, 130, 3, 2, 1}, {12, 64, 2, 2, 0},
               {11, 99, 3, 2, 0}, {20, 41, 5, 1, 2}, {8, 200, 3, 2, 1}};
  int bad = 0;
  for (size_t q = 0; q < 2 * sizeof(cases) / sizeof(cases[0]); q++) {
    const size_t i = q / 2;
    inst_t in = inst_make("MaxPool", 12);
    in.nans = q % 2;  // NaNs win their windows
    int64_t x[4] = {1, 3, cases[i].h, cases[i].w};
    int64_t k[2] = {cases[i].k, cases[i].k}, st[2] = {cases[i].s, cases[i].s};
    int64_t pads[4] = {cases[i].pad, cases[i].pad, cases[i].pad, cases[i].pad};
    inst_input(&in, WM_DTYPE_FLOAT, 4, x);
    attr_ints(&in, "kernel_shape", 2, k);
    attr_ints(&in, "strides", 2, st);
    attr_ints(&in, "pads", 4, pads);
    bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
  }
  WM_CHECK_INT_EQ(bad, 0);
}

// Random small convolutions: every one ref accepts must be claimed and
// agree (edges of padding, strides and dilations in all modes).
WM_TEST(random_convs_agree_with_ref) {
  WM_CHECK(cpu_be != NULL);
  static const char *const pads[] = {NULL, "SAME_UPPER", "SAME_LOWER", "VALID"};
  int bad = 0, valid = 0;
  for (int iter = 0; iter < 300; iter++) {
    int32_t nsp = 1 + (int32_t)(rng_next() % 3);
    if (nsp == 3 && rng_next() % 2) {
      nsp = 2;
    }
    int64_t c = 1 + (int64_t)(rng_next() % 4);
    int64_t group = 1, m = 1 + (int64_t)(rng_next() % 4);
    switch (rng_next() % 3) {
      case 0:
        group = c;
        m = c;  // depthwise
        break;
      case 1:
        group = c % 2 == 0 ? 2 : 1;
        m = group * (1 + (int64_t)(rng_next() % 2));
        break;
      default:
        break;
    }
    int64_t x[5] = {1 + (int64_t)(rng_next() % 2), c}, w[5] = {m, c / group};
    int64_t st[3], dl[3], pd[6];
    for (int32_t i = 0; i < nsp; i++) {
      x[2 + i] = 1 + (int64_t)(rng_next() % (nsp == 3 ? 5 : 9));
      w[2 + i] = 1 + (int64_t)(rng_next() % 4);
      st[i] = 1 + (int64_t)(rng_next() % 3);
      dl[i] = 1 + (int64_t)(rng_next() % 2);
      pd[i] = (int64_t)(rng_next() % 3);
      pd[nsp + i] = (int64_t)(rng_next() % 3);
    }
    const char *ap = pads[rng_next() % 4];
    inst_t in = inst_make("Conv", 11);
    inst_input(&in, WM_DTYPE_FLOAT, nsp + 2, x);
    inst_input(&in, WM_DTYPE_FLOAT, nsp + 2, w);
    if (rng_next() % 2) {
      inst_input(&in, WM_DTYPE_FLOAT, 1, &m);
    }
    attr_int(&in, "group", group);
    attr_ints(&in, "strides", (size_t)nsp, st);
    if (!ap || strcmp(ap, "VALID") == 0) {
      attr_ints(&in, "dilations", (size_t)nsp, dl);
    }
    if (ap) {
      attr_string(&in, "auto_pad", ap);
    } else {
      attr_ints(&in, "pads", 2 * (size_t)nsp, pd);
    }
    uint32_t impl;
    outcome_t o = run_instance(&in, &impl);
    if (o == OUT_INVALID) {
      continue;
    }
    valid++;
    if (o != OUT_AGREES) {
      char text[512];
      printf("  FAIL %s: %s\n", inst_text(&in, text, sizeof(text)),
             o == OUT_REFUSED ? "not claimed" : "differs or fails");
      bad++;
    }
  }
  printf("  %d random convolutions valid for ref\n", valid);
  WM_CHECK(valid > 100);
  WM_CHECK_INT_EQ(bad, 0);
}

// Random small transposed convolutions with explicit pads: every one ref
// accepts must be claimed and agree; SAME auto_pad and output_shape are
// refused (ref runs them).
WM_TEST(random_conv_transposes_agree_with_ref) {
  WM_CHECK(cpu_be != NULL);
  int bad = 0, valid = 0;
  for (int iter = 0; iter < 200; iter++) {
    int32_t nsp = 1 + (int32_t)(rng_next() % 3);
    if (nsp == 3 && rng_next() % 2) {
      nsp = 2;
    }
    int64_t c = 1 + (int64_t)(rng_next() % 4);
    int64_t group = c % 2 == 0 && rng_next() % 2 ? 2 : 1;
    if (rng_next() % 4 == 0) {
      group = c;  // depthwise
    }
    int64_t mg = 1 + (int64_t)(rng_next() % 3), m = mg * group;
    int64_t x[5] = {1 + (int64_t)(rng_next() % 2), c}, w[5] = {c, mg};
    int64_t st[3], dl[3], pd[6], op[3];
    for (int32_t i = 0; i < nsp; i++) {
      x[2 + i] = 1 + (int64_t)(rng_next() % (nsp == 3 ? 4 : 7));
      w[2 + i] = 1 + (int64_t)(rng_next() % 4);
      st[i] = 1 + (int64_t)(rng_next() % 3);
      dl[i] = 1 + (int64_t)(rng_next() % 2);
      pd[i] = (int64_t)(rng_next() % 3);
      pd[nsp + i] = (int64_t)(rng_next() % 3);
      op[i] = (int64_t)(rng_next() % st[i]);  // output_padding < stride
    }
    inst_t in = inst_make("ConvTranspose", 11);
    inst_input(&in, WM_DTYPE_FLOAT, nsp + 2, x);
    // A constant W is packed at plan time.
    if (iter % 2) {
      inst_weight(&in, WM_DTYPE_FLOAT, nsp + 2, w, 2.0);
    } else {
      inst_input(&in, WM_DTYPE_FLOAT, nsp + 2, w);
    }
    if (rng_next() % 2) {
      inst_input(&in, WM_DTYPE_FLOAT, 1, &m);
    }
    attr_int(&in, "group", group);
    attr_ints(&in, "strides", (size_t)nsp, st);
    attr_ints(&in, "dilations", (size_t)nsp, dl);
    if (rng_next() % 4 == 0) {
      attr_string(&in, "auto_pad", "VALID");
    } else {
      attr_ints(&in, "pads", 2 * (size_t)nsp, pd);
    }
    if (rng_next() % 2) {
      attr_ints(&in, "output_padding", (size_t)nsp, op);
    }
    uint32_t impl;
    outcome_t o = run_instance(&in, &impl);
    if (o == OUT_INVALID) {
      continue;
    }
    valid++;
    if (o != OUT_AGREES) {
      char text[512];
      printf("  FAIL %s: %s\n", inst_text(&in, text, sizeof(text)),
             o == OUT_REFUSED ? "not claimed" : "differs or fails");
      bad++;
    }
  }
  printf("  %d random transposed convolutions valid for ref\n", valid);
  WM_CHECK(valid > 100);
  // Channels and kernels across the engine's tiles: the 2x2/2 upsampling
  // of detection necks, grouped, W constant or not, with a constant bias.
  static const struct {
    int64_t c, mg, group, k, hw;
    bool const_w;
  } big[] = {
      {40, 24, 1, 2, 6, true},
      {40, 24, 1, 2, 6, false},
      {32, 7, 2, 3, 5, true},
      {13, 30, 1, 1, 9, true},
  };
  for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
    int64_t x[4] = {2, big[i].c, big[i].hw, big[i].hw + 1};
    int64_t w[4] = {big[i].c, big[i].mg, big[i].k, big[i].k};
    int64_t m = big[i].mg * big[i].group, two[2] = {2, 2};
    inst_t in = inst_make("ConvTranspose", 11);
    inst_input(&in, WM_DTYPE_FLOAT, 4, x);
    if (big[i].const_w) {
      inst_weight(&in, WM_DTYPE_FLOAT, 4, w, 2.0);
      inst_weight(&in, WM_DTYPE_FLOAT, 1, &m, 2.0);
    } else {
      inst_input(&in, WM_DTYPE_FLOAT, 4, w);
    }
    attr_int(&in, "group", big[i].group);
    attr_ints(&in, "strides", 2, two);
    bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
  }
  WM_CHECK_INT_EQ(bad, 0);
  // Padding derived from auto_pad SAME or output_shape: resolved by the
  // host, claimed. An output_shape beyond the full result needs negative
  // pads: left to ref.
  int64_t x[4] = {1, 2, 4, 4}, w[4] = {2, 3, 3, 3}, two[2] = {2, 2},
          o7[2] = {7, 8}, o8[2] = {8, 8}, o11[2] = {11, 11};
  const char *modes[2] = {"SAME_UPPER", "SAME_LOWER"};
  for (int k = 0; k < 2; k++) {
    inst_t same = inst_make("ConvTranspose", 11);
    inst_input(&same, WM_DTYPE_FLOAT, 4, x);
    inst_input(&same, WM_DTYPE_FLOAT, 4, w);
    attr_ints(&same, "strides", 2, two);
    attr_string(&same, "auto_pad", modes[k]);
    WM_CHECK(expect_claimed(&same, WM_IMPL_NATIVE_KERNEL));
  }
  const int64_t *shapes[2] = {o7, o8};
  for (int k = 0; k < 2; k++) {
    inst_t os = inst_make("ConvTranspose", 11);
    inst_input(&os, WM_DTYPE_FLOAT, 4, x);
    inst_weight(&os, WM_DTYPE_FLOAT, 4, w, 1.0);
    attr_ints(&os, "strides", 2, two);
    attr_ints(&os, "output_shape", 2, shapes[k]);
    WM_CHECK(expect_claimed(&os, WM_IMPL_NATIVE_KERNEL));
  }
  inst_t wide = inst_make("ConvTranspose", 11);
  inst_input(&wide, WM_DTYPE_FLOAT, 4, x);
  inst_input(&wide, WM_DTYPE_FLOAT, 4, w);
  attr_ints(&wide, "strides", 2, two);
  attr_ints(&wide, "output_shape", 2, o11);
  uint32_t impl;
  WM_CHECK_INT_EQ(run_instance(&wide, &impl), OUT_REFUSED);
}

// ------------------------------------------------- every table's entries

// Every kernel table in the dispatcher's order; the native ones (all but
// blas.c's) are probed with generated instances.
static const cpu_kernel_t *const all_tables[] = {
    cpu_kernels_blas, cpu_kernels_eltwise,   cpu_kernels_nn,
    cpu_kernels_data, cpu_kernels_shape,     cpu_kernels_resize,
    cpu_kernels_rnn,  cpu_kernels_attention, cpu_kernels_deconv};
enum { N_TABLES = sizeof(all_tables) / sizeof(all_tables[0]) };

// The first opset at which |k| stops being the entry serving its op_type
// (INT64_MAX when it is the newest).
static int64_t entry_until(const cpu_kernel_t *k) {
  int64_t until = INT64_MAX;
  for (size_t t = 0; t < N_TABLES; t++) {
    for (const cpu_kernel_t *o = all_tables[t]; o->op_type; o++) {
      if (strcmp(o->op_type, k->op_type) == 0 && o->since > k->since &&
          o->since < until) {
        until = o->since;
      }
    }
  }
  return until;
}

// Input shapes tried for every entry: input 0 and the others.
static const struct {
  int32_t r0, rn;
  int64_t d0[4], dn[4];
} shape_recipes[] = {
    {3, 3, {2, 3, 4}, {2, 3, 4}},
    {3, 2, {2, 3, 4}, {3, 1}},
    {3, 1, {2, 3, 4}, {4}},
    {3, 0, {2, 3, 4}, {0}},
    {4, 4, {2, 3, 4, 5}, {2, 3, 4, 5}},
    {1, 1, {7}, {7}},
    {0, 0, {0}, {0}},
    {2, 2, {0, 3}, {0, 3}},
    {2, 1, {5, 6}, {2}},
    {3, 1, {2, 3, 4}, {3}},
    {4, 1, {2, 3, 4, 5}, {3}},
};

static const wm_dtype_t gen_dtypes[] = {
    WM_DTYPE_FLOAT, WM_DTYPE_DOUBLE, WM_DTYPE_FLOAT16, WM_DTYPE_INT64,
    WM_DTYPE_INT32, WM_DTYPE_INT8,   WM_DTYPE_UINT8,   WM_DTYPE_BOOL};

// Tries generated instances of one table entry; returns how many the
// cpu backend claimed (all of which agreed unless *bad grew).
static size_t try_entry(const cpu_kernel_t *k, int *bad) {
  int64_t until = entry_until(k);
  int64_t opsets[2] = {k->since > 0 ? k->since : 1, 17};
  if (opsets[1] >= until || opsets[1] < opsets[0]) {
    opsets[1] = until - 1 < opsets[0] ? opsets[0] : until - 1;
  }
  size_t claimed = 0;
  for (int o = 0; o < 2; o++) {
    if (o == 1 && opsets[1] == opsets[0]) {
      break;
    }
    const wm_op_def_t *def = wm_ops_find("", k->op_type, opsets[o]);
    if (!def) {
      continue;
    }
    int32_t lo = def->min_inputs > 0 ? def->min_inputs : 1;
    int32_t hi = def->max_inputs < 0 ? lo + 2 : def->max_inputs;
    if (hi > 3) {
      hi = lo > 3 ? lo : 3;
    }
    int32_t n_out = def->min_outputs > 0 ? def->min_outputs : 1;
    for (size_t t = 0; t < sizeof(gen_dtypes) / sizeof(gen_dtypes[0]); t++) {
      wm_dtype_t dt = gen_dtypes[t];
      if (def->types && !(def->types & (1u << dt))) {
        continue;
      }
      for (int32_t n = lo; n <= hi && n <= MAX_IO; n++) {
        for (size_t r = 0; r < sizeof(shape_recipes) / sizeof(shape_recipes[0]);
             r++) {
          inst_t in = inst_make(k->op_type, opsets[o]);
          in.n_out = n_out > MAX_IO ? MAX_IO : n_out;
          for (int32_t i = 0; i < n; i++) {
            if (i == 0) {
              inst_input(&in, dt, shape_recipes[r].r0, shape_recipes[r].d0);
            } else {
              inst_input(&in, dt, shape_recipes[r].rn, shape_recipes[r].dn);
            }
          }
          outcome_t res = run_instance(&in, NULL);
          claimed += res == OUT_AGREES || res == OUT_FAILED;
          *bad += res == OUT_FAILED;
        }
      }
    }
  }
  return claimed;
}

WM_TEST(every_table_entry_agrees_with_ref_where_claimed) {
  WM_CHECK(cpu_be != NULL);
  int bad = 0;
  size_t entries = 0, claimed = 0;
  for (size_t t = 1; t < N_TABLES; t++) {
    for (const cpu_kernel_t *k = all_tables[t]; k->op_type; k++) {
      entries++;
      claimed += try_entry(k, &bad);
    }
  }
  printf(
      "  %zu entries of the native tables, %zu generic instances "
      "claimed\n",
      entries, claimed);
  WM_CHECK_INT_EQ(bad, 0);
}

// True when some kernel table has an entry for |op|.
static bool in_tables(const char *op) {
  for (size_t t = 0; t < N_TABLES; t++) {
    for (const cpu_kernel_t *k = all_tables[t]; k->op_type; k++) {
      if (strcmp(k->op_type, op) == 0) {
        return true;
      }
    }
  }
  return false;
}

// Runs |in| when its op has a cpu entry; counts failures in *bad and
// claims in *claimed.
static void try_special(const inst_t *in, int *bad, size_t *claimed,
                        size_t *tried) {
  if (!in_tables(in->op)) {
    return;
  }
  (*tried)++;
  outcome_t o = run_instance(in, NULL);
  *bad += o == OUT_FAILED;
  *claimed += o == OUT_AGREES;
}

// Runs |in|, which the cpu backend must claim natively and agree on;
// counts a refusal or a difference in *bad.
static void must_agree(const inst_t *in, int *bad, size_t *claimed,
                       size_t *tried) {
  (*tried)++;
  if (expect_claimed(in, WM_IMPL_NATIVE_KERNEL)) {
    (*claimed)++;
  } else {
    (*bad)++;
  }
}

// Pools: kernel, strides, pads or auto_pad, ceil_mode, dilations, 1-D to
// 3-D; MaxPool also with its Indices in both storage orders, LpPool with
// several p.
static void special_pools(int *bad, size_t *claimed, size_t *tried) {
  static const char *const ops[] = {"MaxPool", "AveragePool", "LpPool"};
  int64_t x4[] = {2, 3, 7, 8}, x3[] = {2, 3, 9}, x5[] = {1, 2, 5, 6, 7};
  int64_t k22[] = {2, 2}, k33[] = {3, 3}, s22[] = {2, 2}, s12[] = {1, 2};
  int64_t p1[] = {1, 1, 1, 1}, p2[] = {0, 1, 1, 0}, d22[] = {2, 2};
  int64_t k3[] = {3}, s2[] = {2}, pp[] = {1, 1};
  int64_t k232[] = {2, 3, 2}, s212[] = {2, 1, 2}, p3[] = {1, 0, 1, 0, 1, 1};
  for (size_t o = 0; o < 3; o++) {
    for (int64_t opset = 7; opset <= 19; opset += 5) {
      for (int v = 0; v < 10; v++) {
        inst_t in = inst_make(ops[o], opset);
        int32_t rank = v == 6 ? 3 : v == 7 ? 5 : 4;
        inst_input(&in, WM_DTYPE_FLOAT, rank, v == 6 ? x3 : v == 7 ? x5 : x4);
        switch (v) {
          case 0:
            attr_ints(&in, "kernel_shape", 2, k22);
            break;
          case 1:
            attr_ints(&in, "kernel_shape", 2, k33);
            attr_ints(&in, "strides", 2, s22);
            attr_ints(&in, "pads", 4, p1);
            break;
          case 2:
            attr_ints(&in, "kernel_shape", 2, k33);
            attr_ints(&in, "strides", 2, s12);
            attr_ints(&in, "pads", 4, p2);
            attr_int(&in, "count_include_pad", o == 1);
            break;
          case 3:
            attr_ints(&in, "kernel_shape", 2, k22);
            attr_ints(&in, "strides", 2, s22);
            attr_string(&in, "auto_pad", "SAME_UPPER");
            break;
          case 4:
            attr_ints(&in, "kernel_shape", 2, k33);
            attr_ints(&in, "strides", 2, s22);
            attr_int(&in, "ceil_mode", 1);
            break;
          case 5:
            attr_ints(&in, "kernel_shape", 2, k22);
            attr_ints(&in, "dilations", 2, d22);
            break;
          case 6:
            attr_ints(&in, "kernel_shape", 1, k3);
            attr_ints(&in, "strides", 1, s2);
            attr_ints(&in, "pads", 2, pp);
            break;
          case 7:
            attr_ints(&in, "kernel_shape", 3, k232);
            attr_ints(&in, "strides", 3, s212);
            attr_ints(&in, "pads", 6, p3);
            break;
          case 8:
            attr_ints(&in, "kernel_shape", 2, k33);
            attr_ints(&in, "strides", 2, s22);
            attr_ints(&in, "pads", 4, p1);
            attr_int(&in, "ceil_mode", 1);
            attr_int(&in, "count_include_pad", 1);
            break;
          default:
            attr_ints(&in, "kernel_shape", 2, k33);
            attr_ints(&in, "strides", 2, s12);
            attr_string(&in, "auto_pad", "SAME_LOWER");
            attr_ints(&in, "dilations", 2, d22);
            break;
        }
        if (o == 2) {
          attr_int(&in, "p", v % 3 + 1);
        }
        if (opset > 7 || o == 0) {
          must_agree(&in, bad, claimed, tried);
        } else {
          try_special(&in, bad, claimed, tried);
        }
        if (o == 0 && opset >= 12) {
          in.n_out = 2;
          attr_int(&in, "storage_order", v % 2);
          must_agree(&in, bad, claimed, tried);
        }
      }
    }
  }
  static const char *const globals[] = {"GlobalMaxPool", "GlobalAveragePool",
                                        "GlobalLpPool"};
  int64_t g2[] = {3, 4}, g3[] = {2, 3, 0};
  for (size_t o = 0; o < 3; o++) {
    inst_t a = inst_make(globals[o], 13);
    inst_input(&a, WM_DTYPE_FLOAT, 4, x4);
    if (o == 2) {
      attr_int(&a, "p", 3);
    }
    must_agree(&a, bad, claimed, tried);
    inst_t b = inst_make(globals[o], 13);
    inst_input(&b, WM_DTYPE_FLOAT, 2, g2);
    must_agree(&b, bad, claimed, tried);
    inst_t c = inst_make(globals[o], 13);
    inst_input(&c, WM_DTYPE_FLOAT, 3, g3);
    must_agree(&c, bad, claimed, tried);
  }
}

// Data movement with constant shape, axes, starts or indices.
static void special_data(int *bad, size_t *claimed, size_t *tried) {
  int64_t x[] = {2, 3, 4}, x1[] = {2, 1, 4}, n2[] = {2}, n3[] = {3}, n4[] = {4},
          n1[] = {1};
  // Pow by a constant exponent: the fast exponents and one that is not.
  static const double exps[] = {2, 3, 1, 0.5, -1, 2.5};
  for (size_t e = 0; e < sizeof(exps) / sizeof(exps[0]); e++) {
    inst_t in = inst_make("Pow", 15);
    inst_input(&in, WM_DTYPE_FLOAT, 3, x);
    inst_const(&in, WM_DTYPE_FLOAT, 1, n1, &exps[e]);
    must_agree(&in, bad, claimed, tried);
  }
  for (int64_t axis = -3; axis < 3; axis++) {
    inst_t in = inst_make("Concat", 13);
    int64_t other[] = {2, 3, 4};
    other[axis < 0 ? axis + 3 : axis] = 1;
    inst_input(&in, WM_DTYPE_FLOAT, 3, x);
    inst_input(&in, WM_DTYPE_FLOAT, 3, other);
    inst_input(&in, WM_DTYPE_FLOAT, 3, x);
    attr_int(&in, "axis", axis);
    try_special(&in, bad, claimed, tried);
  }
  for (int64_t opset = 7; opset <= 13; opset += 3) {
    for (int k = 0; k < 3; k++) {
      inst_t in = inst_make("Dropout", opset);
      inst_input(&in, WM_DTYPE_FLOAT, 3, x);
      if (opset >= 12 && k > 0) {
        double r[] = {k == 1 ? 0.25 : 0}, t[] = {k == 2};
        inst_const(&in, WM_DTYPE_FLOAT, 0, NULL, r);
        inst_const(&in, WM_DTYPE_BOOL, 0, NULL, t);
      }
      in.n_out = k == 0 ? 1 : 2;
      must_agree(&in, bad, claimed, tried);
    }
  }
  static const double shapes[][3] = {{6, 4, 0}, {-1, 2, 2}, {0, 12, 0}};
  for (size_t i = 0; i < 3; i++) {
    inst_t in = inst_make("Reshape", 14);
    inst_input(&in, WM_DTYPE_FLOAT, 3, x);
    inst_const(&in, WM_DTYPE_INT64, 1, shapes[i][2] ? n3 : n2, shapes[i]);
    try_special(&in, bad, claimed, tried);
  }
  static const double axes1[] = {1}, axes2[] = {0, -1};
  inst_t sq = inst_make("Squeeze", 13);
  inst_input(&sq, WM_DTYPE_FLOAT, 3, x1);
  inst_const(&sq, WM_DTYPE_INT64, 1, n1, axes1);
  try_special(&sq, bad, claimed, tried);
  inst_t usq = inst_make("Unsqueeze", 13);
  inst_input(&usq, WM_DTYPE_FLOAT, 3, x);
  inst_const(&usq, WM_DTYPE_INT64, 1, n2, axes2);
  try_special(&usq, bad, claimed, tried);
  static const int64_t perms[][3] = {{2, 0, 1}, {1, 0, 2}, {0, 2, 1}};
  for (size_t i = 0; i < 3; i++) {
    inst_t in = inst_make("Transpose", 13);
    inst_input(&in, WM_DTYPE_FLOAT, 3, x);
    attr_ints(&in, "perm", 3, perms[i]);
    try_special(&in, bad, claimed, tried);
  }
  // Slice: starts, ends, axes, steps as initializers (opset 13).
  static const double sl[][4][3] = {
      {{1, 0, 0}, {3, 5, 0}, {1, 2, 0}, {1, 2, 0}},
      {{-1, 0, 0}, {-100, 2, 0}, {2, 1, 0}, {-1, 1, 0}},
      {{0, 0, 0}, {1, 9, 0}, {0, -1, 0}, {1, 3, 0}},
  };
  for (size_t i = 0; i < 3; i++) {
    inst_t in = inst_make("Slice", 13);
    inst_input(&in, WM_DTYPE_FLOAT, 3, x);
    for (int j = 0; j < 4; j++) {
      inst_const(&in, WM_DTYPE_INT64, 1, n2, sl[i][j]);
    }
    try_special(&in, bad, claimed, tried);
  }
  // Slices whose rows merge: dims of length 1, whole trailing dims, a
  // strided dim before whole ones (the kernel coalesces them).
  static const int64_t wide[][4] = {{1, 6, 5, 1}, {2, 3, 4, 5}, {2, 1, 4, 3}};
  static const double wsl[][4][2] = {
      {{1, 0}, {5, 0}, {2, 0}, {1, 0}},
      {{0, 0}, {2, 0}, {1, 0}, {1, 0}},
      {{3, 0}, {0, 0}, {2, 0}, {-2, 0}},
  };
  int64_t n1s[] = {1};
  for (size_t i = 0; i < 3; i++) {
    inst_t in = inst_make("Slice", 13);
    inst_input(&in, WM_DTYPE_FLOAT, 4, wide[i]);
    for (int j = 0; j < 4; j++) {
      inst_const(&in, WM_DTYPE_INT64, 1, n1s, wsl[i][j]);
    }
    try_special(&in, bad, claimed, tried);
  }
  static const double idx[] = {0, 2, -1, 1};
  for (int64_t axis = 0; axis < 3; axis++) {
    inst_t in = inst_make("Gather", 13);
    inst_input(&in, WM_DTYPE_FLOAT, 3, x);
    inst_const(&in, WM_DTYPE_INT64, 1, axis == 0 ? n1 : n4, idx);
    attr_int(&in, "axis", axis);
    try_special(&in, bad, claimed, tried);
  }
  static const char *const reds[] = {"ReduceSum", "ReduceMean", "ReduceMax"};
  static const double rax[] = {1, -1};
  for (size_t r = 0; r < 3; r++) {
    for (int keep = 0; keep < 2; keep++) {
      inst_t in = inst_make(reds[r], r == 0 ? 13 : 18);
      inst_input(&in, WM_DTYPE_FLOAT, 3, x);
      inst_const(&in, WM_DTYPE_INT64, 1, n2, rax);
      attr_int(&in, "keepdims", keep);
      try_special(&in, bad, claimed, tried);
      inst_t old = inst_make(reds[r], 11);
      inst_input(&old, WM_DTYPE_FLOAT, 3, x);
      int64_t ax[] = {0, 2};
      attr_ints(&old, "axes", 2, ax);
      attr_int(&old, "keepdims", keep);
      try_special(&old, bad, claimed, tried);
    }
  }
}

// Normalizations and softmax along each axis.
static void special_nn(int *bad, size_t *claimed, size_t *tried) {
  int64_t x[] = {2, 3, 4, 5}, c[] = {3};
  static const double scale[] = {1.5, -0.5, 2.0}, var[] = {0.5, 1.0, 2.5};
  for (int64_t opset = 9; opset <= 15; opset += 6) {
    inst_t in = inst_make("BatchNormalization", opset);
    inst_input(&in, WM_DTYPE_FLOAT, 4, x);
    inst_const(&in, WM_DTYPE_FLOAT, 1, c, scale);
    inst_input(&in, WM_DTYPE_FLOAT, 1, c);
    inst_input(&in, WM_DTYPE_FLOAT, 1, c);
    inst_const(&in, WM_DTYPE_FLOAT, 1, c, var);
    attr_float(&in, "epsilon", 1e-3f);
    try_special(&in, bad, claimed, tried);
  }
  int64_t xi[][4] = {{2, 3, 4, 5}, {1, 3, 7}, {2, 3}, {2, 3, 0}};
  int32_t ri[] = {4, 3, 2, 3};
  for (int k = 0; k < 4; k++) {
    inst_t in = inst_make("InstanceNormalization", 6);
    inst_input(&in, WM_DTYPE_FLOAT, ri[k], xi[k]);
    inst_input(&in, WM_DTYPE_FLOAT, 1, c);
    inst_input(&in, WM_DTYPE_FLOAT, 1, c);
    attr_float(&in, "epsilon", k == 1 ? 1e-2f : 1e-5f);
    must_agree(&in, bad, claimed, tried);
  }
  static const char *const sms[] = {"Softmax", "LogSoftmax"};
  for (size_t o = 0; o < 2; o++) {
    for (int64_t axis = -4; axis < 4; axis++) {
      for (int64_t opset = 11; opset <= 13; opset += 2) {
        inst_t in = inst_make(sms[o], opset);
        inst_input(&in, WM_DTYPE_FLOAT, 4, x);
        attr_int(&in, "axis", axis);
        try_special(&in, bad, claimed, tried);
      }
    }
  }
  int64_t ln_x[] = {2, 3, 5}, ln_s[][3] = {{1, 5}, {3, 1}, {5}, {1}};
  int32_t ln_r[] = {2, 2, 1, 1};
  for (int k = 0; k < 4; k++) {
    inst_t in = inst_make("LayerNormalization", 17);
    inst_input(&in, WM_DTYPE_FLOAT, 3, ln_x);
    inst_input(&in, WM_DTYPE_FLOAT, ln_r[k], ln_s[k]);
    inst_input(&in, WM_DTYPE_FLOAT, ln_r[3 - k], ln_s[3 - k]);
    attr_int(&in, "axis", -2);
    in.n_out = 3;
    must_agree(&in, bad, claimed, tried);
  }
  for (int64_t axis = -3; axis < 4; axis++) {
    inst_t in = inst_make("LayerNormalization", 17);
    int64_t sc[4];
    int32_t a = (int32_t)(axis < 0 ? axis + 4 : axis);
    for (int32_t i = a; i < 4; i++) {
      sc[i - a] = x[i];
    }
    inst_input(&in, WM_DTYPE_FLOAT, 4, x);
    inst_input(&in, WM_DTYPE_FLOAT, 4 - a, sc);
    inst_input(&in, WM_DTYPE_FLOAT, 4 - a, sc);
    attr_int(&in, "axis", axis);
    try_special(&in, bad, claimed, tried);
  }
  // The "wmap" domain's LayerNormalization (the layernorm pass writes it).
  {
    inst_t in = inst_make("LayerNormalization", 1);
    in.domain = "wmap";
    int64_t sx[3] = {2, 3, 40}, sc[1] = {40};
    inst_input(&in, WM_DTYPE_FLOAT, 3, sx);
    inst_input(&in, WM_DTYPE_FLOAT, 1, sc);
    inst_input(&in, WM_DTYPE_FLOAT, 1, sc);
    attr_float(&in, "epsilon", 1e-3f);
    must_agree(&in, bad, claimed, tried);
  }
}

// Where, Expand, Tile, Cast, Pad and Split: broadcasting, dtypes, empty
// tensors, every mode and opset form.
static void special_shape(int *bad, size_t *claimed, size_t *tried) {
  static const struct {
    int32_t rank[3];
    int64_t dims[3][4];
  } wheres[] = {
      {{3, 3, 3}, {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}}},
      {{2, 3, 1}, {{3, 1}, {2, 3, 5}, {5}}},
      {{1, 0, 3}, {{1}, {0}, {2, 1, 4}}},
      {{3, 1, 2}, {{2, 1, 4}, {4}, {3, 1}}},
      {{2, 2, 2}, {{0, 3}, {1, 3}, {0, 1}}},
      {{4, 4, 1}, {{2, 1, 3, 1}, {1, 5, 1, 7}, {7}}},
  };
  static const wm_dtype_t where_dt[] = {WM_DTYPE_FLOAT,   WM_DTYPE_INT64,
                                        WM_DTYPE_UINT8,   WM_DTYPE_BOOL,
                                        WM_DTYPE_FLOAT16, WM_DTYPE_DOUBLE};
  for (size_t c = 0; c < sizeof(wheres) / sizeof(wheres[0]); c++) {
    for (size_t t = 0; t < sizeof(where_dt) / sizeof(where_dt[0]); t++) {
      inst_t in = inst_make("Where", t % 2 ? 16 : 9);
      inst_input(&in, WM_DTYPE_BOOL, wheres[c].rank[0], wheres[c].dims[0]);
      inst_input(&in, where_dt[t], wheres[c].rank[1], wheres[c].dims[1]);
      inst_input(&in, where_dt[t], wheres[c].rank[2], wheres[c].dims[2]);
      must_agree(&in, bad, claimed, tried);
    }
  }
  static const struct {
    int32_t rank;
    int64_t x[4];
    int64_t n;
    double shape[4];
  } expands[] = {
      {2, {3, 1}, 3, {2, 3, 4}},
      {3, {2, 1, 4}, 3, {2, 3, 4}},
      {0, {0}, 2, {3, 2}},
      {3, {2, 3, 1}, 1, {4}},
      {2, {3, 4}, 2, {1, 1}},
      {2, {0, 4}, 3, {2, 0, 4}},
      {4, {1, 3, 1, 1}, 4, {2, 3, 5, 6}},
      {1, {5}, 2, {3, 1}},
  };
  for (size_t c = 0; c < sizeof(expands) / sizeof(expands[0]); c++) {
    wm_dtype_t dts[] = {WM_DTYPE_FLOAT, WM_DTYPE_INT32, WM_DTYPE_BOOL};
    for (size_t t = 0; t < 3; t++) {
      inst_t in = inst_make("Expand", t == 1 ? 8 : 13);
      int64_t n[] = {expands[c].n};
      inst_input(&in, dts[t], expands[c].rank, expands[c].x);
      inst_const(&in, WM_DTYPE_INT64, 1, n, expands[c].shape);
      must_agree(&in, bad, claimed, tried);
    }
  }
  static const struct {
    int32_t rank;
    int64_t x[3];
    double reps[3];
  } tiles[] = {
      {2, {2, 3}, {2, 3}}, {3, {2, 1, 3}, {1, 4, 2}}, {1, {5}, {3}},
      {2, {2, 0}, {2, 2}}, {2, {3, 2}, {0, 1}},       {1, {1}, {7}},
  };
  for (size_t c = 0; c < sizeof(tiles) / sizeof(tiles[0]); c++) {
    wm_dtype_t dts[] = {WM_DTYPE_FLOAT, WM_DTYPE_INT64, WM_DTYPE_UINT8};
    for (size_t t = 0; t < 3; t++) {
      inst_t in = inst_make("Tile", 13);
      int64_t n[] = {tiles[c].rank};
      inst_input(&in, dts[t], tiles[c].rank, tiles[c].x);
      inst_const(&in, WM_DTYPE_INT64, 1, n, tiles[c].reps);
      must_agree(&in, bad, claimed, tried);
    }
  }
  // Cast between every pair, on random values and on edge values.
  static const wm_dtype_t casts[] = {
      WM_DTYPE_FLOAT, WM_DTYPE_DOUBLE, WM_DTYPE_FLOAT16, WM_DTYPE_BFLOAT16,
      WM_DTYPE_INT8,  WM_DTYPE_INT16,  WM_DTYPE_INT32,   WM_DTYPE_INT64,
      WM_DTYPE_UINT8, WM_DTYPE_UINT16, WM_DTYPE_UINT32,  WM_DTYPE_UINT64,
      WM_DTYPE_BOOL};
  static const double edges[] = {1e10, -1e10, 3e9, -3e9, 300.7,
                                 -1.5, 65519, 7e4, 1e-8, -0.0};
  int64_t d35[] = {3, 5}, d10[] = {10}, d1[] = {1};
  for (size_t a = 0; a < sizeof(casts) / sizeof(casts[0]); a++) {
    for (size_t b = 0; b < sizeof(casts) / sizeof(casts[0]); b++) {
      inst_t in = inst_make("Cast", (a + b) % 2 ? 13 : 19);
      inst_input(&in, casts[a], 2, d35);
      attr_int(&in, "to", casts[b]);
      must_agree(&in, bad, claimed, tried);
      inst_t e = inst_make("Cast", 13);
      inst_const(&e, casts[a], 1, d10, edges);
      attr_int(&e, "to", casts[b]);
      must_agree(&e, bad, claimed, tried);
      if (b % 4 == a % 4) {
        inst_t like = inst_make("CastLike", 15);
        inst_input(&like, casts[a], 2, d35);
        inst_input(&like, casts[b], 1, d1);
        must_agree(&like, bad, claimed, tried);
      }
    }
  }
  static const double specials[] = {NAN, INFINITY, -INFINITY, 2.5,   -2.5,
                                    0.5, 1e-40,    -7e5,      255.9, 128};
  static const double halves[] = {3e-6,   -2.98e-8,      6.1e-5, 5.96e-8,
                                  1.5e-7, 65504,         65520,  -65519.99,
                                  0.1,    -1.00048828125};
  for (size_t b = 0; b < sizeof(casts) / sizeof(casts[0]); b++) {
    inst_t e = inst_make("Cast", 13);
    inst_const(&e, WM_DTYPE_FLOAT, 1, d10, halves);
    attr_int(&e, "to", casts[b]);
    must_agree(&e, bad, claimed, tried);
  }
  for (size_t b = 0; b < sizeof(casts) / sizeof(casts[0]); b++) {
    inst_t e = inst_make("Cast", 13);
    inst_const(&e, WM_DTYPE_FLOAT, 1, d10, specials);
    attr_int(&e, "to", casts[b]);
    must_agree(&e, bad, claimed, tried);
  }
  // Pad: modes, negative pads, axes (opset 18), wrap (19), old forms.
  static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
  static const double pads4[][8] = {
      {0, 1, 2, 3, 1, 0, 3, 2},
      {1, 0, 0, 2, 2, 1, 0, 0},
      {0, 0, -1, 1, 0, 0, 2, -2},
      {0, 0, 5, 7, 0, 0, 6, 9},
  };
  int64_t x4[] = {2, 3, 4, 5}, n8[] = {8};
  for (size_t m = 0; m < 4; m++) {
    for (size_t c = 0; c < 4; c++) {
      if (c == 3 && m == 1) {
        continue;  // reflect wider than the dim: numpy would repeat it
      }
      inst_t in = inst_make("Pad", m == 3 ? 19 : 13);
      inst_input(&in, c % 2 ? WM_DTYPE_INT32 : WM_DTYPE_FLOAT, 4, x4);
      inst_const(&in, WM_DTYPE_INT64, 1, n8, pads4[c]);
      if (m == 0 && c < 2) {
        double v[] = {1.5};
        inst_const(&in, c % 2 ? WM_DTYPE_INT32 : WM_DTYPE_FLOAT, 0, NULL, v);
      }
      attr_string(&in, "mode", modes[m]);
      must_agree(&in, bad, claimed, tried);
    }
    inst_t ax = inst_make("Pad", 19);
    int64_t n4[] = {4}, n2[] = {2};
    double p[] = {1, 2, 2, 1}, axes[] = {-1, 1};
    inst_input(&ax, WM_DTYPE_FLOAT, 4, x4);
    inst_const(&ax, WM_DTYPE_INT64, 1, n4, p);
    inst_input(&ax, WM_DTYPE_UNDEFINED, 0, NULL);
    inst_const(&ax, WM_DTYPE_INT64, 1, n2, axes);
    attr_string(&ax, "mode", modes[m]);
    must_agree(&ax, bad, claimed, tried);
    inst_t old = inst_make("Pad", 2);
    int64_t op[] = {1, 0, 0, 2, 0, 1, 2, 0};
    inst_input(&old, m % 2 ? WM_DTYPE_INT64 : WM_DTYPE_FLOAT, 4, x4);
    attr_ints(&old, "pads", 8, op);
    attr_float(&old, "value", -2.75f);
    attr_string(&old, "mode", modes[m == 3 ? 0 : m]);
    must_agree(&old, bad, claimed, tried);
  }
  {
    int64_t x1[] = {1, 7}, e[] = {0, 4}, n4[] = {4};
    double p[] = {0, 3, 0, 2}, p0[] = {0, 1, 0, 0};
    inst_t in = inst_make("Pad", 13);
    inst_input(&in, WM_DTYPE_UINT8, 2, x1);
    inst_const(&in, WM_DTYPE_INT64, 1, n4, p);
    attr_string(&in, "mode", "reflect");
    must_agree(&in, bad, claimed, tried);
    inst_t em = inst_make("Pad", 13);
    inst_input(&em, WM_DTYPE_FLOAT, 2, e);
    inst_const(&em, WM_DTYPE_INT64, 1, n4, p0);
    must_agree(&em, bad, claimed, tried);
  }
  // Mod: both forms on floats (fmod=0 from opset 28) and integers, with
  // broadcasting; integer divisors from fill_random are never 0.
  static const wm_dtype_t mods[] = {
      WM_DTYPE_FLOAT, WM_DTYPE_DOUBLE, WM_DTYPE_INT32, WM_DTYPE_INT64,
      WM_DTYPE_INT8,  WM_DTYPE_UINT8,  WM_DTYPE_UINT16};
  int64_t ma[] = {3, 4, 5}, mb[] = {4, 1};
  for (size_t t = 0; t < sizeof(mods) / sizeof(mods[0]); t++) {
    for (int f = 0; f < 2; f++) {
      bool flt = t < 2;
      inst_t in = inst_make("Mod", flt && f == 0 ? 28 : 13);
      inst_input(&in, mods[t], 3, ma);
      inst_input(&in, mods[t], 2, mb);
      attr_int(&in, "fmod", f);
      must_agree(&in, bad, claimed, tried);
    }
  }
  // Trilu: both triangles, k from -5 to 5, batches, wide and tall.
  int64_t tr[][3] = {{2, 4, 6}, {7, 3}, {3, 0, 4}};
  int32_t trr[] = {3, 2, 3};
  for (int c = 0; c < 3; c++) {
    for (int up = 0; up < 2; up++) {
      for (int64_t k = -5; k <= 5; k += 2) {
        inst_t in = inst_make("Trilu", 14);
        inst_input(&in, c == 1 ? WM_DTYPE_INT64 : WM_DTYPE_FLOAT, trr[c],
                   tr[c]);
        double kv[] = {(double)k};
        if (k != 1) {
          inst_const(&in, WM_DTYPE_INT64, 0, NULL, kv);
        }
        attr_int(&in, "upper", up);
        must_agree(&in, bad, claimed, tried);
      }
    }
  }
  // DepthToSpace and SpaceToDepth in both modes.
  int64_t d2s[] = {2, 18, 2, 3}, s2d[] = {2, 3, 6, 4}, s3d[] = {1, 2, 6, 9};
  for (int64_t bs = 2; bs <= 3; bs++) {
    static const char *const dmodes[] = {"DCR", "CRD"};
    for (int mo = 0; mo < 2; mo++) {
      inst_t a = inst_make("DepthToSpace", mo ? 13 : 11);
      inst_input(&a, bs == 2 ? WM_DTYPE_FLOAT : WM_DTYPE_UINT8, 4, d2s);
      attr_int(&a, "blocksize", bs == 2 ? 3 : 1);
      attr_string(&a, "mode", dmodes[mo]);
      must_agree(&a, bad, claimed, tried);
      inst_t b = inst_make("SpaceToDepth", 13);
      inst_input(&b, mo ? WM_DTYPE_INT64 : WM_DTYPE_FLOAT, 4,
                 bs == 2 ? s2d : s3d);
      attr_int(&b, "blocksize", bs);
      must_agree(&b, bad, claimed, tried);
      inst_t c = inst_make("SpaceToDepth", 28);
      inst_input(&c, WM_DTYPE_FLOAT, 4, bs == 2 ? s2d : s3d);
      attr_int(&c, "blocksize", bs);
      attr_string(&c, "mode", dmodes[mo]);
      try_special(&c, bad, claimed, tried);
    }
  }
  // Split: attribute (opset 2, 11), input (13), num_outputs (18).
  int64_t xs[] = {2, 7, 3};
  for (int64_t axis = -3; axis < 3; axis++) {
    int32_t a = (int32_t)(axis < 0 ? axis + 3 : axis);
    inst_t eq = inst_make("Split", 18);
    inst_input(&eq, WM_DTYPE_FLOAT, 3, xs);
    attr_int(&eq, "axis", axis);
    attr_int(&eq, "num_outputs", 2);
    eq.n_out = 2;
    must_agree(&eq, bad, claimed, tried);
    int64_t sp[] = {1, xs[a] - 1};
    double spd[] = {1, (double)xs[a] - 1};
    int64_t n2[] = {2};
    inst_t at = inst_make("Split", 11);
    inst_input(&at, WM_DTYPE_INT64, 3, xs);
    attr_int(&at, "axis", axis);
    attr_ints(&at, "split", 2, sp);
    at.n_out = 2;
    must_agree(&at, bad, claimed, tried);
    inst_t ip = inst_make("Split", 13);
    inst_input(&ip, WM_DTYPE_UINT8, 3, xs);
    inst_const(&ip, WM_DTYPE_INT64, 1, n2, spd);
    attr_int(&ip, "axis", axis);
    ip.n_out = 2;
    must_agree(&ip, bad, claimed, tried);
  }
  inst_t three = inst_make("Split", 13);
  int64_t x6[] = {4, 6};
  inst_input(&three, WM_DTYPE_FLOAT, 2, x6);
  attr_int(&three, "axis", 1);
  three.n_out = 3;
  must_agree(&three, bad, claimed, tried);
  inst_t zero = inst_make("Split", 13);
  int64_t n3[] = {3};
  double z[] = {2, 0, 2};
  inst_input(&zero, WM_DTYPE_FLOAT, 2, x6);
  inst_const(&zero, WM_DTYPE_INT64, 1, n3, z);
  zero.n_out = 3;
  must_agree(&zero, bad, claimed, tried);
}

// Every Reduce* and ArgMax/ArgMin over contiguous, strided and scattered
// axes, attribute and input forms, keepdims, noop and empty inputs.
static void special_reduce(int *bad, size_t *claimed, size_t *tried) {
  static const char *const reds[] = {
      "ReduceSum",       "ReduceMean",     "ReduceMax", "ReduceMin",
      "ReduceProd",      "ReduceL1",       "ReduceL2",  "ReduceLogSum",
      "ReduceLogSumExp", "ReduceSumSquare"};
  static const struct {
    int32_t n;
    int64_t axes[3];
  } axis_sets[] = {{1, {-1}}, {1, {1}},       {2, {0, 2}}, {2, {-1, 1}},
                   {1, {0}},  {3, {0, 1, 3}}, {0, {0}}};
  int64_t x[] = {3, 4, 5, 6}, e[] = {2, 0, 3};
  for (size_t r = 0; r < sizeof(reds) / sizeof(reds[0]); r++) {
    for (size_t a = 0; a < sizeof(axis_sets) / sizeof(axis_sets[0]); a++) {
      for (int keep = 0; keep < 2; keep++) {
        inst_t in = inst_make(reds[r], 18);
        inst_input(&in, WM_DTYPE_FLOAT, 4, x);
        double v[3];
        for (int32_t k = 0; k < axis_sets[a].n; k++) {
          v[k] = (double)axis_sets[a].axes[k];
        }
        int64_t n[] = {axis_sets[a].n};
        inst_const(&in, WM_DTYPE_INT64, 1, n, v);
        attr_int(&in, "keepdims", keep);
        if (axis_sets[a].n == 0 && keep) {
          attr_int(&in, "noop_with_empty_axes", 1);
        }
        must_agree(&in, bad, claimed, tried);
        if (axis_sets[a].n > 0) {
          inst_t old = inst_make(reds[r], 13);
          inst_input(&old, WM_DTYPE_FLOAT, 4, x);
          if (r == 0) {
            inst_const(&old, WM_DTYPE_INT64, 1, n, v);
          } else {
            attr_ints(&old, "axes", (size_t)axis_sets[a].n, axis_sets[a].axes);
          }
          attr_int(&old, "keepdims", keep);
          must_agree(&old, bad, claimed, tried);
        }
      }
    }
    inst_t all = inst_make(reds[r], 11);
    inst_input(&all, WM_DTYPE_FLOAT, 4, x);
    must_agree(&all, bad, claimed, tried);
    inst_t em = inst_make(reds[r], 11);
    int64_t ax1[] = {1};
    inst_input(&em, WM_DTYPE_FLOAT, 3, e);
    attr_ints(&em, "axes", 1, ax1);
    must_agree(&em, bad, claimed, tried);
  }
  static const wm_dtype_t arg_dt[] = {WM_DTYPE_FLOAT, WM_DTYPE_INT32,
                                      WM_DTYPE_UINT8, WM_DTYPE_INT64,
                                      WM_DTYPE_DOUBLE};
  static const char *const args[] = {"ArgMax", "ArgMin"};
  int64_t xa[] = {4, 7, 5};
  for (size_t o = 0; o < 2; o++) {
    for (int64_t axis = -3; axis < 3; axis++) {
      for (size_t t = 0; t < sizeof(arg_dt) / sizeof(arg_dt[0]); t++) {
        inst_t in = inst_make(args[o], t % 2 ? 11 : 13);
        inst_input(&in, arg_dt[t], 3, xa);
        attr_int(&in, "axis", axis);
        attr_int(&in, "keepdims", (int64_t)t % 2);
        if (t % 2 == 0) {
          attr_int(&in, "select_last_index", axis % 2 != 0);
        }
        must_agree(&in, bad, claimed, tried);
      }
    }
  }
}

// Resize in every mode, coordinate transform and nearest rounding, from
// scales or sizes, with roi, axes, aspect policies and antialiasing; the
// opset-10 and Upsample forms.
static void special_resize(int *bad, size_t *claimed, size_t *tried) {
  static const char *const coords[] = {
      "half_pixel",        "half_pixel_symmetric", "pytorch_half_pixel",
      "align_corners",     "asymmetric",           "tf_half_pixel_for_nn",
      "tf_crop_and_resize"};
  static const char *const nearests[] = {"round_prefer_floor",
                                         "round_prefer_ceil", "floor", "ceil"};
  static const double scales[][4] = {
      {1, 1, 2, 2}, {1, 1, 0.6, 1.7}, {1, 1, 3, 0.5}, {1, 2, 1.5, 1}};
  static const double sizes[][4] = {{1, 2, 3, 13}, {1, 2, 10, 12}};
  static const double roi[] = {0, 0, 0.1, 0.2, 1, 1, 0.8, 0.9};
  int64_t x[] = {1, 2, 5, 6}, n4[] = {4}, n8[] = {8};
  for (int mode = 0; mode < 6; mode++) {
    const char *m = mode < 4 ? "nearest" : mode == 4 ? "linear" : "cubic";
    for (size_t c = 0; c < 7; c++) {
      for (size_t sc = 0; sc < 6; sc++) {
        inst_t in = inst_make("Resize", c == 1 ? 19 : 13);
        inst_input(&in, WM_DTYPE_FLOAT, 4, x);
        if (c == 6) {
          inst_const(&in, WM_DTYPE_FLOAT, 1, n8, roi);
          attr_float(&in, "extrapolation_value", -3.5f);
        } else {
          inst_input(&in, WM_DTYPE_UNDEFINED, 0, NULL);
        }
        if (sc < 4) {
          inst_const(&in, WM_DTYPE_FLOAT, 1, n4, scales[sc]);
        } else {
          inst_input(&in, WM_DTYPE_UNDEFINED, 0, NULL);
          inst_const(&in, WM_DTYPE_INT64, 1, n4, sizes[sc - 4]);
        }
        attr_string(&in, "mode", m);
        attr_string(&in, "coordinate_transformation_mode", coords[c]);
        if (mode < 4) {
          attr_string(&in, "nearest_mode", nearests[mode]);
        }
        if (mode == 5 && sc % 2) {
          attr_float(&in, "cubic_coeff_a", -0.5f);
          attr_int(&in, "exclude_outside", 1);
        }
        must_agree(&in, bad, claimed, tried);
      }
    }
  }
  // Opset 18: axes, aspect ratio policies, antialias.
  static const char *const policies[] = {"not_larger", "not_smaller"};
  for (int mode = 0; mode < 3; mode++) {
    const char *m = mode == 0 ? "nearest" : mode == 1 ? "linear" : "cubic";
    int64_t axes[] = {3, 2}, n2[] = {2}, big[] = {1, 3, 17, 19};
    double s2[] = {0.7, 2.5}, z2[] = {4, 9}, down[] = {1, 1, 0.3, 0.45};
    inst_t in = inst_make("Resize", 18);
    inst_input(&in, WM_DTYPE_FLOAT, 4, x);
    inst_input(&in, WM_DTYPE_UNDEFINED, 0, NULL);
    inst_const(&in, WM_DTYPE_FLOAT, 1, n2, s2);
    attr_ints(&in, "axes", 2, axes);
    attr_string(&in, "mode", m);
    must_agree(&in, bad, claimed, tried);
    for (int k = 0; k < 2; k++) {
      inst_t ar = inst_make("Resize", 18);
      inst_input(&ar, WM_DTYPE_FLOAT, 4, x);
      inst_input(&ar, WM_DTYPE_UNDEFINED, 0, NULL);
      inst_input(&ar, WM_DTYPE_UNDEFINED, 0, NULL);
      inst_const(&ar, WM_DTYPE_INT64, 1, n2, z2);
      attr_ints(&ar, "axes", 2, axes);
      attr_string(&ar, "keep_aspect_ratio_policy", policies[k]);
      attr_string(&ar, "mode", m);
      must_agree(&ar, bad, claimed, tried);
    }
    inst_t aa = inst_make("Resize", 18);
    inst_input(&aa, WM_DTYPE_FLOAT, 4, big);
    inst_input(&aa, WM_DTYPE_UNDEFINED, 0, NULL);
    inst_const(&aa, WM_DTYPE_FLOAT, 1, n4, down);
    attr_string(&aa, "mode", m);
    attr_int(&aa, "antialias", 1);
    must_agree(&aa, bad, claimed, tried);
  }
  // Other ranks and dtypes; nearest on integers.
  int64_t x3[] = {2, 3, 4}, x5[] = {1, 2, 3, 4, 5}, n3[] = {3}, n5[] = {5};
  double s3[] = {1, 2, 1.5}, s5[] = {1, 1, 2, 0.5, 1.4};
  for (int mode = 0; mode < 3; mode++) {
    const char *m = mode == 0 ? "nearest" : mode == 1 ? "linear" : "cubic";
    inst_t a = inst_make("Resize", 13);
    inst_input(&a, WM_DTYPE_FLOAT, 3, x3);
    inst_input(&a, WM_DTYPE_UNDEFINED, 0, NULL);
    inst_const(&a, WM_DTYPE_FLOAT, 1, n3, s3);
    attr_string(&a, "mode", m);
    must_agree(&a, bad, claimed, tried);
    inst_t b = inst_make("Resize", 13);
    inst_input(&b, WM_DTYPE_FLOAT, 5, x5);
    inst_input(&b, WM_DTYPE_UNDEFINED, 0, NULL);
    inst_const(&b, WM_DTYPE_FLOAT, 1, n5, s5);
    attr_string(&b, "mode", m);
    must_agree(&b, bad, claimed, tried);
  }
  static const wm_dtype_t ints[] = {WM_DTYPE_UINT8, WM_DTYPE_INT64,
                                    WM_DTYPE_FLOAT16, WM_DTYPE_BOOL};
  for (size_t t = 0; t < 4; t++) {
    inst_t in = inst_make("Resize", 13);
    inst_input(&in, ints[t], 4, x);
    inst_input(&in, WM_DTYPE_UNDEFINED, 0, NULL);
    inst_const(&in, WM_DTYPE_FLOAT, 1, n4, scales[t % 3]);
    must_agree(&in, bad, claimed, tried);
  }
  // Wide rows: whole-factor fast paths and column blocks.
  int64_t wide[][4] = {{1, 2, 3, 150}, {1, 1, 4, 9}, {2, 1, 3, 131}};
  for (size_t wd = 0; wd < 3; wd++) {
    for (int mode = 0; mode < 3; mode++) {
      for (size_t c = 0; c < 6; c++) {
        inst_t in = inst_make("Resize", c == 1 ? 19 : 13);
        inst_input(&in, WM_DTYPE_FLOAT, 4, wide[wd]);
        inst_input(&in, WM_DTYPE_UNDEFINED, 0, NULL);
        inst_const(&in, WM_DTYPE_FLOAT, 1, n4, scales[0]);
        attr_string(&in, "mode",
                    mode == 0   ? "nearest"
                    : mode == 1 ? "linear"
                                : "cubic");
        attr_string(&in, "coordinate_transformation_mode", coords[c]);
        must_agree(&in, bad, claimed, tried);
      }
    }
  }
  // Resize-10 and Upsample: asymmetric coordinates, floor rounding.
  for (int mode = 0; mode < 2; mode++) {
    const char *m = mode == 0 ? "nearest" : "linear";
    inst_t r10 = inst_make("Resize", 10);
    inst_input(&r10, WM_DTYPE_FLOAT, 4, x);
    inst_const(&r10, WM_DTYPE_FLOAT, 1, n4, scales[1]);
    attr_string(&r10, "mode", m);
    must_agree(&r10, bad, claimed, tried);
    inst_t u9 = inst_make("Upsample", 9);
    inst_input(&u9, WM_DTYPE_FLOAT, 4, x);
    inst_const(&u9, WM_DTYPE_FLOAT, 1, n4, scales[0]);
    attr_string(&u9, "mode", m);
    must_agree(&u9, bad, claimed, tried);
    inst_t u7 = inst_make("Upsample", 7);
    float f[] = {1, 1, 2, 3};
    inst_input(&u7, WM_DTYPE_FLOAT, 4, x);
    attr_floats(&u7, "scales", 4, f);
    attr_string(&u7, "mode", mode == 0 ? "nearest" : "bilinear");
    must_agree(&u7, bad, claimed, tried);
  }
  // Empty output: nothing to compute.
  inst_t e = inst_make("Resize", 13);
  double zero[] = {1, 1, 0.1, 1};
  inst_input(&e, WM_DTYPE_FLOAT, 4, x);
  inst_input(&e, WM_DTYPE_UNDEFINED, 0, NULL);
  inst_const(&e, WM_DTYPE_FLOAT, 1, n4, zero);
  must_agree(&e, bad, claimed, tried);
}

// RNN, GRU and LSTM: directions, layouts, biases, sequence lengths,
// initial states, peepholes, clip, activations, GRU's
// linear_before_reset and LSTM's input_forget.
static void special_rnn(int *bad, size_t *claimed, size_t *tried) {
  static const char *const cells[] = {"RNN", "GRU", "LSTM"};
  static const char *const dirs[] = {"forward", "reverse", "bidirectional"};
  static const int64_t gates[] = {1, 3, 4};
  static const char *const acts[][3] = {{"Relu", NULL, NULL},
                                        {"HardSigmoid", "Softsign", NULL},
                                        {"Sigmoid", "ScaledTanh", "Affine"}};
  // GRU's reverse direction takes acts2[2..3]: its candidate state must be
  // continuous there (a ThresholdedRelu candidate under an unbounded
  // Softplus gate turns rounding differences into jumps).
  static const char *const acts2[] = {
      "LeakyRelu", "Elu", "Softplus", "tanh", "ThresholdedRelu", "sigmoid"};
  const int64_t t = 4, b = 3, i = 5, h = 6;
  for (size_t c = 0; c < 3; c++) {
    for (size_t d = 0; d < 3; d++) {
      for (int v = 0; v < 8; v++) {
        int64_t nd = d == 2 ? 2 : 1, layout = v % 2;
        inst_t in = inst_make(cells[c], layout ? 14 : 7 + v);
        int64_t x[] = {layout ? b : t, layout ? t : b, i};
        int64_t w[] = {nd, gates[c] * h, i}, r[] = {nd, gates[c] * h, h};
        int64_t bias[] = {nd, 2 * gates[c] * h}, nb[] = {b};
        int64_t st[] = {layout ? b : nd, layout ? nd : b, h},
                pp[] = {nd, 3 * h};
        inst_input(&in, WM_DTYPE_FLOAT, 3, x);
        inst_input(&in, WM_DTYPE_FLOAT, 3, w);
        inst_input(&in, WM_DTYPE_FLOAT, 3, r);
        inst_input(&in, v & 2 ? WM_DTYPE_FLOAT : WM_DTYPE_UNDEFINED, 2, bias);
        if (v & 4) {
          double lens[] = {4, (double)(v % 3), 3};
          inst_const(&in, WM_DTYPE_INT32, 1, nb, lens);
        } else {
          inst_input(&in, WM_DTYPE_UNDEFINED, 0, NULL);
        }
        inst_input(&in, v & 1 ? WM_DTYPE_FLOAT : WM_DTYPE_UNDEFINED, 3, st);
        if (c == 2) {
          inst_input(&in, v & 2 ? WM_DTYPE_FLOAT : WM_DTYPE_UNDEFINED, 3, st);
          inst_input(&in, v & 4 ? WM_DTYPE_FLOAT : WM_DTYPE_UNDEFINED, 2, pp);
        }
        in.n_out = c == 2 ? 3 : 2;
        attr_string(&in, "direction", dirs[d]);
        attr_int(&in, "hidden_size", h);
        if (layout) {
          attr_int(&in, "layout", 1);
        }
        if (v == 3 || v == 6) {
          attr_float(&in, "clip", 0.75f);
        }
        if (c == 1) {
          attr_int(&in, "linear_before_reset", v / 4);
        }
        if (c == 2 && v == 5) {
          attr_int(&in, "input_forget", 1);
        }
        if (v == 7) {
          const char *names[6];
          size_t n = (size_t)(c + 1) * (size_t)nd;
          for (size_t k = 0; k < n; k++) {
            names[k] = k < (size_t)c + 1 ? acts[c][k] : acts2[k];
          }
          if (c == 0) {
            names[0] = "Tanh";
          }
          attr_strings(&in, "activations", n, names);
          float alpha[] = {0.3f, 0.7f, 1.5f}, beta[] = {0.4f, -0.2f};
          attr_floats(&in, "activation_alpha", 3, alpha);
          attr_floats(&in, "activation_beta", 2, beta);
        } else if (v == 6) {
          attr_strings(&in, "activations", (size_t)c + 1, acts[c]);
        }
        must_agree(&in, bad, claimed, tried);
      }
    }
  }
  // Constant W, R and B (packed and summed at plan time) against R packed
  // per run and biases summed per run; hidden sizes across the engine's
  // tiles; batches of 1, 3 and 13 (short and full kernel heights).
  for (size_t c = 0; c < 3; c++) {
    for (size_t d = 0; d < 3; d++) {
      for (int v = 0; v < 4; v++) {
        int64_t nd = d == 2 ? 2 : 1, g = gates[c];
        int64_t bt = v == 1 ? 1 : v == 2 ? 13 : 3, hs = v == 3 ? 40 : 20;
        int64_t x[] = {5, bt, 7}, w[] = {nd, g * hs, 7}, r[] = {nd, g * hs, hs};
        int64_t bias[] = {nd, 2 * g * hs}, nb[] = {bt}, st[] = {nd, bt, hs};
        // R as trained models have it, about 1/sqrt(hidden): larger
        // recurrent gains amplify rounding past the tolerance.
        double rs = 1.0 / sqrt((double)hs);
        inst_t in = inst_make(cells[c], 14);
        inst_input(&in, WM_DTYPE_FLOAT, 3, x);
        if (v == 1) {
          inst_input(&in, WM_DTYPE_FLOAT, 3, w);
        } else {
          inst_weight(&in, WM_DTYPE_FLOAT, 3, w, 2.0);
        }
        if (v == 2) {
          inst_input(&in, WM_DTYPE_FLOAT, 3, r);
        } else {
          inst_weight(&in, WM_DTYPE_FLOAT, 3, r, rs);
        }
        if (v == 1) {
          inst_input(&in, WM_DTYPE_FLOAT, 2, bias);
        } else if (v == 2) {
          inst_input(&in, WM_DTYPE_UNDEFINED, 0, NULL);
        } else {
          inst_weight(&in, WM_DTYPE_FLOAT, 2, bias, 2.0);
        }
        if (v == 0) {
          double lens[] = {5, 2, 0};
          inst_const(&in, WM_DTYPE_INT32, 1, nb, lens);
        } else {
          inst_input(&in, WM_DTYPE_UNDEFINED, 0, NULL);
        }
        inst_input(&in, v % 2 ? WM_DTYPE_FLOAT : WM_DTYPE_UNDEFINED, 3, st);
        if (c == 2) {
          inst_input(&in, v == 3 ? WM_DTYPE_FLOAT : WM_DTYPE_UNDEFINED, 3, st);
        }
        in.n_out = c == 2 ? 3 : 2;
        attr_string(&in, "direction", dirs[d]);
        attr_int(&in, "hidden_size", hs);
        if (c == 1) {
          attr_int(&in, "linear_before_reset", (int64_t)((d + (size_t)v) % 2));
        }
        must_agree(&in, bad, claimed, tried);
      }
    }
  }
  // Only Y requested, and only Y_h; an empty batch.
  int64_t x[] = {5, 2, 3}, w[] = {1, 16, 3}, r[] = {1, 16, 4};
  for (int k = 0; k < 2; k++) {
    inst_t in = inst_make("LSTM", 14);
    inst_input(&in, WM_DTYPE_FLOAT, 3, x);
    inst_input(&in, WM_DTYPE_FLOAT, 3, w);
    inst_input(&in, WM_DTYPE_FLOAT, 3, r);
    in.n_out = k + 1;
    must_agree(&in, bad, claimed, tried);
  }
  int64_t x0[] = {5, 0, 3};
  inst_t e = inst_make("LSTM", 14);
  inst_input(&e, WM_DTYPE_FLOAT, 3, x0);
  inst_input(&e, WM_DTYPE_FLOAT, 3, w);
  inst_input(&e, WM_DTYPE_FLOAT, 3, r);
  e.n_out = 3;
  must_agree(&e, bad, claimed, tried);
}

// Attention: 3-D and 4-D, grouped heads, masks of every rank and both
// kinds, causal, past caches with the present outputs, softcap, scale,
// every qk_matmul_output mode, nonpad_kv_seqlen, windows, empty queries.
static void special_attention(int *bad, size_t *claimed, size_t *tried) {
  int64_t q4[] = {2, 4, 3, 8}, k4[] = {2, 2, 5, 8}, v4[] = {2, 2, 5, 6};
  int64_t q3[] = {2, 3, 32}, k3[] = {2, 5, 16}, v3[] = {2, 5, 12};
  int64_t pk[] = {2, 2, 4, 8}, pv[] = {2, 2, 4, 6};
  static const struct {
    wm_dtype_t dt;
    int32_t rank;
    int64_t dims[4];
    bool past;  // the mask covers the past keys too
  } masks[] = {
      {WM_DTYPE_UNDEFINED, 0, {0}, false},
      {WM_DTYPE_BOOL, 2, {3, 5}, false},
      {WM_DTYPE_FLOAT, 4, {2, 1, 3, 5}, false},
      {WM_DTYPE_FLOAT, 1, {5}, false},
      {WM_DTYPE_BOOL, 4, {2, 4, 3, 5}, false},
      {WM_DTYPE_BOOL, 2, {3, 4}, false},
      {WM_DTYPE_FLOAT, 3, {4, 3, 9}, true},
      {WM_DTYPE_BOOL, 2, {1, 7}, true},
  };
  for (int rank = 3; rank <= 4; rank++) {
    for (size_t m = 0; m < sizeof(masks) / sizeof(masks[0]); m++) {
      for (int v = 0; v < 6; v++) {
        bool past = masks[m].past || v == 5;
        if (past && !masks[m].past && masks[m].dt) {
          continue;  // the mask must cover past and new keys
        }
        inst_t in = inst_make("Attention", 23);
        inst_input(&in, WM_DTYPE_FLOAT, rank, rank == 4 ? q4 : q3);
        inst_input(&in, WM_DTYPE_FLOAT, rank, rank == 4 ? k4 : k3);
        inst_input(&in, WM_DTYPE_FLOAT, rank, rank == 4 ? v4 : v3);
        if (masks[m].dt || past) {
          inst_input(&in, masks[m].dt, masks[m].rank, masks[m].dims);
        }
        if (past) {
          inst_input(&in, WM_DTYPE_FLOAT, 4, pk);
          inst_input(&in, WM_DTYPE_FLOAT, 4, pv);
          in.n_out = 3;
        }
        if (rank == 3) {
          attr_int(&in, "q_num_heads", 4);
          attr_int(&in, "kv_num_heads", 2);
        }
        if (v == 1 || v == 5) {
          attr_int(&in, "is_causal", 1);
        }
        if (v == 2) {
          attr_float(&in, "softcap", 2.0f);
          attr_float(&in, "scale", 0.3f);
        }
        if (v == 3 || v == 4) {
          in.n_out = 4;
          attr_int(&in, "qk_matmul_output_mode", v == 3 ? 0 : 2);
        }
        if (v == 4) {
          attr_float(&in, "softcap", 1.5f);
          attr_int(&in, "softmax_precision", 11);
        }
        must_agree(&in, bad, claimed, tried);
      }
    }
  }
  for (int mode = 0; mode < 4; mode++) {
    inst_t in = inst_make("Attention", 23);
    inst_input(&in, WM_DTYPE_FLOAT, 4, q4);
    inst_input(&in, WM_DTYPE_FLOAT, 4, k4);
    inst_input(&in, WM_DTYPE_FLOAT, 4, v4);
    in.n_out = 4;
    attr_int(&in, "qk_matmul_output_mode", mode);
    attr_float(&in, "softcap", 1.0f);
    must_agree(&in, bad, claimed, tried);
  }
  // nonpad_kv_seqlen (opset 24), windows (opset 25), no queries.
  int64_t n2[] = {2};
  double np[] = {3, 5};
  inst_t nonpad = inst_make("Attention", 24);
  inst_input(&nonpad, WM_DTYPE_FLOAT, 4, q4);
  inst_input(&nonpad, WM_DTYPE_FLOAT, 4, k4);
  inst_input(&nonpad, WM_DTYPE_FLOAT, 4, v4);
  inst_input(&nonpad, WM_DTYPE_UNDEFINED, 0, NULL);
  inst_input(&nonpad, WM_DTYPE_UNDEFINED, 0, NULL);
  inst_input(&nonpad, WM_DTYPE_UNDEFINED, 0, NULL);
  inst_const(&nonpad, WM_DTYPE_INT64, 1, n2, np);
  attr_int(&nonpad, "is_causal", 1);
  must_agree(&nonpad, bad, claimed, tried);
  inst_t win = inst_make("Attention", 25);
  inst_input(&win, WM_DTYPE_FLOAT, 4, q4);
  inst_input(&win, WM_DTYPE_FLOAT, 4, k4);
  inst_input(&win, WM_DTYPE_FLOAT, 4, v4);
  attr_int(&win, "left_window_size", 1);
  attr_int(&win, "right_window_size", 2);
  try_special(&win, bad, claimed, tried);
  // More scores than the plan holds at once: blocks of query rows with a
  // shorter last one, fewer (batch, head) pairs per pass than there are;
  // causal, 4-D; then 3-D with a past whose present outputs are not asked
  // for.
  int64_t bq[] = {1, 2, 2100, 4}, bk[] = {1, 1, 2048, 4};
  inst_t many = inst_make("Attention", 23);
  inst_input(&many, WM_DTYPE_FLOAT, 4, bq);
  inst_input(&many, WM_DTYPE_FLOAT, 4, bk);
  inst_input(&many, WM_DTYPE_FLOAT, 4, bk);
  attr_int(&many, "is_causal", 1);
  must_agree(&many, bad, claimed, tried);
  int64_t bq3[] = {1, 2100, 8}, bk3[] = {1, 2000, 4}, bp[] = {1, 1, 48, 4};
  inst_t many3 = inst_make("Attention", 23);
  inst_input(&many3, WM_DTYPE_FLOAT, 3, bq3);
  inst_input(&many3, WM_DTYPE_FLOAT, 3, bk3);
  inst_input(&many3, WM_DTYPE_FLOAT, 3, bk3);
  inst_input(&many3, WM_DTYPE_UNDEFINED, 0, NULL);
  inst_input(&many3, WM_DTYPE_FLOAT, 4, bp);
  inst_input(&many3, WM_DTYPE_FLOAT, 4, bp);
  attr_int(&many3, "q_num_heads", 2);
  attr_int(&many3, "kv_num_heads", 1);
  must_agree(&many3, bad, claimed, tried);
  int64_t q0[] = {2, 4, 0, 8};
  inst_t empty = inst_make("Attention", 23);
  inst_input(&empty, WM_DTYPE_FLOAT, 4, q0);
  inst_input(&empty, WM_DTYPE_FLOAT, 4, k4);
  inst_input(&empty, WM_DTYPE_FLOAT, 4, v4);
  empty.n_out = 3;
  must_agree(&empty, bad, claimed, tried);
}

WM_TEST(attribute_driven_instances_agree_with_ref_where_claimed) {
  WM_CHECK(cpu_be != NULL);
  int bad = 0;
  size_t claimed = 0, tried = 0;
  special_pools(&bad, &claimed, &tried);
  special_data(&bad, &claimed, &tried);
  special_nn(&bad, &claimed, &tried);
  special_shape(&bad, &claimed, &tried);
  special_reduce(&bad, &claimed, &tried);
  special_resize(&bad, &claimed, &tried);
  special_rnn(&bad, &claimed, &tried);
  special_attention(&bad, &claimed, &tried);
  printf("  %zu attribute-driven instances tried, %zu claimed and equal\n",
         tried, claimed);
  WM_CHECK_INT_EQ(bad, 0);
}

// The host's thread count reaches the plugin's features and devices.
// The fused operators of the "wmap" domain: every activation on each,
// with and without the optional inputs, on the GEMM and depthwise paths.
WM_TEST(fused_ops_agree_with_ref) {
  WM_CHECK(cpu_be != NULL);
  static const char *const acts[] = {
      "",          "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid",
      "HardSwish", "Tanh", "Silu", "Gelu",      "GeluTanh"};
  static const float params[][2] = {
      {0, 0}, {0, 0}, {-0.5f, 0.6f}, {0.2f, 0}, {0, 0}, {0.3f, 0.4f},
      {0, 0}, {0, 0}, {0, 0},        {0, 0},    {0, 0}};
  static const size_t n_params[] = {0, 0, 2, 1, 0, 2, 0, 0, 0, 0, 0};
  int bad = 0;
  for (size_t a = 0; a < sizeof(acts) / sizeof(acts[0]); a++) {
    for (int form = 0; form < 2; form++) {
      // FusedConv: 3x3 pad 1 stride 1+form, group 1; 1x1; depthwise.
      for (int kind = 0; kind < 3; kind++) {
        inst_t in = inst_make("FusedConv", 13);
        in.domain = "wmap";
        int64_t s = 1 + form;
        int64_t x[4] = {1, 4, 7, 6};
        int64_t wc = kind == 2 ? 1 : 4, kk = kind == 1 ? 1 : 3;
        int64_t m = kind == 2 ? 4 : 5;
        int64_t w[4] = {m, wc, kk, kk}, b[1] = {m};
        int64_t pad = kk == 3 ? 1 : 0;
        int64_t oh = (7 + 2 * pad - kk) / s + 1,
                ow = (6 + 2 * pad - kk) / s + 1;
        int64_t z[4] = {1, m, oh, ow};
        inst_input(&in, WM_DTYPE_FLOAT, 4, x);
        inst_input(&in, WM_DTYPE_FLOAT, 4, w);
        inst_input(&in, form ? WM_DTYPE_FLOAT : WM_DTYPE_UNDEFINED, 1, b);
        inst_input(&in, WM_DTYPE_FLOAT, 4, z);
        int64_t strides[2] = {s, s}, pads[4] = {pad, pad, pad, pad};
        attr_ints(&in, "strides", 2, strides);
        attr_ints(&in, "pads", 4, pads);
        if (kind == 2) {
          attr_int(&in, "group", 4);
        }
        attr_string(&in, "activation", acts[a]);
        if (n_params[a]) {
          attr_floats(&in, "activation_params", n_params[a], params[a]);
        }
        bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
      }
      inst_t g = inst_make("FusedGemm", 13);
      g.domain = "wmap";
      int64_t ga[2] = {9, 13}, gb[2] = {21, 13}, gc[1] = {21};
      inst_input(&g, WM_DTYPE_FLOAT, 2, ga);
      inst_input(&g, WM_DTYPE_FLOAT, 2, gb);
      inst_input(&g, form ? WM_DTYPE_FLOAT : WM_DTYPE_UNDEFINED, 1, gc);
      attr_int(&g, "transB", 1);
      attr_float(&g, "alpha", 0.75f);
      attr_string(&g, "activation", acts[a]);
      if (n_params[a]) {
        attr_floats(&g, "activation_params", n_params[a], params[a]);
      }
      bad += !expect_claimed(&g, WM_IMPL_NATIVE_KERNEL);
      inst_t mm = inst_make("FusedMatMul", 13);
      mm.domain = "wmap";
      int64_t ma[3] = {2, 7, 11}, mb[2] = {11, 19}, mbias[1] = {19};
      inst_input(&mm, WM_DTYPE_FLOAT, 3, ma);
      inst_input(&mm, WM_DTYPE_FLOAT, 2, mb);
      if (form) {
        inst_input(&mm, WM_DTYPE_FLOAT, 1, mbias);
      }
      attr_string(&mm, "activation", acts[a]);
      if (n_params[a]) {
        attr_floats(&mm, "activation_params", n_params[a], params[a]);
      }
      bad += !expect_claimed(&mm, WM_IMPL_NATIVE_KERNEL);
    }
  }
  // An activation the backend does not know is refused, not run.
  inst_t in = inst_make("FusedMatMul", 13);
  in.domain = "wmap";
  int64_t a2[2] = {3, 4}, b2[2] = {4, 5};
  inst_input(&in, WM_DTYPE_FLOAT, 2, a2);
  inst_input(&in, WM_DTYPE_FLOAT, 2, b2);
  attr_string(&in, "activation", "Mish");
  uint32_t impl;
  outcome_t o = run_instance(&in, &impl);
  WM_CHECK(o == OUT_REFUSED || o == OUT_INVALID);
  WM_CHECK_INT_EQ(bad, 0);
}

// wmap.Elementwise programs: every step, contiguous, per-channel, scalar
// and lower-rank inputs, constants; an unknown step is not run.
WM_TEST(elementwise_programs_agree_with_ref) {
  WM_CHECK(cpu_be != NULL);
  int bad = 0;
  static const char *const ops[] = {
      "Mul", "Add",  "Sigmoid", "Mul", "Sub", "Tanh",       "Abs",  "Add",
      "Log", "Sqrt", "Div",     "Neg", "Exp", "Reciprocal", "Relu", "Erf"};
  // Operands: inputs 0..2, steps from 3, constants -1, -2.
  static const int64_t args[] = {0,  -1, 3,  1, 4,  0,  5,  0,  6,  2,  7,
                                 0,  8,  0,  9, -2, 10, 0,  10, 0,  11, 12,
                                 13, 0,  14, 0, 15, 0,  16, 0,  17, 0};
  static const float consts[] = {0.5f, 1.0f};
  int64_t x[4] = {2, 3, 4, 5}, c[4] = {1, 3, 1, 1}, sc[1] = {1};
  inst_t in = inst_make("Elementwise", 1);
  in.domain = "wmap";
  inst_input(&in, WM_DTYPE_FLOAT, 4, x);
  inst_input(&in, WM_DTYPE_FLOAT, 4, c);
  inst_input(&in, WM_DTYPE_FLOAT, 0, sc);
  attr_strings(&in, "ops", 16, ops);
  attr_ints(&in, "args", 32, args);
  attr_floats(&in, "constants", 2, consts);
  bad += !expect_claimed(&in, WM_IMPL_NATIVE_KERNEL);
  // A lower-rank input broadcast into a longer output (odd sizes, more
  // than one block).
  static const char *const ops2[] = {"Add", "Mul"};
  static const int64_t args2[] = {0, 1, 2, 0};
  int64_t a[1] = {37}, b[3] = {3, 11, 37};
  inst_t in2 = inst_make("Elementwise", 1);
  in2.domain = "wmap";
  inst_input(&in2, WM_DTYPE_FLOAT, 1, a);
  inst_input(&in2, WM_DTYPE_FLOAT, 3, b);
  attr_strings(&in2, "ops", 2, ops2);
  attr_ints(&in2, "args", 4, args2);
  bad += !expect_claimed(&in2, WM_IMPL_NATIVE_KERNEL);
  // An unknown step is refused, not run.
  static const char *const ops3[] = {"Mish"};
  static const int64_t args3[] = {0, 0};
  inst_t in3 = inst_make("Elementwise", 1);
  in3.domain = "wmap";
  inst_input(&in3, WM_DTYPE_FLOAT, 1, a);
  attr_strings(&in3, "ops", 1, ops3);
  attr_ints(&in3, "args", 2, args3);
  uint32_t impl;
  outcome_t o = run_instance(&in3, &impl);
  WM_CHECK(o == OUT_REFUSED || o == OUT_INVALID);
  WM_CHECK_INT_EQ(bad, 0);
}

WM_TEST(host_thread_count_is_used) {
  WM_CHECK(plugin_handle != NULL);
  void *sym = dlsym(plugin_handle, WM_PLUGIN_QUERY_SYMBOL);
  WM_CHECK(sym != NULL);
  wm_plugin_query_fn query;
  memcpy(&query, &sym, sizeof(query));
  // The plugin keeps the host table until unload: static storage.
  static wm_host_api three = {.struct_size = sizeof(wm_host_api),
                              .num_threads = 3};
  static wm_host_api all = {.struct_size = sizeof(wm_host_api)};
  const wm_plugin_api *api = NULL;
  WM_CHECK(query(WM_ABI_MAJOR, WM_ABI_MINOR, &three, &api) == NULL);
  wm_plugin_info info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  WM_CHECK(api->get_info(&info) == NULL);
  WM_CHECK_STR_EQ(info.features[1], "threads=3");
  const wm_target_desc *const *targets;
  uint32_t n;
  WM_CHECK(api->enumerate(&targets, &n) == NULL);
  wm_device *dev = NULL;
  WM_CHECK(api->device_open(targets[0], &dev) == NULL);
  api->device->device_close(dev);
  WM_CHECK(query(WM_ABI_MAJOR, WM_ABI_MINOR, &all, &api) == NULL);
  WM_CHECK(api->get_info(&info) == NULL);
  char want[32];
  snprintf(want, sizeof(want), "threads=%d", (int)wm_cpu_count());
  WM_CHECK_STR_EQ(info.features[1], want);
  wm_error *e = query(WM_ABI_MAJOR + 1, WM_ABI_MINOR, &all, &api);
  WM_CHECK(e != NULL);
  WM_CHECK_INT_EQ(api->error_code(e), WM_ERR_INCOMPATIBLE);
  api->error_destroy(e);
}

// Two nodes the plan can place only while running, each run twice with
// inputs of the same shapes and new values: y = A · float(NonZero(x))
// (the cpu MatMul must not keep B, packed from the first run's values)
// and s = Slice(v, st, st + 3) (its resolved starts change with st).
static wm_graph_t *build_value_dependent(void) {
  wm_graph_t *g = NULL;
  int32_t id, n;
  wm_status_t s = wm_graph_create("g", NULL, &g);
  if (!s) {
    s = wm_graph_set_opset(g, "", 17);
  }
  wm_shape_t xs = {.rank = 2, .dims = {2, 3}}, as = {.rank = 2, .dims = {3, 2}},
             vs = {.rank = 1, .dims = {8}}, ss = {.rank = 1, .dims = {1}};
  wm_type_t xt = wm_type_tensor(WM_DTYPE_FLOAT, &xs),
            at = wm_type_tensor(WM_DTYPE_FLOAT, &as),
            vt = wm_type_tensor(WM_DTYPE_FLOAT, &vs),
            st = wm_type_tensor(WM_DTYPE_INT64, &ss);
  const char *nz_in = "x", *nz_out = "nz", *c_in = "nz", *c_out = "b";
  const char *mm_in[2] = {"a", "b"}, *mm_out = "y";
  const char *add_in[2] = {"st", "three"}, *add_out = "en";
  const char *sl_in[3] = {"v", "st", "en"}, *sl_out = "s";
  static const int64_t one = 1;
  wm_tensor_t *three = NULL;
  wm_shape_t one_d = wm_shape_make(1, &one);
  if (!s) {
    s = wm_tensor_create(WM_DTYPE_INT64, &one_d, &three);
  }
  if (!s) {
    ((int64_t *)three->data)[0] = 3;
    s = wm_graph_add_initializer(g, "three", three, &id);
  }
  if (!s) {
    s = wm_graph_add_input(g, "x", &xt, &id);
  }
  if (!s) {
    s = wm_graph_add_input(g, "a", &at, &id);
  }
  if (!s) {
    s = wm_graph_add_input(g, "v", &vt, &id);
  }
  if (!s) {
    s = wm_graph_add_input(g, "st", &st, &id);
  }
  if (!s) {
    s = wm_graph_add_node(g, "NonZero", "", "nz", &nz_in, 1, &nz_out, 1, &n);
  }
  if (!s) {
    s = wm_graph_add_node(g, "Cast", "", "cast", &c_in, 1, &c_out, 1, &n);
  }
  if (!s) {
    s = wm_graph_add_attr_int(g, n, "to", WM_DTYPE_FLOAT);
  }
  if (!s) {
    s = wm_graph_add_node(g, "MatMul", "", "mm", mm_in, 2, &mm_out, 1, &n);
  }
  if (!s) {
    s = wm_graph_add_node(g, "Add", "", "end", add_in, 2, &add_out, 1, &n);
  }
  if (!s) {
    s = wm_graph_add_node(g, "Slice", "", "sl", sl_in, 3, &sl_out, 1, &n);
  }
  if (!s) {
    s = wm_graph_add_output(g, "y", NULL, &id);
  }
  if (!s) {
    s = wm_graph_add_output(g, "s", NULL, &id);
  }
  if (s) {
    printf("  cannot build the graph: %s\n", wm_status_message(s));
    wm_status_free(s);
    wm_graph_destroy(g);
    return NULL;
  }
  return g;
}

WM_TEST(value_dependent_instances_are_planned_for_their_values) {
  WM_CHECK(cpu_be != NULL);
  wm_graph_t *g = build_value_dependent();
  WM_CHECK(g);
  wm_session_options_t o = {
      .backends = &cpu_be, .backend_count = 1, .fallback = ref_be};
  wm_session_t *ss = NULL;
  WM_CHECK_OK(wm_session_create_placed(g, &o, &ss));
  static const float xv[2][6] = {{1, 0, 0, 0, 1, 0}, {0, 0, 1, 1, 0, 0}};
  static const float av[6] = {1, 2, 3, 4, 5, 6};
  // A · [[r0, r1], [c0, c1]] for the nonzeros (r, c) of x.
  static const float want_y[2][6] = {{0, 3, 0, 7, 0, 11}, {4, 1, 8, 3, 12, 5}};
  static const int64_t starts[2] = {1, 4};
  wm_shape_t xs = {.rank = 2, .dims = {2, 3}}, as = {.rank = 2, .dims = {3, 2}},
             vs = {.rank = 1, .dims = {8}}, sts = {.rank = 1, .dims = {1}};
  for (int r = 0; r < 2; r++) {
    wm_tensor_t *in[4] = {NULL}, *out[2] = {NULL};
    WM_CHECK_OK(wm_tensor_create(WM_DTYPE_FLOAT, &xs, &in[0]));
    WM_CHECK_OK(wm_tensor_create(WM_DTYPE_FLOAT, &as, &in[1]));
    WM_CHECK_OK(wm_tensor_create(WM_DTYPE_FLOAT, &vs, &in[2]));
    WM_CHECK_OK(wm_tensor_create(WM_DTYPE_INT64, &sts, &in[3]));
    memcpy(in[0]->data, xv[r], sizeof(xv[r]));
    memcpy(in[1]->data, av, sizeof(av));
    for (int k = 0; k < 8; k++) {
      ((float *)in[2]->data)[k] = (float)(10 * k);
    }
    ((int64_t *)in[3]->data)[0] = starts[r];
    const char *names[4] = {"x", "a", "v", "st"};
    WM_CHECK_OK(
        wm_session_run(ss, names, (const wm_tensor_t *const *)in, 4, out));
    WM_CHECK_INT_EQ(out[0]->count, 6);
    for (int k = 0; k < 6; k++) {
      WM_CHECK_DBL_NEAR(((float *)out[0]->data)[k], want_y[r][k], 0);
    }
    WM_CHECK_INT_EQ(out[1]->count, 3);
    for (int k = 0; k < 3; k++) {
      WM_CHECK_DBL_NEAR(((float *)out[1]->data)[k], 10.0 * (starts[r] + k), 0);
    }
    // Both run on cpu, planned while running.
    for (size_t i = 0; i < wm_session_node_count(ss); i++) {
      const wm_placement_t *p = wm_session_placement(ss, i);
      if (strcmp(p->op_type, "MatMul") == 0 ||
          strcmp(p->op_type, "Slice") == 0) {
        WM_CHECK_STR_EQ(p->backend, "cpu");
      }
    }
    for (int k = 0; k < 4; k++) {
      wm_tensor_destroy(in[k]);
    }
    wm_tensor_destroy(out[0]);
    wm_tensor_destroy(out[1]);
  }
  wm_session_destroy(ss);
  wm_graph_destroy(g);
}

// The map's query of a node sees the tensors of Constant nodes as it sees
// initializers: a Slice whose bounds are Constant nodes is resolved and
// claimed.
WM_TEST(node_queries_see_constant_nodes) {
  WM_CHECK(cpu_be != NULL);
  wm_graph_t *g = NULL;
  int32_t id, n;
  WM_CHECK_OK(wm_graph_create("g", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 13));
  wm_shape_t xs = {.rank = 2, .dims = {4, 6}}, ys = {.rank = 2, .dims = {2, 6}};
  wm_type_t xt = wm_type_tensor(WM_DTYPE_FLOAT, &xs),
            yt = wm_type_tensor(WM_DTYPE_FLOAT, &ys);
  WM_CHECK_OK(wm_graph_add_input(g, "x", &xt, &id));
  static const char *const names[2] = {"st", "en"};
  for (int k = 0; k < 2; k++) {
    static const int64_t one = 1;
    wm_shape_t s1 = wm_shape_make(1, &one);
    wm_tensor_t *t = NULL;
    WM_CHECK_OK(wm_tensor_create(WM_DTYPE_INT64, &s1, &t));
    ((int64_t *)t->data)[0] = k ? 3 : 1;
    WM_CHECK_OK(wm_graph_add_node(g, "Constant", "", names[k], NULL, 0,
                                  &names[k], 1, &n));
    WM_CHECK_OK(wm_graph_add_attr_tensor(g, n, "value", t));
    // As the graph's check infers it.
    int32_t v = wm_graph_find_value(g, names[k]);
    WM_CHECK(v >= 0);
    if (v >= 0) {
      g->values[v].type = wm_type_tensor(WM_DTYPE_INT64, &s1);
    }
  }
  const char *in[3] = {"x", "st", "en"}, *out = "y";
  WM_CHECK_OK(wm_graph_add_node(g, "Slice", "", "sl", in, 3, &out, 1, &n));
  WM_CHECK_OK(wm_graph_add_output(g, "y", &yt, &id));
  wm_op_support sup;
  WM_CHECK_OK(wm_node_query(g, (size_t)n, NULL, NULL, cpu_be, &sup));
  WM_CHECK_INT_EQ(sup.level, WM_SUPPORT_SUPPORTED);
  wm_graph_destroy(g);
}

WM_TEST(summary) {
  for (size_t t = 0; t < N_TABLES; t++) {
    for (const cpu_kernel_t *k = all_tables[t]; k->op_type; k++) {
      if (!was_agreed(k->op_type)) {
        printf("  note: no instance of %s (since %d) was claimed\n", k->op_type,
               (int)k->since);
      }
    }
  }
  printf("  instances: %zu agree, %zu refused, %zu invalid, %zu failed\n",
         counts[OUT_AGREES], counts[OUT_REFUSED], counts[OUT_INVALID],
         counts[OUT_FAILED]);
  WM_CHECK_INT_EQ(counts[OUT_FAILED], 0);
}

int main(void) {
  wm_status_t s = open_backends();
  if (s) {
    printf("cannot open the backends: %s\n", wm_status_message(s));
    wm_status_free(s);
  }
  static const wm_test_case_t cases[] = {
      WM_CASE(plugin_describes_itself_and_the_host),
      WM_CASE(collective_tier_runs_on_device_buffers_and_checks_views),
      WM_CASE(query_refuses_with_reasons),
      WM_CASE(op_run_checks_views_against_the_plan),
      WM_CASE(compile_and_launch_run_format_c),
      WM_CASE(bad_values_in_tensors_are_errors),
      WM_CASE(matmul_agrees_with_ref),
      WM_CASE(gemm_agrees_with_ref_for_every_flag_combination),
      WM_CASE(conv_agrees_with_ref),
      WM_CASE(depthwise_bands_agree_with_ref),
      WM_CASE(transposed_convs_agree_with_ref),
      WM_CASE(shifted_convs_agree_with_ref),
      WM_CASE(winograd_convs_agree_with_ref),
      WM_CASE(depth_padded_convs_agree_with_ref),
      WM_CASE(wide_max_pools_agree_with_ref),
      WM_CASE(wide_depthwise_agree_with_ref),
      WM_CASE(random_convs_agree_with_ref),
      WM_CASE(random_conv_transposes_agree_with_ref),
      WM_CASE(every_table_entry_agrees_with_ref_where_claimed),
      WM_CASE(attribute_driven_instances_agree_with_ref_where_claimed),
      WM_CASE(fused_ops_agree_with_ref),
      WM_CASE(elementwise_programs_agree_with_ref),
      WM_CASE(host_thread_count_is_used),
      WM_CASE(depthwise_channel_blocks_agree_with_ref),
      WM_CASE(value_dependent_instances_are_planned_for_their_values),
      WM_CASE(node_queries_see_constant_nodes),
      WM_CASE(summary),
      {NULL, NULL}};
  int rc = wm_test_main(cases);
  wm_backend_destroy(cpu_be);
  wm_backend_destroy(ref_be);
  if (plugin_handle) {
    dlclose(plugin_handle);
  }
  return rc;
}
