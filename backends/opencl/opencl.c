// The opencl backend plugin: every device of every OpenCL platform as a
// target of the device tier alone (no library tier), so that what it runs
// are the host's generated kernels in format "opencl-c". The ICD loader is
// opened at run time, never linked, so wmap builds and runs without it;
// this file holds the loader, the targets, devices, memory, streams and
// events, and program.c the compiler and launches.
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl.h"

ocl_api_t ocl;

struct wm_event {
  cl_event event;  // the last recorded marker; NULL before the first
};

// Written once by discover (under discover_once), read-only afterwards.
static const wm_host_api *host_api;  // the host's callbacks
static pthread_once_t discover_once = PTHREAD_ONCE_INIT;
static int32_t failure_code;                // WM_ERR_* when no target exists
static char failure[512];                   // why no target exists
static ocl_target_t *targets;               // n_targets, heap
static const wm_target_desc **target_list;  // their descriptions
static uint32_t n_targets;                  // devices of every platform
static const char *const formats[] = {"opencl-c"};
#if defined(__SANITIZE_ADDRESS__)
static const bool kAddressSanitizer = true;
#else
static const bool kAddressSanitizer = false;
#endif

// ------------------------------------------------------------- errors

// The error codes ocl_error_name knows, X(code) each.
#define OCL_ERRORS(X)                             \
  X(CL_DEVICE_NOT_FOUND)                          \
  X(CL_DEVICE_NOT_AVAILABLE)                      \
  X(CL_COMPILER_NOT_AVAILABLE)                    \
  X(CL_MEM_OBJECT_ALLOCATION_FAILURE)             \
  X(CL_OUT_OF_RESOURCES)                          \
  X(CL_OUT_OF_HOST_MEMORY)                        \
  X(CL_MEM_COPY_OVERLAP)                          \
  X(CL_BUILD_PROGRAM_FAILURE)                     \
  X(CL_MISALIGNED_SUB_BUFFER_OFFSET)              \
  X(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) \
  X(CL_INVALID_VALUE)                             \
  X(CL_INVALID_DEVICE_TYPE)                       \
  X(CL_INVALID_PLATFORM)                          \
  X(CL_INVALID_DEVICE)                            \
  X(CL_INVALID_CONTEXT)                           \
  X(CL_INVALID_COMMAND_QUEUE)                     \
  X(CL_INVALID_MEM_OBJECT)                        \
  X(CL_INVALID_BINARY)                            \
  X(CL_INVALID_BUILD_OPTIONS)                     \
  X(CL_INVALID_PROGRAM)                           \
  X(CL_INVALID_PROGRAM_EXECUTABLE)                \
  X(CL_INVALID_KERNEL_NAME)                       \
  X(CL_INVALID_KERNEL_DEFINITION)                 \
  X(CL_INVALID_KERNEL)                            \
  X(CL_INVALID_ARG_INDEX)                         \
  X(CL_INVALID_ARG_VALUE)                         \
  X(CL_INVALID_ARG_SIZE)                          \
  X(CL_INVALID_KERNEL_ARGS)                       \
  X(CL_INVALID_WORK_DIMENSION)                    \
  X(CL_INVALID_WORK_GROUP_SIZE)                   \
  X(CL_INVALID_WORK_ITEM_SIZE)                    \
  X(CL_INVALID_GLOBAL_OFFSET)                     \
  X(CL_INVALID_EVENT_WAIT_LIST)                   \
  X(CL_INVALID_EVENT)                             \
  X(CL_INVALID_OPERATION)                         \
  X(CL_INVALID_BUFFER_SIZE)                       \
  X(CL_INVALID_GLOBAL_WORK_SIZE)                  \
  X(CL_INVALID_PROPERTY)                          \
  X(CL_PLATFORM_NOT_FOUND_KHR)

const char *ocl_error_name(cl_int err) {
  switch (err) {
#define OCL_CASE(code) \
  case code:           \
    return #code;
    OCL_ERRORS(OCL_CASE)
#undef OCL_CASE
    default:
      break;
  }
  static _Thread_local char text[32];
  snprintf(text, sizeof(text), "CL error %d", (int)err);
  return text;
}

wm_error *ocl_cl_error(cl_int err, const char *fmt, ...) {
  char what[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  int32_t code = WM_ERR_INTERNAL;
  if (err == CL_OUT_OF_HOST_MEMORY || err == CL_OUT_OF_RESOURCES ||
      err == CL_MEM_OBJECT_ALLOCATION_FAILURE) {
    code = WM_ERR_RESOURCE_EXHAUSTED;
  } else if (err == CL_DEVICE_NOT_AVAILABLE) {
    code = WM_ERR_UNAVAILABLE;
  } else if (err == CL_INVALID_ARG_SIZE || err == CL_INVALID_ARG_VALUE ||
             err == CL_INVALID_KERNEL_ARGS ||
             err == CL_INVALID_WORK_GROUP_SIZE ||
             err == CL_INVALID_WORK_ITEM_SIZE ||
             err == CL_INVALID_GLOBAL_WORK_SIZE) {
    code = WM_ERR_INVALID_ARGUMENT;  // the caller's launch does not fit
  }
  return wm_host_error_create(code, "%s: %s", what, ocl_error_name(err));
}

void ocl_log_at(const char *file, int32_t line, uint32_t level, const char *fmt,
                ...) {
  if (!host_api || !host_api->log) {
    return;
  }
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  host_api->log(host_api->ctx, level, file, line, text);
}

// ------------------------------------------------------------ discovery

// Records why the plugin has no target.
static void fail(int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void fail(int32_t code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(failure, sizeof(failure), fmt, ap);
  va_end(ap);
  failure_code = code;
}

// Opens the ICD loader and resolves the table; false (and the reason
// recorded) when either fails. The loader is never closed: drivers keep
// threads that would run unloaded code.
static bool open_loader(void) {
  void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    char first[256];
    const char *why = dlerror();
    snprintf(first, sizeof(first), "%s", why ? why : "not found");
    lib = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      fail(WM_ERR_UNAVAILABLE, "no OpenCL ICD loader (libOpenCL.so.1): %s",
           first);
      return false;
    }
  }
  void *sym;
#define OCL_RESOLVE(name)                                                 \
  sym = dlsym(lib, #name);                                                \
  if (!sym) {                                                             \
    fail(WM_ERR_UNAVAILABLE,                                              \
         "the OpenCL ICD loader lacks " #name " (OpenCL 1.2 is needed)"); \
    return false;                                                         \
  }                                                                       \
  memcpy(&ocl.name, &sym, sizeof(ocl.name));
  OCL_FUNCTIONS(OCL_RESOLVE)
#undef OCL_RESOLVE
  return true;
}

// Returns a heap copy of a platform string (|device| NULL) or a device
// string, with trailing blanks removed; "" when the query fails, NULL
// when out of memory.
static char *info_string(cl_platform_id platform, cl_device_id device,
                         cl_uint what) {
  size_t n = 0;
  cl_int err = device ? ocl.clGetDeviceInfo(device, what, 0, NULL, &n)
                      : ocl.clGetPlatformInfo(platform, what, 0, NULL, &n);
  char *s = malloc(err == CL_SUCCESS ? n + 1 : 1);
  if (!s) {
    return NULL;
  }
  s[0] = '\0';
  if (err == CL_SUCCESS) {
    err = device ? ocl.clGetDeviceInfo(device, what, n, s, NULL)
                 : ocl.clGetPlatformInfo(platform, what, n, s, NULL);
    s[err == CL_SUCCESS ? n : 0] = '\0';
  }
  size_t len = strlen(s);
  while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\n')) {
    s[--len] = '\0';
  }
  return s;
}

// Returns a device's unsigned value of |size| bytes; 0 when the query
// fails.
static uint64_t device_uint(cl_device_id device, cl_device_info what,
                            size_t size) {
  union {
    cl_uint u32;
    cl_ulong u64;
    size_t z;
  } v;
  memset(&v, 0, sizeof(v));
  if (ocl.clGetDeviceInfo(device, what, size, &v, NULL) != CL_SUCCESS) {
    return 0;
  }
  return size == sizeof(cl_uint) ? v.u32 : size == sizeof(size_t) ? v.z : v.u64;
}

// True when the space-separated |list| holds the word |word|.
static bool has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; p && (p = strstr(p, word)) != NULL; p += n) {
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) {
      return true;
    }
  }
  return false;
}

// Fills target |t|, index |index|, from its platform and device; false
// when out of memory.
static bool describe(ocl_target_t *t, cl_platform_id platform,
                     cl_device_id device, uint32_t index) {
  char *pname = info_string(platform, NULL, CL_PLATFORM_NAME);
  char *pversion = info_string(platform, NULL, CL_PLATFORM_VERSION);
  char *dname = info_string(NULL, device, CL_DEVICE_NAME);
  char *vendor = info_string(NULL, device, CL_DEVICE_VENDOR);
  char *driver = info_string(NULL, device, CL_DRIVER_VERSION);
  char *ext = info_string(NULL, device, CL_DEVICE_EXTENSIONS);
  bool ok = pname && pversion && dname && vendor && driver && ext;
  if (ok) {
    t->platform = platform;
    t->device = device;
    snprintf(t->name, sizeof(t->name), "%s (%s)", dname, pname);
    snprintf(t->vendor, sizeof(t->vendor), "%s", vendor);
    snprintf(t->device_name, sizeof(t->device_name), "%s", dname);
    snprintf(t->platform_text, sizeof(t->platform_text), "%s %s", pname,
             pversion);
    snprintf(t->driver, sizeof(t->driver), "%s", driver);
    t->compiler =
        device_uint(device, CL_DEVICE_COMPILER_AVAILABLE, sizeof(cl_bool));
    t->max_alloc =
        device_uint(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(cl_ulong));
    t->base_align =
        device_uint(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(cl_uint)) / 8;
    uint64_t type = device_uint(device, CL_DEVICE_TYPE, sizeof(cl_ulong));
    // Every integer dtype and bool (OpenCL C has them), float, and the
    // half and double the extensions bring.
    uint64_t dtypes = 0;
    static const uint8_t always[] = {1, 2, 3, 4, 5, 6, 7, 9, 12, 13};
    for (size_t i = 0; i < sizeof(always); i++) {
      dtypes |= (uint64_t)1 << always[i];
    }
    dtypes |= has_word(ext, "cl_khr_fp16") ? (uint64_t)1 << 10 : 0;
    dtypes |= has_word(ext, "cl_khr_fp64") ? (uint64_t)1 << 11 : 0;
    wm_target_desc d = {
        .struct_size = sizeof(wm_target_desc),
        .name = t->name,
        .vendor = t->vendor,
        .kind = (type & CL_DEVICE_TYPE_GPU)   ? WM_TARGET_GPU
                : (type & CL_DEVICE_TYPE_CPU) ? WM_TARGET_CPU
                                              : WM_TARGET_ACCELERATOR,
        .index = index,
        .vendor_id =
            (uint32_t)device_uint(device, CL_DEVICE_VENDOR_ID, sizeof(cl_uint)),
        .memory_bytes =
            device_uint(device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(cl_ulong)),
        .compute_units = (uint32_t)device_uint(
            device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(cl_uint)),
        .n_formats = 1,
        .formats = formats,
        .dtype_mask = dtypes,
        .local_memory_bytes =
            device_uint(device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(cl_ulong)),
        .max_group_size = (uint32_t)device_uint(
            device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(size_t)),
        .vector_width = (uint32_t)device_uint(
            device, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof(cl_uint)),
    };
    t->desc = d;
  }
  free(pname);
  free(pversion);
  free(dname);
  free(vendor);
  free(driver);
  free(ext);
  return ok;
}

// Frees the targets; their descriptions are gone after.
static void free_targets(void) {
  free(targets);
  free(target_list);
  targets = NULL;
  target_list = NULL;
  n_targets = 0;
}

// Finds every device of every platform (once per load).
static void discover(void) {
  if (!open_loader()) {
    return;
  }
  cl_uint n_platforms = 0;
  cl_int err = ocl.clGetPlatformIDs(0, NULL, &n_platforms);
  if (err == CL_PLATFORM_NOT_FOUND_KHR || (!err && n_platforms == 0)) {
    fail(WM_ERR_UNAVAILABLE,
         "no OpenCL platform: the ICD loader found no driver "
         "(/etc/OpenCL/vendors)");
    return;
  }
  cl_platform_id *platforms = NULL;
  if (!err) {
    platforms = calloc(n_platforms, sizeof(*platforms));
    err = platforms ? ocl.clGetPlatformIDs(n_platforms, platforms, NULL)
                    : CL_OUT_OF_HOST_MEMORY;
  }
  if (err) {
    fail(WM_ERR_UNAVAILABLE, "no OpenCL platform: clGetPlatformIDs: %s",
         ocl_error_name(err));
    free(platforms);
    return;
  }
  uint32_t total = 0;
  for (cl_uint p = 0; p < n_platforms; p++) {
    cl_uint n = 0;
    if (ocl.clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &n) ==
        CL_SUCCESS) {
      total += n;
    }
  }
  cl_device_id *ids = total ? calloc(total, sizeof(*ids)) : NULL;
  targets = total ? calloc(total, sizeof(*targets)) : NULL;
  target_list = total ? calloc(total, sizeof(*target_list)) : NULL;
  bool ok = ids && targets && target_list;
  for (cl_uint p = 0; ok && p < n_platforms && n_targets < total; p++) {
    cl_uint n = 0;
    if (ocl.clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, total - n_targets,
                           ids, &n) != CL_SUCCESS) {
      continue;
    }
    for (cl_uint d = 0; ok && d < n && n_targets < total; d++) {
      ok = describe(&targets[n_targets], platforms[p], ids[d], n_targets);
      target_list[n_targets] = &targets[n_targets].desc;
      n_targets += ok;
    }
  }
  free(ids);
  free(platforms);
  if (total > 0 && !ok) {
    fail(WM_ERR_RESOURCE_EXHAUSTED, "out of memory describing the devices");
  } else if (n_targets == 0) {
    fail(WM_ERR_UNAVAILABLE, "no OpenCL device on the %u platform(s) found",
         n_platforms);
  }
  if (!ok || n_targets == 0) {
    free_targets();
  }
}

// Frees what discover made when the plugin is unloaded.
__attribute__((destructor)) static void unload(void) {
  free_targets();
}

const ocl_target_t *ocl_target_of(const wm_target_desc *desc) {
  for (uint32_t i = 0; desc && i < n_targets; i++) {
    if (&targets[i].desc == desc) {
      return &targets[i];
    }
  }
  return NULL;
}

// ------------------------------------------------------------- metadata

static wm_error *get_info(wm_plugin_info *out) {
  uint32_t size = out->struct_size;
  memset(out, 0, size < sizeof(*out) ? size : sizeof(*out));
  out->struct_size = size;
  out->name = "opencl";
  if (WM_HAS(out, wm_plugin_info, version)) {
    out->vendor = "wmap";
    out->version = "0.1.0";
  }
  if (WM_HAS(out, wm_plugin_info, sanitizer)) {
#if defined(__SANITIZE_ADDRESS__)
    out->sanitizer = WM_SANITIZER_ADDRESS;
#elif defined(__SANITIZE_THREAD__)
    out->sanitizer = WM_SANITIZER_THREAD;
#endif
  }
  return NULL;
}

static uint32_t probe_score(void) {
  return n_targets > 0 ? 1 : 0;
}

static wm_error *enumerate(const wm_target_desc *const **out_targets,
                           uint32_t *out_count) {
  *out_targets = target_list;
  *out_count = n_targets;
  return NULL;
}

// -------------------------------------------------------------- devices

static wm_error *device_open(const wm_target_desc *desc, wm_device **out) {
  *out = NULL;
  const ocl_target_t *t = ocl_target_of(desc);
  if (!t) {
    return wm_host_error_create(WM_ERR_INVALID_ARGUMENT,
                                "device_open: the target is not one of the "
                                "opencl backend's");
  }
  wm_device *dev = calloc(1, sizeof(*dev));
  if (!dev) {
    return wm_host_error_oom();
  }
  dev->target = t;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   (cl_context_properties)t->platform, 0};
  cl_int err;
  dev->context = ocl.clCreateContext(props, 1, &t->device, NULL, NULL, &err);
  if (!dev->context) {
    free(dev);
    return ocl_cl_error(err, "device_open: clCreateContext for %s", t->name);
  }
  dev->fill_queue = ocl.clCreateCommandQueue(dev->context, t->device, 0, &err);
  if (!dev->fill_queue) {
    ocl.clReleaseContext(dev->context);
    free(dev);
    return ocl_cl_error(err, "device_open: clCreateCommandQueue for %s",
                        t->name);
  }
  ocl_log(WM_LOG_LEVEL_DEBUG, "opened %s (driver %s)", t->name, t->driver);
  *out = dev;
  return NULL;
}

static void device_close(wm_device *dev) {
  if (dev) {
    ocl.clReleaseCommandQueue(dev->fill_queue);
    ocl.clReleaseContext(dev->context);
    free(dev);
  }
}

// --------------------------------------------------------------- memory

static wm_error *mem_alloc(wm_device *dev, uint64_t bytes, uint64_t align,
                           uint32_t kind, wm_buffer **out) {
  (void)kind;  // every buffer is device memory the host copies to
  *out = NULL;
  const ocl_target_t *t = dev->target;
  if (align & (align - 1)) {
    return wm_host_error_create(WM_ERR_INVALID_ARGUMENT,
                                "mem_alloc: alignment %llu is not a power "
                                "of two",
                                (unsigned long long)align);
  }
  if (align > t->base_align) {
    return wm_host_error_create(
        WM_ERR_INVALID_ARGUMENT,
        "mem_alloc: alignment %llu is more than the %llu bytes %s aligns "
        "buffers to",
        (unsigned long long)align, (unsigned long long)t->base_align, t->name);
  }
  if (bytes > t->max_alloc || bytes > SIZE_MAX) {
    return wm_host_error_create(
        WM_ERR_RESOURCE_EXHAUSTED,
        "mem_alloc: %llu bytes is more than the %llu bytes %s allocates at "
        "once (CL_DEVICE_MAX_MEM_ALLOC_SIZE)",
        (unsigned long long)bytes, (unsigned long long)t->max_alloc, t->name);
  }
  wm_buffer *b = calloc(1, sizeof(*b));
  if (!b) {
    return wm_host_error_oom();
  }
  size_t n = bytes ? (size_t)bytes : 1;  // OpenCL has no empty buffers
  cl_int err;
  b->mem = ocl.clCreateBuffer(dev->context, CL_MEM_READ_WRITE, n, NULL, &err);
  if (b->mem) {
    // New memory reads as zeros, as in the host-memory backends.
    static const cl_uint zero = 0;
    err = ocl.clEnqueueFillBuffer(dev->fill_queue, b->mem, &zero, n % 4 ? 1 : 4,
                                  0, n, 0, NULL, NULL);
    err = err ? err : ocl.clFinish(dev->fill_queue);
  }
  if (err) {
    if (b->mem) {
      ocl.clReleaseMemObject(b->mem);
    }
    free(b);
    return ocl_cl_error(err, "mem_alloc: %llu bytes on %s",
                        (unsigned long long)bytes, t->name);
  }
  b->dev = dev;
  b->size = bytes;
  *out = b;
  return NULL;
}

static void mem_free(wm_buffer *b) {
  if (b) {
    ocl.clReleaseMemObject(b->mem);
    free(b);
  }
}

// Checks that |bytes| at |offset| lie inside buffer |b| of the stream's
// device; |what| names the call and the side.
static wm_error *check_range(const wm_stream *s, const wm_buffer *b,
                             uint64_t offset, uint64_t bytes,
                             const char *what) {
  if (!s || !b) {
    return wm_host_error_create(WM_ERR_INVALID_ARGUMENT, "%s: no %s", what,
                                s ? "buffer" : "stream");
  }
  if (b->dev->context != s->dev->context) {
    return wm_host_error_create(WM_ERR_INVALID_ARGUMENT,
                                "%s: the buffer belongs to another device",
                                what);
  }
  if (offset > b->size || bytes > b->size - offset) {
    return wm_host_error_create(
        WM_ERR_OUT_OF_RANGE,
        "%s: %llu bytes at offset %llu overrun the buffer of %llu bytes", what,
        (unsigned long long)bytes, (unsigned long long)offset,
        (unsigned long long)b->size);
  }
  return NULL;
}

static wm_error *copy_h2d(wm_stream *s, const void *src, wm_buffer *dst,
                          uint64_t dst_offset, uint64_t bytes) {
  wm_error *e =
      check_range(s, dst, dst_offset, bytes, "copy_h2d (destination)");
  if (e || bytes == 0) {
    return e;
  }
  // Blocking: the host's memory is its own again on return.
  cl_int err = ocl.clEnqueueWriteBuffer(s->queue, dst->mem, CL_TRUE, dst_offset,
                                        bytes, src, 0, NULL, NULL);
  return err ? ocl_cl_error(err, "copy_h2d: %llu bytes at offset %llu",
                            (unsigned long long)bytes,
                            (unsigned long long)dst_offset)
             : NULL;
}

static wm_error *copy_d2h(wm_stream *s, wm_buffer *src, uint64_t src_offset,
                          void *dst, uint64_t bytes) {
  wm_error *e = check_range(s, src, src_offset, bytes, "copy_d2h (source)");
  if (e || bytes == 0) {
    return e;
  }
  cl_int err = ocl.clEnqueueReadBuffer(s->queue, src->mem, CL_TRUE, src_offset,
                                       bytes, dst, 0, NULL, NULL);
  return err ? ocl_cl_error(err, "copy_d2h: %llu bytes at offset %llu",
                            (unsigned long long)bytes,
                            (unsigned long long)src_offset)
             : NULL;
}

static wm_error *copy_d2d(wm_stream *s, wm_buffer *src, uint64_t src_offset,
                          wm_buffer *dst, uint64_t dst_offset, uint64_t bytes) {
  wm_error *e = check_range(s, src, src_offset, bytes, "copy_d2d (source)");
  e = e ? e : check_range(s, dst, dst_offset, bytes, "copy_d2d (destination)");
  if (e || bytes == 0) {
    return e;
  }
  if (src == dst && src_offset < dst_offset + bytes &&
      dst_offset < src_offset + bytes) {
    return wm_host_error_create(
        WM_ERR_INVALID_ARGUMENT,
        "copy_d2d: %llu bytes from offset %llu to %llu of one buffer overlap",
        (unsigned long long)bytes, (unsigned long long)src_offset,
        (unsigned long long)dst_offset);
  }
  cl_int err = ocl.clEnqueueCopyBuffer(s->queue, src->mem, dst->mem, src_offset,
                                       dst_offset, bytes, 0, NULL, NULL);
  return err ? ocl_cl_error(err, "copy_d2d: %llu bytes",
                            (unsigned long long)bytes)
             : NULL;
}

// -------------------------------------------------------------- streams

static wm_error *stream_create(wm_device *dev, wm_stream **out) {
  *out = NULL;
  wm_stream *s = calloc(1, sizeof(*s));
  if (!s) {
    return wm_host_error_oom();
  }
  cl_int err;
  s->dev = dev;
  s->queue =
      ocl.clCreateCommandQueue(dev->context, dev->target->device, 0, &err);
  if (!s->queue) {
    free(s);
    return ocl_cl_error(err, "stream_create: clCreateCommandQueue on %s",
                        dev->target->name);
  }
  *out = s;
  return NULL;
}

static void stream_destroy(wm_stream *s) {
  if (s) {
    ocl.clFinish(s->queue);
    ocl.clReleaseCommandQueue(s->queue);
    free(s);
  }
}

static wm_error *stream_sync(wm_stream *s) {
  cl_int err = ocl.clFinish(s->queue);
  return err ? ocl_cl_error(err, "stream_sync: clFinish on %s",
                            s->dev->target->name)
             : NULL;
}

// --------------------------------------------------------------- events

static wm_error *event_create(wm_device *dev, wm_event **out) {
  (void)dev;
  *out = calloc(1, sizeof(**out));
  return *out ? NULL : wm_host_error_oom();
}

static wm_error *event_record(wm_event *ev, wm_stream *s) {
  cl_event marker = NULL;
  cl_int err = ocl.clEnqueueMarkerWithWaitList(s->queue, 0, NULL, &marker);
  // Submitted now, so that a query or another queue's wait sees progress.
  err = err ? err : ocl.clFlush(s->queue);
  if (err) {
    if (marker) {
      ocl.clReleaseEvent(marker);
    }
    return ocl_cl_error(err, "event_record: clEnqueueMarkerWithWaitList");
  }
  if (ev->event) {
    ocl.clReleaseEvent(ev->event);
  }
  ev->event = marker;
  return NULL;
}

static wm_error *event_wait(wm_stream *s, wm_event *ev) {
  if (!ev->event) {
    return NULL;  // never recorded: nothing to wait for
  }
  cl_int err = ocl.clEnqueueBarrierWithWaitList(s->queue, 1, &ev->event, NULL);
  return err ? ocl_cl_error(err, "event_wait: clEnqueueBarrierWithWaitList")
             : NULL;
}

static wm_error *event_query(wm_event *ev, uint32_t *out_done) {
  *out_done = 1;
  if (!ev->event) {
    return NULL;
  }
  cl_int status = CL_COMPLETE;
  cl_int err = ocl.clGetEventInfo(ev->event, CL_EVENT_COMMAND_EXECUTION_STATUS,
                                  sizeof(status), &status, NULL);
  if (err) {
    return ocl_cl_error(err, "event_query: clGetEventInfo");
  }
  if (status < 0) {
    return ocl_cl_error(status, "event_query: the recorded work failed");
  }
  *out_done = status == CL_COMPLETE;
  return NULL;
}

static void event_destroy(wm_event *ev) {
  if (ev) {
    if (ev->event) {
      ocl.clReleaseEvent(ev->event);
    }
    free(ev);
  }
}

// ---------------------------------------------------------------- table

static const wm_device_tier device_tier = {
    .struct_size = sizeof(wm_device_tier),
    .mem_alloc = mem_alloc,
    .mem_free = mem_free,
    .copy_h2d = copy_h2d,
    .copy_d2h = copy_d2h,
    .copy_d2d = copy_d2d,
    .stream_create = stream_create,
    .stream_destroy = stream_destroy,
    .stream_sync = stream_sync,
    .device_close = device_close,
    .event_create = event_create,
    .event_record = event_record,
    .event_wait = event_wait,
    .event_query = event_query,
    .event_destroy = event_destroy,
    .format_support = ocl_format_support,
    .compile = ocl_compile,
    .exe_get_kernel = ocl_exe_get_kernel,
    .exe_destroy = ocl_exe_destroy,
    .launch = ocl_launch,
};

static wm_plugin_api api_table = {
    .struct_size = sizeof(wm_plugin_api),
    .get_info = get_info,
    .probe_score = probe_score,
    .enumerate = enumerate,
    .device_open = device_open,
    WM_HOST_ERROR_FIELDS,
    .device = &device_tier,
};

WM_EXPORT wm_error *wm_plugin_query(uint32_t host_major,
                                    uint32_t host_max_minor,
                                    const wm_host_api *host,
                                    const wm_plugin_api **out_api);

WM_EXPORT wm_error *wm_plugin_query(uint32_t host_major,
                                    uint32_t host_max_minor,
                                    const wm_host_api *host,
                                    const wm_plugin_api **out_api) {
  *out_api = &api_table;
  wm_error *e =
      wm_host_negotiate("opencl", host_major, host_max_minor, &api_table);
  if (e) {
    return e;
  }
  if (kAddressSanitizer) {
    // The driver is never started: its allocations would fail every leak
    // check of a process that loads all backends.
    return wm_host_error_create(WM_ERR_UNAVAILABLE,
                                "not available in an AddressSanitizer build: "
                                "the OpenCL driver's allocations are reported "
                                "as leaks");
  }
  host_api = host && WM_HAS(host, wm_host_api, log) ? host : NULL;
  pthread_once(&discover_once, discover);
  if (n_targets == 0) {
    return wm_host_error_create(failure_code, "%s", failure);
  }
  ocl_log(WM_LOG_LEVEL_DEBUG, "opencl backend loaded: %u device(s)", n_targets);
  return NULL;
}
