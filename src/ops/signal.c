// Signal operators: DFT, STFT, the window functions (HannWindow,
// HammingWindow, BlackmanWindow) and MelWeightMatrix. Transforms run in
// double through an FFT: iterative radix-2 for powers of two and
// Bluestein's chirp-z transform over a radix-2 FFT for every other length,
// so a transform of length n costs O(n log n) whatever n is.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

#define SIG_PI 3.14159265358979323846

// Longest transform accepted. Far beyond any memory, it keeps Bluestein's
// padded size and the chirp index arithmetic clear of overflow.
#define FFT_MAX_LEN ((int64_t)1 << 40)

// ------------------------------------------------------------------- FFT

typedef struct cplx {
  double re;  // real part
  double im;  // imaginary part
} cplx_t;

static cplx_t cplx_mul(cplx_t a, cplx_t b) {
  cplx_t r = {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
  return r;
}

// A transform of one length, reusable across every line of a tensor.
typedef struct fft_plan {
  size_t n;         // transform length
  size_t m;         // radix-2 length: n, or Bluestein's padded length
  cplx_t *twiddle;  // exp(-2 pi i k / m) for k < m / 2
  cplx_t *chirp;    // Bluestein: exp(-pi i k^2 / n) for k < n; else NULL
  cplx_t *kernel;   // Bluestein: FFT of the conjugate chirp (m entries)
  cplx_t *work;     // Bluestein: m scratch entries
} fft_plan_t;

static bool is_pow2(size_t n) {
  return n && (n & (n - 1)) == 0;
}

// In-place unnormalized radix-2 FFT of |m| (a power of two) entries;
// |inverse| uses the conjugate twiddles.
static void fft_radix2(cplx_t *a, size_t m, const cplx_t *tw, bool inverse) {
  for (size_t i = 1, j = 0; i < m; i++) {
    size_t bit = m >> 1;
    for (; j & bit; bit >>= 1) {
      j ^= bit;
    }
    j ^= bit;
    if (i < j) {
      cplx_t t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
  }
  for (size_t len = 2; len <= m; len <<= 1) {
    size_t half = len >> 1, step = m / len;
    for (size_t s = 0; s < m; s += len) {
      for (size_t k = 0; k < half; k++) {
        cplx_t w = tw[k * step];
        if (inverse) {
          w.im = -w.im;
        }
        cplx_t u = a[s + k], v = cplx_mul(a[s + k + half], w);
        a[s + k].re = u.re + v.re;
        a[s + k].im = u.im + v.im;
        a[s + k + half].re = u.re - v.re;
        a[s + k + half].im = u.im - v.im;
      }
    }
  }
}

static void fft_plan_deinit(fft_plan_t *p) {
  free(p->twiddle);
  free(p->chirp);
  free(p->kernel);
  free(p->work);
  memset(p, 0, sizeof(*p));
}

// Allocates |count| complex entries (zeroed); NULL on overflow or OOM.
static cplx_t *cplx_alloc(size_t count) {
  return wm_calloc(count ? count : 1, sizeof(cplx_t));
}

// Prepares a transform of length |n| (1 <= n <= FFT_MAX_LEN).
static wm_status_t fft_plan_init(const wm_op_ctx_t *ctx, fft_plan_t *p,
                                 size_t n) {
  memset(p, 0, sizeof(*p));
  if (n < 1 || n > (size_t)FFT_MAX_LEN) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "transform length %zu is out of range [1, %lld]", n,
                       (long long)FFT_MAX_LEN);
  }
  p->n = n;
  p->m = n;
  if (!is_pow2(n)) {
    p->m = 1;
    while (p->m < 2 * n - 1) {
      p->m <<= 1;
    }
  }
  p->twiddle = cplx_alloc(p->m / 2);
  if (!is_pow2(n)) {
    p->chirp = cplx_alloc(n);
    p->kernel = cplx_alloc(p->m);
    p->work = cplx_alloc(p->m);
  }
  if (!p->twiddle || (!is_pow2(n) && (!p->chirp || !p->kernel || !p->work))) {
    fft_plan_deinit(p);
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory planning a transform of length %zu", n);
  }
  for (size_t k = 0; k < p->m / 2; k++) {
    double a = -2.0 * SIG_PI * (double)k / (double)p->m;
    p->twiddle[k].re = cos(a);
    p->twiddle[k].im = sin(a);
  }
  if (!p->chirp) {
    return NULL;
  }
  // k^2 mod 2n keeps the chirp angle exact for long transforms.
  size_t q = 0, two_n = 2 * n;
  for (size_t k = 0; k < n; k++) {
    double a = -SIG_PI * (double)q / (double)n;
    p->chirp[k].re = cos(a);
    p->chirp[k].im = sin(a);
    q = (q + 2 * k + 1) % two_n;
  }
  p->kernel[0].re = p->chirp[0].re;
  p->kernel[0].im = -p->chirp[0].im;
  for (size_t k = 1; k < n; k++) {
    cplx_t c = {p->chirp[k].re, -p->chirp[k].im};
    p->kernel[k] = c;
    p->kernel[p->m - k] = c;
  }
  fft_radix2(p->kernel, p->m, p->twiddle, false);
  return NULL;
}

// In-place unnormalized forward DFT of p->n entries.
static void fft_forward(fft_plan_t *p, cplx_t *x) {
  if (!p->chirp) {
    fft_radix2(x, p->n, p->twiddle, false);
    return;
  }
  size_t n = p->n, m = p->m;
  for (size_t k = 0; k < n; k++) {
    p->work[k] = cplx_mul(x[k], p->chirp[k]);
  }
  memset(p->work + n, 0, (m - n) * sizeof(cplx_t));
  fft_radix2(p->work, m, p->twiddle, false);
  for (size_t k = 0; k < m; k++) {
    p->work[k] = cplx_mul(p->work[k], p->kernel[k]);
  }
  fft_radix2(p->work, m, p->twiddle, true);
  double scale = 1.0 / (double)m;
  for (size_t k = 0; k < n; k++) {
    cplx_t c = cplx_mul(p->work[k], p->chirp[k]);
    x[k].re = c.re * scale;
    x[k].im = c.im * scale;
  }
}

// In-place normalized inverse DFT (divides by p->n).
static void fft_inverse(fft_plan_t *p, cplx_t *x) {
  for (size_t k = 0; k < p->n; k++) {
    x[k].im = -x[k].im;
  }
  fft_forward(p, x);
  double scale = 1.0 / (double)p->n;
  for (size_t k = 0; k < p->n; k++) {
    x[k].re *= scale;
    x[k].im = -x[k].im * scale;
  }
}

// FLOPs of one transform of length |n| (5 n log2 n per radix-2 pass).
static double fft_flops(double n) {
  if (n < 2) {
    return 0.0;
  }
  double m = pow(2.0, ceil(log2(n)));
  if (m == n) {
    return 5.0 * n * log2(n);
  }
  m = pow(2.0, ceil(log2(2.0 * n - 1.0)));
  return 10.0 * m * log2(m) + 12.0 * m + 12.0 * n;
}

// ------------------------------------------------------------- helpers

// Reads integer scalar input |i| (|what|) into *out; *out_known is false
// when the input is omitted or its value unknown.
static wm_status_t scalar_int(const wm_op_ctx_t *ctx, int32_t i,
                              const char *what, int64_t *out, bool *out_known) {
  *out_known = false;
  *out = 0;
  wm_dtype_t dt = wm_op_in_dtype(ctx, i);
  if (dt != WM_DTYPE_UNDEFINED && dt != WM_DTYPE_INT32 &&
      dt != WM_DTYPE_INT64) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (%s) is %s, want int32 or int64", i, what,
                       wm_dtype_name(dt));
  }
  const wm_shape_t *s = wm_op_in_shape(ctx, i);
  size_t n = 1;
  if (s->rank > 1 || (wm_shape_numel(s, &n) && n != 1)) {
    char buf[128];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (%s) has shape %s, want a scalar", i, what,
                       wm_shape_format(s, buf, sizeof(buf)));
  }
  if (!wm_op_has_input(ctx, i) || !ctx->in[i]) {
    return NULL;
  }
  if (ctx->in[i]->count != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (%s) has %zu elements, want a scalar", i, what,
                       ctx->in[i]->count);
  }
  *out = wm_tensor_get_i64(ctx->in[i], 0);
  *out_known = true;
  return NULL;
}

// Reads floating-point scalar input |i| (|what|) like scalar_int.
static wm_status_t scalar_float(const wm_op_ctx_t *ctx, int32_t i,
                                const char *what, double *out,
                                bool *out_known) {
  *out_known = false;
  *out = 0.0;
  wm_dtype_t dt = wm_op_in_dtype(ctx, i);
  if (dt != WM_DTYPE_UNDEFINED && !wm_dtype_is_float(dt)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (%s) is %s, want a floating-point type", i,
                       what, wm_dtype_name(dt));
  }
  if (!wm_op_has_input(ctx, i) || !ctx->in[i]) {
    return NULL;
  }
  if (ctx->in[i]->count != 1 || ctx->in[i]->shape.rank > 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %d (%s) has %zu elements, want a scalar", i, what,
                       ctx->in[i]->count);
  }
  *out = wm_tensor_get_f64(ctx->in[i], 0);
  *out_known = true;
  return NULL;
}

// Reads the 0/1 attribute |name| (default |def|).
static wm_status_t flag_attr(const wm_op_ctx_t *ctx, const char *name,
                             int64_t def, bool *out) {
  int64_t v = wm_node_attr_int(ctx->node, name, def);
  if (v != 0 && v != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "%s is %lld, want 0 or 1", name,
                       (long long)v);
  }
  *out = v != 0;
  return NULL;
}

// Product of dims [from, to) of a known shape.
static size_t dims_count(const wm_shape_t *s, int32_t from, int32_t to) {
  size_t n = 1;
  for (int32_t d = from; d < to; d++) {
    n *= (size_t)s->dims[d];
  }
  return n;
}

// Sets output 0 to |dtype| and |shape| after checking that the byte size
// of a shape's known dims (zero dims counted as one, as strides do) fits
// int64: lengths come from data and must not make later size arithmetic
// overflow.
static wm_status_t set_out_checked(wm_op_ctx_t *ctx, wm_dtype_t dtype,
                                   const wm_shape_t *shape) {
  int64_t bytes = wm_dtype_size(dtype) ? (int64_t)wm_dtype_size(dtype) : 1;
  bool ok = true;
  for (int32_t d = 0; d < shape->rank && ok; d++) {
    int64_t dim = shape->dims[d] > 0 ? shape->dims[d] : 1;
    ok = wm_checked_mul_i64(bytes, dim, &bytes);
  }
  if (!ok) {
    char buf[160];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "output %s of %s is too large",
                       wm_shape_format(shape, buf, sizeof(buf)),
                       wm_dtype_name(dtype));
  }
  wm_op_set_out(ctx, 0, dtype, shape);
  return NULL;
}

// Checks that the last dim of |s| (when known) is 1 or 2 (real or
// complex); |what| names the tensor.
static wm_status_t check_complex_dim(const wm_op_ctx_t *ctx,
                                     const wm_shape_t *s, const char *what) {
  int64_t c = s->dims[s->rank - 1];
  if (c >= 0 && c != 1 && c != 2) {
    char buf[128];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "%s %s has last dim %lld, want 1 (real) or 2 "
                       "(complex)",
                       what, wm_shape_format(s, buf, sizeof(buf)),
                       (long long)c);
  }
  return NULL;
}

// ------------------------------------------------------------------- DFT

// The resolved parameters of a DFT node; unknown values are -1.
typedef struct dft_params {
  int32_t axis;      // normalized signal axis, -1 when unknown
  int64_t n;         // transform length, -1 when unknown
  int64_t out_len;   // output length on the axis, -1 when unknown
  int64_t out_last;  // 1 (IRFFT: real) or 2 (complex)
  bool inverse;      // inverse transform (divides by n)
  bool onesided;     // forward: keep bins 0..n/2; inverse: IRFFT
} dft_params_t;

// Resolves the parameters of a DFT on input shape |in| (rank known).
static wm_status_t dft_resolve(const wm_op_ctx_t *ctx, const wm_shape_t *in,
                               dft_params_t *p) {
  p->axis = -1;
  p->n = p->out_len = -1;
  WM_RETURN_IF_ERROR(flag_attr(ctx, "inverse", 0, &p->inverse));
  WM_RETURN_IF_ERROR(flag_attr(ctx, "onesided", 0, &p->onesided));
  p->out_last = p->onesided && p->inverse ? 1 : 2;
  char buf[128];
  int32_t r = in->rank;
  if (r < 2) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input %s has rank %d, want at least 2 (signal dims "
                       "and the complex dim)",
                       wm_shape_format(in, buf, sizeof(buf)), r);
  }
  WM_RETURN_IF_ERROR(check_complex_dim(ctx, in, "input"));
  int64_t c = in->dims[r - 1];
  if (p->onesided && c >= 0 && c != (p->inverse ? 2 : 1)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "onesided %s needs %s input, got last dim %lld",
                       p->inverse ? "inverse DFT" : "DFT",
                       p->inverse ? "complex" : "real", (long long)c);
  }
  int64_t axis = 1;
  bool axis_known = true;
  if (ctx->opset >= 20) {
    axis = -2;
    if (wm_op_has_input(ctx, 2)) {
      WM_RETURN_IF_ERROR(scalar_int(ctx, 2, "axis", &axis, &axis_known));
    }
  } else {
    axis = wm_node_attr_int(ctx->node, "axis", 1);
  }
  if (axis_known) {
    if (axis < -(int64_t)r || axis == -1 || axis >= r - 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "axis %lld is out of range for input %s (want "
                         "[-%d, -2] or [0, %d])",
                         (long long)axis, wm_shape_format(in, buf, sizeof(buf)),
                         r, r - 2);
    }
    p->axis = (int32_t)(axis < 0 ? axis + r : axis);
  }
  int64_t len = p->axis >= 0 ? in->dims[p->axis] : -1;
  bool n_known = true;
  if (wm_op_has_input(ctx, 1)) {
    WM_RETURN_IF_ERROR(scalar_int(ctx, 1, "dft_length", &p->n, &n_known));
    if (n_known && (p->n < 1 || p->n > FFT_MAX_LEN)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "dft_length %lld is out of range [1, %lld]",
                         (long long)p->n, (long long)FFT_MAX_LEN);
    }
    if (!n_known) {
      p->n = -1;
    }
  } else if (len >= 0) {
    p->n = p->onesided && p->inverse ? 2 * (len - 1) : len;
    if (p->n < 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "axis %d of input %s gives a transform of length "
                         "%lld",
                         p->axis, wm_shape_format(in, buf, sizeof(buf)),
                         (long long)p->n);
    }
  }
  if (p->n >= 0) {
    p->out_len = p->onesided && !p->inverse ? p->n / 2 + 1 : p->n;
  }
  return NULL;
}

static wm_status_t dft_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  wm_dtype_t dtype = wm_op_in_dtype(ctx, 0);
  if (in->rank < 0) {
    wm_op_set_out_unknown(ctx, 0, dtype);
    return NULL;
  }
  dft_params_t p;
  WM_RETURN_IF_ERROR(dft_resolve(ctx, in, &p));
  wm_shape_t out = *in;
  out.dims[in->rank - 1] = p.out_last;
  if (p.axis >= 0) {
    out.dims[p.axis] = p.out_len;
  } else if (p.onesided || wm_op_has_input(ctx, 1)) {
    // Unknown axis: any signal dim may change.
    for (int32_t d = 0; d < in->rank - 1; d++) {
      out.dims[d] = -1;
    }
  }
  return set_out_checked(ctx, dtype, &out);
}

static wm_status_t dft_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *x = ctx->in[0];
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  dft_params_t p;
  WM_RETURN_IF_ERROR(dft_resolve(ctx, &x->shape, &p));
  if (p.axis < 0 || p.n < 1) {
    return WM_OP_ERROR(ctx, INTERNAL, "DFT parameters are unknown at run time");
  }
  const wm_shape_t *s = &x->shape;
  int32_t r = s->rank, a = p.axis;
  size_t outer = dims_count(s, 0, a), inner = dims_count(s, a + 1, r - 1);
  size_t len = (size_t)s->dims[a], c = (size_t)s->dims[r - 1];
  size_t n = (size_t)p.n, out_len = (size_t)p.out_len;
  size_t out_last = (size_t)p.out_last;
  if (outer == 0 || inner == 0) {
    return NULL;
  }
  fft_plan_t plan;
  WM_RETURN_IF_ERROR(fft_plan_init(ctx, &plan, n));
  cplx_t *buf = cplx_alloc(n);
  if (!buf) {
    fft_plan_deinit(&plan);
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for a transform of length %zu", n);
  }
  bool irfft = p.onesided && p.inverse;
  // IRFFT reads bins 0..n/2 and mirrors them; otherwise the signal is cut
  // or zero-padded to n.
  size_t take = irfft ? n / 2 + 1 : n;
  take = take < len ? take : len;
  for (size_t o = 0; o < outer; o++) {
    for (size_t i = 0; i < inner; i++) {
      memset(buf, 0, n * sizeof(cplx_t));
      for (size_t k = 0; k < take; k++) {
        size_t at = ((o * len + k) * inner + i) * c;
        buf[k].re = wm_tensor_get_f64(x, at);
        buf[k].im = c == 2 ? wm_tensor_get_f64(x, at + 1) : 0.0;
      }
      if (irfft) {
        for (size_t k = n / 2 + 1; k < n; k++) {
          buf[k].re = buf[n - k].re;
          buf[k].im = -buf[n - k].im;
        }
      }
      if (p.inverse) {
        fft_inverse(&plan, buf);
      } else {
        fft_forward(&plan, buf);
      }
      for (size_t k = 0; k < out_len; k++) {
        size_t at = ((o * out_len + k) * inner + i) * out_last;
        wm_tensor_set_f64(y, at, buf[k].re);
        if (out_last == 2) {
          wm_tensor_set_f64(y, at + 1, buf[k].im);
        }
      }
    }
  }
  free(buf);
  fft_plan_deinit(&plan);
  return NULL;
}

static void dft_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  const wm_shape_t *in = wm_op_in_shape(ctx, 0);
  if (!wm_shape_is_known(in) || in->rank < 2) {
    return;
  }
  dft_params_t p;
  wm_status_t st = dft_resolve(ctx, in, &p);
  if (st || p.axis < 0 || p.n < 1) {
    wm_status_free(st);
    return;
  }
  double lines = 1.0;
  for (int32_t d = 0; d < in->rank - 1; d++) {
    lines *= d == p.axis ? 1.0 : (double)in->dims[d];
  }
  out->flops = lines * fft_flops((double)p.n);
}

// ------------------------------------------------------------------ STFT

// The resolved parameters of an STFT node; unknown values are -1.
typedef struct stft_params {
  int64_t step;    // frame_step
  int64_t length;  // frame_length (the DFT size)
  int64_t frames;  // number of frames
  int64_t bins;    // output bins per frame
  bool onesided;   // keep bins 0..length/2
} stft_params_t;

static wm_status_t stft_resolve(const wm_op_ctx_t *ctx, const wm_shape_t *sig,
                                stft_params_t *p) {
  p->step = p->length = p->frames = p->bins = -1;
  WM_RETURN_IF_ERROR(flag_attr(ctx, "onesided", 1, &p->onesided));
  char buf[128];
  if (sig->rank >= 0 && sig->rank != 3) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "signal %s has rank %d, want 3 ([batch, length, 1 or "
                       "2])",
                       wm_shape_format(sig, buf, sizeof(buf)), sig->rank);
  }
  if (sig->rank == 3) {
    WM_RETURN_IF_ERROR(check_complex_dim(ctx, sig, "signal"));
    if (p->onesided && sig->dims[2] == 2) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "onesided STFT needs a real signal, got %s",
                         wm_shape_format(sig, buf, sizeof(buf)));
    }
  }
  bool known = false;
  WM_RETURN_IF_ERROR(scalar_int(ctx, 1, "frame_step", &p->step, &known));
  if (!known) {
    p->step = -1;
  } else if (p->step < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "frame_step is %lld, want >= 1",
                       (long long)p->step);
  }
  int64_t window = -1;
  if (wm_op_has_input(ctx, 2)) {
    const wm_shape_t *w = wm_op_in_shape(ctx, 2);
    wm_dtype_t wdt = wm_op_in_dtype(ctx, 2), sdt = wm_op_in_dtype(ctx, 0);
    if (w->rank >= 0 && w->rank != 1) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "window %s has rank %d, want 1",
                         wm_shape_format(w, buf, sizeof(buf)), w->rank);
    }
    if (wdt != WM_DTYPE_UNDEFINED && sdt != WM_DTYPE_UNDEFINED && wdt != sdt) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "window is %s, signal is %s",
                         wm_dtype_name(wdt), wm_dtype_name(sdt));
    }
    window = w->rank == 1 ? w->dims[0] : -1;
  }
  if (wm_op_has_input(ctx, 3)) {
    WM_RETURN_IF_ERROR(scalar_int(ctx, 3, "frame_length", &p->length, &known));
    if (!known) {
      p->length = -1;
    } else if (p->length < 1 || p->length > FFT_MAX_LEN) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "frame_length %lld is out of range [1, %lld]",
                         (long long)p->length, (long long)FFT_MAX_LEN);
    }
    if (known && window >= 0 && window != p->length) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "window has %lld elements but frame_length is %lld",
                         (long long)window, (long long)p->length);
    }
  } else if (wm_op_has_input(ctx, 2)) {
    p->length = window;
  } else {
    p->length = sig->rank == 3 ? sig->dims[1] : -1;  // one frame
  }
  if (p->length == 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "frame length is 0");
  }
  int64_t total = sig->rank == 3 ? sig->dims[1] : -1;
  if (p->length >= 0 && total >= 0 && p->length > total) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "frame length %lld exceeds the signal length %lld",
                       (long long)p->length, (long long)total);
  }
  if (p->length >= 0 && total >= 0 && p->step >= 1) {
    p->frames = 1 + (total - p->length) / p->step;
  }
  if (p->length >= 0) {
    p->bins = p->onesided ? p->length / 2 + 1 : p->length;
  }
  return NULL;
}

static wm_status_t stft_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *sig = wm_op_in_shape(ctx, 0);
  stft_params_t p;
  WM_RETURN_IF_ERROR(stft_resolve(ctx, sig, &p));
  wm_shape_t out = {4,
                    {sig->rank == 3 ? sig->dims[0] : -1, p.frames, p.bins, 2}};
  return set_out_checked(ctx, wm_op_in_dtype(ctx, 0), &out);
}

static wm_status_t stft_run(wm_op_ctx_t *ctx) {
  const wm_tensor_t *x = ctx->in[0];
  const wm_tensor_t *win = wm_op_has_input(ctx, 2) ? ctx->in[2] : NULL;
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  stft_params_t p;
  WM_RETURN_IF_ERROR(stft_resolve(ctx, &x->shape, &p));
  if (p.frames < 0 || p.length < 1) {
    return WM_OP_ERROR(ctx, INTERNAL,
                       "STFT parameters are unknown at run time");
  }
  size_t batch = (size_t)x->shape.dims[0], total = (size_t)x->shape.dims[1];
  size_t c = (size_t)x->shape.dims[2], n = (size_t)p.length;
  size_t frames = (size_t)p.frames, bins = (size_t)p.bins;
  size_t step = (size_t)p.step;
  if (batch == 0 || frames == 0) {
    return NULL;
  }
  fft_plan_t plan;
  WM_RETURN_IF_ERROR(fft_plan_init(ctx, &plan, n));
  cplx_t *buf = cplx_alloc(n);
  if (!buf) {
    fft_plan_deinit(&plan);
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for a transform of length %zu", n);
  }
  for (size_t b = 0; b < batch; b++) {
    for (size_t f = 0; f < frames; f++) {
      for (size_t k = 0; k < n; k++) {
        size_t at = (b * total + f * step + k) * c;
        double w = win ? wm_tensor_get_f64(win, k) : 1.0;
        buf[k].re = wm_tensor_get_f64(x, at) * w;
        buf[k].im = c == 2 ? wm_tensor_get_f64(x, at + 1) * w : 0.0;
      }
      fft_forward(&plan, buf);
      for (size_t k = 0; k < bins; k++) {
        size_t at = ((b * frames + f) * bins + k) * 2;
        wm_tensor_set_f64(y, at, buf[k].re);
        wm_tensor_set_f64(y, at + 1, buf[k].im);
      }
    }
  }
  free(buf);
  fft_plan_deinit(&plan);
  return NULL;
}

static void stft_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  const wm_shape_t *y = &ctx->out_types[0].shape;
  const wm_shape_t *sig = wm_op_in_shape(ctx, 0);
  if (!wm_shape_is_known(y) || y->rank != 4 || sig->rank != 3) {
    return;
  }
  stft_params_t p;
  wm_status_t st = stft_resolve(ctx, sig, &p);
  if (st || p.length < 1) {
    wm_status_free(st);
    return;
  }
  double frames = (double)y->dims[0] * (double)y->dims[1];
  out->flops = frames * (fft_flops((double)p.length) + 2.0 * (double)p.length);
}

// ------------------------------------------------------ window functions

// Checks the output_datatype attribute of a generator: a numeric type.
static wm_status_t output_dtype(const wm_op_ctx_t *ctx, wm_dtype_t *out) {
  int64_t dt = wm_node_attr_int(ctx->node, "output_datatype", WM_DTYPE_FLOAT);
  if (!wm_dtype_is_valid(dt) ||
      !(wm_dtype_is_float((wm_dtype_t)dt) || wm_dtype_is_int((wm_dtype_t)dt))) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "output_datatype %lld is not a numeric type",
                       (long long)dt);
  }
  *out = (wm_dtype_t)dt;
  return NULL;
}

// Window kinds; a window is a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N).
enum window_kind { WINDOW_HANN, WINDOW_HAMMING, WINDOW_BLACKMAN };

// Returns the window kind of the context's node.
static enum window_kind window_kind(const wm_op_ctx_t *ctx) {
  const char *op = ctx->node->op_type;
  return strcmp(op, "HannWindow") == 0      ? WINDOW_HANN
         : strcmp(op, "HammingWindow") == 0 ? WINDOW_HAMMING
                                            : WINDOW_BLACKMAN;
}

// Reads the size of a window (or -1 when unknown).
static wm_status_t window_size(const wm_op_ctx_t *ctx, int64_t *out) {
  bool known = false;
  WM_RETURN_IF_ERROR(scalar_int(ctx, 0, "size", out, &known));
  if (!known) {
    *out = -1;
  } else if (*out < 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "size is %lld, want >= 0",
                       (long long)*out);
  }
  return NULL;
}

static wm_status_t window_infer(wm_op_ctx_t *ctx) {
  wm_dtype_t dtype = WM_DTYPE_FLOAT;
  bool periodic = true;
  WM_RETURN_IF_ERROR(output_dtype(ctx, &dtype));
  WM_RETURN_IF_ERROR(flag_attr(ctx, "periodic", 1, &periodic));
  wm_shape_t out = {1, {-1}};
  WM_RETURN_IF_ERROR(window_size(ctx, &out.dims[0]));
  return set_out_checked(ctx, dtype, &out);
}

static wm_status_t window_run(wm_op_ctx_t *ctx) {
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  bool periodic = true;
  int64_t size = 0;
  WM_RETURN_IF_ERROR(flag_attr(ctx, "periodic", 1, &periodic));
  WM_RETURN_IF_ERROR(window_size(ctx, &size));
  double a0 = 0.5, a1 = 0.5, a2 = 0.0;
  switch (window_kind(ctx)) {
    case WINDOW_HANN:
      break;
    case WINDOW_HAMMING:
      a0 = 25.0 / 46.0;
      a1 = 21.0 / 46.0;
      break;
    case WINDOW_BLACKMAN:
      a0 = 0.42;
      a2 = 0.08;
      break;
  }
  // A symmetric window spans size - 1 intervals; one point is just 1.
  double n = (double)(periodic ? size : size - 1);
  for (size_t k = 0; k < y->count; k++) {
    double v = 1.0;
    if (n > 0) {
      double t = 2.0 * SIG_PI * (double)k / n;
      v = a0 - a1 * cos(t) + a2 * cos(2.0 * t);
    }
    wm_tensor_set_f64(y, k, v);
  }
  return NULL;
}

static void window_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  double n = (double)wm_op_out_numel(ctx);
  bool blackman = window_kind(ctx) == WINDOW_BLACKMAN;
  out->flops = n * (blackman ? 6.0 : 4.0);
  out->transcendentals = n * (blackman ? 2.0 : 1.0);
}

// ------------------------------------------------------- MelWeightMatrix

// Reads the integer inputs of MelWeightMatrix; *out_known is false when
// one is unknown.
static wm_status_t mel_ints(const wm_op_ctx_t *ctx, int64_t *out_bins,
                            int64_t *out_dft, int64_t *out_rate,
                            bool *out_known) {
  bool k0 = false, k1 = false, k2 = false;
  WM_RETURN_IF_ERROR(scalar_int(ctx, 0, "num_mel_bins", out_bins, &k0));
  WM_RETURN_IF_ERROR(scalar_int(ctx, 1, "dft_length", out_dft, &k1));
  WM_RETURN_IF_ERROR(scalar_int(ctx, 2, "sample_rate", out_rate, &k2));
  if (k0 && *out_bins < 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "num_mel_bins is %lld, want >= 0",
                       (long long)*out_bins);
  }
  if (k1 && *out_dft < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "dft_length is %lld, want >= 1",
                       (long long)*out_dft);
  }
  if (k2 && *out_rate < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "sample_rate is %lld, want >= 1",
                       (long long)*out_rate);
  }
  *out_known = k0 && k1 && k2;
  if (!k0) {
    *out_bins = -1;
  }
  if (!k1) {
    *out_dft = -1;
  }
  return NULL;
}

static wm_status_t mel_infer(wm_op_ctx_t *ctx) {
  wm_dtype_t dtype = WM_DTYPE_FLOAT;
  WM_RETURN_IF_ERROR(output_dtype(ctx, &dtype));
  int64_t bins = 0, dft = 0, rate = 0;
  bool known = false;
  WM_RETURN_IF_ERROR(mel_ints(ctx, &bins, &dft, &rate, &known));
  double lo = 0.0, hi = 0.0;
  bool klo = false, khi = false;
  WM_RETURN_IF_ERROR(scalar_float(ctx, 3, "lower_edge_hertz", &lo, &klo));
  WM_RETURN_IF_ERROR(scalar_float(ctx, 4, "upper_edge_hertz", &hi, &khi));
  wm_shape_t out = {2, {dft >= 0 ? dft / 2 + 1 : -1, bins}};
  return set_out_checked(ctx, dtype, &out);
}

// Hertz to mel and back, as the ONNX definition states them.
static double hz_to_mel(double hz) {
  return 2595.0 * log10(1.0 + hz / 700.0);
}
static double mel_to_hz(double mel) {
  return 700.0 * (pow(10.0, mel / 2595.0) - 1.0);
}

static wm_status_t mel_run(wm_op_ctx_t *ctx) {
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;  // output omitted: nothing to compute
  }
  int64_t bins = 0, dft = 0, rate = 0;
  bool known = false, klo = false, khi = false;
  double lo = 0.0, hi = 0.0;
  WM_RETURN_IF_ERROR(mel_ints(ctx, &bins, &dft, &rate, &known));
  WM_RETURN_IF_ERROR(scalar_float(ctx, 3, "lower_edge_hertz", &lo, &klo));
  WM_RETURN_IF_ERROR(scalar_float(ctx, 4, "upper_edge_hertz", &hi, &khi));
  if (!known || !klo || !khi) {
    return WM_OP_ERROR(ctx, INTERNAL, "inputs are unknown at run time");
  }
  if (!(lo >= 0.0 && lo <= hi && isfinite(hi))) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "edges [%g, %g] Hz are not a finite range from 0", lo,
                       hi);
  }
  int64_t spec = dft / 2 + 1;
  size_t nb = (size_t)bins;
  int64_t *edge = wm_malloc((nb + 2) * sizeof(int64_t));
  if (!edge) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
  }
  // Band edges: num_mel_bins + 2 points evenly spaced in mel, mapped to
  // spectrogram bins.
  double mlo = hz_to_mel(lo), mhi = hz_to_mel(hi);
  double step = (mhi - mlo) / (double)(nb + 2);
  for (size_t i = 0; i < nb + 2; i++) {
    double hz = mel_to_hz((double)i * step + mlo);
    double b = floor((double)(dft + 1) * hz / (double)rate);
    edge[i] = b >= 0.0 && b < 9.0e15 ? (int64_t)b : -1;
  }
  wm_status_t st = NULL;
  for (size_t i = 0; i < nb && !st; i++) {
    int64_t left = edge[i], center = edge[i + 1], right = edge[i + 2];
    if (left < 0 || center >= spec || right > spec) {
      st =
          WM_OP_ERROR(ctx, OUT_OF_RANGE,
                      "mel band %zu spans bins [%lld, %lld, %lld], outside "
                      "the %lld bins of dft_length %lld at sample_rate "
                      "%lld (edges %g..%g Hz)",
                      i, (long long)left, (long long)center, (long long)right,
                      (long long)spec, (long long)dft, (long long)rate, lo, hi);
      break;
    }
    size_t col = i;
    if (center == left) {
      wm_tensor_set_f64(y, (size_t)center * nb + col, 1.0);
    } else {
      for (int64_t j = left; j <= center; j++) {
        wm_tensor_set_f64(y, (size_t)j * nb + col,
                          (double)(j - left) / (double)(center - left));
      }
    }
    for (int64_t j = center; j < right; j++) {
      wm_tensor_set_f64(y, (size_t)j * nb + col,
                        (double)(right - j) / (double)(right - center));
    }
  }
  free(edge);
  return st;
}

// ------------------------------------------------------------------ table

#define SIG_INT_SIZE (WM_T(INT32) | WM_T(INT64))

const wm_op_def_t wm_ops_signal[] = {
    {"DFT", "", 17, 1, 2, 1, 1, WM_TYPES_FLOAT, dft_infer, dft_run, dft_cost},
    {"DFT", "", 20, 1, 3, 1, 1, WM_TYPES_FLOAT, dft_infer, dft_run, dft_cost},
    {"STFT", "", 17, 2, 4, 1, 1, WM_TYPES_FLOAT, stft_infer, stft_run,
     stft_cost},
    {"HannWindow", "", 17, 1, 1, 1, 1, SIG_INT_SIZE, window_infer, window_run,
     window_cost},
    {"HammingWindow", "", 17, 1, 1, 1, 1, SIG_INT_SIZE, window_infer,
     window_run, window_cost},
    {"BlackmanWindow", "", 17, 1, 1, 1, 1, SIG_INT_SIZE, window_infer,
     window_run, window_cost},
    {"MelWeightMatrix", "", 17, 5, 5, 1, 1, SIG_INT_SIZE, mel_infer, mel_run,
     NULL},
    WM_OPS_END,
};
