// The reference backend: the library tier over the op registry's
// reference kernels, on host memory. Always available, always last; the
// oracle other backends are compared against.
#ifndef WMAP_BACKENDS_REF_H_
#define WMAP_BACKENDS_REF_H_

#include "wmap/backend.h"

// The reference backend's wm_plugin_query, linked into the host.
wm_error *wm_ref_plugin_query(uint32_t host_major, uint32_t host_max_minor,
                              const wm_host_api *host,
                              const wm_plugin_api **out_api);

#endif  // WMAP_BACKENDS_REF_H_
