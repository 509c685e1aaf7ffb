// The environment record: set/get/replace, truncation, the field limit,
// the fingerprint over critical fields, and what wm_env_collect reads from
// this machine.
#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../tests/testing/wm_test.h"
#include "wmap/bench.h"

#define KEY_CAP sizeof(((wm_env_field_t *)0)->key)
#define VALUE_CAP sizeof(((wm_env_field_t *)0)->value)

WM_TEST(env_set_appends_and_get_finds) {
  static wm_env_t env;
  memset(&env, 0, sizeof(env));
  wm_env_set(&env, "cpu.model", true, "%s", "Test CPU");
  wm_env_set(&env, "cpu.cores", true, "%d", 4);
  wm_env_set(&env, "load.avg1", false, "%.2f", 0.5);
  WM_CHECK_INT_EQ(env.n, 3);
  WM_CHECK_STR_EQ(wm_env_get(&env, "cpu.model"), "Test CPU");
  WM_CHECK_STR_EQ(wm_env_get(&env, "cpu.cores"), "4");
  WM_CHECK_STR_EQ(wm_env_get(&env, "load.avg1"), "0.50");
  WM_CHECK(env.fields[1].critical);
  WM_CHECK(!env.fields[2].critical);
  WM_CHECK(wm_env_get(&env, "cpu.flags") == NULL);
  WM_CHECK(wm_env_get(&env, "cpu") == NULL);
}

WM_TEST(env_set_replaces_in_place) {
  static wm_env_t env;
  memset(&env, 0, sizeof(env));
  wm_env_set(&env, "a", true, "1");
  wm_env_set(&env, "b", true, "2");
  wm_env_set(&env, "c", true, "3");
  wm_env_set(&env, "b", false, "two");
  WM_CHECK_INT_EQ(env.n, 3);
  WM_CHECK_STR_EQ(env.fields[1].key, "b");
  WM_CHECK_STR_EQ(env.fields[1].value, "two");
  WM_CHECK(!env.fields[1].critical);
  // The old value may be an argument of the new one.
  wm_env_set(&env, "b", false, "%s-%s", wm_env_get(&env, "b"), "x");
  WM_CHECK_STR_EQ(wm_env_get(&env, "b"), "two-x");
  WM_CHECK_INT_EQ(env.n, 3);
}

WM_TEST(env_set_truncates_long_keys_and_values) {
  static wm_env_t env;
  memset(&env, 0, sizeof(env));
  char key[100], value[400];
  memset(key, 'k', sizeof(key) - 1);
  key[sizeof(key) - 1] = '\0';
  memset(value, 'v', sizeof(value) - 1);
  value[sizeof(value) - 1] = '\0';
  wm_env_set(&env, key, false, "%s", value);
  WM_CHECK_INT_EQ(env.n, 1);
  WM_CHECK_INT_EQ(strlen(env.fields[0].key), KEY_CAP - 1);
  WM_CHECK_INT_EQ(strlen(env.fields[0].value), VALUE_CAP - 1);
  // The long key names the same (truncated) field.
  WM_CHECK(wm_env_get(&env, key) == env.fields[0].value);
  wm_env_set(&env, key, false, "short");
  WM_CHECK_INT_EQ(env.n, 1);
  WM_CHECK_STR_EQ(wm_env_get(&env, key), "short");
}

WM_TEST(env_set_truncation_keeps_utf8_whole) {
  static wm_env_t env;
  memset(&env, 0, sizeof(env));
  // VALUE_CAP - 2 ASCII bytes then a 2-byte character: it does not fit.
  char value[VALUE_CAP + 8];
  memset(value, 'x', VALUE_CAP - 2);
  strcpy(value + VALUE_CAP - 2, "\xc3\xa9");
  wm_env_set(&env, "k", false, "%s", value);
  WM_CHECK_INT_EQ(strlen(wm_env_get(&env, "k")), VALUE_CAP - 2);
  // One byte shorter and it fits exactly.
  value[0] = '\0';
  memset(value, 'x', VALUE_CAP - 3);
  strcpy(value + VALUE_CAP - 3, "\xc3\xa9");
  wm_env_set(&env, "k", false, "%s", value);
  WM_CHECK_INT_EQ(strlen(wm_env_get(&env, "k")), VALUE_CAP - 1);
}

WM_TEST(env_set_ignores_fields_past_the_limit) {
  static wm_env_t env;
  memset(&env, 0, sizeof(env));
  char key[32];
  for (int i = 0; i < WM_ENV_MAX_FIELDS + 5; i++) {
    snprintf(key, sizeof(key), "k%03d", i);
    wm_env_set(&env, key, i % 2 == 0, "%d", i);
  }
  WM_CHECK_INT_EQ(env.n, WM_ENV_MAX_FIELDS);
  snprintf(key, sizeof(key), "k%03d", WM_ENV_MAX_FIELDS - 1);
  WM_CHECK(wm_env_get(&env, key) != NULL);
  snprintf(key, sizeof(key), "k%03d", WM_ENV_MAX_FIELDS);
  WM_CHECK(wm_env_get(&env, key) == NULL);
  // A full record still replaces existing fields.
  wm_env_set(&env, "k000", true, "new");
  WM_CHECK_STR_EQ(wm_env_get(&env, "k000"), "new");
  WM_CHECK_INT_EQ(env.n, WM_ENV_MAX_FIELDS);
}

WM_TEST(env_get_and_set_accept_null) {
  WM_CHECK(wm_env_get(NULL, "a") == NULL);
  wm_env_set(NULL, "a", true, "1");
  wm_env_finish(NULL);
  wm_env_collect(NULL);
}

static void fill_a(wm_env_t *env) {
  memset(env, 0, sizeof(*env));
  wm_env_set(env, "cpu.model", true, "Test CPU");
  wm_env_set(env, "os.kernel", true, "6.1.0");
  wm_env_set(env, "load.avg1", false, "0.10");
  wm_env_set(env, "build.type", true, "Release");
  wm_env_finish(env);
}

static void fill_b(wm_env_t *env) {
  memset(env, 0, sizeof(*env));
  wm_env_set(env, "build.type", true, "Release");
  wm_env_set(env, "load.avg1", false, "0.10");
  wm_env_set(env, "os.kernel", true, "6.1.0");
  wm_env_set(env, "cpu.model", true, "Test CPU");
  wm_env_finish(env);
}

static bool is_hex64(const char *s) {
  if (strlen(s) != 64) {
    return false;
  }
  for (const char *p = s; *p; p++) {
    if (!isxdigit((unsigned char)*p) || isupper((unsigned char)*p)) {
      return false;
    }
  }
  return true;
}

WM_TEST(env_fingerprint_hashes_sorted_critical_lines) {
  static wm_env_t env;
  fill_a(&env);
  WM_CHECK(is_hex64(env.fingerprint));
  const char *lines =
      "build.type=Release\ncpu.model=Test CPU\nos.kernel=6.1.0\n";
  char want[65];
  wm_sha256_hex(lines, strlen(lines), want);
  WM_CHECK_STR_EQ(env.fingerprint, want);
}

WM_TEST(env_fingerprint_ignores_insertion_order) {
  static wm_env_t a, b;
  fill_a(&a);
  fill_b(&b);
  WM_CHECK_STR_EQ(a.fingerprint, b.fingerprint);
}

WM_TEST(env_fingerprint_changes_with_a_critical_value) {
  static wm_env_t a, b;
  fill_a(&a);
  fill_a(&b);
  wm_env_set(&b, "os.kernel", true, "6.1.1");
  wm_env_finish(&b);
  WM_CHECK(strcmp(a.fingerprint, b.fingerprint) != 0);
  // A new critical field changes it too.
  fill_a(&b);
  wm_env_set(&b, "model.sha256", true, "abc");
  wm_env_finish(&b);
  WM_CHECK(strcmp(a.fingerprint, b.fingerprint) != 0);
}

WM_TEST(env_fingerprint_ignores_volatile_values) {
  static wm_env_t a, b;
  fill_a(&a);
  fill_a(&b);
  wm_env_set(&b, "load.avg1", false, "3.75");
  wm_env_set(&b, "time.utc", false, "2026-12-02T15:04:05Z");
  wm_env_finish(&b);
  WM_CHECK_STR_EQ(a.fingerprint, b.fingerprint);
}

static bool maps_contain(const char *needle) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) {
    return false;
  }
  char line[4096];
  bool found = false;
  while (!found && fgets(line, sizeof(line), f)) {
    found = strstr(line, needle) != NULL;
  }
  fclose(f);
  return found;
}

static bool is_utc_time(const char *s) {
  // "2026-12-02T15:04:05Z"
  static const char pattern[] = "dddd-dd-ddTdd:dd:ddZ";
  if (strlen(s) != sizeof(pattern) - 1) {
    return false;
  }
  for (size_t i = 0; pattern[i]; i++) {
    bool ok = pattern[i] == 'd' ? isdigit((unsigned char)s[i]) != 0
                                : s[i] == pattern[i];
    if (!ok) {
      return false;
    }
  }
  return true;
}

static void print_env(const wm_env_t *env) {
  printf("fingerprint %s\n", env->fingerprint);
  for (size_t i = 0; i < env->n; i++) {
    printf("  %-9s %-18s %s\n",
           env->fields[i].critical ? "critical" : "volatile",
           env->fields[i].key, env->fields[i].value);
  }
}

WM_TEST(env_collect_reads_this_machine) {
  bool had_openblas = maps_contain("libopenblas");
  static wm_env_t env;
  memset(&env, 0x5a, sizeof(env));  // collect clears what was there
  wm_env_collect(&env);
  print_env(&env);
  const char *model = wm_env_get(&env, "cpu.model");
  WM_CHECK(model != NULL && model[0] != '\0');
  const char *cores = wm_env_get(&env, "cpu.cores");
  WM_CHECK(cores != NULL);
  WM_CHECK(atoi(cores) >= 1);
  WM_CHECK_INT_EQ(atoi(cores), wm_cpu_count());
  const char *kernel = wm_env_get(&env, "os.kernel");
  WM_CHECK(kernel != NULL && kernel[0] != '\0');
  const char *type = wm_env_get(&env, "build.type");
  WM_CHECK(type != NULL && type[0] != '\0');
  const char *compiler = wm_env_get(&env, "build.compiler");
  WM_CHECK(compiler != NULL && (strncmp(compiler, "gcc ", 4) == 0 ||
                                strncmp(compiler, "clang ", 6) == 0));
  const char *utc = wm_env_get(&env, "time.utc");
  WM_CHECK(utc != NULL);
  WM_CHECK(is_utc_time(utc));
  const char *host = wm_env_get(&env, "host.hash");
  WM_CHECK(host != NULL);
  WM_CHECK(strcmp(host, "unknown") == 0 || strlen(host) == 12);
  // Every documented field is present, with its class.
  static const char *const critical[] = {
      "cpu.model",      "cpu.flags",      "cpu.cores",
      "os.kernel",      "build.compiler", "build.type",
      "lib.protobuf-c", "lib.openblas",   "lib.openblas.core"};
  static const char *const volatile_keys[] = {
      "wmap.version", "wmap.git",  "cpu.governor", "cpu.mhz",
      "load.avg1",    "host.hash", "time.utc"};
  for (size_t i = 0; i < sizeof(critical) / sizeof(critical[0]); i++) {
    const char *v = wm_env_get(&env, critical[i]);
    WM_CHECK(v != NULL && v[0] != '\0');
  }
  for (size_t i = 0; i < sizeof(volatile_keys) / sizeof(volatile_keys[0]);
       i++) {
    const char *v = wm_env_get(&env, volatile_keys[i]);
    WM_CHECK(v != NULL && v[0] != '\0');
  }
  for (size_t i = 0; i < env.n; i++) {
    bool is_critical = false;
    for (size_t j = 0; j < sizeof(critical) / sizeof(critical[0]); j++) {
      is_critical |= strcmp(env.fields[i].key, critical[j]) == 0;
    }
    WM_CHECK(env.fields[i].critical == is_critical);
  }
  // The fingerprint is the one wm_env_finish computes.
  char fingerprint[65];
  memcpy(fingerprint, env.fingerprint, sizeof(fingerprint));
  wm_env_finish(&env);
  WM_CHECK_STR_EQ(env.fingerprint, fingerprint);
  WM_CHECK(is_hex64(fingerprint));
  // OpenBLAS is read without loading it into this process.
  const char *openblas = wm_env_get(&env, "lib.openblas");
  WM_CHECK(strcmp(openblas, "unknown") == 0 ||
           strncmp(openblas, "OpenBLAS", 8) == 0);
  if (!had_openblas) {
    WM_CHECK(!maps_contain("libopenblas"));
  }
}

WM_TEST(env_collect_records_behaviour_variables) {
  WM_CHECK(setenv("WMAP_TEST_ENV_X", "42", 1) == 0);
  WM_CHECK(setenv("OMP_TEST_ENV_A", "a", 1) == 0);
  WM_CHECK(setenv("OMP_TEST_ENV_A0", "b", 1) == 0);
  WM_CHECK(setenv("OMP_TEST_ENV_A_B", "c", 1) == 0);
  WM_CHECK(setenv("XWMAP_TEST_ENV", "no", 1) == 0);
  static wm_env_t env;
  wm_env_collect(&env);
  unsetenv("WMAP_TEST_ENV_X");
  unsetenv("OMP_TEST_ENV_A");
  unsetenv("OMP_TEST_ENV_A0");
  unsetenv("OMP_TEST_ENV_A_B");
  unsetenv("XWMAP_TEST_ENV");
  WM_CHECK_STR_EQ(wm_env_get(&env, "env.WMAP_TEST_ENV_X"), "42");
  WM_CHECK_STR_EQ(wm_env_get(&env, "env.OMP_TEST_ENV_A"), "a");
  WM_CHECK(wm_env_get(&env, "env.XWMAP_TEST_ENV") == NULL);
  WM_CHECK(wm_env_get(&env, "env.HOME") == NULL);
  WM_CHECK(wm_env_get(&env, "env.PATH") == NULL);
  // env.* come last, sorted by name, and are volatile.
  size_t a = env.n, a0 = env.n, a_b = env.n, first_env = env.n;
  for (size_t i = 0; i < env.n; i++) {
    const char *k = env.fields[i].key;
    if (strncmp(k, "env.", 4) == 0) {
      WM_CHECK(!env.fields[i].critical);
      if (first_env == env.n) {
        first_env = i;
      }
    } else {
      WM_CHECK(first_env == env.n);
    }
    a = strcmp(k, "env.OMP_TEST_ENV_A") == 0 ? i : a;
    a0 = strcmp(k, "env.OMP_TEST_ENV_A0") == 0 ? i : a0;
    a_b = strcmp(k, "env.OMP_TEST_ENV_A_B") == 0 ? i : a_b;
  }
  WM_CHECK(a < a0 && a0 < a_b && a_b < env.n);
}

WM_TEST(env_collect_leaves_room_for_the_caller) {
  char name[64];
  for (int i = 0; i < 2 * WM_ENV_MAX_FIELDS; i++) {
    snprintf(name, sizeof(name), "WMAP_TEST_MANY_%03d", i);
    WM_CHECK(setenv(name, "1", 1) == 0);
  }
  static wm_env_t env;
  wm_env_collect(&env);
  for (int i = 0; i < 2 * WM_ENV_MAX_FIELDS; i++) {
    snprintf(name, sizeof(name), "WMAP_TEST_MANY_%03d", i);
    unsetenv(name);
  }
  WM_CHECK(env.n < WM_ENV_MAX_FIELDS);
  WM_CHECK(wm_env_get(&env, "env.WMAP_TEST_MANY_000") != NULL);
  WM_CHECK(wm_env_get(&env, "time.utc") != NULL);
  wm_env_set(&env, "model.sha256", true, "abc");
  wm_env_set(&env, "model.dims", true, "batch=1");
  WM_CHECK_STR_EQ(wm_env_get(&env, "model.sha256"), "abc");
  WM_CHECK_STR_EQ(wm_env_get(&env, "model.dims"), "batch=1");
}

// In a child that has OpenBLAS loaded, the version is read in process
// (RTLD_NOLOAD) and matches the one a forked probe reads.
WM_TEST(env_collect_reads_a_loaded_openblas_in_process) {
  static wm_env_t outside;
  wm_env_collect(&outside);
  if (strcmp(wm_env_get(&outside, "lib.openblas"), "unknown") == 0) {
    wm_test_skip("libopenblas.so.0 is not installed");
    return;
  }
  fflush(NULL);
  pid_t pid = fork();
  WM_CHECK(pid >= 0);
  if (pid == 0) {
    if (!dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL)) {
      _exit(2);
    }
    static wm_env_t inside;
    wm_env_collect(&inside);
    bool same = strcmp(wm_env_get(&inside, "lib.openblas"),
                       wm_env_get(&outside, "lib.openblas")) == 0 &&
                strcmp(wm_env_get(&inside, "lib.openblas.core"),
                       wm_env_get(&outside, "lib.openblas.core")) == 0;
    _exit(same ? 0 : 3);
  }
  int status = 0;
  WM_CHECK(waitpid(pid, &status, 0) == pid);
  WM_CHECK(WIFEXITED(status));
  WM_CHECK_INT_EQ(WEXITSTATUS(status), 0);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(env_set_appends_and_get_finds),
      WM_CASE(env_set_replaces_in_place),
      WM_CASE(env_set_truncates_long_keys_and_values),
      WM_CASE(env_set_truncation_keeps_utf8_whole),
      WM_CASE(env_set_ignores_fields_past_the_limit),
      WM_CASE(env_get_and_set_accept_null),
      WM_CASE(env_fingerprint_hashes_sorted_critical_lines),
      WM_CASE(env_fingerprint_ignores_insertion_order),
      WM_CASE(env_fingerprint_changes_with_a_critical_value),
      WM_CASE(env_fingerprint_ignores_volatile_values),
      WM_CASE(env_collect_reads_this_machine),
      WM_CASE(env_collect_records_behaviour_variables),
      WM_CASE(env_collect_leaves_room_for_the_caller),
      WM_CASE(env_collect_reads_a_loaded_openblas_in_process),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
