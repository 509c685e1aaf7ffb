// Tests of the state-space operators: LinearAttention's four update rules,
// head grouping, scale and state dtype, and CausalConvWithState's carry,
// bias, activation and rounding, against hand-computed values; their
// shape rules and costs; and errors on bad attributes and shapes.
#include <math.h>
#include <stdlib.h>

#include "op_fixture.h"
#include "wm_test.h"

// One input of a node under test: a constant when |vals| is set, else a
// typed graph input of |dims| (negative dims unknown).
typedef struct in_spec {
  const char *name;    // value name; "" leaves the slot empty
  wm_dtype_t dtype;    // element type
  int32_t rank;        // rank of |dims|
  int64_t dims[4];     // shape
  const double *vals;  // constant values, or NULL for a graph input
} in_spec_t;

// Attributes of a node under test; NULL names are skipped.
typedef struct attrs {
  const char *int_name[2];  // int attributes
  int64_t int_val[2];       // their values
  const char *str_name;     // one string attribute
  const char *str_val;      // its value
  const char *flt_name;     // one float attribute
  float flt_val;            // its value
} attrs_t;

// Builds |op| over |ins| with two outputs in |f|.
static wm_status_t build(wm_op_fixture_t *f, const char *op,
                         const in_spec_t *ins, int32_t n_in,
                         const attrs_t *at) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 27));
  const char *names[6];
  for (int32_t i = 0; i < n_in; i++) {
    names[i] = ins[i].name;
    if (!ins[i].name[0]) {
      continue;
    }
    if (ins[i].vals) {
      WM_RETURN_IF_ERROR(wm_op_fixture_add_const(
          f, ins[i].name, ins[i].dtype, ins[i].rank, ins[i].dims, ins[i].vals));
    } else {
      WM_RETURN_IF_ERROR(wm_op_fixture_add_input(f, ins[i].name, ins[i].dtype,
                                                 ins[i].rank, ins[i].dims));
    }
  }
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, op, names, n_in, 2));
  for (int i = 0; at && i < 2; i++) {
    if (at->int_name[i]) {
      WM_RETURN_IF_ERROR(
          wm_op_fixture_attr_int(f, at->int_name[i], at->int_val[i]));
    }
  }
  if (at && at->str_name) {
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_string(f, at->str_name, at->str_val));
  }
  if (at && at->flt_name) {
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_float(f, at->flt_name, at->flt_val));
  }
  return NULL;
}

// Builds the node and runs the graph check (schema and shape rule).
static wm_status_t check(const char *op, const in_spec_t *ins, int32_t n_in,
                         const attrs_t *at) {
  wm_op_fixture_t f;
  wm_status_t s = build(&f, op, ins, n_in, at);
  if (!s) {
    s = wm_ops_check_graph(f.graph);
  }
  wm_op_fixture_deinit(&f);
  return s;
}

// Head counts and update rule of a LinearAttention node.
static attrs_t la_attrs(int64_t hq, int64_t hkv, const char *rule) {
  attrs_t a = {{"q_num_heads", "kv_num_heads"}, {hq, hkv}, NULL, NULL, NULL, 0};
  if (rule) {
    a.str_name = "update_rule";
    a.str_val = rule;
  }
  return a;
}

// ------------------------------------------------------- LinearAttention

WM_TEST(linear_attention_linear_rule_accumulates_outer_products) {
  // One head, d_k 2, d_v 1, scale 1. S0 = k0 v0 = [3, 0], o0 = q0.S0 = 3;
  // S1 = S0 + k1 v1 = [3, 10], o1 = q1.S1 = 10.
  static const double q[4] = {1, 0, 0, 1}, k[4] = {1, 0, 0, 2}, v[2] = {3, 5};
  in_spec_t ins[3] = {{"q", WM_DTYPE_FLOAT, 3, {1, 2, 2}, q},
                      {"k", WM_DTYPE_FLOAT, 3, {1, 2, 2}, k},
                      {"v", WM_DTYPE_FLOAT, 3, {1, 2, 1}, v}};
  attrs_t at = la_attrs(1, 1, "linear");
  at.flt_name = "scale";
  at.flt_val = 1;
  wm_op_fixture_t f;
  WM_CHECK_OK(build(&f, "LinearAttention", ins, 3, &at));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want_y[2] = {3, 10}, want_s[2] = {3, 10};
  int64_t yd[3] = {1, 2, 1}, sd[4] = {1, 1, 2, 1};
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 3, yd) &&
            wm_op_fixture_values_near(f.out[0], want_y, 2, 1e-6) &&
            wm_op_fixture_shape_is(f.out[1], 4, sd) &&
            wm_op_fixture_values_near(f.out[1], want_s, 2, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(linear_attention_gated_rule_decays_the_past_state) {
  // d_k = d_v = 1, decay log(0.5) per head, past state 4:
  // S0 = 4*0.5 + 1*2 = 4, S1 = 4*0.5 + 1*4 = 6; q = 1, scale 1/sqrt(1).
  static const double one[2] = {1, 1}, v[2] = {2, 4}, past[1] = {4};
  double g[2] = {log(0.5), log(0.5)};
  in_spec_t ins[5] = {{"q", WM_DTYPE_FLOAT, 3, {1, 2, 1}, one},
                      {"k", WM_DTYPE_FLOAT, 3, {1, 2, 1}, one},
                      {"v", WM_DTYPE_FLOAT, 3, {1, 2, 1}, v},
                      {"p", WM_DTYPE_FLOAT, 4, {1, 1, 1, 1}, past},
                      {"g", WM_DTYPE_FLOAT, 3, {1, 2, 1}, g}};
  attrs_t at = la_attrs(1, 1, "gated");
  wm_op_fixture_t f;
  WM_CHECK_OK(build(&f, "LinearAttention", ins, 5, &at));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want_y[2] = {4, 6}, want_s[1] = {6};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want_y, 2, 1e-6) &&
            wm_op_fixture_values_near(f.out[1], want_s, 1, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(linear_attention_per_key_decay_scales_state_rows) {
  // d_k 2, d_v 1, one step: decay rows by 0.5 and 0.25 of past [8, 8],
  // then add k v = [1, 1] * 2: S = [6, 4]; q = [1, 1] with scale 1.
  static const double q[2] = {1, 1}, k[2] = {1, 1}, v[1] = {2},
                      past[2] = {8, 8};
  double g[2] = {log(0.5), log(0.25)};
  in_spec_t ins[5] = {{"q", WM_DTYPE_FLOAT, 3, {1, 1, 2}, q},
                      {"k", WM_DTYPE_FLOAT, 3, {1, 1, 2}, k},
                      {"v", WM_DTYPE_FLOAT, 3, {1, 1, 1}, v},
                      {"p", WM_DTYPE_FLOAT, 4, {1, 1, 2, 1}, past},
                      {"g", WM_DTYPE_FLOAT, 3, {1, 1, 2}, g}};
  attrs_t at = la_attrs(1, 1, "gated");
  at.flt_name = "scale";
  at.flt_val = 1;
  wm_op_fixture_t f;
  WM_CHECK_OK(build(&f, "LinearAttention", ins, 5, &at));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want_y[1] = {10}, want_s[2] = {6, 4};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want_y, 1, 1e-6) &&
            wm_op_fixture_values_near(f.out[1], want_s, 2, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(linear_attention_delta_rules_write_the_correction) {
  // d_k = d_v = 1, k = q = 1, v = 4, beta 0.5.
  // delta: u0 = 0.5*(4-0) = 2, S0 = 2; u1 = 0.5*(4-2) = 1, S1 = 3.
  // gated_delta with decay 0.5: S0 = 2 as before; S = 1 after the decay,
  // u1 = 0.5*(4-1) = 1.5, S1 = 2.5.
  static const double one[2] = {1, 1}, v[2] = {4, 4}, beta[2] = {0.5, 0.5};
  double g[2] = {log(0.5), log(0.5)};
  static const double want_delta[2] = {2, 3}, want_gated[2] = {2, 2.5};
  for (int gated = 0; gated < 2; gated++) {
    in_spec_t ins[6] = {{"q", WM_DTYPE_FLOAT, 3, {1, 2, 1}, one},
                        {"k", WM_DTYPE_FLOAT, 3, {1, 2, 1}, one},
                        {"v", WM_DTYPE_FLOAT, 3, {1, 2, 1}, v},
                        {"", WM_DTYPE_FLOAT, 0, {0}, NULL},
                        {gated ? "g" : "", WM_DTYPE_FLOAT, 3, {1, 2, 1}, g},
                        {"b", WM_DTYPE_FLOAT, 3, {1, 2, 1}, beta}};
    attrs_t at = la_attrs(1, 1, gated ? NULL : "delta");
    wm_op_fixture_t f;
    WM_CHECK_OK(build(&f, "LinearAttention", ins, 6, &at));
    wm_status_t s = wm_op_fixture_run(&f);
    const double *want = gated ? want_gated : want_delta;
    bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 2, 1e-6) &&
              wm_op_fixture_values_near(f.out[1], want + 1, 1, 1e-6);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(linear_attention_query_heads_share_kv_heads_in_blocks) {
  // 4 query heads over 2 kv heads (d_k = d_v = 1): heads 0 and 1 read kv
  // head 0 (v 10), heads 2 and 3 kv head 1 (v 20); a shared beta of 1
  // (beta last dim 1) with zero decay leaves the write at v.
  static const double ones[4] = {1, 1, 1, 1}, v[2] = {10, 20}, beta[1] = {1};
  static const double zeros[2] = {0, 0};
  in_spec_t ins[6] = {{"q", WM_DTYPE_FLOAT, 3, {1, 1, 4}, ones},
                      {"k", WM_DTYPE_FLOAT, 3, {1, 1, 2}, ones},
                      {"v", WM_DTYPE_FLOAT, 3, {1, 1, 2}, v},
                      {"", WM_DTYPE_FLOAT, 0, {0}, NULL},
                      {"g", WM_DTYPE_FLOAT, 3, {1, 1, 2}, zeros},
                      {"b", WM_DTYPE_FLOAT, 3, {1, 1, 1}, beta}};
  attrs_t at = la_attrs(4, 2, NULL);
  wm_op_fixture_t f;
  WM_CHECK_OK(build(&f, "LinearAttention", ins, 6, &at));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[4] = {10, 10, 20, 20};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 4, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(linear_attention_default_scale_is_inverse_sqrt_of_key_size) {
  // d_k 4: o = (q.k) v / sqrt(4) = 1 * 6 / 2.
  static const double e0[4] = {1, 0, 0, 0}, v[1] = {6};
  in_spec_t ins[3] = {{"q", WM_DTYPE_FLOAT, 3, {1, 1, 4}, e0},
                      {"k", WM_DTYPE_FLOAT, 3, {1, 1, 4}, e0},
                      {"v", WM_DTYPE_FLOAT, 3, {1, 1, 1}, v}};
  attrs_t at = la_attrs(1, 1, "linear");
  wm_op_fixture_t f;
  WM_CHECK_OK(build(&f, "LinearAttention", ins, 3, &at));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[1] = {3};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 1, 1e-6);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(linear_attention_state_keeps_the_past_state_dtype) {
  // float16 activations with a float past state: the output is float16,
  // the present state float and not rounded to float16 (1 + 2^-12).
  double q[1] = {1}, k[1] = {1}, v[1] = {ldexp(1, -12)}, past[1] = {1};
  in_spec_t ins[4] = {{"q", WM_DTYPE_FLOAT16, 3, {1, 1, 1}, q},
                      {"k", WM_DTYPE_FLOAT16, 3, {1, 1, 1}, k},
                      {"v", WM_DTYPE_FLOAT16, 3, {1, 1, 1}, v},
                      {"p", WM_DTYPE_FLOAT, 4, {1, 1, 1, 1}, past}};
  attrs_t at = la_attrs(1, 1, "linear");
  wm_op_fixture_t f;
  WM_CHECK_OK(build(&f, "LinearAttention", ins, 4, &at));
  wm_status_t s = wm_op_fixture_run(&f);
  double want_s[1] = {1 + ldexp(1, -12)}, want_y[1] = {1};
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_FLOAT16 &&
            f.out[1]->dtype == WM_DTYPE_FLOAT &&
            wm_op_fixture_values_near(f.out[0], want_y, 1, 0) &&
            wm_op_fixture_values_near(f.out[1], want_s, 1, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(linear_attention_empty_heads_give_zeros_even_when_many) {
  // d_k 0: every read is an empty sum. 2^40 heads of size 0 must not be
  // walked one by one.
  static const double none[1] = {0};
  int64_t many = INT64_C(1) << 40;
  in_spec_t ins[3] = {{"q", WM_DTYPE_FLOAT, 3, {1, 3, 0}, none},
                      {"k", WM_DTYPE_FLOAT, 3, {1, 3, 0}, none},
                      {"v", WM_DTYPE_FLOAT, 3, {1, 3, 0}, none}};
  attrs_t at = la_attrs(many, many, "linear");
  wm_op_fixture_t f;
  WM_CHECK_OK(build(&f, "LinearAttention", ins, 3, &at));
  wm_status_t s = wm_op_fixture_run(&f);
  int64_t yd[3] = {1, 3, 0}, sd[4] = {1, many, 0, 0};
  bool ok = !s && wm_op_fixture_shape_is(f.out[0], 3, yd) &&
            wm_op_fixture_shape_is(f.out[1], 4, sd);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);

  // d_k 0 with d_v 2: the output holds zeros.
  ins[2].dims[2] = 2;
  static const double v[6] = {1, 2, 3, 4, 5, 6};
  ins[2].vals = v;
  at = la_attrs(1, 1, "linear");
  WM_CHECK_OK(build(&f, "LinearAttention", ins, 3, &at));
  s = wm_op_fixture_run(&f);
  static const double zeros[6] = {0};
  ok = !s && wm_op_fixture_values_near(f.out[0], zeros, 6, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(linear_attention_static_shapes_merge_known_dims) {
  in_spec_t ins[3] = {{"q", WM_DTYPE_BFLOAT16, 3, {-1, 5, 8}, NULL},
                      {"k", WM_DTYPE_BFLOAT16, 3, {2, -1, 4}, NULL},
                      {"v", WM_DTYPE_BFLOAT16, 3, {-1, -1, 6}, NULL}};
  attrs_t at = la_attrs(2, 1, "linear");
  wm_op_fixture_t f;
  WM_CHECK_OK(build(&f, "LinearAttention", ins, 3, &at));
  wm_type_t y;
  wm_status_t s = wm_op_fixture_infer(&f, &y);
  wm_type_t st = {0};
  if (!s) {
    st = f.graph->values[wm_graph_find_value(f.graph, "y1")].type;
  }
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(y.dtype, WM_DTYPE_BFLOAT16);
  WM_CHECK_INT_EQ(y.shape.rank, 3);
  WM_CHECK_INT_EQ(y.shape.dims[0], 2);
  WM_CHECK_INT_EQ(y.shape.dims[1], 5);
  WM_CHECK_INT_EQ(y.shape.dims[2], 12);
  WM_CHECK_INT_EQ(st.dtype, WM_DTYPE_BFLOAT16);
  WM_CHECK_INT_EQ(st.shape.rank, 4);
  WM_CHECK_INT_EQ(st.shape.dims[0], 2);
  WM_CHECK_INT_EQ(st.shape.dims[1], 1);
  WM_CHECK_INT_EQ(st.shape.dims[2], 4);
  WM_CHECK_INT_EQ(st.shape.dims[3], 6);
}

WM_TEST(linear_attention_cost_counts_writes_reads_and_decay) {
  // B 2, T 3, 4 query heads over 2 kv heads, d_k 8, d_v 4, gated_delta
  // with per-head decay: 6 steps of 2*32*2 + 4*32 MACs.
  in_spec_t ins[6] = {{"q", WM_DTYPE_FLOAT, 3, {2, 3, 32}, NULL},
                      {"k", WM_DTYPE_FLOAT, 3, {2, 3, 16}, NULL},
                      {"v", WM_DTYPE_FLOAT, 3, {2, 3, 8}, NULL},
                      {"", WM_DTYPE_FLOAT, 0, {0}, NULL},
                      {"g", WM_DTYPE_FLOAT, 3, {2, 3, 2}, NULL},
                      {"b", WM_DTYPE_FLOAT, 3, {2, 3, 2}, NULL}};
  attrs_t at = la_attrs(4, 2, NULL);
  wm_op_fixture_t f;
  WM_CHECK_OK(build(&f, "LinearAttention", ins, 6, &at));
  wm_type_t t;
  wm_op_cost_t cost;
  wm_status_t s = wm_op_fixture_cost(&f, &t, &cost);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_DBL_NEAR(cost.macs, 1536, 0);
  // Per step: 4 heads * 4 scales, 2 * 32 decays, 2 * 2 * 4 delta terms.
  WM_CHECK_DBL_NEAR(cost.flops, 2 * 1536 + 6 * (16 + 64 + 16), 0);
  WM_CHECK_DBL_NEAR(cost.transcendentals, 12, 0);
}

WM_TEST(linear_attention_rejects_bad_head_attributes) {
  in_spec_t ins[3] = {{"q", WM_DTYPE_FLOAT, 3, {1, 2, 8}, NULL},
                      {"k", WM_DTYPE_FLOAT, 3, {1, 2, 8}, NULL},
                      {"v", WM_DTYPE_FLOAT, 3, {1, 2, 8}, NULL}};
  attrs_t at = la_attrs(2, 2, "linear");
  at.int_name[1] = NULL;
  WM_CHECK_ERR(check("LinearAttention", ins, 3, &at), INVALID_ARGUMENT,
               "attribute kv_num_heads is required");
  at = la_attrs(3, 2, "linear");
  WM_CHECK_ERR(check("LinearAttention", ins, 3, &at), INVALID_ARGUMENT,
               "q_num_heads 3 is not a multiple of kv_num_heads 2");
  at = la_attrs(0, 1, "linear");
  WM_CHECK_ERR(check("LinearAttention", ins, 3, &at), INVALID_ARGUMENT,
               "attribute q_num_heads is 0, want at least 1");
  at = la_attrs(2, 2, "mamba");
  WM_CHECK_ERR(check("LinearAttention", ins, 3, &at), INVALID_ARGUMENT,
               "update_rule is \"mamba\"");
  at = la_attrs(3, 3, "linear");
  WM_CHECK_ERR(check("LinearAttention", ins, 3, &at), INVALID_ARGUMENT,
               "input 0 (query) last dim 8 is not a multiple of q_num_heads 3");
}

WM_TEST(linear_attention_rejects_inputs_the_rule_does_not_take) {
  in_spec_t ins[6] = {{"q", WM_DTYPE_FLOAT, 3, {1, 2, 8}, NULL},
                      {"k", WM_DTYPE_FLOAT, 3, {1, 2, 8}, NULL},
                      {"v", WM_DTYPE_FLOAT, 3, {1, 2, 8}, NULL},
                      {"", WM_DTYPE_FLOAT, 0, {0}, NULL},
                      {"", WM_DTYPE_FLOAT, 0, {0}, NULL},
                      {"b", WM_DTYPE_FLOAT, 3, {1, 2, 2}, NULL}};
  attrs_t at = la_attrs(2, 2, NULL);
  WM_CHECK_ERR(check("LinearAttention", ins, 6, &at), INVALID_ARGUMENT,
               "update_rule \"gated_delta\" requires input 4 (decay)");
  at = la_attrs(2, 2, "linear");
  WM_CHECK_ERR(check("LinearAttention", ins, 6, &at), INVALID_ARGUMENT,
               "update_rule \"linear\" forbids input 5 (beta)");
}

WM_TEST(linear_attention_rejects_mismatched_shapes) {
  // Base: B 1, T 2, 2 heads of d_k 4, d_v 4, gated_delta.
  in_spec_t ins[6] = {{"q", WM_DTYPE_FLOAT, 3, {1, 2, 8}, NULL},
                      {"k", WM_DTYPE_FLOAT, 3, {1, 2, 8}, NULL},
                      {"v", WM_DTYPE_FLOAT, 3, {1, 2, 8}, NULL},
                      {"p", WM_DTYPE_FLOAT, 4, {1, 2, 4, 4}, NULL},
                      {"g", WM_DTYPE_FLOAT, 3, {1, 2, 8}, NULL},
                      {"b", WM_DTYPE_FLOAT, 3, {1, 2, 2}, NULL}};
  attrs_t at = la_attrs(2, 2, NULL);
  WM_CHECK_OK(check("LinearAttention", ins, 6, &at));
  ins[4].dims[2] = 3;
  WM_CHECK_ERR(check("LinearAttention", ins, 6, &at), INVALID_ARGUMENT,
               "input 4 (decay) last dim is 3, want kv_num_heads 2 or "
               "kv_num_heads*d_k 2*4");
  ins[4].dims[2] = 2;
  ins[5].dims[2] = 4;
  WM_CHECK_ERR(check("LinearAttention", ins, 6, &at), INVALID_ARGUMENT,
               "input 5 (beta) last dim is 4, want kv_num_heads 2 or 1");
  ins[5].dims[2] = 1;
  ins[3].dims[1] = 1;
  WM_CHECK_ERR(check("LinearAttention", ins, 6, &at), INVALID_ARGUMENT,
               "input 3 (past_state) has 1 heads, want kv_num_heads 2");
  ins[3].dims[1] = 2;
  ins[3].dims[3] = 5;
  WM_CHECK_ERR(check("LinearAttention", ins, 6, &at), INVALID_ARGUMENT,
               "value head size is 5 here, 4 elsewhere");
  ins[3].dims[3] = 4;
  ins[1].dims[1] = 3;
  WM_CHECK_ERR(check("LinearAttention", ins, 6, &at), INVALID_ARGUMENT,
               "sequence length is 3 here, 2 elsewhere");
  ins[1].dims[1] = 2;
  ins[3].rank = 3;
  WM_CHECK_ERR(check("LinearAttention", ins, 6, &at), INVALID_ARGUMENT,
               "input 3 (past_state) has rank 3, want 4");
  ins[3].rank = 4;
  ins[2].dtype = WM_DTYPE_FLOAT16;
  WM_CHECK_ERR(check("LinearAttention", ins, 6, &at), INVALID_ARGUMENT,
               "input 2 has dtype float16, want float like input 0");
}

// --------------------------------------------------- CausalConvWithState

WM_TEST(causal_conv_pads_with_zeros_and_carries_the_tail) {
  // k 2: y[p] = w0 * x[p-1] + w1 * x[p] with x[-1] = 0.
  static const double x[6] = {1, 2, 3, 4, 5, 6}, w[4] = {1, 10, 2, 1};
  in_spec_t ins[2] = {{"x", WM_DTYPE_FLOAT, 3, {1, 2, 3}, x},
                      {"w", WM_DTYPE_FLOAT, 3, {2, 1, 2}, w}};
  wm_op_fixture_t f;
  WM_CHECK_OK(build(&f, "CausalConvWithState", ins, 2, NULL));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want_y[6] = {10, 21, 32, 4, 13, 16}, want_s[2] = {3, 6};
  int64_t sd[3] = {1, 2, 1};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want_y, 6, 1e-6) &&
            wm_op_fixture_shape_is(f.out[1], 3, sd) &&
            wm_op_fixture_values_near(f.out[1], want_s, 2, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(causal_conv_reads_past_state_and_adds_bias) {
  // As above with x[-1] = 7 and -1 from past_state, bias 0.5 and -1.
  static const double x[6] = {1, 2, 3, 4, 5, 6}, w[4] = {1, 10, 2, 1};
  static const double bias[2] = {0.5, -1}, past[2] = {7, -1};
  in_spec_t ins[4] = {{"x", WM_DTYPE_FLOAT, 3, {1, 2, 3}, x},
                      {"w", WM_DTYPE_FLOAT, 3, {2, 1, 2}, w},
                      {"b", WM_DTYPE_FLOAT, 1, {2}, bias},
                      {"p", WM_DTYPE_FLOAT, 3, {1, 2, 1}, past}};
  wm_op_fixture_t f;
  WM_CHECK_OK(build(&f, "CausalConvWithState", ins, 4, NULL));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want_y[6] = {17.5, 21.5, 32.5, 1, 12, 15};
  static const double want_s[2] = {3, 6};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want_y, 6, 1e-6) &&
            wm_op_fixture_values_near(f.out[1], want_s, 2, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(causal_conv_short_input_keeps_part_of_the_past) {
  // k 4, one new position: the carry shifts by one.
  static const double x[1] = {4}, w[4] = {1, 1, 1, 1}, past[3] = {1, 2, 3};
  in_spec_t ins[4] = {{"x", WM_DTYPE_FLOAT, 3, {1, 1, 1}, x},
                      {"w", WM_DTYPE_FLOAT, 3, {1, 1, 4}, w},
                      {"", WM_DTYPE_FLOAT, 0, {0}, NULL},
                      {"p", WM_DTYPE_FLOAT, 3, {1, 1, 3}, past}};
  wm_op_fixture_t f;
  WM_CHECK_OK(build(&f, "CausalConvWithState", ins, 4, NULL));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want_y[1] = {10}, want_s[3] = {2, 3, 4};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want_y, 1, 1e-6) &&
            wm_op_fixture_values_near(f.out[1], want_s, 3, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(causal_conv_silu_and_swish_apply_x_times_sigmoid) {
  // k 1 (no carry): y = silu(x).
  static const double x[3] = {0, 1, -1}, w[1] = {1};
  const char *names[2] = {"silu", "swish"};
  for (int i = 0; i < 2; i++) {
    in_spec_t ins[2] = {{"x", WM_DTYPE_FLOAT, 3, {1, 1, 3}, x},
                        {"w", WM_DTYPE_FLOAT, 3, {1, 1, 1}, w}};
    attrs_t at = {{NULL, NULL}, {0, 0}, "activation", names[i], NULL, 0};
    wm_op_fixture_t f;
    WM_CHECK_OK(build(&f, "CausalConvWithState", ins, 2, &at));
    wm_status_t s = wm_op_fixture_run(&f);
    double want[3] = {0, 1 / (1 + exp(-1.0)), -1 / (1 + exp(1.0))};
    int64_t sd[3] = {1, 1, 0};
    bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 3, 1e-6) &&
              wm_op_fixture_shape_is(f.out[1], 3, sd);
    WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  }
}

WM_TEST(causal_conv_float16_rounds_before_the_bias) {
  // 1 + 2^-11 rounds to 1 in float16 before the bias 2^-11 is added (and
  // 1 + 2^-11 rounds to 1 again); one rounding would give 1 + 2^-10.
  double x[2] = {1, ldexp(1, -11)}, w[2] = {1, 1}, bias[1] = {ldexp(1, -11)};
  in_spec_t ins[3] = {{"x", WM_DTYPE_FLOAT16, 3, {1, 1, 2}, x},
                      {"w", WM_DTYPE_FLOAT16, 3, {1, 1, 2}, w},
                      {"b", WM_DTYPE_FLOAT16, 1, {1}, bias}};
  wm_op_fixture_t f;
  WM_CHECK_OK(build(&f, "CausalConvWithState", ins, 3, NULL));
  wm_status_t s = wm_op_fixture_run(&f);
  static const double want[2] = {1, 1};
  bool ok = !s && f.out[0]->dtype == WM_DTYPE_FLOAT16 &&
            wm_op_fixture_values_near(f.out[0], want, 2, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(causal_conv_static_shapes_take_the_carry_from_the_kernel) {
  in_spec_t ins[4] = {{"x", WM_DTYPE_FLOAT, 3, {-1, 4, 7}, NULL},
                      {"w", WM_DTYPE_FLOAT, 3, {-1, 1, 3}, NULL},
                      {"", WM_DTYPE_FLOAT, 0, {0}, NULL},
                      {"p", WM_DTYPE_FLOAT, 3, {2, -1, -1}, NULL}};
  wm_op_fixture_t f;
  WM_CHECK_OK(build(&f, "CausalConvWithState", ins, 4, NULL));
  wm_type_t y;
  wm_status_t s = wm_op_fixture_infer(&f, &y);
  wm_type_t st = {0};
  if (!s) {
    st = f.graph->values[wm_graph_find_value(f.graph, "y1")].type;
  }
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(y.shape.rank, 3);
  WM_CHECK_INT_EQ(y.shape.dims[0], 2);
  WM_CHECK_INT_EQ(y.shape.dims[1], 4);
  WM_CHECK_INT_EQ(y.shape.dims[2], 7);
  WM_CHECK_INT_EQ(st.shape.rank, 3);
  WM_CHECK_INT_EQ(st.shape.dims[0], 2);
  WM_CHECK_INT_EQ(st.shape.dims[1], 4);
  WM_CHECK_INT_EQ(st.shape.dims[2], 2);
}

WM_TEST(causal_conv_cost_counts_taps_bias_and_activation) {
  in_spec_t ins[3] = {{"x", WM_DTYPE_FLOAT, 3, {2, 3, 5}, NULL},
                      {"w", WM_DTYPE_FLOAT, 3, {3, 1, 4}, NULL},
                      {"b", WM_DTYPE_FLOAT, 1, {3}, NULL}};
  attrs_t at = {{NULL, NULL}, {0, 0}, "activation", "silu", NULL, 0};
  wm_op_fixture_t f;
  WM_CHECK_OK(build(&f, "CausalConvWithState", ins, 3, &at));
  wm_type_t t;
  wm_op_cost_t cost;
  wm_status_t s = wm_op_fixture_cost(&f, &t, &cost);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  // 30 outputs of 4 taps; bias 1 and SiLU 3 FLOPs each.
  WM_CHECK_DBL_NEAR(cost.macs, 120, 0);
  WM_CHECK_DBL_NEAR(cost.flops, 240 + 30 + 90, 0);
  WM_CHECK_DBL_NEAR(cost.transcendentals, 30, 0);
}

WM_TEST(causal_conv_rejects_bad_attributes_and_shapes) {
  in_spec_t ins[4] = {{"x", WM_DTYPE_FLOAT, 3, {2, 3, 5}, NULL},
                      {"w", WM_DTYPE_FLOAT, 3, {3, 1, 4}, NULL},
                      {"b", WM_DTYPE_FLOAT, 1, {3}, NULL},
                      {"p", WM_DTYPE_FLOAT, 3, {2, 3, 3}, NULL}};
  WM_CHECK_OK(check("CausalConvWithState", ins, 4, NULL));
  attrs_t at = {{NULL, NULL}, {0, 0}, "activation", "relu", NULL, 0};
  WM_CHECK_ERR(check("CausalConvWithState", ins, 4, &at), INVALID_ARGUMENT,
               "attribute activation is \"relu\"");
  ins[1].dims[1] = 3;
  WM_CHECK_ERR(check("CausalConvWithState", ins, 4, NULL), INVALID_ARGUMENT,
               "input 1 (weight) dim 1 is 3, want 1 (depthwise)");
  ins[1].dims[1] = 1;
  ins[1].dims[0] = 4;
  WM_CHECK_ERR(check("CausalConvWithState", ins, 4, NULL), INVALID_ARGUMENT,
               "channels is 4 here, 3 elsewhere");
  ins[1].dims[0] = 3;
  ins[3].dims[2] = 2;
  WM_CHECK_ERR(check("CausalConvWithState", ins, 4, NULL), INVALID_ARGUMENT,
               "carried length (kernel size - 1) is 2 here, 3 elsewhere");
  ins[3].dims[2] = 3;
  ins[1].dims[2] = 0;
  WM_CHECK_ERR(check("CausalConvWithState", ins, 2, NULL), INVALID_ARGUMENT,
               "kernel size 0, want at least 1");
  ins[1].dims[2] = 4;
  ins[2].rank = 2;
  ins[2].dims[1] = 1;
  WM_CHECK_ERR(check("CausalConvWithState", ins, 4, NULL), INVALID_ARGUMENT,
               "input 2 (bias) has rank 2, want 1");
  ins[2].rank = 1;
  ins[3].dtype = WM_DTYPE_BFLOAT16;
  WM_CHECK_ERR(check("CausalConvWithState", ins, 4, NULL), INVALID_ARGUMENT,
               "input 3 has dtype bfloat16, want float like input 0");
}

static const wm_test_case_t cases[] = {
    WM_CASE(linear_attention_linear_rule_accumulates_outer_products),
    WM_CASE(linear_attention_gated_rule_decays_the_past_state),
    WM_CASE(linear_attention_per_key_decay_scales_state_rows),
    WM_CASE(linear_attention_delta_rules_write_the_correction),
    WM_CASE(linear_attention_query_heads_share_kv_heads_in_blocks),
    WM_CASE(linear_attention_default_scale_is_inverse_sqrt_of_key_size),
    WM_CASE(linear_attention_state_keeps_the_past_state_dtype),
    WM_CASE(linear_attention_empty_heads_give_zeros_even_when_many),
    WM_CASE(linear_attention_static_shapes_merge_known_dims),
    WM_CASE(linear_attention_cost_counts_writes_reads_and_decay),
    WM_CASE(linear_attention_rejects_bad_head_attributes),
    WM_CASE(linear_attention_rejects_inputs_the_rule_does_not_take),
    WM_CASE(linear_attention_rejects_mismatched_shapes),
    WM_CASE(causal_conv_pads_with_zeros_and_carries_the_tail),
    WM_CASE(causal_conv_reads_past_state_and_adds_bias),
    WM_CASE(causal_conv_short_input_keeps_part_of_the_past),
    WM_CASE(causal_conv_silu_and_swish_apply_x_times_sigmoid),
    WM_CASE(causal_conv_float16_rounds_before_the_bias),
    WM_CASE(causal_conv_static_shapes_take_the_carry_from_the_kernel),
    WM_CASE(causal_conv_cost_counts_taps_bias_and_activation),
    WM_CASE(causal_conv_rejects_bad_attributes_and_shapes),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
