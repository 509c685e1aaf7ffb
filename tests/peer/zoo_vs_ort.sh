#!/usr/bin/env bash
# Peer check of the model zoo: every export loads in onnxruntime, and
# 'wmap run' gives the same outputs as onnxruntime's CPUExecutionProvider
# on the same deterministic inputs, once on the ref backend alone and once
# on the default backends (cpu first, ref last).
#
#   zoo_vs_ort.sh WMAP VENV_DIR
#
# VENV_DIR is a Python venv with onnxruntime, onnx and numpy from the
# package index; it is created when missing and reused when present. Exits
# 77 (skip) with a reason when the venv cannot be made (no 'python3 -m
# venv', no network); WMAP_PEER_REQUIRE=1 turns that skip into a failure.
#
# Tolerance: an element passes when |wmap - ort| <= ATOL + RTOL * |ort|,
# with the conformance rtol 1e-3 but atol 1e-4 instead of 1e-7: after tens
# of layers of fp32 sums taken in a different order, values near zero carry
# absolute errors around 1e-5 of the output scale.
set -u
wmap=$1
venv=$2
here=$(cd "$(dirname "$0")" && pwd)
rtol=1e-3
atol=1e-4
models="mlp resnet18 mobilenetv2 resnet50 bert-base:layers=2,seq=32
        gpt2:layers=2,seq=32"
packages=(onnxruntime onnx numpy)
marker=$venv/.wmap-peer-ok

skip() {
  echo "SKIP: $*"
  if [ "${WMAP_PEER_REQUIRE:-0}" = 1 ]; then
    echo "WMAP_PEER_REQUIRE=1: failing instead of skipping"
    exit 1
  fi
  exit 77
}

imports() {
  "$venv/bin/python" -c 'import onnxruntime, onnx, numpy' 2>&1
}

start=$SECONDS
if [ -f "$marker" ] && imports >/dev/null; then
  echo "reusing venv $venv"
else
  python=${WMAP_PEER_PYTHON:-python3}
  command -v "$python" >/dev/null 2>&1 || skip "no $python on PATH"
  rm -rf "$venv"
  # The marker is written last, so an interrupted install is redone.
  log=$(mktemp)
  if ! "$python" -m venv "$venv" >"$log" 2>&1; then
    reason=$(tail -n 1 "$log")
    rm -rf "$venv" "$log"
    skip "'$python -m venv' fails (install python3-venv): $reason"
  fi
  echo "installing ${packages[*]} into $venv"
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check \
    --no-input -q --timeout 10 --retries 1 "${packages[@]}" >"$log" 2>&1; then
    # The last line, and the network error when there is one.
    reason=$(tail -n 1 "$log")
    net=$(grep -m 1 -o -e 'Failed to establish a new connection: [^'"'"']*' \
      -e 'Temporary failure in name resolution' -e 'Name or service not known' \
      -e 'Network is unreachable' -e 'timed out' "$log")
    [ -n "$net" ] && reason="$net; $reason"
    rm -rf "$venv" "$log"
    skip "pip cannot install ${packages[*]} from the package index: $reason"
  fi
  rm -f "$log"
  if ! reason=$(imports); then
    skip "the venv in $venv cannot import onnxruntime, onnx, numpy:" \
      "$(printf '%s\n' "$reason" | tail -n 1)"
  fi
  "$venv/bin/python" -m pip freeze --disable-pip-version-check >"$marker"
  echo "venv ready in $((SECONDS - start)) s"
fi
py=$venv/bin/python
"$py" -c 'import onnxruntime as o, onnx, numpy as n, sys
print("python %s, onnxruntime %s, onnx %s, numpy %s"
      % (sys.version.split()[0], o.__version__, onnx.__version__, n.__version__))'
echo "tolerance: |wmap - ort| <= $atol + $rtol * |ort|"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failed=0
passed=0
for spec in $models; do
  name=$(printf '%s' "$spec" | tr ':=,' '___')
  model=$tmp/$name.onnx
  in=$tmp/$name.in
  mkdir -p "$in"
  echo "== $spec"
  if ! "$wmap" zoo export "$spec" "$model" >"$tmp/log" 2>&1; then
    echo "FAIL $spec: wmap zoo export fails:"
    cat "$tmp/log"
    failed=$((failed + 1))
    continue
  fi
  if ! "$py" "$here/zoo_vs_ort.py" inputs "$model" "$in"; then
    echo "FAIL $spec: cannot make inputs"
    failed=$((failed + 1))
    continue
  fi
  # ref alone, then the default backends (every loaded one, ref last).
  for backends in ref default; do
    out=$tmp/$name.$backends
    mkdir -p "$out"
    set -- --backends "$backends"
    [ "$backends" = default ] && set --
    t0=$SECONDS
    if ! "$wmap" run "$model" --inputs "$in" --save "$out" "$@" \
      >"$tmp/log" 2>&1; then
      echo "FAIL $spec: wmap run on backends $backends fails:"
      cat "$tmp/log"
      failed=$((failed + 1))
      continue
    fi
    echo "  wmap run on $backends: $((SECONDS - t0)) s"
    if "$py" "$here/zoo_vs_ort.py" compare "$model" "$in" "$out" \
      "$spec [$backends]" "$rtol" "$atol"; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
    fi
    rm -rf "$out"
  done
  rm -rf "$model" "$in"
done

echo "$passed passed, $failed failed in $((SECONDS - start)) s"
[ "$failed" -eq 0 ]
