// wmap map, part 1: machine peaks. Measures what the host CPU can do (an
// FMA loop per dtype, a STREAM-style triad) and what each loaded backend
// reaches on a 1024^3 float MatMul through the plugin ABI, at one thread
// and at all cores; caches the result as JSON ("wmap.peaks/1") under
// $XDG_CACHE_HOME/wmap (or ~/.cache/wmap) in a file named after the
// machine fingerprint. Backends may also declare peaks in their target
// description; the map uses those when it cannot measure.
// Thread-safety: the functions here are not reentrant on one wm_peaks_t.
#ifndef WMAP_MAP_H_
#define WMAP_MAP_H_

#include <stdbool.h>
#include <stdint.h>

#include "wmap/base.h"
#include "wmap/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WM_PEAKS_FORMAT "wmap.peaks/1"
#define WM_PEAKS_MAX_BACKENDS 16

// The machine a cache file belongs to. The fingerprint is the FNV-1a 64
// hash (16 hex digits) of "model|cores|flags_hash|kernel".
typedef struct wm_machine {
  char model[128];       // /proc/cpuinfo "model name" ("unknown" if absent)
  int32_t cores;         // wm_cpu_count()
  uint64_t flags_hash;   // FNV-1a 64 of the first /proc/cpuinfo "flags" line
  char kernel[80];       // uname -r
  char fingerprint[17];  // hex
} wm_machine_t;

// What one backend reaches (GFLOP/s and GB/s; 0 = not measured/unknown).
typedef struct wm_peaks_backend {
  char name[64];         // the backend's short name
  char target[128];      // its target 0's name
  bool host;             // target 0 is a CPU: host figures apply
  double gemm_fp32[2];   // 1024^3 float MatMul: [0] 1 thread, [1] all
  char gemm_note[160];   // why GEMM was not measured, or ""
  double declared_fp32;  // target description peak_gflops_fp32
  double declared_fp16;  // target description peak_gflops_fp16
  double declared_bw;    // target description mem_bandwidth_gbs
} wm_peaks_backend_t;

// Peaks of this machine. Index [0] is one thread, [1] all |threads|.
typedef struct wm_peaks {
  wm_machine_t machine;
  int64_t measured_at;  // Unix seconds
  bool from_cache;      // read from the cache file, not measured now
  int32_t threads;      // "all cores" thread count used
  double fma_fp32[2];   // FMA loop GFLOP/s (2 FLOP per FMA lane)
  double fma_fp64[2];   // same for double
  double triad_gbs[2];  // a[i] = b[i] + s*c[i], 12 B per float element
  char isa[16];         // the FMA loop's variant: avx512f, avx2, default
  size_t n_backends;
  wm_peaks_backend_t backends[WM_PEAKS_MAX_BACKENDS];
} wm_peaks_t;

typedef struct wm_peaks_options {
  wm_registry_t *registry;  // backends at all cores (NULL = none)
  // Opens the same backends again at 1 thread into *out (NULL = no
  // 1-thread GEMM). Called once, after every all-core GEMM: a plugin loaded
  // twice is one shared library image whose globals the later load sets.
  wm_status_t (*open_one)(void *ctx, wm_registry_t **out);
  void *open_ctx;         // passed to open_one
  bool refresh;           // measure even if a cache file exists
  bool no_cache;          // neither read nor write the cache
  bool quick;             // tiny sizes and durations (tests): numbers are rough
  const char *cache_dir;  // NULL = $XDG_CACHE_HOME/wmap or ~/.cache/wmap
} wm_peaks_options_t;

// Fills |out| with this machine's identity.
void wm_machine_get(wm_machine_t *out);
// Returns the cache file path for |m| under |dir| (NULL = default folder);
// the caller frees it.
wm_status_t wm_peaks_cache_path(const char *dir, const wm_machine_t *m,
                                char **out_path) WM_MUST_USE_RESULT;
// Measures everything now (several seconds; quick: well under one).
wm_status_t wm_peaks_measure(const wm_peaks_options_t *opts,
                             wm_peaks_t *out) WM_MUST_USE_RESULT;
// Appends |p| as a "wmap.peaks/1" JSON object to |buf|.
void wm_peaks_to_json(const wm_peaks_t *p, wm_strbuf_t *buf);
// Parses a "wmap.peaks/1" document; DATA_LOSS when it is not one.
wm_status_t wm_peaks_from_json(const char *text, size_t len,
                               wm_peaks_t *out) WM_MUST_USE_RESULT;
// Reads |path| into |out| (from_cache set).
wm_status_t wm_peaks_load(const char *path, wm_peaks_t *out) WM_MUST_USE_RESULT;
// Writes |p| to |path| (creating its folder).
wm_status_t wm_peaks_save(const char *path,
                          const wm_peaks_t *p) WM_MUST_USE_RESULT;
// The cached peaks when the cache matches this machine and holds every
// loaded backend, else measures (and writes the cache unless no_cache). A
// corrupt cache file gets a warning on the log and is measured again.
wm_status_t wm_peaks_get(const wm_peaks_options_t *opts,
                         wm_peaks_t *out) WM_MUST_USE_RESULT;
// The fp32 GFLOP/s the map should assume for backend |name| at all cores:
// GEMM if measured, else the host FMA peak for a CPU backend, else the
// declared peak; 0 when unknown.
double wm_peaks_fp32_gflops(const wm_peaks_t *p, const char *name);
// Memory bandwidth GB/s for backend |name|: measured triad for a CPU
// backend, else declared; 0 when unknown.
double wm_peaks_bandwidth_gbs(const wm_peaks_t *p, const char *name);

#ifdef __cplusplus
}
#endif

#endif  // WMAP_MAP_H_
