// The tensor-parallel partition (parallel.h): one walk over the nodes in
// topological order tracking, per value, whether every rank holds it whole
// (a constant or a replicated activation) or split along one axis, and
// writing the rank's graph as it goes. A split value is named "<name>@tp"
// in the partition; its whole form, once gathered, keeps the original
// name, so graph inputs and outputs keep theirs.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "parallel/parallel.h"

enum { ST_CONST = 0, ST_WHOLE = 1, ST_SPLIT = 2 };

typedef struct st {
  uint8_t kind;
  int8_t axis;  // ST_SPLIT: the split axis
  int8_t seg;   // ST_SPLIT: equal segments, each split over the ranks
} st_t;

typedef struct tp {
  const wm_graph_t *g;
  wm_graph_t *out;
  int32_t n, r;             // ranks, this rank
  st_t *st;                 // per value of g
  bool *whole;              // a split value whose whole form was gathered
  bool *placed;             // an initializer of g copied into the partition
  int32_t *cons_at, *cons;  // consumers of each value (CSR)
  wm_tp_summary_t sum;
} tp_t;

// ------------------------------------------------------------ helpers

static const char *name_of(const tp_t *t, int32_t v) {
  return t->g->values[v].name;
}

static const wm_shape_t *shape_of(const tp_t *t, int32_t v) {
  return &t->g->values[v].type.shape;
}

// A name interned in the partition.
static const char *fmt_name(tp_t *t, const char *fmt, ...) WM_PRINTF(2, 3);
static const char *fmt_name(tp_t *t, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return wm_graph_intern(t->out, buf);
}

static uint64_t value_bytes(const tp_t *t, int32_t v) {
  size_t numel = 0;
  const wm_value_t *x = &t->g->values[v];
  if (!wm_shape_numel(&x->type.shape, &numel)) {
    return 0;
  }
  return (uint64_t)numel * wm_dtype_size(x->type.dtype);
}

static bool is_op(const wm_node_t *n, const char *op) {
  return wm_domain_is_onnx(n->domain) && strcmp(n->op_type, op) == 0;
}

// Elementwise operators: a split operand keeps the output split.
static bool is_elementwise(const wm_node_t *n) {
  static const char *const ops[] = {
      "Abs",         "Add",       "And",        "Cast",
      "Ceil",        "Clip",      "Cos",        "Div",
      "Elu",         "Equal",     "Erf",        "Exp",
      "Floor",       "Gelu",      "Greater",    "GreaterOrEqual",
      "HardSigmoid", "HardSwish", "LeakyRelu",  "Less",
      "LessOrEqual", "Log",       "Max",        "Min",
      "Mod",         "Mul",       "Neg",        "Not",
      "Or",          "Pow",       "Reciprocal", "Relu",
      "Round",       "Selu",      "Sigmoid",    "Sign",
      "Sin",         "Softplus",  "Softsign",   "Sqrt",
      "Sub",         "Sum",       "Tan",        "Tanh",
      "Where",       "Xor",
  };
  if (!wm_domain_is_onnx(n->domain) || n->output_count != 1) {
    return false;
  }
  for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
    if (strcmp(n->op_type, ops[i]) == 0) {
      return true;
    }
  }
  return false;
}

// Adds node |n|'s copy reading |ins| and writing |outs|, with its
// attributes but |skip| (may be NULL).
static wm_status_t emit_like(tp_t *t, const wm_node_t *n,
                             const char *const *ins, const char *const *outs,
                             const char *skip, int32_t *out_id) {
  int32_t id = -1;
  WM_RETURN_IF_ERROR(wm_graph_add_node(t->out, n->op_type, n->domain, n->name,
                                       ins, n->input_count, outs,
                                       n->output_count, &id));
  if (!skip) {
    WM_RETURN_IF_ERROR(wm_graph_copy_attrs(t->out, id, n));
  } else {
    for (int32_t i = 0; i < n->attr_count; i++) {
      if (strcmp(n->attrs[i].name, skip) != 0) {
        WM_RETURN_IF_ERROR(wm_graph_add_attr(t->out, id, &n->attrs[i]));
      }
    }
  }
  if (out_id) {
    *out_id = id;
  }
  return NULL;
}

static wm_status_t add_ints(tp_t *t, const char *name, size_t count,
                            const int64_t *v) {
  int64_t dims[1] = {(int64_t)count};
  wm_shape_t s = wm_shape_make(1, dims);
  wm_tensor_t *x = NULL;
  WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_INT64, &s, &x));
  if (count) {
    memcpy(x->data, v, count * sizeof(int64_t));
  }
  return wm_graph_add_initializer(t->out, name, x, NULL);
}

// ---------------------------------------------------- whole and split

// Rank r's part of |src| split along |axis| in |seg| segments.
static wm_status_t slice_tensor(const tp_t *t, const wm_tensor_t *src,
                                int32_t axis, int32_t seg, wm_tensor_t **out) {
  if (src->dtype == WM_DTYPE_STRING) {
    return WM_ERROR(UNIMPLEMENTED, "a string constant cannot be split");
  }
  wm_shape_t s = src->shape;
  int64_t d = s.dims[axis], block = d / seg / t->n;
  s.dims[axis] = d / t->n;
  WM_RETURN_IF_ERROR(wm_tensor_create(src->dtype, &s, out));
  size_t outer = 1, inner = wm_dtype_size(src->dtype);
  for (int32_t i = 0; i < axis; i++) {
    outer *= (size_t)s.dims[i];
  }
  for (int32_t i = axis + 1; i < s.rank; i++) {
    inner *= (size_t)s.dims[i];
  }
  const char *from = src->data;
  char *to = (*out)->data;
  size_t run = (size_t)block * inner;
  for (size_t o = 0; o < outer; o++) {
    for (int32_t k = 0; k < seg; k++) {
      size_t at = (o * (size_t)d + (size_t)k * (size_t)(d / seg) +
                   (size_t)t->r * (size_t)block) *
                  inner;
      memcpy(to + (o * (size_t)seg + (size_t)k) * run, from + at, run);
    }
  }
  return NULL;
}

// The name holding value |v| whole in the partition: a graph input or a
// node output keeps its name, an initializer is copied on first use, a
// split value is gathered (once).
static wm_status_t whole(tp_t *t, int32_t v, const char **out) {
  const wm_value_t *x = &t->g->values[v];
  *out = x->name;
  if (t->st[v].kind == ST_SPLIT) {
    if (t->whole[v]) {
      return NULL;
    }
    const char *in[] = {fmt_name(t, "%s@tp", x->name)};
    const char *o[] = {x->name};
    int32_t id = -1;
    WM_RETURN_IF_ERROR(wm_graph_add_node(t->out, "AllGather", "wmap",
                                         fmt_name(t, "%s/allgather", x->name),
                                         in, 1, o, 1, &id));
    WM_RETURN_IF_ERROR(
        wm_graph_add_attr_int(t->out, id, "axis", t->st[v].axis));
    WM_RETURN_IF_ERROR(
        wm_graph_add_attr_int(t->out, id, "segments", t->st[v].seg));
    WM_RETURN_IF_ERROR(wm_graph_add_attr_int(t->out, id, "ranks", t->n));
    t->whole[v] = true;
    t->sum.all_gather_calls++;
    t->sum.all_gather_bytes += value_bytes(t, v);
    return NULL;
  }
  if (x->initializer && !x->is_input && !t->placed[v]) {
    wm_tensor_t *copy = NULL;
    WM_RETURN_IF_ERROR(wm_tensor_clone(x->initializer, &copy));
    WM_RETURN_IF_ERROR(wm_graph_add_initializer(t->out, x->name, copy, NULL));
    t->placed[v] = true;
  }
  return NULL;
}

// Rank r's part of whole value |v| along |axis| in |seg| segments: a
// sliced constant, or Slice (and Concat) nodes on an activation.
static wm_status_t split_of(tp_t *t, int32_t v, int32_t axis, int32_t seg,
                            const char **out) {
  const wm_value_t *x = &t->g->values[v];
  const char *name = fmt_name(t, "%s@tp%d.%d", x->name, axis, seg);
  *out = name;
  if (!name) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  if (wm_graph_find_value(t->out, name) >= 0) {
    return NULL;  // made for an earlier reader
  }
  const wm_tensor_t *c = x->initializer;
  if (c && !x->is_input) {
    wm_tensor_t *part = NULL;
    WM_RETURN_IF_ERROR(slice_tensor(t, c, axis, seg, &part));
    return wm_graph_add_initializer(t->out, name, part, NULL);
  }
  const char *src;
  WM_RETURN_IF_ERROR(whole(t, v, &src));
  int64_t d = shape_of(t, v)->dims[axis], block = d / seg / t->n;
  const char *parts[64];
  if (seg > 64) {
    return WM_ERROR(UNIMPLEMENTED, "%d segments", seg);
  }
  for (int32_t k = 0; k < seg; k++) {
    int64_t start = k * (d / seg) + t->r * block, end = start + block,
            ax = axis;
    const char *p = seg == 1 ? name : fmt_name(t, "%s/%d", name, k);
    const char *s = fmt_name(t, "%s/starts", p);
    const char *e = fmt_name(t, "%s/ends", p);
    const char *a = fmt_name(t, "%s/axes", p);
    WM_RETURN_IF_ERROR(add_ints(t, s, 1, &start));
    WM_RETURN_IF_ERROR(add_ints(t, e, 1, &end));
    WM_RETURN_IF_ERROR(add_ints(t, a, 1, &ax));
    const char *in[] = {src, s, e, a};
    const char *o[] = {p};
    WM_RETURN_IF_ERROR(wm_graph_add_node(
        t->out, "Slice", "", fmt_name(t, "%s/slice", p), in, 4, o, 1, NULL));
    parts[k] = p;
  }
  if (seg > 1) {
    const char *o[] = {name};
    int32_t id = -1;
    WM_RETURN_IF_ERROR(wm_graph_add_node(t->out, "Concat", "",
                                         fmt_name(t, "%s/concat", name), parts,
                                         seg, o, 1, &id));
    WM_RETURN_IF_ERROR(wm_graph_add_attr_int(t->out, id, "axis", axis));
  }
  return NULL;
}

static void set_split(tp_t *t, int32_t v, int32_t axis, int32_t seg) {
  t->st[v] = (st_t){ST_SPLIT, (int8_t)axis, (int8_t)seg};
}

// Node |n| as it is, every input whole; its outputs are |kind|.
static wm_status_t copy_whole(tp_t *t, const wm_node_t *n, uint8_t kind) {
  const char *ins[64], *outs[64];
  if (n->input_count > 64 || n->output_count > 64) {
    return WM_ERROR(UNIMPLEMENTED, "node \"%s\" has over 64 inputs or outputs",
                    n->name);
  }
  for (int32_t i = 0; i < n->input_count; i++) {
    ins[i] = "";
    if (n->inputs[i] >= 0) {
      WM_RETURN_IF_ERROR(whole(t, n->inputs[i], &ins[i]));
    }
  }
  for (int32_t i = 0; i < n->output_count; i++) {
    outs[i] = n->outputs[i] >= 0 ? name_of(t, n->outputs[i]) : "";
    if (n->outputs[i] >= 0) {
      t->st[n->outputs[i]] = (st_t){kind, 0, 0};
    }
  }
  return emit_like(t, n, ins, outs, NULL, NULL);
}

// Node |n| with split input |x| (at slot 0) and the other inputs as they
// are named whole; outputs split along |axis| in |seg| segments.
static wm_status_t copy_split(tp_t *t, const wm_node_t *n, int32_t axis,
                              int32_t seg, const char *skip_attr,
                              const char *const *ins_given) {
  const char *ins[64], *outs[64];
  for (int32_t i = 0; i < n->input_count && i < 64; i++) {
    ins[i] = ins_given[i];
  }
  for (int32_t i = 0; i < n->output_count && i < 64; i++) {
    int32_t v = n->outputs[i];
    outs[i] = v >= 0 ? fmt_name(t, "%s@tp", name_of(t, v)) : "";
    if (v >= 0) {
      set_split(t, v, axis, seg);
    }
  }
  return emit_like(t, n, ins, outs, skip_attr, NULL);
}

// ------------------------------------------------------------ MatMul

// Segments a column-parallel output needs: k when it feeds, alone and
// through elementwise ops, a Split of its last axis into k equal parts.
static int32_t segments_for(const tp_t *t, int32_t v) {
  for (int hop = 0; hop < 4; hop++) {
    if (t->cons_at[v + 1] - t->cons_at[v] != 1) {
      return 1;
    }
    const wm_node_t *c = &t->g->nodes[t->cons[t->cons_at[v]]];
    if (is_op(c, "Split") && c->inputs[0] == v) {
      int32_t rank = shape_of(t, v)->rank;
      int64_t axis = wm_node_attr_int(c, "axis", 0);
      axis = axis < 0 ? axis + rank : axis;
      if (axis != rank - 1 || c->output_count < 1) {
        return 1;
      }
      const wm_tensor_t *sizes = c->input_count > 1 && c->inputs[1] >= 0
                                     ? wm_graph_const_value(t->g, c->inputs[1])
                                     : NULL;
      for (size_t i = 0; sizes && i < sizes->count; i++) {
        if (wm_tensor_get_i64(sizes, i) != wm_tensor_get_i64(sizes, 0)) {
          return 1;
        }
      }
      if (wm_node_attr(c, "split")) {
        return 1;  // sizes as an attribute (opset < 13): not followed
      }
      return c->output_count;
    }
    if (!is_elementwise(c) || c->outputs[0] < 0) {
      return 1;
    }
    v = c->outputs[0];
  }
  return 1;
}

// A MatMul of a whole input by a constant [K, N] weight, split by
// columns; false in *done when N does not divide.
static wm_status_t column(tp_t *t, const wm_node_t *n, bool *done) {
  int32_t x = n->inputs[0], w = n->inputs[1], y = n->outputs[0];
  const wm_shape_t *ws = shape_of(t, w);
  int32_t seg = segments_for(t, y);
  if (ws->dims[1] % ((int64_t)seg * t->n) != 0) {
    seg = 1;
  }
  *done = ws->dims[1] % ((int64_t)seg * t->n) == 0 && shape_of(t, y)->rank >= 1;
  if (!*done) {
    return NULL;
  }
  const char *ins[2];
  WM_RETURN_IF_ERROR(whole(t, x, &ins[0]));
  WM_RETURN_IF_ERROR(split_of(t, w, 1, seg, &ins[1]));
  t->sum.column_parallel++;
  return copy_split(t, n, shape_of(t, y)->rank - 1, seg, NULL, ins);
}

// A MatMul of an input split along its last axis by a constant [K, N]
// weight: the rank's rows, a partial sum, an AllReduce.
static wm_status_t row(tp_t *t, const wm_node_t *n) {
  int32_t x = n->inputs[0], w = n->inputs[1], y = n->outputs[0];
  const char *wl;
  WM_RETURN_IF_ERROR(split_of(t, w, 0, 1, &wl));
  const char *partial = fmt_name(t, "%s@partial", name_of(t, y));
  const char *ins[] = {fmt_name(t, "%s@tp", name_of(t, x)), wl};
  const char *outs[] = {partial};
  WM_RETURN_IF_ERROR(emit_like(t, n, ins, outs, NULL, NULL));
  const char *o[] = {name_of(t, y)};
  int32_t id = -1;
  WM_RETURN_IF_ERROR(wm_graph_add_node(
      t->out, "AllReduce", "wmap", fmt_name(t, "%s/allreduce", name_of(t, y)),
      &partial, 1, o, 1, &id));
  WM_RETURN_IF_ERROR(wm_graph_add_attr_int(t->out, id, "ranks", t->n));
  t->st[y] = (st_t){ST_WHOLE, 0, 0};
  t->sum.row_parallel++;
  t->sum.all_reduce_calls++;
  t->sum.all_reduce_bytes += value_bytes(t, y);
  return NULL;
}

// ---------------------------------------------------- split-keeping ops

// Elementwise: every split input split alike (aligned from the right);
// whole operands sliced unless they broadcast along the split axis.
static wm_status_t elementwise(tp_t *t, const wm_node_t *n, bool *done) {
  int32_t rank = shape_of(t, n->outputs[0])->rank, axis = -1, seg = 0;
  *done = false;
  for (int32_t i = 0; i < n->input_count; i++) {
    int32_t v = n->inputs[i];
    if (v < 0 || t->st[v].kind != ST_SPLIT) {
      continue;
    }
    int32_t a = t->st[v].axis + rank - shape_of(t, v)->rank;
    if ((axis >= 0 && (a != axis || t->st[v].seg != seg)) ||
        shape_of(t, v)->dims[t->st[v].axis] !=
            shape_of(t, n->outputs[0])->dims[a]) {
      return NULL;
    }
    axis = a;
    seg = t->st[v].seg;
  }
  const char *ins[64];
  for (int32_t i = 0; i < n->input_count && i < 64; i++) {
    int32_t v = n->inputs[i];
    ins[i] = "";
    if (v < 0) {
      continue;
    }
    if (t->st[v].kind == ST_SPLIT) {
      ins[i] = fmt_name(t, "%s@tp", name_of(t, v));
      continue;
    }
    const wm_shape_t *s = shape_of(t, v);
    int32_t j = axis - (rank - s->rank);
    if (j < 0 || s->dims[j] == 1) {
      WM_RETURN_IF_ERROR(whole(t, v, &ins[i]));
    } else {
      WM_RETURN_IF_ERROR(split_of(t, v, j, seg, &ins[i]));
    }
  }
  *done = true;
  return copy_split(t, n, axis, seg, NULL, ins);
}

static wm_status_t transpose(tp_t *t, const wm_node_t *n, bool *done) {
  int32_t x = n->inputs[0], rank = shape_of(t, x)->rank, a = t->st[x].axis;
  int64_t perm[WM_MAX_RANK];
  const wm_attr_t *p = wm_node_attr(n, "perm");
  for (int32_t i = 0; i < rank; i++) {
    perm[i] = p && (int32_t)p->count == rank ? p->ints[i] : rank - 1 - i;
  }
  int32_t out_axis = -1;
  for (int32_t i = 0; i < rank; i++) {
    out_axis = perm[i] == a ? i : out_axis;
  }
  *done = out_axis >= 0;
  if (!*done) {
    return NULL;
  }
  const char *ins[] = {fmt_name(t, "%s@tp", name_of(t, x))};
  return copy_split(t, n, out_axis, t->st[x].seg, NULL, ins);
}

// Reshape splitting the split axis (the split goes on its outermost part)
// or merging it with the axes after it (it being the outermost).
static wm_status_t reshape(tp_t *t, const wm_node_t *n, bool *done) {
  int32_t x = n->inputs[0], y = n->outputs[0], a = t->st[x].axis;
  const wm_shape_t *is = shape_of(t, x), *os = shape_of(t, y);
  *done = false;
  if (t->st[x].seg != 1 || !wm_shape_is_known(is) || !wm_shape_is_known(os)) {
    return NULL;
  }
  int64_t before = 1;
  for (int32_t i = 0; i < a; i++) {
    before *= is->dims[i];
  }
  int64_t acc = 1;
  int32_t b = 0;
  while (b < os->rank && acc < before) {
    acc *= os->dims[b++];
  }
  if (acc != before || b >= os->rank || os->dims[b] % t->n != 0) {
    return NULL;
  }
  int64_t d = is->dims[a], o = os->dims[b];
  if (!(o == d || (o < d && d % o == 0) || (o > d && o % d == 0))) {
    return NULL;
  }
  int64_t local[WM_MAX_RANK];
  for (int32_t i = 0; i < os->rank; i++) {
    local[i] = os->dims[i];
  }
  local[b] /= t->n;
  const char *shape =
      fmt_name(t, "%s@tp/shape", n->name[0] ? n->name : name_of(t, y));
  WM_RETURN_IF_ERROR(add_ints(t, shape, (size_t)os->rank, local));
  const char *ins[] = {fmt_name(t, "%s@tp", name_of(t, x)), shape};
  *done = true;
  return copy_split(t, n, b, 1, NULL, ins);
}

// Split of the split axis into as many parts as its segments, or of
// another axis.
static wm_status_t split(tp_t *t, const wm_node_t *n, bool *done) {
  int32_t x = n->inputs[0], rank = shape_of(t, x)->rank;
  int64_t axis = wm_node_attr_int(n, "axis", 0);
  axis = axis < 0 ? axis + rank : axis;
  const char *ins[2] = {fmt_name(t, "%s@tp", name_of(t, x)), ""};
  bool has_sizes = n->input_count > 1 && n->inputs[1] >= 0;
  *done = false;
  if (axis != t->st[x].axis) {
    if (has_sizes) {
      WM_RETURN_IF_ERROR(whole(t, n->inputs[1], &ins[1]));
    }
    *done = true;
    return copy_split(t, n, t->st[x].axis, t->st[x].seg, NULL, ins);
  }
  int32_t k = n->output_count;
  int64_t d = shape_of(t, x)->dims[axis];
  if (t->st[x].seg != k || d % ((int64_t)k * t->n) != 0 ||
      wm_node_attr(n, "split")) {
    return NULL;
  }
  if (has_sizes) {
    const wm_tensor_t *sizes = wm_graph_const_value(t->g, n->inputs[1]);
    if (!sizes || (int32_t)sizes->count != k) {
      return NULL;
    }
    int64_t local[64];
    for (int32_t i = 0; i < k && i < 64; i++) {
      if (wm_tensor_get_i64(sizes, (size_t)i) != d / k) {
        return NULL;
      }
      local[i] = d / k / t->n;
    }
    ins[1] = fmt_name(t, "%s@tp/split", n->name[0] ? n->name : name_of(t, x));
    WM_RETURN_IF_ERROR(add_ints(t, ins[1], (size_t)k, local));
  }
  *done = true;
  return copy_split(t, n, (int32_t)axis, 1, NULL, ins);
}

// Rules for a node with a split input; false in *done when none applies.
static wm_status_t split_rule(tp_t *t, const wm_node_t *n, bool *done) {
  *done = false;
  int32_t x = n->input_count > 0 ? n->inputs[0] : -1;
  if (x < 0 || n->output_count < 1 || n->outputs[0] < 0) {
    return NULL;
  }
  const st_t *sx = &t->st[x];
  if (is_op(n, "MatMul") && n->input_count == 2) {
    int32_t w = n->inputs[1];
    const wm_shape_t *xs = shape_of(t, x), *ws = shape_of(t, w);
    if (t->st[w].kind == ST_CONST && ws->rank == 2 && sx->kind == ST_SPLIT &&
        sx->axis == xs->rank - 1 && sx->seg == 1 && ws->dims[0] % t->n == 0) {
      *done = true;
      return row(t, n);
    }
    const st_t *sw = &t->st[w];
    if (sx->kind == ST_SPLIT && sw->kind == ST_SPLIT && xs->rank == ws->rank &&
        xs->rank >= 3 && sx->axis == sw->axis && sx->axis < xs->rank - 2 &&
        sx->seg == 1 && sw->seg == 1) {
      const char *ins[] = {fmt_name(t, "%s@tp", name_of(t, x)),
                           fmt_name(t, "%s@tp", name_of(t, w))};
      *done = true;
      return copy_split(t, n, sx->axis, 1, NULL, ins);
    }
    return NULL;
  }
  if (is_elementwise(n)) {
    return elementwise(t, n, done);
  }
  if (sx->kind != ST_SPLIT) {
    return NULL;
  }
  if (is_op(n, "Identity")) {
    const char *ins[] = {fmt_name(t, "%s@tp", name_of(t, x))};
    *done = true;
    return copy_split(t, n, sx->axis, sx->seg, NULL, ins);
  }
  if (is_op(n, "Transpose")) {
    return transpose(t, n, done);
  }
  if (is_op(n, "Reshape")) {
    return reshape(t, n, done);
  }
  if (is_op(n, "Split")) {
    return split(t, n, done);
  }
  if ((is_op(n, "Softmax") || is_op(n, "LogSoftmax")) &&
      wm_graph_opset(t->g, "") >= 13) {
    int32_t rank = shape_of(t, x)->rank;
    int64_t axis = wm_node_attr_int(n, "axis", -1);
    axis = axis < 0 ? axis + rank : axis;
    if (axis == sx->axis) {
      return NULL;
    }
    const char *ins[] = {fmt_name(t, "%s@tp", name_of(t, x))};
    *done = true;
    return copy_split(t, n, sx->axis, sx->seg, NULL, ins);
  }
  if ((is_op(n, "Shape") || is_op(n, "Size")) && n->attr_count == 0) {
    // The whole value's shape, known: a constant on every rank.
    const wm_shape_t *s = shape_of(t, x);
    int64_t dims[WM_MAX_RANK], numel = 1;
    for (int32_t i = 0; i < s->rank; i++) {
      dims[i] = s->dims[i];
      numel *= s->dims[i];
    }
    int32_t y = n->outputs[0];
    t->st[y] = (st_t){ST_CONST, 0, 0};
    *done = true;
    if (is_op(n, "Size")) {
      wm_shape_t scalar = wm_shape_make(0, NULL);
      wm_tensor_t *v = NULL;
      WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_INT64, &scalar, &v));
      *(int64_t *)v->data = numel;
      return wm_graph_add_initializer(t->out, name_of(t, y), v, NULL);
    }
    return add_ints(t, name_of(t, y), (size_t)s->rank, dims);
  }
  return NULL;
}

static wm_status_t one_node(tp_t *t, const wm_node_t *n) {
  bool any_act = false, any_split = false;
  for (int32_t i = 0; i < n->input_count; i++) {
    int32_t v = n->inputs[i];
    if (v >= 0 && t->st[v].kind != ST_CONST) {
      any_act = true;
      any_split |= t->st[v].kind == ST_SPLIT && !t->whole[v];
    }
  }
  if (!any_act) {
    return copy_whole(t, n, ST_CONST);
  }
  if (any_split) {
    bool done = false;
    WM_RETURN_IF_ERROR(split_rule(t, n, &done));
    if (done) {
      return NULL;
    }
  }
  // Whole inputs (gathered where split): a weight contraction splits by
  // columns, anything else runs whole.
  if (is_op(n, "MatMul") && n->input_count == 2 && n->inputs[1] >= 0 &&
      t->st[n->inputs[1]].kind == ST_CONST &&
      shape_of(t, n->inputs[1])->rank == 2 && n->outputs[0] >= 0) {
    bool done = false;
    WM_RETURN_IF_ERROR(column(t, n, &done));
    if (done) {
      return NULL;
    }
  }
  return copy_whole(t, n, ST_WHOLE);
}

// ------------------------------------------------------------- driver

static wm_status_t consumers(tp_t *t) {
  const wm_graph_t *g = t->g;
  t->cons_at = wm_calloc(g->value_count + 2, sizeof(int32_t));
  size_t edges = 0;
  for (size_t i = 0; i < g->node_count; i++) {
    edges += (size_t)g->nodes[i].input_count;
  }
  t->cons = wm_calloc(edges + 1, sizeof(int32_t));
  if (!t->cons_at || !t->cons) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < g->node_count; i++) {
    for (int32_t k = 0; k < g->nodes[i].input_count; k++) {
      int32_t v = g->nodes[i].inputs[k];
      if (v >= 0) {
        t->cons_at[v + 1]++;
      }
    }
  }
  for (size_t v = 0; v < g->value_count; v++) {
    t->cons_at[v + 1] += t->cons_at[v];
  }
  int32_t *fill = wm_calloc(g->value_count + 1, sizeof(int32_t));
  if (!fill) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < g->node_count; i++) {
    for (int32_t k = 0; k < g->nodes[i].input_count; k++) {
      int32_t v = g->nodes[i].inputs[k];
      if (v >= 0) {
        t->cons[t->cons_at[v] + fill[v]++] = (int32_t)i;
      }
    }
  }
  free(fill);
  return NULL;
}

static wm_status_t partition(tp_t *t) {
  const wm_graph_t *g = t->g;
  for (size_t i = 0; i < g->opset_count; i++) {
    WM_RETURN_IF_ERROR(
        wm_graph_set_opset(t->out, g->opsets[i].domain, g->opsets[i].version));
  }
  WM_RETURN_IF_ERROR(wm_graph_set_opset(t->out, "wmap", 1));
  for (size_t v = 0; v < g->value_count; v++) {
    const wm_value_t *x = &g->values[v];
    t->st[v].kind = x->initializer && !x->is_input ? ST_CONST : ST_WHOLE;
  }
  for (size_t i = 0; i < g->input_count; i++) {
    int32_t v = g->inputs[i];
    WM_RETURN_IF_ERROR(
        wm_graph_add_input(t->out, name_of(t, v), &g->values[v].type, NULL));
    if (g->values[v].initializer) {  // an input with a default
      wm_tensor_t *copy = NULL;
      WM_RETURN_IF_ERROR(wm_tensor_clone(g->values[v].initializer, &copy));
      WM_RETURN_IF_ERROR(
          wm_graph_add_initializer(t->out, name_of(t, v), copy, NULL));
    }
  }
  int32_t *order = NULL;
  WM_RETURN_IF_ERROR(wm_graph_topo_order(g, &order));
  wm_status_t s = NULL;
  for (size_t i = 0; !s && i < g->node_count; i++) {
    const wm_node_t *n = &g->nodes[order[i]];
    s = one_node(t, n);
    if (s) {
      char label[64];
      s = wm_status_annotate(
          s, "node \"%s\" (%s)",
          wm_node_label(g, (size_t)order[i], label, sizeof(label)), n->op_type);
    }
  }
  free(order);
  for (size_t i = 0; !s && i < g->output_count; i++) {
    const char *name;
    s = whole(t, g->outputs[i], &name);
    if (!s) {
      s = wm_graph_add_output(t->out, name, NULL, NULL);
    }
  }
  return s;
}

wm_status_t wm_tp_partition(const wm_graph_t *graph, int32_t tp, int32_t rank,
                            wm_graph_t **out_local,
                            wm_tp_summary_t *out_summary) {
  *out_local = NULL;
  if (tp < 1 || tp > 4096 || rank < 0 || rank >= tp) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "tensor parallelism: rank %d of tp=%d is out of range "
                    "(tp 1..4096)",
                    rank, tp);
  }
  for (size_t v = 0; v < graph->value_count; v++) {
    const wm_value_t *x = &graph->values[v];
    if (x->producer >= 0 && x->type.kind == WM_TYPE_TENSOR &&
        !wm_shape_is_known(&x->type.shape)) {
      return WM_ERROR(FAILED_PRECONDITION,
                      "tensor parallelism needs every shape known; value "
                      "\"%s\" has none (bind the model's dims)",
                      x->name);
    }
  }
  tp_t t = {.g = graph, .n = tp, .r = rank};
  t.st = wm_calloc(graph->value_count + 1, sizeof(*t.st));
  t.whole = wm_calloc(graph->value_count + 1, sizeof(bool));
  t.placed = wm_calloc(graph->value_count + 1, sizeof(bool));
  wm_status_t s = t.st && t.whole && t.placed
                      ? NULL
                      : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  if (!s) {
    s = consumers(&t);
  }
  if (!s) {
    s = wm_graph_create(graph->name ? graph->name : "partition", NULL, &t.out);
  }
  if (!s) {
    s = partition(&t);
  }
  free(t.st);
  free(t.whole);
  free(t.placed);
  free(t.cons_at);
  free(t.cons);
  if (s) {
    wm_graph_destroy(t.out);
    return wm_status_annotate(s, "tensor-parallel partition (rank %d of %d)",
                              rank, tp);
  }
  *out_local = t.out;
  if (out_summary) {
    *out_summary = t.sum;
  }
  return NULL;
}
