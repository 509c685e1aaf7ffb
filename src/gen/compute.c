// Building and checking compute definitions, and their canonical text.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen/gen.h"

static const char *const kOpNames[WM_GEN_OP_COUNT] = {
    "load", "const", "acc",   "add",   "sub",     "mul",    "div",  "max",
    "min",  "pow",   "lt",    "gt",    "fmod",    "neg",    "abs",  "sqrt",
    "exp",  "log",   "tanh",  "relu",  "sigmoid", "floor",  "ceil", "sin",
    "cos",  "erf",   "sign",  "round", "tan",     "asin",   "acos", "atan",
    "sinh", "cosh",  "asinh", "acosh", "atanh",   "select",
};

const char *wm_gen_op_name(wm_gen_op_t op) {
  return op >= 0 && op < WM_GEN_OP_COUNT ? kOpNames[op] : "?";
}

int32_t wm_gen_op_arity(wm_gen_op_t op) {
  return op <= WM_GEN_ACC     ? 0
         : op <= WM_GEN_FMOD  ? 2
         : op < WM_GEN_SELECT ? 1
                              : 3;
}

// Copies identifier |name| ([A-Za-z_][A-Za-z0-9_]*, shorter than
// WM_GEN_NAME) into |dst|.
static wm_status_t set_name(char *dst, const char *name, const char *what) {
  size_t n = name ? strlen(name) : 0;
  bool ok = n > 0 && n < WM_GEN_NAME && !(name[0] >= '0' && name[0] <= '9');
  for (size_t i = 0; ok && i < n; i++) {
    char ch = name[i];
    ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || ch == '_';
  }
  if (!ok) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: %s name \"%s\" is not an identifier of 1 to %d "
                    "characters",
                    what, name ? name : "", WM_GEN_NAME - 1);
  }
  memcpy(dst, name, n + 1);
  return NULL;
}

// Adds tensor |name| of |rank|, |dims| and |strides| (NULL: row-major).
static wm_status_t add_tensor(wm_gen_compute_t *c, const char *name,
                              int32_t rank, const int64_t *dims,
                              const int64_t *strides, int32_t *out_index) {
  if (c->n_tensors >= WM_GEN_MAX_TENSORS) {
    return WM_ERROR(INVALID_ARGUMENT, "gen: compute %s has %d tensors already",
                    c->name, WM_GEN_MAX_TENSORS);
  }
  if (rank < 0 || rank > WM_MAX_RANK) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: tensor %s has rank %d, want 0 to %d",
                    name ? name : "", rank, WM_MAX_RANK);
  }
  wm_gen_tensor_t *t = &c->tensors[c->n_tensors];
  memset(t, 0, sizeof(*t));
  WM_RETURN_IF_ERROR(set_name(t->name, name, "tensor"));
  for (int32_t i = 0; i < c->n_tensors; i++) {
    if (strcmp(c->tensors[i].name, t->name) == 0) {
      return WM_ERROR(INVALID_ARGUMENT, "gen: compute %s has tensor %s twice",
                      c->name, t->name);
    }
  }
  t->rank = rank;
  t->dtype = WM_DTYPE_FLOAT;
  t->operand = c->n_tensors == 0 ? -1 : c->n_tensors - 1;
  int64_t stride = 1;
  for (int32_t d = rank - 1; d >= 0; d--) {
    if (dims[d] < 0) {
      return WM_ERROR(INVALID_ARGUMENT, "gen: tensor %s dim %d is %lld", name,
                      d, (long long)dims[d]);
    }
    t->dims[d] = dims[d];
    t->strides[d] = strides ? strides[d] : stride;
    if (!wm_checked_mul_i64(stride, dims[d] ? dims[d] : 1, &stride)) {
      return WM_ERROR(INVALID_ARGUMENT, "gen: tensor %s is too large", name);
    }
  }
  *out_index = c->n_tensors++;
  return NULL;
}

static wm_status_t add_expr(wm_gen_compute_t *c, const wm_gen_expr_t *e,
                            int32_t *out_expr) {
  if (c->n_exprs >= WM_GEN_MAX_EXPRS) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: compute %s has %d expressions already", c->name,
                    WM_GEN_MAX_EXPRS);
  }
  c->exprs[c->n_exprs] = *e;
  *out_expr = c->n_exprs++;
  return NULL;
}

wm_status_t wm_gen_begin(wm_gen_compute_t *c, const char *name, int32_t rank,
                         const int64_t *dims, const char *const *axis_names) {
  memset(c, 0, sizeof(*c));
  // A long name (an operator's) is cut to fit: it only labels the kernel.
  char cut[WM_GEN_NAME];
  snprintf(cut, sizeof(cut), "%s", name ? name : "");
  WM_RETURN_IF_ERROR(set_name(c->name, cut, "compute"));
  if (rank > WM_GEN_MAX_AXES) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: compute %s has rank %d, want at most %d", c->name,
                    rank, WM_GEN_MAX_AXES);
  }
  int32_t out;
  WM_RETURN_IF_ERROR(add_tensor(c, "Y", rank, dims, NULL, &out));
  c->n_axes = rank;
  for (int32_t a = 0; a < rank; a++) {
    char fallback[WM_GEN_NAME];
    snprintf(fallback, sizeof(fallback), "i%d", (int)a);
    WM_RETURN_IF_ERROR(
        set_name(c->axes[a], axis_names ? axis_names[a] : fallback, "axis"));
    c->extents[a] = dims[a];
  }
  wm_gen_access_t *acc = &c->accesses[c->n_accesses++];
  memset(acc, 0, sizeof(*acc));
  acc->tensor = out;
  for (int32_t d = 0; d < rank; d++) {
    acc->coef[d][d] = 1;
  }
  return NULL;
}

wm_status_t wm_gen_input_access(wm_gen_compute_t *c, const char *name,
                                int32_t rank, const int64_t *dims,
                                const int64_t *strides,
                                const wm_gen_access_t *acc, int32_t *out_expr) {
  if (c->n_accesses >=
      (int32_t)(sizeof(c->accesses) / sizeof(c->accesses[0]))) {
    return WM_ERROR(INVALID_ARGUMENT, "gen: compute %s has too many accesses",
                    c->name);
  }
  int32_t t;
  WM_RETURN_IF_ERROR(add_tensor(c, name, rank, dims, strides, &t));
  wm_gen_access_t *a = &c->accesses[c->n_accesses];
  *a = *acc;
  a->tensor = t;
  wm_gen_expr_t e = {
      .op = WM_GEN_LOAD, .arg = {-1, -1, -1}, .access = c->n_accesses};
  c->n_accesses++;
  return add_expr(c, &e, out_expr);
}

wm_status_t wm_gen_input(wm_gen_compute_t *c, const char *name, int32_t rank,
                         const int64_t *dims, int32_t *out_expr) {
  int32_t out_rank = c->tensors[0].rank;
  if (rank > out_rank) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: input %s has rank %d, above the output's %d",
                    name ? name : "", rank, out_rank);
  }
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  for (int32_t d = 0; d < rank; d++) {
    int32_t axis = out_rank - rank + d;
    if (dims[d] != 1 && dims[d] != c->tensors[0].dims[axis]) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "gen: input %s dim %d is %lld, which does not broadcast "
                      "to the output's %lld",
                      name ? name : "", d, (long long)dims[d],
                      (long long)c->tensors[0].dims[axis]);
    }
    acc.coef[d][axis] = dims[d] == 1 ? 0 : 1;
  }
  return wm_gen_input_access(c, name, rank, dims, NULL, &acc, out_expr);
}

// Whether an input may be of |dtype| (its loads convert to float).
static bool input_dtype(wm_dtype_t dtype) {
  switch (dtype) {
    case WM_DTYPE_FLOAT:
    case WM_DTYPE_DOUBLE:
    case WM_DTYPE_INT64:
    case WM_DTYPE_INT32:
    case WM_DTYPE_INT16:
    case WM_DTYPE_INT8:
    case WM_DTYPE_UINT16:
    case WM_DTYPE_UINT8:
    case WM_DTYPE_BOOL:
      return true;
    default:
      return false;
  }
}

wm_status_t wm_gen_input_dtype(wm_gen_compute_t *c, int32_t load,
                               wm_dtype_t dtype) {
  if (load < 0 || load >= c->n_exprs || c->exprs[load].op != WM_GEN_LOAD ||
      !input_dtype(dtype)) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: %s: expression %d is not an input's load, or %s is "
                    "not a dtype an input may have",
                    c->name, (int)load, wm_dtype_name(dtype));
  }
  c->tensors[c->accesses[c->exprs[load].access].tensor].dtype = dtype;
  return NULL;
}

wm_status_t wm_gen_index(wm_gen_compute_t *c, const char *name,
                         wm_dtype_t dtype, int32_t rank, const int64_t *dims,
                         const wm_gen_access_t *acc, int32_t *out_gather) {
  if (dtype != WM_DTYPE_INT64 && dtype != WM_DTYPE_INT32) {
    return WM_ERROR(INVALID_ARGUMENT, "gen: %s: index tensor %s of %s", c->name,
                    name ? name : "", wm_dtype_name(dtype));
  }
  if (c->n_accesses >=
      (int32_t)(sizeof(c->accesses) / sizeof(c->accesses[0]))) {
    return WM_ERROR(INVALID_ARGUMENT, "gen: compute %s has too many accesses",
                    c->name);
  }
  int32_t t;
  WM_RETURN_IF_ERROR(add_tensor(c, name, rank, dims, NULL, &t));
  c->tensors[t].dtype = dtype;
  wm_gen_access_t *a = &c->accesses[c->n_accesses];
  *a = *acc;
  a->tensor = t;
  a->guard = false;
  memset(a->gather, 0, sizeof(a->gather));
  *out_gather = ++c->n_accesses;
  return NULL;
}

wm_status_t wm_gen_const(wm_gen_compute_t *c, float v, int32_t *out_expr) {
  wm_gen_expr_t e = {
      .op = WM_GEN_CONST, .arg = {-1, -1, -1}, .access = -1, .value = v};
  return add_expr(c, &e, out_expr);
}

static wm_status_t check_operand(const wm_gen_compute_t *c, int32_t a) {
  if (a < 0 || a >= c->n_exprs) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: compute %s: operand %d is not an expression made "
                    "before (%d so far)",
                    c->name, a, c->n_exprs);
  }
  return NULL;
}

wm_status_t wm_gen_unary(wm_gen_compute_t *c, wm_gen_op_t op, int32_t a,
                         int32_t *out_expr) {
  if (wm_gen_op_arity(op) != 1) {
    return WM_ERROR(INVALID_ARGUMENT, "gen: %s is not a unary operation",
                    wm_gen_op_name(op));
  }
  WM_RETURN_IF_ERROR(check_operand(c, a));
  wm_gen_expr_t e = {.op = op, .arg = {a, -1, -1}, .access = -1};
  return add_expr(c, &e, out_expr);
}

wm_status_t wm_gen_binary(wm_gen_compute_t *c, wm_gen_op_t op, int32_t a,
                          int32_t b, int32_t *out_expr) {
  if (wm_gen_op_arity(op) != 2) {
    return WM_ERROR(INVALID_ARGUMENT, "gen: %s is not a binary operation",
                    wm_gen_op_name(op));
  }
  WM_RETURN_IF_ERROR(check_operand(c, a));
  WM_RETURN_IF_ERROR(check_operand(c, b));
  wm_gen_expr_t e = {.op = op, .arg = {a, b, -1}, .access = -1};
  return add_expr(c, &e, out_expr);
}

wm_status_t wm_gen_select(wm_gen_compute_t *c, int32_t cond, int32_t a,
                          int32_t b, int32_t *out_expr) {
  WM_RETURN_IF_ERROR(check_operand(c, cond));
  WM_RETURN_IF_ERROR(check_operand(c, a));
  WM_RETURN_IF_ERROR(check_operand(c, b));
  wm_gen_expr_t e = {.op = WM_GEN_SELECT, .arg = {cond, a, b}, .access = -1};
  return add_expr(c, &e, out_expr);
}

int32_t wm_gen_k(wm_gen_builder_t *b, float v) {
  int32_t r = -1;
  if (!b->st) {
    b->st = wm_gen_const(b->c, v, &r);
  }
  return r;
}

int32_t wm_gen_f1(wm_gen_builder_t *b, wm_gen_op_t op, int32_t a) {
  int32_t r = -1;
  if (!b->st) {
    b->st = wm_gen_unary(b->c, op, a, &r);
  }
  return r;
}

int32_t wm_gen_f2(wm_gen_builder_t *b, wm_gen_op_t op, int32_t a, int32_t c) {
  int32_t r = -1;
  if (!b->st) {
    b->st = wm_gen_binary(b->c, op, a, c, &r);
  }
  return r;
}

int32_t wm_gen_sel(wm_gen_builder_t *b, int32_t cond, int32_t a, int32_t c) {
  int32_t r = -1;
  if (!b->st) {
    b->st = wm_gen_select(b->c, cond, a, c, &r);
  }
  return r;
}

// Checks that every point of the axes' box maps inside tensor |t|'s dims
// through |acc| (an empty box touches nothing).
static wm_status_t check_access(const wm_gen_compute_t *c,
                                const wm_gen_access_t *acc) {
  const wm_gen_tensor_t *t = &c->tensors[acc->tensor];
  bool gathers = false;
  for (int32_t d = 0; d < t->rank; d++) {
    int32_t g = acc->gather[d] - 1;
    if (g < 0) {
      continue;
    }
    gathers = true;
    const wm_gen_access_t *ix = g < c->n_accesses ? &c->accesses[g] : NULL;
    wm_dtype_t dt = ix ? c->tensors[ix->tensor].dtype : WM_DTYPE_UNDEFINED;
    if (!ix || ix == acc || (dt != WM_DTYPE_INT64 && dt != WM_DTYPE_INT32)) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "gen: %s: dim %d of %s gathers through access %d, not "
                      "an index tensor's (wm_gen_index)",
                      c->name, (int)d, t->name, (int)g);
    }
  }
  if (gathers && !acc->guard) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: %s: the gathered access of %s must be guarded (an "
                    "index may be out of range)",
                    c->name, t->name);
  }
  if (acc == &c->accesses[0] && t->dtype != WM_DTYPE_FLOAT) {
    return WM_ERROR(INVALID_ARGUMENT, "gen: %s: the output is %s, not float",
                    c->name, wm_dtype_name(t->dtype));
  }
  if (acc->guard) {
    if (acc == &c->accesses[0]) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "gen: %s: the output's access cannot be guarded",
                      c->name);
    }
    return NULL;  // reads outside give 0
  }
  for (int32_t a = 0; a < c->n_axes; a++) {
    if (c->extents[a] == 0) {
      return NULL;
    }
  }
  for (int32_t d = 0; d < t->rank; d++) {
    int64_t lo = acc->off[d], hi = acc->off[d];
    for (int32_t a = 0; a < c->n_axes; a++) {
      int64_t span;
      if (!wm_checked_mul_i64(acc->coef[d][a], c->extents[a] - 1, &span)) {
        return WM_ERROR(INVALID_ARGUMENT, "gen: %s: access of %s overflows",
                        c->name, t->name);
      }
      lo += span < 0 ? span : 0;
      hi += span > 0 ? span : 0;
    }
    if (lo < 0 || hi >= t->dims[d]) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "gen: %s: dim %d of %s is read at %lld..%lld, outside "
                      "[0, %lld)",
                      c->name, d, t->name, (long long)lo, (long long)hi,
                      (long long)t->dims[d]);
    }
  }
  return NULL;
}

int32_t wm_gen_spatial(const wm_gen_compute_t *c) {
  return c->n_axes - c->n_reduce;
}

wm_status_t wm_gen_reduce_axis(wm_gen_compute_t *c, const char *name,
                               int64_t extent, int32_t *out_axis) {
  if (c->n_axes >= WM_GEN_MAX_AXES) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: compute %s has %d axes already, the most it holds",
                    c->name, WM_GEN_MAX_AXES);
  }
  if (extent < 0) {
    return WM_ERROR(INVALID_ARGUMENT, "gen: %s: reduce axis %s of extent %lld",
                    c->name, name ? name : "", (long long)extent);
  }
  WM_RETURN_IF_ERROR(set_name(c->axes[c->n_axes], name, "axis"));
  c->extents[c->n_axes] = extent;
  *out_axis = c->n_axes++;
  c->n_reduce++;
  return NULL;
}

wm_status_t wm_gen_acc(wm_gen_compute_t *c, int32_t *out_expr) {
  wm_gen_expr_t e = {.op = WM_GEN_ACC, .arg = {-1, -1, -1}, .access = -1};
  return add_expr(c, &e, out_expr);
}

// Whether expression |i| reads ACC (|acc|) or, with |axis_from| >= 0, a
// load moving along an axis from |axis_from| on.
static bool reads(const wm_gen_compute_t *c, int32_t i, bool acc,
                  int32_t axis_from) {
  const wm_gen_expr_t *e = &c->exprs[i];
  if (e->op == WM_GEN_ACC) {
    return acc;
  }
  if (e->op == WM_GEN_LOAD) {
    for (int32_t a = axis_from < 0 ? c->n_axes : axis_from; a < c->n_axes;
         a++) {
      if (wm_gen_access_step(c, &c->accesses[e->access], a) != 0) {
        return true;
      }
    }
    return false;
  }
  for (int32_t k = 0; k < wm_gen_op_arity(e->op); k++) {
    if (reads(c, e->arg[k], acc, axis_from)) {
      return true;
    }
  }
  return false;
}

static wm_status_t finish(wm_gen_compute_t *c, int32_t body) {
  WM_RETURN_IF_ERROR(check_operand(c, body));
  c->body = body;
  for (int32_t i = 0; i < c->n_accesses; i++) {
    WM_RETURN_IF_ERROR(check_access(c, &c->accesses[i]));
  }
  if (reads(c, body, true, -1)) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: %s: the body reads the reduction's result", c->name);
  }
  return NULL;
}

wm_status_t wm_gen_finish(wm_gen_compute_t *c, int32_t body) {
  if (c->n_reduce > 0) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: %s has reduce axes: finish it as a reduction",
                    c->name);
  }
  c->epilogue = -1;
  return finish(c, body);
}

wm_status_t wm_gen_finish_reduce(wm_gen_compute_t *c, wm_gen_op_t combine,
                                 float init, int32_t body, int32_t epilogue) {
  if (combine != WM_GEN_ADD && combine != WM_GEN_MUL && combine != WM_GEN_MAX &&
      combine != WM_GEN_MIN) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: %s: %s does not combine a reduction (add, mul, "
                    "max, min)",
                    c->name, wm_gen_op_name(combine));
  }
  c->combine = combine;
  c->init = init;
  c->epilogue = epilogue;
  WM_RETURN_IF_ERROR(finish(c, body));
  if (epilogue >= 0) {
    WM_RETURN_IF_ERROR(check_operand(c, epilogue));
    if (reads(c, epilogue, false, wm_gen_spatial(c))) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "gen: %s: the epilogue reads along a reduce axis",
                      c->name);
    }
  }
  return NULL;
}

// ---------------------------------------------------------- canonical

static void print_access(const wm_gen_compute_t *c, const wm_gen_access_t *acc,
                         wm_strbuf_t *out) {
  const wm_gen_tensor_t *t = &c->tensors[acc->tensor];
  wm_strbuf_printf(out, "t%d", (int)acc->tensor);
  if (acc->guard) {
    wm_strbuf_printf(out, "?%a", (double)acc->fill);
  }
  if (t->temp) {
    wm_strbuf_printf(out, "~");  // a temporary
  }
  wm_strbuf_printf(out, "[");
  for (int32_t d = 0; d < t->rank; d++) {
    bool any = false;
    wm_strbuf_printf(out, "%s", d ? "," : "");
    for (int32_t a = 0; a < c->n_axes; a++) {
      int64_t k = acc->coef[d][a];
      if (k) {
        wm_strbuf_printf(out, "%s", any ? "+" : "");
        if (k != 1) {
          wm_strbuf_printf(out, "%lld*", (long long)k);
        }
        wm_strbuf_printf(out, "a%d", (int)a);
        any = true;
      }
    }
    if (acc->off[d] || !any) {
      wm_strbuf_printf(out, "%s%lld", any ? "+" : "", (long long)acc->off[d]);
    }
    if (acc->gather[d] > 0) {
      wm_strbuf_printf(out, "+@");
      print_access(c, &c->accesses[acc->gather[d] - 1], out);
    }
  }
  wm_strbuf_printf(out, "]");
}

static void print_expr(const wm_gen_compute_t *c, int32_t i, wm_strbuf_t *out) {
  const wm_gen_expr_t *e = &c->exprs[i];
  if (e->op == WM_GEN_LOAD) {
    print_access(c, &c->accesses[e->access], out);
  } else if (e->op == WM_GEN_ACC) {
    wm_strbuf_printf(out, "acc");
  } else if (e->op == WM_GEN_CONST) {
    wm_strbuf_printf(out, "%a", (double)e->value);
  } else {
    wm_strbuf_printf(out, "%s(", wm_gen_op_name(e->op));
    for (int32_t k = 0; k < wm_gen_op_arity(e->op); k++) {
      wm_strbuf_printf(out, "%s", k ? "," : "");
      print_expr(c, e->arg[k], out);
    }
    wm_strbuf_printf(out, ")");
  }
}

void wm_gen_canonical(const wm_gen_compute_t *c, wm_strbuf_t *out) {
  wm_strbuf_printf(out, "axes(");
  for (int32_t a = 0; a < c->n_axes; a++) {
    wm_strbuf_printf(out, "%s%s%d:%lld", a ? "," : "",
                     a < wm_gen_spatial(c) ? "a" : "r", (int)a,
                     (long long)c->extents[a]);
  }
  wm_strbuf_printf(out, ")");
  for (int32_t i = 0; i < c->n_tensors; i++) {
    const wm_gen_tensor_t *t = &c->tensors[i];
    wm_strbuf_printf(
        out, " t%d:%s[", (int)i,
        t->dtype == WM_DTYPE_FLOAT ? "f32" : wm_dtype_name(t->dtype));
    for (int32_t d = 0; d < t->rank; d++) {
      wm_strbuf_printf(out, "%s%lld/%lld", d ? "," : "", (long long)t->dims[d],
                       (long long)t->strides[d]);
    }
    wm_strbuf_printf(out, "]");
  }
  wm_strbuf_printf(out, " ");
  print_access(c, &c->accesses[0], out);
  wm_strbuf_printf(out, "=");
  if (c->n_reduce > 0) {
    wm_strbuf_printf(out, "%s[%a](", wm_gen_op_name(c->combine),
                     (double)c->init);
    print_expr(c, c->body, out);
    wm_strbuf_printf(out, ")");
    if (c->epilogue >= 0) {
      wm_strbuf_printf(out, " then ");
      print_expr(c, c->epilogue, out);
    }
    return;
  }
  print_expr(c, c->body, out);
}

// ------------------------------------------------------------ programs

wm_status_t wm_gen_program_stage(wm_gen_program_t *p, wm_gen_compute_t **out) {
  *out = NULL;
  if (p->n_stages >= WM_GEN_MAX_STAGES) {
    return WM_ERROR(INVALID_ARGUMENT, "gen: a program has %d stages already",
                    WM_GEN_MAX_STAGES);
  }
  wm_gen_compute_t *c = calloc(1, sizeof(*c));
  if (!c) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  p->stages[p->n_stages++] = c;
  *out = c;
  return NULL;
}

wm_status_t wm_gen_program_temp(wm_gen_program_t *p, int64_t elements,
                                int32_t *out_temp) {
  if (p->n_temps >= WM_GEN_MAX_TEMPS || elements < 0) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: a program's temporary of %lld elements (it has %d "
                    "of %d)",
                    (long long)elements, (int)p->n_temps, WM_GEN_MAX_TEMPS);
  }
  p->temp_elems[p->n_temps] = elements;
  *out_temp = p->n_temps++;
  return NULL;
}

wm_status_t wm_gen_bind_temp(const wm_gen_program_t *p, wm_gen_compute_t *c,
                             int32_t tensor, int32_t temp) {
  if (tensor < 0 || tensor >= c->n_tensors || temp < 0 || temp >= p->n_temps) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: %s: tensor %d or temporary %d does not exist",
                    c->name, (int)tensor, (int)temp);
  }
  wm_gen_tensor_t *t = &c->tensors[tensor];
  int64_t last = 0;  // the farthest element from the origin
  for (int32_t d = 0; d < t->rank; d++) {
    if (t->dims[d] == 0) {
      last = -1;
      break;
    }
    last += (t->dims[d] - 1) * t->strides[d];
  }
  if (t->dtype != WM_DTYPE_FLOAT || last >= p->temp_elems[temp]) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: %s: tensor %s does not fit temporary %d of %lld "
                    "floats",
                    c->name, t->name, (int)temp,
                    (long long)p->temp_elems[temp]);
  }
  t->temp = temp + 1;
  return NULL;
}

void wm_gen_program_free(wm_gen_program_t *p) {
  for (int32_t i = 0; i < p->n_stages; i++) {
    free(p->stages[i]);
  }
  memset(p, 0, sizeof(*p));
}
