// The ranks of a split run (team.h): each rank builds its partition
// (src/parallel), opens a communicator (threads of this process, or the
// MPI job's processes under mpirun) and its own session, then runs on
// order; a pipeline's ranks pass micro-batches along. The report puts each
// collective's calls and bytes beside the workload map's prediction.
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "comm/comm.h"
#include "ops/ops.h"
#include "parallel/parallel.h"
#include "team.h"

const char *team_split_name(split_kind_t k) {
  return k == SPLIT_DP ? "dp" : k == SPLIT_PP ? "pp" : "tp";
}

// One rank: its inputs, partition, communicator and session, kept across
// runs; the times of its last runs.
// Where a pipeline stage's values come from, worked out at setup, and the
// tensors every micro-batch reuses.
typedef struct pp_route {
  const char **names;    // the stage graph's inputs
  wm_item_t *items;      // their values (borrowed; slices for batch ones)
  wm_tensor_t **slices;  // per input: its micro-batch rows, or NULL
  size_t n_in;
  int32_t *from;     // per input: receive k >= 0 or -1 - input d; then per
                     // send and per output: receive k or -1 - stage output
  wm_tensor_t **rx;  // per receive: the tensor it lands in
  size_t n_rx;
} pp_route_t;

typedef struct rank_job {
  team_t *t;
  int32_t rank;
  wm_cli_dataset_t ds;  // this rank's inputs
  wm_graph_t *local;    // its partition (pipeline: the stage's graph)
  wm_pp_stage_t stage;  // pipeline: the stage
  pp_route_t route;     // pipeline: where its values come from
  wm_comm_t *comm;
  wm_session_t *session;
  wm_item_t *outs;  // the last run's outputs
  size_t n_outs;    // room in outs
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
  int32_t n;          // ranks
  split_kind_t kind;  // how the model is split
  int32_t micro;      // pipeline: micro-batches a run
  int32_t *stage_of;  // pipeline: each node's stage (the map's)
  bool mpi;           // ranks are the MPI job's processes
  int32_t me;         // MPI: this process's rank
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
    bool share = j->t->kind == SPLIT_DP && v >= 0 &&
                 !g->values[v].initializer && it->kind == WM_TYPE_TENSOR &&
                 it->tensor->shape.rank >= 1;
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

static wm_status_t pp_routes(rank_job_t *j);

static wm_status_t rank_setup(rank_job_t *j) {
  team_t *t = j->t;
  const wm_cli_parallel_run_t *p = t->p;
  WM_RETURN_IF_ERROR(rank_inputs(j));
  if (t->kind == SPLIT_PP) {
    WM_RETURN_IF_ERROR(wm_pp_partition(p->graph, t->stage_of, t->n, j->rank,
                                       t->micro, &j->stage));
    j->local = j->stage.graph;
    j->route.n_in = j->local->input_count;
    j->route.n_rx = j->stage.n_recv;
    WM_RETURN_IF_ERROR(pp_routes(j));
  } else {
    WM_RETURN_IF_ERROR(
        t->kind == SPLIT_DP
            ? wm_dp_partition(p->graph, t->n, j->rank, &j->local, &j->summary)
            : wm_tp_partition(p->graph, t->n, j->rank, &j->local, &j->summary));
  }
  j->n_outs = j->local->output_count > p->graph->output_count
                  ? j->local->output_count
                  : p->graph->output_count;
  j->outs = wm_calloc(j->n_outs + 1, sizeof(*j->outs));
  if (!j->outs) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for outputs");
  }
  WM_RETURN_IF_ERROR(wm_comm_open(t->id, j->rank, t->n, &j->comm));
  wm_session_options_t so = *p->session;
  so.release_weights = true;  // the partition serves this session only
  return wm_session_create_placed(j->local, &so, &j->session);
}

static void clear_outs(rank_job_t *j) {
  for (size_t i = 0; j->outs && i < j->n_outs; i++) {
    wm_item_deinit(&j->outs[i]);
    memset(&j->outs[i], 0, sizeof(j->outs[i]));
  }
}

static int32_t find_name(const wm_pp_value_t *v, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(v[i].name, name) == 0) {
      return (int32_t)i;
    }
  }
  return -1;
}

// Where value |name| comes from in a micro-batch of stage |st|: received
// (k >= 0, the receive's index; only if |received| allows), else made by
// the stage (-1 - the stage graph's output index); INT32_MIN when neither.
static int32_t pp_source(const wm_pp_stage_t *st, const char *name,
                         bool received) {
  int32_t k = received ? find_name(st->recv, st->n_recv, name) : -1;
  if (k >= 0) {
    return k;
  }
  const wm_graph_t *g = st->graph;
  int32_t id = wm_graph_find_value(g, name);
  for (size_t o = 0; id >= 0 && o < g->output_count; o++) {
    if (g->outputs[o] == id) {
      return -1 - (int32_t)o;
    }
  }
  return INT32_MIN;
}

// Works out once where every value of a micro-batch comes from and makes
// the tensors each micro-batch reuses: one per received value, one per
// batch input's micro-batch slice.
static wm_status_t pp_routes(rank_job_t *j) {
  const wm_pp_stage_t *st = &j->stage;
  const wm_graph_t *g = st->graph, *whole = j->t->p->graph;
  pp_route_t *rt = &j->route;
  size_t ni = g->input_count;
  rt->names = wm_calloc(ni + 1, sizeof(*rt->names));
  rt->items = wm_calloc(ni + 1, sizeof(*rt->items));
  rt->slices = wm_calloc(ni + 1, sizeof(*rt->slices));
  rt->from = wm_calloc(ni + st->n_send + st->n_outputs + 1, sizeof(int32_t));
  rt->rx = wm_calloc(st->n_recv + 1, sizeof(*rt->rx));
  if (!rt->names || !rt->items || !rt->slices || !rt->from || !rt->rx) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t k = 0; k < st->n_recv; k++) {
    const wm_pp_value_t *v = &st->recv[k];
    if (v->type.dtype == WM_DTYPE_STRING ||
        !wm_shape_is_known(&v->type.shape)) {
      return WM_ERROR(UNIMPLEMENTED,
                      "value \"%s\" crosses stages without a known numeric "
                      "type",
                      v->name);
    }
    WM_RETURN_IF_ERROR(
        wm_tensor_create(v->type.dtype, &v->type.shape, &rt->rx[k]));
  }
  for (size_t i = 0; i < ni; i++) {
    const char *name = g->values[g->inputs[i]].name;
    rt->names[i] = name;
    int32_t k = find_name(st->recv, st->n_recv, name);
    if (k >= 0) {
      rt->from[i] = k;
      rt->items[i] = (wm_item_t){.kind = WM_TYPE_TENSOR, .tensor = rt->rx[k]};
      continue;
    }
    size_t d = 0;
    while (d < j->ds.n_inputs && strcmp(j->ds.input_names[d], name) != 0) {
      d++;
    }
    if (d == j->ds.n_inputs) {
      return WM_ERROR(NOT_FOUND, "stage %d: no value for input \"%s\"", j->rank,
                      name);
    }
    rt->from[i] = -1 - (int32_t)d;
    rt->items[i] = j->ds.inputs[d];  // borrowed
    int32_t v = wm_graph_find_value(whole, name);
    bool batch = v >= 0 && !whole->values[v].initializer;
    const wm_item_t *x = &j->ds.inputs[d];
    int32_t m = j->t->micro;
    if (m == 1 || !batch) {
      continue;
    }
    const wm_tensor_t *t = x->tensor;
    if (x->kind != WM_TYPE_TENSOR || t->shape.rank < 1 ||
        t->shape.dims[0] % m != 0 || t->dtype == WM_DTYPE_STRING) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "an input of batch %lld does not split into %d numeric "
                      "micro-batches",
                      (long long)(x->kind == WM_TYPE_TENSOR && t->shape.rank
                                      ? t->shape.dims[0]
                                      : -1),
                      m);
    }
    wm_shape_t sh = t->shape;
    sh.dims[0] /= m;
    WM_RETURN_IF_ERROR(wm_tensor_create(t->dtype, &sh, &rt->slices[i]));
    rt->items[i].tensor = rt->slices[i];
  }
  int32_t *send_from = rt->from + ni, *out_from = send_from + st->n_send;
  for (size_t k = 0; k < st->n_send; k++) {
    send_from[k] = pp_source(st, st->send[k].name, st->send[k].forwarded);
    if (send_from[k] == INT32_MIN) {
      return WM_ERROR(INTERNAL, "stage %d has no \"%s\" to send", j->rank,
                      st->send[k].name);
    }
  }
  for (size_t k = 0; k < st->n_outputs; k++) {
    out_from[k] = pp_source(st, st->outputs[k].name, true);
    if (out_from[k] == INT32_MIN) {
      return WM_ERROR(UNIMPLEMENTED,
                      "output \"%s\" is neither made nor received by the "
                      "last stage",
                      st->outputs[k].name);
    }
  }
  return NULL;
}

static void pp_routes_free(pp_route_t *rt) {
  for (size_t k = 0; rt->rx && k < rt->n_rx; k++) {
    wm_tensor_destroy(rt->rx[k]);
  }
  for (size_t i = 0; rt->slices && i < rt->n_in; i++) {
    wm_tensor_destroy(rt->slices[i]);
  }
  free(rt->names);
  free(rt->items);
  free(rt->slices);
  free(rt->from);
  free(rt->rx);
  memset(rt, 0, sizeof(*rt));
}

// The tensor a route |from| names in this micro-batch.
static const wm_tensor_t *pp_value(const rank_job_t *j, int32_t from) {
  if (from >= 0) {
    return j->route.rx[from];
  }
  const wm_item_t *o = &j->outs[-1 - from];
  return o->kind == WM_TYPE_TENSOR ? o->tensor : NULL;
}

// One micro-batch through this stage: receive, run, send; the last stage
// keeps its outputs in parts[mb * n_outputs + k].
static wm_status_t pp_micro(rank_job_t *j, int32_t mb, wm_tensor_t **parts) {
  const wm_pp_stage_t *st = &j->stage;
  pp_route_t *rt = &j->route;
  size_t ni = st->graph->input_count;
  int32_t r = j->rank;
  wm_status_t s = NULL;
  for (size_t k = 0; !s && k < st->n_recv; k++) {
    wm_tensor_t *x = rt->rx[k];
    s = wm_comm_recv(j->comm, x->data, x->count, x->dtype, r - 1);
  }
  for (size_t i = 0; !s && i < ni; i++) {
    wm_tensor_t *slice = rt->slices[i];
    if (slice) {  // this micro-batch's rows of a batch input
      const wm_tensor_t *x = j->ds.inputs[-1 - rt->from[i]].tensor;
      memcpy(slice->data, (const char *)x->data + slice->nbytes * (size_t)mb,
             slice->nbytes);
    }
  }
  if (!s) {
    clear_outs(j);
    s = wm_session_run_items(j->session, rt->names, rt->items, ni, j->outs);
  }
  const int32_t *send_from = rt->from + ni, *out_from = send_from + st->n_send;
  for (size_t k = 0; !s && k < st->n_send; k++) {
    const wm_tensor_t *x = pp_value(j, send_from[k]);
    s = x ? wm_comm_send(j->comm, x->data, x->count, x->dtype, r + 1)
          : WM_ERROR(INTERNAL, "stage %d has no \"%s\" to send", r,
                     st->send[k].name);
  }
  for (size_t k = 0; !s && k < st->n_outputs; k++) {
    const wm_tensor_t *x = pp_value(j, out_from[k]);
    s = x ? wm_tensor_clone(x, &parts[(size_t)mb * st->n_outputs + k])
          : WM_ERROR(INTERNAL, "output \"%s\" was not made",
                     st->outputs[k].name);
  }
  return s;
}

// The last stage's outputs: the micro-batches' joined along dim 0.
static wm_status_t pp_join(rank_job_t *j, wm_tensor_t **parts) {
  const wm_pp_stage_t *st = &j->stage;
  int32_t m = j->t->micro;
  clear_outs(j);
  for (size_t k = 0; k < st->n_outputs; k++) {
    wm_tensor_t *first = parts[k];
    if (m == 1) {
      j->outs[k] = wm_item_tensor_take(first);
      parts[k] = NULL;
      continue;
    }
    if (first->shape.rank < 1) {
      return WM_ERROR(UNIMPLEMENTED,
                      "output \"%s\" has no batch dim to join %d "
                      "micro-batches along",
                      st->outputs[k].name, m);
    }
    wm_shape_t sh = first->shape;
    sh.dims[0] *= m;
    wm_tensor_t *all = NULL;
    WM_RETURN_IF_ERROR(wm_tensor_create(first->dtype, &sh, &all));
    for (int32_t mb = 0; mb < m; mb++) {
      const wm_tensor_t *x = parts[(size_t)mb * st->n_outputs + k];
      memcpy((char *)all->data + x->nbytes * (size_t)mb, x->data, x->nbytes);
    }
    j->outs[k] = wm_item_tensor_take(all);
  }
  return NULL;
}

// A run through the pipeline: every micro-batch in turn (GPipe's forward
// schedule; the stages overlap on different micro-batches).
static wm_status_t pp_run(rank_job_t *j) {
  size_t n_parts = (size_t)j->t->micro * j->stage.n_outputs;
  wm_tensor_t **parts = wm_calloc(n_parts + 1, sizeof(*parts));
  if (!parts) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_status_t s = NULL;
  for (int32_t mb = 0; !s && mb < j->t->micro; mb++) {
    s = pp_micro(j, mb, parts);
  }
  if (!s && j->stage.n_outputs) {
    s = pp_join(j, parts);
  }
  for (size_t i = 0; i < n_parts; i++) {
    wm_tensor_destroy(parts[i]);
  }
  free(parts);
  return s;
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
    if (i > 0 && t->feed && t->kind != SPLIT_PP) {
      s = wm_cli_feed_next(j->local, j->outs, &j->ds, NULL);
    }
    if (t->kind != SPLIT_PP) {
      clear_outs(j);
    }
    // A pipeline's ranks start each run together: otherwise the first
    // stage would run ahead into the next run and a run's time would be
    // a stage's, not the pipeline's.
    if (!s && t->kind == SPLIT_PP) {
      s = wm_comm_barrier(j->comm);
    }
    uint64_t t0 = wm_now_ns();
    if (!s && t->kind == SPLIT_PP) {
      s = pp_run(j);
    } else if (!s) {
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
                                team_split_name(t->kind), t->n)
           : NULL;
}

static void rank_teardown(rank_job_t *j) {
  clear_outs(j);
  free(j->outs);
  wm_session_destroy(j->session);
  wm_comm_destroy(j->comm);
  pp_routes_free(&j->route);
  if (j->stage.graph) {
    wm_pp_stage_deinit(&j->stage);  // owns the graph
  } else {
    wm_graph_destroy(j->local);
  }
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

void team_close(team_t *t) {
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
  free(t->stage_of);
  free(t);
}

static wm_status_t per_rank_graph(const wm_graph_t *g, int32_t dp,
                                  wm_graph_t **out);

// The map of |p|'s graph under |spec|, read as one rank's work: the batch
// inputs' dim 0 divided by |divide| first (data-parallel ranks, pipeline
// micro-batches). *out_graph holds that graph (or NULL) while the map
// lives; the caller destroys both.
static wm_status_t map_for(const wm_cli_parallel_run_t *p, int32_t divide,
                           const wm_map_parallel_t *spec, wm_map_t **out_map,
                           wm_graph_t **out_graph) {
  *out_map = NULL;
  *out_graph = NULL;
  wm_graph_t *g = p->graph;
  if (divide > 1) {
    WM_RETURN_IF_ERROR(per_rank_graph(p->graph, divide, out_graph));
    g = *out_graph;
  }
  wm_map_options_t mo = {.model = "parallel run",
                         .backends = p->session->backends,
                         .backend_count = p->session->backend_count,
                         .parallel = spec};
  wm_status_t s = wm_map_build(g, &mo, out_map);
  if (s) {
    wm_graph_destroy(*out_graph);
    *out_graph = NULL;
  }
  return s;
}

// Each node's pipeline stage as the map's plan splits |p|'s graph (one
// micro-batch of it) over |pp| stages.
static wm_status_t plan_stages(const wm_cli_parallel_run_t *p, int32_t pp,
                               int32_t micro, int32_t **out) {
  wm_map_parallel_t spec = {.dp = 1,
                            .tp = 1,
                            .pp = pp,
                            .microbatches = micro,
                            .inference = true,
                            .grad_bytes = 4};
  wm_map_t *map = NULL;
  wm_graph_t *g = NULL;
  WM_RETURN_IF_ERROR(map_for(p, micro, &spec, &map, &g));
  int32_t *stage = wm_calloc(p->graph->node_count + 1, sizeof(int32_t));
  for (size_t i = 0; stage && i < map->n_nodes; i++) {
    stage[map->nodes[i].index] = map->nodes[i].stage;
  }
  wm_map_destroy(map);
  wm_graph_destroy(g);
  *out = stage;
  return stage ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
}

// Sets up |n| ranks of |p| split as |kind| says (|micro|: a pipeline's
// micro-batches). Under mpirun (unless |local|) this process is rank
// t->me of the job; else the ranks are threads of this process.
wm_status_t team_open(const wm_cli_parallel_run_t *p, int32_t n,
                      split_kind_t kind, int32_t micro, bool local,
                      team_t **out) {
  *out = NULL;
  team_t *t = wm_calloc(1, sizeof(*t));
  if (!t) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory for %d ranks", n);
  }
  t->p = p;
  t->n = n;
  t->kind = kind;
  t->micro = micro > 0 ? micro : 1;
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
  wm_status_t s =
      kind == SPLIT_PP ? plan_stages(p, n, t->micro, &t->stage_of) : NULL;
  if (s) {
    team_close(t);
    return s;
  }
  if (t->mpi) {
    int32_t size = 1;
    snprintf(t->id, sizeof(t->id), "mpi:world");
    s = wm_comm_mpi_init(&t->me, &size);
    if (!s && size != n) {
      s = WM_ERROR(INVALID_ARGUMENT,
                   "--parallel %s=%d under mpirun -np %d: the ranks are the "
                   "job's processes (want -np %d)",
                   team_split_name(kind), n, size, n);
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
wm_status_t team_run(team_t *t, int32_t iters, bool feed, double *samples) {
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
  return &t->jobs[t->mpi ? t->me : t->kind == SPLIT_PP ? t->n - 1 : 0];
}

// Whether this process reports (and prints the outputs): the first rank,
// or the last stage of a pipeline.
bool team_reports(const team_t *t) {
  int32_t who = t->kind == SPLIT_PP ? t->n - 1 : 0;
  return !t->mpi || t->me == who;
}

// Sends and their bytes per run over every rank (a pipeline's transfers);
// under mpirun every process must call it.
wm_status_t team_send_totals(team_t *t, uint64_t *calls, uint64_t *bytes) {
  int64_t v[2] = {0, 0};
  for (int32_t r = 0; r < t->n; r++) {
    const rank_job_t *j = &t->jobs[r];
    if (j->comm) {
      uint64_t c = 0, b = 0;
      wm_comm_counts(j->comm, WM_COMM_SEND, &c, &b);
      uint64_t runs = j->runs ? j->runs : 1;
      v[0] += (int64_t)(c / runs);
      v[1] += (int64_t)(b / runs);
    }
  }
  if (t->mpi) {
    int64_t sum[2];
    WM_RETURN_IF_ERROR(
        wm_comm_mpi_native(WM_COMM_ALL_REDUCE, v, sum, 2, 7, WM_COMM_SUM));
    v[0] = sum[0];
    v[1] = sum[1];
  }
  *calls = (uint64_t)v[0];
  *bytes = (uint64_t)v[1];
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
      if (t.shape.dims[0] >= 0 && t.shape.dims[0] % dp != 0) {
        s = WM_ERROR(INVALID_ARGUMENT,
                     "input \"%s\" has batch %lld, which does not divide "
                     "into %d",
                     x->name, (long long)t.shape.dims[0], dp);
        break;
      }
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
// run (a forward pass; a step of a training graph; a pipeline's every
// micro-batch, its transfers over all ranks); *bubble gets the pipeline's
// idle fraction.
static wm_status_t predict(const team_t *t, uint64_t calls[WM_MAP_P2P + 1],
                           uint64_t bytes[WM_MAP_P2P + 1], double *bubble) {
  const wm_cli_parallel_run_t *p = t->p;
  bool training = t->kind == SPLIT_DP && wm_dp_is_training(p->graph);
  wm_map_parallel_t spec = p->spec;
  spec.inference = !training;
  spec.microbatches = t->kind == SPLIT_PP ? t->micro : 1;
  spec.grad_bytes = 4;
  int32_t per_rank = t->kind == SPLIT_DP   ? t->n
                     : t->kind == SPLIT_PP ? t->micro
                                           : 1;
  wm_graph_t *owned = NULL;
  wm_map_t *map = NULL;
  wm_status_t s = map_for(p, per_rank, &spec, &map, &owned);
  for (size_t i = 0; !s && i < map->plan.n_coll; i++) {
    const wm_map_collective_t *c = &map->plan.coll[i];
    double per = training ? c->per_step : c->per_forward * spec.microbatches;
    if (c->kind <= WM_MAP_P2P) {
      calls[c->kind] += (uint64_t)(per + 0.5);
      bytes[c->kind] += (uint64_t)(per * (double)c->bytes + 0.5);
    }
  }
  *bubble = s ? 0 : map->plan.bubble;
  wm_map_destroy(map);
  wm_graph_destroy(owned);
  return s;
}

// |sends|/|send_bytes|: send_totals' (pipelines).
void team_report(team_t *t, double run_ms, uint64_t sends, uint64_t send_bytes,
                 wm_strbuf_t *out) {
  const wm_cli_parallel_run_t *p = t->p;
  const rank_job_t *j = reporter(t);
  uint64_t pc[WM_MAP_P2P + 1] = {0}, pb[WM_MAP_P2P + 1] = {0};
  double bubble = 0;
  int32_t n = t->n;
  wm_status_t s = predict(t, pc, pb, &bubble);
  const char *where = t->mpi ? "MPI processes" : "thread ranks";
  const char *per = p->steps > 1 ? "step" : "run";
  if (t->kind == SPLIT_DP) {
    wm_strbuf_printf(out,
                     "parallel dp=%d on %d %s: each rank takes 1/%d of the "
                     "batch%s; %s %.1f ms\n",
                     n, n, where, n,
                     wm_dp_is_training(p->graph)
                         ? ", gradients averaged in one bucket"
                         : ", outputs gathered",
                     per, run_ms);
  } else if (t->kind == SPLIT_PP) {
    wm_strbuf_printf(out,
                     "parallel pp=%d on %d %s: %d micro-batch%s a run through "
                     "the map's stages (the map's bubble %.0f %%); %s %.1f "
                     "ms\n",
                     n, n, where, t->micro, t->micro == 1 ? "" : "es",
                     100 * bubble, per, run_ms);
  } else {
    wm_strbuf_printf(out,
                     "parallel tp=%d on %d %s: %zu column- and %zu "
                     "row-parallel MatMuls per rank; %s %.1f ms\n",
                     n, n, where, j->summary.column_parallel,
                     j->summary.row_parallel, per, run_ms);
  }
  wm_strbuf_printf(out, "  per %s per %s:\n",
                   t->kind == SPLIT_PP ? "pipeline" : "rank", per);
  wm_strbuf_printf(out, "  %-10s %8s %14s   %10s %14s  %s\n", "collective",
                   "calls", "bytes", "map: calls", "bytes", "");
  static const uint32_t kinds[] = {WM_COMM_ALL_REDUCE, WM_COMM_ALL_GATHER,
                                   WM_COMM_REDUCE_SCATTER, WM_COMM_BROADCAST,
                                   WM_COMM_SEND};
  uint64_t runs = j->runs ? j->runs : 1;
  for (size_t k = 0; k < 5; k++) {
    uint32_t op = kinds[k];
    uint32_t mk = op == WM_COMM_SEND ? WM_MAP_P2P : op;
    uint64_t c = 0, b = 0;
    if (op == WM_COMM_SEND) {
      c = sends;
      b = send_bytes;
    } else {
      wm_comm_counts(j->comm, op, &c, &b);
      c /= runs;
      b /= runs;
    }
    if (!c && !pc[mk]) {
      continue;
    }
    bool same = !s && c == pc[mk] && b == pb[mk];
    wm_strbuf_printf(out, "  %-10s %8llu %14llu   %10llu %14llu  %s\n",
                     op == WM_COMM_SEND ? "Send/Recv" : wm_comm_op_name(op),
                     (unsigned long long)c, (unsigned long long)b,
                     (unsigned long long)pc[mk], (unsigned long long)pb[mk],
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

// Refuses what runs do not split yet; the rank count, kind and
// micro-batches.
wm_status_t team_split_of(const wm_map_parallel_t *sp, int32_t *n,
                          split_kind_t *kind, int32_t *micro) {
  int splits = (sp->tp > 1) + (sp->dp > 1) + (sp->pp > 1);
  if (splits > 1) {
    return WM_ERROR(UNIMPLEMENTED,
                    "--parallel: runs split by tensor (tp=N), data (dp=N) or "
                    "pipeline (pp=N) parallelism, one of them, so far; dp=%d "
                    "tp=%d pp=%d is mapped by `wmap map --parallel`",
                    sp->dp, sp->tp, sp->pp);
  }
  *kind = sp->dp > 1 ? SPLIT_DP : sp->pp > 1 ? SPLIT_PP : SPLIT_TP;
  *n = *kind == SPLIT_DP ? sp->dp : *kind == SPLIT_PP ? sp->pp : sp->tp;
  *micro = *kind == SPLIT_PP && sp->microbatches > 0 ? sp->microbatches : 1;
  return NULL;
}

bool team_is_mpi(const team_t *t) {
  return t->mpi;
}

double team_mean_ms(const team_t *t, int32_t runs) {
  double sum = 0;
  for (int32_t i = 0; i < runs; i++) {
    double m = 0;  // the slowest rank of this process's view
    for (int32_t r = 0; r < t->n; r++) {
      const rank_job_t *x = &t->jobs[r];
      m = x->samples && (size_t)i < x->cap && x->samples[i] > m ? x->samples[i]
                                                                : m;
    }
    sum += m;
  }
  return runs > 0 ? sum / runs * 1e-6 : 0;
}

wm_status_t team_take_outputs(team_t *t, wm_item_t **out) {
  rank_job_t *j = reporter(t);
  *out = j->outs;
  j->outs = wm_calloc(j->n_outs + 1, sizeof(*j->outs));
  return j->outs ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
}
