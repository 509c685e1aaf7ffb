#!/usr/bin/env bash
# wmap run --parallel on thread ranks: GPT-2 and BERT split Megatron-style
# (tp) give the outputs of one unsplit run within the peer tolerance; a
# data-parallel (dp) training step gives the weights of one rank with the
# whole batch; every collective's calls and bytes per rank are the workload
# map's prediction for the same plan. Bad --parallel usage.
# usage: parallel_test.sh WMAP
set -u
wmap=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
. "$(dirname "$0")/common.sh"
rtol=1e-3
atol=1e-4

for spec in gpt2:layers=2,seq=32 bert-base:layers=2,seq=64; do
  name=${spec%%:*}
  check "${name}_whole" 0 "$wmap" run --zoo "$spec" --values 100000000 ||
    continue
  mv "$tmp/out" "$tmp/want"
  for tp in 2 3; do
    if ! check "${name}_tp$tp" 0 "$wmap" run --zoo "$spec" \
        --parallel "tp=$tp" --values 100000000; then
      continue
    fi
    agrees "${name}_tp${tp}_agrees" "$tmp/want" "$tmp/out" "$rtol" "$atol"
    has "${name}_tp${tp}_as_the_map_predicts" "$tmp/err" \
      "parallel tp=$tp on $tp thread ranks" "AllReduce         4" \
      "as predicted"
    if grep -q DIFFERS "$tmp/err"; then
      fail "${name}_tp${tp}: a count differs from the map" "$tmp/err"
    fi
  done
done
has "bert gathers its split pooler output" "$tmp/err" "AllGather         1"

# Data parallelism: a training step's weights after 3 steps on 2 and 4
# ranks, each with its share of the batch, are those of 1 rank with the
# whole batch (the loss is each rank's share's, as DDP reports it); an
# inference's gathered outputs are the whole batch's.
train=mlp-train:batch=8,in=16,hidden=32,out=4
if check "train_whole" 0 "$wmap" run --zoo "$train" --steps 3 \
    --values 100000000; then
  grep -v '^loss:' "$tmp/out" >"$tmp/want"
  for dp in 2 4; do
    check "train_dp$dp" 0 "$wmap" run --zoo "$train" --steps 3 \
      --parallel "dp=$dp" --values 100000000 || continue
    grep -v '^loss:' "$tmp/out" >"$tmp/got"
    agrees "train_dp${dp}_weights_after_3_steps" "$tmp/want" "$tmp/got" 1e-4 1e-6
    has "train_dp${dp}_one_bucket_as_the_map_predicts" "$tmp/err" \
      "per rank per step" "AllReduce         1           6928" "as predicted"
  done
fi
if check "mlp_whole" 0 "$wmap" run --zoo mlp:batch=6 --values 100000000; then
  mv "$tmp/out" "$tmp/want"
  if check "mlp_dp3" 0 "$wmap" run --zoo mlp:batch=6 --parallel dp=3 \
      --values 100000000; then
    agrees "mlp_dp3_gathers_the_batch" "$tmp/want" "$tmp/out" "$rtol" "$atol"
    has "mlp_dp3_as_the_map_predicts" "$tmp/err" \
      "AllGather         1            240" "as predicted"
  fi
fi
check "batch that does not divide" 1 "$wmap" run --zoo mlp:batch=5 \
  --parallel dp=2
has "batch that does not divide" "$tmp/err" "batch 5, which does not divide"
check "steps without state" 1 "$wmap" run --zoo mlp --steps 2
has "steps without state" "$tmp/err" "has no output NAME.next"

# Nothing of GPT-2 divides by 5: every rank runs it whole, no collective.
# Pipeline stages (the map's): micro-batches through 2 and 3 stages, and
# GPT-2 and BERT in one micro-batch; transfers as the map predicts.
for case in "mlp:batch=4 pp=2" "mlp:batch=6 pp=3,microbatches=3" \
            "gpt2:layers=2,seq=32 pp=2,microbatches=1" \
            "bert-base:layers=2,seq=64 pp=3,microbatches=1"; do
  spec=${case% *} split=${case#* }
  name="${spec%%:*}_${split%%,*}"
  check "${name}_whole" 0 "$wmap" run --zoo "$spec" --values 100000000 ||
    continue
  mv "$tmp/out" "$tmp/want"
  check "$name" 0 "$wmap" run --zoo "$spec" --parallel "$split" \
    --values 100000000 || continue
  agrees "${name}_agrees" "$tmp/want" "$tmp/out" "$rtol" "$atol"
  has "${name}_as_the_map_predicts" "$tmp/err" "per pipeline per run" \
    "Send/Recv" "as predicted"
  if grep -q DIFFERS "$tmp/err"; then
    fail "$name: a count differs from the map" "$tmp/err"
  fi
done
check "micro-batches that do not divide" 1 "$wmap" run \
  --zoo gpt2:layers=1,seq=8 --parallel pp=2
has "micro-batches that do not divide" "$tmp/err" \
  "has batch 1, which does not divide into 2"

# bench --parallel: the split against 1 rank, strong scaling, the counts.
if check "bench tp=2" 0 "$wmap" bench --zoo bert-base:layers=1,seq=16 \
    --backends cpu --parallel tp=2 --blocks 2 --min-time 0.02 \
    --min-iters 3 -o "$tmp/bench.json"; then
  has "bench tp=2 report" "$tmp/err" "parallel tp=2 on 2 thread ranks" \
    "AllReduce         2" "as predicted" "strong scaling against 1 rank"
  has "bench tp=2 table" "$tmp/out" "1 rank" "tp=2 on 2 threads" \
    "== Scaling ==" "each in the measuring process"
  has "bench tp=2 baseline" "$tmp/bench.json" \
    '"blocks_in": "this_process"' '"label": "1 rank"'
  check "compare reads it" 0 "$wmap" compare "$tmp/bench.json" \
    "$tmp/bench.json" &&
    has "compare reads it" "$tmp/out" "tp=2 on 2 threads"
fi
check "bench pp=2" 0 "$wmap" bench --zoo mlp:batch=8 --backends cpu \
  --parallel pp=2,microbatches=4 --blocks 2 --min-time 0.01 --min-iters 3 &&
  has "bench pp=2" "$tmp/err" "parallel pp=2 on 2 thread ranks" \
    "the map's bubble 20 %" "Send/Recv" "as predicted" "strong scaling"
check "bench --parallel with two lists" 1 "$wmap" bench --zoo mlp \
  --backends cpu --backends ref --parallel tp=2
has "bench --parallel with two lists" "$tmp/err" "one backend list"

check "tp that divides nothing" 0 "$wmap" run --zoo gpt2:layers=1,seq=8 \
  --parallel tp=5 &&
  has "tp that divides nothing" "$tmp/err" \
    "0 column- and 0 row-parallel MatMuls per rank"
check "nothing to split" 2 "$wmap" run --zoo gpt2:layers=1,seq=8 \
  --parallel tp=1
has "nothing to split" "$tmp/err" "splits nothing"
check "bad spec" 2 "$wmap" run --zoo gpt2:layers=1,seq=8 --parallel tp=x
has "bad spec" "$tmp/err" "--parallel: parallel spec: tp=\"x\" is not an integer"
check "tp and dp together not yet run" 1 "$wmap" run --zoo mlp:batch=2 \
  --parallel dp=2,tp=2,pp=1
has "tp and dp together not yet run" "$tmp/err" "one of them, so far"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
