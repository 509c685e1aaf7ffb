// Tests of the cuda backend in two parts. The first runs on any machine:
// the plugin either loads or refuses itself naming the missing driver or
// device; NVRTC (no driver needed) compiles for a fixed architecture into
// the cache and hits it again, and quotes its log for a broken source; the
// library tier's kernels compile; op_query's analysis of MatMul, Gemm and
// Conv. The second needs a device, and exits 77 saying so where none is:
// the description, claims, memory round trips, a launch in the cuda-c
// convention with offsets, and MatMul, Gemm and Conv on cuBLAS against
// loops on the CPU. With WMAP_CUDA_TEST_MOCK set, the device is the
// stand-in driver of mock_driver.c (on LD_LIBRARY_PATH): everything but
// cuBLAS runs, and every context push and object must be given back.
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda.h"
#include "wm_test.h"
#include "wmap/plugin.h"

#ifndef WMAP_CUDA_PLUGIN
#error "WMAP_CUDA_PLUGIN must name the built plugin"
#endif

static void *plugin;              // the plugin's dlopen handle
static const wm_plugin_api *api;  // its table, when the query succeeded
static char refusal[1024];        // the query's error message otherwise
static int32_t refusal_code;      // and its code
static char cache_dir[256];       // a fresh NVRTC cache for this run
static bool mock;                 // the device is mock_driver.c's

// True when |e| has |code| and a message containing |needle|; prints what
// it has otherwise. Destroys |e|.
static bool error_is(wm_error *e, int32_t code, const char *needle) {
  if (!e) {
    printf("  got success, want error %d containing \"%s\"\n", (int)code,
           needle);
    return false;
  }
  int32_t got = wm_host_error_code(e);
  const char *msg = wm_host_error_message(e);
  bool ok = got == code && strstr(msg, needle) != NULL;
  if (!ok) {
    printf("  got error %d \"%s\", want %d containing \"%s\"\n", (int)got, msg,
           (int)code, needle);
  }
  wm_host_error_destroy(e);
  return ok;
}

// True when |e| is NULL; prints and destroys it otherwise.
static bool succeeded(wm_error *e, const char *what) {
  if (!e) {
    return true;
  }
  printf("  %s: error %d: %s\n", what, (int)wm_host_error_code(e),
         wm_host_error_message(e));
  wm_host_error_destroy(e);
  return false;
}

// Files in the test's cache folder whose names end in |suffix|.
static int count_files(const char *suffix) {
  DIR *d = opendir(cache_dir);
  int n = 0;
  struct dirent *ent;
  size_t ls = strlen(suffix);
  while (d && (ent = readdir(d))) {
    size_t l = strlen(ent->d_name);
    n += l > ls && strcmp(ent->d_name + l - ls, suffix) == 0;
  }
  if (d) {
    closedir(d);
  }
  return n;
}

// Empties and removes the test's cache folder.
static void remove_cache(void) {
  DIR *d = opendir(cache_dir);
  struct dirent *ent;
  char path[600];
  while (d && (ent = readdir(d))) {
    if (ent->d_name[0] != '.') {
      snprintf(path, sizeof(path), "%s/%s", cache_dir, ent->d_name);
      remove(path);
    }
  }
  if (d) {
    closedir(d);
  }
  rmdir(cache_dir);
}

// Loads the plugin and runs its query, keeping the table or the refusal.
static void load_plugin(void) {
  plugin = dlopen(WMAP_CUDA_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  if (!plugin) {
    snprintf(refusal, sizeof(refusal), "dlopen: %s", dlerror());
    return;
  }
  wm_plugin_query_fn query;
  void *sym = dlsym(plugin, WM_PLUGIN_QUERY_SYMBOL);
  memcpy(&query, &sym, sizeof(query));
  static const wm_host_api host = {.struct_size = sizeof(wm_host_api)};
  const wm_plugin_api *table = NULL;
  wm_error *e = query(WM_ABI_MAJOR, WM_ABI_MINOR, &host, &table);
  if (e) {
    refusal_code = table->error_code(e);
    snprintf(refusal, sizeof(refusal), "%s", table->error_message(e));
    table->error_destroy(e);
    return;
  }
  api = table;
}

// The kernel the NVRTC tests compile; FACTOR, when defined, changes it.
static const char kernel_source[] =
    "extern \"C\" __global__ void scale(float *x, float a, long long n) {\n"
    "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "#ifdef FACTOR\n"
    "  a *= FACTOR;\n"
    "#endif\n"
    "  if (i < n) x[i] *= a;\n"
    "}\n";

// ------------------------------------------------------ without a device

WM_TEST(query_loads_or_refuses_naming_the_driver_or_device) {
  WM_CHECK(plugin != NULL);
  if (api) {
    const wm_target_desc *const *targets = NULL;
    uint32_t n = 0;
    WM_CHECK(succeeded(api->enumerate(&targets, &n), "enumerate"));
    WM_CHECK(n >= 1);
    WM_CHECK_STR_EQ(targets[0]->vendor, "NVIDIA");
    WM_CHECK_INT_EQ(targets[0]->kind, WM_TARGET_GPU);
    WM_CHECK_STR_EQ(targets[0]->formats[0], "cuda-c");
    WM_CHECK_INT_EQ(targets[0]->subgroup_size, 32);
    WM_CHECK(targets[0]->max_group_size >= 256);
    WM_CHECK(targets[0]->local_memory_bytes >= 16384);
    if (mock) {
      // The stand-in's attributes (an A100's) give these numbers.
      const wm_target_desc *t = targets[0];
      WM_CHECK_STR_EQ(t->name, "Stand-in GPU");
      WM_CHECK_INT_EQ(t->vendor_id, 0x10de);
      WM_CHECK_INT_EQ(t->device_id, 0x20b0);
      WM_CHECK_INT_EQ(t->memory_bytes, (uint64_t)40 << 30);
      WM_CHECK_INT_EQ(t->compute_units, 108);
      WM_CHECK_INT_EQ(t->local_memory_bytes, 49152);
      WM_CHECK_INT_EQ(t->max_group_size, 1024);
      WM_CHECK_INT_EQ(t->vector_width, 1);
      WM_CHECK_DBL_NEAR(t->peak_gflops_fp32, 108 * 64 * 2 * 1.41, 1e-6);
      WM_CHECK_DBL_NEAR(t->mem_bandwidth_gbs, 2 * 1.215 * 5120 / 8, 1e-6);
      WM_CHECK(t->dtype_mask & (1u << 1));
      WM_CHECK(t->dtype_mask & (1u << 10));
    }
    return;
  }
  WM_CHECK_INT_EQ(refusal_code, WM_ERR_UNAVAILABLE);
  if (!strstr(refusal, "no CUDA driver (libcuda.so.1): ") &&
      !strstr(refusal, "cuInit: CUDA_ERROR_") &&
      !strstr(refusal, "no CUDA device")) {
    wm_test_fail(__FILE__, __LINE__, "refusal \"%s\" names no reason", refusal);
  }
}

WM_TEST(registry_lists_a_refused_plugin_with_its_reason) {
  const char *paths[] = {WMAP_CUDA_PLUGIN};
  wm_registry_options_t opts = {.paths = paths,
                                .n_paths = 1,
                                .quiet = true,
                                .no_env = true,
                                .install_dir = ""};
  wm_registry_t *reg = NULL;
  WM_CHECK_OK(wm_registry_create(&opts, &reg));
  bool listed = false;
  if (api) {
    wm_backend_t *b = NULL;
    wm_status_t s = wm_registry_find(reg, "cuda", &b);
    listed = s == NULL;
    wm_status_free(s);
  }
  for (size_t i = 0; !api && i < wm_registry_refused_count(reg); i++) {
    listed |=
        strstr(wm_registry_refused_path(reg, i), "libwmap_backend_cuda") &&
        strstr(wm_registry_refused_reason(reg, i), "UNAVAILABLE") &&
        strstr(wm_registry_refused_reason(reg, i), refusal);
  }
  wm_registry_destroy(reg);
  WM_CHECK(listed);
}

// True when NVRTC loads; skips the running test otherwise.
static bool nvrtc_here(void) {
  char arch[32];
  wm_error *e = cuda_nvrtc_arch(80, arch);
  if (e && wm_host_error_code(e) == WM_ERR_UNAVAILABLE) {
    static char why[600];
    snprintf(why, sizeof(why), "%s", wm_host_error_message(e));
    wm_host_error_destroy(e);
    wm_test_skip(why);
    return false;
  }
  wm_host_error_destroy(e);
  return true;
}

WM_TEST(nvrtc_arch_is_sm_when_known_else_ptx_of_an_older_one) {
  if (!nvrtc_here()) {
    return;
  }
  char arch[32];
  WM_CHECK(succeeded(cuda_nvrtc_arch(80, arch), "arch 8.0"));
  WM_CHECK_STR_EQ(arch, "sm_80");
  // A compute capability newer than NVRTC knows gets PTX of an older one.
  WM_CHECK(succeeded(cuda_nvrtc_arch(990, arch), "arch 99.0"));
  WM_CHECK(strncmp(arch, "compute_", 8) == 0);
  WM_CHECK(atoi(arch + 8) < 990);
  WM_CHECK(error_is(cuda_nvrtc_arch(10, arch), WM_ERR_FAILED_PRECONDITION,
                    "not 1.0"));
}

WM_TEST(nvrtc_compiles_into_the_cache_then_hits_it) {
  if (!nvrtc_here()) {
    return;
  }
  cuda_image_t first, second;
  bool hit = true;
  WM_CHECK(succeeded(cuda_nvrtc_compile(kernel_source, strlen(kernel_source),
                                        "sm_80", NULL, cache_dir, &first, &hit),
                     "first compile"));
  bool fresh = !hit && first.is_cubin && first.size > 4 &&
               memcmp(first.data,
                      "\x7f"
                      "ELF",
                      4) == 0;
  int files = count_files(".cubin");
  wm_error *e = cuda_nvrtc_compile(kernel_source, strlen(kernel_source),
                                   "sm_80", "", cache_dir, &second, &hit);
  bool same = !e && hit && second.size == first.size &&
              memcmp(second.data, first.data, first.size) == 0;
  cuda_image_deinit(&first);
  if (!e) {
    cuda_image_deinit(&second);
  }
  WM_CHECK(succeeded(e, "second compile"));
  WM_CHECK(fresh);
  WM_CHECK_INT_EQ(files, 1);
  WM_CHECK(same);
  WM_CHECK_INT_EQ(count_files(".tmp"), 0);
}

WM_TEST(nvrtc_ptx_for_a_compute_arch_and_options_make_new_keys) {
  if (!nvrtc_here()) {
    return;
  }
  cuda_image_t ptx, scaled;
  bool hit = true;
  WM_CHECK(
      succeeded(cuda_nvrtc_compile(kernel_source, strlen(kernel_source),
                                   "compute_80", NULL, cache_dir, &ptx, &hit),
                "PTX compile"));
  bool text = !hit && !ptx.is_cubin && ptx.data[ptx.size - 1] == '\0' &&
              strstr((const char *)ptx.data, ".entry scale");
  cuda_image_deinit(&ptx);
  WM_CHECK(text);
  WM_CHECK_INT_EQ(count_files(".ptx"), 1);
  // Read back from the cache, the PTX is NUL-terminated again.
  WM_CHECK(
      succeeded(cuda_nvrtc_compile(kernel_source, strlen(kernel_source),
                                   "compute_80", NULL, cache_dir, &ptx, &hit),
                "cached PTX"));
  text = hit && ptx.data[ptx.size - 1] == '\0' &&
         strstr((const char *)ptx.data, ".entry scale");
  cuda_image_deinit(&ptx);
  WM_CHECK(text);
  int before = count_files(".cubin");
  WM_CHECK(succeeded(
      cuda_nvrtc_compile(kernel_source, strlen(kernel_source), "sm_80",
                         " -DFACTOR=3  ", cache_dir, &scaled, &hit),
      "compile with options"));
  cuda_image_deinit(&scaled);
  WM_CHECK(!hit);
  WM_CHECK_INT_EQ(count_files(".cubin"), before + 1);
}

WM_TEST(nvrtc_broken_source_is_invalid_argument_quoting_the_log) {
  if (!nvrtc_here()) {
    return;
  }
  static const char broken[] =
      "extern \"C\" __global__ void broken(float *x) {\n"
      "  x[0] = undefined_name;\n"
      "}\n";
  int before = count_files("");
  cuda_image_t image;
  wm_error *e = cuda_nvrtc_compile(broken, strlen(broken), "sm_80", NULL,
                                   cache_dir, &image, NULL);
  const char *msg = e ? wm_host_error_message(e) : "";
  bool quoted = strstr(msg, "NVRTC_ERROR_COMPILATION") &&
                strstr(msg, "undefined_name") && strstr(msg, "sm_80");
  WM_CHECK(error_is(e, WM_ERR_INVALID_ARGUMENT, "compile: NVRTC"));
  WM_CHECK(quoted);
  WM_CHECK(image.data == NULL);
  WM_CHECK_INT_EQ(count_files(""), before);
}

WM_TEST(nvrtc_refuses_bad_options_nul_bytes_and_archs) {
  if (!nvrtc_here()) {
    return;
  }
  cuda_image_t image;
  WM_CHECK(
      error_is(cuda_nvrtc_compile(kernel_source, strlen(kernel_source), "sm_80",
                                  "--no-such-option", cache_dir, &image, NULL),
               WM_ERR_INVALID_ARGUMENT, "NVRTC_ERROR_INVALID_OPTION"));
  WM_CHECK(error_is(
      cuda_nvrtc_compile("a\0b", 3, "sm_80", NULL, cache_dir, &image, NULL),
      WM_ERR_INVALID_ARGUMENT, "NUL byte"));
  WM_CHECK(error_is(cuda_nvrtc_compile(kernel_source, strlen(kernel_source),
                                       "gfx90a", NULL, cache_dir, &image, NULL),
                    WM_ERR_INVALID_ARGUMENT, "neither sm_XY nor compute_XY"));
}

WM_TEST(library_kernels_compile) {
  if (!nvrtc_here()) {
    return;
  }
  cuda_image_t image;
  WM_CHECK(
      succeeded(cuda_nvrtc_compile(cuda_blas_kernels_source,
                                   strlen(cuda_blas_kernels_source),
                                   "compute_75", NULL, cache_dir, &image, NULL),
                "the library tier's kernels"));
  const char *ptx = (const char *)image.data;
  bool all = strstr(ptx, ".entry wm_cuda_im2col") &&
             strstr(ptx, ".entry wm_cuda_add_bias") &&
             strstr(ptx, ".entry wm_cuda_broadcast");
  cuda_image_deinit(&image);
  WM_CHECK(all);
}

// A float32 dense tensor description of |rank| |dims|.
static wm_tensor_desc desc(uint32_t rank, const int64_t *dims) {
  wm_tensor_desc d = {.struct_size = sizeof(d), .dtype = 1, .rank = rank};
  memcpy(d.dims, dims, rank * sizeof(int64_t));
  return d;
}

// An operator description of |n_in| inputs and one output.
static wm_op_desc op_of(const char *type, const wm_tensor_desc *in,
                        uint32_t n_in, const wm_tensor_desc *out) {
  wm_op_desc op = {.struct_size = sizeof(op),
                   .domain = "",
                   .op_type = type,
                   .opset = 17,
                   .name = type,
                   .n_in = n_in,
                   .n_out = 1,
                   .in = in,
                   .out = out};
  return op;
}

WM_TEST(library_matmul_broadcasts_with_few_strided_calls) {
  static const int64_t a4[] = {2, 3, 5, 7}, b2[] = {7, 4}, y4[] = {2, 3, 5, 4};
  static const int64_t a21[] = {2, 1, 5, 7}, b13[] = {1, 3, 7, 4};
  static const int64_t av[] = {7}, bv[] = {7}, y0[] = {0};
  wm_tensor_desc in[2] = {desc(4, a4), desc(2, b2)}, y = desc(4, y4);
  wm_op_desc op = op_of("MatMul", in, 2, &y);
  uint64_t calls = 0;
  const char *detail;
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, &calls, &detail), WM_WHY_NONE);
  WM_CHECK_INT_EQ(calls, 1);  // B broadcast over all six products
  in[1] = desc(4, a4);
  in[1].dims[2] = 7;
  in[1].dims[3] = 4;
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, &calls, &detail), WM_WHY_NONE);
  WM_CHECK_INT_EQ(calls, 1);  // both batched alike
  in[0] = desc(4, a21);
  in[1] = desc(4, b13);
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, &calls, &detail), WM_WHY_NONE);
  WM_CHECK_INT_EQ(calls, 2);  // A steps over dim 0, B over dim 1
  in[0] = desc(1, av);
  in[1] = desc(1, bv);
  y = desc(0, y0);
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, &calls, &detail), WM_WHY_NONE);
  WM_CHECK_INT_EQ(calls, 1);  // a dot product
  y = desc(1, bv);
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, &calls, &detail), WM_WHY_SHAPE);
  in[0] = desc(4, a4);
  in[1] = desc(2, b2);
  y = desc(4, y4);
  in[0].dims[0] = -1;
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, &calls, &detail), WM_WHY_SHAPE);
  in[0].dims[0] = 2;
  in[0].dtype = 10;
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, &calls, &detail), WM_WHY_DTYPE);
  in[0].dtype = 1;
  in[1].dims[0] = 6;
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, &calls, &detail), WM_WHY_SHAPE);
  op.op_type = "Relu";
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, &calls, &detail), WM_WHY_OP);
}

WM_TEST(library_gemm_takes_a_c_that_broadcasts) {
  static const int64_t a[] = {5, 3}, b[] = {4, 3}, c[] = {4}, y2[] = {5, 4};
  wm_tensor_desc in[3] = {desc(2, a), desc(2, b), desc(1, c)};
  wm_tensor_desc y = desc(2, y2);
  wm_op_attr trans_b = {
      .struct_size = sizeof(trans_b), .name = "transB", .type = 2, .i = 1};
  wm_op_desc op = op_of("Gemm", in, 3, &y);
  op.n_attr = 1;
  op.attrs = &trans_b;
  const char *detail;
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, NULL, &detail), WM_WHY_NONE);
  in[2].dims[0] = 5;  // C of 5 columns against a product of 4
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, NULL, &detail), WM_WHY_SHAPE);
  in[2].dtype = 0;  // omitted
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, NULL, &detail), WM_WHY_NONE);
  op.n_attr = 0;  // B of [4, 3] is then not [3, N]
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, NULL, &detail), WM_WHY_SHAPE);
}

// Resolved Conv parameters as the host gives them.
typedef struct conv_params {
  int64_t kernel[2], strides[2], dilations[2], pads[4];
  wm_op_attr attrs[5];
} conv_params_t;

static void conv_params_init(conv_params_t *p, int64_t k, int64_t stride,
                             int64_t dilation, int64_t pad, int64_t group) {
  for (int i = 0; i < 4; i++) {
    p->pads[i] = pad;
  }
  p->kernel[0] = p->kernel[1] = k;
  p->strides[0] = p->strides[1] = stride;
  p->dilations[0] = p->dilations[1] = dilation;
  const char *names[] = {"kernel_shape", "strides", "dilations", "pads"};
  const int64_t *lists[] = {p->kernel, p->strides, p->dilations, p->pads};
  for (int i = 0; i < 4; i++) {
    wm_op_attr a = {.struct_size = sizeof(a),
                    .name = names[i],
                    .type = 7,
                    .count = i == 3 ? 4 : 2,
                    .ints = lists[i]};
    p->attrs[i] = a;
  }
  wm_op_attr g = {
      .struct_size = sizeof(g), .name = "group", .type = 2, .i = group};
  p->attrs[4] = g;
}

WM_TEST(library_conv_reads_the_resolved_parameters) {
  static const int64_t x[] = {2, 4, 9, 9}, w[] = {6, 2, 3, 3}, b[] = {6};
  static const int64_t y[] = {2, 6, 5, 5};
  wm_tensor_desc in[3] = {desc(4, x), desc(4, w), desc(1, b)};
  wm_tensor_desc out = desc(4, y);
  conv_params_t p;
  conv_params_init(&p, 3, 2, 1, 1, 2);
  wm_op_desc op = op_of("Conv", in, 3, &out);
  uint64_t calls = 0;
  const char *detail;
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, &calls, &detail), WM_WHY_SHAPE);
  op.n_param = 5;
  op.params = p.attrs;
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, &calls, &detail), WM_WHY_NONE);
  WM_CHECK_INT_EQ(calls, 2);  // one image at a time through im2col
  out.dims[3] = 4;
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, &calls, &detail), WM_WHY_SHAPE);
  out.dims[3] = 5;
  p.attrs[4].i = 3;  // 4 channels do not split into 3 groups
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, &calls, &detail), WM_WHY_SHAPE);
  // 1x1 of stride 1: every image in one call, no im2col.
  static const int64_t w1[] = {6, 4, 1, 1}, y1[] = {2, 6, 9, 9};
  in[1] = desc(4, w1);
  out = desc(4, y1);
  conv_params_init(&p, 1, 1, 1, 0, 1);
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, &calls, &detail), WM_WHY_NONE);
  WM_CHECK_INT_EQ(calls, 1);
  op.domain = "wmap";
  op.op_type = "FusedConv";
  WM_CHECK_INT_EQ(cuda_blas_analyze(&op, &calls, &detail), WM_WHY_OP);
}

// ------------------------------------------------------------ on a device

static const wm_target_desc *gpu;  // the first device
static wm_device *dev;             // opened on it
static wm_stream *stream;          // a stream of it

// A buffer of |bytes| holding |n| floats of |data| at byte |offset|.
static wm_buffer *upload(const float *data, size_t n, uint64_t offset,
                         uint64_t bytes) {
  wm_buffer *b = NULL;
  if (!succeeded(
          api->device->mem_alloc(dev, bytes, 64, WM_MEM_DEVICE_LOCAL, &b),
          "mem_alloc")) {
    return NULL;
  }
  if (n && !succeeded(api->device->copy_h2d(stream, data, b, offset,
                                            n * sizeof(float)),
                      "copy_h2d")) {
    api->device->mem_free(b);
    return NULL;
  }
  return b;
}

// Fills |x| with |n| values in [-1, 1) from |seed|.
static void fill(float *x, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    x[i] = (float)(wm_test_rand(&seed) % 2000) / 1000.0f - 1.0f;
  }
}

// The first place |got| and |want| differ beyond float rounding, or -1.
static long mismatch(const float *got, const float *want, size_t n,
                     double scale) {
  for (size_t i = 0; i < n; i++) {
    if (!(fabs((double)got[i] - want[i]) <=
          1e-4 * scale * (1 + fabs(want[i])))) {
      printf("  element %zu: got %.7g, want %.7g\n", i, got[i], want[i]);
      return (long)i;
    }
  }
  return -1;
}

WM_TEST(gpu_claims_come_from_the_description) {
  uint32_t level = 9;
  WM_CHECK(succeeded(api->device->format_support(gpu, "cuda-c", &level),
                     "format_support"));
  WM_CHECK_INT_EQ(level, WM_SUPPORT_SUPPORTED);
  WM_CHECK(succeeded(api->device->format_support(gpu, "opencl-c", &level),
                     "format_support"));
  WM_CHECK_INT_EQ(level, WM_SUPPORT_NONE);
  static const int64_t ad[] = {8, 16}, bd[] = {16, 4}, yd[] = {8, 4};
  wm_tensor_desc in[2] = {desc(2, ad), desc(2, bd)}, out = desc(2, yd);
  wm_op_desc op = op_of("MatMul", in, 2, &out);
  wm_op_support support = {.struct_size = sizeof(support)};
  WM_CHECK(succeeded(api->library->op_query(gpu, &op, &support), "op_query"));
  WM_CHECK_INT_EQ(support.level, WM_SUPPORT_SUPPORTED);
  WM_CHECK_INT_EQ(support.impl, WM_IMPL_VENDOR_LIBRARY);
  op.op_type = "Softmax";
  WM_CHECK(succeeded(api->library->op_query(gpu, &op, &support), "op_query"));
  WM_CHECK_INT_EQ(support.level, WM_SUPPORT_NONE);
  WM_CHECK_INT_EQ(support.reason, WM_WHY_OP);
}

WM_TEST(gpu_memory_round_trips_at_offsets) {
  enum { N = 1000 };
  float src[N], back[N], zero[16];
  fill(src, N, 7);
  wm_buffer *a = upload(src, N, 256, 8192);
  wm_buffer *b = upload(NULL, 0, 0, 8192);
  WM_CHECK(a && b);
  bool ok =
      succeeded(
          api->device->copy_d2d(stream, a, 256, b, 4096, N * sizeof(float)),
          "copy_d2d") &&
      succeeded(api->device->copy_d2h(stream, b, 4096, back, N * sizeof(float)),
                "copy_d2h") &&
      succeeded(api->device->copy_d2h(stream, b, 0, zero, sizeof(zero)),
                "copy_d2h of fresh memory");
  ok = ok && memcmp(src, back, sizeof(src)) == 0;
  for (int i = 0; i < 16; i++) {
    ok = ok && zero[i] == 0.0f;  // mem_alloc zeroes
  }
  bool refused = error_is(api->device->copy_d2h(stream, a, 8000, back, 256),
                          WM_ERR_OUT_OF_RANGE, "overrun");
  api->device->mem_free(a);
  api->device->mem_free(b);
  WM_CHECK(ok);
  WM_CHECK(refused);
}

WM_TEST(gpu_launch_follows_the_cuda_c_convention) {
  static const char source[] =
      "extern \"C\" __global__ void axpy(float *y, const float *x, float a,\n"
      "                                  long long start, long long end) {\n"
      "  long long i = start + blockIdx.x * (long long)blockDim.x +\n"
      "                threadIdx.x;\n"
      "  if (i < end) y[i] = a * x[i] + y[i];\n"
      "}\n";
  enum { N = 3000 };
  static float x[N], y[N], want[N], got[N];
  fill(x, N, 3);
  fill(y, N, 5);
  float a = 2.5f;
  int64_t start = 0, end = N;
  for (int i = 0; i < N; i++) {
    want[i] = a * x[i] + y[i];
  }
  wm_executable *exe = NULL;
  wm_kernel *k = NULL, *none = NULL;
  WM_CHECK(succeeded(
      api->device->compile(dev, "cuda-c", source, strlen(source), NULL, &exe),
      "compile"));
  bool found = succeeded(api->device->exe_get_kernel(exe, "axpy", &k), "axpy");
  bool missing = error_is(api->device->exe_get_kernel(exe, "none", &none),
                          WM_ERR_NOT_FOUND, "none");
  wm_buffer *yb = upload(y, N, 64, 64 + sizeof(y));
  wm_buffer *xb = upload(x, N, 128, 128 + sizeof(x));
  wm_kernel_arg args[5] = {
      {.struct_size = sizeof(wm_kernel_arg),
       .kind = WM_ARG_BUFFER,
       .buffer = yb,
       .offset = 64},
      {.struct_size = sizeof(wm_kernel_arg),
       .kind = WM_ARG_BUFFER,
       .buffer = xb,
       .offset = 128},
      {.struct_size = sizeof(wm_kernel_arg),
       .kind = WM_ARG_SCALAR,
       .value = &a,
       .size = sizeof(a)},
      {.struct_size = sizeof(wm_kernel_arg),
       .kind = WM_ARG_SCALAR,
       .value = &start,
       .size = sizeof(start)},
      {.struct_size = sizeof(wm_kernel_arg),
       .kind = WM_ARG_SCALAR,
       .value = &end,
       .size = sizeof(end)},
  };
  wm_launch_args la = {.struct_size = sizeof(la),
                       .grid = {(N + 127) / 128, 1, 1},
                       .block = {128, 1, 1},
                       .n_args = 5,
                       .args = args};
  la.kernel = found ? k : NULL;
  wm_event *ev = NULL;
  uint32_t done = 0;
  bool ran = found && yb && xb &&
             succeeded(api->device->launch(stream, &la), "launch") &&
             succeeded(api->device->event_create(dev, &ev), "event_create") &&
             succeeded(api->device->event_record(ev, stream), "event_record") &&
             succeeded(api->device->stream_sync(stream), "stream_sync") &&
             succeeded(api->device->event_query(ev, &done), "event_query") &&
             succeeded(api->device->copy_d2h(stream, yb, 64, got, sizeof(got)),
                       "copy_d2h");
  args[1].offset = 128 + sizeof(x) + 1;  // past the end of its buffer
  bool refused = found && xb &&
                 error_is(api->device->launch(stream, &la),
                          WM_ERR_INVALID_ARGUMENT, "argument 1");
  api->device->event_destroy(ev);
  api->device->mem_free(xb);
  api->device->mem_free(yb);
  api->device->exe_destroy(exe);
  WM_CHECK(found);
  WM_CHECK(missing);
  WM_CHECK(ran);
  WM_CHECK_INT_EQ(done, 1);
  WM_CHECK_INT_EQ(mismatch(got, want, N, 1), -1);
  WM_CHECK(refused);
}

// Runs |op| on the device with |n_in| inputs |host| (of |counts| floats)
// into |out| (|n_out| floats); inputs sit at an offset in their buffers.
static bool run_library(const wm_op_desc *op, const float *const *host,
                        const size_t *counts, uint32_t n_in, float *out,
                        size_t n_out) {
  wm_op_support support = {.struct_size = sizeof(support)};
  if (!succeeded(api->library->op_query(gpu, op, &support), "op_query") ||
      support.level < WM_SUPPORT_SUPPORTED) {
    printf("  op_query: level %u, reason %u (%s)\n", support.level,
           support.reason, support.detail ? support.detail : "");
    return false;
  }
  wm_op_plan *plan = NULL;
  uint64_t ws_bytes = 0;
  if (!succeeded(api->library->op_plan(dev, op, &plan, &ws_bytes), "op_plan")) {
    return false;
  }
  enum { OFFSET = 320 };
  wm_buffer_view in[3], y, ws;
  wm_buffer *bufs[5] = {NULL};
  bool ok = true;
  for (uint32_t i = 0; i < n_in; i++) {
    bufs[i] =
        upload(host[i], counts[i], OFFSET, OFFSET + counts[i] * sizeof(float));
    wm_buffer_view v = {.struct_size = sizeof(v),
                        .buffer = bufs[i],
                        .offset = OFFSET,
                        .desc = op->in[i]};
    in[i] = v;
    ok = ok && bufs[i];
  }
  bufs[3] = upload(NULL, 0, 0, n_out * sizeof(float));
  bufs[4] = upload(NULL, 0, 0, ws_bytes + 64);
  wm_buffer_view yv = {
      .struct_size = sizeof(yv), .buffer = bufs[3], .desc = op->out[0]};
  wm_buffer_view wv = {.struct_size = sizeof(wv),
                       .buffer = bufs[4],
                       .offset = 64,  // the host's workspace is 64-aligned
                       .desc = {.struct_size = sizeof(wm_tensor_desc),
                                .dtype = 2,
                                .rank = 1,
                                .dims = {(int64_t)ws_bytes}}};
  y = yv;
  ws = wv;
  ok = ok && bufs[3] && bufs[4] &&
       succeeded(api->library->op_run(stream, plan, in, n_in, &y, 1, &ws),
                 "op_run") &&
       succeeded(api->device->stream_sync(stream), "stream_sync") &&
       succeeded(api->device->copy_d2h(stream, bufs[3], 0, out,
                                       n_out * sizeof(float)),
                 "copy_d2h");
  for (int i = 0; i < 5; i++) {
    if (bufs[i]) {
      api->device->mem_free(bufs[i]);
    }
  }
  api->library->op_plan_destroy(plan);
  return ok;
}

// A batched MatMul of A [ba0, ba1, m, k] and B [bb0, bb1, k, n] with numpy
// broadcasting of the batch dims, into y [max, max, m, n].
static void matmul_loop(const float *a, const int64_t *ad, const float *b,
                        const int64_t *bd, float *y) {
  int64_t m = ad[2], k = ad[3], n = bd[3];
  int64_t d0 = ad[0] > bd[0] ? ad[0] : bd[0];
  int64_t d1 = ad[1] > bd[1] ? ad[1] : bd[1];
  for (int64_t i0 = 0; i0 < d0; i0++) {
    for (int64_t i1 = 0; i1 < d1; i1++) {
      const float *pa = a + ((i0 % ad[0]) * ad[1] + (i1 % ad[1])) * m * k;
      const float *pb = b + ((i0 % bd[0]) * bd[1] + (i1 % bd[1])) * k * n;
      float *py = y + (i0 * d1 + i1) * m * n;
      for (int64_t r = 0; r < m; r++) {
        for (int64_t c = 0; c < n; c++) {
          double s = 0;
          for (int64_t j = 0; j < k; j++) {
            s += (double)pa[r * k + j] * pb[j * n + c];
          }
          py[r * n + c] = (float)s;
        }
      }
    }
  }
}

WM_TEST(gpu_matmul_matches_a_cpu_loop) {
  static const int64_t shapes[][2][4] = {
      {{2, 3, 17, 33}, {1, 1, 33, 9}},  // B broadcast: one strided call
      {{2, 1, 5, 64}, {1, 3, 64, 7}},   // looped over dim 0
      {{1, 4, 31, 1}, {1, 4, 1, 12}},   // k of 1
  };
  static float a[2 * 4 * 31 * 64], b[2 * 4 * 64 * 33], y[6 * 31 * 33];
  static float want[6 * 31 * 33];
  for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
    const int64_t *ad = shapes[s][0], *bd = shapes[s][1];
    int64_t yd[4] = {ad[0] > bd[0] ? ad[0] : bd[0],
                     ad[1] > bd[1] ? ad[1] : bd[1], ad[2], bd[3]};
    size_t na = (size_t)(ad[0] * ad[1] * ad[2] * ad[3]);
    size_t nb = (size_t)(bd[0] * bd[1] * bd[2] * bd[3]);
    size_t ny = (size_t)(yd[0] * yd[1] * yd[2] * yd[3]);
    fill(a, na, 11 + s);
    fill(b, nb, 13 + s);
    matmul_loop(a, ad, b, bd, want);
    wm_tensor_desc in[2] = {desc(4, ad), desc(4, bd)}, out = desc(4, yd);
    wm_op_desc op = op_of("MatMul", in, 2, &out);
    const float *host[2] = {a, b};
    size_t counts[2] = {na, nb};
    WM_CHECK(run_library(&op, host, counts, 2, y, ny));
    WM_CHECK_INT_EQ(mismatch(y, want, ny, (double)ad[3]), -1);
  }
}

WM_TEST(gpu_gemm_with_transposes_and_broadcast_c_matches_a_cpu_loop) {
  enum { M = 19, K = 23, N = 11 };
  static const int64_t ad[] = {K, M}, bd[] = {N, K}, cd[] = {N}, yd[] = {M, N};
  float a[K * M], b[N * K], c[N], y[M * N], want[M * N];
  fill(a, K * M, 21);
  fill(b, N * K, 22);
  fill(c, N, 23);
  float alpha = 0.5f, beta = -2.0f;
  for (int r = 0; r < M; r++) {
    for (int col = 0; col < N; col++) {
      double s = 0;
      for (int j = 0; j < K; j++) {
        s += (double)a[j * M + r] * b[col * K + j];  // A^T B^T
      }
      want[r * N + col] = (float)(alpha * s + beta * c[col]);
    }
  }
  wm_tensor_desc in[3] = {desc(2, ad), desc(2, bd), desc(1, cd)};
  wm_tensor_desc out = desc(2, yd);
  wm_op_attr attrs[4] = {
      {.struct_size = sizeof(wm_op_attr), .name = "transA", .type = 2, .i = 1},
      {.struct_size = sizeof(wm_op_attr), .name = "transB", .type = 2, .i = 1},
      {.struct_size = sizeof(wm_op_attr),
       .name = "alpha",
       .type = 1,
       .f = alpha},
      {.struct_size = sizeof(wm_op_attr), .name = "beta", .type = 1, .f = beta},
  };
  wm_op_desc op = op_of("Gemm", in, 3, &out);
  op.n_attr = 4;
  op.attrs = attrs;
  const float *host[3] = {a, b, c};
  size_t counts[3] = {K * M, N * K, N};
  WM_CHECK(run_library(&op, host, counts, 3, y, M * N));
  WM_CHECK_INT_EQ(mismatch(y, want, M * N, K), -1);
}

// Conv of x [n, c, h, w] with w [m, c / g, k, k] and bias, square windows,
// into y [n, m, oh, ow].
static void conv_loop(const float *x, const int64_t *xd, const float *w,
                      const int64_t *wd, const float *bias,
                      const conv_params_t *p, float *y, const int64_t *yd) {
  int64_t g = p->attrs[4].i, cg = xd[1] / g, mg = wd[0] / g;
  for (int64_t n = 0; n < yd[0]; n++) {
    for (int64_t m = 0; m < yd[1]; m++) {
      for (int64_t oy = 0; oy < yd[2]; oy++) {
        for (int64_t ox = 0; ox < yd[3]; ox++) {
          double s = bias ? bias[m] : 0;
          for (int64_t c = 0; c < cg; c++) {
            for (int64_t ky = 0; ky < wd[2]; ky++) {
              for (int64_t kx = 0; kx < wd[3]; kx++) {
                int64_t iy =
                    oy * p->strides[0] - p->pads[0] + ky * p->dilations[0];
                int64_t ix =
                    ox * p->strides[1] - p->pads[1] + kx * p->dilations[1];
                if (iy < 0 || iy >= xd[2] || ix < 0 || ix >= xd[3]) {
                  continue;
                }
                int64_t ci = m / mg * cg + c;
                s += (double)x[((n * xd[1] + ci) * xd[2] + iy) * xd[3] + ix] *
                     w[((m * cg + c) * wd[2] + ky) * wd[3] + kx];
              }
            }
          }
          y[((n * yd[1] + m) * yd[2] + oy) * yd[3] + ox] = (float)s;
        }
      }
    }
  }
}

WM_TEST(gpu_conv_matches_a_cpu_loop) {
  // {k, stride, dilation, pad, group} and the shapes they go with.
  static const int64_t cases[][5] = {
      {3, 2, 1, 1, 2}, {1, 1, 1, 0, 1}, {3, 1, 2, 2, 4}};
  static float x[2 * 8 * 13 * 13], w[8 * 8 * 9], bias[8];
  static float y[2 * 8 * 13 * 13], want[2 * 8 * 13 * 13];
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const int64_t *c = cases[i];
    int64_t xd[4] = {2, 8, 13, 13}, wd[4] = {8, 8 / c[4], c[0], c[0]};
    conv_params_t p;
    conv_params_init(&p, c[0], c[1], c[2], c[3], c[4]);
    int64_t span = c[2] * (c[0] - 1) + 1;
    int64_t o = (13 + 2 * c[3] - span) / c[1] + 1;
    int64_t yd[4] = {2, 8, o, o};
    size_t nx = 2 * 8 * 13 * 13, nw = (size_t)(wd[0] * wd[1] * wd[2] * wd[3]);
    size_t ny = (size_t)(2 * 8 * o * o);
    fill(x, nx, 31 + i);
    fill(w, nw, 37 + i);
    fill(bias, 8, 41 + i);
    conv_loop(x, xd, w, wd, bias, &p, want, yd);
    static const int64_t bd[] = {8};
    wm_tensor_desc in[3] = {desc(4, xd), desc(4, wd), desc(1, bd)};
    wm_tensor_desc out = desc(4, yd);
    wm_op_desc op = op_of("Conv", in, 3, &out);
    op.n_param = 5;
    op.params = p.attrs;
    const float *host[3] = {x, w, bias};
    size_t counts[3] = {nx, nw, 8};
    WM_CHECK(run_library(&op, host, counts, 3, y, ny));
    WM_CHECK_INT_EQ(mismatch(y, want, ny, (double)(wd[1] * wd[2] * wd[3])), -1);
  }
}

int main(void) {
  snprintf(cache_dir, sizeof(cache_dir), "/tmp/wmap-cuda-test-XXXXXX");
  if (!mkdtemp(cache_dir)) {
    printf("cannot make a cache folder under /tmp\n");
    return 1;
  }
  load_plugin();
  static const wm_test_case_t here[] = {
      WM_CASE(query_loads_or_refuses_naming_the_driver_or_device),
      WM_CASE(registry_lists_a_refused_plugin_with_its_reason),
      WM_CASE(nvrtc_arch_is_sm_when_known_else_ptx_of_an_older_one),
      WM_CASE(nvrtc_compiles_into_the_cache_then_hits_it),
      WM_CASE(nvrtc_ptx_for_a_compute_arch_and_options_make_new_keys),
      WM_CASE(nvrtc_broken_source_is_invalid_argument_quoting_the_log),
      WM_CASE(nvrtc_refuses_bad_options_nul_bytes_and_archs),
      WM_CASE(library_kernels_compile),
      WM_CASE(library_matmul_broadcasts_with_few_strided_calls),
      WM_CASE(library_gemm_takes_a_c_that_broadcasts),
      WM_CASE(library_conv_reads_the_resolved_parameters),
      {NULL, NULL},
  };
  static const wm_test_case_t on_device[] = {
      WM_CASE(gpu_claims_come_from_the_description),
      WM_CASE(gpu_memory_round_trips_at_offsets),
      WM_CASE(gpu_launch_follows_the_cuda_c_convention),
      WM_CASE(gpu_matmul_matches_a_cpu_loop),
      WM_CASE(gpu_gemm_with_transposes_and_broadcast_c_matches_a_cpu_loop),
      WM_CASE(gpu_conv_matches_a_cpu_loop),
      {NULL, NULL},
  };
  // cuBLAS runs only on the real driver.
  static const wm_test_case_t on_mock[] = {
      WM_CASE(gpu_claims_come_from_the_description),
      WM_CASE(gpu_memory_round_trips_at_offsets),
      WM_CASE(gpu_launch_follows_the_cuda_c_convention),
      {NULL, NULL},
  };
  mock = getenv("WMAP_CUDA_TEST_MOCK") != NULL;
  int rc = wm_test_main(here);
  remove_cache();
  if (rc == 0 && !api) {
    printf("no CUDA device: %s\n", refusal);
    rc = 77;
  } else if (rc == 0) {
    const wm_target_desc *const *targets = NULL;
    uint32_t n = 0;
    wm_error *e = api->enumerate(&targets, &n);
    if (!e && n > 0) {
      gpu = targets[0];
      e = api->device_open(gpu, &dev);
    }
    if (!e && dev) {
      e = api->device->stream_create(dev, &stream);
    }
    if (e || !stream) {
      printf("opening the first CUDA device: %s\n",
             e ? api->error_message(e) : "no device enumerated");
      rc = 1;
    } else {
      rc = wm_test_main(mock ? on_mock : on_device);
    }
    if (e) {
      api->error_destroy(e);
    }
    if (stream) {
      api->device->stream_destroy(stream);
    }
    if (dev) {
      api->device->device_close(dev);
    }
  }
  if (mock && api) {
    // Loaded by the plugin from LD_LIBRARY_PATH; this finds it again.
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *sym = driver ? dlsym(driver, "wmap_mock_cuda_held") : NULL;
    int (*held)(void) = NULL;
    memcpy(&held, &sym, sizeof(held));
    if (!held || held() != 0) {
      printf(
          "FAIL the plugin holds %d contexts, pushes or objects of the "
          "stand-in driver after closing\n",
          held ? held() : -1);
      rc = 1;
    }
    if (driver) {
      dlclose(driver);
    }
  }
  if (plugin) {
    dlclose(plugin);
  }
  return rc;
}
