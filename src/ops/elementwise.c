// wmap.Elementwise: a chain of elementwise operators run as one pass over
// memory, the target of the graph's eltwise pass. Attributes: `ops`
// (strings: the ONNX operator of each step, in order), `args` (ints, two
// per step: its operands) and `constants` (floats). An operand v names
// input v when v < the number of inputs n, the result of step v - n when
// it is below that (an earlier step), and constant -1 - v when v < 0;
// unary steps ignore their second operand. Inputs broadcast to the output
// (ONNX multidirectional broadcasting); the output is the last step's
// result. Every step computes in float, as the operator it names does.
#include <math.h>
#include <string.h>

#include "ops/ops.h"

// The steps an Elementwise node may take, binary ones first.
static const char *const kSteps[] = {
    "Add",  "Sub", "Mul", "Div",  "Neg",        "Abs", "Relu", "Sigmoid",
    "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Erf", NULL,
};
enum { STEP_BINARY = 4, N_STEPS = 14, MAX_STEPS = 64 };

// A decoded program.
typedef struct program {
  int code[MAX_STEPS];  // index into kSteps
  int64_t arg[MAX_STEPS][2];
  size_t n;                // steps
  const float *constants;  // constants
  size_t n_constants;
} program_t;

// Reads and checks the program of |ctx|'s node.
static wm_status_t read_program(const wm_op_ctx_t *ctx, program_t *p) {
  const wm_attr_t *ops, *args, *consts;
  WM_RETURN_IF_ERROR(wm_op_attr_find(ctx, "ops", WM_ATTR_STRINGS, true, &ops));
  WM_RETURN_IF_ERROR(wm_op_attr_find(ctx, "args", WM_ATTR_INTS, true, &args));
  WM_RETURN_IF_ERROR(
      wm_op_attr_find(ctx, "constants", WM_ATTR_FLOATS, false, &consts));
  memset(p, 0, sizeof(*p));
  p->n = ops->count;
  p->constants = consts ? consts->floats : NULL;
  p->n_constants = consts ? consts->count : 0;
  if (p->n == 0 || p->n > MAX_STEPS) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "ops has %zu steps, want 1 to %d",
                       p->n, MAX_STEPS);
  }
  if (args->count != 2 * p->n) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "args has %zu operands, want 2 per step (%zu)",
                       args->count, 2 * p->n);
  }
  int64_t n_in = ctx->n_in;
  for (size_t i = 0; i < p->n; i++) {
    int code = -1;
    for (int c = 0; c < N_STEPS && code < 0; c++) {
      code = strcmp(ops->strings[i], kSteps[c]) == 0 ? c : -1;
    }
    if (code < 0) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "step %zu: \"%s\" is not an elementwise step", i,
                         ops->strings[i]);
    }
    p->code[i] = code;
    for (int k = 0; k < (code < STEP_BINARY ? 2 : 1); k++) {
      int64_t v = args->ints[2 * i + (size_t)k];
      p->arg[i][k] = v;
      bool ok =
          v < 0 ? (uint64_t)(-1 - v) < p->n_constants : v < n_in + (int64_t)i;
      if (!ok || (v >= 0 && v < n_in && !wm_op_has_input(ctx, (int32_t)v))) {
        return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "step %zu (%s): operand %lld names no input, "
                           "earlier step or constant",
                           i, kSteps[code], (long long)v);
      }
    }
  }
  return NULL;
}

static wm_status_t elementwise_infer(wm_op_ctx_t *ctx) {
  program_t p;
  WM_RETURN_IF_ERROR(read_program(ctx, &p));
  for (int32_t i = 0; i < ctx->n_in; i++) {
    wm_dtype_t d = wm_op_in_dtype(ctx, i);
    if (d != WM_DTYPE_UNDEFINED && d != WM_DTYPE_FLOAT) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "input %d has type %s, want float", (int)i,
                         wm_dtype_name(d));
    }
  }
  return wm_op_infer_broadcast(ctx, WM_DTYPE_FLOAT);
}

// One step on float operands, computed in double and rounded to float as
// the reference kernels of the operators do.
static float step(int code, float fa, float fb) {
  double a = fa, b = fb;
  switch (code) {
    case 0:
      return (float)(a + b);
    case 1:
      return (float)(a - b);
    case 2:
      return (float)(a * b);
    case 3:
      return (float)(a / b);
    case 4:
      return (float)-a;
    case 5:
      return (float)fabs(a);
    case 6:
      return a > 0 ? fa : 0.0f;
    case 7:
      return (float)(1.0 / (1.0 + exp(-a)));
    case 8:
      return (float)tanh(a);
    case 9:
      return (float)exp(a);
    case 10:
      return (float)log(a);
    case 11:
      return (float)sqrt(a);
    case 12:
      return (float)(1.0 / a);
    default:
      return (float)erf(a);
  }
}

static wm_status_t elementwise_run(wm_op_ctx_t *ctx) {
  WM_RETURN_IF_ERROR(elementwise_infer(ctx));
  program_t p;
  WM_RETURN_IF_ERROR(read_program(ctx, &p));
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;
  }
  int64_t strides[8][WM_MAX_RANK];
  int32_t n_in = ctx->n_in < 8 ? ctx->n_in : 8;
  if (ctx->n_in > 8) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "%d inputs, at most 8",
                       (int)ctx->n_in);
  }
  for (int32_t i = 0; i < n_in; i++) {
    wm_broadcast_strides(&ctx->in[i]->shape, &y->shape, strides[i]);
  }
  float r[MAX_STEPS];
  float *out = y->data;
  for (size_t e = 0; e < y->count; e++) {
    for (size_t s = 0; s < p.n; s++) {
      float v[2] = {0.0f, 0.0f};
      for (int k = 0; k < (p.code[s] < STEP_BINARY ? 2 : 1); k++) {
        int64_t a = p.arg[s][k];
        if (a < 0) {
          v[k] = p.constants[-1 - a];
        } else if (a < n_in) {
          const float *x = ctx->in[a]->data;
          v[k] = x[wm_broadcast_offset(&y->shape, strides[a], e)];
        } else {
          v[k] = r[a - n_in];
        }
      }
      r[s] = step(p.code[s], v[0], v[1]);
    }
    out[e] = r[p.n - 1];
  }
  return NULL;
}

// Cost: one FLOP per step and element, transcendental steps counted as
// such.
static void elementwise_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  memset(out, 0, sizeof(*out));
  program_t p;
  wm_status_t s = read_program(ctx, &p);
  size_t n = wm_op_out_numel(ctx);
  if (s) {
    wm_status_free(s);
    return;
  }
  for (size_t i = 0; i < p.n; i++) {
    out->flops += (double)n;
    bool tr = (p.code[i] >= 7 && p.code[i] <= 10) || p.code[i] == 13;
    out->transcendentals += tr ? (double)n : 0;
  }
}

// The program as one compute: each step an operation of the body, the
// inputs broadcast to the output.
static wm_status_t elementwise_define(const wm_op_ctx_t *ctx,
                                      wm_gen_compute_t *out) {
  static const wm_gen_op_t ops[N_STEPS] = {
      WM_GEN_ADD, WM_GEN_SUB,  WM_GEN_MUL,     WM_GEN_DIV,  WM_GEN_NEG,
      WM_GEN_ABS, WM_GEN_RELU, WM_GEN_SIGMOID, WM_GEN_TANH, WM_GEN_EXP,
      WM_GEN_LOG, WM_GEN_SQRT, WM_GEN_DIV,     WM_GEN_ERF,
  };
  program_t p;
  WM_RETURN_IF_ERROR(read_program(ctx, &p));
  if (2 * p.n + p.n_constants + (size_t)ctx->n_in > WM_GEN_MAX_EXPRS ||
      p.n_constants > MAX_STEPS) {
    return WM_OP_ERROR(ctx, UNIMPLEMENTED,
                       "no compute definition: %zu steps and %zu constants "
                       "are more than a compute holds",
                       p.n, p.n_constants);
  }
  int32_t loads[WM_GEN_MAX_TENSORS];
  WM_RETURN_IF_ERROR(wm_op_define_inputs(ctx, out, loads));
  int32_t consts[MAX_STEPS], steps[MAX_STEPS];
  for (size_t k = 0; k < p.n_constants; k++) {
    WM_RETURN_IF_ERROR(wm_gen_const(out, p.constants[k], &consts[k]));
  }
  for (size_t s = 0; s < p.n; s++) {
    int32_t v[2] = {-1, -1};
    for (int k = 0; k < (p.code[s] < STEP_BINARY ? 2 : 1); k++) {
      int64_t a = p.arg[s][k];
      v[k] = a < 0           ? consts[-1 - a]
             : a < ctx->n_in ? loads[a]
                             : steps[a - ctx->n_in];
    }
    if (p.code[s] == 12) {  // Reciprocal: 1 / x
      int32_t one;
      WM_RETURN_IF_ERROR(wm_gen_const(out, 1.0f, &one));
      WM_RETURN_IF_ERROR(wm_gen_binary(out, WM_GEN_DIV, one, v[0], &steps[s]));
    } else if (p.code[s] < STEP_BINARY) {
      WM_RETURN_IF_ERROR(
          wm_gen_binary(out, ops[p.code[s]], v[0], v[1], &steps[s]));
    } else {
      WM_RETURN_IF_ERROR(wm_gen_unary(out, ops[p.code[s]], v[0], &steps[s]));
    }
  }
  return wm_gen_finish(out, steps[p.n - 1]);
}

const wm_op_def_t wm_ops_elementwise[] = {
    {"Elementwise", "wmap", 1, 1, 8, 1, 1, WM_T(FLOAT), elementwise_infer,
     elementwise_run, elementwise_cost, 0, NULL, elementwise_define},
    WM_OPS_END,
};
