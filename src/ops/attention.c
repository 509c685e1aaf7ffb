// Transformer operators: Attention, RotaryEmbedding, RMSNormalization.
#include "ops/ops.h"

const wm_op_def_t wm_ops_attention[] = {
    WM_OPS_END,
};
