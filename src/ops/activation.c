// Operators of the activation family.
#include "ops/ops.h"

const wm_op_def_t wm_ops_activation[] = {
    WM_OPS_END,
};
