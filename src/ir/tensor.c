// Host tensors.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wmap/graph.h"

// Validates |shape| and computes element count and byte size.
static wm_status_t tensor_sizes(wm_dtype_t dtype, const wm_shape_t *shape,
                                size_t *out_count, size_t *out_bytes) {
  if (!wm_dtype_is_valid(dtype)) {
    return WM_ERROR(INVALID_ARGUMENT, "unknown dtype %d", (int)dtype);
  }
  if (shape->rank < 0 || shape->rank > WM_MAX_RANK) {
    return WM_ERROR(INVALID_ARGUMENT, "rank %d is not in [0, %d]", shape->rank,
                    WM_MAX_RANK);
  }
  for (int32_t i = 0; i < shape->rank; i++) {
    if (shape->dims[i] < 0) {
      return WM_ERROR(INVALID_ARGUMENT, "dim %d is %lld; want >= 0", i,
                      (long long)shape->dims[i]);
    }
  }
  char buf[128];
  *out_bytes = 0;
  if (!wm_shape_numel(shape, out_count) ||
      !wm_checked_mul(*out_count, wm_dtype_size(dtype), out_bytes) ||
      *out_bytes > ((size_t)1 << 46)) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "tensor %s of %s is too large",
                    wm_shape_format(shape, buf, sizeof(buf)),
                    wm_dtype_name(dtype));
  }
  return NULL;
}

static wm_status_t tensor_header(wm_dtype_t dtype, const wm_shape_t *shape,
                                 wm_tensor_t **out) {
  *out = NULL;
  size_t count = 0, bytes = 0;
  WM_RETURN_IF_ERROR(tensor_sizes(dtype, shape, &count, &bytes));
  wm_tensor_t *t = wm_calloc(1, sizeof(*t));
  if (!t) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  t->dtype = dtype;
  t->shape = *shape;
  for (int32_t i = shape->rank; i < WM_MAX_RANK; i++) {
    t->shape.dims[i] = 0;
  }
  t->count = count;
  t->nbytes = bytes;
  *out = t;
  return NULL;
}

wm_status_t wm_tensor_create(wm_dtype_t dtype, const wm_shape_t *shape,
                             wm_tensor_t **out) {
  WM_RETURN_IF_ERROR(tensor_header(dtype, shape, out));
  wm_tensor_t *t = *out;
  t->data = wm_calloc(1, t->nbytes ? t->nbytes : 1);
  if (!t->data) {
    char buf[128];
    size_t bytes = t->nbytes;
    free(t);
    *out = NULL;
    return WM_ERROR(
        RESOURCE_EXHAUSTED, "out of memory allocating %zu bytes for %s %s",
        bytes, wm_dtype_name(dtype), wm_shape_format(shape, buf, sizeof(buf)));
  }
  if (dtype == WM_DTYPE_STRING) {
    for (size_t i = 0; i < t->count; i++) {
      char *s = wm_strdup("");
      if (!s) {
        wm_tensor_destroy(t);
        *out = NULL;
        return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
      }
      ((char **)t->data)[i] = s;
    }
  }
  return NULL;
}

wm_status_t wm_tensor_wrap(wm_dtype_t dtype, const wm_shape_t *shape,
                           void *data, wm_tensor_t **out) {
  WM_RETURN_IF_ERROR(tensor_header(dtype, shape, out));
  (*out)->data = data;
  (*out)->borrowed = true;
  return NULL;
}

wm_status_t wm_tensor_clone(const wm_tensor_t *src, wm_tensor_t **out) {
  WM_RETURN_IF_ERROR(wm_tensor_create(src->dtype, &src->shape, out));
  if (src->dtype == WM_DTYPE_STRING) {
    for (size_t i = 0; i < src->count; i++) {
      const char *s = ((char *const *)src->data)[i];
      wm_status_t st = wm_tensor_set_string(*out, i, s, strlen(s));
      if (st) {
        wm_tensor_destroy(*out);
        *out = NULL;
        return st;
      }
    }
  } else if (src->nbytes) {
    memcpy((*out)->data, src->data, src->nbytes);
  }
  return NULL;
}

void wm_tensor_destroy(wm_tensor_t *tensor) {
  if (!tensor) {
    return;
  }
  if (!tensor->borrowed && tensor->data) {
    if (tensor->dtype == WM_DTYPE_STRING) {
      for (size_t i = 0; i < tensor->count; i++) {
        free(((char **)tensor->data)[i]);
      }
    }
    free(tensor->data);
  }
  free(tensor);
}

bool wm_tensor_equal(const wm_tensor_t *a, const wm_tensor_t *b) {
  if (a->dtype != b->dtype || !wm_shape_equal(&a->shape, &b->shape)) {
    return false;
  }
  if (a->dtype == WM_DTYPE_STRING) {
    for (size_t i = 0; i < a->count; i++) {
      if (strcmp(((char *const *)a->data)[i], ((char *const *)b->data)[i])) {
        return false;
      }
    }
    return true;
  }
  return a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0;
}

wm_status_t wm_tensor_set_string(wm_tensor_t *t, size_t i, const char *s,
                                 size_t n) {
  WM_ASSERT(t->dtype == WM_DTYPE_STRING && i < t->count);
  char *copy = wm_strndup(s, n);
  if (!copy) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory copying a string");
  }
  char **slot = &((char **)t->data)[i];
  if (!t->borrowed) {
    free(*slot);
  }
  *slot = copy;
  return NULL;
}

double wm_tensor_get_f64(const wm_tensor_t *t, size_t i) {
  return wm_load_f64(t->dtype, t->data, i);
}

void wm_tensor_set_f64(wm_tensor_t *t, size_t i, double v) {
  wm_store_f64(t->dtype, t->data, i, v);
}

int64_t wm_tensor_get_i64(const wm_tensor_t *t, size_t i) {
  return wm_load_i64(t->dtype, t->data, i);
}

void wm_tensor_set_i64(wm_tensor_t *t, size_t i, int64_t v) {
  wm_store_i64(t->dtype, t->data, i, v);
}
