// The backend registry: finds plugin files, probes each one not known
// good in a child process, dlopens the survivors, loads them through
// wm_backend_create_ex and keeps one line per refused candidate.
#include <cJSON.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "wmap/plugin.h"

#define FILE_PREFIX "libwmap_backend_"
#define FILE_SUFFIX ".so"
#define BUILTIN_ORIGIN "built-in"
#define CACHE_FILE "plugins.json"
#define CACHE_FORMAT "wmap.plugins/1"
#define CACHE_MAX_BYTES (16 << 20)  // far more than any set of plugins needs
#define PROBE_TIMEOUT_ENV "WMAP_PLUGIN_PROBE_TIMEOUT"
#define PROBE_TIMEOUT_DEFAULT_S 10.0

typedef struct refusal {
  char *path;              // candidate file (or "built-in")
  char *reason;            // one line
  wm_refusal_kind_t kind;  // what went wrong
} refusal_t;

// What a probe found about one plugin file, as the cache keeps it.
typedef struct verdict {
  char *path;        // real path of the file
  int64_t size;      // its size in bytes
  int64_t mtime_s;   // its modification time: seconds
  int64_t mtime_ns;  // and nanoseconds
  char *reason;      // NULL: loading it is safe; else why it is refused
  double timeout_s;  // for a hang: the timeout it ran past; else 0
} verdict_t;

struct wm_registry {
  wm_backend_t **backends;  // plugins in the order found
  size_t n_backends;        // number of |backends|
  size_t cap_backends;      // capacity of |backends|
  wm_backend_t *builtin;    // listed after the plugins; may be NULL
  refusal_t *refused;       // refused candidates in the order seen
  size_t n_refused;         // number of |refused|
  size_t cap_refused;       // capacity of |refused|
  char **seen;              // real paths already tried, to skip repeats
  size_t n_seen;            // number of |seen|
  size_t cap_seen;          // capacity of |seen|
  uint32_t num_threads;     // passed to every plugin
  bool debug;               // trace decisions on stderr
  bool quiet;               // no warning per refusal
  double probe_timeout_s;   // each probe's limit; 0: plugins not probed
  verdict_t *verdicts;      // the probe cache's entries
  size_t n_verdicts;        // number of |verdicts|
  size_t cap_verdicts;      // capacity of |verdicts|
  char *cache_path;         // the probe cache file; NULL: none
  bool cache_read;          // |verdicts| read from the file (or tried)
  bool cache_dirty;         // the file is to be written
};

static void debug_line(const wm_registry_t *r, const char *fmt, ...)
    WM_PRINTF(2, 3);

static void debug_line(const wm_registry_t *r, const char *fmt, ...) {
  if (!r->debug) {
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  fputs("wmap: loader: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

// Records a refusal; the reason is flattened to one line.
static wm_status_t refuse(wm_registry_t *r, const char *path,
                          wm_refusal_kind_t kind, const char *fmt, ...)
    WM_PRINTF(4, 5);

static wm_status_t refuse(wm_registry_t *r, const char *path,
                          wm_refusal_kind_t kind, const char *fmt, ...) {
  WM_RETURN_IF_ERROR(wm_grow((void **)&r->refused, &r->cap_refused,
                             r->n_refused + 1, sizeof(*r->refused)));
  char reason[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof(reason), fmt, ap);
  va_end(ap);
  for (char *c = reason; *c; c++) {
    if (*c == '\n' || *c == '\r') {
      *c = ' ';
    }
  }
  refusal_t *f = &r->refused[r->n_refused];
  f->path = wm_strdup(path);
  f->reason = wm_strdup(reason);
  f->kind = kind;
  if (!f->path || !f->reason) {
    free(f->path);
    free(f->reason);
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory refusing \"%s\"", path);
  }
  r->n_refused++;
  if (r->debug) {
    debug_line(r, "refused %s: %s", path, reason);
  } else if (!r->quiet) {
    wm_log(WM_LOG_WARN, "loader: refused %s: %s", path, reason);
  }
  return NULL;
}

// Returns the message of |s| without a leading `plugin "PATH": `, which
// the refusal line already names.
static const char *reason_of(wm_status_t s, const char *path) {
  const char *msg = wm_status_message(s);
  size_t n = strlen(path);
  if (strncmp(msg, "plugin \"", 8) == 0 && strncmp(msg + 8, path, n) == 0 &&
      strncmp(msg + 8 + n, "\": ", 3) == 0) {
    return msg + 8 + n + 3;
  }
  return msg;
}

static const wm_backend_t *find_loaded(const wm_registry_t *r,
                                       const char *name) {
  if (r->builtin && strcmp(wm_backend_name(r->builtin), name) == 0) {
    return r->builtin;
  }
  for (size_t i = 0; i < r->n_backends; i++) {
    if (strcmp(wm_backend_name(r->backends[i]), name) == 0) {
      return r->backends[i];
    }
  }
  return NULL;
}

// Returns true when |path| (by real path) was tried before; remembers it.
static wm_status_t check_seen(wm_registry_t *r, const char *path,
                              bool *out_seen) {
  *out_seen = false;
  char real[PATH_MAX];
  const char *key = realpath(path, real) ? real : path;
  for (size_t i = 0; i < r->n_seen; i++) {
    if (strcmp(r->seen[i], key) == 0) {
      *out_seen = true;
      return NULL;
    }
  }
  WM_RETURN_IF_ERROR(wm_grow((void **)&r->seen, &r->cap_seen, r->n_seen + 1,
                             sizeof(*r->seen)));
  r->seen[r->n_seen] = wm_strdup(key);
  if (!r->seen[r->n_seen]) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory loading \"%s\"", path);
  }
  r->n_seen++;
  return NULL;
}

// ------------------------------------------------------------ the probe
//
// A plugin runs its constructors in dlopen and its code in
// wm_plugin_query, get_info and enumerate; any of them may crash, exit or
// never return. Each file not known good is first loaded in a forked
// child, which reports on a pipe how far it got, so that the host can
// tell where it died and never loads it. The process may have threads,
// so between fork and _exit the child does only what a plugin load needs
// (dlopen, the plugin's own calls) and async-signal-safe calls.

// Stages the child reports, one byte each, before it enters them.
enum {
  STAGE_LOAD = 'L',   // dlopen: the library's constructors
  STAGE_QUERY = 'Q',  // wm_plugin_query (and its error, if any)
  STAGE_INFO = 'I',   // get_info and reading its strings
  STAGE_ENUM = 'E',   // enumerate and reading its targets
  STAGE_DONE = 'D'    // answered everything: loading it is safe
};

static const char *stage_text(char stage) {
  switch (stage) {
    case STAGE_QUERY:
      return "in wm_plugin_query";
    case STAGE_INFO:
      return "in get_info";
    case STAGE_ENUM:
      return "in enumerate";
    default:
      return "while loading";
  }
}

static void probe_log(void *ctx, uint32_t level, const char *file, int32_t line,
                      const char *message) {
  (void)ctx, (void)level, (void)file, (void)line, (void)message;
}

static void child_stage(int fd, char stage) {
  while (write(fd, &stage, 1) < 0 && errno == EINTR) {
  }
}

// Reads up to |max| bytes of a string a plugin answered, so that a bad
// pointer faults in the child rather than later in the host.
static void child_touch(const char *s, size_t max) {
  if (!s) {
    return;
  }
  const volatile char *v = s;
  for (size_t i = 0; i < max && v[i]; i++) {
  }
}

// Destroys an error the way the host will read it.
static void child_error(const wm_plugin_api *api, wm_error *err) {
  if (err && api && api->error_code && api->error_message &&
      api->error_destroy) {
    (void)api->error_code(err);
    child_touch(api->error_message(err), 4096);
    api->error_destroy(err);
  }
}

// The forked child: loads |path| as the host would and reports each stage
// on |fd|; never returns.
static void probe_child(const char *path, int fd, uint32_t num_threads) {
  // A crash must end the child with its signal, whatever handlers the
  // host installed (sanitizers, language runtimes), and without a core.
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  static const int fatal[] = {SIGSEGV, SIGBUS,  SIGFPE, SIGILL,
                              SIGABRT, SIGTRAP, SIGSYS, SIGPIPE};
  for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
    sigaction(fatal[i], &dfl, NULL);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  // What the plugin prints, and the host's stdio buffers an exit() would
  // flush a second time, go nowhere.
  int null_fd = open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    dup2(null_fd, 0);
    dup2(null_fd, 1);
    dup2(null_fd, 2);
  }
  child_stage(fd, STAGE_LOAD);
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  void *sym = handle ? dlsym(handle, WM_PLUGIN_QUERY_SYMBOL) : NULL;
  if (sym) {
    wm_plugin_query_fn query;
    memcpy(&query, &sym, sizeof(query));
    wm_host_api host;
    memset(&host, 0, sizeof(host));
    host.struct_size = sizeof(host);
    host.log = probe_log;
    host.num_threads = num_threads;
    const wm_plugin_api *api = NULL;
    child_stage(fd, STAGE_QUERY);
    wm_error *err = query(WM_ABI_MAJOR, WM_ABI_MINOR, &host, &api);
    bool usable = !err && api &&
                  api->struct_size >= WM_STRUCT_SIZE(wm_plugin_api, device);
    if (err && api &&
        api->struct_size >= WM_STRUCT_SIZE(wm_plugin_api, error_destroy)) {
      child_error(api, err);
    }
    if (usable && api->get_info) {
      child_stage(fd, STAGE_INFO);
      wm_plugin_info info;
      memset(&info, 0, sizeof(info));
      info.struct_size = sizeof(info);
      err = api->get_info(&info);
      if (err) {
        child_error(api, err);
        usable = false;
      } else {
        child_touch(info.name, 4096);
        child_touch(info.vendor, 4096);
        child_touch(info.version, 4096);
        for (uint32_t i = 0; info.features && i < info.n_features && i < 256;
             i++) {
          child_touch(info.features[i], 4096);
        }
      }
    }
    if (usable && api->enumerate) {
      child_stage(fd, STAGE_ENUM);
      const wm_target_desc *const *targets = NULL;
      uint32_t count = 0;
      err = api->enumerate(&targets, &count);
      if (err) {
        child_error(api, err);
      } else {
        for (uint32_t i = 0; targets && i < count && i < 4096; i++) {
          const wm_target_desc *t = targets[i];
          if (t && t->struct_size >= sizeof(uint32_t) + sizeof(char *)) {
            child_touch(t->name, 4096);
          }
        }
      }
    }
  }
  child_stage(fd, STAGE_DONE);
  _exit(0);
}

static double seconds_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) * 1e-9;
}

// Waits up to |left_s| seconds for |pid| to end; true with its status.
static bool wait_child(pid_t pid, double left_s, int *out_status) {
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    pid_t got = waitpid(pid, out_status, WNOHANG);
    if (got == pid) {
      return true;
    }
    if (got < 0 && errno != EINTR) {
      *out_status = -1;  // not ours to wait for (SIGCHLD ignored)
      return true;
    }
    if (seconds_since(&t0) >= left_s) {
      return false;
    }
    struct timespec nap = {0, 1000000};
    nanosleep(&nap, NULL);
  }
}

// Formats a timeout for a message: "10 s", "0.5 s".
static void format_seconds(double s, char *out, size_t cap) {
  snprintf(out, cap, "%g s", s);
}

// Loads |path| in a child within the registry's timeout. Sets *out_ran
// false when no child could be started; else *out_reason to NULL (safe to
// load) or a heap line saying what happened, *out_hang when it timed out.
static wm_status_t probe_run(wm_registry_t *r, const char *path, bool *out_ran,
                             char **out_reason, bool *out_hang) {
  *out_ran = false;
  *out_reason = NULL;
  *out_hang = false;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    debug_line(r, "cannot probe %s: pipe: %s", path, strerror(errno));
    return NULL;
  }
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t pid = fork();
  if (pid < 0) {
    debug_line(r, "cannot probe %s: fork: %s", path, strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return NULL;
  }
  if (pid == 0) {
    close(fds[0]);
    probe_child(path, fds[1], r->num_threads);
  }
  close(fds[1]);
  *out_ran = true;
  char stage = STAGE_LOAD;
  bool done = false, timed_out = false;
  for (;;) {
    double left = r->probe_timeout_s - seconds_since(&t0);
    if (left <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    int n = poll(&p, 1, (int)ceil(left * 1000));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n == 0) {
      timed_out = true;
      break;
    }
    char buf[64];
    ssize_t got = n > 0 ? read(fds[0], buf, sizeof(buf)) : -1;
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      break;  // the child has ended (or closed its end)
    }
    for (ssize_t i = 0; i < got; i++) {
      if (buf[i] == STAGE_DONE) {
        done = true;
      } else {
        stage = buf[i];
      }
    }
  }
  close(fds[0]);
  int status = 0;
  if (timed_out ||
      !wait_child(pid, r->probe_timeout_s - seconds_since(&t0), &status)) {
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    timed_out = !done;
    status = done ? 0 : status;
  }
  char line[256];
  if (timed_out) {
    char secs[32];
    format_seconds(r->probe_timeout_s, secs, sizeof(secs));
    snprintf(line, sizeof(line), "did not answer within %s %s (%s)", secs,
             stage_text(stage), PROBE_TIMEOUT_ENV);
    *out_hang = true;
  } else if (status == -1) {
    if (done) {
      line[0] = '\0';
    } else {
      snprintf(line, sizeof(line), "ended %s (how is unknown)",
               stage_text(stage));
    }
  } else if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char *name = strsignal(sig);
    snprintf(line, sizeof(line), "killed by signal %d (%s) %s", sig,
             name ? name : "unknown", stage_text(stage));
  } else if (WIFEXITED(status) && !done) {
    snprintf(line, sizeof(line), "called exit(%d) %s", WEXITSTATUS(status),
             stage_text(stage));
  } else {
    line[0] = '\0';
  }
  debug_line(r, "probed %s in a child in %.1f ms: %s", path,
             seconds_since(&t0) * 1e3, line[0] ? line : "answered");
  if (line[0]) {
    *out_reason = wm_strdup(line);
    if (!*out_reason) {
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory probing \"%s\"", path);
    }
  }
  return NULL;
}

// ------------------------------------------------------ the probe cache
//
// "wmap.plugins/1" JSON in wmap's cache folder: one verdict per plugin
// file, keyed by its real path, size and modification time, so a plugin
// build is probed once. The host's ABI is recorded: another host probes
// again.

static void verdict_free(verdict_t *v) {
  free(v->path);
  free(v->reason);
}

static void cache_clear(wm_registry_t *r) {
  for (size_t i = 0; i < r->n_verdicts; i++) {
    verdict_free(&r->verdicts[i]);
  }
  r->n_verdicts = 0;
}

static bool json_int(const cJSON *o, const char *key, int64_t lo, int64_t hi,
                     int64_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
      v->valuedouble < (double)lo || v->valuedouble > (double)hi) {
    return false;
  }
  *out = (int64_t)v->valuedouble;
  return true;
}

// Adds the entries of |doc|; false (*out_why set) when it is malformed.
static bool cache_parse(wm_registry_t *r, const cJSON *doc, const char **why,
                        bool *out_other_abi) {
  *out_other_abi = false;
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(doc, "format");
  const cJSON *abi = cJSON_GetObjectItemCaseSensitive(doc, "host_abi");
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "plugins");
  if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, CACHE_FORMAT) != 0) {
    *why = "no \"format\": \"" CACHE_FORMAT "\"";
    return false;
  }
  char want_abi[32];
  snprintf(want_abi, sizeof(want_abi), "%d.%d", WM_ABI_MAJOR, WM_ABI_MINOR);
  if (!cJSON_IsString(abi) || !cJSON_IsArray(list)) {
    *why = "no \"host_abi\" string or \"plugins\" array";
    return false;
  }
  if (strcmp(abi->valuestring, want_abi) != 0) {
    *out_other_abi = true;
    return true;
  }
  const cJSON *e;
  cJSON_ArrayForEach(e, list) {
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(e, "path");
    const cJSON *verdict = cJSON_GetObjectItemCaseSensitive(e, "verdict");
    const cJSON *reason = cJSON_GetObjectItemCaseSensitive(e, "reason");
    const cJSON *timeout = cJSON_GetObjectItemCaseSensitive(e, "timeout_s");
    verdict_t v = {0};
    bool ok =
        cJSON_IsString(path) && path->valuestring[0] == '/' &&
        cJSON_IsString(verdict) &&
        json_int(e, "size", 0, INT64_C(1) << 52, &v.size) &&
        json_int(e, "mtime_s", -(INT64_C(1) << 52), INT64_C(1) << 52,
                 &v.mtime_s) &&
        json_int(e, "mtime_ns", 0, 999999999, &v.mtime_ns) &&
        (!timeout || (cJSON_IsNumber(timeout) && timeout->valuedouble >= 0));
    bool good = ok && strcmp(verdict->valuestring, "ok") == 0 && !reason;
    bool bad = ok && strcmp(verdict->valuestring, "refused") == 0 &&
               cJSON_IsString(reason) && reason->valuestring[0] &&
               !strpbrk(reason->valuestring, "\n\r");
    if (!good && !bad) {
      *why =
          "an entry without path, size, mtime_s, mtime_ns and a verdict "
          "(ok, or refused with a reason)";
      return false;
    }
    if (wm_grow((void **)&r->verdicts, &r->cap_verdicts, r->n_verdicts + 1,
                sizeof(*r->verdicts))) {
      *why = "out of memory";
      return false;
    }
    v.path = wm_strdup(path->valuestring);
    v.reason = bad ? wm_strdup(reason->valuestring) : NULL;
    v.timeout_s = timeout ? timeout->valuedouble : 0;
    if (!v.path || (bad && !v.reason)) {
      verdict_free(&v);
      *why = "out of memory";
      return false;
    }
    r->verdicts[r->n_verdicts++] = v;
  }
  return true;
}

// Reads the cache file once; a corrupt one is ignored with a warning and
// written anew.
static void cache_load(wm_registry_t *r) {
  if (r->cache_read) {
    return;
  }
  r->cache_read = true;
  wm_status_t s = wm_cache_folder(NULL, CACHE_FILE, &r->cache_path);
  if (s) {
    debug_line(r, "no probe cache: %s", wm_status_message(s));
    wm_status_free(s);
    return;
  }
  struct stat st;
  if (stat(r->cache_path, &st) != 0) {
    debug_line(r, "probe cache %s: none yet", r->cache_path);
    return;
  }
  const char *why = NULL;
  bool other_abi = false;
  cJSON *doc = NULL;
  wm_status_t bad =
      wm_json_load(r->cache_path, "plugin probe cache", CACHE_MAX_BYTES, &doc);
  if (bad) {
    why = wm_status_message(bad);
  } else if (!cJSON_IsObject(doc)) {
    why = "not a JSON object";
  } else {
    cache_parse(r, doc, &why, &other_abi);
  }
  cJSON_Delete(doc);
  if (why) {
    cache_clear(r);
    r->cache_dirty = true;
    if (bad) {  // the message names the cache and its path
      wm_log(WM_LOG_WARN, "loader: ignoring the %s", why);
    } else {
      wm_log(WM_LOG_WARN, "loader: ignoring the plugin probe cache \"%s\": %s",
             r->cache_path, why);
    }
  } else if (other_abi) {
    r->cache_dirty = true;
    debug_line(r, "probe cache %s: made by a host of another ABI, ignored",
               r->cache_path);
  } else {
    debug_line(r, "probe cache %s: %zu verdicts", r->cache_path, r->n_verdicts);
  }
  wm_status_free(bad);
}

static bool verdict_matches(const verdict_t *v, const struct stat *st) {
  return v->size == (int64_t)st->st_size &&
         v->mtime_s == (int64_t)st->st_mtim.tv_sec &&
         v->mtime_ns == (int64_t)st->st_mtim.tv_nsec;
}

// Writes the cache file if it changed, keeping the verdicts of files
// that are still there unchanged; failures are only traced.
static void cache_store(wm_registry_t *r) {
  if (!r->cache_dirty || !r->cache_path) {
    return;
  }
  char abi[32];
  snprintf(abi, sizeof(abi), "%d.%d", WM_ABI_MAJOR, WM_ABI_MINOR);
  wm_strbuf_t b;
  wm_strbuf_init(&b);
  wm_strbuf_printf(&b,
                   "{\n  \"format\": \"%s\",\n  \"host_abi\": \"%s\",\n"
                   "  \"plugins\": [",
                   CACHE_FORMAT, abi);
  size_t n = 0;
  for (size_t i = 0; i < r->n_verdicts; i++) {
    const verdict_t *v = &r->verdicts[i];
    struct stat st;
    if (stat(v->path, &st) != 0 || !verdict_matches(v, &st)) {
      continue;
    }
    wm_strbuf_printf(&b, "%s\n    {\"path\": ", n++ ? "," : "");
    wm_strbuf_json_string(&b, v->path);
    wm_strbuf_printf(&b,
                     ", \"size\": %lld, \"mtime_s\": %lld, \"mtime_ns\": "
                     "%lld, \"verdict\": \"%s\"",
                     (long long)v->size, (long long)v->mtime_s,
                     (long long)v->mtime_ns, v->reason ? "refused" : "ok");
    if (v->reason) {
      wm_strbuf_printf(&b, ", \"reason\": ");
      wm_strbuf_json_string(&b, v->reason);
    }
    if (v->timeout_s > 0) {
      wm_strbuf_printf(&b, ", \"timeout_s\": %g", v->timeout_s);
    }
    wm_strbuf_printf(&b, "}");
  }
  wm_strbuf_printf(&b, "\n  ]\n}\n");
  // Written beside and renamed, so a reader never sees half a file.
  size_t len = strlen(r->cache_path) + 32;
  char *tmp = wm_malloc(len);
  wm_status_t s = b.failed || !tmp
                      ? WM_ERROR(RESOURCE_EXHAUSTED, "out of memory")
                      : wm_make_parents(r->cache_path);
  if (!s) {
    snprintf(tmp, len, "%s.%ld.tmp", r->cache_path, (long)getpid());
    s = wm_file_write(tmp, wm_strbuf_str(&b), b.len);
  }
  if (!s && rename(tmp, r->cache_path) != 0) {
    s = WM_ERROR(UNAVAILABLE, "cannot rename \"%s\": %s", tmp, strerror(errno));
  }
  if (s) {
    if (tmp) {
      unlink(tmp);  // may not exist
    }
    debug_line(r, "probe cache %s not written: %s", r->cache_path,
               wm_status_message(s));
    wm_status_free(s);
  } else {
    debug_line(r, "probe cache %s: %zu verdicts written", r->cache_path, n);
  }
  free(tmp);
  wm_strbuf_deinit(&b);
}

// Whether |path| may be loaded in this process: the cached verdict of
// this build of the file, else a probe's (then cached). *out_reason is
// NULL or a heap line saying why it is refused.
static wm_status_t probe_verdict(wm_registry_t *r, const char *path,
                                 char **out_reason) {
  *out_reason = NULL;
  if (r->probe_timeout_s <= 0) {
    debug_line(r, "not probing %s (%s=0)", path, PROBE_TIMEOUT_ENV);
    return NULL;
  }
  struct stat st;
  char real[PATH_MAX];
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || !realpath(path, real)) {
    return NULL;  // dlopen says what is wrong with it
  }
  cache_load(r);
  verdict_t *v = NULL;
  for (size_t i = 0; i < r->n_verdicts && !v; i++) {
    if (strcmp(r->verdicts[i].path, real) == 0) {
      v = &r->verdicts[i];
    }
  }
  if (v && verdict_matches(v, &st) &&
      (v->timeout_s <= 0 || v->timeout_s >= r->probe_timeout_s)) {
    debug_line(r, "probe verdict of %s from the cache: %s", path,
               v->reason ? v->reason : "answered");
    if (v->reason) {
      *out_reason = wm_strdup(v->reason);
      if (!*out_reason) {
        return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory loading \"%s\"",
                        path);
      }
    }
    return NULL;
  }
  char secs[32];
  format_seconds(r->probe_timeout_s, secs, sizeof(secs));
  debug_line(r, "probing %s in a child (timeout %s)", path, secs);
  bool ran, hang;
  char *reason = NULL;
  WM_RETURN_IF_ERROR(probe_run(r, path, &ran, &reason, &hang));
  if (!ran) {
    return NULL;  // loaded unprobed, as before probes
  }
  if (!v) {
    wm_status_t s = wm_grow((void **)&r->verdicts, &r->cap_verdicts,
                            r->n_verdicts + 1, sizeof(*r->verdicts));
    if (s) {
      free(reason);
      return s;
    }
    v = &r->verdicts[r->n_verdicts++];
    memset(v, 0, sizeof(*v));
    v->path = wm_strdup(real);
    if (!v->path) {
      r->n_verdicts--;
      free(reason);
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory loading \"%s\"", path);
    }
  }
  free(v->reason);
  v->reason = NULL;
  v->size = (int64_t)st.st_size;
  v->mtime_s = (int64_t)st.st_mtim.tv_sec;
  v->mtime_ns = (int64_t)st.st_mtim.tv_nsec;
  v->timeout_s = hang ? r->probe_timeout_s : 0;
  r->cache_dirty = true;
  if (reason) {
    v->reason = wm_strdup(reason);
    if (!v->reason) {
      free(reason);
      return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory loading \"%s\"", path);
    }
  }
  *out_reason = reason;
  return NULL;
}

// The probe's timeout: WMAP_PLUGIN_PROBE_TIMEOUT seconds (0: no probes),
// else the default; a value that is not a number of seconds is ignored
// with a warning.
static double probe_timeout(void) {
  const char *v = getenv(PROBE_TIMEOUT_ENV);
  if (!v || !*v) {
    return PROBE_TIMEOUT_DEFAULT_S;
  }
  char *end;
  errno = 0;
  double t = strtod(v, &end);
  if (*end || errno || !(t >= 0) || t > 3600) {
    wm_log(WM_LOG_WARN,
           "loader: ignoring %s=\"%s\" (want seconds from 0 to 3600); "
           "probing with %g s",
           PROBE_TIMEOUT_ENV, v, PROBE_TIMEOUT_DEFAULT_S);
    return PROBE_TIMEOUT_DEFAULT_S;
  }
  return t;
}

// Loads one plugin file; a failure to load is a refusal, not an error.
static wm_status_t load_file(wm_registry_t *r, const char *path) {
  bool seen;
  WM_RETURN_IF_ERROR(check_seen(r, path, &seen));
  if (seen) {
    debug_line(r, "skipping %s: already tried", path);
    return NULL;
  }
  debug_line(r, "candidate %s", path);
  // A name without a slash would make dlopen search the library path.
  char local[PATH_MAX + 2];
  const char *open_path = path;
  if (!strchr(path, '/')) {
    snprintf(local, sizeof(local), "./%s", path);
    open_path = local;
  }
  char *fault = NULL;
  WM_RETURN_IF_ERROR(probe_verdict(r, open_path, &fault));
  if (fault) {
    wm_status_t s = refuse(r, path, WM_REFUSAL_FAULT, "%s", fault);
    free(fault);
    return s;
  }
  dlerror();
  void *handle = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    size_t n = strlen(open_path);
    if (why && strncmp(why, open_path, n) == 0 &&
        strncmp(why + n, ": ", 2) == 0) {
      why += n + 2;  // the refusal line names the file already
    }
    return refuse(r, path, WM_REFUSAL_UNUSABLE, "dlopen failed: %s",
                  why ? why : "unknown error");
  }
  void *sym = dlsym(handle, WM_PLUGIN_QUERY_SYMBOL);
  if (!sym) {
    dlclose(handle);
    return refuse(r, path, WM_REFUSAL_UNUSABLE,
                  "no symbol %s (not a wmap backend)", WM_PLUGIN_QUERY_SYMBOL);
  }
  wm_plugin_query_fn query;
  memcpy(&query, &sym, sizeof(query));
  wm_backend_t *b = NULL;
  wm_status_t s = wm_backend_create_ex(query, path, r->num_threads, handle, &b);
  if (s) {
    wm_status_t rs =
        refuse(r, path, WM_REFUSAL_UNUSABLE, "%s", reason_of(s, path));
    wm_status_free(s);
    return rs;
  }
  const wm_backend_t *other = find_loaded(r, wm_backend_name(b));
  if (other) {
    s = refuse(r, path, WM_REFUSAL_CONFLICT,
               "backend name %s already loaded from %s", wm_backend_name(b),
               wm_backend_origin(other));
    wm_backend_destroy(b);
    return s;
  }
  s = wm_grow((void **)&r->backends, &r->cap_backends, r->n_backends + 1,
              sizeof(*r->backends));
  if (s) {
    wm_backend_destroy(b);
    return s;
  }
  r->backends[r->n_backends++] = b;
  const wm_plugin_api *api = wm_backend_api(b);
  debug_line(r, "loaded %s as \"%s\" (version %s, ABI %u.%u, %u targets)", path,
             wm_backend_name(b), wm_backend_version(b), api->abi_major,
             api->abi_minor, wm_backend_target_count(b));
  return NULL;
}

static bool is_candidate_name(const char *name) {
  size_t n = strlen(name);
  size_t np = strlen(FILE_PREFIX), ns = strlen(FILE_SUFFIX);
  return n > np + ns && strncmp(name, FILE_PREFIX, np) == 0 &&
         strcmp(name + n - ns, FILE_SUFFIX) == 0;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

// Loads every libwmap_backend_*.so in |dir|, in name order; a folder the
// caller named (|explicit_entry|) without one is refused.
static wm_status_t load_dir(wm_registry_t *r, const char *dir,
                            bool explicit_entry) {
  DIR *d = opendir(dir);
  if (!d) {
    debug_line(r, "cannot read folder %s: %s", dir, strerror(errno));
    return NULL;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  wm_status_t s = NULL;
  struct dirent *e;
  while (!s && (e = readdir(d)) != NULL) {
    if (!is_candidate_name(e->d_name)) {
      continue;
    }
    s = wm_grow((void **)&names, &cap, n + 1, sizeof(*names));
    if (!s) {
      names[n] = wm_strdup(e->d_name);
      if (names[n]) {
        n++;
      } else {
        s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory reading \"%s\"", dir);
      }
    }
  }
  closedir(d);
  if (n > 1) {
    qsort(names, n, sizeof(*names), compare_names);
  }
  debug_line(r, "folder %s: %zu candidates", dir, n);
  if (!s && n == 0 && explicit_entry) {
    s = refuse(r, dir, WM_REFUSAL_NOT_FOUND,
               "folder holds no backend plugin (" FILE_PREFIX "*" FILE_SUFFIX
               ")");
  }
  for (size_t i = 0; i < n && !s; i++) {
    size_t len = strlen(dir) + strlen(names[i]) + 2;
    char *path = wm_malloc(len);
    if (!path) {
      s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory reading \"%s\"", dir);
      break;
    }
    snprintf(path, len, "%s/%s", dir, names[i]);
    s = load_file(r, path);
    free(path);
  }
  for (size_t i = 0; i < n; i++) {
    free(names[i]);
  }
  free(names);
  return s;
}

// Loads one search-path entry: a folder or a plugin file. A missing entry
// is refused when |explicit_entry| (the user named it), else only traced.
static wm_status_t load_entry(wm_registry_t *r, const char *entry,
                              const char *from, bool explicit_entry) {
  struct stat st;
  if (stat(entry, &st) != 0) {
    if (explicit_entry) {
      return refuse(r, entry, WM_REFUSAL_NOT_FOUND,
                    "%s entry does not exist: %s", from, strerror(errno));
    }
    debug_line(r, "skipping %s entry %s: %s", from, entry, strerror(errno));
    return NULL;
  }
  debug_line(r, "searching %s entry %s", from, entry);
  if (S_ISDIR(st.st_mode)) {
    return load_dir(r, entry, explicit_entry);
  }
  return load_file(r, entry);
}

// Loads each entry of the colon-separated |list|.
static wm_status_t load_env_path(wm_registry_t *r, const char *list) {
  char *copy = wm_strdup(list);
  if (!copy) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory reading %s",
                    "WMAP_BACKEND_PATH");
  }
  wm_status_t s = NULL;
  char *rest = copy;
  while (!s && rest) {
    char *entry = rest;
    char *colon = strchr(rest, ':');
    if (colon) {
      *colon = '\0';
      rest = colon + 1;
    } else {
      rest = NULL;
    }
    if (*entry) {
      s = load_entry(r, entry, "WMAP_BACKEND_PATH", false);
    }
  }
  free(copy);
  return s;
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

// Where this code lives: the file of libwmap.so when the registry runs
// from the shared library, else the executable it is linked into. The
// folder is written into |dir| (PATH_MAX); false when it cannot be found.
static bool own_folder(wm_registry_t *r, char *dir) {
  static const char anchor = 0;  // an address inside this code's file
  Dl_info info;
  struct link_map *map = NULL;
  const char *file = NULL;
  if (dladdr1(&anchor, &info, (void **)&map, RTLD_DL_LINKMAP) && map &&
      map->l_name && map->l_name[0]) {
    file = map->l_name;  // a shared library ("" is the executable)
  } else {
    file = "/proc/self/exe";
  }
  if (!realpath(file, dir)) {
    debug_line(r, "cannot find where %s lives: %s", file, strerror(errno));
    return false;
  }
  char *slash = strrchr(dir, '/');
  if (!slash) {
    return false;
  }
  *slash = '\0';
  debug_line(r, "this code lives in %s", dir);
  return true;
}

// Loads the install's own backend folder, found from where this code
// lives: <libdir>/wmap/backends beside libwmap.so, <exe dir>/../<libdir>/
// wmap/backends beside an installed executable, or <dir>/backends in the
// build tree; else the folder of the configured install prefix (a program
// linked with libwmap.a, installed elsewhere).
static wm_status_t load_install_dir(wm_registry_t *r, const char *dir) {
  if (dir) {
    return *dir ? load_entry(r, dir, "install", false) : NULL;
  }
  char own[PATH_MAX];
  if (!own_folder(r, own)) {
    return NULL;
  }
  char lib[PATH_MAX + 32], exe[PATH_MAX + 64], tree[PATH_MAX + 32];
  snprintf(lib, sizeof(lib), "%s/wmap/backends", own);
  snprintf(exe, sizeof(exe), "%s/../%s/wmap/backends", own,
           WMAP_INSTALL_LIBDIR);
  snprintf(tree, sizeof(tree), "%s/backends", own);
  const char *const candidates[] = {lib, exe, tree,
                                    WMAP_INSTALL_FULL_LIBDIR "/wmap/backends"};
  for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
    char real[PATH_MAX];
    if (is_dir(candidates[i]) && realpath(candidates[i], real)) {
      return load_entry(r, real, "install", false);
    }
  }
  debug_line(r, "no backend folder beside %s", own);
  return NULL;
}

static bool env_flag(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

wm_status_t wm_registry_create(const wm_registry_options_t *opts,
                               wm_registry_t **out_registry) {
  *out_registry = NULL;
  wm_registry_options_t none = {0};
  if (!opts) {
    opts = &none;
  }
  if (opts->n_paths > 0 && !opts->paths) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "registry options: %zu paths and no array", opts->n_paths);
  }
  wm_registry_t *r = wm_calloc(1, sizeof(*r));
  if (!r) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory creating a registry");
  }
  r->num_threads = opts->num_threads;
  r->debug = opts->debug || env_flag("WMAP_LOADER_DEBUG");
  r->quiet = opts->quiet;
  r->probe_timeout_s = probe_timeout();
  wm_status_t s = NULL;
  if (opts->builtin_query) {
    debug_line(r, "candidate %s", BUILTIN_ORIGIN);
    wm_backend_t *b = NULL;
    s = wm_backend_create_ex(opts->builtin_query, BUILTIN_ORIGIN,
                             r->num_threads, NULL, &b);
    if (s) {
      wm_status_t rs = refuse(r, BUILTIN_ORIGIN, WM_REFUSAL_UNUSABLE, "%s",
                              reason_of(s, BUILTIN_ORIGIN));
      wm_status_free(s);
      s = rs;
    } else {
      r->builtin = b;
      debug_line(r, "loaded %s as \"%s\"", BUILTIN_ORIGIN, wm_backend_name(b));
    }
  }
  for (size_t i = 0; i < opts->n_paths && !s; i++) {
    if (opts->paths[i] && *opts->paths[i]) {
      s = load_entry(r, opts->paths[i], "--backend-path", true);
    }
  }
  const char *env = opts->no_env ? NULL : getenv("WMAP_BACKEND_PATH");
  if (!s && env) {
    s = load_env_path(r, env);
  }
  if (!s) {
    s = load_install_dir(r, opts->install_dir);
  }
  if (s) {
    wm_registry_destroy(r);
    return s;
  }
  cache_store(r);
  debug_line(r, "%zu backends loaded, %zu candidates refused",
             wm_registry_count(r), r->n_refused);
  *out_registry = r;
  return NULL;
}

void wm_registry_destroy(wm_registry_t *registry) {
  if (!registry) {
    return;
  }
  // Later plugins first, so a library is closed after those loaded after.
  for (size_t i = registry->n_backends; i > 0; i--) {
    wm_backend_destroy(registry->backends[i - 1]);
  }
  wm_backend_destroy(registry->builtin);
  free(registry->backends);
  for (size_t i = 0; i < registry->n_refused; i++) {
    free(registry->refused[i].path);
    free(registry->refused[i].reason);
  }
  free(registry->refused);
  for (size_t i = 0; i < registry->n_seen; i++) {
    free(registry->seen[i]);
  }
  free(registry->seen);
  cache_clear(registry);
  free(registry->verdicts);
  free(registry->cache_path);
  free(registry);
}

size_t wm_registry_count(const wm_registry_t *registry) {
  return registry->n_backends + (registry->builtin ? 1 : 0);
}

wm_backend_t *wm_registry_backend(const wm_registry_t *registry, size_t i) {
  if (i < registry->n_backends) {
    return registry->backends[i];
  }
  return i == registry->n_backends ? registry->builtin : NULL;
}

wm_status_t wm_registry_find(const wm_registry_t *registry, const char *name,
                             wm_backend_t **out_backend) {
  *out_backend = NULL;
  size_t n = wm_registry_count(registry);
  for (size_t i = 0; i < n; i++) {
    wm_backend_t *b = wm_registry_backend(registry, i);
    if (strcmp(wm_backend_name(b), name) == 0) {
      *out_backend = b;
      return NULL;
    }
  }
  wm_strbuf_t names;
  wm_strbuf_init(&names);
  for (size_t i = 0; i < n; i++) {
    wm_strbuf_printf(&names, "%s%s", i ? ", " : "",
                     wm_backend_name(wm_registry_backend(registry, i)));
  }
  wm_status_t s =
      WM_ERROR(NOT_FOUND, "no backend named \"%s\" (available: %s%s)", name,
               n ? wm_strbuf_str(&names) : "none",
               registry->n_refused ? "; others were refused" : "");
  wm_strbuf_deinit(&names);
  return s;
}

wm_status_t wm_registry_take(wm_registry_t *registry, const char *name,
                             wm_backend_t **out_backend) {
  WM_RETURN_IF_ERROR(wm_registry_find(registry, name, out_backend));
  if (*out_backend == registry->builtin) {
    registry->builtin = NULL;
    return NULL;
  }
  for (size_t i = 0; i < registry->n_backends; i++) {
    if (registry->backends[i] == *out_backend) {
      memmove(&registry->backends[i], &registry->backends[i + 1],
              (registry->n_backends - i - 1) * sizeof(*registry->backends));
      registry->n_backends--;
      break;
    }
  }
  return NULL;
}

size_t wm_registry_refused_count(const wm_registry_t *registry) {
  return registry->n_refused;
}

const char *wm_registry_refused_path(const wm_registry_t *registry, size_t i) {
  return i < registry->n_refused ? registry->refused[i].path : NULL;
}

const char *wm_registry_refused_reason(const wm_registry_t *registry,
                                       size_t i) {
  return i < registry->n_refused ? registry->refused[i].reason : NULL;
}

wm_refusal_kind_t wm_registry_refused_kind(const wm_registry_t *registry,
                                           size_t i) {
  return i < registry->n_refused ? registry->refused[i].kind
                                 : WM_REFUSAL_UNUSABLE;
}

wm_status_t wm_registry_check_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    return WM_ERROR(NOT_FOUND, "\"%s\" does not exist (%s)", path,
                    strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (!d) {
      return WM_ERROR(UNAVAILABLE, "cannot read folder \"%s\": %s", path,
                      strerror(errno));
    }
    bool any = false;
    struct dirent *e;
    while (!any && (e = readdir(d)) != NULL) {
      any = is_candidate_name(e->d_name);
    }
    closedir(d);
    if (!any) {
      return WM_ERROR(NOT_FOUND,
                      "folder \"%s\" holds no backend plugin (" FILE_PREFIX
                      "*" FILE_SUFFIX ")",
                      path);
    }
    return NULL;
  }
  // A plugin is a shared library: an ELF file.
  unsigned char magic[4] = {0};
  FILE *f = S_ISREG(st.st_mode) ? fopen(path, "rb") : NULL;
  size_t n = f ? fread(magic, 1, sizeof(magic), f) : 0;
  if (f) {
    fclose(f);
  }
  if (n != sizeof(magic) || memcmp(magic, "\177ELF", 4) != 0) {
    return WM_ERROR(INVALID_ARGUMENT,
                    "\"%s\" is not a backend plugin (not a shared library)",
                    path);
  }
  return NULL;
}
