// 3x3 convolutions of stride and dilation 1 as Winograd F(2x2, 3x3)
// products, private to the cpu backend (Lavin and Gray, "Fast Algorithms
// for Convolutional Neural Networks", CVPR 2016): each 4x4 tile of the
// padded image (tiles 2 apart) and each filter become 16 values, the 16
// products over the channels run on the GEMM engine (16 multiply-adds per
// 2x2 outputs and channel pair instead of 36), and each tile's 16 sums
// become its 2x2 outputs, with the bias, a residual Z and the activation.
// The filters are transformed and packed once, at plan time. On AVX-512
// only; other machines and instances keep blas.c's forms.
#ifndef WMAP_BACKENDS_CPU_WINOGRAD_H_
#define WMAP_BACKENDS_CPU_WINOGRAD_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemm.h"

// The transformed values of a tile.
enum { CPU_WINO_VALUES = 16 };

// A planned convolution: sizes and the transformed, packed filters.
typedef struct cpu_wino {
  int64_t n, c, m;         // images, input and output channels
  int64_t ih, iw, oh, ow;  // image and output sizes
  int64_t pt, pl;          // top and left pads (the others follow)
  int64_t th, tw;          // tiles down and across an image
  int64_t tiles;           // n * th * tw: the products' columns
  int64_t ld;              // floats a row of tiles takes (tiles rounded
                           // up to whole vectors)
  bool tr;                 // products transposed (tiles as their rows):
                           // fewer tiles than fill the GEMM's panels
  cpu_gemm_packed_t u[CPU_WINO_VALUES];  // per value, the filters (m x c),
                                         // packed as the products' A (B
                                         // transposed)
} cpu_wino_t;

// Whether this CPU has the kernels and the Winograd form costs less than
// the direct one for a 3x3 convolution of |wg|'s sizes (n, c, m, ih, iw,
// oh, ow, pt and pl set; pads up to 2).
bool cpu_wino_takes(const cpu_wino_t *wg);

// Plans |wg| (its sizes set, as cpu_wino_takes accepts them) for the
// filters |w| (m x c x 3 x 3): NULL or an out-of-memory error (then
// cpu_wino_deinit frees what was made).
wm_error *cpu_wino_plan(cpu_wino_t *wg, const float *w);

// Frees the packed filters (accepts a zeroed one).
void cpu_wino_deinit(cpu_wino_t *wg);

// Bytes of workspace a run on |threads| threads uses: the transformed
// tiles, the products and the GEMM engine's buffers.
size_t cpu_wino_workspace(const cpu_wino_t *wg, int32_t threads);

// y = act(x conv w + bias + z) (bias and z NULL: none; y may be z's
// memory), with |ws| of at least cpu_wino_workspace bytes (else the
// buffers are allocated for the run): NULL or an out-of-memory error.
wm_error *cpu_wino_run(const cpu_wino_t *wg, const float *x, const float *bias,
                       const float *z, const cpu_act_t *act, float *y,
                       wm_pool_t *pool, const cpu_gemm_scratch_t *ws);

#endif  // WMAP_BACKENDS_CPU_WINOGRAD_H_
