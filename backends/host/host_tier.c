// The host-memory device tier (see host_tier.h).
#include "host_tier.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------- memory

wm_error *wm_host_mem_alloc(wm_device *dev, uint64_t bytes, uint64_t align,
                            uint32_t kind, wm_buffer **out) {
  (void)dev;
  (void)kind;
  *out = NULL;
  if (align > 4096 || (align & (align - 1))) {
    return wm_host_error_create(WM_ERR_INVALID_ARGUMENT,
                                "mem_alloc: alignment %llu is not a power of "
                                "two up to 4096",
                                (unsigned long long)align);
  }
  // aligned_alloc wants a size that is a multiple of the alignment.
  uint64_t a = align > 64 ? align : 64;
  uint64_t rounded = (bytes + a - 1) & ~(a - 1);
  if (rounded < bytes || rounded > ((uint64_t)1 << 46)) {
    return wm_host_error_create(WM_ERR_RESOURCE_EXHAUSTED,
                                "mem_alloc: cannot allocate %llu bytes",
                                (unsigned long long)bytes);
  }
  size_t n = rounded ? (size_t)rounded : (size_t)a;
  wm_buffer *b = malloc(sizeof(*b));
  void *data = aligned_alloc((size_t)a, n);
  if (!b || !data) {
    free(b);
    free(data);
    return wm_host_error_create(WM_ERR_RESOURCE_EXHAUSTED,
                                "mem_alloc: out of memory allocating %llu "
                                "bytes",
                                (unsigned long long)bytes);
  }
  memset(data, 0, n);
  b->data = data;
  b->size = bytes;
  b->owned = 1;
  *out = b;
  return NULL;
}

wm_error *wm_host_mem_wrap_host(wm_device *dev, void *host_ptr, uint64_t bytes,
                                wm_buffer **out) {
  (void)dev;
  *out = NULL;
  if (!host_ptr || ((uintptr_t)host_ptr & 15)) {
    return wm_host_error_create(WM_ERR_INVALID_ARGUMENT,
                                "mem_wrap_host: %p is not 16-byte aligned "
                                "host memory",
                                host_ptr);
  }
  wm_buffer *b = malloc(sizeof(*b));
  if (!b) {
    return wm_host_error_oom();
  }
  b->data = host_ptr;
  b->size = bytes;
  b->owned = 0;
  *out = b;
  return NULL;
}

void wm_host_mem_free(wm_buffer *b) {
  if (b) {
    if (b->owned) {
      free(b->data);
    }
    free(b);
  }
}

wm_error *wm_host_mem_map(wm_buffer *b, void **out) {
  *out = b->data;
  return NULL;
}

void wm_host_mem_unmap(wm_buffer *b) {
  (void)b;
}

// ------------------------------------------------------------- copies

static wm_error *check_range(const wm_buffer *b, uint64_t off, uint64_t n,
                             const char *what) {
  if (off > b->size || n > b->size - off) {
    return wm_host_error_create(WM_ERR_OUT_OF_RANGE,
                                "%s of %llu bytes at offset %llu exceeds "
                                "buffer of %llu bytes",
                                what, (unsigned long long)n,
                                (unsigned long long)off,
                                (unsigned long long)b->size);
  }
  return NULL;
}

wm_error *wm_host_copy_h2d(wm_stream *s, const void *src, wm_buffer *dst,
                           uint64_t off, uint64_t n) {
  (void)s;
  wm_error *e = check_range(dst, off, n, "copy_h2d");
  if (!e && n) {
    memcpy((char *)dst->data + off, src, (size_t)n);
  }
  return e;
}

wm_error *wm_host_copy_d2h(wm_stream *s, wm_buffer *src, uint64_t off,
                           void *dst, uint64_t n) {
  (void)s;
  wm_error *e = check_range(src, off, n, "copy_d2h");
  if (!e && n) {
    memcpy(dst, (char *)src->data + off, (size_t)n);
  }
  return e;
}

wm_error *wm_host_copy_d2d(wm_stream *s, wm_buffer *src, uint64_t src_off,
                           wm_buffer *dst, uint64_t dst_off, uint64_t n) {
  (void)s;
  wm_error *e = check_range(src, src_off, n, "copy_d2d source");
  if (!e) {
    e = check_range(dst, dst_off, n, "copy_d2d destination");
  }
  if (!e && n) {
    memmove((char *)dst->data + dst_off, (char *)src->data + src_off,
            (size_t)n);
  }
  return e;
}

// ---------------------------------------------------- streams, events

wm_error *wm_host_stream_create(wm_device *dev, wm_stream **out) {
  *out = NULL;
  wm_stream *s = malloc(sizeof(*s));
  if (!s) {
    return wm_host_error_create(WM_ERR_RESOURCE_EXHAUSTED,
                                "out of memory creating a stream");
  }
  s->dev = dev;
  *out = s;
  return NULL;
}

void wm_host_stream_destroy(wm_stream *s) {
  free(s);
}

wm_error *wm_host_stream_sync(wm_stream *s) {
  (void)s;
  return NULL;
}

wm_error *wm_host_event_create(wm_device *dev, wm_event **out) {
  (void)dev;
  *out = NULL;
  wm_event *e = malloc(sizeof(*e));
  if (!e) {
    return wm_host_error_create(WM_ERR_RESOURCE_EXHAUSTED,
                                "out of memory creating an event");
  }
  e->done = 1;
  *out = e;
  return NULL;
}

wm_error *wm_host_event_record(wm_event *e, wm_stream *s) {
  (void)s;
  e->done = 1;
  return NULL;
}

wm_error *wm_host_event_wait(wm_stream *s, wm_event *e) {
  (void)s;
  (void)e;
  return NULL;
}

wm_error *wm_host_event_query(wm_event *e, uint32_t *out_done) {
  *out_done = (uint32_t)e->done;
  return NULL;
}

void wm_host_event_destroy(wm_event *e) {
  free(e);
}
