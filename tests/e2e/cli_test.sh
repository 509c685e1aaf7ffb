#!/usr/bin/env bash
# End-to-end checks of the CLI: usage errors exit 2, bad models exit 1 with
# one line naming the problem, a model from the test data runs.
set -u
wmap=$1
src=$2
data=${WMAP_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
. "$(dirname "$0")/expect.sh"

expect no_command_is_usage_error 2 "usage: wmap" "$wmap"
expect unknown_command_is_usage_error 2 'unknown command "frobnicate"' "$wmap" frobnicate
expect help_lists_commands 0 "conform" "$wmap" --help
expect run_help 0 "usage: wmap run" "$wmap" run --help
expect conform_help 0 "usage: wmap conform" "$wmap" conform --help
expect run_without_model_is_usage_error 2 "want exactly one MODEL" "$wmap" run
expect run_unknown_option_is_usage_error 2 "Try 'wmap run --help'" "$wmap" run --bogus x.onnx
expect run_missing_file 1 'cannot open "'"$tmp"'/none.onnx"' "$wmap" run "$tmp/none.onnx"
expect conform_bad_suite 2 'unknown suite "nodes"' "$wmap" conform --suite nodes
expect conform_bad_regex 2 "not a valid extended regular expression" "$wmap" conform --filter '('
expect conform_missing_data 1 "does not exist" "$wmap" conform --data "$tmp/nothing"
expect run_unknown_backend 1 'no backend named "tpu"' "$wmap" run --backend tpu "$src/tests/malformed/truncated.onnx"

# Every malformed model: exit 1 and exactly one line naming the problem.
if [ -f "$src/tests/malformed/expected.txt" ]; then
  while IFS=$'\t' read -r file fragment; do
    case "$file" in ''|'#'*) continue ;; esac
    expect "malformed_$file" 1 "$fragment" "$wmap" run "$src/tests/malformed/$file"
    lines=$(wc -l <"$tmp/err")
    if [ "$lines" -ne 1 ]; then
      echo "FAIL malformed_${file}_one_line: $lines lines on stderr"
      failed=$((failed + 1))
    fi
  done <"$src/tests/malformed/expected.txt"
fi

if [ -d "$data/node/test_add" ]; then
  expect run_test_model_prints_output 0 "sum: float [3,4,5]" \
    "$wmap" run "$data/node/test_add/model.onnx" --inputs "$data/node/test_add/test_data_set_0"
  expect run_missing_input_is_named 1 'input "x" is not given' \
    "$wmap" run "$data/node/test_add/model.onnx"
  expect run_wrong_input_shape_is_named 1 'input "y" has shape [5], want float[3,4,5]' \
    "$wmap" run "$data/node/test_add/model.onnx" --inputs "$data/node/test_add_bcast/test_data_set_0"
  expect conform_filter_runs_one_case 0 "1 passed, 0 failed, 0 skipped" \
    "$wmap" conform --filter '^test_add$'
  "$wmap" run "$data/node/test_add/model.onnx" --inputs "$data/node/test_add/test_data_set_0" --save "$tmp/saved" >/dev/null
  expect run_save_round_trips 0 "sum: float [3,4,5]" \
    "$wmap" run "$data/node/test_add/model.onnx" --inputs "$data/node/test_add/test_data_set_0" --values 2
  [ -f "$tmp/saved/output_0.pb" ] && { echo "ok   run_save_writes_pb"; passed=$((passed + 1)); } ||
    { echo "FAIL run_save_writes_pb"; failed=$((failed + 1)); }
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
