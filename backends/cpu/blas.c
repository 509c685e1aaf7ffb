// MatMul (numpy batching), Gemm and Conv in float32 on the GEMM engine
// (gemm.h): constant weights are packed when the plan is made, bias,
// residual and activation run in the engine's epilogue, packing buffers
// live in the plan. 1x1 convolutions multiply the image itself, depthwise
// ones run a direct kernel, the rest are implicit GEMMs: the engine's B
// panels are packed straight from the image (no column buffer), by the
// same tasks that multiply them; 3x3 ones of stride 1 with constant
// weights, where it pays, run as Winograd products (winograd.h). The pool
// runs the GEMMs and the depthwise planes.
#include <float.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "depthwise.h"
#include "gather.h"
#include "gemm.h"
#include "kernels.h"  // K_CLONES_FMA
#include "winograd.h"

enum { F32 = 1 };  // ONNX dtype of float32

// True when |v| fits a BLAS int (dimensions and leading dims).
static bool fits_blas(int64_t v) {
  return v >= 0 && v <= INT_MAX;
}

// ---------------------------------------------------------------- MatMul

typedef struct matmul_state {
  int64_t m, k, n;              // per batch: [m,k] x [k,n]
  int32_t nb;                   // output batch dims
  int64_t bdims[CPU_MAX_RANK];  // output batch dims
  int64_t astr[CPU_MAX_RANK];   // A's element stride per batch dim (0 = bcast)
  int64_t bstr[CPU_MAX_RANK];   // B's element stride per batch dim (0 = bcast)
  size_t batches;               // product of bdims
  bool merged;                  // B unbatched: one GEMM of batches * m rows
  cpu_gemm_epi_t epi;           // the epilogue (plain for MatMul)
  bool has_bias;                // FusedMatMul's bias (input 2) given
  cpu_gemm_packed_t pb;         // B packed at plan time when constant
  // Per run, for the batch callback.
  const float *a, *b;  // operands
  float *y;            // output
} matmul_state_t;

// Derives the MatMul geometry of |op|; false with a reason otherwise.
static bool matmul_shapes(const wm_op_desc *op, matmul_state_t *st,
                          uint32_t *why, const char **detail) {
  memset(st, 0, sizeof(*st));
  if (op->n_in != 2 || op->n_out != 1 || !cpu_has_input(op, 0) ||
      !cpu_has_input(op, 1) || op->out[0].dtype == 0) {
    cpu_refuse(why, detail, WM_WHY_OTHER,
               "MatMul needs inputs A, B and output Y");
    return false;
  }
  const wm_tensor_desc *a = &op->in[0], *b = &op->in[1], *y = &op->out[0];
  if (a->dtype != F32 || b->dtype != F32 || y->dtype != F32) {
    cpu_refuse(why, detail, WM_WHY_DTYPE, "cpu MatMul takes float32 only");
    return false;
  }
  int32_t ra = (int32_t)a->rank, rb = (int32_t)b->rank;
  if (ra < 1 || rb < 1 || ra > CPU_MAX_RANK || rb > CPU_MAX_RANK) {
    cpu_refuse(why, detail, WM_WHY_RANK, "MatMul operands need rank 1 to 8");
    return false;
  }
  st->m = ra == 1 ? 1 : a->dims[ra - 2];
  st->k = a->dims[ra - 1];
  int64_t kb = rb == 1 ? b->dims[0] : b->dims[rb - 2];
  st->n = rb == 1 ? 1 : b->dims[rb - 1];
  if (kb != st->k) {
    cpu_refuse(why, detail, WM_WHY_SHAPE, "MatMul inner dims differ");
    return false;
  }
  int32_t na = ra > 2 ? ra - 2 : 0, nbb = rb > 2 ? rb - 2 : 0;
  st->nb = na > nbb ? na : nbb;
  int32_t want_rank = st->nb + (ra > 1) + (rb > 1);
  if ((int32_t)y->rank != want_rank) {
    cpu_refuse(why, detail, WM_WHY_SHAPE, "MatMul output rank does not match");
    return false;
  }
  int64_t sa = st->m * st->k, sb = st->k * st->n;
  st->batches = 1;
  for (int32_t i = st->nb - 1; i >= 0; i--) {
    int32_t ia = i - (st->nb - na), ib = i - (st->nb - nbb);
    int64_t da = ia >= 0 ? a->dims[ia] : 1;
    int64_t db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      cpu_refuse(why, detail, WM_WHY_SHAPE,
                 "MatMul batch dims do not broadcast");
      return false;
    }
    st->bdims[i] = da == 1 ? db : da;
    st->astr[i] = da == 1 ? 0 : sa;
    st->bstr[i] = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
    if (y->dims[i] != st->bdims[i]) {
      cpu_refuse(why, detail, WM_WHY_SHAPE, "MatMul output dims do not match");
      return false;
    }
    st->batches *= (size_t)st->bdims[i];
  }
  if ((ra > 1 && y->dims[st->nb] != st->m) ||
      (rb > 1 && y->dims[y->rank - 1] != st->n)) {
    cpu_refuse(why, detail, WM_WHY_SHAPE, "MatMul output dims do not match");
    return false;
  }
  st->merged = nbb == 0;
  int64_t rows = st->m;
  if (st->merged && !wm_checked_mul_i64(st->m, (int64_t)st->batches, &rows)) {
    rows = -1;
  }
  if (!fits_blas(st->k) || !fits_blas(st->n) || !fits_blas(st->m)) {
    cpu_refuse(why, detail, WM_WHY_SIZE_LIMIT,
               "MatMul dims exceed BLAS int range");
    return false;
  }
  if (st->merged && !fits_blas(rows)) {
    st->merged = false;
  }
  return true;
}

static uint32_t matmul_query(const wm_op_desc *op, uint32_t *why,
                             const char **detail) {
  matmul_state_t st;
  return matmul_shapes(op, &st, why, detail) ? WM_SUPPORT_SUPPORTED
                                             : WM_SUPPORT_NONE;
}

static void matmul_destroy(void *state) {
  matmul_state_t *st = state;
  if (st) {
    cpu_gemm_packed_deinit(&st->pb);
    free(st);
  }
}

// Plans a MatMul-shaped product of |op| named |what| with the epilogue
// |epi|: B (input 1) is packed once when it is a constant shared by every
// batch member.
static wm_error *matmul_plan_epi(const wm_op_desc *op, const char *what,
                                 const cpu_gemm_epi_t *epi, void **out_state) {
  *out_state = NULL;
  matmul_state_t *st = calloc(1, sizeof(*st));
  if (!st) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "node \"%s\" (%s): out of memory",
                     op->name ? op->name : "", what);
  }
  uint32_t why;
  const char *detail = NULL;
  if (!matmul_shapes(op, st, &why, &detail)) {
    free(st);
    return cpu_error(WM_ERR_INVALID_ARGUMENT, "node \"%s\" (%s): %s",
                     op->name ? op->name : "", what,
                     detail ? detail : "unsupported instance");
  }
  st->epi = *epi;
  const float *b = k_const_input(op, 1);
  if (b && st->merged && st->k > 0 && st->n > 0) {
    wm_error *e = cpu_gemm_pack(CPU_GEMM_B, st->n, st->k, b, st->n, 1, &st->pb);
    if (e) {
      matmul_destroy(st);
      return e;
    }
  }
  *out_state = st;
  return NULL;
}

// B (input 1) packed at plan time is never read again.
static uint64_t matmul_captured(const void *state) {
  return ((const matmul_state_t *)state)->pb.data ? 2u : 0u;
}

static wm_error *matmul_plan(const wm_op_desc *op, void **out_state) {
  cpu_gemm_epi_t epi = cpu_gemm_epi_plain();
  return matmul_plan_epi(op, "MatMul", &epi, out_state);
}

// Batch member |t| of a MatMul whose B is batched.
static void matmul_member(const void *ctx, size_t t, cpu_gemm_problem_t *out) {
  const matmul_state_t *st = ctx;
  int64_t ao = 0, bo = 0;
  size_t rest = t;
  for (int32_t i = st->nb - 1; i >= 0; i--) {
    int64_t idx = (int64_t)(rest % (size_t)st->bdims[i]);
    rest /= (size_t)st->bdims[i];
    ao += idx * st->astr[i];
    bo += idx * st->bstr[i];
  }
  memset(out, 0, sizeof(*out));
  out->m = st->m;
  out->n = st->n;
  out->k = st->k;
  out->a.data = st->a + ao;
  out->a.rs = st->k;
  out->a.cs = 1;
  out->b.data = st->b + bo;
  out->b.rs = st->n;
  out->b.cs = 1;
  out->c = st->y + t * (size_t)(st->m * st->n);
  out->ldc = st->n;
  out->epi = st->epi;
}

static wm_error *matmul_run(void *state, const cpu_run_t *run) {
  const cpu_gemm_scratch_t ws = cpu_gemm_scratch_of(run);
  matmul_state_t *st = state;
  float *y = run->out[0].data;
  if (!y || st->m == 0 || st->n == 0 || st->batches == 0) {
    return NULL;
  }
  st->a = run->in[0].data;
  st->b = run->in[1].data;
  st->y = y;
  st->epi.bias = st->has_bias ? run->in[2].data : NULL;
  if (st->merged) {
    // Batches of A are contiguous and share B: one taller GEMM.
    cpu_gemm_problem_t p;
    memset(&p, 0, sizeof(p));
    p.m = st->m * (int64_t)st->batches;
    p.n = st->n;
    p.k = st->k;
    p.a.data = st->a;
    p.a.rs = st->k;
    p.a.cs = 1;
    p.b.data = st->b;
    p.b.rs = st->n;
    p.b.cs = 1;
    p.b.packed = st->pb.data ? &st->pb : NULL;
    p.c = y;
    p.ldc = st->n;
    p.epi = st->epi;
    return cpu_gemm_run(&p, run->pool, &ws);
  }
  return cpu_gemm_run_batch(st->batches, matmul_member, st, run->pool, &ws);
}

// ------------------------------------------------------------------ Gemm

typedef struct gemm_state {
  bool ta, tb;           // transA, transB
  int64_t m, k, n;       // op(A) [m,k], op(B) [k,n]
  float alpha, beta;     // scale factors
  bool has_c;            // C given
  bool c_full;           // C is [m,n]: copied as is
  int64_t cs0, cs1;      // C's element strides over Y's rows and columns
  cpu_act_t act;         // activation after the sum (FusedGemm)
  cpu_gemm_packed_t pb;  // op(B) packed at plan time when constant
} gemm_state_t;

static bool gemm_shapes(const wm_op_desc *op, gemm_state_t *st, uint32_t *why,
                        const char **detail) {
  memset(st, 0, sizeof(*st));
  if (op->n_in < 2 || op->n_in > 3 || op->n_out != 1 || !cpu_has_input(op, 0) ||
      !cpu_has_input(op, 1) || op->out[0].dtype == 0) {
    cpu_refuse(why, detail, WM_WHY_OTHER,
               "Gemm needs inputs A, B and output Y");
    return false;
  }
  const wm_tensor_desc *a = &op->in[0], *b = &op->in[1], *y = &op->out[0];
  st->has_c = cpu_has_input(op, 2);
  const wm_tensor_desc *c = st->has_c ? &op->in[2] : NULL;
  if (a->dtype != F32 || b->dtype != F32 || y->dtype != F32 ||
      (c && c->dtype != F32)) {
    cpu_refuse(why, detail, WM_WHY_DTYPE, "cpu Gemm takes float32 only");
    return false;
  }
  if (a->rank != 2 || b->rank != 2 || y->rank != 2 || (c && c->rank > 2)) {
    cpu_refuse(why, detail, WM_WHY_RANK,
               "Gemm needs 2-D A, B, Y and C of rank <= 2");
    return false;
  }
  int64_t ta, tb;
  const wm_op_attr *alpha = cpu_param(op, "alpha"),
                   *beta = cpu_param(op, "beta");
  if (!cpu_param_int(op, "transA", &ta) || !cpu_param_int(op, "transB", &tb) ||
      !alpha || alpha->type != 1 || !beta || beta->type != 1) {
    cpu_refuse(why, detail, WM_WHY_SHAPE,
               "Gemm is resolved by the host for known shapes");
    return false;
  }
  st->ta = ta != 0;
  st->tb = tb != 0;
  st->alpha = alpha->f;
  st->beta = beta->f;
  st->m = a->dims[st->ta ? 1 : 0];
  st->k = a->dims[st->ta ? 0 : 1];
  int64_t kb = b->dims[st->tb ? 1 : 0];
  st->n = b->dims[st->tb ? 0 : 1];
  if (kb != st->k || y->dims[0] != st->m || y->dims[1] != st->n) {
    cpu_refuse(why, detail, WM_WHY_SHAPE, "Gemm shapes do not match");
    return false;
  }
  if (c) {
    int64_t want[2] = {st->m, st->n};
    int64_t cd[2] = {1, 1};
    for (uint32_t d = 0; d < c->rank; d++) {
      cd[2 - c->rank + d] = c->dims[d];
    }
    for (int d = 0; d < 2; d++) {
      if (cd[d] != 1 && cd[d] != want[d]) {
        cpu_refuse(why, detail, WM_WHY_SHAPE, "Gemm C does not broadcast to Y");
        return false;
      }
    }
    st->cs1 = cd[1] == 1 ? 0 : 1;
    st->cs0 = cd[0] == 1 ? 0 : cd[1];
    st->c_full = cd[0] == st->m && cd[1] == st->n;
  }
  if (!fits_blas(st->m) || !fits_blas(st->n) || !fits_blas(st->k)) {
    cpu_refuse(why, detail, WM_WHY_SIZE_LIMIT,
               "Gemm dims exceed BLAS int range");
    return false;
  }
  return true;
}

static uint32_t gemm_query(const wm_op_desc *op, uint32_t *why,
                           const char **detail) {
  gemm_state_t st;
  return gemm_shapes(op, &st, why, detail) ? WM_SUPPORT_SUPPORTED
                                           : WM_SUPPORT_NONE;
}

static void gemm_destroy(void *state) {
  gemm_state_t *st = state;
  if (st) {
    cpu_gemm_packed_deinit(&st->pb);
    free(st);
  }
}

// Plans a Gemm-shaped product of |op| named |what| followed by |act|;
// op(B) is packed once when B is constant.
static wm_error *gemm_plan_act(const wm_op_desc *op, const char *what,
                               const cpu_act_t *act, void **out_state) {
  *out_state = NULL;
  gemm_state_t *st = calloc(1, sizeof(*st));
  if (!st) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "node \"%s\" (%s): out of memory",
                     op->name ? op->name : "", what);
  }
  uint32_t why;
  const char *detail = NULL;
  if (!gemm_shapes(op, st, &why, &detail)) {
    free(st);
    return cpu_error(WM_ERR_INVALID_ARGUMENT, "node \"%s\" (%s): %s",
                     op->name ? op->name : "", what,
                     detail ? detail : "unsupported instance");
  }
  st->act = *act;
  const float *b = k_const_input(op, 1);
  if (b && st->k > 0 && st->n > 0) {
    wm_error *e = cpu_gemm_pack(CPU_GEMM_B, st->n, st->k, b, st->tb ? 1 : st->n,
                                st->tb ? st->k : 1, &st->pb);
    if (e) {
      gemm_destroy(st);
      return e;
    }
  }
  *out_state = st;
  return NULL;
}

// op(B) (input 1) packed at plan time is never read again.
static uint64_t gemm_captured(const void *state) {
  return ((const gemm_state_t *)state)->pb.data ? 2u : 0u;
}

static wm_error *gemm_plan(const wm_op_desc *op, void **out_state) {
  cpu_act_t none = {CPU_ACT_NONE, 0.0f, 0.0f};
  return gemm_plan_act(op, "Gemm", &none, out_state);
}

static wm_error *gemm_run(void *state, const cpu_run_t *run) {
  const cpu_gemm_scratch_t ws = cpu_gemm_scratch_of(run);
  gemm_state_t *st = state;
  float *y = run->out[0].data;
  if (!y || st->m == 0 || st->n == 0) {
    return NULL;
  }
  cpu_gemm_problem_t p;
  memset(&p, 0, sizeof(p));
  p.m = st->m;
  p.n = st->n;
  p.k = st->k;
  p.a.data = run->in[0].data;
  p.a.cs = st->ta ? st->m : 1;
  p.a.rs = st->ta ? 1 : st->k;
  p.b.data = run->in[1].data;
  p.b.rs = st->tb ? 1 : st->n;
  p.b.cs = st->tb ? st->k : 1;
  p.b.packed = st->pb.data ? &st->pb : NULL;
  p.c = y;
  p.ldc = st->n;
  p.epi = cpu_gemm_epi_plain();
  p.epi.alpha = st->alpha;
  p.epi.act = st->act;
  const float *c = st->has_c ? run->in[2].data : NULL;
  if (c && st->beta != 0.0f) {
    p.epi.z = c;
    p.epi.z_rs = st->cs0;
    p.epi.z_cs = st->cs1;
    p.epi.beta = st->beta;
  }
  return cpu_gemm_run(&p, run->pool, &ws);
}

// ------------------------------------------------------------------ Conv

enum { CONV_POINTWISE = 0, CONV_DEPTHWISE = 1, CONV_IMPLICIT = 2 };
// Kernel rows the direct depthwise kernel takes (taller ones are implicit
// GEMMs).
enum { DEPTHWISE_MAX_KH = 16 };
// The depthwise band kernel: floats of stack it may use per invocation
// (a band of padded input rows and its flat output), the size it aims the
// band at (to stay in L1), and the vector width of its loops.
enum { DW_STACK_FLOATS = 8192, DW_BAND_FLOATS = 4096, DW_VEC = 16 };
// The channel-blocked kernels (dw_blocks.inc): floats of stack for their
// padded input and output, and the taps they hold weight vectors for.
enum { DW8_STACK_FLOATS = 16384, DW8_MAX_TAPS = 64 };

// The argument of conv_pack_b for one GEMM of an implicit convolution.
typedef struct conv_pack {
  const struct conv_state *st;  // geometry
  const float *x;               // the image's first channel of the group
} conv_pack_t;

// Spatial geometry is kept 3-D: 1-D and 2-D convolutions get leading
// dims of size 1.
typedef struct conv_state {
  int32_t nsp;               // spatial dims of the node (1 to 3)
  int mode;                  // CONV_*
  int64_t n, c, m, group;    // batch, in channels, out channels, groups
  int64_t cg, mg;            // channels per group, in and out
  int64_t in[3], out[3];     // spatial sizes
  int64_t k[3], s[3], d[3];  // kernel, strides, dilations
  int64_t pb[3];             // begin pads (end pads follow from the sizes)
  int64_t insz, outsz;       // spatial products
  int64_t kprod;             // kernel taps
  bool has_bias;             // input B given
  conv_pack_t *packs;        // implicit GEMM: per image and group, the
                             // packing callback's argument
  int64_t *dw;               // depthwise: lo, hi, off per kernel column,
                             // then each tap's offset in a band buffer
  int64_t dw_lo, dw_hi;      // depthwise: columns where every tap is inside
  bool has_z;                // FusedConv's residual Z (input 3) given
  cpu_act_t act;             // activation after bias and Z (FusedConv)
  cpu_gemm_packed_t *pw;     // per group: W packed at plan time, or NULL
  int64_t dw_band;           // depthwise bands: output rows per band,
                             // 0 = rows too wide (depthwise_planes)
  int64_t dw_w2;             // floats per row of a band's phase plane
  int64_t dw_rows;           // rows per phase plane
  int64_t dw_buf;            // floats of the band buffer (then the flat
                             // output)
  bool dw_direct;            // depthwise 3x3 over wide rows, stride and
                             // dilation 1 along them: read in place
  int64_t dw8_wp, dw8_band;  // depthwise 8 channels at a time
                             // (depthwise_blocks8): the padded plane's
                             // columns, output rows per band (0 = not
                             // used)
  int64_t dw16_band;         // ... 16 at a time (depthwise_blocks16)
  bool tr;                   // GEMM of Y^T (positions x channels) into the
                             // workspace, then transposed out
                             // (conv_transposed)
  bool sh;                   // shifted form (conv_shifted_plan): B read
                             // in place at each tap's offset
  bool sh_copy;              // ... from a padded, phase-split copy of the
                             // image (else from the image itself)
  int64_t sh_wv;             // virtual output row width (>= out[2])
  int64_t sh_rows;           // rows of a phase plane
  int64_t sh_chan;           // floats of a channel in the copy
  int64_t sh_slot[16];       // slot of phase (r % s1) * s2 + c % s2, or -1
  int64_t *sh_off;           // per row of B (cg * kprod): its offset
  bool dw512;                // depthwise: the AVX-512 kernel takes it
  cpu_dw_plane_t dwg;        // ... with this geometry
  cpu_wino_t *wino;          // 3x3 as Winograd products, or NULL
} conv_state_t;

// Sets *out to v[0] * v[1] * v[2]; false on overflow.
static bool product3(const int64_t *v, int64_t *out) {
  return wm_checked_mul_i64(v[0], v[1], out) &&
         wm_checked_mul_i64(*out, v[2], out);
}

// Reads the Conv geometry of |op| from its shapes and the host's resolved
// parameters; false with a reason otherwise.
static bool conv_shapes(const wm_op_desc *op, conv_state_t *st, uint32_t *why,
                        const char **detail) {
  memset(st, 0, sizeof(*st));
  if (op->n_in < 2 || op->n_in > 3 || op->n_out != 1 || !cpu_has_input(op, 0) ||
      !cpu_has_input(op, 1) || op->out[0].dtype == 0) {
    cpu_refuse(why, detail, WM_WHY_OTHER,
               "Conv needs inputs X, W and output Y");
    return false;
  }
  const wm_tensor_desc *x = &op->in[0], *w = &op->in[1], *y = &op->out[0];
  st->has_bias = cpu_has_input(op, 2);
  const wm_tensor_desc *b = st->has_bias ? &op->in[2] : NULL;
  if (x->dtype != F32 || w->dtype != F32 || y->dtype != F32 ||
      (b && b->dtype != F32)) {
    cpu_refuse(why, detail, WM_WHY_DTYPE, "cpu Conv takes float32 only");
    return false;
  }
  if (x->rank < 3 || x->rank > 5 || w->rank != x->rank || y->rank != x->rank ||
      (b && b->rank != 1)) {
    cpu_refuse(why, detail, WM_WHY_RANK,
               "cpu Conv takes 1-D to 3-D convolutions");
    return false;
  }
  int32_t nsp = (int32_t)x->rank - 2;
  st->nsp = nsp;
  st->n = x->dims[0];
  st->c = x->dims[1];
  st->m = w->dims[0];
  cpu_window_t win;
  if (!cpu_window_params(op, nsp, &win, why, detail) ||
      !cpu_param_int(op, "group", &st->group)) {
    return false;
  }
  if (st->group < 1 || st->c % st->group != 0 || st->m % st->group != 0 ||
      w->dims[1] * st->group != st->c) {
    cpu_refuse(why, detail, WM_WHY_ATTR, "Conv group does not divide channels");
    return false;
  }
  st->cg = st->c / st->group;
  st->mg = st->m / st->group;
  if (b && b->dims[0] != st->m) {
    cpu_refuse(why, detail, WM_WHY_SHAPE, "Conv bias length is not M");
    return false;
  }
  int64_t pe[3] = {0, 0, 0};
  for (int32_t i = 0; i < 3; i++) {
    st->in[i] = st->out[i] = st->k[i] = st->s[i] = st->d[i] = 1;
  }
  for (int32_t i = 0; i < nsp; i++) {
    int32_t j = 3 - nsp + i;
    st->in[j] = x->dims[2 + i];
    st->k[j] = w->dims[2 + i];
    st->s[j] = win.strides[i];
    st->d[j] = win.dilations[i];
    st->pb[j] = win.pads[i];
    st->out[j] = y->dims[2 + i];
    pe[j] = win.pads[nsp + i];
    if (win.kernel[i] != st->k[j] || st->k[j] > INT32_MAX ||
        st->s[j] > INT32_MAX || st->d[j] > INT32_MAX || st->pb[j] < 0 ||
        pe[j] < 0 || st->pb[j] > INT32_MAX || pe[j] > INT32_MAX) {
      cpu_refuse(why, detail, WM_WHY_ATTR,
                 "Conv kernel, strides, dilations or pads are out of range");
      return false;
    }
  }
  if (y->dims[0] != st->n || y->dims[1] != st->m) {
    cpu_refuse(why, detail, WM_WHY_SHAPE, "Conv output dims do not match");
    return false;
  }
  int64_t kg, rows, cols;
  if (!product3(st->in, &st->insz) || !product3(st->out, &st->outsz) ||
      !product3(st->k, &st->kprod) ||
      !wm_checked_mul_i64(st->cg, st->kprod, &kg) || !fits_blas(kg) ||
      !fits_blas(st->outsz) || !fits_blas(st->mg) ||
      !wm_checked_mul_i64(st->c, st->kprod, &rows) ||
      !wm_checked_mul_i64(rows, st->outsz, &cols) ||
      cols > ((int64_t)1 << 30)) {
    cpu_refuse(why, detail, WM_WHY_SIZE_LIMIT, "Conv is too large");
    return false;
  }
  bool unit = true;
  for (int32_t j = 0; j < 3; j++) {
    unit =
        unit && st->k[j] == 1 && st->s[j] == 1 && st->pb[j] == 0 && pe[j] == 0;
  }
  if (unit) {
    st->mode = CONV_POINTWISE;
  } else if (st->group == st->c && st->m == st->c && nsp <= 2 &&
             st->k[1] <= DEPTHWISE_MAX_KH) {
    st->mode = CONV_DEPTHWISE;
  } else {
    st->mode = CONV_IMPLICIT;
  }
  return true;
}

static uint32_t conv_query(const wm_op_desc *op, uint32_t *why,
                           const char **detail) {
  conv_state_t st;
  return conv_shapes(op, &st, why, detail) ? WM_SUPPORT_SUPPORTED
                                           : WM_SUPPORT_NONE;
}

// The output positions [*lo, *hi) of a row of |o| whose input position
// o * s + off lies in [0, in).
static void valid_range(int64_t o, int64_t s, int64_t off, int64_t in,
                        int64_t *lo, int64_t *hi) {
  int64_t l = off < 0 ? (-off + s - 1) / s : 0;
  int64_t h = in - 1 - off >= 0 ? (in - 1 - off) / s + 1 : 0;
  if (h > o) {
    h = o;
  }
  if (l > h) {
    l = h;
  }
  *lo = l;
  *hi = h;
}

// Rounds |v| up to a multiple of DW_VEC.
static int64_t dw_round(int64_t v) {
  return (v + DW_VEC - 1) / DW_VEC * DW_VEC;
}

// Plans the depthwise band buffers of |st| (see depthwise_planes_bands):
// the band of output rows whose buffers fit DW_BAND_FLOATS (at least one
// row, within DW_STACK_FLOATS), and each tap's offset in the buffer;
// dw_band stays 0 when one row does not fit.
static void depthwise_bands(conv_state_t *st) {
  const int64_t sh = st->s[1], sw = st->s[2], dh = st->d[1], dw = st->d[2];
  const int64_t kh_n = st->k[1], kw_n = st->k[2], ow = st->out[2];
  st->dw_band = 0;
  if (sh > DW_STACK_FLOATS || sw > DW_STACK_FLOATS || dh > DW_STACK_FLOATS ||
      dw > DW_STACK_FLOATS || st->pb[2] > DW_STACK_FLOATS ||
      st->in[2] > DW_STACK_FLOATS) {
    return;
  }
  // Phase plane (ry, rx) holds padded input rows ry, ry + sh, ... of the
  // band and of each its columns rx, rx + sw, ...: tap (kh, kw) of output
  // (oh, j) is at row oh + kh*dh/sh, column j + kw*dw/sw of one plane.
  const int64_t w2_out = ow + (kw_n - 1) * dw / sw;
  const int64_t w2_in = (st->pb[2] + st->in[2] - 1) / sw + 1;
  const int64_t w2 = w2_out > w2_in ? w2_out : w2_in;
  const int64_t reach = (kh_n - 1) * dh / sh;
  int64_t best = 0, best_buf = 0;
  for (int64_t band = 1; band <= st->out[1]; band++) {
    int64_t rows = band + reach;
    int64_t buf = sh * sw * rows * w2 + w2 + 2 * DW_VEC;
    int64_t total = buf + dw_round(band * w2) + DW_VEC;
    if (total > (band == 1 ? DW_STACK_FLOATS : DW_BAND_FLOATS)) {
      break;
    }
    best = band;
    best_buf = buf;
  }
  if (best == 0) {
    return;
  }
  st->dw_band = best;
  st->dw_w2 = w2;
  st->dw_rows = best + reach;
  st->dw_buf = best_buf;
  int64_t *off = st->dw + 3 * kw_n;
  for (int64_t kh = 0; kh < kh_n; kh++) {
    for (int64_t kw = 0; kw < kw_n; kw++) {
      int64_t plane = (kh * dh % sh) * sw + kw * dw % sw;
      off[kh * kw_n + kw] =
          (plane * st->dw_rows + kh * dh / sh) * w2 + kw * dw / sw;
    }
  }
}

// Plans depthwise_blocks8 for |st| where it applies (channels a multiple
// of 8, rows not for the in-place kernel): the padded plane's columns and
// the output rows of a band, as many as keep its padded input rows and
// its output, 8 floats a position, within DW8_STACK_FLOATS.
static void depthwise_blocks8_plan(conv_state_t *st) {
  st->dw8_wp = st->dw8_band = st->dw16_band = 0;
  if (st->dw_direct || st->c % 8 != 0 || st->kprod > DW8_MAX_TAPS ||
      st->out[1] == 0 || st->out[2] == 0) {
    return;
  }
  const int64_t reach = (st->k[1] - 1) * st->d[1] + 1;
  int64_t wp = (st->out[2] - 1) * st->s[2] + (st->k[2] - 1) * st->d[2] + 1;
  if (wp > DW8_STACK_FLOATS || reach > DW8_STACK_FLOATS) {
    return;
  }
  // Output rows a band of |lanes| channels takes (0: none fits).
  int64_t band[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    const int64_t lanes = k ? 16 : 8;
    for (int64_t r = 1; r <= st->out[1]; r++) {
      int64_t rows = (r - 1) * st->s[1] + reach;
      if (lanes * (rows * wp + r * st->out[2]) > DW8_STACK_FLOATS) {
        break;
      }
      band[k] = r;
    }
  }
  if (band[0] > 0) {
    st->dw8_wp = wp;
    st->dw8_band = band[0];
    if (st->c % 16 == 0 && cpu_isa() == CPU_ISA_AVX512) {
      st->dw16_band = band[1];
    }
  }
}

// Whether the shifted form (conv_shifted_plan) can take |st|: an
// implicit convolution over one plane (depth 1 in, out and in the kernel,
// with no depth padding read) with strides up to 4.
static bool conv_shifts(const conv_state_t *st) {
  return st->mode == CONV_IMPLICIT && st->in[0] == 1 && st->k[0] == 1 &&
         st->out[0] == 1 && st->pb[0] == 0 && st->s[1] <= 4 && st->s[2] <= 4 &&
         st->out[2] >= 1;
}

// The shifted form's virtual row width Wv (conv_shifted_plan) where it
// takes |st| untransposed (its junk columns cost multiply-adds: at most a
// quarter more), else 0.
static int64_t conv_sh_plain_width(const conv_state_t *st) {
  if (!conv_shifts(st)) {
    return 0;
  }
  const int64_t wv = st->out[2] + (st->k[2] - 1) * st->d[2] / st->s[2];
  return 4 * wv <= 5 * st->out[2] ? wv : 0;
}

// Whether the GEMMs of |st| compute Y^T = im2col(X)^T · W^T (output
// positions as rows, channels as columns) rather than Y = W · im2col(X):
// the engine computes its product's rows exactly but its columns in
// multiples of its tile width, so positions go on the rows when they
// would waste more of the tile than the channels do (a 7x7 output takes
// 64 columns for 49, 14x14 224 for 196; the shifted form's 28x28 takes
// 864 for 784, its junk columns counted: 3x3 128->128 at 28x28 3 %
// faster transposed in resnet50).
static bool conv_transposed(const conv_state_t *st) {
  if (st->mode == CONV_DEPTHWISE || st->outsz == 0 || st->mg == 0) {
    return false;
  }
  const int64_t nr = cpu_gemm_tile_cols();
  // The shifted form's positions, junk columns included.
  const int64_t wv = conv_sh_plain_width(st);
  const int64_t cols = wv ? (st->out[1] - 1) * wv + st->out[2] : st->outsz;
  double plain = (double)((cols + nr - 1) / nr * nr) / (double)st->outsz;
  double tr = (double)((st->mg + nr - 1) / nr * nr) / (double)st->mg;
  return plain > 1.05 * tr;
}

// Bytes of the workspace that hold the shifted form's copy of the image
// (at its start).
static size_t conv_sh_bytes(const conv_state_t *st) {
  if (!st->sh || !st->sh_copy) {
    return 0;
  }
  size_t members = (size_t)(st->n * st->group);
  size_t slack = st->tr ? GATHER_SLACK : 0;
  return ((members * (size_t)(st->cg * st->sh_chan) + slack) * sizeof(float) +
          63) /
         64 * 64;
}

static size_t conv_workspace(const void *state, int32_t threads) {
  const conv_state_t *st = state;
  if (st->wino) {
    return cpu_wino_workspace(st->wino, threads);
  }
  return conv_sh_bytes(st) + (st->tr || (st->sh && st->sh_wv != st->out[2])
                                  ? cpu_gemm_block_workspace_bytes(threads)
                                  : cpu_gemm_workspace_bytes(threads));
}

static void conv_destroy(void *state) {
  conv_state_t *st = state;
  if (st) {
    free(st->packs);
    free(st->dw);
    free(st->sh_off);
    if (st->wino) {
      cpu_wino_deinit(st->wino);
      free(st->wino);
    }
    if (st->pw) {
      for (int64_t g = 0; g < st->group; g++) {
        cpu_gemm_packed_deinit(&st->pw[g]);
      }
      free(st->pw);
    }
    free(st);
  }
}

// Plans the shifted form of an implicit 2-D (or 1-D) convolution where
// it applies (sets st->sh; false when out of memory). In Y = W · B, B's
// row for tap (c, kh, kw) along the output positions, laid out in rows
// of a virtual width Wv >= Wo (position oh * Wv + ow), is one contiguous
// piece of a padded copy of the image split into stride phases (padded
// row r is row r / s1 of phase r % s1, and so for columns), at an offset
// fixed per tap. So the engine reads B in place, with no packing: the
// copy is one pass over the image, and each output row has Wv - Wo junk
// columns that the engine drops as it writes Y (virtual columns). With no
// padding and unit strides the image itself is the copy, and Wv its width.
// In the transposed form the same copy makes packing A (conv_pack_sh) a
// gather at each tap's offset, the same for every tap, with no junk
// positions and nothing to decide about the padding.
static bool conv_shifted_plan(conv_state_t *st) {
  st->sh = false;
  // Transposed, there are no junk columns.
  if (!conv_shifts(st) || (!st->tr && !conv_sh_plain_width(st))) {
    return true;
  }
  const int64_t s1 = st->s[1], s2 = st->s[2], d1 = st->d[1], d2 = st->d[2];
  const int64_t k1 = st->k[1], k2 = st->k[2];
  const int64_t wv = st->out[2] + (k2 - 1) * d2 / s2;
  const int64_t rows = st->out[1] + (k1 - 1) * d1 / s1;
  for (int i = 0; i < 16; i++) {
    st->sh_slot[i] = -1;
  }
  int64_t nph = 0;
  for (int64_t kh = 0; kh < k1; kh++) {
    for (int64_t kw = 0; kw < k2; kw++) {
      int64_t ph = (kh * d1 % s1) * s2 + kw * d2 % s2;
      if (st->sh_slot[ph] < 0) {
        st->sh_slot[ph] = nph++;
      }
    }
  }
  // The transposed form's gathers read past the last position.
  st->sh_copy =
      st->tr || !(s1 == 1 && s2 == 1 && st->pb[1] == 0 && st->pb[2] == 0 &&
                  wv == st->in[2] && rows == st->in[1]);
  int64_t plane, chan, total;
  if (!wm_checked_mul_i64(rows, wv, &plane) ||
      !wm_checked_mul_i64(plane, nph, &chan) ||
      !wm_checked_mul_i64(chan, st->c, &total) || total > ((int64_t)1 << 30)) {
    return true;
  }
  if (!st->sh_copy) {
    chan = st->insz;
  }
  st->sh_off = malloc((size_t)(st->cg * st->kprod) * sizeof(int64_t));
  if (!st->sh_off) {
    return false;
  }
  int64_t *o = st->sh_off;
  for (int64_t c = 0; c < st->cg; c++) {
    for (int64_t kh = 0; kh < k1; kh++) {
      for (int64_t kw = 0; kw < k2; kw++) {
        int64_t r = kh * d1, q = kw * d2;
        *o++ = c * chan + st->sh_slot[r % s1 * s2 + q % s2] * plane +
               r / s1 * wv + q / s2;
      }
    }
  }
  st->sh = true;
  st->sh_wv = wv;
  st->sh_rows = rows;
  st->sh_chan = chan;
  return true;
}

// Plans st->wino for a 2-D 3x3 convolution of stride and dilation 1 with
// constant weights where the Winograd form takes it (else leaves it NULL):
// NULL or an out-of-memory error.
static wm_error *conv_wino_plan(const wm_op_desc *op, conv_state_t *st) {
  const float *w = k_const_input(op, 1);
  if (!w || st->mode != CONV_IMPLICIT || st->group != 1 || st->in[0] != 1 ||
      st->k[0] != 1 || st->out[0] != 1 || st->pb[0] != 0 || st->k[1] != 3 ||
      st->k[2] != 3 || st->s[1] != 1 || st->s[2] != 1 || st->d[1] != 1 ||
      st->d[2] != 1) {
    return NULL;
  }
  cpu_wino_t g = {.n = st->n,
                  .c = st->c,
                  .m = st->m,
                  .ih = st->in[1],
                  .iw = st->in[2],
                  .oh = st->out[1],
                  .ow = st->out[2],
                  .pt = st->pb[1],
                  .pl = st->pb[2]};
  if (!cpu_wino_takes(&g)) {
    return NULL;
  }
  if (!(st->wino = malloc(sizeof(*st->wino)))) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "node \"%s\" (Conv): out of memory",
                     op->name ? op->name : "");
  }
  *st->wino = g;
  return cpu_wino_plan(st->wino, w);
}

// Plans a convolution of |op| named |what| followed by |act|; |has_z|
// when input 3 is a residual added after the bias.
static wm_error *conv_plan_act(const wm_op_desc *op, const char *what,
                               const cpu_act_t *act, bool has_z,
                               void **out_state) {
  *out_state = NULL;
  conv_state_t *st = calloc(1, sizeof(*st));
  if (!st) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "node \"%s\" (%s): out of memory",
                     op->name ? op->name : "", what);
  }
  uint32_t why;
  const char *detail = NULL;
  if (!conv_shapes(op, st, &why, &detail)) {
    free(st);
    return cpu_error(WM_ERR_INVALID_ARGUMENT, "node \"%s\" (%s): %s",
                     op->name ? op->name : "", what,
                     detail ? detail : "unsupported instance");
  }
  st->act = *act;
  st->has_z = has_z;
  wm_error *we = conv_wino_plan(op, st);
  if (we || st->wino) {
    if (we) {
      conv_destroy(st);
      return we;
    }
    *out_state = st;
    return NULL;
  }
  st->tr = conv_transposed(st);
  if (!conv_shifted_plan(st)) {
    conv_destroy(st);
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "node \"%s\" (%s): out of memory",
                     op->name ? op->name : "", what);
  }
  const float *w = k_const_input(op, 1);
  int64_t kg = st->cg * st->kprod;
  if (w && st->mode != CONV_DEPTHWISE && kg > 0 && st->mg > 0) {
    st->pw = calloc((size_t)st->group, sizeof(*st->pw));
    if (!st->pw) {
      conv_destroy(st);
      return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                       "node \"%s\" (%s): out of memory",
                       op->name ? op->name : "", what);
    }
    for (int64_t g = 0; g < st->group; g++) {
      // W (transposed: W^T, the right operand).
      const float *wg = w + (size_t)(g * st->mg * kg);
      wm_error *e =
          st->tr ? cpu_gemm_pack(CPU_GEMM_B, st->mg, kg, wg, 1, kg, &st->pw[g])
                 : cpu_gemm_pack(CPU_GEMM_A, st->mg, kg, wg, kg, 1, &st->pw[g]);
      if (e) {
        conv_destroy(st);
        return e;
      }
    }
  }
  if (st->mode == CONV_IMPLICIT) {
    size_t count = 0;
    if (!wm_checked_mul((size_t)st->n, (size_t)st->group, &count) ||
        !(st->packs = calloc(count ? count : 1, sizeof(*st->packs)))) {
      conv_destroy(st);
      return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                       "node \"%s\" (%s): out of memory",
                       op->name ? op->name : "", what);
    }
  }
  if (st->mode == CONV_DEPTHWISE) {
    int64_t kw_n = st->k[2];
    st->dw = malloc((3 * (size_t)kw_n + (size_t)st->kprod) * sizeof(int64_t));
    if (!st->dw) {
      conv_destroy(st);
      return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                       "node \"%s\" (Conv): out of memory",
                       op->name ? op->name : "");
    }
    for (int64_t kw = 0; kw < kw_n; kw++) {
      int64_t off = kw * st->d[2] - st->pb[2];
      valid_range(st->out[2], st->s[2], off, st->in[2], &st->dw[kw],
                  &st->dw[kw_n + kw]);
      st->dw[2 * kw_n + kw] = off;
    }
    st->dw_lo = 0;
    st->dw_hi = st->out[2];
    for (int64_t kw = 0; kw < kw_n; kw++) {
      st->dw_lo = st->dw[kw] > st->dw_lo ? st->dw[kw] : st->dw_lo;
      st->dw_hi = st->dw[kw_n + kw] < st->dw_hi ? st->dw[kw_n + kw] : st->dw_hi;
    }
    if (st->dw_hi < st->dw_lo) {
      st->dw_hi = st->dw_lo;
    }
    depthwise_bands(st);
    // The AVX-512 kernel: square kernels, equal strides, no dilation.
    st->dwg = (cpu_dw_plane_t){st->in[1],  st->in[2], st->out[1],
                               st->out[2], st->pb[1], st->pb[2],
                               st->k[1],   st->s[1],  st->act};
    st->dw512 = st->in[0] == 1 && st->k[1] == st->k[2] &&
                st->s[1] == st->s[2] && st->d[1] == 1 && st->d[2] == 1 &&
                cpu_dw512_takes(&st->dwg);
    // Wide rows read in place leave few border columns to do one by one.
    st->dw_direct = st->k[1] == 3 && st->k[2] == 3 && st->s[2] == 1 &&
                    st->d[2] == 1 && st->pb[2] <= 1 && st->in[2] >= 48 &&
                    st->in[2] <= DW_STACK_FLOATS && st->out[2] >= 48;
    depthwise_blocks8_plan(st);
  }
  *out_state = st;
  return NULL;
}

typedef struct conv_job {
  const conv_state_t *st;  // geometry
  const float *x;          // whole input
  const float *w;          // weights
  const float *bias;       // bias or NULL
  float *y;                // whole output
  const float *z;          // residual (FusedConv) or NULL
  float *xs;               // shifted form: the image's copy per member
  int64_t bands;           // depthwise: bands of output rows per plane
} conv_job_t;

// y[i] += sum over K taps of w[t] * x[i * s + off[t]] for i in [lo, hi),
// where every tap is inside the input row. K is a constant at each call
// so that the tap loop unrolls and the i loop vectorizes.
static inline __attribute__((always_inline)) void depthwise_taps(
    float *restrict y, const float *restrict x, const float *restrict w,
    int64_t lo, int64_t hi, int64_t s, const int64_t *off, const int K) {
  if (s == 1) {
    for (int64_t i = lo; i < hi; i++) {
      float acc = y[i];
      for (int t = 0; t < K; t++) {
        acc += w[t] * x[i + off[t]];
      }
      y[i] = acc;
    }
  } else {
    for (int64_t i = lo; i < hi; i++) {
      float acc = y[i];
      for (int t = 0; t < K; t++) {
        acc += w[t] * x[i * s + off[t]];
      }
      y[i] = acc;
    }
  }
}

// One output row of a depthwise plane: y[ow] += w[kh][kw] * x at input
// row rows[kh] (NULL in the padding) and column ow * s + off[kw], for ow
// in [lo[kw], hi[kw]). Where all columns of a kernel row are inside the
// input ([ilo, ihi)), the taps of that row are summed in registers.
K_CLONES_FMA static void depthwise_row(float *restrict y,
                                       const float *const *rows,
                                       const float *restrict w, int64_t kh_n,
                                       int64_t kw_n, const int64_t *lo,
                                       const int64_t *hi, const int64_t *off,
                                       int64_t s, int64_t ilo, int64_t ihi) {
  for (int64_t kh = 0; kh < kh_n; kh++) {
    if (!rows[kh]) {
      continue;
    }
    const float *x = rows[kh];
    const float *wr = w + kh * kw_n;
    bool fused = true;
    if (kw_n == 3) {
      depthwise_taps(y, x, wr, ilo, ihi, s, off, 3);
    } else if (kw_n == 5) {
      depthwise_taps(y, x, wr, ilo, ihi, s, off, 5);
    } else if (kw_n == 7) {
      depthwise_taps(y, x, wr, ilo, ihi, s, off, 7);
    } else {
      fused = false;
    }
    for (int64_t kw = 0; kw < kw_n; kw++) {
      const float wv = wr[kw];
      const int64_t o = off[kw];
      // What the fused loop did not cover: [lo, ilo) and [ihi, hi).
      int64_t a1 = !fused ? hi[kw] : ilo < hi[kw] ? ilo : hi[kw];
      int64_t b0 = !fused ? hi[kw] : ihi > a1 ? ihi : a1;
      for (int64_t i = lo[kw]; i < a1; i++) {
        y[i] += wv * x[i * s + o];
      }
      for (int64_t i = b0; i < hi[kw]; i++) {
        y[i] += wv * x[i * s + o];
      }
    }
  }
}

// dst[i] = src[i] for i in [0, n): short rows are common, and a call
// costs more than their copy, so up to 64 floats it is a few fixed-size
// moves (written without a loop, which gcc would make a call again).
static inline __attribute__((always_inline)) void dw_copy(
    float *restrict dst, const float *restrict src, int64_t n) {
  if (n >= 64) {  // the moves below take 63 at most
    memcpy(dst, src, (size_t)n * sizeof(float));
    return;
  }
  if (n >= 32) {
    memcpy(dst, src, 32 * sizeof(float));
    n -= 32, dst += 32, src += 32;
  }
  if (n >= 16) {
    memcpy(dst, src, 16 * sizeof(float));
    n -= 16, dst += 16, src += 16;
  }
  if (n >= 8) {
    memcpy(dst, src, 8 * sizeof(float));
    n -= 8, dst += 8, src += 8;
  }
  if (n >= 4) {
    memcpy(dst, src, 4 * sizeof(float));
    n -= 4, dst += 4, src += 4;
  }
  if (n >= 2) {
    memcpy(dst, src, 2 * sizeof(float));
    n -= 2, dst += 2, src += 2;
  }
  if (n >= 1) {
    dst[0] = src[0];
  }
}

// dst[i] = 0 for i in [0, n), as dw_copy.
static inline __attribute__((always_inline)) void dw_zero(float *restrict dst,
                                                          int64_t n) {
  if (n >= 64) {  // the stores below take 63 at most
    memset(dst, 0, (size_t)n * sizeof(float));
    return;
  }
  if (n >= 32) {
    memset(dst, 0, 32 * sizeof(float));
    n -= 32, dst += 32;
  }
  if (n >= 16) {
    memset(dst, 0, 16 * sizeof(float));
    n -= 16, dst += 16;
  }
  if (n >= 8) {
    memset(dst, 0, 8 * sizeof(float));
    n -= 8, dst += 8;
  }
  if (n >= 4) {
    memset(dst, 0, 4 * sizeof(float));
    n -= 4, dst += 4;
  }
  if (n >= 2) {
    memset(dst, 0, 2 * sizeof(float));
    n -= 2, dst += 2;
  }
  if (n >= 1) {
    dst[0] = 0.0f;
  }
}

// a[k] = src[2k], b[k] = src[2k + 1] for k in [0, N), N a constant.
static inline __attribute__((always_inline)) void dw_split2(
    float *restrict a, float *restrict b, const float *restrict src,
    const int N) {
  for (int k = 0; k < N; k++) {
    a[k] = src[2 * k];
    b[k] = src[2 * k + 1];
  }
}

// Copies input row |x| (|iw| floats) into one row of a band buffer as the
// padded row (|pl| zeros on the left) has it, split by column phase:
// padded column q lands at dst[(q % s) * pstride + q / s]. The padding
// columns are not written (they hold zeros).
static inline __attribute__((always_inline)) void dw_fill(
    float *restrict dst, int64_t pstride, const float *restrict x, int64_t iw,
    int64_t pl, int64_t s) {
  if (s == 1) {
    dw_copy(dst + pl, x, iw);
    return;
  }
  if (s == 2) {
    float *restrict a = dst + (pl % 2) * pstride + pl / 2;
    float *restrict b = dst + ((pl + 1) % 2) * pstride + (pl + 1) / 2;
    const float *restrict src = x;
    int64_t n = iw;
    for (; n >= 32; n -= 32, a += 16, b += 16, src += 32) {
      dw_split2(a, b, src, 16);
    }
    if (n >= 16) {
      dw_split2(a, b, src, 8);
      n -= 16, a += 8, b += 8, src += 16;
    }
    if (n >= 8) {
      dw_split2(a, b, src, 4);
      n -= 8, a += 4, b += 4, src += 8;
    }
    for (int64_t k = 0; 2 * k < n; k++) {
      a[k] = src[2 * k];
      if (2 * k + 1 < n) {
        b[k] = src[2 * k + 1];
      }
    }
    return;
  }
  for (int64_t t = 0; t < s && t < iw; t++) {
    float *restrict a = dst + ((pl + t) % s) * pstride + (pl + t) / s;
    for (int64_t k = 0; t + s * k < iw; k++) {
      a[k] = x[t + s * k];
    }
  }
}

// out[i] = b + sum over the nine taps t of w[t] * x[o[t] + i], for i in
// [0, n), n a multiple of DW_VEC.
static inline __attribute__((always_inline)) void dw_sum9(
    float *restrict out, const float *restrict x, const int64_t *o,
    const float *restrict w, float b, int64_t n) {
  const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4];
  const float w5 = w[5], w6 = w[6], w7 = w[7], w8 = w[8];
  const float *restrict p0 = x + o[0], *restrict p1 = x + o[1];
  const float *restrict p2 = x + o[2], *restrict p3 = x + o[3];
  const float *restrict p4 = x + o[4], *restrict p5 = x + o[5];
  const float *restrict p6 = x + o[6], *restrict p7 = x + o[7];
  const float *restrict p8 = x + o[8];
  for (int64_t i0 = 0; i0 < n; i0 += DW_VEC) {
    for (int64_t i = i0; i < i0 + DW_VEC; i++) {
      out[i] = b + w0 * p0[i] + w1 * p1[i] + w2 * p2[i] + w3 * p3[i] +
               w4 * p4[i] + w5 * p5[i] + w6 * p6[i] + w7 * p7[i] + w8 * p8[i];
    }
  }
}

// out[i] += sum over K taps t of w[t] * x[o[t] + i], for i in [0, n), n
// a multiple of DW_VEC. K is a constant at each call so that the taps
// unroll (at most 8).
static inline __attribute__((always_inline)) void dw_taps(
    float *restrict out, const float *restrict x, const int64_t *o,
    const float *restrict w, int64_t n, const int K) {
  float wv[8];
  const float *restrict q[8];
  for (int t = 0; t < K; t++) {
    wv[t] = w[t];
    q[t] = x + o[t];
  }
  for (int64_t i0 = 0; i0 < n; i0 += DW_VEC) {
    for (int64_t i = i0; i < i0 + DW_VEC; i++) {
      float acc = out[i];
      for (int t = 0; t < K; t++) {
        acc += wv[t] * q[t][i];
      }
      out[i] = acc;
    }
  }
}

// out[i] = b + sum over |taps| taps t of w[t] * x[o[t] + i], for i in
// [0, n), n a multiple of DW_VEC.
static inline __attribute__((always_inline)) void dw_sum(
    float *restrict out, const float *restrict x, const int64_t *o,
    const float *restrict w, float b, int64_t taps, int64_t n) {
  if (taps == 9) {
    dw_sum9(out, x, o, w, b, n);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    out[i] = b;
  }
  for (int64_t t = 0; t < taps; t += 8) {
    switch (taps - t < 8 ? taps - t : 8) {
      case 1:
        dw_taps(out, x, o + t, w + t, n, 1);
        break;
      case 2:
        dw_taps(out, x, o + t, w + t, n, 2);
        break;
      case 3:
        dw_taps(out, x, o + t, w + t, n, 3);
        break;
      case 4:
        dw_taps(out, x, o + t, w + t, n, 4);
        break;
      case 5:
        dw_taps(out, x, o + t, w + t, n, 5);
        break;
      case 6:
        dw_taps(out, x, o + t, w + t, n, 6);
        break;
      case 7:
        dw_taps(out, x, o + t, w + t, n, 7);
        break;
      default:
        dw_taps(out, x, o + t, w + t, n, 8);
        break;
    }
  }
}

// Copies the input rows that output rows [oh0, oh0 + bn) of plane |x|
// read into the band buffer |buf|.
static inline __attribute__((always_inline)) void dw_band_fill(
    const conv_state_t *st, const float *x, int64_t oh0, int64_t bn,
    float *restrict buf) {
  const int64_t sh = st->s[1], sw = st->s[2], w2 = st->dw_w2;
  const int64_t pstride = st->dw_rows * w2;
  const int64_t ih_n = st->in[1], iw = st->in[2], pl = st->pb[2];
  const int64_t rows = (bn - 1) * sh + (st->k[1] - 1) * st->d[1] + 1;
  int64_t ih = oh0 * sh - st->pb[1];
  for (int64_t r = 0, ry = 0, rr = 0; r < rows; r++, ih++) {
    float *d = buf + ry * sw * pstride + rr * w2;
    if (ih >= 0 && ih < ih_n) {
      dw_fill(d, pstride, x + ih * iw, iw, pl, sw);
    } else {
      for (int64_t rx = 0; rx < sw; rx++) {
        dw_zero(d + rx * pstride, w2);
      }
    }
    if (++ry == sh) {
      ry = 0;
      rr++;
    }
  }
}

// Depthwise planes [begin, end) (plane = image * C + channel) in bands
// of output rows: the input rows a band reads are copied, zero-padded and
// split into stride phases, into a buffer on the stack, where every tap
// is a constant offset from the output's flat position (band row * w2 +
// column); the band is then one vectorised loop over those positions
// (the columns past ow are computed and dropped), and its rows are copied
// out, with Z and the activation. Built for AVX-512, AVX2 and baseline
// x86-64 (K_CLONES_FMA).
K_CLONES_FMA static void depthwise_planes_bands(void *ctx, size_t begin,
                                                size_t end) {
  const conv_job_t *job = ctx;
  const conv_state_t *st = job->st;
  const int64_t band = st->dw_band, oh_n = st->out[1], ow = st->out[2];
  const int64_t w2 = st->dw_w2, taps = st->kprod, outsz = st->outsz;
  const int64_t *off = st->dw + 3 * st->k[2];
  // Rows may be copied out in blocks of 8 floats, the last one running
  // into the next row (written later), while that stays inside the plane.
  const int64_t ow8 = (ow + 7) / 8 * 8;
  _Alignas(64) float buf[DW_STACK_FLOATS];  // band buffer, flat output
  float *const tmp = buf + st->dw_buf;
  memset(buf, 0, (size_t)st->dw_buf * sizeof(float));
  for (size_t p = begin; p < end; p++) {
    const int64_t c = (int64_t)p % st->c;
    const float *x = job->x + p * (size_t)st->insz;
    const float *w = job->w + (size_t)(c * taps);
    const float b = job->bias ? job->bias[c] : 0.0f;
    float *y = job->y + p * (size_t)outsz;
    for (int64_t oh0 = 0; oh0 < oh_n; oh0 += band) {
      const int64_t bn = oh_n - oh0 < band ? oh_n - oh0 : band;
      dw_band_fill(st, x, oh0, bn, buf);
      dw_sum(tmp, buf, off, w, b, taps, dw_round(bn * w2));
      float *yb = y + oh0 * ow;
      for (int64_t i = 0; i < bn; i++) {
        dw_copy(yb + i * ow, tmp + i * w2,
                (oh0 + i) * ow + ow8 <= outsz ? ow8 : ow);
      }
      const int64_t n = bn * ow;
      if (job->z) {
        const float *z = job->z + p * (size_t)outsz + oh0 * ow;
        for (int64_t i = 0; i < n; i++) {
          yb[i] += z[i];
        }
      }
      if (st->act.kind != CPU_ACT_NONE) {
        cpu_act_apply(&st->act, yb, (size_t)n);
      }
    }
  }
}

// The in-place 3x3 kernel's vector: 8 floats, one AVX2 register (an
// AVX-512 clone runs it at half width; 16 floats on AVX2 would be pairs
// of registers, and its two rows of nine taps spill).
enum { DW_DIRECT_VEC = 8 };
typedef float dw_v __attribute__((vector_size(DW_DIRECT_VEC * sizeof(float))));

static inline __attribute__((always_inline)) void dw_ld(dw_v *v,
                                                        const float *p) {
  memcpy(v, p, sizeof(*v));
}

// Output columns [j, j + DW_DIRECT_VEC) of two rows of a 3x3 plane read in
// place: o0 from input rows a0, a1, a2 and o1 from b0, b1, b2, column j + kw of
// each (the pointers already moved back by the left pad). With |share|
// (stride 1 down the plane) b0, b1 are a1, a2 and are loaded once. The
// sums run in three short chains.
static inline __attribute__((always_inline)) void dw_pair9(
    float *restrict o0, float *restrict o1, const float *a0, const float *a1,
    const float *a2, const float *b0, const float *b1, const float *b2,
    const dw_v *v, dw_v vb, int64_t j, const bool share) {
  dw_v p00, p01, p02, p10, p11, p12, p20, p21, p22;
  dw_v q00, q01, q02, q10, q11, q12, q20, q21, q22;
  dw_ld(&p00, a0 + j), dw_ld(&p01, a0 + j + 1), dw_ld(&p02, a0 + j + 2);
  dw_ld(&p10, a1 + j), dw_ld(&p11, a1 + j + 1), dw_ld(&p12, a1 + j + 2);
  dw_ld(&p20, a2 + j), dw_ld(&p21, a2 + j + 1), dw_ld(&p22, a2 + j + 2);
  if (share) {
    q00 = p10, q01 = p11, q02 = p12, q10 = p20, q11 = p21, q12 = p22;
  } else {
    dw_ld(&q00, b0 + j), dw_ld(&q01, b0 + j + 1), dw_ld(&q02, b0 + j + 2);
    dw_ld(&q10, b1 + j), dw_ld(&q11, b1 + j + 1), dw_ld(&q12, b1 + j + 2);
  }
  dw_ld(&q20, b2 + j), dw_ld(&q21, b2 + j + 1), dw_ld(&q22, b2 + j + 2);
  dw_v s0 = (vb + v[0] * p00 + v[1] * p01 + v[2] * p02) +
            (v[3] * p10 + v[4] * p11 + v[5] * p12) +
            (v[6] * p20 + v[7] * p21 + v[8] * p22);
  dw_v s1 = (vb + v[0] * q00 + v[1] * q01 + v[2] * q02) +
            (v[3] * q10 + v[4] * q11 + v[5] * q12) +
            (v[6] * q20 + v[7] * q21 + v[8] * q22);
  memcpy(o0 + j, &s0, sizeof(s0));
  memcpy(o1 + j, &s1, sizeof(s1));
}

// Output column j of a 3x3 row from input rows r0, r1, r2 (row pointers
// at input column 0; |zero| rows are skipped) with the taps outside
// [0, iw) left out.
static inline __attribute__((always_inline)) float dw_border9(
    const float *r0, const float *r1, const float *r2, const float *w, float b,
    int64_t j, int64_t pl, int64_t iw) {
  float acc = b;
  for (int64_t kw = 0; kw < 3; kw++) {
    int64_t x = j - pl + kw;
    if (x >= 0 && x < iw) {
      acc += w[kw] * r0[x] + w[3 + kw] * r1[x] + w[6 + kw] * r2[x];
    }
  }
  return acc;
}

// Two output rows (o1 may equal o0 for a last single row) of a 3x3 plane
// read in place from rows a* and b* (a zero row in the padding): the
// columns whose taps are all inside the row in whole vectors (the last
// one overlapping the one before), the rest one by one.
static inline __attribute__((always_inline)) void dw_rows9(
    float *restrict o0, float *restrict o1, const float *a0, const float *a1,
    const float *a2, const float *b0, const float *b1, const float *b2,
    const float *w, float b, int64_t ow, int64_t iw, int64_t pl,
    const bool share) {
  dw_v v[9], vb = b + (dw_v){0};
  for (int t = 0; t < 9; t++) {
    v[t] = w[t] + (dw_v){0};
  }
  // Columns [lo, hi) read input columns j - pl .. j - pl + 2 inside [0, iw).
  const int64_t lo = pl, hi = iw - 2 + pl < ow ? iw - 2 + pl : ow;
  int64_t j = lo;
  for (; j + DW_DIRECT_VEC <= hi; j += DW_DIRECT_VEC) {
    dw_pair9(o0, o1, a0 - pl, a1 - pl, a2 - pl, b0 - pl, b1 - pl, b2 - pl, v,
             vb, j, share);
  }
  if (j < hi) {
    dw_pair9(o0, o1, a0 - pl, a1 - pl, a2 - pl, b0 - pl, b1 - pl, b2 - pl, v,
             vb, hi - DW_DIRECT_VEC, share);
  }
  for (int64_t c = 0; c < lo; c++) {
    o1[c] = dw_border9(b0, b1, b2, w, b, c, pl, iw);
    o0[c] = dw_border9(a0, a1, a2, w, b, c, pl, iw);
  }
  for (int64_t c = hi; c < ow; c++) {
    o1[c] = dw_border9(b0, b1, b2, w, b, c, pl, iw);
    o0[c] = dw_border9(a0, a1, a2, w, b, c, pl, iw);
  }
}

// Depthwise 3x3 planes [begin, end) (plane = image * C + channel) whose
// rows are wide, with stride and dilation 1 along them: each pair of
// output rows is computed in place from the input rows (a zero row in
// the padding), sharing the rows the pair has in common, with no copies;
// then Z and the activation over the plane. Built for AVX-512, AVX2 and
// baseline x86-64 (K_CLONES_FMA).
K_CLONES_FMA static void depthwise_planes_direct(void *ctx, size_t begin,
                                                 size_t end) {
  const conv_job_t *job = ctx;
  const conv_state_t *st = job->st;
  const int64_t oh_n = st->out[1], ow = st->out[2], ih_n = st->in[1];
  const int64_t iw = st->in[2], pl = st->pb[2], sh = st->s[1];
  const int64_t dh = st->d[1], outsz = st->outsz;
  const bool share = sh == 1 && dh == 1;
  _Alignas(64) float zero[DW_STACK_FLOATS];  // the padding rows
  memset(zero, 0, (size_t)iw * sizeof(float));
  for (size_t p = begin; p < end; p++) {
    const int64_t c = (int64_t)p % st->c;
    const float *x = job->x + p * (size_t)st->insz;
    const float *w = job->w + (size_t)(c * 9);
    const float b = job->bias ? job->bias[c] : 0.0f;
    float *y = job->y + p * (size_t)outsz;
    for (int64_t oh = 0; oh < oh_n; oh += 2) {
      const float *r[2][3];
      const int64_t rows = oh + 1 < oh_n ? 2 : 1;
      for (int64_t i = 0; i < 2; i++) {
        for (int64_t kh = 0; kh < 3; kh++) {
          int64_t ih = (oh + (i < rows ? i : 0)) * sh - st->pb[1] + kh * dh;
          r[i][kh] = ih < 0 || ih >= ih_n ? zero : x + ih * iw;
        }
      }
      float *o0 = y + oh * ow, *o1 = rows == 2 ? o0 + ow : o0;
      if (share && rows == 2) {
        dw_rows9(o0, o1, r[0][0], r[0][1], r[0][2], r[0][1], r[0][2], r[1][2],
                 w, b, ow, iw, pl, true);
      } else {
        dw_rows9(o0, o1, r[0][0], r[0][1], r[0][2], r[1][0], r[1][1], r[1][2],
                 w, b, ow, iw, pl, false);
      }
    }
    if (job->z) {
      const float *z = job->z + p * (size_t)outsz;
      for (int64_t i = 0; i < outsz; i++) {
        y[i] += z[i];
      }
    }
    if (st->act.kind != CPU_ACT_NONE) {
      cpu_act_apply(&st->act, y, (size_t)outsz);
    }
  }
}

// Depthwise planes [begin, end) (plane = image * C + channel) for rows
// too wide for the band buffer.
static void depthwise_planes(void *ctx, size_t begin, size_t end) {
  const conv_job_t *job = ctx;
  const conv_state_t *st = job->st;
  const int64_t o1 = st->out[1], o2 = st->out[2], kh_n = st->k[1];
  const int64_t kw_n = st->k[2];
  const int64_t *lo = st->dw, *hi = st->dw + kw_n, *off = st->dw + 2 * kw_n;
  const float *rows[DEPTHWISE_MAX_KH];  // conv_shapes keeps kh_n below
  for (size_t p = begin; p < end; p++) {
    int64_t c = (int64_t)p % st->c;
    const float *x = job->x + p * (size_t)st->insz;
    const float *w = job->w + (size_t)(c * st->kprod);
    float *y = job->y + p * (size_t)st->outsz;
    float b0 = job->bias ? job->bias[c] : 0.0f;
    for (int64_t i = 0; i < st->outsz; i++) {
      y[i] = b0;
    }
    for (int64_t oh = 0; oh < o1; oh++) {
      for (int64_t kh = 0; kh < kh_n; kh++) {
        int64_t ih = oh * st->s[1] - st->pb[1] + kh * st->d[1];
        rows[kh] = ih < 0 || ih >= st->in[1] ? NULL : x + ih * st->in[2];
      }
      depthwise_row(y + oh * o2, rows, w, kh_n, kw_n, lo, hi, off, st->s[2],
                    st->dw_lo, st->dw_hi);
    }
    if (job->z) {
      const float *z = job->z + p * (size_t)st->outsz;
      for (int64_t i = 0; i < st->outsz; i++) {
        y[i] += z[i];
      }
    }
    cpu_act_apply(&st->act, y, (size_t)st->outsz);
  }
}

// dst[i] = src[i * S] for i in [0, N), N and S constants.
static inline __attribute__((always_inline)) void conv_gather_n(
    float *restrict dst, const float *restrict src, const int N,
    const int64_t S) {
  for (int i = 0; i < N; i++) {
    dst[i] = src[i * S];
  }
}

// dst[i] = src[i * s] for i in [0, n).
static inline __attribute__((always_inline)) void conv_gather(
    float *restrict dst, const float *restrict src, int64_t n, int64_t s) {
  for (int64_t i = 0; i < n; i++) {
    dst[i] = src[i * s];
  }
}

typedef float conv_v __attribute__((vector_size(64)));
typedef int32_t conv_vi __attribute__((vector_size(64)));

// dst[i] = src[2i] for i in [0, n), where |avail| floats from src are
// readable: whole vectors of even elements by shuffles while the loads
// stay inside them (a loop gcc vectorises has to stop short of the odd
// element after the last, and short runs then go element by element),
// and the rest as one block of 8 that ends on the last element: loaded
// from one float before its first, it takes the odd lanes.
static inline __attribute__((always_inline)) void conv_gather2(
    float *restrict dst, const float *restrict src, int64_t n, int64_t avail) {
  const conv_vi even = {0,  2,  4,  6,  8,  10, 12, 14,
                        16, 18, 20, 22, 24, 26, 28, 30};
  const conv_vi odd = {1,  3,  5,  7,  9,  11, 13, 15,
                       17, 19, 21, 23, 25, 27, 29, 31};
  int64_t i = 0;
  for (; i + 16 <= n && 2 * i + 32 <= avail; i += 16) {
    conv_v a, b;
    memcpy(&a, src + 2 * i, sizeof(a));
    memcpy(&b, src + 2 * i + 16, sizeof(b));
    conv_v r = __builtin_shuffle(a, b, even);
    memcpy(dst + i, &r, sizeof(r));
  }
  if (i + 8 <= n && 2 * i + 16 <= avail) {
    conv_v a;
    memcpy(&a, src + 2 * i, sizeof(a));
    conv_v r = __builtin_shuffle(a, even);
    memcpy(dst + i, &r, 8 * sizeof(float));
    i += 8;
  }
  if (i < n && n >= 9) {
    // src[2j - 1 .. 2n - 2]: inside the span, nothing past its end.
    const int64_t j = n - 8;
    conv_v a;
    memcpy(&a, src + 2 * j - 1, sizeof(a));
    conv_v r = __builtin_shuffle(a, odd);
    memcpy(dst + j, &r, 8 * sizeof(float));
    return;
  }
  for (; i < n; i++) {
    dst[i] = src[2 * i];
  }
}

// A run of one tap: len output columns whose first reads input (id, ih,
// iw) and the next ones every s columns further.
typedef struct conv_span {
  int64_t off;     // offset of (id, ih, iw) in a channel
  int64_t lo, hi;  // the columns inside the input
  int64_t avail;   // floats readable from off in its row (in2 - iw)
} conv_span_t;

static inline __attribute__((always_inline)) conv_span_t conv_span_of(
    int64_t id, int64_t ih, int64_t iw, int64_t len, int64_t s,
    const int64_t *in) {
  conv_span_t sp = {(id * in[1] + ih) * in[2] + iw, 0, len, in[2] - iw};
  if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1]) {
    sp.hi = 0;
    return sp;
  }
  if (iw < 0) {
    sp.lo = (-iw + s - 1) / s;
    sp.lo = sp.lo < len ? sp.lo : len;
  }
  if (iw + (len - 1) * s >= in[2]) {
    sp.hi = in[2] - 1 - iw >= 0 ? (in[2] - 1 - iw) / s + 1 : 0;
    sp.hi = sp.hi > sp.lo ? sp.hi : sp.lo;
  }
  return sp;
}

// dst[i] for i in [0, len) of span |sp| of channel |xc|: zero outside
// [lo, hi), xc[off + i * s] inside.
static inline __attribute__((always_inline)) void conv_pack_span(
    float *restrict dst, const float *restrict xc, conv_span_t sp, int64_t len,
    int64_t s) {
  const int64_t lo = sp.lo, hi = sp.hi;
  if (lo > 0) {
    dw_zero(dst, lo);
  }
  if (hi < len) {
    dw_zero(dst + hi, len - hi);
  }
  if (hi <= lo) {
    return;
  }
  const float *src = xc + sp.off + lo * s;
  if (s == 1) {
    dw_copy(dst + lo, src, hi - lo);
  } else if (s == 2) {
    conv_gather2(dst + lo, src, hi - lo, sp.avail - 2 * lo);
  } else {
    conv_gather(dst + lo, src, hi - lo, s);
  }
}

// Taps the gather tables of conv_pack_small hold (up to 8x8 kernels).
enum { CONV_SMALL_TAPS = 64, CONV_SMALL_NR = 16 };

// kc rows of NR-column panel rows from a gather table, starting at tap
// kk of channel ch: column i of a row is the channel's float at[kk][i]
// masked by keep[kk][i] (all ones, or zero in the padding: at[kk][i] is
// then 0, a float every channel has), with nothing to decide per element;
// a tap whose NR columns are consecutive floats of the channel, all inside
// the input (run[kk], most taps of panels within one output row), is a
// copy of them. NR is a constant at the calls of the common panel widths.
static inline __attribute__((always_inline)) void conv_small_rows(
    float *restrict dst, const float *restrict x, int64_t insz,
    int32_t (*at)[CONV_SMALL_NR], uint32_t (*keep)[CONV_SMALL_NR],
    const bool *run, int64_t ch, int64_t kk, int64_t kprod, int64_t kc,
    const int NR) {
  for (int64_t p = 0; p < kc; p++) {
    const float *restrict xc = x + (size_t)(ch * insz);
    const int32_t *restrict a = at[kk];
    if (run[kk]) {
      memcpy(dst + p * NR, xc + a[0], (size_t)NR * sizeof(float));
    } else {
      const uint32_t *restrict m = keep[kk];
      uint32_t *restrict row = (uint32_t *)(void *)(dst + p * NR);
      for (int i = 0; i < NR; i++) {
        uint32_t v;
        memcpy(&v, xc + a[i], sizeof(v));
        row[i] = v & m[i];
      }
    }
    if (++kk == kprod) {
      kk = 0;
      ch++;
    }
  }
}

// conv_pack_b for panels of at most CONV_SMALL_NR columns (the A panels
// of the transposed form: output positions): a panel's columns span
// several short output rows, so instead of runs each tap's source offset
// in a channel is worked out once per panel for every column (masked out
// in the padding or past n), and each row is then a gather of the whole
// panel.
K_CLONES_FMA static void conv_pack_small(const conv_pack_t *pk, int64_t p0,
                                         int64_t kc, int64_t j0, int64_t nc,
                                         int64_t n, int nr, float *dst) {
  const conv_state_t *st = pk->st;
  const int64_t o1 = st->out[1], o2 = st->out[2], plane = o1 * o2;
  const int64_t k1 = st->k[1], k2 = st->k[2], kprod = st->kprod;
  const int64_t insz = st->insz;
  int32_t at[CONV_SMALL_TAPS][CONV_SMALL_NR];
  uint32_t keep[CONV_SMALL_TAPS][CONV_SMALL_NR];
  bool run[CONV_SMALL_TAPS];
  for (int64_t q = 0; q < nc; q += nr, dst += nr * kc) {
    int64_t id[CONV_SMALL_NR], ih[CONV_SMALL_NR], iw[CONV_SMALL_NR];
    for (int i = 0; i < nr; i++) {
      int64_t j = j0 + q + i, r = j % plane;
      id[i] = j / plane * st->s[0] - st->pb[0];
      ih[i] = r / o2 * st->s[1] - st->pb[1];
      iw[i] = r % o2 * st->s[2] - st->pb[2];
    }
    for (int64_t t = 0; t < kprod; t++) {
      const int64_t td = t / (k1 * k2) * st->d[0], th = t / k2 % k1 * st->d[1];
      const int64_t tw = t % k2 * st->d[2];
      for (int i = 0; i < nr; i++) {
        int64_t a = id[i] + td, b = ih[i] + th, c = iw[i] + tw;
        bool in = j0 + q + i < n && a >= 0 && a < st->in[0] && b >= 0 &&
                  b < st->in[1] && c >= 0 && c < st->in[2];
        at[t][i] = in ? (int32_t)((a * st->in[1] + b) * st->in[2] + c) : 0;
        keep[t][i] = in ? UINT32_MAX : 0;
      }
      run[t] = true;
      for (int i = 0; i < nr; i++) {
        run[t] = run[t] && keep[t][i] && at[t][i] == at[t][0] + i;
      }
    }
    const int64_t ch = p0 / kprod, kk = p0 % kprod;
    if (nr == 6) {
      conv_small_rows(dst, pk->x, insz, at, keep, run, ch, kk, kprod, kc, 6);
    } else if (nr == 12) {
      conv_small_rows(dst, pk->x, insz, at, keep, run, ch, kk, kprod, kc, 12);
    } else if (nr == 16) {
      conv_small_rows(dst, pk->x, insz, at, keep, run, ch, kk, kprod, kc, 16);
    } else {
      conv_small_rows(dst, pk->x, insz, at, keep, run, ch, kk, kprod, kc, nr);
    }
  }
}

// conv_pack_b for a panel of 16 columns inside one output row of a
// convolution with stride S (1 or 2, a constant) along its rows (j0 its
// first column): each tap's 16 columns are one piece of an input row,
// copied (every other float of it for stride 2) in whole vectors where
// the tap lies inside the row (most columns of a wide row), with its
// padding zeroed where not. Returns false, doing nothing, when the
// panel's columns are not one row.
static inline __attribute__((always_inline)) bool conv_pack_row16(
    const conv_pack_t *pk, int64_t p0, int64_t kc, int64_t j0, int64_t n,
    float *restrict dst, const int S) {
  const conv_state_t *st = pk->st;
  const int64_t o1 = st->out[1], o2 = st->out[2], plane = o1 * o2;
  const int64_t r = j0 % plane, ow = r % o2, kprod = st->kprod;
  if (ow + 16 > o2 || j0 + 16 > n || kprod > CONV_SMALL_TAPS) {
    return false;
  }
  const int64_t k1 = st->k[1], k2 = st->k[2];
  const int64_t id = j0 / plane * st->s[0] - st->pb[0];
  const int64_t ih = r / o2 * st->s[1] - st->pb[1];
  const int64_t iw = ow * S - st->pb[2];
  conv_span_t sp[CONV_SMALL_TAPS];
  for (int64_t t = 0; t < kprod; t++) {
    sp[t] =
        conv_span_of(id + t / (k1 * k2) * st->d[0], ih + t / k2 % k1 * st->d[1],
                     iw + t % k2 * st->d[2], 16, S, st->in);
  }
  int64_t ch = p0 / kprod, kk = p0 % kprod;
  for (int64_t p = 0; p < kc; p++, dst += 16) {
    const float *xc = pk->x + (size_t)(ch * st->insz);
    const conv_span_t t = sp[kk];
    if (S == 1 && t.lo == 0 && t.hi == 16) {
      const float *src = xc + t.off;
      k_f8 a = *(const k_f8 *)src, b = *(const k_f8 *)(src + 8);
      *(k_f8 *)dst = a;
      *(k_f8 *)(dst + 8) = b;
    } else if (S == 2 && t.lo == 0 && t.hi == 16 && t.avail >= 32) {
      // The even floats of 32: shuffles of whole vectors.
      const float *src = xc + t.off;
      k_f8 a = *(const k_f8 *)src, b = *(const k_f8 *)(src + 8);
      k_f8 c = *(const k_f8 *)(src + 16), d = *(const k_f8 *)(src + 24);
      *(k_f8 *)dst = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
      *(k_f8 *)(dst + 8) =
          __builtin_shufflevector(c, d, 0, 2, 4, 6, 8, 10, 12, 14);
    } else {
      for (int64_t i = 0; i < 16; i++) {
        dst[i] = i >= t.lo && i < t.hi ? xc[t.off + i * S] : 0.0f;
      }
    }
    if (++kk == kprod) {
      kk = 0;
      ch++;
    }
  }
  return true;
}

// The B operand of an implicit convolution (cpu_gemm_pack_fn): row p of B
// is tap (c, kd, kh, kw) = p split by the kernel, column j the output
// position (od, oh, ow); B[p][j] = x[c][od*s0 + kd*d0 - pb0][oh*s1 + kh*d1
// - pb1][ow*s2 + kw*d2 - pb2], zero in the padding. A panel's columns are
// cut into runs along output rows, so that a tap's run is one contiguous
// (stride 1) or strided piece of an input row; where each tap's run
// starts and which of its columns are inside the input is worked out once
// per panel, as it is the same for every channel. Built for AVX-512, AVX2
// and baseline x86-64 (K_CLONES_FMA).
K_CLONES_FMA static void conv_pack_any(const conv_pack_t *pk, int64_t p0,
                                       int64_t kc, int64_t j0, int64_t nc,
                                       int64_t n, int nr, float *dst) {
  const conv_state_t *st = pk->st;
  if (nr <= CONV_SMALL_NR && st->kprod <= CONV_SMALL_TAPS &&
      st->insz <= INT32_MAX) {
    conv_pack_small(pk, p0, kc, j0, nc, n, nr, dst);
    return;
  }
  const int64_t o1 = st->out[1], o2 = st->out[2], plane = o1 * o2;
  const int64_t k0 = st->k[0], k1 = st->k[1], k2 = st->k[2];
  const int64_t s2 = st->s[2], kprod = st->kprod, insz = st->insz;
  // The engine's NR is at most 64 (runs); the per-tap table is kept for
  // kernels up to 11x11 over a few runs (bigger ones go a tap at a time).
  enum { MAX_RUNS = 64, MAX_SPANS = 512 };
  struct {
    int64_t col, len;    // columns of the panel
    int64_t id, ih, iw;  // input position of tap 0 at its first column
  } runs[MAX_RUNS];
  conv_span_t spans[MAX_SPANS];
  for (int64_t q = 0; q < nc; q += nr, dst += nr * kc) {
    const int64_t jq = j0 + q, jend = jq + nr < n ? jq + nr : n;
    int64_t nruns = 0;
    for (int64_t j = jq; j < jend && nruns < MAX_RUNS; nruns++) {
      int64_t od = j / plane, r = j % plane, oh = r / o2, ow = r % o2;
      int64_t len = o2 - ow < jend - j ? o2 - ow : jend - j;
      runs[nruns].col = j - jq;
      runs[nruns].len = len;
      runs[nruns].id = od * st->s[0] - st->pb[0];
      runs[nruns].ih = oh * st->s[1] - st->pb[1];
      runs[nruns].iw = ow * s2 - st->pb[2];
      j += len;
    }
    const int64_t cols = jend > jq ? jend - jq : 0;
    const bool table = kprod * nruns <= MAX_SPANS;
    int64_t c = p0 / kprod, kk = p0 % kprod;
    int64_t kd = kk / (k1 * k2), kh = kk / k2 % k1, kw = kk % k2;
    for (int64_t t = 0, e = 0; table && t < kprod; t++) {
      const int64_t td = t / (k1 * k2), th = t / k2 % k1, tw = t % k2;
      for (int64_t r = 0; r < nruns; r++, e++) {
        spans[e] =
            conv_span_of(runs[r].id + td * st->d[0], runs[r].ih + th * st->d[1],
                         runs[r].iw + tw * st->d[2], runs[r].len, s2, st->in);
      }
    }
    for (int64_t p = 0; p < kc; p++) {
      float *row = dst + p * nr;
      const float *xc = pk->x + (size_t)(c * insz);
      for (int64_t r = 0; r < nruns; r++) {
        const conv_span_t sp = table ? spans[kk * nruns + r]
                                     : conv_span_of(runs[r].id + kd * st->d[0],
                                                    runs[r].ih + kh * st->d[1],
                                                    runs[r].iw + kw * st->d[2],
                                                    runs[r].len, s2, st->in);
        conv_pack_span(row + runs[r].col, xc, sp, runs[r].len, s2);
      }
      dw_zero(row + cols, nr - cols);
      if (++kk == kprod) {
        kk = 0;
        c++;
      }
      if (++kw == k2) {
        kw = 0;
        if (++kh == k1) {
          kh = 0;
          if (++kd == k0) {
            kd = 0;
          }
        }
      }
    }
  }
}

// The pack callback of an implicit convolution's GEMMs (the B side, or
// the A side in the transposed form): 16-column panels inside one output
// row copy pieces of input
// rows (conv_pack_row16, stride 1 or 2); other panels gather
// (conv_pack_any).
K_CLONES_FMA static void conv_pack_b(const void *ctx, int64_t p0, int64_t kc,
                                     int64_t j0, int64_t nc, int64_t n, int nr,
                                     float *dst) {
  const conv_pack_t *pk = ctx;
  const conv_state_t *st = pk->st;
  if (nr != 16 || st->s[2] > 2 || st->out[2] < 16) {
    conv_pack_any(pk, p0, kc, j0, nc, n, nr, dst);
    return;
  }
  for (int64_t q = 0; q < nc; q += 16) {
    if (!(st->s[2] == 1
              ? conv_pack_row16(pk, p0, kc, j0 + q, n, dst + q * kc, 1)
              : conv_pack_row16(pk, p0, kc, j0 + q, n, dst + q * kc, 2))) {
      conv_pack_any(pk, p0, kc, j0 + q, nc - q < 16 ? nc - q : 16, n, 16,
                    dst + q * kc);
    }
  }
}

// The A side of the transposed shifted form (conv_shifted_plan): a
// panel's nr output positions, one after another, read the image's copy
// at the same distances idx[i] from the first one's place for every tap
// (the copy's rows being Wv floats apart), so each row of the panel is a
// gather at the tap's offset (cpu_gather_rows; |ctx|'s x is the copy).
static void conv_pack_sh(const void *ctx, int64_t p0, int64_t kc, int64_t j0,
                         int64_t nc, int64_t n, int nr, float *dst) {
  const conv_pack_t *pk = ctx;
  const conv_state_t *st = pk->st;
  const int64_t o2 = st->out[2], wv = st->sh_wv;
  int32_t idx[CPU_GEMM_MAX_TILE];
  for (int64_t q = 0; q < nc; q += nr, dst += nr * kc) {
    const int64_t j = j0 + q, base = j / o2 * wv + j % o2;
    for (int i = 0; i < nr; i++) {
      // (A's panels end at n; were one to go past, it would read the
      // first position's floats.)
      const int64_t p = j + i < n ? j + i : j;
      idx[i] = (int32_t)(p / o2 * wv + p % o2 - base);
    }
    cpu_gather_rows(pk->x + base, st->sh_off + p0, kc, idx, nr, dst);
  }
}

// Member t of the convolution's GEMMs: image t / group, group t % group.
static void conv_member(const void *ctx, size_t t, cpu_gemm_problem_t *out) {
  const conv_job_t *job = ctx;
  const conv_state_t *st = job->st;
  int64_t img = (int64_t)t / st->group, g = (int64_t)t % st->group;
  int64_t kg = st->cg * st->kprod;
  size_t out_off = (size_t)(img * st->m * st->outsz + g * st->mg * st->outsz);
  const float *xg = job->x + (size_t)((img * st->c + g * st->cg) * st->insz);
  const float *wg = job->w ? job->w + (size_t)(g * st->mg * kg) : NULL;
  memset(out, 0, sizeof(*out));
  out->k = kg;
  if (st->tr) {
    // Y^T[outsz x mg] = X'^T · W^T, written into Y transposed.
    out->m = st->outsz;
    out->n = st->mg;
    out->ct = true;
    if (st->sh) {
      out->a.pack = conv_pack_sh;
      out->a.pack_ctx = &st->packs[t];
    } else if (st->mode == CONV_IMPLICIT) {
      out->a.pack = conv_pack_b;
      out->a.pack_ctx = &st->packs[t];
    } else {
      out->a.data = xg;
      out->a.rs = 1;
      out->a.cs = st->insz;
    }
    out->b.data = wg;
    out->b.rs = 1;
    out->b.cs = kg;
    out->b.packed = st->pw ? &st->pw[g] : NULL;
  } else {
    out->m = st->mg;
    out->n = st->outsz;
    out->a.data = wg;
    out->a.rs = kg;
    out->a.cs = 1;
    out->a.packed = st->pw ? &st->pw[g] : NULL;
    if (st->sh) {
      out->b.data =
          job->xs ? job->xs + (size_t)t * (size_t)(st->cg * st->sh_chan) : xg;
      out->b.roff = st->sh_off;
      out->b.cs = 1;
      // Positions in rows of the virtual width, its junk columns dropped.
      out->n = (st->out[1] - 1) * st->sh_wv + st->out[2];
      if (st->sh_wv != st->out[2]) {
        out->vrow = st->sh_wv;
        out->vkeep = st->out[2];
      }
    } else if (st->mode == CONV_IMPLICIT) {
      out->b.pack = conv_pack_b;
      out->b.pack_ctx = &st->packs[t];
    } else {
      out->b.data = xg;
      out->b.rs = st->outsz;
      out->b.cs = 1;
    }
  }
  // The epilogue in Y's layout (channels by positions).
  out->c = job->y + out_off;
  out->ldc = st->outsz;
  out->epi = cpu_gemm_epi_plain();
  out->epi.act = st->act;
  if (job->bias) {
    out->epi.bias = job->bias + g * st->mg;
    out->epi.bias_rows = true;
  }
  if (job->z) {
    out->epi.z = job->z + out_off;
    out->epi.z_rs = st->outsz;
    out->epi.z_cs = 1;
  }
}

// The channel-blocked depthwise kernels (dw_blocks.inc): 8 channels a
// block on every machine (AVX-512, AVX2 and baseline clones), 16 on
// AVX-512 (half the multiply-adds a position).
#define DWB_NAME depthwise_blocks8
#define DWB_L 8
#define DWB_V k_f8
#define DWB_I k_i8
#define DWB_ATTR K_CLONES_FMA
#define DWB_BAND dw8_band
#include "dw_blocks.inc"
#if defined(__x86_64__)
typedef float dwb_f16 __attribute__((vector_size(64), aligned(4)));
typedef int32_t dwb_i16 __attribute__((vector_size(64)));
#define DWB_NAME depthwise_blocks16
#define DWB_L 16
#define DWB_V dwb_f16
#define DWB_I dwb_i16
#define DWB_ATTR __attribute__((target("arch=x86-64-v4")))
#define DWB_BAND dw16_band
#include "dw_blocks.inc"
#endif

// The shifted form's copy for units [begin, end) (unit = member * cg +
// channel): each phase plane the taps use, row r / s1 of phase r % s1
// being padded row r (and so for columns), zero in the padding.
K_CLONES_FMA static void conv_sh_fill(void *ctx, size_t begin, size_t end) {
  const conv_job_t *job = ctx;
  const conv_state_t *st = job->st;
  const int64_t s1 = st->s[1], s2 = st->s[2], wv = st->sh_wv;
  const int64_t rows = st->sh_rows, plane = rows * wv;
  const int64_t in1 = st->in[1], in2 = st->in[2];
  for (size_t u = begin; u < end; u++) {
    int64_t t = (int64_t)u / st->cg, c = (int64_t)u % st->cg;
    int64_t img = t / st->group, g = t % st->group;
    const float *xc =
        job->x + (size_t)((img * st->c + g * st->cg + c) * st->insz);
    float *chan = job->xs + (size_t)u * (size_t)st->sh_chan;
    for (int64_t ph = 0; ph < s1 * s2; ph++) {
      if (st->sh_slot[ph] < 0) {
        continue;
      }
      const int64_t pr = ph / s2, pc = ph % s2;
      float *dst = chan + st->sh_slot[ph] * plane;
      // Columns u with input column pc + s2 * u - pb2 in [0, in2).
      int64_t lo = (st->pb[2] - pc + s2 - 1) / s2;
      lo = lo < 0 ? 0 : lo > wv ? wv : lo;
      int64_t hi = (in2 + st->pb[2] - pc + s2 - 1) / s2;
      hi = hi < lo ? lo : hi > wv ? wv : hi;
      for (int64_t r = 0; r < rows; r++, dst += wv) {
        int64_t ih = pr + s1 * r - st->pb[1];
        if (ih < 0 || ih >= in1) {
          memset(dst, 0, (size_t)wv * sizeof(float));
          continue;
        }
        const float *src = xc + ih * in2 + pc - st->pb[2];
        memset(dst, 0, (size_t)lo * sizeof(float));
        int64_t q = lo;
        if (s2 == 1) {
          memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof(float));
          q = hi;
        } else if (s2 == 2) {
          // The even floats of 16 at a time (src[2q + 15] inside the row).
          for (; q + 8 < hi; q += 8) {
            k_f8 a = *(const k_f8 *)(src + 2 * q);
            k_f8 b = *(const k_f8 *)(src + 2 * q + 8);
            *(k_f8 *)(dst + q) =
                __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
          }
        }
        for (; q < hi; q++) {
          dst[q] = src[q * s2];
        }
        memset(dst + hi, 0, (size_t)(wv - hi) * sizeof(float));
      }
    }
  }
}

// The shifted form (conv_shifted_plan): the image's copy (at the
// workspace's start, or on its own when it is short), then the GEMMs
// reading B in place.
static wm_error *conv_run_shifted(conv_job_t *job, const cpu_run_t *run,
                                  cpu_gemm_scratch_t *ws) {
  const conv_state_t *st = job->st;
  const size_t members = (size_t)(st->n * st->group);
  size_t bytes = conv_sh_bytes(st);
  float *own = NULL;
  if (bytes && ws->mem && ws->floats * sizeof(float) >= bytes) {
    job->xs = ws->mem;
    ws->mem += bytes / sizeof(float);
    ws->floats -= bytes / sizeof(float);
  } else if (bytes && !(job->xs = own = aligned_alloc(64, bytes))) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "Conv: out of memory for %zu bytes of a shifted image",
                     bytes);
  }
  if (job->xs && st->tr) {
    for (size_t t = 0; t < members; t++) {
      st->packs[t].x = job->xs + t * (size_t)(st->cg * st->sh_chan);
    }
  }
  if (job->xs) {
    size_t per = (size_t)(st->sh_chan);
    wm_pool_for(run->pool, members * (size_t)st->cg,
                per >= 16384 ? 1 : 16384 / (per ? per : 1), conv_sh_fill, job);
  }
  wm_error *e = cpu_gemm_run_batch(members, conv_member, job, run->pool, ws);
  free(own);
  return e;
}

// Depthwise planes [begin, end) (plane = image * C + channel) on the
// AVX-512 kernel (depthwise.h).
static void depthwise_planes_512(void *ctx, size_t begin, size_t end) {
  const conv_job_t *job = ctx;
  const conv_state_t *st = job->st;
  const size_t planes = (size_t)(st->n * st->c);
  const int64_t rows = (st->out[1] + job->bands - 1) / job->bands;
  for (size_t u = begin; u < end; u++) {
    const size_t p = u % planes;
    const int64_t c = (int64_t)p % st->c, r0 = (int64_t)(u / planes) * rows;
    cpu_dw512_rows(&st->dwg, job->x + p * (size_t)st->insz,
                   job->w + (size_t)(c * st->kprod),
                   job->bias ? job->bias[c] : 0.0f,
                   job->z ? job->z + p * (size_t)st->outsz : NULL,
                   job->y + p * (size_t)st->outsz, r0, r0 + rows);
  }
}

static wm_error *conv_run(void *state, const cpu_run_t *run) {
  cpu_gemm_scratch_t ws = cpu_gemm_scratch_of(run);
  conv_state_t *st = state;
  float *y = run->out[0].data;
  if (!y || run->out[0].count == 0) {
    return NULL;
  }
  conv_job_t job = {.st = st,
                    .x = run->in[0].data,
                    .w = run->in[1].data,
                    .bias = st->has_bias ? run->in[2].data : NULL,
                    .z = st->has_z ? run->in[3].data : NULL,
                    .y = y};
  if (st->wino) {
    return cpu_wino_run(st->wino, job.x, job.bias, job.z, &st->act, y,
                        run->pool, &ws);
  }
  if (st->mode == CONV_DEPTHWISE && st->dw512) {
    job.bands = k_row_bands(run->pool, st->out[1]);
    size_t work = (size_t)(st->outsz * st->kprod) / (size_t)job.bands;
    wm_pool_for(run->pool, (size_t)(st->n * st->c * job.bands),
                k_row_grain(work, 32768), depthwise_planes_512, &job);
    return NULL;
  }
#if defined(__x86_64__)
  if (st->mode == CONV_DEPTHWISE && st->dw16_band > 0) {
    size_t blocks = (size_t)(st->n * st->c / 16);
    size_t work = (size_t)(16 * st->outsz * st->kprod);
    wm_pool_for(run->pool, blocks, k_row_grain(work, 32768), depthwise_blocks16,
                &job);
    return NULL;
  }
#endif
  if (st->mode == CONV_DEPTHWISE && st->dw8_band > 0) {
    size_t blocks = (size_t)(st->n * st->c / 8);
    size_t work = (size_t)(8 * st->outsz * st->kprod);
    wm_pool_for(run->pool, blocks, k_row_grain(work, 32768), depthwise_blocks8,
                &job);
    return NULL;
  }
  if (st->mode == CONV_DEPTHWISE) {
    size_t planes = (size_t)(st->n * st->c);
    size_t work = (size_t)(st->outsz * st->kprod);
    size_t grain = k_row_grain(work, 32768);
    wm_pool_for(run->pool, planes, grain,
                st->dw_direct ? depthwise_planes_direct
                : st->dw_band ? depthwise_planes_bands
                              : depthwise_planes,
                &job);
    return NULL;
  }
  size_t members = (size_t)(st->n * st->group);
  if (st->mode == CONV_IMPLICIT) {
    for (size_t t = 0; t < members; t++) {
      int64_t img = (int64_t)t / st->group, g = (int64_t)t % st->group;
      st->packs[t].st = st;
      st->packs[t].x =
          job.x + (size_t)(img * st->c * st->insz + g * st->cg * st->insz);
    }
  }
  if (st->sh) {
    return conv_run_shifted(&job, run, &ws);
  }
  // Pointwise: the image itself is B; implicit: B is packed from it (the
  // A side, in the transposed form).
  return cpu_gemm_run_batch(members, conv_member, &job, run->pool, &ws);
}

// FusedConv's Y may be written into Z's bytes (input 3) where each tile of
// Y is written once after its Z is read: the GEMM forms writing Y
// directly (cpu_gemm_z_in_place), not the depthwise kernels nor the forms
// written through a block (transposed, virtual columns).
static int32_t conv_in_place(const void *state, uint32_t out) {
  const conv_state_t *st = state;
  if (st->wino) {  // each output is written after its Z is read
    return out == 0 && st->has_z ? 3 : -1;
  }
  if (out != 0 || !st->has_z || st->mode == CONV_DEPTHWISE || st->tr ||
      (st->sh && st->sh_wv != st->out[2])) {
    return -1;
  }
  return cpu_gemm_z_in_place(st->mg, st->cg * st->kprod, st->act.kind) ? 3 : -1;
}

// W (input 1) packed at plan time is never read again.
static uint64_t conv_captured(const void *state) {
  const conv_state_t *st = state;
  return st->pw || st->wino ? 2u : 0u;
}

static wm_error *conv_plan(const wm_op_desc *op, void **out_state) {
  cpu_act_t none = {CPU_ACT_NONE, 0.0f, 0.0f};
  return conv_plan_act(op, "Conv", &none, false, out_state);
}

// --------------------------------------------------------- fused (wmap)

// The activation of a fused node from `activation` and
// `activation_params` (ONNX defaults when the parameters are absent);
// false with a reason for a name or parameter count it does not know.
static bool fused_act(const wm_op_desc *op, cpu_act_t *out, uint32_t *why,
                      const char **detail) {
  static const char *const names[] = {
      "",          "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid",
      "HardSwish", "Tanh", "Silu", "Gelu",      "GeluTanh"};
  static const float defaults[][2] = {{0, 0},     {0, 0}, {-FLT_MAX, FLT_MAX},
                                      {0.01f, 0}, {0, 0}, {0.2f, 0.5f},
                                      {0, 0},     {0, 0}, {0, 0},
                                      {0, 0},     {0, 0}};
  static const uint64_t n_params[] = {0, 0, 2, 1, 0, 2, 0, 0, 0, 0, 0};
  const char *name = cpu_attr_string(op, "activation", "");
  memset(out, 0, sizeof(*out));
  for (int k = 0; k < (int)(sizeof(names) / sizeof(names[0])); k++) {
    if (strcmp(name, names[k]) != 0) {
      continue;
    }
    const wm_op_attr *p = cpu_attr(op, "activation_params");
    uint64_t n = p && p->type == 6 ? p->count : 0;
    if ((p && p->type != 6) || (n != 0 && n != n_params[k])) {
      cpu_refuse(why, detail, WM_WHY_ATTR,
                 "activation_params do not fit the activation");
      return false;
    }
    out->kind = (cpu_act_kind_t)k;
    out->p0 = n > 0 ? p->floats[0] : defaults[k][0];
    out->p1 = n > 1 ? p->floats[1] : defaults[k][1];
    return true;
  }
  cpu_refuse(why, detail, WM_WHY_ATTR, "unknown activation");
  return false;
}

// |op| as its base operator sees it: the first |n_in| inputs.
static wm_op_desc fused_base(const wm_op_desc *op, uint32_t n_in) {
  wm_op_desc b = *op;
  b.n_in = op->n_in < n_in ? op->n_in : n_in;
  return b;
}

// Checks the extra input |i| of a fused node: Z of the output's shape
// (|vector| false) or a bias of the output's last dim (|vector| true).
static bool fused_extra_ok(const wm_op_desc *op, uint32_t i, bool vector,
                           uint32_t *why, const char **detail) {
  if (!cpu_has_input(op, i)) {
    return true;
  }
  const wm_tensor_desc *e = &op->in[i], *y = &op->out[0];
  if (e->dtype != F32) {
    cpu_refuse(why, detail, WM_WHY_DTYPE, "fused operators take float32 only");
    return false;
  }
  bool ok;
  if (vector) {
    ok = e->rank == 1 && y->rank >= 1 && e->dims[0] == y->dims[y->rank - 1];
  } else {
    ok = e->rank == y->rank;
    for (uint32_t d = 0; ok && d < y->rank; d++) {
      ok = e->dims[d] == y->dims[d];
    }
  }
  if (!ok) {
    cpu_refuse(
        why, detail, WM_WHY_SHAPE,
        vector ? "bias is not [N]" : "Z does not have the output's shape");
  }
  return ok;
}

static uint32_t fused_conv_query(const wm_op_desc *op, uint32_t *why,
                                 const char **detail) {
  cpu_act_t act;
  wm_op_desc b = fused_base(op, 3);
  conv_state_t st;
  if (op->n_in > 4 || !fused_act(op, &act, why, detail) ||
      !fused_extra_ok(op, 3, false, why, detail) ||
      !conv_shapes(&b, &st, why, detail)) {
    return WM_SUPPORT_NONE;
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *fused_conv_plan(const wm_op_desc *op, void **out_state) {
  cpu_act_t act;
  uint32_t why;
  const char *detail = NULL;
  *out_state = NULL;
  if (!fused_act(op, &act, &why, &detail)) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT, "node \"%s\" (FusedConv): %s",
                     op->name ? op->name : "", detail);
  }
  wm_op_desc b = fused_base(op, 3);
  return conv_plan_act(&b, "FusedConv", &act, cpu_has_input(op, 3), out_state);
}

static uint32_t fused_gemm_query(const wm_op_desc *op, uint32_t *why,
                                 const char **detail) {
  cpu_act_t act;
  gemm_state_t st;
  if (!fused_act(op, &act, why, detail) || !gemm_shapes(op, &st, why, detail)) {
    return WM_SUPPORT_NONE;
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *fused_gemm_plan(const wm_op_desc *op, void **out_state) {
  cpu_act_t act;
  uint32_t why;
  const char *detail = NULL;
  *out_state = NULL;
  if (!fused_act(op, &act, &why, &detail)) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT, "node \"%s\" (FusedGemm): %s",
                     op->name ? op->name : "", detail);
  }
  return gemm_plan_act(op, "FusedGemm", &act, out_state);
}

static uint32_t fused_matmul_query(const wm_op_desc *op, uint32_t *why,
                                   const char **detail) {
  cpu_act_t act;
  wm_op_desc b = fused_base(op, 2);
  matmul_state_t st;
  if (op->n_in > 3 || !fused_act(op, &act, why, detail) ||
      !fused_extra_ok(op, 2, true, why, detail) ||
      !matmul_shapes(&b, &st, why, detail)) {
    return WM_SUPPORT_NONE;
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *fused_matmul_plan(const wm_op_desc *op, void **out_state) {
  cpu_gemm_epi_t epi = cpu_gemm_epi_plain();
  uint32_t why;
  const char *detail = NULL;
  *out_state = NULL;
  if (!fused_act(op, &epi.act, &why, &detail)) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT, "node \"%s\" (FusedMatMul): %s",
                     op->name ? op->name : "", detail);
  }
  wm_op_desc b = fused_base(op, 2);
  wm_error *e = matmul_plan_epi(&b, "FusedMatMul", &epi, out_state);
  if (!e) {
    ((matmul_state_t *)*out_state)->has_bias = cpu_has_input(op, 2);
  }
  return e;
}

const cpu_kernel_t cpu_kernels_wmap[] = {
    {"FusedConv", 1, WM_IMPL_NATIVE_KERNEL, fused_conv_query, fused_conv_plan,
     conv_run, conv_destroy, conv_workspace, conv_captured, conv_in_place},
    {"FusedGemm", 1, WM_IMPL_NATIVE_KERNEL, fused_gemm_query, fused_gemm_plan,
     gemm_run, gemm_destroy, cpu_gemm_kernel_workspace, gemm_captured, NULL},
    {"FusedMatMul", 1, WM_IMPL_NATIVE_KERNEL, fused_matmul_query,
     fused_matmul_plan, matmul_run, matmul_destroy, cpu_gemm_kernel_workspace,
     matmul_captured, NULL},
    {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};

const cpu_kernel_t cpu_kernels_blas[] = {
    {"Conv", 1, WM_IMPL_NATIVE_KERNEL, conv_query, conv_plan, conv_run,
     conv_destroy, conv_workspace, conv_captured, NULL},
    {"Gemm", 1, WM_IMPL_NATIVE_KERNEL, gemm_query, gemm_plan, gemm_run,
     gemm_destroy, cpu_gemm_kernel_workspace, gemm_captured, NULL},
    {"MatMul", 1, WM_IMPL_NATIVE_KERNEL, matmul_query, matmul_plan, matmul_run,
     matmul_destroy, cpu_gemm_kernel_workspace, matmul_captured, NULL},
    {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
