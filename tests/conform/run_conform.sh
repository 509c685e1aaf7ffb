#!/usr/bin/env bash
# Runs `wmap conform` and fails when a case does not do what the
# expectations file says (a case not listed fails, or a listed one passes)
# or a node was claimed but failed. Extra arguments go to conform
# (e.g. --backend cpu). Skips (77) when the test data is not installed.
set -u
wmap=$1
expected=$2
shift 2
data=${WMAP_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
if [ ! -d "$data/node" ]; then
  echo "skip: ONNX test data not found at $data (package libonnx-testdata)"
  exit 77
fi
"$wmap" conform --quiet --data "$data" --expect "$expected" "$@"
