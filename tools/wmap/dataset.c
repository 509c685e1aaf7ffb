// Reading ONNX test_data_set folders (input_K.pb, output_K.pb).
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "wmap/onnx.h"

// Whether anything is at |path|: a folder or a FIFO named input_0.pb is
// then refused by the reader, naming what it is, not taken as missing.
static bool path_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

// The declared kind of the value file prefix_K.pb: input_K is the K-th
// graph input that is not an initializer, output_K the K-th output.
static wm_type_kind_t declared_kind(const wm_graph_t *g, bool inputs,
                                    size_t k) {
  if (!inputs) {
    return k < g->output_count ? g->values[g->outputs[k]].type.kind
                               : WM_TYPE_TENSOR;
  }
  size_t seen = 0;
  for (size_t i = 0; i < g->input_count; i++) {
    const wm_value_t *v = &g->values[g->inputs[i]];
    if (!v->initializer && seen++ == k) {
      return v->type.kind;
    }
  }
  return WM_TYPE_TENSOR;
}

// Loads prefix_0.pb, prefix_1.pb... until one is missing.
static wm_status_t load_series(const char *dir, const wm_graph_t *graph,
                               bool inputs, wm_item_t **out_items,
                               char ***out_names, size_t *out_count) {
  const char *prefix = inputs ? "input" : "output";
  size_t cap = 0, n = 0, name_cap = 0;
  wm_item_t *items = NULL;
  char **names = NULL;
  wm_status_t s = NULL;
  for (;;) {
    char *path = wm_cli_path("%s/%s_%zu.pb", dir, prefix, n);
    if (!path || !path_exists(path)) {
      free(path);
      break;
    }
    s = wm_grow((void **)&items, &cap, n + 1, sizeof(wm_item_t));
    if (!s) {
      s = wm_grow((void **)&names, &name_cap, n + 1, sizeof(char *));
    }
    if (!s) {
      s = wm_onnx_item_load(path, declared_kind(graph, inputs, n), &items[n],
                            &names[n]);
    }
    free(path);
    if (s) {
      break;
    }
    n++;
  }
  if (s) {
    for (size_t i = 0; i < n; i++) {
      wm_item_deinit(&items[i]);
      free(names[i]);
    }
    free(items);
    free(names);
    return s;
  }
  *out_items = items;
  *out_names = names;
  *out_count = n;
  return NULL;
}

// ONNX before 1.13 wrote bfloat16 test tensors with data_type UINT16 (the
// same bits); read them as the bfloat16 the model declares.
static void retype_bfloat16(wm_item_t *item, wm_dtype_t declared) {
  if (item->kind != WM_TYPE_TENSOR) {
    for (size_t i = 0; i < item->count; i++) {
      retype_bfloat16(&item->elems[i], declared);
    }
    return;
  }
  if (declared == WM_DTYPE_BFLOAT16 && item->tensor->dtype == WM_DTYPE_UINT16) {
    item->tensor->dtype = WM_DTYPE_BFLOAT16;
  }
}

// Whether file |k| of |ds| names graph input |name| (a name the graph
// takes as an input).
static bool names_input(const wm_graph_t *graph, const wm_cli_dataset_t *ds,
                        size_t k, const char *name) {
  const char *n = ds->input_names[k];
  if (!n || !*n || strcmp(n, name) != 0) {
    return false;
  }
  int32_t id = wm_graph_find_value(graph, n);
  return id >= 0 && graph->values[id].is_input;
}

// Binds the files input_K.pb of |ds| (read from |dir|) to graph inputs: a
// file keeps a name the graph takes as an input; any other takes the next
// graph input that is neither an initializer nor named by a file. Two
// files for one input, or a file left without an input, are refused
// naming the files and the names they hold.
static wm_status_t bind_names(const char *dir, const wm_graph_t *graph,
                              wm_cli_dataset_t *ds) {
  for (size_t i = 0; i < ds->n_inputs; i++) {
    for (size_t k = 0; k < i; k++) {
      if (ds->input_names[i] && names_input(graph, ds, k, ds->input_names[i])) {
        return WM_ERROR(INVALID_ARGUMENT,
                        "%s/input_%zu.pb and input_%zu.pb both hold input "
                        "\"%s\"",
                        dir, k, i, ds->input_names[i]);
      }
    }
  }
  size_t next = 0;
  for (size_t i = 0; i < ds->n_inputs; i++) {
    const char *name = ds->input_names[i];
    if (name && names_input(graph, ds, i, name)) {
      continue;
    }
    for (; next < graph->input_count; next++) {
      const wm_value_t *v = &graph->values[graph->inputs[next]];
      bool taken = v->initializer;
      for (size_t k = 0; !taken && k < ds->n_inputs; k++) {
        taken = names_input(graph, ds, k, v->name);
      }
      if (!taken) {
        break;
      }
    }
    if (next >= graph->input_count) {
      return WM_ERROR(INVALID_ARGUMENT,
                      "%s/input_%zu.pb holds \"%s\", which is not an input "
                      "of the model, and every input is given by another "
                      "file (%zu files for %zu graph inputs)",
                      dir, i, name ? name : "", ds->n_inputs,
                      graph->input_count);
    }
    free(ds->input_names[i]);
    ds->input_names[i] = wm_strdup(graph->values[graph->inputs[next]].name);
    next++;
    if (!ds->input_names[i]) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  return NULL;
}

void wm_cli_dataset_deinit(wm_cli_dataset_t *ds) {
  for (size_t i = 0; i < ds->n_inputs; i++) {
    wm_item_deinit(&ds->inputs[i]);
    free(ds->input_names[i]);
  }
  for (size_t i = 0; i < ds->n_outputs; i++) {
    wm_item_deinit(&ds->outputs[i]);
  }
  free(ds->inputs);
  free(ds->input_names);
  free(ds->outputs);
  memset(ds, 0, sizeof(*ds));
}

wm_status_t wm_cli_dataset_load(const char *dir, const wm_graph_t *graph,
                                wm_cli_dataset_t *out) {
  memset(out, 0, sizeof(*out));
  struct stat st;
  if (stat(dir, &st) != 0) {
    return errno == ENOENT
               ? WM_ERROR(NOT_FOUND, "test data folder \"%s\" does not exist",
                          dir)
               : WM_ERROR(NOT_FOUND, "test data folder \"%s\": %s", dir,
                          strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "test data folder \"%s\" is %s, not a folder (want one "
                    "holding input_0.pb, input_1.pb, ...)",
                    dir, S_ISREG(st.st_mode) ? "a file" : "something else");
  }
  char **out_names = NULL;
  WM_RETURN_IF_ERROR(load_series(dir, graph, true, &out->inputs,
                                 &out->input_names, &out->n_inputs));
  wm_status_t s = load_series(dir, graph, false, &out->outputs, &out_names,
                              &out->n_outputs);
  for (size_t i = 0; i < out->n_outputs; i++) {
    free(out_names[i]);
  }
  free(out_names);
  if (!s) {
    s = bind_names(dir, graph, out);
  }
  for (size_t i = 0; !s && i < out->n_inputs; i++) {
    int32_t id = wm_graph_find_value(graph, out->input_names[i]);
    retype_bfloat16(&out->inputs[i], graph->values[id].type.dtype);
  }
  for (size_t i = 0; !s && i < out->n_outputs && i < graph->output_count; i++) {
    retype_bfloat16(&out->outputs[i],
                    graph->values[graph->outputs[i]].type.dtype);
  }
  if (s) {
    wm_cli_dataset_deinit(out);
  }
  return s;
}

wm_status_t wm_cli_dataset_tensors(const wm_cli_dataset_t *ds,
                                   const wm_tensor_t ***out_tensors) {
  *out_tensors = NULL;
  const wm_tensor_t **ts = wm_calloc(ds->n_inputs + 1, sizeof(*ts));
  if (!ts) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; i < ds->n_inputs; i++) {
    if (ds->inputs[i].kind != WM_TYPE_TENSOR) {
      char what[96];
      free(ts);
      return WM_ERROR(UNIMPLEMENTED,
                      "input \"%s\" is a %s; only tensors are "
                      "taken here",
                      ds->input_names[i],
                      wm_item_format(&ds->inputs[i], what, sizeof(what)));
    }
    ts[i] = ds->inputs[i].tensor;
  }
  *out_tensors = ts;
  return NULL;
}

wm_status_t wm_cli_feed_next(const wm_graph_t *graph, wm_item_t *outs,
                             wm_cli_dataset_t *ds, size_t *out_fed) {
  size_t fed = 0;
  for (size_t i = 0; i < graph->output_count; i++) {
    const char *name = graph->values[graph->outputs[i]].name;
    size_t len = strlen(name);
    if (len <= 5 || strcmp(name + len - 5, ".next") != 0) {
      continue;
    }
    char *input = wm_strndup(name, len - 5);
    if (!input) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
    }
    int32_t v = wm_graph_find_value(graph, input);
    if (v < 0 || !graph->values[v].is_input) {
      free(input);
      continue;  // not a state the graph takes back
    }
    size_t k = 0;
    while (k < ds->n_inputs && strcmp(ds->input_names[k], input) != 0) {
      k++;
    }
    if (k == ds->n_inputs) {
      wm_status_t s = NULL;
      char **names =
          wm_realloc(ds->input_names, (ds->n_inputs + 1) * sizeof(*names));
      if (names) {
        ds->input_names = names;
        wm_item_t *items =
            wm_realloc(ds->inputs, (ds->n_inputs + 1) * sizeof(*items));
        if (items) {
          ds->inputs = items;
          memset(&ds->inputs[k], 0, sizeof(ds->inputs[k]));
          ds->input_names[k] = input;
          ds->n_inputs++;
          input = NULL;
        }
      }
      if (input) {
        free(input);
        s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
        return s;
      }
    } else {
      free(input);
      wm_item_deinit(&ds->inputs[k]);
    }
    ds->inputs[k] = outs[i];
    memset(&outs[i], 0, sizeof(outs[i]));
    fed++;
  }
  if (out_fed) {
    *out_fed = fed;
  }
  return NULL;
}
