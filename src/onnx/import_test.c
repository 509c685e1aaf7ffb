// Import of models written by the onnx Python package: every attribute
// kind, value types, subgraphs with outer references, initializers listed
// as inputs and the model fields. The models are the hand-made fuzz seeds
// tests/fuzz/corpus/seed_*.onnx (see tests/fuzz/make_seeds.py).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wm_test.h"
#include "wmap/onnx.h"

static wm_status_t load_seed(const char *name, wm_graph_t **out) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/%s", wm_test_source_dir(),
           name);
  return wm_onnx_load(path, out);
}

static const wm_value_t *value(const wm_graph_t *g, const char *name) {
  int32_t id = wm_graph_find_value(g, name);
  return id >= 0 ? &g->values[id] : NULL;
}

// Checks that |g| survives export and import unchanged.
static bool survives_round_trip(const wm_graph_t *g) {
  uint8_t *buf = NULL;
  size_t size = 0;
  wm_graph_t *back = NULL;
  wm_status_t s = wm_onnx_save_buffer(g, &buf, &size);
  if (!s) {
    s = wm_onnx_load_buffer(buf, size, NULL, &back);
  }
  char why[256] = "";
  bool ok = !s && wm_graph_equal(g, back, why, sizeof(why));
  if (!ok) {
    fprintf(stderr, "  round trip: %s %s\n", wm_status_message(s), why);
  }
  wm_status_free(s);
  free(buf);
  wm_graph_destroy(back);
  return ok;
}

WM_TEST(model_fields_opsets_metadata_and_docs_are_imported) {
  wm_graph_t *g;
  WM_CHECK_OK(load_seed("seed_attrs.onnx", &g));
  WM_CHECK_STR_EQ(g->name, "attrs");
  WM_CHECK_STR_EQ(g->doc, "graph doc");
  WM_CHECK_STR_EQ(g->producer_name, "make_seeds");
  WM_CHECK_STR_EQ(g->producer_version, "1.0");
  WM_CHECK_STR_EQ(g->model_domain, "org.wmap.test");
  WM_CHECK_INT_EQ(g->model_version, 3);
  WM_CHECK(g->ir_version >= 8);
  WM_CHECK_INT_EQ(g->opset_count, 2);
  WM_CHECK_INT_EQ(wm_graph_opset(g, ""), 17);
  WM_CHECK_INT_EQ(wm_graph_opset(g, "test.domain"), 2);
  WM_CHECK_INT_EQ(g->metadata_count, 2);
  WM_CHECK_STR_EQ(g->metadata[0].key, "author");
  WM_CHECK_STR_EQ(g->metadata[0].value, "wmap");
  WM_CHECK_STR_EQ(g->metadata[1].key, "license");
  WM_CHECK_INT_EQ(g->node_count, 1);
  WM_CHECK_STR_EQ(g->nodes[0].doc, "a node with every attribute kind");
  WM_CHECK_STR_EQ(g->nodes[0].domain, "test.domain");
  const wm_tensor_t *labels = value(g, "labels")->initializer;
  WM_CHECK(labels && labels->dtype == WM_DTYPE_STRING);
  WM_CHECK_STR_EQ(((char **)labels->data)[0], "cat");
  WM_CHECK_STR_EQ(((char **)labels->data)[1], "");
  WM_CHECK(survives_round_trip(g));
  wm_graph_destroy(g);
}

WM_TEST(attributes_of_every_kind_are_imported) {
  wm_graph_t *g;
  WM_CHECK_OK(load_seed("seed_attrs.onnx", &g));
  const wm_node_t *n = &g->nodes[0];
  const wm_attr_t *a;
  WM_CHECK((a = wm_node_attr(n, "f")) && a->type == WM_ATTR_FLOAT);
  WM_CHECK_DBL_NEAR(a->f, 1.5, 0);
  WM_CHECK((a = wm_node_attr(n, "i")) && a->type == WM_ATTR_INT);
  WM_CHECK_INT_EQ(a->i, -7);
  WM_CHECK((a = wm_node_attr(n, "s")) && a->type == WM_ATTR_STRING);
  WM_CHECK_INT_EQ(a->s_len, 13);
  WM_CHECK(memcmp(a->s, "text\0with nul", 13) == 0);
  WM_CHECK((a = wm_node_attr(n, "t")) && a->type == WM_ATTR_TENSOR);
  WM_CHECK_INT_EQ(a->t->dtype, WM_DTYPE_INT64);
  WM_CHECK_INT_EQ(a->t->count, 2);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(a->t, 1), 5);
  WM_CHECK((a = wm_node_attr(n, "floats")) && a->type == WM_ATTR_FLOATS);
  WM_CHECK_INT_EQ(a->count, 2);
  WM_CHECK_DBL_NEAR(a->floats[1], -1.0, 0);
  WM_CHECK((a = wm_node_attr(n, "ints")) && a->type == WM_ATTR_INTS);
  WM_CHECK_INT_EQ(a->count, 3);
  WM_CHECK_INT_EQ(a->ints[2], 3);
  WM_CHECK((a = wm_node_attr(n, "empty_ints")) && a->type == WM_ATTR_INTS);
  WM_CHECK_INT_EQ(a->count, 0);
  WM_CHECK((a = wm_node_attr(n, "strings")) && a->type == WM_ATTR_STRINGS);
  WM_CHECK_INT_EQ(a->count, 2);
  WM_CHECK_STR_EQ(a->strings[1], "bc");
  WM_CHECK_INT_EQ(a->string_lens[1], 2);
  WM_CHECK((a = wm_node_attr(n, "tensors")) && a->type == WM_ATTR_TENSORS);
  WM_CHECK_INT_EQ(a->count, 2);
  WM_CHECK_INT_EQ(a->tensors[1]->dtype, WM_DTYPE_INT32);
  WM_CHECK_INT_EQ(a->tensors[1]->shape.rank, 0);
  WM_CHECK_INT_EQ(wm_tensor_get_i64(a->tensors[1], 0), 9);
  WM_CHECK((a = wm_node_attr(n, "g")) && a->type == WM_ATTR_GRAPH);
  WM_CHECK_STR_EQ(a->g->name, "body");
  WM_CHECK(a->g->parent == g);
  WM_CHECK((a = wm_node_attr(n, "graphs")) && a->type == WM_ATTR_GRAPHS);
  WM_CHECK_INT_EQ(a->count, 2);
  WM_CHECK_STR_EQ(a->graphs[1]->name, "other");
  WM_CHECK(a->graphs[1]->parent == g);
  WM_CHECK((a = wm_node_attr(n, "tp")) && a->type == WM_ATTR_TYPE_PROTO);
  WM_CHECK_INT_EQ(a->types[0].kind, WM_TYPE_SEQUENCE);
  WM_CHECK_INT_EQ(a->types[0].elem_kind, WM_TYPE_TENSOR);
  WM_CHECK_INT_EQ(a->types[0].dtype, WM_DTYPE_FLOAT);
  WM_CHECK_INT_EQ(a->types[0].shape.rank, 2);
  WM_CHECK_STR_EQ(a->types[0].dim_params[0], "N");
  WM_CHECK_INT_EQ(a->types[0].shape.dims[1], 3);
  WM_CHECK((a = wm_node_attr(n, "tps")) && a->type == WM_ATTR_TYPE_PROTOS);
  WM_CHECK_INT_EQ(a->count, 2);
  WM_CHECK_INT_EQ(a->types[0].dtype, WM_DTYPE_INT8);
  WM_CHECK_INT_EQ(a->types[1].kind, WM_TYPE_OPTIONAL);
  WM_CHECK_INT_EQ(a->types[1].shape.rank, -1);
  // Written without a type, as IR version 1 did: the kind is inferred.
  WM_CHECK((a = wm_node_attr(n, "untyped")) && a->type == WM_ATTR_INT);
  WM_CHECK_INT_EQ(a->i, 42);
  wm_graph_destroy(g);
}

WM_TEST(constant_nodes_keep_every_value_kind_as_attributes) {
  wm_graph_t *g;
  WM_CHECK_OK(load_seed("seed_constants.onnx", &g));
  static const struct {
    const char *name;
    wm_attr_type_t type;
  } want[] = {
      {"value", WM_ATTR_TENSOR},         {"value_float", WM_ATTR_FLOAT},
      {"value_floats", WM_ATTR_FLOATS},  {"value_int", WM_ATTR_INT},
      {"value_ints", WM_ATTR_INTS},      {"value_string", WM_ATTR_STRING},
      {"value_strings", WM_ATTR_STRINGS}};
  WM_CHECK_INT_EQ(g->node_count, 7);
  for (size_t i = 0; i < 7; i++) {
    const wm_node_t *n = &g->nodes[i];
    WM_CHECK_STR_EQ(n->op_type, "Constant");
    WM_CHECK_INT_EQ(n->attr_count, 1);
    WM_CHECK_STR_EQ(n->attrs[0].name, want[i].name);
    WM_CHECK_INT_EQ(n->attrs[0].type, want[i].type);
  }
  const wm_tensor_t *t = g->nodes[0].attrs[0].t;
  WM_CHECK_INT_EQ(t->dtype, WM_DTYPE_FLOAT16);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(t, 1), -2.0, 0);
  WM_CHECK_STR_EQ(g->nodes[5].attrs[0].s, "hello");
  WM_CHECK_STR_EQ(g->nodes[6].attrs[0].strings[1], "yz");
  WM_CHECK(survives_round_trip(g));
  wm_graph_destroy(g);
}

WM_TEST(value_types_keep_symbolic_dims_and_container_kinds) {
  wm_graph_t *g;
  WM_CHECK_OK(load_seed("seed_types.onnx", &g));
  const wm_value_t *v = value(g, "x");
  WM_CHECK(v && v->is_input);
  WM_CHECK_INT_EQ(v->type.kind, WM_TYPE_TENSOR);
  WM_CHECK_INT_EQ(v->type.shape.rank, 3);
  WM_CHECK_INT_EQ(v->type.shape.dims[0], -1);
  WM_CHECK_STR_EQ(v->type.dim_params[0], "N");
  WM_CHECK_INT_EQ(v->type.shape.dims[1], -1);
  WM_CHECK(v->type.dim_params[1] == NULL);
  WM_CHECK_INT_EQ(v->type.shape.dims[2], 3);
  v = value(g, "s");
  WM_CHECK_INT_EQ(v->type.kind, WM_TYPE_SEQUENCE);
  WM_CHECK_INT_EQ(v->type.elem_kind, WM_TYPE_TENSOR);
  WM_CHECK_INT_EQ(v->type.dtype, WM_DTYPE_FLOAT);
  WM_CHECK_INT_EQ(v->type.shape.dims[0], 2);
  WM_CHECK_STR_EQ(v->type.dim_params[1], "K");
  v = value(g, "o");
  WM_CHECK_INT_EQ(v->type.kind, WM_TYPE_OPTIONAL);
  WM_CHECK_INT_EQ(v->type.elem_kind, WM_TYPE_SEQUENCE);
  WM_CHECK_INT_EQ(v->type.dtype, WM_DTYPE_INT64);
  WM_CHECK_INT_EQ(v->type.shape.rank, -1);
  v = value(g, "m");
  WM_CHECK_INT_EQ(v->type.kind, WM_TYPE_MAP);
  WM_CHECK_INT_EQ(v->type.dtype, WM_DTYPE_FLOAT);
  v = value(g, "sp");
  WM_CHECK_INT_EQ(v->type.kind, WM_TYPE_SPARSE_TENSOR);
  WM_CHECK_INT_EQ(v->type.shape.dims[1], 4);
  v = value(g, "o_out");
  WM_CHECK(v && v->is_output);
  WM_CHECK_INT_EQ(v->type.kind, WM_TYPE_OPTIONAL);
  WM_CHECK(survives_round_trip(g));
  wm_graph_destroy(g);
}

WM_TEST(initializer_listed_as_input_is_both) {
  wm_graph_t *g;
  WM_CHECK_OK(load_seed("seed_old_ir.onnx", &g));
  WM_CHECK_INT_EQ(g->ir_version, 3);
  WM_CHECK_INT_EQ(g->input_count, 2);
  const wm_value_t *w = value(g, "W");
  WM_CHECK(w && w->is_input && w->initializer);
  WM_CHECK_INT_EQ(w->initializer->count, 4);
  WM_CHECK_DBL_NEAR(wm_tensor_get_f64(w->initializer, 3), 4.0, 0);
  WM_CHECK(!value(g, "x")->initializer);
  WM_CHECK(survives_round_trip(g));
  wm_graph_destroy(g);
}

WM_TEST(subgraph_references_to_enclosing_values_are_outer) {
  wm_graph_t *g;
  WM_CHECK_OK(load_seed("seed_outer.onnx", &g));
  const wm_node_t *if_node = &g->nodes[0];
  const wm_attr_t *then_attr = wm_node_attr(if_node, "then_branch");
  const wm_attr_t *else_attr = wm_node_attr(if_node, "else_branch");
  WM_CHECK(then_attr && else_attr);
  const wm_graph_t *then_g = then_attr->g, *else_g = else_attr->g;
  WM_CHECK(then_g->parent == g && else_g->parent == g);
  WM_CHECK(value(then_g, "n")->is_outer);  // an initializer outside
  WM_CHECK(value(then_g, "a")->is_outer);  // a graph input outside
  WM_CHECK(!value(then_g, "looped")->is_outer);
  const wm_node_t *loop = &then_g->nodes[0];
  WM_CHECK_INT_EQ(loop->input_count, 3);
  WM_CHECK_INT_EQ(loop->inputs[1], -1);  // omitted optional input
  const wm_graph_t *body = wm_node_attr(loop, "body")->g;
  WM_CHECK(body->parent == then_g);
  WM_CHECK(value(body, "b")->is_outer);  // two levels up
  WM_CHECK(!value(body, "acc_in")->is_outer);
  WM_CHECK(value(else_g, "b")->is_outer);
  WM_CHECK(!value(g, "a")->is_outer);
  WM_CHECK_OK(wm_graph_verify(g));
  WM_CHECK(survives_round_trip(g));
  wm_graph_destroy(g);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(model_fields_opsets_metadata_and_docs_are_imported),
      WM_CASE(attributes_of_every_kind_are_imported),
      WM_CASE(constant_nodes_keep_every_value_kind_as_attributes),
      WM_CASE(value_types_keep_symbolic_dims_and_container_kinds),
      WM_CASE(initializer_listed_as_input_is_both),
      WM_CASE(subgraph_references_to_enclosing_values_are_outer),
      {NULL, NULL}};
  return wm_test_main(cases);
}
