#!/usr/bin/env bash
# wmap run --parallel tp=N on thread ranks: GPT-2 and BERT split
# Megatron-style give the outputs of one unsplit run within the peer
# tolerance, and every collective's calls and bytes per rank are the
# workload map's prediction for the same plan. Bad --parallel usage.
# usage: parallel_test.sh WMAP
set -u
wmap=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
. "$(dirname "$0")/common.sh"
here=$(cd "$(dirname "$0")" && pwd)
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
    if python3 "$here/compare_outputs.py" "$tmp/want" "$tmp/out" "$rtol" \
        "$atol" >"$tmp/cmp" 2>&1; then
      echo "ok   ${name}_tp${tp}_agrees ($(cat "$tmp/cmp"))"
      passed=$((passed + 1))
    else
      fail "${name}_tp${tp}_agrees" "$tmp/cmp"
    fi
    has "${name}_tp${tp}_as_the_map_predicts" "$tmp/err" \
      "parallel tp=$tp on $tp thread ranks" "AllReduce         4" \
      "as predicted"
    if grep -q DIFFERS "$tmp/err"; then
      fail "${name}_tp${tp}: a count differs from the map" "$tmp/err"
    fi
  done
done
has "bert gathers its split pooler output" "$tmp/err" "AllGather         1"

# Nothing of GPT-2 divides by 5: every rank runs it whole, no collective.
check "tp that divides nothing" 0 "$wmap" run --zoo gpt2:layers=1,seq=8 \
  --parallel tp=5 &&
  has "tp that divides nothing" "$tmp/err" \
    "0 column- and 0 row-parallel MatMuls per rank"
check "nothing to split" 2 "$wmap" run --zoo gpt2:layers=1,seq=8 \
  --parallel tp=1
has "nothing to split" "$tmp/err" "splits nothing"
check "bad spec" 2 "$wmap" run --zoo gpt2:layers=1,seq=8 --parallel tp=x
has "bad spec" "$tmp/err" "--parallel: parallel spec: tp=\"x\" is not an integer"
check "dp not yet run" 1 "$wmap" run --zoo mlp --parallel dp=2
has "dp not yet run" "$tmp/err" "tensor parallelism (tp=N) only so far"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
