// Element types: names and sizes, the minifloat codecs (every code decodes
// and encodes back to itself, rounding, saturation, special values) and
// element access to the 4- and 2-bit integers.
#include <math.h>

#include "wm_test.h"
#include "wmap/graph.h"

static const wm_dtype_t minifloats[] = {
    WM_DTYPE_FLOAT8E4M3FN,   WM_DTYPE_FLOAT8E4M3FNUZ, WM_DTYPE_FLOAT8E5M2,
    WM_DTYPE_FLOAT8E5M2FNUZ, WM_DTYPE_FLOAT4E2M1,     WM_DTYPE_FLOAT8E8M0,
};

// Encodes |v| as |dtype| with round-up (the default) and |saturate|.
static int enc(wm_dtype_t dtype, double v, bool saturate) {
  return wm_f64_to_minifloat(dtype, v, saturate, WM_ROUND_UP);
}

WM_TEST(new_dtypes_have_onnx_names_sizes_and_kinds) {
  WM_CHECK_STR_EQ(wm_dtype_name(WM_DTYPE_FLOAT8E4M3FN), "float8e4m3fn");
  WM_CHECK_STR_EQ(wm_dtype_name(WM_DTYPE_FLOAT8E5M2FNUZ), "float8e5m2fnuz");
  WM_CHECK_STR_EQ(wm_dtype_name(WM_DTYPE_INT2), "int2");
  WM_CHECK_STR_EQ(wm_dtype_name((wm_dtype_t)WM_DTYPE_COUNT), "unknown");
  WM_CHECK(wm_dtype_is_valid(WM_DTYPE_INT2));
  WM_CHECK(!wm_dtype_is_valid(WM_DTYPE_COUNT));
  for (int d = WM_DTYPE_FLOAT8E4M3FN; d < WM_DTYPE_COUNT; d++) {
    WM_CHECK_INT_EQ(wm_dtype_size((wm_dtype_t)d), 1);
  }
  WM_CHECK_INT_EQ(wm_dtype_bits(WM_DTYPE_INT4), 4);
  WM_CHECK_INT_EQ(wm_dtype_bits(WM_DTYPE_FLOAT4E2M1), 4);
  WM_CHECK_INT_EQ(wm_dtype_bits(WM_DTYPE_UINT2), 2);
  WM_CHECK_INT_EQ(wm_dtype_bits(WM_DTYPE_FLOAT8E8M0), 8);
  WM_CHECK_INT_EQ(wm_dtype_bits(WM_DTYPE_DOUBLE), 64);
  WM_CHECK_INT_EQ(wm_dtype_bits(WM_DTYPE_STRING), 0);
  WM_CHECK(wm_dtype_is_float(WM_DTYPE_FLOAT8E8M0));
  WM_CHECK(wm_dtype_is_minifloat(WM_DTYPE_FLOAT4E2M1));
  WM_CHECK(!wm_dtype_is_minifloat(WM_DTYPE_FLOAT16));
  WM_CHECK(wm_dtype_is_int(WM_DTYPE_INT4) && wm_dtype_is_int(WM_DTYPE_UINT2));
  WM_CHECK(wm_dtype_is_unsigned(WM_DTYPE_UINT4));
  WM_CHECK(!wm_dtype_is_unsigned(WM_DTYPE_INT2));
  WM_CHECK(!wm_dtype_is_int(WM_DTYPE_FLOAT4E2M1));
}

WM_TEST(every_minifloat_code_decodes_and_encodes_back_to_itself) {
  static const wm_round_mode_t rounds[] = {WM_ROUND_UP, WM_ROUND_DOWN,
                                           WM_ROUND_NEAREST};
  for (size_t t = 0; t < sizeof(minifloats) / sizeof(minifloats[0]); t++) {
    wm_dtype_t d = minifloats[t];
    unsigned codes = d == WM_DTYPE_FLOAT4E2M1 ? 16 : 256;
    for (unsigned c = 0; c < codes; c++) {
      double v = wm_minifloat_to_f64(d, (uint8_t)c);
      if (isnan(v)) {
        continue;
      }
      for (size_t r = 0; r < 3; r++) {
        // Infinities saturate to the largest finite value when asked.
        for (int sat = 0; sat < (isinf(v) ? 1 : 2); sat++) {
          int got = wm_f64_to_minifloat(d, v, sat, rounds[r]);
          if (got != (int)c) {
            wm_test_fail(__FILE__, __LINE__,
                         "%s code 0x%02x = %g encodes to 0x%02x (saturate %d, "
                         "round %d)",
                         wm_dtype_name(d), c, v, got, sat, (int)rounds[r]);
            return;
          }
        }
      }
    }
  }
}

WM_TEST(minifloat_special_codes_decode_to_nan_inf_and_extremes) {
  WM_CHECK(isnan(wm_minifloat_to_f64(WM_DTYPE_FLOAT8E4M3FN, 0x7f)));
  WM_CHECK(isnan(wm_minifloat_to_f64(WM_DTYPE_FLOAT8E4M3FN, 0xff)));
  WM_CHECK_DBL_NEAR(wm_minifloat_to_f64(WM_DTYPE_FLOAT8E4M3FN, 0x7e), 448, 0);
  WM_CHECK_DBL_NEAR(wm_minifloat_to_f64(WM_DTYPE_FLOAT8E4M3FN, 0x01),
                    ldexp(1, -9), 0);
  WM_CHECK(signbit(wm_minifloat_to_f64(WM_DTYPE_FLOAT8E4M3FN, 0x80)));
  WM_CHECK(isnan(wm_minifloat_to_f64(WM_DTYPE_FLOAT8E4M3FNUZ, 0x80)));
  WM_CHECK_DBL_NEAR(wm_minifloat_to_f64(WM_DTYPE_FLOAT8E4M3FNUZ, 0x7f), 240, 0);
  WM_CHECK(isinf(wm_minifloat_to_f64(WM_DTYPE_FLOAT8E5M2, 0xfc)));
  WM_CHECK(isnan(wm_minifloat_to_f64(WM_DTYPE_FLOAT8E5M2, 0x7d)));
  WM_CHECK_DBL_NEAR(wm_minifloat_to_f64(WM_DTYPE_FLOAT8E5M2, 0x7b), 57344, 0);
  WM_CHECK_DBL_NEAR(wm_minifloat_to_f64(WM_DTYPE_FLOAT8E5M2FNUZ, 0x7f), 57344,
                    0);
  WM_CHECK_DBL_NEAR(wm_minifloat_to_f64(WM_DTYPE_FLOAT8E5M2FNUZ, 0x01),
                    ldexp(1, -17), 0);
  WM_CHECK_DBL_NEAR(wm_minifloat_to_f64(WM_DTYPE_FLOAT4E2M1, 0x7), 6, 0);
  WM_CHECK_DBL_NEAR(wm_minifloat_to_f64(WM_DTYPE_FLOAT4E2M1, 0xf1), 0.5, 0);
  WM_CHECK_DBL_NEAR(wm_minifloat_to_f64(WM_DTYPE_FLOAT8E8M0, 127), 1, 0);
  WM_CHECK_DBL_NEAR(wm_minifloat_to_f64(WM_DTYPE_FLOAT8E8M0, 0), ldexp(1, -127),
                    0);
  WM_CHECK(isnan(wm_minifloat_to_f64(WM_DTYPE_FLOAT8E8M0, 0xff)));
  WM_CHECK_DBL_NEAR(wm_minifloat_to_f64(WM_DTYPE_FLOAT, 0x11), 0, 0);
}

WM_TEST(float8_rounds_to_nearest_even_and_saturates_as_asked) {
  wm_dtype_t fn = WM_DTYPE_FLOAT8E4M3FN, fnuz = WM_DTYPE_FLOAT8E4M3FNUZ;
  wm_dtype_t e5 = WM_DTYPE_FLOAT8E5M2, e5uz = WM_DTYPE_FLOAT8E5M2FNUZ;
  // 464 is halfway between 448 (mantissa 110) and 480: ties to even.
  WM_CHECK_INT_EQ(enc(fn, 464, false), 0x7e);
  WM_CHECK_INT_EQ(enc(fn, 465, false), 0x7f);
  WM_CHECK_INT_EQ(enc(fn, 465, true), 0x7e);
  WM_CHECK_INT_EQ(enc(fn, -1e6, true), 0xfe);
  WM_CHECK_INT_EQ(enc(fn, -1e6, false), 0xff);
  WM_CHECK_INT_EQ(enc(fn, INFINITY, true), 0x7e);
  WM_CHECK_INT_EQ(enc(fn, -INFINITY, false), 0xff);
  WM_CHECK_INT_EQ(enc(fn, NAN, true), 0x7f);
  // Subnormals: 2^-10 is half the smallest step: ties to 0.
  WM_CHECK_INT_EQ(enc(fn, ldexp(1, -10), true), 0x00);
  WM_CHECK_INT_EQ(enc(fn, ldexp(3, -11), true), 0x01);
  WM_CHECK_INT_EQ(enc(fn, -1e-7, true), 0x80);
  WM_CHECK_INT_EQ(enc(fn, 0.47892547, true), 0x2f);  // 0.46875
  // FNUZ: no -0, one NaN, no inf.
  WM_CHECK_INT_EQ(enc(fnuz, -1e-7, false), 0x00);
  WM_CHECK_INT_EQ(enc(fnuz, -0.0, true), 0x00);
  WM_CHECK_INT_EQ(enc(fnuz, NAN, true), 0x80);
  WM_CHECK_INT_EQ(enc(fnuz, 1e6, false), 0x80);
  WM_CHECK_INT_EQ(enc(fnuz, -1e6, true), 0xff);
  WM_CHECK_INT_EQ(enc(e5uz, INFINITY, false), 0x80);
  WM_CHECK_INT_EQ(enc(e5uz, INFINITY, true), 0x7f);
  // E5M2 keeps IEEE infinities: 61440 ties up to the next (infinite) step.
  WM_CHECK_INT_EQ(enc(e5, 61439, false), 0x7b);
  WM_CHECK_INT_EQ(enc(e5, 61440, false), 0x7c);
  WM_CHECK_INT_EQ(enc(e5, 61440, true), 0x7b);
  WM_CHECK_INT_EQ(enc(e5, -INFINITY, false), 0xfc);
  WM_CHECK_INT_EQ(enc(e5, NAN, false), 0x7e);
  WM_CHECK_INT_EQ(enc(e5, 1e300, false), 0x7c);
  WM_CHECK_INT_EQ(enc(e5, 1e-300, false), 0x00);
}

WM_TEST(float4_saturates_always_and_takes_nan_to_zero) {
  wm_dtype_t f4 = WM_DTYPE_FLOAT4E2M1;
  WM_CHECK_INT_EQ(enc(f4, 0.25, false), 0x0);  // tie between 0 and 0.5
  WM_CHECK_INT_EQ(enc(f4, 0.75, false), 0x2);  // tie between 0.5 and 1
  WM_CHECK_INT_EQ(enc(f4, 5, false), 0x6);     // tie between 4 and 6
  WM_CHECK_INT_EQ(enc(f4, -3.5, false), 0xe);  // tie between -3 and -4
  WM_CHECK_INT_EQ(enc(f4, 1e6, false), 0x7);
  WM_CHECK_INT_EQ(enc(f4, -INFINITY, false), 0xf);
  WM_CHECK_INT_EQ(enc(f4, NAN, true), 0x0);
  WM_CHECK_INT_EQ(enc(f4, -0.0, true), 0x8);
}

WM_TEST(e8m0_follows_round_mode_and_saturate) {
  wm_dtype_t e8 = WM_DTYPE_FLOAT8E8M0;
  WM_CHECK_INT_EQ(wm_f64_to_minifloat(e8, 0.124, true, WM_ROUND_UP), 124);
  WM_CHECK_INT_EQ(wm_f64_to_minifloat(e8, 1.1, true, WM_ROUND_UP), 128);
  WM_CHECK_INT_EQ(wm_f64_to_minifloat(e8, 1.9, true, WM_ROUND_DOWN), 127);
  WM_CHECK_INT_EQ(wm_f64_to_minifloat(e8, 1.4, true, WM_ROUND_NEAREST), 127);
  WM_CHECK_INT_EQ(wm_f64_to_minifloat(e8, 1.5, true, WM_ROUND_NEAREST), 128);
  WM_CHECK_INT_EQ(wm_f64_to_minifloat(e8, 0.0, true, WM_ROUND_UP), 0);
  WM_CHECK_INT_EQ(wm_f64_to_minifloat(e8, ldexp(1, -140), true, WM_ROUND_UP),
                  0);
  WM_CHECK_INT_EQ(wm_f64_to_minifloat(e8, ldexp(3, -128), true, WM_ROUND_UP),
                  1);
  double big = ldexp(1.5, 127);
  WM_CHECK_INT_EQ(wm_f64_to_minifloat(e8, big, true, WM_ROUND_UP), 0xfe);
  WM_CHECK_INT_EQ(wm_f64_to_minifloat(e8, big, false, WM_ROUND_UP), 0xff);
  WM_CHECK_INT_EQ(wm_f64_to_minifloat(e8, INFINITY, true, WM_ROUND_UP), 0xfe);
  WM_CHECK_INT_EQ(wm_f64_to_minifloat(e8, INFINITY, false, WM_ROUND_UP), 0xff);
  WM_CHECK_INT_EQ(wm_f64_to_minifloat(e8, NAN, true, WM_ROUND_UP), 0xff);
  WM_CHECK_INT_EQ(wm_f64_to_minifloat(WM_DTYPE_INT8, 1.0, true, WM_ROUND_UP),
                  0);
}

WM_TEST(narrow_ints_keep_low_bits_from_ints_and_round_from_doubles) {
  uint8_t b[4] = {0};
  wm_store_i64(WM_DTYPE_INT4, b, 0, 9);  // 0b1001: -7
  WM_CHECK_INT_EQ(wm_load_i64(WM_DTYPE_INT4, b, 0), -7);
  WM_CHECK_INT_EQ(b[0], 0xf9);  // held sign-extended
  wm_store_i64(WM_DTYPE_UINT4, b, 1, -1);
  WM_CHECK_INT_EQ(wm_load_i64(WM_DTYPE_UINT4, b, 1), 15);
  wm_store_i64(WM_DTYPE_INT2, b, 2, 2);
  WM_CHECK_INT_EQ(wm_load_i64(WM_DTYPE_INT2, b, 2), -2);
  wm_store_i64(WM_DTYPE_UINT2, b, 3, 5);
  WM_CHECK_INT_EQ(wm_load_i64(WM_DTYPE_UINT2, b, 3), 1);
  WM_CHECK_DBL_NEAR(wm_load_f64(WM_DTYPE_INT4, b, 0), -7, 0);
  // Loads read only the low bits of a byte.
  b[0] = 0x3e;
  WM_CHECK_INT_EQ(wm_load_i64(WM_DTYPE_INT4, b, 0), -2);
  WM_CHECK_INT_EQ(wm_load_i64(WM_DTYPE_UINT2, b, 0), 2);
  static const struct {
    wm_dtype_t dtype;
    double v;
    int64_t want;
  } cases[] = {
      {WM_DTYPE_UINT4, 2.5, 2},  {WM_DTYPE_UINT4, 3.5, 4},
      {WM_DTYPE_INT4, -7.5, -8}, {WM_DTYPE_INT4, 7.5, 0},
      {WM_DTYPE_INT4, 8, 0},     {WM_DTYPE_INT4, -9, 0},
      {WM_DTYPE_UINT4, -1, 0},   {WM_DTYPE_UINT4, 15, 15},
      {WM_DTYPE_INT2, -2, -2},   {WM_DTYPE_INT2, 2, 0},
      {WM_DTYPE_UINT2, 3, 3},    {WM_DTYPE_UINT2, NAN, 0},
      {WM_DTYPE_INT4, 1e300, 0}, {WM_DTYPE_INT4, -INFINITY, 0},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    wm_store_f64(cases[c].dtype, b, 0, cases[c].v);
    if (wm_load_i64(cases[c].dtype, b, 0) != cases[c].want) {
      wm_test_fail(__FILE__, __LINE__, "%s from %g is %lld, want %lld",
                   wm_dtype_name(cases[c].dtype), cases[c].v,
                   (long long)wm_load_i64(cases[c].dtype, b, 0),
                   (long long)cases[c].want);
      return;
    }
  }
}

WM_TEST(minifloat_element_access_saturates) {
  uint8_t b[2] = {0};
  wm_store_f64(WM_DTYPE_FLOAT8E4M3FN, b, 0, 1e6);
  WM_CHECK_INT_EQ(b[0], 0x7e);
  WM_CHECK_DBL_NEAR(wm_load_f64(WM_DTYPE_FLOAT8E4M3FN, b, 0), 448, 0);
  wm_store_i64(WM_DTYPE_FLOAT8E5M2, b, 1, -3);
  WM_CHECK_INT_EQ(wm_load_i64(WM_DTYPE_FLOAT8E5M2, b, 1), -3);
  wm_store_f64(WM_DTYPE_FLOAT8E8M0, b, 0, 3.0);  // rounds up
  WM_CHECK_DBL_NEAR(wm_load_f64(WM_DTYPE_FLOAT8E8M0, b, 0), 4, 0);
  b[0] = 0x7f;  // NaN converts to 0 as an integer
  WM_CHECK_INT_EQ(wm_load_i64(WM_DTYPE_FLOAT8E4M3FN, b, 0), 0);
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(new_dtypes_have_onnx_names_sizes_and_kinds),
      WM_CASE(every_minifloat_code_decodes_and_encodes_back_to_itself),
      WM_CASE(minifloat_special_codes_decode_to_nan_inf_and_extremes),
      WM_CASE(float8_rounds_to_nearest_even_and_saturates_as_asked),
      WM_CASE(float4_saturates_always_and_takes_nan_to_zero),
      WM_CASE(e8m0_follows_round_mode_and_saturate),
      WM_CASE(narrow_ints_keep_low_bits_from_ints_and_round_from_doubles),
      WM_CASE(minifloat_element_access_saturates),
      {NULL, NULL}};
  return wm_test_main(cases);
}
