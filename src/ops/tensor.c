// Operators of the tensor family.
#include "ops/ops.h"

const wm_op_def_t wm_ops_tensor[] = {
    WM_OPS_END,
};
