#!/usr/bin/env bash
# A backend that claims Relu and then fails it must be reported as
# claimed_but_failed (exit 1) even though the case passes on ref.
set -u
wmap=$1
plugins=$2
data=${WMAP_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
if [ ! -d "$data/node/test_relu" ]; then
  echo "skip: ONNX test data not found at $data (package libonnx-testdata)"
  exit 77
fi
out=$("$wmap" conform --backend claimsfail --backend-path "$plugins" \
  --data "$data" --filter '^test_(relu|add)$')
rc=$?
echo "$out"
fail=0
[ "$rc" -eq 1 ] || { echo "FAIL: exit $rc, want 1"; fail=1; }
grep -q '^claimed_but_failed node/test_relu \[claimsfail 1/1\]' <<<"$out" ||
  { echo "FAIL: test_relu not reported as claimed_but_failed"; fail=1; }
grep -q '^pass        node/test_add \[claimsfail 0/1\]' <<<"$out" ||
  { echo "FAIL: test_add should pass on the ref fallback"; fail=1; }
grep -q '1 claimed but failed' <<<"$out" ||
  { echo "FAIL: summary lacks the claimed-but-failed count"; fail=1; }
exit $fail
