#!/usr/bin/env bash
# The ctest python.pytest: installs the package from the source tree into a
# venv cached in the build tree, bundling that build's libwmap, plugins and
# CLI (WMAP_BUILD_DIR), and runs its pytest suite there.
#
#   run_tests.sh SOURCE_DIR BUILD_DIR VENV_DIR [PYTEST ARGS...]
#
# The venv (pytest, numpy, onnxruntime, setuptools, wheel from the package
# index) is made once by tests/peer/peer_venv.sh: reused when its marker is
# there, built under VENV_DIR.lock. Exits 77
# (skip) with a reason when it cannot be made (no 'python3 -m venv', the
# package index out of reach); WMAP_PEER_REQUIRE=1 makes that a failure.
# The package is reinstalled on every run (no network: --no-deps
# --no-build-isolation), from a copy of python/ in the build tree so the
# source tree gets no build files.
set -u
src=$1
build=$2
venv=$3
shift 3
# shellcheck source=../tests/peer/peer_venv.sh
. "$src/tests/peer/peer_venv.sh"
peer_venv "$venv" pytest numpy onnxruntime setuptools wheel

[ -f "$build/libwmap.so" ] || { echo "FAIL: no $build/libwmap.so"; exit 1; }
copy=$build/python-src
rm -rf "$copy"
mkdir -p "$copy"
cp -R "$src/python/wmap" "$src/python/pyproject.toml" "$src/python/setup.py" \
  "$src/python/README.md" "$copy/"
rm -rf "$copy/wmap/_lib" "$copy/wmap/__pycache__"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! WMAP_BUILD_DIR=$build "$py" -m pip install --disable-pip-version-check \
  --no-input -q --no-deps --no-build-isolation --force-reinstall "$copy" \
  >"$log" 2>&1; then
  echo "FAIL: pip install of the package from $copy:"
  cat "$log"
  exit 1
fi
"$py" -c 'import sys, numpy, onnxruntime, wmap
print("python %s, numpy %s, onnxruntime %s, wmap %s from %s (%s)" % (
    sys.version.split()[0], numpy.__version__, onnxruntime.__version__,
    wmap.__version__, wmap.library_path, wmap.library_origin))' || exit 1

# From a folder outside the source tree: `import wmap` is the installed one.
cd "$build" || exit 1
WMAP_SOURCE_DIR=$src WMAP_BUILD_DIR=$build WMAP_TEST_EXPECT_BUNDLED=1 \
  exec "$py" -m pytest -p no:cacheprovider -rs -s -q "$src/python/tests" "$@"
