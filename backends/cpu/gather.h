// Row gathers for packing, private to the cpu backend: kc rows of nr
// floats, row k taking the floats at one offset per row plus one index
// per column. Where the indices span fewer than GATHER_SLACK floats and nr
// is at most 16, the AVX-512 path loads each row's span in one or two
// vectors and permutes it; otherwise, and on other machines, the floats
// are read one at a time.
#ifndef WMAP_BACKENDS_CPU_GATHER_H_
#define WMAP_BACKENDS_CPU_GATHER_H_

#include <stdint.h>

// The floats past a row's offset the vector loads may read.
enum { GATHER_SLACK = 32 };

// dst[k * nr + i] = src[off[k] + idx[i]] for k in [0, kc), i in [0, nr),
// every idx[i] >= 0; src[off[k] .. off[k] + GATHER_SLACK) must be readable
// for every k (the floats between the indices are read but not used).
void cpu_gather_rows(const float *src, const int64_t *off, int64_t kc,
                     const int32_t *idx, int nr, float *dst);

#endif  // WMAP_BACKENDS_CPU_GATHER_H_
