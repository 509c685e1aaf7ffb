// wmap probe: measures (or reads from the cache) this machine's peaks: the
// host FMA loop and triad, and GEMM through each loaded backend.
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "wmap/map.h"

static const char probe_usage[] =
    "usage: wmap probe [--refresh] [--no-cache] [--quick]\n"
    "                  [--format text|json] [--backend-path DIR]...\n"
    "\n"
    "Prints this machine's peaks: FMA-loop GFLOP/s (fp32, fp64; 2 FLOP per\n"
    "FMA lane) and triad GB/s (a = b + s*c, 12 bytes per float element) on\n"
    "the host at 1 thread and all cores, a square float MatMul through each\n"
    "backend whose library tier claims it (n^3: n doubled from 256 while a\n"
    "call takes under 10 ms, at most 1024; the map's roof for that backend),\n"
    "and the peaks each backend's target declares. The figures are cached in\n"
    "$XDG_CACHE_HOME/wmap (or ~/.cache/wmap) per machine fingerprint and\n"
    "printed from there unless --refresh; a cache measured with other\n"
    "software (wmap version, backend plugin files, OpenBLAS build) or whose\n"
    "figures are inconsistent (a GEMM above the FMA peak) is measured again,\n"
    "with a warning. A full measurement takes ~15 s.\n"
    "\n"
    "Options:\n"
    "  --refresh            measure again and rewrite the cache\n"
    "  --no-cache           measure without reading or writing the cache\n"
    "  --quick              tiny sizes and durations (rough; implies\n"
    "                       --no-cache), for tests\n"
    "  --format FORMAT      text (default) or json\n"
    "  --backend-path DIR   also look for backends in DIR (a folder or a .so\n"
    "                       file; repeatable; before WMAP_BACKEND_PATH)\n"
    "  -h, --help           show this help\n";

static void print_pair(const char *what, const double *v, const char *unit,
                       int threads) {
  printf("  %-22s %8.1f %s (1 thread)  %8.1f %s (%d threads)\n", what, v[0],
         unit, v[1], unit, threads);
}

static void print_text(const wm_peaks_t *p) {
  char when[64] = "?";
  time_t t = (time_t)p->measured_at;
  struct tm tm;
  if (gmtime_r(&t, &tm)) {
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
  }
  printf("machine %s: %s, %d cores, kernel %s\n", p->machine.fingerprint,
         p->machine.model, (int)p->machine.cores, p->machine.kernel);
  printf("%s %s\n", p->from_cache ? "cached, measured" : "measured", when);
  printf("software %s: %s\n", p->software[0] ? p->software : "unknown",
         p->software_detail[0] ? p->software_detail : "not recorded");
  printf("host (FMA loop %s):\n", p->isa);
  print_pair("FMA fp32", p->fma_fp32, "GFLOP/s", p->threads);
  print_pair("FMA fp64", p->fma_fp64, "GFLOP/s", p->threads);
  print_pair("triad", p->triad_gbs, "GB/s   ", p->threads);
  for (size_t i = 0; i < p->n_backends; i++) {
    const wm_peaks_backend_t *b = &p->backends[i];
    printf("backend %s (%s%s):\n", b->name, b->target,
           b->host ? ", host CPU" : "");
    if (b->gemm_note[0]) {
      printf("  GEMM not measured: %s\n", b->gemm_note);
    } else {
      char what[32];
      snprintf(what, sizeof(what), "GEMM fp32 %lld^3", (long long)b->gemm_n);
      print_pair(what, b->gemm_fp32, "GFLOP/s", p->threads);
    }
    printf("  declared: fp32 %.1f GFLOP/s, fp16 %.1f GFLOP/s, %.1f GB/s%s\n",
           b->declared_fp32, b->declared_fp16, b->declared_bw,
           b->declared_fp32 > 0 || b->declared_bw > 0 ? "" : " (0 = unknown)");
    printf("  map uses: fp32 %.1f GFLOP/s, %.1f GB/s\n",
           wm_peaks_fp32_gflops(p, b->name),
           wm_peaks_bandwidth_gbs(p, b->name));
  }
}

int wm_cli_probe(int argc, char **argv) {
  static const struct option long_opts[] = {
      {"refresh", no_argument, NULL, 'r'},
      {"no-cache", no_argument, NULL, 'n'},
      {"quick", no_argument, NULL, 'q'},
      {"format", required_argument, NULL, 'f'},
      {"backend-path", required_argument, NULL, 'B'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  wm_peaks_options_t po = {0};
  wm_cli_backend_options_t bo = {0};
  bool json = false;
  int c, rc = WM_EXIT_OK;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
    switch (c) {
      case 'r':
        po.refresh = true;
        break;
      case 'n':
        po.no_cache = true;
        break;
      case 'q':
        po.quick = true;
        po.no_cache = true;
        break;
      case 'f':
        if (strcmp(optarg, "json") == 0) {
          json = true;
        } else if (strcmp(optarg, "text") != 0) {
          rc = wm_cli_usage_error(
              "probe", "--format wants text or json, got \"%s\"", optarg);
        }
        break;
      case 'B':
        rc = wm_cli_backend_option("probe", "backend-path", optarg, &bo);
        break;
      case 'h':
        fputs(probe_usage, stdout);
        wm_cli_backend_options_deinit(&bo);
        return WM_EXIT_OK;
      default:
        rc = wm_cli_option_error("probe", "h", argv);
        break;
    }
    if (rc != WM_EXIT_OK) {
      wm_cli_backend_options_deinit(&bo);
      return rc;
    }
  }
  if (optind < argc) {
    wm_cli_backend_options_deinit(&bo);
    return wm_cli_usage_error("probe", "unexpected argument \"%s\"",
                              argv[optind]);
  }
  wm_peaks_t *p = wm_malloc(sizeof(*p));
  wm_status_t s = p ? wm_cli_peaks_get(&bo, &po, p)
                    : WM_ERROR(RESOURCE_EXHAUSTED, "out of memory");
  if (!s) {
    if (json) {
      wm_strbuf_t b;
      wm_strbuf_init(&b);
      wm_peaks_to_json(p, &b);
      fputs(wm_strbuf_str(&b), stdout);
      wm_strbuf_deinit(&b);
    } else {
      print_text(p);
    }
  }
  free(p);
  wm_cli_backend_options_deinit(&bo);
  return s ? wm_cli_fail(s) : WM_EXIT_OK;
}
