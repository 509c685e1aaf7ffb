#!/usr/bin/env bash
# wmap comm-bench without mpirun: the threads implementation on 2 and 3
# ranks with every operation checked, the JSON rows and bus bandwidth
# factors, the baseline compare reads, and bad usage.
# usage: comm_bench_test.sh WMAP
set -u
wmap=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
. "$(dirname "$0")/common.sh"

for n in 2 3; do
  check "comm-bench $n thread ranks" 0 "$wmap" comm-bench --ranks "$n" \
    --ops allreduce,allgather,reducescatter,broadcast --sizes 96,192K,3M \
    --blocks 2 --min-time 0.002 --format json -o "$tmp/b$n.json" &&
    python3 - "$tmp/out" "$n" >"$tmp/py" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
assert d["schema"] == "wmap.comm-bench/1" and d["ranks"] == n, d
rows = d["rows"]
assert len(rows) == 12, len(rows)
algos = set()
for r in rows:
    assert r["impl"] == "threads" and r["check"] == "ok", r
    f = {"allreduce": 2 * (n - 1) / n, "broadcast": 1}.get(r["op"], (n - 1) / n)
    assert abs(r["bus_factor"] - f) < 1e-6, r
    assert abs(r["algbw_gbs"] * 1e3 * r["p50_us"] / r["size"] - 1) < 1e-3, r
    algos.add(r["algo"])
assert algos == {"direct", "ring"}, algos
print("ok")
PY
  has "comm-bench $n thread ranks: rows" "$tmp/py" "ok"
done

check "text table" 0 "$wmap" comm-bench --sizes 1K:4K --blocks 1 \
  --min-time 0.001 --dtype bfloat16 --redop max --algo ring
has "text table" "$tmp/out" "AllReduce (max)" "bfloat16" "ring" "1K" "2K" \
  "4K" "busbw GB/s"

check "compare reads a comm-bench baseline" 0 "$wmap" compare \
  "$tmp/b2.json" "$tmp/b3.json" --force
has "compare reads a comm-bench baseline" "$tmp/out" "threads allreduce 3M"

check "no collective tier" 1 "$wmap" comm-bench --backend ref --sizes 8
has "no collective tier" "$tmp/err" "backend ref has no collective tier"
check "mpi without mpirun" 2 "$wmap" comm-bench --impl mpi-native
has "mpi without mpirun" "$tmp/err" "need the job started by mpirun"
check "unknown op" 2 "$wmap" comm-bench --ops allsum
has "unknown op" "$tmp/err" "--ops: unknown \"allsum\""
check "bad sizes" 2 "$wmap" comm-bench --sizes 4M:1K
has "bad sizes" "$tmp/err" "--sizes \"4M:1K\""
check "avg on ints" 2 "$wmap" comm-bench --dtype int32 --redop avg
has "avg on ints" "$tmp/err" "--redop avg does not apply to int32"
check "help" 0 "$wmap" comm-bench --help
has "help" "$tmp/out" "busbw = algbw x 2(n-1)/n" "mpirun -np N wmap comm-bench"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
