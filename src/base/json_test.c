// Tests of the strict JSON reader: each rule it adds to cJSON, the
// positions and paths in its messages, and the file reader under it.
#include <stdlib.h>
#include <unistd.h>

#include "base/json.h"
#include "wm_test.h"

// Parses |len| bytes of |text|; checks DATA_LOSS with |needle|.
static void refused(const char *text, size_t len, const char *needle) {
  cJSON *root = (cJSON *)1;
  wm_status_t s = wm_json_parse(text, len, &root);
  bool ok = s && wm_status_code(s) == WM_STATUS_DATA_LOSS &&
            strstr(wm_status_message(s), needle) && root == NULL;
  if (!ok) {
    wm_test_fail(__FILE__, __LINE__, "%.*s: got %s \"%s\", want \"%s\"",
                 (int)len, text, wm_status_code_name(wm_status_code(s)),
                 wm_status_message(s), needle);
  }
  wm_status_free(s);
  if (!s) {
    cJSON_Delete(root);
  }
}

WM_TEST(json_parse_accepts_a_document_with_blanks_after_it) {
  static const char text[] = "{\"a\": [1, {\"b\": \"x\\ny\"}], \"c\": {}}\n \t";
  cJSON *root = NULL;
  WM_CHECK_OK(wm_json_parse(text, sizeof(text) - 1, &root));
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "a");
  WM_CHECK_INT_EQ(cJSON_GetArraySize(a), 2);
  WM_CHECK_STR_EQ(
      cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(a, 1), "b")
          ->valuestring,
      "x\ny");
  cJSON_Delete(root);
}

WM_TEST(json_parse_refuses_text_after_the_value) {
  static const char text[] = "{\"a\": 1}\n{\"a\": 2}";
  refused(text, sizeof(text) - 1,
          "text after the JSON value (line 2, column 1)");
  refused("[1] x", 5, "text after the JSON value (line 1, column 5)");
}

WM_TEST(json_parse_refuses_a_key_twice_naming_the_object) {
  static const char top[] = "{\"a\": 1, \"b\": 2, \"a\": 3}";
  refused(top, sizeof(top) - 1,
          "key \"a\" appears twice in the top-level "
          "object");
  static const char deep[] =
      "{\"configurations\": [{}, {\"results\": {\"n\": 1, \"n\": 2}}]}";
  refused(deep, sizeof(deep) - 1,
          "key \"n\" appears twice in configurations[1].results");
  // The same key in two objects is fine.
  static const char ok[] = "{\"a\": {\"n\": 1}, \"b\": {\"n\": 2}}";
  cJSON *root = NULL;
  WM_CHECK_OK(wm_json_parse(ok, sizeof(ok) - 1, &root));
  cJSON_Delete(root);
}

WM_TEST(json_parse_refuses_nul_in_text_and_strings) {
  static const char raw[] = "{\"a\": \"x\0y\"}";
  refused(raw, sizeof(raw) - 1, "a NUL byte (line 1, column 9)");
  static const char after[] = "{\"a\": 1}\0";
  refused(after, sizeof(after) - 1, "a NUL byte (line 1, column 9)");
  static const char escaped[] = "{\"name\": \"conv\\u0000evil\"}";
  refused(escaped, sizeof(escaped) - 1,
          "\\u0000 (a NUL character) in a string (line 1, column 15)");
  // An escaped backslash before "u0000" is not the escape.
  static const char text[] = "{\"a\": \"\\\\u0000\"}";
  cJSON *root = NULL;
  WM_CHECK_OK(wm_json_parse(text, sizeof(text) - 1, &root));
  WM_CHECK_STR_EQ(cJSON_GetObjectItemCaseSensitive(root, "a")->valuestring,
                  "\\u0000");
  cJSON_Delete(root);
}

WM_TEST(json_parse_refuses_raw_control_characters_in_strings) {
  static const char text[] = "{\"a\":\n \"x\ty\"}";
  refused(text, sizeof(text) - 1,
          "a raw control character 0x09 in a string (line 2, column 4)");
}

WM_TEST(json_parse_names_the_position_of_bad_json) {
  static const char text[] = "{\"a\": 1,\n \"b\": }";
  refused(text, sizeof(text) - 1, "not valid JSON (line 2");
  refused("", 0, "not valid JSON (line 1, column 1)");
}

WM_TEST(json_load_names_what_and_the_file) {
  cJSON *root = NULL;
  WM_CHECK_ERR(wm_json_load("/dev/zero", "baseline", 1024, &root),
               INVALID_ARGUMENT,
               "baseline: \"/dev/zero\" is a character device, not a "
               "regular file");
  WM_CHECK(root == NULL);
  char path[] = "/tmp/wm_json_test_XXXXXX";
  int fd = mkstemp(path);
  WM_CHECK(fd >= 0);
  static const char text[] = "{\"x\": 1} 2";
  WM_CHECK(write(fd, text, sizeof(text) - 1) == (ssize_t)sizeof(text) - 1);
  close(fd);
  char want[128];
  snprintf(want, sizeof(want),
           "peaks file \"%s\": text after the JSON value (line 1, column 10)",
           path);
  WM_CHECK_ERR(wm_json_load(path, "peaks file", 1024, &root), DATA_LOSS, want);
  WM_CHECK_ERR(wm_json_load(path, "peaks file", 4, &root), OUT_OF_RANGE,
               "over the 4 bytes limit");
  unlink(path);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(json_parse_accepts_a_document_with_blanks_after_it),
      WM_CASE(json_parse_refuses_text_after_the_value),
      WM_CASE(json_parse_refuses_a_key_twice_naming_the_object),
      WM_CASE(json_parse_refuses_nul_in_text_and_strings),
      WM_CASE(json_parse_refuses_raw_control_characters_in_strings),
      WM_CASE(json_parse_names_the_position_of_bad_json),
      WM_CASE(json_load_names_what_and_the_file),
      {NULL, NULL}};
  return wm_test_main(cases);
}
