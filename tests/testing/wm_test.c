// The test harness runner.
#include "wm_test.h"

#include <stdarg.h>
#include <stdlib.h>

static int current_failed;
static const char *current_skip;

void wm_test_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "  %s:%d: ", file, line);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  current_failed = 1;
}

void wm_test_skip(const char *why) {
  current_skip = why;
}

const char *wm_test_source_dir(void) {
  const char *d = getenv("WMAP_SOURCE_DIR");
  return d && *d ? d : ".";
}

int wm_test_main(const wm_test_case_t *cases) {
  int failed = 0, skipped = 0, total = 0;
  for (const wm_test_case_t *c = cases; c->name; c++) {
    current_failed = 0;
    current_skip = NULL;
    c->fn();
    total++;
    if (current_failed) {
      failed++;
      printf("FAIL %s\n", c->name);
    } else if (current_skip) {
      skipped++;
      printf("SKIP %s: %s\n", c->name, current_skip);
    } else {
      printf("ok   %s\n", c->name);
    }
  }
  printf("%d passed, %d failed, %d skipped\n", total - failed - skipped, failed,
         skipped);
  if (failed) {
    return 1;
  }
  return skipped == total && total > 0 ? 77 : 0;
}
