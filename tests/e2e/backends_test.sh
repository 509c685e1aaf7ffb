#!/usr/bin/env bash
# End-to-end checks of `wmap backends`: ref is always listed; with
# WMAP_BACKEND_PATH (or --backend-path) at the test plugins, the good ones
# load and each broken one is listed as refused with its reason, exit 0.
set -u
wmap=$1
plugins=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
unset WMAP_BACKEND_PATH WMAP_LOADER_DEBUG WMAP_NUM_THREADS

if [ ! -f "$plugins/libwmap_backend_dummy.so" ]; then
  echo "skipped: test plugins not built in $plugins"
  exit 77
fi

. "$(dirname "$0")/common.sh"

if check lists_ref 0 "$wmap" backends; then
  has lists_ref "$tmp/out" "ref " "origin: built-in" "device 0: cpu" "dtypes: float"
fi

if check help 0 "$wmap" backends --help; then
  has help "$tmp/out" "usage: wmap backends" "--backend-path DIR" "--threads N"
fi
if check main_help_lists_backends 0 "$wmap" --help; then
  has main_help_lists_backends "$tmp/out" "backends"
fi

check bad_format_is_usage_error 2 "$wmap" backends --format yaml &&
  has bad_format_is_usage_error "$tmp/err" "--format wants text or json"
check bad_threads_is_usage_error 2 "$wmap" backends --threads many &&
  has bad_threads_is_usage_error "$tmp/err" "--threads wants a count"
check extra_argument_is_usage_error 2 "$wmap" backends ref &&
  has extra_argument_is_usage_error "$tmp/err" 'unexpected argument "ref"'
check bad_env_threads_fails 1 env WMAP_NUM_THREADS=x "$wmap" backends &&
  has bad_env_threads_fails "$tmp/err" "WMAP_NUM_THREADS wants a count"

refusals=(
  "libwmap_backend_bad_enumerate.so: backend \"bad_enumerate\": enumerate: bad_enumerate: device 0 fell off the bus"
  "libwmap_backend_dummy_again.so: backend name dummy already loaded from $plugins/libwmap_backend_dummy.so"
  "libwmap_backend_garbage.so: dlopen failed: "
  "libwmap_backend_missing_function.so: missing required functions: copy_d2h"
  "libwmap_backend_no_symbol.so: no symbol wm_plugin_query (not a wmap backend)"
  "libwmap_backend_query_error.so: wm_plugin_query failed (UNAVAILABLE): query_error: no device driver found"
  "libwmap_backend_wrong_major.so: answers ABI 1.0, host speaks 0."
)

if check env_path_lists_refusals 0 env WMAP_BACKEND_PATH="$plugins" "$wmap" backends; then
  # Other plugins (the install's own folder) may be listed too.
  has env_path_lists_refusals "$tmp/out" " backends loaded, " \
    "dummy 0.0.1" "claimsfail 0.0.1" "origin: $plugins/libwmap_backend_dummy.so" \
    "refused:" "${refusals[@]}"
  # Refusals are listed on stdout, not repeated as warnings.
  if [ -s "$tmp/err" ]; then fail "env_path_quiet_stderr: stderr not empty" "$tmp/err"; fi
  # Plugins come first in the order found, the built-in ref last.
  order=$(grep -E '^[a-z_0-9]+ [0-9]' "$tmp/out" | cut -d' ' -f1 | tr '\n' ' ')
  if [[ "$order" == "claimsfail dummy "*"ref " ]]; then
    echo "ok   builtin_listed_last"; passed=$((passed + 1))
  else
    fail "builtin_listed_last: order \"$order\""
  fi
fi

if check backend_path_option 0 "$wmap" backends --backend-path "$plugins/libwmap_backend_dummy.so"; then
  has backend_path_option "$tmp/out" "dummy 0.0.1"
  if grep -F "$plugins/" "$tmp/out" | grep -vqF "libwmap_backend_dummy.so"; then
    fail "backend_path_option_only_that_file" "$tmp/out"
  fi
fi
if check missing_backend_path_is_refused 0 "$wmap" backends --backend-path "$tmp/none"; then
  has missing_backend_path_is_refused "$tmp/out" "$tmp/none: --backend-path entry does not exist"
fi

if check json 0 env WMAP_BACKEND_PATH="$plugins" "$wmap" backends --format json --threads 3; then
  has json "$tmp/out" '"schema": "wmap.backends/1"' '"name": "dummy"' '"num_threads": 3' \
    '"builtin": true' '"refused": [' '"reason": "missing required functions: copy_d2h"'
  if command -v python3 >/dev/null; then
    if python3 - "$tmp/out" "$plugins/" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
names = [b["name"] for b in doc["backends"]]
assert names[:2] == ["claimsfail", "dummy"] and names[-1] == "ref", names
mine = [r for r in doc["refused"] if "/libwmap_backend_" in r["path"]
        and r["path"].startswith(sys.argv[2])]
assert len(mine) == 7, doc["refused"]
assert all(r["path"] and r["reason"] for r in doc["refused"])
ref = doc["backends"][-1]
assert ref["origin"] == "built-in" and ref["tiers"]["library"] is True
assert ref["devices"][0]["kind"] == "cpu"
assert "float" in ref["devices"][0]["dtypes"]
PY
    then echo "ok   json_parses"; passed=$((passed + 1))
    else fail "json_parses" "$tmp/out"; fi
  fi
fi

if check loader_debug_traces 0 env WMAP_LOADER_DEBUG=1 WMAP_BACKEND_PATH="$plugins" "$wmap" backends --format json; then
  has loader_debug_traces "$tmp/err" "wmap: loader: candidate $plugins/libwmap_backend_dummy.so" \
    "wmap: loader: loaded $plugins/libwmap_backend_dummy.so as \"dummy\"" \
    "wmap: loader: refused $plugins/libwmap_backend_no_symbol.so: no symbol"
  if ! python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/out" 2>/dev/null; then
    fail "loader_debug_keeps_stdout_json" "$tmp/out"
  fi
fi

# run: an unknown backend names the loaded ones; the refusals give a hint.
if check run_unknown_backend_lists_plugins 1 env WMAP_BACKEND_PATH="$plugins" \
    "$wmap" run --backend tpu "$tmp/none.onnx"; then
  has run_unknown_backend_lists_plugins "$tmp/err" \
    'no backend named "tpu" (available: claimsfail, dummy, ' 'others were refused)'
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
