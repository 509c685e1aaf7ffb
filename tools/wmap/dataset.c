// Reading ONNX test_data_set folders (input_K.pb, output_K.pb).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "wmap/onnx.h"

static bool file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

// Loads prefix_0.pb, prefix_1.pb... until one is missing.
static wm_status_t load_series(const char *dir, const char *prefix,
                               wm_tensor_t ***out_tensors, char ***out_names,
                               size_t *out_count) {
  size_t cap = 0, n = 0;
  wm_tensor_t **tensors = NULL;
  char **names = NULL;
  size_t name_cap = 0;
  for (;;) {
    char *path = wm_cli_path("%s/%s_%zu.pb", dir, prefix, n);
    if (!path || !file_exists(path)) {
      free(path);
      break;
    }
    wm_status_t s = wm_grow((void **)&tensors, &cap, n + 1, sizeof(void *));
    if (!s) {
      s = wm_grow((void **)&names, &name_cap, n + 1, sizeof(char *));
    }
    if (!s) {
      s = wm_onnx_tensor_load(path, &tensors[n], &names[n]);
    }
    free(path);
    if (s) {
      for (size_t i = 0; i < n; i++) {
        wm_tensor_destroy(tensors[i]);
        free(names[i]);
      }
      free(tensors);
      free(names);
      return s;
    }
    n++;
  }
  *out_tensors = tensors;
  *out_names = names;
  *out_count = n;
  return NULL;
}

static void retype_bfloat16(wm_tensor_t *t, wm_dtype_t declared) {
  if (declared == WM_DTYPE_BFLOAT16 && t->dtype == WM_DTYPE_UINT16) {
    t->dtype = WM_DTYPE_BFLOAT16;
  }
}

void wm_cli_dataset_deinit(wm_cli_dataset_t *ds) {
  for (size_t i = 0; i < ds->n_inputs; i++) {
    wm_tensor_destroy(ds->inputs[i]);
    free(ds->input_names[i]);
  }
  for (size_t i = 0; i < ds->n_outputs; i++) {
    wm_tensor_destroy(ds->outputs[i]);
  }
  free(ds->inputs);
  free(ds->input_names);
  free(ds->outputs);
  memset(ds, 0, sizeof(*ds));
}

wm_status_t wm_cli_dataset_load(const char *dir, const wm_graph_t *graph,
                                wm_cli_dataset_t *out) {
  memset(out, 0, sizeof(*out));
  char **out_names = NULL;
  WM_RETURN_IF_ERROR(load_series(dir, "input", &out->inputs, &out->input_names,
                                 &out->n_inputs));
  wm_status_t s =
      load_series(dir, "output", &out->outputs, &out_names, &out->n_outputs);
  for (size_t i = 0; i < out->n_outputs; i++) {
    free(out_names[i]);
  }
  free(out_names);
  // Bind names: keep a name that is a graph input, else take the next
  // graph input that is neither named elsewhere nor an initializer.
  size_t next = 0;
  for (size_t i = 0; !s && i < out->n_inputs; i++) {
    const char *name = out->input_names[i];
    int32_t id = name && *name ? wm_graph_find_value(graph, name) : -1;
    if (id >= 0 && graph->values[id].is_input) {
      continue;
    }
    while (next < graph->input_count &&
           graph->values[graph->inputs[next]].initializer) {
      next++;
    }
    if (next >= graph->input_count) {
      s = WM_ERROR(INVALID_ARGUMENT,
                   "%s/input_%zu.pb has no matching graph input (the model "
                   "has %zu)",
                   dir, i, graph->input_count);
      break;
    }
    free(out->input_names[i]);
    out->input_names[i] = wm_strdup(graph->values[graph->inputs[next]].name);
    next++;
    if (!out->input_names[i]) {
      s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  // ONNX before 1.13 wrote bfloat16 test tensors with data_type UINT16
  // (the same bits); read them as the bfloat16 the model declares.
  for (size_t i = 0; !s && i < out->n_inputs; i++) {
    int32_t id = wm_graph_find_value(graph, out->input_names[i]);
    retype_bfloat16(out->inputs[i], graph->values[id].type.dtype);
  }
  for (size_t i = 0; !s && i < out->n_outputs && i < graph->output_count; i++) {
    retype_bfloat16(out->outputs[i],
                    graph->values[graph->outputs[i]].type.dtype);
  }
  if (s) {
    wm_cli_dataset_deinit(out);
  }
  return s;
}
