// Tests of the opencl backend plugin, dlopened and loaded as the host
// loads it (wm_backend_create_ex): the targets, memory and copies, kernels
// written by hand in the opencl-c calling convention and launched, build
// errors, the program-binary cache and events. Skipped (77) where there is
// no OpenCL device, and under AddressSanitizer, where the plugin refuses
// to start the driver.
#include <dirent.h>
#include <dlfcn.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wm_test.h"
#include "wmap/plugin.h"

#ifndef WMAP_OPENCL_PLUGIN
#error "WMAP_OPENCL_PLUGIN must name the built plugin"
#endif

// Kernels in the convention: a buffer is a pointer and a byte offset.
static const char kSource[] =
    "__kernel void axpy(__global float *yb, ulong yo,\n"
    "                   __global const float *xb, ulong xo, float a,\n"
    "                   long start, long end) {\n"
    "  long i = start + (long)get_global_id(0);\n"
    "  if (i >= end) return;\n"
    "  __global float *y = (__global float *)((__global char *)yb + yo);\n"
    "  __global const float *x =\n"
    "      (__global const float *)((__global const char *)xb + xo);\n"
    "  y[i] += a * x[i];\n"
    "}\n"
    "__kernel void group_sum(__global float *ob, ulong oo,\n"
    "                        __global const float *xb, ulong xo,\n"
    "                        __local float *tmp) {\n"
    "  __global float *o = (__global float *)((__global char *)ob + oo);\n"
    "  __global const float *x =\n"
    "      (__global const float *)((__global const char *)xb + xo);\n"
    "  size_t l = get_local_id(0);\n"
    "  tmp[l] = x[get_global_id(0)];\n"
    "  for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    if (l < s) tmp[l] += tmp[l + s];\n"
    "  }\n"
    "  if (l == 0) o[get_group_id(0)] = tmp[0];\n"
    "}\n"
    "__kernel void coords(__global int *ob, ulong oo, int width) {\n"
    "  __global int *o = (__global int *)((__global char *)ob + oo);\n"
    "  size_t x = get_global_id(0), y = get_global_id(1);\n"
    "  o[y * width + x] = (int)(x + 1000 * y);\n"
    "}\n";

static wm_backend_t *be;           // the plugin
static const wm_device_tier *dt;   // its device tier
static const wm_target_desc *tgt;  // target 0
static wm_device *dev;             // opened on target 0
static wm_stream *stream;          // on |dev|
static wm_executable *main_exe;    // kSource, built once
static char cache_home[64];        // XDG_CACHE_HOME of the test

// A plugin call's error as a status naming the call.
#define CALL(expr) wm_backend_error(be, (expr), #expr)

// kSource built, compiled on first use; NULL when it fails.
static wm_executable *main_program(void) {
  if (!main_exe) {
    wm_status_t s = CALL(dt->compile(dev, "opencl-c", kSource,
                                     sizeof(kSource) - 1, NULL, &main_exe));
    if (s) {
      fprintf(stderr, "building the test kernels: %s\n", wm_status_message(s));
      wm_status_free(s);
    }
  }
  return main_exe;
}

// A buffer of |n| bytes holding |data| (when not NULL).
static wm_buffer *buffer_with(const void *data, uint64_t n) {
  wm_buffer *b = NULL;
  wm_status_t s = CALL(dt->mem_alloc(dev, n, 64, WM_MEM_DEVICE_LOCAL, &b));
  if (!s && data) {
    s = CALL(dt->copy_h2d(stream, data, b, 0, n));
  }
  if (s) {
    fprintf(stderr, "buffer_with: %s\n", wm_status_message(s));
    wm_status_free(s);
  }
  return b;
}

static wm_kernel_arg buffer_arg(wm_buffer *b, uint64_t offset) {
  wm_kernel_arg a = {.struct_size = sizeof(a),
                     .kind = WM_ARG_BUFFER,
                     .buffer = b,
                     .offset = offset};
  return a;
}

static wm_kernel_arg scalar_arg(const void *value, uint64_t size) {
  wm_kernel_arg a = {.struct_size = sizeof(a),
                     .kind = WM_ARG_SCALAR,
                     .value = value,
                     .size = size};
  return a;
}

// The kernel |name| of kSource, or NULL.
static wm_kernel *kernel(const char *name) {
  wm_kernel *k = NULL;
  wm_executable *exe = main_program();
  wm_status_t s = exe ? CALL(dt->exe_get_kernel(exe, name, &k)) : NULL;
  wm_status_free(s);
  return k;
}

WM_TEST(enumerate_describes_every_device_with_its_limits) {
  uint32_t n = wm_backend_target_count(be);
  WM_CHECK(n >= 1);
  for (uint32_t i = 0; i < n; i++) {
    const wm_target_desc *t = wm_backend_target(be, i);
    WM_CHECK(WM_HAS(t, wm_target_desc, subgroup_size));
    WM_CHECK_INT_EQ(t->index, i);
    WM_CHECK(strstr(t->name, " (") != NULL);  // "<device> (<platform>)"
    WM_CHECK(t->kind >= WM_TARGET_CPU && t->kind <= WM_TARGET_ACCELERATOR);
    WM_CHECK_INT_EQ(t->n_formats, 1);
    WM_CHECK_STR_EQ(t->formats[0], "opencl-c");
    WM_CHECK(t->memory_bytes > 0);
    WM_CHECK(t->compute_units > 0);
    WM_CHECK(t->max_group_size > 0);
    WM_CHECK(t->local_memory_bytes > 0);
    WM_CHECK(t->dtype_mask & (1u << 1));  // float
    WM_CHECK(t->dtype_mask & (1u << 6));  // int32
  }
  WM_CHECK_STR_EQ(wm_backend_name(be), "opencl");
}

WM_TEST(format_support_answers_opencl_c_alone) {
  uint32_t level = 0;
  WM_CHECK_OK(CALL(dt->format_support(tgt, "opencl-c", &level)));
  WM_CHECK_INT_EQ(level, WM_SUPPORT_SUPPORTED);
  WM_CHECK_OK(CALL(dt->format_support(tgt, "c", &level)));
  WM_CHECK_INT_EQ(level, WM_SUPPORT_NONE);
  WM_CHECK_OK(CALL(dt->format_support(tgt, "cuda-c", &level)));
  WM_CHECK_INT_EQ(level, WM_SUPPORT_NONE);
}

WM_TEST(copies_round_trip_at_offsets_and_new_buffers_are_zero) {
  wm_buffer *b = buffer_with(NULL, 256);
  WM_CHECK(b);
  unsigned char in[100], out[256];
  for (int i = 0; i < 100; i++) {
    in[i] = (unsigned char)(i * 7 + 1);
  }
  wm_status_t s = CALL(dt->copy_h2d(stream, in, b, 12, sizeof(in)));
  s = s ? s : CALL(dt->copy_d2h(stream, b, 0, out, sizeof(out)));
  dt->mem_free(b);
  WM_CHECK_OK(s);
  for (int i = 0; i < 256; i++) {
    WM_CHECK_INT_EQ(out[i], i >= 12 && i < 112 ? in[i - 12] : 0);
  }
}

WM_TEST(copies_out_of_range_are_refused) {
  wm_buffer *b = buffer_with(NULL, 256), *c = buffer_with(NULL, 64);
  WM_CHECK(b && c);
  unsigned char data[128] = {0};
  WM_CHECK_ERR(CALL(dt->copy_h2d(stream, data, b, 200, 100)), OUT_OF_RANGE,
               "100 bytes at offset 200 overrun the buffer of 256 bytes");
  WM_CHECK_ERR(CALL(dt->copy_d2h(stream, b, UINT64_MAX, data, 1)), OUT_OF_RANGE,
               "overrun the buffer of 256 bytes");
  WM_CHECK_ERR(CALL(dt->copy_d2d(stream, b, 0, c, 0, 65)), OUT_OF_RANGE,
               "overrun the buffer of 64 bytes");
  WM_CHECK_ERR(CALL(dt->copy_d2d(stream, b, 0, b, 8, 16)), INVALID_ARGUMENT,
               "overlap");
  dt->mem_free(b);
  dt->mem_free(c);
}

WM_TEST(d2d_copies_between_buffers_in_stream_order) {
  float in[16], out[16];
  for (int i = 0; i < 16; i++) {
    in[i] = (float)i + 0.5f;
  }
  wm_buffer *a = buffer_with(in, sizeof(in)), *b = buffer_with(NULL, 64);
  WM_CHECK(a && b);
  wm_status_t s = CALL(dt->copy_d2d(stream, a, 8, b, 16, 32));
  s = s ? s : CALL(dt->copy_d2h(stream, b, 0, out, sizeof(out)));
  dt->mem_free(a);
  dt->mem_free(b);
  WM_CHECK_OK(s);
  for (int i = 0; i < 16; i++) {
    WM_CHECK_DBL_NEAR(out[i], i >= 4 && i < 12 ? in[i - 2] : 0.0f, 0);
  }
}

WM_TEST(mem_alloc_refuses_what_the_device_cannot_give) {
  wm_buffer *b = NULL;
  WM_CHECK_ERR(CALL(dt->mem_alloc(dev, 64, 3, WM_MEM_DEVICE_LOCAL, &b)),
               INVALID_ARGUMENT, "alignment 3 is not a power of two");
  WM_CHECK_ERR(CALL(dt->mem_alloc(dev, 64, 1 << 20, WM_MEM_DEVICE_LOCAL, &b)),
               INVALID_ARGUMENT, "aligns buffers to");
  WM_CHECK_ERR(CALL(dt->mem_alloc(dev, tgt->memory_bytes + 1, 64,
                                  WM_MEM_DEVICE_LOCAL, &b)),
               RESOURCE_EXHAUSTED, "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
  WM_CHECK(b == NULL);
}

WM_TEST(axpy_runs_at_offsets_over_a_partial_last_group) {
  enum { N = 1000, PAD = 8 };  // PAD floats past the end catch overruns
  static float x[N + PAD], y[N + PAD], out[N + PAD];
  for (int i = 0; i < N + PAD; i++) {
    x[i] = (float)(i % 13);
    y[i] = (float)i;
  }
  wm_kernel *k = kernel("axpy");
  WM_CHECK(k);
  // y lies 16 bytes into its buffer, x 32.
  wm_buffer *yb = buffer_with(NULL, 16 + sizeof(y));
  wm_buffer *xb = buffer_with(NULL, 32 + sizeof(x));
  WM_CHECK(yb && xb);
  float a = 2.0f;
  int64_t start = 3, end = N;
  wm_kernel_arg args[] = {
      buffer_arg(yb, 16), buffer_arg(xb, 32), scalar_arg(&a, sizeof(a)),
      scalar_arg(&start, sizeof(start)), scalar_arg(&end, sizeof(end))};
  wm_launch_args la = {.struct_size = sizeof(la),
                       .kernel = k,
                       .grid = {(N - 3 + 63) / 64, 1, 1},
                       .block = {64, 1, 1},
                       .n_args = 5,
                       .args = args};
  wm_status_t s = CALL(dt->copy_h2d(stream, y, yb, 16, sizeof(y)));
  s = s ? s : CALL(dt->copy_h2d(stream, x, xb, 32, sizeof(x)));
  s = s ? s : CALL(dt->launch(stream, &la));
  s = s ? s : CALL(dt->copy_d2h(stream, yb, 16, out, sizeof(out)));
  dt->mem_free(yb);
  dt->mem_free(xb);
  WM_CHECK_OK(s);
  for (int i = 0; i < N + PAD; i++) {
    WM_CHECK_DBL_NEAR(out[i], i >= 3 && i < N ? y[i] + 2.0f * x[i] : y[i], 0);
  }
}

WM_TEST(local_memory_is_the_last_parameter) {
  enum { BLOCK = 64, GROUPS = 4 };
  float x[BLOCK * GROUPS], out[GROUPS + 1] = {0};
  for (int i = 0; i < BLOCK * GROUPS; i++) {
    x[i] = (float)(i % 5);
  }
  wm_kernel *k = kernel("group_sum");
  wm_buffer *xb = buffer_with(x, sizeof(x)), *ob = buffer_with(NULL, 64);
  WM_CHECK(k && xb && ob);
  wm_kernel_arg args[] = {buffer_arg(ob, 4), buffer_arg(xb, 0)};
  wm_launch_args la = {.struct_size = sizeof(la),
                       .kernel = k,
                       .grid = {GROUPS, 1, 1},
                       .block = {BLOCK, 1, 1},
                       .shared_bytes = BLOCK * sizeof(float),
                       .n_args = 2,
                       .args = args};
  wm_status_t s = CALL(dt->launch(stream, &la));
  s = s ? s : CALL(dt->copy_d2h(stream, ob, 0, out, sizeof(out)));
  dt->mem_free(xb);
  dt->mem_free(ob);
  WM_CHECK_OK(s);
  WM_CHECK_DBL_NEAR(out[0], 0, 0);
  for (int g = 0; g < GROUPS; g++) {
    float want = 0;
    for (int i = 0; i < BLOCK; i++) {
      want += x[g * BLOCK + i];
    }
    WM_CHECK_DBL_NEAR(out[g + 1], want, 0);
  }
}

WM_TEST(a_two_dimensional_grid_covers_every_work_item) {
  enum { W = 3 * 4, H = 2 * 2 };
  int32_t out[W * H];
  wm_kernel *k = kernel("coords");
  wm_buffer *ob = buffer_with(NULL, sizeof(out));
  WM_CHECK(k && ob);
  int32_t width = W;
  wm_kernel_arg args[] = {buffer_arg(ob, 0), scalar_arg(&width, 4)};
  wm_launch_args la = {.struct_size = sizeof(la),
                       .kernel = k,
                       .grid = {3, 2, 1},
                       .block = {4, 2, 1},
                       .n_args = 2,
                       .args = args};
  wm_status_t s = CALL(dt->launch(stream, &la));
  s = s ? s : CALL(dt->copy_d2h(stream, ob, 0, out, sizeof(out)));
  dt->mem_free(ob);
  WM_CHECK_OK(s);
  for (int y = 0; y < H; y++) {
    for (int x = 0; x < W; x++) {
      WM_CHECK_INT_EQ(out[y * W + x], x + 1000 * y);
    }
  }
}

WM_TEST(launches_that_do_not_fit_are_refused) {
  wm_kernel *k = kernel("coords");
  wm_buffer *ob = buffer_with(NULL, 64);
  WM_CHECK(k && ob);
  int32_t width = 1;
  wm_kernel_arg args[] = {buffer_arg(ob, 0), scalar_arg(&width, 4)};
  wm_launch_args la = {.struct_size = sizeof(la),
                       .kernel = k,
                       .grid = {1, 1, 1},
                       .block = {tgt->max_group_size, 2, 1},
                       .n_args = 2,
                       .args = args};
  WM_CHECK_ERR(CALL(dt->launch(stream, &la)), INVALID_ARGUMENT, "work items; ");
  la.block[1] = 1;
  args[0].offset = 65;
  WM_CHECK_ERR(CALL(dt->launch(stream, &la)), OUT_OF_RANGE,
               "offset 65 is past the end of its buffer of 64 bytes");
  args[0].offset = 0;
  la.n_args = 1;
  WM_CHECK_ERR(CALL(dt->launch(stream, &la)), INVALID_ARGUMENT,
               "1 arguments make 2 parameters");
  la.n_args = 2;
  la.shared_bytes = UINT32_MAX;
  WM_CHECK_ERR(CALL(dt->launch(stream, &la)), RESOURCE_EXHAUSTED,
               "bytes of local memory");
  la.shared_bytes = 0;
  args[1].size = 8;  // an int parameter given a long
  WM_CHECK_ERR(CALL(dt->launch(stream, &la)), INVALID_ARGUMENT,
               "CL_INVALID_ARG_SIZE");
  dt->mem_free(ob);
}

WM_TEST(build_errors_quote_the_build_log) {
  static const char bad[] =
      "__kernel void f(__global float *o, ulong oo) {\n"
      "  o[0] = undeclared_thing;\n"
      "}\n";
  wm_executable *exe = NULL;
  WM_CHECK_ERR(
      CALL(dt->compile(dev, "opencl-c", bad, sizeof(bad) - 1, NULL, &exe)),
      INVALID_ARGUMENT, "undeclared_thing");
  WM_CHECK_ERR(CALL(dt->compile(dev, "opencl-c", bad, sizeof(bad), NULL, &exe)),
               INVALID_ARGUMENT, "NUL byte");
  WM_CHECK_ERR(CALL(dt->compile(dev, "opencl-c", bad, sizeof(bad) - 1,
                                "-cl-std=CL1.2\n-DX", &exe)),
               INVALID_ARGUMENT, "newline");
  WM_CHECK_ERR(CALL(dt->compile(dev, "c", bad, sizeof(bad) - 1, NULL, &exe)),
               INVALID_ARGUMENT, "format \"c\"");
  WM_CHECK(exe == NULL);
}

WM_TEST(a_missing_kernel_is_not_found) {
  wm_executable *exe = main_program();
  WM_CHECK(exe);
  wm_kernel *k = NULL;
  WM_CHECK_ERR(CALL(dt->exe_get_kernel(exe, "no_such_kernel", &k)), NOT_FOUND,
               "no kernel \"no_such_kernel\"");
  WM_CHECK(k == NULL);
  WM_CHECK(kernel("axpy") == kernel("axpy"));  // one handle per name
}

// The inode of |path|, 0 when it does not exist.
static ino_t inode_of(const char *path, off_t *out_size) {
  struct stat st;
  if (stat(path, &st) != 0) {
    return 0;
  }
  *out_size = st.st_size;
  return st.st_ino;
}

// Counts the .bin files of the cache folder, the last one's path into
// |out|; removes them too when |remove_them|.
static int cached_binaries(char *out, size_t cap, bool remove_them) {
  char dir[128];
  snprintf(dir, sizeof(dir), "%s/wmap/opencl", cache_home);
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    size_t len = strlen(e->d_name);
    if (len > 4 && strcmp(e->d_name + len - 4, ".bin") == 0) {
      snprintf(out, cap, "%s/%s", dir, e->d_name);
      n += !remove_them || remove(out) == 0;
    }
  }
  if (d) {
    closedir(d);
  }
  return n;
}

// Builds |src| and runs its kernel "fill" over 4 work items, checking
// that it wrote 7s; false (printed) on failure.
static bool build_and_fill(const char *src) {
  wm_executable *exe = NULL;
  wm_kernel *k = NULL;
  wm_buffer *b = buffer_with(NULL, 16);
  int32_t out[4] = {0};
  wm_status_t s = CALL(
      dt->compile(dev, "opencl-c", src, strlen(src), "-cl-std=CL1.2", &exe));
  s = s ? s : CALL(dt->exe_get_kernel(exe, "fill", &k));
  wm_kernel_arg arg = buffer_arg(b, 0);
  wm_launch_args la = {.struct_size = sizeof(la),
                       .kernel = k,
                       .grid = {1, 1, 1},
                       .block = {4, 1, 1},
                       .n_args = 1,
                       .args = &arg};
  s = s ? s : CALL(dt->launch(stream, &la));
  s = s ? s : CALL(dt->copy_d2h(stream, b, 0, out, sizeof(out)));
  dt->exe_destroy(exe);
  dt->mem_free(b);
  if (s) {
    fprintf(stderr, "build_and_fill: %s\n", wm_status_message(s));
    wm_status_free(s);
    return false;
  }
  return out[0] == 7 && out[3] == 7;
}

WM_TEST(program_binaries_are_cached_and_a_damaged_one_rebuilt) {
  // The test's own cache folder holds the binaries of the earlier tests'
  // programs; it is emptied first.
  char path[512];
  cached_binaries(path, sizeof(path), true);
  WM_CHECK_INT_EQ(cached_binaries(path, sizeof(path), false), 0);
  static const char src[] =
      "__kernel void fill(__global int *ob, ulong oo) {\n"
      "  ((__global int *)((__global char *)ob + oo))[get_global_id(0)] = 7;\n"
      "}\n";
  WM_CHECK(build_and_fill(src));
  WM_CHECK_INT_EQ(cached_binaries(path, sizeof(path), false), 1);
  off_t size = 0, size2 = 0;
  ino_t first = inode_of(path, &size);
  WM_CHECK(first != 0 && size > 0);
  // A hit loads the file and leaves it as it is.
  WM_CHECK(build_and_fill(src));
  WM_CHECK_INT_EQ(inode_of(path, &size2), first);
  // A damaged entry (same file, other bytes) is rebuilt and replaced.
  FILE *f = fopen(path, "r+b");
  WM_CHECK(f);
  for (off_t i = 0; i < size; i++) {
    fputc(0x5a, f);
  }
  fclose(f);
  WM_CHECK(build_and_fill(src));
  ino_t rebuilt = inode_of(path, &size2);
  WM_CHECK(rebuilt != 0 && rebuilt != first);
  // The new entry is a good one: the next build is a hit again.
  WM_CHECK(build_and_fill(src));
  WM_CHECK_INT_EQ(inode_of(path, &size2), rebuilt);
}

WM_TEST(events_order_one_stream_after_another) {
  wm_stream *other = NULL;
  wm_event *ev = NULL, *never = NULL;
  WM_CHECK_OK(CALL(dt->stream_create(dev, &other)));
  wm_status_t s = CALL(dt->event_create(dev, &ev));
  s = s ? s : CALL(dt->event_create(dev, &never));
  float in[64], out[64];
  for (int i = 0; i < 64; i++) {
    in[i] = (float)i;
  }
  wm_buffer *a = buffer_with(in, sizeof(in)), *b = buffer_with(NULL, 256);
  uint32_t done = 0, never_done = 0;
  s = s ? s : CALL(dt->copy_d2d(stream, a, 0, b, 0, sizeof(in)));
  s = s ? s : CALL(dt->event_record(ev, stream));
  s = s ? s : CALL(dt->event_wait(other, ev));
  s = s ? s : CALL(dt->copy_d2h(other, b, 0, out, sizeof(out)));
  s = s ? s : CALL(dt->stream_sync(stream));
  s = s ? s : CALL(dt->event_query(ev, &done));
  s = s ? s : CALL(dt->event_query(never, &never_done));
  dt->event_destroy(ev);
  dt->event_destroy(never);
  dt->mem_free(a);
  dt->mem_free(b);
  dt->stream_destroy(other);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(done, 1);
  WM_CHECK_INT_EQ(never_done, 1);
  for (int i = 0; i < 64; i++) {
    WM_CHECK_DBL_NEAR(out[i], in[i], 0);
  }
}

static const wm_test_case_t cases[] = {
    WM_CASE(enumerate_describes_every_device_with_its_limits),
    WM_CASE(format_support_answers_opencl_c_alone),
    WM_CASE(copies_round_trip_at_offsets_and_new_buffers_are_zero),
    WM_CASE(copies_out_of_range_are_refused),
    WM_CASE(d2d_copies_between_buffers_in_stream_order),
    WM_CASE(mem_alloc_refuses_what_the_device_cannot_give),
    WM_CASE(axpy_runs_at_offsets_over_a_partial_last_group),
    WM_CASE(local_memory_is_the_last_parameter),
    WM_CASE(a_two_dimensional_grid_covers_every_work_item),
    WM_CASE(launches_that_do_not_fit_are_refused),
    WM_CASE(build_errors_quote_the_build_log),
    WM_CASE(a_missing_kernel_is_not_found),
    WM_CASE(program_binaries_are_cached_and_a_damaged_one_rebuilt),
    WM_CASE(events_order_one_stream_after_another),
    {NULL, NULL},
};

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

// Loads the plugin and opens target 0; 77 when there is no OpenCL device,
// 1 on another failure, 0 when ready.
static int set_up(void) {
  void *handle = dlopen(WMAP_OPENCL_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  void *sym = handle ? dlsym(handle, WM_PLUGIN_QUERY_SYMBOL) : NULL;
  if (!sym) {
    fprintf(stderr, "cannot load %s: %s\n", WMAP_OPENCL_PLUGIN, dlerror());
    return 1;
  }
  wm_plugin_query_fn query;
  memcpy(&query, &sym, sizeof(query));
  wm_status_t s =
      wm_backend_create_ex(query, WMAP_OPENCL_PLUGIN, 0, handle, &be);
  if (s) {
    bool skip = wm_status_code(s) == WM_STATUS_UNAVAILABLE;
    printf("%s: %s\n", skip ? "skipped" : "failed", wm_status_message(s));
    wm_status_free(s);
    return skip ? 77 : 1;
  }
  dt = wm_backend_api(be)->device;
  tgt = wm_backend_target(be, 0);
  s = CALL(wm_backend_api(be)->device_open(tgt, &dev));
  s = s ? s : CALL(dt->stream_create(dev, &stream));
  if (s) {
    printf("failed: %s\n", wm_status_message(s));
    wm_status_free(s);
    return 1;
  }
  return 0;
}

int main(void) {
#if defined(__SANITIZE_ADDRESS__)
  const bool address_sanitizer = true;
#else
  const bool address_sanitizer = false;
#endif
  if (address_sanitizer) {
    printf(
        "skipped: the OpenCL driver's own allocations are not ours to check "
        "under AddressSanitizer (the plugin does not start it there)\n");
    return 77;
  }
  snprintf(cache_home, sizeof(cache_home), "/tmp/wmap_opencl_test_XXXXXX");
  if (!mkdtemp(cache_home) || setenv("XDG_CACHE_HOME", cache_home, 1) != 0) {
    perror("making the test's cache folder");
    return 1;
  }
  int rc = set_up();
  if (rc == 0) {
    rc = wm_test_main(cases);
  }
  if (dt) {
    dt->exe_destroy(main_exe);
    dt->stream_destroy(stream);
    dt->device_close(dev);
  }
  wm_backend_destroy(be);
  nftw(cache_home, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  return rc;
}
