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
expect run_without_model_is_usage_error 2 "want one MODEL file or --zoo NAME" "$wmap" run
expect run_unknown_option_is_usage_error 2 "Try 'wmap run --help'" "$wmap" run --bogus x.onnx
expect run_missing_file 1 'cannot open "'"$tmp"'/none.onnx"' "$wmap" run "$tmp/none.onnx"
expect conform_bad_suite 2 'unknown suite "nodes"' "$wmap" conform --suite nodes
expect conform_bad_regex 2 "not a valid extended regular expression" "$wmap" conform --filter '('
expect conform_missing_data 1 "does not exist" "$wmap" conform --data "$tmp/nothing"
expect run_unknown_pass_is_usage_error 2 'unknown pass "fuse" in "fold,fuse"; the passes are fold, dead, conv-bn' \
  "$wmap" run --passes fold,fuse x.onnx
expect bench_unknown_pass_is_usage_error 2 'unknown pass "x"' "$wmap" bench --passes x --zoo mlp
expect conform_unknown_pass_is_usage_error 2 'unknown pass "Fold"' "$wmap" conform --passes dead,Fold
# Dynamic dims: unbound ones are 1 with one note listing each (an
# expression dim is listed, never offered as a --dim NAME); --shape binds
# a whole input and is checked against the model and --dim.
dyn=$(dirname "$0")/dynamic.onnx
bench_quick="--blocks 1 --min-time 0.01 --min-iters 1 --no-profile"
expect bench_binds_unbound_dims_to_1 0 "dims batch=1" "$wmap" bench "$dyn" $bench_quick
notes=$(grep -c "note:" "$tmp/err")
want='note: 3 unbound dims set to 1: batch, input "x" dim 2, input "x" dim 3 (floor(height/2 - 1/2) + 1)'
if [ "$notes" -eq 1 ] && grep -qF -- "$want" "$tmp/err"; then
  echo "ok   bench_one_note_lists_every_dim"; passed=$((passed + 1))
else
  echo "FAIL bench_one_note_lists_every_dim: $notes notes in:"; head -3 "$tmp/err"
  failed=$((failed + 1))
fi
expect map_shape_binds_the_input 0 "1 nodes" "$wmap" map "$dyn" --shape x=2x3x8x4
if grep -q "note:" "$tmp/err"; then
  echo "FAIL map_shape_leaves_no_note"; failed=$((failed + 1))
else
  echo "ok   map_shape_leaves_no_note"; passed=$((passed + 1))
fi
expect shape_rank_mismatch_is_named 1 '--shape x=[2,3]: the input is float[batch,3,?' \
  "$wmap" map "$dyn" --shape x=2x3
expect shape_conflicting_dim_is_named 1 '--shape x makes dim "batch" 3, but it is bound to 2' \
  "$wmap" map "$dyn" --dim batch=2 --shape x=3x3x4x5
expect shape_unknown_input_is_named 1 '--shape image: the model has no input named "image"' \
  "$wmap" map "$dyn" --shape image=1x3
# wmap run without --inputs: generated inputs of the shapes --shape and
# --dim give, the rest 1 (one note); with --inputs they must agree.
expect run_generates_inputs_of_the_given_shape 0 "float [2,3,8,4] =" \
  "$wmap" run "$dyn" --shape x=2x3x8x4
expect run_binds_unbound_dims_to_1 0 "float [1,3,1,1] =" "$wmap" run "$dyn"
if [ "$(grep -c "note:" "$tmp/err")" -eq 1 ]; then
  echo "ok   run_notes_the_unbound_dims_once"; passed=$((passed + 1))
else
  echo "FAIL run_notes_the_unbound_dims_once"; head -3 "$tmp/err"
  failed=$((failed + 1))
fi
expect run_shape_unknown_input_is_named 1 '--shape y: the model has no input named "y"' \
  "$wmap" run "$dyn" --shape y=1x3
expect shape_bad_syntax_is_usage_error 2 "--shape x wants dims as whole numbers" \
  "$wmap" bench "$dyn" --shape x=2xx3
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
  mkdir -p "$tmp/noinputs"
  expect run_missing_input_is_named 1 'input "x" is not given' \
    "$wmap" run "$data/node/test_add/model.onnx" --inputs "$tmp/noinputs"
  expect run_generated_inputs_of_a_static_model 0 "sum: float [3,4,5]" \
    "$wmap" run "$data/node/test_add/model.onnx"
  expect run_no_in_place 0 "sum: float [3,4,5]" \
    "$wmap" run "$data/node/test_add/model.onnx" --no-in-place
  expect run_shape_disagreeing_with_the_model_is_named 1 '--shape x=[1,4,5]: dim 0 of the input is 3' \
    "$wmap" run "$data/node/test_add/model.onnx" --inputs "$data/node/test_add/test_data_set_0" --shape x=1x4x5
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

seq_case=$data/node/test_sequence_insert_at_back
if [ -d "$seq_case" ]; then
  expect run_missing_inputs_folder 1 "test data folder \"$tmp/nothing\" does not exist" \
    "$wmap" run "$seq_case/model.onnx" --inputs "$tmp/nothing"
  # A sequence input and output: printed element by element, saved as a
  # SequenceProto that reads back as the same values.
  expect run_prints_sequence_elements 0 "  [3]: int64 [3] = 10 11 12" \
    "$wmap" run "$seq_case/model.onnx" --inputs "$seq_case/test_data_set_0" --save "$tmp/seq"
  mkdir -p "$tmp/seqin"
  cp "$tmp/seq/output_0.pb" "$tmp/seqin/input_0.pb"
  cp "$seq_case/test_data_set_0/input_1.pb" "$tmp/seqin/input_1.pb"
  expect run_reads_saved_sequences 0 "output_sequence: sequence of 5 int64 tensors" \
    "$wmap" run "$seq_case/model.onnx" --inputs "$tmp/seqin"
  opt_case=$data/node/test_optional_get_element
  mkdir -p "$tmp/optin"
  cp "$seq_case/test_data_set_0/input_0.pb" "$tmp/optin/input_0.pb"
  expect run_sequence_for_optional_is_named 1 \
    'input "optional_input" is sequence of 3 int64 tensors, want optional(float[4])' \
    "$wmap" run "$opt_case/model.onnx" --inputs "$tmp/optin"
fi

# Untrusted control flow: a Loop without end and a sequence growing in one
# stop at the limits with the node and the count (make_limit_models.py);
# the commands that run models take the limits, checked as counts.
here=$(dirname "$0")
expect run_loop_stops_at_max_iterations 1 \
  'node "spin" (Loop), iteration 1000: reached the limit of 1000 iterations with the condition still true (trip count none)' \
  "$wmap" run "$here/endless_loop.onnx" --max-iterations 1000
expect run_sequence_stops_at_max_sequence_length 1 \
  'node "append" (SequenceInsert): a sequence of 101 elements is past the limit of 100' \
  "$wmap" run "$here/growing_sequence.onnx" --max-sequence-length 100
expect bench_loop_stops_at_max_iterations 1 'reached the limit of 50 iterations' \
  "$wmap" bench "$here/endless_loop.onnx" --max-iterations 50 $bench_quick
expect conform_takes_max_iterations 1 "does not exist" \
  "$wmap" conform --max-iterations 5 --max-sequence-length 5 --data "$tmp/nothing"
expect run_max_iterations_wants_a_count 2 \
  '--max-iterations wants a count from 1 to 4611686018427387904, got "0"' \
  "$wmap" run "$here/endless_loop.onnx" --max-iterations 0
expect tune_max_sequence_length_wants_a_count 2 \
  '--max-sequence-length wants a count from 1' \
  "$wmap" tune "$here/endless_loop.onnx" --max-sequence-length 1e3

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
