// wmap ONNX import and export: ModelProto files to and from wm_graph_t,
// and TensorProto files (test data). Every input is untrusted: errors name
// the field, node or tensor at fault and never crash.
// Thread-safety: the functions are reentrant.
#ifndef WMAP_ONNX_H_
#define WMAP_ONNX_H_

#include "wmap/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

WM_API_BEGIN

// Loads the model file at |path|. External data is read relative to the
// file's folder; a location that leaves that folder is refused.
wm_status_t wm_onnx_load(const char *path,
                         wm_graph_t **out_graph) WM_MUST_USE_RESULT;
// Loads a model from memory; |base_dir| is the folder for external data
// (NULL refuses external data).
wm_status_t wm_onnx_load_buffer(const uint8_t *data, size_t size,
                                const char *base_dir,
                                wm_graph_t **out_graph) WM_MUST_USE_RESULT;
// Serializes |graph| (with its subgraphs, initializers as raw_data,
// value_info, opsets and metadata) into a heap buffer to be freed.
wm_status_t wm_onnx_save_buffer(const wm_graph_t *graph, uint8_t **out_data,
                                size_t *out_size) WM_MUST_USE_RESULT;
// Serializes |graph| as wm_onnx_save_buffer does, handing the bytes to
// |sink| in order, piece by piece (weights straight from their tensors):
// no buffer of the whole model is made.
typedef void (*wm_onnx_sink_fn)(void *ctx, const uint8_t *data, size_t len);
wm_status_t wm_onnx_save_stream(const wm_graph_t *graph, wm_onnx_sink_fn sink,
                                void *ctx) WM_MUST_USE_RESULT;
// Writes |graph| to the file |path| (streamed).
wm_status_t wm_onnx_save(const wm_graph_t *graph,
                         const char *path) WM_MUST_USE_RESULT;

// Reads a TensorProto file; *out_name (may be NULL) receives a heap copy
// of its name ("" if none) to be freed.
wm_status_t wm_onnx_tensor_load(const char *path, wm_tensor_t **out_tensor,
                                char **out_name) WM_MUST_USE_RESULT;
// Parses a TensorProto from memory.
wm_status_t wm_onnx_tensor_load_buffer(const uint8_t *data, size_t size,
                                       wm_tensor_t **out_tensor,
                                       char **out_name) WM_MUST_USE_RESULT;
// Writes |tensor| as a TensorProto file named |name|.
wm_status_t wm_onnx_tensor_save(const wm_tensor_t *tensor, const char *name,
                                const char *path) WM_MUST_USE_RESULT;

// Reads a value file: a TensorProto, SequenceProto or OptionalProto (the
// two containers share one wire layout, so |kind| says which to read
// first; the others are tried when it does not parse). *out_name (may be
// NULL) receives a heap copy of the value's name.
wm_status_t wm_onnx_item_load(const char *path, wm_type_kind_t kind,
                              wm_item_t *out_item,
                              char **out_name) WM_MUST_USE_RESULT;
// Parses a value from memory, as wm_onnx_item_load.
wm_status_t wm_onnx_item_load_buffer(const uint8_t *data, size_t size,
                                     wm_type_kind_t kind, wm_item_t *out_item,
                                     char **out_name) WM_MUST_USE_RESULT;
// Writes |item| as a TensorProto, SequenceProto or OptionalProto file.
wm_status_t wm_onnx_item_save(const wm_item_t *item, const char *name,
                              const char *path) WM_MUST_USE_RESULT;

WM_API_END

#ifdef __cplusplus
}
#endif

#endif  // WMAP_ONNX_H_
