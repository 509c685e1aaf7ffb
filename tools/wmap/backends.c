// wmap backends: lists the backends found (with their devices) and the
// plugin files that were refused, as text or JSON.
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char backends_usage[] =
    "usage: wmap backends [--format text|json] [--backend-path DIR]...\n"
    "                     [--threads N]\n"
    "\n"
    "Lists the backends wmap can use: the built-in ref and every plugin\n"
    "found in the --backend-path entries, WMAP_BACKEND_PATH (colon-\n"
    "separated folders or .so files) and the install's backend folder;\n"
    "for each, its devices, and every refused plugin file with the reason.\n"
    "Each plugin file is first loaded in a child process (once per build,\n"
    "cached in ~/.cache/wmap/plugins.json); one that crashes, exits or does\n"
    "not answer within WMAP_PLUGIN_PROBE_TIMEOUT seconds (default 10) is\n"
    "refused. A --backend-path that does not exist, holds no plugin or is\n"
    "not a shared library is a usage error.\n"
    "WMAP_LOADER_DEBUG=1 traces each candidate and decision on stderr.\n"
    "\n"
    "Options:\n"
    "  --format FORMAT      text (default) or json\n"
    "  -h, --help           show this help\n";

static const char *kind_name(uint32_t kind) {
  switch (kind) {
    case WM_TARGET_CPU:
      return "cpu";
    case WM_TARGET_GPU:
      return "gpu";
    case WM_TARGET_ACCELERATOR:
      return "accelerator";
    default:
      return "unknown";
  }
}

static const char *str_or(const char *s, const char *fallback) {
  return s && *s ? s : fallback;
}

// Field |f| of a plugin-owned target, or |zero| when the plugin's struct
// is too old to have it.
#define TARGET_FIELD(t, f, zero) \
  (WM_HAS(t, wm_target_desc, f) ? (t)->f : (zero))

// ---------------------------------------------------------------- text

static void text_peak(wm_strbuf_t *b, const char *what, double v,
                      const char *unit) {
  if (v > 0 && isfinite(v)) {
    wm_strbuf_printf(b, ", %s %.1f %s", what, v, unit);
  }
}

static void text_target(wm_strbuf_t *b, const wm_backend_t *be,
                        const wm_target_desc *t, uint32_t i) {
  uint32_t kind = TARGET_FIELD(t, kind, 0);
  wm_strbuf_printf(b, "  device %u: %s \"%s\"", i, kind_name(kind),
                   str_or(TARGET_FIELD(t, name, NULL), "?"));
  const char *vendor = TARGET_FIELD(t, vendor, NULL);
  if (vendor && *vendor) {
    wm_strbuf_printf(b, " by %s", vendor);
  }
  wm_strbuf_printf(b, "\n    %u compute units",
                   TARGET_FIELD(t, compute_units, 0));
  uint64_t mem = TARGET_FIELD(t, memory_bytes, 0);
  if (mem) {
    wm_strbuf_printf(b, ", %.1f MiB memory", (double)mem / (1024.0 * 1024.0));
  }
  uint32_t group = TARGET_FIELD(t, max_group_size, 0);
  if (group) {  // a device of work items (minor 5)
    wm_strbuf_printf(b, ", groups of up to %u work items", group);
  }
  uint64_t local = TARGET_FIELD(t, local_memory_bytes, (uint64_t)0);
  if (local) {
    wm_strbuf_printf(b, ", %.0f KiB local memory", (double)local / 1024.0);
  }
  uint32_t lanes = TARGET_FIELD(t, vector_width, 0);
  if (lanes) {
    wm_strbuf_printf(b, ", %u float lanes", lanes);
  }
  uint32_t sub = TARGET_FIELD(t, subgroup_size, 0);
  if (sub) {
    wm_strbuf_printf(b, ", subgroups of %u", sub);
  }
  double fp32 = TARGET_FIELD(t, peak_gflops_fp32, 0.0);
  double fp16 = TARGET_FIELD(t, peak_gflops_fp16, 0.0);
  double bw = TARGET_FIELD(t, mem_bandwidth_gbs, 0.0);
  text_peak(b, "fp32 peak", fp32, "GFLOP/s");
  text_peak(b, "fp16 peak", fp16, "GFLOP/s");
  text_peak(b, "bandwidth", bw, "GB/s");
  if (!(fp32 > 0) && !(fp16 > 0) && !(bw > 0)) {
    wm_strbuf_printf(b, ", peak numbers unknown");
  }
  wm_strbuf_printf(b, "\n    dtypes:");
  uint64_t mask = TARGET_FIELD(t, dtype_mask, 0);
  if (!mask) {
    wm_strbuf_printf(b, " none declared");
  }
  for (uint32_t d = 0; d < 64; d++) {
    if (mask & ((uint64_t)1 << d)) {
      if (d < WM_DTYPE_COUNT) {
        wm_strbuf_printf(b, " %s", wm_dtype_name((wm_dtype_t)d));
      } else {
        wm_strbuf_printf(b, " dtype%u", d);
      }
    }
  }
  wm_strbuf_printf(b, "\n    compiles:");
  uint32_t n_formats = TARGET_FIELD(t, n_formats, 0);
  const char *const *formats = TARGET_FIELD(t, formats, NULL);
  if (!wm_backend_api(be)->device->compile || !n_formats || !formats) {
    wm_strbuf_printf(b, " nothing");
  } else {
    for (uint32_t f = 0; f < n_formats; f++) {
      wm_strbuf_printf(b, " %s", str_or(formats[f], "?"));
    }
  }
  wm_strbuf_printf(b, "\n");
}

// The collectives the backend's tier answers for float32 (sum) on its
// first target, and its point-to-point calls: "(AllReduce, ...)" in text,
// a list of JSON strings otherwise.
static void collective_list(wm_strbuf_t *b, const wm_backend_t *be, bool json) {
  const wm_collective_tier *c = wm_backend_api(be)->collective;
  const wm_target_desc *t = wm_backend_target(be, 0);
  if (!c) {
    return;
  }
  static const char *const names[] = {"", "AllReduce", "AllGather",
                                      "ReduceScatter", "Broadcast"};
  int n = 0;
  for (uint32_t kind = WM_COLL_ALL_REDUCE; t && kind <= WM_COLL_BROADCAST;
       kind++) {
    uint32_t level = 0;
    wm_error *e = c->coll_query(t, kind, 1, WM_REDOP_SUM, &level);
    if (e) {
      wm_status_free(wm_backend_error(be, e, "coll_query"));
      continue;
    }
    if (level >= WM_SUPPORT_SUPPORTED) {
      wm_strbuf_printf(b, json ? "%s\"%s\"" : "%s%s",
                       n++ ? ", " : (json ? "" : "yes ("), names[kind]);
    }
  }
  if (WM_HAS(c, wm_collective_tier, barrier) && c->send && c->recv &&
      c->barrier) {
    wm_strbuf_printf(
        b, json ? "%s\"Send\", \"Recv\", \"Barrier\"" : "%sSend/Recv, Barrier",
        n++ ? ", " : (json ? "" : "yes ("));
  }
  if (!json) {
    wm_strbuf_printf(b, n ? ")" : "yes");
  }
}

static void text_backend(wm_strbuf_t *b, const wm_backend_t *be) {
  const wm_plugin_api *api = wm_backend_api(be);
  const wm_plugin_info *info = wm_backend_info(be);
  wm_strbuf_printf(b, "%s %s (ABI %u.%u", wm_backend_name(be),
                   str_or(wm_backend_version(be), "(no version)"),
                   api->abi_major, api->abi_minor);
  if (info->vendor && *info->vendor) {
    wm_strbuf_printf(b, ", by %s", info->vendor);
  }
  wm_strbuf_printf(b, ")\n  origin: %s\n", wm_backend_origin(be));
  wm_strbuf_printf(b, "  tiers: device, library %s, collective %s",
                   api->library ? "yes" : "no", api->collective ? "" : "no");
  if (api->collective) {
    collective_list(b, be, false);
  }
  wm_strbuf_printf(b, "\n");
  if (info->n_features && info->features) {
    wm_strbuf_printf(b, "  features:");
    for (uint32_t i = 0; i < info->n_features; i++) {
      wm_strbuf_printf(b, " %s", str_or(info->features[i], "?"));
    }
    wm_strbuf_printf(b, "\n");
  }
  uint32_t n = wm_backend_target_count(be);
  if (!n) {
    wm_strbuf_printf(b, "  no devices\n");
  }
  for (uint32_t i = 0; i < n; i++) {
    text_target(b, be, wm_backend_target(be, i), i);
  }
}

static void print_text(const wm_registry_t *reg) {
  wm_strbuf_t b;
  wm_strbuf_init(&b);
  size_t n = wm_registry_count(reg), nr = wm_registry_refused_count(reg);
  wm_strbuf_printf(&b, "%zu backend%s loaded, %zu plugin%s refused\n", n,
                   n == 1 ? "" : "s", nr, nr == 1 ? "" : "s");
  for (size_t i = 0; i < n; i++) {
    wm_strbuf_printf(&b, "\n");
    text_backend(&b, wm_registry_backend(reg, i));
  }
  if (nr) {
    wm_strbuf_printf(&b, "\nrefused:\n");
  }
  for (size_t i = 0; i < nr; i++) {
    wm_strbuf_printf(&b, "  %s: %s\n", wm_registry_refused_path(reg, i),
                     wm_registry_refused_reason(reg, i));
  }
  fputs(wm_strbuf_str(&b), stdout);
  wm_strbuf_deinit(&b);
}

// ---------------------------------------------------------------- json

static void json_key(wm_strbuf_t *b, const char *key) {
  wm_strbuf_json_string(b, key);
  wm_strbuf_printf(b, ": ");
}

static void json_str_or_null(wm_strbuf_t *b, const char *s) {
  if (s) {
    wm_strbuf_json_string(b, s);
  } else {
    wm_strbuf_printf(b, "null");
  }
}

// A peak number: null when unknown (0) or not a JSON number.
static void json_peak(wm_strbuf_t *b, double v) {
  if (v > 0 && isfinite(v)) {
    wm_strbuf_printf(b, "%.17g", v);
  } else {
    wm_strbuf_printf(b, "null");
  }
}

static void json_target(wm_strbuf_t *b, const wm_backend_t *be,
                        const wm_target_desc *t) {
  wm_strbuf_printf(b, "{\"index\": %u, \"kind\": ", TARGET_FIELD(t, index, 0));
  wm_strbuf_json_string(b, kind_name(TARGET_FIELD(t, kind, 0)));
  wm_strbuf_printf(b, ", \"name\": ");
  json_str_or_null(b, TARGET_FIELD(t, name, NULL));
  wm_strbuf_printf(b, ", \"vendor\": ");
  json_str_or_null(b, TARGET_FIELD(t, vendor, NULL));
  wm_strbuf_printf(b, ", \"vendor_id\": %u, \"device_id\": %u",
                   TARGET_FIELD(t, vendor_id, 0),
                   TARGET_FIELD(t, device_id, 0));
  wm_strbuf_printf(
      b, ", \"compute_units\": %u, \"memory_bytes\": %llu",
      TARGET_FIELD(t, compute_units, 0),
      (unsigned long long)TARGET_FIELD(t, memory_bytes, (uint64_t)0));
  wm_strbuf_printf(
      b,
      ", \"local_memory_bytes\": %llu, \"max_group_size\": %u, "
      "\"vector_width\": %u, \"subgroup_size\": %u",
      (unsigned long long)TARGET_FIELD(t, local_memory_bytes, (uint64_t)0),
      TARGET_FIELD(t, max_group_size, 0), TARGET_FIELD(t, vector_width, 0),
      TARGET_FIELD(t, subgroup_size, 0));
  wm_strbuf_printf(b, ", \"peak_gflops_fp32\": ");
  json_peak(b, TARGET_FIELD(t, peak_gflops_fp32, 0.0));
  wm_strbuf_printf(b, ", \"peak_gflops_fp16\": ");
  json_peak(b, TARGET_FIELD(t, peak_gflops_fp16, 0.0));
  wm_strbuf_printf(b, ", \"mem_bandwidth_gbs\": ");
  json_peak(b, TARGET_FIELD(t, mem_bandwidth_gbs, 0.0));
  wm_strbuf_printf(b, ", \"dtypes\": [");
  uint64_t mask = TARGET_FIELD(t, dtype_mask, (uint64_t)0);
  bool first = true;
  for (uint32_t d = 0; d < 64; d++) {
    if (mask & ((uint64_t)1 << d)) {
      wm_strbuf_printf(b, "%s", first ? "" : ", ");
      first = false;
      if (d < WM_DTYPE_COUNT) {
        wm_strbuf_json_string(b, wm_dtype_name((wm_dtype_t)d));
      } else {
        wm_strbuf_printf(b, "\"dtype%u\"", d);
      }
    }
  }
  wm_strbuf_printf(b, "], \"formats\": [");
  uint32_t n_formats = TARGET_FIELD(t, n_formats, 0);
  const char *const *formats = TARGET_FIELD(t, formats, NULL);
  if (wm_backend_api(be)->device->compile && formats) {
    for (uint32_t f = 0; f < n_formats; f++) {
      wm_strbuf_printf(b, "%s", f ? ", " : "");
      json_str_or_null(b, formats[f]);
    }
  }
  wm_strbuf_printf(b, "]}");
}

static void json_backend(wm_strbuf_t *b, const wm_backend_t *be) {
  const wm_plugin_api *api = wm_backend_api(be);
  const wm_plugin_info *info = wm_backend_info(be);
  wm_strbuf_printf(b, "{");
  json_key(b, "name");
  wm_strbuf_json_string(b, wm_backend_name(be));
  wm_strbuf_printf(b, ", ");
  json_key(b, "version");
  wm_strbuf_json_string(b, wm_backend_version(be));
  wm_strbuf_printf(b, ", ");
  json_key(b, "vendor");
  json_str_or_null(b, info->vendor);
  wm_strbuf_printf(b, ", \"abi\": \"%u.%u\", ", api->abi_major, api->abi_minor);
  json_key(b, "origin");
  wm_strbuf_json_string(b, wm_backend_origin(be));
  wm_strbuf_printf(
      b, ", \"builtin\": %s, \"num_threads\": %u",
      strcmp(wm_backend_origin(be), "built-in") == 0 ? "true" : "false",
      wm_backend_num_threads(be));
  wm_strbuf_printf(b, ", \"features\": [");
  for (uint32_t i = 0; info->features && i < info->n_features; i++) {
    wm_strbuf_printf(b, "%s", i ? ", " : "");
    json_str_or_null(b, info->features[i]);
  }
  wm_strbuf_printf(b,
                   "], \"tiers\": {\"device\": true, \"compile\": %s, "
                   "\"library\": %s, \"collective\": %s}, \"collectives\": [",
                   api->device->compile ? "true" : "false",
                   api->library ? "true" : "false",
                   api->collective ? "true" : "false");
  collective_list(b, be, true);
  wm_strbuf_printf(b, "], \"devices\": [");
  for (uint32_t i = 0; i < wm_backend_target_count(be); i++) {
    wm_strbuf_printf(b, "%s", i ? ", " : "");
    json_target(b, be, wm_backend_target(be, i));
  }
  wm_strbuf_printf(b, "]}");
}

static void print_json(const wm_registry_t *reg) {
  wm_strbuf_t b;
  wm_strbuf_init(&b);
  wm_strbuf_printf(&b, "{\"schema\": \"wmap.backends/1\", \"backends\": [");
  for (size_t i = 0; i < wm_registry_count(reg); i++) {
    wm_strbuf_printf(&b, "%s\n  ", i ? "," : "");
    json_backend(&b, wm_registry_backend(reg, i));
  }
  wm_strbuf_printf(&b, "],\n \"refused\": [");
  for (size_t i = 0; i < wm_registry_refused_count(reg); i++) {
    wm_strbuf_printf(&b, "%s\n  {\"path\": ", i ? "," : "");
    wm_strbuf_json_string(&b, wm_registry_refused_path(reg, i));
    wm_strbuf_printf(&b, ", \"reason\": ");
    wm_strbuf_json_string(&b, wm_registry_refused_reason(reg, i));
    wm_strbuf_printf(&b, "}");
  }
  wm_strbuf_printf(&b, "]}\n");
  fputs(wm_strbuf_str(&b), stdout);
  wm_strbuf_deinit(&b);
}

int wm_cli_backends(int argc, char **argv) {
  static const struct option opts[] = {
      {"format", required_argument, NULL, 'f'},
      {"backend-path", required_argument, NULL, 'p'},
      {"threads", required_argument, NULL, 't'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  wm_cli_backend_options_t bo = {0};
  bo.quiet = true;  // refusals are part of the listing
  bo.lists_refusals = true;
  bool json = false;
  int rc = WM_EXIT_OK;
  optind = 1;
  int c;
  while (rc == WM_EXIT_OK &&
         (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
      case 'f':
        if (strcmp(optarg, "json") == 0 || strcmp(optarg, "text") == 0) {
          json = strcmp(optarg, "json") == 0;
        } else {
          rc = wm_cli_usage_error(
              "backends", "--format wants text or json, got \"%s\"", optarg);
        }
        break;
      case 'p':
        rc = wm_cli_backend_option("backends", "backend-path", optarg, &bo);
        break;
      case 't':
        rc = wm_cli_backend_option("backends", "threads", optarg, &bo);
        break;
      case 'h':
        fputs(backends_usage, stdout);
        fputs(WM_CLI_BACKEND_OPTIONS_USAGE, stdout);
        wm_cli_backend_options_deinit(&bo);
        return WM_EXIT_OK;
      default:
        rc = wm_cli_option_error("backends", "h", argv);
        break;
    }
  }
  if (rc == WM_EXIT_OK && optind != argc) {
    rc = wm_cli_usage_error("backends", "unexpected argument \"%s\"",
                            argv[optind]);
  }
  if (rc != WM_EXIT_OK) {
    wm_cli_backend_options_deinit(&bo);
    return rc;
  }
  wm_registry_t *reg;
  wm_status_t s = wm_cli_registry_open(&bo, &reg);
  wm_cli_backend_options_deinit(&bo);
  if (s) {
    return wm_cli_fail(s);
  }
  if (json) {
    print_json(reg);
  } else {
    print_text(reg);
  }
  wm_registry_destroy(reg);
  return WM_EXIT_OK;
}
