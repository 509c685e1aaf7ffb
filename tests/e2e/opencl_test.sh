#!/usr/bin/env bash
# End-to-end checks of the opencl backend (PoCL on this machine): it is
# listed with its device and format, zoo models run on it strict (every
# node a kernel generated in opencl-c) and agree with ref within the peer
# tolerance, the map names what it cannot run, and bench measures it.
# Skips (77) with the reason where OpenCL does not load.
set -u
wmap=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
unset WMAP_BACKEND_PATH WMAP_LOADER_DEBUG WMAP_NUM_THREADS
export XDG_CACHE_HOME=$tmp/cache
rtol=1e-3
atol=1e-4

if ! "$wmap" backends 2>&1 | grep -q '^opencl [0-9]'; then
  echo "skipped: the opencl backend does not load here:"
  "$wmap" backends 2>&1 | grep -F backend_opencl || echo "  (not built)"
  exit 77
fi

. "$(dirname "$0")/common.sh"
here=$(cd "$(dirname "$0")" && pwd)

if check backends_list_opencl 0 "$wmap" backends; then
  has backends_list_opencl "$tmp/out" "opencl 0.1.0" \
    "tiers: device, library no" "compiles: opencl-c"
fi

# Each model strict on opencl (no fallback: every node generated) against
# ref, every output value compared.
for spec in resnet18 mobilenetv2 bert-base:layers=2,seq=64 \
            gpt2:layers=2,seq=32; do
  name=${spec%%:*}
  model=$tmp/$name.onnx
  "$wmap" zoo export "$spec" "$model" >/dev/null || { fail "export $spec"; continue; }
  if ! check "${name}_ref" 0 "$wmap" run "$model" --backends ref \
      --values 100000000; then
    continue
  fi
  mv "$tmp/out" "$tmp/want"
  if ! check "${name}_opencl_strict" 0 "$wmap" run "$model" \
      --backends opencl --strict --values 100000000 \
      --placement="$tmp/placement.json"; then
    continue
  fi
  if ! { python3 "$here/compare_outputs.py" "$tmp/want" "$tmp/out" "$rtol" \
      "$atol" && python3 - "$tmp/placement.json" <<'PY'
import json, sys
nodes = json.load(open(sys.argv[1]))["nodes"]
off = [n["name"] for n in nodes
       if n["backend"] not in ("opencl", "-") or
       (n["backend"] == "opencl" and n["impl"] != "generated")]
if off:
    sys.exit("nodes not generated on opencl: %s" % off[:5])
print("%d nodes" % len(nodes))
PY
  } >"$tmp/cmp" 2>&1
  then
    fail "${name}_agrees_with_ref" "$tmp/cmp"
  else
    echo "ok   ${name}_agrees_with_ref ($(tr "\n" " " <"$tmp/cmp"))"
    passed=$((passed + 1))
  fi
done

# The map: opencl covers what the generator defines (all of BERT's nodes);
# an operator it has no definition of is one to write.
if check map_covers_bert 0 "$wmap" map --zoo bert-base:layers=2,seq=64 \
    --backends opencl,cpu --no-probe; then
  has map_covers_bert "$tmp/out" "operators to write for opencl: none"
fi
if check map_names_what_to_write 0 "$wmap" map "$here/unmappable.onnx" \
    --backends opencl,cpu --no-probe; then
  has map_names_what_to_write "$tmp/out" "operators to write for opencl (2)" \
    "com.example:FancyNorm"
fi

# bench measures opencl next to cpu.
if check bench_opencl_and_cpu 0 "$wmap" bench --zoo mlp --backends opencl \
    --backends cpu --blocks 2 --min-time 0.05 --no-profile \
    -o "$tmp/b.json"; then
  has bench_opencl_and_cpu "$tmp/out" "opencl@t" "cpu@t"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
