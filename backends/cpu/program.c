// wmap.Elementwise on the cpu backend: a chain of elementwise steps run
// over blocks of the output, each step a vectorised loop over the block
// into a register row in L1, the inputs read once (contiguous ones in
// place, broadcast ones gathered per block) and the output written once.
// The program's meaning: src/ops/elementwise.c.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

// The steps, in the order of their codes; binary ones first.
static const char *const kSteps[] = {
    "Add",     "Sub",  "Mul", "Div", "Neg",  "Abs",        "Relu",
    "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Erf",
};
enum {
  N_STEPS = sizeof(kSteps) / sizeof(kSteps[0]),
  STEP_BINARY = 4,  // codes below take two operands
  MAX_STEPS = 32,
  MAX_INPUTS = 8,
  MAX_CONSTS = 32,
  BLOCK = 256,  // elements per block: every register row fits L1
};

// An input as the output sees it.
enum { IN_CONTIG = 0, IN_SCALAR = 1, IN_BROADCAST = 2 };

typedef struct prog_plan {
  int code[MAX_STEPS];
  int64_t arg[MAX_STEPS][2];  // operands (src/ops/elementwise.c)
  int32_t n, n_in;
  float consts[MAX_CONSTS];
  int32_t n_consts;
  int32_t rank;                // output rank
  int64_t dims[CPU_MAX_RANK];  // output dims
  size_t count;                // output elements
  int kind[MAX_INPUTS];        // IN_*
  size_t in_count[MAX_INPUTS];
  int64_t str[MAX_INPUTS][CPU_MAX_RANK];  // element strides (0: broadcast)
} prog_plan_t;

// Fills |p| from |op|; false (with *why, *detail) when the cpu cannot.
static bool prog_read(const wm_op_desc *op, prog_plan_t *p, uint32_t *why,
                      const char **detail) {
  memset(p, 0, sizeof(*p));
  const wm_op_attr *ops = cpu_attr(op, "ops"), *args = cpu_attr(op, "args");
  const wm_op_attr *consts = cpu_attr(op, "constants");
  if (!ops || ops->type != 8 || !args || args->type != 7 ||
      (consts && consts->type != 6)) {
    return k_none(why, detail, WM_WHY_ATTR,
                  "ops (strings) and args (ints) are required") != 0;
  }
  if (ops->count == 0 || ops->count > MAX_STEPS ||
      args->count != 2 * ops->count || op->n_in > MAX_INPUTS || op->n_in == 0 ||
      (consts && consts->count > MAX_CONSTS)) {
    return k_none(why, detail, WM_WHY_ATTR,
                  "at most 32 steps, 8 inputs and 32 constants") != 0;
  }
  p->n = (int32_t)ops->count;
  p->n_in = (int32_t)op->n_in;
  p->n_consts = consts ? (int32_t)consts->count : 0;
  for (int32_t c = 0; c < p->n_consts; c++) {
    p->consts[c] = consts->floats[c];
  }
  for (int32_t i = 0; i < p->n; i++) {
    int code = -1;
    for (int c = 0; c < N_STEPS && code < 0; c++) {
      code = strcmp(ops->strings[i], kSteps[c]) == 0 ? c : -1;
    }
    if (code < 0) {
      return k_none(why, detail, WM_WHY_ATTR, "an unknown step") != 0;
    }
    p->code[i] = code;
    for (int k = 0; k < 2; k++) {
      int64_t v = args->ints[2 * i + k];
      bool used = k == 0 || code < STEP_BINARY;
      bool ok = v < 0 ? -1 - v < p->n_consts : v < p->n_in + i;
      if (used && !ok) {
        return k_none(why, detail, WM_WHY_ATTR,
                      "an operand names nothing before it") != 0;
      }
      p->arg[i][k] = used ? v : 0;
    }
  }
  // Dtypes and the broadcast of every input to the output.
  const wm_tensor_desc *y = &op->out[0];
  if (y->dtype != K_FLOAT || !k_dims_known(y) || y->rank > CPU_MAX_RANK) {
    return k_none(why, detail, WM_WHY_SHAPE, "a float output of known shape") !=
           0;
  }
  p->rank = (int32_t)y->rank;
  p->count = 1;
  for (int32_t d = 0; d < p->rank; d++) {
    p->dims[d] = y->dims[d];
    p->count *= (size_t)y->dims[d];
  }
  for (int32_t i = 0; i < p->n_in; i++) {
    const wm_tensor_desc *x = &op->in[i];
    if (x->dtype != K_FLOAT || !k_dims_known(x) || x->rank > y->rank) {
      return k_none(why, detail, WM_WHY_DTYPE, "float inputs of known shape") !=
             0;
    }
    size_t n = 1;
    int64_t s = 1;
    bool same = x->rank == y->rank;
    for (int32_t d = p->rank - 1; d >= 0; d--) {
      int32_t xd = d - (p->rank - (int32_t)x->rank);
      int64_t len = xd >= 0 ? x->dims[xd] : 1;
      if (len != 1 && len != y->dims[d]) {
        return k_none(why, detail, WM_WHY_SHAPE,
                      "an input does not broadcast to the output") != 0;
      }
      same = same && len == y->dims[d];
      p->str[i][d] = len == 1 ? 0 : s;
      s *= len;
      n *= (size_t)len;
    }
    p->in_count[i] = n;
    p->kind[i] = same ? IN_CONTIG : n == 1 ? IN_SCALAR : IN_BROADCAST;
  }
  return true;
}

static uint32_t prog_query(const wm_op_desc *op, uint32_t *why,
                           const char **detail) {
  prog_plan_t *p = malloc(sizeof(*p));
  if (!p) {
    return k_none(why, detail, WM_WHY_OTHER, "out of memory");
  }
  bool ok = prog_read(op, p, why, detail);
  free(p);
  return ok ? WM_SUPPORT_SUPPORTED : WM_SUPPORT_NONE;
}

static wm_error *prog_plan(const wm_op_desc *op, void **out_state) {
  prog_plan_t *p = malloc(sizeof(*p));
  uint32_t why;
  const char *detail = "";
  *out_state = NULL;
  if (!p) {
    return cpu_error(WM_ERR_RESOURCE_EXHAUSTED, "out of memory");
  }
  if (!prog_read(op, p, &why, &detail)) {
    free(p);
    return cpu_error(WM_ERR_INVALID_ARGUMENT, "node \"%s\" (Elementwise): %s",
                     op->name ? op->name : "", detail);
  }
  *out_state = p;
  return NULL;
}

typedef struct prog_job {
  const prog_plan_t *p;
  const float *x[MAX_INPUTS];
  float *y;
} prog_job_t;

// Gathers |n| elements of broadcast input |i| from output element |e0|:
// run by run along the output's last dim (a fill where the input is the
// same along it, a copy where it is contiguous), the index of the dims
// before it carried once per run.
static void gather(const prog_plan_t *p, int32_t i, const float *x, size_t e0,
                   size_t n, float *restrict dst) {
  int64_t idx[CPU_MAX_RANK];
  size_t rest = e0;
  int64_t off = 0;
  for (int32_t d = p->rank - 1; d >= 0; d--) {
    idx[d] = (int64_t)(rest % (size_t)p->dims[d]);
    rest /= (size_t)p->dims[d];
    off += idx[d] * p->str[i][d];
  }
  const int32_t last = p->rank - 1;
  const int64_t len = p->dims[last], step = p->str[i][last];
  for (size_t k = 0; k < n;) {
    size_t run = (size_t)(len - idx[last]);
    run = run < n - k ? run : n - k;
    if (step == 0) {
      const float v = x[off];
      for (size_t t = 0; t < run; t++) {
        dst[k + t] = v;
      }
    } else if (step == 1) {
      memcpy(dst + k, x + off, run * sizeof(float));
    } else {
      for (size_t t = 0; t < run; t++) {
        dst[k + t] = x[off + (int64_t)t * step];
      }
    }
    k += run;
    // To the start of the next run: the last dim back to 0, a carry up.
    off += (int64_t)run * step - len * step;
    idx[last] = 0;
    for (int32_t d = last - 1; d >= 0; d--) {
      off += p->str[i][d];
      if (++idx[d] < p->dims[d]) {
        break;
      }
      idx[d] = 0;
      off -= p->str[i][d] * p->dims[d];
    }
  }
}

// One step over |n| elements.
K_CLONES static void run_step(int code, const float *restrict a,
                              const float *restrict b, float *restrict d,
                              size_t n) {
  switch (code) {
    case 0:
      for (size_t k = 0; k < n; k++) {
        d[k] = a[k] + b[k];
      }
      return;
    case 1:
      for (size_t k = 0; k < n; k++) {
        d[k] = a[k] - b[k];
      }
      return;
    case 2:
      for (size_t k = 0; k < n; k++) {
        d[k] = a[k] * b[k];
      }
      return;
    case 3:
      for (size_t k = 0; k < n; k++) {
        d[k] = a[k] / b[k];
      }
      return;
    case 4:
      for (size_t k = 0; k < n; k++) {
        d[k] = -a[k];
      }
      return;
    case 5:
      for (size_t k = 0; k < n; k++) {
        d[k] = fabsf(a[k]);
      }
      return;
    case 6:
      for (size_t k = 0; k < n; k++) {
        d[k] = a[k] > 0 ? a[k] : 0.0f;
      }
      return;
    case 7:
      for (size_t k = 0; k < n; k++) {
        d[k] = 1.0f / (1.0f + k_expf(-a[k]));
      }
      return;
    case 8:
      for (size_t k = 0; k < n; k++) {
        d[k] = k_tanhf(a[k]);
      }
      return;
    case 9:
      for (size_t k = 0; k < n; k++) {
        d[k] = k_expf(a[k]);
      }
      return;
    case 10:
      for (size_t k = 0; k < n; k++) {
        d[k] = logf(a[k]);
      }
      return;
    case 11:
      for (size_t k = 0; k < n; k++) {
        d[k] = sqrtf(a[k]);
      }
      return;
    case 12:
      for (size_t k = 0; k < n; k++) {
        d[k] = 1.0f / a[k];
      }
      return;
    default:
      for (size_t k = 0; k < n; k++) {
        d[k] = k_erff(a[k]);
      }
      return;
  }
}

// Blocks [begin, end) of the output.
static void prog_blocks(void *ctx, size_t begin, size_t end) {
  const prog_job_t *j = ctx;
  const prog_plan_t *p = j->p;
  float regs[MAX_STEPS][BLOCK];
  float ins[MAX_INPUTS][BLOCK];
  float consts[MAX_CONSTS][BLOCK];
  for (int32_t c = 0; c < p->n_consts; c++) {
    for (size_t k = 0; k < BLOCK; k++) {
      consts[c][k] = p->consts[c];
    }
  }
  for (int32_t i = 0; i < p->n_in; i++) {
    if (p->kind[i] == IN_SCALAR) {
      for (size_t k = 0; k < BLOCK; k++) {
        ins[i][k] = j->x[i][0];
      }
    }
  }
  for (size_t blk = begin; blk < end; blk++) {
    size_t e0 = blk * BLOCK;
    size_t n = p->count - e0 < BLOCK ? p->count - e0 : BLOCK;
    const float *in_at[MAX_INPUTS];
    for (int32_t i = 0; i < p->n_in; i++) {
      if (p->kind[i] == IN_CONTIG) {
        in_at[i] = j->x[i] + e0;
      } else {
        if (p->kind[i] == IN_BROADCAST) {
          gather(p, i, j->x[i], e0, n, ins[i]);
        }
        in_at[i] = ins[i];
      }
    }
    for (int32_t s = 0; s < p->n; s++) {
      const float *op[2];
      for (int k = 0; k < 2; k++) {
        int64_t v = p->arg[s][k];
        op[k] = v < 0         ? consts[-1 - v]
                : v < p->n_in ? in_at[v]
                              : regs[v - p->n_in];
      }
      float *dst = s == p->n - 1 ? j->y + e0 : regs[s];
      run_step(p->code[s], op[0], op[1], dst, n);
    }
  }
}

static wm_error *prog_run(void *state, const cpu_run_t *run) {
  const prog_plan_t *p = state;
  if (run->out[0].count != p->count) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "Elementwise kernel: output does not match the plan");
  }
  prog_job_t j = {.p = p, .y = run->out[0].data};
  for (int32_t i = 0; i < p->n_in; i++) {
    if (run->in[i].count != p->in_count[i]) {
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "Elementwise kernel: input %d does not match the plan",
                       (int)i);
    }
    j.x[i] = run->in[i].data;
  }
  if (p->count == 0) {
    return NULL;
  }
  size_t blocks = (p->count + BLOCK - 1) / BLOCK;
  size_t grain = K_GRAIN / BLOCK / (size_t)(p->n > 4 ? p->n / 4 : 1);
  k_for(run->pool, blocks, grain ? grain : 1, prog_blocks, &j);
  return NULL;
}

const cpu_kernel_t cpu_kernels_program[] = {
    {"Elementwise", 1, WM_IMPL_NATIVE_KERNEL, prog_query, prog_plan, prog_run,
     free, NULL, NULL, NULL},
    {NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};
