#!/usr/bin/env bash
# Peer check of the model zoo: every export loads in onnxruntime, and
# 'wmap run' gives the same outputs as onnxruntime's CPUExecutionProvider
# on the same deterministic inputs, once on the ref backend alone and once
# on the default backends (cpu first, ref last).
#
#   zoo_vs_ort.sh WMAP VENV_DIR
#
# VENV_DIR is a Python venv with onnxruntime, onnx and numpy from the
# package index, made by peer_venv.sh: created when missing and reused when
# present. Exits 77 (skip) with a reason when the venv cannot be made (no
# 'python3 -m venv', no network); WMAP_PEER_REQUIRE=1 turns that skip into a
# failure.
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

# shellcheck source=peer_venv.sh
. "$here/peer_venv.sh"

start=$SECONDS
peer_venv "$venv" # sets $py
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
