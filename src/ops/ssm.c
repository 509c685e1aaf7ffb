// State-space and linear-recurrence operators: LinearAttention (linear,
// gated, delta and gated-delta rules with grouped heads) and
// CausalConvWithState (depthwise causal 1-D convolution carrying its last
// k-1 inputs). Both scan the sequence once, so their work is linear in its
// length. Kernels compute in double and round to the tensor's dtype where
// the ONNX reference does (once per output element, and for the
// convolution also before the bias and the activation).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

// The dtypes both operators accept (no double in the spec).
#define T_SSM (WM_T(FLOAT) | WM_T(FLOAT16) | WM_T(BFLOAT16))

// ---------------------------------------------------------- small helpers

// Requires input |i|, when present with a known shape, to have |rank|.
static wm_status_t check_rank(const wm_op_ctx_t *ctx, int32_t i,
                              const char *what, int32_t rank) {
  int32_t r = wm_op_in_shape(ctx, i)->rank;
  if (wm_op_has_input(ctx, i) && r >= 0 && r != rank) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (%s) has rank %d, want %d", i, what, r, rank);
  }
  return NULL;
}

// Dim |d| of input |i| or -1 when unknown or omitted.
static int64_t in_dim(const wm_op_ctx_t *ctx, int32_t i, int32_t d) {
  if (!wm_op_has_input(ctx, i)) {
    return -1;
  }
  const wm_shape_t *s = wm_op_in_shape(ctx, i);
  return s->rank > d ? s->dims[d] : -1;
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

// ------------------------------------------------------- LinearAttention

enum {
  LA_Q = 0,
  LA_K = 1,
  LA_V = 2,
  LA_PAST = 3,
  LA_DECAY = 4,
  LA_BETA = 5,
};

// The update rules by the two features they combine.
static const struct {
  const char *name;  // spelling of the attribute value
  bool gated;        // state decays by exp(decay) before the write
  bool delta;        // the write corrects what the state already holds
} la_rules[] = {
    {"linear", false, false},
    {"gated", true, false},
    {"delta", false, true},
    {"gated_delta", true, true},
};
enum { LA_RULE_COUNT = sizeof(la_rules) / sizeof(la_rules[0]) };

// Sizes of one LinearAttention node; -1 where unknown.
typedef struct la {
  int64_t b;            // batch
  int64_t t;            // sequence length
  int64_t hq;           // query heads
  int64_t hkv;          // key/value heads (each owns a state)
  int64_t dk;           // query/key head size
  int64_t dv;           // value head size
  int64_t decay_last;   // last dim of decay: hkv or hkv*dk (-1 without)
  int64_t beta_last;    // last dim of beta: hkv or 1 (-1 without)
  bool gated;           // decay applies
  bool delta;           // beta applies
  bool has_past;        // past_state given
  double scale;         // of the read; 0 = 1/sqrt(dk)
  wm_dtype_t state_dt;  // dtype of present_state (UNDEFINED if unknown)
} la_t;

static wm_status_t la_attrs(const wm_op_ctx_t *ctx, la_t *a) {
  const char *heads[2] = {"q_num_heads", "kv_num_heads"};
  int64_t v[2];
  for (int i = 0; i < 2; i++) {
    if (!wm_node_attr(ctx->node, heads[i])) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "attribute %s is required",
                         heads[i]);
    }
    WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, heads[i], 0, &v[i]));
    if (v[i] <= 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute %s is %lld, want at least 1", heads[i],
                         (long long)v[i]);
    }
  }
  if (v[0] % v[1] != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "q_num_heads %lld is not a multiple of kv_num_heads "
                       "%lld",
                       (long long)v[0], (long long)v[1]);
  }
  a->hq = v[0];
  a->hkv = v[1];
  const char *rule;
  WM_RETURN_IF_ERROR(
      wm_op_attr_string(ctx, "update_rule", "gated_delta", &rule));
  int r = 0;
  while (r < LA_RULE_COUNT && strcmp(rule, la_rules[r].name) != 0) {
    r++;
  }
  if (r == LA_RULE_COUNT) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute update_rule is \"%s\", want \"linear\", "
                       "\"gated\", \"delta\" or \"gated_delta\"",
                       rule);
  }
  a->gated = la_rules[r].gated;
  a->delta = la_rules[r].delta;
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "scale", 0, &a->scale));
  if (!isfinite(a->scale)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute scale is %g, want a finite value", a->scale);
  }
  return NULL;
}

// Splits the packed last dim of input |i| into |heads| heads; the head
// size goes to *acc (merged with what other inputs said).
static wm_status_t la_head_size(const wm_op_ctx_t *ctx, int32_t i,
                                const char *what, int64_t heads,
                                const char *attr, int64_t *acc,
                                const char *size_what) {
  int64_t hidden = in_dim(ctx, i, 2);
  if (hidden < 0) {
    return NULL;
  }
  if (hidden % heads != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (%s) last dim %lld is not a multiple of %s "
                       "%lld",
                       i, what, (long long)hidden, attr, (long long)heads);
  }
  return merge_dim(ctx, acc, hidden / heads, size_what);
}

// Checks every input against the attributes and fills |a|.
static wm_status_t la_setup(const wm_op_ctx_t *ctx, la_t *a) {
  memset(a, 0, sizeof(*a));
  WM_RETURN_IF_ERROR(la_attrs(ctx, a));
  static const char *const names[6] = {"query",      "key",   "value",
                                       "past_state", "decay", "beta"};
  bool has_decay = wm_op_has_input(ctx, LA_DECAY);
  bool has_beta = wm_op_has_input(ctx, LA_BETA);
  const char *rule =
      wm_node_attr_string(ctx->node, "update_rule", "gated_delta");
  if (a->gated != has_decay) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "update_rule \"%s\" %s input 4 (decay)", rule,
                       a->gated ? "requires" : "forbids");
  }
  if (a->delta != has_beta) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "update_rule \"%s\" %s input 5 (beta)", rule,
                       a->delta ? "requires" : "forbids");
  }
  a->has_past = wm_op_has_input(ctx, LA_PAST);
  for (int32_t i = LA_K; i <= LA_BETA; i++) {
    if (i != LA_PAST) {
      WM_RETURN_IF_ERROR(wm_op_check_dtype_as(ctx, i, 0));
    }
    WM_RETURN_IF_ERROR(check_rank(ctx, i, names[i], i == LA_PAST ? 4 : 3));
  }
  WM_RETURN_IF_ERROR(check_rank(ctx, LA_Q, names[LA_Q], 3));
  a->state_dt = wm_op_in_dtype(ctx, a->has_past ? LA_PAST : LA_Q);
  if (a->state_dt != WM_DTYPE_UNDEFINED && a->state_dt != WM_DTYPE_FLOAT &&
      a->state_dt != WM_DTYPE_FLOAT16 && a->state_dt != WM_DTYPE_BFLOAT16) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 3 (past_state) has dtype %s, want float, "
                       "float16 or bfloat16",
                       wm_dtype_name(a->state_dt));
  }

  a->b = a->t = a->dk = a->dv = -1;
  for (int32_t i = 0; i < 6; i++) {
    WM_RETURN_IF_ERROR(merge_dim(ctx, &a->b, in_dim(ctx, i, 0), "batch size"));
    if (i != LA_PAST) {
      WM_RETURN_IF_ERROR(
          merge_dim(ctx, &a->t, in_dim(ctx, i, 1), "sequence length"));
    }
  }
  WM_RETURN_IF_ERROR(la_head_size(ctx, LA_Q, "query", a->hq, "q_num_heads",
                                  &a->dk, "key head size"));
  WM_RETURN_IF_ERROR(la_head_size(ctx, LA_K, "key", a->hkv, "kv_num_heads",
                                  &a->dk, "key head size"));
  WM_RETURN_IF_ERROR(la_head_size(ctx, LA_V, "value", a->hkv, "kv_num_heads",
                                  &a->dv, "value head size"));
  if (a->has_past) {
    int64_t h = in_dim(ctx, LA_PAST, 1);
    if (h >= 0 && h != a->hkv) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 3 (past_state) has %lld heads, want "
                         "kv_num_heads %lld",
                         (long long)h, (long long)a->hkv);
    }
    WM_RETURN_IF_ERROR(
        merge_dim(ctx, &a->dk, in_dim(ctx, LA_PAST, 2), "key head size"));
    WM_RETURN_IF_ERROR(
        merge_dim(ctx, &a->dv, in_dim(ctx, LA_PAST, 3), "value head size"));
  }
  a->decay_last = in_dim(ctx, LA_DECAY, 2);
  // With dk unknown a last dim other than hkv is taken as per key dim;
  // execution knows dk and checks it.
  int64_t per_key = -1;  // stays -1 when the product overflows
  if (a->dk >= 0 && !wm_checked_mul_i64(a->hkv, a->dk, &per_key)) {
    per_key = -1;
  }
  if (a->decay_last >= 0 && a->decay_last != a->hkv && a->dk >= 0 &&
      a->decay_last != per_key) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 4 (decay) last dim is %lld, want kv_num_heads "
                       "%lld or kv_num_heads*d_k %lld*%lld",
                       (long long)a->decay_last, (long long)a->hkv,
                       (long long)a->hkv, (long long)a->dk);
  }
  a->beta_last = in_dim(ctx, LA_BETA, 2);
  if (a->beta_last >= 0 && a->beta_last != a->hkv && a->beta_last != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 5 (beta) last dim is %lld, want kv_num_heads "
                       "%lld or 1",
                       (long long)a->beta_last, (long long)a->hkv);
  }
  return NULL;
}

static wm_status_t la_infer(wm_op_ctx_t *ctx) {
  la_t a;
  WM_RETURN_IF_ERROR(la_setup(ctx, &a));
  int64_t width = -1;
  if (a.dv >= 0 && !wm_checked_mul_i64(a.hq, a.dv, &width)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "output width q_num_heads %lld * value head size %lld "
                       "overflows",
                       (long long)a.hq, (long long)a.dv);
  }
  int64_t yd[3] = {a.b, a.t, width}, sd[4] = {a.b, a.hkv, a.dk, a.dv};
  wm_shape_t ys = wm_shape_make(3, yd), ss = wm_shape_make(4, sd);
  WM_RETURN_IF_ERROR(
      wm_op_set_out_checked(ctx, 0, wm_op_in_dtype(ctx, LA_Q), &ys));
  return wm_op_set_out_checked(ctx, 1, a.state_dt, &ss);
}

// Offset of element |i| of head |h| at (|b|, |t|) in a packed
// [B, T, heads*size] tensor.
static size_t la_packed(const la_t *a, size_t heads, size_t size, size_t b,
                        size_t t, size_t h, size_t i) {
  return ((b * (size_t)a->t + t) * heads + h) * size + i;
}

static wm_status_t la_run(wm_op_ctx_t *ctx) {
  la_t a;
  WM_RETURN_IF_ERROR(la_setup(ctx, &a));
  const wm_tensor_t *qt = ctx->in[LA_Q], *kt = ctx->in[LA_K],
                    *vt = ctx->in[LA_V];
  const wm_tensor_t *pt = a.has_past ? ctx->in[LA_PAST] : NULL;
  const wm_tensor_t *gt = a.gated ? ctx->in[LA_DECAY] : NULL;
  const wm_tensor_t *bt = a.delta ? ctx->in[LA_BETA] : NULL;
  size_t hkv = (size_t)a.hkv, dk = (size_t)a.dk, dv = (size_t)a.dv;
  size_t group = (size_t)(a.hq / a.hkv);
  // la_setup checked a per-key decay against dk, known here.
  bool decay_per_key = gt && a.decay_last != a.hkv;
  // present_state's shape, which the shape rule checked, bounds the state.
  size_t state_n, scratch_n;
  if (!wm_shape_numel(&ctx->out_types[1].shape, &state_n) ||
      !wm_checked_add(state_n, 2 * dk + dv, &scratch_n)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "state has too many elements");
  }
  wm_tensor_t *yt = ctx->out[0];
  if (state_n == 0) {
    // No key or value dims: every read is an empty sum. Returning early
    // also keeps huge head counts over empty heads from looping.
    for (size_t i = 0; yt && i < yt->count; i++) {
      wm_tensor_set_f64(yt, i, 0.0);
    }
    return NULL;
  }
  double *state = wm_calloc(scratch_n, sizeof(double));
  if (!state) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for a state of %zu elements", state_n);
  }
  double *kv = state + state_n;  // key of the step
  double *qv = kv + dk;          // query of one head
  double *uv = qv + dk;          // value written (after the delta rule)
  for (size_t i = 0; pt && i < state_n; i++) {
    state[i] = wm_tensor_get_f64(pt, i);
  }
  double scale = a.scale != 0 ? a.scale : 1.0 / sqrt((double)dk);
  wm_dtype_t ydt = qt->dtype;
  for (size_t b = 0; b < (size_t)a.b; b++) {
    for (size_t t = 0; t < (size_t)a.t; t++) {
      for (size_t g = 0; g < hkv; g++) {
        double *s = state + (b * hkv + g) * dk * dv;
        for (size_t i = 0; i < dk; i++) {
          kv[i] = wm_tensor_get_f64(kt, la_packed(&a, hkv, dk, b, t, g, i));
        }
        if (gt) {
          for (size_t i = 0; i < dk; i++) {
            size_t off = decay_per_key ? la_packed(&a, hkv, dk, b, t, g, i)
                                       : la_packed(&a, hkv, 1, b, t, g, 0);
            double f = exp(wm_tensor_get_f64(gt, off));
            for (size_t m = 0; m < dv; m++) {
              s[i * dv + m] *= f;
            }
          }
        }
        for (size_t m = 0; m < dv; m++) {
          uv[m] = wm_tensor_get_f64(vt, la_packed(&a, hkv, dv, b, t, g, m));
        }
        if (bt) {
          size_t bh = a.beta_last == 1 ? 0 : g;
          double beta = wm_tensor_get_f64(
              bt, la_packed(&a, (size_t)a.beta_last, 1, b, t, bh, 0));
          for (size_t m = 0; m < dv; m++) {
            double held = 0;
            for (size_t i = 0; i < dk; i++) {
              held += s[i * dv + m] * kv[i];
            }
            uv[m] = beta * (uv[m] - held);
          }
        }
        for (size_t i = 0; i < dk; i++) {
          for (size_t m = 0; m < dv; m++) {
            s[i * dv + m] += kv[i] * uv[m];
          }
        }
        // Query heads g*group .. (g+1)*group-1 share this state.
        for (size_t h = g * group; yt && h < (g + 1) * group; h++) {
          for (size_t i = 0; i < dk; i++) {
            qv[i] = wm_tensor_get_f64(
                qt, la_packed(&a, (size_t)a.hq, dk, b, t, h, i));
          }
          for (size_t m = 0; m < dv; m++) {
            double acc = 0;
            for (size_t i = 0; i < dk; i++) {
              acc += qv[i] * s[i * dv + m];
            }
            wm_tensor_set_f64(yt, la_packed(&a, (size_t)a.hq, dv, b, t, h, m),
                              wm_op_round_to(ydt, scale * acc));
          }
        }
      }
    }
  }
  if (ctx->out[1]) {
    for (size_t i = 0; i < state_n; i++) {
      wm_tensor_set_f64(ctx->out[1], i, state[i]);
    }
  }
  free(state);
  return NULL;
}

// Per step and key/value head: the write is dk*dv MACs, the delta rule's
// read of the state another dk*dv, and each query head's read dk*dv. The
// decay multiplies dk*dv state entries after one exp per decay value; the
// delta rule subtracts and scales dv values; the read scales dv per query
// head.
static void la_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  la_t a;
  wm_status_t s = la_setup(ctx, &a);
  if (s) {
    wm_status_free(s);
    return;
  }
  if (a.b < 0 || a.t < 0 || a.dk < 0 || a.dv < 0) {
    return;
  }
  double steps = (double)a.b * (double)a.t;
  double hq = (double)a.hq, hkv = (double)a.hkv;
  double kd = (double)a.dk * (double)a.dv, dv = (double)a.dv;
  out->macs = steps * (hkv * kd * (a.delta ? 2 : 1) + hq * kd);
  out->flops = 2 * out->macs + steps * (hq * dv + (a.gated ? hkv * kd : 0) +
                                        (a.delta ? 2 * hkv * dv : 0));
  if (a.gated) {
    double per = a.decay_last == a.hkv ? 1 : (double)a.dk;
    out->transcendentals = steps * hkv * per;
  }
}

// --------------------------------------------------- CausalConvWithState

enum {
  CC_X = 0,
  CC_W = 1,
  CC_BIAS = 2,
  CC_PAST = 3,
};

// Sizes of one CausalConvWithState node; -1 where unknown.
typedef struct cc {
  int64_t b;      // batch
  int64_t c;      // channels
  int64_t l;      // input length
  int64_t carry;  // k - 1: positions carried between calls
  bool silu;      // fused x * sigmoid(x)
} cc_t;

static wm_status_t cc_setup(const wm_op_ctx_t *ctx, cc_t *c) {
  memset(c, 0, sizeof(*c));
  static const char *const acts[] = {"none", "silu", "swish", NULL};
  int act;
  WM_RETURN_IF_ERROR(wm_op_attr_choice(ctx, "activation", "none", acts, &act));
  c->silu = act != 0;  // swish is another name for silu here
  static const char *const names[4] = {"input", "weight", "bias", "past_state"};
  static const int32_t ranks[4] = {3, 3, 1, 3};
  for (int32_t i = 0; i < 4; i++) {
    if (i > 0) {
      WM_RETURN_IF_ERROR(wm_op_check_dtype_as(ctx, i, 0));
    }
    WM_RETURN_IF_ERROR(check_rank(ctx, i, names[i], ranks[i]));
  }
  c->b = in_dim(ctx, CC_X, 0);
  c->c = in_dim(ctx, CC_X, 1);
  c->l = in_dim(ctx, CC_X, 2);
  WM_RETURN_IF_ERROR(merge_dim(ctx, &c->c, in_dim(ctx, CC_W, 0), "channels"));
  int64_t mid = in_dim(ctx, CC_W, 1);
  if (mid >= 0 && mid != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 1 (weight) dim 1 is %lld, want 1 (depthwise)",
                       (long long)mid);
  }
  int64_t k = in_dim(ctx, CC_W, 2);
  if (k == 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 1 (weight) has kernel size 0, want at least 1");
  }
  c->carry = k > 0 ? k - 1 : -1;
  WM_RETURN_IF_ERROR(
      merge_dim(ctx, &c->c, in_dim(ctx, CC_BIAS, 0), "channels"));
  WM_RETURN_IF_ERROR(
      merge_dim(ctx, &c->b, in_dim(ctx, CC_PAST, 0), "batch size"));
  WM_RETURN_IF_ERROR(
      merge_dim(ctx, &c->c, in_dim(ctx, CC_PAST, 1), "channels"));
  return merge_dim(ctx, &c->carry, in_dim(ctx, CC_PAST, 2),
                   "carried length (kernel size - 1)");
}

static wm_status_t cc_infer(wm_op_ctx_t *ctx) {
  cc_t c;
  WM_RETURN_IF_ERROR(cc_setup(ctx, &c));
  wm_dtype_t dt = wm_op_in_dtype(ctx, CC_X);
  int64_t yd[3] = {c.b, c.c, c.l}, sd[3] = {c.b, c.c, c.carry};
  wm_shape_t ys = wm_shape_make(3, yd), ss = wm_shape_make(3, sd);
  WM_RETURN_IF_ERROR(wm_op_set_out_checked(ctx, 0, dt, &ys));
  return wm_op_set_out_checked(ctx, 1, dt, &ss);
}

// Position |j| of the padded row (past_state or zeros, then the input)
// of batch entry |b|, channel |ch|.
static double cc_padded(const wm_op_ctx_t *ctx, const cc_t *c, size_t b,
                        size_t ch, size_t j) {
  size_t carry = (size_t)c->carry, row = b * (size_t)c->c + ch;
  if (j < carry) {
    return wm_op_has_input(ctx, CC_PAST)
               ? wm_tensor_get_f64(ctx->in[CC_PAST], row * carry + j)
               : 0.0;
  }
  return wm_tensor_get_f64(ctx->in[CC_X], row * (size_t)c->l + (j - carry));
}

static wm_status_t cc_run(wm_op_ctx_t *ctx) {
  cc_t c;
  WM_RETURN_IF_ERROR(cc_setup(ctx, &c));
  const wm_tensor_t *wt = ctx->in[CC_W];
  const wm_tensor_t *bias =
      wm_op_has_input(ctx, CC_BIAS) ? ctx->in[CC_BIAS] : NULL;
  wm_tensor_t *yt = ctx->out[0], *st = ctx->out[1];
  wm_dtype_t dt = ctx->in[CC_X]->dtype;
  size_t carry = (size_t)c.carry, k = carry + 1, l = (size_t)c.l;
  if ((yt ? l : 0) + (st ? carry : 0) == 0) {
    return NULL;  // nothing to write: do not walk a huge empty batch
  }
  for (size_t b = 0; b < (size_t)c.b; b++) {
    for (size_t ch = 0; ch < (size_t)c.c; ch++) {
      size_t row = b * (size_t)c.c + ch;
      for (size_t p = 0; yt && p < l; p++) {
        double acc = 0;
        for (size_t j = 0; j < k; j++) {
          acc += wm_tensor_get_f64(wt, ch * k + j) *
                 cc_padded(ctx, &c, b, ch, p + j);
        }
        double y = wm_op_round_to(dt, acc);
        if (bias) {
          y = wm_op_round_to(dt, y + wm_tensor_get_f64(bias, ch));
        }
        if (c.silu) {
          y = y / (1.0 + exp(-y));
        }
        wm_tensor_set_f64(yt, row * l + p, y);
      }
      for (size_t j = 0; st && j < carry; j++) {
        wm_tensor_set_f64(st, row * carry + j,
                          cc_padded(ctx, &c, b, ch, l + j));
      }
    }
  }
  return NULL;
}

// k MACs per output element; the bias adds one FLOP per element and the
// fused SiLU three (add, divide, multiply) and one exp.
static void cc_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  cc_t c;
  wm_status_t s = cc_setup(ctx, &c);
  if (s) {
    wm_status_free(s);
    return;
  }
  if (c.b < 0 || c.c < 0 || c.l < 0 || c.carry < 0) {
    return;
  }
  double n = (double)c.b * (double)c.c * (double)c.l;
  out->macs = n * (double)(c.carry + 1);
  out->flops = 2 * out->macs + (wm_op_has_input(ctx, CC_BIAS) ? n : 0) +
               (c.silu ? 3 * n : 0);
  out->transcendentals = c.silu ? n : 0;
}

// ----------------------------------------------------------------- table

const wm_op_def_t wm_ops_ssm[] = {
    {"LinearAttention", "", 27, 3, 6, 2, 2, T_SSM, la_infer, la_run, la_cost},
    {"CausalConvWithState", "", 27, 2, 4, 2, 2, T_SSM, cc_infer, cc_run,
     cc_cost},
    WM_OPS_END,
};
