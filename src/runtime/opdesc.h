// The ABI view of one graph node (wm_op_desc and its attributes) and the
// op_query call, shared by the session's placement and the workload map.
#ifndef WMAP_SRC_RUNTIME_OPDESC_H_
#define WMAP_SRC_RUNTIME_OPDESC_H_

#include "ops/ops.h"
#include "wmap/backend.h"
#include "wmap/plugin.h"

// A node's attributes as the ABI sees them (owned arrays), and its
// resolved parameters once wm_node_op_desc has made them.
typedef struct wm_node_attrs {
  wm_op_attr *attrs;           // one per attribute
  uint32_t n_attr;             // number of attributes
  wm_tensor_desc *attr_descs;  // layouts of tensor attributes
  uint64_t **string_lens;      // per attribute, lengths of STRINGS
  wm_op_params_t params;       // resolved parameters (count 0: none)
  wm_op_attr param_attrs[WM_OP_MAX_PARAMS];      // their ABI view
  wm_tensor_desc param_descs[WM_OP_MAX_PARAMS];  // of TENSOR entries
  uint64_t param_lens[WM_OP_PARAM_VALUES];       // of STRINGS values
} wm_node_attrs_t;

// Builds the ABI view of |node|'s attributes; release with
// wm_node_attrs_deinit (also after a failure).
wm_status_t wm_node_attrs_init(wm_node_attrs_t *out,
                               const wm_node_t *node) WM_MUST_USE_RESULT;
void wm_node_attrs_deinit(wm_node_attrs_t *attrs);

// The row-major layout of a tensor of |dtype| and |shape| (rank 0 when
// the rank is unknown).
wm_tensor_desc wm_tensor_desc_from_type(wm_dtype_t dtype,
                                        const wm_shape_t *shape);

// True when |t| is a tensor of a known dtype and shape.
bool wm_type_is_concrete(const wm_type_t *t);
// True when every present input and output of |ctx| has a known dtype
// and shape.
bool wm_op_ctx_is_concrete(const wm_op_ctx_t *ctx);

// Fills |op| for |node| from |ctx|'s types: |descs| (n_in + n_out
// entries, inputs then outputs) and |values| (n_in entries: host data of
// ctx's input values) are caller storage. When |ctx| is concrete, the
// operator's parameters are resolved into |attrs| and op->params points
// at them; attrs->params.pending tells that they need input values |ctx|
// does not hold (op->n_param is then 0). |def| is the node's definition
// when the caller has it (NULL: found here).
wm_status_t wm_node_op_desc(const wm_node_t *node, const wm_op_def_t *def,
                            wm_op_ctx_t *ctx, wm_node_attrs_t *attrs,
                            wm_tensor_desc *descs, const void **values,
                            wm_op_desc *op) WM_MUST_USE_RESULT;

// Asks |backend| (target 0) about |op|: a backend without a library tier
// answers NONE (operator); a level above PREFERRED is an error.
wm_status_t wm_backend_op_query(const wm_backend_t *backend,
                                const wm_op_desc *op,
                                wm_op_support *out) WM_MUST_USE_RESULT;

#endif  // WMAP_SRC_RUNTIME_OPDESC_H_
