// String buffers, logging, whole-file I/O and the clock.
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "wmap/base.h"

void wm_strbuf_init(wm_strbuf_t *buf) {
  memset(buf, 0, sizeof(*buf));
}

void wm_strbuf_deinit(wm_strbuf_t *buf) {
  free(buf->data);
  memset(buf, 0, sizeof(*buf));
}

static bool strbuf_reserve(wm_strbuf_t *buf, size_t extra) {
  size_t need;
  if (buf->failed || !wm_checked_add(buf->len, extra + 1, &need)) {
    buf->failed = true;
    return false;
  }
  if (need > buf->cap) {
    size_t cap = buf->cap ? buf->cap : 64;
    while (cap < need) {
      cap *= 2;
    }
    char *p = wm_realloc(buf->data, cap);
    if (!p) {
      buf->failed = true;
      return false;
    }
    buf->data = p;
    buf->cap = cap;
  }
  return true;
}

void wm_strbuf_append(wm_strbuf_t *buf, const char *s, size_t n) {
  if (!strbuf_reserve(buf, n)) {
    return;
  }
  memcpy(buf->data + buf->len, s, n);
  buf->len += n;
  buf->data[buf->len] = '\0';
}

void wm_strbuf_printf(wm_strbuf_t *buf, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !strbuf_reserve(buf, (size_t)n)) {
    return;
  }
  va_start(ap, fmt);
  vsnprintf(buf->data + buf->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  buf->len += (size_t)n;
}

void wm_strbuf_json_string(wm_strbuf_t *buf, const char *s) {
  wm_strbuf_append(buf, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
      case '"':
        wm_strbuf_append(buf, "\\\"", 2);
        break;
      case '\\':
        wm_strbuf_append(buf, "\\\\", 2);
        break;
      case '\n':
        wm_strbuf_append(buf, "\\n", 2);
        break;
      case '\t':
        wm_strbuf_append(buf, "\\t", 2);
        break;
      case '\r':
        wm_strbuf_append(buf, "\\r", 2);
        break;
      default:
        if (*p < 0x20) {
          wm_strbuf_printf(buf, "\\u%04x", *p);
        } else {
          wm_strbuf_append(buf, (const char *)p, 1);
        }
    }
  }
  wm_strbuf_append(buf, "\"", 1);
}

const char *wm_strbuf_str(const wm_strbuf_t *buf) {
  return buf->data ? buf->data : "";
}

static _Atomic int log_level = WM_LOG_WARN;

void wm_log_set_level(wm_log_level_t level) {
  atomic_store(&log_level, level);
}

void wm_log(wm_log_level_t level, const char *fmt, ...) {
  if ((int)level > atomic_load(&log_level)) {
    return;
  }
  static const char *const tags[] = {"error", "warning", "info", "debug"};
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  fprintf(stderr, "wmap: %s: %s\n", tags[level], line);
}

wm_status_t wm_file_read(const char *path, uint8_t **out_data,
                         size_t *out_size) {
  *out_data = NULL;
  *out_size = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    return WM_ERROR(NOT_FOUND, "cannot open \"%s\": %s", path, strerror(errno));
  }
  size_t cap = 0, len = 0;
  uint8_t *data = NULL;
  for (;;) {
    wm_status_t s = wm_grow((void **)&data, &cap, len + 65536, 1);
    if (s) {
      free(data);
      fclose(f);
      return wm_status_annotate(s, "reading \"%s\"", path);
    }
    size_t n = fread(data + len, 1, cap - len, f);
    len += n;
    if (n == 0) {
      break;
    }
  }
  bool bad = ferror(f);
  fclose(f);
  if (bad) {
    free(data);
    return WM_ERROR(DATA_LOSS, "error reading \"%s\"", path);
  }
  *out_data = data;
  *out_size = len;
  return NULL;
}

wm_status_t wm_file_write(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    return WM_ERROR(NOT_FOUND, "cannot create \"%s\": %s", path,
                    strerror(errno));
  }
  size_t n = fwrite(data, 1, size, f);
  int rc = fclose(f);
  if (n != size || rc != 0) {
    return WM_ERROR(DATA_LOSS, "error writing \"%s\"", path);
  }
  return NULL;
}

wm_status_t wm_make_parents(const char *path) {
  char *p = wm_strdup(path);
  if (!p) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  for (char *c = p + 1; *c; c++) {
    if (*c != '/') {
      continue;
    }
    *c = '\0';
    if (mkdir(p, 0755) != 0 && errno != EEXIST) {
      wm_status_t s = WM_ERROR(UNAVAILABLE, "cannot create folder \"%s\": %s",
                               p, strerror(errno));
      free(p);
      return s;
    }
    *c = '/';
  }
  free(p);
  return NULL;
}

wm_status_t wm_cache_folder(const char *dir, const char *sub, char **out_path) {
  *out_path = NULL;
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  const char *base, *tail;
  if (dir && *dir) {
    base = dir;
    tail = "";
  } else if (xdg && *xdg) {
    base = xdg;
    tail = "/wmap";
  } else if (home && *home) {
    base = home;
    tail = "/.cache/wmap";
  } else {
    return WM_ERROR(NOT_FOUND,
                    "no cache folder: neither XDG_CACHE_HOME nor HOME is set");
  }
  size_t n = strlen(base) + strlen(tail) + (sub ? strlen(sub) + 1 : 0) + 1;
  char *p = wm_malloc(n);
  if (!p) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  snprintf(p, n, "%s%s%s%s", base, tail, sub ? "/" : "", sub ? sub : "");
  *out_path = p;
  return NULL;
}

uint64_t wm_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool wm_cpuinfo_get(const char *key, char *out, size_t cap) {
  if (cap == 0) {
    return false;
  }
  out[0] = '\0';
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) {
    return false;
  }
  size_t klen = strlen(key);
  bool found = false;
  char line[16384];
  while (!found && fgets(line, sizeof(line), f)) {
    const char *colon = strchr(line, ':');
    if (!colon || strncmp(line, key, klen) != 0 ||
        strspn(line + klen, " \t") !=
            (size_t)(colon - line - (ptrdiff_t)klen)) {
      continue;
    }
    const char *v = colon + 1;
    v += strspn(v, " \t");
    size_t n = strcspn(v, "\n");
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t')) {
      n--;
    }
    if (n >= cap) {
      n = cap - 1;
    }
    memcpy(out, v, n);
    out[n] = '\0';
    found = true;
  }
  fclose(f);
  return found;
}
