// Runs of a model split over ranks (--parallel): each rank builds its
// tensor-parallel partition (src/parallel), opens a communicator (threads
// of this process, or the MPI job's processes under mpirun) and runs its
// own session; the report puts each collective's calls and bytes per rank
// beside the workload map's prediction for the same plan.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "comm/comm.h"
#include "ops/ops.h"
#include "parallel/parallel.h"

typedef struct rank_job {
  const wm_cli_parallel_run_t *p;
  int32_t rank;
  char id[WM_COMM_ID_MAX];
  wm_item_t *outs;  // rank 0's outputs (others' are dropped)
  uint64_t calls[WM_COMM_BARRIER + 1], bytes[WM_COMM_BARRIER + 1];
  wm_tp_summary_t summary;
  double run_ms;
  wm_status_t status;
} rank_job_t;

static wm_status_t rank_run(rank_job_t *j) {
  const wm_cli_parallel_run_t *p = j->p;
  int32_t n = p->spec.tp;
  wm_graph_t *local = NULL;
  WM_RETURN_IF_ERROR(
      wm_tp_partition(p->graph, n, j->rank, &local, &j->summary));
  wm_comm_t *comm = NULL;
  wm_session_t *session = NULL;
  wm_item_t *outs = wm_calloc(local->output_count + 1, sizeof(*outs));
  wm_status_t s =
      outs ? wm_comm_open(j->id, j->rank, n, &comm)
           : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for outputs");
  if (!s) {
    wm_comm_set_current(comm);
    wm_session_options_t so = *p->session;
    so.release_weights = true;  // the partition serves this session only
    s = wm_session_create_placed(local, &so, &session);
  }
  if (!s) {
    uint64_t t0 = wm_now_ns();
    s = wm_session_run_items(session, p->input_names, p->inputs, p->n_inputs,
                             outs);
    j->run_ms = (double)(wm_now_ns() - t0) * 1e-6;
  }
  for (uint32_t op = 1; !s && op <= WM_COMM_BARRIER; op++) {
    wm_comm_counts(comm, op, &j->calls[op], &j->bytes[op]);
  }
  wm_comm_set_current(NULL);
  wm_session_destroy(session);
  if (s && comm) {
    wm_comm_abort(comm);  // the other ranks stop waiting for this one
  }
  wm_comm_destroy(comm);
  if (!s && j->rank == 0) {
    j->outs = outs;
    outs = NULL;
  }
  for (size_t i = 0; outs && i < local->output_count; i++) {
    wm_item_deinit(&outs[i]);
  }
  free(outs);
  wm_graph_destroy(local);
  return s ? wm_status_annotate(s, "rank %d of tp=%d", j->rank, n) : NULL;
}

static void *rank_thread(void *arg) {
  rank_job_t *j = arg;
  j->status = rank_run(j);
  return NULL;
}

// The map's prediction per collective kind: calls and bytes per rank per
// forward pass.
static wm_status_t predict(const wm_cli_parallel_run_t *p,
                           uint64_t calls[WM_MAP_P2P + 1],
                           uint64_t bytes[WM_MAP_P2P + 1]) {
  wm_map_parallel_t spec = p->spec;
  spec.inference = true;
  spec.microbatches = spec.microbatches > 0 ? spec.microbatches : 1;
  wm_map_options_t mo = {.model = "parallel run",
                         .backends = p->session->backends,
                         .backend_count = p->session->backend_count,
                         .parallel = &spec};
  wm_map_t *map = NULL;
  WM_RETURN_IF_ERROR(wm_map_build(p->graph, &mo, &map));
  for (size_t i = 0; i < map->plan.n_coll; i++) {
    const wm_map_collective_t *c = &map->plan.coll[i];
    if (c->kind <= WM_MAP_P2P) {
      calls[c->kind] += (uint64_t)(c->per_forward + 0.5);
      bytes[c->kind] += (uint64_t)(c->per_forward * (double)c->bytes + 0.5);
    }
  }
  wm_map_destroy(map);
  return NULL;
}

static void report(const wm_cli_parallel_run_t *p, const rank_job_t *jobs,
                   int32_t n, bool mpi, wm_strbuf_t *out) {
  uint64_t pc[WM_MAP_P2P + 1] = {0}, pb[WM_MAP_P2P + 1] = {0};
  wm_status_t s = predict(p, pc, pb);
  double slowest = 0;
  for (int32_t r = 0; r < n; r++) {
    slowest = jobs[r].run_ms > slowest ? jobs[r].run_ms : slowest;
  }
  wm_strbuf_printf(out,
                   "parallel tp=%d on %d %s: %zu column- and %zu "
                   "row-parallel MatMuls per rank; run %.1f ms (%s)\n",
                   n, n, mpi ? "MPI processes" : "thread ranks",
                   jobs[0].summary.column_parallel,
                   jobs[0].summary.row_parallel, slowest,
                   mpi ? "rank 0" : "slowest rank");
  wm_strbuf_printf(out, "  %-10s %8s %14s   %10s %14s  %s\n", "collective",
                   "calls", "bytes", "map: calls", "bytes", "");
  static const uint32_t kinds[] = {WM_COMM_ALL_REDUCE, WM_COMM_ALL_GATHER,
                                   WM_COMM_REDUCE_SCATTER, WM_COMM_BROADCAST};
  for (size_t k = 0; k < 4; k++) {
    uint32_t op = kinds[k];
    uint64_t c = jobs[0].calls[op], b = jobs[0].bytes[op];
    if (!c && !pc[op]) {
      continue;
    }
    bool same = !s && c == pc[op] && b == pb[op];
    wm_strbuf_printf(out, "  %-10s %8llu %14llu   %10llu %14llu  %s\n",
                     wm_comm_op_name(op), (unsigned long long)c,
                     (unsigned long long)b, (unsigned long long)pc[op],
                     (unsigned long long)pb[op],
                     s      ? "(no map)"
                     : same ? "as predicted"
                            : "DIFFERS");
  }
  if (s) {
    wm_strbuf_printf(out, "  the map could not be built: %s\n",
                     wm_status_message(s));
    wm_status_free(s);
  }
}

wm_status_t wm_cli_parallel_run(const wm_cli_parallel_run_t *p,
                                wm_item_t **out_outputs, wm_strbuf_t *rep) {
  *out_outputs = NULL;
  const wm_map_parallel_t *sp = &p->spec;
  if (sp->dp > 1 || sp->pp > 1) {
    return WM_ERROR(UNIMPLEMENTED,
                    "--parallel: runs split by tensor parallelism (tp=N) "
                    "only so far; dp=%d pp=%d are mapped by `wmap map "
                    "--parallel`",
                    sp->dp, sp->pp);
  }
  int32_t n = sp->tp;
  // Types of every value, which the partition reads.
  WM_RETURN_IF_ERROR(wm_ops_check_graph(p->graph));
  bool mpi = wm_comm_mpi_launched();
  int32_t wrank = 0, wsize = 1;
  if (mpi) {
    WM_RETURN_IF_ERROR(wm_comm_mpi_init(&wrank, &wsize));
    if (wsize != n) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "--parallel tp=%d under mpirun -np %d: the ranks are "
                      "the job's processes (want -np %d)",
                      n, wsize, n);
    }
  }
  rank_job_t *jobs = wm_calloc((size_t)n, sizeof(*jobs));
  if (!jobs) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for %d ranks", n);
  }
  char id[WM_COMM_ID_MAX];
  wm_comm_new_id(id);
  for (int32_t r = 0; r < n; r++) {
    jobs[r].p = p;
    jobs[r].rank = r;
    snprintf(jobs[r].id, sizeof(jobs[r].id), "%s", mpi ? "mpi:world" : id);
  }
  wm_status_t s = NULL;
  if (mpi) {
    jobs[wrank].status = rank_run(&jobs[wrank]);
    s = jobs[wrank].status;
    jobs[wrank].status = NULL;
    if (s) {
      fprintf(stderr, "wmap: %s\n", wm_status_message(s));
      wm_comm_mpi_abort(WM_EXIT_FAILED);
    }
    if (wrank != 0) {
      free(jobs);
      return NULL;  // rank 0 reports
    }
  } else {
    pthread_t *th = wm_calloc((size_t)n, sizeof(*th));
    if (!th) {
      free(jobs);
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for %d ranks", n);
    }
    int32_t started = 0;
    for (; started < n; started++) {
      if (pthread_create(&th[started], NULL, rank_thread, &jobs[started])) {
        break;
      }
    }
    for (int32_t r = 0; r < started; r++) {
      pthread_join(th[r], NULL);
    }
    free(th);
    if (started < n) {
      s = WM_ERROR(RESOURCE_EXHAUSTED, "could not start rank %d's thread",
                   started);
    }
    // The first rank that failed on its own (not because another did).
    for (int32_t r = 0; r < n; r++) {
      if (!s && jobs[r].status &&
          !strstr(wm_status_message(jobs[r].status), "communicator failed")) {
        s = jobs[r].status;
        jobs[r].status = NULL;
      }
    }
    for (int32_t r = 0; r < n; r++) {
      if (!s && jobs[r].status) {
        s = jobs[r].status;
        jobs[r].status = NULL;
      }
      wm_status_free(jobs[r].status);
    }
  }
  if (!s && rep) {
    report(p, jobs, n, mpi, rep);
  }
  if (!s) {
    *out_outputs = jobs[0].outs;
    jobs[0].outs = NULL;
  }
  for (size_t i = 0; jobs[0].outs && i < p->graph->output_count; i++) {
    wm_item_deinit(&jobs[0].outs[i]);
  }
  free(jobs[0].outs);
  free(jobs);
  return s;
}
