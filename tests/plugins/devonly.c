// A plugin named "devonly" with the device tier alone, as a vendor's
// first plugin might be: host memory, and compile and launch of format c
// (the system compiler through wm_cc_build; kernels run on the calling
// thread). It has no library tier, so whatever it runs is a kernel the
// host generated from the operators' definitions.
#include <stdio.h>

#include "plugin_common.h"
#include "wmap/base.h"

struct wm_executable {
  wm_cc_lib_t *lib;
  wm_kernel *kernels;  // handed out, freed with the executable
  size_t n_kernels;
};

struct wm_kernel {
  wm_c_kernel_fn fn;
};

static const char *const formats[] = {"c"};

static const wm_target_desc target = {
    .struct_size = sizeof(wm_target_desc),
    .name = "device tier only (host memory)",
    .vendor = "wmap tests",
    .kind = WM_TARGET_CPU,
    .memory_bytes = 1u << 30,
    .compute_units = 1,
    .n_formats = 1,
    .formats = formats,
    .dtype_mask = 1u << 1,
};
static const wm_target_desc *const targets[] = {&target};

static wm_error *enumerate(const wm_target_desc *const **out, uint32_t *n) {
  *out = targets;
  *n = 1;
  return NULL;
}

static wm_error *device_open(const wm_target_desc *t, wm_device **out) {
  *out = t == &target ? &tp_device : NULL;
  return *out ? NULL : tp_error(WM_ERR_INVALID_ARGUMENT, "unknown target");
}

static wm_error *format_support(const wm_target_desc *t, const char *format,
                                uint32_t *out_level) {
  (void)t;
  *out_level = format && strcmp(format, "c") == 0 && wm_cc_available()
                   ? WM_SUPPORT_SUPPORTED
                   : WM_SUPPORT_NONE;
  return NULL;
}

static wm_error *compile(wm_device *dev, const char *format, const char *source,
                         uint64_t length, const char *options,
                         wm_executable **out) {
  (void)dev;
  (void)options;
  *out = NULL;
  if (!format || strcmp(format, "c") != 0) {
    return tp_error(WM_ERR_INVALID_ARGUMENT, "compile: format %s",
                    format ? format : "(null)");
  }
  char *text = malloc(length + 1);
  wm_executable *exe = calloc(1, sizeof(*exe));
  if (!text || !exe) {
    free(text);
    free(exe);
    return wm_host_error_oom();
  }
  memcpy(text, source, length);
  text[length] = '\0';
  wm_status_t s = wm_cc_build(text, NULL, &exe->lib, NULL);
  free(text);
  if (s) {
    wm_error *e =
        tp_error(WM_ERR_INTERNAL, "compile: %s", wm_status_message(s));
    wm_status_free(s);
    free(exe);
    return e;
  }
  *out = exe;
  return NULL;
}

// Up to this many kernels per executable (the test models' few).
enum { MAX_KERNELS = 256 };

static wm_error *exe_get_kernel(wm_executable *exe, const char *name,
                                wm_kernel **out) {
  void *symbol = wm_cc_symbol(exe->lib, name);
  *out = NULL;
  if (!symbol) {
    return tp_error(WM_ERR_NOT_FOUND, "no kernel %s", name);
  }
  if (!exe->kernels) {
    exe->kernels = calloc(MAX_KERNELS, sizeof(wm_kernel));
  }
  if (!exe->kernels || exe->n_kernels == MAX_KERNELS) {
    return wm_host_error_oom();
  }
  wm_kernel *k = &exe->kernels[exe->n_kernels++];
  memcpy(&k->fn, &symbol, sizeof(k->fn));
  *out = k;
  return NULL;
}

static void exe_destroy(wm_executable *exe) {
  if (exe) {
    wm_cc_close(exe->lib);
    free(exe->kernels);
    free(exe);
  }
}

static wm_error *launch(wm_stream *stream, const wm_launch_args *a) {
  (void)stream;
  void *args[16];
  if (a->n_args > 16) {
    return tp_error(WM_ERR_INVALID_ARGUMENT, "launch: %u arguments", a->n_args);
  }
  for (uint32_t i = 0; i < a->n_args; i++) {
    const wm_kernel_arg *g = &a->args[i];
    args[i] = g->kind == WM_ARG_BUFFER ? (char *)g->buffer->data + g->offset
                                       : (void *)g->value;
  }
  a->kernel->fn(args, 0, a->grid[0]);
  return NULL;
}

static wm_error *get_info(wm_plugin_info *out) {
  return tp_info(out, "devonly");
}

static const wm_device_tier device = {
    TP_DEVICE_TIER_FIELDS,      .format_support = format_support,
    .compile = compile,         .exe_get_kernel = exe_get_kernel,
    .exe_destroy = exe_destroy, .launch = launch,
};

static wm_plugin_api api = {
    .get_info = get_info,
    .enumerate = enumerate,
    .device = &device,
    .struct_size = sizeof(wm_plugin_api),
    .device_open = device_open,
    WM_HOST_ERROR_FIELDS,
};

TP_PLUGIN_QUERY(api)
