// The cuda backend plugin: the driver API loaded at run time, one target
// per device, the primary context of each, and device memory, copies,
// streams and events. Compile and launch are in program.c, the cuBLAS
// library tier in blas.c.
#include "cuda.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wmap/base.h"

#ifndef WMAP_CUDA_TOOLKIT_VERSION
#define WMAP_CUDA_TOOLKIT_VERSION "unknown"
#endif

cuda_driver_t cuda_drv;

// Set once by wm_plugin_query, read-only afterwards.
static const wm_host_api *host_api;  // the host's callbacks
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static char driver_problem[512];  // why no device; "" when ready
// The devices described; static, as the plugin may be unloaded without
// a call to clean up.
enum { MAX_DEVICES = 64 };
static cuda_target_t targets[MAX_DEVICES];              // one per device
static const wm_target_desc *target_list[MAX_DEVICES];  // &targets[i].desc
static uint32_t n_targets;
static const char *const formats[] = {"cuda-c"};  // program.c
static const char *const features[] = {"toolkit=" WMAP_CUDA_TOOLKIT_VERSION};

#define DRV(name, field) \
  { name, offsetof(cuda_driver_t, field) }

static const cuda_symbol_t driver_symbols[] = {
    DRV("cuInit", init),
    DRV("cuDeviceGetCount", device_get_count),
    DRV("cuDeviceGet", device_get),
    DRV("cuDeviceGetName", device_get_name),
    DRV("cuDeviceGetAttribute", device_get_attribute),
    DRV("cuDeviceTotalMem_v2", device_total_mem),
    DRV("cuDevicePrimaryCtxRetain", primary_ctx_retain),
    DRV("cuDevicePrimaryCtxRelease_v2", primary_ctx_release),
    DRV("cuCtxPushCurrent_v2", ctx_push_current),
    DRV("cuCtxPopCurrent_v2", ctx_pop_current),
    DRV("cuMemAlloc_v2", mem_alloc),
    DRV("cuMemFree_v2", mem_free),
    DRV("cuMemcpyHtoDAsync_v2", memcpy_htod_async),
    DRV("cuMemcpyDtoHAsync_v2", memcpy_dtoh_async),
    DRV("cuMemcpyDtoDAsync_v2", memcpy_dtod_async),
    DRV("cuMemsetD8Async", memset_d8_async),
    DRV("cuStreamCreate", stream_create),
    DRV("cuStreamDestroy_v2", stream_destroy),
    DRV("cuStreamSynchronize", stream_synchronize),
    DRV("cuEventCreate", event_create),
    DRV("cuEventRecord", event_record),
    DRV("cuStreamWaitEvent", stream_wait_event),
    DRV("cuEventQuery", event_query),
    DRV("cuEventDestroy_v2", event_destroy),
    DRV("cuModuleLoadData", module_load_data),
    DRV("cuModuleGetFunction", module_get_function),
    DRV("cuModuleUnload", module_unload),
    DRV("cuLaunchKernel", launch_kernel),
    DRV("cuGetErrorName", get_error_name),
};

// ------------------------------------------------------ run-time loading

void *cuda_library_open(const char *soname, const char *dir,
                        const cuda_symbol_t *symbols, size_t n, void *table,
                        char *err, size_t err_cap) {
  void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!lib && dir && *dir) {
    char path[1024];
    const char *first = dlerror();
    char first_copy[512];
    snprintf(first_copy, sizeof(first_copy), "%s", first ? first : "");
    snprintf(path, sizeof(path), "%s/%s", dir, soname);
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      // The plain name's failure says more than the fallback's.
      snprintf(err, err_cap, "%s", first_copy);
      return NULL;
    }
  }
  if (!lib) {
    const char *why = dlerror();
    snprintf(err, err_cap, "%s", why ? why : "dlopen failed");
    return NULL;
  }
  for (size_t i = 0; i < n; i++) {
    void *fn = dlsym(lib, symbols[i].name);
    if (!fn) {
      // Kept open all the same: a library once loaded stays (see above).
      snprintf(err, err_cap, "%s lacks %s", soname, symbols[i].name);
      return NULL;
    }
    memcpy((char *)table + symbols[i].offset, &fn, sizeof(fn));
  }
  return lib;
}

// ---------------------------------------------------------------- helpers

const char *cuda_result_name(CUresult result) {
  const char *name = NULL;
  if (!cuda_drv.get_error_name ||
      cuda_drv.get_error_name(result, &name) != CUDA_SUCCESS || !name) {
    return "CUDA_ERROR_UNKNOWN";
  }
  return name;
}

// The WM_ERR_* code for a failed driver call.
static int32_t code_of(CUresult r) {
  switch (r) {
    case CUDA_ERROR_OUT_OF_MEMORY:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
      return WM_ERR_RESOURCE_EXHAUSTED;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_INVALID_PTX:
      return WM_ERR_INVALID_ARGUMENT;
    case CUDA_ERROR_NOT_FOUND:
      return WM_ERR_NOT_FOUND;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
      return WM_ERR_UNAVAILABLE;
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
      return WM_ERR_DEVICE_LOST;  // the context is unusable from here on
    default:
      return WM_ERR_INTERNAL;
  }
}

wm_error *cuda_check(CUresult result, const char *fmt, ...) {
  if (result == CUDA_SUCCESS) {
    return NULL;
  }
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  return cuda_error(code_of(result), "%s: %s", what, cuda_result_name(result));
}

void cuda_log(uint32_t level, const char *fmt, ...) {
  if (!host_api || !WM_HAS(host_api, wm_host_api, log) || !host_api->log) {
    return;
  }
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  host_api->log(host_api->ctx, level, __FILE__, __LINE__, line);
}

wm_error *cuda_enter(wm_device *dev) {
  return cuda_check(cuda_drv.ctx_push_current(dev->ctx),
                    "making the context of %s current", dev->target->desc.name);
}

void cuda_leave(void) {
  CUcontext popped;
  CUresult r = cuda_drv.ctx_pop_current(&popped);
  if (r != CUDA_SUCCESS) {
    cuda_log(WM_LOG_LEVEL_WARN, "cuCtxPopCurrent: %s", cuda_result_name(r));
  }
}

const cuda_target_t *cuda_target_of(const wm_target_desc *target) {
  for (uint32_t i = 0; i < n_targets; i++) {
    if (target == &targets[i].desc) {
      return &targets[i];
    }
  }
  return NULL;
}

// ------------------------------------------------------ driver and devices

// FP32 fused multiply-add lanes per multiprocessor for compute capability
// |cc| (the CUDA C++ Programming Guide's arithmetic throughput table); 0
// for architectures it does not list.
static int32_t fp32_lanes(int32_t cc) {
  switch (cc) {
    case 50:
    case 52:
    case 53:
    case 61:
    case 62:
    case 86:
    case 87:
    case 89:
    case 90:
    case 100:
    case 101:
    case 103:
    case 110:
    case 120:
    case 121:
      return 128;
    case 60:
    case 70:
    case 72:
    case 75:
    case 80:
      return 64;
    default:
      return 0;
  }
}

// Reads attribute |attr| of |dev|; 0 when the driver does not know it.
static int attribute(CUdevice dev, CUdevice_attribute attr) {
  int v = 0;
  if (cuda_drv.device_get_attribute(&v, attr, dev) != CUDA_SUCCESS) {
    return 0;
  }
  return v;
}

// Describes device |ordinal| into |t|; false with driver_problem set when
// the driver cannot say.
static bool describe(int ordinal, cuda_target_t *t) {
  CUresult r = cuda_drv.device_get(&t->device, ordinal);
  size_t memory = 0;
  if (r == CUDA_SUCCESS) {
    r = cuda_drv.device_get_name(t->name, (int)sizeof(t->name), t->device);
  }
  if (r == CUDA_SUCCESS) {
    r = cuda_drv.device_total_mem(&memory, t->device);
  }
  if (r != CUDA_SUCCESS) {
    snprintf(driver_problem, sizeof(driver_problem),
             "describing CUDA device %d: %s", ordinal, cuda_result_name(r));
    return false;
  }
  CUdevice d = t->device;
  int major = attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  int minor = attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  int sms = attribute(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  double clock_khz = attribute(d, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  double mem_khz = attribute(d, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  double bus_bits = attribute(d, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  // The PCI vendor and device IDs in one value; which half is which is not
  // documented, so the vendor's half (NVIDIA's 0x10de) tells.
  uint32_t pci = (uint32_t)attribute(d, CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID);
  uint32_t device_id = (pci & 0xffff) == 0x10de ? pci >> 16
                       : (pci >> 16) == 0x10de  ? pci & 0xffff
                                                : 0;
  t->cc = major * 10 + minor;
  const uint64_t bit = 1;
  wm_target_desc desc = {
      .struct_size = sizeof(wm_target_desc),
      .name = t->name,
      .vendor = "NVIDIA",
      .kind = WM_TARGET_GPU,
      .index = (uint32_t)ordinal,
      .vendor_id = 0x10de,
      .device_id = device_id,
      .memory_bytes = memory,
      .compute_units = sms > 0 ? (uint32_t)sms : 0,
      .n_formats = 1,
      .formats = formats,
      // float, uint8, int8, uint16, int16, int32, int64, bool, float16,
      // double, uint32, uint64, bfloat16.
      .dtype_mask = bit << 1 | bit << 2 | bit << 3 | bit << 4 | bit << 5 |
                    bit << 6 | bit << 7 | bit << 9 | bit << 10 | bit << 11 |
                    bit << 12 | bit << 13 | bit << 16,
      .peak_gflops_fp32 = sms * fp32_lanes(t->cc) * 2.0 * clock_khz / 1e6,
      .mem_bandwidth_gbs = 2.0 * mem_khz * bus_bits / 8.0 / 1e6,
      .local_memory_bytes = (uint64_t)attribute(
          d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
      .max_group_size =
          (uint32_t)attribute(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
      .vector_width = 1,
      .subgroup_size = (uint32_t)attribute(d, CU_DEVICE_ATTRIBUTE_WARP_SIZE),
  };
  t->desc = desc;
  return true;
}

// Loads the driver and describes every device, or says in driver_problem
// why there is none to use. Runs once per load of the plugin.
static void load_driver(void) {
  char err[384];
  if (!cuda_library_open("libcuda.so.1", NULL, driver_symbols,
                         sizeof(driver_symbols) / sizeof(driver_symbols[0]),
                         &cuda_drv, err, sizeof(err))) {
    snprintf(driver_problem, sizeof(driver_problem),
             "no CUDA driver (libcuda.so.1): %s", err);
    return;
  }
  CUresult r = cuda_drv.init(0);
  if (r != CUDA_SUCCESS) {
    snprintf(driver_problem, sizeof(driver_problem), "cuInit: %s",
             cuda_result_name(r));
    return;
  }
  int count = 0;
  r = cuda_drv.device_get_count(&count);
  if (r != CUDA_SUCCESS) {
    snprintf(driver_problem, sizeof(driver_problem), "cuDeviceGetCount: %s",
             cuda_result_name(r));
    return;
  }
  if (count <= 0) {
    snprintf(driver_problem, sizeof(driver_problem), "no CUDA device");
    return;
  }
  if (count > MAX_DEVICES) {
    cuda_log(WM_LOG_LEVEL_WARN, "using the first %d of %d CUDA devices",
             MAX_DEVICES, count);
    count = MAX_DEVICES;
  }
  for (int i = 0; i < count; i++) {
    if (!describe(i, &targets[i])) {
      return;
    }
    target_list[i] = &targets[i].desc;
  }
  n_targets = (uint32_t)count;
}

// ------------------------------------------------------------ metadata

static wm_error *get_info(wm_plugin_info *out) {
  uint32_t size = out->struct_size;
  memset(out, 0, size < sizeof(*out) ? size : sizeof(*out));
  out->struct_size = size;
  out->name = "cuda";
  if (WM_HAS(out, wm_plugin_info, version)) {
    out->vendor = "wmap";
    out->version = "0.1.0";
  }
  if (WM_HAS(out, wm_plugin_info, features)) {
    out->n_features = sizeof(features) / sizeof(features[0]);
    out->features = features;
  }
  if (WM_HAS(out, wm_plugin_info, sanitizer)) {
#if defined(__SANITIZE_ADDRESS__)
    out->sanitizer = WM_SANITIZER_ADDRESS;
#elif defined(__SANITIZE_THREAD__)
    out->sanitizer = WM_SANITIZER_THREAD;
#else
    out->sanitizer = WM_SANITIZER_NONE;
#endif
  }
  return NULL;
}

static uint32_t probe_score(void) {
  return n_targets > 0 ? 10 : 0;
}

static wm_error *enumerate(const wm_target_desc *const **out_targets,
                           uint32_t *out_count) {
  *out_targets = target_list;
  *out_count = n_targets;
  return NULL;
}

static wm_error *device_open(const wm_target_desc *target, wm_device **out) {
  *out = NULL;
  const cuda_target_t *t = cuda_target_of(target);
  if (!t) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT,
                      "device_open: the target is not one of cuda's");
  }
  wm_device *d = calloc(1, sizeof(*d));
  if (!d) {
    return wm_host_error_oom();
  }
  d->target = t;
  wm_error *e =
      cuda_check(cuda_drv.primary_ctx_retain(&d->ctx, t->device),
                 "device_open: retaining the primary context of %s", t->name);
  if (e) {
    free(d);
    return e;
  }
  pthread_mutex_init(&d->lock, NULL);
  *out = d;
  return NULL;
}

static void device_close(wm_device *dev) {
  if (!dev) {
    return;
  }
  if (!cuda_enter(dev)) {
    cuda_blas_release(dev);
    cuda_leave();
  }
  CUresult r = cuda_drv.primary_ctx_release(dev->target->device);
  if (r != CUDA_SUCCESS) {
    cuda_log(WM_LOG_LEVEL_WARN, "cuDevicePrimaryCtxRelease(%s): %s",
             dev->target->name, cuda_result_name(r));
  }
  pthread_mutex_destroy(&dev->lock);
  free(dev);
}

// ------------------------------------------------------------- memory

// The alignment cuMemAlloc guarantees.
enum { DRIVER_ALIGN = 256 };

static wm_error *mem_alloc(wm_device *dev, uint64_t bytes, uint64_t align,
                           uint32_t kind, wm_buffer **out) {
  (void)kind;  // no mem_map: every buffer is device memory
  *out = NULL;
  if (align & (align - 1)) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT,
                      "mem_alloc: alignment %llu is not a power of two",
                      (unsigned long long)align);
  }
  uint64_t extra = align > DRIVER_ALIGN ? align - DRIVER_ALIGN : 0;
  uint64_t total = (bytes ? bytes : 1) + extra;
  if (total < bytes || total > SIZE_MAX) {
    return cuda_error(WM_ERR_RESOURCE_EXHAUSTED,
                      "mem_alloc: %llu bytes aligned to %llu is too many",
                      (unsigned long long)bytes, (unsigned long long)align);
  }
  wm_buffer *b = calloc(1, sizeof(*b));
  if (!b) {
    return wm_host_error_oom();
  }
  b->dev = dev;
  b->size = bytes;
  wm_error *e = cuda_enter(dev);
  if (e) {
    free(b);
    return e;
  }
  e = cuda_check(cuda_drv.mem_alloc(&b->base, (size_t)total),
                 "mem_alloc: %llu bytes on %s", (unsigned long long)total,
                 dev->target->name);
  if (!e) {
    b->ptr =
        align > DRIVER_ALIGN ? (b->base + align - 1) & ~(align - 1) : b->base;
    e = cuda_check(cuda_drv.memset_d8_async(b->base, 0, (size_t)total, NULL),
                   "mem_alloc: zeroing %llu bytes", (unsigned long long)total);
    if (!e) {
      e = cuda_check(cuda_drv.stream_synchronize(NULL),
                     "mem_alloc: zeroing %llu bytes",
                     (unsigned long long)total);
    }
    if (e) {
      cuda_drv.mem_free(b->base);
    }
  }
  cuda_leave();
  if (e) {
    free(b);
    return e;
  }
  *out = b;
  return NULL;
}

static void mem_free(wm_buffer *b) {
  if (!b) {
    return;
  }
  if (!cuda_enter(b->dev)) {
    CUresult r = cuda_drv.mem_free(b->base);
    if (r != CUDA_SUCCESS) {
      cuda_log(WM_LOG_LEVEL_WARN, "cuMemFree: %s", cuda_result_name(r));
    }
    cuda_leave();
  }
  free(b);
}

// Checks that [offset, offset + bytes) lies in |b|, which belongs to the
// device of |s|.
static wm_error *check_range(const wm_stream *s, const wm_buffer *b,
                             uint64_t offset, uint64_t bytes,
                             const char *what) {
  if (!s || !b) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT, "%s: no %s", what,
                      s ? "buffer" : "stream");
  }
  if (b->dev != s->dev) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT,
                      "%s: the buffer is on another device than the stream",
                      what);
  }
  if (offset > b->size || bytes > b->size - offset) {
    return cuda_error(WM_ERR_OUT_OF_RANGE,
                      "%s: %llu bytes at offset %llu overrun a buffer of %llu",
                      what, (unsigned long long)bytes,
                      (unsigned long long)offset, (unsigned long long)b->size);
  }
  return NULL;
}

static wm_error *copy_h2d(wm_stream *s, const void *src, wm_buffer *dst,
                          uint64_t dst_offset, uint64_t bytes) {
  wm_error *e = check_range(s, dst, dst_offset, bytes, "copy_h2d");
  if (e || bytes == 0) {
    return e;
  }
  if (!src) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT, "copy_h2d: no source");
  }
  if ((e = cuda_enter(s->dev))) {
    return e;
  }
  e = cuda_check(cuda_drv.memcpy_htod_async(dst->ptr + dst_offset, src,
                                            (size_t)bytes, s->stream),
                 "copy_h2d: %llu bytes", (unsigned long long)bytes);
  if (!e) {
    // The host may reuse |src| once this returns.
    e = cuda_check(cuda_drv.stream_synchronize(s->stream),
                   "copy_h2d: %llu bytes", (unsigned long long)bytes);
  }
  cuda_leave();
  return e;
}

static wm_error *copy_d2h(wm_stream *s, wm_buffer *src, uint64_t src_offset,
                          void *dst, uint64_t bytes) {
  wm_error *e = check_range(s, src, src_offset, bytes, "copy_d2h");
  if (e || bytes == 0) {
    return e;
  }
  if (!dst) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT, "copy_d2h: no destination");
  }
  if ((e = cuda_enter(s->dev))) {
    return e;
  }
  e = cuda_check(cuda_drv.memcpy_dtoh_async(dst, src->ptr + src_offset,
                                            (size_t)bytes, s->stream),
                 "copy_d2h: %llu bytes", (unsigned long long)bytes);
  if (!e) {
    // The host reads |dst| once this returns.
    e = cuda_check(cuda_drv.stream_synchronize(s->stream),
                   "copy_d2h: %llu bytes", (unsigned long long)bytes);
  }
  cuda_leave();
  return e;
}

static wm_error *copy_d2d(wm_stream *s, wm_buffer *src, uint64_t src_offset,
                          wm_buffer *dst, uint64_t dst_offset, uint64_t bytes) {
  wm_error *e = check_range(s, src, src_offset, bytes, "copy_d2d source");
  if (!e) {
    e = check_range(s, dst, dst_offset, bytes, "copy_d2d destination");
  }
  if (e || bytes == 0) {
    return e;
  }
  if ((e = cuda_enter(s->dev))) {
    return e;
  }
  e = cuda_check(
      cuda_drv.memcpy_dtod_async(dst->ptr + dst_offset, src->ptr + src_offset,
                                 (size_t)bytes, s->stream),
      "copy_d2d: %llu bytes", (unsigned long long)bytes);
  cuda_leave();
  return e;
}

// ------------------------------------------------------------- streams

static wm_error *stream_create(wm_device *dev, wm_stream **out) {
  *out = NULL;
  wm_stream *s = calloc(1, sizeof(*s));
  if (!s) {
    return wm_host_error_oom();
  }
  s->dev = dev;
  wm_error *e = cuda_enter(dev);
  if (!e) {
    e = cuda_check(cuda_drv.stream_create(&s->stream, CU_STREAM_NON_BLOCKING),
                   "stream_create on %s", dev->target->name);
    cuda_leave();
  }
  if (e) {
    free(s);
    return e;
  }
  *out = s;
  return NULL;
}

static void stream_destroy(wm_stream *s) {
  if (!s) {
    return;
  }
  if (!cuda_enter(s->dev)) {
    CUresult r = cuda_drv.stream_destroy(s->stream);
    if (r != CUDA_SUCCESS) {
      cuda_log(WM_LOG_LEVEL_WARN, "cuStreamDestroy: %s", cuda_result_name(r));
    }
    cuda_leave();
  }
  free(s);
}

static wm_error *stream_sync(wm_stream *s) {
  wm_error *e = cuda_enter(s->dev);
  if (e) {
    return e;
  }
  e = cuda_check(cuda_drv.stream_synchronize(s->stream), "stream_sync on %s",
                 s->dev->target->name);
  cuda_leave();
  return e;
}

// -------------------------------------------------------------- events

static wm_error *event_create(wm_device *dev, wm_event **out) {
  *out = NULL;
  wm_event *ev = calloc(1, sizeof(*ev));
  if (!ev) {
    return wm_host_error_oom();
  }
  ev->dev = dev;
  wm_error *e = cuda_enter(dev);
  if (!e) {
    e = cuda_check(cuda_drv.event_create(&ev->event, CU_EVENT_DISABLE_TIMING),
                   "event_create on %s", dev->target->name);
    cuda_leave();
  }
  if (e) {
    free(ev);
    return e;
  }
  *out = ev;
  return NULL;
}

static wm_error *event_record(wm_event *ev, wm_stream *s) {
  if (ev->dev != s->dev) {
    return cuda_error(WM_ERR_INVALID_ARGUMENT,
                      "event_record: the event is on another device");
  }
  wm_error *e = cuda_enter(s->dev);
  if (!e) {
    e = cuda_check(cuda_drv.event_record(ev->event, s->stream), "event_record");
    cuda_leave();
  }
  return e;
}

static wm_error *event_wait(wm_stream *s, wm_event *ev) {
  // A stream may wait on an event of another device's context.
  wm_error *e = cuda_enter(s->dev);
  if (!e) {
    e = cuda_check(cuda_drv.stream_wait_event(s->stream, ev->event, 0),
                   "event_wait");
    cuda_leave();
  }
  return e;
}

static wm_error *event_query(wm_event *ev, uint32_t *out_done) {
  *out_done = 0;
  wm_error *e = cuda_enter(ev->dev);
  if (e) {
    return e;
  }
  CUresult r = cuda_drv.event_query(ev->event);
  cuda_leave();
  if (r == CUDA_ERROR_NOT_READY) {
    return NULL;
  }
  *out_done = r == CUDA_SUCCESS;
  return cuda_check(r, "event_query");
}

static void event_destroy(wm_event *ev) {
  if (!ev) {
    return;
  }
  if (!cuda_enter(ev->dev)) {
    CUresult r = cuda_drv.event_destroy(ev->event);
    if (r != CUDA_SUCCESS) {
      cuda_log(WM_LOG_LEVEL_WARN, "cuEventDestroy: %s", cuda_result_name(r));
    }
    cuda_leave();
  }
  free(ev);
}

// -------------------------------------------------------------- tables

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
    .format_support = cuda_format_support,
    .compile = cuda_compile,
    .exe_get_kernel = cuda_exe_get_kernel,
    .exe_destroy = cuda_exe_destroy,
    .launch = cuda_launch,
};

static wm_plugin_api api_table = {
    .struct_size = sizeof(wm_plugin_api),
    .abi_major = WM_ABI_MAJOR,
    .abi_minor = WM_ABI_MINOR,
    .get_info = get_info,
    .probe_score = probe_score,
    .enumerate = enumerate,
    .device_open = device_open,
    WM_HOST_ERROR_FIELDS,
    .device = &device_tier,
    .library = &cuda_library_tier,
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
      wm_host_negotiate("cuda", host_major, host_max_minor, &api_table);
  if (e) {
    return e;
  }
  host_api = host && host->struct_size >= WM_STRUCT_SIZE(wm_host_api, ctx)
                 ? host
                 : NULL;
  pthread_once(&driver_once, load_driver);
  if (driver_problem[0]) {
    return cuda_error(WM_ERR_UNAVAILABLE, "%s", driver_problem);
  }
  cuda_log(WM_LOG_LEVEL_DEBUG, "cuda backend loaded: %u devices", n_targets);
  return NULL;
}
