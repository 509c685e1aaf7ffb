// A plugin whose wm_plugin_query fails (no usable device driver), handing
// out its table so the host can read and free the error.
#include "plugin_common.h"

static const wm_plugin_api api = {
    .struct_size = sizeof(wm_plugin_api),
    .abi_major = WM_ABI_MAJOR,
    .abi_minor = WM_ABI_MINOR,
    WM_HOST_ERROR_FIELDS,
};

wm_error *wm_plugin_query(uint32_t host_major, uint32_t host_max_minor,
                          const wm_host_api *host,
                          const wm_plugin_api **out_api) {
  (void)host_major;
  (void)host_max_minor;
  (void)host;
  *out_api = &api;
  return tp_error(WM_ERR_UNAVAILABLE,
                  "query_error: no device driver found (on purpose)");
}
