// What the nn family's operator files share (src/ops/nn.c): checks,
// conversions to double, and the sliding window of convolutions and pools
// (auto_pad, strides, dilations, output sizes, taps). Private to src/ops:
// conv.c, pool.c, norm.c and loss.c include it.
#ifndef WMAP_SRC_OPS_NN_H_
#define WMAP_SRC_OPS_NN_H_

#include "ops/ops.h"

// Spatial dims of an N x C x D1 x ... x Dn tensor.
enum { MAX_SPATIAL = WM_MAX_RANK - 2 };

typedef enum auto_pad {
  AUTO_PAD_NOTSET = 0,
  AUTO_PAD_SAME_UPPER = 1,
  AUTO_PAD_SAME_LOWER = 2,
  AUTO_PAD_VALID = 3,
} auto_pad_t;

// The sliding window shared by Conv, ConvTranspose and the pools.
typedef struct window {
  int32_t nsp;                     // spatial dims
  int64_t kernel[MAX_SPATIAL];     // taps per dim; -1 = unknown
  int64_t strides[MAX_SPATIAL];    // >= 1
  int64_t dilations[MAX_SPATIAL];  // >= 1
  int64_t pads[2 * MAX_SPATIAL];   // begins, then ends
  auto_pad_t auto_pad;             // how pads are derived
  bool ceil_mode;                  // round output size up
} window_t;

// Buffers of Conv and ConvTranspose: X, W and B (NULL when omitted) as
// doubles, the output and the kernel taps.
typedef struct conv_bufs {
  double *x;      // input 0
  double *k;      // input 1, the weights
  double *b;      // input 2, the bias, or NULL
  double *y;      // output 0
  int64_t *taps;  // kernel tap offsets, nsp per tap
  size_t nt;      // number of taps
} conv_bufs_t;

bool nn_add_i64(int64_t a, int64_t b, int64_t *out);

// Floor division by 2 (total padding may be negative for ConvTranspose).
int64_t nn_floor_half(int64_t v);

// Product of dims known to come from an allocated tensor.
size_t nn_prod(const int64_t *dims, int32_t n);

// The mean of the |n| values at |x| and 1 / sqrt(variance + eps), the
// variance the population's (both 0 for n = 0): the normalizations'
// statistics, in double.
void nn_moments(const double *x, size_t n, double eps, double *out_mean,
                double *out_inv);

// Product of dims as a double for costs; -1 when any is unknown.
double nn_prod_f(const int64_t *dims, int32_t n);

double nn_numel_f(const wm_shape_t *s);

// Requires input |i|, when its dtype is known, to match input 0.
wm_status_t nn_check_same_dtype(const wm_op_ctx_t *ctx, int32_t i);

// Requires input |i|, when its dtype is known, to be a float type.
wm_status_t nn_check_float_dtype(const wm_op_ctx_t *ctx, int32_t i);

// Requires input |i| to have rank within [lo, hi] when its rank is known.
wm_status_t nn_check_rank(const wm_op_ctx_t *ctx, int32_t i, int32_t lo,
                          int32_t hi);

// Requires input |i|, when present with a known shape, to be a vector of
// |n| elements (n < 0: unknown, only the rank is checked).
wm_status_t nn_check_vector(const wm_op_ctx_t *ctx, int32_t i, const char *what,
                            int64_t n);

// Copies a tensor into a heap array of doubles.
wm_status_t nn_load_f64(const wm_op_ctx_t *ctx, const wm_tensor_t *t,
                        double **out);

// Allocates |n| zeroed doubles.
wm_status_t nn_alloc_f64(const wm_op_ctx_t *ctx, size_t n, double **out);

void nn_store_f64(wm_tensor_t *t, const double *v);

// Loads input |i| (or NULL when omitted) as doubles.
wm_status_t nn_load_input(const wm_op_ctx_t *ctx, int32_t i, double **out);

wm_status_t nn_parse_auto_pad(const wm_op_ctx_t *ctx, auto_pad_t *out);

// Reads kernel_shape, strides, dilations, pads, auto_pad and ceil_mode
// for |nsp| spatial dims. |wkernel| holds the kernel dims of the weight
// (entries -1 when unknown) or is NULL for pools, where kernel_shape is
// required.
wm_status_t nn_window_parse(const wm_op_ctx_t *ctx, int32_t nsp,
                            const int64_t *wkernel, window_t *w);

// Kernel extent (k - 1) * d + 1 of dim |i|; false on overflow.
bool nn_window_extent(const window_t *w, int32_t i, int64_t *out);

// The output size and pads of Conv and the pools for input spatial dims
// |in| (-1 = unknown): fills out[] and, for auto_pad, w->pads.
wm_status_t nn_window_forward(const wm_op_ctx_t *ctx, window_t *w,
                              const int64_t *in, int64_t *out);

// The resolved window: kernel_shape, strides, dilations and pads (begins,
// then ends) all explicit, auto_pad applied.
wm_status_t nn_window_params(wm_op_ctx_t *ctx, const window_t *w,
                             wm_op_params_t *out);

// Offsets of every kernel tap (coordinate times dilation), nsp per tap.
wm_status_t nn_window_taps(const wm_op_ctx_t *ctx, const window_t *w,
                           int64_t **out_taps, size_t *out_count);

// Advances the odometer |pos| over |dims|.
void nn_odometer_next(int64_t *pos, const int64_t *dims, int32_t n);

void nn_conv_bufs_free(conv_bufs_t *bf);

// Loads the inputs of Conv or ConvTranspose and allocates the output;
// release with nn_conv_bufs_free (also on failure).
wm_status_t nn_conv_bufs_load(wm_op_ctx_t *ctx, const window_t *w,
                              conv_bufs_t *out);

// Flat offset in spatial dims |sp| that kernel tap |tap| reads (Conv) or
// writes (ConvTranspose) at window position |pos|; false in the padding.
bool nn_tap_offset(const window_t *w, const int64_t *pos, const int64_t *tap,
                   const int64_t *sp, size_t *out);

#endif  // WMAP_SRC_OPS_NN_H_
