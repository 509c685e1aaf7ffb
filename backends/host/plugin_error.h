// Plugin-side error objects and ABI negotiation, shared by every plugin
// (the host-memory ones through host_tier.h, the device backends on their
// own). Depends on libc and include/wmap/backend.h only; linked statically
// and hidden, so each plugin carries its own copy. Thread-safe.
#ifndef WMAP_BACKENDS_HOST_PLUGIN_ERROR_H_
#define WMAP_BACKENDS_HOST_PLUGIN_ERROR_H_

#include <stdarg.h>
#include <stdint.h>

#include "wmap/backend.h"

struct wm_error {
  int32_t code;   // WM_ERR_*
  char *message;  // heap; NULL when out of memory
};

// Makes an error with a printf-formatted message; never NULL (the static
// out-of-memory error when it cannot be allocated).
wm_error *wm_host_error_create(int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
// wm_host_error_create with a va_list.
wm_error *wm_host_error_createv(int32_t code, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
// The static out-of-memory error (RESOURCE_EXHAUSTED); destroying it is a
// no-op.
wm_error *wm_host_error_oom(void);
// The code of |error|; the plugin table's error_code.
int32_t wm_host_error_code(const wm_error *error);
// The message of |error|, "out of memory" when it has none; the plugin
// table's error_message.
const char *wm_host_error_message(const wm_error *error);
// Frees |error| (accepts NULL and the static one); the plugin table's
// error_destroy.
void wm_host_error_destroy(wm_error *error);

// The plugin table's error functions as designated initializers.
#define WM_HOST_ERROR_FIELDS                                                \
  .error_code = wm_host_error_code, .error_message = wm_host_error_message, \
  .error_destroy = wm_host_error_destroy

// Negotiates the ABI for plugin |name| with its static table |api|: sets
// abi_major and the lower of the two minors, or returns INCOMPATIBLE
// naming both versions when the host speaks another major.
wm_error *wm_host_negotiate(const char *name, uint32_t host_major,
                            uint32_t host_max_minor, wm_plugin_api *api);

#endif  // WMAP_BACKENDS_HOST_PLUGIN_ERROR_H_
