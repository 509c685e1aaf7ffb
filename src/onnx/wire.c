// Wire-format checks and protobuf-c glue for untrusted buffers.
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_internal.h"

// Reads a base-128 varint at data[*pos..end); false if cut or too long.
static bool read_varint(const uint8_t *data, size_t end, size_t *pos,
                        uint64_t *out) {
  uint64_t v = 0;
  for (unsigned i = 0; i < 10; i++) {
    if (*pos >= end) {
      return false;
    }
    uint8_t b = data[(*pos)++];
    if (i == 9 && b > 1) {
      return false;
    }
    v |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

const char *wm_onnx_wire_next(const uint8_t *data, size_t size, size_t *pos,
                              wm_onnx_wire_field_t *f) {
  uint64_t key;
  if (!read_varint(data, size, pos, &key)) {
    return "field key is cut off";
  }
  if ((key >> 3) == 0 || (key >> 3) > 0x1fffffff) {
    return "field number is out of range";
  }
  f->number = (uint32_t)(key >> 3);
  f->wire = (uint32_t)(key & 7);
  switch (f->wire) {
    case 0:
      if (!read_varint(data, size, pos, &f->varint)) {
        return "varint is cut off";
      }
      return NULL;
    case 1:
    case 5: {
      size_t n = f->wire == 1 ? 8 : 4;
      if (size - *pos < n) {
        return "fixed-size value is cut off";
      }
      *pos += n;
      return NULL;
    }
    case 2: {
      uint64_t len;
      if (!read_varint(data, size, pos, &len)) {
        return "length is cut off";
      }
      if (len > size - *pos) {
        return "length runs past the end";
      }
      f->start = *pos;
      f->len = (size_t)len;
      *pos += (size_t)len;
      return NULL;
    }
    default:
      return "unsupported wire type (groups or garbage)";
  }
}

// The value of the top-level string field "name" of message |desc| in
// data[0..size), made printable into |buf|, or NULL without one.
static const char *message_name(const uint8_t *data, size_t size,
                                const ProtobufCMessageDescriptor *desc,
                                char *buf, size_t buf_size) {
  const ProtobufCFieldDescriptor *name =
      protobuf_c_message_descriptor_get_field_by_name(desc, "name");
  size_t pos = 0;
  wm_onnx_wire_field_t f;
  while (name && pos < size && !wm_onnx_wire_next(data, size, &pos, &f)) {
    if (f.wire == 2 && f.number == name->id) {
      char raw[96];
      size_t n = f.len < sizeof(raw) - 1 ? f.len : sizeof(raw) - 1;
      for (size_t i = 0; i < n; i++) {  // a NUL must not cut the name
        raw[i] = data[f.start + i] ? (char)data[f.start + i] : '?';
      }
      raw[n] = '\0';
      return wm_onnx_safe(raw, buf, buf_size);
    }
  }
  return NULL;
}

// Refuses a NUL byte inside string field |fd| (protobuf-c's C strings
// would end there: "w.bin\0../x" would read as "w.bin"), naming the field
// and the value.
static wm_status_t check_string(const uint8_t *data,
                                const wm_onnx_wire_field_t *f, size_t base,
                                const ProtobufCMessageDescriptor *desc,
                                const ProtobufCFieldDescriptor *fd) {
  const void *nul = memchr(data + f->start, 0, f->len);
  if (!nul) {
    return NULL;
  }
  char raw[96], safe[112];
  size_t n = f->len < sizeof(raw) - 1 ? f->len : sizeof(raw) - 1;
  for (size_t i = 0; i < n; i++) {
    raw[i] = data[f->start + i] ? (char)data[f->start + i] : '?';
  }
  raw[n] = '\0';
  return WM_ERROR(INVALID_ARGUMENT,
                  "%s.%s \"%s\" holds a NUL byte (at byte %zu); strings "
                  "such as names and paths cannot",
                  desc->short_name, fd->name,
                  wm_onnx_safe(raw, safe, sizeof(safe)),
                  base + (size_t)((const uint8_t *)nul - data));
}

static wm_status_t wire_walk(const uint8_t *data, size_t size, size_t base,
                             const ProtobufCMessageDescriptor *desc,
                             int depth) {
  size_t pos = 0;
  while (pos < size) {
    size_t at = pos;
    wm_onnx_wire_field_t f;
    const char *why = wm_onnx_wire_next(data, size, &pos, &f);
    if (why) {
      return WM_ERROR(DATA_LOSS,
                      "truncated or corrupt protobuf: %s at byte %zu", why,
                      base + at);
    }
    if (f.wire != 2 || !desc) {
      continue;
    }
    const ProtobufCFieldDescriptor *fd =
        protobuf_c_message_descriptor_get_field(desc, f.number);
    if (fd && fd->type == PROTOBUF_C_TYPE_STRING) {
      WM_RETURN_IF_ERROR(check_string(data, &f, base, desc, fd));
    }
    if (!fd || fd->type != PROTOBUF_C_TYPE_MESSAGE) {
      continue;
    }
    if (depth + 1 > WM_ONNX_MAX_DEPTH) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "protobuf messages nest deeper than %d at byte %zu",
                      WM_ONNX_MAX_DEPTH, base + at);
    }
    wm_status_t st = wire_walk(data + f.start, f.len, base + f.start,
                               fd->descriptor, depth + 1);
    if (st && wm_status_code(st) == WM_STATUS_INVALID_ARGUMENT) {
      // Name the message it is in: TensorProto "w", NodeProto "conv".
      const ProtobufCMessageDescriptor *in = fd->descriptor;
      char nb[112];
      const char *name =
          message_name(data + f.start, f.len, in, nb, sizeof(nb));
      if (name) {
        st = wm_status_annotate(st, "%s \"%s\"", in->short_name, name);
      }
    }
    if (st) {
      return st;
    }
  }
  return NULL;
}

wm_status_t wm_onnx_wire_check(const uint8_t *data, size_t size,
                               const ProtobufCMessageDescriptor *desc) {
  return wire_walk(data, size, 0, desc, 0);
}

// ---------------------------------------------------- lifting raw_data

// Bytes being re-encoded.
typedef struct bytes {
  uint8_t *data;
  size_t len, cap;
  bool failed;
} bytes_t;

static void put(bytes_t *b, const void *src, size_t n) {
  if (b->failed || wm_grow((void **)&b->data, &b->cap, b->len + n + 1, 1)) {
    b->failed = true;
    return;
  }
  memcpy(b->data + b->len, src, n);
  b->len += n;
}

static void put_varint(bytes_t *b, uint64_t v) {
  uint8_t tmp[10];
  size_t n = 0;
  do {
    tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  put(b, tmp, n);
}

// Writes field |number| (wire type 2) holding |child|.
static void put_child(bytes_t *b, uint32_t number, const bytes_t *child) {
  put_varint(b, (uint64_t)number << 3 | 2);
  put_varint(b, child->len);
  put(b, child->data, child->len);
}

typedef struct lifter {
  const uint8_t *base;  // the original model
  size_t min_len;
  wm_onnx_lifted_t *list;
  size_t n, cap;
  bool failed;
} lifter_t;

// Copies the message at data[0, size) to |out| but for the fields
// |keep_fn| rewrites: TensorProto drops a large raw_data (field 9),
// GraphProto rewrites each initializer (5), ModelProto its graph (7).
enum { LIFT_TENSOR = 0, LIFT_GRAPH = 1, LIFT_MODEL = 2 };

static bool lift_message(lifter_t *l, const uint8_t *data, size_t size,
                         int level, size_t index, bytes_t *out) {
  size_t pos = 0, inits = 0, graphs = 0;
  while (pos < size) {
    size_t at = pos;
    wm_onnx_wire_field_t f;
    if (wm_onnx_wire_next(data, size, &pos, &f)) {
      return false;
    }
    bool lifted = f.wire == 2 && ((level == LIFT_TENSOR && f.number == 9) ||
                                  (level == LIFT_GRAPH && f.number == 5) ||
                                  (level == LIFT_MODEL && f.number == 7));
    if (!lifted) {
      put(out, data + at, pos - at);
      continue;
    }
    if (level == LIFT_TENSOR) {
      if (f.len < l->min_len) {
        put(out, data + at, pos - at);
        continue;
      }
      if (wm_grow((void **)&l->list, &l->cap, l->n + 1, sizeof(*l->list))) {
        return false;
      }
      l->list[l->n++] =
          (wm_onnx_lifted_t){(size_t)(data + f.start - l->base), f.len, index};
      continue;
    }
    if (level == LIFT_MODEL && ++graphs > 1) {
      return false;  // merged graphs: left to protobuf-c
    }
    bytes_t child = {0};
    bool ok = lift_message(l, data + f.start, f.len, level - 1,
                           level == LIFT_GRAPH ? inits++ : 0, &child);
    if (ok) {
      put_child(out, f.number, &child);
    }
    free(child.data);
    if (!ok) {
      return false;
    }
  }
  return !out->failed;
}

bool wm_onnx_lift_raw(const uint8_t *data, size_t size, size_t min_len,
                      uint8_t **out, size_t *out_size,
                      wm_onnx_lifted_t **out_lifted, size_t *out_n) {
  *out = NULL;
  *out_size = 0;
  *out_lifted = NULL;
  *out_n = 0;
  lifter_t l = {.base = data, .min_len = min_len};
  bytes_t b = {0};
  if (!lift_message(&l, data, size, LIFT_MODEL, 0, &b) || b.failed) {
    free(b.data);
    free(l.list);
    return false;
  }
  *out = b.data ? b.data : wm_malloc(1);
  *out_size = b.len;
  *out_lifted = l.list;
  *out_n = l.n;
  if (!*out) {
    free(l.list);
    *out_lifted = NULL;
    *out_n = 0;
    return false;
  }
  return true;
}

// ------------------------------------------------------- protobuf-c glue

typedef struct unpack_alloc {
  ProtobufCAllocator base;  // what protobuf-c calls
  bool failed;              // an allocation failed
} unpack_alloc_t;

static void *alloc_fn(void *opaque, size_t size) {
  void *p = wm_malloc(size);
  if (!p) {
    ((unpack_alloc_t *)opaque)->failed = true;
  }
  return p;
}

static void free_fn(void *opaque, void *ptr) {
  (void)opaque;
  free(ptr);
}

wm_status_t wm_onnx_unpack(const ProtobufCMessageDescriptor *desc,
                           const uint8_t *data, size_t size,
                           ProtobufCMessage **out_msg) {
  *out_msg = NULL;
  WM_RETURN_IF_ERROR(wm_onnx_wire_check(data, size, desc));
  unpack_alloc_t a = {{alloc_fn, free_fn, NULL}, false};
  a.base.allocator_data = &a;
  ProtobufCMessage *msg = protobuf_c_message_unpack(desc, &a.base, size, data);
  if (!msg) {
    if (a.failed) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory decoding a %s",
                      desc->short_name);
    }
    return WM_ERROR(DATA_LOSS,
                    "malformed protobuf: not a valid %s (a field has the "
                    "wrong wire type or a bad value)",
                    desc->short_name);
  }
  *out_msg = msg;
  return NULL;
}

void wm_onnx_unpacked_free(ProtobufCMessage *msg) {
  if (!msg) {
    return;
  }
  unpack_alloc_t a = {{alloc_fn, free_fn, NULL}, false};
  a.base.allocator_data = &a;
  protobuf_c_message_free_unpacked(msg, &a.base);
}

// ---------------------------------------------------------- messages

const char *wm_onnx_safe(const char *s, char *buf, size_t size) {
  if (size == 0) {
    return buf;
  }
  if (!s) {
    s = "";
  }
  size_t n = strlen(s), keep = n;
  bool cut = false;
  if (n + 1 > size) {
    keep = size > 4 ? size - 4 : size - 1;
    cut = size > 4;
  }
  for (size_t i = 0; i < keep; i++) {
    unsigned char c = (unsigned char)s[i];
    buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
  }
  if (cut) {
    memcpy(buf + keep, "...", 3);
    keep += 3;
  }
  buf[keep] = '\0';
  return buf;
}

wm_status_t wm_onnx_one_line(wm_status_t status) {
  if (!status) {
    return NULL;
  }
  const char *msg = wm_status_message(status);
  bool clean = true;
  for (const char *p = msg; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (c < 0x20 || c == 0x7f) {
      clean = false;
      break;
    }
  }
  if (clean) {
    return status;
  }
  char *copy = wm_strdup(msg);
  if (!copy) {
    return status;
  }
  for (char *p = copy; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (c < 0x20 || c == 0x7f) {
      *p = '?';
    }
  }
  wm_status_t s =
      wm_status_make(wm_status_code(status), __FILE__, __LINE__, "%s", copy);
  free(copy);
  wm_status_free(status);
  return s;
}

char *wm_onnx_dirname(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) {
    return wm_strdup(".");
  }
  if (slash == path) {
    return wm_strdup("/");
  }
  return wm_strndup(path, (size_t)(slash - path));
}

wm_status_t wm_onnx_parse_file(const char *path, wm_onnx_parse_fn parse,
                               void *env) {
  uint8_t *data;
  size_t size;
  WM_RETURN_IF_ERROR(wm_file_read(path, &data, &size));
  char *dir = wm_onnx_dirname(path);
  wm_status_t s = dir ? parse(data, size, dir, env)
                      : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  free(dir);
  free(data);
  if (s) {
    char p[160];
    s = wm_status_annotate(s, "loading \"%s\"",
                           wm_onnx_safe(path, p, sizeof(p)));
  }
  return wm_onnx_one_line(s);
}
