// Training operators of ai.onnx.preview.training: Adagrad, Adam, Momentum.
#include "ops/ops.h"

const wm_op_def_t wm_ops_training[] = {
    WM_OPS_END,
};
