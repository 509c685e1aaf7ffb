#!/usr/bin/env bash
# The demo: what backends were found, a model from ONNX's test data placed
# on them, and the conformance suite with the cpu backend first.
set -euo pipefail
build=${1:-build}
data=${WMAP_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
echo "== wmap backends"
"$build/wmap" backends
echo
case_dir="$data/pytorch-converted/test_Conv2d_groups"
echo "== wmap run $case_dir/model.onnx --placement"
"$build/wmap" run "$case_dir/model.onnx" --inputs "$case_dir/test_data_set_0" \
  --placement
echo
echo "== wmap zoo list"
"$build/wmap" zoo list
echo
backend=ref
if "$build/wmap" backends --format json | grep -q '"name": "cpu"'; then
  backend=cpu
fi
echo "== wmap conform --backend $backend --quiet (ONNX backend test suite)"
"$build/wmap" conform --backend "$backend" --quiet \
  --expect-pass tests/conform/expected_pass.txt
