// The max pool kernel for AVX-512, private to the cpu backend: a 2-D
// window of 2x2 or 3x3 taps at stride 2 (the pooling of CNN stems and
// downsamplings), begin pads of 0 or 1, no dilation. Per output row the
// maximum of its input rows is taken in vectors, then of each window's
// columns from the even and odd floats of that row (vector permutes); a
// NaN anywhere in a window makes its output NaN, as in the reference.
// Other machines and instances keep the portable kernels of nn.c.
#ifndef WMAP_BACKENDS_CPU_MAXPOOL_H_
#define WMAP_BACKENDS_CPU_MAXPOOL_H_

#include <stdbool.h>
#include <stdint.h>

// The geometry of a max pool plane.
typedef struct cpu_mp_plane {
  int64_t ih, iw;  // input plane
  int64_t oh, ow;  // output plane
  int64_t pt, pl;  // top and left pads (bottom and right follow)
  int64_t k;       // window size in both dims
} cpu_mp_plane_t;

// Whether this CPU has the kernel and it takes |g| (stride 2).
bool cpu_mp512_takes(const cpu_mp_plane_t *g);

// y = the max pool of plane x over output rows [r0, r1) (x and y the whole
// planes). Only for instances cpu_mp512_takes accepts.
void cpu_mp512_rows(const cpu_mp_plane_t *g, const float *x, float *y,
                    int64_t r0, int64_t r1);

#endif  // WMAP_BACKENDS_CPU_MAXPOOL_H_
