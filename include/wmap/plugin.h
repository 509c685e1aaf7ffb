// wmap plugin host: a loaded backend (its negotiated API table, info and
// targets) and the conversion of plugin errors into statuses.
// Thread-safety: a backend may be used from several threads once loaded.
#ifndef WMAP_PLUGIN_H_
#define WMAP_PLUGIN_H_

#include "wmap/backend.h"
#include "wmap/base.h"

#ifdef __cplusplus
extern "C" {
#endif

WM_API_BEGIN

typedef struct wm_backend wm_backend_t;

// Negotiates with a plugin's query function, validates the required
// functions of each tier it declares and enumerates its targets. |origin|
// (a file name or "built-in") is used in messages.
wm_status_t wm_backend_create(wm_plugin_query_fn query, const char *origin,
                              wm_backend_t **out_backend) WM_MUST_USE_RESULT;
// Like wm_backend_create; the plugin also gets |num_threads| in
// wm_host_api.num_threads (0 = all cores), and the backend takes
// |dl_handle_take| (a dlopen handle or NULL), closing it on destroy or at
// once when loading fails.
wm_status_t wm_backend_create_ex(wm_plugin_query_fn query, const char *origin,
                                 uint32_t num_threads, void *dl_handle_take,
                                 wm_backend_t **out_backend) WM_MUST_USE_RESULT;
// Frees a backend (and closes its library, if it has one); accepts NULL.
void wm_backend_destroy(wm_backend_t *backend);
// Returns the backend's short name, e.g. "ref".
const char *wm_backend_name(const wm_backend_t *backend);
// Returns the plugin's version string.
const char *wm_backend_version(const wm_backend_t *backend);
// Returns where the backend came from: a file name or "built-in".
const char *wm_backend_origin(const wm_backend_t *backend);
// Returns what the plugin's get_info answered (name, vendor, version...).
const wm_plugin_info *wm_backend_info(const wm_backend_t *backend);
// Returns the thread count the plugin was given (0 = all cores).
uint32_t wm_backend_num_threads(const wm_backend_t *backend);
// Returns the negotiated API table.
const wm_plugin_api *wm_backend_api(const wm_backend_t *backend);
// Returns the number of targets (devices) the backend enumerated.
uint32_t wm_backend_target_count(const wm_backend_t *backend);
// Returns target |i| (0 <= i < count).
const wm_target_desc *wm_backend_target(const wm_backend_t *backend,
                                        uint32_t i);
// Converts a plugin error into a status annotated with the backend name
// and |what| (the function called), destroying the plugin error; NULL
// stays NULL.
wm_status_t wm_backend_error(const wm_backend_t *backend, wm_error *error,
                             const char *what) WM_MUST_USE_RESULT;

// ------------------------------------------------------------ registry

// The backends found on this system: the built-in one and the plugins
// found on the search path (src/plugin/loader.c; docs/backend-abi.md,
// "Discovery"). Thread-safety: immutable after creation; lookups may run
// on several threads.
typedef struct wm_registry wm_registry_t;

typedef struct wm_registry_options {
  const char *const *paths;  // --backend-path entries (folders or .so files)
  size_t n_paths;            // number of |paths|
  uint32_t num_threads;      // wm_host_api.num_threads (0 = all cores)
  bool debug;                // trace every candidate (or WMAP_LOADER_DEBUG=1)
  bool quiet;                // no warning line per refused candidate
  bool no_env;               // ignore WMAP_BACKEND_PATH
  // The install's own backend folder; NULL = found from where libwmap
  // lives: <dir of libwmap.so>/wmap/backends, or for a program linked with
  // libwmap.a <exe dir>/../lib/wmap/backends, else <dir>/backends (the
  // build tree), else <configured prefix>/lib/wmap/backends; "" = none.
  const char *install_dir;
  // The built-in backend or NULL: wm_ref_plugin_query gives ref.
  wm_plugin_query_fn builtin_query;
} wm_registry_options_t;

// The reference backend's query, built into libwmap: the oracle the
// other backends are compared with, on every operator; pass it as
// wm_registry_options_t.builtin_query, or to wm_backend_create.
wm_error *wm_ref_plugin_query(uint32_t host_major, uint32_t host_max_minor,
                              const wm_host_api *host,
                              const wm_plugin_api **out_api);

// Why a candidate was refused, for callers that report only some kinds.
typedef enum wm_refusal_kind {
  WM_REFUSAL_UNUSABLE = 0,   // dlopen failed, no wm_plugin_query, another
                             //   ABI, missing functions, a failing query,
                             //   get_info or enumerate, malformed answers
  WM_REFUSAL_NOT_FOUND = 1,  // a path the caller named does not exist or
                             //   holds no plugin
  WM_REFUSAL_FAULT = 2,      // it crashed, exited or hung while probed
  WM_REFUSAL_CONFLICT = 3,   // its name is loaded from another file
} wm_refusal_kind_t;

// Registers the built-in backend and loads every plugin found in order:
// |paths|, WMAP_BACKEND_PATH, the install's backend folder. Each plugin
// file not known good is first loaded in a forked child (dlopen, query,
// get_info, enumerate) within WMAP_PLUGIN_PROBE_TIMEOUT seconds (default
// 10; 0: no probe); one that crashes, exits or hangs there is refused and
// never loaded here. Verdicts are cached in wmap's cache folder
// (plugins.json) by real path, size and modification time. A plugin that
// cannot be loaded is refused (one line why) and the others still load;
// fails only when out of memory. |opts| may be NULL (defaults).
wm_status_t wm_registry_create(const wm_registry_options_t *opts,
                               wm_registry_t **out_registry) WM_MUST_USE_RESULT;
// Frees the registry and every backend it holds; accepts NULL.
void wm_registry_destroy(wm_registry_t *registry);
// Finds the backend named |name| (borrowed, lives as long as the
// registry); NOT_FOUND lists the available names.
wm_status_t wm_registry_find(const wm_registry_t *registry, const char *name,
                             wm_backend_t **out_backend) WM_MUST_USE_RESULT;
// Like wm_registry_find, but removes the backend from the registry and
// gives it to the caller (wm_backend_destroy frees it).
wm_status_t wm_registry_take(wm_registry_t *registry, const char *name,
                             wm_backend_t **out_backend) WM_MUST_USE_RESULT;
// Returns the number of loaded backends.
size_t wm_registry_count(const wm_registry_t *registry);
// Returns loaded backend |i| (0 <= i < count): plugins in the order found,
// the built-in one last.
wm_backend_t *wm_registry_backend(const wm_registry_t *registry, size_t i);
// Returns the number of refused candidates.
size_t wm_registry_refused_count(const wm_registry_t *registry);
// Returns the path of refused candidate |i| ("built-in" for the built-in).
const char *wm_registry_refused_path(const wm_registry_t *registry, size_t i);
// Returns why candidate |i| was refused (one line).
const char *wm_registry_refused_reason(const wm_registry_t *registry, size_t i);
// Returns what kind of refusal candidate |i| got.
wm_refusal_kind_t wm_registry_refused_kind(const wm_registry_t *registry,
                                           size_t i);
// Checks a path given as a search-path entry before any registry opens
// it: NOT_FOUND when it does not exist or is a folder without
// libwmap_backend_*.so files, INVALID_ARGUMENT when it is a file that is
// not a shared library; the message names the path.
wm_status_t wm_registry_check_path(const char *path) WM_MUST_USE_RESULT;

WM_API_END

#ifdef __cplusplus
}
#endif

#endif  // WMAP_PLUGIN_H_
