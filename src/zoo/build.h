// Helpers the zoo's model builders share: deterministic weights, constants
// and one-line node constructors over a graph, with a sticky error so a
// builder reads as the architecture it describes and checks once.
#ifndef WMAP_ZOO_BUILD_H_
#define WMAP_ZOO_BUILD_H_

#include "wmap/graph.h"
#include "wmap/zoo.h"

// A graph under construction. After the first failure every helper does
// nothing and returns "" (names) or -1 (nodes); |err| holds the failure.
typedef struct wm_zoo_builder {
  wm_graph_t *g;    // the graph being built
  wm_status_t err;  // first failure, or NULL
} wm_zoo_builder_t;

// Parsed spec values of a model, in the order of its keys.
typedef struct wm_zoo_args {
  int64_t v[8];  // value per key
} wm_zoo_args_t;

// Model builders: add inputs, nodes, weights and outputs to b->g.
void wm_zoo_resnet18(wm_zoo_builder_t *b, const wm_zoo_args_t *a);
void wm_zoo_resnet50(wm_zoo_builder_t *b, const wm_zoo_args_t *a);
void wm_zoo_mobilenetv2(wm_zoo_builder_t *b, const wm_zoo_args_t *a);
void wm_zoo_mlp(wm_zoo_builder_t *b, const wm_zoo_args_t *a);
void wm_zoo_bert(wm_zoo_builder_t *b, const wm_zoo_args_t *a);
void wm_zoo_gpt2(wm_zoo_builder_t *b, const wm_zoo_args_t *a);
void wm_zoo_mlp_train(wm_zoo_builder_t *b, const wm_zoo_args_t *a);

// Returns a printf-formatted name interned in the graph.
const char *wm_zoo_name(wm_zoo_builder_t *b, const char *fmt, ...)
    WM_PRINTF(2, 3);
// Records |s| as the builder's error unless one is already held.
void wm_zoo_fail(wm_zoo_builder_t *b, wm_status_t s);

// Adds a float initializer uniform in [lo, hi), seeded from its name.
void wm_zoo_uniform(wm_zoo_builder_t *b, const char *name, int32_t rank,
                    const int64_t *dims, double lo, double hi);
// Adds a float initializer of zero mean and standard deviation |std|.
void wm_zoo_random(wm_zoo_builder_t *b, const char *name, int32_t rank,
                   const int64_t *dims, double std);
// Adds a float initializer filled with |value|.
void wm_zoo_fill(wm_zoo_builder_t *b, const char *name, int32_t rank,
                 const int64_t *dims, double value);
// Adds a rank-0 float constant unless |name| exists already.
void wm_zoo_scalar(wm_zoo_builder_t *b, const char *name, double value);
// Adds a 1-D int64 constant unless |name| exists already.
void wm_zoo_ints(wm_zoo_builder_t *b, const char *name, size_t n,
                 const int64_t *vals);
// Adds a graph input of |dtype| and shape |dims|.
void wm_zoo_input(wm_zoo_builder_t *b, const char *name, wm_dtype_t dtype,
                  int32_t rank, const int64_t *dims);
// Marks |name| as a graph output of |dtype| and shape |dims|.
void wm_zoo_output(wm_zoo_builder_t *b, const char *name, wm_dtype_t dtype,
                   int32_t rank, const int64_t *dims);

// Adds node |name| of |op| whose one output value is also named |name|;
// returns the node id (-1 after a failure).
int32_t wm_zoo_node(wm_zoo_builder_t *b, const char *op, const char *name,
                    const char *const *inputs, int32_t n_in);
// Like wm_zoo_node with the output value named |out|.
int32_t wm_zoo_node_out(wm_zoo_builder_t *b, const char *op, const char *name,
                        const char *out, const char *const *inputs,
                        int32_t n_in);
// Attribute setters for node |node| (no-ops after a failure).
void wm_zoo_attr_int(wm_zoo_builder_t *b, int32_t node, const char *name,
                     int64_t v);
void wm_zoo_attr_float(wm_zoo_builder_t *b, int32_t node, const char *name,
                       float v);
void wm_zoo_attr_ints(wm_zoo_builder_t *b, int32_t node, const char *name,
                      const int64_t *v, size_t n);

// Binary elementwise node: returns its output name (|name|).
const char *wm_zoo_binary(wm_zoo_builder_t *b, const char *op, const char *name,
                          const char *x, const char *y);
// Unary node: returns its output name (|name|).
const char *wm_zoo_unary(wm_zoo_builder_t *b, const char *op, const char *name,
                         const char *x);
// MatMul by NAME.weight [in,out] (std |std|) then Add NAME.bias [out]
// (zeros); returns the output name, |name|.
const char *wm_zoo_linear(wm_zoo_builder_t *b, const char *name, const char *x,
                          int64_t in, int64_t out, double std);
// LayerNormalization over the last axis with NAME.weight (ones) and
// NAME.bias (zeros) of size |dim|.
const char *wm_zoo_layernorm(wm_zoo_builder_t *b, const char *name,
                             const char *x, int64_t dim, float eps);
// Reshape to the |rank| dims |dims| (an int64 constant NAME.shape).
const char *wm_zoo_reshape(wm_zoo_builder_t *b, const char *name, const char *x,
                           int32_t rank, const int64_t *dims);
// Transpose by |perm|.
const char *wm_zoo_transpose(wm_zoo_builder_t *b, const char *name,
                             const char *x, int32_t rank, const int64_t *perm);

#endif  // WMAP_ZOO_BUILD_H_
