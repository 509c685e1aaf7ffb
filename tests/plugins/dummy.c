// A good minimal plugin named "dummy": a device tier on host memory, no
// library tier, so it claims no operator. Built twice (dummy and
// dummy_again) to test that the first of two same-named plugins wins.
#include "plugin_common.h"

static const char *const features[] = {"test=1"};

static wm_error *get_info(wm_plugin_info *out_info) {
  tp_info(out_info, "dummy");
  out_info->n_features = 1;
  out_info->features = features;
  return NULL;
}

static const wm_device_tier device = {TP_DEVICE_TIER_FIELDS};

static wm_plugin_api api = {
    .get_info = get_info,
    .enumerate = tp_enumerate,
    .device = &device,
    TP_API_FIELDS,
};

wm_error *wm_plugin_query(uint32_t host_major, uint32_t host_max_minor,
                          const wm_host_api *host,
                          const wm_plugin_api **out_api) {
  *out_api = &api;
  wm_error *e = tp_negotiate(host_major, host_max_minor, &api);
  if (!e && host && host->log) {
    host->log(host->ctx, WM_LOG_LEVEL_DEBUG, __FILE__, __LINE__,
              "dummy: loaded");
  }
  return e;
}
