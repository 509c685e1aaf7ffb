// The libFuzzer entry point shared by the fuzzer and the corpus replayer.
#ifndef WMAP_TESTS_FUZZ_FUZZ_TARGET_H_
#define WMAP_TESTS_FUZZ_FUZZ_TARGET_H_

#include <stddef.h>
#include <stdint.h>

// Runs one input through the code under test; returns 0.
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif  // WMAP_TESTS_FUZZ_FUZZ_TARGET_H_
