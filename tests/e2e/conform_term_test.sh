#!/usr/bin/env bash
# `wmap conform` on a terminal and off it: with COLUMNS, a failing run's
# lines wrap to that width with nothing lost; a COLUMNS that is not a width
# is ignored with a warning; under a pseudo-terminal (`script` from
# util-linux) a progress line is drawn on stderr and never left on the
# screen; off a terminal there is no progress and no carriage return.
# Usage: conform_term_test.sh WMAP_BINARY. Exits 77 without the ONNX test
# data (package libonnx-testdata) or without `script`.
set -u
wmap=$1
data=${WMAP_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
if [ ! -d "$data/node" ]; then
  echo "skip: ONNX test data not found at $data (package libonnx-testdata)"
  exit 77
fi
if ! command -v script >/dev/null 2>&1; then
  echo "skip: no 'script' (util-linux) to run wmap under a pseudo-terminal"
  exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "skip: python3 is needed to replay the terminal output"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
. "$(dirname "$0")/common.sh"
unset COLUMNS WMAP_BACKEND_PATH

# A pass, a random case and a failure whose line is ~140 columns long.
filter='^test_abs$|^test_bernoulli$|^test_cast_FLOAT_to_BFLOAT16$'
conform=("$wmap" conform --data "$data" --filter "$filter")

# ok NAME: counts NAME as passed.
ok() {
  echo "ok   $1"
  passed=$((passed + 1))
}

# longest FILE: the longest line's length in characters.
longest() {
  LC_ALL=C.UTF-8 awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$1"
}

# Off a terminal, without COLUMNS: nothing wrapped, no progress.
if check plain_run 1 "${conform[@]}"; then
  cp "$tmp/out" "$tmp/plain.out"
  cp "$tmp/err" "$tmp/plain.err"
  has plain_run_reports_the_failure "$tmp/plain.out" \
    "fail        node/test_cast_FLOAT_to_BFLOAT16: test_data_set_0: output" \
    "1 passed, 1 failed, 0 skipped, 1 random"
  if [ "$(longest "$tmp/plain.out")" -gt 100 ]; then
    ok plain_run_keeps_long_lines_whole
  else
    fail "plain_run_keeps_long_lines_whole: no line over 100 columns" \
      "$tmp/plain.out"
  fi
  if grep -q 'conform: ' "$tmp/plain.err" ||
    grep -q $'\r' "$tmp/plain.out" "$tmp/plain.err"; then
    fail "plain_run_draws_no_progress" "$tmp/plain.err"
  else
    ok plain_run_draws_no_progress
  fi
fi

# COLUMNS=60 off a terminal: every line fits, continuation lines are
# indented, and without the spaces and line breaks the text is the same.
if check columns_60 1 env COLUMNS=60 "${conform[@]}"; then
  if [ "$(longest "$tmp/out")" -le 60 ]; then
    ok columns_60_lines_fit
  else
    fail "columns_60_lines_fit: a line is $(longest "$tmp/out") long" \
      "$tmp/out"
  fi
  has columns_60_indents_continuations "$tmp/out" \
    "fail        node/test_cast_FLOAT_to_BFLOAT16:" \
    "            test_data_set_0: output"
  if [ "$(tr -d ' \n' <"$tmp/out")" = "$(tr -d ' \n' <"$tmp/plain.out")" ]; then
    ok columns_60_loses_nothing
  else
    fail "columns_60_loses_nothing" "$tmp/out"
  fi
  if [ -s "$tmp/err" ]; then
    fail "columns_60_draws_no_progress" "$tmp/err"
  else
    ok columns_60_draws_no_progress
  fi
fi

# A COLUMNS that is not a width: a warning, and lines as without it.
if check columns_bad 1 env COLUMNS=wide "${conform[@]}"; then
  has columns_bad_is_ignored_with_a_warning "$tmp/err" \
    'ignoring COLUMNS="wide": not a number of columns'
  if cmp -s "$tmp/out" "$tmp/plain.out"; then
    ok columns_bad_wraps_nothing
  else
    fail "columns_bad_wraps_nothing" "$tmp/out"
  fi
fi

# Under a pseudo-terminal with COLUMNS=50: the progress line is drawn on
# stderr, and once the terminal has applied every carriage return the
# screen holds exactly what stdout holds off a terminal at 50 columns.
env COLUMNS=50 "${conform[@]}" >"$tmp/want50" 2>/dev/null
printf -v cmd '%q ' env COLUMNS=50 "${conform[@]}"
script -qfec "$cmd" /dev/null </dev/null >"$tmp/pty" 2>&1
rc=$?
if [ "$rc" -ne 1 ]; then
  fail "pty_run: exit $rc, want 1" "$tmp/pty"
elif python3 - "$tmp/pty" "$tmp/want50" >"$tmp/py" 2>&1 <<'PY'; then
import re, sys
raw = open(sys.argv[1], encoding="utf-8", newline="").read()
raw = raw.replace("\r\n", "\n")
want = open(sys.argv[2], encoding="utf-8").read().splitlines()
drawn = re.findall(r"conform: (\d+)/3 cases, (\d+) failed", raw)
assert drawn, "no progress line in %r" % raw[:300]
assert [int(d) for d, _ in drawn] == [0, 1, 2], "progress %s" % drawn
# What a terminal shows: each carriage return goes back to the line start
# and later characters overwrite earlier ones.
screen = []
for line in raw.split("\n"):
    cells, col = [], 0
    for ch in line:
        if ch == "\r":
            col = 0
            continue
        if col < len(cells):
            cells[col] = ch
        else:
            cells.append(ch)
        col += 1
    screen.append("".join(cells).rstrip())
while screen and not screen[-1]:
    screen.pop()
left = [s for s in screen if "conform: " in s]
assert not left, "progress left on the screen: %r" % left
assert screen == [w.rstrip() for w in want], \
    "screen differs from the plain output:\n%s" % "\n".join(screen)
print("%d progress redraws" % len(drawn))
PY
  ok "pty_run_draws_and_clears_progress ($(cat "$tmp/py"))"
else
  fail "pty_run_draws_and_clears_progress" "$tmp/py"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
