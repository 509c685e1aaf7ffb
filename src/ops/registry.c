// The operator registry: the family tables, searched by name and opset.
#include <string.h>

#include "ops/ops.h"

extern const wm_op_def_t wm_ops_math[];
extern const wm_op_def_t wm_ops_activation[];
extern const wm_op_def_t wm_ops_conv[];
extern const wm_op_def_t wm_ops_pool[];
extern const wm_op_def_t wm_ops_norm[];
extern const wm_op_def_t wm_ops_loss[];
extern const wm_op_def_t wm_ops_linalg[];
extern const wm_op_def_t wm_ops_reduce[];
extern const wm_op_def_t wm_ops_generator[];
extern const wm_op_def_t wm_ops_tensor[];
extern const wm_op_def_t wm_ops_index[];
extern const wm_op_def_t wm_ops_resize[];
extern const wm_op_def_t wm_ops_quant[];
extern const wm_op_def_t wm_ops_detect[];
extern const wm_op_def_t wm_ops_signal[];
extern const wm_op_def_t wm_ops_rnn[];
extern const wm_op_def_t wm_ops_text[];
extern const wm_op_def_t wm_ops_training[];
extern const wm_op_def_t wm_ops_attention[];
extern const wm_op_def_t wm_ops_control[];
extern const wm_op_def_t wm_ops_sequence[];
extern const wm_op_def_t wm_ops_ssm[];
extern const wm_op_def_t wm_ops_ml[];
extern const wm_op_def_t wm_ops_image[];
extern const wm_op_def_t wm_ops_fused[];
extern const wm_op_def_t wm_ops_elementwise[];
extern const wm_op_def_t wm_ops_collective[];

static const wm_op_def_t *const families[] = {
    wm_ops_math,      wm_ops_activation,  wm_ops_conv,       wm_ops_pool,
    wm_ops_norm,      wm_ops_loss,        wm_ops_linalg,     wm_ops_reduce,
    wm_ops_generator, wm_ops_tensor,      wm_ops_index,      wm_ops_resize,
    wm_ops_quant,     wm_ops_detect,      wm_ops_signal,     wm_ops_rnn,
    wm_ops_text,      wm_ops_training,    wm_ops_attention,  wm_ops_control,
    wm_ops_sequence,  wm_ops_ssm,         wm_ops_ml,         wm_ops_image,
    wm_ops_fused,     wm_ops_elementwise, wm_ops_collective,
};
enum { FAMILY_COUNT = sizeof(families) / sizeof(families[0]) };

static bool same_domain(const char *a, const char *b) {
  if (wm_domain_is_onnx(a) || wm_domain_is_onnx(b)) {
    return wm_domain_is_onnx(a) && wm_domain_is_onnx(b);
  }
  return strcmp(a, b) == 0;
}

bool wm_op_draws_random(const wm_op_def_t *def, const wm_node_t *node,
                        const wm_tensor_t *training) {
  if (def->flags & WM_OP_RANDOM) {
    return true;
  }
  if (!(def->flags & WM_OP_RANDOM_IN_TRAINING) || node->input_count < 3 ||
      node->inputs[2] < 0) {
    return false;
  }
  return !training || training->count == 0 ||
         wm_tensor_get_f64(training, 0) != 0;
}

const wm_op_def_t *wm_ops_find(const char *domain, const char *op_type,
                               int64_t opset) {
  const wm_op_def_t *best = NULL;
  for (size_t f = 0; f < FAMILY_COUNT; f++) {
    for (const wm_op_def_t *d = families[f]; d->name; d++) {
      if (strcmp(d->name, op_type) != 0 || !same_domain(d->domain, domain)) {
        continue;
      }
      if (d->since_version <= opset &&
          (!best || d->since_version > best->since_version)) {
        best = d;
      }
    }
  }
  return best;
}

size_t wm_ops_count(void) {
  size_t n = 0;
  for (size_t f = 0; f < FAMILY_COUNT; f++) {
    for (const wm_op_def_t *d = families[f]; d->name; d++) {
      n++;
    }
  }
  return n;
}

const wm_op_def_t *wm_ops_at(size_t i) {
  for (size_t f = 0; f < FAMILY_COUNT; f++) {
    for (const wm_op_def_t *d = families[f]; d->name; d++) {
      if (i-- == 0) {
        return d;
      }
    }
  }
  return NULL;
}
