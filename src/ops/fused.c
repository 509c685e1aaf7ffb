// Fused operators of the "wmap" domain, the targets of the graph's fusion
// pass: FusedConv = act(Conv(X, W, B) + Z), FusedGemm = act(Gemm(A, B, C)),
// FusedMatMul = act(MatMul(A, B) + bias). Each runs the ONNX operator's
// own definition (shape rule, cost and reference kernel) on the leading
// inputs, then adds the residual or bias and applies the activation named
// by the string attribute `activation` with `activation_params`.
#include <float.h>
#include <math.h>
#include <string.h>

#include "ops/ops.h"

// Activation names, in the order of the cpu backend's cpu_act_kind_t.
static const char *const kActivations[] = {
    "",          "Relu", "Clip", "LeakyRelu", "Sigmoid",  "HardSigmoid",
    "HardSwish", "Tanh", "Silu", "Gelu",      "GeluTanh", NULL,
};
enum {
  ACT_NONE,
  ACT_RELU,
  ACT_CLIP,
  ACT_LEAKY_RELU,
  ACT_SIGMOID,
  ACT_HARD_SIGMOID,
  ACT_HARD_SWISH,
  ACT_TANH,
  ACT_SILU,
  ACT_GELU,
  ACT_GELU_TANH,
};

// An activation and its parameters.
typedef struct act {
  int kind;       // ACT_*
  double p0, p1;  // Clip min, max; LeakyRelu alpha; HardSigmoid alpha, beta
} act_t;

// Reads `activation` and `activation_params`, checking the count of
// parameters each activation takes (none means the ONNX defaults).
static wm_status_t read_act(const wm_op_ctx_t *ctx, act_t *out) {
  WM_RETURN_IF_ERROR(
      wm_op_attr_choice(ctx, "activation", "", kActivations, &out->kind));
  const wm_attr_t *params;
  WM_RETURN_IF_ERROR(wm_op_attr_find(ctx, "activation_params", WM_ATTR_FLOATS,
                                     false, &params));
  size_t n = params ? params->count : 0;
  size_t want = 0;
  out->p0 = 0;
  out->p1 = 0;
  switch (out->kind) {
    case ACT_CLIP:
      want = 2;
      out->p0 = -FLT_MAX;
      out->p1 = FLT_MAX;
      break;
    case ACT_LEAKY_RELU:
      want = 1;
      out->p0 = 0.01;
      break;
    case ACT_HARD_SIGMOID:
      want = 2;
      out->p0 = 0.2;
      out->p1 = 0.5;
      break;
    default:
      break;
  }
  if (n != 0 && n != want) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "activation \"%s\" takes %zu activation_params, got %zu",
                       kActivations[out->kind], want, n);
  }
  if (n > 0) {
    out->p0 = params->floats[0];
  }
  if (n > 1) {
    out->p1 = params->floats[1];
  }
  return NULL;
}

static double act_apply(const act_t *a, double x) {
  switch (a->kind) {
    case ACT_RELU:
      return x > 0 ? x : 0;
    case ACT_CLIP:
      return x < a->p0 ? a->p0 : x > a->p1 ? a->p1 : x;
    case ACT_LEAKY_RELU:
      return x < 0 ? a->p0 * x : x;
    case ACT_SIGMOID:
      return 1 / (1 + exp(-x));
    case ACT_HARD_SIGMOID: {
      double v = a->p0 * x + a->p1;
      return v < 0 ? 0 : v > 1 ? 1 : v;
    }
    case ACT_HARD_SWISH: {
      double v = x / 6 + 0.5;
      return x * (v < 0 ? 0 : v > 1 ? 1 : v);
    }
    case ACT_TANH:
      return tanh(x);
    case ACT_SILU:
      return x / (1 + exp(-x));
    case ACT_GELU:
      return 0.5 * x * (1 + erf(x * 0.70710678118654752));
    case ACT_GELU_TANH:
      return 0.5 * x *
             (1 + tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)));
    default:
      return x;
  }
}

// Transcendentals per element of each activation (for the cost).
static double act_transcendentals(int kind) {
  switch (kind) {
    case ACT_SIGMOID:
    case ACT_TANH:
    case ACT_SILU:
    case ACT_GELU:
    case ACT_GELU_TANH:
      return 1;
    default:
      return 0;
  }
}

// The ONNX operator a fused one extends, at the opset whose semantics it
// takes, seeing its first |n_in| inputs.
typedef struct base {
  const char *name;  // "Conv", "Gemm" or "MatMul"
  int64_t opset;     // default-domain opset served
  int32_t n_in;      // inputs it sees
} base_t;

static const base_t kConv = {"Conv", 11, 3};
static const base_t kGemm = {"Gemm", 13, 3};
static const base_t kMatMul = {"MatMul", 13, 2};

// A copy of |ctx| as the base operator sees it; *out_def its definition.
static wm_status_t base_ctx(const wm_op_ctx_t *ctx, const base_t *b,
                            wm_op_ctx_t *out, const wm_op_def_t **out_def) {
  *out_def = wm_ops_find("", b->name, b->opset);
  if (!*out_def) {
    return WM_OP_ERROR(ctx, INTERNAL, "no definition of %s at opset %lld",
                       b->name, (long long)b->opset);
  }
  *out = *ctx;
  out->opset = b->opset;
  out->n_in = ctx->n_in < b->n_in ? ctx->n_in : b->n_in;
  return NULL;
}

static wm_status_t check_float(const wm_op_ctx_t *ctx) {
  for (int32_t i = 0; i < ctx->n_in; i++) {
    wm_dtype_t d = wm_op_in_dtype(ctx, i);
    if (wm_op_has_input(ctx, i) && d != WM_DTYPE_UNDEFINED &&
        d != WM_DTYPE_FLOAT) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d has type %s, want float", (int)i,
                         wm_dtype_name(d));
    }
  }
  return NULL;
}

// Shape rule shared by the three: the base's, then the extra input
// |extra| (Z of the output's shape, or a bias of the last dim's length).
static wm_status_t fused_infer(wm_op_ctx_t *ctx, const base_t *b, int32_t extra,
                               bool extra_is_vector) {
  act_t act;
  WM_RETURN_IF_ERROR(read_act(ctx, &act));
  WM_RETURN_IF_ERROR(check_float(ctx));
  wm_op_ctx_t sub;
  const wm_op_def_t *def;
  WM_RETURN_IF_ERROR(base_ctx(ctx, b, &sub, &def));
  WM_RETURN_IF_ERROR(def->infer(&sub));
  if (!wm_op_has_input(ctx, extra)) {
    return NULL;
  }
  const wm_shape_t *e = wm_op_in_shape(ctx, extra);
  const wm_shape_t *y = &ctx->out_types[0].shape;
  if (e->rank < 0 || y->rank < 0) {
    return NULL;
  }
  if (extra_is_vector) {
    int64_t n = y->rank > 0 ? y->dims[y->rank - 1] : 1;
    if (e->rank != 1 || (e->dims[0] >= 0 && n >= 0 && e->dims[0] != n)) {
      char buf[128];
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "bias has shape %s, want [%lld]",
                         wm_shape_format(e, buf, sizeof(buf)), (long long)n);
    }
    return NULL;
  }
  bool same = e->rank == y->rank;
  for (int32_t d = 0; same && d < y->rank; d++) {
    same = e->dims[d] < 0 || y->dims[d] < 0 || e->dims[d] == y->dims[d];
  }
  if (!same) {
    char eb[128], yb[128];
    return WM_OP_ERROR(
        ctx, INVALID_ARGUMENT, "Z has shape %s, want the output's %s",
        wm_shape_format(e, eb, sizeof(eb)), wm_shape_format(y, yb, sizeof(yb)));
  }
  return NULL;
}

// Reference kernel shared by the three: the base's kernel, then + extra
// (elementwise, or per last-dim column when |extra_is_vector|), then act.
static wm_status_t fused_run(wm_op_ctx_t *ctx, const base_t *b, int32_t extra,
                             bool extra_is_vector) {
  WM_RETURN_IF_ERROR(fused_infer(ctx, b, extra, extra_is_vector));
  act_t act;
  WM_RETURN_IF_ERROR(read_act(ctx, &act));
  wm_op_ctx_t sub;
  const wm_op_def_t *def;
  WM_RETURN_IF_ERROR(base_ctx(ctx, b, &sub, &def));
  WM_RETURN_IF_ERROR(def->run(&sub));
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;
  }
  float *v = y->data;
  const wm_tensor_t *e = wm_op_has_input(ctx, extra) ? ctx->in[extra] : NULL;
  size_t n = e && extra_is_vector ? e->count : 0;
  if (e && !extra_is_vector && e->count != y->count) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "Z has %zu elements, the output %zu", e->count,
                       y->count);
  }
  for (size_t i = 0; i < y->count; i++) {
    double x = v[i];
    if (e) {
      x += ((const float *)e->data)[extra_is_vector ? i % n : i];
    }
    v[i] = (float)act_apply(&act, x);
  }
  return NULL;
}

// Cost: the base's, plus one FLOP per output element for the sum and the
// activation's own.
static void fused_cost(const wm_op_ctx_t *ctx, const base_t *b,
                       wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  wm_op_ctx_t sub;
  const wm_op_def_t *def;
  wm_status_t s = base_ctx(ctx, b, &sub, &def);
  if (s) {
    wm_status_free(s);
    return;
  }
  if (def->cost) {
    def->cost(&sub, out);
  }
  const wm_shape_t *y = &ctx->out_types[0].shape;
  size_t n = 0;
  if (!wm_shape_is_known(y) || !wm_shape_numel(y, &n)) {
    return;
  }
  act_t act;
  s = read_act(ctx, &act);
  if (s) {
    wm_status_free(s);
    return;
  }
  out->flops += (double)n * (1.0 + (act.kind != ACT_NONE));
  out->transcendentals += (double)n * act_transcendentals(act.kind);
}

// Parameters: the base operator's (FusedConv: Conv's window and group;
// FusedGemm: Gemm's transposes and scales).
static wm_status_t fused_resolve(wm_op_ctx_t *ctx, const base_t *b,
                                 wm_op_params_t *out) {
  wm_op_ctx_t sub;
  const wm_op_def_t *def;
  WM_RETURN_IF_ERROR(base_ctx(ctx, b, &sub, &def));
  return def->resolve(&sub, out);
}
static wm_status_t fused_conv_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  return fused_resolve(ctx, &kConv, out);
}
static wm_status_t fused_gemm_resolve(wm_op_ctx_t *ctx, wm_op_params_t *out) {
  return fused_resolve(ctx, &kGemm, out);
}

static wm_status_t fused_conv_infer(wm_op_ctx_t *ctx) {
  return fused_infer(ctx, &kConv, 3, false);
}
static wm_status_t fused_conv_run(wm_op_ctx_t *ctx) {
  return fused_run(ctx, &kConv, 3, false);
}
static void fused_conv_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  fused_cost(ctx, &kConv, out);
}
static wm_status_t fused_gemm_infer(wm_op_ctx_t *ctx) {
  return fused_infer(ctx, &kGemm, 3, false);
}
static wm_status_t fused_gemm_run(wm_op_ctx_t *ctx) {
  return fused_run(ctx, &kGemm, 3, false);
}
static void fused_gemm_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  fused_cost(ctx, &kGemm, out);
}
static wm_status_t fused_matmul_infer(wm_op_ctx_t *ctx) {
  return fused_infer(ctx, &kMatMul, 2, true);
}
static wm_status_t fused_matmul_run(wm_op_ctx_t *ctx) {
  return fused_run(ctx, &kMatMul, 2, true);
}
static void fused_matmul_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  fused_cost(ctx, &kMatMul, out);
}

// The definition: the base operator's, its epilogue extended by the
// residual or bias |extra| and the activation.
static wm_status_t fused_define(const wm_op_ctx_t *ctx, const base_t *b,
                                int32_t extra, bool extra_is_vector,
                                wm_gen_compute_t *out) {
  act_t act;
  WM_RETURN_IF_ERROR(read_act(ctx, &act));
  wm_op_ctx_t sub;
  const wm_op_def_t *def;
  WM_RETURN_IF_ERROR(base_ctx(ctx, b, &sub, &def));
  if (!def->define) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED, "%s has no compute definition",
                       b->name);
  }
  WM_RETURN_IF_ERROR(def->define(&sub, out));
  int32_t v = out->epilogue;
  if (v < 0) {
    WM_RETURN_IF_ERROR(wm_gen_acc(out, &v));
  }
  wm_gen_builder_t bd = {out, NULL};
  if (wm_op_has_input(ctx, extra)) {
    int32_t e;
    if (extra_is_vector) {
      const wm_shape_t *s = wm_op_in_shape(ctx, extra);
      WM_RETURN_IF_ERROR(wm_gen_input(out, "E", s->rank, s->dims, &e));
    } else {
      // Z has the output's shape, read as the compute sees the output.
      const wm_gen_tensor_t *y = &out->tensors[0];
      WM_RETURN_IF_ERROR(wm_gen_input_access(out, "E", y->rank, y->dims, NULL,
                                             &out->accesses[0], &e));
    }
    out->tensors[out->n_tensors - 1].operand = extra;
    v = wm_gen_f2(&bd, WM_GEN_ADD, v, e);
  }
  static const char *const kNames[] = {
      [ACT_RELU] = "Relu",
      [ACT_LEAKY_RELU] = "LeakyRelu",
      [ACT_SIGMOID] = "Sigmoid",
      [ACT_HARD_SIGMOID] = "HardSigmoid",
      [ACT_HARD_SWISH] = "HardSwish",
      [ACT_SILU] = "Swish",
      [ACT_GELU] = "Gelu",
      [ACT_GELU_TANH] = "Gelu",
  };
  double p[2] = {act.p0, act.p1};
  if (act.kind == ACT_CLIP) {
    v = wm_gen_f2(&bd, WM_GEN_MAX,
                  wm_gen_f2(&bd, WM_GEN_MIN, v, wm_gen_k(&bd, (float)act.p1)),
                  wm_gen_k(&bd, (float)act.p0));
  } else if (act.kind == ACT_TANH) {
    v = wm_gen_f1(&bd, WM_GEN_TANH, v);
  } else if (act.kind != ACT_NONE) {
    p[0] = act.kind == ACT_SILU        ? 1.0
           : act.kind == ACT_GELU      ? 0.0
           : act.kind == ACT_GELU_TANH ? 1.0
                                       : p[0];
    v = wm_op_act_expr(&bd, kNames[act.kind], p, v);
  }
  WM_RETURN_IF_ERROR(bd.st);
  return wm_gen_finish_reduce(out, out->combine, out->init, out->body, v);
}
static wm_status_t fused_conv_define(const wm_op_ctx_t *ctx,
                                     wm_gen_compute_t *out) {
  return fused_define(ctx, &kConv, 3, false, out);
}
static wm_status_t fused_gemm_define(const wm_op_ctx_t *ctx,
                                     wm_gen_compute_t *out) {
  return fused_define(ctx, &kGemm, 3, false, out);
}
static wm_status_t fused_matmul_define(const wm_op_ctx_t *ctx,
                                       wm_gen_compute_t *out) {
  return fused_define(ctx, &kMatMul, 2, true, out);
}

const wm_op_def_t wm_ops_fused[] = {
    {"FusedConv", "wmap", 1, 2, 4, 1, 1, WM_T(FLOAT), fused_conv_infer,
     fused_conv_run, fused_conv_cost, 0, fused_conv_resolve, fused_conv_define},
    {"FusedGemm", "wmap", 1, 2, 3, 1, 1, WM_T(FLOAT), fused_gemm_infer,
     fused_gemm_run, fused_gemm_cost, 0, fused_gemm_resolve, fused_gemm_define},
    {"FusedMatMul", "wmap", 1, 2, 3, 1, 1, WM_T(FLOAT), fused_matmul_infer,
     fused_matmul_run, fused_matmul_cost, 0, NULL, fused_matmul_define},
    WM_OPS_END,
};
