// Fuzz target for the ONNX importer: every input goes through the model and
// the TensorProto readers. Models load with a small fixture folder for
// external data (ROOT/model: w.bin, sub/x.bin, a FIFO and a link to
// ROOT/outside/secret.bin). Invariants: no crash or leak; errors are one
// line; nothing is read from outside the folder; a model that imports
// exports and imports again to an equal graph.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_target.h"
#include "wmap/onnx.h"

#define SECRET_BYTE 0xa5  // every byte of the file outside the folder

static char root[64];
static char model_dir[96];

static void put_file(const char *path, int byte, size_t size) {
  FILE *f = fopen(path, "wb");
  if (f) {
    for (size_t i = 0; i < size; i++) {
      fputc(byte >= 0 ? byte : (int)(i & 0xff), f);
    }
    fclose(f);
  }
}

static void remove_fixture(void) {
  static const char *const names[] = {
      "model/w.bin", "model/sub/x.bin",    "model/pipe.bin", "model/escape.bin",
      "model/sub",   "outside/secret.bin", "model",          "outside"};
  char path[160];
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    snprintf(path, sizeof(path), "%s/%s", root, names[i]);
    remove(path);
  }
  rmdir(root);
}

// Returns the model folder of the fixture (NULL if it cannot be made).
static const char *fixture(void) {
  static int state;  // 0 not tried, 1 ready, -1 failed
  if (state) {
    return state > 0 ? model_dir : NULL;
  }
  state = -1;
  snprintf(root, sizeof(root), "/tmp/wm_onnx_fuzzXXXXXX");
  if (!mkdtemp(root)) {
    return NULL;
  }
  atexit(remove_fixture);
  char path[160];
  snprintf(model_dir, sizeof(model_dir), "%s/model", root);
  snprintf(path, sizeof(path), "%s/outside", root);
  if (mkdir(model_dir, 0700) != 0 || mkdir(path, 0700) != 0) {
    return NULL;
  }
  snprintf(path, sizeof(path), "%s/outside/secret.bin", root);
  put_file(path, SECRET_BYTE, 64);
  snprintf(path, sizeof(path), "%s/w.bin", model_dir);
  put_file(path, -1, 256);
  snprintf(path, sizeof(path), "%s/sub", model_dir);
  mkdir(path, 0700);
  snprintf(path, sizeof(path), "%s/sub/x.bin", model_dir);
  put_file(path, 0x3f, 16);
  snprintf(path, sizeof(path), "%s/pipe.bin", model_dir);
  if (mkfifo(path, 0600) != 0) {
    return NULL;
  }
  snprintf(path, sizeof(path), "%s/escape.bin", model_dir);
  if (symlink("../outside/secret.bin", path) != 0) {
    return NULL;
  }
  state = 1;
  return model_dir;
}

// Stops the run when |cond| fails: a finding, not an input error.
static void require(bool cond, const char *what, wm_status_t s) {
  if (!cond) {
    fprintf(stderr, "fuzz invariant broken: %s: %s\n", what,
            wm_status_message(s));
    abort();
  }
}

static void check_error(wm_status_t s) {
  if (s) {
    const char *m = wm_status_message(s);
    require(strchr(m, '\n') == NULL && *m != '\0', "error is one line", s);
    require(wm_status_code(s) != WM_STATUS_INTERNAL, "no internal errors", s);
  }
  wm_status_free(s);
}

// True when |t| could hold bytes of the secret file.
static bool looks_secret(const wm_tensor_t *t) {
  if (t->dtype == WM_DTYPE_STRING || t->nbytes < 4) {
    return false;
  }
  const uint8_t *p = t->data;
  for (size_t i = 0; i < t->nbytes; i++) {
    if (p[i] != SECRET_BYTE) {
      return false;
    }
  }
  return true;
}

static void fuzz_model(const uint8_t *data, size_t size) {
  wm_graph_t *g = NULL, *g2 = NULL;
  const char *dir = fixture();
  wm_status_t s = wm_onnx_load_buffer(data, size, dir, &g);
  if (s) {
    require(g == NULL, "no graph on failure", s);
    check_error(s);
    return;
  }
  for (size_t i = 0; i < g->value_count; i++) {
    const wm_tensor_t *t = g->values[i].initializer;
    require(!t || !looks_secret(t), "nothing read from outside", NULL);
  }
  uint8_t *buf = NULL;
  size_t n = 0;
  s = wm_onnx_save_buffer(g, &buf, &n);
  require(s == NULL, "an imported graph exports", s);
  s = wm_onnx_load_buffer(buf, n, dir, &g2);
  require(s == NULL, "an exported graph imports", s);
  char why[256] = "";
  if (!wm_graph_equal(g, g2, why, sizeof(why))) {
    fprintf(stderr, "fuzz invariant broken: round trip differs: %s\n", why);
    abort();
  }
  free(buf);
  wm_graph_destroy(g);
  wm_graph_destroy(g2);
}

static void fuzz_tensor(const uint8_t *data, size_t size) {
  wm_tensor_t *t = NULL;
  char *name = NULL;
  wm_status_t s = wm_onnx_tensor_load_buffer(data, size, &t, &name);
  if (s) {
    require(t == NULL && name == NULL, "no tensor on failure", s);
    check_error(s);
    return;
  }
  require(t->count == 0 || t->data != NULL, "tensor has data", NULL);
  wm_tensor_destroy(t);
  free(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_model(data, size);
  fuzz_tensor(data, size);
  return 0;
}
