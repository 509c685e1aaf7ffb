// Host measurement loops of the map (private to src/map).
#ifndef WMAP_MAP_KERNELS_H_
#define WMAP_MAP_KERNELS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// The widest FMA variant this CPU runs: "avx512f", "avx2" or "default".
const char *wm_map_isa(void);
// Runs |iters| rounds of independent FMA chains in registers; sets
// *out_flops (2 per FMA lane) and returns a value to keep the work alive.
double wm_map_fma(bool fp64, uint64_t iters, double seed, uint64_t *out_flops);
// a[i] = b[i] + s * c[i] for i < n.
void wm_map_triad(float *a, const float *b, const float *c, float s, size_t n);

#endif  // WMAP_MAP_KERNELS_H_
