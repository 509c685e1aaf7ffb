// Nodes the session runs itself: If picks a branch that reads an outer
// value; Loop carries a value and stacks a scan output; Scan folds (and
// Scan 8 per batch entry); the sequence and optional operators keep their
// values on the host, and items carry them through the run API.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tests/testing/wm_test.h"
#include "ref.h"
#include "wmap/onnx.h"
#include "wmap/session.h"

static void input(wm_graph_t *g, const char *name, wm_dtype_t dt, int32_t rank,
                  int64_t d0) {
  wm_shape_t shape = {.rank = rank, .dims = {d0}};
  wm_type_t t = wm_type_tensor(dt, &shape);
  int32_t id;
  WM_CHECK_OK(wm_graph_add_input(g, name, &t, &id));
}

static void node(wm_graph_t *g, const char *op, const char *a, const char *b,
                 const char *out, int32_t *out_node) {
  const char *ins[2] = {a, b};
  WM_CHECK_OK(
      wm_graph_add_node(g, op, "", NULL, ins, b ? 2 : 1, &out, 1, out_node));
}

static void output(wm_graph_t *g, const char *name) {
  int32_t id;
  WM_CHECK_OK(wm_graph_add_output(g, name, NULL, &id));
}

// Export and import again: the importer marks outer-scope references.
static void reload(wm_graph_t **g) {
  uint8_t *data;
  size_t size;
  WM_CHECK_OK(wm_onnx_save_buffer(*g, &data, &size));
  wm_graph_destroy(*g);
  WM_CHECK_OK(wm_onnx_load_buffer(data, size, NULL, g));
  free(data);
}

static wm_tensor_t *vector(wm_dtype_t dt, size_t n, const double *v) {
  int64_t d[1] = {(int64_t)n};
  wm_shape_t shape = wm_shape_make(n ? 1 : 0, d);
  wm_tensor_t *t = NULL;
  if (wm_tensor_create(dt, &shape, &t)) {
    return NULL;
  }
  for (size_t i = 0; i < t->count; i++) {
    wm_tensor_set_f64(t, i, v[i]);
  }
  return t;
}

// y = c ? x + x : -x, with x read from the enclosing graph.
WM_TEST(if_takes_the_branch_and_reads_outer_values) {
  wm_graph_t *g, *then_g, *else_g;
  WM_CHECK_OK(wm_graph_create("main", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
  input(g, "x", WM_DTYPE_FLOAT, 1, 2);
  input(g, "c", WM_DTYPE_BOOL, 0, 0);
  int32_t n_if, n;
  node(g, "If", "c", NULL, "y", &n_if);
  output(g, "y");
  WM_CHECK_OK(wm_graph_create("then", g, &then_g));
  node(then_g, "Add", "x", "x", "t", &n);
  output(then_g, "t");
  WM_CHECK_OK(wm_graph_create("else", g, &else_g));
  node(else_g, "Neg", "x", NULL, "e", &n);
  output(else_g, "e");
  WM_CHECK_OK(wm_graph_add_attr_graph(g, n_if, "then_branch", then_g));
  WM_CHECK_OK(wm_graph_add_attr_graph(g, n_if, "else_branch", else_g));
  reload(&g);
  wm_backend_t *ref;
  WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &ref));
  wm_session_t *s;
  WM_CHECK_OK(wm_session_create(g, ref, &s));
  static const double xv[2] = {1.5, -2}, one[1] = {1}, zero[1] = {0};
  for (int k = 0; k < 2; k++) {
    wm_tensor_t *in[2] = {vector(WM_DTYPE_FLOAT, 2, xv),
                          vector(WM_DTYPE_BOOL, 0, k == 0 ? one : zero)};
    const char *names[2] = {"x", "c"};
    wm_tensor_t *y = NULL;
    WM_CHECK_OK(
        wm_session_run(s, names, (const wm_tensor_t *const *)in, 2, &y));
    double f = k == 0 ? 2 : -1;
    WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 0), 1.5 * f, 0);
    WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 1), -2 * f, 0);
    wm_tensor_destroy(y);
    wm_tensor_destroy(in[0]);
    wm_tensor_destroy(in[1]);
  }
  wm_session_destroy(s);
  wm_backend_destroy(ref);
  wm_graph_destroy(g);
}

// Loop(m, c, v0) -> (v, scan) in a graph of opset 17 into |*g|, its body
// started with inputs i and cin into |*body|; |extra| names one more float
// [1] input of the main graph (NULL: none).
static void loop_model(const char *extra, wm_graph_t **g, wm_graph_t **body,
                       int32_t *n_loop) {
  WM_CHECK_OK(wm_graph_create("main", NULL, g));
  WM_CHECK_OK(wm_graph_set_opset(*g, "", 17));
  input(*g, "m", WM_DTYPE_INT64, 0, 0);
  input(*g, "c", WM_DTYPE_BOOL, 0, 0);
  input(*g, "v0", WM_DTYPE_FLOAT, 1, 1);
  if (extra) {
    input(*g, extra, WM_DTYPE_FLOAT, 1, 1);
  }
  const char *ins[3] = {"m", "c", "v0"};
  const char *outs[2] = {"v", "scan"};
  WM_CHECK_OK(wm_graph_add_node(*g, "Loop", "", NULL, ins, 3, outs, 2, n_loop));
  output(*g, "v");
  output(*g, "scan");
  WM_CHECK_OK(wm_graph_create("body", *g, body));
  input(*body, "i", WM_DTYPE_INT64, 0, 0);
  input(*body, "cin", WM_DTYPE_BOOL, 0, 0);
}

// v = 1; 4 times: scan v, v = v * k (k outer, 2): final 16, scan 1 2 4 8.
WM_TEST(loop_carries_values_and_stacks_scan_outputs) {
  wm_graph_t *g = NULL, *body = NULL;
  int32_t n_loop = -1, n;
  loop_model("k", &g, &body, &n_loop);
  WM_CHECK(body != NULL);
  input(body, "vin", WM_DTYPE_FLOAT, 1, 1);
  node(body, "Identity", "cin", NULL, "cout", &n);
  node(body, "Mul", "vin", "k", "vout", &n);
  node(body, "Identity", "vin", NULL, "sout", &n);
  output(body, "cout");
  output(body, "vout");
  output(body, "sout");
  WM_CHECK_OK(wm_graph_add_attr_graph(g, n_loop, "body", body));
  reload(&g);
  wm_backend_t *ref;
  WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &ref));
  wm_session_t *s;
  WM_CHECK_OK(wm_session_create(g, ref, &s));
  static const double m[1] = {4}, c[1] = {1}, v0[1] = {1}, k[1] = {2};
  wm_tensor_t *in[4] = {
      vector(WM_DTYPE_INT64, 0, m), vector(WM_DTYPE_BOOL, 0, c),
      vector(WM_DTYPE_FLOAT, 1, v0), vector(WM_DTYPE_FLOAT, 1, k)};
  const char *names[4] = {"m", "c", "v0", "k"};
  wm_tensor_t *y[2] = {NULL, NULL};
  WM_CHECK_OK(wm_session_run(s, names, (const wm_tensor_t *const *)in, 4, y));
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y[0], 0), 16, 0);
  WM_CHECK_INT_EQ(y[1]->shape.rank, 2);
  WM_CHECK_INT_EQ(y[1]->shape.dims[0], 4);
  for (size_t i = 0; i < 4; i++) {
    WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y[1], i), (double)(1 << i), 0);
  }
  wm_tensor_destroy(y[0]);
  wm_tensor_destroy(y[1]);
  for (int i = 0; i < 4; i++) {
    wm_tensor_destroy(in[i]);
  }
  wm_session_destroy(s);
  wm_backend_destroy(ref);
  wm_graph_destroy(g);
}

// A carried value the body leaves untyped turns from a tensor into a
// sequence in iteration 1: the Identity set to run on tensors is refused
// by name (it ended INTERNAL 'value "vin" has no producer output yet',
// found by session_run_fuzz).
WM_TEST(loop_value_turning_into_a_sequence_is_refused_naming_the_node) {
  wm_graph_t *g = NULL, *body = NULL;
  int32_t n_loop = -1, n;
  loop_model(NULL, &g, &body, &n_loop);
  WM_CHECK(body != NULL);
  wm_type_t open = wm_type_unknown();
  WM_CHECK_OK(wm_graph_add_input(body, "vin", &open, &n));
  node(body, "Identity", "cin", NULL, "cout", &n);
  const char *vin = "vin", *vout = "vout", *sout = "sout";
  WM_CHECK_OK(wm_graph_add_node(body, "SequenceConstruct", "", "wrap", &vin, 1,
                                &vout, 1, &n));
  WM_CHECK_OK(
      wm_graph_add_node(body, "Identity", "", "copy", &vin, 1, &sout, 1, &n));
  output(body, "cout");
  output(body, "vout");
  output(body, "sout");
  WM_CHECK_OK(wm_graph_add_attr_graph(g, n_loop, "body", body));
  reload(&g);
  wm_backend_t *ref;
  WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &ref));
  wm_session_t *s;
  WM_CHECK_OK(wm_session_create(g, ref, &s));
  static const double m[1] = {2}, c[1] = {1}, v0[1] = {1};
  wm_item_t in[3] = {wm_item_tensor_take(vector(WM_DTYPE_INT64, 0, m)),
                     wm_item_tensor_take(vector(WM_DTYPE_BOOL, 0, c)),
                     wm_item_tensor_take(vector(WM_DTYPE_FLOAT, 1, v0))};
  const char *names[3] = {"m", "c", "v0"};
  wm_item_t y[2];
  WM_CHECK_ERR(wm_session_run_items(s, names, in, 3, y), INVALID_ARGUMENT,
               "iteration 1: node \"copy\" (Identity): input 0 (\"vin\") is "
               "seq(float");
  for (int i = 0; i < 3; i++) {
    wm_item_deinit(&in[i]);
  }
  wm_session_destroy(s);
  wm_backend_destroy(ref);
  wm_graph_destroy(g);
}

// s = 0; for each x_t of x = [1, 2, 3]: s = s + x_t, emit s: final 6, scan
// 1 3 6 (and 6 3 1 with a reversed scan output).
WM_TEST(scan_folds_its_inputs_and_stacks_outputs) {
  for (int reverse = 0; reverse < 2; reverse++) {
    wm_graph_t *g, *body;
    WM_CHECK_OK(wm_graph_create("main", NULL, &g));
    WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
    input(g, "s0", WM_DTYPE_FLOAT, 1, 1);
    wm_shape_t xs = {.rank = 2, .dims = {3, 1}};
    wm_type_t xt = wm_type_tensor(WM_DTYPE_FLOAT, &xs);
    int32_t xid;
    WM_CHECK_OK(wm_graph_add_input(g, "x", &xt, &xid));
    const char *ins[2] = {"s0", "x"};
    const char *outs[2] = {"s", "ys"};
    int32_t n_scan, n;
    WM_CHECK_OK(
        wm_graph_add_node(g, "Scan", "", NULL, ins, 2, outs, 2, &n_scan));
    WM_CHECK_OK(wm_graph_add_attr_int(g, n_scan, "num_scan_inputs", 1));
    int64_t dir[1] = {reverse};
    WM_CHECK_OK(
        wm_graph_add_attr_ints(g, n_scan, "scan_output_directions", dir, 1));
    output(g, "s");
    output(g, "ys");
    WM_CHECK_OK(wm_graph_create("body", g, &body));
    input(body, "sin", WM_DTYPE_FLOAT, 1, 1);
    input(body, "xt", WM_DTYPE_FLOAT, 1, 1);
    node(body, "Add", "sin", "xt", "sout", &n);
    node(body, "Identity", "sout", NULL, "yt", &n);
    output(body, "sout");
    output(body, "yt");
    WM_CHECK_OK(wm_graph_add_attr_graph(g, n_scan, "body", body));
    reload(&g);
    wm_backend_t *ref;
    WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &ref));
    wm_session_t *s;
    WM_CHECK_OK(wm_session_create(g, ref, &s));
    static const double s0[1] = {0}, xv[3] = {1, 2, 3};
    wm_tensor_t *in[2] = {vector(WM_DTYPE_FLOAT, 1, s0), NULL};
    int64_t d[2] = {3, 1};
    wm_shape_t shape = wm_shape_make(2, d);
    WM_CHECK_OK(wm_tensor_create(WM_DTYPE_FLOAT, &shape, &in[1]));
    for (int i = 0; i < 3; i++) {
      wm_tensor_set_f64(in[1], (size_t)i, xv[i]);
    }
    const char *names[2] = {"s0", "x"};
    wm_tensor_t *y[2] = {NULL, NULL};
    WM_CHECK_OK(wm_session_run(s, names, (const wm_tensor_t *const *)in, 2, y));
    WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y[0], 0), 6, 0);
    static const double fwd[3] = {1, 3, 6}, rev[3] = {6, 3, 1};
    for (size_t i = 0; i < 3; i++) {
      WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y[1], i), reverse ? rev[i] : fwd[i],
                        0);
    }
    wm_tensor_destroy(y[0]);
    wm_tensor_destroy(y[1]);
    wm_tensor_destroy(in[0]);
    wm_tensor_destroy(in[1]);
    wm_session_destroy(s);
    wm_backend_destroy(ref);
    wm_graph_destroy(g);
  }
}

// x = 1..5 split in chunks of 2 ([1 2] [3 4] [5]); insert [9] at the
// front, erase the last: length 3, element 1 is [1 2], the concatenation
// is 9 1 2 3 4.
WM_TEST(sequences_live_in_the_session) {
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("main", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
  input(g, "x", WM_DTYPE_FLOAT, 1, 5);
  input(g, "nine", WM_DTYPE_FLOAT, 1, 1);
  input(g, "two", WM_DTYPE_INT64, 0, 0);
  input(g, "zero", WM_DTYPE_INT64, 0, 0);
  input(g, "one", WM_DTYPE_INT64, 0, 0);
  int32_t n;
  node(g, "SplitToSequence", "x", "two", "chunks", &n);
  const char *ins[3] = {"chunks", "nine", "zero"};
  const char *out = "inserted";
  WM_CHECK_OK(
      wm_graph_add_node(g, "SequenceInsert", "", NULL, ins, 3, &out, 1, &n));
  node(g, "SequenceErase", "inserted", NULL, "erased", &n);
  node(g, "SequenceLength", "erased", NULL, "len", &n);
  node(g, "SequenceAt", "erased", "one", "second", &n);
  node(g, "ConcatFromSequence", "erased", NULL, "all", &n);
  WM_CHECK_OK(wm_graph_add_attr_int(g, n, "axis", 0));
  output(g, "len");
  output(g, "second");
  output(g, "all");
  reload(&g);
  wm_backend_t *ref;
  WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &ref));
  wm_session_t *s;
  WM_CHECK_OK(wm_session_create(g, ref, &s));
  static const double xv[5] = {1, 2, 3, 4, 5}, nine[1] = {9}, two[1] = {2},
                      zero[1] = {0}, one[1] = {1};
  wm_tensor_t *in[5] = {
      vector(WM_DTYPE_FLOAT, 5, xv), vector(WM_DTYPE_FLOAT, 1, nine),
      vector(WM_DTYPE_INT64, 0, two), vector(WM_DTYPE_INT64, 0, zero),
      vector(WM_DTYPE_INT64, 0, one)};
  const char *names[5] = {"x", "nine", "two", "zero", "one"};
  wm_tensor_t *y[3] = {NULL, NULL, NULL};
  WM_CHECK_OK(wm_session_run(s, names, (const wm_tensor_t *const *)in, 5, y));
  WM_CHECK_INT_EQ(wm_tensor_get_i64(y[0], 0), 3);
  WM_CHECK_INT_EQ(y[1]->count, 2);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y[1], 1), 2, 0);
  static const double all[5] = {9, 1, 2, 3, 4};
  WM_CHECK_INT_EQ(y[2]->count, 5);
  for (size_t i = 0; i < 5; i++) {
    WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y[2], i), all[i], 0);
  }
  for (int i = 0; i < 3; i++) {
    wm_tensor_destroy(y[i]);
  }
  for (int i = 0; i < 5; i++) {
    wm_tensor_destroy(in[i]);
  }
  wm_session_destroy(s);
  wm_backend_destroy(ref);
  wm_graph_destroy(g);
}

// An input declared |kind| (SEQUENCE or OPTIONAL) of float tensors.
// Splits whose sum overflows int64 are refused before they are added
// (found by session_run_fuzz: signed overflow under UBSan).
WM_TEST(split_to_sequence_refuses_splits_beyond_the_axis) {
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("main", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
  input(g, "x", WM_DTYPE_FLOAT, 1, 3);
  input(g, "split", WM_DTYPE_INT64, 1, 2);
  int32_t n;
  node(g, "SplitToSequence", "x", "split", "chunks", &n);
  node(g, "SequenceLength", "chunks", NULL, "len", &n);
  output(g, "len");
  wm_backend_t *ref;
  WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &ref));
  wm_session_t *s;
  WM_CHECK_OK(wm_session_create(g, ref, &s));
  static const double xv[3] = {1, 2, 3}, sv[2] = {0, 2};
  wm_tensor_t *in[2] = {vector(WM_DTYPE_FLOAT, 3, xv),
                        vector(WM_DTYPE_INT64, 2, sv)};
  wm_tensor_set_i64(in[1], 0, INT64_MAX);
  const char *names[2] = {"x", "split"};
  wm_tensor_t *y = NULL;
  WM_CHECK_ERR(wm_session_run(s, names, (const wm_tensor_t *const *)in, 2, &y),
               INVALID_ARGUMENT,
               "split[0] is 9223372036854775807: the splits sum to more "
               "than the axis' 3");
  wm_tensor_destroy(y);
  wm_tensor_destroy(in[0]);
  wm_tensor_destroy(in[1]);
  wm_session_destroy(s);
  wm_backend_destroy(ref);
  wm_graph_destroy(g);
}

static void container_input(wm_graph_t *g, const char *name,
                            wm_type_kind_t kind) {
  wm_shape_t unknown = {.rank = -1};
  wm_type_t t = wm_type_tensor(WM_DTYPE_FLOAT, &unknown);
  t.kind = kind;
  int32_t id;
  WM_CHECK_OK(wm_graph_add_input(g, name, &t, &id));
}

// A sequence item holding one tensor per entry of |v| (|n| floats each).
static wm_item_t float_sequence(size_t count, size_t n, const double *v) {
  wm_item_t seq;
  if (wm_item_init(&seq, WM_TYPE_SEQUENCE, WM_TYPE_TENSOR, WM_DTYPE_FLOAT,
                   count)) {
    memset(&seq, 0, sizeof(seq));
    return seq;
  }
  for (size_t i = 0; i < count; i++) {
    seq.elems[seq.count++] =
        wm_item_tensor_take(vector(WM_DTYPE_FLOAT, n, v + i * n));
  }
  return seq;
}

// Sequence edits where the input is read again later copy it, and where
// it is not (its last use) edit it in place; both give ONNX's answers:
// s = [a]; s1 = Insert(s, b); n = Length(s) (s read after: 1);
// s2 = Insert(s1, c, 0) (s1 also an output: copied); s3 = Erase(s2, 1)
// (last use: in place); outputs s1 = [a b], n, s3 = [c b].
WM_TEST(sequence_edits_copy_a_sequence_read_later_and_edit_the_last_use) {
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("main", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
  container_input(g, "s", WM_TYPE_SEQUENCE);
  input(g, "b", WM_DTYPE_FLOAT, 1, 2);
  input(g, "c", WM_DTYPE_FLOAT, 1, 2);
  input(g, "zero", WM_DTYPE_INT64, 0, 0);
  input(g, "one", WM_DTYPE_INT64, 0, 0);
  int32_t n;
  node(g, "SequenceInsert", "s", "b", "s1", &n);
  node(g, "SequenceLength", "s", NULL, "n", &n);
  const char *ins[3] = {"s1", "c", "zero"}, *s2 = "s2";
  WM_CHECK_OK(
      wm_graph_add_node(g, "SequenceInsert", "", NULL, ins, 3, &s2, 1, &n));
  node(g, "SequenceErase", "s2", "one", "s3", &n);
  output(g, "s1");
  output(g, "n");
  output(g, "s3");
  reload(&g);
  wm_backend_t *ref;
  WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &ref));
  wm_session_t *sess;
  WM_CHECK_OK(wm_session_create(g, ref, &sess));
  static const double a[2] = {1, 2}, b[2] = {3, 4}, c[2] = {5, 6};
  wm_shape_t scalar = {.rank = 0};
  wm_tensor_t *pos[2];
  for (int i = 0; i < 2; i++) {
    WM_CHECK_OK(wm_tensor_create(WM_DTYPE_INT64, &scalar, &pos[i]));
    wm_tensor_set_i64(pos[i], 0, i);
  }
  wm_item_t in[5] = {float_sequence(1, 2, a),
                     wm_item_tensor_take(vector(WM_DTYPE_FLOAT, 2, b)),
                     wm_item_tensor_take(vector(WM_DTYPE_FLOAT, 2, c)),
                     wm_item_tensor_take(pos[0]), wm_item_tensor_take(pos[1])};
  const char *names[5] = {"s", "b", "c", "zero", "one"};
  wm_item_t out[3];
  for (int run = 0; run < 2; run++) {  // the caller's inputs stay intact
    WM_CHECK_OK(wm_session_run_items(sess, names, in, 5, out));
    WM_CHECK_INT_EQ(out[0].count, 2);
    WM_CHECK(wm_item_equal(&out[0].elems[0], &in[0].elems[0]));
    WM_CHECK(wm_item_equal(&out[0].elems[1], &in[1]));
    WM_CHECK_INT_EQ(wm_tensor_get_i64(out[1].tensor, 0), 1);
    WM_CHECK_INT_EQ(out[2].count, 2);
    WM_CHECK(wm_item_equal(&out[2].elems[0], &in[2]));
    WM_CHECK(wm_item_equal(&out[2].elems[1], &in[1]));
    WM_CHECK_INT_EQ(in[0].count, 1);
    for (int i = 0; i < 3; i++) {
      wm_item_deinit(&out[i]);
    }
  }
  for (int i = 0; i < 5; i++) {
    wm_item_deinit(&in[i]);
  }
  wm_session_destroy(sess);
  wm_backend_destroy(ref);
  wm_graph_destroy(g);
}

// s = [[1 2]]; SequenceInsert(s, t = [3 4]) gives a sequence output, and
// its length a tensor output. wm_session_run_items passes both ways;
// wm_session_run refuses the sequence with the reason, and a tensor where
// the sequence is declared is refused naming the input.
WM_TEST(sequences_cross_the_run_api_as_items) {
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("main", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
  container_input(g, "s", WM_TYPE_SEQUENCE);
  input(g, "t", WM_DTYPE_FLOAT, 1, 2);
  int32_t n;
  node(g, "SequenceInsert", "s", "t", "s2", &n);
  node(g, "SequenceLength", "s2", NULL, "len", &n);
  output(g, "s2");
  output(g, "len");
  reload(&g);
  wm_backend_t *ref;
  WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &ref));
  wm_session_t *s;
  WM_CHECK_OK(wm_session_create(g, ref, &s));
  static const double one_two[2] = {1, 2}, three_four[2] = {3, 4};
  wm_item_t in[2] = {
      float_sequence(1, 2, one_two),
      wm_item_tensor_take(vector(WM_DTYPE_FLOAT, 2, three_four))};
  const char *names[2] = {"s", "t"};
  wm_item_t out[2];
  for (int run = 0; run < 2; run++) {  // the second run reuses the session
    WM_CHECK_OK(wm_session_run_items(s, names, in, 2, out));
    WM_CHECK_INT_EQ(out[0].kind, WM_TYPE_SEQUENCE);
    WM_CHECK_INT_EQ(out[0].count, 2);
    WM_CHECK(wm_item_equal(&out[0].elems[0], &in[0].elems[0]));
    WM_CHECK(wm_item_equal(&out[0].elems[1], &in[1]));
    WM_CHECK_INT_EQ(out[1].kind, WM_TYPE_TENSOR);
    WM_CHECK_INT_EQ(wm_tensor_get_i64(out[1].tensor, 0), 2);
    wm_item_deinit(&out[0]);
    wm_item_deinit(&out[1]);
  }
  // The sequence input given twice, and a tensor for it.
  const char *twice[2] = {"s", "s"};
  wm_item_t both[2] = {in[0], in[0]};
  WM_CHECK_ERR(wm_session_run_items(s, twice, both, 2, out), INVALID_ARGUMENT,
               "input \"s\" is given twice");
  const wm_tensor_t *tin[2] = {in[1].tensor, in[1].tensor};
  wm_tensor_t *tout[2] = {NULL, NULL};
  WM_CHECK_ERR(wm_session_run(s, names, tin, 2, tout), INVALID_ARGUMENT,
               "input \"s\" is float[2], want seq(float[?...])");
  wm_item_deinit(&in[0]);
  wm_item_deinit(&in[1]);
  wm_session_destroy(s);
  // A model whose output is a sequence cannot run through wm_session_run.
  wm_graph_t *g2;
  WM_CHECK_OK(wm_graph_create("main", NULL, &g2));
  WM_CHECK_OK(wm_graph_set_opset(g2, "", 17));
  input(g2, "x", WM_DTYPE_FLOAT, 1, 2);
  node(g2, "SequenceConstruct", "x", "x", "pair", &n);
  output(g2, "pair");
  reload(&g2);
  WM_CHECK_OK(wm_session_create(g2, ref, &s));
  wm_tensor_t *x = vector(WM_DTYPE_FLOAT, 2, one_two);
  const char *xname = "x";
  WM_CHECK_ERR(
      wm_session_run(s, &xname, (const wm_tensor_t *const *)&x, 1, tout),
      UNIMPLEMENTED,
      "output \"pair\" is a sequence of 2 float tensors; "
      "wm_session_run returns tensors only");
  WM_CHECK(tout[0] == NULL);
  wm_tensor_destroy(x);
  wm_session_destroy(s);
  wm_backend_destroy(ref);
  wm_graph_destroy(g2);
  wm_graph_destroy(g);
}

// OptionalHasElement and OptionalGetElement on a present optional, an
// empty one (GetElement refuses it, naming it) and an omitted input.
WM_TEST(optionals_report_presence_and_refuse_empty_gets) {
  wm_graph_t *g;
  WM_CHECK_OK(wm_graph_create("main", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 18));
  container_input(g, "o", WM_TYPE_OPTIONAL);
  int32_t n;
  node(g, "OptionalHasElement", "o", NULL, "has", &n);
  node(g, "OptionalGetElement", "o", NULL, "value", &n);
  const char *none = "none";
  WM_CHECK_OK(wm_graph_add_node(g, "OptionalHasElement", "", NULL, NULL, 0,
                                &none, 1, &n));
  output(g, "has");
  output(g, "value");
  output(g, "none");
  reload(&g);
  wm_backend_t *ref;
  WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &ref));
  wm_session_t *s;
  WM_CHECK_OK(wm_session_create(g, ref, &s));
  static const double v[2] = {5, 6};
  wm_item_t opt;
  WM_CHECK_OK(
      wm_item_init(&opt, WM_TYPE_OPTIONAL, WM_TYPE_TENSOR, WM_DTYPE_FLOAT, 1));
  opt.elems[opt.count++] = wm_item_tensor_take(vector(WM_DTYPE_FLOAT, 2, v));
  const char *name = "o";
  wm_item_t out[3];
  WM_CHECK_OK(wm_session_run_items(s, &name, &opt, 1, out));
  WM_CHECK_INT_EQ(wm_tensor_get_i64(out[0].tensor, 0), 1);
  WM_CHECK(wm_item_equal(&out[1], &opt.elems[0]));
  WM_CHECK_INT_EQ(wm_tensor_get_i64(out[2].tensor, 0), 0);
  for (int i = 0; i < 3; i++) {
    wm_item_deinit(&out[i]);
  }
  wm_item_deinit(&opt);
  WM_CHECK_OK(
      wm_item_init(&opt, WM_TYPE_OPTIONAL, WM_TYPE_TENSOR, WM_DTYPE_FLOAT, 0));
  WM_CHECK_ERR(wm_session_run_items(s, &name, &opt, 1, out), INVALID_ARGUMENT,
               "(OptionalGetElement): the optional \"o\" is empty");
  wm_item_deinit(&opt);
  wm_session_destroy(s);
  wm_backend_destroy(ref);
  wm_graph_destroy(g);
}

// Scan 8 over a batch of |batch| sequences of 3 steps into |*out|: inputs
// lens [batch], s0 [batch, 1], x [batch, 3, 1]; outputs the running sum s
// and its steps ys.
static void scan8_model(int64_t batch, wm_graph_t **out) {
  wm_graph_t *g, *body;
  *out = NULL;
  WM_CHECK_OK(wm_graph_create("main", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 8));
  input(g, "lens", WM_DTYPE_INT64, 1, batch);
  wm_shape_t ss = {.rank = 2, .dims = {batch, 1}};
  wm_shape_t xs = {.rank = 3, .dims = {batch, 3, 1}};
  wm_type_t st = wm_type_tensor(WM_DTYPE_FLOAT, &ss);
  wm_type_t xt = wm_type_tensor(WM_DTYPE_FLOAT, &xs);
  int32_t id;
  WM_CHECK_OK(wm_graph_add_input(g, "s0", &st, &id));
  WM_CHECK_OK(wm_graph_add_input(g, "x", &xt, &id));
  const char *ins[3] = {"lens", "s0", "x"};
  const char *outs[2] = {"s", "ys"};
  int32_t n_scan, n;
  WM_CHECK_OK(wm_graph_add_node(g, "Scan", "", NULL, ins, 3, outs, 2, &n_scan));
  WM_CHECK_OK(wm_graph_add_attr_int(g, n_scan, "num_scan_inputs", 1));
  output(g, "s");
  output(g, "ys");
  WM_CHECK_OK(wm_graph_create("body", g, &body));
  input(body, "sin", WM_DTYPE_FLOAT, 1, 1);
  input(body, "xt", WM_DTYPE_FLOAT, 1, 1);
  node(body, "Add", "sin", "xt", "sout", &n);
  node(body, "Identity", "sout", NULL, "yt", &n);
  output(body, "sout");
  output(body, "yt");
  WM_CHECK_OK(wm_graph_add_attr_graph(g, n_scan, "body", body));
  reload(&g);
  *out = g;
}

// Runs session |s| of scan8_model(batch) on |lens|, s0 zeros and |xv|
// ([batch, 3]) into y (s, ys).
static wm_status_t scan8_run(wm_session_t *s, int64_t batch, const double *lens,
                             const double *xv, wm_tensor_t *y[2]) {
  wm_shape_t ss = {.rank = 2, .dims = {batch, 1}};
  wm_shape_t xs = {.rank = 3, .dims = {batch, 3, 1}};
  wm_shape_t ls = {.rank = 1, .dims = {batch}};
  wm_tensor_t *in[3] = {NULL, NULL, NULL};
  wm_status_t st = wm_tensor_create(WM_DTYPE_INT64, &ls, &in[0]);
  if (!st) {
    st = wm_tensor_create(WM_DTYPE_FLOAT, &ss, &in[1]);
  }
  if (!st) {
    st = wm_tensor_create(WM_DTYPE_FLOAT, &xs, &in[2]);
  }
  for (size_t i = 0; !st && i < (size_t)batch; i++) {
    wm_tensor_set_f64(in[0], i, lens[i]);
  }
  for (size_t i = 0; !st && i < (size_t)batch * 3; i++) {
    wm_tensor_set_f64(in[2], i, xv[i]);
  }
  const char *names[3] = {"lens", "s0", "x"};
  if (!st) {
    st = wm_session_run(s, names, (const wm_tensor_t *const *)in, 3, y);
  }
  for (int i = 0; i < 3; i++) {
    wm_tensor_destroy(in[i]);
  }
  return st;
}

// Checks that tensor |t| holds the |n| values |want|.
static void check_values(const wm_tensor_t *t, size_t n, const double *want) {
  WM_CHECK_INT_EQ(t->count, n);
  for (size_t i = 0; i < n; i++) {
    WM_CHECK_DBL_NEAR(wm_tensor_get_f64(t, i), want[i], 0);
  }
}

// Scan 8 over a batch of 2 with sequence_lens [3, 1]: running sums of
// 1 2 3 and of 10; the second entry's scan output is zero past step 1.
// An entry of length 0 keeps its initial state and an all-zero scan
// output; an empty batch gives empty outputs of the body's types (it
// ended INTERNAL 'value "s" was not computed', found by session_run_fuzz).
WM_TEST(batched_scan8_stops_each_entry_at_its_length) {
  wm_graph_t *g;
  scan8_model(2, &g);
  WM_CHECK(g != NULL);
  wm_backend_t *ref;
  WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &ref));
  wm_session_t *s;
  WM_CHECK_OK(wm_session_create(g, ref, &s));
  static const double xv[6] = {1, 2, 3, 10, 20, 30};
  wm_tensor_t *y[2] = {NULL, NULL};
  WM_CHECK_OK(scan8_run(s, 2, (const double[]){3, 1}, xv, y));
  check_values(y[0], 2, (const double[]){6, 10});
  check_values(y[1], 6, (const double[]){1, 3, 6, 10, 0, 0});
  wm_tensor_destroy(y[0]);
  wm_tensor_destroy(y[1]);
  WM_CHECK_OK(scan8_run(s, 2, (const double[]){3, 0}, xv, y));
  check_values(y[0], 2, (const double[]){6, 0});
  check_values(y[1], 6, (const double[]){1, 3, 6, 0, 0, 0});
  wm_tensor_destroy(y[0]);
  wm_tensor_destroy(y[1]);
  // A length past the sequence is refused with the values.
  WM_CHECK_ERR(scan8_run(s, 2, (const double[]){3, 4}, xv, y), OUT_OF_RANGE,
               "sequence_lens[1] is 4, outside [0, 3]");
  wm_session_destroy(s);
  wm_graph_destroy(g);
  scan8_model(0, &g);
  WM_CHECK(g != NULL);
  WM_CHECK_OK(wm_session_create(g, ref, &s));
  WM_CHECK_OK(scan8_run(s, 0, NULL, NULL, y));
  char b0[64], b1[64];
  WM_CHECK_STR_EQ(wm_shape_format(&y[0]->shape, b0, sizeof(b0)), "[0,1]");
  WM_CHECK_STR_EQ(wm_shape_format(&y[1]->shape, b1, sizeof(b1)), "[0,3,1]");
  wm_tensor_destroy(y[0]);
  wm_tensor_destroy(y[1]);
  wm_session_destroy(s);
  wm_backend_destroy(ref);
  wm_graph_destroy(g);
}

// The graph inputs the omitted-input cases read: s (a sequence of float
// tensors), x float[2], p int64 scalar, c bool scalar.
static wm_graph_t *omitted_case_graph(void) {
  wm_graph_t *g = NULL;
  if (wm_graph_create("main", NULL, &g) || wm_graph_set_opset(g, "", 17)) {
    return g;
  }
  container_input(g, "s", WM_TYPE_SEQUENCE);
  input(g, "x", WM_DTYPE_FLOAT, 1, 2);
  input(g, "p", WM_DTYPE_INT64, 0, 0);
  input(g, "c", WM_DTYPE_BOOL, 0, 0);
  return g;
}

// A subgraph of |g| with |n_in| float inputs a0.. and the outputs b0 =
// Identity(a0) (each input's when |cond|), after Loop's iteration number,
// condition in and condition out when |cond|.
static wm_graph_t *identity_body(wm_graph_t *g, const char *name, int n_in,
                                 bool cond) {
  wm_graph_t *b = NULL;
  wm_status_t st = wm_graph_create(name, g, &b);
  if (st) {
    wm_status_free(st);
    return NULL;
  }
  int32_t n;
  if (cond) {
    input(b, "i", WM_DTYPE_INT64, 0, 0);
    input(b, "cin", WM_DTYPE_BOOL, 0, 0);
    node(b, "Identity", "cin", NULL, "cout", &n);
    output(b, "cout");
  }
  for (int k = 0; k < n_in; k++) {
    char in_name[16], out_name[16];
    snprintf(in_name, sizeof(in_name), "a%d", k);
    snprintf(out_name, sizeof(out_name), "b%d", k);
    input(b, in_name, WM_DTYPE_FLOAT, 1, 2);
    if (k == 0 || cond) {
      node(b, "Identity", in_name, NULL, out_name, &n);
      output(b, out_name);
    }
  }
  return b;
}

// A node the session runs itself with an omitted ("") input among its
// variadic ones, which the schema's arity check lets through, is refused
// naming the node and the slot, never read out of bounds (ASan:
// heap-buffer-overflow in rt_host_item before): Loop's initial value,
// SequenceMap's additional input, a SequenceConstruct element.
WM_TEST(host_nodes_refuse_omitted_variadic_inputs_naming_the_slot) {
  static const struct {
    const char *op;
    const char *ins[3];
    int32_t n_in;
    const char *fragment;
  } cases[] = {
      {"Loop", {"p", "c", ""}, 3, "node \"n\" (Loop): input 2 is omitted"},
      {"SequenceMap",
       {"s", ""},
       2,
       "node \"n\" (SequenceMap): input 1 is omitted"},
      {"SequenceConstruct",
       {"x", "", "x"},
       3,
       "node \"n\" (SequenceConstruct): input 1 is omitted"},
  };
  wm_backend_t *ref;
  WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &ref));
  static const double xv[2] = {1, 2}, one[1] = {1};
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    wm_graph_t *g = omitted_case_graph();
    WM_CHECK(g != NULL);
    const char *op = cases[k].op, *out = "y";
    bool loop = strcmp(op, "Loop") == 0, map = strcmp(op, "SequenceMap") == 0;
    int32_t n;
    WM_CHECK_OK(wm_graph_add_node(g, op, "", "n", cases[k].ins, cases[k].n_in,
                                  &out, 1, &n));
    if (loop || map) {
      WM_CHECK_OK(wm_graph_add_attr_graph(
          g, n, "body", identity_body(g, "body", loop ? 1 : 2, loop)));
    }
    output(g, "y");
    reload(&g);
    wm_item_t in[4] = {float_sequence(1, 2, xv),
                       wm_item_tensor_take(vector(WM_DTYPE_FLOAT, 2, xv)),
                       wm_item_tensor_take(vector(WM_DTYPE_INT64, 0, one)),
                       wm_item_tensor_take(vector(WM_DTYPE_BOOL, 0, one))};
    const char *names[4] = {"s", "x", "p", "c"};
    wm_session_t *s = NULL;
    wm_status_t st = wm_session_create(g, ref, &s);
    wm_item_t y = {0};
    if (!st) {
      st = wm_session_run_items(s, names, in, 4, &y);
    }
    if (!st) {
      wm_test_fail(__FILE__, __LINE__, "%s: ran, want \"%s\"", op,
                   cases[k].fragment);
      wm_item_deinit(&y);
    } else {
      if (wm_status_code(st) != WM_STATUS_INVALID_ARGUMENT ||
          !strstr(wm_status_message(st), cases[k].fragment)) {
        wm_test_fail(__FILE__, __LINE__, "%s: got %s \"%s\", want \"%s\"", op,
                     wm_status_code_name(wm_status_code(st)),
                     wm_status_message(st), cases[k].fragment);
      }
      wm_status_free(st);
    }
    for (int i = 0; i < 4; i++) {
      wm_item_deinit(&in[i]);
    }
    wm_session_destroy(s);
    wm_graph_destroy(g);
  }
  wm_backend_destroy(ref);
}

// A session on ref alone with the limits given.
static wm_status_t limited_session(wm_graph_t *g, wm_backend_t *ref,
                                   int64_t max_iterations,
                                   int64_t max_sequence_length,
                                   wm_session_t **out) {
  wm_session_options_t o = {.backends = &ref,
                            .backend_count = 1,
                            .mode = WM_PLACEMENT_STRICT,
                            .max_iterations = max_iterations,
                            .max_sequence_length = max_sequence_length};
  return wm_session_create_placed(g, &o, out);
}

// v = v + 1 while c (never false) for m iterations (m "" when |trip| is
// false): the run stops at the limit with the node, the count and the trip
// count; a loop of exactly the limit runs.
WM_TEST(loop_stops_at_the_iteration_limit_naming_the_node_and_count) {
  for (int trip = 0; trip < 2; trip++) {
    wm_graph_t *g, *body;
    WM_CHECK_OK(wm_graph_create("main", NULL, &g));
    WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
    input(g, "m", WM_DTYPE_INT64, 0, 0);
    input(g, "c", WM_DTYPE_BOOL, 0, 0);
    input(g, "v0", WM_DTYPE_FLOAT, 1, 1);
    const char *ins[3] = {trip ? "m" : "", "c", "v0"}, *out = "v";
    int32_t n_loop, n;
    WM_CHECK_OK(
        wm_graph_add_node(g, "Loop", "", "spin", ins, 3, &out, 1, &n_loop));
    output(g, "v");
    WM_CHECK_OK(wm_graph_create("body", g, &body));
    input(body, "i", WM_DTYPE_INT64, 0, 0);
    input(body, "cin", WM_DTYPE_BOOL, 0, 0);
    input(body, "vin", WM_DTYPE_FLOAT, 1, 1);
    node(body, "Identity", "cin", NULL, "cout", &n);
    node(body, "Add", "vin", "vin", "vout", &n);
    output(body, "cout");
    output(body, "vout");
    WM_CHECK_OK(wm_graph_add_attr_graph(g, n_loop, "body", body));
    reload(&g);
    wm_backend_t *ref;
    WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &ref));
    wm_session_t *s;
    WM_CHECK_OK(limited_session(g, ref, 100, 0, &s));
    static const double big[1] = {4611686018427387904.0}, c[1] = {1},
                        v0[1] = {1};
    wm_tensor_t *in[3] = {vector(WM_DTYPE_INT64, 0, big),
                          vector(WM_DTYPE_BOOL, 0, c),
                          vector(WM_DTYPE_FLOAT, 1, v0)};
    const char *names[3] = {"m", "c", "v0"};
    wm_tensor_t *y = NULL;
    WM_CHECK_ERR(
        wm_session_run(s, names, (const wm_tensor_t *const *)in, 3, &y),
        RESOURCE_EXHAUSTED,
        trip ? "node \"spin\" (Loop), iteration 100: reached the "
               "limit of 100 iterations with the condition still "
               "true (trip count 4611686018427387904)"
             : "node \"spin\" (Loop), iteration 100: reached the "
               "limit of 100 iterations with the condition still "
               "true (trip count none)");
    WM_CHECK(y == NULL);
    if (trip) {  // exactly the limit: 2^100 overflows nothing in float
      wm_tensor_set_i64(in[0], 0, 100);
      WM_CHECK_OK(
          wm_session_run(s, names, (const wm_tensor_t *const *)in, 3, &y));
      WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 0), 1.2676506002282294e30, 1e16);
      wm_tensor_destroy(y);
    }
    for (int i = 0; i < 3; i++) {
      wm_tensor_destroy(in[i]);
    }
    wm_session_destroy(s);
    WM_CHECK_ERR(limited_session(g, ref, -1, 0, &s), INVALID_ARGUMENT,
                 "max_iterations is -1");
    wm_backend_destroy(ref);
    wm_graph_destroy(g);
  }
}

// A loop without end that appends x to a sequence every iteration stops
// at the sequence-length limit, naming the SequenceInsert and the length,
// long before the iteration limit.
WM_TEST(sequence_growing_in_a_loop_stops_at_the_length_limit) {
  wm_graph_t *g, *body;
  WM_CHECK_OK(wm_graph_create("main", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
  input(g, "c", WM_DTYPE_BOOL, 0, 0);
  input(g, "x", WM_DTYPE_FLOAT, 1, 2);
  int32_t n_loop, n;
  const char *none = NULL, *s0 = "s0";
  WM_CHECK_OK(
      wm_graph_add_node(g, "SequenceEmpty", "", "empty", &none, 0, &s0, 1, &n));
  const char *ins[3] = {"", "c", "s0"}, *out = "s";
  WM_CHECK_OK(
      wm_graph_add_node(g, "Loop", "", "grow", ins, 3, &out, 1, &n_loop));
  output(g, "s");
  WM_CHECK_OK(wm_graph_create("body", g, &body));
  input(body, "i", WM_DTYPE_INT64, 0, 0);
  input(body, "cin", WM_DTYPE_BOOL, 0, 0);
  container_input(body, "sin", WM_TYPE_SEQUENCE);
  node(body, "Identity", "cin", NULL, "cout", &n);
  const char *app_in[2] = {"sin", "x"}, *app_out = "sout";
  WM_CHECK_OK(wm_graph_add_node(body, "SequenceInsert", "", "append", app_in, 2,
                                &app_out, 1, &n));
  output(body, "cout");
  output(body, "sout");
  WM_CHECK_OK(wm_graph_add_attr_graph(g, n_loop, "body", body));
  reload(&g);
  wm_backend_t *ref;
  WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &ref));
  wm_session_t *s;
  WM_CHECK_OK(limited_session(g, ref, 0, 50, &s));
  static const double c[1] = {1}, xv[2] = {1, 2};
  wm_item_t in[2] = {wm_item_tensor_take(vector(WM_DTYPE_BOOL, 0, c)),
                     wm_item_tensor_take(vector(WM_DTYPE_FLOAT, 2, xv))};
  const char *names[2] = {"c", "x"};
  wm_item_t y = {0};
  WM_CHECK_ERR(wm_session_run_items(s, names, in, 2, &y), RESOURCE_EXHAUSTED,
               "node \"append\" (SequenceInsert): a sequence of 51 elements "
               "is past the limit of 50");
  WM_CHECK(y.kind == WM_TYPE_TENSOR && y.tensor == NULL);
  wm_item_deinit(&in[0]);
  wm_item_deinit(&in[1]);
  wm_session_destroy(s);
  wm_backend_destroy(ref);
  wm_graph_destroy(g);
}

// A Scan whose scan axis is longer than the limit is refused before its
// first step, naming the node and the length.
WM_TEST(scan_longer_than_the_iteration_limit_is_refused) {
  wm_graph_t *g, *body;
  WM_CHECK_OK(wm_graph_create("main", NULL, &g));
  WM_CHECK_OK(wm_graph_set_opset(g, "", 17));
  input(g, "s0", WM_DTYPE_FLOAT, 1, 1);
  wm_shape_t xs = {.rank = 2, .dims = {3, 1}};
  wm_type_t xt = wm_type_tensor(WM_DTYPE_FLOAT, &xs);
  int32_t xid, n_scan, n;
  WM_CHECK_OK(wm_graph_add_input(g, "x", &xt, &xid));
  const char *ins[2] = {"s0", "x"}, *outs[1] = {"s"};
  WM_CHECK_OK(
      wm_graph_add_node(g, "Scan", "", "fold", ins, 2, outs, 1, &n_scan));
  WM_CHECK_OK(wm_graph_add_attr_int(g, n_scan, "num_scan_inputs", 1));
  output(g, "s");
  WM_CHECK_OK(wm_graph_create("body", g, &body));
  input(body, "sin", WM_DTYPE_FLOAT, 1, 1);
  input(body, "xt", WM_DTYPE_FLOAT, 1, 1);
  node(body, "Add", "sin", "xt", "sout", &n);
  output(body, "sout");
  WM_CHECK_OK(wm_graph_add_attr_graph(g, n_scan, "body", body));
  reload(&g);
  wm_backend_t *ref;
  WM_CHECK_OK(wm_backend_create(wm_ref_plugin_query, "built-in", &ref));
  static const double s0[1] = {0}, xv[3] = {1, 2, 3};
  wm_tensor_t *in[2] = {vector(WM_DTYPE_FLOAT, 1, s0), NULL};
  WM_CHECK_OK(wm_tensor_create(WM_DTYPE_FLOAT, &xs, &in[1]));
  for (size_t i = 0; i < 3; i++) {
    wm_tensor_set_f64(in[1], i, xv[i]);
  }
  const char *names[2] = {"s0", "x"};
  for (int64_t limit = 2; limit <= 3; limit++) {
    wm_session_t *s;
    WM_CHECK_OK(limited_session(g, ref, limit, 0, &s));
    wm_tensor_t *y = NULL;
    wm_status_t st =
        wm_session_run(s, names, (const wm_tensor_t *const *)in, 2, &y);
    if (limit == 2) {
      WM_CHECK_ERR(st, RESOURCE_EXHAUSTED,
                   "node \"fold\" (Scan): 3 iterations (the scan length) are "
                   "past the limit of 2");
    } else {
      WM_CHECK_OK(st);
      WM_CHECK_DBL_NEAR(wm_tensor_get_f64(y, 0), 6, 0);
    }
    wm_tensor_destroy(y);
    wm_session_destroy(s);
  }
  wm_tensor_destroy(in[0]);
  wm_tensor_destroy(in[1]);
  wm_backend_destroy(ref);
  wm_graph_destroy(g);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(if_takes_the_branch_and_reads_outer_values),
      WM_CASE(loop_carries_values_and_stacks_scan_outputs),
      WM_CASE(loop_value_turning_into_a_sequence_is_refused_naming_the_node),
      WM_CASE(scan_folds_its_inputs_and_stacks_outputs),
      WM_CASE(sequences_live_in_the_session),
      WM_CASE(split_to_sequence_refuses_splits_beyond_the_axis),
      WM_CASE(sequences_cross_the_run_api_as_items),
      WM_CASE(sequence_edits_copy_a_sequence_read_later_and_edit_the_last_use),
      WM_CASE(optionals_report_presence_and_refuse_empty_gets),
      WM_CASE(batched_scan8_stops_each_entry_at_its_length),
      WM_CASE(host_nodes_refuse_omitted_variadic_inputs_naming_the_slot),
      WM_CASE(loop_stops_at_the_iteration_limit_naming_the_node_and_count),
      WM_CASE(sequence_growing_in_a_loop_stops_at_the_length_limit),
      WM_CASE(scan_longer_than_the_iteration_limit_is_refused),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
