// A device tier on host memory, shared by the backends whose device memory
// is host memory (ref, cpu, the test plugins). Depends on libc and
// include/wmap/backend.h only; linked statically and hidden, so each
// plugin carries its own copy.
//
// The tier defines wm_buffer, wm_stream and wm_event (plugin_error.h
// defines wm_error). The plugin defines wm_device (a target, a thread
// pool, ...) with its own device_open and device_close: mem_alloc and
// event_create ignore the device and stream_create only keeps the pointer.
// Streams are synchronous, so events are always done. Thread-safe as the ABI
// asks: one thread per stream, buffers not shared across concurrent copies.
#ifndef WMAP_BACKENDS_HOST_HOST_TIER_H_
#define WMAP_BACKENDS_HOST_HOST_TIER_H_

#include <stdarg.h>
#include <stdint.h>

#include "plugin_error.h"
#include "wmap/backend.h"

struct wm_buffer {
  void *data;     // 64-byte aligned host memory, zero-filled (or the host's)
  uint64_t size;  // bytes
  int owned;      // |data| is freed with the buffer (not mem_wrap_host's)
};

struct wm_stream {
  wm_device *dev;  // owning device; work runs synchronously
};

struct wm_event {
  int done;  // always 1: streams are synchronous
};

// The device tier's functions (see wm_device_tier in wmap/backend.h).
// mem_alloc rounds up to the alignment (at least 64 bytes), zero-fills, and
// refuses an alignment that is not a power of two up to 4096 or a size above
// 2^46 bytes.
wm_error *wm_host_mem_alloc(wm_device *dev, uint64_t bytes, uint64_t align,
                            uint32_t kind, wm_buffer **out_buffer);
void wm_host_mem_free(wm_buffer *buffer);
// mem_wrap_host: refuses a NULL or misaligned pointer with
// INVALID_ARGUMENT.
wm_error *wm_host_mem_wrap_host(wm_device *dev, void *host_ptr, uint64_t bytes,
                                wm_buffer **out_buffer);
wm_error *wm_host_mem_map(wm_buffer *buffer, void **out_host_ptr);
void wm_host_mem_unmap(wm_buffer *buffer);
// Copies refuse ranges outside their buffers with OUT_OF_RANGE.
wm_error *wm_host_copy_h2d(wm_stream *stream, const void *src, wm_buffer *dst,
                           uint64_t dst_offset, uint64_t bytes);
wm_error *wm_host_copy_d2h(wm_stream *stream, wm_buffer *src,
                           uint64_t src_offset, void *dst, uint64_t bytes);
wm_error *wm_host_copy_d2d(wm_stream *stream, wm_buffer *src,
                           uint64_t src_offset, wm_buffer *dst,
                           uint64_t dst_offset, uint64_t bytes);
wm_error *wm_host_stream_create(wm_device *dev, wm_stream **out_stream);
void wm_host_stream_destroy(wm_stream *stream);
wm_error *wm_host_stream_sync(wm_stream *stream);
wm_error *wm_host_event_create(wm_device *dev, wm_event **out_event);
wm_error *wm_host_event_record(wm_event *event, wm_stream *stream);
wm_error *wm_host_event_wait(wm_stream *stream, wm_event *event);
wm_error *wm_host_event_query(wm_event *event, uint32_t *out_done);
void wm_host_event_destroy(wm_event *event);

// Designated initializers of a wm_device_tier with every function above;
// the plugin adds its own device_close:
//   static const wm_device_tier tier = {WM_HOST_DEVICE_TIER_FIELDS,
//                                       .device_close = my_close};
#define WM_HOST_DEVICE_TIER_FIELDS                                            \
  .struct_size = sizeof(wm_device_tier), .mem_alloc = wm_host_mem_alloc,      \
  .mem_free = wm_host_mem_free, .copy_h2d = wm_host_copy_h2d,                 \
  .copy_d2h = wm_host_copy_d2h, .copy_d2d = wm_host_copy_d2d,                 \
  .stream_create = wm_host_stream_create,                                     \
  .stream_destroy = wm_host_stream_destroy,                                   \
  .stream_sync = wm_host_stream_sync, .mem_map = wm_host_mem_map,             \
  .mem_unmap = wm_host_mem_unmap, .event_create = wm_host_event_create,       \
  .event_record = wm_host_event_record, .event_wait = wm_host_event_wait,     \
  .event_query = wm_host_event_query, .event_destroy = wm_host_event_destroy, \
  .mem_wrap_host = wm_host_mem_wrap_host

#endif  // WMAP_BACKENDS_HOST_HOST_TIER_H_
