// What the printer's files share: the dialect table and the printing of
// offsets, expressions and helpers (print.c), used by the loop nest's
// printer (print.c) and the packed contraction's (gemm.c).
#ifndef WMAP_SRC_GEN_INTERNAL_H_
#define WMAP_SRC_GEN_INTERNAL_H_

#include "gen/gen.h"

// What differs between the dialects.
typedef struct gen_dialect {
  const char *name;
  const char *prelude;    // before the helpers
  const char *helper;     // qualifiers of a helper function
  const char *kernel;     // before the kernel's return type
  const char *space;      // the tensors' address space ("" or "__global ")
  const char *restrict_;  // the pointers' no-alias qualifier
  const char *index;      // the 64-bit index type
  const char *global_id;  // the work item's index; NULL: a loop
  bool vectors;           // prints VECTOR loops in vectors
  bool builtin_vectors;   // floatN with vloadN and vstoreN (OpenCL C), else
                          // GCC vector extensions
  bool args_array;        // the tensors come as an array of addresses
  // Each tensor comes as a buffer and a byte offset into it (OpenCL C:
  // the buffer's address is not the host's to offset); |buffer| is the
  // address space the offset's arithmetic runs in.
  const char *buffer;
  const char *fsuffix;  // of the float forms of the math functions
} gen_dialect_t;

const gen_dialect_t *gen_dialect(wm_gen_dialect_t d);

// The element type of |dtype| in dialect |d| ("float", "int64_t", ...).
const char *gen_elem_type(const gen_dialect_t *d, wm_dtype_t dtype);
// A float constant in every dialect's syntax (infinities and NaN as
// divisions).
void gen_print_float(wm_strbuf_t *o, float v);
// Declares the variables i<from> .. i<to - 1> at |depth| from the flat
// index |flat| (row-major over those axes' extents).
void gen_print_unflatten(const gen_dialect_t *d, const wm_gen_compute_t *c,
                         int32_t from, int32_t to, const char *flat,
                         int32_t depth, wm_strbuf_t *o);
// Indentation of |depth| levels.
void gen_indent(wm_strbuf_t *o, int32_t depth);
// The offset of access |acc| in its tensor over the loop variables i<a>.
void gen_print_offset(const wm_gen_compute_t *c, const wm_gen_access_t *acc,
                      wm_strbuf_t *o);
// A scalar load through |acc|: T<t>[offset], or for a guarded access
// (in bounds ? T<t>[offset] : 0.0f) checking the dims it may leave.
void gen_print_load(const gen_dialect_t *d, const wm_gen_compute_t *c,
                    const wm_gen_access_t *acc, wm_strbuf_t *o);
// Expression |i|: scalar (|w| 1) or |w| lanes along axis |va|; ACC is the
// variable wg_acc.
void gen_print_expr(const gen_dialect_t *d, const wm_gen_compute_t *c,
                    int32_t i, int32_t w, int32_t va, wm_strbuf_t *o);
// The kernel's first lines: its comment, the prelude, the scalar helpers
// and, for |w| > 1 lanes, the vector type and the lane-wise helpers of the
// operations |c| uses (its combiner included).
void gen_print_prologue(const gen_dialect_t *d, const wm_gen_compute_t *c,
                        int32_t w, wm_strbuf_t *o);
// The kernel's signature and the tensors' names T0.. (C: from the
// argument array), up to its opening brace.
void gen_print_signature(const gen_dialect_t *d, const wm_gen_compute_t *c,
                         wm_strbuf_t *o);

// The packed contraction template's kernel (gemm.c; C only).
wm_status_t gen_print_gemm(const gen_dialect_t *d, const wm_gen_nest_t *n,
                           wm_strbuf_t *o) WM_MUST_USE_RESULT;

#endif  // WMAP_SRC_GEN_INTERNAL_H_
