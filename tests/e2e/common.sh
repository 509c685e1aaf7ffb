# Helpers the e2e scripts share (sourced): each needs $tmp and counts into
# $passed and $failed.

# fail NAME FILE...: reports NAME failed with the start of each FILE.
fail() {
  echo "FAIL $1"; shift
  for f in "$@"; do sed 's/^/  /' "$f" | head -20; done
  failed=$((failed + 1))
}

# check NAME WANT_RC CMD...: runs CMD into $tmp/out and $tmp/err; fails
# NAME (showing both) unless it exits WANT_RC.
check() {
  local name=$1 want_rc=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne "$want_rc" ]; then
    fail "$name: exit $rc, want $want_rc" "$tmp/out" "$tmp/err"; return 1
  fi
  return 0
}

# has NAME FILE FRAGMENT...: passes NAME when every fragment is in FILE.
has() {
  local name=$1 file=$2
  shift 2
  for frag in "$@"; do
    if ! grep -qF -- "$frag" "$file"; then
      fail "$name: lacks \"$frag\"" "$file"; return
    fi
  done
  echo "ok   $name"
  passed=$((passed + 1))
}

# agrees NAME WANT GOT RTOL ATOL: passes NAME when the outputs GOT printed
# (`wmap run --values N`) are WANT's within the tolerances
# (compare_outputs.py beside this file).
agrees() {
  local name=$1 want=$2 got=$3 rtol=$4 atol=$5
  local here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  if python3 "$here/compare_outputs.py" "$want" "$got" "$rtol" "$atol" \
      >"$tmp/cmp" 2>&1; then
    echo "ok   $name ($(cat "$tmp/cmp"))"
    passed=$((passed + 1))
  else
    fail "$name" "$tmp/cmp"
  fi
}
