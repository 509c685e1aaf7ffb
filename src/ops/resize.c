// Operators of the resize family.
#include "ops/ops.h"

const wm_op_def_t wm_ops_resize[] = {
    WM_OPS_END,
};
