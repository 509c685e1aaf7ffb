// ONNX value files: TensorProto, SequenceProto and OptionalProto (the
// messages of onnx-data.proto, which Debian does not ship, so the two
// containers are read and written at the wire level here).
//
// SequenceProto and OptionalProto share one layout: 1 name, 2 elem_type
// (0 undefined, 1 tensor, 2 sparse tensor, 3 sequence, 4 map, 5 optional)
// and the value fields 3..7 in that order (repeated in a sequence, at most
// one in an optional).
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_internal.h"
#include "wmap/onnx.h"

enum {
  ELEM_UNDEFINED = 0,
  ELEM_TENSOR = 1,
  ELEM_SPARSE = 2,
  ELEM_SEQUENCE = 3,
  ELEM_MAP = 4,
  ELEM_OPTIONAL = 5,
};

static const char *kind_message(wm_type_kind_t kind) {
  return kind == WM_TYPE_SEQUENCE   ? "SequenceProto"
         : kind == WM_TYPE_OPTIONAL ? "OptionalProto"
                                    : "TensorProto";
}

static wm_status_t parse_value(const uint8_t *data, size_t size,
                               const char *base_dir, wm_type_kind_t kind,
                               int depth, wm_item_t *out, char **out_name);

static wm_status_t parse_tensor(const uint8_t *data, size_t size,
                                const char *base_dir, wm_item_t *out,
                                char **out_name) {
  ProtobufCMessage *msg = NULL;
  wm_tensor_t *t = NULL;
  wm_status_t s =
      wm_onnx_unpack(&onnx__tensor_proto__descriptor, data, size, &msg);
  if (!s) {
    s = wm_onnx_tensor_from_proto((Onnx__TensorProto *)msg, base_dir, &t);
  }
  if (!s && out_name) {
    const char *name = ((Onnx__TensorProto *)msg)->name;
    *out_name = wm_strdup(name ? name : "");
    if (!*out_name) {
      s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  wm_onnx_unpacked_free(msg);
  if (s) {
    wm_tensor_destroy(t);
    return s;
  }
  *out = wm_item_tensor_take(t);
  return NULL;
}

static wm_status_t parse_container(const uint8_t *data, size_t size,
                                   const char *base_dir, wm_type_kind_t kind,
                                   int depth, wm_item_t *out, char **out_name) {
  const char *what = kind_message(kind);
  if (depth > WM_ONNX_MAX_DEPTH) {
    return WM_ERROR(INVALID_ARGUMENT, "%ss nest deeper than %d", what,
                    WM_ONNX_MAX_DEPTH);
  }
  // First pass: the element type, the values' field and how many.
  size_t pos = 0, values = 0;
  uint64_t elem = ELEM_UNDEFINED;
  uint32_t field = 0;
  const uint8_t *name = NULL;
  size_t name_len = 0;
  while (pos < size) {
    size_t at = pos;
    wm_onnx_wire_field_t f;
    const char *why = wm_onnx_wire_next(data, size, &pos, &f);
    if (why) {
      return WM_ERROR(DATA_LOSS, "truncated or corrupt %s: %s at byte %zu",
                      what, why, at);
    }
    if (f.number == 1 && f.wire == 2) {
      name = data + f.start;
      name_len = f.len;
    } else if (f.number == 2 && f.wire == 0) {
      elem = f.varint;
    } else if (f.number >= 3 && f.number <= 7 && f.wire == 2) {
      if (field && field != f.number) {
        return WM_ERROR(DATA_LOSS, "%s holds values in fields %u and %u", what,
                        field, f.number);
      }
      field = f.number;
      values++;
    } else {
      return WM_ERROR(DATA_LOSS,
                      "not a %s: field %u with wire type %u at byte %zu", what,
                      f.number, f.wire, at);
    }
  }
  if (elem > ELEM_OPTIONAL || (field && field != elem + 2)) {
    return WM_ERROR(DATA_LOSS,
                    "%s: elem_type %llu does not match its values (field %u)",
                    what, (unsigned long long)elem, field);
  }
  if (kind == WM_TYPE_OPTIONAL && values > 1) {
    return WM_ERROR(DATA_LOSS, "OptionalProto holds %zu values, want 0 or 1",
                    values);
  }
  if (elem == ELEM_SPARSE || elem == ELEM_MAP) {
    return WM_ERROR(UNIMPLEMENTED, "%s of %s elements: not supported", what,
                    elem == ELEM_MAP ? "map" : "sparse tensor");
  }
  wm_type_kind_t elem_kind = elem == ELEM_SEQUENCE   ? WM_TYPE_SEQUENCE
                             : elem == ELEM_OPTIONAL ? WM_TYPE_OPTIONAL
                                                     : WM_TYPE_TENSOR;
  WM_RETURN_IF_ERROR(
      wm_item_init(out, kind, elem_kind, WM_DTYPE_UNDEFINED, values));
  // Second pass: the values.
  pos = 0;
  wm_status_t s = NULL;
  while (!s && pos < size) {
    wm_onnx_wire_field_t f;
    wm_onnx_wire_next(data, size, &pos, &f);
    if (f.number < 3 || f.wire != 2) {
      continue;
    }
    wm_item_t *e = &out->elems[out->count];
    s = parse_value(data + f.start, f.len, base_dir, elem_kind, depth + 1, e,
                    NULL);
    if (s) {
      s = wm_status_annotate(s, "%s value %zu", what, out->count);
      break;
    }
    out->count++;
    wm_dtype_t dt = wm_item_dtype(e);
    if (out->count == 1) {
      out->elem_dtype = dt;
    } else if (dt != out->elem_dtype) {
      s = WM_ERROR(DATA_LOSS, "%s value %zu is %s, value 0 %s", what,
                   out->count - 1, wm_dtype_name(dt),
                   wm_dtype_name(out->elem_dtype));
    }
  }
  if (!s && out_name) {
    *out_name = name ? wm_strndup((const char *)name, name_len) : wm_strdup("");
    if (!*out_name) {
      s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  if (s) {
    wm_item_deinit(out);
  }
  return s;
}

static wm_status_t parse_value(const uint8_t *data, size_t size,
                               const char *base_dir, wm_type_kind_t kind,
                               int depth, wm_item_t *out, char **out_name) {
  memset(out, 0, sizeof(*out));
  if (kind == WM_TYPE_SEQUENCE || kind == WM_TYPE_OPTIONAL) {
    return parse_container(data, size, base_dir, kind, depth, out, out_name);
  }
  return parse_tensor(data, size, base_dir, out, out_name);
}

// Parses |data| as |kind|'s message; a tensor that does not parse is
// tried as a sequence, then as an optional (a declared tensor type may be
// a guess), and an optional as a sequence (ONNX 1.12's test data holds
// SequenceProto files for optional sequence outputs). The error is the
// one of |kind|'s message.
static wm_status_t item_load(const uint8_t *data, size_t size,
                             const char *base_dir, wm_type_kind_t kind,
                             wm_item_t *out, char **out_name) {
  static const wm_type_kind_t order[] = {WM_TYPE_TENSOR, WM_TYPE_SEQUENCE,
                                         WM_TYPE_OPTIONAL};
  if (kind != WM_TYPE_SEQUENCE && kind != WM_TYPE_OPTIONAL) {
    kind = WM_TYPE_TENSOR;
  }
  // Empty bytes parse as every message kind (all fields unset): an empty
  // file would read as "a sequence of 0 tensors".
  if (size == 0) {
    return WM_ERROR(INVALID_ARGUMENT, "empty (0 bytes), want a %s",
                    kind_message(kind));
  }
  wm_status_t first = parse_value(data, size, base_dir, kind, 0, out, out_name);
  if (first && kind == WM_TYPE_OPTIONAL &&
      wm_status_code(first) != WM_STATUS_RESOURCE_EXHAUSTED) {
    wm_status_t s =
        parse_value(data, size, base_dir, WM_TYPE_SEQUENCE, 0, out, out_name);
    if (!s) {
      wm_status_free(first);
      return NULL;
    }
    wm_status_free(s);
  }
  if (!first || kind != WM_TYPE_TENSOR ||
      wm_status_code(first) == WM_STATUS_RESOURCE_EXHAUSTED) {
    return first ? wm_status_annotate(first, "reading a %s", kind_message(kind))
                 : NULL;
  }
  for (size_t i = 1; i < sizeof(order) / sizeof(order[0]); i++) {
    wm_status_t s =
        parse_value(data, size, base_dir, order[i], 0, out, out_name);
    if (!s) {
      wm_status_free(first);
      return NULL;
    }
    wm_status_free(s);
  }
  return wm_status_annotate(first, "reading a %s", kind_message(kind));
}

wm_status_t wm_onnx_item_load_buffer(const uint8_t *data, size_t size,
                                     wm_type_kind_t kind, wm_item_t *out_item,
                                     char **out_name) {
  if (out_name) {
    *out_name = NULL;
  }
  return wm_onnx_one_line(
      item_load(data, size, NULL, kind, out_item, out_name));
}

// The request and outputs of one wm_onnx_item_load.
typedef struct item_file {
  wm_type_kind_t kind;
  wm_item_t *item;
  char **name;
} item_file_t;

static wm_status_t parse_item_file(const uint8_t *data, size_t size,
                                   const char *dir, void *env) {
  item_file_t *f = env;
  return item_load(data, size, dir, f->kind, f->item, f->name);
}

wm_status_t wm_onnx_item_load(const char *path, wm_type_kind_t kind,
                              wm_item_t *out_item, char **out_name) {
  memset(out_item, 0, sizeof(*out_item));
  if (out_name) {
    *out_name = NULL;
  }
  item_file_t f = {kind, out_item, out_name};
  return wm_onnx_parse_file(path, parse_item_file, &f);
}

// ------------------------------------------------------------- writing

static void put_varint(wm_strbuf_t *b, uint64_t v) {
  char bytes[10];
  size_t n = 0;
  do {
    bytes[n] = (char)(v & 0x7f);
    v >>= 7;
    bytes[n] = (char)(bytes[n] | (v ? 0x80 : 0));
    n++;
  } while (v);
  wm_strbuf_append(b, bytes, n);
}

// Appends field |number| (length-delimited) holding |n| bytes at |p|.
static void put_bytes(wm_strbuf_t *b, uint32_t number, const void *p,
                      size_t n) {
  put_varint(b, (uint64_t)number << 3 | 2);
  put_varint(b, n);
  wm_strbuf_append(b, p, n);
}

static wm_status_t encode(const wm_item_t *item, const char *name, int depth,
                          wm_strbuf_t *out);

static wm_status_t encode_tensor(const wm_tensor_t *t, const char *name,
                                 wm_strbuf_t *out) {
  wm_arena_t arena;
  wm_arena_init(&arena);
  Onnx__TensorProto proto = ONNX__TENSOR_PROTO__INIT;
  wm_status_t s = wm_onnx_tensor_to_proto(t, name, &arena, &proto);
  uint8_t *buf = NULL;
  if (!s) {
    size_t n = onnx__tensor_proto__get_packed_size(&proto);
    buf = wm_malloc(n + 1);
    if (!buf) {
      s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory packing a tensor");
    } else {
      wm_strbuf_append(out, (const char *)buf,
                       onnx__tensor_proto__pack(&proto, buf));
    }
  }
  free(buf);
  wm_arena_deinit(&arena);
  return s;
}

static wm_status_t encode(const wm_item_t *item, const char *name, int depth,
                          wm_strbuf_t *out) {
  if (depth > WM_ONNX_MAX_DEPTH) {
    return WM_ERROR(INVALID_ARGUMENT, "items nest deeper than %d",
                    WM_ONNX_MAX_DEPTH);
  }
  if (item->kind == WM_TYPE_TENSOR) {
    if (!item->tensor) {
      return WM_ERROR(INVALID_ARGUMENT, "a tensor item without a tensor");
    }
    return encode_tensor(item->tensor, name, out);
  }
  if (item->kind != WM_TYPE_SEQUENCE && item->kind != WM_TYPE_OPTIONAL) {
    return WM_ERROR(UNIMPLEMENTED, "items of kind %d cannot be written",
                    (int)item->kind);
  }
  uint64_t elem = item->elem_kind == WM_TYPE_SEQUENCE   ? ELEM_SEQUENCE
                  : item->elem_kind == WM_TYPE_OPTIONAL ? ELEM_OPTIONAL
                                                        : ELEM_TENSOR;
  if (name && *name) {
    put_bytes(out, 1, name, strlen(name));
  }
  put_varint(out, 2 << 3);
  put_varint(out, elem);
  for (size_t i = 0; i < item->count; i++) {
    wm_strbuf_t sub;
    wm_strbuf_init(&sub);
    wm_status_t s = encode(&item->elems[i], NULL, depth + 1, &sub);
    if (!s) {
      put_bytes(out, (uint32_t)elem + 2, sub.data ? sub.data : "", sub.len);
      out->failed |= sub.failed;
    }
    wm_strbuf_deinit(&sub);
    WM_RETURN_IF_ERROR(s);
  }
  return NULL;
}

wm_status_t wm_onnx_item_save(const wm_item_t *item, const char *name,
                              const char *path) {
  wm_strbuf_t buf;
  wm_strbuf_init(&buf);
  wm_status_t s = encode(item, name, 0, &buf);
  if (!s && buf.failed) {
    s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory encoding \"%s\"",
                 name ? name : "");
  }
  if (!s) {
    s = wm_file_write(path, buf.data ? buf.data : "", buf.len);
  }
  wm_strbuf_deinit(&buf);
  return s;
}
