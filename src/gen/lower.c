// Schedules and the lowering of a compute to its loop nest.
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

// Whether the output moves by 1 element along |axis| and every input by 0
// (a broadcast, one splat) or 1.
static bool vectorizable(const wm_gen_compute_t *c, int32_t axis) {
  for (int32_t i = 1; i < c->n_accesses; i++) {
    int64_t k = wm_gen_access_step(c, &c->accesses[i], axis);
    if (k != 0 && k != 1) {
      return false;
    }
  }
  return wm_gen_access_step(c, &c->accesses[0], axis) == 1;
}

wm_gen_schedule_t wm_gen_default_schedule(const wm_gen_compute_t *c,
                                          int32_t vector_bytes) {
  wm_gen_schedule_t s = {.vector_width = 1, .unroll = 1};
  if (c->n_axes == 0) {
    return s;
  }
  int32_t inner = c->n_axes - 1;
  int32_t w = vector_bytes / (int32_t)sizeof(float);
  w = w > 16 ? 16 : w;
  while (w > 1 && c->extents[inner] < w) {
    w /= 2;
  }
  if (w > 1 && vectorizable(c, inner)) {
    s.vector_width = w;
    s.unroll = c->extents[inner] >= 2 * w ? 2 : 1;
  }
  return s;
}

wm_status_t wm_gen_lower(const wm_gen_compute_t *c, const wm_gen_schedule_t *s,
                         wm_gen_nest_t *out) {
  memset(out, 0, sizeof(*out));
  out->c = c;
  int32_t w = s->vector_width, u = s->unroll;
  if (w < 1 || w > 16 || (w & (w - 1)) || u < 1 || u > 8) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: %s: schedule vector width %d, unroll %d; want a "
                    "power of two up to 16 and 1 to 8",
                    c->name, w, u);
  }
  if (w > 1 && (c->n_axes == 0 || !vectorizable(c, c->n_axes - 1))) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: %s: the innermost axis cannot be vectorized (an "
                    "access moves by more than one element along it)",
                    c->name);
  }
  out->n = c->n_axes;
  for (int32_t a = 0; a < c->n_axes; a++) {
    wm_gen_loop_t *l = &out->loops[a];
    l->axis = a;
    l->kind = a == 0 ? WM_GEN_LOOP_PARALLEL : WM_GEN_LOOP_SERIAL;
    l->width = 1;
    l->unroll = 1;
  }
  if (w > 1) {
    // The innermost axis is the vector loop; a rank-1 compute runs its
    // parallel range in vectors too.
    wm_gen_loop_t *l = &out->loops[c->n_axes - 1];
    l->kind = c->n_axes == 1 ? WM_GEN_LOOP_PARALLEL : WM_GEN_LOOP_VECTOR;
    l->width = w;
    l->unroll = u;
  }
  return NULL;
}
