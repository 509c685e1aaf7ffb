// A complete small backend named "claimsfail" whose op_query claims Relu
// as SUPPORTED but whose op_run fails: the conformance runner must report
// the broken promise, not trust it.
#include "plugin_common.h"

struct wm_op_plan {
  int unused;  // nothing to remember
};

static wm_error *get_info(wm_plugin_info *out_info) {
  return tp_info(out_info, "claimsfail");
}

static wm_error *op_query(const wm_target_desc *target, const wm_op_desc *op,
                          wm_op_support *out_support) {
  (void)target;
  bool relu = (!op->domain || !*op->domain) && op->op_type &&
              strcmp(op->op_type, "Relu") == 0;
  out_support->level = relu ? WM_SUPPORT_SUPPORTED : WM_SUPPORT_NONE;
  out_support->impl = relu ? WM_IMPL_NATIVE_KERNEL : WM_IMPL_NONE;
  out_support->reason = relu ? WM_WHY_NONE : WM_WHY_OP;
  out_support->rel_cost = -1.0f;
  out_support->detail = relu ? NULL : "claimsfail only claims Relu";
  return NULL;
}

static wm_error *op_plan(wm_device *dev, const wm_op_desc *op,
                         wm_op_plan **out_plan, uint64_t *out_workspace_bytes) {
  (void)dev;
  (void)op;
  *out_workspace_bytes = 0;
  *out_plan = malloc(sizeof(**out_plan));
  return *out_plan ? NULL : wm_host_error_oom();
}

static wm_error *op_run(wm_stream *stream, wm_op_plan *plan,
                        const wm_buffer_view *in, uint32_t n_in,
                        const wm_buffer_view *out, uint32_t n_out,
                        const wm_buffer_view *workspace) {
  (void)stream;
  (void)plan;
  (void)in;
  (void)out;
  (void)workspace;
  return tp_error(WM_ERR_INTERNAL,
                  "claimsfail: op_run of Relu with %u inputs and %u outputs "
                  "fails on purpose",
                  n_in, n_out);
}

static void op_plan_destroy(wm_op_plan *plan) {
  free(plan);
}

static const wm_device_tier device = {TP_DEVICE_TIER_FIELDS};

static const wm_library_tier library = {
    .struct_size = sizeof(wm_library_tier),
    .op_query = op_query,
    .op_plan = op_plan,
    .op_run = op_run,
    .op_plan_destroy = op_plan_destroy,
};

static wm_plugin_api api = {
    .get_info = get_info,
    .enumerate = tp_enumerate,
    .device = &device,
    .library = &library,
    TP_API_FIELDS,
};

TP_PLUGIN_QUERY(api)
