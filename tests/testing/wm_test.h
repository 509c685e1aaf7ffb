// The tiny test harness: checks print both values (and the status text)
// and end the current test; wm_test_main runs every test and returns the
// process exit code (0 pass, 1 fail, 77 when every test skipped).
#ifndef WM_TEST_H_
#define WM_TEST_H_

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "wmap/base.h"
#include "wmap/graph.h"

typedef struct wm_test_case {
  const char *name;  // behaviour the test states
  void (*fn)(void);  // the test
} wm_test_case_t;

// Records a failure of the running test.
void wm_test_fail(const char *file, int line, const char *fmt, ...)
    WM_PRINTF(3, 4);
// Marks the running test skipped with |why|.
void wm_test_skip(const char *why);
// Runs |cases| (terminated by a NULL name); returns the exit code.
int wm_test_main(const wm_test_case_t *cases);
// Returns the folder of the source tree (WMAP_SOURCE_DIR or ".").
const char *wm_test_source_dir(void);

#define WM_TEST(name) static void name(void)
#define WM_CASE(name) \
  {                   \
#name, name       \
  }

#define WM_CHECK(cond)                                             \
  do {                                                             \
    if (!(cond)) {                                                 \
      wm_test_fail(__FILE__, __LINE__, "check failed: %s", #cond); \
      return;                                                      \
    }                                                              \
  } while (0)

#define WM_CHECK_INT_EQ(a, b)                                               \
  do {                                                                      \
    long long wm_a_ = (long long)(a), wm_b_ = (long long)(b);               \
    if (wm_a_ != wm_b_) {                                                   \
      wm_test_fail(__FILE__, __LINE__, "%s == %s: got %lld, want %lld", #a, \
                   #b, wm_a_, wm_b_);                                       \
      return;                                                               \
    }                                                                       \
  } while (0)

#define WM_CHECK_DBL_NEAR(a, b, tol)                                           \
  do {                                                                         \
    double wm_a_ = (double)(a), wm_b_ = (double)(b);                           \
    if (!(wm_a_ - wm_b_ <= (tol) && wm_b_ - wm_a_ <= (tol))) {                 \
      wm_test_fail(__FILE__, __LINE__, "%s ~ %s: got %.9g, want %.9g", #a, #b, \
                   wm_a_, wm_b_);                                              \
      return;                                                                  \
    }                                                                          \
  } while (0)

#define WM_CHECK_STR_EQ(a, b)                                               \
  do {                                                                      \
    const char *wm_a_ = (a), *wm_b_ = (b);                                  \
    if (!wm_a_ || !wm_b_ || strcmp(wm_a_, wm_b_) != 0) {                    \
      wm_test_fail(__FILE__, __LINE__, "%s == %s: got \"%s\", want \"%s\"", \
                   #a, #b, wm_a_ ? wm_a_ : "(null)",                        \
                   wm_b_ ? wm_b_ : "(null)");                               \
      return;                                                               \
    }                                                                       \
  } while (0)

// Checks that |expr| returns OK; prints the status text otherwise.
#define WM_CHECK_OK(expr)                                      \
  do {                                                         \
    wm_status_t wm_s_ = (expr);                                \
    if (wm_s_) {                                               \
      wm_test_fail(__FILE__, __LINE__, "%s: %s: %s", #expr,    \
                   wm_status_code_name(wm_status_code(wm_s_)), \
                   wm_status_message(wm_s_));                  \
      wm_status_free(wm_s_);                                   \
      return;                                                  \
    }                                                          \
  } while (0)

// Checks that |expr| fails with |code| and a message containing |needle|.
#define WM_CHECK_ERR(expr, code, needle)                                    \
  do {                                                                      \
    wm_status_t wm_s_ = (expr);                                             \
    if (!wm_s_) {                                                           \
      wm_test_fail(__FILE__, __LINE__, "%s: succeeded, want %s", #expr,     \
                   #code);                                                  \
      return;                                                               \
    }                                                                       \
    bool wm_ok_ = wm_status_code(wm_s_) == WM_STATUS_##code &&              \
                  strstr(wm_status_message(wm_s_), (needle)) != NULL;       \
    if (!wm_ok_) {                                                          \
      wm_test_fail(__FILE__, __LINE__, "%s: got %s \"%s\", want %s \"%s\"", \
                   #expr, wm_status_code_name(wm_status_code(wm_s_)),       \
                   wm_status_message(wm_s_), #code, (needle));              \
    }                                                                       \
    wm_status_free(wm_s_);                                                  \
    if (!wm_ok_) {                                                          \
      return;                                                               \
    }                                                                       \
  } while (0)

// A reproducible random stream for tests (xorshift64): the next value of
// |*state| (nonzero), and one in [0, n).
static inline uint32_t wm_test_rand(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return (uint32_t)(*state >> 11);
}
static inline int32_t wm_test_pick(uint64_t *state, int32_t n) {
  return (int32_t)(wm_test_rand(state) % (uint32_t)n);
}

#endif  // WM_TEST_H_
