// The one JSON reader of every file wmap reads (baselines, peaks files and
// caches): cJSON behind strict checks. Internal to wmap (cJSON types).
#ifndef WMAP_SRC_BASE_JSON_H_
#define WMAP_SRC_BASE_JSON_H_

#include <cJSON.h>

#include "wmap/base.h"

// Parses |len| bytes of |text| as one JSON document into *out_root (free it
// with cJSON_Delete). Stricter than cJSON: refuses a NUL byte anywhere, a
// \u0000 escape or a raw control character in a string, text after the
// value (blanks aside) and an object with a key twice; a message gives the
// line and column, or the member's path for a duplicate key.
wm_status_t wm_json_parse(const char *text, size_t len,
                          cJSON **out_root) WM_MUST_USE_RESULT;

// Reads the regular file |path| of at most |max_bytes| and parses it with
// wm_json_parse(); messages name |what| and the path
// (`baseline "b.json": text after the JSON value (line 3, column 1)`).
wm_status_t wm_json_load(const char *path, const char *what, size_t max_bytes,
                         cJSON **out_root) WM_MUST_USE_RESULT;

#endif  // WMAP_SRC_BASE_JSON_H_
