// A plugin whose tables are complete but whose enumerate fails: the host
// must refuse it with the plugin's message.
#include "plugin_common.h"

static wm_error *get_info(wm_plugin_info *out_info) {
  out_info->name = "bad_enumerate";
  return NULL;
}

static wm_error *enumerate(const wm_target_desc *const **out_targets,
                           uint32_t *out_count) {
  *out_targets = NULL;
  *out_count = 0;
  return tp_error(WM_ERR_DEVICE_LOST,
                  "bad_enumerate: device 0 fell off the bus (on purpose)");
}

static const wm_device_tier device = {TP_DEVICE_TIER_FIELDS};

static wm_plugin_api api = {
    .get_info = get_info,
    .enumerate = enumerate,
    .device = &device,
    TP_API_FIELDS,
};

TP_PLUGIN_QUERY(api)
