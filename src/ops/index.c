// Operators of the index family.
#include "ops/ops.h"

const wm_op_def_t wm_ops_index[] = {
    WM_OPS_END,
};
