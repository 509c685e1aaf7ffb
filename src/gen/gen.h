// wmap kernel generator: compute definitions in index notation, their
// lowering to a loop nest under a schedule, and the printing of that nest
// as C (GCC/Clang vector extensions), OpenCL C or CUDA C through one
// printer and a dialect table (../shared/reference/kernel-gen.md §3).
//
// A compute is one statement over named axes,
//   Y[out(axes)] = body(T0[acc0(axes)], T1[acc1(axes)], ...)
// where every access is affine: index d of a tensor is the sum over the
// axes of coef[d][axis] * axis plus off[d], so broadcasting (a zero
// coefficient), transposes and strided views need no copies; the body is
// an expression tree of float operations. The output's dims are the
// spatial axes. A reduction adds reduce axes after them and folds the
// body over them with a combiner from an initial value, then applies an
// epilogue to the result (ACC):
//   Y[out] = epilogue(fold(combine, init, body over the reduce axes))
// which covers contractions (sum of products: MatMul, Gemm with its bias
// and activation in the epilogue) and reductions (ReduceSum, ReduceMax,
// the mean's scale in the epilogue).
// Thread-safety: a compute is built and read by one thread; printing is
// pure.
#ifndef WMAP_SRC_GEN_GEN_H_
#define WMAP_SRC_GEN_GEN_H_

#include <stdbool.h>
#include <stdint.h>

#include "wmap/base.h"
#include "wmap/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WM_GEN_MAX_AXES 12
#define WM_GEN_MAX_TENSORS 8
#define WM_GEN_MAX_EXPRS 128
#define WM_GEN_NAME 16  // bytes of a name, NUL included

// Operations of a body. Leaves are LOAD (an access), CONST and ACC; then the
// binary ones (LT and GT give 1 or 0), the unary ones and SELECT
// (arg 0 nonzero ? arg 1 : arg 2).
typedef enum wm_gen_op {
  WM_GEN_LOAD,
  WM_GEN_CONST,
  WM_GEN_ACC,  // the reduction's result, in the epilogue
  WM_GEN_ADD,
  WM_GEN_SUB,
  WM_GEN_MUL,
  WM_GEN_DIV,
  WM_GEN_MAX,
  WM_GEN_MIN,
  WM_GEN_POW,
  WM_GEN_LT,
  WM_GEN_GT,
  WM_GEN_FMOD,  // C's fmod: the remainder with the dividend's sign
  WM_GEN_NEG,
  WM_GEN_ABS,
  WM_GEN_SQRT,
  WM_GEN_EXP,
  WM_GEN_LOG,
  WM_GEN_TANH,
  WM_GEN_RELU,
  WM_GEN_SIGMOID,
  WM_GEN_FLOOR,
  WM_GEN_CEIL,
  WM_GEN_SIN,
  WM_GEN_COS,
  WM_GEN_ERF,
  WM_GEN_SIGN,
  WM_GEN_ROUND,  // to nearest, ties to even
  WM_GEN_TAN,
  WM_GEN_ASIN,
  WM_GEN_ACOS,
  WM_GEN_ATAN,
  WM_GEN_SINH,
  WM_GEN_COSH,
  WM_GEN_ASINH,
  WM_GEN_ACOSH,
  WM_GEN_ATANH,
  WM_GEN_SELECT,
  WM_GEN_OP_COUNT,
} wm_gen_op_t;

// One tensor of a compute: float32 unless an input says else (its loads
// then convert to float), row-major unless strides say else (in
// elements).
typedef struct wm_gen_tensor {
  char name[WM_GEN_NAME];
  wm_dtype_t dtype;
  int32_t rank;
  int64_t dims[WM_MAX_RANK];
  int64_t strides[WM_MAX_RANK];
  // Which operand of the operator it is, for whoever binds the kernel's
  // arguments: an input's index, or -1 - k for output k. The builder
  // numbers inputs in the order they are added; a definition whose
  // operands are not all read sets it.
  int32_t operand;
  // 1 + the temporary of the compute's program it is (wm_gen_program_t),
  // 0 for an operand.
  int32_t temp;
} wm_gen_tensor_t;

// An affine access: index d = sum_a coef[d][a] * axis_a + off[d], plus,
// where gather[d] > 0, the integer at access gather[d] - 1 (an index
// tensor's, read affinely; a negative one counts from the end of dim d):
// Gather's and the embeddings' data-dependent rows.
typedef struct wm_gen_access {
  int32_t tensor;
  int64_t coef[WM_MAX_RANK][WM_GEN_MAX_AXES];
  int64_t off[WM_MAX_RANK];
  // Reads outside the tensor's dims give |fill| instead (a convolution's
  // zero padding, a max pool's -inf); an input's only, and every gathered
  // access's.
  bool guard;
  float fill;
  int32_t gather[WM_MAX_RANK];
} wm_gen_access_t;

// A node of the body.
typedef struct wm_gen_expr {
  wm_gen_op_t op;
  int32_t arg[3];  // operand expressions, wm_gen_op_arity of them
  int32_t access;  // LOAD: index into accesses
  float value;     // CONST
} wm_gen_expr_t;

typedef struct wm_gen_compute {
  char name[WM_GEN_NAME];
  int32_t n_axes;  // spatial ones first, then the n_reduce reduce ones
  int32_t n_reduce;
  char axes[WM_GEN_MAX_AXES][WM_GEN_NAME];
  int64_t extents[WM_GEN_MAX_AXES];
  int32_t n_tensors;  // tensor 0 is the output
  wm_gen_tensor_t tensors[WM_GEN_MAX_TENSORS];
  int32_t n_accesses;  // access 0 is the output's
  wm_gen_access_t accesses[WM_GEN_MAX_TENSORS * 2];
  int32_t n_exprs;
  wm_gen_expr_t exprs[WM_GEN_MAX_EXPRS];
  int32_t body;  // the root expression
  // A reduction (n_reduce > 0): ADD, MUL, MAX or MIN, its initial value,
  // and the epilogue's root (-1: the result itself).
  wm_gen_op_t combine;
  float init;
  int32_t epilogue;
} wm_gen_compute_t;

// ----------------------------------------------------------- building

// Starts the compute |name| (cut to WM_GEN_NAME - 1 characters) writing
// tensor |out| (rank, dims; row-major)
// over one spatial axis per output dim, named after |axis_names| (NULL:
// i0, i1, ...), the output read through the identity access.
wm_status_t wm_gen_begin(wm_gen_compute_t *c, const char *name, int32_t rank,
                         const int64_t *dims,
                         const char *const *axis_names) WM_MUST_USE_RESULT;
// Adds input tensor |name| of |rank| and |dims| (row-major) read with
// numpy broadcasting against the output: its dim d lines up with output
// dim d + (out rank - rank); a dim of 1 is read at 0. *out_expr is the
// LOAD of it.
wm_status_t wm_gen_input(wm_gen_compute_t *c, const char *name, int32_t rank,
                         const int64_t *dims,
                         int32_t *out_expr) WM_MUST_USE_RESULT;
// Adds input |name| with explicit strides (elements) and access |acc|
// (its tensor field is set here).
wm_status_t wm_gen_input_access(wm_gen_compute_t *c, const char *name,
                                int32_t rank, const int64_t *dims,
                                const int64_t *strides,
                                const wm_gen_access_t *acc,
                                int32_t *out_expr) WM_MUST_USE_RESULT;
// Makes the tensor that LOAD expression |load| reads of |dtype| (an
// integer, bool or double input read as float; float32 by default).
wm_status_t wm_gen_input_dtype(wm_gen_compute_t *c, int32_t load,
                               wm_dtype_t dtype) WM_MUST_USE_RESULT;
// Adds integer tensor |name| of |dtype| (INT64 or INT32), |rank| and
// |dims| (row-major) read through |acc| as an index only: *out_gather is
// the value for another access's gather[d].
wm_status_t wm_gen_index(wm_gen_compute_t *c, const char *name,
                         wm_dtype_t dtype, int32_t rank, const int64_t *dims,
                         const wm_gen_access_t *acc,
                         int32_t *out_gather) WM_MUST_USE_RESULT;
// Adds a constant, a unary or a binary node; *out_expr is its index.
wm_status_t wm_gen_const(wm_gen_compute_t *c, float v,
                         int32_t *out_expr) WM_MUST_USE_RESULT;
wm_status_t wm_gen_unary(wm_gen_compute_t *c, wm_gen_op_t op, int32_t a,
                         int32_t *out_expr) WM_MUST_USE_RESULT;
wm_status_t wm_gen_binary(wm_gen_compute_t *c, wm_gen_op_t op, int32_t a,
                          int32_t b, int32_t *out_expr) WM_MUST_USE_RESULT;
// cond != 0 ? a : b.
wm_status_t wm_gen_select(wm_gen_compute_t *c, int32_t cond, int32_t a,
                          int32_t b, int32_t *out_expr) WM_MUST_USE_RESULT;
// A body written as nested calls: each returns the new expression, or -1
// once a call has failed, whose status |st| keeps (the caller owns it).
typedef struct wm_gen_builder {
  wm_gen_compute_t *c;
  wm_status_t st;
} wm_gen_builder_t;
int32_t wm_gen_k(wm_gen_builder_t *b, float v);
int32_t wm_gen_f1(wm_gen_builder_t *b, wm_gen_op_t op, int32_t a);
int32_t wm_gen_f2(wm_gen_builder_t *b, wm_gen_op_t op, int32_t a, int32_t c);
int32_t wm_gen_sel(wm_gen_builder_t *b, int32_t cond, int32_t a, int32_t c);

// Sets the body's root and checks the whole compute: names, extents,
// every access inside its tensor for every point of the axes, operands
// defined before their users. A compute with reduce axes is finished
// with wm_gen_finish_reduce.
wm_status_t wm_gen_finish(wm_gen_compute_t *c, int32_t body) WM_MUST_USE_RESULT;

// Appends reduce axis |name| of |extent| (*out_axis: its index); inputs
// read along it through wm_gen_input_access.
wm_status_t wm_gen_reduce_axis(wm_gen_compute_t *c, const char *name,
                               int64_t extent,
                               int32_t *out_axis) WM_MUST_USE_RESULT;
// The reduction's result, a leaf of the epilogue.
wm_status_t wm_gen_acc(wm_gen_compute_t *c,
                       int32_t *out_expr) WM_MUST_USE_RESULT;
// Finishes a reduction: |body| folded with |combine| (ADD, MUL, MAX, MIN)
// from |init| over the reduce axes, then |epilogue| (-1: none) applied;
// checks as wm_gen_finish does, and that the body reads no ACC and the
// epilogue reads nothing along a reduce axis.
wm_status_t wm_gen_finish_reduce(wm_gen_compute_t *c, wm_gen_op_t combine,
                                 float init, int32_t body,
                                 int32_t epilogue) WM_MUST_USE_RESULT;
// The spatial axes of |c| (its output's rank).
int32_t wm_gen_spatial(const wm_gen_compute_t *c);

// Elements access |acc| moves in its tensor per step of axis |axis|, and
// its element at the origin of the axes.
int64_t wm_gen_access_step(const wm_gen_compute_t *c,
                           const wm_gen_access_t *acc, int32_t axis);
int64_t wm_gen_access_base(const wm_gen_compute_t *c,
                           const wm_gen_access_t *acc);

// Appends the canonical text of |c| (axes renamed a0.., tensors t0..):
// equal texts mean equal kernels, so it keys caches.
void wm_gen_canonical(const wm_gen_compute_t *c, wm_strbuf_t *out);

// ------------------------------------------------------------ programs

#define WM_GEN_MAX_STAGES 8
#define WM_GEN_MAX_TEMPS 4

// A definition in stages, for the operators one statement does not
// express (Softmax: a row's max, then its sum of exponentials, then the
// quotients): computes run in order, each reading the operator's inputs
// and the temporaries of the stages before it (float tensors the program
// owns, bound to a stage's tensor with wm_gen_bind_temp) and writing a
// temporary or an output of the operator.
typedef struct wm_gen_program {
  int32_t n_stages;
  wm_gen_compute_t *stages[WM_GEN_MAX_STAGES];  // owned
  int32_t n_temps;
  int64_t temp_elems[WM_GEN_MAX_TEMPS];  // float elements of each
} wm_gen_program_t;

// Appends a stage (zeroed, built with wm_gen_begin ...) to |p|.
wm_status_t wm_gen_program_stage(wm_gen_program_t *p,
                                 wm_gen_compute_t **out) WM_MUST_USE_RESULT;
// Adds a temporary of |elements| floats to |p|.
wm_status_t wm_gen_program_temp(wm_gen_program_t *p, int64_t elements,
                                int32_t *out_temp) WM_MUST_USE_RESULT;
// Makes tensor |tensor| of |c| (0: its output) temporary |temp| of |p|;
// its elements must fit the temporary.
wm_status_t wm_gen_bind_temp(const wm_gen_program_t *p, wm_gen_compute_t *c,
                             int32_t tensor, int32_t temp) WM_MUST_USE_RESULT;
// Frees the stages of |p| and zeroes it.
void wm_gen_program_free(wm_gen_program_t *p);

// ----------------------------------------------------------- schedule

// How a compute runs: the vector width of the innermost axis (1 = none;
// a power of two up to 16) and the axis whose range [start, end) the
// caller splits over threads (the outermost).
typedef struct wm_gen_schedule {
  int32_t vector_width;
  int32_t unroll;  // vector iterations per unrolled step, 1 to 8; a
                   // reduction's are jammed: one pass over the reduce
                   // loops, an accumulator each
  // A reduction: vectorize the innermost reduce axis (a vector of
  // partial results per unrolled step, combined at its end) instead of
  // the innermost spatial axis.
  bool vector_reduce;
  // A contraction (wm_gen_gemm_shape): the packed template's register
  // tile of mr x nr outputs (nr a multiple of the vector width) and its
  // blocks of kc along the reduce axis, mc rows and nc columns; mr 0:
  // the loop nest.
  int32_t mr, nr, kc, mc, nc;
  // Every spatial axis in the parallel range: one index per output point
  // (a GPU's or an OpenCL device's work item), no vectors.
  bool points;
  // A reduction vectorized along the innermost spatial axis: this many
  // rows of the axis before it (a serial one) jammed into one pass over
  // the reduce loops (0 or 1: none; up to 8); that axis then stays out
  // of the parallel range. Lowering keeps it where it applies (an axis
  // before the rows' one to run in parallel) and sets 1 elsewhere.
  int32_t rows;
} wm_gen_schedule_t;

// The analytical default for |c| on a target with |vector_bytes|-wide
// registers: the widest vector the innermost axis can use (its output
// stride is 1 and its extent at least one vector), unrolled by 2. A
// |vector_bytes| of 0 is a device of work items: one per output point.
wm_gen_schedule_t wm_gen_default_schedule(const wm_gen_compute_t *c,
                                          int32_t vector_bytes);
// The same without the packed template (a dialect that does not print it):
// the loop nest's vectors only.
wm_gen_schedule_t wm_gen_nest_schedule(const wm_gen_compute_t *c,
                                       int32_t vector_bytes);

// ------------------------------------------------------------- tuning

// Up to |cap| schedules worth measuring for |c| on a target with
// |vector_bytes|-wide registers, every one lowerable, the default first:
// the template's register tiles and blocks around it, or the nest's
// vector widths, unrolls and vectorized axis. Returns how many.
int32_t wm_gen_candidates(const wm_gen_compute_t *c, int32_t vector_bytes,
                          wm_gen_schedule_t *out, int32_t cap);

// Tuning records: the schedule measured best per kernel instance and
// target, in a versioned text file (WM_GEN_RECORDS_FORMAT on its first
// line; a file of another version holds no record that applies).
#define WM_GEN_RECORDS_FORMAT "wmap.tune/1"
typedef struct wm_gen_record {
  char key[65];         // wm_gen_record_key
  wm_gen_schedule_t s;  // the best schedule measured
  double default_ns;    // the default schedule's median time
  double best_ns;       // the best one's
} wm_gen_record_t;
typedef struct wm_gen_records {
  wm_gen_record_t *r;
  size_t n, cap;
} wm_gen_records_t;

// The key of |c| (its canonical text) on |target| (what the kernels are
// built for, e.g. the CPU's model and vector width): 64 hex digits.
void wm_gen_record_key(const wm_gen_compute_t *c, const char *target,
                       char key[65]);
// Reads the records of |path| into |out| (a missing file: none).
wm_status_t wm_gen_records_load(const char *path,
                                wm_gen_records_t *out) WM_MUST_USE_RESULT;
// The record of |key|, or NULL.
const wm_gen_record_t *wm_gen_records_find(const wm_gen_records_t *r,
                                           const char *key);
// Adds |rec|, replacing the record of the same key.
wm_status_t wm_gen_records_put(wm_gen_records_t *r,
                               const wm_gen_record_t *rec) WM_MUST_USE_RESULT;
// Writes every record to |path| (under a temporary name, then renamed).
wm_status_t wm_gen_records_save(const wm_gen_records_t *r,
                                const char *path) WM_MUST_USE_RESULT;
void wm_gen_records_free(wm_gen_records_t *r);

// Whether two schedules are the same.
bool wm_gen_schedule_equal(const wm_gen_schedule_t *a,
                           const wm_gen_schedule_t *b);
// The schedule in words ("vector 16 x 2", "packed 12x32, kc 256, mc 144,
// nc 1024") into |out|.
void wm_gen_schedule_text(const wm_gen_schedule_t *s, char *out, size_t cap);

// ----------------------------------------------------------- loop IR

typedef enum wm_gen_loop_kind {
  WM_GEN_LOOP_PARALLEL = 0,  // the range [start, end) the caller gives
  WM_GEN_LOOP_SERIAL = 1,
  WM_GEN_LOOP_VECTOR = 2,  // |width| lanes, |unroll| vectors a step, then
                           // a scalar tail
  WM_GEN_LOOP_REDUCE = 3,  // a reduce axis
  WM_GEN_LOOP_VECTOR_REDUCE = 4,  // the innermost reduce axis in |width|
                                  // lanes, |unroll| partial vectors
  WM_GEN_LOOP_FUSED = 5,          // an axis of the parallel range (nest.n_par)
} wm_gen_loop_kind_t;

typedef struct wm_gen_loop {
  int32_t axis;
  wm_gen_loop_kind_t kind;
  int32_t width;   // VECTOR: lanes
  int32_t unroll;  // VECTOR: vectors per step
} wm_gen_loop_t;

// A perfect loop nest, outermost first, around the compute's statement
// (a reduction's: its initial value, the reduce loops, the epilogue's
// store), or the packed contraction template.
typedef struct wm_gen_nest {
  const wm_gen_compute_t *c;  // borrowed
  int32_t n;
  wm_gen_loop_t loops[WM_GEN_MAX_AXES];
  wm_gen_schedule_t s;  // the schedule it was lowered under
  // The range the parallel loop runs over ([0, grid) split by the
  // caller), and the fewest indices worth a thread of their own. The
  // range is the leading n_par axes flattened (row-major): enough indices
  // to share among threads when the outermost is a batch of one.
  int64_t grid, grain;
  int32_t n_par;
  // The kernel shares work across the indices of one call (the packed
  // template packs each operand once per call): a caller should give each
  // thread one range, as long as it can.
  bool whole_ranges;
} wm_gen_nest_t;

// Lowers |c| under |s|: the axes in order, the outermost PARALLEL, the
// reduce ones REDUCE, and with s->vector_width > 1 the innermost spatial
// axis VECTOR (or with s->vector_reduce the innermost reduce axis
// VECTOR_REDUCE); an error unless every input moves by 0 or 1 elements
// along it. A schedule with s->mr > 0 lowers a contraction to the packed
// template (wm_gen_lower_gemm).
wm_status_t wm_gen_lower(const wm_gen_compute_t *c, const wm_gen_schedule_t *s,
                         wm_gen_nest_t *out) WM_MUST_USE_RESULT;

// ---------------------------------------------------------- contraction

// A contraction the packed template runs: a sum (init 0) of a product
// of two loads. Its columns are the trailing spatial axes along which A
// does not move and the output (and every load of the epilogue) is
// contiguous, flattened (j: a matrix's columns, a convolution's output
// pixels); its row axis i the spatial axis before them, along which B does
// not move (absent: one row); its depth the reduce axes, flattened (a
// convolution's input channels and taps); the spatial axes before the row
// axis are batch axes. The epilogue is any function of the sum and of
// loads at the output's point (bias, residual, activation). Guarded loads
// (padding) pack as zeros.
typedef struct wm_gen_gemm {
  int32_t a, b;         // the two loads (expressions)
  int32_t i;            // the row axis, -1 for a single row
  int32_t j0;           // the columns are axes j0 .. spatial - 1
  int64_t m, n, depth;  // rows, columns and depth (flattened)
  int64_t batch;        // product of the batch axes' extents
} wm_gen_gemm_t;

// Whether |c| is a contraction the template runs; fills |out|.
bool wm_gen_gemm_shape(const wm_gen_compute_t *c, wm_gen_gemm_t *out);
// Lowers contraction |c| under template schedule |s| (mr, nr, kc, mc,
// nc): the parallel range is its tiles of mc x nc outputs per batch.
wm_status_t wm_gen_lower_gemm(const wm_gen_compute_t *c,
                              const wm_gen_schedule_t *s,
                              wm_gen_nest_t *out) WM_MUST_USE_RESULT;

// ----------------------------------------------------------- printing

typedef enum wm_gen_dialect {
  WM_GEN_C = 0,
  WM_GEN_OPENCL = 1,
  WM_GEN_CUDA = 2,
} wm_gen_dialect_t;

// Prints |nest| as a kernel in |d|, through one printer and a table of
// what differs per dialect. C: `void NAME(void *const *args, int64_t
// start, int64_t end)`, format "c"'s convention (wm_c_kernel_fn in
// wmap/backend.h): args[t] is tensor t's first element (the output first),
// the parallel axis runs over [start, end) (the caller's threads split
// it). OpenCL C and CUDA C: the conventions of formats opencl-c (a
// buffer and a byte offset per tensor) and cuda-c (a pointer per tensor)
// in wmap/backend.h, then int64 start and end; one work item per index of
// the parallel range (start + global id 0, guarded by end), the inner
// loops within it. Its helpers are guarded by macros, so
// kernels printed one after another make one source.
wm_status_t wm_gen_print(const wm_gen_nest_t *nest, wm_gen_dialect_t d,
                         wm_strbuf_t *out) WM_MUST_USE_RESULT;
// Whether dialect |d| prints a schedule's vectors (C and OpenCL C; CUDA C
// runs scalar work items); only C prints the packed template.
bool wm_gen_dialect_vectors(wm_gen_dialect_t d);

// Calls the C kernel at |symbol| (wm_cc_symbol's address of a printed C
// kernel) over [start, end) of its parallel axis; args[t] is tensor t's
// first element, the output first.
void wm_gen_call(void *symbol, void *const *args, int64_t start, int64_t end);

// The name of an operation as the canonical text spells it.
const char *wm_gen_op_name(wm_gen_op_t op);
// The operands |op| takes: 0 for the leaves, 1, 2 or 3.
int32_t wm_gen_op_arity(wm_gen_op_t op);

#ifdef __cplusplus
}
#endif

#endif  // WMAP_SRC_GEN_GEN_H_
