// wmap: the command line. One binary, git-style subcommands.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ref.h"

static const char usage[] =
    "usage: wmap <command> [options]\n"
    "\n"
    "Commands:\n"
    "  run MODEL      run an ONNX model and print or save its outputs\n"
    "  conform        run ONNX's backend test suite on a backend\n"
    "\n"
    "Run 'wmap <command> --help' for the options of a command.\n"
    "Exit status: 0 ok, 1 failed, 2 usage error.\n";

int wm_cli_fail(wm_status_t s) {
  fprintf(stderr, "wmap: %s\n", wm_status_message(s));
  wm_status_free(s);
  return WM_EXIT_FAILED;
}

int wm_cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "wmap %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry 'wmap %s --help'.\n", cmd);
  va_end(ap);
  return WM_EXIT_USAGE;
}

char *wm_cli_path(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = n >= 0 ? wm_malloc((size_t)n + 1) : NULL;
  if (p) {
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  return p;
}

wm_status_t wm_cli_backend_open(const char *name, wm_backend_t **out) {
  *out = NULL;
  if (strcmp(name, "ref") != 0) {
    return WM_ERROR(NOT_FOUND, "no backend named \"%s\" (available: ref)",
                    name);
  }
  return wm_backend_create(wm_ref_plugin_query, "built-in", out);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage, stderr);
    return WM_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
      strcmp(cmd, "help") == 0) {
    fputs(usage, stdout);
    return WM_EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("wmap %s\n", WMAP_VERSION);
    return WM_EXIT_OK;
  }
  if (strcmp(cmd, "run") == 0) {
    return wm_cli_run(argc - 1, argv + 1);
  }
  if (strcmp(cmd, "conform") == 0) {
    return wm_cli_conform(argc - 1, argv + 1);
  }
  fprintf(stderr, "wmap: unknown command \"%s\"\n\n%s", cmd, usage);
  return WM_EXIT_USAGE;
}
