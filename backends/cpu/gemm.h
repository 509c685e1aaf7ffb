// wmap's fp32 GEMM engine, private to the cpu backend: C = A·B followed by
// an epilogue (alpha, bias, a residual Z, an activation) applied to each
// output tile while it is in cache. BLIS-style: A is packed into MR-row
// panels, B into NR-column panels, blocked by KC/MC/NC from the cache
// sizes, and a register-blocked micro-kernel (AVX-512, AVX2+FMA or
// portable C, picked once by CPUID; shorter ones when C has fewer rows
// than its tile) runs over the panels; a one-row product with a strided B
// reads B in place instead (packing would only copy it). Either operand
// can be packed once ahead of time (constant weights); B can also come
// from a packing callback (implicit-GEMM convolution). Work, packing
// included, is split over M and N blocks (and batches) on a wm_pool_t, or
// stays on the calling thread when it is too small to gain from the pool.
// Thread-safety: packed operands are read-only once made; one scratch is
// used by one cpu_gemm_run at a time. The per-thread packing buffers come
// from the caller (the op's workspace, cpu_gemm_workspace_bytes), so
// plans hold no run-time buffers of their own.
#ifndef WMAP_BACKENDS_CPU_GEMM_H_
#define WMAP_BACKENDS_CPU_GEMM_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu.h"

// Activations the epilogue applies (after alpha, bias and Z).
typedef enum cpu_act_kind {
  CPU_ACT_NONE = 0,
  CPU_ACT_RELU = 1,
  CPU_ACT_CLIP = 2,          // p0 = min, p1 = max
  CPU_ACT_LEAKY_RELU = 3,    // p0 = alpha
  CPU_ACT_SIGMOID = 4,       //
  CPU_ACT_HARD_SIGMOID = 5,  // p0 = alpha, p1 = beta
  CPU_ACT_HARD_SWISH = 6,    //
  CPU_ACT_TANH = 7,          //
  CPU_ACT_SILU = 8,          // x * sigmoid(x)
  CPU_ACT_GELU = 9,          // 0.5 x (1 + erf(x / sqrt 2))
  CPU_ACT_GELU_TANH = 10,    // the tanh approximation of Gelu
} cpu_act_kind_t;

// An activation and its parameters.
typedef struct cpu_act {
  cpu_act_kind_t kind;  // CPU_ACT_*
  float p0, p1;         // parameters (see cpu_act_kind_t)
} cpu_act_t;

// What happens to each element of C = A·B before it is stored:
// y = act(alpha * acc + bias + beta * Z).
typedef struct cpu_gemm_epi {
  float alpha;        // scale of A·B
  const float *bias;  // per row of C (bias_rows) or per column; NULL = none
  bool bias_rows;     // bias is indexed by the row
  const float *z;     // z[i * z_rs + j * z_cs]; NULL = none
  int64_t z_rs;       // Z's row stride (0 = broadcast)
  int64_t z_cs;       // Z's column stride: 0 (broadcast) or 1
  float beta;         // scale of Z
  cpu_act_t act;      // then this activation
} cpu_gemm_epi_t;

// The epilogue that stores A·B as is.
cpu_gemm_epi_t cpu_gemm_epi_plain(void);

// Which operand a packed matrix is.
typedef enum cpu_gemm_side { CPU_GEMM_A = 0, CPU_GEMM_B = 1 } cpu_gemm_side_t;

// An operand packed once (cpu_gemm_pack): panels for the kernel chosen at
// load time, K blocked as the engine runs it.
typedef struct cpu_gemm_packed {
  cpu_gemm_side_t side;  // A ([rows x k] in MR panels) or B ([k x cols])
  int64_t rows_or_cols;  // m for A, n for B
  int64_t k;             // inner dimension
  int64_t kc;            // K block the panels are cut in
  int64_t padded;        // A: m (its last panel as high as the rows
                         // left); B: n rounded up to the panel width
  float *data;           // padded * k floats, 64-byte aligned
} cpu_gemm_packed_t;

// Packs B[p0 .. p0+kc) x [j0 .. j0+nc) into NR-column panels at |dst|:
// panel q holds kc rows of NR floats (columns j0 + q*NR ..), zero past n.
// For A the same with rows for columns: rows j0 .. j0+nc of A (k = p0 ..)
// in panels of nr rows, each k's nr floats together (A's last panel comes
// in a call of its own, nr = the rows left).
// The widest panel (nr) a packing callback is given.
enum { CPU_GEMM_MAX_TILE = 64 };
typedef void (*cpu_gemm_pack_fn)(const void *ctx, int64_t p0, int64_t kc,
                                 int64_t j0, int64_t nc, int64_t n, int nr,
                                 float *dst);

// One operand: a strided matrix (element (r, c) at data[r * rs + c * cs]),
// or rows at offsets (B only: element (r, c) at data[roff[r] + c], read
// in place; an implicit convolution's shifted image), or a packed one, or
// a packing callback (cpu_gemm_pack_fn).
typedef struct cpu_gemm_operand {
  const float *data;                // strided source
  int64_t rs, cs;                   // its strides in elements
  const int64_t *roff;              // or each row's offset from data
  const cpu_gemm_packed_t *packed;  // packed once, or NULL
  cpu_gemm_pack_fn pack;            // packed by a callback, or NULL
  const void *pack_ctx;             // its argument
} cpu_gemm_operand_t;

// One product C[m x n] (row stride ldc) = A[m x k] · B[k x n].
// Written through a block (the engine computes each block of the product
// over all of K into the scratch, then writes it out, with the epilogue,
// whose row and column indices are C's; B, unless in place, is packed
// again for every M block):
// - with virtual columns (vrow > 0) product column j is C's column
//   j / vrow * vkeep + j % vrow when j % vrow < vkeep, and is dropped
//   otherwise (the shifted convolution's junk);
// - with |ct| C holds the product transposed: element (i, j) at
//   c[j * ldc + i] (a convolution computed as Y^T).
typedef struct cpu_gemm_problem {
  int64_t m, n, k;       // sizes
  cpu_gemm_operand_t a;  // left operand
  cpu_gemm_operand_t b;  // right operand
  float *c;              // output
  int64_t ldc;           // its row stride
  cpu_gemm_epi_t epi;    // applied to every element
  int64_t vrow, vkeep;   // virtual columns, or 0
  bool ct;               // C is the product transposed
} cpu_gemm_problem_t;

// Fills |out| with batch member |t| (same m, n, k and operand kinds as
// every other member).
typedef void (*cpu_gemm_batch_fn)(const void *ctx, size_t t,
                                  cpu_gemm_problem_t *out);

// Per-thread packing buffers lent by the caller for one run (the op's
// workspace): |floats| floats at |mem|, 64-byte aligned.
typedef struct cpu_gemm_scratch {
  float *mem;
  size_t floats;
} cpu_gemm_scratch_t;

// Bytes of scratch a run on |threads| threads needs at most (the second:
// of products written through a block); with less (or a NULL scratch) a
// run allocates its buffers and frees them after.
size_t cpu_gemm_workspace_bytes(int32_t threads);
size_t cpu_gemm_block_workspace_bytes(int32_t threads);
// cpu_gemm_workspace_bytes as a kernel's workspace function (for kernels
// whose runs are GEMM engine calls).
size_t cpu_gemm_kernel_workspace(const void *state, int32_t threads);
// The scratch of a kernel run: its workspace.
static inline cpu_gemm_scratch_t cpu_gemm_scratch_of(const cpu_run_t *run) {
  cpu_gemm_scratch_t s = {(float *)run->workspace,
                          run->workspace_bytes / sizeof(float)};
  return s;
}

// Packs operand |side| of a product with inner dimension |k| (m or n
// being |rows_or_cols|) from the strided |src| into *out (fields set; free
// with cpu_gemm_packed_deinit). NULL or an out-of-memory error.
wm_error *cpu_gemm_pack(cpu_gemm_side_t side, int64_t rows_or_cols, int64_t k,
                        const float *src, int64_t rs, int64_t cs,
                        cpu_gemm_packed_t *out);
// Allocates *out for operand |side| as cpu_gemm_pack does, its panels
// left to cpu_gemm_pack_fill (for an operand known only at run time but
// used by many products). NULL or an out-of-memory error.
wm_error *cpu_gemm_pack_alloc(cpu_gemm_side_t side, int64_t rows_or_cols,
                              int64_t k, cpu_gemm_packed_t *out);
// Packs the strided |src| into |p|'s panels; allocates nothing.
void cpu_gemm_pack_fill(cpu_gemm_packed_t *p, const float *src, int64_t rs,
                        int64_t cs);
// Frees the panels (accepts a zeroed one).
void cpu_gemm_packed_deinit(cpu_gemm_packed_t *p);

// Whether a product of |m| rows and inner dimension |k| whose epilogue is
// a bias per row (or none), a residual Z (beta 1, columns contiguous) and
// activation |act|, with neither virtual columns nor C transposed, may
// have C in Z's memory: K is one block and the micro-kernels apply the
// epilogue, so each tile of C is written once, by the kernel or through
// the edge tile, after its Z is read.
bool cpu_gemm_z_in_place(int64_t m, int64_t k, cpu_act_kind_t act);

// Computes one product on |pool|; NULL or an out-of-memory error.
wm_error *cpu_gemm_run(const cpu_gemm_problem_t *p, wm_pool_t *pool,
                       const cpu_gemm_scratch_t *scratch);
// Computes |count| products of the same shape described by |get|.
wm_error *cpu_gemm_run_batch(size_t count, cpu_gemm_batch_fn get,
                             const void *ctx, wm_pool_t *pool,
                             const cpu_gemm_scratch_t *scratch);

// Applies act to n floats in place (for kernels outside the engine).
void cpu_act_apply(const cpu_act_t *act, float *x, size_t n);

// Name of the micro-kernel in use ("avx512 12x32", ...), for messages.
const char *cpu_gemm_kernel_name(void);
// Columns of the micro-kernel's tile (NR): n is computed in multiples of
// it, m exactly.
int cpu_gemm_tile_cols(void);

#endif  // WMAP_BACKENDS_CPU_GEMM_H_
