// wmap placement: the one rule sessions and the workload map use to put a
// node on a backend, and the query of a backend about one node instance.
// Thread-safety: pure functions; the graph and backends are only read.
#ifndef WMAP_PLAN_H_
#define WMAP_PLAN_H_

#include "wmap/graph.h"
#include "wmap/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

WM_API_BEGIN

// Describes node |index| of |graph| as a backend sees it (wm_op_desc:
// input and output types from |types|, per value id, NULL for the graph's
// own; host data of the inputs in |values|, per value id, NULL for the
// graph's constants (initializers and Constant nodes' tensors); the
// operator's resolved parameters when every type is known) and calls |fn|
// with it. The description lives for the call only. Returns |fn|'s
// result, or the error of making it.
typedef wm_status_t (*wm_node_desc_fn)(void *env, const wm_op_desc *op);
wm_status_t wm_node_describe(const wm_graph_t *graph, size_t index,
                             const wm_type_t *types,
                             const wm_tensor_t *const *values,
                             wm_node_desc_fn fn, void *env) WM_MUST_USE_RESULT;

// Asks |backend| (target 0) about node |index| of |graph| as an instance:
// input and output types from |types| (per value id; NULL: the graph's
// own value types) and constant inputs from |values| (per value id, NULL
// entries unknown; NULL: the graph's constants). Where its library tier
// refuses a concrete instance that the operator's compute definition
// expresses and its device tier compiles a format the generator prints,
// the answer is a generated kernel (SUPPORTED, impl GENERATED): the
// placement rule of a session with WM_KERNELS_AUTO. A backend with neither
// answers NONE (operator); a level above PREFERRED is an error.
wm_status_t wm_node_query(const wm_graph_t *graph, size_t index,
                          const wm_type_t *types,
                          const wm_tensor_t *const *values,
                          const wm_backend_t *backend,
                          wm_op_support *out) WM_MUST_USE_RESULT;

// The placement rule: among |n| answers of backends listed in order of
// preference, returns the index of the one that gets the node (the
// highest level; ties go to the earlier backend), or -1 when every answer
// is NONE.
int32_t wm_place_choose(const wm_op_support *answers, size_t n);

WM_API_END

#ifdef __cplusplus
}
#endif

#endif  // WMAP_PLAN_H_
