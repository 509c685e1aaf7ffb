// The opencl backend's private header: the OpenCL entry points resolved at
// run time, the targets and the objects of the device tier, shared by
// opencl.c (loader, devices, memory, streams, events) and program.c
// (compile, the program cache, kernels and launch). Thread-safety: the
// entry point table and the targets are written once, at query time, and
// read-only afterwards.
#ifndef WMAP_BACKENDS_OPENCL_OPENCL_H_
#define WMAP_BACKENDS_OPENCL_OPENCL_H_

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <CL/cl_ext.h>  // CL_PLATFORM_NOT_FOUND_KHR
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "plugin_error.h"
#include "wmap/backend.h"

// The OpenCL 1.2 functions the backend calls, X(name) each.
#define OCL_FUNCTIONS(X)          \
  X(clGetPlatformIDs)             \
  X(clGetPlatformInfo)            \
  X(clGetDeviceIDs)               \
  X(clGetDeviceInfo)              \
  X(clCreateContext)              \
  X(clReleaseContext)             \
  X(clCreateCommandQueue)         \
  X(clReleaseCommandQueue)        \
  X(clFlush)                      \
  X(clFinish)                     \
  X(clCreateBuffer)               \
  X(clReleaseMemObject)           \
  X(clEnqueueFillBuffer)          \
  X(clEnqueueReadBuffer)          \
  X(clEnqueueWriteBuffer)         \
  X(clEnqueueCopyBuffer)          \
  X(clEnqueueMarkerWithWaitList)  \
  X(clEnqueueBarrierWithWaitList) \
  X(clGetEventInfo)               \
  X(clReleaseEvent)               \
  X(clCreateProgramWithSource)    \
  X(clCreateProgramWithBinary)    \
  X(clBuildProgram)               \
  X(clGetProgramInfo)             \
  X(clGetProgramBuildInfo)        \
  X(clReleaseProgram)             \
  X(clCreateKernel)               \
  X(clGetKernelInfo)              \
  X(clReleaseKernel)              \
  X(clSetKernelArg)               \
  X(clEnqueueNDRangeKernel)

// Pointers to the functions above, named as OpenCL names them.
typedef struct ocl_api {
#define OCL_FIELD(name) __typeof__(&name) name;
  OCL_FUNCTIONS(OCL_FIELD)
#undef OCL_FIELD
} ocl_api_t;

// Resolved by wm_plugin_query; every pointer is set once a target exists.
extern ocl_api_t ocl;

// One OpenCL device as a target; the description comes first, so the
// pointer handed out by enumerate is also the target's.
typedef struct ocl_target {
  wm_target_desc desc;      // what enumerate hands out
  cl_platform_id platform;  // the device's platform
  cl_device_id device;      // the device
  bool compiler;            // CL_DEVICE_COMPILER_AVAILABLE
  uint64_t max_alloc;       // CL_DEVICE_MAX_MEM_ALLOC_SIZE
  uint64_t base_align;      // CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes
  char name[320];           // "<device name> (<platform name>)"
  char vendor[128];         // CL_DEVICE_VENDOR
  char device_name[192];    // CL_DEVICE_NAME
  char platform_text[320];  // platform name and version
  char driver[128];         // CL_DRIVER_VERSION
} ocl_target_t;

struct wm_device {
  const ocl_target_t *target;   // what it was opened from
  cl_context context;           // holds every object of the device
  cl_command_queue fill_queue;  // zero-fills of new buffers
};

struct wm_buffer {
  wm_device *dev;  // the owning device
  cl_mem mem;      // at least one byte
  uint64_t size;   // bytes asked for
};

struct wm_stream {
  wm_device *dev;          // the owning device
  cl_command_queue queue;  // in order
};

// Returns the OpenCL name of |err| ("CL_OUT_OF_RESOURCES"), or
// "CL error <n>" in a static buffer per thread for codes it does not know.
const char *ocl_error_name(cl_int err);
// An error for OpenCL call failure |err|: the printf message followed by
// ": <name>", of a code that suits |err| (RESOURCE_EXHAUSTED for memory,
// INVALID_ARGUMENT for a launch that does not fit, else INTERNAL).
wm_error *ocl_cl_error(cl_int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
// Logs a printf-formatted line from |file|:|line| through the host, if it
// gave a logger; ocl_log gives the caller's place.
void ocl_log_at(const char *file, int32_t line, uint32_t level, const char *fmt,
                ...) __attribute__((format(printf, 4, 5)));
#define ocl_log(level, ...) ocl_log_at(__FILE__, __LINE__, level, __VA_ARGS__)
// The target whose description is |desc|, or NULL when it is not one of
// this plugin's.
const ocl_target_t *ocl_target_of(const wm_target_desc *desc);

// Device tier functions of program.c.
wm_error *ocl_format_support(const wm_target_desc *target, const char *format,
                             uint32_t *out_level);
wm_error *ocl_compile(wm_device *dev, const char *format, const char *source,
                      uint64_t length, const char *options,
                      wm_executable **out_exe);
wm_error *ocl_exe_get_kernel(wm_executable *exe, const char *name,
                             wm_kernel **out_kernel);
void ocl_exe_destroy(wm_executable *exe);
wm_error *ocl_launch(wm_stream *stream, const wm_launch_args *args);

#endif  // WMAP_BACKENDS_OPENCL_OPENCL_H_
