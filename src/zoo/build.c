// Builder helpers of the zoo: deterministic weights seeded from tensor
// names (so a weight does not depend on build order) and short node
// constructors with a sticky error.
#include "zoo/build.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void wm_zoo_fail(wm_zoo_builder_t *b, wm_status_t s) {
  if (!s) {
    return;
  }
  if (b->err) {
    wm_status_free(s);
    return;
  }
  b->err = s;
}

const char *wm_zoo_name(wm_zoo_builder_t *b, const char *fmt, ...) {
  if (b->err) {
    return "";
  }
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof(buf)) {
    wm_zoo_fail(b, WM_ERROR(INTERNAL, "zoo name too long: \"%s\"", fmt));
    return "";
  }
  const char *s = wm_graph_intern(b->g, buf);
  if (!s) {
    wm_zoo_fail(b, WM_ERROR(RESOURCE_EXHAUSTED, "out of memory"));
    return "";
  }
  return s;
}

// splitmix64: a fast generator whose every seed gives a good stream.
static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// FNV-1a of |name|: the seed of the tensor of that name.
static uint64_t name_seed(const char *name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
    h = (h ^ *p) * 0x100000001b3ULL;
  }
  return h;
}

// Creates a float tensor of shape |dims|, or records the failure.
static wm_tensor_t *new_tensor(wm_zoo_builder_t *b, wm_dtype_t dtype,
                               int32_t rank, const int64_t *dims) {
  if (b->err) {
    return NULL;
  }
  wm_shape_t shape = wm_shape_make(rank, dims);
  wm_tensor_t *t = NULL;
  wm_zoo_fail(b, wm_tensor_create(dtype, &shape, &t));
  return t;
}

static void add_init(wm_zoo_builder_t *b, const char *name, wm_tensor_t *t) {
  if (t) {
    wm_zoo_fail(b, wm_graph_add_initializer(b->g, name, t, NULL));
  }
}

void wm_zoo_uniform(wm_zoo_builder_t *b, const char *name, int32_t rank,
                    const int64_t *dims, double lo, double hi) {
  wm_tensor_t *t = new_tensor(b, WM_DTYPE_FLOAT, rank, dims);
  if (!t) {
    return;
  }
  uint64_t state = name_seed(name);
  float *data = t->data;
  for (size_t i = 0; i < t->count; i++) {
    double u = (double)(splitmix64(&state) >> 11) * 0x1.0p-53;
    data[i] = (float)(lo + (hi - lo) * u);
  }
  add_init(b, name, t);
}

void wm_zoo_random(wm_zoo_builder_t *b, const char *name, int32_t rank,
                   const int64_t *dims, double std) {
  double a = std * sqrt(3.0);  // uniform on [-a, a) has this deviation
  wm_zoo_uniform(b, name, rank, dims, -a, a);
}

void wm_zoo_fill(wm_zoo_builder_t *b, const char *name, int32_t rank,
                 const int64_t *dims, double value) {
  wm_tensor_t *t = new_tensor(b, WM_DTYPE_FLOAT, rank, dims);
  if (!t) {
    return;
  }
  float *data = t->data;
  for (size_t i = 0; i < t->count; i++) {
    data[i] = (float)value;
  }
  add_init(b, name, t);
}

void wm_zoo_scalar(wm_zoo_builder_t *b, const char *name, double value) {
  if (!b->err && wm_graph_find_value(b->g, name) < 0) {
    wm_zoo_fill(b, name, 0, NULL, value);
  }
}

void wm_zoo_ints(wm_zoo_builder_t *b, const char *name, size_t n,
                 const int64_t *vals) {
  if (b->err || wm_graph_find_value(b->g, name) >= 0) {
    return;
  }
  int64_t dim = (int64_t)n;
  wm_tensor_t *t = new_tensor(b, WM_DTYPE_INT64, 1, &dim);
  if (t) {
    memcpy(t->data, vals, n * sizeof(int64_t));
  }
  add_init(b, name, t);
}

void wm_zoo_input(wm_zoo_builder_t *b, const char *name, wm_dtype_t dtype,
                  int32_t rank, const int64_t *dims) {
  if (b->err) {
    return;
  }
  wm_shape_t shape = wm_shape_make(rank, dims);
  wm_type_t type = wm_type_tensor(dtype, &shape);
  wm_zoo_fail(b, wm_graph_add_input(b->g, name, &type, NULL));
}

void wm_zoo_output(wm_zoo_builder_t *b, const char *name, wm_dtype_t dtype,
                   int32_t rank, const int64_t *dims) {
  if (!b->err) {
    wm_shape_t shape = wm_shape_make(rank, dims);
    wm_type_t type = wm_type_tensor(dtype, &shape);
    wm_zoo_fail(b, wm_graph_add_output(b->g, name, &type, NULL));
  }
}

int32_t wm_zoo_node(wm_zoo_builder_t *b, const char *op, const char *name,
                    const char *const *inputs, int32_t n_in) {
  return wm_zoo_node_out(b, op, name, name, inputs, n_in);
}

int32_t wm_zoo_node_out(wm_zoo_builder_t *b, const char *op, const char *name,
                        const char *out, const char *const *inputs,
                        int32_t n_in) {
  if (b->err) {
    return -1;
  }
  const char *outs[] = {out};
  int32_t node = -1;
  wm_zoo_fail(
      b, wm_graph_add_node(b->g, op, "", name, inputs, n_in, outs, 1, &node));
  return b->err ? -1 : node;
}

void wm_zoo_attr_int(wm_zoo_builder_t *b, int32_t node, const char *name,
                     int64_t v) {
  if (!b->err) {
    wm_zoo_fail(b, wm_graph_add_attr_int(b->g, node, name, v));
  }
}

void wm_zoo_attr_float(wm_zoo_builder_t *b, int32_t node, const char *name,
                       float v) {
  if (!b->err) {
    wm_zoo_fail(b, wm_graph_add_attr_float(b->g, node, name, v));
  }
}

void wm_zoo_attr_ints(wm_zoo_builder_t *b, int32_t node, const char *name,
                      const int64_t *v, size_t n) {
  if (!b->err) {
    wm_zoo_fail(b, wm_graph_add_attr_ints(b->g, node, name, v, n));
  }
}

const char *wm_zoo_binary(wm_zoo_builder_t *b, const char *op, const char *name,
                          const char *x, const char *y) {
  const char *in[] = {x, y};
  wm_zoo_node(b, op, name, in, 2);
  return name;
}

const char *wm_zoo_unary(wm_zoo_builder_t *b, const char *op, const char *name,
                         const char *x) {
  const char *in[] = {x};
  wm_zoo_node(b, op, name, in, 1);
  return name;
}

const char *wm_zoo_linear(wm_zoo_builder_t *b, const char *name, const char *x,
                          int64_t in, int64_t out, double std) {
  const char *w = wm_zoo_name(b, "%s.weight", name);
  const char *bias = wm_zoo_name(b, "%s.bias", name);
  int64_t wd[] = {in, out};
  wm_zoo_random(b, w, 2, wd, std);
  wm_zoo_fill(b, bias, 1, &out, 0.0);
  const char *mm =
      wm_zoo_binary(b, "MatMul", wm_zoo_name(b, "%s.matmul", name), x, w);
  return wm_zoo_binary(b, "Add", name, mm, bias);
}

const char *wm_zoo_layernorm(wm_zoo_builder_t *b, const char *name,
                             const char *x, int64_t dim, float eps) {
  const char *w = wm_zoo_name(b, "%s.weight", name);
  const char *bias = wm_zoo_name(b, "%s.bias", name);
  wm_zoo_fill(b, w, 1, &dim, 1.0);
  wm_zoo_fill(b, bias, 1, &dim, 0.0);
  const char *in[] = {x, w, bias};
  int32_t n = wm_zoo_node(b, "LayerNormalization", name, in, 3);
  wm_zoo_attr_int(b, n, "axis", -1);
  wm_zoo_attr_float(b, n, "epsilon", eps);
  return name;
}

const char *wm_zoo_reshape(wm_zoo_builder_t *b, const char *name, const char *x,
                           int32_t rank, const int64_t *dims) {
  const char *shape = wm_zoo_name(b, "%s.shape", name);
  wm_zoo_ints(b, shape, (size_t)rank, dims);
  return wm_zoo_binary(b, "Reshape", name, x, shape);
}

const char *wm_zoo_transpose(wm_zoo_builder_t *b, const char *name,
                             const char *x, int32_t rank, const int64_t *perm) {
  const char *in[] = {x};
  int32_t n = wm_zoo_node(b, "Transpose", name, in, 1);
  wm_zoo_attr_ints(b, n, "perm", perm, (size_t)rank);
  return name;
}
