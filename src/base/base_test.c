// Tests of the base module: statuses, checked maths, arena, string map,
// string buffer, files (regular files only, the size cap) and allocation
// fault injection.
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wm_test.h"

WM_TEST(status_annotate_prepends_context_and_keeps_code) {
  wm_status_t s = WM_ERROR(NOT_FOUND, "value \"%s\" missing", "x");
  s = wm_status_annotate(s, "importing \"%s\"", "m.onnx");
  WM_CHECK_INT_EQ(wm_status_code(s), WM_STATUS_NOT_FOUND);
  WM_CHECK_STR_EQ(wm_status_message(s),
                  "importing \"m.onnx\": value \"x\" missing");
  WM_CHECK(strstr(wm_status_origin(s), "base_test.c:") != NULL);
  wm_status_free(s);
  WM_CHECK(wm_status_annotate(NULL, "ctx") == NULL);
  WM_CHECK_STR_EQ(wm_status_message(NULL), "ok");
}

WM_TEST(checked_mul_detects_overflow) {
  size_t out;
  WM_CHECK(wm_checked_mul(1u << 20, 1u << 20, &out));
  WM_CHECK_INT_EQ(out, (size_t)1 << 40);
  WM_CHECK(!wm_checked_mul(SIZE_MAX / 2, 3, &out));
  WM_CHECK(!wm_checked_add(SIZE_MAX, 1, &out));
}

WM_TEST(arena_returns_aligned_zeroed_memory_across_blocks) {
  wm_arena_t arena;
  wm_arena_init(&arena);
  for (int i = 0; i < 1000; i++) {
    unsigned char *p = wm_arena_alloc(&arena, (size_t)(i % 97) + 1);
    WM_CHECK(p != NULL);
    WM_CHECK(((uintptr_t)p & 15) == 0);
    WM_CHECK(p[0] == 0);
  }
  char *big = wm_arena_alloc(&arena, 100000);
  WM_CHECK(big != NULL);
  WM_CHECK_STR_EQ(wm_arena_strdup(&arena, "conv_12"), "conv_12");
  wm_arena_deinit(&arena);
}

WM_TEST(strmap_finds_every_key_after_growth) {
  wm_strmap_t map;
  wm_strmap_init(&map);
  char keys[500][16];
  for (int i = 0; i < 500; i++) {
    snprintf(keys[i], sizeof(keys[i]), "v%d", i);
    WM_CHECK_OK(wm_strmap_put(&map, keys[i], i * 3));
  }
  for (int i = 0; i < 500; i++) {
    int64_t v = -1;
    WM_CHECK(wm_strmap_get(&map, keys[i], &v));
    WM_CHECK_INT_EQ(v, i * 3);
  }
  WM_CHECK(!wm_strmap_get(&map, "absent", NULL));
  WM_CHECK_INT_EQ(map.count, 500);
  wm_strmap_deinit(&map);
}

WM_TEST(strbuf_escapes_json_strings) {
  wm_strbuf_t b;
  wm_strbuf_init(&b);
  wm_strbuf_json_string(&b, "a\"b\\c\n\x01");
  WM_CHECK_STR_EQ(wm_strbuf_str(&b), "\"a\\\"b\\\\c\\n\\u0001\"");
  wm_strbuf_deinit(&b);
}

WM_TEST(file_read_names_a_missing_file) {
  uint8_t *data;
  size_t size;
  WM_CHECK_ERR(wm_file_read("/nonexistent/x.onnx", &data, &size), NOT_FOUND,
               "cannot open \"/nonexistent/x.onnx\"");
  WM_CHECK(data == NULL);
}

WM_TEST(file_read_refuses_a_fifo_at_once) {
  char dir[] = "/tmp/wm_base_test_XXXXXX";
  WM_CHECK(mkdtemp(dir) != NULL);
  char fifo[64];
  snprintf(fifo, sizeof(fifo), "%s/pipe", dir);
  WM_CHECK(mkfifo(fifo, 0600) == 0);
  uint8_t *data = (uint8_t *)"x";
  size_t size = 1;
  // Without a writer, a blocking open or read would never return.
  wm_status_t s = wm_file_read(fifo, &data, &size);
  unlink(fifo);
  rmdir(dir);
  WM_CHECK_ERR(s, INVALID_ARGUMENT,
               "is a FIFO (named pipe), not a regular file");
  WM_CHECK(data == NULL);
  WM_CHECK_INT_EQ(size, 0);
}

WM_TEST(file_read_refuses_devices_and_directories) {
  uint8_t *data;
  size_t size;
  WM_CHECK_ERR(wm_file_read("/dev/zero", &data, &size), INVALID_ARGUMENT,
               "\"/dev/zero\" is a character device, not a regular file");
  WM_CHECK_ERR(wm_file_read("/tmp", &data, &size), INVALID_ARGUMENT,
               "\"/tmp\" is a directory, not a regular file");
  WM_CHECK(data == NULL);
}

WM_TEST(file_read_capped_refuses_a_file_over_the_cap) {
  char path[] = "/tmp/wm_base_test_XXXXXX";
  int fd = mkstemp(path);
  WM_CHECK(fd >= 0);
  char text[3000];
  memset(text, 'a', sizeof(text));
  WM_CHECK(write(fd, text, sizeof(text)) == (ssize_t)sizeof(text));
  close(fd);
  uint8_t *data = NULL;
  size_t size = 0;
  wm_status_t s = wm_file_read_capped(path, 2048, &data, &size);
  char want[128];
  snprintf(want, sizeof(want),
           "\"%s\" is 2.9 KiB (3000 bytes), over the 2.0 KiB limit", path);
  if (!s || !strstr(wm_status_message(s), want) ||
      wm_status_code(s) != WM_STATUS_OUT_OF_RANGE) {
    wm_test_fail(__FILE__, __LINE__, "got \"%s\", want \"%s\"",
                 wm_status_message(s), want);
  }
  wm_status_free(s);
  WM_CHECK(data == NULL);
  WM_CHECK_OK(wm_file_read_capped(path, 3000, &data, &size));
  WM_CHECK_INT_EQ(size, 3000);
  WM_CHECK(data[0] == 'a' && data[2999] == 'a');
  free(data);
  unlink(path);
}

WM_TEST(alloc_fault_injection_fails_the_nth_allocation) {
  wm_alloc_fail_after(2);
  void *a = wm_malloc(8);
  void *b = wm_malloc(8);
  void *c = wm_malloc(8);
  wm_alloc_fail_after(0);
  WM_CHECK(a != NULL);
  WM_CHECK(b == NULL);
  WM_CHECK(c != NULL);
  free(a);
  free(c);
}

WM_TEST(grow_reports_exhaustion_under_fault_injection) {
  int *items = NULL;
  size_t cap = 0;
  wm_alloc_fail_after(1);
  WM_CHECK_ERR(wm_grow((void **)&items, &cap, 10, sizeof(int)),
               RESOURCE_EXHAUSTED, "out of memory");
  wm_alloc_fail_after(0);
  WM_CHECK(items == NULL);
  WM_CHECK_OK(wm_grow((void **)&items, &cap, 10, sizeof(int)));
  WM_CHECK(cap >= 10);
  free(items);
}

typedef struct sum_ctx {
  _Atomic long long total;  // sum of every index seen
  _Atomic int calls;        // ranges handed out
} sum_ctx_t;

static void add_range(void *arg, size_t begin, size_t end) {
  sum_ctx_t *c = arg;
  long long s = 0;
  for (size_t i = begin; i < end; i++) {
    s += (long long)i;
  }
  atomic_fetch_add(&c->total, s);
  atomic_fetch_add(&c->calls, 1);
}

WM_TEST(pool_for_covers_every_index_exactly_once) {
  wm_pool_t *pool;
  WM_CHECK_OK(wm_pool_create(3, &pool));
  WM_CHECK_INT_EQ(wm_pool_threads(pool), 3);
  for (size_t n = 0; n < 2000; n += 37) {
    sum_ctx_t c;
    atomic_init(&c.total, 0);
    atomic_init(&c.calls, 0);
    wm_pool_for(pool, n, 5, add_range, &c);
    WM_CHECK_INT_EQ(atomic_load(&c.total),
                    (long long)n * ((long long)n - 1) / 2);
    WM_CHECK(n == 0 || atomic_load(&c.calls) >= 1);
  }
  wm_pool_destroy(pool);
  WM_CHECK(wm_cpu_count() >= 1);
  char v[256];
  if (wm_cpuinfo_get("processor", v, sizeof(v))) {  // Linux: "0"
    WM_CHECK_STR_EQ(v, "0");
  }
  WM_CHECK(!wm_cpuinfo_get("no such key", v, sizeof(v)));
  WM_CHECK_STR_EQ(v, "");
}

WM_TEST(pool_for_without_a_pool_runs_inline) {
  sum_ctx_t c;
  atomic_init(&c.total, 0);
  atomic_init(&c.calls, 0);
  wm_pool_for(NULL, 100, 1, add_range, &c);
  WM_CHECK_INT_EQ(atomic_load(&c.total), 4950);
  WM_CHECK_INT_EQ(atomic_load(&c.calls), 1);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(status_annotate_prepends_context_and_keeps_code),
      WM_CASE(checked_mul_detects_overflow),
      WM_CASE(arena_returns_aligned_zeroed_memory_across_blocks),
      WM_CASE(strmap_finds_every_key_after_growth),
      WM_CASE(strbuf_escapes_json_strings),
      WM_CASE(file_read_names_a_missing_file),
      WM_CASE(file_read_refuses_a_fifo_at_once),
      WM_CASE(file_read_refuses_devices_and_directories),
      WM_CASE(file_read_capped_refuses_a_file_over_the_cap),
      WM_CASE(alloc_fault_injection_fails_the_nth_allocation),
      WM_CASE(grow_reports_exhaustion_under_fault_injection),
      WM_CASE(pool_for_covers_every_index_exactly_once),
      WM_CASE(pool_for_without_a_pool_runs_inline),
      {NULL, NULL}};
  return wm_test_main(cases);
}
