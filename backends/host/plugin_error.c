// Plugin-side error objects and ABI negotiation (see plugin_error.h).
#include "plugin_error.h"

#include <stdio.h>
#include <stdlib.h>

// The error handed out when even an error cannot be allocated.
static wm_error oom_error = {WM_ERR_RESOURCE_EXHAUSTED, NULL};

wm_error *wm_host_error_createv(int32_t code, const char *fmt, va_list ap) {
  wm_error *e = malloc(sizeof(*e));
  if (!e) {
    return &oom_error;
  }
  e->code = code;
  va_list copy;
  va_copy(copy, ap);
  int n = vsnprintf(NULL, 0, fmt, copy);
  va_end(copy);
  e->message = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (e->message) {
    vsnprintf(e->message, (size_t)n + 1, fmt, ap);
  }
  return e;
}

wm_error *wm_host_error_create(int32_t code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wm_error *e = wm_host_error_createv(code, fmt, ap);
  va_end(ap);
  return e;
}

wm_error *wm_host_error_oom(void) {
  return &oom_error;
}

int32_t wm_host_error_code(const wm_error *e) {
  return e->code;
}

const char *wm_host_error_message(const wm_error *e) {
  return e->message ? e->message : "out of memory";
}

void wm_host_error_destroy(wm_error *e) {
  if (e && e != &oom_error) {
    free(e->message);
    free(e);
  }
}

wm_error *wm_host_negotiate(const char *name, uint32_t host_major,
                            uint32_t host_max_minor, wm_plugin_api *api) {
  if (host_major != WM_ABI_MAJOR) {
    return wm_host_error_create(WM_ERR_INCOMPATIBLE,
                                "%s speaks ABI %d.%d, host asked for major %u",
                                name, WM_ABI_MAJOR, WM_ABI_MINOR, host_major);
  }
  api->abi_major = WM_ABI_MAJOR;
  api->abi_minor =
      host_max_minor < WM_ABI_MINOR ? host_max_minor : WM_ABI_MINOR;
  return NULL;
}
