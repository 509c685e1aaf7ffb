// Schedules and the lowering of a compute to its loop nest.
#include <stdio.h>
#include <string.h>

#include "gen/gen.h"

int64_t wm_gen_access_step(const wm_gen_compute_t *c,
                           const wm_gen_access_t *acc, int32_t axis) {
  const wm_gen_tensor_t *t = &c->tensors[acc->tensor];
  int64_t k = 0;
  for (int32_t d = 0; d < t->rank; d++) {
    k += acc->coef[d][axis] * t->strides[d];
  }
  return k;
}

int64_t wm_gen_access_base(const wm_gen_compute_t *c,
                           const wm_gen_access_t *acc) {
  const wm_gen_tensor_t *t = &c->tensors[acc->tensor];
  int64_t base = 0;
  for (int32_t d = 0; d < t->rank; d++) {
    base += acc->off[d] * t->strides[d];
  }
  return base;
}

// Whether every input moves by 0 (a broadcast, one splat) or 1 float
// element along |axis|, and the output by 1 (a spatial axis) or 0 (a
// reduce one).
static bool vectorizable(const wm_gen_compute_t *c, int32_t axis) {
  for (int32_t i = 1; i < c->n_accesses; i++) {
    const wm_gen_access_t *acc = &c->accesses[i];
    int64_t k = wm_gen_access_step(c, acc, axis);
    if (k != 0 && (k != 1 || c->tensors[acc->tensor].dtype != WM_DTYPE_FLOAT)) {
      return false;  // not one float a lane (an index or an integer input)
    }
  }
  int64_t out = wm_gen_access_step(c, &c->accesses[0], axis);
  return axis < wm_gen_spatial(c) ? out == 1 : out == 0;
}

// The widest power of two up to |w| lanes that |extent| fills.
static int32_t fit(int32_t w, int64_t extent) {
  w = w > 16 ? 16 : w;
  while (w > 1 && extent < w) {
    w /= 2;
  }
  return w;
}

wm_gen_schedule_t wm_gen_default_schedule(const wm_gen_compute_t *c,
                                          int32_t vector_bytes) {
  wm_gen_schedule_t s = {.vector_width = 1, .unroll = 1};
  if (vector_bytes == 0) {
    s.points = true;
    return s;
  }
  int32_t lanes = vector_bytes / (int32_t)sizeof(float);
  wm_gen_gemm_t g;
  if (wm_gen_gemm_shape(c, &g) && lanes >= 4 && g.m >= 4) {
    // The packed template: a register tile of MR x NR accumulators (NR two
    // vectors; MR x 2 accumulators at least the FMA latency times its
    // pipes), KC deep slices, MC rows of A in L2 and NC columns of B in
    // L3 (kernel-gen.md §3.3). For AVX-512, 8 x 32 with KC 512 and MC
    // 128 measured best on Zen 5 (bench/gen_bench.c: 0.97-1.03 of
    // OpenBLAS at n = 512 to 2048, where 12 x 32 with KC 256 gave
    // 0.86-0.98).
    lanes = lanes > 16 ? 16 : lanes;
    s.vector_width = lanes;
    s.mr = lanes == 16 ? 8 : lanes == 8 ? 6 : 4;
    s.nr = 2 * lanes;
    s.kc = lanes == 16 ? 512 : 256;
    s.mc = lanes == 16 ? 128 : s.mr * 20;
    s.nc = 2048;
    return s;
  }
  return wm_gen_nest_schedule(c, vector_bytes);
}

wm_gen_schedule_t wm_gen_nest_schedule(const wm_gen_compute_t *c,
                                       int32_t vector_bytes) {
  wm_gen_schedule_t s = {.vector_width = 1, .unroll = 1};
  int32_t lanes = vector_bytes / (int32_t)sizeof(float);
  int32_t ns = wm_gen_spatial(c);
  if (ns > 0 && vectorizable(c, ns - 1)) {
    int32_t w = fit(lanes, c->extents[ns - 1]);
    if (w > 1) {
      s.vector_width = w;
      s.unroll = c->extents[ns - 1] >= 2 * w && c->n_reduce == 0 ? 2 : 1;
      return s;
    }
  }
  if (c->n_reduce > 0 && vectorizable(c, c->n_axes - 1)) {
    int32_t w = fit(lanes, c->extents[c->n_axes - 1]);
    if (w > 1) {
      s.vector_width = w;
      s.vector_reduce = true;
      s.unroll = c->extents[c->n_axes - 1] >= 4 * w ? 4 : 1;
    }
  }
  return s;
}

bool wm_gen_schedule_equal(const wm_gen_schedule_t *a,
                           const wm_gen_schedule_t *b) {
  int32_t ra = a->rows > 1 ? a->rows : 1, rb = b->rows > 1 ? b->rows : 1;
  return ra == rb && a->points == b->points &&
         a->vector_width == b->vector_width && a->unroll == b->unroll &&
         a->vector_reduce == b->vector_reduce && a->mr == b->mr &&
         a->nr == b->nr && a->kc == b->kc && a->mc == b->mc && a->nc == b->nc;
}

void wm_gen_schedule_text(const wm_gen_schedule_t *s, char *out, size_t cap) {
  if (s->mr > 0) {
    snprintf(out, cap, "packed %dx%d, kc %d, mc %d, nc %d", (int)s->mr,
             (int)s->nr, (int)s->kc, (int)s->mc, (int)s->nc);
  } else if (s->points) {
    snprintf(out, cap, "one work item per point");
  } else if (s->vector_width > 1) {
    char rows[24] = "";
    if (s->rows > 1) {
      snprintf(rows, sizeof(rows), ", %d rows", (int)s->rows);
    }
    snprintf(out, cap, "vector %d x %d%s%s", (int)s->vector_width,
             (int)s->unroll, s->vector_reduce ? " over the reduce axis" : "",
             rows);
  } else {
    snprintf(out, cap, "scalar");
  }
}

// The output elements a range of the parallel loop holds at least, so
// that a thread's share pays for waking it.
enum { GRAIN_ELEMENTS = 16384, PARALLEL_INDICES = 64 };

wm_status_t wm_gen_lower(const wm_gen_compute_t *c, const wm_gen_schedule_t *s,
                         wm_gen_nest_t *out) {
  memset(out, 0, sizeof(*out));
  out->c = c;
  out->s = *s;
  int32_t w = s->vector_width, u = s->unroll;
  int32_t ns = wm_gen_spatial(c);
  if (s->mr > 0) {
    return wm_gen_lower_gemm(c, s, out);
  }
  if (w < 1 || w > 16 || (w & (w - 1)) || u < 1 || u > 8 || s->rows < 0 ||
      s->rows > 8 || (s->points && (w > 1 || s->vector_reduce))) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: %s: schedule vector width %d, unroll %d%s; want "
                    "a power of two up to 16 and 1 to 8, and no vectors "
                    "in a schedule per point",
                    c->name, w, u, s->points ? " per point" : "");
  }
  int32_t va = s->vector_reduce ? c->n_axes - 1 : ns - 1;
  if (w > 1 && (s->vector_reduce ? c->n_reduce == 0 : ns == 0)) {
    return WM_ERROR(INVALID_ARGUMENT, "gen: %s: no %s axis to vectorize",
                    c->name, s->vector_reduce ? "reduce" : "spatial");
  }
  if (w > 1 && !vectorizable(c, va)) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: %s: axis %s cannot be vectorized (an access moves "
                    "by more than one element along it)",
                    c->name, c->axes[va]);
  }
  out->n = c->n_axes;
  for (int32_t a = 0; a < c->n_axes; a++) {
    wm_gen_loop_t *l = &out->loops[a];
    l->axis = a;
    l->kind = a >= ns  ? WM_GEN_LOOP_REDUCE
              : a == 0 ? WM_GEN_LOOP_PARALLEL
                       : WM_GEN_LOOP_SERIAL;
    l->width = 1;
    l->unroll = 1;
  }
  if (w > 1) {
    // The vectorized axis; a parallel one runs its range in vectors too.
    wm_gen_loop_t *l = &out->loops[va];
    l->kind = s->vector_reduce ? WM_GEN_LOOP_VECTOR_REDUCE
              : va == 0        ? WM_GEN_LOOP_PARALLEL
                               : WM_GEN_LOOP_VECTOR;
    l->width = w;
    l->unroll = u;
  }
  // The parallel range: the leading spatial axes (not a vectorized one
  // inside), flattened until they hold PARALLEL_INDICES indices; one index
  // when there is none. Ranges hold GRAIN_ELEMENTS outputs' work.
  int32_t limit = w > 1 && !s->vector_reduce && va > 0 ? va : ns;
  if (s->rows > 1 && c->n_reduce > 0 && limit == va && va >= 2) {
    limit = va - 1;  // the jammed rows' axis stays serial
  }
  out->n_par = ns > 0 ? 1 : 0;
  out->grid = ns > 0 ? c->extents[0] : 1;
  while (out->n_par < limit && (s->points || out->grid < PARALLEL_INDICES)) {
    out->grid *= c->extents[out->n_par];
    out->loops[out->n_par++].kind = WM_GEN_LOOP_FUSED;
  }
  // Rows jam where the axis before the vector one is serial.
  bool rows_apply = c->n_reduce > 0 && w > 1 && !s->vector_reduce && va >= 1 &&
                    out->loops[va].kind == WM_GEN_LOOP_VECTOR &&
                    out->loops[va - 1].kind == WM_GEN_LOOP_SERIAL;
  out->s.rows = rows_apply && s->rows > 1 ? s->rows : 1;
  int64_t inner = 1;  // the work of one index
  for (int32_t a = out->n_par > 0 ? out->n_par : 1; a < c->n_axes; a++) {
    inner *= c->extents[a];
  }
  out->grain = inner >= GRAIN_ELEMENTS || s->points ? 1
               : inner > 0                          ? GRAIN_ELEMENTS / inner
                                                    : 1;
  return NULL;
}
