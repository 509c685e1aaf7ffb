#!/usr/bin/env bash
# Installs the build into a fresh prefix and uses it as a new user would:
# the files are where the docs say, libwmap exports only its public API,
# the installed CLI finds the installed cpu backend, and the examples/
# programs build with pkg-config and with find_package(wmap) and run a
# model on the cpu backend with no environment variables.
# usage: install_test.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
src=$1 build=$2 work=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in pkg-config cc cmake readelf nm; do
  command -v "$tool" >/dev/null || { echo "SKIP: no $tool"; exit 77; }
done
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log"

libdir=$(sed -n 's/^libdir=\${prefix}\///p' "$build/wmap.pc")
for f in "$libdir/libwmap.so" "$libdir/libwmap.a" "$libdir/pkgconfig/wmap.pc" \
    "$libdir/cmake/wmap/wmapConfig.cmake" \
    "$libdir/cmake/wmap/wmapConfigVersion.cmake" \
    "$libdir/wmap/backends/libwmap_backend_cpu.so" bin/wmap \
    include/wmap/session.h include/wmap/base.h share/man/man1/wmap.1 \
    share/man/man1/wmap-map.1 share/doc/wmap/embedding.md \
    share/doc/wmap/examples/run_model.c; do
  [ -e "$prefix/$f" ] || fail "make install did not install $f"
done
lib=$prefix/$libdir/libwmap.so
soname=$(readelf -d "$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[[ $soname =~ ^libwmap\.so\.[0-9]+\.[0-9]+$ ]] || fail "SONAME is '$soname'"
exported=$(nm -D --defined-only "$lib")
leaked=$(awk '$2 ~ /[TDBR]/ && $3 !~ /^wm_/ {print; if (++n == 5) exit}' <<<"$exported")
[ -z "$leaked" ] || fail "libwmap exports non-API symbols: $leaked"
grep -q ' T wm_ref_plugin_query$' <<<"$exported" ||
  fail "the ref backend is not reachable from the public API"

# No environment: nothing may point at the build tree.
clean_env=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$work")
"${clean_env[@]}" "$prefix/bin/wmap" backends >"$work/backends.txt"
grep -q '^cpu ' "$work/backends.txt" ||
  fail "the installed wmap finds no cpu backend: $(cat "$work/backends.txt")"
"${clean_env[@]}" "$prefix/bin/wmap" zoo export mlp "$work/mlp.onnx" >/dev/null
if command -v man >/dev/null; then
  page=$(man -l "$prefix/share/man/man1/wmap-run.1" 2>/dev/null)
  grep -q -- '--zoo' <<<"$page" || fail "man page wmap-run.1 lacks --zoo"
fi

# pkg-config (the examples' Makefile).
cp -r "$src/examples" "$work/pc"
PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig \
  make -s -C "$work/pc" CFLAGS="-O2 -Wall -Wextra -Werror -std=c11" \
  >"$work/pc.log" 2>&1 || fail "pkg-config build: $(cat "$work/pc.log")"
# find_package(wmap).
cmake -S "$src/examples" -B "$work/cm" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" >"$work/cm.log" 2>&1 ||
  fail "find_package(wmap) configure: $(cat "$work/cm.log")"
cmake --build "$work/cm" >>"$work/cm.log" 2>&1 ||
  fail "find_package(wmap) build: $(cat "$work/cm.log")"

for kind in pc cm; do
  out=$work/$kind.out
  "${clean_env[@]}" "$work/$kind/run_model" "$work/mlp.onnx" >"$out" ||
    fail "$kind run_model failed"
  on_cpu=$(sed -n 's/^nodes on cpu: //p' "$out")
  [ "${on_cpu:-0}" -gt 0 ] || fail "$kind run_model ran nothing on cpu: $(cat "$out")"
  grep -q '^output ' "$out" || fail "$kind run_model printed no output"
done
cmp -s "$work/pc.out" "$work/cm.out" ||
  fail "the two builds disagree: $(diff "$work/pc.out" "$work/cm.out")"
# The cpu backend agrees with the oracle.
"${clean_env[@]}" "$work/cm/run_model" "$work/mlp.onnx" ref >"$work/ref.out"
python3 - "$work/cm.out" "$work/ref.out" <<'PY'
import re, sys
def sums(p):
    return {m.group(1): float(m.group(2)) for m in
            re.finditer(r"^output (\S+): .* sum (\S+)$", open(p).read(), re.M)}
a, b = sums(sys.argv[1]), sums(sys.argv[2])
assert a and a.keys() == b.keys(), (a, b)
for k in a:
    assert abs(a[k] - b[k]) <= 1e-3 * max(1.0, abs(b[k])), (k, a[k], b[k])
PY
# A bad model path is an error naming it, not a crash.
if "${clean_env[@]}" "$work/cm/run_model" "$work/none.onnx" 2>"$work/err.txt"; then
  fail "run_model accepted a missing file"
fi
grep -q 'none.onnx' "$work/err.txt" || fail "error lacks the path: $(cat "$work/err.txt")"

# The map and a baseline from C; wmap compare reads the baseline.
"${clean_env[@]}" "$work/cm/map_and_bench" "$work/mlp.onnx" "$work/b.json" \
  >"$work/mb.out" || fail "map_and_bench failed"
grep -q 'critical path' "$work/mb.out" || fail "no map printed: $(head "$work/mb.out")"
"${clean_env[@]}" "$prefix/bin/wmap" compare "$work/b.json" "$work/b.json" \
  >/dev/null || fail "wmap compare cannot read the C baseline"
echo "install: ok ($prefix)"
