# Shared by the e2e scripts (sourced): a temp folder, pass/fail counters and
# `expect NAME WANT_RC FRAGMENT CMD...`, which runs CMD and checks its exit
# code and that stderr (or stdout for rc 0) contains FRAGMENT.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

expect() {
  local name=$1 want_rc=$2 fragment=$3
  shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  local text
  if [ "$want_rc" -eq 0 ]; then text=$(cat "$tmp/out"); else text=$(cat "$tmp/err"); fi
  if [ "$rc" -ne "$want_rc" ]; then
    echo "FAIL $name: exit $rc, want $want_rc"; sed 's/^/  /' "$tmp/err" | head -5
    failed=$((failed + 1)); return
  fi
  if ! grep -qF -- "$fragment" <<<"$text"; then
    echo "FAIL $name: output lacks \"$fragment\":"; sed 's/^/  /' <<<"$text" | head -5
    failed=$((failed + 1)); return
  fi
  echo "ok   $name"
  passed=$((passed + 1))
}
