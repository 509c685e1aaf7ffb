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
sw = d["software"]
assert len(sw["fingerprint"]) == 16 and sw["detail"].startswith("wmap "), sw
ref = [b for b in d["backends"] if b["name"] == "ref"][0]
# ref is timed on its own MatMul (the quick size) and that is its roof.
assert ref["gemm_n"] == 64 and ref["gemm_gflops_fp32"]["all"] > 0, ref
assert ref["peak_gflops_fp32"] == ref["gemm_gflops_fp32"]["all"], ref
PY
  echo "ok   probe_json_keys"; passed=$((passed + 1))
else
  echo "FAIL probe_json_keys"; sed 's/^/  /' "$tmp/py" | head -10
  failed=$((failed + 1))
fi
# No peaks cache (the loader's plugin probe cache may be written).
if compgen -G "$tmp/cache/wmap/peaks-*" >/dev/null; then
  echo "FAIL probe_no_cache_writes_nothing"; failed=$((failed + 1))
else
  echo "ok   probe_no_cache_writes_nothing"; passed=$((passed + 1))
fi

# A cache measured with other software (another wmap version, other
# backend files) is measured again, saying why; the new one then serves.
fp=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["machine"]["fingerprint"])' "$tmp/out")
mkdir -p "$tmp/cache/wmap"
python3 - "$tmp/out" "$tmp/cache/wmap/peaks-$fp.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["software"] = {"fingerprint": "0123456789abcdef", "detail": "wmap 0.0.1-old"}
for b in d["backends"]:  # quick figures are rough: keep the cache consistent
    b["gemm_gflops_fp32"] = {"1": 0, "all": 0}
json.dump(d, open(sys.argv[2], "w"))
PY
"$wmap" probe --format json >"$tmp/stale.json" 2>"$tmp/stale.err"
if grep -q "peaks cache \"$tmp/cache/wmap/peaks-$fp.json\" was measured with other software (fingerprint 0123456789abcdef, now [0-9a-f]*: was \"wmap 0.0.1-old\", now \"wmap [0-9.]*\"); measuring again" "$tmp/stale.err"; then
  echo "ok   probe_stale_software_is_measured_again"; passed=$((passed + 1))
else
  echo "FAIL probe_stale_software_is_measured_again"; sed 's/^/  /' "$tmp/stale.err" | head -5
  failed=$((failed + 1))
fi
# On a busy machine the new figures may be refused in turn (a GEMM above
# the FMA peak) and not cached; that is said, and nothing more is checked.
if grep -q "; not cached" "$tmp/stale.err"; then
  echo "skip probe_fresh_cache_serves: the new measurement was not cached:"
  grep "not cached" "$tmp/stale.err" | sed 's/^/  /'
else
  if ! grep -q '0123456789abcdef' "$tmp/cache/wmap/peaks-$fp.json"; then
    echo "ok   probe_stale_cache_rewritten"; passed=$((passed + 1))
  else
    echo "FAIL probe_stale_cache_rewritten"; failed=$((failed + 1))
  fi
  expect probe_fresh_cache_serves 0 "cached, measured" "$wmap" probe
  if grep -q "warning" "$tmp/err"; then
    echo "FAIL probe_fresh_cache_is_quiet"; failed=$((failed + 1))
  else
    echo "ok   probe_fresh_cache_is_quiet"; passed=$((passed + 1))
  fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
