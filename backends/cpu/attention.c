// Attention (opset 23 and later) on the cpu backend, float32: 3-D and 4-D
// Q, K and V, grouped key/value heads, a boolean or float attn_mask (its
// last dim may be shorter than the keys), is_causal, scale, softcap,
// past_key/past_value with the present outputs, nonpad_kv_seqlen, the
// windows of opset 25 and every qk_matmul_output mode.
//
// Per block of query rows, over as many (batch, query head) pairs as the
// plan-held scores hold: the scores Q K^T are one batch of GEMM-engine
// products (K read transposed through its strides), the rows are capped,
// masked and normalized on the pool, and P V is a second batch straight
// into Y, whose row stride covers both layouts. With a past, the products
// read the present caches (past then new keys), made first: in the
// present outputs, or in plan-held buffers when those are not asked for.

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "kernels.h"

enum {
  IN_Q = 0,
  IN_K = 1,
  IN_V = 2,
  IN_MASK = 3,
  IN_PAST_K = 4,
  IN_PAST_V = 5,
  IN_NONPAD = 6,
  OUT_Y = 0,
  OUT_PRESENT_K = 1,
  OUT_PRESENT_V = 2,
  OUT_QK = 3,
};

// Scores held per plan: rows of a query block times the keys.
enum { AT_SCORES = 1 << 22 };

typedef struct at_plan {
  int32_t rank;         // of Q, K and V: 3 or 4
  size_t b, hq, hkv;    // batch, query heads, key/value heads
  size_t sq, skv, sp;   // query, new key and past key lengths
  size_t st;            // total key length
  size_t dq, dv;        // head sizes
  bool has_mask;        // attn_mask given
  bool mask_bool;       // boolean (else additive float)
  size_t mstr[3];       // mask strides for b, h, query (0 = broadcast)
  size_t mlast;         // length of the mask's last dim
  bool has_past;        // past_key and past_value given
  bool has_nonpad;      // nonpad_kv_seqlen given
  bool causal;          // is_causal
  int64_t left, right;  // windows (-1 = unbounded)
  int64_t mode;         // qk_matmul_output_mode
  float softcap;        // 0 = none
  float alpha;          // sqrt(scale) rounded, squared: the product scale
  size_t block;         // query rows per block
  size_t units;         // (batch, query head) pairs per pass
  size_t counts[7];     // elements of each input
  float *scores;        // units x block x st
  float *cat[2];        // present K and V when not outputs (past only)
} at_plan_t;

static void at_destroy(void *state) {
  at_plan_t *p = state;
  if (p) {
    free(p->scores);
    free(p->cat[0]);
    free(p->cat[1]);
    free(p);
  }
}

static bool at_is(const wm_tensor_desc *d, uint32_t rank, const size_t *dims) {
  if (d->rank != rank) {
    return false;
  }
  for (uint32_t i = 0; i < rank; i++) {
    if ((size_t)d->dims[i] != dims[i]) {
      return false;
    }
  }
  return true;
}

// What at_setup answers for a description without resolved parameters.
static const char kUnresolved[] =
    "the attention is resolved by the host for known shapes";

// Reads every size of |op| and the host's resolved parameters; the static
// text of the problem otherwise.
static const char *at_setup(const wm_op_desc *op, at_plan_t *p) {
  memset(p, 0, sizeof(*p));
  if (op->n_in < 3 || op->n_in > 7 || op->n_out < 1 || op->n_out > 4) {
    return "unexpected inputs or outputs";
  }
  for (uint32_t i = 0; i < op->n_in; i++) {
    uint32_t dt = op->in[i].dtype;
    bool ok = dt == 0 || (i == IN_MASK     ? dt == K_FLOAT || dt == K_BOOL
                          : i == IN_NONPAD ? dt == K_INT64
                                           : dt == K_FLOAT);
    if (!ok || (i < 3 && dt == 0)) {
      return "float32 Q, K, V and caches; bool or float32 mask";
    }
    p->counts[i] = dt ? cpu_desc_count(&op->in[i]) : 0;
  }
  for (uint32_t i = 0; i < op->n_out; i++) {
    if (k_has_output(op, i) && op->out[i].dtype != K_FLOAT) {
      return "float32 outputs only";
    }
  }
  if (!k_has_output(op, OUT_Y)) {
    return "output Y is required";
  }
  int64_t causal, prec, qh, kvh;
  double scale;
  const wm_op_attr *cap = cpu_param(op, "softcap");
  if (!cpu_param_int(op, "is_causal", &causal) ||
      !cpu_param_int(op, "qk_matmul_output_mode", &p->mode) ||
      !cpu_param_int(op, "softmax_precision", &prec) ||
      !cpu_param_int(op, "left_window_size", &p->left) ||
      !cpu_param_int(op, "right_window_size", &p->right) ||
      !cpu_param_int(op, "q_num_heads", &qh) ||
      !cpu_param_int(op, "kv_num_heads", &kvh) || !cap || cap->type != 1 ||
      !cpu_param_reals(op, "scale", 1, &scale)) {
    return kUnresolved;
  }
  float softcap = cap->f;
  if ((causal != 0 && causal != 1) || p->mode < 0 || p->mode > 3 ||
      p->left < -1 || p->right < -1 || !(softcap >= 0)) {
    return "is_causal, qk_matmul_output_mode, windows or softcap out of "
           "range";
  }
  if (prec != K_FLOAT && prec != K_DOUBLE) {
    return "softmax_precision float or double only";
  }
  p->causal = causal == 1;
  p->softcap = softcap;
  const wm_tensor_desc *q = &op->in[IN_Q], *k = &op->in[IN_K],
                       *v = &op->in[IN_V];
  if (q->rank != k->rank || q->rank != v->rank ||
      (q->rank != 3 && q->rank != 4)) {
    return "Q, K and V must all have rank 3 or all rank 4";
  }
  p->rank = (int32_t)q->rank;
  p->b = (size_t)q->dims[0];
  if (p->rank == 3) {
    if (qh <= 0 || kvh <= 0 || q->dims[2] % qh != 0 || k->dims[2] % kvh != 0 ||
        v->dims[2] % kvh != 0) {
      return "3-D inputs need positive q_num_heads and kv_num_heads that "
             "divide the hidden sizes";
    }
    p->hq = (size_t)qh;
    p->hkv = (size_t)kvh;
    p->sq = (size_t)q->dims[1];
    p->skv = (size_t)k->dims[1];
    p->dq = (size_t)(q->dims[2] / qh);
    p->dv = (size_t)(v->dims[2] / kvh);
    if ((size_t)(k->dims[2] / kvh) != p->dq || v->dims[1] != k->dims[1] ||
        k->dims[0] != q->dims[0] || v->dims[0] != q->dims[0]) {
      return "Q, K and V do not fit each other";
    }
  } else {
    p->hq = (size_t)q->dims[1];
    p->hkv = (size_t)k->dims[1];
    p->sq = (size_t)q->dims[2];
    p->skv = (size_t)k->dims[2];
    p->dq = (size_t)q->dims[3];
    p->dv = (size_t)v->dims[3];
    if (k->dims[0] != q->dims[0] || v->dims[0] != q->dims[0] ||
        v->dims[1] != k->dims[1] || v->dims[2] != k->dims[2] ||
        k->dims[3] != q->dims[3] || (size_t)qh != p->hq ||
        (size_t)kvh != p->hkv) {
      return "Q, K and V do not fit each other";
    }
  }
  if ((p->hkv == 0 && p->hq != 0) || (p->hkv && p->hq % p->hkv != 0)) {
    return "query heads are not a multiple of the key/value heads";
  }
  p->has_past = cpu_has_input(op, IN_PAST_K);
  p->has_nonpad = cpu_has_input(op, IN_NONPAD);
  if (p->has_past != cpu_has_input(op, IN_PAST_V) ||
      (p->has_past && p->has_nonpad)) {
    return "past_key and past_value go together, without nonpad_kv_seqlen";
  }
  if (p->has_past) {
    const wm_tensor_desc *pk = &op->in[IN_PAST_K], *pv = &op->in[IN_PAST_V];
    if (pk->rank != 4) {
      return "past_key and past_value must have rank 4";
    }
    p->sp = (size_t)pk->dims[2];
    size_t wk[4] = {p->b, p->hkv, p->sp, p->dq};
    size_t wv[4] = {p->b, p->hkv, p->sp, p->dv};
    if (!at_is(pk, 4, wk) || !at_is(pv, 4, wv)) {
      return "past_key and past_value do not fit";
    }
  }
  p->st = p->sp + p->skv;
  if (p->has_nonpad && !at_is(&op->in[IN_NONPAD], 1, &p->b)) {
    return "nonpad_kv_seqlen must be [batch]";
  }
  p->has_mask = cpu_has_input(op, IN_MASK);
  if (p->has_mask) {
    const wm_tensor_desc *m = &op->in[IN_MASK];
    p->mask_bool = m->dtype == K_BOOL;
    if (m->rank < 1 || m->rank > 4) {
      return "attn_mask must have rank 1 to 4";
    }
    size_t dims[4] = {1, 1, 1, 1}, target[4] = {p->b, p->hq, p->sq, p->st};
    for (uint32_t d = 0; d < m->rank; d++) {
      dims[4 - m->rank + d] = (size_t)m->dims[d];
    }
    for (int d = 0; d < 3; d++) {
      if (dims[d] != target[d] && dims[d] != 1) {
        return "attn_mask does not broadcast to the scores";
      }
    }
    if (dims[3] > p->st) {
      return "attn_mask is longer than the keys";
    }
    p->mlast = dims[3];
    size_t s = dims[3];
    for (int d = 2; d >= 0; d--) {
      p->mstr[d] = dims[d] == 1 ? 0 : s;
      s *= dims[d];
    }
  }
  size_t y3[3] = {p->b, p->sq, p->hq * p->dv};
  size_t y4[4] = {p->b, p->hq, p->sq, p->dv};
  size_t pk[4] = {p->b, p->hkv, p->st, p->dq};
  size_t pv[4] = {p->b, p->hkv, p->st, p->dv};
  size_t qk[4] = {p->b, p->hq, p->sq, p->st};
  if (!(p->rank == 3 ? at_is(&op->out[0], 3, y3) : at_is(&op->out[0], 4, y4)) ||
      (op->n_out > 1 && k_has_output(op, 1) && !at_is(&op->out[1], 4, pk)) ||
      (op->n_out > 2 && k_has_output(op, 2) && !at_is(&op->out[2], 4, pv)) ||
      (op->n_out > 3 && k_has_output(op, 3) && !at_is(&op->out[3], 4, qk))) {
    return "outputs have wrong shapes";
  }
  if (!(isfinite(scale) && scale >= 0)) {
    return "scale must be finite and not negative";
  }
  float sc = (float)sqrt(scale);
  p->alpha = sc * sc;
  size_t block = p->st ? AT_SCORES / p->st : p->sq;
  p->block = block < 1 ? 1 : block > p->sq ? p->sq : block;
  size_t pairs = p->b * p->hq, per = p->block * p->st;
  size_t units = per ? AT_SCORES / per : pairs;
  p->units = units < 1 ? 1 : units > pairs ? pairs : units;
  return NULL;
}

static uint32_t at_query(const wm_op_desc *op, uint32_t *why,
                         const char **detail) {
  at_plan_t p;
  const char *bad = at_setup(op, &p);
  if (bad) {
    return k_none(why, detail, WM_WHY_SHAPE, bad);
  }
  if (p.st > INT32_MAX || p.dq > INT32_MAX || p.dv > INT32_MAX ||
      p.hq * p.dv > INT32_MAX || p.hkv * p.dq > INT32_MAX) {
    return k_none(why, detail, WM_WHY_SIZE_LIMIT, "dims above 2^31");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *at_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  at_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  const char *bad = at_setup(op, p);
  if (bad) {
    free(p);
    return cpu_error(WM_ERR_INVALID_ARGUMENT, "node \"%s\" (Attention): %s",
                     op->name, bad);
  }
  p->scores = malloc((p->units * p->block * p->st + 1) * sizeof(float));
  bool ok = p->scores != NULL;
  for (uint32_t o = OUT_PRESENT_K; ok && p->has_past && o <= OUT_PRESENT_V;
       o++) {
    if (o < op->n_out && k_has_output(op, o)) {
      continue;
    }
    size_t n = 0;
    ok = wm_checked_mul(p->b * p->hkv, p->st, &n) &&
         wm_checked_mul(n, o == OUT_PRESENT_K ? p->dq : p->dv, &n) &&
         wm_checked_add(n, 1, &n) && wm_checked_mul(n, sizeof(float), &n) &&
         (p->cat[o - 1] = malloc(n)) != NULL;
  }
  if (!ok) {
    at_destroy(p);
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "node \"%s\" (Attention): out of memory for the scores "
                     "or the present caches",
                     op->name);
  }
  *out_state = p;
  return NULL;
}

// One pass: a block of query rows of consecutive (batch, query head)
// pairs u = b * hq + h from u0.
typedef struct at_pass {
  const at_plan_t *p;
  const float *q;         // Q
  const float *k, *v;     // keys and values as the products read them
  bool cat;               // k and v are the present caches [b, hkv, st, d]
  float *y;               // Y
  size_t ldq, ldk, ldv;   // row strides of Q, K and V in the input layout
  size_t ldy;             // row stride of Y
  const void *mask;       // attn_mask data or NULL
  const int64_t *nonpad;  // nonpad_kv_seqlen or NULL
  float *qk;              // qk_matmul_output or NULL
  size_t u0, i0, rows;    // first pair, first query row, rows per pair
} at_pass_t;

// Rows [begin, end) of the pass: softcap, bias, softmax in place.
K_CLONES static void at_rows(void *ctx, size_t begin, size_t end) {
  const at_pass_t *a = ctx;
  const at_plan_t *p = a->p;
  size_t st = p->st;
  // The bias is the mask alone (float, or bool as 0 and -inf): one loop
  // with no decisions per key.
  const bool plain_bias =
      !p->causal && p->left < 0 && p->right < 0 && !p->has_nonpad;
  for (size_t r = begin; r < end; r++) {
    size_t u = a->u0 + r / a->rows, i = a->i0 + r % a->rows;
    size_t b = u / p->hq, h = u % p->hq;
    // Query position minus row index, for causality; the valid keys.
    int64_t offset = (int64_t)p->sp, nonpad = 0;
    if (a->nonpad) {
      int64_t lim = INT64_C(1) << 50;
      nonpad = a->nonpad[b] < -lim  ? -lim
               : a->nonpad[b] > lim ? lim
                                    : a->nonpad[b];
      offset = nonpad - (int64_t)p->sq;
    }
    float *s = p->scores + r * st;
    float *qk = a->qk ? a->qk + (u * p->sq + i) * st : NULL;
    if (qk && p->mode == 0) {
      memcpy(qk, s, st * sizeof(float));
    }
    if (p->softcap > 0) {
      float cap = p->softcap;
      for (size_t c = 0; c < st; c++) {
        s[c] = cap * k_tanhf(s[c] / cap);
      }
    }
    if (qk && p->mode == 1) {
      memcpy(qk, s, st * sizeof(float));
    }
    size_t mbase = b * p->mstr[0] + h * p->mstr[1] + i * p->mstr[2];
    bool all_masked = true;
    if (plain_bias) {  // a mask (or none) and no positional masks
      size_t lim = p->has_mask ? (st < p->mlast ? st : p->mlast) : st;
      if (p->has_mask && p->mask_bool) {
        const uint8_t *m = (const uint8_t *)a->mask + mbase;
        int keep = 0;
        for (size_t c = 0; c < lim; c++) {
          s[c] = m[c] ? s[c] : s[c] + -INFINITY;
          keep |= m[c];
        }
        all_masked = !keep;
      } else if (p->has_mask) {
        const float *m = (const float *)a->mask + mbase;
        int masked = 1;
        for (size_t c = 0; c < lim; c++) {
          s[c] += m[c];
          masked &= m[c] == -INFINITY;
        }
        all_masked = masked;
      } else {
        all_masked = st == 0;
      }
      for (size_t c = lim; c < st; c++) {
        s[c] = -INFINITY;
      }
    }
    for (size_t c = 0; !plain_bias && c < st; c++) {
      float bias = 0;
      if (p->has_mask) {
        if (c >= p->mlast) {
          bias = -INFINITY;
        } else if (p->mask_bool) {
          bias = ((const uint8_t *)a->mask)[mbase + c] ? 0.0f : -INFINITY;
        } else {
          bias = ((const float *)a->mask)[mbase + c];
        }
      }
      int64_t diff = (int64_t)i + offset - (int64_t)c;
      if ((p->causal && diff < 0) || (p->left >= 0 && diff > p->left) ||
          (p->right >= 0 && -diff > p->right) ||
          (p->has_nonpad && (int64_t)c >= nonpad)) {
        bias += -INFINITY;
      }
      all_masked = all_masked && bias == -INFINITY;
      s[c] += bias;
    }
    if (qk && p->mode == 2) {
      memcpy(qk, s, st * sizeof(float));
    }
    if (all_masked) {
      memset(s, 0, st * sizeof(float));
    } else {
      float mx = -INFINITY;
      int nans = 0;
      for (size_t c = 0; c < st; c++) {
        mx = s[c] > mx ? s[c] : mx;
        nans |= s[c] != s[c];
      }
      const bool nan = nans;
      if (nan) {
        for (size_t c = 0; c < st; c++) {
          s[c] = NAN;
        }
      } else {
        float safe = mx == -INFINITY ? 0.0f : mx;
        double sum = 0;
        size_t c = 0;
        // Every s - safe <= 0 (or -inf) and none NaN: k_expf8 gives
        // k_expf's bits, 8 lanes at a time.
        k_f8 part = {0};
        for (; c + 8 <= st; c += 8) {
          k_f8 v = *(const k_f8 *)(s + c) - safe;
          k_expf8(&v, true);
          *(k_f8 *)(s + c) = v;
          part += v;
        }
        for (int l = 0; l < 8; l++) {
          sum += (double)part[l];
        }
        for (; c < st; c++) {
          s[c] = k_expf(s[c] - safe);
          sum += (double)s[c];
        }
        float inv = (float)(1.0 / (sum == 0 ? 1.0 : (double)(float)sum));
        for (c = 0; c < st; c++) {
          s[c] *= inv;
        }
      }
    }
    if (qk && p->mode == 3) {
      memcpy(qk, s, st * sizeof(float));
    }
  }
}

// Copies the past then the new rows of one cache into present [B, H, St,
// D]; |cur| is K or V in the input layout.
typedef struct at_cat_job {
  const at_plan_t *p;
  const float *past, *cur;
  float *out;
  size_t d;  // head size
} at_cat_job_t;

static void at_concat(void *ctx, size_t begin, size_t end) {
  const at_cat_job_t *j = ctx;
  const at_plan_t *p = j->p;
  size_t d = j->d;
  for (size_t bh = begin; bh < end; bh++) {
    size_t b = bh / p->hkv, h = bh % p->hkv;
    float *dst = j->out + bh * p->st * d;
    if (p->sp) {
      memcpy(dst, j->past + bh * p->sp * d, p->sp * d * sizeof(float));
    }
    for (size_t s = 0; s < p->skv; s++) {
      size_t o = p->rank == 4 ? (bh * p->skv + s) * d
                              : (b * p->skv + s) * p->hkv * d + h * d;
      memcpy(dst + (p->sp + s) * d, j->cur + o, d * sizeof(float));
    }
  }
}

// Where pair |u|'s keys (|values| false) or values start, and their row
// stride.
static const float *at_kv(const at_pass_t *a, size_t u, bool values,
                          size_t *out_stride) {
  const at_plan_t *p = a->p;
  size_t b = u / p->hq, kvh = u % p->hq / (p->hq / p->hkv);
  size_t d = values ? p->dv : p->dq, ld = values ? a->ldv : a->ldk;
  const float *base = values ? a->v : a->k;
  if (a->cat) {
    *out_stride = d;
    return base + (b * p->hkv + kvh) * p->st * d;
  }
  if (p->rank == 4) {
    *out_stride = d;
    return base + (b * p->hkv + kvh) * p->skv * d;
  }
  *out_stride = ld;
  return base + b * p->skv * ld + kvh * d;
}

// Member t of the scores batch: S_t[rows x st] = alpha Q_u K_u^T.
static void at_qk_member(const void *ctx, size_t t, cpu_gemm_problem_t *out) {
  const at_pass_t *a = ctx;
  const at_plan_t *p = a->p;
  size_t u = a->u0 + t, b = u / p->hq, h = u % p->hq, ks;
  const float *kh = at_kv(a, u, false, &ks);
  memset(out, 0, sizeof(*out));
  out->m = (int64_t)a->rows;
  out->n = (int64_t)p->st;
  out->k = (int64_t)p->dq;
  out->a.data = p->rank == 4 ? a->q + (u * p->sq + a->i0) * p->dq
                             : a->q + (b * p->sq + a->i0) * a->ldq + h * p->dq;
  out->a.rs = (int64_t)a->ldq;
  out->a.cs = 1;
  out->b.data = kh;  // element (d, key) at kh[key * ks + d]
  out->b.rs = 1;
  out->b.cs = (int64_t)ks;
  out->c = p->scores + t * a->rows * p->st;
  out->ldc = (int64_t)p->st;
  out->epi = cpu_gemm_epi_plain();
  out->epi.alpha = p->alpha;
}

// Member t of the output batch: Y_u rows = P_t V_u.
static void at_pv_member(const void *ctx, size_t t, cpu_gemm_problem_t *out) {
  const at_pass_t *a = ctx;
  const at_plan_t *p = a->p;
  size_t u = a->u0 + t, b = u / p->hq, h = u % p->hq, vs;
  const float *vh = at_kv(a, u, true, &vs);
  memset(out, 0, sizeof(*out));
  out->m = (int64_t)a->rows;
  out->n = (int64_t)p->dv;
  out->k = (int64_t)p->st;
  out->a.data = p->scores + t * a->rows * p->st;
  out->a.rs = (int64_t)p->st;
  out->a.cs = 1;
  out->b.data = vh;
  out->b.rs = (int64_t)vs;
  out->b.cs = 1;
  out->c = p->rank == 4 ? a->y + (u * p->sq + a->i0) * p->dv
                        : a->y + (b * p->sq + a->i0) * a->ldy + h * p->dv;
  out->ldc = (int64_t)a->ldy;
  out->epi = cpu_gemm_epi_plain();
}

static wm_error *at_run(void *state, const cpu_run_t *run) {
  const cpu_gemm_scratch_t ws = cpu_gemm_scratch_of(run);
  at_plan_t *p = state;
  for (uint32_t i = 0; i < 7; i++) {
    size_t have = i < run->n_in && run->in[i].data ? run->in[i].count : 0;
    if (have != p->counts[i]) {
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "Attention kernel: input %u does not match the plan", i);
    }
  }
  const float *q = run->in[IN_Q].data, *k = run->in[IN_K].data,
              *v = run->in[IN_V].data;
  const float *pk = p->has_past ? run->in[IN_PAST_K].data : NULL;
  const float *pv = p->has_past ? run->in[IN_PAST_V].data : NULL;
  float *y = run->out[OUT_Y].data;
  float *qk = run->n_out > OUT_QK ? run->out[OUT_QK].data : NULL;
  float *cat[2] = {p->cat[0], p->cat[1]};
  for (uint32_t o = OUT_PRESENT_K; o <= OUT_PRESENT_V; o++) {
    if (o < run->n_out && run->out[o].data && run->out[o].count) {
      cat[o - 1] = run->out[o].data;
    }
    if (!cat[o - 1]) {
      continue;
    }
    at_cat_job_t c = {p, o == OUT_PRESENT_K ? pk : pv,
                      o == OUT_PRESENT_K ? k : v, cat[o - 1],
                      o == OUT_PRESENT_K ? p->dq : p->dv};
    k_for(run->pool, p->b * p->hkv, k_row_grain(p->st * c.d, 4 * K_GRAIN),
          at_concat, &c);
  }
  if (run->out[OUT_Y].count == 0) {
    return NULL;
  }
  if (p->st == 0 || p->dv == 0) {
    memset(y, 0, run->out[OUT_Y].count * sizeof(float));
    if (p->st == 0) {
      return NULL;
    }
  }
  bool r4 = p->rank == 4;
  at_pass_t a = {
      .p = p,
      .q = q,
      .k = p->has_past ? cat[0] : k,
      .v = p->has_past ? cat[1] : v,
      .cat = p->has_past,
      .y = y,
      .ldq = r4 ? p->dq : p->hq * p->dq,
      .ldk = r4 ? p->dq : p->hkv * p->dq,
      .ldv = r4 ? p->dv : p->hkv * p->dv,
      .ldy = r4 ? p->dv : p->hq * p->dv,
      .mask = p->has_mask ? run->in[IN_MASK].data : NULL,
      .nonpad = p->has_nonpad ? run->in[IN_NONPAD].data : NULL,
      .qk = qk,
  };
  size_t pairs = p->b * p->hq;
  for (size_t i0 = 0; i0 < p->sq; i0 += p->block) {
    a.i0 = i0;
    a.rows = p->sq - i0 < p->block ? p->sq - i0 : p->block;
    for (size_t u0 = 0; u0 < pairs; u0 += p->units) {
      size_t count = pairs - u0 < p->units ? pairs - u0 : p->units;
      a.u0 = u0;
      wm_error *e = cpu_gemm_run_batch(count, at_qk_member, &a, run->pool, &ws);
      if (e) {
        return e;
      }
      k_for(run->pool, count * a.rows, k_row_grain(p->st * 8, K_GRAIN_HEAVY),
            at_rows, &a);
      e = cpu_gemm_run_batch(count, at_pv_member, &a, run->pool, &ws);
      if (e) {
        return e;
      }
    }
  }
  return NULL;
}

const cpu_kernel_t cpu_kernels_attention[] = {
    {"Attention", 23, WM_IMPL_NATIVE_KERNEL, at_query, at_plan, at_run,
     at_destroy, cpu_gemm_kernel_workspace, NULL, NULL},
    {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};

// The "wmap" domain's Attention (the attention pass's): ai.onnx's of
// opset 23 at any opset.
const cpu_kernel_t cpu_kernels_attention_wmap[] = {
    {"Attention", 1, WM_IMPL_NATIVE_KERNEL, at_query, at_plan, at_run,
     at_destroy, cpu_gemm_kernel_workspace, NULL, NULL},
    {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
