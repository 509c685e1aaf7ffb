// A plugin whose device tier lacks the required copy_d2h: the host must
// refuse it at load time, naming the missing function.
#include "plugin_common.h"

static wm_error *get_info(wm_plugin_info *out_info) {
  out_info->name = "missing_function";
  return NULL;
}

static const wm_device_tier device = {
    .struct_size = sizeof(wm_device_tier),
    .mem_alloc = tp_mem_alloc,
    .mem_free = tp_mem_free,
    .copy_h2d = tp_copy_h2d,
    .copy_d2d = tp_copy_d2d,
    .stream_create = tp_stream_create,
    .stream_destroy = tp_stream_destroy,
    .stream_sync = tp_stream_sync,
    .device_close = tp_device_close,
};

static wm_plugin_api api = {
    .struct_size = sizeof(wm_plugin_api),
    .get_info = get_info,
    .enumerate = tp_enumerate,
    .device_open = tp_device_open,
    .error_code = tp_error_code,
    .error_message = tp_error_message,
    .error_destroy = tp_error_destroy,
    .device = &device,
};

wm_error *wm_plugin_query(uint32_t host_major, uint32_t host_max_minor,
                          const wm_host_api *host,
                          const wm_plugin_api **out_api) {
  (void)host;
  *out_api = &api;
  return tp_negotiate(host_major, host_max_minor, &api);
}
