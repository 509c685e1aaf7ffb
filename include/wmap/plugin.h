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

typedef struct wm_backend wm_backend_t;

// Negotiates with a plugin's query function, validates the required
// functions of each tier it declares and enumerates its targets. |origin|
// (a file name or "built-in") is used in messages.
wm_status_t wm_backend_create(wm_plugin_query_fn query, const char *origin,
                              wm_backend_t **out_backend) WM_MUST_USE_RESULT;
// Frees a backend; accepts NULL.
void wm_backend_destroy(wm_backend_t *backend);
// Returns the backend's short name, e.g. "ref".
const char *wm_backend_name(const wm_backend_t *backend);
// Returns the plugin's version string.
const char *wm_backend_version(const wm_backend_t *backend);
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

#ifdef __cplusplus
}
#endif

#endif  // WMAP_PLUGIN_H_
