// Import -> export -> import over the ONNX backend test data, and every
// test data file through the TensorProto reader.
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wm_test.h"
#include "wmap/onnx.h"

#define DATA_DIR "/usr/share/libonnx-testdata/data"

// Fills |out| with the model paths of the test data; false if missing.
static bool find_models(glob_t *out) {
  if (access(DATA_DIR, R_OK) != 0) {
    return false;
  }
  return glob(DATA_DIR "/*/*/model.onnx", 0, NULL, out) == 0;
}

static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? wm_strndup(path, (size_t)(slash - path)) : wm_strdup(".");
}

WM_TEST(roundtrip_keeps_every_test_data_model_equal) {
  glob_t models;
  if (!find_models(&models)) {
    wm_test_skip(DATA_DIR " is missing (install libonnx-testdata)");
    return;
  }
  size_t loaded = 0, unsupported = 0, failed = 0;
  for (size_t i = 0; i < models.gl_pathc; i++) {
    const char *path = models.gl_pathv[i];
    wm_graph_t *a = NULL, *b = NULL;
    uint8_t *buf = NULL;
    size_t size = 0;
    wm_status_t s = wm_onnx_load(path, &a);
    if (s && wm_status_code(s) == WM_STATUS_UNIMPLEMENTED) {
      printf("  unsupported: %s\n", wm_status_message(s));
      unsupported++;
      wm_status_free(s);
      continue;
    }
    if (!s) {
      s = wm_onnx_save_buffer(a, &buf, &size);
    }
    char *dir = dir_of(path);
    if (!s) {
      s = wm_onnx_load_buffer(buf, size, dir, &b);
    }
    free(dir);
    char why[256] = "";
    if (s) {
      fprintf(stderr, "  %s: %s: %s\n", path,
              wm_status_code_name(wm_status_code(s)), wm_status_message(s));
      failed++;
    } else if (!wm_graph_equal(a, b, why, sizeof(why))) {
      fprintf(stderr, "  %s: round trip differs: %s\n", path, why);
      failed++;
    } else {
      loaded++;
    }
    wm_status_free(s);
    free(buf);
    wm_graph_destroy(a);
    wm_graph_destroy(b);
  }
  printf("  %zu models round-tripped, %zu unsupported, %zu failed\n", loaded,
         unsupported, failed);
  globfree(&models);
  WM_CHECK_INT_EQ(failed, 0);
  WM_CHECK(loaded > 1000);
}

// Checks one test data file against the declared type of its value:
// tensors load (and survive a save/load); sequences and optionals are
// refused as tensors and load as items of their kind (and survive a
// save/load).
static bool check_data_file(const char *path, const wm_type_t *type,
                            const char *tmp) {
  wm_tensor_t *t = NULL, *t2 = NULL;
  char *name = NULL, *name2 = NULL;
  wm_status_t s = wm_onnx_tensor_load(path, &t, &name);
  bool ok;
  if (type->kind == WM_TYPE_TENSOR) {
    ok = s == NULL;
    if (ok) {
      wm_status_t s2 = wm_onnx_tensor_save(t, name, tmp);
      if (!s2) {
        s2 = wm_onnx_tensor_load(tmp, &t2, &name2);
      }
      ok = !s2 && wm_tensor_equal(t, t2) && strcmp(name, name2) == 0;
      if (!ok) {
        fprintf(stderr, "  %s: tensor save/load differs (%s)\n", path,
                wm_status_message(s2));
      }
      wm_status_free(s2);
    }
  } else {
    ok = s && wm_status_code(s) == WM_STATUS_INVALID_ARGUMENT &&
         strstr(wm_status_message(s), "not a tensor") != NULL;
    wm_item_t item = {0}, back = {0};
    wm_status_t s2 =
        ok ? wm_onnx_item_load(path, type->kind, &item, &name) : NULL;
    if (!s2 && ok) {
      s2 = wm_onnx_item_save(&item, name, tmp);
    }
    if (!s2 && ok) {
      s2 = wm_onnx_item_load(tmp, type->kind, &back, &name2);
    }
    if (ok && (s2 || item.kind != type->kind || !wm_item_equal(&item, &back) ||
               strcmp(name, name2) != 0)) {
      fprintf(stderr, "  %s: item load/save/load fails or differs (%s)\n", path,
              wm_status_message(s2));
      ok = false;
    }
    wm_status_free(s2);
    wm_item_deinit(&item);
    wm_item_deinit(&back);
  }
  if (!ok && s) {
    fprintf(stderr, "  %s (kind %d): %s: %s\n", path, (int)type->kind,
            wm_status_code_name(wm_status_code(s)), wm_status_message(s));
  } else if (!ok && !s && type->kind != WM_TYPE_TENSOR) {
    fprintf(stderr, "  %s: loaded a %d-kind value as a tensor\n", path,
            (int)type->kind);
  }
  wm_status_free(s);
  wm_tensor_destroy(t);
  wm_tensor_destroy(t2);
  free(name);
  free(name2);
  return ok;
}

WM_TEST(tensor_files_load_or_are_refused_by_declared_kind) {
  glob_t models;
  if (!find_models(&models)) {
    wm_test_skip(DATA_DIR " is missing (install libonnx-testdata)");
    return;
  }
  char tmp[] = "/tmp/wm_onnx_tensorXXXXXX";
  int fd = mkstemp(tmp);
  WM_CHECK(fd >= 0);
  close(fd);
  size_t files = 0, refused = 0, failed = 0;
  for (size_t m = 0; m < models.gl_pathc; m++) {
    wm_graph_t *g = NULL;
    wm_status_t s = wm_onnx_load(models.gl_pathv[m], &g);
    if (s) {
      wm_status_free(s);
      continue;
    }
    char *dir = dir_of(models.gl_pathv[m]);
    char pattern[4096];
    snprintf(pattern, sizeof(pattern), "%s/test_data_set_*/*.pb", dir);
    glob_t files_glob;
    if (glob(pattern, 0, NULL, &files_glob) == 0) {
      for (size_t f = 0; f < files_glob.gl_pathc; f++) {
        const char *path = files_glob.gl_pathv[f];
        const char *base = strrchr(path, '/') + 1;
        int k = -1;
        const wm_type_t *type = NULL;
        if (sscanf(base, "input_%d.pb", &k) == 1 && k >= 0) {
          size_t seen = 0;  // input_K is the K-th non-initializer input
          for (size_t i = 0; i < g->input_count; i++) {
            const wm_value_t *v = &g->values[g->inputs[i]];
            if (v->initializer) {
              continue;
            }
            if (seen++ == (size_t)k) {
              type = &v->type;
            }
          }
        } else if (sscanf(base, "output_%d.pb", &k) == 1 && k >= 0 &&
                   (size_t)k < g->output_count) {
          type = &g->values[g->outputs[k]].type;
        }
        if (!type) {
          continue;
        }
        files++;
        refused += type->kind != WM_TYPE_TENSOR;
        failed += !check_data_file(path, type, tmp);
      }
      globfree(&files_glob);
    }
    free(dir);
    wm_graph_destroy(g);
  }
  unlink(tmp);
  globfree(&models);
  printf(
      "  %zu files checked, %zu sequences/optionals refused as tensors and "
      "read as items, %zu failed\n",
      files, refused, failed);
  WM_CHECK_INT_EQ(failed, 0);
  WM_CHECK(files > 2000);
  WM_CHECK(refused > 10);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(roundtrip_keeps_every_test_data_model_equal),
      WM_CASE(tensor_files_load_or_are_refused_by_declared_kind),
      {NULL, NULL}};
  return wm_test_main(cases);
}
