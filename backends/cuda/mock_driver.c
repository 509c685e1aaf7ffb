// A stand-in for the CUDA driver, built as libcuda.so.1 for the cuda
// backend's test on machines without a GPU: one device of compute
// capability 8.0 whose memory is host memory, streams and events that are
// done at once, modules that keep their image, and a launch that runs the
// test's one kernel, axpy, on the host from the kernelParams it is given.
// Calls that need a context fail without one current, and what the plugin
// holds is counted, so the test can check that every context push is
// popped and every object given back (wmap_mock_cuda_held).
#pragma GCC visibility push(default)
#include <cuda.h>
#pragma GCC visibility pop

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// What the plugin holds; the counts only change under the test's threads,
// one at a time.
static int retained;             // primary context references
static int allocated;            // live cuMemAlloc blocks
static int streams;              // live streams
static int events;               // live events
static int modules;              // live modules
static _Thread_local int depth;  // contexts pushed on this thread

static int primary_ctx;  // the one context's handle points here

// A loaded module: its image and nothing else.
typedef struct mock_module {
  char *image;  // a copy of what cuModuleLoadData got
  size_t size;  // its bytes
} mock_module_t;

// A function of a module: its name only.
typedef struct mock_function {
  char name[64];
} mock_function_t;

#define EXPORT __attribute__((visibility("default")))

EXPORT int wmap_mock_cuda_held(void);

// The references the plugin still holds, over all kinds; 0 when it gave
// everything back and popped every context it pushed.
EXPORT int wmap_mock_cuda_held(void) {
  return retained + allocated + streams + events + modules + depth;
}

EXPORT CUresult cuInit(unsigned int flags) {
  return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **name) {
  switch (error) {
    case CUDA_SUCCESS:
      *name = "CUDA_SUCCESS";
      return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_VALUE:
      *name = "CUDA_ERROR_INVALID_VALUE";
      return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_CONTEXT:
      *name = "CUDA_ERROR_INVALID_CONTEXT";
      return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_FOUND:
      *name = "CUDA_ERROR_NOT_FOUND";
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// NVRTC opens the driver too and asks for its private tables; the
// stand-in has none.
EXPORT CUresult cuGetExportTable(const void **table, const CUuuid *id) {
  (void)id;
  *table = NULL;
  return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  if (dev != 0 || len < 1) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  strncpy(name, "Stand-in GPU", (size_t)len - 1);
  name[len - 1] = '\0';
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
  *bytes = (size_t)40 << 30;
  return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib,
                                     CUdevice dev) {
  if (dev != 0) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *pi = 8;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *pi = 0;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *pi = 108;
      break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      *pi = 1410000;
      break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
      *pi = 1215000;
      break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
      *pi = 5120;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      *pi = 49152;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *pi = 1024;
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *pi = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID:
      *pi = (int)(0x20b0u << 16 | 0x10deu);
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
  if (dev != 0) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  *ctx = (CUcontext)&primary_ctx;
  retained++;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  if (dev != 0 || retained == 0) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  retained--;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) {
  if (ctx != (CUcontext)&primary_ctx || retained == 0) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  depth++;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent(CUcontext *ctx) {
  if (depth == 0) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  depth--;
  *ctx = (CUcontext)&primary_ctx;
  return CUDA_SUCCESS;
}

// CUDA_SUCCESS when a context is current, as the calls below need.
static CUresult current(void) {
  return depth > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

EXPORT CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytes) {
  if (current() != CUDA_SUCCESS || bytes == 0) {
    return current() != CUDA_SUCCESS ? current() : CUDA_ERROR_INVALID_VALUE;
  }
  // Filled with garbage: the plugin must zero what it allocates.
  void *p = aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memset(p, 0xa5, bytes);
  allocated++;
  *dptr = (CUdeviceptr)(uintptr_t)p;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree(CUdeviceptr dptr) {
  if (current() != CUDA_SUCCESS) {
    return current();
  }
  free((void *)(uintptr_t)dptr);
  allocated--;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src,
                                  size_t bytes, CUstream s) {
  (void)s;
  if (current() != CUDA_SUCCESS) {
    return current();
  }
  memcpy((void *)(uintptr_t)dst, src, bytes);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes,
                                  CUstream s) {
  (void)s;
  if (current() != CUDA_SUCCESS) {
    return current();
  }
  memcpy(dst, (const void *)(uintptr_t)src, bytes);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src,
                                  size_t bytes, CUstream s) {
  (void)s;
  if (current() != CUDA_SUCCESS) {
    return current();
  }
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n,
                                CUstream s) {
  (void)s;
  if (current() != CUDA_SUCCESS) {
    return current();
  }
  memset((void *)(uintptr_t)dst, value, n);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
  if (current() != CUDA_SUCCESS) {
    return current();
  }
  *s = (CUstream)malloc(1);
  streams += *s != NULL;
  (void)flags;
  return *s ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuStreamDestroy(CUstream s) {
  if (current() != CUDA_SUCCESS) {
    return current();
  }
  free(s);
  streams--;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream s) {
  (void)s;
  return current();
}

EXPORT CUresult cuEventCreate(CUevent *e, unsigned int flags) {
  if (current() != CUDA_SUCCESS) {
    return current();
  }
  *e = (CUevent)malloc(1);
  events += *e != NULL;
  (void)flags;
  return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
  (void)e;
  (void)s;
  return current();
}

EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  (void)s;
  (void)e;
  return flags == 0 ? current() : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuEventQuery(CUevent e) {
  (void)e;
  return current();
}

EXPORT CUresult cuEventDestroy(CUevent e) {
  if (current() != CUDA_SUCCESS) {
    return current();
  }
  free(e);
  events--;
  return CUDA_SUCCESS;
}

// The bytes of |image|: a 64-bit ELF's up to its section headers, which
// come last, or PTX text and its NUL.
static size_t image_size(const char *image) {
  if (memcmp(image,
             "\x7f"
             "ELF",
             4) != 0) {
    return strlen(image) + 1;
  }
  uint64_t shoff;
  uint16_t shentsize, shnum;
  memcpy(&shoff, image + 0x28, sizeof(shoff));
  memcpy(&shentsize, image + 0x3a, sizeof(shentsize));
  memcpy(&shnum, image + 0x3c, sizeof(shnum));
  return (size_t)(shoff + (uint64_t)shentsize * shnum);
}

EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  if (current() != CUDA_SUCCESS) {
    return current();
  }
  mock_module_t *m = calloc(1, sizeof(*m));
  m->size = m ? image_size(image) : 0;
  m->image = m ? malloc(m->size) : NULL;
  if (!m || !m->image) {
    free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(m->image, image, m->size);
  modules++;
  *module = (CUmodule)m;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleUnload(CUmodule module) {
  if (current() != CUDA_SUCCESS) {
    return current();
  }
  mock_module_t *m = (mock_module_t *)module;
  free(m->image);
  free(m);
  modules--;
  return CUDA_SUCCESS;
}

// Functions handed out, freed with the process (the plugin never frees a
// CUfunction).
static mock_function_t functions[16];
static int n_functions;

EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule module,
                                    const char *name) {
  if (current() != CUDA_SUCCESS) {
    return current();
  }
  const mock_module_t *m = (const mock_module_t *)module;
  char key[66];
  size_t n = strlen(name);
  if (n > 62 || n_functions == 16) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // A CUBIN's string table has the name between NULs; PTX has
  // ".entry name(".
  key[0] = '\0';
  memcpy(key + 1, name, n + 1);
  bool found = memmem(m->image, m->size, key, n + 2) != NULL;
  memcpy(key, " ", 1);
  key[n + 1] = '(';
  found = found || memmem(m->image, m->size, key, n + 2) != NULL;
  if (!found) {
    return CUDA_ERROR_NOT_FOUND;
  }
  mock_function_t *fn = &functions[n_functions++];
  memcpy(fn->name, name, n + 1);
  *f = (CUfunction)fn;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy,
                               unsigned int gz, unsigned int bx,
                               unsigned int by, unsigned int bz,
                               unsigned int shared, CUstream s, void **params,
                               void **extra) {
  (void)shared;
  (void)s;
  const mock_function_t *fn = (const mock_function_t *)f;
  if (current() != CUDA_SUCCESS) {
    return current();
  }
  if (extra || !params || strcmp(fn->name, "axpy") != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // axpy(float *y, const float *x, float a, long long start, long long end)
  float *y = (float *)(uintptr_t) * (CUdeviceptr *)params[0];
  const float *x = (const float *)(uintptr_t) * (CUdeviceptr *)params[1];
  float a = *(const float *)params[2];
  long long start = *(const long long *)params[3];
  long long end = *(const long long *)params[4];
  long long threads = (long long)gx * gy * gz * bx * by * bz;
  for (long long g = 0; g < threads; g++) {
    long long i = start + g;
    if (i < end) {
      y[i] = a * x[i] + y[i];
    }
  }
  return CUDA_SUCCESS;
}
