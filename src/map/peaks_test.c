// Tests of the machine peaks: fingerprint, cache round trip, corrupt
// cache, and a quick measurement (numbers only checked positive/finite).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wm_test.h"
#include "wmap/map.h"
#include "wmap/plugin.h"

static bool pos_finite(double v) {
  return v > 0 && isfinite(v);
}

// A fresh temporary folder; the caller removes it.
static bool temp_dir(char *buf, size_t cap) {
  snprintf(buf, cap, "/tmp/wm_peaks_test_XXXXXX");
  return mkdtemp(buf) != NULL;
}

static void remove_cache(const char *dir) {
  wm_machine_t m;
  wm_machine_get(&m);
  char *path = NULL;
  wm_status_t s = wm_peaks_cache_path(dir, &m, &path);
  wm_status_free(s);
  if (path) {
    unlink(path);
    free(path);
  }
  rmdir(dir);
}

WM_TEST(fingerprint_is_stable) {
  wm_machine_t a, b;
  wm_machine_get(&a);
  wm_machine_get(&b);
  WM_CHECK_STR_EQ(a.fingerprint, b.fingerprint);
  WM_CHECK_INT_EQ(strlen(a.fingerprint), 16);
  WM_CHECK(a.cores >= 1);
  WM_CHECK(a.model[0] != '\0');
}

static void sample(wm_peaks_t *p) {
  memset(p, 0, sizeof(*p));
  wm_machine_get(&p->machine);
  p->measured_at = 1700000000;
  p->threads = 2;
  snprintf(p->isa, sizeof(p->isa), "avx512f");
  p->fma_fp32[0] = 210.5;
  p->fma_fp32[1] = 420.25;
  p->fma_fp64[0] = 105;
  p->fma_fp64[1] = 210;
  p->triad_gbs[0] = 35.5;
  p->triad_gbs[1] = 60;
  p->n_backends = 2;
  snprintf(p->backends[0].name, 64, "cpu");
  snprintf(p->backends[0].target, 128, "AMD \"EPYC\"");
  p->backends[0].host = true;
  p->backends[0].gemm_fp32[0] = 100;
  p->backends[0].gemm_fp32[1] = 190;
  p->backends[0].gemm_n = 1024;
  snprintf(p->software, sizeof(p->software), "00000000deadbeef");
  snprintf(p->software_detail, sizeof(p->software_detail),
           "wmap 1.2.3; cpu 0.1.0 /x/libwmap_cpu.so 10 bytes mtime 5");
  snprintf(p->backends[1].name, 64, "gpu");
  snprintf(p->backends[1].gemm_note, 160, "no device");
  p->backends[1].declared_fp32 = 1000;
  p->backends[1].declared_bw = 900;
}

WM_TEST(cache_round_trip) {
  char dir[64];
  WM_CHECK(temp_dir(dir, sizeof(dir)));
  wm_peaks_t p, q;
  sample(&p);
  char *path = NULL;
  WM_CHECK_OK(wm_peaks_cache_path(dir, &p.machine, &path));
  wm_status_t s = wm_peaks_save(path, &p);
  if (!s) {
    s = wm_peaks_load(path, &q);
  }
  free(path);
  remove_cache(dir);
  WM_CHECK_OK(s);
  WM_CHECK(!q.from_cache);  // a file read by name is not "the cache"
  WM_CHECK_STR_EQ(q.machine.fingerprint, p.machine.fingerprint);
  WM_CHECK_INT_EQ(q.machine.flags_hash == p.machine.flags_hash, 1);
  WM_CHECK_INT_EQ(q.measured_at, 1700000000);
  WM_CHECK_STR_EQ(q.isa, "avx512f");
  WM_CHECK_DBL_NEAR(q.fma_fp32[1], 420.25, 1e-9);
  WM_CHECK_DBL_NEAR(q.triad_gbs[0], 35.5, 1e-9);
  WM_CHECK_INT_EQ(q.n_backends, 2);
  WM_CHECK_STR_EQ(q.backends[0].target, "AMD \"EPYC\"");
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops(&q, "cpu"), 190, 1e-9);
  WM_CHECK_DBL_NEAR(wm_peaks_bandwidth_gbs(&q, "cpu"), 60, 1e-9);
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops(&q, "gpu"), 1000, 1e-9);
  WM_CHECK_DBL_NEAR(wm_peaks_bandwidth_gbs(&q, "gpu"), 900, 1e-9);
  WM_CHECK_STR_EQ(q.backends[1].gemm_note, "no device");
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops(&q, "absent"), 0, 0);
  WM_CHECK_INT_EQ(q.backends[0].gemm_n, 1024);
  WM_CHECK_STR_EQ(q.software, p.software);
  WM_CHECK_STR_EQ(q.software_detail, p.software_detail);
}

WM_TEST(each_host_backend_has_its_own_gemm_roof) {
  wm_peaks_t p;
  sample(&p);
  p.n_backends = 3;
  snprintf(p.backends[2].name, 64, "ref");
  p.backends[2].host = true;
  p.backends[2].gemm_fp32[0] = 2.5;
  p.backends[2].gemm_fp32[1] = 2.75;
  p.backends[2].gemm_n = 256;
  // ref's naive loops get their own roof, not the cpu backend's GEMM.
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops(&p, "ref"), 2.75, 1e-9);
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops(&p, "cpu"), 190, 1e-9);
  // Bandwidth stays the host triad for both.
  WM_CHECK_DBL_NEAR(wm_peaks_bandwidth_gbs(&p, "ref"), 60, 1e-9);
  // A host backend with no GEMM of its own: the FMA units are its roof.
  p.backends[2].gemm_fp32[0] = p.backends[2].gemm_fp32[1] = 0;
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops(&p, "ref"), 420.25, 1e-9);
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops(&p, "cpu"), 190, 1e-9);
}

WM_TEST(peaks_follow_the_thread_count) {
  wm_peaks_t p;
  sample(&p);
  p.threads = 4;  // cpu GEMM 100 / 190, FMA 210.5 / 420.25, triad 35.5 / 60
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops_at(&p, "cpu", 1), 100, 1e-9);
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops_at(&p, "cpu", 4), 190, 1e-9);
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops_at(&p, "cpu", 0), 190, 1e-9);
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops_at(&p, "cpu", 64), 190, 1e-9);
  // In between: one thread's figure per thread, capped by all cores'.
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops_at(&p, "cpu", 2), 190, 1e-9);
  p.backends[0].gemm_fp32[0] = 50;
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops_at(&p, "cpu", 2), 100, 1e-9);
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops_at(&p, "cpu", 3), 150, 1e-9);
  WM_CHECK_DBL_NEAR(wm_peaks_bandwidth_gbs_at(&p, "cpu", 1), 35.5, 1e-9);
  WM_CHECK_DBL_NEAR(wm_peaks_bandwidth_gbs_at(&p, "cpu", 2), 60, 1e-9);
  // Without a 1-thread GEMM the all-core one is all there is.
  p.backends[0].gemm_fp32[0] = 0;
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops_at(&p, "cpu", 1), 190, 1e-9);
  // A device backend's figures do not depend on host threads.
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops_at(&p, "gpu", 1), 1000, 1e-9);
  WM_CHECK_DBL_NEAR(wm_peaks_bandwidth_gbs_at(&p, "gpu", 1), 900, 1e-9);
}

// A wmap.peaks/1 document of this machine with the given figures.
static char *crafted(const char *fma_all, const char *triad_one,
                     const char *gemm_one, const char *gemm_all) {
  wm_machine_t m;
  wm_machine_get(&m);
  char *doc = malloc(4096);
  if (doc) {
    snprintf(doc, 4096,
             "{\"format\": \"wmap.peaks/1\",\n"
             " \"machine\": {\"model\": \"m\", \"cores\": 2, "
             "\"flags_hash\": \"0\", \"kernel\": \"k\", "
             "\"fingerprint\": \"%s\"},\n"
             " \"measured_at\": 1796224350,\n"
             " \"host\": {\"threads\": 2, \"isa\": \"avx512f\",\n"
             "  \"fma_gflops_fp32\": {\"1\": 224, \"all\": %s},\n"
             "  \"fma_gflops_fp64\": {\"1\": 112, \"all\": 224},\n"
             "  \"triad_gbs\": {\"1\": %s, \"all\": 40}},\n"
             " \"backends\": [{\"name\": \"cpu\", \"target\": \"t\", "
             "\"host\": true,\n"
             "  \"gemm_gflops_fp32\": {\"1\": %s, \"all\": %s}, "
             "\"gemm_note\": \"\",\n"
             "  \"declared_gflops_fp32\": 0, \"declared_gflops_fp16\": 0, "
             "\"declared_bandwidth_gbs\": 0}]}\n",
             m.fingerprint, fma_all, triad_one, gemm_one, gemm_all);
  }
  return doc;
}

WM_TEST(gemm_above_the_fma_peak_is_refused) {
  char *ok = crafted("448", "30", "200", "440");
  char *bad = crafted("448", "30", "200", "500");
  char *bad1 = crafted("448", "30", "300", "400");
  WM_CHECK(ok && bad && bad1);
  wm_peaks_t p;
  WM_CHECK_OK(wm_peaks_from_json(ok, strlen(ok), &p));  // within 5 %
  WM_CHECK_ERR(wm_peaks_from_json(bad, strlen(bad), &p), DATA_LOSS,
               "backend \"cpu\": GEMM 500.0 GFLOP/s at all cores exceeds the "
               "FMA peak 448.0 GFLOP/s");
  WM_CHECK_ERR(wm_peaks_from_json(bad1, strlen(bad1), &p), DATA_LOSS,
               "GEMM 300.0 GFLOP/s at 1 thread");
  // Read from a file, the message names the file too.
  char dir[64];
  WM_CHECK(temp_dir(dir, sizeof(dir)));
  char path[128];
  snprintf(path, sizeof(path), "%s/peaks.json", dir);
  WM_CHECK_OK(wm_file_write(path, bad, strlen(bad)));
  WM_CHECK_ERR(wm_peaks_load(path, &p), DATA_LOSS, path);
  unlink(path);
  rmdir(dir);
  free(ok);
  free(bad);
  free(bad1);
}

WM_TEST(negative_or_infinite_figures_are_refused) {
  char *neg = crafted("448", "-3", "200", "400");
  char *inf = crafted("1e999", "30", "200", "400");
  WM_CHECK(neg && inf);
  wm_peaks_t p;
  WM_CHECK_ERR(wm_peaks_from_json(neg, strlen(neg), &p), DATA_LOSS,
               "\"triad_gbs\" \"1\" is -3, want a finite number >= 0");
  WM_CHECK_ERR(wm_peaks_from_json(inf, strlen(inf), &p), DATA_LOSS,
               "\"fma_gflops_fp32\" \"all\" is inf");
  free(neg);
  free(inf);
  // Figures set in memory are checked the same way.
  sample(&p);
  p.backends[0].gemm_fp32[1] = NAN;
  WM_CHECK_ERR(wm_peaks_check(&p), DATA_LOSS,
               "backend \"cpu\": GEMM fp32 GFLOP/s at all cores is nan");
}

WM_TEST(refused_cache_is_measured_again) {
  char dir[64];
  WM_CHECK(temp_dir(dir, sizeof(dir)));
  wm_machine_t m;
  wm_machine_get(&m);
  char *path = NULL;
  WM_CHECK_OK(wm_peaks_cache_path(dir, &m, &path));
  char *bad = crafted("448", "30", "200", "500");
  WM_CHECK(bad != NULL);
  wm_status_t s = wm_file_write(path, bad, strlen(bad));
  free(bad);
  wm_peaks_t p, q;
  wm_peaks_options_t o = {0};
  o.quick = true;
  o.cache_dir = dir;
  if (!s) {
    s = wm_peaks_get(&o, &p);
  }
  wm_status_t s2 = s ? NULL : wm_peaks_load(path, &q);
  free(path);
  remove_cache(dir);
  WM_CHECK_OK(s);
  WM_CHECK(!p.from_cache);
  WM_CHECK_OK(s2);  // rewritten, consistent
  WM_CHECK(q.n_backends == 0);
}

WM_TEST(cache_expires_when_the_software_changes) {
  char dir[64];
  WM_CHECK(temp_dir(dir, sizeof(dir)));
  wm_peaks_t p, got;
  sample(&p);
  p.n_backends = 1;  // no registry below: the cache may hold more
  wm_peaks_software(NULL, p.software_detail, sizeof(p.software_detail),
                    p.software);
  WM_CHECK(strncmp(p.software_detail, "wmap ", 5) == 0);
  WM_CHECK_INT_EQ(strlen(p.software), 16);
  char *path = NULL;
  WM_CHECK_OK(wm_peaks_cache_path(dir, &p.machine, &path));
  wm_peaks_options_t o = {0};
  o.quick = true;
  o.cache_dir = dir;
  // Same software: the cache serves.
  wm_status_t s = wm_peaks_save(path, &p);
  if (!s) {
    s = wm_peaks_get(&o, &got);
  }
  bool first_cached = !s && got.from_cache && got.fma_fp32[1] == 420.25;
  // Another wmap version: measured again, and the cache rewritten with
  // this software.
  snprintf(p.software_detail, sizeof(p.software_detail), "wmap 0.0.1-old");
  snprintf(p.software, sizeof(p.software), "0123456789abcdef");
  if (!s) {
    s = wm_peaks_save(path, &p);
  }
  if (!s) {
    s = wm_peaks_get(&o, &got);
  }
  wm_peaks_t again;
  wm_status_t s2 = s ? NULL : wm_peaks_load(path, &again);
  // A cache from before the fingerprint existed is measured again too.
  p.software[0] = p.software_detail[0] = '\0';
  bool second_fresh = !s && !got.from_cache;
  wm_peaks_t old;
  if (!s && !s2) {
    s = wm_peaks_save(path, &p);
  }
  if (!s && !s2) {
    s = wm_peaks_get(&o, &old);
  }
  free(path);
  remove_cache(dir);
  WM_CHECK_OK(s);
  WM_CHECK_OK(s2);
  WM_CHECK(first_cached);
  WM_CHECK(second_fresh);
  WM_CHECK(strcmp(again.software, "0123456789abcdef") != 0);
  WM_CHECK(strncmp(again.software_detail, "wmap ", 5) == 0);
  WM_CHECK(!old.from_cache);
}

WM_TEST(ref_is_timed_on_its_own_matmul) {
  wm_registry_options_t ro = {0};
  ro.no_env = true;
  ro.quiet = true;
  ro.install_dir = "";
  ro.builtin_query = wm_ref_plugin_query;
  wm_registry_t *reg = NULL;
  WM_CHECK_OK(wm_registry_create(&ro, &reg));
  wm_peaks_t p;
  wm_peaks_options_t o = {0};
  o.quick = true;
  o.no_cache = true;
  o.registry = reg;
  wm_status_t s = wm_peaks_measure(&o, &p);
  wm_registry_destroy(reg);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(p.n_backends, 1);
  WM_CHECK_STR_EQ(p.backends[0].name, "ref");
  WM_CHECK_STR_EQ(p.backends[0].gemm_note, "");
  WM_CHECK_INT_EQ(p.backends[0].gemm_n, 64);  // the quick size
  WM_CHECK(pos_finite(p.backends[0].gemm_fp32[1]));
  // The map's roof for ref is ref's own figure, not the FMA loop's.
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops(&p, "ref"), p.backends[0].gemm_fp32[1],
                    0);
  WM_CHECK(strstr(p.software_detail, "ref ") != NULL);
}

WM_TEST(peaks_json_is_read_strictly) {
  char *ok = crafted("448", "30", "200", "440");
  WM_CHECK(ok);
  size_t n = strlen(ok);
  char *trailing = malloc(n + 8);
  char *twice = malloc(n + 32);
  WM_CHECK(trailing && twice);
  snprintf(trailing, n + 8, "%s{}", ok);
  // "measured_at" a second time, at the end of the top-level object.
  snprintf(twice, n + 32, "%.*s, \"measured_at\": 1}\n", (int)(n - 2), ok);
  wm_peaks_t p;
  WM_CHECK_ERR(wm_peaks_from_json(trailing, strlen(trailing), &p), DATA_LOSS,
               "text after the JSON value (line 11, column 1)");
  WM_CHECK_ERR(wm_peaks_from_json(twice, strlen(twice), &p), DATA_LOSS,
               "key \"measured_at\" appears twice in the top-level object");
  free(ok);
  free(trailing);
  free(twice);
  // Only regular files: a device or a folder is refused, named as a peaks
  // file (it may be an explicit --peaks, not the cache).
  WM_CHECK_ERR(wm_peaks_load("/dev/zero", &p), INVALID_ARGUMENT,
               "peaks file: \"/dev/zero\" is a character device, not a "
               "regular file");
  WM_CHECK_ERR(wm_peaks_load("/tmp", &p), INVALID_ARGUMENT,
               "peaks file: \"/tmp\" is a directory");
}

WM_TEST(corrupt_json_is_data_loss) {
  static const char *bad[] = {
      "",
      "{",
      "[]",
      "{\"format\": \"wmap.peaks/2\"}",
      "{\"format\": \"wmap.peaks/1\", \"machine\": 3}",
      "{\"format\": \"wmap.peaks/1\", \"machine\": {\"model\": \"x\", "
      "\"cores\": -1}}",
      "\x01\x02\xff",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    wm_peaks_t p;
    wm_status_t s = wm_peaks_from_json(bad[i], strlen(bad[i]), &p);
    WM_CHECK_INT_EQ(wm_status_code(s), WM_STATUS_DATA_LOSS);
    wm_status_free(s);
  }
}

WM_TEST(corrupt_cache_is_measured_again) {
  char dir[64];
  WM_CHECK(temp_dir(dir, sizeof(dir)));
  wm_machine_t m;
  wm_machine_get(&m);
  char *path = NULL;
  WM_CHECK_OK(wm_peaks_cache_path(dir, &m, &path));
  static const char junk[] = "{\"format\": \"wmap.peaks/1\", \"mach";
  wm_status_t s = wm_file_write(path, junk, sizeof(junk) - 1);
  wm_peaks_t p;
  wm_peaks_options_t o = {0};
  o.quick = true;
  o.cache_dir = dir;
  if (!s) {
    s = wm_peaks_get(&o, &p);
  }
  wm_peaks_t q;
  wm_status_t s2 = s ? NULL : wm_peaks_load(path, &q);
  free(path);
  remove_cache(dir);
  WM_CHECK_OK(s);
  WM_CHECK(!p.from_cache);
  WM_CHECK_OK(s2);  // rewritten with the new measurement
  WM_CHECK(!q.from_cache);
  WM_CHECK(pos_finite(q.fma_fp32[0]));
}

WM_TEST(quick_measurement_is_positive_and_finite) {
  wm_peaks_t p;
  wm_peaks_options_t o = {0};
  o.quick = true;
  o.no_cache = true;
  WM_CHECK_OK(wm_peaks_measure(&o, &p));
  WM_CHECK(p.threads >= 1);
  for (int i = 0; i < 2; i++) {
    WM_CHECK(pos_finite(p.fma_fp32[i]));
    WM_CHECK(pos_finite(p.fma_fp64[i]));
    WM_CHECK(pos_finite(p.triad_gbs[i]));
  }
  WM_CHECK(p.isa[0] != '\0');
  WM_CHECK_INT_EQ(p.n_backends, 0);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(fingerprint_is_stable),
      WM_CASE(cache_round_trip),
      WM_CASE(each_host_backend_has_its_own_gemm_roof),
      WM_CASE(peaks_follow_the_thread_count),
      WM_CASE(gemm_above_the_fma_peak_is_refused),
      WM_CASE(negative_or_infinite_figures_are_refused),
      WM_CASE(refused_cache_is_measured_again),
      WM_CASE(cache_expires_when_the_software_changes),
      WM_CASE(ref_is_timed_on_its_own_matmul),
      WM_CASE(peaks_json_is_read_strictly),
      WM_CASE(corrupt_json_is_data_loss),
      WM_CASE(corrupt_cache_is_measured_again),
      WM_CASE(quick_measurement_is_positive_and_finite),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
