// C source to a loaded shared object, through the system compiler and a
// content-addressed cache of objects (generated kernels, format "c").
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wmap/base.h"

struct wm_cc_lib {
  void *handle;
};

static const char kFlags[] =
    "-O2 -march=native -std=gnu11 -Wno-psabi -fPIC "
    "-shared";

// The compiler command: $WMAP_CC or cc.
static const char *compiler(void) {
  const char *cc = getenv("WMAP_CC");
  return cc && *cc ? cc : "cc";
}

// Whether |s| can stand inside single quotes of a shell command.
static bool quotable(const char *s) {
  return !strchr(s, '\'');
}

bool wm_cc_available(void) {
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "%s --version > /dev/null 2>&1", compiler());
  return system(cmd) == 0;
}

// Appends the first line of `cc --version` (the compiler's identity) to
// |h|; an error when the compiler does not run.
static wm_status_t hash_compiler(wm_sha256_t *h) {
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "%s --version 2>/dev/null", compiler());
  FILE *p = popen(cmd, "r");
  char line[256] = "";
  bool ok = p && fgets(line, sizeof(line), p) != NULL;
  int rc = p ? pclose(p) : -1;
  if (!ok || rc != 0) {
    return WM_ERROR(UNAVAILABLE,
                    "cc: the C compiler \"%s\" does not run (set WMAP_CC to "
                    "one that does)",
                    compiler());
  }
  wm_sha256_update(h, line, strlen(line));
  return NULL;
}

// The cache key of |source|: 64 hex digits into |key|.
static wm_status_t cache_key(const char *source, char key[65]) {
  wm_sha256_t h;
  wm_sha256_init(&h);
  wm_sha256_update(&h, source, strlen(source));
  const char *cc = compiler();
  wm_sha256_update(&h, cc, strlen(cc) + 1);
  wm_sha256_update(&h, kFlags, sizeof(kFlags));
  WM_RETURN_IF_ERROR(hash_compiler(&h));
  char flags[4096];
  if (wm_cpuinfo_get("flags", flags, sizeof(flags))) {
    wm_sha256_update(&h, flags, strlen(flags));
  }
  wm_sha256_final(&h, key);
  return NULL;
}

// The first lines of file |path| (the compiler's messages) into |out|.
static void read_head(const char *path, char *out, size_t cap) {
  out[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) {
    return;
  }
  size_t n = fread(out, 1, cap - 1, f);
  fclose(f);
  out[n] = '\0';
}

// Compiles |source| into |so| (written under a temporary name, then
// renamed, so a reader never sees half an object).
static wm_status_t compile(const char *source, const char *so) {
  size_t n = strlen(so) + 16;
  char *c_path = wm_malloc(n), *tmp_so = wm_malloc(n), *log = wm_malloc(n);
  wm_strbuf_t cmd;
  wm_strbuf_init(&cmd);
  wm_status_t s = c_path && tmp_so && log
                      ? NULL
                      : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  if (!s) {
    snprintf(c_path, n, "%s.%d.c", so, (int)getpid());
    snprintf(tmp_so, n, "%s.%d.tmp", so, (int)getpid());
    snprintf(log, n, "%s.%d.log", so, (int)getpid());
    s = wm_file_write(c_path, source, strlen(source));
  }
  if (!s) {
    wm_strbuf_printf(&cmd, "%s %s -o '%s' '%s' -lm > '%s' 2>&1", compiler(),
                     kFlags, tmp_so, c_path, log);
    int rc = cmd.failed ? -1 : system(wm_strbuf_str(&cmd));
    if (rc != 0) {
      char head[1024];
      read_head(log, head, sizeof(head));
      s = WM_ERROR(INTERNAL, "cc: %s failed compiling C source:\n%s",
                   compiler(), head);
    } else if (rename(tmp_so, so) != 0) {
      s = WM_ERROR(UNAVAILABLE, "cc: cannot move \"%s\" into place: %s", tmp_so,
                   strerror(errno));
    }
  }
  if (c_path) {
    remove(c_path);
  }
  if (log) {
    remove(log);
  }
  if (tmp_so && s) {
    remove(tmp_so);
  }
  wm_strbuf_deinit(&cmd);
  free(c_path);
  free(tmp_so);
  free(log);
  return s;
}

wm_status_t wm_cc_build(const char *source, const char *cache_dir,
                        wm_cc_lib_t **out_lib, bool *out_compiled) {
  *out_lib = NULL;
  if (out_compiled) {
    *out_compiled = false;
  }
  char key[65];
  WM_RETURN_IF_ERROR(cache_key(source, key));
  char *dir = NULL;
  WM_RETURN_IF_ERROR(
      wm_cache_folder(cache_dir, cache_dir ? NULL : "gen", &dir));
  size_t n = strlen(dir) + 80;
  char *so = wm_malloc(n);
  wm_status_t s = so ? NULL : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  if (!s && !quotable(dir)) {
    s = WM_ERROR(INVALID_ARGUMENT,
                 "cc: the cache folder \"%s\" has a quote in its name", dir);
  }
  if (!s) {
    snprintf(so, n, "%s/%s.so", dir, key);
    s = wm_make_parents(so);
  }
  struct stat st;
  if (!s && stat(so, &st) != 0) {
    s = compile(source, so);
    if (!s && out_compiled) {
      *out_compiled = true;
    }
  }
  wm_cc_lib_t *lib = s ? NULL : wm_calloc(1, sizeof(*lib));
  if (!s && !lib) {
    s = WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  }
  if (!s) {
    lib->handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle) {
      const char *why = dlerror();
      s = WM_ERROR(INTERNAL, "cc: cannot load \"%s\": %s", so,
                   why ? why : "unknown error");
      free(lib);
      lib = NULL;
    }
  }
  free(so);
  free(dir);
  *out_lib = lib;
  return s;
}

void *wm_cc_symbol(const wm_cc_lib_t *lib, const char *name) {
  return lib && lib->handle ? dlsym(lib->handle, name) : NULL;
}

void wm_cc_close(wm_cc_lib_t *lib) {
  if (lib) {
    if (lib->handle) {
      dlclose(lib->handle);
    }
    free(lib);
  }
}
