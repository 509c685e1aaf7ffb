// Operators of the resize family: Resize (opsets 10, 11, 13, 18, 19) and
// the deprecated Upsample (opsets 7, 9). Both run one core: per output dim
// a table of taps (input index and weight) from the coordinate transform
// and the interpolation kernel, then a separable weighted sum over the
// taps of every dim. Nearest copies whole elements and so works for any
// dtype. With antialias (opset 18) a downsampled dim stretches the linear
// or cubic kernel by 1/scale, so each output averages every input it
// covers, and the weights are normalized to sum to one.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

enum resize_mode { MODE_NEAREST, MODE_LINEAR, MODE_CUBIC };

enum coord_mode {
  COORD_HALF_PIXEL,
  COORD_HALF_PIXEL_SYMMETRIC,
  COORD_PYTORCH_HALF_PIXEL,
  COORD_ALIGN_CORNERS,
  COORD_ASYMMETRIC,
  COORD_TF_HALF_PIXEL_FOR_NN,
  COORD_TF_CROP_AND_RESIZE,
};

enum nearest_mode {
  NEAREST_ROUND_PREFER_FLOOR,
  NEAREST_ROUND_PREFER_CEIL,
  NEAREST_FLOOR,
  NEAREST_CEIL,
};

// Everything a Resize or Upsample node computes with.
typedef struct resize_params {
  enum resize_mode mode;          // interpolation
  enum coord_mode coord;          // output -> input coordinate mapping
  enum nearest_mode nearest;      // rounding of nearest
  double cubic_a;                 // cubic_coeff_a
  bool exclude_outside;           // zero weights outside the input
  bool antialias;                 // stretch the kernel when downsampling
  double extrapolation;           // value outside the crop (tf_crop)
  int32_t rank;                   // rank of the input
  bool known;                     // scales/sizes known: fields below set
  double scale[WM_MAX_RANK];      // output / input per dim
  int64_t out_dims[WM_MAX_RANK];  // output dims
  double roi_start[WM_MAX_RANK];  // crop start per dim (normalized)
  double roi_end[WM_MAX_RANK];    // crop end per dim (normalized)
} resize_params_t;

// ------------------------------------------------------ attribute parsing

// The names of enum resize_mode, coord_mode and nearest_mode.
static const char *const modes[] = {"nearest", "linear", "cubic"};
static const char *const coords[] = {
    "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
    "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
static const char *const nearests[] = {"round_prefer_floor",
                                       "round_prefer_ceil", "floor", "ceil"};

// Maps |s| through |names| to its index; -1 if absent.
static int32_t lookup(const char *s, const char *const *names, int32_t n) {
  for (int32_t i = 0; i < n; i++) {
    if (strcmp(s, names[i]) == 0) {
      return i;
    }
  }
  return -1;
}

static bool is_upsample(const wm_op_ctx_t *ctx) {
  return strcmp(ctx->node->op_type, "Upsample") == 0;
}

// Reads the string attributes into |p| for the node's operator and opset.
static wm_status_t resize_modes(const wm_op_ctx_t *ctx, resize_params_t *p) {
  const wm_node_t *n = ctx->node;
  const char *mode = wm_node_attr_string(n, "mode", "nearest");
  bool legacy = is_upsample(ctx) || ctx->opset < 11;
  int32_t m = lookup(mode, modes, legacy ? 2 : 3);
  if (m < 0 && legacy && strcmp(mode, "bilinear") == 0) {
    m = MODE_LINEAR;
  }
  if (m < 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "unknown mode \"%s\"", mode);
  }
  p->mode = (enum resize_mode)m;
  p->cubic_a = -0.75;
  p->exclude_outside = false;
  p->extrapolation = 0;
  if (legacy) {
    // Upsample and Resize-10 map coordinates asymmetrically and floor
    // (as the ONNX version converter to Resize-11 spells out).
    p->coord = COORD_ASYMMETRIC;
    p->nearest = NEAREST_FLOOR;
    return NULL;
  }
  const char *coord =
      wm_node_attr_string(n, "coordinate_transformation_mode", "half_pixel");
  int32_t c = lookup(coord, coords, 7);
  if (c < 0 || (c == COORD_HALF_PIXEL_SYMMETRIC && ctx->opset < 19)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "unknown coordinate_transformation_mode \"%s\"", coord);
  }
  p->coord = (enum coord_mode)c;
  const char *nearest =
      wm_node_attr_string(n, "nearest_mode", "round_prefer_floor");
  int32_t k = lookup(nearest, nearests, 4);
  if (k < 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "unknown nearest_mode \"%s\"",
                       nearest);
  }
  p->nearest = (enum nearest_mode)k;
  p->cubic_a = wm_node_attr_float(n, "cubic_coeff_a", -0.75f);
  p->exclude_outside = wm_node_attr_int(n, "exclude_outside", 0) != 0;
  p->extrapolation = wm_node_attr_float(n, "extrapolation_value", 0.0f);
  // The spec gives antialias meaning only for linear and cubic; nearest
  // ignores it.
  p->antialias = ctx->opset >= 18 && p->mode != MODE_NEAREST &&
                 wm_node_attr_int(n, "antialias", 0) != 0;
  return NULL;
}

// Returns the float tensor input |i| when present, known and non-empty.
static const wm_tensor_t *float_input(const wm_op_ctx_t *ctx, int32_t i) {
  if (!wm_op_has_input(ctx, i) || !ctx->in[i] || ctx->in[i]->count == 0) {
    return NULL;
  }
  return ctx->in[i];
}

// True when input |i| is present but its value is not known yet.
static bool input_pending(const wm_op_ctx_t *ctx, int32_t i) {
  if (!wm_op_has_input(ctx, i) || ctx->in[i]) {
    return false;
  }
  // An input whose shape says it is empty counts as absent.
  const wm_shape_t *s = wm_op_in_shape(ctx, i);
  size_t n;
  return !(wm_shape_numel(s, &n) && n == 0);
}

// Reads the axes (opset 18) into |axes|; all dims when absent.
static wm_status_t resize_axes(const wm_op_ctx_t *ctx, int32_t rank,
                               int32_t *axes, int32_t *out_count) {
  const int64_t *v;
  size_t n;
  if (is_upsample(ctx) || ctx->opset < 18 ||
      !wm_node_attr_ints(ctx->node, "axes", &v, &n)) {
    for (int32_t d = 0; d < rank; d++) {
      axes[d] = d;
    }
    *out_count = rank;
    return NULL;
  }
  if (n > (size_t)rank) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "%zu axes for rank %d", n, rank);
  }
  bool seen[WM_MAX_RANK] = {false};
  for (size_t i = 0; i < n; i++) {
    WM_RETURN_IF_ERROR(wm_op_axis(ctx, v[i], rank, "axis", &axes[i]));
    if (seen[axes[i]]) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "axis %lld is repeated",
                         (long long)v[i]);
    }
    seen[axes[i]] = true;
  }
  *out_count = (int32_t)n;
  return NULL;
}

// Sets the output dims and scales from scales (input or attribute).
static wm_status_t resize_from_scales(const wm_op_ctx_t *ctx,
                                      const wm_shape_t *in, const float *v,
                                      size_t n, const int32_t *axes,
                                      int32_t n_axes, resize_params_t *p) {
  if (n != (size_t)n_axes) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "scales has %zu entries for %d axes", n, n_axes);
  }
  for (int32_t i = 0; i < n_axes; i++) {
    int32_t d = axes[i];
    if (!(v[i] > 0) || !isfinite(v[i])) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "scale %g for axis %d must be positive", (double)v[i],
                         d);
    }
    p->scale[d] = v[i];
    if (in->dims[d] < 0) {
      p->out_dims[d] = -1;
      continue;
    }
    // Products in float, as the ONNX reference and onnxruntime compute.
    float out = floorf(v[i] * (float)in->dims[d]);
    if (!(out < 9.0e15f)) {
      return WM_OP_ERROR(ctx, OUT_OF_RANGE,
                         "scale %g makes axis %d of size %lld too large",
                         (double)v[i], d, (long long)in->dims[d]);
    }
    p->out_dims[d] = (int64_t)out;
  }
  return NULL;
}

// Sets the output dims and scales from sizes (with the opset-18 aspect
// ratio policy).
static wm_status_t resize_from_sizes(const wm_op_ctx_t *ctx,
                                     const wm_shape_t *in,
                                     const wm_tensor_t *sizes,
                                     const int32_t *axes, int32_t n_axes,
                                     resize_params_t *p) {
  if (sizes->count != (size_t)n_axes) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "sizes has %zu entries for %d axes", sizes->count,
                       n_axes);
  }
  for (int32_t i = 0; i < n_axes; i++) {
    int64_t v = wm_tensor_get_i64(sizes, (size_t)i);
    if (v < 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "size %lld for axis %d is negative", (long long)v,
                         axes[i]);
    }
    p->out_dims[axes[i]] = v;
    int64_t len = in->dims[axes[i]];
    p->scale[axes[i]] = len > 0 ? (double)v / (double)len : 1.0;
  }
  const char *policy =
      ctx->opset >= 18 ? wm_node_attr_string(
                             ctx->node, "keep_aspect_ratio_policy", "stretch")
                       : "stretch";
  if (strcmp(policy, "stretch") == 0) {
    return NULL;
  }
  bool larger = strcmp(policy, "not_smaller") == 0;
  if (!larger && strcmp(policy, "not_larger") != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "unknown keep_aspect_ratio_policy \"%s\"", policy);
  }
  double s = larger ? 0 : INFINITY;
  for (int32_t i = 0; i < n_axes; i++) {
    double r = p->scale[axes[i]];
    s = larger ? fmax(s, r) : fmin(s, r);
  }
  for (int32_t i = 0; i < n_axes; i++) {
    int32_t d = axes[i];
    p->scale[d] = s;
    p->out_dims[d] =
        in->dims[d] < 0 ? -1 : (int64_t)floor(s * (double)in->dims[d] + 0.5);
  }
  return NULL;
}

// Resolves |p| for input shape |in| (rank known); p->known stays false
// when scales or sizes are not known yet.
static wm_status_t resize_params(const wm_op_ctx_t *ctx, const wm_shape_t *in,
                                 resize_params_t *p) {
  memset(p, 0, sizeof(*p));
  WM_RETURN_IF_ERROR(resize_modes(ctx, p));
  p->rank = in->rank;
  for (int32_t d = 0; d < in->rank; d++) {
    p->scale[d] = 1;
    p->out_dims[d] = in->dims[d];
    p->roi_start[d] = 0;
    p->roi_end[d] = 1;
  }
  int32_t axes[WM_MAX_RANK], n_axes = 0;
  WM_RETURN_IF_ERROR(resize_axes(ctx, in->rank, axes, &n_axes));
  if (is_upsample(ctx) && ctx->opset < 9) {
    const float *v;
    size_t n;
    if (!wm_node_attr_floats(ctx->node, "scales", &v, &n)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute \"scales\" is required");
    }
    p->known = true;
    return resize_from_scales(ctx, in, v, n, axes, n_axes, p);
  }
  bool legacy = is_upsample(ctx) || ctx->opset < 11;
  int32_t scales_at = legacy ? 1 : 2, sizes_at = 3;
  if (input_pending(ctx, scales_at) ||
      (!legacy && input_pending(ctx, sizes_at)) ||
      (!legacy && p->coord == COORD_TF_CROP_AND_RESIZE &&
       input_pending(ctx, 1))) {
    return NULL;
  }
  const wm_tensor_t *scales = float_input(ctx, scales_at);
  const wm_tensor_t *sizes = legacy ? NULL : float_input(ctx, sizes_at);
  if ((scales != NULL) == (sizes != NULL)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "exactly one of scales and sizes must be given");
  }
  const wm_tensor_t *roi = legacy ? NULL : float_input(ctx, 1);
  if (roi && p->coord == COORD_TF_CROP_AND_RESIZE) {
    if (roi->count != 2 * (size_t)n_axes) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "roi has %zu entries, want %d",
                         roi->count, 2 * n_axes);
    }
    for (int32_t i = 0; i < n_axes; i++) {
      p->roi_start[axes[i]] = wm_tensor_get_f64(roi, (size_t)i);
      p->roi_end[axes[i]] = wm_tensor_get_f64(roi, (size_t)(n_axes + i));
    }
  }
  p->known = true;
  if (sizes) {
    if (!wm_dtype_is_int(sizes->dtype)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "sizes is %s, want int64",
                         wm_dtype_name(sizes->dtype));
    }
    return resize_from_sizes(ctx, in, sizes, axes, n_axes, p);
  }
  if (!wm_dtype_is_float(scales->dtype)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "scales is %s, want float",
                       wm_dtype_name(scales->dtype));
  }
  float *v = wm_malloc(scales->count * sizeof(float));
  if (!v) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < scales->count; i++) {
    v[i] = (float)wm_tensor_get_f64(scales, i);
  }
  wm_status_t st =
      resize_from_scales(ctx, in, v, scales->count, axes, n_axes, p);
  free(v);
  return st;
}

// Parameters, for Resize and Upsample of any opset alike: the three
// modes by name (Upsample and Resize-10: asymmetric, floor), cubic_coeff_a,
// exclude_outside, extrapolation_value, antialias (0 where the operator
// has none or for nearest), and per dim of the input the scale (output /
// input, 1 on dims not resized; from sizes, the aspect-ratio policy
// applied) and the roi (starts, then ends), both 1-D double tensors.
static wm_status_t resize_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  resize_params_t p;
  if (in->rank < 0) {
    out->pending = true;
    return NULL;
  }
  WM_RETURN_IF_ERROR(resize_params(ctx, in, &p));
  out->pending = !p.known;
  if (!p.known) {
    return NULL;
  }
  double roi[2 * WM_MAX_RANK];
  for (int32_t d = 0; d < p.rank; d++) {
    roi[d] = p.roi_start[d];
    roi[p.rank + d] = p.roi_end[d];
  }
  WM_RETURN_IF_ERROR(wm_op_param_string(ctx, out, "mode", modes[p.mode]));
  WM_RETURN_IF_ERROR(wm_op_param_string(
      ctx, out, "coordinate_transformation_mode", coords[p.coord]));
  WM_RETURN_IF_ERROR(
      wm_op_param_string(ctx, out, "nearest_mode", nearests[p.nearest]));
  WM_RETURN_IF_ERROR(wm_op_param_float(ctx, out, "cubic_coeff_a", p.cubic_a));
  WM_RETURN_IF_ERROR(
      wm_op_param_int(ctx, out, "exclude_outside", p.exclude_outside));
  WM_RETURN_IF_ERROR(
      wm_op_param_float(ctx, out, "extrapolation_value", p.extrapolation));
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "antialias", p.antialias));
  WM_RETURN_IF_ERROR(wm_op_param_reals(ctx, out, "scales", p.scale, p.rank));
  return wm_op_param_reals(ctx, out, "roi", roi, 2 * p.rank);
}

static wm_status_t resize_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  resize_params_t p;
  if (in->rank < 0) {
    memset(&p, 0, sizeof(p));
    WM_RETURN_IF_ERROR(resize_modes(ctx, &p));
    wm_op_set_out_unknown(ctx, 0, dtype);
    return NULL;
  }
  WM_RETURN_IF_ERROR(resize_params(ctx, in, &p));
  if (p.mode != MODE_NEAREST && dtype != WM_DTYPE_UNDEFINED &&
      !wm_dtype_is_float(dtype) && !wm_dtype_is_int(dtype)) {
    return WM_OP_ERROR(
        ctx, INVALID_ARGUMENT, "%s interpolation does not apply to %s",
        p.mode == MODE_LINEAR ? "linear" : "cubic", wm_dtype_name(dtype));
  }
  wm_shape_t out = {in->rank, {0}};
  for (int32_t d = 0; d < in->rank; d++) {
    out.dims[d] = p.known ? p.out_dims[d] : -1;
  }
  wm_op_set_out(ctx, 0, dtype, &out);
  return NULL;
}

// ------------------------------------------------------------------ core

// Maps output coordinate |x| of dim |d| to an input coordinate.
static double resize_coord(const resize_params_t *p, int32_t d, int64_t x,
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
    case COORD_TF_CROP_AND_RESIZE: {
      double a = p->roi_start[d], b = p->roi_end[d];
      if (p->out_dims[d] > 1) {
        return a * (lin - 1) +
               xr * (b - a) * (lin - 1) / (double)(p->out_dims[d] - 1);
      }
      return 0.5 * (a + b) * (lin - 1);
    }
  }
  return xr;
}

// Rounds |x| for nearest mode.
static double nearest_round(enum nearest_mode m, double x) {
  double f = floor(x);
  switch (m) {
    case NEAREST_ROUND_PREFER_FLOOR:
      return x - f <= 0.5 ? f : f + 1;
    case NEAREST_ROUND_PREFER_CEIL:
      return x - f < 0.5 ? f : f + 1;
    case NEAREST_FLOOR:
      return f;
    case NEAREST_CEIL:
      return ceil(x);
  }
  return f;
}

// Cubic convolution weights for the taps at offsets -1, 0, 1, 2 from
// floor for fraction |t| in (0, 1].
static void cubic_weights(double a, double t, double w[4]) {
  double x[4] = {1 + t, t, 1 - t, 2 - t};
  for (int32_t i = 0; i < 4; i++) {
    double z = x[i];
    w[i] = z <= 1 ? ((a + 2) * z - (a + 3)) * z * z + 1
                  : ((a * z - 5 * a) * z + 8 * a) * z - 4 * a;
  }
}

// Taps of every output position of one dim.
typedef struct dim_taps {
  int64_t width;   // room for taps per output position
  int32_t *count;  // taps per output position; 0 = extrapolate
  int64_t *index;  // |width| input indices per position
  double *weight;  // |width| weights per position
} dim_taps_t;

// Offset of the first tap from the input position below the sample
// point, for a kernel of radius |radius| (1 linear, 2 cubic) stretched by
// 1/|scale| when antialiasing a downsampled dim; the taps are symmetric,
// so there are 2 - 2 * first of them.
static int64_t first_tap(const resize_params_t *p, int32_t d, double radius) {
  double s = p->scale[d];
  if (!p->antialias || s >= 1 || !(s > 0)) {
    return 1 - (int64_t)radius;
  }
  return (int64_t)floor(-radius / s) + 1;
}

// Taps per output position of dim |d|.
static int64_t tap_width(const resize_params_t *p, int32_t d) {
  switch (p->mode) {
    case MODE_NEAREST:
      return 1;
    case MODE_LINEAR:
      return 2 - 2 * first_tap(p, d, 1);
    case MODE_CUBIC:
      return 2 - 2 * first_tap(p, d, 2);
  }
  return 1;
}

// Cubic convolution kernel with coefficient |a| at distance |z|.
static double cubic_kernel(double a, double z) {
  z = fabs(z);
  if (z <= 1) {
    return ((a + 2) * z - (a + 3)) * z * z + 1;
  }
  if (z < 2) {
    return ((a * z - 5 * a) * z + 8 * a) * z - 4 * a;
  }
  return 0;
}

// Antialiased weights of dim |d| for the |n| taps from |first| past the
// input position below the sample point, |frac| in (0, 1] above it: the
// kernel evaluated at distances scaled by the scale, normalized.
static void antialias_weights(const resize_params_t *p, int32_t d,
                              int64_t first, int64_t n, double frac,
                              double *w) {
  double s = fmin(p->scale[d], 1.0);
  double sum = 0;
  for (int64_t k = 0; k < n; k++) {
    double z = s * ((double)(first + k) - frac);
    w[k] = p->mode == MODE_LINEAR ? fmax(0.0, 1 - fabs(z))
                                  : cubic_kernel(p->cubic_a, z);
    sum += w[k];
  }
  for (int64_t k = 0; k < n && sum != 0; k++) {
    w[k] /= sum;
  }
}

// Fills the taps of dim |d| (|out_len| positions over |in_len| inputs);
// |ws| has room for t->width weights.
static void build_taps(const resize_params_t *p, int32_t d, int64_t in_len,
                       int64_t out_len, dim_taps_t *t, double *ws) {
  for (int64_t x = 0; x < out_len; x++) {
    int32_t *count = &t->count[x];
    int64_t *idx = &t->index[x * t->width];
    double *w = &t->weight[x * t->width];
    double xo = resize_coord(p, d, x, in_len);
    if (p->coord == COORD_TF_CROP_AND_RESIZE &&
        (xo < 0 || xo > (double)(in_len - 1))) {
      *count = 0;
      continue;
    }
    if (p->mode == MODE_NEAREST) {
      double r = nearest_round(p->nearest, xo);
      r = r < 0 ? 0 : r > (double)(in_len - 1) ? (double)(in_len - 1) : r;
      *count = 1;
      idx[0] = (int64_t)r;
      w[0] = 1;
      continue;
    }
    // Taps start below floor(xo); an integral xo takes the upper tap with
    // full weight, as the ONNX reference does.
    double f = floor(xo);
    double frac = xo - f;
    if (frac == 0) {
      f -= 1;
      frac = 1;
    }
    int64_t n = t->width;
    int64_t offset = first_tap(p, d, p->mode == MODE_LINEAR ? 1 : 2);
    int64_t first = (int64_t)f + offset;
    if (p->antialias) {
      antialias_weights(p, d, offset, n, frac, ws);
    } else if (p->mode == MODE_LINEAR) {
      ws[0] = 1 - frac;
      ws[1] = frac;
    } else {
      cubic_weights(p->cubic_a, frac, ws);
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
      // Every weight vanished: fall back to the nearest clamped input.
      int64_t i = (int64_t)floor(xo + 0.5);
      idx[0] = i < 0 ? 0 : i >= in_len ? in_len - 1 : i;
      w[0] = 1;
      *count = 1;
    }
  }
}

// Computes output element |coord| from the taps of every dim.
static wm_status_t resize_element(const resize_params_t *p,
                                  const wm_tensor_t *in, wm_tensor_t *out,
                                  size_t o, const int64_t *coord,
                                  const dim_taps_t *taps,
                                  const int64_t *strides) {
  int32_t r = p->rank;
  const int32_t *cnt[WM_MAX_RANK];
  const int64_t *idx[WM_MAX_RANK];
  const double *w[WM_MAX_RANK];
  for (int32_t d = 0; d < r; d++) {
    cnt[d] = &taps[d].count[coord[d]];
    idx[d] = &taps[d].index[coord[d] * taps[d].width];
    w[d] = &taps[d].weight[coord[d] * taps[d].width];
    if (*cnt[d] == 0) {
      wm_tensor_set_f64(out, o, p->extrapolation);
      return NULL;
    }
  }
  if (p->mode == MODE_NEAREST) {
    size_t off = 0;
    for (int32_t d = 0; d < r; d++) {
      off += (size_t)idx[d][0] * (size_t)strides[d];
    }
    if (out->dtype == WM_DTYPE_STRING) {
      const char *s = ((char *const *)in->data)[off];
      return wm_tensor_set_string(out, o, s, strlen(s));
    }
    size_t es = wm_dtype_size(out->dtype);
    memcpy((char *)out->data + o * es, (const char *)in->data + off * es, es);
    return NULL;
  }
  int32_t k[WM_MAX_RANK] = {0};
  double sum = 0;
  for (;;) {
    double weight = 1;
    size_t off = 0;
    for (int32_t d = 0; d < r; d++) {
      weight *= w[d][k[d]];
      off += (size_t)idx[d][k[d]] * (size_t)strides[d];
    }
    sum += weight * wm_tensor_get_f64(in, off);
    int32_t d = r - 1;
    for (; d >= 0; d--) {
      if (++k[d] < *cnt[d]) {
        break;
      }
      k[d] = 0;
    }
    if (d < 0) {
      break;
    }
  }
  if (wm_dtype_is_int(out->dtype)) {
    sum = nearbyint(sum);
  }
  wm_tensor_set_f64(out, o, sum);
  return NULL;
}

static wm_status_t resize_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *in = ctx->in[0];
  wm_tensor_t *out = ctx->out[0];
  resize_params_t p;
  WM_RETURN_IF_ERROR(resize_params(ctx, &in->shape, &p));
  int32_t r = in->shape.rank;
  wm_shape_t want = wm_shape_make(r, p.out_dims);
  if (!p.known || !wm_shape_equal(&out->shape, &want)) {
    return WM_OP_ERROR(ctx, INTERNAL, "output shape does not match");
  }
  if (out->count == 0) {
    return NULL;
  }
  for (int32_t d = 0; d < r; d++) {
    if (in->shape.dims[d] == 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "cannot resize empty axis %d to size %lld", d,
                         (long long)out->shape.dims[d]);
    }
  }
  // One block of taps for all dims: |positions| counts and |slots|
  // indices and weights.
  dim_taps_t taps[WM_MAX_RANK];
  size_t positions = 0, slots = 0, widest = 1;
  for (int32_t d = 0; d < r; d++) {
    taps[d].width = tap_width(&p, d);
    size_t n;
    if (taps[d].width > INT32_MAX ||
        !wm_checked_mul((size_t)out->shape.dims[d], (size_t)taps[d].width,
                        &n) ||
        !wm_checked_add(slots, n, &slots)) {
      return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                         "%lld taps per output of axis %d are too many",
                         (long long)taps[d].width, d);
    }
    positions += (size_t)out->shape.dims[d];
    widest = taps[d].width > (int64_t)widest ? (size_t)taps[d].width : widest;
  }
  int32_t *counts = wm_calloc(positions, sizeof(int32_t));
  int64_t *indices = wm_calloc(slots, sizeof(int64_t));
  double *weights = wm_calloc(slots, sizeof(double));
  double *scratch = wm_calloc(widest, sizeof(double));
  wm_status_t st = NULL;
  if (!counts || !indices || !weights || !scratch) {
    st = WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  size_t at = 0, at_slot = 0;
  for (int32_t d = 0; d < r; d++) {
    taps[d].count = counts + at;
    taps[d].index = indices + at_slot;
    taps[d].weight = weights + at_slot;
    build_taps(&p, d, in->shape.dims[d], out->shape.dims[d], &taps[d], scratch);
    at += (size_t)out->shape.dims[d];
    at_slot += (size_t)out->shape.dims[d] * (size_t)taps[d].width;
  }
  int64_t strides[WM_MAX_RANK];
  wm_shape_strides(&in->shape, strides);
  int64_t coord[WM_MAX_RANK] = {0};
  for (size_t o = 0; o < out->count && !st; o++) {
    st = resize_element(&p, in, out, o, coord, taps, strides);
    for (int32_t d = r - 1; d >= 0; d--) {
      if (++coord[d] < out->shape.dims[d]) {
        break;
      }
      coord[d] = 0;
    }
  }
done:
  free(counts);
  free(indices);
  free(weights);
  free(scratch);
  return st;
}

// A few FLOPs per output element: a multiply-add per tap of every
// resized dim; nearest is pure data movement.
static void resize_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  resize_params_t p;
  memset(&p, 0, sizeof(p));
  wm_status_t st = resize_modes(ctx, &p);
  if (st) {
    wm_status_free(st);
    return;
  }
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  const wm_shape_t *os = &ctx->out_types[0].shape;
  size_t n;
  if (p.mode == MODE_NEAREST || !wm_shape_numel(os, &n) ||
      in->rank != os->rank) {
    return;
  }
  double taps = 1;
  for (int32_t d = 0; d < in->rank && d < WM_MAX_RANK; d++) {
    if (in->dims[d] != os->dims[d]) {
      p.scale[d] = in->dims[d] > 0 && os->dims[d] > 0
                       ? (double)os->dims[d] / (double)in->dims[d]
                       : 1.0;
      taps *= (double)tap_width(&p, d);
    }
  }
  out->flops = (double)n * 2 * taps;
}

const wm_op_def_t wm_ops_resize[] = {
    {"Resize", "", 10, 1, 4, 1, 1, 0, resize_infer, resize_run, resize_cost, 0,
     resize_resolve},
    {"Upsample", "", 7, 1, 2, 1, 1, 0, resize_infer, resize_run, resize_cost, 0,
     resize_resolve},
    WM_OPS_END,
};
