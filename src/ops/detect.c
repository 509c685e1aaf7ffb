// Detection and sampling operators: NonMaxSuppression, RoiAlign, GridSample,
// AffineGrid, MaxUnpool. Kernels convert to double, compute in double and
// convert back once. Coordinates and indices read from tensors are checked
// (finite, within bounds) before they become array offsets, so hostile boxes,
// grids and indices give a status naming the node instead of reading out of
// bounds or converting an out-of-range double to an integer.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

// Spatial dims of an N x C x D1 x ... x Dn tensor.
enum { MAX_SPATIAL = WM_MAX_RANK - 2 };

// ------------------------------------------------------------ attributes

// ---------------------------------------------------------- small helpers

// Requires input |i| to have rank within [lo, hi] when its rank is known.
static wm_status_t check_rank(const wm_op_ctx_t *ctx, int32_t i,
                              const char *what, int32_t lo, int32_t hi) {
  const wm_shape_t *s = wm_op_in_shape(ctx, i);
  if (s->rank >= 0 && (s->rank < lo || s->rank > hi)) {
    char buf[160];
    if (lo == hi) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d (%s) has shape %s, want rank %d", i, what,
                         wm_shape_format(s, buf, sizeof(buf)), lo);
    }
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (%s) has shape %s, want rank %d to %d", i,
                       what, wm_shape_format(s, buf, sizeof(buf)), lo, hi);
  }
  return NULL;
}

// Requires input |i|, when its dtype is known, to be one of |mask|.
static wm_status_t check_dtype(const wm_op_ctx_t *ctx, int32_t i,
                               const char *what, uint32_t mask,
                               const char *want) {
  wm_dtype_t d = wm_op_in_dtype(ctx, i);
  if (d != WM_DTYPE_UNDEFINED && !(mask & (1u << d))) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input %d (%s) is %s, want %s", i,
                       what, wm_dtype_name(d), want);
  }
  return NULL;
}

// Requires dims |da| of input |a| and |db| of input |b| to agree when both
// are known.
static wm_status_t check_same_dim(const wm_op_ctx_t *ctx, int32_t a, int32_t da,
                                  int32_t b, int32_t db) {
  const wm_shape_t *sa = wm_op_in_shape(ctx, a);
  const wm_shape_t *sb = wm_op_in_shape(ctx, b);
  if (sa->rank > da && sb->rank > db && sa->dims[da] >= 0 &&
      sb->dims[db] >= 0 && sa->dims[da] != sb->dims[db]) {
    char b1[160], b2[160];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d %s and input %d %s disagree: dim %d is %lld "
                       "but dim %d is %lld",
                       a, wm_shape_format(sa, b1, sizeof(b1)), b,
                       wm_shape_format(sb, b2, sizeof(b2)), da,
                       (long long)sa->dims[da], db, (long long)sb->dims[db]);
  }
  return NULL;
}

// Requires the optional input |i|, when present with a known shape, to
// hold at most one element (a scalar or a [1] vector).
static wm_status_t check_scalar(const wm_op_ctx_t *ctx, int32_t i,
                                const char *what) {
  const wm_shape_t *s = wm_op_in_shape(ctx, i);
  size_t n;
  if (wm_op_has_input(ctx, i) && wm_shape_is_known(s) &&
      (!wm_shape_numel(s, &n) || n > 1)) {
    char buf[160];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (%s) has shape %s, want a scalar", i, what,
                       wm_shape_format(s, buf, sizeof(buf)));
  }
  return NULL;
}

// Requires tensor |t| (the value of input or output |what|) to have shape
// |want|: the kernels index by the tensors themselves, so a value whose
// shape differs from its declared type must not reach them.
static wm_status_t check_tensor_shape(const wm_op_ctx_t *ctx,
                                      const wm_tensor_t *t,
                                      const wm_shape_t *want,
                                      const char *what) {
  if (!wm_shape_equal(&t->shape, want)) {
    char b1[160], b2[160];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "%s has shape %s, want %s", what,
                       wm_shape_format(&t->shape, b1, sizeof(b1)),
                       wm_shape_format(want, b2, sizeof(b2)));
  }
  return NULL;
}

// Copies a tensor into a heap array of doubles.
static wm_status_t load_f64(const wm_op_ctx_t *ctx, const wm_tensor_t *t,
                            double **out) {
  *out = wm_malloc((t->count ? t->count : 1) * sizeof(double));
  if (!*out) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for %zu elements", t->count);
  }
  for (size_t i = 0; i < t->count; i++) {
    (*out)[i] = wm_tensor_get_f64(t, i);
  }
  return NULL;
}

// Product of dims as a double for costs; -1 when any is unknown.
static double prod_f(const int64_t *dims, int32_t n) {
  double p = 1;
  for (int32_t i = 0; i < n; i++) {
    if (dims[i] < 0) {
      return -1;
    }
    p *= (double)dims[i];
  }
  return p;
}

static double numel_f(const wm_shape_t *s) {
  return s->rank < 0 ? -1 : prod_f(s->dims, s->rank);
}

// ----------------------------------------------------- NonMaxSuppression

// Inputs: boxes [B, n, 4], scores [B, K, n], then the optional scalars
// max_output_boxes_per_class (int64), iou_threshold and score_threshold.
// Output: selected_indices [selected, 3] int64 of (batch, class, box),
// batch-major, then class, then in selection order. Its length depends on
// the values, so it is unknown statically and computed by the shape rule
// at run time.

// The resolved parameters of a NonMaxSuppression node.
typedef struct nms {
  int64_t max_out;  // boxes kept per batch and class, >= 0
  double iou;       // a box whose IoU with a kept box exceeds it is dropped
  double score;     // scores must exceed it when |has_score|
  bool has_score;   // score_threshold given
  bool center;      // boxes are [x_center, y_center, width, height]
  int64_t batches;  // B
  int64_t classes;  // K
  int64_t boxes;    // n
} nms_t;

// One candidate of a class: its score and box index.
typedef struct nms_cand {
  double score;  // score of the box for the class
  int64_t box;   // box index
} nms_cand_t;

// An axis-aligned box as min/max corners.
typedef struct nms_box {
  double x0, y0, x1, y1;  // min/max corners (min > max kept as given)
} nms_box_t;

static wm_status_t nms_check(const wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(check_rank(ctx, 0, "boxes", 3, 3));
  WM_RETURN_IF_ERROR(check_rank(ctx, 1, "scores", 3, 3));
  WM_RETURN_IF_ERROR(
      check_dtype(ctx, 1, "scores", WM_TYPES_FLOAT, "a float type"));
  WM_RETURN_IF_ERROR(check_dtype(ctx, 2, "max_output_boxes_per_class",
                                 WM_T(INT64) | WM_T(INT32), "int64"));
  WM_RETURN_IF_ERROR(
      check_dtype(ctx, 3, "iou_threshold", WM_TYPES_FLOAT, "a float type"));
  WM_RETURN_IF_ERROR(
      check_dtype(ctx, 4, "score_threshold", WM_TYPES_FLOAT, "a float type"));
  WM_RETURN_IF_ERROR(check_scalar(ctx, 2, "max_output_boxes_per_class"));
  WM_RETURN_IF_ERROR(check_scalar(ctx, 3, "iou_threshold"));
  WM_RETURN_IF_ERROR(check_scalar(ctx, 4, "score_threshold"));
  const wm_shape_t *bs = wm_op_in_shape(ctx, 0);
  if (bs->rank == 3 && bs->dims[2] >= 0 && bs->dims[2] != 4) {
    char buf[160];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 (boxes) has shape %s, want [batches, boxes, 4]",
                       wm_shape_format(bs, buf, sizeof(buf)));
  }
  WM_RETURN_IF_ERROR(check_same_dim(ctx, 0, 0, 1, 0));
  WM_RETURN_IF_ERROR(check_same_dim(ctx, 0, 1, 1, 2));
  int64_t center;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "center_point_box", 0, &center));
  if (center != 0 && center != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute center_point_box is %lld, want 0 or 1",
                       (long long)center);
  }
  return NULL;
}

// Reads the parameters; every present input must be known. Checks the
// shapes of the boxes and scores tensors themselves, which the selection
// indexes.
static wm_status_t nms_params(const wm_op_ctx_t *ctx, nms_t *p) {
  memset(p, 0, sizeof(*p));
  int64_t center;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "center_point_box", 0, &center));
  p->center = center == 1;
  const wm_tensor_t *mo = wm_op_has_input(ctx, 2) ? ctx->in[2] : NULL;
  if (mo && mo->count > 0) {
    int64_t v = wm_tensor_get_i64(mo, 0);
    p->max_out = v > 0 ? v : 0;
  }
  const wm_tensor_t *it = wm_op_has_input(ctx, 3) ? ctx->in[3] : NULL;
  if (it && it->count > 0) {
    p->iou = wm_tensor_get_f64(it, 0);
  }
  const wm_tensor_t *st = wm_op_has_input(ctx, 4) ? ctx->in[4] : NULL;
  if (st && st->count > 0) {
    p->has_score = true;
    p->score = wm_tensor_get_f64(st, 0);
  }
  const wm_shape_t *bs = &ctx->in[0]->shape, *ss = &ctx->in[1]->shape;
  if (bs->rank != 3 || bs->dims[2] != 4) {
    wm_shape_t want = {
        3, {bs->rank > 0 ? bs->dims[0] : 0, bs->rank > 1 ? bs->dims[1] : 0, 4}};
    WM_RETURN_IF_ERROR(check_tensor_shape(ctx, ctx->in[0], &want, "boxes"));
  }
  wm_shape_t want_scores = {
      3, {bs->dims[0], ss->rank > 1 ? ss->dims[1] : 1, bs->dims[1]}};
  WM_RETURN_IF_ERROR(
      check_tensor_shape(ctx, ctx->in[1], &want_scores, "scores"));
  p->batches = bs->dims[0];
  p->boxes = bs->dims[1];
  p->classes = ss->dims[1];
  if (p->max_out > p->boxes) {
    p->max_out = p->boxes;
  }
  return NULL;
}

// Orders candidates by descending score, then ascending box index; NaN
// scores come last. A total order, as qsort needs.
static int nms_cand_cmp(const void *pa, const void *pb) {
  const nms_cand_t *a = pa, *b = pb;
  bool an = isnan(a->score), bn = isnan(b->score);
  if (an != bn) {
    return an ? 1 : -1;
  }
  if (!an && a->score != b->score) {
    return a->score > b->score ? -1 : 1;
  }
  return (a->box > b->box) - (a->box < b->box);
}

// True when |a| and |b| overlap with an IoU above |thr|. Degenerate boxes
// (empty area) and NaN coordinates never suppress.
static bool nms_suppresses(const nms_box_t *a, const nms_box_t *b, double thr) {
  double ix0 = fmax(a->x0, b->x0), ix1 = fmin(a->x1, b->x1);
  if (!(ix1 > ix0)) {
    return false;
  }
  double iy0 = fmax(a->y0, b->y0), iy1 = fmin(a->y1, b->y1);
  if (!(iy1 > iy0)) {
    return false;
  }
  double inter = (ix1 - ix0) * (iy1 - iy0);
  double area_a = (a->x1 - a->x0) * (a->y1 - a->y0);
  double area_b = (b->x1 - b->x0) * (b->y1 - b->y0);
  double uni = area_a + area_b - inter;
  if (!(inter > 0) || !(area_a > 0) || !(area_b > 0) || !(uni > 0)) {
    return false;
  }
  return inter / uni > thr;
}

// Converts the boxes of batch |b| to min/max corners.
static void nms_load_boxes(const nms_t *p, const wm_tensor_t *boxes, int64_t b,
                           nms_box_t *out) {
  size_t base = (size_t)b * (size_t)p->boxes * 4;
  for (int64_t i = 0; i < p->boxes; i++) {
    double v[4];
    for (int k = 0; k < 4; k++) {
      v[k] = wm_tensor_get_f64(boxes, base + (size_t)i * 4 + (size_t)k);
    }
    nms_box_t *o = &out[i];
    if (p->center) {  // [x_center, y_center, width, height]
      o->x0 = v[0] - v[2] / 2;
      o->x1 = v[0] + v[2] / 2;
      o->y0 = v[1] - v[3] / 2;
      o->y1 = v[1] + v[3] / 2;
    } else {  // [y1, x1, y2, x2], either corner first
      o->y0 = fmin(v[0], v[2]);
      o->y1 = fmax(v[0], v[2]);
      o->x0 = fmin(v[1], v[3]);
      o->x1 = fmax(v[1], v[3]);
    }
  }
}

// Runs the selection and sets *out_count; writes the first rows (as many
// as |out| holds) into |out| when not NULL. Greedy: per batch and class
// the candidates are sorted once and each is tested against the boxes
// kept so far, O(n log n + n * max_out).
static wm_status_t nms_select(const wm_op_ctx_t *ctx, const nms_t *p,
                              wm_tensor_t *out, size_t *out_count) {
  *out_count = 0;
  size_t n = (size_t)p->boxes;
  if (p->max_out == 0 || n == 0) {
    return NULL;
  }
  const wm_tensor_t *boxes = ctx->in[0], *scores = ctx->in[1];
  nms_cand_t *cand = wm_malloc(n * sizeof(*cand));
  nms_box_t *bx = wm_malloc(n * sizeof(*bx));
  int64_t *kept = wm_malloc((size_t)p->max_out * sizeof(*kept));
  wm_status_t st = NULL;
  if (!cand || !bx || !kept) {
    st = WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory for %zu boxes", n);
    goto done;
  }
  size_t total = 0, rows = out ? out->count / 3 : 0;
  for (int64_t b = 0; b < p->batches; b++) {
    nms_load_boxes(p, boxes, b, bx);
    for (int64_t c = 0; c < p->classes; c++) {
      size_t base = ((size_t)b * (size_t)p->classes + (size_t)c) * n;
      size_t nc = 0;
      for (size_t i = 0; i < n; i++) {
        double s = wm_tensor_get_f64(scores, base + i);
        if (!p->has_score || s > p->score) {
          cand[nc].score = s;
          cand[nc].box = (int64_t)i;
          nc++;
        }
      }
      qsort(cand, nc, sizeof(*cand), nms_cand_cmp);
      int64_t nk = 0;
      for (size_t i = 0; i < nc && nk < p->max_out; i++) {
        const nms_box_t *cb = &bx[cand[i].box];
        bool keep = true;
        for (int64_t k = 0; k < nk && keep; k++) {
          keep = !nms_suppresses(cb, &bx[kept[k]], p->iou);
        }
        if (!keep) {
          continue;
        }
        kept[nk++] = cand[i].box;
        if (total < rows) {
          wm_tensor_set_i64(out, total * 3, b);
          wm_tensor_set_i64(out, total * 3 + 1, c);
          wm_tensor_set_i64(out, total * 3 + 2, cand[i].box);
        }
        total++;
      }
    }
  }
  *out_count = total;
done:
  free(cand);
  free(bx);
  free(kept);
  return st;
}

// True when every present input has a value.
static bool all_inputs_known(const wm_op_ctx_t *ctx) {
  for (int32_t i = 0; i < ctx->n_in; i++) {
    if (wm_op_has_input(ctx, i) && !ctx->in[i]) {
      return false;
    }
  }
  return true;
}

static wm_status_t nms_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(nms_check(ctx));
  wm_shape_t out = {2, {-1, 3}};
  if (all_inputs_known(ctx)) {
    nms_t p;
    size_t n;
    WM_RETURN_IF_ERROR(nms_params(ctx, &p));
    WM_RETURN_IF_ERROR(nms_select(ctx, &p, NULL, &n));
    out.dims[0] = (int64_t)n;
  }
  wm_op_set_out(ctx, 0, WM_DTYPE_INT64, &out);
  return NULL;
}

static wm_status_t nms_run(wm_op_ctx_t *ctx) {
  nms_t p;
  size_t n;
  WM_RETURN_IF_ERROR(nms_check(ctx));
  WM_RETURN_IF_ERROR(nms_params(ctx, &p));
  wm_tensor_t *out = ctx->out[0];
  WM_RETURN_IF_ERROR(nms_select(ctx, &p, out, &n));
  // The shape rule sized the output from the same selection.
  if (out->shape.rank != 2 || out->shape.dims[0] != (int64_t)n) {
    return WM_OP_ERROR(ctx, INTERNAL, "output has %lld rows, selection has %zu",
                       (long long)out->shape.dims[0], n);
  }
  return NULL;
}

// Cost: per batch and class, the score filter (n comparisons), the sort
// (n log2 n comparisons) and at most n * k IoU tests of about 20
// operations each, where k = min(max_output_boxes_per_class, n) when that
// input is known, else n: a worst-case bound, since suppression ends the
// tests early.
static void nms_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  const wm_shape_t *ss = wm_op_in_shape(ctx, 1);
  if (ss->rank != 3 || ss->dims[0] < 0 || ss->dims[1] < 0 || ss->dims[2] < 0) {
    return;
  }
  double n = (double)ss->dims[2];
  double k = n;
  if (wm_op_has_input(ctx, 2) && ctx->in[2] && ctx->in[2]->count > 0) {
    double m = (double)wm_tensor_get_i64(ctx->in[2], 0);
    k = m < 0 ? 0 : m < n ? m : n;
  } else if (!wm_op_has_input(ctx, 2)) {
    k = 0;
  }
  double per = n + (n > 1 ? n * log2(n) : 0) + n * k * 20;
  out->flops = (double)ss->dims[0] * (double)ss->dims[1] * per;
}

// -------------------------------------------------------------- RoiAlign

// Inputs: X [N, C, H, W], rois [R, 4] as (x1, y1, x2, y2) in input
// coordinates, batch_indices [R] int64. Output [R, C, output_height,
// output_width]. Each output bin averages (or maxes) a grid of bilinear
// samples. Mode "max" follows the ONNX reference and onnxruntime: a
// sample's value is the largest of its four weighted corner terms, not
// the interpolated value (onnx/onnx#4764).

// Work above this many bilinear taps over the map (R * C * bins * samples
// per bin, less the samples off the map) is refused: a hostile
// sampling_ratio would otherwise run for hours. 2^36 taps is about five
// minutes of this reference kernel (4 ns a tap); Mask R-CNN's heads need
// under 2^26.
#define ROI_MAX_TAPS 68719476736.0

typedef struct roi_align {
  int64_t out_h, out_w;  // bins per ROI
  int64_t sampling;      // samples per bin per axis, 0 = adaptive
  double scale;          // spatial_scale
  bool max;              // mode "max" (else "avg")
  bool half_pixel;       // shift coordinates by -0.5
} roi_align_t;

static wm_status_t roi_setup(const wm_op_ctx_t *ctx, roi_align_t *ra) {
  memset(ra, 0, sizeof(*ra));
  WM_RETURN_IF_ERROR(check_rank(ctx, 0, "X", 4, 4));
  WM_RETURN_IF_ERROR(check_rank(ctx, 1, "rois", 2, 2));
  WM_RETURN_IF_ERROR(check_rank(ctx, 2, "batch_indices", 1, 1));
  WM_RETURN_IF_ERROR(
      check_dtype(ctx, 1, "rois", WM_TYPES_FLOAT, "a float type"));
  WM_RETURN_IF_ERROR(
      check_dtype(ctx, 2, "batch_indices", WM_T(INT64) | WM_T(INT32), "int64"));
  const wm_shape_t *rs = wm_op_in_shape(ctx, 1);
  if (rs->rank == 2 && rs->dims[1] >= 0 && rs->dims[1] != 4) {
    char buf[160];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 1 (rois) has shape %s, want [num_rois, 4]",
                       wm_shape_format(rs, buf, sizeof(buf)));
  }
  WM_RETURN_IF_ERROR(check_same_dim(ctx, 1, 0, 2, 0));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "output_height", 1, &ra->out_h));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "output_width", 1, &ra->out_w));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "sampling_ratio", 0, &ra->sampling));
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "spatial_scale", 1.0, &ra->scale));
  if (ra->out_h < 1 || ra->out_w < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "output_height %lld and output_width %lld must be "
                       "positive",
                       (long long)ra->out_h, (long long)ra->out_w);
  }
  if (ra->sampling < 0 || ra->sampling > INT32_MAX) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute sampling_ratio is %lld, want 0 to %d",
                       (long long)ra->sampling, INT32_MAX);
  }
  if (!isfinite(ra->scale)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute spatial_scale is %g, want a finite number",
                       ra->scale);
  }
  static const char *const modes[] = {"avg", "max", NULL};
  int mode;
  WM_RETURN_IF_ERROR(wm_op_attr_choice(ctx, "mode", "avg", modes, &mode));
  ra->max = mode == 1;
  // Opset 10 had no coordinate_transformation_mode and behaved like
  // "output_half_pixel"; opset 16 added it with "half_pixel" the default.
  if (ctx->opset >= 16) {
    static const char *const ctms[] = {"half_pixel", "output_half_pixel", NULL};
    int ctm;
    WM_RETURN_IF_ERROR(wm_op_attr_choice(ctx, "coordinate_transformation_mode",
                                         "half_pixel", ctms, &ctm));
    ra->half_pixel = ctm == 0;
  }
  return NULL;
}

static wm_status_t roi_infer(wm_op_ctx_t *ctx) {
  roi_align_t ra;
  WM_RETURN_IF_ERROR(roi_setup(ctx, &ra));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *rs = wm_op_in_shape(ctx, 1);
  const wm_shape_t *bs = wm_op_in_shape(ctx, 2);
  wm_shape_t out = {4, {-1, -1, ra.out_h, ra.out_w}};
  if (rs->rank == 2 && rs->dims[0] >= 0) {
    out.dims[0] = rs->dims[0];
  } else if (bs->rank == 1) {
    out.dims[0] = bs->dims[0];
  }
  if (xs->rank == 4) {
    out.dims[1] = xs->dims[1];
  }
  return wm_op_set_out_checked(ctx, 0, wm_op_in_dtype(ctx, 0), &out);
}

// One axis of one ROI's sampling grid: sample i of bin p lies at
// origin + p * bin + (i + 0.5) * bin / grid.
typedef struct roi_axis {
  double origin;  // start in input pixels
  double bin;     // bin size (negative for an inverted ROI)
  int64_t grid;   // samples per bin (<= 0: none)
  int64_t size;   // the map's extent along this axis
} roi_axis_t;

static double roi_coord(const roi_axis_t *a, int64_t p, int64_t i) {
  return a->origin + (double)p * a->bin +
         ((double)i + 0.5) * a->bin / (double)a->grid;
}

// The first sample index of bin |p| whose coordinate is beyond |edge|
// (above it when |above|, below it otherwise; at or beyond when |or_at|),
// or the grid size if none is. Coordinates are monotonic in the index and
// move towards |edge|'s far side, so a binary search finds it exactly.
static int64_t roi_first(const roi_axis_t *a, int64_t p, double edge,
                         bool above, bool or_at) {
  int64_t lo = 0, hi = a->grid;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    double v = roi_coord(a, p, mid);
    bool past = above ? (v > edge || (or_at && v == edge))
                      : (v < edge || (or_at && v == edge));
    if (past) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// The samples [*lo, *hi) of bin |p| that lie inside [-1, size]; the
// others contribute 0 (roi_tap), so only these need reading. A ROI far
// larger than the map thus costs what its part over the map costs.
static void roi_span(const roi_axis_t *a, int64_t p, int64_t *lo, int64_t *hi) {
  *lo = *hi = 0;
  if (a->grid <= 0 || a->size == 0) {
    return;
  }
  double top = (double)a->size;
  if (a->bin >= 0) {  // rising (or constant) coordinates
    *lo = roi_first(a, p, -1.0, true, true);
    *hi = roi_first(a, p, top, true, false);
  } else {
    *lo = roi_first(a, p, top, false, true);
    *hi = roi_first(a, p, -1.0, false, false);
  }
  *hi = *hi > *lo ? *hi : *lo;
}

// Computes the two axes (y, x) of ROI |r| over a |height| x |width| map;
// errors on non-finite coordinates or a sampling grid too large to
// represent.
static wm_status_t roi_geometry(const wm_op_ctx_t *ctx, const roi_align_t *ra,
                                const double *roi, size_t r, int64_t height,
                                int64_t width, roi_axis_t g[2]) {
  double off = ra->half_pixel ? 0.5 : 0.0;
  double x0 = roi[0] * ra->scale - off, y0 = roi[1] * ra->scale - off;
  double x1 = roi[2] * ra->scale - off, y1 = roi[3] * ra->scale - off;
  double w = x1 - x0, h = y1 - y0;
  if (!isfinite(w) || !isfinite(h) || !isfinite(x0) || !isfinite(y0)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "roi %zu (%g, %g, %g, %g) does not have finite "
                       "coordinates after spatial_scale %g",
                       r, roi[0], roi[1], roi[2], roi[3], ra->scale);
  }
  if (!ra->half_pixel) {  // malformed ROIs become 1x1
    w = fmax(w, 1.0);
    h = fmax(h, 1.0);
  }
  double bin_h = h / (double)ra->out_h, bin_w = w / (double)ra->out_w;
  double gh = ra->sampling > 0 ? (double)ra->sampling : ceil(bin_h);
  double gw = ra->sampling > 0 ? (double)ra->sampling : ceil(bin_w);
  gh = gh > 0 ? gh : 0;  // empty or inverted ROIs sample nothing
  gw = gw > 0 ? gw : 0;
  if (gh > INT32_MAX || gw > INT32_MAX) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "roi %zu (%g, %g, %g, %g) needs a %g x %g sampling "
                       "grid per bin",
                       r, roi[0], roi[1], roi[2], roi[3], gh, gw);
  }
  g[0] = (roi_axis_t){y0, bin_h, (int64_t)gh, height};
  g[1] = (roi_axis_t){x0, bin_w, (int64_t)gw, width};
  return NULL;
}

// The samples of one axis over all its bins that read the map.
static double roi_axis_taps(const roi_axis_t *a, int64_t bins) {
  double n = 0;
  for (int64_t p = 0; p < bins; p++) {
    int64_t lo, hi;
    roi_span(a, p, &lo, &hi);
    n += (double)(hi - lo);
  }
  return n;
}

// A bilinear sample along one axis at |v| inside [-1, size] (roi_span):
// the two neighbours and their weights.
typedef struct roi_tap {
  int64_t lo, hi;   // neighbour indices
  double wlo, whi;  // their weights
} roi_tap_t;

static roi_tap_t roi_tap(double v, int64_t size) {
  roi_tap_t t = {0, 0, 0, 0};
  if (v < -1.0 || v > (double)size || size == 0) {
    return t;  // off the map: weight 0 (roi_span keeps such samples out)
  }
  v = fmax(v, 0.0);
  t.lo = (int64_t)v;
  if (t.lo >= size - 1) {
    t.lo = t.hi = size - 1;
    v = (double)t.lo;
  } else {
    t.hi = t.lo + 1;
  }
  t.whi = v - (double)t.lo;
  t.wlo = 1.0 - t.whi;
  return t;
}

static wm_status_t roi_run(wm_op_ctx_t *ctx) {
  roi_align_t ra;
  WM_RETURN_IF_ERROR(roi_setup(ctx, &ra));
  const wm_tensor_t *xt = ctx->in[0], *rt = ctx->in[1], *bt = ctx->in[2];
  wm_tensor_t *yt = ctx->out[0];
  if (xt->shape.rank != 4 || rt->shape.rank != 2 || rt->shape.dims[1] != 4) {
    char b1[160], b2[160];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "X %s and rois %s, want rank 4 and [num_rois, 4]",
                       wm_shape_format(&xt->shape, b1, sizeof(b1)),
                       wm_shape_format(&rt->shape, b2, sizeof(b2)));
  }
  int64_t n_batch = xt->shape.dims[0], chans = xt->shape.dims[1];
  int64_t height = xt->shape.dims[2], width = xt->shape.dims[3];
  size_t n_rois = (size_t)rt->shape.dims[0];
  if (bt->count != n_rois) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "%zu batch indices for %zu rois",
                       bt->count, n_rois);
  }
  wm_shape_t want = {4, {(int64_t)n_rois, chans, ra.out_h, ra.out_w}};
  WM_RETURN_IF_ERROR(check_tensor_shape(ctx, yt, &want, "output 0"));
  if (yt->count == 0) {  // bins need not be bounded by any allocation then
    return NULL;
  }
  size_t plane = (size_t)height * (size_t)width;
  double *x = NULL, *acc = NULL;
  wm_status_t st = load_f64(ctx, xt, &x);
  if (!st) {
    acc = wm_malloc((chans ? (size_t)chans : 1) * sizeof(double));
    if (!acc) {
      st = WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for %lld channels", (long long)chans);
    }
  }
  // Check every ROI before any work, so refusals come first. The limit
  // counts the taps that read the map.
  double taps = 0;
  for (size_t r = 0; r < n_rois && !st; r++) {
    double roi[4];
    for (int k = 0; k < 4; k++) {
      roi[k] = wm_tensor_get_f64(rt, r * 4 + (size_t)k);
    }
    roi_axis_t g[2];
    int64_t b = wm_tensor_get_i64(bt, r);
    if (b < 0 || b >= n_batch) {
      st = WM_OP_ERROR(ctx, OUT_OF_RANGE,
                       "batch index %lld of roi %zu is out of range for %lld "
                       "batches",
                       (long long)b, r, (long long)n_batch);
    } else {
      st = roi_geometry(ctx, &ra, roi, r, height, width, g);
    }
    if (!st) {
      taps += (double)chans * roi_axis_taps(&g[0], ra.out_h) *
              roi_axis_taps(&g[1], ra.out_w);
    }
  }
  if (!st && taps > ROI_MAX_TAPS) {
    st = WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                     "sampling needs %.3g bilinear taps, more than the limit "
                     "%.3g (check sampling_ratio and the roi sizes)",
                     taps, ROI_MAX_TAPS);
  }
  for (size_t r = 0; r < n_rois && !st; r++) {
    double roi[4];
    for (int k = 0; k < 4; k++) {
      roi[k] = wm_tensor_get_f64(rt, r * 4 + (size_t)k);
    }
    roi_axis_t g[2];
    st = roi_geometry(ctx, &ra, roi, r, height, width, g);
    if (st) {
      break;
    }
    const double *xb =
        x + (size_t)wm_tensor_get_i64(bt, r) * (size_t)chans * plane;
    bool empty = g[0].grid <= 0 || g[1].grid <= 0;
    double count = empty ? 1.0 : (double)g[0].grid * (double)g[1].grid;
    for (int64_t ph = 0; ph < ra.out_h; ph++) {
      int64_t ylo, yhi;
      roi_span(&g[0], ph, &ylo, &yhi);
      for (int64_t pw = 0; pw < ra.out_w; pw++) {
        int64_t xlo, xhi;
        roi_span(&g[1], pw, &xlo, &xhi);
        // Samples off the map are 0: nothing to add, but one of the
        // candidates for the max.
        bool off_map = !empty && (double)(yhi - ylo) * (double)(xhi - xlo) <
                                     (double)g[0].grid * (double)g[1].grid;
        for (int64_t c = 0; c < chans; c++) {
          acc[c] = 0;
        }
        bool first = !off_map;
        for (int64_t iy = ylo; iy < yhi; iy++) {
          roi_tap_t ty = roi_tap(roi_coord(&g[0], ph, iy), height);
          for (int64_t ix = xlo; ix < xhi; ix++) {
            roi_tap_t tx = roi_tap(roi_coord(&g[1], pw, ix), width);
            size_t p1 = (size_t)(ty.lo * width + tx.lo);
            size_t p2 = (size_t)(ty.lo * width + tx.hi);
            size_t p3 = (size_t)(ty.hi * width + tx.lo);
            size_t p4 = (size_t)(ty.hi * width + tx.hi);
            double w1 = ty.wlo * tx.wlo, w2 = ty.wlo * tx.whi;
            double w3 = ty.whi * tx.wlo, w4 = ty.whi * tx.whi;
            for (int64_t c = 0; c < chans; c++) {
              const double *xc = xb + (size_t)c * plane;
              if (!ra.max) {
                acc[c] += w1 * xc[p1] + w2 * xc[p2] + w3 * xc[p3] + w4 * xc[p4];
                continue;
              }
              double v = w1 * xc[p1];
              double t = w2 * xc[p2];
              v = t > v ? t : v;
              t = w3 * xc[p3];
              v = t > v ? t : v;
              t = w4 * xc[p4];
              v = t > v ? t : v;
              if (first || v > acc[c]) {
                acc[c] = v;
              }
            }
            first = false;
          }
        }
        for (int64_t c = 0; c < chans; c++) {
          double v = ra.max ? acc[c] : acc[c] / count;
          size_t o = ((r * (size_t)chans + (size_t)c) * (size_t)ra.out_h +
                      (size_t)ph) *
                         (size_t)ra.out_w +
                     (size_t)pw;
          wm_tensor_set_f64(yt, o, v);
        }
      }
    }
  }
  free(x);
  free(acc);
  return st;
}

// Cost: each output bin reads grid_h * grid_w bilinear samples of four
// taps; avg counts 4 MACs per sample (FLOPs = 2 * MACs) plus the division,
// max counts 4 multiplies and 4 comparisons per sample. The grid is
// sampling_ratio^2, or for the adaptive grid (sampling_ratio 0) the
// ceil(bin size)^2 of ROIs that span the whole map (rois are data): a
// bound for ROIs inside the map.
static void roi_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  roi_align_t ra;
  wm_status_t st = roi_setup(ctx, &ra);
  if (st) {
    wm_status_free(st);
    return;
  }
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  double outs = numel_f(&ctx->out_types[0].shape);
  double samples;
  if (ra.sampling > 0) {
    samples = (double)ra.sampling * (double)ra.sampling;
  } else if (xs->rank == 4 && xs->dims[2] >= 0 && xs->dims[3] >= 0) {
    double s = fabs(ra.scale) > 1 ? fabs(ra.scale) : 1;
    samples = ceil((double)xs->dims[2] * s / (double)ra.out_h) *
              ceil((double)xs->dims[3] * s / (double)ra.out_w);
    samples = samples < 1 ? 1 : samples;
  } else {
    return;
  }
  if (outs < 0) {
    return;
  }
  if (ra.max) {
    out->flops = outs * samples * 8;
  } else {
    out->macs = outs * samples * 4;
    out->flops = 2 * out->macs + outs;
  }
}

// ------------------------------------------------------------ GridSample

// Inputs: X [N, C, D1..Dr], grid [N, O1..Or, r] of normalized coordinates
// (grid[..., 0] indexes the last dim, Dr). Output [N, C, O1..Or]. Opsets
// 16-19 name the modes bilinear/nearest/bicubic and take r = 2; opset 20
// renamed them linear/nearest/cubic and allows any r. Each output point is
// a weighted sum over a separable set of taps (1, 2^r or 4^r), computed
// once per point and applied to every channel. A NaN coordinate gives NaN;
// an infinite one gives 0 with padding "zeros", the edge with "border" and
// NaN with "reflection" (the reflection of infinity is undefined).

enum { GS_NEAREST = 0, GS_LINEAR = 1, GS_CUBIC = 2 };
enum { GS_ZEROS = 0, GS_BORDER = 1, GS_REFLECTION = 2 };

typedef struct grid_sample {
  int mode;            // GS_NEAREST, GS_LINEAR or GS_CUBIC
  int padding;         // GS_ZEROS, GS_BORDER or GS_REFLECTION
  bool align_corners;  // -1 and 1 are the centers of the corner pixels
} grid_sample_t;

static wm_status_t gs_setup(const wm_op_ctx_t *ctx, grid_sample_t *gs) {
  static const char *const modes16[] = {"nearest", "bilinear", "bicubic", NULL};
  static const char *const modes20[] = {"nearest", "linear", "cubic", NULL};
  static const char *const pads[] = {"zeros", "border", "reflection", NULL};
  bool v20 = ctx->opset >= 20;
  WM_RETURN_IF_ERROR(wm_op_attr_choice(ctx, "mode", v20 ? "linear" : "bilinear",
                                       v20 ? modes20 : modes16, &gs->mode));
  WM_RETURN_IF_ERROR(
      wm_op_attr_choice(ctx, "padding_mode", "zeros", pads, &gs->padding));
  int64_t ac;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "align_corners", 0, &ac));
  if (ac != 0 && ac != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute align_corners is %lld, want 0 or 1",
                       (long long)ac);
  }
  gs->align_corners = ac == 1;
  int32_t lo = v20 ? 3 : 4, hi = v20 ? WM_MAX_RANK : 4;
  WM_RETURN_IF_ERROR(check_rank(ctx, 0, "X", lo, hi));
  WM_RETURN_IF_ERROR(check_rank(ctx, 1, "grid", lo, hi));
  WM_RETURN_IF_ERROR(
      check_dtype(ctx, 1, "grid", WM_TYPES_FLOAT, "a float type"));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *gr = wm_op_in_shape(ctx, 1);
  char b1[160], b2[160];
  if (xs->rank >= 0 && gr->rank >= 0 && xs->rank != gr->rank) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "X %s and grid %s must have the same rank",
                       wm_shape_format(xs, b1, sizeof(b1)),
                       wm_shape_format(gr, b2, sizeof(b2)));
  }
  if (gr->rank >= 0 && gr->dims[gr->rank - 1] >= 0 &&
      gr->dims[gr->rank - 1] != gr->rank - 2) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "grid %s must end with dim %d (one coordinate per "
                       "spatial dim)",
                       wm_shape_format(gr, b2, sizeof(b2)), gr->rank - 2);
  }
  return check_same_dim(ctx, 0, 0, 1, 0);
}

static wm_status_t gs_infer(wm_op_ctx_t *ctx) {
  grid_sample_t gs;
  WM_RETURN_IF_ERROR(gs_setup(ctx, &gs));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *gr = wm_op_in_shape(ctx, 1);
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  int32_t rank = gr->rank >= 0 ? gr->rank : xs->rank;
  if (rank < 0) {
    wm_op_set_out_unknown(ctx, 0, dt);
    return NULL;
  }
  wm_shape_t out = {rank, {0}};
  for (int32_t d = 0; d < rank; d++) {
    out.dims[d] = -1;
  }
  if (xs->rank >= 0) {
    out.dims[0] = xs->dims[0];
    out.dims[1] = xs->dims[1];
  }
  if (gr->rank >= 0) {
    out.dims[0] = out.dims[0] >= 0 ? out.dims[0] : gr->dims[0];
    for (int32_t d = 2; d < rank; d++) {
      out.dims[d] = gr->dims[d - 1];
    }
  }
  return wm_op_set_out_checked(ctx, 0, dt, &out);
}

// Maps normalized |v| to a pixel coordinate along a dim of |size|.
static double gs_denormalize(double v, int64_t size, bool align_corners) {
  double s = (double)size;
  return align_corners ? (v + 1) / 2 * (s - 1) : ((v + 1) * s - 1) / 2;
}

// Reflects |v| into [lo, hi] (finite input); clamps the result against
// rounding so it never leaves the range.
static double gs_reflect(double v, double lo, double hi) {
  double range = hi - lo;
  if (!(range > 0)) {
    return lo;
  }
  double r = v;
  if (v < lo || v > hi) {
    double d = v < lo ? lo - v : v - hi;
    double n = floor(d / range);
    double rem = d - n * range;
    bool even = fmod(n, 2.0) == 0;
    r = (v < lo) == even ? lo + rem : hi - rem;
  }
  return r < lo ? lo : r > hi ? hi : r;
}

// Keys cubic convolution coefficients (alpha -0.75) for fraction |t|.
static void gs_cubic_coeffs(double t, double *c) {
  const double a = -0.75;
  double x = fabs(t);
  double x1 = x + 1, x2 = 1 - x, x3 = 2 - x;
  c[0] = ((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a;
  c[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  c[2] = ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1;
  c[3] = ((a * x3 - 5 * a) * x3 + 8 * a) * x3 - 4 * a;
}

// The taps of one point along one spatial dim.
typedef struct gs_axis {
  int n;           // taps (1, 2 or 4)
  int64_t idx[4];  // input index per tap, -1 = padding zero
  double w[4];     // weight per tap
} gs_axis_t;

// Resolves the input index of tap |i| along a dim of |size| (> 0).
static int64_t gs_tap_index(const grid_sample_t *gs, int64_t i, int64_t size,
                            double lo, double hi) {
  if (gs->padding == GS_ZEROS) {
    return i >= 0 && i < size ? i : -1;
  }
  if (gs->padding == GS_REFLECTION && (i < 0 || i >= size)) {
    i = (int64_t)gs_reflect((double)i, lo, hi);
  }
  return i < 0 ? 0 : i >= size ? size - 1 : i;
}

// Computes the taps of normalized coordinate |v| along a dim of |size|;
// false (and *out_nan) when the point gives NaN, false alone when every
// tap is padding.
static bool gs_axis_taps(const grid_sample_t *gs, double v, int64_t size,
                         gs_axis_t *ax, bool *out_nan) {
  *out_nan = isnan(v);
  if (*out_nan || size == 0) {
    return false;
  }
  double lo = gs->align_corners ? 0.0 : -0.5;
  double hi = gs->align_corners ? (double)size - 1 : (double)size - 0.5;
  double x = gs_denormalize(v, size, gs->align_corners);
  if (gs->mode == GS_NEAREST) {
    x = nearbyint(x);
  }
  if (x < lo || x > hi) {
    if (gs->padding == GS_BORDER) {
      x = x < 0 ? 0 : x > (double)size - 1 ? (double)size - 1 : x;
    } else if (gs->padding == GS_REFLECTION) {
      if (!isfinite(x)) {
        *out_nan = true;
        return false;
      }
      x = gs_reflect(x, lo, hi);
    } else if (x < -4 || x > (double)size + 3) {
      return false;  // zeros: every tap lies in the padding
    }
  }
  int64_t base;
  if (gs->mode == GS_NEAREST) {
    ax->n = 1;
    base = (int64_t)x;
    ax->w[0] = 1;
  } else if (gs->mode == GS_LINEAR) {
    ax->n = 2;
    double f = floor(x);
    base = (int64_t)f;
    ax->w[0] = f + 1 - x;
    ax->w[1] = x - f;
  } else {
    ax->n = 4;
    double f = floor(x);
    base = (int64_t)f - 1;
    gs_cubic_coeffs(x - f, ax->w);
  }
  bool any = false;
  for (int k = 0; k < ax->n; k++) {
    ax->idx[k] = gs_tap_index(gs, base + k, size, lo, hi);
    any |= ax->idx[k] >= 0;
  }
  return any;
}

static wm_status_t gs_run(wm_op_ctx_t *ctx) {
  grid_sample_t gs;
  WM_RETURN_IF_ERROR(gs_setup(ctx, &gs));
  const wm_tensor_t *xt = ctx->in[0], *gt = ctx->in[1];
  wm_tensor_t *yt = ctx->out[0];
  int32_t nsp = xt->shape.rank - 2;
  if (nsp < 1 || gt->shape.rank != nsp + 2 ||
      gt->shape.dims[0] != xt->shape.dims[0] ||
      gt->shape.dims[nsp + 1] != nsp) {
    char b1[160], b2[160];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "grid %s does not fit X %s",
                       wm_shape_format(&gt->shape, b1, sizeof(b1)),
                       wm_shape_format(&xt->shape, b2, sizeof(b2)));
  }
  wm_shape_t want = xt->shape;
  for (int32_t d = 0; d < nsp; d++) {
    want.dims[2 + d] = gt->shape.dims[1 + d];
  }
  WM_RETURN_IF_ERROR(check_tensor_shape(ctx, yt, &want, "output 0"));
  size_t batch = (size_t)xt->shape.dims[0];
  size_t chans = (size_t)xt->shape.dims[1];
  size_t in_n = 1, pts = 1;
  int64_t in_strides[MAX_SPATIAL];
  for (int32_t d = nsp - 1; d >= 0; d--) {
    in_strides[d] = (int64_t)in_n;
    in_n *= (size_t)xt->shape.dims[2 + d];
    pts *= (size_t)gt->shape.dims[1 + d];
  }
  // At most 4 taps per dim; r <= 6 bounds the product at 4096.
  size_t max_taps = 1;
  for (int32_t d = 0; d < nsp; d++) {
    max_taps *= gs.mode == GS_NEAREST ? 1 : gs.mode == GS_LINEAR ? 2 : 4;
  }
  double *x = NULL;
  size_t *offs = wm_malloc(max_taps * sizeof(*offs));
  double *ws = wm_malloc(max_taps * sizeof(*ws));
  wm_status_t st = load_f64(ctx, xt, &x);
  if (!st && (!offs || !ws)) {
    st = WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory for %zu taps",
                     max_taps);
  }
  for (size_t n = 0; n < batch && !st; n++) {
    for (size_t p = 0; p < pts; p++) {
      gs_axis_t ax[MAX_SPATIAL];
      bool nan = false, any = true;
      size_t gbase = (n * pts + p) * (size_t)nsp;
      for (int32_t d = 0; d < nsp && any && !nan; d++) {
        // grid[..., 0] addresses the last spatial dim.
        double v = wm_tensor_get_f64(gt, gbase + (size_t)(nsp - 1 - d));
        any = gs_axis_taps(&gs, v, xt->shape.dims[2 + d], &ax[d], &nan);
      }
      size_t nt = 0;
      if (any && !nan) {
        int k[MAX_SPATIAL] = {0};
        for (;;) {
          size_t off = 0;
          double w = 1;
          bool inside = true;
          for (int32_t d = 0; d < nsp; d++) {
            int64_t i = ax[d].idx[k[d]];
            inside &= i >= 0;
            off += (size_t)(i < 0 ? 0 : i) * (size_t)in_strides[d];
            w *= ax[d].w[k[d]];
          }
          if (inside) {
            offs[nt] = off;
            ws[nt++] = w;
          }
          int32_t d = nsp - 1;
          while (d >= 0 && ++k[d] == ax[d].n) {
            k[d--] = 0;
          }
          if (d < 0) {
            break;
          }
        }
      }
      for (size_t c = 0; c < chans; c++) {
        const double *xc = x + (n * chans + c) * in_n;
        double v = nan ? NAN : 0;
        for (size_t t = 0; t < nt; t++) {
          v += ws[t] * xc[offs[t]];
        }
        wm_tensor_set_f64(yt, (n * chans + c) * pts + p, v);
      }
    }
  }
  free(x);
  free(offs);
  free(ws);
  return st;
}

// Cost: every output element is a weighted sum of its taps (1 nearest,
// 2^r linear, 4^r cubic): one MAC per tap, FLOPs = 2 * MACs; each grid
// point also maps its r coordinates (about 8 operations per coordinate,
// 30 for the cubic weights), shared by the channels.
static void gs_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  grid_sample_t gs;
  wm_status_t st = gs_setup(ctx, &gs);
  if (st) {
    wm_status_free(st);
    return;
  }
  const wm_shape_t *gr = wm_op_in_shape(ctx, 1);
  double outs = numel_f(&ctx->out_types[0].shape);
  double pts = gr->rank >= 2 ? prod_f(gr->dims, gr->rank - 1) : -1;
  if (outs < 0 || pts < 0) {
    return;
  }
  int32_t nsp = gr->rank - 2;
  double per_tap = gs.mode == GS_NEAREST ? 1 : gs.mode == GS_LINEAR ? 2 : 4;
  double taps = pow(per_tap, nsp);
  out->macs = outs * taps;
  out->flops = 2 * out->macs + pts * nsp * (gs.mode == GS_CUBIC ? 30 : 8);
}

// ------------------------------------------------------------ AffineGrid

// Inputs: theta [N, 2, 3] (2-D) or [N, 3, 4] (3-D) and size (int64:
// [N, C, H, W] or [N, C, D, H, W]). Output [N, H, W, 2] or [N, D, H, W,
// 3]: theta applied to the normalized coordinates (x along W first, then
// y, then z) of every point, as GridSample reads them back.

// Checks theta and size; *out_nsp is the spatial rank (-1 unknown) and
// sizes[] the values of size when known (*out_known).
static wm_status_t ag_setup(const wm_op_ctx_t *ctx, int32_t *out_nsp,
                            int64_t *sizes, bool *out_known) {
  *out_nsp = -1;
  *out_known = false;
  int64_t ac;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "align_corners", 0, &ac));
  if (ac != 0 && ac != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute align_corners is %lld, want 0 or 1",
                       (long long)ac);
  }
  WM_RETURN_IF_ERROR(check_rank(ctx, 0, "theta", 3, 3));
  WM_RETURN_IF_ERROR(check_rank(ctx, 1, "size", 1, 1));
  WM_RETURN_IF_ERROR(check_dtype(ctx, 1, "size", WM_T(INT64), "int64"));
  const wm_shape_t *ts = wm_op_in_shape(ctx, 0);
  const wm_shape_t *ss = wm_op_in_shape(ctx, 1);
  char buf[160];
  if (ts->rank == 3) {
    int64_t r = ts->dims[1], c = ts->dims[2];
    if ((r >= 0 && r != 2 && r != 3) || (c >= 0 && c != 3 && c != 4) ||
        (r >= 0 && c >= 0 && c != r + 1)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "theta has shape %s, want [N, 2, 3] or [N, 3, 4]",
                         wm_shape_format(ts, buf, sizeof(buf)));
    }
    *out_nsp = r >= 0 ? (int32_t)r : c >= 0 ? (int32_t)c - 1 : -1;
  }
  if (ss->rank == 1 && ss->dims[0] >= 0) {
    int64_t len = ss->dims[0];
    if ((len != 4 && len != 5) || (*out_nsp >= 0 && len != *out_nsp + 2)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "size has %lld values, want %s",
                         (long long)len,
                         *out_nsp == 2   ? "4 for a 2-D theta"
                         : *out_nsp == 3 ? "5 for a 3-D theta"
                                         : "4 or 5");
    }
    *out_nsp = (int32_t)len - 2;
  }
  const wm_tensor_t *st = ctx->in[1];
  if (!st || *out_nsp < 0) {
    return NULL;
  }
  for (int32_t i = 0; i < *out_nsp + 2; i++) {
    sizes[i] = wm_tensor_get_i64(st, (size_t)i);
    if (sizes[i] < 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "size[%d] is %lld, want at least 0", i,
                         (long long)sizes[i]);
    }
  }
  if (ts->rank == 3 && ts->dims[0] >= 0 && ts->dims[0] != sizes[0]) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "size[0] is %lld but theta has %lld batches",
                       (long long)sizes[0], (long long)ts->dims[0]);
  }
  *out_known = true;
  return NULL;
}

static wm_status_t ag_infer(wm_op_ctx_t *ctx) {
  int32_t nsp;
  int64_t sizes[5];
  bool known;
  WM_RETURN_IF_ERROR(ag_setup(ctx, &nsp, sizes, &known));
  wm_dtype_t dt = wm_op_in_dtype(ctx, 0);
  if (nsp < 0) {
    wm_op_set_out_unknown(ctx, 0, dt);
    return NULL;
  }
  const wm_shape_t *ts = wm_op_in_shape(ctx, 0);
  wm_shape_t out = {nsp + 2, {0}};
  out.dims[0] = known ? sizes[0] : ts->rank == 3 ? ts->dims[0] : -1;
  for (int32_t d = 0; d < nsp; d++) {
    out.dims[1 + d] = known ? sizes[2 + d] : -1;
  }
  out.dims[nsp + 1] = nsp;
  return wm_op_set_out_checked(ctx, 0, dt, &out);
}

// Normalized coordinate of index |i| along a dim of |size|: pixel centers
// when not aligned; with align_corners a dim of one sits at -1.
static double ag_coord(int64_t i, int64_t size, bool align_corners) {
  if (align_corners) {
    return size > 1 ? -1.0 + 2.0 * (double)i / (double)(size - 1) : -1.0;
  }
  return -1.0 + (2.0 * (double)i + 1.0) / (double)size;
}

static wm_status_t ag_run(wm_op_ctx_t *ctx) {
  int32_t nsp;
  int64_t sizes[5];
  bool known;
  WM_RETURN_IF_ERROR(ag_setup(ctx, &nsp, sizes, &known));
  bool align = wm_node_attr_int(ctx->node, "align_corners", 0) == 1;
  const wm_tensor_t *tt = ctx->in[0];
  wm_tensor_t *yt = ctx->out[0];
  size_t n = (size_t)sizes[0], pts = 1, cols = (size_t)nsp + 1;
  for (int32_t d = 0; d < nsp; d++) {
    pts *= (size_t)sizes[2 + d];
  }
  double *theta = NULL;
  WM_RETURN_IF_ERROR(load_f64(ctx, tt, &theta));
  for (size_t b = 0; b < n; b++) {
    const double *th = theta + b * (size_t)nsp * cols;
    int64_t pos[3] = {0, 0, 0};
    for (size_t p = 0; p < pts; p++) {
      // Homogeneous point: x (last dim), y, z..., then 1.
      double v[4];
      for (int32_t j = 0; j < nsp; j++) {
        int32_t d = nsp - 1 - j;
        v[j] = ag_coord(pos[d], sizes[2 + d], align);
      }
      v[nsp] = 1.0;
      for (int32_t i = 0; i < nsp; i++) {
        double acc = 0;
        for (size_t j = 0; j < cols; j++) {
          acc += th[(size_t)i * cols + j] * v[j];
        }
        wm_tensor_set_f64(yt, (b * pts + p) * (size_t)nsp + (size_t)i, acc);
      }
      for (int32_t d = nsp - 1; d >= 0; d--) {
        if (++pos[d] < sizes[2 + d]) {
          break;
        }
        pos[d] = 0;
      }
    }
  }
  free(theta);
  return NULL;
}

// Cost: one small matrix-vector product per grid point.
static void ag_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  double outs = numel_f(&ctx->out_types[0].shape);
  const wm_shape_t *ys = &ctx->out_types[0].shape;
  if (outs < 0 || ys->rank < 1) {
    return;
  }
  out->macs = outs * (double)ys->rank;  // nsp + 1 per output element
  out->flops = 2 * out->macs;
}

// ------------------------------------------------------------- MaxUnpool

// Inputs: X [N, C, D...], I (int64, X's shape) holding flat indices into
// the unpooled tensor [N, C, (D - 1) * stride - pads + kernel...], and an
// optional output_shape. As in the ONNX reference, the indices address the
// unpooled shape; a larger output_shape pads it with zeros at the end of
// each dim.

typedef struct unpool {
  int32_t nsp;                    // spatial dims
  int64_t kernel[MAX_SPATIAL];    // kernel_shape
  int64_t strides[MAX_SPATIAL];   // strides
  int64_t pads[2 * MAX_SPATIAL];  // begins then ends
} unpool_t;

// Parses the attributes for a known input rank.
static wm_status_t unpool_attrs(const wm_op_ctx_t *ctx, int32_t rank,
                                unpool_t *u) {
  u->nsp = rank - 2;
  const wm_attr_t *k = wm_node_attr(ctx->node, "kernel_shape");
  if (!k) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute kernel_shape is required");
  }
  bool present;
  WM_RETURN_IF_ERROR(wm_op_attr_ints_n(ctx, "kernel_shape", u->nsp, 1, 1,
                                       u->kernel, &present));
  WM_RETURN_IF_ERROR(
      wm_op_attr_ints_n(ctx, "strides", u->nsp, 1, 1, u->strides, &present));
  return wm_op_attr_ints_n(ctx, "pads", 2 * u->nsp, 0, 0, u->pads, &present);
}

// The unpooled shape for input |xs| (unknown dims stay unknown).
static wm_status_t unpool_shape(const wm_op_ctx_t *ctx, const unpool_t *u,
                                const wm_shape_t *xs, wm_shape_t *out) {
  *out = *xs;
  for (int32_t i = 0; i < u->nsp; i++) {
    int64_t in = xs->dims[2 + i];
    if (in < 0) {
      continue;
    }
    int64_t v;
    bool ok = !__builtin_mul_overflow(in - 1, u->strides[i], &v) &&
              !__builtin_sub_overflow(v, u->pads[i], &v) &&
              !__builtin_sub_overflow(v, u->pads[u->nsp + i], &v) &&
              !__builtin_add_overflow(v, u->kernel[i], &v);
    if (!ok || v < 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "spatial dim %d of size %lld with kernel %lld, "
                         "stride %lld and pads %lld, %lld gives no valid "
                         "output size",
                         i, (long long)in, (long long)u->kernel[i],
                         (long long)u->strides[i], (long long)u->pads[i],
                         (long long)u->pads[u->nsp + i]);
    }
    out->dims[2 + i] = v;
  }
  return NULL;
}

static wm_status_t unpool_check(const wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(check_rank(ctx, 0, "X", 3, WM_MAX_RANK));
  WM_RETURN_IF_ERROR(check_rank(ctx, 1, "I", 3, WM_MAX_RANK));
  WM_RETURN_IF_ERROR(check_rank(ctx, 2, "output_shape", 1, 1));
  WM_RETURN_IF_ERROR(check_dtype(ctx, 1, "I", WM_T(INT64), "int64"));
  WM_RETURN_IF_ERROR(check_dtype(ctx, 2, "output_shape", WM_T(INT64), "int64"));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  const wm_shape_t *is = wm_op_in_shape(ctx, 1);
  bool ok = xs->rank < 0 || is->rank < 0 || xs->rank == is->rank;
  for (int32_t d = 0; ok && xs->rank >= 0 && d < xs->rank; d++) {
    ok = is->dims[d] < 0 || xs->dims[d] < 0 || is->dims[d] == xs->dims[d];
  }
  if (!ok) {
    char b1[160], b2[160];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "indices %s must have the shape of X %s",
                       wm_shape_format(is, b1, sizeof(b1)),
                       wm_shape_format(xs, b2, sizeof(b2)));
  }
  return NULL;
}

// Sets *out to the output shape: output_shape when given (checked against
// the unpooled shape |unp|), else |unp|. Rank -1 when unknown.
static wm_status_t unpool_out_shape(const wm_op_ctx_t *ctx,
                                    const wm_shape_t *unp, wm_shape_t *out) {
  *out = *unp;
  if (!wm_op_has_input(ctx, 2)) {
    return NULL;
  }
  int64_t *v;
  size_t n;
  bool known;
  WM_RETURN_IF_ERROR(wm_op_input_ints(ctx, 2, &v, &n, &known));
  if (!known) {
    const wm_shape_t *os = wm_op_in_shape(ctx, 2);
    int32_t rank = unp->rank;
    if (rank < 0 && os->rank == 1 && os->dims[0] >= 0 &&
        os->dims[0] <= WM_MAX_RANK) {
      rank = (int32_t)os->dims[0];
    }
    out->rank = rank;
    for (int32_t d = 0; d < rank; d++) {
      out->dims[d] = -1;
    }
    return NULL;
  }
  char b1[256], b2[160];
  bool ok = unp->rank < 0 || n == (size_t)unp->rank;
  for (size_t d = 0; ok && d < n; d++) {
    ok = v[d] >= 0 &&
         (unp->rank < 0 || unp->dims[d] < 0 || v[d] >= unp->dims[d]);
  }
  if (!ok || n > WM_MAX_RANK) {
    wm_status_t st =
        WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                    "output_shape %s does not hold the unpooled shape %s",
                    wm_op_format_ints(v, n, b1, sizeof(b1)),
                    wm_shape_format(unp, b2, sizeof(b2)));
    free(v);
    return st;
  }
  *out = wm_shape_make((int32_t)n, v);
  free(v);
  return NULL;
}

static wm_status_t unpool_infer(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(unpool_check(ctx));
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  wm_shape_t unp = *xs, out;
  if (xs->rank >= 0) {
    unpool_t u;
    WM_RETURN_IF_ERROR(unpool_attrs(ctx, xs->rank, &u));
    WM_RETURN_IF_ERROR(unpool_shape(ctx, &u, xs, &unp));
  }
  WM_RETURN_IF_ERROR(unpool_out_shape(ctx, &unp, &out));
  return wm_op_set_out_checked(ctx, 0, wm_op_in_dtype(ctx, 0), &out);
}

static wm_status_t unpool_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *xt = ctx->in[0], *it = ctx->in[1];
  wm_tensor_t *yt = ctx->out[0];
  unpool_t u;
  wm_shape_t unp;
  WM_RETURN_IF_ERROR(unpool_check(ctx));
  WM_RETURN_IF_ERROR(unpool_attrs(ctx, xt->shape.rank, &u));
  WM_RETURN_IF_ERROR(unpool_shape(ctx, &u, &xt->shape, &unp));
  WM_RETURN_IF_ERROR(check_tensor_shape(ctx, it, &xt->shape, "indices"));
  bool fits = yt->shape.rank == unp.rank;
  for (int32_t d = 0; fits && d < unp.rank; d++) {
    fits = yt->shape.dims[d] >= unp.dims[d];
  }
  if (!fits) {
    char b1[160], b2[160];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "output %s does not hold the unpooled shape %s",
                       wm_shape_format(&yt->shape, b1, sizeof(b1)),
                       wm_shape_format(&unp, b2, sizeof(b2)));
  }
  size_t total;
  if (!wm_shape_numel(&unp, &total)) {
    char buf[160];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "unpooled shape %s has too many elements",
                       wm_shape_format(&unp, buf, sizeof(buf)));
  }
  int64_t ostr[WM_MAX_RANK];
  wm_shape_strides(&yt->shape, ostr);
  bool same = wm_shape_equal(&unp, &yt->shape);
  size_t es = wm_dtype_size(yt->dtype);
  if (yt->nbytes) {
    memset(yt->data, 0, yt->nbytes);
  }
  for (size_t i = 0; i < xt->count; i++) {
    int64_t idx = wm_tensor_get_i64(it, i);
    if (idx < 0 || (uint64_t)idx >= (uint64_t)total) {
      char buf[160];
      return WM_OP_ERROR(ctx, OUT_OF_RANGE,
                         "index %lld (element %zu of the indices) is out of "
                         "range for the unpooled shape %s of %zu elements",
                         (long long)idx, i,
                         wm_shape_format(&unp, buf, sizeof(buf)), total);
    }
    size_t off = (size_t)idx;
    if (!same) {  // re-address the coordinates in the larger output
      size_t rem = (size_t)idx;
      off = 0;
      for (int32_t d = unp.rank - 1; d >= 0; d--) {
        size_t dim = (size_t)unp.dims[d];
        off += (rem % dim) * (size_t)ostr[d];
        rem /= dim;
      }
    }
    memcpy((char *)yt->data + off * es, (const char *)xt->data + i * es, es);
  }
  return NULL;
}

// ------------------------------------------------------------------ table

// MaxUnpool only moves data: its cost is zero, like Scatter's.

const wm_op_def_t wm_ops_detect[] = {
    {"NonMaxSuppression", "", 10, 2, 5, 1, 1, WM_TYPES_FLOAT, nms_infer,
     nms_run, nms_cost},
    {"RoiAlign", "", 10, 3, 3, 1, 1, WM_TYPES_FLOAT, roi_infer, roi_run,
     roi_cost},
    {"GridSample", "", 16, 2, 2, 1, 1, WM_TYPES_NUMERIC, gs_infer, gs_run,
     gs_cost},
    {"AffineGrid", "", 20, 2, 2, 1, 1, WM_TYPES_FLOAT, ag_infer, ag_run,
     ag_cost},
    {"MaxUnpool", "", 9, 2, 3, 1, 1, WM_TYPES_FLOAT, unpool_infer, unpool_run,
     wm_op_cost_zero},
    WM_OPS_END,
};
