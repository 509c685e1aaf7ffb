// Recurrent operators: RNN, GRU and LSTM in every direction and both
// layouts, with activations, clip, peepholes, input_forget,
// linear_before_reset, sequence_lens and initial states. Each (direction,
// batch entry) sequence runs on its own in double and is converted back to
// the output dtype once per element.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

// Input slots shared by the three operators (LSTM alone has 6 and 7).
enum {
  IN_X = 0,
  IN_W = 1,
  IN_R = 2,
  IN_B = 3,
  IN_SEQ_LENS = 4,
  IN_H0 = 5,
  IN_C0 = 6,
  IN_P = 7,
};

enum { MAX_DIRS = 2, MAX_ACTS = 3 };

// dtypes of X before opset 22, which adds bfloat16.
#define T_RNN (WM_T(FLOAT) | WM_T(DOUBLE) | WM_T(FLOAT16))

// ----------------------------------------------------------- activations

typedef enum act_kind {
  ACT_RELU,
  ACT_TANH,
  ACT_SIGMOID,
  ACT_AFFINE,
  ACT_LEAKY_RELU,
  ACT_THRESHOLDED_RELU,
  ACT_SCALED_TANH,
  ACT_HARD_SIGMOID,
  ACT_ELU,
  ACT_SOFTSIGN,
  ACT_SOFTPLUS,
} act_kind_t;

// An activation the recurrent operators accept, with the defaults of the
// ONNX operator of the same name.
typedef struct act_info {
  const char *name;     // spelling of the spec (matched ignoring case)
  act_kind_t kind;      // which function
  bool uses_alpha;      // takes a value from activation_alpha
  bool uses_beta;       // takes a value from activation_beta
  double alpha;         // default alpha
  double beta;          // default beta
  bool transcendental;  // evaluates exp or tanh (for the cost)
} act_info_t;

static const act_info_t act_table[] = {
    {"Relu", ACT_RELU, false, false, 0, 0, false},
    {"Tanh", ACT_TANH, false, false, 0, 0, true},
    {"Sigmoid", ACT_SIGMOID, false, false, 0, 0, true},
    {"Affine", ACT_AFFINE, true, true, 1, 0, false},
    {"LeakyRelu", ACT_LEAKY_RELU, true, false, 0.01, 0, false},
    {"ThresholdedRelu", ACT_THRESHOLDED_RELU, true, false, 1, 0, false},
    {"ScaledTanh", ACT_SCALED_TANH, true, true, 1, 1, true},
    {"HardSigmoid", ACT_HARD_SIGMOID, true, true, 0.2, 0.5, false},
    {"Elu", ACT_ELU, true, false, 1, 0, true},
    {"Softsign", ACT_SOFTSIGN, false, false, 0, 0, false},
    {"Softplus", ACT_SOFTPLUS, false, false, 0, 0, true},
};
enum { ACT_COUNT = sizeof(act_table) / sizeof(act_table[0]) };

// One activation with its parameters.
typedef struct act {
  const act_info_t *info;  // the function
  double alpha;            // its alpha (or the default)
  double beta;             // its beta (or the default)
} act_t;

static double act_apply(const act_t *a, double x) {
  switch (a->info->kind) {
    case ACT_RELU:
      return x > 0 ? x : 0;
    case ACT_TANH:
      return tanh(x);
    case ACT_SIGMOID:
      if (x >= 0) {
        return 1 / (1 + exp(-x));
      } else {
        double e = exp(x);
        return e / (1 + e);
      }
    case ACT_AFFINE:
      return a->alpha * x + a->beta;
    case ACT_LEAKY_RELU:
      return x >= 0 ? x : a->alpha * x;
    case ACT_THRESHOLDED_RELU:
      return x >= a->alpha ? x : 0;  // >= as the RNN spec writes it
    case ACT_SCALED_TANH:
      return a->alpha * tanh(a->beta * x);
    case ACT_HARD_SIGMOID: {
      double v = a->alpha * x + a->beta;
      return v < 0 ? 0 : (v > 1 ? 1 : v);
    }
    case ACT_ELU:
      return x >= 0 ? x : a->alpha * expm1(x);
    case ACT_SOFTSIGN:
      return x / (1 + fabs(x));
    case ACT_SOFTPLUS:
      return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
  }
  return x;
}

// ASCII comparison ignoring case (strcasecmp is not C11).
static bool same_name(const char *a, const char *b) {
  for (;; a++, b++) {
    char ca = *a, cb = *b;
    if (ca >= 'A' && ca <= 'Z') {
      ca = (char)(ca - 'A' + 'a');
    }
    if (cb >= 'A' && cb <= 'Z') {
      cb = (char)(cb - 'A' + 'a');
    }
    if (ca != cb) {
      return false;
    }
    if (!ca) {
      return true;
    }
  }
}

static const act_info_t *act_find(const char *name) {
  for (size_t i = 0; i < ACT_COUNT; i++) {
    if (same_name(name, act_table[i].name)) {
      return &act_table[i];
    }
  }
  return NULL;
}

// --------------------------------------------------------------- config

typedef enum cell_kind { CELL_RNN, CELL_GRU, CELL_LSTM } cell_kind_t;

// What differs between the three operators.
typedef struct cell_def {
  cell_kind_t kind;                // which recurrence
  int32_t gates;                   // gate blocks in W, R and half of B
  int32_t nacts;                   // activations per direction
  const char *defaults[MAX_ACTS];  // default activations
} cell_def_t;

static const cell_def_t cell_rnn = {CELL_RNN, 1, 1, {"Tanh", NULL, NULL}};
static const cell_def_t cell_gru = {CELL_GRU, 3, 2, {"Sigmoid", "Tanh", NULL}};
static const cell_def_t cell_lstm = {
    CELL_LSTM, 4, 3, {"Sigmoid", "Tanh", "Tanh"}};

// Attributes of one node.
typedef struct rnn_cfg {
  const cell_def_t *cell;          // the operator
  int32_t ndir;                    // 1 or 2 directions
  bool reverse;                    // the one direction is "reverse"
  int64_t layout;                  // 0: sequence major, 1: batch major
  int64_t hidden;                  // hidden_size attribute, -1 absent
  bool has_clip;                   // clip attribute present
  double clip;                     // its threshold (> 0)
  bool input_forget;               // LSTM: forget gate is 1 - input
  bool linear_before_reset;        // GRU: reset after the R product
  act_t acts[MAX_DIRS][MAX_ACTS];  // per direction: f, g, h
} rnn_cfg_t;

// A present attribute of the wrong kind is an error, not a default.
static wm_status_t attr_get(const wm_op_ctx_t *ctx, const char *name,
                            wm_attr_type_t want, const wm_attr_t **out) {
  const wm_attr_t *a = wm_node_attr(ctx->node, name);
  *out = NULL;
  if (a && a->type != want) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "attribute %s is %s, want %s",
                       name, wm_attr_type_name(a->type),
                       wm_attr_type_name(want));
  }
  *out = a;
  return NULL;
}

// Next value of |list| for an activation that |uses| the parameter, or
// |def|. The values are consumed in the order of the activations by those
// that take the parameter (as onnxruntime reads the spec); a short list
// leaves the later ones at their defaults.
static double act_param(const wm_attr_t *list, bool uses, double def,
                        size_t *next) {
  if (!uses || !list || *next >= list->count) {
    return def;
  }
  return (double)list->floats[(*next)++];
}

static wm_status_t parse_acts(const wm_op_ctx_t *ctx, rnn_cfg_t *cfg) {
  const wm_attr_t *names, *alphas, *betas;
  WM_RETURN_IF_ERROR(attr_get(ctx, "activations", WM_ATTR_STRINGS, &names));
  WM_RETURN_IF_ERROR(
      attr_get(ctx, "activation_alpha", WM_ATTR_FLOATS, &alphas));
  WM_RETURN_IF_ERROR(attr_get(ctx, "activation_beta", WM_ATTR_FLOATS, &betas));
  size_t per = (size_t)cfg->cell->nacts;
  size_t total = per * (size_t)cfg->ndir;
  size_t n = names ? names->count : per;
  if (n != per && n != total) {
    if (per == total) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute activations has %zu values, want %zu", n,
                         per);
    }
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute activations has %zu values, want %zu (or "
                       "%zu shared by both directions)",
                       n, total, per);
  }
  act_t given[MAX_DIRS * MAX_ACTS];
  size_t next_alpha = 0, next_beta = 0;
  for (size_t i = 0; i < n; i++) {
    const char *name = names ? names->strings[i] : cfg->cell->defaults[i];
    const act_info_t *info = act_find(name);
    if (!info) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute activations[%zu] is \"%s\", want Relu, "
                         "Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, "
                         "ScaledTanh, HardSigmoid, Elu, Softsign or Softplus",
                         i, name);
    }
    given[i].info = info;
    given[i].alpha =
        act_param(alphas, info->uses_alpha, info->alpha, &next_alpha);
    given[i].beta = act_param(betas, info->uses_beta, info->beta, &next_beta);
  }
  for (size_t i = 0; i < total; i++) {
    cfg->acts[i / per][i % per] = given[i % n];
  }
  return NULL;
}

static wm_status_t parse_cfg(const wm_op_ctx_t *ctx, const cell_def_t *cell,
                             rnn_cfg_t *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  cfg->cell = cell;
  const wm_attr_t *a;
  WM_RETURN_IF_ERROR(attr_get(ctx, "direction", WM_ATTR_STRING, &a));
  const char *dir = a ? a->s : "forward";
  if (strcmp(dir, "forward") == 0) {
    cfg->ndir = 1;
  } else if (strcmp(dir, "reverse") == 0) {
    cfg->ndir = 1;
    cfg->reverse = true;
  } else if (strcmp(dir, "bidirectional") == 0) {
    cfg->ndir = 2;
  } else {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute direction is \"%s\", want forward, reverse "
                       "or bidirectional",
                       dir);
  }
  WM_RETURN_IF_ERROR(attr_get(ctx, "layout", WM_ATTR_INT, &a));
  cfg->layout = a ? a->i : 0;
  if (cfg->layout != 0 && cfg->layout != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute layout is %lld, want 0 or 1",
                       (long long)cfg->layout);
  }
  if (cfg->layout != 0 && ctx->opset < 14) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute layout needs opset 14, the node has opset "
                       "%lld",
                       (long long)ctx->opset);
  }
  WM_RETURN_IF_ERROR(attr_get(ctx, "hidden_size", WM_ATTR_INT, &a));
  cfg->hidden = a ? a->i : -1;
  if (a && a->i < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute hidden_size is %lld, want at least 1",
                       (long long)a->i);
  }
  WM_RETURN_IF_ERROR(attr_get(ctx, "clip", WM_ATTR_FLOAT, &a));
  if (a) {
    if (!(a->f > 0)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute clip is %g, want a positive threshold",
                         (double)a->f);
    }
    cfg->has_clip = true;
    cfg->clip = (double)a->f;
  }
  if (cell->kind == CELL_LSTM) {
    WM_RETURN_IF_ERROR(attr_get(ctx, "input_forget", WM_ATTR_INT, &a));
    cfg->input_forget = a && a->i != 0;
  }
  if (cell->kind == CELL_GRU) {
    WM_RETURN_IF_ERROR(attr_get(ctx, "linear_before_reset", WM_ATTR_INT, &a));
    cfg->linear_before_reset = a && a->i != 0;
  }
  return parse_acts(ctx, cfg);
}

// ---------------------------------------------------------------- shapes

// Sizes of one node; -1 while unknown.
typedef struct rnn_dims {
  int64_t seq;     // time steps
  int64_t batch;   // sequences
  int64_t input;   // features of X
  int64_t hidden;  // hidden units
  int64_t gh;      // gates * hidden (rows of W and R)
} rnn_dims_t;

static int64_t dim_of(const wm_op_ctx_t *ctx, int32_t i, int32_t rank,
                      int32_t d) {
  const wm_shape_t *s = wm_op_in_shape(ctx, i);
  if (!wm_op_has_input(ctx, i) || s->rank != rank || s->dims[d] < 0) {
    return -1;
  }
  return s->dims[d];
}

// Product of two sizes, -1 when either is unknown; false on overflow.
static bool mul_dim(int64_t a, int64_t b, int64_t *out) {
  if (a < 0 || b < 0) {
    *out = -1;
    return true;
  }
  return wm_checked_mul_i64(a, b, out);
}

// Requires input |i|, when present with a known rank, to have |rank| dims
// equal to |want| where both are known.
static wm_status_t check_shape(const wm_op_ctx_t *ctx, int32_t i,
                               const char *what, int32_t rank,
                               const int64_t *want) {
  const wm_shape_t *s = wm_op_in_shape(ctx, i);
  if (!wm_op_has_input(ctx, i) || s->rank < 0) {
    return NULL;
  }
  bool ok = s->rank == rank;
  for (int32_t d = 0; ok && d < rank; d++) {
    ok = s->dims[d] < 0 || want[d] < 0 || s->dims[d] == want[d];
  }
  if (!ok) {
    char a[160], b[160];
    wm_shape_t ws = wm_shape_make(rank, want);
    return WM_OP_ERROR(
        ctx, INVALID_ARGUMENT, "input %d (%s) has shape %s, want %s", i, what,
        wm_shape_format(s, a, sizeof(a)), wm_shape_format(&ws, b, sizeof(b)));
  }
  return NULL;
}

static wm_status_t check_dtypes(const wm_op_ctx_t *ctx) {
  wm_dtype_t x = wm_op_in_dtype(ctx, IN_X);
  for (int32_t i = 1; i < ctx->n_in; i++) {
    wm_dtype_t d = wm_op_in_dtype(ctx, i);
    if (d == WM_DTYPE_UNDEFINED) {
      continue;
    }
    if (i == IN_SEQ_LENS) {
      if (!wm_dtype_is_int(d)) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "input 4 (sequence_lens) has dtype %s, want int32",
                           wm_dtype_name(d));
      }
    } else if (x != WM_DTYPE_UNDEFINED && d != x) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d has dtype %s, want %s like input 0", i,
                         wm_dtype_name(d), wm_dtype_name(x));
    }
  }
  return NULL;
}

// Parses the attributes and checks every input's dtype and shape against
// each other; sizes that no input fixes stay -1.
static wm_status_t rnn_setup(const wm_op_ctx_t *ctx, const cell_def_t *cell,
                             rnn_cfg_t *cfg, rnn_dims_t *d) {
  WM_RETURN_IF_ERROR(parse_cfg(ctx, cell, cfg));
  WM_RETURN_IF_ERROR(check_dtypes(ctx));
  static const char *const required[3] = {"X", "W", "R"};
  for (int32_t i = 0; i < 3; i++) {
    if (!wm_op_has_input(ctx, i)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input %d (%s) is required", i,
                         required[i]);
    }
  }
  const wm_shape_t *xs = wm_op_in_shape(ctx, IN_X);
  if (xs->rank >= 0 && xs->rank != 3) {
    char buf[160];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 (X) has shape %s, want rank 3",
                       wm_shape_format(xs, buf, sizeof(buf)));
  }
  int32_t bt = cfg->layout ? 0 : 1;  // batch dim of X and the states
  int64_t g = cell->gates;
  d->seq = dim_of(ctx, IN_X, 3, 1 - bt);
  d->batch = dim_of(ctx, IN_X, 3, bt);
  d->input = dim_of(ctx, IN_X, 3, 2);
  if (d->input < 0) {
    d->input = dim_of(ctx, IN_W, 3, 2);
  }
  if (d->batch < 0) {
    d->batch = dim_of(ctx, IN_H0, 3, bt);
  }
  if (d->batch < 0) {
    d->batch = dim_of(ctx, IN_SEQ_LENS, 1, 0);
  }
  d->hidden = cfg->hidden;
  if (d->hidden < 0) {
    d->hidden = dim_of(ctx, IN_R, 3, 2);
  }
  int64_t w1 = dim_of(ctx, IN_W, 3, 1);
  if (d->hidden < 0 && w1 >= 0 && w1 % g == 0) {
    d->hidden = w1 / g;
  }
  if (d->hidden < 0) {
    d->hidden = dim_of(ctx, IN_H0, 3, 2);
  }
  int64_t b2, p3;
  if (!mul_dim(d->hidden, g, &d->gh) || !mul_dim(d->gh, 2, &b2) ||
      !mul_dim(d->hidden, 3, &p3)) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "hidden size %lld is too large",
                       (long long)d->hidden);
  }
  int64_t ndir = cfg->ndir;
  int64_t want[3] = {ndir, d->gh, d->input};
  WM_RETURN_IF_ERROR(check_shape(ctx, IN_W, "W", 3, want));
  want[2] = d->hidden;
  WM_RETURN_IF_ERROR(check_shape(ctx, IN_R, "R", 3, want));
  want[1] = b2;
  WM_RETURN_IF_ERROR(check_shape(ctx, IN_B, "B", 2, want));
  WM_RETURN_IF_ERROR(
      check_shape(ctx, IN_SEQ_LENS, "sequence_lens", 1, &d->batch));
  want[2] = d->hidden;
  if (cfg->layout) {
    want[0] = d->batch;
    want[1] = ndir;
  } else {
    want[0] = ndir;
    want[1] = d->batch;
  }
  WM_RETURN_IF_ERROR(check_shape(ctx, IN_H0, "initial_h", 3, want));
  if (cell->kind == CELL_LSTM) {
    WM_RETURN_IF_ERROR(check_shape(ctx, IN_C0, "initial_c", 3, want));
    int64_t pw[2] = {ndir, p3};
    WM_RETURN_IF_ERROR(check_shape(ctx, IN_P, "P", 2, pw));
  }
  return NULL;
}

// Sets output |i|, rejecting known shapes whose element count overflows.
static wm_status_t set_out(wm_op_ctx_t *ctx, int32_t i, wm_dtype_t dtype,
                           int32_t rank, const int64_t *dims) {
  wm_shape_t s = wm_shape_make(rank, dims);
  size_t n;
  if (wm_shape_is_known(&s) && !wm_shape_numel(&s, &n)) {
    char buf[160];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "output %d shape %s has too many elements", i,
                       wm_shape_format(&s, buf, sizeof(buf)));
  }
  wm_op_set_out(ctx, i, dtype, &s);
  return NULL;
}

static wm_status_t rnn_infer_cell(wm_op_ctx_t *ctx, const cell_def_t *cell) {
  rnn_cfg_t cfg;
  rnn_dims_t d;
  WM_RETURN_IF_ERROR(rnn_setup(ctx, cell, &cfg, &d));
  wm_dtype_t dt = wm_op_in_dtype(ctx, IN_X);
  if (dt == WM_DTYPE_UNDEFINED) {
    dt = wm_op_in_dtype(ctx, IN_W);
  }
  int64_t ndir = cfg.ndir;
  int64_t y[4] = {d.seq, ndir, d.batch, d.hidden};
  int64_t yh[3] = {ndir, d.batch, d.hidden};
  if (cfg.layout) {
    y[0] = d.batch;
    y[1] = d.seq;
    y[2] = ndir;
    yh[0] = d.batch;
    yh[1] = ndir;
  }
  WM_RETURN_IF_ERROR(set_out(ctx, 0, dt, 4, y));
  WM_RETURN_IF_ERROR(set_out(ctx, 1, dt, 3, yh));
  if (cell->kind == CELL_LSTM) {
    WM_RETURN_IF_ERROR(set_out(ctx, 2, dt, 3, yh));
  }
  return NULL;
}

// ---------------------------------------------------------------- kernel

// Copies input |i| into a heap array of doubles; NULL when omitted.
static wm_status_t load_input(const wm_op_ctx_t *ctx, int32_t i, double **out) {
  *out = NULL;
  if (!wm_op_has_input(ctx, i) || !ctx->in[i]) {
    return NULL;
  }
  const wm_tensor_t *t = ctx->in[i];
  double *v = wm_calloc(t->count ? t->count : 1, sizeof(double));
  if (!v) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for %zu elements of input %d", t->count,
                       i);
  }
  for (size_t k = 0; k < t->count; k++) {
    v[k] = wm_tensor_get_f64(t, k);
  }
  *out = v;
  return NULL;
}

// Reads sequence_lens (every entry |seq| when omitted), each checked to
// lie in [0, seq].
static wm_status_t load_lens(const wm_op_ctx_t *ctx, const rnn_dims_t *d,
                             int64_t **out) {
  size_t n = (size_t)d->batch;
  int64_t *v = wm_calloc(n ? n : 1, sizeof(int64_t));
  *out = v;
  if (!v) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for %zu sequence lengths", n);
  }
  const wm_tensor_t *t =
      wm_op_has_input(ctx, IN_SEQ_LENS) ? ctx->in[IN_SEQ_LENS] : NULL;
  for (size_t b = 0; b < n; b++) {
    v[b] = t ? wm_tensor_get_i64(t, b) : d->seq;
    if (v[b] < 0 || v[b] > d->seq) {
      return WM_OP_ERROR(ctx, OUT_OF_RANGE,
                         "sequence_lens[%zu] is %lld, want 0 to %lld", b,
                         (long long)v[b], (long long)d->seq);
    }
  }
  return NULL;
}

// The inputs as doubles (NULL when omitted) and the per-step scratch.
typedef struct rnn_bufs {
  double *x;        // X
  double *w;        // W
  double *r;        // R
  double *b;        // B or NULL
  double *h0;       // initial_h or NULL
  double *c0;       // initial_c or NULL
  double *p;        // P or NULL
  int64_t *lens;    // sequence length of each batch entry
  double *scratch;  // gate scratch (gh), then h, c, next h, next c (H each)
} rnn_bufs_t;

static void rnn_bufs_free(rnn_bufs_t *bf) {
  free(bf->x);
  free(bf->w);
  free(bf->r);
  free(bf->b);
  free(bf->h0);
  free(bf->c0);
  free(bf->p);
  free(bf->lens);
  free(bf->scratch);
}

static wm_status_t rnn_bufs_load(const wm_op_ctx_t *ctx, const rnn_dims_t *d,
                                 rnn_bufs_t *bf) {
  memset(bf, 0, sizeof(*bf));
  static const int32_t slots[7] = {IN_X, IN_W, IN_R, IN_B, IN_H0, IN_C0, IN_P};
  double **dst[7] = {&bf->x, &bf->w, &bf->r, &bf->b, &bf->h0, &bf->c0, &bf->p};
  for (int32_t k = 0; k < 7; k++) {
    if (slots[k] < ctx->n_in) {
      WM_RETURN_IF_ERROR(load_input(ctx, slots[k], dst[k]));
    }
  }
  WM_RETURN_IF_ERROR(load_lens(ctx, d, &bf->lens));
  // gh and H come from allocated tensors (W and R), so this cannot
  // overflow; checked anyway for clarity.
  size_t n;
  if (!wm_checked_mul((size_t)d->hidden, 4, &n) ||
      !wm_checked_add(n, (size_t)d->gh, &n)) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "hidden size %lld",
                       (long long)d->hidden);
  }
  bf->scratch = wm_calloc(n ? n : 1, sizeof(double));
  if (!bf->scratch) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED,
                       "out of memory for %zu scratch values", n);
  }
  return NULL;
}

static double dot(const double *a, const double *b, size_t n) {
  double s = 0;
  for (size_t k = 0; k < n; k++) {
    s += a[k] * b[k];
  }
  return s;
}

static double clip_to(const rnn_cfg_t *cfg, double v) {
  if (!cfg->has_clip) {
    return v;
  }
  return v < -cfg->clip ? -cfg->clip : (v > cfg->clip ? cfg->clip : v);
}

// One direction's slices of the weights and its activations.
typedef struct rnn_dir {
  const double *w;   // [gh, input]
  const double *r;   // [gh, hidden]
  const double *wb;  // [gh] or NULL
  const double *rb;  // [gh] or NULL
  const double *p;   // [3 * hidden] or NULL
  const act_t *act;  // f, g, h
} rnn_dir_t;

// Gate |gate| pre-activation of unit |j|: x W^T + h R^T + Wb + Rb.
static double gate_in(const rnn_dir_t *rd, const rnn_dims_t *d, const double *x,
                      const double *h, int64_t gate, size_t j) {
  size_t row = (size_t)gate * (size_t)d->hidden + j;
  double v = dot(x, rd->w + row * (size_t)d->input, (size_t)d->input) +
             dot(h, rd->r + row * (size_t)d->hidden, (size_t)d->hidden);
  if (rd->wb) {
    v += rd->wb[row] + rd->rb[row];
  }
  return v;
}

// One time step: reads x, h and c, writes hn and cn (LSTM only).
static void cell_step(const rnn_cfg_t *cfg, const rnn_dims_t *d,
                      const rnn_dir_t *rd, const double *x, const double *h,
                      const double *c, double *hn, double *cn, double *tmp) {
  size_t hs = (size_t)d->hidden;
  const act_t *f = &rd->act[0], *g = &rd->act[1], *ah = &rd->act[2];
  switch (cfg->cell->kind) {
    case CELL_RNN:
      for (size_t j = 0; j < hs; j++) {
        hn[j] = act_apply(f, clip_to(cfg, gate_in(rd, d, x, h, 0, j)));
      }
      return;
    case CELL_GRU: {
      // Gates z, r, h; tmp holds z, r and r * h (or r alone).
      double *z = tmp, *r = tmp + hs, *rh = tmp + 2 * hs;
      for (size_t j = 0; j < hs; j++) {
        z[j] = act_apply(f, clip_to(cfg, gate_in(rd, d, x, h, 0, j)));
        r[j] = act_apply(f, clip_to(cfg, gate_in(rd, d, x, h, 1, j)));
        rh[j] = r[j] * h[j];
      }
      size_t in = (size_t)d->input;
      for (size_t j = 0; j < hs; j++) {
        size_t row = 2 * hs + j;
        double pre = dot(x, rd->w + row * in, in);
        if (rd->wb) {
          pre += rd->wb[row];
        }
        double rb = rd->wb ? rd->rb[row] : 0;
        if (cfg->linear_before_reset) {
          pre += r[j] * (dot(h, rd->r + row * hs, hs) + rb);
        } else {
          pre += dot(rh, rd->r + row * hs, hs) + rb;
        }
        double hh = act_apply(g, clip_to(cfg, pre));
        hn[j] = (1 - z[j]) * hh + z[j] * h[j];
      }
      return;
    }
    case CELL_LSTM: {
      // Gates i, o, f, c; peepholes P are i, o, f.
      const double *pi = rd->p, *po = rd->p ? rd->p + hs : NULL,
                   *pf = rd->p ? rd->p + 2 * hs : NULL;
      for (size_t j = 0; j < hs; j++) {
        double vi = gate_in(rd, d, x, h, 0, j) + (pi ? pi[j] * c[j] : 0);
        double ig = act_apply(f, clip_to(cfg, vi));
        double fg;
        if (cfg->input_forget) {
          fg = 1 - ig;
        } else {
          double vf = gate_in(rd, d, x, h, 2, j) + (pf ? pf[j] * c[j] : 0);
          fg = act_apply(f, clip_to(cfg, vf));
        }
        double cc = act_apply(g, clip_to(cfg, gate_in(rd, d, x, h, 3, j)));
        cn[j] = fg * c[j] + ig * cc;
        double vo = gate_in(rd, d, x, h, 1, j) + (po ? po[j] * cn[j] : 0);
        double og = act_apply(f, clip_to(cfg, vo));
        hn[j] = og * act_apply(ah, cn[j]);
      }
      return;
    }
  }
}

// Offset of time step |t| of direction |dir| and batch entry |b| in Y,
// [seq, dir, batch, H] (layout 0) or [batch, seq, dir, H] (layout 1).
static size_t y_offset(const rnn_cfg_t *cfg, const rnn_dims_t *d, size_t t,
                       size_t dir, size_t b) {
  size_t ndir = (size_t)cfg->ndir, nb = (size_t)d->batch, sq = (size_t)d->seq;
  size_t row =
      cfg->layout ? (b * sq + t) * ndir + dir : (t * ndir + dir) * nb + b;
  return row * (size_t)d->hidden;
}

// Runs direction |dir| over batch entry |b|, writing Y (when requested)
// and the final states.
static void run_sequence(wm_op_ctx_t *ctx, const rnn_cfg_t *cfg,
                         const rnn_dims_t *d, const rnn_bufs_t *bf, size_t dir,
                         size_t b) {
  size_t hs = (size_t)d->hidden, in = (size_t)d->input;
  size_t gh = (size_t)d->gh, nb = (size_t)d->batch, sq = (size_t)d->seq;
  size_t ndir = (size_t)cfg->ndir;
  rnn_dir_t rd = {
      .w = bf->w + dir * gh * in,
      .r = bf->r + dir * gh * hs,
      .wb = bf->b ? bf->b + dir * 2 * gh : NULL,
      .rb = bf->b ? bf->b + dir * 2 * gh + gh : NULL,
      .p = bf->p ? bf->p + dir * 3 * hs : NULL,
      .act = cfg->acts[dir],
  };
  double *tmp = bf->scratch;
  double *h = tmp + gh, *c = h + hs, *hn = c + hs, *cn = hn + hs;
  // States are [dir, batch, H] (layout 0) or [batch, dir, H] (layout 1).
  size_t so = (cfg->layout ? b * ndir + dir : dir * nb + b) * hs;
  for (size_t j = 0; j < hs; j++) {
    h[j] = bf->h0 ? bf->h0[so + j] : 0;
    c[j] = bf->c0 ? bf->c0[so + j] : 0;
  }
  bool reverse = cfg->ndir == 2 ? dir == 1 : cfg->reverse;
  size_t len = (size_t)bf->lens[b];
  wm_tensor_t *y = wm_op_has_output(ctx, 0) ? ctx->out[0] : NULL;
  for (size_t s = 0; s < len; s++) {
    // The reverse direction reads the sequence backwards from its own end
    // and writes each step at its time position.
    size_t t = reverse ? len - 1 - s : s;
    size_t xo = (cfg->layout ? b * sq + t : t * nb + b) * in;
    cell_step(cfg, d, &rd, bf->x + xo, h, c, hn, cn, tmp);
    memcpy(h, hn, hs * sizeof(double));
    if (cfg->cell->kind == CELL_LSTM) {
      memcpy(c, cn, hs * sizeof(double));
    }
    size_t yo = y_offset(cfg, d, t, dir, b);
    for (size_t j = 0; y && j < hs; j++) {
      wm_tensor_set_f64(y, yo + j, h[j]);
    }
  }
  // Steps past the sequence's end are zero in Y.
  for (size_t t = len; y && t < sq; t++) {
    size_t yo = y_offset(cfg, d, t, dir, b);
    for (size_t j = 0; j < hs; j++) {
      wm_tensor_set_f64(y, yo + j, 0);
    }
  }
  if (len == 0) {
    // An empty sequence has no last state; zero, as onnxruntime gives.
    memset(h, 0, hs * sizeof(double));
    memset(c, 0, hs * sizeof(double));
  }
  if (wm_op_has_output(ctx, 1)) {
    for (size_t j = 0; j < hs; j++) {
      wm_tensor_set_f64(ctx->out[1], so + j, h[j]);
    }
  }
  if (cfg->cell->kind == CELL_LSTM && wm_op_has_output(ctx, 2)) {
    for (size_t j = 0; j < hs; j++) {
      wm_tensor_set_f64(ctx->out[2], so + j, c[j]);
    }
  }
}

static wm_status_t rnn_run_cell(wm_op_ctx_t *ctx, const cell_def_t *cell) {
  rnn_cfg_t cfg;
  rnn_dims_t d;
  WM_RETURN_IF_ERROR(rnn_setup(ctx, cell, &cfg, &d));
  for (int32_t i = 0; i < ctx->n_in; i++) {
    if (wm_op_has_input(ctx, i) && !ctx->in[i]) {
      return WM_OP_ERROR(ctx, FAILED_PRECONDITION, "input %d has no value", i);
    }
  }
  rnn_bufs_t bf;
  wm_status_t st = rnn_bufs_load(ctx, &d, &bf);
  if (!st) {
    for (size_t dir = 0; dir < (size_t)cfg.ndir; dir++) {
      for (size_t b = 0; b < (size_t)d.batch; b++) {
        run_sequence(ctx, &cfg, &d, &bf, dir, b);
      }
    }
  }
  rnn_bufs_free(&bf);
  return st;
}

// ------------------------------------------------------------------ cost

// MACs of the gate GEMMs (x W^T and h R^T for every gate, time step,
// direction and batch entry, counting every step of X even where
// sequence_lens ends a sequence early); FLOPs for the bias adds, gate
// arithmetic and piecewise activations; transcendentals for the others.
static void rnn_cost_cell(const wm_op_ctx_t *ctx, const cell_def_t *cell,
                          wm_op_cost_t *out) {
  rnn_cfg_t cfg;
  rnn_dims_t d;
  wm_status_t st = rnn_setup(ctx, cell, &cfg, &d);
  if (st) {
    wm_status_free(st);
    return;
  }
  if (d.seq < 0 || d.batch < 0 || d.input < 0 || d.hidden < 0) {
    return;
  }
  double units = (double)d.seq * (double)d.batch * (double)d.hidden;
  double macs = units * (double)cell->gates * (double)(d.input + d.hidden);
  // Elementwise work per unit and step besides the activations.
  double ew = 0;
  bool bias = wm_op_has_input(ctx, IN_B);
  bool peep = cell->kind == CELL_LSTM && wm_op_has_input(ctx, IN_P);
  switch (cell->kind) {
    case CELL_RNN:
      ew = bias ? 2 : 0;
      break;
    case CELL_GRU:
      ew = (bias ? 6 : 0) + 1 + 4;  // r * h, (1 - z) * h~ + z * h
      break;
    case CELL_LSTM:
      ew = (bias ? 8 : 0) + (peep ? 6 : 0) + 3 + 1;  // f*c + i*c~, o*h(c)
      break;
  }
  if (cfg.has_clip) {
    ew += 2 * cell->gates;
  }
  out->macs = 0;
  out->flops = 0;
  out->transcendentals = 0;
  for (int32_t dir = 0; dir < cfg.ndir; dir++) {
    // Activation evaluations per unit: f once per gate it serves.
    int32_t evals[MAX_ACTS] = {1, 0, 0};
    if (cell->kind == CELL_GRU) {
      evals[0] = 2;
      evals[1] = 1;
    } else if (cell->kind == CELL_LSTM) {
      evals[0] = cfg.input_forget ? 2 : 3;
      evals[1] = 1;
      evals[2] = 1;
    }
    double flops = ew + (cell->kind == CELL_LSTM && cfg.input_forget ? 1 : 0);
    double tr = 0;
    for (int32_t k = 0; k < cell->nacts; k++) {
      if (cfg.acts[dir][k].info->transcendental) {
        tr += evals[k];
      } else {
        flops += evals[k];
      }
    }
    out->macs += macs;
    out->flops += 2 * macs + units * flops;
    out->transcendentals += units * tr;
  }
}

// ------------------------------------------------------------ parameters

// Parameters: direction, layout, clip (0: none), input_forget (LSTM),
// linear_before_reset (GRU), and for every direction its activations by
// name with their alpha and beta, defaults applied and a list given once
// repeated for the second direction.
static wm_status_t rnn_resolve_cell(wm_op_ctx_t *ctx, const cell_def_t *cell,
                                    wm_op_params_t *out) {
  rnn_cfg_t cfg;
  WM_RETURN_IF_ERROR(parse_cfg(ctx, cell, &cfg));
  const char *names[MAX_DIRS * MAX_ACTS];
  double alphas[MAX_DIRS * MAX_ACTS], betas[MAX_DIRS * MAX_ACTS];
  int32_t n = 0;
  for (int32_t dir = 0; dir < cfg.ndir; dir++) {
    for (int32_t k = 0; k < cell->nacts; k++, n++) {
      names[n] = cfg.acts[dir][k].info->name;
      alphas[n] = cfg.acts[dir][k].alpha;
      betas[n] = cfg.acts[dir][k].beta;
    }
  }
  const char *dir = cfg.ndir == 2 ? "bidirectional"
                    : cfg.reverse ? "reverse"
                                  : "forward";
  WM_RETURN_IF_ERROR(wm_op_param_string(ctx, out, "direction", dir));
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "layout", cfg.layout));
  WM_RETURN_IF_ERROR(
      wm_op_param_float(ctx, out, "clip", cfg.has_clip ? cfg.clip : 0));
  WM_RETURN_IF_ERROR(
      wm_op_param_int(ctx, out, "input_forget", cfg.input_forget));
  WM_RETURN_IF_ERROR(wm_op_param_int(ctx, out, "linear_before_reset",
                                     cfg.linear_before_reset));
  WM_RETURN_IF_ERROR(wm_op_param_strings(ctx, out, "activations", names, n));
  WM_RETURN_IF_ERROR(
      wm_op_param_floats(ctx, out, "activation_alpha", alphas, n));
  return wm_op_param_floats(ctx, out, "activation_beta", betas, n);
}

// ----------------------------------------------------------- definitions

#define CELL_OPS(NAME, DEF)                                                  \
  static wm_status_t NAME##_infer(wm_op_ctx_t *ctx) {                        \
    return rnn_infer_cell(ctx, &DEF);                                        \
  }                                                                          \
  static wm_status_t NAME##_run(wm_op_ctx_t *ctx) {                          \
    return rnn_run_cell(ctx, &DEF);                                          \
  }                                                                          \
  static void NAME##_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {       \
    rnn_cost_cell(ctx, &DEF, out);                                           \
  }                                                                          \
  static wm_status_t NAME##_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) { \
    return rnn_resolve_cell(ctx, &DEF, out);                                 \
  }

CELL_OPS(rnn, cell_rnn)
CELL_OPS(gru, cell_gru)
CELL_OPS(lstm, cell_lstm)

// From opset 1: the earlier versions differ only by the output_sequence
// attribute (ignored: outputs are requested by name) and by lacking
// layout, which the shape rule rejects before opset 14. Opset 22 adds
// bfloat16.
const wm_op_def_t wm_ops_rnn[] = {
    {"RNN", "", 1, 3, 6, 0, 2, T_RNN, rnn_infer, rnn_run, rnn_cost, 0,
     rnn_resolve},
    {"RNN", "", 22, 3, 6, 0, 2, WM_TYPES_FLOAT, rnn_infer, rnn_run, rnn_cost, 0,
     rnn_resolve},
    {"GRU", "", 1, 3, 6, 0, 2, T_RNN, gru_infer, gru_run, gru_cost, 0,
     gru_resolve},
    {"GRU", "", 22, 3, 6, 0, 2, WM_TYPES_FLOAT, gru_infer, gru_run, gru_cost, 0,
     gru_resolve},
    {"LSTM", "", 1, 3, 8, 0, 3, T_RNN, lstm_infer, lstm_run, lstm_cost, 0,
     lstm_resolve},
    {"LSTM", "", 22, 3, 8, 0, 3, WM_TYPES_FLOAT, lstm_infer, lstm_run,
     lstm_cost, 0, lstm_resolve},
    WM_OPS_END,
};
