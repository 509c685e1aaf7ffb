// A loaded backend: version negotiation, validation of required
// functions, enumeration, and error conversion.
#include <dlfcn.h>
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
  wm_status_t s = wm_status_make((wm_status_code_t)code, __FILE__, __LINE__,
                                 "%s", msg ? msg : "(no message)");
  if (api->error_destroy) {
    api->error_destroy(error);
  }
  return wm_status_annotate(
      s, "backend \"%s\": %s",
      backend->info.name ? backend->info.name : backend->origin, what);
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
  } else if (err || !api) {
    // Without a table the error object can be neither read nor freed.
    s = WM_ERROR(INCOMPATIBLE,
                 "plugin \"%s\": wm_plugin_query refused host ABI %d.%d",
                 origin, WM_ABI_MAJOR, WM_ABI_MINOR);
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
    s = wm_backend_error(b, api->get_info(&b->info), "get_info");
  }
  if (!s && (!b->info.name || !*b->info.name)) {
    s = WM_ERROR(INVALID_ARGUMENT, "plugin \"%s\": get_info gave no name",
                 origin);
  }
  if (!s) {
    s = wm_backend_error(b, api->enumerate(&b->targets, &b->target_count),
                         "enumerate");
  }
  if (!s && b->target_count > 0 && !b->targets) {
    s = WM_ERROR(INVALID_ARGUMENT,
                 "plugin \"%s\": enumerate gave %u "
                 "targets and no array",
                 origin, b->target_count);
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
