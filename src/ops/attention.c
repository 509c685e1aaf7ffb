// Transformer operators: Attention, RotaryEmbedding, RMSNormalization and
// FlexAttention (whose modifier subgraphs the session runs).
// Kernels compute in double but round every intermediate the ONNX
// reference rounds (scaled Q and K, logits, softmax terms) to the
// tensor's dtype, so float16 and bfloat16 results land on the same
// representable values as the reference.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

// Attention inputs and outputs by slot.
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

// Bounds nonpad_kv_seqlen values so offsets built from them cannot
// overflow; any value past this behaves like it (sequences are shorter).
#define NONPAD_LIMIT (INT64_C(1) << 50)

// ------------------------------------------------------------ attributes

// The shared readers, also saying whether the attribute was given.
static wm_status_t attr_int(const wm_op_ctx_t *ctx, const char *name,
                            int64_t def, int64_t *out, bool *out_present) {
  if (out_present) {
    *out_present = wm_node_attr(ctx->node, name) != NULL;
  }
  return wm_op_attr_int(ctx, name, def, out);
}

static wm_status_t attr_float(const wm_op_ctx_t *ctx, const char *name,
                              double def, double *out, bool *out_present) {
  if (out_present) {
    *out_present = wm_node_attr(ctx->node, name) != NULL;
  }
  return wm_op_attr_float(ctx, name, def, out);
}

// ---------------------------------------------------------- small helpers

static wm_status_t check_float(const wm_op_ctx_t *ctx, int32_t i) {
  wm_dtype_t d = wm_op_in_dtype(ctx, i);
  if (d != WM_DTYPE_UNDEFINED && !wm_dtype_is_float(d)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d has dtype %s, want a float type", i,
                       wm_dtype_name(d));
  }
  return NULL;
}

// Merges the dim |v| (< 0 unknown) of |what| into *acc; known values
// must agree.
static wm_status_t merge_dim(const wm_op_ctx_t *ctx, int64_t *acc, int64_t v,
                             const char *what) {
  if (v < 0) {
    return NULL;
  }
  if (*acc >= 0 && *acc != v) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "%s is %lld here, %lld elsewhere",
                       what, (long long)v, (long long)*acc);
  }
  *acc = v;
  return NULL;
}

// Dim |d| of input |i| or -1 when unknown.
static int64_t in_dim(const wm_op_ctx_t *ctx, int32_t i, int32_t d) {
  const wm_shape_t *s = wm_op_in_shape(ctx, i);
  return s->rank > d ? s->dims[d] : -1;
}

static wm_status_t alloc_f64(const wm_op_ctx_t *ctx, size_t n, double **out) {
  *out = wm_calloc(n ? n : 1, sizeof(double));
  if (!*out) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for %zu elements", n);
  }
  return NULL;
}

// ------------------------------------------------------------- Attention

// Sizes of one Attention node; -1 where unknown (static inference).
typedef struct attn {
  int32_t rank;          // rank of Q, K, V: 3, 4, or -1
  int64_t b;             // batch
  int64_t hq;            // query heads
  int64_t hkv;           // key/value heads
  int64_t sq;            // query sequence length
  int64_t skv;           // new key/value sequence length
  int64_t sp;            // past sequence length (0 without past)
  int64_t st;            // total key/value sequence length
  int64_t dq;            // query/key head size
  int64_t dv;            // value head size
  bool has_mask;         // attn_mask given
  bool has_past;         // past_key and past_value given
  bool has_nonpad;       // nonpad_kv_seqlen given
  bool is_causal;        // causal frontier applied
  int64_t left;          // left window (-1 unbounded)
  int64_t right;         // right window (-1 unbounded)
  int64_t mode;          // qk_matmul_output_mode
  double softcap;        // 0 = none
  double scale;          // product scale of Q*K^T
  wm_dtype_t precision;  // softmax precision (UNDEFINED: that of Q)
} attn_t;

// Reads the head count attributes and splits a 3D hidden dim into
// heads x head size.
static wm_status_t attn_split_hidden(const wm_op_ctx_t *ctx, int32_t i,
                                     int64_t heads, const char *attr,
                                     int64_t *out_head_size) {
  int64_t hidden = in_dim(ctx, i, 2);
  *out_head_size = -1;
  if (hidden < 0) {
    return NULL;
  }
  if (hidden % heads != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d hidden size %lld is not a multiple of %s %lld",
                       i, (long long)hidden, attr, (long long)heads);
  }
  *out_head_size = hidden / heads;
  return NULL;
}

static wm_status_t attn_attrs(const wm_op_ctx_t *ctx, attn_t *a,
                              int64_t *out_qh, bool *out_qh_set,
                              int64_t *out_kvh, bool *out_kvh_set) {
  int64_t causal, prec;
  bool prec_set, scale_set;
  WM_RETURN_IF_ERROR(attr_int(ctx, "is_causal", 0, &causal, NULL));
  WM_RETURN_IF_ERROR(attr_int(ctx, "qk_matmul_output_mode", 0, &a->mode, NULL));
  WM_RETURN_IF_ERROR(attr_float(ctx, "softcap", 0, &a->softcap, NULL));
  WM_RETURN_IF_ERROR(attr_float(ctx, "scale", 0, &a->scale, &scale_set));
  WM_RETURN_IF_ERROR(attr_int(ctx, "softmax_precision", 0, &prec, &prec_set));
  WM_RETURN_IF_ERROR(attr_int(ctx, "q_num_heads", 0, out_qh, out_qh_set));
  WM_RETURN_IF_ERROR(attr_int(ctx, "kv_num_heads", 0, out_kvh, out_kvh_set));
  a->left = a->right = -1;
  if (ctx->opset >= 25) {
    WM_RETURN_IF_ERROR(attr_int(ctx, "left_window_size", -1, &a->left, NULL));
    WM_RETURN_IF_ERROR(attr_int(ctx, "right_window_size", -1, &a->right, NULL));
  }
  if (causal != 0 && causal != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute is_causal is %lld, "
                       "want 0 or 1",
                       (long long)causal);
  }
  a->is_causal = causal == 1;
  if (a->mode < 0 || a->mode > 3) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute qk_matmul_output_mode is %lld, want 0 to 3",
                       (long long)a->mode);
  }
  if (a->left < -1 || a->right < -1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "window sizes are %lld (left) and %lld (right), want "
                       "-1 or at least 0",
                       (long long)a->left, (long long)a->right);
  }
  if (!(a->softcap >= 0)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute softcap is %g, want at least 0", a->softcap);
  }
  if (scale_set && !isfinite(a->scale)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute scale is %g, want a finite value", a->scale);
  }
  if (!scale_set) {
    a->scale = NAN;  // 1/sqrt(head size), once known
  }
  a->precision = WM_DTYPE_UNDEFINED;
  if (prec_set) {
    if (prec != WM_DTYPE_FLOAT && prec != WM_DTYPE_FLOAT16 &&
        prec != WM_DTYPE_DOUBLE && prec != WM_DTYPE_BFLOAT16) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute softmax_precision is %lld, want 1, 10, 11 "
                         "or 16",
                         (long long)prec);
    }
    a->precision = (wm_dtype_t)prec;
  }
  return NULL;
}

// Checks the shapes of every input and fills |a|; unknown parts stay -1.
static wm_status_t attn_setup(const wm_op_ctx_t *ctx, attn_t *a) {
  memset(a, 0, sizeof(*a));
  int64_t qh, kvh;
  bool qh_set, kvh_set;
  WM_RETURN_IF_ERROR(attn_attrs(ctx, a, &qh, &qh_set, &kvh, &kvh_set));
  for (int32_t i = 0; i < 3; i++) {
    WM_RETURN_IF_ERROR(check_float(ctx, i));
  }
  WM_RETURN_IF_ERROR(wm_op_check_dtype_as(ctx, IN_K, IN_Q));
  WM_RETURN_IF_ERROR(wm_op_check_dtype_as(ctx, IN_PAST_K, IN_Q));
  WM_RETURN_IF_ERROR(wm_op_check_dtype_as(ctx, IN_PAST_V, IN_V));
  a->has_mask = wm_op_has_input(ctx, IN_MASK);
  a->has_past = wm_op_has_input(ctx, IN_PAST_K);
  a->has_nonpad = wm_op_has_input(ctx, IN_NONPAD);
  if (a->has_past != wm_op_has_input(ctx, IN_PAST_V)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "past_key and past_value must be given together");
  }
  if (a->has_nonpad && a->has_past) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "nonpad_kv_seqlen cannot be combined with past_key and "
                       "past_value");
  }
  wm_dtype_t md = wm_op_in_dtype(ctx, IN_MASK);
  if (md == WM_DTYPE_STRING) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 3 (attn_mask) has dtype string");
  }
  wm_dtype_t nd = wm_op_in_dtype(ctx, IN_NONPAD);
  if (nd != WM_DTYPE_UNDEFINED && nd != WM_DTYPE_INT64) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 6 (nonpad_kv_seqlen) has dtype %s, want int64",
                       wm_dtype_name(nd));
  }

  a->rank = -1;
  for (int32_t i = 0; i < 3; i++) {
    int32_t r = wm_op_in_shape(ctx, i)->rank;
    if (r < 0) {
      continue;
    }
    if (r != 3 && r != 4) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d has rank %d, want 3 or 4", i, r);
    }
    if (a->rank >= 0 && r != a->rank) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d has rank %d but input 0..2 have rank %d", i,
                         r, a->rank);
    }
    a->rank = r;
  }
  a->b = a->hq = a->hkv = a->sq = a->skv = a->st = a->dq = a->dv = -1;
  a->sp = a->has_past ? -1 : 0;
  int64_t dk = -1;
  if (a->rank == 3 || (a->rank < 0 && (qh_set || kvh_set))) {
    if (!qh_set || !kvh_set || qh <= 0 || kvh <= 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "3D inputs need attributes q_num_heads and "
                         "kv_num_heads, both positive");
    }
    a->hq = qh;
    a->hkv = kvh;
    if (a->rank == 3) {
      WM_RETURN_IF_ERROR(
          attn_split_hidden(ctx, IN_Q, qh, "q_num_heads", &a->dq));
      WM_RETURN_IF_ERROR(
          attn_split_hidden(ctx, IN_K, kvh, "kv_num_heads", &dk));
      WM_RETURN_IF_ERROR(
          attn_split_hidden(ctx, IN_V, kvh, "kv_num_heads", &a->dv));
      a->sq = in_dim(ctx, IN_Q, 1);
      WM_RETURN_IF_ERROR(
          merge_dim(ctx, &a->skv, in_dim(ctx, IN_K, 1), "kv sequence length"));
      WM_RETURN_IF_ERROR(
          merge_dim(ctx, &a->skv, in_dim(ctx, IN_V, 1), "kv sequence length"));
    }
  } else if (a->rank == 4) {
    if ((qh_set || kvh_set) && ctx->opset >= 25) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "q_num_heads and kv_num_heads must not be given for "
                         "4D inputs");
    }
    a->hq = in_dim(ctx, IN_Q, 1);
    WM_RETURN_IF_ERROR(
        merge_dim(ctx, &a->hq, qh_set ? qh : -1, "query head count"));
    WM_RETURN_IF_ERROR(
        merge_dim(ctx, &a->hkv, in_dim(ctx, IN_K, 1), "kv head count"));
    WM_RETURN_IF_ERROR(
        merge_dim(ctx, &a->hkv, in_dim(ctx, IN_V, 1), "kv head count"));
    WM_RETURN_IF_ERROR(
        merge_dim(ctx, &a->hkv, kvh_set ? kvh : -1, "kv head count"));
    a->sq = in_dim(ctx, IN_Q, 2);
    WM_RETURN_IF_ERROR(
        merge_dim(ctx, &a->skv, in_dim(ctx, IN_K, 2), "kv sequence length"));
    WM_RETURN_IF_ERROR(
        merge_dim(ctx, &a->skv, in_dim(ctx, IN_V, 2), "kv sequence length"));
    a->dq = in_dim(ctx, IN_Q, 3);
    dk = in_dim(ctx, IN_K, 3);
    a->dv = in_dim(ctx, IN_V, 3);
  }
  for (int32_t i = 0; i < 3; i++) {
    WM_RETURN_IF_ERROR(merge_dim(ctx, &a->b, in_dim(ctx, i, 0), "batch size"));
  }
  WM_RETURN_IF_ERROR(merge_dim(ctx, &a->dq, dk, "query/key head size"));
  if (a->hkv == 0 && a->hq != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "kv head count is 0 but query head count is %lld",
                       (long long)a->hq);
  }
  if (a->hq >= 0 && a->hkv > 0 && a->hq % a->hkv != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "query head count %lld is not a multiple of kv head "
                       "count %lld",
                       (long long)a->hq, (long long)a->hkv);
  }

  if (a->has_past) {
    for (int32_t i = IN_PAST_K; i <= IN_PAST_V; i++) {
      int32_t r = wm_op_in_shape(ctx, i)->rank;
      if (r >= 0 && r != 4) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "input %d (%s) has rank %d, want 4", i,
                           i == IN_PAST_K ? "past_key" : "past_value", r);
      }
      WM_RETURN_IF_ERROR(
          merge_dim(ctx, &a->b, in_dim(ctx, i, 0), "batch size"));
      WM_RETURN_IF_ERROR(
          merge_dim(ctx, &a->hkv, in_dim(ctx, i, 1), "kv head count"));
      WM_RETURN_IF_ERROR(
          merge_dim(ctx, &a->sp, in_dim(ctx, i, 2), "past sequence length"));
    }
    WM_RETURN_IF_ERROR(merge_dim(ctx, &a->dq, in_dim(ctx, IN_PAST_K, 3),
                                 "query/key head size"));
    WM_RETURN_IF_ERROR(
        merge_dim(ctx, &a->dv, in_dim(ctx, IN_PAST_V, 3), "value head size"));
  }
  if (a->sp >= 0 && a->skv >= 0) {
    a->st = a->sp + a->skv;  // both come from tensor shapes: no overflow
  }

  if (a->has_nonpad) {
    const wm_shape_t *ns = wm_op_in_shape(ctx, IN_NONPAD);
    if (ns->rank >= 0 && ns->rank != 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 6 (nonpad_kv_seqlen) has rank %d, want 1",
                         ns->rank);
    }
    WM_RETURN_IF_ERROR(
        merge_dim(ctx, &a->b, in_dim(ctx, IN_NONPAD, 0), "batch size"));
  }
  if (a->has_mask) {
    const wm_shape_t *ms = wm_op_in_shape(ctx, IN_MASK);
    if (ms->rank == 0 || ms->rank > 4) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 3 (attn_mask) has rank %d, want 1 to 4",
                         ms->rank);
    }
    int64_t target[4] = {a->b, a->hq, a->sq, a->st};
    for (int32_t d = 0; d < ms->rank; d++) {
      int64_t m = ms->dims[ms->rank - 1 - d], t = target[3 - d];
      bool ok = m < 0 || t < 0 || m == t || (d == 0 ? m < t : m == 1);
      if (!ok) {
        char buf[160];
        return WM_OP_ERROR(
            ctx, INVALID_ARGUMENT,
            "input 3 (attn_mask) shape %s does not broadcast to [%lld,%lld,"
            "%lld,%lld]",
            wm_shape_format(ms, buf, sizeof(buf)), (long long)a->b,
            (long long)a->hq, (long long)a->sq, (long long)a->st);
      }
    }
  }
  if (isnan(a->scale) && a->dq >= 0) {
    a->scale = 1.0 / sqrt((double)a->dq);
  }
  return NULL;
}

static int64_t mul_dim(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0 || b < 0 || !wm_checked_mul_i64(a, b, &r)) {
    return -1;
  }
  return r;
}

// Parameters: is_causal, qk_matmul_output_mode, softmax_precision (Q's
// dtype when absent), left_window_size and right_window_size (-1 where the
// opset has none), q_num_heads and kv_num_heads (from the shapes of 4-D
// inputs), softcap, and scale (1/sqrt(head size) when absent) as a 1-D
// double tensor of one value.
static wm_status_t attn_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  attn_t a;
  WM_RETURN_IF_ERROR(attn_setup(ctx, &a));
  out->pending = a.hq < 0 || a.hkv < 0 || isnan(a.scale);
  if (out->pending) {
    return NULL;
  }
  wm_dtype_t prec = a.precision != WM_DTYPE_UNDEFINED
                        ? a.precision
                        : wm_op_in_dtype(ctx, IN_Q);
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "is_causal", a.is_causal));
  WM_RETURN_IF_ERROR(
      wm_op_param_int(ctx, out, "qk_matmul_output_mode", a.mode));
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "softmax_precision", prec));
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "left_window_size", a.left));
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "right_window_size", a.right));
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "q_num_heads", a.hq));
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "kv_num_heads", a.hkv));
  WM_RETURN_IF_ERROR(wm_op_param_float(ctx, out, "softcap", a.softcap));
  return wm_op_param_reals(ctx, out, "scale", &a.scale, 1);
}

static wm_status_t attn_infer(wm_op_ctx_t *ctx) {
  attn_t a;
  WM_RETURN_IF_ERROR(attn_setup(ctx, &a));
  wm_dtype_t t1 = wm_op_in_dtype(ctx, IN_Q);
  wm_dtype_t t2 = wm_op_in_dtype(ctx, IN_V);
  if (t1 == WM_DTYPE_UNDEFINED) {
    t1 = wm_op_in_dtype(ctx, IN_K);
  }
  if (a.rank < 0) {
    wm_op_set_out_unknown(ctx, OUT_Y, t1);
  } else if (a.rank == 3) {
    int64_t d[3] = {a.b, a.sq, mul_dim(a.hq, a.dv)};
    wm_shape_t s = wm_shape_make(3, d);
    WM_RETURN_IF_ERROR(wm_op_set_out_checked(ctx, OUT_Y, t1, &s));
  } else {
    int64_t d[4] = {a.b, a.hq, a.sq, a.dv};
    wm_shape_t s = wm_shape_make(4, d);
    WM_RETURN_IF_ERROR(wm_op_set_out_checked(ctx, OUT_Y, t1, &s));
  }
  int64_t dk[4] = {a.b, a.hkv, a.st, a.dq};
  int64_t dv[4] = {a.b, a.hkv, a.st, a.dv};
  int64_t dqk[4] = {a.b, a.hq, a.sq, a.st};
  wm_shape_t sk = wm_shape_make(4, dk), sv = wm_shape_make(4, dv),
             sqk = wm_shape_make(4, dqk);
  WM_RETURN_IF_ERROR(wm_op_set_out_checked(ctx, OUT_PRESENT_K, t1, &sk));
  WM_RETURN_IF_ERROR(wm_op_set_out_checked(ctx, OUT_PRESENT_V, t2, &sv));
  WM_RETURN_IF_ERROR(wm_op_set_out_checked(ctx, OUT_QK, t1, &sqk));
  return NULL;
}

// Element offset of (b, h, s, 0) of a Q/K/V input in its layout.
static size_t attn_offset(const attn_t *a, int64_t heads, int64_t seq,
                          int64_t hd, size_t b, size_t h, size_t s) {
  if (a->rank == 4) {
    return ((b * (size_t)heads + h) * (size_t)seq + s) * (size_t)hd;
  }
  return (b * (size_t)seq + s) * (size_t)(heads * hd) + h * (size_t)hd;
}

// Builds the present cache [B, Hkv, St, hd] (past then new) in |cache|
// and writes it to output |out| when requested.
static void attn_concat(const wm_op_ctx_t *ctx, const attn_t *a, int32_t past,
                        int32_t cur, int64_t hd, double *cache, int32_t out) {
  const wm_tensor_t *pt = a->has_past ? ctx->in[past] : NULL;
  const wm_tensor_t *ct = ctx->in[cur];
  size_t n = 0;
  for (size_t b = 0; b < (size_t)a->b; b++) {
    for (size_t h = 0; h < (size_t)a->hkv; h++) {
      for (size_t j = 0; j < (size_t)a->st; j++) {
        for (size_t d = 0; d < (size_t)hd; d++, n++) {
          if (j < (size_t)a->sp) {
            size_t o =
                ((b * (size_t)a->hkv + h) * (size_t)a->sp + j) * (size_t)hd + d;
            cache[n] = wm_tensor_get_f64(pt, o);
          } else {
            size_t o =
                attn_offset(a, a->hkv, a->skv, hd, b, h, j - (size_t)a->sp) + d;
            cache[n] = wm_tensor_get_f64(ct, o);
          }
        }
      }
    }
  }
  if (wm_op_has_output(ctx, out)) {
    for (size_t i = 0; i < n; i++) {
      wm_tensor_set_f64(ctx->out[out], i, cache[i]);
    }
  }
}

// The mask of one Attention node: element strides into attn_mask for
// (b, h, q) and its last dim; positions past that dim are masked.
typedef struct attn_mask {
  const wm_tensor_t *t;  // attn_mask or NULL
  bool is_bool;          // boolean (True = attend) rather than additive
  int64_t stride[3];     // strides for b, h, q (0 when broadcast)
  int64_t last;          // length of the last dim
} attn_mask_t;

static void attn_mask_init(const wm_op_ctx_t *ctx, const attn_t *a,
                           attn_mask_t *m) {
  memset(m, 0, sizeof(*m));
  if (!a->has_mask) {
    return;
  }
  m->t = ctx->in[IN_MASK];
  m->is_bool = m->t->dtype == WM_DTYPE_BOOL;
  const wm_shape_t *s = &m->t->shape;
  int64_t dims[4] = {1, 1, 1, 1};
  for (int32_t d = 0; d < s->rank; d++) {
    dims[4 - s->rank + d] = s->dims[d];
  }
  m->last = dims[3];
  int64_t st = dims[3];
  for (int32_t d = 2; d >= 0; d--) {
    m->stride[d] = dims[d] == 1 ? 0 : st;
    st *= dims[d];
  }
}

// Fills bias[0..St) for row (b, h, i): attn_mask, causal frontier,
// window and padding, each adding 0 or -inf like the reference.
static void attn_bias_row(const attn_t *a, const attn_mask_t *m, int64_t offset,
                          int64_t nonpad, size_t b, size_t h, size_t i,
                          double *bias) {
  size_t base = b * (size_t)m->stride[0] + h * (size_t)m->stride[1] +
                i * (size_t)m->stride[2];
  for (int64_t j = 0; j < a->st; j++) {
    double v = 0;
    if (m->t) {
      if (j >= m->last) {
        v = -INFINITY;
      } else if (m->is_bool) {
        v = wm_tensor_get_i64(m->t, base + (size_t)j) ? 0 : -INFINITY;
      } else {
        v = wm_tensor_get_f64(m->t, base + (size_t)j);
      }
    }
    int64_t diff = (int64_t)i + offset - j;  // query position minus key
    if (a->is_causal && diff < 0) {
      v += -INFINITY;
    }
    if ((a->left >= 0 && diff > a->left) ||
        (a->right >= 0 && -diff > a->right)) {
      v += -INFINITY;
    }
    if (a->has_nonpad && j >= nonpad) {
      v += -INFINITY;
    }
    bias[j] = v;
  }
}

// Softmax of x[0..n) in dtype |p| into out, rounding like the reference;
// a row whose maximum is -inf gives zeros; NaN propagates.
static void attn_softmax(wm_dtype_t p, const double *x, size_t n, double *out) {
  double mx = -INFINITY;
  for (size_t j = 0; j < n; j++) {
    if (isnan(x[j]) || x[j] > mx) {
      mx = x[j];
      if (isnan(mx)) {
        break;
      }
    }
  }
  double safe = isinf(mx) && mx < 0 ? 0 : mx;
  double sum = 0;
  for (size_t j = 0; j < n; j++) {
    out[j] = wm_op_round_to(p, exp(wm_op_round_to(p, x[j] - safe)));
    // numpy sums bfloat16 element by element in bfloat16; the builtin
    // types accumulate wider and round once.
    sum =
        p == WM_DTYPE_BFLOAT16 ? wm_op_round_to(p, sum + out[j]) : sum + out[j];
  }
  sum = wm_op_round_to(p, sum);
  if (sum == 0) {
    sum = 1;
  }
  for (size_t j = 0; j < n; j++) {
    out[j] = wm_op_round_to(p, out[j] / sum);
  }
}

static wm_status_t attn_run(wm_op_ctx_t *ctx) {
  attn_t a;
  WM_RETURN_IF_ERROR(attn_setup(ctx, &a));
  const wm_tensor_t *qt = ctx->in[IN_Q];
  wm_dtype_t t = qt->dtype;
  wm_dtype_t prec = a.precision != WM_DTYPE_UNDEFINED ? a.precision : t;
  size_t nk = (size_t)(a.b * a.hkv) * (size_t)a.st;  // rows of the caches
  double *kc = NULL, *vc = NULL, *qs = NULL, *row = NULL;
  int64_t *nonpad = NULL;
  size_t st = (size_t)a.st;
  wm_status_t s = alloc_f64(ctx, nk * (size_t)a.dq, &kc);
  if (!s) {
    s = alloc_f64(ctx, nk * (size_t)a.dv, &vc);
  }
  if (!s) {
    s = alloc_f64(ctx, (size_t)a.dq, &qs);
  }
  if (!s) {
    s = alloc_f64(ctx, 4 * st, &row);  // bias, logits, probabilities
  }
  if (!s && a.has_nonpad) {
    size_t n;
    bool known;
    s = wm_op_input_ints(ctx, IN_NONPAD, &nonpad, &n, &known);
  }
  if (s) {
    goto done;
  }
  attn_concat(ctx, &a, IN_PAST_K, IN_K, a.dq, kc, OUT_PRESENT_K);
  attn_concat(ctx, &a, IN_PAST_V, IN_V, a.dv, vc, OUT_PRESENT_V);
  // Q and K are each scaled by sqrt(scale) rounded to their dtype.
  double sc = wm_op_round_to(t, sqrt(a.scale));
  for (size_t i = 0; i < nk * (size_t)a.dq; i++) {
    kc[i] = wm_op_round_to(t, kc[i] * sc);
  }
  attn_mask_t m;
  attn_mask_init(ctx, &a, &m);
  double *bias = row, *logit = row + st, *prob = row + 2 * st;
  double *capped = row + 3 * st;
  wm_tensor_t *yt = ctx->out[OUT_Y];
  wm_tensor_t *qkt = wm_op_has_output(ctx, OUT_QK) ? ctx->out[OUT_QK] : NULL;
  size_t reps = a.hkv > 0 ? (size_t)(a.hq / a.hkv) : 1;
  for (size_t b = 0; b < (size_t)a.b; b++) {
    int64_t np = 0, offset = a.sp;
    if (a.has_nonpad) {
      np = nonpad[b];
      np = np < -NONPAD_LIMIT ? -NONPAD_LIMIT
                              : (np > NONPAD_LIMIT ? NONPAD_LIMIT : np);
      offset = np - a.sq;
    }
    for (size_t h = 0; h < (size_t)a.hq; h++) {
      size_t kvh = h / reps;
      const double *kh = kc + (b * (size_t)a.hkv + kvh) * st * (size_t)a.dq;
      const double *vh = vc + (b * (size_t)a.hkv + kvh) * st * (size_t)a.dv;
      for (size_t i = 0; i < (size_t)a.sq; i++) {
        size_t qo = attn_offset(&a, a.hq, a.sq, a.dq, b, h, i);
        for (size_t d = 0; d < (size_t)a.dq; d++) {
          qs[d] = wm_op_round_to(t, wm_tensor_get_f64(qt, qo + d) * sc);
        }
        attn_bias_row(&a, &m, offset, np, b, h, i, bias);
        double bmax = -INFINITY;
        bool bnan = false;
        for (size_t j = 0; j < st; j++) {
          bnan = bnan || isnan(bias[j]);
          bmax = bias[j] > bmax ? bias[j] : bmax;
        }
        bool all_masked = !bnan && isinf(bmax) && bmax < 0;
        for (size_t j = 0; j < st; j++) {
          const double *kr = kh + j * (size_t)a.dq;
          double acc = 0;
          for (size_t d = 0; d < (size_t)a.dq; d++) {
            acc += qs[d] * kr[d];
          }
          logit[j] = wm_op_round_to(t, acc);
          double c = logit[j];
          if (a.softcap > 0) {
            c = wm_op_round_to(t, c / a.softcap);
            c = wm_op_round_to(t, tanh(c));
            c = wm_op_round_to(t, c * a.softcap);
          }
          capped[j] = c;
          prob[j] = wm_op_round_to(t, c + bias[j]);
        }
        size_t qko = ((b * (size_t)a.hq + h) * (size_t)a.sq + i) * st;
        // Mode 0 is the raw product even with a softcap, as the spec says
        // (onnx's reference gives the capped one there; no test covers it).
        if (qkt && a.mode < 3) {
          const double *src = a.mode == 0 ? logit : a.mode == 1 ? capped : prob;
          for (size_t j = 0; j < st; j++) {
            wm_tensor_set_f64(qkt, qko + j, src[j]);
          }
        }
        for (size_t j = 0; j < st; j++) {
          logit[j] = wm_op_round_to(prec, prob[j]);
        }
        attn_softmax(prec, logit, st, prob);
        for (size_t j = 0; j < st; j++) {
          prob[j] = all_masked ? 0 : wm_op_round_to(t, prob[j]);
        }
        if (qkt && a.mode == 3) {
          for (size_t j = 0; j < st; j++) {
            wm_tensor_set_f64(qkt, qko + j, prob[j]);
          }
        }
        size_t yo = attn_offset(&a, a.hq, a.sq, a.dv, b, h, i);
        for (size_t d = 0; d < (size_t)a.dv; d++) {
          double acc = 0;
          for (size_t j = 0; j < st; j++) {
            acc += prob[j] * vh[j * (size_t)a.dv + d];
          }
          wm_tensor_set_f64(yt, yo + d, wm_op_round_to(t, acc));
        }
      }
    }
  }
done:
  free(kc);
  free(vc);
  free(qs);
  free(row);
  free(nonpad);
  return s;
}

// The work of scaled dot-product attention over b*h*l*s scores: the two
// products (e and ev MACs per score), |per_score| FLOPs and one exp per
// score. Unknown (negative) dims leave *out zero.
static void scores_cost(int64_t b, int64_t h, int64_t l, int64_t s, int64_t e,
                        int64_t ev, int per_score, wm_op_cost_t *out) {
  if (b < 0 || h < 0 || l < 0 || s < 0 || e < 0 || ev < 0) {
    return;
  }
  double scores = (double)b * (double)h * (double)l * (double)s;
  out->macs = scores * (double)(e + ev);
  out->flops = 2 * out->macs + per_score * scores;
  out->transcendentals = scores;
}

// MACs B*Hq*Sq*St*(dq + dv) for the two products; five FLOPs per score
// (scale, mask add, max, subtract, divide) and one exp.
static void attn_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  attn_t a;
  wm_status_t s = attn_setup(ctx, &a);
  if (s) {
    wm_status_free(s);
    return;
  }
  scores_cost(a.b, a.hq, a.sq, a.st, a.dq, a.dv, 5, out);
}

// ------------------------------------------------------- RotaryEmbedding

// Sizes of one RotaryEmbedding node; -1 where unknown.
typedef struct rope {
  int32_t rank;      // rank of X: 3, 4, or -1
  int64_t b;         // batch
  int64_t s;         // sequence length
  int64_t h;         // heads
  int64_t d;         // head size
  int64_t rd;        // rotated dims per head (even)
  bool interleaved;  // pairs (2k, 2k+1) rather than halves
  bool has_pos;      // position_ids given
} rope_t;

static wm_status_t rope_setup(const wm_op_ctx_t *ctx, rope_t *r) {
  memset(r, 0, sizeof(*r));
  int64_t inter, rd, heads;
  bool heads_set;
  WM_RETURN_IF_ERROR(attr_int(ctx, "interleaved", 0, &inter, NULL));
  WM_RETURN_IF_ERROR(attr_int(ctx, "rotary_embedding_dim", 0, &rd, NULL));
  WM_RETURN_IF_ERROR(attr_int(ctx, "num_heads", 0, &heads, &heads_set));
  if (inter != 0 && inter != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute interleaved is %lld, want 0 or 1",
                       (long long)inter);
  }
  if (rd < 0 || rd % 2 != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute rotary_embedding_dim is %lld, want an even "
                       "value of at least 0",
                       (long long)rd);
  }
  if (heads_set && heads <= 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute num_heads is %lld, want at least 1",
                       (long long)heads);
  }
  r->interleaved = inter == 1;
  r->has_pos = wm_op_has_input(ctx, 3);
  WM_RETURN_IF_ERROR(wm_op_check_dtype_as(ctx, 1, 0));
  WM_RETURN_IF_ERROR(wm_op_check_dtype_as(ctx, 2, 0));
  wm_dtype_t pd = wm_op_in_dtype(ctx, 3);
  if (pd != WM_DTYPE_UNDEFINED && pd != WM_DTYPE_INT64) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 3 (position_ids) has dtype %s, want int64",
                       wm_dtype_name(pd));
  }
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  r->rank = xs->rank;
  r->b = r->s = r->h = r->d = -1;
  if (xs->rank == 4) {
    if (heads_set && xs->dims[1] >= 0 && xs->dims[1] != heads) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute num_heads is %lld but input 0 has %lld "
                         "heads",
                         (long long)heads, (long long)xs->dims[1]);
    }
    r->b = xs->dims[0];
    r->h = xs->dims[1];
    r->s = xs->dims[2];
    r->d = xs->dims[3];
  } else if (xs->rank == 3) {
    if (!heads_set) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "3D input needs attribute num_heads");
    }
    r->b = xs->dims[0];
    r->s = xs->dims[1];
    r->h = heads;
    if (xs->dims[2] >= 0) {
      if (xs->dims[2] % heads != 0) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "input 0 hidden size %lld is not a multiple of "
                           "num_heads %lld",
                           (long long)xs->dims[2], (long long)heads);
      }
      r->d = xs->dims[2] / heads;
    }
  } else if (xs->rank >= 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has rank %d, want 3 or 4", xs->rank);
  }
  r->rd = rd;
  if (r->d >= 0) {
    if (rd == 0) {
      r->rd = r->d;
    }
    if (r->rd > r->d || r->rd % 2 != 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "rotary dim %lld must be even and at most the head "
                         "size %lld",
                         (long long)r->rd, (long long)r->d);
    }
  } else if (rd == 0) {
    r->rd = -1;
  }
  // Caches: [max_position, rd/2] with position_ids, else [B, S, rd/2].
  int32_t want_rank = r->has_pos ? 2 : 3;
  for (int32_t i = 1; i <= 2; i++) {
    const wm_shape_t *cs = wm_op_in_shape(ctx, i);
    if (cs->rank < 0) {
      continue;
    }
    const char *what = i == 1 ? "cos_cache" : "sin_cache";
    if (cs->rank != want_rank) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d (%s) has rank %d, want %d %s position_ids",
                         i, what, cs->rank, want_rank,
                         r->has_pos ? "with" : "without");
    }
    int64_t last = cs->dims[cs->rank - 1];
    if (last >= 0 && r->rd >= 0 && last != r->rd / 2) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d (%s) last dim is %lld, want rotary dim / 2 "
                         "= %lld",
                         i, what, (long long)last, (long long)(r->rd / 2));
    }
    if (!r->has_pos) {
      WM_RETURN_IF_ERROR(merge_dim(ctx, &r->b, cs->dims[0], "batch size"));
      WM_RETURN_IF_ERROR(merge_dim(ctx, &r->s, cs->dims[1], "sequence length"));
    }
  }
  if (r->has_pos) {
    const wm_shape_t *ps = wm_op_in_shape(ctx, 3);
    if (ps->rank >= 0 && ps->rank != 2) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 3 (position_ids) has rank %d, want 2",
                         ps->rank);
    }
    if (ps->rank == 2) {
      WM_RETURN_IF_ERROR(merge_dim(ctx, &r->b, ps->dims[0], "batch size"));
      WM_RETURN_IF_ERROR(merge_dim(ctx, &r->s, ps->dims[1], "sequence length"));
    }
    int64_t c1 = in_dim(ctx, 1, 0), c2 = in_dim(ctx, 2, 0);
    if (c1 >= 0 && c2 >= 0 && c1 != c2) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "cos_cache has %lld positions, sin_cache %lld",
                         (long long)c1, (long long)c2);
    }
  }
  return NULL;
}

static wm_status_t rope_infer(wm_op_ctx_t *ctx) {
  rope_t r;
  WM_RETURN_IF_ERROR(rope_setup(ctx, &r));
  return wm_op_infer_same(ctx);
}

static wm_status_t rope_run(wm_op_ctx_t *ctx) {
  rope_t r;
  WM_RETURN_IF_ERROR(rope_setup(ctx, &r));
  const wm_tensor_t *x = ctx->in[0], *ct = ctx->in[1], *stt = ctx->in[2];
  const wm_tensor_t *pt = r.has_pos ? ctx->in[3] : NULL;
  wm_tensor_t *y = ctx->out[0];
  wm_dtype_t t = x->dtype;
  size_t half = (size_t)r.rd / 2, hd = (size_t)r.d;
  int64_t max_pos = r.has_pos ? ct->shape.dims[0] : 0;
  for (size_t b = 0; b < (size_t)r.b; b++) {
    for (size_t s = 0; s < (size_t)r.s; s++) {
      size_t cache_row = b * (size_t)r.s + s;
      if (pt) {
        int64_t p = wm_tensor_get_i64(pt, b * (size_t)r.s + s);
        if (p < 0 || p >= max_pos) {
          return WM_OP_ERROR(ctx, OUT_OF_RANGE,
                             "position_ids[%zu,%zu] is %lld, want 0 to %lld", b,
                             s, (long long)p, (long long)(max_pos - 1));
        }
        cache_row = (size_t)p;
      }
      for (size_t h = 0; h < (size_t)r.h; h++) {
        size_t base = r.rank == 4
                          ? ((b * (size_t)r.h + h) * (size_t)r.s + s) * hd
                          : (b * (size_t)r.s + s) * (size_t)r.h * hd + h * hd;
        for (size_t k = 0; k < half; k++) {
          double c = wm_tensor_get_f64(ct, cache_row * half + k);
          double sn = wm_tensor_get_f64(stt, cache_row * half + k);
          size_t i1 = r.interleaved ? 2 * k : k;
          size_t i2 = r.interleaved ? 2 * k + 1 : k + half;
          double x1 = wm_tensor_get_f64(x, base + i1);
          double x2 = wm_tensor_get_f64(x, base + i2);
          double re = wm_op_round_to(t, c * x1) - wm_op_round_to(t, sn * x2);
          double im = wm_op_round_to(t, sn * x1) + wm_op_round_to(t, c * x2);
          wm_tensor_set_f64(y, base + i1, re);
          wm_tensor_set_f64(y, base + i2, im);
        }
        for (size_t k = 2 * half; k < hd; k++) {
          wm_tensor_set_f64(y, base + k, wm_tensor_get_f64(x, base + k));
        }
      }
    }
  }
  return NULL;
}

// Four multiplies and two adds per rotated pair: three FLOPs per rotated
// element.
static void rope_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  rope_t r;
  wm_status_t s = rope_setup(ctx, &r);
  if (s) {
    wm_status_free(s);
    return;
  }
  if (r.b >= 0 && r.s >= 0 && r.h >= 0 && r.rd >= 0) {
    out->flops = 3.0 * (double)r.b * (double)r.s * (double)r.h * (double)r.rd;
  }
}

// ------------------------------------------------------ RMSNormalization

// Normalizes over dims [axis, rank); scale broadcasts to them.
static wm_status_t rms_setup(const wm_op_ctx_t *ctx, int32_t *out_axis) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  *out_axis = -1;
  int64_t axis, stash;
  WM_RETURN_IF_ERROR(attr_int(ctx, "axis", -1, &axis, NULL));
  WM_RETURN_IF_ERROR(attr_int(ctx, "stash_type", WM_DTYPE_FLOAT, &stash, NULL));
  if (stash < 0 || !wm_dtype_is_valid(stash) ||
      !wm_dtype_is_float((wm_dtype_t)stash)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute stash_type is %lld, want a float dtype",
                       (long long)stash);
  }
  WM_RETURN_IF_ERROR(check_float(ctx, 1));
  if (xs->rank < 0) {
    return NULL;
  }
  if (xs->rank == 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 is a scalar, want rank at least 1");
  }
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, axis, xs->rank, "axis", out_axis));
  wm_shape_t norm = wm_shape_make(xs->rank - *out_axis, xs->dims + *out_axis);
  const wm_shape_t *ps = wm_op_in_shape(ctx, 1);
  if (ps->rank < 0) {
    return NULL;
  }
  bool ok = ps->rank <= norm.rank;
  for (int32_t d = 0; ok && d < ps->rank; d++) {
    int64_t pd = ps->dims[d], nd = norm.dims[norm.rank - ps->rank + d];
    ok = pd < 0 || nd < 0 || pd == 1 || pd == nd;
  }
  if (!ok) {
    char a[160], b[160];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 1 (scale) has shape %s, which does not "
                       "broadcast to the normalized shape %s",
                       wm_shape_format(ps, a, sizeof(a)),
                       wm_shape_format(&norm, b, sizeof(b)));
  }
  return NULL;
}

static wm_status_t rms_infer(wm_op_ctx_t *ctx) {
  int32_t axis;
  WM_RETURN_IF_ERROR(rms_setup(ctx, &axis));
  wm_dtype_t dt = wm_op_in_dtype(ctx, 1);
  if (dt == WM_DTYPE_UNDEFINED) {
    dt = wm_op_in_dtype(ctx, 0);
  }
  wm_op_set_out(ctx, 0, dt, wm_op_in_shape(ctx, 0));
  return NULL;
}

static wm_status_t rms_run(wm_op_ctx_t *ctx) {
  int32_t axis;
  WM_RETURN_IF_ERROR(rms_setup(ctx, &axis));
  double eps;
  WM_RETURN_IF_ERROR(attr_float(ctx, "epsilon", 1e-5, &eps, NULL));
  const wm_tensor_t *xt = ctx->in[0], *wt = ctx->in[1];
  wm_shape_t norm = wm_shape_make(xt->shape.rank - axis, xt->shape.dims + axis);
  size_t inner = 1;
  for (int32_t d = 0; d < norm.rank; d++) {
    inner *= (size_t)norm.dims[d];
  }
  size_t outer = inner ? xt->count / inner : 0;
  double *w = NULL;
  WM_RETURN_IF_ERROR(alloc_f64(ctx, inner, &w));
  int64_t strides[WM_MAX_RANK];
  wm_broadcast_strides(&wt->shape, &norm, strides);
  for (size_t j = 0; j < inner; j++) {
    w[j] = wm_tensor_get_f64(wt, wm_broadcast_offset(&norm, strides, j));
  }
  wm_tensor_t *y = ctx->out[0];
  for (size_t o = 0; o < outer; o++) {
    size_t base = o * inner;
    double ss = 0;
    for (size_t j = 0; j < inner; j++) {
      double v = wm_tensor_get_f64(xt, base + j);
      ss += v * v;
    }
    double inv = 1.0 / sqrt(ss / (double)inner + eps);
    for (size_t j = 0; j < inner; j++) {
      wm_tensor_set_f64(y, base + j,
                        wm_tensor_get_f64(xt, base + j) * inv * w[j]);
    }
  }
  free(w);
  return NULL;
}

// Square, sum, multiply by the reciprocal and by the scale: four FLOPs
// per element; one sqrt per normalized row.
static void rms_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  size_t n;
  if (!wm_shape_numel(xs, &n) || xs->rank < 1) {
    return;
  }
  int64_t axis = wm_node_attr_int(ctx->node, "axis", -1);
  if (axis < -(int64_t)xs->rank || axis >= xs->rank) {
    return;
  }
  int32_t a = (int32_t)(axis < 0 ? axis + xs->rank : axis);
  double rows = 1;
  for (int32_t d = 0; d < a; d++) {
    rows *= (double)xs->dims[d];
  }
  out->flops = 4.0 * (double)n;
  out->transcendentals = rows;
}

// --------------------------------------------------------- FlexAttention

// Sizes of one FlexAttention node; -1 where unknown (static inference).
typedef struct flex {
  int64_t b;           // batch
  int64_t hq;          // query heads
  int64_t hkv;         // key/value heads
  int64_t l;           // query sequence length
  int64_t s;           // key/value sequence length
  int64_t e;           // query/key head size
  int64_t ev;          // value head size
  double scale;        // product scale; NAN until the head size is known
  wm_dtype_t t;        // dtype of Q, K and V (UNDEFINED when unknown)
  wm_dtype_t prec;     // dtype of the scores, probabilities and mod tensors
  bool has_score_mod;  // score_mod given
  bool has_prob_mod;   // prob_mod given
} flex_t;

// Checks the modifier graph attribute |name|: one rank-4 input and one
// output, whose declared dtypes (when given) are the softmax precision.
static wm_status_t flex_check_mod(const wm_op_ctx_t *ctx, const char *name,
                                  wm_dtype_t prec, bool *out_present) {
  const wm_attr_t *a = wm_node_attr(ctx->node, name);
  *out_present = a != NULL;
  if (!a) {
    return NULL;
  }
  if (a->type != WM_ATTR_GRAPH || !a->g) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute %s is %s, want a graph", name,
                       wm_attr_type_name(a->type));
  }
  const wm_graph_t *g = a->g;
  if (g->input_count != 1 || g->output_count != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute %s has %zu inputs and %zu outputs, want 1 "
                       "and 1",
                       name, g->input_count, g->output_count);
  }
  const int32_t ids[2] = {g->inputs[0], g->outputs[0]};
  for (int k = 0; k < 2; k++) {
    const wm_type_t *ty = &g->values[ids[k]].type;
    const char *what = k == 0 ? "input" : "output";
    if (ty->dtype != WM_DTYPE_UNDEFINED && ty->dtype != prec) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute %s %s has dtype %s, want %s (the softmax "
                         "precision)",
                         name, what, wm_dtype_name(ty->dtype),
                         wm_dtype_name(prec));
    }
    if (ty->kind == WM_TYPE_TENSOR && ty->shape.rank >= 0 &&
        ty->shape.rank != 4) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute %s %s has rank %d, want 4", name, what,
                         ty->shape.rank);
    }
  }
  return NULL;
}

// Checks the attributes and the shapes of Q, K and V and fills |f|;
// unknown parts stay -1.
static wm_status_t flex_setup(const wm_op_ctx_t *ctx, flex_t *f) {
  memset(f, 0, sizeof(*f));
  double scale;
  int64_t prec;
  bool scale_set, prec_set;
  WM_RETURN_IF_ERROR(attr_float(ctx, "scale", 0, &scale, &scale_set));
  WM_RETURN_IF_ERROR(attr_int(ctx, "softmax_precision", 0, &prec, &prec_set));
  // The reference splits the scale as sqrt(scale) onto Q and K, so a
  // negative one gives NaN there: refuse it rather than agree on NaN.
  if (scale_set && !(isfinite(scale) && scale >= 0)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute scale is %g, want a finite value of at "
                       "least 0",
                       scale);
  }
  for (int32_t i = 0; i < 3; i++) {
    WM_RETURN_IF_ERROR(check_float(ctx, i));
  }
  WM_RETURN_IF_ERROR(wm_op_check_dtype_as(ctx, 1, 0));
  WM_RETURN_IF_ERROR(wm_op_check_dtype_as(ctx, 2, 0));
  f->t = wm_op_in_dtype(ctx, 0);
  for (int32_t i = 1; f->t == WM_DTYPE_UNDEFINED && i < 3; i++) {
    f->t = wm_op_in_dtype(ctx, i);
  }
  if (prec_set) {
    if (prec != WM_DTYPE_FLOAT && prec != WM_DTYPE_FLOAT16 &&
        prec != WM_DTYPE_DOUBLE && prec != WM_DTYPE_BFLOAT16) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute softmax_precision is %lld, want 1, 10, 11 "
                         "or 16",
                         (long long)prec);
    }
    f->prec = (wm_dtype_t)prec;
  } else if (f->t != WM_DTYPE_UNDEFINED) {
    f->prec = f->t == WM_DTYPE_DOUBLE ? WM_DTYPE_DOUBLE : WM_DTYPE_FLOAT;
  }
  if (f->prec != WM_DTYPE_UNDEFINED) {
    WM_RETURN_IF_ERROR(
        flex_check_mod(ctx, "score_mod", f->prec, &f->has_score_mod));
    WM_RETURN_IF_ERROR(
        flex_check_mod(ctx, "prob_mod", f->prec, &f->has_prob_mod));
  } else {
    f->has_score_mod = wm_node_attr(ctx->node, "score_mod") != NULL;
    f->has_prob_mod = wm_node_attr(ctx->node, "prob_mod") != NULL;
  }

  for (int32_t i = 0; i < 3; i++) {
    int32_t r = wm_op_in_shape(ctx, i)->rank;
    if (r >= 0 && r != 4) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input %d has rank %d, want 4",
                         i, r);
    }
  }
  f->b = f->hkv = f->s = f->e = -1;
  for (int32_t i = 0; i < 3; i++) {
    WM_RETURN_IF_ERROR(merge_dim(ctx, &f->b, in_dim(ctx, i, 0), "batch size"));
  }
  f->hq = in_dim(ctx, 0, 1);
  f->l = in_dim(ctx, 0, 2);
  f->ev = in_dim(ctx, 2, 3);
  for (int32_t i = 1; i < 3; i++) {
    WM_RETURN_IF_ERROR(
        merge_dim(ctx, &f->hkv, in_dim(ctx, i, 1), "kv head count"));
    WM_RETURN_IF_ERROR(
        merge_dim(ctx, &f->s, in_dim(ctx, i, 2), "kv sequence length"));
  }
  for (int32_t i = 0; i < 2; i++) {
    WM_RETURN_IF_ERROR(
        merge_dim(ctx, &f->e, in_dim(ctx, i, 3), "query/key head size"));
  }
  if (f->hq >= 0 && f->hkv >= 0 && f->hq != f->hkv &&
      (f->hkv == 0 || f->hq % f->hkv != 0)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "query head count %lld is not a multiple of kv head "
                       "count %lld",
                       (long long)f->hq, (long long)f->hkv);
  }
  f->scale = scale;
  if (!scale_set) {
    f->scale = f->e >= 0 ? 1.0 / sqrt((double)f->e) : NAN;
  }
  return NULL;
}

static wm_status_t flex_infer(wm_op_ctx_t *ctx) {
  flex_t f;
  WM_RETURN_IF_ERROR(flex_setup(ctx, &f));
  bool known = false;
  for (int32_t i = 0; i < 3; i++) {
    known = known || wm_op_in_shape(ctx, i)->rank >= 0;
  }
  if (!known) {
    wm_op_set_out_unknown(ctx, 0, f.t);
    return NULL;
  }
  int64_t d[4] = {f.b, f.hq, f.l, f.ev};
  wm_shape_t s = wm_shape_make(4, d);
  return wm_op_set_out_checked(ctx, 0, f.t, &s);
}

// Runs modifier |attr| on *io through |run_graph|, replacing *io with its
// result, which must have the dtype and shape it was given.
static wm_status_t flex_apply_mod(const wm_op_ctx_t *ctx, const char *attr,
                                  wm_op_subgraph_fn run_graph, void *env,
                                  wm_tensor_t **io) {
  if (!run_graph) {
    return WM_OP_ERROR(ctx, FAILED_PRECONDITION,
                       "attribute %s is a subgraph, and nothing was given to "
                       "run it",
                       attr);
  }
  wm_tensor_t *res = NULL;
  wm_status_t s = run_graph(env, attr, *io, &res);
  if (s) {
    wm_tensor_destroy(res);
    return wm_status_annotate(s, "node \"%s\" (%s), subgraph %s", ctx->label,
                              ctx->node->op_type, attr);
  }
  if (!res) {
    return WM_OP_ERROR(ctx, INTERNAL, "subgraph %s gave no output", attr);
  }
  if (res->dtype != (*io)->dtype ||
      !wm_shape_equal(&res->shape, &(*io)->shape)) {
    char got[160], want[160];
    wm_type_t tg = wm_type_tensor(res->dtype, &res->shape);
    wm_type_t tw = wm_type_tensor((*io)->dtype, &(*io)->shape);
    wm_tensor_destroy(res);
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "subgraph %s gave %s, want %s like its input", attr,
                       wm_type_format(&tg, got, sizeof(got)),
                       wm_type_format(&tw, want, sizeof(want)));
  }
  wm_tensor_destroy(*io);
  *io = res;
  return NULL;
}

// Softmax of one row like the reference: max, exp of the difference,
// normalize. A row whose maximum is -inf gives NaN there (-inf - -inf),
// so it does here, unlike Attention's zeros.
static void flex_softmax(wm_dtype_t p, const double *x, size_t n, double *out) {
  double mx = -INFINITY;
  for (size_t j = 0; j < n && !isnan(mx); j++) {
    mx = isnan(x[j]) || x[j] > mx ? x[j] : mx;
  }
  if (n > 0 && isinf(mx) && mx < 0) {
    for (size_t j = 0; j < n; j++) {
      out[j] = NAN;
    }
    return;
  }
  attn_softmax(p, x, n, out);
}

wm_status_t wm_op_flex_attention_run(wm_op_ctx_t *ctx,
                                     wm_op_subgraph_fn run_graph, void *env) {
  flex_t f;
  WM_RETURN_IF_ERROR(flex_setup(ctx, &f));
  if (!wm_op_has_output(ctx, 0)) {
    return NULL;  // Y is its only output, and the mods have no effects
  }
  if (!ctx->out[0]) {
    return WM_OP_ERROR(ctx, INTERNAL, "output 0 was not allocated");
  }
  const wm_tensor_t *qt = ctx->in[0], *kt = ctx->in[1], *vt = ctx->in[2];
  wm_dtype_t t = f.t, p = f.prec;
  size_t l = (size_t)f.l, st = (size_t)f.s, e = (size_t)f.e, ev = (size_t)f.ev;
  size_t reps = f.hkv > 0 ? (size_t)(f.hq / f.hkv) : 1;
  int64_t sd[4] = {f.b, f.hq, f.l, f.s};
  wm_shape_t ss = wm_shape_make(4, sd);
  wm_tensor_t *sc = NULL;
  double *kc = NULL, *vc = NULL, *qs = NULL, *row = NULL;
  wm_status_t s = wm_tensor_create(p, &ss, &sc);
  if (s) {
    return wm_status_annotate(s, "node \"%s\" (%s): scores", ctx->label,
                              ctx->node->op_type);
  }
  s = alloc_f64(ctx, kt->count, &kc);
  if (!s) {
    s = alloc_f64(ctx, vt->count, &vc);
  }
  if (!s) {
    s = alloc_f64(ctx, e, &qs);
  }
  if (!s) {
    s = alloc_f64(ctx, 2 * st, &row);
  }
  if (s) {
    goto done;
  }
  // sqrt(scale) is taken in float32 and rounded to the inputs' dtype,
  // then scales Q and K each, as the reference does.
  double half = wm_op_round_to(t, (double)sqrtf((float)f.scale));
  for (size_t i = 0; i < kt->count; i++) {
    kc[i] = wm_op_round_to(t, wm_tensor_get_f64(kt, i) * half);
  }
  for (size_t i = 0; i < vt->count; i++) {
    vc[i] = wm_op_round_to(p, wm_tensor_get_f64(vt, i));
  }
  // Scores: the product in the inputs' dtype, then cast to precision p.
  size_t n = 0;
  for (size_t b = 0; b < (size_t)f.b; b++) {
    for (size_t h = 0; h < (size_t)f.hq; h++) {
      const double *kh = kc + (b * (size_t)f.hkv + h / reps) * st * e;
      for (size_t i = 0; i < l; i++) {
        size_t qo = ((b * (size_t)f.hq + h) * l + i) * e;
        for (size_t d = 0; d < e; d++) {
          qs[d] = wm_op_round_to(t, wm_tensor_get_f64(qt, qo + d) * half);
        }
        for (size_t j = 0; j < st; j++, n++) {
          double acc = 0;
          for (size_t d = 0; d < e; d++) {
            acc += qs[d] * kh[j * e + d];
          }
          wm_tensor_set_f64(sc, n, wm_op_round_to(p, wm_op_round_to(t, acc)));
        }
      }
    }
  }
  if (f.has_score_mod) {
    s = flex_apply_mod(ctx, "score_mod", run_graph, env, &sc);
    if (s) {
      goto done;
    }
  }
  size_t rows = st ? sc->count / st : 0;
  for (size_t r = 0; r < rows; r++) {
    for (size_t j = 0; j < st; j++) {
      row[j] = wm_tensor_get_f64(sc, r * st + j);
    }
    flex_softmax(p, row, st, row + st);
    for (size_t j = 0; j < st; j++) {
      wm_tensor_set_f64(sc, r * st + j, row[st + j]);
    }
  }
  if (f.has_prob_mod) {
    s = flex_apply_mod(ctx, "prob_mod", run_graph, env, &sc);
    if (s) {
      goto done;
    }
  }
  // Y = probabilities x V in precision p, cast to V's dtype.
  wm_tensor_t *yt = ctx->out[0];
  for (size_t r = 0; r < rows; r++) {
    size_t h = (r / l) % (size_t)f.hq, b = r / (l * (size_t)f.hq);
    const double *vh = vc + (b * (size_t)f.hkv + h / reps) * st * ev;
    for (size_t j = 0; j < st; j++) {
      row[j] = wm_tensor_get_f64(sc, r * st + j);
    }
    for (size_t d = 0; d < ev; d++) {
      double acc = 0;
      for (size_t j = 0; j < st; j++) {
        acc += row[j] * vh[j * ev + d];
      }
      wm_tensor_set_f64(yt, r * ev + d, wm_op_round_to(p, acc));
    }
  }
done:
  wm_tensor_destroy(sc);
  free(kc);
  free(vc);
  free(qs);
  free(row);
  return s;
}

// MACs B*Hq*L*S*(E + Ev) for the two products; four FLOPs per score for
// the softmax (max, subtract, sum, divide) and one exp. The modifier
// subgraphs' own work is not counted here.
static void flex_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  flex_t f;
  wm_status_t s = flex_setup(ctx, &f);
  if (s) {
    wm_status_free(s);
    return;
  }
  scores_cost(f.b, f.hq, f.l, f.s, f.e, f.ev, 4, out);
}

// ----------------------------------------------------------------- table

#define T_ROPE (WM_T(FLOAT) | WM_T(FLOAT16) | WM_T(BFLOAT16))

const wm_op_def_t wm_ops_attention[] = {
    {"Attention", "", 23, 3, 6, 1, 4, WM_TYPES_FLOAT, attn_infer, attn_run,
     attn_cost, 0, attn_resolve},
    {"Attention", "", 24, 3, 7, 1, 4, WM_TYPES_FLOAT, attn_infer, attn_run,
     attn_cost, 0, attn_resolve},
    // The attention pass's node: opset 23's operator at any opset.
    {"Attention", "wmap", 1, 3, 6, 1, 4, WM_TYPES_FLOAT, attn_infer, attn_run,
     attn_cost, 0, attn_resolve},
    {"RotaryEmbedding", "", 23, 3, 4, 1, 1, T_ROPE, rope_infer, rope_run,
     rope_cost},
    {"RMSNormalization", "", 23, 2, 2, 1, 1, WM_TYPES_FLOAT, rms_infer, rms_run,
     rms_cost},
    {"FlexAttention", "ai.onnx.preview", 1, 3, 3, 1, 1, WM_TYPES_FLOAT,
     flex_infer, wm_op_run_in_session, flex_cost},
    WM_OPS_END,
};
