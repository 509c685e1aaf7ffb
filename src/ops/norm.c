// Normalizations: BatchNormalization, LayerNormalization,
// InstanceNormalization, MeanVarianceNormalization, LpNormalization,
// GroupNormalization and LRN, with the compute definitions of
// BatchNormalization (inference) and LRN. Reference loops in double.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn.h"

// ------------------------------------------------------------------- LRN

typedef struct lrn {
  int64_t size;  // channels in the window
  double alpha;  // scale
  double beta;   // exponent
  double bias;   // added before the power
} lrn_t;

static wm_status_t lrn_setup(wm_op_ctx_t *ctx, lrn_t *l) {
  WM_RETURN_IF_ERROR(nn_check_rank(ctx, 0, 2, WM_MAX_RANK));
  const wm_attr_t *a = wm_node_attr(ctx->node, "size");
  if (!a) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "attribute size is required");
  }
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "size", 1, &l->size));
  if (l->size < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute size is %lld, want at least 1",
                       (long long)l->size);
  }
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "alpha", 1e-4, &l->alpha));
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "beta", 0.75, &l->beta));
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "bias", 1.0, &l->bias));
  return NULL;
}

static wm_status_t lrn_infer(wm_op_ctx_t *ctx) {
  lrn_t l = {1, 0, 0, 0};
  WM_RETURN_IF_ERROR(lrn_setup(ctx, &l));
  return wm_op_infer_same(ctx);
}

static wm_status_t lrn_run(wm_op_ctx_t *ctx) {
  lrn_t l = {1, 0, 0, 0};
  WM_RETURN_IF_ERROR(lrn_setup(ctx, &l));
  const wm_tensor_t *xt = ctx->in[0];
  int64_t n = xt->shape.dims[0], c = xt->shape.dims[1];
  size_t inner = nn_prod(xt->shape.dims + 2, xt->shape.rank - 2);
  double *x, *y;
  WM_RETURN_IF_ERROR(nn_load_f64(ctx, xt, &x));
  wm_status_t st = nn_alloc_f64(ctx, xt->count, &y);
  if (st) {
    free(x);
    return st;
  }
  int64_t lo = (l.size - 1) / 2, hi = l.size - 1 - lo;  // floor, ceil
  for (int64_t in = 0; in < n; in++) {
    for (int64_t ic = 0; ic < c; ic++) {
      int64_t c0 = ic - lo < 0 ? 0 : ic - lo;
      int64_t c1 = ic > c - 1 - hi ? c - 1 : ic + hi;
      for (size_t i = 0; i < inner; i++) {
        double sq = 0;
        for (int64_t j = c0; j <= c1; j++) {
          double v = x[((size_t)(in * c + j)) * inner + i];
          sq += v * v;
        }
        size_t at = (size_t)(in * c + ic) * inner + i;
        y[at] = x[at] / pow(l.bias + l.alpha / (double)l.size * sq, l.beta);
      }
    }
  }
  nn_store_f64(ctx->out[0], y);
  free(x);
  free(y);
  return NULL;
}

static void lrn_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  double n = nn_numel_f(wm_op_in_shape(ctx, 0));
  int64_t size = wm_node_attr_int(ctx->node, "size", 1);
  if (n < 0) {
    return;
  }
  out->flops = n * (2 * (double)size + 3);
  out->transcendentals = n;
}

// ---------------------------------------------------- BatchNormalization

// Parameter layout of BatchNormalization: per channel, or (spatial = 0,
// opset < 9) per channel and position.
static wm_status_t bn_setup(wm_op_ctx_t *ctx, bool *out_training,
                            bool *out_spatial) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  WM_RETURN_IF_ERROR(nn_check_rank(ctx, 0, 2, WM_MAX_RANK));
  int64_t spatial = 1, training = 0;
  if (ctx->opset < 9) {
    WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "spatial", 1, &spatial));
  }
  if (ctx->opset >= 14) {
    WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "training_mode", 0, &training));
    if (!training) {
      for (int32_t i = 1; i < ctx->n_out; i++) {
        if (wm_op_has_output(ctx, i)) {
          return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                             "output %d needs training_mode=1", i);
        }
      }
    }
  } else {
    // Before opset 14 the extra outputs select training mode.
    for (int32_t i = 1; i < ctx->n_out; i++) {
      training |= wm_op_has_output(ctx, i);
    }
    if (ctx->opset < 7) {
      int64_t is_test;
      WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "is_test", 0, &is_test));
      if (is_test) {
        training = 0;
      }
    }
  }
  *out_training = training != 0;
  *out_spatial = spatial != 0;
  static const char *const names[] = {"", "scale", "B", "mean", "var"};
  for (int32_t i = 1; i < 5; i++) {
    WM_RETURN_IF_ERROR(nn_check_float_dtype(ctx, i));
    const wm_shape_t *ps = wm_op_in_shape(ctx, i);
    if (ps->rank < 0 || xs->rank < 0) {
      continue;
    }
    wm_shape_t want = {1, {xs->dims[1]}};
    if (!spatial) {
      want = wm_shape_make(xs->rank - 1, xs->dims + 1);
    }
    bool ok = ps->rank == want.rank;
    for (int32_t d = 0; ok && d < want.rank; d++) {
      ok = ps->dims[d] < 0 || want.dims[d] < 0 || ps->dims[d] == want.dims[d];
    }
    if (!ok) {
      char a[160], b[160];
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d (%s) has shape %s, want %s", i, names[i],
                         wm_shape_format(ps, a, sizeof(a)),
                         wm_shape_format(&want, b, sizeof(b)));
    }
  }
  return NULL;
}

// Parameters: training_mode (before opset 14 whether the statistics
// outputs are requested, is_test before 7 applied), spatial (1 from opset
// 9), epsilon and momentum.
static wm_status_t bn_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  bool training, spatial;
  double eps, momentum;
  WM_RETURN_IF_ERROR(bn_setup(ctx, &training, &spatial));
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "momentum", 0.9, &momentum));
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "training_mode", training));
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "spatial", spatial));
  WM_RETURN_IF_ERROR(wm_op_param_float(ctx, out, "epsilon", eps));
  return wm_op_param_float(ctx, out, "momentum", momentum);
}

static wm_status_t bn_infer(wm_op_ctx_t *ctx) {
  bool training = false, spatial = true;
  WM_RETURN_IF_ERROR(bn_setup(ctx, &training, &spatial));
  WM_RETURN_IF_ERROR(wm_op_infer_same(ctx));
  // Statistics outputs take the shape and dtype of the mean input.
  for (int32_t i = 1; i < ctx->n_out; i++) {
    const wm_shape_t *ms = wm_op_in_shape(ctx, 3);
    wm_dtype_t dt =
        ctx->opset >= 15 ? wm_op_in_dtype(ctx, 3) : wm_op_in_dtype(ctx, 0);
    wm_op_set_out(ctx, i, dt, ms);
  }
  return NULL;
}

static wm_status_t bn_run(wm_op_ctx_t *ctx) {
  bool training = false, spatial = true;
  WM_RETURN_IF_ERROR(bn_setup(ctx, &training, &spatial));
  double eps, momentum;
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "momentum", 0.9, &momentum));
  const wm_tensor_t *xt = ctx->in[0];
  size_t n = (size_t)xt->shape.dims[0], c = (size_t)xt->shape.dims[1];
  size_t inner = nn_prod(xt->shape.dims + 2, xt->shape.rank - 2);
  size_t np = spatial ? c : c * inner;  // parameters
  size_t per = spatial ? inner : 1;     // positions per parameter and n
  double *x = NULL, *y = NULL, *prm[5] = {NULL};
  double *bm = NULL, *bv = NULL;
  wm_status_t st = nn_load_f64(ctx, xt, &x);
  for (int32_t i = 1; i < 5 && !st; i++) {
    st = nn_load_f64(ctx, ctx->in[i], &prm[i]);
    if (!st && ctx->in[i]->count != np) {
      st = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d has %zu elements, want %zu", i,
                       ctx->in[i]->count, np);
    }
  }
  if (!st) {
    st = nn_alloc_f64(ctx, xt->count, &y);
  }
  if (!st) {
    st = nn_alloc_f64(ctx, np, &bm);
  }
  if (!st) {
    st = nn_alloc_f64(ctx, np, &bv);
  }
  if (st) {
    goto done;
  }
  // Element (b, ch, i) uses parameter ch (spatial) or ch * inner + i.
  for (size_t p = 0; p < np; p++) {
    size_t ch = spatial ? p : p / inner, i0 = spatial ? 0 : p % inner;
    double mean = prm[3][p], var = prm[4][p];
    if (training) {
      double s = 0, cnt = (double)(n * per);
      for (size_t b = 0; b < n; b++) {
        for (size_t i = 0; i < per; i++) {
          s += x[(b * c + ch) * inner + i0 + i];
        }
      }
      mean = cnt > 0 ? s / cnt : 0;
      double v = 0;
      for (size_t b = 0; b < n; b++) {
        for (size_t i = 0; i < per; i++) {
          double d = x[(b * c + ch) * inner + i0 + i] - mean;
          v += d * d;
        }
      }
      var = cnt > 0 ? v / cnt : 0;
    }
    bm[p] = mean;
    bv[p] = var;
    double inv = 1.0 / sqrt(var + eps);
    for (size_t b = 0; b < n; b++) {
      for (size_t i = 0; i < per; i++) {
        size_t at = (b * c + ch) * inner + i0 + i;
        y[at] = (x[at] - mean) * inv * prm[1][p] + prm[2][p];
      }
    }
  }
  nn_store_f64(ctx->out[0], y);
  if (training) {
    // Outputs 1, 2: running mean and variance; 3, 4 (opset < 14): the
    // batch mean and variance.
    for (int32_t o = 1; o < ctx->n_out && o < 5; o++) {
      wm_tensor_t *t = wm_op_has_output(ctx, o) ? ctx->out[o] : NULL;
      if (!t) {
        continue;
      }
      for (size_t p = 0; p < np && p < t->count; p++) {
        double v = o == 1   ? prm[3][p] * momentum + bm[p] * (1 - momentum)
                   : o == 2 ? prm[4][p] * momentum + bv[p] * (1 - momentum)
                   : o == 3 ? bm[p]
                            : bv[p];
        wm_tensor_set_f64(t, p, v);
      }
    }
  }
done:
  free(x);
  free(y);
  free(bm);
  free(bv);
  for (int32_t i = 1; i < 5; i++) {
    free(prm[i]);
  }
  return st;
}

static void norm_cost(const wm_op_ctx_t *ctx, double per_elem,
                      double per_elem_tr, wm_op_cost_t *out) {
  double n = nn_numel_f(wm_op_in_shape(ctx, 0));
  if (n < 0) {
    return;
  }
  out->flops = n * per_elem;
  out->transcendentals = n * per_elem_tr;
}

static void bn_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  norm_cost(ctx, 4, 0, out);  // sub, mul, mul, add
  const wm_shape_t *ms = wm_op_in_shape(ctx, 3);
  double c = nn_numel_f(ms);
  if (c > 0) {
    out->transcendentals = c;  // one sqrt per channel
  }
}

// ---------------------------------------------------- LayerNormalization

// Normalizes over dims [axis, rank); Scale and B broadcast to them.
static wm_status_t ln_setup(wm_op_ctx_t *ctx, int32_t *out_axis) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  *out_axis = -1;
  int64_t axis, stash;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "axis", -1, &axis));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "stash_type", WM_DTYPE_FLOAT, &stash));
  if (stash < 0 || stash >= WM_DTYPE_COUNT ||
      !wm_dtype_is_float((wm_dtype_t)stash)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute stash_type is %lld, want a float dtype",
                       (long long)stash);
  }
  WM_RETURN_IF_ERROR(nn_check_same_dtype(ctx, 1));
  WM_RETURN_IF_ERROR(nn_check_same_dtype(ctx, 2));
  if (xs->rank < 0) {
    return NULL;
  }
  if (xs->rank == 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 is a scalar, want rank at least 1");
  }
  WM_RETURN_IF_ERROR(wm_op_axis(ctx, axis, xs->rank, "axis", out_axis));
  wm_shape_t norm = wm_shape_make(xs->rank - *out_axis, xs->dims + *out_axis);
  for (int32_t i = 1; i < 3; i++) {
    const wm_shape_t *ps = wm_op_in_shape(ctx, i);
    if (!wm_op_has_input(ctx, i) || ps->rank < 0) {
      continue;
    }
    bool ok = ps->rank <= norm.rank;
    for (int32_t d = 0; ok && d < ps->rank; d++) {
      int64_t pd = ps->dims[d], nd = norm.dims[norm.rank - ps->rank + d];
      ok = pd < 0 || nd < 0 || pd == 1 || pd == nd;
    }
    if (!ok) {
      char a[160], b[160];
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d has shape %s, which does not broadcast "
                         "to the normalized shape %s",
                         i, wm_shape_format(ps, a, sizeof(a)),
                         wm_shape_format(&norm, b, sizeof(b)));
    }
  }
  return NULL;
}

// Parameters: axis normalised, epsilon and stash_type.
static wm_status_t ln_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  int32_t axis;
  int64_t stash;
  double eps;
  WM_RETURN_IF_ERROR(ln_setup(ctx, &axis));
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "stash_type", WM_DTYPE_FLOAT, &stash));
  out->pending = axis < 0;
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "axis", axis));
  WM_RETURN_IF_ERROR(wm_op_param_float(ctx, out, "epsilon", eps));
  return wm_op_param_int(ctx, out, "stash_type", stash);
}

static wm_status_t ln_infer(wm_op_ctx_t *ctx) {
  int32_t axis = 0;
  WM_RETURN_IF_ERROR(ln_setup(ctx, &axis));
  WM_RETURN_IF_ERROR(wm_op_infer_same(ctx));
  wm_dtype_t stash =
      (wm_dtype_t)wm_node_attr_int(ctx->node, "stash_type", WM_DTYPE_FLOAT);
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  if (xs->rank < 0) {
    wm_op_set_out_unknown(ctx, 1, stash);
    wm_op_set_out_unknown(ctx, 2, stash);
    return NULL;
  }
  wm_shape_t ms = *xs;
  for (int32_t d = axis; d < ms.rank; d++) {
    ms.dims[d] = 1;
  }
  wm_op_set_out(ctx, 1, stash, &ms);
  wm_op_set_out(ctx, 2, stash, &ms);
  return NULL;
}

// Loads input |i| broadcast to |norm| (NULL when omitted).
static wm_status_t load_broadcast(const wm_op_ctx_t *ctx, int32_t i,
                                  const wm_shape_t *norm, double **out) {
  *out = NULL;
  if (!wm_op_has_input(ctx, i)) {
    return NULL;
  }
  const wm_tensor_t *t = ctx->in[i];
  size_t n = nn_prod(norm->dims, norm->rank);
  WM_RETURN_IF_ERROR(nn_alloc_f64(ctx, n, out));
  int64_t strides[WM_MAX_RANK];
  wm_broadcast_strides(&t->shape, norm, strides);
  for (size_t j = 0; j < n; j++) {
    (*out)[j] = wm_tensor_get_f64(t, wm_broadcast_offset(norm, strides, j));
  }
  return NULL;
}

static wm_status_t ln_run(wm_op_ctx_t *ctx) {
  int32_t axis = 0;
  WM_RETURN_IF_ERROR(ln_setup(ctx, &axis));
  double eps;
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  const wm_tensor_t *xt = ctx->in[0];
  wm_shape_t norm = wm_shape_make(xt->shape.rank - axis, xt->shape.dims + axis);
  size_t outer = nn_prod(xt->shape.dims, axis);
  size_t inner = nn_prod(norm.dims, norm.rank);
  double *x = NULL, *y = NULL, *sc = NULL, *bi = NULL;
  wm_status_t st = nn_load_f64(ctx, xt, &x);
  if (!st) {
    st = nn_alloc_f64(ctx, xt->count, &y);
  }
  if (!st) {
    st = load_broadcast(ctx, 1, &norm, &sc);
  }
  if (!st) {
    st = load_broadcast(ctx, 2, &norm, &bi);
  }
  if (st) {
    goto done;
  }
  wm_tensor_t *mt = wm_op_has_output(ctx, 1) ? ctx->out[1] : NULL;
  wm_tensor_t *vt = wm_op_has_output(ctx, 2) ? ctx->out[2] : NULL;
  for (size_t o = 0; o < outer; o++) {
    const double *xp = x + o * inner;
    double mean, inv;
    nn_moments(xp, inner, eps, &mean, &inv);
    for (size_t j = 0; j < inner; j++) {
      y[o * inner + j] = (xp[j] - mean) * inv * sc[j] + (bi ? bi[j] : 0.0);
    }
    if (mt) {
      wm_tensor_set_f64(mt, o, mean);
    }
    if (vt) {
      wm_tensor_set_f64(vt, o, inv);
    }
  }
  nn_store_f64(ctx->out[0], y);
done:
  free(x);
  free(y);
  free(sc);
  free(bi);
  return st;
}

// Adds the per-row statistic |which| (0: mean, 1: inverse deviation) as
// a [outer] input of |c|: output 1 + which when the node has it, else the
// program's temporary |temp|.
static wm_status_t ln_stat_input(const wm_op_ctx_t *ctx, wm_gen_program_t *p,
                                 wm_gen_compute_t *c, int32_t which,
                                 int32_t temp, int64_t outer, int32_t *load) {
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  acc.coef[0][0] = 1;
  WM_RETURN_IF_ERROR(
      wm_gen_input_access(c, which ? "R" : "M", 1, &outer, NULL, &acc, load));
  if (wm_op_has_output(ctx, 1 + which)) {
    c->tensors[c->n_tensors - 1].operand = -2 - which;
    return NULL;
  }
  return wm_gen_bind_temp(p, c, c->n_tensors - 1, temp);
}

// The compute definition of LayerNormalization over x viewed as [outer,
// normalized dims...], in three stages: each row's mean, its inverse
// standard deviation 1 / sqrt(mean of (x - mean)^2 + epsilon) (into the
// node's Mean and InvStdDev outputs when it has them), then (x - mean) *
// inv * scale + bias.
static wm_status_t ln_define(const wm_op_ctx_t *ctx, wm_gen_program_t *p) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  int32_t axis = -1;
  double eps;
  int64_t stash;
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "stash_type", WM_DTYPE_FLOAT, &stash));
  if (wm_op_define_float(ctx)) {
    WM_RETURN_IF_ERROR(ln_setup((wm_op_ctx_t *)ctx, &axis));
  }
  int64_t outer = axis >= 0 ? (int64_t)nn_prod(xs->dims, axis) : 0;
  int64_t inner =
      axis >= 0 ? (int64_t)nn_prod(xs->dims + axis, xs->rank - axis) : 0;
  int32_t m = xs->rank - axis;  // normalized dims
  if (axis < 0 || stash != WM_DTYPE_FLOAT || inner == 0 ||
      1 + m > WM_GEN_MAX_AXES) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 of "
                       "known shape, float statistics, rows not empty)");
  }
  int64_t dims[WM_MAX_RANK + 1];  // x as [outer, normalized dims...]
  dims[0] = outer;
  memcpy(dims + 1, xs->dims + axis, (size_t)m * sizeof(int64_t));
  int32_t temp[2];
  for (int32_t t = 0; t < 2; t++) {
    WM_RETURN_IF_ERROR(wm_gen_program_temp(p, outer, &temp[t]));
  }
  for (int32_t stage = 0; stage < 3; stage++) {
    wm_gen_compute_t *c;
    WM_RETURN_IF_ERROR(wm_gen_program_stage(p, &c));
    WM_RETURN_IF_ERROR(
        wm_gen_begin(c, "LayerNorm", stage < 2 ? 1 : 1 + m, dims, NULL));
    wm_gen_access_t ax;  // x[o, k...]: axes 1.. are the normalized dims
    memset(&ax, 0, sizeof(ax));
    ax.coef[0][0] = 1;
    for (int32_t d = 0; d < m; d++) {
      int32_t a = 1 + d;
      if (stage < 2) {
        char name[16];
        snprintf(name, sizeof(name), "k%d", (int)d);
        WM_RETURN_IF_ERROR(wm_gen_reduce_axis(c, name, dims[1 + d], &a));
      }
      ax.coef[1 + d][a] = 1;
    }
    int32_t x, mean = -1, inv = -1;
    WM_RETURN_IF_ERROR(wm_gen_input_access(c, "X", 1 + m, dims, NULL, &ax, &x));
    c->tensors[c->n_tensors - 1].operand = 0;
    if (stage > 0) {
      WM_RETURN_IF_ERROR(ln_stat_input(ctx, p, c, 0, temp[0], outer, &mean));
    }
    if (stage > 1) {
      WM_RETURN_IF_ERROR(ln_stat_input(ctx, p, c, 1, temp[1], outer, &inv));
    }
    wm_gen_builder_t b = {c, NULL};
    if (stage < 2) {  // the statistic into an output or a temporary
      if (wm_op_has_output(ctx, 1 + stage)) {
        c->tensors[0].operand = -2 - stage;
      } else {
        WM_RETURN_IF_ERROR(wm_gen_bind_temp(p, c, 0, temp[stage]));
      }
      int32_t acc;
      WM_RETURN_IF_ERROR(wm_gen_acc(c, &acc));
      int32_t mean_of = wm_gen_f2(&b, WM_GEN_MUL, acc,
                                  wm_gen_k(&b, (float)(1.0 / (double)inner)));
      int32_t body = x, epi = mean_of;
      if (stage == 1) {
        int32_t dev = wm_gen_f2(&b, WM_GEN_SUB, x, mean);
        body = wm_gen_f2(&b, WM_GEN_MUL, dev, dev);
        epi = wm_gen_f2(&b, WM_GEN_DIV, wm_gen_k(&b, 1.0f),
                        wm_gen_f1(&b, WM_GEN_SQRT,
                                  wm_gen_f2(&b, WM_GEN_ADD, mean_of,
                                            wm_gen_k(&b, (float)eps))));
      }
      WM_RETURN_IF_ERROR(b.st);
      WM_RETURN_IF_ERROR(wm_gen_finish_reduce(c, WM_GEN_ADD, 0.0f, body, epi));
      continue;
    }
    // Scale and bias broadcast to the normalized dims (numpy's rule).
    int32_t y =
        wm_gen_f2(&b, WM_GEN_MUL, wm_gen_f2(&b, WM_GEN_SUB, x, mean), inv);
    for (int32_t i = 1; i < 3 && !b.st; i++) {
      if (!wm_op_has_input(ctx, i)) {
        continue;
      }
      const wm_shape_t *ps = wm_op_in_shape(ctx, i);
      wm_gen_access_t ap;
      memset(&ap, 0, sizeof(ap));
      for (int32_t d = 0; d < ps->rank; d++) {
        ap.coef[d][1 + m - ps->rank + d] = ps->dims[d] == 1 ? 0 : 1;
      }
      int32_t v;
      b.st = wm_gen_input_access(c, i == 1 ? "G" : "B", ps->rank, ps->dims,
                                 NULL, &ap, &v);
      c->tensors[c->n_tensors - 1].operand = i;
      y = wm_gen_f2(&b, i == 1 ? WM_GEN_MUL : WM_GEN_ADD, y, v);
    }
    WM_RETURN_IF_ERROR(b.st);
    WM_RETURN_IF_ERROR(wm_gen_finish(c, y));
  }
  return NULL;
}

static void ln_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  // sum, sub, square, sum, sub, mul, mul, add
  norm_cost(ctx, 8, 0, out);
  const wm_shape_t *ms = &ctx->out_types[0].shape;
  int64_t axis = wm_node_attr_int(ctx->node, "axis", -1);
  if (ms->rank > 0) {
    int32_t a = (int32_t)(axis < 0 ? axis + ms->rank : axis);
    if (a >= 0 && a <= ms->rank) {
      double outer = nn_prod_f(ms->dims, a);
      out->transcendentals = outer > 0 ? outer : 0;
    }
  }
}

// ------------------------------------------------- InstanceNormalization

// Parameters: epsilon.
static wm_status_t in_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  double eps;
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  return wm_op_param_float(ctx, out, "epsilon", eps);
}

static wm_status_t in_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(nn_check_rank(ctx, 0, 2, WM_MAX_RANK));
  WM_RETURN_IF_ERROR(nn_check_same_dtype(ctx, 1));
  WM_RETURN_IF_ERROR(nn_check_same_dtype(ctx, 2));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  int64_t c = xs->rank >= 2 ? xs->dims[1] : -1;
  WM_RETURN_IF_ERROR(nn_check_vector(ctx, 1, "scale", c));
  WM_RETURN_IF_ERROR(nn_check_vector(ctx, 2, "B", c));
  return wm_op_infer_same(ctx);
}

static wm_status_t in_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(in_infer(ctx));
  double eps;
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  const wm_tensor_t *xt = ctx->in[0];
  size_t n = (size_t)xt->shape.dims[0], c = (size_t)xt->shape.dims[1];
  size_t inner = nn_prod(xt->shape.dims + 2, xt->shape.rank - 2);
  double *x = NULL, *y = NULL, *sc = NULL, *bi = NULL;
  wm_status_t st = nn_load_f64(ctx, xt, &x);
  if (!st) {
    st = nn_alloc_f64(ctx, xt->count, &y);
  }
  if (!st) {
    st = nn_load_f64(ctx, ctx->in[1], &sc);
  }
  if (!st) {
    st = nn_load_f64(ctx, ctx->in[2], &bi);
  }
  if (st) {
    goto done;
  }
  for (size_t b = 0; b < n; b++) {
    for (size_t ch = 0; ch < c; ch++) {
      const double *xp = x + (b * c + ch) * inner;
      double *yp = y + (b * c + ch) * inner;
      double mean, inv;
      nn_moments(xp, inner, eps, &mean, &inv);
      for (size_t j = 0; j < inner; j++) {
        yp[j] = (xp[j] - mean) * inv * sc[ch] + bi[ch];
      }
    }
  }
  nn_store_f64(ctx->out[0], y);
done:
  free(x);
  free(y);
  free(sc);
  free(bi);
  return st;
}

static void in_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  norm_cost(ctx, 8, 0, out);
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  if (xs->rank >= 2) {
    double planes = nn_prod_f(xs->dims, 2);
    out->transcendentals = planes > 0 ? planes : 0;
  }
}

// ------------------------------------------- MeanVarianceNormalization

// Reduced axes of MVN as a mask over the dims of input 0.
static wm_status_t mvn_axes(const wm_op_ctx_t *ctx, int32_t rank, bool *mask) {
  static const int64_t def[] = {0, 2, 3};
  const int64_t *v;
  size_t n;
  WM_RETURN_IF_ERROR(wm_op_attr_ints(ctx, "axes", &v, &n));
  if (!v) {
    v = def;
    n = 3;
  }
  memset(mask, 0, sizeof(bool) * WM_MAX_RANK);
  for (size_t i = 0; i < n; i++) {
    int32_t a;
    WM_RETURN_IF_ERROR(wm_op_axis(ctx, v[i], rank, "axes entry", &a));
    if (mask[a]) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute axes repeats axis %d", a);
    }
    mask[a] = true;
  }
  return NULL;
}

static wm_status_t mvn_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  if (xs->rank >= 0) {
    bool mask[WM_MAX_RANK];
    WM_RETURN_IF_ERROR(mvn_axes(ctx, xs->rank, mask));
  }
  return wm_op_infer_same(ctx);
}

// Index of the reduction group of element |i|: its coordinates with the
// reduced dims dropped.
static size_t group_of(const wm_shape_t *s, const bool *mask, size_t i) {
  size_t g = 0, scale = 1;
  for (int32_t d = s->rank - 1; d >= 0; d--) {
    size_t dim = (size_t)s->dims[d], q = i % dim;
    i /= dim;
    if (!mask[d]) {
      g += q * scale;
      scale *= dim;
    }
  }
  return g;
}

static wm_status_t mvn_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *xt = ctx->in[0];
  bool mask[WM_MAX_RANK];
  WM_RETURN_IF_ERROR(mvn_axes(ctx, xt->shape.rank, mask));
  size_t groups = 1, cnt = 1;
  for (int32_t d = 0; d < xt->shape.rank; d++) {
    *(mask[d] ? &cnt : &groups) *= (size_t)xt->shape.dims[d];
  }
  double *x = NULL, *y = NULL, *mean = NULL, *var = NULL;
  wm_status_t st = nn_load_f64(ctx, xt, &x);
  if (!st) {
    st = nn_alloc_f64(ctx, xt->count, &y);
  }
  if (!st) {
    st = nn_alloc_f64(ctx, groups, &mean);
  }
  if (!st) {
    st = nn_alloc_f64(ctx, groups, &var);
  }
  if (st) {
    goto done;
  }
  for (size_t i = 0; i < xt->count; i++) {
    mean[group_of(&xt->shape, mask, i)] += x[i];
  }
  for (size_t g = 0; g < groups; g++) {
    mean[g] /= (double)cnt;
  }
  for (size_t i = 0; i < xt->count; i++) {
    size_t g = group_of(&xt->shape, mask, i);
    var[g] += (x[i] - mean[g]) * (x[i] - mean[g]);
  }
  // The ONNX function body: (X - E[X]) / (sqrt(Var[X]) + 1e-9).
  for (size_t i = 0; i < xt->count; i++) {
    size_t g = group_of(&xt->shape, mask, i);
    y[i] = (x[i] - mean[g]) / (sqrt(var[g] / (double)cnt) + 1e-9);
  }
  nn_store_f64(ctx->out[0], y);
done:
  free(x);
  free(y);
  free(mean);
  free(var);
  return st;
}

static void mvn_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  norm_cost(ctx, 6, 0, out);
}

// ------------------------------------------------------- LpNormalization

static wm_status_t lpn_setup(const wm_op_ctx_t *ctx, int32_t *out_axis,
                             int64_t *out_p) {
  int64_t axis;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "axis", -1, &axis));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "p", 2, out_p));
  if (*out_p != 1 && *out_p != 2) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute p is %lld, want 1 or 2", (long long)*out_p);
  }
  *out_axis = -1;
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  if (xs->rank < 0) {
    return NULL;
  }
  if (xs->rank == 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 is a scalar, want rank at least 1");
  }
  return wm_op_axis(ctx, axis, xs->rank, "axis", out_axis);
}

static wm_status_t lpn_infer(wm_op_ctx_t *ctx) {
  int32_t axis;
  int64_t p;
  WM_RETURN_IF_ERROR(lpn_setup(ctx, &axis, &p));
  return wm_op_infer_same(ctx);
}

// y = x / ||x||_p along the axis; a zero norm gives zeros, not NaN.
static wm_status_t lpn_run(wm_op_ctx_t *ctx) {
  int32_t axis;
  int64_t p;
  WM_RETURN_IF_ERROR(lpn_setup(ctx, &axis, &p));
  const wm_tensor_t *xt = ctx->in[0];
  const wm_shape_t *s = &xt->shape;
  size_t outer = nn_prod(s->dims, axis), len = (size_t)s->dims[axis];
  size_t inner = nn_prod(s->dims + axis + 1, s->rank - axis - 1);
  double *x = NULL;
  WM_RETURN_IF_ERROR(nn_load_f64(ctx, xt, &x));
  for (size_t o = 0; o < outer; o++) {
    for (size_t in = 0; in < inner; in++) {
      size_t base = o * len * inner + in;
      double acc = 0;
      for (size_t k = 0; k < len; k++) {
        double v = x[base + k * inner];
        acc += p == 1 ? fabs(v) : v * v;
      }
      double norm = p == 1 ? acc : sqrt(acc);
      for (size_t k = 0; k < len; k++) {
        size_t j = base + k * inner;
        x[j] = norm == 0.0 ? 0.0 : x[j] / norm;
      }
    }
  }
  nn_store_f64(ctx->out[0], x);
  free(x);
  return NULL;
}

static void lpn_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  norm_cost(ctx, 3, 0, out);  // square, sum, divide
}

// ---------------------------------------------------- GroupNormalization

// X [N, C, D...] in num_groups groups of channels; scale and bias have
// one entry per channel from opset 21, one per group before.
static wm_status_t gn_setup(const wm_op_ctx_t *ctx, int64_t *out_groups) {
  int64_t g, stash;
  const wm_attr_t *a = wm_node_attr(ctx->node, "num_groups");
  if (!a) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute num_groups is required");
  }
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "num_groups", 1, &g));
  if (g < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute num_groups is %lld, want at least 1",
                       (long long)g);
  }
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "stash_type", WM_DTYPE_FLOAT, &stash));
  if (stash < 0 || stash >= WM_DTYPE_COUNT ||
      !wm_dtype_is_float((wm_dtype_t)stash)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute stash_type is %lld, want a float dtype",
                       (long long)stash);
  }
  WM_RETURN_IF_ERROR(nn_check_rank(ctx, 0, 2, WM_MAX_RANK));
  WM_RETURN_IF_ERROR(nn_check_same_dtype(ctx, 1));
  WM_RETURN_IF_ERROR(nn_check_same_dtype(ctx, 2));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  int64_t c = xs->rank >= 2 ? xs->dims[1] : -1;
  if (c >= 0 && c % g != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has %lld channels, not a multiple of "
                       "num_groups %lld",
                       (long long)c, (long long)g);
  }
  int64_t per = ctx->opset >= 21 ? c : g;
  WM_RETURN_IF_ERROR(nn_check_vector(ctx, 1, "scale", per));
  WM_RETURN_IF_ERROR(nn_check_vector(ctx, 2, "bias", per));
  *out_groups = g;
  return NULL;
}

static wm_status_t gn_infer(wm_op_ctx_t *ctx) {
  int64_t g;
  WM_RETURN_IF_ERROR(gn_setup(ctx, &g));
  return wm_op_infer_same(ctx);
}

static wm_status_t gn_run(wm_op_ctx_t *ctx) {
  int64_t groups;
  WM_RETURN_IF_ERROR(gn_setup(ctx, &groups));
  double eps;
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  const wm_tensor_t *xt = ctx->in[0];
  size_t n = (size_t)xt->shape.dims[0], c = (size_t)xt->shape.dims[1];
  size_t g = (size_t)groups, cg = c / g;
  size_t inner = nn_prod(xt->shape.dims + 2, xt->shape.rank - 2);
  size_t span = cg * inner;
  bool per_channel = ctx->opset >= 21;
  double *x = NULL, *sc = NULL, *bi = NULL;
  wm_status_t st = nn_load_f64(ctx, xt, &x);
  if (!st) {
    st = nn_load_f64(ctx, ctx->in[1], &sc);
  }
  if (!st) {
    st = nn_load_f64(ctx, ctx->in[2], &bi);
  }
  if (st) {
    goto done;
  }
  for (size_t b = 0; b < n; b++) {
    for (size_t gi = 0; gi < g; gi++) {
      double *xp = x + (b * c + gi * cg) * inner;
      double mean, inv;
      nn_moments(xp, span, eps, &mean, &inv);
      for (size_t j = 0; j < span; j++) {
        size_t k = per_channel ? gi * cg + j / inner : gi;
        xp[j] = (xp[j] - mean) * inv * sc[k] + bi[k];
      }
    }
  }
  nn_store_f64(ctx->out[0], x);
done:
  free(x);
  free(sc);
  free(bi);
  return st;
}

static void gn_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  norm_cost(ctx, 8, 0, out);
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  int64_t g = wm_node_attr_int(ctx->node, "num_groups", 1);
  if (xs->rank >= 1 && xs->dims[0] >= 0 && g > 0) {
    out->transcendentals = (double)xs->dims[0] * (double)g;
  }
}

// ------------------------------------------------- compute definitions

// BatchNormalization in inference: (x - mean) / sqrt(var + epsilon) *
// scale + B, the parameters per channel (dim 1).
static wm_status_t bn_define(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  bool training = false, spatial = true;
  WM_RETURN_IF_ERROR(bn_setup((wm_op_ctx_t *)ctx, &training, &spatial));
  double eps;
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "epsilon", 1e-5, &eps));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  bool ok = wm_op_define_float(ctx) && !training && spatial &&
            ctx->n_out == 1 && xs->rank >= 2;
  for (int32_t i = 1; ok && i < 5; i++) {
    const wm_shape_t *s = wm_op_in_shape(ctx, i);
    ok = wm_op_in_dtype(ctx, i) == WM_DTYPE_FLOAT && s->rank == 1 &&
         s->dims[0] == xs->dims[1];
  }
  if (!ok) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (inference, "
                       "float32 of known shape, parameters per channel)");
  }
  WM_RETURN_IF_ERROR(
      wm_gen_begin(out, "BatchNormalization", xs->rank, xs->dims, NULL));
  int32_t loads[5];
  static const char *const names[5] = {"X", "scale", "B", "mean", "var"};
  for (int32_t i = 0; i < 5; i++) {
    wm_gen_access_t acc;
    memset(&acc, 0, sizeof(acc));
    const wm_shape_t *s = wm_op_in_shape(ctx, i);
    for (int32_t d = 0; d < s->rank; d++) {
      acc.coef[d][i == 0 ? d : 1] = 1;
    }
    WM_RETURN_IF_ERROR(wm_gen_input_access(out, names[i], s->rank, s->dims,
                                           NULL, &acc, &loads[i]));
    out->tensors[out->n_tensors - 1].operand = i;
  }
  wm_gen_builder_t b = {out, NULL};
  int32_t inv =
      wm_gen_f1(&b, WM_GEN_SQRT,
                wm_gen_f2(&b, WM_GEN_ADD, loads[4], wm_gen_k(&b, (float)eps)));
  int32_t y = wm_gen_f2(
      &b, WM_GEN_ADD,
      wm_gen_f2(&b, WM_GEN_MUL,
                wm_gen_f2(&b, WM_GEN_DIV,
                          wm_gen_f2(&b, WM_GEN_SUB, loads[0], loads[3]), inv),
                loads[1]),
      loads[2]);
  WM_RETURN_IF_ERROR(b.st);
  return wm_gen_finish(out, y);
}

// LRN: x / (bias + alpha / size * sum of x^2 over the channel window)^beta,
// the window a reduce axis reading channels c - floor((size-1)/2) on,
// guarded (0 outside).
static wm_status_t lrn_define(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  lrn_t l = {1, 0, 0, 0};
  WM_RETURN_IF_ERROR(lrn_setup((wm_op_ctx_t *)ctx, &l));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  if (!wm_op_define_float(ctx) || xs->rank < 2 ||
      xs->rank + 1 > WM_GEN_MAX_AXES) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 of "
                       "known shape)");
  }
  WM_RETURN_IF_ERROR(wm_gen_begin(out, "LRN", xs->rank, xs->dims, NULL));
  int32_t j, xw, x;
  WM_RETURN_IF_ERROR(wm_gen_reduce_axis(out, "j", l.size, &j));
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  for (int32_t d = 0; d < xs->rank; d++) {
    acc.coef[d][d] = 1;
  }
  acc.coef[1][j] = 1;
  acc.off[1] = -((l.size - 1) / 2);
  acc.guard = true;
  WM_RETURN_IF_ERROR(
      wm_gen_input_access(out, "X", xs->rank, xs->dims, NULL, &acc, &xw));
  out->tensors[out->n_tensors - 1].operand = 0;
  acc.coef[1][j] = 0;
  acc.off[1] = 0;
  acc.guard = false;
  WM_RETURN_IF_ERROR(
      wm_gen_input_access(out, "X1", xs->rank, xs->dims, NULL, &acc, &x));
  out->tensors[out->n_tensors - 1].operand = 0;
  wm_gen_builder_t b = {out, NULL};
  int32_t body = wm_gen_f2(&b, WM_GEN_MUL, xw, xw), a;
  WM_RETURN_IF_ERROR(b.st);
  WM_RETURN_IF_ERROR(wm_gen_acc(out, &a));
  int32_t den = wm_gen_f2(
      &b, WM_GEN_POW,
      wm_gen_f2(&b, WM_GEN_ADD, wm_gen_k(&b, (float)l.bias),
                wm_gen_f2(&b, WM_GEN_MUL,
                          wm_gen_k(&b, (float)(l.alpha / (double)l.size)), a)),
      wm_gen_k(&b, (float)l.beta));
  int32_t y = wm_gen_f2(&b, WM_GEN_DIV, x, den);
  WM_RETURN_IF_ERROR(b.st);
  return wm_gen_finish_reduce(out, WM_GEN_ADD, 0.0f, body, y);
}

// ------------------------------------------------------------------ table

const wm_op_def_t wm_ops_norm[] = {
    {"LRN", "", 1, 1, 1, 1, 1, WM_TYPES_FLOAT, lrn_infer, lrn_run, lrn_cost, 0,
     NULL, lrn_define},
    {"BatchNormalization", "", 1, 5, 5, 1, 5, WM_TYPES_FLOAT, bn_infer, bn_run,
     bn_cost, 0, bn_resolve, bn_define},
    {"BatchNormalization", "", 14, 5, 5, 1, 3, WM_TYPES_FLOAT, bn_infer, bn_run,
     bn_cost, 0, bn_resolve, bn_define},
    {"LayerNormalization", "", 17, 2, 3, 1, 3, WM_TYPES_FLOAT, ln_infer, ln_run,
     ln_cost, 0, ln_resolve, NULL, ln_define},
    // The same operator at any opset: what the layernorm pass writes for
    // the nodes exporters spell it with before opset 17.
    {"LayerNormalization", "wmap", 1, 2, 3, 1, 3, WM_TYPES_FLOAT, ln_infer,
     ln_run, ln_cost, 0, ln_resolve, NULL, ln_define},
    {"LpNormalization", "", 1, 1, 1, 1, 1, WM_TYPES_FLOAT, lpn_infer, lpn_run,
     lpn_cost},
    {"GroupNormalization", "", 18, 3, 3, 1, 1, WM_TYPES_FLOAT, gn_infer, gn_run,
     gn_cost},
    {"InstanceNormalization", "", 1, 3, 3, 1, 1, WM_TYPES_FLOAT, in_infer,
     in_run, in_cost, 0, in_resolve},
    {"MeanVarianceNormalization", "", 9, 1, 1, 1, 1, WM_TYPES_FLOAT, mvn_infer,
     mvn_run, mvn_cost},
    WM_OPS_END,
};
