// RNN, GRU and LSTM on the cpu backend, float32: forward, reverse and
// bidirectional, both layouts, every activation of the spec with its
// alpha and beta, clip, sequence_lens, initial states, peepholes,
// input_forget and linear_before_reset.
//
// The input projection of every time step, X W^T plus the biases (the
// engine's epilogue), is one GEMM-engine product per direction up front;
// each step then multiplies the hidden states of the whole batch by R^T (a
// second product for GRU's hidden gate, whose input is r * h, with that
// gate's recurrent bias in its epilogue) and runs the gate arithmetic for
// the batch entries whose sequence is still going, on the pool. W^T is
// packed at plan time when W is a constant; R^T, used by every step, is
// always packed: at plan time when constant, else once per run.

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "kernels.h"

enum {
  IN_X = 0,
  IN_W = 1,
  IN_R = 2,
  IN_B = 3,
  IN_LENS = 4,
  IN_H0 = 5,
  IN_C0 = 6,
  IN_P = 7,
};

enum { CELL_RNN, CELL_GRU, CELL_LSTM };
enum { MAX_ACTS = 3, MAX_DIRS = 2 };

enum {
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
};

// An activation the spec names, with the defaults of the operator of the
// same name.
typedef struct act_info {
  const char *name;
  int kind;
  bool uses_alpha, uses_beta;
  float alpha, beta;
} act_info_t;

static const act_info_t act_table[] = {
    {"Relu", ACT_RELU, false, false, 0, 0},
    {"Tanh", ACT_TANH, false, false, 0, 0},
    {"Sigmoid", ACT_SIGMOID, false, false, 0, 0},
    {"Affine", ACT_AFFINE, true, true, 1, 0},
    {"LeakyRelu", ACT_LEAKY_RELU, true, false, 0.01f, 0},
    {"ThresholdedRelu", ACT_THRESHOLDED_RELU, true, false, 1, 0},
    {"ScaledTanh", ACT_SCALED_TANH, true, true, 1, 1},
    {"HardSigmoid", ACT_HARD_SIGMOID, true, true, 0.2f, 0.5f},
    {"Elu", ACT_ELU, true, false, 1, 0},
    {"Softsign", ACT_SOFTSIGN, false, false, 0, 0},
    {"Softplus", ACT_SOFTPLUS, false, false, 0, 0},
};

// One activation with its parameters.
typedef struct act {
  int kind;
  float alpha, beta;
} act_t;

// ASCII comparison ignoring case.
static bool same_name(const char *a, const char *b) {
  for (;; a++, b++) {
    char ca = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
    char cb = *b >= 'A' && *b <= 'Z' ? (char)(*b - 'A' + 'a') : *b;
    if (ca != cb) {
      return false;
    }
    if (!ca) {
      return true;
    }
  }
}

// Applies |a| to v[0, n) in place.
static void act_apply(const act_t *a, float *restrict v, size_t n) {
  float al = a->alpha, be = a->beta;
  switch (a->kind) {
    case ACT_RELU:
      for (size_t i = 0; i < n; i++) {
        v[i] = v[i] > 0 ? v[i] : 0.0f;
      }
      break;
    case ACT_TANH:
      for (size_t i = 0; i < n; i++) {
        v[i] = k_tanhf(v[i]);
      }
      break;
    case ACT_SIGMOID:
      for (size_t i = 0; i < n; i++) {
        v[i] = 1.0f / (1.0f + k_expf(-v[i]));
      }
      break;
    case ACT_AFFINE:
      for (size_t i = 0; i < n; i++) {
        v[i] = al * v[i] + be;
      }
      break;
    case ACT_LEAKY_RELU:
      for (size_t i = 0; i < n; i++) {
        v[i] = v[i] >= 0 ? v[i] : al * v[i];
      }
      break;
    case ACT_THRESHOLDED_RELU:
      for (size_t i = 0; i < n; i++) {
        v[i] = v[i] >= al ? v[i] : 0.0f;
      }
      break;
    case ACT_SCALED_TANH:
      for (size_t i = 0; i < n; i++) {
        v[i] = al * k_tanhf(be * v[i]);
      }
      break;
    case ACT_HARD_SIGMOID:
      for (size_t i = 0; i < n; i++) {
        float t = al * v[i] + be;
        v[i] = t < 0 ? 0.0f : (t > 1 ? 1.0f : t);
      }
      break;
    case ACT_ELU:
      for (size_t i = 0; i < n; i++) {
        v[i] = v[i] >= 0 ? v[i] : al * expm1f(v[i]);
      }
      break;
    case ACT_SOFTSIGN:
      for (size_t i = 0; i < n; i++) {
        v[i] = v[i] / (1.0f + fabsf(v[i]));
      }
      break;
    default:
      for (size_t i = 0; i < n; i++) {
        float x = v[i];
        v[i] = x > 0 ? x + log1pf(k_expf(-x)) : log1pf(k_expf(x));
      }
      break;
  }
}

typedef struct rnn_plan {
  int cell;                        // CELL_*
  int32_t gates;                   // 1, 3 or 4
  int32_t ndir;                    // 1 or 2
  bool reverse;                    // the one direction runs backwards
  bool layout;                     // batch-major X, Y and states
  bool has_clip;                   // clip the pre-activations
  float clip;                      // the threshold
  bool input_forget;               // LSTM: f = 1 - i
  bool lbr;                        // GRU: linear_before_reset
  act_t acts[MAX_DIRS][MAX_ACTS];  // f, g, h per direction
  size_t seq, batch, input, hidden, gh;
  bool has[8];                      // which inputs are present
  size_t counts[8];                 // their elements
  float *proj;                      // [dir][seq * batch][gh]: X W^T + biases
  float *hr;                        // [batch][gh]: h R^T of one step
  float *h, *c;                     // [batch][hidden] states of a direction
  float *rh;                        // [batch][hidden]: GRU r * h
  float *tmp;                       // [batch][4 hidden] gate scratch
  float *bias;                      // [dir][gh]: the projection's biases
  int64_t *lens;                    // [batch] sequence lengths of a run
  void *block;                      // all buffers
  bool bias_planned;                // bias filled at plan time (constant B)
  bool r_planned;                   // pr, prh filled at plan time (constant R)
  cpu_gemm_packed_t pw[MAX_DIRS];   // W^T when W is constant, else empty
  cpu_gemm_packed_t pr[MAX_DIRS];   // R^T of the gates of a step's product
  cpu_gemm_packed_t prh[MAX_DIRS];  // GRU: R^T of the hidden gate
} rnn_plan_t;

static void rnn_destroy(void *state) {
  rnn_plan_t *p = state;
  if (p) {
    for (int32_t d = 0; d < MAX_DIRS; d++) {
      cpu_gemm_packed_deinit(&p->pw[d]);
      cpu_gemm_packed_deinit(&p->pr[d]);
      cpu_gemm_packed_deinit(&p->prh[d]);
    }
    free(p->block);
    free(p);
  }
}

static int rnn_cell(const char *op_type) {
  return strcmp(op_type, "LSTM") == 0  ? CELL_LSTM
         : strcmp(op_type, "GRU") == 0 ? CELL_GRU
                                       : CELL_RNN;
}

// What rnn_attrs answers for a description without resolved parameters.
static const char kUnresolved[] =
    "the recurrence is resolved by the host for known shapes";

// Reads the host's resolved parameters into |p|; the static text of the
// problem otherwise (kUnresolved when there are none).
static const char *rnn_attrs(const wm_op_desc *op, rnn_plan_t *p) {
  p->cell = rnn_cell(op->op_type);
  p->gates = p->cell == CELL_LSTM ? 4 : p->cell == CELL_GRU ? 3 : 1;
  int32_t nacts = p->cell == CELL_LSTM ? 3 : p->cell == CELL_GRU ? 2 : 1;
  const wm_op_attr *d = cpu_param(op, "direction");
  const wm_op_attr *clip = cpu_param(op, "clip");
  const wm_op_attr *names = cpu_param(op, "activations");
  const wm_op_attr *alphas = cpu_param(op, "activation_alpha");
  const wm_op_attr *betas = cpu_param(op, "activation_beta");
  int64_t layout, input_forget, lbr;
  if (!d || d->type != 3 || !d->s || !clip || clip->type != 1 || !names ||
      names->type != 8 || !alphas || alphas->type != 6 || !betas ||
      betas->type != 6 || !cpu_param_int(op, "layout", &layout) ||
      !cpu_param_int(op, "input_forget", &input_forget) ||
      !cpu_param_int(op, "linear_before_reset", &lbr)) {
    return kUnresolved;
  }
  p->ndir = strcmp(d->s, "bidirectional") == 0 ? 2 : 1;
  p->reverse = strcmp(d->s, "reverse") == 0;
  p->layout = layout == 1;
  p->has_clip = clip->f > 0;
  p->clip = clip->f;
  p->input_forget = input_forget != 0;
  p->lbr = lbr != 0;
  size_t total = (size_t)nacts * (size_t)p->ndir;
  if (names->count != total || alphas->count != total ||
      betas->count != total) {
    return "activations do not cover every direction";
  }
  for (size_t i = 0; i < total; i++) {
    const act_info_t *info = NULL;
    for (size_t k = 0; k < sizeof(act_table) / sizeof(act_table[0]); k++) {
      if (same_name(names->strings[i], act_table[k].name)) {
        info = &act_table[k];
      }
    }
    if (!info) {
      return "unknown activation";
    }
    act_t *a = &p->acts[i / (size_t)nacts][i % (size_t)nacts];
    a->kind = info->kind;
    a->alpha = alphas->floats[i];
    a->beta = betas->floats[i];
  }
  return NULL;
}

// True when |d| has rank |rank| and exactly |dims|.
static bool desc_is(const wm_tensor_desc *d, uint32_t rank,
                    const size_t *dims) {
  if (d->rank != rank) {
    return false;
  }
  for (uint32_t i = 0; i < rank; i++) {
    if ((size_t)d->dims[i] != dims[i]) {
      return false;
    }
  }
  return true;
}

// Resolves sizes and checks every input and output of |op|.
static const char *rnn_shapes(const wm_op_desc *op, rnn_plan_t *p) {
  uint32_t max_in = p->cell == CELL_LSTM ? 8 : 6;
  if (op->n_in < 3 || op->n_in > max_in) {
    return "unexpected inputs";
  }
  for (uint32_t i = 0; i < op->n_in; i++) {
    p->has[i] = op->in[i].dtype != 0;
    if (!p->has[i]) {
      continue;
    }
    if (i == IN_LENS ? !k_is_int(op->in[i].dtype)
                     : op->in[i].dtype != K_FLOAT) {
      return "float32 tensors and integer sequence_lens only";
    }
    p->counts[i] = cpu_desc_count(&op->in[i]);
  }
  if (!p->has[IN_X] || !p->has[IN_W] || !p->has[IN_R]) {
    return "X, W and R are required";
  }
  const wm_tensor_desc *x = &op->in[IN_X], *r = &op->in[IN_R];
  if (x->rank != 3 || r->rank != 3) {
    return "X and R must have rank 3";
  }
  p->seq = (size_t)x->dims[p->layout ? 1 : 0];
  p->batch = (size_t)x->dims[p->layout ? 0 : 1];
  p->input = (size_t)x->dims[2];
  p->hidden = (size_t)r->dims[2];
  p->gh = p->hidden * (size_t)p->gates;
  int64_t hs = cpu_attr_int(op, "hidden_size", (int64_t)p->hidden);
  if (p->hidden == 0 || hs != (int64_t)p->hidden) {
    return "hidden size is 0 or differs from hidden_size";
  }
  size_t nd = (size_t)p->ndir, b = p->batch;
  size_t w[3] = {nd, p->gh, p->input}, rr[3] = {nd, p->gh, p->hidden};
  size_t bb[2] = {nd, 2 * p->gh}, pp[2] = {nd, 3 * p->hidden};
  size_t st[3] = {p->layout ? b : nd, p->layout ? nd : b, p->hidden};
  if (!desc_is(&op->in[IN_W], 3, w) || !desc_is(r, 3, rr) ||
      (p->has[IN_B] && !desc_is(&op->in[IN_B], 2, bb)) ||
      (op->n_in > IN_LENS && p->has[IN_LENS] &&
       !desc_is(&op->in[IN_LENS], 1, &b)) ||
      (op->n_in > IN_H0 && p->has[IN_H0] && !desc_is(&op->in[IN_H0], 3, st)) ||
      (op->n_in > IN_C0 && p->has[IN_C0] && !desc_is(&op->in[IN_C0], 3, st)) ||
      (op->n_in > IN_P && p->has[IN_P] && !desc_is(&op->in[IN_P], 2, pp))) {
    return "W, R, B, sequence_lens, initial states or P have wrong shapes";
  }
  size_t y[4] = {p->layout ? b : p->seq, p->layout ? p->seq : nd,
                 p->layout ? nd : b, p->hidden};
  uint32_t max_out = p->cell == CELL_LSTM ? 3 : 2;
  if (op->n_out > max_out) {
    return "unexpected outputs";
  }
  for (uint32_t i = 0; i < op->n_out; i++) {
    if (!k_has_output(op, i)) {
      continue;
    }
    if (op->out[i].dtype != K_FLOAT ||
        (i == 0 ? !desc_is(&op->out[0], 4, y) : !desc_is(&op->out[i], 3, st))) {
      return "outputs have wrong dtypes or shapes";
    }
  }
  return NULL;
}

static uint32_t rnn_query(const wm_op_desc *op, uint32_t *why,
                          const char **detail) {
  rnn_plan_t p;
  memset(&p, 0, sizeof(p));
  const char *bad = rnn_attrs(op, &p);
  if (bad) {
    return k_none(why, detail, bad == kUnresolved ? WM_WHY_SHAPE : WM_WHY_ATTR,
                  bad);
  }
  bad = rnn_shapes(op, &p);
  if (bad) {
    return k_none(why, detail, WM_WHY_SHAPE, bad);
  }
  return WM_SUPPORT_SUPPORTED;
}

// The projection's biases of direction |dir| from B's rows |wb| and |rb|:
// Wb + Rb on every gate but GRU's hidden one, which gets Wb only (its Rb
// goes with the recurrent product).
static void rnn_fill_bias(rnn_plan_t *p, size_t dir, const float *wb,
                          const float *rb) {
  size_t gh = p->gh, keep = p->cell == CELL_GRU ? 2 * p->hidden : gh;
  float *out = p->bias + dir * gh;
  for (size_t k = 0; k < keep; k++) {
    out[k] = wb[k] + rb[k];
  }
  for (size_t k = keep; k < gh; k++) {
    out[k] = wb[k];
  }
}

// Packs R^T of direction |dir| from |r| ([gh][hidden]) into the panels
// allocated at plan time.
static void rnn_fill_r(rnn_plan_t *p, size_t dir, const float *r) {
  int64_t hs = (int64_t)p->hidden;
  cpu_gemm_pack_fill(&p->pr[dir], r, 1, hs);
  if (p->cell == CELL_GRU) {
    cpu_gemm_pack_fill(&p->prh[dir], r + 2 * hs * hs, 1, hs);
  }
}

// Allocates the packed R^T of every direction and fills what the constant
// inputs of |op| give: W^T, R^T and the biases.
static wm_error *rnn_pack_plan(const wm_op_desc *op, rnn_plan_t *p) {
  const float *w = k_const_input(op, IN_W), *r = k_const_input(op, IN_R);
  const float *bias = p->has[IN_B] ? k_const_input(op, IN_B) : NULL;
  int64_t gh = (int64_t)p->gh, hs = (int64_t)p->hidden;
  int64_t in = (int64_t)p->input;
  // A GRU step multiplies by the z and r rows of R first, then by h's.
  int64_t first = p->cell == CELL_GRU ? 2 * hs : gh;
  for (size_t d = 0; d < (size_t)p->ndir; d++) {
    wm_error *e = cpu_gemm_pack_alloc(CPU_GEMM_B, first, hs, &p->pr[d]);
    if (!e && p->cell == CELL_GRU) {
      e = cpu_gemm_pack_alloc(CPU_GEMM_B, hs, hs, &p->prh[d]);
    }
    if (!e && w && in > 0) {
      e = cpu_gemm_pack(CPU_GEMM_B, gh, in, w + d * (size_t)(gh * in), 1, in,
                        &p->pw[d]);
    }
    if (e) {
      return e;
    }
    if (r) {
      rnn_fill_r(p, d, r + d * (size_t)(gh * hs));
    }
    if (bias) {
      rnn_fill_bias(p, d, bias + d * 2 * p->gh, bias + d * 2 * p->gh + p->gh);
    }
  }
  p->r_planned = r != NULL;
  p->bias_planned = bias != NULL;
  return NULL;
}

static wm_error *rnn_plan(const wm_op_desc *op, void **out_state) {
  *out_state = NULL;
  rnn_plan_t *p = calloc(1, sizeof(*p));
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  const char *bad = rnn_attrs(op, p);
  if (!bad) {
    bad = rnn_shapes(op, p);
  }
  if (bad) {
    rnn_destroy(p);
    return cpu_error(WM_ERR_INVALID_ARGUMENT, "node \"%s\" (%s): %s", op->name,
                     op->op_type, bad);
  }
  size_t nd = (size_t)p->ndir, b = p->batch, h = p->hidden;
  size_t n_proj = 0, floats = 0, bytes = 0;
  bool ok =
      wm_checked_mul(nd * p->seq, b, &n_proj) &&
      wm_checked_mul(n_proj, p->gh, &n_proj) &&
      wm_checked_add(n_proj, b * (p->gh + 8 * h) + nd * p->gh + 64, &floats) &&
      wm_checked_mul(floats, sizeof(float), &bytes) &&
      wm_checked_add(bytes, (b + 1) * sizeof(int64_t), &bytes);
  char *blk = ok ? malloc(bytes) : NULL;
  if (!blk) {
    rnn_destroy(p);
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED,
                     "node \"%s\" (%s): out of memory for the projections",
                     op->name, op->op_type);
  }
  p->block = blk;
  p->lens = (int64_t *)(void *)blk;
  p->proj = (float *)(void *)(p->lens + b + 1);
  p->hr = p->proj + n_proj;
  p->h = p->hr + b * p->gh;
  p->c = p->h + b * h;
  p->rh = p->c + b * h;
  p->tmp = p->rh + b * h;
  p->bias = p->tmp + 4 * b * h;
  wm_error *e = rnn_pack_plan(op, p);
  if (e) {
    rnn_destroy(p);
    return e;
  }
  *out_state = p;
  return NULL;
}

// One run's tensors and the step being computed.
typedef struct rnn_job {
  const rnn_plan_t *p;
  const cpu_run_t *run;
  size_t dir;            // direction of the step
  size_t step;           // step index s (time t depends on the entry)
  const float *wb, *rb;  // biases of the direction or NULL
  const float *peep;     // peepholes of the direction or NULL
  float *y;              // Y or NULL
  int phase;             // GRU: 0 = z and r, 1 = the hidden gate
} rnn_job_t;

// Time step of entry |b| at step |s| of direction |dir|.
static size_t rnn_time(const rnn_plan_t *p, size_t dir, size_t s, size_t b) {
  bool rev = p->ndir == 2 ? dir == 1 : p->reverse;
  return rev ? (size_t)p->lens[b] - 1 - s : s;
}

// Row of X (and of the projection) for time |t| and entry |b|.
static size_t rnn_row(const rnn_plan_t *p, size_t t, size_t b) {
  return p->layout ? b * p->seq + t : t * p->batch + b;
}

static inline float rnn_clip(const rnn_plan_t *p, float v) {
  if (!p->has_clip) {
    return v;
  }
  return v < -p->clip ? -p->clip : (v > p->clip ? p->clip : v);
}

// The gate arithmetic of step j->step for batch entries [begin, end).
static void rnn_cells(void *ctx, size_t begin, size_t end) {
  const rnn_job_t *j = ctx;
  const rnn_plan_t *p = j->p;
  size_t hs = p->hidden, gh = p->gh;
  const act_t *f = &p->acts[j->dir][0], *g = &p->acts[j->dir][1],
              *ah = &p->acts[j->dir][2];
  const float *proj = p->proj + j->dir * p->seq * p->batch * gh;
  for (size_t b = begin; b < end; b++) {
    if ((size_t)p->lens[b] <= j->step) {
      continue;
    }
    size_t t = rnn_time(p, j->dir, j->step, b);
    const float *restrict pg = proj + rnn_row(p, t, b) * gh;
    const float *restrict hr = p->hr + b * gh;
    float *restrict h = p->h + b * hs;
    float *restrict c = p->c + b * hs;
    float *restrict tmp = p->tmp + b * 4 * hs;
    if (p->cell == CELL_RNN) {
      for (size_t k = 0; k < hs; k++) {
        tmp[k] = rnn_clip(p, pg[k] + hr[k]);
      }
      act_apply(f, tmp, hs);
      memcpy(h, tmp, hs * sizeof(float));
    } else if (p->cell == CELL_GRU) {
      float *z = tmp, *r = tmp + hs, *hh = tmp + 2 * hs;
      if (j->phase == 0) {
        for (size_t k = 0; k < 2 * hs; k++) {
          tmp[k] = rnn_clip(p, pg[k] + hr[k]);
        }
        act_apply(f, tmp, 2 * hs);
        float *rh = p->rh + b * hs;
        for (size_t k = 0; k < hs; k++) {
          rh[k] = r[k] * h[k];
        }
        continue;
      }
      for (size_t k = 0; k < hs; k++) {
        float rec = hr[2 * hs + k];  // with its recurrent bias
        float pre = p->lbr ? pg[2 * hs + k] + r[k] * rec : pg[2 * hs + k] + rec;
        hh[k] = rnn_clip(p, pre);
      }
      act_apply(g, hh, hs);
      for (size_t k = 0; k < hs; k++) {
        h[k] = (1.0f - z[k]) * hh[k] + z[k] * h[k];
      }
    } else {
      // Gates i, o, f, c; peepholes i, o, f.
      float *gi = tmp, *go = tmp + hs, *gf = tmp + 2 * hs, *gc = tmp + 3 * hs;
      const float *pi = j->peep, *po = j->peep ? j->peep + hs : NULL,
                  *pf = j->peep ? j->peep + 2 * hs : NULL;
      for (size_t k = 0; k < hs; k++) {
        gi[k] = rnn_clip(p, pg[k] + hr[k] + (pi ? pi[k] * c[k] : 0.0f));
        gf[k] = rnn_clip(
            p, pg[2 * hs + k] + hr[2 * hs + k] + (pf ? pf[k] * c[k] : 0.0f));
        gc[k] = rnn_clip(p, pg[3 * hs + k] + hr[3 * hs + k]);
      }
      act_apply(f, gi, hs);
      if (p->input_forget) {
        for (size_t k = 0; k < hs; k++) {
          gf[k] = 1.0f - gi[k];
        }
      } else {
        act_apply(f, gf, hs);
      }
      act_apply(g, gc, hs);
      for (size_t k = 0; k < hs; k++) {
        c[k] = gf[k] * c[k] + gi[k] * gc[k];
        go[k] =
            rnn_clip(p, pg[hs + k] + hr[hs + k] + (po ? po[k] * c[k] : 0.0f));
      }
      act_apply(f, go, hs);
      memcpy(gc, c, hs * sizeof(float));
      act_apply(ah, gc, hs);
      for (size_t k = 0; k < hs; k++) {
        h[k] = go[k] * gc[k];
      }
    }
    if (j->y) {
      size_t nd = (size_t)p->ndir;
      size_t row = p->layout ? (b * p->seq + t) * nd + j->dir
                             : (t * nd + j->dir) * p->batch + b;
      memcpy(j->y + row * hs, h, hs * sizeof(float));
    }
  }
}

// Offset of the state of entry |b| in direction |dir|.
static size_t rnn_state_at(const rnn_plan_t *p, size_t dir, size_t b) {
  return (p->layout ? b * (size_t)p->ndir + dir : dir * p->batch + b) *
         p->hidden;
}

static wm_error *rnn_run(void *state, const cpu_run_t *run) {
  const cpu_gemm_scratch_t ws = cpu_gemm_scratch_of(run);
  rnn_plan_t *p = state;
  for (uint32_t i = 0; i < 8; i++) {
    bool present = i < run->n_in && run->in[i].data;
    if (present != p->has[i] || (present && run->in[i].count != p->counts[i])) {
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "recurrent kernel: input %u does not match the plan", i);
    }
  }
  const cpu_tensor_t *in = run->in;
  for (size_t b = 0; b < p->batch; b++) {
    int64_t len = p->has[IN_LENS]
                      ? k_load_int(in[IN_LENS].data, in[IN_LENS].dtype, b)
                      : (int64_t)p->seq;
    if (len < 0 || len > (int64_t)p->seq) {
      return cpu_error(WM_ERR_OUT_OF_RANGE,
                       "recurrent kernel: sequence_lens[%zu] is %lld, want 0 "
                       "to %zu",
                       b, (long long)len, p->seq);
    }
    p->lens[b] = len;
  }
  float *y = run->n_out > 0 ? run->out[0].data : NULL;
  float *yh = run->n_out > 1 ? run->out[1].data : NULL;
  float *yc = run->n_out > 2 ? run->out[2].data : NULL;
  size_t hs = p->hidden, gh = p->gh, rows = p->seq * p->batch;
  if (y) {
    memset(y, 0, run->out[0].count * sizeof(float));
  }
  const float *x = in[IN_X].data;
  for (size_t dir = 0; dir < (size_t)p->ndir; dir++) {
    const float *w = (const float *)in[IN_W].data + dir * gh * p->input;
    const float *r = (const float *)in[IN_R].data + dir * gh * hs;
    rnn_job_t j = {p, run, dir, 0, NULL, NULL, NULL, y, 0};
    if (p->has[IN_B]) {
      j.wb = (const float *)in[IN_B].data + dir * 2 * gh;
      j.rb = j.wb + gh;
    }
    if (p->has[IN_P]) {
      j.peep = (const float *)in[IN_P].data + dir * 3 * hs;
    }
    if (!p->r_planned) {
      rnn_fill_r(p, dir, r);
    }
    if (j.wb && !p->bias_planned) {
      rnn_fill_bias(p, dir, j.wb, j.rb);
    }
    // proj[rows][gh] = X W^T + bias, W [gh][input] read transposed.
    cpu_gemm_problem_t pp;
    memset(&pp, 0, sizeof(pp));
    pp.m = (int64_t)rows;
    pp.n = (int64_t)gh;
    pp.k = (int64_t)p->input;
    pp.a.data = x;
    pp.a.rs = (int64_t)p->input;
    pp.a.cs = 1;
    pp.b.data = w;
    pp.b.rs = 1;
    pp.b.cs = (int64_t)p->input;
    pp.b.packed = p->pw[dir].data ? &p->pw[dir] : NULL;
    pp.c = p->proj + dir * rows * gh;
    pp.ldc = (int64_t)gh;
    pp.epi = cpu_gemm_epi_plain();
    pp.epi.bias = j.wb ? p->bias + dir * gh : NULL;
    wm_error *e = cpu_gemm_run(&pp, run->pool, &ws);
    if (e) {
      return e;
    }
    for (size_t b = 0; b < p->batch; b++) {
      size_t so = rnn_state_at(p, dir, b);
      for (size_t k = 0; k < hs; k++) {
        p->h[b * hs + k] =
            p->has[IN_H0] ? ((const float *)in[IN_H0].data)[so + k] : 0.0f;
        p->c[b * hs + k] =
            p->has[IN_C0] ? ((const float *)in[IN_C0].data)[so + k] : 0.0f;
        p->rh[b * hs + k] = 0.0f;  // entries that never run stay defined
      }
    }
    size_t grain = k_row_grain(hs * (size_t)p->gates * 8, K_GRAIN_HEAVY);
    // hr[batch][first] = h R^T; GRU then hr[batch][2h..3h] = src R_h^T + Rb_h.
    cpu_gemm_problem_t ph;
    memset(&ph, 0, sizeof(ph));
    ph.m = (int64_t)p->batch;
    ph.n = p->pr[dir].rows_or_cols;
    ph.k = (int64_t)hs;
    ph.a.data = p->h;
    ph.a.rs = (int64_t)hs;
    ph.a.cs = 1;
    ph.b.packed = &p->pr[dir];
    ph.c = p->hr;
    ph.ldc = (int64_t)gh;
    ph.epi = cpu_gemm_epi_plain();
    cpu_gemm_problem_t pg = ph;
    if (p->cell == CELL_GRU) {
      pg.n = (int64_t)hs;
      pg.a.data = p->lbr ? p->h : p->rh;
      pg.b.packed = &p->prh[dir];
      pg.c = p->hr + 2 * hs;
      pg.epi.bias = j.rb ? j.rb + 2 * hs : NULL;
    }
    for (size_t s = 0; s < p->seq && p->batch > 0; s++) {
      j.step = s;
      e = cpu_gemm_run(&ph, run->pool, &ws);
      if (!e && p->cell == CELL_GRU) {
        j.phase = 0;
        k_for(run->pool, p->batch, grain, rnn_cells, &j);
        e = cpu_gemm_run(&pg, run->pool, &ws);
        j.phase = 1;
      }
      if (e) {
        return e;
      }
      k_for(run->pool, p->batch, grain, rnn_cells, &j);
    }
    for (size_t b = 0; b < p->batch; b++) {
      size_t so = rnn_state_at(p, dir, b);
      bool empty = p->lens[b] == 0;
      for (size_t k = 0; k < hs; k++) {
        if (yh) {
          yh[so + k] = empty ? 0.0f : p->h[b * hs + k];
        }
        if (yc) {
          yc[so + k] = empty ? 0.0f : p->c[b * hs + k];
        }
      }
    }
  }
  return NULL;
}

#define K(name)                                                                \
  {                                                                            \
    name, 1, WM_IMPL_NATIVE_KERNEL, rnn_query, rnn_plan, rnn_run, rnn_destroy, \
        cpu_gemm_kernel_workspace, NULL, NULL                                  \
  }

const cpu_kernel_t cpu_kernels_rnn[] = {
    K("RNN"),
    K("GRU"),
    K("LSTM"),
    {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
