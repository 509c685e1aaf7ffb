// The environment of a baseline: facts about the machine and the build,
// critical ones hashed into a fingerprint (docs/baseline-format.md,
// "Environment fields"). Nothing here fails: a fact that cannot be read is
// "unknown".
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wmap/bench.h"
#include "wmap/map.h"

#define UNKNOWN "unknown"
#define KEY_CAP sizeof(((wm_env_field_t *)0)->key)
#define VALUE_CAP sizeof(((wm_env_field_t *)0)->value)

// Fields wm_env_collect leaves free for the caller (model.sha256,
// model.dims, ...) however many env.* variables there are.
#define WM_ENV_RESERVED 8

// How long the child that reads OpenBLAS's version may take.
#define OPENBLAS_PROBE_MS 10000

// The prefixes of the environment variables that change behaviour.
static const char *const env_prefixes[] = {"OPENBLAS_", "OMP_", "WMAP_",
                                           "GOMP_"};

// ------------------------------------------------------------- fields

// Cuts a UTF-8 sequence that truncation left incomplete at the end of |s|
// so that the value stays valid text for JSON.
static void trim_partial_utf8(char *s) {
  size_t n = strlen(s);
  size_t cont = 0;
  while (n > 0 && cont < 3 && ((unsigned char)s[n - 1] & 0xC0) == 0x80) {
    n--;
    cont++;
  }
  if (n == 0) {
    return;
  }
  unsigned char lead = (unsigned char)s[n - 1];
  size_t need = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  if (lead >= 0xC0 && cont < need) {
    s[n - 1] = '\0';
  }
}

// Copies |src| into |dst| of |cap| bytes, truncating at a character.
static void copy_text(char *dst, size_t cap, const char *src) {
  size_t n = strlen(src);
  if (n < cap) {
    memcpy(dst, src, n + 1);
    return;
  }
  memcpy(dst, src, cap - 1);
  dst[cap - 1] = '\0';
  trim_partial_utf8(dst);
}

static wm_env_field_t *find_field(wm_env_t *env, const char *key) {
  for (size_t i = 0; i < env->n && i < WM_ENV_MAX_FIELDS; i++) {
    if (strcmp(env->fields[i].key, key) == 0) {
      return &env->fields[i];
    }
  }
  return NULL;
}

void wm_env_set(wm_env_t *env, const char *key, bool critical, const char *fmt,
                ...) {
  if (!env || !key || !fmt) {
    return;
  }
  char k[KEY_CAP];
  copy_text(k, sizeof(k), key);
  // Formatted apart first: an argument may be the value being replaced.
  char v[VALUE_CAP];
  va_list ap;
  va_start(ap, fmt);
  int len = vsnprintf(v, sizeof(v), fmt, ap);
  va_end(ap);
  if (len < 0) {
    v[0] = '\0';
  } else if ((size_t)len >= sizeof(v)) {
    trim_partial_utf8(v);
  }
  wm_env_field_t *f = find_field(env, k);
  if (!f) {
    if (env->n >= WM_ENV_MAX_FIELDS) {
      static atomic_flag warned = ATOMIC_FLAG_INIT;
      if (!atomic_flag_test_and_set(&warned)) {
        wm_log(WM_LOG_WARN,
               "environment: more than %d fields, \"%s\" and later ones "
               "dropped",
               WM_ENV_MAX_FIELDS, k);
      }
      return;
    }
    f = &env->fields[env->n++];
    memcpy(f->key, k, sizeof(k));
  }
  memcpy(f->value, v, sizeof(v));
  f->critical = critical;
}

const char *wm_env_get(const wm_env_t *env, const char *key) {
  if (!env || !key) {
    return NULL;
  }
  char k[KEY_CAP];
  copy_text(k, sizeof(k), key);
  for (size_t i = 0; i < env->n && i < WM_ENV_MAX_FIELDS; i++) {
    if (strcmp(env->fields[i].key, k) == 0) {
      return env->fields[i].value;
    }
  }
  return NULL;
}

static int cmp_field_key(const void *a, const void *b) {
  const wm_env_field_t *x = *(const wm_env_field_t *const *)a;
  const wm_env_field_t *y = *(const wm_env_field_t *const *)b;
  return strcmp(x->key, y->key);
}

void wm_env_finish(wm_env_t *env) {
  if (!env) {
    return;
  }
  const wm_env_field_t *crit[WM_ENV_MAX_FIELDS];
  size_t n = 0;
  for (size_t i = 0; i < env->n && i < WM_ENV_MAX_FIELDS; i++) {
    if (env->fields[i].critical) {
      crit[n++] = &env->fields[i];
    }
  }
  qsort(crit, n, sizeof(crit[0]), cmp_field_key);
  // Each line fits in key + value bytes: both hold their NUL.
  char text[WM_ENV_MAX_FIELDS * (KEY_CAP + VALUE_CAP)];
  size_t len = 0;
  for (size_t i = 0; i < n; i++) {
    size_t kn = strnlen(crit[i]->key, sizeof(crit[i]->key) - 1);
    size_t vn = strnlen(crit[i]->value, sizeof(crit[i]->value) - 1);
    memcpy(text + len, crit[i]->key, kn);
    len += kn;
    text[len++] = '=';
    memcpy(text + len, crit[i]->value, vn);
    len += vn;
    text[len++] = '\n';
  }
  wm_sha256_hex(text, len, env->fingerprint);
}

// ------------------------------------------------------------- system

// Reads the first line of |path| without its newline and trailing blanks;
// false when the file cannot be read or the line is empty.
static bool read_line(const char *path, char *dst, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f) {
    return false;
  }
  char line[256];
  bool ok = fgets(line, sizeof(line), f) != NULL;
  fclose(f);
  if (!ok) {
    return false;
  }
  size_t n = strcspn(line, "\n");
  while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t')) {
    n--;
  }
  line[n] = '\0';
  copy_text(dst, cap, line);
  return dst[0] != '\0';
}

// The first "cpu MHz" of /proc/cpuinfo (x86 only), or "unknown".
static void read_cpu_mhz(char *dst, size_t cap) {
  if (!wm_cpuinfo_get("cpu MHz", dst, cap) || !dst[0]) {
    copy_text(dst, cap, UNKNOWN);
  }
}

static const char *compiler_name(void) {
#if defined(__clang__) && defined(__VERSION__)
  return "clang " __VERSION__;
#elif defined(__GNUC__) && defined(__VERSION__)
  return "gcc " __VERSION__;
#else
  return UNKNOWN;
#endif
}

static const char *build_type(void) {
#ifdef WMAP_BUILD_TYPE
  return WMAP_BUILD_TYPE[0] ? WMAP_BUILD_TYPE : UNKNOWN;
#else
  return UNKNOWN;
#endif
}

static const char *wmap_version(void) {
#ifdef WMAP_VERSION
  return WMAP_VERSION[0] ? WMAP_VERSION : UNKNOWN;
#else
  return UNKNOWN;
#endif
}

static const char *wmap_git(void) {
#ifdef WMAP_GIT_REV
  return WMAP_GIT_REV[0] ? WMAP_GIT_REV : UNKNOWN;
#else
  return UNKNOWN;
#endif
}

// ---------------------------------------------------------- libraries

typedef const char *(*version_fn)(void);

// Looks up a function returning a string; dlsym's object pointer goes
// through memcpy because ISO C has no object-to-function conversion.
static version_fn find_text_fn(void *lib, const char *name) {
  void *sym = dlsym(lib, name);
  version_fn fn = NULL;
  if (sym) {
    memcpy(&fn, &sym, sizeof(fn));
  }
  return fn;
}

static void read_protobuf_c(char *dst, size_t cap) {
  copy_text(dst, cap, UNKNOWN);
  void *lib = dlopen("libprotobuf-c.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!lib) {
    return;
  }
  version_fn fn = find_text_fn(lib, "protobuf_c_version");
  const char *v = fn ? fn() : NULL;
  if (v && v[0]) {
    copy_text(dst, cap, v);
  }
  dlclose(lib);
}

// Copies OpenBLAS's config and core name from an open |lib|.
static void query_openblas(void *lib, char *config, size_t config_cap,
                           char *core, size_t core_cap) {
  version_fn get_config = find_text_fn(lib, "openblas_get_config");
  version_fn get_core = find_text_fn(lib, "openblas_get_corename");
  const char *c = get_config ? get_config() : NULL;
  const char *k = get_core ? get_core() : NULL;
  if (c && c[0]) {
    copy_text(config, config_cap, c);
  }
  if (k && k[0]) {
    copy_text(core, core_cap, k);
  }
}

// Reads |fd| to the end or the deadline into |buf| (NUL-terminated);
// returns false on a timeout.
static bool read_all(int fd, char *buf, size_t cap, int timeout_ms) {
  size_t len = 0;
  uint64_t deadline = wm_now_ns() + (uint64_t)timeout_ms * 1000000u;
  for (;;) {
    uint64_t now = wm_now_ns();
    uint64_t left_ms =
        now < deadline ? (deadline - now + 999999u) / 1000000u : 0;
    if (left_ms == 0) {
      buf[len] = '\0';
      return false;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = poll(&p, 1, (int)left_ms);
    if (r < 0 && errno == EINTR) {
      continue;
    }
    if (r <= 0) {
      buf[len] = '\0';
      return r != 0;
    }
    ssize_t got = read(fd, buf + len, cap - 1 - len);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0 || len + (size_t)got >= cap - 1) {
      len += got > 0 ? (size_t)got : 0;
      buf[len] = '\0';
      return true;
    }
    len += (size_t)got;
  }
}

static void write_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) {
      continue;
    }
    if (w <= 0) {
      return;
    }
    s += w;
    n -= (size_t)w;
  }
}

// Reads OpenBLAS's version and core type. Loading OpenBLAS starts its
// thread pool, so when this process has not loaded it already, a forked
// child loads it and sends "config\0core\0" through a pipe: the caller
// (the parent of `wmap bench`'s block processes) never gets the library.
static void read_openblas(char *config, size_t config_cap, char *core,
                          size_t core_cap) {
  copy_text(config, config_cap, UNKNOWN);
  copy_text(core, core_cap, UNKNOWN);
  void *lib = dlopen("libopenblas.so.0", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (lib) {
    query_openblas(lib, config, config_cap, core, core_cap);
    dlclose(lib);
    return;
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return;
  }
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (pid == 0) {
    close(fds[0]);
    // One thread is enough to answer; the core type does not depend on it.
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    char c[VALUE_CAP];
    char k[VALUE_CAP];
    c[0] = k[0] = '\0';
    void *child_lib = dlopen("libopenblas.so.0", RTLD_LAZY | RTLD_LOCAL);
    if (child_lib) {
      query_openblas(child_lib, c, sizeof(c), k, sizeof(k));
    }
    write_all(fds[1], c, strlen(c) + 1);
    write_all(fds[1], k, strlen(k) + 1);
    _exit(0);  // no atexit handlers, no flushing of the parent's stdio
  }
  close(fds[1]);
  char buf[2 * VALUE_CAP + 1] = {0};
  bool done = read_all(fds[0], buf, sizeof(buf), OPENBLAS_PROBE_MS);
  close(fds[0]);
  if (!done) {
    kill(pid, SIGKILL);
    wm_log(WM_LOG_WARN,
           "environment: reading the OpenBLAS version took over %d ms",
           OPENBLAS_PROBE_MS);
  }
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
  if (!done) {
    return;
  }
  // buf holds "config\0core\0" when the child got that far.
  size_t cn = strlen(buf);
  if (cn > 0) {
    copy_text(config, config_cap, buf);
  }
  if (cn + 1 < sizeof(buf) && buf[cn + 1]) {
    copy_text(core, core_cap, buf + cn + 1);
  }
}

// Replaces runs of blanks in |s| with one space: the config string of
// some OpenBLAS builds carries doubled spaces.
static void squeeze_spaces(char *s) {
  char *w = s;
  bool space = false;
  for (const char *r = s; *r; r++) {
    bool blank = *r == ' ' || *r == '\t';
    if (!blank || !space) {
      *w++ = blank ? ' ' : *r;
    }
    space = blank;
  }
  while (w > s && w[-1] == ' ') {
    w--;
  }
  *w = '\0';
}

// --------------------------------------------------------- variables

static bool env_name_matches(const char *entry) {
  for (size_t i = 0; i < sizeof(env_prefixes) / sizeof(env_prefixes[0]); i++) {
    size_t n = strlen(env_prefixes[i]);
    if (strncmp(entry, env_prefixes[i], n) == 0) {
      return true;
    }
  }
  return false;
}

// Orders "NAME=value" entries by NAME ('=' ends a name).
static int cmp_env_entry(const void *a, const void *b) {
  const unsigned char *x = *(const unsigned char *const *)a;
  const unsigned char *y = *(const unsigned char *const *)b;
  for (;; x++, y++) {
    unsigned cx = *x == '=' ? 0 : *x;
    unsigned cy = *y == '=' ? 0 : *y;
    if (cx != cy || cx == 0) {
      return (cx > cy) - (cx < cy);
    }
  }
}

static void collect_variables(wm_env_t *env) {
  size_t matching = 0;
  for (char **e = environ; e && *e; e++) {
    matching += env_name_matches(*e) && strchr(*e, '=') != NULL;
  }
  if (matching == 0) {
    return;
  }
  const char **list = malloc(matching * sizeof(*list));
  if (!list) {
    wm_log(WM_LOG_WARN, "environment: no memory to list %zu variables",
           matching);
    return;
  }
  size_t n = 0;
  for (char **e = environ; e && *e && n < matching; e++) {
    if (env_name_matches(*e) && strchr(*e, '=') != NULL) {
      list[n++] = *e;
    }
  }
  qsort(list, n, sizeof(*list), cmp_env_entry);
  size_t room = env->n + WM_ENV_RESERVED < WM_ENV_MAX_FIELDS
                    ? WM_ENV_MAX_FIELDS - WM_ENV_RESERVED - env->n
                    : 0;
  size_t kept = n < room ? n : room;
  for (size_t i = 0; i < kept; i++) {
    const char *eq = strchr(list[i], '=');
    char key[KEY_CAP];
    int name_len = (int)(eq - list[i]);
    snprintf(key, sizeof(key), "env.%.*s", name_len, list[i]);
    wm_env_set(env, key, false, "%s", eq + 1);
  }
  if (kept < n) {
    wm_log(WM_LOG_WARN,
           "environment: %zu of %zu OPENBLAS_/OMP_/WMAP_/GOMP_ variables "
           "not recorded (%d fields, %d kept for the caller)",
           n - kept, n, WM_ENV_MAX_FIELDS, WM_ENV_RESERVED);
  }
  free(list);
}

// ------------------------------------------------------------ collect

void wm_env_collect(wm_env_t *env) {
  if (!env) {
    return;
  }
  memset(env, 0, sizeof(*env));
  char text[VALUE_CAP];
  char core[VALUE_CAP];

  wm_machine_t m;
  wm_machine_get(&m);
  wm_env_set(env, "cpu.model", true, "%s", m.model[0] ? m.model : UNKNOWN);
  // wm_machine_get leaves the FNV seed when there is no "flags" line.
  if (m.flags_hash == 14695981039346656037ull) {
    wm_env_set(env, "cpu.flags", true, "%s", UNKNOWN);
  } else {
    wm_env_set(env, "cpu.flags", true, "%016llx",
               (unsigned long long)m.flags_hash);
  }
  wm_env_set(env, "cpu.cores", true, "%d", (int)m.cores);
  wm_env_set(env, "os.kernel", true, "%s", m.kernel[0] ? m.kernel : UNKNOWN);
  wm_env_set(env, "build.compiler", true, "%s", compiler_name());
  wm_env_set(env, "build.type", true, "%s", build_type());
  read_protobuf_c(text, sizeof(text));
  wm_env_set(env, "lib.protobuf-c", true, "%s", text);
  read_openblas(text, sizeof(text), core, sizeof(core));
  squeeze_spaces(text);
  wm_env_set(env, "lib.openblas", true, "%s", text[0] ? text : UNKNOWN);
  wm_env_set(env, "lib.openblas.core", true, "%s", core);

  wm_env_set(env, "wmap.version", false, "%s", wmap_version());
  wm_env_set(env, "wmap.git", false, "%s", wmap_git());
  if (!read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", text,
                 sizeof(text))) {
    copy_text(text, sizeof(text), UNKNOWN);
  }
  wm_env_set(env, "cpu.governor", false, "%s", text);
  read_cpu_mhz(text, sizeof(text));
  wm_env_set(env, "cpu.mhz", false, "%s", text);
  if (read_line("/proc/loadavg", text, sizeof(text))) {
    text[strcspn(text, " \t")] = '\0';
  } else {
    copy_text(text, sizeof(text), UNKNOWN);
  }
  wm_env_set(env, "load.avg1", false, "%s", text);
  char host[256];
  if (gethostname(host, sizeof(host)) == 0 && host[0]) {
    host[sizeof(host) - 1] = '\0';
    char hex[65];
    wm_sha256_hex(host, strlen(host), hex);
    wm_env_set(env, "host.hash", false, "%.12s", hex);
  } else {
    wm_env_set(env, "host.hash", false, "%s", UNKNOWN);
  }
  time_t now = time(NULL);
  struct tm tm;
  if (now != (time_t)-1 && gmtime_r(&now, &tm) &&
      strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm) > 0) {
    wm_env_set(env, "time.utc", false, "%s", text);
  } else {
    wm_env_set(env, "time.utc", false, "%s", UNKNOWN);
  }
  collect_variables(env);
  wm_env_finish(env);
}
