// run_model: runs an ONNX model on chosen backends through libwmap.
//
//   run_model MODEL.onnx [BACKEND ...]      (default backend: cpu)
//
// Loads the model, finds the backends (the plugins installed beside
// libwmap, and the built-in ref), creates a session that places every node
// on the first listed backend that takes it (ref takes the rest), binds
// one input tensor per graph input (symbolic dims bound to 1: the session
// takes the shapes from the tensors), runs it and prints each output's
// shape, a checksum and where the nodes ran.
#include <stdio.h>
#include <stdlib.h>

#include "wmap/onnx.h"
#include "wmap/session.h"

// Prints |s| (if not NULL), frees it and returns whether it was an error.
static int failed(wm_status_t s, const char *what) {
  if (!s) {
    return 0;
  }
  fprintf(stderr, "run_model: %s: %s\n", what, wm_status_message(s));
  wm_status_free(s);
  return 1;
}

// A tensor for graph input |id|: its declared type, unknown dims as 1,
// filled with a fixed pattern.
static wm_status_t make_input(const wm_graph_t *g, int32_t id,
                              wm_tensor_t **out) {
  const wm_type_t *t = &g->values[id].type;
  wm_shape_t shape = t->shape;
  for (int32_t d = 0; d < shape.rank; d++) {
    if (shape.dims[d] < 0) {
      shape.dims[d] = 1;
    }
  }
  WM_RETURN_IF_ERROR(wm_tensor_create(t->dtype, &shape, out));
  for (size_t i = 0; i < (*out)->count; i++) {
    wm_tensor_set_f64(*out, i, (double)(i % 7) * 0.25 - 0.75);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: run_model MODEL.onnx [BACKEND ...]\n");
    return 2;
  }
  const char *const default_backends[] = {"cpu"};
  const char *const *names =
      argc > 2 ? (const char *const *)argv + 2 : default_backends;
  size_t n_names = argc > 2 ? (size_t)argc - 2 : 1;
  if (n_names > WM_SESSION_MAX_BACKENDS) {
    fprintf(stderr, "run_model: at most %d backends\n",
            WM_SESSION_MAX_BACKENDS);
    return 2;
  }

  wm_graph_t *graph = NULL;
  wm_registry_t *registry = NULL;
  wm_session_t *session = NULL;
  wm_tensor_t **inputs = NULL, **outputs = NULL;
  const char **input_names = NULL;
  size_t n_inputs = 0;
  int rc = 1;

  // The model, and every backend found, ref built in.
  if (failed(wm_onnx_load(argv[1], &graph), argv[1])) {
    goto done;
  }
  wm_registry_options_t ro = {.builtin_query = wm_ref_plugin_query};
  if (failed(wm_registry_create(&ro, &registry), "registry")) {
    goto done;
  }
  wm_backend_t *backends[WM_SESSION_MAX_BACKENDS], *ref = NULL;
  for (size_t i = 0; i < n_names; i++) {
    if (failed(wm_registry_find(registry, names[i], &backends[i]), names[i])) {
      goto done;
    }
  }
  if (failed(wm_registry_find(registry, "ref", &ref), "ref")) {
    goto done;
  }
  wm_session_options_t so = {.backends = backends,
                             .backend_count = n_names,
                             .fallback = ref,
                             .mode = WM_PLACEMENT_FALLBACK};
  if (failed(wm_session_create_placed(graph, &so, &session), "session")) {
    goto done;
  }

  // One tensor per input that is not an initializer.
  inputs = calloc(graph->input_count, sizeof(*inputs));
  input_names = calloc(graph->input_count, sizeof(*input_names));
  outputs = calloc(graph->output_count, sizeof(*outputs));
  if ((graph->input_count && (!inputs || !input_names)) ||
      (graph->output_count && !outputs)) {
    fprintf(stderr, "run_model: out of memory\n");
    goto done;
  }
  for (size_t i = 0; i < graph->input_count; i++) {
    int32_t id = graph->inputs[i];
    if (graph->values[id].initializer) {
      continue;
    }
    input_names[n_inputs] = graph->values[id].name;
    if (failed(make_input(graph, id, &inputs[n_inputs]),
               graph->values[id].name)) {
      goto done;
    }
    n_inputs++;
  }

  if (failed(
          wm_session_run(session, input_names,
                         (const wm_tensor_t *const *)inputs, n_inputs, outputs),
          "run")) {
    goto done;
  }
  for (size_t i = 0; i < graph->output_count; i++) {
    char shape[128];
    double sum = 0;
    for (size_t k = 0; k < outputs[i]->count; k++) {
      sum += wm_tensor_get_f64(outputs[i], k);
    }
    printf("output %s: %s %s sum %.6g\n", graph->values[graph->outputs[i]].name,
           wm_dtype_name(outputs[i]->dtype),
           wm_shape_format(&outputs[i]->shape, shape, sizeof(shape)), sum);
  }
  for (size_t i = 0; i < n_names; i++) {
    printf("nodes on %s: %zu\n", names[i],
           wm_session_nodes_on(session, names[i]));
  }
  printf("nodes run: %zu, on the fallback ref: %zu\n",
         wm_session_nodes_run(session),
         wm_session_nodes_on(session, wm_backend_name(ref)));
  rc = 0;

done:
  for (size_t i = 0; outputs && i < graph->output_count; i++) {
    wm_tensor_destroy(outputs[i]);
  }
  for (size_t i = 0; i < n_inputs; i++) {
    wm_tensor_destroy(inputs[i]);
  }
  free(outputs);
  free(inputs);
  free(input_names);
  wm_session_destroy(session);
  wm_registry_destroy(registry);
  wm_graph_destroy(graph);
  return rc;
}
