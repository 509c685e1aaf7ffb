// The benchmark runner: configurations (backend list x thread count) run
// as interleaved blocks, each block a fresh child process that opens the
// backends, prepares a session, warms up and times iterations; the child
// sends its samples (and, for the profiled block, per-node times) back
// through a pipe.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wmap/bench.h"
#include "wmap/session.h"

enum { MAX_BACKENDS = WM_SESSION_MAX_BACKENDS };
// A block stops after this many iterations whatever the time.
enum { MAX_ITERS = 1000000 };

// ------------------------------------------------------------- inputs

// The size of the table a Gather reads with value |id| as its indices, or
// 0 when no Gather does.
static int64_t gather_bound(const wm_graph_t *g, int32_t id) {
  int64_t bound = 0;
  for (size_t i = 0; i < g->node_count; i++) {
    const wm_node_t *n = &g->nodes[i];
    if (strcmp(n->op_type, "Gather") != 0 || n->input_count < 2 ||
        n->inputs[1] != id || n->inputs[0] < 0) {
      continue;
    }
    const wm_type_t *t = &g->values[n->inputs[0]].type;
    int64_t axis = wm_node_attr_int(n, "axis", 0);
    if (axis < 0) {
      axis += t->shape.rank;
    }
    if (axis >= 0 && axis < t->shape.rank && t->shape.dims[axis] > 0 &&
        (bound == 0 || t->shape.dims[axis] < bound)) {
      bound = t->shape.dims[axis];
    }
  }
  return bound;
}

wm_status_t wm_bench_make_inputs(const wm_graph_t *g, char ***out_names,
                                 wm_tensor_t ***out_inputs, size_t *out_count) {
  *out_names = NULL;
  *out_inputs = NULL;
  *out_count = 0;
  char **names = wm_calloc(g->input_count + 1, sizeof(char *));
  wm_tensor_t **ins = wm_calloc(g->input_count + 1, sizeof(wm_tensor_t *));
  wm_status_t s =
      names && ins ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  size_t n = 0;
  for (size_t i = 0; !s && i < g->input_count; i++) {
    const wm_value_t *v = &g->values[g->inputs[i]];
    if (v->initializer) {
      continue;
    }
    if (v->type.kind != WM_TYPE_TENSOR || !wm_dtype_is_valid(v->type.dtype) ||
        !wm_shape_is_known(&v->type.shape)) {
      char t[128];
      s = WM_ERROR(INVALID_ARGUMENT,
                   "input \"%s\" has type %s: bind its dims with --dim or "
                   "give --inputs",
                   v->name, wm_type_format(&v->type, t, sizeof(t)));
      break;
    }
    wm_tensor_t *t;
    s = wm_tensor_create(v->type.dtype, &v->type.shape, &t);
    if (s) {
      break;
    }
    ins[n] = t;
    names[n] = wm_strdup(v->name);
    n++;
    if (!names[n - 1]) {
      s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
      break;
    }
    bool mask = strstr(v->name, "mask") != NULL;
    int64_t bound = gather_bound(g, g->inputs[i]);
    for (size_t k = 0; k < t->count; k++) {
      if (wm_dtype_is_float(t->dtype)) {
        wm_tensor_set_f64(t, k, sin((double)k * 0.37 + (double)i));
      } else if (t->dtype == WM_DTYPE_BOOL || mask) {
        wm_tensor_set_i64(t, k, 1);
      } else if (bound > 0) {
        wm_tensor_set_i64(t, k, (int64_t)((k * 7919 + i * 104729) % bound));
      } else if (t->dtype != WM_DTYPE_STRING) {
        wm_tensor_set_i64(t, k, 0);
      }
    }
  }
  if (s) {
    for (size_t k = 0; k < n; k++) {
      free(names[k]);
      wm_tensor_destroy(ins[k]);
    }
    free(names);
    free(ins);
    return s;
  }
  *out_names = names;
  *out_inputs = ins;
  *out_count = n;
  return NULL;
}

// ------------------------------------------------------------- child

typedef struct job {
  const wm_bench_options_t *o;
  const char *list;
  uint32_t threads;
  bool profile;
  const char *const *names;
  const wm_tensor_t *const *inputs;
  size_t n_inputs;
} job_t;

static wm_status_t run_once(wm_session_t *session, const job_t *j,
                            wm_tensor_t **outs, size_t n_out) {
  wm_status_t s =
      wm_session_run(session, j->names, j->inputs, j->n_inputs, outs);
  for (size_t i = 0; i < n_out; i++) {
    wm_tensor_destroy(outs[i]);
    outs[i] = NULL;
  }
  return s;
}

// The t_roof of every node on the backend that runs it (ns), from a map
// of the same backends; zeros when no peaks are known.
static void node_roofs(const job_t *j, wm_session_t *session,
                       wm_backend_t **backends, size_t n,
                       wm_backend_t *fallback, double *t_roof, double *flops) {
  wm_backend_t *list[MAX_BACKENDS + 1];
  size_t count = 0;
  for (size_t k = 0; k < n; k++) {
    list[count++] = backends[k];
  }
  bool listed = false;
  for (size_t k = 0; k < n; k++) {
    listed |= backends[k] == fallback;
  }
  if (fallback && !listed) {
    list[count++] = fallback;
  }
  wm_map_options_t mo = {
      .model = j->o->model_name,
      .backends = list,
      .backend_count = count,
      .fallback = fallback,
      .peaks = j->o->peaks,
      // The roofs at this configuration's thread count, not all cores.
      .threads = (int32_t)j->threads,
  };
  wm_map_t *map = NULL;
  wm_status_t s = wm_map_build(j->o->graph, &mo, &map);
  if (s) {
    wm_status_free(s);
    return;
  }
  *flops = map->totals.flops;
  for (size_t i = 0; i < map->n_nodes; i++) {
    const wm_map_node_t *node = &map->nodes[i];
    const wm_placement_t *p =
        wm_session_placement(session, (size_t)node->index);
    for (size_t k = 0; p && p->backend && k < map->n_backends; k++) {
      if (strcmp(map->backends[k].name, p->backend) == 0) {
        t_roof[node->index] = node->cells[k].t_roof * 1e9;
      }
    }
  }
  wm_map_destroy(map);
}

// The block itself; writes its report into |out|.
static wm_status_t child_block(const job_t *j, wm_strbuf_t *out) {
  const wm_bench_options_t *o = j->o;
  wm_registry_t *reg = NULL;
  wm_backend_t *backends[MAX_BACKENDS];
  wm_backend_t *fallback = NULL;
  size_t n = 0;
  WM_RETURN_IF_ERROR(
      o->open(o->open_ctx, j->list, j->threads, &reg, backends, &n, &fallback));
  wm_session_options_t so = {
      .backends = backends,
      .backend_count = n,
      .fallback = fallback,
      .mode = WM_PLACEMENT_FALLBACK,
      .passes = o->passes,
      .no_in_place = o->no_in_place,
      .kernels = o->kernels,
      .max_iterations = o->max_iterations,
      .max_sequence_length = o->max_sequence_length,
      // The block's process is the graph's last user: weights the plan
      // packed need not be held twice.
      .release_weights = true,
  };
  wm_session_t *session = NULL;
  wm_status_t s = wm_session_create_placed(o->graph, &so, &session);
  size_t n_out = o->graph->output_count;
  wm_tensor_t **outs = wm_calloc(n_out + 1, sizeof(wm_tensor_t *));
  if (!s && !outs) {
    s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  // Warm-up: at least one run and a tenth of the block time.
  uint64_t start = wm_now_ns();
  for (int i = 0; !s; i++) {
    s = run_once(session, j, outs, n_out);
    if ((double)(wm_now_ns() - start) >= 0.1e9 * o->min_time_s) {
      break;
    }
  }
  double *samples = NULL;
  size_t count = 0, cap = 0;
  start = wm_now_ns();
  while (!s) {
    uint64_t t0 = wm_now_ns();
    s = run_once(session, j, outs, n_out);
    uint64_t t1 = wm_now_ns();
    if (!s) {
      s = wm_grow((void **)&samples, &cap, count + 1, sizeof(double));
    }
    if (s) {
      break;
    }
    samples[count++] = (double)(t1 - t0);
    if (count >= MAX_ITERS || ((double)(t1 - start) >= 1e9 * o->min_time_s &&
                               count >= (size_t)o->min_iters)) {
      break;
    }
  }
  if (!s) {
    wm_strbuf_printf(out, "ok\nversions %zu\n", wm_registry_count(reg));
    for (size_t k = 0; k < wm_registry_count(reg); k++) {
      wm_backend_t *b = wm_registry_backend(reg, k);
      wm_strbuf_printf(out, "%s %s\n", wm_backend_name(b),
                       wm_backend_version(b));
    }
    wm_strbuf_printf(out, "samples %zu\n", count);
    for (size_t i = 0; i < count; i++) {
      wm_strbuf_printf(out, "%.0f\n", samples[i]);
    }
  }
  if (!s && j->profile) {
    // Profiled runs: a third of the timed iterations, at least 3.
    size_t runs = count / 3 > 3 ? count / 3 : 3;
    s = wm_session_set_profiling(session, true);
    for (size_t i = 0; !s && i < runs; i++) {
      s = run_once(session, j, outs, n_out);
    }
    size_t done = 0;
    const double *ns = s ? NULL : wm_session_node_ns(session, &done);
    double *roof = wm_calloc(o->graph->node_count + 1, sizeof(double));
    double flops = 0;
    if (!s && !roof) {
      s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
    if (!s) {
      node_roofs(j, session, backends, n, fallback, roof, &flops);
      wm_strbuf_printf(out, "flops %.17g\nprofile %zu\n", flops,
                       o->graph->node_count);
      for (size_t i = 0; i < o->graph->node_count; i++) {
        const wm_placement_t *p = wm_session_placement(session, i);
        wm_strbuf_printf(out, "%zu %s %.6g %.6g\n", i,
                         p && p->backend ? p->backend : "?",
                         done ? ns[i] / (double)done : 0.0, roof[i]);
      }
    }
    free(roof);
  }
  free(samples);
  free(outs);
  wm_session_destroy(session);
  wm_registry_destroy(reg);
  return s;
}

wm_status_t wm_bench_in_child(wm_bench_child_fn fn, void *ctx, char **out_text,
                              int *out_status) {
  *out_text = NULL;
  *out_status = 0;
  int fds[2];
  if (pipe(fds) != 0) {
    return WM_ERROR(UNAVAILABLE, "pipe: %s", strerror(errno));
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return WM_ERROR(UNAVAILABLE, "fork: %s", strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    wm_strbuf_t buf;
    wm_strbuf_init(&buf);
    wm_status_t s = fn(ctx, &buf);
    if (s) {
      wm_strbuf_deinit(&buf);
      wm_strbuf_init(&buf);
      wm_strbuf_printf(&buf, "error %s\n", wm_status_message(s));
      wm_status_free(s);
    }
    const char *text = wm_strbuf_str(&buf);
    size_t len = strlen(text), at = 0;
    while (at < len) {
      ssize_t w = write(fds[1], text + at, len - at);
      if (w < 0 && errno == EINTR) {
        continue;
      }
      if (w <= 0) {
        break;
      }
      at += (size_t)w;
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  wm_strbuf_t got;
  wm_strbuf_init(&got);
  char chunk[65536];
  for (;;) {
    ssize_t r = read(fds[0], chunk, sizeof(chunk));
    if (r < 0 && errno == EINTR) {
      continue;
    }
    if (r <= 0) {
      break;
    }
    wm_strbuf_append(&got, chunk, (size_t)r);
  }
  close(fds[0]);
  while (waitpid(pid, out_status, 0) < 0 && errno == EINTR) {
  }
  *out_text = wm_strdup(wm_strbuf_str(&got));
  wm_strbuf_deinit(&got);
  return *out_text ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
}

static wm_status_t block_in_child(void *ctx, wm_strbuf_t *out) {
  return child_block(ctx, out);
}

// Runs one block in a child process; *out_report receives what it sent.
static wm_status_t fork_block(const job_t *j, char **out_report) {
  *out_report = NULL;
  char *text = NULL;
  int status = 0;
  WM_RETURN_IF_ERROR(
      wm_bench_in_child(block_in_child, (void *)j, &text, &status));
  wm_status_t s = NULL;
  if (strncmp(text, "error ", 6) == 0) {
    size_t len = strcspn(text + 6, "\n");
    s = WM_ERROR(UNAVAILABLE, "%s@t%u: %.*s", j->list, j->threads, (int)len,
                 text + 6);
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
             strncmp(text, "ok\n", 3) != 0) {
    s = WM_ERROR(INTERNAL, "%s@t%u: the block's process %s %d", j->list,
                 j->threads,
                 WIFSIGNALED(status) ? "was killed by signal" : "exited with",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  }
  if (s) {
    free(text);
    return s;
  }
  *out_report = text;
  return NULL;
}

// ------------------------------------------------------------ parent

static wm_status_t bad_report(const char *label, const char *what) {
  return WM_ERROR(INTERNAL, "%s: the block's report is malformed (%s)", label,
                  what);
}

// Reads one number token from *p.
static bool next_num(char **p, double *out) {
  char *end;
  *out = strtod(*p, &end);
  if (end == *p) {
    return false;
  }
  *p = end;
  return true;
}

static bool next_word(char **p, char *buf, size_t size) {
  while (**p == ' ' || **p == '\n') {
    (*p)++;
  }
  size_t n = strcspn(*p, " \n");
  if (n == 0 || n >= size) {
    return false;
  }
  memcpy(buf, *p, n);
  buf[n] = '\0';
  *p += n;
  return true;
}

// Parses a block's report into block |blk| (and the profile into |cfg|).
static wm_status_t parse_report(wm_baseline_t *bl, wm_bench_config_t *cfg,
                                wm_bench_block_t *blk, char *text,
                                const wm_graph_t *graph) {
  char word[256], name[256];
  double v;
  char *p = text + 3;  // "ok\n"
  if (!next_word(&p, word, sizeof(word)) || strcmp(word, "versions") != 0 ||
      !next_num(&p, &v) || v < 0 || v > 64) {
    return bad_report(cfg->label, "versions");
  }
  size_t nv = (size_t)v;
  if (!cfg->versions) {
    cfg->versions =
        wm_arena_alloc(&bl->arena, (nv + 1) * sizeof(wm_bench_kv_t));
    if (!cfg->versions) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  for (size_t k = 0; k < nv; k++) {
    if (!next_word(&p, name, sizeof(name)) ||
        !next_word(&p, word, sizeof(word))) {
      return bad_report(cfg->label, "version line");
    }
    if (cfg->n_versions < nv) {
      cfg->versions[cfg->n_versions].key = wm_arena_strdup(&bl->arena, name);
      cfg->versions[cfg->n_versions++].value =
          wm_arena_strdup(&bl->arena, word);
    }
  }
  if (!next_word(&p, word, sizeof(word)) || strcmp(word, "samples") != 0 ||
      !next_num(&p, &v) || v < 1 || v > MAX_ITERS) {
    return bad_report(cfg->label, "samples");
  }
  blk->n = (size_t)v;
  blk->samples = wm_arena_alloc(&bl->arena, blk->n * sizeof(double));
  if (!blk->samples) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < blk->n; i++) {
    if (!next_num(&p, &blk->samples[i])) {
      return bad_report(cfg->label, "a sample");
    }
  }
  if (!next_word(&p, word, sizeof(word))) {
    return NULL;  // no profile
  }
  if (strcmp(word, "flops") != 0 || !next_num(&p, &v)) {
    return bad_report(cfg->label, "flops");
  }
  if (bl->model_flops == 0) {
    bl->model_flops = v;
  }
  if (!next_word(&p, word, sizeof(word)) || strcmp(word, "profile") != 0 ||
      !next_num(&p, &v) || (size_t)v != graph->node_count) {
    return bad_report(cfg->label, "profile");
  }
  cfg->n_ops = graph->node_count;
  cfg->ops =
      wm_arena_alloc(&bl->arena, (cfg->n_ops + 1) * sizeof(wm_bench_op_t));
  if (!cfg->ops) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < cfg->n_ops; i++) {
    double index, mean, roof;
    if (!next_num(&p, &index) || (size_t)index != i ||
        !next_word(&p, name, sizeof(name)) || !next_num(&p, &mean) ||
        !next_num(&p, &roof)) {
      return bad_report(cfg->label, "a profile line");
    }
    char label[64];
    wm_bench_op_t *op = &cfg->ops[i];
    op->node = wm_arena_strdup(&bl->arena,
                               wm_node_label(graph, i, label, sizeof(label)));
    op->op_type = wm_arena_strdup(&bl->arena, graph->nodes[i].op_type);
    op->backend = wm_arena_strdup(&bl->arena, name);
    op->mean_ns = mean;
    op->t_roof_ns = roof;
    op->efficiency = mean > 0 && roof > 0 ? roof / mean : 0.0;
    if (!op->node || !op->op_type || !op->backend) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  return NULL;
}

static char *label_of(wm_arena_t *a, const char *list, uint32_t threads) {
  char buf[512];
  snprintf(buf, sizeof(buf), "%s@t%u", list, threads);
  return wm_arena_strdup(a, buf);
}

// Splits |list| into the configuration's backend names.
static wm_status_t split_list(wm_arena_t *a, const char *list,
                              wm_bench_config_t *cfg) {
  size_t n = 1;
  for (const char *c = list; *c; c++) {
    n += *c == ',';
  }
  cfg->backends = wm_arena_alloc(a, (n + 1) * sizeof(char *));
  if (!cfg->backends) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  const char *c = list;
  while (*c) {
    size_t len = strcspn(c, ",");
    if (len > 0) {
      cfg->backends[cfg->n_backends++] = wm_arena_strndup(a, c, len);
    }
    c += len + (c[len] == ',');
  }
  return NULL;
}

static void utc_now(char *buf, size_t size) {
  time_t t = time(NULL);
  struct tm tm;
  if (gmtime_r(&t, &tm)) {
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
  } else {
    snprintf(buf, size, "unknown");
  }
}

static wm_status_t check_options(const wm_bench_options_t *o) {
  if (o->n_lists == 0 || o->n_threads == 0) {
    return WM_ERROR(INVALID_ARGUMENT, "a benchmark needs backends and threads");
  }
  if (o->blocks < 1 || o->blocks > 100000) {
    return WM_ERROR(INVALID_ARGUMENT, "--blocks wants 1 to 100000, got %d",
                    (int)o->blocks);
  }
  if (!(o->min_time_s > 0) || o->min_time_s > 3600) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "--min-time wants seconds in (0, 3600], got %g",
                    o->min_time_s);
  }
  if (o->min_iters < 1) {
    return WM_ERROR(INVALID_ARGUMENT, "--min-iters wants >= 1, got %d",
                    (int)o->min_iters);
  }
  if (!o->open) {
    return WM_ERROR(INVALID_ARGUMENT, "no way to open backends");
  }
  return NULL;
}

wm_status_t wm_bench_run(const wm_bench_options_t *o, wm_baseline_t **out) {
  *out = NULL;
  WM_RETURN_IF_ERROR(check_options(o));
  wm_baseline_t *bl = NULL;
  WM_RETURN_IF_ERROR(wm_baseline_create(&bl));
  wm_arena_t *a = &bl->arena;
  char when[32];
  utc_now(when, sizeof(when));
  bl->created_utc = wm_arena_strdup(a, when);
  bl->model_name = wm_arena_strdup(a, o->model_name ? o->model_name : "model");
  bl->model_sha256 = wm_arena_strdup(a, o->model_sha256 ? o->model_sha256 : "");
  bl->model_flops = o->model_flops;
  bl->blocks = o->blocks;
  bl->min_time_s = o->min_time_s;
  bl->min_iters = o->min_iters;
  bl->n_configs = o->n_lists * o->n_threads;
  bl->configs = wm_arena_alloc(a, bl->n_configs * sizeof(wm_bench_config_t));
  bl->dims = wm_arena_alloc(a, (o->n_dims + 1) * sizeof(wm_bench_kv_t));
  wm_status_t s = bl->created_utc && bl->model_name && bl->model_sha256 &&
                          bl->configs && bl->dims
                      ? NULL
                      : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  for (size_t d = 0; !s && d < o->n_dims; d++) {
    bl->dims[d].key = wm_arena_strdup(a, o->dims[d].key);
    bl->dims[d].value = wm_arena_strdup(a, o->dims[d].value);
    bl->n_dims++;
  }
  uint32_t cores = (uint32_t)wm_cpu_count();
  for (size_t l = 0; !s && l < o->n_lists; l++) {
    for (size_t t = 0; !s && t < o->n_threads; t++) {
      wm_bench_config_t *cfg = &bl->configs[l * o->n_threads + t];
      cfg->threads = o->threads[t] ? o->threads[t] : cores;
      cfg->label = label_of(a, o->lists[l], cfg->threads);
      s = cfg->label ? split_list(a, o->lists[l], cfg)
                     : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
      cfg->blocks =
          wm_arena_alloc(a, (size_t)o->blocks * sizeof(wm_bench_block_t));
      if (!s && !cfg->blocks) {
        s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
      }
    }
  }
  // Inputs: given, or generated once here (children inherit them).
  char **gen_names = NULL;
  wm_tensor_t **gen_inputs = NULL;
  size_t n_gen = 0;
  job_t job = {.o = o,
               .names = o->input_names,
               .inputs = o->inputs,
               .n_inputs = o->n_inputs};
  if (!s && !o->inputs) {
    s = wm_bench_make_inputs(o->graph, &gen_names, &gen_inputs, &n_gen);
    job.names = (const char *const *)gen_names;
    job.inputs = (const wm_tensor_t *const *)gen_inputs;
    job.n_inputs = n_gen;
  }
  if (!s) {
    wm_env_collect(&bl->env);  // before the blocks: the load they start in
    const char *v = wm_env_get(&bl->env, "wmap.version");
    const char *git = wm_env_get(&bl->env, "wmap.git");
    const char *type = wm_env_get(&bl->env, "build.type");
    bl->tool_version = wm_arena_strdup(a, v ? v : "unknown");
    bl->tool_git = wm_arena_strdup(a, git ? git : "unknown");
    bl->build_type = wm_arena_strdup(a, type ? type : "unknown");
  }
  size_t total = bl->n_configs * (size_t)o->blocks, done = 0;
  for (int32_t k = 0; !s && k < o->blocks; k++) {
    for (size_t c = 0; !s && c < bl->n_configs; c++) {
      wm_bench_config_t *cfg = &bl->configs[c];
      job.list = o->lists[c / o->n_threads];
      job.threads = cfg->threads;
      job.profile = o->profile && k == o->blocks - 1;
      char *report = NULL;
      s = fork_block(&job, &report);
      wm_bench_block_t *blk = &cfg->blocks[cfg->n_blocks];
      blk->index = k;
      blk->order = (int32_t)done;
      if (!s) {
        s = parse_report(bl, cfg, blk, report, o->graph);
      }
      free(report);
      if (!s) {
        cfg->n_blocks++;
        done++;
        if (o->progress) {
          o->progress(o->progress_ctx, done, total, cfg->label);
        }
      }
    }
  }
  for (size_t i = 0; i < n_gen; i++) {
    free(gen_names[i]);
    wm_tensor_destroy(gen_inputs[i]);
  }
  free(gen_names);
  free(gen_inputs);
  if (!s) {
    wm_env_set(&bl->env, "model.sha256", true, "%s", bl->model_sha256);
    wm_strbuf_t dims;
    wm_strbuf_init(&dims);
    for (size_t d = 0; d < bl->n_dims; d++) {
      wm_strbuf_printf(&dims, "%s%s=%s", d ? "," : "", bl->dims[d].key,
                       bl->dims[d].value);
    }
    wm_env_set(&bl->env, "model.dims", true, "%s", wm_strbuf_str(&dims));
    wm_strbuf_deinit(&dims);
    // The graph passes change what runs: part of what is compared.
    wm_strbuf_t passes;
    wm_strbuf_init(&passes);
    for (size_t i = 0; !o->passes && i < wm_pass_count(); i++) {
      wm_strbuf_printf(&passes, "%s%s", i ? "," : "", wm_pass_name(i));
    }
    wm_env_set(&bl->env, "run.passes", true, "%s",
               o->passes ? (o->passes[0] ? o->passes : "none")
                         : wm_strbuf_str(&passes));
    wm_strbuf_deinit(&passes);
    if (o->no_in_place) {  // recorded only when off, as before it existed
      wm_env_set(&bl->env, "run.in_place", true, "off");
    }
    if (o->kernels != WM_KERNELS_AUTO) {  // likewise
      wm_env_set(&bl->env, "run.impl", true, "%s", wm_kernels_name(o->kernels));
    }
    wm_env_finish(&bl->env);
    s = wm_baseline_finish(bl);
  }
  if (s) {
    wm_baseline_destroy(bl);
    return s;
  }
  *out = bl;
  return NULL;
}
