// Hostile plugins: each misbehaves one way, chosen by HOSTILE_<KIND> at
// build time (tests/plugins/CMakeLists.txt builds one file per kind into
// the folder hostile/). The host must refuse every one of them, naming
// the file and what happened, and keep working with the good plugins.
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "plugin_common.h"

// Never returns (and costs no CPU while the host waits for it).
__attribute__((unused)) static void hang(void) {
  for (;;) {
    sleep(1);
  }
}

// A real invalid access, not raise(): the host sees what a bug does.
__attribute__((unused)) static void segfault(void) {
  volatile int *volatile bad = (volatile int *)(uintptr_t)16;
  *bad = 1;
}

#if defined(HOSTILE_EXIT7_CTOR) || defined(HOSTILE_HANG_CTOR)
__attribute__((constructor)) static void on_load(void) {
#ifdef HOSTILE_EXIT7_CTOR
  exit(7);
#else
  hang();
#endif
}
#endif

#if defined(HOSTILE_LONG_NAME)
#define NAME \
  "a_name_of_seventy_characters_is_longer_than_any_backend_name_may_be_x"
#elif defined(HOSTILE_SPACED_NAME)
#define NAME "my backend"
#elif defined(HOSTILE_UPPER_NAME)
#define NAME "Dummy2"
#elif defined(HOSTILE_DUP_REF)
#define NAME "ref"
#else
#define NAME "hostile"
#endif

// 300 characters: more than any string a plugin may answer.
#define TEN "0123456789"
#define HUNDRED TEN TEN TEN TEN TEN TEN TEN TEN TEN TEN

static wm_error *get_info(wm_plugin_info *out_info) {
#ifdef HOSTILE_ABORT_INFO
  abort();
#endif
  tp_info(out_info, NAME);
#ifdef HOSTILE_LONG_VERSION
  out_info->version = HUNDRED HUNDRED HUNDRED;
#endif
#ifdef HOSTILE_BAD_UTF8
  out_info->vendor = "wmap tests \xff\xfe";
#endif
  return NULL;
}

#ifdef HOSTILE_TARGET_SIZE
static const wm_target_desc small_target = {
    .struct_size = 4,
    .name = "a description of 4 bytes",
};
static const wm_target_desc *const small_targets[] = {&small_target};
#endif

static wm_error *enumerate(const wm_target_desc *const **out_targets,
                           uint32_t *out_count) {
#ifdef HOSTILE_EXIT0_ENUMERATE
  exit(0);
#endif
#ifdef HOSTILE_TARGET_SIZE
  *out_targets = small_targets;
  *out_count = 1;
  return NULL;
#else
  return tp_enumerate(out_targets, out_count);
#endif
}

static const wm_device_tier device = {TP_DEVICE_TIER_FIELDS};

static wm_plugin_api api = {
    .get_info = get_info,
    .enumerate = enumerate,
#ifndef HOSTILE_NULL_DEVICE
    .device = &device,
#endif
    TP_API_FIELDS,
};

wm_error *wm_plugin_query(uint32_t host_major, uint32_t host_max_minor,
                          const wm_host_api *host,
                          const wm_plugin_api **out_api) {
  (void)host;
  (void)device;
#ifdef HOSTILE_SEGV_QUERY
  segfault();
#endif
#ifdef HOSTILE_HANG_QUERY
  hang();
#endif
#ifdef HOSTILE_NO_TABLE
  *out_api = NULL;
  return NULL;
#endif
  wm_error *e = tp_hand_out(&api, host_major, host_max_minor, out_api);
#ifdef HOSTILE_API_SIZE
  api.struct_size = 8;
#endif
  return e;
}
