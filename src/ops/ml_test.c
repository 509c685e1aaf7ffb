// Tests of the ai.onnx.ml family: Binarizer, ArrayFeatureExtractor,
// LabelEncoder at opsets 1, 2 and 4, and TreeEnsemble's node modes,
// aggregates, post transforms and its checks of hostile ensembles.
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "op_fixture.h"
#include "wm_test.h"

// Starts a graph importing ai.onnx.ml at |opset|.
static wm_status_t ml_init(wm_op_fixture_t *f, int64_t opset) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 21));
  return wm_graph_set_opset(f->graph, "ai.onnx.ml", opset);
}

// Adds the ai.onnx.ml node |op| reading |inputs| with output "y0".
static wm_status_t ml_add_node(wm_op_fixture_t *f, const char *op,
                               const char *const *inputs, int32_t n_in) {
  static const char *const outs[1] = {"y0"};
  return wm_graph_add_node(f->graph, op, "ai.onnx.ml", "n", inputs, n_in, outs,
                           1, &f->node);
}

// Adds a 1-D tensor attribute of |dtype| holding |v|.
static wm_status_t attr_vec(wm_op_fixture_t *f, const char *name,
                            wm_dtype_t dtype, size_t n, const double *v) {
  int64_t d[1] = {(int64_t)n};
  wm_shape_t s = wm_shape_make(1, d);
  wm_tensor_t *t;
  WM_RETURN_IF_ERROR(wm_tensor_create(dtype, &s, &t));
  for (size_t i = 0; i < n; i++) {
    wm_tensor_set_f64(t, i, v[i]);
  }
  return wm_graph_add_attr_tensor(f->graph, f->node, name, t);
}

// Adds a 1-D string tensor attribute holding |v|.
static wm_status_t attr_vec_strings(wm_op_fixture_t *f, const char *name,
                                    size_t n, const char *const *v) {
  int64_t d[1] = {(int64_t)n};
  wm_shape_t s = wm_shape_make(1, d);
  wm_tensor_t *t;
  WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_STRING, &s, &t));
  for (size_t i = 0; i < n; i++) {
    wm_status_t st = wm_tensor_set_string(t, i, v[i], strlen(v[i]));
    if (st) {
      wm_tensor_destroy(t);
      return st;
    }
  }
  return wm_graph_add_attr_tensor(f->graph, f->node, name, t);
}

// ------------------------------------------------------------ Binarizer

WM_TEST(binarizer_maps_above_threshold_to_one_and_nan_to_zero) {
  static const double x[6] = {-1.0, 0.5, 0.5000001, 2.0, NAN, INFINITY};
  int64_t d[2] = {2, 3};
  wm_op_fixture_t f;
  WM_CHECK_OK(ml_init(&f, 1));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_DOUBLE, 2, d, x));
  const char *in[1] = {"x"};
  WM_CHECK_OK(ml_add_node(&f, "Binarizer", in, 1));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "threshold", 0.5f));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[6] = {0, 0, 1, 1, 0, 1};
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_DOUBLE &&
            wm_op_fixture_shape_is(f.out[0], 2, d) &&
            wm_op_fixture_values_near(f.out[0], want, 6, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(binarizer_compares_integers_with_the_default_threshold) {
  static const int64_t x[4] = {-3, 0, 1, 7};
  int64_t d[1] = {4};
  wm_op_fixture_t f;
  WM_CHECK_OK(ml_init(&f, 1));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x", WM_DTYPE_INT32, 1, d, x));
  const char *in[1] = {"x"};
  WM_CHECK_OK(ml_add_node(&f, "Binarizer", in, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[4] = {0, 0, 1, 1};
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_INT32 &&
            wm_op_fixture_values_near(f.out[0], want, 4, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// ------------------------------------------------- ArrayFeatureExtractor

// Builds ArrayFeatureExtractor over float x (|dims|, values 0..n-1) and
// the int64 indices |idx|.
static wm_status_t afe_node(wm_op_fixture_t *f, int32_t rank,
                            const int64_t *dims, size_t k, const int64_t *idx) {
  WM_RETURN_IF_ERROR(ml_init(f, 1));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const(f, "x", WM_DTYPE_FLOAT, rank, dims, NULL));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_ints(f, "i", k, idx));
  const char *in[2] = {"x", "i"};
  return ml_add_node(f, "ArrayFeatureExtractor", in, 2);
}

WM_TEST(afe_selects_along_the_last_axis_with_repeats) {
  // x = [[[0..3],[4..7]],[[8..11],[12..15]]]
  int64_t d[3] = {2, 2, 4};
  static const int64_t idx[3] = {3, 0, 3};
  wm_op_fixture_t f;
  WM_CHECK_OK(afe_node(&f, 3, d, 3, idx));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[12] = {3, 0, 3, 7, 4, 7, 11, 8, 11, 15, 12, 15};
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 3, (const int64_t[]){2, 2, 3}) &&
            wm_op_fixture_values_near(f.out[0], want, 12, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(afe_gives_a_vector_one_row) {
  int64_t d[1] = {5};
  static const int64_t idx[2] = {4, 1};
  wm_op_fixture_t f;
  WM_CHECK_OK(afe_node(&f, 1, d, 2, idx));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[2] = {4, 1};
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){1, 2}) &&
            wm_op_fixture_values_near(f.out[0], want, 2, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(afe_copies_strings) {
  static const char *const x[4] = {"a", "b", "c", "d"};
  int64_t d[2] = {2, 2};
  static const int64_t idx[1] = {1};
  wm_op_fixture_t f;
  WM_CHECK_OK(ml_init(&f, 1));
  WM_CHECK_OK(wm_op_fixture_add_strings(&f, "x", 2, d, x));
  WM_CHECK_OK(wm_op_fixture_add_ints(&f, "i", 1, idx));
  const char *in[2] = {"x", "i"};
  WM_CHECK_OK(ml_add_node(&f, "ArrayFeatureExtractor", in, 2));
  wm_status_t s = wm_op_fixture_run(&f);
  static const char *const want[2] = {"b", "d"};
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){2, 1}) &&
            wm_op_fixture_strings_are(f.out[0], want, 2);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(afe_rejects_out_of_range_indices_and_scalars) {
  int64_t d[2] = {2, 3};
  static const int64_t bad[2][2] = {{0, 3}, {-1, 0}};
  for (int c = 0; c < 2; c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(afe_node(&f, 2, d, 2, bad[c]));
    wm_status_t s = wm_op_fixture_run(&f);
    wm_op_fixture_deinit(&f);
    WM_CHECK_ERR(s, OUT_OF_RANGE,
                 c == 0 ? "index 3 (element 1 of input 1) is out of range"
                        : "index -1 (element 0 of input 1)");
  }
  wm_op_fixture_t f;
  static const int64_t idx[1] = {0};
  int64_t none[1] = {0};
  WM_CHECK_OK(afe_node(&f, 0, none, 1, idx));
  wm_status_t s = wm_op_fixture_run(&f);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "input 0 is a scalar");
}

WM_TEST(afe_infers_the_count_of_unknown_indices) {
  wm_op_fixture_t f;
  WM_CHECK_OK(ml_init(&f, 1));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_DOUBLE, 2,
                                      (const int64_t[]){-1, 10}));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "i", WM_DTYPE_INT64, 2,
                                      (const int64_t[]){2, 3}));
  const char *in[2] = {"x", "i"};
  WM_CHECK_OK(ml_add_node(&f, "ArrayFeatureExtractor", in, 2));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_DOUBLE);
  WM_CHECK_INT_EQ(t.shape.rank, 2);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
  WM_CHECK_INT_EQ(t.shape.dims[1], 6);
}

// --------------------------------------------------------- LabelEncoder

WM_TEST(label_encoder_v1_maps_strings_to_first_index_and_back) {
  static const char *const classes[3] = {"cat", "dog", "cat"};
  static const char *const x[4] = {"dog", "cat", "emu", ""};
  int64_t d[1] = {4};
  wm_op_fixture_t f;
  WM_CHECK_OK(ml_init(&f, 1));
  WM_CHECK_OK(wm_op_fixture_add_strings(&f, "x", 1, d, x));
  const char *in[1] = {"x"};
  WM_CHECK_OK(ml_add_node(&f, "LabelEncoder", in, 1));
  WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "classes_strings", classes, 3));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "default_int64", 9));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[4] = {1, 0, 9, 9};
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_INT64 &&
            wm_op_fixture_values_near(f.out[0], want, 4, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  static const int64_t xi[4] = {2, -1, 1, 3};
  WM_CHECK_OK(ml_init(&f, 1));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x", WM_DTYPE_INT64, 1, d, xi));
  WM_CHECK_OK(ml_add_node(&f, "LabelEncoder", in, 1));
  WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "classes_strings", classes, 3));
  s = wm_op_fixture_run(&f);
  static const char *const want_s[4] = {"cat", "_Unused", "dog", "_Unused"};
  ok = !s && wm_op_fixture_strings_are(f.out[0], want_s, 4);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(label_encoder_v2_compares_float_keys_bit_for_bit) {
  // -0 and 0 differ; a NaN key matches the same NaN; the last 2.5 wins.
  static const float keys[5] = {0.0f, NAN, 2.5f, 1.0f, 2.5f};
  static const int64_t vals[5] = {10, 20, 30, 40, 50};
  static const double x[5] = {0.0, -0.0, NAN, 2.5, 3.0};
  int64_t d[1] = {5};
  wm_op_fixture_t f;
  WM_CHECK_OK(ml_init(&f, 2));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1, d, x));
  const char *in[1] = {"x"};
  WM_CHECK_OK(ml_add_node(&f, "LabelEncoder", in, 1));
  WM_CHECK_OK(
      wm_graph_add_attr_floats(f.graph, f.node, "keys_floats", keys, 5));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "values_int64s", vals, 5));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[5] = {10, -1, 20, 50, -1};
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_INT64 &&
            wm_op_fixture_values_near(f.out[0], want, 5, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(label_encoder_v4_matches_any_nan_and_zero_signs) {
  static const float keys[3] = {-0.0f, NAN, 7.0f};
  static const char *const vals[3] = {"zero", "nan", "seven"};
  static const double x[4] = {0.0, -NAN, 7.0, 8.0};
  int64_t d[2] = {2, 2};
  wm_op_fixture_t f;
  WM_CHECK_OK(ml_init(&f, 4));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, d, x));
  const char *in[1] = {"x"};
  WM_CHECK_OK(ml_add_node(&f, "LabelEncoder", in, 1));
  WM_CHECK_OK(
      wm_graph_add_attr_floats(f.graph, f.node, "keys_floats", keys, 3));
  WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "values_strings", vals, 3));
  WM_CHECK_OK(wm_op_fixture_attr_string(&f, "default_string", "other"));
  wm_status_t s = wm_op_fixture_run(&f);
  static const char *const want[4] = {"zero", "nan", "seven", "other"};
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 2, d) &&
            wm_op_fixture_strings_are(f.out[0], want, 4);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(label_encoder_v4_maps_tensor_keys_to_tensor_values) {
  static const double keys[3] = {5, -2, 5};
  static const double vals[3] = {0.5, 1.5, 2.5};
  static const int64_t x[4] = {5, -2, 0, 5};
  int64_t d[1] = {4};
  for (int c = 0; c < 2; c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(ml_init(&f, 4));
    WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x", WM_DTYPE_INT32, 1, d, x));
    const char *in[1] = {"x"};
    WM_CHECK_OK(ml_add_node(&f, "LabelEncoder", in, 1));
    WM_CHECK_OK(attr_vec(&f, "keys_tensor", WM_DTYPE_INT32, 3, keys));
    WM_CHECK_OK(attr_vec(&f, "values_tensor", WM_DTYPE_DOUBLE, 3, vals));
    if (c == 1) {
      static const double def[1] = {-4.25};
      WM_CHECK_OK(attr_vec(&f, "default_tensor", WM_DTYPE_DOUBLE, 1, def));
    }
    wm_status_t s = wm_op_fixture_run(&f);
    // Without default_tensor a float value defaults to -0.
    double want[4] = {2.5, 1.5, c == 1 ? -4.25 : 0.0, 2.5};
    bool ok = !s && f.out[0]->dtype == WM_DTYPE_DOUBLE &&
              wm_op_fixture_values_near(f.out[0], want, 4, 0) &&
              (c == 1 || signbit(wm_tensor_get_f64(f.out[0], 2)));
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(label_encoder_v4_maps_strings_to_int16_tensor_values) {
  static const char *const keys[2] = {"lo", "hi"};
  static const double vals[2] = {-300, 300};
  static const char *const x[3] = {"hi", "mid", "lo"};
  int64_t d[1] = {3};
  wm_op_fixture_t f;
  WM_CHECK_OK(ml_init(&f, 4));
  WM_CHECK_OK(wm_op_fixture_add_strings(&f, "x", 1, d, x));
  const char *in[1] = {"x"};
  WM_CHECK_OK(ml_add_node(&f, "LabelEncoder", in, 1));
  WM_CHECK_OK(attr_vec_strings(&f, "keys_tensor", 2, keys));
  WM_CHECK_OK(attr_vec(&f, "values_tensor", WM_DTYPE_INT16, 2, vals));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[3] = {300, -1, -300};
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_INT16 &&
            wm_op_fixture_values_near(f.out[0], want, 3, 0);
  // Two probes of the two keys for each of the three elements.
  wm_type_t t;
  wm_op_cost_t cost;
  if (ok) {
    s = wm_op_fixture_cost(&f, &t, &cost);
    ok = !s && cost.flops == 6;
  }
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(label_encoder_rejects_bad_attribute_sets) {
  static const int64_t ints[2] = {1, 2};
  static const char *const strs[3] = {"a", "b", "c"};
  static const int64_t x[1] = {1};
  int64_t d[1] = {1};
  const char *in[1] = {"x"};
  for (int c = 0; c < 5; c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(ml_init(&f, c == 4 ? 2 : 4));
    WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "x", WM_DTYPE_INT64, 1, d, x));
    WM_CHECK_OK(ml_add_node(&f, "LabelEncoder", in, 1));
    WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "keys_int64s", ints, 2));
    switch (c) {
      case 0:  // two kinds of keys
        WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "keys_strings", strs, 2));
        WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "values_int64s", ints, 2));
        break;
      case 1:  // counts differ
        WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "values_strings", strs, 3));
        break;
      case 2:  // a tensor attribute of the wrong kind
        WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "values_tensor", strs, 2));
        break;
      case 3: {  // a default of another dtype
        static const double v[2] = {1, 2}, def[1] = {0};
        WM_CHECK_OK(attr_vec(&f, "values_tensor", WM_DTYPE_FLOAT, 2, v));
        WM_CHECK_OK(attr_vec(&f, "default_tensor", WM_DTYPE_DOUBLE, 1, def));
        break;
      }
      default:  // tensors before opset 4 are not values
        WM_CHECK_OK(attr_vec(&f, "values_tensor", WM_DTYPE_FLOAT, 2,
                             (const double[]){1, 2}));
        break;
    }
    wm_status_t s = wm_op_fixture_run(&f);
    wm_op_fixture_deinit(&f);
    static const char *const want[5] = {
        "2 of the keys_* attributes are set",
        "\"keys_int64s\" has 2 keys but \"values_strings\" has 3",
        "attribute \"values_tensor\" has kind strings, want tensor",
        "\"default_tensor\" is double[1], want one float value",
        "0 of the values_* attributes are set"};
    WM_CHECK_ERR(s, INVALID_ARGUMENT, want[c]);
  }
}

WM_TEST(label_encoder_rejects_keys_of_another_dtype_statically) {
  static const char *const keys[1] = {"a"};
  static const int64_t vals[1] = {1};
  wm_op_fixture_t f;
  WM_CHECK_OK(ml_init(&f, 4));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_INT64, 1,
                                      (const int64_t[]){3}));
  const char *in[1] = {"x"};
  WM_CHECK_OK(ml_add_node(&f, "LabelEncoder", in, 1));
  WM_CHECK_OK(wm_op_fixture_attr_strings(&f, "keys_strings", keys, 1));
  WM_CHECK_OK(wm_op_fixture_attr_ints(&f, "values_int64s", vals, 1));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT,
               "input 0 has dtype int64 but attribute \"keys_strings\" "
               "holds string");
}

// --------------------------------------------------------- TreeEnsemble

enum { LEQ, LT, GTE, GT, EQ, NEQ, MEMBER };

// An ensemble in TreeEnsemble's attribute encoding.
typedef struct te_def {
  size_t n_nodes;             // nodes_* length
  size_t n_leaves;            // leaf_* length
  size_t n_roots;             // trees
  wm_dtype_t dtype;           // of x, splits, weights and members
  const double *modes;        // BRANCH_* codes
  const int64_t *features;    // nodes_featureids
  const double *splits;       // nodes_splits
  const int64_t *true_ids;    // nodes_truenodeids
  const int64_t *true_leaf;   // nodes_trueleafs
  const int64_t *false_ids;   // nodes_falsenodeids
  const int64_t *false_leaf;  // nodes_falseleafs
  const int64_t *missing;     // nodes_missing_value_tracks_true or NULL
  const double *weights;      // leaf_weights
  const int64_t *targets;     // leaf_targetids
  const int64_t *roots;       // tree_roots
  const double *members;      // membership_values or NULL
  size_t n_members;           // their count
  int64_t n_targets;          // 0 = attribute omitted
} te_def_t;

// Two trees over features (x0, x1) using every mode. Tree A (root 0):
// x0 <= 1 (NaN goes true) ? (x1 in {2,5,7} ? L0 : L1)
//                         : (x1 > 3 ? L2 : (x0 != 4 ? L3 : L4)).
// Tree B (root 4): x1 == 2 ? L5 : (x0 >= 3 ? L6 : (x0 < -1 ? L7 : L8)).
static const double k_modes[7] = {LEQ, MEMBER, GT, NEQ, EQ, GTE, LT};
static const int64_t k_features[7] = {0, 1, 1, 0, 1, 0, 0};
static const double k_splits[7] = {1, 0, 3, 4, 2, 3, -1};
static const int64_t k_true_ids[7] = {1, 0, 2, 3, 5, 6, 7};
static const int64_t k_true_leaf[7] = {0, 1, 1, 1, 1, 1, 1};
static const int64_t k_false_ids[7] = {2, 1, 3, 4, 5, 6, 8};
static const int64_t k_false_leaf[7] = {0, 1, 0, 1, 0, 0, 1};
static const int64_t k_missing[7] = {1, 0, 0, 0, 0, 0, 0};
static const double k_weights[9] = {10, 20, 30, 40, 50, 1, 2, 3, 4};
static const int64_t k_targets[9] = {0, 1, 0, 1, 0, 1, 0, 1, 1};
static const int64_t k_roots[2] = {0, 4};
static const double k_members[4] = {7, 2, 5, NAN};

static te_def_t two_trees(wm_dtype_t dtype) {
  te_def_t d = {7,
                9,
                2,
                dtype,
                k_modes,
                k_features,
                k_splits,
                k_true_ids,
                k_true_leaf,
                k_false_ids,
                k_false_leaf,
                k_missing,
                k_weights,
                k_targets,
                k_roots,
                k_members,
                4,
                2};
  return d;
}

// Samples of tree A/B and the leaves they reach: (0,5) L0+L8, (2,2)
// L3+L5, (4,9) L2+L6, (NaN,3) L1+L8, (-2,NaN) L1+L7, (4,1) L4+L6.
static const double k_x[12] = {0, 5, 2, 2, 4, 9, NAN, 3, -2, NAN, 4, 1};

static wm_status_t te_attrs(wm_op_fixture_t *f, const te_def_t *d) {
  WM_RETURN_IF_ERROR(
      attr_vec(f, "nodes_modes", WM_DTYPE_UINT8, d->n_nodes, d->modes));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_attr_ints(f, "nodes_featureids", d->features, d->n_nodes));
  WM_RETURN_IF_ERROR(
      attr_vec(f, "nodes_splits", d->dtype, d->n_nodes, d->splits));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_attr_ints(f, "nodes_truenodeids", d->true_ids, d->n_nodes));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_attr_ints(f, "nodes_trueleafs", d->true_leaf, d->n_nodes));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_ints(f, "nodes_falsenodeids",
                                             d->false_ids, d->n_nodes));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_ints(f, "nodes_falseleafs",
                                             d->false_leaf, d->n_nodes));
  if (d->missing) {
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_ints(
        f, "nodes_missing_value_tracks_true", d->missing, d->n_nodes));
  }
  WM_RETURN_IF_ERROR(
      attr_vec(f, "leaf_weights", d->dtype, d->n_leaves, d->weights));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_attr_ints(f, "leaf_targetids", d->targets, d->n_leaves));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_attr_ints(f, "tree_roots", d->roots, d->n_roots));
  if (d->members) {
    WM_RETURN_IF_ERROR(
        attr_vec(f, "membership_values", d->dtype, d->n_members, d->members));
  }
  if (d->n_targets) {
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_int(f, "n_targets", d->n_targets));
  }
  return NULL;
}

// Builds TreeEnsemble over the constant x ([rows, cols] of |x|).
static wm_status_t te_node(wm_op_fixture_t *f, const te_def_t *d, int64_t rows,
                           int64_t cols, const double *x, int64_t aggregate,
                           int64_t post) {
  WM_RETURN_IF_ERROR(ml_init(f, 5));
  int64_t dims[2] = {rows, cols};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "x", d->dtype, 2, dims, x));
  const char *in[1] = {"x"};
  WM_RETURN_IF_ERROR(ml_add_node(f, "TreeEnsemble", in, 1));
  WM_RETURN_IF_ERROR(te_attrs(f, d));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_attr_int(f, "aggregate_function", aggregate));
  return wm_op_fixture_attr_int(f, "post_transform", post);
}

WM_TEST(tree_ensemble_walks_every_mode_and_aggregates) {
  static const struct {
    int64_t aggregate;
    double want[12];
  } cases[4] = {
      {1, {10, 4, 0, 41, 32, 0, 0, 24, 0, 23, 52, 0}},     // SUM
      {0, {5, 2, 0, 20.5, 16, 0, 0, 12, 0, 11.5, 26, 0}},  // AVERAGE
      {2,
       {10, 4, DBL_MAX, 1, 2, DBL_MAX, DBL_MAX, 4, DBL_MAX, 3, 2,
        DBL_MAX}},  // MIN
      {3,
       {10, 4, -DBL_MAX, 40, 30, -DBL_MAX, -DBL_MAX, 20, -DBL_MAX, 20, 50,
        -DBL_MAX}},  // MAX
  };
  te_def_t d = two_trees(WM_DTYPE_DOUBLE);
  for (int c = 0; c < 4; c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(te_node(&f, &d, 6, 2, k_x, cases[c].aggregate, 0));
    wm_status_t s = wm_op_fixture_run(&f);
    bool ok = !s && f.out[0]->dtype == WM_DTYPE_DOUBLE &&
              wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){6, 2}) &&
              wm_op_fixture_values_near(f.out[0], cases[c].want, 12, 1e-12);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(tree_ensemble_sends_nan_false_unless_tracked) {
  // Without nodes_missing_value_tracks_true, (NaN,3) goes to x1 > 3 (no),
  // then NaN != 4 (yes): L3 = 40 on target 1, plus L8 = 4.
  te_def_t d = two_trees(WM_DTYPE_FLOAT);
  d.missing = NULL;
  static const double x[2] = {NAN, 3};
  wm_op_fixture_t f;
  WM_CHECK_OK(te_node(&f, &d, 1, 2, x, 1, 0));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[2] = {0, 44};
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_FLOAT &&
            wm_op_fixture_values_near(f.out[0], want, 2, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(tree_ensemble_runs_float16) {
  // One tree: x0 <= 1 ? 0.25 : 3.
  static const double modes[1] = {LEQ}, splits[1] = {1}, w[2] = {0.25, 3};
  static const int64_t zero[1] = {0}, one[1] = {1}, ones[1] = {1},
                       targets[2] = {0, 0};
  te_def_t d = {
      1,    2,    1, WM_DTYPE_FLOAT16, modes, zero, splits, zero, ones, one,
      ones, NULL, w, targets,          zero,  NULL, 0,      0};
  static const double x[3] = {0.5, 1.0, 2.0};
  wm_op_fixture_t f;
  WM_CHECK_OK(te_node(&f, &d, 3, 1, x, 1, 0));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[3] = {0.25, 0.25, 3};
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_FLOAT16 &&
            wm_op_fixture_shape_is(f.out[0], 2, (const int64_t[]){3, 1}) &&
            wm_op_fixture_values_near(f.out[0], want, 3, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// Three one-node trees (true and false both go to the same leaf) giving
// |w|[k] to target k.
static te_def_t three_stumps(const double *w) {
  static const double modes[3] = {LEQ, LEQ, LEQ}, splits[3] = {0, 0, 0};
  static const int64_t zeros[3] = {0, 0, 0}, ids[3] = {0, 1, 2},
                       ones[3] = {1, 1, 1}, roots[3] = {0, 1, 2};
  te_def_t d = {
      3,    3, 3,   WM_DTYPE_DOUBLE, modes, zeros, splits, ids, ones, ids, ones,
      NULL, w, ids, roots,           NULL,  0,     0};
  return d;
}

WM_TEST(tree_ensemble_applies_post_transforms) {
  static const double w[3] = {1, 2, 0};
  static const double p[3] = {0.975, 0.2, 1e-10};
  static const struct {
    int64_t post;
    const double *leaves;
    double want[3];
  } cases[4] = {
      {1, w, {0.24472847105479764, 0.6652409557748218, 0.09003057317038046}},
      {2, w, {0.7310585786300049, 0.8807970779778823, 0.5}},
      {3, w, {0.2689414213699951, 0.7310585786300049, 0.0}},
      {4, p, {1.9599639845400536, -0.8416212335729142, -6.361340902404056}},
  };
  static const double x[1] = {0};
  for (int c = 0; c < 4; c++) {
    te_def_t d = three_stumps(cases[c].leaves);
    wm_op_fixture_t f;
    WM_CHECK_OK(te_node(&f, &d, 1, 1, x, 1, cases[c].post));
    wm_status_t s = wm_op_fixture_run(&f);
    bool ok =
        !s && wm_op_fixture_values_near(f.out[0], cases[c].want, 3, 1e-12);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(tree_ensemble_infers_targets_and_counts_its_walks) {
  te_def_t d = two_trees(WM_DTYPE_FLOAT);
  d.n_targets = 0;  // the leaves name targets 0 and 1
  wm_op_fixture_t f;
  WM_CHECK_OK(ml_init(&f, 5));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 2,
                                      (const int64_t[]){-1, 2}));
  const char *in[1] = {"x"};
  WM_CHECK_OK(ml_add_node(&f, "TreeEnsemble", in, 1));
  WM_CHECK_OK(te_attrs(&f, &d));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_FLOAT);
  WM_CHECK_INT_EQ(t.shape.rank, 2);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
  WM_CHECK_INT_EQ(t.shape.dims[1], 2);

  // Each tree is three levels deep: 6 rows * (6 tests + 2 sums) plus one
  // operation per output, and SOFTMAX's 12 exponentials.
  WM_CHECK_OK(te_node(&f, &d, 6, 2, k_x, 1, 1));
  wm_op_cost_t cost;
  s = wm_op_fixture_cost(&f, &t, &cost);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_DBL_NEAR(cost.flops, 60, 0);
  WM_CHECK_DBL_NEAR(cost.transcendentals, 12, 0);
}

WM_TEST(tree_ensemble_rejects_hostile_ensembles) {
  static const int64_t cyc_true[7] = {1, 0, 2, 3, 5, 6, 7};
  static const int64_t cyc_true_leaf[7] = {0, 0, 1, 1, 1, 1, 1};
  static const int64_t bad_ids[7] = {1, 0, 2, 3, 5, 6, 9};
  static const int64_t bad_feature[7] = {0, 1, 1, 0, 1, 0, 2};
  static const double bad_modes[7] = {LEQ, MEMBER, GT, NEQ, EQ, GTE, 7};
  static const double two_sets[5] = {7, NAN, 2, 5, NAN};
  static const int64_t bad_target[9] = {0, 1, 0, 1, 0, 1, 0, 1, 2};
  static const int64_t bad_root[2] = {0, 7};
  static const struct {
    wm_status_code_t code;
    const char *want;
  } cases[] = {
      {WM_STATUS_INVALID_ARGUMENT, "node 1 leads back to node 0"},
      {WM_STATUS_OUT_OF_RANGE,
       "nodes_falsenodeids[6] is 9, want a leaf in [0, 9)"},
      {WM_STATUS_OUT_OF_RANGE, "a tree reads feature 2 but input 0 has 2"},
      {WM_STATUS_INVALID_ARGUMENT, "nodes_modes[6] is 7"},
      {WM_STATUS_INVALID_ARGUMENT,
       "holds 2 NaN-ended sets, want one for each of the 1 BRANCH_MEMBER"},
      {WM_STATUS_INVALID_ARGUMENT, "\"membership_values\" is required"},
      {WM_STATUS_OUT_OF_RANGE, "leaf_targetids[8] is 2, want a target in"},
      {WM_STATUS_OUT_OF_RANGE, "tree_roots[1] is 7"},
      {WM_STATUS_INVALID_ARGUMENT,
       "input 0 has dtype float but attribute \"nodes_splits\" holds double"},
      {WM_STATUS_INVALID_ARGUMENT, "\"aggregate_function\" is 4"},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    te_def_t d = two_trees(WM_DTYPE_FLOAT);
    int64_t aggregate = 1;
    switch (c) {
      case 0:
        d.true_ids = cyc_true;
        d.true_leaf = cyc_true_leaf;
        break;
      case 1:
        d.false_ids = bad_ids;
        break;
      case 2:
        d.features = bad_feature;
        break;
      case 3:
        d.modes = bad_modes;
        break;
      case 4:
        d.members = two_sets;
        d.n_members = 5;
        break;
      case 5:
        d.members = NULL;
        break;
      case 6:
        d.targets = bad_target;
        break;
      case 7:
        d.roots = bad_root;
        break;
      case 9:
        aggregate = 4;
        break;
      default:
        break;
    }
    wm_op_fixture_t f;
    if (c == 8) {
      // Float samples for double thresholds.
      d.dtype = WM_DTYPE_DOUBLE;
      WM_CHECK_OK(ml_init(&f, 5));
      WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2,
                                          (const int64_t[]){6, 2}, k_x));
      const char *in[1] = {"x"};
      WM_CHECK_OK(ml_add_node(&f, "TreeEnsemble", in, 1));
      WM_CHECK_OK(te_attrs(&f, &d));
    } else {
      WM_CHECK_OK(te_node(&f, &d, 6, 2, k_x, aggregate, 0));
    }
    wm_status_t s = wm_op_fixture_run(&f);
    wm_op_fixture_deinit(&f);
    if (!s || wm_status_code(s) != cases[c].code ||
        !strstr(wm_status_message(s), cases[c].want)) {
      wm_test_fail(__FILE__, __LINE__, "case %zu: got \"%s\", want \"%s\"", c,
                   s ? wm_status_message(s) : "ok", cases[c].want);
      wm_status_free(s);
      return;
    }
    wm_status_free(s);
  }
}

WM_TEST(tree_ensemble_rejects_inputs_that_are_not_matrices) {
  te_def_t d = two_trees(WM_DTYPE_FLOAT);
  wm_op_fixture_t f;
  WM_CHECK_OK(ml_init(&f, 5));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 1,
                                      (const int64_t[]){2}, NULL));
  const char *in[1] = {"x"};
  WM_CHECK_OK(ml_add_node(&f, "TreeEnsemble", in, 1));
  WM_CHECK_OK(te_attrs(&f, &d));
  wm_status_t s = wm_op_fixture_run(&f);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT,
               "input 0 has shape [2], want [N, features]");
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(binarizer_maps_above_threshold_to_one_and_nan_to_zero),
      WM_CASE(binarizer_compares_integers_with_the_default_threshold),
      WM_CASE(afe_selects_along_the_last_axis_with_repeats),
      WM_CASE(afe_gives_a_vector_one_row),
      WM_CASE(afe_copies_strings),
      WM_CASE(afe_rejects_out_of_range_indices_and_scalars),
      WM_CASE(afe_infers_the_count_of_unknown_indices),
      WM_CASE(label_encoder_v1_maps_strings_to_first_index_and_back),
      WM_CASE(label_encoder_v2_compares_float_keys_bit_for_bit),
      WM_CASE(label_encoder_v4_matches_any_nan_and_zero_signs),
      WM_CASE(label_encoder_v4_maps_tensor_keys_to_tensor_values),
      WM_CASE(label_encoder_v4_maps_strings_to_int16_tensor_values),
      WM_CASE(label_encoder_rejects_bad_attribute_sets),
      WM_CASE(label_encoder_rejects_keys_of_another_dtype_statically),
      WM_CASE(tree_ensemble_walks_every_mode_and_aggregates),
      WM_CASE(tree_ensemble_sends_nan_false_unless_tracked),
      WM_CASE(tree_ensemble_runs_float16),
      WM_CASE(tree_ensemble_applies_post_transforms),
      WM_CASE(tree_ensemble_infers_targets_and_counts_its_walks),
      WM_CASE(tree_ensemble_rejects_hostile_ensembles),
      WM_CASE(tree_ensemble_rejects_inputs_that_are_not_matrices),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
