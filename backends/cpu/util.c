// Helpers shared by the cpu backend's files: plugin errors, attribute
// lookups on an operator description and description arithmetic.
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "host_tier.h"

wm_error *cpu_error(int32_t code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wm_error *e = wm_host_error_createv(code, fmt, ap);
  va_end(ap);
  return e;
}

wm_error *cpu_error_from(wm_status_t s) {
  if (!s) {
    return NULL;
  }
  wm_error *e =
      cpu_error((int32_t)wm_status_code(s), "%s", wm_status_message(s));
  wm_status_free(s);
  return e;
}

const wm_op_attr *cpu_attr(const wm_op_desc *op, const char *name) {
  for (uint32_t i = 0; i < op->n_attr; i++) {
    if (op->attrs[i].name && strcmp(op->attrs[i].name, name) == 0) {
      return &op->attrs[i];
    }
  }
  return NULL;
}

int64_t cpu_attr_int(const wm_op_desc *op, const char *name, int64_t def) {
  const wm_op_attr *a = cpu_attr(op, name);
  return a && a->type == 2 ? a->i : def;
}

float cpu_attr_float(const wm_op_desc *op, const char *name, float def) {
  const wm_op_attr *a = cpu_attr(op, name);
  return a && a->type == 1 ? a->f : def;
}

const char *cpu_attr_string(const wm_op_desc *op, const char *name,
                            const char *def) {
  const wm_op_attr *a = cpu_attr(op, name);
  return a && a->type == 3 && a->s ? a->s : def;
}

bool cpu_attr_ints(const wm_op_desc *op, const char *name,
                   const int64_t **out_values, size_t *out_count) {
  *out_values = NULL;
  *out_count = 0;
  const wm_op_attr *a = cpu_attr(op, name);
  if (!a || a->type != 7 || (a->count && !a->ints)) {
    return false;
  }
  *out_values = a->ints;
  *out_count = (size_t)a->count;
  return true;
}

const wm_op_attr *cpu_param(const wm_op_desc *op, const char *name) {
  if (!WM_HAS(op, wm_op_desc, params) || !op->params) {
    return NULL;
  }
  for (uint32_t i = 0; i < op->n_param; i++) {
    if (op->params[i].name && strcmp(op->params[i].name, name) == 0) {
      return &op->params[i];
    }
  }
  return NULL;
}

bool cpu_param_ints(const wm_op_desc *op, const char *name, size_t n,
                    int64_t *out) {
  const wm_op_attr *a = cpu_param(op, name);
  if (!a || a->type != 7 || a->count != n || (n && !a->ints)) {
    return false;
  }
  if (n) {
    memcpy(out, a->ints, n * sizeof(int64_t));
  }
  return true;
}

bool cpu_param_reals(const wm_op_desc *op, const char *name, size_t n,
                     double *out) {
  const wm_op_attr *a = cpu_param(op, name);
  const wm_tensor_desc *d = a && a->type == 4 ? a->tensor : NULL;
  if (!d || d->dtype != 11 || d->rank != 1 || d->dims[0] != (int64_t)n ||
      (n && !a->tensor_data)) {
    return false;
  }
  if (n) {
    memcpy(out, a->tensor_data, n * sizeof(double));
  }
  return true;
}

bool cpu_param_axis(const wm_op_desc *op, int32_t *out) {
  int64_t a;
  if (op->n_in < 1 || !cpu_param_int(op, "axis", &a) || a < 0 ||
      a >= (int64_t)op->in[0].rank) {
    return false;
  }
  *out = (int32_t)a;
  return true;
}

bool cpu_param_int(const wm_op_desc *op, const char *name, int64_t *out) {
  const wm_op_attr *a = cpu_param(op, name);
  if (!a || a->type != 2) {
    return false;
  }
  *out = a->i;
  return true;
}

bool cpu_window_params(const wm_op_desc *op, int32_t nsp, cpu_window_t *w,
                       uint32_t *why, const char **detail) {
  memset(w, 0, sizeof(*w));
  size_t n = (size_t)nsp;
  if (nsp < 0 || nsp > CPU_MAX_RANK ||
      !cpu_param_ints(op, "kernel_shape", n, w->kernel) ||
      !cpu_param_ints(op, "strides", n, w->strides) ||
      !cpu_param_ints(op, "dilations", n, w->dilations) ||
      !cpu_param_ints(op, "pads", 2 * n, w->pads)) {
    cpu_refuse(why, detail, WM_WHY_SHAPE,
               "the window is resolved by the host for known shapes");
    return false;
  }
  return true;
}

bool cpu_has_input(const wm_op_desc *op, uint32_t i) {
  return i < op->n_in && op->in[i].dtype != 0;
}

size_t cpu_desc_count(const wm_tensor_desc *d) {
  size_t n = 1;
  for (uint32_t i = 0; i < d->rank && i < WM_ABI_MAX_RANK; i++) {
    if (d->dims[i] < 0 || !wm_checked_mul(n, (size_t)d->dims[i], &n)) {
      return 0;
    }
  }
  return n;
}

uint32_t cpu_refuse(uint32_t *why, const char **detail, uint32_t reason,
                    const char *text) {
  *why = reason;
  *detail = text;
  return WM_SUPPORT_NONE;
}

cpu_isa_t cpu_isa(void) {
  cpu_isa_t isa = CPU_ISA_BASELINE;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("fma")) {
    isa = CPU_ISA_AVX512;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    isa = CPU_ISA_AVX2;
  }
#endif
  const char *cap = getenv("WMAP_CPU_ISA");
  if (cap && strcmp(cap, "avx2") == 0 && isa > CPU_ISA_AVX2) {
    isa = CPU_ISA_AVX2;
  } else if (cap && strcmp(cap, "baseline") == 0) {
    isa = CPU_ISA_BASELINE;
  }
  return isa;
}
