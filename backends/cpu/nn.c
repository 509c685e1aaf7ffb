// Neural-network kernels of the cpu backend: Softmax and LogSoftmax,
// LayerNormalization, inference BatchNormalization, and 1-D to 3-D max
// (with Indices), average and Lp pooling with their global forms. float32
// throughout.
//
// Row-wise kernels (softmax along the last dim, layer norm) split rows
// over the pool; softmax along an inner axis works on column blocks so the
// loops stay contiguous. Pools split output rows (plane, output row) and
// precompute each output column's valid taps once per plan.

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "maxpool.h"

// Answers NONE unless input 0 and output 0 are float32.
static bool f32_io(const wm_op_desc *op) {
  return op->n_in >= 1 && op->in[0].dtype == K_FLOAT && k_has_output(op, 0) &&
         op->out[0].dtype == K_FLOAT;
}

// -------------------------------------------------------------- Softmax

typedef struct sm_plan {
  bool log;      // LogSoftmax
  size_t outer;  // rows before the axis
  size_t n;      // reduced length
  size_t inner;  // stride of the axis (1 = contiguous rows)
  size_t count;  // elements
} sm_plan_t;

static bool sm_shape(const wm_op_desc *op, sm_plan_t *p) {
  const wm_tensor_desc *x = &op->in[0];
  int32_t rank = (int32_t)x->rank, axis;
  int64_t legacy;
  if (!cpu_param_axis(op, &axis) || !cpu_param_int(op, "flatten", &legacy)) {
    return false;
  }
  p->outer = k_desc_span(x, 0, axis);
  p->n = legacy ? k_desc_span(x, axis, rank) : (size_t)x->dims[axis];
  p->inner = legacy ? 1 : k_desc_span(x, axis + 1, rank);
  p->count = cpu_desc_count(x);
  return true;
}

static uint32_t sm_query(const wm_op_desc *op, uint32_t *why,
                         const char **detail) {
  if (!f32_io(op)) {
    return k_none(why, detail, WM_WHY_DTYPE, "float32 only");
  }
  sm_plan_t p;
  if (op->in[0].rank == 0 || !sm_shape(op, &p)) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "the axis is resolved by the host for known shapes");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *sm_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  sm_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  if (!k_dims_known(&op->in[0]) || !sm_shape(op, p)) {
    free(p);
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (%s): axis outside the rank", op->name,
                     op->op_type);
  }
  p->log = op->op_type[0] == 'L';
  *out_state = p;
  return NULL;
}

typedef struct sm_job {
  const sm_plan_t *p;
  const float *x;
  float *y;
  size_t blocks;  // column blocks per outer row (inner > 1)
} sm_job_t;

enum { SM_BLOCK = 128 };

// A row whose maximum is NaN or infinite, or that holds a NaN: the
// reference's arithmetic in double.
static void sm_row_slow(const float *x, float *y, size_t n, bool log_sm) {
  float m = k_row_max(x, n);
  double s = 0;
  for (size_t k = 0; k < n; k++) {
    s += exp((double)x[k] - (double)m);
  }
  for (size_t k = 0; k < n; k++) {
    double v = (double)x[k] - (double)m;
    y[k] = (float)(log_sm ? v - log(s) : exp(v) / s);
  }
}

// The row loops run on GNU vectors of SM_LANES floats (one AVX2 register,
// half an AVX-512 one, a pair of SSE ones; 16 were AVX2 register pairs
// and spilled: 2.0 GB/s) and sum in a fixed order (below): every clone
// gives the same bits.
enum { SM_LANES = 8 };
typedef float sm_vf __attribute__((vector_size(SM_LANES * 4)));
typedef int32_t sm_vi __attribute__((vector_size(SM_LANES * 4)));
typedef float sm_vh __attribute__((vector_size(SM_LANES * 2)));
typedef double sm_vd __attribute__((vector_size(SM_LANES * 4)));

// e^(x[l] - m) into e[l] for the SM_LANES lanes (all <= 0, none NaN: the
// row is finite) by k_expf8: the bits of k_expf in every clone.
static inline __attribute__((always_inline)) void sm_expv(
    const float *restrict x, float m, float *restrict e) {
  _Static_assert(SM_LANES == 8, "one k_f8 per row vector");
  k_f8 d = *(const k_f8 *)x - m;
  k_expf8(&d, true);
  memcpy(e, &d, sizeof(d));
}

// The sum runs in SM_LANES float lanes, each flushed into SM_LANES doubles
// after at most SM_FLUSH terms in [0, 1] (relative error < 4e-6).
enum { SM_FLUSH = 64 };

// The running maximum of the non-NaN values of a row and its NaN flag.
typedef struct sm_max_acc {
  sm_vf m;
  sm_vi un;
} sm_max_acc_t;

static inline __attribute__((always_inline)) void sm_max_init(sm_max_acc_t *a) {
  a->m = (sm_vf){0} - INFINITY;
  a->un = (sm_vi){0};
}

// Folds x[0, SM_LANES) into |a|.
static inline __attribute__((always_inline)) void sm_max_add(sm_max_acc_t *a,
                                                             const float *x) {
  sm_vf v;
  memcpy(&v, x, sizeof(v));
  sm_vi gt = v > a->m;  // false for a NaN v: it never wins
  a->m = (sm_vf)((gt & (sm_vi)v) | (~gt & (sm_vi)a->m));
  a->un |= v != v;
}

// Folds the lanes of |a| and x[0, n) (n < SM_LANES): the maximum of the
// non-NaN values (-inf when there are none), *has_nan when any was NaN.
static inline __attribute__((always_inline)) float sm_max_end(
    const sm_max_acc_t *a, const float *x, size_t n, bool *has_nan) {
  float m = -INFINITY;
  bool any = false;
  for (size_t i = 0; i < n; i++) {
    m = x[i] > m ? x[i] : m;
    any |= x[i] != x[i];
  }
  for (int l = 0; l < SM_LANES; l++) {
    m = a->m[l] > m ? a->m[l] : m;
    any |= a->un[l] != 0;
  }
  *has_nan = any;
  return m;
}

// Sum of e^(x[k] - m) over the row, each term also stored to y[k] when y
// is not NULL. Meanwhile it takes the maximum of the next row xn (same
// length; *mn and *nn as sm_max_end sets them), so that its loads overlap
// this row's arithmetic, and prefetches the row after, pf for reading and
// py for writing.
static inline __attribute__((always_inline)) double sm_exp_sum(
    const float *restrict x, float *restrict y, size_t n, float m,
    const float *xn, float *mn, bool *nn, const float *pf, const float *py) {
  sm_vd s0 = {0}, s1 = {0};
  sm_max_acc_t acc;
  sm_max_init(&acc);
  size_t i = 0;
  while (i + SM_LANES <= n) {
    sm_vf sf = {0};
    int b = 0;
    // Two vectors a step, so that their exponentials overlap; the sum
    // still takes them in order.
    for (; b + 2 <= SM_FLUSH && i + 2 * SM_LANES <= n;
         b += 2, i += 2 * SM_LANES) {
      __builtin_prefetch(pf + i, 0, 3);
      __builtin_prefetch(py + i, 1, 3);
      sm_max_add(&acc, xn + i);
      sm_max_add(&acc, xn + i + SM_LANES);
      sm_vf e0, e1;
      sm_expv(x + i, m, (float *)&e0);
      sm_expv(x + i + SM_LANES, m, (float *)&e1);
      if (y) {
        memcpy(y + i, &e0, sizeof(e0));
        memcpy(y + i + SM_LANES, &e1, sizeof(e1));
      }
      sf += e0;
      sf += e1;
    }
    for (; b < SM_FLUSH && i + SM_LANES <= n; b++, i += SM_LANES) {
      __builtin_prefetch(pf + i, 0, 3);
      __builtin_prefetch(py + i, 1, 3);
      sm_max_add(&acc, xn + i);
      sm_vf e;
      sm_expv(x + i, m, (float *)&e);
      if (y) {
        memcpy(y + i, &e, sizeof(e));
      }
      sf += e;
    }
    sm_vh h0, h1;
    memcpy(&h0, &sf, sizeof(h0));
    memcpy(&h1, (const char *)&sf + sizeof(h0), sizeof(h1));
    s0 += __builtin_convertvector(h0, sm_vd);
    s1 += __builtin_convertvector(h1, sm_vd);
  }
  *mn = sm_max_end(&acc, xn + i, n - i, nn);
  double s = 0;
  for (; i < n; i++) {
    float e = k_expf(x[i] - m);
    if (y) {
      y[i] = e;
    }
    s += (double)e;
  }
  for (int l = 0; l < SM_LANES / 2; l++) {
    s += s0[l] + s1[l];
  }
  return s;
}

// Rows [begin, end) along the last dim, in three passes over each row
// (one of up to some thousand floats stays in L1): the maximum with a NaN
// check (for all rows but the first, taken during the previous row's
// second pass), e^(x-m) with its sum, and the scaling.
// Built for AVX-512, AVX2 and baseline x86-64 (K_CLONES).
K_CLONES static void sm_rows(void *ctx, size_t begin, size_t end) {
  const sm_job_t *j = ctx;
  size_t n = j->p->n;
  bool log_sm = j->p->log;
  bool has_nan = false, known = false;
  float m = 0;
  for (size_t o = begin; o < end; o++) {
    const float *restrict x = j->x + o * n;
    float *restrict y = j->y + o * n;
    if (!known) {
      sm_max_acc_t acc;
      sm_max_init(&acc);
      size_t i = 0;
      for (; i + SM_LANES <= n; i += SM_LANES) {
        sm_max_add(&acc, x + i);
      }
      m = sm_max_end(&acc, x + i, n - i, &has_nan);
    }
    // The next row of this range and the one after (this one again past
    // the end).
    size_t next = o + 1 < end ? n : 0;
    size_t after = o + 2 < j->p->outer ? 2 * n : 0;
    if (has_nan || m == INFINITY || m == -INFINITY) {
      sm_row_slow(x, y, n, log_sm);
      known = false;
      continue;
    }
    // m is finite and no x is NaN: every e^(x-m) lies in [0, 1].
    float mn;
    bool nn;
    double s = log_sm ? sm_exp_sum(x, NULL, n, m, x + next, &mn, &nn, x + after,
                                   y + after)
                      : sm_exp_sum(x, y, n, m, x + next, &mn, &nn, x + after,
                                   y + after);
    float a = log_sm ? (float)log(s) : (float)(1.0 / s);
    if (log_sm) {
      for (size_t k = 0; k < n; k++) {
        y[k] = (x[k] - m) - a;
      }
    } else {
      for (size_t k = 0; k < n; k++) {
        y[k] *= a;
      }
    }
    m = mn;
    has_nan = nn;
    known = next != 0;
  }
}

K_CLONES static void sm_cols(void *ctx, size_t begin, size_t end) {
  const sm_job_t *j = ctx;
  const sm_plan_t *p = j->p;
  float m[SM_BLOCK];
  double s[SM_BLOCK];
  for (size_t item = begin; item < end; item++) {
    size_t o = item / j->blocks, c0 = (item % j->blocks) * SM_BLOCK;
    size_t w = p->inner - c0 < SM_BLOCK ? p->inner - c0 : SM_BLOCK;
    const float *x = j->x + o * p->n * p->inner + c0;
    float *y = j->y + o * p->n * p->inner + c0;
    for (size_t c = 0; c < w; c++) {
      m[c] = -INFINITY;
      s[c] = 0;
    }
    for (size_t k = 0; k < p->n; k++) {
      const float *restrict xr = x + k * p->inner;
      for (size_t c = 0; c < w; c++) {
        m[c] = k_max_nan(m[c], xr[c]);
      }
    }
    for (size_t k = 0; k < p->n; k++) {
      const float *restrict xr = x + k * p->inner;
      float *restrict yr = y + k * p->inner;
      for (size_t c = 0; c < w; c++) {
        yr[c] = k_expf(xr[c] - m[c]);
      }
      for (size_t c = 0; c < w; c++) {
        s[c] += (double)yr[c];
      }
    }
    for (size_t k = 0; k < p->n; k++) {
      const float *restrict xr = x + k * p->inner;
      float *restrict yr = y + k * p->inner;
      for (size_t c = 0; c < w; c++) {
        yr[c] = p->log ? (xr[c] - m[c]) - (float)log(s[c])
                       : (float)((double)yr[c] / s[c]);
      }
    }
  }
}

static wm_error *sm_run(void *state, const cpu_run_t *run) {
  const sm_plan_t *p = state;
  if (run->in[0].count != p->count || run->out[0].count != p->count) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "softmax kernel: tensors do not match the plan");
  }
  if (p->count == 0) {
    return NULL;
  }
  sm_job_t j = {p, run->in[0].data, run->out[0].data, 1};
  if (p->inner == 1) {
    k_for(run->pool, p->outer, k_row_grain(p->n, K_GRAIN_HEAVY), sm_rows, &j);
  } else {
    j.blocks = (p->inner + SM_BLOCK - 1) / SM_BLOCK;
    size_t w = p->inner < SM_BLOCK ? p->inner : SM_BLOCK;
    k_for(run->pool, p->outer * j.blocks, k_row_grain(p->n * w, K_GRAIN_HEAVY),
          sm_cols, &j);
  }
  return NULL;
}

// --------------------------------------------------- LayerNormalization

typedef struct ln_plan {
  size_t outer;                   // rows
  size_t inner;                   // normalized elements per row
  float eps;                      // epsilon
  bool scale_scalar;              // Scale has one element
  bool has_bias;                  // B present
  bool bias_scalar;               // B has one element
  size_t count;                   // elements of X
  int kind[2];                    // Scale's and B's ln_param_kind
  size_t pcount[2];               // their elements
  int32_t nr;                     // normalized dims
  int64_t ndims[CPU_MAX_RANK];    // their sizes
  int64_t pstr[2][CPU_MAX_RANK];  // broadcast strides of Scale and B
  float *buf;                     // 2 * inner: Scale and B expanded (kind 3)
} ln_plan_t;

static void ln_destroy(void *state) {
  ln_plan_t *p = state;
  if (p) {
    free(p->buf);
    free(p);
  }
}

// 1 when |d| covers the normalized dims [axis, rank) of |x| exactly (up to
// leading 1s), 2 when it has one element, 3 when it broadcasts to them
// otherwise, 0 when it does not.
static int ln_param_kind(const wm_tensor_desc *d, const wm_tensor_desc *x,
                         int32_t axis) {
  int32_t nr = (int32_t)x->rank - axis;
  if (cpu_desc_count(d) == 1) {
    return 2;
  }
  if ((int32_t)d->rank > nr) {
    return 0;
  }
  bool exact = true;
  for (int32_t i = 0; i < (int32_t)d->rank; i++) {
    int64_t want = x->dims[(int32_t)x->rank - (int32_t)d->rank + i];
    if (d->dims[i] != want && d->dims[i] != 1) {
      return 0;
    }
    exact = exact && d->dims[i] == want;
  }
  return exact && cpu_desc_count(d) == k_desc_span(x, axis, (int32_t)x->rank)
             ? 1
             : 3;
}

static uint32_t ln_query(const wm_op_desc *op, uint32_t *why,
                         const char **detail) {
  if (!f32_io(op) || op->n_in < 2 || op->in[1].dtype != K_FLOAT ||
      (op->n_in > 2 && op->in[2].dtype != 0 && op->in[2].dtype != K_FLOAT)) {
    return k_none(why, detail, WM_WHY_DTYPE, "float32 only");
  }
  int64_t stash;
  int32_t axis;
  if (!cpu_param_int(op, "stash_type", &stash) || !cpu_param_axis(op, &axis)) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "the axis is resolved by the host for known shapes");
  }
  if (stash != K_FLOAT) {
    return k_none(why, detail, WM_WHY_ATTR, "stash_type float32 only");
  }
  for (uint32_t i = 1; i < op->n_out; i++) {
    if (op->out[i].dtype != 0 && op->out[i].dtype != K_FLOAT) {
      return k_none(why, detail, WM_WHY_DTYPE, "float32 statistics only");
    }
  }
  if (!ln_param_kind(&op->in[1], &op->in[0], axis) ||
      (op->n_in > 2 && op->in[2].dtype != 0 &&
       !ln_param_kind(&op->in[2], &op->in[0], axis))) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "Scale and B must broadcast to the normalized shape");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *ln_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  const wm_tensor_desc *x = &op->in[0];
  int32_t axis;
  int ks = 0, kb = 0;
  bool has_bias = op->n_in > 2 && op->in[2].dtype != 0;
  const wm_op_attr *eps = cpu_param(op, "epsilon");
  if (k_dims_known(x) && x->rank > 0 && cpu_param_axis(op, &axis) && eps &&
      eps->type == 1) {
    ks = ln_param_kind(&op->in[1], x, axis);
    kb = has_bias ? ln_param_kind(&op->in[2], x, axis) : 1;
  }
  if (!ks || !kb) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (LayerNormalization): axis or parameter "
                     "shapes do not fit",
                     op->name);
  }
  ln_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  p->outer = k_desc_span(x, 0, axis);
  p->inner = k_desc_span(x, axis, (int32_t)x->rank);
  p->eps = eps->f;
  p->scale_scalar = ks == 2;
  p->has_bias = has_bias;
  p->bias_scalar = kb == 2;
  p->count = cpu_desc_count(x);
  p->kind[0] = ks;
  p->kind[1] = has_bias ? kb : 0;
  p->nr = (int32_t)x->rank - axis;
  memcpy(p->ndims, x->dims + axis, (size_t)p->nr * sizeof(int64_t));
  for (int i = 0; i < 2; i++) {
    if (p->kind[i] == 0) {
      continue;
    }
    const wm_tensor_desc *d = &op->in[1 + i];
    p->pcount[i] = cpu_desc_count(d);
    int64_t st = 1;
    for (int32_t k = p->nr - 1; k >= 0; k--) {
      int32_t j = k - (p->nr - (int32_t)d->rank);
      int64_t dim = j >= 0 ? d->dims[j] : 1;
      p->pstr[i][k] = dim == 1 ? 0 : st;
      st *= dim;
    }
  }
  if (ks == 3 || kb == 3) {
    p->buf = malloc(2 * (p->inner ? p->inner : 1) * sizeof(float));
    if (!p->buf) {
      ln_destroy(p);
      return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  *out_state = p;
  return NULL;
}

// Writes |src| broadcast by strides |st| over the normalized dims to dst.
static void ln_expand(const ln_plan_t *p, const int64_t *st, const float *src,
                      float *dst) {
  int64_t idx[CPU_MAX_RANK] = {0}, off = 0;
  for (size_t i = 0; i < p->inner; i++) {
    dst[i] = src[off];
    for (int32_t k = p->nr - 1; k >= 0; k--) {
      off += st[k];
      if (++idx[k] < p->ndims[k]) {
        break;
      }
      off -= st[k] * p->ndims[k];
      idx[k] = 0;
    }
  }
}

typedef struct ln_job {
  const ln_plan_t *p;
  const float *x, *sc, *b;
  float *y, *mean, *inv;
} ln_job_t;

static void ln_rows(void *ctx, size_t begin, size_t end) {
  const ln_job_t *j = ctx;
  const ln_plan_t *p = j->p;
  size_t n = p->inner;
  for (size_t o = begin; o < end; o++) {
    const float *restrict x = j->x + o * n;
    float *restrict y = j->y + o * n;
    double mean = n ? k_row_sum(x, n) / (double)n : 0;
    float mf = (float)mean;
    double v[K_LANES] = {0};
    size_t i = 0;
    for (; i + K_LANES <= n; i += K_LANES) {
      for (int l = 0; l < K_LANES; l++) {
        double d = (double)x[i + (size_t)l] - mean;
        v[l] += d * d;
      }
    }
    double var = 0;
    for (; i < n; i++) {
      double d = (double)x[i] - mean;
      var += d * d;
    }
    for (int l = 0; l < K_LANES; l++) {
      var += v[l];
    }
    double invd = 1.0 / sqrt((n ? var / (double)n : 0) + (double)p->eps);
    float inv = (float)invd;
    const float *restrict sc = j->sc;
    const float *restrict b = j->b;
    if (!p->scale_scalar && p->has_bias && !p->bias_scalar) {
      for (size_t k = 0; k < n; k++) {
        y[k] = (x[k] - mf) * inv * sc[k] + b[k];
      }
    } else {
      float s0 = sc[0], b0 = p->has_bias ? b[0] : 0.0f;
      for (size_t k = 0; k < n; k++) {
        float s = p->scale_scalar ? s0 : sc[k];
        float bb = !p->has_bias ? 0.0f : p->bias_scalar ? b0 : b[k];
        y[k] = (x[k] - mf) * inv * s + bb;
      }
    }
    if (j->mean) {
      j->mean[o] = mf;
    }
    if (j->inv) {
      j->inv[o] = inv;
    }
  }
}

static wm_error *ln_run(void *state, const cpu_run_t *run) {
  const ln_plan_t *p = state;
  if (run->in[0].count != p->count || run->out[0].count != p->count) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "LayerNormalization kernel: tensors do not match the "
                     "plan");
  }
  for (int i = 0; i < 2; i++) {
    if (p->kind[i] && (run->n_in <= (uint32_t)(1 + i) ||
                       run->in[1 + i].count != p->pcount[i])) {
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "LayerNormalization kernel: input %d does not match "
                       "the plan",
                       1 + i);
    }
  }
  ln_job_t j = {
      p, run->in[0].data, run->in[1].data, NULL, run->out[0].data, NULL, NULL};
  if (p->has_bias) {
    j.b = run->in[2].data;
  }
  if (p->kind[0] == 3) {
    ln_expand(p, p->pstr[0], run->in[1].data, p->buf);
    j.sc = p->buf;
  }
  if (p->kind[1] == 3) {
    ln_expand(p, p->pstr[1], run->in[2].data, p->buf + p->inner);
    j.b = p->buf + p->inner;
  }
  for (uint32_t i = 1; i < 3 && i < run->n_out; i++) {
    if (run->out[i].data && run->out[i].count != p->outer) {
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "LayerNormalization kernel: output %u has %zu "
                       "elements, want %zu",
                       i, run->out[i].count, p->outer);
    }
    *(i == 1 ? &j.mean : &j.inv) = run->out[i].data;
  }
  if (p->count == 0) {
    return NULL;
  }
  k_for(run->pool, p->outer, k_row_grain(p->inner, K_GRAIN / 2), ln_rows, &j);
  return NULL;
}

// --------------------------------------------------- BatchNormalization

typedef struct bn_plan {
  size_t n, c, inner;  // X as [N, C, inner]
  float eps;           // epsilon
} bn_plan_t;

static uint32_t bn_query(const wm_op_desc *op, uint32_t *why,
                         const char **detail) {
  if (!f32_io(op) || op->n_in != 5) {
    return k_none(why, detail, WM_WHY_DTYPE, "float32 only");
  }
  if (op->in[0].rank < 2) {
    return k_none(why, detail, WM_WHY_RANK, "X needs rank at least 2");
  }
  for (uint32_t i = 1; i < 5; i++) {
    const wm_tensor_desc *d = &op->in[i];
    if (d->dtype != K_FLOAT) {
      return k_none(why, detail, WM_WHY_DTYPE, "float32 parameters only");
    }
    if (d->rank != 1 || d->dims[0] != op->in[0].dims[1]) {
      return k_none(why, detail, WM_WHY_SHAPE,
                    "parameters must be 1-D of the channel count");
    }
  }
  for (uint32_t i = 1; i < op->n_out; i++) {
    if (op->out[i].dtype != 0) {
      return k_none(why, detail, WM_WHY_ATTR,
                    "training statistics outputs are not implemented");
    }
  }
  int64_t training, spatial;
  const wm_op_attr *eps = cpu_param(op, "epsilon");
  if (!cpu_param_int(op, "training_mode", &training) ||
      !cpu_param_int(op, "spatial", &spatial) || !eps || eps->type != 1) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "the parameters are resolved by the host for known shapes");
  }
  if (training != 0) {
    return k_none(why, detail, WM_WHY_ATTR, "training mode");
  }
  if (spatial != 1) {
    return k_none(why, detail, WM_WHY_ATTR, "spatial=0");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *bn_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  const wm_tensor_desc *x = &op->in[0];
  if (!k_dims_known(x) || x->rank < 2) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (BatchNormalization): X needs rank 2+",
                     op->name);
  }
  bn_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  p->n = (size_t)x->dims[0];
  p->c = (size_t)x->dims[1];
  p->inner = k_desc_span(x, 2, (int32_t)x->rank);
  p->eps = cpu_param(op, "epsilon")->f;  // the query saw it
  *out_state = p;
  return NULL;
}

typedef struct bn_job {
  const bn_plan_t *p;
  const float *x, *scale, *bias, *mean, *var;
  float *y;
} bn_job_t;

static void bn_planes(void *ctx, size_t begin, size_t end) {
  const bn_job_t *j = ctx;
  size_t inner = j->p->inner;
  for (size_t pl = begin; pl < end; pl++) {
    size_t ch = pl % j->p->c;
    double inv = 1.0 / sqrt((double)j->var[ch] + (double)j->p->eps);
    float a = (float)(inv * (double)j->scale[ch]);
    float m = j->mean[ch], b = j->bias[ch];
    const float *restrict x = j->x + pl * inner;
    float *restrict y = j->y + pl * inner;
    for (size_t i = 0; i < inner; i++) {
      y[i] = (x[i] - m) * a + b;
    }
  }
}

static wm_error *bn_run(void *state, const cpu_run_t *run) {
  const bn_plan_t *p = state;
  size_t count = p->n * p->c * p->inner;
  if (run->n_in != 5 || run->in[0].count != count ||
      run->out[0].count != count) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "BatchNormalization kernel: tensors do not match the "
                     "plan");
  }
  for (uint32_t i = 1; i < 5; i++) {
    if (run->in[i].count != p->c) {
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "BatchNormalization: input %u has %zu elements, want "
                       "%zu",
                       i, run->in[i].count, p->c);
    }
  }
  if (count == 0) {
    return NULL;
  }
  bn_job_t j = {p,
                run->in[0].data,
                run->in[1].data,
                run->in[2].data,
                run->in[3].data,
                run->in[4].data,
                run->out[0].data};
  k_for(run->pool, p->n * p->c, k_row_grain(p->inner, K_GRAIN), bn_planes, &j);
  return NULL;
}

// ------------------------------------------------ InstanceNormalization

typedef struct in_plan {
  size_t n, c, inner;  // X as [N, C, inner]
  float eps;           // epsilon
} in_plan_t;

static uint32_t in_query(const wm_op_desc *op, uint32_t *why,
                         const char **detail) {
  if (!f32_io(op) || op->n_in != 3 || op->in[1].dtype != K_FLOAT ||
      op->in[2].dtype != K_FLOAT) {
    return k_none(why, detail, WM_WHY_DTYPE, "float32 only");
  }
  const wm_tensor_desc *x = &op->in[0];
  if (x->rank < 2) {
    return k_none(why, detail, WM_WHY_RANK, "X needs rank at least 2");
  }
  for (uint32_t i = 1; i < 3; i++) {
    if (op->in[i].rank != 1 || op->in[i].dims[0] != x->dims[1]) {
      return k_none(why, detail, WM_WHY_SHAPE,
                    "scale and B must be 1-D of the channel count");
    }
  }
  const wm_op_attr *eps = cpu_param(op, "epsilon");
  if (!eps || eps->type != 1) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "epsilon is resolved by the host for known shapes");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *in_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  const wm_tensor_desc *x = &op->in[0];
  if (x->rank < 2) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (InstanceNormalization): X needs rank 2+",
                     op->name);
  }
  in_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  p->n = (size_t)x->dims[0];
  p->c = (size_t)x->dims[1];
  p->inner = k_desc_span(x, 2, (int32_t)x->rank);
  p->eps = cpu_param(op, "epsilon")->f;  // the query saw it
  *out_state = p;
  return NULL;
}

typedef struct in_job {
  const in_plan_t *p;
  const float *x, *scale, *bias;
  float *y;
} in_job_t;

// Planes [begin, end): mean and variance in double, then scaled.
static void in_planes(void *ctx, size_t begin, size_t end) {
  const in_job_t *j = ctx;
  size_t n = j->p->inner;
  for (size_t pl = begin; pl < end; pl++) {
    const float *restrict x = j->x + pl * n;
    float *restrict y = j->y + pl * n;
    double mean = n ? k_row_sum(x, n) / (double)n : 0;
    double v[K_LANES] = {0};
    size_t i = 0;
    for (; i + K_LANES <= n; i += K_LANES) {
      for (int l = 0; l < K_LANES; l++) {
        double d = (double)x[i + (size_t)l] - mean;
        v[l] += d * d;
      }
    }
    double var = 0;
    for (; i < n; i++) {
      double d = (double)x[i] - mean;
      var += d * d;
    }
    for (int l = 0; l < K_LANES; l++) {
      var += v[l];
    }
    double inv = 1.0 / sqrt((n ? var / (double)n : 0) + (double)j->p->eps);
    size_t ch = pl % j->p->c;
    float a = (float)(inv * (double)j->scale[ch]), mf = (float)mean;
    float b = j->bias[ch];
    for (size_t k = 0; k < n; k++) {
      y[k] = (x[k] - mf) * a + b;
    }
  }
}

static wm_error *in_run(void *state, const cpu_run_t *run) {
  const in_plan_t *p = state;
  size_t count = p->n * p->c * p->inner;
  if (run->n_in != 3 || run->in[0].count != count ||
      run->out[0].count != count || run->in[1].count != p->c ||
      run->in[2].count != p->c) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "InstanceNormalization kernel: tensors do not match the "
                     "plan");
  }
  if (count == 0) {
    return NULL;
  }
  in_job_t j = {p, run->in[0].data, run->in[1].data, run->in[2].data,
                run->out[0].data};
  k_for(run->pool, p->n * p->c, k_row_grain(p->inner, K_GRAIN / 2), in_planes,
        &j);
  return NULL;
}

// -------------------------------------------------------------- pooling

enum { POOL_MAX = 0, POOL_AVG = 1, POOL_LP = 2 };

// The taps of one output position along one spatial dim.
typedef struct pool_span {
  int32_t lo, hi;  // valid taps [lo, hi)
  int32_t padded;  // taps inside input or padding
  int64_t start;   // input coordinate of tap 0
} pool_span_t;

typedef struct pool_plan {
  int kind;                // POOL_*
  bool global;             // window is the whole plane
  bool count_include_pad;  // average divisor counts padding
  bool col_major;          // MaxPool Indices in column-major order
  double p;                // LpPool exponent
  size_t planes;           // N * C
  int64_t in[3], out[3];   // spatial sizes as (D, H, W); missing dims are 1
  int64_t dil[3];          // dilations
  int64_t kw, sw, pw;      // kernel, stride and begin pad of the last dim
  int64_t c_lo, c_hi;      // output columns whose taps are all inside
  int32_t nsp;             // spatial dims of the node
  pool_span_t *span[3];    // per output position of each dim
  bool mp512;              // MaxPool on the AVX-512 kernel (maxpool.h),
  cpu_mp_plane_t mpg;      // ... with this geometry
} pool_plan_t;

static void pool_destroy(void *state) {
  pool_plan_t *p = state;
  if (p) {
    free(p->span[0]);
    free(p);
  }
}

static int pool_kind(const char *op_type) {
  return strstr(op_type, "Max")  ? POOL_MAX
         : strstr(op_type, "Lp") ? POOL_LP
                                 : POOL_AVG;
}

// The exponent of LpPool and GlobalLpPool as the host resolved it; 0
// when it did not.
static double pool_lp_p(const wm_op_desc *op) {
  const wm_op_attr *a = cpu_param(op, "p");
  return a && a->type == 1 ? (double)a->f : 0;
}

static uint32_t pool_query(const wm_op_desc *op, uint32_t *why,
                           const char **detail) {
  if (!f32_io(op) || op->n_in != 1) {
    return k_none(why, detail, WM_WHY_DTYPE, "float32 only");
  }
  bool global = strncmp(op->op_type, "Global", 6) == 0;
  int kind = pool_kind(op->op_type);
  uint32_t rank = op->in[0].rank;
  if (kind == POOL_LP && pool_lp_p(op) == 0) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "p is resolved by the host for known shapes");
  }
  if (global) {
    if (rank < 2) {
      return k_none(why, detail, WM_WHY_RANK, "X needs rank at least 2");
    }
    return WM_SUPPORT_SUPPORTED;
  }
  if (rank < 3 || rank > 5) {
    return k_none(why, detail, WM_WHY_RANK, "1-D, 2-D and 3-D pools only");
  }
  for (uint32_t i = 1; i < op->n_out; i++) {
    if (op->out[i].dtype != 0 &&
        (kind != POOL_MAX || i > 1 || op->out[i].dtype != K_INT64 ||
         cpu_desc_count(&op->out[i]) != cpu_desc_count(&op->out[0]))) {
      return k_none(why, detail, WM_WHY_OTHER,
                    "only MaxPool's int64 Indices output");
    }
  }
  int32_t nsp = (int32_t)rank - 2;
  cpu_window_t w;
  if (!cpu_window_params(op, nsp, &w, why, detail)) {
    return WM_SUPPORT_NONE;
  }
  for (int32_t i = 0; i < nsp; i++) {
    if (w.kernel[i] > INT32_MAX || w.strides[i] > INT32_MAX ||
        w.dilations[i] > INT32_MAX || w.pads[i] < 0 || w.pads[nsp + i] < 0 ||
        w.pads[i] > INT32_MAX || w.pads[nsp + i] > INT32_MAX) {
      return k_none(why, detail, WM_WHY_ATTR,
                    "kernel, strides, dilations or pads out of range");
    }
  }
  return WM_SUPPORT_SUPPORTED;
}

// Fills the spans of |out| positions of one dim.
static void pool_spans(pool_span_t *s, int64_t out, int64_t in, int64_t k,
                       int64_t stride, int64_t dil, int64_t pad_begin,
                       int64_t pad_end) {
  for (int64_t o = 0; o < out; o++) {
    int64_t start = o * stride - pad_begin;
    int32_t lo = -1, hi = -1, padded = 0;
    for (int64_t t = 0; t < k; t++) {
      int64_t q = start + t * dil;
      if (q >= 0 && q < in) {
        if (lo < 0) {
          lo = (int32_t)t;
        }
        hi = (int32_t)t + 1;
      }
      padded += q >= -pad_begin && q < in + pad_end;
    }
    s[o].lo = lo < 0 ? 0 : lo;
    s[o].hi = lo < 0 ? 0 : hi;
    s[o].padded = padded;
    s[o].start = start;
  }
}

static wm_error *pool_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  const wm_tensor_desc *x = &op->in[0], *y = &op->out[0];
  bool global = strncmp(op->op_type, "Global", 6) == 0;
  int32_t rank = (int32_t)x->rank;
  if (!k_dims_known(x) || !k_dims_known(y) || rank < 2 || y->rank != x->rank ||
      (!global && (rank < 3 || rank > 5))) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (%s): unsupported shapes", op->name,
                     op->op_type);
  }
  pool_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  p->kind = pool_kind(op->op_type);
  p->p = p->kind == POOL_LP ? pool_lp_p(op) : 0;
  p->global = global;
  p->planes = (size_t)x->dims[0] * (size_t)x->dims[1];
  if (global) {
    p->in[0] = (int64_t)k_desc_span(x, 2, rank);
    *out_state = p;
    return NULL;
  }
  int32_t nsp = rank - 2;
  int32_t off = 3 - nsp;  // spatial dim i fills slot off + i
  p->nsp = nsp;
  int64_t order = 0, cip = 0;
  p->col_major = cpu_param_int(op, "storage_order", &order) && order == 1;
  p->count_include_pad =
      cpu_param_int(op, "count_include_pad", &cip) && cip != 0;
  cpu_window_t w;
  uint32_t why;
  const char *detail = NULL;
  if (!cpu_window_params(op, nsp, &w, &why, &detail)) {
    pool_destroy(p);
    return cpu_error(WM_ERR_INVALID_ARGUMENT, "node \"%s\" (%s): %s", op->name,
                     op->op_type, detail);
  }
  int64_t kern[3] = {1, 1, 1}, str[3] = {1, 1, 1};
  int64_t pads[6] = {0, 0, 0, 0, 0, 0};
  for (int32_t i = 0; i < 3; i++) {
    p->in[i] = i >= off ? x->dims[2 + i - off] : 1;
    p->out[i] = i >= off ? y->dims[2 + i - off] : 1;
    p->dil[i] = 1;
  }
  for (int32_t i = 0; i < nsp; i++) {
    kern[off + i] = w.kernel[i];
    str[off + i] = w.strides[i];
    p->dil[off + i] = w.dilations[i];
    pads[off + i] = w.pads[i];
    pads[3 + off + i] = w.pads[nsp + i];
  }
  size_t total = (size_t)(p->out[0] + p->out[1] + p->out[2]) + 1;
  p->span[0] = calloc(total, sizeof(pool_span_t));
  if (!p->span[0]) {
    pool_destroy(p);
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  p->span[1] = p->span[0] + p->out[0];
  p->span[2] = p->span[1] + p->out[1];
  for (int32_t i = 0; i < 3; i++) {
    pool_spans(p->span[i], p->out[i], p->in[i], kern[i], str[i], p->dil[i],
               pads[i], pads[3 + i]);
  }
  p->kw = kern[2];
  p->sw = str[2];
  p->pw = pads[2];
  p->mpg = (cpu_mp_plane_t){p->in[1], p->in[2], p->out[1], p->out[2],
                            pads[1],  pads[2],  kern[2]};
  p->mp512 = p->kind == POOL_MAX && !p->global && op->n_out < 2 &&
             p->in[0] == 1 && p->out[0] == 1 && kern[1] == kern[2] &&
             str[1] == 2 && str[2] == 2 && p->dil[1] == 1 && p->dil[2] == 1 &&
             cpu_mp512_takes(&p->mpg);
  p->c_lo = p->c_hi = 0;
  for (int64_t c = 0; c < p->out[2]; c++) {
    bool full = p->span[2][c].lo == 0 && p->span[2][c].hi == kern[2];
    if (full && p->c_hi == p->c_lo) {
      p->c_lo = c;
      p->c_hi = c + 1;
    } else if (full && p->c_hi == c) {
      p->c_hi = c + 1;
    }
  }
  *out_state = p;
  return NULL;
}

typedef struct pool_job {
  const pool_plan_t *p;
  const float *x;
  float *y;
  int64_t *idx;   // MaxPool Indices or NULL
  int64_t bands;  // the AVX-512 kernel: bands of output rows per plane
} pool_job_t;

// Bands [begin, end) of the AVX-512 max pool, band-major (band = u /
// planes of plane u % planes).
static void pool_planes_512(void *ctx, size_t begin, size_t end) {
  const pool_job_t *j = ctx;
  const pool_plan_t *p = j->p;
  const int64_t rows = (p->out[1] + j->bands - 1) / j->bands;
  const size_t in_plane = (size_t)(p->in[1] * p->in[2]);
  const size_t out_plane = (size_t)(p->out[1] * p->out[2]);
  for (size_t u = begin; u < end; u++) {
    const size_t pl = u % p->planes;
    const int64_t r0 = (int64_t)(u / p->planes) * rows;
    cpu_mp512_rows(&p->mpg, j->x + pl * in_plane, j->y + pl * out_plane, r0,
                   r0 + rows);
  }
}

// |v| to the power of LpPool's p, in double like the reference.
static inline double pool_lp_term(double p, float v) {
  double a = fabs((double)v);
  return p == 2 ? a * a : p == 1 ? a : pow(a, p);
}

// The p-th root of an LpPool sum.
static inline float pool_lp_root(double p, double s) {
  return (float)(p == 2 ? sqrt(s) : p == 1 ? s : pow(s, 1.0 / p));
}

static void pool_global(void *ctx, size_t begin, size_t end) {
  const pool_job_t *j = ctx;
  const pool_plan_t *p = j->p;
  size_t n = (size_t)p->in[0];
  for (size_t pl = begin; pl < end; pl++) {
    const float *x = j->x + pl * n;
    if (p->kind == POOL_MAX) {
      j->y[pl] = k_row_max(x, n);
    } else if (p->kind == POOL_AVG) {
      j->y[pl] = n ? (float)(k_row_sum(x, n) / (double)n) : NAN;
    } else {
      double s = 0;
      for (size_t i = 0; i < n; i++) {
        s += pool_lp_term(p->p, x[i]);
      }
      j->y[pl] = pool_lp_root(p->p, s);
    }
  }
}

// The MaxPool Indices value of input position (z, a, b) of a plane: its
// flat offset in row-major or column-major order of the spatial dims.
static inline int64_t pool_index(const pool_plan_t *p, int64_t z, int64_t a,
                                 int64_t b) {
  if (!p->col_major) {
    return (z * p->in[1] + a) * p->in[2] + b;
  }
  // Column-major over the node's own spatial dims (first varies fastest).
  int64_t q[3] = {z, a, b}, r = 0, st = 1;
  for (int32_t i = 3 - p->nsp; i < 3; i++) {
    r += q[i] * st;
    st *= p->in[i];
  }
  return r;
}

enum { POOL_BLOCK = 256 };

// The output columns [c_lo, c_hi) of one row, whose taps all lie inside
// the input along the last dim: tap-major loops over a block of columns,
// which vectorize (strided loads when the stride is above 1).
K_CLONES static void pool_interior(const pool_plan_t *p, const float *x,
                                   const pool_span_t *ds, const pool_span_t *hs,
                                   float *y) {
  int64_t ih = p->in[1], iw = p->in[2], sw = p->sw;
  for (int64_t c0 = p->c_lo; c0 < p->c_hi; c0 += POOL_BLOCK) {
    int64_t w = p->c_hi - c0 < POOL_BLOCK ? p->c_hi - c0 : POOL_BLOCK;
    float m[POOL_BLOCK];
    double s[POOL_BLOCK];
    for (int64_t c = 0; c < w; c++) {
      m[c] = -INFINITY;
      s[c] = 0;
    }
    for (int32_t z = ds->lo; z < ds->hi; z++) {
      const float *plane = x + (ds->start + z * p->dil[0]) * ih * iw;
      for (int32_t a = hs->lo; a < hs->hi; a++) {
        const float *row = plane + (hs->start + a * p->dil[1]) * iw;
        for (int64_t b = 0; b < p->kw; b++) {
          const float *restrict rb = row + c0 * sw - p->pw + b * p->dil[2];
          if (p->kind == POOL_MAX) {
            for (int64_t c = 0; c < w; c++) {
              m[c] = k_max_nan(m[c], rb[c * sw]);
            }
          } else {
            for (int64_t c = 0; c < w; c++) {
              s[c] += (double)rb[c * sw];
            }
          }
        }
      }
    }
    if (p->kind == POOL_MAX) {
      memcpy(y + c0, m, (size_t)w * sizeof(float));
      continue;
    }
    for (int64_t c = 0; c < w; c++) {
      const pool_span_t *ws = &p->span[2][c0 + c];
      int64_t div = p->count_include_pad
                        ? (int64_t)ds->padded * hs->padded * ws->padded
                        : (int64_t)(ds->hi - ds->lo) * (hs->hi - hs->lo) *
                              (ws->hi - ws->lo);
      y[c0 + c] = div ? (float)(s[c] / (double)div) : NAN;
    }
  }
}

// One output row: item = (plane * out depth + depth) * out height + row.
static void pool_rows(void *ctx, size_t begin, size_t end) {
  const pool_job_t *j = ctx;
  const pool_plan_t *p = j->p;
  int64_t ih = p->in[1], iw = p->in[2];
  int64_t dd = p->dil[0], dh = p->dil[1], dw = p->dil[2];
  size_t plane_size = (size_t)(p->in[0] * ih * iw);
  for (size_t item = begin; item < end; item++) {
    size_t rows = (size_t)(p->out[0] * p->out[1]);
    size_t pl = item / rows, rest = item % rows;
    const pool_span_t *ds = &p->span[0][rest / (size_t)p->out[1]];
    const pool_span_t *hs = &p->span[1][rest % (size_t)p->out[1]];
    const float *x = j->x + pl * plane_size;
    float *y = j->y + item * (size_t)p->out[2];
    int64_t *yi = j->idx ? j->idx + item * (size_t)p->out[2] : NULL;
    int64_t skip_lo = 0, skip_hi = 0;
    if (!yi && p->kind != POOL_LP && p->c_hi > p->c_lo) {
      pool_interior(p, x, ds, hs, y);
      skip_lo = p->c_lo;
      skip_hi = p->c_hi;
    }
    // Spans hold exactly the taps inside the input: no checks needed.
    for (int64_t c = 0; c < p->out[2]; c++) {
      if (c == skip_lo && skip_hi > skip_lo) {
        c = skip_hi - 1;
        continue;
      }
      const pool_span_t *ws = &p->span[2][c];
      if (yi) {
        // The first maximum in tap order; a NaN wins and sticks.
        float m = -INFINITY;
        int64_t at = -1;
        for (int32_t z = ds->lo; z < ds->hi; z++) {
          int64_t qz = ds->start + z * dd;
          for (int32_t a = hs->lo; a < hs->hi; a++) {
            int64_t qa = hs->start + a * dh;
            const float *row = x + (qz * ih + qa) * iw;
            for (int32_t b = ws->lo; b < ws->hi; b++) {
              int64_t qb = ws->start + b * dw;
              float v = row[qb];
              if (at < 0 || v > m || (v != v && m == m)) {
                m = v;
                at = pool_index(p, qz, qa, qb);
              }
            }
          }
        }
        y[c] = m;
        yi[c] = at < 0 ? -1 : (int64_t)(pl * plane_size) + at;
        continue;
      }
      float m = -INFINITY;
      double s = 0;
      for (int32_t z = ds->lo; z < ds->hi; z++) {
        const float *plane = x + (ds->start + z * dd) * ih * iw;
        for (int32_t a = hs->lo; a < hs->hi; a++) {
          const float *row = plane + (hs->start + a * dh) * iw + ws->start;
          if (p->kind == POOL_MAX) {
            for (int32_t b = ws->lo; b < ws->hi; b++) {
              m = k_max_nan(m, row[b * dw]);
            }
          } else if (p->kind == POOL_AVG) {
            for (int32_t b = ws->lo; b < ws->hi; b++) {
              s += (double)row[b * dw];
            }
          } else {
            for (int32_t b = ws->lo; b < ws->hi; b++) {
              s += pool_lp_term(p->p, row[b * dw]);
            }
          }
        }
      }
      if (p->kind == POOL_MAX) {
        y[c] = m;
        continue;
      }
      if (p->kind == POOL_LP) {
        y[c] = pool_lp_root(p->p, s);
        continue;
      }
      int64_t div = p->count_include_pad
                        ? (int64_t)ds->padded * hs->padded * ws->padded
                        : (int64_t)(ds->hi - ds->lo) * (hs->hi - hs->lo) *
                              (ws->hi - ws->lo);
      y[c] = div ? (float)(s / (double)div) : NAN;
    }
  }
}

enum { POOL_SEP_MAX = 16384 };   // floats of one plane's row maxima
enum { POOL_SPLIT_MAX = 4096 };  // floats of a row's even or odd half

// ev[t] = x[2t] and od[t] = x[2t + 1] for the |n| floats of x (16 at a
// time in vectors, the rest one by one).
static inline __attribute__((always_inline)) void pool_split2(
    const float *restrict x, int64_t n, float *restrict ev,
    float *restrict od) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    k_f8 a = *(const k_f8 *)(x + i), b = *(const k_f8 *)(x + i + 8);
    *(k_f8 *)(ev + i / 2) =
        __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
    *(k_f8 *)(od + i / 2) =
        __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
  }
  for (; i < n; i++) {
    (i & 1 ? od : ev)[i / 2] = x[i];
  }
}

// True when MaxPool runs as two 1-D passes per plane: a 2-D window, no
// dilation, no Indices, and the row maxima of a plane fit the stack.
static bool pool_separable(const pool_plan_t *p, bool indices) {
  return p->kind == POOL_MAX && !indices && !p->global && p->in[0] == 1 &&
         p->out[0] == 1 && p->dil[1] == 1 && p->dil[2] == 1 &&
         p->in[1] * p->out[2] <= POOL_SEP_MAX;
}

// Planes [begin, end) of a separable MaxPool: the maximum over each
// output column's taps of every input row, then over each output row's
// taps of those (the maximum of a window is the maximum of its rows'
// maxima; the spans hold exactly the taps inside the input).
K_CLONES static void pool_sep_planes(void *ctx, size_t begin, size_t end) {
  const pool_job_t *j = ctx;
  const pool_plan_t *p = j->p;
  int64_t ih = p->in[1], iw = p->in[2], oh = p->out[1], ow = p->out[2];
  float rows[POOL_SEP_MAX];
  float ev[POOL_SPLIT_MAX], od[POOL_SPLIT_MAX];
  for (size_t pl = begin; pl < end; pl++) {
    const float *x = j->x + pl * (size_t)(ih * iw);
    float *y = j->y + pl * (size_t)(oh * ow);
    for (int64_t r = 0; r < ih; r++) {
      const float *xr = x + r * iw;
      float *restrict h = rows + r * ow;
      for (int64_t c = 0; c < ow; c++) {
        if (c == p->c_lo && p->c_hi > p->c_lo) {
          c = p->c_hi - 1;  // below, tap by tap
          continue;
        }
        const pool_span_t *ws = &p->span[2][c];
        float m = -INFINITY;
        for (int32_t b = ws->lo; b < ws->hi; b++) {
          m = k_max_nan(m, xr[ws->start + b]);
        }
        h[c] = m;
      }
      // Columns whose taps all lie inside the row: tap-major, vectorised
      // (stride 2: over the row split into its even and odd floats).
      for (int64_t c = p->c_lo; c < p->c_hi; c++) {
        h[c] = -INFINITY;
      }
      if (p->sw == 2 && iw <= 2 * POOL_SPLIT_MAX) {
        pool_split2(xr, iw, ev, od);
      }
      for (int64_t b = 0; b < p->kw; b++) {
        const float *restrict xb = xr + b - p->pw;
        if (p->sw == 2 && iw <= 2 * POOL_SPLIT_MAX) {
          // Input column 2c + b - pw: even ones in ev, odd ones in od.
          const int64_t q = b - p->pw;
          xb = (q & 1 ? od : ev) + (q - (q & 1)) / 2;
          for (int64_t c = p->c_lo; c < p->c_hi; c++) {
            h[c] = k_max_nan(h[c], xb[c]);
          }
          continue;
        }
        for (int64_t c = p->c_lo; c < p->c_hi; c++) {
          h[c] = k_max_nan(h[c], xb[c * p->sw]);
        }
      }
    }
    for (int64_t r = 0; r < oh; r++) {
      const pool_span_t *hs = &p->span[1][r];
      float *restrict yr = y + r * ow;
      for (int64_t c = 0; c < ow; c++) {
        yr[c] = -INFINITY;
      }
      for (int32_t a = hs->lo; a < hs->hi; a++) {
        const float *restrict h = rows + (hs->start + a) * ow;
        for (int64_t c = 0; c < ow; c++) {
          yr[c] = k_max_nan(yr[c], h[c]);
        }
      }
    }
  }
}

static wm_error *pool_run(void *state, const cpu_run_t *run) {
  const pool_plan_t *p = state;
  size_t in_count = p->planes * (size_t)p->in[0];
  size_t out_count = p->planes;
  if (!p->global) {
    in_count = p->planes * (size_t)(p->in[0] * p->in[1] * p->in[2]);
    out_count = p->planes * (size_t)(p->out[0] * p->out[1] * p->out[2]);
  }
  if (run->in[0].count != in_count || run->out[0].count != out_count) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "pool kernel: tensors do not match the plan");
  }
  pool_job_t j = {p, run->in[0].data, run->out[0].data, NULL, 1};
  if (run->n_out > 1 && run->out[1].data) {
    if (run->out[1].dtype != K_INT64 || run->out[1].count != out_count) {
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "MaxPool kernel: Indices do not match the plan");
    }
    j.idx = run->out[1].data;
  }
  if (out_count == 0) {
    return NULL;
  }
  if (p->global) {
    k_for(run->pool, p->planes, k_row_grain((size_t)p->in[0], K_GRAIN),
          pool_global, &j);
  } else if (p->mp512 && !j.idx) {
    j.bands = k_row_bands(run->pool, p->out[1]);
    size_t work = (size_t)(p->in[1] * p->in[2]) / (size_t)j.bands;
    k_for(run->pool, p->planes * (size_t)j.bands, k_row_grain(work, K_GRAIN),
          pool_planes_512, &j);
  } else if (pool_separable(p, j.idx != NULL)) {
    size_t work = (size_t)(p->in[1] * p->out[2] + p->out[1] * p->out[2]) * 4;
    k_for(run->pool, p->planes, k_row_grain(work, K_GRAIN), pool_sep_planes,
          &j);
  } else {
    k_for(run->pool, p->planes * (size_t)(p->out[0] * p->out[1]),
          k_row_grain((size_t)p->out[2] * 9, K_GRAIN), pool_rows, &j);
  }
  return NULL;
}

// --------------------------------------------------------------- table

#define K(name, since, q, p, r, d) \
  { name, since, WM_IMPL_NATIVE_KERNEL, q, p, r, d, NULL, NULL, NULL }

const cpu_kernel_t cpu_kernels_nn[] = {
    K("Softmax", 1, sm_query, sm_plan, sm_run, free),
    K("LogSoftmax", 1, sm_query, sm_plan, sm_run, free),
    K("LayerNormalization", 17, ln_query, ln_plan, ln_run, ln_destroy),
    K("BatchNormalization", 1, bn_query, bn_plan, bn_run, free),
    K("InstanceNormalization", 1, in_query, in_plan, in_run, free),
    K("MaxPool", 1, pool_query, pool_plan, pool_run, pool_destroy),
    K("AveragePool", 1, pool_query, pool_plan, pool_run, pool_destroy),
    K("GlobalMaxPool", 1, pool_query, pool_plan, pool_run, pool_destroy),
    K("GlobalAveragePool", 1, pool_query, pool_plan, pool_run, pool_destroy),
    K("LpPool", 1, pool_query, pool_plan, pool_run, pool_destroy),
    K("GlobalLpPool", 1, pool_query, pool_plan, pool_run, pool_destroy),
    {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};

// The "wmap" domain's LayerNormalization: ai.onnx's at any opset.
const cpu_kernel_t cpu_kernels_nn_wmap[] = {
    K("LayerNormalization", 1, ln_query, ln_plan, ln_run, ln_destroy),
    {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
