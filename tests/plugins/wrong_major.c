// A plugin that ignores negotiation and answers ABI major + 1: the host
// must refuse it naming both versions.
#include "plugin_common.h"

static wm_error *get_info(wm_plugin_info *out_info) {
  out_info->name = "wrong_major";
  return NULL;
}

static const wm_device_tier device = {TP_DEVICE_TIER_FIELDS};

static const wm_plugin_api api = {
    .abi_major = WM_ABI_MAJOR + 1,  // not negotiated: answers the next major
    .abi_minor = 0,
    .get_info = get_info,
    .enumerate = tp_enumerate,
    .device = &device,
    TP_API_FIELDS,
};

wm_error *wm_plugin_query(uint32_t host_major, uint32_t host_max_minor,
                          const wm_host_api *host,
                          const wm_plugin_api **out_api) {
  (void)host_major;
  (void)host_max_minor;
  (void)host;
  *out_api = &api;
  return NULL;
}
