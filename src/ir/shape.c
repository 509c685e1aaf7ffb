// Shapes, broadcasting and value types.
#include <stdio.h>
#include <string.h>

#include "wmap/graph.h"

wm_shape_t wm_shape_make(int32_t rank, const int64_t *dims) {
  wm_shape_t s;
  memset(&s, 0, sizeof(s));
  s.rank = rank;
  for (int32_t i = 0; i < rank && i < WM_MAX_RANK; i++) {
    s.dims[i] = dims[i];
  }
  return s;
}

bool wm_shape_is_known(const wm_shape_t *shape) {
  if (shape->rank < 0) {
    return false;
  }
  for (int32_t i = 0; i < shape->rank; i++) {
    if (shape->dims[i] < 0) {
      return false;
    }
  }
  return true;
}

bool wm_shape_numel(const wm_shape_t *shape, size_t *out) {
  *out = 0;
  if (!wm_shape_is_known(shape)) {
    return false;
  }
  size_t n = 1;
  for (int32_t i = 0; i < shape->rank; i++) {
    if (!wm_checked_mul(n, (size_t)shape->dims[i], &n)) {
      return false;
    }
  }
  *out = n;
  return true;
}

bool wm_shape_equal(const wm_shape_t *a, const wm_shape_t *b) {
  if (a->rank != b->rank) {
    return false;
  }
  for (int32_t i = 0; i < a->rank; i++) {
    if (a->dims[i] != b->dims[i]) {
      return false;
    }
  }
  return true;
}

char *wm_shape_format(const wm_shape_t *shape, char *buf, size_t size) {
  if (size == 0) {
    return buf;
  }
  if (shape->rank < 0) {
    snprintf(buf, size, "[?...]");
    return buf;
  }
  size_t n = 0;
  buf[0] = '\0';
  n += (size_t)snprintf(buf + n, size - n, "[");
  for (int32_t i = 0; i < shape->rank && n < size; i++) {
    if (shape->dims[i] < 0) {
      n += (size_t)snprintf(buf + n, size - n, "%s?", i ? "," : "");
    } else {
      n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? "," : "",
                            (long long)shape->dims[i]);
    }
  }
  if (n < size) {
    snprintf(buf + n, size - n, "]");
  }
  return buf;
}

wm_status_t wm_shape_broadcast(const wm_shape_t *a, const wm_shape_t *b,
                               wm_shape_t *out) {
  if (a->rank < 0 || b->rank < 0) {
    wm_shape_t unknown = {-1, {0}};
    *out = unknown;
    return NULL;
  }
  int32_t rank = a->rank > b->rank ? a->rank : b->rank;
  wm_shape_t r;
  memset(&r, 0, sizeof(r));
  r.rank = rank;
  for (int32_t i = 0; i < rank; i++) {
    int32_t ia = i - (rank - a->rank), ib = i - (rank - b->rank);
    int64_t da = ia >= 0 ? a->dims[ia] : 1;
    int64_t db = ib >= 0 ? b->dims[ib] : 1;
    if (da == 1) {
      r.dims[i] = db;
    } else if (db == 1) {
      r.dims[i] = da;
    } else if (da < 0 || db < 0) {
      r.dims[i] = da < 0 ? db : da;  // the known one wins (or both unknown)
    } else if (da == db) {
      r.dims[i] = da;
    } else {
      char sa[128], sb[128];
      return WM_ERROR(INVALID_ARGUMENT,
                      "shapes %s and %s cannot be broadcast (dim %d: %lld vs "
                      "%lld)",
                      wm_shape_format(a, sa, sizeof(sa)),
                      wm_shape_format(b, sb, sizeof(sb)), i, (long long)da,
                      (long long)db);
    }
  }
  *out = r;
  return NULL;
}

wm_type_t wm_type_unknown(void) {
  wm_type_t t;
  memset(&t, 0, sizeof(t));
  t.kind = WM_TYPE_TENSOR;
  t.shape.rank = -1;
  return t;
}

wm_type_t wm_type_tensor(wm_dtype_t dtype, const wm_shape_t *shape) {
  wm_type_t t = wm_type_unknown();
  t.dtype = dtype;
  if (shape) {
    t.shape = *shape;
  }
  return t;
}

char *wm_type_format(const wm_type_t *type, char *buf, size_t size) {
  char dims[256];
  if (type->shape.rank < 0) {
    snprintf(dims, sizeof(dims), "[?...]");
  } else {
    size_t n = (size_t)snprintf(dims, sizeof(dims), "[");
    for (int32_t i = 0; i < type->shape.rank && n < sizeof(dims); i++) {
      const char *sep = i ? "," : "";
      if (type->dim_params[i]) {
        n += (size_t)snprintf(dims + n, sizeof(dims) - n, "%s%s", sep,
                              type->dim_params[i]);
      } else if (type->shape.dims[i] < 0) {
        n += (size_t)snprintf(dims + n, sizeof(dims) - n, "%s?", sep);
      } else {
        n += (size_t)snprintf(dims + n, sizeof(dims) - n, "%s%lld", sep,
                              (long long)type->shape.dims[i]);
      }
    }
    if (n < sizeof(dims)) {
      snprintf(dims + n, sizeof(dims) - n, "]");
    }
  }
  static const char *const kinds[] = {"", "seq", "optional", "map", "sparse"};
  const char *kind = (unsigned)type->kind < sizeof(kinds) / sizeof(kinds[0])
                         ? kinds[type->kind]
                         : "?";
  if (*kind) {
    snprintf(buf, size, "%s(%s%s)", kind, wm_dtype_name(type->dtype), dims);
  } else {
    snprintf(buf, size, "%s%s", wm_dtype_name(type->dtype), dims);
  }
  return buf;
}
