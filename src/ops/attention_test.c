// Tests of the transformer operators: Attention, RotaryEmbedding and
// RMSNormalization against hand-computed values, their shape rules and
// costs, and errors on hostile attributes, shapes and indices.
#include <math.h>
#include <stdlib.h>

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
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
