// Data-movement and reduction kernels of the cpu backend: the reshaping
// family as plain copies, Transpose, Concat, Slice, Gather, the ten
// Reduce* operators on float32, and ArgMax/ArgMin.
//
// Kernels move elements by size, not dtype, so every plain-data dtype is
// served (strings are not: their elements are host-owned pointers).
// Parameters that arrive as inputs (Slice lists, Reduce axes) are read
// from the input tensors at every run, so a plan never keeps values that
// could change between runs and non-constant lists are served too.

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

// Bytes a parallel copy chunk moves at least.
enum { COPY_GRAIN = 1 << 18 };

// Answers for input 0's dtype: plain data with a known element size.
static uint32_t plain_dtype(const wm_op_desc *op, uint32_t *why,
                            const char **detail) {
  if (op->n_in < 1 || k_dtype_size(op->in[0].dtype) == 0 ||
      !k_has_output(op, 0) || op->out[0].dtype != op->in[0].dtype) {
    return k_none(why, detail, WM_WHY_DTYPE,
                  "plain-data dtypes only (no strings)");
  }
  if (op->in[0].rank > CPU_MAX_RANK || op->out[0].rank > CPU_MAX_RANK) {
    return k_none(why, detail, WM_WHY_RANK, "rank above 8");
  }
  return WM_SUPPORT_SUPPORTED;
}

// --------------------------------------------------------------- copies

typedef struct copy_job {
  const char *src;
  char *dst;
} copy_job_t;

static void copy_chunk(void *ctx, size_t begin, size_t end) {
  const copy_job_t *j = ctx;
  memcpy(j->dst + begin, j->src + begin, end - begin);
}

// Copies |bytes| from |src| to |dst| on the pool.
static void par_copy(wm_pool_t *pool, void *dst, const void *src,
                     size_t bytes) {
  copy_job_t j = {src, dst};
  k_for(pool, bytes, COPY_GRAIN, copy_chunk, &j);
}

typedef struct copy_plan {
  size_t bytes;  // bytes of input and output
} copy_plan_t;

static uint32_t copy_query(const wm_op_desc *op, uint32_t *why,
                           const char **detail) {
  return plain_dtype(op, why, detail);
}

static wm_error *copy_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  if (!k_dims_known(&op->in[0]) || !k_dims_known(&op->out[0]) ||
      cpu_desc_count(&op->in[0]) != cpu_desc_count(&op->out[0])) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (%s): output and input element counts "
                     "differ or are unknown",
                     op->name, op->op_type);
  }
  copy_plan_t *p = malloc(sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  p->bytes = cpu_desc_count(&op->in[0]) * k_dtype_size(op->in[0].dtype);
  *out_state = p;
  return NULL;
}

static wm_error *copy_run(void *state, const cpu_run_t *run) {
  const copy_plan_t *p = state;
  size_t es = k_dtype_size(run->in[0].dtype);
  if (run->in[0].count * es != p->bytes || run->out[0].count * es != p->bytes) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "copy kernel: tensors do not match the plan");
  }
  if (p->bytes && run->out[0].data != run->in[0].data) {
    par_copy(run->pool, run->out[0].data, run->in[0].data, p->bytes);
  }
  return NULL;
}

// -------------------------------------------------------------- Dropout

// Inference Dropout: the identity with an all-true mask. Training mode
// must be a constant false (or ratio a constant 0): a random mask has no
// reference to agree with.
static uint32_t dropout_query(const wm_op_desc *op, uint32_t *why,
                              const char **detail) {
  uint32_t level = plain_dtype(op, why, detail);
  if (level == WM_SUPPORT_NONE) {
    return level;
  }
  if (op->n_out > 1 && k_has_output(op, 1) &&
      (op->out[1].dtype != (op->opset >= 10 ? K_BOOL : K_FLOAT) ||
       (op->opset < 10 && op->in[0].dtype != K_FLOAT))) {
    return k_none(why, detail, WM_WHY_DTYPE, "bool (float before 10) mask");
  }
  if (op->opset >= 12 && cpu_has_input(op, 2)) {
    const void *t = k_const_input(op, 2);
    const void *r = k_const_input(op, 1);
    bool train = !t || op->in[2].dtype != K_BOOL ||
                 cpu_desc_count(&op->in[2]) != 1 || *(const uint8_t *)t != 0;
    bool zero = r && op->in[1].dtype == K_FLOAT &&
                cpu_desc_count(&op->in[1]) == 1 && *(const float *)r == 0.0f;
    if (train && !zero) {
      return k_none(why, detail, WM_WHY_ATTR,
                    "training_mode must be a constant false");
    }
  }
  if (op->opset >= 12 && cpu_has_input(op, 1) &&
      (op->in[1].dtype != K_FLOAT && op->in[1].dtype != K_DOUBLE)) {
    return k_none(why, detail, WM_WHY_DTYPE, "float or double ratio");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *dropout_run(void *state, const cpu_run_t *run) {
  wm_error *e = copy_run(state, run);
  if (e) {
    return e;
  }
  if (run->n_in > 1 && run->in[1].data && run->in[1].count > 0) {
    double ratio = run->in[1].dtype == K_FLOAT
                       ? (double)((const float *)run->in[1].data)[0]
                       : ((const double *)run->in[1].data)[0];
    if (!(ratio >= 0 && ratio < 1)) {
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "Dropout: ratio is %g, want [0, 1)", ratio);
    }
  }
  if (run->n_out > 1 && run->out[1].data) {
    const cpu_tensor_t *m = &run->out[1];
    if (m->dtype == K_BOOL) {
      memset(m->data, 1, m->count);
    } else {
      float *f = m->data;
      for (size_t i = 0; i < m->count; i++) {
        f[i] = 1.0f;
      }
    }
  }
  return NULL;
}

// ------------------------------------------------------------ Transpose

enum { TILE = 32 };

typedef struct tr_plan {
  size_t es;                 // element size
  int32_t rank;              // collapsed output rank
  int64_t od[CPU_MAX_RANK];  // collapsed output dims
  int64_t is[CPU_MAX_RANK];  // input stride of each output dim
  int64_t os[CPU_MAX_RANK];  // output stride of each output dim
  int32_t j;                 // output dim with input stride 1
  size_t count;              // elements
  int32_t pd[CPU_MAX_RANK];  // plane dims: all but j and rank - 1
  int32_t n_pd;              // their number
  size_t planes;             // product of the plane dims
  size_t tiles;              // tiles of dim j per plane
} tr_plan_t;

// The permutation the host resolved; false when it resolved none.
static bool tr_perm(const wm_op_desc *op, int32_t rank, int32_t *perm) {
  int64_t v[CPU_MAX_RANK];
  if (rank > CPU_MAX_RANK || !cpu_param_ints(op, "perm", (size_t)rank, v)) {
    return false;
  }
  for (int32_t d = 0; d < rank; d++) {
    perm[d] = (int32_t)v[d];
  }
  return true;
}

static uint32_t tr_query(const wm_op_desc *op, uint32_t *why,
                         const char **detail) {
  uint32_t level = plain_dtype(op, why, detail);
  if (level == WM_SUPPORT_NONE) {
    return level;
  }
  int32_t perm[CPU_MAX_RANK];
  if (!tr_perm(op, (int32_t)op->in[0].rank, perm)) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "perm is resolved by the host for known shapes");
  }
  switch (k_dtype_size(op->in[0].dtype)) {
    case 1:
    case 2:
    case 4:
    case 8:
      return WM_SUPPORT_SUPPORTED;
    default:
      return k_none(why, detail, WM_WHY_DTYPE, "element size above 8");
  }
}

static wm_error *tr_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  const wm_tensor_desc *x = &op->in[0];
  int32_t rank = (int32_t)x->rank, perm[CPU_MAX_RANK];
  if (!k_dims_known(x) || !tr_perm(op, rank, perm)) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (Transpose): bad perm or unknown dims",
                     op->name);
  }
  tr_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  p->es = k_dtype_size(x->dtype);
  p->count = cpu_desc_count(x);
  int64_t istr[CPU_MAX_RANK];
  int64_t s = 1;
  for (int32_t d = rank - 1; d >= 0; d--) {
    istr[d] = s;
    s *= x->dims[d];
  }
  // Output dims in order, dropping 1s and merging runs that are also
  // consecutive in the input.
  int32_t n = 0;
  for (int32_t d = 0; d < rank; d++) {
    int32_t a = perm[d];
    int64_t dim = x->dims[a];
    if (dim == 1) {
      continue;
    }
    if (n > 0 && istr[a] * dim == p->is[n - 1]) {
      p->od[n - 1] *= dim;
      p->is[n - 1] = istr[a];
    } else {
      p->od[n] = dim;
      p->is[n] = istr[a];
      n++;
    }
  }
  if (n == 0) {
    p->od[0] = 1;
    p->is[0] = 1;
    n = 1;
  }
  p->rank = n;
  s = 1;
  for (int32_t d = n - 1; d >= 0; d--) {
    p->os[d] = s;
    s *= p->od[d];
  }
  p->j = n - 1;
  for (int32_t d = 0; d < n; d++) {
    if (p->is[d] == 1) {
      p->j = d;
    }
  }
  p->planes = 1;
  for (int32_t d = 0; d < n - 1; d++) {
    if (d != p->j) {
      p->pd[p->n_pd++] = d;
      p->planes *= (size_t)p->od[d];
    }
  }
  p->tiles = p->j == n - 1 ? 1 : ((size_t)p->od[p->j] + TILE - 1) / TILE;
  *out_state = p;
  return NULL;
}

typedef struct tr_job {
  const tr_plan_t *p;
  const char *x;
  char *y;
} tr_job_t;

// Copies a rows x cols block: y[r * ys + c] = x[r + c * xs].
#define TR_BLOCK(T)                                      \
  do {                                                   \
    const T *restrict xx = (const T *)xb;                \
    T *restrict yy = (T *)yb;                            \
    for (size_t r = 0; r < rows; r++) {                  \
      for (size_t c = 0; c < cols; c++) {                \
        yy[r * (size_t)ys + c] = xx[r + c * (size_t)xs]; \
      }                                                  \
    }                                                    \
  } while (0)

static void tr_block(size_t es, const char *xb, char *yb, size_t rows,
                     size_t cols, int64_t xs, int64_t ys) {
  switch (es) {
    case 1:
      TR_BLOCK(uint8_t);
      break;
    case 2:
      TR_BLOCK(uint16_t);
      break;
    case 4:
      TR_BLOCK(uint32_t);
      break;
    default:
      TR_BLOCK(uint64_t);
      break;
  }
}

static void tr_chunk(void *ctx, size_t begin, size_t end) {
  const tr_job_t *jb = ctx;
  const tr_plan_t *p = jb->p;
  int32_t last = p->rank - 1;
  size_t es = p->es;
  for (size_t item = begin; item < end; item++) {
    size_t plane = item / p->tiles, tile = item % p->tiles;
    int64_t xo = 0, yo = 0;
    size_t rest = plane;
    for (int32_t k = p->n_pd - 1; k >= 0; k--) {
      int32_t d = p->pd[k];
      int64_t i = (int64_t)(rest % (size_t)p->od[d]);
      rest /= (size_t)p->od[d];
      xo += i * p->is[d];
      yo += i * p->os[d];
    }
    if (p->j == last) {
      // Rows of the output are contiguous in the input.
      memcpy(jb->y + (size_t)yo * es, jb->x + (size_t)xo * es,
             (size_t)p->od[last] * es);
      continue;
    }
    size_t r0 = tile * TILE;
    size_t r1 =
        r0 + TILE < (size_t)p->od[p->j] ? r0 + TILE : (size_t)p->od[p->j];
    for (size_t c0 = 0; c0 < (size_t)p->od[last]; c0 += TILE) {
      size_t c1 =
          c0 + TILE < (size_t)p->od[last] ? c0 + TILE : (size_t)p->od[last];
      const char *xb =
          jb->x + (size_t)(xo + (int64_t)r0 + (int64_t)c0 * p->is[last]) * es;
      char *yb =
          jb->y + (size_t)(yo + (int64_t)r0 * p->os[p->j] + (int64_t)c0) * es;
      tr_block(es, xb, yb, r1 - r0, c1 - c0, p->is[last], p->os[p->j]);
    }
  }
}

static wm_error *tr_run(void *state, const cpu_run_t *run) {
  const tr_plan_t *p = state;
  if (run->in[0].count != p->count || run->out[0].count != p->count) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "Transpose kernel: tensors do not match the plan");
  }
  if (p->count == 0) {
    return NULL;
  }
  if (p->rank == 1) {
    par_copy(run->pool, run->out[0].data, run->in[0].data, p->count * p->es);
    return NULL;
  }
  tr_job_t j = {p, run->in[0].data, run->out[0].data};
  size_t per_item = p->j == p->rank - 1
                        ? (size_t)p->od[p->rank - 1]
                        : (size_t)TILE * (size_t)p->od[p->rank - 1];
  k_for(run->pool, p->planes * p->tiles, k_row_grain(per_item, K_GRAIN),
        tr_chunk, &j);
  return NULL;
}

// --------------------------------------------------------------- Concat

typedef struct concat_plan {
  uint32_t n;        // inputs
  size_t outer;      // product of dims before the axis
  size_t out_row;    // bytes of one output row (dims from the axis)
  size_t *in_row;    // bytes of one row of each input
  size_t *in_count;  // elements of each input
} concat_plan_t;

static void concat_destroy(void *state) {
  concat_plan_t *p = state;
  if (p) {
    free(p->in_row);
    free(p);
  }
}

static uint32_t concat_query(const wm_op_desc *op, uint32_t *why,
                             const char **detail) {
  uint32_t level = plain_dtype(op, why, detail);
  if (level == WM_SUPPORT_NONE) {
    return level;
  }
  for (uint32_t i = 1; i < op->n_in; i++) {
    if (op->in[i].dtype != op->in[0].dtype ||
        op->in[i].rank != op->in[0].rank) {
      return k_none(why, detail, WM_WHY_DTYPE,
                    "inputs differ in dtype or rank");
    }
  }
  int32_t axis;
  if (!cpu_param_axis(op, &axis)) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "the axis is resolved by the host for known shapes");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *concat_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  int32_t rank = (int32_t)op->out[0].rank, axis;
  if (!cpu_param_axis(op, &axis) || !k_dims_known(&op->out[0])) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (Concat): bad axis or unknown dims",
                     op->name);
  }
  concat_plan_t *p = calloc(1, sizeof(*p));
  size_t *rows = calloc(2 * (size_t)op->n_in + 1, sizeof(size_t));
  if (!p || !rows) {
    free(p);
    free(rows);
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  p->n = op->n_in;
  p->in_row = rows;
  p->in_count = rows + op->n_in;
  size_t es = k_dtype_size(op->out[0].dtype);
  p->outer = k_desc_span(&op->out[0], 0, axis);
  p->out_row = k_desc_span(&op->out[0], axis, rank) * es;
  size_t total = 0;
  for (uint32_t i = 0; i < op->n_in; i++) {
    const wm_tensor_desc *d = &op->in[i];
    bool ok = (int32_t)d->rank == rank && k_dims_known(d);
    for (int32_t k = 0; ok && k < rank; k++) {
      ok = k == axis || d->dims[k] == op->out[0].dims[k];
    }
    if (!ok) {
      concat_destroy(p);
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "node \"%s\" (Concat): input %u does not fit the "
                       "output shape",
                       op->name, i);
    }
    p->in_row[i] = k_desc_span(d, axis, rank) * es;
    p->in_count[i] = cpu_desc_count(d);
    total += p->in_row[i];
  }
  if (total != p->out_row) {
    size_t want = p->out_row;
    concat_destroy(p);
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (Concat): input rows of %zu bytes do not "
                     "fill output rows of %zu",
                     op->name, total, want);
  }
  *out_state = p;
  return NULL;
}

typedef struct concat_job {
  const concat_plan_t *p;
  const cpu_tensor_t *in;
  char *y;
} concat_job_t;

static void concat_chunk(void *ctx, size_t begin, size_t end) {
  const concat_job_t *j = ctx;
  const concat_plan_t *p = j->p;
  for (size_t o = begin; o < end; o++) {
    char *dst = j->y + o * p->out_row;
    for (uint32_t i = 0; i < p->n; i++) {
      size_t b = p->in_row[i];
      if (b) {
        memcpy(dst, (const char *)j->in[i].data + o * b, b);
        dst += b;
      }
    }
  }
}

static wm_error *concat_run(void *state, const cpu_run_t *run) {
  const concat_plan_t *p = state;
  if (run->n_in != p->n) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "Concat kernel: %u inputs, planned %u", run->n_in, p->n);
  }
  for (uint32_t i = 0; i < p->n; i++) {
    if (run->in[i].count != p->in_count[i]) {
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "Concat kernel: input %u does not match the plan", i);
    }
  }
  if (p->out_row == 0 || p->outer == 0) {
    return NULL;
  }
  if (p->outer == 1) {
    char *dst = run->out[0].data;
    for (uint32_t i = 0; i < p->n; i++) {
      if (p->in_row[i]) {
        par_copy(run->pool, dst, run->in[i].data, p->in_row[i]);
        dst += p->in_row[i];
      }
    }
    return NULL;
  }
  concat_job_t j = {p, run->in, run->out[0].data};
  k_for(run->pool, p->outer, k_row_grain(p->out_row, COPY_GRAIN), concat_chunk,
        &j);
  return NULL;
}

// ---------------------------------------------------------------- Slice

typedef struct slice_geo {
  int32_t rank;
  int64_t base;  // input offset every row adds
  int64_t start[CPU_MAX_RANK];
  int64_t step[CPU_MAX_RANK];
  int64_t len[CPU_MAX_RANK];
  int64_t istr[CPU_MAX_RANK];
} slice_geo_t;

typedef struct slice_plan {
  size_t es;        // element size
  size_t in_count;  // input elements
  slice_geo_t g;    // the slice, coalesced
} slice_plan_t;

// The slice of |op| from the host's resolved starts and steps and the
// output dims (the counts taken); false when the host resolved none.
static bool slice_geometry(const wm_op_desc *op, slice_geo_t *g) {
  const wm_tensor_desc *x = &op->in[0], *y = &op->out[0];
  int32_t rank = (int32_t)x->rank;
  if (!k_dims_known(x) || !k_dims_known(y) || y->rank != x->rank ||
      !cpu_param_ints(op, "starts", (size_t)rank, g->start) ||
      !cpu_param_ints(op, "steps", (size_t)rank, g->step)) {
    return false;
  }
  g->rank = rank;
  g->base = 0;
  int64_t s = 1;
  for (int32_t d = rank - 1; d >= 0; d--) {
    g->len[d] = y->dims[d];
    g->istr[d] = s;
    s *= x->dims[d];
    // Every element taken lies inside the input (the host clamped).
    int64_t last = g->start[d] + (g->len[d] - 1) * g->step[d];
    if (g->len[d] > 0 && (g->start[d] < 0 || g->start[d] >= x->dims[d] ||
                          last < 0 || last >= x->dims[d])) {
      return false;
    }
  }
  return true;
}

static uint32_t slice_query(const wm_op_desc *op, uint32_t *why,
                            const char **detail) {
  uint32_t level = plain_dtype(op, why, detail);
  if (level == WM_SUPPORT_NONE) {
    return level;
  }
  slice_geo_t g;
  if (!slice_geometry(op, &g)) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "the slice is resolved by the host for known shapes and "
                  "bounds");
  }
  return WM_SUPPORT_SUPPORTED;
}

// The same slice over fewer dims: dims of length 1 go (their start into
// the base offset), and a dim taken whole with step 1 merges into the one
// before it when that one has step 1, so rows are as long as they can be.
static void slice_coalesce(slice_geo_t *g) {
  slice_geo_t c = {.rank = 0, .base = g->base};
  for (int32_t d = 0; d < g->rank; d++) {
    if (g->len[d] == 1 && g->rank > 1) {
      c.base += g->start[d] * g->istr[d];
      continue;
    }
    int32_t p = c.rank - 1;
    if (p >= 0 && c.step[p] == 1 && g->step[d] == 1 && g->start[d] == 0 &&
        g->len[d] * g->istr[d] == c.istr[p]) {
      c.start[p] *= g->len[d];
      c.len[p] *= g->len[d];
      c.istr[p] = g->istr[d];
      continue;
    }
    c.start[c.rank] = g->start[d];
    c.step[c.rank] = g->step[d];
    c.len[c.rank] = g->len[d];
    c.istr[c.rank] = g->istr[d];
    c.rank++;
  }
  if (c.rank == 0) {  // every dim had length 1: one element
    c.start[0] = 0;
    c.step[0] = 1;
    c.len[0] = 1;
    c.istr[0] = 1;
    c.rank = 1;
  }
  *g = c;
}

typedef struct slice_job {
  const slice_geo_t *g;
  size_t es;
  const char *x;
  char *y;
} slice_job_t;

// Copies |inner| elements of type T from |src| every |istep| to |dst|.
#define SLICE_STRIDED(T)                           \
  do {                                             \
    const T *xs = (const T *)(const void *)src;    \
    T *restrict ys = (T *)(void *)dst;             \
    for (size_t c = 0; c < inner; c++) {           \
      ys[c] = xs[(ptrdiff_t)c * (ptrdiff_t)istep]; \
    }                                              \
  } while (0)

static void slice_chunk(void *ctx, size_t begin, size_t end) {
  const slice_job_t *j = ctx;
  const slice_geo_t *g = j->g;
  int32_t last = g->rank - 1;
  size_t inner = (size_t)g->len[last], es = j->es;
  int64_t istep = g->step[last] * g->istr[last];
  for (size_t row = begin; row < end; row++) {
    size_t rest = row;
    int64_t xo = g->base + g->start[last] * g->istr[last];
    for (int32_t d = last - 1; d >= 0; d--) {
      int64_t i = (int64_t)(rest % (size_t)g->len[d]);
      rest /= (size_t)g->len[d];
      xo += (g->start[d] + i * g->step[d]) * g->istr[d];
    }
    char *dst = j->y + row * inner * es;
    const char *src = j->x + (size_t)xo * es;
    if (istep == 1) {
      memcpy(dst, src, inner * es);
      continue;
    }
    switch (es) {
      case 1:
        SLICE_STRIDED(uint8_t);
        break;
      case 2:
        SLICE_STRIDED(uint16_t);
        break;
      case 4:
        SLICE_STRIDED(uint32_t);
        break;
      case 8:
        SLICE_STRIDED(uint64_t);
        break;
      default:
        for (size_t c = 0; c < inner; c++) {
          memcpy(dst + c * es,
                 src + (ptrdiff_t)((int64_t)c * istep) * (ptrdiff_t)es, es);
        }
        break;
    }
  }
}

static wm_error *slice_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  slice_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  if (!slice_geometry(op, &p->g)) {
    free(p);
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (Slice): no resolved starts and steps for "
                     "these shapes",
                     op->name);
  }
  p->es = k_dtype_size(op->in[0].dtype);
  p->in_count = cpu_desc_count(&op->in[0]);
  if (p->g.rank > 0) {
    slice_coalesce(&p->g);
  }
  *out_state = p;
  return NULL;
}

static wm_error *slice_run(void *state, const cpu_run_t *run) {
  const slice_plan_t *p = state;
  const cpu_tensor_t *y = &run->out[0];
  if (run->in[0].count != p->in_count) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "Slice kernel: input does not match the plan");
  }
  if (y->count == 0) {
    return NULL;
  }
  if (p->g.rank == 0) {
    memcpy(y->data, run->in[0].data, p->es);
    return NULL;
  }
  slice_job_t j = {&p->g, p->es, run->in[0].data, y->data};
  size_t inner = (size_t)p->g.len[p->g.rank - 1];
  k_for(run->pool, y->count / inner, k_row_grain(inner, K_GRAIN), slice_chunk,
        &j);
  return NULL;
}

// --------------------------------------------------------------- Gather

typedef struct gather_plan {
  size_t outer;      // product of data dims before the axis
  int64_t n;         // data dim at the axis
  size_t inner;      // bytes after the axis
  size_t n_idx;      // indices
  size_t in_count;   // data elements
  size_t out_count;  // output elements
} gather_plan_t;

static uint32_t gather_query(const wm_op_desc *op, uint32_t *why,
                             const char **detail) {
  uint32_t level = plain_dtype(op, why, detail);
  if (level == WM_SUPPORT_NONE) {
    return level;
  }
  if (op->n_in != 2 ||
      (op->in[1].dtype != K_INT32 && op->in[1].dtype != K_INT64)) {
    return k_none(why, detail, WM_WHY_DTYPE, "indices must be int32/int64");
  }
  int32_t axis;
  if (!cpu_param_axis(op, &axis)) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "the axis is resolved by the host for known shapes");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *gather_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  const wm_tensor_desc *x = &op->in[0], *ix = &op->in[1];
  int32_t rank = (int32_t)x->rank, axis;
  if (!cpu_param_axis(op, &axis) || !k_dims_known(x) || !k_dims_known(ix) ||
      !k_dims_known(&op->out[0])) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (Gather): bad axis or unknown dims",
                     op->name);
  }
  gather_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  p->outer = k_desc_span(x, 0, axis);
  p->n = x->dims[axis];
  p->inner = k_desc_span(x, axis + 1, rank) * k_dtype_size(x->dtype);
  p->n_idx = cpu_desc_count(ix);
  p->in_count = cpu_desc_count(x);
  p->out_count = cpu_desc_count(&op->out[0]);
  if (p->outer * p->n_idx * p->inner != p->out_count * k_dtype_size(x->dtype)) {
    free(p);
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (Gather): output size does not match",
                     op->name);
  }
  *out_state = p;
  return NULL;
}

typedef struct gather_job {
  const gather_plan_t *p;
  const char *x;
  const void *idx;
  uint32_t idx_dtype;
  char *y;
} gather_job_t;

static void gather_chunk(void *ctx, size_t begin, size_t end) {
  const gather_job_t *j = ctx;
  const gather_plan_t *p = j->p;
  size_t b = p->inner;
  for (size_t r = begin; r < end; r++) {
    size_t o = r / p->n_idx, i = r % p->n_idx;
    int64_t k = k_load_index(j->idx, j->idx_dtype, i);
    k = k < 0 ? k + p->n : k;
    const char *src = j->x + (o * (size_t)p->n + (size_t)k) * b;
    char *dst = j->y + r * b;
    if (b == 4) {
      memcpy(dst, src, 4);
    } else if (b == 8) {
      memcpy(dst, src, 8);
    } else {
      memcpy(dst, src, b);
    }
  }
}

static wm_error *gather_run(void *state, const cpu_run_t *run) {
  const gather_plan_t *p = state;
  const cpu_tensor_t *ix = &run->in[1];
  if (run->in[0].count != p->in_count || ix->count != p->n_idx ||
      run->out[0].count != p->out_count ||
      (ix->dtype != K_INT32 && ix->dtype != K_INT64)) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "Gather kernel: tensors do not match the plan");
  }
  for (size_t i = 0; i < p->n_idx; i++) {
    int64_t k = k_load_index(ix->data, ix->dtype, i);
    if (k < -p->n || k >= p->n) {
      return cpu_error(WM_ERR_OUT_OF_RANGE,
                       "Gather: index %lld at position %zu is outside "
                       "[-%lld, %lld)",
                       (long long)k, i, (long long)p->n, (long long)p->n);
    }
  }
  if (p->out_count == 0 || p->inner == 0) {
    return NULL;
  }
  gather_job_t j = {p, run->in[0].data, ix->data, ix->dtype, run->out[0].data};
  k_for(run->pool, p->outer * p->n_idx, k_row_grain(p->inner, 4 * K_GRAIN),
        gather_chunk, &j);
  return NULL;
}

// --------------------------------------------------------------- Reduce

// The reductions, on float32 in double accumulators like the reference.
enum {
  RED_SUM = 0,
  RED_MEAN = 1,
  RED_MAX = 2,
  RED_MIN = 3,
  RED_PROD = 4,
  RED_L1 = 5,
  RED_L2 = 6,
  RED_LOG_SUM = 7,
  RED_LOG_SUM_EXP = 8,
  RED_SUM_SQUARE = 9,
};

typedef struct red_plan {
  int kind;                    // RED_*
  bool keepdims;               // keep reduced dims
  int32_t rank;                // input rank
  int64_t dims[CPU_MAX_RANK];  // input dims
  bool red[CPU_MAX_RANK];      // dim d is reduced
  size_t in_count;             // input elements
} red_plan_t;

static int red_kind(const char *name) {
  static const char *const names[] = {
      "ReduceSum",       "ReduceMean",     "ReduceMax", "ReduceMin",
      "ReduceProd",      "ReduceL1",       "ReduceL2",  "ReduceLogSum",
      "ReduceLogSumExp", "ReduceSumSquare"};
  for (int k = 0; k < (int)(sizeof(names) / sizeof(names[0])); k++) {
    if (strcmp(name, names[k]) == 0) {
      return k;
    }
  }
  return -1;
}

// The reduced dims and keepdims of |op| as the host resolved them; false
// when it resolved none.
static bool red_axes(const wm_op_desc *op, red_plan_t *p) {
  const wm_op_attr *a = cpu_param(op, "axes");
  int64_t keep;
  int32_t rank = (int32_t)op->in[0].rank;
  if (!a || a->type != 7 || a->count > (uint64_t)rank ||
      (a->count && !a->ints) || rank > CPU_MAX_RANK ||
      !cpu_param_int(op, "keepdims", &keep)) {
    return false;
  }
  memset(p->red, 0, sizeof(p->red));
  for (uint64_t i = 0; i < a->count; i++) {
    if (a->ints[i] < 0 || a->ints[i] >= rank) {
      return false;
    }
    p->red[a->ints[i]] = true;
  }
  p->keepdims = keep != 0;
  return true;
}

static uint32_t red_query(const wm_op_desc *op, uint32_t *why,
                          const char **detail) {
  int kind = red_kind(op->op_type);
  if (kind < 0) {
    return k_none(why, detail, WM_WHY_OP, "no cpu kernel");
  }
  if (op->n_in < 1 || op->in[0].dtype != K_FLOAT || !k_has_output(op, 0) ||
      op->out[0].dtype != K_FLOAT) {
    return k_none(why, detail, WM_WHY_DTYPE, "float32 only");
  }
  if (op->in[0].rank > CPU_MAX_RANK) {
    return k_none(why, detail, WM_WHY_RANK, "rank above 8");
  }
  red_plan_t p;
  if (!red_axes(op, &p)) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "the axes are resolved by the host for known shapes and "
                  "axes");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *red_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  const wm_tensor_desc *x = &op->in[0];
  int kind = red_kind(op->op_type);
  red_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  if (kind < 0 || !k_dims_known(x) || !red_axes(op, p)) {
    free(p);
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (%s): unknown input dims or no resolved "
                     "axes",
                     op->name, op->op_type);
  }
  p->kind = kind;
  p->rank = (int32_t)x->rank;
  for (int32_t d = 0; d < p->rank; d++) {
    p->dims[d] = x->dims[d];
  }
  p->in_count = cpu_desc_count(x);
  *out_state = p;
  return NULL;
}

// The accumulator's start, one step and the result, shared by every path.
static inline double red_init(int kind) {
  return kind == RED_MAX    ? -INFINITY
         : kind == RED_MIN  ? INFINITY
         : kind == RED_PROD ? 1.0
                            : 0.0;
}

// One step of |kind|; |peak| is the group maximum for ReduceLogSumExp.
static inline double red_step(int kind, double a, double v, double peak) {
  switch (kind) {
    case RED_PROD:
      return a * v;
    case RED_L1:
      return a + fabs(v);
    case RED_L2:
    case RED_SUM_SQUARE:
      return a + v * v;
    case RED_MAX:
      return (v > a || v != v) && a == a ? v : a;
    case RED_MIN:
      return (v < a || v != v) && a == a ? v : a;
    case RED_LOG_SUM_EXP:
      return isfinite(peak) ? a + exp(v - peak) : a;
    default:
      return a + v;
  }
}

// The result of |kind| from accumulator |a| over |group| elements; an
// infinite or NaN |peak| is ReduceLogSumExp's answer itself.
static inline float red_final(int kind, double a, double peak, size_t group) {
  switch (kind) {
    case RED_MEAN:
      return (float)(group ? a / (double)group : NAN);
    case RED_L2:
      return (float)sqrt(a);
    case RED_LOG_SUM:
      return (float)log(a);
    case RED_LOG_SUM_EXP:
      return (float)(isfinite(peak) ? peak + log(a) : peak);
    default:
      return (float)a;
  }
}

// The smaller of |m| and |v| where a NaN in either wins (and sticks).
static inline float red_min_nan(float m, float v) {
  float r = v < m ? v : m;
  return v != v ? v : r;
}

// Sum over |n| floats of f(x) in double, in K_LANES partial sums: f is
// |x|, x^2 or e^(x - peak) by |kind|.
static double red_lane_sum(int kind, const float *restrict x, size_t n,
                           float peak) {
  double s[K_LANES] = {0};
  size_t i = 0;
  for (; i + K_LANES <= n; i += K_LANES) {
    for (int l = 0; l < K_LANES; l++) {
      float v = x[i + (size_t)l];
      double t = kind == RED_L1            ? (double)fabsf(v)
                 : kind == RED_LOG_SUM_EXP ? (double)k_expf(v - peak)
                                           : (double)v * (double)v;
      s[l] += t;
    }
  }
  double r = 0;
  for (; i < n; i++) {
    float v = x[i];
    r += kind == RED_L1            ? (double)fabsf(v)
         : kind == RED_LOG_SUM_EXP ? (double)k_expf(v - peak)
                                   : (double)v * (double)v;
  }
  for (int l = 0; l < K_LANES; l++) {
    r += s[l];
  }
  return r;
}

// Reduces one contiguous row of |n| floats.
static float red_row(int kind, const float *x, size_t n) {
  switch (kind) {
    case RED_MAX:
      return k_row_max(x, n);
    case RED_MIN: {
      float m[K_LANES];
      for (int l = 0; l < K_LANES; l++) {
        m[l] = INFINITY;
      }
      size_t i = 0;
      for (; i + K_LANES <= n; i += K_LANES) {
        for (int l = 0; l < K_LANES; l++) {
          m[l] = red_min_nan(m[l], x[i + (size_t)l]);
        }
      }
      float r = INFINITY;
      for (; i < n; i++) {
        r = red_min_nan(r, x[i]);
      }
      for (int l = 0; l < K_LANES; l++) {
        r = red_min_nan(r, m[l]);
      }
      return r;
    }
    case RED_PROD: {
      double p[K_LANES];
      for (int l = 0; l < K_LANES; l++) {
        p[l] = 1;
      }
      size_t i = 0;
      for (; i + K_LANES <= n; i += K_LANES) {
        for (int l = 0; l < K_LANES; l++) {
          p[l] *= (double)x[i + (size_t)l];
        }
      }
      double r = 1;
      for (; i < n; i++) {
        r *= (double)x[i];
      }
      for (int l = 0; l < K_LANES; l++) {
        r *= p[l];
      }
      return (float)r;
    }
    case RED_L1:
    case RED_L2:
    case RED_SUM_SQUARE:
      return red_final(kind, red_lane_sum(kind, x, n, 0), 0, n);
    case RED_LOG_SUM_EXP: {
      float m = k_row_max(x, n);
      if (!isfinite(m)) {
        return m;
      }
      return red_final(kind, red_lane_sum(kind, x, n, m), m, n);
    }
    default:
      return red_final(kind, k_row_sum(x, n), 0, n);
  }
}

// The reduction in merged form: x is [outer, n, inner] and y [outer, inner].
typedef struct red_job {
  int kind;
  size_t outer, n, inner;
  size_t blocks;  // column blocks per outer index (inner > 1)
  const float *x;
  float *y;
} red_job_t;

enum { RED_BLOCK = 256 };

// Columns [c0, c0 + w) of one outer index: accumulators per column.
static void red_columns(const red_job_t *j, const float *xb, float *yb,
                        size_t w) {
  double acc[RED_BLOCK], peak[RED_BLOCK];
  int kind = j->kind;
  if (kind == RED_MAX || kind == RED_MIN || kind == RED_LOG_SUM_EXP) {
    float m[RED_BLOCK];
    bool is_min = kind == RED_MIN;
    for (size_t c = 0; c < w; c++) {
      m[c] = is_min ? INFINITY : -INFINITY;
    }
    for (size_t k = 0; k < j->n; k++) {
      const float *restrict xr = xb + k * j->inner;
      if (is_min) {
        for (size_t c = 0; c < w; c++) {
          m[c] = red_min_nan(m[c], xr[c]);
        }
      } else {
        for (size_t c = 0; c < w; c++) {
          m[c] = k_max_nan(m[c], xr[c]);
        }
      }
    }
    if (kind != RED_LOG_SUM_EXP) {
      memcpy(yb, m, w * sizeof(float));
      return;
    }
    for (size_t c = 0; c < w; c++) {
      peak[c] = m[c];
      acc[c] = 0;
    }
    for (size_t k = 0; k < j->n; k++) {
      const float *restrict xr = xb + k * j->inner;
      for (size_t c = 0; c < w; c++) {
        acc[c] += isfinite(m[c]) ? (double)k_expf(xr[c] - m[c]) : 0.0;
      }
    }
    for (size_t c = 0; c < w; c++) {
      yb[c] = red_final(kind, acc[c], peak[c], j->n);
    }
    return;
  }
  double init = red_init(kind);
  for (size_t c = 0; c < w; c++) {
    acc[c] = init;
  }
  for (size_t k = 0; k < j->n; k++) {
    const float *restrict xr = xb + k * j->inner;
    switch (kind) {
      case RED_PROD:
        for (size_t c = 0; c < w; c++) {
          acc[c] *= (double)xr[c];
        }
        break;
      case RED_L1:
        for (size_t c = 0; c < w; c++) {
          acc[c] += (double)fabsf(xr[c]);
        }
        break;
      case RED_L2:
      case RED_SUM_SQUARE:
        for (size_t c = 0; c < w; c++) {
          acc[c] += (double)xr[c] * (double)xr[c];
        }
        break;
      default:
        for (size_t c = 0; c < w; c++) {
          acc[c] += (double)xr[c];
        }
        break;
    }
  }
  for (size_t c = 0; c < w; c++) {
    yb[c] = red_final(kind, acc[c], 0, j->n);
  }
}

static void red_chunk(void *ctx, size_t begin, size_t end) {
  const red_job_t *j = ctx;
  if (j->inner == 1) {
    for (size_t o = begin; o < end; o++) {
      j->y[o] = red_row(j->kind, j->x + o * j->n, j->n);
    }
    return;
  }
  for (size_t item = begin; item < end; item++) {
    size_t o = item / j->blocks, c0 = (item % j->blocks) * RED_BLOCK;
    size_t w = j->inner - c0 < RED_BLOCK ? j->inner - c0 : RED_BLOCK;
    red_columns(j, j->x + o * j->n * j->inner + c0, j->y + o * j->inner + c0,
                w);
  }
}

// Reduces dims marked in |red| of [dims] by a general odometer walk (a
// first one for the group maxima of ReduceLogSumExp).
static wm_error *red_general(const red_plan_t *p, const int64_t *dims,
                             int32_t rank, const bool *red, const float *x,
                             float *y, size_t out_count) {
  double *acc = malloc((out_count ? 2 * out_count : 1) * sizeof(double));
  if (!acc) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  double *peak = acc + out_count;
  int64_t ostr[CPU_MAX_RANK];
  int64_t s = 1;
  size_t group = 1;
  for (int32_t d = rank - 1; d >= 0; d--) {
    ostr[d] = red[d] ? 0 : s;
    s *= red[d] ? 1 : dims[d];
    group *= red[d] ? (size_t)dims[d] : 1;
  }
  bool lse = p->kind == RED_LOG_SUM_EXP;
  for (size_t o = 0; o < out_count; o++) {
    acc[o] = lse ? -INFINITY : red_init(p->kind);
    peak[o] = 0;
  }
  for (int pass = lse ? 0 : 1; pass < 2; pass++) {
    int kind = pass == 0 ? RED_MAX : p->kind;
    int64_t idx[CPU_MAX_RANK] = {0};
    int64_t off = 0;
    for (size_t i = 0; i < p->in_count; i++) {
      acc[off] = red_step(kind, acc[off], (double)x[i], peak[off]);
      for (int32_t d = rank - 1; d >= 0; d--) {
        off += ostr[d];
        if (++idx[d] < dims[d]) {
          break;
        }
        off -= ostr[d] * dims[d];
        idx[d] = 0;
      }
    }
    if (pass == 0) {
      for (size_t o = 0; o < out_count; o++) {
        peak[o] = acc[o];
        acc[o] = 0;
      }
    }
  }
  for (size_t o = 0; o < out_count; o++) {
    y[o] = red_final(p->kind, acc[o], peak[o], group);
  }
  free(acc);
  return NULL;
}

static wm_error *red_run(void *state, const cpu_run_t *run) {
  const red_plan_t *p = state;
  int32_t rank = p->rank;
  const bool *red = p->red;
  if (run->in[0].count != p->in_count) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "Reduce kernel: input does not match the plan");
  }
  // Output shape check.
  const cpu_tensor_t *y = &run->out[0];
  int32_t orank = 0;
  size_t out_count = 1;
  bool ok = true;
  for (int32_t d = 0; d < rank; d++) {
    if (red[d] && !p->keepdims) {
      continue;
    }
    int64_t want = red[d] ? 1 : p->dims[d];
    ok = ok && orank < y->rank && y->dims[orank] == want;
    orank++;
    out_count *= (size_t)want;
  }
  if (!ok || orank != y->rank || y->count != out_count) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "Reduce kernel: output shape does not match the "
                     "reduction");
  }
  float *yd = y->data;
  const float *xd = run->in[0].data;
  if (out_count == 0) {
    return NULL;
  }
  if (p->in_count == 0) {
    float v =
        red_final(p->kind, p->kind == RED_LOG_SUM_EXP ? 0 : red_init(p->kind),
                  p->kind == RED_LOG_SUM_EXP ? -INFINITY : 0, 0);
    for (size_t o = 0; o < out_count; o++) {
      yd[o] = v;
    }
    return NULL;
  }
  // Merge: drop 1s, join neighbours of the same kind.
  int64_t md[CPU_MAX_RANK];
  bool mr[CPU_MAX_RANK];
  int32_t n = 0;
  for (int32_t d = 0; d < rank; d++) {
    if (p->dims[d] == 1) {
      continue;
    }
    if (n > 0 && mr[n - 1] == red[d]) {
      md[n - 1] *= p->dims[d];
    } else {
      md[n] = p->dims[d];
      mr[n] = red[d];
      n++;
    }
  }
  red_job_t j = {p->kind, 1, 1, 1, 1, xd, yd};
  if (n == 0 || (n == 1 && !mr[0])) {
    j.inner = p->in_count;  // nothing reduced: n == 1
  } else if (n == 1) {
    j.n = (size_t)md[0];
  } else if (n == 2 && !mr[0]) {
    j.outer = (size_t)md[0];
    j.n = (size_t)md[1];
  } else if (n == 2) {
    j.n = (size_t)md[0];
    j.inner = (size_t)md[1];
  } else if (n == 3 && !mr[0]) {
    j.outer = (size_t)md[0];
    j.n = (size_t)md[1];
    j.inner = (size_t)md[2];
  } else {
    return red_general(p, md, n, mr, xd, yd, out_count);
  }
  if (j.inner == 1) {
    k_for(run->pool, j.outer, k_row_grain(j.n, K_GRAIN), red_chunk, &j);
  } else {
    j.blocks = (j.inner + RED_BLOCK - 1) / RED_BLOCK;
    k_for(
        run->pool, j.outer * j.blocks,
        k_row_grain(j.n * (j.inner < RED_BLOCK ? j.inner : RED_BLOCK), K_GRAIN),
        red_chunk, &j);
  }
  return NULL;
}

// ------------------------------------------------------- ArgMax, ArgMin

typedef struct arg_plan {
  bool is_max;     // ArgMax
  bool last;       // select_last_index
  uint32_t dtype;  // input dtype
  size_t outer, n, inner;
  size_t in_count;  // input elements
} arg_plan_t;

static bool arg_dtype(uint32_t dtype) {
  return dtype == K_FLOAT || dtype == K_DOUBLE || k_is_int(dtype);
}

static uint32_t arg_query(const wm_op_desc *op, uint32_t *why,
                          const char **detail) {
  if (op->n_in != 1 || !arg_dtype(op->in[0].dtype) || !k_has_output(op, 0) ||
      op->out[0].dtype != K_INT64) {
    return k_none(why, detail, WM_WHY_DTYPE,
                  "float, double and integer inputs only");
  }
  int32_t axis;
  if (!cpu_param_axis(op, &axis)) {
    return k_none(why, detail, WM_WHY_SHAPE,
                  "the axis is resolved by the host for known shapes");
  }
  if (op->in[0].dims[axis] == 0) {
    return k_none(why, detail, WM_WHY_SHAPE, "empty axis");
  }
  return WM_SUPPORT_SUPPORTED;
}

static wm_error *arg_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  const wm_tensor_desc *x = &op->in[0];
  int32_t axis;
  int64_t last = 0;
  if (!cpu_param_axis(op, &axis) || x->dims[axis] == 0 ||
      !cpu_param_int(op, "select_last_index", &last)) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (%s): axis outside the rank or empty",
                     op->name, op->op_type);
  }
  arg_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  p->is_max = strcmp(op->op_type, "ArgMax") == 0;
  p->last = last != 0;
  p->dtype = x->dtype;
  p->outer = k_desc_span(x, 0, axis);
  p->n = (size_t)x->dims[axis];
  p->inner = k_desc_span(x, axis + 1, (int32_t)x->rank);
  p->in_count = cpu_desc_count(x);
  if (cpu_desc_count(&op->out[0]) != p->outer * p->inner) {
    free(p);
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "node \"%s\" (%s): output size does not match", op->name,
                     op->op_type);
  }
  *out_state = p;
  return NULL;
}

typedef struct arg_job {
  const arg_plan_t *p;
  const void *x;
  int64_t *y;
} arg_job_t;

// For each output column of rows [begin, end) of outer indices: the first
// (or last) best along the axis, where a NaN beats every number and ties
// with other NaNs, as the reference orders them.
#define ARG_BODY(T, IS_NAN)                                           \
  do {                                                                \
    const T *x = (const T *)j->x;                                     \
    for (size_t o = begin; o < end; o++) {                            \
      for (size_t c = 0; c < p->inner; c++) {                         \
        const T *col = x + o * p->n * p->inner + c;                   \
        T best = col[0];                                              \
        size_t at = 0;                                                \
        for (size_t k = 1; k < p->n; k++) {                           \
          T v = col[k * p->inner];                                    \
          bool vn = IS_NAN(v), bn = IS_NAN(best);                     \
          int cmp = vn || bn ? (int)vn - (int)bn                      \
                             : (p->is_max ? (v > best) - (v < best)   \
                                          : (v < best) - (v > best)); \
          if (cmp > 0 || (cmp == 0 && p->last)) {                     \
            best = v;                                                 \
            at = k;                                                   \
          }                                                           \
        }                                                             \
        j->y[o * p->inner + c] = (int64_t)at;                         \
      }                                                               \
    }                                                                 \
  } while (0)

#define ARG_NAN(v) ((v) != (v))
#define ARG_NO_NAN(v) false

static void arg_chunk(void *ctx, size_t begin, size_t end) {
  const arg_job_t *j = ctx;
  const arg_plan_t *p = j->p;
  switch (p->dtype) {
    case K_FLOAT:
      ARG_BODY(float, ARG_NAN);
      break;
    case K_DOUBLE:
      ARG_BODY(double, ARG_NAN);
      break;
    case K_INT8:
      ARG_BODY(int8_t, ARG_NO_NAN);
      break;
    case K_UINT8:
      ARG_BODY(uint8_t, ARG_NO_NAN);
      break;
    case K_INT16:
      ARG_BODY(int16_t, ARG_NO_NAN);
      break;
    case K_UINT16:
      ARG_BODY(uint16_t, ARG_NO_NAN);
      break;
    case K_INT32:
      ARG_BODY(int32_t, ARG_NO_NAN);
      break;
    case K_UINT32:
      ARG_BODY(uint32_t, ARG_NO_NAN);
      break;
    case K_INT64:
      ARG_BODY(int64_t, ARG_NO_NAN);
      break;
    default:
      ARG_BODY(uint64_t, ARG_NO_NAN);
      break;
  }
}

static wm_error *arg_run(void *state, const cpu_run_t *run) {
  const arg_plan_t *p = state;
  if (run->in[0].count != p->in_count ||
      run->out[0].count != p->outer * p->inner) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "ArgMax/ArgMin kernel: tensors do not match the plan");
  }
  if (p->in_count == 0) {
    return NULL;
  }
  arg_job_t j = {p, run->in[0].data, run->out[0].data};
  k_for(run->pool, p->outer, k_row_grain(p->n * p->inner, K_GRAIN), arg_chunk,
        &j);
  return NULL;
}

// --------------------------------------------------------------- table

#define K(name, since, q, p, r, d) \
  { name, since, WM_IMPL_NATIVE_KERNEL, q, p, r, d, NULL, NULL, NULL }

const cpu_kernel_t cpu_kernels_data[] = {
    K("Reshape", 1, copy_query, copy_plan, copy_run, free),
    K("Flatten", 1, copy_query, copy_plan, copy_run, free),
    K("Squeeze", 1, copy_query, copy_plan, copy_run, free),
    K("Unsqueeze", 1, copy_query, copy_plan, copy_run, free),
    K("Identity", 1, copy_query, copy_plan, copy_run, free),
    K("Dropout", 1, dropout_query, copy_plan, dropout_run, free),
    K("Transpose", 1, tr_query, tr_plan, tr_run, free),
    K("Concat", 1, concat_query, concat_plan, concat_run, concat_destroy),
    K("Slice", 1, slice_query, slice_plan, slice_run, free),
    K("Gather", 1, gather_query, gather_plan, gather_run, free),
    K("ReduceSum", 1, red_query, red_plan, red_run, free),
    K("ReduceMean", 1, red_query, red_plan, red_run, free),
    K("ReduceMax", 1, red_query, red_plan, red_run, free),
    K("ReduceMin", 1, red_query, red_plan, red_run, free),
    K("ReduceProd", 1, red_query, red_plan, red_run, free),
    K("ReduceL1", 1, red_query, red_plan, red_run, free),
    K("ReduceL2", 1, red_query, red_plan, red_run, free),
    K("ReduceLogSum", 1, red_query, red_plan, red_run, free),
    K("ReduceLogSumExp", 1, red_query, red_plan, red_run, free),
    K("ReduceSumSquare", 1, red_query, red_plan, red_run, free),
    K("ArgMax", 1, arg_query, arg_plan, arg_run, free),
    K("ArgMin", 1, arg_query, arg_plan, arg_run, free),
    {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
