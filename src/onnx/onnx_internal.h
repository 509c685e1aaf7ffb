// Internals shared by the ONNX importer and exporter: protobuf-c glue,
// wire-format checks and TensorProto conversion. Not installed.
#ifndef WMAP_SRC_ONNX_ONNX_INTERNAL_H_
#define WMAP_SRC_ONNX_ONNX_INTERNAL_H_

#include "onnx/onnx.pb-c.h"
#include "wmap/graph.h"

// Deepest message nesting accepted (protobuf's own default limit).
#define WM_ONNX_MAX_DEPTH 100

// Walks the wire format of |data| as a |desc| message: every length and
// tag in bounds, nesting at most WM_ONNX_MAX_DEPTH. protobuf-c recurses
// without a limit, so this runs first on every untrusted buffer.
wm_status_t wm_onnx_wire_check(const uint8_t *data, size_t size,
                               const ProtobufCMessageDescriptor *desc)
    WM_MUST_USE_RESULT;

// One field of a protobuf message: its number, wire type and payload.
typedef struct wm_onnx_wire_field {
  uint32_t number;  // field number
  uint32_t wire;    // wire type (0, 1, 2 or 5)
  uint64_t varint;  // the value for wire type 0
  size_t start;     // payload offset for wire type 2
  size_t len;       // payload length for wire type 2
} wm_onnx_wire_field_t;

// Reads the field at data[*pos] and advances *pos past it; returns a
// static reason when the field is cut off or malformed, else NULL.
const char *wm_onnx_wire_next(const uint8_t *data, size_t size, size_t *pos,
                              wm_onnx_wire_field_t *f);
// Unpacks a |desc| message from untrusted |data| after the wire check,
// allocating through wm_malloc (so fault injection reaches it).
wm_status_t wm_onnx_unpack(const ProtobufCMessageDescriptor *desc,
                           const uint8_t *data, size_t size,
                           ProtobufCMessage **out_msg) WM_MUST_USE_RESULT;
// The raw_data of one initializer of a model's main graph, lifted out of
// the model's bytes: payload at |offset| of |len| bytes in the original,
// for initializer number |index|.
typedef struct wm_onnx_lifted {
  size_t offset, len, index;
} wm_onnx_lifted_t;
// Re-encodes ModelProto |data| without the raw_data payloads of at least
// |min_len| bytes of its main graph's initializers (into *out, *out_size;
// the list in *out_lifted, *out_n). Weights then go from the file to
// their tensors once, not through a second copy of the whole model. False
// (nothing allocated) when |data| is malformed or uses a form this does
// not lift (the graph field twice): the caller unpacks it whole.
bool wm_onnx_lift_raw(const uint8_t *data, size_t size, size_t min_len,
                      uint8_t **out, size_t *out_size,
                      wm_onnx_lifted_t **out_lifted, size_t *out_n);
// Frees a message from wm_onnx_unpack; accepts NULL.
void wm_onnx_unpacked_free(ProtobufCMessage *msg);

// Writes |s| into |buf| for an error message: control bytes become '?',
// long strings are cut with "..."; NULL becomes "". Returns |buf|.
const char *wm_onnx_safe(const char *s, char *buf, size_t size);

// Returns |status| with control characters removed from its message so
// that every error stays on one line (NULL stays NULL).
wm_status_t wm_onnx_one_line(wm_status_t status);

// Converts a TensorProto into a new host tensor. |base_dir| is the folder
// for external data (NULL refuses it); errors start with the tensor name.
// The tensor takes over proto->raw_data's bytes (left empty).
wm_status_t wm_onnx_tensor_from_proto(
    Onnx__TensorProto *proto, const char *base_dir,
    wm_tensor_t **out_tensor) WM_MUST_USE_RESULT;
// Fills |proto| (initialized by the caller) from |tensor|, allocating in
// |arena|; data goes to raw_data (little-endian) or string_data.
wm_status_t wm_onnx_tensor_to_proto(const wm_tensor_t *tensor, const char *name,
                                    wm_arena_t *arena, Onnx__TensorProto *proto)
    WM_MUST_USE_RESULT;
// Reads the value file at |path| and returns parse(data, size, folder,
// env), the folder being where external data is read from; an error is
// annotated with the path and kept on one line.
typedef wm_status_t (*wm_onnx_parse_fn)(const uint8_t *data, size_t size,
                                        const char *dir, void *env);
wm_status_t wm_onnx_parse_file(const char *path, wm_onnx_parse_fn parse,
                               void *env) WM_MUST_USE_RESULT;
// Returns a heap copy of the folder part of |path| ("." if none).
char *wm_onnx_dirname(const char *path);

#endif  // WMAP_SRC_ONNX_ONNX_INTERNAL_H_
