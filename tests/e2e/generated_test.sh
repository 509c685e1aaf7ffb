#!/usr/bin/env bash
# End-to-end checks of generated kernels: a plugin with the device tier
# alone ("devonly", tests/plugins) compiles format c, runs what the
# generator makes of a model's elementwise nodes, and the map and the
# placement report say so; --impl picks the kernels on cpu.
set -u
wmap=$1
plugins=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
unset WMAP_BACKEND_PATH WMAP_LOADER_DEBUG WMAP_NUM_THREADS

if [ ! -f "$plugins/libwmap_backend_devonly.so" ]; then
  echo "skipped: test plugins not built in $plugins"
  exit 77
fi
if ! "${WMAP_CC:-cc}" --version >/dev/null 2>&1; then
  echo "skipped: no C compiler runs here (cc or \$WMAP_CC)"
  exit 77
fi
export WMAP_BACKEND_PATH=$plugins
export XDG_CACHE_HOME=$tmp/cache

. "$(dirname "$0")/common.sh"

"$wmap" zoo export mlp "$tmp/mlp.onnx" >/dev/null || exit 1

if check backends_list_the_format 0 "$wmap" backends; then
  has backends_list_the_format "$tmp/out" "devonly 0.0.1" \
    "tiers: device, library no" "compiles: c"
fi

# Every node (Gemm, Relu) runs as a generated kernel on devonly; the logits
# are the reference's (within float rounding: sums in another order).
if check ref_logits 0 "$wmap" run "$tmp/mlp.onnx" --backends ref --no-passes; then
  grep '^logits' "$tmp/out" >"$tmp/want"
fi
if check device_tier_only_runs_generated 0 "$wmap" run "$tmp/mlp.onnx" \
    --backends devonly --no-passes --placement="$tmp/placement.json"; then
  grep '^logits' "$tmp/out" >"$tmp/got"
  if ! python3 - "$tmp/want" "$tmp/got" <<'PY'
import sys
a, b = [[float(x) for x in open(f).read().split('=')[1].split()[:8]]
        for f in sys.argv[1:3]]
sys.exit(0 if all(abs(x - y) <= 1e-4 * (1 + abs(y)) for x, y in zip(a, b))
         else 1)
PY
  then
    fail "device_tier_only_runs_generated: logits differ from ref's" \
      "$tmp/want" "$tmp/got"
  else
    has device_tier_only_runs_generated "$tmp/placement.json" \
      '"name": "relu0", "op": "Relu", "domain": "", "backend": "devonly", "impl": "generated"' \
      '"kernel": "wg_' '"name": "fc0", "op": "Gemm", "domain": "", "backend": "devonly", "impl": "generated"'
  fi
fi

# Both Relus are one kernel: the same compute, compiled once.
if check equal_kernels_compile_once 0 "$wmap" run "$tmp/mlp.onnx" \
    --backends devonly --no-passes --placement; then
  n=$(grep ' Relu ' "$tmp/out" | grep -o 'kernel wg_[0-9a-f]*' | sort -u | wc -l)
  m=$(grep ' Relu ' "$tmp/out" | grep -c 'kernel wg_')
  if [ "$n" -ne 1 ] || [ "$m" -ne 2 ]; then
    fail "equal_kernels_compile_once: $m generated nodes, $n kernels" "$tmp/out"
  else
    echo "ok   equal_kernels_compile_once"; passed=$((passed + 1))
  fi
fi

# A warm cache compiles nothing: the objects stay as they were.
ls "$tmp/cache/wmap/gen" >"$tmp/before"
if check warm_cache_compiles_nothing 0 "$wmap" run "$tmp/mlp.onnx" \
    --backends devonly --no-passes; then
  ls "$tmp/cache/wmap/gen" >"$tmp/after"
  if [ ! -s "$tmp/before" ] || ! cmp -s "$tmp/before" "$tmp/after"; then
    fail "warm_cache_compiles_nothing: the cache changed" "$tmp/before" "$tmp/after"
  else
    echo "ok   warm_cache_compiles_nothing"; passed=$((passed + 1))
  fi
fi

# The map's coverage column says generated for devonly.
if check map_says_generated 0 "$wmap" map "$tmp/mlp.onnx" --backends devonly,ref \
    --format json; then
  has map_says_generated "$tmp/out" '"generated"'
fi

# --impl on cpu: generated puts the Relus on generated kernels, library
# never generates.
if check cpu_impl_generated 0 "$wmap" run "$tmp/mlp.onnx" --backends cpu \
    --no-passes --impl generated --placement; then
  has cpu_impl_generated "$tmp/out" "relu0                    Relu                 cpu      generated"
fi
if check impl_library_generates_nothing 0 "$wmap" run "$tmp/mlp.onnx" --backends devonly \
    --no-passes --impl library --placement; then
  if grep -q "generated" "$tmp/out"; then
    fail "impl_library_generates_nothing: something was generated" "$tmp/out"
  else
    has impl_library_generates_nothing "$tmp/out" "relu0                    Relu                 ref" \
      "fc0                      Gemm                 ref"
  fi
fi
# wmap tune measures the kernels' schedules and keeps the best in the
# records, which later plans use.
if check tune_measures_and_records 0 "$wmap" tune "$tmp/mlp.onnx" --backend cpu \
    --no-passes --budget 30; then
  has tune_measures_and_records "$tmp/out" "default us" "best us" "speedup" \
    "fc0" "generated kernels tuned"
  if ! head -1 "$tmp/cache/wmap/gen/tune.txt" | grep -q '^wmap.tune/1 '; then
    fail "tune_measures_and_records: no wmap.tune/1 records" "$tmp/cache/wmap/gen/tune.txt"
  fi
fi
if check tuned_plans_use_the_records 0 "$wmap" run "$tmp/mlp.onnx" --backends cpu \
    --no-passes --impl generated --placement; then
  has tuned_plans_use_the_records "$tmp/out" "(tuned)"
fi
if check tune_usage 2 "$wmap" tune "$tmp/mlp.onnx" --budget 0; then
  has tune_usage "$tmp/err" '--budget wants seconds > 0, got "0"'
fi
if check tune_needs_a_run 1 "$wmap" tune "$tmp/none.onnx"; then
  has tune_needs_a_run "$tmp/err" "none.onnx"
fi

for cmd in run bench conform; do
  if check "${cmd}_impl_usage" 2 "$wmap" $cmd --impl fast "$tmp/mlp.onnx"; then
    has "${cmd}_impl_usage" "$tmp/err" '--impl wants auto, library or generated, got "fast"'
  fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
