# shellcheck shell=bash
# Sourced by the peer checks and the Python package's tests (bash): a venv
# with packages from the package index, cached in the build tree.
#
#   . peer_venv.sh
#   peer_venv VENV_DIR [PACKAGE...]   # sets $py to VENV_DIR/bin/python,
#                                     # or skips
#
# PACKAGEs default to the peers: onnxruntime onnx numpy; each must import
# under its own name.
# The venv is created when missing and reused when present; creation holds
# VENV_DIR.lock so peer tests run in parallel do not build it twice. Exits
# 77 (skip) with a reason when it cannot be made (no 'python3 -m venv', no
# network); WMAP_PEER_REQUIRE=1 turns that skip into a failure.
# WMAP_PEER_PYTHON names the interpreter (default python3).

peer_packages=(onnxruntime onnx numpy)  # the ones peer_venv installs

skip() {
  echo "SKIP: $*"
  if [ "${WMAP_PEER_REQUIRE:-0}" = 1 ]; then
    echo "WMAP_PEER_REQUIRE=1: failing instead of skipping"
    exit 1
  fi
  exit 77
}

peer_venv_imports() {
  local list
  list=$(IFS=,; echo "${peer_packages[*]}")
  "$1/bin/python" -c "import $list" 2>&1
}

# Creates the venv in $1 unless a complete one is there. The marker is
# written last, so an interrupted install is redone.
peer_venv_make() {
  local venv=$1 marker=$1/.wmap-peer-ok start=$SECONDS
  if [ -f "$marker" ] && peer_venv_imports "$venv" >/dev/null; then
    echo "reusing venv $venv"
    return 0
  fi
  local python=${WMAP_PEER_PYTHON:-python3} log reason net
  command -v "$python" >/dev/null 2>&1 || skip "no $python on PATH"
  rm -rf "$venv"
  log=$(mktemp)
  if ! "$python" -m venv "$venv" >"$log" 2>&1; then
    reason=$(tail -n 1 "$log")
    rm -rf "$venv" "$log"
    skip "'$python -m venv' fails (install python3-venv): $reason"
  fi
  echo "installing ${peer_packages[*]} into $venv"
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check \
    --no-input -q --timeout 10 --retries 1 "${peer_packages[@]}" \
    >"$log" 2>&1; then
    # The last line, and the network error when there is one.
    reason=$(tail -n 1 "$log")
    net=$(grep -m 1 -o -e 'Failed to establish a new connection: [^'"'"']*' \
      -e 'Temporary failure in name resolution' -e 'Name or service not known' \
      -e 'Network is unreachable' -e 'timed out' "$log")
    [ -n "$net" ] && reason="$net; $reason"
    rm -rf "$venv" "$log"
    skip "pip cannot install ${peer_packages[*]} from the package index:" \
      "$reason"
  fi
  rm -f "$log"
  if ! reason=$(peer_venv_imports "$venv"); then
    skip "the venv in $venv cannot import ${peer_packages[*]}:" \
      "$(printf '%s\n' "$reason" | tail -n 1)"
  fi
  "$venv/bin/python" -m pip freeze --disable-pip-version-check >"$marker"
  echo "venv ready in $((SECONDS - start)) s"
}

peer_venv() {
  local venv=$1
  shift
  [ $# -eq 0 ] || peer_packages=("$@")
  mkdir -p "$(dirname "$venv")"
  if command -v flock >/dev/null 2>&1; then
    # A subshell holds the lock; skip's exit 77 passes through it.
    (
      flock 9
      peer_venv_make "$venv"
    ) 9>"$venv.lock"
    local rc=$?
    [ "$rc" -eq 0 ] || exit "$rc"
  else
    peer_venv_make "$venv"
  fi
  # shellcheck disable=SC2034 # read by the scripts that source this
  py=$venv/bin/python
}
