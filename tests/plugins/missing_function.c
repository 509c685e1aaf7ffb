// A plugin whose device tier lacks the required copy_d2h: the host must
// refuse it at load time, naming the missing function.
#include "plugin_common.h"

static wm_error *get_info(wm_plugin_info *out_info) {
  out_info->name = "missing_function";
  return NULL;
}

static const wm_device_tier device = {
    .struct_size = sizeof(wm_device_tier),
    .mem_alloc = wm_host_mem_alloc,
    .mem_free = wm_host_mem_free,
    .copy_h2d = wm_host_copy_h2d,
    .copy_d2d = wm_host_copy_d2d,
    .stream_create = wm_host_stream_create,
    .stream_destroy = wm_host_stream_destroy,
    .stream_sync = wm_host_stream_sync,
    .device_close = tp_device_close,
};

static wm_plugin_api api = {
    .get_info = get_info,
    .enumerate = tp_enumerate,
    .device = &device,
    TP_API_FIELDS,
};

TP_PLUGIN_QUERY(api)
