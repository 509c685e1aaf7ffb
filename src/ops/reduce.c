// Operators of the reduce family.
#include "ops/ops.h"

const wm_op_def_t wm_ops_reduce[] = {
    WM_OPS_END,
};
