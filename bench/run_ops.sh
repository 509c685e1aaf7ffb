#!/bin/sh
# Runs the operator benchmark (bench/README.md) with OpenBLAS left to detect
# the core itself: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset for this
# command only. Usage: bench/run_ops.sh [BUILD_DIR] [wmap_ops_bench options]
# BUILD_DIR defaults to build/ next to this folder.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
[ $# -gt 0 ] && shift
exe=$build/bench/wmap_ops_bench
if [ ! -x "$exe" ]; then
  echo "run_ops.sh: $exe not found; build it with" \
       "cmake --build $build --target wmap_ops_bench" >&2
  exit 1
fi
exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$exe" "$@"
