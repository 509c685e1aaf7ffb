// ConvTranspose (1-D to 3-D, float32, groups, dilations, strides) as one
// GEMM-engine product per image and group, col = W_g^T · X_g (W_g read
// transposed through its strides, packed once when it is a constant),
// then col2im: every column tap added into the output window it lands in,
// split over output channels on the pool. The window comes resolved from
// the host (pads from auto_pad, output_shape or the attribute); the
// output dims, output_padding included, come from the shape rule.
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "gemm.h"
#include "kernels.h"

#define F32 1u  // ONNX FLOAT

typedef struct deconv_state {
  int64_t n, c, m, group;    // batch, in channels, out channels, groups
  int64_t cg, mg;            // channels per group, in and out
  int64_t in[3], out[3];     // spatial sizes (leading ones for fewer dims)
  int64_t k[3], s[3], d[3];  // kernel, strides, dilations
  int64_t pb[3];             // begin pads
  int64_t insz, outsz;       // spatial products
  int64_t kprod;             // kernel taps
  bool has_bias;             // input B given
  float *col;                // [mg * kprod, insz] of one image and group
  cpu_gemm_packed_t *pw;     // per group: W_g^T packed at plan time, or NULL
} deconv_state_t;

// The geometry of |op|, checked against the output dims the plan gives;
// false with a reason for what this kernel does not take.
static bool deconv_shapes(const wm_op_desc *op, deconv_state_t *st,
                          uint32_t *why, const char **detail) {
  memset(st, 0, sizeof(*st));
  if (op->n_in < 2 || op->n_in > 3 || op->n_out != 1 || !cpu_has_input(op, 0) ||
      !cpu_has_input(op, 1) || op->out[0].dtype == 0) {
    cpu_refuse(why, detail, WM_WHY_OTHER,
               "ConvTranspose needs inputs X, W and output Y");
    return false;
  }
  const wm_tensor_desc *x = &op->in[0], *w = &op->in[1], *y = &op->out[0];
  st->has_bias = cpu_has_input(op, 2);
  const wm_tensor_desc *b = st->has_bias ? &op->in[2] : NULL;
  if (x->dtype != F32 || w->dtype != F32 || y->dtype != F32 ||
      (b && b->dtype != F32)) {
    cpu_refuse(why, detail, WM_WHY_DTYPE,
               "cpu ConvTranspose takes float32 only");
    return false;
  }
  if (x->rank < 3 || x->rank > 5 || w->rank != x->rank || y->rank != x->rank ||
      (b && b->rank != 1)) {
    cpu_refuse(why, detail, WM_WHY_RANK,
               "cpu ConvTranspose takes 1-D to 3-D convolutions");
    return false;
  }
  int32_t nsp = (int32_t)x->rank - 2;
  cpu_window_t win;
  if (!cpu_window_params(op, nsp, &win, why, detail) ||
      !cpu_param_int(op, "group", &st->group)) {
    return false;
  }
  st->n = x->dims[0];
  st->c = x->dims[1];
  if (st->group < 1 || st->c % st->group != 0 || w->dims[0] != st->c) {
    cpu_refuse(why, detail, WM_WHY_ATTR,
               "ConvTranspose group does not divide channels");
    return false;
  }
  st->cg = st->c / st->group;
  st->mg = w->dims[1];
  st->m = st->mg * st->group;
  if (y->dims[1] != st->m || y->dims[0] != st->n ||
      (b && b->dims[0] != st->m)) {
    cpu_refuse(why, detail, WM_WHY_SHAPE,
               "ConvTranspose output or bias channels are not M");
    return false;
  }
  for (int32_t i = 0; i < 3; i++) {
    st->in[i] = st->out[i] = st->k[i] = st->s[i] = st->d[i] = 1;
  }
  for (int32_t i = 0; i < nsp; i++) {
    int32_t j = 3 - nsp + i;
    st->in[j] = x->dims[2 + i];
    st->out[j] = y->dims[2 + i];
    st->k[j] = w->dims[2 + i];
    st->s[j] = win.strides[i];
    st->d[j] = win.dilations[i];
    st->pb[j] = win.pads[i];
    if (win.kernel[i] != st->k[j] || st->pb[j] < 0 || win.pads[nsp + i] < 0 ||
        st->in[j] < 1) {
      cpu_refuse(why, detail, WM_WHY_ATTR,
                 "ConvTranspose pads are negative (an output_shape beyond "
                 "the full result)");
      return false;
    }
  }
  int64_t colsz;
  if (!wm_checked_mul_i64(st->in[0] * st->in[1], st->in[2], &st->insz) ||
      !wm_checked_mul_i64(st->out[0] * st->out[1], st->out[2], &st->outsz) ||
      !wm_checked_mul_i64(st->k[0] * st->k[1], st->k[2], &st->kprod) ||
      !wm_checked_mul_i64(st->mg * st->kprod, st->insz, &colsz) ||
      colsz > ((int64_t)1 << 31) || st->cg > INT32_MAX ||
      st->outsz > INT32_MAX) {
    cpu_refuse(why, detail, WM_WHY_SIZE_LIMIT, "ConvTranspose is too large");
    return false;
  }
  return true;
}

static uint32_t deconv_query(const wm_op_desc *op, uint32_t *why,
                             const char **detail) {
  deconv_state_t st;
  return deconv_shapes(op, &st, why, detail) ? WM_SUPPORT_SUPPORTED
                                             : WM_SUPPORT_NONE;
}

static void deconv_destroy(void *state) {
  deconv_state_t *st = state;
  if (st) {
    free(st->col);
    if (st->pw) {
      for (int64_t g = 0; g < st->group; g++) {
        cpu_gemm_packed_deinit(&st->pw[g]);
      }
      free(st->pw);
    }
    free(st);
  }
}

static wm_error *deconv_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  const char *name = op->name ? op->name : "";
  deconv_state_t *st = malloc(sizeof(*st));
  if (!st) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "node \"%s\" (ConvTranspose): out of memory", name);
  }
  uint32_t why;
  const char *detail = NULL;
  if (!deconv_shapes(op, st, &why, &detail)) {
    free(st);
    return cpu_error(WM_ERR_INVALID_ARGUMENT, "node \"%s\" (ConvTranspose): %s",
                     name, detail);
  }
  size_t cols = (size_t)(st->mg * st->kprod * st->insz);
  st->col = malloc((cols ? cols : 1) * sizeof(float));
  if (!st->col) {
    free(st);
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "node \"%s\" (ConvTranspose): out of memory for its "
                     "%zu-float column buffer",
                     name, cols);
  }
  const float *w = k_const_input(op, 1);
  int64_t rows = st->mg * st->kprod;
  if (w && rows > 0 && st->cg > 0) {
    st->pw = calloc((size_t)st->group, sizeof(*st->pw));
    if (!st->pw) {
      deconv_destroy(st);
      return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                       "node \"%s\" (ConvTranspose): out of memory", name);
    }
    for (int64_t g = 0; g < st->group; g++) {
      // A = W_g^T: W_g is [cg, mg * kprod], read column by column.
      wm_error *e =
          cpu_gemm_pack(CPU_GEMM_A, rows, st->cg,
                        w + (size_t)(g * st->cg * rows), 1, rows, &st->pw[g]);
      if (e) {
        deconv_destroy(st);
        return e;
      }
    }
  }
  *out_state = st;
  return NULL;
}

// One image and group being scattered: output channels [begin, end).
typedef struct scatter {
  const deconv_state_t *st;
  const float *col;   // [mg * kprod, insz]
  float *y;           // the group's first output channel
  const float *bias;  // the group's bias, or NULL
} scatter_t;

static void scatter_channels(void *ctx, size_t begin, size_t end) {
  const scatter_t *sc = ctx;
  const deconv_state_t *st = sc->st;
  for (size_t m = begin; m < end; m++) {
    float *y = sc->y + m * (size_t)st->outsz;
    float b0 = sc->bias ? sc->bias[m] : 0.0f;
    for (int64_t i = 0; i < st->outsz; i++) {
      y[i] = b0;
    }
    const float *cm = sc->col + m * (size_t)(st->kprod * st->insz);
    for (int64_t k0 = 0; k0 < st->k[0]; k0++) {
      for (int64_t k1 = 0; k1 < st->k[1]; k1++) {
        for (int64_t k2 = 0; k2 < st->k[2]; k2++) {
          const float *row =
              cm + ((k0 * st->k[1] + k1) * st->k[2] + k2) * st->insz;
          for (int64_t i0 = 0; i0 < st->in[0]; i0++) {
            int64_t o0 = i0 * st->s[0] - st->pb[0] + k0 * st->d[0];
            if (o0 < 0 || o0 >= st->out[0]) {
              continue;
            }
            for (int64_t i1 = 0; i1 < st->in[1]; i1++) {
              int64_t o1 = i1 * st->s[1] - st->pb[1] + k1 * st->d[1];
              if (o1 < 0 || o1 >= st->out[1]) {
                continue;
              }
              const float *r = row + (i0 * st->in[1] + i1) * st->in[2];
              float *yo = y + (o0 * st->out[1] + o1) * st->out[2];
              int64_t off = k2 * st->d[2] - st->pb[2], s2 = st->s[2];
              // The input columns whose output lands in [0, out).
              int64_t lo = off < 0 ? (-off + s2 - 1) / s2 : 0;
              int64_t hi = st->out[2] - 1 - off >= 0
                               ? (st->out[2] - 1 - off) / s2 + 1
                               : 0;
              hi = hi < st->in[2] ? hi : st->in[2];
              if (s2 == 1) {
                for (int64_t i2 = lo; i2 < hi; i2++) {
                  yo[i2 + off] += r[i2];
                }
              } else {
                for (int64_t i2 = lo; i2 < hi; i2++) {
                  yo[i2 * s2 + off] += r[i2];
                }
              }
            }
          }
        }
      }
    }
  }
}

static wm_error *deconv_run(void *state, const cpu_run_t *run) {
  const cpu_gemm_scratch_t ws = cpu_gemm_scratch_of(run);
  deconv_state_t *st = state;
  const float *x = run->in[0].data, *w = run->in[1].data;
  const float *bias = st->has_bias ? run->in[2].data : NULL;
  float *y = run->out[0].data;
  int64_t rows = st->mg * st->kprod, cols = st->insz;
  for (int64_t n = 0; n < st->n; n++) {
    for (int64_t g = 0; g < st->group; g++) {
      // col[mg*K, P] = W_g[cg, mg*K]^T · X_g[cg, P]
      cpu_gemm_problem_t p;
      memset(&p, 0, sizeof(p));
      p.m = rows;
      p.n = cols;
      p.k = st->cg;
      p.a.data = w + g * st->cg * rows;
      p.a.rs = 1;
      p.a.cs = rows;
      p.a.packed = st->pw ? &st->pw[g] : NULL;
      p.b.data = x + (n * st->c + g * st->cg) * st->insz;
      p.b.rs = cols;
      p.b.cs = 1;
      p.c = st->col;
      p.ldc = cols;
      p.epi = cpu_gemm_epi_plain();
      wm_error *e = cpu_gemm_run(&p, run->pool, &ws);
      if (e) {
        return e;
      }
      scatter_t sc = {
          .st = st,
          .col = st->col,
          .y = y + (n * st->m + g * st->mg) * st->outsz,
          .bias = bias ? bias + g * st->mg : NULL,
      };
      k_for(run->pool, (size_t)st->mg,
            k_row_grain((size_t)(st->outsz + st->kprod * st->insz), 32768),
            scatter_channels, &sc);
    }
  }
  return NULL;
}

const cpu_kernel_t cpu_kernels_deconv[] = {
    {"ConvTranspose", 1, WM_IMPL_NATIVE_KERNEL, deconv_query, deconv_plan,
     deconv_run, deconv_destroy, cpu_gemm_kernel_workspace, NULL, NULL},
    {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
