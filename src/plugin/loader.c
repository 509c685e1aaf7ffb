// The backend registry: finds plugin files, dlopens them, loads them
// through wm_backend_create_ex and keeps one line per refused candidate.
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wmap/plugin.h"

#define FILE_PREFIX "libwmap_backend_"
#define FILE_SUFFIX ".so"
#define BUILTIN_ORIGIN "built-in"

typedef struct refusal {
  char *path;    // candidate file (or "built-in")
  char *reason;  // one line
} refusal_t;

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
static wm_status_t refuse(wm_registry_t *r, const char *path, const char *fmt,
                          ...) WM_PRINTF(3, 4);

static wm_status_t refuse(wm_registry_t *r, const char *path, const char *fmt,
                          ...) {
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
  dlerror();
  void *handle = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    size_t n = strlen(open_path);
    if (why && strncmp(why, open_path, n) == 0 &&
        strncmp(why + n, ": ", 2) == 0) {
      why += n + 2;  // the refusal line names the file already
    }
    return refuse(r, path, "dlopen failed: %s", why ? why : "unknown error");
  }
  void *sym = dlsym(handle, WM_PLUGIN_QUERY_SYMBOL);
  if (!sym) {
    dlclose(handle);
    return refuse(r, path, "no symbol %s (not a wmap backend)",
                  WM_PLUGIN_QUERY_SYMBOL);
  }
  wm_plugin_query_fn query;
  memcpy(&query, &sym, sizeof(query));
  wm_backend_t *b = NULL;
  wm_status_t s = wm_backend_create_ex(query, path, r->num_threads, handle, &b);
  if (s) {
    wm_status_t rs = refuse(r, path, "%s", reason_of(s, path));
    wm_status_free(s);
    return rs;
  }
  const wm_backend_t *other = find_loaded(r, wm_backend_name(b));
  if (other) {
    s = refuse(r, path, "backend name %s already loaded from %s",
               wm_backend_name(b), wm_backend_origin(other));
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

// Loads every libwmap_backend_*.so in |dir|, in name order.
static wm_status_t load_dir(wm_registry_t *r, const char *dir) {
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
      return refuse(r, entry, "%s entry does not exist: %s", from,
                    strerror(errno));
    }
    debug_line(r, "skipping %s entry %s: %s", from, entry, strerror(errno));
    return NULL;
  }
  debug_line(r, "searching %s entry %s", from, entry);
  if (S_ISDIR(st.st_mode)) {
    return load_dir(r, entry);
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
  wm_status_t s = NULL;
  if (opts->builtin_query) {
    debug_line(r, "candidate %s", BUILTIN_ORIGIN);
    wm_backend_t *b = NULL;
    s = wm_backend_create_ex(opts->builtin_query, BUILTIN_ORIGIN,
                             r->num_threads, NULL, &b);
    if (s) {
      wm_status_t rs =
          refuse(r, BUILTIN_ORIGIN, "%s", reason_of(s, BUILTIN_ORIGIN));
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
