// Accessors of a graph's inputs and outputs by position, for code that
// sees wm_graph_t only through the shared library (the Python package).
#include "wmap/graph.h"

// The value of graph input |i|, or NULL when out of range.
static const wm_value_t *input_value(const wm_graph_t *graph, size_t i) {
  if (!graph || i >= graph->input_count) {
    return NULL;
  }
  return &graph->values[graph->inputs[i]];
}

// The value of graph output |i|, or NULL when out of range.
static const wm_value_t *output_value(const wm_graph_t *graph, size_t i) {
  if (!graph || i >= graph->output_count) {
    return NULL;
  }
  return &graph->values[graph->outputs[i]];
}

size_t wm_graph_input_count(const wm_graph_t *graph) {
  return graph ? graph->input_count : 0;
}

const char *wm_graph_input_name(const wm_graph_t *graph, size_t i) {
  const wm_value_t *v = input_value(graph, i);
  return v ? v->name : NULL;
}

const wm_type_t *wm_graph_input_type(const wm_graph_t *graph, size_t i) {
  const wm_value_t *v = input_value(graph, i);
  return v ? &v->type : NULL;
}

bool wm_graph_input_is_initializer(const wm_graph_t *graph, size_t i) {
  const wm_value_t *v = input_value(graph, i);
  return v && v->initializer;
}

size_t wm_graph_output_count(const wm_graph_t *graph) {
  return graph ? graph->output_count : 0;
}

const char *wm_graph_output_name(const wm_graph_t *graph, size_t i) {
  const wm_value_t *v = output_value(graph, i);
  return v ? v->name : NULL;
}

const wm_type_t *wm_graph_output_type(const wm_graph_t *graph, size_t i) {
  const wm_value_t *v = output_value(graph, i);
  return v ? &v->type : NULL;
}
