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
unset WMAP_BACKEND_PATH WMAP_LOADER_DEBUG WMAP_NUM_THREADS WMAP_PLUGIN_PROBE_TIMEOUT
# The plugin probe cache of these runs only.
export XDG_CACHE_HOME="$tmp/cache"

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
# A --backend-path that cannot hold a plugin is a usage error on every
# command that takes the option.
mkdir -p "$tmp/empty"
echo "not a library" >"$tmp/text.so"
for cmd in backends run map bench tune conform probe comm-bench; do
  check "${cmd}_missing_backend_path_is_usage_error" 2 "$wmap" $cmd --backend-path "$tmp/none" &&
    has "${cmd}_missing_backend_path_is_usage_error" "$tmp/err" \
      "wmap $cmd: --backend-path: \"$tmp/none\" does not exist"
done
check empty_backend_folder_is_usage_error 2 "$wmap" run --zoo mlp --backend-path "$tmp/empty" &&
  has empty_backend_folder_is_usage_error "$tmp/err" \
    "wmap run: --backend-path: folder \"$tmp/empty\" holds no backend plugin (libwmap_backend_*.so)"
check non_library_backend_path_is_usage_error 2 "$wmap" map --zoo mlp --backend-path "$tmp/text.so" &&
  has non_library_backend_path_is_usage_error "$tmp/err" \
    "wmap map: --backend-path: \"$tmp/text.so\" is not a backend plugin (not a shared library)"
# A shared library that is not a plugin is refused, and said so even by
# commands that keep other refusals quiet.
if check non_plugin_library_is_warned 0 "$wmap" run --zoo mlp --backends ref \
    --backend-path "$plugins/libwmap_backend_no_symbol.so"; then
  has non_plugin_library_is_warned "$tmp/err" \
    "refused $plugins/libwmap_backend_no_symbol.so: no symbol wm_plugin_query"
fi
# A second plugin of a loaded name is refused naming both files, also by
# quiet commands.
if check duplicate_name_is_warned 0 "$wmap" run --zoo mlp --backends dummy,ref \
    --backend-path "$plugins/libwmap_backend_dummy.so" --backend-path "$plugins/libwmap_backend_dummy_again.so"; then
  has duplicate_name_is_warned "$tmp/err" \
    "refused $plugins/libwmap_backend_dummy_again.so: backend name dummy already loaded from $plugins/libwmap_backend_dummy.so"
fi

# Hostile plugins (tests/plugins/hostile.c): each is refused with its file
# and what happened; the others, and every command, keep working.
hostile=$plugins/hostile
hostile_refusals=(
  "$hostile/libwmap_backend_abort_info.so: killed by signal 6 (Aborted) in get_info"
  "$hostile/libwmap_backend_api_size.so: API table is 8 bytes, want at least"
  "$hostile/libwmap_backend_bad_utf8.so: get_info: vendor is not UTF-8"
  "$hostile/libwmap_backend_dup_ref.so: backend name ref already loaded from built-in"
  "$hostile/libwmap_backend_exit0_enumerate.so: called exit(0) in enumerate"
  "$hostile/libwmap_backend_exit7_ctor.so: called exit(7) while loading"
  "$hostile/libwmap_backend_hang_ctor.so: did not answer within 1 s while loading"
  "$hostile/libwmap_backend_hang_query.so: did not answer within 1 s in wm_plugin_query"
  "$hostile/libwmap_backend_long_name.so: get_info: name \"a_name_of_seventy_characters_is_longer_than_any_backend_name_ma...\" is longer than 63 characters"
  "$hostile/libwmap_backend_long_version.so: get_info: version is longer than 255 bytes"
  "$hostile/libwmap_backend_no_table.so: wm_plugin_query answered no error and no API table"
  "$hostile/libwmap_backend_null_device.so: missing required functions: mem_alloc, mem_free,"
  "$hostile/libwmap_backend_segv_query.so: killed by signal 11 (Segmentation fault) in wm_plugin_query"
  "$hostile/libwmap_backend_spaced_name.so: get_info: name \"my backend\" has characters other than a-z, 0-9, _ and -"
  "$hostile/libwmap_backend_target_size.so: enumerate: target 0 is 4 bytes, want at least"
  "$hostile/libwmap_backend_upper_name.so: get_info: name \"Dummy2\" has characters other than a-z, 0-9, _ and -"
)
export WMAP_PLUGIN_PROBE_TIMEOUT=1
if check hostile_plugins_are_refused 0 "$wmap" backends --backend-path "$hostile" \
    --backend-path "$plugins/libwmap_backend_dummy.so"; then
  has hostile_plugins_are_refused "$tmp/out" "dummy 0.0.1" "ref 0.1.0" "${hostile_refusals[@]}"
  if grep -E '^(hostile|Dummy2|my backend) ' "$tmp/out"; then fail "hostile_none_loaded" "$tmp/out"; fi
fi
# run prints its outputs and warns of each plugin that crashed, exited or
# hung (an exit(0) in a plugin no longer ends wmap with success and no
# output).
if check run_survives_hostile_plugins 0 "$wmap" run --zoo mlp --backend-path "$hostile" \
    --backend-path "$plugins/libwmap_backend_dummy.so"; then
  has run_survives_hostile_plugins "$tmp/out" "logits: float [1,10] = "
  has run_warns_of_hostile_plugins "$tmp/err" \
    "refused $hostile/libwmap_backend_segv_query.so: killed by signal 11 (Segmentation fault) in wm_plugin_query" \
    "refused $hostile/libwmap_backend_exit0_enumerate.so: called exit(0) in enumerate" \
    "refused $hostile/libwmap_backend_hang_query.so: did not answer within 1 s"
fi
if check run_survives_exit0_plugin_file 0 "$wmap" run --zoo mlp --backends ref \
    --backend-path "$hostile/libwmap_backend_exit0_enumerate.so"; then
  has run_survives_exit0_plugin_file "$tmp/out" "logits: float [1,10] = "
fi
check map_survives_hostile_plugins 0 "$wmap" map --zoo mlp --no-probe --backends ref --backend-path "$hostile" &&
  has map_survives_hostile_plugins "$tmp/out" "ref"
# The verdicts are cached: the next command probes nothing.
if check probe_verdicts_cached 0 env WMAP_LOADER_DEBUG=1 "$wmap" backends --backend-path "$hostile"; then
  has probe_verdicts_cached "$tmp/err" \
    "wmap: loader: probe verdict of $hostile/libwmap_backend_segv_query.so from the cache: killed by signal 11" \
    "wmap: loader: probe verdict of $hostile/libwmap_backend_dup_ref.so from the cache: answered"
  if grep -F "wmap: loader: probing $hostile/" "$tmp/err"; then fail "probe_verdicts_cached_not_probed" "$tmp/err"; fi
fi
# A corrupt cache is ignored with a warning and written anew.
echo '{"format": "wmap.plugins/1", "plugins": 3' >"$XDG_CACHE_HOME/wmap/plugins.json"
if check corrupt_probe_cache_is_ignored 0 "$wmap" backends --backend-path "$hostile"; then
  has corrupt_probe_cache_is_ignored "$tmp/err" \
    "wmap: warning: loader: ignoring the plugin probe cache \"$XDG_CACHE_HOME/wmap/plugins.json\": not valid JSON (line 1, column 42)"
  has corrupt_probe_cache_still_refuses "$tmp/out" "${hostile_refusals[@]}"
  if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format"] == "wmap.plugins/1"
assert len([p for p in d["plugins"] if p["path"].startswith(sys.argv[2])]) == 16, d' \
      "$XDG_CACHE_HOME/wmap/plugins.json" "$(cd "$hostile" && pwd -P)/"; then
    echo "ok   corrupt_probe_cache_rewritten"; passed=$((passed + 1))
  else fail "corrupt_probe_cache_rewritten" "$XDG_CACHE_HOME/wmap/plugins.json"; fi
fi
unset WMAP_PLUGIN_PROBE_TIMEOUT

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
    "wmap: loader: probe verdict of $plugins/libwmap_backend_dummy.so from the cache: answered" \
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
