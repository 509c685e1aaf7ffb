// SHA-256 against the FIPS 180-4 examples and lengths around the padding.
#include <string.h>

#include "../../tests/testing/wm_test.h"
#include "wmap/base.h"

WM_TEST(fips_examples) {
  char hex[65];
  wm_sha256_hex("", 0, hex);
  WM_CHECK_STR_EQ(
      hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  wm_sha256_hex("abc", 3, hex);
  WM_CHECK_STR_EQ(
      hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  wm_sha256_hex(two, strlen(two), hex);
  WM_CHECK_STR_EQ(
      hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

WM_TEST(million_a) {
  static char a[1000000];
  memset(a, 'a', sizeof(a));
  char hex[65];
  wm_sha256_hex(a, sizeof(a), hex);
  WM_CHECK_STR_EQ(
      hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Pieces of every size around the block give the digest of the whole.
WM_TEST(pieces_agree_with_whole) {
  static uint8_t data[1000];
  for (size_t i = 0; i < sizeof(data); i++) {
    data[i] = (uint8_t)(i * 131 + 7);
  }
  char whole[65], got[65];
  wm_sha256_hex(data, sizeof(data), whole);
  static const size_t steps[] = {1, 3, 55, 63, 64, 65, 127, 999};
  for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
    wm_sha256_t c;
    wm_sha256_init(&c);
    for (size_t at = 0; at < sizeof(data); at += steps[k]) {
      size_t n = sizeof(data) - at < steps[k] ? sizeof(data) - at : steps[k];
      wm_sha256_update(&c, data + at, n);
    }
    wm_sha256_final(&c, got);
    WM_CHECK_STR_EQ(got, whole);
  }
  wm_sha256_t c;
  wm_sha256_init(&c);
  wm_sha256_update(&c, "ab", 2);
  wm_sha256_update(&c, "", 0);
  wm_sha256_update(&c, "c", 1);
  wm_sha256_final(&c, got);
  WM_CHECK_STR_EQ(
      got, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(fips_examples),
      WM_CASE(million_a),
      WM_CASE(pieces_agree_with_whole),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
