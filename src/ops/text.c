// Text operators: StringNormalizer, TfIdfVectorizer.
#include "ops/ops.h"

const wm_op_def_t wm_ops_text[] = {
    WM_OPS_END,
};
