// A steady-state run of a plan allocates nothing on the host: this test
// counts every malloc, calloc, realloc and aligned allocation of the
// process (host, runtime and the dlopened cpu plugin alike) while a model
// whose nodes all run on the cpu backend is run again with the same input
// shapes through wm_session_run_into.
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wm_test.h"
#include "wmap/plugin.h"
#include "wmap/session.h"

#ifndef WMAP_CPU_PLUGIN
#error "WMAP_CPU_PLUGIN must name the built plugin"
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static volatile bool counting;    // count allocations now
static volatile size_t n_allocs;  // allocations counted

#if !SANITIZED
// glibc's allocator under its internal names: this executable's malloc
// family counts calls and forwards to them.
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void __libc_free(void *p);
void *memalign(size_t align, size_t size);  // glibc's, not in <stdlib.h>

void *malloc(size_t size) {
  n_allocs += counting;
  return __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
  n_allocs += counting;
  return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size) {
  n_allocs += counting;
  return __libc_realloc(p, size);
}

void *aligned_alloc(size_t align, size_t size) {
  n_allocs += counting;
  return __libc_memalign(align, size);
}

void *memalign(size_t align, size_t size) {
  n_allocs += counting;
  return __libc_memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size) {
  n_allocs += counting;
  *out = __libc_memalign(align, size);
  return *out ? 0 : 12;  // ENOMEM
}

void free(void *p) {
  __libc_free(p);
}
#endif

static wm_tensor_t *filled(int32_t rank, const int64_t *dims, float scale) {
  wm_shape_t shape = wm_shape_make(rank, dims);
  wm_tensor_t *t = NULL;
  if (wm_tensor_create(WM_DTYPE_FLOAT, &shape, &t)) {
    return NULL;
  }
  for (size_t i = 0; i < t->count; i++) {
    ((float *)t->data)[i] = scale * (float)((int)(i % 7) - 3);
  }
  return t;
}

// y = Transpose(Softmax(Relu(x W + b))) with x [N, 64] (N symbolic).
static wm_graph_t *build(void) {
  wm_graph_t *g = NULL;
  int32_t id, n;
  if (wm_graph_create("g", NULL, &g) || wm_graph_set_opset(g, "", 17)) {
    return NULL;
  }
  wm_shape_t xs = {.rank = 2, .dims = {-1, 64}};
  wm_type_t xt = wm_type_tensor(WM_DTYPE_FLOAT, &xs);
  static const int64_t wd[2] = {64, 64}, bd[1] = {64};
  const char *mm_in[2] = {"x", "w"}, *add_in[2] = {"xw", "b"};
  const char *mm_out = "xw", *add_out = "a", *relu_out = "r", *sm_out = "p",
             *tr_out = "y", *relu_in = "a", *sm_in = "r", *tr_in = "p";
  wm_status_t s = wm_graph_add_input(g, "x", &xt, &id);
  if (!s) {
    s = wm_graph_add_initializer(g, "w", filled(2, wd, 0.01f), &id);
  }
  if (!s) {
    s = wm_graph_add_initializer(g, "b", filled(1, bd, 0.1f), &id);
  }
  if (!s) {
    s = wm_graph_add_node(g, "MatMul", "", "mm", mm_in, 2, &mm_out, 1, &n);
  }
  if (!s) {
    s = wm_graph_add_node(g, "Add", "", "add", add_in, 2, &add_out, 1, &n);
  }
  if (!s) {
    s = wm_graph_add_node(g, "Relu", "", "relu", &relu_in, 1, &relu_out, 1, &n);
  }
  if (!s) {
    s = wm_graph_add_node(g, "Softmax", "", "sm", &sm_in, 1, &sm_out, 1, &n);
  }
  if (!s) {
    s = wm_graph_add_node(g, "Transpose", "", "tr", &tr_in, 1, &tr_out, 1, &n);
  }
  if (!s) {
    s = wm_graph_add_output(g, "y", NULL, &id);
  }
  if (s) {
    wm_status_free(s);
    wm_graph_destroy(g);
    return NULL;
  }
  return g;
}

WM_TEST(a_steady_state_run_allocates_nothing_on_the_host) {
  if (SANITIZED) {
    wm_test_skip(
        "the sanitizers own malloc: allocations are counted in the "
        "plain build");
    return;
  }
  void *handle = dlopen(WMAP_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  WM_CHECK(handle);
  void *sym = dlsym(handle, WM_PLUGIN_QUERY_SYMBOL);
  WM_CHECK(sym);
  wm_plugin_query_fn query;
  memcpy(&query, &sym, sizeof(query));
  wm_backend_t *cpu = NULL;
  WM_CHECK_OK(wm_backend_create_ex(query, WMAP_CPU_PLUGIN, 2, handle, &cpu));
  wm_graph_t *g = build();
  WM_CHECK(g);
  wm_session_t *s = NULL;
  WM_CHECK_OK(wm_session_create(g, cpu, &s));
  static const int64_t xd[2] = {16, 64}, yd[2] = {64, 16};
  wm_tensor_t *x = filled(2, xd, 0.5f), *y = filled(2, yd, 0);
  const char *names[1] = {"x"};
  // The first run with these shapes makes the plan.
  WM_CHECK_OK(
      wm_session_run_into(s, names, (const wm_tensor_t *const *)&x, 1, &y));
  for (size_t i = 0; i < wm_session_node_count(s); i++) {
    WM_CHECK(strcmp(wm_session_placement(s, i)->backend, "cpu") == 0);
  }
  float first = ((float *)y->data)[5];
  n_allocs = 0;
  counting = true;
  wm_status_t st = NULL;
  for (int k = 0; k < 10 && !st; k++) {
    st = wm_session_run_into(s, names, (const wm_tensor_t *const *)&x, 1, &y);
  }
  counting = false;
  WM_CHECK_OK(st);
  WM_CHECK_INT_EQ(n_allocs, 0);
  WM_CHECK_DBL_NEAR(((float *)y->data)[5], first, 0);
  // The count sees allocations: the run that returns new tensors makes
  // them.
  wm_tensor_t *fresh = NULL;
  counting = true;
  st = wm_session_run(s, names, (const wm_tensor_t *const *)&x, 1, &fresh);
  counting = false;
  WM_CHECK_OK(st);
  WM_CHECK(n_allocs > 0);
  wm_tensor_destroy(fresh);
  wm_tensor_destroy(x);
  wm_tensor_destroy(y);
  wm_session_destroy(s);
  wm_graph_destroy(g);
  wm_backend_destroy(cpu);
}

// Three independent nodes on the GEMM engine: ConvTranspose and LSTM with
// constant weights (packed at plan time), GRU with R as an input (packed
// again on every run into plan-held panels), Attention with a past.
static wm_graph_t *build_gemm_nodes(void) {
  wm_graph_t *g = NULL;
  int32_t id, n;
  if (wm_graph_create("g", NULL, &g) || wm_graph_set_opset(g, "", 23)) {
    return NULL;
  }
  static const int64_t dx[4] = {1, 8, 5, 5}, dw[4] = {8, 4, 2, 2}, db[1] = {4},
                       sx[3] = {6, 2, 10}, lw[3] = {1, 48, 10},
                       lr[3] = {1, 48, 12}, lb[2] = {1, 96},
                       gw[3] = {1, 36, 10}, gr[3] = {1, 36, 12},
                       aq[4] = {1, 2, 3, 8}, ak[4] = {1, 1, 5, 8},
                       ap[4] = {1, 1, 4, 8};
  static const struct {
    const char *name;
    int32_t rank;
    const int64_t *dims;
    bool constant;
  } ins[] = {
      {"x", 4, dx, false},  {"w", 4, dw, true},   {"b", 1, db, true},
      {"s", 3, sx, false},  {"lw", 3, lw, true},  {"lr", 3, lr, true},
      {"lb", 2, lb, true},  {"gw", 3, gw, true},  {"gr", 3, gr, false},
      {"q", 4, aq, false},  {"k", 4, ak, false},  {"v", 4, ak, false},
      {"pk", 4, ap, false}, {"pv", 4, ap, false},
  };
  wm_status_t s = NULL;
  for (size_t i = 0; !s && i < sizeof(ins) / sizeof(ins[0]); i++) {
    wm_shape_t sh = wm_shape_make(ins[i].rank, ins[i].dims);
    wm_type_t t = wm_type_tensor(WM_DTYPE_FLOAT, &sh);
    s = ins[i].constant
            ? wm_graph_add_initializer(
                  g, ins[i].name, filled(ins[i].rank, ins[i].dims, 0.05f), &id)
            : wm_graph_add_input(g, ins[i].name, &t, &id);
  }
  const char *ct_in[3] = {"x", "w", "b"}, *ct_out = "y0";
  const char *l_in[4] = {"s", "lw", "lr", "lb"}, *l_out[1] = {"y1"};
  const char *g_in[3] = {"s", "gw", "gr"}, *g_out[1] = {"y2"};
  const char *a_in[6] = {"q", "k", "v", "", "pk", "pv"};
  const char *a_out[3] = {"y3", "y4", "y5"};
  if (!s) {
    s = wm_graph_add_node(g, "ConvTranspose", "", "ct", ct_in, 3, &ct_out, 1,
                          &n);
  }
  if (!s) {
    static const int64_t two[2] = {2, 2};
    s = wm_graph_add_attr_ints(g, n, "strides", two, 2);
  }
  if (!s) {
    s = wm_graph_add_node(g, "LSTM", "", "lstm", l_in, 4, l_out, 1, &n);
  }
  if (!s) {
    s = wm_graph_add_attr_int(g, n, "hidden_size", 12);
  }
  if (!s) {
    s = wm_graph_add_node(g, "GRU", "", "gru", g_in, 3, g_out, 1, &n);
  }
  if (!s) {
    s = wm_graph_add_attr_int(g, n, "hidden_size", 12);
  }
  if (!s) {
    s = wm_graph_add_node(g, "Attention", "", "att", a_in, 6, a_out, 3, &n);
  }
  for (int i = 0; !s && i < 6; i++) {
    static const char *const outs[6] = {"y0", "y1", "y2", "y3", "y4", "y5"};
    s = wm_graph_add_output(g, outs[i], NULL, &id);
  }
  if (s) {
    wm_status_free(s);
    wm_graph_destroy(g);
    return NULL;
  }
  return g;
}

WM_TEST(steady_state_runs_of_the_gemm_kernels_allocate_nothing) {
  if (SANITIZED) {
    wm_test_skip(
        "the sanitizers own malloc: allocations are counted in the "
        "plain build");
    return;
  }
  void *handle = dlopen(WMAP_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  WM_CHECK(handle);
  void *sym = dlsym(handle, WM_PLUGIN_QUERY_SYMBOL);
  WM_CHECK(sym);
  wm_plugin_query_fn query;
  memcpy(&query, &sym, sizeof(query));
  wm_backend_t *cpu = NULL;
  WM_CHECK_OK(wm_backend_create_ex(query, WMAP_CPU_PLUGIN, 2, handle, &cpu));
  wm_graph_t *g = build_gemm_nodes();
  WM_CHECK(g);
  wm_session_t *s = NULL;
  WM_CHECK_OK(wm_session_create(g, cpu, &s));
  static const int64_t dx[4] = {1, 8, 5, 5}, sx[3] = {6, 2, 10},
                       gr[3] = {1, 36, 12}, aq[4] = {1, 2, 3, 8},
                       ak[4] = {1, 1, 5, 8}, ap[4] = {1, 1, 4, 8};
  static const int64_t d0[4] = {1, 4, 10, 10}, d1[4] = {6, 1, 2, 12},
                       d3[4] = {1, 2, 3, 8}, d4[4] = {1, 1, 9, 8};
  const char *names[8] = {"x", "s", "gr", "q", "k", "v", "pk", "pv"};
  wm_tensor_t *xs[8] = {filled(4, dx, 0.5f),  filled(3, sx, 0.3f),
                        filled(3, gr, 0.05f), filled(4, aq, 0.2f),
                        filled(4, ak, 0.2f),  filled(4, ak, 0.1f),
                        filled(4, ap, 0.2f),  filled(4, ap, 0.1f)};
  wm_tensor_t *ys[6] = {filled(4, d0, 0), filled(4, d1, 0), filled(4, d1, 0),
                        filled(4, d3, 0), filled(4, d4, 0), filled(4, d4, 0)};
  for (int i = 0; i < 8; i++) {
    WM_CHECK(xs[i] != NULL);
  }
  for (int i = 0; i < 6; i++) {
    WM_CHECK(ys[i] != NULL);
  }
  // The first run with these shapes makes the plans.
  WM_CHECK_OK(
      wm_session_run_into(s, names, (const wm_tensor_t *const *)xs, 8, ys));
  for (size_t i = 0; i < wm_session_node_count(s); i++) {
    WM_CHECK(strcmp(wm_session_placement(s, i)->backend, "cpu") == 0);
  }
  float first = ((float *)ys[1]->data)[7];
  n_allocs = 0;
  counting = true;
  wm_status_t st = NULL;
  for (int k = 0; k < 10 && !st; k++) {
    st = wm_session_run_into(s, names, (const wm_tensor_t *const *)xs, 8, ys);
  }
  counting = false;
  WM_CHECK_OK(st);
  WM_CHECK_INT_EQ(n_allocs, 0);
  WM_CHECK_DBL_NEAR(((float *)ys[1]->data)[7], first, 0);
  for (int i = 0; i < 8; i++) {
    wm_tensor_destroy(xs[i]);
  }
  for (int i = 0; i < 6; i++) {
    wm_tensor_destroy(ys[i]);
  }
  wm_session_destroy(s);
  wm_graph_destroy(g);
  wm_backend_destroy(cpu);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(a_steady_state_run_allocates_nothing_on_the_host),
      WM_CASE(steady_state_runs_of_the_gemm_kernels_allocate_nothing),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
