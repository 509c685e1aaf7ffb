#!/usr/bin/env bash
# The ctest python.pytest: installs the package from the source tree into a
# venv cached in the build tree, bundling that build's libwmap, plugins and
# CLI (WMAP_BUILD_DIR), and runs its pytest suite there.
#
#   run_tests.sh SOURCE_DIR BUILD_DIR VENV_DIR [PYTEST ARGS...]
#
# The venv (pytest, numpy, onnxruntime, setuptools, wheel from the package
# index) is made once, as tests/peer/peer_venv.sh makes the peer venv:
# reused when its marker is there, built under VENV_DIR.lock. Exits 77
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
packages=(pytest numpy onnxruntime setuptools wheel)

skip() {
  echo "SKIP: $*"
  if [ "${WMAP_PEER_REQUIRE:-0}" = 1 ]; then
    echo "WMAP_PEER_REQUIRE=1: failing instead of skipping"
    exit 1
  fi
  exit 77
}

venv_imports() {
  "$1/bin/python" -c 'import pytest, numpy, onnxruntime, setuptools, wheel' 2>&1
}

venv_make() {
  local marker=$venv/.wmap-python-ok start=$SECONDS log reason net
  if [ -f "$marker" ] && venv_imports "$venv" >/dev/null; then
    echo "reusing venv $venv"
    return 0
  fi
  local python=${WMAP_PEER_PYTHON:-python3}
  command -v "$python" >/dev/null 2>&1 || skip "no $python on PATH"
  rm -rf "$venv"
  log=$(mktemp)
  if ! "$python" -m venv "$venv" >"$log" 2>&1; then
    reason=$(tail -n 1 "$log")
    rm -rf "$venv" "$log"
    skip "'$python -m venv' fails (install python3-venv): $reason"
  fi
  echo "installing ${packages[*]} into $venv"
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check \
    --no-input -q --timeout 10 --retries 1 "${packages[@]}" >"$log" 2>&1; then
    reason=$(tail -n 1 "$log")
    net=$(grep -m 1 -o -e 'Failed to establish a new connection: [^'"'"']*' \
      -e 'Temporary failure in name resolution' -e 'Name or service not known' \
      -e 'Network is unreachable' -e 'timed out' "$log")
    [ -n "$net" ] && reason="$net; $reason"
    rm -rf "$venv" "$log"
    skip "pip cannot install ${packages[*]} from the package index: $reason"
  fi
  rm -f "$log"
  if ! reason=$(venv_imports "$venv"); then
    skip "the venv in $venv cannot import ${packages[*]}:" \
      "$(printf '%s\n' "$reason" | tail -n 1)"
  fi
  "$venv/bin/python" -m pip freeze --disable-pip-version-check >"$marker"
  echo "venv ready in $((SECONDS - start)) s"
}

mkdir -p "$(dirname "$venv")"
if command -v flock >/dev/null 2>&1; then
  (
    flock 9
    venv_make
  ) 9>"$venv.lock"
  rc=$?
  [ "$rc" -eq 0 ] || exit "$rc"
else
  venv_make
fi
py=$venv/bin/python

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
