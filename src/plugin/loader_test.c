// Tests of the backend registry: the built-in backend, folder and file
// discovery, WMAP_BACKEND_PATH, and one refusal per broken test plugin
// (tests/plugins, built into <build>/tests/plugins; the folder is argv[1]
// or found from this executable's place in the build tree).
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../tests/plugins/plugin_common.h"
#include "wm_test.h"
#include "wmap/plugin.h"

static char plugin_dir[PATH_MAX + 32];
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
  if (access(plugin_dir, R_OK) != 0) {
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
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
