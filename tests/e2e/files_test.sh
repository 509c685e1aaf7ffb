#!/bin/bash
# End-to-end tests of files that are not what a command wants (issue 16):
# every file read whole is a regular file under a size cap, so a folder, a
# FIFO or /dev/zero given as a model, an input, a baseline, a peaks or an
# expectations file is refused at once, naming the path and what it is;
# and the messages about wrong input files and options say what is wrong.
# Usage: files_test.sh WMAP_BINARY SOURCE_DIR
wmap=$1
src=$2
here=$(dirname "$0")
. "$here/expect.sh"
peaks="$here/map_peaks.json"
model="$here/dynamic.onnx"
mkfifo "$tmp/fifo"
mkdir "$tmp/folder"

# A model that is not a regular file. `timeout`: a FIFO must not hang.
for cmd in map run bench; do
  expect "$cmd: a folder as the model" 1 \
    "\"$tmp/folder\" is a directory, not a regular file" \
    timeout 20 "$wmap" "$cmd" "$tmp/folder"
  expect "$cmd: a FIFO as the model" 1 \
    "\"$tmp/fifo\" is a FIFO (named pipe), not a regular file" \
    timeout 20 "$wmap" "$cmd" "$tmp/fifo"
done
expect "map: /dev/zero as the model" 1 \
  "\"/dev/zero\" is a character device, not a regular file" \
  timeout 20 "$wmap" map /dev/zero

# A peaks file that is not a regular file.
expect "map: a FIFO as --peaks" 1 \
  "peaks file: \"$tmp/fifo\" is a FIFO (named pipe), not a regular file" \
  timeout 20 "$wmap" map "$model" --peaks "$tmp/fifo"

# Test data folders (--inputs): what is wrong with each file, named. A
# TensorProto float[1] named x (or z) = 1.0, written byte by byte.
tensor() { printf '\x08\x01\x10\x01\x42\x01%s\x4a\x04\x00\x00\x80\x3f' "$1"; }
mkdir "$tmp/extra" "$tmp/empty" "$tmp/dirin" "$tmp/twice"
tensor x >"$tmp/extra/input_0.pb"
tensor z >"$tmp/extra/input_1.pb"
expect "an extra input file is named with what it holds" 1 \
  "$tmp/extra/input_1.pb holds \"z\", which is not an input of the model" \
  "$wmap" run "$model" --inputs "$tmp/extra"
if grep -q "given twice" "$tmp/err"; then
  echo "FAIL an extra input file is not \"given twice\""; failed=$((failed + 1))
fi
tensor x >"$tmp/twice/input_0.pb"
tensor x >"$tmp/twice/input_1.pb"
expect "two files for one input" 1 \
  "$tmp/twice/input_0.pb and input_1.pb both hold input \"x\"" \
  "$wmap" run "$model" --inputs "$tmp/twice"
: >"$tmp/empty/input_0.pb"
expect "an empty input file is empty, not a sequence" 1 \
  "loading \"$tmp/empty/input_0.pb\": empty (0 bytes), want a TensorProto" \
  "$wmap" run "$model" --inputs "$tmp/empty"
mkdir "$tmp/dirin/input_0.pb"
expect "a folder as an input file is named, not \"not given\"" 1 \
  "\"$tmp/dirin/input_0.pb\" is a directory, not a regular file" \
  "$wmap" run "$model" --inputs "$tmp/dirin"
mkfifo "$tmp/dirin/input_1.pb"
rmdir "$tmp/dirin/input_0.pb"
mkfifo "$tmp/dirin/input_0.pb"
expect "a FIFO as an input file is refused at once" 1 \
  "\"$tmp/dirin/input_0.pb\" is a FIFO (named pipe), not a regular file" \
  timeout 20 "$wmap" run "$model" --inputs "$tmp/dirin"
expect "--inputs FILE is a file, not a missing folder" 1 \
  "test data folder \"$model\" is a file, not a folder" \
  "$wmap" run "$model" --inputs "$model"
expect "--inputs missing says why" 1 \
  "test data folder \"$tmp/none\" does not exist" \
  "$wmap" bench "$model" --inputs "$tmp/none"

# bench: an explicit --peaks that cannot be read is an error before any
# measurement, not a warning; it is called a peaks file, not the cache.
expect "bench: --peaks missing is an error" 1 \
  "peaks file: cannot open \"$tmp/none.json\"" \
  "$wmap" bench "$model" --peaks "$tmp/none.json" --blocks 1
echo '{"format": "wmap.peaks/1"} x' >"$tmp/peaks_trailing.json"
expect "bench: --peaks with text after the JSON" 1 \
  "peaks file \"$tmp/peaks_trailing.json\": text after the JSON value (line 1, column 28)" \
  "$wmap" bench "$model" --peaks "$tmp/peaks_trailing.json" --no-profile

# conform: a folder without cases is an error naming it, never a green run
# of nothing; so is a --filter that keeps no case; the --expect file is a
# regular file.
expect "conform: a folder without cases" 1 \
  "test data folder \"/etc\" holds no test cases (none of node/test_*, " \
  "$wmap" conform --data /etc
mkdir -p "$tmp/data/simple"
expect "conform: a suite folder without cases" 1 \
  "test data folder \"$tmp/data\" holds no test cases (none of simple/test_*)" \
  "$wmap" conform --data "$tmp/data" --suite simple
expect "conform: --expect FIFO" 1 \
  "expectations: \"$tmp/fifo\" is a FIFO (named pipe), not a regular file" \
  timeout 20 "$wmap" conform --data /etc --expect "$tmp/fifo"
data=${WMAP_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
if [ -d "$data/node" ]; then
  expect "conform: a --filter that matches no case" 1 \
    "--filter \"^no_such_case\$\" matches none of the" \
    "$wmap" conform --data "$data" --filter '^no_such_case$'
fi

# Option errors: one message naming the option, exit 2.
expect "a missing argument is one message" 2 "wmap run: --inputs requires an argument" \
  "$wmap" run --inputs
if grep -q "unknown option\|requires an argument'" "$tmp/err"; then
  echo "FAIL a missing argument is one message: $(cat "$tmp/err")"; failed=$((failed + 1))
fi
expect "an unknown option is named" 2 "wmap map: unknown option \"--bogus\"" \
  "$wmap" map --bogus "$model"
expect "an unknown short option is named" 2 "wmap bench: unknown option \"-x\"" \
  "$wmap" bench -x "$model"
expect "-o without its file" 2 "wmap compare: -o requires an argument" \
  "$wmap" compare a.json b.json -o
expect "a value given to a flag" 2 "wmap probe: --quick takes no value" \
  "$wmap" probe --quick=1
expect "--backends , is a usage error" 2 \
  "wmap run: --backends \",\" has an empty name" "$wmap" run --backends , "$model"
expect "--backends with empty names is a usage error" 2 \
  "wmap map: --backends \",,,ref,,\" has an empty name" \
  "$wmap" map --backends ,,,ref,, "$model" --peaks "$peaks"
expect "bench --backends cpu,,ref is a usage error" 2 \
  "wmap bench: --backends \"cpu,,ref\" has an empty name" \
  "$wmap" bench --backends cpu,,ref "$model"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
