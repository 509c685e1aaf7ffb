// wmap tune: for the generated kernels of a session's current plan, the
// candidate schedules measured on the plan's own buffers through the
// backend's device tier, the best kept in the tuning records that later
// plans read (rt_gen_build).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// The most candidates measured per kernel.
enum { MAX_CANDIDATES = 48, REPS = 5 };

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

// Launches |kernel| as stage |g| of the step over its buffers with
// |nest|'s range, split as rt_gen_build splits it.
static wm_status_t launch(wm_session_t *s, const rt_step_t *st, int32_t g,
                          wm_kernel *kernel, const wm_gen_nest_t *nest) {
  rt_gen_stage_t run = st->stages[g];
  run.kernel = kernel;
  run.grid = (uint32_t)nest->grid;
  run.block = rt_gen_block(s, (size_t)st->slot, nest);
  WM_RETURN_IF_ERROR(rt_gen_launch_stage(s, st, &run));
  rt_backend_t *b = &s->slots[st->slot];
  return rt_slot_error(b, b->api->device->stream_sync(b->stream),
                       "stream_sync");
}

// The median over REPS rounds of one launch's time, each round repeating
// it for at least 0.2 ms.
static wm_status_t time_kernel(wm_session_t *s, const rt_step_t *st, int32_t g,
                               wm_kernel *kernel, const wm_gen_nest_t *nest,
                               double *out_ns) {
  WM_RETURN_IF_ERROR(launch(s, st, g, kernel, nest));  // warm-up
  double t[REPS];
  for (int r = 0; r < REPS; r++) {
    uint64_t t0 = wm_now_ns(), t1 = t0;
    int n = 0;
    while (n == 0 || t1 - t0 < 200000) {
      WM_RETURN_IF_ERROR(launch(s, st, g, kernel, nest));
      n++;
      t1 = wm_now_ns();
    }
    t[r] = (double)(t1 - t0) / n;
  }
  qsort(t, REPS, sizeof(double), cmp_double);
  *out_ns = t[REPS / 2];
  return NULL;
}

// Measures the candidates of stage |g| of step |st| and records the best.
static wm_status_t tune_stage(wm_session_t *s, rt_plan_t *p, rt_step_t *st,
                              int32_t g, const char *target,
                              wm_gen_records_t *records,
                              wm_tune_result_t *res) {
  rt_backend_t *b = &s->slots[st->slot];
  wm_gen_compute_t *c = st->gen->stages[g];
  wm_gen_schedule_t cand[MAX_CANDIDATES];
  int32_t n = wm_gen_candidates(c, rt_gen_vector_bytes(), cand, MAX_CANDIDATES);
  // Every candidate in one source: one compile.
  char name[WM_GEN_NAME];
  memcpy(name, c->name, sizeof(name));
  wm_strbuf_t src;
  wm_strbuf_init(&src);
  wm_gen_nest_t nests[MAX_CANDIDATES];
  wm_status_t e = NULL;
  for (int32_t i = 0; !e && i < n; i++) {
    snprintf(c->name, sizeof(c->name), "wt_%d", (int)i);
    e = wm_gen_lower(c, &cand[i], &nests[i]);
    if (!e) {
      e = wm_gen_print(&nests[i], WM_GEN_C, &src);
    }
  }
  memcpy(c->name, name, sizeof(name));
  wm_executable *exe = NULL;
  if (!e) {
    e = rt_slot_error(b,
                      b->api->device->compile(b->dev, "c", wm_strbuf_str(&src),
                                              src.len, NULL, &exe),
                      "compile");
  }
  wm_strbuf_deinit(&src);
  double ns[MAX_CANDIDATES];
  int32_t best = 0;
  for (int32_t i = 0; !e && i < n; i++) {
    char kn[WM_GEN_NAME];
    snprintf(kn, sizeof(kn), "wt_%d", (int)i);
    wm_kernel *k = NULL;
    e = rt_slot_error(b, b->api->device->exe_get_kernel(exe, kn, &k),
                      "exe_get_kernel");
    if (!e) {
      e = time_kernel(s, st, g, k, &nests[i], &ns[i]);
    }
    best = !e && ns[i] < ns[best] ? i : best;
  }
  // The default stays unless another is faster by 3 % or more (the noise
  // of one measurement here).
  if (!e && ns[best] > 0.97 * ns[0]) {
    best = 0;
  }
  if (exe) {
    b->api->device->exe_destroy(exe);
  }
  if (e) {
    return e;
  }
  wm_gen_record_t rec;
  memset(&rec, 0, sizeof(rec));
  wm_gen_record_key(c, target, rec.key);
  rec.s = cand[best];
  rec.default_ns = ns[0];
  rec.best_ns = ns[best];
  WM_RETURN_IF_ERROR(wm_gen_records_put(records, &rec));
  res->node = p->placement[st->node].node;
  res->op_type = p->placement[st->node].op_type;
  res->candidates = n;
  res->default_us = ns[0] / 1e3;
  res->best_us = ns[best] / 1e3;
  wm_gen_schedule_text(&cand[0], res->default_schedule,
                       sizeof(res->default_schedule));
  wm_gen_schedule_text(&cand[best], res->best_schedule,
                       sizeof(res->best_schedule));
  return NULL;
}

wm_status_t wm_session_tune(wm_session_t *s, double budget_s,
                            const char *records_path, wm_tune_result_t **out,
                            size_t *out_count) {
  *out = NULL;
  *out_count = 0;
  rt_plan_t *p = s->active;
  if (!p) {
    return WM_ERROR(FAILED_PRECONDITION,
                    "tune: the session has not run: no plan to tune");
  }
  char *path = NULL;
  WM_RETURN_IF_ERROR(rt_gen_records_path(records_path, &path));
  wm_gen_records_t records;
  wm_status_t e = wm_gen_records_load(path, &records);
  wm_tune_result_t *res = NULL;  // one per kernel tuned
  size_t cap = 0;
  char target[256];
  rt_gen_target(target, sizeof(target));
  uint64_t t0 = wm_now_ns();
  size_t n = 0;
  bool spent = false;
  for (size_t i = 0; !e && !spent && i < p->n_steps; i++) {
    rt_step_t *st = &p->steps[i];
    for (int32_t g = 0; !e && !spent && st->gen && g < st->gen->n_stages; g++) {
      const char *name = st->gen->stages[g]->name;
      if (!st->stages || !st->stages[g].kernel || st->stages[g].points ||
          rt_gen_before(p, i, g, name)) {
        continue;  // the records cover format c (a device of work items
                   // runs one per point)
      }
      if ((double)(wm_now_ns() - t0) / 1e9 > budget_s) {
        wm_log(WM_LOG_WARN,
               "tune: the budget of %.1f s is spent; %s and the "
               "kernels after it keep their schedules",
               budget_s, p->placement[st->node].node);
        spent = true;
        break;
      }
      e = wm_grow((void **)&res, &cap, n + 1, sizeof(*res));
      if (e) {
        break;
      }
      memset(&res[n], 0, sizeof(res[n]));
      e = tune_stage(s, p, st, g, target, &records, &res[n]);
      if (e) {
        e = wm_status_annotate(e, "tuning node \"%s\"",
                               p->placement[st->node].node);
      } else {
        n++;
      }
    }
  }
  if (!e) {
    e = wm_gen_records_save(&records, path);
  }
  wm_gen_records_free(&records);
  free(path);
  if (e) {
    free(res);
    return e;
  }
  *out = res;
  *out_count = n;
  return NULL;
}
