// Tensor parallelism: the partition of a graph into the graph one of |tp|
// ranks runs, Megatron-style, with the collective nodes (wmap.AllReduce,
// wmap.AllGather) that keep it equal to the whole. The rules are those of
// the workload map's parallel plan (src/map/plan.c), with the axis each
// value is split along tracked so that the result runs:
// - A MatMul by a constant [K, N] weight whose input is whole is
//   column-parallel: each rank holds N/tp of the weight's columns and of
//   the output's last axis. Where the output (through elementwise ops)
//   feeds a Split of that axis into k equal parts (a fused QKV
//   projection), each part is split over the ranks ("segments").
// - A MatMul by a constant [K, N] weight whose input is split along its
//   last axis is row-parallel: each rank holds K/tp of the weight's rows,
//   computes a partial sum, and an AllReduce makes the output whole.
// - Elementwise ops keep a split value split; a whole operand beside it is
//   sliced locally (no communication) unless it broadcasts along the
//   split axis. Transpose, Reshape (splitting or merging the split axis
//   with the split one outermost), Split, Softmax over another axis and
//   MatMul between values split along a batch axis keep values split;
//   Shape of a split value is the whole value's (a constant).
// - Anything else first gathers each split input (AllGather), as do
//   split graph outputs: every rank ends with the whole outputs.
// Weights that do not divide by tp (a 50257-word vocabulary over 2 ranks)
// stay whole.
#ifndef WMAP_SRC_PARALLEL_PARALLEL_H_
#define WMAP_SRC_PARALLEL_PARALLEL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wmap/base.h"
#include "wmap/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

// What one rank's partition (tensor or data parallel) communicates per
// run: the collective nodes
// and the bytes they carry per rank (nccl-tests' S: AllReduce the whole
// buffer, AllGather the whole output).
typedef struct wm_tp_summary {
  uint64_t all_reduce_calls, all_reduce_bytes;
  uint64_t all_gather_calls, all_gather_bytes;
  size_t column_parallel;  // MatMuls split by output columns
  size_t row_parallel;     // MatMuls split by input rows
} wm_tp_summary_t;

// Builds rank |rank|'s graph of |graph| split over |tp| ranks (1..4096).
// |graph| must have every value's type known (wm_ops_check_graph after
// binding dims) and is only read; its inputs and outputs keep their names
// and whole shapes in the partition. *out_summary may be NULL.
wm_status_t wm_tp_partition(const wm_graph_t *graph, int32_t tp, int32_t rank,
                            wm_graph_t **out_local,
                            wm_tp_summary_t *out_summary) WM_MUST_USE_RESULT;

// Data parallelism: rank |rank|'s graph of |graph| over |dp| ranks, each
// taking an equal share of the batch (axis 0 of every graph input that
// has no default; inputs with defaults, such as a training step's
// parameters, stay whole).
// - A training step (metadata "wmap.training.gradients": the comma list
//   of its gradient values) averages its gradients over the ranks in one
//   bucket (flattened, concatenated, one AllReduce with reduction "mean",
//   split back), as DDP does, before anything reads them; its outputs are
//   the rank's own (the updated parameters are then the same everywhere;
//   a loss is the rank's share's).
// - Otherwise (inference) every output is gathered along axis 0.
// Each such input's dim 0 must divide by |dp| (or be symbolic).
wm_status_t wm_dp_partition(const wm_graph_t *graph, int32_t dp, int32_t rank,
                            wm_graph_t **out_local,
                            wm_tp_summary_t *out_summary) WM_MUST_USE_RESULT;
// Whether |graph| is a training step (lists its gradients).
bool wm_dp_is_training(const wm_graph_t *graph);

// Pipeline parallelism: rank |rank|'s stage of |graph| over |pp| ranks,
// given each node's stage (|stage_of|, per node index, 0..pp-1, each
// stage a contiguous run of a topological order: the map's plan gives
// them) and |microbatches| (the batch inputs' dim 0 is split into that
// many micro-batches, each flowing through the stages in turn). A value
// made in stage a and read in stage b > a crosses every boundary between
// (forwarded by the stages in between); graph outputs made before the last
// stage are forwarded to it. Graph inputs reach every stage directly.
typedef struct wm_pp_value {
  const char *name;  // the value's name (in |graph| and the stage)
  wm_type_t type;    // one micro-batch's (dim 0 divided when split)
  bool forwarded;    // send: a value received, sent on unchanged
} wm_pp_value_t;

typedef struct wm_pp_stage {
  wm_graph_t *graph;  // the stage's nodes; received values are inputs
  size_t n_recv;      // from rank - 1, in this order
  wm_pp_value_t *recv;
  size_t n_send;  // to rank + 1, in this order
  wm_pp_value_t *send;
  size_t n_outputs;        // last stage: |graph|'s outputs, in order
  wm_pp_value_t *outputs;  //   (made here or received)
} wm_pp_stage_t;

wm_status_t wm_pp_partition(const wm_graph_t *graph, const int32_t *stage_of,
                            int32_t pp, int32_t rank, int32_t microbatches,
                            wm_pp_stage_t *out) WM_MUST_USE_RESULT;
void wm_pp_stage_deinit(wm_pp_stage_t *stage);

#ifdef __cplusplus
}
#endif

#endif  // WMAP_SRC_PARALLEL_PARALLEL_H_
