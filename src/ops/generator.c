// Operators of the generator family.
#include "ops/ops.h"

const wm_op_def_t wm_ops_generator[] = {
    WM_OPS_END,
};
