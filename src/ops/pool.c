// Pooling: MaxPool, AveragePool, LpPool and their global forms, with their
// compute definitions (reductions over the window). Reference loops in
// double.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn.h"

// --------------------------------------------------------------- pooling

typedef enum pool_kind {
  POOL_MAX = 0,
  POOL_AVG = 1,
  POOL_LP = 2,
} pool_kind_t;

// What a pooling node computes, from its op type and attributes.
typedef struct pool {
  pool_kind_t kind;          // max, average or Lp norm
  bool global;               // window is the whole spatial extent
  bool count_include_pad;    // AveragePool divisor counts padding
  double p;                  // LpPool exponent
  int64_t storage_order;     // MaxPool Indices: 0 row-major, 1 column-major
  window_t w;                // the window (kernel = input dims if global)
  int64_t in[MAX_SPATIAL];   // input spatial dims
  int64_t out[MAX_SPATIAL];  // output spatial dims
  bool known_rank;           // input rank known (else outputs unknown)
} pool_t;

static wm_status_t pool_setup(wm_op_ctx_t *ctx, pool_kind_t kind, bool global,
                              pool_t *pl) {
  memset(pl, 0, sizeof(*pl));
  pl->kind = kind;
  pl->global = global;
  pl->p = 2;
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  WM_RETURN_IF_ERROR(nn_check_rank(ctx, 0, global ? 2 : 3, WM_MAX_RANK));
  if (kind == POOL_LP) {
    const wm_attr_t *a = wm_node_attr(ctx->node, "p");
    if (a && a->type == WM_ATTR_FLOAT) {  // opset 1 had a float p
      pl->p = a->f;
    } else {
      int64_t p;
      WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "p", 2, &p));
      pl->p = (double)p;
    }
    if (!(pl->p > 0) || isinf(pl->p)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute p is %g, want a positive number", pl->p);
    }
  }
  if (xs->rank < 0) {
    return NULL;
  }
  pl->known_rank = true;
  int32_t nsp = xs->rank - 2;
  for (int32_t i = 0; i < nsp; i++) {
    pl->in[i] = xs->dims[2 + i];
  }
  if (global) {
    pl->w.nsp = nsp;
    for (int32_t i = 0; i < nsp; i++) {
      pl->w.kernel[i] = pl->in[i];
      pl->w.strides[i] = 1;
      pl->w.dilations[i] = 1;
      pl->out[i] = 1;
    }
    return NULL;
  }
  WM_RETURN_IF_ERROR(nn_window_parse(ctx, nsp, NULL, &pl->w));
  if (kind == POOL_AVG) {
    int64_t cip;
    WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "count_include_pad", 0, &cip));
    pl->count_include_pad = cip != 0;
  }
  if (kind == POOL_MAX) {
    WM_RETURN_IF_ERROR(
        wm_op_attr_int(ctx, "storage_order", 0, &pl->storage_order));
    if (pl->storage_order != 0 && pl->storage_order != 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute storage_order is %lld, want 0 or 1",
                         (long long)pl->storage_order);
    }
  }
  return nn_window_forward(ctx, &pl->w, pl->in, pl->out);
}

static wm_status_t pool_infer(wm_op_ctx_t *ctx, pool_kind_t kind, bool global) {
  pool_t pl;
  WM_RETURN_IF_ERROR(pool_setup(ctx, kind, global, &pl));
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (!pl.known_rank) {
    wm_op_set_out_unknown(ctx, 0, dt);
    wm_op_set_out_unknown(ctx, 1, WM_DTYPE_INT64);
    return NULL;
  }
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  wm_shape_t os = *xs;
  for (int32_t i = 0; i < pl.w.nsp; i++) {
    os.dims[2 + i] = pl.out[i];
  }
  WM_RETURN_IF_ERROR(wm_op_set_out_checked(ctx, 0, dt, &os));
  return wm_op_set_out_checked(ctx, 1, WM_DTYPE_INT64, &os);
}

// The pooling core shared by the Max, Average, Lp and Global pools.
static wm_status_t pool_run(wm_op_ctx_t *ctx, pool_kind_t kind, bool global) {
  pool_t pl;
  WM_RETURN_IF_ERROR(pool_infer(ctx, kind, global));
  WM_RETURN_IF_ERROR(pool_setup(ctx, kind, global, &pl));
  const window_t *w = &pl.w;
  const wm_tensor_t *xt = ctx->in[0];
  wm_tensor_t *it = wm_op_has_output(ctx, 1) ? ctx->out[1] : NULL;
  int32_t nsp = w->nsp;
  // The max of a window holding only padding (possible with dilations or
  // large pads) is the lowest value of the dtype.
  double lowest = -INFINITY;
  if (wm_dtype_is_int(xt->dtype)) {
    lowest = wm_dtype_is_unsigned(xt->dtype)
                 ? 0.0
                 : -ldexp(1.0, (int)(8 * wm_dtype_size(xt->dtype)) - 1);
  }
  size_t planes = (size_t)xt->shape.dims[0] * (size_t)xt->shape.dims[1];
  size_t in_n = nn_prod(pl.in, nsp), out_n = nn_prod(pl.out, nsp);
  double *x = NULL, *y = NULL;
  int64_t *taps = NULL;
  size_t nt = 0;
  wm_status_t st = nn_load_f64(ctx, xt, &x);
  if (!st) {
    st = nn_alloc_f64(ctx, ctx->out[0]->count, &y);
  }
  if (!st) {
    st = nn_window_taps(ctx, w, &taps, &nt);
  }
  if (st) {
    goto done;
  }
  for (size_t pi = 0; pi < planes; pi++) {
    const double *xp = x + pi * in_n;
    int64_t pos[MAX_SPATIAL] = {0};
    for (size_t o = 0; o < out_n; o++, nn_odometer_next(pos, pl.out, nsp)) {
      double acc = 0, best = -INFINITY;
      int64_t best_idx = -1;
      size_t valid = 0, padded = 0;
      for (size_t t = 0; t < nt; t++) {
        size_t off = 0;
        bool inside = true, in_pad = true;
        int64_t q[MAX_SPATIAL];
        for (int32_t i = 0; i < nsp; i++) {
          q[i] = pos[i] * w->strides[i] - w->pads[i] +
                 taps[t * (size_t)nsp + (size_t)i];
          if (q[i] < 0 || q[i] >= pl.in[i]) {
            inside = false;
            if (q[i] < -w->pads[i] || q[i] >= pl.in[i] + w->pads[nsp + i]) {
              in_pad = false;
            }
          } else {
            off = off * (size_t)pl.in[i] + (size_t)q[i];
          }
        }
        if (!inside) {
          padded += in_pad;
          continue;
        }
        double v = xp[off];
        valid++;
        if (kind == POOL_MAX) {
          if (valid == 1 || v > best || (v != v && best == best)) {
            best = v;
            if (pl.storage_order == 0) {
              best_idx = (int64_t)off;
            } else {
              int64_t cm = 0, stride = 1;
              for (int32_t i = 0; i < nsp; i++) {
                cm += q[i] * stride;
                stride *= pl.in[i];
              }
              best_idx = cm;
            }
          }
        } else if (kind == POOL_AVG) {
          acc += v;
        } else {
          acc += pow(fabs(v), pl.p);
        }
      }
      double r;
      if (kind == POOL_MAX) {
        r = valid ? best : lowest;
      } else if (kind == POOL_AVG) {
        size_t div = valid + (pl.count_include_pad ? padded : 0);
        r = div ? acc / (double)div : NAN;
      } else {
        r = pow(acc, 1.0 / pl.p);
      }
      y[pi * out_n + o] = r;
      if (it) {
        wm_tensor_set_i64(it, pi * out_n + o,
                          best_idx < 0 ? -1 : (int64_t)(pi * in_n) + best_idx);
      }
    }
  }
  nn_store_f64(ctx->out[0], y);
done:
  free(x);
  free(y);
  free(taps);
  return st;
}

static void pool_cost(const wm_op_ctx_t *ctx, pool_kind_t kind, bool global,
                      wm_op_cost_t *out) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  double outs = nn_numel_f(&ctx->out_types[0].shape);
  double win = -1;
  if (global) {
    win = xs->rank >= 2 ? nn_prod_f(xs->dims + 2, xs->rank - 2) : -1;
  } else {
    const int64_t *k;
    size_t n;
    wm_status_t st = wm_op_attr_ints(ctx, "kernel_shape", &k, &n);
    if (st) {
      wm_status_free(st);
    } else if (k) {
      win = nn_prod_f(k, (int32_t)(n < MAX_SPATIAL ? n : MAX_SPATIAL));
    }
  }
  if (outs < 0 || win < 0) {
    return;
  }
  out->flops = outs * win;
  if (kind == POOL_LP) {
    out->flops *= 2;                           // |x| and the sum
    out->transcendentals = outs * win + outs;  // pow per tap, root
  } else if (kind == POOL_AVG) {
    out->flops += outs;  // the division
  }
}

// Parameters of the windowed pools: the window (ceil_mode applied: the
// output dims and end pads say where windows stop), and count_include_pad
// (AveragePool), storage_order (MaxPool) or p (LpPool); GlobalLpPool's p.
static wm_status_t pool_resolve(wm_op_ctx_t *ctx, pool_kind_t kind, bool global,
                                wm_op_params_t *out) {
  pool_t pl;
  WM_RETURN_IF_ERROR(pool_setup(ctx, kind, global, &pl));
  out->pending = !pl.known_rank;
  if (global) {
    return wm_op_param_float(ctx, out, "p", pl.p);
  }
  WM_RETURN_IF_ERROR(nn_window_params(ctx, &pl.w, out));
  if (kind == POOL_AVG) {
    return wm_op_param_int(ctx, out, "count_include_pad", pl.count_include_pad);
  }
  if (kind == POOL_MAX) {
    return wm_op_param_int(ctx, out, "storage_order", pl.storage_order);
  }
  return wm_op_param_float(ctx, out, "p", pl.p);
}
static wm_status_t maxpool_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  return pool_resolve(ctx, POOL_MAX, false, out);
}
static wm_status_t avgpool_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  return pool_resolve(ctx, POOL_AVG, false, out);
}
static wm_status_t lppool_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  return pool_resolve(ctx, POOL_LP, false, out);
}
static wm_status_t glppool_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  return pool_resolve(ctx, POOL_LP, true, out);
}

#define POOL_FNS(NAME, KIND, GLOBAL)                                   \
  static wm_status_t NAME##_infer(wm_op_ctx_t *ctx) {                  \
    return pool_infer(ctx, KIND, GLOBAL);                              \
  }                                                                    \
  static wm_status_t NAME##_run(wm_op_ctx_t *ctx) {                    \
    return pool_run(ctx, KIND, GLOBAL);                                \
  }                                                                    \
  static void NAME##_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) { \
    pool_cost(ctx, KIND, GLOBAL, out);                                 \
  }

POOL_FNS(maxpool, POOL_MAX, false)
POOL_FNS(avgpool, POOL_AVG, false)
POOL_FNS(lppool, POOL_LP, false)
POOL_FNS(gmaxpool, POOL_MAX, true)
POOL_FNS(gavgpool, POOL_AVG, true)
POOL_FNS(glppool, POOL_LP, true)

// ------------------------------------------------- compute definitions

// Pools as reductions over their window: an axis per output dim, one per
// window dim; X read at o * stride + k * dilation - pad, guarded with -inf
// (max) or 0 (average, whose divisor is then the window's size: with
// count_include_pad, or where no window leaves the input) or LpPool's
// (sum of |x|^p)^(1/p). Global pools reduce every spatial dim. MaxPool's
// indices have none.
static wm_status_t pool_define(const wm_op_ctx_t *ctx, pool_kind_t kind,
                               bool global, wm_gen_compute_t *out) {
  pool_t pl;
  WM_RETURN_IF_ERROR(pool_setup((wm_op_ctx_t *)ctx, kind, global, &pl));
  int32_t nsp = pl.w.nsp;
  bool padded = false;
  for (int32_t i = 0; !global && i < nsp; i++) {
    int64_t last = (pl.out[i] - 1) * pl.w.strides[i] +
                   (pl.w.kernel[i] - 1) * pl.w.dilations[i] - pl.w.pads[i];
    padded |= pl.w.pads[i] != 0 || last >= pl.in[i];
  }
  if (!wm_op_define_float(ctx) || !pl.known_rank || ctx->n_out > 1 ||
      2 + 2 * nsp > WM_GEN_MAX_AXES ||
      (kind == POOL_AVG && padded && !pl.count_include_pad) ||
      (kind == POOL_AVG && pl.w.ceil_mode)) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 of "
                       "known shape; average pools with a constant divisor)");
  }
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0), *ys = &ctx->out_types[0].shape;
  WM_RETURN_IF_ERROR(
      wm_gen_begin(out, ctx->node->op_type, ys->rank, ys->dims, NULL));
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  acc.coef[0][0] = 1;
  acc.coef[1][1] = 1;
  double taps = 1;
  for (int32_t i = 0; i < nsp; i++) {
    char name[16];
    int32_t k;
    snprintf(name, sizeof(name), "k%d", (int)i);
    WM_RETURN_IF_ERROR(wm_gen_reduce_axis(out, name, pl.w.kernel[i], &k));
    acc.coef[2 + i][2 + i] = global ? 0 : pl.w.strides[i];
    acc.coef[2 + i][k] = global ? 1 : pl.w.dilations[i];
    acc.off[2 + i] = global ? 0 : -pl.w.pads[i];
    taps *= (double)pl.w.kernel[i];
  }
  acc.guard = padded;
  acc.fill = kind == POOL_MAX ? -INFINITY : 0.0f;
  int32_t x, epi = -1;
  WM_RETURN_IF_ERROR(
      wm_gen_input_access(out, "X", xs->rank, xs->dims, NULL, &acc, &x));
  out->tensors[out->n_tensors - 1].operand = 0;
  wm_gen_builder_t b = {out, NULL};
  int32_t a = -1;
  if (kind != POOL_MAX) {
    WM_RETURN_IF_ERROR(wm_gen_acc(out, &a));
  }
  if (kind == POOL_AVG) {
    epi = wm_gen_f2(&b, WM_GEN_MUL, a, wm_gen_k(&b, (float)(1.0 / taps)));
  } else if (kind == POOL_LP) {  // (sum of |x|^p)^(1/p)
    x = wm_gen_f2(&b, WM_GEN_POW, wm_gen_f1(&b, WM_GEN_ABS, x),
                  wm_gen_k(&b, (float)pl.p));
    epi = wm_gen_f2(&b, WM_GEN_POW, a, wm_gen_k(&b, (float)(1.0 / pl.p)));
  }
  WM_RETURN_IF_ERROR(b.st);
  return wm_gen_finish_reduce(out, kind == POOL_MAX ? WM_GEN_MAX : WM_GEN_ADD,
                              kind == POOL_MAX ? -INFINITY : 0.0f, x, epi);
}
static wm_status_t maxpool_define(const wm_op_ctx_t *ctx,
                                  wm_gen_compute_t *out) {
  return pool_define(ctx, POOL_MAX, false, out);
}
static wm_status_t avgpool_define(const wm_op_ctx_t *ctx,
                                  wm_gen_compute_t *out) {
  return pool_define(ctx, POOL_AVG, false, out);
}
static wm_status_t gmaxpool_define(const wm_op_ctx_t *ctx,
                                   wm_gen_compute_t *out) {
  return pool_define(ctx, POOL_MAX, true, out);
}
static wm_status_t gavgpool_define(const wm_op_ctx_t *ctx,
                                   wm_gen_compute_t *out) {
  return pool_define(ctx, POOL_AVG, true, out);
}
static wm_status_t lppool_define(const wm_op_ctx_t *ctx,
                                 wm_gen_compute_t *out) {
  return pool_define(ctx, POOL_LP, false, out);
}
static wm_status_t glppool_define(const wm_op_ctx_t *ctx,
                                  wm_gen_compute_t *out) {
  return pool_define(ctx, POOL_LP, true, out);
}

// ------------------------------------------------------------------ table

#define T_MAXPOOL (WM_TYPES_FLOAT | WM_T(INT8) | WM_T(UINT8))

const wm_op_def_t wm_ops_pool[] = {
    {"MaxPool", "", 1, 1, 1, 1, 2, T_MAXPOOL, maxpool_infer, maxpool_run,
     maxpool_cost, 0, maxpool_resolve, maxpool_define},
    {"AveragePool", "", 1, 1, 1, 1, 1, WM_TYPES_FLOAT, avgpool_infer,
     avgpool_run, avgpool_cost, 0, avgpool_resolve, avgpool_define},
    {"LpPool", "", 1, 1, 1, 1, 1, WM_TYPES_FLOAT, lppool_infer, lppool_run,
     lppool_cost, 0, lppool_resolve, lppool_define},
    {"GlobalMaxPool", "", 1, 1, 1, 1, 1, WM_TYPES_FLOAT, gmaxpool_infer,
     gmaxpool_run, gmaxpool_cost, 0, NULL, gmaxpool_define},
    {"GlobalAveragePool", "", 1, 1, 1, 1, 1, WM_TYPES_FLOAT, gavgpool_infer,
     gavgpool_run, gavgpool_cost, 0, NULL, gavgpool_define},
    {"GlobalLpPool", "", 1, 1, 1, 1, 1, WM_TYPES_FLOAT, glppool_infer,
     glppool_run, glppool_cost, 0, glppool_resolve, glppool_define},
    WM_OPS_END,
};
