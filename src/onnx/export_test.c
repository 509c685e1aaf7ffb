// Export: what a ModelProto written by wmap holds, round trips of graphs
// built with the builder API, and failed allocations anywhere in import
// and export.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx/onnx_internal.h"
#include "wm_test.h"
#include "wmap/onnx.h"

// Builds: y = Custom[every attribute kind](x, w), z = Relu(y) with a
// subgraph that reads x from outside, a string initializer and metadata.
static wm_status_t build(wm_graph_t **out) {
  wm_graph_t *g;
  WM_RETURN_IF_ERROR(wm_graph_create("built", NULL, &g));
  *out = g;
  g->ir_version = 8;
  g->model_version = 5;
  g->producer_name = wm_graph_intern(g, "export_test");
  int64_t xd[2] = {-1, 4};
  wm_shape_t xs = wm_shape_make(2, xd);
  wm_type_t xt = wm_type_tensor(WM_DTYPE_FLOAT, &xs);
  xt.dim_params[0] = "batch";
  WM_RETURN_IF_ERROR(wm_graph_add_input(g, "x", &xt, NULL));
  int64_t wd[1] = {4};
  wm_shape_t ws = wm_shape_make(1, wd);
  wm_tensor_t *w, *names, *attr_t;
  WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_FLOAT, &ws, &w));
  for (size_t i = 0; i < 4; i++) {
    wm_tensor_set_f64(w, i, (double)i + 0.5);
  }
  WM_RETURN_IF_ERROR(wm_graph_add_initializer(g, "w", w, NULL));
  WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_STRING, &ws, &names));
  WM_RETURN_IF_ERROR(wm_tensor_set_string(names, 2, "two", 3));
  WM_RETURN_IF_ERROR(wm_graph_add_initializer(g, "names", names, NULL));
  const char *in[2] = {"x", "w"}, *mid[1] = {"y"}, *out_names[1] = {"z"};
  int32_t n;
  WM_RETURN_IF_ERROR(wm_graph_add_node(g, "Custom", "test.domain", "custom", in,
                                       2, mid, 1, &n));
  WM_RETURN_IF_ERROR(wm_graph_add_attr_int(g, n, "i", -3));
  WM_RETURN_IF_ERROR(wm_graph_add_attr_float(g, n, "f", 0.25f));
  WM_RETURN_IF_ERROR(wm_graph_add_attr_string(g, n, "s", "str"));
  static const int64_t ints[3] = {1, -2, 3};
  static const float floats[2] = {1.5f, 2.5f};
  WM_RETURN_IF_ERROR(wm_graph_add_attr_ints(g, n, "ints", ints, 3));
  WM_RETURN_IF_ERROR(wm_graph_add_attr_floats(g, n, "floats", floats, 2));
  const char *strs[2] = {"a", "b\0c"};
  size_t lens[2] = {1, 3};
  wm_attr_t sa = {.name = "strings",
                  .type = WM_ATTR_STRINGS,
                  .count = 2,
                  .strings = strs,
                  .string_lens = lens};
  WM_RETURN_IF_ERROR(wm_graph_add_attr(g, n, &sa));
  WM_RETURN_IF_ERROR(wm_tensor_create(WM_DTYPE_INT64, &ws, &attr_t));
  WM_RETURN_IF_ERROR(wm_graph_add_attr_tensor(g, n, "t", attr_t));
  wm_type_t seq = wm_type_tensor(WM_DTYPE_INT32, &ws);
  seq.kind = WM_TYPE_SEQUENCE;
  wm_attr_t ta = {
      .name = "tp", .type = WM_ATTR_TYPE_PROTO, .count = 1, .types = &seq};
  WM_RETURN_IF_ERROR(wm_graph_add_attr(g, n, &ta));
  wm_graph_t *sub;
  WM_RETURN_IF_ERROR(wm_graph_create("branch", g, &sub));
  const char *sub_in[1] = {"x"}, *sub_out[1] = {"x2"};
  WM_RETURN_IF_ERROR(
      wm_graph_add_node(sub, "Neg", "", "", sub_in, 1, sub_out, 1, NULL));
  WM_RETURN_IF_ERROR(wm_graph_add_output(sub, "x2", NULL, NULL));
  WM_RETURN_IF_ERROR(wm_graph_add_attr_graph(g, n, "g", sub));
  WM_RETURN_IF_ERROR(
      wm_graph_add_node(g, "Relu", "", "relu", mid, 1, out_names, 1, NULL));
  wm_type_t yt = wm_type_tensor(WM_DTYPE_FLOAT, &ws);
  WM_RETURN_IF_ERROR(wm_graph_set_type(g, wm_graph_find_value(g, "y"), &yt));
  WM_RETURN_IF_ERROR(wm_graph_add_output(g, "z", &yt, NULL));
  WM_RETURN_IF_ERROR(wm_graph_set_opset(g, "", 17));
  WM_RETURN_IF_ERROR(wm_graph_set_opset(g, "test.domain", 1));
  WM_RETURN_IF_ERROR(wm_graph_add_metadata(g, "k", "v"));
  return NULL;
}

static const Onnx__TensorProto *find_init(const Onnx__GraphProto *g,
                                          const char *name) {
  for (size_t i = 0; i < g->n_initializer; i++) {
    if (strcmp(g->initializer[i]->name, name) == 0) {
      return g->initializer[i];
    }
  }
  return NULL;
}

WM_TEST(exported_model_holds_raw_initializers_value_info_and_fields) {
  wm_graph_t *g = NULL;
  wm_status_t s = build(&g);
  if (s) {
    wm_graph_destroy(g);
    WM_CHECK_OK(s);
  }
  uint8_t *buf;
  size_t size;
  WM_CHECK_OK(wm_onnx_save_buffer(g, &buf, &size));
  Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, buf);
  WM_CHECK(m != NULL);
  WM_CHECK_INT_EQ(m->ir_version, 8);
  WM_CHECK_INT_EQ(m->model_version, 5);
  WM_CHECK_STR_EQ(m->producer_name, "export_test");
  WM_CHECK_INT_EQ(m->n_opset_import, 2);
  WM_CHECK_STR_EQ(m->opset_import[1]->domain, "test.domain");
  WM_CHECK_INT_EQ(m->n_metadata_props, 1);
  const Onnx__GraphProto *gp = m->graph;
  WM_CHECK_INT_EQ(gp->n_node, 2);
  WM_CHECK_INT_EQ(gp->n_input, 1);
  const Onnx__TypeProto__Tensor *xt = gp->input[0]->type->tensor_type;
  WM_CHECK_STR_EQ(xt->shape->dim[0]->dim_param, "batch");
  WM_CHECK_INT_EQ(xt->shape->dim[1]->dim_value, 4);
  const Onnx__TensorProto *w = find_init(gp, "w");
  WM_CHECK(w && w->has_raw_data && w->raw_data.len == 16);
  WM_CHECK_INT_EQ(w->raw_data.data[4 * 1 + 3], 0x3f);  // 1.5f, little end
  WM_CHECK_INT_EQ(w->n_float_data, 0);
  const Onnx__TensorProto *names = find_init(gp, "names");
  WM_CHECK(names && !names->has_raw_data && names->n_string_data == 4);
  WM_CHECK_INT_EQ(names->string_data[2].len, 3);
  // value_info: "y" (typed, neither input nor output); not the untyped
  // subgraph value or the initializers.
  WM_CHECK_INT_EQ(gp->n_value_info, 1);
  WM_CHECK_STR_EQ(gp->value_info[0]->name, "y");
  const Onnx__NodeProto *custom = gp->node[0];
  WM_CHECK_STR_EQ(custom->domain, "test.domain");
  WM_CHECK_INT_EQ(custom->n_attribute, 9);
  bool saw_graph = false;
  for (size_t i = 0; i < custom->n_attribute; i++) {
    const Onnx__AttributeProto *a = custom->attribute[i];
    WM_CHECK(a->has_type);
    if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH) {
      saw_graph = a->g && a->g->n_node == 1;
    }
    if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS) {
      WM_CHECK_INT_EQ(a->strings[1].len, 3);
    }
  }
  WM_CHECK(saw_graph);
  onnx__model_proto__free_unpacked(m, NULL);
  wm_graph_t *back = NULL;
  s = wm_onnx_load_buffer(buf, size, NULL, &back);
  free(buf);
  char why[256] = "";
  bool equal = !s && wm_graph_equal(g, back, why, sizeof(why));
  WM_CHECK_OK(s);
  WM_CHECK(equal);
  WM_CHECK(wm_graph_find_value(back, "x") >= 0);
  const wm_graph_t *sub = wm_node_attr(&back->nodes[0], "g")->g;
  WM_CHECK(sub->values[wm_graph_find_value(sub, "x")].is_outer);
  wm_graph_destroy(back);
  wm_graph_destroy(g);
}

WM_TEST(saved_file_loads_back_equal) {
  wm_graph_t *g = NULL, *back = NULL;
  wm_status_t s = build(&g);
  char path[] = "/tmp/wm_onnx_exportXXXXXX";
  int fd = mkstemp(path);
  if (fd >= 0) {
    close(fd);
  }
  if (!s) {
    s = wm_onnx_save(g, path);
  }
  if (!s) {
    s = wm_onnx_load(path, &back);
  }
  // The streamed file holds the very bytes of the one-buffer form.
  uint8_t *file = NULL, *buf = NULL;
  size_t file_size = 0, buf_size = 0;
  if (!s) {
    s = wm_file_read(path, &file, &file_size);
  }
  if (!s) {
    s = wm_onnx_save_buffer(g, &buf, &buf_size);
  }
  bool same = !s && file_size == buf_size && buf_size > 0 &&
              memcmp(file, buf, buf_size) == 0;
  free(file);
  free(buf);
  unlink(path);
  char why[256] = "";
  bool equal = !s && wm_graph_equal(g, back, why, sizeof(why));
  // A full device and a missing folder are errors naming the file.
  wm_status_t full = s ? NULL : wm_onnx_save(g, "/dev/full");
  wm_status_t none = s ? NULL : wm_onnx_save(g, "/nonexistent-dir/m.onnx");
  wm_graph_destroy(g);
  wm_graph_destroy(back);
  WM_CHECK_OK(s);
  WM_CHECK(same);
  WM_CHECK(equal);
  WM_CHECK_ERR(full, DATA_LOSS, "/dev/full");
  WM_CHECK_ERR(none, NOT_FOUND, "/nonexistent-dir/m.onnx");
}

// Runs |step| with the Nth allocation failing, for N = 1, 2, ... until it
// succeeds; every failure must be RESOURCE_EXHAUSTED and leave no output.
WM_TEST(every_failed_allocation_in_import_and_export_is_an_error) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/seed_attrs.onnx",
           wm_test_source_dir());
  uint8_t *data;
  size_t size;
  WM_CHECK_OK(wm_file_read(path, &data, &size));
  int64_t n = 1;
  for (;; n++) {
    wm_graph_t *g = NULL;
    wm_alloc_fail_after(n);
    wm_status_t s = wm_onnx_load_buffer(data, size, NULL, &g);
    uint8_t *out = NULL;
    size_t out_size = 0;
    if (!s) {
      s = wm_onnx_save_buffer(g, &out, &out_size);
    }
    wm_alloc_fail_after(0);
    wm_graph_destroy(g);
    free(out);
    if (!s) {
      break;
    }
    wm_status_code_t code = wm_status_code(s);
    wm_status_free(s);
    if (code != WM_STATUS_RESOURCE_EXHAUSTED) {
      free(data);
      wm_test_fail(__FILE__, __LINE__, "allocation %lld: got %s", (long long)n,
                   wm_status_code_name(code));
      return;
    }
  }
  free(data);
  printf("  survived %lld failing allocations\n", (long long)n - 1);
  WM_CHECK(n > 50);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(exported_model_holds_raw_initializers_value_info_and_fields),
      WM_CASE(saved_file_loads_back_equal),
      WM_CASE(every_failed_allocation_in_import_and_export_is_an_error),
      {NULL, NULL}};
  return wm_test_main(cases);
}
