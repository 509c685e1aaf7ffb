// wmap runtime session: runs a graph on a backend, allocating through the
// backend's device tier and executing nodes through its library tier.
// Thread-safety: one thread at a time per session.
#ifndef WMAP_SESSION_H_
#define WMAP_SESSION_H_

#include "wmap/graph.h"
#include "wmap/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wm_session wm_session_t;

// Checks |graph| (structure, schemas, shape inference: the graph's value
// types are updated), places every node on |backend| and uploads the
// initializers. Both are borrowed and must outlive the session. Fails
// listing the nodes the backend cannot run, with its reasons.
wm_status_t wm_session_create(wm_graph_t *graph, wm_backend_t *backend,
                              wm_session_t **out_session) WM_MUST_USE_RESULT;
// Frees a session and its device memory; accepts NULL.
void wm_session_destroy(wm_session_t *session);

// Runs the graph once. |inputs| are bound by name to graph inputs (a
// graph input that is also an initializer may be left out). On success
// out_outputs[i] (graph->output_count slots) receives a new host tensor
// per graph output, owned by the caller.
wm_status_t wm_session_run(wm_session_t *session, const char *const *names,
                           const wm_tensor_t *const *inputs, size_t n_inputs,
                           wm_tensor_t **out_outputs) WM_MUST_USE_RESULT;

// Returns the number of graph nodes the session executes.
size_t wm_session_node_count(const wm_session_t *session);

#ifdef __cplusplus
}
#endif

#endif  // WMAP_SESSION_H_
