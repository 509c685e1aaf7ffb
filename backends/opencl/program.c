// The opencl backend's compile and launch: format "opencl-c" built by the
// driver, its program binaries kept in a cache folder keyed by the
// platform, device, driver, options and source (a second process that
// builds the same source loads the binary instead), and kernels launched
// in the calling convention of include/wmap/backend.h.
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opencl.h"
#include "wmap/base.h"

// A kernel's arguments are state of the cl_kernel: setting them and
// enqueueing is one step under |lock|, as streams may launch it at once.
struct wm_kernel {
  const wm_device *dev;  // the device its program was built for
  cl_kernel kernel;      // from the executable's program
  char *name;            // the __kernel function's
  cl_uint n_params;      // CL_KERNEL_NUM_ARGS
  pthread_mutex_t lock;  // guards the arguments until the enqueue
};

struct wm_executable {
  wm_device *dev;        // the device it was built for
  cl_program program;    // built
  pthread_mutex_t lock;  // guards |kernels|
  wm_kernel **kernels;   // handed out; freed with the executable
  size_t n_kernels;      // entries of |kernels|
};

// The most arguments a launch takes, and the most bytes of a build log
// quoted in an error.
enum { MAX_ARGS = 64, MAX_LOG = 4096 };

// The options a build gets when the caller gives none.
static const char kDefaultOptions[] = "-cl-std=CL1.2";

wm_error *ocl_format_support(const wm_target_desc *target, const char *format,
                             uint32_t *out_level) {
  *out_level = WM_SUPPORT_NONE;
  if (!target || !format || strcmp(format, "opencl-c") != 0) {
    return NULL;
  }
  const ocl_target_t *t = ocl_target_of(target);
  // A description from elsewhere (a map made on another machine) is taken
  // at its word: it compiles what it lists.
  bool listed = false;
  for (uint32_t i = 0; !t && target->formats && i < target->n_formats; i++) {
    listed = listed || (target->formats[i] &&
                        strcmp(target->formats[i], "opencl-c") == 0);
  }
  if (t ? t->compiler : listed) {
    *out_level = WM_SUPPORT_SUPPORTED;
  }
  return NULL;
}

// The cache key of |source| built with |options| for |t|: SHA-256 over
// everything the binary depends on.
static void cache_key(const ocl_target_t *t, const char *options,
                      const char *source, uint64_t length, char key[65]) {
  const char *parts[] = {"wmap opencl program 1", t->platform_text,
                         t->device_name, t->driver, options};
  wm_sha256_t c;
  wm_sha256_init(&c);
  for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
    wm_sha256_update(&c, parts[i], strlen(parts[i]) + 1);  // NUL separates
  }
  wm_sha256_update(&c, source, (size_t)length);
  wm_sha256_final(&c, key);
}

// The build log of |program| for |device|, blanks trimmed and cut at
// MAX_LOG bytes (heap, "" when there is none; NULL when out of memory).
static char *build_log(cl_program program, cl_device_id device) {
  size_t n = 0;
  if (ocl.clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, NULL,
                                &n) != CL_SUCCESS) {
    n = 0;
  }
  char *log = malloc(n + 1);
  if (!log) {
    return NULL;
  }
  if (n == 0 || ocl.clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG,
                                          n, log, NULL) != CL_SUCCESS) {
    n = 0;
  }
  log[n] = '\0';
  size_t len = strlen(log), start = strspn(log, " \t\r\n");
  while (len > start && strchr(" \t\r\n", log[len - 1])) {
    len--;
  }
  if (len - start > MAX_LOG) {
    len = start + MAX_LOG;
    memcpy(log + len - 4, " ...", 4);
  }
  memmove(log, log + start, len - start);
  log[len - start] = '\0';
  return log;
}

// Builds |program| for the device of |dev|; on failure, an error quoting
// the build log.
static wm_error *build(wm_device *dev, cl_program program,
                       const char *options) {
  const ocl_target_t *t = dev->target;
  cl_int err = ocl.clBuildProgram(program, 1, &t->device, options, NULL, NULL);
  if (err == CL_SUCCESS) {
    return NULL;
  }
  if (err != CL_BUILD_PROGRAM_FAILURE && err != CL_INVALID_BUILD_OPTIONS) {
    return ocl_cl_error(err, "compile: clBuildProgram for %s", t->name);
  }
  char *log = build_log(program, t->device);
  wm_error *e = wm_host_error_create(
      WM_ERR_INVALID_ARGUMENT,
      "compile: the OpenCL C program does not build for %s (%s, options "
      "\"%s\"):\n%s",
      t->name, ocl_error_name(err), options, log ? log : "(no build log)");
  free(log);
  return e;
}

// The program in cache file |path| built for |dev|, or NULL when there is
// none or it does not build (a damaged entry, then rewritten).
static cl_program from_cache(wm_device *dev, const char *path,
                             const char *options) {
  uint8_t *data = NULL;
  size_t size = 0;
  wm_status_t s = wm_file_read(path, &data, &size);
  if (s) {
    wm_status_free(s);  // not cached yet
    return NULL;
  }
  const unsigned char *binary = data;
  cl_int status = CL_SUCCESS, err = CL_INVALID_BINARY;
  cl_program program = size ? ocl.clCreateProgramWithBinary(
                                  dev->context, 1, &dev->target->device, &size,
                                  &binary, &status, &err)
                            : NULL;
  wm_error *e = program ? build(dev, program, options) : NULL;
  free(data);
  if (!program || e) {
    ocl_log(WM_LOG_LEVEL_WARN,
            "the cached program binary \"%s\" does not load (%s); building "
            "from source",
            path, e ? wm_host_error_message(e) : ocl_error_name(err));
    wm_host_error_destroy(e);
    if (program) {
      ocl.clReleaseProgram(program);
    }
    return NULL;
  }
  return program;
}

// Writes the binary of |program| to |path| under a temporary name renamed
// into place, so a reader never sees half a file; a failure only logs.
static void save_binary(cl_program program, const char *path) {
  static atomic_uint serial;
  size_t size = 0;
  unsigned char *binary = NULL;
  char tmp[4200];
  const char *why = NULL;
  cl_int err = ocl.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES,
                                    sizeof(size), &size, NULL);
  if (!err && size > 0 && (binary = malloc(size)) != NULL) {
    err = ocl.clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(binary),
                               &binary, NULL);
  }
  if (err || !binary) {
    why = err ? ocl_error_name(err) : "the driver gives no binary";
  } else if (snprintf(tmp, sizeof(tmp), "%s.%d.%u.tmp", path, (int)getpid(),
                      atomic_fetch_add(&serial, 1)) >= (int)sizeof(tmp)) {
    why = "the path is too long";
  } else {
    wm_status_t s = wm_make_parents(path);
    s = s ? s : wm_file_write(tmp, binary, size);
    if (s) {
      ocl_log(WM_LOG_LEVEL_WARN, "not caching the program binary: %s",
              wm_status_message(s));
      wm_status_free(s);
      remove(tmp);
    } else if (rename(tmp, path) != 0) {
      why = strerror(errno);
      remove(tmp);
    }
  }
  if (why) {
    ocl_log(WM_LOG_LEVEL_WARN, "not caching the program binary \"%s\": %s",
            path, why);
  }
  free(binary);
}

// The cache file of |key| (heap), or NULL when there is no cache folder.
static char *cache_path(const char *key) {
  char *dir = NULL;
  wm_status_t s = wm_cache_folder(NULL, "opencl", &dir);
  if (s) {
    ocl_log(WM_LOG_LEVEL_DEBUG, "no program cache: %s", wm_status_message(s));
    wm_status_free(s);
    return NULL;
  }
  size_t n = strlen(dir) + 72;
  char *path = malloc(n);
  if (path) {
    snprintf(path, n, "%s/%s.bin", dir, key);
  }
  free(dir);
  return path;
}

wm_error *ocl_compile(wm_device *dev, const char *format, const char *source,
                      uint64_t length, const char *options,
                      wm_executable **out_exe) {
  *out_exe = NULL;
  if (!format || strcmp(format, "opencl-c") != 0) {
    return wm_host_error_create(WM_ERR_INVALID_ARGUMENT,
                                "compile: format \"%s\" is not one this "
                                "backend compiles (opencl-c)",
                                format ? format : "(null)");
  }
  if (!source || length > SIZE_MAX || memchr(source, '\0', length)) {
    return wm_host_error_create(
        WM_ERR_INVALID_ARGUMENT, "compile: the source is %s",
        source ? "not text (it holds a NUL byte)" : "NULL");
  }
  if (!options || !*options) {
    options = kDefaultOptions;
  }
  if (strchr(options, '\n')) {
    return wm_host_error_create(WM_ERR_INVALID_ARGUMENT,
                                "compile: the options hold a newline");
  }
  const ocl_target_t *t = dev->target;
  char key[65];
  cache_key(t, options, source, length, key);
  char *path = cache_path(key);
  cl_program program = path ? from_cache(dev, path, options) : NULL;
  bool cached = program != NULL;
  wm_error *e = NULL;
  if (!program) {
    size_t n = (size_t)length;
    cl_int err;
    program = ocl.clCreateProgramWithSource(dev->context, 1, &source, &n, &err);
    e = program ? build(dev, program, options)
                : ocl_cl_error(err, "compile: clCreateProgramWithSource");
    if (!e && path) {
      save_binary(program, path);
    }
  }
  wm_executable *exe = e ? NULL : calloc(1, sizeof(*exe));
  if (!e && !exe) {
    e = wm_host_error_oom();
  }
  if (e) {
    if (program) {
      ocl.clReleaseProgram(program);
    }
    free(path);
    return e;
  }
  ocl_log(WM_LOG_LEVEL_INFO, "program %.16s for %s: %s", key, t->name,
          cached ? "binary from the cache" : "built from source");
  free(path);
  exe->dev = dev;
  exe->program = program;
  pthread_mutex_init(&exe->lock, NULL);
  *out_exe = exe;
  return NULL;
}

// Frees kernel |k|.
static void kernel_free(wm_kernel *k) {
  ocl.clReleaseKernel(k->kernel);
  pthread_mutex_destroy(&k->lock);
  free(k->name);
  free(k);
}

wm_error *ocl_exe_get_kernel(wm_executable *exe, const char *name,
                             wm_kernel **out_kernel) {
  *out_kernel = NULL;
  if (!exe || !name) {
    return wm_host_error_create(WM_ERR_INVALID_ARGUMENT,
                                "exe_get_kernel: no executable or name");
  }
  pthread_mutex_lock(&exe->lock);
  for (size_t i = 0; i < exe->n_kernels; i++) {
    if (strcmp(exe->kernels[i]->name, name) == 0) {
      *out_kernel = exe->kernels[i];
      pthread_mutex_unlock(&exe->lock);
      return NULL;
    }
  }
  cl_int err;
  wm_error *e = NULL;
  wm_kernel *k = calloc(1, sizeof(*k));
  wm_kernel **grown =
      realloc(exe->kernels, (exe->n_kernels + 1) * sizeof(*grown));
  exe->kernels = grown ? grown : exe->kernels;
  if (!k || !grown || !(k->name = malloc(strlen(name) + 1))) {
    free(k);
    e = wm_host_error_oom();
  } else if (!(k->kernel = ocl.clCreateKernel(exe->program, name, &err))) {
    free(k->name);
    free(k);
    e = err == CL_INVALID_KERNEL_NAME
            ? wm_host_error_create(WM_ERR_NOT_FOUND,
                                   "exe_get_kernel: no kernel \"%s\" in the "
                                   "program",
                                   name)
            : ocl_cl_error(err, "exe_get_kernel: clCreateKernel \"%s\"", name);
  } else {
    strcpy(k->name, name);
    k->dev = exe->dev;
    pthread_mutex_init(&k->lock, NULL);
    err = ocl.clGetKernelInfo(k->kernel, CL_KERNEL_NUM_ARGS,
                              sizeof(k->n_params), &k->n_params, NULL);
    if (err) {
      e = ocl_cl_error(err, "exe_get_kernel: CL_KERNEL_NUM_ARGS of \"%s\"",
                       name);
      kernel_free(k);
    } else {
      exe->kernels[exe->n_kernels++] = k;
      *out_kernel = k;
    }
  }
  pthread_mutex_unlock(&exe->lock);
  return e;
}

void ocl_exe_destroy(wm_executable *exe) {
  if (!exe) {
    return;
  }
  for (size_t i = 0; i < exe->n_kernels; i++) {
    kernel_free(exe->kernels[i]);
  }
  free(exe->kernels);
  pthread_mutex_destroy(&exe->lock);
  ocl.clReleaseProgram(exe->program);
  free(exe);
}

// Checks launch |a| on stream |s| against the convention and the device:
// its arguments, work-group size and local memory.
static wm_error *check_launch(const wm_stream *s, const wm_launch_args *a) {
  const wm_kernel *k = a->kernel;
  const ocl_target_t *t = s->dev->target;
  if (k->dev->context != s->dev->context) {
    return wm_host_error_create(WM_ERR_INVALID_ARGUMENT,
                                "launch of \"%s\": the kernel was built for "
                                "another device than the stream's",
                                k->name);
  }
  uint64_t group = 1;
  for (int d = 0; d < 3; d++) {
    group *= a->block[d] ? a->block[d] : 1;
  }
  if (group > t->desc.max_group_size) {
    return wm_host_error_create(
        WM_ERR_INVALID_ARGUMENT,
        "launch of \"%s\": work groups of %u x %u x %u = %llu work items; %s "
        "takes at most %u",
        k->name, a->block[0], a->block[1], a->block[2],
        (unsigned long long)group, t->name, t->desc.max_group_size);
  }
  if (a->shared_bytes > t->desc.local_memory_bytes) {
    return wm_host_error_create(
        WM_ERR_RESOURCE_EXHAUSTED,
        "launch of \"%s\": %u bytes of local memory; %s has %llu", k->name,
        a->shared_bytes, t->name,
        (unsigned long long)t->desc.local_memory_bytes);
  }
  cl_uint params = a->shared_bytes ? 1 : 0;
  for (uint32_t i = 0; i < a->n_args; i++) {
    const wm_kernel_arg *g = &a->args[i];
    if (g->kind == WM_ARG_BUFFER && g->buffer &&
        g->buffer->dev->context == s->dev->context) {
      if (g->offset > g->buffer->size) {
        return wm_host_error_create(
            WM_ERR_OUT_OF_RANGE,
            "launch of \"%s\": argument %u: offset %llu is past the end of "
            "its buffer of %llu bytes",
            k->name, i, (unsigned long long)g->offset,
            (unsigned long long)g->buffer->size);
      }
      params += 2;
    } else if (g->kind == WM_ARG_SCALAR && g->value && g->size > 0) {
      params += 1;
    } else {
      return wm_host_error_create(
          WM_ERR_INVALID_ARGUMENT,
          "launch of \"%s\": argument %u is neither a buffer of this device "
          "nor a scalar with a value",
          k->name, i);
    }
  }
  if (params != k->n_params) {
    return wm_host_error_create(
        WM_ERR_INVALID_ARGUMENT,
        "launch of \"%s\": %u arguments make %u parameters (a buffer is two, "
        "a pointer and a ulong offset%s); the kernel has %u",
        k->name, a->n_args, params,
        a->shared_bytes ? ", and local memory one more" : "", k->n_params);
  }
  return NULL;
}

// Sets the parameters of |a|'s kernel from its arguments; the caller holds
// the kernel's lock.
static wm_error *set_args(const wm_launch_args *a) {
  cl_kernel kernel = a->kernel->kernel;
  cl_uint p = 0;
  cl_int err = CL_SUCCESS;
  uint32_t i = 0;
  for (; i < a->n_args && !err; i++) {
    const wm_kernel_arg *g = &a->args[i];
    if (g->kind == WM_ARG_BUFFER) {
      cl_ulong offset = g->offset;
      err = ocl.clSetKernelArg(kernel, p++, sizeof(cl_mem), &g->buffer->mem);
      err =
          err ? err : ocl.clSetKernelArg(kernel, p++, sizeof(offset), &offset);
    } else {
      err = ocl.clSetKernelArg(kernel, p++, (size_t)g->size, g->value);
    }
  }
  if (err) {
    return ocl_cl_error(err, "launch of \"%s\": argument %u (parameter %u)",
                        a->kernel->name, i - 1, p - 1);
  }
  err = a->shared_bytes ? ocl.clSetKernelArg(kernel, p, a->shared_bytes, NULL)
                        : CL_SUCCESS;
  return err ? ocl_cl_error(err,
                            "launch of \"%s\": local memory (parameter %u)",
                            a->kernel->name, p)
             : NULL;
}

wm_error *ocl_launch(wm_stream *s, const wm_launch_args *a) {
  if (!s || !a || a->struct_size < WM_STRUCT_SIZE(wm_launch_args, args) ||
      !a->kernel) {
    return wm_host_error_create(WM_ERR_INVALID_ARGUMENT,
                                "launch: no stream, arguments or kernel");
  }
  if (a->n_args > MAX_ARGS || (a->n_args && !a->args)) {
    return wm_host_error_create(WM_ERR_INVALID_ARGUMENT,
                                "launch of \"%s\": %u arguments; at most %d",
                                a->kernel->name, a->n_args, MAX_ARGS);
  }
  wm_error *e = check_launch(s, a);
  if (e) {
    return e;
  }
  // Trailing dimensions of one work item are left out.
  size_t global[3], local[3];
  cl_uint dims = 1;
  for (cl_uint d = 0; d < 3; d++) {
    local[d] = a->block[d] ? a->block[d] : 1;
    global[d] = (size_t)a->grid[d] * local[d];
    if (global[d] == 0) {
      return NULL;  // no work item
    }
    dims = global[d] > 1 ? d + 1 : dims;
  }
  wm_kernel *k = a->kernel;
  pthread_mutex_lock(&k->lock);
  e = set_args(a);
  cl_int err = e ? CL_SUCCESS
                 : ocl.clEnqueueNDRangeKernel(s->queue, k->kernel, dims, NULL,
                                              global, local, 0, NULL, NULL);
  pthread_mutex_unlock(&k->lock);
  if (!e && err) {
    e = ocl_cl_error(err,
                     "launch of \"%s\": clEnqueueNDRangeKernel of %zu x %zu x "
                     "%zu work items in groups of %zu x %zu x %zu",
                     k->name, global[0], global[1], global[2], local[0],
                     local[1], local[2]);
  }
  return e;
}
