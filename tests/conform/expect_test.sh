#!/usr/bin/env bash
# `wmap conform --expect` catches both surprises: a listed case that passes
# and an unlisted case that does not; a malformed line is an error.
set -u
wmap=$1
data=${WMAP_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
if [ ! -d "$data/node" ]; then
  echo "skip: ONNX test data not found at $data (package libonnx-testdata)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
check() {  # NAME WANT_RC FRAGMENT FILE
  "$wmap" conform --quiet --data "$data" --filter "$5" --expect "$4" >"$tmp/out" 2>&1
  local rc=$?
  if [ "$rc" -ne "$2" ] || ! grep -qF -- "$3" "$tmp/out"; then
    echo "FAIL $1: exit $rc (want $2) or no \"$3\" in:"; tail -3 "$tmp/out"
    failed=$((failed + 1))
  else
    echo "ok   $1"
  fi
}
printf 'node/test_abs: a reason\n' >"$tmp/pass_listed"
check "listed case that passes" 1 "UNEXPECTED PASS node/test_abs" "$tmp/pass_listed" '^test_abs$'
printf '# nothing expected to fail\n' >"$tmp/empty"
check "unlisted case that fails" 1 "UNEXPECTED fail node/test_cast_FLOAT_to_BFLOAT16" \
  "$tmp/empty" '^test_cast_FLOAT_to_BFLOAT16$'
printf 'node/test_cast_FLOAT_to_BFLOAT16: rounding\n' >"$tmp/listed"
check "listed case that fails" 0 "0 passed, 1 failed" "$tmp/listed" '^test_cast_FLOAT_to_BFLOAT16$'
# Unseeded random values cannot match stored ones: the case is "random"
# (types and shapes checked), neither a pass nor a failure; seeded ones are
# compared (and fail: numpy's generator is not wmap's).
check "unseeded random case" 0 "0 passed, 0 failed, 0 skipped, 1 random" "$tmp/empty" '^test_bernoulli$'
check "seeded random case" 1 "UNEXPECTED fail node/test_bernoulli_seed" "$tmp/empty" '^test_bernoulli_seed$'
printf 'node/test_bernoulli: a reason\n' >"$tmp/random_listed"
check "listed random case" 1 "UNEXPECTED random node/test_bernoulli" "$tmp/random_listed" '^test_bernoulli$'
check "inference Dropout is compared" 0 "1 passed, 0 failed" "$tmp/empty" '^test_dropout_default$'
printf 'node/test_abs no colon\n' >"$tmp/bad"
check "malformed line" 1 "want \"suite/name: reason\"" "$tmp/bad" '^test_abs$'
[ "$failed" -eq 0 ]
