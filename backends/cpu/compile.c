// The cpu backend's compile and launch: format "c" (the host's generated
// kernels) built by the system compiler into a content-addressed cache of
// shared objects (wm_cc_build) and run over the device's threads.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "host_tier.h"

struct wm_executable {
  wm_cc_lib_t *lib;
  wm_kernel **kernels;  // handed out by exe_get_kernel, freed with |lib|
  size_t n_kernels;
};

struct wm_kernel {
  wm_c_kernel_fn fn;
};

static bool compiler_runs;
static pthread_once_t compiler_once = PTHREAD_ONCE_INIT;

static void probe_compiler(void) {
  compiler_runs = wm_cc_available();
}

wm_error *cpu_format_support(const wm_target_desc *target, const char *format,
                             uint32_t *out_level) {
  (void)target;
  *out_level = WM_SUPPORT_NONE;
  if (format && strcmp(format, "c") == 0) {
    pthread_once(&compiler_once, probe_compiler);
    *out_level = compiler_runs ? WM_SUPPORT_SUPPORTED : WM_SUPPORT_NONE;
  }
  return NULL;
}

wm_error *cpu_compile(wm_device *dev, const char *format, const char *source,
                      uint64_t length, const char *options,
                      wm_executable **out_exe) {
  (void)dev;
  *out_exe = NULL;
  if (!format || strcmp(format, "c") != 0) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "compile: format \"%s\" is not one this backend compiles "
                     "(c)",
                     format ? format : "(null)");
  }
  if (options && *options) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "compile: format c takes no options, got \"%s\"", options);
  }
  if (!source || memchr(source, '\0', length)) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT, "compile: the source is %s",
                     source ? "not text (it holds a NUL byte)" : "NULL");
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
    free(exe);
    return cpu_error_from(wm_status_annotate(s, "compile"));
  }
  *out_exe = exe;
  return NULL;
}

wm_error *cpu_exe_get_kernel(wm_executable *exe, const char *name,
                             wm_kernel **out_kernel) {
  *out_kernel = NULL;
  void *symbol = exe && name ? wm_cc_symbol(exe->lib, name) : NULL;
  if (!symbol) {
    return cpu_error(WM_ERR_NOT_FOUND,
                     "exe_get_kernel: no kernel \"%s\" in the executable",
                     name ? name : "(null)");
  }
  wm_kernel **grown =
      realloc(exe->kernels, (exe->n_kernels + 1) * sizeof(*grown));
  wm_kernel *k = grown ? malloc(sizeof(*k)) : NULL;
  if (grown) {
    exe->kernels = grown;
  }
  if (!k) {
    return wm_host_error_oom();
  }
  memcpy(&k->fn, &symbol, sizeof(k->fn));
  exe->kernels[exe->n_kernels++] = k;
  *out_kernel = k;
  return NULL;
}

void cpu_exe_destroy(wm_executable *exe) {
  if (!exe) {
    return;
  }
  for (size_t i = 0; i < exe->n_kernels; i++) {
    free(exe->kernels[i]);
  }
  free(exe->kernels);
  wm_cc_close(exe->lib);
  free(exe);
}

// The most arguments a launch takes.
enum { MAX_ARGS = 64 };

typedef struct launch_run {
  wm_c_kernel_fn fn;
  void *args[MAX_ARGS];
} launch_run_t;

static void launch_range(void *ctx, size_t begin, size_t end) {
  const launch_run_t *r = ctx;
  r->fn(r->args, (int64_t)begin, (int64_t)end);
}

wm_error *cpu_launch(wm_stream *stream, const wm_launch_args *a) {
  if (!stream || !a || a->struct_size < WM_STRUCT_SIZE(wm_launch_args, args) ||
      !a->kernel) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "launch: no stream, arguments or kernel");
  }
  if (a->grid[1] > 1 || a->grid[2] > 1) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "launch: grid %u x %u x %u; format c kernels run over "
                     "grid[0] only",
                     a->grid[0], a->grid[1], a->grid[2]);
  }
  if (a->n_args > MAX_ARGS || (a->n_args && !a->args)) {
    return cpu_error(WM_ERR_INVALID_ARGUMENT,
                     "launch: %u arguments; at most %d", a->n_args, MAX_ARGS);
  }
  launch_run_t run = {.fn = a->kernel->fn};
  for (uint32_t i = 0; i < a->n_args; i++) {
    const wm_kernel_arg *g = &a->args[i];
    if (g->kind == WM_ARG_BUFFER && g->buffer && g->offset <= g->buffer->size) {
      run.args[i] = (char *)g->buffer->data + g->offset;
    } else if (g->kind == WM_ARG_SCALAR && g->value) {
      run.args[i] = (void *)g->value;
    } else {
      return cpu_error(WM_ERR_INVALID_ARGUMENT,
                       "launch: argument %u is neither a buffer (with its "
                       "offset inside it) nor a scalar with a value",
                       i);
    }
  }
  size_t grain = a->block[0] ? a->block[0] : 1;
  wm_pool_for(stream->dev->pool, a->grid[0], grain, launch_range, &run);
  return NULL;
}
