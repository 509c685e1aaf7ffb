#!/usr/bin/env bash
# The checks of the cuda backend on a machine with an NVIDIA GPU, in about
# eight minutes, from the repository root:
#
#   scripts/device-check.sh            # results in ./device-check-out
#   OUT=/some/dir scripts/device-check.sh
#
# Uses the build in build/ (configured and built when build/wmap is
# missing). Each step runs under `timeout`, writes its output under $OUT
# and is summarised at the end; a failing step does not stop the others,
# and a step is skipped when the time left is too short for it. The steps:
# nvidia-smi; the backend's unit test (backends.cuda, its GPU part
# included); `wmap backends`; ONNX's node tests on cuda (nodes cuda does
# not take run on ref); zoo models run on cuda alone (--strict) and on ref,
# their outputs compared (|cuda - ref| <= 1e-4 + 1e-3 |ref|, as the peer
# checks do); and `wmap bench` of ResNet-50 and BERT-base on cuda.
set -u
OUT=${OUT:-./device-check-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
wmap=build/wmap
budget=${DEVICE_CHECK_SECONDS:-470}  # the steps' share of eight minutes
start=$SECONDS
summary=()

# note LINE: prints LINE and keeps it for the summary.
note() {
  echo "$1"
  summary+=("$1")
}

# left: seconds of the budget left.
left() {
  echo $((budget - (SECONDS - start)))
}

# step NAME LIMIT CMD...: runs CMD with at most LIMIT seconds (less when
# the budget is nearly spent) into $OUT/NAME.txt; notes the outcome.
step() {
  local name=$1 limit=$2
  shift 2
  local have
  have=$(left)
  if [ "$have" -lt 15 ]; then
    note "SKIP $name: out of time"
    return 1
  fi
  [ "$limit" -gt "$have" ] && limit=$have
  local t0=$SECONDS
  echo "== $name (at most ${limit}s): $*"
  timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.txt" 2>&1
  local rc=$?
  local took=$((SECONDS - t0))
  tail -n 5 "$OUT/$name.txt" | sed 's/^/   /'
  if [ "$rc" -eq 0 ]; then
    note "ok   $name (${took}s)"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    note "FAIL $name: timed out after ${took}s (see $name.txt)"
  else
    note "FAIL $name: exit $rc after ${took}s (see $name.txt)"
  fi
  return "$rc"
}

# What the steps need; missing tools are named, not silently skipped.
for tool in cmake timeout python3 nvidia-smi; do
  command -v "$tool" >/dev/null 2>&1 || note "MISSING $tool"
done

if command -v nvidia-smi >/dev/null 2>&1; then
  step nvidia-smi 30 nvidia-smi
fi

if [ ! -x "$wmap" ]; then
  echo "== no $wmap: building (not counted in the budget)"
  if ! { cmake -S . -B build && cmake --build build -j; } \
      >"$OUT/build.txt" 2>&1; then
    tail -n 30 "$OUT/build.txt"
    note "FAIL build (see build.txt)"
    grep -iE "could not find|not found|missing" "$OUT/build.txt" |
      sort -u | head -20 | sed 's/^/   /'
  fi
  start=$SECONDS
fi
if [ ! -x "$wmap" ]; then
  note "FAIL no $wmap: nothing else can run"
  printf '%s\n' "${summary[@]}" >"$OUT/summary.txt"
  exit 1
fi
if [ ! -f build/backends/libwmap_backend_cuda.so ]; then
  note "MISSING build/backends/libwmap_backend_cuda.so: configure found no" \
    "CUDA toolkit with NVRTC and cuBLAS (see CMake's output)"
fi

step unit 120 ctest --test-dir build -R '^backends\.cuda' --output-on-failure
step backends 30 "$wmap" backends
grep -A12 '^cuda ' "$OUT/backends.txt" | sed 's/^/   /'
grep 'libwmap_backend_cuda' "$OUT/backends.txt" | sed 's/^/   /'

# ONNX's node tests: the data generated into the build tree by the peer
# tests (carry build/onnx-node-data to a machine that cannot fetch onnx),
# else $WMAP_ONNX_TESTDATA or the distribution's package.
data=""
for d in build/onnx-node-data "${WMAP_ONNX_TESTDATA:-}" \
    /usr/share/libonnx-testdata/data; do
  if [ -n "$d" ] && [ -d "$d/node" ]; then
    data=$d
    break
  fi
done
if [ -z "$data" ]; then
  note "MISSING ONNX node test data (build/onnx-node-data, " \
    "\$WMAP_ONNX_TESTDATA or /usr/share/libonnx-testdata/data): no conform"
else
  step conform 180 "$wmap" conform --backend cuda --data "$data" --quiet \
    --suite node --json "$OUT/conform.json"
fi

# compare.py A B: compares the output_K.pb files of folders A (cuda) and B
# (ref); float tensors within 1e-4 + 1e-3 |ref|, others exactly.
cat >"$OUT/compare.py" <<'PY'
import math, os, struct, sys

def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i

def tensor(path):
    """dims, dtype and values (floats, or raw bytes) of a TensorProto."""
    b = open(path, 'rb').read()
    dims, dtype, floats, raw, i = [], 0, [], None, 0
    while i < len(b):
        key, i = varint(b, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(b, i)
            if field == 1: dims.append(v)
            elif field == 2: dtype = v
        elif wire == 2:
            n, i = varint(b, i)
            chunk = b[i:i + n]; i += n
            if field == 1:
                j = 0
                while j < len(chunk):
                    v, j = varint(chunk, j); dims.append(v)
            elif field == 4: floats += struct.unpack('<%df' % (n // 4), chunk)
            elif field == 9: raw = chunk
        elif wire == 5:
            if field == 4: floats.append(struct.unpack('<f', b[i:i + 4])[0])
            i += 4
        elif wire == 1:
            i += 8
        else:
            raise ValueError('%s: wire type %d' % (path, wire))
    if dtype == 1:
        vals = list(struct.unpack('<%df' % (len(raw) // 4), raw)) if raw is not None else floats
        return dims, dtype, vals
    return dims, dtype, raw

a, b = sys.argv[1], sys.argv[2]
names = sorted(f for f in os.listdir(b) if f.startswith('output_'))
if not names:
    sys.exit('no outputs in ' + b)
bad = 0
for name in names:
    da, ta, va = tensor(os.path.join(a, name))
    db, tb, vb = tensor(os.path.join(b, name))
    if (da, ta) != (db, tb):
        print('%s: shape %s dtype %d, ref %s dtype %d' % (name, da, ta, db, tb)); bad += 1; continue
    if ta != 1:
        ok = va == vb
        print('%s: %s' % (name, 'equal' if ok else 'DIFFERENT')); bad += not ok; continue
    worst, at, off = 0.0, -1, 0
    for k, (x, y) in enumerate(zip(va, vb)):
        err = abs(x - y) / (1e-4 + 1e-3 * abs(y)) if not (math.isnan(x) and math.isnan(y)) else 0
        if not err <= 1:
            off += 1
        if not err <= worst:
            worst, at = err, k
    print('%s: %d values, %d outside tolerance, worst %.3g of it at %d (cuda %r, ref %r)'
          % (name, len(va), off, worst, at, va[at] if at >= 0 else None, vb[at] if at >= 0 else None))
    bad += off > 0
sys.exit(1 if bad else 0)
PY

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# zoo SPEC: exports SPEC, runs it on ref and on cuda alone (else on cuda
# with ref taking what cuda does not), and compares the outputs.
zoo() {
  local spec=$1 name model
  name=$(printf '%s' "$spec" | tr ':=,' '___')
  model=$tmp/$name.onnx
  step "zoo_${name}_export" 60 "$wmap" zoo export "$spec" "$model" || return
  step "zoo_${name}_ref" 60 "$wmap" run "$model" --backends ref --save \
    "$tmp/$name.ref" || return
  if ! step "zoo_${name}_cuda_strict" 60 "$wmap" run "$model" --backends cuda \
      --strict --placement="$OUT/zoo_${name}_placement.json" \
      --save "$tmp/$name.cuda"; then
    step "zoo_${name}_cuda_ref" 60 "$wmap" run "$model" --backends cuda,ref \
      --placement="$OUT/zoo_${name}_placement.json" \
      --save "$tmp/$name.cuda" || return
  fi
  if command -v python3 >/dev/null 2>&1; then
    step "zoo_${name}_compare" 30 python3 "$OUT/compare.py" "$tmp/$name.cuda" \
      "$tmp/$name.ref"
  fi
}

zoo resnet50
zoo bert-base

for spec in resnet50 bert-base; do
  step "bench_${spec}" 75 "$wmap" bench --zoo "$spec" --backends cuda \
    --blocks 5 -o "$OUT/bench_${spec}.json"
done

# More models while time is left.
zoo mobilenetv2
zoo gpt2:layers=2,seq=64

echo
echo "summary ($((SECONDS - start))s of ${budget}s):"
printf '  %s\n' "${summary[@]}" | tee "$OUT/summary.txt"
! grep -q '^  FAIL' "$OUT/summary.txt"
