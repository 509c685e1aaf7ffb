// The cpu backend's internals: the kernel table each kernel file exports,
// the tensor view kernels work on, and helpers for attributes, errors and
// threads. Not installed; the plugin's only export is wm_plugin_query.
#ifndef WMAP_BACKENDS_CPU_H_
#define WMAP_BACKENDS_CPU_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wmap/backend.h"
#include "wmap/base.h"

#define CPU_MAX_RANK WM_ABI_MAX_RANK

// A dense row-major tensor in host memory, as kernels see it.
typedef struct cpu_tensor {
  uint32_t dtype;              // ONNX dtype; 0 = omitted
  int32_t rank;                // number of dims
  int64_t dims[CPU_MAX_RANK];  // sizes
  size_t count;                // elements
  void *data;                  // NULL when omitted
} cpu_tensor_t;

// What a kernel's run gets.
typedef struct cpu_run {
  const cpu_tensor_t *in;  // n_in inputs
  uint32_t n_in;
  const cpu_tensor_t *out;  // n_out outputs (allocated by the host)
  uint32_t n_out;
  wm_pool_t *pool;  // the backend's threads (never NULL)
  void *workspace;  // the host's workspace for this run (64-byte aligned)
  size_t workspace_bytes;  // its size: what kernel->workspace asked, or 0
} cpu_run_t;

// One operator implementation. Kernels answer for the exact instance:
// dtypes, ranks, shapes and attributes of |op|.
typedef struct cpu_kernel {
  const char *op_type;  // ONNX op_type in the default domain
  int32_t since;        // first opset served (inclusive)
  uint32_t impl;        // WM_IMPL_VENDOR_LIBRARY or WM_IMPL_NATIVE_KERNEL
  // Returns a WM_SUPPORT_* level; when NONE, sets *why (WM_WHY_*) and
  // *detail (static text). Pure: no allocation, no side effects.
  uint32_t (*query)(const wm_op_desc *op, uint32_t *why, const char **detail);
  // Builds the kernel's state from |op| (which is valid only during the
  // call: copy what is kept). May leave *out_state NULL.
  wm_error *(*plan)(const wm_op_desc *op, void **out_state);
  // Computes the outputs.
  wm_error *(*run)(void *state, const cpu_run_t *run);
  // Frees the state from plan (may be NULL when plan keeps none).
  void (*state_destroy)(void *state);
  // Bytes of workspace a run of the planned |state| on |threads| threads
  // uses (the host lends it for the run); NULL = none.
  size_t (*workspace)(const void *state, int32_t threads);
  // Bit i: the planned |state| holds its own form of constant input i
  // (packed weights) and run never reads that input (it may then come
  // with NULL data); NULL = none.
  uint64_t (*captured)(const void *state);
  // The input whose bytes output |out| may be written into by run
  // (wm_op_desc.in_place), or -1; NULL = none.
  int32_t (*in_place)(const void *state, uint32_t out);
} cpu_kernel_t;

// Kernel tables, one per file, each ending with an entry whose op_type is
// NULL. The dispatcher in cpu.c searches them in this order.
extern const cpu_kernel_t cpu_kernels_blas[];  // blas.c
// The fused operators of the "wmap" domain (blas.c, program.c).
extern const cpu_kernel_t cpu_kernels_wmap[];
extern const cpu_kernel_t cpu_kernels_program[];
extern const cpu_kernel_t cpu_kernels_eltwise[];         // eltwise.c
extern const cpu_kernel_t cpu_kernels_nn[];              // nn.c
extern const cpu_kernel_t cpu_kernels_nn_wmap[];         // nn.c
extern const cpu_kernel_t cpu_kernels_data[];            // data.c
extern const cpu_kernel_t cpu_kernels_shape[];           // shape_ops.c
extern const cpu_kernel_t cpu_kernels_resize[];          // resize.c
extern const cpu_kernel_t cpu_kernels_rnn[];             // rnn.c
extern const cpu_kernel_t cpu_kernels_attention[];       // attention.c
extern const cpu_kernel_t cpu_kernels_attention_wmap[];  // attention.c
extern const cpu_kernel_t cpu_kernels_deconv[];          // deconv.c

// Makes a plugin error (never NULL; a static one when out of memory) with
// the shared host tier (backends/host/host_tier.h), which also provides
// the plugin table's error_code, error_message and error_destroy.
wm_error *cpu_error(int32_t code, const char *fmt, ...) WM_PRINTF(2, 3);
// The same from a status (taken; NULL stays NULL), code and message kept.
wm_error *cpu_error_from(wm_status_t s);

// An open device (cpu.c opens it).
// The collective tier (collective.c): src/comm over threads and MPI.
extern const wm_collective_tier cpu_collective_tier;

struct wm_device {
  const wm_target_desc *target;  // the one host target
  wm_pool_t *pool;               // kernel threads
};

// The device tier's compile and launch of format "c" (compile.c): the
// system compiler builds a source into a cached shared object; a kernel
// runs over [0, grid[0]) split in ranges of at least block[0] on the
// device's threads (wm_c_kernel_fn's convention).
wm_error *cpu_format_support(const wm_target_desc *target, const char *format,
                             uint32_t *out_level);
wm_error *cpu_compile(wm_device *dev, const char *format, const char *source,
                      uint64_t length, const char *options,
                      wm_executable **out_exe);
wm_error *cpu_exe_get_kernel(wm_executable *exe, const char *name,
                             wm_kernel **out_kernel);
void cpu_exe_destroy(wm_executable *exe);
wm_error *cpu_launch(wm_stream *stream, const wm_launch_args *args);

// Attribute lookups on |op|; return |def| (NULL/false) when absent.
const wm_op_attr *cpu_attr(const wm_op_desc *op, const char *name);
int64_t cpu_attr_int(const wm_op_desc *op, const char *name, int64_t def);
float cpu_attr_float(const wm_op_desc *op, const char *name, float def);
const char *cpu_attr_string(const wm_op_desc *op, const char *name,
                            const char *def);
bool cpu_attr_ints(const wm_op_desc *op, const char *name,
                   const int64_t **out_values, size_t *out_count);

// The host's resolved parameters of |op| (ABI minor 4): entry |name|, or
// NULL when absent (an older host, or an instance whose shapes it did
// not know).
const wm_op_attr *cpu_param(const wm_op_desc *op, const char *name);
// Copies the INTS entry |name| into out[0..n): false unless it has |n|
// values.
bool cpu_param_ints(const wm_op_desc *op, const char *name, size_t n,
                    int64_t *out);
// Copies the 1-D double TENSOR entry |name| into out[0..n): false unless
// it has |n| values.
bool cpu_param_reals(const wm_op_desc *op, const char *name, size_t n,
                     double *out);
// The resolved "axis" of |op| in [0, rank of input 0): false when
// absent.
bool cpu_param_axis(const wm_op_desc *op, int32_t *out);
// The INT entry |name| into *out: false when absent.
bool cpu_param_int(const wm_op_desc *op, const char *name, int64_t *out);

// The resolved window of Conv, ConvTranspose and the pools: per spatial
// dim, kernel taps, stride, dilation, begin and end pads.
typedef struct cpu_window {
  int64_t kernel[CPU_MAX_RANK];
  int64_t strides[CPU_MAX_RANK];
  int64_t dilations[CPU_MAX_RANK];
  int64_t pads[2 * CPU_MAX_RANK];  // begins, then ends
} cpu_window_t;
// Reads the window of |op| for |nsp| spatial dims from its resolved
// parameters: false (with the reason) when the host resolved none, which
// is not final: WM_WHY_SHAPE.
bool cpu_window_params(const wm_op_desc *op, int32_t nsp, cpu_window_t *w,
                       uint32_t *why, const char **detail);

// Sets the reason a query refuses (*why, a WM_WHY_*, and the static
// |text|); returns WM_SUPPORT_NONE.
uint32_t cpu_refuse(uint32_t *why, const char **detail, uint32_t reason,
                    const char *text);
// Returns true when input |i| of |op| is present.
bool cpu_has_input(const wm_op_desc *op, uint32_t i);
// Element count of a description (dims all known and >= 0).
size_t cpu_desc_count(const wm_tensor_desc *d);

// The widest vector instruction set the backend's own kernel choices use
// (the GEMM micro-kernel, the AVX-512 depthwise kernel): what CPUID
// reports, capped by the environment variable WMAP_CPU_ISA (avx512, avx2
// or baseline) where it is set, so that tests run the narrower kernels on
// a wider machine too. Functions built as target clones follow CPUID
// alone.
typedef enum cpu_isa {
  CPU_ISA_BASELINE = 0,  // x86-64 (SSE2), or not x86
  CPU_ISA_AVX2 = 1,      // AVX2 with FMA
  CPU_ISA_AVX512 = 2,    // AVX-512 F and VL with FMA
} cpu_isa_t;
cpu_isa_t cpu_isa(void);

#endif  // WMAP_BACKENDS_CPU_H_
