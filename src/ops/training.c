// Training operators of ai.onnx.preview.training: Adagrad, Adam and
// Momentum. Each takes a learning rate R, an update count T and, for k
// optimized tensors, k values X, k gradients G and k (Adam: 2k) state
// tensors, and returns k new values followed by k new states per state
// kind. Arithmetic is done in double and stored in the tensors' dtype.
#include <math.h>
#include <string.h>

#include "ops/ops.h"

#define TRAINING_DOMAIN "ai.onnx.preview.training"

// The layout of one optimizer's inputs and outputs.
typedef struct optim_layout {
  int32_t groups_in;   // tensor groups in: X, G and the states
  int32_t groups_out;  // tensor groups out: X_new and the new states
} optim_layout_t;

static const optim_layout_t adagrad_layout = {3, 2};   // X G H -> X H
static const optim_layout_t adam_layout = {4, 3};      // X G V H -> X V H
static const optim_layout_t momentum_layout = {3, 2};  // X G V -> X V

// Reads the float attribute |name| (an int is accepted too); |def| when
// absent, an error when absent and |required|.
static wm_status_t attr_float(const wm_op_ctx_t *ctx, const char *name,
                              bool required, double def, double *out) {
  const wm_attr_t *a = wm_node_attr(ctx->node, name);
  *out = def;
  if (!a) {
    return required ? WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                                  "attribute \"%s\" is required", name)
                    : NULL;
  }
  if (a->type == WM_ATTR_FLOAT) {
    *out = a->f;
  } else if (a->type == WM_ATTR_INT) {
    *out = (double)a->i;
  } else {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"%s\" has kind %s, want float", name,
                       wm_attr_type_name(a->type));
  }
  return NULL;
}

// Checks the arity against |lay| and sets *out_k to the tensor count.
static wm_status_t optim_arity(const wm_op_ctx_t *ctx,
                               const optim_layout_t *lay, int32_t *out_k) {
  int32_t rest = ctx->n_in - 2;
  if (rest < lay->groups_in || rest % lay->groups_in != 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "has %d inputs, want 2 + %d * k for k >= 1 tensors",
                       ctx->n_in, lay->groups_in);
  }
  int32_t k = rest / lay->groups_in;
  if (ctx->n_out > lay->groups_out * k) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "has %d outputs, want at most %d for %d tensors",
                       ctx->n_out, lay->groups_out * k, k);
  }
  for (int32_t i = 0; i < ctx->n_in; i++) {
    if (!wm_op_has_input(ctx, i)) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input %d is omitted", i);
    }
  }
  *out_k = k;
  return NULL;
}

// Returns true when the known dims of |a| and |b| agree.
static bool shapes_compatible(const wm_shape_t *a, const wm_shape_t *b) {
  if (a->rank < 0 || b->rank < 0) {
    return true;
  }
  if (a->rank != b->rank) {
    return false;
  }
  for (int32_t d = 0; d < a->rank; d++) {
    if (a->dims[d] >= 0 && b->dims[d] >= 0 && a->dims[d] != b->dims[d]) {
      return false;
    }
  }
  return true;
}

// Checks R (a float scalar), T (an int64 scalar) and the tensors: float
// or double, one dtype for all, each group's tensor shaped like its X.
static wm_status_t optim_check(const wm_op_ctx_t *ctx,
                               const optim_layout_t *lay, int32_t *out_k) {
  int32_t k = 0;
  WM_RETURN_IF_ERROR(optim_arity(ctx, lay, &k));
  static const char *const names[2] = {"R", "T"};
  for (int32_t i = 0; i < 2; i++) {
    wm_dtype_t dt = wm_op_in_dtype(ctx, i);
    bool ok = i == 0 ? dt == WM_DTYPE_UNDEFINED || dt == WM_DTYPE_FLOAT ||
                           dt == WM_DTYPE_DOUBLE
                     : dt == WM_DTYPE_UNDEFINED || dt == WM_DTYPE_INT64;
    if (!ok) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "input %d (%s) is %s, want %s",
                         i, names[i], wm_dtype_name(dt),
                         i == 0 ? "float or double" : "int64");
    }
    size_t n;
    if (wm_shape_numel(wm_op_in_shape(ctx, i), &n) && n != 1) {
      char buf[64];
      return WM_OP_ERROR(
          ctx, INVALID_ARGUMENT, "input %d (%s) has shape %s, want a scalar", i,
          names[i], wm_shape_format(wm_op_in_shape(ctx, i), buf, sizeof(buf)));
    }
  }
  wm_dtype_t dtype = WM_DTYPE_UNDEFINED;
  for (int32_t i = 2; i < ctx->n_in; i++) {
    wm_dtype_t dt = wm_op_in_dtype(ctx, i);
    if (dt == WM_DTYPE_UNDEFINED) {
      continue;
    }
    if (dt != WM_DTYPE_FLOAT && dt != WM_DTYPE_DOUBLE) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d is %s, want float or double", i,
                         wm_dtype_name(dt));
    }
    if (dtype != WM_DTYPE_UNDEFINED && dt != dtype) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d is %s, other tensors are %s", i,
                         wm_dtype_name(dt), wm_dtype_name(dtype));
    }
    dtype = dt;
  }
  for (int32_t t = 0; t < k; t++) {
    const wm_shape_t *x = wm_op_in_shape(ctx, 2 + t);
    for (int32_t g = 1; g < lay->groups_in; g++) {
      int32_t i = 2 + g * k + t;
      const wm_shape_t *s = wm_op_in_shape(ctx, i);
      if (!shapes_compatible(x, s)) {
        char bx[64], bs[64];
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "input %d has shape %s, but its tensor (input %d) "
                           "has %s",
                           i, wm_shape_format(s, bs, sizeof(bs)), 2 + t,
                           wm_shape_format(x, bx, sizeof(bx)));
      }
    }
  }
  *out_k = k;
  return NULL;
}

// Output j = g * k + t is group g (0 = X_new, then the states in input
// order after G) of tensor t; it has the type of the input it replaces.
static wm_status_t optim_infer(wm_op_ctx_t *ctx, const optim_layout_t *lay) {
  int32_t k;
  WM_RETURN_IF_ERROR(optim_check(ctx, lay, &k));
  for (int32_t j = 0; j < ctx->n_out; j++) {
    int32_t g = j / k, t = j % k;
    int32_t src = 2 + (g == 0 ? 0 : g + 1) * k + t;
    const wm_type_t *ty = &ctx->in_types[src];
    const wm_type_t *tx = &ctx->in_types[2 + t];
    wm_dtype_t dt = ty->dtype != WM_DTYPE_UNDEFINED ? ty->dtype : tx->dtype;
    const wm_shape_t *s =
        wm_shape_is_known(&ty->shape) ? &ty->shape : &tx->shape;
    wm_op_set_out(ctx, j, dt, s);
  }
  return NULL;
}

// The inputs of one optimizer step on one element.
typedef struct optim_step {
  double r;  // learning rate
  double t;  // update count
  double x;  // value
  double g;  // gradient
  double v;  // first state (Adagrad: H)
  double h;  // second state (Adam only)
} optim_step_t;

// Runs |update| over every element of every tensor: it reads the step
// and writes the new value and states into out[0..groups_out).
static wm_status_t optim_run(
    wm_op_ctx_t *ctx, const optim_layout_t *lay, const void *params,
    void (*update)(const void *params, const optim_step_t *in, double *out)) {
  int32_t k;
  WM_RETURN_IF_ERROR(optim_check(ctx, lay, &k));
  optim_step_t st;
  memset(&st, 0, sizeof(st));
  st.r = wm_tensor_get_f64(ctx->in[0], 0);
  st.t = (double)wm_tensor_get_i64(ctx->in[1], 0);
  for (int32_t t = 0; t < k; t++) {
    const wm_tensor_t *x = ctx->in[2 + t];
    for (int32_t g = 1; g < lay->groups_in; g++) {
      if (ctx->in[2 + g * k + t]->count != x->count) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "input %d has %zu elements, input %d has %zu",
                           2 + g * k + t, ctx->in[2 + g * k + t]->count, 2 + t,
                           x->count);
      }
    }
    for (int32_t g = 0; g < lay->groups_out; g++) {
      int32_t j = g * k + t;
      if (j < ctx->n_out && ctx->out[j] && ctx->out[j]->count != x->count) {
        return WM_OP_ERROR(ctx, INTERNAL,
                           "output %d has %zu elements, want %zu", j,
                           ctx->out[j]->count, x->count);
      }
    }
    const wm_tensor_t *gt = ctx->in[2 + k + t];
    const wm_tensor_t *vt = ctx->in[2 + 2 * k + t];
    const wm_tensor_t *ht = lay->groups_in > 3 ? ctx->in[2 + 3 * k + t] : NULL;
    for (size_t i = 0; i < x->count; i++) {
      st.x = wm_tensor_get_f64(x, i);
      st.g = wm_tensor_get_f64(gt, i);
      st.v = wm_tensor_get_f64(vt, i);
      st.h = ht ? wm_tensor_get_f64(ht, i) : 0.0;
      double out[3];
      update(params, &st, out);
      for (int32_t g = 0; g < lay->groups_out; g++) {
        int32_t j = g * k + t;
        if (j < ctx->n_out && ctx->out[j]) {
          wm_tensor_set_f64(ctx->out[j], i, out[g]);
        }
      }
    }
  }
  return NULL;
}

// Work of an optimizer node: |per| FLOPs and |tr| square roots per
// element of the optimized tensors.
static void optim_cost(const wm_op_ctx_t *ctx, const optim_layout_t *lay,
                       double per, double tr, wm_op_cost_t *out) {
  int32_t rest = ctx->n_in - 2;
  if (rest < lay->groups_in || rest % lay->groups_in != 0) {
    return;
  }
  int32_t k = rest / lay->groups_in;
  double n = 0;
  for (int32_t t = 0; t < k; t++) {
    size_t c;
    if (!wm_shape_numel(wm_op_in_shape(ctx, 2 + t), &c)) {
      return;
    }
    n += (double)c;
  }
  out->flops = n * per;
  out->transcendentals = n * tr;
}

// --------------------------------------------------------------- Adagrad

typedef struct adagrad_params {
  double decay;    // decay_factor
  double epsilon;  // epsilon
  double norm;     // norm_coefficient
} adagrad_params_t;

static wm_status_t adagrad_params(const wm_op_ctx_t *ctx, adagrad_params_t *p) {
  WM_RETURN_IF_ERROR(attr_float(ctx, "decay_factor", false, 0.0, &p->decay));
  WM_RETURN_IF_ERROR(attr_float(ctx, "epsilon", false, 1e-6, &p->epsilon));
  return attr_float(ctx, "norm_coefficient", false, 0.0, &p->norm);
}

// r' = r / (1 + t * decay); g' = norm * x + g; h' = h + g'^2;
// x' = x - r' * g' / (sqrt(h') + epsilon).
static void adagrad_update(const void *params, const optim_step_t *in,
                           double *out) {
  const adagrad_params_t *p = params;
  double r = in->r / (1.0 + in->t * p->decay);
  double g = p->norm * in->x + in->g;
  double h = in->v + g * g;
  out[0] = in->x - r * g / (sqrt(h) + p->epsilon);
  out[1] = h;
}

static wm_status_t adagrad_infer(wm_op_ctx_t *ctx) {
  adagrad_params_t p;
  WM_RETURN_IF_ERROR(adagrad_params(ctx, &p));
  return optim_infer(ctx, &adagrad_layout);
}

static wm_status_t adagrad_run(wm_op_ctx_t *ctx) {
  adagrad_params_t p;
  WM_RETURN_IF_ERROR(adagrad_params(ctx, &p));
  return optim_run(ctx, &adagrad_layout, &p, adagrad_update);
}

static void adagrad_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  optim_cost(ctx, &adagrad_layout, 9, 1, out);
}

// ------------------------------------------------------------------ Adam

typedef struct adam_params {
  double alpha;      // first-moment decay
  double beta;       // second-moment decay
  double epsilon;    // added to sqrt(h)
  double norm;       // norm_coefficient (L2 before the update)
  double norm_post;  // norm_coefficient_post (L2 after it)
} adam_params_t;

static wm_status_t adam_params(const wm_op_ctx_t *ctx, adam_params_t *p) {
  WM_RETURN_IF_ERROR(attr_float(ctx, "alpha", false, 0.9, &p->alpha));
  WM_RETURN_IF_ERROR(attr_float(ctx, "beta", false, 0.999, &p->beta));
  WM_RETURN_IF_ERROR(attr_float(ctx, "epsilon", false, 1e-6, &p->epsilon));
  WM_RETURN_IF_ERROR(attr_float(ctx, "norm_coefficient", false, 0.0, &p->norm));
  return attr_float(ctx, "norm_coefficient_post", false, 0.0, &p->norm_post);
}

// g' = norm * x + g; v' = alpha v + (1 - alpha) g'; h' = beta h + (1 -
// beta) g'^2; r' = r sqrt(1 - beta^t) / (1 - alpha^t) when t > 0, else r;
// x' = (1 - norm_post) (x - r' v' / (sqrt(h') + epsilon)).
static void adam_update(const void *params, const optim_step_t *in,
                        double *out) {
  const adam_params_t *p = params;
  double g = p->norm * in->x + in->g;
  double v = p->alpha * in->v + (1.0 - p->alpha) * g;
  double h = p->beta * in->h + (1.0 - p->beta) * g * g;
  double r = in->r;
  if (in->t > 0) {
    r = r * sqrt(1.0 - pow(p->beta, in->t)) / (1.0 - pow(p->alpha, in->t));
  }
  double x = in->x - r * v / (sqrt(h) + p->epsilon);
  out[0] = (1.0 - p->norm_post) * x;
  out[1] = v;
  out[2] = h;
}

static wm_status_t adam_infer(wm_op_ctx_t *ctx) {
  adam_params_t p;
  WM_RETURN_IF_ERROR(adam_params(ctx, &p));
  return optim_infer(ctx, &adam_layout);
}

static wm_status_t adam_run(wm_op_ctx_t *ctx) {
  adam_params_t p;
  WM_RETURN_IF_ERROR(adam_params(ctx, &p));
  return optim_run(ctx, &adam_layout, &p, adam_update);
}

static void adam_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  optim_cost(ctx, &adam_layout, 14, 1, out);
}

// -------------------------------------------------------------- Momentum

typedef struct momentum_params {
  double alpha;   // momentum decay
  double beta;    // gradient scale after the first update
  double norm;    // norm_coefficient
  bool nesterov;  // mode "nesterov" (else "standard")
} momentum_params_t;

static wm_status_t momentum_params(const wm_op_ctx_t *ctx,
                                   momentum_params_t *p) {
  WM_RETURN_IF_ERROR(attr_float(ctx, "alpha", true, 0.0, &p->alpha));
  WM_RETURN_IF_ERROR(attr_float(ctx, "beta", true, 0.0, &p->beta));
  WM_RETURN_IF_ERROR(attr_float(ctx, "norm_coefficient", true, 0.0, &p->norm));
  const wm_attr_t *a = wm_node_attr(ctx->node, "mode");
  if (!a) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "attribute \"mode\" is required");
  }
  if (a->type != WM_ATTR_STRING ||
      (strcmp(a->s, "standard") != 0 && strcmp(a->s, "nesterov") != 0)) {
    return WM_OP_ERROR(
        ctx, INVALID_ARGUMENT,
        "attribute \"mode\" is %s%s%s, want \"standard\" or "
        "\"nesterov\"",
        a->type == WM_ATTR_STRING ? "\"" : "a ",
        a->type == WM_ATTR_STRING ? a->s : wm_attr_type_name(a->type),
        a->type == WM_ATTR_STRING ? "\"" : "");
  }
  p->nesterov = strcmp(a->s, "nesterov") == 0;
  return NULL;
}

// g' = norm * x + g; v' = alpha v + beta' g' with beta' = beta when t > 0,
// else 1; standard: x' = x - r v'; nesterov: x' = x - r (g' + alpha v').
static void momentum_update(const void *params, const optim_step_t *in,
                            double *out) {
  const momentum_params_t *p = params;
  double g = p->norm * in->x + in->g;
  double beta = in->t > 0 ? p->beta : 1.0;
  double v = p->alpha * in->v + beta * g;
  out[0] = p->nesterov ? in->x - in->r * (g + p->alpha * v) : in->x - in->r * v;
  out[1] = v;
}

static wm_status_t momentum_infer(wm_op_ctx_t *ctx) {
  momentum_params_t p;
  WM_RETURN_IF_ERROR(momentum_params(ctx, &p));
  return optim_infer(ctx, &momentum_layout);
}

static wm_status_t momentum_run(wm_op_ctx_t *ctx) {
  momentum_params_t p;
  WM_RETURN_IF_ERROR(momentum_params(ctx, &p));
  return optim_run(ctx, &momentum_layout, &p, momentum_update);
}

static void momentum_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  optim_cost(ctx, &momentum_layout, 7, 0, out);
}

#define R_TYPES (WM_T(FLOAT) | WM_T(DOUBLE))

const wm_op_def_t wm_ops_training[] = {
    {"Adagrad", TRAINING_DOMAIN, 1, 5, -1, 1, -1, R_TYPES, adagrad_infer,
     adagrad_run, adagrad_cost},
    {"Adam", TRAINING_DOMAIN, 1, 6, -1, 1, -1, R_TYPES, adam_infer, adam_run,
     adam_cost},
    {"Momentum", TRAINING_DOMAIN, 1, 5, -1, 1, -1, R_TYPES, momentum_infer,
     momentum_run, momentum_cost},
    WM_OPS_END,
};
