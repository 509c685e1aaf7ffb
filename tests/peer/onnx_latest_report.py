"""Helper of onnx_latest_test.sh: summarizes a 'wmap conform --json' run on
the node cases of the current onnx package and checks it against the floor.

  onnx_latest_report.py RESULTS.json DATA_DIR FLOOR_FILE

Prints the pass count and percentage, the operators of the cases that do
not pass (with counts, split into fail and unsupported) and the causes.
The operator a case is charged to is the one its reason names
(`node "n" (Op): ...`, `operator Op at opset N ...`); else, for an
`_expanded` case, the function it expands (read from DATA_DIR's model);
else the graph's only operator. Exits 1 when fewer cases pass than the
floor file's `min_pass`, 0 otherwise.
"""

import collections
import json
import os
import re
import sys

try:
    import onnx
except ImportError:  # the summary still works, with less detail
    onnx = None

TARGET_PERCENT = 85.0
TOP = 40


def read_floor(path):
    floor = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                key, _, value = line.partition(" ")
                floor[key] = value.strip()
    if "min_pass" not in floor or not floor["min_pass"].isdigit():
        raise ValueError("%s: want a line 'min_pass N'" % path)
    return int(floor["min_pass"]), floor.get("onnx", "unknown")


def dtype_name(number):
    if onnx is not None:
        try:
            return onnx.TensorProto.DataType.Name(number)
        except ValueError:
            pass
    return "elem_type %d" % number


def model_ops(data_dir, name):
    """(op types in graph order, expanded function op or None)."""
    if onnx is None:
        return [], None
    path = os.path.join(data_dir, "node", name, "model.onnx")
    try:
        model = onnx.load(path)
    except Exception:  # a model our importer refuses may be odd
        return [], None
    ops = [n.op_type for n in model.graph.node]
    expanded = None
    if "_expanded" in name:
        for n in model.graph.node:
            for v in list(n.output) + list(n.input):
                if "_expanded_function_" in v and "_test_" in v:
                    expanded = v.split("_test_", 1)[0]
                    break
            if expanded:
                break
    return ops, expanded


def charge(case, data_dir):
    """(operator, cause) of a case that does not pass."""
    reason = case.get("reason") or ""
    cause = "other: " + re.sub(r"\d+", "N", reason)[:80]
    m = re.search(r"unknown elem_type (\d+)", reason)
    if m:
        cause = "importer: unknown elem_type %s (%s)" % (
            m.group(1), dtype_name(int(m.group(1))))
    elif "is not implemented" in reason:
        cause = "operator not implemented"
    elif "not supported" in reason and "loading" in reason:
        cause = "data file holds a sequence or optional"
    elif "not supported" in reason or "must be" in reason:
        cause = "attribute or mode not supported"
    elif "which the operator does not accept" in reason:
        cause = "input type not accepted"
    elif "elements differ" in reason or "element " in reason:
        cause = "wrong values"
    elif re.search(r": (type|shape) ", reason):
        cause = "wrong output type or shape"
    m = re.search(r"operator (\S+) at opset \d+ is not implemented", reason)
    if not m:
        m = re.search(r'node "[^"]*" \(([^)]+)\)', reason)
    if m:
        return m.group(1), cause
    ops, expanded = model_ops(data_dir, case["name"])
    if expanded:
        return expanded + " (expanded)", cause
    distinct = sorted(set(ops or case.get("ops") or []))
    if len(distinct) == 1:
        return distinct[0], cause
    return "+".join(distinct) if distinct else "(unknown)", cause


def main(argv):
    if len(argv) != 4:
        print("usage: onnx_latest_report.py RESULTS.json DATA_DIR FLOOR_FILE",
              file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        results = json.load(f)
    data_dir = argv[2]
    min_pass, floor_onnx = read_floor(argv[3])
    cases = [c for c in results["cases"] if c["suite"] == "node"]
    total = len(cases)
    passed = sum(1 for c in cases if c["status"] == "pass")
    percent = 100.0 * passed / total if total else 0.0

    by_op = collections.defaultdict(collections.Counter)
    by_cause = collections.Counter()
    for c in cases:
        if c["status"] == "pass":
            continue
        op, cause = charge(c, data_dir)
        kind = "unsupported" if c["status"] in ("unsupported", "skipped") \
            else "fail"
        by_op[op][kind] += 1
        by_cause[cause] += 1

    ranked = sorted(by_op.items(),
                    key=lambda kv: (-sum(kv[1].values()), kv[0]))
    print("\nnot passing, by operator (%d operators; top %d):"
          % (len(ranked), min(TOP, len(ranked))))
    print("  %-38s %5s %5s %6s" % ("operator", "cases", "fail", "unsup"))
    for op, n in ranked[:TOP]:
        print("  %-38s %5d %5d %6d" % (op, sum(n.values()), n["fail"],
                                       n["unsupported"]))
    if len(ranked) > TOP:
        rest = ranked[TOP:]
        print("  and %d more: %s" % (len(rest), ", ".join(
            "%s %d" % (op, sum(n.values())) for op, n in rest)))
    print("\nnot passing, by cause:")
    for cause, n in by_cause.most_common():
        print("  %5d  %s" % (n, cause))

    print("\n%d of %d node cases pass on ref (%.1f%%; target %.0f%%)"
          % (passed, total, percent, TARGET_PERCENT))
    version = onnx.__version__ if onnx is not None else "unknown"
    if passed < min_pass:
        print("FAIL: %d pass, fewer than the floor %d in %s (measured with "
              "onnx %s, this is onnx %s): a case that passed no longer does"
              % (passed, min_pass, argv[3], floor_onnx, version))
        if floor_onnx != version:
            print("the onnx release changed: when the drop comes from its "
                  "new or changed cases, not from wmap, lower the floor")
        return 1
    print("floor %d (onnx %s) holds" % (min_pass, floor_onnx))
    if passed > min_pass:
        print("%d more pass than the floor: raise min_pass in %s to %d"
              % (passed - min_pass, argv[3], passed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
