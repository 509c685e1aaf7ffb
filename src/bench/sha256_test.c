// SHA-256 against the FIPS 180-4 examples and lengths around the padding.
#include <string.h>

#include "../../tests/testing/wm_test.h"
#include "wmap/bench.h"

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

int main(void) {
  static const wm_test_case_t cases[] = {
      WM_CASE(fips_examples),
      WM_CASE(million_a),
      {NULL, NULL},
  };
  return wm_test_main(cases);
}
