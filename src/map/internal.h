// Pieces shared by the files of src/map: number formatting for the
// renderers and the parallel-plan pass that wm_map_build calls.
#ifndef WMAP_SRC_MAP_INTERNAL_H_
#define WMAP_SRC_MAP_INTERNAL_H_

#include <stddef.h>

#include "wmap/map.h"

// Formats |v| with an SI prefix and 3 significant digits: "4.09 G",
// "812 M", "12.0 k", "7" (integers below 1000 plainly). |buf| takes
// WM_MAP_FMT_LEN bytes.
#define WM_MAP_FMT_LEN 32
const char *wm_map_fmt_si(double v, char *buf);
// Bytes as decimal units: "98.0 MB", "1.20 GB", "512 B".
const char *wm_map_fmt_bytes(double bytes, char *buf);
// Seconds as "12.3 ms", "45.6 us", "1.23 s", "0" for zero, "-" for < 0.
const char *wm_map_fmt_time(double seconds, char *buf);
// A percentage of |part| in |whole| as "12.3%" ("-" when whole is 0).
const char *wm_map_fmt_pct(double part, double whole, char *buf);

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

#endif  // WMAP_SRC_MAP_INTERNAL_H_
