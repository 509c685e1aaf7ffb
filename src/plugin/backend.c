// A loaded backend: version negotiation, validation of required
// functions, enumeration, and error conversion.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wmap/plugin.h"

struct wm_backend {
  const wm_plugin_api *api;              // negotiated table
  wm_plugin_info info;                   // from get_info
  const wm_target_desc *const *targets;  // plugin-owned
  uint32_t target_count;                 // number of targets
  char origin[4096];                     // where it came from
  wm_host_api host;                      // given to the plugin; lives here
  void *dl_handle;                       // dlopen handle or NULL; owned
};

static void host_log(void *ctx, uint32_t level, const char *file, int32_t line,
                     const char *message) {
  const wm_backend_t *b = ctx;
  wm_log(level > WM_LOG_DEBUG ? WM_LOG_DEBUG : (wm_log_level_t)level,
         "%s (%s:%d): %s", b ? b->origin : "plugin", file ? file : "?",
         (int)line, message ? message : "");
}

// Frees a backend and closes its library; plugin memory is gone after.
static void backend_free(wm_backend_t *b) {
  void *handle = b->dl_handle;
  free(b);
  if (handle) {
    dlclose(handle);
  }
}

wm_status_t wm_backend_error(const wm_backend_t *backend, wm_error *error,
                             const char *what) {
  if (!error) {
    return NULL;
  }
  const wm_plugin_api *api = backend->api;
  int32_t code = api->error_code ? api->error_code(error) : WM_ERR_INTERNAL;
  const char *msg = api->error_message ? api->error_message(error) : NULL;
  if (code <= 0 || code > WM_STATUS_CANCELLED) {
    code = WM_STATUS_INTERNAL;
  }
  // At most 1 KiB of the plugin's text; a message that already starts
  // with the function's name ("mem_alloc: ...") is not given it twice.
  wm_status_t s = wm_status_make((wm_status_code_t)code, __FILE__, __LINE__,
                                 "%.1024s", msg ? msg : "(no message)");
  size_t n = strlen(what);
  bool named = msg && strncmp(msg, what, n) == 0 && msg[n] == ':';
  if (api->error_destroy) {
    api->error_destroy(error);
  }
  const char *name = backend->info.name ? backend->info.name : backend->origin;
  return named ? wm_status_annotate(s, "backend \"%s\"", name)
               : wm_status_annotate(s, "backend \"%s\": %s", name, what);
}

// Appends the name of each NULL required function to |missing|.
static void check_required(const wm_plugin_api *api, wm_strbuf_t *missing) {
#define REQUIRE(table, fn)                                            \
  if (!(table) || !(table)->fn) {                                     \
    wm_strbuf_printf(missing, "%s%s", missing->len ? ", " : "", #fn); \
  }
  REQUIRE(api, get_info);
  REQUIRE(api, enumerate);
  REQUIRE(api, device_open);
  REQUIRE(api, error_code);
  REQUIRE(api, error_message);
  REQUIRE(api, error_destroy);
  const wm_device_tier *d = api->device;
  REQUIRE(d, mem_alloc);
  REQUIRE(d, mem_free);
  REQUIRE(d, copy_h2d);
  REQUIRE(d, copy_d2h);
  REQUIRE(d, copy_d2d);
  REQUIRE(d, stream_create);
  REQUIRE(d, stream_destroy);
  REQUIRE(d, stream_sync);
  REQUIRE(d, device_close);
  if (api->library) {
    const wm_library_tier *l = api->library;
    REQUIRE(l, op_query);
    REQUIRE(l, op_plan);
    REQUIRE(l, op_run);
    REQUIRE(l, op_plan_destroy);
  }
  if (api->collective) {
    const wm_collective_tier *c = api->collective;
    REQUIRE(c, coll_query);
    REQUIRE(c, comm_create);
    REQUIRE(c, comm_destroy);
    REQUIRE(c, all_reduce);
    REQUIRE(c, all_gather);
    REQUIRE(c, reduce_scatter);
    REQUIRE(c, broadcast);
  }
#undef REQUIRE
}

// Bounds on what a plugin may answer; more is refused as malformed.
#define NAME_MAX_LEN 63   // a backend name, [a-z0-9_-]
#define TEXT_MAX_LEN 255  // any other string: a version, a target's name
#define MAX_FEATURES 256  // get_info's features
#define MAX_TARGETS 4096  // enumerate's targets
#define MAX_FORMATS 64    // a target's kernel formats

// Returns true when the |n| bytes at |s| are UTF-8 (no overlong forms,
// surrogates or code points past U+10FFFF).
static bool is_utf8(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    size_t len = c < 0x80             ? 1
                 : (c & 0xe0) == 0xc0 ? 2
                 : (c & 0xf0) == 0xe0 ? 3
                 : (c & 0xf8) == 0xf0 ? 4
                                      : 0;
    if (len == 0 || i + len > n || (len == 2 && c < 0xc2) || c > 0xf4) {
      return false;
    }
    uint32_t cp = c & (0x7f >> len);
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xc0) != 0x80) {
        return false;
      }
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff))) {
      return false;
    }
    i += len;
  }
  return true;
}

// Checks a string a plugin answered (|what| names it): NULL only when not
// |required|, at most TEXT_MAX_LEN bytes, UTF-8, no control characters.
static wm_status_t check_text(const char *origin, const char *what,
                              const char *s, bool required) {
  if (!s) {
    return required ? WM_ERROR(INVALID_ARGUMENT, "plugin \"%s\": %s is NULL",
                               origin, what)
                    : NULL;
  }
  size_t n = strnlen(s, TEXT_MAX_LEN + 1);
  if (n > TEXT_MAX_LEN) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "plugin \"%s\": %s is longer than %d bytes", origin, what,
                    TEXT_MAX_LEN);
  }
  if (!is_utf8((const unsigned char *)s, n)) {
    return WM_ERROR(INVALID_ARGUMENT, "plugin \"%s\": %s is not UTF-8", origin,
                    what);
  }
  for (size_t i = 0; i < n; i++) {
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "plugin \"%s\": %s holds control characters", origin,
                      what);
    }
  }
  return NULL;
}

// Checks the backend name get_info gave: 1 to NAME_MAX_LEN characters of
// [a-z0-9_-], so that it is one word on a command line and in a file name.
static wm_status_t check_name(const char *origin, const char *name) {
  if (!name || !*name) {
    return WM_ERROR(INVALID_ARGUMENT, "plugin \"%s\": get_info gave no name",
                    origin);
  }
  size_t n = strnlen(name, NAME_MAX_LEN + 1);
  bool ok = n <= NAME_MAX_LEN;
  for (size_t i = 0; ok && i < n; i++) {
    char c = name[i];
    ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
  }
  if (ok) {
    return NULL;
  }
  // Shown on one line: bytes outside printable ASCII as \xNN.
  char shown[4 * NAME_MAX_LEN + 8];
  size_t k = 0;
  for (size_t i = 0; i < n && i < NAME_MAX_LEN; i++) {
    unsigned char c = (unsigned char)name[i];
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      shown[k++] = (char)c;
    } else {
      k += (size_t)snprintf(shown + k, sizeof(shown) - k, "\\x%02x", c);
    }
  }
  shown[k] = '\0';
  if (n > NAME_MAX_LEN) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "plugin \"%s\": get_info: name \"%s...\" is longer than "
                    "%d characters",
                    origin, shown, NAME_MAX_LEN);
  }
  return WM_ERROR(INVALID_ARGUMENT,
                  "plugin \"%s\": get_info: name \"%s\" has characters "
                  "other than a-z, 0-9, _ and -",
                  origin, shown);
}

// Checks what get_info answered: the name, the strings, the features.
static wm_status_t check_info(const char *origin, const wm_plugin_info *info) {
  WM_RETURN_IF_ERROR(check_name(origin, info->name));
  WM_RETURN_IF_ERROR(
      check_text(origin, "get_info: vendor", info->vendor, false));
  WM_RETURN_IF_ERROR(
      check_text(origin, "get_info: version", info->version, false));
  if (info->n_features > MAX_FEATURES ||
      (info->n_features > 0 && !info->features)) {
    return WM_ERROR(
        INVALID_ARGUMENT, "plugin \"%s\": get_info gave %u features %s", origin,
        info->n_features, info->features ? "(at most 256)" : "and no array");
  }
  for (uint32_t i = 0; i < info->n_features; i++) {
    char what[64];
    snprintf(what, sizeof(what), "get_info: feature %u", i);
    WM_RETURN_IF_ERROR(check_text(origin, what, info->features[i], true));
  }
  return NULL;
}

// Checks what enumerate answered: the count, each description's size and
// strings.
static wm_status_t check_targets(const char *origin,
                                 const wm_target_desc *const *targets,
                                 uint32_t count) {
  if (count > MAX_TARGETS || (count > 0 && !targets)) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "plugin \"%s\": enumerate gave %u targets %s", origin,
                    count, targets ? "(at most 4096)" : "and no array");
  }
  const size_t min_size = WM_STRUCT_SIZE(wm_target_desc, mem_bandwidth_gbs);
  for (uint32_t i = 0; i < count; i++) {
    const wm_target_desc *t = targets[i];
    if (!t || t->struct_size < min_size) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "plugin \"%s\": enumerate: target %u is %s%u bytes, "
                      "want at least %zu",
                      origin, i, t ? "" : "NULL, not ", t ? t->struct_size : 0,
                      min_size);
    }
    char what[64];
    snprintf(what, sizeof(what), "enumerate: target %u's name", i);
    WM_RETURN_IF_ERROR(check_text(origin, what, t->name, true));
    snprintf(what, sizeof(what), "enumerate: target %u's vendor", i);
    WM_RETURN_IF_ERROR(check_text(origin, what, t->vendor, false));
    if (t->n_formats > MAX_FORMATS || (t->n_formats > 0 && !t->formats)) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "plugin \"%s\": enumerate: target %u gave %u formats %s",
                      origin, i, t->n_formats,
                      t->formats ? "(at most 64)" : "and no array");
    }
    for (uint32_t f = 0; f < t->n_formats; f++) {
      snprintf(what, sizeof(what), "enumerate: target %u's format %u", i, f);
      WM_RETURN_IF_ERROR(check_text(origin, what, t->formats[f], true));
    }
  }
  return NULL;
}

wm_status_t wm_backend_create(wm_plugin_query_fn query, const char *origin,
                              wm_backend_t **out_backend) {
  return wm_backend_create_ex(query, origin, 0, NULL, out_backend);
}

wm_status_t wm_backend_create_ex(wm_plugin_query_fn query, const char *origin,
                                 uint32_t num_threads, void *dl_handle_take,
                                 wm_backend_t **out_backend) {
  *out_backend = NULL;
  wm_backend_t *b = wm_calloc(1, sizeof(*b));
  if (!b) {
    if (dl_handle_take) {
      dlclose(dl_handle_take);
    }
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory loading a backend");
  }
  b->dl_handle = dl_handle_take;
  snprintf(b->origin, sizeof(b->origin), "%s", origin);
  b->host.struct_size = sizeof(b->host);
  b->host.ctx = b;
  b->host.log = host_log;
  b->host.num_threads = num_threads;
  const wm_plugin_api *api = NULL;
  wm_error *err = query(WM_ABI_MAJOR, WM_ABI_MINOR, &b->host, &api);
  wm_status_t s = NULL;
  if (err && api &&
      api->struct_size >= WM_STRUCT_SIZE(wm_plugin_api, error_destroy) &&
      api->error_code && api->error_message && api->error_destroy) {
    // A refusing plugin may still hand out its table to explain itself.
    int32_t code = api->error_code(err);
    const char *msg = api->error_message(err);
    if (code == WM_ERR_INCOMPATIBLE) {
      s = WM_ERROR(INCOMPATIBLE, "plugin \"%s\": refused host ABI %d.%d: %s",
                   origin, WM_ABI_MAJOR, WM_ABI_MINOR, msg ? msg : "");
    } else {
      const char *name = code > 0 && code <= WM_STATUS_CANCELLED
                             ? wm_status_code_name((wm_status_code_t)code)
                             : "unknown code";
      s = WM_ERROR(UNAVAILABLE,
                   "plugin \"%s\": wm_plugin_query failed (%s): %s", origin,
                   name, msg ? msg : "(no message)");
    }
    api->error_destroy(err);
  } else if (err) {
    // Without a table the error object can be neither read nor freed.
    s = WM_ERROR(INCOMPATIBLE,
                 "plugin \"%s\": wm_plugin_query refused host ABI %d.%d",
                 origin, WM_ABI_MAJOR, WM_ABI_MINOR);
  } else if (!api) {
    s = WM_ERROR(INVALID_ARGUMENT,
                 "plugin \"%s\": wm_plugin_query answered no error and no "
                 "API table",
                 origin);
  } else if (api->struct_size < WM_STRUCT_SIZE(wm_plugin_api, device)) {
    s = WM_ERROR(
        INCOMPATIBLE, "plugin \"%s\": API table is %u bytes, want at least %zu",
        origin, api->struct_size, WM_STRUCT_SIZE(wm_plugin_api, device));
  } else if (api->abi_major != WM_ABI_MAJOR || api->abi_minor > WM_ABI_MINOR) {
    s = WM_ERROR(INCOMPATIBLE,
                 "plugin \"%s\": answers ABI %u.%u, host speaks %d.%d", origin,
                 api->abi_major, api->abi_minor, WM_ABI_MAJOR, WM_ABI_MINOR);
  }
  if (s) {
    backend_free(b);
    return s;
  }
  b->api = api;
  wm_strbuf_t missing;
  wm_strbuf_init(&missing);
  check_required(api, &missing);
  if (missing.len) {
    s = WM_ERROR(INCOMPATIBLE,
                 "plugin \"%s\": missing required functions: "
                 "%s",
                 origin, wm_strbuf_str(&missing));
  }
  wm_strbuf_deinit(&missing);
  if (!s) {
    b->info.struct_size = sizeof(b->info);
    wm_error *err_info = api->get_info(&b->info);
    if (err_info) {
      b->info.name = NULL;  // unchecked: the message names the file instead
    }
    s = wm_backend_error(b, err_info, "get_info");
  }
  if (!s) {
    s = check_info(origin, &b->info);
  }
  if (!s) {
    s = wm_backend_error(b, api->enumerate(&b->targets, &b->target_count),
                         "enumerate");
  }
  if (!s) {
    s = check_targets(origin, b->targets, b->target_count);
  }
  if (s) {
    backend_free(b);
    return s;
  }
  *out_backend = b;
  return NULL;
}

void wm_backend_destroy(wm_backend_t *backend) {
  if (backend) {
    backend_free(backend);
  }
}

const char *wm_backend_origin(const wm_backend_t *backend) {
  return backend->origin;
}

const wm_plugin_info *wm_backend_info(const wm_backend_t *backend) {
  return &backend->info;
}

uint32_t wm_backend_num_threads(const wm_backend_t *backend) {
  return backend->host.num_threads;
}

const char *wm_backend_name(const wm_backend_t *backend) {
  return backend->info.name;
}

const char *wm_backend_version(const wm_backend_t *backend) {
  return backend->info.version ? backend->info.version : "";
}

const wm_plugin_api *wm_backend_api(const wm_backend_t *backend) {
  return backend->api;
}

uint32_t wm_backend_target_count(const wm_backend_t *backend) {
  return backend->target_count;
}

const wm_target_desc *wm_backend_target(const wm_backend_t *backend,
                                        uint32_t i) {
  return i < backend->target_count ? backend->targets[i] : NULL;
}
