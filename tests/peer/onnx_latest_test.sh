#!/usr/bin/env bash
# Conformance on the current onnx release: the node test cases of the onnx
# package from the package index (newer opsets than Debian's ONNX 1.12
# data), run on the ref backend.
#
#   onnx_latest_test.sh WMAP VENV_DIR DATA_DIR FLOOR_FILE
#
# VENV_DIR is the peer venv (peer_venv.sh: made when missing, reused when
# present; exit 77 with the reason when it cannot be made). The wheel does
# not ship the node data files, so gen_onnx_node_data.py writes them from
# the package's test cases into DATA_DIR (skipped when DATA_DIR/VERSION
# already names the installed onnx). Then
#   wmap conform --backend ref --data DATA_DIR --suite node --quiet --json F
# and onnx_latest_report.py prints the pass count and percentage and the
# operators of the cases that do not pass, with counts.
#
# Pass/fail: cases that do not pass are the expected state of a growing
# runtime, so they do not fail the test. What fails it:
# - fewer cases pass than `min_pass` in FLOOR_FILE: a regression (a case
#   that passed no longer does). Raise the floor as operators land (the
#   report prints the new count); lower it only when a new onnx release,
#   not wmap, removed or changed the cases (FLOOR_FILE names the onnx
#   version it was measured with, the report says when it differs);
# - wmap conform dies (a crash on data it should refuse with a status) or
#   exits other than 0 (all pass) or 1 (some cases fail);
# - the data cannot be generated from the installed package.
# The counts depend only on the onnx version and wmap: the cases are fixed
# data, and the ones checking random generators fail the same way each run.
set -u
wmap=$1
venv=$2
data=$3
floor=$4
here=$(cd "$(dirname "$0")" && pwd)

# shellcheck source=peer_venv.sh
. "$here/peer_venv.sh"

start=$SECONDS
peer_venv "$venv" # sets $py
"$py" -c 'import onnx, numpy, sys
print("python %s, onnx %s, numpy %s"
      % (sys.version.split()[0], onnx.__version__, numpy.__version__))'

if ! "$py" "$here/gen_onnx_node_data.py" "$data"; then
  echo "FAIL: cannot generate the node test data of the installed onnx" \
    "package into $data"
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
json=$tmp/conform.json
t0=$SECONDS
"$wmap" conform --backend ref --data "$data" --suite node --quiet \
  --json "$json" >"$tmp/log" 2>&1
rc=$?
echo "wmap conform ran in $((SECONDS - t0)) s (exit $rc)"
if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
  echo "FAIL: wmap conform exits $rc; its last lines:"
  tail -n 20 "$tmp/log"
  exit 1
fi
if [ ! -s "$json" ]; then
  echo "FAIL: wmap conform wrote no results to $json; its last lines:"
  tail -n 20 "$tmp/log"
  exit 1
fi
"$py" "$here/onnx_latest_report.py" "$json" "$data" "$floor"
rc=$?
echo "done in $((SECONDS - start)) s"
exit "$rc"
