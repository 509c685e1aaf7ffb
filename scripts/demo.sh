#!/usr/bin/env bash
# The demo: run a model from ONNX's test data, then the conformance suite.
set -euo pipefail
build=${1:-build}
data=${WMAP_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
case_dir="$data/pytorch-converted/test_Conv2d_groups"
echo "== wmap run $case_dir/model.onnx"
"$build/wmap" run "$case_dir/model.onnx" --inputs "$case_dir/test_data_set_0"
echo
echo "== wmap conform --quiet (ONNX backend test suite on the ref backend)"
"$build/wmap" conform --quiet --expect-pass tests/conform/expected_pass.txt
