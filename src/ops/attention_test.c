// Tests of the transformer operators: Attention, RotaryEmbedding,
// RMSNormalization and FlexAttention (its modifier subgraphs emulated by a
// C callback) against hand-computed values, their shape rules and
// costs, and errors on hostile attributes, shapes and indices.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "op_fixture.h"
#include "wm_test.h"

// Runs the fixture's node and returns output |i| (any slot, also past
// the fixture's three) in *out_take; the caller destroys it.
static wm_status_t run_take_output(wm_op_fixture_t *f, int32_t i,
                                   wm_tensor_t **out_take) {
  *out_take = NULL;
  wm_op_ctx_t ctx;
  WM_RETURN_IF_ERROR(wm_op_ctx_init(&ctx, f->graph, (size_t)f->node));
  const wm_op_def_t *def;
  wm_status_t s = wm_op_find_def(&ctx, &def);
  if (!s) {
    s = wm_op_execute(def, &ctx);
  }
  for (int32_t k = 0; k < ctx.n_out; k++) {
    if (k == i && !s) {
      *out_take = ctx.out[k];
    } else {
      wm_tensor_destroy(ctx.out[k]);
    }
  }
  wm_op_ctx_deinit(&ctx);
  return s;
}

// Adds an Attention node reading |inputs| with outputs Y, present_key,
// present_value and qk_matmul_output ("" omits one).
static wm_status_t add_attention(wm_op_fixture_t *f, const char *const *inputs,
                                 int32_t n_in, const char *const *outputs,
                                 int32_t n_out) {
  return wm_graph_add_node(f->graph, "Attention", "", "n", inputs, n_in,
                           outputs, n_out, &f->node);
}

// ------------------------------------------------------------- Attention

WM_TEST(attention_4d_matches_hand_computed_softmax) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  int64_t dq[4] = {1, 1, 1, 2}, dk[4] = {1, 1, 2, 2}, dv[4] = {1, 1, 2, 1};
  static const double q[2] = {1, 0}, k[4] = {1, 0, 0, 0}, v[2] = {1, 0};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "q", WM_DTYPE_FLOAT, 4, dq, q));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "k", WM_DTYPE_FLOAT, 4, dk, k));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "v", WM_DTYPE_FLOAT, 4, dv, v));
  const char *in[3] = {"q", "k", "v"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Attention", in, 3, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  // Logits [1/sqrt(2), 0]; Y is the softmax weight of the first key.
  double e = exp(1 / sqrt(2.0));
  double want[1] = {e / (e + 1)};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 1, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(attention_gqa_maps_query_heads_to_kv_heads_in_blocks) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  int64_t dq[4] = {1, 4, 1, 2}, dk[4] = {1, 2, 1, 2}, dv[4] = {1, 2, 1, 1};
  static const double v[2] = {10, 20};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "q", WM_DTYPE_FLOAT, 4, dq, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "k", WM_DTYPE_FLOAT, 4, dk, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "v", WM_DTYPE_FLOAT, 4, dv, v));
  const char *in[3] = {"q", "k", "v"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Attention", in, 3, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  // One key per head: each query head copies its kv head's value.
  static const double want[4] = {10, 10, 20, 20};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 4, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(attention_3d_splits_heads_and_merges_them_back) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  // Two heads of size 1; a single key, so Y is V laid out per head.
  int64_t d[3] = {1, 1, 2};
  static const double v[2] = {3, 5};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "q", WM_DTYPE_FLOAT, 3, d, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "k", WM_DTYPE_FLOAT, 3, d, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "v", WM_DTYPE_FLOAT, 3, d, v));
  const char *in[3] = {"q", "k", "v"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Attention", in, 3, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "q_num_heads", 2));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "kv_num_heads", 2));
  wm_status_t s = wm_op_fixture_run(&f);
  int64_t want_dims[3] = {1, 1, 2};
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 3, want_dims) &&
            wm_op_fixture_values_near(f.out[0], v, 2, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(attention_causal_with_past_offsets_the_frontier) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  // K all zero: the query averages the values it may attend. With two
  // past keys the single query sees all three keys.
  int64_t dq[4] = {1, 1, 1, 1}, dp[4] = {1, 1, 2, 1};
  static const double pv[2] = {3, 6}, v[1] = {9};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "q", WM_DTYPE_FLOAT, 4, dq, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "k", WM_DTYPE_FLOAT, 4, dq, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "v", WM_DTYPE_FLOAT, 4, dq, v));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "pk", WM_DTYPE_FLOAT, 4, dp, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "pv", WM_DTYPE_FLOAT, 4, dp, pv));
  const char *in[6] = {"q", "k", "v", "", "pk", "pv"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Attention", in, 6, 3));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "is_causal", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want_y[1] = {6}, want_pv[3] = {3, 6, 9};
  int64_t pdims[4] = {1, 1, 3, 1};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want_y, 1, 1e-6) &&
            wm_op_fixture_shape_is(f.out[2], 4, pdims) &&
            wm_op_fixture_values_near(f.out[2], want_pv, 3, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(attention_causal_without_cache_is_top_left) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  int64_t dq[4] = {1, 1, 1, 1}, dk[4] = {1, 1, 3, 1};
  static const double v[3] = {3, 6, 9};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "q", WM_DTYPE_FLOAT, 4, dq, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "k", WM_DTYPE_FLOAT, 4, dk, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "v", WM_DTYPE_FLOAT, 4, dk, v));
  const char *in[3] = {"q", "k", "v"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Attention", in, 3, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "is_causal", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[1] = {3};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 1, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(attention_fully_masked_row_gives_zeros_not_nan) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  int64_t dq[4] = {1, 1, 1, 1}, dk[4] = {1, 1, 2, 1}, dm[2] = {1, 2};
  static const double v[2] = {4, 8};
  static const int64_t mask[2] = {0, 0};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "q", WM_DTYPE_FLOAT, 4, dq, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "k", WM_DTYPE_FLOAT, 4, dk, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "v", WM_DTYPE_FLOAT, 4, dk, v));
  WM_CHECK_OK(wm_op_fixture_add_const_i64(&f, "m", WM_DTYPE_BOOL, 2, dm, mask));
  const char *in[4] = {"q", "k", "v", "m"};
  const char *out[4] = {"y0", "", "", "y3"};
  WM_CHECK_OK(add_attention(&f, in, 4, out, 4));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "qk_matmul_output_mode", 3));
  wm_tensor_t *y = NULL, *qk = NULL;
  wm_status_t s = run_take_output(&f, 0, &y);
  if (!s) {
    s = run_take_output(&f, 3, &qk);
  }
  static const double zeros[2] = {0, 0};
  bool ok = !s && wm_op_fixture_values_near(y, zeros, 1, 0) &&
            wm_op_fixture_values_near(qk, zeros, 2, 0);
  wm_tensor_destroy(y);
  wm_tensor_destroy(qk);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(attention_qk_output_modes_follow_the_spec_order) {
  // Logit 2 (scale 1), softcap 1, additive mask -1 on the only key.
  static const struct {
    int64_t mode;
    double want;
  } cases[3] = {{0, 2}, {1, 0.96402758}, {2, -0.03597242}};
  for (int c = 0; c < 3; c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 23));
    int64_t d[4] = {1, 1, 1, 1}, dm[1] = {1};
    static const double two[1] = {2}, one[1] = {1}, m[1] = {-1};
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "q", WM_DTYPE_DOUBLE, 4, d, two));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "k", WM_DTYPE_DOUBLE, 4, d, one));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "v", WM_DTYPE_DOUBLE, 4, d, one));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "m", WM_DTYPE_DOUBLE, 1, dm, m));
    const char *in[4] = {"q", "k", "v", "m"};
    const char *out[4] = {"y0", "", "", "y3"};
    WM_CHECK_OK(add_attention(&f, in, 4, out, 4));
    WM_CHECK_OK(wm_op_fixture_attr_float(&f, "scale", 1));
    WM_CHECK_OK(wm_op_fixture_attr_float(&f, "softcap", 1));
    WM_CHECK_OK(
        wm_op_fixture_attr_int(&f, "qk_matmul_output_mode", cases[c].mode));
    wm_tensor_t *qk = NULL;
    wm_status_t s = run_take_output(&f, 3, &qk);
    double want[1] = {cases[c].want};
    bool ok = !s && wm_op_fixture_values_near(qk, want, 1, 1e-7);
    wm_tensor_destroy(qk);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(attention_short_mask_pads_missing_keys_as_masked) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  int64_t dq[4] = {1, 1, 1, 1}, dk[4] = {1, 1, 3, 1}, dm[2] = {1, 1};
  static const double v[3] = {3, 6, 9}, m[1] = {0};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "q", WM_DTYPE_FLOAT, 4, dq, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "k", WM_DTYPE_FLOAT, 4, dk, NULL));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "v", WM_DTYPE_FLOAT, 4, dk, v));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "m", WM_DTYPE_FLOAT, 2, dm, m));
  const char *in[4] = {"q", "k", "v", "m"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Attention", in, 4, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[1] = {3};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 1, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(attention_nonpad_kv_seqlen_masks_padding_and_clamps_hostile_values) {
  static const int64_t lens[3] = {2, INT64_MAX, INT64_MIN};
  static const double want[3] = {4.5, 6, 0};  // mean of {3,6}, all, none
  for (int c = 0; c < 3; c++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(wm_op_fixture_init(&f, 24));
    int64_t dq[4] = {1, 1, 1, 1}, dk[4] = {1, 1, 3, 1}, dn[1] = {1};
    static const double v[3] = {3, 6, 9};
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "q", WM_DTYPE_FLOAT, 4, dq, NULL));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "k", WM_DTYPE_FLOAT, 4, dk, NULL));
    WM_CHECK_OK(wm_op_fixture_add_const(&f, "v", WM_DTYPE_FLOAT, 4, dk, v));
    WM_CHECK_OK(
        wm_op_fixture_add_const_i64(&f, "n", WM_DTYPE_INT64, 1, dn, &lens[c]));
    const char *in[7] = {"q", "k", "v", "", "", "", "n"};
    WM_CHECK_OK(wm_op_fixture_add_node(&f, "Attention", in, 7, 1));
    WM_CHECK_OK(wm_op_fixture_attr_int(&f, "is_causal", 1));
    wm_status_t s = wm_op_fixture_run(&f);
    bool ok = !s && wm_op_fixture_values_near(f.out[0], &want[c], 1, 1e-6);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(attention_window_limits_keys_around_the_query) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 25));
  int64_t d[4] = {1, 1, 3, 1};
  static const double v[3] = {3, 6, 9}, zeros[3] = {0, 0, 0};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "q", WM_DTYPE_FLOAT, 4, d, zeros));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "k", WM_DTYPE_FLOAT, 4, d, zeros));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "v", WM_DTYPE_FLOAT, 4, d, v));
  const char *in[3] = {"q", "k", "v"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Attention", in, 3, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "left_window_size", 0));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "right_window_size", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  // Query i sees keys i and i+1.
  static const double want[3] = {4.5, 7.5, 9};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 3, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(attention_bfloat16_rounds_like_the_reference) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  int64_t dq[4] = {1, 1, 1, 1}, dk[4] = {1, 1, 2, 1};
  static const double q[1] = {1}, k[2] = {1, 0}, v[2] = {1, 0};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "q", WM_DTYPE_BFLOAT16, 4, dq, q));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "k", WM_DTYPE_BFLOAT16, 4, dk, k));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "v", WM_DTYPE_BFLOAT16, 4, dk, v));
  const char *in[3] = {"q", "k", "v"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Attention", in, 3, 1));
  wm_status_t s = wm_op_fixture_run(&f);
  // Logits [1, 0]: exp(1) rounds to 2.71875, the sum is 3.71875, and
  // 2.71875 / 3.71875 = 0.7311 rounds to 0.73046875.
  static const double want[1] = {0.73046875};
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_BFLOAT16 &&
            wm_op_fixture_values_near(f.out[0], want, 1, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(attention_static_shapes_keep_unknown_dims) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  int64_t dq[4] = {-1, 6, 4, 8}, dk[4] = {2, 3, -1, 8}, dv[4] = {2, 3, 5, 10};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "q", WM_DTYPE_FLOAT, 4, dq));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "k", WM_DTYPE_FLOAT, 4, dk));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "v", WM_DTYPE_FLOAT, 4, dv));
  const char *in[3] = {"q", "k", "v"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Attention", in, 3, 1));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 4);
  WM_CHECK_INT_EQ(t.shape.dims[0], 2);
  WM_CHECK_INT_EQ(t.shape.dims[1], 6);
  WM_CHECK_INT_EQ(t.shape.dims[2], 4);
  WM_CHECK_INT_EQ(t.shape.dims[3], 10);
}

WM_TEST(attention_cost_counts_both_products_and_the_softmax) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  int64_t dq[4] = {2, 3, 4, 8}, dk[4] = {2, 3, 6, 8}, dv[4] = {2, 3, 6, 10};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "q", WM_DTYPE_FLOAT, 4, dq));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "k", WM_DTYPE_FLOAT, 4, dk));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "v", WM_DTYPE_FLOAT, 4, dv));
  const char *in[3] = {"q", "k", "v"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Attention", in, 3, 1));
  wm_type_t t;
  wm_op_cost_t cost;
  wm_status_t s = wm_op_fixture_cost(&f, &t, &cost);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  // 144 scores (2*3*4*6), each with 8 + 10 MACs.
  WM_CHECK_DBL_NEAR(cost.macs, 144 * 18, 0);
  WM_CHECK_DBL_NEAR(cost.flops, 2 * 144 * 18 + 5 * 144, 0);
  WM_CHECK_DBL_NEAR(cost.transcendentals, 144, 0);
}

// Builds Attention over typed inputs of shapes |dq|, |dk|, |dv| (rank
// |r|) with the optional |mask| shape and returns the check's status.
static wm_status_t attention_check(int64_t opset, int32_t r, const int64_t *dq,
                                   const int64_t *dk, const int64_t *dv,
                                   int32_t mask_rank, const int64_t *dm,
                                   const char *attr, int64_t value) {
  wm_op_fixture_t f;
  WM_RETURN_IF_ERROR(wm_op_fixture_init(&f, opset));
  wm_status_t s = wm_op_fixture_add_input(&f, "q", WM_DTYPE_FLOAT, r, dq);
  if (!s) {
    s = wm_op_fixture_add_input(&f, "k", WM_DTYPE_FLOAT, r, dk);
  }
  if (!s) {
    s = wm_op_fixture_add_input(&f, "v", WM_DTYPE_FLOAT, r, dv);
  }
  if (!s && dm) {
    s = wm_op_fixture_add_input(&f, "m", WM_DTYPE_FLOAT, mask_rank, dm);
  }
  const char *in[4] = {"q", "k", "v", "m"};
  if (!s) {
    s = wm_op_fixture_add_node(&f, "Attention", in, dm ? 4 : 3, 1);
  }
  if (!s && attr) {
    s = wm_op_fixture_attr_int(&f, attr, value);
  }
  if (!s) {
    s = wm_ops_check_graph(f.graph);
  }
  wm_op_fixture_deinit(&f);
  return s;
}

WM_TEST(attention_rejects_3d_inputs_without_head_counts) {
  int64_t d[3] = {1, 2, 8};
  WM_CHECK_ERR(attention_check(23, 3, d, d, d, 0, NULL, NULL, 0),
               INVALID_ARGUMENT,
               "need attributes q_num_heads and kv_num_heads");
}

WM_TEST(attention_rejects_query_heads_not_multiple_of_kv_heads) {
  int64_t dq[4] = {1, 3, 2, 4}, dk[4] = {1, 2, 2, 4};
  WM_CHECK_ERR(attention_check(23, 4, dq, dk, dk, 0, NULL, NULL, 0),
               INVALID_ARGUMENT,
               "query head count 3 is not a multiple of kv head count 2");
}

WM_TEST(attention_rejects_mismatched_head_sizes) {
  int64_t dq[4] = {1, 2, 2, 4}, dk[4] = {1, 2, 2, 5};
  WM_CHECK_ERR(attention_check(23, 4, dq, dk, dk, 0, NULL, NULL, 0),
               INVALID_ARGUMENT, "query/key head size is 5 here, 4 elsewhere");
}

WM_TEST(attention_rejects_mask_that_does_not_broadcast) {
  int64_t d[4] = {1, 2, 3, 4}, dm[2] = {2, 3};
  WM_CHECK_ERR(attention_check(23, 4, d, d, d, 2, dm, NULL, 0),
               INVALID_ARGUMENT, "shape [2,3] does not broadcast to [1,2,3,3]");
  int64_t longer[2] = {3, 5};
  WM_CHECK_ERR(attention_check(23, 4, d, d, d, 2, longer, NULL, 0),
               INVALID_ARGUMENT, "does not broadcast");
}

WM_TEST(attention_rejects_bad_attributes) {
  int64_t d[4] = {1, 2, 3, 4};
  WM_CHECK_ERR(
      attention_check(23, 4, d, d, d, 0, NULL, "qk_matmul_output_mode", 4),
      INVALID_ARGUMENT, "qk_matmul_output_mode is 4, want 0 to 3");
  WM_CHECK_ERR(attention_check(23, 4, d, d, d, 0, NULL, "softmax_precision", 7),
               INVALID_ARGUMENT, "softmax_precision is 7");
  WM_CHECK_ERR(attention_check(23, 4, d, d, d, 0, NULL, "is_causal", 2),
               INVALID_ARGUMENT, "is_causal is 2");
  WM_CHECK_ERR(attention_check(25, 4, d, d, d, 0, NULL, "left_window_size", -2),
               INVALID_ARGUMENT, "window sizes are -2 (left)");
  WM_CHECK_ERR(attention_check(25, 4, d, d, d, 0, NULL, "q_num_heads", 2),
               INVALID_ARGUMENT, "must not be given for 4D inputs");
}

WM_TEST(attention_rejects_rank_5_inputs) {
  int64_t d[5] = {1, 1, 1, 1, 1};
  WM_CHECK_ERR(attention_check(23, 5, d, d, d, 0, NULL, NULL, 0),
               INVALID_ARGUMENT, "input 0 has rank 5, want 3 or 4");
}

WM_TEST(attention_rejects_past_key_without_past_value) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  int64_t d[4] = {1, 1, 1, 1};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "q", WM_DTYPE_FLOAT, 4, d));
  const char *in[5] = {"q", "q", "q", "", "q"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Attention", in, 5, 1));
  wm_status_t s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT,
               "past_key and past_value must be given together");
}

WM_TEST(attention_rejects_nonpad_with_past) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 24));
  int64_t d[4] = {1, 1, 1, 1}, dn[1] = {1};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "q", WM_DTYPE_FLOAT, 4, d));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "n", WM_DTYPE_INT64, 1, dn));
  const char *in[7] = {"q", "q", "q", "", "q", "q", "n"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "Attention", in, 7, 1));
  wm_status_t s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "nonpad_kv_seqlen cannot be combined");
}

// ------------------------------------------------------- RotaryEmbedding

// Runs RotaryEmbedding on x = [1, 2, 3, 4] (one head, one position) with
// cos [0, 1] and sin [1, 0] at position 0 of a two-row cache.
static wm_status_t rope_run_one(wm_op_fixture_t *f, int64_t interleaved,
                                int64_t position) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 23));
  int64_t dx[4] = {1, 1, 1, 4}, dc[2] = {2, 2}, dp[2] = {1, 1};
  static const double x[4] = {1, 2, 3, 4}, c[4] = {0, 1, 7, 7},
                      s[4] = {1, 0, 7, 7};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "x", WM_DTYPE_FLOAT, 4, dx, x));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "c", WM_DTYPE_FLOAT, 2, dc, c));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "s", WM_DTYPE_FLOAT, 2, dc, s));
  WM_RETURN_IF_ERROR(
      wm_op_fixture_add_const_i64(f, "p", WM_DTYPE_INT64, 2, dp, &position));
  const char *in[4] = {"x", "c", "s", "p"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "RotaryEmbedding", in, 4, 1));
  WM_RETURN_IF_ERROR(wm_op_fixture_attr_int(f, "interleaved", interleaved));
  return wm_op_fixture_run(f);
}

WM_TEST(rotary_rotates_halves_or_interleaved_pairs) {
  wm_op_fixture_t f;
  // Halves: x1 = [1, 2], x2 = [3, 4].
  wm_status_t s = rope_run_one(&f, 0, 0);
  static const double halves[4] = {-3, 2, 1, 4};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], halves, 4, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  // Pairs: x1 = [1, 3], x2 = [2, 4].
  s = rope_run_one(&f, 1, 0);
  static const double pairs[4] = {-2, 1, 3, 4};
  ok = !s && wm_op_fixture_values_near(f.out[0], pairs, 4, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(rotary_rejects_position_ids_outside_the_cache) {
  static const int64_t bad[3] = {2, -1, INT64_MAX};
  for (int i = 0; i < 3; i++) {
    wm_op_fixture_t f;
    wm_status_t s = rope_run_one(&f, 0, bad[i]);
    wm_op_fixture_deinit(&f);
    WM_CHECK_ERR(s, OUT_OF_RANGE, "position_ids[0,0] is");
  }
}

WM_TEST(rotary_partial_dim_copies_the_rest) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  // 3D input with two heads of size 4; rotary dim 2 rotates (x0, x1).
  int64_t dx[3] = {1, 1, 8}, dc[3] = {1, 1, 1};
  static const double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, c[1] = {0}, s1[1] = {1};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 3, dx, x));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "c", WM_DTYPE_FLOAT, 3, dc, c));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "s", WM_DTYPE_FLOAT, 3, dc, s1));
  const char *in[3] = {"x", "c", "s"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "RotaryEmbedding", in, 3, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "num_heads", 2));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "rotary_embedding_dim", 2));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[8] = {-2, 1, 3, 4, -6, 5, 7, 8};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 8, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// Checks RotaryEmbedding over x of shape |dx| and caches of shape |dc|
// without position ids, with one int attribute.
static wm_status_t rope_check(int32_t rx, const int64_t *dx, int32_t rc,
                              const int64_t *dc, const char *attr,
                              int64_t value) {
  wm_op_fixture_t f;
  WM_RETURN_IF_ERROR(wm_op_fixture_init(&f, 23));
  wm_status_t s = wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, rx, dx);
  if (!s) {
    s = wm_op_fixture_add_input(&f, "c", WM_DTYPE_FLOAT, rc, dc);
  }
  const char *in[3] = {"x", "c", "c"};
  if (!s) {
    s = wm_op_fixture_add_node(&f, "RotaryEmbedding", in, 3, 1);
  }
  if (!s && attr) {
    s = wm_op_fixture_attr_int(&f, attr, value);
  }
  if (!s) {
    s = wm_ops_check_graph(f.graph);
  }
  wm_op_fixture_deinit(&f);
  return s;
}

WM_TEST(rotary_rejects_bad_dims_and_attributes) {
  int64_t dx[4] = {1, 2, 3, 8}, dc[3] = {1, 3, 4}, dc_bad[3] = {1, 3, 3};
  WM_CHECK_OK(rope_check(4, dx, 3, dc, NULL, 0));
  WM_CHECK_ERR(rope_check(4, dx, 3, dc_bad, NULL, 0), INVALID_ARGUMENT,
               "last dim is 3, want rotary dim / 2 = 4");
  WM_CHECK_ERR(rope_check(4, dx, 3, dc, "rotary_embedding_dim", 3),
               INVALID_ARGUMENT, "rotary_embedding_dim is 3");
  WM_CHECK_ERR(rope_check(4, dx, 3, dc, "rotary_embedding_dim", 10),
               INVALID_ARGUMENT, "at most the head size 8");
  int64_t d3[3] = {1, 3, 16};
  WM_CHECK_ERR(rope_check(3, d3, 3, dc, NULL, 0), INVALID_ARGUMENT,
               "3D input needs attribute num_heads");
  WM_CHECK_ERR(rope_check(3, d3, 3, dc, "num_heads", 3), INVALID_ARGUMENT,
               "hidden size 16 is not a multiple of num_heads 3");
  int64_t dc2[2] = {3, 4};
  WM_CHECK_ERR(rope_check(4, dx, 2, dc2, NULL, 0), INVALID_ARGUMENT,
               "has rank 2, want 3 without position_ids");
}

// ------------------------------------------------------ RMSNormalization

WM_TEST(rms_normalization_matches_hand_computed) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  int64_t dx[2] = {1, 2}, dw[1] = {2};
  static const double x[2] = {3, 4}, w[2] = {1, 2};
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "x", WM_DTYPE_FLOAT, 2, dx, x));
  WM_CHECK_OK(wm_op_fixture_add_const(&f, "w", WM_DTYPE_FLOAT, 1, dw, w));
  const char *in[2] = {"x", "w"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "RMSNormalization", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "epsilon", 0));
  wm_status_t s = wm_op_fixture_run(&f);
  double rms = sqrt(12.5);
  double want[2] = {3 / rms, 8 / rms};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 2, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(rms_normalization_rejects_scale_and_axis_errors) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  int64_t dx[2] = {3, 4}, dw[1] = {3};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 2, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 1, dw));
  const char *in[2] = {"x", "w"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "RMSNormalization", in, 2, 1));
  wm_status_t s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT,
               "input 1 (scale) has shape [3], which does not broadcast");

  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 2, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 1, dw));
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "RMSNormalization", in, 2, 1));
  WM_CHECK_OK(wm_op_fixture_attr_int(&f, "axis", 2));
  s = wm_ops_check_graph(f.graph);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, INVALID_ARGUMENT, "axis 2 is out of range for rank 2");
}

WM_TEST(rms_normalization_cost_counts_elements_and_rows) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 23));
  int64_t dx[3] = {2, 3, 4}, dw[1] = {4};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_FLOAT, 3, dx));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "w", WM_DTYPE_FLOAT, 1, dw));
  const char *in[2] = {"x", "w"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "RMSNormalization", in, 2, 1));
  wm_type_t t;
  wm_op_cost_t cost;
  wm_status_t s = wm_op_fixture_cost(&f, &t, &cost);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_DBL_NEAR(cost.flops, 96, 0);
  WM_CHECK_DBL_NEAR(cost.transcendentals, 6, 0);
}

// --------------------------------------------------------- FlexAttention

// What the C stand-in for the modifier subgraphs does and saw.
typedef struct mod_env {
  double add1;         // score_mod adds this to every score of key 1
  double mul;          // prob_mod multiplies every probability by this
  bool all_neg_inf;    // score_mod masks every score
  int bad;             // 1: drop the last dim, 2: answer double, 3: fail
  char log[64];        // attributes called, in order
  wm_dtype_t seen;     // dtype of the last tensor given
  double first_score;  // element 0 given to score_mod
  double prob_sum;     // sum of the row 0 given to prob_mod
} mod_env_t;

static wm_status_t emulate_mod(void *envp, const char *attr,
                               const wm_tensor_t *in, wm_tensor_t **out) {
  mod_env_t *env = envp;
  *out = NULL;
  strncat(env->log, attr, sizeof(env->log) - strlen(env->log) - 2);
  strcat(env->log, ";");
  env->seen = in->dtype;
  if (env->bad == 3) {
    return WM_ERROR(UNAVAILABLE, "the stand-in refuses");
  }
  wm_shape_t shape = in->shape;
  if (env->bad == 1) {
    shape.rank--;
  }
  wm_dtype_t dt = env->bad == 2 ? WM_DTYPE_DOUBLE : in->dtype;
  WM_RETURN_IF_ERROR(wm_tensor_create(dt, &shape, out));
  size_t last = (size_t)in->shape.dims[in->shape.rank - 1];
  bool score = strcmp(attr, "score_mod") == 0;
  if (score) {
    env->first_score = wm_tensor_get_f64(in, 0);
  } else {
    env->prob_sum = 0;
    for (size_t j = 0; j < last; j++) {
      env->prob_sum += wm_tensor_get_f64(in, j);
    }
  }
  for (size_t i = 0; i < (*out)->count; i++) {
    double v = wm_tensor_get_f64(in, i);
    if (score) {
      v = env->all_neg_inf ? -INFINITY : v + (i % last == 1 ? env->add1 : 0);
    } else {
      v *= env->mul;
    }
    wm_tensor_set_f64(*out, i, v);
  }
  return NULL;
}

// Starts a fixture with a FlexAttention node (ai.onnx.preview opset 1)
// reading the values "q", "k" and "v", which the caller adds.
static wm_status_t flex_init(wm_op_fixture_t *f) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 26));
  return wm_graph_set_opset(f->graph, "ai.onnx.preview", 1);
}

static wm_status_t flex_add_node(wm_op_fixture_t *f) {
  static const char *const in[3] = {"q", "k", "v"}, *const out[1] = {"y0"};
  return wm_graph_add_node(f->graph, "FlexAttention", "ai.onnx.preview", "n",
                           in, 3, out, 1, &f->node);
}

// Adds modifier attribute |name|: an Identity graph with |n_in| inputs of
// |dtype| and rank 4 (the C stand-in does the real work).
static wm_status_t flex_add_mod(wm_op_fixture_t *f, const char *name,
                                wm_dtype_t dtype, int n_in) {
  wm_graph_t *g;
  WM_RETURN_IF_ERROR(wm_graph_create(name, f->graph, &g));
  int64_t d[4] = {-1, -1, -1, -1};
  wm_shape_t shape = wm_shape_make(4, d);
  wm_type_t t = wm_type_tensor(dtype, &shape);
  static const char *const ins[2] = {"x", "x2"}, *const outs[1] = {"y"};
  wm_status_t s = NULL;
  for (int i = 0; !s && i < n_in; i++) {
    s = wm_graph_add_input(g, ins[i], &t, NULL);
  }
  if (!s) {
    s = wm_graph_add_node(g, "Identity", "", "id", ins, 1, outs, 1, NULL);
  }
  if (!s) {
    s = wm_graph_add_output(g, "y", &t, NULL);
  }
  if (s) {
    wm_graph_destroy(g);
    return s;
  }
  return wm_graph_add_attr_graph(f->graph, f->node, name, g);
}

// Adds constants q [1,hq,1,e], k [1,hkv,s,e] and v [1,hkv,s,1] of |dt|.
static wm_status_t flex_add_qkv(wm_op_fixture_t *f, wm_dtype_t dt,
                                const int64_t *dq, const int64_t *dk,
                                const int64_t *dv, const double *q,
                                const double *k, const double *v) {
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "q", dt, 4, dq, q));
  WM_RETURN_IF_ERROR(wm_op_fixture_add_const(f, "k", dt, 4, dk, k));
  return wm_op_fixture_add_const(f, "v", dt, 4, dv, v);
}

// Runs the node through wm_op_flex_attention_run the way the session
// does; output 0 lands in f->out[0].
static wm_status_t flex_run(wm_op_fixture_t *f, wm_op_subgraph_fn fn,
                            void *env) {
  wm_tensor_destroy(f->out[0]);
  f->out[0] = NULL;
  wm_op_ctx_t ctx;
  WM_RETURN_IF_ERROR(wm_op_ctx_init(&ctx, f->graph, (size_t)f->node));
  const wm_op_def_t *def;
  wm_status_t s = wm_op_find_def(&ctx, &def);
  if (!s) {
    s = def->infer(&ctx);
  }
  if (!s) {
    s = wm_op_alloc_outputs(&ctx);
  }
  if (!s) {
    s = wm_op_flex_attention_run(&ctx, fn, env);
  }
  f->out[0] = ctx.out[0];
  wm_op_ctx_deinit(&ctx);
  return s;
}

// One query [1, 0] against keys [2, 0] and [0, 0], values 1 and 0.
static const int64_t kFlexDq[4] = {1, 1, 1, 2}, kFlexDk[4] = {1, 1, 2, 2},
                     kFlexDv[4] = {1, 1, 2, 1};
static const double kFlexQ[2] = {1, 0}, kFlexK[4] = {2, 0, 0, 0},
                    kFlexV[2] = {1, 0};

WM_TEST(flex_attention_matches_hand_computed_softmax) {
  wm_op_fixture_t f;
  WM_CHECK_OK(flex_init(&f));
  WM_CHECK_OK(flex_add_qkv(&f, WM_DTYPE_FLOAT, kFlexDq, kFlexDk, kFlexDv,
                           kFlexQ, kFlexK, kFlexV));
  WM_CHECK_OK(flex_add_node(&f));
  wm_status_t s = flex_run(&f, NULL, NULL);
  // Scale 1/sqrt(2): logits [sqrt(2), 0]; Y is the first key's weight.
  double e = exp(sqrt(2.0));
  double want[1] = {e / (e + 1)};
  int64_t dy[4] = {1, 1, 1, 1};
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 4, dy) &&
            wm_op_fixture_values_near(f.out[0], want, 1, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(flex_attention_double_splits_the_scale_in_float32_like_the_reference) {
  wm_op_fixture_t f;
  WM_CHECK_OK(flex_init(&f));
  WM_CHECK_OK(flex_add_qkv(&f, WM_DTYPE_DOUBLE, kFlexDq, kFlexDk, kFlexDv,
                           kFlexQ, kFlexK, kFlexV));
  WM_CHECK_OK(flex_add_node(&f));
  wm_status_t s = flex_run(&f, NULL, NULL);
  // Q and K are each scaled by sqrt(scale) taken in float32, so the logit
  // is 2 * r^2 with r = sqrtf(0.70710677f), not exactly sqrt(2).
  double r = (double)sqrtf((float)(1 / sqrt(2.0)));
  double e = exp(2 * r * r);
  double want[1] = {e / (e + 1)};
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_DOUBLE &&
            wm_op_fixture_values_near(f.out[0], want, 1, 1e-15);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(flex_attention_scale_attribute_replaces_the_default) {
  wm_op_fixture_t f;
  WM_CHECK_OK(flex_init(&f));
  WM_CHECK_OK(flex_add_qkv(&f, WM_DTYPE_DOUBLE, kFlexDq, kFlexDk, kFlexDv,
                           kFlexQ, kFlexK, kFlexV));
  WM_CHECK_OK(flex_add_node(&f));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "scale", 0.25f));
  wm_status_t s = flex_run(&f, NULL, NULL);
  // Logits [0.5, 0].
  double e = exp(0.5);
  double want[1] = {e / (e + 1)};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 1, 1e-15);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(flex_attention_score_mod_gets_the_scaled_scores_and_changes_them) {
  wm_op_fixture_t f;
  WM_CHECK_OK(flex_init(&f));
  WM_CHECK_OK(flex_add_qkv(&f, WM_DTYPE_FLOAT, kFlexDq, kFlexDk, kFlexDv,
                           kFlexQ, kFlexK, kFlexV));
  WM_CHECK_OK(flex_add_node(&f));
  WM_CHECK_OK(wm_op_fixture_attr_float(&f, "scale", 0.5f));
  WM_CHECK_OK(flex_add_mod(&f, "score_mod", WM_DTYPE_FLOAT, 1));
  mod_env_t env = {.add1 = log(3.0)};
  wm_status_t s = flex_run(&f, emulate_mod, &env);
  // Logits [1, 0] become [1, log 3]: weights e/(e+3) and 3/(e+3).
  double e = exp(1.0);
  double want[1] = {e / (e + 3)};
  bool ok = !s && strcmp(env.log, "score_mod;") == 0 &&
            env.seen == WM_DTYPE_FLOAT && fabs(env.first_score - 1) < 1e-6 &&
            wm_op_fixture_values_near(f.out[0], want, 1, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(flex_attention_prob_mod_runs_after_softmax_on_probabilities) {
  wm_op_fixture_t f;
  WM_CHECK_OK(flex_init(&f));
  static const double v[2] = {2, 4};
  WM_CHECK_OK(flex_add_qkv(&f, WM_DTYPE_FLOAT16, kFlexDq, kFlexDk, kFlexDv,
                           NULL, NULL, v));
  WM_CHECK_OK(flex_add_node(&f));
  WM_CHECK_OK(flex_add_mod(&f, "prob_mod", WM_DTYPE_FLOAT, 1));
  WM_CHECK_OK(flex_add_mod(&f, "score_mod", WM_DTYPE_FLOAT, 1));
  mod_env_t env = {.add1 = 0, .mul = 0.5};
  wm_status_t s = flex_run(&f, emulate_mod, &env);
  // Q = [0, 1] and K = [[0, 1], [2, 3]]: logits [1, 3]/sqrt(2); the
  // float16 weights, halved, mix V = [2, 4].
  double l0 = 1 / sqrt(2.0), l1 = 3 / sqrt(2.0);
  double w0 = 1 / (1 + exp(l1 - l0));
  double want[1] = {0.5 * (2 * w0 + 4 * (1 - w0))};
  // float16 inputs still give the mods float32 tensors.
  bool ok = !s && strcmp(env.log, "score_mod;prob_mod;") == 0 &&
            env.seen == WM_DTYPE_FLOAT && fabs(env.prob_sum - 1) < 1e-6 &&
            f.out[0]->dtype == WM_DTYPE_FLOAT16 &&
            wm_op_fixture_values_near(f.out[0], want, 1, 2e-3);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(flex_attention_fully_masked_row_gives_nan_like_the_reference) {
  wm_op_fixture_t f;
  WM_CHECK_OK(flex_init(&f));
  WM_CHECK_OK(flex_add_qkv(&f, WM_DTYPE_FLOAT, kFlexDq, kFlexDk, kFlexDv,
                           kFlexQ, kFlexK, kFlexV));
  WM_CHECK_OK(flex_add_node(&f));
  WM_CHECK_OK(flex_add_mod(&f, "score_mod", WM_DTYPE_FLOAT, 1));
  mod_env_t env = {.all_neg_inf = true};
  wm_status_t s = flex_run(&f, emulate_mod, &env);
  bool ok = !s && isnan(wm_tensor_get_f64(f.out[0], 0));
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(flex_attention_gqa_maps_query_heads_to_kv_heads_in_blocks) {
  wm_op_fixture_t f;
  WM_CHECK_OK(flex_init(&f));
  int64_t dq[4] = {1, 4, 1, 2}, dk[4] = {1, 2, 1, 2}, dv[4] = {1, 2, 1, 1};
  static const double v[2] = {10, 20};
  WM_CHECK_OK(flex_add_qkv(&f, WM_DTYPE_FLOAT, dq, dk, dv, NULL, NULL, v));
  WM_CHECK_OK(flex_add_node(&f));
  wm_status_t s = flex_run(&f, NULL, NULL);
  // One key per head: query heads 0, 1 read kv head 0; heads 2, 3 head 1.
  static const double want[4] = {10, 10, 20, 20};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 4, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(flex_attention_rejects_a_mod_result_of_another_shape_or_dtype) {
  static const char *const want[3] = {
      "subgraph score_mod gave float[1,1,1], want float[1,1,1,2]",
      "subgraph score_mod gave double[1,1,1,2], want float[1,1,1,2]",
      "subgraph score_mod: the stand-in refuses"};
  for (int bad = 1; bad <= 3; bad++) {
    wm_op_fixture_t f;
    WM_CHECK_OK(flex_init(&f));
    WM_CHECK_OK(flex_add_qkv(&f, WM_DTYPE_FLOAT, kFlexDq, kFlexDk, kFlexDv,
                             kFlexQ, kFlexK, kFlexV));
    WM_CHECK_OK(flex_add_node(&f));
    WM_CHECK_OK(flex_add_mod(&f, "score_mod", WM_DTYPE_FLOAT, 1));
    mod_env_t env = {.bad = bad};
    wm_status_t s = flex_run(&f, emulate_mod, &env);
    wm_op_fixture_deinit(&f);
    WM_CHECK(wm_op_fixture_fails_with(s, want[bad - 1]));
  }
}

WM_TEST(flex_attention_with_mods_needs_a_subgraph_runner) {
  wm_op_fixture_t f;
  WM_CHECK_OK(flex_init(&f));
  WM_CHECK_OK(flex_add_qkv(&f, WM_DTYPE_FLOAT, kFlexDq, kFlexDk, kFlexDv,
                           kFlexQ, kFlexK, kFlexV));
  WM_CHECK_OK(flex_add_node(&f));
  WM_CHECK_OK(flex_add_mod(&f, "prob_mod", WM_DTYPE_FLOAT, 1));
  wm_status_t s = flex_run(&f, NULL, NULL);
  wm_op_fixture_deinit(&f);
  WM_CHECK_ERR(s, FAILED_PRECONDITION, "attribute prob_mod is a subgraph");
}

WM_TEST(flex_attention_is_run_by_the_session) {
  wm_op_fixture_t f;
  WM_CHECK_OK(flex_init(&f));
  WM_CHECK_OK(flex_add_qkv(&f, WM_DTYPE_FLOAT, kFlexDq, kFlexDk, kFlexDv,
                           kFlexQ, kFlexK, kFlexV));
  WM_CHECK_OK(flex_add_node(&f));
  bool in_session =
      wm_op_runs_in_session(wm_ops_find("ai.onnx.preview", "FlexAttention", 1));
  wm_status_t s = wm_op_fixture_run(&f);
  wm_op_fixture_deinit(&f);
  WM_CHECK(in_session);
  WM_CHECK_ERR(s, INTERNAL, "runs in the session");
}

WM_TEST(flex_attention_static_shape_and_cost) {
  wm_op_fixture_t f;
  WM_CHECK_OK(flex_init(&f));
  int64_t dq[4] = {-1, 4, 3, 8}, dk[4] = {2, 2, 5, -1}, dv[4] = {-1, 2, 5, 16};
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "q", WM_DTYPE_FLOAT16, 4, dq));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "k", WM_DTYPE_FLOAT16, 4, dk));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "v", WM_DTYPE_FLOAT16, 4, dv));
  WM_CHECK_OK(flex_add_node(&f));
  wm_type_t t;
  wm_op_cost_t cost;
  wm_status_t s = wm_op_fixture_cost(&f, &t, &cost);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_FLOAT16);
  WM_CHECK_INT_EQ(t.shape.rank, 4);
  WM_CHECK_INT_EQ(t.shape.dims[0], 2);
  WM_CHECK_INT_EQ(t.shape.dims[1], 4);
  WM_CHECK_INT_EQ(t.shape.dims[2], 3);
  WM_CHECK_INT_EQ(t.shape.dims[3], 16);
  // 120 scores (2*4*3*5), each with 8 + 16 MACs.
  WM_CHECK_DBL_NEAR(cost.macs, 120 * 24, 0);
  WM_CHECK_DBL_NEAR(cost.flops, 2 * 120 * 24 + 4 * 120, 0);
  WM_CHECK_DBL_NEAR(cost.transcendentals, 120, 0);
}

// Checks FlexAttention over typed float inputs of shapes |dq|, |dk|, |dv|
// (rank |r|), with one optional attribute: an int (|attr| starting with
// "softmax"), the float scale, or a modifier graph of |mod_dtype| with
// |mod_inputs| inputs.
static wm_status_t flex_check(int32_t r, const int64_t *dq, const int64_t *dk,
                              const int64_t *dv, const char *attr, double value,
                              wm_dtype_t mod_dtype, int mod_inputs) {
  wm_op_fixture_t f;
  WM_RETURN_IF_ERROR(flex_init(&f));
  wm_status_t s = wm_op_fixture_add_input(&f, "q", WM_DTYPE_FLOAT, r, dq);
  if (!s) {
    s = wm_op_fixture_add_input(&f, "k", WM_DTYPE_FLOAT, r, dk);
  }
  if (!s) {
    s = wm_op_fixture_add_input(&f, "v", WM_DTYPE_FLOAT, r, dv);
  }
  if (!s) {
    s = flex_add_node(&f);
  }
  if (!s && attr && strcmp(attr, "scale") == 0) {
    s = wm_op_fixture_attr_float(&f, attr, (float)value);
  } else if (!s && attr && strncmp(attr, "softmax", 7) == 0) {
    s = wm_op_fixture_attr_int(&f, attr, (int64_t)value);
  } else if (!s && attr) {
    s = flex_add_mod(&f, attr, mod_dtype, mod_inputs);
  }
  if (!s) {
    s = wm_ops_check_graph(f.graph);
  }
  wm_op_fixture_deinit(&f);
  return s;
}

WM_TEST(flex_attention_rejects_bad_head_counts_and_shapes) {
  int64_t dq[4] = {1, 3, 2, 4}, dk[4] = {1, 2, 2, 4}, dv[4] = {1, 1, 2, 4};
  int64_t d3[3] = {1, 2, 4}, de[4] = {1, 3, 2, 5};
  WM_CHECK_ERR(flex_check(4, dq, dk, dk, NULL, 0, 0, 0), INVALID_ARGUMENT,
               "query head count 3 is not a multiple of kv head count 2");
  WM_CHECK_ERR(flex_check(4, dk, dk, dv, NULL, 0, 0, 0), INVALID_ARGUMENT,
               "kv head count is 1 here, 2 elsewhere");
  WM_CHECK_ERR(flex_check(4, de, dq, dq, NULL, 0, 0, 0), INVALID_ARGUMENT,
               "query/key head size is 4 here, 5 elsewhere");
  WM_CHECK_ERR(flex_check(3, d3, d3, d3, NULL, 0, 0, 0), INVALID_ARGUMENT,
               "input 0 has rank 3, want 4");
  int64_t dz[4] = {1, 2, 2, 4}, dkz[4] = {1, 0, 2, 4};
  WM_CHECK_ERR(flex_check(4, dz, dkz, dkz, NULL, 0, 0, 0), INVALID_ARGUMENT,
               "query head count 2 is not a multiple of kv head count 0");
}

WM_TEST(flex_attention_rejects_bad_attributes_and_mod_graphs) {
  int64_t d[4] = {1, 2, 2, 4};
  WM_CHECK_ERR(flex_check(4, d, d, d, "scale", -0.5, 0, 0), INVALID_ARGUMENT,
               "attribute scale is -0.5");
  WM_CHECK_ERR(flex_check(4, d, d, d, "softmax_precision", 7, 0, 0),
               INVALID_ARGUMENT, "attribute softmax_precision is 7");
  WM_CHECK_ERR(flex_check(4, d, d, d, "score_mod", 0, WM_DTYPE_FLOAT, 2),
               INVALID_ARGUMENT,
               "attribute score_mod has 2 inputs and 1 outputs");
  WM_CHECK_ERR(flex_check(4, d, d, d, "prob_mod", 0, WM_DTYPE_DOUBLE, 1),
               INVALID_ARGUMENT,
               "attribute prob_mod input has dtype double, want float");
  WM_CHECK_OK(flex_check(4, d, d, d, "prob_mod", 0, WM_DTYPE_FLOAT, 1));
}

static const wm_test_case_t cases[] = {
    WM_CASE(attention_4d_matches_hand_computed_softmax),
    WM_CASE(attention_gqa_maps_query_heads_to_kv_heads_in_blocks),
    WM_CASE(attention_3d_splits_heads_and_merges_them_back),
    WM_CASE(attention_causal_with_past_offsets_the_frontier),
    WM_CASE(attention_causal_without_cache_is_top_left),
    WM_CASE(attention_fully_masked_row_gives_zeros_not_nan),
    WM_CASE(attention_qk_output_modes_follow_the_spec_order),
    WM_CASE(attention_short_mask_pads_missing_keys_as_masked),
    WM_CASE(attention_nonpad_kv_seqlen_masks_padding_and_clamps_hostile_values),
    WM_CASE(attention_window_limits_keys_around_the_query),
    WM_CASE(attention_bfloat16_rounds_like_the_reference),
    WM_CASE(attention_static_shapes_keep_unknown_dims),
    WM_CASE(attention_cost_counts_both_products_and_the_softmax),
    WM_CASE(attention_rejects_3d_inputs_without_head_counts),
    WM_CASE(attention_rejects_query_heads_not_multiple_of_kv_heads),
    WM_CASE(attention_rejects_mismatched_head_sizes),
    WM_CASE(attention_rejects_mask_that_does_not_broadcast),
    WM_CASE(attention_rejects_bad_attributes),
    WM_CASE(attention_rejects_rank_5_inputs),
    WM_CASE(attention_rejects_past_key_without_past_value),
    WM_CASE(attention_rejects_nonpad_with_past),
    WM_CASE(rotary_rotates_halves_or_interleaved_pairs),
    WM_CASE(rotary_rejects_position_ids_outside_the_cache),
    WM_CASE(rotary_partial_dim_copies_the_rest),
    WM_CASE(rotary_rejects_bad_dims_and_attributes),
    WM_CASE(rms_normalization_matches_hand_computed),
    WM_CASE(rms_normalization_rejects_scale_and_axis_errors),
    WM_CASE(rms_normalization_cost_counts_elements_and_rows),
    WM_CASE(flex_attention_matches_hand_computed_softmax),
    WM_CASE(
        flex_attention_double_splits_the_scale_in_float32_like_the_reference),
    WM_CASE(flex_attention_scale_attribute_replaces_the_default),
    WM_CASE(flex_attention_score_mod_gets_the_scaled_scores_and_changes_them),
    WM_CASE(flex_attention_prob_mod_runs_after_softmax_on_probabilities),
    WM_CASE(flex_attention_fully_masked_row_gives_nan_like_the_reference),
    WM_CASE(flex_attention_gqa_maps_query_heads_to_kv_heads_in_blocks),
    WM_CASE(flex_attention_rejects_a_mod_result_of_another_shape_or_dtype),
    WM_CASE(flex_attention_with_mods_needs_a_subgraph_runner),
    WM_CASE(flex_attention_is_run_by_the_session),
    WM_CASE(flex_attention_static_shape_and_cost),
    WM_CASE(flex_attention_rejects_bad_head_counts_and_shapes),
    WM_CASE(flex_attention_rejects_bad_attributes_and_mod_graphs),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
