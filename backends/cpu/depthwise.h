// The direct depthwise kernel for AVX-512, private to the cpu backend: one
// channel's plane convolved with its own k x k filter (k 3 or 5, stride 1
// or 2 in both dims, no dilation), the input rows read in place 16 output
// columns at a time with masked loads at the plane's borders (no copy,
// no padding buffer), bias, residual and the common activations applied
// in registers before a masked store. Other machines and instances keep
// the portable kernels of blas.c.
#ifndef WMAP_BACKENDS_CPU_DEPTHWISE_H_
#define WMAP_BACKENDS_CPU_DEPTHWISE_H_

#include <stdbool.h>
#include <stdint.h>

#include "gemm.h"  // cpu_act_t

// The geometry of a depthwise plane.
typedef struct cpu_dw_plane {
  int64_t ih, iw;  // input plane
  int64_t oh, ow;  // output plane
  int64_t pt, pl;  // top and left pads (bottom and right follow)
  int64_t k;       // kernel size in both dims
  int64_t s;       // stride in both dims
  cpu_act_t act;   // activation after the bias and Z
} cpu_dw_plane_t;

// Whether this CPU has the kernel and it takes |g|.
bool cpu_dw512_takes(const cpu_dw_plane_t *g);

// y = act(bias + (x conv w) + z) over output rows [r0, r1) of one plane
// (x, z and y the whole planes; z NULL: none); w holds the k * k taps row
// by row. Only for instances cpu_dw512_takes accepts.
void cpu_dw512_rows(const cpu_dw_plane_t *g, const float *x, const float *w,
                    float bias, const float *z, float *y, int64_t r0,
                    int64_t r1);

#endif  // WMAP_BACKENDS_CPU_DEPTHWISE_H_
