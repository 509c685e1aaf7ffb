// wmap zoo: reference architectures (ResNet, MobileNetV2, BERT, GPT-2, an
// MLP) built with the IR builder API, with deterministic random weights.
// Thread-safety: the functions are reentrant.
#ifndef WMAP_ZOO_H_
#define WMAP_ZOO_H_

#include "wmap/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

WM_API_BEGIN

// One parameter a model accepts in its spec ("bert-base:layers=2").
typedef struct wm_zoo_key {
  const char *name;  // e.g. "layers"
  int64_t def;       // default value
  int64_t min;       // smallest accepted value
  int64_t max;       // largest accepted value
  const char *doc;   // one line, e.g. "encoder layers"
} wm_zoo_key_t;

// One model of the zoo.
typedef struct wm_zoo_model {
  const char *name;          // e.g. "resnet50"
  const char *description;   // one line
  size_t key_count;          // number of |keys|
  const wm_zoo_key_t *keys;  // parameters, with defaults
} wm_zoo_model_t;

// Returns the number of models in the zoo.
size_t wm_zoo_count(void);
// Returns model |i| (0 <= i < wm_zoo_count()); static storage.
const wm_zoo_model_t *wm_zoo_at(size_t i);
// Returns the model named |name|, or NULL.
const wm_zoo_model_t *wm_zoo_find(const char *name);

// Builds the model described by |spec|, "NAME[:key=value,...]", e.g.
// "bert-base:layers=2,seq=64"; an unknown model or key, or a bad value,
// gives INVALID_ARGUMENT naming it and what is allowed. The graph imports
// the default domain at opset 17 and has fully known input shapes.
wm_status_t wm_zoo_build(const char *spec,
                         wm_graph_t **out_graph) WM_MUST_USE_RESULT;

WM_API_END

#ifdef __cplusplus
}
#endif

#endif  // WMAP_ZOO_H_
