// Transformer models of the zoo: BERT-base (post-LN encoder with pooler,
// as in the original release) and GPT-2 small (pre-LN decoder with a
// causal mask and an LM head tied to the token embedding). Projections are
// MatMul by [in, out] weights plus Add; names follow the Hugging Face
// checkpoints ("encoder.layer.0.attention.self.query", "h.0.attn.c_attn").
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zoo/build.h"

enum { kHidden = 768, kHeads = 12, kHeadDim = 64, kFfn = 3072 };

// Reshape by a shared int64 shape constant |shape| of |rank| dims.
static const char *reshape(wm_zoo_builder_t *b, const char *name, const char *x,
                           const char *shape, int32_t rank,
                           const int64_t *dims) {
  wm_zoo_ints(b, shape, (size_t)rank, dims);
  return wm_zoo_binary(b, "Reshape", name, x, shape);
}

// Adds a rank-0 int64 constant (a Gather index).
static void int_scalar(wm_zoo_builder_t *b, const char *name, int64_t v) {
  if (b->err) {
    return;
  }
  wm_shape_t scalar = wm_shape_make(0, NULL);
  wm_tensor_t *t = NULL;
  wm_zoo_fail(b, wm_tensor_create(WM_DTYPE_INT64, &scalar, &t));
  if (t) {
    *(int64_t *)t->data = v;
    wm_zoo_fail(b, wm_graph_add_initializer(b->g, name, t, NULL));
  }
}

// Splits |x| [B,S,H*D] into heads [B,H,S,D], or [B,H,D,S] when |keys|.
static const char *heads(wm_zoo_builder_t *b, const char *name, const char *x,
                         int64_t batch, int64_t seq, bool keys) {
  int64_t dims[] = {batch, seq, kHeads, kHeadDim};
  const char *r = reshape(b, wm_zoo_name(b, "%s.split_heads", name), x,
                          "shape.heads", 4, dims);
  static const int64_t qv[] = {0, 2, 1, 3}, k[] = {0, 2, 3, 1};
  return wm_zoo_transpose(b, name, r, 4, keys ? k : qv);
}

// Scaled dot-product attention over q, k, v [B,S,768]; |mask| is added
// to the scores (BERT) or, when |causal|, selects them (GPT-2). Returns
// the merged context [B,S,768].
static const char *attention(wm_zoo_builder_t *b, const char *p, const char *q,
                             const char *k, const char *v, int64_t batch,
                             int64_t seq, const char *mask, bool causal) {
  const char *qh =
      heads(b, wm_zoo_name(b, "%s.q_heads", p), q, batch, seq, false);
  const char *kh =
      heads(b, wm_zoo_name(b, "%s.k_heads", p), k, batch, seq, true);
  const char *vh =
      heads(b, wm_zoo_name(b, "%s.v_heads", p), v, batch, seq, false);
  const char *s =
      wm_zoo_binary(b, "MatMul", wm_zoo_name(b, "%s.scores", p), qh, kh);
  wm_zoo_scalar(b, "attention.scale", sqrt((double)kHeadDim));
  s = wm_zoo_binary(b, "Div", wm_zoo_name(b, "%s.scaled", p), s,
                    "attention.scale");
  if (causal) {
    const char *in[] = {mask, s, "attention.masked_bias"};
    const char *masked = wm_zoo_name(b, "%s.masked", p);
    wm_zoo_node(b, "Where", masked, in, 3);
    s = masked;
  } else {
    s = wm_zoo_binary(b, "Add", wm_zoo_name(b, "%s.masked", p), s, mask);
  }
  const char *in[] = {s};
  const char *probs = wm_zoo_name(b, "%s.probs", p);
  int32_t n = wm_zoo_node(b, "Softmax", probs, in, 1);
  wm_zoo_attr_int(b, n, "axis", -1);
  const char *c =
      wm_zoo_binary(b, "MatMul", wm_zoo_name(b, "%s.context", p), probs, vh);
  static const int64_t back[] = {0, 2, 1, 3};
  c = wm_zoo_transpose(b, wm_zoo_name(b, "%s.merge_heads", p), c, 4, back);
  int64_t dims[] = {batch, seq, kHidden};
  return reshape(b, wm_zoo_name(b, "%s.merged", p), c, "shape.hidden", 3, dims);
}

// Exact GELU: 0.5 * x * (1 + erf(x / sqrt(2))).
static const char *gelu_erf(wm_zoo_builder_t *b, const char *p, const char *x) {
  wm_zoo_scalar(b, "gelu.sqrt2", sqrt(2.0));
  wm_zoo_scalar(b, "gelu.one", 1.0);
  wm_zoo_scalar(b, "gelu.half", 0.5);
  const char *y =
      wm_zoo_binary(b, "Div", wm_zoo_name(b, "%s.div", p), x, "gelu.sqrt2");
  y = wm_zoo_unary(b, "Erf", wm_zoo_name(b, "%s.erf", p), y);
  y = wm_zoo_binary(b, "Add", wm_zoo_name(b, "%s.add", p), y, "gelu.one");
  y = wm_zoo_binary(b, "Mul", wm_zoo_name(b, "%s.mul", p), y, x);
  return wm_zoo_binary(b, "Mul", p, y, "gelu.half");
}

// GPT-2's GELU: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
static const char *gelu_tanh(wm_zoo_builder_t *b, const char *p,
                             const char *x) {
  wm_zoo_scalar(b, "gelu.three", 3.0);
  wm_zoo_scalar(b, "gelu.coeff", 0.044715);
  wm_zoo_scalar(b, "gelu.sqrt_2_over_pi", sqrt(2.0 / 3.14159265358979323846));
  wm_zoo_scalar(b, "gelu.one", 1.0);
  wm_zoo_scalar(b, "gelu.half", 0.5);
  const char *y =
      wm_zoo_binary(b, "Pow", wm_zoo_name(b, "%s.cube", p), x, "gelu.three");
  y = wm_zoo_binary(b, "Mul", wm_zoo_name(b, "%s.cube_scaled", p), y,
                    "gelu.coeff");
  y = wm_zoo_binary(b, "Add", wm_zoo_name(b, "%s.inner", p), x, y);
  y = wm_zoo_binary(b, "Mul", wm_zoo_name(b, "%s.inner_scaled", p), y,
                    "gelu.sqrt_2_over_pi");
  y = wm_zoo_unary(b, "Tanh", wm_zoo_name(b, "%s.tanh", p), y);
  y = wm_zoo_binary(b, "Add", wm_zoo_name(b, "%s.add", p), y, "gelu.one");
  y = wm_zoo_binary(b, "Mul", wm_zoo_name(b, "%s.mul", p), y, x);
  return wm_zoo_binary(b, "Mul", p, y, "gelu.half");
}

// Adds the table NAME [rows, 768] (std 0.02) and gathers rows |ids| from it.
static const char *embed(wm_zoo_builder_t *b, const char *name,
                         const char *table, int64_t rows, const char *ids) {
  int64_t dims[] = {rows, kHidden};
  wm_zoo_random(b, table, 2, dims, 0.02);
  return wm_zoo_binary(b, "Gather", name, table, ids);
}

// The int64 constant 0..seq-1 named |name|.
static void positions(wm_zoo_builder_t *b, const char *name, int64_t seq) {
  if (b->err) {
    return;
  }
  int64_t *ids = wm_calloc((size_t)seq, sizeof(*ids));
  if (!ids) {
    wm_zoo_fail(b, WM_ERROR(RESOURCE_EXHAUSTED, "out of memory"));
    return;
  }
  for (int64_t i = 0; i < seq; i++) {
    ids[i] = i;
  }
  wm_zoo_ints(b, name, (size_t)seq, ids);
  free(ids);
}

void wm_zoo_bert(wm_zoo_builder_t *b, const wm_zoo_args_t *a) {
  int64_t layers = a->v[0], seq = a->v[1], batch = a->v[2];
  int64_t in_dims[] = {batch, seq};
  wm_zoo_input(b, "input_ids", WM_DTYPE_INT64, 2, in_dims);
  wm_zoo_input(b, "attention_mask", WM_DTYPE_INT64, 2, in_dims);
  wm_zoo_input(b, "token_type_ids", WM_DTYPE_INT64, 2, in_dims);

  // Embeddings: word + position + token type, then LayerNorm.
  positions(b, "embeddings.position_ids", seq);
  const char *w =
      embed(b, "embeddings.word", "embeddings.word_embeddings.weight", 30522,
            "input_ids");
  const char *pe =
      embed(b, "embeddings.position", "embeddings.position_embeddings.weight",
            512, "embeddings.position_ids");
  const char *t =
      embed(b, "embeddings.token_type",
            "embeddings.token_type_embeddings.weight", 2, "token_type_ids");
  const char *h = wm_zoo_binary(b, "Add", "embeddings.add1", w, pe);
  h = wm_zoo_binary(b, "Add", "embeddings.add2", h, t);
  h = wm_zoo_layernorm(b, "embeddings.LayerNorm", h, kHidden, 1e-12f);

  // Mask: (1 - attention_mask) * -10000 as [B,1,1,S], added to scores.
  const char *in[] = {"attention_mask"};
  int32_t n = wm_zoo_node(b, "Cast", "extended_mask.cast", in, 1);
  wm_zoo_attr_int(b, n, "to", WM_DTYPE_FLOAT);
  wm_zoo_scalar(b, "extended_mask.one", 1.0);
  wm_zoo_scalar(b, "extended_mask.min", -10000.0);
  const char *m = wm_zoo_binary(b, "Sub", "extended_mask.inverted",
                                "extended_mask.one", "extended_mask.cast");
  m = wm_zoo_binary(b, "Mul", "extended_mask.scaled", m, "extended_mask.min");
  static const int64_t axes[] = {1, 2};
  wm_zoo_ints(b, "extended_mask.axes", 2, axes);
  m = wm_zoo_binary(b, "Unsqueeze", "extended_attention_mask", m,
                    "extended_mask.axes");

  for (int64_t l = 0; l < layers; l++) {
    const char *p = wm_zoo_name(b, "encoder.layer.%lld", (long long)l);
    const char *q =
        wm_zoo_linear(b, wm_zoo_name(b, "%s.attention.self.query", p), h,
                      kHidden, kHidden, 0.02);
    const char *k = wm_zoo_linear(b, wm_zoo_name(b, "%s.attention.self.key", p),
                                  h, kHidden, kHidden, 0.02);
    const char *v =
        wm_zoo_linear(b, wm_zoo_name(b, "%s.attention.self.value", p), h,
                      kHidden, kHidden, 0.02);
    const char *c = attention(b, wm_zoo_name(b, "%s.attention.self", p), q, k,
                              v, batch, seq, m, false);
    c = wm_zoo_linear(b, wm_zoo_name(b, "%s.attention.output.dense", p), c,
                      kHidden, kHidden, 0.02);
    c = wm_zoo_binary(b, "Add",
                      wm_zoo_name(b, "%s.attention.output.residual", p), c, h);
    h = wm_zoo_layernorm(b, wm_zoo_name(b, "%s.attention.output.LayerNorm", p),
                         c, kHidden, 1e-12f);
    const char *f = wm_zoo_linear(b, wm_zoo_name(b, "%s.intermediate.dense", p),
                                  h, kHidden, kFfn, 0.02);
    f = gelu_erf(b, wm_zoo_name(b, "%s.intermediate.gelu", p), f);
    f = wm_zoo_linear(b, wm_zoo_name(b, "%s.output.dense", p), f, kFfn, kHidden,
                      0.02);
    f = wm_zoo_binary(b, "Add", wm_zoo_name(b, "%s.output.residual", p), f, h);
    h = wm_zoo_layernorm(b, wm_zoo_name(b, "%s.output.LayerNorm", p), f,
                         kHidden, 1e-12f);
  }
  const char *last_in[] = {h};
  wm_zoo_node(b, "Identity", "last_hidden_state", last_in, 1);
  int64_t last[] = {batch, seq, kHidden};
  wm_zoo_output(b, "last_hidden_state", WM_DTYPE_FLOAT, 3, last);

  // Pooler: tanh(dense(first token)).
  int_scalar(b, "pooler.first_token", 0);
  const char *gin[] = {h, "pooler.first_token"};
  n = wm_zoo_node(b, "Gather", "pooler.first", gin, 2);
  wm_zoo_attr_int(b, n, "axis", 1);
  const char *pd =
      wm_zoo_linear(b, "pooler.dense", "pooler.first", kHidden, kHidden, 0.02);
  wm_zoo_unary(b, "Tanh", "pooler_output", pd);
  int64_t pooled[] = {batch, kHidden};
  wm_zoo_output(b, "pooler_output", WM_DTYPE_FLOAT, 2, pooled);
}

// The bool constant [S,S] that is true where key j <= query i.
static void causal_mask(wm_zoo_builder_t *b, const char *name, int64_t seq) {
  if (b->err) {
    return;
  }
  int64_t dims[] = {seq, seq};
  wm_shape_t shape = wm_shape_make(2, dims);
  wm_tensor_t *t = NULL;
  wm_zoo_fail(b, wm_tensor_create(WM_DTYPE_BOOL, &shape, &t));
  if (!t) {
    return;
  }
  uint8_t *d = t->data;
  for (int64_t i = 0; i < seq; i++) {
    for (int64_t j = 0; j < seq; j++) {
      d[i * seq + j] = j <= i;
    }
  }
  wm_zoo_fail(b, wm_graph_add_initializer(b->g, name, t, NULL));
}

void wm_zoo_gpt2(wm_zoo_builder_t *b, const wm_zoo_args_t *a) {
  int64_t layers = a->v[0], seq = a->v[1], batch = a->v[2];
  int64_t in_dims[] = {batch, seq};
  wm_zoo_input(b, "input_ids", WM_DTYPE_INT64, 2, in_dims);
  positions(b, "position_ids", seq);
  const char *h = embed(b, "wte", "wte.weight", 50257, "input_ids");
  const char *pe = embed(b, "wpe", "wpe.weight", 1024, "position_ids");
  h = wm_zoo_binary(b, "Add", "embeddings", h, pe);
  causal_mask(b, "attention.causal_mask", seq);
  wm_zoo_scalar(b, "attention.masked_bias", -10000.0);
  static const int64_t split[] = {kHidden, kHidden, kHidden};
  wm_zoo_ints(b, "attention.split", 3, split);
  // Residual projections scaled by 1/sqrt(2 * layers), as GPT-2 does.
  double proj_std = 0.02 / sqrt(2.0 * (double)layers);

  for (int64_t l = 0; l < layers; l++) {
    const char *p = wm_zoo_name(b, "h.%lld", (long long)l);
    const char *x =
        wm_zoo_layernorm(b, wm_zoo_name(b, "%s.ln_1", p), h, kHidden, 1e-5f);
    x = wm_zoo_linear(b, wm_zoo_name(b, "%s.attn.c_attn", p), x, kHidden,
                      3 * kHidden, 0.02);
    const char *qkv[] = {wm_zoo_name(b, "%s.attn.q", p),
                         wm_zoo_name(b, "%s.attn.k", p),
                         wm_zoo_name(b, "%s.attn.v", p)};
    const char *sin[] = {x, "attention.split"};
    int32_t n = -1;
    if (!b->err) {
      wm_zoo_fail(b, wm_graph_add_node(b->g, "Split", "",
                                       wm_zoo_name(b, "%s.attn.split", p), sin,
                                       2, qkv, 3, &n));
    }
    wm_zoo_attr_int(b, n, "axis", 2);
    const char *c =
        attention(b, wm_zoo_name(b, "%s.attn", p), qkv[0], qkv[1], qkv[2],
                  batch, seq, "attention.causal_mask", true);
    c = wm_zoo_linear(b, wm_zoo_name(b, "%s.attn.c_proj", p), c, kHidden,
                      kHidden, proj_std);
    h = wm_zoo_binary(b, "Add", wm_zoo_name(b, "%s.attn.residual", p), c, h);
    x = wm_zoo_layernorm(b, wm_zoo_name(b, "%s.ln_2", p), h, kHidden, 1e-5f);
    x = wm_zoo_linear(b, wm_zoo_name(b, "%s.mlp.c_fc", p), x, kHidden, kFfn,
                      0.02);
    x = gelu_tanh(b, wm_zoo_name(b, "%s.mlp.gelu", p), x);
    x = wm_zoo_linear(b, wm_zoo_name(b, "%s.mlp.c_proj", p), x, kFfn, kHidden,
                      proj_std);
    h = wm_zoo_binary(b, "Add", wm_zoo_name(b, "%s.mlp.residual", p), x, h);
  }
  h = wm_zoo_layernorm(b, "ln_f", h, kHidden, 1e-5f);
  // Tied head: logits = h @ wte^T.
  static const int64_t perm[] = {1, 0};
  const char *wt =
      wm_zoo_transpose(b, "lm_head.weight_t", "wte.weight", 2, perm);
  wm_zoo_binary(b, "MatMul", "logits", h, wt);
  int64_t logits[] = {batch, seq, 50257};
  wm_zoo_output(b, "logits", WM_DTYPE_FLOAT, 3, logits);
}
