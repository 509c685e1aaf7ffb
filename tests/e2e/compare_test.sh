#!/bin/bash
# End-to-end tests of `wmap compare`: small baselines written here (one
# sample per block), the verdicts, --force, --fail-on, the JSON and HTML
# reports, files that are missing or not baselines, and bad usage.
# Usage: compare_test.sh WMAP_BINARY
wmap=$1
here=$(dirname "$0")
. "$here/expect.sh"
if ! command -v python3 >/dev/null; then
  echo "skip: python3 is needed to read the JSON reports"
  exit 77
fi

# baseline FILE CPU LABEL MEDIAN_NS... writes a wmap.baseline/1 file with one
# configuration LABEL measured on CPU: one block of one sample per median.
baseline() {
  local file=$1 cpu=$2 label=$3
  shift 3
  local fp blocks="" samples="" k=0 m
  fp=$(printf 'cpu.model=%s\n' "$cpu" | sha256sum | cut -c1-64)
  for m in "$@"; do
    if [ $k -gt 0 ]; then blocks+=", "; samples+=", "; fi
    blocks+="{\"index\": $k, \"order\": $k, \"n\": 1, \"median_ns\": $m,"
    blocks+=" \"mean_ns\": $m, \"min_ns\": $m, \"max_ns\": $m}"
    samples+="[$m]"
    k=$((k + 1))
  done
  local results
  results=$(cat <<EOF
{"latency": {"n": $k, "min_ns": $1, "max_ns": $1, "mean_ns": $1, "sd_ns": 0,
  "cv": 0, "median_ns": $1, "mad_ns": 0, "iqr_ns": 0, "p50_ns": $1, "p90_ns": $1,
  "p95_ns": $1, "p99_ns": $1, "p999_ns": $1,
  "supported": {"p90": false, "p95": false, "p99": false, "p999": false},
  "outliers": {"mild": 0, "severe": 0}},
 "blocks": [$blocks],
 "samples_ns": [$samples],
 "throughput": {"inferences_per_s": 1000, "gflops": 0},
 "scaling": null, "warnings": [], "profile": null, "profile_by_type": null}
EOF
  )
  cat >"$file" <<EOF
{"format": "wmap.baseline/1", "created_utc": "2026-12-02T15:04:05Z",
 "tool": {"name": "wmap", "version": "0.1.0", "git": "e66adca",
          "build_type": "Release"},
 "model": {"name": "mlp", "sha256": "00", "dims": {}, "flops": 0},
 "method": {"blocks": $k, "min_time_s": 1, "min_iters": 10, "warmup": "-",
            "percentile": "nearest_rank", "interleaved": true, "unit": "ns"},
 "environment": {"fingerprint": "$fp",
                 "critical": {"cpu.model": "$cpu", "os.kernel": "6.1.0"},
                 "volatile": {"load.avg1": "0.50"}},
 "configurations": [{"label": "$label", "backends": ["cpu"], "threads": 1,
   "backend_versions": {"cpu": "0.1.0"}, "results": $results}],
 "results": $results}
EOF
}

cpu="Test CPU"
baseline "$tmp/base.json" "$cpu" cpu@t1 1000000 1010000 990000 1005000 995000 \
  1002000 998000 1007000 993000 1001000
baseline "$tmp/same.json" "$cpu" cpu@t1 1003000 996000 1008000 992000 1001000 \
  999000 1004000 997000 1006000 994000
baseline "$tmp/slow.json" "$cpu" cpu@t1 1300000 1313000 1287000 1306500 1293500 \
  1302600 1297400 1309100 1290900 1301300
baseline "$tmp/fast.json" "$cpu" cpu@t1 700000 707000 693000 703500 696500 \
  701400 698600 704900 695100 700700
baseline "$tmp/short.json" "$cpu" cpu@t1 1300000 1313000 1287000
baseline "$tmp/ref.json" "$cpu" ref@t1 3000000 3030000 2970000 3015000 2985000 \
  3006000 2994000 3021000 2979000 3003000
baseline "$tmp/other.json" "Other CPU" cpu@t1 1300000 1313000 1287000 1306500 \
  1293500 1302600 1297400 1309100 1290900 1301300
baseline "$tmp/zero.json" "$cpu" cpu@t1 0 1 2 3 4

# Verdicts.
expect "same distribution: no change" 0 "overall: no_change" \
  "$wmap" compare "$tmp/base.json" "$tmp/same.json"
expect "a file against itself: no change" 0 "+0.0%" \
  "$wmap" compare "$tmp/base.json" "$tmp/base.json" --fail-on changed
expect "30% slower: regressed" 0 "overall: regressed" \
  "$wmap" compare "$tmp/base.json" "$tmp/slow.json"
expect "30% faster: improved" 0 "overall: improved" \
  "$wmap" compare "$tmp/base.json" "$tmp/fast.json"
expect "3 blocks: insufficient data" 0 "overall: insufficient_data" \
  "$wmap" compare "$tmp/base.json" "$tmp/short.json"
expect "a wide noise band: within noise" 0 "overall: within_noise" \
  "$wmap" compare "$tmp/base.json" "$tmp/slow.json" --noise 50%
expect "labels differ: pair in order" 0 "ref@t1 -> cpu@t1 p50" \
  "$wmap" compare "$tmp/ref.json" "$tmp/base.json"
expect "critical difference: incomparable, exit 1" 1 \
  "incomparable: critical fields differ: cpu.model (base \"Test CPU\", new \"Other CPU\")" \
  "$wmap" compare "$tmp/base.json" "$tmp/other.json"
"$wmap" compare "$tmp/base.json" "$tmp/other.json" >"$tmp/i.txt" 2>/dev/null
if grep -q "overall: incomparable: critical fields differ: cpu.model (use --force)" "$tmp/i.txt" &&
   grep -q "! cpu.model" "$tmp/i.txt"; then
  echo "ok   incomparable still writes the report"; passed=$((passed + 1))
else
  echo "FAIL incomparable report"; sed 's/^/  /' "$tmp/i.txt"; failed=$((failed + 1))
fi
expect "--force compares anyway" 0 "overall: regressed" \
  "$wmap" compare "$tmp/base.json" "$tmp/other.json" --force

# The CI gate.
expect "--fail-on regressed trips" 3 "overall verdict regressed" \
  "$wmap" compare "$tmp/base.json" "$tmp/slow.json" --fail-on regressed
expect "--fail-on regressed passes no change" 0 "no_change" \
  "$wmap" compare "$tmp/base.json" "$tmp/same.json" --fail-on regressed
expect "--fail-on regressed passes an improvement" 0 "improved" \
  "$wmap" compare "$tmp/base.json" "$tmp/fast.json" --fail-on regressed
expect "--fail-on changed trips on an improvement" 3 "overall verdict improved" \
  "$wmap" compare "$tmp/base.json" "$tmp/fast.json" --fail-on changed

# Reports.
"$wmap" compare "$tmp/base.json" "$tmp/slow.json" --color never >"$tmp/t.txt"
if awk 'length($0) > 100 { bad = 1 } END { exit bad }' "$tmp/t.txt" &&
   ! grep -q $'\033' "$tmp/t.txt" && grep -q "change \[95% CI\]" "$tmp/t.txt"; then
  echo "ok   text fits 100 columns, no colour unless asked"; passed=$((passed + 1))
else
  echo "FAIL text report"; sed 's/^/  /' "$tmp/t.txt"; failed=$((failed + 1))
fi
expect "colour on demand" 0 $'\033[31mregressed' \
  "$wmap" compare "$tmp/base.json" "$tmp/slow.json" --color always
expect "json to a file" 0 "" "$wmap" compare "$tmp/base.json" "$tmp/slow.json" \
  --format json -o "$tmp/c.json" --seed 7 --resamples 2000 --alpha 0.01
if python3 - "$tmp/c.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "wmap.compare/1", d["format"]
assert d["base"].endswith("base.json") and d["new"].endswith("slow.json")
m = d["method"]
assert m["test"] == "mann_whitney_u" and m["correction"] == "holm", m
assert m["alpha"] == 0.01 and m["resamples"] == 2000 and m["seed"] == 7, m
assert m["noise_threshold"] == 0.05, m
assert d["env_diff"] == [], d["env_diff"]
(x,) = d["metrics"]
assert x["name"] == "cpu@t1 vs cpu@t1: p50", x["name"]
assert x["base_ns"] == 1000000 and x["new_ns"] == 1300000, x  # 5th of 10
assert abs(x["ratio"] - 1.3) < 1e-9 and x["ci_lo"] > 0.05, x
assert x["u"] == 0 and x["exact"] is True and x["n_base"] == 10, x
assert abs(x["p_value"] / (2 / 184756) - 1) < 1e-5, x["p_value"]
assert x["verdict"] == "regressed" and d["overall"]["verdict"] == "regressed"
assert abs(d["overall"]["geomean_ratio"] - 1.3) < 1e-9
PY
then echo "ok   json report"; passed=$((passed + 1))
else echo "FAIL json report"; failed=$((failed + 1)); fi
"$wmap" compare "$tmp/base.json" "$tmp/other.json" --format json >"$tmp/i.json" 2>/dev/null
if python3 - "$tmp/i.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["overall"]["verdict"] == "incomparable", d["overall"]
crit = [e for e in d["env_diff"] if e["severity"] == "critical"]
assert [e["field"] for e in crit] == ["cpu.model", "fingerprint"] or \
       [e["field"] for e in crit] == ["cpu.model"], crit
assert crit[0]["base"] == "Test CPU" and crit[0]["new"] == "Other CPU", crit
PY
then echo "ok   json report of an incomparable pair"; passed=$((passed + 1))
else echo "FAIL json report of an incomparable pair"; failed=$((failed + 1)); fi
expect "html to a file" 0 "" "$wmap" compare "$tmp/base.json" "$tmp/slow.json" \
  --format html -o "$tmp/c.html"
if head -c 15 "$tmp/c.html" | grep -qi "<!doctype html" &&
   grep -q "<svg class=\"forest\"" "$tmp/c.html" && grep -q "noise band" "$tmp/c.html"; then
  echo "ok   html page with the forest plot"; passed=$((passed + 1))
else
  echo "FAIL html page"; failed=$((failed + 1))
fi

# Files that are missing or not baselines.
echo '{"format": "wmap.map/1"}' >"$tmp/map.json"
echo '{"format": ' >"$tmp/broken.json"
expect "missing file is named" 1 "$tmp/missing.json" \
  "$wmap" compare "$tmp/base.json" "$tmp/missing.json"
expect "not JSON" 1 "baseline \"$tmp/broken.json\": not valid JSON" \
  "$wmap" compare "$tmp/broken.json" "$tmp/base.json"
expect "not a baseline" 1 "want \"wmap.baseline/1\"" \
  "$wmap" compare "$tmp/base.json" "$tmp/map.json"
expect "unwritable output" 1 "$tmp/no/such/dir/c.txt" \
  "$wmap" compare "$tmp/base.json" "$tmp/slow.json" -o "$tmp/no/such/dir/c.txt"
expect "a block median of 0" 1 "new \"$tmp/zero.json\": configuration \"cpu@t1\" block 0" \
  "$wmap" compare "$tmp/base.json" "$tmp/zero.json"
# A stated block figure its samples do not give, an absurd time, a file
# with a key twice, text after the JSON and things that are not files.
sed 's/"median_ns": 1010000,/"median_ns": 5000,/' "$tmp/base.json" >"$tmp/lied.json"
expect "a block median its samples do not give" 1 \
  "baseline \"$tmp/lied.json\": configuration \"cpu@t1\" block 1: median_ns is 5000 but its 1 samples give 1010000" \
  "$wmap" compare "$tmp/base.json" "$tmp/lied.json"
sed 's/\[1010000\]/[1e308]/; s/"median_ns": 1010000, "mean_ns": 1010000, "min_ns": 1010000, "max_ns": 1010000/"median_ns": 1e308, "mean_ns": 1e308, "min_ns": 1e308, "max_ns": 1e308/' \
  "$tmp/base.json" >"$tmp/absurd.json"
expect "a 1e308 ns time is refused" 1 \
  "configurations[0].results.blocks[1].median_ns is 1e+308, want at most 9007199254740992" \
  "$wmap" compare "$tmp/base.json" "$tmp/absurd.json"
sed 's/"unit": "ns"}/"unit": "ns", "blocks": 1}/' "$tmp/base.json" >"$tmp/twice.json"
expect "a key twice is refused" 1 \
  "baseline \"$tmp/twice.json\": key \"blocks\" appears twice in method" \
  "$wmap" compare "$tmp/base.json" "$tmp/twice.json"
{ cat "$tmp/base.json"; echo '{}'; } >"$tmp/trailing.json"
expect "text after the baseline is refused" 1 \
  "baseline \"$tmp/trailing.json\": text after the JSON value" \
  "$wmap" compare "$tmp/base.json" "$tmp/trailing.json"
expect "a folder is not a baseline" 1 "baseline: \"$tmp\" is a directory, not a regular file" \
  "$wmap" compare "$tmp/base.json" "$tmp"
mkfifo "$tmp/fifo"
expect "a FIFO is refused at once" 1 "baseline: \"$tmp/fifo\" is a FIFO (named pipe), not a regular file" \
  timeout 10 "$wmap" compare "$tmp/base.json" "$tmp/fifo"

# Usage errors.
expect "help" 0 "usage: wmap compare BASE.json NEW.json" "$wmap" compare --help
expect "no files" 2 "want two baseline files" "$wmap" compare
expect "one file" 2 "got 1" "$wmap" compare "$tmp/base.json"
expect "bad --noise" 2 "--noise wants" \
  "$wmap" compare "$tmp/base.json" "$tmp/slow.json" --noise lots
expect "bad --alpha" 2 "--alpha wants" \
  "$wmap" compare "$tmp/base.json" "$tmp/slow.json" --alpha 1.5
expect "bad --resamples" 2 "--resamples wants" \
  "$wmap" compare "$tmp/base.json" "$tmp/slow.json" --resamples 5
expect "bad --seed" 2 "--seed wants" \
  "$wmap" compare "$tmp/base.json" "$tmp/slow.json" --seed -1
expect "bad --format" 2 "--format wants text, json or html" \
  "$wmap" compare "$tmp/base.json" "$tmp/slow.json" --format pdf
expect "bad --fail-on" 2 "--fail-on wants regressed or changed" \
  "$wmap" compare "$tmp/base.json" "$tmp/slow.json" --fail-on slower
expect "bad --color" 2 "--color wants" \
  "$wmap" compare "$tmp/base.json" "$tmp/slow.json" --color sometimes
expect "unknown option" 2 "Try 'wmap compare --help'" \
  "$wmap" compare "$tmp/base.json" "$tmp/slow.json" --frobnicate

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
