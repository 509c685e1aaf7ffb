// Runs of a model split over ranks (--parallel): each rank builds its
// tensor-parallel partition (src/parallel), opens a communicator (threads
// of this process, or the MPI job's processes under mpirun) and runs its
// own session; the report puts each collective's calls and bytes per rank
// beside the workload map's prediction for the same plan.
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "comm/comm.h"
#include "ops/ops.h"
#include "parallel/parallel.h"

typedef struct team team_t;

// One rank: its inputs, partition, communicator and session, kept across
// runs; the times of its last runs.
typedef struct rank_job {
  team_t *t;
  int32_t rank;
  wm_cli_dataset_t ds;  // this rank's inputs
  wm_graph_t *local;    // its partition
  wm_comm_t *comm;
  wm_session_t *session;
  wm_item_t *outs;  // the last run's outputs
  double *samples;  // ns per run of the last team_run
  size_t cap;
  uint64_t runs;  // session runs so far
  wm_tp_summary_t summary;
  wm_status_t status;
} rank_job_t;

// The ranks of one split: threads parked between runs (or, under mpirun,
// this process's rank alone).
struct team {
  const wm_cli_parallel_run_t *p;
  int32_t n;   // ranks
  bool dp;     // data parallel (else tensor parallel)
  bool mpi;    // ranks are the MPI job's processes
  int32_t me;  // MPI: this process's rank
  char id[WM_COMM_ID_MAX];
  rank_job_t *jobs;
  pthread_t *th;
  int32_t started;
  bool sync;           // mu and cv made
  pthread_mutex_t mu;  // guards gen and finished
  pthread_cond_t cv;   // gen moved (to ranks), finished grew (to main)
  uint64_t gen;        // work orders given
  int32_t finished;    // ranks done with the current order
  int32_t iters;       // runs of the next team_run
  bool feed;           // NAME.next feeds NAME between them
  bool quit;
};

// The rank's inputs: its share of the batch inputs (data parallel: rows
// rank * B/n ... of dim 0 of every input without a default), the others
// whole.
static wm_status_t rank_inputs(rank_job_t *j) {
  const wm_cli_parallel_run_t *p = j->t->p;
  const wm_graph_t *g = p->graph;
  int32_t n = j->t->n;
  wm_cli_dataset_t *ds = &j->ds;
  ds->input_names = wm_calloc(p->n_inputs + 1, sizeof(char *));
  ds->inputs = wm_calloc(p->n_inputs + 1, sizeof(wm_item_t));
  if (!ds->input_names || !ds->inputs) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for inputs");
  }
  for (size_t i = 0; i < p->n_inputs; i++) {
    const wm_item_t *it = &p->inputs[i];
    int32_t v = wm_graph_find_value(g, p->input_names[i]);
    bool share = j->t->dp && v >= 0 && !g->values[v].initializer &&
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
    if (b % n != 0) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "data parallelism over %d ranks: input \"%s\" has "
                      "batch %lld, which does not divide",
                      n, p->input_names[i], (long long)b);
    }
    if (x->dtype == WM_DTYPE_STRING) {
      return WM_ERROR(UNIMPLEMENTED,
                      "input \"%s\": string batches are not split",
                      p->input_names[i]);
    }
    wm_shape_t s = x->shape;
    s.dims[0] = b / n;
    wm_tensor_t *part = NULL;
    WM_RETURN_IF_ERROR(wm_tensor_create(x->dtype, &s, &part));
    memcpy(part->data, (const char *)x->data + part->nbytes * (size_t)j->rank,
           part->nbytes);
    ds->inputs[i] = wm_item_tensor_take(part);
  }
  return NULL;
}

static wm_status_t rank_setup(rank_job_t *j) {
  team_t *t = j->t;
  const wm_cli_parallel_run_t *p = t->p;
  WM_RETURN_IF_ERROR(rank_inputs(j));
  WM_RETURN_IF_ERROR(
      t->dp ? wm_dp_partition(p->graph, t->n, j->rank, &j->local, &j->summary)
            : wm_tp_partition(p->graph, t->n, j->rank, &j->local, &j->summary));
  j->outs = wm_calloc(j->local->output_count + 1, sizeof(*j->outs));
  if (!j->outs) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for outputs");
  }
  WM_RETURN_IF_ERROR(wm_comm_open(t->id, j->rank, t->n, &j->comm));
  wm_session_options_t so = *p->session;
  so.release_weights = true;  // the partition serves this session only
  return wm_session_create_placed(j->local, &so, &j->session);
}

static void clear_outs(rank_job_t *j) {
  for (size_t i = 0; j->local && i < j->local->output_count; i++) {
    wm_item_deinit(&j->outs[i]);
    memset(&j->outs[i], 0, sizeof(j->outs[i]));
  }
}

// The team's next |iters| runs on rank |j|, each timed.
static wm_status_t rank_runs(rank_job_t *j) {
  team_t *t = j->t;
  if ((size_t)t->iters > j->cap) {
    double *x = wm_realloc(j->samples, (size_t)t->iters * sizeof(double));
    if (!x) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for samples");
    }
    j->samples = x;
    j->cap = (size_t)t->iters;
  }
  wm_comm_set_current(j->comm);
  wm_status_t s = NULL;
  for (int32_t i = 0; !s && i < t->iters; i++) {
    if (i > 0 && t->feed) {
      s = wm_cli_feed_next(j->local, j->outs, &j->ds, NULL);
    }
    clear_outs(j);
    uint64_t t0 = wm_now_ns();
    if (!s) {
      s = wm_session_run_items(j->session,
                               (const char *const *)j->ds.input_names,
                               j->ds.inputs, j->ds.n_inputs, j->outs);
    }
    j->samples[i] = (double)(wm_now_ns() - t0);
    j->runs++;
  }
  wm_comm_set_current(NULL);
  if (s && j->comm) {
    wm_comm_abort(j->comm);  // the other ranks stop waiting for this one
  }
  return s ? wm_status_annotate(s, "rank %d of %s=%d", j->rank,
                                t->dp ? "dp" : "tp", t->n)
           : NULL;
}

static void rank_teardown(rank_job_t *j) {
  clear_outs(j);
  free(j->outs);
  wm_session_destroy(j->session);
  wm_comm_destroy(j->comm);
  wm_graph_destroy(j->local);
  wm_cli_dataset_deinit(&j->ds);
  free(j->samples);
  wm_status_free(j->status);
  memset(j, 0, sizeof(*j));
}

// Tells the main thread this rank finished its setup or its runs.
static void rank_finished(team_t *t) {
  pthread_mutex_lock(&t->mu);
  t->finished++;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
}

static void *rank_thread(void *arg) {
  rank_job_t *j = arg;
  team_t *t = j->t;
  j->status = rank_setup(j);
  rank_finished(t);
  uint64_t seen = 0;
  for (;;) {
    pthread_mutex_lock(&t->mu);
    while (t->gen == seen) {  // asleep while the team is idle
      pthread_cond_wait(&t->cv, &t->mu);
    }
    seen = t->gen;
    bool quit = t->quit;
    pthread_mutex_unlock(&t->mu);
    if (quit) {
      return NULL;
    }
    if (!j->status) {
      j->status = rank_runs(j);
    }
    rank_finished(t);
  }
}

// Waits until every started rank finished; gives the next order.
static void team_wait(team_t *t) {
  pthread_mutex_lock(&t->mu);
  while (t->finished < t->started) {
    pthread_cond_wait(&t->cv, &t->mu);
  }
  t->finished = 0;
  pthread_mutex_unlock(&t->mu);
}

static void team_order(team_t *t, bool quit) {
  pthread_mutex_lock(&t->mu);
  t->quit = quit;
  t->gen++;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
}

// The first rank's error that is its own (not another's failure seen
// through the communicator), or NULL; taken from the jobs.
static wm_status_t first_error(team_t *t) {
  wm_status_t s = NULL;
  for (int pass = 0; pass < 2 && !s; pass++) {
    for (int32_t r = 0; r < t->n && !s; r++) {
      wm_status_t e = t->jobs[r].status;
      if (e &&
          (pass == 1 || !strstr(wm_status_message(e), "communicator failed"))) {
        s = e;
        t->jobs[r].status = NULL;
      }
    }
  }
  return s;
}

static void team_close(team_t *t) {
  if (!t) {
    return;
  }
  if (t->started > 0) {
    team_order(t, true);
    for (int32_t r = 0; r < t->started; r++) {
      pthread_join(t->th[r], NULL);
    }
  }
  if (t->sync) {
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
  }
  for (int32_t r = 0; t->jobs && r < t->n; r++) {
    rank_teardown(&t->jobs[r]);
  }
  free(t->jobs);
  free(t->th);
  free(t);
}

// Sets up |n| ranks of |p| (|dp|: data parallel). Under mpirun (unless
// |local|) this process is rank t->me of the job; else the ranks are
// threads of this process.
static wm_status_t team_open(const wm_cli_parallel_run_t *p, int32_t n, bool dp,
                             bool local, team_t **out) {
  *out = NULL;
  team_t *t = wm_calloc(1, sizeof(*t));
  if (!t) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for %d ranks", n);
  }
  t->p = p;
  t->n = n;
  t->dp = dp;
  t->mpi = !local && wm_comm_mpi_launched();
  t->jobs = wm_calloc((size_t)n, sizeof(*t->jobs));
  t->th = wm_calloc((size_t)n, sizeof(*t->th));
  if (!t->jobs || !t->th) {
    team_close(t);
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for %d ranks", n);
  }
  for (int32_t r = 0; r < n; r++) {
    t->jobs[r].t = t;
    t->jobs[r].rank = r;
  }
  wm_status_t s = NULL;
  if (t->mpi) {
    int32_t size = 1;
    snprintf(t->id, sizeof(t->id), "mpi:world");
    s = wm_comm_mpi_init(&t->me, &size);
    if (!s && size != n) {
      s = WM_ERROR(INVALID_ARGUMENT,
                   "--parallel %s=%d under mpirun -np %d: the ranks are the "
                   "job's processes (want -np %d)",
                   dp ? "dp" : "tp", n, size, n);
    }
    if (!s) {
      rank_job_t *j = &t->jobs[t->me];
      j->status = rank_setup(j);
      s = j->status;
      j->status = NULL;
    }
  } else {
    wm_comm_new_id(t->id);
    t->sync = pthread_mutex_init(&t->mu, NULL) == 0;
    if (t->sync && pthread_cond_init(&t->cv, NULL) != 0) {
      pthread_mutex_destroy(&t->mu);
      t->sync = false;
    }
    s = t->sync ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "cannot make a team");
    for (; !s && t->started < n; t->started++) {
      if (pthread_create(&t->th[t->started], NULL, rank_thread,
                         &t->jobs[t->started]) != 0) {
        s = WM_ERROR(RESOURCE_EXHAUSTED, "could not start rank %d's thread",
                     t->started);
        break;
      }
    }
    if (t->started > 0) {
      team_wait(t);  // their setups
    }
    if (!s) {
      s = first_error(t);
    }
  }
  if (s) {
    team_close(t);
    return s;
  }
  *out = t;
  return NULL;
}

// |iters| runs on every rank (|feed|: NAME.next feeds NAME between them);
// *samples (iters entries, may be NULL) gets each run's time, the longest
// any rank took.
static wm_status_t team_run(team_t *t, int32_t iters, bool feed,
                            double *samples) {
  t->iters = iters;
  t->feed = feed;
  wm_status_t s = NULL;
  if (t->mpi) {
    rank_job_t *j = &t->jobs[t->me];
    s = rank_runs(j);
    if (s) {
      return s;
    }
    if (samples) {
      s = wm_comm_mpi_native(WM_COMM_ALL_REDUCE, j->samples, samples,
                             (size_t)iters, 11, WM_COMM_MAX);
    }
    return s;
  }
  team_order(t, false);
  team_wait(t);
  s = first_error(t);
  for (int32_t i = 0; !s && samples && i < iters; i++) {
    double m = 0;
    for (int32_t r = 0; r < t->n; r++) {
      m = t->jobs[r].samples[i] > m ? t->jobs[r].samples[i] : m;
    }
    samples[i] = m;
  }
  return s;
}

// The rank this process reports from.
static rank_job_t *reporter(team_t *t) {
  return &t->jobs[t->mpi ? t->me : 0];
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

static void report(team_t *t, double run_ms, wm_strbuf_t *out) {
  const wm_cli_parallel_run_t *p = t->p;
  const rank_job_t *j = reporter(t);
  uint64_t pc[WM_MAP_P2P + 1] = {0}, pb[WM_MAP_P2P + 1] = {0};
  int32_t n = t->n;
  wm_status_t s = predict(p, t->dp, n, pc, pb);
  const char *where = t->mpi ? "MPI processes" : "thread ranks";
  const char *per = p->steps > 1 ? "step" : "run";
  if (t->dp) {
    wm_strbuf_printf(out,
                     "parallel dp=%d on %d %s: each rank takes 1/%d of the "
                     "batch%s; %s %.1f ms\n",
                     n, n, where, n,
                     wm_dp_is_training(p->graph)
                         ? ", gradients averaged in one bucket"
                         : ", outputs gathered",
                     per, run_ms);
  } else {
    wm_strbuf_printf(out,
                     "parallel tp=%d on %d %s: %zu column- and %zu "
                     "row-parallel MatMuls per rank; %s %.1f ms\n",
                     n, n, where, j->summary.column_parallel,
                     j->summary.row_parallel, per, run_ms);
  }
  wm_strbuf_printf(out, "  per rank per %s:\n", per);
  wm_strbuf_printf(out, "  %-10s %8s %14s   %10s %14s  %s\n", "collective",
                   "calls", "bytes", "map: calls", "bytes", "");
  static const uint32_t kinds[] = {WM_COMM_ALL_REDUCE, WM_COMM_ALL_GATHER,
                                   WM_COMM_REDUCE_SCATTER, WM_COMM_BROADCAST};
  uint64_t runs = j->runs ? j->runs : 1;
  for (size_t k = 0; k < 4; k++) {
    uint32_t op = kinds[k];
    uint64_t c = 0, b = 0;
    wm_comm_counts(j->comm, op, &c, &b);
    c /= runs;
    b /= runs;
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

// Refuses what runs do not split yet; the rank count and kind.
static wm_status_t split_of(const wm_map_parallel_t *sp, int32_t *n, bool *dp) {
  if (sp->pp > 1 || (sp->dp > 1 && sp->tp > 1)) {
    return WM_ERROR(UNIMPLEMENTED,
                    "--parallel: runs split by tensor (tp=N) or data (dp=N) "
                    "parallelism, one of them, so far; dp=%d tp=%d pp=%d is "
                    "mapped by `wmap map --parallel`",
                    sp->dp, sp->tp, sp->pp);
  }
  *dp = sp->dp > 1;
  *n = *dp ? sp->dp : sp->tp;
  return NULL;
}

wm_status_t wm_cli_parallel_run(const wm_cli_parallel_run_t *p,
                                wm_item_t **out_outputs, wm_strbuf_t *rep) {
  *out_outputs = NULL;
  int32_t n = 1;
  bool dp = false;
  WM_RETURN_IF_ERROR(split_of(&p->spec, &n, &dp));
  // Types of every value, which the partition reads.
  WM_RETURN_IF_ERROR(wm_ops_check_graph(p->graph));
  team_t *t = NULL;
  WM_RETURN_IF_ERROR(team_open(p, n, dp, false, &t));
  int32_t steps = p->steps > 0 ? p->steps : 1;
  wm_status_t s = team_run(t, steps, true, NULL);
  rank_job_t *j = reporter(t);
  if (!s && (!t->mpi || t->me == 0)) {
    double sum = 0;
    for (int32_t i = 0; i < steps; i++) {
      double m = 0;  // the slowest rank of this process's view
      for (int32_t r = 0; r < t->n; r++) {
        const rank_job_t *x = &t->jobs[r];
        m = x->samples && x->samples[i] > m ? x->samples[i] : m;
      }
      sum += m;
    }
    if (rep) {
      report(t, sum / steps * 1e-6, rep);
    }
    *out_outputs = j->outs;
    j->outs = wm_calloc(j->local->output_count + 1, sizeof(*j->outs));
    if (!j->outs) {
      s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
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
  int32_t n = 1;
  bool dp = false;
  WM_RETURN_IF_ERROR(split_of(&p->spec, &n, &dp));
  WM_RETURN_IF_ERROR(wm_ops_check_graph(p->graph));
  team_t *split = NULL, *one = NULL;
  WM_RETURN_IF_ERROR(team_open(p, n, dp, false, &split));
  // The baseline: the whole model on one rank of the same threads, on
  // this process (under mpirun the others wait meanwhile).
  bool here = !split->mpi || split->me == 0;
  wm_status_t s = here ? team_open(p, 1, false, true, &one) : NULL;
  wm_baseline_t *bl = NULL;
  char label[2][64];
  snprintf(label[0], sizeof(label[0]), "1 rank");
  snprintf(label[1], sizeof(label[1]), "%s=%d on %d %s", dp ? "dp" : "tp", n, n,
           split->mpi ? "processes" : "threads");
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
  if (!s && split->mpi) {
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
        if (!s && split->mpi) {
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
    wm_env_set(&bl->env, "run.parallel", true, "%s=%d", dp ? "dp" : "tp", n);
    wm_env_set(&bl->env, "run.rank_threads", true, "%u", per);
    wm_env_finish(&bl->env);
    s = wm_baseline_finish(bl);
  }
  if (!s && here && rep) {
    const wm_bench_config_t *c = &bl->configs[1];
    report(split, c->latency.median * 1e-6, rep);
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
