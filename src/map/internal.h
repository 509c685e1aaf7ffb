// Pieces shared by the files of src/map: the parallel-plan pass that
// wm_map_build calls, and the cover palette the HTML and dot share.
#ifndef WMAP_SRC_MAP_INTERNAL_H_
#define WMAP_SRC_MAP_INTERNAL_H_

#include <stddef.h>

#include "wmap/map.h"

// The parallel-plan pass. Called by wm_map_build after every cell has
// t_comp and t_mem (and t_roof = their max) and every node its inventory,
// with opts->parallel set and map->plan.spec filled. It sets each node's
// |sharded| and |stage|, divides t_comp and t_mem of sharded nodes by tp,
// sets each cell's t_comm (per forward, at the plan's link bandwidth or
// the backend's), and fills map->plan (collectives, totals, bubble, per
// stage figures on map->critical.backend). Strings and arrays go to
// map->arena. wm_map_build then recomputes t_roof and the bound.
wm_status_t wm_map_plan_build(wm_map_t *map,
                              const wm_graph_t *graph) WM_MUST_USE_RESULT;

// The fill colour of a cover kind in pictures (HTML, dot): vendor library
// blue, native green, generated purple, fallback orange, missing red.
const char *wm_map_cover_fill(wm_map_cover_t cover);

#endif  // WMAP_SRC_MAP_INTERNAL_H_
