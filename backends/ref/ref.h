// The reference backend: the library tier over the op registry's
// reference kernels, on host memory. Always available, always last; the
// oracle other backends are compared against. Its query,
// wm_ref_plugin_query, is public (wmap/plugin.h).
#ifndef WMAP_BACKENDS_REF_H_
#define WMAP_BACKENDS_REF_H_

#include "wmap/plugin.h"

#endif  // WMAP_BACKENDS_REF_H_
