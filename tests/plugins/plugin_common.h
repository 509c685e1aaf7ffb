// Shared pieces of the test plugins: one static device and target over the
// shared host tier (backends/host: plugin-owned errors and a device tier on
// host memory). Each plugin includes this once and uses what it needs;
// like a vendor plugin, it depends on include/wmap/backend.h and that
// tier only.
#ifndef WMAP_TESTS_PLUGINS_PLUGIN_COMMON_H_
#define WMAP_TESTS_PLUGINS_PLUGIN_COMMON_H_

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "host_tier.h"
#include "wmap/backend.h"

WM_EXPORT wm_error *wm_plugin_query(uint32_t host_major,
                                    uint32_t host_max_minor,
                                    const wm_host_api *host,
                                    const wm_plugin_api **out_api);

struct wm_device {
  int unused;  // one static device
};

static struct wm_device tp_device;

// Short names of the shared host tier's errors, also used by
// src/plugin/loader_test.c.
#define tp_error wm_host_error_create
#define tp_error_code wm_host_error_code
#define tp_error_message wm_host_error_message
#define tp_error_destroy wm_host_error_destroy

static inline void tp_device_close(wm_device *dev) {
  (void)dev;
}

// The one target: host memory, float32 only.
static const wm_target_desc tp_target = {
    .struct_size = sizeof(wm_target_desc),
    .name = "test plugin (host memory)",
    .vendor = "wmap tests",
    .kind = WM_TARGET_CPU,
    .index = 0,
    .memory_bytes = 1u << 20,
    .compute_units = 1,
    .dtype_mask = 1u << 1,
};
static const wm_target_desc *const tp_targets[] = {&tp_target};

static inline wm_error *tp_enumerate(const wm_target_desc *const **out_targets,
                                     uint32_t *out_count) {
  *out_targets = tp_targets;
  *out_count = 1;
  return NULL;
}

static inline wm_error *tp_device_open(const wm_target_desc *target,
                                       wm_device **out_device) {
  if (target != &tp_target) {
    *out_device = NULL;
    return tp_error(WM_ERR_INVALID_ARGUMENT, "device_open: unknown target");
  }
  *out_device = &tp_device;
  return NULL;
}

// The shared host tier with the static device's close.
#define TP_DEVICE_TIER_FIELDS \
  WM_HOST_DEVICE_TIER_FIELDS, .device_close = tp_device_close

// Fills the negotiated versions of |api| (a plugin's static table copy).
static inline wm_error *tp_negotiate(uint32_t host_major,
                                     uint32_t host_max_minor,
                                     wm_plugin_api *api) {
  return wm_host_negotiate("plugin", host_major, host_max_minor, api);
}

// The plugin table's fields the test plugins share; each adds get_info,
// enumerate and its tiers.
#define TP_API_FIELDS                                                  \
  .struct_size = sizeof(wm_plugin_api), .device_open = tp_device_open, \
  WM_HOST_ERROR_FIELDS

// A query function's body: hands out |api| (a plugin's static
// wm_plugin_api) and negotiates.
static inline wm_error *tp_hand_out(wm_plugin_api *api, uint32_t host_major,
                                    uint32_t host_max_minor,
                                    const wm_plugin_api **out_api) {
  *out_api = api;
  return tp_negotiate(host_major, host_max_minor, api);
}

// A get_info's body for a plugin named |name| with no features.
static inline wm_error *tp_info(wm_plugin_info *out, const char *name) {
  out->name = name;
  out->vendor = "wmap tests";
  out->version = "0.0.1";
  out->n_features = 0;
  out->features = NULL;
  out->sanitizer = WM_SANITIZER_NONE;
  return NULL;
}

// Defines the exported wm_plugin_query: hands out |api| (the plugin's
// static wm_plugin_api) and negotiates.
#define TP_PLUGIN_QUERY(api)                                              \
  wm_error *wm_plugin_query(uint32_t host_major, uint32_t host_max_minor, \
                            const wm_host_api *host,                      \
                            const wm_plugin_api **out_api) {              \
    (void)host;                                                           \
    return tp_hand_out(&(api), host_major, host_max_minor, out_api);      \
  }

#endif  // WMAP_TESTS_PLUGINS_PLUGIN_COMMON_H_
