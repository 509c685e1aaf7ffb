#!/usr/bin/env bash
# End-to-end checks of 'wmap probe': a quick measurement prints valid JSON
# with the expected keys, the cache is written and read back, and usage
# errors are reported.
set -u
wmap=$1
. "$(dirname "$0")/expect.sh"
unset WMAP_BACKEND_PATH WMAP_NUM_THREADS
export XDG_CACHE_HOME="$tmp/cache"

expect probe_help 0 "usage: wmap probe" "$wmap" probe --help
expect help_lists_probe 0 "probe" "$wmap" --help
expect probe_bad_format 2 '--format wants text or json, got "xml"' \
  "$wmap" probe --quick --format xml
expect probe_extra_argument 2 'unexpected argument "x"' "$wmap" probe x
expect probe_quick_json 0 '"format": "wmap.peaks/1"' \
  "$wmap" probe --no-cache --quick --format json
if python3 - "$tmp/out" <<'PY' >"$tmp/py" 2>&1; then
import json, math, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "wmap.peaks/1"
for k in ("model", "cores", "flags_hash", "kernel", "fingerprint"):
    assert k in d["machine"], k
h = d["host"]
for k in ("fma_gflops_fp32", "fma_gflops_fp64", "triad_gbs"):
    for t in ("1", "all"):
        v = h[k][t]
        assert v > 0 and math.isfinite(v), (k, t, v)
names = [b["name"] for b in d["backends"]]
assert "ref" in names, names
for b in d["backends"]:
    for k in ("target", "host", "gemm_gflops_fp32", "gemm_note",
              "declared_gflops_fp32", "declared_gflops_fp16",
              "declared_bandwidth_gbs", "peak_gflops_fp32", "bandwidth_gbs"):
        assert k in b, (b["name"], k)
PY
  echo "ok   probe_json_keys"; passed=$((passed + 1))
else
  echo "FAIL probe_json_keys"; sed 's/^/  /' "$tmp/py" | head -10
  failed=$((failed + 1))
fi
if [ -e "$tmp/cache/wmap" ]; then
  echo "FAIL probe_no_cache_writes_nothing"; failed=$((failed + 1))
else
  echo "ok   probe_no_cache_writes_nothing"; passed=$((passed + 1))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
