// Open-addressing string map (FNV-1a, linear probing).
#include <stdlib.h>
#include <string.h>

#include "wmap/base.h"

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) {
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  }
  return h;
}

void wm_strmap_init(wm_strmap_t *map) {
  memset(map, 0, sizeof(*map));
}

void wm_strmap_deinit(wm_strmap_t *map) {
  free(map->keys);
  free(map->values);
  memset(map, 0, sizeof(*map));
}

// Returns the slot holding |key| or the empty slot where it would go.
static size_t find_slot(const char **keys, size_t cap, const char *key) {
  size_t i = hash_str(key) & (cap - 1);
  while (keys[i] && strcmp(keys[i], key) != 0) {
    i = (i + 1) & (cap - 1);
  }
  return i;
}

static wm_status_t rehash(wm_strmap_t *map, size_t cap) {
  const char **keys = wm_calloc(cap, sizeof(*keys));
  int64_t *values = wm_calloc(cap, sizeof(*values));
  if (!keys || !values) {
    free(keys);
    free(values);
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory in string map");
  }
  for (size_t i = 0; i < map->cap; i++) {
    if (map->keys[i]) {
      size_t j = find_slot(keys, cap, map->keys[i]);
      keys[j] = map->keys[i];
      values[j] = map->values[i];
    }
  }
  free(map->keys);
  free(map->values);
  map->keys = keys;
  map->values = values;
  map->cap = cap;
  return NULL;
}

wm_status_t wm_strmap_put(wm_strmap_t *map, const char *key, int64_t value) {
  if ((map->count + 1) * 2 > map->cap) {
    WM_RETURN_IF_ERROR(rehash(map, map->cap ? map->cap * 2 : 16));
  }
  size_t i = find_slot(map->keys, map->cap, key);
  if (!map->keys[i]) {
    map->keys[i] = key;
    map->count++;
  }
  map->values[i] = value;
  return NULL;
}

bool wm_strmap_get(const wm_strmap_t *map, const char *key,
                   int64_t *out_value) {
  if (!map->cap) {
    return false;
  }
  size_t i = find_slot(map->keys, map->cap, key);
  if (!map->keys[i]) {
    return false;
  }
  if (out_value) {
    *out_value = map->values[i];
  }
  return true;
}
