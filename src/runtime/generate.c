// Generated kernels in plans: the placement rule's answer for a backend
// that compiles what the generator prints, the compute definitions of
// planned instances, one compile per backend per plan, and the launch of a
// generated step.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "wmap/plugin.h"

const char *wm_kernels_name(wm_kernels_t k) {
  static const char *const names[] = {"auto", "library", "generated"};
  return (unsigned)k < 3 ? names[k] : "unknown";
}

bool wm_kernels_parse(const char *name, wm_kernels_t *out) {
  for (int k = 0; k < 3; k++) {
    if (name && strcmp(name, wm_kernels_name((wm_kernels_t)k)) == 0) {
      *out = (wm_kernels_t)k;
      return true;
    }
  }
  return false;
}

void rt_gen_free(wm_gen_program_t *p) {
  if (p) {
    wm_gen_program_free(p);
    free(p);
  }
}

wm_status_t rt_gen_define(const wm_op_def_t *def, const wm_op_ctx_t *ctx,
                          wm_gen_program_t **out) {
  *out = NULL;
  if (!def || (!def->define && !def->define_program)) {
    return NULL;
  }
  wm_gen_program_t *p = wm_calloc(1, sizeof(*p));
  if (!p) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_status_t st;
  if (def->define_program) {
    st = def->define_program(ctx, p);
  } else {
    wm_gen_compute_t *c = NULL;
    st = wm_gen_program_stage(p, &c);
    if (!st) {
      st = def->define(ctx, c);
    }
  }
  if (st && wm_status_code(st) == WM_STATUS_UNIMPLEMENTED) {
    // Not an instance the definition expresses (a dtype, a legacy form).
    wm_status_free(st);
    rt_gen_free(p);
    return NULL;
  }
  bool fits = true;  // every parallel range fits a launch's grid
  for (int32_t i = 0; !st && i < p->n_stages; i++) {
    int64_t points = 1;
    const wm_gen_compute_t *c = p->stages[i];
    for (int32_t a = 0; fits && a < wm_gen_spatial(c); a++) {
      // A device of work items runs one per point: every point counts.
      fits = wm_checked_mul_i64(points, c->extents[a], &points) &&
             points <= UINT32_MAX / 2;
    }
  }
  if (!st && (!fits || p->n_stages == 0)) {
    rt_gen_free(p);
    return NULL;
  }
  if (st) {
    rt_gen_free(p);
    return wm_status_annotate(st, "the compute definition of node \"%s\" (%s)",
                              ctx->label, ctx->node->op_type);
  }
  *out = p;
  return NULL;
}

uint64_t rt_gen_workspace(const wm_gen_program_t *p, uint64_t *offsets) {
  uint64_t bytes = 0;
  for (int32_t k = 0; k < p->n_temps; k++) {
    offsets[k] = bytes;
    bytes += ((uint64_t)p->temp_elems[k] * sizeof(float) + 63) / 64 * 64;
  }
  return bytes;
}

// The formats the generator prints, their dialects, and whether their
// kernels run as work items (start and end passed, grids of groups).
static const struct {
  const char *format;
  wm_gen_dialect_t dialect;
  bool work_items;
} kFormats[] = {
    {"c", WM_GEN_C, false},
    {"opencl-c", WM_GEN_OPENCL, true},
    {"cuda-c", WM_GEN_CUDA, true},
};

// The format of kFormats that |backend| compiles and launches at level
// SUPPORTED or better, or -1.
static int32_t backend_format(const wm_backend_t *backend) {
  const wm_plugin_api *api = wm_backend_api(backend);
  const wm_device_tier *dt = api->device;
  const wm_target_desc *t = wm_backend_target(backend, 0);
  if (!t || !dt || !WM_HAS(dt, wm_device_tier, launch) || !dt->compile ||
      !dt->exe_get_kernel || !dt->exe_destroy || !dt->launch ||
      !WM_HAS(t, wm_target_desc, formats) || !t->formats) {
    return -1;
  }
  for (uint32_t f = 0; f < t->n_formats; f++) {
    for (size_t k = 0; k < sizeof(kFormats) / sizeof(kFormats[0]); k++) {
      if (!t->formats[f] || strcmp(t->formats[f], kFormats[k].format) != 0) {
        continue;
      }
      uint32_t level = WM_SUPPORT_SUPPORTED;
      if (dt->format_support) {
        wm_status_free(wm_backend_error(
            backend, dt->format_support(t, kFormats[k].format, &level),
            "format_support"));
      }
      if (level >= WM_SUPPORT_SUPPORTED && level <= WM_SUPPORT_PREFERRED) {
        return (int32_t)k;
      }
    }
  }
  return -1;
}

bool rt_gen_compiles(const wm_backend_t *backend) {
  return backend_format(backend) >= 0;
}

// Whether |t| declares every dtype the tensors of |gen| have (a target
// that declares none is taken at its word for float32 only).
static bool dtypes_declared(const wm_target_desc *t,
                            const wm_gen_program_t *gen) {
  uint64_t mask =
      t && t->dtype_mask ? t->dtype_mask : (uint64_t)1 << WM_DTYPE_FLOAT;
  for (int32_t i = 0; i < gen->n_stages; i++) {
    const wm_gen_compute_t *c = gen->stages[i];
    for (int32_t k = 0; k < c->n_tensors; k++) {
      if (!(mask & ((uint64_t)1 << c->tensors[k].dtype))) {
        return false;
      }
    }
  }
  return true;
}

bool rt_gen_answer(const wm_backend_t *backend, wm_kernels_t kernels,
                   const wm_gen_program_t *gen, wm_op_support *inout) {
  if (kernels == WM_KERNELS_LIBRARY ||
      (kernels == WM_KERNELS_AUTO && inout->level != WM_SUPPORT_NONE) ||
      backend_format(backend) < 0) {
    return false;
  }
  if (gen && !dtypes_declared(wm_backend_target(backend, 0), gen)) {
    if (inout->level == WM_SUPPORT_NONE) {
      inout->reason = WM_WHY_DTYPE;
      inout->detail =
          "the generated kernel reads a dtype the device does not declare";
    }
    return false;
  }
  if (!gen) {
    // What to write for a backend with the device tier alone: what the
    // generator cannot express yet (a library tier gives its own reason).
    if (inout->level == WM_SUPPORT_NONE && !wm_backend_api(backend)->library) {
      inout->reason = WM_WHY_OP;
      inout->detail =
          "no compute definition expresses this instance for the "
          "generator (the operator, or its dtypes or attributes)";
    }
    return false;
  }
  inout->level = WM_SUPPORT_SUPPORTED;
  inout->impl = WM_IMPL_GENERATED;
  inout->reason = 0;
  inout->detail = NULL;
  return true;
}

// The vector register bytes of the machine that compiles format c: its
// widest of AVX-512, AVX2 and the 16-byte baseline.
static int32_t vector_bytes;
static pthread_once_t vector_once = PTHREAD_ONCE_INIT;

static void probe_vectors(void) {
  char flags[4096];
  vector_bytes = 16;
  if (wm_cpuinfo_get("flags", flags, sizeof(flags))) {
    vector_bytes = strstr(flags, " avx512f") ? 64
                   : strstr(flags, " avx2 ") ? 32
                                             : 16;
  }
}

// Names the kernel of |c| under |sch| after its canonical text and
// schedule, so equal kernels get equal names.
static wm_status_t name_kernel(wm_gen_compute_t *c,
                               const wm_gen_schedule_t *sch) {
  wm_strbuf_t text;
  wm_strbuf_init(&text);
  wm_gen_canonical(c, &text);
  char words[96];
  wm_gen_schedule_text(sch, words, sizeof(words));
  wm_strbuf_printf(&text, " %s", words);
  if (text.failed) {
    wm_strbuf_deinit(&text);
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  char hex[65];
  wm_sha256_hex(wm_strbuf_str(&text), text.len, hex);
  wm_strbuf_deinit(&text);
  snprintf(c->name, sizeof(c->name), "wg_%.12s", hex);
  return NULL;
}

int32_t rt_gen_vector_bytes(void) {
  pthread_once(&vector_once, probe_vectors);
  return vector_bytes;
}

void rt_gen_target(char *out, size_t cap) {
  char model[160] = "";
  if (!wm_cpuinfo_get("model name", model, sizeof(model))) {
    snprintf(model, sizeof(model), "unknown cpu");
  }
  snprintf(out, cap, "c %s v%d", model, (int)rt_gen_vector_bytes());
}

wm_status_t rt_gen_records_path(const char *path, char **out) {
  *out = NULL;
  if (path && *path) {
    *out = wm_strdup(path);
    return *out ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  char *dir = NULL;
  WM_RETURN_IF_ERROR(wm_cache_folder(NULL, "gen", &dir));
  size_t n = strlen(dir) + 16;
  *out = wm_malloc(n);
  if (*out) {
    snprintf(*out, n, "%s/tune.txt", dir);
  }
  free(dir);
  return *out ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
}

// The schedule of |c| in format |format| on target |t|: for format c a
// tuning record's for this target when one exists and lowers
// (*out_tuned), else the analytical default; for work items on a CPU
// device whose dialect has vectors (OpenCL on a CPU), the loop nest's
// vectors at the device's float lanes, a work item a row; on other
// devices of work items (GPUs), one work item per output point.
static wm_gen_schedule_t schedule_of(const wm_gen_compute_t *c,
                                     const wm_target_desc *t, int32_t format,
                                     const wm_gen_records_t *records,
                                     bool *out_tuned) {
  *out_tuned = false;
  if (kFormats[format].work_items) {
    bool cpu = t && t->kind == WM_TARGET_CPU &&
               wm_gen_dialect_vectors(kFormats[format].dialect);
    uint32_t lanes =
        t && WM_HAS(t, wm_target_desc, vector_width) ? t->vector_width : 0;
    if (!cpu) {
      return wm_gen_default_schedule(c, 0);
    }
    // A reduction's vectors jammed by up to 4: independent accumulators
    // over shared loads (a contraction's weights, a row's inputs).
    wm_gen_schedule_t sch =
        wm_gen_nest_schedule(c, (int32_t)(lanes ? lanes : 4) * 4);
    // A row too narrow for that: up to 4 rows of the axis before it
    // (where that one is serial; lowering keeps it only there).
    int32_t ns = wm_gen_spatial(c);
    if (c->n_reduce > 0 && sch.vector_width > 1 && !sch.vector_reduce) {
      int64_t jam = c->extents[ns - 1] / sch.vector_width;
      sch.unroll = (int32_t)(jam > 4 ? 4 : jam > 1 ? jam : 1);
      int64_t rows = ns >= 2 ? c->extents[ns - 2] : 1;
      sch.rows = sch.unroll == 1 ? (int32_t)(rows > 4 ? 4 : rows) : 1;
    }
    return sch;
  }
  wm_gen_schedule_t sch = wm_gen_default_schedule(c, rt_gen_vector_bytes());
  if (!records || records->n == 0) {
    return sch;
  }
  char target[256], key[65];
  rt_gen_target(target, sizeof(target));
  wm_gen_record_key(c, target, key);
  const wm_gen_record_t *rec = wm_gen_records_find(records, key);
  wm_gen_nest_t nest;
  wm_status_t st = rec ? wm_gen_lower(c, &rec->s, &nest) : NULL;
  if (rec && !st) {
    sch = rec->s;
    *out_tuned = true;
  }
  wm_status_free(st);
  return sch;
}

uint32_t rt_gen_block(const wm_session_t *s, size_t slot,
                      const wm_gen_nest_t *nest) {
  int64_t grain = nest->grain;
  if (nest->whole_ranges) {
    // One range per core: the kernel packs once per range.
    const wm_target_desc *t = wm_backend_target(s->slots[slot].backend, 0);
    int64_t cores = t && t->compute_units > 0 ? t->compute_units : 1;
    grain = (nest->grid + cores - 1) / cores;
  }
  return (uint32_t)(grain < nest->grid ? grain : nest->grid);
}

// The work items per group of a launch over |items| on |slot|'s device:
// up to GROUP_ITEMS and its limit, and on a CPU device few enough that
// each core gets GROUPS_PER_CORE groups (a CPU runs a group on one core).
enum { GROUP_ITEMS = 256, GROUPS_PER_CORE = 8 };

static uint32_t group_size(const wm_session_t *s, size_t slot, int64_t items) {
  const wm_target_desc *t = wm_backend_target(s->slots[slot].backend, 0);
  int64_t g = GROUP_ITEMS;
  if (t && WM_HAS(t, wm_target_desc, max_group_size) && t->max_group_size > 0 &&
      t->max_group_size < g) {
    g = t->max_group_size;
  }
  if (t && t->kind == WM_TARGET_CPU) {
    int64_t groups =
        (int64_t)(t->compute_units ? t->compute_units : 1) * GROUPS_PER_CORE;
    g = items / groups < g ? items / groups : g;
  }
  return (uint32_t)(items < g ? (items > 0 ? items : 1) : g > 0 ? g : 1);
}

bool rt_gen_before(const rt_plan_t *p, size_t i, int32_t g, const char *name) {
  int32_t slot = p->steps[i].slot;
  for (size_t j = 0; j <= i; j++) {
    const rt_step_t *o = &p->steps[j];
    if (!o->gen || o->slot != slot) {
      continue;
    }
    for (int32_t k = 0; k < (j == i ? g : o->gen->n_stages); k++) {
      if (strcmp(o->gen->stages[k]->name, name) == 0) {
        return true;
      }
    }
  }
  return false;
}

// Prints stage |g| of generated step |st| (unless an equal kernel is
// printed already) and sets its launch shape and arguments.
static wm_status_t print_stage(wm_session_t *s, rt_plan_t *p, size_t i,
                               int32_t g, int32_t format,
                               const wm_gen_records_t *records,
                               wm_strbuf_t *src, size_t *inout_kernels) {
  rt_step_t *st = &p->steps[i];
  rt_gen_stage_t *k = &st->stages[g];
  wm_gen_compute_t *c = st->gen->stages[g];
  bool tuned;
  wm_gen_schedule_t sch =
      schedule_of(c, wm_backend_target(s->slots[st->slot].backend, 0), format,
                  records, &tuned);
  // Lowered first: the kernel is named after the schedule as lowered
  // (rows kept only where they apply).
  wm_gen_nest_t nest;
  WM_RETURN_IF_ERROR(wm_gen_lower(c, &sch, &nest));
  WM_RETURN_IF_ERROR(name_kernel(c, &nest.s));
  if (!rt_gen_before(p, i, g, c->name)) {
    WM_RETURN_IF_ERROR(wm_gen_print(&nest, kFormats[format].dialect, src));
    ++*inout_kernels;
  }
  int64_t elements = 1;
  for (int32_t a = 0; a < wm_gen_spatial(c); a++) {
    elements *= c->extents[a];
  }
  k->grid = elements == 0 ? 0 : (uint32_t)nest.grid;
  k->points = kFormats[format].work_items;
  k->block = k->points ? group_size(s, (size_t)st->slot, nest.grid)
                       : rt_gen_block(s, (size_t)st->slot, &nest);
  k->n_kargs = (uint32_t)c->n_tensors;
  for (int32_t t = 0; t < c->n_tensors; t++) {
    int32_t op = c->tensors[t].operand;
    if (c->tensors[t].temp) {
      k->kargs[t] = -c->tensors[t].temp;  // -1 - temporary
      continue;
    }
    k->kargs[t] = op >= 0 ? op : (int32_t)st->n_in + (-1 - op);
    if (k->kargs[t] >= (int32_t)(st->n_in + st->n_out) ||
        st->io[k->kargs[t]] < 0) {
      return WM_ERROR(INTERNAL,
                      "node \"%s\": generated kernel %s reads operand %d, "
                      "which the node does not have",
                      s->nodes[st->node].label, c->name, (int)op);
    }
  }
  if (nest.grid > UINT32_MAX) {
    return WM_ERROR(UNIMPLEMENTED,
                    "node \"%s\": generated kernel %s runs over %lld "
                    "indices, more than a launch's grid holds",
                    s->nodes[st->node].label, c->name, (long long)nest.grid);
  }
  if (g == 0) {  // the placement names the first stage's kernel
    char text[RT_KERNEL_TEXT - WM_GEN_NAME - 32];
    wm_gen_schedule_text(&nest.s, text, sizeof(text));
    int32_t more = st->gen->n_stages - 1;
    char stages[24] = "";
    if (more > 0) {
      snprintf(stages, sizeof(stages), " (+%d stage%s)", (int)more,
               more == 1 ? "" : "s");
    }
    snprintf(p->kernel_text[st->node], RT_KERNEL_TEXT, "%s, %s%s%s", c->name,
             text, tuned ? " (tuned)" : "", stages);
    p->placement[st->node].kernel = p->kernel_text[st->node];
  }
  return NULL;
}

// Prints the kernels of |p|'s generated steps on |slot| into |src| (each
// distinct kernel once) and sets their launch shapes and placements.
static wm_status_t print_slot(wm_session_t *s, rt_plan_t *p, size_t slot,
                              int32_t format, const wm_gen_records_t *records,
                              wm_strbuf_t *src, size_t *out_kernels) {
  *out_kernels = 0;
  for (size_t i = 0; i < p->n_steps; i++) {
    rt_step_t *st = &p->steps[i];
    if (!st->gen || st->slot != (int32_t)slot) {
      continue;
    }
    if (!st->stages) {
      st->stages = wm_calloc((size_t)st->gen->n_stages, sizeof(*st->stages));
      if (!st->stages) {
        return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
      }
    }
    for (int32_t g = 0; g < st->gen->n_stages; g++) {
      WM_RETURN_IF_ERROR(
          print_stage(s, p, i, g, format, records, src, out_kernels));
    }
  }
  return NULL;
}

// With WMAP_GEN_SOURCES set to a folder, writes the source compiled for
// |b| there as <backend>-<sha256 prefix>.<format>, for whoever brings up a
// backend to read; a failure only warns.
static void keep_source(const rt_backend_t *b, const char *format,
                        const wm_strbuf_t *src) {
  const char *dir = getenv("WMAP_GEN_SOURCES");
  if (!dir || !*dir) {
    return;
  }
  char hex[65];
  wm_sha256_hex(wm_strbuf_str(src), src->len, hex);
  size_t n = strlen(dir) + 128;
  char *path = wm_malloc(n);
  wm_status_t st = path ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  if (!st) {
    snprintf(path, n, "%s/%s-%.16s.%s", dir, wm_backend_name(b->backend), hex,
             format);
    st = wm_file_write(path, wm_strbuf_str(src), src->len);
  }
  if (st) {
    wm_log(WM_LOG_WARN, "WMAP_GEN_SOURCES: %s", wm_status_message(st));
    wm_status_free(st);
  } else {
    wm_log(WM_LOG_INFO, "generated source for %s in %s",
           wm_backend_name(b->backend), path);
  }
  free(path);
}

wm_status_t rt_gen_build(wm_session_t *s, rt_plan_t *p) {
  size_t n_gen = 0;
  for (size_t i = 0; i < p->n_steps; i++) {
    n_gen += p->steps[i].gen != NULL;
  }
  if (n_gen == 0) {
    return NULL;
  }
  p->kernel_text = wm_calloc(s->graph->node_count + 1, RT_KERNEL_TEXT);
  if (!p->kernel_text) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  // The tuning records (wmap tune) choose schedules where they have one.
  wm_gen_records_t records;
  memset(&records, 0, sizeof(records));
  char *path = NULL;
  wm_status_t st = rt_gen_records_path(NULL, &path);
  if (!st) {
    st = wm_gen_records_load(path, &records);
  }
  if (st) {  // a damaged file only costs the tuning
    wm_log(WM_LOG_WARN, "ignoring the tuning records: %s",
           wm_status_message(st));
    wm_status_free(st);
    st = NULL;
  }
  free(path);
  uint64_t t_all = wm_now_ns();
  for (size_t k = 0; !st && k < s->n_slots; k++) {
    rt_backend_t *b = &s->slots[k];
    int32_t f = backend_format(b->backend);
    bool any = false;
    for (size_t i = 0; i < p->n_steps; i++) {
      any |= p->steps[i].gen && p->steps[i].slot == (int32_t)k;
    }
    if (!any) {
      continue;
    }
    if (f < 0) {
      return WM_ERROR(INTERNAL, "backend \"%s\" compiles no format generated",
                      wm_backend_name(b->backend));
    }
    wm_strbuf_t src;
    wm_strbuf_init(&src);
    size_t n_kernels = 0;
    st = print_slot(s, p, k, f, &records, &src, &n_kernels);
    p->stats.generated_kernels += n_kernels;
    if (!st && src.failed) {
      st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
    if (!st) {
      keep_source(b, kFormats[f].format, &src);
    }
    uint64_t t0 = wm_now_ns();
    if (!st) {
      st = rt_slot_error(b,
                         b->api->device->compile(b->dev, kFormats[f].format,
                                                 wm_strbuf_str(&src), src.len,
                                                 NULL, &p->exes[k]),
                         "compile");
    }
    wm_log(WM_LOG_INFO,
           "%zu generated kernels (%zu bytes of %s) for %s in %.1f ms",
           n_kernels, src.len, kFormats[f].format, wm_backend_name(b->backend),
           (double)(wm_now_ns() - t0) / 1e6);
    wm_strbuf_deinit(&src);
    for (size_t i = 0; !st && i < p->n_steps; i++) {
      rt_step_t *step = &p->steps[i];
      for (int32_t g = 0; !st && step->gen && step->slot == (int32_t)k &&
                          g < step->gen->n_stages;
           g++) {
        st = rt_slot_error(b,
                           b->api->device->exe_get_kernel(
                               p->exes[k], step->gen->stages[g]->name,
                               &step->stages[g].kernel),
                           "exe_get_kernel");
      }
    }
  }
  p->stats.generate_ms = (double)(wm_now_ns() - t_all) / 1e6;
  wm_gen_records_free(&records);
  return st;  // the computes stay with the steps (wmap tune reads them)
}

wm_status_t rt_gen_launch_stage(wm_session_t *s, const rt_step_t *st,
                                const rt_gen_stage_t *g) {
  if (g->grid == 0) {
    return NULL;  // an empty output
  }
  wm_kernel_arg args[WM_GEN_MAX_TENSORS + 2];
  for (uint32_t i = 0; i < g->n_kargs; i++) {
    int32_t v = g->kargs[i];
    const wm_buffer_view *view = v >= 0 ? &st->views[v] : &st->ws_view;
    args[i] = (wm_kernel_arg){
        .struct_size = sizeof(wm_kernel_arg),
        .kind = WM_ARG_BUFFER,
        .buffer = view->buffer,
        .offset = view->offset + (v >= 0 ? 0 : st->temp_offsets[-1 - v])};
  }
  wm_launch_args la = {.struct_size = sizeof(la),
                       .kernel = g->kernel,
                       .grid = {g->grid, 1, 1},
                       .block = {g->block, 1, 1},
                       .n_args = g->n_kargs,
                       .args = args};
  // Work items: groups of |block| covering [0, grid), told the range.
  const int64_t range[2] = {0, g->grid};
  if (g->points) {
    la.grid[0] = (g->grid + g->block - 1) / g->block;
    for (int32_t i = 0; i < 2; i++) {
      args[la.n_args++] = (wm_kernel_arg){.struct_size = sizeof(wm_kernel_arg),
                                          .kind = WM_ARG_SCALAR,
                                          .value = &range[i],
                                          .size = sizeof(range[i])};
    }
  }
  rt_backend_t *b = &s->slots[st->slot];
  return rt_slot_error(b, b->api->device->launch(b->stream, &la), "launch");
}

wm_status_t rt_gen_launch(wm_session_t *s, const rt_step_t *st) {
  for (int32_t g = 0; g < st->gen->n_stages; g++) {
    WM_RETURN_IF_ERROR(rt_gen_launch_stage(s, st, &st->stages[g]));
  }
  return NULL;
}
