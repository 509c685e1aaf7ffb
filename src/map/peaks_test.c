// Tests of the machine peaks: fingerprint, cache round trip, corrupt
// cache, and a quick measurement (numbers only checked positive/finite).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wm_test.h"
#include "wmap/map.h"

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
  WM_CHECK(q.from_cache);
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
  // A host backend without a GEMM of its own shares the host's best one;
  // with no GEMM at all the FMA loop is the roof.
  q.n_backends = 3;
  snprintf(q.backends[2].name, 64, "ref");
  q.backends[2].host = true;
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops(&q, "ref"), 190, 1e-9);
  q.backends[0].gemm_fp32[1] = 0;
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops(&q, "ref"), 420.25, 1e-9);
  WM_CHECK_DBL_NEAR(wm_peaks_fp32_gflops(&q, "cpu"), 420.25, 1e-9);
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
  WM_CHECK(q.from_cache);
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
      WM_CASE(corrupt_json_is_data_loss),
      WM_CASE(corrupt_cache_is_measured_again),
      WM_CASE(quick_measurement_is_positive_and_finite),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
