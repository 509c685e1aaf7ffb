// Operators of the linalg family: Gemm, MatMul, Einsum and Det. The
// reference kernels accumulate in double for floating-point types and in
// wrapping int64 for integer types, so integer products are exact.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

// Wrapping integer arithmetic (signed overflow is undefined in C).
static int64_t wrap_add(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t wrap_mul(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}

// Checks that inputs |a| and |b| have the same element type (when known).
static wm_status_t check_same_dtype(const wm_op_ctx_t *ctx, int32_t a,
                                    int32_t b) {
  wm_dtype_t da = wm_op_in_dtype(ctx, a);
  wm_dtype_t db = wm_op_in_dtype(ctx, b);
  if (da != WM_DTYPE_UNDEFINED && db != WM_DTYPE_UNDEFINED && da != db) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d has type %s but input %d has type %s", a,
                       wm_dtype_name(da), b, wm_dtype_name(db));
  }
  return NULL;
}

// Sets *out to the element count of a fully known |shape|; errors when it
// overflows size_t.
static wm_status_t shape_count(const wm_op_ctx_t *ctx, const wm_shape_t *shape,
                               const char *what, size_t *out) {
  if (!wm_shape_numel(shape, out)) {
    char buf[128];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "%s shape %s has no valid element count", what,
                       wm_shape_format(shape, buf, sizeof(buf)));
  }
  return NULL;
}

// ------------------------------------------------------------------ Gemm

typedef struct gemm_dims {
  int64_t m;  // rows of op(A) and Y
  int64_t k;  // inner dimension
  int64_t n;  // columns of op(B) and Y
} gemm_dims_t;

// Validates Gemm's input shapes and derives M, K, N (-1 when unknown).
static wm_status_t gemm_dims(const wm_op_ctx_t *ctx, gemm_dims_t *out) {
  const wm_shape_t *a = wm_op_in_shape(ctx, 0);
  const wm_shape_t *b = wm_op_in_shape(ctx, 1);
  bool ta = wm_node_attr_int(ctx->node, "transA", 0) != 0;
  bool tb = wm_node_attr_int(ctx->node, "transB", 0) != 0;
  out->m = out->k = out->n = -1;
  int64_t kb = -1;
  if (a->rank >= 0 && a->rank != 2) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input 0 (A) has rank %d, want 2",
                       a->rank);
  }
  if (b->rank >= 0 && b->rank != 2) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input 1 (B) has rank %d, want 2",
                       b->rank);
  }
  if (a->rank == 2) {
    out->m = a->dims[ta ? 1 : 0];
    out->k = a->dims[ta ? 0 : 1];
  }
  if (b->rank == 2) {
    kb = b->dims[tb ? 1 : 0];
    out->n = b->dims[tb ? 0 : 1];
  }
  if (out->k >= 0 && kb >= 0 && out->k != kb) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "inner dims %lld (A%s) vs %lld (B%s) differ",
                       (long long)out->k, ta ? ", transposed" : "",
                       (long long)kb, tb ? ", transposed" : "");
  }
  if (out->k < 0) {
    out->k = kb;
  }
  if (!wm_op_has_input(ctx, 2)) {
    return NULL;
  }
  const wm_shape_t *c = wm_op_in_shape(ctx, 2);
  if (c->rank > 2) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 2 (C) has rank %d, want at most 2", c->rank);
  }
  int64_t want[2] = {out->m, out->n};
  for (int32_t d = 0; d < c->rank; d++) {
    int64_t cd = c->dims[d];
    int64_t yd = want[2 - c->rank + d];
    if (cd >= 0 && yd >= 0 && cd != 1 && cd != yd) {
      char buf[64];
      return WM_OP_ERROR(
          ctx, INVALID_ARGUMENT,
          "input 2 (C) shape %s does not broadcast to [%lld,%lld]",
          wm_shape_format(c, buf, sizeof(buf)), (long long)out->m,
          (long long)out->n);
    }
  }
  if (ctx->opset < 7 && wm_node_attr_int(ctx->node, "broadcast", 0) == 0 &&
      wm_shape_is_known(c) && out->m >= 0 && out->n >= 0 &&
      (c->rank != 2 || c->dims[0] != out->m || c->dims[1] != out->n)) {
    char buf[64];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 2 (C) shape %s must be [%lld,%lld] when "
                       "broadcast is 0",
                       wm_shape_format(c, buf, sizeof(buf)), (long long)out->m,
                       (long long)out->n);
  }
  return NULL;
}

// Parameters: transA, transB, alpha and beta, defaults applied.
static wm_status_t gemm_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  const wm_node_t *n = ctx->node;
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "transA",
                                     wm_node_attr_int(n, "transA", 0) != 0));
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "transB",
                                     wm_node_attr_int(n, "transB", 0) != 0));
  WM_RETURN_IF_ERROR(
      wm_op_param_float(ctx, out, "alpha", wm_node_attr_float(n, "alpha", 1)));
  return wm_op_param_float(ctx, out, "beta", wm_node_attr_float(n, "beta", 1));
}

static wm_status_t gemm_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
  if (wm_op_has_input(ctx, 2)) {
    WM_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 2));
  }
  gemm_dims_t g;
  WM_RETURN_IF_ERROR(gemm_dims(ctx, &g));
  wm_shape_t y = {2, {g.m, g.n}};
  wm_op_set_out(ctx, 0, wm_op_in_dtype(ctx, 0), &y);
  return NULL;
}

static wm_status_t gemm_run(wm_op_ctx_t *ctx) {
  gemm_dims_t g;
  WM_RETURN_IF_ERROR(gemm_dims(ctx, &g));
  const wm_tensor_t *a = ctx->in[0];
  const wm_tensor_t *b = ctx->in[1];
  const wm_tensor_t *c = wm_op_has_input(ctx, 2) ? ctx->in[2] : NULL;
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  bool ta = wm_node_attr_int(ctx->node, "transA", 0) != 0;
  bool tb = wm_node_attr_int(ctx->node, "transB", 0) != 0;
  double alpha = wm_node_attr_float(ctx->node, "alpha", 1.0f);
  double beta = wm_node_attr_float(ctx->node, "beta", 1.0f);
  bool is_int = wm_dtype_is_int(y->dtype);
  // Integer Gemm stays exact when the scale factors are one.
  bool exact_int = is_int && alpha == 1.0 && beta == 1.0;
  size_t m = (size_t)g.m, n = (size_t)g.n, k = (size_t)g.k;
  int64_t cstr[WM_MAX_RANK] = {0};
  if (c) {
    wm_broadcast_strides(&c->shape, &y->shape, cstr);
  }
  for (size_t i = 0; i < m; i++) {
    for (size_t j = 0; j < n; j++) {
      size_t yi = i * n + j;
      size_t ci = i * (size_t)cstr[0] + j * (size_t)cstr[1];
      if (exact_int) {
        int64_t acc = 0;
        for (size_t p = 0; p < k; p++) {
          int64_t av = wm_tensor_get_i64(a, ta ? p * m + i : i * k + p);
          int64_t bv = wm_tensor_get_i64(b, tb ? j * k + p : p * n + j);
          acc = wrap_add(acc, wrap_mul(av, bv));
        }
        if (c) {
          acc = wrap_add(acc, wm_tensor_get_i64(c, ci));
        }
        wm_tensor_set_i64(y, yi, acc);
        continue;
      }
      double acc = 0.0;
      for (size_t p = 0; p < k; p++) {
        double av = wm_tensor_get_f64(a, ta ? p * m + i : i * k + p);
        double bv = wm_tensor_get_f64(b, tb ? j * k + p : p * n + j);
        acc += av * bv;
      }
      acc *= alpha;
      if (c) {
        acc += beta * wm_tensor_get_f64(c, ci);
      }
      // Integer outputs truncate and saturate (wm_store_f64).
      wm_tensor_set_f64(y, yi, acc);
    }
  }
  return NULL;
}

static void gemm_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  gemm_dims_t g;
  wm_status_t s = gemm_dims(ctx, &g);
  if (s) {
    wm_status_free(s);
    return;
  }
  if (g.m < 0 || g.n < 0 || g.k < 0) {
    return;
  }
  double mn = (double)g.m * (double)g.n;
  out->macs = mn * (double)g.k;
  out->flops = 2.0 * out->macs;
  if (wm_node_attr_float(ctx->node, "alpha", 1.0f) != 1.0f) {
    out->flops += mn;
  }
  if (wm_op_has_input(ctx, 2)) {
    out->flops += mn;
    if (wm_node_attr_float(ctx->node, "beta", 1.0f) != 1.0f) {
      out->flops += mn;
    }
  }
}

// ---------------------------------------------------------------- MatMul

// The shapes of one MatMul with 1-D operands promoted per numpy.
typedef struct matmul_dims {
  bool a_vec;          // A was 1-D: a leading 1 was added
  bool b_vec;          // B was 1-D: a trailing 1 was added
  int64_t m, k, n;     // matrix dims (-1 when unknown)
  wm_shape_t a_batch;  // batch dims of A
  wm_shape_t b_batch;  // batch dims of B
  wm_shape_t batch;    // broadcast batch dims
  wm_shape_t y;        // output shape
} matmul_dims_t;

// Derives the MatMul shapes; sets out->y.rank -1 when a rank is unknown.
static wm_status_t matmul_dims(const wm_op_ctx_t *ctx, matmul_dims_t *out) {
  const wm_shape_t *a = wm_op_in_shape(ctx, 0);
  const wm_shape_t *b = wm_op_in_shape(ctx, 1);
  memset(out, 0, sizeof(*out));
  out->y.rank = -1;
  for (int32_t i = 0; i < 2; i++) {
    const wm_shape_t *s = i == 0 ? a : b;
    if (s->rank == 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d is a scalar (rank 0), want rank >= 1", i);
    }
  }
  if (a->rank < 0 || b->rank < 0) {
    return NULL;
  }
  out->a_vec = a->rank == 1;
  out->b_vec = b->rank == 1;
  out->m = out->a_vec ? 1 : a->dims[a->rank - 2];
  out->k = a->dims[a->rank - 1];
  int64_t kb = out->b_vec ? b->dims[0] : b->dims[b->rank - 2];
  out->n = out->b_vec ? 1 : b->dims[b->rank - 1];
  if (out->k >= 0 && kb >= 0 && out->k != kb) {
    char sa[128], sb[128];
    return WM_OP_ERROR(
        ctx, INVALID_ARGUMENT, "inner dims %lld vs %lld differ (A %s, B %s)",
        (long long)out->k, (long long)kb, wm_shape_format(a, sa, sizeof(sa)),
        wm_shape_format(b, sb, sizeof(sb)));
  }
  if (out->k < 0) {
    out->k = kb;
  }
  out->a_batch = wm_shape_make(out->a_vec ? 0 : a->rank - 2, a->dims);
  out->b_batch = wm_shape_make(out->b_vec ? 0 : b->rank - 2, b->dims);
  wm_status_t s = wm_shape_broadcast(&out->a_batch, &out->b_batch, &out->batch);
  if (s) {
    return wm_status_annotate(s, "node \"%s\" (%s): batch dims of A and B",
                              ctx->label, ctx->node->op_type);
  }
  out->y = out->batch;
  if (!out->a_vec) {
    out->y.dims[out->y.rank++] = out->m;
  }
  if (!out->b_vec) {
    out->y.dims[out->y.rank++] = out->n;
  }
  return NULL;
}

static wm_status_t matmul_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(check_same_dtype(ctx, 0, 1));
  matmul_dims_t d;
  WM_RETURN_IF_ERROR(matmul_dims(ctx, &d));
  wm_op_set_out(ctx, 0, wm_op_in_dtype(ctx, 0), &d.y);
  return NULL;
}

static wm_status_t matmul_run(wm_op_ctx_t *ctx) {
  matmul_dims_t d;
  WM_RETURN_IF_ERROR(matmul_dims(ctx, &d));
  const wm_tensor_t *a = ctx->in[0];
  const wm_tensor_t *b = ctx->in[1];
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  size_t nbatch;
  WM_RETURN_IF_ERROR(shape_count(ctx, &d.batch, "batch", &nbatch));
  int64_t astr[WM_MAX_RANK], bstr[WM_MAX_RANK];
  wm_broadcast_strides(&d.a_batch, &d.batch, astr);
  wm_broadcast_strides(&d.b_batch, &d.batch, bstr);
  size_t m = (size_t)d.m, k = (size_t)d.k, n = (size_t)d.n;
  bool is_int = wm_dtype_is_int(y->dtype);
  for (size_t t = 0; t < nbatch; t++) {
    size_t a0 = wm_broadcast_offset(&d.batch, astr, t) * m * k;
    size_t b0 = wm_broadcast_offset(&d.batch, bstr, t) * k * n;
    size_t y0 = t * m * n;
    for (size_t i = 0; i < m; i++) {
      for (size_t j = 0; j < n; j++) {
        if (is_int) {
          int64_t acc = 0;
          for (size_t p = 0; p < k; p++) {
            acc = wrap_add(acc, wrap_mul(wm_tensor_get_i64(a, a0 + i * k + p),
                                         wm_tensor_get_i64(b, b0 + p * n + j)));
          }
          wm_tensor_set_i64(y, y0 + i * n + j, acc);
        } else {
          double acc = 0.0;
          for (size_t p = 0; p < k; p++) {
            acc += wm_tensor_get_f64(a, a0 + i * k + p) *
                   wm_tensor_get_f64(b, b0 + p * n + j);
          }
          wm_tensor_set_f64(y, y0 + i * n + j, acc);
        }
      }
    }
  }
  return NULL;
}

static void matmul_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  matmul_dims_t d;
  wm_status_t s = matmul_dims(ctx, &d);
  if (s) {
    wm_status_free(s);
    return;
  }
  size_t nbatch;
  if (d.y.rank < 0 || d.m < 0 || d.k < 0 || d.n < 0 ||
      !wm_shape_numel(&d.batch, &nbatch)) {
    return;
  }
  out->macs = (double)nbatch * (double)d.m * (double)d.n * (double)d.k;
  out->flops = 2.0 * out->macs;
}

// ---------------------------------------------------------------- Einsum

// Labels: 'a'-'z' are 0-25, 'A'-'Z' are 26-51, and the dims an ellipsis
// stands for are 52.. (right-aligned across operands, as numpy does).
enum {
  EIN_LETTERS = 52,
  EIN_LABELS = EIN_LETTERS + WM_MAX_RANK,
};

// One subscript term ("ij", "...k") as written and as expanded.
typedef struct ein_term {
  int32_t n_explicit;            // letters written
  int32_t letters[WM_MAX_RANK];  // letter labels in order
  int32_t ell_pos;               // letters before "...", -1 if none
  int32_t rank;                  // expanded rank, -1 when unknown
  int32_t labels[WM_MAX_RANK];   // label of each expanded dim
} ein_term_t;

// A parsed and resolved Einsum equation.
typedef struct ein {
  int32_t n_in;                // operands
  ein_term_t *in;              // per operand (heap)
  ein_term_t out;              // output term
  bool explicit_out;           // the equation has "->"
  int32_t ell_rank;            // dims the ellipsis stands for
  bool out_unknown;            // output rank unknown (static only)
  int64_t extent[EIN_LABELS];  // extent of each label, -1 unknown
  bool used[EIN_LABELS];       // label appears in some operand
} ein_t;

static int32_t ein_letter(char c) {
  if (c >= 'a' && c <= 'z') {
    return c - 'a';
  }
  if (c >= 'A' && c <= 'Z') {
    return 26 + (c - 'A');
  }
  return -1;
}

static char ein_char(int32_t label) {
  if (label < 26) {
    return (char)('a' + label);
  }
  if (label < EIN_LETTERS) {
    return (char)('A' + label - 26);
  }
  return '.';
}

// Parses the term in [s, e) into |t|; |which| names it in errors.
static wm_status_t ein_parse_term(const wm_op_ctx_t *ctx, const char *s,
                                  const char *e, const char *which,
                                  ein_term_t *t) {
  memset(t, 0, sizeof(*t));
  t->ell_pos = -1;
  t->rank = -1;
  for (const char *p = s; p < e; p++) {
    if (*p == ' ') {
      continue;
    }
    if (*p == '.') {
      if (e - p < 3 || p[1] != '.' || p[2] != '.') {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "equation: %s has a '.' that is not part of "
                           "'...'",
                           which);
      }
      if (t->ell_pos >= 0) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "equation: %s has more than one '...'", which);
      }
      t->ell_pos = t->n_explicit;
      p += 2;
      continue;
    }
    int32_t l = ein_letter(*p);
    if (l < 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "equation: %s has invalid character '%c' (0x%02x)",
                         which, *p, (unsigned)(unsigned char)*p);
    }
    if (t->n_explicit >= WM_MAX_RANK) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "equation: %s has more than %d subscripts", which,
                         WM_MAX_RANK);
    }
    t->letters[t->n_explicit++] = l;
  }
  return NULL;
}

static void ein_deinit(ein_t *e) {
  free(e->in);
  e->in = NULL;
}

// Folds dim |d| of input |operand| into the extent of |label| (a size-1
// dim broadcasts); |unknown| marks labels seen with an unknown dim.
static wm_status_t ein_merge(const wm_op_ctx_t *ctx, ein_t *e, int32_t label,
                             int64_t d, int32_t operand, bool *unknown) {
  if (d < 0) {
    unknown[label] = true;
    return NULL;
  }
  int64_t *x = &e->extent[label];
  if (*x < 0 || *x == 1) {
    *x = d;
  } else if (d != 1 && d != *x) {
    if (label >= EIN_LETTERS) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "ellipsis dim has extent %lld in input %d but %lld "
                         "in an earlier input",
                         (long long)d, operand, (long long)*x);
    }
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "label '%c' has extent %lld in input %d but %lld in "
                       "an earlier input",
                       ein_char(label), (long long)d, operand, (long long)*x);
  }
  return NULL;
}

// Parses the equation and resolves it against the input shapes.
static wm_status_t ein_init(const wm_op_ctx_t *ctx, ein_t *e) {
  memset(e, 0, sizeof(*e));
  for (int32_t i = 0; i < ctx->n_in; i++) {
    if (!wm_op_has_input(ctx, i)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input %d is omitted", i);
    }
  }
  const char *eq = wm_node_attr_string(ctx->node, "equation", NULL);
  if (!eq) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "missing attribute \"equation\"");
  }
  const char *arrow = strstr(eq, "->");
  if (arrow && strstr(arrow + 2, "->")) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "equation \"%s\" has more than one \"->\"", eq);
  }
  const char *lhs_end = arrow ? arrow : eq + strlen(eq);
  int32_t terms = 1;
  for (const char *p = eq; p < lhs_end; p++) {
    terms += *p == ',';
  }
  if (terms != ctx->n_in) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "equation \"%s\" has %d operand terms but the node "
                       "has %d inputs",
                       eq, terms, ctx->n_in);
  }
  e->n_in = ctx->n_in;
  e->in = wm_calloc((size_t)e->n_in, sizeof(ein_term_t));
  if (!e->in) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_status_t s = NULL;
  const char *p = eq;
  for (int32_t i = 0; i < e->n_in; i++) {
    const char *q = p;
    while (q < lhs_end && *q != ',') {
      q++;
    }
    char which[32];
    snprintf(which, sizeof(which), "term %d", i);
    s = ein_parse_term(ctx, p, q, which, &e->in[i]);
    if (s) {
      goto fail;
    }
    p = q + 1;
  }
  e->explicit_out = arrow != NULL;
  if (arrow) {
    s = ein_parse_term(ctx, arrow + 2, arrow + 2 + strlen(arrow + 2),
                       "output term", &e->out);
    if (s) {
      goto fail;
    }
  }

  // Expand ellipses against the input ranks.
  int32_t letter_count[EIN_LETTERS] = {0};
  bool ell_unknown = false;
  for (int32_t i = 0; i < e->n_in; i++) {
    ein_term_t *t = &e->in[i];
    const wm_shape_t *sh = wm_op_in_shape(ctx, i);
    for (int32_t j = 0; j < t->n_explicit; j++) {
      letter_count[t->letters[j]]++;
    }
    if (sh->rank < 0) {
      ell_unknown |= t->ell_pos >= 0;
      continue;
    }
    if (t->ell_pos < 0 && sh->rank != t->n_explicit) {
      s = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                      "term %d has %d subscripts but input %d has rank %d", i,
                      t->n_explicit, i, sh->rank);
      goto fail;
    }
    if (t->ell_pos >= 0 && sh->rank < t->n_explicit) {
      s = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                      "term %d has %d subscripts besides '...' but input "
                      "%d has rank %d",
                      i, t->n_explicit, i, sh->rank);
      goto fail;
    }
    int32_t ell = sh->rank - t->n_explicit;
    if (ell > e->ell_rank) {
      e->ell_rank = ell;
    }
  }
  for (int32_t i = 0; i < e->n_in; i++) {
    ein_term_t *t = &e->in[i];
    const wm_shape_t *sh = wm_op_in_shape(ctx, i);
    if (sh->rank < 0 && t->ell_pos >= 0) {
      continue;
    }
    int32_t ell = t->ell_pos >= 0 ? sh->rank - t->n_explicit : 0;
    t->rank = 0;
    for (int32_t j = 0; j <= t->n_explicit; j++) {
      if (j == t->ell_pos) {
        for (int32_t q = 0; q < ell; q++) {
          t->labels[t->rank++] = EIN_LETTERS + (e->ell_rank - ell) + q;
        }
      }
      if (j < t->n_explicit) {
        t->labels[t->rank++] = t->letters[j];
      }
    }
  }

  // The output term: written, or implicit (the ellipsis dims, then the
  // letters used exactly once in ASCII order, as numpy does).
  ein_term_t *o = &e->out;
  if (!e->explicit_out) {
    o->ell_pos = 0;
    for (int32_t c = 0; c < EIN_LETTERS; c++) {
      int32_t l = c < 26 ? 26 + c : c - 26;  // 'A'-'Z' sort before 'a'-'z'
      if (letter_count[l] != 1) {
        continue;
      }
      if (o->n_explicit >= WM_MAX_RANK) {
        s = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                        "equation \"%s\": implicit output has more than "
                        "%d dims",
                        eq, WM_MAX_RANK);
        goto fail;
      }
      o->letters[o->n_explicit++] = l;
    }
  }
  bool seen[EIN_LETTERS] = {false};
  for (int32_t j = 0; j < o->n_explicit; j++) {
    int32_t l = o->letters[j];
    if (letter_count[l] == 0) {
      s = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                      "equation \"%s\": output label '%c' does not appear "
                      "in any input",
                      eq, ein_char(l));
      goto fail;
    }
    if (seen[l]) {
      s = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                      "equation \"%s\": output label '%c' appears twice", eq,
                      ein_char(l));
      goto fail;
    }
    seen[l] = true;
  }
  if (o->ell_pos >= 0 && ell_unknown) {
    e->out_unknown = true;
    return NULL;
  }
  int32_t out_ell = o->ell_pos >= 0 ? e->ell_rank : 0;
  if (o->n_explicit + out_ell > WM_MAX_RANK) {
    s = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                    "equation \"%s\": output has %d dims, more than %d", eq,
                    o->n_explicit + out_ell, WM_MAX_RANK);
    goto fail;
  }
  o->rank = 0;
  for (int32_t j = 0; j <= o->n_explicit; j++) {
    if (j == o->ell_pos) {
      for (int32_t q = 0; q < out_ell; q++) {
        o->labels[o->rank++] = EIN_LETTERS + q;
      }
    }
    if (j < o->n_explicit) {
      o->labels[o->rank++] = o->letters[j];
    }
  }

  // Extents: repeated labels within an operand must agree exactly; across
  // operands a size-1 dim broadcasts.
  bool unknown[EIN_LABELS] = {false};
  for (int32_t l = 0; l < EIN_LABELS; l++) {
    e->extent[l] = -1;
  }
  for (int32_t i = 0; i < e->n_in; i++) {
    const ein_term_t *t = &e->in[i];
    const wm_shape_t *sh = wm_op_in_shape(ctx, i);
    for (int32_t d = 0; d < t->rank; d++) {
      int32_t l = t->labels[d];
      e->used[l] = true;
      int64_t dim = sh->rank >= 0 ? sh->dims[d] : -1;
      for (int32_t d2 = 0; d2 < d; d2++) {
        int64_t dim2 = sh->rank >= 0 ? sh->dims[d2] : -1;
        if (t->labels[d2] == l && dim >= 0 && dim2 >= 0 && dim != dim2) {
          s = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                          "label '%c' repeats in input %d with extents "
                          "%lld and %lld",
                          ein_char(l), i, (long long)dim2, (long long)dim);
          goto fail;
        }
      }
      s = ein_merge(ctx, e, l, dim, i, unknown);
      if (s) {
        goto fail;
      }
    }
  }
  for (int32_t l = 0; l < EIN_LABELS; l++) {
    if (unknown[l] && (e->extent[l] < 0 || e->extent[l] == 1)) {
      e->extent[l] = -1;
    }
  }
  return NULL;

fail:
  ein_deinit(e);
  return s;
}

static wm_status_t einsum_infer(wm_op_ctx_t *ctx) {
  for (int32_t i = 1; i < ctx->n_in; i++) {
    WM_RETURN_IF_ERROR(check_same_dtype(ctx, 0, i));
  }
  ein_t e;
  WM_RETURN_IF_ERROR(ein_init(ctx, &e));
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (e.out_unknown) {
    wm_op_set_out_unknown(ctx, 0, dt);
  } else {
    wm_shape_t y = {e.out.rank, {0}};
    for (int32_t d = 0; d < e.out.rank; d++) {
      y.dims[d] = e.extent[e.out.labels[d]];
    }
    wm_op_set_out(ctx, 0, dt, &y);
  }
  ein_deinit(&e);
  return NULL;
}

// Sets the label values of linear index |idx| over |labels| (row-major).
static void ein_unravel(const ein_t *e, const int32_t *labels, int32_t n,
                        size_t idx, int64_t *val) {
  for (int32_t j = n - 1; j >= 0; j--) {
    size_t ext = (size_t)e->extent[labels[j]];
    val[labels[j]] = (int64_t)(idx % ext);
    idx /= ext;
  }
}

static wm_status_t einsum_run(wm_op_ctx_t *ctx) {
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  ein_t e;
  WM_RETURN_IF_ERROR(ein_init(ctx, &e));
  wm_status_t s = NULL;
  bool is_int = wm_dtype_is_int(y->dtype);
  // Per operand and label: the element stride that label moves by (the
  // sum over repeated dims gives diagonals; broadcast dims add nothing).
  int64_t(*stride)[EIN_LABELS] =
      wm_calloc((size_t)e.n_in, sizeof(int64_t[EIN_LABELS]));
  if (!stride) {
    s = WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  for (int32_t i = 0; i < e.n_in; i++) {
    const wm_tensor_t *t = ctx->in[i];
    int64_t own[WM_MAX_RANK];
    wm_shape_strides(&t->shape, own);
    for (int32_t d = 0; d < e.in[i].rank; d++) {
      int32_t l = e.in[i].labels[d];
      if (t->shape.dims[d] != 1 || e.extent[l] == 1) {
        stride[i][l] += own[d];
      }
    }
  }
  bool in_out[EIN_LABELS] = {false};
  for (int32_t d = 0; d < e.out.rank; d++) {
    in_out[e.out.labels[d]] = true;
  }
  int32_t sum_labels[EIN_LABELS], used[EIN_LABELS];
  int32_t n_sum = 0, n_used = 0;
  size_t sum_count = 1;
  for (int32_t l = 0; l < EIN_LABELS; l++) {
    if (e.used[l]) {
      used[n_used++] = l;
    }
    if (e.used[l] && !in_out[l]) {
      sum_labels[n_sum++] = l;
      if (!wm_checked_mul(sum_count, (size_t)e.extent[l], &sum_count)) {
        s = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                        "summed index space overflows size_t");
        goto done;
      }
    }
  }
  int64_t val[EIN_LABELS] = {0};
  for (size_t oi = 0; oi < y->count; oi++) {
    ein_unravel(&e, e.out.labels, e.out.rank, oi, val);
    double acc = 0.0;
    int64_t iacc = 0;
    for (size_t si = 0; si < sum_count; si++) {
      ein_unravel(&e, sum_labels, n_sum, si, val);
      double prod = 1.0;
      int64_t iprod = 1;
      for (int32_t i = 0; i < e.n_in; i++) {
        size_t off = 0;
        for (int32_t u = 0; u < n_used; u++) {
          off += (size_t)(stride[i][used[u]] * val[used[u]]);
        }
        if (is_int) {
          iprod = wrap_mul(iprod, wm_tensor_get_i64(ctx->in[i], off));
        } else {
          prod *= wm_tensor_get_f64(ctx->in[i], off);
        }
      }
      if (is_int) {
        iacc = wrap_add(iacc, iprod);
      } else {
        acc += prod;
      }
    }
    if (is_int) {
      wm_tensor_set_i64(y, oi, iacc);
    } else {
      wm_tensor_set_f64(y, oi, acc);
    }
  }
done:
  free(stride);
  ein_deinit(&e);
  return s;
}

static void einsum_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  ein_t e;
  wm_status_t s = ein_init(ctx, &e);
  if (s) {
    wm_status_free(s);
    return;
  }
  double macs = 1.0;
  bool known = !e.out_unknown;
  for (int32_t l = 0; l < EIN_LABELS && known; l++) {
    if (e.used[l]) {
      known = e.extent[l] >= 0;
      macs *= (double)e.extent[l];
    }
  }
  ein_deinit(&e);
  if (known) {
    out->macs = macs;
    out->flops = 2.0 * macs;
  }
}

// ------------------------------------------------------------------- Det

// Checks that |x| (when its rank is known) is a batch of square matrices.
static wm_status_t det_check(const wm_op_ctx_t *ctx, const wm_shape_t *x) {
  if (x->rank < 0) {
    return NULL;
  }
  char buf[128];
  if (x->rank < 2) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %s has rank %d, want at least 2",
                       wm_shape_format(x, buf, sizeof(buf)), x->rank);
  }
  int64_t m = x->dims[x->rank - 2], n = x->dims[x->rank - 1];
  if (m >= 0 && n >= 0 && m != n) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %s holds %lldx%lld matrices, want square ones",
                       wm_shape_format(x, buf, sizeof(buf)), (long long)m,
                       (long long)n);
  }
  return NULL;
}

static wm_status_t det_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  WM_RETURN_IF_ERROR(det_check(ctx, x));
  if (x->rank < 0) {
    wm_op_set_out_unknown(ctx, 0, dtype);
    return NULL;
  }
  wm_shape_t y = wm_shape_make(x->rank - 2, x->dims);
  wm_op_set_out(ctx, 0, dtype, &y);
  return NULL;
}

// Returns the determinant of the n x n row-major matrix |a| (destroyed)
// by LU decomposition with partial pivoting.
static double det_lu(double *a, size_t n) {
  double det = 1.0;
  for (size_t k = 0; k < n; k++) {
    size_t piv = k;
    double best = fabs(a[k * n + k]);
    for (size_t r = k + 1; r < n; r++) {
      double v = fabs(a[r * n + k]);
      if (v > best) {
        best = v;
        piv = r;
      }
    }
    if (best == 0.0) {
      return 0.0;  // singular (a NaN pivot falls through and propagates)
    }
    if (piv != k) {
      for (size_t c = k; c < n; c++) {
        double t = a[k * n + c];
        a[k * n + c] = a[piv * n + c];
        a[piv * n + c] = t;
      }
      det = -det;
    }
    double p = a[k * n + k];
    det *= p;
    for (size_t r = k + 1; r < n; r++) {
      double f = a[r * n + k] / p;
      if (f == 0.0) {
        continue;
      }
      for (size_t c = k + 1; c < n; c++) {
        a[r * n + c] -= f * a[k * n + c];
      }
    }
  }
  return det;
}

static wm_status_t det_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  WM_RETURN_IF_ERROR(det_check(ctx, &x->shape));
  size_t n = (size_t)x->shape.dims[x->shape.rank - 1], nn = n * n;
  if (y->count == 0) {
    return NULL;
  }
  double *a = wm_malloc((nn ? nn : 1) * sizeof(double));
  if (!a) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for a %zux%zu matrix", n, n);
  }
  for (size_t b = 0; b < y->count; b++) {
    for (size_t i = 0; i < nn; i++) {
      a[i] = wm_tensor_get_f64(x, b * nn + i);
    }
    wm_tensor_set_f64(y, b, det_lu(a, n));
  }
  free(a);
  return NULL;
}

static void det_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  const wm_shape_t *x = wm_op_in_shape(ctx, 0);
  if (!wm_shape_is_known(x) || x->rank < 2) {
    return;
  }
  double batch = 1.0, n = (double)x->dims[x->rank - 1];
  for (int32_t d = 0; d < x->rank - 2; d++) {
    batch *= (double)x->dims[d];
  }
  out->macs = batch * n * n * n / 3.0;
  out->flops = 2.0 * out->macs;
}

// ------------------------------------------------- compute definitions

// Adds operand |input| of rank |rank| read through |acc| as tensor |name|.
static wm_status_t define_operand(const wm_op_ctx_t *ctx, wm_gen_compute_t *out,
                                  int32_t input, const char *name,
                                  const wm_gen_access_t *acc, int32_t *load) {
  const wm_shape_t *s = wm_op_in_shape(ctx, input);
  WM_RETURN_IF_ERROR(
      wm_gen_input_access(out, name, s->rank, s->dims, NULL, acc, load));
  out->tensors[out->n_tensors - 1].operand = input;
  return NULL;
}

// MatMul: Y[batch, m, n] = sum_k A[batch', m, k] * B[batch'', k, n], the
// batch dims of A and B broadcast (numpy), 1-D operands without their m or
// n axis.
static wm_status_t matmul_define(const wm_op_ctx_t *ctx,
                                 wm_gen_compute_t *out) {
  matmul_dims_t d;
  WM_RETURN_IF_ERROR(matmul_dims(ctx, &d));
  const wm_shape_t *y = &ctx->out_types[0].shape;
  if (!wm_op_define_float(ctx) || y->rank + 1 > WM_GEN_MAX_AXES) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 of "
                       "known shape)");
  }
  WM_RETURN_IF_ERROR(wm_gen_begin(out, "MatMul", y->rank, y->dims, NULL));
  int32_t k;
  WM_RETURN_IF_ERROR(wm_gen_reduce_axis(out, "k", d.k, &k));
  int32_t nb = d.batch.rank, am = nb, bn = y->rank - 1;
  int32_t loads[2];
  for (int32_t t = 0; t < 2; t++) {
    const wm_shape_t *s = wm_op_in_shape(ctx, t);
    bool vec = t == 0 ? d.a_vec : d.b_vec;
    int32_t rb = vec ? 0 : s->rank - 2;  // its batch dims
    wm_gen_access_t acc;
    memset(&acc, 0, sizeof(acc));
    for (int32_t i = 0; i < rb; i++) {
      acc.coef[i][nb - rb + i] = s->dims[i] == 1 ? 0 : 1;
    }
    if (t == 0) {
      if (!vec) {
        acc.coef[rb][am] = 1;
      }
      acc.coef[s->rank - 1][k] = 1;
    } else {
      acc.coef[vec ? 0 : rb][k] = 1;
      if (!vec) {
        acc.coef[rb + 1][bn] = 1;
      }
    }
    WM_RETURN_IF_ERROR(
        define_operand(ctx, out, t, t == 0 ? "A" : "B", &acc, &loads[t]));
  }
  int32_t body;
  WM_RETURN_IF_ERROR(wm_gen_binary(out, WM_GEN_MUL, loads[0], loads[1], &body));
  return wm_gen_finish_reduce(out, WM_GEN_ADD, 0.0f, body, -1);
}

// Gemm: Y[m, n] = alpha * sum_k A'[m, k] * B'[k, n] + beta * C, A' and
// B' read transposed as transA and transB say, C broadcast.
static wm_status_t gemm_define(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  gemm_dims_t g;
  WM_RETURN_IF_ERROR(gemm_dims(ctx, &g));
  if (!wm_op_define_float(ctx)) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 of "
                       "known shape)");
  }
  const wm_node_t *n = ctx->node;
  bool ta = wm_node_attr_int(n, "transA", 0) != 0;
  bool tb = wm_node_attr_int(n, "transB", 0) != 0;
  float alpha = wm_node_attr_float(n, "alpha", 1.0f);
  float beta = wm_node_attr_float(n, "beta", 1.0f);
  int64_t dims[2] = {g.m, g.n};
  WM_RETURN_IF_ERROR(wm_gen_begin(out, "Gemm", 2, dims, NULL));
  int32_t k, la, lb;
  WM_RETURN_IF_ERROR(wm_gen_reduce_axis(out, "k", g.k, &k));
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  acc.coef[ta ? 1 : 0][0] = 1;
  acc.coef[ta ? 0 : 1][k] = 1;
  WM_RETURN_IF_ERROR(define_operand(ctx, out, 0, "A", &acc, &la));
  memset(&acc, 0, sizeof(acc));
  acc.coef[tb ? 1 : 0][k] = 1;
  acc.coef[tb ? 0 : 1][1] = 1;
  WM_RETURN_IF_ERROR(define_operand(ctx, out, 1, "B", &acc, &lb));
  wm_gen_builder_t b = {out, NULL};
  int32_t body = wm_gen_f2(&b, WM_GEN_MUL, la, lb);
  int32_t epi = -1;
  if (alpha != 1.0f || wm_op_has_input(ctx, 2)) {
    int32_t a;
    WM_RETURN_IF_ERROR(wm_gen_acc(out, &a));
    epi = alpha != 1.0f ? wm_gen_f2(&b, WM_GEN_MUL, a, wm_gen_k(&b, alpha)) : a;
  }
  if (wm_op_has_input(ctx, 2)) {
    const wm_shape_t *cs = wm_op_in_shape(ctx, 2);
    int32_t lc;
    WM_RETURN_IF_ERROR(wm_gen_input(out, "C", cs->rank, cs->dims, &lc));
    out->tensors[out->n_tensors - 1].operand = 2;
    if (beta != 1.0f) {
      lc = wm_gen_f2(&b, WM_GEN_MUL, lc, wm_gen_k(&b, beta));
    }
    epi = wm_gen_f2(&b, WM_GEN_ADD, epi, lc);
  }
  WM_RETURN_IF_ERROR(b.st);
  return wm_gen_finish_reduce(out, WM_GEN_ADD, 0.0f, body, epi);
}

// Gemm accepts integer types from opset 11; the mask is the union and
// older models with integer Gemm are rare enough not to split on it.
#define GEMM_TYPES \
  (WM_TYPES_FLOAT | WM_T(INT32) | WM_T(INT64) | WM_T(UINT32) | WM_T(UINT64))

const wm_op_def_t wm_ops_linalg[] = {
    {"Gemm", "", 1, 3, 3, 1, 1, GEMM_TYPES, gemm_infer, gemm_run, gemm_cost, 0,
     gemm_resolve, gemm_define},
    {"Gemm", "", 11, 2, 3, 1, 1, GEMM_TYPES, gemm_infer, gemm_run, gemm_cost, 0,
     gemm_resolve, gemm_define},
    {"MatMul", "", 1, 2, 2, 1, 1, GEMM_TYPES, matmul_infer, matmul_run,
     matmul_cost, 0, NULL, matmul_define},
    {"Einsum", "", 12, 1, -1, 1, 1, WM_TYPES_NUMERIC, einsum_infer, einsum_run,
     einsum_cost},
    {"Det", "", 11, 1, 1, 1, 1, WM_TYPES_FLOAT, det_infer, det_run, det_cost},
    WM_OPS_END,
};
