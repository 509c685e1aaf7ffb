// wmap zoo: list the built-in reference models and export one as ONNX.
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ops/ops.h"
#include "wmap/onnx.h"
#include "wmap/zoo.h"

static const char zoo_usage[] =
    "usage: wmap zoo list\n"
    "       wmap zoo export SPEC FILE.onnx\n"
    "\n"
    "The built-in reference models (ResNet, MobileNetV2, BERT, GPT-2, MLP),\n"
    "built with deterministic random weights. SPEC is NAME[:key=value,...],\n"
    "e.g. bert-base:layers=2,seq=64; 'wmap zoo list' shows the keys and\n"
    "their defaults.\n"
    "\n"
    "Commands:\n"
    "  list                 list the models, their inputs and keys\n"
    "  export SPEC FILE     build SPEC and write it to the ONNX file FILE\n"
    "\n"
    "Options:\n"
    "  -h, --help           show this help\n";

static int zoo_list(void) {
  int name_w = 4, keys_w = 4;
  wm_strbuf_t keys[16];
  size_t n = wm_zoo_count() < 16 ? wm_zoo_count() : 16;
  for (size_t i = 0; i < n; i++) {
    const wm_zoo_model_t *m = wm_zoo_at(i);
    wm_strbuf_init(&keys[i]);
    for (size_t k = 0; k < m->key_count; k++) {
      wm_strbuf_printf(&keys[i], "%s%s=%lld", k ? "," : "", m->keys[k].name,
                       (long long)m->keys[k].def);
    }
    int nw = (int)strlen(m->name), kw = (int)keys[i].len;
    name_w = nw > name_w ? nw : name_w;
    keys_w = kw > keys_w ? kw : keys_w;
  }
  printf("%-*s  %-*s  %s\n", name_w, "NAME", keys_w, "KEYS=DEFAULTS",
         "DESCRIPTION");
  for (size_t i = 0; i < n; i++) {
    const wm_zoo_model_t *m = wm_zoo_at(i);
    printf("%-*s  %-*s  %s\n", name_w, m->name, keys_w, wm_strbuf_str(&keys[i]),
           m->description);
    wm_strbuf_deinit(&keys[i]);
  }
  return WM_EXIT_OK;
}

static int zoo_export(const char *spec, const char *file) {
  wm_graph_t *g = NULL;
  wm_status_t s = wm_zoo_build(spec, &g);
  if (s && wm_status_code(s) == WM_STATUS_INVALID_ARGUMENT) {
    int rc = wm_cli_usage_error("zoo", "%s", wm_status_message(s));
    wm_status_free(s);
    return rc;
  }
  if (!s) {
    s = wm_ops_check_graph(g);  // the file then carries every value's type
  }
  if (!s) {
    s = wm_onnx_save(g, file);
  }
  if (s) {
    wm_graph_destroy(g);
    return wm_cli_fail(wm_status_annotate(s, "zoo export \"%s\"", spec));
  }
  printf("wrote %s: %s, %zu nodes, %llu parameters\n", file, spec,
         g->node_count, (unsigned long long)wm_graph_param_count(g));
  wm_graph_destroy(g);
  return WM_EXIT_OK;
}

int wm_cli_zoo(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      fputs(zoo_usage, stdout);
      return WM_EXIT_OK;
    }
    if (argv[i][0] == '-' && argv[i][1]) {
      return wm_cli_usage_error("zoo", "unknown option \"%s\"", argv[i]);
    }
  }
  if (argc < 2) {
    return wm_cli_usage_error("zoo", "want a command: list or export");
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "list") == 0) {
    if (argc != 2) {
      return wm_cli_usage_error("zoo", "list takes no arguments, got %d",
                                argc - 2);
    }
    return zoo_list();
  }
  if (strcmp(cmd, "export") == 0) {
    if (argc != 4) {
      return wm_cli_usage_error("zoo", "export wants SPEC and FILE, got %d %s",
                                argc - 2,
                                argc - 2 == 1 ? "argument" : "arguments");
    }
    return zoo_export(argv[2], argv[3]);
  }
  return wm_cli_usage_error("zoo",
                            "unknown command \"%s\"; want list or export", cmd);
}
