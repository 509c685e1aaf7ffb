// Operators of the linalg family.
#include "ops/ops.h"

const wm_op_def_t wm_ops_linalg[] = {
    WM_OPS_END,
};
