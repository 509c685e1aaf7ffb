// Shape and conversion kernels of the cpu backend: Where, Expand, Tile,
// Pad, Split, and Cast/CastLike between the plain numeric dtypes.
//
// Broadcasting kernels (Where, Expand) collapse the output dims like
// eltwise.c does: dims of size 1 are dropped and neighbours in which every
// operand is either present or broadcast alike are merged, so the inner
// loop runs over one contiguous or broadcast run per operand. Copies move
// elements by size; Cast runs one generated loop per (from, to) pair with
// the reference's conversion rules.

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

enum { MAX_OPERANDS = 3 };

// Element offsets of up to three operands along collapsed output dims.
typedef struct nd_geo {
  int32_t n_op;                            // operands
  int32_t rank;                            // collapsed dims (>= 1)
  int64_t dims[CPU_MAX_RANK];              // collapsed output sizes
  int64_t st[MAX_OPERANDS][CPU_MAX_RANK];  // strides per operand (0 = bcast)
  size_t rows;                             // product of all dims but last
  size_t inner;                            // the last dim
} nd_geo_t;

// Collapses the broadcast of |n| operand descriptions onto |y|; false
// when some operand does not broadcast to it.
static bool nd_geometry(const wm_tensor_desc *const *ops, int32_t n,
                        const wm_tensor_desc *y, nd_geo_t *g) {
  memset(g, 0, sizeof(*g));
  g->n_op = n;
  int32_t r = (int32_t)y->rank, k = 0;
  int64_t sizes[CPU_MAX_RANK];
  bool full[CPU_MAX_RANK][MAX_OPERANDS];
  for (int32_t i = 0; i < n; i++) {
    if ((int32_t)ops[i]->rank > r) {
      return false;
    }
  }
  for (int32_t d = 0; d < r; d++) {
    int64_t od = y->dims[d];
    bool f[MAX_OPERANDS];
    for (int32_t i = 0; i < n; i++) {
      int32_t j = d - (r - (int32_t)ops[i]->rank);
      int64_t dd = j >= 0 ? ops[i]->dims[j] : 1;
      if (dd != od && dd != 1) {
        return false;
      }
      f[i] = dd == od;
    }
    if (od == 1) {
      continue;
    }
    bool same = k > 0;
    for (int32_t i = 0; same && i < n; i++) {
      same = full[k - 1][i] == f[i];
    }
    if (same) {
      sizes[k - 1] *= od;
    } else {
      sizes[k] = od;
      memcpy(full[k], f, sizeof(f));
      k++;
    }
  }
  if (k == 0) {
    sizes[0] = 1;
    for (int32_t i = 0; i < n; i++) {
      full[0][i] = true;
    }
    k = 1;
  }
  g->rank = k;
  for (int32_t i = 0; i < n; i++) {
    int64_t acc = 1;
    for (int32_t d = k - 1; d >= 0; d--) {
      g->st[i][d] = full[d][i] ? acc : 0;
      acc *= full[d][i] ? sizes[d] : 1;
    }
  }
  memcpy(g->dims, sizes, (size_t)k * sizeof(int64_t));
  g->inner = (size_t)sizes[k - 1];
  g->rows = 1;
  for (int32_t d = 0; d < k - 1; d++) {
    g->rows *= (size_t)sizes[d];
  }
  return true;
}

// Offsets of every operand at the start of output row |row|.
static void nd_row_offsets(const nd_geo_t *g, size_t row, int64_t *idx,
                           int64_t *off) {
  for (int32_t i = 0; i < g->n_op; i++) {
    off[i] = 0;
  }
  for (int32_t d = g->rank - 2; d >= 0; d--) {
    idx[d] = (int64_t)(row % (size_t)g->dims[d]);
    row /= (size_t)g->dims[d];
    for (int32_t i = 0; i < g->n_op; i++) {
      off[i] += idx[d] * g->st[i][d];
    }
  }
}

// Moves the offsets to the next output row.
static void nd_next_row(const nd_geo_t *g, int64_t *idx, int64_t *off) {
  for (int32_t d = g->rank - 2; d >= 0; d--) {
    for (int32_t i = 0; i < g->n_op; i++) {
      off[i] += g->st[i][d];
    }
    if (++idx[d] < g->dims[d]) {
      return;
    }
    for (int32_t i = 0; i < g->n_op; i++) {
      off[i] -= g->st[i][d] * g->dims[d];
    }
    idx[d] = 0;
  }
}

// Fills |n| elements of |es| bytes at |dst| with the element at |v|.
static void fill_elems(void *dst, size_t n, size_t es, const void *v) {
  switch (es) {
    case 1:
      memset(dst, *(const uint8_t *)v, n);
      break;
    case 2: {
      uint16_t x, *d = dst;
      memcpy(&x, v, 2);
      for (size_t i = 0; i < n; i++) {
        d[i] = x;
      }
      break;
    }
    case 4: {
      uint32_t x, *d = dst;
      memcpy(&x, v, 4);
      for (size_t i = 0; i < n; i++) {
        d[i] = x;
      }
      break;
    }
    case 8: {
      uint64_t x, *d = dst;
      memcpy(&x, v, 8);
      for (size_t i = 0; i < n; i++) {
        d[i] = x;
      }
      break;
    }
    default:
      for (size_t i = 0; i < n; i++) {
        memcpy((char *)dst + i * es, v, es);
      }
      break;
  }
}

// Copies |n| elements of |es| bytes: dst[i] = src[i * stride] for a
// stride of 0 or 1.
static void copy_run(void *dst, const void *src, size_t n, size_t es,
                     int64_t stride) {
  if (stride == 1) {
    memcpy(dst, src, n * es);
  } else {
    fill_elems(dst, n, es, src);
  }
}

// Element size of a plain-data dtype the copies serve (no strings).
static bool plain_size(uint32_t dtype, size_t *out) {
  *out = k_dtype_size(dtype);
  return *out > 0;
}

// ---------------------------------------------------------------- Where

typedef struct where_plan {
  nd_geo_t g;       // condition, X and Y onto the output
  size_t es;        // element size
  size_t count[4];  // elements of condition, X, Y, output
} where_plan_t;

static uint32_t where_query(const wm_op_desc *op, uint32_t *why,
                            const char **detail) {
  size_t es;
  if (op->n_in != 3 || op->in[0].dtype != K_BOOL ||
      op->in[1].dtype != op->in[2].dtype || !plain_size(op->in[1].dtype, &es) ||
      !k_has_output(op, 0) || op->out[0].dtype != op->in[1].dtype) {
    return k_none(why, detail, WM_WHY_DTYPE,
                  "bool condition and plain-data X and Y of one dtype");
  }
  if (es != 1 && es != 2 && es != 4 && es != 8) {
    return k_none(why, detail, WM_WHY_DTYPE, "element size above 8");
  }
  const wm_tensor_desc *ops[3] = {&op->in[0], &op->in[1], &op->in[2]};
  nd_geo_t g;
  if (op->out[0].rank > CPU_MAX_RANK || !nd_geometry(ops, 3, &op->out[0], &g)) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "inputs do not broadcast to the output");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *where_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  where_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  const wm_tensor_desc *ops[3] = {&op->in[0], &op->in[1], &op->in[2]};
  if (!nd_geometry(ops, 3, &op->out[0], &p->g)) {
    free(p);
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (Where): inputs do not broadcast to the "
                     "output",
                     op->name);
  }
  p->es = k_dtype_size(op->out[0].dtype);
  for (int i = 0; i < 3; i++) {
    p->count[i] = cpu_desc_count(&op->in[i]);
  }
  p->count[3] = cpu_desc_count(&op->out[0]);
  *out_state = p;
  return NULL;
}

typedef struct where_job {
  const where_plan_t *p;
  const uint8_t *c;
  const char *x, *v;
  char *y;
} where_job_t;

// One run of |n| outputs with strides SC, SX, SV (0 or 1) fixed.
#define WHERE_CASE(T, SC, SX, SV)       \
  for (size_t i = 0; i < n; i++) {      \
    T a = x[i * (SX)], b = v[i * (SV)]; \
    y[i] = c[i * (SC)] ? a : b;         \
  }

#define WHERE_RUN(T)                                                           \
  K_CLONES static void where_run_##T(const uint8_t *restrict c,                \
                                     const void *vx, const void *vv, void *vy, \
                                     size_t n, int code) {                     \
    const T *restrict x = vx;                                                  \
    const T *restrict v = vv;                                                  \
    T *restrict y = vy;                                                        \
    switch (code) {                                                            \
      case 7:                                                                  \
        WHERE_CASE(T, 1, 1, 1) break;                                          \
      case 6:                                                                  \
        WHERE_CASE(T, 0, 1, 1) break;                                          \
      case 5:                                                                  \
        WHERE_CASE(T, 1, 0, 1) break;                                          \
      case 4:                                                                  \
        WHERE_CASE(T, 0, 0, 1) break;                                          \
      case 3:                                                                  \
        WHERE_CASE(T, 1, 1, 0) break;                                          \
      case 2:                                                                  \
        WHERE_CASE(T, 0, 1, 0) break;                                          \
      case 1:                                                                  \
        WHERE_CASE(T, 1, 0, 0) break;                                          \
      default:                                                                 \
        WHERE_CASE(T, 0, 0, 0) break;                                          \
    }                                                                          \
  }

WHERE_RUN(uint8_t)
WHERE_RUN(uint16_t)
WHERE_RUN(uint32_t)
WHERE_RUN(uint64_t)

// Output elements [begin, end), a run of a row at a time.
static void where_chunk(void *ctx, size_t begin, size_t end) {
  const where_job_t *j = ctx;
  const nd_geo_t *g = &j->p->g;
  size_t es = j->p->es, inner = g->inner;
  int last = g->rank - 1;
  int64_t sc = g->st[0][last], sx = g->st[1][last], sv = g->st[2][last];
  int code = (int)sc | (int)sx << 1 | (int)sv << 2;
  int64_t idx[CPU_MAX_RANK] = {0}, off[MAX_OPERANDS];
  size_t row = begin / inner, col = begin % inner;
  nd_row_offsets(g, row, idx, off);
  for (size_t pos = begin; pos < end; row++) {
    size_t n = inner - col < end - pos ? inner - col : end - pos;
    const uint8_t *c = j->c + off[0] + (int64_t)col * sc;
    const char *x = j->x + (size_t)(off[1] + (int64_t)col * sx) * es;
    const char *v = j->v + (size_t)(off[2] + (int64_t)col * sv) * es;
    char *y = j->y + pos * es;
    switch (es) {
      case 1:
        where_run_uint8_t(c, x, v, y, n, code);
        break;
      case 2:
        where_run_uint16_t(c, x, v, y, n, code);
        break;
      case 4:
        where_run_uint32_t(c, x, v, y, n, code);
        break;
      default:
        where_run_uint64_t(c, x, v, y, n, code);
        break;
    }
    pos += n;
    col = 0;
    nd_next_row(g, idx, off);
  }
}

static wm_error *where_run(void *state, const cpu_run_t *run) {
  const where_plan_t *p = state;
  if (run->n_in != 3 || run->n_out < 1 || run->in[0].count != p->count[0] ||
      run->in[1].count != p->count[1] || run->in[2].count != p->count[2] ||
      run->out[0].count != p->count[3]) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "Where kernel: tensors do not match the plan");
  }
  if (p->count[3] == 0) {
    return NULL;
  }
  where_job_t j = {p, run->in[0].data, run->in[1].data, run->in[2].data,
                   run->out[0].data};
  k_for(run->pool, p->count[3], K_GRAIN, where_chunk, &j);
  return NULL;
}

// --------------------------------------------------------------- Expand

typedef struct expand_plan {
  nd_geo_t g;       // X onto the output
  size_t es;        // element size
  size_t count[2];  // elements of X and of the output
} expand_plan_t;

static uint32_t expand_query(const wm_op_desc *op, uint32_t *why,
                             const char **detail) {
  size_t es;
  if (op->n_in != 2 || !plain_size(op->in[0].dtype, &es) ||
      !k_has_output(op, 0) || op->out[0].dtype != op->in[0].dtype) {
    return k_none(why, detail, WM_WHY_DTYPE,
                  "plain-data dtypes only (no strings)");
  }
  const wm_tensor_desc *ops[1] = {&op->in[0]};
  nd_geo_t g;
  if (op->out[0].rank > CPU_MAX_RANK || !nd_geometry(ops, 1, &op->out[0], &g)) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "input does not broadcast to the output");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *expand_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  expand_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  const wm_tensor_desc *ops[1] = {&op->in[0]};
  if (!nd_geometry(ops, 1, &op->out[0], &p->g)) {
    free(p);
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (Expand): input does not broadcast to the "
                     "output",
                     op->name);
  }
  p->es = k_dtype_size(op->in[0].dtype);
  p->count[0] = cpu_desc_count(&op->in[0]);
  p->count[1] = cpu_desc_count(&op->out[0]);
  *out_state = p;
  return NULL;
}

typedef struct expand_job {
  const expand_plan_t *p;
  const char *x;
  char *y;
} expand_job_t;

// Output elements [begin, end), a run of a row at a time.
static void expand_chunk(void *ctx, size_t begin, size_t end) {
  const expand_job_t *j = ctx;
  const nd_geo_t *g = &j->p->g;
  size_t es = j->p->es, inner = g->inner;
  int64_t stride = g->st[0][g->rank - 1];
  int64_t idx[CPU_MAX_RANK] = {0}, off[MAX_OPERANDS];
  size_t row = begin / inner, col = begin % inner;
  nd_row_offsets(g, row, idx, off);
  for (size_t pos = begin; pos < end; row++) {
    size_t n = inner - col < end - pos ? inner - col : end - pos;
    copy_run(j->y + pos * es,
             j->x + (size_t)(off[0] + (int64_t)col * stride) * es, n, es,
             stride);
    pos += n;
    col = 0;
    nd_next_row(g, idx, off);
  }
}

static wm_error *expand_run(void *state, const cpu_run_t *run) {
  const expand_plan_t *p = state;
  if (run->n_out < 1 || run->in[0].count != p->count[0] ||
      run->out[0].count != p->count[1]) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "Expand kernel: tensors do not match the plan");
  }
  if (p->count[1] == 0) {
    return NULL;
  }
  expand_job_t j = {p, run->in[0].data, run->out[0].data};
  k_for(run->pool, p->count[1], 4 * K_GRAIN, expand_chunk, &j);
  return NULL;
}

// ----------------------------------------------------------------- Tile

typedef struct tile_plan {
  int32_t rank;                // rank (>= 1; a scalar is served as [1])
  int64_t in[CPU_MAX_RANK];    // input dims
  int64_t out[CPU_MAX_RANK];   // output dims
  int64_t istr[CPU_MAX_RANK];  // input strides
  size_t es;                   // element size
  size_t rows;                 // output rows (all dims but the last)
  size_t count[2];             // elements of input and output
} tile_plan_t;

static uint32_t tile_query(const wm_op_desc *op, uint32_t *why,
                           const char **detail) {
  size_t es;
  if (op->n_in != 2 || !plain_size(op->in[0].dtype, &es) ||
      !k_has_output(op, 0) || op->out[0].dtype != op->in[0].dtype) {
    return k_none(why, detail, WM_WHY_DTYPE,
                  "plain-data dtypes only (no strings)");
  }
  const wm_tensor_desc *x = &op->in[0], *y = &op->out[0];
  if (x->rank != y->rank || x->rank > CPU_MAX_RANK) {
    return k_none(why, detail, WM_WHY_RANK, "output rank differs");
  }
  for (uint32_t d = 0; d < x->rank; d++) {
    if (x->dims[d] == 0 ? y->dims[d] != 0 : y->dims[d] % x->dims[d] != 0) {
      return k_none(why, detail, WM_WHY_SHAPE,
                    "output dims are not multiples of the input's");
    }
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *tile_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  tile_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  const wm_tensor_desc *x = &op->in[0], *y = &op->out[0];
  p->rank = x->rank ? (int32_t)x->rank : 1;
  for (int32_t d = 0; d < p->rank; d++) {
    p->in[d] = x->rank ? x->dims[d] : 1;
    p->out[d] = x->rank ? y->dims[d] : 1;
  }
  int64_t s = 1;
  for (int32_t d = p->rank - 1; d >= 0; d--) {
    p->istr[d] = s;
    s *= p->in[d];
  }
  p->es = k_dtype_size(x->dtype);
  p->rows = 1;
  for (int32_t d = 0; d < p->rank - 1; d++) {
    p->rows *= (size_t)p->out[d];
  }
  p->count[0] = cpu_desc_count(x);
  p->count[1] = cpu_desc_count(y);
  *out_state = p;
  return NULL;
}

typedef struct tile_job {
  const tile_plan_t *p;
  const char *x;
  char *y;
} tile_job_t;

// Output row |row|: the input row it repeats, copied once, then doubled.
static void tile_chunk(void *ctx, size_t begin, size_t end) {
  const tile_job_t *j = ctx;
  const tile_plan_t *p = j->p;
  int32_t last = p->rank - 1;
  size_t es = p->es, in_row = (size_t)p->in[last] * es;
  size_t out_row = (size_t)p->out[last] * es;
  for (size_t row = begin; row < end; row++) {
    size_t rest = row;
    int64_t off = 0;
    for (int32_t d = last - 1; d >= 0; d--) {
      int64_t o = (int64_t)(rest % (size_t)p->out[d]);
      rest /= (size_t)p->out[d];
      off += (o % p->in[d]) * p->istr[d];
    }
    char *dst = j->y + row * out_row;
    const char *src = j->x + (size_t)off * es;
    if (in_row == es) {
      fill_elems(dst, (size_t)p->out[last], es, src);
      continue;
    }
    memcpy(dst, src, in_row);
    for (size_t have = in_row; have < out_row;) {
      size_t n = have < out_row - have ? have : out_row - have;
      memcpy(dst + have, dst, n);
      have += n;
    }
  }
}

static wm_error *tile_run(void *state, const cpu_run_t *run) {
  const tile_plan_t *p = state;
  if (run->n_out < 1 || run->in[0].count != p->count[0] ||
      run->out[0].count != p->count[1]) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "Tile kernel: tensors do not match the plan");
  }
  if (p->count[1] == 0) {
    return NULL;
  }
  tile_job_t j = {p, run->in[0].data, run->out[0].data};
  k_for(run->pool, p->rows,
        k_row_grain((size_t)p->out[p->rank - 1] * p->es, 4 * K_GRAIN),
        tile_chunk, &j);
  return NULL;
}

// ----------------------------------------------------------------- Cast

// The reference's conversions: floats through double (to integers
// truncated toward zero, saturated to int64 and wrapped to the width;
// NaN gives 0), integers wrap, bool is "nonzero", float16 and bfloat16
// round from float32 to nearest even.

static inline uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

// float16 to float32, exactly; branch-free so that loops vectorize.
static inline float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = ((uint32_t)h >> 10) & 0x1f;
  uint32_t man = (uint32_t)h & 0x3ff;
  uint32_t special = sign | 0x7f800000u | (man << 13);
  uint32_t normal = sign | ((exp + 112) << 23) | (man << 13);
  uint32_t sub = sign | f32_bits((float)man * 5.9604644775390625e-8f);
  uint32_t r = exp == 0x1f ? special : exp == 0 ? sub : normal;
  return k_bits_to_float((int32_t)r);
}

// float32 to float16 rounding to nearest even (overflow to infinity, NaN
// to the quiet NaN of its sign), as the reference; branch-free.
static inline uint16_t f32_to_f16(float f) {
  uint32_t u = f32_bits(f);
  uint32_t sign = (u >> 16) & 0x8000;
  uint32_t abs = u & 0x7fffffffu;
  uint32_t special = sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0);
  // Subnormal halves: units of 2^-24, rounded by the 2^23 trick (the
  // scaled value is below 2^10).
  float t = k_bits_to_float((int32_t)abs) * 16777216.0f;
  uint32_t sub = sign | (uint32_t)((t + 8388608.0f) - 8388608.0f);
  uint32_t h = (abs >> 13) - (112u << 10);
  uint32_t rest = abs & 0x1fff;
  h += rest > 0x1000 || (rest == 0x1000 && (h & 1));
  uint32_t r = abs >= 0x7f800000u   ? special
               : abs >= 0x477ff000u ? (sign | 0x7c00)
               : abs < 0x38800000u  ? sub
                                    : (sign | h);
  return (uint16_t)r;
}

static inline float bf16_to_f32(uint16_t h) {
  return k_bits_to_float((int32_t)((uint32_t)h << 16));
}

static inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  uint32_t nan = (u >> 16) | 0x40;
  uint32_t r = (u + 0x7fff + ((u >> 16) & 1)) >> 16;
  return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : r);
}

static inline int64_t f64_to_i64(double v) {
  if (v != v) {
    return 0;
  }
  if (v >= 9223372036854775807.0) {
    return INT64_MAX;
  }
  if (v <= -9223372036854775808.0) {
    return INT64_MIN;
  }
  return (int64_t)v;
}

static inline uint64_t f64_to_u64(double v) {
  if (v != v || v <= -1.0) {
    return (uint64_t)f64_to_i64(v);
  }
  if (v >= 18446744073709551615.0) {
    return UINT64_MAX;
  }
  return (uint64_t)v;
}

// Loads: a double for floats, int64 for signed integers and bool, uint64
// for unsigned integers.
#define L_F(x) ((double)(x))
#define L_H(x) ((double)f16_to_f32(x))
#define L_BH(x) ((double)bf16_to_f32(x))
#define L_I(x) ((int64_t)(x))
#define L_B(x) ((int64_t)((x) != 0))
#define L_U(x) ((uint64_t)(x))

// Stores into T from any of the three load types.
#define S_FLT(T, v) ((T)(double)(v))
#define S_H(T, v) f32_to_f16((float)(double)(v))
#define S_BH(T, v) f32_to_bf16((float)(double)(v))
#define S_INT(T, v) \
  _Generic((v), double : (T)f64_to_i64((double)(v)), default : (T)(v))
#define S_U64(T, v) \
  _Generic((v), double : f64_to_u64((double)(v)), default : (uint64_t)(v))
#define S_B(T, v) ((T)((v) != 0))

// The dtypes Cast serves: tag, C type, ONNX dtype, load or store rule.
#define CAST_SRCS(X)                  \
  X(f32, float, K_FLOAT, L_F)         \
  X(f64, double, K_DOUBLE, L_F)       \
  X(f16, uint16_t, K_FLOAT16, L_H)    \
  X(bf16, uint16_t, K_BFLOAT16, L_BH) \
  X(i8, int8_t, K_INT8, L_I)          \
  X(i16, int16_t, K_INT16, L_I)       \
  X(i32, int32_t, K_INT32, L_I)       \
  X(i64, int64_t, K_INT64, L_I)       \
  X(u8, uint8_t, K_UINT8, L_U)        \
  X(u16, uint16_t, K_UINT16, L_U)     \
  X(u32, uint32_t, K_UINT32, L_U)     \
  X(u64, uint64_t, K_UINT64, L_U)     \
  X(b, uint8_t, K_BOOL, L_B)

#define CAST_DSTS(X, S, ST, SD, SL)                  \
  X(S, ST, SD, SL, f32, float, K_FLOAT, S_FLT)       \
  X(S, ST, SD, SL, f64, double, K_DOUBLE, S_FLT)     \
  X(S, ST, SD, SL, f16, uint16_t, K_FLOAT16, S_H)    \
  X(S, ST, SD, SL, bf16, uint16_t, K_BFLOAT16, S_BH) \
  X(S, ST, SD, SL, i8, int8_t, K_INT8, S_INT)        \
  X(S, ST, SD, SL, i16, int16_t, K_INT16, S_INT)     \
  X(S, ST, SD, SL, i32, int32_t, K_INT32, S_INT)     \
  X(S, ST, SD, SL, i64, int64_t, K_INT64, S_INT)     \
  X(S, ST, SD, SL, u8, uint8_t, K_UINT8, S_INT)      \
  X(S, ST, SD, SL, u16, uint16_t, K_UINT16, S_INT)   \
  X(S, ST, SD, SL, u32, uint32_t, K_UINT32, S_INT)   \
  X(S, ST, SD, SL, u64, uint64_t, K_UINT64, S_U64)   \
  X(S, ST, SD, SL, b, uint8_t, K_BOOL, S_B)

typedef void (*cast_fn)(const void *x, void *y, size_t n);

#define CAST_FN(S, ST, SD, SL, D, DT, DD, DS)                               \
  K_CLONES static void cast_##S##_##D(const void *vx, void *vy, size_t n) { \
    const ST *restrict x = vx;                                              \
    DT *restrict y = vy;                                                    \
    for (size_t i = 0; i < n; i++) {                                        \
      y[i] = DS(DT, SL(x[i]));                                              \
    }                                                                       \
  }
#define CAST_FNS(S, ST, SD, SL) CAST_DSTS(CAST_FN, S, ST, SD, SL)
CAST_SRCS(CAST_FNS)

typedef struct cast_pair {
  uint32_t from, to;
  cast_fn fn;
} cast_pair_t;

#define CAST_ENTRY(S, ST, SD, SL, D, DT, DD, DS) {SD, DD, cast_##S##_##D},
#define CAST_ENTRIES(S, ST, SD, SL) CAST_DSTS(CAST_ENTRY, S, ST, SD, SL)
static const cast_pair_t cast_pairs[] = {CAST_SRCS(CAST_ENTRIES){0, 0, NULL}};

static cast_fn cast_find(uint32_t from, uint32_t to) {
  for (const cast_pair_t *c = cast_pairs; c->fn; c++) {
    if (c->from == from && c->to == to) {
      return c->fn;
    }
  }
  return NULL;
}

typedef struct cast_plan {
  cast_fn fn;    // the loop
  size_t in_es;  // element sizes
  size_t out_es;
  size_t count;  // elements
} cast_plan_t;

static uint32_t cast_query(const wm_op_desc *op, uint32_t *why,
                           const char **detail) {
  bool like = strcmp(op->op_type, "CastLike") == 0;
  if (op->n_in != (like ? 2u : 1u) || op->in[0].dtype == 0 ||
      !k_has_output(op, 0)) {
    return k_none(why, detail, WM_WHY_OTHER, "unexpected inputs");
  }
  if (like && op->in[1].dtype != op->out[0].dtype) {
    return k_none(why, detail, WM_WHY_DTYPE, "output dtype is not like's");
  }
  if (!cast_find(op->in[0].dtype, op->out[0].dtype)) {
    return k_none(why, detail, WM_WHY_DTYPE,
                  "between float, double, float16, bfloat16, bool and the "
                  "integers only");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *cast_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  cast_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  p->fn = cast_find(op->in[0].dtype, op->out[0].dtype);
  p->in_es = k_dtype_size(op->in[0].dtype);
  p->out_es = k_dtype_size(op->out[0].dtype);
  p->count = cpu_desc_count(&op->in[0]);
  if (!p->fn || cpu_desc_count(&op->out[0]) != p->count) {
    free(p);
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (%s): no conversion for this instance",
                     op->name, op->op_type);
  }
  *out_state = p;
  return NULL;
}

typedef struct cast_job {
  const cast_plan_t *p;
  const char *x;
  char *y;
} cast_job_t;

static void cast_chunk(void *ctx, size_t begin, size_t end) {
  const cast_job_t *j = ctx;
  j->p->fn(j->x + begin * j->p->in_es, j->y + begin * j->p->out_es,
           end - begin);
}

static wm_error *cast_run(void *state, const cpu_run_t *run) {
  const cast_plan_t *p = state;
  if (run->n_out < 1 || run->in[0].count != p->count ||
      run->out[0].count != p->count) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "Cast kernel: tensors do not match the plan");
  }
  cast_job_t j = {p, run->in[0].data, run->out[0].data};
  k_for(run->pool, p->count, K_GRAIN, cast_chunk, &j);
  return NULL;
}

// ------------------------------------------------------------------ Pad

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

typedef struct pad_plan {
  int mode;                    // PAD_*
  int32_t rank;                // rank (>= 1; a scalar is served as [1])
  int64_t in[CPU_MAX_RANK];    // input dims
  int64_t out[CPU_MAX_RANK];   // output dims
  int64_t istr[CPU_MAX_RANK];  // input strides
  int64_t *map[CPU_MAX_RANK];  // per dim and output position: the input
                               // position, -1 for the constant
  int64_t lo, hi;              // output columns [lo, hi) copy the input
                               // row contiguously
  size_t es;                   // element size
  bool value_input;            // the constant is input 2 (opset >= 11)
  unsigned char value[8];      // the constant (resolved "value" before)
  size_t rows;                 // output rows (all dims but the last)
  size_t count[2];             // elements of input and output
} pad_plan_t;

static void pad_destroy(void *state) {
  pad_plan_t *p = state;
  if (p) {
    free(p->map[0]);
    free(p);
  }
}

// The mode the host resolved; -1 when it resolved none.
static int pad_mode(const wm_op_desc *op) {
  const wm_op_attr *a = cpu_param(op, "mode");
  const char *m = a && a->type == 3 && a->s ? a->s : "";
  return strcmp(m, "constant") == 0  ? PAD_CONSTANT
         : strcmp(m, "reflect") == 0 ? PAD_REFLECT
         : strcmp(m, "edge") == 0    ? PAD_EDGE
         : strcmp(m, "wrap") == 0    ? PAD_WRAP
                                     : -1;
}

// The begin and end pads of every dim of |op| as the host resolved them;
// false when it resolved none.
static bool pad_amounts(const wm_op_desc *op, int64_t *begin, int64_t *end) {
  size_t rank = op->in[0].rank;
  int64_t pads[2 * CPU_MAX_RANK];
  if (rank > CPU_MAX_RANK || !cpu_param_ints(op, "pads", 2 * rank, pads)) {
    return false;
  }
  for (size_t d = 0; d < rank; d++) {
    begin[d] = pads[d];
    end[d] = pads[rank + d];
  }
  return true;
}

// Maps output coordinate |c| (already shifted by the begin pad) into
// [0, len) for |mode|; -1 for the constant.
static int64_t pad_source(int mode, int64_t c, int64_t len) {
  if (c >= 0 && c < len) {
    return c;
  }
  switch (mode) {
    case PAD_EDGE:
      return c < 0 ? 0 : len - 1;
    case PAD_WRAP:
      return ((c % len) + len) % len;
    case PAD_REFLECT: {
      if (len == 1) {
        return 0;
      }
      int64_t period = 2 * (len - 1);
      c = ((c % period) + period) % period;
      return c < len ? c : period - c;
    }
    default:
      return -1;
  }
}

// Stores double |v| as one element of |dtype| like the reference's
// attribute conversion.
static void pad_store_value(uint32_t dtype, double v, unsigned char *out) {
  cast_fn fn = cast_find(K_DOUBLE, dtype);
  uint64_t elem = 0;  // aligned for every element type
  if (fn) {
    fn(&v, &elem, 1);
  }
  memcpy(out, &elem, sizeof(elem));
}

static uint32_t pad_query(const wm_op_desc *op, uint32_t *why,
                          const char **detail) {
  size_t es;
  if (op->n_in < 1 || !plain_size(op->in[0].dtype, &es) || es > 8 ||
      !k_has_output(op, 0) || op->out[0].dtype != op->in[0].dtype) {
    return k_none(why, detail, WM_WHY_DTYPE,
                  "plain-data dtypes of at most 8 bytes only");
  }
  if (op->in[0].rank > CPU_MAX_RANK || op->out[0].rank != op->in[0].rank) {
    return k_none(why, detail, WM_WHY_RANK, "output rank differs");
  }
  int mode = pad_mode(op);
  int64_t begin[CPU_MAX_RANK], end[CPU_MAX_RANK];
  if (mode < 0 || !pad_amounts(op, begin, end)) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "mode and pads are resolved by the host for known shapes "
                  "and pads");
  }
  if (cpu_param(op, "value") && mode == PAD_CONSTANT &&
      !cast_find(K_DOUBLE, op->in[0].dtype)) {
    return k_none(why, detail, WM_WHY_DTYPE, "no conversion of the value");
  }
  if (!cpu_param(op, "value") && cpu_has_input(op, 2) &&
      op->in[2].dtype != op->in[0].dtype) {
    return k_none(why, detail, WM_WHY_DTYPE,
                  "constant_value must have the input's dtype");
  }
  for (uint32_t d = 0; d < op->in[0].rank; d++) {
    int64_t len = op->in[0].dims[d];
    if (len + begin[d] + end[d] != op->out[0].dims[d]) {
      return k_none(why, detail, WM_WHY_SHAPE,
                    "output dims differ from the padded input's");
    }
    if (mode != PAD_CONSTANT && len == 0 && op->out[0].dims[d] > 0) {
      return k_none(why, detail, WM_WHY_SHAPE,
                    "cannot pad an empty dim in a non-constant mode");
    }
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *pad_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  int64_t begin[CPU_MAX_RANK], end[CPU_MAX_RANK];
  if (!pad_amounts(op, begin, end) || pad_mode(op) < 0) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (Pad): no resolved mode and pads for these "
                     "shapes",
                     op->name);
  }
  pad_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  const wm_tensor_desc *x = &op->in[0], *y = &op->out[0];
  p->mode = pad_mode(op);
  p->rank = x->rank ? (int32_t)x->rank : 1;
  size_t total = 0;
  for (int32_t d = 0; d < p->rank; d++) {
    p->in[d] = x->rank ? x->dims[d] : 1;
    p->out[d] = x->rank ? y->dims[d] : 1;
    total += (size_t)p->out[d];
  }
  int64_t s = 1;
  for (int32_t d = p->rank - 1; d >= 0; d--) {
    p->istr[d] = s;
    s *= p->in[d];
  }
  p->map[0] = calloc(total + 1, sizeof(int64_t));
  if (!p->map[0]) {
    pad_destroy(p);
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  for (int32_t d = 0; d < p->rank; d++) {
    if (d > 0) {
      p->map[d] = p->map[d - 1] + p->out[d - 1];
    }
    for (int64_t o = 0; o < p->out[d]; o++) {
      p->map[d][o] =
          p->in[d] ? pad_source(p->mode, o - begin[d], p->in[d]) : -1;
    }
  }
  int32_t last = p->rank - 1;
  p->lo = begin[last] > 0 ? begin[last] : 0;
  p->hi = begin[last] + p->in[last];
  p->hi = p->hi < p->out[last] ? p->hi : p->out[last];
  p->hi = p->hi > p->lo ? p->hi : p->lo;
  p->es = k_dtype_size(x->dtype);
  const wm_op_attr *value = cpu_param(op, "value");
  p->value_input = !value;
  if (value && p->mode == PAD_CONSTANT) {
    pad_store_value(x->dtype, (double)value->f, p->value);
  }
  p->rows = 1;
  for (int32_t d = 0; d < last; d++) {
    p->rows *= (size_t)p->out[d];
  }
  p->count[0] = cpu_desc_count(x);
  p->count[1] = cpu_desc_count(y);
  *out_state = p;
  return NULL;
}

typedef struct pad_job {
  const pad_plan_t *p;
  const char *x;
  char *y;
  const unsigned char *value;
} pad_job_t;

// Gathers output columns [a, b) of one row from input row |src|.
static void pad_gather(const pad_plan_t *p, const int64_t *map, const char *src,
                       char *dst, int64_t a, int64_t b, const void *value) {
  size_t es = p->es;
  for (int64_t c = a; c < b; c++) {
    const void *from = map[c] < 0 ? value : src + (size_t)map[c] * es;
    memcpy(dst + (size_t)c * es, from, es);
  }
}

static void pad_chunk(void *ctx, size_t begin, size_t end) {
  const pad_job_t *j = ctx;
  const pad_plan_t *p = j->p;
  int32_t last = p->rank - 1;
  size_t es = p->es, out_row = (size_t)p->out[last];
  const int64_t *map = p->map[last];
  for (size_t row = begin; row < end; row++) {
    size_t rest = row;
    int64_t off = 0;
    bool outside = false;
    for (int32_t d = last - 1; d >= 0; d--) {
      int64_t o = (int64_t)(rest % (size_t)p->out[d]);
      rest /= (size_t)p->out[d];
      int64_t c = p->map[d][o];
      outside = outside || c < 0;
      off += c * p->istr[d];
    }
    char *dst = j->y + row * out_row * es;
    if (outside) {
      fill_elems(dst, out_row, es, j->value);
      continue;
    }
    const char *src = j->x + (size_t)off * es;
    if (p->mode == PAD_CONSTANT) {
      fill_elems(dst, (size_t)p->lo, es, j->value);
      fill_elems(dst + (size_t)p->hi * es, out_row - (size_t)p->hi, es,
                 j->value);
    } else {
      pad_gather(p, map, src, dst, 0, p->lo, j->value);
      pad_gather(p, map, src, dst, p->hi, (int64_t)out_row, j->value);
    }
    if (p->hi > p->lo) {
      memcpy(dst + (size_t)p->lo * es, src + (size_t)map[p->lo] * es,
             (size_t)(p->hi - p->lo) * es);
    }
  }
}

static wm_error *pad_run(void *state, const cpu_run_t *run) {
  const pad_plan_t *p = state;
  if (run->n_out < 1 || run->in[0].count != p->count[0] ||
      run->out[0].count != p->count[1]) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "Pad kernel: tensors do not match the plan");
  }
  unsigned char value[8] = {0};
  memcpy(value, p->value, sizeof(value));
  if (p->value_input && run->n_in > 2 && run->in[2].data &&
      run->in[2].count > 0) {
    if (run->in[2].dtype != run->in[0].dtype) {
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "Pad: constant_value has dtype %u, the data %u",
                       run->in[2].dtype, run->in[0].dtype);
    }
    memcpy(value, run->in[2].data, p->es);
  }
  if (p->count[1] == 0) {
    return NULL;
  }
  pad_job_t j = {p, run->in[0].data, run->out[0].data, value};
  k_for(run->pool, p->rows,
        k_row_grain((size_t)p->out[p->rank - 1] * p->es, 4 * K_GRAIN),
        pad_chunk, &j);
  return NULL;
}

// ---------------------------------------------------------------- Split

typedef struct split_plan {
  uint32_t n;       // outputs
  size_t outer;     // product of dims before the axis
  size_t in_row;    // bytes of one input row (dims from the axis)
  size_t *row;      // bytes of one row of each output
  size_t *offset;   // byte offset of each output within an input row
  size_t in_count;  // input elements
} split_plan_t;

static void split_destroy(void *state) {
  split_plan_t *p = state;
  if (p) {
    free(p->row);
    free(p);
  }
}

// The length along the axis of every output into |sizes|; the static text
// of the problem otherwise.
static const char *split_sizes(const wm_op_desc *op, int32_t axis,
                               int64_t *sizes) {
  int64_t sum = 0;
  for (uint32_t i = 0; i < op->n_out; i++) {
    if (!k_has_output(op, i)) {
      return "every output must be given";
    }
    if (op->out[i].rank != op->in[0].rank) {
      return "outputs must have the input's rank";
    }
    sizes[i] = op->out[i].dims[axis];
    sum += sizes[i];
  }
  return sum == op->in[0].dims[axis] ? NULL
                                     : "output sizes do not add up to the axis";
}

static uint32_t split_query(const wm_op_desc *op, uint32_t *why,
                            const char **detail) {
  size_t es;
  if (op->n_in < 1 || !plain_size(op->in[0].dtype, &es)) {
    return k_none(why, detail, WM_WHY_DTYPE,
                  "plain-data dtypes only (no strings)");
  }
  if (op->n_out < 1 || op->n_out > 64) {
    return k_none(why, detail, WM_WHY_OTHER, "1 to 64 outputs");
  }
  for (uint32_t i = 0; i < op->n_out; i++) {
    if (k_has_output(op, i) && op->out[i].dtype != op->in[0].dtype) {
      return k_none(why, detail, WM_WHY_DTYPE, "output dtype differs");
    }
  }
  int32_t axis;
  if (!cpu_param_axis(op, &axis)) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "the axis is resolved by the host for known shapes");
  }
  int64_t sizes[64];
  const char *bad = split_sizes(op, axis, sizes);
  if (bad) {
    return k_none(why, detail, WM_WHY_SHAPE, bad);
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *split_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  const wm_tensor_desc *x = &op->in[0];
  int32_t axis;
  int64_t sizes[64];
  const char *bad = NULL;
  if (op->n_out < 1 || op->n_out > 64 || !cpu_param_axis(op, &axis)) {
    bad = "bad axis or output count";
  } else {
    bad = split_sizes(op, axis, sizes);
  }
  if (bad) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT, "node \"%s\" (Split): %s",
                     op->name, bad);
  }
  split_plan_t *p = calloc(1, sizeof(*p));
  size_t *rows = calloc(2 * (size_t)op->n_out, sizeof(size_t));
  if (!p || !rows) {
    free(p);
    free(rows);
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  size_t es = k_dtype_size(x->dtype);
  size_t inner = k_desc_span(x, axis + 1, (int32_t)x->rank) * es;
  p->n = op->n_out;
  p->row = rows;
  p->offset = rows + op->n_out;
  p->outer = k_desc_span(x, 0, axis);
  p->in_row = (size_t)x->dims[axis] * inner;
  p->in_count = cpu_desc_count(x);
  size_t at = 0;
  for (uint32_t i = 0; i < p->n; i++) {
    p->row[i] = (size_t)sizes[i] * inner;
    p->offset[i] = at;
    at += p->row[i];
  }
  *out_state = p;
  return NULL;
}

typedef struct split_job {
  const split_plan_t *p;
  const char *x;
  const cpu_tensor_t *out;
} split_job_t;

static void split_chunk(void *ctx, size_t begin, size_t end) {
  const split_job_t *j = ctx;
  const split_plan_t *p = j->p;
  for (size_t o = begin; o < end; o++) {
    const char *src = j->x + o * p->in_row;
    for (uint32_t i = 0; i < p->n; i++) {
      if (j->out[i].data && p->row[i]) {
        memcpy((char *)j->out[i].data + o * p->row[i], src + p->offset[i],
               p->row[i]);
      }
    }
  }
}

static wm_error *split_run(void *state, const cpu_run_t *run) {
  const split_plan_t *p = state;
  if (run->n_out != p->n || run->in[0].count != p->in_count) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "Split kernel: tensors do not match the plan");
  }
  for (uint32_t i = 0; i < p->n; i++) {
    size_t es = k_dtype_size(run->in[0].dtype);
    if (run->out[i].data && run->out[i].count * es != p->outer * p->row[i]) {
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "Split kernel: output %u does not match the plan", i);
    }
  }
  if (p->in_count == 0) {
    return NULL;
  }
  split_job_t j = {p, run->in[0].data, run->out};
  k_for(run->pool, p->outer, k_row_grain(p->in_row, 4 * K_GRAIN), split_chunk,
        &j);
  return NULL;
}

// ---------------------------------------------------------------- Trilu

typedef struct trilu_plan {
  bool upper;   // keep col - row >= k (else <= k)
  size_t rows;  // of each matrix
  size_t cols;
  size_t es;     // element size
  size_t count;  // elements
} trilu_plan_t;

static uint32_t trilu_query(const wm_op_desc *op, uint32_t *why,
                            const char **detail) {
  size_t es = k_dtype_size(op->in[0].dtype);
  if (op->n_in < 1 || es == 0 || !k_has_output(op, 0) ||
      op->out[0].dtype != op->in[0].dtype) {
    return k_none(why, detail, WM_WHY_DTYPE,
                  "plain-data dtypes only (no strings)");
  }
  if (op->in[0].rank < 2) {
    return k_none(why, detail, WM_WHY_RANK, "rank at least 2");
  }
  if (cpu_has_input(op, 1) &&
      (!k_is_int(op->in[1].dtype) || cpu_desc_count(&op->in[1]) != 1)) {
    return k_none(why, detail, WM_WHY_DTYPE, "k must be one integer");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *trilu_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  const wm_tensor_desc *x = &op->in[0];
  trilu_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  p->upper = cpu_attr_int(op, "upper", 1) != 0;
  p->rows = (size_t)x->dims[x->rank - 2];
  p->cols = (size_t)x->dims[x->rank - 1];
  p->es = k_dtype_size(x->dtype);
  p->count = cpu_desc_count(x);
  *out_state = p;
  return NULL;
}

typedef struct trilu_job {
  const trilu_plan_t *p;
  int64_t k;
  const char *x;
  char *y;
} trilu_job_t;

// Matrix rows [begin, end) of all matrices: the kept columns copied, the
// others zero.
static void trilu_chunk(void *ctx, size_t begin, size_t end) {
  const trilu_job_t *j = ctx;
  const trilu_plan_t *p = j->p;
  int64_t cols = (int64_t)p->cols;
  size_t es = p->es;
  for (size_t r = begin; r < end; r++) {
    int64_t row = (int64_t)(r % p->rows);
    int64_t lo = p->upper ? row + j->k : 0;
    int64_t hi = p->upper ? cols : row + j->k + 1;
    lo = lo < 0 ? 0 : lo > cols ? cols : lo;
    hi = hi < lo ? lo : hi > cols ? cols : hi;
    char *dst = j->y + r * p->cols * es;
    const char *src = j->x + r * p->cols * es;
    memset(dst, 0, (size_t)lo * es);
    memcpy(dst + (size_t)lo * es, src + (size_t)lo * es,
           (size_t)(hi - lo) * es);
    memset(dst + (size_t)hi * es, 0, (size_t)(cols - hi) * es);
  }
}

static wm_error *trilu_run(void *state, const cpu_run_t *run) {
  const trilu_plan_t *p = state;
  if (run->n_out < 1 || run->in[0].count != p->count ||
      run->out[0].count != p->count) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "Trilu kernel: tensors do not match the plan");
  }
  int64_t k = 0;
  if (run->n_in > 1 && run->in[1].data) {
    if (!k_is_int(run->in[1].dtype) || run->in[1].count != 1) {
      return cpu_error(WM_ERR_INVALID_ARGUMENT, "Trilu: k must be one integer");
    }
    k = k_load_int(run->in[1].data, run->in[1].dtype, 0);
  }
  // Beyond +-(rows + cols) every k keeps or drops the same columns.
  int64_t lim = (int64_t)(p->rows + p->cols) + 1;
  k = k < -lim ? -lim : k > lim ? lim : k;
  if (p->count == 0) {
    return NULL;
  }
  trilu_job_t j = {p, k, run->in[0].data, run->out[0].data};
  k_for(run->pool, p->count / p->cols,
        k_row_grain(p->cols * p->es, 4 * K_GRAIN), trilu_chunk, &j);
  return NULL;
}

// ----------------------------------------------- DepthToSpace, SpaceToDepth

// Both are one strided copy: the output, contiguous, seen as six dims,
// read from the input through strides (as the reference's view).
typedef struct d2s_plan {
  int64_t dims[6];  // output view
  int64_t src[6];   // input strides per view dim
  size_t es;        // element size
  size_t count;     // elements
} d2s_plan_t;

// Fills |p| for |op|; the static text of the problem otherwise.
static const char *d2s_setup(const wm_op_desc *op, d2s_plan_t *p) {
  bool to_space = strcmp(op->op_type, "DepthToSpace") == 0;
  size_t es = k_dtype_size(op->in[0].dtype);
  if (op->n_in != 1 || (es != 1 && es != 2 && es != 4 && es != 8) ||
      !k_has_output(op, 0) || op->out[0].dtype != op->in[0].dtype) {
    return "plain data of up to 8 bytes";
  }
  const wm_tensor_desc *x = &op->in[0], *y = &op->out[0];
  int64_t b = cpu_attr_int(op, "blocksize", 0);
  if (x->rank != 4 || y->rank != 4 || b <= 0 || b > (1 << 20)) {
    return "rank 4 and a blocksize in [1, 2^20]";
  }
  const char *mode = op->opset >= (to_space ? 11u : 28u)
                         ? cpu_attr_string(op, "mode", "DCR")
                         : "DCR";
  bool crd = strcmp(mode, "CRD") == 0;
  if (!crd && strcmp(mode, "DCR") != 0) {
    return "mode must be DCR or CRD";
  }
  int64_t n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
  int64_t want[4];
  if (to_space) {
    if (c % (b * b) != 0) {
      return "channels are not a multiple of blocksize^2";
    }
    int64_t oc = c / (b * b), hw = h * w;
    int64_t v[6] = {n, oc, h, b, w, b};
    int64_t sd[6] = {c * hw, crd ? b * b * hw : hw,
                     w,      crd ? b * hw : b * oc * hw,
                     1,      crd ? hw : oc * hw};
    memcpy(p->dims, v, sizeof(v));
    memcpy(p->src, sd, sizeof(sd));
    int64_t o[4] = {n, oc, h * b, w * b};
    memcpy(want, o, sizeof(o));
  } else {
    if (h % b != 0 || w % b != 0) {
      return "spatial dims are not multiples of blocksize";
    }
    int64_t hw = h * w;
    int64_t vd[6] = {n, b, b, c, h / b, w / b},
            vc[6] = {n, c, b, b, h / b, w / b};
    int64_t sd[6] = {c * hw, w, 1, hw, b * w, b};
    int64_t sc[6] = {c * hw, hw, w, 1, b * w, b};
    memcpy(p->dims, crd ? vc : vd, sizeof(vd));
    memcpy(p->src, crd ? sc : sd, sizeof(sd));
    int64_t o[4] = {n, c * b * b, h / b, w / b};
    memcpy(want, o, sizeof(o));
  }
  for (int d = 0; d < 4; d++) {
    if (y->dims[d] != want[d]) {
      return "output dims differ";
    }
  }
  p->es = es;
  p->count = cpu_desc_count(x);
  return NULL;
}

static uint32_t d2s_query(const wm_op_desc *op, uint32_t *why,
                          const char **detail) {
  d2s_plan_t p;
  const char *bad = d2s_setup(op, &p);
  return bad ? k_none(why, detail, WM_WHY_ATTR, bad) : WM_SUPPORT_SUPPORTED;
}

static wm_error *d2s_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  d2s_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  const char *bad = d2s_setup(op, p);
  if (bad) {
    free(p);
    return cpu_error(WM_ERR_INVALID_ARGUMENT, "node \"%s\" (%s): %s", op->name,
                     op->op_type, bad);
  }
  *out_state = p;
  return NULL;
}

typedef struct d2s_job {
  const d2s_plan_t *p;
  const char *x;
  char *y;
} d2s_job_t;

#define D2S_BLOCK(T)                                     \
  do {                                                   \
    const T *restrict xs = (const T *)(const void *)src; \
    T *restrict ys = (T *)(void *)dst;                   \
    for (int64_t i = 0; i < d4; i++) {                   \
      for (int64_t k = 0; k < d5; k++) {                 \
        ys[i * d5 + k] = xs[i * s4 + k * s5];            \
      }                                                  \
    }                                                    \
  } while (0)

// Output rows (the first four view dims) [begin, end).
static void d2s_chunk(void *ctx, size_t begin, size_t end) {
  const d2s_job_t *j = ctx;
  const d2s_plan_t *p = j->p;
  int64_t d4 = p->dims[4], d5 = p->dims[5], s4 = p->src[4], s5 = p->src[5];
  size_t es = p->es, row = (size_t)(d4 * d5);
  for (size_t r = begin; r < end; r++) {
    size_t rest = r;
    int64_t off = 0;
    for (int d = 3; d >= 0; d--) {
      off += (int64_t)(rest % (size_t)p->dims[d]) * p->src[d];
      rest /= (size_t)p->dims[d];
    }
    const char *src = j->x + (size_t)off * es;
    char *dst = j->y + r * row * es;
    switch (es) {
      case 1:
        D2S_BLOCK(uint8_t);
        break;
      case 2:
        D2S_BLOCK(uint16_t);
        break;
      case 4:
        D2S_BLOCK(uint32_t);
        break;
      default:
        D2S_BLOCK(uint64_t);
        break;
    }
  }
}

static wm_error *d2s_run(void *state, const cpu_run_t *run) {
  const d2s_plan_t *p = state;
  if (run->n_out < 1 || run->in[0].count != p->count ||
      run->out[0].count != p->count) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "DepthToSpace/SpaceToDepth kernel: tensors do not match "
                     "the plan");
  }
  if (p->count == 0) {
    return NULL;
  }
  d2s_job_t j = {p, run->in[0].data, run->out[0].data};
  size_t rows = (size_t)(p->dims[0] * p->dims[1] * p->dims[2] * p->dims[3]);
  k_for(run->pool, rows,
        k_row_grain((size_t)(p->dims[4] * p->dims[5]), K_GRAIN), d2s_chunk, &j);
  return NULL;
}

// --------------------------------------------------------------- table

#define K(name, since, q, p, r, d) \
  { name, since, WM_IMPL_NATIVE_KERNEL, q, p, r, d, NULL, NULL, NULL }

const cpu_kernel_t cpu_kernels_shape[] = {
    K("Where", 9, where_query, where_plan, where_run, free),
    K("Expand", 8, expand_query, expand_plan, expand_run, free),
    K("Tile", 6, tile_query, tile_plan, tile_run, free),
    K("Cast", 1, cast_query, cast_plan, cast_run, free),
    K("CastLike", 15, cast_query, cast_plan, cast_run, free),
    K("Pad", 1, pad_query, pad_plan, pad_run, pad_destroy),
    K("Split", 1, split_query, split_plan, split_run, split_destroy),
    K("Trilu", 14, trilu_query, trilu_plan, trilu_run, free),
    K("DepthToSpace", 1, d2s_query, d2s_plan, d2s_run, free),
    K("SpaceToDepth", 1, d2s_query, d2s_plan, d2s_run, free),
    {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
