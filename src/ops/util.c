// Helpers shared by the operator files: errors, axes, broadcasting,
// reading shape-like inputs, and the common shape rules.
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

wm_status_t wm_op_error(const wm_op_ctx_t *ctx, wm_status_code_t code,
                        const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wm_status_t s = wm_status_makev(code, __FILE__, __LINE__, fmt, ap);
  va_end(ap);
  return wm_status_annotate(s, "node \"%s\" (%s)", ctx->label,
                            ctx->node->op_type);
}

bool wm_op_has_input(const wm_op_ctx_t *ctx, int32_t i) {
  return i >= 0 && i < ctx->n_in && ctx->node->inputs[i] >= 0;
}

bool wm_op_has_output(const wm_op_ctx_t *ctx, int32_t i) {
  return i >= 0 && i < ctx->n_out && ctx->node->outputs[i] >= 0;
}

static const wm_shape_t unknown_shape = {-1, {0}};

const wm_shape_t *wm_op_in_shape(const wm_op_ctx_t *ctx, int32_t i) {
  return wm_op_has_input(ctx, i) ? &ctx->in_types[i].shape : &unknown_shape;
}

wm_dtype_t wm_op_in_dtype(const wm_op_ctx_t *ctx, int32_t i) {
  return wm_op_has_input(ctx, i) ? ctx->in_types[i].dtype : WM_DTYPE_UNDEFINED;
}

void wm_op_set_out(wm_op_ctx_t *ctx, int32_t i, wm_dtype_t dtype,
                   const wm_shape_t *shape) {
  if (i < 0 || i >= ctx->n_out) {
    return;
  }
  ctx->out_types[i] = wm_type_tensor(dtype, shape);
}

void wm_op_set_out_unknown(wm_op_ctx_t *ctx, int32_t i, wm_dtype_t dtype) {
  wm_shape_t s = {-1, {0}};
  wm_op_set_out(ctx, i, dtype, &s);
}

wm_status_t wm_op_axis(const wm_op_ctx_t *ctx, int64_t axis, int32_t rank,
                       const char *what, int32_t *out_axis) {
  if (axis < -(int64_t)rank || axis >= rank) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "%s %lld is out of range for rank %d", what,
                       (long long)axis, rank);
  }
  *out_axis = (int32_t)(axis < 0 ? axis + rank : axis);
  return NULL;
}

wm_status_t wm_op_input_ints(const wm_op_ctx_t *ctx, int32_t i,
                             int64_t **out_values, size_t *out_count,
                             bool *out_known) {
  *out_values = NULL;
  *out_count = 0;
  *out_known = false;
  if (!wm_op_has_input(ctx, i) || !ctx->in[i]) {
    return NULL;
  }
  const wm_tensor_t *t = ctx->in[i];
  if (!wm_dtype_is_int(t->dtype)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d must be an integer tensor, got %s", i,
                       wm_dtype_name(t->dtype));
  }
  int64_t *v = wm_malloc(t->count * sizeof(int64_t));
  if (!v) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t k = 0; k < t->count; k++) {
    v[k] = wm_tensor_get_i64(t, k);
  }
  *out_values = v;
  *out_count = t->count;
  *out_known = true;
  return NULL;
}

double wm_op_input_scalar(const wm_op_ctx_t *ctx, int32_t i, double def) {
  if (!wm_op_has_input(ctx, i) || !ctx->in[i] || ctx->in[i]->count == 0) {
    return def;
  }
  return wm_tensor_get_f64(ctx->in[i], 0);
}

void wm_shape_strides(const wm_shape_t *shape, int64_t strides[WM_MAX_RANK]) {
  int64_t s = 1;
  for (int32_t d = shape->rank - 1; d >= 0; d--) {
    strides[d] = s;
    // Only an empty tensor's dims overflow (one of them is 0): no element
    // is addressed, so the strides past that point are 0.
    if (!wm_checked_mul_i64(s, shape->dims[d], &s)) {
      s = 0;
    }
  }
}

void wm_broadcast_strides(const wm_shape_t *in, const wm_shape_t *out,
                          int64_t strides[WM_MAX_RANK]) {
  int64_t own[WM_MAX_RANK];
  wm_shape_strides(in, own);
  int32_t lead = out->rank - in->rank;
  for (int32_t d = 0; d < out->rank; d++) {
    int32_t k = d - lead;
    strides[d] = (k < 0 || in->dims[k] == 1) ? 0 : own[k];
  }
}

size_t wm_broadcast_offset(const wm_shape_t *out,
                           const int64_t strides[WM_MAX_RANK], size_t i) {
  size_t off = 0;
  for (int32_t d = out->rank - 1; d >= 0; d--) {
    size_t dim = (size_t)out->dims[d];
    off += (i % dim) * (size_t)strides[d];
    i /= dim;
  }
  return off;
}

wm_status_t wm_op_infer_broadcast(wm_op_ctx_t *ctx, wm_dtype_t dtype) {
  wm_shape_t shape = {0, {0}};
  bool first = true;
  for (int32_t i = 0; i < ctx->n_in; i++) {
    if (!wm_op_has_input(ctx, i)) {
      continue;
    }
    const wm_shape_t *s = &ctx->in_types[i].shape;
    if (first) {
      shape = *s;
      first = false;
      continue;
    }
    wm_status_t st = wm_shape_broadcast(&shape, s, &shape);
    if (st) {
      return wm_status_annotate(st, "node \"%s\" (%s): input %d", ctx->label,
                                ctx->node->op_type, i);
    }
  }
  wm_op_set_out(ctx, 0,
                dtype != WM_DTYPE_UNDEFINED ? dtype : wm_op_in_dtype(ctx, 0),
                &shape);
  return NULL;
}

wm_status_t wm_op_infer_same(wm_op_ctx_t *ctx) {
  if (ctx->n_out > 0) {
    ctx->out_types[0] = ctx->in_types[0];
  }
  return NULL;
}

void wm_op_cost(const wm_op_def_t *def, const wm_op_ctx_t *ctx,
                wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  if (def && def->cost) {
    def->cost(ctx, out);
    return;
  }
  for (int32_t i = 0; i < ctx->n_out; i++) {
    size_t n;
    if (wm_op_has_output(ctx, i) &&
        wm_shape_numel(&ctx->out_types[i].shape, &n)) {
      out->flops += (double)n;
    }
  }
}

void wm_op_cost_zero(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  (void)ctx;
  memset(out, 0, sizeof(*out));
}

// ---------------------------------------------------------------- random

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t rotl64(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(wm_op_rng_t *r) {
  uint64_t result = rotl64(r->s[1] * 5, 7) * 9, t = r->s[1] << 17;
  r->s[2] ^= r->s[0];
  r->s[3] ^= r->s[1];
  r->s[1] ^= r->s[2];
  r->s[0] ^= r->s[3];
  r->s[2] ^= t;
  r->s[3] = rotl64(r->s[3], 45);
  return result;
}

double wm_op_rng_uniform(wm_op_rng_t *r) {
  return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

double wm_op_rng_normal(wm_op_rng_t *r) {
  double u1 = wm_op_rng_uniform(r), u2 = wm_op_rng_uniform(r);
  return sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
}

void wm_op_rng_seed(wm_op_rng_t *r, const wm_op_ctx_t *ctx) {
  static _Atomic uint64_t counter = 0;
  uint64_t x;
  const wm_attr_t *a = wm_node_attr(ctx->node, "seed");
  if (a && a->type == WM_ATTR_FLOAT) {  // Random*, Bernoulli, Multinomial
    double seed = a->f;
    memcpy(&x, &seed, sizeof(x));
  } else if (a && a->type == WM_ATTR_INT) {  // Dropout
    x = (uint64_t)a->i;
  } else {
    x = wm_now_ns() ^ (++counter * 0x2545f4914f6cdd1dull);
  }
  for (int i = 0; i < 4; i++) {
    r->s[i] = splitmix64(&x);
  }
}

// ------------------------------------------------------------ attributes

static wm_status_t attr_check(const wm_op_ctx_t *ctx, const wm_attr_t *a,
                              wm_attr_type_t want) {
  if (a && a->type != want) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "attribute %s is %s, want %s",
                       a->name, wm_attr_type_name(a->type),
                       wm_attr_type_name(want));
  }
  return NULL;
}

wm_status_t wm_op_attr_int(const wm_op_ctx_t *ctx, const char *name,
                           int64_t def, int64_t *out) {
  const wm_attr_t *a = wm_node_attr(ctx->node, name);
  *out = def;
  WM_RETURN_IF_ERROR(attr_check(ctx, a, WM_ATTR_INT));
  *out = a ? a->i : def;
  return NULL;
}

wm_status_t wm_op_attr_float(const wm_op_ctx_t *ctx, const char *name,
                             double def, double *out) {
  const wm_attr_t *a = wm_node_attr(ctx->node, name);
  *out = def;
  WM_RETURN_IF_ERROR(attr_check(ctx, a, WM_ATTR_FLOAT));
  *out = a ? (double)a->f : def;
  return NULL;
}

wm_status_t wm_op_attr_string(const wm_op_ctx_t *ctx, const char *name,
                              const char *def, const char **out) {
  const wm_attr_t *a = wm_node_attr(ctx->node, name);
  *out = def;
  WM_RETURN_IF_ERROR(attr_check(ctx, a, WM_ATTR_STRING));
  *out = a ? a->s : def;
  return NULL;
}

wm_status_t wm_op_attr_ints(const wm_op_ctx_t *ctx, const char *name,
                            const int64_t **out_values, size_t *out_count) {
  const wm_attr_t *a = wm_node_attr(ctx->node, name);
  *out_values = NULL;
  *out_count = 0;
  WM_RETURN_IF_ERROR(attr_check(ctx, a, WM_ATTR_INTS));
  if (a) {
    *out_values = a->ints;
    *out_count = a->count;
  }
  return NULL;
}

wm_status_t wm_op_attr_choice(const wm_op_ctx_t *ctx, const char *name,
                              const char *def, const char *const *choices,
                              int *out) {
  const char *v;
  WM_RETURN_IF_ERROR(wm_op_attr_string(ctx, name, def, &v));
  for (int i = 0; choices[i]; i++) {
    if (v && strcmp(v, choices[i]) == 0) {
      *out = i;
      return NULL;
    }
  }
  return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                     "attribute %s is \"%s\", want one of \"%s\", \"%s\"%s%s%s",
                     name, v ? v : "", choices[0], choices[1],
                     choices[2] ? ", \"" : "", choices[2] ? choices[2] : "",
                     choices[2] ? "\"" : "");
}

wm_status_t wm_op_attr_ints_n(const wm_op_ctx_t *ctx, const char *name,
                              int32_t n, int64_t def, int64_t min, int64_t *out,
                              bool *out_present) {
  const int64_t *v;
  size_t count;
  WM_RETURN_IF_ERROR(wm_op_attr_ints(ctx, name, &v, &count));
  if (out_present) {
    *out_present = v != NULL;
  }
  if (!v) {
    for (int32_t i = 0; i < n; i++) {
      out[i] = def;
    }
    return NULL;
  }
  if (count != (size_t)n) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute %s has %zu values, want %d", name, count, n);
  }
  for (int32_t i = 0; i < n; i++) {
    if (v[i] < min) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute %s[%d] is %lld, want at least %lld", name,
                         i, (long long)v[i], (long long)min);
    }
    out[i] = v[i];
  }
  return NULL;
}

wm_status_t wm_op_run_in_session(wm_op_ctx_t *ctx) {
  return WM_OP_ERROR(ctx, INTERNAL,
                     "%s runs in the session, not as a backend kernel",
                     ctx->node->op_type);
}

bool wm_op_runs_in_session(const wm_op_def_t *def) {
  return def && def->run == wm_op_run_in_session;
}

wm_status_t wm_op_attr_find(const wm_op_ctx_t *ctx, const char *name,
                            wm_attr_type_t want, bool required,
                            const wm_attr_t **out) {
  const wm_attr_t *a = wm_node_attr(ctx->node, name);
  *out = NULL;
  if (!a) {
    return required ? WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                                  "attribute \"%s\" is required", name)
                    : NULL;
  }
  if (a->type != want) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"%s\" has kind %s, want %s", name,
                       wm_attr_type_name(a->type), wm_attr_type_name(want));
  }
  *out = a;
  return NULL;
}

wm_status_t wm_op_check_dtype_as(const wm_op_ctx_t *ctx, int32_t i,
                                 int32_t ref) {
  wm_dtype_t a = wm_op_in_dtype(ctx, ref), b = wm_op_in_dtype(ctx, i);
  if (a != WM_DTYPE_UNDEFINED && b != WM_DTYPE_UNDEFINED && a != b) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d has dtype %s, want %s like input %d", i,
                       wm_dtype_name(b), wm_dtype_name(a), ref);
  }
  return NULL;
}

double wm_op_round_to(wm_dtype_t dtype, double v) {
  switch (dtype) {
    case WM_DTYPE_FLOAT:
      return (double)(float)v;
    case WM_DTYPE_FLOAT16:
      return (double)wm_f16_to_f32(wm_f32_to_f16((float)v));
    case WM_DTYPE_BFLOAT16:
      return (double)wm_bf16_to_f32(wm_f32_to_bf16((float)v));
    default:
      return v;
  }
}

wm_status_t wm_op_set_out_checked(wm_op_ctx_t *ctx, int32_t i, wm_dtype_t dtype,
                                  const wm_shape_t *shape) {
  size_t n;
  if (wm_shape_is_known(shape) && !wm_shape_numel(shape, &n)) {
    char buf[160];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "output %d shape %s has too many elements", i,
                       wm_shape_format(shape, buf, sizeof(buf)));
  }
  wm_op_set_out(ctx, i, dtype, shape);
  return NULL;
}

// ---------------------------------------------------- resolved parameters

wm_status_t wm_op_resolve(const wm_op_def_t *def, wm_op_ctx_t *ctx,
                          wm_op_params_t *out) {
  memset(out, 0, sizeof(*out));
  return def && def->resolve ? def->resolve(ctx, out) : NULL;
}

const wm_op_param_t *wm_op_param_find(const wm_op_params_t *params,
                                      const char *name) {
  for (int32_t i = 0; i < params->count; i++) {
    if (strcmp(params->p[i].name, name) == 0) {
      return &params->p[i];
    }
  }
  return NULL;
}

bool wm_op_param_int_of(const wm_op_params_t *params, const char *name,
                        int64_t *out) {
  const wm_op_param_t *e = wm_op_param_find(params, name);
  if (!e || e->type != WM_ATTR_INT) {
    return false;
  }
  *out = e->i;
  return true;
}

bool wm_op_param_float_of(const wm_op_params_t *params, const char *name,
                          float *out) {
  const wm_op_param_t *e = wm_op_param_find(params, name);
  if (!e || e->type != WM_ATTR_FLOAT) {
    return false;
  }
  *out = e->f;
  return true;
}

// A new entry of |out| holding |n| list values from |v| (int64_t for INTS,
// double for FLOATS and TENSOR, const char * for STRINGS), or an error
// when it is full or the values of the kind do not fit.
static wm_status_t param_add(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                             const char *name, wm_attr_type_t type, int32_t n,
                             const void *v, wm_op_param_t **entry) {
  int32_t *used = type == WM_ATTR_FLOATS    ? &out->n_floats
                  : type == WM_ATTR_TENSOR  ? &out->n_reals
                  : type == WM_ATTR_STRINGS ? &out->n_strings
                                            : &out->n_ints;
  if (out->count >= WM_OP_MAX_PARAMS || n < 0 ||
      n > WM_OP_PARAM_VALUES - *used) {
    return WM_OP_ERROR(ctx, INTERNAL,
                       "resolved parameter %s does not fit (%d entries, %d "
                       "values)",
                       name, (int)out->count, (int)(*used + n));
  }
  wm_op_param_t *e = &out->p[out->count++];
  memset(e, 0, sizeof(*e));
  e->name = name;
  e->type = type;
  e->at = *used;
  e->count = n;
  for (int32_t k = 0; k < n; k++, (*used)++) {
    if (type == WM_ATTR_INTS) {
      out->ints[*used] = ((const int64_t *)v)[k];
    } else if (type == WM_ATTR_FLOATS) {
      out->floats[*used] = (float)((const double *)v)[k];
    } else if (type == WM_ATTR_TENSOR) {
      out->reals[*used] = ((const double *)v)[k];
    } else {
      out->strings[*used] = ((const char *const *)v)[k];
    }
  }
  *entry = e;
  return NULL;
}

wm_status_t wm_op_param_int(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                            const char *name, int64_t v) {
  wm_op_param_t *e = NULL;
  WM_RETURN_IF_ERROR(param_add(ctx, out, name, WM_ATTR_INT, 0, NULL, &e));
  e->i = v;
  return NULL;
}

wm_status_t wm_op_param_float(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                              const char *name, double v) {
  wm_op_param_t *e = NULL;
  WM_RETURN_IF_ERROR(param_add(ctx, out, name, WM_ATTR_FLOAT, 0, NULL, &e));
  e->f = (float)v;
  return NULL;
}

wm_status_t wm_op_param_string(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                               const char *name, const char *v) {
  wm_op_param_t *e = NULL;
  WM_RETURN_IF_ERROR(param_add(ctx, out, name, WM_ATTR_STRING, 0, NULL, &e));
  e->s = v;
  return NULL;
}

wm_status_t wm_op_param_ints(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                             const char *name, const int64_t *v, int32_t n) {
  wm_op_param_t *e;
  return param_add(ctx, out, name, WM_ATTR_INTS, n, v, &e);
}

wm_status_t wm_op_param_floats(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                               const char *name, const double *v, int32_t n) {
  wm_op_param_t *e;
  return param_add(ctx, out, name, WM_ATTR_FLOATS, n, v, &e);
}

wm_status_t wm_op_param_reals(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                              const char *name, const double *v, int32_t n) {
  wm_op_param_t *e;
  return param_add(ctx, out, name, WM_ATTR_TENSOR, n, v, &e);
}

wm_status_t wm_op_param_strings(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                                const char *name, const char *const *v,
                                int32_t n) {
  wm_op_param_t *e;
  return param_add(ctx, out, name, WM_ATTR_STRINGS, n, v, &e);
}

wm_status_t wm_op_param_axis(const wm_op_ctx_t *ctx, wm_op_params_t *out,
                             int64_t axis) {
  int32_t rank = wm_op_in_shape(ctx, 0)->rank, a = 0;
  out->pending = rank < 0;
  if (out->pending) {
    return NULL;
  }
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, axis, rank, "axis", &a));
  return wm_op_param_int(ctx, out, "axis", a);
}

// -------------------------------------------------- compute definitions

wm_status_t wm_op_define_inputs(const wm_op_ctx_t *ctx, wm_gen_compute_t *out,
                                int32_t *loads) {
  const wm_type_t *yt = &ctx->out_types[0];
  if (yt->dtype != WM_DTYPE_FLOAT || !wm_shape_is_known(&yt->shape) ||
      ctx->n_in >= WM_GEN_MAX_TENSORS ||
      (ctx->opset < 7 && wm_node_attr(ctx->node, "broadcast"))) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 of "
                       "known shape, numpy broadcasting)");
  }
  WM_RETURN_IF_ERROR(wm_gen_begin(out, ctx->node->op_type, yt->shape.rank,
                                  yt->shape.dims, NULL));
  for (int32_t i = 0; i < WM_GEN_MAX_TENSORS; i++) {
    loads[i] = -1;  // absent inputs, and those past the node's
  }
  for (int32_t i = 0; i < ctx->n_in; i++) {
    if (!wm_op_has_input(ctx, i)) {
      continue;
    }
    const wm_type_t *t = &ctx->in_types[i];
    if (t->dtype != WM_DTYPE_FLOAT || !wm_shape_is_known(&t->shape)) {
      return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                         "no compute definition: input %d is not float32 of "
                         "known shape",
                         i);
    }
    char name[16];
    snprintf(name, sizeof(name), "X%d", (int)i);
    WM_RETURN_IF_ERROR(
        wm_gen_input(out, name, t->shape.rank, t->shape.dims, &loads[i]));
    out->tensors[out->n_tensors - 1].operand = i;
  }
  return NULL;
}

bool wm_op_define_float(const wm_op_ctx_t *ctx) {
  for (int32_t i = 0; i < ctx->n_in; i++) {
    if (wm_op_has_input(ctx, i) &&
        (wm_op_in_dtype(ctx, i) != WM_DTYPE_FLOAT ||
         !wm_shape_is_known(wm_op_in_shape(ctx, i)))) {
      return false;
    }
  }
  return ctx->n_out > 0 && ctx->out_types[0].dtype == WM_DTYPE_FLOAT &&
         wm_shape_is_known(&ctx->out_types[0].shape);
}

wm_status_t wm_op_define_copy(const wm_op_ctx_t *ctx, wm_gen_compute_t *out,
                              int32_t rank, const int64_t *dims,
                              const int64_t *strides,
                              const wm_gen_access_t *acc) {
  const wm_type_t *yt = &ctx->out_types[0];
  if (yt->dtype != WM_DTYPE_FLOAT || !wm_shape_is_known(&yt->shape) ||
      wm_op_in_dtype(ctx, 0) != WM_DTYPE_FLOAT ||
      !wm_shape_is_known(wm_op_in_shape(ctx, 0))) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 of "
                       "known shape)");
  }
  WM_RETURN_IF_ERROR(wm_gen_begin(out, ctx->node->op_type, yt->shape.rank,
                                  yt->shape.dims, NULL));
  int32_t x;
  WM_RETURN_IF_ERROR(
      wm_gen_input_access(out, "X", rank, dims, strides, acc, &x));
  out->tensors[out->n_tensors - 1].operand = 0;
  return wm_gen_finish(out, x);
}

wm_status_t wm_op_define_fold_body(const wm_op_ctx_t *ctx, wm_gen_op_t op,
                                   wm_gen_compute_t *out, int32_t *out_body,
                                   int32_t *out_count) {
  int32_t loads[WM_GEN_MAX_TENSORS];
  WM_RETURN_IF_ERROR(wm_op_define_inputs(ctx, out, loads));
  int32_t body = -1, n = 0;
  for (int32_t i = 0; i < ctx->n_in; i++) {
    if (loads[i] < 0) {
      continue;
    }
    n++;
    if (body < 0) {
      body = loads[i];
      if (wm_gen_op_arity(op) == 1) {
        WM_RETURN_IF_ERROR(wm_gen_unary(out, op, body, &body));
      }
    } else {
      WM_RETURN_IF_ERROR(wm_gen_binary(out, op, body, loads[i], &body));
    }
  }
  *out_body = body;
  *out_count = n;
  return NULL;
}

wm_status_t wm_op_define_fold(const wm_op_ctx_t *ctx, wm_gen_op_t op,
                              wm_gen_compute_t *out) {
  int32_t body, n;
  WM_RETURN_IF_ERROR(wm_op_define_fold_body(ctx, op, out, &body, &n));
  return wm_gen_finish(out, body);
}
