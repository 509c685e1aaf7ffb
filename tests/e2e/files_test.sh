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

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
