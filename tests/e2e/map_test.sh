#!/bin/bash
# End-to-end tests of `wmap map`: published figures of the zoo in JSON,
# every format, an unmappable model, bad usage. Peaks come from a fixed
# file so that nothing is measured.
# Usage: map_test.sh WMAP_BINARY SOURCE_DIR
wmap=$1
src=$2
here=$(dirname "$0")
. "$here/expect.sh"
peaks="$here/map_peaks.json"
if ! command -v python3 >/dev/null; then
  echo "skip: python3 is needed to read the JSON reports"
  exit 77
fi

# totals.params exact, totals.macs within the tolerance (torchvision).
check_totals() {
  local spec=$1 params=$2 gmacs=$3 tol=$4
  "$wmap" map --zoo "$spec" --peaks "$peaks" --format json -o "$tmp/$spec.json" 2>"$tmp/err"
  if python3 - "$tmp/$spec.json" "$params" "$gmacs" "$tol" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["totals"]
assert d["format"] == "wmap.map/1", d["format"]
assert t["params"] == int(sys.argv[2]), t["params"]
want = float(sys.argv[3]) * 1e9
assert abs(t["macs"] - want) <= float(sys.argv[4]) * want, t["macs"]
assert t["weight_bytes"] >= 4 * t["params"]
assert t["peak_activation_bytes"] > 0
assert len(d["nodes"]) == t["nodes"] and t["unmapped"] == 0
names = [b["name"] for b in d["backends"]]
assert "ref" in names, names
for b in d["backends"]:
    assert b["nodes_covered"] + b["coverage"]["fallback"] + b["coverage"]["missing"] == t["nodes"]
if "cpu" in names:
    cpu = d["backends"][names.index("cpu")]
    # Conv runs on the cpu backend's own GEMM engine: a native kernel.
    assert cpu["coverage"]["native"] > 0, cpu["coverage"]
    conv = [n for n in d["nodes"] if n["op_type"] == "Conv"]
    assert conv and all(n["backends"][names.index("cpu")]["cover"] == "native" for n in conv)
cp = d["critical_path"]
assert 0 < cp["length_s"] <= cp["total_s"] * (1 + 1e-9)
PY
  then echo "ok   totals of $spec"; passed=$((passed + 1))
  else echo "FAIL totals of $spec"; failed=$((failed + 1)); fi
}
check_totals resnet50 25557032 4.09 0.01
check_totals resnet18 11689512 1.81 0.01
check_totals mobilenetv2 3504872 0.30 0.02

expect "text report" 0 "11,689,512" "$wmap" map --zoo resnet18 --peaks "$peaks"
"$wmap" map --zoo bert-base:layers=2,seq=32 --peaks "$peaks" --color never >"$tmp/bert.txt"
if awk 'length($0) > 100 { bad = 1 } END { exit bad }' "$tmp/bert.txt" &&
   ! grep -q $'\033' "$tmp/bert.txt"; then
  echo "ok   text fits 100 columns, no colour off a terminal"; passed=$((passed + 1))
else
  echo "FAIL text wider than 100 columns or coloured"; failed=$((failed + 1))
fi
expect "colour on demand" 0 $'\033[' "$wmap" map --zoo mlp --peaks "$peaks" --color always
expect "markdown" 0 "| op type" "$wmap" map --zoo mlp --peaks "$peaks" --format md
expect "html to a file" 0 "" "$wmap" map --zoo mlp --peaks "$peaks" --format html -o "$tmp/m.html"
if head -c 15 "$tmp/m.html" | grep -qi "<!doctype html" && grep -q "<svg" "$tmp/m.html"; then
  echo "ok   html page with svg"; passed=$((passed + 1))
else
  echo "FAIL html page"; failed=$((failed + 1))
fi
expect "parallel plan" 0 "AllReduce" "$wmap" map --zoo bert-base:layers=2,seq=32 \
  --peaks "$peaks" --parallel dp=2,tp=2 --format json

# A model that cannot be fully mapped still gets a map, with notes.
model="$here/unmappable.onnx"
expect "unmappable model is mapped" 0 "dims: batch=1" "$wmap" map "$model" --peaks "$peaks"
if grep -qF "note: 1 unbound dim set to 1: batch" "$tmp/err"; then
  echo "ok   unbound dim noted"; passed=$((passed + 1))
else
  echo "FAIL unbound dim noted:"; head -3 "$tmp/err"; failed=$((failed + 1))
fi
"$wmap" map "$model" --peaks "$peaks" --dim batch=8 --format json -o "$tmp/u.json"
if python3 - "$tmp/u.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
st = {n["name"]: n["state"] for n in d["nodes"]}
assert st == {"proj": "ok", "act": "ok", "fancy": "unknown op", "gate": "unknown shape"}, st
assert d["dims"] == {"batch": 8}, d["dims"]
assert d["totals"]["macs"] == 8 * 64 * 16 and d["totals"]["unmapped"] == 2
assert any("2 of 4 nodes could not be mapped" in n for n in d["notes"]), d["notes"]
todo = {t["op_type"] for b in d["backends"] for t in b["to_write"]}
assert "FancyNorm" in todo, todo
PY
then echo "ok   unmappable model: marked nodes, the rest mapped"; passed=$((passed + 1))
else echo "FAIL unmappable model"; failed=$((failed + 1)); fi

# The per-node table (CSV) and the graph (dot): every node, every edge.
if "$wmap" map --zoo resnet18 --peaks "$peaks" --backends cpu,ref \
    --format json >"$tmp/r18.json" 2>/dev/null &&
   "$wmap" map --zoo resnet18 --peaks "$peaks" --backends cpu,ref \
    --format csv >"$tmp/r18.csv" 2>/dev/null &&
   "$wmap" map --zoo resnet18 --peaks "$peaks" --backends cpu,ref \
    --format dot >"$tmp/r18.dot" 2>/dev/null &&
   python3 - "$tmp/r18.json" "$tmp/r18.csv" "$tmp/r18.dot" <<'PY'
import csv, json, re, sys
d = json.load(open(sys.argv[1]))
rows = list(csv.reader(open(sys.argv[2], newline="")))
head, body = rows[0], rows[1:]
assert len(body) == len(d["nodes"]) == 69, (len(body), len(d["nodes"]))
assert all(len(r) == len(head) for r in body)
assert head[-3:] == ["ref.cover", "ref.t_roof_s", "ref.bound"], head[-3:]
conv = body[0]
assert conv[3] == "Conv" and conv[6].startswith("float[1,3,224,224]"), conv
assert float(conv[9]) == d["nodes"][0]["flops"], (conv[9], d["nodes"][0])
assert sum(r[16] == "true" for r in body) >= 1
dot = open(sys.argv[3]).read()
assert dot.startswith('digraph "resnet18" {') and dot.rstrip().endswith("}")
assert len(re.findall(r"^  n\d+ \[label=", dot, re.M)) == 69
edges = len(re.findall(r"^  n\d+ -> n\d+", dot, re.M))
assert edges == 69 - 1 + 8, edges  # a chain plus each residual's second input
assert 'color="#d62728"' in dot
PY
then echo "ok   csv and dot: every node and edge"; passed=$((passed + 1))
else echo "FAIL csv and dot"; failed=$((failed + 1)); fi

# Bad input: a message naming the object, a non-zero exit.
expect "missing file" 1 "nothing.onnx" "$wmap" map "$tmp/nothing.onnx" --peaks "$peaks"
expect "no model" 2 "want one MODEL" "$wmap" map
expect "model and zoo" 2 "exclusive" "$wmap" map "$model" --zoo mlp
expect "bad format" 2 "--format wants" "$wmap" map --zoo mlp --format pdf
expect "bad dim" 2 "--dim batch wants" "$wmap" map "$model" --dim batch=x
expect "unknown dim" 1 "no dim named \"seq\"" "$wmap" map "$model" --peaks "$peaks" --dim seq=3
expect "bad parallel" 2 "--parallel" "$wmap" map --zoo mlp --parallel dp=0
expect "unknown critical backend" 1 "--critical gpu" "$wmap" map --zoo mlp --peaks "$peaks" --critical gpu
expect "bad peaks file" 1 "$model" "$wmap" map --zoo mlp --peaks "$model"
expect "unknown zoo model" 1 "nosuchnet" "$wmap" map --zoo nosuchnet --peaks "$peaks"

# Each backend's roof is its own GEMM: ref's naive loops are not mapped at
# the cpu backend's peak; the map at 1 thread takes the 1-thread figures.
python3 - "$peaks" "$tmp/own.json" "$tmp/bad_gemm.json" "$tmp/neg.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ref = [b for b in d["backends"] if b["name"] == "ref"][0]
ref["gemm_gflops_fp32"] = {"1": 2.5, "all": 3}
ref["gemm_n"] = 256
json.dump(d, open(sys.argv[2], "w"))
cpu = [b for b in d["backends"] if b["name"] == "cpu"][0]
cpu["gemm_gflops_fp32"] = {"1": 200, "all": 500}
json.dump(d, open(sys.argv[3], "w"))
cpu["gemm_gflops_fp32"] = {"1": 200, "all": 400}
d["host"]["triad_gbs"]["all"] = -40
json.dump(d, open(sys.argv[4], "w"))
PY
"$wmap" map --zoo mlp --peaks "$tmp/own.json" --backends cpu,ref --format json -o "$tmp/own_map.json" 2>"$tmp/err" ||
  cat "$tmp/err"
"$wmap" map --zoo mlp --peaks "$tmp/own.json" --backends cpu,ref --threads 1 --format json \
  -o "$tmp/own_map1.json" 2>"$tmp/err" || cat "$tmp/err"
if python3 - "$tmp/own_map.json" "$tmp/own_map1.json" <<'PY' >"$tmp/py" 2>&1; then
import json, sys
def peaks(path):
    return {b["name"]: b for b in json.load(open(path))["backends"]}
m, m1 = peaks(sys.argv[1]), peaks(sys.argv[2])
assert m["ref"]["peak_gflops"] == 3 and m["cpu"]["peak_gflops"] == 400, m
assert m["ref"]["bandwidth_gbs"] == 40 and m["ref"]["peak_threads"] == 0, m
assert m1["ref"]["peak_gflops"] == 2.5 and m1["cpu"]["peak_gflops"] == 200, m1
assert m1["cpu"]["bandwidth_gbs"] == 30 and m1["cpu"]["peak_threads"] == 1, m1
PY
  echo "ok   ref has its own roof, peaks at the thread count"; passed=$((passed + 1))
else
  echo "FAIL ref has its own roof, peaks at the thread count"; sed 's/^/  /' "$tmp/py" | tail -5
  failed=$((failed + 1))
fi
expect "peaks file with a GEMM above the FMA peak" 1 \
  "peaks file \"$tmp/bad_gemm.json\": backend \"cpu\": GEMM 500.0 GFLOP/s at all cores exceeds the FMA peak 448.0 GFLOP/s" \
  "$wmap" map --zoo mlp --peaks "$tmp/bad_gemm.json"
expect "peaks file with a negative bandwidth" 1 \
  "field \"host\": \"triad_gbs\" \"all\" is -40, want a finite number >= 0" \
  "$wmap" map --zoo mlp --peaks "$tmp/neg.json"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
