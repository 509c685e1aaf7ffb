// The pipeline-parallel partition (parallel.h): a stage's nodes with the
// constants they read, the graph inputs they read, and what crosses its
// boundaries with the stages before and after it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/parallel.h"

void wm_pp_stage_deinit(wm_pp_stage_t *stage) {
  if (stage) {
    wm_graph_destroy(stage->graph);
    free(stage->recv);
    free(stage->send);
    free(stage->outputs);
    memset(stage, 0, sizeof(*stage));
  }
}

// One micro-batch's type of value |v|: dim 0 divided by |m|.
static wm_status_t micro_type(const wm_graph_t *g, int32_t v, int32_t m,
                              wm_type_t *out) {
  *out = g->values[v].type;
  if (m == 1) {
    return NULL;
  }
  int64_t b = out->shape.rank >= 1 ? out->shape.dims[0] : -1;
  if (b < 0 || b % m != 0) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "%d micro-batches: value \"%s\" has dim 0 = %lld (rank "
                    "%d), which does not divide (the batch must lead every "
                    "value crossing stages)",
                    m, g->values[v].name, (long long)b, out->shape.rank);
  }
  out->shape.dims[0] = b / m;
  return NULL;
}

static bool is_constant(const wm_value_t *x) {
  return x->initializer && !x->is_input;
}

wm_status_t wm_pp_partition(const wm_graph_t *g, const int32_t *stage_of,
                            int32_t pp, int32_t rank, int32_t m,
                            wm_pp_stage_t *out) {
  memset(out, 0, sizeof(*out));
  if (pp < 1 || pp > 4096 || rank < 0 || rank >= pp || m < 1) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "pipeline: rank %d of pp=%d with %d micro-batches is out "
                    "of range",
                    rank, pp, m);
  }
  size_t nv = g->value_count;
  // Nodes computing only from constants (a transposed tied embedding) run
  // in every stage that reads them: their values never cross.
  bool *konst = wm_calloc(nv + 1, sizeof(bool));
  bool *here = wm_calloc(g->node_count + 1, sizeof(bool));  // node in stage
  int32_t *order = NULL;
  if (!konst || !here) {
    free(konst);
    free(here);
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  wm_status_t so = wm_graph_topo_order(g, &order);
  if (so) {
    free(konst);
    free(here);
    return so;
  }
  for (size_t v = 0; v < nv; v++) {
    konst[v] = is_constant(&g->values[v]);
  }
  bool *knode = wm_calloc(g->node_count + 1, sizeof(bool));
  for (size_t i = 0; knode && i < g->node_count; i++) {
    const wm_node_t *n = &g->nodes[order[i]];
    bool all = true;
    for (int32_t k = 0; k < n->input_count; k++) {
      all &= n->inputs[k] < 0 || konst[n->inputs[k]];
    }
    knode[order[i]] = all;
    for (int32_t k = 0; all && k < n->output_count; k++) {
      if (n->outputs[k] >= 0) {
        konst[n->outputs[k]] = true;
      }
    }
  }
  // This stage's nodes, and the constant nodes they need, back to front.
  bool *need = wm_calloc(nv + 1, sizeof(bool));
  for (size_t i = g->node_count; knode && need && i-- > 0;) {
    int32_t id = order[i];
    const wm_node_t *n = &g->nodes[id];
    bool take = stage_of[id] == rank && !knode[id];
    for (int32_t k = 0; knode[id] && k < n->output_count; k++) {
      take |= n->outputs[k] >= 0 && need[n->outputs[k]];
    }
    here[id] = take;
    for (int32_t k = 0; take && k < n->input_count; k++) {
      if (n->inputs[k] >= 0 && konst[n->inputs[k]]) {
        need[n->inputs[k]] = true;
      }
    }
  }
  free(need);
  int32_t *made = wm_calloc(nv + 1, sizeof(int32_t));  // stage, -1 none
  int32_t *last = wm_calloc(nv + 1, sizeof(int32_t));  // last stage reading
  bool *read_here = wm_calloc(nv + 1, sizeof(bool));
  out->recv = wm_calloc(nv + 1, sizeof(wm_pp_value_t));
  out->send = wm_calloc(nv + 1, sizeof(wm_pp_value_t));
  out->outputs = wm_calloc(g->output_count + 1, sizeof(wm_pp_value_t));
  wm_status_t s =
      made && last && read_here && out->recv && out->send && out->outputs
          ? NULL
          : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  for (size_t v = 0; !s && v < nv; v++) {
    made[v] = -1;
    last[v] = -1;
  }
  if (!s && !knode) {
    s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (size_t i = 0; !s && i < g->node_count; i++) {
    const wm_node_t *n = &g->nodes[i];
    int32_t st = stage_of[i];
    if (st < 0 || st >= pp) {
      s = WM_ERROR(INVALID_ARGUMENT, "node %zu is in stage %d of %d", i, st,
                   pp);
      break;
    }
    for (int32_t k = 0; !knode[i] && k < n->output_count; k++) {
      if (n->outputs[k] >= 0) {
        made[n->outputs[k]] = st;
      }
    }
    for (int32_t k = 0; k < n->input_count; k++) {
      int32_t v = n->inputs[k];
      if (v >= 0 && !konst[v] && !knode[i]) {
        last[v] = st > last[v] ? st : last[v];
      }
      if (v >= 0 && here[i]) {
        read_here[v] = true;
      }
    }
  }
  for (size_t i = 0; !s && i < g->output_count; i++) {
    int32_t v = g->outputs[i];
    if (v >= 0 && made[v] >= 0) {
      last[v] = pp - 1;  // delivered to the last stage
    }
  }
  for (size_t i = 0; !s && i < g->node_count; i++) {
    const wm_node_t *n = &g->nodes[i];
    for (int32_t k = 0; !knode[i] && k < n->input_count; k++) {
      int32_t v = n->inputs[k];
      if (v >= 0 && made[v] > stage_of[i]) {
        s = WM_ERROR(INVALID_ARGUMENT,
                     "value \"%s\" is read in stage %d before stage %d makes "
                     "it: stages must follow a topological order",
                     g->values[v].name, stage_of[i], made[v]);
      }
    }
  }
  if (!s) {
    s = wm_graph_create(g->name ? g->name : "stage", NULL, &out->graph);
  }
  for (size_t i = 0; !s && i < g->opset_count; i++) {
    s = wm_graph_set_opset(out->graph, g->opsets[i].domain,
                           g->opsets[i].version);
  }
  // Inputs: the graph inputs this stage reads, then what it receives.
  for (size_t i = 0; !s && i < g->input_count; i++) {
    int32_t v = g->inputs[i];
    if (!read_here[v]) {
      continue;
    }
    wm_type_t t;
    s = g->values[v].initializer ? NULL : micro_type(g, v, m, &t);
    if (!s) {
      s = wm_graph_add_input(out->graph, g->values[v].name,
                             g->values[v].initializer ? &g->values[v].type : &t,
                             NULL);
    }
    if (!s && g->values[v].initializer) {  // its default
      wm_tensor_t *copy = NULL;
      s = wm_tensor_clone(g->values[v].initializer, &copy);
      if (!s) {
        s = wm_graph_add_initializer(out->graph, g->values[v].name, copy, NULL);
      }
    }
  }
  for (size_t v = 0; !s && v < nv; v++) {
    if (made[v] >= 0 && made[v] < rank && last[v] >= rank) {
      wm_pp_value_t *x = &out->recv[out->n_recv++];
      x->name = g->values[v].name;
      s = micro_type(g, (int32_t)v, m, &x->type);
      if (!s && read_here[v]) {
        s = wm_graph_add_input(out->graph, x->name, &x->type, NULL);
      }
    }
    if (!s && made[v] >= 0 && made[v] <= rank && last[v] > rank) {
      wm_pp_value_t *x = &out->send[out->n_send++];
      x->name = g->values[v].name;
      x->forwarded = made[v] < rank;
      s = micro_type(g, (int32_t)v, m, &x->type);
    }
  }
  // Constants the stage reads.
  for (size_t v = 0; !s && v < nv; v++) {
    const wm_value_t *x = &g->values[v];
    if (read_here[v] && x->initializer && !x->is_input) {
      wm_tensor_t *copy = NULL;
      s = wm_tensor_clone(x->initializer, &copy);
      if (!s) {
        s = wm_graph_add_initializer(out->graph, x->name, copy, NULL);
      }
    }
  }
  for (size_t i = 0; !s && i < g->node_count; i++) {
    const wm_node_t *n = &g->nodes[i];
    if (!here[i]) {
      continue;
    }
    const char *ins[64], *outs[64];
    if (n->input_count > 64 || n->output_count > 64) {
      s = WM_ERROR(UNIMPLEMENTED, "node \"%s\" has over 64 inputs or outputs",
                   n->name);
      break;
    }
    for (int32_t k = 0; k < n->input_count; k++) {
      ins[k] = n->inputs[k] >= 0 ? g->values[n->inputs[k]].name : "";
    }
    for (int32_t k = 0; k < n->output_count; k++) {
      outs[k] = n->outputs[k] >= 0 ? g->values[n->outputs[k]].name : "";
    }
    int32_t id = -1;
    s = wm_graph_add_node(out->graph, n->op_type, n->domain, n->name, ins,
                          n->input_count, outs, n->output_count, &id);
    if (!s) {
      s = wm_graph_copy_attrs(out->graph, id, n);
    }
  }
  // Outputs: what the stage sends on that it makes; the last stage's are
  // the graph's.
  for (size_t i = 0; !s && i < out->n_send; i++) {
    if (!out->send[i].forwarded) {
      s = wm_graph_add_output(out->graph, out->send[i].name, NULL, NULL);
    }
  }
  for (size_t i = 0; !s && rank == pp - 1 && i < g->output_count; i++) {
    int32_t v = g->outputs[i];
    wm_pp_value_t *x = &out->outputs[out->n_outputs++];
    x->name = g->values[v].name;
    s = is_constant(&g->values[v]) ? NULL : micro_type(g, v, m, &x->type);
    x->forwarded = made[v] >= 0 && made[v] < rank;
    if (!s && made[v] == rank) {
      s = wm_graph_add_output(out->graph, x->name, NULL, NULL);
    }
  }
  free(made);
  free(last);
  free(read_here);
  free(konst);
  free(here);
  free(knode);
  free(order);
  if (s) {
    wm_pp_stage_deinit(out);
    return wm_status_annotate(s, "pipeline partition (rank %d of %d)", rank,
                              pp);
  }
  return NULL;
}
