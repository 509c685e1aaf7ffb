// Training-time operators: Dropout (and its inference definition, the
// identity) and the classification losses NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss. Reference loops in double.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn.h"

// --------------------------------------------------------------- Dropout

static wm_status_t dropout_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(wm_op_infer_same(ctx));
  if (ctx->opset >= 12) {
    for (int32_t i = 1; i < 3; i++) {
      const wm_shape_t *s = wm_op_in_shape(ctx, i);
      if (wm_op_has_input(ctx, i) && s->rank > 0) {
        char buf[160];
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "input %d (%s) has shape %s, want a scalar", i,
                           i == 1 ? "ratio" : "training_mode",
                           wm_shape_format(s, buf, sizeof(buf)));
      }
    }
    WM_RETURN_IF_ERROR(nn_check_float_dtype(ctx, 1));
    wm_dtype_t tm = wm_op_in_dtype(ctx, 2);
    if (tm != WM_DTYPE_UNDEFINED && tm != WM_DTYPE_BOOL) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 2 (training_mode) has dtype %s, want bool",
                         wm_dtype_name(tm));
    }
  }
  // The mask was of type T before opset 10, bool since.
  wm_op_set_out(ctx, 1,
                ctx->opset >= 10 ? WM_DTYPE_BOOL : wm_op_in_dtype(ctx, 0),
                &ctx->in_types[0].shape);
  return NULL;
}

// Inference is the identity with an all-true mask. Opsets before 12 are
// treated as inference (is_test of opset < 7 is ignored, as runtimes do);
// training mode is supported only for ratio 0, since a random mask cannot
// serve as a reference.
// Training mode: each element is kept with probability 1 - ratio and
// scaled by 1 / (1 - ratio); the mask says which were kept.
static wm_status_t dropout_train(wm_op_ctx_t *ctx, double ratio) {
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  wm_tensor_t *m = wm_op_has_output(ctx, 1) ? ctx->out[1] : NULL;
  wm_op_rng_t r;
  wm_op_rng_seed(&r, ctx);
  double scale = 1.0 / (1.0 - ratio);
  for (size_t i = 0; i < x->count; i++) {
    bool keep = wm_op_rng_uniform(&r) >= ratio;
    wm_tensor_set_f64(y, i, keep ? wm_tensor_get_f64(x, i) * scale : 0.0);
    if (m) {
      wm_tensor_set_f64(m, i, keep ? 1.0 : 0.0);
    }
  }
  return NULL;
}

static wm_status_t dropout_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(dropout_infer(ctx));
  if (ctx->opset >= 12) {
    double ratio = wm_op_input_scalar(ctx, 1, 0.5);
    bool training = false;
    if (wm_op_has_input(ctx, 2) && ctx->in[2] && ctx->in[2]->count) {
      const wm_tensor_t *t = ctx->in[2];
      training = t->dtype == WM_DTYPE_BOOL ? ((const uint8_t *)t->data)[0] != 0
                                           : wm_tensor_get_f64(t, 0) != 0;
    }
    if (!(ratio >= 0 && ratio < 1)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "ratio is %g, want [0, 1)",
                         ratio);
    }
    if (training && ratio != 0) {
      return dropout_train(ctx, ratio);
    }
  }
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  if (y->nbytes != x->nbytes) {
    return WM_OP_ERROR(ctx, INTERNAL, "output has %zu bytes, want %zu",
                       y->nbytes, x->nbytes);
  }
  if (x->nbytes) {
    memcpy(y->data, x->data, x->nbytes);
  }
  wm_tensor_t *m = wm_op_has_output(ctx, 1) ? ctx->out[1] : NULL;
  if (m && m->dtype == WM_DTYPE_BOOL) {
    memset(m->data, 1, m->nbytes);
  } else if (m) {
    for (size_t i = 0; i < m->count; i++) {
      wm_tensor_set_f64(m, i, 1.0);
    }
  }
  return NULL;
}

// ----------------------------------------------------------------- losses

// Shapes of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss:
// input [N, C, D...], target [N, D...] of int32/int64, weight [C].
static wm_status_t loss_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ts = wm_op_in_shape(ctx, 1);
  const char *red;
  WM_RETURN_IF_ERROR(wm_op_attr_string(ctx, "reduction", "mean", &red));
  if (strcmp(red, "none") != 0 && strcmp(red, "sum") != 0 &&
      strcmp(red, "mean") != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute reduction is \"%s\", want none, sum or "
                       "mean",
                       red);
  }
  WM_RETURN_IF_ERROR(nn_check_rank(ctx, 0, 2, WM_MAX_RANK));
  WM_RETURN_IF_ERROR(nn_check_same_dtype(ctx, 2));
  wm_dtype_t tdt = wm_op_in_dtype(ctx, 1);
  if (tdt != WM_DTYPE_UNDEFINED && tdt != WM_DTYPE_INT32 &&
      tdt != WM_DTYPE_INT64) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 1 (target) has dtype %s, want int32 or int64",
                       wm_dtype_name(tdt));
  }
  if (xs->rank >= 0 && ts->rank >= 0) {
    bool ok = ts->rank == xs->rank - 1;
    for (int32_t d = 0; ok && d < ts->rank; d++) {
      int64_t a = ts->dims[d], b = xs->dims[d == 0 ? 0 : d + 1];
      ok = a < 0 || b < 0 || a == b;
    }
    if (!ok) {
      char a[160], b[160];
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 1 (target) has shape %s, want input 0's "
                         "shape %s without dim 1",
                         wm_shape_format(ts, a, sizeof(a)),
                         wm_shape_format(xs, b, sizeof(b)));
    }
  }
  WM_RETURN_IF_ERROR(
      nn_check_vector(ctx, 2, "weight", xs->rank >= 2 ? xs->dims[1] : -1));
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (strcmp(red, "none") == 0) {
    if (ts->rank >= 0) {
      wm_op_set_out(ctx, 0, dt, ts);
    } else if (xs->rank >= 2) {
      wm_shape_t s = *xs;
      s.rank--;
      memmove(s.dims + 1, s.dims + 2, sizeof(int64_t) * (size_t)(s.rank - 1));
      wm_op_set_out(ctx, 0, dt, &s);
    } else {
      wm_op_set_out_unknown(ctx, 0, dt);
    }
  } else {
    wm_shape_t scalar = {0, {0}};
    wm_op_set_out(ctx, 0, dt, &scalar);
  }
  wm_op_set_out(ctx, 1, dt, xs);  // SoftmaxCrossEntropyLoss log_prob
  return NULL;
}

// Negative log-likelihood of log-probabilities |lp| [N, C, D] into output
// 0, honouring weight (input 2), ignore_index and reduction.
static wm_status_t nll(wm_op_ctx_t *ctx, const double *lp) {
  const wm_tensor_t *xt = ctx->in[0], *tt = ctx->in[1];
  size_t n = (size_t)xt->shape.dims[0];
  int64_t c = xt->shape.dims[1];
  size_t d = nn_prod(xt->shape.dims + 2, xt->shape.rank - 2);
  const char *red;
  int64_t ii;
  WM_RETURN_IF_ERROR(wm_op_attr_string(ctx, "reduction", "mean", &red));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "ignore_index", 0, &ii));
  bool has_ii = wm_node_attr(ctx->node, "ignore_index") != NULL;
  if (tt->count != n * d) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "target has %zu elements, want %zu", tt->count, n * d);
  }
  double *wt = NULL, *loss = NULL;
  WM_RETURN_IF_ERROR(nn_load_input(ctx, 2, &wt));
  wm_status_t st = nn_alloc_f64(ctx, n * d, &loss);
  if (st) {
    free(wt);
    return st;
  }
  double sum = 0, wsum = 0;
  for (size_t b = 0; b < n && !st; b++) {
    for (size_t j = 0; j < d; j++) {
      size_t at = b * d + j;
      int64_t t = wm_tensor_get_i64(tt, at);
      if (has_ii && t == ii) {
        continue;
      }
      if (t < 0 || t >= c) {
        st = WM_OP_ERROR(ctx, OUT_OF_RANGE,
                         "target %lld at index %zu is out of range [0, %lld)",
                         (long long)t, at, (long long)c);
        break;
      }
      double w = wt ? wt[t] : 1.0;
      loss[at] = -lp[(b * (size_t)c + (size_t)t) * d + j] * w;
      sum += loss[at];
      wsum += w;
    }
  }
  if (!st) {
    if (strcmp(red, "none") == 0) {
      nn_store_f64(ctx->out[0], loss);
    } else {
      // mean divides by the summed weights of the counted elements.
      wm_tensor_set_f64(ctx->out[0], 0,
                        strcmp(red, "sum") == 0 ? sum : sum / wsum);
    }
  }
  free(wt);
  free(loss);
  return st;
}

static wm_status_t nll_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(loss_infer(ctx));
  double *x;
  WM_RETURN_IF_ERROR(nn_load_f64(ctx, ctx->in[0], &x));
  wm_status_t st = nll(ctx, x);
  free(x);
  return st;
}

static wm_status_t sce_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(loss_infer(ctx));
  const wm_tensor_t *xt = ctx->in[0];
  size_t n = (size_t)xt->shape.dims[0], c = (size_t)xt->shape.dims[1];
  size_t d = nn_prod(xt->shape.dims + 2, xt->shape.rank - 2);
  double *x;
  WM_RETURN_IF_ERROR(nn_load_f64(ctx, xt, &x));
  // log_softmax over dim 1, in place.
  for (size_t b = 0; b < n; b++) {
    for (size_t j = 0; j < d; j++) {
      double *p = x + b * c * d + j;
      double mx = -INFINITY, s = 0;
      for (size_t k = 0; k < c; k++) {
        mx = p[k * d] > mx ? p[k * d] : mx;
      }
      for (size_t k = 0; k < c; k++) {
        s += exp(p[k * d] - mx);
      }
      double lse = mx + log(s);
      for (size_t k = 0; k < c; k++) {
        p[k * d] -= lse;
      }
    }
  }
  wm_status_t st = nll(ctx, x);
  if (!st && wm_op_has_output(ctx, 1)) {
    nn_store_f64(ctx->out[1], x);
  }
  free(x);
  return st;
}

static void nll_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  const wm_shape_t *ts = wm_op_in_shape(ctx, 1);
  double n = nn_numel_f(ts);
  if (n >= 0) {
    out->flops = 2 * n;  // weight multiply and reduction
  }
}

static void sce_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  nll_cost(ctx, out);
  double x = nn_numel_f(wm_op_in_shape(ctx, 0));
  double rows = nn_numel_f(wm_op_in_shape(ctx, 1));
  if (x >= 0 && rows >= 0) {
    out->flops += 4 * x;              // max, sub, sum, sub
    out->transcendentals = x + rows;  // exp per element, log per row
  }
}

// ------------------------------------------------- compute definitions

// Dropout in inference (one output, no training mode input or a constant
// false one): the identity.
static wm_status_t dropout_define(const wm_op_ctx_t *ctx,
                                  wm_gen_compute_t *out) {
  const wm_tensor_t *tm = wm_op_has_input(ctx, 2) ? ctx->in[2] : NULL;
  bool training = wm_op_has_input(ctx, 2) &&
                  (!tm || tm->count != 1 || wm_tensor_get_f64(tm, 0) != 0);
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  if (training || ctx->n_out > 1 || xs->rank < 0) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for Dropout in training or "
                       "with its mask");
  }
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  for (int32_t d = 0; d < xs->rank; d++) {
    acc.coef[d][d] = 1;
  }
  return wm_op_define_copy(ctx, out, xs->rank, xs->dims, NULL, &acc);
}

// ------------------------------------------------------------------ table

const wm_op_def_t wm_ops_loss[] = {
    {"Dropout", "", 1, 1, 1, 1, 2, WM_TYPES_FLOAT, dropout_infer, dropout_run,
     wm_op_cost_zero, WM_OP_RANDOM_IN_TRAINING, NULL, dropout_define},
    {"Dropout", "", 12, 1, 3, 1, 2, WM_TYPES_FLOAT, dropout_infer, dropout_run,
     wm_op_cost_zero, WM_OP_RANDOM_IN_TRAINING, NULL, dropout_define},
    {"NegativeLogLikelihoodLoss", "", 12, 2, 3, 1, 1, WM_TYPES_FLOAT,
     loss_infer, nll_run, nll_cost},
    {"SoftmaxCrossEntropyLoss", "", 12, 2, 3, 1, 2, WM_TYPES_FLOAT, loss_infer,
     sce_run, sce_cost},
    WM_OPS_END,
};
