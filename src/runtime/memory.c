// Backend memory for sessions: the arena each slot's plans share, pooled
// buffers for values whose size is known only while running, persistent
// buffers for constants, host <-> device transfers, and the offset
// assignment that lays a plan's values out in its arena.
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// The pool keeps at most this many bytes per backend, or twice the peak of
// live dynamic bytes when that is more.
enum { POOL_FLOOR_BYTES = 256 << 20 };
// Alignment of arena regions and buffers.
enum { ALIGN = 64 };

wm_status_t rt_slot_error(const rt_backend_t *b, wm_error *e,
                          const char *what) {
  return wm_backend_error(b->backend, e, what);
}

wm_shape_t rt_shape_of(const wm_tensor_desc *d) {
  wm_shape_t s;
  memset(&s, 0, sizeof(s));
  s.rank = (int32_t)(d->rank <= WM_MAX_RANK ? d->rank : WM_MAX_RANK);
  for (int32_t i = 0; i < s.rank; i++) {
    s.dims[i] = d->dims[i];
  }
  return s;
}

bool rt_desc_bytes(const wm_tensor_desc *d, uint64_t *out) {
  wm_shape_t shape = rt_shape_of(d);
  size_t count, bytes;
  if (!wm_shape_numel(&shape, &count) ||
      !wm_checked_mul(count, wm_dtype_size((wm_dtype_t)d->dtype), &bytes)) {
    return false;
  }
  *out = bytes;
  return true;
}

static void free_buffer(rt_backend_t *b, wm_buffer *buf) {
  if (b->mappable && b->api->device->mem_unmap) {
    b->api->device->mem_unmap(buf);
  }
  b->api->device->mem_free(buf);
}

wm_status_t rt_open_slot(wm_session_t *s, size_t slot) {
  rt_backend_t *b = &s->slots[slot];
  if (b->stream) {
    return NULL;
  }
  if (!b->dev) {
    WM_RETURN_IF_ERROR(rt_slot_error(b, b->api->device_open(b->target, &b->dev),
                                     "device_open"));
  }
  return rt_slot_error(b, b->api->device->stream_create(b->dev, &b->stream),
                       "stream_create");
}

// Allocates |bytes| on |b| with its mapping in *out_host (NULL when the
// backend does not map).
static wm_status_t alloc_mapped(rt_backend_t *b, uint64_t bytes,
                                wm_buffer **out_buf, void **out_host) {
  *out_buf = NULL;
  *out_host = NULL;
  WM_RETURN_IF_ERROR(
      rt_slot_error(b,
                    b->api->device->mem_alloc(b->dev, bytes ? bytes : 1, ALIGN,
                                              WM_MEM_DEVICE_LOCAL, out_buf),
                    "mem_alloc"));
  if (!b->mappable) {
    return NULL;
  }
  wm_status_t st =
      rt_slot_error(b, b->api->device->mem_map(*out_buf, out_host), "mem_map");
  if (st) {
    b->api->device->mem_free(*out_buf);
    *out_buf = NULL;
  }
  return st;
}

wm_status_t rt_arena_reserve(wm_session_t *s, size_t slot, uint64_t bytes) {
  rt_backend_t *b = &s->slots[slot];
  if (bytes <= b->arena_bytes) {
    return NULL;
  }
  WM_RETURN_IF_ERROR(rt_open_slot(s, slot));
  wm_buffer *buf;
  void *host;
  WM_RETURN_IF_ERROR(alloc_mapped(b, bytes, &buf, &host));
  if (b->arena) {
    free_buffer(b, b->arena);
  }
  b->arena = buf;
  b->arena_host = host;
  b->arena_bytes = bytes;
  s->generation++;
  return NULL;
}

// Rounds |bytes| up to its size class: 8 classes per power of two (at
// most 12.5 % slack), so tensors of nearby sizes share pooled buffers.
static uint64_t size_class(uint64_t bytes) {
  if (bytes <= 256) {
    return 256;
  }
  int top = 63 - __builtin_clzll(bytes - 1);  // 2^top < bytes <= 2^(top+1)
  uint64_t step = (uint64_t)1 << (top - 2);
  return (bytes + step - 1) / step * step;
}

wm_status_t rt_alloc_dynamic(wm_session_t *s, size_t slot,
                             const wm_tensor_desc *desc, rt_loc_t *loc) {
  rt_backend_t *b = &s->slots[slot];
  memset(loc, 0, sizeof(*loc));
  WM_RETURN_IF_ERROR(rt_open_slot(s, slot));
  uint64_t bytes;
  if (!rt_desc_bytes(desc, &bytes)) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "tensor is too large");
  }
  bool strings = desc->dtype == WM_DTYPE_STRING;
  if (strings && !b->mappable) {
    return WM_ERROR(UNIMPLEMENTED,
                    "backend \"%s\" cannot hold string tensors (its memory "
                    "is not host-visible)",
                    wm_backend_name(b->backend));
  }
  uint64_t want = strings ? bytes : size_class(bytes);
  for (size_t k = b->n_pool; !strings && k-- > 0;) {
    if (b->pool[k].bytes == want) {
      loc->buf = b->pool[k].buf;
      loc->host = b->pool[k].host;
      b->pool_bytes -= want;
      b->pool[k] = b->pool[--b->n_pool];
      break;
    }
  }
  if (!loc->buf) {
    WM_RETURN_IF_ERROR(alloc_mapped(b, want, &loc->buf, &loc->host));
  }
  loc->bytes = want;
  loc->dynamic = true;
  s->live_bytes += want;
  if (s->live_bytes > s->peak_live_bytes) {
    s->peak_live_bytes = s->live_bytes;
  }
  return NULL;
}

// Frees the string elements of a host-visible tensor of |count|.
static void free_strings(void *host, uint64_t count) {
  char **items = host;
  for (uint64_t i = 0; items && i < count; i++) {
    free(items[i]);
    items[i] = NULL;
  }
}

void rt_release_loc(wm_session_t *s, size_t slot, rt_loc_t *loc, uint32_t dtype,
                    uint64_t count) {
  rt_backend_t *b = &s->slots[slot];
  if (!loc->buf || !loc->dynamic) {
    memset(loc, 0, sizeof(*loc));
    return;
  }
  if (dtype == WM_DTYPE_STRING) {
    free_strings(loc->host, count);
  }
  s->live_bytes -= loc->bytes;
  uint64_t cap = 2 * s->peak_live_bytes;
  if (cap < POOL_FLOOR_BYTES) {
    cap = POOL_FLOOR_BYTES;
  }
  if (dtype != WM_DTYPE_STRING && b->pool_bytes + loc->bytes <= cap &&
      !wm_grow((void **)&b->pool, &b->pool_cap, b->n_pool + 1,
               sizeof(rt_free_t))) {
    b->pool[b->n_pool++] = (rt_free_t){loc->buf, loc->host, loc->bytes};
    b->pool_bytes += loc->bytes;
  } else {
    free_buffer(b, loc->buf);
  }
  memset(loc, 0, sizeof(*loc));
}

wm_status_t rt_put_constant(wm_session_t *s, size_t slot, const wm_tensor_t *t,
                            rt_loc_t *loc) {
  memset(loc, 0, sizeof(*loc));
  WM_RETURN_IF_ERROR(rt_open_slot(s, slot));
  rt_backend_t *b = &s->slots[slot];
  s->stats.constant_bytes += t->nbytes;
  if (b->wraps && t->dtype != WM_DTYPE_STRING && t->nbytes > 0 &&
      ((uintptr_t)t->data & 15) == 0) {
    wm_error *e =
        b->api->device->mem_wrap_host(b->dev, t->data, t->nbytes, &loc->buf);
    if (!e) {
      loc->host = b->mappable ? t->data : NULL;
      return NULL;
    }
    // Refused: copied below.
    b->api->error_destroy(e);
    loc->buf = NULL;
  }
  s->stats.constant_bytes_copied += t->nbytes;
  WM_RETURN_IF_ERROR(alloc_mapped(b, t->nbytes, &loc->buf, &loc->host));
  wm_status_t st = rt_write(s, slot, loc, t);
  if (st) {
    free_buffer(b, loc->buf);
    memset(loc, 0, sizeof(*loc));
  }
  return st;
}

void rt_free_persistent(wm_session_t *s, size_t slot, rt_loc_t *loc,
                        uint32_t dtype, uint64_t count) {
  if (loc->buf) {
    if (dtype == WM_DTYPE_STRING) {
      free_strings(loc->host, count);
    }
    free_buffer(&s->slots[slot], loc->buf);
  }
  memset(loc, 0, sizeof(*loc));
}

wm_status_t rt_write(wm_session_t *s, size_t slot, const rt_loc_t *loc,
                     const wm_tensor_t *t) {
  rt_backend_t *b = &s->slots[slot];
  if (t->dtype == WM_DTYPE_STRING) {
    if (!loc->host) {
      return WM_ERROR(UNIMPLEMENTED,
                      "backend \"%s\" cannot hold string tensors",
                      wm_backend_name(b->backend));
    }
    char **items = loc->host;
    for (size_t i = 0; i < t->count; i++) {
      const char *str = ((char *const *)t->data)[i];
      char *copy = wm_strdup(str ? str : "");
      if (!copy) {
        return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
      }
      free(items[i]);
      items[i] = copy;
    }
    return NULL;
  }
  if (!t->nbytes) {
    return NULL;
  }
  if (loc->host) {
    memcpy(loc->host, t->data, t->nbytes);
    return NULL;
  }
  return rt_slot_error(b,
                       b->api->device->copy_h2d(b->stream, t->data, loc->buf,
                                                loc->offset, t->nbytes),
                       "copy_h2d");
}

wm_status_t rt_read(wm_session_t *s, size_t slot, const rt_loc_t *loc,
                    const wm_tensor_desc *desc, wm_tensor_t *dst) {
  rt_backend_t *b = &s->slots[slot];
  WM_RETURN_IF_ERROR(
      rt_slot_error(b, b->api->device->stream_sync(b->stream), "stream_sync"));
  if (desc->dtype == WM_DTYPE_STRING) {
    char *const *items = loc->host;
    for (size_t i = 0; items && i < dst->count; i++) {
      const char *str = items[i] ? items[i] : "";
      WM_RETURN_IF_ERROR(wm_tensor_set_string(dst, i, str, strlen(str)));
    }
    return NULL;
  }
  if (!dst->nbytes) {
    return NULL;
  }
  if (loc->host) {
    memcpy(dst->data, loc->host, dst->nbytes);
    return NULL;
  }
  return rt_slot_error(
      b,
      b->api->device->copy_d2h(b->stream, loc->buf, loc->offset, dst->data,
                               dst->nbytes),
      "copy_d2h");
}

wm_status_t rt_copy(wm_session_t *s, size_t from, const rt_loc_t *src,
                    size_t to, const rt_loc_t *dst, const wm_tensor_desc *desc,
                    uint64_t bytes) {
  rt_backend_t *a = &s->slots[from], *b = &s->slots[to];
  if (desc->dtype == WM_DTYPE_STRING || src->host) {
    // Through the source's mapping: strings element by element.
    WM_RETURN_IF_ERROR(rt_slot_error(a, a->api->device->stream_sync(a->stream),
                                     "stream_sync"));
    wm_shape_t shape = rt_shape_of(desc);
    wm_tensor_t view;
    memset(&view, 0, sizeof(view));
    view.dtype = (wm_dtype_t)desc->dtype;
    view.shape = shape;
    view.count =
        (size_t)(bytes /
                 (wm_dtype_size(view.dtype) ? wm_dtype_size(view.dtype) : 1));
    view.nbytes = (size_t)bytes;
    view.data = src->host;
    view.borrowed = true;
    if (!view.data && desc->dtype == WM_DTYPE_STRING) {
      return WM_ERROR(UNIMPLEMENTED, "string tensors need host-visible memory");
    }
    return rt_write(s, to, dst, &view);
  }
  if (dst->host) {
    return rt_slot_error(
        a,
        a->api->device->copy_d2h(a->stream, src->buf, src->offset, dst->host,
                                 bytes),
        "copy_d2h");
  }
  // Neither side maps: stage through host memory.
  void *staged = wm_malloc(bytes ? bytes : 1);
  if (!staged) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory staging %llu bytes",
                    (unsigned long long)bytes);
  }
  wm_status_t st =
      rt_slot_error(a, a->api->device->stream_sync(a->stream), "stream_sync");
  if (!st) {
    st = rt_slot_error(a,
                       a->api->device->copy_d2h(a->stream, src->buf,
                                                src->offset, staged, bytes),
                       "copy_d2h");
  }
  if (!st) {
    st = rt_slot_error(b,
                       b->api->device->copy_h2d(b->stream, staged, dst->buf,
                                                dst->offset, bytes),
                       "copy_h2d");
  }
  if (!st) {
    st =
        rt_slot_error(b, b->api->device->stream_sync(b->stream), "stream_sync");
  }
  free(staged);
  return st;
}

void rt_close_slot(rt_backend_t *b) {
  for (size_t i = 0; i < b->n_pool; i++) {
    free_buffer(b, b->pool[i].buf);
  }
  free(b->pool);
  b->pool = NULL;
  b->n_pool = 0;
  if (b->arena) {
    free_buffer(b, b->arena);
    b->arena = NULL;
  }
  if (b->stream) {
    b->api->device->stream_destroy(b->stream);
    b->stream = NULL;
  }
  if (b->dev) {
    b->api->device->device_close(b->dev);
    b->dev = NULL;
  }
}

// ------------------------------------------------------ offset planning

// A free block of the arena while offsets are assigned.
typedef struct span {
  uint64_t offset, bytes;
} span_t;

typedef struct event {
  int32_t step;   // when
  int32_t index;  // region
} event_t;

static int cmp_events(const void *a, const void *b) {
  const event_t *x = a, *y = b;
  if (x->step != y->step) {
    return x->step < y->step ? -1 : 1;
  }
  return x->index < y->index ? -1 : x->index > y->index;
}

// Returns |bytes| of |free_list| (best fit, else the end: *top grows).
static uint64_t take_span(span_t *list, size_t *n, uint64_t bytes,
                          uint64_t *top) {
  size_t best = *n;
  for (size_t i = 0; i < *n; i++) {
    if (list[i].bytes >= bytes &&
        (best == *n || list[i].bytes < list[best].bytes)) {
      best = i;
    }
  }
  if (best == *n) {
    // The block touching the end can be extended.
    for (size_t i = 0; i < *n; i++) {
      if (list[i].offset + list[i].bytes == *top) {
        uint64_t off = list[i].offset;
        *top = off + bytes;
        list[i] = list[--*n];
        return off;
      }
    }
    uint64_t off = *top;
    *top += bytes;
    return off;
  }
  uint64_t off = list[best].offset;
  list[best].offset += bytes;
  list[best].bytes -= bytes;
  if (list[best].bytes == 0) {
    list[best] = list[--*n];
  }
  return off;
}

// Returns [offset, offset + bytes) to |free_list|, merging neighbours.
static void give_span(span_t *list, size_t *n, uint64_t offset,
                      uint64_t bytes) {
  for (size_t i = 0; i < *n;) {
    if (list[i].offset + list[i].bytes == offset) {
      offset = list[i].offset;
      bytes += list[i].bytes;
      list[i] = list[--*n];
    } else if (offset + bytes == list[i].offset) {
      bytes += list[i].bytes;
      list[i] = list[--*n];
    } else {
      i++;
    }
  }
  list[(*n)++] = (span_t){offset, bytes};
}

wm_status_t rt_assign_offsets(rt_region_t *regions, size_t n,
                              uint64_t *out_bytes) {
  *out_bytes = 0;
  if (n == 0) {
    return NULL;
  }
  // Allocations at each region's first step, frees after its last one;
  // at one step the frees of earlier steps come before its allocations.
  event_t *allocs = wm_calloc(n, sizeof(event_t));
  event_t *frees = wm_calloc(n, sizeof(event_t));
  span_t *list = wm_calloc(n + 1, sizeof(span_t));
  if (!allocs || !frees || !list) {
    free(allocs);
    free(frees);
    free(list);
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory planning memory");
  }
  for (size_t i = 0; i < n; i++) {
    regions[i].bytes = (regions[i].bytes + ALIGN - 1) / ALIGN * ALIGN;
    allocs[i] = (event_t){regions[i].first, (int32_t)i};
    frees[i] = (event_t){regions[i].last, (int32_t)i};
  }
  qsort(allocs, n, sizeof(event_t), cmp_events);
  qsort(frees, n, sizeof(event_t), cmp_events);
  size_t n_free = 0, fi = 0;
  uint64_t top = 0;
  for (size_t ai = 0; ai < n; ai++) {
    int32_t step = allocs[ai].step;
    while (fi < n && frees[fi].step < step) {
      const rt_region_t *r = &regions[frees[fi].index];
      if (r->bytes) {
        give_span(list, &n_free, r->offset, r->bytes);
      }
      fi++;
    }
    rt_region_t *r = &regions[allocs[ai].index];
    r->offset = r->bytes ? take_span(list, &n_free, r->bytes, &top) : 0;
  }
  free(allocs);
  free(frees);
  free(list);
  *out_bytes = top;
  return NULL;
}
