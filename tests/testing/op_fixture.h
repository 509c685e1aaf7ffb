// A one-node graph for operator unit tests: build it with the builder API
// (constants, typed inputs, the node and its attributes), run the node on
// the host or infer its types statically, and compare the results.
// Thread-safety: a fixture is used by one thread.
#ifndef WM_OP_FIXTURE_H_
#define WM_OP_FIXTURE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"
#include "wm_test.h"
#include "wmap/base.h"
#include "wmap/graph.h"

// Outputs the node may have; they are named "y0", "y1", "y2".
#define WM_OP_FIXTURE_MAX_OUT 3
// Tolerance of the value checks most tests use.
#define WM_OP_FIXTURE_TOL 1e-5

typedef struct wm_op_fixture {
  wm_graph_t *graph;                        // the graph
  int32_t node;                             // the node, once added
  wm_tensor_t *out[WM_OP_FIXTURE_MAX_OUT];  // outputs of the last run
} wm_op_fixture_t;

// Creates an empty graph importing the default domain at |opset|.
wm_status_t wm_op_fixture_init(wm_op_fixture_t *f,
                               int64_t opset) WM_MUST_USE_RESULT;
// Frees the graph and the outputs; safe to call twice.
void wm_op_fixture_deinit(wm_op_fixture_t *f);

// Adds an initializer of |dtype| and shape |dims| holding |vals| (or
// 0..n-1 when |vals| is NULL).
wm_status_t wm_op_fixture_add_const(wm_op_fixture_t *f, const char *name,
                                    wm_dtype_t dtype, int32_t rank,
                                    const int64_t *dims,
                                    const double *vals) WM_MUST_USE_RESULT;
// Adds an integer initializer of |dtype| holding the exact |vals|.
wm_status_t wm_op_fixture_add_const_i64(wm_op_fixture_t *f, const char *name,
                                        wm_dtype_t dtype, int32_t rank,
                                        const int64_t *dims,
                                        const int64_t *vals) WM_MUST_USE_RESULT;
// Adds a 1-D int64 initializer of |n| values.
wm_status_t wm_op_fixture_add_ints(wm_op_fixture_t *f, const char *name,
                                   size_t n,
                                   const int64_t *vals) WM_MUST_USE_RESULT;
// Adds a 1-D float initializer of |n| values.
wm_status_t wm_op_fixture_add_floats(wm_op_fixture_t *f, const char *name,
                                     size_t n,
                                     const double *vals) WM_MUST_USE_RESULT;
// Adds a string initializer of shape |dims| holding |vals|.
wm_status_t wm_op_fixture_add_strings(
    wm_op_fixture_t *f, const char *name, int32_t rank, const int64_t *dims,
    const char *const *vals) WM_MUST_USE_RESULT;
// Adds a graph input of |dtype| and shape |dims| (dims < 0 unknown).
wm_status_t wm_op_fixture_add_input(wm_op_fixture_t *f, const char *name,
                                    wm_dtype_t dtype, int32_t rank,
                                    const int64_t *dims) WM_MUST_USE_RESULT;
// Adds the node |op| reading |inputs| ("" omits one) with |n_out| outputs.
wm_status_t wm_op_fixture_add_node(wm_op_fixture_t *f, const char *op,
                                   const char *const *inputs, int32_t n_in,
                                   int32_t n_out) WM_MUST_USE_RESULT;

// Attributes of the node.
wm_status_t wm_op_fixture_attr_int(wm_op_fixture_t *f, const char *name,
                                   int64_t value) WM_MUST_USE_RESULT;
wm_status_t wm_op_fixture_attr_ints(wm_op_fixture_t *f, const char *name,
                                    const int64_t *values,
                                    size_t n) WM_MUST_USE_RESULT;
wm_status_t wm_op_fixture_attr_float(wm_op_fixture_t *f, const char *name,
                                     float value) WM_MUST_USE_RESULT;
wm_status_t wm_op_fixture_attr_string(wm_op_fixture_t *f, const char *name,
                                      const char *value) WM_MUST_USE_RESULT;
wm_status_t wm_op_fixture_attr_strings(wm_op_fixture_t *f, const char *name,
                                       const char *const *values,
                                       size_t n) WM_MUST_USE_RESULT;

// Runs the node on the host from its constant inputs; the outputs (also
// on failure) replace those of an earlier run in f->out.
wm_status_t wm_op_fixture_run(wm_op_fixture_t *f) WM_MUST_USE_RESULT;
// Checks the graph and infers its types; *out_type is the type of "y0".
wm_status_t wm_op_fixture_infer(wm_op_fixture_t *f,
                                wm_type_t *out_type) WM_MUST_USE_RESULT;
// Runs only the node's shape rule (no graph check) and its cost function;
// *out_type is the type of output 0.
wm_status_t wm_op_fixture_cost(wm_op_fixture_t *f, wm_type_t *out_type,
                               wm_op_cost_t *out_cost) WM_MUST_USE_RESULT;

// Infers the node's types from its inputs (constants and typed inputs)
// and resolves its parameters into |out| (wm_op_resolve).
wm_status_t wm_op_fixture_resolve(wm_op_fixture_t *f,
                                  wm_op_params_t *out) WM_MUST_USE_RESULT;
// Infers the node's types and builds its compute definition into |out|;
// UNIMPLEMENTED when its operator has none.
wm_status_t wm_op_fixture_define(wm_op_fixture_t *f,
                                 wm_gen_compute_t *out) WM_MUST_USE_RESULT;
// Returns true when |p| has the INTS entry |name| holding the |n| values
// |want|; prints what it has otherwise.
bool wm_op_fixture_param_ints_are(const wm_op_params_t *p, const char *name,
                                  const int64_t *want, int32_t n);
// Returns true when |p| has the INT entry |name| equal to |want|.
bool wm_op_fixture_param_int_is(const wm_op_params_t *p, const char *name,
                                int64_t want);
// Returns true when |t| holds the |n| values |want| within |tol|; prints
// the first difference otherwise.
bool wm_op_fixture_values_near(const wm_tensor_t *t, const double *want,
                               size_t n, double tol);
// Returns true when |t| has shape |dims|; prints both otherwise.
bool wm_op_fixture_shape_is(const wm_tensor_t *t, int32_t rank,
                            const int64_t *dims);
// Returns true when |t| holds the strings |want|; prints the first
// difference otherwise.
bool wm_op_fixture_strings_are(const wm_tensor_t *t, const char *const *want,
                               size_t n);
// Returns true when |s| failed with a message containing |part|; frees
// |s| and prints it otherwise.
bool wm_op_fixture_fails_with(wm_status_t s, const char *part);

// Ends a check on fixture |f|: frees it, then checks that |status| is OK
// (printing its text otherwise) and that |ok| holds.
#define WM_OP_FIXTURE_CHECK_DONE(f, status, ok) \
  do {                                          \
    wm_op_fixture_deinit(f);                    \
    WM_CHECK_OK(status);                        \
    WM_CHECK(ok);                               \
  } while (0)

#endif  // WM_OP_FIXTURE_H_
