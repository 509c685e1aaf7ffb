// String buffers, logging, whole-file I/O and the clock.
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

// What a file that is not a regular file is, for a message.
static const char *file_kind(mode_t mode) {
  if (S_ISDIR(mode)) {
    return "a directory";
  }
  if (S_ISFIFO(mode)) {
    return "a FIFO (named pipe)";
  }
  if (S_ISCHR(mode)) {
    return "a character device";
  }
  if (S_ISBLK(mode)) {
    return "a block device";
  }
  if (S_ISSOCK(mode)) {
    return "a socket";
  }
  return "not a file";
}

// |bytes| for a message: "3.0 GiB", "12.5 MiB", "900 bytes".
static void format_bytes(uint64_t bytes, char *out, size_t cap) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) {
    snprintf(out, cap, "%llu bytes", (unsigned long long)bytes);
    return;
  }
  double v = (double)bytes / 1024;
  size_t u = 0;
  while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
    v /= 1024;
    u++;
  }
  snprintf(out, cap, "%.1f %s", v, units[u]);
}

static wm_status_t too_large(const char *path, uint64_t size,
                             size_t max_bytes) {
  char have[32], limit[32];
  format_bytes(size, have, sizeof(have));
  format_bytes(max_bytes, limit, sizeof(limit));
  return WM_ERROR(OUT_OF_RANGE,
                  "\"%s\" is %s (%llu bytes), over the %s limit of a file "
                  "read whole",
                  path, have, (unsigned long long)size, limit);
}

wm_status_t wm_file_read_capped(const char *path, size_t max_bytes,
                                uint8_t **out_data, size_t *out_size) {
  *out_data = NULL;
  *out_size = 0;
  // O_NONBLOCK: opening a FIFO must not wait for a writer before the
  // S_ISREG check refuses it.
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return WM_ERROR(NOT_FOUND, "cannot open \"%s\": %s", path, strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    wm_status_t s =
        WM_ERROR(UNAVAILABLE, "cannot stat \"%s\": %s", path, strerror(errno));
    close(fd);
    return s;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return WM_ERROR(INVALID_ARGUMENT, "\"%s\" is %s, not a regular file", path,
                    file_kind(st.st_mode));
  }
  if (st.st_size > 0 && (uint64_t)st.st_size > max_bytes) {
    close(fd);
    return too_large(path, (uint64_t)st.st_size, max_bytes);
  }
  // The size is a hint: the file may grow while it is read (or report 0,
  // as /proc files do); reading stops at end of file or past the cap.
  size_t cap = 0, len = 0;
  uint8_t *data = NULL;
  size_t hint = st.st_size > 0 ? (size_t)st.st_size + 1 : 65536;
  wm_status_t s = NULL;
  for (;;) {
    size_t want = len + (len < hint ? hint - len : 65536);
    if ((s = wm_grow((void **)&data, &cap, want, 1)) != NULL) {
      s = wm_status_annotate(s, "reading \"%s\"", path);
      break;
    }
    ssize_t n = read(fd, data + len, cap - len);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      s = WM_ERROR(DATA_LOSS, "error reading \"%s\": %s", path,
                   strerror(errno));
      break;
    }
    if (n == 0) {
      break;
    }
    len += (size_t)n;
    if (len > max_bytes) {
      s = too_large(path, len, max_bytes);
      break;
    }
  }
  close(fd);
  if (s) {
    free(data);
    return s;
  }
  *out_data = data;
  *out_size = len;
  return NULL;
}

wm_status_t wm_file_read(const char *path, uint8_t **out_data,
                         size_t *out_size) {
  return wm_file_read_capped(path, WM_FILE_MAX_BYTES, out_data, out_size);
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
