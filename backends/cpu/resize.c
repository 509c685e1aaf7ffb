// Resize (opsets 10 to 19) and Upsample (7, 9) on the cpu backend.
//
// The plan builds, per output dim, the reference's table of taps (input
// index and weight) from the coordinate transform and the interpolation
// kernel, in double, with antialiasing and exclude_outside as the spec
// says. A run walks output rows (every dim but the last): nearest gathers
// one input row per output row (a row equal to the previous one is
// copied); linear and cubic sum, over the taps of the outer dims, input
// rows first interpolated along the last dim, which stay in a small cache
// because neighbouring output rows share them. The inner loops run over a
// block of output columns with the last dim's taps stored tap-major, so
// they vectorize.

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

enum { MODE_NEAREST, MODE_LINEAR, MODE_CUBIC };

enum {
  COORD_HALF_PIXEL,
  COORD_HALF_PIXEL_SYMMETRIC,
  COORD_PYTORCH_HALF_PIXEL,
  COORD_ALIGN_CORNERS,
  COORD_ASYMMETRIC,
  COORD_TF_HALF_PIXEL_FOR_NN,
  COORD_TF_CROP_AND_RESIZE,
};

enum {
  NEAREST_ROUND_PREFER_FLOOR,
  NEAREST_ROUND_PREFER_CEIL,
  NEAREST_FLOOR,
  NEAREST_CEIL,
};

// What one node computes with, as the reference resolves it.
typedef struct rs_params {
  int mode;                        // MODE_*
  int coord;                       // COORD_*
  int nearest;                     // NEAREST_*
  double cubic_a;                  // cubic_coeff_a
  bool exclude_outside;            // zero weights outside the input
  bool antialias;                  // stretch the kernel when downsampling
  float extrapolation;             // value outside the crop (tf_crop)
  int32_t rank;                    // rank of the input
  double scale[CPU_MAX_RANK];      // output / input per dim
  int64_t out_dims[CPU_MAX_RANK];  // output dims
  double roi_start[CPU_MAX_RANK];  // crop start per dim (normalized)
  double roi_end[CPU_MAX_RANK];    // crop end per dim (normalized)
} rs_params_t;

static int32_t lookup(const char *s, const char *const *names, int32_t n) {
  for (int32_t i = 0; s && i < n; i++) {
    if (strcmp(s, names[i]) == 0) {
      return i;
    }
  }
  return -1;
}

// The string entry |name| of the resolved parameters mapped through
// |names|; -1 when absent or unknown.
static int32_t rs_choice(const wm_op_desc *op, const char *name,
                         const char *const *names, int32_t n) {
  const wm_op_attr *a = cpu_param(op, name);
  return lookup(a && a->type == 3 ? a->s : NULL, names, n);
}

// The node's parameters as the host resolved them (modes by name, scales
// and roi per dim), the output dims from its description; false when the
// host resolved none.
static bool rs_params(const wm_op_desc *op, rs_params_t *p) {
  static const char *const modes[] = {"nearest", "linear", "cubic"};
  static const char *const coords[] = {
      "half_pixel",        "half_pixel_symmetric", "pytorch_half_pixel",
      "align_corners",     "asymmetric",           "tf_half_pixel_for_nn",
      "tf_crop_and_resize"};
  static const char *const nearests[] = {"round_prefer_floor",
                                         "round_prefer_ceil", "floor", "ceil"};
  memset(p, 0, sizeof(*p));
  const wm_tensor_desc *x = &op->in[0], *y = &op->out[0];
  p->rank = (int32_t)x->rank;
  const wm_op_attr *a = cpu_param(op, "cubic_coeff_a");
  const wm_op_attr *e = cpu_param(op, "extrapolation_value");
  double roi[2 * CPU_MAX_RANK];
  int64_t excl = 0, anti = 0;
  p->mode = rs_choice(op, "mode", modes, 3);
  p->coord = rs_choice(op, "coordinate_transformation_mode", coords, 7);
  p->nearest = rs_choice(op, "nearest_mode", nearests, 4);
  if (p->rank < 1 || p->rank > CPU_MAX_RANK || y->rank != x->rank ||
      p->mode < 0 || p->coord < 0 || p->nearest < 0 || !a || a->type != 1 ||
      !e || e->type != 1 || !cpu_param_int(op, "exclude_outside", &excl) ||
      !cpu_param_int(op, "antialias", &anti) ||
      !cpu_param_reals(op, "scales", (size_t)p->rank, p->scale) ||
      !cpu_param_reals(op, "roi", 2 * (size_t)p->rank, roi)) {
    return false;
  }
  p->cubic_a = a->f;
  p->extrapolation = e->f;
  p->exclude_outside = excl != 0;
  p->antialias = anti != 0;
  for (int32_t d = 0; d < p->rank; d++) {
    p->out_dims[d] = y->dims[d];
    p->roi_start[d] = roi[d];
    p->roi_end[d] = roi[p->rank + d];
  }
  return true;
}

// ------------------------------------------------------------------ taps

static double rs_coord(const rs_params_t *p, int32_t d, int64_t x,
                       int64_t in_len) {
  double s = p->scale[d], xr = (double)x, lin = (double)in_len;
  double out_len = s * lin;  // the ONNX reference uses the real length
  switch (p->coord) {
    case COORD_HALF_PIXEL:
      return (xr + 0.5) / s - 0.5;
    case COORD_HALF_PIXEL_SYMMETRIC: {
      double adjust = (double)p->out_dims[d] / out_len;
      double offset = lin / 2 * (1 - adjust);
      return offset + (xr + 0.5) / s - 0.5;
    }
    case COORD_PYTORCH_HALF_PIXEL:
      return p->out_dims[d] > 1 ? (xr + 0.5) / s - 0.5 : 0;
    case COORD_ALIGN_CORNERS:
      return out_len == 1 ? 0 : xr * (lin - 1) / (out_len - 1);
    case COORD_ASYMMETRIC:
      return xr / s;
    case COORD_TF_HALF_PIXEL_FOR_NN:
      return (xr + 0.5) / s;
    default: {
      double a = p->roi_start[d], b = p->roi_end[d];
      if (p->out_dims[d] > 1) {
        return a * (lin - 1) +
               xr * (b - a) * (lin - 1) / (double)(p->out_dims[d] - 1);
      }
      return 0.5 * (a + b) * (lin - 1);
    }
  }
}

static double rs_nearest(int m, double x) {
  double f = floor(x);
  switch (m) {
    case NEAREST_ROUND_PREFER_FLOOR:
      return x - f <= 0.5 ? f : f + 1;
    case NEAREST_ROUND_PREFER_CEIL:
      return x - f < 0.5 ? f : f + 1;
    case NEAREST_FLOOR:
      return f;
    default:
      return ceil(x);
  }
}

static void rs_cubic_weights(double a, double t, double *w) {
  double x[4] = {1 + t, t, 1 - t, 2 - t};
  for (int32_t i = 0; i < 4; i++) {
    double z = x[i];
    w[i] = z <= 1 ? ((a + 2) * z - (a + 3)) * z * z + 1
                  : ((a * z - 5 * a) * z + 8 * a) * z - 4 * a;
  }
}

static double rs_cubic_kernel(double a, double z) {
  z = fabs(z);
  if (z <= 1) {
    return ((a + 2) * z - (a + 3)) * z * z + 1;
  }
  if (z < 2) {
    return ((a * z - 5 * a) * z + 8 * a) * z - 4 * a;
  }
  return 0;
}

static int64_t rs_first_tap(const rs_params_t *p, int32_t d, double radius) {
  double s = p->scale[d];
  if (!p->antialias || s >= 1 || !(s > 0)) {
    return 1 - (int64_t)radius;
  }
  return (int64_t)floor(-radius / s) + 1;
}

static int64_t rs_width(const rs_params_t *p, int32_t d) {
  return p->mode == MODE_NEAREST  ? 1
         : p->mode == MODE_LINEAR ? 2 - 2 * rs_first_tap(p, d, 1)
                                  : 2 - 2 * rs_first_tap(p, d, 2);
}

// The taps of one output dim: per position |width| slots, |count| used.
typedef struct rs_dim {
  int64_t width;   // slots per output position
  int32_t *count;  // taps per position; 0 = extrapolate
  int64_t *index;  // width input indices per position
  double *weight;  // width weights per position
} rs_dim_t;

// Fills the taps of dim |d| exactly as the reference does; |ws| has room
// for t->width weights.
static void rs_build_taps(const rs_params_t *p, int32_t d, int64_t in_len,
                          int64_t out_len, rs_dim_t *t, double *ws) {
  for (int64_t x = 0; x < out_len; x++) {
    int32_t *count = &t->count[x];
    int64_t *idx = &t->index[x * t->width];
    double *w = &t->weight[x * t->width];
    double xo = rs_coord(p, d, x, in_len);
    if (p->coord == COORD_TF_CROP_AND_RESIZE &&
        (xo < 0 || xo > (double)(in_len - 1))) {
      *count = 0;
      continue;
    }
    if (p->mode == MODE_NEAREST) {
      double r = rs_nearest(p->nearest, xo);
      r = r < 0 ? 0 : r > (double)(in_len - 1) ? (double)(in_len - 1) : r;
      *count = 1;
      idx[0] = (int64_t)r;
      w[0] = 1;
      continue;
    }
    double f = floor(xo);
    double frac = xo - f;
    if (frac == 0) {
      f -= 1;
      frac = 1;
    }
    int64_t n = t->width;
    int64_t offset = rs_first_tap(p, d, p->mode == MODE_LINEAR ? 1 : 2);
    int64_t first = (int64_t)f + offset;
    if (p->antialias) {
      double s = fmin(p->scale[d], 1.0), sum = 0;
      for (int64_t k = 0; k < n; k++) {
        double z = s * ((double)(offset + k) - frac);
        ws[k] = p->mode == MODE_LINEAR ? fmax(0.0, 1 - fabs(z))
                                       : rs_cubic_kernel(p->cubic_a, z);
        sum += ws[k];
      }
      for (int64_t k = 0; k < n && sum != 0; k++) {
        ws[k] /= sum;
      }
    } else if (p->mode == MODE_LINEAR) {
      ws[0] = 1 - frac;
      ws[1] = frac;
    } else {
      rs_cubic_weights(p->cubic_a, frac, ws);
    }
    double sum = 0;
    for (int64_t k = 0; k < n; k++) {
      int64_t i = first + k;
      if (p->exclude_outside && (i < 0 || i >= in_len)) {
        ws[k] = 0;
      }
      sum += ws[k];
    }
    *count = 0;
    for (int64_t k = 0; k < n; k++) {
      if (ws[k] == 0) {
        continue;
      }
      int64_t i = first + k;
      idx[*count] = i < 0 ? 0 : i >= in_len ? in_len - 1 : i;
      w[*count] = p->exclude_outside && sum != 0 ? ws[k] / sum : ws[k];
      (*count)++;
    }
    if (*count == 0) {
      int64_t i = (int64_t)floor(xo + 0.5);
      idx[0] = i < 0 ? 0 : i >= in_len ? in_len - 1 : i;
      w[0] = 1;
      *count = 1;
    }
  }
}

// ------------------------------------------------------------------ plan

// Widest tap table a plan builds per position (a downsampling by 1/64
// with the cubic kernel); wider ones are refused.
enum { RS_MAX_WIDTH = 256 };

typedef struct rs_plan {
  int mode;                    // MODE_*
  float extrapolation;         // tf_crop_and_resize outside value
  size_t es;                   // element size
  int32_t rank;                // dims
  int64_t in[CPU_MAX_RANK];    // input dims
  int64_t out[CPU_MAX_RANK];   // output dims
  int64_t istr[CPU_MAX_RANK];  // input strides
  rs_dim_t dim[CPU_MAX_RANK];  // taps per dim (last: see below)
  // The last dim, tap-major: slot k of column c at [k * out_w + c].
  int32_t lw;       // taps per column
  int32_t *lidx;    // input column per slot
  float *lwt;       // weight per slot (0 = unused)
  uint8_t *lext;    // column extrapolates
  bool any_lext;    // some column does
  int32_t dup;      // nearest: column c reads c / dup (0: no)
  int64_t pa, pb;   // linear: columns [pa, pb) repeat the taps of pa and
                    // pa + 1 one input column further every two columns
  size_t rows;      // output rows
  size_t count[2];  // elements of input and output
  void *block;      // all tables in one allocation
} rs_plan_t;

static void rs_destroy(void *state) {
  rs_plan_t *p = state;
  if (p) {
    free(p->block);
    free(p);
  }
}

static uint32_t rs_query(const wm_op_desc *op, uint32_t *why,
                         const char **detail) {
  if (op->n_in < 1 || !k_has_output(op, 0) ||
      op->out[0].dtype != op->in[0].dtype) {
    return k_none(why, detail, WM_WHY_DTYPE, "output dtype differs");
  }
  rs_params_t p;
  if (!rs_params(op, &p)) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "the resize is resolved by the host for known shapes, "
                  "scales and sizes");
  }
  size_t es = k_dtype_size(op->in[0].dtype);
  if (p.mode == MODE_NEAREST ? (es != 1 && es != 2 && es != 4 && es != 8)
                             : op->in[0].dtype != K_FLOAT) {
    return k_none(why, detail, WM_WHY_DTYPE,
                  "nearest: plain data of up to 8 bytes; linear and cubic: "
                  "float32");
  }
  if (p.coord == COORD_TF_CROP_AND_RESIZE && op->in[0].dtype != K_FLOAT) {
    return k_none(why, detail, WM_WHY_DTYPE,
                  "tf_crop_and_resize: float32 only");
  }
  const wm_tensor_desc *x = &op->in[0], *y = &op->out[0];
  if (y->rank != x->rank) {
    return k_none(why, detail, WM_WHY_RANK, "output rank differs");
  }
  bool empty_out = false, empty_in = false;
  for (int32_t d = 0; d < p.rank; d++) {
    empty_out = empty_out || y->dims[d] == 0;
    empty_in = empty_in || x->dims[d] == 0;
    if (x->dims[d] > INT32_MAX || rs_width(&p, d) > RS_MAX_WIDTH) {
      return k_none(why, detail, WM_WHY_SIZE_LIMIT,
                    "dims above 2^31 or more than 256 taps per output");
    }
  }
  if (empty_in && !empty_out) {
    return k_none(why, detail, WM_WHY_SHAPE, "cannot resize an empty axis");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *rs_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  rs_params_t prm;
  if (!rs_params(op, &prm)) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (%s): no resolved parameters for these "
                     "shapes",
                     op->name, op->op_type);
  }
  rs_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  const wm_tensor_desc *x = &op->in[0];
  p->mode = prm.mode;
  p->extrapolation = prm.extrapolation;
  p->es = k_dtype_size(x->dtype);
  p->rank = prm.rank;
  p->count[0] = cpu_desc_count(x);
  p->count[1] = cpu_desc_count(&op->out[0]);
  int64_t s = 1;
  for (int32_t d = p->rank - 1; d >= 0; d--) {
    p->in[d] = x->dims[d];
    p->out[d] = prm.out_dims[d];
    p->istr[d] = s;
    s *= p->in[d];
  }
  p->rows = 1;
  for (int32_t d = 0; d < p->rank - 1; d++) {
    p->rows *= (size_t)p->out[d];
  }
  if (p->count[1] == 0) {
    *out_state = p;
    return NULL;
  }
  // One block: per dim counts, indices and weights, the last dim's
  // tap-major copy, and a scratch row of weights.
  size_t positions = 0, slots = 0, widest = 1;
  for (int32_t d = 0; d < p->rank; d++) {
    p->dim[d].width = rs_width(&prm, d);
    positions += (size_t)p->out[d];
    slots += (size_t)p->out[d] * (size_t)p->dim[d].width;
    widest =
        (size_t)p->dim[d].width > widest ? (size_t)p->dim[d].width : widest;
  }
  int32_t last = p->rank - 1;
  size_t ow = (size_t)p->out[last], lw = (size_t)p->dim[last].width;
  size_t bytes = positions * sizeof(int32_t) + slots * sizeof(int64_t) +
                 slots * sizeof(double) + widest * sizeof(double) +
                 lw * ow * (sizeof(int32_t) + sizeof(float)) + ow + 64;
  char *b = calloc(1, bytes);
  if (!b) {
    rs_destroy(p);
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "node \"%s\" (%s): out of memory for %zu bytes of taps",
                     op->name, op->op_type, bytes);
  }
  p->block = b;
  double *weights = (double *)(void *)b;
  double *scratch = weights + slots;
  int64_t *indices = (int64_t *)(void *)(scratch + widest);
  float *lwt = (float *)(void *)(indices + slots);
  int32_t *lidx = (int32_t *)(void *)(lwt + lw * ow);
  int32_t *counts = lidx + lw * ow;
  uint8_t *lext = (uint8_t *)(counts + positions);
  size_t at = 0, at_slot = 0;
  for (int32_t d = 0; d < p->rank; d++) {
    rs_dim_t *t = &p->dim[d];
    t->count = counts + at;
    t->index = indices + at_slot;
    t->weight = weights + at_slot;
    rs_build_taps(&prm, d, p->in[d], p->out[d], t, scratch);
    at += (size_t)p->out[d];
    at_slot += (size_t)p->out[d] * (size_t)t->width;
  }
  p->lw = (int32_t)lw;
  p->lidx = lidx;
  p->lwt = lwt;
  p->lext = lext;
  const rs_dim_t *t = &p->dim[last];
  for (size_t c = 0; c < ow; c++) {
    int32_t n = t->count[c];
    lext[c] = n == 0;
    p->any_lext = p->any_lext || n == 0;
    for (size_t k = 0; k < lw; k++) {
      bool used = (int32_t)k < n;
      lidx[k * ow + c] = (int32_t)t->index[c * lw + (used ? k : 0)];
      lwt[k * ow + c] = used ? (float)t->weight[c * lw + k] : 0.0f;
    }
  }
  // Linear upsampling by 2: away from the edges, columns pa + 2m and
  // pa + 2m + 1 take the taps of pa and pa + 1 shifted by m.
  p->pa = p->pb = 0;
  if (p->mode == MODE_LINEAR && lw == 2 && ow >= 16 &&
      ow == 2 * (size_t)p->in[last]) {
    size_t a = 2, c = a;
    for (; c < ow; c++) {
      size_t q = a + (c - a) % 2;
      int32_t m = (int32_t)((c - a) / 2);
      bool same = lwt[c] == lwt[q] && lwt[ow + c] == lwt[ow + q] &&
                  lwt[c] != 0 && lwt[ow + c] != 0 && lidx[c] == lidx[q] + m &&
                  lidx[ow + c] == lidx[ow + q] + m;
      if (!same) {
        break;
      }
    }
    c -= (c - a) % 2;  // whole pairs only
    if (c >= a + 8) {
      p->pa = (int64_t)a;
      p->pb = (int64_t)c;
    }
  }
  // Nearest upsampling by a whole factor (the detectors' x2): every input
  // column repeated |dup| times.
  for (int32_t f = 2; p->mode == MODE_NEAREST && !p->any_lext && f <= 8; f++) {
    bool all = ow == (size_t)f * (size_t)p->in[last];
    for (size_t c = 0; all && c < ow; c++) {
      all = lidx[c] == (int32_t)(c / (size_t)f);
    }
    if (all) {
      p->dup = f;
    }
  }
  *out_state = p;
  return NULL;
}

// ------------------------------------------------------------------- run

enum { RS_BLOCK = 256, RS_CACHE = 16 };

typedef struct rs_job {
  const rs_plan_t *p;
  const char *x;
  char *y;
} rs_job_t;

// The input row offset of output row |row| for nearest; -1 when the row
// extrapolates.
static int64_t rs_nearest_row(const rs_plan_t *p, size_t row) {
  int64_t off = 0;
  for (int32_t d = p->rank - 2; d >= 0; d--) {
    size_t o = row % (size_t)p->out[d];
    row /= (size_t)p->out[d];
    if (p->dim[d].count[o] == 0) {
      return -1;
    }
    off += p->dim[d].index[o * (size_t)p->dim[d].width] * p->istr[d];
  }
  return off;
}

#define RS_GATHER(T)                                     \
  do {                                                   \
    const T *restrict xs = (const T *)(const void *)src; \
    T *restrict yd = (T *)(void *)dst;                   \
    for (size_t c = 0; c < ow; c++) {                    \
      yd[c] = xs[idx[c]];                                \
    }                                                    \
  } while (0)

K_CLONES static void rs_nearest_rows(void *ctx, size_t begin, size_t end) {
  const rs_job_t *j = ctx;
  const rs_plan_t *p = j->p;
  size_t es = p->es, ow = (size_t)p->out[p->rank - 1];
  const int32_t *restrict idx = p->lidx;
  int64_t prev = -2;
  for (size_t row = begin; row < end; row++) {
    int64_t off = rs_nearest_row(p, row);
    char *dst = j->y + row * ow * es;
    if (off >= 0 && off == prev) {
      memcpy(dst, dst - ow * es, ow * es);
      continue;
    }
    prev = off;
    if (off < 0) {
      // Only tf_crop_and_resize extrapolates, on float32 (see rs_query).
      float *yd = (float *)(void *)dst;
      for (size_t c = 0; c < ow; c++) {
        yd[c] = p->extrapolation;
      }
      continue;
    }
    const char *src = j->x + (size_t)off * es;
    if (p->dup == 2 && es == 4) {
      const uint32_t *restrict xs = (const uint32_t *)(const void *)src;
      uint32_t *restrict yd = (uint32_t *)(void *)dst;
      for (size_t c = 0; c < ow / 2; c++) {
        yd[2 * c] = xs[c];
        yd[2 * c + 1] = xs[c];
      }
      continue;
    }
    switch (es) {
      case 1:
        RS_GATHER(uint8_t);
        break;
      case 2:
        RS_GATHER(uint16_t);
        break;
      case 4:
        RS_GATHER(uint32_t);
        break;
      default:
        RS_GATHER(uint64_t);
        break;
    }
    if (p->any_lext) {
      for (size_t c = 0; c < ow; c++) {
        if (p->lext[c]) {
          memcpy(dst + c * es, &p->extrapolation, 4);
        }
      }
    }
  }
}

static void rs_interp_cols(const rs_plan_t *p, const float *src, size_t c0,
                           size_t w, float *restrict h);

// Row |src| interpolated along the last dim for columns [c0, c0 + w).
K_CLONES static void rs_interp_row(const rs_plan_t *p, const float *src,
                                   size_t c0, size_t w, float *restrict h) {
  size_t ow = (size_t)p->out[p->rank - 1];
  size_t pa = (size_t)p->pa, pb = (size_t)p->pb;
  if (pb > pa && c0 + w > pa && c0 < pb) {
    // The periodic part in pairs from an even offset, the rest per column.
    size_t lo = c0 > pa ? c0 + (c0 - pa) % 2 : pa;
    size_t hi = c0 + w < pb ? pb - (pb - (c0 + w) + 1) / 2 * 2 : pb;
    hi = hi < lo ? lo : hi;
    if (lo > c0) {
      rs_interp_cols(p, src, c0, lo - c0, h);
    }
    const float *x0 = src + p->lidx[pa], *x1 = src + p->lidx[ow + pa];
    const float *x2 = src + p->lidx[pa + 1], *x3 = src + p->lidx[ow + pa + 1];
    float a0 = p->lwt[pa], a1 = p->lwt[ow + pa];
    float b0 = p->lwt[pa + 1], b1 = p->lwt[ow + pa + 1];
    size_t m0 = (lo - pa) / 2, pairs = (hi - lo) / 2;
    float *restrict hp = h + (lo - c0);
    for (size_t m = 0; m < pairs; m++) {
      hp[2 * m] = a0 * x0[m0 + m] + a1 * x1[m0 + m];
      hp[2 * m + 1] = b0 * x2[m0 + m] + b1 * x3[m0 + m];
    }
    if (c0 + w > hi) {
      rs_interp_cols(p, src, hi, c0 + w - hi, h + (hi - c0));
    }
    return;
  }
  rs_interp_cols(p, src, c0, w, h);
}

// Row |src| interpolated along the last dim for columns [c0, c0 + w), by
// the tap tables.
static void rs_interp_cols(const rs_plan_t *p, const float *src, size_t c0,
                           size_t w, float *restrict h) {
  size_t ow = (size_t)p->out[p->rank - 1];
  if (p->lw == 2) {
    const int32_t *restrict i0 = p->lidx + c0, *restrict i1 = i0 + ow;
    const float *restrict w0 = p->lwt + c0, *restrict w1 = w0 + ow;
    for (size_t c = 0; c < w; c++) {
      float a = src[i0[c]], b = src[i1[c]];
      float t0 = w0[c] != 0 ? w0[c] * a : 0.0f;
      float t1 = w1[c] != 0 ? w1[c] * b : 0.0f;
      h[c] = t0 + t1;
    }
    return;
  }
  for (size_t c = 0; c < w; c++) {
    h[c] = 0;
  }
  for (int32_t k = 0; k < p->lw; k++) {
    const int32_t *restrict ik = p->lidx + (size_t)k * ow + c0;
    const float *restrict wk = p->lwt + (size_t)k * ow + c0;
    for (size_t c = 0; c < w; c++) {
      float v = src[ik[c]];
      h[c] += wk[c] != 0 ? wk[c] * v : 0.0f;
    }
  }
}

// The cache of interpolated input rows of one column block.
typedef struct rs_cache {
  int64_t off[RS_CACHE];  // input row offset held, -1 = empty
  int next;               // slot replaced next
  float rows[RS_CACHE][RS_BLOCK];
} rs_cache_t;

static const float *rs_cached(const rs_plan_t *p, const float *x,
                              rs_cache_t *cc, int64_t off, size_t c0,
                              size_t w) {
  for (int i = 0; i < RS_CACHE; i++) {
    if (cc->off[i] == off) {
      return cc->rows[i];
    }
  }
  int i = cc->next;
  cc->next = (cc->next + 1) % RS_CACHE;
  cc->off[i] = off;
  rs_interp_row(p, x + off, c0, w, cc->rows[i]);
  return cc->rows[i];
}

// One output row of columns [c0, c0 + w): the weighted sum over every
// combination of the outer dims' taps.
static void rs_linear_row(const rs_plan_t *p, const float *x, rs_cache_t *cc,
                          size_t row, size_t c0, size_t w, float *restrict y) {
  int32_t outer = p->rank - 1;
  size_t pos[CPU_MAX_RANK];
  size_t r = row;
  for (int32_t d = outer - 1; d >= 0; d--) {
    pos[d] = r % (size_t)p->out[d];
    r /= (size_t)p->out[d];
    if (p->dim[d].count[pos[d]] == 0) {
      for (size_t c = 0; c < w; c++) {
        y[c] = p->extrapolation;
      }
      return;
    }
  }
  int32_t k[CPU_MAX_RANK] = {0};
  bool first = true;
  for (;;) {
    double weight = 1;
    int64_t off = 0;
    for (int32_t d = 0; d < outer; d++) {
      size_t s = pos[d] * (size_t)p->dim[d].width + (size_t)k[d];
      weight *= p->dim[d].weight[s];
      off += p->dim[d].index[s] * p->istr[d];
    }
    const float *restrict h = rs_cached(p, x, cc, off, c0, w);
    float wf = (float)weight;
    if (first) {
      for (size_t c = 0; c < w; c++) {
        y[c] = wf * h[c];
      }
      first = false;
    } else {
      for (size_t c = 0; c < w; c++) {
        y[c] += wf * h[c];
      }
    }
    int32_t d = outer - 1;
    for (; d >= 0; d--) {
      if (++k[d] < p->dim[d].count[pos[d]]) {
        break;
      }
      k[d] = 0;
    }
    if (d < 0) {
      break;
    }
  }
  for (size_t c = 0; p->any_lext && c < w; c++) {
    if (p->lext[c0 + c]) {
      y[c] = p->extrapolation;
    }
  }
}

static void rs_linear_rows(void *ctx, size_t begin, size_t end) {
  const rs_job_t *j = ctx;
  const rs_plan_t *p = j->p;
  size_t ow = (size_t)p->out[p->rank - 1];
  const float *x = (const float *)(const void *)j->x;
  float *y = (float *)(void *)j->y;
  rs_cache_t cc;
  for (size_t c0 = 0; c0 < ow; c0 += RS_BLOCK) {
    size_t w = ow - c0 < RS_BLOCK ? ow - c0 : RS_BLOCK;
    for (int i = 0; i < RS_CACHE; i++) {
      cc.off[i] = -1;
    }
    cc.next = 0;
    for (size_t row = begin; row < end; row++) {
      rs_linear_row(p, x, &cc, row, c0, w, y + row * ow + c0);
    }
  }
}

static wm_error *rs_run(void *state, const cpu_run_t *run) {
  const rs_plan_t *p = state;
  if (run->n_out < 1 || run->in[0].count != p->count[0] ||
      run->out[0].count != p->count[1]) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "Resize kernel: tensors do not match the plan");
  }
  if (p->count[1] == 0) {
    return NULL;
  }
  rs_job_t j = {p, run->in[0].data, run->out[0].data};
  size_t ow = (size_t)p->out[p->rank - 1];
  if (p->mode == MODE_NEAREST) {
    k_for(run->pool, p->rows, k_row_grain(ow, K_GRAIN), rs_nearest_rows, &j);
  } else {
    size_t per = ow * (size_t)p->lw * 2;
    k_for(run->pool, p->rows, k_row_grain(per, K_GRAIN), rs_linear_rows, &j);
  }
  return NULL;
}

// --------------------------------------------------------------- table

const cpu_kernel_t cpu_kernels_resize[] = {
    {"Resize", 10, WM_IMPL_NATIVE_KERNEL, rs_query, rs_plan, rs_run, rs_destroy,
     NULL, NULL, NULL},
    {"Upsample", 7, WM_IMPL_NATIVE_KERNEL, rs_query, rs_plan, rs_run,
     rs_destroy, NULL, NULL, NULL},
    {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
