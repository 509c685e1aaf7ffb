// Signal operators: DFT, STFT, the window functions and MelWeightMatrix.
#include "ops/ops.h"

const wm_op_def_t wm_ops_signal[] = {
    WM_OPS_END,
};
