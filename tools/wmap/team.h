// The ranks of a split run, kept between runs (tools/wmap/team.c): threads
// parked on a condition variable, or, under mpirun, this process's rank
// alone. Used by `wmap run --parallel` and `wmap bench --parallel`
// (parallel.c).
#ifndef WMAP_TOOLS_TEAM_H_
#define WMAP_TOOLS_TEAM_H_

#include "cli.h"

typedef struct team team_t;

typedef enum split_kind { SPLIT_TP, SPLIT_DP, SPLIT_PP } split_kind_t;

// "tp", "dp" or "pp".
const char *team_split_name(split_kind_t k);
// What --parallel asks: the rank count, the kind and a pipeline's
// micro-batches; UNIMPLEMENTED for two kinds at once.
wm_status_t team_split_of(const wm_map_parallel_t *sp, int32_t *n,
                          split_kind_t *kind,
                          int32_t *micro) WM_MUST_USE_RESULT;
// Sets up |n| ranks of |p| split as |kind| says (|micro|: a pipeline's
// micro-batches; its stages are the map's). Under mpirun (unless |local|)
// this process is one rank of the job; else the ranks are threads.
wm_status_t team_open(const wm_cli_parallel_run_t *p, int32_t n,
                      split_kind_t kind, int32_t micro, bool local,
                      team_t **out) WM_MUST_USE_RESULT;
// |iters| runs on every rank (|feed|: NAME.next feeds NAME between them);
// *samples (iters entries, may be NULL) gets each run's time in ns, the
// longest any rank took.
wm_status_t team_run(team_t *t, int32_t iters, bool feed,
                     double *samples) WM_MUST_USE_RESULT;
void team_close(team_t *t);
// Whether this process reports and holds the outputs (the first rank, or
// a pipeline's last stage).
bool team_reports(const team_t *t);
bool team_is_mpi(const team_t *t);
// Sends and their bytes per run over every rank (a pipeline's transfers);
// under mpirun every process must call it.
wm_status_t team_send_totals(team_t *t, uint64_t *calls,
                             uint64_t *bytes) WM_MUST_USE_RESULT;
// The mean of the last |runs| runs' times in ms (the slowest rank each).
double team_mean_ms(const team_t *t, int32_t runs);
// Appends the report: the split, |run_ms|, each collective's calls and
// bytes per run beside the map's prediction (|sends| and |send_bytes|
// from team_send_totals).
void team_report(team_t *t, double run_ms, uint64_t sends, uint64_t send_bytes,
                 wm_strbuf_t *out);
// The reporting rank's last outputs (graph->output_count items; the caller
// deinits and frees them).
wm_status_t team_take_outputs(team_t *t, wm_item_t **out) WM_MUST_USE_RESULT;

#endif  // WMAP_TOOLS_TEAM_H_
