#!/usr/bin/env bash
# Collectives across MPI processes (mpirun on loopback): conformance of
# every operation on 2 and 3 processes, a rank that dies and ranks that
# disagree (every survivor reports the peer, in time, and the job ends),
# GPT-2 and BERT split over 2 processes (`wmap run --parallel tp=2`), a
# data-parallel training step (`--parallel dp=2 --steps 3`), and
# `wmap comm-bench` with its peer, baseline and HTML.
# usage: mpi_test.sh WMAP MPI_RANK
set -u
wmap=$1 rank_bin=$2
if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found (install openmpi-bin)"; exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
. "$(dirname "$0")/../e2e/common.sh"

mpi=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" -eq 0 ] && mpi+=(--allow-run-as-root)
# Survivors of a dead rank must live to report it (mpirun would kill them).
mpi_keep=("${mpi[@]}" --mca orte_abort_on_non_zero_status 0)

# fails NAME CMD...: runs CMD into $tmp/out and $tmp/err; fails NAME
# unless it ends with an error before timeout's limit (mpirun's status
# depends on how the job was torn down).
fails() {
  local name=$1
  shift
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
    fail "$name: exit $rc, want a failure before the limit" "$tmp/out" \
      "$tmp/err"
    return 1
  fi
}

for np in 2 3; do
  check "conform on $np processes" 0 timeout 300 "${mpi[@]}" -np "$np" \
    "$rank_bin" conform &&
    has "conform on $np processes" "$tmp/out" "rank 0 of $np: ok" \
      "rank $((np - 1)) of $np: ok"
done

# A rank dies: the others end within the timeout, naming it.
start=$(date +%s)
if fails "dead rank" env WMAP_COMM_TIMEOUT=2 timeout 60 "${mpi_keep[@]}" \
  -np 3 "$rank_bin" dead; then
  has "dead rank: rank 0 names rank 2" "$tmp/err" \
    "rank 0: communicator mpi:world, rank 0 of 3: AllReduce of 1000 float32 (sum)" \
    "for rank 2 (WMAP_COMM_TIMEOUT)"
  has "dead rank: rank 1 names rank 2" "$tmp/err" \
    "rank 1: communicator mpi:world, rank 1 of 3: AllReduce"
fi
end=$(date +%s)
if [ $((end - start)) -lt 30 ]; then
  echo "ok   dead rank: ended in $((end - start)) s"; passed=$((passed + 1))
else
  fail "dead rank: took $((end - start)) s" "$tmp/err"
fi

fails "mismatch" timeout 60 "${mpi[@]}" -np 2 "$rank_bin" mismatch &&
  has "mismatch: each rank names the other's call" "$tmp/err" \
  "rank 0: communicator mpi:world, rank 0 of 2: AllReduce of 1000 float32 (sum), call 1: ranks disagree: rank 1 called Broadcast of 1000 float32 from rank 0" \
  "rank 1: communicator mpi:world, rank 1 of 2: Broadcast of 1000 float32 from rank 0, call 1: ranks disagree: rank 0 called AllReduce"

# Tensor parallelism across processes: the outputs of one unsplit run, and
# calls and bytes per rank as the map predicts.
for spec in gpt2:layers=2,seq=32 bert-base:layers=2,seq=64; do
  name=${spec%%:*}
  check "$name whole" 0 "$wmap" run --zoo "$spec" --values 100000000 ||
    continue
  mv "$tmp/out" "$tmp/want"
  check "$name tp=2 on 2 processes" 0 timeout 300 "${mpi[@]}" -np 2 "$wmap" \
    run --zoo "$spec" --parallel tp=2 --values 100000000 || continue
  agrees "$name tp=2 agrees" "$tmp/want" "$tmp/out" 1e-3 1e-4
  has "$name tp=2 as the map predicts" "$tmp/err" \
    "parallel tp=2 on 2 MPI processes" "AllReduce         4" "as predicted"
  if grep -q DIFFERS "$tmp/err"; then
    fail "$name tp=2: a count differs from the map" "$tmp/err"
  fi
done

# Pipeline stages across processes: 2 micro-batches through 2 stages.
if check "mlp whole" 0 "$wmap" run --zoo mlp:batch=4 --values 100000000; then
  mv "$tmp/out" "$tmp/want"
  if check "mlp pp=2 on 2 processes" 0 timeout 300 "${mpi[@]}" -np 2 \
      "$wmap" run --zoo mlp:batch=4 --parallel pp=2 --values 100000000; then
    agrees "mlp pp=2 agrees" "$tmp/want" "$tmp/out" 1e-3 1e-4
    has "mlp pp=2 as the map predicts" "$tmp/err" \
      "parallel pp=2 on 2 MPI processes" "Send/Recv" "as predicted"
  fi
fi

# A data-parallel training step across processes: after 3 steps the
# weights of 1 process with the whole batch.
train=mlp-train:batch=8,in=16,hidden=32,out=4
if check "train whole" 0 "$wmap" run --zoo "$train" --steps 3 \
    --values 100000000; then
  grep -v '^loss:' "$tmp/out" >"$tmp/want"
  if check "train dp=2 on 2 processes" 0 timeout 300 "${mpi[@]}" -np 2 \
      "$wmap" run --zoo "$train" --steps 3 --parallel dp=2 \
      --values 100000000; then
    grep -v '^loss:' "$tmp/out" >"$tmp/got"
    agrees "train dp=2: weights after 3 steps" "$tmp/want" "$tmp/got" 1e-4 1e-6
    has "train dp=2 as the map predicts" "$tmp/err" \
      "parallel dp=2 on 2 MPI processes" "AllReduce         1" "as predicted"
  fi
fi

# bench --parallel across processes: 1 rank on process 0 against 2.
check "bench tp=2 on 2 processes" 0 timeout 300 "${mpi[@]}" -np 2 "$wmap" \
  bench --zoo bert-base:layers=1,seq=16 --backends cpu --parallel tp=2 \
  --blocks 2 --min-time 0.02 --min-iters 3 &&
  has "bench tp=2 on 2 processes" "$tmp/err" \
    "parallel tp=2 on 2 MPI processes" "as predicted" "strong scaling"

# comm-bench with MPI's own collectives as the peer, checked results.
check "comm-bench under mpirun" 0 timeout 300 "${mpi[@]}" -np 2 "$wmap" \
  comm-bench --ops allreduce,allgather,reducescatter,broadcast \
  --sizes 8,64K,1M --blocks 2 --min-time 0.005 --format json \
  -o "$tmp/base.json" --html "$tmp/cb.html" &&
  python3 - "$tmp/out" >"$tmp/py" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "wmap.comm-bench/1", d["schema"]
rows = d["rows"]
impls = {r["impl"] for r in rows}
assert impls == {"threads", "mpi", "mpi-native"}, impls
assert len(rows) == 4 * 3 * 3, len(rows)
for r in rows:
    assert r["check"] == "ok", r
    assert r["p50_us"] > 0 and r["busbw_gbs"] > 0, r
    n = r["ranks"]
    f = {"allreduce": 2 * (n - 1) / n, "broadcast": 1}.get(r["op"], (n - 1) / n)
    assert abs(r["busbw_gbs"] - r["algbw_gbs"] * f) < 1e-3 * r["busbw_gbs"] + 1e-9, r
print("ok")
PY
if [ -f "$tmp/py" ]; then has "comm-bench json rows" "$tmp/py" "ok"; fi

# Under mpirun's default binding (a core a process) the thread ranks are
# given every core: no warning.
mpi_bound=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpi_bound+=(--allow-run-as-root)
if check "comm-bench under default binding" 0 timeout 120 \
    "${mpi_bound[@]}" -np 2 "$wmap" comm-bench --sizes 1M --blocks 1 \
    --min-time 0.005; then
  if grep -q "could not be given more" "$tmp/err"; then
    fail "comm-bench under default binding: thread ranks kept on one core" \
      "$tmp/err"
  else
    echo "ok   comm-bench under default binding"
    passed=$((passed + 1))
  fi
fi
if [ -s "$tmp/base.json" ]; then
  check "compare reads the comm-bench baseline" 0 "$wmap" compare \
    "$tmp/base.json" "$tmp/base.json" &&
    has "compare reads the comm-bench baseline" "$tmp/out" \
      "threads allreduce 1M" "mpi-native broadcast 64K"
  has "comm-bench html has the curves" "$tmp/cb.html" "<polyline" \
    "busbw (GB/s)" "mpi-native"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
