// External data: read relative to the model's folder and confined to it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx_internal.h"
#include "wm_test.h"
#include "wmap/onnx.h"

// A temporary tree: ROOT/model/ holds the model and its data files,
// ROOT/outside/ a file the model must not reach.
static char root[64];
static char model_dir[128];

static void write_file(const char *dir, const char *name, const void *data,
                       size_t size) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(data, 1, size, f);
    fclose(f);
  }
}

static bool make_tree(void) {
  snprintf(root, sizeof(root), "/tmp/wm_onnx_extXXXXXX");
  if (!mkdtemp(root)) {
    return false;
  }
  char outside[128];
  snprintf(model_dir, sizeof(model_dir), "%s/model", root);
  snprintf(outside, sizeof(outside), "%s/outside", root);
  if (mkdir(model_dir, 0700) != 0 || mkdir(outside, 0700) != 0) {
    return false;
  }
  char sub[160];
  snprintf(sub, sizeof(sub), "%s/sub", model_dir);
  if (mkdir(sub, 0700) != 0) {
    return false;
  }
  // weights.bin: 8 bytes of header, then floats 1, 2, 3, 4.
  uint8_t data[24] = {0};
  float w[4] = {1, 2, 3, 4};
  memcpy(data + 8, w, sizeof(w));
  write_file(model_dir, "weights.bin", data, sizeof(data));
  write_file(sub, "w.bin", w, sizeof(w));
  write_file(outside, "secret.bin", w, sizeof(w));
  char link_path[256];
  snprintf(link_path, sizeof(link_path), "%s/escape.bin", model_dir);
  char target[192];
  snprintf(target, sizeof(target), "%s/secret.bin", outside);
  if (symlink(target, link_path) != 0) {
    return false;
  }
  snprintf(link_path, sizeof(link_path), "%s/pipe.bin", model_dir);
  if (mkfifo(link_path, 0600) != 0) {
    return false;
  }
  snprintf(link_path, sizeof(link_path), "%s/alias.bin", model_dir);
  return symlink("weights.bin", link_path) == 0;
}

static void remove_tree(void) {
  static const char *const files[] = {"model/weights.bin",
                                      "model/sub/w.bin",
                                      "model/escape.bin",
                                      "model/alias.bin",
                                      "model/model.onnx",
                                      "model/pipe.bin",
                                      "outside/secret.bin",
                                      "model/sub",
                                      "model",
                                      "outside"};
  char path[256];
  for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
    snprintf(path, sizeof(path), "%s/%s", root, files[i]);
    remove(path);
  }
  rmdir(root);
}

// dtype and element count of the initializer write_model describes.
static int32_t w_dtype = WM_DTYPE_FLOAT;
static int64_t w_count = 4;

// Writes model.onnx with one external float[4] initializer "w" (also the
// graph output; w_dtype and w_count change it); |offset|/|length| may be
// NULL. Returns the packed model.
static uint8_t *write_model(const char *location, const char *offset,
                            const char *length, size_t *out_size) {
  Onnx__StringStringEntryProto loc = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
  Onnx__StringStringEntryProto off = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
  Onnx__StringStringEntryProto len = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
  Onnx__StringStringEntryProto *entries[3] = {&loc, NULL, NULL};
  size_t n_entries = 1;
  loc.key = "location";
  loc.value = (char *)location;
  if (offset) {
    off.key = "offset";
    off.value = (char *)offset;
    entries[n_entries++] = &off;
  }
  if (length) {
    len.key = "length";
    len.value = (char *)length;
    entries[n_entries++] = &len;
  }
  int64_t dims[1] = {w_count};
  Onnx__TensorProto w = ONNX__TENSOR_PROTO__INIT;
  w.name = "w";
  w.has_data_type = true;
  w.data_type = w_dtype;
  w.dims = dims;
  w.n_dims = 1;
  w.has_data_location = true;
  w.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  w.external_data = entries;
  w.n_external_data = n_entries;
  Onnx__TensorProto *inits[1] = {&w};
  Onnx__ValueInfoProto out = ONNX__VALUE_INFO_PROTO__INIT;
  out.name = "w";
  Onnx__ValueInfoProto *outs[1] = {&out};
  Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
  g.name = "external";
  g.initializer = inits;
  g.n_initializer = 1;
  g.output = outs;
  g.n_output = 1;
  Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
  m.has_ir_version = true;
  m.ir_version = 8;
  m.graph = &g;
  size_t size = onnx__model_proto__get_packed_size(&m);
  uint8_t *buf = malloc(size);
  onnx__model_proto__pack(&m, buf);
  write_file(model_dir, "model.onnx", buf, size);
  *out_size = size;
  return buf;
}

// Loads model.onnx after writing it with the given external_data.
static wm_status_t load_with(const char *location, const char *offset,
                             const char *length, wm_graph_t **out) {
  size_t size;
  free(write_model(location, offset, length, &size));
  char path[256];
  snprintf(path, sizeof(path), "%s/model.onnx", model_dir);
  return wm_onnx_load(path, out);
}

static const float *weights(const wm_graph_t *g) {
  int32_t id = wm_graph_find_value(g, "w");
  return id >= 0 && g->values[id].initializer ? g->values[id].initializer->data
                                              : NULL;
}

#define WITH_TREE()                                   \
  do {                                                \
    if (!make_tree()) {                               \
      remove_tree();                                  \
      wm_test_fail(__FILE__, __LINE__, "no tmp dir"); \
      return;                                         \
    }                                                 \
  } while (0)

WM_TEST(external_data_is_read_relative_to_the_model_folder) {
  WITH_TREE();
  wm_graph_t *g = NULL;
  wm_status_t s = load_with("weights.bin", "8", "16", &g);
  bool ok = !s && weights(g) && weights(g)[0] == 1 && weights(g)[3] == 4;
  wm_graph_destroy(g);
  wm_status_free(s);
  g = NULL;
  s = load_with("sub/w.bin", NULL, NULL, &g);  // subfolder, whole file
  ok = ok && !s && weights(g) && weights(g)[2] == 3;
  wm_graph_destroy(g);
  wm_status_free(s);
  g = NULL;
  s = load_with("alias.bin", "8", NULL, &g);  // a link that stays inside
  ok = ok && !s && weights(g) && weights(g)[1] == 2;
  wm_graph_destroy(g);
  wm_status_free(s);
  remove_tree();
  WM_CHECK(ok);
}

WM_TEST(external_locations_leaving_the_folder_are_refused) {
  WITH_TREE();
  wm_graph_t *g = NULL;
  wm_status_t s1 = load_with("../outside/secret.bin", NULL, NULL, &g);
  wm_status_t s2 = load_with("sub/../../outside/secret.bin", NULL, NULL, &g);
  char abs[256];
  snprintf(abs, sizeof(abs), "%s/outside/secret.bin", root);
  wm_status_t s3 = load_with(abs, NULL, NULL, &g);
  wm_status_t s4 = load_with("escape.bin", NULL, NULL, &g);
  remove_tree();
  WM_CHECK(g == NULL);
  WM_CHECK_ERR(s1, INVALID_ARGUMENT, "uses \"..\"");
  WM_CHECK_ERR(s2, INVALID_ARGUMENT, "uses \"..\"");
  WM_CHECK_ERR(s3, INVALID_ARGUMENT, "is an absolute path");
  WM_CHECK_ERR(s4, INVALID_ARGUMENT,
               "\"escape.bin\" resolves outside the model folder");
}

WM_TEST(external_files_missing_short_or_misdescribed_are_refused) {
  WITH_TREE();
  wm_graph_t *g = NULL;
  wm_status_t s1 = load_with("nothing.bin", NULL, NULL, &g);
  wm_status_t s2 = load_with("weights.bin", "16", NULL, &g);
  wm_status_t s3 = load_with("weights.bin", "0", "12", &g);
  wm_status_t s4 = load_with("weights.bin", "-8", NULL, &g);
  wm_status_t s5 = load_with("sub", NULL, NULL, &g);
  wm_status_t s6 = load_with("", NULL, NULL, &g);
  wm_status_t s7 = load_with("pipe.bin", NULL, NULL, &g);  // must not hang
  remove_tree();
  WM_CHECK(g == NULL);
  WM_CHECK_ERR(s1, NOT_FOUND, "\"nothing.bin\" does not exist");
  WM_CHECK_ERR(s2, OUT_OF_RANGE,
               "has 24 bytes; offset 16 + length 16 runs past its end");
  WM_CHECK_ERR(s3, INVALID_ARGUMENT, "length is 12 bytes, want 16");
  WM_CHECK_ERR(s4, INVALID_ARGUMENT,
               "external_data \"offset\" is \"-8\", want a non-negative");
  WM_CHECK_ERR(s5, INVALID_ARGUMENT, "is not a regular file");
  WM_CHECK_ERR(s6, INVALID_ARGUMENT, "location is empty");
  WM_CHECK_ERR(s7, INVALID_ARGUMENT, "\"pipe.bin\" is not a regular file");
}

WM_TEST(external_data_needs_a_folder_when_loading_from_memory) {
  WITH_TREE();
  size_t size;
  uint8_t *buf = write_model("weights.bin", "8", NULL, &size);
  wm_graph_t *g = NULL;
  wm_status_t s1 = wm_onnx_load_buffer(buf, size, NULL, &g);
  wm_status_t s2 = wm_onnx_load_buffer(buf, size, model_dir, &g);
  bool loaded = !s2 && weights(g) && weights(g)[3] == 4;
  free(buf);
  wm_graph_destroy(g);
  remove_tree();
  wm_status_free(s2);
  WM_CHECK_ERR(s1, FAILED_PRECONDITION, "needs the model's folder");
  WM_CHECK(loaded);
}

WM_TEST(external_packed_data_holds_two_int4_per_byte) {
  WITH_TREE();
  // Bytes 8..11 of weights.bin are 00 00 80 3f (the float 1): seven int4
  // elements take 4 bytes, low nibble first, the last nibble padding.
  w_dtype = WM_DTYPE_INT4;
  w_count = 7;
  wm_graph_t *g = NULL, *g2 = NULL;
  wm_status_t s = load_with("weights.bin", "8", "4", &g);
  wm_status_t s2 = load_with("weights.bin", "8", "7", &g2);
  w_dtype = WM_DTYPE_FLOAT;
  w_count = 4;
  remove_tree();
  WM_CHECK_OK(s);
  int32_t id = wm_graph_find_value(g, "w");
  const wm_tensor_t *t = id >= 0 ? g->values[id].initializer : NULL;
  int64_t want[7] = {0, 0, 0, 0, 0, -8, -1};
  bool ok = t && t->dtype == WM_DTYPE_INT4 && t->count == 7;
  for (size_t i = 0; ok && i < 7; i++) {
    ok = wm_tensor_get_i64(t, i) == want[i];
  }
  wm_graph_destroy(g);
  WM_CHECK(g2 == NULL);
  WM_CHECK_ERR(s2, INVALID_ARGUMENT, "length is 7 bytes, want 4 for int4[7]");
  WM_CHECK(ok);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(external_data_is_read_relative_to_the_model_folder),
      WM_CASE(external_locations_leaving_the_folder_are_refused),
      WM_CASE(external_files_missing_short_or_misdescribed_are_refused),
      WM_CASE(external_data_needs_a_folder_when_loading_from_memory),
      WM_CASE(external_packed_data_holds_two_int4_per_byte),
      {NULL, NULL}};
  return wm_test_main(cases);
}
