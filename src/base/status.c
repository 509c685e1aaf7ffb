// Status objects: code, origin and a message that layers annotate.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wmap/base.h"

struct wm_status {
  wm_status_code_t code;  // never WM_STATUS_OK
  char origin[96];        // "file.c:123"
  char *message;          // heap; NULL if allocation failed
};

// Returned when a status itself cannot be allocated; never freed.
static struct wm_status oom_status = {WM_STATUS_RESOURCE_EXHAUSTED, "", NULL};

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

wm_status_t wm_status_makev(wm_status_code_t code, const char *file, int line,
                            const char *fmt, va_list ap) {
  struct wm_status *s = malloc(sizeof(*s));
  if (!s) {
    return &oom_status;
  }
  s->code = code == WM_STATUS_OK ? WM_STATUS_INTERNAL : code;
  snprintf(s->origin, sizeof(s->origin), "%s:%d", base_name(file), line);
  va_list copy;
  va_copy(copy, ap);
  int n = vsnprintf(NULL, 0, fmt, copy);
  va_end(copy);
  s->message = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (s->message) {
    vsnprintf(s->message, (size_t)n + 1, fmt, ap);
  }
  return s;
}

wm_status_t wm_status_make(wm_status_code_t code, const char *file, int line,
                           const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  wm_status_t s = wm_status_makev(code, file, line, fmt, ap);
  va_end(ap);
  return s;
}

wm_status_t wm_status_annotate(wm_status_t status, const char *fmt, ...) {
  if (!status || status == &oom_status) {
    return status;
  }
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    return status;
  }
  const char *old = status->message ? status->message : "";
  size_t total = (size_t)n + 2 + strlen(old) + 1;
  char *msg = malloc(total);
  if (!msg) {
    return status;
  }
  va_start(ap, fmt);
  vsnprintf(msg, (size_t)n + 1, fmt, ap);
  va_end(ap);
  strcat(msg, ": ");
  strcat(msg, old);
  free(status->message);
  status->message = msg;
  return status;
}

wm_status_code_t wm_status_code(wm_status_t status) {
  return status ? status->code : WM_STATUS_OK;
}

const char *wm_status_message(wm_status_t status) {
  if (!status) {
    return "ok";
  }
  return status->message ? status->message : "out of memory";
}

const char *wm_status_origin(wm_status_t status) {
  return status ? status->origin : "";
}

const char *wm_status_code_name(wm_status_code_t code) {
  static const char *const names[] = {"OK",
                                      "INVALID_ARGUMENT",
                                      "NOT_FOUND",
                                      "OUT_OF_RANGE",
                                      "UNIMPLEMENTED",
                                      "RESOURCE_EXHAUSTED",
                                      "FAILED_PRECONDITION",
                                      "INCOMPATIBLE",
                                      "UNAVAILABLE",
                                      "DATA_LOSS",
                                      "INTERNAL",
                                      "CANCELLED"};
  if ((unsigned)code < sizeof(names) / sizeof(names[0])) {
    return names[code];
  }
  return "UNKNOWN";
}

void wm_status_free(wm_status_t status) {
  if (!status || status == &oom_status) {
    return;
  }
  free(status->message);
  free(status);
}

void wm_assert_fail(const char *cond, const char *file, int line) {
  fprintf(stderr, "%s:%d: assertion failed: %s\n", file, line, cond);
  abort();
}
