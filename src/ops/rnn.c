// Recurrent operators: RNN, GRU, LSTM.
#include "ops/ops.h"

const wm_op_def_t wm_ops_rnn[] = {
    WM_OPS_END,
};
