// Classical machine-learning operators of the ai.onnx.ml domain:
// LabelEncoder, TreeEnsemble, ArrayFeatureExtractor and Binarizer.
//
// LabelEncoder sorts its keys once per run and finds each element by
// binary search. TreeEnsemble checks the whole ensemble before it runs
// (indices in range, no cycles, one membership set per BRANCH_MEMBER
// node), so a sample walks each tree from its root in O(depth) and a set
// test is a binary search in that node's sorted members.
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

#define ML_DOMAIN "ai.onnx.ml"

// ------------------------------------------------------------- helpers

// Reads the 1-D tensor attribute |name|; *out NULL when absent.
static wm_status_t attr_vector(const wm_op_ctx_t *ctx, const char *name,
                               bool required, const wm_tensor_t **out) {
  const wm_attr_t *a;
  *out = NULL;
  WM_RETURN_IF_ERROR(wm_op_attr_find(ctx, name, WM_ATTR_TENSOR, required, &a));
  if (!a) {
    return NULL;
  }
  if (!a->t || a->t->shape.rank != 1) {
    char buf[64];
    return WM_OP_ERROR(
        ctx, INVALID_ARGUMENT,
        "attribute \"%s\" has shape %s, want one dimension", name,
        a->t ? wm_shape_format(&a->t->shape, buf, sizeof(buf)) : "(none)");
  }
  *out = a->t;
  return NULL;
}

// Reads the ints attribute |name|, which must hold |n| values when
// present; *out NULL when absent.
static wm_status_t attr_ints_len(const wm_op_ctx_t *ctx, const char *name,
                                 bool required, size_t n, const int64_t **out) {
  const wm_attr_t *a;
  *out = NULL;
  WM_RETURN_IF_ERROR(wm_op_attr_find(ctx, name, WM_ATTR_INTS, required, &a));
  if (!a) {
    return NULL;
  }
  if (a->count != n) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"%s\" has %zu values, want %zu", name,
                       a->count, n);
  }
  *out = a->ints;
  return NULL;
}

// Returns string element |i| of |t| ("" for an unset element).
static const char *elem_string(const wm_tensor_t *t, size_t i) {
  const char *s = ((char *const *)t->data)[i];
  return s ? s : "";
}

// Orders doubles with every NaN equal to every other and after numbers.
static int cmp_real(double a, double b) {
  bool na = isnan(a), nb = isnan(b);
  if (na || nb) {
    return (int)na - (int)nb;
  }
  return (a > b) - (a < b);
}

static int cmp_double_qsort(const void *a, const void *b) {
  return cmp_real(*(const double *)a, *(const double *)b);
}

// ------------------------------------------------------------ Binarizer

static wm_status_t binarizer_run(wm_op_ctx_t *ctx) {
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;
  }
  double threshold;
  WM_RETURN_IF_ERROR(wm_op_attr_float(ctx, "threshold", 0.0, &threshold));
  const wm_tensor_t *x = ctx->in[0];
  for (size_t i = 0; i < x->count; i++) {
    // NaN is not greater than the threshold, so it maps to 0.
    wm_tensor_set_f64(y, i, wm_tensor_get_f64(x, i) > threshold ? 1.0 : 0.0);
  }
  return NULL;
}

// ------------------------------------------------- ArrayFeatureExtractor

static wm_status_t afe_infer(wm_op_ctx_t *ctx) {
  wm_dtype_t xd = wm_op_in_dtype(ctx, 0);
  wm_dtype_t id = wm_op_in_dtype(ctx, 1);
  if (id != WM_DTYPE_UNDEFINED && id != WM_DTYPE_INT64) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 1 (indices) has dtype %s, want int64",
                       wm_dtype_name(id));
  }
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  if (xs->rank == 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 is a scalar, want at least one dimension");
  }
  if (xs->rank < 0) {
    wm_op_set_out_unknown(ctx, 0, xd);
    return NULL;
  }
  size_t k;
  bool k_known = wm_shape_numel(wm_op_in_shape(ctx, 1), &k);
  if (k_known && k > (size_t)INT64_MAX) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "too many indices");
  }
  int64_t c = xs->dims[xs->rank - 1];
  const wm_tensor_t *idx = ctx->in[1];
  if (idx && c >= 0) {
    for (size_t j = 0; j < idx->count; j++) {
      int64_t v = wm_tensor_get_i64(idx, j);
      if (v < 0 || v >= c) {
        return WM_OP_ERROR(ctx, OUT_OF_RANGE,
                           "index %lld (element %zu of input 1) is out of "
                           "range for a last dimension of %lld",
                           (long long)v, j, (long long)c);
      }
    }
  }
  // A vector gives one row, as the ONNX reference and onnxruntime do.
  wm_shape_t out = {2, {1, k_known ? (int64_t)k : -1}};
  if (xs->rank > 1) {
    out = *xs;
    out.dims[xs->rank - 1] = k_known ? (int64_t)k : -1;
  }
  wm_op_set_out(ctx, 0, xd, &out);
  return NULL;
}

static wm_status_t afe_run(wm_op_ctx_t *ctx) {
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;
  }
  const wm_tensor_t *x = ctx->in[0];
  const wm_tensor_t *idx = ctx->in[1];
  size_t c = (size_t)x->shape.dims[x->shape.rank - 1];
  size_t k = idx->count;
  size_t rows = c ? x->count / c : 0;
  size_t esz = wm_dtype_size(x->dtype);
  for (size_t r = 0; r < rows; r++) {
    for (size_t j = 0; j < k; j++) {
      // afe_infer checked every index against c.
      size_t src = r * c + (size_t)wm_tensor_get_i64(idx, j);
      size_t dst = r * k + j;
      if (x->dtype == WM_DTYPE_STRING) {
        const char *s = elem_string(x, src);
        WM_RETURN_IF_ERROR(wm_tensor_set_string(y, dst, s, strlen(s)));
      } else {
        memcpy((char *)y->data + dst * esz, (const char *)x->data + src * esz,
               esz);
      }
    }
  }
  return NULL;
}

// --------------------------------------------------------- LabelEncoder

// How keys compare: integers (and, before opset 4, float bit patterns),
// reals with all NaNs equal, or strings.
typedef enum key_kind {
  KEY_INT,
  KEY_REAL,
  KEY_STRING,
} key_kind_t;

// One key and the position of its value.
typedef struct le_key {
  int64_t i;      // KEY_INT
  double r;       // KEY_REAL
  const char *s;  // KEY_STRING
  size_t value;   // index into the values
} le_key_t;

// Where keys or values come from: one list attribute or a tensor.
typedef struct le_list {
  const char *name;       // attribute name
  wm_dtype_t dtype;       // element type
  size_t count;           // elements
  const wm_attr_t *attr;  // ints, floats or strings list, or NULL
  const wm_tensor_t *t;   // tensor attribute, or NULL
} le_list_t;

// A parsed LabelEncoder.
typedef struct le_spec {
  le_list_t keys;     // the keys
  le_list_t values;   // the values (for opset 1, see |v1_to_string|)
  bool v1;            // opset 1: classes_strings and indices
  bool v1_to_string;  // opset 1 with int64 input
  key_kind_t kind;    // how keys compare
  bool keep_first;    // a repeated key keeps its first value
  int64_t def_i;      // default of integer values
  double def_r;       // default of real values
  const char *def_s;  // default of string values
} le_spec_t;

// Fills |out| from list attribute |name| when present; *found tells.
static wm_status_t le_list_attr(const wm_op_ctx_t *ctx, const char *name,
                                wm_attr_type_t kind, wm_dtype_t dtype,
                                le_list_t *out, int *found) {
  const wm_attr_t *a = wm_node_attr(ctx->node, name);
  if (!a) {
    return NULL;
  }
  WM_RETURN_IF_ERROR(wm_op_attr_find(ctx, name, kind, true, &a));
  out->name = name;
  out->dtype = dtype;
  out->count = a->count;
  out->attr = a;
  out->t = NULL;
  (*found)++;
  return NULL;
}

// The attribute names of the keys (0) or values (1), in ONNX order.
static const char *const le_names[2][4] = {
    {"keys_strings", "keys_int64s", "keys_floats", "keys_tensor"},
    {"values_strings", "values_int64s", "values_floats", "values_tensor"},
};

// Reads the keys (|which| 0) or values (1); exactly one of their
// attributes must be set, the tensor form only from opset 4.
static wm_status_t le_read_list(const wm_op_ctx_t *ctx, int which,
                                le_list_t *out) {
  const char *const *names = le_names[which];
  int found = 0;
  memset(out, 0, sizeof(*out));
  WM_RETURN_IF_ERROR(le_list_attr(ctx, names[0], WM_ATTR_STRINGS,
                                  WM_DTYPE_STRING, out, &found));
  WM_RETURN_IF_ERROR(
      le_list_attr(ctx, names[1], WM_ATTR_INTS, WM_DTYPE_INT64, out, &found));
  WM_RETURN_IF_ERROR(
      le_list_attr(ctx, names[2], WM_ATTR_FLOATS, WM_DTYPE_FLOAT, out, &found));
  if (ctx->opset >= 4 && wm_node_attr(ctx->node, names[3])) {
    const wm_tensor_t *t;
    WM_RETURN_IF_ERROR(attr_vector(ctx, names[3], true, &t));
    static const wm_dtype_t allowed[] = {WM_DTYPE_STRING, WM_DTYPE_INT64,
                                         WM_DTYPE_FLOAT,  WM_DTYPE_INT32,
                                         WM_DTYPE_INT16,  WM_DTYPE_DOUBLE};
    bool ok = false;
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
      ok = ok || t->dtype == allowed[i];
    }
    if (!ok) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "attribute \"%s\" has dtype %s, want string, int64, "
                         "int32, int16, float or double",
                         names[3], wm_dtype_name(t->dtype));
    }
    out->name = names[3];
    out->dtype = t->dtype;
    out->count = t->count;
    out->attr = NULL;
    out->t = t;
    found++;
  }
  if (found != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "%d of the %s_* attributes are set, want exactly one",
                       found, which == 0 ? "keys" : "values");
  }
  return NULL;
}

// Reads the default for values of |dtype| from default_tensor (opset 4)
// or the default_* attribute of that kind.
static wm_status_t le_read_default(const wm_op_ctx_t *ctx, wm_dtype_t dtype,
                                   bool from_tensor, le_spec_t *spec) {
  spec->def_i = -1;
  spec->def_r = -0.0;
  spec->def_s = "_Unused";
  if (from_tensor) {
    const wm_attr_t *a;
    WM_RETURN_IF_ERROR(
        wm_op_attr_find(ctx, "default_tensor", WM_ATTR_TENSOR, false, &a));
    if (!a) {
      return NULL;
    }
    const wm_tensor_t *t = a->t;
    if (!t || t->dtype != dtype || t->shape.rank != 1 ||
        t->shape.dims[0] != 1) {
      char buf[64];
      return WM_OP_ERROR(
          ctx, INVALID_ARGUMENT,
          "attribute \"default_tensor\" is %s%s, want one %s value",
          t ? wm_dtype_name(t->dtype) : "empty",
          t ? wm_shape_format(&t->shape, buf, sizeof(buf)) : "",
          wm_dtype_name(dtype));
    }
    if (dtype == WM_DTYPE_STRING) {
      spec->def_s = elem_string(t, 0);
    } else if (wm_dtype_is_float(dtype)) {
      spec->def_r = wm_tensor_get_f64(t, 0);
    } else {
      spec->def_i = wm_tensor_get_i64(t, 0);
    }
    return NULL;
  }
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "default_int64", -1, &spec->def_i));
  WM_RETURN_IF_ERROR(
      wm_op_attr_string(ctx, "default_string", "_Unused", &spec->def_s));
  if (ctx->opset >= 2) {
    WM_RETURN_IF_ERROR(
        wm_op_attr_float(ctx, "default_float", -0.0, &spec->def_r));
  }
  return NULL;
}

// Reads and checks the attributes against input dtype |xd| (UNDEFINED
// when unknown); *out_dtype is the output dtype.
static wm_status_t le_parse(const wm_op_ctx_t *ctx, wm_dtype_t xd,
                            le_spec_t *spec, wm_dtype_t *out_dtype) {
  memset(spec, 0, sizeof(*spec));
  *out_dtype = WM_DTYPE_UNDEFINED;
  if (ctx->opset < 2) {
    // Strings become their index in classes_strings and back.
    spec->v1 = true;
    const wm_attr_t *a;
    WM_RETURN_IF_ERROR(
        wm_op_attr_find(ctx, "classes_strings", WM_ATTR_STRINGS, false, &a));
    le_list_t classes = {"classes_strings", WM_DTYPE_STRING, a ? a->count : 0,
                         a, NULL};
    WM_RETURN_IF_ERROR(le_read_default(ctx, WM_DTYPE_INT64, false, spec));
    if (xd == WM_DTYPE_INT64) {
      spec->v1_to_string = true;
      spec->values = classes;
      *out_dtype = WM_DTYPE_STRING;
    } else {
      spec->keys = classes;
      spec->kind = KEY_STRING;
      spec->keep_first = true;
      *out_dtype = xd == WM_DTYPE_STRING ? WM_DTYPE_INT64 : WM_DTYPE_UNDEFINED;
    }
    return NULL;
  }
  WM_RETURN_IF_ERROR(le_read_list(ctx, 0, &spec->keys));
  WM_RETURN_IF_ERROR(le_read_list(ctx, 1, &spec->values));
  if (spec->keys.count != spec->values.count) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"%s\" has %zu keys but \"%s\" has %zu "
                       "values",
                       spec->keys.name, spec->keys.count, spec->values.name,
                       spec->values.count);
  }
  if (xd != WM_DTYPE_UNDEFINED && xd != spec->keys.dtype) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has dtype %s but attribute \"%s\" holds %s",
                       wm_dtype_name(xd), spec->keys.name,
                       wm_dtype_name(spec->keys.dtype));
  }
  wm_dtype_t kd = spec->keys.dtype;
  if (kd == WM_DTYPE_STRING) {
    spec->kind = KEY_STRING;
  } else if (wm_dtype_is_float(kd)) {
    // Opset 2 compares float keys bit for bit; opset 4 by value with
    // every NaN matching.
    spec->kind = ctx->opset >= 4 ? KEY_REAL : KEY_INT;
  } else {
    spec->kind = KEY_INT;
  }
  WM_RETURN_IF_ERROR(
      le_read_default(ctx, spec->values.dtype, spec->values.t != NULL, spec));
  *out_dtype = spec->values.dtype;
  return NULL;
}

static wm_status_t le_infer(wm_op_ctx_t *ctx) {
  le_spec_t spec;
  wm_dtype_t od;
  WM_RETURN_IF_ERROR(le_parse(ctx, wm_op_in_dtype(ctx, 0), &spec, &od));
  wm_op_set_out(ctx, 0, od, wm_op_in_shape(ctx, 0));
  return NULL;
}

// The bit pattern of a float element, as opset 2 compares keys.
static int64_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return (int64_t)u;
}

// Key |i| of |list| (read as |kind|) into |k|.
static void le_key_at(const le_list_t *list, key_kind_t kind, size_t i,
                      le_key_t *k) {
  memset(k, 0, sizeof(*k));
  k->value = i;
  if (list->attr) {
    const wm_attr_t *a = list->attr;
    switch (a->type) {
      case WM_ATTR_STRINGS:
        k->s = a->strings[i];
        break;
      case WM_ATTR_INTS:
        k->i = a->ints[i];
        break;
      default:  // floats
        if (kind == KEY_REAL) {
          k->r = a->floats[i];
        } else {
          k->i = float_bits(a->floats[i]);
        }
        break;
    }
    return;
  }
  const wm_tensor_t *t = list->t;
  if (kind == KEY_STRING) {
    k->s = elem_string(t, i);
  } else if (kind == KEY_REAL) {
    k->r = wm_tensor_get_f64(t, i);
  } else if (t->dtype == WM_DTYPE_FLOAT) {
    k->i = float_bits(((const float *)t->data)[i]);
  } else {
    k->i = wm_tensor_get_i64(t, i);
  }
}

static int le_cmp(key_kind_t kind, const le_key_t *a, const le_key_t *b) {
  switch (kind) {
    case KEY_INT:
      return (a->i > b->i) - (a->i < b->i);
    case KEY_REAL:
      return cmp_real(a->r, b->r);
    default:
      return strcmp(a->s, b->s);
  }
}

// qsort has no context argument, so one comparator per kind; ties keep
// the key order so duplicates can be resolved afterwards.
#define LE_QSORT_CMP(KIND, fn)                                    \
  static int fn(const void *pa, const void *pb) {                 \
    const le_key_t *a = pa, *b = pb;                              \
    int c = le_cmp(KIND, a, b);                                   \
    return c ? c : (a->value > b->value) - (a->value < b->value); \
  }
LE_QSORT_CMP(KEY_INT, le_qsort_int)
LE_QSORT_CMP(KEY_REAL, le_qsort_real)
LE_QSORT_CMP(KEY_STRING, le_qsort_string)

// Builds the sorted table of distinct keys; *out_n is its length.
static wm_status_t le_build(const wm_op_ctx_t *ctx, const le_spec_t *spec,
                            le_key_t **out, size_t *out_n) {
  size_t n = spec->keys.count;
  *out = NULL;
  *out_n = 0;
  le_key_t *keys = wm_calloc(n ? n : 1, sizeof(le_key_t));
  if (!keys) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory for %zu keys",
                       n);
  }
  for (size_t i = 0; i < n; i++) {
    le_key_at(&spec->keys, spec->kind, i, &keys[i]);
  }
  qsort(keys, n, sizeof(le_key_t),
        spec->kind == KEY_INT    ? le_qsort_int
        : spec->kind == KEY_REAL ? le_qsort_real
                                 : le_qsort_string);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (m > 0 && le_cmp(spec->kind, &keys[m - 1], &keys[i]) == 0) {
      if (!spec->keep_first) {
        keys[m - 1] = keys[i];  // the last repeat wins
      }
      continue;
    }
    keys[m++] = keys[i];
  }
  *out = keys;
  *out_n = m;
  return NULL;
}

// Returns the value index of |k| in the table, or SIZE_MAX.
static size_t le_find(const le_key_t *keys, size_t n, key_kind_t kind,
                      const le_key_t *k) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = le_cmp(kind, &keys[mid], k);
    if (c == 0) {
      return keys[mid].value;
    }
    if (c < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return SIZE_MAX;
}

// Writes value |v| (SIZE_MAX: the default) to element |i| of |y|.
static wm_status_t le_store(const le_spec_t *spec, wm_tensor_t *y, size_t i,
                            size_t v) {
  const le_list_t *vals = &spec->values;
  if (spec->v1 && !spec->v1_to_string) {
    wm_tensor_set_i64(y, i, v == SIZE_MAX ? spec->def_i : (int64_t)v);
    return NULL;
  }
  if (y->dtype == WM_DTYPE_STRING) {
    const char *s = spec->def_s;
    if (v != SIZE_MAX) {
      s = vals->attr ? vals->attr->strings[v] : elem_string(vals->t, v);
    }
    return wm_tensor_set_string(y, i, s, strlen(s));
  }
  if (wm_dtype_is_float(y->dtype)) {
    double r = spec->def_r;
    if (v != SIZE_MAX) {
      r = vals->attr ? vals->attr->floats[v] : wm_tensor_get_f64(vals->t, v);
    }
    wm_tensor_set_f64(y, i, r);
    return NULL;
  }
  int64_t n = spec->def_i;
  if (v != SIZE_MAX) {
    n = vals->attr ? vals->attr->ints[v] : wm_tensor_get_i64(vals->t, v);
  }
  wm_tensor_set_i64(y, i, n);
  return NULL;
}

static wm_status_t le_run(wm_op_ctx_t *ctx) {
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;
  }
  const wm_tensor_t *x = ctx->in[0];
  le_spec_t spec;
  wm_dtype_t od;
  WM_RETURN_IF_ERROR(le_parse(ctx, x->dtype, &spec, &od));
  if (spec.v1_to_string) {
    for (size_t i = 0; i < x->count; i++) {
      int64_t v = wm_tensor_get_i64(x, i);
      bool in = v >= 0 && (uint64_t)v < spec.values.count;
      WM_RETURN_IF_ERROR(le_store(&spec, y, i, in ? (size_t)v : SIZE_MAX));
    }
    return NULL;
  }
  le_key_t *keys;
  size_t n;
  WM_RETURN_IF_ERROR(le_build(ctx, &spec, &keys, &n));
  wm_status_t st = NULL;
  for (size_t i = 0; i < x->count && !st; i++) {
    le_key_t k;
    memset(&k, 0, sizeof(k));
    if (spec.kind == KEY_STRING) {
      k.s = elem_string(x, i);
    } else if (spec.kind == KEY_REAL) {
      k.r = wm_tensor_get_f64(x, i);
    } else if (x->dtype == WM_DTYPE_FLOAT) {
      k.i = float_bits(((const float *)x->data)[i]);
    } else {
      k.i = wm_tensor_get_i64(x, i);
    }
    st = le_store(&spec, y, i, le_find(keys, n, spec.kind, &k));
  }
  free(keys);
  return st;
}

// A binary search per element (an index for opset 1 integers).
static void le_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  size_t n;
  if (!wm_shape_numel(wm_op_in_shape(ctx, 0), &n)) {
    return;
  }
  le_spec_t spec;
  wm_dtype_t od;
  wm_status_t st = le_parse(ctx, wm_op_in_dtype(ctx, 0), &spec, &od);
  if (st) {
    wm_status_free(st);
    return;
  }
  size_t keys = spec.v1_to_string ? 0 : spec.keys.count;
  double probes = 1;
  for (size_t k = keys; k > 1; k /= 2) {
    probes++;
  }
  out->flops = (double)n * probes;
}

// --------------------------------------------------------- TreeEnsemble

enum {
  MODE_LEQ,
  MODE_LT,
  MODE_GTE,
  MODE_GT,
  MODE_EQ,
  MODE_NEQ,
  MODE_MEMBER,
  MODE_COUNT,
};
enum { AGG_AVERAGE, AGG_SUM, AGG_MIN, AGG_MAX, AGG_COUNT };
enum {
  POST_NONE,
  POST_SOFTMAX,
  POST_LOGISTIC,
  POST_SOFTMAX_ZERO,
  POST_PROBIT,
  POST_COUNT,
};

// A checked ensemble. Arrays borrowed from attributes are const; the
// others are owned and freed by te_deinit.
typedef struct tree_ens {
  size_t n_nodes;               // interior nodes (nodes_* length)
  size_t n_leaves;              // leaves (leaf_* length)
  size_t n_trees;               // roots
  int64_t n_targets;            // output columns
  int aggregate;                // AGG_*
  int post;                     // POST_*
  wm_dtype_t dtype;             // of splits, weights and members
  const int64_t *feature;       // per node: feature compared
  const int64_t *true_id;       // per node: next node or leaf if true
  const int64_t *false_id;      // per node: next node or leaf if false
  const int64_t *true_leaf;     // per node: true_id names a leaf
  const int64_t *false_leaf;    // per node: false_id names a leaf
  const int64_t *missing_true;  // per node: NaN goes true; may be NULL
  const int64_t *roots;         // per tree: its root node
  const int64_t *target;        // per leaf: output column
  uint8_t *mode;                // per node: MODE_*
  double *split;                // per node: threshold
  double *weight;               // per leaf: value
  size_t *member_range;         // per node: [start, end) of its set
  double *members;              // sorted sets of the member nodes
  int64_t max_feature;          // largest feature a tree reaches, or -1
  double depth_sum;             // longest path of each tree, summed
} tree_ens_t;

static void te_deinit(tree_ens_t *e) {
  free(e->mode);
  free(e->split);
  free(e->weight);
  free(e->member_range);
  free(e->members);
  memset(e, 0, sizeof(*e));
}

// Copies the 1-D tensor |t| to doubles.
static double *vector_to_f64(const wm_tensor_t *t) {
  double *v = wm_malloc((t->count ? t->count : 1) * sizeof(double));
  if (v) {
    for (size_t i = 0; i < t->count; i++) {
      v[i] = wm_tensor_get_f64(t, i);
    }
  }
  return v;
}

// Splits membership_values into one sorted set per BRANCH_MEMBER node,
// in node order; each set ends with a NaN.
static wm_status_t te_members(const wm_op_ctx_t *ctx, tree_ens_t *e) {
  size_t n_member = 0;
  for (size_t i = 0; i < e->n_nodes; i++) {
    n_member += e->mode[i] == MODE_MEMBER;
  }
  const wm_tensor_t *mv;
  WM_RETURN_IF_ERROR(attr_vector(ctx, "membership_values", n_member > 0, &mv));
  if (!mv) {
    return NULL;
  }
  if (mv->dtype != e->dtype) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"membership_values\" has dtype %s, want %s "
                       "like nodes_splits",
                       wm_dtype_name(mv->dtype), wm_dtype_name(e->dtype));
  }
  size_t n_sets = 0;
  for (size_t i = 0; i < mv->count; i++) {
    n_sets += isnan(wm_tensor_get_f64(mv, i));
  }
  if (n_sets != n_member ||
      (mv->count > 0 && !isnan(wm_tensor_get_f64(mv, mv->count - 1)))) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"membership_values\" holds %zu NaN-ended "
                       "sets, want one for each of the %zu BRANCH_MEMBER "
                       "nodes",
                       n_sets, n_member);
  }
  e->members = vector_to_f64(mv);
  e->member_range = wm_calloc(e->n_nodes ? e->n_nodes : 1, 2 * sizeof(size_t));
  if (!e->members || !e->member_range) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
  }
  size_t pos = 0;
  for (size_t i = 0; i < e->n_nodes; i++) {
    if (e->mode[i] != MODE_MEMBER) {
      continue;
    }
    size_t end = pos;
    while (!isnan(e->members[end])) {
      end++;
    }
    qsort(e->members + pos, end - pos, sizeof(double), cmp_double_qsort);
    e->member_range[2 * i] = pos;
    e->member_range[2 * i + 1] = end;
    pos = end + 1;
  }
  return NULL;
}

// Checks that the trees have no cycles and measures them: the longest
// path of each tree and the largest feature reached.
static wm_status_t te_walk_check(const wm_op_ctx_t *ctx, tree_ens_t *e) {
  size_t n = e->n_nodes;
  uint8_t *state = wm_calloc(n ? n : 1, 1);  // 0 new, 1 open, 2 done
  size_t *depth = wm_calloc(n ? n : 1, sizeof(size_t));
  size_t cap;
  size_t *stack = NULL;
  if (wm_checked_mul(n, 2, &cap) && wm_checked_add(cap, 1, &cap)) {
    stack = wm_calloc(cap, sizeof(size_t));
  }
  wm_status_t st = NULL;
  if (!state || !depth || !stack) {
    st = WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  e->max_feature = -1;
  e->depth_sum = 0;
  for (size_t t = 0; t < e->n_trees && !st; t++) {
    size_t sp = 0;
    stack[sp++] = (size_t)e->roots[t];
    while (sp > 0 && !st) {
      size_t u = stack[sp - 1];
      if (state[u] == 2) {
        sp--;
        continue;
      }
      const int64_t child[2] = {e->true_leaf[u] ? -1 : e->true_id[u],
                                e->false_leaf[u] ? -1 : e->false_id[u]};
      if (state[u] == 1) {
        size_t d = 0;
        for (int c = 0; c < 2; c++) {
          if (child[c] >= 0 && depth[child[c]] > d) {
            d = depth[child[c]];
          }
        }
        depth[u] = d + 1;
        state[u] = 2;
        if (e->feature[u] > e->max_feature) {
          e->max_feature = e->feature[u];
        }
        sp--;
        continue;
      }
      state[u] = 1;
      for (int c = 0; c < 2; c++) {
        if (child[c] < 0) {
          continue;
        }
        if (state[child[c]] == 1) {
          st = WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                           "node %zu leads back to node %lld: the trees "
                           "must not have cycles",
                           u, (long long)child[c]);
          break;
        }
        if (state[child[c]] == 0) {
          stack[sp++] = (size_t)child[c];
        }
      }
    }
    e->depth_sum += (double)depth[e->roots[t]];
  }
done:
  free(state);
  free(depth);
  free(stack);
  return st;
}

// Checks that ids[i] (a leaf where is_leaf[i], else a node) is in range.
static wm_status_t te_check_ids(const wm_op_ctx_t *ctx, const tree_ens_t *e,
                                const char *name, const int64_t *ids,
                                const int64_t *is_leaf) {
  for (size_t i = 0; i < e->n_nodes; i++) {
    size_t limit = is_leaf[i] ? e->n_leaves : e->n_nodes;
    if (ids[i] < 0 || (uint64_t)ids[i] >= limit) {
      return WM_OP_ERROR(
          ctx, OUT_OF_RANGE, "%s[%zu] is %lld, want a %s in [0, %zu)", name, i,
          (long long)ids[i], is_leaf[i] ? "leaf" : "node", limit);
    }
  }
  return NULL;
}

// Reads and checks every attribute; |xd| is the input dtype (UNDEFINED
// when unknown). Release with te_deinit, also on failure.
static wm_status_t te_parse(const wm_op_ctx_t *ctx, wm_dtype_t xd,
                            tree_ens_t *e) {
  memset(e, 0, sizeof(*e));
  const wm_tensor_t *splits, *modes, *weights;
  WM_RETURN_IF_ERROR(attr_vector(ctx, "nodes_splits", true, &splits));
  e->n_nodes = splits->count;
  e->dtype = splits->dtype;
  if (e->dtype != WM_DTYPE_FLOAT && e->dtype != WM_DTYPE_DOUBLE &&
      e->dtype != WM_DTYPE_FLOAT16) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"nodes_splits\" has dtype %s, want float, "
                       "double or float16",
                       wm_dtype_name(e->dtype));
  }
  if (xd != WM_DTYPE_UNDEFINED && xd != e->dtype) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has dtype %s but attribute \"nodes_splits\" "
                       "holds %s",
                       wm_dtype_name(xd), wm_dtype_name(e->dtype));
  }
  size_t n = e->n_nodes;
  WM_RETURN_IF_ERROR(
      attr_ints_len(ctx, "nodes_featureids", true, n, &e->feature));
  WM_RETURN_IF_ERROR(
      attr_ints_len(ctx, "nodes_truenodeids", true, n, &e->true_id));
  WM_RETURN_IF_ERROR(
      attr_ints_len(ctx, "nodes_falsenodeids", true, n, &e->false_id));
  WM_RETURN_IF_ERROR(
      attr_ints_len(ctx, "nodes_trueleafs", true, n, &e->true_leaf));
  WM_RETURN_IF_ERROR(
      attr_ints_len(ctx, "nodes_falseleafs", true, n, &e->false_leaf));
  WM_RETURN_IF_ERROR(attr_ints_len(ctx, "nodes_missing_value_tracks_true",
                                   false, n, &e->missing_true));
  WM_RETURN_IF_ERROR(attr_vector(ctx, "nodes_modes", true, &modes));
  if (!wm_dtype_is_int(modes->dtype) || modes->count != n) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"nodes_modes\" holds %zu %s values, want "
                       "%zu uint8 values",
                       modes->count, wm_dtype_name(modes->dtype), n);
  }
  WM_RETURN_IF_ERROR(attr_vector(ctx, "leaf_weights", true, &weights));
  e->n_leaves = weights->count;
  if (weights->dtype != e->dtype) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"leaf_weights\" has dtype %s, want %s like "
                       "nodes_splits",
                       wm_dtype_name(weights->dtype), wm_dtype_name(e->dtype));
  }
  WM_RETURN_IF_ERROR(
      attr_ints_len(ctx, "leaf_targetids", true, e->n_leaves, &e->target));
  const wm_attr_t *roots;
  WM_RETURN_IF_ERROR(
      wm_op_attr_find(ctx, "tree_roots", WM_ATTR_INTS, true, &roots));
  e->roots = roots->ints;
  e->n_trees = roots->count;

  int64_t agg, post;
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "aggregate_function", 1, &agg));
  WM_RETURN_IF_ERROR(wm_op_attr_int(ctx, "post_transform", 0, &post));
  if (agg < 0 || agg >= AGG_COUNT) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"aggregate_function\" is %lld, want 0 "
                       "(AVERAGE), 1 (SUM), 2 (MIN) or 3 (MAX)",
                       (long long)agg);
  }
  if (post < 0 || post >= POST_COUNT) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"post_transform\" is %lld, want 0 (NONE), "
                       "1 (SOFTMAX), 2 (LOGISTIC), 3 (SOFTMAX_ZERO) or 4 "
                       "(PROBIT)",
                       (long long)post);
  }
  e->aggregate = (int)agg;
  e->post = (int)post;

  // Without n_targets the leaves say how many targets there are.
  int64_t max_target = -1;
  for (size_t i = 0; i < e->n_leaves; i++) {
    max_target = e->target[i] > max_target ? e->target[i] : max_target;
  }
  WM_RETURN_IF_ERROR(
      wm_op_attr_int(ctx, "n_targets", max_target + 1, &e->n_targets));
  if (e->n_targets < 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "attribute \"n_targets\" is %lld, want at least 1",
                       (long long)e->n_targets);
  }
  for (size_t i = 0; i < e->n_leaves; i++) {
    if (e->target[i] < 0 || e->target[i] >= e->n_targets) {
      return WM_OP_ERROR(ctx, OUT_OF_RANGE,
                         "leaf_targetids[%zu] is %lld, want a target in [0, "
                         "%lld)",
                         i, (long long)e->target[i], (long long)e->n_targets);
    }
  }
  for (size_t t = 0; t < e->n_trees; t++) {
    if (e->roots[t] < 0 || (uint64_t)e->roots[t] >= n) {
      return WM_OP_ERROR(ctx, OUT_OF_RANGE,
                         "tree_roots[%zu] is %lld, want a node in [0, %zu)", t,
                         (long long)e->roots[t], n);
    }
  }
  for (size_t i = 0; i < n; i++) {
    if (e->feature[i] < 0) {
      return WM_OP_ERROR(ctx, OUT_OF_RANGE,
                         "nodes_featureids[%zu] is %lld, want at least 0", i,
                         (long long)e->feature[i]);
    }
  }
  WM_RETURN_IF_ERROR(
      te_check_ids(ctx, e, "nodes_truenodeids", e->true_id, e->true_leaf));
  WM_RETURN_IF_ERROR(
      te_check_ids(ctx, e, "nodes_falsenodeids", e->false_id, e->false_leaf));

  e->mode = wm_malloc(n ? n : 1);
  e->split = vector_to_f64(splits);
  e->weight = vector_to_f64(weights);
  if (!e->mode || !e->split || !e->weight) {
    return WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory for %zu nodes",
                       n);
  }
  for (size_t i = 0; i < n; i++) {
    int64_t m = wm_tensor_get_i64(modes, i);
    if (m < 0 || m >= MODE_COUNT) {
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "nodes_modes[%zu] is %lld, want 0 (BRANCH_LEQ) to 6 "
                         "(BRANCH_MEMBER)",
                         i, (long long)m);
    }
    e->mode[i] = (uint8_t)m;
  }
  WM_RETURN_IF_ERROR(te_members(ctx, e));
  return te_walk_check(ctx, e);
}

static wm_status_t te_infer(wm_op_ctx_t *ctx) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  if (xs->rank >= 0 && xs->rank != 2) {
    char buf[64];
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "input 0 has shape %s, want [N, features]",
                       wm_shape_format(xs, buf, sizeof(buf)));
  }
  tree_ens_t e;
  wm_status_t st = te_parse(ctx, wm_op_in_dtype(ctx, 0), &e);
  if (!st && xs->rank == 2 && xs->dims[1] >= 0 &&
      e.max_feature >= xs->dims[1]) {
    st = WM_OP_ERROR(ctx, OUT_OF_RANGE,
                     "a tree reads feature %lld but input 0 has %lld "
                     "features",
                     (long long)e.max_feature, (long long)xs->dims[1]);
  }
  if (!st) {
    wm_shape_t out = {2, {xs->rank == 2 ? xs->dims[0] : -1, e.n_targets}};
    wm_op_set_out(ctx, 0, e.dtype, &out);
  }
  te_deinit(&e);
  return st;
}

// Returns true when |v| is in the sorted set of member node |u|.
static bool te_is_member(const tree_ens_t *e, size_t u, double v) {
  size_t lo = e->member_range[2 * u], hi = e->member_range[2 * u + 1];
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (e->members[mid] == v) {
      return true;
    }
    if (e->members[mid] < v) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return false;
}

// Returns true when sample value |x| takes the true branch of node |u|.
static bool te_goes_true(const tree_ens_t *e, size_t u, double x) {
  if (isnan(x) && e->missing_true && e->missing_true[u]) {
    return true;
  }
  double s = e->split[u];
  switch (e->mode[u]) {
    case MODE_LEQ:
      return x <= s;
    case MODE_LT:
      return x < s;
    case MODE_GTE:
      return x >= s;
    case MODE_GT:
      return x > s;
    case MODE_EQ:
      return x == s;
    case MODE_NEQ:
      return x != s;
    default:
      return te_is_member(e, u, x);
  }
}

// Returns the leaf sample |row| (|features| values of |x|) reaches in
// the tree rooted at |root|; te_walk_check ruled out cycles.
static size_t te_leaf(const tree_ens_t *e, const wm_tensor_t *x, size_t row,
                      size_t features, size_t root) {
  size_t u = root;
  for (;;) {
    double v = wm_tensor_get_f64(x, row * features + (size_t)e->feature[u]);
    bool t = te_goes_true(e, u, v);
    size_t next = (size_t)(t ? e->true_id[u] : e->false_id[u]);
    if (t ? e->true_leaf[u] : e->false_leaf[u]) {
      return next;
    }
    u = next;
  }
}

// Returns x > 0 with erfc(x) = 2q for 0 < q <= 0.5. The start is
// Giles's single-precision erfinv approximation ("Approximating the
// erfinv function") near the centre and the asymptote erfc(x) ~
// exp(-x^2) / (x sqrt(pi)) in the tails; Newton steps then polish it.
static double erfc_inv_half(double q) {
  const double sqrt_pi = 1.7724538509055160;
  double w = -log(4.0 * q * (1.0 - q));
  bool centre = w < 5.0;
  double x;
  if (centre) {
    w -= 2.5;
    double p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
    x = p * (1.0 - 2.0 * q);
  } else {
    double l = -log(2.0 * q);
    x = sqrt(l);
    x = sqrt(l - log(x * sqrt_pi));
  }
  // Newton steps: on erf(x) - (1 - 2q) near the centre, where erf keeps
  // the digits of small x, and on log(erfc(x)) - log(2q) in the tails,
  // where erfc is too flat to step on.
  for (int i = 0; i < 8; i++) {
    double slope = 2.0 / sqrt_pi * exp(-x * x);
    double step;
    if (centre) {
      step = (erf(x) - (1.0 - 2.0 * q)) / slope;
    } else {
      double e = erfc(x);
      if (!(e > 0) || !(slope > 0)) {
        break;  // erfc or exp underflows (q below about 1e-300)
      }
      step = -(log(e) - log(2.0 * q)) * e / slope;
    }
    x -= step;
    if (fabs(step) <= 1e-15 * fabs(x)) {
      break;
    }
  }
  return x;
}

// The standard normal quantile of |p|: NaN outside [0, 1].
static double probit(double p) {
  if (!(p >= 0.0 && p <= 1.0)) {
    return NAN;
  }
  if (p == 0.0 || p == 1.0) {
    return p == 0.0 ? -INFINITY : INFINITY;
  }
  double q = p < 0.5 ? p : 1.0 - p;
  double x = sqrt(2.0) * erfc_inv_half(q);
  return p < 0.5 ? -x : x;
}

// Applies the post transform to the |n| scores of one sample.
static void te_post(int post, double *v, size_t n) {
  if (post == POST_NONE) {
    return;
  }
  if (post == POST_LOGISTIC || post == POST_PROBIT) {
    for (size_t i = 0; i < n; i++) {
      if (post == POST_PROBIT) {
        v[i] = probit(v[i]);
      } else if (v[i] >= 0) {
        v[i] = 1.0 / (1.0 + exp(-v[i]));
      } else {
        double z = exp(v[i]);
        v[i] = z / (1.0 + z);
      }
    }
    return;
  }
  double m = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    m = v[i] > m ? v[i] : m;
  }
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    // SOFTMAX_ZERO leaves (near-)zero scores at (near-)zero weight.
    if (post == POST_SOFTMAX_ZERO && fabs(v[i]) <= 1e-7) {
      v[i] *= exp(-m);
    } else {
      v[i] = exp(v[i] - m);
    }
    sum += v[i];
  }
  for (size_t i = 0; i < n; i++) {
    v[i] = post == POST_SOFTMAX_ZERO && sum == 0 ? 0.5 : v[i] / sum;
  }
}

// The largest finite value of float type |d|.
static double largest_finite(wm_dtype_t d) {
  return d == WM_DTYPE_DOUBLE    ? DBL_MAX
         : d == WM_DTYPE_FLOAT16 ? 65504.0
                                 : (double)FLT_MAX;
}

static wm_status_t te_run(wm_op_ctx_t *ctx) {
  wm_tensor_t *y = ctx->out[0];
  if (!y) {
    return NULL;
  }
  const wm_tensor_t *x = ctx->in[0];
  tree_ens_t e;
  wm_status_t st = te_parse(ctx, x->dtype, &e);
  double *acc = NULL;
  if (!st) {
    acc = wm_calloc((size_t)e.n_targets, sizeof(double));
    if (!acc) {
      st =
          WM_OP_ERROR(ctx, RESOURCE_EXHAUSTED, "out of memory for %lld targets",
                      (long long)e.n_targets);
    }
  }
  size_t rows = (size_t)x->shape.dims[0];
  size_t features = (size_t)x->shape.dims[1];
  size_t nt = (size_t)e.n_targets;
  if (!st && rows > 0 && e.max_feature >= (int64_t)features) {
    st = WM_OP_ERROR(ctx, OUT_OF_RANGE,
                     "a tree reads feature %lld but input 0 has %zu features",
                     (long long)e.max_feature, features);
  }
  // An empty MIN or MAX starts from the extreme value, as the ONNX
  // reference does.
  double start = e.aggregate == AGG_MIN   ? largest_finite(e.dtype)
                 : e.aggregate == AGG_MAX ? -largest_finite(e.dtype)
                                          : 0.0;
  for (size_t r = 0; r < rows && !st; r++) {
    for (size_t k = 0; k < nt; k++) {
      acc[k] = start;
    }
    for (size_t t = 0; t < e.n_trees; t++) {
      size_t leaf = te_leaf(&e, x, r, features, (size_t)e.roots[t]);
      double w = e.weight[leaf];
      double *a = &acc[e.target[leaf]];
      switch (e.aggregate) {
        case AGG_MIN:
          *a = w < *a ? w : *a;
          break;
        case AGG_MAX:
          *a = w > *a ? w : *a;
          break;
        default:
          *a += w;
          break;
      }
    }
    if (e.aggregate == AGG_AVERAGE && e.n_trees > 0) {
      for (size_t k = 0; k < nt; k++) {
        acc[k] /= (double)e.n_trees;
      }
    }
    te_post(e.post, acc, nt);
    for (size_t k = 0; k < nt; k++) {
      wm_tensor_set_f64(y, r * nt + k, acc[k]);
    }
  }
  free(acc);
  te_deinit(&e);
  return st;
}

// One comparison per level of each tree (its longest path, an upper
// bound), one accumulation per tree, and the post transform.
static void te_cost(const wm_op_ctx_t *ctx, wm_op_cost_t *out) {
  const wm_shape_t *xs = wm_op_in_shape(ctx, 0);
  size_t n;
  if (xs->rank != 2 || xs->dims[0] < 0 || !wm_shape_numel(xs, &n)) {
    return;
  }
  tree_ens_t e;
  wm_status_t st = te_parse(ctx, wm_op_in_dtype(ctx, 0), &e);
  if (st) {
    wm_status_free(st);
    te_deinit(&e);
    return;
  }
  double rows = (double)xs->dims[0];
  double outs = rows * (double)e.n_targets;
  out->flops = rows * (e.depth_sum + (double)e.n_trees) + outs;
  out->transcendentals = e.post == POST_NONE ? 0.0 : outs;
  te_deinit(&e);
}

// ---------------------------------------------------------------- table

#define LE_TYPES_1 (WM_T(STRING) | WM_T(INT64))
#define LE_TYPES_2 (LE_TYPES_1 | WM_T(FLOAT))
#define LE_TYPES_4 (LE_TYPES_2 | WM_T(INT32) | WM_T(INT16) | WM_T(DOUBLE))
#define AFE_TYPES \
  (WM_T(FLOAT) | WM_T(DOUBLE) | WM_T(INT64) | WM_T(INT32) | WM_T(STRING))
#define BINARIZER_TYPES (WM_T(FLOAT) | WM_T(DOUBLE) | WM_T(INT64) | WM_T(INT32))
#define TE_TYPES (WM_T(FLOAT) | WM_T(DOUBLE) | WM_T(FLOAT16))

const wm_op_def_t wm_ops_ml[] = {
    {"ArrayFeatureExtractor", ML_DOMAIN, 1, 2, 2, 1, 1, AFE_TYPES, afe_infer,
     afe_run, wm_op_cost_zero},
    {"Binarizer", ML_DOMAIN, 1, 1, 1, 1, 1, BINARIZER_TYPES, wm_op_infer_same,
     binarizer_run, NULL},
    {"LabelEncoder", ML_DOMAIN, 1, 1, 1, 1, 1, LE_TYPES_1, le_infer, le_run,
     le_cost},
    {"LabelEncoder", ML_DOMAIN, 2, 1, 1, 1, 1, LE_TYPES_2, le_infer, le_run,
     le_cost},
    {"LabelEncoder", ML_DOMAIN, 4, 1, 1, 1, 1, LE_TYPES_4, le_infer, le_run,
     le_cost},
    {"TreeEnsemble", ML_DOMAIN, 5, 1, 1, 1, 1, TE_TYPES, te_infer, te_run,
     te_cost},
    WM_OPS_END,
};
