// Replays fuzz inputs without libFuzzer (gcc builds, CTest): every file
// named on the command line, or found directly in a named folder, goes
// through LLVMFuzzerTestOneInput once.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_target.h"
#include "wmap/base.h"

static int run_file(const char *path) {
  uint8_t *data;
  size_t size;
  wm_status_t s = wm_file_read(path, &data, &size);
  if (s) {
    fprintf(stderr, "replay: %s\n", wm_status_message(s));
    wm_status_free(s);
    return 1;
  }
  LLVMFuzzerTestOneInput(data, size);
  free(data);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE|FOLDER...\n", argv[0]);
    return 2;
  }
  int failed = 0, runs = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: cannot open \"%s\"\n", argv[i]);
      failed++;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      failed += run_file(argv[i]);
      runs++;
      continue;
    }
    DIR *dir = opendir(argv[i]);
    if (!dir) {
      fprintf(stderr, "replay: cannot read folder \"%s\"\n", argv[i]);
      failed++;
      continue;
    }
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
      char path[4096];
      snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
      if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        failed += run_file(path);
        runs++;
      }
    }
    closedir(dir);
  }
  printf("replayed %d inputs, %d unreadable\n", runs, failed);
  return failed ? 1 : 0;
}
