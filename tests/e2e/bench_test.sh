#!/bin/bash
# End-to-end tests of `wmap bench`: the baseline JSON of interleaved
# blocks, several configurations, the profile, bad usage. Short blocks:
# the figures are not checked, only their structure and consistency.
# Usage: bench_test.sh WMAP_BINARY
wmap=$1
here=$(dirname "$0")
. "$here/expect.sh"
if ! command -v python3 >/dev/null; then
  echo "skip: python3 is needed to read the baselines"
  exit 77
fi

check() {
  local name=$1 file=$2
  shift 2
  if python3 - "$file" "$@" >"$tmp/py" 2>&1; then
    echo "ok   $name"; passed=$((passed + 1))
  else
    echo "FAIL $name"; sed 's/^/  /' "$tmp/py" | tail -5; failed=$((failed + 1))
  fi
}

"$wmap" bench --zoo mlp --backends ref --threads 1 --blocks 3 --min-time 0.05 --no-profile \
  -o "$tmp/one.json" >"$tmp/one.txt" 2>"$tmp/err" || cat "$tmp/err"
check "one configuration" "$tmp/one.json" <<'PY'
import json, sys, math
d = json.load(open(sys.argv[1]))
assert d["format"] == "wmap.baseline/1", d["format"]
assert len(d["environment"]["fingerprint"]) == 64
assert "cpu.model" in d["environment"]["critical"]
assert d["environment"]["critical"]["model.sha256"] == d["model"]["sha256"]
(c,) = d["configurations"]
assert c["label"] == "ref@t1" and c["threads"] == 1 and c["backends"] == ["ref"], c["label"]
r = c["results"]
assert len(r["blocks"]) == 3 and len(r["samples_ns"]) == 3
n = sum(len(b) for b in r["samples_ns"])
assert r["latency"]["n"] == n and n >= 30, n
flat = sorted(x for b in r["samples_ns"] for x in b)
assert r["latency"]["p50_ns"] == flat[math.ceil(0.5 * n) - 1], (r["latency"]["p50_ns"], flat[math.ceil(0.5 * n) - 1])
assert r["latency"]["min_ns"] == flat[0] and r["latency"]["max_ns"] == flat[-1]
assert r["latency"]["supported"]["p99"] == (n >= 662)
assert d["results"]["latency"]["p50_ns"] == r["latency"]["p50_ns"]
assert "few_blocks" in r["warnings"]
assert r["profile"] is None  # --no-profile
PY
if grep -q "P50" "$tmp/one.txt"; then
  echo "ok   text summary"; passed=$((passed + 1))
else
  echo "FAIL text summary"; head -5 "$tmp/one.txt"; failed=$((failed + 1))
fi

"$wmap" bench --zoo mlp --backends ref --backends cpu,ref --threads 1,2 --blocks 2 \
  --min-time 0.05 --profile -o "$tmp/four.json" --html "$tmp/four.html" \
  >/dev/null 2>"$tmp/err" || cat "$tmp/err"
check "interleaved configurations, scaling and profile" "$tmp/four.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
labels = [c["label"] for c in d["configurations"]]
assert labels == ["ref@t1", "ref@t2", "cpu,ref@t1", "cpu,ref@t2"], labels
orders = sorted((b["order"], c["label"], b["index"]) for c in d["configurations"]
                for b in c["results"]["blocks"])
# Block k of every configuration runs before block k + 1 of any.
assert [o[2] for o in orders] == [0, 0, 0, 0, 1, 1, 1, 1], orders
t2 = d["configurations"][1]["results"]["scaling"]
assert t2 and t2["base_threads"] == 1 and t2["efficiency"] > 0, t2
prof = d["configurations"][3]["results"]["profile"]
assert prof and len(prof) == 5, prof  # mlp: 2 Gemm + Relu ... per node
# Each Relu runs inside the Gemm before it (the epilogue pass).
assert all(p["mean_ns"] > 0 for p in prof if p["op_type"] != "Relu"), prof
assert all(p["mean_ns"] == 0 for p in prof if p["op_type"] == "Relu"), prof
assert {p["backend"] for p in prof} <= {"cpu", "ref"}
PY
if [ -s "$tmp/four.html" ] && grep -q "<svg" "$tmp/four.html"; then
  echo "ok   html report"; passed=$((passed + 1))
else
  echo "FAIL html report"; failed=$((failed + 1))
fi

# The profile weighs the map's critical path.
"$wmap" map --zoo mlp --times "$tmp/four.json" --no-probe --format json -o "$tmp/map.json" 2>"$tmp/err" ||
  cat "$tmp/err"
check "map --times: measured critical path" "$tmp/map.json" "$tmp/four.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
cp = m["critical_path"]
assert cp["weights"].startswith("measured: ") and "ref@t1" in cp["weights"], cp["weights"]
prof = {p["node"]: p["mean_ns"] for p in b["configurations"][0]["results"]["profile"]}
for n in m["nodes"]:
    assert abs(n["weight_s"] - prof[n["name"]] * 1e-9) <= 1e-5 * n["weight_s"] + 1e-15, n["name"]
assert abs(cp["total_s"] - sum(prof.values()) * 1e-9) <= 1e-5 * cp["total_s"]
PY
expect "map --times of another model" 1 "has no node" "$wmap" map --zoo resnet18 --no-probe \
  --times "$tmp/four.json"

# With peaks, the measured nodes are placed against their roofs (at the
# profile's thread count): achieved GFLOP/s, % of the roof, a summary.
"$wmap" map --zoo mlp --times "$tmp/four.json" --peaks "$here/map_peaks.json" --backends ref \
  --format json -o "$tmp/mapm.json" 2>"$tmp/err" || cat "$tmp/err"
check "map --times: achieved GFLOP/s and % of the roof" "$tmp/mapm.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
ms = m["measured"]
assert ms and "ref@t1" in ms["source"] and ms["nodes"] >= 3, ms
ref = m["backends"][0]
assert ref["name"] == "ref" and ref["peak_threads"] == 1, ref
assert ref["peak_gflops"] == 224 and ref["bandwidth_gbs"] == 30, ref  # [0]
above = 0
for n in m["nodes"]:
    assert n["measured_s"] == n["weight_s"] and n["measured_backend"] == "ref", n
    if n["measured_s"] > 0 and n["flops"] > 0:
        g = n["flops"] / n["measured_s"] * 1e-9
        assert abs(n["achieved_gflops"] - g) <= 1e-5 * g, (n["name"], g)
        c = n["backends"][0]
        pct = 100 * max(c["t_comp_s"], c["t_mem_s"]) / n["measured_s"]
        assert abs(n["roof_pct"] - pct) <= 1e-4 * pct, (n["name"], pct)
        above += n["roof_pct"] > 100
assert ms["above_roof"] == above and ms["peak_too_low"] == (above > 0), ms
PY
expect "map --times: text summary" 0 "measured nodes ran at" "$wmap" map --zoo mlp \
  --times "$tmp/four.json" --peaks "$here/map_peaks.json" --backends ref --color never
expect "map --times: HTML rings" 0 'class="ring"' "$wmap" map --zoo mlp \
  --times "$tmp/four.json" --peaks "$here/map_peaks.json" --backends ref --format html

# The profile's roofs are taken at each configuration's thread count: with
# peaks that double from 1 thread to all cores, t_roof halves. Peaks this
# low are beaten by every node: the report flags the peak, never quietly
# prints an efficiency above 100 %.
python3 - "$here/map_peaks.json" "$tmp/low.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["host"]["fma_gflops_fp32"] = {"1": 0.001, "all": 0.002}
d["host"]["triad_gbs"] = {"1": 0.001, "all": 0.002}
for b in d["backends"]:
    b["gemm_gflops_fp32"] = {"1": 0, "all": 0}
json.dump(d, open(sys.argv[2], "w"))
PY
"$wmap" bench --zoo mlp --backends ref --threads 1,2 --blocks 1 --min-time 0.01 \
  --peaks "$tmp/low.json" -o "$tmp/low_b.json" >"$tmp/low.txt" 2>"$tmp/err" || cat "$tmp/err"
check "bench: roofs at the thread count, above 100 % flagged" "$tmp/low_b.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c1, c2 = d["configurations"]
assert c1["threads"] == 1 and c2["threads"] == 2, (c1["threads"], c2["threads"])
r1 = {p["node"]: p["t_roof_ns"] for p in c1["results"]["profile"]}
r2 = {p["node"]: p["t_roof_ns"] for p in c2["results"]["profile"]}
for n in r1:
    if r1[n] > 0:
        assert abs(r1[n] / r2[n] - 2) < 1e-3, (n, r1[n], r2[n])
for c in (c1, c2):
    res = c["results"]
    pc = res["peak_check"]
    assert pc["peak_too_low"] and pc["above_roof"] >= 3 and pc["max_efficiency"] > 1, pc
    assert "peak_exceeded" in res["warnings"], res["warnings"]
    assert all(p["above_roof"] == (p["efficiency"] > 1) for p in res["profile"])
PY
if grep -q "warning: ref@t1: peak_exceeded: [0-9]* profiled nodes ran faster than the roofline" "$tmp/low.txt" &&
   grep -q "% !" "$tmp/low.txt"; then
  echo "ok   bench: efficiency above 100 % is a warning"; passed=$((passed + 1))
else
  echo "FAIL bench: efficiency above 100 % is a warning"; sed 's/^/  /' "$tmp/low.txt" | tail -5
  failed=$((failed + 1))
fi

# --no-in-place is part of what a baseline ran (recorded only when given).
"$wmap" bench --zoo mlp --backends cpu --threads 1 --blocks 1 --min-time 0.01 \
  --no-profile --no-in-place -o "$tmp/noip.json" >/dev/null 2>"$tmp/err" || cat "$tmp/err"
check "no-in-place is recorded" "$tmp/noip.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["environment"]["critical"]["run.in_place"] == "off", d["environment"]
PY
check "in place is not recorded by default" "$tmp/one.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert "run.in_place" not in d["environment"]["critical"], d["environment"]
PY
expect "bad threads" 2 "--threads wants" "$wmap" bench --zoo mlp --threads x
expect "bad blocks" 2 "--blocks wants" "$wmap" bench --zoo mlp --blocks 0
expect "no model" 2 "want one MODEL" "$wmap" bench
expect "missing file" 1 "nothing.onnx" "$wmap" bench "$tmp/nothing.onnx"
expect "unknown backend" 1 "nosuch" "$wmap" bench --zoo mlp --backends nosuch --blocks 1 --min-time 0.01
expect "unknown dim" 1 "no dim named" "$wmap" bench --zoo mlp --dim seq=3

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
