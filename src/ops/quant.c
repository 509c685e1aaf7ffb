// Quantized operators: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// QLinearConv, QLinearMatMul, MatMulInteger, ConvInteger.
#include "ops/ops.h"

const wm_op_def_t wm_ops_quant[] = {
    WM_OPS_END,
};
