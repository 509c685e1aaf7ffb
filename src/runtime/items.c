// The operators of sequences and optionals, SequenceMap and FlexAttention,
// run by the session on host items, and the dispatch of every node the
// session runs itself.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// Input |i| of |node| as an int64 scalar, or |def| when omitted.
static wm_status_t int_input(wm_session_t *s, const wm_node_t *node, int32_t i,
                             int64_t def, int64_t *out) {
  *out = def;
  if (i >= node->input_count || node->inputs[i] < 0) {
    return NULL;
  }
  wm_tensor_t *t;
  bool owned;
  WM_RETURN_IF_ERROR(rt_host_tensor(s, node->inputs[i], &t, &owned));
  wm_status_t st = t->count == 1 ? NULL
                                 : WM_ERROR(INVALID_ARGUMENT,
                                            "input %d has %zu elements, want "
                                            "a scalar",
                                            (int)i, t->count);
  if (!st) {
    *out = wm_tensor_get_i64(t, 0);
  }
  if (owned) {
    wm_tensor_destroy(t);
  }
  return st;
}

// A position in [-n, n + extra - 1] made non-negative, or an error.
static wm_status_t seq_position(const rt_node_t *rn, int64_t pos, size_t n,
                                size_t extra, size_t *out) {
  int64_t len = (int64_t)n;
  if (pos < -len || pos > len - 1 + (int64_t)extra) {
    return WM_ERROR(OUT_OF_RANGE,
                    "node \"%s\": position %lld is outside [%lld, %lld]",
                    rn->label, (long long)pos, (long long)-len,
                    (long long)(len - 1 + (int64_t)extra));
  }
  *out = (size_t)(pos < 0 ? pos + len : pos);
  return NULL;
}

// Refuses a sequence of |n| elements past the session's limit, naming the
// node (|op|) and the length.
static wm_status_t seq_length_check(const wm_session_t *s, const rt_node_t *rn,
                                    const char *op, size_t n) {
  if (n <= (uint64_t)s->options.max_sequence_length) {
    return NULL;
  }
  return WM_ERROR(RESOURCE_EXHAUSTED,
                  "node \"%s\" (%s): a sequence of %zu elements is past the "
                  "limit of %lld; --max-sequence-length raises it",
                  rn->label, op, n, (long long)s->options.max_sequence_length);
}

static wm_status_t split_to_sequence(wm_session_t *s, const wm_node_t *node,
                                     const rt_node_t *rn, wm_tensor_t ***out,
                                     size_t *out_n) {
  wm_tensor_t *x;
  bool owned;
  WM_RETURN_IF_ERROR(rt_host_tensor(s, node->inputs[0], &x, &owned));
  wm_tensor_t *split = NULL;
  bool split_owned = false;
  wm_status_t st = NULL;
  if (node->input_count > 1 && node->inputs[1] >= 0) {
    st = rt_host_tensor(s, node->inputs[1], &split, &split_owned);
  }
  int32_t axis = -1;
  int64_t a = wm_node_attr_int(node, "axis", 0);
  if (!st) {
    axis = (int32_t)(a < 0 ? a + x->shape.rank : a);
    if (axis < 0 || axis >= x->shape.rank || x->dtype == WM_DTYPE_STRING) {
      st = WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (SplitToSequence): axis %lld for rank %d, "
                    "or string input",
                    rn->label, (long long)a, (int)x->shape.rank);
    }
  }
  size_t len = st ? 0 : (size_t)x->shape.dims[axis];
  bool keep = split || wm_node_attr_int(node, "keepdims", 1) != 0;
  // One element per step without a split: refused before the sizes are
  // allocated (an axis of 2^40 over an empty tensor).
  if (!st && !split) {
    st = seq_length_check(s, rn, "SplitToSequence", len);
  }
  // Chunk sizes.
  size_t n = 0;
  size_t cap = split && split->count > len ? split->count : len;
  int64_t *sizes = wm_calloc(cap + 2, sizeof(int64_t));
  if (!st && !sizes) {
    st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  if (!st && !split) {
    for (size_t i = 0; i < len; i++) {
      sizes[n++] = 1;
    }
  } else if (!st && split->shape.rank == 0) {
    int64_t k = wm_tensor_get_i64(split, 0);
    if (k < 1) {
      st = WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (SplitToSequence): split is %lld, want >= 1",
                    rn->label, (long long)k);
    }
    for (size_t at = 0; !st && at < len; at += (size_t)k) {
      sizes[n++] = (int64_t)(len - at < (size_t)k ? len - at : (size_t)k);
    }
  } else if (!st) {
    int64_t sum = 0;
    for (size_t i = 0; !st && i < split->count; i++) {
      int64_t k = wm_tensor_get_i64(split, i);
      if (k < 0) {
        st = WM_ERROR(INVALID_ARGUMENT,
                      "node \"%s\" (SplitToSequence): split[%zu] is %lld",
                      rn->label, i, (long long)k);
        break;
      }
      if (k > (int64_t)len - sum) {
        st = WM_ERROR(INVALID_ARGUMENT,
                      "node \"%s\" (SplitToSequence): split[%zu] is %lld: the "
                      "splits sum to more than the axis' %zu",
                      rn->label, i, (long long)k, len);
        break;
      }
      sizes[n++] = k;
      sum += k;
    }
    if (!st && sum != (int64_t)len) {
      st = WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (SplitToSequence): the splits sum to %lld, "
                    "the axis has %zu",
                    rn->label, (long long)sum, len);
    }
  }
  wm_tensor_t **items = st ? NULL : wm_calloc(n + 1, sizeof(*items));
  if (!st && !items) {
    st = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  size_t esize = st ? 0 : wm_dtype_size(x->dtype), outer = 0, inner = 0;
  if (!st) {
    rt_axis_blocks(&x->shape, axis, esize, &outer, &inner);
  }
  size_t start = 0;
  for (size_t c = 0; !st && c < n; c++) {
    wm_shape_t shape = x->shape;
    shape.dims[axis] = sizes[c];
    if (!keep) {
      memmove(&shape.dims[axis], &shape.dims[axis + 1],
              (size_t)(shape.rank - axis - 1) * sizeof(shape.dims[0]));
      shape.rank--;
    }
    st = wm_tensor_create(x->dtype, &shape, &items[c]);
    for (size_t o = 0; !st && o < outer; o++) {
      memcpy((char *)items[c]->data + o * (size_t)sizes[c] * inner,
             (const char *)x->data + (o * len + start) * inner,
             (size_t)sizes[c] * inner);
    }
    start += (size_t)sizes[c];
  }
  if (st) {
    for (size_t c = 0; items && c < n; c++) {
      wm_tensor_destroy(items[c]);
    }
    free(items);
  } else {
    *out = items;
    *out_n = n;
  }
  free(sizes);
  if (owned) {
    wm_tensor_destroy(x);
  }
  if (split_owned) {
    wm_tensor_destroy(split);
  }
  return st;
}

// The sequence value |id| (borrowed).
static wm_status_t seq_in(wm_session_t *s, int32_t id, const wm_item_t **out) {
  if (id < 0) {  // check_omitted refuses it first
    return WM_ERROR(INTERNAL, "an omitted sequence input was read");
  }
  const rt_val_t *v = &s->vals[id];
  if (!v->is_item || v->item.kind != WM_TYPE_SEQUENCE) {
    return WM_ERROR(INVALID_ARGUMENT, "value \"%s\" is not a sequence",
                    s->graph->values[id].name);
  }
  *out = &v->item;
  return NULL;
}

// SequenceInsert (|insert|) or SequenceErase at |pos| on the session's
// own sequence |seq|, which nothing reads afterwards: its elements move
// into *r and |seq| is left empty.
static wm_status_t seq_edit_in_place(wm_session_t *s, const wm_node_t *node,
                                     wm_item_t *seq, bool insert, size_t pos,
                                     wm_item_t *r) {
  if (insert) {
    wm_item_t elem;
    WM_RETURN_IF_ERROR(rt_own_item(s, node->inputs[1], &elem));
    wm_item_t *grown =
        wm_realloc(seq->elems, (seq->count + 2) * sizeof(*grown));
    if (!grown) {
      wm_item_deinit(&elem);
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
    seq->elems = grown;
    memmove(&grown[pos + 1], &grown[pos], (seq->count - pos) * sizeof(*grown));
    grown[pos] = elem;
    seq->count++;
    memset(&grown[seq->count], 0, sizeof(*grown));
    if (seq->elem_dtype == WM_DTYPE_UNDEFINED) {
      seq->elem_dtype = wm_item_dtype(&elem);
    }
  } else {
    wm_item_deinit(&seq->elems[pos]);
    memmove(&seq->elems[pos], &seq->elems[pos + 1],
            (seq->count - pos - 1) * sizeof(*seq->elems));
    seq->count--;
    memset(&seq->elems[seq->count], 0, sizeof(*seq->elems));
  }
  *r = *seq;
  memset(seq, 0, sizeof(*seq));
  seq->kind = WM_TYPE_SEQUENCE;
  return NULL;
}

static wm_status_t concat_from_sequence(wm_session_t *s, const wm_node_t *node,
                                        const rt_node_t *rn,
                                        wm_tensor_t **out) {
  const wm_item_t *seq;
  WM_RETURN_IF_ERROR(seq_in(s, node->inputs[0], &seq));
  size_t n = seq->count;
  if (n == 0) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (ConcatFromSequence): the sequence is empty",
                    rn->label);
  }
  for (size_t i = 0; i < n; i++) {
    if (seq->elems[i].kind != WM_TYPE_TENSOR) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "node \"%s\" (ConcatFromSequence): element %zu is not "
                      "a tensor",
                      rn->label, i);
    }
  }
  bool stack = wm_node_attr_int(node, "new_axis", 0) != 0;
  int64_t a = wm_node_attr_int(node, "axis", 0);
  const wm_tensor_t *first = seq->elems[0].tensor;
  int32_t rank = first->shape.rank + (stack ? 1 : 0);
  int32_t axis = (int32_t)(a < 0 ? a + rank : a);
  if (axis < 0 || axis >= rank || first->dtype == WM_DTYPE_STRING) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (ConcatFromSequence): axis %lld for rank "
                    "%d, or strings",
                    rn->label, (long long)a, (int)rank);
  }
  // Each element viewed with a dim of 1 at |axis| when stacking.
  wm_shape_t shape = first->shape;
  if (stack) {
    memmove(&shape.dims[axis + 1], &shape.dims[axis],
            (size_t)(shape.rank - axis) * sizeof(shape.dims[0]));
    shape.dims[axis] = 1;
    shape.rank++;
  }
  int64_t total = 0;
  for (size_t i = 0; i < n; i++) {
    const wm_tensor_t *t = seq->elems[i].tensor;
    bool ok = t->dtype == first->dtype && t->shape.rank == first->shape.rank;
    for (int32_t d = 0, e = 0; ok && d < shape.rank; d++) {
      if (stack && d == axis) {
        continue;
      }
      int64_t dim = t->shape.dims[e++];
      ok = d == axis || dim == shape.dims[d];
      if (d == axis) {
        total += dim;
      }
    }
    if (!ok) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "node \"%s\" (ConcatFromSequence): element %zu does "
                      "not match element 0's type or shape",
                      rn->label, i);
    }
    if (stack) {
      total += 1;
    }
  }
  shape.dims[axis] = total;
  WM_RETURN_IF_ERROR(wm_tensor_create(first->dtype, &shape, out));
  size_t esize = wm_dtype_size(first->dtype), outer, inner;
  rt_axis_blocks(&shape, axis, esize, &outer, &inner);
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    const wm_tensor_t *t = seq->elems[i].tensor;
    size_t steps = stack ? 1 : (size_t)t->shape.dims[axis];
    for (size_t o = 0; o < outer; o++) {
      memcpy((char *)(*out)->data + (o * (size_t)total + at) * inner,
             (const char *)t->data + o * steps * inner, steps * inner);
    }
    at += steps;
  }
  return NULL;
}

// Runs sequence node |index| into results[0].
static wm_status_t run_sequence(wm_session_t *s, size_t index,
                                wm_item_t *results) {
  const wm_node_t *node = &s->graph->nodes[index];
  const rt_node_t *rn = &s->nodes[index];
  const char *op = node->op_type;
  wm_item_t *r = &results[0];
  const wm_item_t *src = NULL;
  size_t pos = 0;
  int64_t p = 0;
  wm_status_t st = NULL;
  if (strcmp(op, "SequenceEmpty") == 0) {
    int64_t dt = wm_node_attr_int(node, "dtype", WM_DTYPE_FLOAT);
    return wm_item_init(r, WM_TYPE_SEQUENCE, WM_TYPE_TENSOR, (wm_dtype_t)dt, 0);
  }
  if (strcmp(op, "SequenceConstruct") == 0) {
    st = wm_item_init(r, WM_TYPE_SEQUENCE, WM_TYPE_TENSOR, WM_DTYPE_UNDEFINED,
                      (size_t)node->input_count);
    for (int32_t i = 0; !st && i < node->input_count; i++) {
      st = rt_own_item(s, node->inputs[i], &r->elems[r->count]);
      r->count += !st;
    }
    if (!st && r->count) {
      r->elem_kind = r->elems[0].kind;
      r->elem_dtype = wm_item_dtype(&r->elems[0]);
    }
    return st;
  }
  if (strcmp(op, "SequenceInsert") == 0 || strcmp(op, "SequenceErase") == 0) {
    bool insert = op[8] == 'I';
    WM_RETURN_IF_ERROR(seq_in(s, node->inputs[0], &src));
    WM_RETURN_IF_ERROR(int_input(s, node, insert ? 2 : 1,
                                 insert ? (int64_t)src->count : -1, &p));
    WM_RETURN_IF_ERROR(seq_position(rn, p, src->count, insert ? 1 : 0, &pos));
    if (insert) {
      WM_RETURN_IF_ERROR(seq_length_check(s, rn, op, src->count + 1));
    }
    if (rt_last_use(s, node->inputs[0])) {
      // Nothing reads the sequence after this node: edit it in place (a
      // loop appending to it stays linear).
      return seq_edit_in_place(s, node, &s->vals[node->inputs[0]].item, insert,
                               pos, r);
    }
    st = wm_item_init(r, WM_TYPE_SEQUENCE, src->elem_kind, src->elem_dtype,
                      src->count + 1);
    for (size_t i = 0; !st && i <= src->count; i++) {
      if (insert && i == pos) {
        st = rt_own_item(s, node->inputs[1], &r->elems[r->count]);
        r->count += !st;
        if (!st && r->elem_dtype == WM_DTYPE_UNDEFINED) {
          r->elem_dtype = wm_item_dtype(&r->elems[r->count - 1]);
        }
      }
      if (!st && i < src->count && (insert || i != pos)) {
        st = wm_item_clone(&src->elems[i], &r->elems[r->count]);
        r->count += !st;
      }
    }
    return st;
  }
  if (strcmp(op, "SequenceAt") == 0) {
    WM_RETURN_IF_ERROR(seq_in(s, node->inputs[0], &src));
    WM_RETURN_IF_ERROR(int_input(s, node, 1, 0, &p));
    WM_RETURN_IF_ERROR(seq_position(rn, p, src->count, 0, &pos));
    return wm_item_clone(&src->elems[pos], r);
  }
  if (strcmp(op, "SequenceLength") == 0) {
    WM_RETURN_IF_ERROR(seq_in(s, node->inputs[0], &src));
    return rt_scalar_item(WM_DTYPE_INT64, (int64_t)src->count, r);
  }
  if (strcmp(op, "SplitToSequence") == 0) {
    wm_tensor_t **parts = NULL;
    size_t n = 0;
    WM_RETURN_IF_ERROR(split_to_sequence(s, node, rn, &parts, &n));
    st = seq_length_check(s, rn, op, n);
    if (!st) {
      st = wm_item_init(r, WM_TYPE_SEQUENCE, WM_TYPE_TENSOR,
                        n ? parts[0]->dtype : WM_DTYPE_UNDEFINED, n);
    }
    for (size_t i = 0; i < n; i++) {
      if (st) {
        wm_tensor_destroy(parts[i]);
      } else {
        r->elems[r->count++] = wm_item_tensor_take(parts[i]);
      }
    }
    free(parts);
    return st;
  }
  wm_tensor_t *t = NULL;
  st = concat_from_sequence(s, node, rn, &t);
  *r = wm_item_tensor_take(t);
  return st;
}

// ----------------------------------------------------- optionals and co

// SequenceMap: the body runs once per position of the input sequence; a
// sequence among the additional inputs gives its element at that
// position, a tensor is passed whole; output j collects the body's
// output j.
static wm_status_t run_sequence_map(wm_session_t *s, size_t index,
                                    rt_sub_inputs_t *in, wm_item_t *results) {
  const wm_node_t *node = &s->graph->nodes[index];
  rt_node_t *rn = &s->nodes[index];
  wm_session_t *sub;
  WM_RETURN_IF_ERROR(rt_sub_session(s, rn, node, "body", 0, &sub));
  const wm_graph_t *body = sub->graph;
  size_t n_in = (size_t)node->input_count, n_out = (size_t)node->output_count;
  if (body->input_count != n_in || body->output_count != n_out) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (SequenceMap): the body has %zu inputs and "
                    "%zu outputs, the node %zu and %zu",
                    rn->label, body->input_count, body->output_count, n_in,
                    n_out);
  }
  wm_item_t *args = wm_calloc(n_in + 1, sizeof(*args));
  bool *owned = wm_calloc(n_in + 1, sizeof(bool));
  wm_item_t *outs = wm_calloc(n_out + 1, sizeof(*outs));
  wm_status_t st = args && owned && outs
                       ? NULL
                       : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  size_t len = 0;
  for (size_t i = 0; !st && i < n_in; i++) {
    st = rt_host_item(s, node->inputs[i], &args[i], &owned[i]);
    if (!st && i == 0 && args[0].kind != WM_TYPE_SEQUENCE) {
      st = WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (SequenceMap): input 0 is not a sequence",
                    rn->label);
    }
    if (!st && i == 0) {
      len = args[0].count;
    } else if (!st && args[i].kind == WM_TYPE_SEQUENCE &&
               args[i].count != len) {
      st = WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (SequenceMap): input %zu has %zu elements, "
                    "input 0 %zu",
                    rn->label, i, args[i].count, len);
    }
  }
  if (!st && len > (uint64_t)s->options.max_iterations) {
    st = WM_ERROR(RESOURCE_EXHAUSTED,
                  "node \"%s\" (SequenceMap): %zu iterations (the sequence "
                  "length) are past the limit of %lld; --max-iterations "
                  "raises it",
                  rn->label, len, (long long)s->options.max_iterations);
  }
  for (size_t j = 0; !st && j < n_out; j++) {
    const wm_type_t *t = &body->values[body->outputs[j]].type;
    st = wm_item_init(&results[j], WM_TYPE_SEQUENCE, t->kind, t->dtype, len);
  }
  if (!st) {
    st = rt_sub_add_outer(s, body, in);
  }
  size_t n_outer = in->n;
  for (size_t e = 0; !st && e < len; e++) {
    rt_sub_truncate(in, n_outer);
    for (size_t i = 0; !st && i < n_in; i++) {
      st = rt_sub_add(
          in, body->values[body->inputs[i]].name,
          args[i].kind == WM_TYPE_SEQUENCE ? args[i].elems[e] : args[i], false);
    }
    if (!st) {
      st = rt_sub_run(s, sub, in, outs);
    }
    for (size_t j = 0; !st && j < n_out; j++) {
      wm_item_t *seq = &results[j];
      seq->elems[seq->count++] = outs[j];
      if (seq->elem_dtype == WM_DTYPE_UNDEFINED) {
        seq->elem_kind = outs[j].kind;
        seq->elem_dtype = wm_item_dtype(&outs[j]);
      }
      memset(&outs[j], 0, sizeof(outs[j]));
    }
  }
  for (size_t i = 0; args && i < n_in; i++) {
    if (owned[i]) {
      wm_item_deinit(&args[i]);
    }
  }
  free(args);
  free(owned);
  free(outs);
  return st;
}

// Optional, OptionalHasElement and OptionalGetElement; Identity of a
// sequence or optional.
static wm_status_t run_optional(wm_session_t *s, size_t index,
                                wm_item_t *results) {
  const wm_node_t *node = &s->graph->nodes[index];
  const rt_node_t *rn = &s->nodes[index];
  const char *op = node->op_type;
  int32_t in = node->input_count > 0 ? node->inputs[0] : -1;
  wm_item_t *r = &results[0];
  if (strcmp(op, "Optional") == 0) {
    if (in < 0) {
      const wm_attr_t *a = wm_node_attr(node, "type");
      if (!a || a->type != WM_ATTR_TYPE_PROTO || !a->types) {
        return WM_ERROR(INVALID_ARGUMENT,
                        "node \"%s\" (Optional): without an input the "
                        "attribute \"type\" is required",
                        rn->label);
      }
      return wm_item_init(r, WM_TYPE_OPTIONAL, a->types[0].kind,
                          a->types[0].dtype, 0);
    }
    wm_item_t content;
    WM_RETURN_IF_ERROR(rt_own_item(s, in, &content));
    return wm_item_optional_take(&content, r);
  }
  if (strcmp(op, "OptionalHasElement") == 0) {
    const rt_val_t *v = in >= 0 ? &s->vals[in] : NULL;
    bool has = v && (!v->is_item || v->item.kind != WM_TYPE_OPTIONAL ||
                     v->item.count > 0);
    return rt_scalar_item(WM_DTYPE_BOOL, has, r);
  }
  if (strcmp(op, "OptionalGetElement") == 0 || strcmp(op, "Identity") == 0) {
    if (in < 0) {
      return WM_ERROR(INVALID_ARGUMENT, "node \"%s\" (%s): input 0 is omitted",
                      rn->label, op);
    }
    const rt_val_t *v = &s->vals[in];
    if (op[0] == 'O' && v->is_item && v->item.kind == WM_TYPE_OPTIONAL) {
      if (v->item.count == 0) {
        return WM_ERROR(INVALID_ARGUMENT,
                        "node \"%s\" (OptionalGetElement): the optional "
                        "\"%s\" is empty",
                        rn->label, s->graph->values[in].name);
      }
      return wm_item_clone(&v->item.elems[0], r);
    }
    return rt_own_item(s, in, r);
  }
  return WM_ERROR(UNIMPLEMENTED,
                  "node \"%s\" (%s): the operator does not take sequences or "
                  "optionals",
                  rn->label, op);
}

// ------------------------------------------------------ FlexAttention

// What FlexAttention's mod callback needs: the node and a nested input
// list.
typedef struct flex_env {
  wm_session_t *s;
  rt_node_t *rn;
  const wm_node_t *node;
  rt_sub_inputs_t *in;
} flex_env_t;

// Runs the node's score_mod or prob_mod subgraph on |x|.
static wm_status_t flex_mod(void *env, const char *attr, const wm_tensor_t *x,
                            wm_tensor_t **out) {
  flex_env_t *e = env;
  *out = NULL;
  wm_session_t *sub;
  WM_RETURN_IF_ERROR(rt_sub_session(e->s, e->rn, e->node, attr,
                                    strcmp(attr, "score_mod") == 0 ? 0 : 1,
                                    &sub));
  const wm_graph_t *g = sub->graph;
  size_t formal = 0;
  while (formal < g->input_count && g->values[g->inputs[formal]].initializer) {
    formal++;
  }
  if (formal == g->input_count || g->output_count != 1) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "node \"%s\" (FlexAttention): subgraph %s has no input "
                    "or %zu outputs, want 1",
                    e->rn->label, attr, g->output_count);
  }
  rt_sub_truncate(e->in, 0);
  WM_RETURN_IF_ERROR(rt_sub_add_tensor(e->in, g->values[g->inputs[formal]].name,
                                       (wm_tensor_t *)x, false));
  WM_RETURN_IF_ERROR(rt_sub_add_outer(e->s, g, e->in));
  wm_item_t result;
  WM_RETURN_IF_ERROR(rt_sub_run(e->s, sub, e->in, &result));
  wm_status_t st =
      rt_take_tensor(e->rn, "FlexAttention", attr, 0, &result, out);
  wm_item_deinit(&result);
  return st;
}

// FlexAttention: the kernel in src/ops on host copies of Q, K and V, its
// mods run as nested sessions.
static wm_status_t run_flex(wm_session_t *s, size_t index, rt_sub_inputs_t *in,
                            wm_item_t *results) {
  const wm_node_t *node = &s->graph->nodes[index];
  wm_op_ctx_t ctx;
  WM_RETURN_IF_ERROR(wm_op_ctx_init(&ctx, s->graph, index));
  wm_tensor_t **ins = (wm_tensor_t **)ctx.in;
  bool owned[4] = {false, false, false, false};
  const wm_op_def_t *def = NULL;
  wm_status_t st = ctx.n_in <= 4 ? NULL
                                 : WM_ERROR(INVALID_ARGUMENT,
                                            "node \"%s\" (FlexAttention): %d "
                                            "inputs",
                                            ctx.label, (int)ctx.n_in);
  for (int32_t i = 0; !st && i < ctx.n_in; i++) {
    if (node->inputs[i] >= 0) {
      st = rt_host_tensor(s, node->inputs[i], &ins[i], &owned[i]);
    }
    if (!st && ins[i]) {
      ((wm_type_t *)ctx.in_types)[i] =
          wm_type_tensor(ins[i]->dtype, &ins[i]->shape);
    }
  }
  if (!st) {
    st = wm_op_find_def(&ctx, &def);
  }
  if (!st) {
    st = def->infer(&ctx);
  }
  if (!st) {
    st = wm_op_alloc_outputs(&ctx);
  }
  if (!st) {
    flex_env_t env = {s, &s->nodes[index], node, in};
    st = wm_op_flex_attention_run(&ctx, flex_mod, &env);
  }
  for (int32_t i = 0; i < ctx.n_out; i++) {
    if (!st && i == 0) {
      results[0] = wm_item_tensor_take(ctx.out[0]);
    } else {
      wm_tensor_destroy(ctx.out[i]);
    }
    ctx.out[i] = NULL;
  }
  for (int32_t i = 0; i < ctx.n_in && i < 4; i++) {
    if (owned[i]) {
      wm_tensor_destroy(ins[i]);
    }
  }
  wm_op_ctx_deinit(&ctx);
  return st;
}

// The input slots an operator the session runs may leave omitted ("");
// every other slot must name a value. -1 ends a list.
static const struct {
  const char *op;      // op_type (ai.onnx, any opset)
  int8_t optional[3];  // slots that may be omitted
} kOmittable[] = {
    {"Loop", {0, 1, -1}},  // M, cond (the loop-carried values are needed)
    {"Scan", {0, -1}},     // opset 8's sequence_lens (9+ has no slot 0 one)
    {"SequenceInsert", {2, -1}},
    {"SequenceErase", {1, -1}},
    {"SplitToSequence", {1, -1}},
    {"Optional", {0, -1}},
    {"OptionalHasElement", {0, -1}},
};

// Refuses a node the session runs whose required input is omitted, naming
// the node and the slot (the host kernels index values by input slot).
static wm_status_t check_omitted(const wm_session_t *s, size_t index) {
  const wm_node_t *node = &s->graph->nodes[index];
  const int8_t *optional = NULL;
  for (size_t k = 0; k < sizeof(kOmittable) / sizeof(kOmittable[0]); k++) {
    if (strcmp(node->op_type, kOmittable[k].op) == 0) {
      optional = kOmittable[k].optional;
    }
  }
  int64_t opset = wm_graph_opset(s->graph, node->domain ? node->domain : "");
  bool scan9 = strcmp(node->op_type, "Scan") == 0 && opset >= 9;
  for (int32_t i = 0; i < node->input_count; i++) {
    if (node->inputs[i] >= 0) {
      continue;
    }
    bool may = false;
    for (int k = 0; !scan9 && optional && k < 3 && optional[k] >= 0; k++) {
      may = may || optional[k] == i;
    }
    if (!may) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "node \"%s\" (%s): input %d is omitted (\"\"), and "
                      "the operator needs it",
                      s->nodes[index].label, node->op_type, (int)i);
    }
  }
  return NULL;
}

// Runs node |index| on the host: control flow with nested sessions, the
// operators of sequences and optionals, and FlexAttention (its mods are
// subgraphs). Tensor outputs are uploaded
// to slot 0, sequences and optionals stay on the host.
wm_status_t rt_run_host_node(wm_session_t *s, size_t index) {
  const wm_node_t *node = &s->graph->nodes[index];
  const char *op = node->op_type;
  size_t n_out = (size_t)node->output_count;
  wm_item_t *results = wm_calloc(n_out + 1, sizeof(*results));
  if (!results) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  rt_sub_inputs_t in = {0};
  wm_status_t st = check_omitted(s, index);
  if (!st) {
    st = rt_open_slot(s, 0);
  }
  if (!st) {
    int64_t opset = wm_graph_opset(s->graph, node->domain ? node->domain : "");
    st = strcmp(op, "If") == 0     ? rt_run_if(s, index, &in, results)
         : strcmp(op, "Loop") == 0 ? rt_run_loop(s, index, &in, results)
         : strcmp(op, "Scan") == 0
             ? (opset < 9 ? rt_run_scan8(s, index, &in, results)
                          : rt_run_scan(s, index, &in, results))
         : strcmp(op, "SequenceMap") == 0
             ? run_sequence_map(s, index, &in, results)
         : strcmp(op, "FlexAttention") == 0 ? run_flex(s, index, &in, results)
         : strncmp(op, "Sequence", 8) == 0 ||
                 strcmp(op, "SplitToSequence") == 0 ||
                 strcmp(op, "ConcatFromSequence") == 0
             ? run_sequence(s, index, results)
             : run_optional(s, index, results);
  }
  rt_sub_deinit(&in);
  // Every sequence the node made (Loop's carried values, SequenceMap's
  // outputs, a SequenceConstruct) stays within the limit.
  for (size_t i = 0; !st && i < n_out; i++) {
    if (results[i].kind == WM_TYPE_SEQUENCE) {
      st = seq_length_check(s, &s->nodes[index], op, results[i].count);
    }
  }
  for (size_t i = 0; !st && i < n_out; i++) {
    int32_t id = node->outputs[i];
    if (id >= 0) {
      st = rt_store_item(s, id, &results[i]);
    }
  }
  for (size_t i = 0; i < n_out; i++) {
    wm_item_deinit(&results[i]);
  }
  free(results);
  return st;
}
