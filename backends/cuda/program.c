// The cuda backend's compile and launch: format "cuda-c" compiled by NVRTC
// (loaded at run time) for the device's architecture into a
// content-addressed cache of CUBIN and PTX images, loaded as driver
// modules, and launched in the calling convention of wmap/backend.h.
#include <errno.h>
#include <nvrtc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda.h"
#include "wmap/base.h"

#ifndef WMAP_CUDA_NVRTC_SONAME
#define WMAP_CUDA_NVRTC_SONAME "libnvrtc.so"
#endif
#ifndef WMAP_CUDA_LIBRARY_DIR
#define WMAP_CUDA_LIBRARY_DIR ""
#endif

// Bumped when the fixed options or the cache layout change.
#define CACHE_SCHEMA "wmap-cuda-nvrtc 1"
// The most bytes of NVRTC's log an error quotes.
enum { LOG_QUOTE = 4096 };
// The most arguments a launch takes.
enum { MAX_ARGS = 64 };

struct wm_executable {
  wm_device *dev;       // owner
  CUmodule module;      // the loaded image
  wm_kernel **kernels;  // handed out by exe_get_kernel, freed with the module
  size_t n_kernels;
};

struct wm_kernel {
  wm_device *dev;   // the module's device
  CUfunction func;  // in the module
};

// -------------------------------------------------------------- NVRTC

// The NVRTC functions the backend calls.
typedef struct nvrtc_api {
  __typeof__(nvrtcGetErrorString) *get_error_string;
  __typeof__(nvrtcVersion) *version;
  __typeof__(nvrtcGetNumSupportedArchs) *get_num_supported_archs;
  __typeof__(nvrtcGetSupportedArchs) *get_supported_archs;
  __typeof__(nvrtcCreateProgram) *create_program;
  __typeof__(nvrtcDestroyProgram) *destroy_program;
  __typeof__(nvrtcCompileProgram) *compile_program;
  __typeof__(nvrtcGetProgramLogSize) *get_program_log_size;
  __typeof__(nvrtcGetProgramLog) *get_program_log;
  __typeof__(nvrtcGetCUBINSize) *get_cubin_size;
  __typeof__(nvrtcGetCUBIN) *get_cubin;
  __typeof__(nvrtcGetPTXSize) *get_ptx_size;
  __typeof__(nvrtcGetPTX) *get_ptx;
} nvrtc_api_t;

#define NV(name, field) \
  { name, offsetof(nvrtc_api_t, field) }

static const cuda_symbol_t nvrtc_symbols[] = {
    NV("nvrtcGetErrorString", get_error_string),
    NV("nvrtcVersion", version),
    NV("nvrtcGetNumSupportedArchs", get_num_supported_archs),
    NV("nvrtcGetSupportedArchs", get_supported_archs),
    NV("nvrtcCreateProgram", create_program),
    NV("nvrtcDestroyProgram", destroy_program),
    NV("nvrtcCompileProgram", compile_program),
    NV("nvrtcGetProgramLogSize", get_program_log_size),
    NV("nvrtcGetProgramLog", get_program_log),
    NV("nvrtcGetCUBINSize", get_cubin_size),
    NV("nvrtcGetCUBIN", get_cubin),
    NV("nvrtcGetPTXSize", get_ptx_size),
    NV("nvrtcGetPTX", get_ptx),
};

// Set once by load_nvrtc, read-only afterwards.
static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;
static nvrtc_api_t nv;
static char nvrtc_problem[512];  // why NVRTC is missing; "" when loaded
static int32_t nvrtc_major, nvrtc_minor;
static int32_t archs[64];  // the architectures NVRTC compiles for, ascending
static int32_t n_archs;

// Loads NVRTC and reads its version and architectures.
static void load_nvrtc(void) {
  char err[384];
  if (!cuda_library_open(WMAP_CUDA_NVRTC_SONAME, WMAP_CUDA_LIBRARY_DIR,
                         nvrtc_symbols,
                         sizeof(nvrtc_symbols) / sizeof(nvrtc_symbols[0]), &nv,
                         err, sizeof(err))) {
    snprintf(nvrtc_problem, sizeof(nvrtc_problem), "no NVRTC (%s): %s",
             WMAP_CUDA_NVRTC_SONAME, err);
    return;
  }
  int major = 0, minor = 0, n = 0;
  if (nv.version(&major, &minor) != NVRTC_SUCCESS ||
      nv.get_num_supported_archs(&n) != NVRTC_SUCCESS || n <= 0 ||
      n > (int)(sizeof(archs) / sizeof(archs[0])) ||
      nv.get_supported_archs(archs) != NVRTC_SUCCESS) {
    snprintf(nvrtc_problem, sizeof(nvrtc_problem),
             "NVRTC (%s) does not say its version and architectures",
             WMAP_CUDA_NVRTC_SONAME);
    return;
  }
  nvrtc_major = major;
  nvrtc_minor = minor;
  n_archs = n;
}

// NULL when NVRTC is loaded, else UNAVAILABLE saying why.
static wm_error *nvrtc_ready(void) {
  pthread_once(&nvrtc_once, load_nvrtc);
  if (nvrtc_problem[0]) {
    return cuda_error(WM_ERR_UNAVAILABLE, "%s", nvrtc_problem);
  }
  return NULL;
}

wm_error *cuda_nvrtc_arch(int32_t cc, char out[32]) {
  out[0] = '\0';
  wm_error *e = nvrtc_ready();
  if (e) {
    return e;
  }
  int32_t below = 0;
  for (int32_t i = 0; i < n_archs; i++) {
    if (archs[i] == cc) {
      snprintf(out, 32, "sm_%d", (int)cc);
      return NULL;
    }
    if (archs[i] < cc && archs[i] > below) {
      below = archs[i];
    }
  }
  if (below == 0) {
    return cuda_error(WM_ERR_FAILED_PRECONDITION,
                      "NVRTC %d.%d compiles for compute capability %d.%d "
                      "and newer, not %d.%d",
                      (int)nvrtc_major, (int)nvrtc_minor, (int)archs[0] / 10,
                      (int)archs[0] % 10, (int)cc / 10, (int)cc % 10);
  }
  snprintf(out, 32, "compute_%d", (int)below);
  return NULL;
}

void cuda_image_deinit(cuda_image_t *image) {
  free(image->data);
  memset(image, 0, sizeof(*image));
}

// Moves the message of |s| into a log line at |level| and frees it.
static void log_status(uint32_t level, const char *what, wm_status_t s) {
  cuda_log(level, "%s: %s", what, wm_status_message(s));
  wm_status_free(s);
}

// Reads a cached image at |path| into |image|; false when there is none or
// it is not a whole image of its kind.
static bool cache_read(const char *path, bool is_cubin, cuda_image_t *image) {
  uint8_t *data = NULL;
  size_t size = 0;
  wm_status_t s = wm_file_read(path, &data, &size);
  if (s) {
    wm_status_free(s);  // not cached yet
    return false;
  }
  bool whole = is_cubin ? size >= 4 && memcmp(data,
                                              "\x7f"
                                              "ELF",
                                              4) == 0
                        : size > 0 && !memchr(data, '\0', size);
  if (!whole) {
    cuda_log(WM_LOG_LEVEL_WARN, "ignoring the damaged cache file \"%s\"", path);
    free(data);
    return false;
  }
  if (!is_cubin) {
    uint8_t *text = realloc(data, size + 1);  // the driver reads PTX to NUL
    if (!text) {
      free(data);
      return false;
    }
    data = text;
    data[size++] = '\0';
  }
  image->data = data;
  image->size = size;
  image->is_cubin = is_cubin;
  return true;
}

// Writes |image| to |path| under a temporary name first, so that readers
// never see part of it; failures only cost the next compile.
static void cache_write(const char *path, const cuda_image_t *image) {
  static atomic_uint serial;
  size_t cap = strlen(path) + 48;
  char *tmp = malloc(cap);
  if (!tmp) {
    return;
  }
  snprintf(tmp, cap, "%s.%d.%u.tmp", path, (int)getpid(),
           atomic_fetch_add(&serial, 1));
  // PTX is stored as text, without the NUL the driver wants.
  size_t bytes = image->is_cubin ? image->size : image->size - 1;
  wm_status_t s = wm_make_parents(tmp);
  if (!s) {
    s = wm_file_write(tmp, image->data, bytes);
  }
  if (s) {
    log_status(WM_LOG_LEVEL_DEBUG, "not caching the CUDA image", s);
  } else if (rename(tmp, path) != 0) {
    cuda_log(WM_LOG_LEVEL_DEBUG, "not caching the CUDA image \"%s\": %s", path,
             strerror(errno));
  } else {
    free(tmp);
    return;
  }
  remove(tmp);
  free(tmp);
}

// The cache file for the compile of |source| with |arch| and |options|
// under |cache_dir| (NULL: the default); NULL when there is no cache
// folder (the compile then goes uncached).
static char *cache_path(const char *source, uint64_t length, const char *arch,
                        const char *options, const char *cache_dir,
                        bool is_cubin) {
  char *dir = NULL;
  wm_status_t s = wm_cache_folder(cache_dir, cache_dir ? NULL : "cuda", &dir);
  if (s) {
    log_status(WM_LOG_LEVEL_DEBUG, "no cache for CUDA images", s);
    return NULL;
  }
  char head[128];
  int n = snprintf(head, sizeof(head), "%s\nnvrtc %d.%d\n", CACHE_SCHEMA,
                   (int)nvrtc_major, (int)nvrtc_minor);
  wm_sha256_t h;
  wm_sha256_init(&h);
  wm_sha256_update(&h, head, (size_t)n);
  wm_sha256_update(&h, arch, strlen(arch) + 1);
  wm_sha256_update(&h, options, strlen(options) + 1);
  wm_sha256_update(&h, source, (size_t)length);
  char key[65];
  wm_sha256_final(&h, key);
  size_t cap = strlen(dir) + sizeof(key) + 16;
  char *path = malloc(cap);
  if (path) {
    snprintf(path, cap, "%s/%s.%s", dir, key, is_cubin ? "cubin" : "ptx");
  }
  free(dir);
  return path;
}

// Splits |options| on white space into |argv| after its |n| fixed entries;
// returns the new count. |copy| is a writable copy of |options|.
static int split_options(char *copy, const char **argv, int n) {
  char *save = NULL;
  for (char *tok = strtok_r(copy, " \t\r\n", &save); tok;
       tok = strtok_r(NULL, " \t\r\n", &save)) {
    argv[n++] = tok;
  }
  return n;
}

// The error for a failed nvrtcCompileProgram of |prog|, quoting its log.
static wm_error *compile_failure(nvrtcProgram prog, nvrtcResult r,
                                 const char *arch) {
  size_t size = 0;
  char *log = NULL;
  if (nv.get_program_log_size(prog, &size) == NVRTC_SUCCESS && size > 0) {
    log = malloc(size);
    if (log && nv.get_program_log(prog, log) != NVRTC_SUCCESS) {
      log[0] = '\0';
    }
  }
  const char *text = log ? log : "";
  size_t len = strlen(text);
  while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' ')) {
    len--;
  }
  bool cut = len > LOG_QUOTE;
  int32_t code = r == NVRTC_ERROR_COMPILATION || r == NVRTC_ERROR_INVALID_OPTION
                     ? WM_ERR_INVALID_ARGUMENT
                     : WM_ERR_INTERNAL;
  wm_error *e = cuda_error(code, "compile: NVRTC %d.%d for %s: %s:\n%.*s%s",
                           (int)nvrtc_major, (int)nvrtc_minor, arch,
                           nv.get_error_string(r), (int)(cut ? LOG_QUOTE : len),
                           text, cut ? "\n[log cut]" : "");
  free(log);
  return e;
}

// Compiles |text| (NUL-terminated) with NVRTC into |image|.
static wm_error *nvrtc_build(const char *text, const char *arch,
                             const char *options, cuda_image_t *image) {
  bool is_cubin = strncmp(arch, "sm_", 3) == 0;
  size_t n_opt = strlen(options);
  char *copy = malloc(n_opt + 1);
  // Every option is at least one character and a separator.
  const char **argv = malloc((n_opt / 2 + 4) * sizeof(*argv));
  char arch_flag[32];
  if (!copy || !argv) {
    free(copy);
    free(argv);
    return wm_host_error_oom();
  }
  memcpy(copy, options, n_opt + 1);
  snprintf(arch_flag, sizeof(arch_flag), "-arch=%s", arch);
  argv[0] = arch_flag;
  argv[1] = "-default-device";
  argv[2] = "--std=c++17";
  int argc = split_options(copy, argv, 3);
  nvrtcProgram prog = NULL;
  nvrtcResult r = nv.create_program(&prog, text, "wmap.cu", 0, NULL, NULL);
  wm_error *e = NULL;
  if (r != NVRTC_SUCCESS) {
    e = cuda_error(WM_ERR_INTERNAL, "compile: nvrtcCreateProgram: %s",
                   nv.get_error_string(r));
    prog = NULL;
  } else if ((r = nv.compile_program(prog, argc, argv)) != NVRTC_SUCCESS) {
    e = compile_failure(prog, r, arch);
  } else {
    size_t size = 0;
    r = is_cubin ? nv.get_cubin_size(prog, &size)
                 : nv.get_ptx_size(prog, &size);
    uint8_t *data = r == NVRTC_SUCCESS && size > 0 ? malloc(size) : NULL;
    if (data) {
      r = is_cubin ? nv.get_cubin(prog, (char *)data)
                   : nv.get_ptx(prog, (char *)data);
    }
    if (!data || r != NVRTC_SUCCESS) {
      free(data);
      e = r != NVRTC_SUCCESS
              ? cuda_error(WM_ERR_INTERNAL, "compile: reading the %s: %s",
                           is_cubin ? "CUBIN" : "PTX", nv.get_error_string(r))
              : wm_host_error_oom();
    } else {
      image->data = data;
      image->size = size;
      image->is_cubin = is_cubin;
    }
  }
  if (prog) {
    nv.destroy_program(&prog);
  }
  free(argv);
  free(copy);
  return e;
}

wm_error *cuda_nvrtc_compile(const char *source, uint64_t length,
                             const char *arch, const char *options,
                             const char *cache_dir, cuda_image_t *out_image,
                             bool *out_hit) {
  memset(out_image, 0, sizeof(*out_image));
  if (out_hit) {
    *out_hit = false;
  }
  if (!source || memchr(source, '\0', length) || length >= SIZE_MAX) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT, "compile: the source is %s",
                      source ? "not text (it holds a NUL byte)" : "NULL");
  }
  bool is_cubin = arch && strncmp(arch, "sm_", 3) == 0;
  if (!arch || (!is_cubin && strncmp(arch, "compute_", 8) != 0)) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT,
                      "compile: architecture \"%s\" is neither sm_XY nor "
                      "compute_XY",
                      arch ? arch : "(null)");
  }
  wm_error *e = nvrtc_ready();
  if (e) {
    return e;
  }
  if (!options) {
    options = "";
  }
  char *path = cache_path(source, length, arch, options, cache_dir, is_cubin);
  if (path && cache_read(path, is_cubin, out_image)) {
    free(path);
    if (out_hit) {
      *out_hit = true;
    }
    return NULL;
  }
  char *text = malloc((size_t)length + 1);
  if (!text) {
    free(path);
    return wm_host_error_oom();
  }
  memcpy(text, source, (size_t)length);
  text[length] = '\0';
  e = nvrtc_build(text, arch, options, out_image);
  free(text);
  if (!e && path) {
    cache_write(path, out_image);
  }
  free(path);
  return e;
}

wm_error *cuda_module_build(wm_device *dev, const char *source, uint64_t length,
                            const char *options, CUmodule *out_module) {
  *out_module = NULL;
  char arch[32];
  wm_error *e = cuda_nvrtc_arch(dev->target->cc, arch);
  if (e) {
    return e;
  }
  cuda_image_t image;
  e = cuda_nvrtc_compile(source, length, arch, options, NULL, &image, NULL);
  if (e) {
    return e;
  }
  if (!(e = cuda_enter(dev))) {
    e = cuda_check(cuda_drv.module_load_data(out_module, image.data),
                   "compile: loading the %s for %s on %s",
                   image.is_cubin ? "CUBIN" : "PTX", arch, dev->target->name);
    cuda_leave();
  }
  cuda_image_deinit(&image);
  return e;
}

// --------------------------------------------------------- device tier

wm_error *cuda_format_support(const wm_target_desc *target, const char *format,
                              uint32_t *out_level) {
  *out_level = WM_SUPPORT_NONE;
  const cuda_target_t *t = cuda_target_of(target);
  char arch[32];
  if (t && format && strcmp(format, "cuda-c") == 0) {
    wm_error *e = cuda_nvrtc_arch(t->cc, arch);
    if (e) {
      wm_host_error_destroy(e);
      return NULL;
    }
    *out_level = WM_SUPPORT_SUPPORTED;
  }
  return NULL;
}

wm_error *cuda_compile(wm_device *dev, const char *format, const char *source,
                       uint64_t length, const char *options,
                       wm_executable **out_exe) {
  *out_exe = NULL;
  if (!format || strcmp(format, "cuda-c") != 0) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT,
                      "compile: format \"%s\" is not one this backend "
                      "compiles (cuda-c)",
                      format ? format : "(null)");
  }
  wm_executable *exe = calloc(1, sizeof(*exe));
  if (!exe) {
    return wm_host_error_oom();
  }
  exe->dev = dev;
  wm_error *e = cuda_module_build(dev, source, length, options, &exe->module);
  if (e) {
    free(exe);
    return e;
  }
  *out_exe = exe;
  return NULL;
}

wm_error *cuda_exe_get_kernel(wm_executable *exe, const char *name,
                              wm_kernel **out_kernel) {
  *out_kernel = NULL;
  if (!exe || !name) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT,
                      "exe_get_kernel: no executable or no name");
  }
  wm_kernel **grown =
      realloc(exe->kernels, (exe->n_kernels + 1) * sizeof(*grown));
  if (!grown) {
    return wm_host_error_oom();
  }
  exe->kernels = grown;
  wm_kernel *k = calloc(1, sizeof(*k));
  if (!k) {
    return wm_host_error_oom();
  }
  k->dev = exe->dev;
  wm_error *e = cuda_enter(exe->dev);
  if (!e) {
    e = cuda_check(cuda_drv.module_get_function(&k->func, exe->module, name),
                   "exe_get_kernel: kernel \"%s\"", name);
    cuda_leave();
  }
  if (e) {
    free(k);
    return e;
  }
  exe->kernels[exe->n_kernels++] = k;
  *out_kernel = k;
  return NULL;
}

void cuda_exe_destroy(wm_executable *exe) {
  if (!exe) {
    return;
  }
  if (!cuda_enter(exe->dev)) {
    CUresult r = cuda_drv.module_unload(exe->module);
    if (r != CUDA_SUCCESS) {
      cuda_log(WM_LOG_LEVEL_WARN, "cuModuleUnload: %s", cuda_result_name(r));
    }
    cuda_leave();
  }
  for (size_t i = 0; i < exe->n_kernels; i++) {
    free(exe->kernels[i]);
  }
  free(exe->kernels);
  free(exe);
}

wm_error *cuda_launch(wm_stream *stream, const wm_launch_args *a) {
  if (!stream || !a || a->struct_size < WM_STRUCT_SIZE(wm_launch_args, args) ||
      !a->kernel) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT,
                      "launch: no stream, arguments or kernel");
  }
  const wm_target_desc *t = &stream->dev->target->desc;
  if (a->kernel->dev != stream->dev) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT,
                      "launch: the kernel was built for another device");
  }
  uint64_t threads = (uint64_t)a->block[0] * a->block[1] * a->block[2];
  if (threads == 0 || threads > t->max_group_size || a->grid[0] == 0 ||
      a->grid[1] == 0 || a->grid[2] == 0) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT,
                      "launch: grid %u x %u x %u of blocks %u x %u x %u; "
                      "every dim at least 1, at most %u threads a block",
                      a->grid[0], a->grid[1], a->grid[2], a->block[0],
                      a->block[1], a->block[2], t->max_group_size);
  }
  if (a->shared_bytes > t->local_memory_bytes) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT,
                      "launch: %u bytes of shared memory; at most %llu",
                      a->shared_bytes,
                      (unsigned long long)t->local_memory_bytes);
  }
  if (a->n_args > MAX_ARGS || (a->n_args && !a->args)) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT,
                      "launch: %u arguments; at most %d", a->n_args, MAX_ARGS);
  }
  CUdeviceptr pointers[MAX_ARGS];  // the buffer arguments' values
  void *params[MAX_ARGS];          // the address of each argument's value
  for (uint32_t i = 0; i < a->n_args; i++) {
    const wm_kernel_arg *g = &a->args[i];
    bool sized = g->struct_size >= WM_STRUCT_SIZE(wm_kernel_arg, size);
    if (sized && g->kind == WM_ARG_BUFFER && g->buffer &&
        g->buffer->dev == stream->dev && g->offset <= g->buffer->size) {
      pointers[i] = g->buffer->ptr + g->offset;
      params[i] = &pointers[i];
    } else if (sized && g->kind == WM_ARG_SCALAR && g->value && g->size > 0) {
      params[i] = (void *)g->value;
    } else {
      return cuda_error(WM_ERR_INVALID_ARGUMENT,
                        "launch: argument %u is neither a buffer of this "
                        "device (with its offset inside it) nor a scalar "
                        "with a value",
                        i);
    }
  }
  wm_error *e = cuda_enter(stream->dev);
  if (e) {
    return e;
  }
  e = cuda_check(cuda_drv.launch_kernel(
                     a->kernel->func, a->grid[0], a->grid[1], a->grid[2],
                     a->block[0], a->block[1], a->block[2], a->shared_bytes,
                     stream->stream, a->n_args ? params : NULL, NULL),
                 "launch: grid %u x %u x %u, block %u x %u x %u", a->grid[0],
                 a->grid[1], a->grid[2], a->block[0], a->block[1], a->block[2]);
  cuda_leave();
  return e;
}
