// The loop-nest printer and its dialect table: C with GCC/Clang vector
// extensions, OpenCL C 1.2 and CUDA C.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gen/internal.h"
#include "wmap/backend.h"

// The math functions of the operations that have one, by their double
// names (every dialect has them; C and CUDA add "f" for float).
static const char *const kMath[WM_GEN_OP_COUNT] = {
    [WM_GEN_ABS] = "fabs",    [WM_GEN_SQRT] = "sqrt",
    [WM_GEN_EXP] = "exp",     [WM_GEN_LOG] = "log",
    [WM_GEN_TANH] = "tanh",   [WM_GEN_FLOOR] = "floor",
    [WM_GEN_CEIL] = "ceil",   [WM_GEN_SIN] = "sin",
    [WM_GEN_COS] = "cos",     [WM_GEN_ERF] = "erf",
    [WM_GEN_POW] = "pow",     [WM_GEN_FMOD] = "fmod",
    [WM_GEN_ROUND] = "rint",  [WM_GEN_TAN] = "tan",
    [WM_GEN_ASIN] = "asin",   [WM_GEN_ACOS] = "acos",
    [WM_GEN_ATAN] = "atan",   [WM_GEN_SINH] = "sinh",
    [WM_GEN_COSH] = "cosh",   [WM_GEN_ASINH] = "asinh",
    [WM_GEN_ACOSH] = "acosh", [WM_GEN_ATANH] = "atanh",
};

static const gen_dialect_t kDialects[3] = {
    {
        .name = "c",
        .prelude = "#include <math.h>\n#include <stdint.h>\n",
        .helper = "static inline",
        .kernel = "",
        .space = "",
        .restrict_ = "restrict",
        .index = "int64_t",
        .global_id = NULL,
        .vectors = true,
        .args_array = true,
        .fsuffix = "f",
    },
    {
        .name = "opencl-c",
        .prelude = "",
        .helper = "inline",
        .kernel = "__kernel ",
        .space = "__global ",
        .restrict_ = "restrict",
        .index = "long",
        .global_id = "(long)get_global_id(0)",
        .vectors = true,
        .builtin_vectors = true,
        .buffer = "__global",
        .fsuffix = "",
    },
    {
        .name = "cuda-c",
        .prelude = "",
        .helper = "static __device__ inline",
        .kernel = "extern \"C\" __global__ ",
        .space = "",
        .restrict_ = "__restrict__",
        .index = "long long",
        .global_id = "(long long)blockIdx.x * blockDim.x + threadIdx.x",
        .vectors = false,
        .fsuffix = "f",
    },
};

// The scalar helpers every dialect gets (the semantics of the reference
// kernels: a NaN operand of max and min wins, relu of NaN is 0).
static void print_helpers(const gen_dialect_t *d, wm_strbuf_t *o) {
  wm_strbuf_printf(o,
                   "#ifndef WG_SCALAR\n#define WG_SCALAR\n"
                   "%s float wg_max(float a, float b) {\n"
                   "  return a > b || a != a ? a : b;\n}\n"
                   "%s float wg_min(float a, float b) {\n"
                   "  return a < b || a != a ? a : b;\n}\n"
                   "%s float wg_relu(float a) {\n"
                   "  return a > 0.0f ? a : 0.0f;\n}\n"
                   "%s float wg_sigmoid(float a) {\n"
                   "  return 1.0f / (1.0f + exp%s(-a));\n}\n"
                   "%s float wg_lt(float a, float b) {\n"
                   "  return a < b ? 1.0f : 0.0f;\n}\n"
                   "%s float wg_gt(float a, float b) {\n"
                   "  return a > b ? 1.0f : 0.0f;\n}\n"
                   "%s float wg_select(float c, float a, float b) {\n"
                   "  return c != 0.0f ? a : b;\n}\n"
                   "%s float wg_sign(float a) {\n"
                   "  return a > 0.0f ? 1.0f : a < 0.0f ? -1.0f : a;\n}\n"
                   "%s %s wg_wrap(%s i, %s n) {\n"
                   "  return i < 0 ? i + n : i;\n}\n"
                   "#endif\n",
                   d->helper, d->helper, d->helper, d->helper, d->fsuffix,
                   d->helper, d->helper, d->helper, d->helper, d->helper,
                   d->index, d->index, d->index);
}

// The vector type of |w| lanes and its lane-wise helpers (C only).
static void print_vector_helpers(const gen_dialect_t *d, int32_t w,
                                 wm_strbuf_t *o) {
  wm_strbuf_printf(o, "#ifndef WG_V%d\n#define WG_V%d\n", w, w);
  if (d->builtin_vectors) {
    wm_strbuf_printf(o,
                     "typedef float%d wg_v%d;\n"
                     "%s wg_v%d wg_load%d(%sconst float *p) {\n"
                     "  return vload%d(0, p);\n}\n"
                     "%s void wg_store%d(%sfloat *p, wg_v%d v) {\n"
                     "  vstore%d(v, 0, p);\n}\n"
                     "%s wg_v%d wg_splat%d(float x) {\n"
                     "  return (wg_v%d)(x);\n}\n#endif\n",
                     w, w, d->helper, w, w, d->space, w, d->helper, w, d->space,
                     w, w, d->helper, w, w, w);
    return;
  }
  wm_strbuf_printf(o,
                   "typedef float wg_v%d __attribute__((vector_size(%d)));\n"
                   "%s wg_v%d wg_load%d(const float *p) {\n"
                   "  wg_v%d v;\n  __builtin_memcpy(&v, p, sizeof(v));\n"
                   "  return v;\n}\n"
                   "%s void wg_store%d(float *p, wg_v%d v) {\n"
                   "  __builtin_memcpy(p, &v, sizeof(v));\n}\n"
                   "%s wg_v%d wg_splat%d(float x) {\n"
                   "  wg_v%d v = {0};\n  return v + x;\n}\n#endif\n",
                   w, w * 4, d->helper, w, w, w, d->helper, w, w, d->helper, w,
                   w, w);
}

void gen_print_float(wm_strbuf_t *o, float v) {
  if (v != v) {
    wm_strbuf_printf(o, "(0.0f / 0.0f)");
  } else if (v == INFINITY || v == -INFINITY) {
    wm_strbuf_printf(o, "(%s1.0f / 0.0f)", v < 0 ? "-" : "");
  } else if (signbit(v)) {
    wm_strbuf_printf(o, "(%af)", (double)v);  // never "--" after a minus
  } else {
    wm_strbuf_printf(o, "%af", (double)v);
  }
}

const char *gen_elem_type(const gen_dialect_t *d, wm_dtype_t dtype) {
  // C, OpenCL C, CUDA C.
  static const struct {
    wm_dtype_t dtype;
    const char *names[3];
  } kTypes[] = {
      {WM_DTYPE_DOUBLE, {"double", "double", "double"}},
      {WM_DTYPE_INT64, {"int64_t", "long", "long long"}},
      {WM_DTYPE_INT32, {"int32_t", "int", "int"}},
      {WM_DTYPE_INT16, {"int16_t", "short", "short"}},
      {WM_DTYPE_INT8, {"int8_t", "char", "signed char"}},
      {WM_DTYPE_UINT16, {"uint16_t", "ushort", "unsigned short"}},
      {WM_DTYPE_UINT8, {"uint8_t", "uchar", "unsigned char"}},
      {WM_DTYPE_BOOL, {"uint8_t", "uchar", "unsigned char"}},
  };
  int32_t k = d == &kDialects[WM_GEN_OPENCL] ? 1
              : d == &kDialects[WM_GEN_CUDA] ? 2
                                             : 0;
  for (size_t i = 0; i < sizeof(kTypes) / sizeof(kTypes[0]); i++) {
    if (kTypes[i].dtype == dtype) {
      return kTypes[i].names[k];
    }
  }
  return "float";
}

bool wm_gen_dialect_vectors(wm_gen_dialect_t d) {
  const gen_dialect_t *g = gen_dialect(d);
  return g && g->vectors;
}

const gen_dialect_t *gen_dialect(wm_gen_dialect_t d) {
  return d >= WM_GEN_C && d <= WM_GEN_CUDA ? &kDialects[d] : NULL;
}

// The index gathered in dim |d| of |acc|: the index tensor's integer, a
// negative one counted from the end of the dim.
static void print_gathered(const wm_gen_compute_t *c,
                           const wm_gen_access_t *acc, int32_t d,
                           wm_strbuf_t *o) {
  const wm_gen_access_t *ix = &c->accesses[acc->gather[d] - 1];
  wm_strbuf_printf(o, "wg_wrap(T%d[", (int)ix->tensor);
  gen_print_offset(c, ix, o);
  wm_strbuf_printf(o, "], %lld)", (long long)c->tensors[acc->tensor].dims[d]);
}

void gen_print_offset(const wm_gen_compute_t *c, const wm_gen_access_t *acc,
                      wm_strbuf_t *o) {
  const wm_gen_tensor_t *t = &c->tensors[acc->tensor];
  int64_t base = wm_gen_access_base(c, acc);
  bool any = false;
  for (int32_t a = 0; a < c->n_axes; a++) {
    int64_t k = wm_gen_access_step(c, acc, a);
    if (k) {
      wm_strbuf_printf(o, "%s", any ? " + " : "");
      if (k != 1) {
        wm_strbuf_printf(o, "%lld * ", (long long)k);
      }
      wm_strbuf_printf(o, "i%d", (int)a);
      any = true;
    }
  }
  for (int32_t d = 0; d < t->rank; d++) {
    if (acc->gather[d] > 0) {
      wm_strbuf_printf(o, "%s", any ? " + " : "");
      if (t->strides[d] != 1) {
        wm_strbuf_printf(o, "%lld * ", (long long)t->strides[d]);
      }
      print_gathered(c, acc, d, o);
      any = true;
    }
  }
  if (base || !any) {
    wm_strbuf_printf(o, "%s%lld", any ? " + " : "", (long long)base);
  }
}

// Whether dim |d| of |acc|'s index stays inside its tensor for every
// point of the axes (no check needed).
static bool dim_inside(const wm_gen_compute_t *c, const wm_gen_access_t *acc,
                       int32_t d) {
  if (acc->gather[d] > 0) {
    return false;
  }
  int64_t lo = acc->off[d], hi = acc->off[d];
  for (int32_t a = 0; a < c->n_axes; a++) {
    int64_t span = acc->coef[d][a] * (c->extents[a] - 1);
    lo += span < 0 ? span : 0;
    hi += span > 0 ? span : 0;
  }
  return lo >= 0 && hi < c->tensors[acc->tensor].dims[d];
}

// The bounds check of dim |k| of |acc| (one unsigned comparison: a
// negative index wraps above) at the loops' point, lanes
// |lane0| .. |lane0| + |lanes| - 1 along axis |va| (lanes 1: the point).
static void print_in_bounds(const wm_gen_compute_t *c,
                            const wm_gen_access_t *acc, int32_t k, int32_t va,
                            int32_t lanes, wm_strbuf_t *o) {
  const wm_gen_tensor_t *t = &c->tensors[acc->tensor];
  wm_strbuf_printf(o, "(unsigned long long)(");
  bool term = false;
  for (int32_t a = 0; a < c->n_axes; a++) {
    if (acc->coef[k][a]) {
      wm_strbuf_printf(o, "%s%lld * i%d", term ? " + " : "",
                       (long long)acc->coef[k][a], (int)a);
      term = true;
    }
  }
  wm_strbuf_printf(o, "%s%lld", term ? " + " : "", (long long)acc->off[k]);
  if (acc->gather[k] > 0) {
    wm_strbuf_printf(o, " + ");
    print_gathered(c, acc, k, o);
  }
  wm_strbuf_printf(o, ") < %lldull", (long long)t->dims[k]);
  if (lanes > 1) {
    // The last lane too (the index moves one way along the lanes).
    wm_strbuf_printf(o, " && (unsigned long long)(");
    for (int32_t a = 0; a < c->n_axes; a++) {
      if (acc->coef[k][a]) {
        wm_strbuf_printf(o, "%lld * (i%d%s) + ", (long long)acc->coef[k][a],
                         (int)a, a == va ? " + (LANES)" : "");
      }
    }
    wm_strbuf_printf(o, "%lld) < %lldull", (long long)acc->off[k],
                     (long long)t->dims[k]);
  }
}

void gen_print_load(const gen_dialect_t *d, const wm_gen_compute_t *c,
                    const wm_gen_access_t *acc, wm_strbuf_t *o) {
  (void)d;
  const wm_gen_tensor_t *t = &c->tensors[acc->tensor];
  bool any = false;
  for (int32_t k = 0; acc->guard && k < t->rank; k++) {
    if (dim_inside(c, acc, k)) {
      continue;
    }
    wm_strbuf_printf(o, "%s", any ? " && " : "((");
    print_in_bounds(c, acc, k, -1, 1, o);
    any = true;
  }
  if (any) {
    wm_strbuf_printf(o, ") ? ");
  }
  bool convert = t->dtype != WM_DTYPE_FLOAT;
  // Through double, as the reference kernels convert.
  wm_strbuf_printf(o, "%sT%d[", convert ? "(float)(double)" : "",
                   (int)acc->tensor);
  gen_print_offset(c, acc, o);
  wm_strbuf_printf(o, "]");
  if (any) {
    wm_strbuf_printf(o, " : ");
    gen_print_float(o, acc->fill);
    wm_strbuf_printf(o, ")");
  }
}

// A guarded load moving along the vector axis |va|: zero when a dim not
// moving along it is out of bounds, a plain vector load when every lane
// is inside, else lane by lane (the vector axis's variable shadowed per
// lane in a GNU statement expression).
static void print_guarded_vector(const gen_dialect_t *d,
                                 const wm_gen_compute_t *c,
                                 const wm_gen_access_t *acc, int32_t w,
                                 int32_t va, wm_strbuf_t *o) {
  const wm_gen_tensor_t *t = &c->tensors[acc->tensor];
  wm_strbuf_t scalar, lanes;
  wm_strbuf_init(&scalar);
  wm_strbuf_init(&lanes);
  for (int32_t k = 0; k < t->rank; k++) {
    if (dim_inside(c, acc, k)) {
      continue;
    }
    wm_strbuf_t *into = acc->coef[k][va] ? &lanes : &scalar;
    wm_strbuf_printf(into, "%s", into->len ? " && " : "");
    print_in_bounds(c, acc, k, va, acc->coef[k][va] ? w : 1, into);
  }
  // LANES stands for the last lane's offset in the vector checks.
  char last[16];
  snprintf(last, sizeof(last), "%d", (int)w - 1);
  const char *lt = wm_strbuf_str(&lanes);
  wm_strbuf_printf(o, "(%s ? (", scalar.len ? wm_strbuf_str(&scalar) : "1");
  for (const char *p = lt; *p; p++) {
    if (strncmp(p, "LANES", 5) == 0) {
      wm_strbuf_printf(o, "%s", last);
      p += 4;
    } else {
      wm_strbuf_printf(o, "%c", *p);
    }
  }
  wm_strbuf_printf(o, "%s ? wg_load%d(T%d + ", lanes.len ? "" : "1", w,
                   (int)acc->tensor);
  gen_print_offset(c, acc, o);
  wm_strbuf_printf(o,
                   ") : ({ wg_v%d wg_g; const %s wg_b%d = i%d; "
                   "for (int wg_l = 0; wg_l < %d; wg_l++) { "
                   "%s i%d = wg_b%d + wg_l; wg_g[wg_l] = ",
                   w, d->index, (int)va, (int)va, w, d->index, (int)va,
                   (int)va);
  gen_print_load(d, c, acc, o);
  wm_strbuf_printf(o, "; } wg_g; })) : wg_splat%d(", w);
  gen_print_float(o, acc->fill);
  wm_strbuf_printf(o, "))");
  wm_strbuf_deinit(&scalar);
  wm_strbuf_deinit(&lanes);
}

void gen_print_expr(const gen_dialect_t *d, const wm_gen_compute_t *c,
                    int32_t i, int32_t w, int32_t va, wm_strbuf_t *o) {
  const wm_gen_expr_t *e = &c->exprs[i];
  const wm_gen_access_t *acc =
      e->op == WM_GEN_LOAD ? &c->accesses[e->access] : NULL;
  switch (e->op) {
    case WM_GEN_LOAD:
      if (w > 1 && wm_gen_access_step(c, acc, va) != 0 && acc->guard) {
        print_guarded_vector(d, c, acc, w, va, o);
      } else if (w > 1 && wm_gen_access_step(c, acc, va) != 0) {
        wm_strbuf_printf(o, "wg_load%d(T%d + ", w, (int)acc->tensor);
        gen_print_offset(c, acc, o);
        wm_strbuf_printf(o, ")");
      } else if (w > 1) {
        wm_strbuf_printf(o, "wg_splat%d(", w);
        gen_print_load(d, c, acc, o);
        wm_strbuf_printf(o, ")");
      } else {
        gen_print_load(d, c, acc, o);
      }
      return;
    case WM_GEN_ACC:
      wm_strbuf_printf(o, "wg_acc");
      return;
    case WM_GEN_CONST:
      if (w > 1) {
        wm_strbuf_printf(o, "wg_splat%d(", w);
        gen_print_float(o, e->value);
        wm_strbuf_printf(o, ")");
      } else {
        gen_print_float(o, e->value);
      }
      return;
    case WM_GEN_ADD:
    case WM_GEN_SUB:
    case WM_GEN_MUL:
    case WM_GEN_DIV: {
      static const char ops[] = "+-*/";
      wm_strbuf_printf(o, "(");
      gen_print_expr(d, c, e->arg[0], w, va, o);
      wm_strbuf_printf(o, " %c ", ops[e->op - WM_GEN_ADD]);
      gen_print_expr(d, c, e->arg[1], w, va, o);
      wm_strbuf_printf(o, ")");
      return;
    }
    case WM_GEN_NEG:
      wm_strbuf_printf(o, "(-");
      gen_print_expr(d, c, e->arg[0], w, va, o);
      wm_strbuf_printf(o, ")");
      return;
    default:
      break;
  }
  // The rest as calls: the dialect's math function or a scalar helper,
  // and in vectors a lane-wise helper (wg_<op><w>).
  const char *fn = kMath[e->op];
  if (w > 1) {
    wm_strbuf_printf(o, "wg_%s%d(", wm_gen_op_name(e->op), w);
  } else if (fn) {
    wm_strbuf_printf(o, "%s%s(", fn, d->fsuffix);
  } else {
    wm_strbuf_printf(o, "wg_%s(", wm_gen_op_name(e->op));
  }
  for (int32_t k = 0; k < wm_gen_op_arity(e->op); k++) {
    wm_strbuf_printf(o, "%s", k ? ", " : "");
    gen_print_expr(d, c, e->arg[k], w, va, o);
  }
  wm_strbuf_printf(o, ")");
}

// Whether |op| needs a lane-wise helper in vectors (no vector operator).
static bool needs_lane_helper(wm_gen_op_t op) {
  return op > WM_GEN_DIV && op != WM_GEN_NEG;
}

// The lane-wise form of |op| (C only), guarded, so that kernels printed
// one after the other in one source share their helpers.
static void print_lane_helper(const gen_dialect_t *d, wm_gen_op_t op, int32_t w,
                              wm_strbuf_t *o) {
  int32_t n = wm_gen_op_arity(op);
  const char *fn = kMath[op];
  const char *name = wm_gen_op_name(op);
  wm_strbuf_printf(o, "#ifndef WG_%s%d\n#define WG_%s%d\n", name, w, name, w);
  static const char *const args[3] = {"a", "b", "c"};
  wm_strbuf_printf(o, "%s wg_v%d wg_%s%d(", d->helper, w, name, w);
  for (int32_t k = 0; k < n; k++) {
    wm_strbuf_printf(o, "%swg_v%d %s", k ? ", " : "", w, args[k]);
  }
  wm_strbuf_printf(o, ") {\n");
  wm_strbuf_printf(o, "  wg_v%d r;\n  for (int l = 0; l < %d; l++) {\n", w, w);
  if (fn) {
    wm_strbuf_printf(o, "    r[l] = %s%s(", fn, d->fsuffix);
  } else {
    wm_strbuf_printf(o, "    r[l] = wg_%s(", name);
  }
  for (int32_t k = 0; k < n; k++) {
    wm_strbuf_printf(o, "%s%s[l]", k ? ", " : "", args[k]);
  }
  wm_strbuf_printf(o, ");\n  }\n  return r;\n}\n#endif\n");
}

void gen_print_prologue(const gen_dialect_t *d, const wm_gen_compute_t *c,
                        int32_t w, wm_strbuf_t *o) {
  wm_strbuf_printf(o, "// %s: generated by wmap for dialect %s\n// ", c->name,
                   d->name);
  wm_gen_canonical(c, o);
  wm_strbuf_printf(o, "\n%s", d->prelude);
  print_helpers(d, o);
  if (!d->vectors || w <= 1) {
    return;
  }
  print_vector_helpers(d, w, o);
  bool done[WM_GEN_OP_COUNT] = {false};
  for (int32_t i = 0; i <= c->n_exprs; i++) {
    wm_gen_op_t op = i < c->n_exprs ? c->exprs[i].op
                     : c->n_reduce  ? c->combine
                                    : WM_GEN_ADD;
    if (needs_lane_helper(op) && !done[op]) {
      done[op] = true;
      print_lane_helper(d, op, w, o);
    }
  }
}

// The type of tensor |t|'s pointer in |d|: "const int64_t *restrict".
static void print_ptr_type(const gen_dialect_t *d, const wm_gen_compute_t *c,
                           int32_t t, bool restrict_, wm_strbuf_t *o) {
  wm_strbuf_printf(o, "%s%s%s *%s", d->space, t ? "const " : "",
                   gen_elem_type(d, c->tensors[t].dtype),
                   restrict_ ? d->restrict_ : "");
}

void gen_print_signature(const gen_dialect_t *d, const wm_gen_compute_t *c,
                         wm_strbuf_t *o) {
  if (d->args_array) {
    // One signature for every kernel (wm_c_kernel_fn): the tensors'
    // addresses in an array.
    wm_strbuf_printf(o, "%svoid %s(void *const *wg_args, %s start, %s end) {\n",
                     d->kernel, c->name, d->index, d->index);
    for (int32_t t = 0; t < c->n_tensors; t++) {
      wm_strbuf_printf(o, "  ");
      print_ptr_type(d, c, t, true, o);
      wm_strbuf_printf(o, " T%d = (", (int)t);
      print_ptr_type(d, c, t, false, o);
      wm_strbuf_printf(o, ")wg_args[%d];\n", (int)t);
    }
    return;
  }
  wm_strbuf_printf(o, "%svoid %s(", d->kernel, c->name);
  for (int32_t t = 0; t < c->n_tensors; t++) {
    wm_strbuf_printf(o, "%s", t ? ", " : "");
    if (d->buffer) {
      // A buffer and a byte offset (format opencl-c's convention).
      print_ptr_type(d, c, t, false, o);
      wm_strbuf_printf(o, "wg_b%d, ulong wg_o%d", (int)t, (int)t);
    } else {
      print_ptr_type(d, c, t, true, o);
      wm_strbuf_printf(o, " T%d", (int)t);
    }
  }
  wm_strbuf_printf(o, ", %s start, %s end) {\n", d->index, d->index);
  for (int32_t t = 0; d->buffer && t < c->n_tensors; t++) {
    wm_strbuf_printf(o, "  ");
    print_ptr_type(d, c, t, true, o);
    wm_strbuf_printf(o, " T%d = (", (int)t);
    print_ptr_type(d, c, t, false, o);
    wm_strbuf_printf(o, ")((%s%schar *)wg_b%d + wg_o%d);\n", d->buffer,
                     t ? " const " : " ", (int)t, (int)t);
  }
}

void gen_print_unflatten(const gen_dialect_t *d, const wm_gen_compute_t *c,
                         int32_t from, int32_t to, const char *flat,
                         int32_t depth, wm_strbuf_t *o) {
  if (to - from == 1) {
    gen_indent(o, depth);
    wm_strbuf_printf(o, "%s i%d = %s;\n", d->index, (int)from, flat);
    return;
  }
  gen_indent(o, depth);
  wm_strbuf_printf(o, "%s wg_u%d = %s;\n", d->index, (int)from, flat);
  for (int32_t a = to - 1; a >= from; a--) {
    gen_indent(o, depth);
    if (a == from) {
      wm_strbuf_printf(o, "%s i%d = wg_u%d;\n", d->index, (int)a, (int)from);
    } else if (c->extents[a] == 0) {
      // An empty range: never run, but printed without a division by 0.
      wm_strbuf_printf(o, "%s i%d = 0;\n", d->index, (int)a);
    } else {
      wm_strbuf_printf(o, "%s i%d = wg_u%d %% %lld;\n", d->index, (int)a,
                       (int)from, (long long)c->extents[a]);
      gen_indent(o, depth);
      wm_strbuf_printf(o, "wg_u%d /= %lld;\n", (int)from,
                       (long long)c->extents[a]);
    }
  }
}

void gen_indent(wm_strbuf_t *o, int32_t depth) {
  for (int32_t i = 0; i < depth; i++) {
    wm_strbuf_printf(o, "  ");
  }
}

// The store of |value| (an expression, or -1: wg_acc) at the output's
// point: |w| lanes from the index of axis |va| on, or one element.
static void print_store(const gen_dialect_t *d, const wm_gen_compute_t *c,
                        int32_t value, int32_t w, int32_t va, int32_t depth,
                        wm_strbuf_t *o) {
  gen_indent(o, depth);
  if (w > 1) {
    wm_strbuf_printf(o, "wg_store%d(T0 + ", w);
    gen_print_offset(c, &c->accesses[0], o);
    wm_strbuf_printf(o, ", ");
  } else {
    wm_strbuf_printf(o, "T0[");
    gen_print_offset(c, &c->accesses[0], o);
    wm_strbuf_printf(o, "] = ");
  }
  if (value >= 0) {
    gen_print_expr(d, c, value, w, va, o);
  } else {
    wm_strbuf_printf(o, "wg_acc");
  }
  wm_strbuf_printf(o, "%s;\n", w > 1 ? ")" : "");
}

// |lhs| = combine(|lhs|, body) in |w| lanes along |va|.
static void print_fold(const gen_dialect_t *d, const wm_gen_compute_t *c,
                       const char *lhs, int32_t w, int32_t va, int32_t depth,
                       wm_strbuf_t *o) {
  gen_indent(o, depth);
  bool op = c->combine == WM_GEN_ADD || c->combine == WM_GEN_MUL;
  wm_strbuf_printf(o, "%s = ", lhs);
  if (op) {
    wm_strbuf_printf(o, "%s %c ", lhs, c->combine == WM_GEN_ADD ? '+' : '*');
  } else if (w > 1) {
    wm_strbuf_printf(o, "wg_%s%d(%s, ", wm_gen_op_name(c->combine), w, lhs);
  } else {
    wm_strbuf_printf(o, "wg_%s(%s, ", wm_gen_op_name(c->combine), lhs);
  }
  gen_print_expr(d, c, c->body, w, va, o);
  wm_strbuf_printf(o, "%s;\n", op ? "" : ")");
}

// A jam: |n| copies of a point, copy u with spatial axis |axis| moved on
// by u * |step| (n 1: none): a reduction's independent accumulators over
// the loads the copies share.
typedef struct jam {
  int32_t n, axis, step;
} jam_t;

// Opens copy |u| of jam |j|: its axis's variable shadowed by its value.
static void open_jam(const gen_dialect_t *d, const jam_t *j, int32_t u,
                     int32_t depth, wm_strbuf_t *o) {
  gen_indent(o, depth);
  wm_strbuf_printf(o, "{\n");
  gen_indent(o, depth + 1);
  wm_strbuf_printf(o, "const %s wg_s%d = i%d;\n", d->index, (int)j->axis,
                   (int)j->axis);
  gen_indent(o, depth + 1);
  wm_strbuf_printf(o, "{\n");
  gen_indent(o, depth + 2);
  wm_strbuf_printf(o, "const %s i%d = wg_s%d + %d;\n", d->index, (int)j->axis,
                   (int)j->axis, (int)(u * j->step));
}

static void close_jam(int32_t depth, wm_strbuf_t *o) {
  gen_indent(o, depth + 1);
  wm_strbuf_printf(o, "}\n");
  gen_indent(o, depth);
  wm_strbuf_printf(o, "}\n");
}

// The reduce loops from loop |k| on around the fold (|w| lanes along
// spatial axis |va|, or 1) into wg_acc, or for a jam of |j|->n > 1 copies
// into wg_acc0 .. wg_acc<n - 1>.
static void print_reduce(const gen_dialect_t *d, const wm_gen_nest_t *n,
                         int32_t k, int32_t depth, int32_t w, int32_t va,
                         const jam_t *j, wm_strbuf_t *o) {
  const wm_gen_compute_t *c = n->c;
  if (k == n->n && j->n == 1) {
    print_fold(d, c, "wg_acc", w, va, depth, o);
    return;
  }
  if (k == n->n) {
    for (int32_t u = 0; u < j->n; u++) {
      char lhs[24];
      snprintf(lhs, sizeof(lhs), "wg_acc%d", (int)u);
      if (u == 0) {
        print_fold(d, c, lhs, w, va, depth, o);
        continue;
      }
      open_jam(d, j, u, depth, o);
      print_fold(d, c, lhs, w, va, depth + 2, o);
      close_jam(depth, o);
    }
    return;
  }
  const wm_gen_loop_t *l = &n->loops[k];
  int a = (int)l->axis;
  long long ext = (long long)c->extents[a];
  if (l->kind == WM_GEN_LOOP_VECTOR_REDUCE && d->vectors && w == 1 &&
      l->width > 1) {
    // |unroll| partial vectors, combined at the end, then the tail.
    int W = (int)l->width, U = (int)l->unroll;
    gen_indent(o, depth);
    wm_strbuf_printf(o, "{\n");
    gen_indent(o, depth + 1);
    wm_strbuf_printf(o, "wg_v%d", W);
    for (int u = 0; u < U; u++) {
      wm_strbuf_printf(o, "%s wg_r%d = wg_splat%d(", u ? "," : "", u, W);
      gen_print_float(o, c->init);
      wm_strbuf_printf(o, ")");
    }
    wm_strbuf_printf(o, ";\n");
    gen_indent(o, depth + 1);
    wm_strbuf_printf(o, "%s i%d = 0;\n", d->index, a);
    gen_indent(o, depth + 1);
    wm_strbuf_printf(o, "while (i%d + %d <= %lld) {\n", a, W * U, ext);
    for (int u = 0; u < U; u++) {
      char lhs[16];
      snprintf(lhs, sizeof(lhs), "wg_r%d", u);
      print_fold(d, c, lhs, W, a, depth + 2, o);
      gen_indent(o, depth + 2);
      wm_strbuf_printf(o, "i%d += %d;\n", a, W);
    }
    gen_indent(o, depth + 1);
    wm_strbuf_printf(o, "}\n");
    for (int u = 1; u < U; u++) {
      gen_indent(o, depth + 1);
      if (c->combine == WM_GEN_ADD || c->combine == WM_GEN_MUL) {
        wm_strbuf_printf(o, "wg_r0 = wg_r0 %c wg_r%d;\n",
                         c->combine == WM_GEN_ADD ? '+' : '*', u);
      } else {
        wm_strbuf_printf(o, "wg_r0 = wg_%s%d(wg_r0, wg_r%d);\n",
                         wm_gen_op_name(c->combine), W, u);
      }
    }
    gen_indent(o, depth + 1);
    wm_strbuf_printf(o, "for (int l = 0; l < %d; l++) {\n", W);
    gen_indent(o, depth + 2);
    if (c->combine == WM_GEN_ADD || c->combine == WM_GEN_MUL) {
      wm_strbuf_printf(o, "wg_acc = wg_acc %c wg_r0[l];\n",
                       c->combine == WM_GEN_ADD ? '+' : '*');
    } else {
      wm_strbuf_printf(o, "wg_acc = wg_%s(wg_acc, wg_r0[l]);\n",
                       wm_gen_op_name(c->combine));
    }
    gen_indent(o, depth + 1);
    wm_strbuf_printf(o, "}\n");
    gen_indent(o, depth + 1);
    wm_strbuf_printf(o, "for (; i%d < %lld; i%d++) {\n", a, ext, a);
    print_fold(d, c, "wg_acc", 1, -1, depth + 2, o);
    gen_indent(o, depth + 1);
    wm_strbuf_printf(o, "}\n");
    gen_indent(o, depth);
    wm_strbuf_printf(o, "}\n");
    return;
  }
  gen_indent(o, depth);
  wm_strbuf_printf(o, "for (%s i%d = 0; i%d < %lld; i%d++) {\n", d->index, a, a,
                   ext, a);
  print_reduce(d, n, k + 1, depth + 1, w, va, j, o);
  gen_indent(o, depth);
  wm_strbuf_printf(o, "}\n");
}

// A reduction at a point (|w| lanes along |va|, or 1) in jam |j|: one
// pass over the reduce loops from |k| on, then the copies' stores (one
// copy, n 1: the accumulator wg_acc, stored as it is).
static void print_jammed_point(const gen_dialect_t *d, const wm_gen_nest_t *n,
                               int32_t k, int32_t depth, int32_t w, int32_t va,
                               const jam_t *j, wm_strbuf_t *o) {
  const wm_gen_compute_t *c = n->c;
  char type[16] = "float";
  if (w > 1) {
    snprintf(type, sizeof(type), "wg_v%d", (int)w);
  }
  gen_indent(o, depth);
  wm_strbuf_printf(o, "{\n");
  for (int32_t u = 0; u < j->n; u++) {
    gen_indent(o, depth + 1);
    wm_strbuf_printf(o, "%s wg_acc", type);
    if (j->n > 1) {
      wm_strbuf_printf(o, "%d", (int)u);
    }
    if (w > 1) {
      wm_strbuf_printf(o, " = wg_splat%d(", w);
    } else {
      wm_strbuf_printf(o, " = (");
    }
    gen_print_float(o, c->init);
    wm_strbuf_printf(o, ");\n");
  }
  print_reduce(d, n, k, depth + 1, w, va, j, o);
  if (j->n == 1) {
    print_store(d, c, c->epilogue, w, va, depth + 1, o);
  }
  for (int32_t u = 0; j->n > 1 && u < j->n; u++) {
    open_jam(d, j, u, depth + 1, o);
    gen_indent(o, depth + 3);
    wm_strbuf_printf(o, "const %s wg_acc = wg_acc%d;\n", type, (int)u);
    print_store(d, c, c->epilogue, w, va, depth + 3, o);
    close_jam(depth + 1, o);
  }
  gen_indent(o, depth);
  wm_strbuf_printf(o, "}\n");
}

// What runs at one point of the spatial loops (|w| lanes along |va|):
// the statement, or the reduction from loop |k| on and its store.
static void print_point(const gen_dialect_t *d, const wm_gen_nest_t *n,
                        int32_t k, int32_t depth, int32_t w, int32_t va,
                        wm_strbuf_t *o) {
  const wm_gen_compute_t *c = n->c;
  if (c->n_reduce == 0) {
    print_store(d, c, c->body, w, va, depth, o);
    return;
  }
  const jam_t none = {1, -1, 0};
  print_jammed_point(d, n, k, depth, w, va, &none, o);
}

// Vector loop |k| (the innermost spatial one) with each point reducing
// n->s.rows rows of axis |row| together: in vectors, then the scalar tail.
static void print_rows(const gen_dialect_t *d, const wm_gen_nest_t *n,
                       int32_t k, int32_t depth, int32_t row, wm_strbuf_t *o) {
  const wm_gen_loop_t *l = &n->loops[k];
  int b = (int)l->axis;
  long long ext = (long long)n->c->extents[b];
  const jam_t j = {n->s.rows, row, 1};
  gen_indent(o, depth);
  wm_strbuf_printf(o, "%s i%d = 0;\n", d->index, b);
  gen_indent(o, depth);
  wm_strbuf_printf(o, "while (i%d + %d <= %lld) {\n", b, (int)l->width, ext);
  print_jammed_point(d, n, k + 1, depth + 1, l->width, b, &j, o);
  gen_indent(o, depth + 1);
  wm_strbuf_printf(o, "i%d += %d;\n", b, (int)l->width);
  gen_indent(o, depth);
  wm_strbuf_printf(o, "}\n");
  gen_indent(o, depth);
  wm_strbuf_printf(o, "for (; i%d < %lld; i%d++) {\n", b, ext, b);
  print_jammed_point(d, n, k + 1, depth + 1, 1, -1, &j, o);
  gen_indent(o, depth);
  wm_strbuf_printf(o, "}\n");
}

// Spatial loop |k| of the nest and everything inside it, |w| lanes along
// |va| (1: scalar).
static void print_loop(const gen_dialect_t *d, const wm_gen_nest_t *n,
                       int32_t k, int32_t depth, int32_t w, int32_t va,
                       wm_strbuf_t *o) {
  const wm_gen_compute_t *c = n->c;
  if (k == n->n || n->loops[k].kind == WM_GEN_LOOP_REDUCE ||
      n->loops[k].kind == WM_GEN_LOOP_VECTOR_REDUCE) {
    print_point(d, n, k, depth, w, va, o);
    return;
  }
  const wm_gen_loop_t *l = &n->loops[k];
  int32_t a = l->axis;
  bool parallel = l->kind == WM_GEN_LOOP_PARALLEL;
  if (parallel && n->n_par > 1) {
    // Several axes flattened: one index of the range each, unflattened.
    gen_indent(o, depth);
    if (d->global_id) {
      wm_strbuf_printf(o, "%s wg_p = start + %s;\n", d->index, d->global_id);
      gen_indent(o, depth);
      wm_strbuf_printf(o, "if (wg_p < end) {\n");
    } else {
      wm_strbuf_printf(o, "for (%s wg_p = start; wg_p < end; wg_p++) {\n",
                       d->index);
    }
    gen_print_unflatten(d, c, 0, n->n_par, "wg_p", depth + 1, o);
    print_loop(d, n, n->n_par, depth + 1, 1, -1, o);
    gen_indent(o, depth);
    wm_strbuf_printf(o, "}\n");
    return;
  }
  if (parallel && d->global_id) {
    gen_indent(o, depth);
    wm_strbuf_printf(o, "%s i%d = start + %s;\n", d->index, (int)a,
                     d->global_id);
    gen_indent(o, depth);
    wm_strbuf_printf(o, "if (i%d >= end) {\n", (int)a);
    gen_indent(o, depth + 1);
    wm_strbuf_printf(o, "return;\n");
    gen_indent(o, depth);
    wm_strbuf_printf(o, "}\n");
    print_loop(d, n, k + 1, depth, 1, -1, o);
    return;
  }
  char to[32];
  if (parallel) {
    snprintf(to, sizeof(to), "end");
  } else {
    snprintf(to, sizeof(to), "%lld", (long long)c->extents[a]);
  }
  int32_t lw = d->vectors && l->kind != WM_GEN_LOOP_SERIAL ? l->width : 1;
  gen_indent(o, depth);
  wm_strbuf_printf(o, "%s i%d = %s;\n", d->index, (int)a,
                   parallel ? "start" : "0");
  if (n->s.rows > 1 && d->vectors && l->kind == WM_GEN_LOOP_SERIAL &&
      k + 1 < n->n && n->loops[k + 1].kind == WM_GEN_LOOP_VECTOR) {
    // Rows jammed: |rows| of this axis a pass over the vector loop, whose
    // points reduce them together; the rows left over one by one.
    gen_indent(o, depth);
    wm_strbuf_printf(o, "while (i%d + %d <= %s) {\n", (int)a, (int)n->s.rows,
                     to);
    print_rows(d, n, k + 1, depth + 1, a, o);
    gen_indent(o, depth + 1);
    wm_strbuf_printf(o, "i%d += %d;\n", (int)a, (int)n->s.rows);
    gen_indent(o, depth);
    wm_strbuf_printf(o, "}\n");
  }
  if (lw > 1) {
    // |unroll| vector steps a round, each moving the index on.
    gen_indent(o, depth);
    wm_strbuf_printf(o, "while (i%d + %d <= %s) {\n", (int)a, lw * l->unroll,
                     to);
    if (c->n_reduce > 0 && l->unroll > 1) {
      // A reduction: the vectors jammed into one pass (the vector axis is
      // the innermost spatial one: the reduce loops follow).
      const jam_t j = {l->unroll, a, lw};
      print_jammed_point(d, n, k + 1, depth + 1, lw, a, &j, o);
      gen_indent(o, depth + 1);
      wm_strbuf_printf(o, "i%d += %d;\n", (int)a, lw * l->unroll);
      // Then single vectors, before the scalar tail.
      gen_indent(o, depth);
      wm_strbuf_printf(o, "}\n");
      gen_indent(o, depth);
      wm_strbuf_printf(o, "while (i%d + %d <= %s) {\n", (int)a, lw, to);
      print_loop(d, n, k + 1, depth + 1, lw, a, o);
      gen_indent(o, depth + 1);
      wm_strbuf_printf(o, "i%d += %d;\n", (int)a, lw);
    } else {
      for (int32_t u = 0; u < l->unroll; u++) {
        print_loop(d, n, k + 1, depth + 1, lw, a, o);
        gen_indent(o, depth + 1);
        wm_strbuf_printf(o, "i%d += %d;\n", (int)a, lw);
      }
    }
    gen_indent(o, depth);
    wm_strbuf_printf(o, "}\n");
  }
  gen_indent(o, depth);
  wm_strbuf_printf(o, "for (; i%d < %s; i%d++) {\n", (int)a, to, (int)a);
  print_loop(d, n, k + 1, depth + 1, w, va, o);
  gen_indent(o, depth);
  wm_strbuf_printf(o, "}\n");
}

void wm_gen_call(void *symbol, void *const *args, int64_t start, int64_t end) {
  wm_c_kernel_fn fn;
  memcpy(&fn, &symbol, sizeof(fn));
  fn(args, start, end);
}

wm_status_t wm_gen_print(const wm_gen_nest_t *n, wm_gen_dialect_t dl,
                         wm_strbuf_t *o) {
  const gen_dialect_t *d = gen_dialect(dl);
  if (!d) {
    return WM_ERROR(INVALID_ARGUMENT, "gen: unknown dialect %d", (int)dl);
  }
  const wm_gen_compute_t *c = n->c;
  if (n->s.mr > 0) {
    return gen_print_gemm(d, n, o);
  }
  int32_t w = 1;
  for (int32_t k = 0; k < n->n; k++) {
    w = n->loops[k].width > w ? n->loops[k].width : w;
  }
  gen_print_prologue(d, c, w, o);
  gen_print_signature(d, c, o);
  print_loop(d, n, 0, 1, 1, -1, o);
  wm_strbuf_printf(o, "}\n");
  if (o->failed) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "gen: out of memory printing %s",
                    c->name);
  }
  return NULL;
}
