// Convolutions: Conv (and its compute definition: implicit GEMM over the
// output pixels), ConvTranspose, DeformConv and Col2Im. Reference loops in
// double.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn.h"

// ------------------------------------------------------------------ Conv

// Checks X and W of Conv and ConvTranspose (dtypes, ranks) and parses
// the window over their spatial dims into |w| and |in_sp| (-1 unknown);
// *out_known_rank is false, and nothing parsed, when both ranks are unknown.
static wm_status_t conv_window(wm_op_ctx_t *ctx, window_t *w, int64_t *in_sp,
                               bool *out_known_rank) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ws = wm_op_in_shape(ctx, 1);
  *out_known_rank = false;
  WM_RETURN_IF_ERROR(nn_check_same_dtype(ctx, 1));
  WM_RETURN_IF_ERROR(nn_check_same_dtype(ctx, 2));
  WM_RETURN_IF_ERROR(nn_check_rank(ctx, 0, 3, WM_MAX_RANK));
  WM_RETURN_IF_ERROR(nn_check_rank(ctx, 1, 3, WM_MAX_RANK));
  if (xs->rank >= 0 && ws->rank >= 0 && xs->rank != ws->rank) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has rank %d but weight has rank %d", xs->rank,
                       ws->rank);
  }
  int32_t rank = xs->rank >= 0 ? xs->rank : ws->rank;
  if (rank < 0) {
    return NULL;
  }
  *out_known_rank = true;
  int32_t nsp = rank - 2;
  int64_t wk[MAX_SPATIAL];
  for (int32_t i = 0; i < nsp; i++) {
    wk[i] = ws->rank >= 0 ? ws->dims[2 + i] : -1;
    in_sp[i] = xs->rank >= 0 ? xs->dims[2 + i] : -1;
  }
  WM_RETURN_IF_ERROR(nn_window_parse(ctx, nsp, wk, w));
  return NULL;
}

// Shapes of Conv: X [N, C, D...], W [M, C/group, K...], B [M].
static wm_status_t conv_setup(wm_op_ctx_t *ctx, window_t *w, int64_t *in_sp,
                              int64_t *out_sp, bool *out_known_rank) {
  WM_RETURN_IF_ERROR(conv_window(ctx, w, in_sp, out_known_rank));
  if (!*out_known_rank) {
    return NULL;
  }
  return nn_window_forward(ctx, w, in_sp, out_sp);
}

// Checks a grouped convolution's channels: input 0 has C = weight dim 1
// x |group| channels and the weight's output channels divide by |group|;
// unknown dims pass. *out_c and *out_m get C and M (-1 when unknown).
static wm_status_t check_groups(const wm_op_ctx_t *ctx, const wm_shape_t *xs,
                                const wm_shape_t *ws, int64_t group,
                                int64_t *out_c, int64_t *out_m) {
  int64_t c = xs->rank >= 0 ? xs->dims[1] : -1;
  int64_t m = ws->rank >= 0 ? ws->dims[0] : -1;
  int64_t cg = ws->rank >= 0 ? ws->dims[1] : -1;
  int64_t want;
  *out_c = c;
  *out_m = m;
  if (c >= 0 && cg >= 0 &&
      (!wm_checked_mul_i64(cg, group, &want) || want != c)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has %lld channels but weight has %lld "
                       "channels per group x group %lld",
                       (long long)c, (long long)cg, (long long)group);
  }
  if (m >= 0 && m % group != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "weight has %lld output channels, not a multiple of "
                       "group %lld",
                       (long long)m, (long long)group);
  }
  return NULL;
}

static wm_status_t conv_infer(wm_op_ctx_t *ctx) {
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL];
  bool known;
  WM_RETURN_IF_ERROR(conv_setup(ctx, &w, in_sp, out_sp, &known));
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (!known) {
    wm_op_set_out_unknown(ctx, 0, dt);
    return NULL;
  }
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ws = wm_op_in_shape(ctx, 1);
  int64_t group;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "group", 1, &group));
  if (group < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute group is %lld, want at least 1",
                       (long long)group);
  }
  int64_t c, m;
  WM_RETURN_IF_ERROR(check_groups(ctx, xs, ws, group, &c, &m));
  WM_RETURN_IF_ERROR(nn_check_vector(ctx, 2, "bias", m));
  wm_shape_t os;
  os.rank = w.nsp + 2;
  os.dims[0] = xs->rank >= 0 ? xs->dims[0] : -1;
  os.dims[1] = m;
  for (int32_t i = 0; i < w.nsp; i++) {
    os.dims[2 + i] = out_sp[i];
  }
  return wm_op_set_out_checked(ctx, 0, dt, &os);
}

static wm_status_t conv_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(conv_infer(ctx));
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL];
  bool known;
  WM_RETURN_IF_ERROR(conv_setup(ctx, &w, in_sp, out_sp, &known));
  const wm_tensor_t *xt = ctx->in[0], *wt = ctx->in[1];
  int64_t group;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "group", 1, &group));
  size_t n = (size_t)xt->shape.dims[0], c = (size_t)xt->shape.dims[1];
  size_t m = (size_t)wt->shape.dims[0], cg = (size_t)wt->shape.dims[1];
  size_t mg = m / (size_t)group;
  size_t in_n = nn_prod(in_sp, w.nsp), out_n = nn_prod(out_sp, w.nsp);
  conv_bufs_t bf;
  wm_status_t st = nn_conv_bufs_load(ctx, &w, &bf);
  if (st) {
    goto done;
  }
  const double *x = bf.x, *k = bf.k, *b = bf.b;
  double *y = bf.y;
  size_t nt = bf.nt;
  int32_t nsp = w.nsp;
  for (size_t in = 0; in < n; in++) {
    for (size_t om = 0; om < m; om++) {
      size_t g = om / mg;
      const double *xg = x + (in * c + g * cg) * in_n;
      const double *kg = k + om * cg * nt;
      double *yp = y + (in * m + om) * out_n;
      int64_t pos[MAX_SPATIAL] = {0};
      for (size_t o = 0; o < out_n; o++, nn_odometer_next(pos, out_sp, nsp)) {
        double acc = b ? b[om] : 0.0;
        for (size_t t = 0; t < nt; t++) {
          size_t off;
          if (!nn_tap_offset(&w, pos, bf.taps + t * (size_t)nsp, in_sp, &off)) {
            continue;
          }
          for (size_t ic = 0; ic < cg; ic++) {
            acc += xg[ic * in_n + off] * kg[ic * nt + t];
          }
        }
        yp[o] = acc;
      }
    }
  }
  nn_store_f64(ctx->out[0], y);
done:
  nn_conv_bufs_free(&bf);
  return st;
}

static void conv_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  const wm_shape_t *ys = &ctx->out_types[0].shape;
  const wm_shape_t *ws = wm_op_in_shape(ctx, 1);
  double outs = nn_numel_f(ys);
  double per = ws->rank >= 2 ? nn_prod_f(ws->dims + 1, ws->rank - 1) : -1;
  if (outs < 0 || per < 0) {
    return;
  }
  out->macs = outs * per;
  out->flops = 2 * out->macs + (wm_op_has_input(ctx, 2) ? outs : 0);
}

// The definition of a float convolution: the output seen as
// [N, G, M/G, O...] (its own bytes), X as [N, G, C/G, I...] read at
// o * stride + k * dilation - pad (guarded where padded), W as
// [G, M/G, C/G, K...], the bias in the epilogue. Its columns are the
// output pixels, its depth the channels and taps of a group: the packed
// template's implicit GEMM (depthwise, one row per group, runs as the loop
// nest).
static wm_status_t conv_define(const wm_op_ctx_t *ctx, wm_gen_compute_t *out) {
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL], group;
  bool known;
  WM_RETURN_IF_ERROR(conv_setup((wm_op_ctx_t *)ctx, &w, in_sp, out_sp, &known));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "group", 1, &group));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0), *ws = wm_op_in_shape(ctx, 1);
  if (!known || 4 + 2 * w.nsp > WM_GEN_MAX_AXES || w.nsp + 3 > WM_MAX_RANK ||
      !wm_op_define_float(ctx)) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition for this instance (float32 of "
                       "known shape, at most 4 spatial dims)");
  }
  int32_t nsp = w.nsp;
  int64_t mg = ws->dims[0] / group, cg = ws->dims[1];
  int64_t yd[WM_MAX_RANK] = {xs->dims[0], group, mg};
  for (int32_t i = 0; i < nsp; i++) {
    yd[3 + i] = out_sp[i];
  }
  WM_RETURN_IF_ERROR(wm_gen_begin(out, "Conv", 3 + nsp, yd, NULL));
  int32_t ac, ak[MAX_SPATIAL];
  WM_RETURN_IF_ERROR(wm_gen_reduce_axis(out, "c", cg, &ac));
  for (int32_t i = 0; i < nsp; i++) {
    char name[16];
    snprintf(name, sizeof(name), "k%d", (int)i);
    WM_RETURN_IF_ERROR(wm_gen_reduce_axis(out, name, ws->dims[2 + i], &ak[i]));
  }
  wm_gen_access_t x;
  memset(&x, 0, sizeof(x));
  int64_t xd[WM_MAX_RANK] = {xs->dims[0], group, cg};
  x.coef[0][0] = 1;
  x.coef[1][1] = 1;
  x.coef[2][ac] = 1;
  for (int32_t i = 0; i < nsp; i++) {
    xd[3 + i] = in_sp[i];
    x.coef[3 + i][3 + i] = w.strides[i];
    x.coef[3 + i][ak[i]] = w.dilations[i];
    x.off[3 + i] = -w.pads[i];
    x.guard |= w.pads[i] != 0 || w.pads[nsp + i] != 0;
  }
  int32_t lx, lw, body, epi = -1;
  WM_RETURN_IF_ERROR(wm_gen_input_access(out, "X", 3 + nsp, xd, NULL, &x, &lx));
  out->tensors[out->n_tensors - 1].operand = 0;
  wm_gen_access_t k;
  memset(&k, 0, sizeof(k));
  int64_t kd[WM_MAX_RANK] = {group, mg, cg};
  k.coef[0][1] = 1;
  k.coef[1][2] = 1;
  k.coef[2][ac] = 1;
  for (int32_t i = 0; i < nsp; i++) {
    kd[3 + i] = ws->dims[2 + i];
    k.coef[3 + i][ak[i]] = 1;
  }
  WM_RETURN_IF_ERROR(wm_gen_input_access(out, "W", 3 + nsp, kd, NULL, &k, &lw));
  out->tensors[out->n_tensors - 1].operand = 1;
  WM_RETURN_IF_ERROR(wm_gen_binary(out, WM_GEN_MUL, lx, lw, &body));
  if (wm_op_has_input(ctx, 2)) {
    wm_gen_access_t b;
    memset(&b, 0, sizeof(b));
    int64_t bd[2] = {group, mg};
    b.coef[0][1] = 1;
    b.coef[1][2] = 1;
    int32_t lb, acc;
    WM_RETURN_IF_ERROR(wm_gen_input_access(out, "B", 2, bd, NULL, &b, &lb));
    out->tensors[out->n_tensors - 1].operand = 2;
    WM_RETURN_IF_ERROR(wm_gen_acc(out, &acc));
    WM_RETURN_IF_ERROR(wm_gen_binary(out, WM_GEN_ADD, acc, lb, &epi));
  }
  return wm_gen_finish_reduce(out, WM_GEN_ADD, 0.0f, body, epi);
}

// Parameters: the window and group.
static wm_status_t conv_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL], group;
  bool known;
  WM_RETURN_IF_ERROR(conv_setup(ctx, &w, in_sp, out_sp, &known));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "group", 1, &group));
  out->pending = !known;
  WM_RETURN_IF_ERROR(nn_window_params(ctx, &w, out));
  return wm_op_param_int(ctx, out, "group", group);
}

// --------------------------------------------------------- ConvTranspose

// Shapes of ConvTranspose: X [N, C, D...], W [C, M/group, K...], B [M].
// Fills the window (pads resolved), output spatial dims and M.
static wm_status_t convt_setup(wm_op_ctx_t *ctx, window_t *w, int64_t *in_sp,
                               int64_t *out_sp, int64_t *out_m,
                               bool *out_known_rank) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ws = wm_op_in_shape(ctx, 1);
  *out_m = -1;
  WM_RETURN_IF_ERROR(conv_window(ctx, w, in_sp, out_known_rank));
  if (!*out_known_rank) {
    return NULL;
  }
  int32_t nsp = w->nsp;
  int64_t group;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "group", 1, &group));
  if (group < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute group is %lld, want at least 1",
                       (long long)group);
  }
  int64_t c = xs->rank >= 0 ? xs->dims[1] : -1;
  int64_t wc = ws->rank >= 0 ? ws->dims[0] : -1;
  if (c >= 0 && wc >= 0 && c != wc) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has %lld channels but weight has %lld",
                       (long long)c, (long long)wc);
  }
  int64_t cc = c >= 0 ? c : wc;
  if (cc >= 0 && cc % group != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "%lld input channels are not a multiple of group %lld",
                       (long long)cc, (long long)group);
  }
  if (ws->rank >= 0 && ws->dims[1] >= 0 &&
      !wm_checked_mul_i64(ws->dims[1], group, out_m)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "output channels %lld x group %lld overflow",
                       (long long)ws->dims[1], (long long)group);
  }
  WM_RETURN_IF_ERROR(nn_check_vector(ctx, 2, "bias", *out_m));

  int64_t outpad[MAX_SPATIAL], oshape[MAX_SPATIAL];
  WM_RETURN_IF_ERROR(
      wm_op_attr_ints_n(ctx, "output_padding", nsp, 0, 0, outpad, NULL));
  const int64_t *osv;
  size_t osn;
  WM_RETURN_IF_ERROR(wm_op_attr_ints(ctx, "output_shape", &osv, &osn));
  if (osv) {
    // Exporters give either the spatial dims or the whole shape.
    if (osn != (size_t)nsp && osn != (size_t)nsp + 2) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute output_shape has %zu values, want %d", osn,
                         nsp);
    }
    for (int32_t i = 0; i < nsp; i++) {
      oshape[i] = osv[osn - (size_t)nsp + (size_t)i];
      if (oshape[i] < 1) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "attribute output_shape[%d] is %lld, want at "
                           "least 1",
                           i, (long long)oshape[i]);
      }
    }
  }
  for (int32_t i = 0; i < nsp; i++) {
    out_sp[i] = -1;
    if (in_sp[i] < 0 || w->kernel[i] < 0) {
      continue;
    }
    if (in_sp[i] < 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 0 spatial dim %d is %lld, want at least 1", i,
                         (long long)in_sp[i]);
    }
    // full = stride * (in - 1) + output_padding + extent
    int64_t ext, full;
    if (!nn_window_extent(w, i, &ext) ||
        !wm_checked_mul_i64(w->strides[i], in_sp[i] - 1, &full) ||
        !nn_add_i64(full, outpad[i], &full) || !nn_add_i64(full, ext, &full)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "output size overflows in spatial dim %d", i);
    }
    bool same = w->auto_pad == AUTO_PAD_SAME_UPPER ||
                w->auto_pad == AUTO_PAD_SAME_LOWER;
    if (osv || same) {
      int64_t o = oshape[i];
      if (!osv && !wm_checked_mul_i64(in_sp[i], w->strides[i], &o)) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "output size overflows in spatial dim %d", i);
      }
      int64_t total = full - o;  // both >= 1: no overflow
      int64_t begin = w->auto_pad == AUTO_PAD_SAME_UPPER
                          ? nn_floor_half(total)
                          : total - nn_floor_half(total);
      w->pads[i] = begin;
      w->pads[nsp + i] = total - begin;
      out_sp[i] = o;
      continue;
    }
    int64_t o;
    if (__builtin_sub_overflow(full, w->pads[i], &o) ||
        __builtin_sub_overflow(o, w->pads[nsp + i], &o) || o < 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "pads %lld and %lld leave output size %lld in "
                         "spatial dim %d",
                         (long long)w->pads[i], (long long)w->pads[nsp + i],
                         (long long)o, i);
    }
    out_sp[i] = o;
  }
  return NULL;
}

static wm_status_t convt_infer(wm_op_ctx_t *ctx) {
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL], m;
  bool known;
  WM_RETURN_IF_ERROR(convt_setup(ctx, &w, in_sp, out_sp, &m, &known));
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (!known) {
    wm_op_set_out_unknown(ctx, 0, dt);
    return NULL;
  }
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  wm_shape_t os;
  os.rank = w.nsp + 2;
  os.dims[0] = xs->rank >= 0 ? xs->dims[0] : -1;
  os.dims[1] = m;
  for (int32_t i = 0; i < w.nsp; i++) {
    os.dims[2 + i] = out_sp[i];
  }
  return wm_op_set_out_checked(ctx, 0, dt, &os);
}

static wm_status_t convt_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(convt_infer(ctx));
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL], mm;
  bool known;
  WM_RETURN_IF_ERROR(convt_setup(ctx, &w, in_sp, out_sp, &mm, &known));
  const wm_tensor_t *xt = ctx->in[0], *wt = ctx->in[1];
  int64_t group;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "group", 1, &group));
  size_t n = (size_t)xt->shape.dims[0], c = (size_t)xt->shape.dims[1];
  size_t m = (size_t)mm, mg = (size_t)wt->shape.dims[1];
  size_t cg = c / (size_t)group;
  size_t in_n = nn_prod(in_sp, w.nsp), out_n = nn_prod(out_sp, w.nsp);
  conv_bufs_t bf;
  wm_status_t st = nn_conv_bufs_load(ctx, &w, &bf);
  if (st) {
    goto done;
  }
  const double *x = bf.x, *k = bf.k, *b = bf.b;
  double *y = bf.y;
  size_t nt = bf.nt;
  int32_t nsp = w.nsp;
  // Each input element scatters x * W into the output window it covers.
  for (size_t in = 0; in < n; in++) {
    for (size_t ic = 0; ic < c; ic++) {
      size_t g = ic / cg;
      const double *xp = x + (in * c + ic) * in_n;
      const double *kp = k + ic * mg * nt;
      double *yg = y + (in * m + g * mg) * out_n;
      int64_t pos[MAX_SPATIAL] = {0};
      for (size_t p = 0; p < in_n; p++, nn_odometer_next(pos, in_sp, nsp)) {
        double xv = xp[p];
        for (size_t t = 0; t < nt; t++) {
          size_t off;
          if (!nn_tap_offset(&w, pos, bf.taps + t * (size_t)nsp, out_sp,
                             &off)) {
            continue;
          }
          for (size_t oc = 0; oc < mg; oc++) {
            yg[oc * out_n + off] += xv * kp[oc * nt + t];
          }
        }
      }
    }
  }
  if (b) {
    for (size_t in = 0; in < n; in++) {
      for (size_t om = 0; om < m; om++) {
        double *yp = y + (in * m + om) * out_n;
        for (size_t o = 0; o < out_n; o++) {
          yp[o] += b[om];
        }
      }
    }
  }
  nn_store_f64(ctx->out[0], y);
done:
  nn_conv_bufs_free(&bf);
  return st;
}

static void convt_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ws = wm_op_in_shape(ctx, 1);
  double ins = nn_numel_f(xs);
  double per = ws->rank >= 2 ? nn_prod_f(ws->dims + 1, ws->rank - 1) : -1;
  double outs = nn_numel_f(&ctx->out_types[0].shape);
  if (ins < 0 || per < 0) {
    return;
  }
  out->macs = ins * per;
  out->flops = 2 * out->macs;
  if (wm_op_has_input(ctx, 2) && outs > 0) {
    out->flops += outs;
  }
}

// Parameters: the window (pads from auto_pad or output_shape, which may
// then be negative where the output is longer than the full result) and
// group.
static wm_status_t convt_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL], m, group;
  bool known;
  WM_RETURN_IF_ERROR(convt_setup(ctx, &w, in_sp, out_sp, &m, &known));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "group", 1, &group));
  out->pending = !known;
  WM_RETURN_IF_ERROR(nn_window_params(ctx, &w, out));
  return wm_op_param_int(ctx, out, "group", group);
}

// ----------------------------------------------------------------- Col2Im

// Col2Im geometry: the image and block shapes (from inputs 1 and 2) and
// the window over them.
typedef struct col2im {
  int32_t nsp;                  // spatial dims; -1 when unknown
  bool known;                   // image and block shapes are known
  int64_t image[MAX_SPATIAL];   // output spatial dims
  int64_t blocks[MAX_SPATIAL];  // sliding block positions per dim
  window_t w;                   // kernel = block shape, pads, strides...
} col2im_t;

static wm_status_t col2im_setup(const wm_op_ctx_t *ctx, col2im_t *g) {
  memset(g, 0, sizeof(*g));
  g->nsp = -1;
  WM_RETURN_IF_ERROR(nn_check_rank(ctx, 0, 3, 3));
  for (int32_t i = 1; i < 3; i++) {
    wm_dtype_t d = wm_op_in_dtype(ctx, i);
    if (d != WM_DTYPE_UNDEFINED && d != WM_DTYPE_INT64) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d has dtype %s, want int64", i,
                         wm_dtype_name(d));
    }
    WM_RETURN_IF_ERROR(
        nn_check_vector(ctx, i, i == 1 ? "image_shape" : "block_shape", -1));
    const wm_shape_t *s = wm_op_in_shape(ctx, i);
    if (s->rank == 1 && s->dims[0] >= 0) {
      if (s->dims[0] < 1 || s->dims[0] > MAX_SPATIAL) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "input %d has %lld values, want 1 to %d", i,
                           (long long)s->dims[0], MAX_SPATIAL);
      }
      if (g->nsp >= 0 && g->nsp != (int32_t)s->dims[0]) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "image_shape has %d values but block_shape has "
                           "%lld",
                           g->nsp, (long long)s->dims[0]);
      }
      g->nsp = (int32_t)s->dims[0];
    }
  }
  if (g->nsp < 0) {
    return NULL;
  }
  window_t *w = &g->w;
  w->nsp = g->nsp;
  WM_RETURN_IF_ERROR(
      wm_op_attr_ints_n(ctx, "strides", g->nsp, 1, 1, w->strides, NULL));
  WM_RETURN_IF_ERROR(
      wm_op_attr_ints_n(ctx, "dilations", g->nsp, 1, 1, w->dilations, NULL));
  WM_RETURN_IF_ERROR(
      wm_op_attr_ints_n(ctx, "pads", 2 * g->nsp, 0, 0, w->pads, NULL));
  if (!ctx->in[1] || !ctx->in[2]) {
    return NULL;
  }
  for (int32_t i = 0; i < g->nsp; i++) {
    g->image[i] = wm_tensor_get_i64(ctx->in[1], (size_t)i);
    w->kernel[i] = wm_tensor_get_i64(ctx->in[2], (size_t)i);
    if (g->image[i] < 1 || w->kernel[i] < 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "image_shape[%d] is %lld and block_shape[%d] is "
                         "%lld, want both at least 1",
                         i, (long long)g->image[i], i, (long long)w->kernel[i]);
    }
  }
  WM_RETURN_IF_ERROR(nn_window_forward(ctx, w, g->image, g->blocks));
  g->known = true;
  return NULL;
}

static wm_status_t col2im_infer(wm_op_ctx_t *ctx) {
  col2im_t g;
  WM_RETURN_IF_ERROR(col2im_setup(ctx, &g));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (g.nsp < 0) {
    wm_op_set_out_unknown(ctx, 0, dt);
    return NULL;
  }
  wm_shape_t ys;
  ys.rank = g.nsp + 2;
  ys.dims[0] = xs->rank == 3 ? xs->dims[0] : -1;
  ys.dims[1] = -1;
  for (int32_t i = 0; i < g.nsp; i++) {
    ys.dims[2 + i] = g.known ? g.image[i] : -1;
  }
  if (g.known) {
    int64_t k = 1, l = 1;
    for (int32_t i = 0; i < g.nsp; i++) {
      if (!wm_checked_mul_i64(k, g.w.kernel[i], &k) ||
          !wm_checked_mul_i64(l, g.blocks[i], &l)) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "block_shape or block count overflows");
      }
    }
    int64_t ck = xs->rank == 3 ? xs->dims[1] : -1;
    int64_t len = xs->rank == 3 ? xs->dims[2] : -1;
    if (ck >= 0 && ck % k != 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 0 dim 1 is %lld, not a multiple of the "
                         "block size %lld",
                         (long long)ck, (long long)k);
    }
    if (len >= 0 && len != l) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input 0 dim 2 is %lld, want %lld sliding blocks",
                         (long long)len, (long long)l);
    }
    ys.dims[1] = ck >= 0 ? ck / k : -1;
  }
  return wm_op_set_out_checked(ctx, 0, dt, &ys);
}

// Adds every block column into the image: each input element lands on at
// most one image element, so the work is linear in the input.
static wm_status_t col2im_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(col2im_infer(ctx));
  col2im_t g;
  WM_RETURN_IF_ERROR(col2im_setup(ctx, &g));
  const wm_tensor_t *xt = ctx->in[0];
  wm_tensor_t *yt = ctx->out[0];
  if (yt->count == 0) {
    return NULL;  // nothing to add; the block shape may be huge
  }
  int32_t nsp = g.nsp;
  size_t nc = (size_t)yt->shape.dims[0] * (size_t)yt->shape.dims[1];
  size_t img = nn_prod(g.image, nsp), nb = nn_prod(g.blocks, nsp);
  int64_t *taps = NULL;
  size_t nt;
  WM_RETURN_IF_ERROR(nn_window_taps(ctx, &g.w, &taps, &nt));
  bool is_int = wm_dtype_is_int(xt->dtype);
  double *acc = NULL;
  int64_t *iacc = NULL;
  wm_status_t st = NULL;
  if (is_int) {
    iacc = wm_calloc(yt->count ? yt->count : 1, sizeof(int64_t));
    if (!iacc) {
      st = WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for %zu elements", yt->count);
    }
  } else {
    st = nn_alloc_f64(ctx, yt->count, &acc);
  }
  if (st) {
    free(taps);
    return st;
  }
  for (size_t plane = 0; plane < nc; plane++) {
    for (size_t t = 0; t < nt; t++) {
      size_t src = (plane * nt + t) * nb;
      int64_t pos[MAX_SPATIAL] = {0};
      for (size_t b = 0; b < nb; b++, nn_odometer_next(pos, g.blocks, nsp)) {
        size_t off;
        if (!nn_tap_offset(&g.w, pos, taps + t * (size_t)nsp, g.image, &off)) {
          continue;
        }
        size_t dst = plane * img + off;
        if (is_int) {
          iacc[dst] += wm_tensor_get_i64(xt, src + b);
        } else {
          acc[dst] += wm_tensor_get_f64(xt, src + b);
        }
      }
    }
  }
  for (size_t i = 0; i < yt->count; i++) {
    if (is_int) {
      wm_tensor_set_i64(yt, i, iacc[i]);
    } else {
      wm_tensor_set_f64(yt, i, acc[i]);
    }
  }
  free(acc);
  free(iacc);
  free(taps);
  return NULL;
}

static void col2im_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  double n = nn_numel_f(wm_op_in_shape(ctx, 0));
  out->flops = n > 0 ? n : 0;  // one add per input element
}

// ------------------------------------------------------------- DeformConv

// DeformConv: X [N, C, D...], W [M, C/group, K...], offset [N,
// offset_group * nn_prod(K) * nsp, O...], B [M], mask [N, offset_group *
// nn_prod(K), O...]. Each tap samples X multilinearly at its deformed
// position, with zeros outside the image.
static wm_status_t dc_setup(wm_op_ctx_t *ctx, window_t *w, int64_t *in_sp,
                            int64_t *out_sp, bool *out_known,
                            int64_t *out_group, int64_t *out_ogroup) {
  WM_RETURN_IF_ERROR(conv_setup(ctx, w, in_sp, out_sp, out_known));
  WM_RETURN_IF_ERROR(nn_check_same_dtype(ctx, 3));
  WM_RETURN_IF_ERROR(nn_check_same_dtype(ctx, 4));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "group", 1, out_group));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "offset_group", 1, out_ogroup));
  if (*out_group < 1 || *out_ogroup < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attributes group %lld and offset_group %lld, want "
                       "both at least 1",
                       (long long)*out_group, (long long)*out_ogroup);
  }
  if (!*out_known) {
    return NULL;
  }
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ws = wm_op_in_shape(ctx, 1);
  int64_t group = *out_group, og = *out_ogroup;
  int64_t c, m;
  WM_RETURN_IF_ERROR(check_groups(ctx, xs, ws, group, &c, &m));
  if (c >= 0 && c % og != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has %lld channels, not a multiple of "
                       "offset_group %lld",
                       (long long)c, (long long)og);
  }
  WM_RETURN_IF_ERROR(nn_check_vector(ctx, 3, "B", m));
  // Channels of offset and mask when the kernel is known.
  int64_t k = 1;
  bool k_known = true;
  for (int32_t i = 0; i < w->nsp; i++) {
    k_known = k_known && w->kernel[i] >= 0;
    if (k_known && !wm_checked_mul_i64(k, w->kernel[i], &k)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "kernel is too large");
    }
  }
  int64_t mask_c = -1, off_c = -1;
  if (k_known && (!wm_checked_mul_i64(k, og, &mask_c) ||
                  !wm_checked_mul_i64(mask_c, w->nsp, &off_c))) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "offset channels overflow");
  }
  for (int32_t i = 2; i < 5; i += 2) {
    const wm_shape_t *s = wm_op_in_shape(ctx, i);
    if (!wm_op_has_input(ctx, i) || s->rank < 0) {
      continue;
    }
    int64_t want_c = i == 2 ? off_c : mask_c;
    bool ok = s->rank == w->nsp + 2;
    for (int32_t d = 0; ok && d < s->rank; d++) {
      int64_t e = d == 0   ? (xs->rank >= 0 ? xs->dims[0] : -1)
                  : d == 1 ? want_c
                           : out_sp[d - 2];
      ok = s->dims[d] < 0 || e < 0 || s->dims[d] == e;
    }
    if (!ok) {
      char buf[160];
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d (%s) has shape %s, want [N, %lld, output "
                         "spatial dims]",
                         i, i == 2 ? "offset" : "mask",
                         wm_shape_format(s, buf, sizeof(buf)),
                         (long long)want_c);
    }
  }
  return NULL;
}

static wm_status_t dc_infer(wm_op_ctx_t *ctx) {
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL], group, og;
  bool known;
  WM_RETURN_IF_ERROR(dc_setup(ctx, &w, in_sp, out_sp, &known, &group, &og));
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (!known) {
    wm_op_set_out_unknown(ctx, 0, dt);
    return NULL;
  }
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ws = wm_op_in_shape(ctx, 1);
  wm_shape_t os;
  os.rank = w.nsp + 2;
  os.dims[0] = xs->rank >= 0 ? xs->dims[0] : -1;
  os.dims[1] = ws->rank >= 0 ? ws->dims[0] : -1;
  for (int32_t i = 0; i < w.nsp; i++) {
    os.dims[2 + i] = out_sp[i];
  }
  return wm_op_set_out_checked(ctx, 0, dt, &os);
}

// Multilinear sample of the |nsp|-dim plane |x| (dims |sp|) at |p|;
// corners outside the plane count as zero.
static double dc_sample(const double *x, const int64_t *sp, int32_t nsp,
                        const double *p) {
  int64_t base[MAX_SPATIAL];
  double frac[MAX_SPATIAL];
  for (int32_t d = 0; d < nsp; d++) {
    // Beyond (-1, size) every corner is outside; also rejects NaN.
    if (!(p[d] > -1.0 && p[d] < (double)sp[d])) {
      return 0.0;
    }
    double f = floor(p[d]);
    base[d] = (int64_t)f;
    frac[d] = p[d] - f;
  }
  double acc = 0;
  for (uint32_t corner = 0; corner < (1u << nsp); corner++) {
    double wgt = 1;
    size_t off = 0;
    bool inside = true;
    for (int32_t d = 0; d < nsp && inside; d++) {
      bool hi = (corner >> d) & 1u;
      int64_t q = base[d] + (hi ? 1 : 0);
      inside = q >= 0 && q < sp[d];
      wgt *= hi ? frac[d] : 1.0 - frac[d];
      off = off * (size_t)sp[d] + (size_t)q;
    }
    if (inside && wgt != 0.0) {
      acc += wgt * x[off];
    }
  }
  return acc;
}

static wm_status_t dc_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(dc_infer(ctx));
  window_t w;
  int64_t in_sp[MAX_SPATIAL], out_sp[MAX_SPATIAL], group, ogroup;
  bool known;
  WM_RETURN_IF_ERROR(dc_setup(ctx, &w, in_sp, out_sp, &known, &group, &ogroup));
  const wm_tensor_t *xt = ctx->in[0], *wt = ctx->in[1];
  size_t n = (size_t)xt->shape.dims[0], c = (size_t)xt->shape.dims[1];
  size_t m = (size_t)wt->shape.dims[0], cg = (size_t)wt->shape.dims[1];
  size_t mg = m / (size_t)group, cog = c / (size_t)ogroup;
  size_t og_n = (size_t)ogroup;
  int32_t nsp = w.nsp;
  size_t in_n = nn_prod(in_sp, nsp), out_n = nn_prod(out_sp, nsp);
  conv_bufs_t bf;
  double *off = NULL, *mask = NULL;
  wm_status_t st = nn_conv_bufs_load(ctx, &w, &bf);
  if (!st) {
    free(bf.b);  // nn_conv_bufs_load read the offsets as input 2
    bf.b = NULL;
    st = nn_load_f64(ctx, ctx->in[2], &off);
  }
  if (!st) {
    st = nn_load_input(ctx, 3, &bf.b);
  }
  if (!st) {
    st = nn_load_input(ctx, 4, &mask);
  }
  if (st) {
    goto done;
  }
  size_t nt = bf.nt;
  for (size_t in = 0; in < n; in++) {
    for (size_t om = 0; om < m; om++) {
      size_t g = om / mg;
      double *yp = bf.y + (in * m + om) * out_n;
      int64_t pos[MAX_SPATIAL] = {0};
      for (size_t o = 0; o < out_n; o++, nn_odometer_next(pos, out_sp, nsp)) {
        double acc = bf.b ? bf.b[om] : 0.0;
        for (size_t ic = 0; ic < cg; ic++) {
          size_t xc = g * cg + ic, og = xc / cog;
          const double *xp = bf.x + (in * c + xc) * in_n;
          for (size_t t = 0; t < nt; t++) {
            double p[MAX_SPATIAL];
            size_t ch = (og * nt + t) * (size_t)nsp;
            for (int32_t d = 0; d < nsp; d++) {
              double delta =
                  off[((in * og_n * nt * (size_t)nsp) + ch + (size_t)d) *
                          out_n +
                      o];
              p[d] = (double)(pos[d] * w.strides[d] - w.pads[d]) +
                     (double)bf.taps[t * (size_t)nsp + (size_t)d] + delta;
            }
            double v = dc_sample(xp, in_sp, nsp, p);
            if (mask) {
              v *= mask[((in * og_n + og) * nt + t) * out_n + o];
            }
            acc += v * bf.k[(om * cg + ic) * nt + t];
          }
        }
        yp[o] = acc;
      }
    }
  }
  nn_store_f64(ctx->out[0], bf.y);
done:
  nn_conv_bufs_free(&bf);
  free(off);
  free(mask);
  return st;
}

static void dc_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  conv_cost(ctx, out);
  const wm_shape_t *ws = wm_op_in_shape(ctx, 1);
  if (ws->rank >= 3) {
    // Bilinear sampling: about 3 flops per corner per tap.
    out->flops += out->macs * 3.0 * (double)(1u << (ws->rank - 2));
  }
}

// ------------------------------------------------------------------ table

const wm_op_def_t wm_ops_conv[] = {
    {"Conv", "", 1, 2, 3, 1, 1, WM_TYPES_FLOAT, conv_infer, conv_run, conv_cost,
     0, conv_resolve, conv_define},
    {"ConvTranspose", "", 1, 2, 3, 1, 1, WM_TYPES_FLOAT, convt_infer, convt_run,
     convt_cost, 0, convt_resolve},
    {"Col2Im", "", 18, 3, 3, 1, 1, WM_TYPES_NUMERIC, col2im_infer, col2im_run,
     col2im_cost},
    {"DeformConv", "", 19, 3, 5, 1, 1, WM_TYPES_FLOAT, dc_infer, dc_run,
     dc_cost},
    WM_OPS_END,
};
