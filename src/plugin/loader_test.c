// Tests of the backend registry: the built-in backend, folder and file
// discovery, WMAP_BACKEND_PATH, and one refusal per broken test plugin
// (tests/plugins, built into <build>/tests/plugins; the folder is argv[1]
// or found from this executable's place in the build tree).
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../tests/plugins/plugin_common.h"
#include "wm_test.h"
#include "wmap/plugin.h"

static char plugin_dir[PATH_MAX + 32];
static char hostile_dir[PATH_MAX + 48];
// XDG_CACHE_HOME of every test: the probe cache is <cache_home>/wmap/
// plugins.json, never the user's.
static char cache_home[64];
static char cache_file[128];
static const char *builtin_name = "builtin_test";
static uint32_t builtin_seen_threads;

static wm_error *builtin_get_info(wm_plugin_info *out_info) {
  out_info->name = builtin_name;
  out_info->vendor = "wmap tests";
  out_info->version = "1.2.3";
  return NULL;
}

static const wm_device_tier builtin_device = {TP_DEVICE_TIER_FIELDS};

static wm_plugin_api builtin_api = {
    .struct_size = sizeof(wm_plugin_api),
    .get_info = builtin_get_info,
    .enumerate = tp_enumerate,
    .device_open = tp_device_open,
    .error_code = tp_error_code,
    .error_message = tp_error_message,
    .error_destroy = tp_error_destroy,
    .device = &builtin_device,
};

static wm_error *builtin_query(uint32_t host_major, uint32_t host_max_minor,
                               const wm_host_api *host,
                               const wm_plugin_api **out_api) {
  *out_api = &builtin_api;
  builtin_seen_threads =
      WM_HAS(host, wm_host_api, num_threads) ? host->num_threads : UINT32_MAX;
  host->log(host->ctx, WM_LOG_LEVEL_DEBUG, __FILE__, __LINE__,
            "builtin_test: loaded");
  return tp_negotiate(host_major, host_max_minor, &builtin_api);
}

// Options that see nothing but what the test adds.
static wm_registry_options_t isolated(void) {
  wm_registry_options_t o = {0};
  o.no_env = true;
  o.install_dir = "";
  o.quiet = true;
  return o;
}

static bool have_plugins(void) {
  if (access(plugin_dir, R_OK) != 0 || access(hostile_dir, R_OK) != 0) {
    wm_test_skip("test plugins not built (no tests/plugins folder)");
    return false;
  }
  return true;
}

// Returns the reason refused |file| (a base name) got, or NULL.
static const char *reason_for(const wm_registry_t *r, const char *file) {
  for (size_t i = 0; i < wm_registry_refused_count(r); i++) {
    const char *p = wm_registry_refused_path(r, i);
    const char *slash = strrchr(p, '/');
    if (strcmp(slash ? slash + 1 : p, file) == 0) {
      return wm_registry_refused_reason(r, i);
    }
  }
  return NULL;
}

static bool has_loaded(const wm_registry_t *r, const char *name) {
  wm_backend_t *b;
  wm_status_t s = wm_registry_find(r, name, &b);
  wm_status_free(s);
  return s == NULL;
}

WM_TEST(registry_without_sources_is_empty_and_find_says_so) {
  wm_registry_options_t o = isolated();
  wm_registry_t *r;
  WM_CHECK_OK(wm_registry_create(&o, &r));
  WM_CHECK_INT_EQ(wm_registry_count(r), 0);
  WM_CHECK_INT_EQ(wm_registry_refused_count(r), 0);
  wm_backend_t *b;
  WM_CHECK_ERR(wm_registry_find(r, "ref", &b), NOT_FOUND,
               "no backend named \"ref\" (available: none)");
  WM_CHECK(b == NULL);
  wm_registry_destroy(r);
}

WM_TEST(registry_gives_the_builtin_the_thread_count) {
  wm_registry_options_t o = isolated();
  o.builtin_query = builtin_query;
  o.num_threads = 3;
  builtin_seen_threads = 0;
  wm_registry_t *r;
  WM_CHECK_OK(wm_registry_create(&o, &r));
  WM_CHECK_INT_EQ(wm_registry_count(r), 1);
  wm_backend_t *b = wm_registry_backend(r, 0);
  WM_CHECK_STR_EQ(wm_backend_name(b), "builtin_test");
  WM_CHECK_STR_EQ(wm_backend_origin(b), "built-in");
  WM_CHECK_STR_EQ(wm_backend_info(b)->vendor, "wmap tests");
  WM_CHECK_INT_EQ(builtin_seen_threads, 3);
  WM_CHECK_INT_EQ(wm_backend_num_threads(b), 3);
  wm_registry_destroy(r);
}

static wm_error *failing_get_info(wm_plugin_info *out_info) {
  (void)out_info;
  return tp_error(WM_ERR_INTERNAL, "get_info broke (on purpose)");
}

static wm_plugin_api failing_api = {
    .struct_size = sizeof(wm_plugin_api),
    .get_info = failing_get_info,
    .enumerate = tp_enumerate,
    .device_open = tp_device_open,
    .error_code = tp_error_code,
    .error_message = tp_error_message,
    .error_destroy = tp_error_destroy,
    .device = &builtin_device,
};

static wm_error *failing_query(uint32_t host_major, uint32_t host_max_minor,
                               const wm_host_api *host,
                               const wm_plugin_api **out_api) {
  (void)host;
  *out_api = &failing_api;
  return tp_negotiate(host_major, host_max_minor, &failing_api);
}

WM_TEST(failing_builtin_is_refused_not_fatal) {
  wm_registry_options_t o = isolated();
  o.builtin_query = failing_query;
  wm_registry_t *r;
  WM_CHECK_OK(wm_registry_create(&o, &r));
  WM_CHECK_INT_EQ(wm_registry_count(r), 0);
  WM_CHECK_INT_EQ(wm_registry_refused_count(r), 1);
  WM_CHECK_STR_EQ(wm_registry_refused_path(r, 0), "built-in");
  WM_CHECK_STR_EQ(wm_registry_refused_reason(r, 0),
                  "backend \"built-in\": get_info: get_info broke (on "
                  "purpose)");
  WM_CHECK(wm_registry_refused_path(r, 1) == NULL);
  wm_registry_destroy(r);
}

WM_TEST(folder_discovery_loads_good_plugins_and_refuses_each_broken_one) {
  if (!have_plugins()) {
    return;
  }
  wm_registry_options_t o = isolated();
  const char *paths[] = {plugin_dir};
  o.paths = paths;
  o.n_paths = 1;
  o.builtin_query = builtin_query;
  wm_registry_t *r;
  WM_CHECK_OK(wm_registry_create(&o, &r));
  WM_CHECK_INT_EQ(wm_registry_count(r), 3);
  // Plugins in file-name order, the built-in one last.
  WM_CHECK_STR_EQ(wm_backend_name(wm_registry_backend(r, 0)), "claimsfail");
  WM_CHECK_STR_EQ(wm_backend_name(wm_registry_backend(r, 1)), "dummy");
  WM_CHECK_STR_EQ(wm_backend_name(wm_registry_backend(r, 2)), "builtin_test");
  WM_CHECK(wm_registry_backend(r, 3) == NULL);
  WM_CHECK(strstr(wm_backend_origin(wm_registry_backend(r, 1)),
                  "libwmap_backend_dummy.so") != NULL);
  WM_CHECK(wm_backend_api(wm_registry_backend(r, 0))->library != NULL);
  WM_CHECK(wm_backend_api(wm_registry_backend(r, 1))->library == NULL);
  WM_CHECK_INT_EQ(wm_registry_refused_count(r), 7);
  const struct {
    const char *file, *fragment;
  } want[] = {
      {"libwmap_backend_bad_enumerate.so", "device 0 fell off the bus"},
      {"libwmap_backend_dummy_again.so", "backend name dummy already loaded"},
      {"libwmap_backend_garbage.so", "dlopen failed: "},
      {"libwmap_backend_missing_function.so",
       "missing required functions: copy_d2h"},
      {"libwmap_backend_no_symbol.so",
       "no symbol wm_plugin_query (not a wmap backend)"},
      {"libwmap_backend_query_error.so", "no device driver found (on purpose)"},
      {"libwmap_backend_wrong_major.so", "answers ABI 1.0, host speaks 0."},
  };
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    const char *reason = reason_for(r, want[i].file);
    if (!reason || !strstr(reason, want[i].fragment) || strchr(reason, '\n')) {
      wm_test_fail(__FILE__, __LINE__, "%s: reason \"%s\", want \"%s\"",
                   want[i].file, reason ? reason : "(not refused)",
                   want[i].fragment);
      break;
    }
  }
  WM_CHECK(strstr(reason_for(r, "libwmap_backend_dummy_again.so"),
                  "libwmap_backend_dummy.so") != NULL);
  WM_CHECK(strstr(reason_for(r, "libwmap_backend_query_error.so"),
                  "wm_plugin_query failed") != NULL);
  // The reason does not repeat the file name the refusal line gives.
  WM_CHECK(strstr(reason_for(r, "libwmap_backend_wrong_major.so"),
                  "libwmap_backend_wrong_major.so") == NULL);
  wm_backend_t *b;
  WM_CHECK_ERR(wm_registry_find(r, "tpu", &b), NOT_FOUND,
               "(available: claimsfail, dummy, builtin_test; others were "
               "refused)");
  wm_registry_destroy(r);
}

WM_TEST(builtin_wins_over_a_plugin_of_the_same_name) {
  if (!have_plugins()) {
    return;
  }
  wm_registry_options_t o = isolated();
  const char *paths[] = {plugin_dir};
  o.paths = paths;
  o.n_paths = 1;
  o.builtin_query = builtin_query;
  builtin_name = "dummy";
  wm_registry_t *r;
  wm_status_t s = wm_registry_create(&o, &r);
  builtin_name = "builtin_test";
  WM_CHECK_OK(s);
  wm_backend_t *b;
  WM_CHECK_OK(wm_registry_find(r, "dummy", &b));
  WM_CHECK_STR_EQ(wm_backend_origin(b), "built-in");
  const char *reason = reason_for(r, "libwmap_backend_dummy.so");
  WM_CHECK(reason != NULL);
  WM_CHECK_STR_EQ(reason, "backend name dummy already loaded from built-in");
  wm_registry_destroy(r);
}

WM_TEST(env_path_takes_files_and_skips_missing_and_repeated_entries) {
  if (!have_plugins()) {
    return;
  }
  char env[3 * PATH_MAX];
  snprintf(env, sizeof(env),
           ":%s/libwmap_backend_dummy.so::/nonexistent/wmap:%s/"
           "libwmap_backend_dummy.so",
           plugin_dir, plugin_dir);
  setenv("WMAP_BACKEND_PATH", env, 1);
  wm_registry_options_t o = isolated();
  o.no_env = false;
  wm_registry_t *r;
  wm_status_t s = wm_registry_create(&o, &r);
  o.no_env = true;
  wm_registry_t *r2;
  wm_status_t s2 = wm_registry_create(&o, &r2);
  unsetenv("WMAP_BACKEND_PATH");
  WM_CHECK_OK(s);
  WM_CHECK_OK(s2);
  WM_CHECK_INT_EQ(wm_registry_count(r), 1);
  WM_CHECK_INT_EQ(wm_registry_refused_count(r), 0);
  WM_CHECK(has_loaded(r, "dummy"));
  WM_CHECK_INT_EQ(wm_registry_count(r2), 0);
  wm_registry_destroy(r);
  wm_registry_destroy(r2);
}

WM_TEST(same_folder_twice_loads_each_file_once) {
  if (!have_plugins()) {
    return;
  }
  setenv("WMAP_BACKEND_PATH", plugin_dir, 1);
  wm_registry_options_t o = isolated();
  o.no_env = false;
  o.install_dir = plugin_dir;
  const char *paths[] = {plugin_dir, plugin_dir};
  o.paths = paths;
  o.n_paths = 2;
  wm_registry_t *r;
  wm_status_t s = wm_registry_create(&o, &r);
  unsetenv("WMAP_BACKEND_PATH");
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(wm_registry_count(r), 2);
  WM_CHECK_INT_EQ(wm_registry_refused_count(r), 7);
  wm_registry_destroy(r);
}

WM_TEST(install_dir_option_is_searched) {
  if (!have_plugins()) {
    return;
  }
  wm_registry_options_t o = isolated();
  o.install_dir = plugin_dir;
  o.debug = true;  // exercises every trace line
  wm_registry_t *r;
  WM_CHECK_OK(wm_registry_create(&o, &r));
  WM_CHECK(has_loaded(r, "dummy"));
  WM_CHECK(has_loaded(r, "claimsfail"));
  wm_registry_destroy(r);
}

WM_TEST(missing_backend_path_entry_is_refused) {
  wm_registry_options_t o = isolated();
  const char *paths[] = {"/nonexistent/wmap-backends"};
  o.paths = paths;
  o.n_paths = 1;
  o.quiet = false;  // one warning line on stderr
  wm_registry_t *r;
  WM_CHECK_OK(wm_registry_create(&o, &r));
  WM_CHECK_INT_EQ(wm_registry_refused_count(r), 1);
  WM_CHECK_STR_EQ(wm_registry_refused_path(r, 0), "/nonexistent/wmap-backends");
  WM_CHECK(strstr(wm_registry_refused_reason(r, 0),
                  "--backend-path entry does not exist") != NULL);
  wm_registry_destroy(r);
}

WM_TEST(taken_backend_outlives_its_registry) {
  if (!have_plugins()) {
    return;
  }
  wm_registry_options_t o = isolated();
  o.install_dir = plugin_dir;
  o.builtin_query = builtin_query;
  wm_registry_t *r;
  WM_CHECK_OK(wm_registry_create(&o, &r));
  wm_backend_t *b, *builtin;
  WM_CHECK_OK(wm_registry_take(r, "claimsfail", &b));
  WM_CHECK_OK(wm_registry_take(r, "builtin_test", &builtin));
  WM_CHECK_INT_EQ(wm_registry_count(r), 1);
  WM_CHECK(!has_loaded(r, "claimsfail"));
  wm_registry_destroy(r);
  // The plugin's memory is still mapped: its table and strings work.
  WM_CHECK_STR_EQ(wm_backend_name(b), "claimsfail");
  WM_CHECK_STR_EQ(wm_backend_name(builtin), "builtin_test");
  WM_CHECK_INT_EQ(wm_backend_target_count(b), 1);
  wm_backend_destroy(b);
  wm_backend_destroy(builtin);
}

WM_TEST(claimsfail_claims_relu_and_fails_to_run_it) {
  if (!have_plugins()) {
    return;
  }
  wm_registry_options_t o = isolated();
  o.install_dir = plugin_dir;
  wm_registry_t *r;
  WM_CHECK_OK(wm_registry_create(&o, &r));
  wm_backend_t *b;
  WM_CHECK_OK(wm_registry_find(r, "claimsfail", &b));
  const wm_plugin_api *api = wm_backend_api(b);
  const wm_target_desc *t = wm_backend_target(b, 0);
  wm_op_desc op = {.struct_size = sizeof(op), .domain = "", .op_type = "Relu"};
  wm_op_support sup = {.struct_size = sizeof(sup)};
  WM_CHECK_OK(
      wm_backend_error(b, api->library->op_query(t, &op, &sup), "op_query"));
  WM_CHECK_INT_EQ(sup.level, WM_SUPPORT_SUPPORTED);
  op.op_type = "Add";
  WM_CHECK_OK(
      wm_backend_error(b, api->library->op_query(t, &op, &sup), "op_query"));
  WM_CHECK_INT_EQ(sup.level, WM_SUPPORT_NONE);
  wm_device *dev;
  WM_CHECK_OK(wm_backend_error(b, api->device_open(t, &dev), "device_open"));
  wm_stream *stream;
  WM_CHECK_OK(
      wm_backend_error(b, api->device->stream_create(dev, &stream), "stream"));
  wm_op_plan *plan;
  uint64_t ws;
  op.op_type = "Relu";
  WM_CHECK_OK(
      wm_backend_error(b, api->library->op_plan(dev, &op, &plan, &ws), "plan"));
  wm_status_t s = wm_backend_error(
      b, api->library->op_run(stream, plan, NULL, 0, NULL, 0, NULL), "op_run");
  api->library->op_plan_destroy(plan);
  api->device->stream_destroy(stream);
  api->device->device_close(dev);
  WM_CHECK_ERR(s, INTERNAL,
               "backend \"claimsfail\": op_run: claimsfail: op_run of Relu");
  wm_registry_destroy(r);
}

// The hostile plugins (tests/plugins/hostile.c): each file, the fragment
// its refusal must hold and the kind of refusal.
static const struct {
  const char *file, *fragment;
  wm_refusal_kind_t kind;
} hostile[] = {
    {"libwmap_backend_abort_info.so",
     "killed by signal 6 (Aborted) in get_info", WM_REFUSAL_FAULT},
    {"libwmap_backend_api_size.so", "API table is 8 bytes, want at least",
     WM_REFUSAL_UNUSABLE},
    {"libwmap_backend_bad_utf8.so", "get_info: vendor is not UTF-8",
     WM_REFUSAL_UNUSABLE},
    {"libwmap_backend_dup_ref.so",
     "backend name ref already loaded from "
     "built-in",
     WM_REFUSAL_CONFLICT},
    {"libwmap_backend_exit0_enumerate.so", "called exit(0) in enumerate",
     WM_REFUSAL_FAULT},
    {"libwmap_backend_exit7_ctor.so", "called exit(7) while loading",
     WM_REFUSAL_FAULT},
    {"libwmap_backend_hang_ctor.so", "did not answer within 1 s while loading",
     WM_REFUSAL_FAULT},
    {"libwmap_backend_hang_query.so",
     "did not answer within 1 s in wm_plugin_query", WM_REFUSAL_FAULT},
    {"libwmap_backend_long_name.so",
     "get_info: name \"a_name_of_seventy_characters_is_longer_than_any_"
     "backend_name_ma...\" is longer than 63 characters",
     WM_REFUSAL_UNUSABLE},
    {"libwmap_backend_long_version.so",
     "get_info: version is longer than 255 bytes", WM_REFUSAL_UNUSABLE},
    {"libwmap_backend_no_table.so",
     "wm_plugin_query answered no error and no API table", WM_REFUSAL_UNUSABLE},
    {"libwmap_backend_null_device.so",
     "missing required functions: mem_alloc, mem_free, copy_h2d",
     WM_REFUSAL_UNUSABLE},
    {"libwmap_backend_segv_query.so",
     "killed by signal 11 (Segmentation fault) in wm_plugin_query",
     WM_REFUSAL_FAULT},
    {"libwmap_backend_spaced_name.so",
     "get_info: name \"my backend\" has characters other than a-z, 0-9, _ "
     "and -",
     WM_REFUSAL_UNUSABLE},
    {"libwmap_backend_target_size.so",
     "enumerate: target 0 is 4 bytes, want at least", WM_REFUSAL_UNUSABLE},
    {"libwmap_backend_upper_name.so",
     "get_info: name \"Dummy2\" has characters other than a-z, 0-9, _ and -",
     WM_REFUSAL_UNUSABLE},
};

// Returns the index of refused |file| (a base name), or SIZE_MAX.
static size_t refusal_index(const wm_registry_t *r, const char *file) {
  for (size_t i = 0; i < wm_registry_refused_count(r); i++) {
    const char *p = wm_registry_refused_path(r, i);
    const char *slash = strrchr(p, '/');
    if (strcmp(slash ? slash + 1 : p, file) == 0) {
      return i;
    }
  }
  return SIZE_MAX;
}

// A registry of the hostile folder, then the good plugins, with ref as
// the built-in's name; probes time out after 1 s.
static wm_status_t open_hostile(wm_registry_t **out) {
  wm_registry_options_t o = isolated();
  const char *paths[] = {hostile_dir, plugin_dir};
  o.paths = paths;
  o.n_paths = 2;
  o.builtin_query = builtin_query;
  builtin_name = "ref";
  setenv("WMAP_PLUGIN_PROBE_TIMEOUT", "1", 1);
  wm_status_t s = wm_registry_create(&o, out);
  unsetenv("WMAP_PLUGIN_PROBE_TIMEOUT");
  builtin_name = "builtin_test";
  return s;
}

// Checks every hostile plugin's refusal; false after the first failure.
static bool check_hostile_refusals(const wm_registry_t *r) {
  for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
    size_t k = refusal_index(r, hostile[i].file);
    const char *reason =
        k == SIZE_MAX ? "(not refused)" : wm_registry_refused_reason(r, k);
    const char *path = k == SIZE_MAX ? "" : wm_registry_refused_path(r, k);
    if (!strstr(reason, hostile[i].fragment) || strchr(reason, '\n') ||
        strncmp(path, hostile_dir, strlen(hostile_dir)) != 0 ||
        wm_registry_refused_kind(r, k) != hostile[i].kind) {
      wm_test_fail(__FILE__, __LINE__,
                   "%s: refused as \"%s\" (kind %d) from \"%s\", want \"%s\" "
                   "(kind %d)",
                   hostile[i].file, reason,
                   k == SIZE_MAX ? -1 : (int)wm_registry_refused_kind(r, k),
                   path, hostile[i].fragment, (int)hostile[i].kind);
      return false;
    }
  }
  return true;
}

WM_TEST(hostile_plugins_are_refused_naming_what_happened) {
  if (!have_plugins()) {
    return;
  }
  unlink(cache_file);
  wm_registry_t *r;
  WM_CHECK_OK(open_hostile(&r));
  // The good plugins and the built-in still load; nothing else does.
  WM_CHECK_INT_EQ(wm_registry_count(r), 3);
  WM_CHECK(has_loaded(r, "claimsfail"));
  WM_CHECK(has_loaded(r, "dummy"));
  wm_backend_t *b;
  WM_CHECK_OK(wm_registry_find(r, "ref", &b));
  WM_CHECK_STR_EQ(wm_backend_origin(b), "built-in");
  WM_CHECK_INT_EQ(wm_registry_refused_count(r),
                  sizeof(hostile) / sizeof(hostile[0]) + 7);
  check_hostile_refusals(r);
  // The broken plugins of the folder after it keep their reasons.
  WM_CHECK(strstr(reason_for(r, "libwmap_backend_dummy_again.so"),
                  "backend name dummy already loaded from") != NULL);
  WM_CHECK_INT_EQ(wm_registry_refused_kind(
                      r, refusal_index(r, "libwmap_backend_dummy_again.so")),
                  WM_REFUSAL_CONFLICT);
  wm_registry_destroy(r);
}

// Replaces the first |from| in |path| by |to|; false when it is not there.
static bool edit_file(const char *path, const char *from, const char *to) {
  uint8_t *data = NULL;
  size_t size = 0;
  wm_status_t s = wm_file_read(path, &data, &size);
  if (s) {
    wm_status_free(s);
    return false;
  }
  char *text = wm_malloc(size + 1);
  memcpy(text, data, size);
  text[size] = '\0';
  free(data);
  char *at = strstr(text, from);
  if (at) {
    wm_strbuf_t b;
    wm_strbuf_init(&b);
    wm_strbuf_printf(&b, "%.*s%s%s", (int)(at - text), text, to,
                     at + strlen(from));
    s = wm_file_write(path, wm_strbuf_str(&b), b.len);
    wm_strbuf_deinit(&b);
    if (s) {
      wm_status_free(s);
      at = NULL;
    }
  }
  free(text);
  return at != NULL;
}

WM_TEST(probe_verdicts_are_cached_until_the_file_changes) {
  if (!have_plugins()) {
    return;
  }
  unlink(cache_file);
  wm_registry_t *r;
  WM_CHECK_OK(open_hostile(&r));
  wm_registry_destroy(r);
  WM_CHECK(access(cache_file, R_OK) == 0);
  // A verdict read from the cache is given as it is there: edit one.
  const char *real = "killed by signal 11 (Segmentation fault)";
  WM_CHECK(edit_file(cache_file, real, "a verdict from the cache"));
  WM_CHECK_OK(open_hostile(&r));
  WM_CHECK_STR_EQ(reason_for(r, "libwmap_backend_segv_query.so"),
                  "a verdict from the cache in wm_plugin_query");
  wm_registry_destroy(r);
  // The same file with another modification time is probed again.
  char plugin[sizeof(hostile_dir) + 40];
  snprintf(plugin, sizeof(plugin), "%s/libwmap_backend_segv_query.so",
           hostile_dir);
  struct stat st;
  WM_CHECK(stat(plugin, &st) == 0);
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  times[1].tv_nsec = (times[1].tv_nsec + 1) % 1000000000;
  WM_CHECK(utimensat(AT_FDCWD, plugin, times, 0) == 0);
  WM_CHECK_OK(open_hostile(&r));
  WM_CHECK(strstr(reason_for(r, "libwmap_backend_segv_query.so"), real) !=
           NULL);
  check_hostile_refusals(r);
  wm_registry_destroy(r);
}

WM_TEST(corrupt_probe_cache_is_ignored_and_written_anew) {
  if (!have_plugins()) {
    return;
  }
  static const char *const corrupt[] = {
      "{not json",
      "[]",
      "{\"format\": \"wmap.plugins/1\", \"host_abi\": \"0.6\", \"plugins\": "
      "[{\"path\": \"relative.so\", \"verdict\": \"ok\"}]}",
  };
  for (size_t i = 0; i < sizeof(corrupt) / sizeof(corrupt[0]); i++) {
    WM_CHECK_OK(wm_make_parents(cache_file));
    WM_CHECK_OK(wm_file_write(cache_file, corrupt[i], strlen(corrupt[i])));
    // The good folder's plugins only: every one is probed again.
    wm_registry_options_t o = isolated();
    o.install_dir = plugin_dir;
    wm_registry_t *r;
    WM_CHECK_OK(wm_registry_create(&o, &r));  // one warning on stderr
    WM_CHECK_INT_EQ(wm_registry_count(r), 2);
    WM_CHECK_INT_EQ(wm_registry_refused_count(r), 7);
    wm_registry_destroy(r);
    uint8_t *data = NULL;
    size_t size = 0;
    WM_CHECK_OK(wm_file_read(cache_file, &data, &size));
    WM_CHECK(size > 40 &&
             memmem(data, size, "\"format\": \"wmap.plugins/1\"", 26) != NULL);
    free(data);
  }
}

WM_TEST(probe_timeout_zero_loads_without_a_probe) {
  if (!have_plugins()) {
    return;
  }
  unlink(cache_file);
  wm_registry_options_t o = isolated();
  char file[PATH_MAX + 64];
  snprintf(file, sizeof(file), "%s/libwmap_backend_dummy.so", plugin_dir);
  const char *paths[] = {file};
  o.paths = paths;
  o.n_paths = 1;
  setenv("WMAP_PLUGIN_PROBE_TIMEOUT", "0", 1);
  wm_registry_t *r;
  wm_status_t s = wm_registry_create(&o, &r);
  unsetenv("WMAP_PLUGIN_PROBE_TIMEOUT");
  WM_CHECK_OK(s);
  WM_CHECK(has_loaded(r, "dummy"));
  WM_CHECK(access(cache_file, F_OK) != 0);  // nothing probed, nothing cached
  wm_registry_destroy(r);
}

WM_TEST(check_path_refuses_missing_empty_and_non_library_entries) {
  if (!have_plugins()) {
    return;
  }
  WM_CHECK_OK(wm_registry_check_path(plugin_dir));
  char file[PATH_MAX + 64];
  snprintf(file, sizeof(file), "%s/libwmap_backend_dummy.so", plugin_dir);
  WM_CHECK_OK(wm_registry_check_path(file));
  WM_CHECK_ERR(wm_registry_check_path("/nonexistent/wmap"), NOT_FOUND,
               "\"/nonexistent/wmap\" does not exist");
  WM_CHECK_ERR(wm_registry_check_path(cache_home), NOT_FOUND,
               "holds no backend plugin (libwmap_backend_*.so)");
  snprintf(file, sizeof(file), "%s/libwmap_backend_garbage.so", plugin_dir);
  WM_CHECK_ERR(wm_registry_check_path(file), INVALID_ARGUMENT,
               "is not a backend plugin (not a shared library)");
  // The registry refuses a named folder without plugins too.
  wm_registry_options_t o = isolated();
  const char *paths[] = {cache_home};
  o.paths = paths;
  o.n_paths = 1;
  wm_registry_t *r;
  WM_CHECK_OK(wm_registry_create(&o, &r));
  WM_CHECK_INT_EQ(wm_registry_refused_count(r), 1);
  WM_CHECK_INT_EQ(wm_registry_refused_kind(r, 0), WM_REFUSAL_NOT_FOUND);
  WM_CHECK_STR_EQ(wm_registry_refused_reason(r, 0),
                  "folder holds no backend plugin (libwmap_backend_*.so)");
  wm_registry_destroy(r);
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

int main(int argc, char **argv) {
  if (argc > 1) {
    snprintf(plugin_dir, sizeof(plugin_dir), "%s", argv[1]);
  } else {
    // <build>/src/plugin/test_plugin_loader -> <build>/tests/plugins
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = '\0';
    }
    snprintf(plugin_dir, sizeof(plugin_dir), "%s/../../tests/plugins", exe);
  }
  char real[PATH_MAX];
  if (realpath(plugin_dir, real)) {
    snprintf(plugin_dir, sizeof(plugin_dir), "%s", real);
  }
  snprintf(hostile_dir, sizeof(hostile_dir), "%s/hostile", plugin_dir);
  snprintf(cache_home, sizeof(cache_home), "/tmp/wmap-loader-test-XXXXXX");
  if (!mkdtemp(cache_home)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(cache_file, sizeof(cache_file), "%s/wmap/plugins.json", cache_home);
  setenv("XDG_CACHE_HOME", cache_home, 1);
  static const wm_test_case_t cases[] = {
      WM_CASE(registry_without_sources_is_empty_and_find_says_so),
      WM_CASE(registry_gives_the_builtin_the_thread_count),
      WM_CASE(failing_builtin_is_refused_not_fatal),
      WM_CASE(folder_discovery_loads_good_plugins_and_refuses_each_broken_one),
      WM_CASE(builtin_wins_over_a_plugin_of_the_same_name),
      WM_CASE(env_path_takes_files_and_skips_missing_and_repeated_entries),
      WM_CASE(same_folder_twice_loads_each_file_once),
      WM_CASE(install_dir_option_is_searched),
      WM_CASE(missing_backend_path_entry_is_refused),
      WM_CASE(taken_backend_outlives_its_registry),
      WM_CASE(claimsfail_claims_relu_and_fails_to_run_it),
      WM_CASE(hostile_plugins_are_refused_naming_what_happened),
      WM_CASE(probe_verdicts_are_cached_until_the_file_changes),
      WM_CASE(corrupt_probe_cache_is_ignored_and_written_anew),
      WM_CASE(probe_timeout_zero_loads_without_a_probe),
      WM_CASE(check_path_refuses_missing_empty_and_non_library_entries),
      {NULL, NULL},
  };
  int rc = wm_test_main(cases);
  nftw(cache_home, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  return rc;
}
