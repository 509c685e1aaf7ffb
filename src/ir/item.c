// Items: the tensors, sequences and optionals a run consumes and produces.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wmap/graph.h"

wm_item_t wm_item_tensor_take(wm_tensor_t *tensor) {
  wm_item_t item;
  memset(&item, 0, sizeof(item));
  item.kind = WM_TYPE_TENSOR;
  item.tensor = tensor;
  return item;
}

wm_status_t wm_item_init(wm_item_t *item, wm_type_kind_t kind,
                         wm_type_kind_t elem_kind, wm_dtype_t elem_dtype,
                         size_t capacity) {
  memset(item, 0, sizeof(*item));
  if (kind != WM_TYPE_SEQUENCE && kind != WM_TYPE_OPTIONAL) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "an item of kind %d has no elements (want a sequence or "
                    "an optional)",
                    (int)kind);
  }
  item->elems = wm_calloc(capacity + 1, sizeof(wm_item_t));
  if (!item->elems) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  item->kind = kind;
  item->elem_kind = elem_kind;
  item->elem_dtype = elem_dtype;
  return NULL;
}

wm_status_t wm_item_optional_take(wm_item_t *value, wm_item_t *out) {
  wm_status_t st =
      wm_item_init(out, WM_TYPE_OPTIONAL, value->kind, wm_item_dtype(value), 1);
  if (st) {
    wm_item_deinit(value);
    return st;
  }
  out->elems[out->count++] = *value;
  memset(value, 0, sizeof(*value));
  return NULL;
}

wm_dtype_t wm_item_dtype(const wm_item_t *item) {
  if (item->kind == WM_TYPE_TENSOR) {
    return item->tensor ? item->tensor->dtype : WM_DTYPE_UNDEFINED;
  }
  return item->elem_dtype;
}

void wm_item_deinit(wm_item_t *item) {
  if (!item) {
    return;
  }
  wm_tensor_destroy(item->tensor);
  for (size_t i = 0; item->elems && i < item->count; i++) {
    wm_item_deinit(&item->elems[i]);
  }
  free(item->elems);
  memset(item, 0, sizeof(*item));
}

wm_status_t wm_item_clone(const wm_item_t *src, wm_item_t *out) {
  memset(out, 0, sizeof(*out));
  if (src->kind == WM_TYPE_TENSOR) {
    wm_tensor_t *t = NULL;
    if (src->tensor) {
      WM_RETURN_IF_ERROR(wm_tensor_clone(src->tensor, &t));
    }
    *out = wm_item_tensor_take(t);
    return NULL;
  }
  WM_RETURN_IF_ERROR(wm_item_init(out, src->kind, src->elem_kind,
                                  src->elem_dtype, src->count));
  for (size_t i = 0; i < src->count; i++) {
    wm_status_t st = wm_item_clone(&src->elems[i], &out->elems[i]);
    if (st) {
      wm_item_deinit(out);
      return st;
    }
    out->count++;
  }
  return NULL;
}

bool wm_item_equal(const wm_item_t *a, const wm_item_t *b) {
  if (a->kind != b->kind) {
    return false;
  }
  if (a->kind == WM_TYPE_TENSOR) {
    return a->tensor && b->tensor && wm_tensor_equal(a->tensor, b->tensor);
  }
  if (a->count != b->count || a->elem_kind != b->elem_kind) {
    return false;
  }
  for (size_t i = 0; i < a->count; i++) {
    if (!wm_item_equal(&a->elems[i], &b->elems[i])) {
      return false;
    }
  }
  return true;
}

static const char *kind_noun(wm_type_kind_t kind) {
  switch (kind) {
    case WM_TYPE_TENSOR:
      return "tensor";
    case WM_TYPE_SEQUENCE:
      return "sequence";
    case WM_TYPE_OPTIONAL:
      return "optional";
    case WM_TYPE_MAP:
      return "map";
    default:
      return "sparse tensor";
  }
}

char *wm_item_format(const wm_item_t *item, char *buf, size_t size) {
  if (!size) {
    return buf;
  }
  if (item->kind == WM_TYPE_TENSOR) {
    char shape[96] = "?";
    if (item->tensor) {
      wm_shape_format(&item->tensor->shape, shape, sizeof(shape));
    }
    snprintf(buf, size, "%s%s",
             item->tensor ? wm_dtype_name(item->tensor->dtype) : "no tensor",
             item->tensor ? shape : "");
    return buf;
  }
  const char *dtype = item->elem_dtype != WM_DTYPE_UNDEFINED
                          ? wm_dtype_name(item->elem_dtype)
                          : "";
  if (item->kind == WM_TYPE_SEQUENCE) {
    snprintf(buf, size, "sequence of %zu %s%s%s%s", item->count, dtype,
             *dtype ? " " : "", kind_noun(item->elem_kind),
             item->count == 1 ? "" : "s");
  } else {
    snprintf(buf, size, "optional %s%s%s (%s)", dtype, *dtype ? " " : "",
             kind_noun(item->elem_kind), item->count ? "present" : "none");
  }
  return buf;
}
