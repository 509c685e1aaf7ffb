#!/usr/bin/env bash
# Runs `wmap conform` and fails when a case does not do what the
# expectations file says (a case not listed fails, or a listed one passes)
# or a node was claimed but failed. Extra arguments go to conform
# (e.g. --backend cpu). Skips (77) when the test data is not installed,
# and with --require NAME first when backend NAME does not load here (the
# reason wmap backends gives is printed).
set -u
wmap=$1
expected=$2
shift 2
if [ "${1:-}" = "--require" ]; then
  if ! "$wmap" backends 2>&1 | grep -q "^$2 [0-9]"; then
    echo "skip: backend $2 does not load here:"
    "$wmap" backends 2>&1 | grep -F "backend_$2" || echo "  (no plugin file)"
    exit 77
  fi
  shift 2
fi
data=${WMAP_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
if [ ! -d "$data/node" ]; then
  echo "skip: ONNX test data not found at $data (package libonnx-testdata)"
  exit 77
fi
"$wmap" conform --quiet --data "$data" --expect "$expected" "$@"
