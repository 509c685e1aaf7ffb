// Every malformed model under tests/malformed/ fails to load with the
// one-line error fragment and status code its class promises.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wm_test.h"
#include "wmap/onnx.h"

// The code each file must fail with (the fragment is in expected.txt).
static const struct {
  const char *file;       // file name under tests/malformed/
  wm_status_code_t code;  // expected status code
} kCodes[] = {
    {"truncated.onnx", WM_STATUS_DATA_LOSS},
    {"garbage.onnx", WM_STATUS_DATA_LOSS},
    {"raw_data_size.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"negative_dim.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"count_overflow.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"unknown_dtype.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"typed_count.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"typed_range.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"empty_op_type.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"no_graph.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"no_ir_version.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"attr_no_value.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"attr_unknown_type.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"sparse_attr.onnx", WM_STATUS_UNIMPLEMENTED},
    {"rank_too_high.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"type_rank_too_high.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"string_raw_data.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"undefined_input.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"duplicate_output.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"cycle.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"deep_nesting.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"external_dotdot.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"external_absolute.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"external_missing.onnx", WM_STATUS_NOT_FOUND},
    {"external_beyond.onnx", WM_STATUS_OUT_OF_RANGE},
    {"external_length.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"attr_wrong_type.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"opset_too_new.onnx", WM_STATUS_UNIMPLEMENTED},
    {"negative_dim_value.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"duplicate_graph_output.onnx", WM_STATUS_INVALID_ARGUMENT},
    {"external_nul.onnx", WM_STATUS_INVALID_ARGUMENT},
};

#define CODE_COUNT (sizeof(kCodes) / sizeof(kCodes[0]))

static int code_index(const char *file) {
  for (size_t i = 0; i < CODE_COUNT; i++) {
    if (strcmp(kCodes[i].file, file) == 0) {
      return (int)i;
    }
  }
  return -1;
}

static void folder(char *buf, size_t size) {
  snprintf(buf, size, "%s/tests/malformed", wm_test_source_dir());
}

WM_TEST(every_malformed_model_fails_with_its_one_line_error) {
  char dir[2048], list[2200];
  folder(dir, sizeof(dir));
  snprintf(list, sizeof(list), "%s/expected.txt", dir);
  FILE *f = fopen(list, "r");
  if (!f) {
    wm_test_fail(__FILE__, __LINE__, "cannot open %s (set WMAP_SOURCE_DIR)",
                 list);
    return;
  }
  char line[1024];
  size_t checked = 0;
  bool seen[CODE_COUNT] = {false};
  while (fgets(line, sizeof(line), f)) {
    line[strcspn(line, "\r\n")] = '\0';
    char *tab = strchr(line, '\t');
    if (!tab) {
      continue;
    }
    *tab = '\0';
    const char *file = line, *fragment = tab + 1;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    wm_graph_t *g = NULL;
    wm_status_t s = wm_onnx_load(path, &g);
    int ci = code_index(file);
    if (ci >= 0) {
      seen[ci] = true;
    }
    if (!s) {
      wm_test_fail(__FILE__, __LINE__, "%s: loaded, want an error with \"%s\"",
                   file, fragment);
      wm_graph_destroy(g);
    } else {
      const char *msg = wm_status_message(s);
      wm_status_code_t code = wm_status_code(s);
      printf("  %s: %s: %s\n", file, wm_status_code_name(code), msg);
      if (!strstr(msg, fragment)) {
        wm_test_fail(__FILE__, __LINE__, "%s: error \"%s\" lacks \"%s\"", file,
                     msg, fragment);
      }
      if (strchr(msg, '\n')) {
        wm_test_fail(__FILE__, __LINE__, "%s: error has several lines", file);
      }
      if (ci < 0 || code != kCodes[ci].code) {
        wm_test_fail(__FILE__, __LINE__, "%s: code %s, want %s", file,
                     wm_status_code_name(code),
                     ci < 0 ? "(file missing from kCodes)"
                            : wm_status_code_name(kCodes[ci].code));
      }
      if (g) {
        wm_test_fail(__FILE__, __LINE__, "%s: graph set on failure", file);
      }
      wm_status_free(s);
    }
    checked++;
  }
  fclose(f);
  for (size_t i = 0; i < CODE_COUNT; i++) {
    if (!seen[i]) {
      wm_test_fail(__FILE__, __LINE__, "%s is not in expected.txt",
                   kCodes[i].file);
    }
  }
  WM_CHECK_INT_EQ(checked, CODE_COUNT);
}

WM_TEST(every_model_file_in_the_folder_is_listed) {
  char dir[2048];
  folder(dir, sizeof(dir));
  DIR *d = opendir(dir);
  WM_CHECK(d != NULL);
  struct dirent *e;
  size_t models = 0;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n > 5 && strcmp(e->d_name + n - 5, ".onnx") == 0) {
      models++;
      if (code_index(e->d_name) < 0) {
        wm_test_fail(__FILE__, __LINE__, "%s has no expected error", e->d_name);
      }
    }
  }
  closedir(d);
  WM_CHECK_INT_EQ(models, CODE_COUNT);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(every_malformed_model_fails_with_its_one_line_error),
      WM_CASE(every_model_file_in_the_folder_is_listed),
      {NULL, NULL}};
  return wm_test_main(cases);
}
