// The packed contraction template (kernel-gen.md §2.3, §3.3; BLIS's
// loops): per job (a batch index and a block of mc' rows by nc' columns
// of the output), for each kc-deep slice of the reduce axis, B's slice is
// packed into panels of nr columns and A's into panels of mr rows, mc rows
// at a time, and a register tile of mr x nr accumulators (nr/w vectors
// per row) runs over each pair of panels. The tile lands in the output
// (added to what earlier slices left), and the last slice applies the
// epilogue. Packing reads A and B through their accesses, so transposed,
// strided and broadcast operands cost nothing more.
#include <stdio.h>
#include <string.h>

#include "gen/internal.h"

// Whether load expression |e| is a load (its access in *out).
static const wm_gen_access_t *load_of(const wm_gen_compute_t *c, int32_t e) {
  return c->exprs[e].op == WM_GEN_LOAD ? &c->accesses[c->exprs[e].access]
                                       : NULL;
}

// Whether every load of expression |e| and the output move along the
// column axes [j0, ns) as along their flattened index (the last axis's
// step times the columns after each one).
static bool flat_columns(const wm_gen_compute_t *c, const wm_gen_access_t *acc,
                         int32_t j0, int32_t ns) {
  int64_t unit = wm_gen_access_step(c, acc, ns - 1), span = 1;
  for (int32_t a = ns - 1; a >= j0; a--) {
    if (wm_gen_access_step(c, acc, a) != unit * span) {
      return false;
    }
    span *= c->extents[a];
  }
  return true;
}

static bool flat_loads(const wm_gen_compute_t *c, int32_t e, int32_t j0,
                       int32_t ns) {
  const wm_gen_expr_t *x = &c->exprs[e];
  if (x->op == WM_GEN_LOAD) {
    return flat_columns(c, &c->accesses[x->access], j0, ns);
  }
  for (int32_t k = 0; k < wm_gen_op_arity(x->op); k++) {
    if (!flat_loads(c, x->arg[k], j0, ns)) {
      return false;
    }
  }
  return true;
}

// The shape with |ea| as A and |eb| as B, or false.
static bool shape_as(const wm_gen_compute_t *c, int32_t ea, int32_t eb,
                     wm_gen_gemm_t *out) {
  int32_t ns = wm_gen_spatial(c);
  const wm_gen_access_t *A = load_of(c, ea), *B = load_of(c, eb);
  const wm_gen_access_t *Y = &c->accesses[0];
  if (!A || !B) {
    return false;
  }
  // The columns: trailing axes A does not move along, the output
  // contiguous over them.
  int32_t j0 = ns;
  int64_t span = 1;
  while (j0 > 0 && wm_gen_access_step(c, A, j0 - 1) == 0 &&
         wm_gen_access_step(c, Y, j0 - 1) == span) {
    span *= c->extents[j0 - 1];
    j0--;
  }
  if (j0 == ns || (c->epilogue >= 0 && !flat_loads(c, c->epilogue, j0, ns))) {
    return false;
  }
  memset(out, 0, sizeof(*out));
  out->a = ea;
  out->b = eb;
  out->j0 = j0;
  out->i = j0 > 0 && wm_gen_access_step(c, B, j0 - 1) == 0 ? j0 - 1 : -1;
  out->m = out->i >= 0 ? c->extents[out->i] : 1;
  out->n = span;
  out->depth = 1;
  for (int32_t a = ns; a < c->n_axes; a++) {
    out->depth *= c->extents[a];
  }
  out->batch = 1;
  for (int32_t a = 0; a < (out->i >= 0 ? out->i : j0); a++) {
    out->batch *= c->extents[a];
  }
  return out->m > 0 && out->n > 0 && out->depth > 0 && out->batch > 0;
}

bool wm_gen_gemm_shape(const wm_gen_compute_t *c, wm_gen_gemm_t *out) {
  memset(out, 0, sizeof(*out));
  const wm_gen_expr_t *body = &c->exprs[c->body];
  for (int32_t i = 0; i < c->n_accesses; i++) {
    const wm_gen_access_t *acc = &c->accesses[i];
    for (int32_t d = 0; d < WM_MAX_RANK; d++) {
      if (acc->gather[d] > 0) {
        return false;  // the template packs affine operands
      }
    }
    if (c->tensors[acc->tensor].dtype != WM_DTYPE_FLOAT) {
      return false;
    }
  }
  if (c->n_reduce < 1 || wm_gen_spatial(c) < 1 || c->combine != WM_GEN_ADD ||
      c->init != 0.0f || body->op != WM_GEN_MUL) {
    return false;
  }
  wm_gen_gemm_t x, y;
  bool ok_x = shape_as(c, body->arg[0], body->arg[1], &x);
  bool ok_y = shape_as(c, body->arg[1], body->arg[0], &y);
  // The orientation with more columns (B's side is packed in panels of
  // the wider vectors).
  if (ok_x && (!ok_y || x.n * (x.i >= 0) >= y.n * (y.i >= 0))) {
    *out = x;
    return true;
  }
  if (ok_y) {
    *out = y;
    return true;
  }
  return false;
}

static int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

static int64_t round_up(int64_t a, int64_t b) {
  return ceil_div(a, b) * b;
}

// The jobs of a batch: blocks of rows (split_m) or of columns, about
// TARGET_JOBS of them when the output is large, each at least JOB_MACS
// multiply-adds. A kernel merges the jobs of its range into one block of
// the output, packing each operand once per block: a thread given a whole
// share packs as a single-threaded GEMM would.
enum { TARGET_JOBS = 8, JOB_MACS = 1 << 20 };

typedef struct split {
  bool split_m;       // blocks of rows (else of columns)
  int64_t size;       // rows or columns per block (a multiple of mr or nr)
  int64_t per_batch;  // blocks per batch index
} split_t;

static split_t split_of(const wm_gen_gemm_t *g, const wm_gen_schedule_t *s) {
  split_t sp;
  sp.split_m = g->m >= g->n;
  int64_t extent = sp.split_m ? g->m : g->n;
  int64_t unit = sp.split_m ? s->mr : s->nr;
  int64_t other = sp.split_m ? g->n : g->m;
  int64_t want = ceil_div(TARGET_JOBS, g->batch);
  int64_t most = ceil_div(extent * other * g->depth, JOB_MACS);
  want = want < most ? want : most;
  want = want < ceil_div(extent, unit) ? want : ceil_div(extent, unit);
  want = want > 0 ? want : 1;
  sp.size = round_up(ceil_div(extent, want), unit);
  sp.per_batch = ceil_div(extent, sp.size);
  return sp;
}

wm_status_t wm_gen_lower_gemm(const wm_gen_compute_t *c,
                              const wm_gen_schedule_t *s, wm_gen_nest_t *out) {
  wm_gen_gemm_t g;
  int32_t w = s->vector_width;
  if (!wm_gen_gemm_shape(c, &g)) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: %s is not a contraction the packed template runs",
                    c->name);
  }
  if (w < 4 || w > 16 || (w & (w - 1)) || s->nr < w || s->nr % w ||
      s->nr / w > 4 || s->mr < 1 || s->mr * (s->nr / w) > 28 || s->kc < 1 ||
      s->mc < s->mr || s->mc % s->mr || s->nc < s->nr || s->nc % s->nr) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: %s: template schedule mr %d nr %d (vector %d) kc "
                    "%d mc %d nc %d; want nr a multiple of the vector up to "
                    "4 of them, at most 28 accumulators, mc a multiple of "
                    "mr and nc of nr",
                    c->name, s->mr, s->nr, w, s->kc, s->mc, s->nc);
  }
  split_t sp = split_of(&g, s);
  out->grid = g.batch * sp.per_batch;
  out->grain = 1;
  out->whole_ranges = true;
  out->n = 0;
  return NULL;
}

// The micro-kernel: |kc| steps of an mr x nr register tile from packed
// panels a (kc x mr) and b (kc x nr) into t (mr x nr, row-major); shared
// by the kernels of a source through its guard.
static void print_micro(const gen_dialect_t *d, int32_t mr, int32_t nr,
                        int32_t w, wm_strbuf_t *o) {
  int32_t nv = nr / w;
  wm_strbuf_printf(o, "#ifndef WG_MK%dx%dv%d\n#define WG_MK%dx%dv%d\n", mr, nr,
                   w, mr, nr, w);
  wm_strbuf_printf(o,
                   "%s void wg_mk%dx%dv%d(int64_t kc, const float *restrict "
                   "a, const float *restrict b, float *restrict t) {\n",
                   d->helper, mr, nr, w);
  for (int32_t r = 0; r < mr; r++) {
    wm_strbuf_printf(o, "  wg_v%d", w);
    for (int32_t v = 0; v < nv; v++) {
      wm_strbuf_printf(o, "%s c%d_%d = {0}", v ? "," : "", r, v);
    }
    wm_strbuf_printf(o, ";\n");
  }
  wm_strbuf_printf(o, "  for (int64_t p = 0; p < kc; p++) {\n");
  for (int32_t v = 0; v < nv; v++) {
    wm_strbuf_printf(o, "    wg_v%d b%d = wg_load%d(b + p * %d + %d);\n", w, v,
                     w, nr, v * w);
  }
  for (int32_t r = 0; r < mr; r++) {
    wm_strbuf_printf(o, "    float a%d = a[p * %d + %d];\n", r, mr, r);
    for (int32_t v = 0; v < nv; v++) {
      wm_strbuf_printf(o, "    c%d_%d += a%d * b%d;\n", r, v, r, v);
    }
  }
  wm_strbuf_printf(o, "  }\n");
  for (int32_t r = 0; r < mr; r++) {
    for (int32_t v = 0; v < nv; v++) {
      wm_strbuf_printf(o, "  wg_store%d(t + %d, c%d_%d);\n", w, r * nr + v * w,
                       r, v);
    }
  }
  wm_strbuf_printf(o, "}\n#endif\n");
}

// The column axes' variables at flat column |flat| for the output and the
// epilogue (flat over them): the last one holds the flat index, the
// others 0.
static void print_flat_columns(const wm_gen_gemm_t *g, int32_t ns,
                               const char *flat, int32_t depth,
                               wm_strbuf_t *o) {
  for (int32_t a = g->j0; a < ns; a++) {
    gen_indent(o, depth);
    wm_strbuf_printf(o, "int64_t i%d = %s;\n", (int)a,
                     a == ns - 1 ? flat : "0");
  }
}

// The tile's update of the output at row i<i>, flat column |col|: |w|
// lanes (a full tile's) or one element, added to what earlier slices left
// unless first, the epilogue applied on the last slice.
static void print_update(const gen_dialect_t *d, const wm_gen_compute_t *c,
                         const wm_gen_gemm_t *g, int32_t w, int32_t depth,
                         const char *col, const char *tile, wm_strbuf_t *o) {
  int32_t ns = wm_gen_spatial(c), va = ns - 1;
  print_flat_columns(g, ns, col, depth, o);
  gen_indent(o, depth);
  if (w > 1) {
    wm_strbuf_printf(o, "wg_v%d wg_acc = wg_load%d(%s);\n", w, w, tile);
  } else {
    wm_strbuf_printf(o, "float wg_acc = %s;\n", tile);
  }
  gen_indent(o, depth);
  wm_strbuf_printf(o, "if (!wg_first) {\n");
  gen_indent(o, depth + 1);
  if (w > 1) {
    wm_strbuf_printf(o, "wg_acc += wg_load%d(T0 + ", w);
    gen_print_offset(c, &c->accesses[0], o);
    wm_strbuf_printf(o, ");\n");
  } else {
    wm_strbuf_printf(o, "wg_acc += T0[");
    gen_print_offset(c, &c->accesses[0], o);
    wm_strbuf_printf(o, "];\n");
  }
  gen_indent(o, depth);
  wm_strbuf_printf(o, "}\n");
  if (c->epilogue >= 0) {
    gen_indent(o, depth);
    wm_strbuf_printf(o, "if (wg_last) {\n");
    gen_indent(o, depth + 1);
    wm_strbuf_printf(o, "wg_acc = ");
    gen_print_expr(d, c, c->epilogue, w, va, o);
    wm_strbuf_printf(o, ";\n");
    gen_indent(o, depth);
    wm_strbuf_printf(o, "}\n");
  }
  gen_indent(o, depth);
  if (w > 1) {
    wm_strbuf_printf(o, "wg_store%d(T0 + ", w);
    gen_print_offset(c, &c->accesses[0], o);
    wm_strbuf_printf(o, ", wg_acc);\n");
  } else {
    wm_strbuf_printf(o, "T0[");
    gen_print_offset(c, &c->accesses[0], o);
    wm_strbuf_printf(o, "] = wg_acc;\n");
  }
}

// Whether every load of expression |e| moves by 0 or 1 along axis |j|
// (the epilogue in vectors along it).
static bool vector_loads(const wm_gen_compute_t *c, int32_t e, int32_t j) {
  const wm_gen_expr_t *x = &c->exprs[e];
  if (x->op == WM_GEN_LOAD) {
    int64_t k = wm_gen_access_step(c, &c->accesses[x->access], j);
    return k == 0 || k == 1;
  }
  for (int32_t k = 0; k < wm_gen_op_arity(x->op); k++) {
    if (!vector_loads(c, x->arg[k], j)) {
      return false;
    }
  }
  return true;
}

// Packs A's rows [wg_ic, wg_ic + wg_mc) of the slice into panels of mr
// rows (zero past the last row): per step of the slice its reduce axes'
// variables, then mr rows (a full panel without checks).
static void print_pack_a(const gen_dialect_t *d, const wm_gen_compute_t *c,
                         const wm_gen_gemm_t *g, const wm_gen_access_t *A,
                         int32_t mr, wm_strbuf_t *o) {
  int ai = (int)g->i;
  wm_strbuf_printf(
      o,
      "          for (int64_t wg_ir = 0; wg_ir < wg_mc; wg_ir += "
      "%d) {\n"
      "            float *restrict wg_q = wg_pa + wg_ir * wg_pk;\n"
      "            int64_t wg_rows = wg_mc - wg_ir < %d ? wg_mc - "
      "wg_ir : %d;\n"
      "            for (int64_t wg_p = 0; wg_p < wg_pk; wg_p++) {\n",
      mr, mr, mr);
  gen_print_unflatten(d, c, wm_gen_spatial(c), c->n_axes, "wg_p0 + wg_p", 7, o);
  wm_strbuf_printf(o,
                   "              if (wg_rows == %d) {\n"
                   "#pragma GCC unroll 16\n"
                   "                for (int64_t wg_y = 0; wg_y < %d; wg_y++) "
                   "{\n",
                   mr, mr);
  if (ai >= 0) {
    wm_strbuf_printf(
        o, "                  int64_t i%d = wg_ic + wg_ir + wg_y;\n", ai);
  }
  wm_strbuf_printf(o, "                  wg_q[wg_p * %d + wg_y] = ", mr);
  gen_print_load(d, c, A, o);
  wm_strbuf_printf(o,
                   ";\n"
                   "                }\n"
                   "                continue;\n"
                   "              }\n"
                   "              for (int64_t wg_y = 0; wg_y < %d; wg_y++) "
                   "{\n",
                   mr);
  if (ai >= 0) {
    wm_strbuf_printf(o, "                int64_t i%d = wg_ic + wg_ir + wg_y;\n",
                     ai);
  }
  wm_strbuf_printf(
      o, "                wg_q[wg_p * %d + wg_y] = wg_y < wg_rows ? ", mr);
  gen_print_load(d, c, A, o);
  wm_strbuf_printf(o,
                   " : 0.0f;\n"
                   "              }\n"
                   "            }\n"
                   "          }\n");
}

// Packs B's columns [wg_jc, wg_jc + wg_jn) of the slice into panels of nr
// columns (zero past the last). One column axis: a full panel copies nr
// columns per step of the slice (in vectors where B's columns are
// contiguous and unguarded). Several: the panel's columns unflattened once
// into a table, read per step.
static void print_pack_b(const gen_dialect_t *d, const wm_gen_compute_t *c,
                         const wm_gen_gemm_t *g, const wm_gen_access_t *B,
                         int32_t nr, int32_t w, wm_strbuf_t *o) {
  int32_t ns = wm_gen_spatial(c), nj = ns - g->j0;
  int aj = (int)g->j0;
  // B's columns contiguous over the flattened index (a matrix's rows, a
  // 1x1 convolution's pixels): whole panel rows in vectors.
  bool vectors = !B->guard && wm_gen_access_step(c, B, ns - 1) == 1 &&
                 flat_columns(c, B, g->j0, ns);
  wm_strbuf_printf(o,
                   "        for (int64_t wg_jr = 0; wg_jr < wg_jn; wg_jr += "
                   "%d) {\n"
                   "          float *restrict wg_q = wg_pb + wg_jr * wg_pk;\n"
                   "          int64_t wg_cols = wg_jn - wg_jr < %d ? wg_jn - "
                   "wg_jr : %d;\n",
                   nr, nr, nr);
  if (nj > 1) {
    wm_strbuf_printf(o,
                     "          int64_t wg_jv[%d][%d];\n"
                     "          for (int64_t wg_x = 0; wg_x < wg_cols; "
                     "wg_x++) {\n",
                     nr, (int)nj);
    gen_print_unflatten(d, c, g->j0, ns, "wg_jc + wg_jr + wg_x", 6, o);
    for (int32_t a = g->j0; a < ns; a++) {
      wm_strbuf_printf(o, "            wg_jv[wg_x][%d] = i%d;\n",
                       (int)(a - g->j0), (int)a);
    }
    wm_strbuf_printf(o, "          }\n");
  }
  wm_strbuf_printf(
      o, "          for (int64_t wg_p = 0; wg_p < wg_pk; wg_p++) {\n");
  gen_print_unflatten(d, c, ns, c->n_axes, "wg_p0 + wg_p", 6, o);
  if (vectors) {
    wm_strbuf_printf(o, "            if (wg_cols == %d) {\n", nr);
    print_flat_columns(g, ns, "wg_jc + wg_jr", 7, o);
    for (int32_t v = 0; v < nr / w; v++) {
      wm_strbuf_printf(o,
                       "              wg_store%d(wg_q + wg_p * %d + %d, "
                       "wg_load%d(T%d + ",
                       w, nr, v * w, w, (int)B->tensor);
      gen_print_offset(c, B, o);
      wm_strbuf_printf(o, " + %d));\n", v * w);
    }
    wm_strbuf_printf(o,
                     "              continue;\n"
                     "            }\n");
  }
  wm_strbuf_printf(o,
                   "            for (int64_t wg_x = 0; wg_x < %d; wg_x++) {\n"
                   "              if (wg_x >= wg_cols) {\n"
                   "                wg_q[wg_p * %d + wg_x] = 0.0f;\n"
                   "                continue;\n"
                   "              }\n",
                   nr, nr);
  if (nj > 1) {
    for (int32_t a = g->j0; a < ns; a++) {
      wm_strbuf_printf(o, "              int64_t i%d = wg_jv[wg_x][%d];\n",
                       (int)a, (int)(a - g->j0));
    }
  } else {
    wm_strbuf_printf(o, "              int64_t i%d = wg_jc + wg_jr + wg_x;\n",
                     aj);
  }
  wm_strbuf_printf(o, "              wg_q[wg_p * %d + wg_x] = ", nr);
  gen_print_load(d, c, B, o);
  wm_strbuf_printf(o,
                   ";\n"
                   "            }\n"
                   "          }\n"
                   "        }\n");
}

wm_status_t gen_print_gemm(const gen_dialect_t *d, const wm_gen_nest_t *n,
                           wm_strbuf_t *o) {
  const wm_gen_compute_t *c = n->c;
  const wm_gen_schedule_t *s = &n->s;
  wm_gen_gemm_t g;
  if (!d->args_array || !d->vectors || !wm_gen_gemm_shape(c, &g)) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "gen: %s: the packed contraction template prints C only",
                    c->name);
  }
  int32_t w = s->vector_width, mr = s->mr, nr = s->nr, ns = wm_gen_spatial(c);
  split_t sp = split_of(&g, s);
  int ai = (int)g.i;
  const wm_gen_access_t *A = load_of(c, g.a), *B = load_of(c, g.b);
  bool vec_epi = c->epilogue < 0 || vector_loads(c, c->epilogue, ns - 1);
  gen_print_prologue(d, c, w, o);
  print_micro(d, mr, nr, w, o);
  gen_print_signature(d, c, o);
  wm_strbuf_printf(o,
                   "  static _Thread_local float wg_pa[%d] "
                   "__attribute__((aligned(64)));\n"
                   "  static _Thread_local float wg_pb[%d] "
                   "__attribute__((aligned(64)));\n",
                   s->mc * s->kc, s->kc * s->nc);
  // The range's jobs, batch by batch: the blocks of one batch index in it
  // make one block of the output.
  wm_strbuf_printf(
      o,
      "  for (int64_t wg_job = start; wg_job < end;) {\n"
      "    int64_t wg_bt = wg_job / %lld, wg_b0 = wg_job %% %lld;\n"
      "    int64_t wg_b1 = wg_b0 + (end - wg_job) < %lld ? wg_b0 "
      "+ (end - wg_job) : %lld;\n"
      "    wg_job += wg_b1 - wg_b0;\n",
      (long long)sp.per_batch, (long long)sp.per_batch, (long long)sp.per_batch,
      (long long)sp.per_batch);
  int32_t n_batch = ai >= 0 ? ai : g.j0;
  if (n_batch > 0) {
    gen_print_unflatten(d, c, 0, n_batch, "wg_bt", 2, o);
  }
  wm_strbuf_printf(o, "    (void)wg_bt;\n");
  long long size = (long long)sp.size, m = (long long)g.m, nn = (long long)g.n;
  if (sp.split_m) {
    wm_strbuf_printf(o,
                     "    int64_t wg_m0 = wg_b0 * %lld, wg_m1 = wg_b1 * %lld < "
                     "%lld ? wg_b1 * %lld : %lld;\n"
                     "    int64_t wg_n0 = 0, wg_n1 = %lld;\n",
                     size, size, m, size, m, nn);
  } else {
    wm_strbuf_printf(o,
                     "    int64_t wg_n0 = wg_b0 * %lld, wg_n1 = wg_b1 * %lld < "
                     "%lld ? wg_b1 * %lld : %lld;\n"
                     "    int64_t wg_m0 = 0, wg_m1 = %lld;\n",
                     size, size, nn, size, nn, m);
  }
  long long depth = (long long)g.depth;
  wm_strbuf_printf(
      o,
      "    for (int64_t wg_jc = wg_n0; wg_jc < wg_n1; wg_jc += "
      "%d) {\n"
      "      int64_t wg_jn = wg_n1 - wg_jc < %d ? wg_n1 - wg_jc : "
      "%d;\n"
      "      for (int64_t wg_p0 = 0; wg_p0 < %lld; wg_p0 += %d) {\n"
      "        int64_t wg_pk = %lld - wg_p0 < %d ? %lld - wg_p0 : "
      "%d;\n"
      "        int wg_first = wg_p0 == 0, wg_last = wg_p0 + wg_pk "
      "== %lld;\n"
      "        (void)wg_last;\n",
      s->nc, s->nc, s->nc, depth, s->kc, depth, s->kc, depth, s->kc, depth);
  print_pack_b(d, c, &g, B, nr, w, o);
  wm_strbuf_printf(
      o,
      "        for (int64_t wg_ic = wg_m0; wg_ic < wg_m1; wg_ic += "
      "%d) {\n"
      "          int64_t wg_mc = wg_m1 - wg_ic < %d ? wg_m1 - "
      "wg_ic : %d;\n",
      s->mc, s->mc, s->mc);
  print_pack_a(d, c, &g, A, mr, o);
  // The register tiles over the packed panels.
  wm_strbuf_printf(
      o,
      "          for (int64_t wg_jr = 0; wg_jr < wg_jn; wg_jr += "
      "%d) {\n"
      "            for (int64_t wg_ir = 0; wg_ir < wg_mc; wg_ir += "
      "%d) {\n"
      "              float wg_t[%d] __attribute__((aligned(64)));\n"
      "              wg_mk%dx%dv%d(wg_pk, wg_pa + wg_ir * wg_pk, "
      "wg_pb + wg_jr * wg_pk, wg_t);\n"
      "              int64_t wg_rows = wg_mc - wg_ir < %d ? wg_mc - "
      "wg_ir : %d;\n"
      "              int64_t wg_cols = wg_jn - wg_jr < %d ? wg_jn - "
      "wg_jr : %d;\n",
      nr, mr, mr * nr, mr, nr, w, mr, mr, nr, nr);
  // A full tile in vectors (when the epilogue allows), else element by
  // element.
  if (vec_epi) {
    wm_strbuf_printf(o,
                     "              if (wg_rows == %d && wg_cols == %d) {\n"
                     "                for (int64_t wg_y = 0; wg_y < %d; "
                     "wg_y++) {\n",
                     mr, nr, mr);
    if (ai >= 0) {
      wm_strbuf_printf(o,
                       "                  int64_t i%d = wg_ic + wg_ir + "
                       "wg_y;\n",
                       ai);
    }
    wm_strbuf_printf(o,
                     "                  for (int64_t wg_x = 0; wg_x < %d; "
                     "wg_x += %d) {\n",
                     nr, w);
    char vtile[64];
    snprintf(vtile, sizeof(vtile), "wg_t + wg_y * %d + wg_x", nr);
    print_update(d, c, &g, w, 10, "wg_jc + wg_jr + wg_x", vtile, o);
    wm_strbuf_printf(o,
                     "                  }\n"
                     "                }\n"
                     "                continue;\n"
                     "              }\n");
  }
  wm_strbuf_printf(o,
                   "              for (int64_t wg_y = 0; wg_y < wg_rows; "
                   "wg_y++) {\n");
  if (ai >= 0) {
    wm_strbuf_printf(o, "                int64_t i%d = wg_ic + wg_ir + wg_y;\n",
                     ai);
  }
  wm_strbuf_printf(o,
                   "                for (int64_t wg_x = 0; wg_x < wg_cols; "
                   "wg_x++) {\n");
  char tile[64];
  snprintf(tile, sizeof(tile), "wg_t[wg_y * %d + wg_x]", nr);
  print_update(d, c, &g, 1, 9, "wg_jc + wg_jr + wg_x", tile, o);
  wm_strbuf_printf(o,
                   "                }\n"
                   "              }\n"
                   "            }\n"
                   "          }\n"
                   "        }\n"
                   "      }\n"
                   "    }\n"
                   "  }\n"
                   "}\n");
  if (o->failed) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "gen: out of memory printing %s",
                    c->name);
  }
  return NULL;
}
