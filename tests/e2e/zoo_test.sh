#!/usr/bin/env bash
# End-to-end checks of 'wmap zoo': the listing, exports that load back
# (and whose missing inputs 'wmap run' names), and usage errors.
set -u
wmap=$1
. "$(dirname "$0")/expect.sh"

expect zoo_help 0 "usage: wmap zoo list" "$wmap" zoo --help
expect help_lists_zoo 0 "zoo" "$wmap" --help
expect zoo_list_has_bert_defaults 0 "layers=12,seq=128,batch=1" "$wmap" zoo list
expect zoo_list_has_resnet50 0 "ResNet-50 v1.5" "$wmap" zoo list
expect zoo_without_command 2 "want a command: list or export" "$wmap" zoo
expect zoo_unknown_command 2 'unknown command "lst"' "$wmap" zoo lst
expect zoo_unknown_option 2 'unknown option "--bogus"' "$wmap" zoo list --bogus
expect zoo_export_missing_file 2 "export wants SPEC and FILE" "$wmap" zoo export mlp
expect zoo_unknown_model 2 'unknown model "resnet34"; models: resnet18' \
  "$wmap" zoo export resnet34 "$tmp/x.onnx"
expect zoo_unknown_key 2 'unknown key "layer"; keys: layers, seq, batch' \
  "$wmap" zoo export bert-base:layer=2 "$tmp/x.onnx"
expect zoo_bad_value 2 'key "seq" wants an integer from 1 to 512, got "1000"' \
  "$wmap" zoo export bert-base:seq=1000 "$tmp/x.onnx"
expect zoo_unwritable_file 1 'cannot create "'"$tmp"'/no/x.onnx"' \
  "$wmap" zoo export mlp "$tmp/no/x.onnx"

expect zoo_export_mlp 0 "669706 parameters" "$wmap" zoo export mlp "$tmp/mlp.onnx"
expect zoo_export_small_bert 0 "wrote $tmp/bert.onnx" \
  "$wmap" zoo export bert-base:layers=1,seq=8 "$tmp/bert.onnx"
# The exports load, place and run (on generated inputs: no --inputs).
expect zoo_mlp_runs 0 'logits: float [1,10] =' "$wmap" run "$tmp/mlp.onnx"
expect zoo_bert_runs 0 'last_hidden_state: float [1,8,768] =' \
  "$wmap" run "$tmp/bert.onnx"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
