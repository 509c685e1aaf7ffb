// Operators of the math family.
#include "ops/ops.h"

const wm_op_def_t wm_ops_math[] = {
    WM_OPS_END,
};
