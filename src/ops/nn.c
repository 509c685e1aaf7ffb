// Operators of the nn family.
#include "ops/ops.h"

const wm_op_def_t wm_ops_nn[] = {
    WM_OPS_END,
};
