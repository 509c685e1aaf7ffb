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
  int32_t n;            // ranks
  bool dp;              // data parallel (else tensor parallel)
  wm_cli_dataset_t ds;  // this rank's inputs
  char id[WM_COMM_ID_MAX];
  wm_item_t *outs;  // rank 0's outputs (others' are dropped)
  uint64_t calls[WM_COMM_BARRIER + 1], bytes[WM_COMM_BARRIER + 1];
  wm_tp_summary_t summary;
  double run_ms;
  wm_status_t status;
} rank_job_t;

// The rank's inputs: its share of the batch inputs (data parallel: rows
// rank * B/n ... of dim 0 of every input without a default), the others
// whole.
static wm_status_t rank_inputs(rank_job_t *j) {
  const wm_cli_parallel_run_t *p = j->p;
  const wm_graph_t *g = p->graph;
  wm_cli_dataset_t *ds = &j->ds;
  ds->input_names = wm_calloc(p->n_inputs + 1, sizeof(char *));
  ds->inputs = wm_calloc(p->n_inputs + 1, sizeof(wm_item_t));
  if (!ds->input_names || !ds->inputs) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for inputs");
  }
  for (size_t i = 0; i < p->n_inputs; i++) {
    const wm_item_t *it = &p->inputs[i];
    int32_t v = wm_graph_find_value(g, p->input_names[i]);
    bool share = j->dp && v >= 0 && !g->values[v].initializer &&
                 it->kind == WM_TYPE_TENSOR && it->tensor->shape.rank >= 1;
    ds->input_names[i] = wm_strdup(p->input_names[i]);
    if (!ds->input_names[i]) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for inputs");
    }
    ds->n_inputs = i + 1;
    if (!share) {
      WM_RETURN_IF_ERROR(wm_item_clone(it, &ds->inputs[i]));
      continue;
    }
    const wm_tensor_t *x = it->tensor;
    int64_t b = x->shape.dims[0];
    if (b % j->n != 0) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "data parallelism over %d ranks: input \"%s\" has "
                      "batch %lld, which does not divide",
                      j->n, p->input_names[i], (long long)b);
    }
    if (x->dtype == WM_DTYPE_STRING) {
      return WM_ERROR(UNIMPLEMENTED,
                      "input \"%s\": string batches are not split",
                      p->input_names[i]);
    }
    wm_shape_t s = x->shape;
    s.dims[0] = b / j->n;
    wm_tensor_t *part = NULL;
    WM_RETURN_IF_ERROR(wm_tensor_create(x->dtype, &s, &part));
    memcpy(part->data, (const char *)x->data + part->nbytes * (size_t)j->rank,
           part->nbytes);
    ds->inputs[i] = wm_item_tensor_take(part);
  }
  return NULL;
}

static wm_status_t rank_run(rank_job_t *j) {
  const wm_cli_parallel_run_t *p = j->p;
  int32_t n = j->n;
  wm_graph_t *local = NULL;
  WM_RETURN_IF_ERROR(rank_inputs(j));
  WM_RETURN_IF_ERROR(
      j->dp ? wm_dp_partition(p->graph, n, j->rank, &local, &j->summary)
            : wm_tp_partition(p->graph, n, j->rank, &local, &j->summary));
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
  int32_t steps = p->steps > 0 ? p->steps : 1;
  uint64_t t0 = wm_now_ns();
  for (int32_t step = 0; !s && step < steps; step++) {
    s = wm_session_run_items(session, (const char *const *)j->ds.input_names,
                             j->ds.inputs, j->ds.n_inputs, outs);
    if (!s && step + 1 < steps) {
      s = wm_cli_feed_next(local, outs, &j->ds, NULL);
      for (size_t i = 0; i < local->output_count; i++) {
        wm_item_deinit(&outs[i]);
        memset(&outs[i], 0, sizeof(outs[i]));
      }
    }
  }
  j->run_ms = (double)(wm_now_ns() - t0) * 1e-6 / steps;
  for (uint32_t op = 1; !s && op <= WM_COMM_BARRIER; op++) {
    wm_comm_counts(comm, op, &j->calls[op], &j->bytes[op]);
    j->calls[op] /= (uint64_t)steps;  // per run
    j->bytes[op] /= (uint64_t)steps;
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
  return s ? wm_status_annotate(s, "rank %d of %s=%d", j->rank,
                                j->dp ? "dp" : "tp", n)
           : NULL;
}

static void *rank_thread(void *arg) {
  rank_job_t *j = arg;
  j->status = rank_run(j);
  return NULL;
}

// One data-parallel rank's graph as the map reads it: the batch inputs'
// dim 0 divided, every other type inferred again.
static wm_status_t per_rank_graph(const wm_graph_t *g, int32_t dp,
                                  wm_graph_t **out) {
  wm_graph_t *c = NULL;
  WM_RETURN_IF_ERROR(wm_graph_clone(g, NULL, &c));
  wm_status_t s = NULL;
  wm_type_t unknown = wm_type_unknown();
  for (size_t v = 0; !s && v < c->value_count; v++) {
    wm_value_t *x = &c->values[v];
    if (x->is_input && !x->initializer && x->type.shape.rank >= 1) {
      wm_type_t t = x->type;
      t.shape.dims[0] = t.shape.dims[0] >= 0 ? t.shape.dims[0] / dp : -1;
      s = wm_graph_set_type(c, (int32_t)v, &t);
    } else if (x->producer >= 0) {
      s = wm_graph_set_type(c, (int32_t)v, &unknown);
    }
  }
  if (!s) {
    s = wm_ops_check_graph(c);
  }
  if (s) {
    wm_graph_destroy(c);
    return s;
  }
  *out = c;
  return NULL;
}

// The map's prediction per collective kind: calls and bytes per rank per
// run (a forward pass; a step of a training graph).
static wm_status_t predict(const wm_cli_parallel_run_t *p, bool dp, int32_t n,
                           uint64_t calls[WM_MAP_P2P + 1],
                           uint64_t bytes[WM_MAP_P2P + 1]) {
  bool training = dp && wm_dp_is_training(p->graph);
  wm_map_parallel_t spec = p->spec;
  spec.inference = !training;
  spec.microbatches = 1;
  spec.grad_bytes = 4;
  wm_graph_t *g = p->graph, *owned = NULL;
  if (dp) {
    WM_RETURN_IF_ERROR(per_rank_graph(p->graph, n, &owned));
    g = owned;
  }
  wm_map_options_t mo = {.model = "parallel run",
                         .backends = p->session->backends,
                         .backend_count = p->session->backend_count,
                         .parallel = &spec};
  wm_map_t *map = NULL;
  wm_status_t s = wm_map_build(g, &mo, &map);
  for (size_t i = 0; !s && i < map->plan.n_coll; i++) {
    const wm_map_collective_t *c = &map->plan.coll[i];
    double per = training ? c->per_step : c->per_forward;
    if (c->kind <= WM_MAP_P2P) {
      calls[c->kind] += (uint64_t)(per + 0.5);
      bytes[c->kind] += (uint64_t)(per * (double)c->bytes + 0.5);
    }
  }
  wm_map_destroy(map);
  wm_graph_destroy(owned);
  return s;
}

static void report(const wm_cli_parallel_run_t *p, const rank_job_t *jobs,
                   int32_t n, bool mpi, wm_strbuf_t *out) {
  uint64_t pc[WM_MAP_P2P + 1] = {0}, pb[WM_MAP_P2P + 1] = {0};
  bool dp = jobs[0].dp;
  wm_status_t s = predict(p, dp, n, pc, pb);
  double slowest = 0;
  for (int32_t r = 0; r < n; r++) {
    slowest = jobs[r].run_ms > slowest ? jobs[r].run_ms : slowest;
  }
  if (dp) {
    wm_strbuf_printf(out,
                     "parallel dp=%d on %d %s: each rank takes 1/%d of the "
                     "batch%s; %s %.1f ms (%s)\n",
                     n, n, mpi ? "MPI processes" : "thread ranks", n,
                     wm_dp_is_training(p->graph)
                         ? ", gradients averaged in one bucket"
                         : ", outputs gathered",
                     p->steps > 1 ? "step" : "run", slowest,
                     mpi ? "rank 0" : "slowest rank");
  } else {
    wm_strbuf_printf(out,
                     "parallel tp=%d on %d %s: %zu column- and %zu "
                     "row-parallel MatMuls per rank; %s %.1f ms (%s)\n",
                     n, n, mpi ? "MPI processes" : "thread ranks",
                     jobs[0].summary.column_parallel,
                     jobs[0].summary.row_parallel,
                     p->steps > 1 ? "step" : "run", slowest,
                     mpi ? "rank 0" : "slowest rank");
  }
  wm_strbuf_printf(out, "  per rank per %s:\n", p->steps > 1 ? "step" : "run");
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
  if (sp->pp > 1 || (sp->dp > 1 && sp->tp > 1)) {
    return WM_ERROR(UNIMPLEMENTED,
                    "--parallel: runs split by tensor (tp=N) or data (dp=N) "
                    "parallelism, one of them, so far; dp=%d tp=%d pp=%d is "
                    "mapped by `wmap map --parallel`",
                    sp->dp, sp->tp, sp->pp);
  }
  bool dp = sp->dp > 1;
  int32_t n = dp ? sp->dp : sp->tp;
  // Types of every value, which the partition reads.
  WM_RETURN_IF_ERROR(wm_ops_check_graph(p->graph));
  bool mpi = wm_comm_mpi_launched();
  int32_t wrank = 0, wsize = 1;
  if (mpi) {
    WM_RETURN_IF_ERROR(wm_comm_mpi_init(&wrank, &wsize));
    if (wsize != n) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "--parallel %s=%d under mpirun -np %d: the ranks are "
                      "the job's processes (want -np %d)",
                      dp ? "dp" : "tp", n, wsize, n);
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
    jobs[r].n = n;
    jobs[r].dp = dp;
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
      for (int32_t r = 0; r < n; r++) {
        wm_cli_dataset_deinit(&jobs[r].ds);
      }
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
  for (int32_t r = 0; r < n; r++) {
    wm_cli_dataset_deinit(&jobs[r].ds);
  }
  free(jobs);
  return s;
}
