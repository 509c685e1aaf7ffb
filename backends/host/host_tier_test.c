// Tests of the shared host tier: errors, allocation checks, range-checked
// copies, streams and events.
#include "host_tier.h"

#include <stdlib.h>

#include "wm_test.h"

// Checks that |expr| fails with |code| and a message containing |needle|.
#define CHECK_HOST_ERR(expr, code, needle)                                     \
  do {                                                                         \
    wm_error *e_ = (expr);                                                     \
    WM_CHECK(e_ != NULL);                                                      \
    bool ok_ = wm_host_error_code(e_) == (code) &&                             \
               strstr(wm_host_error_message(e_), (needle)) != NULL;            \
    if (!ok_) {                                                                \
      wm_test_fail(__FILE__, __LINE__, "%s: got %d \"%s\", want %d %s", #expr, \
                   (int)wm_host_error_code(e_), wm_host_error_message(e_),     \
                   (int)(code), (needle));                                     \
    }                                                                          \
    wm_host_error_destroy(e_);                                                 \
    if (!ok_) {                                                                \
      return;                                                                  \
    }                                                                          \
  } while (0)

WM_TEST(error_create_formats_the_message) {
  wm_error *e = wm_host_error_create(WM_ERR_NOT_FOUND, "no %s in %d", "x", 3);
  WM_CHECK_INT_EQ(wm_host_error_code(e), WM_ERR_NOT_FOUND);
  WM_CHECK_STR_EQ(wm_host_error_message(e), "no x in 3");
  wm_host_error_destroy(e);
  wm_host_error_destroy(NULL);
}

WM_TEST(oom_error_is_static_and_survives_destroy) {
  wm_error *e = wm_host_error_oom();
  WM_CHECK_INT_EQ(wm_host_error_code(e), WM_ERR_RESOURCE_EXHAUSTED);
  WM_CHECK_STR_EQ(wm_host_error_message(e), "out of memory");
  wm_host_error_destroy(e);
  WM_CHECK(wm_host_error_oom() == e);
}

WM_TEST(negotiate_answers_the_lower_minor_and_refuses_another_major) {
  wm_plugin_api api = {.struct_size = sizeof(api)};
  WM_CHECK(wm_host_negotiate("p", WM_ABI_MAJOR, 0, &api) == NULL);
  WM_CHECK_INT_EQ(api.abi_major, WM_ABI_MAJOR);
  WM_CHECK_INT_EQ(api.abi_minor, 0);
  WM_CHECK(wm_host_negotiate("p", WM_ABI_MAJOR, 999, &api) == NULL);
  WM_CHECK_INT_EQ(api.abi_minor, WM_ABI_MINOR);
  CHECK_HOST_ERR(wm_host_negotiate("p", WM_ABI_MAJOR + 1, 0, &api),
                 WM_ERR_INCOMPATIBLE, "p speaks ABI");
}

WM_TEST(mem_alloc_is_aligned_and_zeroed) {
  wm_buffer *b;
  WM_CHECK(wm_host_mem_alloc(NULL, 100, 256, WM_MEM_HOST_VISIBLE, &b) == NULL);
  WM_CHECK_INT_EQ(b->size, 100);
  WM_CHECK_INT_EQ((uintptr_t)b->data % 256, 0);
  void *p;
  WM_CHECK(wm_host_mem_map(b, &p) == NULL);
  WM_CHECK(p == b->data);
  for (int i = 0; i < 128; i++) {
    WM_CHECK_INT_EQ(((unsigned char *)p)[i], 0);
  }
  wm_host_mem_unmap(b);
  wm_host_mem_free(b);
  WM_CHECK(wm_host_mem_alloc(NULL, 0, 0, WM_MEM_DEVICE_LOCAL, &b) == NULL);
  WM_CHECK_INT_EQ((uintptr_t)b->data % 64, 0);
  wm_host_mem_free(b);
  wm_host_mem_free(NULL);
}

WM_TEST(mem_wrap_host_uses_the_hosts_memory_and_leaves_it_on_free) {
  float *host = aligned_alloc(64, 64 * sizeof(float));
  WM_CHECK(host != NULL);
  wm_buffer *b = NULL;
  WM_CHECK(wm_host_mem_wrap_host(NULL, host, 256, &b) == NULL);
  void *p;
  WM_CHECK(wm_host_mem_map(b, &p) == NULL);
  WM_CHECK(p == host);
  WM_CHECK_INT_EQ(b->size, 256);
  float v = 1.5f;
  WM_CHECK(wm_host_copy_h2d(NULL, &v, b, 4, sizeof(v)) == NULL);
  WM_CHECK_DBL_NEAR(host[1], 1.5, 0);
  wm_host_mem_free(b);
  host[2] = 2.0f;  // still the host's (ASan would see a freed block)
  WM_CHECK_DBL_NEAR(host[2], 2.0, 0);
  CHECK_HOST_ERR(wm_host_mem_wrap_host(NULL, (char *)host + 4, 8, &b),
                 WM_ERR_INVALID_ARGUMENT, "not 16-byte aligned");
  WM_CHECK(b == NULL);
  CHECK_HOST_ERR(wm_host_mem_wrap_host(NULL, NULL, 8, &b),
                 WM_ERR_INVALID_ARGUMENT, "not 16-byte aligned");
  free(host);
}

WM_TEST(mem_alloc_rejects_bad_alignment_and_huge_sizes) {
  static wm_buffer sentinel;
  wm_buffer *b = &sentinel;
  CHECK_HOST_ERR(wm_host_mem_alloc(NULL, 8, 48, 0, &b), WM_ERR_INVALID_ARGUMENT,
                 "mem_alloc: alignment 48 is not a power of two up to 4096");
  WM_CHECK(b == NULL);
  CHECK_HOST_ERR(wm_host_mem_alloc(NULL, 8, 8192, 0, &b),
                 WM_ERR_INVALID_ARGUMENT, "alignment 8192");
  CHECK_HOST_ERR(wm_host_mem_alloc(NULL, UINT64_MAX, 64, 0, &b),
                 WM_ERR_RESOURCE_EXHAUSTED,
                 "mem_alloc: cannot allocate 18446744073709551615 bytes");
  CHECK_HOST_ERR(wm_host_mem_alloc(NULL, ((uint64_t)1 << 46) + 1, 64, 0, &b),
                 WM_ERR_RESOURCE_EXHAUSTED, "cannot allocate");
}

WM_TEST(copies_move_bytes_and_refuse_out_of_range) {
  wm_stream *s;
  WM_CHECK(wm_host_stream_create(NULL, &s) == NULL);
  wm_buffer *a, *b;
  WM_CHECK(wm_host_mem_alloc(NULL, 8, 64, 0, &a) == NULL);
  WM_CHECK(wm_host_mem_alloc(NULL, 8, 64, 0, &b) == NULL);
  const char src[4] = {1, 2, 3, 4};
  char dst[4] = {0};
  WM_CHECK(wm_host_copy_h2d(s, src, a, 4, 4) == NULL);
  WM_CHECK(wm_host_copy_d2d(s, a, 4, b, 0, 4) == NULL);
  WM_CHECK(wm_host_copy_d2h(s, b, 0, dst, 4) == NULL);
  WM_CHECK(memcmp(src, dst, 4) == 0);
  WM_CHECK(wm_host_stream_sync(s) == NULL);
  CHECK_HOST_ERR(wm_host_copy_h2d(s, src, a, 5, 4), WM_ERR_OUT_OF_RANGE,
                 "copy_h2d of 4 bytes at offset 5 exceeds buffer of 8 bytes");
  CHECK_HOST_ERR(wm_host_copy_d2h(s, a, UINT64_MAX, dst, 4),
                 WM_ERR_OUT_OF_RANGE, "copy_d2h of 4 bytes");
  CHECK_HOST_ERR(wm_host_copy_d2d(s, a, 0, b, 6, 4), WM_ERR_OUT_OF_RANGE,
                 "copy_d2d destination");
  CHECK_HOST_ERR(wm_host_copy_d2d(s, a, 6, b, 0, 4), WM_ERR_OUT_OF_RANGE,
                 "copy_d2d source");
  wm_host_mem_free(a);
  wm_host_mem_free(b);
  wm_host_stream_destroy(s);
}

WM_TEST(events_are_always_done) {
  static char storage;
  wm_device *dev = (wm_device *)&storage;
  wm_stream *s;
  WM_CHECK(wm_host_stream_create(dev, &s) == NULL);
  WM_CHECK(s->dev == dev);
  wm_event *e;
  WM_CHECK(wm_host_event_create(dev, &e) == NULL);
  WM_CHECK(wm_host_event_record(e, s) == NULL);
  WM_CHECK(wm_host_event_wait(s, e) == NULL);
  uint32_t done = 0;
  WM_CHECK(wm_host_event_query(e, &done) == NULL);
  WM_CHECK_INT_EQ(done, 1);
  wm_host_event_destroy(e);
  wm_host_stream_destroy(s);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(error_create_formats_the_message),
      WM_CASE(oom_error_is_static_and_survives_destroy),
      WM_CASE(negotiate_answers_the_lower_minor_and_refuses_another_major),
      WM_CASE(mem_alloc_is_aligned_and_zeroed),
      WM_CASE(mem_wrap_host_uses_the_hosts_memory_and_leaves_it_on_free),
      WM_CASE(mem_alloc_rejects_bad_alignment_and_huge_sizes),
      WM_CASE(copies_move_bytes_and_refuse_out_of_range),
      WM_CASE(events_are_always_done),
      {NULL, NULL}};
  return wm_test_main(cases);
}
