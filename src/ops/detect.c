// Detection and sampling operators: NonMaxSuppression, RoiAlign, GridSample,
// MaxUnpool.
#include "ops/ops.h"

const wm_op_def_t wm_ops_detect[] = {
    WM_OPS_END,
};
