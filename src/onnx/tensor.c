// TensorProto <-> wm_tensor_t: raw_data, typed fields, external data, and
// the TensorProto file API.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx_internal.h"
#include "wmap/onnx.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define WM_ONNX_BIG_ENDIAN 1
#else
#define WM_ONNX_BIG_ENDIAN 0
#endif

#if WM_ONNX_BIG_ENDIAN
// Bytes of one scalar component (complex numbers have two).
static size_t component_size(wm_dtype_t dtype) {
  if (dtype == WM_DTYPE_COMPLEX64) {
    return 4;
  }
  if (dtype == WM_DTYPE_COMPLEX128) {
    return 8;
  }
  return wm_dtype_size(dtype);
}
#endif

// Copies |bytes| of little-endian data of |dtype| into host order.
static void copy_le(void *dst, const void *src, size_t bytes,
                    wm_dtype_t dtype) {
  if (bytes) {
    memmove(dst, src, bytes);
  }
#if WM_ONNX_BIG_ENDIAN
  size_t w = component_size(dtype);
  uint8_t *p = dst;
  for (size_t i = 0; w > 1 && i + w <= bytes; i += w) {
    for (size_t a = 0, b = w - 1; a < b; a++, b--) {
      uint8_t t = p[i + a];
      p[i + a] = p[i + b];
      p[i + b] = t;
    }
  }
#else
  (void)dtype;
#endif
}

// "float[2,3]" for messages.
static const char *describe(wm_dtype_t dtype, const wm_shape_t *shape,
                            char *buf, size_t size) {
  char dims[128];
  snprintf(buf, size, "%s%s", wm_dtype_name(dtype),
           wm_shape_format(shape, dims, sizeof(dims)));
  return buf;
}

// ------------------------------------------------------- packed types

// True for the types packed several elements per byte in files.
static bool is_packed(wm_dtype_t dtype) {
  return wm_dtype_bits(dtype) < 8 && dtype != WM_DTYPE_STRING;
}

// Bytes of |count| elements of |dtype| in a file (packed types round up).
static size_t file_bytes(wm_dtype_t dtype, size_t count) {
  size_t bits = wm_dtype_bits(dtype);
  if (is_packed(dtype)) {
    size_t per = 8 / bits;
    return count / per + (count % per != 0);
  }
  return count * wm_dtype_size(dtype);
}

// Unpacks the first file_bytes(t->dtype, t->count) bytes of |src| into the
// elements of |t|, lowest bits first, each widened to its in-memory byte.
// |src| may be t->data itself: elements are written from the last one
// down, and element i only reads byte i / per <= i.
static void unpack_elements(wm_tensor_t *t, const uint8_t *src) {
  unsigned bits = (unsigned)wm_dtype_bits(t->dtype);
  unsigned per = 8 / bits, mask = (1u << bits) - 1;
  uint8_t *d = t->data;
  for (size_t i = t->count; i-- > 0;) {
    unsigned code = (src[i / per] >> (bits * (unsigned)(i % per))) & mask;
    if (t->dtype == WM_DTYPE_FLOAT4E2M1) {
      d[i] = (uint8_t)code;
    } else {
      uint8_t one = (uint8_t)code;
      wm_store_i64(t->dtype, d, i, wm_load_i64(t->dtype, &one, 0));
    }
  }
}

// Packs the elements of |t| into |dst| (file_bytes long), lowest bits
// first, zero padding.
static void pack_elements(const wm_tensor_t *t, uint8_t *dst) {
  unsigned bits = (unsigned)wm_dtype_bits(t->dtype);
  unsigned per = 8 / bits, mask = (1u << bits) - 1;
  const uint8_t *d = t->data;
  memset(dst, 0, file_bytes(t->dtype, t->count));
  for (size_t i = 0; i < t->count; i++) {
    dst[i / per] |= (uint8_t)((d[i] & mask) << (bits * (unsigned)(i % per)));
  }
}

// Reads data_type and dims, checking rank, signs and the element count.
static wm_status_t proto_shape(const Onnx__TensorProto *p,
                               wm_dtype_t *out_dtype, wm_shape_t *out_shape,
                               size_t *out_count) {
  if (!p->has_data_type || !wm_dtype_is_valid(p->data_type)) {
    return WM_ERROR(INVALID_ARGUMENT, "unknown data_type %d",
                    p->has_data_type ? (int)p->data_type : 0);
  }
  if (p->n_dims > WM_MAX_RANK) {
    return WM_ERROR(INVALID_ARGUMENT, "rank %zu exceeds the maximum %d",
                    p->n_dims, WM_MAX_RANK);
  }
  wm_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  shape.rank = (int32_t)p->n_dims;
  size_t count = 1;
  bool overflow = false;
  for (size_t i = 0; i < p->n_dims; i++) {
    if (p->dims[i] < 0) {
      return WM_ERROR(INVALID_ARGUMENT, "dim %zu is negative (%lld)", i,
                      (long long)p->dims[i]);
    }
    shape.dims[i] = p->dims[i];
    if (!wm_checked_mul(count, (size_t)p->dims[i], &count)) {
      overflow = true;
    }
  }
  size_t bytes;
  if (overflow ||
      !wm_checked_mul(count, wm_dtype_size((wm_dtype_t)p->data_type), &bytes)) {
    char buf[160];
    return WM_ERROR(
        INVALID_ARGUMENT, "element count of %s overflows",
        describe((wm_dtype_t)p->data_type, &shape, buf, sizeof(buf)));
  }
  *out_dtype = (wm_dtype_t)p->data_type;
  *out_shape = shape;
  *out_count = count;
  return NULL;
}

// ------------------------------------------------------- typed fields

// The typed field that carries |dtype| and how many entries per element.
typedef enum typed_field {
  FIELD_FLOAT,
  FIELD_INT32,
  FIELD_STRING,
  FIELD_INT64,
  FIELD_DOUBLE,
  FIELD_UINT64,
  FIELD_COUNT,
} typed_field_t;

static const char *const field_names[FIELD_COUNT] = {
    "float_data", "int32_data",  "string_data",
    "int64_data", "double_data", "uint64_data"};

static typed_field_t field_of(wm_dtype_t dtype) {
  switch (dtype) {
    case WM_DTYPE_FLOAT:
    case WM_DTYPE_COMPLEX64:
      return FIELD_FLOAT;
    case WM_DTYPE_STRING:
      return FIELD_STRING;
    case WM_DTYPE_INT64:
      return FIELD_INT64;
    case WM_DTYPE_DOUBLE:
    case WM_DTYPE_COMPLEX128:
      return FIELD_DOUBLE;
    case WM_DTYPE_UINT32:
    case WM_DTYPE_UINT64:
      return FIELD_UINT64;
    default:  // int8/16/32, uint8/16, bool, float16, bfloat16
      return FIELD_INT32;
  }
}

static void field_counts(const Onnx__TensorProto *p,
                         size_t counts[FIELD_COUNT]) {
  counts[FIELD_FLOAT] = p->n_float_data;
  counts[FIELD_INT32] = p->n_int32_data;
  counts[FIELD_STRING] = p->n_string_data;
  counts[FIELD_INT64] = p->n_int64_data;
  counts[FIELD_DOUBLE] = p->n_double_data;
  counts[FIELD_UINT64] = p->n_uint64_data;
}

// Checks that int32_data entry |i| fits |dtype| and returns it.
static wm_status_t int32_entry(const Onnx__TensorProto *p, wm_dtype_t dtype,
                               size_t i, int64_t *out) {
  int64_t v = p->int32_data[i], lo = INT32_MIN, hi = INT32_MAX;
  switch (dtype) {
    case WM_DTYPE_INT8:
      lo = INT8_MIN, hi = INT8_MAX;
      break;
    case WM_DTYPE_INT16:
      lo = INT16_MIN, hi = INT16_MAX;
      break;
    case WM_DTYPE_UINT8:
      lo = 0, hi = UINT8_MAX;
      break;
    case WM_DTYPE_UINT16:
    case WM_DTYPE_FLOAT16:
    case WM_DTYPE_BFLOAT16:
      lo = 0, hi = UINT16_MAX;
      break;
    case WM_DTYPE_BOOL:
      lo = 0, hi = 1;
      break;
    default:
      if (wm_dtype_is_minifloat(dtype) || is_packed(dtype)) {
        lo = 0, hi = UINT8_MAX;  // a bit pattern or a packed byte
      }
      break;
  }
  if (v < lo || v > hi) {
    return WM_ERROR(INVALID_ARGUMENT, "int32_data[%zu] = %lld does not fit %s",
                    i, (long long)v, wm_dtype_name(dtype));
  }
  *out = v;
  return NULL;
}

// Fills |t| from the typed field of its dtype (already count-checked).
static wm_status_t fill_typed(const Onnx__TensorProto *p, wm_tensor_t *t) {
  uint8_t *d = t->data;
  size_t n = t->count;
  if (n == 0) {
    return NULL;  // the field may be absent (NULL)
  }
  switch (t->dtype) {
    case WM_DTYPE_FLOAT:
    case WM_DTYPE_COMPLEX64:
      memcpy(d, p->float_data, t->nbytes);
      return NULL;
    case WM_DTYPE_DOUBLE:
    case WM_DTYPE_COMPLEX128:
      memcpy(d, p->double_data, t->nbytes);
      return NULL;
    case WM_DTYPE_INT64:
      memcpy(d, p->int64_data, t->nbytes);
      return NULL;
    case WM_DTYPE_UINT64:
      memcpy(d, p->uint64_data, t->nbytes);
      return NULL;
    case WM_DTYPE_UINT32:
      for (size_t i = 0; i < n; i++) {
        if (p->uint64_data[i] > UINT32_MAX) {
          return WM_ERROR(INVALID_ARGUMENT,
                          "uint64_data[%zu] = %llu does not fit uint32", i,
                          (unsigned long long)p->uint64_data[i]);
        }
        uint32_t v = (uint32_t)p->uint64_data[i];
        memcpy(d + 4 * i, &v, 4);
      }
      return NULL;
    case WM_DTYPE_STRING:
      for (size_t i = 0; i < n; i++) {
        const ProtobufCBinaryData *s = &p->string_data[i];
        if (s->len && memchr(s->data, 0, s->len)) {
          return WM_ERROR(UNIMPLEMENTED,
                          "string_data[%zu] holds a NUL byte, which wmap "
                          "strings cannot hold",
                          i);
        }
        // protobuf-c leaves empty bytes fields NULL.
        const char *bytes = s->data ? (const char *)s->data : "";
        WM_RETURN_IF_ERROR(
            wm_tensor_set_string(t, i, bytes, s->data ? s->len : 0));
      }
      return NULL;
    default:
      break;
  }
  if (is_packed(t->dtype)) {
    // Each int32_data entry holds one packed byte.
    size_t bytes = file_bytes(t->dtype, n);
    for (size_t i = 0; i < bytes; i++) {
      int64_t v = 0;
      WM_RETURN_IF_ERROR(int32_entry(p, t->dtype, i, &v));
      d[i] = (uint8_t)v;
    }
    unpack_elements(t, d);
    return NULL;
  }
  // int32_data carries the narrow integer types, bool and the 16- and
  // 8-bit float bit patterns.
  for (size_t i = 0; i < n; i++) {
    int64_t v = 0;
    WM_RETURN_IF_ERROR(int32_entry(p, t->dtype, i, &v));
    switch (t->dtype) {
      case WM_DTYPE_INT8: {
        int8_t x = (int8_t)v;
        memcpy(d + i, &x, 1);
        break;
      }
      case WM_DTYPE_UINT8:
      case WM_DTYPE_BOOL:
      case WM_DTYPE_FLOAT8E4M3FN:
      case WM_DTYPE_FLOAT8E4M3FNUZ:
      case WM_DTYPE_FLOAT8E5M2:
      case WM_DTYPE_FLOAT8E5M2FNUZ:
      case WM_DTYPE_FLOAT8E8M0:
        d[i] = (uint8_t)v;
        break;
      case WM_DTYPE_INT16: {
        int16_t x = (int16_t)v;
        memcpy(d + 2 * i, &x, 2);
        break;
      }
      case WM_DTYPE_UINT16:
      case WM_DTYPE_FLOAT16:
      case WM_DTYPE_BFLOAT16: {
        uint16_t x = (uint16_t)v;
        memcpy(d + 2 * i, &x, 2);
        break;
      }
      default: {
        int32_t x = (int32_t)v;
        memcpy(d + 4 * i, &x, 4);
        break;
      }
    }
  }
  return NULL;
}

// ------------------------------------------------------- external data

// Parses a non-negative decimal int64 for an external_data key.
static wm_status_t parse_size(const char *key, const char *text,
                              uint64_t *out) {
  if (!text || !*text) {
    return WM_ERROR(INVALID_ARGUMENT, "external_data \"%s\" is empty", key);
  }
  uint64_t v = 0;
  for (const char *c = text; *c; c++) {
    if (*c < '0' || *c > '9' || v > (uint64_t)INT64_MAX / 10) {
      char buf[64];
      return WM_ERROR(INVALID_ARGUMENT,
                      "external_data \"%s\" is \"%s\", want a "
                      "non-negative integer",
                      key, wm_onnx_safe(text, buf, sizeof(buf)));
    }
    v = v * 10 + (uint64_t)(*c - '0');
  }
  if (v > (uint64_t)INT64_MAX) {
    return WM_ERROR(INVALID_ARGUMENT, "external_data \"%s\" is too large", key);
  }
  *out = v;
  return NULL;
}

// Checks that |location| stays inside |base_dir| and returns the resolved
// path (heap) of the existing file.
static wm_status_t resolve_location(const char *base_dir, const char *location,
                                    char **out_path) {
  *out_path = NULL;
  char loc[96];
  wm_onnx_safe(location, loc, sizeof(loc));
  if (!*location) {
    return WM_ERROR(INVALID_ARGUMENT, "external data location is empty");
  }
  if (location[0] == '/') {
    return WM_ERROR(INVALID_ARGUMENT,
                    "external data location \"%s\" is an absolute path; "
                    "it must stay inside the model folder",
                    loc);
  }
  for (const char *c = location; *c;) {
    size_t n = strcspn(c, "/");
    if (n == 2 && c[0] == '.' && c[1] == '.') {
      return WM_ERROR(INVALID_ARGUMENT,
                      "external data location \"%s\" uses \"..\"; it must "
                      "stay inside the model folder",
                      loc);
    }
    c += n;
    while (*c == '/') {
      c++;
    }
  }
  char *base_real = realpath(base_dir, NULL);
  if (!base_real) {
    char dir[96];
    return WM_ERROR(NOT_FOUND, "model folder \"%s\": %s",
                    wm_onnx_safe(base_dir, dir, sizeof(dir)), strerror(errno));
  }
  wm_strbuf_t joined;
  wm_strbuf_init(&joined);
  wm_strbuf_printf(&joined, "%s/%s", base_real, location);
  if (joined.failed) {
    free(base_real);
    wm_strbuf_deinit(&joined);
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  char *real = realpath(joined.data, NULL);
  int err = errno;
  wm_strbuf_deinit(&joined);
  if (!real) {
    free(base_real);
    if (err == ENOENT || err == ENOTDIR) {
      return WM_ERROR(NOT_FOUND,
                      "external data file \"%s\" does not exist in the "
                      "model folder",
                      loc);
    }
    return WM_ERROR(NOT_FOUND, "external data file \"%s\": %s", loc,
                    strerror(err));
  }
  size_t blen = strlen(base_real);
  bool inside = strncmp(real, base_real, blen) == 0 &&
                (real[blen] == '/' || (blen == 1 && base_real[0] == '/'));
  free(base_real);
  if (!inside) {
    free(real);
    return WM_ERROR(INVALID_ARGUMENT,
                    "external data location \"%s\" resolves outside the "
                    "model folder (through a symbolic link)",
                    loc);
  }
  *out_path = real;
  return NULL;
}

// Reads the external data of |p| into a new tensor of |dtype|/|shape|.
static wm_status_t read_external(const Onnx__TensorProto *p,
                                 const char *base_dir, wm_dtype_t dtype,
                                 const wm_shape_t *shape, size_t count,
                                 wm_tensor_t **out) {
  if (dtype == WM_DTYPE_STRING) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "string tensors cannot use external data");
  }
  if (p->has_raw_data) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "data_location is EXTERNAL but raw_data is also set");
  }
  const char *location = NULL;
  uint64_t offset = 0, length = 0;
  bool has_length = false;
  for (size_t i = 0; i < p->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = p->external_data[i];
    const char *key = e->key ? e->key : "";
    if (strcmp(key, "location") == 0) {
      location = e->value ? e->value : "";
    } else if (strcmp(key, "offset") == 0) {
      WM_RETURN_IF_ERROR(parse_size("offset", e->value, &offset));
    } else if (strcmp(key, "length") == 0) {
      WM_RETURN_IF_ERROR(parse_size("length", e->value, &length));
      has_length = true;
    }
  }
  if (!location) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "data_location is EXTERNAL but external_data has no "
                    "\"location\"");
  }
  if (!base_dir) {
    return WM_ERROR(FAILED_PRECONDITION,
                    "external data needs the model's folder (the model was "
                    "loaded from memory)");
  }
  size_t want = file_bytes(dtype, count);
  char desc[160], loc[96];
  describe(dtype, shape, desc, sizeof(desc));
  wm_onnx_safe(location, loc, sizeof(loc));
  if (has_length && length != want) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "external data length is %llu bytes, want %zu for %s",
                    (unsigned long long)length, want, desc);
  }
  char *path;
  WM_RETURN_IF_ERROR(resolve_location(base_dir, location, &path));
  // O_NONBLOCK: a FIFO must not hang the import before the S_ISREG check.
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  free(path);
  if (fd < 0) {
    return WM_ERROR(NOT_FOUND, "cannot open external data file \"%s\": %s", loc,
                    strerror(errno));
  }
  struct stat st;
  wm_status_t s = NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    s = WM_ERROR(INVALID_ARGUMENT,
                 "external data file \"%s\" is not a regular file", loc);
  } else if (offset > (uint64_t)st.st_size ||
             want > (uint64_t)st.st_size - offset) {
    s = WM_ERROR(OUT_OF_RANGE,
                 "external data file \"%s\" has %lld bytes; offset %llu + "
                 "length %zu runs past its end",
                 loc, (long long)st.st_size, (unsigned long long)offset, want);
  }
  if (!s) {
    s = wm_tensor_create(dtype, shape, out);
  }
  size_t done = 0;
  while (!s && done < want) {
    ssize_t n = pread(fd, (uint8_t *)(*out)->data + done, want - done,
                      (off_t)(offset + done));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      s = WM_ERROR(DATA_LOSS, "error reading external data file \"%s\"", loc);
      wm_tensor_destroy(*out);
      *out = NULL;
      break;
    }
    done += (size_t)n;
  }
  close(fd);
  if (!s && is_packed(dtype)) {
    unpack_elements(*out, (*out)->data);
  } else if (!s) {
    copy_le((*out)->data, (*out)->data, want, dtype);
  }
  return s;
}

// ------------------------------------------------------- TensorProto in

static wm_status_t tensor_from_proto(Onnx__TensorProto *p, const char *base_dir,
                                     wm_tensor_t **out) {
  wm_dtype_t dtype = WM_DTYPE_UNDEFINED;
  wm_shape_t shape = {0};
  size_t count = 0;
  WM_RETURN_IF_ERROR(proto_shape(p, &dtype, &shape, &count));
  if (p->segment) {
    return WM_ERROR(UNIMPLEMENTED, "segmented tensors are not supported");
  }
  char desc[160];
  describe(dtype, &shape, desc, sizeof(desc));
  size_t counts[FIELD_COUNT];
  field_counts(p, counts);
  typed_field_t field = field_of(dtype);
  if (p->has_data_location &&
      p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    for (int f = 0; f < FIELD_COUNT; f++) {
      if (counts[f]) {
        return WM_ERROR(INVALID_ARGUMENT,
                        "data_location is EXTERNAL but %s is also set",
                        field_names[f]);
      }
    }
    return read_external(p, base_dir, dtype, &shape, count, out);
  }
  if (p->has_data_location &&
      p->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT) {
    return WM_ERROR(INVALID_ARGUMENT, "unknown data_location %d",
                    (int)p->data_location);
  }
  for (int f = 0; f < FIELD_COUNT; f++) {
    if (counts[f] && (f != (int)field || p->has_raw_data)) {
      return WM_ERROR(INVALID_ARGUMENT, "%s tensor has %s (%zu values)%s",
                      wm_dtype_name(dtype), field_names[f], counts[f],
                      p->has_raw_data ? " besides raw_data" : "");
    }
  }
  size_t want = file_bytes(dtype, count);
  if (p->has_raw_data) {
    if (dtype == WM_DTYPE_STRING) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "string tensor has raw_data; strings belong in "
                      "string_data");
    }
    if (p->raw_data.len != want) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "raw_data holds %zu bytes, want %zu for %s",
                      p->raw_data.len, want, desc);
    }
    if (want && p->raw_data.data && is_packed(dtype)) {
      WM_RETURN_IF_ERROR(wm_tensor_create(dtype, &shape, out));
      unpack_elements(*out, p->raw_data.data);
      return NULL;
    }
    if (want && p->raw_data.data) {
      // Take protobuf-c's own copy of the bytes (a separate wm_malloc
      // block) instead of copying the weights once more.
      WM_RETURN_IF_ERROR(wm_tensor_wrap(dtype, &shape, p->raw_data.data, out));
      (*out)->borrowed = false;
      p->raw_data.data = NULL;
      p->raw_data.len = 0;
      copy_le((*out)->data, (*out)->data, want, dtype);
      return NULL;
    }
    return wm_tensor_create(dtype, &shape, out);
  }
  size_t per =
      (dtype == WM_DTYPE_COMPLEX64 || dtype == WM_DTYPE_COMPLEX128) ? 2 : 1;
  // The packed types hold one packed byte per int32_data entry.
  size_t entries = is_packed(dtype) ? file_bytes(dtype, count) : count;
  if (counts[field] / per != entries || counts[field] % per != 0) {
    return WM_ERROR(INVALID_ARGUMENT, "%s has %zu values, want %zu for %s",
                    field_names[field], counts[field], entries * per, desc);
  }
  WM_RETURN_IF_ERROR(wm_tensor_create(dtype, &shape, out));
  wm_status_t s = fill_typed(p, *out);
  if (s) {
    wm_tensor_destroy(*out);
    *out = NULL;
  }
  return s;
}

wm_status_t wm_onnx_tensor_from_proto(Onnx__TensorProto *proto,
                                      const char *base_dir,
                                      wm_tensor_t **out_tensor) {
  *out_tensor = NULL;
  wm_status_t s = tensor_from_proto(proto, base_dir, out_tensor);
  if (s) {
    char name[96];
    s = wm_status_annotate(s, "tensor \"%s\"",
                           wm_onnx_safe(proto->name, name, sizeof(name)));
  }
  return s;
}

// ------------------------------------------------------ TensorProto out

wm_status_t wm_onnx_tensor_to_proto(const wm_tensor_t *tensor, const char *name,
                                    wm_arena_t *arena,
                                    Onnx__TensorProto *proto) {
  proto->name = (char *)(name ? name : "");
  proto->has_data_type = true;
  proto->data_type = (int32_t)tensor->dtype;
  proto->n_dims = (size_t)tensor->shape.rank;
  if (proto->n_dims) {
    proto->dims = wm_arena_alloc(arena, proto->n_dims * sizeof(int64_t));
    if (!proto->dims) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
    memcpy(proto->dims, tensor->shape.dims, proto->n_dims * sizeof(int64_t));
  }
  if (tensor->dtype == WM_DTYPE_STRING) {
    size_t bytes;
    proto->n_string_data = tensor->count;
    proto->string_data =
        wm_checked_mul(tensor->count, sizeof(ProtobufCBinaryData), &bytes)
            ? wm_arena_alloc(arena, bytes)
            : NULL;
    if (!proto->string_data) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
    for (size_t i = 0; i < tensor->count; i++) {
      char *s = ((char **)tensor->data)[i];
      proto->string_data[i].data = (uint8_t *)s;
      proto->string_data[i].len = s ? strlen(s) : 0;
    }
    return NULL;
  }
  proto->has_raw_data = true;
  proto->raw_data.len = tensor->nbytes;
  if (is_packed(tensor->dtype)) {
    proto->raw_data.len = file_bytes(tensor->dtype, tensor->count);
    proto->raw_data.data = wm_arena_alloc(arena, proto->raw_data.len + 1);
    if (!proto->raw_data.data) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
    pack_elements(tensor, proto->raw_data.data);
    return NULL;
  }
#if WM_ONNX_BIG_ENDIAN
  proto->raw_data.data = wm_arena_alloc(arena, tensor->nbytes);
  if (!proto->raw_data.data) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  copy_le(proto->raw_data.data, tensor->data, tensor->nbytes, tensor->dtype);
#else
  proto->raw_data.data = tensor->data;
#endif
  return NULL;
}

// ------------------------------------------------------ TensorProto files

// Explains why a TensorProto file failed: it may hold another ONNX value.
static wm_status_t explain_container(wm_status_t s, const uint8_t *data,
                                     size_t size) {
  wm_item_t item;
  if (wm_status_code(s) == WM_STATUS_RESOURCE_EXHAUSTED) {
    return s;
  }
  wm_status_t other =
      wm_onnx_item_load_buffer(data, size, WM_TYPE_SEQUENCE, &item, NULL);
  if (other || item.kind == WM_TYPE_TENSOR) {
    wm_status_free(other);
    wm_item_deinit(&item);
    return s;
  }
  wm_status_free(s);
  s = WM_ERROR(INVALID_ARGUMENT,
               "the file holds a sequence or optional of %zu values "
               "(SequenceProto or OptionalProto), not a tensor",
               item.count);
  wm_item_deinit(&item);
  return s;
}

static wm_status_t tensor_load(const uint8_t *data, size_t size,
                               const char *base_dir, wm_tensor_t **out_tensor,
                               char **out_name) {
  *out_tensor = NULL;
  if (out_name) {
    *out_name = NULL;
  }
  ProtobufCMessage *msg = NULL;
  wm_status_t s =
      wm_onnx_unpack(&onnx__tensor_proto__descriptor, data, size, &msg);
  if (!s) {
    s = wm_onnx_tensor_from_proto((Onnx__TensorProto *)msg, base_dir,
                                  out_tensor);
  }
  if (s) {
    wm_onnx_unpacked_free(msg);
    return explain_container(s, data, size);
  }
  if (out_name) {
    const char *name = ((Onnx__TensorProto *)msg)->name;
    *out_name = wm_strdup(name ? name : "");
    if (!*out_name) {
      s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
      wm_tensor_destroy(*out_tensor);
      *out_tensor = NULL;
    }
  }
  wm_onnx_unpacked_free(msg);
  return s;
}

wm_status_t wm_onnx_tensor_load_buffer(const uint8_t *data, size_t size,
                                       wm_tensor_t **out_tensor,
                                       char **out_name) {
  return wm_onnx_one_line(tensor_load(data, size, NULL, out_tensor, out_name));
}

// The outputs of one wm_onnx_tensor_load.
typedef struct tensor_file {
  wm_tensor_t **tensor;
  char **name;
} tensor_file_t;

static wm_status_t parse_tensor_file(const uint8_t *data, size_t size,
                                     const char *dir, void *env) {
  tensor_file_t *f = env;
  return tensor_load(data, size, dir, f->tensor, f->name);
}

wm_status_t wm_onnx_tensor_load(const char *path, wm_tensor_t **out_tensor,
                                char **out_name) {
  *out_tensor = NULL;
  if (out_name) {
    *out_name = NULL;
  }
  tensor_file_t f = {out_tensor, out_name};
  return wm_onnx_parse_file(path, parse_tensor_file, &f);
}

wm_status_t wm_onnx_tensor_save(const wm_tensor_t *tensor, const char *name,
                                const char *path) {
  wm_arena_t arena;
  wm_arena_init(&arena);
  Onnx__TensorProto proto = ONNX__TENSOR_PROTO__INIT;
  wm_status_t s = wm_onnx_tensor_to_proto(tensor, name, &arena, &proto);
  uint8_t *buf = NULL;
  if (!s) {
    size_t n = onnx__tensor_proto__get_packed_size(&proto);
    buf = wm_malloc(n);
    if (!buf) {
      s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory packing a tensor");
    } else {
      onnx__tensor_proto__pack(&proto, buf);
      s = wm_file_write(path, buf, n);
    }
  }
  free(buf);
  wm_arena_deinit(&arena);
  return s;
}
