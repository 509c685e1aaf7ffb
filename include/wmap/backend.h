/* wmap backend ABI v0: what a backend plugin implements.
 *
 * Standalone: only <stddef.h> and <stdint.h>. A plugin is a shared library
 * exporting one symbol, `wm_plugin_query`, that negotiates the ABI version
 * and returns a table of function pointers in three tiers:
 *   - device tier (required): memory, copies, streams and events, and
 *     optionally compile-from-source and launch;
 *   - library tier (optional): per-operator query, plan and run keyed by
 *     ONNX identity (vendor libraries, hand kernels);
 *   - collective tier (optional): communicators and collectives.
 * The guide for implementers is docs/backend-abi.md.
 *
 * Versioning rule:
 * 1. ABI = (major, minor). A major change removes, reorders or retypes
 *    anything or changes the meaning of a call; the host refuses a plugin
 *    of another major. While major is 0 no external vendor ships.
 * 2. Minor changes only append: function pointers at the end of a table,
 *    trailing struct fields, enum values.
 * 3. Negotiated: the host passes its major and maximum minor; the plugin
 *    answers min(host_max_minor, its minor) in abi_minor and behaves as
 *    that minor. A plugin that cannot serve host_major returns an error of
 *    code WM_ERR_INCOMPATIBLE naming both versions.
 * 4. Every table and growable struct starts with uint32_t struct_size;
 *    readers check WM_HAS(ptr, type, field) before touching a field.
 * 5. A NULL function pointer means "not implemented"; the host checks the
 *    required set at load time.
 * 6. Only fixed-width types cross the boundary; enums travel as uint32_t.
 *
 * Threading: query functions (get_info, enumerate, op_query,
 * format_support, coll_query) are pure and thread-safe. A stream is used
 * by one thread at a time; different streams may be driven concurrently.
 * Errors: every fallible call returns a plugin-owned wm_error (NULL = OK),
 * read with error_code/error_message and freed with error_destroy of the
 * same plugin. Plugins never abort, exit or print; they log through the
 * host's logger.
 */
#ifndef WMAP_BACKEND_H_
#define WMAP_BACKEND_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WM_ABI_MAJOR 0
#define WM_ABI_MINOR 6
#define WM_ABI_MAX_RANK 8

#define WM_EXPORT __attribute__((visibility("default")))

/* Size of |type| up to and including |last_field|. */
#define WM_STRUCT_SIZE(type, last_field) \
  (offsetof(type, last_field) + sizeof(((type *)0)->last_field))
/* True when the struct at |ptr| (of |type|) is large enough to hold
 * |field|. */
#define WM_HAS(ptr, type, field) \
  ((ptr)->struct_size >= WM_STRUCT_SIZE(type, field))

/* Error codes (same numbers as the host's status codes). */
enum {
  WM_ERR_OK = 0,
  WM_ERR_INVALID_ARGUMENT = 1,
  WM_ERR_NOT_FOUND = 2,
  WM_ERR_OUT_OF_RANGE = 3,
  WM_ERR_UNIMPLEMENTED = 4,
  WM_ERR_RESOURCE_EXHAUSTED = 5,
  WM_ERR_FAILED_PRECONDITION = 6,
  WM_ERR_INCOMPATIBLE = 7,
  WM_ERR_UNAVAILABLE = 8,
  WM_ERR_DATA_LOSS = 9,
  WM_ERR_INTERNAL = 10,
  WM_ERR_CANCELLED = 11,
  WM_ERR_DEADLINE_EXCEEDED = 12,
  WM_ERR_DEVICE_LOST = 13,
};

/* Opaque, plugin-owned objects. */
typedef struct wm_error wm_error;
typedef struct wm_device wm_device;
typedef struct wm_buffer wm_buffer;
typedef struct wm_stream wm_stream;
typedef struct wm_event wm_event;
typedef struct wm_executable wm_executable;
typedef struct wm_kernel wm_kernel;
typedef struct wm_op_plan wm_op_plan;
typedef struct wm_comm wm_comm;

/* ----------------------------------------------------------- host side */

enum {
  WM_LOG_LEVEL_ERROR = 0,
  WM_LOG_LEVEL_WARN = 1,
  WM_LOG_LEVEL_INFO = 2,
  WM_LOG_LEVEL_DEBUG = 3
};

/* What the host gives a plugin at query time; valid until unload. */
typedef struct wm_host_api {
  uint32_t struct_size;
  void *ctx; /* passed back to every callback */
  /* Logs one line (no newline needed). */
  void (*log)(void *ctx, uint32_t level, const char *file, int32_t line,
              const char *message);
  /* Key/value store for multi-process bootstrap; optional (NULL). */
  int32_t (*kv_put)(void *ctx, const char *key, const void *value,
                    uint64_t size);
  int32_t (*kv_get)(void *ctx, const char *key, void *value,
                    uint64_t *inout_size);
  /* Threads a CPU backend may use for its work (0 = all cores it may
   * run on); the host sets it from --threads / WMAP_NUM_THREADS. */
  uint32_t num_threads;
} wm_host_api;

/* ------------------------------------------------------ plugin metadata */

enum {
  WM_SANITIZER_NONE = 0,
  WM_SANITIZER_ADDRESS = 1,
  WM_SANITIZER_THREAD = 2
};

typedef struct wm_plugin_info {
  uint32_t struct_size;
  const char *name;    /* short name used on the command line */
  const char *vendor;  /* who made it */
  const char *version; /* the plugin's own version */
  uint32_t n_features; /* build features as "key=value" */
  const char *const *features;
  uint32_t sanitizer; /* WM_SANITIZER_*, for load checks */
} wm_plugin_info;

enum { WM_TARGET_CPU = 1, WM_TARGET_GPU = 2, WM_TARGET_ACCELERATOR = 3 };

/* A device as a description: enough to answer capability queries offline.
 * Peak numbers are 0 when unknown. */
typedef struct wm_target_desc {
  uint32_t struct_size;
  const char *name; /* e.g. "AMD EPYC 9B45 (host memory)" */
  const char *vendor;
  uint32_t kind;  /* WM_TARGET_* */
  uint32_t index; /* device index within the plugin */
  uint32_t vendor_id;
  uint32_t device_id;
  uint64_t memory_bytes;
  uint32_t compute_units;     /* cores, SMs, ... */
  uint32_t n_formats;         /* kernel source formats compile accepts */
  const char *const *formats; /* "c", "opencl-c", "cuda-c", "ptx", ... */
  uint64_t dtype_mask;        /* bit (1 << ONNX dtype) per supported dtype */
  double peak_gflops_fp32;
  double peak_gflops_fp16;
  double mem_bandwidth_gbs;
  /* Since minor 5, 0 when unknown or not applicable: a work group's (a
   * CUDA block's) local (shared) memory and most work items, the float
   * lanes the device prefers per work item (OpenCL's preferred vector
   * width), and the work items that run in lockstep (a subgroup, warp or
   * wavefront). fp16 and fp64 support are the FLOAT16 and DOUBLE bits of
   * dtype_mask. */
  uint64_t local_memory_bytes;
  uint32_t max_group_size;
  uint32_t vector_width;
  uint32_t subgroup_size;
} wm_target_desc;

/* ------------------------------------------------------------- tensors */

/* A tensor's layout; strides are in elements (row-major when 0s). */
typedef struct wm_tensor_desc {
  uint32_t struct_size;
  uint32_t dtype; /* ONNX TensorProto.DataType; 0 = absent */
  uint32_t rank;
  int64_t dims[WM_ABI_MAX_RANK];
  int64_t strides[WM_ABI_MAX_RANK];
} wm_tensor_desc;

/* A tensor in a buffer. STRING tensors hold `char *` elements that the
 * host owns; only backends with mem_map can take them. */
typedef struct wm_buffer_view {
  uint32_t struct_size;
  wm_buffer *buffer; /* NULL for an omitted optional tensor */
  uint64_t offset;   /* bytes */
  wm_tensor_desc desc;
} wm_buffer_view;

/* --------------------------------------------------------- device tier */

enum { WM_MEM_DEVICE_LOCAL = 0, WM_MEM_HOST_VISIBLE = 1 };
enum { WM_ARG_BUFFER = 1, WM_ARG_SCALAR = 2 };

typedef struct wm_kernel_arg {
  uint32_t struct_size;
  uint32_t kind;     /* WM_ARG_* */
  wm_buffer *buffer; /* WM_ARG_BUFFER */
  uint64_t offset;   /* bytes into buffer */
  const void *value; /* WM_ARG_SCALAR: bytes of the value */
  uint64_t size;     /* WM_ARG_SCALAR: size of the value */
} wm_kernel_arg;

/* Kernel formats and their calling conventions.
 *
 * A kernel of format "c": a function of the compiled shared object,
 * found by its name, called as fn(args, start, end) for disjoint ranges
 * [start, end) that cover [0, grid[0]) (grid[1] and grid[2] are 1); args[i]
 * is the address of argument i: a buffer's bytes from its offset, or a
 * scalar's value. A CPU backend runs the ranges on its threads, each at
 * least block[0] long but the last. */
typedef void (*wm_c_kernel_fn)(void *const *args, int64_t start, int64_t end);

/* A kernel of format "opencl-c" (OpenCL C 1.2): a __kernel function of the
 * program built from the source, found by its name. Its parameters follow
 * the launch's arguments in order: a buffer argument is two parameters, a
 * __global pointer to the buffer and a ulong byte offset into it (OpenCL
 * has no pointer arithmetic on the host side); a scalar argument is one
 * parameter of its size. It runs over grid[d] * block[d] work items in
 * work groups of block[d] (CUDA's grid of blocks); when shared_bytes is
 * not 0, a last parameter, a __local pointer to that much local memory,
 * follows the arguments'.
 *
 * A kernel of format "cuda-c" (CUDA C++ as NVRTC compiles it): an
 * extern "C" __global__ function of the module, found by its name. A
 * buffer argument is one pointer parameter (the buffer's device address
 * plus its offset), a scalar one parameter of its size; grid and block
 * are gridDim and blockDim, shared_bytes the dynamic shared memory.
 *
 * The host's generated kernels in both take the tensors (the output
 * first) and then two int64 scalars, start and end: work item g handles
 * index start + g of the parallel range when it is below end. */

typedef struct wm_launch_args {
  uint32_t struct_size;
  wm_kernel *kernel;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_bytes;
  uint32_t n_args;
  const wm_kernel_arg *args;
} wm_launch_args;

/* Support levels (op_query, format_support, coll_query). */
enum {
  WM_SUPPORT_NONE = 0,      /* cannot; the reason says why */
  WM_SUPPORT_EMULATED = 1,  /* correct but knowingly slow */
  WM_SUPPORT_SUPPORTED = 2, /* correct and competitive */
  WM_SUPPORT_PREFERRED = 3, /* wants this node even across a copy */
};

typedef struct wm_device_tier {
  uint32_t struct_size;
  /* Required. */
  wm_error *(*mem_alloc)(wm_device *dev, uint64_t bytes, uint64_t align,
                         uint32_t kind, wm_buffer **out_buffer);
  void (*mem_free)(wm_buffer *buffer);
  /* Copies are ordered after the stream's earlier work; copy_h2d has read
   * |src| and copy_d2h has written |dst| when they return (the host's
   * memory is its own again), while copy_d2d may still be queued. */
  wm_error *(*copy_h2d)(wm_stream *stream, const void *src, wm_buffer *dst,
                        uint64_t dst_offset, uint64_t bytes);
  wm_error *(*copy_d2h)(wm_stream *stream, wm_buffer *src, uint64_t src_offset,
                        void *dst, uint64_t bytes);
  wm_error *(*copy_d2d)(wm_stream *stream, wm_buffer *src, uint64_t src_offset,
                        wm_buffer *dst, uint64_t dst_offset, uint64_t bytes);
  wm_error *(*stream_create)(wm_device *dev, wm_stream **out_stream);
  void (*stream_destroy)(wm_stream *stream);
  wm_error *(*stream_sync)(wm_stream *stream);
  void (*device_close)(wm_device *dev);
  /* Optional: host mapping (NULL = buffers are not host-visible). */
  wm_error *(*mem_map)(wm_buffer *buffer, void **out_host_ptr);
  void (*mem_unmap)(wm_buffer *buffer);
  /* Optional: events. */
  wm_error *(*event_create)(wm_device *dev, wm_event **out_event);
  wm_error *(*event_record)(wm_event *event, wm_stream *stream);
  wm_error *(*event_wait)(wm_stream *stream, wm_event *event);
  wm_error *(*event_query)(wm_event *event, uint32_t *out_done);
  void (*event_destroy)(wm_event *event);
  /* Optional: compile from source and launch (generated kernels). */
  wm_error *(*format_support)(const wm_target_desc *target, const char *format,
                              uint32_t *out_level);
  wm_error *(*compile)(wm_device *dev, const char *format, const char *source,
                       uint64_t length, const char *options,
                       wm_executable **out_exe);
  wm_error *(*exe_get_kernel)(wm_executable *exe, const char *name,
                              wm_kernel **out_kernel);
  void (*exe_destroy)(wm_executable *exe);
  wm_error *(*launch)(wm_stream *stream, const wm_launch_args *args);
  /* Since minor 2, optional: a buffer over |bytes| of host memory at
   * |host_ptr| (16-byte aligned), which the host keeps valid and unchanged
   * until mem_free; mem_free then frees only the handle, and the backend
   * never writes to it. For backends whose device memory is host memory:
   * the host's constants (weights) are used in place instead of copied.
   * NULL = the host copies them into mem_alloc buffers. */
  wm_error *(*mem_wrap_host)(wm_device *dev, void *host_ptr, uint64_t bytes,
                             wm_buffer **out_buffer);
} wm_device_tier;

/* -------------------------------------------------------- library tier */

/* Attribute kinds: ONNX AttributeProto.AttributeType numbers. */
typedef struct wm_op_attr {
  uint32_t struct_size;
  const char *name;
  uint32_t type; /* 1 float, 2 int, 3 string, 4 tensor, ... */
  int64_t i;     /* INT */
  float f;       /* FLOAT */
  const char *s; /* STRING (also NUL-terminated) */
  uint64_t s_len;
  uint64_t count;             /* list kinds */
  const int64_t *ints;        /* INTS */
  const float *floats;        /* FLOATS */
  const char *const *strings; /* STRINGS */
  const uint64_t *string_lens;
  const wm_tensor_desc *tensor; /* TENSOR: layout */
  const void *tensor_data;      /* TENSOR: host data */
  const void *graph;            /* GRAPH(S): host handle; opaque in v0 */
} wm_op_attr;

/* One operator instance; host-owned, valid only during the call. */
typedef struct wm_op_desc {
  uint32_t struct_size;
  const char *domain;  /* "" = ai.onnx */
  const char *op_type; /* ONNX op_type */
  uint64_t opset;      /* imported opset of the domain */
  const char *name;    /* node name, for messages */
  uint32_t n_in;
  uint32_t n_out;
  const wm_tensor_desc *in;     /* dtype 0 = omitted optional input */
  const wm_tensor_desc *out;    /* dtype 0 = omitted optional output */
  const void *const *in_values; /* host data of constant inputs or NULL */
  uint32_t n_attr;
  const wm_op_attr *attrs;
  /* Since minor 2: host-owned and zeroed, or NULL (the host does not ask).
   * op_plan may set bit i (i < 64) when the plan keeps its own form of
   * constant input i (made from in_values[i], e.g. packed weights) and
   * op_run never reads that input: the host may then pass it with a NULL
   * buffer and free its data. */
  uint64_t *captured;
  /* Since minor 3: host-owned, n_out entries set to -1, or NULL (the host
   * does not ask). op_plan may set entry j to i when op_run computes output
   * j correctly with its buffer being input i's (same dtype and byte size,
   * the same bytes passed as both): each element of input i is read before
   * the element of output j at its place is written, and not after. The
   * host may then give output j input i's bytes where nothing reads input
   * i after this node, saving the memory and the traffic of one tensor. */
  int32_t *in_place;
  /* Since minor 4: the instance's resolved parameters (n_param 0 when the
   * operator has none, or when the host describes an instance whose shapes
   * are not all known). The host applies ONNX's rules once, for these
   * shapes and input values: defaults given explicitly, pads derived from
   * auto_pad or output_shape, Slice bounds clamped, axes listed on every
   * dim. Kinds as in attrs; the entries per operator are listed in
   * docs/backend-abi.md. A backend that reads them re-derives none of
   * those rules; where an entry and an attribute share a name, the entry
   * is the one that holds. */
  uint32_t n_param;
  const wm_op_attr *params;
} wm_op_desc;

enum {
  WM_IMPL_NONE = 0,
  WM_IMPL_NATIVE_KERNEL = 1,
  WM_IMPL_VENDOR_LIBRARY = 2,
  WM_IMPL_GENERATED = 3,
};

enum {
  WM_WHY_NONE = 0,
  WM_WHY_OP = 1,    /* operator not implemented */
  WM_WHY_OPSET = 2, /* this opset version not implemented */
  WM_WHY_DTYPE = 3,
  WM_WHY_RANK = 4,
  WM_WHY_SHAPE = 5,
  WM_WHY_ATTR = 6,
  WM_WHY_SIZE_LIMIT = 7,
  WM_WHY_LAYOUT = 8,
  WM_WHY_SUBGRAPH = 9, /* needs subgraph execution */
  WM_WHY_OTHER = 10,
};

/* The answer of op_query for one instance. */
typedef struct wm_op_support {
  uint32_t struct_size;
  uint32_t level;     /* WM_SUPPORT_* */
  uint32_t impl;      /* WM_IMPL_* */
  uint32_t reason;    /* WM_WHY_*; mandatory when level is NONE */
  float rel_cost;     /* hint; < 0 = unknown */
  const char *detail; /* static text for people, or NULL */
} wm_op_support;

typedef struct wm_library_tier {
  uint32_t struct_size;
  /* Pure: answers from the target description alone. A level above NONE
   * is binding: op_plan and op_run must then succeed for the instance. */
  wm_error *(*op_query)(const wm_target_desc *target, const wm_op_desc *op,
                        wm_op_support *out_support);
  wm_error *(*op_plan)(wm_device *dev, const wm_op_desc *op,
                       wm_op_plan **out_plan, uint64_t *out_workspace_bytes);
  wm_error *(*op_run)(wm_stream *stream, wm_op_plan *plan,
                      const wm_buffer_view *in, uint32_t n_in,
                      const wm_buffer_view *out, uint32_t n_out,
                      const wm_buffer_view *workspace);
  void (*op_plan_destroy)(wm_op_plan *plan);
} wm_library_tier;

/* ----------------------------------------------------- collective tier */

enum {
  WM_COLL_ALL_REDUCE = 1,
  WM_COLL_ALL_GATHER = 2,
  WM_COLL_REDUCE_SCATTER = 3,
  WM_COLL_BROADCAST = 4
};
enum {
  WM_REDOP_SUM = 0,
  WM_REDOP_PROD = 1,
  WM_REDOP_MIN = 2,
  WM_REDOP_MAX = 3,
  WM_REDOP_AVG = 4
};

/* Communicators and collectives. comm_create is called by every rank with
 * the same unique_id (bytes, id_len of them) and world_size; ids the host
 * makes for host-memory backends are the strings "threads:KEY" (ranks are
 * threads of this process, each with its own comm) and "mpi:world" (ranks
 * are the processes of the MPI job; rank and size are the world's). A
 * backend refuses an id it cannot serve with INVALID_ARGUMENT.
 * |count| is elements per rank: AllReduce's and Broadcast's buffer,
 * AllGather's send (recv holds world_size * count), ReduceScatter's recv
 * (send holds world_size * count). send == recv (same buffer and offset)
 * is in place. Calls are stream-ordered; on a synchronous stream (the host
 * tier's) they have completed when they return. A peer that never takes
 * part ends the call with DEADLINE_EXCEEDED or UNAVAILABLE naming it (the
 * host's WMAP_COMM_TIMEOUT), never a hang; ranks calling different
 * collectives get INVALID_ARGUMENT or UNAVAILABLE naming the peer. */
typedef struct wm_collective_tier {
  uint32_t struct_size;
  /* The level (WM_SUPPORT_*) of |kind| over |dtype| with |redop|. */
  wm_error *(*coll_query)(const wm_target_desc *target, uint32_t kind,
                          uint32_t dtype, uint32_t redop, uint32_t *out_level);
  wm_error *(*comm_create)(wm_device *const *devs, uint32_t n_devs,
                           uint32_t rank, uint32_t world_size,
                           const void *unique_id, uint64_t id_len,
                           wm_comm **out_comm);
  /* Leaves the communicator: the other ranks' waits for this one fail. */
  void (*comm_destroy)(wm_comm *comm);
  /* Ends every pending and later call with an error (any thread). */
  wm_error *(*comm_abort)(wm_comm *comm);
  wm_error *(*all_reduce)(wm_comm *comm, wm_stream *stream,
                          const wm_buffer_view *send,
                          const wm_buffer_view *recv, uint64_t count,
                          uint32_t dtype, uint32_t redop);
  wm_error *(*all_gather)(wm_comm *comm, wm_stream *stream,
                          const wm_buffer_view *send,
                          const wm_buffer_view *recv, uint64_t count,
                          uint32_t dtype);
  wm_error *(*reduce_scatter)(wm_comm *comm, wm_stream *stream,
                              const wm_buffer_view *send,
                              const wm_buffer_view *recv, uint64_t count,
                              uint32_t dtype, uint32_t redop);
  wm_error *(*broadcast)(wm_comm *comm, wm_stream *stream,
                         const wm_buffer_view *send, const wm_buffer_view *recv,
                         uint64_t count, uint32_t dtype, uint32_t root);
  /* Since minor 6, optional together: point to point (a send matches the
   * peer's recv of the same count and dtype, in order per direction) and a
   * barrier. */
  wm_error *(*send)(wm_comm *comm, wm_stream *stream, const wm_buffer_view *buf,
                    uint64_t count, uint32_t dtype, uint32_t peer);
  wm_error *(*recv)(wm_comm *comm, wm_stream *stream, const wm_buffer_view *buf,
                    uint64_t count, uint32_t dtype, uint32_t peer);
  wm_error *(*barrier)(wm_comm *comm, wm_stream *stream);
} wm_collective_tier;

/* ------------------------------------------------------ the top table */

/* Vendor extensions: a chain of typed structs. */
typedef struct wm_ext {
  uint32_t struct_size;
  uint32_t type; /* vendor-chosen, >= 0x10000 */
  const struct wm_ext *next;
} wm_ext;

typedef struct wm_plugin_api {
  uint32_t struct_size;
  uint32_t abi_major; /* negotiated */
  uint32_t abi_minor; /* negotiated */
  wm_error *(*get_info)(wm_plugin_info *out_info);
  /* 0 = cannot run on this system; higher wins among variants. */
  uint32_t (*probe_score)(void);
  /* Cheap and side-effect free; the descriptions live until unload. */
  wm_error *(*enumerate)(const wm_target_desc *const **out_targets,
                         uint32_t *out_count);
  /* Slow work happens here. */
  wm_error *(*device_open)(const wm_target_desc *target,
                           wm_device **out_device);
  int32_t (*error_code)(const wm_error *error);
  const char *(*error_message)(const wm_error *error);
  void (*error_destroy)(wm_error *error);
  const wm_device_tier *device;         /* required */
  const wm_library_tier *library;       /* NULL when absent */
  const wm_collective_tier *collective; /* NULL when absent */
  const wm_ext *extensions;             /* NULL when none */
} wm_plugin_api;

/* The one exported symbol. */
typedef wm_error *(*wm_plugin_query_fn)(uint32_t host_major,
                                        uint32_t host_max_minor,
                                        const wm_host_api *host,
                                        const wm_plugin_api **out_api);
#define WM_PLUGIN_QUERY_SYMBOL "wm_plugin_query"

#ifdef __cplusplus
}
#endif

#endif /* WMAP_BACKEND_H_ */
