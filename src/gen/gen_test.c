// Tests of the kernel generator: the builder's checks, golden sources of
// one compute in every dialect, and a schedule fuzzer that compiles what
// the C dialect prints with the system compiler, loads it and compares
// every element with the compute evaluated in double precision.
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen/gen.h"
#include "wm_test.h"

// Y[i,j] = relu(X[i,j] + B[j]) over [3, 37].
static wm_status_t add_bias_relu(wm_gen_compute_t *c) {
  static const int64_t yd[2] = {3, 37}, bd[1] = {37};
  static const char *const axes[2] = {"i", "j"};
  int32_t x, b, sum, y;
  WM_RETURN_IF_ERROR(wm_gen_begin(c, "add_bias_relu", 2, yd, axes));
  WM_RETURN_IF_ERROR(wm_gen_input(c, "X", 2, yd, &x));
  WM_RETURN_IF_ERROR(wm_gen_input(c, "B", 1, bd, &b));
  WM_RETURN_IF_ERROR(wm_gen_binary(c, WM_GEN_ADD, x, b, &sum));
  WM_RETURN_IF_ERROR(wm_gen_unary(c, WM_GEN_RELU, sum, &y));
  return wm_gen_finish(c, y);
}

WM_TEST(builder_refuses_what_it_cannot_run) {
  wm_gen_compute_t c;
  static const int64_t d2[2] = {4, 5}, d5[1] = {6};
  int32_t x, y;
  WM_CHECK_ERR(wm_gen_begin(&c, "9lives", 2, d2, NULL), INVALID_ARGUMENT,
               "not an identifier");
  WM_CHECK_OK(wm_gen_begin(&c, "k", 2, d2, NULL));
  WM_CHECK_ERR(wm_gen_input(&c, "X", 1, d5, &x), INVALID_ARGUMENT,
               "does not broadcast");
  WM_CHECK_OK(wm_gen_input(&c, "X", 2, d2, &x));
  WM_CHECK_ERR(wm_gen_input(&c, "X", 2, d2, &y), INVALID_ARGUMENT,
               "tensor X twice");
  WM_CHECK_ERR(wm_gen_binary(&c, WM_GEN_ADD, x, 7, &y), INVALID_ARGUMENT,
               "operand 7");
  WM_CHECK_ERR(wm_gen_unary(&c, WM_GEN_ADD, x, &y), INVALID_ARGUMENT,
               "not a unary");
  // A shifted read past the end of its tensor.
  wm_gen_access_t acc;
  memset(&acc, 0, sizeof(acc));
  acc.coef[0][0] = 1;
  acc.coef[1][1] = 1;
  acc.off[1] = 1;
  WM_CHECK_OK(wm_gen_input_access(&c, "S", 2, d2, NULL, &acc, &y));
  WM_CHECK_ERR(wm_gen_finish(&c, y), INVALID_ARGUMENT,
               "dim 1 of S is read at 1..5, outside [0, 5)");
  // A transposed read does not vectorize along the inner axis.
  static const int64_t sq[2] = {4, 4};
  WM_CHECK_OK(wm_gen_begin(&c, "tr", 2, sq, NULL));
  memset(&acc, 0, sizeof(acc));
  acc.coef[0][1] = 1;
  acc.coef[1][0] = 1;
  WM_CHECK_OK(wm_gen_input_access(&c, "X", 2, sq, NULL, &acc, &x));
  WM_CHECK_OK(wm_gen_finish(&c, x));
  wm_gen_schedule_t s = {.vector_width = 4, .unroll = 1};
  wm_gen_nest_t n;
  WM_CHECK_ERR(wm_gen_lower(&c, &s, &n), INVALID_ARGUMENT,
               "cannot be vectorized");
  WM_CHECK_INT_EQ(wm_gen_default_schedule(&c, 64).vector_width, 1);
}

// Compares |text| with golden file src/gen/golden/|name|; with
// WMAP_GOLDEN_UPDATE set, writes it instead.
static bool same_as_golden(const char *name, const char *text) {
  const char *root = getenv("WMAP_SOURCE_DIR");
  if (!root) {
    printf("  WMAP_SOURCE_DIR is not set\n");
    return false;
  }
  char path[4096];
  snprintf(path, sizeof(path), "%s/src/gen/golden/%s", root, name);
  if (getenv("WMAP_GOLDEN_UPDATE")) {
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(text, f) >= 0;
    ok = f && fclose(f) == 0 && ok;
    return ok;
  }
  FILE *f = fopen(path, "r");
  if (!f) {
    printf("  cannot read %s\n", path);
    return false;
  }
  char buf[16384];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  if (strcmp(buf, text) != 0) {
    printf("  %s differs from what is printed now:\n%s\n", path, text);
    return false;
  }
  return true;
}

WM_TEST(printed_sources_match_the_golden_files) {
  wm_gen_compute_t c;
  WM_CHECK_OK(add_bias_relu(&c));
  wm_gen_schedule_t s = wm_gen_default_schedule(&c, 64);
  WM_CHECK_INT_EQ(s.vector_width, 16);
  WM_CHECK_INT_EQ(s.unroll, 2);
  wm_gen_nest_t n;
  WM_CHECK_OK(wm_gen_lower(&c, &s, &n));
  static const char *const files[3] = {"add_bias_relu.c.golden",
                                       "add_bias_relu.cl.golden",
                                       "add_bias_relu.cu.golden"};
  for (int d = 0; d < 3; d++) {
    wm_strbuf_t text;
    wm_strbuf_init(&text);
    WM_CHECK_OK(wm_gen_print(&n, (wm_gen_dialect_t)d, &text));
    WM_CHECK(same_as_golden(files[d], wm_strbuf_str(&text)));
    wm_strbuf_deinit(&text);
  }
}

// ------------------------------------------------------ schedule fuzzer

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static int32_t pick(int32_t n) {
  return wm_test_pick(&rng, n);
}

// One fuzz case: a compute, its inputs' data, and the kernel's name.
typedef struct fuzz_case {
  wm_gen_compute_t c;
  wm_gen_schedule_t s;
  int64_t grid;  // the nest's parallel range
  float *data[WM_GEN_MAX_TENSORS];
  size_t count[WM_GEN_MAX_TENSORS];
} fuzz_case_t;

static size_t numel(const wm_gen_tensor_t *t) {
  size_t n = 1;
  for (int32_t d = 0; d < t->rank; d++) {
    n *= (size_t)t->dims[d];
  }
  return n;
}

// A random expression over the loads |loads|, |depth| levels at most.
static wm_status_t random_expr(wm_gen_compute_t *c, const int32_t *loads,
                               int32_t n_loads, int32_t depth, int32_t *out) {
  int32_t r = pick(10);
  if (depth == 0 || r < 3) {
    if (r == 0) {
      return wm_gen_const(c, (float)(pick(9) - 4) * 0.5f, out);
    }
    *out = loads[pick(n_loads)];
    return NULL;
  }
  int32_t a, b, x;
  WM_RETURN_IF_ERROR(random_expr(c, loads, n_loads, depth - 1, &a));
  if (r < 6) {
    static const wm_gen_op_t un[] = {
        WM_GEN_NEG,  WM_GEN_ABS,   WM_GEN_SQRT,    WM_GEN_EXP,   WM_GEN_LOG,
        WM_GEN_TANH, WM_GEN_RELU,  WM_GEN_SIGMOID, WM_GEN_FLOOR, WM_GEN_CEIL,
        WM_GEN_SIN,  WM_GEN_COS,   WM_GEN_ERF,     WM_GEN_SIGN,  WM_GEN_ROUND,
        WM_GEN_TAN,  WM_GEN_ASIN,  WM_GEN_ACOS,    WM_GEN_ATAN,  WM_GEN_SINH,
        WM_GEN_COSH, WM_GEN_ASINH, WM_GEN_ACOSH,   WM_GEN_ATANH};
    return wm_gen_unary(c, un[pick(24)], a, out);
  }
  WM_RETURN_IF_ERROR(random_expr(c, loads, n_loads, depth - 1, &b));
  if (r == 9) {
    WM_RETURN_IF_ERROR(random_expr(c, loads, n_loads, depth - 1, &x));
    return wm_gen_select(c, x, a, b, out);
  }
  static const wm_gen_op_t bin[] = {
      WM_GEN_ADD, WM_GEN_SUB, WM_GEN_MUL, WM_GEN_DIV, WM_GEN_MAX,
      WM_GEN_MIN, WM_GEN_POW, WM_GEN_LT,  WM_GEN_GT,  WM_GEN_FMOD};
  return wm_gen_binary(c, bin[pick(10)], a, b, out);
}

// A random epilogue over ACC and loads |loads| (at spatial points): a
// bias added, a scale, a relu, a max.
static wm_status_t random_epilogue(wm_gen_compute_t *c, const int32_t *loads,
                                   int32_t n_loads, int32_t *out) {
  int32_t acc;
  WM_RETURN_IF_ERROR(wm_gen_acc(c, &acc));
  int32_t r = pick(5);
  if (r == 0 || n_loads == 0) {
    *out = -1;
    return NULL;
  }
  int32_t x = loads[pick(n_loads)], y;
  if (r == 1) {
    return wm_gen_binary(c, WM_GEN_ADD, acc, x, out);
  }
  if (r == 2) {
    WM_RETURN_IF_ERROR(wm_gen_binary(c, WM_GEN_ADD, acc, x, &y));
    return wm_gen_unary(c, WM_GEN_RELU, y, out);
  }
  if (r == 3) {
    WM_RETURN_IF_ERROR(wm_gen_const(c, 0.5f, &y));
    return wm_gen_binary(c, WM_GEN_MUL, acc, y, out);
  }
  return wm_gen_binary(c, WM_GEN_MAX, acc, x, out);
}

// Fills the inputs' data of |fc| with values in [-2, 2].
static wm_status_t fill_case(fuzz_case_t *fc) {
  wm_gen_compute_t *c = &fc->c;
  for (int32_t t = 0; t < c->n_tensors; t++) {
    fc->count[t] = numel(&c->tensors[t]);
    fc->data[t] = malloc((fc->count[t] + 1) * sizeof(float));
    if (!fc->data[t]) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
    for (size_t e = 0; e < fc->count[t]; e++) {
      fc->data[t][e] = (float)pick(4001) / 1000.0f - 2.0f;
    }
  }
  return NULL;
}

// A reduction: output rank 0 to 3, one or two reduce axes (extent 0 to
// 40), one to three inputs each read along some of the axes, a random
// body folded by add, max, min (or mul of a bounded body), an epilogue.
static wm_status_t make_reduction(fuzz_case_t *fc, int k) {
  wm_gen_compute_t *c = &fc->c;
  int32_t rank = pick(4), n_red = 1 + pick(2);
  int64_t dims[WM_MAX_RANK];
  for (int32_t d = 0; d < rank; d++) {
    dims[d] = 1 + pick(d == rank - 1 ? 30 : 5);
  }
  char name[16];
  snprintf(name, sizeof(name), "k%d", k);
  WM_RETURN_IF_ERROR(wm_gen_begin(c, name, rank, dims, NULL));
  for (int32_t r = 0; r < n_red; r++) {
    int32_t axis;
    char an[16];
    snprintf(an, sizeof(an), "r%d", (int)r);
    WM_RETURN_IF_ERROR(wm_gen_reduce_axis(
        c, an, pick(25) == 0 ? 0 : 1 + pick(r == n_red - 1 ? 40 : 4), &axis));
  }
  // Inputs: one dim per axis they move along (some spatial axes
  // broadcast), the innermost reduce axis innermost or, sometimes,
  // outermost (a strided read).
  int32_t loads[4], n_in = 1 + pick(3), epi_loads[4], n_epi = 0;
  for (int32_t i = 0; i < n_in; i++) {
    wm_gen_access_t acc;
    memset(&acc, 0, sizeof(acc));
    int64_t id[WM_MAX_RANK];
    int32_t r = 0;
    bool outer_first = pick(3) == 0;
    if (outer_first) {
      acc.coef[r][c->n_axes - 1] = 1;
      id[r++] = c->extents[c->n_axes - 1];
    }
    for (int32_t a = 0; a < c->n_axes - (outer_first ? 1 : 0); a++) {
      if (a < rank && pick(4) == 0) {
        continue;  // broadcast along this spatial axis
      }
      acc.coef[r][a] = 1;
      id[r++] = c->extents[a];
    }
    char tn[16];
    snprintf(tn, sizeof(tn), "X%d", (int)i);
    WM_RETURN_IF_ERROR(
        wm_gen_input_access(c, tn, r, id, NULL, &acc, &loads[i]));
  }
  // An input at the output's points, for the epilogue.
  if (pick(2) == 0) {
    WM_RETURN_IF_ERROR(wm_gen_input(c, "E", rank, dims, &epi_loads[n_epi++]));
  }
  static const wm_gen_op_t combines[] = {WM_GEN_ADD, WM_GEN_MAX, WM_GEN_MIN,
                                         WM_GEN_MUL};
  wm_gen_op_t combine = combines[pick(4)];
  int32_t body, epi;
  if (combine == WM_GEN_MUL) {  // factors near 1, so products stay finite
    int32_t t, half;
    WM_RETURN_IF_ERROR(wm_gen_unary(c, WM_GEN_SIGMOID, loads[0], &t));
    WM_RETURN_IF_ERROR(wm_gen_const(c, 0.5f, &half));
    WM_RETURN_IF_ERROR(wm_gen_binary(c, WM_GEN_ADD, t, half, &body));
  } else {
    WM_RETURN_IF_ERROR(random_expr(c, loads, n_in, pick(3), &body));
  }
  WM_RETURN_IF_ERROR(random_epilogue(c, epi_loads, n_epi, &epi));
  float init = combine == WM_GEN_ADD   ? 0.0f
               : combine == WM_GEN_MUL ? 1.0f
               : combine == WM_GEN_MAX ? -INFINITY
                                       : INFINITY;
  WM_RETURN_IF_ERROR(wm_gen_finish_reduce(c, combine, init, body, epi));
  fc->s = wm_gen_default_schedule(c, 4 << pick(5));
  if (fc->s.vector_width > 1) {
    fc->s.unroll = 1 + pick(4);
  }
  return fill_case(fc);
}

// A contraction Y[b, i, j] = sum_k A * B (+ epilogue) with A and B read
// plainly or transposed, batch axes broadcast or not, odd sizes, under the
// packed template with a random register tile and blocks (or the loop
// nest).
static wm_status_t make_contraction(fuzz_case_t *fc, int k) {
  wm_gen_compute_t *c = &fc->c;
  int32_t nb = pick(2), ns = nb + (pick(4) == 0 ? 1 : 2);
  int64_t dims[4];
  for (int32_t d = 0; d < nb; d++) {
    dims[d] = 1 + pick(3);
  }
  for (int32_t d = nb; d < ns; d++) {
    dims[d] = 1 + pick(pick(3) == 0 ? 80 : 30);
  }
  int64_t depth = 1 + pick(pick(3) == 0 ? 300 : 40);
  char name[16];
  snprintf(name, sizeof(name), "k%d", k);
  WM_RETURN_IF_ERROR(wm_gen_begin(c, name, ns, dims, NULL));
  int32_t ka;
  WM_RETURN_IF_ERROR(wm_gen_reduce_axis(c, "kk", depth, &ka));
  int32_t ai = ns >= nb + 2 ? ns - 2 : -1, aj = ns - 1;
  int32_t la, lb;
  for (int32_t t = 0; t < 2; t++) {
    wm_gen_access_t acc;
    memset(&acc, 0, sizeof(acc));
    int64_t id[4];
    int32_t r = 0;
    bool bcast = nb && pick(3) == 0;
    for (int32_t d = 0; d < nb; d++) {
      acc.coef[r][d] = bcast ? 0 : 1;
      id[r++] = bcast ? 1 : dims[d];
    }
    int32_t row = t == 0 ? ai : ka, col = t == 0 ? ka : aj;
    if (row >= 0 && pick(3) == 0) {  // transposed
      int32_t x = row;
      row = col;
      col = x;
    }
    if (row >= 0) {
      acc.coef[r][row] = 1;
      id[r++] = c->extents[row];
    }
    acc.coef[r][col] = 1;
    id[r++] = c->extents[col];
    WM_RETURN_IF_ERROR(wm_gen_input_access(c, t == 0 ? "A" : "B", r, id, NULL,
                                           &acc, t == 0 ? &la : &lb));
  }
  int32_t epi_loads[1], n_epi = 0, body, epi;
  if (pick(2) == 0) {  // a bias per column
    int64_t bd = dims[ns - 1];
    WM_RETURN_IF_ERROR(wm_gen_input(c, "bias", 1, &bd, &epi_loads[n_epi++]));
  }
  WM_RETURN_IF_ERROR(wm_gen_binary(c, WM_GEN_MUL, la, lb, &body));
  WM_RETURN_IF_ERROR(random_epilogue(c, epi_loads, n_epi, &epi));
  WM_RETURN_IF_ERROR(wm_gen_finish_reduce(c, WM_GEN_ADD, 0.0f, body, epi));
  fc->s = wm_gen_default_schedule(c, pick(2) ? 64 : 32);
  if (fc->s.mr > 0 && pick(2)) {
    int32_t w = fc->s.vector_width;
    fc->s.nr = w * (1 + pick(3));
    fc->s.mr = 1 + pick(28 / (fc->s.nr / w) < 8 ? 28 / (fc->s.nr / w) : 8);
    fc->s.kc = 1 + pick(64);
    fc->s.mc = fc->s.mr * (1 + pick(4));
    fc->s.nc = fc->s.nr * (1 + pick(4));
  } else if (pick(4) == 0) {
    fc->s = (wm_gen_schedule_t){.vector_width = 1, .unroll = 1};  // the nest
  }
  return fill_case(fc);
}

// A 2-D convolution Y[n, oc, oh, ow] = sum over ic, kh, kw of
// X[n, ic, oh * s + kh * d - p, ow * s + kw * d - p] (guarded: the
// padding reads 0) * W[oc, ic, kh, kw], a bias per output channel now
// and then: the template's columns are (oh, ow), its depth (ic, kh, kw).
static wm_status_t make_conv(fuzz_case_t *fc, int k) {
  wm_gen_compute_t *c = &fc->c;
  int64_t n = 1 + pick(2), ic = 1 + pick(6), oc = 1 + pick(20),
          kh = 1 + pick(3), kw = 1 + pick(3), st = 1 + pick(2),
          dl = 1 + pick(2), pad = pick(3);
  int64_t h = 1 + pick(12), w = 1 + pick(12);
  int64_t oh = (h + 2 * pad - dl * (kh - 1) - 1) / st + 1;
  int64_t ow = (w + 2 * pad - dl * (kw - 1) - 1) / st + 1;
  if (oh < 1 || ow < 1) {
    h += dl * kh;
    w += dl * kw;
    oh = (h + 2 * pad - dl * (kh - 1) - 1) / st + 1;
    ow = (w + 2 * pad - dl * (kw - 1) - 1) / st + 1;
  }
  int64_t yd[4] = {n, oc, oh, ow};
  char name[16];
  snprintf(name, sizeof(name), "k%d", k);
  WM_RETURN_IF_ERROR(wm_gen_begin(c, name, 4, yd, NULL));
  int32_t ai, ah, aw;
  WM_RETURN_IF_ERROR(wm_gen_reduce_axis(c, "ci", ic, &ai));
  WM_RETURN_IF_ERROR(wm_gen_reduce_axis(c, "kh", kh, &ah));
  WM_RETURN_IF_ERROR(wm_gen_reduce_axis(c, "kw", kw, &aw));
  wm_gen_access_t x;
  memset(&x, 0, sizeof(x));
  x.coef[0][0] = 1;
  x.coef[1][ai] = 1;
  x.coef[2][2] = st;
  x.coef[2][ah] = dl;
  x.off[2] = -pad;
  x.coef[3][3] = st;
  x.coef[3][aw] = dl;
  x.off[3] = -pad;
  x.guard = true;
  x.fill = pick(4) == 0 ? 0.5f : 0.0f;  // padding of another value
  int64_t xd[4] = {n, ic, h, w}, wd[4] = {oc, ic, kh, kw};
  int32_t lx, lw, body, epi = -1;
  WM_RETURN_IF_ERROR(wm_gen_input_access(c, "X", 4, xd, NULL, &x, &lx));
  wm_gen_access_t wa;
  memset(&wa, 0, sizeof(wa));
  wa.coef[0][1] = 1;
  wa.coef[1][ai] = 1;
  wa.coef[2][ah] = 1;
  wa.coef[3][aw] = 1;
  WM_RETURN_IF_ERROR(wm_gen_input_access(c, "W", 4, wd, NULL, &wa, &lw));
  WM_RETURN_IF_ERROR(wm_gen_binary(c, WM_GEN_MUL, lx, lw, &body));
  if (pick(2)) {
    int64_t bd[3] = {oc, 1, 1};
    int32_t lb, acc;
    WM_RETURN_IF_ERROR(wm_gen_input(c, "bias", 3, bd, &lb));
    WM_RETURN_IF_ERROR(wm_gen_acc(c, &acc));
    WM_RETURN_IF_ERROR(wm_gen_binary(c, WM_GEN_ADD, acc, lb, &epi));
  }
  WM_RETURN_IF_ERROR(wm_gen_finish_reduce(c, WM_GEN_ADD, 0.0f, body, epi));
  fc->s = wm_gen_default_schedule(c, pick(2) ? 64 : 32);
  if (fc->s.mr > 0 && pick(2)) {
    fc->s.kc = 1 + pick(40);
    fc->s.mc = fc->s.mr * (1 + pick(3));
    fc->s.nc = fc->s.nr * (1 + pick(3));
  }
  return fill_case(fc);
}

// Makes case |k|: output rank 0 to 4, dims 0 to 9 (mostly 1 to 9),
// inputs broadcast along random dims, one of them sometimes read
// transposed, a random schedule that the compute allows.
static wm_status_t make_case(fuzz_case_t *fc, int k) {
  memset(fc, 0, sizeof(*fc));
  wm_gen_compute_t *c = &fc->c;
  int32_t kind = pick(7);
  if (kind == 0) {
    return make_contraction(fc, k);
  }
  if (kind == 6) {
    return make_conv(fc, k);
  }
  if (kind <= 2) {
    return make_reduction(fc, k);
  }
  int32_t rank = pick(5);
  int64_t dims[WM_MAX_RANK];
  for (int32_t d = 0; d < rank; d++) {
    dims[d] = pick(20) == 0 ? 0 : 1 + pick(d == rank - 1 ? 40 : 6);
  }
  char name[16];
  snprintf(name, sizeof(name), "k%d", k);
  WM_RETURN_IF_ERROR(wm_gen_begin(c, name, rank, dims, NULL));
  int32_t loads[4], n_in = 1 + pick(3);
  for (int32_t i = 0; i < n_in; i++) {
    char tn[16];
    snprintf(tn, sizeof(tn), "X%d", (int)i);
    if (i == 0 && rank == 2 && dims[0] == dims[1] && pick(3) == 0) {
      wm_gen_access_t acc;  // X0[j, i]
      memset(&acc, 0, sizeof(acc));
      acc.coef[0][1] = 1;
      acc.coef[1][0] = 1;
      WM_RETURN_IF_ERROR(
          wm_gen_input_access(c, tn, 2, dims, NULL, &acc, &loads[i]));
      continue;
    }
    int32_t r = rank ? pick(rank + 1) : 0;
    int64_t id[WM_MAX_RANK];
    for (int32_t d = 0; d < r; d++) {
      id[d] = pick(3) == 0 ? 1 : dims[rank - r + d];
    }
    WM_RETURN_IF_ERROR(wm_gen_input(c, tn, r, id, &loads[i]));
  }
  int32_t body;
  WM_RETURN_IF_ERROR(random_expr(c, loads, n_in, 1 + pick(4), &body));
  WM_RETURN_IF_ERROR(wm_gen_finish(c, body));
  fc->s = wm_gen_default_schedule(c, 4 << pick(5));
  if (fc->s.vector_width > 1) {
    fc->s.unroll = 1 + pick(4);
  }
  return fill_case(fc);
}

// The compute at one point of the axes, in double; ACC is |acc_value|.
static double eval_at(const fuzz_case_t *fc, int32_t i, const int64_t *at,
                      double acc_value) {
  const wm_gen_compute_t *c = &fc->c;
  const wm_gen_expr_t *e = &c->exprs[i];
  if (e->op == WM_GEN_ACC) {
    return acc_value;
  }
  if (e->op == WM_GEN_LOAD) {
    const wm_gen_access_t *acc = &c->accesses[e->access];
    const wm_gen_tensor_t *t = &c->tensors[acc->tensor];
    int64_t off = 0;
    for (int32_t d = 0; d < t->rank; d++) {
      int64_t idx = acc->off[d];
      for (int32_t a = 0; a < c->n_axes; a++) {
        idx += acc->coef[d][a] * at[a];
      }
      if (acc->guard && (idx < 0 || idx >= t->dims[d])) {
        return acc->fill;  // padding
      }
      off += idx * t->strides[d];
    }
    return fc->data[acc->tensor][off];
  }
  if (e->op == WM_GEN_CONST) {
    return e->value;
  }
  double x = eval_at(fc, e->arg[0], at, acc_value);
  double y = e->arg[1] >= 0 ? eval_at(fc, e->arg[1], at, acc_value) : 0;
  double z = e->arg[2] >= 0 ? eval_at(fc, e->arg[2], at, acc_value) : 0;
  switch (e->op) {
    case WM_GEN_ADD:
      return x + y;
    case WM_GEN_SUB:
      return x - y;
    case WM_GEN_MUL:
      return x * y;
    case WM_GEN_DIV:
      return x / y;
    case WM_GEN_MAX:
      return x > y || x != x ? x : y;
    case WM_GEN_MIN:
      return x < y || x != x ? x : y;
    case WM_GEN_NEG:
      return -x;
    case WM_GEN_ABS:
      return fabs(x);
    case WM_GEN_SQRT:
      return sqrt(x);
    case WM_GEN_EXP:
      return exp(x);
    case WM_GEN_LOG:
      return log(x);
    case WM_GEN_TANH:
      return tanh(x);
    case WM_GEN_RELU:
      return x > 0 ? x : 0;
    case WM_GEN_POW:
      return pow(x, y);
    case WM_GEN_LT:
      return x < y;
    case WM_GEN_GT:
      return x > y;
    case WM_GEN_FLOOR:
      return floor(x);
    case WM_GEN_CEIL:
      return ceil(x);
    case WM_GEN_SIN:
      return sin(x);
    case WM_GEN_COS:
      return cos(x);
    case WM_GEN_ERF:
      return erf(x);
    case WM_GEN_SELECT:
      return x != 0 ? y : z;
    case WM_GEN_FMOD:
      return fmod(x, y);
    case WM_GEN_SIGN:
      return x > 0 ? 1 : x < 0 ? -1 : x;
    case WM_GEN_ROUND:
      return nearbyint(x);
    case WM_GEN_TAN:
      return tan(x);
    case WM_GEN_ASIN:
      return asin(x);
    case WM_GEN_ACOS:
      return acos(x);
    case WM_GEN_ATAN:
      return atan(x);
    case WM_GEN_SINH:
      return sinh(x);
    case WM_GEN_COSH:
      return cosh(x);
    case WM_GEN_ASINH:
      return asinh(x);
    case WM_GEN_ACOSH:
      return acosh(x);
    case WM_GEN_ATANH:
      return atanh(x);
    default:
      return 1 / (1 + exp(-x));
  }
}

// The output at spatial point |at| (its reduce entries overwritten): the
// body folded over the reduce axes in double, the epilogue applied;
// *out_scale is the fold of the terms' magnitudes (sums round relative to
// it).
static double eval(const fuzz_case_t *fc, int64_t *at, double *out_scale) {
  const wm_gen_compute_t *c = &fc->c;
  *out_scale = 0;
  if (c->n_reduce == 0) {
    return eval_at(fc, c->body, at, 0);
  }
  int32_t ns = wm_gen_spatial(c);
  int64_t total = 1;
  for (int32_t a = ns; a < c->n_axes; a++) {
    total *= c->extents[a];
  }
  double acc = c->init, scale = 0;
  for (int64_t r = 0; r < total; r++) {
    int64_t rest = r;
    for (int32_t a = c->n_axes - 1; a >= ns; a--) {
      at[a] = rest % c->extents[a];
      rest /= c->extents[a];
    }
    double v = eval_at(fc, c->body, at, 0);
    switch (c->combine) {
      case WM_GEN_ADD:
        acc += v;
        scale += fabs(v);
        break;
      case WM_GEN_MUL:
        acc *= v;
        scale = fabs(acc);
        break;
      case WM_GEN_MAX:
        acc = acc > v || acc != acc ? acc : v;
        break;
      default:
        acc = acc < v || acc != acc ? acc : v;
        break;
    }
  }
  *out_scale = scale;
  return c->epilogue >= 0 ? eval_at(fc, c->epilogue, at, acc) : acc;
}

// Whether |got| is |want| within float rounding of a few steps (NaN and
// infinities equal as such), a sum's relative to its terms' |scale|.
static bool near_enough(float got, double want, double scale) {
  if (want != want || got != got) {
    return want != want && got != got;
  }
  if (isinf(want) || isinf(got)) {
    return isinf(want) && isinf(got) && (want > 0) == (got > 0);
  }
  double err = fabs((double)got - want);
  scale = scale == scale ? scale : 0;  // a NaN term the epilogue dropped
  return err <= 1e-4 * (fabs(want) + scale) + 1e-5;
}

// Runs case |fc|'s kernel |fn| over the outer axis in up to three ranges
// (as threads would) and checks every output element.
static bool run_case(fuzz_case_t *fc, void *fn) {
  const wm_gen_compute_t *c = &fc->c;
  int64_t outer = fc->grid;
  int64_t cut1 = outer / 3, cut2 = 2 * outer / 3;
  const int64_t ranges[3][2] = {{0, cut1}, {cut1, cut2}, {cut2, outer}};
  float *y = fc->data[0];
  for (size_t e = 0; e < fc->count[0]; e++) {
    y[e] = NAN;
  }
  for (int r = 0; r < 3; r++) {
    wm_gen_call(fn, (void *const *)fc->data, ranges[r][0], ranges[r][1]);
  }
  int64_t at[WM_GEN_MAX_AXES] = {0};
  for (size_t e = 0; e < fc->count[0]; e++) {
    size_t rest = e;
    for (int32_t a = wm_gen_spatial(c) - 1; a >= 0; a--) {
      at[a] = (int64_t)(rest % (size_t)c->extents[a]);
      rest /= (size_t)c->extents[a];
    }
    double scale;
    double want = eval(fc, at, &scale);
    if (!near_enough(y[e], want, scale)) {
      wm_strbuf_t text;
      wm_strbuf_init(&text);
      wm_gen_canonical(c, &text);
      char sched[96];
      wm_gen_schedule_text(&fc->s, sched, sizeof(sched));
      printf("  %s (%s) element %zu: got %.9g, want %.9g\n  %s\n", c->name,
             sched, e, (double)y[e], want, wm_strbuf_str(&text));
      wm_strbuf_deinit(&text);
      return false;
    }
  }
  return true;
}

enum { FUZZ_CASES = 300 };

// Whether the system compiler runs; the skip's reason said otherwise.
static bool have_cc(void) {
  if (!wm_cc_available()) {
    wm_test_skip("no system C compiler (cc) to build generated kernels");
    return false;
  }
  return true;
}

WM_TEST(generated_c_agrees_with_the_compute_in_double) {
  if (!have_cc()) {
    return;
  }
  static fuzz_case_t cases[FUZZ_CASES];
  wm_strbuf_t src;
  wm_strbuf_init(&src);
  for (int k = 0; k < FUZZ_CASES; k++) {
    WM_CHECK_OK(make_case(&cases[k], k));
    wm_gen_nest_t n;
    WM_CHECK_OK(wm_gen_lower(&cases[k].c, &cases[k].s, &n));
    cases[k].grid = n.grid;
    // One source for all: the kernels share their guarded helpers.
    WM_CHECK_OK(wm_gen_print(&n, WM_GEN_C, &src));
  }
  char dir[] = "/tmp/wmap_gen_XXXXXX";
  WM_CHECK(mkdtemp(dir) != NULL);
  wm_cc_lib_t *lib = NULL;
  bool compiled = false;
  WM_CHECK_OK(wm_cc_build(wm_strbuf_str(&src), dir, &lib, &compiled));
  WM_CHECK(compiled);
  int bad = 0, vectorized = 0, reductions = 0, packed = 0, guarded = 0;
  for (int k = 0; lib && k < FUZZ_CASES; k++) {
    void *fn = wm_cc_symbol(lib, cases[k].c.name);
    WM_CHECK(fn != NULL);
    bad += fn && !run_case(&cases[k], fn);
    vectorized += cases[k].s.vector_width > 1;
    reductions += cases[k].c.n_reduce > 0;
    packed += cases[k].s.mr > 0;
    guarded += cases[k].c.n_accesses > 1 && cases[k].c.accesses[1].guard;
  }
  printf(
      "  %d cases (%d reductions, %d packed contractions, %d guarded), "
      "%d vectorized, %d wrong\n",
      FUZZ_CASES, reductions, packed, guarded, vectorized, bad);
  WM_CHECK(guarded > FUZZ_CASES / 20);
  WM_CHECK(reductions > FUZZ_CASES / 5 && packed > FUZZ_CASES / 20);
  WM_CHECK_INT_EQ(bad, 0);
  WM_CHECK(vectorized > FUZZ_CASES / 4);
  wm_cc_close(lib);
  // The same source again comes from the cache.
  lib = NULL;
  WM_CHECK_OK(wm_cc_build(wm_strbuf_str(&src), dir, &lib, &compiled));
  WM_CHECK(!compiled);
  WM_CHECK(wm_cc_symbol(lib, "k0") != NULL);
  wm_cc_close(lib);
  // A source the compiler refuses is an error quoting it.
  lib = NULL;
  WM_CHECK_ERR(wm_cc_build("void broken(", dir, &lib, &compiled), INTERNAL,
               "failed compiling C source");
  WM_CHECK(lib == NULL);
  wm_strbuf_deinit(&src);
  for (int k = 0; k < FUZZ_CASES; k++) {
    for (int32_t t = 0; t < WM_GEN_MAX_TENSORS; t++) {
      free(cases[k].data[t]);
    }
  }
  char rm[128];
  snprintf(rm, sizeof(rm), "rm -rf %s", dir);
  WM_CHECK_INT_EQ(system(rm), 0);
}

// Writes |text| to |dir|/|name| and runs "|cmd| |dir|/|name| |tail|";
// returns the command's exit status.
static int compile_file(const char *dir, const char *name, const char *text,
                        const char *cmd, const char *tail) {
  char path[256], line[1024];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) {
    return -1;
  }
  fputs(text, f);
  fclose(f);
  snprintf(line, sizeof(line), "%s %s %s", cmd, path, tail);
  return system(line);
}

// The CUDA compiler: $CUDA_HOME/bin/nvcc, /usr/local/cuda/bin/nvcc or
// nvcc on PATH, written into |buf|; NULL when none runs.
static const char *find_nvcc(char *buf, size_t cap) {
  const char *home = getenv("CUDA_HOME");
  for (int i = 0; i < 3; i++) {
    if (i == 0 && !home) {
      continue;
    }
    if (i == 0) {
      snprintf(buf, cap, "%s/bin/nvcc", home);
    } else {
      snprintf(buf, cap, "%s", i == 1 ? "/usr/local/cuda/bin/nvcc" : "nvcc");
    }
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "%s --version > /dev/null 2>&1", buf);
    if (system(cmd) == 0) {
      return buf;
    }
  }
  return NULL;
}

// OpenCL through the ICD loader (libOpenCL.so.1, dlopen'd: no header or
// library needed to build): the few entry points that build a program.
typedef int32_t (*cl_platforms_fn)(uint32_t, void **, uint32_t *);
typedef int32_t (*cl_devices_fn)(void *, uint64_t, uint32_t, void **,
                                 uint32_t *);
typedef void *(*cl_context_fn)(const intptr_t *, uint32_t, void *const *,
                               void *, void *, int32_t *);
typedef void *(*cl_source_fn)(void *, uint32_t, const char **, const size_t *,
                              int32_t *);
typedef int32_t (*cl_build_fn)(void *, uint32_t, void *const *, const char *,
                               void *, void *);
typedef int32_t (*cl_build_info_fn)(void *, void *, uint32_t, size_t, void *,
                                    size_t *);
typedef int32_t (*cl_release_fn)(void *);

// Builds |source| with the first OpenCL device (PoCL here); 77 when no
// OpenCL runs, else 0 or 1 (the build log printed).
#if !defined(__SANITIZE_ADDRESS__)
static int build_opencl(const char *source) {
  void *h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    return 77;
  }
  cl_platforms_fn platforms;
  cl_devices_fn devices;
  cl_context_fn context;
  cl_source_fn from_source;
  cl_build_fn build;
  cl_build_info_fn info;
  cl_release_fn release_program, release_context;
  *(void **)&platforms = dlsym(h, "clGetPlatformIDs");
  *(void **)&devices = dlsym(h, "clGetDeviceIDs");
  *(void **)&context = dlsym(h, "clCreateContext");
  *(void **)&from_source = dlsym(h, "clCreateProgramWithSource");
  *(void **)&build = dlsym(h, "clBuildProgram");
  *(void **)&info = dlsym(h, "clGetProgramBuildInfo");
  *(void **)&release_program = dlsym(h, "clReleaseProgram");
  *(void **)&release_context = dlsym(h, "clReleaseContext");
  void *platform = NULL, *device = NULL;
  uint32_t n = 0;
  int rc = 77;
  if (platforms && devices && context && from_source && build && info &&
      release_program && release_context && platforms(1, &platform, &n) == 0 &&
      n > 0 && devices(platform, 0xFFFFFFFFull, 1, &device, &n) == 0 && n > 0) {
    int32_t err = 0;
    void *ctx = context(NULL, 1, &device, NULL, NULL, &err);
    size_t len = strlen(source);
    void *prog = ctx ? from_source(ctx, 1, &source, &len, &err) : NULL;
    rc = prog && build(prog, 1, &device, "-cl-std=CL1.2", NULL, NULL) == 0 ? 0
                                                                           : 1;
    if (rc && prog) {
      static char log[8192];
      size_t got = 0;
      info(prog, device, 0x1183 /* CL_PROGRAM_BUILD_LOG */, sizeof(log) - 1,
           log, &got);
      log[got < sizeof(log) ? got : sizeof(log) - 1] = 0;
      printf("  OpenCL build log:\n%.2000s\n", log);
    }
    if (prog) {
      release_program(prog);
    }
    if (ctx) {
      release_context(ctx);
    }
  }
  dlclose(h);
  return rc;
}
#endif

// Random computes printed as OpenCL C and as CUDA C compile: OpenCL C
// with clang's OpenCL 1.2 front end (the one PoCL builds with), CUDA C
// with nvcc; each part is skipped without its compiler.
WM_TEST(printed_opencl_and_cuda_compile) {
  bool clang = system("clang --version > /dev/null 2>&1") == 0;
  char nvcc_buf[256];
  const char *nvcc = find_nvcc(nvcc_buf, sizeof(nvcc_buf));
  if (!clang && !nvcc) {
    wm_test_skip("neither clang (OpenCL C) nor nvcc (CUDA C) is installed");
    return;
  }
  wm_strbuf_t cl, cu;
  wm_strbuf_init(&cl);
  wm_strbuf_init(&cu);
  for (int k = 0; k < 60; k++) {
    fuzz_case_t fc;
    WM_CHECK_OK(make_case(&fc, k));
    if (fc.s.mr > 0) {  // the packed template is C's; GPUs get the nest
      fc.s = (wm_gen_schedule_t){.vector_width = 1, .unroll = 1};
    }
    wm_gen_nest_t n;
    WM_CHECK_OK(wm_gen_lower(&fc.c, &fc.s, &n));
    WM_CHECK_OK(wm_gen_print(&n, WM_GEN_OPENCL, &cl));
    WM_CHECK_OK(wm_gen_print(&n, WM_GEN_CUDA, &cu));
    for (int32_t t = 0; t < WM_GEN_MAX_TENSORS; t++) {
      free(fc.data[t]);
    }
  }
  char dir[] = "/tmp/wmap_gen_XXXXXX";
  WM_CHECK(mkdtemp(dir) != NULL);
  // On the OpenCL device itself (PoCL on this machine). Not under
  // AddressSanitizer: the ICD loader and the driver keep allocations for
  // the process's life, which the leak check would report.
#if defined(__SANITIZE_ADDRESS__)
  int built = -1;
  printf("  AddressSanitizer build: not built by the OpenCL driver\n");
#else
  int built = build_opencl(wm_strbuf_str(&cl));
#endif
  if (built == -1) {
    // reported above
  } else if (built == 77) {
    printf("  no OpenCL platform: not built by an OpenCL driver\n");
  } else {
    printf("  built by the OpenCL driver (clBuildProgram)\n");
    WM_CHECK_INT_EQ(built, 0);
  }
  if (clang) {
    WM_CHECK_INT_EQ(compile_file(dir, "k.cl", wm_strbuf_str(&cl),
                                 "clang -x cl -cl-std=CL1.2 -Xclang "
                                 "-finclude-default-header -fsyntax-only",
                                 ""),
                    0);
  } else {
    printf("  no clang: OpenCL C not compiled\n");
  }
  if (nvcc) {
    char cmd[512], tail[256];
    snprintf(cmd, sizeof(cmd), "%s -diag-suppress 177 -c", nvcc);
    snprintf(tail, sizeof(tail), "-o %s/k.o", dir);
    WM_CHECK_INT_EQ(compile_file(dir, "k.cu", wm_strbuf_str(&cu), cmd, tail),
                    0);
  } else {
    printf("  no nvcc: CUDA C not compiled\n");
  }
  wm_strbuf_deinit(&cl);
  wm_strbuf_deinit(&cu);
  char rm[128];
  snprintf(rm, sizeof(rm), "rm -rf %s", dir);
  WM_CHECK_INT_EQ(system(rm), 0);
}

// Tuning records round-trip through their file; a damaged one is an
// error naming it, one of another version holds no record; candidates
// start with the default and all lower.
WM_TEST(tuning_records_and_candidates) {
  char dir[] = "/tmp/wmap_tune_XXXXXX";
  WM_CHECK(mkdtemp(dir) != NULL);
  char path[128];
  snprintf(path, sizeof(path), "%s/sub/tune.txt", dir);
  wm_gen_records_t r;
  WM_CHECK_OK(wm_gen_records_load(path, &r));  // missing: none
  WM_CHECK_INT_EQ((int)r.n, 0);
  wm_gen_compute_t c;
  int64_t d[2] = {64, 64};
  int32_t k, la, lb, body;
  WM_CHECK_OK(wm_gen_begin(&c, "mm", 2, d, NULL));
  WM_CHECK_OK(wm_gen_reduce_axis(&c, "k", 64, &k));
  wm_gen_access_t a, b;
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  a.coef[0][0] = b.coef[1][1] = 1;
  a.coef[1][k] = b.coef[0][k] = 1;
  WM_CHECK_OK(wm_gen_input_access(&c, "A", 2, d, NULL, &a, &la));
  WM_CHECK_OK(wm_gen_input_access(&c, "B", 2, d, NULL, &b, &lb));
  WM_CHECK_OK(wm_gen_binary(&c, WM_GEN_MUL, la, lb, &body));
  WM_CHECK_OK(wm_gen_finish_reduce(&c, WM_GEN_ADD, 0.0f, body, -1));
  wm_gen_schedule_t cand[48];
  int32_t n = wm_gen_candidates(&c, 64, cand, 48);
  wm_gen_schedule_t def = wm_gen_default_schedule(&c, 64);
  WM_CHECK(n > 10);
  WM_CHECK(wm_gen_schedule_equal(&cand[0], &def));
  wm_gen_record_t rec;
  memset(&rec, 0, sizeof(rec));
  wm_gen_record_key(&c, "test cpu", rec.key);
  rec.s = cand[n - 1];
  rec.default_ns = 2000;
  rec.best_ns = 1000;
  WM_CHECK_OK(wm_gen_records_put(&r, &rec));
  WM_CHECK_OK(wm_gen_records_put(&r, &rec));  // replaced, not added
  WM_CHECK_INT_EQ((int)r.n, 1);
  WM_CHECK_OK(wm_gen_records_save(&r, path));
  wm_gen_records_free(&r);
  WM_CHECK_OK(wm_gen_records_load(path, &r));
  const wm_gen_record_t *got = wm_gen_records_find(&r, rec.key);
  WM_CHECK(got && wm_gen_schedule_equal(&got->s, &rec.s) &&
           got->best_ns == 1000);
  char other[65];
  wm_gen_record_key(&c, "another cpu", other);
  WM_CHECK(wm_gen_records_find(&r, other) == NULL);
  wm_gen_records_free(&r);
  FILE *f = fopen(path, "a");
  WM_CHECK(f != NULL);
  if (f) {
    fputs("not a record\n", f);
    fclose(f);
  }
  WM_CHECK_ERR(wm_gen_records_load(path, &r), DATA_LOSS, "not a record");
  f = fopen(path, "w");
  if (f) {
    fputs("wmap.tune/0\nwhatever\n", f);
    fclose(f);
  }
  WM_CHECK_OK(wm_gen_records_load(path, &r));
  WM_CHECK_INT_EQ((int)r.n, 0);
  char rm[160];
  snprintf(rm, sizeof(rm), "rm -rf %s", dir);
  WM_CHECK_INT_EQ(system(rm), 0);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(builder_refuses_what_it_cannot_run),
      WM_CASE(printed_sources_match_the_golden_files),
      WM_CASE(generated_c_agrees_with_the_compute_in_double),
      WM_CASE(printed_opencl_and_cuda_compile),
      WM_CASE(tuning_records_and_candidates),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
