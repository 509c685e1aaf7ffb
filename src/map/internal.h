// Pieces shared by the files of src/map: the parallel-plan pass that
// wm_map_build calls, and the cover palette the HTML and dot share.
#ifndef WMAP_SRC_MAP_INTERNAL_H_
#define WMAP_SRC_MAP_INTERNAL_H_

#include <stddef.h>

#include "wmap/map.h"
#include "wmap/report.h"

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
// Each node's successor along the critical path (SIZE_MAX off the path or
// at its end): a heap array of map->n_nodes (free), NULL out of memory.
// An edge is on the path only where it joins consecutive path nodes.
size_t *wm_map_path_next(const wm_map_t *map);

// The measured-times pass (measured.c). Called by wm_map_build last, after
// the critical path: with opts->node_seconds set it fills each node's
// measured_s, measured_backend, achieved_gflops and roof_pct and
// map->measured; without, it leaves them 0 and map->measured disabled.
wm_status_t wm_map_measured_pass(wm_map_t *map, const wm_map_options_t *opts)
    WM_MUST_USE_RESULT;

// The lowest achieved GFLOP/s of a measured node with FLOPs on backend |b|
// (to widen the roofline's axis), or +inf when there is none.
double wm_map_measured_min_gflops(const wm_map_t *map, size_t b);

// Draws on the roofline plot |p| of backend |b| one ring per node that was
// measured on |b| at (intensity, achieved GFLOP/s), and appends nothing
// when the map has no measured times.
void wm_map_html_measured_dots(const wm_map_t *map, size_t b,
                               const wm_report_plot_t *p, wm_strbuf_t *out);
// The caption sentence of those rings ("" without measured times).
void wm_map_html_measured_caption(const wm_map_t *map, size_t b,
                                  wm_strbuf_t *out);

#endif  // WMAP_SRC_MAP_INTERNAL_H_
