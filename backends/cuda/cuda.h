// The cuda backend's internals: the driver entry points (resolved from
// libcuda.so.1 at run time, so the plugin loads where no driver is), the
// device objects, and the NVRTC compiler the device tier and the library
// tier share. Not installed; the plugin's only export is wm_plugin_query.
// Included as "cuda.h" from this folder, which is never on the include
// path: <cuda.h> below is the toolkit's.
#ifndef WMAP_BACKENDS_CUDA_CUDA_H_
#define WMAP_BACKENDS_CUDA_CUDA_H_

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin_error.h"
#include "wmap/backend.h"

// ------------------------------------------------------ run-time loading

// One function of a library loaded at run time.
typedef struct cuda_symbol {
  const char *name;  // the exported name, version suffix included
  size_t offset;     // of its function pointer in the caller's table
} cuda_symbol_t;

// Opens |soname|, else |dir|/|soname| when |dir| is not NULL, and stores
// the address of each of the |n| |symbols| in |table|; returns the handle,
// or NULL with the reason in |err|. The library is never closed: the CUDA
// libraries keep process-wide state (and their C++ runtimes' allocations)
// that unloading would lose.
void *cuda_library_open(const char *soname, const char *dir,
                        const cuda_symbol_t *symbols, size_t n, void *table,
                        char *err, size_t err_cap);

// The driver API functions the backend calls, by their exported names.
typedef struct cuda_driver {
  __typeof__(cuInit) *init;
  __typeof__(cuDeviceGetCount) *device_get_count;
  __typeof__(cuDeviceGet) *device_get;
  __typeof__(cuDeviceGetName) *device_get_name;
  __typeof__(cuDeviceGetAttribute) *device_get_attribute;
  __typeof__(cuDeviceTotalMem_v2) *device_total_mem;
  __typeof__(cuDevicePrimaryCtxRetain) *primary_ctx_retain;
  __typeof__(cuDevicePrimaryCtxRelease_v2) *primary_ctx_release;
  __typeof__(cuCtxPushCurrent_v2) *ctx_push_current;
  __typeof__(cuCtxPopCurrent_v2) *ctx_pop_current;
  __typeof__(cuMemAlloc_v2) *mem_alloc;
  __typeof__(cuMemFree_v2) *mem_free;
  __typeof__(cuMemcpyHtoDAsync_v2) *memcpy_htod_async;
  __typeof__(cuMemcpyDtoHAsync_v2) *memcpy_dtoh_async;
  __typeof__(cuMemcpyDtoDAsync_v2) *memcpy_dtod_async;
  __typeof__(cuMemsetD8Async) *memset_d8_async;
  __typeof__(cuStreamCreate) *stream_create;
  __typeof__(cuStreamDestroy_v2) *stream_destroy;
  __typeof__(cuStreamSynchronize) *stream_synchronize;
  __typeof__(cuEventCreate) *event_create;
  __typeof__(cuEventRecord) *event_record;
  __typeof__(cuStreamWaitEvent) *stream_wait_event;
  __typeof__(cuEventQuery) *event_query;
  __typeof__(cuEventDestroy_v2) *event_destroy;
  __typeof__(cuModuleLoadData) *module_load_data;
  __typeof__(cuModuleGetFunction) *module_get_function;
  __typeof__(cuModuleUnload) *module_unload;
  __typeof__(cuLaunchKernel) *launch_kernel;
  __typeof__(cuGetErrorName) *get_error_name;
} cuda_driver_t;

// The driver's functions; filled once by wm_plugin_query, read-only after.
extern cuda_driver_t cuda_drv;

// ---------------------------------------------------------------- objects

// One device as enumerate describes it.
typedef struct cuda_target {
  wm_target_desc desc;  // what the host sees
  char name[256];       // cuDeviceGetName
  CUdevice device;      // the driver's handle
  int32_t cc;           // compute capability as major * 10 + minor
} cuda_target_t;

typedef struct cuda_blas cuda_blas_t;        // blas.c
typedef struct cuda_helpers cuda_helpers_t;  // blas.c

struct wm_device {
  const cuda_target_t *target;  // what it was opened from
  CUcontext ctx;                // the device's primary context, retained
  pthread_mutex_t lock;         // guards the members made on first use
  cuda_blas_t *blas;            // cuBLAS handle; NULL until the first plan
  cuda_helpers_t *helpers;      // the library tier's kernels, or NULL
};

struct wm_buffer {
  wm_device *dev;    // owner
  CUdeviceptr base;  // what cuMemAlloc returned
  CUdeviceptr ptr;   // base rounded up to the alignment asked for
  uint64_t size;     // bytes asked for
};

struct wm_stream {
  wm_device *dev;   // owner
  CUstream stream;  // non-blocking: never ordered after the NULL stream
};

struct wm_event {
  wm_device *dev;  // owner
  CUevent event;   // without timing
};

// ---------------------------------------------------------------- helpers

// An error with a printf-formatted message.
#define cuda_error wm_host_error_create

// NULL when |result| is CUDA_SUCCESS; else an error "<message>:
// <CUDA_ERROR_NAME>" whose code follows the result (out of memory,
// invalid value, a lost or faulted device, ...).
wm_error *cuda_check(CUresult result, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
// The name of |result|, e.g. "CUDA_ERROR_NO_DEVICE"; never NULL.
const char *cuda_result_name(CUresult result);
// Logs one printf-formatted line through the host (when it gave a logger).
void cuda_log(uint32_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
// Makes |dev|'s context current on the calling thread, over whatever was;
// cuda_leave restores it. Every call that touches the device is inside.
wm_error *cuda_enter(wm_device *dev);
void cuda_leave(void);

// ------------------------------------------------------ NVRTC (program.c)

// A compiled module image.
typedef struct cuda_image {
  uint8_t *data;  // a CUBIN, or PTX text with its NUL; heap
  size_t size;    // bytes of data
  bool is_cubin;  // CUBIN (from "sm_XY") or PTX (from "compute_XY")
} cuda_image_t;

// The NVRTC target for compute capability |cc| (major * 10 + minor) into
// |out|: "sm_<cc>" when NVRTC makes code for it, else "compute_<v>" (PTX the
// driver compiles) for the newest architecture v below |cc| that NVRTC
// knows. UNAVAILABLE when NVRTC cannot be loaded, FAILED_PRECONDITION when
// it knows no architecture at or below |cc|.
wm_error *cuda_nvrtc_arch(int32_t cc, char out[32]);
// Compiles CUDA C |source| (|length| bytes) with NVRTC for |arch| ("sm_XY"
// gives a CUBIN, "compute_XY" PTX), the options -arch, -default-device and
// --std=c++17 followed by |options| split on spaces (NULL or "" for none),
// through a cache: `<cache_dir>/<key>.cubin` or `.ptx`, where key is the
// SHA-256 of NVRTC's version, the arch, the options and the source, and
// cache_dir NULL means wm_cache_folder's "cuda" folder. A cached image is
// read instead of compiling (*out_hit true; may be NULL). A source NVRTC
// rejects is INVALID_ARGUMENT quoting its log. Needs no driver. Thread-safe:
// images are written under a temporary name and renamed into place.
wm_error *cuda_nvrtc_compile(const char *source, uint64_t length,
                             const char *arch, const char *options,
                             const char *cache_dir, cuda_image_t *out_image,
                             bool *out_hit);
// Frees the data of |image| and clears it.
void cuda_image_deinit(cuda_image_t *image);
// Compiles |source| for |dev| (cuda_nvrtc_compile into the default cache)
// and loads it as a module on |dev|.
wm_error *cuda_module_build(wm_device *dev, const char *source, uint64_t length,
                            const char *options, CUmodule *out_module);

// The device tier's compile and launch, and its kernel format.
wm_error *cuda_format_support(const wm_target_desc *target, const char *format,
                              uint32_t *out_level);
wm_error *cuda_compile(wm_device *dev, const char *format, const char *source,
                       uint64_t length, const char *options,
                       wm_executable **out_exe);
wm_error *cuda_exe_get_kernel(wm_executable *exe, const char *name,
                              wm_kernel **out_kernel);
void cuda_exe_destroy(wm_executable *exe);
wm_error *cuda_launch(wm_stream *stream, const wm_launch_args *args);
// The target of cuda's enumerate at |target|, or NULL when it is not one.
const cuda_target_t *cuda_target_of(const wm_target_desc *target);

// ------------------------------------------------- library tier (blas.c)

extern const wm_library_tier cuda_library_tier;
// The CUDA C source of the tier's own kernels (im2col, bias, broadcast).
extern const char cuda_blas_kernels_source[];
// What the tier makes of |op|, from its description alone: WM_WHY_NONE when
// it serves the instance, else the reason with |out_detail| (static text);
// |out_calls| (may be NULL) gets the GEMM calls one run makes (a MatMul's
// batch dims that cannot be strided are looped over, one call each).
uint32_t cuda_blas_analyze(const wm_op_desc *op, uint64_t *out_calls,
                           const char **out_detail);
// Frees what the library tier made on |dev| (its cuBLAS handle and its
// kernels' module); called by device_close with the context current.
void cuda_blas_release(wm_device *dev);

#endif  // WMAP_BACKENDS_CUDA_CUDA_H_
