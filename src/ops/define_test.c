// Every operator's compute definition against its reference kernel: random
// float32 instances (ranks 0 to 4, sizes 1 and odd, broadcast inputs) run
// on the reference kernel and as the kernel the generator prints from the
// definition, built with the system compiler; every element must agree.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_fixture.h"
#include "wm_test.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static int32_t pick(int32_t n) {
  return wm_test_pick(&rng, n);
}

enum { PER_OP = 6, PER_CONTRACTION = 24, MAX_CASES = 1024 };

// One instance: its compute, input data (float) and the reference output.
typedef struct inst {
  wm_gen_compute_t c;
  int64_t grid;  // the parallel range of its kernel
  int32_t n_in;
  float *in[WM_GEN_MAX_TENSORS];
  float *want;
  size_t count;
  const char *op;
} inst_t;

// The attributes of |def|'s node that its definition reads: for
// wmap.Elementwise a random program over its |n_in| inputs and two
// constants.
static wm_status_t random_attrs(const wm_op_def_t *def, int32_t n_in,
                                wm_op_fixture_t *f) {
  if (strcmp(def->name, "Elementwise") != 0) {
    return NULL;
  }
  static const char *const steps[] = {
      "Add",     "Sub",  "Mul", "Div", "Neg",  "Abs",        "Relu",
      "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Erf"};
  const char *ops[6];
  int64_t args[12];
  int32_t n = 1 + pick(6);
  for (int32_t i = 0; i < n; i++) {
    ops[i] = steps[pick(14)];
    for (int k = 0; k < 2; k++) {
      // The last step's first operand is the step before, so every step
      // counts; the rest any input, earlier step or constant.
      int32_t v = pick(n_in + i + 2) - 2;
      args[2 * i + k] = i > 0 && k == 0 ? n_in + i - 1 : v;
    }
  }
  const float consts[2] = {0.5f, -1.25f};
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_strings(f, "ops", ops, (size_t)n));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_ints(f, "args", args, (size_t)(2 * n)));
  return wm_graph_add_attr_floats(f->graph, f->node, "constants", consts, 2);
}

// The inputs of an instance: shapes (float data drawn at random), or an
// int64 vector of values (axes).
typedef struct in_spec {
  int32_t n;
  int32_t rank[5];
  int64_t dims[5][WM_MAX_RANK];
  bool i64[5];
  int64_t vals[5][WM_MAX_RANK];
  int64_t int_attr[4];  // Gemm: transA, transB; Reduce*: keepdims
  int32_t n_int_attr;
  const char *int_names[4];
  float float_attr[2];  // Gemm: alpha, beta
  int32_t n_float_attr;
  const char *float_names[2];
  bool axes_attr;  // Reduce* before axes became an input
  int32_t n_axes;
  int64_t axes[WM_MAX_RANK];
  const char *str_name;  // a string attribute (DepthToSpace's mode)
  const char *str_value;
  const char *act;  // Fused*: the activation, its parameters
  float act_params[2];
  int32_t n_act_params;
  int32_t n_ints_attr;  // Conv: strides, dilations, pads
  const char *ints_names[3];
  int64_t ints_attr[3][2 * WM_MAX_RANK];
  int32_t ints_n[3];
} in_spec_t;

// Elementwise: input 0 sets the shape, the others broadcast to it.
static void spec_broadcast(const wm_op_def_t *def, in_spec_t *sp) {
  int32_t rank = pick(5), n_in = def->min_inputs;
  if (def->max_inputs < 0 || def->max_inputs > def->min_inputs) {
    n_in = def->min_inputs + pick(3);
  }
  sp->n = n_in > 4 ? 4 : n_in;
  int64_t dims[WM_MAX_RANK];
  for (int32_t d = 0; d < rank; d++) {
    dims[d] = 1 + pick(d == rank - 1 ? 37 : 5);
  }
  for (int32_t i = 0; i < sp->n; i++) {
    int32_t r = i == 0 ? rank : pick(rank + 1);
    sp->rank[i] = r;
    for (int32_t d = 0; d < r; d++) {
      sp->dims[i][d] = i > 0 && pick(3) == 0 ? 1 : dims[rank - r + d];
    }
  }
}

// Gemm: A and B as transA and transB say, C absent or broadcast, alpha
// and beta.
static void spec_gemm(in_spec_t *sp) {
  int64_t m = 1 + pick(pick(3) ? 40 : 90), n = 1 + pick(pick(3) ? 40 : 90),
          k = 1 + pick(pick(3) ? 40 : 300);
  bool ta = pick(2), tb = pick(2);
  sp->n = 2 + pick(2);
  sp->rank[0] = sp->rank[1] = 2;
  sp->dims[0][0] = ta ? k : m;
  sp->dims[0][1] = ta ? m : k;
  sp->dims[1][0] = tb ? n : k;
  sp->dims[1][1] = tb ? k : n;
  int32_t c = pick(4);
  sp->rank[2] = c == 0 ? 1 : 2;
  sp->dims[2][0] = c == 0 ? n : c == 1 ? 1 : m;
  sp->dims[2][1] = c == 3 ? 1 : n;
  sp->int_names[0] = "transA";
  sp->int_names[1] = "transB";
  sp->int_attr[0] = ta;
  sp->int_attr[1] = tb;
  sp->n_int_attr = 2;
  static const float scales[] = {1.0f, 0.5f, -2.0f};
  sp->float_names[0] = "alpha";
  sp->float_names[1] = "beta";
  sp->float_attr[0] = scales[pick(3)];
  sp->float_attr[1] = scales[pick(3)];
  sp->n_float_attr = 2;
}

// MatMul: batch dims broadcast (some 1), a 1-D operand now and then.
static void spec_matmul(in_spec_t *sp) {
  int64_t m = 1 + pick(40), n = 1 + pick(40), k = 1 + pick(pick(3) ? 40 : 200);
  int32_t nb = pick(3);
  int64_t batch[2] = {1 + pick(3), 1 + pick(3)};
  sp->n = 2;
  for (int32_t t = 0; t < 2; t++) {
    if (pick(6) == 0) {  // 1-D
      sp->rank[t] = 1;
      sp->dims[t][0] = k;
      continue;
    }
    int32_t rb = pick(nb + 1), r = 0;
    for (int32_t d = nb - rb; d < nb; d++) {
      sp->dims[t][r++] = pick(3) == 0 ? 1 : batch[d];
    }
    sp->dims[t][r++] = t == 0 ? m : k;
    sp->dims[t][r++] = t == 0 ? k : n;
    sp->rank[t] = r;
  }
}

// Reduce*: rank 1 to 4, a random set of axes (sometimes none: all),
// keepdims; the axes an input from opset |axes_input| on.
static void spec_reduce(in_spec_t *sp, int64_t opset, int64_t axes_input) {
  int32_t rank = 1 + pick(4);
  sp->n = 1;
  sp->rank[0] = rank;
  for (int32_t d = 0; d < rank; d++) {
    sp->dims[0][d] = 1 + pick(d == rank - 1 ? 37 : 6);
  }
  int32_t n_axes = 0;
  int64_t axes[WM_MAX_RANK];
  for (int32_t d = 0; d < rank; d++) {
    if (pick(2)) {
      axes[n_axes++] = pick(2) ? d : d - rank;  // negative ones too
    }
  }
  sp->int_names[0] = "keepdims";
  sp->int_attr[0] = pick(2);
  sp->n_int_attr = 1;
  if (n_axes == 0) {
    return;
  }
  if (opset >= axes_input) {
    sp->n = 2;
    sp->i64[1] = true;
    sp->rank[1] = 1;
    sp->dims[1][0] = n_axes;
    memcpy(sp->vals[1], axes, (size_t)n_axes * sizeof(int64_t));
  } else {
    sp->axes_attr = true;
    sp->n_axes = n_axes;
    memcpy(sp->axes, axes, (size_t)n_axes * sizeof(int64_t));
  }
}

// Conv: 1 to 3 spatial dims, groups (depthwise now and then), strides,
// dilations, pads, a bias now and then.
static void spec_conv(in_spec_t *sp) {
  int32_t nsp = 1 + pick(pick(4) ? 2 : 3);
  int64_t g = pick(3) == 0 ? 1 + pick(4) : 1;
  int64_t cg = 1 + pick(5), mg = pick(4) == 0 ? 1 : 1 + pick(12);
  if (pick(5) == 0) {  // depthwise
    g = 2 + pick(8);
    cg = mg = 1;
  }
  int64_t n = 1 + pick(2);
  sp->n = 2 + pick(2);
  sp->rank[0] = sp->rank[1] = 2 + nsp;
  sp->dims[0][0] = n;
  sp->dims[0][1] = g * cg;
  sp->dims[1][0] = g * mg;
  sp->dims[1][1] = cg;
  sp->rank[2] = 1;
  sp->dims[2][0] = g * mg;
  for (int32_t i = 0; i < nsp; i++) {
    int64_t k = 1 + pick(3), st = 1 + pick(2), dl = 1 + pick(2);
    int64_t pb = pick(3) ? pick(k) : 0, pe = pick(3) ? pick(k) : 0;
    int64_t in = dl * (k - 1) + 1 + pick(nsp == 1 ? 30 : 9);
    sp->dims[0][2 + i] = in;
    sp->dims[1][2 + i] = k;
    sp->ints_attr[0][i] = st;
    sp->ints_attr[1][i] = dl;
    sp->ints_attr[2][i] = pb;
    sp->ints_attr[2][nsp + i] = pe;
  }
  sp->ints_names[0] = "strides";
  sp->ints_names[1] = "dilations";
  sp->ints_names[2] = "pads";
  sp->ints_n[0] = sp->ints_n[1] = nsp;
  sp->ints_n[2] = 2 * nsp;
  sp->n_ints_attr = 3;
  sp->int_names[0] = "group";
  sp->int_attr[0] = g;
  sp->n_int_attr = 1;
}

// Fused*: the base's instance, its residual Z (or FusedMatMul's bias) now
// and then, a random activation.
static void spec_fused(const char *name, in_spec_t *sp) {
  int32_t extra;
  if (strcmp(name, "FusedConv") == 0) {
    spec_conv(sp);
    sp->n = 3;  // the bias, then Z
    extra = 3;
    int32_t nsp = sp->rank[0] - 2;
    sp->rank[3] = sp->rank[0];
    sp->dims[3][0] = sp->dims[0][0];
    sp->dims[3][1] = sp->dims[1][0];
    for (int32_t i = 0; i < nsp; i++) {
      int64_t k = sp->dims[1][2 + i], st = sp->ints_attr[0][i],
              dl = sp->ints_attr[1][i];
      int64_t span = sp->dims[0][2 + i] + sp->ints_attr[2][i] +
                     sp->ints_attr[2][nsp + i] - dl * (k - 1) - 1;
      sp->dims[3][2 + i] = span / st + 1;
    }
  } else if (strcmp(name, "FusedGemm") == 0) {
    spec_gemm(sp);
    sp->n = 2;  // Z replaces C (input 2 of both is the sum's extra)
    extra = 2;
    bool ta = sp->int_attr[0], tb = sp->int_attr[1];
    sp->rank[2] = 2;
    sp->dims[2][0] = sp->dims[0][ta ? 1 : 0];
    sp->dims[2][1] = sp->dims[1][tb ? 0 : 1];
  } else {
    do {
      spec_matmul(sp);
    } while (sp->rank[1] < 2);
    extra = 2;
    sp->rank[2] = 1;
    sp->dims[2][0] = sp->dims[1][sp->rank[1] - 1];
  }
  if (pick(2)) {
    sp->n = extra + 1;
  }
  static const char *const acts[] = {
      "",          "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid",
      "HardSwish", "Tanh", "Silu", "Gelu",      "GeluTanh"};
  int32_t a = pick(11);
  sp->act = acts[a];
  if (a == 2) {
    sp->act_params[0] = -1.0f;
    sp->act_params[1] = 1.5f;
    sp->n_act_params = 2;
  } else if (a == 3) {
    sp->act_params[0] = 0.2f;
    sp->n_act_params = 1;
  }
}

// A random shape of rank |lo| to |hi| (dims 1 to 6, the last to 20).
static void random_shape(in_spec_t *sp, int32_t i, int32_t lo, int32_t hi) {
  sp->rank[i] = lo + pick(hi - lo + 1);
  for (int32_t d = 0; d < sp->rank[i]; d++) {
    sp->dims[i][d] = 1 + pick(d == sp->rank[i] - 1 ? 20 : 6);
  }
}

// Data movement: the shapes and lists each operator reads.
static bool spec_move(const char *name, in_spec_t *sp) {
  static const char *const kMoves[] = {
      "Reshape",   "Expand", "Flatten", "Squeeze",      "Unsqueeze",
      "Transpose", "Concat", "Pad",     "DepthToSpace", "SpaceToDepth"};
  bool move = false;
  for (size_t i = 0; i < sizeof(kMoves) / sizeof(kMoves[0]); i++) {
    move |= strcmp(name, kMoves[i]) == 0;
  }
  if (!move) {
    return false;
  }
  sp->n = 1;
  random_shape(sp, 0, 1, 4);
  int32_t r = sp->rank[0];
  if (strcmp(name, "Reshape") == 0 || strcmp(name, "Expand") == 0) {
    sp->n = 2;
    sp->i64[1] = true;
    sp->rank[1] = 1;
    if (name[0] == 'R') {  // the same elements, the dims merged
      sp->dims[1][0] = 2;
      sp->vals[1][0] = sp->dims[0][0];
      sp->vals[1][1] = -1;
    } else {  // a leading dim added, the 1s broadcast
      sp->dims[1][0] = r + 1;
      sp->vals[1][0] = 1 + pick(3);
      for (int32_t d = 0; d < r; d++) {
        sp->vals[1][1 + d] = sp->dims[0][d];
        sp->dims[0][d] = pick(3) == 0 ? 1 : sp->dims[0][d];
      }
    }
  } else if (strcmp(name, "Flatten") == 0) {
    sp->int_names[0] = "axis";
    sp->int_attr[0] = pick(r + 1);
    sp->n_int_attr = 1;
  } else if (strcmp(name, "Squeeze") == 0 || strcmp(name, "Unsqueeze") == 0) {
    sp->n = 2;
    sp->i64[1] = true;
    sp->rank[1] = 1;
    sp->dims[1][0] = 1;
    if (name[0] == 'S') {
      sp->dims[0][0] = 1;
      sp->vals[1][0] = 0;
    } else {
      sp->vals[1][0] = pick(r + 1);
    }
  } else if (strcmp(name, "Transpose") == 0) {
    int64_t perm[WM_MAX_RANK];
    for (int32_t d = 0; d < r; d++) {
      perm[d] = d;
    }
    for (int32_t d = r - 1; d > 0; d--) {
      int32_t e = pick(d + 1);
      int64_t t = perm[d];
      perm[d] = perm[e];
      perm[e] = t;
    }
    sp->ints_names[0] = "perm";
    memcpy(sp->ints_attr[0], perm, sizeof(perm));
    sp->ints_n[0] = r;
    sp->n_ints_attr = 1;
  } else if (strcmp(name, "Concat") == 0) {
    int32_t axis = pick(r);
    sp->n = 2 + pick(3);
    for (int32_t i = 1; i < sp->n; i++) {
      sp->rank[i] = r;
      memcpy(sp->dims[i], sp->dims[0], sizeof(sp->dims[0]));
      sp->dims[i][axis] = 1 + pick(5);
    }
    sp->int_names[0] = "axis";
    sp->int_attr[0] = pick(2) ? axis : axis - r;
    sp->n_int_attr = 1;
  } else if (strcmp(name, "Pad") == 0) {
    sp->n = 3;
    sp->i64[1] = true;
    sp->rank[1] = 1;
    sp->dims[1][0] = 2 * r;
    for (int32_t d = 0; d < 2 * r; d++) {
      sp->vals[1][d] = pick(3) - (pick(4) == 0);  // some crop
    }
    sp->rank[2] = 0;  // constant_value
  } else if (strcmp(name, "DepthToSpace") == 0 ||
             strcmp(name, "SpaceToDepth") == 0) {
    int64_t b = 1 + pick(3);
    sp->rank[0] = 4;
    sp->dims[0][0] = 1 + pick(2);
    sp->dims[0][1] = (1 + pick(3)) * (name[0] == 'D' ? b * b : 1);
    sp->dims[0][2] = (1 + pick(4)) * (name[0] == 'S' ? b : 1);
    sp->dims[0][3] = (1 + pick(4)) * (name[0] == 'S' ? b : 1);
    sp->int_names[0] = "blocksize";
    sp->int_attr[0] = b;
    sp->n_int_attr = 1;
    if (name[0] == 'D' && pick(2)) {
      sp->act = NULL;
      sp->str_name = "mode";
      sp->str_value = "CRD";
    }
  } else {
    return false;
  }
  return true;
}

// Pools, BatchNormalization, LRN and Slice: their windows, parameters
// and lists.
static bool spec_nn(const char *name, in_spec_t *sp) {
  bool pool = strcmp(name, "MaxPool") == 0 ||
              strcmp(name, "AveragePool") == 0 || strcmp(name, "LpPool") == 0;
  bool global = strncmp(name, "Global", 6) == 0;
  if (!pool && !global && strcmp(name, "BatchNormalization") != 0 &&
      strcmp(name, "LRN") != 0 && strcmp(name, "Slice") != 0) {
    return false;
  }
  sp->n = 1;
  random_shape(sp, 0, 3, 4);
  int32_t r = sp->rank[0], nsp = r - 2;
  if (pool) {
    for (int32_t i = 0; i < nsp; i++) {
      int64_t k = 1 + pick(3), st = 1 + pick(2), pb = pick(k), pe = pick(k);
      sp->dims[0][2 + i] = k + pick(8);
      sp->ints_attr[0][i] = k;
      sp->ints_attr[1][i] = st;
      sp->ints_attr[2][i] = pb;
      sp->ints_attr[2][nsp + i] = pe;
    }
    sp->ints_names[0] = "kernel_shape";
    sp->ints_names[1] = "strides";
    sp->ints_names[2] = "pads";
    sp->ints_n[0] = sp->ints_n[1] = nsp;
    sp->ints_n[2] = 2 * nsp;
    sp->n_ints_attr = 3;
    if (name[0] == 'A') {  // the divisor counts the padding
      sp->int_names[0] = "count_include_pad";
      sp->int_attr[0] = 1;
      sp->n_int_attr = 1;
    }
  } else if (name[0] == 'B') {
    sp->n = 5;
    for (int32_t i = 1; i < 5; i++) {
      sp->rank[i] = 1;
      sp->dims[i][0] = sp->dims[0][1];
    }
  } else if (name[0] == 'L') {
    sp->int_names[0] = "size";
    sp->int_attr[0] = 1 + pick(5);
    sp->n_int_attr = 1;
  } else if (name[0] == 'S') {
    sp->n = 5;  // starts, ends, axes, steps on every dim
    for (int32_t i = 1; i < 5; i++) {
      sp->i64[i] = true;
      sp->rank[i] = 1;
      sp->dims[i][0] = r;
    }
    for (int32_t d = 0; d < r; d++) {
      int64_t len = sp->dims[0][d];
      sp->vals[1][d] = pick((int32_t)len + 2) - 1;
      sp->vals[2][d] = pick(2) ? len : pick((int32_t)len + 3) - 1;
      sp->vals[3][d] = d;
      sp->vals[4][d] = pick(3) == 0 ? -1 - pick(2) : 1 + pick(2);
    }
  }
  return true;
}

// Builds instance |k| of |def| into |out|; false (nothing kept) when the
// random shapes do not make a valid instance.
static bool make_inst(const wm_op_def_t *def, int k, inst_t *out) {
  memset(out, 0, sizeof(*out));
  int64_t opset = def->since_version > 13 ? def->since_version : 13;
  in_spec_t sp;
  memset(&sp, 0, sizeof(sp));
  if (strcmp(def->name, "Gemm") == 0) {
    spec_gemm(&sp);
  } else if (strcmp(def->name, "MatMul") == 0) {
    spec_matmul(&sp);
  } else if (strcmp(def->name, "Conv") == 0) {
    spec_conv(&sp);
  } else if (spec_nn(def->name, &sp)) {
    // set
  } else if (spec_move(def->name, &sp)) {
    // set
  } else if (strcmp(def->name, "Mod") == 0) {
    spec_broadcast(def, &sp);
    sp.int_names[0] = "fmod";
    sp.int_attr[0] = 1;
    sp.n_int_attr = 1;
  } else if (strcmp(def->name, "Clip") == 0) {
    spec_broadcast(def, &sp);  // then min and max scalars (or absent)
    sp.n = 1 + pick(3);
    sp.rank[1] = sp.rank[2] = 0;
  } else if (strncmp(def->name, "Fused", 5) == 0) {
    spec_fused(def->name, &sp);
  } else if (strncmp(def->name, "Reduce", 6) == 0) {
    spec_reduce(&sp, opset, strcmp(def->name, "ReduceSum") == 0 ? 13 : 18);
  } else {
    spec_broadcast(def, &sp);
  }
  int32_t n_in = sp.n;
  wm_op_fixture_t f;
  if (wm_op_fixture_init(&f, opset)) {
    return false;
  }
  const char *names[5] = {"a", "b", "c", "d", "e"};
  bool ok = true;
  for (int32_t i = 0; ok && i < n_in; i++) {
    int32_t r = sp.rank[i];
    const int64_t *id = sp.dims[i];
    size_t n = 1;
    for (int32_t d = 0; d < r; d++) {
      n *= (size_t)id[d];
    }
    if (sp.i64[i]) {
      wm_status_t s = wm_op_fixture_add_const_i64(&f, names[i], WM_DTYPE_INT64,
                                                  r, id, sp.vals[i]);
      ok = !s;
      wm_status_free(s);
      continue;
    }
    double *vals = malloc(n * sizeof(double));
    ok = vals != NULL;
    for (size_t e = 0; ok && e < n; e++) {
      vals[e] = (double)(pick(4001) - 2000) / 800.0;
    }
    wm_status_t s =
        ok ? wm_op_fixture_add_const(&f, names[i], WM_DTYPE_FLOAT, r, id, vals)
           : NULL;
    ok = ok && !s;
    wm_status_free(s);
    free(vals);
  }
  static const char *const outs[1] = {"y0"};
  wm_status_t s =
      ok && def->domain[0]
          ? wm_graph_set_opset(f.graph, def->domain, def->since_version)
          : NULL;
  s = ok && !s ? wm_graph_add_node(f.graph, def->name, def->domain, "n", names,
                                   n_in, outs, 1, &f.node)
               : s;
  s = ok && !s ? random_attrs(def, n_in, &f) : s;
  for (int32_t i = 0; ok && !s && i < sp.n_int_attr; i++) {
    s = wm_op_fixture_attr_int(&f, sp.int_names[i], sp.int_attr[i]);
  }
  for (int32_t i = 0; ok && !s && i < sp.n_float_attr; i++) {
    s = wm_op_fixture_attr_float(&f, sp.float_names[i], sp.float_attr[i]);
  }
  if (ok && !s && sp.str_name) {
    s = wm_op_fixture_attr_string(&f, sp.str_name, sp.str_value);
  }
  if (ok && !s && sp.act) {
    s = wm_op_fixture_attr_string(&f, "activation", sp.act);
  }
  if (ok && !s && sp.n_act_params) {
    s = wm_graph_add_attr_floats(f.graph, f.node, "activation_params",
                                 sp.act_params, (size_t)sp.n_act_params);
  }
  for (int32_t i = 0; ok && !s && i < sp.n_ints_attr; i++) {
    s = wm_op_fixture_attr_ints(&f, sp.ints_names[i], sp.ints_attr[i],
                                (size_t)sp.ints_n[i]);
  }
  if (ok && !s && sp.axes_attr) {
    s = wm_op_fixture_attr_ints(&f, "axes", sp.axes, (size_t)sp.n_axes);
  }
  ok = ok && !s;
  wm_status_free(s);
  s = ok ? wm_op_fixture_run(&f) : NULL;
  ok = ok && !s;
  wm_status_free(s);
  s = ok ? wm_op_fixture_define(&f, &out->c) : NULL;
  ok = ok && !s;
  if (s) {
    printf("  %s: %s\n", def->name, wm_status_message(s));
  }
  wm_status_free(s);
  if (ok) {
    snprintf(out->c.name, sizeof(out->c.name), "k%d", k);
    out->op = def->name;
    out->n_in = n_in;
    out->count = f.out[0]->count;
    out->want = malloc((out->count + 1) * sizeof(float));
    ok = out->want != NULL;
    for (size_t e = 0; ok && e < out->count; e++) {
      out->want[e] = ((const float *)f.out[0]->data)[e];
    }
    for (int32_t i = 0; ok && i < n_in; i++) {
      const wm_tensor_t *t =
          f.graph->values[f.graph->nodes[f.node].inputs[i]].initializer;
      out->in[i] = malloc((t->count + 1) * sizeof(float));
      ok = out->in[i] != NULL;
      if (ok && t->count && t->dtype == WM_DTYPE_FLOAT) {
        memcpy(out->in[i], t->data, t->count * sizeof(float));
      }
    }
  }
  wm_op_fixture_deinit(&f);
  return ok;
}

static void free_inst(inst_t *in) {
  for (int32_t i = 0; i < WM_GEN_MAX_TENSORS; i++) {
    free(in->in[i]);
  }
  free(in->want);
}

// Whether |got| is the reference's |want|: within float rounding, and for
// a reduction over |terms| terms (inputs within 2.5, products within 6.25)
// within the rounding of a float sum of that many.
static bool agree(float got, float want, double terms) {
  if (want != want || got != got) {
    return want != want && got != got;
  }
  if (isinf(want) || isinf(got)) {
    return got == want;
  }
  double tol = 1e-5 * fabs(want) + 1e-6 + (terms > 1 ? 1e-6 * terms * 25 : 0);
  return fabs((double)got - (double)want) <= tol;
}

// Whether |def| is defined for instances with inputs other than float32
// only.
static bool non_float_inputs(const wm_op_def_t *def) {
  static const char *const names[] = {"Cast", "CastLike", "Where", "Gather"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    if (strcmp(def->name, names[i]) == 0) {
      return true;
    }
  }
  return false;
}

WM_TEST(definitions_agree_with_the_reference_kernels) {
  if (!wm_cc_available()) {
    wm_test_skip("no system C compiler (cc) to build generated kernels");
    return;
  }
  static inst_t insts[MAX_CASES];
  int n = 0, n_defs = 0, other_schedules = 0, rows_jammed = 0;
  wm_strbuf_t src;
  wm_strbuf_init(&src);
  for (size_t i = 0; i < wm_ops_count(); i++) {
    const wm_op_def_t *def = wm_ops_at(i);
    // The instances here have float32 inputs and one stage: the
    // definitions reading integers or bools (Cast, Where, Gather) and
    // those in stages are checked against the reference by the
    // conformance gates (conform.cpu_generated, conform.device_tier_only).
    if (!def->define || non_float_inputs(def)) {
      continue;
    }
    n_defs++;
    int made = 0;
    // Contractions have the most shapes (and schedules) to cover.
    bool contraction =
        strcmp(def->name, "Conv") == 0 || strcmp(def->name, "Gemm") == 0 ||
        strcmp(def->name, "MatMul") == 0 || strncmp(def->name, "Fused", 5) == 0;
    int want = contraction ? PER_CONTRACTION : PER_OP;
    for (int k = 0; k < want * 3 && made < want && n < MAX_CASES; k++) {
      if (!make_inst(def, n, &insts[n])) {
        free_inst(&insts[n]);
        continue;
      }
      // Half under the default schedule, half under one of the tuner's
      // candidates for a vector width drawn at random: every definition
      // is checked across schedules.
      wm_gen_schedule_t s = wm_gen_default_schedule(&insts[n].c, 64);
      if (made % 2) {
        wm_gen_schedule_t cand[48];
        int32_t nc = wm_gen_candidates(&insts[n].c, 16 << pick(3), cand, 48);
        s = nc > 0 ? cand[pick(nc)] : s;
        other_schedules++;
      } else if (made % 4 == 2 && insts[n].c.n_reduce > 0) {
        // The loop nest with rows jammed, as a CPU device of work items
        // runs it (lowering keeps the rows where they apply).
        // (Drawn without the generator: the instances stay those drawn.)
        s = wm_gen_nest_schedule(&insts[n].c, 64 >> (made / 4 % 3));
        s.rows = 2 + made / 4 % 3;
      }
      wm_gen_nest_t nest;
      WM_CHECK_OK(wm_gen_lower(&insts[n].c, &s, &nest));
      rows_jammed += nest.s.rows > 1;
      insts[n].grid = nest.grid;
      WM_CHECK_OK(wm_gen_print(&nest, WM_GEN_C, &src));
      made++;
      n++;
    }
    if (made < want) {
      printf("  %s: %d instances made\n", def->name, made);
    }
    WM_CHECK(made == want);
  }
  char dir[] = "/tmp/wmap_define_XXXXXX";
  WM_CHECK(mkdtemp(dir) != NULL);
  wm_cc_lib_t *lib = NULL;
  WM_CHECK_OK(wm_cc_build(wm_strbuf_str(&src), dir, &lib, NULL));
  int bad = 0;
  for (int k = 0; lib && k < n; k++) {
    void *fn = wm_cc_symbol(lib, insts[k].c.name);
    WM_CHECK(fn != NULL);
    float *y = calloc(insts[k].count + 1, sizeof(float));
    WM_CHECK(y != NULL);
    if (!fn || !y) {
      free(y);
      continue;
    }
    int64_t end = insts[k].grid;
    // The compute's tensors are the operands they name.
    void *args[WM_GEN_MAX_TENSORS] = {y};
    for (int32_t t = 1; t < insts[k].c.n_tensors; t++) {
      args[t] = insts[k].in[insts[k].c.tensors[t].operand];
    }
    wm_gen_call(fn, args, 0, end);
    for (size_t e = 0; e < insts[k].count; e++) {
      double terms = 1;
      for (int32_t a = wm_gen_spatial(&insts[k].c); a < insts[k].c.n_axes;
           a++) {
        terms *= (double)insts[k].c.extents[a];
      }
      if (!agree(y[e], insts[k].want[e], terms)) {
        printf("  %s (%s) element %zu: generated %.9g, reference %.9g\n",
               insts[k].op, insts[k].c.name, e, (double)y[e],
               (double)insts[k].want[e]);
        bad++;
        break;
      }
    }
    free(y);
  }
  // ONNX operator types (the default domain, each once) with a definition.
  int onnx_types = 0;
  for (size_t i = 0; i < wm_ops_count(); i++) {
    const wm_op_def_t *def = wm_ops_at(i);
    bool first = (def->define || def->define_program) && def->domain[0] == '\0';
    for (size_t j = 0; first && j < i; j++) {
      const wm_op_def_t *e = wm_ops_at(j);
      first = !((e->define || e->define_program) && e->domain[0] == '\0' &&
                strcmp(e->name, def->name) == 0);
    }
    onnx_types += first;
  }
  printf(
      "  %d definitions (%d ONNX operator types), %d instances (%d under "
      "a tuning candidate's schedule, %d with rows jammed), %d wrong\n",
      n_defs, onnx_types, n, other_schedules, rows_jammed, bad);
  WM_CHECK(rows_jammed > 0);
  WM_CHECK(onnx_types >= 80);
  WM_CHECK_INT_EQ(bad, 0);
  wm_cc_close(lib);
  wm_strbuf_deinit(&src);
  for (int k = 0; k < n; k++) {
    free_inst(&insts[k]);
  }
  char rm[128];
  snprintf(rm, sizeof(rm), "rm -rf %s", dir);
  WM_CHECK_INT_EQ(system(rm), 0);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(definitions_agree_with_the_reference_kernels),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
