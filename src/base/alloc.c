// Allocation wrappers with fault injection, growable arrays and an arena.
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "wmap/base.h"

static _Atomic int64_t fail_countdown;

void wm_alloc_fail_after(int64_t n) {
  atomic_store(&fail_countdown, n);
}

// Returns true when the injected failure is due now.
static bool injected_failure(void) {
  if (atomic_load(&fail_countdown) <= 0) {
    return false;
  }
  return atomic_fetch_sub(&fail_countdown, 1) == 1;
}

void *wm_malloc(size_t size) {
  if (injected_failure()) {
    return NULL;
  }
  return malloc(size ? size : 1);
}

void *wm_calloc(size_t count, size_t size) {
  if (injected_failure()) {
    return NULL;
  }
  if (count == 0 || size == 0) {
    return calloc(1, 1);
  }
  return calloc(count, size);
}

void *wm_realloc(void *ptr, size_t size) {
  if (injected_failure()) {
    return NULL;
  }
  return realloc(ptr, size ? size : 1);
}

wm_status_t wm_grow(void **items, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) {
    return NULL;
  }
  size_t new_cap = *cap ? *cap : 4;
  while (new_cap < need) {
    if (!wm_checked_mul(new_cap, 2, &new_cap)) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "array of %zu items is too large",
                      need);
    }
  }
  size_t bytes;
  if (!wm_checked_mul(new_cap, elem, &bytes)) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "array of %zu items is too large",
                    need);
  }
  void *p = wm_realloc(*items, bytes);
  if (!p) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory growing to %zu bytes",
                    bytes);
  }
  memset((char *)p + *cap * elem, 0, (new_cap - *cap) * elem);
  *items = p;
  *cap = new_cap;
  return NULL;
}

char *wm_strndup(const char *s, size_t n) {
  size_t bytes;
  if (!wm_checked_add(n, 1, &bytes)) {
    return NULL;
  }
  char *p = wm_malloc(bytes);
  if (p) {
    if (n) {
      memcpy(p, s, n);
    }
    p[n] = '\0';
  }
  return p;
}

char *wm_strdup(const char *s) {
  return s ? wm_strndup(s, strlen(s)) : NULL;
}

// ---------------------------------------------------------------- arena

struct wm_arena_block {
  struct wm_arena_block *next;  // older block
  size_t used;                  // bytes handed out
  size_t cap;                   // bytes in data
  _Alignas(16) unsigned char data[];
};

enum { ARENA_BLOCK = 16 * 1024 };

void wm_arena_init(wm_arena_t *arena) {
  arena->head = NULL;
}

void wm_arena_deinit(wm_arena_t *arena) {
  struct wm_arena_block *b = arena->head;
  while (b) {
    struct wm_arena_block *next = b->next;
    free(b);
    b = next;
  }
  arena->head = NULL;
}

void *wm_arena_alloc(wm_arena_t *arena, size_t size) {
  size_t rounded;
  if (!wm_checked_add(size, 15, &rounded)) {
    return NULL;
  }
  rounded &= ~(size_t)15;
  if (rounded == 0) {
    rounded = 16;
  }
  struct wm_arena_block *b = arena->head;
  if (!b || b->cap - b->used < rounded) {
    size_t cap = rounded > ARENA_BLOCK ? rounded : ARENA_BLOCK;
    size_t bytes;
    if (!wm_checked_add(cap, sizeof(*b), &bytes)) {
      return NULL;
    }
    struct wm_arena_block *nb = wm_malloc(bytes);
    if (!nb) {
      return NULL;
    }
    nb->used = 0;
    nb->cap = cap;
    if (b && rounded > ARENA_BLOCK) {
      // Keep the partly used head for small allocations.
      nb->next = b->next;
      b->next = nb;
    } else {
      nb->next = b;
      arena->head = nb;
    }
    b = nb;
  }
  void *p = b->data + b->used;
  b->used += rounded;
  memset(p, 0, rounded);
  return p;
}

char *wm_arena_strndup(wm_arena_t *arena, const char *s, size_t n) {
  size_t bytes;
  if (!wm_checked_add(n, 1, &bytes)) {
    return NULL;
  }
  char *p = wm_arena_alloc(arena, bytes);
  if (p) {
    if (n) {
      memcpy(p, s, n);
    }
    p[n] = '\0';
  }
  return p;
}

char *wm_arena_strdup(wm_arena_t *arena, const char *s) {
  return s ? wm_arena_strndup(arena, s, strlen(s)) : NULL;
}
