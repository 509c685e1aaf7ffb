// Runs and benchmarks of a model split over ranks (--parallel), on the
// ranks of a team (team.h).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "comm/comm.h"
#include "ops/ops.h"
#include "team.h"

wm_status_t wm_cli_parallel_run(const wm_cli_parallel_run_t *p,
                                wm_item_t **out_outputs, wm_strbuf_t *rep) {
  *out_outputs = NULL;
  int32_t n = 1, micro = 1;
  split_kind_t kind = SPLIT_TP;
  WM_RETURN_IF_ERROR(team_split_of(&p->spec, &n, &kind, &micro));
  int32_t steps = p->steps > 0 ? p->steps : 1;
  if (kind == SPLIT_PP && steps > 1) {
    return WM_ERROR(UNIMPLEMENTED,
                    "--steps with pipeline stages: a training step is not "
                    "split into stages yet");
  }
  // Types of every value, which the partition reads.
  WM_RETURN_IF_ERROR(wm_ops_check_graph(p->graph));
  team_t *t = NULL;
  WM_RETURN_IF_ERROR(team_open(p, n, kind, micro, false, &t));
  wm_status_t s = team_run(t, steps, true, NULL);
  uint64_t sends = 0, send_bytes = 0;
  if (!s) {
    s = team_send_totals(t, &sends, &send_bytes);
  }
  if (!s && team_reports(t)) {
    if (rep) {
      team_report(t, team_mean_ms(t, steps), sends, send_bytes, rep);
    }
    s = team_take_outputs(t, out_outputs);
  }
  team_close(t);
  return s;
}

// Calibrates |t|'s runs per block: one untimed run, one timed.
static wm_status_t calibrate(team_t *t, double min_time, int32_t min_iters,
                             int32_t *out_iters) {
  double one = 0;
  WM_RETURN_IF_ERROR(team_run(t, 1, false, NULL));
  WM_RETURN_IF_ERROR(team_run(t, 1, false, &one));
  double want = min_time * 1e9 / (one > 1 ? one : 1);
  *out_iters = want > 100000      ? 100000
               : want < min_iters ? min_iters
                                  : (int32_t)ceil(want);
  return NULL;
}

// Appends a block of |n| samples to configuration |c| of |bl|.
static wm_status_t add_block(wm_baseline_t *bl, wm_bench_config_t *c,
                             int32_t order, const double *x, size_t n) {
  wm_bench_block_t *b = &c->blocks[c->n_blocks];
  b->index = (int32_t)c->n_blocks;
  b->order = order;
  b->n = n;
  b->samples = wm_arena_alloc(&bl->arena, (n + 1) * sizeof(double));
  if (!b->samples) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for samples");
  }
  memcpy(b->samples, x, n * sizeof(double));
  c->n_blocks++;
  return NULL;
}

wm_status_t wm_cli_parallel_bench(const wm_cli_parallel_bench_t *o,
                                  wm_baseline_t **out, wm_strbuf_t *rep) {
  *out = NULL;
  const wm_cli_parallel_run_t *p = &o->run;
  int32_t n = 1, micro = 1;
  split_kind_t kind = SPLIT_TP;
  WM_RETURN_IF_ERROR(team_split_of(&p->spec, &n, &kind, &micro));
  WM_RETURN_IF_ERROR(wm_ops_check_graph(p->graph));
  team_t *split = NULL, *one = NULL;
  WM_RETURN_IF_ERROR(team_open(p, n, kind, micro, false, &split));
  // The baseline: the whole model on one rank of the same threads, on
  // this process (under mpirun the others wait meanwhile).
  bool here = team_reports(split);
  wm_status_t s = here ? team_open(p, 1, SPLIT_TP, 1, true, &one) : NULL;
  wm_baseline_t *bl = NULL;
  char label[2][64];
  snprintf(label[0], sizeof(label[0]), "1 rank");
  snprintf(label[1], sizeof(label[1]), "%s=%d on %d %s", team_split_name(kind),
           n, n, team_is_mpi(split) ? "processes" : "threads");
  if (!s && here) {
    s = wm_cli_baseline_new(o->model_name, o->model_sha256, 2, &bl);
  }
  uint32_t per = o->rank_threads ? o->rank_threads : 1;
  for (int k = 0; !s && here && k < 2; k++) {
    wm_bench_config_t *c = &bl->configs[bl->n_configs++];
    c->label = wm_arena_strdup(&bl->arena, label[k]);
    c->backends = wm_arena_alloc(
        &bl->arena, (p->session->backend_count + 1) * sizeof(char *));
    c->blocks =
        wm_arena_alloc(&bl->arena, (size_t)o->blocks * sizeof(*c->blocks));
    if (!c->label || !c->backends || !c->blocks) {
      s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
      break;
    }
    for (size_t i = 0; i < p->session->backend_count; i++) {
      c->backends[i] =
          wm_arena_strdup(&bl->arena, wm_backend_name(p->session->backends[i]));
      if (!c->backends[i]) {
        s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
      }
    }
    c->n_backends = p->session->backend_count;
    c->threads = per * (uint32_t)(k == 0 ? 1 : n);  // cores in use
  }
  int32_t iters[2] = {0, 0};
  if (!s && here) {
    s = calibrate(one, o->min_time, o->min_iters, &iters[0]);
  }
  if (!s && team_is_mpi(split)) {
    s = wm_comm_mpi_idle_barrier();  // the others waited for rank 0
  }
  if (!s) {
    s = calibrate(split, o->min_time, o->min_iters, &iters[1]);
  }
  double *x = NULL;
  if (!s) {
    int32_t most = iters[0] > iters[1] ? iters[0] : iters[1];
    x = wm_calloc((size_t)most + 1, sizeof(double));
    s = x ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  // Blocks interleaved, the order alternating: A B, B A, ...
  for (int32_t b = 0; !s && b < o->blocks; b++) {
    for (int32_t m = 0; !s && m < 2; m++) {
      int k = (b + m) % 2;
      if (k == 0) {
        if (here) {
          s = team_run(one, 1, false, NULL);  // warm-up
          if (!s) {
            s = team_run(one, iters[0], false, x);
          }
          if (!s) {
            s = add_block(bl, &bl->configs[0], 2 * b + m, x, (size_t)iters[0]);
          }
        }
        if (!s && team_is_mpi(split)) {
          s = wm_comm_mpi_idle_barrier();
        }
      } else {
        s = team_run(split, 1, false, NULL);
        if (!s) {
          s = team_run(split, iters[1], false, x);
        }
        if (!s && here) {
          s = add_block(bl, &bl->configs[1], 2 * b + m, x, (size_t)iters[1]);
        }
      }
    }
  }
  free(x);
  if (!s && here) {
    bl->blocks = o->blocks;
    bl->min_time_s = o->min_time;
    bl->min_iters = o->min_iters;
    bl->in_process = true;  // the ranks are kept between blocks
    wm_env_set(&bl->env, "run.parallel", true, "%s=%d", team_split_name(kind),
               n);
    wm_env_set(&bl->env, "run.rank_threads", true, "%u", per);
    wm_env_finish(&bl->env);
    s = wm_baseline_finish(bl);
  }
  uint64_t sends = 0, send_bytes = 0;
  if (!s) {
    s = team_send_totals(split, &sends, &send_bytes);
  }
  if (!s && here && rep) {
    const wm_bench_config_t *c = &bl->configs[1];
    team_report(split, c->latency.median * 1e-6, sends, send_bytes, rep);
    if (c->has_scaling) {
      wm_strbuf_printf(rep,
                       "  strong scaling against 1 rank (P50 %.2f ms -> "
                       "%.2f ms, %u thread%s a rank): speedup %.2fx, "
                       "efficiency %.0f %%\n",
                       bl->configs[0].latency.median * 1e-6,
                       c->latency.median * 1e-6, per, per == 1 ? "" : "s",
                       c->speedup, 100 * c->efficiency);
    }
  }
  team_close(one);
  team_close(split);
  if (s) {
    wm_baseline_destroy(bl);
    return s;
  }
  *out = bl;
  return NULL;
}
