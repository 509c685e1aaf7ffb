// The strict JSON reader: a scan for what cJSON lets through, cJSON's
// parse, then a walk for duplicate keys.
#include "base/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Line and column (1-based) of byte |at| of |text|.
static void position(const char *text, size_t at, int *line, int *col) {
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < at; i++) {
    if (text[i] == '\n') {
      ++*line;
      *col = 1;
    } else {
      ++*col;
    }
  }
}

static wm_status_t at_error(const char *text, size_t at, const char *what) {
  int line, col;
  position(text, at, &line, &col);
  return WM_ERROR(DATA_LOSS, "%s (line %d, column %d)", what, line, col);
}

// What cJSON accepts and JSON or wmap does not: NUL bytes (C strings would
// cut the text there), \u0000 (it would cut a string) and raw control
// characters in strings.
static wm_status_t scan(const char *text, size_t len) {
  bool in_string = false;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)text[i];
    if (c == 0) {
      return at_error(text, i, "a NUL byte");
    }
    if (!in_string) {
      in_string = c == '"';
      continue;
    }
    if (c == '"') {
      in_string = false;
    } else if (c < 0x20) {
      char what[64];
      snprintf(what, sizeof(what), "a raw control character 0x%02x in a string",
               c);
      return at_error(text, i, what);
    } else if (c == '\\' && i + 1 < len) {
      if (text[i + 1] == 'u' && i + 5 < len &&
          memcmp(text + i + 2, "0000", 4) == 0) {
        return at_error(text, i, "\\u0000 (a NUL character) in a string");
      }
      if (text[i + 1] != '\0') {
        i++;  // the escaped character cannot end the string
      }
    }
  }
  return NULL;
}

// Writes |item|'s path below |parent| ("configurations[1].results").
static void child_path(char *dst, size_t cap, const char *parent,
                       const cJSON *item, size_t index, bool in_array) {
  if (in_array) {
    snprintf(dst, cap, "%s[%zu]", parent, index);
  } else if (*parent) {
    snprintf(dst, cap, "%s.%s", parent, item->string);
  } else {
    snprintf(dst, cap, "%s", item->string);
  }
}

// Refuses an object of |node|'s tree with a key twice.
static wm_status_t unique_keys(const cJSON *node, const char *path) {
  if (cJSON_IsObject(node)) {
    wm_strmap_t seen;
    wm_strmap_init(&seen);
    wm_status_t s = NULL;
    for (const cJSON *c = node->child; c && !s; c = c->next) {
      if (wm_strmap_get(&seen, c->string, NULL)) {
        s = WM_ERROR(DATA_LOSS, "key \"%s\" appears twice in %s%s", c->string,
                     *path ? "" : "the top-level object", *path ? path : "");
      } else {
        s = wm_strmap_put(&seen, c->string, 1);
      }
    }
    wm_strmap_deinit(&seen);
    WM_RETURN_IF_ERROR(s);
  }
  if (!cJSON_IsObject(node) && !cJSON_IsArray(node)) {
    return NULL;
  }
  size_t i = 0;
  for (const cJSON *c = node->child; c; c = c->next, i++) {
    if (c->child) {
      char sub[256];
      child_path(sub, sizeof(sub), path, c, i, cJSON_IsArray(node));
      WM_RETURN_IF_ERROR(unique_keys(c, sub));
    }
  }
  return NULL;
}

wm_status_t wm_json_parse(const char *text, size_t len, cJSON **out_root) {
  *out_root = NULL;
  WM_RETURN_IF_ERROR(scan(text, len));
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
  if (!root) {
    // cJSON's error pointer is where parsing stopped (thread-unsafe
    // cJSON_GetErrorPtr is not used).
    size_t at =
        end && end >= text && end <= text + len ? (size_t)(end - text) : len;
    return at_error(text, at, "not valid JSON");
  }
  size_t at = end ? (size_t)(end - text) : len;
  while (at < len && strchr(" \t\r\n", text[at])) {
    at++;
  }
  if (at < len) {
    cJSON_Delete(root);
    return at_error(text, at, "text after the JSON value");
  }
  wm_status_t s = unique_keys(root, "");
  if (s) {
    cJSON_Delete(root);
    return s;
  }
  *out_root = root;
  return NULL;
}

wm_status_t wm_json_load(const char *path, const char *what, size_t max_bytes,
                         cJSON **out_root) {
  *out_root = NULL;
  uint8_t *data = NULL;
  size_t size = 0;
  wm_status_t s = wm_file_read_capped(path, max_bytes, &data, &size);
  if (s) {
    return wm_status_annotate(s, "%s", what);
  }
  s = wm_json_parse((const char *)data, size, out_root);
  free(data);
  return wm_status_annotate(s, "%s \"%s\"", what, path);
}
