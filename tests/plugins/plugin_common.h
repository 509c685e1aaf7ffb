// Shared pieces of the test plugins: plugin-owned errors and a device tier
// on host memory. Each plugin includes this once and uses what it needs;
// like a vendor plugin, it depends on include/wmap/backend.h only.
#ifndef WMAP_TESTS_PLUGINS_PLUGIN_COMMON_H_
#define WMAP_TESTS_PLUGINS_PLUGIN_COMMON_H_

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wmap/backend.h"

WM_EXPORT wm_error *wm_plugin_query(uint32_t host_major,
                                    uint32_t host_max_minor,
                                    const wm_host_api *host,
                                    const wm_plugin_api **out_api);

struct wm_error {
  int32_t code;    // WM_ERR_*
  char text[256];  // message
};

struct wm_buffer {
  uint64_t size;  // bytes
  void *data;     // host memory
};

struct wm_device {
  int unused;  // one static device
};

struct wm_stream {
  int unused;  // one static stream; work is done at once
};

static struct wm_device tp_device;
static struct wm_stream tp_stream;
static struct wm_error tp_oom = {WM_ERR_RESOURCE_EXHAUSTED, "out of memory"};

static inline wm_error *tp_error(int32_t code, const char *fmt, ...) {
  wm_error *e = malloc(sizeof(*e));
  if (!e) {
    return &tp_oom;
  }
  e->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->text, sizeof(e->text), fmt, ap);
  va_end(ap);
  return e;
}

static inline int32_t tp_error_code(const wm_error *e) {
  return e->code;
}

static inline const char *tp_error_message(const wm_error *e) {
  return e->text;
}

static inline void tp_error_destroy(wm_error *e) {
  if (e != &tp_oom) {
    free(e);
  }
}

static inline wm_error *tp_mem_alloc(wm_device *dev, uint64_t bytes,
                                     uint64_t align, uint32_t kind,
                                     wm_buffer **out_buffer) {
  (void)dev;
  (void)align;
  (void)kind;
  *out_buffer = NULL;
  wm_buffer *b = calloc(1, sizeof(*b));
  if (!b || (bytes > 0 && !(b->data = calloc(1, (size_t)bytes)))) {
    free(b);
    return &tp_oom;
  }
  b->size = bytes;
  *out_buffer = b;
  return NULL;
}

static inline void tp_mem_free(wm_buffer *b) {
  if (b) {
    free(b->data);
    free(b);
  }
}

static inline wm_error *tp_check(const wm_buffer *b, uint64_t off,
                                 uint64_t bytes) {
  if (off > b->size || bytes > b->size - off) {
    return tp_error(WM_ERR_OUT_OF_RANGE,
                    "copy of %llu bytes at %llu: buffer has %llu",
                    (unsigned long long)bytes, (unsigned long long)off,
                    (unsigned long long)b->size);
  }
  return NULL;
}

static inline wm_error *tp_copy_h2d(wm_stream *s, const void *src,
                                    wm_buffer *dst, uint64_t off,
                                    uint64_t bytes) {
  (void)s;
  wm_error *e = tp_check(dst, off, bytes);
  if (!e && bytes) {
    memcpy((char *)dst->data + off, src, (size_t)bytes);
  }
  return e;
}

static inline wm_error *tp_copy_d2h(wm_stream *s, wm_buffer *src, uint64_t off,
                                    void *dst, uint64_t bytes) {
  (void)s;
  wm_error *e = tp_check(src, off, bytes);
  if (!e && bytes) {
    memcpy(dst, (char *)src->data + off, (size_t)bytes);
  }
  return e;
}

static inline wm_error *tp_copy_d2d(wm_stream *s, wm_buffer *src,
                                    uint64_t src_off, wm_buffer *dst,
                                    uint64_t dst_off, uint64_t bytes) {
  (void)s;
  wm_error *e = tp_check(src, src_off, bytes);
  if (!e) {
    e = tp_check(dst, dst_off, bytes);
  }
  if (!e && bytes) {
    memmove((char *)dst->data + dst_off, (char *)src->data + src_off,
            (size_t)bytes);
  }
  return e;
}

static inline wm_error *tp_stream_create(wm_device *dev,
                                         wm_stream **out_stream) {
  (void)dev;
  *out_stream = &tp_stream;
  return NULL;
}

static inline void tp_stream_destroy(wm_stream *s) {
  (void)s;
}

static inline wm_error *tp_stream_sync(wm_stream *s) {
  (void)s;
  return NULL;
}

static inline void tp_device_close(wm_device *dev) {
  (void)dev;
}

static inline wm_error *tp_mem_map(wm_buffer *b, void **out_host_ptr) {
  *out_host_ptr = b->data;
  return NULL;
}

static inline void tp_mem_unmap(wm_buffer *b) {
  (void)b;
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

#define TP_DEVICE_TIER_FIELDS                                                \
  .struct_size = sizeof(wm_device_tier), .mem_alloc = tp_mem_alloc,          \
  .mem_free = tp_mem_free, .copy_h2d = tp_copy_h2d, .copy_d2h = tp_copy_d2h, \
  .copy_d2d = tp_copy_d2d, .stream_create = tp_stream_create,                \
  .stream_destroy = tp_stream_destroy, .stream_sync = tp_stream_sync,        \
  .device_close = tp_device_close, .mem_map = tp_mem_map,                    \
  .mem_unmap = tp_mem_unmap

// Fills the negotiated versions of |api| (a plugin's static table copy).
static inline wm_error *tp_negotiate(uint32_t host_major,
                                     uint32_t host_max_minor,
                                     wm_plugin_api *api) {
  if (host_major != WM_ABI_MAJOR) {
    return tp_error(WM_ERR_INCOMPATIBLE, "plugin speaks ABI %d.%d, host %u",
                    WM_ABI_MAJOR, WM_ABI_MINOR, host_major);
  }
  api->abi_major = WM_ABI_MAJOR;
  api->abi_minor =
      host_max_minor < WM_ABI_MINOR ? host_max_minor : WM_ABI_MINOR;
  return NULL;
}

#endif  // WMAP_TESTS_PLUGINS_PLUGIN_COMMON_H_
