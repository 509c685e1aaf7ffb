// The library's version.
#include "wmap/base.h"

#ifndef WMAP_VERSION
#error "WMAP_VERSION is set by the build"
#endif

const char *wm_version(void) {
  return WMAP_VERSION;
}
